BEGIN;
SET LOCAL synchronous_commit = off;
WITH d AS (UPDATE q SET status = 2 WHERE id = ANY(:ids::bigint[]) AND status = 1 RETURNING host_id), c AS (SELECT host_id, count(*)::int AS n FROM d GROUP BY host_id) UPDATE hosts h SET running = h.running - c.n FROM c WHERE h.id = c.host_id;
SELECT coalesce(array_agg(x), '{}') AS ids FROM claim_d(4) x \gset
COMMIT;
