//! Host pauses.
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
    fn resuming_a_rate_limited_host_makes_its_waiting_jobs_due_at_once(s) {
        // The host's jobs sit in two batches, so the move must reach every lane of the host.
        s.enqueue(
            None,
            &[job("http://a.example/1"), job("http://a.example/2")],
            5,
            0,
        )
        .expect("enqueue");
        s.enqueue(
            None,
            &[job("http://a.example/3"), job("http://b.example/1")],
            5,
            0,
        )
        .expect("enqueue");
        let policy = Policy {
            jitter: 0.0,
            ..Policy::default()
        };
        let c = s
            .claim("w", 10, Duration::from_secs(60), 2)
            .expect("claim")
            .expect("a1");
        let mut f = Failure::new(FailureKind::RateLimited, "429 Too Many Requests");
        f.retry_after = Some(Duration::from_secs(600));
        s.fail(&c, &f, &policy, 10, 0.0).expect("fail");
        let due_of = |id: i64| s.job(id).expect("job").expect("row").run_at;
        assert_eq!([due_of(1), due_of(2), due_of(3)], [600_010; 3]);
        assert_eq!(due_of(4), 0, "b.example is not paused");
        assert!(s.resume_host("a.example", 20).expect("resume"));
        assert_eq!([due_of(1), due_of(2), due_of(3)], [20; 3]);
    }
}
