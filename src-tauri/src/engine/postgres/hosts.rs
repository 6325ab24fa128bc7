//! Hosts, the queue-wide pause, settings, and what a member finds about its own machine
//! (offline, stalled), on PostgreSQL.

use super::rows::Conn;
use super::{Db, transaction};
use crate::engine::clock::Millis;
use crate::engine::queue::{HostState, OfflineState, Result, StallKind, StallState, rfc3339};

/// Every host with a job has a row, which the claim locks to count its connections.
pub(super) async fn ensure_host(tx: &impl Conn, host: &str) -> Result<()> {
    tx.exec(
        "INSERT INTO hosts (host) VALUES ($1) ON CONFLICT (host) DO NOTHING",
        &[&host],
    )
    .await?;
    Ok(())
}

pub(super) async fn setting(c: &impl Conn, key: &str) -> Result<Option<String>> {
    let rows = c
        .query_rows("SELECT value FROM settings WHERE key = $1", &[&key])
        .await?;
    Ok(rows.first().map(|r| r.get(0)))
}

pub(super) async fn set_setting(db: &Db, key: &str, value: &str) -> Result<()> {
    transaction!(db, |tx| {
        tx.exec(
            "INSERT INTO settings (key, value) VALUES ($1, $2) \
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            &[&key, &value],
        )
        .await?;
        // The queue's pause and the policy change what every member may start.
        db.notify(&tx).await?;
    })
}

/// A finding of this member's about its machine, as stored (JSON), or none.
pub(super) async fn member_setting(
    c: &impl Conn,
    member: &str,
    key: &str,
) -> Result<Option<String>> {
    let rows = c
        .query_rows(
            "SELECT value FROM member_settings WHERE member = $1 AND key = $2",
            &[&member, &key],
        )
        .await?;
    Ok(rows.first().map(|r| r.get(0)))
}

pub(super) async fn set_member_setting(db: &Db, key: &str, value: Option<&str>) -> Result<()> {
    transaction!(db, |tx| {
        let changed = match value {
            Some(v) => {
                tx.exec(
                    "INSERT INTO member_settings (member, key, value) VALUES ($1, $2, $3) \
                     ON CONFLICT (member, key) DO UPDATE SET value = excluded.value \
                     WHERE member_settings.value IS DISTINCT FROM excluded.value",
                    &[&db.member, &key, &v],
                )
                .await?
            }
            None => {
                tx.exec(
                    "DELETE FROM member_settings WHERE member = $1 AND key = $2",
                    &[&db.member, &key],
                )
                .await?
            }
        };
        // Other members' windows show this machine offline or paused, and back.
        if changed > 0 {
            db.notify(&tx).await?;
        }
    })
}

/// [`OfflineState`] as stored (times as integers, like SQLite's).
#[derive(serde::Serialize, serde::Deserialize)]
pub(super) struct StoredOffline {
    since: Millis,
    next_probe_at: Millis,
    probes: u32,
    reason: String,
    worker: String,
}

impl StoredOffline {
    pub(super) fn of(s: &OfflineState) -> Self {
        Self {
            since: s.since,
            next_probe_at: s.next_probe_at,
            probes: s.probes,
            reason: s.reason.clone(),
            worker: s.worker.clone(),
        }
    }

    pub(super) fn read(text: Option<String>) -> Option<OfflineState> {
        let s: Self = serde_json::from_str(&text?).ok()?;
        Some(OfflineState {
            since: s.since,
            next_probe_at: s.next_probe_at,
            probes: s.probes,
            reason: s.reason,
            worker: s.worker,
        })
    }
}

/// [`StallState`] as stored.
#[derive(serde::Serialize, serde::Deserialize)]
pub(super) struct StoredStall {
    kind: StallKind,
    reason: String,
    since: Millis,
    next_probe_at: Millis,
    probes: u32,
    worker: String,
}

impl StoredStall {
    pub(super) fn of(s: &StallState) -> Self {
        Self {
            kind: s.kind,
            reason: s.reason.clone(),
            since: s.since,
            next_probe_at: s.next_probe_at,
            probes: s.probes,
            worker: s.worker.clone(),
        }
    }

    pub(super) fn read(text: Option<String>) -> Option<StallState> {
        let s: Self = serde_json::from_str(&text?).ok()?;
        Some(StallState {
            kind: s.kind,
            reason: s.reason,
            since: s.since,
            next_probe_at: s.next_probe_at,
            probes: s.probes,
            worker: s.worker,
        })
    }
}

pub(super) async fn pause_host(db: &Db, host: &str, now: Millis) -> Result<()> {
    let host = host.trim().to_ascii_lowercase();
    transaction!(db, |tx| {
        tx.exec(
            "INSERT INTO hosts (host, manual_pause, pause_reason) VALUES ($1, true, $2) \
             ON CONFLICT (host) DO UPDATE SET manual_pause = true, \
                 pause_reason = excluded.pause_reason",
            &[&host, &format!("paused by hand at {}", rfc3339(now))],
        )
        .await?;
        // Other members' windows show the pause.
        db.notify(&tx).await?;
    })
}

pub(super) async fn resume_host(db: &Db, host: &str, now: Millis) -> Result<bool> {
    let host = host.trim().to_ascii_lowercase();
    transaction!(db, |tx| {
        // Jobs moved to the end of a rate-limit pause are due again at once.
        tx.exec(
            "UPDATE jobs SET run_at = $2 FROM hosts h \
             WHERE h.host = $1 AND h.paused_until > $2 AND jobs.host = $1 \
               AND jobs.status = 'pending' AND jobs.run_at = h.paused_until",
            &[&host, &now],
        )
        .await?;
        let n = tx
            .exec(
                "UPDATE hosts SET manual_pause = false, paused_until = NULL, pause_reason = NULL \
                 WHERE host = $1 AND (manual_pause OR paused_until > $2)",
                &[&host, &now],
            )
            .await?;
        if n > 0 {
            db.notify(&tx).await?;
        }
        n > 0
    })
}

pub(super) async fn hosts(c: &impl Conn, now: Millis) -> Result<Vec<HostState>> {
    let rows = c
        .query_rows(
            "SELECT h.host, h.paused_until, h.pause_reason, h.manual_pause, h.concurrency_limit, \
                 (SELECT count(*) FROM jobs j WHERE j.host = h.host AND j.status = 'pending') \
             FROM hosts h \
             WHERE h.manual_pause OR h.paused_until > $1 OR h.concurrency_limit IS NOT NULL \
             ORDER BY h.host",
            &[&now],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| HostState {
            host: r.get(0),
            paused_until: r.get::<_, Option<Millis>>(1).filter(|t| *t > now),
            reason: r.get(2),
            manual_pause: r.get(3),
            concurrency_limit: r
                .get::<_, Option<i32>>(4)
                .and_then(|n| u32::try_from(n).ok()),
            pending: u64::try_from(r.get::<_, i64>(5)).unwrap_or(0),
        })
        .collect())
}
