-- The queue on PostgreSQL: the tables of the SQLite schema as migration 0020 left it, without
-- its lanes (the claim finds a batch's hosts by a walk of `jobs_lane` instead), with a row in
-- `hosts` for every host that has a job (the claim locks it to count the host's connections
-- across machines), and with the claim itself as a function, so that a step's claim is one
-- round trip. Times are unix milliseconds, as in SQLite.

CREATE TABLE batches (
    id          bigserial PRIMARY KEY,
    name        text NOT NULL,
    source      text NOT NULL,
    created_at  bigint NOT NULL,
    open        boolean NOT NULL DEFAULT true,
    served_seq  bigint NOT NULL DEFAULT 0,
    -- The host whose lane this batch served last: its next turn starts after it.
    lane_after_host text
);
CREATE INDEX batches_rotation ON batches (served_seq, id) WHERE open;

CREATE TABLE hosts (
    host              text PRIMARY KEY,
    paused_until      bigint,
    pause_reason      text,
    manual_pause      boolean NOT NULL DEFAULT false,
    concurrency_limit integer,
    success_streak    integer NOT NULL DEFAULT 0,
    last_start_at     bigint
);

CREATE TABLE jobs (
    id                 bigserial PRIMARY KEY,
    url                text NOT NULL,
    url_key            text NOT NULL,
    host               text NOT NULL,
    batch_id           bigint REFERENCES batches (id),
    status             text NOT NULL CHECK (status IN ('pending', 'running', 'done', 'dead', 'cancelled')),
    run_at             bigint NOT NULL,
    attempts           integer NOT NULL DEFAULT 0,
    max_retries        integer NOT NULL,
    net_failures       integer NOT NULL DEFAULT 0,
    server_failures    integer NOT NULL DEFAULT 0,
    rate_limits        integer NOT NULL DEFAULT 0,
    blocked_failures   integer NOT NULL DEFAULT 0,
    budget_started_at  bigint NOT NULL,
    lease_owner        text,
    lease_until        bigint,
    error_class        text,
    error              text,
    http_status        integer,
    final_url          text,
    title              text,
    document           text,
    content_type       text,
    sha256             text,
    created_at         bigint NOT NULL,
    updated_at         bigint NOT NULL,
    finished_at        bigint,
    dead_notified      boolean NOT NULL DEFAULT false,
    attempt_started_at bigint,
    finished_by        text,
    meta               jsonb,
    stage              text,
    target             text,
    origin_host        text
);
CREATE UNIQUE INDEX jobs_url_key ON jobs (url_key);
-- A batch's lanes (one per host) and each lane's order: earliest due first.
CREATE INDEX jobs_lane ON jobs (batch_id, host, run_at, id) WHERE status = 'pending';
CREATE INDEX jobs_batch_due ON jobs (batch_id, run_at) WHERE status = 'pending';
CREATE INDEX jobs_running_host ON jobs (host) WHERE status = 'running';
CREATE INDEX jobs_running_owner ON jobs (lease_owner) WHERE status = 'running';
CREATE INDEX jobs_status ON jobs (status, id);
CREATE INDEX jobs_host_id ON jobs (host, id);
CREATE INDEX jobs_batch_id ON jobs (batch_id, id);
CREATE INDEX jobs_dead_unnotified ON jobs (id) WHERE status = 'dead' AND NOT dead_notified;

-- Every ended attempt; a done job's last one lives on its row (as in SQLite's migration 0014).
CREATE TABLE attempt_log (
    id           bigserial PRIMARY KEY,
    job_id       bigint NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    number       integer NOT NULL,
    started_at   bigint NOT NULL,
    finished_at  bigint,
    outcome      text,
    kind         text,
    http_status  integer,
    error        text,
    delay_ms     bigint,
    worker       text,
    stage        text
);
CREATE INDEX attempt_log_job ON attempt_log (job_id, number);

