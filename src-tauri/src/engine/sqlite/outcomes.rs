//! How attempts end: successes, failures with their decision, put-backs, and recovery of
//! jobs whose worker is gone.

use rusqlite::{OptionalExtension, Transaction, params};

use crate::engine::clock::Millis;
use crate::engine::policy::{self, Counters, Decision, ErrorClass, Failure, FailureKind, Policy};

use super::Store;
use super::claim::claim_many;
use super::hosts::queue_paused;
use super::rows::{JOB_COLUMNS, job_from_row, kind_str, load_job, status_of};
use super::search::index_in;
use super::stages::{kept_in, next_in, would_die};
use crate::engine::queue::{
    ClaimRequest, Claimed, Failed, Finish, Job, Liveness, QueueError, Result, Settled, Stage, Step,
    Success,
};

/// Record a success, if the job is still this worker's. The row keeps the attempt: when it
/// started, and who ran it (migration 0014). The metadata the page filled in replaces the
/// stored one but for its tags: those the job has now stay (migration 0020).
const COMPLETE_SQL: &str = "UPDATE jobs SET status = 'done', lease_owner = NULL, \
         finished_by = lease_owner, lease_until = NULL, final_url = ?3, http_status = ?4, \
         title = coalesce(?5, title), document = ?6, content_type = ?7, sha256 = ?8, error_class = NULL, \
         error = NULL, updated_at = ?9, finished_at = ?9, stage = ?11, \
         meta = CASE WHEN ?12 IS NULL THEN meta WHEN json_valid(meta) THEN \
         CASE WHEN meta -> '$.tags' IS NULL THEN json_remove(?12, '$.tags') \
         ELSE json_set(?12, '$.tags', meta -> '$.tags') END ELSE json_remove(?12, '$.tags') END \
     WHERE id = ?1 AND status = 'running' AND lease_owner = ?2 AND attempts = ?10";

/// Write an attempt's history row when it ends.
const END_ATTEMPT_SQL: &str = "INSERT INTO attempt_log (job_id, number, started_at, finished_at, \
         outcome, kind, http_status, error, delay_ms, worker, stage) \
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)";

/// Record a success if the job is still this worker's; whether it was.
fn complete_in(
    tx: &Transaction<'_>,
    claimed: &Claimed,
    success: &Success,
    policy: &Policy,
    now: Millis,
) -> Result<bool> {
    let changed = tx.prepare_cached(COMPLETE_SQL)?.execute(params![
        claimed.job_id,
        claimed.owner,
        success.final_url,
        success.http_status,
        success.title,
        success.document,
        success.content_type,
        success.sha256,
        now,
        claimed.attempt,
        claimed.stage.map(Stage::as_str),
        success
            .reference
            .as_ref()
            .and_then(|r| serde_json::to_string(r).ok())
    ])?;
    let done = changed == 1;
    if done && let Some(doc) = &success.index {
        index_in(tx, claimed.job_id, doc)?;
    }
    // The done row is also the attempt's history (migration 0014); a result that came too
    // late gets a row in `attempt_log`.
    if !done {
        let end = AttemptEnd {
            outcome: "success_discarded",
            http_status: Some(success.http_status),
            ..AttemptEnd::default()
        };
        end_attempt(tx, &AttemptRef::from(claimed), now, &end, true)?;
    }
    // Only a throttled host keeps a success streak; the others need no write.
    if done && claimed.throttled {
        record_host_success(tx, &claimed.host, policy.per_host)?;
    }
    Ok(done)
}

/// Why an attempt's job goes back to pending with its budget untouched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum PutBack {
    /// The machine was offline.
    Offline,
    /// This machine could not keep what was fetched (disk full, library unwritable).
    Local,
}

impl PutBack {
    fn outcome(self) -> &'static str {
        match self {
            PutBack::Offline => "offline",
            PutBack::Local => "local",
        }
    }

    fn note(self) -> &'static str {
        match self {
            PutBack::Offline => "offline: not counted against its retries",
            PutBack::Local => "a problem on this computer: not counted against its retries",
        }
    }
}

pub(super) fn put_back_in(
    tx: &Transaction<'_>,
    claimed: &Claimed,
    failure: &Failure,
    now: Millis,
    why: PutBack,
) -> Result<Option<Job>> {
    let changed = tx
        .prepare_cached(
            "UPDATE jobs SET status = 'pending', run_at = ?3, error_class = 'transient', error = ?4, \
                 http_status = NULL, lease_owner = NULL, lease_until = NULL, updated_at = ?3, \
                 attempt_started_at = NULL \
             WHERE id = ?1 AND status = 'running' AND lease_owner = ?2 AND attempts = ?5",
        )?
        .execute(params![
            claimed.job_id,
            claimed.owner,
            now,
            format!("{} ({})", failure.message, why.note()),
            claimed.attempt
        ])?;
    let end = AttemptEnd {
        outcome: why.outcome(),
        kind: Some(failure.kind),
        error: Some(&failure.message),
        delay_ms: Some(0),
        ..AttemptEnd::default()
    };
    end_attempt(tx, &AttemptRef::from(claimed), now, &end, changed == 0)?;
    if changed == 0 {
        return Ok(None);
    }
    let job = load_job(tx, claimed.job_id)?.ok_or(rusqlite::Error::QueryReturnedNoRows)?;
    Ok(Some(job))
}

