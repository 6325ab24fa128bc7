BEGIN;
SET LOCAL synchronous_commit = off;
UPDATE q SET status = 2 WHERE id = ANY(:ids::bigint[]);
WITH c AS (UPDATE q SET status = 1, lease_until = now() + interval '1 min' WHERE id IN (SELECT id FROM q WHERE status = 0 AND run_at <= now() ORDER BY run_at, id LIMIT 4 FOR UPDATE SKIP LOCKED) RETURNING id) SELECT coalesce(array_agg(id), '{}') AS ids FROM c \gset
COMMIT;
