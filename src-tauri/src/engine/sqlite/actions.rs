//! Manual actions on jobs (retry, cancel, delete) and the deaths to announce.

use rusqlite::{OptionalExtension, Transaction, params};

use crate::engine::clock::Millis;

use super::Store;
use super::lanes::{LANE_CURSOR, lane_head};
use super::rows::{load_job, status_of};
use crate::engine::queue::{ActionResult, Job, Result, Status};

/// Dead jobs, of one host or of all.
pub(super) const DEAD_JOBS_SQL: &str = "SELECT id FROM jobs WHERE status = 'dead' \
     AND status <> 'done' AND status <> 'running' AND (?1 IS NULL OR host = ?1) ORDER BY id";

pub(super) fn revive(tx: &Transaction<'_>, id: i64, max_retries: u32, now: Millis) -> Result<()> {
    // A done job's success is kept in its row (migration 0014), which is about to be reset.
    tx.execute(
        "INSERT INTO attempt_log (job_id, number, started_at, finished_at, outcome, http_status, worker, stage) \
         SELECT id, attempts, attempt_started_at, finished_at, 'success', http_status, finished_by, stage \
         FROM jobs WHERE id = ?1 AND status = 'done' AND attempt_started_at IS NOT NULL",
        [id],
    )?;
    // A reference starts over from its first request, at the host it was queued under. The
    // last error goes too: it was the verdict on the old budget ("…; retry budget of 2
    // spent"), and on a job queued again it reads as if the job had died again. The attempt
    // history keeps every failure.
    tx.execute(
        "UPDATE jobs SET status = 'pending', run_at = ?2, max_retries = ?3, net_failures = 0, \
             server_failures = 0, rate_limits = 0, blocked_failures = 0, budget_started_at = ?2, rate_limited_since = NULL, updated_at = ?2, \
             finished_at = NULL, dead_notified = 0, lease_owner = NULL, lease_until = NULL, \
             error_class = NULL, error = NULL, http_status = NULL, attempt_started_at = NULL, \
             finished_by = NULL, stage = NULL, target = NULL, \
             host = coalesce(origin_host, host), origin_host = NULL \
         WHERE id = ?1",
        params![id, now, max_retries],
    )?;
    tx.execute(
        "UPDATE batches SET open = 1 WHERE id = (SELECT batch_id FROM jobs WHERE id = ?1)",
        [id],
    )?;
    Ok(())
}

impl Store {
    /// Remove jobs and their attempt history. A running job is refused: cancel it first, so no
    /// fetch in flight writes a document for a job that no longer exists. Saved documents stay
    /// in the library.
    pub fn delete(&self, ids: &[i64]) -> Result<Vec<ActionResult>> {
        self.write(|tx| {
            let mut out = Vec::with_capacity(ids.len());
            for &id in ids {
                match status_of(tx, id)? {
                    None => out.push(ActionResult::NotFound { id }),
                    Some(Status::Running) => out.push(ActionResult::WrongState {
                        id,
                        status: Status::Running,
                    }),
                    Some(_) => {
                        tx.execute("DELETE FROM jobs WHERE id = ?1", [id])?;
                        out.push(ActionResult::Done { id });
                    }
                }
            }
            Ok(out)
        })
    }

    /// Dead jobs back to pending with a fresh budget; pending jobs made due now.
    pub fn retry(&self, ids: &[i64], max_retries: u32, now: Millis) -> Result<Vec<ActionResult>> {
        self.write(|tx| {
            let mut out = Vec::with_capacity(ids.len());
            for &id in ids {
                let Some(status) = status_of(tx, id)? else {
                    out.push(ActionResult::NotFound { id });
                    continue;
                };
                match status {
                    // Dead or cancelled: a fresh budget. Done: a re-fetch (a changed page is
                    // kept as a new version beside the old one).
                    Status::Dead | Status::Cancelled | Status::Done => {
                        revive(tx, id, max_retries, now)?;
                        out.push(ActionResult::Done { id });
                    }
                    Status::Pending => {
                        // "Fetch now": due at once, first in its lane, its lane first in its
                        // batch and its batch first in the rotation, so it is ahead of every
                        // other due job.
                        let (batch_id, host): (i64, String) = tx.query_row(
                            "SELECT batch_id, host FROM jobs WHERE id = ?1",
                            [id],
                            |r| Ok((r.get(0)?, r.get(1)?)),
                        )?;
                        let cursor: Option<(Millis, i64)> = tx
                            .prepare_cached(LANE_CURSOR)?
                            .query_row(params![batch_id, host], |r| Ok((r.get(0)?, r.get(1)?)))
                            .optional()?;
                        let head = match cursor {
                            Some(cursor) => lane_head(tx, batch_id, &host, cursor)?,
                            None => None,
                        };
                        let run_at = now.min(head.map_or(now, |(_, at)| at) - 1);
                        tx.execute(
                            "UPDATE jobs SET run_at = ?2, updated_at = ?3 WHERE id = ?1",
                            params![id, run_at, now],
                        )?;
                        // The batch's cursor goes to just before the job's lane.
                        tx.execute(
                            "UPDATE batches SET open = 1, served_seq = coalesce((SELECT min(served_seq) \
                                 FROM batches INDEXED BY batches_rotation WHERE open = 1), 0) - 1, \
                                 lane_after_seq = (SELECT seq FROM lanes WHERE batch_id = ?1 AND host = ?2), \
                                 lane_after_host = '' \
                             WHERE id = ?1",
                            params![batch_id, host],
                        )?;
                        out.push(ActionResult::Done { id });
                    }
                    other => out.push(ActionResult::WrongState { id, status: other }),
                }
            }
            Ok(out)
        })
    }