-- Settings every member shares (the policy, the queue's pause).
CREATE TABLE settings (
    key    text PRIMARY KEY,
    value  text NOT NULL
);

-- What one member found about its own machine (offline, stalled): another member's finding
-- does not stop this one.
CREATE TABLE member_settings (
    member text NOT NULL,
    key    text NOT NULL,
    value  text NOT NULL,
    PRIMARY KEY (member, key)
);

CREATE TABLE job_tags (
    tag    text NOT NULL,
    job_id bigint NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    name   text NOT NULL,
    PRIMARY KEY (tag, job_id)
);
CREATE INDEX job_tags_job ON job_tags (job_id);

-- The Library list and the search index: a row per job with a document. `folded` is the
-- text with accents taken off (Gleaner folds it before it is stored, and folds each query the
-- same way), weighted title A, authors B, body D.
CREATE TABLE library (
    job_id     bigint PRIMARY KEY REFERENCES jobs (id) ON DELETE CASCADE,
    title      text NOT NULL,
    authors_line text NOT NULL,
    body       text NOT NULL,
    authors    jsonb,
    year       text,
    container  text,
    kind       text,
    pdf        text,
    tsv        tsvector NOT NULL
);
CREATE INDEX library_tsv ON library USING gin (tsv);

-- The claim (docs/ARCHITECTURE.md, "The queue on PostgreSQL"): up to p_max due jobs, the open
-- batches with due work taking turns (least recently served first), the hosts of a batch
-- taking turns (by name, after the one it served last), the earliest due job of a host first.
-- A host's row is locked while its running jobs are counted and one is started, so its limit
-- and interval hold across every member. A claim that has taken a job and finds another
-- claim on a host's row passes on to the next host (SKIP LOCKED: claims walking the same lanes
-- would otherwise wait on each other in turn), and if it then took fewer jobs than it wanted it
-- wakes every member when it commits, so the slot the other claim leaves is looked at again. A
-- claim that has taken nothing waits for the row, so no member is shut out. Jobs are taken with
-- FOR UPDATE SKIP LOCKED too. Due work is found by scanning from p_now down: the jobs claimed
-- last are the earliest due, and their index entries stay until a vacuum.
CREATE FUNCTION gleaner_claim(p_owner text, p_now bigint, p_lease_until bigint,
        p_per_host integer, p_max integer, p_intervals jsonb)
    RETURNS TABLE (c_id bigint, c_url text, c_host text, c_attempts integer, c_meta text,
        c_stage text, c_target text, c_document text, c_throttled boolean)
    LANGUAGE plpgsql AS $$
DECLARE
    v_batches bigint[];
    v_after text[];
    v_done boolean[];
    v_served bigint[] := '{}';
    v_n integer;
    v_claimed integer := 0;
    v_progress boolean;
    v_i integer;
    v_bid bigint;
    v_start text;
    v_host text;
    v_next text;
    v_wrapped boolean;
    v_found boolean;
    v_job bigint;
    v_slots jsonb := '{}';
    v_own_limits jsonb := '{}';
    v_slot integer;
    v_paused boolean;
    v_own integer;
    v_last bigint;
    v_running integer;
    v_interval bigint;
    v_base bigint;
    v_skipped boolean := false;
