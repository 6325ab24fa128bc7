-- A reference is resolved in stages (DESIGN.md, "References in, papers out"), each an attempt of
-- its own: a DOI's CSL-JSON metadata, then its landing page, then the paper's PDF; a dead link's
-- Wayback lookup, then its archived copy.
--
-- * `stage` is the stage the job's next attempt runs (NULL: the first request, at the job's
--   own address or its identifier's service), `target` that stage's address.
-- * A stage moves the job into the lane of the next request's host, so that host's pauses,
--   limits and intervals hold it. `origin_host` keeps the host the job was queued under, so a
--   job fetched again starts over where it started.
-- * `attempt_log.stage` says which stage each attempt ran, and the `attempts` view gains it.
ALTER TABLE jobs ADD COLUMN stage TEXT;
ALTER TABLE jobs ADD COLUMN target TEXT;
ALTER TABLE jobs ADD COLUMN origin_host TEXT;
ALTER TABLE attempt_log ADD COLUMN stage TEXT;

DROP VIEW attempts;
CREATE VIEW attempts (id, job_id, number, started_at, finished_at, outcome, kind, http_status,
        error, delay_ms, worker, stage) AS
    SELECT id, job_id, number, started_at, finished_at, outcome, kind, http_status, error,
        delay_ms, worker, stage
    FROM attempt_log
    UNION ALL
    SELECT NULL, id, attempts, attempt_started_at, finished_at, 'success', NULL, http_status,
        NULL, NULL, finished_by, stage
    FROM jobs WHERE status = 'done' AND attempt_started_at IS NOT NULL;
