//! What the worker knows of this machine's network: whether it looks offline, found from the
//! attempts it finishes, and the probes that find it back.

use std::collections::HashMap;
use std::time::Duration;

use rand::Rng;

use super::{Worker, WorkerError};
use crate::engine::clock::Millis;
use crate::engine::policy::{self, FailureKind, Policy};
use crate::engine::queue::{Claimed, Finish, OfflineState};

/// What the worker has seen of this machine's network. Offline is this process's finding
/// (written to the database so `stats` and the window show it): after [`OFFLINE_AFTER`]
/// attempts in a row within [`OFFLINE_WINDOW`] all failed to reach the network, the worker
/// stops starting jobs, stops spending retry budgets on such failures, and probes with one job
/// at a time with backoff until something answers.
///
/// One host's failures are not the machine's when another host has just answered: a run of
/// offline-looking failures all on one host, while another host answered within
/// [`OFFLINE_WINDOW`], is that host's (a dead domain whose name server fails, a host this
/// network has no route to) and is charged to its jobs as usual.
#[derive(Debug, Default)]
pub(super) struct Network {
    /// Each failure of the current run of offline-looking failures: when, and on which host.
    streak: Vec<(Millis, String)>,
    /// When each host last answered (reached a server), kept for [`OFFLINE_WINDOW`].
    answered: HashMap<String, Millis>,
    pub(super) offline: Option<OfflineState>,
    /// What the database has of `offline`.
    saved: Option<OfflineState>,
}

/// Failures in a row that make the worker call the machine offline.
pub const OFFLINE_AFTER: usize = 3;
/// ...all within this long.
pub const OFFLINE_WINDOW: Duration = Duration::from_secs(30);

impl Network {
    /// Move every wall time this holds by a jump of the wall clock, so that each wait keeps
    /// its length (a probe is not held back an hour by a clock set back an hour).
    pub(super) fn shift(&mut self, by: Millis) {
        if let Some(o) = self.offline.as_mut() {
            o.next_probe_at += by;
        }
        for (at, _) in &mut self.streak {
            *at += by;
        }
        for at in self.answered.values_mut() {
            *at += by;
        }
    }

    /// Whether the run of failures is all on one host while another host has answered within
    /// the window: then they are that host's, not the machine's.
    fn one_host_fails(&self) -> bool {
        let Some((_, host)) = self.streak.first() else {
            return false;
        };
        self.streak.iter().all(|(_, h)| h == host) && self.answered.keys().any(|h| h != host)
    }
}

/// Whether an attempt reached a server, even to be refused or sent an error page.
fn answered(finish: &Finish) -> bool {
    match finish {
        // A page fetched but not saved still came from a server.
        Finish::Success(_) | Finish::Local(_) => true,
        Finish::Failure { failure, .. } | Finish::Offline(failure) | Finish::Kept(failure) => {
            failure.kind.reached_a_server()
        }
        Finish::Next(next) => next
            .failure
            .as_ref()
            .is_none_or(|f| f.kind.reached_a_server()),
    }
}

impl Worker {
    /// This process's finding that the machine is offline, if it has one.
    pub(super) fn offline(&self) -> Option<OfflineState> {
        self.network.lock().ok().and_then(|n| n.offline.clone())
    }

