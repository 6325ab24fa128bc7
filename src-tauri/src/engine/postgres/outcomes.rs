//! How attempts end on PostgreSQL: successes, failures with their decision, stages gone on,
//! put-backs, and the attempt history. The same statements as SQLite's `outcomes.rs` and
//! `stages.rs`, in PostgreSQL's dialect.

use super::library::index_in;
use super::rows::{Conn, JOB_COLUMNS, job_from_row, load_job, status_of};
use crate::engine::clock::Millis;
use crate::engine::policy::{self, Counters, Decision, ErrorClass, Failure, FailureKind, Policy};
use crate::engine::queue::{Claimed, Failed, Job, Next, Result, Stage, Success};
use crate::engine::sqlite::RECOVERY_STREAK;

/// The stored metadata replaced by `$new` (JSON text, or null to keep it), keeping the tags
/// the job has now: tags change only by hand and at intake.
macro_rules! meta_keeping_tags {
    ($new:literal) => {
        concat!(
            "CASE WHEN ",
            $new,
            "::text IS NULL THEN meta WHEN meta ? 'tags' THEN (",
            $new,
            "::text::jsonb - 'tags') || jsonb_build_object('tags', meta -> 'tags') ELSE ",
            $new,
            "::text::jsonb - 'tags' END"
        )
    };
}

pub(super) const COMPLETE_SQL: &str = concat!(
    "UPDATE jobs SET status = 'done', lease_owner = NULL, finished_by = lease_owner, \
         lease_until = NULL, final_url = $3, http_status = $4, title = coalesce($5, title), \
         document = $6, content_type = $7, sha256 = $8, error_class = NULL, error = NULL, \
         updated_at = $9, finished_at = $9, stage = $11, rate_limited_since = NULL, meta = ",
    meta_keeping_tags!("$12"),
    " WHERE id = $1 AND status = 'running' AND lease_owner = $2 AND attempts = $10"
);

const NEXT_STAGE_SQL: &str = concat!(
    "UPDATE jobs SET status = 'pending', run_at = $3, stage = $4, target = $5, \
         origin_host = coalesce(origin_host, host), host = $6, meta = ",
    meta_keeping_tags!("$7"),
    ", title = coalesce($8, title), document = coalesce($9, document), \
         final_url = coalesce($10, final_url), content_type = coalesce($11, content_type), \
         sha256 = coalesce($12, sha256), error_class = NULL, error = $13, http_status = $14, \
         lease_owner = NULL, lease_until = NULL, updated_at = $3, attempt_started_at = NULL, \
         rate_limited_since = NULL \
     WHERE id = $1 AND status = 'running' AND lease_owner = $2 AND attempts = $15"
);

const KEPT_SQL: &str = "UPDATE jobs SET status = 'done', lease_owner = NULL, \
         finished_by = lease_owner, lease_until = NULL, error_class = NULL, error = NULL, \
         updated_at = $3, finished_at = $3, attempt_started_at = NULL, stage = 'landing' \
     WHERE id = $1 AND status = 'running' AND lease_owner = $2 AND attempts = $4";

fn status_i32(s: Option<u16>) -> Option<i32> {
    s.map(i32::from)
}

fn meta_json(r: Option<&crate::engine::queue::Reference>) -> Option<String> {
    // Plain strings and lists: encoding cannot fail.
    r.and_then(|r| serde_json::to_string(r).ok())
}

/// Record a success if the job is still this worker's; whether it was.
pub(super) async fn complete_in(
    tx: &impl Conn,
    claimed: &Claimed,
    success: &Success,
    policy: &Policy,
    now: Millis,
) -> Result<bool> {
    let attempt = claimed.attempt as i32;
    let changed = tx
        .exec(
            COMPLETE_SQL,
            &[
                &claimed.job_id,
                &claimed.owner,
                &success.final_url,
                &i32::from(success.http_status),
                &success.title,
                &success.document,
                &success.content_type,
                &success.sha256,
                &now,
                &attempt,
                &claimed.stage.map(Stage::as_str),
                &meta_json(success.reference.as_deref()),
            ],
        )
        .await?;
    let done = changed == 1;
    if done && let Some(doc) = &success.index {
        index_in(tx, claimed.job_id, doc).await?;
    }
    if !done {
        success_discarded(tx, claimed, success, now).await?;
    }
    if done && claimed.throttled {
        record_host_success(tx, &claimed.host, policy.per_host).await?;
    }
    Ok(done)
}

