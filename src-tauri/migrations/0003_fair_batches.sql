-- Fairness: the claim rotates across open batches, least recently served first, so five new
-- URLs do not wait behind a thousand old ones.
ALTER TABLE batches ADD COLUMN open INTEGER NOT NULL DEFAULT 1;
ALTER TABLE batches ADD COLUMN served_seq INTEGER NOT NULL DEFAULT 0;
CREATE INDEX batches_rotation ON batches(served_seq, id) WHERE open = 1;
CREATE INDEX jobs_batch_due ON jobs(batch_id, run_at) WHERE status = 'pending';

-- Every job belongs to a batch from now on; jobs queued without one get a shared batch.
INSERT INTO batches (name, source, created_at)
    SELECT 'earlier jobs', 'migration', 0 WHERE EXISTS (SELECT 1 FROM jobs WHERE batch_id IS NULL);
UPDATE jobs SET batch_id = (SELECT max(id) FROM batches WHERE source = 'migration')
    WHERE batch_id IS NULL;
