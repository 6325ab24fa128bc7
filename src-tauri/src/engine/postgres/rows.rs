//! Reading a job's row, shared by every concern of the PostgreSQL queue.

use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use crate::engine::policy::{Counters, ErrorClass};
use crate::engine::queue::{Job, Result, Stage, Status};

/// The columns [`job_from_row`] reads, in its order; a query that selects more puts them after.
pub(super) const JOB_COLUMNS: &str = "j.id, j.url, j.final_url, j.host, j.status, j.attempts, \
     j.max_retries, j.run_at, j.error_class, j.error, j.http_status, j.title, j.document, \
     j.content_type, j.batch_id, b.name, j.created_at, j.updated_at, j.finished_at, \
     j.net_failures, j.server_failures, j.rate_limits, j.budget_started_at, j.blocked_failures, \
     j.meta::text, j.stage, j.rate_limited_since";

/// How many columns [`JOB_COLUMNS`] has.
pub(super) const JOB_WIDTH: usize = 27;

fn count(row: &Row, i: usize) -> u32 {
    u32::try_from(row.get::<_, i32>(i)).unwrap_or(0)
}

pub(super) fn job_from_row(row: &Row) -> Job {
    let status = Status::parse(row.get(4)).unwrap_or(Status::Pending);
    let attempts = count(row, 5);
    let max_retries = count(row, 6);
    let run_at: i64 = row.get(7);
    let class: Option<&str> = row.get(8);
    let (net, server, rate) = (count(row, 19), count(row, 20), count(row, 21));
    Job {
        id: row.get(0),
        url: row.get(1),
        final_url: row.get(2),
        host: row.get(3),
        status,
        attempts,
        max_retries,
        // As in SQLite: the failure that found the budget spent killed the job.
        retries_used: (net + server).saturating_sub(u32::from(
            status == Status::Dead && class == Some("transient"),
        )),
        retry_after: (status == Status::Pending && attempts > 0 && class.is_some())
            .then_some(run_at),
        error_class: class.and_then(ErrorClass::parse),
        error: row.get(9),
        http_status: row
            .get::<_, Option<i32>>(10)
            .and_then(|s| u16::try_from(s).ok()),
        title: row.get(11),
        document: row.get(12),
        content_type: row.get(13),
        batch_id: row.get(14),
        batch: row.get(15),
        created_at: row.get(16),
        updated_at: row.get(17),
        finished_at: row.get(18),
        reference: row
            .get::<_, Option<&str>>(24)
            .and_then(|m| serde_json::from_str(m).ok()),
        stage: row.get::<_, Option<&str>>(25).and_then(Stage::parse),
        run_at,
        counters: Counters {
            attempts,
            max_retries,
            net_failures: net,
            server_failures: server,
            rate_limits: rate,
            blocked_failures: count(row, 23),
            budget_started_at: row.get(22),
            rate_limited_since: row.get(26),
        },
    }
}

/// Statements that read jobs run on a transaction or a plain connection alike.
pub(super) trait Conn: Sync {
    async fn query_rows(&self, sql: &str, args: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>>;
    async fn exec(&self, sql: &str, args: &[&(dyn ToSql + Sync)]) -> Result<u64>;
    /// Statements without parameters, in the simple protocol (`BEGIN`, `SET LOCAL`).
    async fn batch(&self, sql: &str) -> Result<()>;
}

impl Conn for deadpool_postgres::Transaction<'_> {
    async fn batch(&self, sql: &str) -> Result<()> {
        Ok(self.batch_execute(sql).await?)
    }
    async fn query_rows(&self, sql: &str, args: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>> {
        let stmt = self.prepare_cached(sql).await?;
        Ok(self.query(&stmt, args).await?)
    }
    async fn exec(&self, sql: &str, args: &[&(dyn ToSql + Sync)]) -> Result<u64> {
        let stmt = self.prepare_cached(sql).await?;
        Ok(self.execute(&stmt, args).await?)
    }
}

impl Conn for deadpool_postgres::Object {
    async fn batch(&self, sql: &str) -> Result<()> {
        Ok(self.batch_execute(sql).await?)
    }
    async fn query_rows(&self, sql: &str, args: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>> {
        let stmt = self.prepare_cached(sql).await?;
        Ok(self.query(&stmt, args).await?)
    }
    async fn exec(&self, sql: &str, args: &[&(dyn ToSql + Sync)]) -> Result<u64> {
        let stmt = self.prepare_cached(sql).await?;
        Ok(self.execute(&stmt, args).await?)
    }
}

/// A job with its batch's name, or `None` if there is no such job.
pub(super) async fn load_job(c: &impl Conn, id: i64) -> Result<Option<Job>> {
    static SQL: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        format!(
            "SELECT {JOB_COLUMNS} FROM jobs j LEFT JOIN batches b ON b.id = j.batch_id \
             WHERE j.id = $1"
        )
    });
    Ok(c.query_rows(&SQL, &[&id]).await?.first().map(job_from_row))
}

/// A job's status, or `None` if there is no such job.
pub(super) async fn status_of(c: &impl Conn, id: i64) -> Result<Option<Status>> {
    let rows = c
        .query_rows("SELECT status FROM jobs WHERE id = $1", &[&id])
        .await?;
    Ok(rows.first().and_then(|r| Status::parse(r.get(0))))
}

impl<T: Conn> Conn for &T {
    async fn query_rows(&self, sql: &str, args: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>> {
        (**self).query_rows(sql, args).await
    }
    async fn exec(&self, sql: &str, args: &[&(dyn ToSql + Sync)]) -> Result<u64> {
        (**self).exec(sql, args).await
    }
    async fn batch(&self, sql: &str) -> Result<()> {
        (**self).batch(sql).await
    }
}
