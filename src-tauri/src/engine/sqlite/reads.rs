//! What the window, `gleaner list` and `stats` read.

use rusqlite::OptionalExtension;

use crate::engine::clock::Millis;
use crate::engine::policy::HostIntervals;

use super::Store;
use super::hosts::{offline_state, queue_paused};
use super::rows::{JOB_COLUMNS, job_from_row, load_job};
use crate::engine::queue::{
    Attempt, BatchInfo, HostCount, Job, JobFilter, PausedHost, Result, Stage, Stats, Status,
};

/// A job's attempts: the finished ones (the `attempts` view, migration 0014), then the one in
/// flight, which lives on the running job's row.
const HISTORY_SQL: &str = "SELECT * FROM (SELECT number, started_at, finished_at, outcome, kind, \
         http_status, error, delay_ms, worker, stage, id FROM attempts WHERE job_id = ?1 \
     UNION ALL \
     SELECT attempts, coalesce(attempt_started_at, updated_at), NULL, NULL, NULL, NULL, \
         NULL, NULL, lease_owner, stage, NULL FROM jobs WHERE id = ?1 AND status = 'running') \
     ORDER BY number, id IS NULL, id";

/// Reads by status. Finished jobs have an index of their own (`jobs_done`), running ones are
/// read from `jobs_running_host`, and `jobs_status` holds the others (migrations 0013 and
/// 0015). SQLite uses a partial index only for a query whose WHERE clause repeats the index's
/// condition, hence `status <> 'done' AND status <> 'running'`.
///
/// Whether any job is pending or running.
const ACTIVE_JOB_SQL: &str = "SELECT 1 FROM jobs INDEXED BY jobs_running_host WHERE status = 'running' \
     UNION ALL SELECT 1 FROM jobs WHERE status = 'pending' \
         AND status <> 'done' AND status <> 'running' \
     LIMIT 1";

/// Jobs per status.
const STATUS_COUNTS_SQL: &str = "SELECT status, count(*) FROM jobs \
         WHERE status <> 'done' AND status <> 'running' GROUP BY status \
     UNION ALL SELECT 'running', count(*) FROM jobs INDEXED BY jobs_running_host \
         WHERE status = 'running' \
     UNION ALL SELECT 'done', count(*) FROM jobs WHERE status = 'done'";

/// `head` plus the WHERE clause for `filter` (without paging), and its arguments.
fn filter_sql(filter: &JobFilter, head: &str) -> (String, Vec<rusqlite::types::Value>) {
    // Running jobs are few (the jobs in flight), so reading them from their index and sorting
    // them is cheap; without `INDEXED BY` SQLite would rather walk every job in id order.
    let jobs = if filter.status == Some(Status::Running) {
        "jobs j INDEXED BY jobs_running_host"
    } else {
        "jobs j"
    };
    let mut sql =
        format!("{head} FROM {jobs} LEFT JOIN batches b ON b.id = j.batch_id WHERE 1 = 1");
    let mut args: Vec<rusqlite::types::Value> = Vec::new();
    match filter.status {
        // Each way matches the condition of the partial index it can use (migrations 0013 and
        // 0015).
        Some(Status::Done) => sql.push_str(" AND j.status = 'done'"),
        Some(Status::Running) => sql.push_str(" AND j.status = 'running'"),
        Some(s) => {
            sql.push_str(" AND j.status = ? AND j.status <> 'done' AND j.status <> 'running'");
            args.push(s.as_str().to_string().into());
        }
        None => {}
    }
    if let Some(h) = filter.host.as_deref().filter(|h| !h.is_empty()) {
        sql.push_str(" AND j.host = ?");
        args.push(h.trim().to_lowercase().into());
    }
    if let Some(b) = filter.batch_id {
        sql.push_str(" AND j.batch_id = ?");
        args.push(b.into());
    }
    if let Some(q) = filter
        .search
        .as_deref()
        .map(str::trim)
        .filter(|q| !q.is_empty())
    {
        sql.push_str(" AND (j.url LIKE ? ESCAPE '\\' OR j.title LIKE ? ESCAPE '\\')");
        let pat = format!(
            "%{}%",
            q.replace('\\', "\\\\")
                .replace('%', "\\%")
                .replace('_', "\\_")
        );
        args.push(pat.clone().into());
        args.push(pat.into());
    }
    (sql, args)
}

