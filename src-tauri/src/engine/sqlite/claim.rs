//! The claim: batches take turns, hosts take turns inside a batch, and every read is a seek.

use std::collections::HashMap;
use std::time::Duration;

use rusqlite::{OptionalExtension, Transaction, params};

use crate::engine::clock::Millis;

use super::lanes::{LANE_ADVANCE, Lane, LaneCursor, LaneKey, LaneKeys};
use crate::engine::queue::{ClaimRequest, Claimed, Result, Stage};

/// The claim's reads, in the order [`claim_many`] uses them. Each is a seek or an ordered walk
/// of an index; a unit test checks that none of them sorts (no temp B-tree).
///
/// Open batches with a due job, least recently served first.
pub(super) const CLAIM_BATCHES: &str = "SELECT b.id, b.lane_after_seq, b.lane_after_host \
     FROM batches b INDEXED BY batches_rotation WHERE b.open = 1 \
       AND EXISTS (SELECT 1 FROM jobs j INDEXED BY jobs_batch_due \
           WHERE j.batch_id = b.id AND j.status = 'pending' AND j.run_at <= ?1) \
     ORDER BY b.served_seq, b.id";

/// A host's pause and own limit, and how many of its jobs run now (in every process).
pub(super) const CLAIM_HOST: &str = "SELECT \
         (SELECT manual_pause != 0 OR coalesce(paused_until > ?2, 0) FROM hosts WHERE host = ?1), \
         (SELECT concurrency_limit FROM hosts WHERE host = ?1), \
         (SELECT count(*) FROM jobs INDEXED BY jobs_running_host WHERE status = 'running' AND host = ?1)";

/// Start a claimed job's attempt, if the job is still pending under the key the claim read.
pub(super) const CLAIM_JOB_SQL: &str = "UPDATE jobs SET status = 'running', lease_owner = ?2, \
         lease_until = ?3, attempts = attempts + 1, updated_at = ?4, attempt_started_at = ?4 \
     WHERE id = ?1 AND status = 'pending' AND batch_id = ?5 AND host = ?6 AND run_at = ?7";

/// Remember the last lane a batch served.
pub(super) const SERVED_LANE_SQL: &str =
    "UPDATE batches SET lane_after_seq = ?2, lane_after_host = ?3 WHERE id = ?1";

/// Move a batch to the back of the rotation, unless it is there already. A batch that is
/// alone, or was served last, keeps its place: rewriting `served_seq` would write a page of
/// `batches_rotation` in every claim's commit for an order that does not change (one of the
/// 9.3 WAL frames of a 4-job commit), and it is a separate statement because SQLite rewrites
/// an index whose column an UPDATE sets, even to the same value.
pub(super) const TO_BACK_SQL: &str = "UPDATE batches SET served_seq = 1 + coalesce( \
         (SELECT max(served_seq) FROM batches INDEXED BY batches_rotation WHERE open = 1), 0) \
     WHERE id = ?1 AND EXISTS (SELECT 1 FROM batches o INDEXED BY batches_rotation \
         WHERE o.open = 1 AND (o.served_seq, o.id) > (batches.served_seq, batches.id))";

