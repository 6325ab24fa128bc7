-- Tags (issue 21, item 4) and what the window's Library list shows of a document.
--
-- * `job_tags`: one row per tag of a job. `tag` is the key tags are matched and counted by
--   (the tag in Unicode lower case, which SQLite's lower() cannot do), `name` the tag as it
--   was written. The job's metadata (`jobs.meta`, its `tags` list, in order) holds the same
--   tags: both are written in one transaction, at intake and when tags are set by hand. A
--   step keeps the tags a job has, so only those two places change them.
--   Filled here from the tags already in `jobs.meta` by the migration's hook (Rust), which
--   also writes the normalised list back where normalising changed it.
-- * `library_meta`: what the Library list shows that the job's row lacks, written with the
--   search index's row (a step's success, or `gleaner library reindex` from the front
--   matter). `authors` is a JSON array: a reference's authors, else the page's byline.
--   `container` is the journal, or a web page's site name. `kind` is html, pdf, text or raw.
--   `pdf` the path of a paper's PDF. Filled here, for jobs that have a document, from what
--   their metadata says; a reindex fills in the pages' bylines and sites.
-- * A deleted job takes its rows with it. The trigger fires on DELETE only, so the claim and
--   the completion keep no statement journal for it (migration 0011).
CREATE TABLE job_tags (
    tag TEXT NOT NULL,
    job_id INTEGER NOT NULL,
    name TEXT NOT NULL,
    PRIMARY KEY (tag, job_id)
) WITHOUT ROWID;
CREATE INDEX job_tags_job ON job_tags(job_id);

CREATE TABLE library_meta (
    job_id INTEGER PRIMARY KEY,
    authors TEXT,
    year TEXT,
    container TEXT,
    kind TEXT,
    pdf TEXT
);

INSERT INTO library_meta (job_id, authors, year, container)
    SELECT id,
        CASE WHEN json_valid(meta) THEN meta -> '$.authors' END,
        CASE WHEN json_valid(meta) THEN substr(meta ->> '$.issued', 1, 4) END,
        CASE WHEN json_valid(meta) THEN meta ->> '$.container_title' END
    FROM jobs WHERE document IS NOT NULL;

CREATE TRIGGER jobs_delete_library AFTER DELETE ON jobs
BEGIN
    DELETE FROM job_tags WHERE job_id = OLD.id;
    DELETE FROM library_meta WHERE job_id = OLD.id;
END;
