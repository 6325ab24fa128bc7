//! Manual actions (delete, fetch now) and deaths announced once.
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
    fn delete_removes_a_job_with_its_history_but_not_one_in_flight(s) {
        s.enqueue(
            None,
            &[job("http://a.example/1"), job("http://a.example/2")],
            5,
            0,
        )
        .expect("enqueue");
        let running = s
            .claim("w", 1, Duration::from_secs(60), 2)
            .expect("claim")
            .expect("one");
        let other = if running.job_id == 1 { 2 } else { 1 };
        let results = s.delete(&[running.job_id, other, 99]).expect("delete");
        assert_eq!(
            results,
            vec![
                ActionResult::WrongState {
                    id: running.job_id,
                    status: Status::Running
                },
                ActionResult::Done { id: other },
                ActionResult::NotFound { id: 99 },
            ]
        );
        assert!(s.job(other).expect("read").is_none());
        assert!(s.job(running.job_id).expect("read").is_some());
        assert!(s.attempts(running.job_id).expect("attempts").len() == 1);
    }

    fn fetch_now_puts_a_pending_job_ahead_of_every_due_job(s) {
        let jobs: Vec<_> = (0..5)
            .map(|i| job(&format!("http://a.example/{i}")))
            .collect();
        s.enqueue(None, &jobs, 5, 0).expect("enqueue");
        s.retry(&[5], 5, 10).expect("fetch now");
        assert_eq!(
            s.claim("w", 10, Duration::from_secs(60), 9)
                .expect("claim")
                .expect("job")
                .job_id,
            5
        );
    }

    fn each_death_is_announced_once(s) {
        s.enqueue(
            None,
            &[job("http://a.example/1"), job("http://a.example/2")],
            5,
            0,
        )
        .expect("enqueue");
        let policy = Policy::default();
        let f = Failure::new(FailureKind::ClientError, "404 Not Found");
        let c = s
            .claim("w", 0, Duration::from_secs(60), 2)
            .expect("claim")
            .expect("job");
        s.fail(&c, &f, &policy, 1, 0.0)
            .expect("fail")
            .expect("held");
        let first = s.take_unannounced_deaths(10).expect("take");
        assert_eq!(first.len(), 1);
        assert_eq!(first[0].error.as_deref(), Some("404 Not Found (fatal)"));
        assert!(
            s.take_unannounced_deaths(10).expect("take").is_empty(),
            "announced once"
        );
        // A manual retry that dies again is a new death.
        s.retry(&[c.job_id], 5, 2).expect("retry");
        let c = s
            .claim("w", 2, Duration::from_secs(60), 2)
            .expect("claim")
            .expect("job");
        s.fail(&c, &f, &policy, 3, 0.0)
            .expect("fail")
            .expect("held");
        assert_eq!(s.take_unannounced_deaths(10).expect("take").len(), 1);
    }
}
