-- When a host's last request started, for the per-host interval (`--host-interval`), which
-- every process's claim reads and writes. Written only for hosts that have an interval.
ALTER TABLE hosts ADD COLUMN last_start_at INTEGER;
