//! The lanes the claim walks (one per batch and host) and the keys it remembers of them.

use std::collections::HashMap;

use rusqlite::{OptionalExtension, Row, Transaction, params};

use crate::engine::clock::Millis;

use crate::engine::queue::Result;

/// The next lanes of a batch in cycle order after a keyset position and up to a bound.
pub(super) const CLAIM_LANES: &str = "SELECT l.seq, l.host, l.cur_run_at, l.cur_id, l.generation FROM lanes l INDEXED BY lanes_rotation \
     WHERE l.batch_id = ?1 AND (l.seq, l.host) > (?2, ?3) AND (l.seq, l.host) <= (?5, ?6) \
     ORDER BY l.seq, l.host LIMIT ?4";

/// A lane's head, its earliest pending job, is looked for from the lane's cursor (cur_run_at,
/// cur_id), before which none of the lane's jobs is pending (migration 0010). In two seeks:
/// SQLite cannot seek an index to a (column, rowid) pair, and the jobs of one paste share one
/// due time, so a single range on `run_at` would walk every finished job of the lane.
///
/// First at the cursor's due time, from its job on.
pub(super) const LANE_HEAD_AT: &str = "SELECT id, run_at FROM jobs INDEXED BY jobs_lane \
     WHERE batch_id = ?1 AND host = ?2 AND run_at = ?3 AND id >= ?4 AND status = 'pending' \
     ORDER BY id LIMIT 1";

/// Then after the cursor's due time.
pub(super) const LANE_HEAD_AFTER: &str = "SELECT id, run_at FROM jobs INDEXED BY jobs_lane \
     WHERE batch_id = ?1 AND host = ?2 AND run_at > ?3 AND status = 'pending' \
     ORDER BY run_at, id LIMIT 1";

/// The keys of a lane's jobs from a position on, in claim order, whatever their status: the
/// index alone answers, with no read of the rows. First at the position's due time, from its
/// job on; then after that due time.
pub(super) const LANE_KEYS_AT: &str = "SELECT run_at, id FROM jobs INDEXED BY jobs_lane \
     WHERE batch_id = ?1 AND host = ?2 AND run_at = ?3 AND id >= ?4 ORDER BY id LIMIT ?5";

pub(super) const LANE_KEYS_AFTER: &str = "SELECT run_at, id FROM jobs INDEXED BY jobs_lane \
     WHERE batch_id = ?1 AND host = ?2 AND run_at > ?3 ORDER BY run_at, id LIMIT ?4";

/// How many keys one read of a lane fetches.
const LANE_KEYS_READ: usize = 16;

/// A lane's cursor.
pub(super) const LANE_CURSOR: &str =
    "SELECT cur_run_at, cur_id FROM lanes WHERE batch_id = ?1 AND host = ?2";

/// Move a lane's cursor past the job just claimed from it. A job of the lane that becomes
/// pending again before the cursor moves it back (the trigger and `enqueue`, migration 0011).
pub(super) const LANE_ADVANCE: &str =
    "UPDATE lanes SET cur_run_at = ?3, cur_id = ?4 WHERE batch_id = ?1 AND host = ?2";

/// A lane, and a keyset position in a batch's cycle of lanes: (seq, host).
type LanePos = (i64, String);

/// A lane read by the walk: its place in the cycle, its cursor (cur_run_at, cur_id) and its
/// generation (migration 0012).
pub(super) struct Lane {
    pub(super) pos: LanePos,
    pub(super) cursor: (Millis, i64),
    pub(super) generation: i64,
}

/// A key of `jobs_lane` within a lane: (due time, job id).
pub(super) type LaneKey = (Millis, i64);

