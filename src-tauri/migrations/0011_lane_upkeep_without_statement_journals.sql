-- Lanes are kept up without making the claim, the completion or intake keep a statement
-- journal. When a table has a trigger that may fire on a statement, SQLite keeps a statement
-- journal for it (a copy of every page it changes, in case the trigger fails half way), and
-- migration 0010's triggers fired on every INSERT into `jobs` and on every UPDATE that set
-- `status`, which the claim and the completion both do: measured, that journal and the
-- trigger cost a quarter of a drain's time with 32 jobs in flight.
--
-- The invariant is unchanged: no pending job of a lane sorts before the lane's cursor, and
-- every pending job has its lane.
--
-- * The update trigger fires on the columns of the lane key, and no longer on `status`. Every
--   statement that makes a job pending also sets its due time (`run_at`), since a job is never
--   pending without one being decided, so the trigger still sees every job that becomes
--   pending. A unit test checks every such statement in the engine's source.
-- * The insert trigger is gone: `Store::enqueue` is the one place jobs are inserted, and it
--   sets `run_at` again on the first new job of each host it queued, so this trigger runs
--   once per host and not once per job.
DROP TRIGGER jobs_pending_insert_lane;
DROP TRIGGER jobs_pending_update_lane;

CREATE TRIGGER jobs_pending_update_lane AFTER UPDATE OF run_at, batch_id, host ON jobs
WHEN NEW.status = 'pending' AND NEW.batch_id IS NOT NULL
BEGIN
    INSERT OR IGNORE INTO lanes (batch_id, host, seq, cur_run_at, cur_id)
        VALUES (NEW.batch_id, NEW.host,
            1 + coalesce((SELECT max(seq) FROM lanes WHERE batch_id = NEW.batch_id), 0),
            NEW.run_at, NEW.id);
    UPDATE lanes SET cur_run_at = NEW.run_at, cur_id = NEW.id
        WHERE batch_id = NEW.batch_id AND host = NEW.host
          AND (cur_run_at > NEW.run_at OR (cur_run_at = NEW.run_at AND cur_id > NEW.id));
END;