fn fail_in(
    tx: &Transaction<'_>,
    claimed: &Claimed,
    failure: &Failure,
    policy: &Policy,
    now: Millis,
    unit: f64,
) -> Result<Option<Failed>> {
    let job = tx
        .prepare_cached(&format!(
            "SELECT {JOB_COLUMNS} FROM jobs j LEFT JOIN batches b ON b.id = j.batch_id \
             WHERE j.id = ?1 AND j.status = 'running' AND j.lease_owner = ?2 AND j.attempts = ?3"
        ))?
        .query_row(
            params![claimed.job_id, claimed.owner, claimed.attempt],
            job_from_row,
        )
        .optional()?;
    let Some(job) = job else {
        let error = format!(
            "{} (result discarded: the job was cancelled or taken over)",
            failure.message
        );
        let end = AttemptEnd {
            outcome: failure.class().as_str(),
            kind: Some(failure.kind),
            http_status: failure.http_status,
            error: Some(&error),
            delay_ms: None,
        };
        end_attempt(tx, &AttemptRef::from(claimed), now, &end, true)?;
        return Ok(None);
    };
    let failed = apply_failure(
        tx,
        &job,
        Some(&AttemptRef::from(claimed)),
        failure,
        policy,
        now,
        unit,
    )?;
    Ok(Some(failed))
}

/// A step's outcome as committed: it held (the job was still this worker's) or came too late.
pub(super) fn done_or_discarded(held: bool) -> Settled {
    if held {
        Settled::Done
    } else {
        Settled::Discarded
    }
}

/// Take batches with nothing left to do out of the rotation, so the claim does not walk them.
fn close_finished_batches(tx: &Transaction<'_>) -> Result<()> {
    tx.execute(
        "UPDATE batches SET open = 0 WHERE open = 1 AND NOT EXISTS (SELECT 1 FROM jobs \
             WHERE jobs.batch_id = batches.id AND jobs.status IN ('pending', 'running'))",
        [],
    )?;
    tx.execute(
        "DELETE FROM lanes WHERE batch_id IN (SELECT id FROM batches WHERE open = 0)",
        [],
    )?;
    Ok(())
}

/// Successes after a rate limit win back one connection per [`RECOVERY_STREAK`]; once back at
/// the policy's per-host limit the host has no limit of its own again.
fn record_host_success(tx: &Transaction<'_>, host: &str, per_host: u32) -> Result<()> {
    tx.prepare_cached(
        "UPDATE hosts SET \
             concurrency_limit = CASE WHEN success_streak + 1 < ?3 THEN concurrency_limit \
                 WHEN concurrency_limit + 1 >= ?2 THEN NULL ELSE concurrency_limit + 1 END, \
             success_streak = CASE WHEN success_streak + 1 >= ?3 THEN 0 ELSE success_streak + 1 END \
         WHERE host = ?1 AND concurrency_limit IS NOT NULL",
    )?
    .execute(params![host, per_host, RECOVERY_STREAK])?;
    Ok(())
}

/// An attempt that was in flight: which job and which of its attempts, when it began, and the
/// worker that made it.
pub(super) struct AttemptRef<'a> {
    job_id: i64,
    number: u32,
    started_at: Millis,
    worker: Option<&'a str>,
    stage: Option<Stage>,
}

impl<'a> From<&'a Claimed> for AttemptRef<'a> {
    fn from(c: &'a Claimed) -> Self {
        Self {
            job_id: c.job_id,
            number: c.attempt,
            started_at: c.started_at,
            worker: Some(&c.owner),
            stage: c.stage,
        }
    }
}

/// How an attempt ended, for its `attempts` row.
#[derive(Default)]
pub(super) struct AttemptEnd<'a> {
    pub(super) outcome: &'a str,
    pub(super) kind: Option<FailureKind>,
    pub(super) http_status: Option<u16>,
    pub(super) error: Option<&'a str>,
    pub(super) delay_ms: Option<i64>,
}