/// The attempt of a success that came too late (its job cancelled, or taken back and given to
/// another attempt) is recorded as such.
async fn success_discarded(
    tx: &impl Conn,
    claimed: &Claimed,
    success: &Success,
    now: Millis,
) -> Result<()> {
    let end = AttemptEnd {
        outcome: "success_discarded",
        http_status: Some(success.http_status),
        ..AttemptEnd::default()
    };
    end_attempt(tx, &AttemptRef::from(claimed), now, &end, true).await
}

/// [`COMPLETE_SQL`] for several jobs in one statement, each row of `s` one job's values.
pub(super) const COMPLETE_ALL_SQL: &str = concat!(
    "UPDATE jobs j SET status = 'done', lease_owner = NULL, finished_by = j.lease_owner, \
         lease_until = NULL, final_url = s.s_final_url, http_status = s.s_http_status, \
         title = coalesce(s.s_title, j.title), document = s.s_document, \
         content_type = s.s_content_type, sha256 = s.s_sha256, error_class = NULL, error = NULL, \
         updated_at = $1, finished_at = $1, stage = s.s_stage, rate_limited_since = NULL, meta = ",
    meta_keeping_tags!("s.s_meta"),
    " FROM unnest($2::bigint[], $3::text[], $4::int[], $5::text[], $6::text[], $7::int[], \
         $8::text[], $9::text[], $10::text[], $11::text[], $12::text[]) \
         AS s(s_id, s_owner, s_attempts, s_final_url, s_title, s_http_status, s_document, \
              s_content_type, s_sha256, s_stage, s_meta) \
     WHERE j.id = s.s_id AND j.status = 'running' AND j.lease_owner = s.s_owner \
       AND j.attempts = s.s_attempts \
     RETURNING j.id"
);

/// Record successes that need nothing but their row written (not throttled, nothing to
/// index): one statement for all, where [`complete_in`] is one a job, so that a step's
/// executor start-ups and answers do not grow with its jobs. Whether each job was still this
/// worker's, in order.
pub(super) async fn complete_all_in(
    tx: &impl Conn,
    done: &[(&Claimed, &Success)],
    now: Millis,
) -> Result<Vec<bool>> {
    let column = |f: fn(&Claimed, &Success) -> Option<String>| -> Vec<Option<String>> {
        done.iter().map(|(c, s)| f(c, s)).collect()
    };
    let ids: Vec<i64> = done.iter().map(|(c, _)| c.job_id).collect();
    let attempts: Vec<i32> = done.iter().map(|(c, _)| c.attempt as i32).collect();
    let statuses: Vec<i32> = done.iter().map(|(_, s)| i32::from(s.http_status)).collect();
    let rows = tx
        .query_rows(
            COMPLETE_ALL_SQL,
            &[
                &now,
                &ids,
                &column(|c, _| Some(c.owner.clone())),
                &attempts,
                &column(|_, s| Some(s.final_url.clone())),
                &column(|_, s| s.title.clone()),
                &statuses,
                &column(|_, s| s.document.clone()),
                &column(|_, s| s.content_type.clone()),
                &column(|_, s| s.sha256.clone()),
                &column(|c, _| c.stage.map(|st| st.as_str().to_string())),
                &column(|_, s| meta_json(s.reference.as_deref())),
            ],
        )
        .await?;
    let written: std::collections::HashSet<i64> = rows.iter().map(|r| r.get(0)).collect();
    let mut out = Vec::with_capacity(done.len());
    for (claimed, success) in done {
        let held = written.contains(&claimed.job_id);
        if !held {
            success_discarded(tx, claimed, success, now).await?;
        }
        out.push(held);
    }
    Ok(out)
}

/// Why an attempt's job goes back to pending with its budget untouched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum PutBack {
    Offline,
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

