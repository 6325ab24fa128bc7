-- A connection may remember the keys of `jobs_lane` that follow a lane's cursor, so that the
-- claim does not read the lane's index leaf on every visit: with 1,000 lanes taking turns and
-- hundreds of jobs in each, every visit read a different leaf, and at a million jobs those
-- leaves do not stay in the page cache (half of the extra time per job at 1M against 10k).
--
-- What the connection remembers stays true while no job of the lane becomes pending, since
-- a job that is not pending is never claimed and the keys of the others do not change. So
-- the lane trigger now stamps the lane with a new generation every time a job of the lane
-- becomes pending, wherever it sorts, and the claim trusts its remembered keys only while the
-- lane's generation and cursor are the ones it saw (store.rs, `LaneKeys`). The generation is
-- random, not a counter, so that a lane dropped and created again does not repeat one.
--
-- The trigger is otherwise unchanged: it still creates a missing lane and moves the cursor
-- back to a job that becomes pending before it (migrations 0010 and 0011).
ALTER TABLE lanes ADD COLUMN generation INTEGER NOT NULL DEFAULT 0;

DROP TRIGGER jobs_pending_update_lane;

CREATE TRIGGER jobs_pending_update_lane AFTER UPDATE OF run_at, batch_id, host ON jobs
WHEN NEW.status = 'pending' AND NEW.batch_id IS NOT NULL
BEGIN
    INSERT OR IGNORE INTO lanes (batch_id, host, seq, cur_run_at, cur_id)
        VALUES (NEW.batch_id, NEW.host,
            1 + coalesce((SELECT max(seq) FROM lanes WHERE batch_id = NEW.batch_id), 0),
            NEW.run_at, NEW.id);
    UPDATE lanes SET generation = random(),
        cur_run_at = CASE WHEN cur_run_at > NEW.run_at
                OR (cur_run_at = NEW.run_at AND cur_id > NEW.id)
            THEN NEW.run_at ELSE cur_run_at END,
        cur_id = CASE WHEN cur_run_at > NEW.run_at
                OR (cur_run_at = NEW.run_at AND cur_id > NEW.id)
            THEN NEW.id ELSE cur_id END
        WHERE batch_id = NEW.batch_id AND host = NEW.host;
END;
