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

    /// Put back the jobs `owner` holds (all of them, or those of `only`), as
    /// [`Finish::Local`](crate::engine::queue::Finish::Local) does: pending again, budget untouched. For a
    /// worker that stalls or stops while stalled.
    pub fn put_back(
        &self,
        owner: &str,
        only: Option<&[i64]>,
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
            let wanted = |id: i64| only.is_none_or(|ids| ids.contains(&id));
            for claimed in held.iter().filter(|c| wanted(c.job_id)) {
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
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::engine::policy::NO_INTERVALS;
    use crate::engine::policy::Policy;
    use crate::engine::queue::{ClaimRequest, Finish, Settled, Status};
    use crate::engine::sqlite::testing::job;

    #[test]
    fn a_job_that_could_not_be_saved_goes_back_with_its_budget_and_a_local_attempt() {
        let s = Store::open_in_memory().expect("store");
        s.enqueue(None, &[job("https://a.example/1")], 5, 0)
            .expect("enqueue");
        let request = ClaimRequest {
            owner: "pid-1-w",
            lease: Duration::from_secs(60),
            per_host: 2,
            intervals: &NO_INTERVALS,
            max: 1,
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

    #[test]
    fn a_stopping_worker_puts_back_what_it_holds_and_nothing_else() {
        let s = Store::open_in_memory().expect("store");
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
            .put_back("pid-1-me", None, "the disk is full", 5)
            .expect("put back");
        assert_eq!(back, vec![mine[0].job_id]);
        let j = s.job(mine[0].job_id).expect("job").expect("row");
        assert_eq!((j.status, j.retries_used), (Status::Pending, 0));
        assert_eq!(
            s.job(theirs[0].job_id).expect("job").expect("row").status,
            Status::Running
        );
    }

    #[test]
    fn a_stall_is_kept_and_cleared() {
        let s = Store::open_in_memory().expect("store");
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
