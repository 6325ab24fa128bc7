//! The worker's steps on PostgreSQL: the group commit with its claim, the heartbeat, recovery
//! of jobs whose worker is gone, and put-backs.

use super::documents::{Stored, store_in};
use super::outcomes::{
    AttemptRef, COMPLETE_ALL_SQL, COMPLETE_SQL, PutBack, apply_failure, complete_all_in,
    complete_in, fail_in, kept_after_crash, kept_in, next_in, put_back_in, would_die,
};
use super::rows::{Conn, JOB_COLUMNS, JOB_WIDTH, job_from_row};
use super::{Db, transaction};
use crate::engine::clock::{Clock, Millis};
use crate::engine::policy::{Failure, FailureKind, Policy};
use crate::engine::queue::{
    ClaimRequest, Claimed, Failed, Finish, Held, Job, Liveness, Result, Settled, Stage, Success,
};

fn done_or_discarded(held: bool) -> Settled {
    if held {
        Settled::Done
    } else {
        Settled::Discarded
    }
}

/// What a finished job's outcome asks others to notice: a freed slot or a job due again.
async fn settle(
    tx: &impl Conn,
    (claimed, finish, stored): (&Claimed, &Finish, Option<&Stored>),
    policy: &Policy,
    now: Millis,
) -> Result<Settled> {
    let settled = settle_row(tx, claimed, finish, policy, now).await?;
    // The document goes to the other members with the success (or the stage) that saved it.
    if let (Settled::Done, Some(doc)) = (&settled, stored) {
        store_in(tx, claimed.job_id, doc).await?;
    }
    Ok(settled)
}

async fn settle_row(
    tx: &impl Conn,
    claimed: &Claimed,
    finish: &Finish,
    policy: &Policy,
    now: Millis,
) -> Result<Settled> {
    Ok(match finish {
        Finish::Success(success) => {
            done_or_discarded(complete_in(tx, claimed, success, policy, now).await?)
        }
        Finish::Failure { failure, unit }
            if claimed.stage == Some(Stage::Pdf)
                && would_die(tx, claimed, failure, policy, now, *unit).await? =>
        {
            done_or_discarded(kept_in(tx, claimed, failure, now).await?)
        }
        Finish::Failure { failure, unit } => fail_in(tx, claimed, failure, policy, now, *unit)
            .await?
            .map_or(Settled::Discarded, Settled::Failed),
        Finish::Next(next) => done_or_discarded(next_in(tx, claimed, next, now).await?),
        Finish::Kept(failure) => done_or_discarded(kept_in(tx, claimed, failure, now).await?),
        Finish::Offline(failure) => put_back_in(tx, claimed, failure, now, PutBack::Offline)
            .await?
            .map_or(Settled::Discarded, Settled::Offline),
        Finish::Local(failure) => put_back_in(tx, claimed, failure, now, PutBack::Local)
            .await?
            .map_or(Settled::Discarded, Settled::Local),
    })
}

/// The claim request as the claim function takes it.
struct ClaimArgs<'a> {
    owner: String,
    lease: Millis,
    per_host: i32,
    max: i32,
    intervals: String,
    clock: Option<&'a dyn Clock>,
}

impl<'a> ClaimArgs<'a> {
    fn of(req: &ClaimRequest<'a>) -> Self {
        let intervals: serde_json::Map<String, serde_json::Value> = req
            .intervals
            .iter()
            .map(|(h, d)| (h.clone(), serde_json::json!(d.as_millis() as u64)))
            .collect();
        Self {
            owner: req.owner.to_string(),
            lease: req.lease.as_millis() as Millis,
            per_host: i32::try_from(req.per_host).unwrap_or(i32::MAX),
            max: i32::try_from(req.max).unwrap_or(i32::MAX),
            intervals: serde_json::Value::Object(intervals).to_string(),
            clock: req.clock,
        }
    }
}

const CLAIM_SQL: &str = "SELECT c_id, c_url, c_host, c_attempts, c_meta, c_stage, c_target, \
         c_document, c_throttled FROM gleaner_claim($1, $2, $3, $4, $5, $6::text::jsonb)";

