//! Put-backs and the stall record.
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
use crate::engine::sqlite::testing::job;

super::on_every_backend! {
    fn a_job_that_could_not_be_saved_goes_back_with_its_budget_and_a_local_attempt(s) {
        s.enqueue(None, &[job("https://a.example/1")], 5, 0)
            .expect("enqueue");
        let request = ClaimRequest {
            owner: "pid-1-w",
            lease: Duration::from_secs(60),
            per_host: 2,
            intervals: &NO_INTERVALS,
            max: 1,
            clock: None,
        };
        let policy = Policy::default();
        let c = s
            .step(&mut Vec::new(), &policy, 1, Some(&request))
            .expect("claim")
            .claimed;
        let full = Failure::new(FailureKind::Local, "the disk holding /lib is full");
        let mut finished = vec![(c[0].clone(), Finish::Local(full))];
        let step = s.step(&mut finished, &policy, 2, None).expect("step");
        assert!(finished.is_empty(), "committed outcomes are taken");
        assert!(matches!(step.settled[0].2, Settled::Local(_)));
        let j = s.job(c[0].job_id).expect("job").expect("row");
        assert_eq!(j.status, Status::Pending);
        assert_eq!(j.run_at, 2, "due again at once");
        assert_eq!(
            (j.counters.net_failures, j.counters.server_failures),
            (0, 0),
            "no retry spent"
        );
        assert_eq!(j.retries_used, 0);
        let history = s.attempts(c[0].job_id).expect("attempts");
        assert_eq!(history[0].outcome.as_deref(), Some("local"));
    }

    fn a_stopping_worker_puts_back_what_it_holds_and_nothing_else(s) {
        s.enqueue(
            None,
            &[job("https://a.example/1"), job("https://b.example/2")],
            5,
            0,
        )
        .expect("enqueue");
        let policy = Policy::default();
        let claim = |owner| ClaimRequest {
            owner,
            lease: Duration::from_secs(60),
            per_host: 2,
            intervals: &NO_INTERVALS,
            max: 1,
            clock: None,
        };
        let mine = s
            .step(&mut Vec::new(), &policy, 1, Some(&claim("pid-1-me")))
            .expect("claim")
            .claimed;
        let theirs = s
            .step(&mut Vec::new(), &policy, 1, Some(&claim("pid-2-other")))
            .expect("claim")
            .claimed;
        let back = s
            .put_back("pid-1-me", Held::All, "the disk is full", 5)
            .expect("put back");
        assert_eq!(back, vec![mine[0].job_id]);
        let j = s.job(mine[0].job_id).expect("job").expect("row");
        assert_eq!((j.status, j.retries_used), (Status::Pending, 0));
        assert_eq!(
            s.job(theirs[0].job_id).expect("job").expect("row").status,
            Status::Running
        );
    }

    fn a_stall_is_kept_and_cleared(s) {
        let state = StallState {
            kind: StallKind::DiskFull,
            reason: "the disk holding /x is full".into(),
            since: 10,
            next_probe_at: 20,
            probes: 1,
            worker: "pid-1-w".into(),
        };
        s.set_stalled(Some(&state)).expect("set");
        assert_eq!(s.stalled().expect("read"), Some(state));
        assert_eq!(
            s.stats(30).expect("stats").stalled.map(|s| s.kind),
            Some(StallKind::DiskFull)
        );
        s.set_stalled(None).expect("clear");
        assert_eq!(s.stalled().expect("read"), None);
    }
}
