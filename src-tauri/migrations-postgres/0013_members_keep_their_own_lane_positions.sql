-- Claims from several members no longer queue behind each other (BENCHMARKS §14, run 6).
-- Every claim started from its batch's one lane position, so with 4 members each claim that
-- had taken nothing waited for the one ahead on the first host's row, which then held the
-- next: 40% of the server's active time in a drain by 4 members was claims waiting on rows.
-- Now a claim passes a held host row whether it has taken a job or not, and waits for the
-- first one (up to lock_timeout, as 0008) only when a whole pass took nothing. Passing alone
-- made the members walk past each other's held rows at every claim, so a member that has met
-- another's claim keeps a lane position of its own in the batch, and goes on from there: the
-- members spread along the lane instead of starting together. The batch's position is still
-- written, for the members that keep none.
CREATE TABLE IF NOT EXISTS lane_positions (
    batch_id   bigint NOT NULL REFERENCES batches (id) ON DELETE CASCADE,
    owner      text NOT NULL,
    after_host text NOT NULL,
    PRIMARY KEY (owner, batch_id)
);

CREATE OR REPLACE FUNCTION gleaner_claim(p_owner text, p_now bigint, p_lease_until bigint,
        p_per_host integer, p_max integer, p_intervals jsonb)
    RETURNS TABLE (c_id bigint, c_url text, c_host text, c_attempts integer, c_meta text,
        c_stage text, c_target text, c_document text, c_throttled boolean)
    LANGUAGE plpgsql
    -- As 0012 set it: the generic plans are the same seeks, and two were planned every call.
    SET plan_cache_mode = force_generic_plan
    AS $$
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
    -- The member's time, moved on by what this claim waited for a host's row.
    v_now bigint := p_now;
    v_waited_from timestamptz;
    -- The first host passed over for its held row while nothing was taken, and whether this
    -- claim has waited for it.
    v_held text;
    v_waited boolean := false;
    -- Whether this member keeps a lane position of its own in each batch.
    v_kept boolean[];
    v_own_after text;
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
    -- A member that has met another's claims goes on from where its own last claim stopped.
    -- Looked up batch by batch, and only by a member that keeps a position: a join of the
    -- batches with the positions was planned as a hash join, whose table cost every claim
    -- ~0.1 ms to allocate and free (1 member drained 13% slower).
    v_kept := array_fill(false, ARRAY[v_n]);
    IF EXISTS (SELECT 1 FROM lane_positions p WHERE p.owner = p_owner) THEN
        FOR v_i IN 1..v_n LOOP
            SELECT p.after_host INTO v_own_after FROM lane_positions p
             WHERE p.owner = p_owner AND p.batch_id = v_batches[v_i];
            IF FOUND THEN
                v_after[v_i] := v_own_after;
                v_kept[v_i] := true;
            END IF;
        END LOOP;
    END IF;
    <<passes>>
    LOOP
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
                        SELECT h.manual_pause OR coalesce(h.paused_until > p_now, false),
                               h.concurrency_limit, h.last_start_at
                          INTO v_paused, v_own, v_last
                          FROM hosts h WHERE h.host = v_host FOR UPDATE SKIP LOCKED;
                        -- Two IFs: `NOT FOUND AND NOT EXISTS (…)` is a query, not a simple
                        -- expression, and ran as a statement of its own for every host.
                        IF NOT FOUND THEN
                            IF NOT EXISTS (SELECT 1 FROM hosts h WHERE h.host = v_host) THEN
                                -- Not there yet: a new row is this claim's own.
                                INSERT INTO hosts (host) VALUES (v_host)
                                    ON CONFLICT (host) DO NOTHING;
                                SELECT h.manual_pause OR coalesce(h.paused_until > p_now, false),
                                       h.concurrency_limit, h.last_start_at
                                  INTO v_paused, v_own, v_last
                                  FROM hosts h WHERE h.host = v_host FOR UPDATE SKIP LOCKED;
                            END IF;
                        END IF;
                        IF NOT FOUND THEN
                            -- Another claim holds it: passed over, whether this claim has taken
                            -- a job or not (waiting here made every claim from the same place
                            -- queue behind the one ahead, host by host).
                            v_skipped := true;
                            IF v_claimed = 0 AND v_held IS NULL AND NOT v_waited THEN
                                v_held := v_host;
                            END IF;
                            CONTINUE;
                        END IF;
                        IF v_paused THEN
                            v_slot := 0;
                        ELSE
                            SELECT count(*) INTO v_running FROM jobs j
                             WHERE j.status = 'running' AND j.host = v_host;
                            v_slot := greatest(greatest(least(coalesce(v_own, p_per_host), p_per_host), 1)
                                - v_running, 0);
                            IF coalesce(v_interval, 0) > 0 THEN
                                v_slot := CASE WHEN v_last IS NULL OR v_last + v_interval <= v_now
                                    THEN least(v_slot, 1) ELSE 0 END;
                            END IF;
                        END IF;
                        v_own_limits := v_own_limits || jsonb_build_object(v_host, v_own IS NOT NULL);
                        v_slots := v_slots || jsonb_build_object(v_host, v_slot);
                        CONTINUE WHEN v_slot = 0;
                    END IF;
                    -- The lane's earliest due job, locked and started in one statement.
                    UPDATE jobs j SET status = 'running', lease_owner = p_owner,
                            lease_until = p_lease_until, attempts = j.attempts + 1, updated_at = p_now,
                            attempt_started_at = p_now
                     WHERE j.id = (SELECT n.id FROM jobs n
                         WHERE n.batch_id = v_bid AND n.host = v_host AND n.status = 'pending'
                           AND n.run_at <= p_now
                         ORDER BY n.run_at, n.id LIMIT 1 FOR UPDATE SKIP LOCKED)
                     RETURNING j.id, j.url, j.host, j.attempts, j.meta::text, j.stage, j.target, j.document
                          INTO c_id, c_url, c_host, c_attempts, c_meta, c_stage, c_target, c_document;
                    CONTINUE WHEN NOT FOUND;
                    IF coalesce(v_interval, 0) > 0 THEN
                        UPDATE hosts SET last_start_at = v_now WHERE host = v_host;
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
        EXIT passes WHEN v_claimed > 0 OR v_held IS NULL OR v_waited;
        -- A whole pass took nothing but passed a held row: wait for it, or a member whose claims
        -- keep meeting another's would never get a job; up to lock_timeout, so that a member whose
        -- transaction stalls with the row (a slow uplink, a suspended laptop) holds no claim up for
        -- longer. Then one more pass, which finds the row this claim now holds.
        v_waited := true;
        v_waited_from := clock_timestamp();
        BEGIN
            PERFORM 1 FROM hosts h WHERE h.host = v_held FOR UPDATE;
        EXCEPTION WHEN lock_not_available THEN
            -- Looked at again when the other claim commits (it wakes all).
            EXIT passes;
        END;
        v_now := v_now + greatest(0, floor(1000 * extract(epoch FROM
            clock_timestamp() - v_waited_from)))::bigint;
    END LOOP;
    IF v_skipped AND v_claimed < p_max THEN
        PERFORM pg_notify(gleaner_channel(), '');
    END IF;
    IF array_length(v_served, 1) > 0 THEN
        -- The member's own positions: kept once it has met another member's claim, and from
        -- then on (a member alone writes nothing more than before).
        IF v_skipped OR true = ANY(v_kept) THEN
            INSERT INTO lane_positions (batch_id, owner, after_host)
            SELECT s, p_owner, v_after[array_position(v_batches, s)] FROM unnest(v_served) AS s
             WHERE v_skipped OR v_kept[array_position(v_batches, s)]
            ON CONFLICT (owner, batch_id) DO UPDATE SET after_host = excluded.after_host;
        END IF;
        -- Served batches go to the back of the rotation in the order they were served. A batch
        -- row another claim is writing is left to it (SKIP LOCKED): waiting for it would make
        -- every claim of every member take its turn behind the others'.
        SELECT coalesce(max(served_seq), 0) INTO v_base FROM batches WHERE open;
        UPDATE batches b SET served_seq = v_base + array_position(v_served, b.id),
               lane_after_host = v_after[array_position(v_batches, b.id)]
         WHERE b.id IN (SELECT o.id FROM batches o WHERE o.id = ANY(v_served)
             ORDER BY o.id FOR UPDATE SKIP LOCKED);
    END IF;
END
$$;
