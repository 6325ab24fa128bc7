-- Deaths are announced once, even across restarts: the flag is set in the same transaction
-- that records that the notification went out.
ALTER TABLE jobs ADD COLUMN dead_notified INTEGER NOT NULL DEFAULT 0;
CREATE INDEX jobs_dead_unnotified ON jobs(id) WHERE status = 'dead' AND dead_notified = 0;

-- Manual host pauses and the adaptive per-host concurrency the scheduler maintains.
ALTER TABLE hosts ADD COLUMN manual_pause INTEGER NOT NULL DEFAULT 0;
ALTER TABLE hosts ADD COLUMN concurrency_limit INTEGER;
ALTER TABLE hosts ADD COLUMN success_streak INTEGER NOT NULL DEFAULT 0;
