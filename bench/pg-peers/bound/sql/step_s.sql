-- S: a Gleaner step of one job: one completion, the notice, a claim of up to 1.
BEGIN;
SET LOCAL synchronous_commit = off;
UPDATE jobs SET status = 'done', lease_owner = NULL, finished_by = lease_owner, lease_until = NULL, final_url = NULL, http_status = 200, title = coalesce(NULL, title), document = NULL, content_type = NULL, sha256 = NULL, error_class = NULL, error = NULL, updated_at = (extract(epoch FROM clock_timestamp()) * 1000)::bigint, finished_at = (extract(epoch FROM clock_timestamp()) * 1000)::bigint, stage = NULL, rate_limited_since = NULL, meta = CASE WHEN NULL::text IS NULL THEN meta WHEN meta ? 'tags' THEN (NULL::text::jsonb - 'tags') || jsonb_build_object('tags', meta -> 'tags') ELSE NULL::text::jsonb - 'tags' END WHERE id = (:ids::bigint[])[1] AND status = 'running' AND lease_owner = 'w' || :client_id::text AND attempts = 1;
SELECT pg_notify('gleaner_public', '');
SELECT coalesce(array_agg(c_id), '{}') AS ids FROM gleaner_claim('w' || :client_id::text, (extract(epoch FROM clock_timestamp()) * 1000)::bigint, (extract(epoch FROM clock_timestamp()) * 1000)::bigint + 600000, 2, 1, '{}'::text::jsonb) \gset
COMMIT;
