//! The heartbeat of a worker on a queue other machines share (PostgreSQL): its leases are
//! short, and renewed while it runs, so a machine that is killed or unplugged has its jobs
//! taken back by the others within [`SHARED_LEASE`], and a live one never loses them.

use std::sync::Arc;
use std::time::Duration;

use super::Worker;
use crate::engine::clock::Millis;

/// A lease on a shared queue: how long a gone machine's jobs wait before others take them.
pub const SHARED_LEASE: Duration = Duration::from_secs(30);
/// How often a worker on a shared queue renews its leases: three beats per lease, so one lost
/// beat (a slow network) does not cost a live worker its jobs.
pub const HEARTBEAT_EVERY: Duration = Duration::from_secs(10);

/// Stops the heartbeat when the run ends.
pub(super) struct Heartbeat(tokio::task::AbortHandle);

impl Drop for Heartbeat {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl Worker {
    /// The lease a claim takes: long enough for a whole request and its save on a queue of
    /// this machine's, where a gone worker is found by its pid; short and renewed on a shared
    /// one.
    pub(super) fn lease(&self, policy: &crate::engine::policy::Policy) -> Duration {
        if self.store.shared() {
            SHARED_LEASE
        } else {
            policy.timeout * 2 + Duration::from_secs(60)
        }
    }

    /// Renew this worker's leases every [`HEARTBEAT_EVERY`] for as long as the guard is kept;
    /// nothing on a queue no other machine shares.
    pub(super) fn start_heartbeat(self: &Arc<Self>) -> Option<Heartbeat> {
        if !self.store.shared() {
            return None;
        }
        let me = self.clone();
        let task = tokio::spawn(async move {
            loop {
                let next = me.clock.now_ms() + HEARTBEAT_EVERY.as_millis() as Millis;
                me.clock.sleep_until(next).await;
                let (owner, until) = (
                    me.owner.clone(),
                    me.clock.now_ms() + SHARED_LEASE.as_millis() as Millis,
                );
                let held = me.held.lock().map(|h| h.clone()).unwrap_or_default();
                match me.db(move |s| s.refresh(&owner, &held, until)).await {
                    Ok(held) => tracing::trace!(held, "leases renewed"),
                    // The loop's own steps find the database gone and stall; the next beat
                    // tries again.
                    Err(e) => tracing::debug!(error = %e, "cannot renew this worker's leases"),
                }
            }
        });
        Some(Heartbeat(task.abort_handle()))
    }
}
