-- What `gleaner library pull` compares a member's files with, without moving the files: the
-- SHA-256 of each shared document and PDF, kept by the server as the bytes are written. A pull
-- lists these first and fetches only what a member lacks or holds in another version.
ALTER TABLE documents
    ADD COLUMN content_sha256 bytea GENERATED ALWAYS AS (sha256(content)) STORED,
    ADD COLUMN pdf_sha256 bytea GENERATED ALWAYS AS (sha256(pdf)) STORED;