/// `now` is the step's; with a clock, the claim's own time is read as its statement goes out,
/// after the step's waits for a connection and for its outcomes.
async fn claim_in(tx: &impl Conn, args: &ClaimArgs<'_>, now: Millis) -> Result<Vec<Claimed>> {
    let now = crate::engine::queue::claim_now(args.clock, now);
    let lease_until = now + args.lease;
    let rows = tx
        .query_rows(
            CLAIM_SQL,
            &[
                &args.owner,
                &now,
                &lease_until,
                &args.per_host,
                &args.max,
                &args.intervals,
            ],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| {
            let url: String = r.get(1);
            let stage = r
                .get::<_, Option<&str>>(5)
                .and_then(Stage::parse)
                .or_else(|| Stage::initial(&url));
            let document: Option<String> = r.get(7);
            Claimed {
                job_id: r.get(0),
                url,
                host: r.get(2),
                attempt: u32::try_from(r.get::<_, i32>(3)).unwrap_or(0),
                started_at: now,
                owner: args.owner.clone(),
                throttled: r.get(8),
                reference: r
                    .get::<_, Option<&str>>(4)
                    .and_then(|m| serde_json::from_str(m).ok()),
                stage,
                target: r.get(6),
                document: document.filter(|_| stage == Some(Stage::Pdf)),
            }
        })
        .collect())
}

pub(super) async fn step(
    db: &Db,
    finished: &[(Claimed, Finish)],
    stored: &[Option<Stored>],
    policy: &Policy,
    now: Millis,
    claim: Option<&ClaimRequest<'_>>,
    uploading: Option<std::time::Duration>,
) -> Result<(Vec<Settled>, Vec<Claimed>)> {
    let args = claim.filter(|r| r.max > 0).map(ClaimArgs::of);
    let client = db.client().await?;
    let out = step_on(
        db,
        &client,
        (finished, stored),
        policy,
        now,
        args.as_ref(),
        uploading,
    )
    .await;
    if out.is_err() {
        // The connection goes back to the pool: out of the transaction (a broken one is
        // dropped by the pool when it cannot be recycled).
        let _ = client.batch("ROLLBACK").await;
    }
    out
}

