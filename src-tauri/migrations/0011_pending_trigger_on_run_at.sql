-- The lane trigger of migration 0010 fires on the columns a job's lane key is made of, and no
-- longer on `status`.
--
-- Why: a table with a trigger that may fire on an UPDATE makes SQLite keep a statement journal
-- for that UPDATE, and the claim and the completion both set `status`. Every statement that
-- makes a job pending also sets its due time (`run_at`), since a job is never pending without
-- one being decided, so the trigger still sees every job that becomes pending; a unit test
-- drives every such path and checks the lanes' cursors after each step.
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