pub(super) async fn put_back_in(
    tx: &impl Conn,
    claimed: &Claimed,
    failure: &Failure,
    now: Millis,
    why: PutBack,
) -> Result<Option<Job>> {
    let changed = tx
        .exec(
            "UPDATE jobs SET status = 'pending', run_at = $3, error_class = 'transient', error = $4, \
                 http_status = NULL, lease_owner = NULL, lease_until = NULL, updated_at = $3, \
                 attempt_started_at = NULL \
             WHERE id = $1 AND status = 'running' AND lease_owner = $2 AND attempts = $5",
            &[
                &claimed.job_id,
                &claimed.owner,
                &now,
                &format!("{} ({})", failure.message, why.note()),
                &(claimed.attempt as i32),
            ],
        )
        .await?;
    let end = AttemptEnd {
        outcome: why.outcome(),
        kind: Some(failure.kind),
        error: Some(&failure.message),
        delay_ms: Some(0),
        ..AttemptEnd::default()
    };
    end_attempt(tx, &AttemptRef::from(claimed), now, &end, changed == 0).await?;
    if changed == 0 {
        return Ok(None);
    }
    load_job(tx, claimed.job_id).await
}

pub(super) async fn fail_in(
    tx: &impl Conn,
    claimed: &Claimed,
    failure: &Failure,
    policy: &Policy,
    now: Millis,
    unit: f64,
) -> Result<Option<Failed>> {
    static HELD: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        format!(
            "SELECT {JOB_COLUMNS} FROM jobs j LEFT JOIN batches b ON b.id = j.batch_id \
             WHERE j.id = $1 AND j.status = 'running' AND j.lease_owner = $2 AND j.attempts = $3 \
             FOR UPDATE OF j"
        )
    });
    let held = tx
        .query_rows(
            &HELD,
            &[&claimed.job_id, &claimed.owner, &(claimed.attempt as i32)],
        )
        .await?
        .first()
        .map(job_from_row);
    let Some(job) = held else {
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
        end_attempt(tx, &AttemptRef::from(claimed), now, &end, true).await?;
        return Ok(None);
    };
    let attempt = AttemptRef::from(claimed);
    Ok(Some(
        apply_failure(tx, &job, Some(&attempt), failure, policy, now, unit).await?,
    ))
}

/// A stage done: on to the next one, due now, in the next request's host's lane.
pub(super) async fn next_in(
    tx: &impl Conn,
    claimed: &Claimed,
    next: &Next,
    now: Millis,
) -> Result<bool> {
    let saved = next.saved.as_ref();
    let failure = next.failure.as_ref();
    super::hosts::ensure_host(tx, &next.host).await?;
    let changed = tx
        .exec(
            NEXT_STAGE_SQL,
            &[
                &claimed.job_id,
                &claimed.owner,
                &now,
                &next.stage.as_str(),
                &next.target,
                &next.host,
                &meta_json(next.reference.as_deref()),
                &saved.and_then(|s| s.title.as_deref()),
                &saved.and_then(|s| s.document.as_deref()),
                &saved.map(|s| s.final_url.as_str()),
                &saved.and_then(|s| s.content_type.as_deref()),
                &saved.and_then(|s| s.sha256.as_deref()),
                &failure.map(|f| f.message.as_str()),
                &status_i32(next.http_status),
                &(claimed.attempt as i32),
            ],
        )
        .await?;
    let end = AttemptEnd {
        outcome: failure.map_or("success", |f| f.class().as_str()),
        kind: failure.map(|f| f.kind),
        http_status: next.http_status,
        error: failure.map(|f| f.message.as_str()),
        delay_ms: Some(0),
    };
    end_attempt(tx, &AttemptRef::from(claimed), now, &end, changed == 0).await?;
    if changed == 1
        && let Some(doc) = saved.and_then(|s| s.index.as_deref())
    {
        index_in(tx, claimed.job_id, doc).await?;
    }
    Ok(changed == 1)
}

/// Done with what an earlier stage saved, the attempt recorded as the failure it was.
pub(super) async fn kept_in(
    tx: &impl Conn,
    claimed: &Claimed,
    failure: &Failure,
    now: Millis,
) -> Result<bool> {
    let changed = tx
        .exec(
            KEPT_SQL,
            &[
                &claimed.job_id,
                &claimed.owner,
                &now,
                &(claimed.attempt as i32),
            ],
        )
        .await?;
    let error = format!("{}; the landing page is kept", failure.message);
    let end = AttemptEnd {
        outcome: failure.class().as_str(),
        kind: Some(failure.kind),
        http_status: failure.http_status,
        error: Some(&error),
        delay_ms: None,
    };
    end_attempt(tx, &AttemptRef::from(claimed), now, &end, changed == 0).await?;
    Ok(changed == 1)
}

