-- When a job's current run of rate limits began (as SQLite's migration 0022): its 24 h limit
-- counts from here, not from the job's queueing. A job waiting on a rate limit takes its first
-- such attempt since its budget started.
ALTER TABLE jobs ADD COLUMN rate_limited_since bigint;
UPDATE jobs SET rate_limited_since = (SELECT min(a.started_at) FROM attempt_log a
        WHERE a.job_id = jobs.id AND a.outcome = 'rate_limited'
          AND a.started_at >= jobs.budget_started_at)
    WHERE rate_limits > 0 AND status IN ('pending', 'running');
