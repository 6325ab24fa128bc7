-- A lane's jobs are found through an index over all of its jobs, read from a cursor the lane
-- keeps, instead of an index over its pending jobs only.
--
-- Why: the claim takes one job from each lane in turn. With `jobs_lane_due` (partial, pending
-- rows only) every claim deleted an entry from that index, and with 1,000 hosts and a million
-- queued jobs each lane's entries fill pages of their own, so every job claimed dirtied a
-- different page: 1.00 of the 1.78 WAL frames written per job at 1M rows, 0.09 of 0.85 at 10k
-- (bench/wal-frames.py). `jobs_lane` does not change when a job starts or ends, since neither
-- changes its batch, host or due time.
--
-- The cursor (cur_run_at, cur_id) is a key of `jobs_lane`, and the invariant is: no pending job
-- of the lane sorts before it. The claim moves it past the job it takes; the trigger below
-- moves it back whenever a job of the lane becomes pending, or stays pending with an earlier
-- due time, before it ("fetch now", a retry, crash recovery, a job revived by hand). The
-- trigger also creates the lane if it is missing, so that every pending job has its lane, which
-- the claim relies on. A new lane starts at its first job; existing lanes start at the start.
ALTER TABLE lanes ADD COLUMN cur_run_at INTEGER NOT NULL DEFAULT -9223372036854775808;
ALTER TABLE lanes ADD COLUMN cur_id INTEGER NOT NULL DEFAULT 0;

DROP INDEX jobs_lane_due;
CREATE INDEX jobs_lane ON jobs(batch_id, host, run_at);

CREATE TRIGGER jobs_pending_insert_lane AFTER INSERT ON jobs
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

CREATE TRIGGER jobs_pending_update_lane AFTER UPDATE OF status, run_at, batch_id, host ON jobs
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