/// Whether this failure would end the job dead under the budget in force.
pub(super) async fn would_die(
    tx: &impl Conn,
    claimed: &Claimed,
    failure: &Failure,
    policy: &Policy,
    now: Millis,
    unit: f64,
) -> Result<bool> {
    let Some(job) = load_job(tx, claimed.job_id).await? else {
        return Ok(false);
    };
    Ok(death(&job, failure, policy, now, unit).is_some())
}

/// The death this failure would bring the job under the budget in force, if it would.
fn death(
    job: &Job,
    failure: &Failure,
    policy: &Policy,
    now: Millis,
    unit: f64,
) -> Option<Decision> {
    let counters = Counters {
        max_retries: policy.max_retries,
        ..job.counters
    };
    let decision = policy::decide(policy, &counters, failure, now, unit);
    matches!(decision, Decision::Dead { .. }).then_some(decision)
}

/// Crash recovery of a job at its PDF stage whose interrupted attempt would use up its
/// budget: done with its landing page, as SQLite's `stages::kept_after_crash`. `None` when the
/// job is not such a job, for the usual recovery. The caller holds the row, running.
pub(super) async fn kept_after_crash(
    tx: &impl Conn,
    job: &Job,
    attempt: &AttemptRef<'_>,
    failure: &Failure,
    policy: &Policy,
    now: Millis,
) -> Result<Option<Failed>> {
    if attempt.stage != Some(Stage::Pdf) {
        return Ok(None);
    }
    let Some(decision) = death(job, failure, policy, now, 0.0) else {
        return Ok(None);
    };
    tx.exec(
        "UPDATE jobs SET status = 'done', lease_owner = NULL, finished_by = lease_owner, \
             lease_until = NULL, error_class = NULL, error = NULL, updated_at = $2, \
             finished_at = $2, attempt_started_at = NULL, stage = 'landing' \
         WHERE id = $1 AND status = 'running'",
        &[&job.id, &now],
    )
    .await?;
    let error = format!("{}; the landing page is kept", failure.message);
    let end = AttemptEnd {
        outcome: failure.attempt_outcome(),
        kind: Some(failure.kind),
        http_status: failure.http_status,
        error: Some(&error),
        delay_ms: None,
    };
    end_attempt(tx, attempt, now, &end, false).await?;
    let Some(job) = load_job(tx, job.id).await? else {
        return Ok(None);
    };
    Ok(Some(Failed {
        job,
        failure: failure.clone(),
        decision,
        at: now,
    }))
}

/// Successes after a rate limit win back one connection per [`RECOVERY_STREAK`].
async fn record_host_success(tx: &impl Conn, host: &str, per_host: u32) -> Result<()> {
    tx.exec(
        "UPDATE hosts SET \
             concurrency_limit = CASE WHEN success_streak + 1 < $3 THEN concurrency_limit \
                 WHEN concurrency_limit + 1 >= $2 THEN NULL ELSE concurrency_limit + 1 END, \
             success_streak = CASE WHEN success_streak + 1 >= $3 THEN 0 ELSE success_streak + 1 END \
         WHERE host = $1 AND concurrency_limit IS NOT NULL",
        &[&host, &(per_host as i32), &(RECOVERY_STREAK as i32)],
    )
    .await?;
    Ok(())
}

/// An attempt that was in flight.
pub(super) struct AttemptRef<'a> {
    pub(super) job_id: i64,
    pub(super) number: u32,
    pub(super) started_at: Millis,
    pub(super) worker: Option<&'a str>,
    pub(super) stage: Option<Stage>,
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

/// How an attempt ended, for its history row.
#[derive(Default)]
pub(super) struct AttemptEnd<'a> {
    pub(super) outcome: &'a str,
    pub(super) kind: Option<FailureKind>,
    pub(super) http_status: Option<u16>,
    pub(super) error: Option<&'a str>,
    pub(super) delay_ms: Option<i64>,
}

fn kind_str(kind: FailureKind) -> String {
    serde_json::to_value(kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| format!("{kind:?}"))
}