/// Claim up to `req.max` eligible jobs inside `tx`. The open batches with due work take turns
/// (least recently served first); inside a batch, its lanes (one per host) take turns, one
/// job per lane per pass; inside a lane, the earliest due job goes first. Every read is a
/// seek or an ordered index walk, so the cost does not grow with the pending rows: a host that
/// is paused or at its connection limit costs one check per lane, not one per row, and a batch
/// with nothing due costs one seek. When the step ends, served batches move to the back of the
/// rotation in the order they were served, each remembering the last lane it served.
pub(super) fn claim_many(
    tx: &Transaction<'_>,
    req: &ClaimRequest<'_>,
    now: Millis,
    lane_keys: &mut LaneKeys,
) -> Result<Vec<Claimed>> {
    let mut out = Vec::new();
    if req.max == 0 {
        return Ok(out);
    }
    let mut cursors: Vec<LaneCursor> = tx
        .prepare_cached(CLAIM_BATCHES)?
        .query_map([now], |r| {
            Ok(LaneCursor::new(r.get(0)?, (r.get(1)?, r.get(2)?)))
        })?
        .collect::<rusqlite::Result<_>>()?;
    // Connections each host may still open in this step, and whether it is throttled.
    let mut slots: HashMap<String, (u32, bool)> = HashMap::new();
    let mut served_batches: Vec<i64> = Vec::new();
    let mut empty_lanes: Vec<(i64, String)> = Vec::new();
    let lease_until = now + req.lease.as_millis() as Millis;
    while out.len() < req.max && cursors.iter().any(|c| !c.exhausted) {
        for cursor in cursors.iter_mut().filter(|c| !c.exhausted) {
            if out.len() >= req.max {
                break;
            }
            // Lanes are read a few more than the jobs still wanted: a single claim reads two
            // lanes, not a page of them, and a walk past many skipped lanes reads more at a time.
            let chunk = (req.max - out.len() + 1) << cursor.fetches.min(6);
            while let Some(Lane {
                pos: (seq, host),
                cursor: lane_cursor,
                generation,
            }) = cursor.next(tx, chunk)?
            {
                // A host already found paused or full in this step costs no index seek.
                if slots.get(&host).is_some_and(|slot| slot.0 == 0) {
                    continue;
                }
                let batch_id = cursor.batch_id;
                let mut known = lane_keys.take(batch_id, &host, generation, lane_cursor);
                // The lane's head is its first key whose job is still pending.
                let mut claimed = None;
                let empty = loop {
                    let Some((run_at, job_id)) = known.front(tx, batch_id, &host)? else {
                        break true;
                    };
                    if run_at > now {
                        break false;
                    }
                    let slot = match slots.get_mut(&host) {
                        Some(slot) => slot,
                        None => {
                            let interval = req.intervals.get(&host).copied();
                            let slot = host_slots(tx, &host, now, req.per_host, interval)?;
                            slots.entry(host.clone()).or_insert(slot)
                        }
                    };
                    if slot.0 == 0 {
                        break false;
                    }
                    let key = (batch_id, host.as_str(), (run_at, job_id));
                    known.keys.pop_front();
                    // No row changed: the job finished, was cancelled or moved since the key
                    // was read, and the next key is the head's candidate.
                    if let Some(mut job) = claim_job(tx, key, req, lease_until, now)? {
                        slot.0 -= 1;
                        if req.intervals.get(&host).is_some_and(|d| !d.is_zero()) {
                            tx.prepare_cached(HOST_STARTED)?
                                .execute(params![host, now])?;
                        }
                        job.throttled = slot.1;
                        known.cursor = (run_at, job_id + 1);
                        tx.prepare_cached(LANE_ADVANCE)?.execute(params![
                            batch_id,
                            host,
                            run_at,
                            job_id + 1
                        ])?;
                        claimed = Some(job);
                        break false;
                    }
                };
                if empty {
                    empty_lanes.push((batch_id, host));
                    continue;
                }
                lane_keys.keep(batch_id, host.clone(), known);
                let Some(claimed) = claimed else {
                    continue;
                };
                out.push(claimed);
                cursor.claimed_this_pass += 1;
                cursor.last_served = Some((seq, host));
                served_batches.retain(|&b| b != cursor.batch_id);
                served_batches.push(cursor.batch_id);
                break;
            }
        }
    }
    let mut lane_served = tx.prepare_cached(SERVED_LANE_SQL)?;
    let mut to_back = tx.prepare_cached(TO_BACK_SQL)?;
    for batch_id in &served_batches {
        if let Some(cursor) = cursors.iter().find(|c| c.batch_id == *batch_id)
            && let Some((seq, host)) = &cursor.last_served
        {
            lane_served.execute(params![batch_id, seq, host])?;
            to_back.execute([batch_id])?;
        }
    }
    if !empty_lanes.is_empty() {
        let mut delete = tx.prepare_cached(
            "DELETE FROM lanes WHERE batch_id = ?1 AND host = ?2 AND NOT EXISTS (SELECT 1 FROM jobs \
                 INDEXED BY jobs_lane WHERE batch_id = ?1 AND host = ?2 \
                     AND run_at >= lanes.cur_run_at AND (run_at > lanes.cur_run_at OR id >= lanes.cur_id) \
                     AND status = 'pending')",
        )?;
        for (batch_id, host) in &empty_lanes {
            delete.execute(params![batch_id, host])?;
        }
    }
    Ok(out)
}

