-- Every claim and completion updates each index over pending rows, so keep only those the
-- scheduler needs: jobs_batch_due (is anything due in this batch? when is the next due time?)
-- and jobs_lane_due (the head of each host's lane). A host's waiting jobs (moved to the end of
-- a rate-limit pause, or made due when the host is resumed) are found through the host's lanes;
-- the next wake-up time and the "waiting" count come from jobs_batch_due, one range per open
-- batch.
DROP INDEX jobs_host_due;
DROP INDEX jobs_due;
CREATE INDEX lanes_host ON lanes(host, batch_id);
