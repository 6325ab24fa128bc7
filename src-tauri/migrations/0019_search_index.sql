-- Full-text search over the library (issue 21): one row per job, its newest document, keyed by
-- the job's id. A re-fetched page replaces its predecessor's row; the older file stays on disk.
--
-- * `unicode61 remove_diacritics 2` folds accents in the index and in queries alike, so
--   "resume" finds "résumé".
-- * The row is written in the same transaction as the job's success (`Queue::step`), and it
--   can be rebuilt from the library folder (`gleaner library reindex`).
-- * A deleted job takes its row with it. The trigger fires on DELETE only, so the claim and
--   the completion, which never delete, keep no statement journal for it (migration 0011).
CREATE VIRTUAL TABLE search USING fts5(
    title, authors, body,
    tokenize = 'unicode61 remove_diacritics 2'
);

CREATE TRIGGER jobs_delete_search AFTER DELETE ON jobs
BEGIN
    DELETE FROM search WHERE rowid = OLD.id;
END;