/// The keys of `jobs_lane` that follow the cursors of lanes this connection claimed from, so
/// that a visit to a lane usually reads no index page: with 1,000 lanes taking turns, each
/// visit would read a leaf of its own, and at a million jobs those leaves fall out of the
/// page cache.
///
/// What is kept for a lane lists, in order, every job of the lane whose key lies from the
/// lane's cursor up to the last key read, with one exception: keys already found not pending
/// in this lane may be dropped. It stays true while the lane's cursor and generation are the
/// ones recorded with it. Another connection's claim moves the cursor; a job of the lane
/// becoming pending anywhere, in any connection, gives the lane a new generation (the
/// trigger, migration 0012); and a job that stops being pending is found out when its claim
/// changes no row. A transaction that rolls back leaves a cursor here that the database does
/// not have, which the next visit sees as a mismatch.
#[derive(Default)]
pub(super) struct LaneKeys {
    lanes: HashMap<(i64, String), KnownKeys>,
}

pub(super) struct KnownKeys {
    pub(super) generation: i64,
    pub(super) cursor: LaneKey,
    /// The keys from the cursor on, as described on [`LaneKeys`].
    pub(super) keys: std::collections::VecDeque<LaneKey>,
    /// Where the next read starts: just after the last key read.
    pub(super) read_from: LaneKey,
}

/// Lanes kept at most: past this, everything is forgotten and read again.
const LANE_KEYS_KEPT: usize = 16_384;

impl LaneKeys {
    /// What is known of a lane whose row says `generation` and `cursor`: the remembered keys if they
    /// still hold, else nothing, to be read from the cursor.
    pub(super) fn take(
        &mut self,
        batch_id: i64,
        host: &str,
        generation: i64,
        cursor: LaneKey,
    ) -> KnownKeys {
        match self.lanes.remove(&(batch_id, host.to_string())) {
            Some(known) if known.generation == generation && known.cursor == cursor => known,
            _ => KnownKeys {
                generation,
                cursor,
                keys: Default::default(),
                read_from: cursor,
            },
        }
    }

    pub(super) fn keep(&mut self, batch_id: i64, host: String, known: KnownKeys) {
        if self.lanes.len() >= LANE_KEYS_KEPT {
            self.lanes.clear();
        }
        self.lanes.insert((batch_id, host), known);
    }
}

impl KnownKeys {
    /// The next key to try, reading the lane's index when nothing is left; `None` when the
    /// lane has no job from here on.
    pub(super) fn front(
        &mut self,
        tx: &Transaction<'_>,
        batch_id: i64,
        host: &str,
    ) -> Result<Option<LaneKey>> {
        if self.keys.is_empty() {
            self.keys = lane_keys(tx, batch_id, host, self.read_from)?.into();
            if let Some(&(at, id)) = self.keys.back() {
                self.read_from = (at, id + 1);
            }
        }
        Ok(self.keys.front().copied())
    }
}

/// Up to [`LANE_KEYS_READ`] keys of a lane from `(at, id)` on, in claim order.
pub(super) fn lane_keys(
    tx: &Transaction<'_>,
    batch_id: i64,
    host: &str,
    (at, id): LaneKey,
) -> Result<Vec<LaneKey>> {
    let row = |r: &Row<'_>| Ok((r.get(0)?, r.get(1)?));
    let mut keys = tx
        .prepare_cached(LANE_KEYS_AT)?
        .query_map(params![batch_id, host, at, id, LANE_KEYS_READ as i64], row)?
        .collect::<rusqlite::Result<Vec<LaneKey>>>()?;
    if keys.len() < LANE_KEYS_READ {
        let more = LANE_KEYS_READ - keys.len();
        keys.extend(
            tx.prepare_cached(LANE_KEYS_AFTER)?
                .query_map(params![batch_id, host, at, more as i64], row)?
                .collect::<rusqlite::Result<Vec<LaneKey>>>()?,
        );
    }
    Ok(keys)
}

/// The head of a lane (its earliest pending job: id and due time), read from its cursor.
pub(super) fn lane_head(
    tx: &Transaction<'_>,
    batch_id: i64,
    host: &str,
    (at, id): (Millis, i64),
) -> Result<Option<(i64, Millis)>> {
    let row = |r: &Row<'_>| Ok((r.get(0)?, r.get(1)?));
    if let Some(head) = tx
        .prepare_cached(LANE_HEAD_AT)?
        .query_row(params![batch_id, host, at, id], row)
        .optional()?
    {
        return Ok(Some(head));
    }
    Ok(tx
        .prepare_cached(LANE_HEAD_AFTER)?
        .query_row(params![batch_id, host, at], row)
        .optional()?)
}