/// Start job `key` (its batch, host, and key in its lane) if it is still pending there.
fn claim_job(
    tx: &Transaction<'_>,
    (batch_id, host, (run_at, job_id)): (i64, &str, LaneKey),
    req: &ClaimRequest<'_>,
    lease_until: Millis,
    now: Millis,
) -> Result<Option<Claimed>> {
    // Not `UPDATE … RETURNING`: SQLite collects returned rows in a temporary B-tree, and
    // opening and closing it cost more than reading the row back.
    let changed = tx.prepare_cached(CLAIM_JOB_SQL)?.execute(params![
        job_id,
        req.owner,
        lease_until,
        now,
        batch_id,
        host,
        run_at
    ])?;
    if changed != 1 {
        return Ok(None);
    }
    type Row = (
        String,
        u32,
        Option<String>,
        Option<String>,
        Option<String>,
        Option<String>,
    );
    let (url, attempt, meta, stage, target, document): Row = tx
        .prepare_cached(
            "SELECT url, attempts, meta, stage, target, document FROM jobs WHERE id = ?1",
        )?
        .query_row([job_id], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
            ))
        })?;
    let stage = stage
        .as_deref()
        .and_then(Stage::parse)
        .or_else(|| Stage::initial(&url));
    Ok(Some(Claimed {
        job_id,
        url,
        host: host.to_string(),
        attempt,
        started_at: now,
        owner: req.owner.to_string(),
        throttled: false,
        // A plain link has none, and costs no parsing.
        reference: meta.and_then(|m| serde_json::from_str(&m).ok()),
        stage,
        target,
        // Only a later stage needs it: a re-fetch of a done page starts from nothing.
        document: document.filter(|_| stage == Some(Stage::Pdf)),
    }))
}

/// How many more jobs for `host` may start now: none while it is paused, else its connection
/// limit (the policy's, or lower while it recovers from a rate limit) minus the jobs of every
/// process running on it. A host with an `interval` starts one job per interval: none until
/// the interval since its last start (in any process) has passed, then one.
fn host_slots(
    tx: &Transaction<'_>,
    host: &str,
    now: Millis,
    per_host: u32,
    interval: Option<Duration>,
) -> Result<(u32, bool)> {
    let (paused, own_limit, running): (Option<bool>, Option<u32>, u32) = tx
        .prepare_cached(CLAIM_HOST)?
        .query_row(params![host, now], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })?;
    if paused == Some(true) {
        return Ok((0, own_limit.is_some()));
    }
    let limit = own_limit.map_or(per_host, |own| own.min(per_host)).max(1);
    let slots = limit.saturating_sub(running);
    let Some(interval) = interval.filter(|d| !d.is_zero()) else {
        return Ok((slots, own_limit.is_some()));
    };
    let last: Option<Millis> = tx
        .prepare_cached("SELECT last_start_at FROM hosts WHERE host = ?1")?
        .query_row([host], |r| r.get(0))
        .optional()?
        .flatten();
    let waited = last.is_none_or(|at| at + interval.as_millis() as Millis <= now);
    Ok((if waited { slots.min(1) } else { 0 }, own_limit.is_some()))
}

