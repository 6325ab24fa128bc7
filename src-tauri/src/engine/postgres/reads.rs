//! What the window, `gleaner list` and `stats` read, on PostgreSQL.

use tokio_postgres::types::ToSql;

use super::Db;
use super::hosts::{StoredOffline, StoredStall, hosts, member_setting, setting};
use super::rows::{Conn, JOB_COLUMNS, job_from_row, load_job};
use crate::engine::clock::Millis;
use crate::engine::policy::HostIntervals;
use crate::engine::queue::{
    Attempt, BatchInfo, HostCount, Job, JobFilter, PausedHost, Result, Stage, Stats, Status,
};

const HISTORY_SQL: &str = "SELECT number, started_at, finished_at, outcome, kind, http_status, \
         error, delay_ms, worker, stage FROM ( \
     SELECT number, started_at, finished_at, outcome, kind, http_status, error, delay_ms, \
         worker, stage, id, 0 AS late FROM attempt_log WHERE job_id = $1 \
     UNION ALL \
     SELECT attempts, attempt_started_at, finished_at, 'success', NULL, http_status, NULL, NULL, \
         finished_by, stage, NULL, 1 FROM jobs \
         WHERE id = $1 AND status = 'done' AND attempt_started_at IS NOT NULL \
     UNION ALL \
     SELECT attempts, coalesce(attempt_started_at, updated_at), NULL, NULL, NULL, NULL, NULL, \
         NULL, lease_owner, stage, NULL, 2 FROM jobs WHERE id = $1 AND status = 'running') a \
     ORDER BY number, late, id";

/// The WHERE clause for `filter` (without paging) after `head`, and its arguments.
fn filter_sql(filter: &JobFilter, head: &str) -> (String, Vec<Box<dyn ToSql + Sync + Send>>) {
    let mut sql = format!("{head} FROM jobs j LEFT JOIN batches b ON b.id = j.batch_id WHERE true");
    let mut args: Vec<Box<dyn ToSql + Sync + Send>> = Vec::new();
    let mut arg = |sql: &mut String, clause: &str, v: Box<dyn ToSql + Sync + Send>| {
        args.push(v);
        sql.push_str(&clause.replace('?', &format!("${}", args.len())));
    };
    if let Some(s) = filter.status {
        arg(
            &mut sql,
            " AND j.status = ?",
            Box::new(s.as_str().to_string()),
        );
    }
    if let Some(h) = filter.host.as_deref().filter(|h| !h.is_empty()) {
        arg(
            &mut sql,
            " AND j.host = ?",
            Box::new(h.trim().to_lowercase()),
        );
    }
    if let Some(b) = filter.batch_id {
        arg(&mut sql, " AND j.batch_id = ?", Box::new(b));
    }
    if let Some(q) = filter
        .search
        .as_deref()
        .map(str::trim)
        .filter(|q| !q.is_empty())
    {
        let pat = format!(
            "%{}%",
            q.replace('\\', "\\\\")
                .replace('%', "\\%")
                .replace('_', "\\_")
        );
        arg(
            &mut sql,
            " AND (j.url ILIKE ? ESCAPE '\\' OR j.title ILIKE ? ESCAPE '\\')",
            Box::new(pat),
        );
    }
    (sql, args)
}

fn refs(args: &[Box<dyn ToSql + Sync + Send>]) -> Vec<&(dyn ToSql + Sync)> {
    args.iter()
        .map(|a| a.as_ref() as &(dyn ToSql + Sync))
        .collect()
}

pub(super) async fn next_wakeup(
    db: &Db,
    now: Millis,
    intervals: &HostIntervals,
) -> Result<Option<Millis>> {
    let c = db.client().await?;
    let mut spaced: Option<Millis> = None;
    if let Some(longest) = intervals.values().max().filter(|d| !d.is_zero()) {
        let since = now - longest.as_millis() as Millis;
        let rows = c
            .query_rows(
                "SELECT host, last_start_at FROM hosts WHERE last_start_at > $1",
                &[&since],
            )
            .await?;
        for r in &rows {
            let (host, at): (String, Millis) = (r.get(0), r.get(1));
            if let Some(next) = intervals
                .get(&host)
                .map(|d| at + d.as_millis() as Millis)
                .filter(|&t| t > now)
            {
                spaced = Some(spaced.map_or(next, |s| s.min(next)));
            }
        }
    }
    // Leases of other members' jobs are waits too: a member that is gone has its jobs taken
    // back when its lease ends, and an idle worker must be awake then to do it.
    let rows = c
        .query_rows(
            "SELECT (SELECT min(run_at) FROM jobs WHERE status = 'pending' AND run_at > $1), \
                 (SELECT min(paused_until) FROM hosts WHERE paused_until > $1 AND NOT manual_pause), \
                 (SELECT min(lease_until) + 1 FROM jobs WHERE status = 'running' AND lease_until >= $1)",
            &[&now],
        )
        .await?;
    let (due, pause, lease): (Option<Millis>, Option<Millis>, Option<Millis>) = rows
        .first()
        .map_or((None, None, None), |r| (r.get(0), r.get(1), r.get(2)));
    Ok([due, pause, lease, spaced].into_iter().flatten().min())
}