/// Write the row of an attempt that has ended. An attempt is written once, when it ends; while
/// in flight it lives on the job's row. A `late` result (the job was cancelled or recovered in
/// the meantime, which already wrote this attempt's row) replaces that row, so the history
/// says what really became of the attempt.
pub(super) fn end_attempt(
    tx: &Transaction<'_>,
    at: &AttemptRef<'_>,
    now: Millis,
    end: &AttemptEnd<'_>,
    late: bool,
) -> Result<()> {
    let kind = end.kind.map(kind_str);
    if late {
        let replaced = tx
            .prepare_cached(
                "UPDATE attempt_log SET finished_at = ?3, outcome = ?4, kind = ?5, http_status = ?6, \
                     error = ?7, delay_ms = ?8 WHERE job_id = ?1 AND number = ?2",
            )?
            .execute(params![
                at.job_id,
                at.number,
                now,
                end.outcome,
                kind,
                end.http_status,
                end.error,
                end.delay_ms
            ])?;
        if replaced > 0 {
            return Ok(());
        }
        // A job cancelled and then deleted has no history to add to.
        if status_of(tx, at.job_id)?.is_none() {
            return Ok(());
        }
    }
    tx.prepare_cached(END_ATTEMPT_SQL)?.execute(params![
        at.job_id,
        at.number,
        at.started_at,
        now,
        end.outcome,
        kind,
        end.http_status,
        end.error,
        end.delay_ms,
        at.worker,
        at.stage.map(Stage::as_str)
    ])?;
    Ok(())
}

/// Successes in a row that raise a throttled host's connection limit by one.
pub const RECOVERY_STREAK: u32 = 10;

/// The shared tail of a failed attempt: counters, decision, job row, attempt row, host pause.
fn apply_failure(
    tx: &Transaction<'_>,
    job: &Job,
    attempt: Option<&AttemptRef>,
    failure: &Failure,
    policy: &Policy,
    now: Millis,
    unit: f64,
) -> Result<Failed> {
    // The budget in force is the current policy's, so a settings change reaches queued jobs.
    let counters = Counters {
        max_retries: policy.max_retries,
        ..job.counters
    };
    let decision = policy::decide(policy, &counters, failure, now, unit);
    let (net, server, rate, blocked) = match failure.kind.budget() {
        _ if failure.class() == ErrorClass::Fatal => (0, 0, 0, 0),
        policy::Budget::Network => (1, 0, 0, 0),
        policy::Budget::Server => (0, 1, 0, 0),
        policy::Budget::RateLimit => (0, 0, 1, 0),
        policy::Budget::Blocked => (0, 0, 0, 1),
    };
    let (status, run_at, delay_ms, finished_at, error) = match &decision {
        Decision::Retry { delay, .. } => {
            let d = delay.as_millis() as Millis;
            ("pending", now + d, Some(d), None, failure.message.clone())
        }
        Decision::Dead { reason } => ("dead", job.run_at, None, Some(now), reason.clone()),
    };
    tx.prepare_cached("UPDATE jobs SET status = ?2, run_at = ?3, net_failures = net_failures + ?4, \
             server_failures = server_failures + ?5, rate_limits = rate_limits + ?6, \
             error_class = ?7, error = ?8, http_status = ?9, lease_owner = NULL, lease_until = NULL, \
             updated_at = ?10, finished_at = ?11, max_retries = ?12, \
             blocked_failures = blocked_failures + ?13, attempt_started_at = NULL \
         WHERE id = ?1")?.execute(params![
            job.id,
            status,
            run_at,
            net,
            server,
            rate,
            failure.class().as_str(),
            error,
            failure.http_status,
            now,
            finished_at,
            policy.max_retries,
            blocked
        ])?;
    if let Some(attempt) = attempt {
        let end = AttemptEnd {
            outcome: if failure.kind == FailureKind::Interrupted {
                "interrupted"
            } else {
                failure.class().as_str()
            },
            kind: Some(failure.kind),
            http_status: failure.http_status,
            error: Some(&failure.message),
            delay_ms,
        };
        end_attempt(tx, attempt, now, &end, false)?;
    }
    if let Decision::Retry {
        pause_host: Some(pause),
        ..
    } = &decision
    {
        let until = now + pause.as_millis() as Millis;
        // After a rate limit the host gets one connection at a time until it has shown a run
        // of successes; a plain 503 only pauses it.
        let limit: Option<u32> = (failure.class() == ErrorClass::RateLimited).then_some(1);
        tx.prepare_cached("INSERT INTO hosts (host, paused_until, pause_reason, concurrency_limit) VALUES (?1, ?2, ?3, ?4) \
             ON CONFLICT(host) DO UPDATE SET paused_until = max(coalesce(paused_until, 0), excluded.paused_until), \
                 pause_reason = excluded.pause_reason, success_streak = 0, \
                 concurrency_limit = coalesce(excluded.concurrency_limit, concurrency_limit)")?.execute(params![job.host, until, failure.message, limit])?;
        // None of the host's waiting jobs can start before the pause ends, so their rows say
        // so: the claim's scan over due jobs then never walks a paused host's backlog (100,000
        // rows at the head of a batch would otherwise be checked and skipped on every claim),
        // and the window shows when they will really run.
        // Each lane is read from its cursor, so the host's finished jobs are not walked.
        tx.prepare_cached("UPDATE jobs SET run_at = (SELECT paused_until FROM hosts WHERE host = ?1) \
             WHERE id IN (SELECT j.id FROM lanes l INDEXED BY lanes_host CROSS JOIN jobs j INDEXED BY jobs_lane \
                 WHERE l.host = ?1 AND j.batch_id = l.batch_id AND j.host = ?1 \
                   AND j.run_at >= l.cur_run_at AND (j.run_at > l.cur_run_at OR j.id >= l.cur_id) \
                   AND j.status = 'pending' \
                   AND j.run_at < (SELECT paused_until FROM hosts WHERE host = ?1))")?.execute([&job.host])?;
    }
    let job = load_job(tx, job.id)?.ok_or(rusqlite::Error::QueryReturnedNoRows)?;
    Ok(Failed {
        job,
        failure: failure.clone(),
        decision,
        at: now,
    })
}