    /// Learn from a group of finished attempts whether the network is there, and turn
    /// failures that happened while offline into [`Finish::Offline`] so they spend no budget.
    /// In memory only: [`Worker::save_network`] commits what changed.
    pub(super) fn observe_network(
        &self,
        group: &mut Vec<(Claimed, Finish)>,
        policy: &Policy,
        now: Millis,
    ) {
        let finished = std::mem::take(group);
        let mut out = Vec::with_capacity(finished.len());
        {
            let Ok(mut net) = self.network.lock() else {
                *group = finished;
                return;
            };
            // Anything that reached a server, even an error page, proves the network works; a
            // timeout does not (an offline machine's probes time out too).
            let window = OFFLINE_WINDOW.as_millis() as Millis;
            net.answered.retain(|_, &mut t| now - t <= window);
            let mut reached = false;
            for (claimed, finish) in &finished {
                if answered(finish) {
                    reached = true;
                    net.answered.insert(claimed.host.clone(), now);
                }
            }
            if reached {
                net.streak.clear();
                net.offline = None;
            }
            let mut failed_offline = false;
            for (claimed, finish) in finished {
                let (failure, unit) = match finish {
                    // While offline, a probe that timed out (or failed for no known reason)
                    // is the machine's too, and spends no retry; a bad link or a host that
                    // does not exist fails as ever.
                    Finish::Failure { failure, unit }
                        if !reached
                            && (failure.kind.suggests_offline()
                                || (net.offline.is_some()
                                    && matches!(
                                        failure.kind,
                                        FailureKind::Timeout | FailureKind::Unknown
                                    ))) =>
                    {
                        (failure, unit)
                    }
                    other => {
                        out.push((claimed, other));
                        continue;
                    }
                };
                if net.offline.is_none() {
                    net.streak.retain(|(t, _)| now - t <= window);
                    net.streak.push((now, claimed.host.clone()));
                    if net.streak.len() >= OFFLINE_AFTER && !net.one_host_fails() {
                        net.offline = Some(OfflineState {
                            since: now,
                            next_probe_at: now,
                            probes: 0,
                            reason: failure.message.clone(),
                            worker: self.owner.clone(),
                        });
                    }
                }
                match net.offline.as_mut() {
                    Some(state) => {
                        state.reason = failure.message.clone();
                        failed_offline = true;
                        out.push((claimed, Finish::Offline(failure)));
                    }
                    None => {
                        out.push((claimed, Finish::Failure { failure, unit }));
                    }
                }
            }
            if let Some(state) = net.offline.as_mut()
                && failed_offline
            {
                // This group was a failed probe: wait longer before the next one, on the
                // policy's own backoff schedule.
                state.probes += 1;
                let unit: f64 = rand::rng().random_range(-1.0..=1.0);
                let wait = policy.delay(state.probes, unit);
                state.next_probe_at = now + wait.as_millis() as Millis;
            }
        }
        *group = out;
    }

    /// Commit the offline finding if it changed since the database last took it (for `stats`
    /// and the window), then log the change. Refused, it is tried again after the next step.
    pub(super) async fn save_network(&self, now: Millis) -> Result<(), WorkerError> {
        let (before, after) = match self.network.lock() {
            Ok(net) if net.offline != net.saved => (net.saved.clone(), net.offline.clone()),
            _ => return Ok(()),
        };
        let state = after.clone();
        self.db(move |s| s.set_offline(state.as_ref())).await?;
        if let Ok(mut net) = self.network.lock() {
            net.saved = after.clone();
        }
        match (&before, &after) {
            (None, Some(state)) => tracing::warn!(
                "This machine looks offline: the last {OFFLINE_AFTER} attempts could not reach the network ({}). \
                 No new fetches start and no retries are spent until it is back; checking again in {}.",
                state.reason,
                policy::human_duration(Duration::from_millis(
                    (state.next_probe_at - now).max(0) as u64
                ))
            ),
            // A probe that failed; a clock jump only moves the next one.
            (Some(was), Some(state)) if was.probes != state.probes => tracing::info!(
                "Still offline ({}); checking again in {} (check {}).",
                state.reason,
                policy::human_duration(Duration::from_millis(
                    (state.next_probe_at - now).max(0) as u64
                )),
                state.probes + 1
            ),
            (Some(state), None) => tracing::info!(
                "Back online after {}; fetching again.",
                policy::human_duration(Duration::from_millis((now - state.since).max(0) as u64))
            ),
            _ => {}
        }
        Ok(())
    }
}