    /// Every dead job (optionally of one host) back to pending with a fresh budget.
    pub fn retry_dead(
        &self,
        host: Option<&str>,
        max_retries: u32,
        now: Millis,
    ) -> Result<Vec<i64>> {
        self.write(|tx| {
            let ids = {
                let mut stmt = tx.prepare(DEAD_JOBS_SQL)?;
                stmt.query_map([host.map(str::to_lowercase)], |r| r.get::<_, i64>(0))?
                    .collect::<rusqlite::Result<Vec<_>>>()?
            };
            for &id in &ids {
                revive(tx, id, max_retries, now)?;
            }
            Ok(ids)
        })
    }

    /// Cancel pending or running jobs. A running job's worker finds its lease gone and drops
    /// the result.
    pub fn cancel(&self, ids: &[i64], now: Millis) -> Result<Vec<ActionResult>> {
        self.write(|tx| {
            let mut out = Vec::with_capacity(ids.len());
            for &id in ids {
                match status_of(tx, id)? {
                    None => out.push(ActionResult::NotFound { id }),
                    Some(Status::Pending | Status::Running) => {
                        // The attempt in flight, if any, ends here.
                        tx.execute(
                            "INSERT INTO attempt_log (job_id, number, started_at, finished_at, outcome, worker) \
                             SELECT id, attempts, coalesce(attempt_started_at, updated_at), ?2, 'cancelled', \
                                 lease_owner FROM jobs WHERE id = ?1 AND status = 'running'",
                            params![id, now],
                        )?;
                        tx.execute(
                            "UPDATE jobs SET status = 'cancelled', lease_owner = NULL, lease_until = NULL, \
                             updated_at = ?2, finished_at = ?2, attempt_started_at = NULL WHERE id = ?1",
                            params![id, now],
                        )?;
                        out.push(ActionResult::Done { id });
                    }
                    Some(other) => out.push(ActionResult::WrongState { id, status: other }),
                }
            }
            Ok(out)
        })
    }

    /// Dead jobs not yet announced, marked announced in the same transaction, so each death is
    /// announced at most once even across restarts and several windows.
    pub fn take_unannounced_deaths(&self, limit: u32) -> Result<Vec<Job>> {
        // Called after every burst of job events: most bursts hold no death, and those should
        // not take the write lock the workers need.
        let any = {
            let conn = self.conn()?;
            conn.prepare_cached(
                "SELECT 1 FROM jobs WHERE status = 'dead' AND dead_notified = 0 LIMIT 1",
            )?
            .exists([])?
        };
        if !any {
            return Ok(Vec::new());
        }
        self.write(|tx| {
            let ids: Vec<i64> = tx
                .prepare_cached(
                    "SELECT id FROM jobs WHERE status = 'dead' AND dead_notified = 0 ORDER BY id LIMIT ?1",
                )?
                .query_map([limit], |r| r.get(0))?
                .collect::<rusqlite::Result<_>>()?;
            let mut out = Vec::with_capacity(ids.len());
            for id in ids {
                tx.execute("UPDATE jobs SET dead_notified = 1 WHERE id = ?1", [id])?;
                if let Some(job) = load_job(tx, id)? {
                    out.push(job);
                }
            }
            Ok(out)
        })
    }
}

#[cfg(test)]
mod tests {}