BEGIN
    IF p_max <= 0 OR EXISTS (SELECT 1 FROM settings WHERE key = 'queue_paused' AND value = 'true') THEN
        RETURN;
    END IF;
    SELECT coalesce(array_agg(b.id ORDER BY b.served_seq, b.id), '{}'),
           coalesce(array_agg(b.lane_after_host ORDER BY b.served_seq, b.id), '{}')
      INTO v_batches, v_after
      FROM batches b
     WHERE b.open AND (SELECT j.run_at FROM jobs j
           WHERE j.batch_id = b.id AND j.status = 'pending' AND j.run_at <= p_now
           ORDER BY j.run_at DESC LIMIT 1) IS NOT NULL;
    v_n := coalesce(array_length(v_batches, 1), 0);
    IF v_n = 0 THEN
        RETURN;
    END IF;
    v_done := array_fill(false, ARRAY[v_n]);
    LOOP
        v_progress := false;
        FOR v_i IN 1..v_n LOOP
            EXIT WHEN v_claimed >= p_max;
            CONTINUE WHEN v_done[v_i];
            v_bid := v_batches[v_i];
            v_start := v_after[v_i];
            v_host := v_start;
            v_wrapped := v_start IS NULL;
            v_found := false;
            LOOP
                -- The batch's next lane: a seek in jobs_lane per host, not a walk of its jobs.
                -- Two statements, not `v_host IS NULL OR host > v_host`: with the OR, the
                -- cached plan filters the lane index from its start instead of seeking.
                v_next := NULL;
                IF v_host IS NULL THEN
                    SELECT j.host INTO v_next FROM jobs j
                     WHERE j.batch_id = v_bid AND j.status = 'pending'
                     ORDER BY j.host LIMIT 1;
                ELSE
                    SELECT j.host INTO v_next FROM jobs j
                     WHERE j.batch_id = v_bid AND j.status = 'pending' AND j.host > v_host
                     ORDER BY j.host LIMIT 1;
                END IF;
                IF v_next IS NULL THEN
                    EXIT WHEN v_wrapped;
                    v_wrapped := true;
                    v_host := NULL;
                    CONTINUE;
                END IF;
                EXIT WHEN v_wrapped AND v_start IS NOT NULL AND v_next > v_start;
                v_host := v_next;
                CONTINUE WHEN (v_slots ->> v_host)::integer = 0;
                CONTINUE WHEN (SELECT j.run_at FROM jobs j WHERE j.batch_id = v_bid
                    AND j.host = v_host AND j.status = 'pending' AND j.run_at <= p_now
                    ORDER BY j.run_at DESC LIMIT 1) IS NULL;
                v_interval := (p_intervals ->> v_host)::bigint;
                v_slot := (v_slots ->> v_host)::integer;
                IF v_slot IS NULL THEN
                    INSERT INTO hosts (host) VALUES (v_host) ON CONFLICT (host) DO NOTHING;
                    SELECT h.manual_pause OR coalesce(h.paused_until > p_now, false),
                           h.concurrency_limit, h.last_start_at
                      INTO v_paused, v_own, v_last
                      FROM hosts h WHERE h.host = v_host FOR UPDATE SKIP LOCKED;
                    IF NOT FOUND THEN
                        IF v_claimed > 0 THEN
                            v_skipped := true;
                            CONTINUE;
                        END IF;
                        -- Nothing taken yet: wait for the other claim, or a member whose
                        -- claims keep meeting another's would never get a job.
                        SELECT h.manual_pause OR coalesce(h.paused_until > p_now, false),
                               h.concurrency_limit, h.last_start_at
                          INTO v_paused, v_own, v_last
                          FROM hosts h WHERE h.host = v_host FOR UPDATE;
                    END IF;
                    IF v_paused THEN
                        v_slot := 0;
                    ELSE
                        SELECT count(*) INTO v_running FROM jobs j
                         WHERE j.status = 'running' AND j.host = v_host;
                        v_slot := greatest(greatest(least(coalesce(v_own, p_per_host), p_per_host), 1)
                            - v_running, 0);
                        IF coalesce(v_interval, 0) > 0 THEN
                            v_slot := CASE WHEN v_last IS NULL OR v_last + v_interval <= p_now
                                THEN least(v_slot, 1) ELSE 0 END;
                        END IF;
                    END IF;
                    v_own_limits := v_own_limits || jsonb_build_object(v_host, v_own IS NOT NULL);
                    v_slots := v_slots || jsonb_build_object(v_host, v_slot);
                    CONTINUE WHEN v_slot = 0;
                END IF;
                v_job := NULL;
                SELECT j.id INTO v_job FROM jobs j
                 WHERE j.batch_id = v_bid AND j.host = v_host AND j.status = 'pending'
                   AND j.run_at <= p_now
                 ORDER BY j.run_at, j.id LIMIT 1 FOR UPDATE SKIP LOCKED;
                CONTINUE WHEN v_job IS NULL;
                UPDATE jobs j SET status = 'running', lease_owner = p_owner,
                        lease_until = p_lease_until, attempts = j.attempts + 1, updated_at = p_now,
                        attempt_started_at = p_now
                 WHERE j.id = v_job
                 RETURNING j.id, j.url, j.host, j.attempts, j.meta::text, j.stage, j.target, j.document
                      INTO c_id, c_url, c_host, c_attempts, c_meta, c_stage, c_target, c_document;
                IF coalesce(v_interval, 0) > 0 THEN
                    UPDATE hosts SET last_start_at = p_now WHERE host = v_host;
                END IF;
                v_slots := v_slots || jsonb_build_object(v_host, v_slot - 1);
                c_throttled := coalesce((v_own_limits ->> v_host)::boolean, false);
                RETURN NEXT;
                v_claimed := v_claimed + 1;
                v_after[v_i] := v_host;
                v_served := array_remove(v_served, v_bid) || v_bid;
                v_found := true;
                EXIT;
            END LOOP;
            IF v_found THEN
                v_progress := true;
            ELSE
                v_done[v_i] := true;
            END IF;
        END LOOP;
        EXIT WHEN NOT v_progress OR v_claimed >= p_max;
    END LOOP;
    IF v_skipped AND v_claimed < p_max THEN
        PERFORM pg_notify('gleaner_' || coalesce(current_schema(), ''), '');
    END IF;
    -- Served batches go to the back of the rotation in the order they were served. A batch
    -- row another claim is writing is left to it (SKIP LOCKED): waiting for it would make
    -- every claim of every member take its turn behind the others'.
    IF array_length(v_served, 1) > 0 THEN
        SELECT coalesce(max(served_seq), 0) INTO v_base FROM batches WHERE open;
        UPDATE batches b SET served_seq = v_base + array_position(v_served, b.id),
               lane_after_host = v_after[array_position(v_batches, b.id)]
         WHERE b.id IN (SELECT o.id FROM batches o WHERE o.id = ANY(v_served)
             ORDER BY o.id FOR UPDATE SKIP LOCKED);
    END IF;
END
$$;
