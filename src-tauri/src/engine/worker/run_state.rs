//! What one `run` of the worker holds between passes of its loop.

use std::collections::HashMap;

use rand::Rng as _;
use tokio::task::JoinSet;

use super::RunSummary;
use crate::engine::clock::Millis;
use crate::engine::policy::{Failure, FailureKind};
use crate::engine::queue::{Claimed, Finish, Queue};

/// What one `run` holds between passes of its loop.
#[derive(Default)]
pub(super) struct Run {
    pub(super) summary: RunSummary,
    pub(super) inflight: JoinSet<(Claimed, Finish)>,
    /// The job each fetch task holds, so a task that panics still gives its job back.
    pub(super) tasks: HashMap<tokio::task::Id, Claimed>,
    /// Outcomes fetched but not yet committed: they go into the next step's transaction
    /// together with the claims for the slots they free (group commit).
    pub(super) ready: Vec<(Claimed, Finish)>,
    /// Outcomes whose commit failed, already weighed for what they say about the network (or
    /// never fetched: jobs put back unstarted); the next step commits them as they are.
    pub(super) observed: Vec<(Claimed, Finish)>,
    /// Start-of-run upkeep (recovery, clean-up) is done.
    pub(super) started: bool,
    /// An until-idle run waiting on work paused by hand has said so.
    pub(super) told_paused: bool,
    /// A step that claimed failed: claims it may have committed are put back next turn.
    pub(super) claims_unsure: bool,
    /// When a shared queue is next looked at for a gone member's jobs (wall clock).
    pub(super) next_recovery: Option<Millis>,
}

pub(super) enum Flow {
    Go,
    Idle,
}

impl Run {
    /// The jobs this run holds: fetching, or fetched and not yet recorded.
    pub(super) fn held_ids(&self) -> Vec<i64> {
        self.tasks
            .values()
            .map(|c| c.job_id)
            .chain(
                self.ready
                    .iter()
                    .chain(&self.observed)
                    .map(|(c, _)| c.job_id),
            )
            .collect()
    }

    /// Outcomes wait to be committed.
    pub(super) fn has_finished(&self) -> bool {
        !self.ready.is_empty() || !self.observed.is_empty()
    }

    /// A finished fetch task's outcome joins the next commit; a task that panicked fails its
    /// attempt like any unknown error.
    pub(super) fn collect(
        &mut self,
        joined: Result<(tokio::task::Id, (Claimed, Finish)), tokio::task::JoinError>,
    ) {
        match joined {
            Ok((id, done)) => {
                self.tasks.remove(&id);
                self.ready.push(done);
            }
            Err(e) => {
                let Some(claimed) = self.tasks.remove(&e.id()) else {
                    tracing::error!(error = %e, "a fetch task failed");
                    return;
                };
                tracing::error!(error = %e, job = claimed.job_id, "a fetch task failed");
                let failure = Failure::new(
                    FailureKind::Unknown,
                    format!("Gleaner failed while fetching the page: {e}"),
                );
                let unit: f64 = rand::rng().random_range(-1.0..=1.0);
                self.ready
                    .push((claimed, Finish::Failure { failure, unit }));
            }
        }
    }
}

/// Why nothing can start when the queue or hosts with pending jobs are paused by hand, with what
/// resumes them.
pub(super) fn paused_by_hand(
    s: &dyn Queue,
    now: Millis,
) -> crate::engine::queue::Result<Option<String>> {
    if s.is_queue_paused()? {
        return Ok(Some(
            "the queue is paused, so no job starts: `gleaner resume` (or Resume in the window) \
             goes on"
                .into(),
        ));
    }
    let hosts: Vec<String> = s
        .hosts(now)?
        .into_iter()
        .filter(|h| h.manual_pause && h.pending > 0)
        .map(|h| h.host)
        .collect();
    Ok((!hosts.is_empty()).then(|| {
        format!(
            "waiting for jobs of hosts paused by hand ({}): `gleaner hosts resume HOST` goes on",
            hosts.join(", ")
        )
    }))
}
