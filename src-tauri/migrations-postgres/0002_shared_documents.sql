-- The shared library: each job's newest document as its member wrote it (front matter and
-- Markdown), and the paper's PDF beside it when it is no larger than the setting
-- `shared_pdf_max_bytes`, so that every member can export, read and pull the whole library.
-- Paths are relative to a member's library folder.
CREATE TABLE documents (
    job_id   bigint PRIMARY KEY REFERENCES jobs (id) ON DELETE CASCADE,
    path     text NOT NULL,
    content  bytea NOT NULL,
    pdf_path text,
    pdf      bytea
);
