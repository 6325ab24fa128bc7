-- Citation keys once given out, as SQLite's migration 0021 keeps them: an export gives each
-- document without a key the first free one and keeps it here, so a document's key never
-- changes and never moves to another. A deleted job's key is free again.
CREATE TABLE citation_keys (
    job_id bigint PRIMARY KEY REFERENCES jobs (id) ON DELETE CASCADE,
    key text NOT NULL,
    key_lower text NOT NULL UNIQUE
);