/// Where the claim is in one batch's cycle of lanes. A pass starts just after the lane the
/// batch served last, runs to the end of the cycle, then wraps around to that lane.
pub(super) struct LaneCursor {
    pub(super) batch_id: i64,
    /// Where the current pass started (and so where it ends).
    pub(super) start: LanePos,
    /// Lanes fetched and not yet looked at.
    pub(super) queue: std::collections::VecDeque<Lane>,
    /// Keyset position of the last lane fetched.
    pub(super) after: LanePos,
    /// false: from `start` to the end of the cycle; true: from the beginning to `start`.
    pub(super) wrapped: bool,
    /// The current stretch has no more lanes to fetch.
    pub(super) at_end: bool,
    /// Jobs claimed in this batch during the current pass.
    pub(super) claimed_this_pass: usize,
    /// The last lane served in this step: the batch's cursor when the step ends.
    pub(super) last_served: Option<LanePos>,
    pub(super) exhausted: bool,
    /// Lane reads so far in this step.
    pub(super) fetches: u32,
}

impl LaneCursor {
    pub(super) fn new(batch_id: i64, start: LanePos) -> Self {
        Self {
            batch_id,
            after: start.clone(),
            start,
            queue: Default::default(),
            wrapped: false,
            at_end: false,
            claimed_this_pass: 0,
            last_served: None,
            exhausted: false,
            fetches: 0,
        }
    }

    /// The next lane in the cycle. A lane gives one job per pass, so hosts take turns; when a
    /// pass that claimed something ends, the next one starts after the last lane served.
    pub(super) fn next(&mut self, tx: &Transaction<'_>, chunk: usize) -> Result<Option<Lane>> {
        const BEGIN: (i64, &str) = (i64::MIN, "");
        loop {
            if let Some(lane) = self.queue.pop_front() {
                return Ok(Some(lane));
            }
            if self.at_end {
                if !self.wrapped {
                    self.wrapped = true;
                    self.after = (BEGIN.0, BEGIN.1.to_string());
                } else if self.claimed_this_pass == 0 {
                    self.exhausted = true;
                    return Ok(None);
                } else {
                    self.start = self
                        .last_served
                        .clone()
                        .unwrap_or_else(|| self.start.clone());
                    self.after = self.start.clone();
                    self.wrapped = false;
                    self.claimed_this_pass = 0;
                }
                self.at_end = false;
            }
            let upper = if self.wrapped {
                self.start.clone()
            } else {
                (i64::MAX, String::new())
            };
            let mut stmt = tx.prepare_cached(CLAIM_LANES)?;
            let rows = stmt
                .query_map(
                    params![
                        self.batch_id,
                        self.after.0,
                        self.after.1,
                        chunk as i64,
                        upper.0,
                        upper.1
                    ],
                    |r| {
                        Ok(Lane {
                            pos: (r.get(0)?, r.get(1)?),
                            cursor: (r.get(2)?, r.get(3)?),
                            generation: r.get(4)?,
                        })
                    },
                )?
                .collect::<rusqlite::Result<Vec<Lane>>>()?;
            self.fetches += 1;
            self.at_end = rows.len() < chunk;
            if let Some(last) = rows.last() {
                self.after = last.pos.clone();
            }
            self.queue.extend(rows);
        }
    }
}

#[cfg(test)]
mod tests {

    use crate::engine::queue::Queue as _;

    use std::time::Duration;

    use crate::engine::clock::Millis;
    use crate::engine::policy::{Failure, FailureKind, Policy};
    use crate::engine::queue::{Claimed, JobFilter, Liveness, Status, Success};
    use crate::engine::sqlite::Store;
    use crate::engine::sqlite::testing::job;

