//! A reference's resolution stages.
//!
//! Each test runs on every backend (see [`super`]).

#![allow(unused_imports)]

use std::time::Duration;

use crate::engine::clock::Millis;
use crate::engine::policy::{Decision, Failure, FailureKind, HostIntervals, NO_INTERVALS, Policy};
use crate::engine::queue::{
    ActionResult, ClaimRequest, Claimed, Enqueued, Finish, Hit, Indexed, LibraryQuery, Liveness,
    NewJob, Next, Queue, Reference, Settled, Stage, StallKind, StallState, Status, Success,
};
use crate::engine::sqlite::testing::job;

fn settle(s: &dyn Queue, c: &Claimed, finish: Finish, policy: &Policy, now: Millis) -> Settled {
    let step = s
        .step(&mut vec![(c.clone(), finish)], policy, now, None)
        .expect("step");
    step.settled.into_iter().next().expect("settled").2
}

super::on_every_backend! {
    /// A reference's stages move it from lane to lane: each stage is an attempt in its
    /// history, the next host's pause holds it, and a PDF that cannot be had leaves it done
    /// with its landing page. Fetched again, it starts over at its first host.
    fn a_reference_goes_from_stage_to_stage_through_each_hosts_lane(s) {
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
            settle(s, &c, Finish::Next(Box::new(csl)), &policy, 2),
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
            settle(s, &c, Finish::Next(Box::new(landing)), &policy, 4),
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
            settle(s, &c, Finish::Kept(paywall), &policy, 9),
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
    fn a_pdf_out_of_retries_leaves_the_job_done_with_its_landing_page(s) {
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
        settle(s, &c, Finish::Next(Box::new(page)), &policy, 2);
        let c = s.claim("w", 3, lease, 2).expect("claim").expect("job");
        let busy = Finish::Failure {
            failure: Failure {
                http_status: Some(503),
                ..Failure::new(FailureKind::ServerError, "503 Service Unavailable")
            },
            unit: 0.0,
        };
        assert!(matches!(settle(s, &c, busy, &policy, 4), Settled::Done));
        let row = s.job(c.job_id).expect("job").expect("row");
        assert_eq!(row.status, Status::Done);
        assert_eq!(
            row.document.as_deref(),
            Some("/lib/publisher.example/paper.md")
        );
    }

    /// A PDF that kills the worker on every try (out of memory) is a PDF out of retries too:
    /// crash recovery leaves the job done with its landing page, as the worker's own step
    /// does, instead of dead with a document that is saved and indexed.
    fn a_pdf_that_crashes_the_worker_every_time_leaves_the_job_done_with_its_landing_page(s) {
        s.enqueue(None, &[job("https://publisher.example/paper")], 1, 0)
            .expect("enqueue");
        let lease = Duration::from_secs(60);
        let policy = Policy {
            max_retries: 1,
            jitter: 0.0,
            ..Policy::default()
        };
        let c = s.claim("w", 1, lease, 2).expect("claim").expect("job");
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
        settle(s, &c, Finish::Next(Box::new(page)), &policy, 2);
        // The first crash spends the one retry; the job waits for it.
        let c = s.claim("w", 3, lease, 2).expect("claim").expect("job");
        assert_eq!(c.stage, Some(Stage::Pdf));
        let recovered = s.recover(&policy, 4, &|_| Liveness::Gone).expect("recover");
        assert_eq!(recovered.len(), 1);
        assert_eq!(recovered[0].job.status, Status::Pending);
        // The second would use up the budget: the landing page is the document.
        let c = s
            .claim("w", 1_000_000, lease, 2)
            .expect("claim")
            .expect("job");
        assert_eq!(c.stage, Some(Stage::Pdf));
        let recovered = s
            .recover(&policy, 1_000_001, &|_| Liveness::Gone)
            .expect("recover");
        assert_eq!(recovered.len(), 1, "reported like any recovered job");
        assert_eq!(recovered[0].job.status, Status::Done);
        let row = s.job(c.job_id).expect("job").expect("row");
        assert_eq!(row.status, Status::Done);
        assert_eq!(row.stage, Some(Stage::Landing));
        assert_eq!(
            row.document.as_deref(),
            Some("/lib/publisher.example/paper.md")
        );
        assert_eq!((row.error_class, row.error), (None, None));
        let history = s.attempts(c.job_id).expect("history");
        let seen: Vec<_> = history
            .iter()
            .map(|a| (a.stage, a.outcome.as_deref()))
            .collect();
        assert_eq!(
            seen,
            [
                (None, Some("success")),
                (Some(Stage::Pdf), Some("interrupted")),
                (Some(Stage::Pdf), Some("interrupted")),
            ]
        );
    }
}
