-- The window's job table filters by host or batch and pages newest first; these indexes let
-- both walk id order without sorting, at any queue size.
CREATE INDEX jobs_host_id ON jobs(host, id);
CREATE INDEX jobs_batch_id ON jobs(batch_id, id);