    #[test]
    fn a_job_queued_before_its_lanes_cursor_is_still_claimed() {
        // The wall clock stepped back between two intakes into one batch: the second job's
        // key sorts before the lane's cursor, which enqueue must move back to it.
        let s = Store::open_in_memory().expect("store");
        let batch = s.create_batch("b", "cli", 0).expect("batch");
        s.enqueue(Some(batch), &[job("http://a.example/later")], 5, 100)
            .expect("enqueue");
        s.enqueue(Some(batch), &[job("http://a.example/earlier")], 5, 50)
            .expect("enqueue");
        let c = s
            .claim("w", 60, Duration::from_secs(60), 2)
            .expect("claim")
            .expect("the job due at 50");
        assert_eq!(c.url, "http://a.example/earlier");
    }

    #[test]
    fn a_job_that_becomes_pending_among_keys_read_ahead_is_claimed_in_its_turn() {
        // The claim remembers the keys that follow a lane's cursor (`LaneKeys`). Job 2 fails
        // and waits for a retry due between jobs 3 and 4, whose keys the claim has already
        // read: it must come back between them, not be passed over.
        let s = Store::open_in_memory().expect("store");
        let batch = s.create_batch("b", "cli", 0).expect("batch");
        for (path, at) in [("1", 0), ("2", 0), ("3", 50), ("4", 60_000)] {
            s.enqueue(
                Some(batch),
                &[job(&format!("http://a.example/{path}"))],
                5,
                at,
            )
            .expect("enqueue");
        }
        let policy = Policy {
            jitter: 0.0,
            ..Policy::default()
        };
        let lease = Duration::from_secs(600);
        let first = s.claim("w", 10, lease, 9).expect("claim").expect("job 1");
        let second = s.claim("w", 10, lease, 9).expect("claim").expect("job 2");
        assert_eq!((first.job_id, second.job_id), (1, 2));
        s.fail(
            &second,
            &Failure::new(FailureKind::Timeout, "timed out"),
            &policy,
            10,
            0.0,
        )
        .expect("fail");
        let due = s.job(2).expect("job").expect("row").run_at;
        assert!(50 < due && due < 60_000, "due at {due}");
        let order: Vec<i64> =
            std::iter::from_fn(|| s.claim("w", 100_000, lease, 9).expect("claim"))
                .map(|c| c.job_id)
                .collect();
        assert_eq!(order, [3, 2, 4]);
    }

    #[test]
    fn a_claim_rolled_back_leaves_no_remembered_key_ahead_of_the_database() {
        // The claim moves the lane's remembered cursor in memory before its transaction
        // commits; if the transaction then fails, the next claim must read the lane again
        // rather than trust keys past a job that is still pending.
        let s = Store::open_in_memory().expect("store");
        let jobs: Vec<_> = (1..=3)
            .map(|i| job(&format!("http://a.example/{i}")))
            .collect();
        s.enqueue(None, &jobs, 2, 0).expect("enqueue");
        let lease = Duration::from_secs(60);
        let first = s.claim("w", 1, lease, 9).expect("claim").expect("job");
        assert_eq!(first.job_id, 1);
        // Fail the claim's last write, after job 2 was started and its lane moved past it.
        let conn = || s.conn().expect("connection");
        conn()
            .execute_batch(
                "CREATE TEMP TRIGGER fail_the_claim BEFORE UPDATE ON main.batches \
                 BEGIN SELECT RAISE(ABORT, 'injected'); END;",
            )
            .expect("trigger");
        assert!(s.claim("w", 1, lease, 9).is_err(), "the claim must fail");
        conn()
            .execute_batch("DROP TRIGGER fail_the_claim")
            .expect("drop");
        let status: String = conn()
            .query_row("SELECT status FROM jobs WHERE id = 2", [], |r| r.get(0))
            .expect("job 2");
        assert_eq!(status, "pending", "rolled back");
        let order: Vec<i64> = std::iter::from_fn(|| s.claim("w", 1, lease, 9).expect("claim"))
            .map(|c| c.job_id)
            .collect();
        assert_eq!(order, [2, 3]);
    }

