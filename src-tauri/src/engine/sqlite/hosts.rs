//! Hosts, the queue-wide pause, the offline state, and settings.

use rusqlite::{Connection, OptionalExtension, params};

use crate::engine::clock::Millis;
use crate::engine::policy::Policy;

use super::Store;
use crate::engine::queue::{HostState, OfflineState, Result, rfc3339};

/// [`OfflineState`] as kept in the settings table (times as integers, like every stored time).
#[derive(serde::Serialize, serde::Deserialize)]
struct StoredOffline {
    since: Millis,
    next_probe_at: Millis,
    probes: u32,
    reason: String,
    worker: String,
}

impl From<&OfflineState> for StoredOffline {
    fn from(s: &OfflineState) -> Self {
        Self {
            since: s.since,
            next_probe_at: s.next_probe_at,
            probes: s.probes,
            reason: s.reason.clone(),
            worker: s.worker.clone(),
        }
    }
}

impl From<StoredOffline> for OfflineState {
    fn from(s: StoredOffline) -> Self {
        Self {
            since: s.since,
            next_probe_at: s.next_probe_at,
            probes: s.probes,
            reason: s.reason,
            worker: s.worker,
        }
    }
}

pub(super) fn offline_state(conn: &Connection) -> Result<Option<OfflineState>> {
    let v: Option<String> = conn
        .prepare_cached("SELECT value FROM settings WHERE key = 'offline'")?
        .query_row([], |r| r.get(0))
        .optional()?;
    // A value this version cannot read is not worth failing `stats` over.
    Ok(
        v.and_then(|v| serde_json::from_str::<StoredOffline>(&v).ok())
            .map(OfflineState::from),
    )
}

pub(super) fn queue_paused(conn: &Connection) -> Result<bool> {
    let v: Option<String> = conn
        .prepare_cached("SELECT value FROM settings WHERE key = 'queue_paused'")?
        .query_row([], |r| r.get(0))
        .optional()?;
    Ok(v.as_deref() == Some("true"))
}

impl Store {
    /// A free-form setting (JSON text), or `None` when never set.
    pub fn setting(&self, key: &str) -> Result<Option<String>> {
        let conn = self.conn()?;
        Ok(conn
            .prepare_cached("SELECT value FROM settings WHERE key = ?1")?
            .query_row([key], |r| r.get(0))
            .optional()?)
    }

    pub fn set_setting(&self, key: &str, value: &str) -> Result<()> {
        self.write(|tx| {
            tx.execute(
                "INSERT INTO settings (key, value) VALUES (?1, ?2) \
                 ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                [key, value],
            )?;
            Ok(())
        })
    }

    /// Pause one host until resumed: no job for it starts, in any process.
    pub fn pause_host(&self, host: &str, now: Millis) -> Result<()> {
        let host = host.trim().to_ascii_lowercase();
        self.write(|tx| {
            tx.execute(
                "INSERT INTO hosts (host, manual_pause, pause_reason) VALUES (?1, 1, ?2) \
                 ON CONFLICT(host) DO UPDATE SET manual_pause = 1, pause_reason = excluded.pause_reason",
                params![host, format!("paused by hand at {}", rfc3339(now))],
            )?;
            Ok(())
        })
    }

    /// Resume a host: clears a manual pause and any rate-limit pause still running. Returns
    /// false if the host was not paused.
    pub fn resume_host(&self, host: &str, now: Millis) -> Result<bool> {
        let host = host.trim().to_ascii_lowercase();
        self.write(|tx| {
            // Jobs that were moved to the end of a rate-limit pause are due again at once.
            tx.execute(
                "UPDATE jobs INDEXED BY jobs_lane SET run_at = ?2 \
                 WHERE batch_id IN (SELECT batch_id FROM lanes INDEXED BY lanes_host WHERE host = ?1) \
                   AND host = ?1 AND status = 'pending' \
                   AND run_at = (SELECT paused_until FROM hosts WHERE host = ?1 AND paused_until > ?2)",
                params![host, now],
            )?;
            let n = tx.execute(
                "UPDATE hosts SET manual_pause = 0, paused_until = NULL, pause_reason = NULL \
                 WHERE host = ?1 AND (manual_pause != 0 OR paused_until > ?2)",
                params![host, now],
            )?;
            Ok(n > 0)
        })
    }

    /// Record that a worker finds this machine offline (or, with `None`, that it is back).
    pub fn set_offline(&self, state: Option<&OfflineState>) -> Result<()> {
        self.write(|tx| {
            match state {
                Some(state) => {
                    let stored = StoredOffline::from(state);
                    tx.execute(
                        "INSERT INTO settings (key, value) VALUES ('offline', ?1) \
                         ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                        [serde_json::to_string(&stored)?],
                    )?;
                }
                None => {
                    tx.execute("DELETE FROM settings WHERE key = 'offline'", [])?;
                }
            }
            Ok(())
        })
    }

    /// The offline state a worker recorded, if any.
    pub fn offline(&self) -> Result<Option<OfflineState>> {
        let conn = self.conn()?;
        offline_state(&conn)
    }

    /// Pause or resume the whole queue, for every process on this database.
    pub fn set_queue_paused(&self, paused: bool) -> Result<()> {
        self.write(|tx| {
            tx.execute(
                "INSERT INTO settings (key, value) VALUES ('queue_paused', ?1) \
                 ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                [if paused { "true" } else { "false" }],
            )?;
            Ok(())
        })
    }

    pub fn is_queue_paused(&self) -> Result<bool> {
        let conn = self.conn()?;
        queue_paused(&conn)
    }

    /// Every host with a state of its own: paused, or throttled after a rate limit.
    pub fn hosts(&self, now: Millis) -> Result<Vec<HostState>> {
        let conn = self.conn()?;
        let mut stmt = conn.prepare_cached(
            "SELECT h.host, h.paused_until, h.pause_reason, h.manual_pause, h.concurrency_limit, \
                 (SELECT count(*) FROM jobs j WHERE j.host = h.host AND j.status = 'pending') \
             FROM hosts h WHERE h.manual_pause != 0 OR h.paused_until > ?1 OR h.concurrency_limit IS NOT NULL \
             ORDER BY h.host",
        )?;
        let rows = stmt
            .query_map([now], |r| {
                Ok(HostState {
                    host: r.get(0)?,
                    paused_until: r.get::<_, Option<Millis>>(1)?.filter(|t| *t > now),
                    reason: r.get(2)?,
                    manual_pause: r.get::<_, i64>(3)? != 0,
                    concurrency_limit: r.get(4)?,
                    pending: r.get(5)?,
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    }

    /// The stored policy, or the defaults.
    pub fn load_policy(&self) -> Result<Policy> {
        stored_policy(&*self.conn()?)
    }

    pub fn save_policy(&self, policy: &Policy) -> Result<()> {
        let text = serde_json::to_string(policy)?;
        self.write(|tx| {
            tx.execute(
                "INSERT INTO settings (key, value) VALUES ('policy', ?1) \
                 ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                [text],
            )?;
            Ok(())
        })
    }
}

/// The policy saved in `settings`, or the default when none is.
pub(super) fn stored_policy(conn: &Connection) -> Result<Policy> {
    let text: Option<String> = conn
        .query_row("SELECT value FROM settings WHERE key = 'policy'", [], |r| {
            r.get(0)
        })
        .optional()?;
    Ok(match text {
        Some(t) => serde_json::from_str(&t)?,
        None => Policy::default(),
    })
}

#[cfg(test)]
mod tests {}
