-- The claim writes its batches' place in the rotation on every step. With `served_seq` in an
-- index each write was a new index entry and a row version that stayed, and the claim's read
-- of the open batches walked them all (14,000 of them 57,000 jobs into a drain of one batch:
-- 0.29 ms a claim, a fifth of the server's time a job). Indexed by id alone, the write is a
-- HOT update, pruned within its page. The few open batches are sorted after the read.
DROP INDEX IF EXISTS batches_rotation;
CREATE INDEX IF NOT EXISTS batches_open ON batches (id) WHERE open;

-- Two of the claim's statements (that read of the open batches, and the write of their place
-- in the rotation) were planned again on every call, their generic plans costed above the
-- custom ones: 0.14 ms a claim of 4. Their generic plans are the same seeks. A migration that
-- replaces the function must say this again: CREATE OR REPLACE drops it.
ALTER FUNCTION gleaner_claim(text, bigint, bigint, integer, integer, jsonb)
    SET plan_cache_mode = force_generic_plan;
