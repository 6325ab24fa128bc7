-- E: D as Gleaner's step would send it: one completion statement per job (each lowering its host's count), the wake-up notice, then D's claim.
BEGIN;
SET LOCAL synchronous_commit = off;
WITH d AS (UPDATE q SET status = 2 WHERE id = (:ids::bigint[])[1] AND status = 1 RETURNING host_id) UPDATE hosts h SET running = h.running - 1 FROM d WHERE h.id = d.host_id;
WITH d AS (UPDATE q SET status = 2 WHERE id = (:ids::bigint[])[2] AND status = 1 RETURNING host_id) UPDATE hosts h SET running = h.running - 1 FROM d WHERE h.id = d.host_id;
WITH d AS (UPDATE q SET status = 2 WHERE id = (:ids::bigint[])[3] AND status = 1 RETURNING host_id) UPDATE hosts h SET running = h.running - 1 FROM d WHERE h.id = d.host_id;
WITH d AS (UPDATE q SET status = 2 WHERE id = (:ids::bigint[])[4] AND status = 1 RETURNING host_id) UPDATE hosts h SET running = h.running - 1 FROM d WHERE h.id = d.host_id;
SELECT pg_notify('gleaner_public', '');
SELECT coalesce(array_agg(x), '{}') AS ids FROM claim_d(4) x \gset
COMMIT;
