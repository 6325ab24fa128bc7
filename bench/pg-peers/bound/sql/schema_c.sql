-- C/D: the bare narrow queue table (0 pending, 1 running, 2 done) and, for D, host rows with a running count.
DROP TABLE IF EXISTS q, hosts;
CREATE TABLE q (id bigserial PRIMARY KEY, host_id int, status smallint, run_at timestamptz, lease_until timestamptz);
CREATE INDEX q_due ON q (run_at, id) WHERE status = 0;
CREATE TABLE hosts (id int PRIMARY KEY, running int NOT NULL DEFAULT 0, lim int NOT NULL DEFAULT 2);
-- D's claim: the earliest due jobs in order; for each, its host's row locked (SKIP LOCKED), its
-- running count checked against the limit, the job locked and started, the count raised.
CREATE FUNCTION claim_d(p_max int) RETURNS SETOF bigint LANGUAGE plpgsql AS $$
DECLARE r record; n int := 0; v_job bigint;
BEGIN
  FOR r IN SELECT id, host_id FROM q WHERE status = 0 AND run_at <= now() ORDER BY run_at, id LOOP
    EXIT WHEN n >= p_max;
    PERFORM 1 FROM hosts WHERE id = r.host_id AND running < lim FOR UPDATE SKIP LOCKED;
    CONTINUE WHEN NOT FOUND;
    UPDATE q SET status = 1, lease_until = now() + interval '1 min'
     WHERE id = (SELECT id FROM q WHERE id = r.id AND status = 0 FOR UPDATE SKIP LOCKED)
     RETURNING id INTO v_job;
    CONTINUE WHEN NOT FOUND;
    UPDATE hosts SET running = running + 1 WHERE id = r.host_id;
    n := n + 1;
    RETURN NEXT v_job;
  END LOOP;
END $$;
