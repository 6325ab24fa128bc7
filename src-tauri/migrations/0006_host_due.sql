-- A rate-limited host's waiting jobs are moved to the end of its pause in one UPDATE; this index
-- finds them without touching the host's finished jobs.
CREATE INDEX jobs_host_due ON jobs(host, run_at) WHERE status = 'pending';
