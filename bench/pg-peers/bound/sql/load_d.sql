TRUNCATE q, hosts RESTART IDENTITY;
INSERT INTO q (host_id, status, run_at) SELECT i % 1000, 0, now() - interval '1 s' FROM generate_series(0, 99999) i;
INSERT INTO hosts (id) SELECT generate_series(0, 999);
ANALYZE q; ANALYZE hosts;
CHECKPOINT;