impl Store {
    /// Group commit: record the outcomes of finished jobs and claim up to `claim.max` more, all
    /// in one transaction, so a busy worker pays one commit (one fsync at `synchronous=FULL`)
    /// for a whole group of jobs instead of two per job. The results come back in the order
    /// of `finished`; nothing is reported before the transaction commits.
    ///
    /// `finished` is emptied only once the transaction has committed: on an error the
    /// outcomes are still there to commit later, and nothing fetched is lost.
    pub fn step(
        &self,
        finished: &mut Vec<(Claimed, Finish)>,
        policy: &Policy,
        now: Millis,
        claim: Option<&ClaimRequest<'_>>,
    ) -> Result<Step> {
        let (results, claimed) = self.write(|tx| {
            let mut settled = Vec::with_capacity(finished.len());
            for (claimed, finish) in finished.iter() {
                let result = match finish {
                    Finish::Success(success) => {
                        done_or_discarded(complete_in(tx, claimed, success, policy, now)?)
                    }
                    // A PDF whose budget is spent leaves the job done with its landing page.
                    Finish::Failure { failure, unit }
                        if claimed.stage == Some(Stage::Pdf)
                            && would_die(tx, claimed, failure, policy, now, *unit)? =>
                    {
                        done_or_discarded(kept_in(tx, claimed, failure, now)?)
                    }
                    Finish::Failure { failure, unit } => {
                        fail_in(tx, claimed, failure, policy, now, *unit)?
                            .map_or(Settled::Discarded, Settled::Failed)
                    }
                    Finish::Next(next) => done_or_discarded(next_in(tx, claimed, next, now)?),
                    Finish::Kept(failure) => done_or_discarded(kept_in(tx, claimed, failure, now)?),
                    Finish::Offline(failure) => {
                        put_back_in(tx, claimed, failure, now, PutBack::Offline)?
                            .map_or(Settled::Discarded, Settled::Offline)
                    }
                    Finish::Local(failure) => {
                        put_back_in(tx, claimed, failure, now, PutBack::Local)?
                            .map_or(Settled::Discarded, Settled::Local)
                    }
                };
                settled.push(result);
            }
            let mut claimed = Vec::new();
            if let Some(request) = claim.filter(|r| r.max > 0)
                && !queue_paused(tx)?
            {
                let mut lane_keys = self.lane_keys.lock().map_err(|_| QueueError::Poisoned)?;
                claimed = claim_many(tx, request, now, &mut lane_keys)?;
            }
            Ok((settled, claimed))
        })?;
        let settled = std::mem::take(finished)
            .into_iter()
            .zip(results)
            .map(|((claimed, finish), result)| (claimed, finish, result))
            .collect();
        Ok(Step { settled, claimed })
    }

    /// Extend the leases of `owner`'s running jobs to `lease_until` (the heartbeat); how many
    /// jobs it holds.
    pub fn refresh(&self, owner: &str, lease_until: Millis) -> Result<u64> {
        self.write(|tx| {
            let n = tx
                .prepare_cached(
                    "UPDATE jobs INDEXED BY jobs_running_host SET lease_until = ?2 \
                     WHERE status = 'running' AND lease_owner = ?1",
                )?
                .execute(params![owner, lease_until])?;
            Ok(n as u64)
        })
    }

