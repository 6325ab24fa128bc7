-- Running jobs leave `jobs_status`: `jobs_running_host` already lists them.
--
-- Why: every job entered `jobs_status` as running when claimed and left it when finished, two
-- more index writes per job, and the running entries sat on a leaf of their own (between
-- 'pending' and 'dead'), so a commit of 4 jobs wrote that leaf as well as the pending one: 2.1
-- of its 10.3 WAL frames were `jobs_status` (the queue bench's `wal_frames`). Running jobs are
-- at most the workers' jobs in flight, so reading them from `jobs_running_host` and sorting
-- them costs nothing.
--
-- As for migration 0013, a query that reads `jobs_status` repeats its condition, now
-- `status <> 'done' AND status <> 'running'`, and one that reads running jobs names
-- `jobs_running_host`; a unit test checks their plans.
DROP INDEX jobs_status;
CREATE INDEX jobs_status ON jobs(status, id) WHERE status <> 'done' AND status <> 'running';