/// The step's transaction, sent in two round trips: `BEGIN` with the outcomes and the wake-up
/// notice (each job's statements in order, the jobs' side by side: tokio-postgres pipelines
/// them on the connection), then the claim, which must count the slots the outcomes freed,
/// with `COMMIT` behind it. A claim that fails turns that `COMMIT` into a rollback.
///
/// When every outcome is a success with nothing to upload, the claim goes out with them, in
/// one round trip: a success frees its slot in its first statement, which the claim follows
/// on the connection. A failure may pause its host, which the claim must see, so a step with
/// one keeps the two round trips, as does a success on a throttled host (its row's write would
/// wait behind the claim's lock on it), and one that sends a document or its text: the claim
/// locks host rows until `COMMIT`, and every other member's claim would wait while they went
/// up a slow uplink.
async fn step_on(
    db: &Db,
    c: &deadpool_postgres::Object,
    (finished, stored): (&[(Claimed, Finish)], &[Option<Stored>]),
    policy: &Policy,
    now: Millis,
    args: Option<&ClaimArgs<'_>>,
    uploading: Option<std::time::Duration>,
) -> Result<(Vec<Settled>, Vec<Claimed>)> {
    let mut begin = String::from("BEGIN");
    if db.fast_steps {
        begin.push_str("; SET LOCAL synchronous_commit = off");
    }
    // The server counts a message still arriving (a 25 MiB Bind up a slow uplink) as a
    // silent transaction: an upload's is given as long as the call.
    if let Some(limit) = uploading {
        begin.push_str(&format!(
            "; SET LOCAL idle_in_transaction_session_timeout = {}",
            limit.as_millis()
        ));
    }
    // Every outcome frees a connection of its host or puts a job back: another member's
    // worker may have waited for it. The notice is sent with the transaction's start.
    if !finished.is_empty() {
        begin.push_str("; SELECT pg_notify(");
        begin.push_str(&db.channel_literal);
        begin.push_str(", '')");
    }
    // One message, so that nothing of the transaction's start is sent after the claim.
    let begin = c.batch(&begin);
    // Successes with only their row to write (a throttled host's also writes the host's row,
    // which the claim may have locked meanwhile) are written in one statement.
    let plain: Vec<(&Claimed, &Success)> = finished
        .iter()
        .zip(stored)
        .filter_map(|((claimed, finish), stored)| match finish {
            Finish::Success(s) if s.index.is_none() && !claimed.throttled && stored.is_none() => {
                Some((claimed, s))
            }
            _ => None,
        })
        .collect();
    let successes = plain.len() == finished.len();
    let settling = async {
        if successes && plain.len() > 1 {
            let held = complete_all_in(c, &plain, now).await?;
            Ok(held.into_iter().map(done_or_discarded).collect())
        } else {
            futures_util::future::try_join_all(finished.iter().zip(stored).map(
                |((claimed, finish), stored)| {
                    settle(c, (claimed, finish, stored.as_ref()), policy, now)
                },
            ))
            .await
        }
    };
    let outcomes = futures_util::future::try_join(begin, settling);
    let claiming = async {
        match args {
            Some(args) => claim_in(c, args, now).await,
            None => Ok(Vec::new()),
        }
    };
    if successes && args.is_some() {
        // Prepared before anything is sent, so that each statement goes out when its future is
        // first polled, in the order above: a statement still to be prepared would go out
        // after a round trip, behind the `COMMIT`.
        c.prepare_cached(COMPLETE_SQL).await?;
        c.prepare_cached(COMPLETE_ALL_SQL).await?;
        c.prepare_cached(CLAIM_SQL).await?;
        let outcomes_then_commit = async {
            let ((), settled) = outcomes.await?;
            c.batch("COMMIT").await?;
            Ok(settled)
        };
        let (settled, claimed) = futures_util::future::join(outcomes_then_commit, claiming).await;
        return match (settled, claimed) {
            (Ok(settled), Ok(claimed)) => Ok((settled, claimed)),
            (Err(e), Ok(_)) | (Ok(_), Err(e)) => Err(e),
            // A deadlock in one side aborts the transaction, and the statements behind it fail
            // for that: the deadlock is the error, which the store tries again.
            (Err(outcome), Err(claim)) => Err(if claim.is_retryable() { claim } else { outcome }),
        };
    }
    let ((), settled) = outcomes.await?;
    let (claimed, ()) = futures_util::future::try_join(claiming, c.batch("COMMIT")).await?;
    Ok((settled, claimed))
}

/// Rows locked are passed over: a step writing their outcome holds them (uploading, perhaps
/// for minutes), and a heartbeat waiting on them renewed no lease meanwhile, so other members
/// took this one's jobs back.
pub(super) async fn refresh(
    db: &Db,
    owner: &str,
    held: &[i64],
    lease_until: Millis,
) -> Result<u64> {
    let client = db.client().await?;
    client
        .exec(
            "UPDATE jobs SET lease_until = $2 WHERE id IN (SELECT id FROM jobs \
                 WHERE id = ANY($3) AND status = 'running' AND lease_owner = $1 \
                 FOR UPDATE SKIP LOCKED)",
            &[&owner, &lease_until, &held],
        )
        .await
}

/// A running job as recovery reads it: the row, its owner, lease and attempt start.
pub(super) struct Running {
    pub(super) job: Job,
    pub(super) owner: Option<String>,
    pub(super) lease_until: Option<Millis>,
    pub(super) started_at: Millis,
}

/// Every running job, for recovery to judge (outside the async code: the judge is a callback).
pub(super) async fn running(db: &Db) -> Result<Vec<Running>> {
    let client = db.client().await?;
    let rows = client
        .query_rows(
            &format!(
                "SELECT {JOB_COLUMNS}, j.lease_owner, j.lease_until, \
                     coalesce(j.attempt_started_at, j.updated_at) \
                 FROM jobs j LEFT JOIN batches b ON b.id = j.batch_id WHERE j.status = 'running'"
            ),
            &[],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| Running {
            job: job_from_row(r),
            owner: r.get(JOB_WIDTH),
            lease_until: r.get(JOB_WIDTH + 1),
            started_at: r.get(JOB_WIDTH + 2),
        })
        .collect())
}