/// Record that a host with an interval started a request now.
const HOST_STARTED: &str = "INSERT INTO hosts (host, last_start_at) VALUES (?1, ?2) \
     ON CONFLICT(host) DO UPDATE SET last_start_at = excluded.last_start_at";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::policy::{HostIntervals, NO_INTERVALS};
    use crate::engine::queue::Queue as _;

    use std::time::Duration;

    use crate::engine::clock::Millis;
    use crate::engine::policy::Policy;

    use crate::engine::sqlite::Store;
    use crate::engine::sqlite::testing::{job, query_plan, vm_ops};

    use crate::engine::sqlite::lanes::{
        CLAIM_LANES, LANE_HEAD_AFTER, LANE_HEAD_AT, LANE_KEYS_AFTER, LANE_KEYS_AT,
    };

    /// Requests to a host with an interval start that far apart, whichever connection (process)
    /// claims, while other hosts go on at their own pace; the worker is woken when the next may
    /// start.
    #[test]
    fn a_host_interval_spaces_the_starts_across_connections_and_wakes_the_worker_for_the_next() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("q.db");
        let a = Store::open(&path).expect("store a");
        let b = Store::open(&path).expect("store b");
        a.enqueue(
            None,
            &[
                job("http://arxiv.example/1"),
                job("http://arxiv.example/2"),
                job("http://other.example/1"),
                job("http://other.example/2"),
            ],
            5,
            0,
        )
        .expect("enqueue");
        let intervals: HostIntervals = [("arxiv.example".to_string(), Duration::from_secs(3))]
            .into_iter()
            .collect();
        let claim = |s: &Store, now: Millis| -> Vec<String> {
            let request = ClaimRequest {
                owner: "w",
                lease: Duration::from_secs(60),
                per_host: 4,
                intervals: &intervals,
                max: 10,
                clock: None,
            };
            s.step(&mut Vec::new(), &Policy::default(), now, Some(&request))
                .expect("step")
                .claimed
                .into_iter()
                .map(|c| c.url)
                .collect()
        };
        // One of the spaced host's jobs, and every job of the other host.
        let first = claim(&a, 1_000);
        assert_eq!(
            first,
            [
                "http://arxiv.example/1",
                "http://other.example/1",
                "http://other.example/2"
            ]
        );
        // Another process, 2.9 s later: not yet.
        assert!(claim(&b, 3_999).is_empty());
        assert_eq!(
            b.next_wakeup(3_999, &intervals).expect("wakeup"),
            Some(4_000)
        );
        assert_eq!(claim(&b, 4_000), ["http://arxiv.example/2"]);
        // Without an interval the host's jobs start together, as before.
        a.enqueue(
            None,
            &[job("http://arxiv.example/3"), job("http://arxiv.example/4")],
            5,
            5_000,
        )
        .expect("enqueue");
        assert_eq!(claim_without_intervals(&a, 5_000), 2);
    }

    /// A step that waited for another process's write starts its jobs, and records the host's
    /// last start, at the time it took the lock: the time it read before waiting is already
    /// past, and another process could start the host's next request within its interval.
    #[test]
    fn a_claim_that_waited_for_the_lock_counts_the_host_interval_from_when_it_got_it() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("q.db");
        let a = Store::open(&path).expect("store");
        let jobs = [job("http://arxiv.example/1"), job("http://arxiv.example/2")];
        a.enqueue(None, &jobs, 5, 0).expect("enqueue");
        let intervals: HostIntervals = [("arxiv.example".to_string(), Duration::from_secs(3))]
            .into_iter()
            .collect();
        let clock = crate::engine::clock::ManualClock::new(1_000);
        let mut other = rusqlite::Connection::open(&path).expect("other process");
        let holding = other
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .expect("lock");
        let claimed = std::thread::scope(|scope| {
            let waiting = scope.spawn(|| {
                let request = ClaimRequest {
                    owner: "w",
                    lease: Duration::from_secs(60),
                    per_host: 4,
                    intervals: &intervals,
                    max: 10,
                    clock: Some(clock.as_ref()),
                };
                // The worker read 1 000 before its step began.
                a.step(&mut Vec::new(), &Policy::default(), 1_000, Some(&request))
                    .expect("step")
                    .claimed
            });
            std::thread::sleep(Duration::from_millis(100));
            clock.set(1_700);
            holding.commit().expect("release");
            waiting.join().expect("step thread")
        });
        assert_eq!(claimed.len(), 1);
        assert_eq!(claimed[0].started_at, 1_700);
        // The next start is due 3 s after the claim took the lock, not after the worker's read.
        assert_eq!(
            a.next_wakeup(1_700, &intervals).expect("wakeup"),
            Some(4_700)
        );
    }

    fn claim_without_intervals(s: &Store, now: Millis) -> usize {
        let request = ClaimRequest {
            owner: "w",
            lease: Duration::from_secs(60),
            per_host: 4,
            intervals: &NO_INTERVALS,
            max: 10,
            clock: None,
        };
        s.step(&mut Vec::new(), &Policy::default(), now, Some(&request))
            .expect("step")
            .claimed
            .len()
    }

    #[test]
    fn a_batch_moves_to_the_back_of_the_rotation_only_behind_another() {
        let s = Store::open_in_memory().expect("store");
        let jobs: Vec<_> = (0..6)
            .map(|i| job(&format!("http://a{i}.example/")))
            .collect();
        s.enqueue(None, &jobs, 5, 0).expect("enqueue");
        let places = || -> Vec<(i64, i64)> {
            s.conn()
                .expect("conn")
                .prepare("SELECT id, served_seq FROM batches ORDER BY id")
                .expect("prepare")
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
                .expect("query")
                .collect::<rusqlite::Result<_>>()
                .expect("rows")
        };
        let lease = Duration::from_secs(60);
        let claim = || {
            s.claim("w", 10, lease, 2)
                .expect("claim")
                .expect("job")
                .host
        };
        // Alone, the batch keeps its place: no write to `batches_rotation` per claim.
        let alone = places();
        claim();
        claim();
        assert_eq!(places(), alone);
        // Behind a new batch, each claim moves the batch it served behind the other.
        s.enqueue(
            None,
            &[job("http://b0.example/"), job("http://b1.example/")],
            5,
            1,
        )
        .expect("enqueue");
        let served: Vec<String> = (0..4).map(|_| claim()).collect();
        assert_eq!(
            served,
            ["a2", "b0", "a3", "b1"].map(|h| format!("{h}.example"))
        );
        let p = places();
        assert!(p[1].1 > p[0].1, "the batch served last is behind: {p:?}");
    }

    #[test]
    fn a_paused_host_with_a_backlog_at_the_head_costs_the_claim_the_same_at_any_size() {
        // SQLite's own count of virtual-machine instructions, not a timing: the claim's work
        // must not grow with the paused host's backlog.
        let claim_cost = |backlog: usize| -> u64 {
            let s = Store::open_in_memory().expect("store");
            let mut jobs: Vec<_> = (0..backlog)
                .map(|i| job(&format!("http://paused.example/{i}")))
                .collect();
            jobs.push(job("http://open.example/1"));
            s.enqueue(None, &jobs, 5, 0).expect("enqueue");
            s.pause_host("paused.example", 1).expect("pause");
            let (c, ops) = vm_ops(&s, || s.claim("w", 10, Duration::from_secs(60), 2));
            assert_eq!(c.expect("claim").expect("job").host, "open.example");
            assert!(s.resume_host("paused.example", 20).expect("resume"));
            let c = s
                .claim("w", 20, Duration::from_secs(60), 2)
                .expect("claim")
                .expect("resumed");
            assert_eq!(c.host, "paused.example");
            ops
        };
        let small = claim_cost(10);
        let big = claim_cost(10_000);
        eprintln!("claim VM ops: {small} past 10 paused rows, {big} past 10,000");
        assert!(
            big <= small + 200,
            "a claim past 10 paused rows took {small} VM ops, past 10,000 took {big}"
        );
    }

    #[test]
    fn the_claim_walks_indexes_without_sorting() {
        let s = Store::open_in_memory().expect("store");
        let conn = s.conn().expect("conn");
        let plan_of = |sql: &str, args: &[&dyn rusqlite::ToSql]| query_plan(&conn, sql, args);
        for (sql, args, indexes) in [
            (
                CLAIM_BATCHES,
                vec![&5 as &dyn rusqlite::ToSql],
                &["batches_rotation", "jobs_batch_due"][..],
            ),
            (
                CLAIM_LANES,
                vec![&1 as &dyn rusqlite::ToSql, &0, &"h", &16, &99, &"z"],
                &["lanes_rotation"][..],
            ),
            (
                // The seek reaches the cursor's job: no walk over the lane's finished jobs.
                LANE_HEAD_AT,
                vec![&1 as &dyn rusqlite::ToSql, &"h", &5, &7],
                &["jobs_lane (batch_id=? AND host=? AND run_at=? AND rowid>?)"][..],
            ),
            (
                LANE_HEAD_AFTER,
                vec![&1 as &dyn rusqlite::ToSql, &"h", &5],
                &["jobs_lane (batch_id=? AND host=? AND run_at>?)"][..],
            ),
            (
                // The index alone: a lane's keys are read without its rows.
                LANE_KEYS_AT,
                vec![&1 as &dyn rusqlite::ToSql, &"h", &5, &7, &16],
                &["COVERING INDEX jobs_lane (batch_id=? AND host=? AND run_at=? AND rowid>?)"][..],
            ),
            (
                LANE_KEYS_AFTER,
                vec![&1 as &dyn rusqlite::ToSql, &"h", &5, &16],
                &["COVERING INDEX jobs_lane (batch_id=? AND host=? AND run_at>?)"][..],
            ),
            (
                CLAIM_HOST,
                vec![&"h" as &dyn rusqlite::ToSql, &5],
                &["sqlite_autoindex_hosts_1", "jobs_running_host"][..],
            ),
        ] {
            let plan = plan_of(sql, &args);
            for index in indexes {
                assert!(plan.contains(index), "{sql}:\n{plan}");
            }
            assert!(!plan.contains("TEMP B-TREE"), "{sql}:\n{plan}");
            assert!(!plan.starts_with("SCAN jobs"), "{sql}:\n{plan}");
        }
    }
}
