-- The durable queue. Times are INTEGER unix milliseconds (UTC).
CREATE TABLE batches (
    id          INTEGER PRIMARY KEY,
    name        TEXT NOT NULL,
    source      TEXT NOT NULL,            -- cli | paste | drop | file
    created_at  INTEGER NOT NULL
);

CREATE TABLE hosts (
    host          TEXT PRIMARY KEY,
    paused_until  INTEGER,                -- no job for this host starts before this
    pause_reason  TEXT
);

CREATE TABLE jobs (
    id                INTEGER PRIMARY KEY,
    url               TEXT NOT NULL,
    url_key           TEXT NOT NULL,      -- normalized URL, for the duplicate check
    host              TEXT NOT NULL,
    batch_id          INTEGER REFERENCES batches(id),
    status            TEXT NOT NULL CHECK (status IN ('pending','running','done','dead','cancelled')),
    run_at            INTEGER NOT NULL,   -- due time: creation, or the retry time after a failure
    attempts          INTEGER NOT NULL DEFAULT 0,
    max_retries       INTEGER NOT NULL,
    net_failures      INTEGER NOT NULL DEFAULT 0,
    server_failures   INTEGER NOT NULL DEFAULT 0,
    rate_limits       INTEGER NOT NULL DEFAULT 0,
    budget_started_at INTEGER NOT NULL,
    lease_owner       TEXT,
    lease_until       INTEGER,
    error_class       TEXT,
    error             TEXT,
    http_status       INTEGER,
    final_url         TEXT,
    title             TEXT,
    document          TEXT,
    content_type      TEXT,
    sha256            TEXT,
    created_at        INTEGER NOT NULL,
    updated_at        INTEGER NOT NULL,
    finished_at       INTEGER
);
CREATE UNIQUE INDEX jobs_url_key ON jobs(url_key);
CREATE INDEX jobs_due ON jobs(run_at) WHERE status = 'pending';
CREATE INDEX jobs_running_host ON jobs(host) WHERE status = 'running';
CREATE INDEX jobs_status ON jobs(status, id);

CREATE TABLE attempts (
    id           INTEGER PRIMARY KEY,
    job_id       INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    number       INTEGER NOT NULL,
    started_at   INTEGER NOT NULL,
    finished_at  INTEGER,
    outcome      TEXT,                    -- success | transient | rate_limited | fatal | interrupted
    kind         TEXT,
    http_status  INTEGER,
    error        TEXT,
    delay_ms     INTEGER,                 -- the wait chosen after this attempt
    worker       TEXT
);
CREATE INDEX attempts_job ON attempts(job_id, number);

CREATE TABLE settings (
    key    TEXT PRIMARY KEY,
    value  TEXT NOT NULL
);
