//! Intake: duplicates, and batches reopened by new jobs.
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
    fn duplicates_are_reported_with_the_existing_id(s) {
        let r = s
            .enqueue(
                None,
                &[job("http://a.example/x"), job("http://a.example/x")],
                5,
                10,
            )
            .expect("enqueue");
        let Enqueued::Queued { id, .. } = r[0] else {
            panic!("{r:?}")
        };
        assert_eq!(
            r[1],
            Enqueued::Duplicate {
                id,
                url: "http://a.example/x".into(),
                status: Status::Pending
            }
        );
    }

    fn a_batch_closed_while_empty_reopens_when_its_jobs_arrive(s) {
        let batch = s.create_batch("paste", "paste", 0).expect("batch");
        // A worker going idle between the batch's creation and its enqueue closes it as empty.
        s.recover(&Policy::default(), 1, &|_| Liveness::Unknown)
            .expect("recover");
        s.enqueue(Some(batch), &[job("http://a.example/1")], 5, 2)
            .expect("enqueue");
        let claimed = s
            .claim("w", 3, Duration::from_secs(60), 2)
            .expect("claim")
            .expect("the new job is claimable");
        assert_eq!(claimed.url, "http://a.example/1");
    }
}