/// Put back the jobs recovery judged gone, if each is still running under the same owner and
/// attempt (its worker may have finished it meanwhile), counting the interrupted attempt.
pub(super) async fn recover(
    db: &Db,
    gone: &[(&Running, bool)],
    policy: &Policy,
    now: Millis,
) -> Result<Vec<Failed>> {
    transaction!(db, |tx| {
        close_finished_batches(&tx).await?;
        let mut out = Vec::new();
        for (r, expired) in gone {
            let still = tx
                .query_rows(
                    "SELECT 1 FROM jobs WHERE id = $1 AND status = 'running' \
                         AND lease_owner IS NOT DISTINCT FROM $2 AND attempts = $3 \
                     FOR UPDATE SKIP LOCKED",
                    &[&r.job.id, &r.owner, &(r.job.attempts as i32)],
                )
                .await?;
            if still.is_empty() {
                continue;
            }
            let attempt = AttemptRef {
                job_id: r.job.id,
                number: r.job.attempts,
                started_at: r.started_at,
                worker: r.owner.as_deref(),
                stage: r.job.stage.or_else(|| Stage::initial(&r.job.url)),
            };
            let failure = Failure::new(
                FailureKind::Interrupted,
                if *expired {
                    "interrupted: the worker's lease expired"
                } else {
                    "interrupted: the worker stopped"
                },
            );
            // A PDF that crashes the worker every time leaves the job done with its landing
            // page once its budget is spent, as a PDF out of retries does.
            if let Some(kept) =
                kept_after_crash(&tx, &r.job, &attempt, &failure, policy, now).await?
            {
                out.push(kept);
                continue;
            }
            out.push(apply_failure(&tx, &r.job, Some(&attempt), &failure, policy, now, 0.0).await?);
        }
        if !out.is_empty() {
            db.notify(&tx).await?;
        }
        out
    })
}

/// Take finished batches out of the rotation. Locked first, then checked again in a statement
/// of its own: an intake or a retry that is adding a job to a batch holds the batch's row
/// until it commits, and only a new statement sees that job. One statement checked with what
/// it saw before the wait, and closed a batch with a pending job, which no claim then looked
/// at (`run --until-idle` never ended).
async fn close_finished_batches(tx: &impl Conn) -> Result<()> {
    const FINISHED: &str = "NOT EXISTS (SELECT 1 FROM jobs WHERE jobs.batch_id = batches.id \
         AND jobs.status IN ('pending', 'running'))";
    let ids: Vec<i64> = tx
        .query_rows(
            &format!("SELECT id FROM batches WHERE open AND {FINISHED} ORDER BY id FOR UPDATE"),
            &[],
        )
        .await?
        .iter()
        .map(|r| r.get(0))
        .collect();
    if !ids.is_empty() {
        // The members' own places in a closed batch's lanes (migration 0013) go with it.
        tx.exec(
            &format!(
                "WITH closed AS (UPDATE batches SET open = false \
                     WHERE id = ANY($1) AND {FINISHED} RETURNING id) \
                 DELETE FROM lane_positions WHERE batch_id IN (SELECT id FROM closed)"
            ),
            &[&ids],
        )
        .await?;
    }
    Ok(())
}

/// Whether recovery takes a running job back: its owner is gone, or cannot be judged here and
/// its lease has expired. The second value: the lease had expired.
pub(super) fn judge(r: &Running, now: Millis, liveness: &dyn Fn(&str) -> Liveness) -> Option<bool> {
    let expired = r.lease_until.is_none_or(|t| t < now);
    let recover = match r.owner.as_deref().map_or(Liveness::Gone, liveness) {
        Liveness::Alive => false,
        Liveness::Gone => true,
        Liveness::Unknown => expired,
    };
    recover.then_some(expired)
}

