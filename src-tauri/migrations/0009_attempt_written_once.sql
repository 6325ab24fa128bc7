-- Rebuild `jobs` (SQLite cannot alter a CHECK constraint in place), for two reasons measured
-- with `cargo bench --bench queue`:
--
-- 1. `CHECK (status IN (…five values…))` made every UPDATE of `status` build and drop a
--    temporary B-tree holding the list (SQLite codes a constant IN list of more than two values
--    that way): about 6% of a drain's time. An OR chain checks the same thing in registers.
-- 2. The attempt in flight is kept on the job's row (`attempt_started_at`, with `attempts` and
--    `lease_owner`) and written to `attempts` once, when it ends, instead of being inserted at
--    the claim and updated at the end. Crash recovery writes the interrupted attempt's row.
--
-- Store::open runs migrations with foreign keys off, as SQLite's "other kinds of table schema
-- changes" procedure asks: dropping the old table would otherwise cascade into `attempts`.
CREATE TABLE jobs_new (
    id                 INTEGER PRIMARY KEY,
    url                TEXT NOT NULL,
    url_key            TEXT NOT NULL,      -- normalized URL, for the duplicate check
    host               TEXT NOT NULL,
    batch_id           INTEGER REFERENCES batches(id),
    status             TEXT NOT NULL CHECK (status = 'pending' OR status = 'running'
                           OR status = 'done' OR status = 'dead' OR status = 'cancelled'),
    run_at             INTEGER NOT NULL,   -- due time: creation, or the retry time after a failure
    attempts           INTEGER NOT NULL DEFAULT 0,
    max_retries        INTEGER NOT NULL,
    net_failures       INTEGER NOT NULL DEFAULT 0,
    server_failures    INTEGER NOT NULL DEFAULT 0,
    rate_limits        INTEGER NOT NULL DEFAULT 0,
    budget_started_at  INTEGER NOT NULL,
    lease_owner        TEXT,
    lease_until        INTEGER,
    error_class        TEXT,
    error              TEXT,
    http_status        INTEGER,
    final_url          TEXT,
    title              TEXT,
    document           TEXT,
    content_type       TEXT,
    sha256             TEXT,
    created_at         INTEGER NOT NULL,
    updated_at         INTEGER NOT NULL,
    finished_at        INTEGER,
    dead_notified      INTEGER NOT NULL DEFAULT 0,
    blocked_failures   INTEGER NOT NULL DEFAULT 0,
    attempt_started_at INTEGER              -- while running: when the attempt in flight began
);
INSERT INTO jobs_new (id, url, url_key, host, batch_id, status, run_at, attempts, max_retries,
        net_failures, server_failures, rate_limits, budget_started_at, lease_owner, lease_until,
        error_class, error, http_status, final_url, title, document, content_type, sha256,
        created_at, updated_at, finished_at, dead_notified, blocked_failures, attempt_started_at)
    SELECT id, url, url_key, host, batch_id, status, run_at, attempts, max_retries,
        net_failures, server_failures, rate_limits, budget_started_at, lease_owner, lease_until,
        error_class, error, http_status, final_url, title, document, content_type, sha256,
        created_at, updated_at, finished_at, dead_notified, blocked_failures,
        CASE WHEN status = 'running' THEN coalesce((SELECT max(a.started_at) FROM attempts a
            WHERE a.job_id = jobs.id AND a.finished_at IS NULL), updated_at) END
    FROM jobs;
-- The open row of an attempt in flight now lives on the job; recovery or the worker writes it.
DELETE FROM attempts WHERE finished_at IS NULL
    AND job_id IN (SELECT id FROM jobs_new WHERE status = 'running');
DROP TABLE jobs;
ALTER TABLE jobs_new RENAME TO jobs;
CREATE UNIQUE INDEX jobs_url_key ON jobs(url_key);
CREATE INDEX jobs_running_host ON jobs(host) WHERE status = 'running';
CREATE INDEX jobs_status ON jobs(status, id);
CREATE INDEX jobs_dead_unnotified ON jobs(id) WHERE status = 'dead' AND dead_notified = 0;
CREATE INDEX jobs_batch_due ON jobs(batch_id, run_at) WHERE status = 'pending';
CREATE INDEX jobs_host_id ON jobs(host, id);
CREATE INDEX jobs_batch_id ON jobs(batch_id, id);
CREATE INDEX jobs_lane_due ON jobs(batch_id, host, run_at) WHERE status = 'pending';
