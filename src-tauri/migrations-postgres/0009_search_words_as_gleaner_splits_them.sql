-- The search index holds the words Gleaner's own split finds (letters and digits; FTS5 finds
-- the same on SQLite), not the tokens of PostgreSQL's parser, which kept `bedload/suspended`,
-- `TiO2/SiO2`, `Node.js` and `2.0.1` whole and the words inside them unfound. Accents are
-- folded in Gleaner, so the rows indexed before are marked here, and each member rebuilds
-- them when it opens the queue (postgres/library.rs, `split_words`); rows written from now
-- on are indexed the new way.
ALTER TABLE library ADD COLUMN words_split boolean NOT NULL DEFAULT false;
ALTER TABLE library ALTER COLUMN words_split SET DEFAULT true;
CREATE INDEX library_words_unsplit ON library (job_id) WHERE NOT words_split;