impl Store {
    /// When the next job could become eligible: the earliest future due time or host pause end.
    pub fn next_wakeup(&self, now: Millis, intervals: &HostIntervals) -> Result<Option<Millis>> {
        let conn = self.conn()?;
        // A host with an interval whose last request started less than that ago: its next
        // start (whether it has a job due or not; waking for nothing costs one empty claim).
        // One read of the hosts started within the longest interval, not one per host.
        let mut spaced: Option<Millis> = None;
        if let Some(longest) = intervals.values().max().filter(|d| !d.is_zero()) {
            let mut stmt = conn
                .prepare_cached("SELECT host, last_start_at FROM hosts WHERE last_start_at > ?1")?;
            let rows = stmt.query_map([now - longest.as_millis() as Millis], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, Millis>(1)?))
            })?;
            for row in rows {
                let (host, at) = row?;
                if let Some(next) = intervals
                    .get(&host)
                    .map(|d| at + d.as_millis() as Millis)
                    .filter(|&t| t > now)
                {
                    spaced = Some(spaced.map_or(next, |s| s.min(next)));
                }
            }
        }
        let due: Option<Millis> = conn.query_row(
            "SELECT min((SELECT min(j.run_at) FROM jobs j INDEXED BY jobs_batch_due \
                 WHERE j.batch_id = b.id AND j.status = 'pending' AND j.run_at > ?1)) \
             FROM batches b INDEXED BY batches_rotation WHERE b.open = 1",
            [now],
            |r| r.get(0),
        )?;
        let pause: Option<Millis> = conn.query_row(
            "SELECT min(paused_until) FROM hosts WHERE paused_until > ?1 AND manual_pause = 0",
            [now],
            |r| r.get(0),
        )?;
        Ok([due, pause, spaced].into_iter().flatten().min())
    }

    /// True while any job is pending or running (what `run --until-idle` waits for).
    pub fn has_active(&self) -> Result<bool> {
        let conn = self.conn()?;
        Ok(conn
            .query_row(ACTIVE_JOB_SQL, [], |_| Ok(()))
            .optional()?
            .is_some())
    }

    pub fn job(&self, id: i64) -> Result<Option<Job>> {
        let conn = self.conn()?;
        Ok(load_job(&conn, id)?)
    }

    /// A job's attempt history, oldest first, ending with the attempt in flight if it runs.
    pub fn attempts(&self, job_id: i64) -> Result<Vec<Attempt>> {
        let conn = self.conn()?;
        let mut stmt = conn.prepare_cached(HISTORY_SQL)?;
        let rows = stmt
            .query_map([job_id], |r| {
                Ok(Attempt {
                    number: r.get(0)?,
                    started_at: r.get(1)?,
                    finished_at: r.get(2)?,
                    outcome: r.get(3)?,
                    kind: r.get(4)?,
                    http_status: r.get(5)?,
                    error: r.get(6)?,
                    delay_ms: r.get(7)?,
                    worker: r.get(8)?,
                    stage: r
                        .get::<_, Option<String>>(9)?
                        .as_deref()
                        .and_then(Stage::parse),
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    }

    /// Jobs newest first, narrowed by `filter`.
    pub fn list_jobs(&self, filter: &JobFilter) -> Result<Vec<Job>> {
        let (mut sql, mut args) = filter_sql(filter, &format!("SELECT {JOB_COLUMNS}"));
        if let Some(before) = filter.before_id {
            sql.push_str(" AND j.id < ?");
            args.push(before.into());
        }
        sql.push_str(" ORDER BY j.id DESC");
        if let Some(limit) = filter.limit {
            sql.push_str(" LIMIT ?");
            args.push(i64::from(limit).into());
        }
        let conn = self.conn()?;
        let mut stmt = conn.prepare_cached(&sql)?;
        let rows = stmt
            .query_map(rusqlite::params_from_iter(args), job_from_row)?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    }

    /// How many jobs match `filter`, ignoring its paging.
    pub fn count_jobs(&self, filter: &JobFilter) -> Result<u64> {
        let (sql, args) = filter_sql(filter, "SELECT count(*)");
        let conn = self.conn()?;
        let mut stmt = conn.prepare_cached(&sql)?;
        Ok(stmt.query_row(rusqlite::params_from_iter(args), |r| r.get(0))?)
    }

    /// Hosts with jobs, most jobs first, for the host filter.
    pub fn job_hosts(&self, limit: u32) -> Result<Vec<HostCount>> {
        let conn = self.conn()?;
        let mut stmt = conn.prepare_cached(
            "SELECT host, count(*) AS n FROM jobs GROUP BY host ORDER BY n DESC, host LIMIT ?1",
        )?;
        let rows = stmt
            .query_map([limit], |r| {
                Ok(HostCount {
                    host: r.get(0)?,
                    jobs: r.get(1)?,
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    }

    /// The newest batches with their job counts, for the batch filter.
    pub fn batches(&self, limit: u32) -> Result<Vec<BatchInfo>> {
        let conn = self.conn()?;
        let mut stmt = conn.prepare_cached(
            "SELECT b.id, b.name, b.source, b.created_at, \
                 (SELECT count(*) FROM jobs j WHERE j.batch_id = b.id) \
             FROM batches b ORDER BY b.id DESC LIMIT ?1",
        )?;
        let rows = stmt
            .query_map([limit], |r| {
                Ok(BatchInfo {
                    id: r.get(0)?,
                    name: r.get(1)?,
                    source: r.get(2)?,
                    created_at: r.get(3)?,
                    jobs: r.get(4)?,
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    }

    pub fn stats(&self, now: Millis) -> Result<Stats> {
        let conn = self.conn()?;
        let mut stats = Stats::default();
        {
            let mut stmt = conn.prepare_cached(STATUS_COUNTS_SQL)?;
            let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, u64>(1)?)))?;
            for row in rows {
                let (status, n) = row?;
                match Status::parse(&status) {
                    Some(Status::Pending) => stats.pending = n,
                    Some(Status::Running) => stats.running = n,
                    Some(Status::Done) => stats.done = n,
                    Some(Status::Dead) => stats.dead = n,
                    Some(Status::Cancelled) => stats.cancelled = n,
                    None => {}
                }
                stats.total += n;
            }
        }
        let (waiting, next): (u64, Option<Millis>) = conn.query_row(
            "SELECT coalesce(sum((SELECT count(*) FROM jobs j INDEXED BY jobs_batch_due \
                     WHERE j.batch_id = b.id AND j.status = 'pending' AND j.run_at > ?1)), 0), \
                 min((SELECT min(j.run_at) FROM jobs j INDEXED BY jobs_batch_due \
                     WHERE j.batch_id = b.id AND j.status = 'pending' AND j.run_at > ?1)) \
             FROM batches b INDEXED BY batches_rotation WHERE b.open = 1",
            [now],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        stats.waiting = waiting;
        stats.next_retry_at = next;
        let mut stmt = conn.prepare_cached(
            "SELECT host, paused_until, pause_reason, manual_pause FROM hosts \
             WHERE manual_pause != 0 OR paused_until > ?1 ORDER BY host",
        )?;
        stats.paused_hosts = stmt
            .query_map([now], |r| {
                Ok(PausedHost {
                    host: r.get(0)?,
                    paused_until: r.get(1)?,
                    reason: r.get(2)?,
                    manual: r.get::<_, i64>(3)? != 0,
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        drop(stmt);
        stats.queue_paused = queue_paused(&conn)?;
        stats.offline = offline_state(&conn)?;
        stats.stalled = super::stall::stalled_in(&conn)?;
        drop(conn);
        stats.throttled_hosts = self
            .hosts(now)?
            .into_iter()
            .filter(|h| h.concurrency_limit.is_some())
            .collect();
        Ok(stats)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::engine::queue::{JobFilter, Status};
    use crate::engine::sqlite::Store;
    use crate::engine::sqlite::actions::DEAD_JOBS_SQL;
    use crate::engine::sqlite::testing::query_plan;

    #[test]
    fn a_jobs_history_is_read_by_its_key() {
        // The `attempts` view is a union (migration 0014): the job's key must reach both of
        // its parts, or each history read would scan every job and every attempt.
        let s = Store::open_in_memory().expect("store");
        let plan = query_plan(&s.conn().expect("conn"), HISTORY_SQL, [7]);
        assert!(
            plan.contains("SEARCH attempt_log USING INDEX attempts_job (job_id=?)"),
            "{plan}"
        );
        assert_eq!(
            plan.matches("SEARCH jobs USING INTEGER PRIMARY KEY (rowid=?)")
                .count(),
            2,
            "{plan}"
        );
        assert!(
            !plan
                .lines()
                .any(|l| l == "SCAN jobs" || l == "SCAN attempt_log"),
            "{plan}"
        );
    }

    #[test]
    fn reads_by_status_use_the_status_indexes() {
        // `jobs_status`, `jobs_done` and `jobs_running_host` are partial (migrations 0013 and
        // 0015): a query that does not repeat an index's condition would scan every job.
        let s = Store::open_in_memory().expect("store");
        let conn = s.conn().expect("conn");
        let plan_of = |sql: &str, args: Vec<rusqlite::types::Value>| {
            query_plan(&conn, sql, rusqlite::params_from_iter(args))
        };
        let mut cases = vec![
            (
                ACTIVE_JOB_SQL.to_string(),
                vec![],
                vec!["jobs_running_host", "jobs_status"],
            ),
            (
                DEAD_JOBS_SQL.to_string(),
                vec![rusqlite::types::Value::Null],
                vec!["jobs_status"],
            ),
            (
                STATUS_COUNTS_SQL.to_string(),
                vec![],
                vec!["jobs_status", "jobs_running_host", "jobs_done"],
            ),
        ];
        for status in [
            Status::Pending,
            Status::Running,
            Status::Done,
            Status::Dead,
            Status::Cancelled,
        ] {
            let filter = JobFilter {
                status: Some(status),
                ..JobFilter::default()
            };
            let (sql, args) = filter_sql(&filter, "SELECT j.id");
            let index = match status {
                Status::Done => "jobs_done",
                Status::Running => "jobs_running_host",
                _ => "jobs_status",
            };
            cases.push((
                format!("{sql} ORDER BY j.id DESC LIMIT 50"),
                args,
                vec![index],
            ));
        }
        for (sql, args, indexes) in cases {
            let plan = plan_of(&sql, args);
            for index in indexes {
                assert!(plan.contains(index), "{sql}:\n{plan}");
            }
            assert!(
                !plan.lines().any(|l| l == "SCAN j" || l == "SCAN jobs"),
                "{sql}:\n{plan}"
            );
        }
    }
}
