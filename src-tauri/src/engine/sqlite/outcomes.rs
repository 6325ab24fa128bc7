//! How attempts end: successes, failures with their decision, put-backs, and recovery of
//! jobs whose worker is gone.

use rusqlite::{OptionalExtension, Transaction, params};

use crate::engine::clock::Millis;
use crate::engine::policy::{self, Counters, Decision, ErrorClass, Failure, FailureKind, Policy};

use super::Store;
use super::claim::claim_many;
use super::hosts::queue_paused;
use super::rows::{JOB_COLUMNS, JOB_WIDTH, job_from_row, kind_str, load_job};
use super::search::index_in;
use super::stages::{kept_after_crash, kept_in, next_in, would_die};
use crate::engine::queue::{
    ClaimRequest, Claimed, Failed, Finish, Job, Liveness, QueueError, Result, Settled, Stage, Step,
    Success,
};

/// Record a success, if the job is still this worker's (its id, worker, attempt and URL: see
/// [`AttemptRef::url`]). The row keeps the attempt: when it
/// started, and who ran it (migration 0014). The metadata the page filled in replaces the
/// stored one but for its tags: those the job has now stay (migration 0020).
const COMPLETE_SQL: &str = "UPDATE jobs SET status = 'done', lease_owner = NULL, \
         finished_by = lease_owner, lease_until = NULL, final_url = ?3, http_status = ?4, \
         title = coalesce(?5, title), document = ?6, content_type = ?7, sha256 = ?8, error_class = NULL, \
         error = NULL, updated_at = ?9, finished_at = ?9, stage = ?11, rate_limited_since = NULL, \
         meta = CASE WHEN ?12 IS NULL THEN meta WHEN json_valid(meta) THEN \
         CASE WHEN meta -> '$.tags' IS NULL THEN json_remove(?12, '$.tags') \
         ELSE json_set(?12, '$.tags', meta -> '$.tags') END ELSE json_remove(?12, '$.tags') END \
     WHERE id = ?1 AND status = 'running' AND lease_owner = ?2 AND attempts = ?10 AND url = ?13";

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
            .and_then(|r| serde_json::to_string(r).ok()),
        claimed.url
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
             WHERE id = ?1 AND status = 'running' AND lease_owner = ?2 AND attempts = ?5 \
                 AND url = ?6",
        )?
        .execute(params![
            claimed.job_id,
            claimed.owner,
            now,
            format!("{} ({})", failure.message, why.note()),
            claimed.attempt,
            claimed.url
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
             WHERE j.id = ?1 AND j.status = 'running' AND j.lease_owner = ?2 AND j.attempts = ?3 \
                 AND j.url = ?4"
        ))?
        .query_row(
            params![claimed.job_id, claimed.owner, claimed.attempt, claimed.url],
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
    /// The job's URL, which never changes, and which no other job in the queue has: SQLite
    /// gives a job deleted as the newest one's id to the next job queued (ids are the rowid,
    /// largest + 1), so id, worker and attempt number alone took a deleted job's late result
    /// for the attempt 1 of the link queued after it.
    url: &'a str,
    number: u32,
    started_at: Millis,
    worker: Option<&'a str>,
    pub(super) stage: Option<Stage>,
}

impl<'a> From<&'a Claimed> for AttemptRef<'a> {
    fn from(c: &'a Claimed) -> Self {
        Self {
            job_id: c.job_id,
            url: &c.url,
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
        // A job cancelled and then deleted has no history to add to, and the job that took
        // its id since is another one.
        let url: Option<String> = tx
            .prepare_cached("SELECT url FROM jobs WHERE id = ?1")?
            .query_row([at.job_id], |r| r.get(0))
            .optional()?;
        if url.as_deref() != Some(at.url) {
            return Ok(());
        }
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
             blocked_failures = blocked_failures + ?13, attempt_started_at = NULL, \
             rate_limited_since = coalesce(rate_limited_since, ?14) \
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
            blocked,
            failure.rate_limited_at(now)
        ])?;
    if let Some(attempt) = attempt {
        let end = AttemptEnd {
            outcome: failure.attempt_outcome(),
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
        let host = crate::engine::queue::host_to_pause(job, failure);
        // After a rate limit the host gets one connection at a time until it has shown a run
        // of successes; a plain 503 only pauses it.
        let limit: Option<u32> = (failure.class() == ErrorClass::RateLimited).then_some(1);
        tx.prepare_cached("INSERT INTO hosts (host, paused_until, pause_reason, concurrency_limit) VALUES (?1, ?2, ?3, ?4) \
             ON CONFLICT(host) DO UPDATE SET paused_until = max(coalesce(paused_until, 0), excluded.paused_until), \
                 pause_reason = excluded.pause_reason, success_streak = 0, \
                 concurrency_limit = coalesce(excluded.concurrency_limit, concurrency_limit)")?.execute(params![host, until, failure.message, limit])?;
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
                   AND j.run_at < (SELECT paused_until FROM hosts WHERE host = ?1))")?.execute([&host])?;
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
                // Read with the write lock held: the step may have waited for it.
                claimed = claim_many(tx, request, request.now(now), &mut lane_keys)?;
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

    /// Extend the leases of those of `held` that are `owner`'s running jobs to `lease_until`
    /// (the heartbeat); how many jobs it holds.
    pub fn refresh(&self, owner: &str, held: &[i64], lease_until: Millis) -> Result<u64> {
        self.write(|tx| {
            let mut stmt = tx.prepare_cached(
                "UPDATE jobs SET lease_until = ?3 \
                 WHERE id = ?2 AND status = 'running' AND lease_owner = ?1",
            )?;
            let mut n = 0;
            for id in held {
                n += stmt.execute(params![owner, id, lease_until])? as u64;
            }
            Ok(n)
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
                        r.get::<_, Option<String>>(JOB_WIDTH)?,
                        r.get::<_, Option<Millis>>(JOB_WIDTH + 1)?,
                        r.get::<_, Millis>(JOB_WIDTH + 2)?,
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
                    url: &job.url,
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
                // A PDF that crashes the worker every time leaves the job done with its
                // landing page once its budget is spent, as a PDF out of retries does.
                if let Some(kept) = kept_after_crash(tx, &job, &attempt, &failure, policy, now)? {
                    out.push(kept);
                    continue;
                }
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

    use crate::engine::sqlite::Store;
    use crate::engine::sqlite::claim::{
        CLAIM_BATCHES, CLAIM_HOST, CLAIM_JOB_SQL, SERVED_LANE_SQL, TO_BACK_SQL,
    };
    use crate::engine::sqlite::lanes::{
        CLAIM_LANES, LANE_ADVANCE, LANE_CURSOR, LANE_HEAD_AFTER, LANE_HEAD_AT, LANE_KEYS_AFTER,
        LANE_KEYS_AT,
    };

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
