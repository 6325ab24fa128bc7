-- F: migration 0008's gleaner_claim, the record's columns read by id after the start.
CREATE OR REPLACE FUNCTION gleaner_claim(p_owner text, p_now bigint, p_lease_until bigint,
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
    v_gave_up boolean;
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
                    SELECT h.manual_pause OR coalesce(h.paused_until > p_now, false),
                           h.concurrency_limit, h.last_start_at
                      INTO v_paused, v_own, v_last
                      FROM hosts h WHERE h.host = v_host FOR UPDATE SKIP LOCKED;
                    IF NOT FOUND THEN
                        -- Not there yet, or another claim holds it: the insert tells them
                        -- apart without waiting, and a new row is this claim's own.
                        INSERT INTO hosts (host) VALUES (v_host) ON CONFLICT (host) DO NOTHING;
                        SELECT h.manual_pause OR coalesce(h.paused_until > p_now, false),
                               h.concurrency_limit, h.last_start_at
                          INTO v_paused, v_own, v_last
                          FROM hosts h WHERE h.host = v_host FOR UPDATE SKIP LOCKED;
                    END IF;
                    IF NOT FOUND THEN
                        IF v_claimed > 0 THEN
                            v_skipped := true;
                            CONTINUE;
                        END IF;
                        -- Nothing taken yet: wait for the other claim, or a member whose
                        -- claims keep meeting another's would never get a job.
                        -- Up to lock_timeout: a member whose transaction stalls with the row
                        -- (a slow uplink, a suspended laptop) must not hold every claim up.
                        v_waited_from := clock_timestamp();
                        v_gave_up := false;
                        BEGIN
                            SELECT h.manual_pause OR coalesce(h.paused_until > p_now, false),
                                   h.concurrency_limit, h.last_start_at
                              INTO v_paused, v_own, v_last
                              FROM hosts h WHERE h.host = v_host FOR UPDATE;
                        EXCEPTION WHEN lock_not_available THEN
                            v_gave_up := true;
                        END;
                        IF v_gave_up THEN
                            -- Looked at again when the other claim commits (it wakes all).
                            v_skipped := true;
                            CONTINUE;
                        END IF;
                        v_now := v_now + greatest(0, floor(1000 * extract(epoch FROM
                            clock_timestamp() - v_waited_from)))::bigint;
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
                 RETURNING j.id, j.host, j.attempts INTO c_id, c_host, c_attempts;
                CONTINUE WHEN NOT FOUND;
                SELECT r.url, r.meta::text, r.stage, r.target, r.document
                  INTO c_url, c_meta, c_stage, c_target, c_document FROM job_records r WHERE r.id = c_id;
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
    IF v_skipped AND v_claimed < p_max THEN
        PERFORM pg_notify(gleaner_channel(), '');
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
