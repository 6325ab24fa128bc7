-- The search index reads a letter's marks as part of its word (`categories 'L* N* Co M*'`):
-- with letters, digits and private-use characters alone, each vowel sign, virama or voicing
-- mark split a word, so "काम" was the phrase "क म" and found "कुमार" and "किमी" too.
-- Latin accents still fold (`remove_diacritics 2`). FTS5 cannot change a table's tokenizer,
-- so the table is made again; the migration's hook (Rust, sqlite/search.rs) copies the rows
-- from the old one, composed (NFC), and drops it.
DROP TRIGGER jobs_delete_search;
ALTER TABLE search RENAME TO search_before_0023;
CREATE VIRTUAL TABLE search USING fts5(
    title, authors, body,
    tokenize = "unicode61 remove_diacritics 2 categories 'L* N* Co M*'"
);
CREATE TRIGGER jobs_delete_search AFTER DELETE ON jobs
BEGIN
    DELETE FROM search WHERE rowid = OLD.id;
END;
