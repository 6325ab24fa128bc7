//! How attempts end: backoff and death with their history, rate limits, group commits, leases and recovery.
//!
//! Each test runs on every backend (see [`super`]).

#![allow(unused_imports)]

use std::time::Duration;

use crate::engine::clock::Millis;
use crate::engine::policy::{Decision, Failure, FailureKind, HostIntervals, NO_INTERVALS, Policy};
use crate::engine::queue::{
    ActionResult, ClaimRequest, Claimed, Enqueued, Finish, Held, Hit, Indexed, LibraryQuery,
    Liveness, NewJob, Next, Queue, Reference, Settled, Stage, StallKind, StallState, Status,
    Success,
};
use crate::engine::sqlite::RECOVERY_STREAK;
use crate::engine::sqlite::testing::job;

super::on_every_backend! {
    fn a_cancelled_attempt_is_closed_and_a_late_result_replaces_it(s) {
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

    fn a_late_result_of_a_deleted_job_never_lands_on_the_job_queued_after_it(s) {
        // SQLite gives a new row the largest id + 1, so deleting the newest job frees its id
        // for the next link pasted, which the same worker may then be running as its attempt 1.
        let policy = Policy {
            jitter: 0.0,
            ..Policy::default()
        };
        let lease = Duration::from_secs(60);
        s.enqueue(None, &[job("http://slow.example/big.pdf")], 5, 0)
            .expect("enqueue");
        let old = s.claim("w", 10, lease, 2).expect("claim").expect("a job");
        s.cancel(&[old.job_id], 20).expect("cancel");
        s.delete(&[old.job_id]).expect("delete");
        s.enqueue(None, &[job("http://other.example/right")], 5, 30)
            .expect("enqueue");
        let new = s.claim("w", 30, lease, 2).expect("claim").expect("a job");
        assert_eq!(new.url, "http://other.example/right");
        let success = |c: &Claimed, document: &str| Success {
            final_url: c.url.clone(),
            http_status: 200,
            title: Some(document.to_string()),
            document: Some(document.to_string()),
            content_type: None,
            sha256: None,
            reference: None,
            index: None,
        };
        // The deleted job's fetch finishes first: it is discarded, the new job keeps running.
        let step = s
            .step(
                &mut vec![(old.clone(), Finish::Success(success(&old, "big.md")))],
                &policy,
                40,
                None,
            )
            .expect("step");
        assert!(matches!(step.settled[0].2, Settled::Discarded));
        let running = s.job(new.job_id).expect("read").expect("job");
        assert_eq!(running.status, Status::Running);
        assert_eq!(running.document, None);
        // The new job's own attempt fails and is recorded; a late failure of the old fetch
        // does not rewrite that attempt's history.
        let mut f = Failure::new(FailureKind::ServerError, "500 Internal Server Error");
        f.http_status = Some(500);
        let step = s
            .step(
                &mut vec![(new.clone(), Finish::Failure { failure: f, unit: 0.0 })],
                &policy,
                50,
                None,
            )
            .expect("step");
        assert!(matches!(step.settled[0].2, Settled::Failed(_)));
        let late = Failure::new(FailureKind::Timeout, "timed out");
        s.step(
            &mut vec![(old.clone(), Finish::Failure { failure: late, unit: 0.0 })],
            &policy,
            60,
            None,
        )
        .expect("step");
        s.step(
            &mut vec![(old.clone(), Finish::Success(success(&old, "big.md")))],
            &policy,
            70,
            None,
        )
        .expect("step");
        let history = s.attempts(new.job_id).expect("attempts");
        assert_eq!(history.len(), 1, "{history:?}");
        assert_eq!(history[0].outcome.as_deref(), Some("transient"));
        assert_eq!(history[0].http_status, Some(500));
        // Its retry ends done with its own page.
        let again = s
            .claim("w", 1_000_000, lease, 2)
            .expect("claim")
            .expect("due");
        assert_eq!(again.job_id, new.job_id);
        let step = s
            .step(
                &mut vec![(again.clone(), Finish::Success(success(&again, "right.md")))],
                &policy,
                1_000_010,
                None,
            )
            .expect("step");
        assert!(matches!(step.settled[0].2, Settled::Done));
        let done = s.job(new.job_id).expect("read").expect("job");
        assert_eq!(done.status, Status::Done);
        assert_eq!(done.document.as_deref(), Some("right.md"));
        assert_eq!(done.url, "http://other.example/right");
    }

    fn a_failure_backs_off_then_dies_with_its_history(s) {
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

    fn a_rate_limit_throttles_the_host_until_a_run_of_successes(s) {
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

    /// The day a rate-limited job may wait counts from its first rate limit, which the row
    /// keeps until a manual retry: a job queued two days before its first 429 waits it out.
    /// (It counted from the queueing, and the job died at its first 429.)
    fn the_day_of_rate_limits_counts_from_the_first_one(s) {
        s.enqueue(None, &[job("http://a.example/1")], 5, 0)
            .expect("enqueue");
        let policy = Policy {
            jitter: 0.0,
            ..Policy::default()
        };
        let lease = Duration::from_secs(60);
        let mut f = Failure::new(FailureKind::RateLimited, "429 Too Many Requests");
        f.http_status = Some(429);
        f.retry_after = Some(Duration::from_secs(60));
        let first = 2 * 24 * 3_600_000;
        let c = s.claim("w", first, lease, 2).expect("claim").expect("due");
        let failed = s.fail(&c, &f, &policy, first, 0.0).expect("fail").expect("held");
        assert_eq!(failed.job.status, Status::Pending, "{:?}", failed.job.error);
        assert_eq!(failed.job.counters.rate_limited_since, Some(first));

        // Later rate limits keep the first one's time.
        let later = first + 3_600_000;
        let c = s.claim("w", later, lease, 2).expect("claim").expect("due");
        let failed = s.fail(&c, &f, &policy, later, 0.0).expect("fail").expect("held");
        assert_eq!(failed.job.status, Status::Pending);
        assert_eq!(failed.job.counters.rate_limited_since, Some(first));

        // Another failure in between does not restart the day.
        let other = first + 2 * 3_600_000;
        let c = s.claim("w", other, lease, 2).expect("claim").expect("due");
        let timeout = Failure::new(FailureKind::Timeout, "timed out");
        let failed = s.fail(&c, &timeout, &policy, other, 0.0).expect("fail").expect("held");
        assert_eq!(failed.job.counters.rate_limited_since, Some(first));

        // A day after the first one, the wait would end past it: dead.
        let last = first + 24 * 3_600_000 - 30_000;
        let c = s.claim("w", last, lease, 2).expect("claim").expect("due");
        let failed = s.fail(&c, &f, &policy, last, 0.0).expect("fail").expect("held");
        assert_eq!(failed.job.status, Status::Dead);
        assert!(
            failed.job.error.as_deref().is_some_and(|e| e.contains("still rate-limited after 24 h")),
            "{:?}",
            failed.job.error
        );

        // A manual retry starts the day again at the next rate limit.
        s.retry_dead(None, 5, last).expect("retry");
        let revived = s.job(failed.job.id).expect("read").expect("job");
        assert_eq!(revived.counters.rate_limited_since, None);
    }

    /// A plain link that followed a redirect to another host, which answered 429: that host is
    /// paused and throttled, not the link's own, whose other jobs go on. (The link's own host
    /// was paused for another host's rate limit.)
    fn a_rate_limit_after_a_redirect_pauses_the_host_that_answered(s) {
        s.enqueue(
            None,
            &[job("http://short.example/a"), job("http://short.example/b")],
            5,
            0,
        )
        .expect("enqueue");
        let policy = Policy {
            jitter: 0.0,
            ..Policy::default()
        };
        let lease = Duration::from_secs(60);
        let c = s.claim("w", 0, lease, 2).expect("claim").expect("job");
        let mut f = Failure::new(FailureKind::RateLimited, "429 Too Many Requests");
        f.http_status = Some(429);
        f.retry_after = Some(Duration::from_secs(120));
        f.answered_by = Some("https://Publisher.example/paper/1".into());
        let failed = s.fail(&c, &f, &policy, 0, 0.0).expect("fail").expect("held");
        assert_eq!(failed.job.retry_after, Some(120_000), "the job itself waits");
        let hosts = s.hosts(1).expect("hosts");
        assert_eq!(hosts.len(), 1, "{hosts:?}");
        assert_eq!(hosts[0].host, "publisher.example");
        assert_eq!(hosts[0].paused_until, Some(120_000));
        assert_eq!(hosts[0].concurrency_limit, Some(1));
        let other = s.claim("w", 1, lease, 2).expect("claim");
        assert!(
            other.is_some_and(|o| o.host == "short.example" && o.job_id != c.job_id),
            "the link's own host goes on"
        );
    }

    fn retries_used_counts_only_the_retries_the_budget_paid_for(s) {
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

    fn one_step_commits_a_group_of_outcomes_and_claims_the_freed_slots(s) {
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
            clock: None,
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

    fn a_step_of_successes_writes_each_ones_row_and_discards_the_one_cancelled_meanwhile(s) {
        let jobs: Vec<_> = (0..4)
            .map(|i| job(&format!("http://h{i}.example/{i}")))
            .collect();
        s.enqueue(None, &jobs, 5, 0).expect("enqueue");
        s.set_tags(1, &["thesis".to_string()])
            .expect("tags")
            .expect("a job");
        let policy = Policy::default();
        let request = |max| ClaimRequest {
            owner: "w",
            lease: Duration::from_secs(60),
            per_host: 2,
            intervals: &NO_INTERVALS,
            max,
            clock: None,
        };
        let success = |c: &Claimed| Success {
            final_url: format!("{}?final", c.url),
            http_status: 203,
            // The landing page's title stays when the paper's success has none.
            title: (c.job_id != 3).then(|| format!("Page {}", c.job_id)),
            document: Some(format!("/lib/{}.md", c.job_id)),
            content_type: Some("text/html".into()),
            sha256: Some(format!("sum{}", c.job_id)),
            reference: Some(Box::new(Reference {
                title: Some(format!("Paper {}", c.job_id)),
                ..Reference::default()
            })),
            index: None,
        };
        let mut running = s
            .step(&mut Vec::new(), &policy, 10, Some(&request(3)))
            .expect("step")
            .claimed;
        // Job 3 goes on to a second stage first, titled by its landing page.
        let third = running.remove(2);
        assert_eq!(third.job_id, 3);
        let landing = Next {
            stage: Stage::Landing,
            target: "http://h2.example/paper".into(),
            host: "h2.example".into(),
            http_status: Some(200),
            failure: None,
            reference: None,
            saved: Some(Success {
                title: Some("Landing 3".into()),
                ..success(&third)
            }),
        };
        let mut finished = vec![(third, Finish::Next(Box::new(landing)))];
        for now in [11, 12] {
            running.extend(
                s.step(&mut finished, &policy, now, Some(&request(1)))
                    .expect("step")
                    .claimed,
            );
        }
        let mut ids: Vec<i64> = running.iter().map(|c| c.job_id).collect();
        ids.sort_unstable();
        assert_eq!(ids, [1, 2, 3, 4]);
        s.cancel(&[2], 15).expect("cancel");
        let mut finished: Vec<_> = running
            .iter()
            .map(|c| (c.clone(), Finish::Success(success(c))))
            .collect();
        let last = s
            .step(&mut finished, &policy, 20, Some(&request(4)))
            .expect("step");
        let mut settled: Vec<(i64, bool)> = last
            .settled
            .iter()
            .map(|(c, _, settled)| (c.job_id, matches!(settled, Settled::Done)))
            .collect();
        settled.sort_unstable();
        assert_eq!(settled, [(1, true), (2, false), (3, true), (4, true)]);
        assert!(last.claimed.is_empty(), "nothing left to claim");
        for id in [1, 3, 4] {
            let done = s.job(id).expect("read").expect("job");
            assert_eq!(done.status, Status::Done);
            assert_eq!(done.final_url, Some(format!("{}?final", done.url)));
            assert_eq!(done.http_status, Some(203));
            assert_eq!(done.document, Some(format!("/lib/{id}.md")));
            assert_eq!(done.content_type.as_deref(), Some("text/html"));
            assert_eq!(done.finished_at, Some(20));
            let paper = done.reference.expect("the reference");
            assert_eq!(paper.title, Some(format!("Paper {id}")));
            let title = if id == 3 { "Landing 3".to_string() } else { format!("Page {id}") };
            assert_eq!(done.title, Some(title));
        }
        assert_eq!(s.job_tags(1).expect("tags"), ["thesis"], "tags kept");
        let cancelled = s.job(2).expect("read").expect("job");
        assert_eq!(cancelled.status, Status::Cancelled);
        assert_eq!(cancelled.document, None);
        let late = s.attempts(2).expect("attempts");
        assert_eq!(late.len(), 1, "{late:?}");
        assert_eq!(late[0].outcome.as_deref(), Some("success_discarded"));
        assert_eq!(late[0].http_status, Some(203));
    }

    fn a_step_of_successes_claims_the_slots_they_free_and_commits_their_documents(s) {
        // One host at its limit of 2: only the successes' own slots can be claimed.
        let jobs: Vec<_> = (0..5)
            .map(|i| job(&format!("http://a.example/{i}")))
            .collect();
        s.enqueue(None, &jobs, 5, 0).expect("enqueue");
        let policy = Policy::default();
        let request = ClaimRequest {
            owner: "w",
            lease: Duration::from_secs(60),
            per_host: 2,
            intervals: &NO_INTERVALS,
            max: 2,
            clock: None,
        };
        let first = s
            .step(&mut Vec::new(), &policy, 10, Some(&request))
            .expect("step");
        assert_eq!(first.claimed.len(), 2, "the host's limit");
        let mut finished: Vec<_> = first
            .claimed
            .iter()
            .map(|c| {
                let success = Success {
                    http_status: 200,
                    title: Some(format!("Page {}", c.job_id)),
                    document: Some(format!("/lib/{}.md", c.job_id)),
                    index: Some(Box::new(Indexed {
                        title: format!("Page {}", c.job_id),
                        body: format!("pangolin number{}", c.job_id),
                        ..Indexed::default()
                    })),
                    ..Success::default()
                };
                (c.clone(), Finish::Success(success))
            })
            .collect();
        let second = s
            .step(&mut finished, &policy, 11, Some(&request))
            .expect("step");
        assert!(
            second
                .settled
                .iter()
                .all(|(_, _, settled)| matches!(settled, Settled::Done))
        );
        let ids: Vec<i64> = second.claimed.iter().map(|c| c.job_id).collect();
        assert_eq!(ids, [3, 4], "the two slots the successes freed");
        // One transaction, committed whole: the outcomes, their search index and the claim.
        assert_eq!(s.stats(11).expect("stats").running, 2);
        assert_eq!(s.search("pangolin", 10).expect("search").len(), 2);
        assert_eq!(
            s.job(1).expect("job").expect("row").status,
            Status::Done
        );
        // A step with nothing finished claims as before.
        let third = s
            .step(&mut Vec::new(), &policy, 12, Some(&request))
            .expect("step");
        assert!(third.claimed.is_empty(), "the host is at its limit again");
    }

    fn a_lost_lease_cannot_complete(s) {
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
    fn a_refreshed_lease_outlives_its_first_expiry_and_only_its_owners_jobs_are_refreshed(s) {
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
        let ids = [beating.job_id, silent.job_id];
        assert_eq!(s.refresh("beating", &ids, 600_000).expect("refresh"), 1);
        assert_eq!(s.refresh("nobody", &ids, 600_000).expect("refresh"), 0);
        let unknown = |_: &str| Liveness::Unknown;
        let recovered = s
            .recover(&Policy::default(), 120_000, &unknown)
            .expect("recover");
        let ids: Vec<i64> = recovered.iter().map(|f| f.job.id).collect();
        assert_eq!(ids, vec![silent.job_id]);
        let kept = s.job(beating.job_id).expect("job").expect("row");
        assert_eq!(kept.status, Status::Running);
        // Past the refreshed lease it comes back too.
        let later = s
            .recover(&Policy::default(), 600_001, &unknown)
            .expect("recover");
        assert_eq!(later.len(), 1);
        assert_eq!(later[0].job.id, beating.job_id);
    }

    /// A step whose reply was lost may have claimed jobs its worker never heard of: the
    /// heartbeat renews only the jobs the worker holds, and those others go back, with no retry
    /// spent, while the ones it holds stay running.
    fn only_the_jobs_a_worker_holds_are_renewed_and_the_others_put_back(s) {
        s.enqueue(
            None,
            &[job("http://a.example/1"), job("http://b.example/2")],
            1,
            0,
        )
        .expect("enqueue");
        let lease = Duration::from_secs(60);
        let known = s.claim("w", 0, lease, 2).expect("claim").expect("1");
        let lost = s.claim("w", 0, lease, 2).expect("claim").expect("2");
        assert_eq!(s.refresh("w", &[known.job_id], 600_000).expect("refresh"), 1);
        let unknown = |_: &str| Liveness::Unknown;
        let recovered = s
            .recover(&Policy::default(), 120_000, &unknown)
            .expect("recover");
        let ids: Vec<i64> = recovered.iter().map(|f| f.job.id).collect();
        assert_eq!(ids, vec![lost.job_id], "the lost claim's lease was not renewed");

        s.enqueue(None, &[job("http://c.example/3")], 1, 0)
            .expect("enqueue");
        let third = s.claim("w", 0, lease, 2).expect("claim").expect("3");
        let back = s
            .put_back("w", Held::AllBut(&[known.job_id]), "lost", 130_000)
            .expect("put back");
        assert_eq!(back, vec![third.job_id]);
        let j = s.job(third.job_id).expect("job").expect("row");
        assert_eq!((j.status, j.retries_used), (Status::Pending, 0));
        let k = s.job(known.job_id).expect("job").expect("row");
        assert_eq!(k.status, Status::Running);
    }

    fn recovery_requeues_orphans_and_counts_the_attempt(s) {
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
        let recovered = s.recover(&policy, 10, &judge).expect("recover");
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
        s.recover(&policy, 20, &judge).expect("recover");
        assert_eq!(
            s.job(again.job_id).expect("job").expect("row").status,
            Status::Dead
        );
        // A live owner keeps its job past its lease (the wall clock jumped, or the laptop
        // slept); an owner that cannot be judged loses it once the lease expires.
        let kept = s.recover(&policy, 61_000, &judge).expect("recover");
        assert!(kept.is_empty(), "{kept:?}");
        let rec = s
            .recover(&policy, 61_000, &|_| Liveness::Unknown)
            .expect("recover");
        assert_eq!(rec.len(), 1);
        assert_eq!(rec[0].job.id, live_owner.job_id);
    }
}