/// Write an ended attempt's row; a `late` result replaces the row its cancel or recovery wrote.
pub(super) async fn end_attempt(
    tx: &impl Conn,
    at: &AttemptRef<'_>,
    now: Millis,
    end: &AttemptEnd<'_>,
    late: bool,
) -> Result<()> {
    let kind = end.kind.map(kind_str);
    let number = at.number as i32;
    let http = status_i32(end.http_status);
    if late {
        let replaced = tx
            .exec(
                "UPDATE attempt_log SET finished_at = $3, outcome = $4, kind = $5, \
                     http_status = $6, error = $7, delay_ms = $8 WHERE job_id = $1 AND number = $2",
                &[
                    &at.job_id,
                    &number,
                    &now,
                    &end.outcome,
                    &kind,
                    &http,
                    &end.error,
                    &end.delay_ms,
                ],
            )
            .await?;
        if replaced > 0 || status_of(tx, at.job_id).await?.is_none() {
            return Ok(());
        }
    }
    tx.exec(
        "INSERT INTO attempt_log (job_id, number, started_at, finished_at, outcome, kind, \
             http_status, error, delay_ms, worker, stage) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
        &[
            &at.job_id,
            &number,
            &at.started_at,
            &now,
            &end.outcome,
            &kind,
            &http,
            &end.error,
            &end.delay_ms,
            &at.worker,
            &at.stage.map(Stage::as_str),
        ],
    )
    .await?;
    Ok(())
}

/// The shared tail of a failed attempt: counters, decision, job row, attempt row, host pause.
pub(super) async fn apply_failure(
    tx: &impl Conn,
    job: &Job,
    attempt: Option<&AttemptRef<'_>>,
    failure: &Failure,
    policy: &Policy,
    now: Millis,
    unit: f64,
) -> Result<Failed> {
    let counters = Counters {
        max_retries: policy.max_retries,
        ..job.counters
    };
    let decision = policy::decide(policy, &counters, failure, now, unit);
    let (net, server, rate, blocked): (i32, i32, i32, i32) = match failure.kind.budget() {
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
    tx.exec(
        "UPDATE jobs SET status = $2, run_at = $3, net_failures = net_failures + $4, \
             server_failures = server_failures + $5, rate_limits = rate_limits + $6, \
             error_class = $7, error = $8, http_status = $9, lease_owner = NULL, \
             lease_until = NULL, updated_at = $10, finished_at = $11, max_retries = $12, \
             blocked_failures = blocked_failures + $13, attempt_started_at = NULL, \
             rate_limited_since = coalesce(rate_limited_since, $14) \
         WHERE id = $1",
        &[
            &job.id,
            &status,
            &run_at,
            &net,
            &server,
            &rate,
            &failure.class().as_str(),
            &error,
            &status_i32(failure.http_status),
            &now,
            &finished_at,
            &(policy.max_retries as i32),
            &blocked,
            &failure.rate_limited_at(now),
        ],
    )
    .await?;
    if let Some(attempt) = attempt {
        let end = AttemptEnd {
            outcome: failure.attempt_outcome(),
            kind: Some(failure.kind),
            http_status: failure.http_status,
            error: Some(&failure.message),
            delay_ms,
        };
        end_attempt(tx, attempt, now, &end, false).await?;
    }
    if let Decision::Retry {
        pause_host: Some(pause),
        ..
    } = &decision
    {
        let until = now + pause.as_millis() as Millis;
        let host = crate::engine::queue::host_to_pause(job, failure);
        let limit: Option<i32> = (failure.class() == ErrorClass::RateLimited).then_some(1);
        tx.exec(
            "INSERT INTO hosts (host, paused_until, pause_reason, concurrency_limit) \
             VALUES ($1, $2, $3, $4) \
             ON CONFLICT (host) DO UPDATE SET \
                 paused_until = greatest(coalesce(hosts.paused_until, 0), excluded.paused_until), \
                 pause_reason = excluded.pause_reason, success_streak = 0, \
                 concurrency_limit = coalesce(excluded.concurrency_limit, hosts.concurrency_limit)",
            &[&host, &until, &failure.message, &limit],
        )
        .await?;
        // The host's waiting jobs say when they can really start, so the claim never walks a
        // paused host's backlog and the window shows when they will run.
        tx.exec(
            "UPDATE jobs SET run_at = h.paused_until FROM hosts h \
             WHERE h.host = $1 AND jobs.host = $1 AND jobs.status = 'pending' \
               AND jobs.run_at < h.paused_until",
            &[&host],
        )
        .await?;
    }
    let job = load_job(tx, job.id).await?.ok_or_else(|| {
        crate::engine::queue::QueueError::Connect(
            "a failed job vanished inside its own transaction".into(),
        )
    })?;
    Ok(Failed {
        job,
        failure: failure.clone(),
        decision,
        at: now,
    })
}
