//! The claim: due jobs only, never twice, per-host limits and pauses, batches and hosts taking turns.
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

super::on_every_backend! {
    fn claim_takes_due_jobs_only_and_never_twice(s) {
        s.enqueue(None, &[job("http://a.example/1")], 5, 100)
            .expect("enqueue");
        assert!(
            s.claim("w", 99, Duration::from_secs(60), 2)
                .expect("claim")
                .is_none(),
            "not due yet"
        );
        let c = s
            .claim("w", 100, Duration::from_secs(60), 2)
            .expect("claim")
            .expect("job");
        assert_eq!(c.attempt, 1);
        assert!(
            s.claim("w2", 100, Duration::from_secs(60), 2)
                .expect("claim")
                .is_none()
        );
    }

    fn per_host_limit_and_host_pause_gate_the_claim(s) {
        let mut jobs: Vec<_> = (0..4)
            .map(|i| job(&format!("http://a.example/{i}")))
            .collect();
        jobs.push(job("http://b.example/1"));
        s.enqueue(None, &jobs, 5, 0).expect("enqueue");
        // Longer than the pause below: on a shared queue a lease's end is a wake-up too.
        let lease = Duration::from_secs(300);
        // Hosts take turns inside a batch: a, b, then a again.
        let first = s.claim("w", 10, lease, 2).expect("claim").expect("a1");
        let other = s.claim("w", 10, lease, 2).expect("claim").expect("b");
        let second = s.claim("w", 10, lease, 2).expect("claim").expect("a2");
        assert_eq!(
            [&first.host, &other.host, &second.host],
            ["a.example", "b.example", "a.example"]
        );
        assert!(
            s.claim("w", 10, lease, 2).expect("claim").is_none(),
            "a.example is at its limit of 2"
        );

        // A 429 on a.example pauses the whole host, even though one of its slots frees up.
        let policy = Policy {
            jitter: 0.0,
            ..Policy::default()
        };
        let mut f = Failure::new(FailureKind::RateLimited, "429 Too Many Requests");
        f.retry_after = Some(Duration::from_secs(120));
        let failed = s
            .fail(&first, &f, &policy, 10, 0.0)
            .expect("fail")
            .expect("lease held");
        assert_eq!(failed.job.run_at, 10 + 120_000);
        // The host's other waiting jobs now say when they can really start; b.example's
        // finished job and a2 (running) are untouched.
        let mut waiting: Vec<(String, Millis)> = s
            .list_jobs(&crate::engine::queue::JobFilter {
                status: Some(Status::Pending),
                ..Default::default()
            })
            .expect("list")
            .into_iter()
            .map(|j| (j.url, j.run_at))
            .collect();
        waiting.sort();
        assert_eq!(
            waiting,
            vec![
                ("http://a.example/0".to_string(), 120_010),
                ("http://a.example/2".to_string(), 120_010),
                ("http://a.example/3".to_string(), 120_010),
            ]
        );
        assert!(
            s.claim("w", 11, lease, 2).expect("claim").is_none(),
            "host paused"
        );
        assert_eq!(
            s.next_wakeup(11, &NO_INTERVALS).expect("wakeup"),
            Some(120_010)
        );
        // Pause over, but the host is throttled to one connection and a2 still holds it.
        assert!(s.claim("w", 120_010, lease, 2).expect("claim").is_none());
        let ok = Success {
            http_status: 200,
            ..Success::default()
        };
        s.complete(&second, &ok, &policy, 120_010)
            .expect("complete");
        let again = s
            .claim("w", 120_010, lease, 2)
            .expect("claim")
            .expect("after pause");
        assert_eq!(again.host, "a.example");
    }

    fn paused_queue_and_paused_host_start_nothing(s) {
        s.enqueue(
            None,
            &[job("http://a.example/1"), job("http://b.example/1")],
            5,
            0,
        )
        .expect("enqueue");
        let lease = Duration::from_secs(60);
        s.set_queue_paused(true).expect("pause");
        assert!(s.claim("w", 0, lease, 2).expect("claim").is_none());
        assert!(s.stats(0).expect("stats").queue_paused);
        s.set_queue_paused(false).expect("resume");
        s.pause_host("A.example", 0).expect("pause host");
        assert_eq!(
            s.claim("w", 0, lease, 2).expect("claim").expect("b").host,
            "b.example"
        );
        assert!(s.claim("w", 0, lease, 2).expect("claim").is_none());
        assert!(s.resume_host("a.example", 0).expect("resume"));
        assert_eq!(
            s.claim("w", 0, lease, 2).expect("claim").expect("a").host,
            "a.example"
        );
    }

    fn the_claim_rotates_across_batches(s) {
        let big: Vec<_> = (0..100)
            .map(|i| job(&format!("http://a{i}.example/")))
            .collect();
        let small: Vec<_> = (0..3)
            .map(|i| job(&format!("http://b{i}.example/")))
            .collect();
        s.enqueue(None, &big, 5, 0).expect("enqueue big");
        s.enqueue(None, &small, 5, 1).expect("enqueue small");
        let lease = Duration::from_secs(60);
        let hosts: Vec<String> = (0..8)
            .map(|_| {
                s.claim("w", 10, lease, 2)
                    .expect("claim")
                    .expect("job")
                    .host
            })
            .collect();
        // The batches take turns while both have work: a, b, a, b, a, b, then a.
        let batch: String = hosts.iter().map(|h| &h[..1]).collect();
        assert_eq!(batch, "abababaa", "{hosts:?}");
        // Inside a batch its hosts take turns too: no host twice.
        let distinct: std::collections::BTreeSet<_> = hosts.iter().collect();
        assert_eq!(distinct.len(), hosts.len(), "{hosts:?}");
        let small: Vec<_> = hosts.iter().filter(|h| h.starts_with('b')).collect();
        assert_eq!(small, ["b0.example", "b1.example", "b2.example"]);
    }

    fn hosts_take_turns_inside_a_batch(s) {
        let mut jobs: Vec<_> = (0..300)
            .map(|i| job(&format!("http://journal.example/{i}")))
            .collect();
        jobs.extend((0..2).map(|i| job(&format!("http://small.example/{i}"))));
        jobs.extend((0..2).map(|i| job(&format!("http://blog.example/{i}"))));
        s.enqueue(None, &jobs, 5, 0).expect("enqueue");
        let hosts: Vec<String> = (0..8)
            .map(|_| {
                s.claim("w", 10, Duration::from_secs(60), 100)
                    .expect("claim")
                    .expect("job")
                    .host
            })
            .collect();
        // Hosts take turns, in the same order each round (SQLite's: arrival; PostgreSQL's:
        // name), whatever their backlog: three rounds of all three, then the journal alone.
        let round: std::collections::BTreeSet<_> = hosts[..3].iter().collect();
        assert_eq!(round.len(), 3, "{hosts:?}");
        assert_eq!(hosts[..3], hosts[3..6], "{hosts:?}");
        assert_eq!(hosts[6..], ["journal.example", "journal.example"], "{hosts:?}");
    }
}
