-- Host rotation inside a batch. A lane is one host's pending jobs within one batch, with a
-- fixed place (seq) in its batch's cycle; the batch keeps a cursor: the last lane it served.
-- The claim walks a batch's lanes from just after the cursor, wrapping around, and skips a lane
-- whose host is paused or at its connection limit in one step, instead of checking and
-- skipping each of that host's rows: a host holding 100,000 rows at the head of a batch no
-- longer slows every claim, and the 5 links of a small site in a paste do not wait behind the
-- 300 of a big one.
CREATE TABLE lanes (
    batch_id INTEGER NOT NULL,
    host     TEXT NOT NULL,
    seq      INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (batch_id, host)
) WITHOUT ROWID;
CREATE INDEX lanes_rotation ON lanes(batch_id, seq);
CREATE INDEX jobs_lane_due ON jobs(batch_id, host, run_at) WHERE status = 'pending';
ALTER TABLE batches ADD COLUMN lane_after_seq INTEGER NOT NULL DEFAULT -1;
ALTER TABLE batches ADD COLUMN lane_after_host TEXT NOT NULL DEFAULT '';
INSERT OR IGNORE INTO lanes (batch_id, host)
    SELECT DISTINCT batch_id, host FROM jobs WHERE status IN ('pending', 'running');
