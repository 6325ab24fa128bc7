-- A job's successful last attempt stays in the job's own row instead of being copied into a
-- history row.
--
-- Why: the history row was an INSERT, with its foreign-key check, into two B-trees (the table
-- and `attempts_job`) for every job done. In a commit of 4 jobs that was 2 of the 12 WAL frames,
-- and leaving it out made the no-op drain at 4 jobs in flight about 20% faster (BENCHMARKS.md
-- §3). The done row already says what that row said, except who ran it: its attempt count is
-- the attempt's number, `finished_at` and `http_status` are the attempt's, `attempt_started_at`
-- is no longer cleared on success, and `finished_by` is new.
--
-- `attempts` is now a view of every finished attempt, so that it still holds the whole history
-- for whoever reads it: the rows of `attempt_log` (the table that was `attempts`), and the last
-- attempt of each done job that finished after this migration. A job done before it has its
-- success in `attempt_log` and no `attempt_started_at`, so nothing shows twice. A done job
-- fetched again (`jobs retry`) first copies its success into `attempt_log`.
ALTER TABLE attempts RENAME TO attempt_log;

ALTER TABLE jobs ADD COLUMN finished_by TEXT;   -- on a done job: the worker of its last attempt

CREATE VIEW attempts (id, job_id, number, started_at, finished_at, outcome, kind, http_status,
        error, delay_ms, worker) AS
    SELECT id, job_id, number, started_at, finished_at, outcome, kind, http_status, error,
        delay_ms, worker
    FROM attempt_log
    UNION ALL
    SELECT NULL, id, attempts, attempt_started_at, finished_at, 'success', NULL, http_status,
        NULL, NULL, finished_by
    FROM jobs WHERE status = 'done' AND attempt_started_at IS NOT NULL;