    #[test]
    fn two_connections_claiming_from_the_same_lanes_pass_no_pending_job_and_repeat_none() {
        // Each connection remembers keys read ahead in the lanes; the other one's claims,
        // failures and retries must make it read again, never claim a job twice, and never
        // move a lane's cursor past a pending job.
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("queue.db");
        let stores = [
            Store::open(&path).expect("first"),
            Store::open(&path).expect("second"),
        ];
        let policy = Policy {
            jitter: 0.0,
            max_retries: 2,
            ..Policy::default()
        };
        let lease = Duration::from_secs(600);
        let ok = Success {
            http_status: 200,
            ..Success::default()
        };
        let jobs: Vec<_> = (0..60)
            .map(|i| job(&format!("http://h{}.example/{i}", i % 3)))
            .collect();
        stores[0].enqueue(None, &jobs, 2, 0).expect("enqueue");
        let mut roll = rolls(0xfeed);
        let mut now: Millis = 1_000;
        let mut running: Vec<(usize, Claimed)> = Vec::new();
        let finish = |w: usize, c: &Claimed, fail: bool, now: Millis| {
            if fail {
                stores[w]
                    .fail(
                        c,
                        &Failure::new(FailureKind::Timeout, "timed out"),
                        &policy,
                        now,
                        0.0,
                    )
                    .expect("fail");
            } else {
                stores[w].complete(c, &ok, &policy, now).expect("complete");
            }
        };
        for step in 0..600 {
            now += 1 + roll(20_000) as Millis;
            let w = roll(2) as usize;
            let owner = format!("w{w}");
            if let Some(c) = stores[w].claim(&owner, now, lease, 9).expect("claim") {
                assert!(
                    !running.iter().any(|(_, r)| r.job_id == c.job_id),
                    "step {step}: job {} claimed while it runs",
                    c.job_id
                );
                running.push((w, c));
            }
            if !running.is_empty() && roll(2) == 0 {
                let (w, c) = running.swap_remove(roll(running.len() as u64) as usize);
                finish(w, &c, roll(3) == 0, now);
            }
            let hidden = jobs_hidden_from_their_lanes(&stores[0]);
            assert!(hidden.is_empty(), "step {step}: {hidden:?} passed over");
        }
        for (w, c) in running.drain(..) {
            finish(w, &c, false, now);
        }
        let later = now + 86_400_000;
        let mut w = 0;
        while let Some(c) = stores[w].claim("end", later, lease, 9).expect("claim") {
            stores[w]
                .complete(&c, &ok, &policy, later)
                .expect("complete");
            w = 1 - w;
        }
        let stats = stores[1].stats(later).expect("stats");
        assert_eq!((stats.pending, stats.running), (0, 0), "{stats:?}");
        assert_eq!(stats.done + stats.dead, 60, "{stats:?}");
    }

    #[test]
    fn a_revived_job_is_claimable_after_its_lane_was_dropped() {
        let s = Store::open_in_memory().expect("store");
        s.enqueue(None, &[job("http://a.example/1")], 5, 0)
            .expect("enqueue");
        s.enqueue(None, &[job("http://b.example/1")], 5, 0)
            .expect("enqueue");
        let policy = Policy::default();
        let c = s
            .claim("w", 1, Duration::from_secs(60), 2)
            .expect("claim")
            .expect("a");
        let mut gone = Failure::new(FailureKind::ClientError, "404 Not Found");
        gone.http_status = Some(404);
        s.fail(&c, &gone, &policy, 2, 0.0).expect("fail");
        // The next claim finds a's lane empty and drops it.
        let b = s
            .claim("w", 3, Duration::from_secs(60), 2)
            .expect("claim")
            .expect("b");
        assert_eq!(b.host, "b.example");
        s.retry(&[c.job_id], 5, 4).expect("retry");
        let again = s
            .claim("w", 5, Duration::from_secs(60), 2)
            .expect("claim")
            .expect("revived");
        assert_eq!(again.job_id, c.job_id);
    }

