-- A/B: 100,000 due jobs in one batch over 1,000 hosts, each host's row kept (as Gleaner's enqueue does)
TRUNCATE jobs, batches, hosts RESTART IDENTITY CASCADE;
INSERT INTO batches (name, source, created_at) VALUES ('bench', 'bench', 0);
INSERT INTO hosts (host) SELECT 'h' || g || '.example' FROM generate_series(0, 999) g;
INSERT INTO jobs (url, url_key, host, batch_id, status, run_at, max_retries, budget_started_at, created_at, updated_at)
SELECT 'https://h' || (i % 1000) || '.example/job/' || i, 'https://h' || (i % 1000) || '.example/job/' || i,
       'h' || (i % 1000) || '.example', 1, 'pending', t, 5, t, t, t
  FROM generate_series(0, 99999) i, (SELECT (extract(epoch FROM now()) * 1000)::bigint - 1000 AS t) n;
ANALYZE jobs; ANALYZE hosts; ANALYZE batches;
CHECKPOINT;
