-- F: Gleaner's schema (all migrations applied first) with the queue's moving columns split out:
-- `jobs` becomes a narrow table (the columns gleaner_claim reads and writes) with the claim's
-- three partial indexes; the wide record (`job_records`, fillfactor 80 so its completion write
-- can be HOT) keeps url_key and the window's host/batch indexes, which its completion never changes.
ALTER TABLE jobs RENAME TO job_records;
DROP INDEX jobs_lane, jobs_batch_due, jobs_running_host, jobs_status, jobs_dead_unnotified;
ALTER TABLE job_records SET (fillfactor = 80);
CREATE TABLE jobs (id bigint PRIMARY KEY, batch_id bigint, host text NOT NULL, status text NOT NULL,
    run_at bigint NOT NULL, attempts integer NOT NULL DEFAULT 0, lease_owner text, lease_until bigint,
    updated_at bigint, attempt_started_at bigint);
CREATE INDEX jobs_lane ON jobs (batch_id, host, run_at, id) WHERE status = 'pending';
CREATE INDEX jobs_batch_due ON jobs (batch_id, run_at) WHERE status = 'pending';
CREATE INDEX jobs_running_host ON jobs (host) WHERE status = 'running';