pub(super) async fn put_back(
    db: &Db,
    owner: &str,
    which: Held<'_>,
    reason: &str,
    now: Millis,
) -> Result<Vec<i64>> {
    transaction!(db, |tx| {
        let rows = tx
            .query_rows(
                "SELECT id, url, host, attempts, coalesce(attempt_started_at, updated_at), stage \
                 FROM jobs WHERE status = 'running' AND lease_owner = $1 FOR UPDATE",
                &[&owner],
            )
            .await?;
        let failure = Failure::new(FailureKind::Local, reason);
        let mut out = Vec::new();
        for r in &rows {
            let job_id: i64 = r.get(0);
            if !which.wants(job_id) {
                continue;
            }
            let url: String = r.get(1);
            let stage = r.get::<_, Option<&str>>(5).and_then(Stage::parse);
            let claimed = Claimed {
                job_id,
                stage: stage.or_else(|| Stage::initial(&url)),
                url,
                host: r.get(2),
                attempt: u32::try_from(r.get::<_, i32>(3)).unwrap_or(0),
                started_at: r.get(4),
                owner: owner.to_string(),
                throttled: false,
                reference: None,
                target: None,
                document: None,
            };
            if put_back_in(&tx, &claimed, &failure, now, PutBack::Local)
                .await?
                .is_some()
            {
                out.push(job_id);
            }
        }
        if !out.is_empty() {
            db.notify(&tx).await?;
        }
        out
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::engine::clock::ManualClock;
    use crate::engine::policy::{HostIntervals, Policy};
    use crate::engine::postgres::PgStore;
    use crate::engine::postgres::testing::{fresh_database_url, open_transaction};
    use crate::engine::queue::{ClaimRequest, Queue};
    use crate::engine::sqlite::testing::job;

    /// A claim that waited for another member's claim on the host's row records the host's
    /// start after the wait, not at the time its member read before it: the next member would
    /// otherwise start within the host's interval of this one's real start.
    #[test]
    fn a_claim_that_waited_for_the_hosts_row_counts_the_interval_from_after_the_wait() {
        let url = fresh_database_url();
        let store = PgStore::open(&url, "m").expect("open");
        let jobs = [job("http://arxiv.example/1"), job("http://arxiv.example/2")];
        store.enqueue(None, &jobs, 5, 0).expect("enqueue");
        let intervals: HostIntervals = [("arxiv.example".to_string(), Duration::from_secs(3))]
            .into_iter()
            .collect();
        // The member's clock stands still: only the wait on the server moves the start on.
        let clock = ManualClock::new(1_000);
        let (rt, other) = open_transaction(
            &url,
            "BEGIN; SELECT 1 FROM hosts WHERE host = 'arxiv.example' FOR UPDATE",
        );
        let held = Duration::from_millis(600);
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
                store
                    .step(&mut Vec::new(), &Policy::default(), 1_000, Some(&request))
                    .expect("step")
                    .claimed
            });
            std::thread::sleep(held);
            rt.block_on(other.batch_execute("COMMIT")).expect("release");
            waiting.join().expect("step thread")
        });
        assert_eq!(claimed.len(), 1);
        // The claim began within a few hundred milliseconds of the lock and waited the rest.
        let next = store
            .next_wakeup(1_000, &intervals)
            .expect("wakeup")
            .expect("the second job's turn");
        assert!(next >= 4_000 + 300, "next start at {next}");
        assert!(next <= 4_000 + 60_000, "next start at {next}");
    }

    /// The wake-up that goes out with a step's start names its channel as a literal: it reads
    /// back as the channel's own text, quotes and backslashes included, whether the session
    /// takes backslashes in strings as escapes or not.
    #[test]
    fn the_channel_literal_reads_back_as_the_channel_whatever_the_session_escapes() {
        let url = fresh_database_url();
        let channel = r"gleaner_a'b\c\'d";
        for conforming in ["on", "off"] {
            let (rt, client) = open_transaction(
                &url,
                &format!("SET standard_conforming_strings = {conforming}"),
            );
            let sql = format!("SELECT {}", super::super::string_literal(channel));
            let rows = rt.block_on(client.simple_query(&sql)).expect("select");
            let read = rows.iter().find_map(|m| match m {
                tokio_postgres::SimpleQueryMessage::Row(r) => r.get(0).map(str::to_string),
                _ => None,
            });
            assert_eq!(
                read.as_deref(),
                Some(channel),
                "conforming strings {conforming}"
            );
        }
    }

    /// Another member's transaction that stalls holding a host's row (a slow uplink, a laptop
    /// suspended mid-step) holds a claim up for the lock timeout at most: the claim passes the
    /// host by and takes what else is due, where it waited for as long as the row was held.
    #[test]
    fn a_claim_passes_a_host_whose_row_another_member_holds_too_long() {
        let url = format!("{}%20-c%20lock_timeout%3D300", fresh_database_url());
        let store = PgStore::open(&url, "m").expect("open");
        let jobs = [job("http://arxiv.example/1"), job("http://other.example/1")];
        store.enqueue(None, &jobs, 5, 0).expect("enqueue");
        // Held for the whole test: never committed.
        let (rt, _stalled) = open_transaction(
            &url,
            "BEGIN; SELECT 1 FROM hosts WHERE host = 'arxiv.example' FOR UPDATE",
        );
        let intervals = HostIntervals::default();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::scope(|scope| {
            scope.spawn(|| {
                let request = ClaimRequest {
                    owner: "w",
                    lease: Duration::from_secs(60),
                    per_host: 4,
                    intervals: &intervals,
                    max: 10,
                    clock: None,
                };
                let _ = tx.send(
                    store
                        .step(&mut Vec::new(), &Policy::default(), 1_000, Some(&request))
                        .map(|s| s.claimed),
                );
            });
            let claimed = rx.recv_timeout(Duration::from_secs(10));
            // Let a claim still waiting go before the scope joins it.
            rt.block_on(_stalled.batch_execute("ROLLBACK"))
                .expect("release");
            let claimed = claimed
                .expect("the claim waited for the other member's row")
                .expect("step");
            let hosts: Vec<&str> = claimed.iter().map(|c| c.host.as_str()).collect();
            assert_eq!(hosts, ["other.example"]);
        });
    }

    /// One claim of `max` jobs by `owner`, per host 2; the hosts of the jobs it took.
    fn claim_hosts(store: &PgStore, owner: &str, max: usize) -> Vec<String> {
        let intervals = HostIntervals::default();
        let request = ClaimRequest {
            owner,
            lease: Duration::from_secs(60),
            per_host: 2,
            intervals: &intervals,
            max,
            clock: None,
        };
        store
            .step(&mut Vec::new(), &Policy::default(), 1_000, Some(&request))
            .expect("step")
            .claimed
            .into_iter()
            .map(|c| c.host)
            .collect()
    }

    /// A claim that has taken nothing yet passes a host whose row another member's claim holds
    /// and takes the next host's job at once: waiting there made every member's claims queue
    /// behind each other, host after host (40% of the server's time in a drain by 4).
    #[test]
    fn a_claim_passes_a_held_host_row_even_before_it_has_taken_a_job() {
        let url = fresh_database_url();
        let store = PgStore::open(&url, "m").expect("open");
        let jobs = [job("http://a.example/1"), job("http://b.example/1")];
        store.enqueue(None, &jobs, 5, 0).expect("enqueue");
        let (rt, held) = open_transaction(
            &url,
            "BEGIN; SELECT 1 FROM hosts WHERE host = 'a.example' FOR UPDATE",
        );
        let started = std::time::Instant::now();
        // The lock timeout is 5 s: a claim that waited for the row would take that long.
        assert_eq!(claim_hosts(&store, "w", 1), ["b.example"]);
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{:?}",
            started.elapsed()
        );
        rt.block_on(held.batch_execute("ROLLBACK"))
            .expect("release");
    }

    /// A member whose claim met another's goes on from where its own claims stopped in the
    /// batch's lane, not from where the batch's last claim (another member's) stopped: the
    /// members spread along the lane instead of all starting at one place and meeting again.
    /// A member that has met no other claim goes on from the batch's place, as before.
    #[test]
    fn a_member_that_met_another_claim_goes_on_from_its_own_place_in_the_lane() {
        let url = fresh_database_url();
        let store = PgStore::open(&url, "m").expect("open");
        let jobs: Vec<_> = (1..=6)
            .flat_map(|h| (1..=2).map(move |k| job(&format!("http://h{h}.example/{k}"))))
            .collect();
        store.enqueue(None, &jobs, 5, 0).expect("enqueue");
        let (rt, held) = open_transaction(
            &url,
            "BEGIN; SELECT 1 FROM hosts WHERE host = 'h1.example' FOR UPDATE",
        );
        assert_eq!(claim_hosts(&store, "w1", 2), ["h2.example", "h3.example"]);
        rt.block_on(held.batch_execute("ROLLBACK"))
            .expect("release");
        // w2 has met nobody: it goes on from the batch's place, after w1's claim.
        assert_eq!(claim_hosts(&store, "w2", 2), ["h4.example", "h5.example"]);
        // w1 goes on from its own place (h3), not from w2's (h5).
        assert_eq!(claim_hosts(&store, "w1", 1), ["h4.example"]);
    }

    /// A recovery closing finished batches while a retry (or an intake) is putting a job back
    /// in one: the batch stays open. Recovery's one statement waited for the batch's row, then
    /// judged it by the jobs it saw before the wait, and closed it with a pending job.
    #[test]
    fn a_batch_getting_a_job_back_is_not_closed_by_a_recovery() {
        let url = fresh_database_url();
        let store = PgStore::open(&url, "m").expect("open");
        let (batch, _) = store
            .enqueue_batch("papers", "test", &[job("http://a.example/1")], 5, 0)
            .expect("intake");
        let batch = batch.expect("a batch");
        store
            .enqueue(None, &[job("http://b.example/2")], 5, 0)
            .expect("enqueue");
        // The first job finishes; the second is held by a member that is gone.
        crate::engine::postgres::testing::execute(
            &url,
            "UPDATE jobs SET status = 'done' WHERE url = 'http://a.example/1'",
        );
        let intervals = HostIntervals::default();
        let gone = store
            .step(
                &mut Vec::new(),
                &Policy::default(),
                0,
                Some(&ClaimRequest {
                    owner: "w@elsewhere",
                    lease: Duration::from_secs(1),
                    per_host: 4,
                    intervals: &intervals,
                    max: 1,
                    clock: None,
                }),
            )
            .expect("claim")
            .claimed;
        assert_eq!(gone.len(), 1);
        // A retry of the first job, as the store makes it: the job pending, the batch's row
        // written, not yet committed.
        let (rt, retrying) = open_transaction(
            &url,
            &format!(
                "BEGIN; UPDATE jobs SET status = 'pending' WHERE url = 'http://a.example/1'; \
                     UPDATE batches SET open = true WHERE id = {batch}"
            ),
        );
        std::thread::scope(|scope| {
            let recovering = scope.spawn(|| {
                store.recover(&Policy::default(), 60_000, &|_| {
                    crate::engine::queue::Liveness::Unknown
                })
            });
            std::thread::sleep(Duration::from_millis(500));
            rt.block_on(retrying.batch_execute("COMMIT"))
                .expect("commit the retry");
            let recovered = recovering.join().expect("thread").expect("recover");
            assert_eq!(recovered.len(), 1);
        });
        let open: bool = rt
            .block_on(retrying.query_one("SELECT open FROM batches WHERE id = $1", &[&batch]))
            .expect("the batch")
            .get(0);
        assert!(open, "the batch was closed with a pending job");
    }

    /// A proxy on loopback to the server at `to` that sends what the client writes at about
    /// `rate` bytes a second (a slow uplink) and the server's answers as they come.
    fn slow_uplink(to: std::net::SocketAddr, rate: usize) -> std::net::SocketAddr {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let at = listener.local_addr().expect("address");
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(mut client) = client else { return };
                let Ok(mut server) = std::net::TcpStream::connect(to) else {
                    return;
                };
                let (mut down_from, mut down_to) = (
                    server.try_clone().expect("clone"),
                    client.try_clone().expect("clone"),
                );
                std::thread::spawn(move || std::io::copy(&mut down_from, &mut down_to));
                std::thread::spawn(move || {
                    let mut chunk = vec![0; rate / 20];
                    while let Ok(n) = client.read(&mut chunk) {
                        if n == 0 || server.write_all(&chunk[..n]).is_err() {
                            break;
                        }
                        std::thread::sleep(Duration::from_millis(50));
                    }
                    let _ = server.shutdown(std::net::Shutdown::Both);
                });
            }
        });
        at
    }

    /// A step that sends a document up a slow uplink commits: it is not cut off at the
    /// per-call limit, nor ended by the server as a transaction gone silent while its
    /// document was still arriving.
    #[test]
    fn a_step_uploading_a_document_up_a_slow_uplink_commits() {
        use crate::engine::queue::{Finish, Settled, Success};
        let base = fresh_database_url();
        let mut u = url::Url::parse(&base).expect("url");
        let to = (u.host_str().expect("host"), u.port().unwrap_or(5432));
        let to = std::net::ToSocketAddrs::to_socket_addrs(&to)
            .expect("address")
            .next()
            .expect("address");
        let via = slow_uplink(to, 512 * 1024);
        u.set_port(Some(via.port())).expect("port");
        // The session's own limit on a silent transaction is short: the upload is not one.
        let url = format!("{u}%20-c%20idle_in_transaction_session_timeout%3D300");
        let mut store = PgStore::open(&url, "m").expect("open");
        store.set_answer_timeout(Duration::from_secs(1));
        store
            .enqueue(None, &[job("http://a.example/1")], 5, 0)
            .expect("enqueue");
        let claimed = store
            .claim("w", 0, Duration::from_secs(600), 2)
            .expect("claim")
            .expect("a job");
        let dir = tempfile::tempdir().expect("dir");
        let document = dir.path().join("big.md");
        // About 3 s up this uplink: three times the call's limit, ten times the session's.
        std::fs::write(&document, "a".repeat(1_500_000)).expect("document");
        let success = Success {
            final_url: claimed.url.clone(),
            http_status: 200,
            title: None,
            document: Some(document.to_string_lossy().into_owned()),
            content_type: None,
            sha256: None,
            reference: None,
            index: None,
        };
        let step = store
            .step(
                &mut vec![(claimed, Finish::Success(success))],
                &Policy::default(),
                10,
                None,
            )
            .expect("the step committed");
        assert!(matches!(step.settled[0].2, Settled::Done));
        crate::engine::postgres::testing::execute(
            &base,
            "DO $$ BEGIN IF (SELECT length(content) FROM documents) <> 1500000 \
             THEN RAISE EXCEPTION 'the document is not in the database'; END IF; END $$",
        );
    }

    /// The heartbeat renews the leases it can while a step of the same member holds some of
    /// its jobs' rows (writing their outcomes, an upload perhaps minutes long): it does not
    /// wait on those rows, past the lock timeout and again, renewing nothing meanwhile.
    #[test]
    fn a_heartbeat_renews_the_other_leases_while_a_step_holds_some_rows() {
        let url = fresh_database_url();
        let store = PgStore::open(&url, "m").expect("open");
        let jobs = [job("http://a.example/1"), job("http://b.example/1")];
        store.enqueue(None, &jobs, 5, 0).expect("enqueue");
        let lease = Duration::from_secs(60);
        let first = store
            .claim("w", 0, lease, 2)
            .expect("claim")
            .expect("a job");
        let second = store
            .claim("w", 0, lease, 2)
            .expect("claim")
            .expect("a job");
        // The step committing the first job's outcome, mid-upload.
        let (rt, step) = open_transaction(
            &url,
            &format!(
                "BEGIN; SELECT 1 FROM jobs WHERE id = {} FOR UPDATE",
                first.job_id
            ),
        );
        let started = std::time::Instant::now();
        let renewed = store
            .refresh("w", &[first.job_id, second.job_id], 600_000)
            .expect("refresh");
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{:?}",
            started.elapsed()
        );
        assert_eq!(renewed, 1);
        crate::engine::postgres::testing::execute(
            &url,
            &format!(
                "DO $$ BEGIN IF (SELECT lease_until FROM jobs WHERE id = {}) <> 600000 \
                 THEN RAISE EXCEPTION 'the lease was not renewed'; END IF; END $$",
                second.job_id
            ),
        );
        rt.block_on(step.batch_execute("ROLLBACK"))
            .expect("release");
    }
}
