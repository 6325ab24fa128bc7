//! A worker's finding that it cannot go on for a reason of this machine's (a full disk, a
//! database that cannot be written), kept in the settings so `stats` and the window of any
//! process show it, and the put-back of the jobs the worker held.

use super::Store;
use super::outcomes::{PutBack, put_back_in};
use crate::engine::clock::Millis;
use crate::engine::policy::{Failure, FailureKind};
use crate::engine::queue::{Result, Stage, StallKind, StallState};
use rusqlite::params;

/// [`StallState`] as kept in the settings table (times as integers, like every stored time).
#[derive(serde::Serialize, serde::Deserialize)]
struct Stored {
    kind: StallKind,
    reason: String,
    since: Millis,
    next_probe_at: Millis,
    probes: u32,
    worker: String,
}

const KEY: &str = "stalled";

impl Store {
    /// Record (or, with `None`, clear) a worker's stall. This is also the cheap probe of the
    /// database: a write that needs a little space and the write lock.
    pub fn set_stalled(&self, state: Option<&StallState>) -> Result<()> {
        self.write(|tx| {
            match state {
                Some(s) => {
                    let stored = Stored {
                        kind: s.kind,
                        reason: s.reason.clone(),
                        since: s.since,
                        next_probe_at: s.next_probe_at,
                        probes: s.probes,
                        worker: s.worker.clone(),
                    };
                    tx.execute(
                        "INSERT INTO settings (key, value) VALUES (?1, ?2) \
                         ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                        params![KEY, serde_json::to_string(&stored)?],
                    )?;
                }
                None => {
                    tx.execute("DELETE FROM settings WHERE key = ?1", [KEY])?;
                }
            }
            Ok(())
        })
    }

    /// The stall a worker recorded, if any (its process may have ended since: `stats` says
    /// whose it is).
    pub fn stalled(&self) -> Result<Option<StallState>> {
        let conn = self.conn()?;
        stalled_in(&conn)
    }

    /// Put back the jobs `owner` holds (those `which` names), as
    /// [`Finish::Local`](crate::engine::queue::Finish::Local) does: pending again, budget untouched. For a
    /// worker that stalls or stops while stalled.
    pub fn put_back(
        &self,
        owner: &str,
        which: crate::engine::queue::Held<'_>,
        reason: &str,
        now: Millis,
    ) -> Result<Vec<i64>> {
        self.write(|tx| {
            let held: Vec<crate::engine::queue::Claimed> = tx
                .prepare(
                    "SELECT id, url, host, attempts, coalesce(attempt_started_at, updated_at), stage \
                     FROM jobs INDEXED BY jobs_running_host \
                     WHERE status = 'running' AND lease_owner = ?1",
                )?
                .query_map([owner], |r| {
                    let url: String = r.get(1)?;
                    let stage = r.get::<_, Option<String>>(5)?;
                    let stage = stage.as_deref().and_then(Stage::parse);
                    Ok(crate::engine::queue::Claimed {
                        job_id: r.get(0)?,
                        stage: stage.or_else(|| Stage::initial(&url)),
                        url,
                        host: r.get(2)?,
                        attempt: r.get(3)?,
                        started_at: r.get(4)?,
                        owner: owner.to_string(),
                        throttled: false,
                        reference: None,
                        target: None,
                        document: None,
                    })
                })?
                .collect::<rusqlite::Result<_>>()?;
            let failure = Failure::new(FailureKind::Local, reason);
            let mut out = Vec::with_capacity(held.len());
            for claimed in held.iter().filter(|c| which.wants(c.job_id)) {
                if put_back_in(tx, claimed, &failure, now, PutBack::Local)?.is_some() {
                    out.push(claimed.job_id);
                }
            }
            Ok(out)
        })
    }
}

pub(super) fn stalled_in(conn: &rusqlite::Connection) -> Result<Option<StallState>> {
    use rusqlite::OptionalExtension as _;
    let value: Option<String> = conn
        .query_row("SELECT value FROM settings WHERE key = ?1", [KEY], |r| {
            r.get(0)
        })
        .optional()?;
    Ok(value
        .and_then(|v| serde_json::from_str::<Stored>(&v).ok())
        .map(|s| StallState {
            kind: s.kind,
            reason: s.reason,
            since: s.since,
            next_probe_at: s.next_probe_at,
            probes: s.probes,
            worker: s.worker,
        }))
}

#[cfg(test)]
mod tests {}
