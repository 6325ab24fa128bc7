//! How a reference's resolution stages end (DESIGN.md, "References in, papers out"): on to
//! the next stage in the next host's lane, or done with what an earlier stage saved.

use rusqlite::{Transaction, params};

use crate::engine::clock::Millis;
use crate::engine::policy::{self, Counters, Decision, Failure, Policy};

use super::outcomes::{AttemptEnd, AttemptRef, end_attempt};
use super::rows::load_job;
use super::search::index_in;
use crate::engine::queue::{Claimed, Failed, Job, Next, Result, Stage};

/// A stage done: the job goes on to the next one, due now, in the lane of the next request's
/// host. Setting `run_at` and `host` fires the lane trigger (migration 0012). The stage's
/// metadata keeps the tags the job has now (migration 0020).
const NEXT_STAGE_SQL: &str = "UPDATE jobs SET status = 'pending', run_at = ?3, stage = ?4, \
         target = ?5, origin_host = coalesce(origin_host, host), host = ?6, \
         meta = CASE WHEN ?7 IS NULL THEN meta WHEN json_valid(meta) THEN \
         CASE WHEN meta -> '$.tags' IS NULL THEN json_remove(?7, '$.tags') \
         ELSE json_set(?7, '$.tags', meta -> '$.tags') END ELSE json_remove(?7, '$.tags') END, \
         title = coalesce(?8, title), document = coalesce(?9, document), \
         final_url = coalesce(?10, final_url), content_type = coalesce(?11, content_type), \
         sha256 = coalesce(?12, sha256), error_class = ?13, error = ?14, http_status = ?15, \
         lease_owner = NULL, lease_until = NULL, updated_at = ?3, attempt_started_at = NULL, \
         rate_limited_since = NULL \
     WHERE id = ?1 AND status = 'running' AND lease_owner = ?2 AND attempts = ?16 AND url = ?17";

/// Done with what an earlier stage saved: the attempt is in `attempt_log` as the failure it
/// was, so the row does not repeat it as a success, and the job's stage is the landing page
/// its document is.
const KEPT_SQL: &str = "UPDATE jobs SET status = 'done', lease_owner = NULL, \
         finished_by = lease_owner, lease_until = NULL, error_class = NULL, error = NULL, \
         updated_at = ?3, finished_at = ?3, attempt_started_at = NULL, stage = 'landing' \
     WHERE id = ?1 AND status = 'running' AND lease_owner = ?2 AND attempts = ?4 AND url = ?5";

/// Move a job on to its next stage, if it is still this worker's; whether it was.
pub(super) fn next_in(
    tx: &Transaction<'_>,
    claimed: &Claimed,
    next: &Next,
    now: Millis,
) -> Result<bool> {
    // Plain strings and lists: encoding cannot fail.
    let meta = next
        .reference
        .as_ref()
        .and_then(|r| serde_json::to_string(r).ok());
    let saved = next.saved.as_ref();
    let failure = next.failure.as_ref();
    let changed = tx.prepare_cached(NEXT_STAGE_SQL)?.execute(params![
        claimed.job_id,
        claimed.owner,
        now,
        next.stage.as_str(),
        next.target,
        next.host,
        meta,
        saved.and_then(|s| s.title.as_deref()),
        saved.and_then(|s| s.document.as_deref()),
        saved.map(|s| s.final_url.as_str()),
        saved.and_then(|s| s.content_type.as_deref()),
        saved.and_then(|s| s.sha256.as_deref()),
        // A job gone on is not failing: its note says why, but it has no error class.
        None::<&str>,
        failure.map(|f| f.message.as_str()),
        next.http_status,
        claimed.attempt,
        claimed.url
    ])?;
    let outcome = failure.map_or("success", |f| f.class().as_str());
    let end = AttemptEnd {
        outcome,
        kind: failure.map(|f| f.kind),
        http_status: next.http_status,
        error: failure.map(|f| f.message.as_str()),
        delay_ms: Some(0),
    };
    end_attempt(tx, &AttemptRef::from(claimed), now, &end, changed == 0)?;
    // A landing page is searchable while its PDF waits: the job has a document.
    if changed == 1
        && let Some(doc) = saved.and_then(|s| s.index.as_deref())
    {
        index_in(tx, claimed.job_id, doc)?;
    }
    Ok(changed == 1)
}

/// End a job `done` with the document an earlier stage saved, the attempt recorded as the
/// failure it was; whether the job was still this worker's.
pub(super) fn kept_in(
    tx: &Transaction<'_>,
    claimed: &Claimed,
    failure: &Failure,
    now: Millis,
) -> Result<bool> {
    let changed = tx.prepare_cached(KEPT_SQL)?.execute(params![
        claimed.job_id,
        claimed.owner,
        now,
        claimed.attempt,
        claimed.url
    ])?;
    let error = format!("{}; the landing page is kept", failure.message);
    let end = AttemptEnd {
        outcome: failure.class().as_str(),
        kind: Some(failure.kind),
        http_status: failure.http_status,
        error: Some(&error),
        delay_ms: None,
    };
    end_attempt(tx, &AttemptRef::from(claimed), now, &end, changed == 0)?;
    Ok(changed == 1)
}

/// Whether this failure would end the job dead: its decision under the budget in force.
pub(super) fn would_die(
    tx: &Transaction<'_>,
    claimed: &Claimed,
    failure: &Failure,
    policy: &Policy,
    now: Millis,
    unit: f64,
) -> Result<bool> {
    let Some(job) = load_job(tx, claimed.job_id)?.filter(|j| j.url == claimed.url) else {
        return Ok(false);
    };
    Ok(decide(&job, failure, policy, now, unit).is_some())
}

/// The death this failure would bring the job under the budget in force, if it would.
fn decide(
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
/// budget (a PDF that kills the worker on every try): like a PDF out of retries in
/// [`Store::step`](super::Store::step), the job ends done with its landing page, the attempt
/// recorded as interrupted. `None` when the job is not such a job, for the usual recovery.
pub(super) fn kept_after_crash(
    tx: &Transaction<'_>,
    job: &Job,
    attempt: &AttemptRef<'_>,
    failure: &Failure,
    policy: &Policy,
    now: Millis,
) -> Result<Option<Failed>> {
    if attempt.stage != Some(Stage::Pdf) {
        return Ok(None);
    }
    let Some(decision) = decide(job, failure, policy, now, 0.0) else {
        return Ok(None);
    };
    // Recovery read the row as running in this transaction.
    tx.prepare_cached(
        "UPDATE jobs SET status = 'done', lease_owner = NULL, finished_by = lease_owner, \
             lease_until = NULL, error_class = NULL, error = NULL, updated_at = ?2, \
             finished_at = ?2, attempt_started_at = NULL, stage = 'landing' \
         WHERE id = ?1 AND status = 'running'",
    )?
    .execute(params![job.id, now])?;
    let error = format!("{}; the landing page is kept", failure.message);
    let end = AttemptEnd {
        outcome: failure.attempt_outcome(),
        kind: Some(failure.kind),
        http_status: failure.http_status,
        error: Some(&error),
        delay_ms: None,
    };
    end_attempt(tx, attempt, now, &end, false)?;
    let job = load_job(tx, job.id)?.ok_or(rusqlite::Error::QueryReturnedNoRows)?;
    Ok(Some(Failed {
        job,
        failure: failure.clone(),
        decision,
        at: now,
    }))
}

#[cfg(test)]
mod tests {}
