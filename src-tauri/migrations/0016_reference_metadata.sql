-- What a reference file or a bookmark export said about a job's entry (citation key, authors,
-- year, container, tags), as JSON; NULL for a plain link. The entry's title goes in `title`,
-- which a fetched page's own title replaces.
ALTER TABLE jobs ADD COLUMN meta TEXT;
