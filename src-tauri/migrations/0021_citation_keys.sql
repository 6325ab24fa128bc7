-- Citation keys once given out. An export gives each document without a key the first free
-- one (in job order) and keeps it here, so later exports give the same document the same key
-- whatever finishes, fails or is fetched again in between: a paper's `\cite{…}` never moves to
-- another document. `key_lower` makes keys unique without regard to case, as BibTeX compares
-- them. A deleted job's key is free again.
CREATE TABLE citation_keys (
    job_id INTEGER PRIMARY KEY,
    key TEXT NOT NULL,
    key_lower TEXT NOT NULL UNIQUE
);
CREATE TRIGGER citation_keys_of_a_deleted_job AFTER DELETE ON jobs BEGIN
    DELETE FROM citation_keys WHERE job_id = old.id;
END;