    /// Put back jobs whose worker is gone: `liveness(owner)` says the owning process no longer
    /// exists, or it cannot tell and the lease has expired. A worker known to be alive keeps
    /// its jobs whatever the wall clock says (a laptop waking from sleep finds every lease
    /// expired). The interrupted attempt still counts.
    pub fn recover(
        &self,
        policy: &Policy,
        now: Millis,
        liveness: impl Fn(&str) -> Liveness,
    ) -> Result<Vec<Failed>> {
        self.write(|tx| {
            close_finished_batches(tx)?;
            let mut stmt = tx.prepare(&format!(
                "SELECT {JOB_COLUMNS}, j.lease_owner, j.lease_until, \
                     coalesce(j.attempt_started_at, j.updated_at) FROM jobs j INDEXED BY jobs_running_host \
                 LEFT JOIN batches b ON b.id = j.batch_id WHERE j.status = 'running'"
            ))?;
            let running = stmt
                .query_map([], |r| {
                    Ok((
                        job_from_row(r)?,
                        r.get::<_, Option<String>>(26)?,
                        r.get::<_, Option<Millis>>(27)?,
                        r.get::<_, Millis>(28)?,
                    ))
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            drop(stmt);
            let mut out = Vec::new();
            for (job, owner, lease_until, started_at) in running {
                let expired = lease_until.is_none_or(|t| t < now);
                let recover = match owner.as_deref().map_or(Liveness::Gone, &liveness) {
                    Liveness::Alive => false,
                    Liveness::Gone => true,
                    Liveness::Unknown => expired,
                };
                if !recover {
                    continue;
                }
                let attempt = AttemptRef {
                    job_id: job.id,
                    number: job.attempts,
                    started_at,
                    worker: owner.as_deref(),
                    stage: job.stage.or_else(|| Stage::initial(&job.url)),
                };
                let failure = Failure::new(
                    FailureKind::Interrupted,
                    if expired {
                        "interrupted: the worker's lease expired"
                    } else {
                        "interrupted: the worker stopped"
                    },
                );
                out.push(apply_failure(
                    tx,
                    &job,
                    Some(&attempt),
                    &failure,
                    policy,
                    now,
                    0.0,
                )?);
            }
            Ok(out)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::policy::NO_INTERVALS;
    use crate::engine::queue::Queue as _;

    use std::time::Duration;

    use crate::engine::policy::{Decision, Failure, FailureKind, Policy};
    use crate::engine::queue::{ClaimRequest, Finish, Liveness, Settled, Status, Success};
    use crate::engine::sqlite::Store;
    use crate::engine::sqlite::claim::{
        CLAIM_BATCHES, CLAIM_HOST, CLAIM_JOB_SQL, SERVED_LANE_SQL, TO_BACK_SQL,
    };
    use crate::engine::sqlite::lanes::{
        CLAIM_LANES, LANE_ADVANCE, LANE_CURSOR, LANE_HEAD_AFTER, LANE_HEAD_AT, LANE_KEYS_AFTER,
        LANE_KEYS_AT,
    };
    use crate::engine::sqlite::testing::job;

    #[test]
    fn a_cancelled_attempt_is_closed_and_a_late_result_replaces_it() {
        let s = Store::open_in_memory().expect("store");
        let policy = Policy::default();
        s.enqueue(None, &[job("http://a.example/1")], 5, 0)
            .expect("enqueue");
        let c = s
            .claim("w", 10, Duration::from_secs(60), 2)
            .expect("claim")
            .expect("a job");
        let running = s.attempts(c.job_id).expect("attempts");
        assert_eq!(running.len(), 1);
        assert_eq!((running[0].started_at, running[0].finished_at), (10, None));
        s.cancel(&[c.job_id], 20).expect("cancel");
        let cancelled = s.attempts(c.job_id).expect("attempts");
        assert_eq!(cancelled.len(), 1, "{cancelled:?}");
        assert_eq!(cancelled[0].outcome.as_deref(), Some("cancelled"));
        assert_eq!(cancelled[0].worker.as_deref(), Some("w"));
        let success = Success {
            final_url: c.url.clone(),
            http_status: 200,
            title: None,
            document: None,
            content_type: None,
            sha256: None,
            reference: None,
            index: None,
        };
        let step = s
            .step(
                &mut vec![(c.clone(), Finish::Success(success))],
                &policy,
                30,
                None,
            )
            .expect("step");
        assert!(matches!(step.settled[0].2, Settled::Discarded));
        let late = s.attempts(c.job_id).expect("attempts");
        assert_eq!(late.len(), 1, "one row per attempt: {late:?}");
        assert_eq!(late[0].outcome.as_deref(), Some("success_discarded"));
        // Deleted after it was cancelled: the late result has nothing to add to.
        s.delete(&[c.job_id]).expect("delete");
        let failure = Failure::new(FailureKind::Timeout, "timed out");
        s.step(
            &mut vec![(c, Finish::Failure { failure, unit: 0.0 })],
            &policy,
            40,
            None,
        )
        .expect("a late result for a deleted job does not fail the step");
    }

    #[test]
    fn a_failure_backs_off_then_dies_with_its_history() {
        let s = Store::open_in_memory().expect("store");
        s.enqueue(None, &[job("http://a.example/")], 2, 0)
            .expect("enqueue");
        let policy = Policy {
            jitter: 0.0,
            max_retries: 2,
            ..Policy::default()
        };
        let mut now = 0;
        let mut f = Failure::new(FailureKind::ServerError, "500 Internal Server Error");
        f.http_status = Some(500);
        for expected_delay in [30_000, 60_000] {
            let c = s
                .claim("w", now, Duration::from_secs(60), 2)
                .expect("claim")
                .expect("due");
            let failed = s
                .fail(&c, &f, &policy, now, 0.0)
                .expect("fail")
                .expect("held");
            assert_eq!(failed.job.status, Status::Pending);
            assert_eq!(failed.job.retry_after, Some(now + expected_delay));
            now += expected_delay;
        }
        let c = s
            .claim("w", now, Duration::from_secs(60), 2)
            .expect("claim")
            .expect("due");
        let failed = s
            .fail(&c, &f, &policy, now, 0.0)
            .expect("fail")
            .expect("held");
        assert_eq!(failed.job.status, Status::Dead);
        assert_eq!(failed.job.attempts, 3);
        let history = s.attempts(failed.job.id).expect("attempts");
        assert_eq!(history.len(), 3);
        assert_eq!(history[0].delay_ms, Some(30_000));
        assert_eq!(history[2].delay_ms, None);
        assert!(
            history
                .iter()
                .all(|a| a.outcome.as_deref() == Some("transient"))
        );

        // A manual retry gives a fresh budget and keeps the history.
        let ids = s.retry_dead(None, 2, now).expect("retry");
        assert_eq!(ids, vec![failed.job.id]);
        let revived = s.job(failed.job.id).expect("read").expect("job");
        assert_eq!(
            (
                revived.status,
                revived.error_class,
                revived.error.as_deref()
            ),
            (Status::Pending, None, None),
            "no death verdict on a job queued again"
        );
        assert_eq!(s.attempts(revived.id).expect("attempts").len(), 3);
        let c = s
            .claim("w", now, Duration::from_secs(60), 2)
            .expect("claim")
            .expect("due again");
        let failed = s
            .fail(&c, &f, &policy, now, 0.0)
            .expect("fail")
            .expect("held");
        assert_eq!(
            failed.decision,
            Decision::Retry {
                delay: Duration::from_secs(30),
                retry: Some((1, 2)),
                pause_host: None
            }
        );
        assert_eq!(s.attempts(failed.job.id).expect("attempts").len(), 4);
    }

    #[test]
    fn a_rate_limit_throttles_the_host_until_a_run_of_successes() {
        let s = Store::open_in_memory().expect("store");
        let jobs: Vec<_> = (0..30)
            .map(|i| job(&format!("http://a.example/{i}")))
            .collect();
        s.enqueue(None, &jobs, 5, 0).expect("enqueue");
        let policy = Policy {
            jitter: 0.0,
            ..Policy::default()
        };
        let ok = Success {
            http_status: 200,
            ..Success::default()
        };
        let lease = Duration::from_secs(60);
        let first = s.claim("w", 0, lease, 2).expect("claim").expect("job");
        let f = Failure::new(FailureKind::RateLimited, "429 Too Many Requests");
        s.fail(&first, &f, &policy, 0, 0.0)
            .expect("fail")
            .expect("held");
        let after = 31_000;
        assert_eq!(s.hosts(after).expect("hosts")[0].concurrency_limit, Some(1));
        let stats = s.stats(after).expect("stats");
        assert_eq!(stats.throttled_hosts.len(), 1, "visible in stats");
        let one = s.claim("w", after, lease, 2).expect("claim").expect("one");
        assert!(
            s.claim("w", after, lease, 2).expect("claim").is_none(),
            "throttled to 1 connection"
        );
        s.complete(&one, &ok, &policy, after).expect("done");
        for _ in 1..RECOVERY_STREAK {
            let c = s.claim("w", after, lease, 2).expect("claim").expect("job");
            s.complete(&c, &ok, &policy, after).expect("done");
        }
        // Ten successes in a row: back to the policy's 2, and no limit of its own any more.
        assert!(s.hosts(after).expect("hosts").is_empty());
        assert!(s.claim("w", after, lease, 2).expect("claim").is_some());
        assert!(s.claim("w", after, lease, 2).expect("claim").is_some());
    }

    #[test]
    fn retries_used_counts_only_the_retries_the_budget_paid_for() {
        let s = Store::open_in_memory().expect("store");
        s.enqueue(None, &[job("http://a.example/1")], 2, 0)
            .expect("enqueue");
        let policy = Policy {
            jitter: 0.0,
            max_retries: 2,
            ..Policy::default()
        };
        let lease = Duration::from_secs(60);
        let mut now = 0;
        let mut attempt = |kind: FailureKind| {
            // An hour apart: past any backoff or host pause these failures set.
            now += 3_600_000;
            let c = s.claim("w", now, lease, 2).expect("claim").expect("due");
            s.fail(&c, &Failure::new(kind, "failed"), &policy, now, 0.0)
                .expect("fail")
                .expect("held");
            let j = s.job(c.job_id).expect("read").expect("job");
            (j.attempts, j.retries_used, j.status)
        };
        // Rate-limit waits spend nothing.
        assert_eq!(attempt(FailureKind::RateLimited), (1, 0, Status::Pending));
        assert_eq!(attempt(FailureKind::RateLimited), (2, 0, Status::Pending));
        // Two retries are paid for; the third failure finds the budget spent and buys none.
        assert_eq!(attempt(FailureKind::Timeout), (3, 1, Status::Pending));
        assert_eq!(attempt(FailureKind::Timeout), (4, 2, Status::Pending));
        assert_eq!(attempt(FailureKind::Timeout), (5, 2, Status::Dead));
    }

    #[test]
    fn one_step_commits_a_group_of_outcomes_and_claims_the_freed_slots() {
        let s = Store::open_in_memory().expect("store");
        let jobs: Vec<_> = (0..6)
            .map(|i| job(&format!("http://h{i}.example/")))
            .collect();
        s.enqueue(None, &jobs, 5, 0).expect("enqueue");
        let policy = Policy {
            jitter: 0.0,
            ..Policy::default()
        };
        let request = ClaimRequest {
            owner: "w",
            lease: Duration::from_secs(60),
            per_host: 2,
            intervals: &NO_INTERVALS,
            max: 3,
        };
        let first = s
            .step(&mut Vec::new(), &policy, 10, Some(&request))
            .expect("step");
        assert!(first.settled.is_empty());
        let ids: Vec<i64> = first.claimed.iter().map(|c| c.job_id).collect();
        assert_eq!(ids, [1, 2, 3]);
        // Job 2 is cancelled while in flight: its success is discarded, the others commit.
        s.cancel(&[2], 11).expect("cancel");
        let mut server = Failure::new(FailureKind::ServerError, "500 Internal Server Error");
        server.http_status = Some(500);
        let ok = Success {
            http_status: 200,
            ..Success::default()
        };
        let mut finished = vec![
            (first.claimed[0].clone(), Finish::Success(ok.clone())),
            (first.claimed[1].clone(), Finish::Success(ok)),
            (
                first.claimed[2].clone(),
                Finish::Failure {
                    failure: server,
                    unit: 0.0,
                },
            ),
        ];
        let second = s
            .step(&mut finished, &policy, 12, Some(&request))
            .expect("step");
        let results: Vec<(i64, &str)> = second
            .settled
            .iter()
            .map(|(c, _, settled)| {
                (
                    c.job_id,
                    match settled {
                        Settled::Done => "done",
                        Settled::Failed(f) => f.job.status.as_str(),
                        Settled::Offline(_) => "offline",
                        Settled::Local(_) => "local",
                        Settled::Discarded => "discarded",
                    },
                )
            })
            .collect();
        assert_eq!(results, [(1, "done"), (2, "discarded"), (3, "pending")]);
        let ids: Vec<i64> = second.claimed.iter().map(|c| c.job_id).collect();
        assert_eq!(ids, [4, 5, 6], "job 3 waits 30 s for its retry");
        // The whole step is one transaction: every outcome and claim is in the database.
        assert_eq!(s.job(3).expect("job").expect("row").run_at, 12 + 30_000);
        assert_eq!(s.stats(12).expect("stats").running, 3);
    }

    #[test]
    fn a_lost_lease_cannot_complete() {
        let s = Store::open_in_memory().expect("store");
        s.enqueue(None, &[job("http://a.example/")], 5, 0)
            .expect("enqueue");
        let c = s
            .claim("w", 0, Duration::from_secs(60), 2)
            .expect("claim")
            .expect("job");
        s.cancel(&[c.job_id], 1).expect("cancel");
        let done = s
            .complete(
                &c,
                &Success {
                    http_status: 200,
                    ..Success::default()
                },
                &Policy::default(),
                2,
            )
            .expect("complete");
        assert!(done.is_none());
        assert_eq!(
            s.job(c.job_id).expect("job").expect("row").status,
            Status::Cancelled
        );
    }

    /// A worker on another machine cannot be asked whether it lives (`Unknown`): its lease
    /// decides, and the heartbeat keeps the lease ahead of the clock.
    #[test]
    fn a_refreshed_lease_outlives_its_first_expiry_and_only_its_owners_jobs_are_refreshed() {
        let s = Store::open_in_memory().expect("store");
        s.enqueue(
            None,
            &[job("http://a.example/1"), job("http://b.example/2")],
            1,
            0,
        )
        .expect("enqueue");
        let lease = Duration::from_secs(60);
        let beating = s.claim("beating", 0, lease, 2).expect("claim").expect("1");
        let silent = s.claim("silent", 0, lease, 2).expect("claim").expect("2");
        assert_eq!(s.refresh("beating", 600_000).expect("refresh"), 1);
        assert_eq!(s.refresh("nobody", 600_000).expect("refresh"), 0);
        let unknown = |_: &str| Liveness::Unknown;
        let recovered = s
            .recover(&Policy::default(), 120_000, unknown)
            .expect("recover");
        let ids: Vec<i64> = recovered.iter().map(|f| f.job.id).collect();
        assert_eq!(ids, vec![silent.job_id]);
        let kept = s.job(beating.job_id).expect("job").expect("row");
        assert_eq!(kept.status, Status::Running);
        // Past the refreshed lease it comes back too.
        let later = s
            .recover(&Policy::default(), 600_001, unknown)
            .expect("recover");
        assert_eq!(later.len(), 1);
        assert_eq!(later[0].job.id, beating.job_id);
    }

    #[test]
    fn recovery_requeues_orphans_and_counts_the_attempt() {
        let s = Store::open_in_memory().expect("store");
        s.enqueue(
            None,
            &[job("http://a.example/1"), job("http://b.example/2")],
            1,
            0,
        )
        .expect("enqueue");
        let lease = Duration::from_secs(60);
        let dead_owner = s.claim("gone", 0, lease, 2).expect("claim").expect("1");
        let live_owner = s.claim("alive", 0, lease, 2).expect("claim").expect("2");
        let policy = Policy {
            max_retries: 1,
            ..Policy::default()
        };
        let judge = |o: &str| {
            if o == "alive" {
                Liveness::Alive
            } else {
                Liveness::Gone
            }
        };
        let recovered = s.recover(&policy, 10, judge).expect("recover");
        assert_eq!(recovered.len(), 1);
        let j = s.job(dead_owner.job_id).expect("job").expect("row");
        assert_eq!((j.status, j.attempts, j.run_at), (Status::Pending, 1, 10));
        assert_eq!(
            s.job(live_owner.job_id).expect("job").expect("row").status,
            Status::Running
        );
        let h = s.attempts(dead_owner.job_id).expect("attempts");
        assert_eq!(h[0].outcome.as_deref(), Some("interrupted"));
        // Crash again: with one retry allowed, the second interruption kills it.
        let again = s
            .claim("gone", 10, lease, 2)
            .expect("claim")
            .expect("again");
        assert_eq!(again.job_id, dead_owner.job_id);
        s.recover(&policy, 20, judge).expect("recover");
        assert_eq!(
            s.job(again.job_id).expect("job").expect("row").status,
            Status::Dead
        );
        // A live owner keeps its job past its lease (the wall clock jumped, or the laptop
        // slept); an owner that cannot be judged loses it once the lease expires.
        let kept = s.recover(&policy, 61_000, judge).expect("recover");
        assert!(kept.is_empty(), "{kept:?}");
        let rec = s
            .recover(&policy, 61_000, |_| Liveness::Unknown)
            .expect("recover");
        assert_eq!(rec.len(), 1);
        assert_eq!(rec[0].job.id, live_owner.job_id);
    }

    #[test]
    fn the_statements_run_for_every_job_build_no_temporary_b_tree() {
        // A temporary B-tree per statement (for `RETURNING` rows, or for a constant IN list
        // of more than two values, as the old status CHECK had) cost a tenth of a drain.
        let s = Store::open_in_memory().expect("store");
        let conn = s.conn().expect("conn");
        for sql in [
            CLAIM_JOB_SQL,
            COMPLETE_SQL,
            END_ATTEMPT_SQL,
            LANE_HEAD_AT,
            LANE_HEAD_AFTER,
            LANE_KEYS_AT,
            LANE_KEYS_AFTER,
            LANE_CURSOR,
            LANE_ADVANCE,
            CLAIM_LANES,
            CLAIM_HOST,
            CLAIM_BATCHES,
            SERVED_LANE_SQL,
            TO_BACK_SQL,
            "SELECT url, attempts FROM jobs WHERE id = ?1",
        ] {
            let mut explain = conn.prepare(&format!("EXPLAIN {sql}")).expect("prepare");
            // Unbound parameters are NULL; EXPLAIN only lists the program.
            let opcodes: Vec<String> = explain
                .raw_query()
                .mapped(|r| r.get::<_, String>(1))
                .collect::<rusqlite::Result<_>>()
                .expect("opcodes");
            assert!(
                !opcodes.iter().any(|op| op == "OpenEphemeral"),
                "{sql} opens a temporary B-tree"
            );
        }
        let qpsg = conn
            .db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG)
            .expect("db_config");
        assert!(
            qpsg,
            "cached statements are not re-prepared for new bound values"
        );
    }
}
