//! How a reference's resolution stages end (DESIGN.md, "References in, papers out"): on to
//! the next stage in the next host's lane, or done with what an earlier stage saved.

use rusqlite::{Transaction, params};

use crate::engine::clock::Millis;
use crate::engine::policy::{self, Counters, Decision, Failure, Policy};

use super::outcomes::{AttemptEnd, AttemptRef, end_attempt};
use super::rows::load_job;
use super::search::index_in;
use crate::engine::queue::{Claimed, Next, Result};

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
         lease_owner = NULL, lease_until = NULL, updated_at = ?3, attempt_started_at = NULL \
     WHERE id = ?1 AND status = 'running' AND lease_owner = ?2 AND attempts = ?16";

/// Done with what an earlier stage saved: the attempt is in `attempt_log` as the failure it
/// was, so the row does not repeat it as a success, and the job's stage is the landing page
/// its document is.
const KEPT_SQL: &str = "UPDATE jobs SET status = 'done', lease_owner = NULL, \
         finished_by = lease_owner, lease_until = NULL, error_class = NULL, error = NULL, \
         updated_at = ?3, finished_at = ?3, attempt_started_at = NULL, stage = 'landing' \
     WHERE id = ?1 AND status = 'running' AND lease_owner = ?2 AND attempts = ?4";

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
        claimed.attempt
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
        claimed.attempt
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
    let Some(job) = load_job(tx, claimed.job_id)? else {
        return Ok(false);
    };
    let counters = Counters {
        max_retries: policy.max_retries,
        ..job.counters
    };
    Ok(matches!(
        policy::decide(policy, &counters, failure, now, unit),
        Decision::Dead { .. }
    ))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::engine::policy::FailureKind;
    use crate::engine::queue::{
        Finish, NewJob, Queue as _, Reference, Settled, Stage, Status, Success,
    };
    use crate::engine::sqlite::Store;
    use crate::engine::sqlite::testing::job;

    fn settle(s: &Store, c: &Claimed, finish: Finish, policy: &Policy, now: Millis) -> Settled {
        let step = s
            .step(&mut vec![(c.clone(), finish)], policy, now, None)
            .expect("step");
        step.settled.into_iter().next().expect("settled").2
    }

    /// A reference's stages move it from lane to lane: each stage is an attempt in its
    /// history, the next host's pause holds it, and a PDF that cannot be had leaves it done
    /// with its landing page. Fetched again, it starts over at its first host.
    #[test]
    fn a_reference_goes_from_stage_to_stage_through_each_hosts_lane() {
        let s = Store::open_in_memory().expect("store");
        let doi = NewJob {
            host: "doi.org".into(),
            ..job("doi:10.1038/nature12373")
        };
        s.enqueue(None, &[doi], 5, 0).expect("enqueue");
        let lease = Duration::from_secs(60);
        let policy = Policy::default();
        let c = s.claim("w", 1, lease, 2).expect("claim").expect("job");
        assert_eq!(
            c.stage,
            Some(Stage::Csl),
            "a DOI asks for its metadata first"
        );
        let csl = Next {
            stage: Stage::Landing,
            target: "https://doi.org/10.1038/nature12373".into(),
            host: "doi.org".into(),
            http_status: Some(200),
            failure: None,
            reference: Some(Box::new(Reference {
                authors: vec!["Kucsko, G.".into()],
                ..Reference::default()
            })),
            saved: None,
        };
        assert!(matches!(
            settle(&s, &c, Finish::Next(Box::new(csl)), &policy, 2),
            Settled::Done
        ));
        let row = s.job(c.job_id).expect("job").expect("row");
        assert_eq!(row.status, Status::Pending);
        assert_eq!(row.stage, Some(Stage::Landing));
        assert_eq!(
            row.retry_after, None,
            "on to its next stage, not waiting out a failure"
        );
        assert_eq!(
            row.reference.map(|r| r.authors),
            Some(vec!["Kucsko, G.".to_string()])
        );

        let c = s.claim("w", 3, lease, 2).expect("claim").expect("job");
        assert_eq!(c.stage, Some(Stage::Landing));
        assert_eq!(
            c.target.as_deref(),
            Some("https://doi.org/10.1038/nature12373")
        );
        let landing = Next {
            stage: Stage::Pdf,
            target: "https://publisher.example/paper.pdf".into(),
            host: "publisher.example".into(),
            http_status: Some(200),
            failure: None,
            reference: None,
            saved: Some(Success {
                http_status: 200,
                final_url: "https://publisher.example/paper".into(),
                title: Some("Nanometre-scale thermometry".into()),
                document: Some("/lib/publisher.example/paper.md".into()),
                ..Success::default()
            }),
        };
        assert!(matches!(
            settle(&s, &c, Finish::Next(Box::new(landing)), &policy, 4),
            Settled::Done
        ));
        let row = s.job(c.job_id).expect("job").expect("row");
        assert_eq!(row.host, "publisher.example");
        assert_eq!(
            row.document.as_deref(),
            Some("/lib/publisher.example/paper.md")
        );
        assert_eq!(
            row.reference.map(|r| r.authors.len()),
            Some(1),
            "metadata kept"
        );

        s.pause_host("publisher.example", 5).expect("pause");
        assert!(
            s.claim("w", 6, lease, 2).expect("claim").is_none(),
            "the PDF's host is paused"
        );
        s.resume_host("publisher.example", 7).expect("resume");
        let c = s.claim("w", 8, lease, 2).expect("claim").expect("job");
        assert_eq!(
            (c.stage, c.host.as_str()),
            (Some(Stage::Pdf), "publisher.example")
        );
        let paywall = Failure {
            http_status: Some(403),
            ..Failure::new(FailureKind::ClientError, "403 Forbidden")
        };
        assert!(matches!(
            settle(&s, &c, Finish::Kept(paywall), &policy, 9),
            Settled::Done
        ));
        let row = s.job(c.job_id).expect("job").expect("row");
        assert_eq!(row.status, Status::Done);
        assert_eq!(
            row.stage,
            Some(Stage::Landing),
            "its document is the landing page"
        );
        assert_eq!(
            row.document.as_deref(),
            Some("/lib/publisher.example/paper.md")
        );
        assert_eq!(
            row.final_url.as_deref(),
            Some("https://publisher.example/paper")
        );
        let history = s.attempts(c.job_id).expect("history");
        let seen: Vec<_> = history
            .iter()
            .map(|a| (a.stage, a.outcome.as_deref(), a.http_status))
            .collect();
        assert_eq!(
            seen,
            [
                (Some(Stage::Csl), Some("success"), Some(200)),
                (Some(Stage::Landing), Some("success"), Some(200)),
                (Some(Stage::Pdf), Some("fatal"), Some(403)),
            ]
        );

        s.retry(&[c.job_id], 5, 10).expect("retry");
        let c = s.claim("w", 11, lease, 2).expect("claim").expect("job");
        assert_eq!(
            (c.stage, c.host.as_str(), c.target),
            (Some(Stage::Csl), "doi.org", None)
        );
    }

    /// A PDF whose retry budget is spent does not kill a job that has its landing page.
    #[test]
    fn a_pdf_out_of_retries_leaves_the_job_done_with_its_landing_page() {
        let s = Store::open_in_memory().expect("store");
        s.enqueue(None, &[job("https://publisher.example/paper")], 0, 0)
            .expect("enqueue");
        let lease = Duration::from_secs(60);
        let policy = Policy {
            max_retries: 0,
            ..Policy::default()
        };
        let c = s.claim("w", 1, lease, 2).expect("claim").expect("job");
        assert_eq!(c.stage, None, "a plain link is a page");
        let page = Next {
            stage: Stage::Pdf,
            target: "https://cdn.example/paper.pdf".into(),
            host: "cdn.example".into(),
            http_status: Some(200),
            failure: None,
            reference: None,
            saved: Some(Success {
                document: Some("/lib/publisher.example/paper.md".into()),
                ..Success::default()
            }),
        };
        settle(&s, &c, Finish::Next(Box::new(page)), &policy, 2);
        let c = s.claim("w", 3, lease, 2).expect("claim").expect("job");
        let busy = Finish::Failure {
            failure: Failure {
                http_status: Some(503),
                ..Failure::new(FailureKind::ServerError, "503 Service Unavailable")
            },
            unit: 0.0,
        };
        assert!(matches!(settle(&s, &c, busy, &policy, 4), Settled::Done));
        let row = s.job(c.job_id).expect("job").expect("row");
        assert_eq!(row.status, Status::Done);
        assert_eq!(
            row.document.as_deref(),
            Some("/lib/publisher.example/paper.md")
        );
    }
}