pub(super) async fn has_active(db: &Db) -> Result<bool> {
    let c = db.client().await?;
    let rows = c
        .query_rows(
            "SELECT 1 FROM jobs WHERE status IN ('pending', 'running') LIMIT 1",
            &[],
        )
        .await?;
    Ok(!rows.is_empty())
}

pub(super) async fn job(db: &Db, id: i64) -> Result<Option<Job>> {
    load_job(&db.client().await?, id).await
}

pub(super) async fn attempts(db: &Db, job_id: i64) -> Result<Vec<Attempt>> {
    let rows = db
        .client()
        .await?
        .query_rows(HISTORY_SQL, &[&job_id])
        .await?;
    Ok(rows
        .iter()
        .map(|r| Attempt {
            number: u32::try_from(r.get::<_, i32>(0)).unwrap_or(0),
            started_at: r.get::<_, Option<Millis>>(1).unwrap_or(0),
            finished_at: r.get(2),
            outcome: r.get(3),
            kind: r.get(4),
            http_status: r
                .get::<_, Option<i32>>(5)
                .and_then(|s| u16::try_from(s).ok()),
            error: r.get(6),
            delay_ms: r.get(7),
            worker: r.get(8),
            stage: r.get::<_, Option<&str>>(9).and_then(Stage::parse),
        })
        .collect())
}

pub(super) async fn list_jobs(db: &Db, filter: &JobFilter) -> Result<Vec<Job>> {
    let (mut sql, mut args) = filter_sql(filter, &format!("SELECT {JOB_COLUMNS}"));
    if let Some(before) = filter.before_id {
        args.push(Box::new(before));
        sql.push_str(&format!(" AND j.id < ${}", args.len()));
    }
    sql.push_str(" ORDER BY j.id DESC");
    if let Some(limit) = filter.limit {
        args.push(Box::new(i64::from(limit)));
        sql.push_str(&format!(" LIMIT ${}", args.len()));
    }
    let rows = db.client().await?.query_rows(&sql, &refs(&args)).await?;
    Ok(rows.iter().map(job_from_row).collect())
}

pub(super) async fn count_jobs(db: &Db, filter: &JobFilter) -> Result<u64> {
    let (sql, args) = filter_sql(filter, "SELECT count(*)");
    let rows = db.client().await?.query_rows(&sql, &refs(&args)).await?;
    Ok(rows.first().map_or(0, |r| r.get::<_, i64>(0) as u64))
}

pub(super) async fn job_hosts(db: &Db, limit: u32) -> Result<Vec<HostCount>> {
    let rows = db
        .client()
        .await?
        .query_rows(
            "SELECT host, count(*) AS n FROM jobs GROUP BY host ORDER BY n DESC, host LIMIT $1",
            &[&i64::from(limit)],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| HostCount {
            host: r.get(0),
            jobs: r.get::<_, i64>(1) as u64,
        })
        .collect())
}

pub(super) async fn batches(db: &Db, limit: u32) -> Result<Vec<BatchInfo>> {
    let rows = db
        .client()
        .await?
        .query_rows(
            "SELECT b.id, b.name, b.source, b.created_at, \
                 (SELECT count(*) FROM jobs j WHERE j.batch_id = b.id) \
             FROM batches b ORDER BY b.id DESC LIMIT $1",
            &[&i64::from(limit)],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| BatchInfo {
            id: r.get(0),
            name: r.get(1),
            source: r.get(2),
            created_at: r.get(3),
            jobs: r.get::<_, i64>(4) as u64,
        })
        .collect())
}

pub(super) async fn stats(db: &Db, now: Millis) -> Result<Stats> {
    let c = db.client().await?;
    let mut stats = Stats::default();
    let rows = c
        .query_rows("SELECT status, count(*) FROM jobs GROUP BY status", &[])
        .await?;
    for r in &rows {
        let n = r.get::<_, i64>(1) as u64;
        match Status::parse(r.get(0)) {
            Some(Status::Pending) => stats.pending = n,
            Some(Status::Running) => stats.running = n,
            Some(Status::Done) => stats.done = n,
            Some(Status::Dead) => stats.dead = n,
            Some(Status::Cancelled) => stats.cancelled = n,
            None => {}
        }
        stats.total += n;
    }
    let rows = c
        .query_rows(
            "SELECT count(*), min(run_at) FROM jobs WHERE status = 'pending' AND run_at > $1",
            &[&now],
        )
        .await?;
    if let Some(r) = rows.first() {
        stats.waiting = r.get::<_, i64>(0) as u64;
        stats.next_retry_at = r.get(1);
    }
    let rows = c
        .query_rows(
            "SELECT host, paused_until, pause_reason, manual_pause FROM hosts \
             WHERE manual_pause OR paused_until > $1 ORDER BY host",
            &[&now],
        )
        .await?;
    stats.paused_hosts = rows
        .iter()
        .map(|r| PausedHost {
            host: r.get(0),
            paused_until: r.get(1),
            reason: r.get(2),
            manual: r.get(3),
        })
        .collect();
    stats.queue_paused = setting(&c, "queue_paused").await?.as_deref() == Some("true");
    stats.offline = StoredOffline::read(member_setting(&c, &db.member, "offline").await?);
    stats.stalled = StoredStall::read(member_setting(&c, &db.member, "stalled").await?);
    stats.throttled_hosts = hosts(&c, now)
        .await?
        .into_iter()
        .filter(|h| h.concurrency_limit.is_some())
        .collect();
    Ok(stats)
}
