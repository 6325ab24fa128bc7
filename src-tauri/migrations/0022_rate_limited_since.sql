-- When a job's current run of rate limits began: the first rate limit since it was queued,
-- last retried by hand, or went on to its next stage. Its 24 h limit (`--max-job-age`) counts
-- from here; it counted from the job's queueing, so a job queued two days before met its first
-- 429 already dead. A job waiting on a rate limit now takes its first such attempt since its
-- budget started.
ALTER TABLE jobs ADD COLUMN rate_limited_since INTEGER;
UPDATE jobs SET rate_limited_since = (SELECT min(a.started_at) FROM attempt_log a
        WHERE a.job_id = jobs.id AND a.outcome = 'rate_limited'
          AND a.started_at >= jobs.budget_started_at)
    WHERE rate_limits > 0 AND status IN ('pending', 'running');