    /// A repeatable dice for scripted mixes: `roll(n)` is in 0..n.
    fn rolls(mut seed: u64) -> impl FnMut(u64) -> u64 {
        move |n| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) % n
        }
    }

    /// Pending jobs that no lane's cursor can reach: must always be none.
    fn jobs_hidden_from_their_lanes(s: &Store) -> Vec<i64> {
        let conn = s.conn().expect("conn");
        conn.prepare(
            "SELECT j.id FROM jobs j WHERE j.status = 'pending' AND NOT EXISTS (SELECT 1 FROM lanes l \
                 WHERE l.batch_id = j.batch_id AND l.host = j.host \
                   AND (l.cur_run_at < j.run_at OR (l.cur_run_at = j.run_at AND l.cur_id <= j.id)))",
        )
        .expect("prepare")
        .query_map([], |r| r.get(0))
        .expect("query")
        .collect::<rusqlite::Result<_>>()
        .expect("rows")
    }

    /// The lane trigger fires on `UPDATE OF run_at` (migration 0011), not on `status`, so a
    /// statement that made a job pending without setting `run_at` would leave the job's lane
    /// cursor past it and the job unreachable; and no trigger sees an INSERT.
    #[test]
    fn every_write_that_can_make_a_job_pending_keeps_its_lane() {
        let engine = [
            ("sqlite/enqueue.rs", include_str!("enqueue.rs")),
            ("sqlite/actions.rs", include_str!("actions.rs")),
            ("sqlite/claim.rs", include_str!("claim.rs")),
            ("sqlite/clock_jump.rs", include_str!("clock_jump.rs")),
            ("sqlite/connection.rs", include_str!("connection.rs")),
            ("sqlite/hosts.rs", include_str!("hosts.rs")),
            ("sqlite/lanes.rs", include_str!("lanes.rs")),
            ("sqlite/migrations.rs", include_str!("migrations.rs")),
            ("sqlite/outcomes.rs", include_str!("outcomes.rs")),
            ("sqlite/queue_impl.rs", include_str!("queue_impl.rs")),
            ("sqlite/reads.rs", include_str!("reads.rs")),
            ("sqlite/rows.rs", include_str!("rows.rs")),
            ("sqlite/stall.rs", include_str!("stall.rs")),
            ("worker/mod.rs", include_str!("../worker/mod.rs")),
            ("worker/stall.rs", include_str!("../worker/stall.rs")),
            ("policy/mod.rs", include_str!("../policy/mod.rs")),
            ("intake/mod.rs", include_str!("../intake/mod.rs")),
            ("library/mod.rs", include_str!("../library/mod.rs")),
            ("export/mod.rs", include_str!("../export/mod.rs")),
        ];
        let mut checked = 0;
        for (file, source) in engine {
            for (at, _) in source.match_indices("UPDATE jobs") {
                let statement = &source[at..];
                let set = &statement[..statement.find("WHERE").unwrap_or(statement.len())];
                // `status = 'pending'` or `status = ?N` as an assignment (not `http_status`).
                let sets_pending = set.match_indices("status = ").any(|(i, _)| {
                    let before = set[..i].trim_end();
                    let value = &set[i + "status = ".len()..];
                    (before.ends_with("SET") || before.ends_with(','))
                        && (value.starts_with("'pending'") || value.starts_with('?'))
                });
                if sets_pending {
                    assert!(
                        set.contains("run_at ="),
                        "{file}: an UPDATE makes jobs pending without setting run_at: {set}"
                    );
                    checked += 1;
                }
            }
        }
        // Revive by hand, lease recovery, and a failure's retry.
        assert!(checked >= 3, "found only {checked} such statements");
        // And no trigger sees an INSERT: `enqueue` fires the lane trigger for the jobs it
        // inserts, and is the only code outside tests that inserts jobs.
        let code =
            |source: &'static str| &source[..source.find("#[cfg(test)]").unwrap_or(source.len())];
        assert_eq!(code(engine[0].1).matches("INSERT INTO jobs").count(), 1);
        for (file, source) in &engine[1..] {
            assert!(
                !code(source).contains("INSERT INTO jobs"),
                "{file} inserts jobs"
            );
        }
    }

    #[test]
    fn every_way_back_to_pending_leaves_the_job_reachable_from_its_lanes_cursor() {
        // The claim reads each lane from a cursor it moves past the jobs it takes (migration
        // 0010). Every path that makes a job pending again must leave it reachable: retries,
        // rate-limit moves, "fetch now", revival by hand, crash recovery. A scripted mix of
        // them, checked after every step, then a drain that must finish every job.
        let s = Store::open_in_memory().expect("store");
        let policy = Policy {
            jitter: 0.0,
            max_retries: 3,
            ..Policy::default()
        };
        let lease = Duration::from_secs(60);
        let ok = Success {
            http_status: 200,
            ..Success::default()
        };
        let hosts = ["a.example", "b.example", "c.example"];
        for batch in 0..3 {
            let jobs: Vec<_> = (0..12)
                .map(|i| job(&format!("http://{}/{batch}/{i}", hosts[i % 3])))
                .collect();
            s.enqueue(None, &jobs, 3, 0).expect("enqueue");
        }
        let mut roll = rolls(0x5eed);
        let mut now: Millis = 1_000;
        for step in 0..400 {
            now += 1 + roll(3_000) as Millis;
            let Some(c) = s.claim("w", now, lease, 2).expect("claim") else {
                continue;
            };
            match roll(7) {
                0 | 1 => {
                    s.complete(&c, &ok, &policy, now).expect("complete");
                }
                2 => {
                    s.fail(
                        &c,
                        &Failure::new(FailureKind::Timeout, "timed out"),
                        &policy,
                        now,
                        0.0,
                    )
                    .expect("fail");
                }
                3 => {
                    let mut f = Failure::new(FailureKind::RateLimited, "429 Too Many Requests");
                    f.retry_after = Some(Duration::from_secs(2));
                    s.fail(&c, &f, &policy, now, 0.0).expect("fail");
                }
                4 => {
                    let mut gone = Failure::new(FailureKind::ClientError, "404 Not Found");
                    gone.http_status = Some(404);
                    s.fail(&c, &gone, &policy, now, 0.0).expect("fail");
                    // Revived by hand, now or later.
                    if roll(2) == 0 {
                        s.retry(&[c.job_id], 3, now).expect("revive");
                    }
                }
                5 => {
                    // The worker dies with the job in flight; a new one recovers it.
                    s.recover(&policy, now + 61_000, |_| Liveness::Gone)
                        .expect("recover");
                }
                _ => {
                    // Left in flight while another pending job is fetched now.
                    let pending = s
                        .list_jobs(&JobFilter {
                            status: Some(Status::Pending),
                            ..JobFilter::default()
                        })
                        .expect("list");
                    if let Some(p) = pending.get(roll(pending.len().max(1) as u64) as usize) {
                        s.retry(&[p.id], 3, now).expect("fetch now");
                    }
                    s.complete(&c, &ok, &policy, now).expect("complete");
                }
            }
            let hidden = jobs_hidden_from_their_lanes(&s);
            assert!(
                hidden.is_empty(),
                "step {step}: pending jobs {hidden:?} sit before their lane's cursor"
            );
        }
        // Every job left is reachable: a long drain finishes them all.
        s.recover(&policy, now + 61_000, |_| Liveness::Gone)
            .expect("recover");
        let dead: Vec<i64> = s
            .list_jobs(&JobFilter {
                status: Some(Status::Dead),
                ..JobFilter::default()
            })
            .expect("list")
            .iter()
            .map(|j| j.id)
            .collect();
        s.retry(&dead, 3, now).expect("revive the dead");
        let later = now + 86_400_000;
        while let Some(c) = s.claim("w", later, lease, 99).expect("claim") {
            s.complete(&c, &ok, &policy, later).expect("complete");
        }
        let stats = s.stats(later).expect("stats");
        assert_eq!(
            (stats.pending, stats.running, stats.done),
            (0, 0, 36),
            "{stats:?}"
        );
    }
}
