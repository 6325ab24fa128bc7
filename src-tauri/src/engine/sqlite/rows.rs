//! Reading a job's row, shared by every concern of the SQLite queue.

use rusqlite::{Connection, OptionalExtension, Row, Transaction};

use crate::engine::clock::Millis;
use crate::engine::policy::{Counters, ErrorClass, FailureKind};

use crate::engine::queue::{Job, Result, Stage, Status};

/// The columns [`job_from_row`] reads, in its order; a query that selects more puts them after.
pub(super) const JOB_COLUMNS: &str = "j.id, j.url, j.final_url, j.host, j.status, j.attempts, j.max_retries, \
     j.run_at, j.error_class, j.error, j.http_status, j.title, j.document, j.content_type, \
     j.batch_id, b.name, j.created_at, j.updated_at, j.finished_at, j.net_failures, \
     j.server_failures, j.rate_limits, j.budget_started_at, j.blocked_failures, j.meta, j.stage, \
     j.rate_limited_since";

/// How many columns [`JOB_COLUMNS`] has.
pub(super) const JOB_WIDTH: usize = 27;

pub(super) fn job_from_row(row: &Row<'_>) -> rusqlite::Result<Job> {
    let status_text: String = row.get(4)?;
    let status = Status::parse(&status_text).unwrap_or(Status::Pending);
    let attempts: u32 = row.get(5)?;
    let max_retries: u32 = row.get(6)?;
    let run_at: Millis = row.get(7)?;
    let class: Option<String> = row.get(8)?;
    let net: u32 = row.get(19)?;
    let server: u32 = row.get(20)?;
    let rate: u32 = row.get(21)?;
    Ok(Job {
        id: row.get(0)?,
        url: row.get(1)?,
        final_url: row.get(2)?,
        host: row.get(3)?,
        status,
        attempts,
        max_retries,
        // The failure that found the budget spent killed the job instead of buying a retry.
        retries_used: (net + server).saturating_sub(u32::from(
            status == Status::Dead && class.as_deref() == Some("transient"),
        )),
        // A job gone on to its next stage has not failed: it waits for nothing but its turn.
        retry_after: (status == Status::Pending && attempts > 0 && class.is_some())
            .then_some(run_at),
        error_class: class.as_deref().and_then(ErrorClass::parse),
        error: row.get(9)?,
        http_status: row.get(10)?,
        title: row.get(11)?,
        document: row.get(12)?,
        content_type: row.get(13)?,
        batch_id: row.get(14)?,
        batch: row.get(15)?,
        created_at: row.get(16)?,
        updated_at: row.get(17)?,
        finished_at: row.get(18)?,
        // A value this version cannot read is shown as no reference rather than failing a read.
        reference: row
            .get::<_, Option<String>>(24)?
            .and_then(|m| serde_json::from_str(&m).ok()),
        stage: row
            .get::<_, Option<String>>(25)?
            .as_deref()
            .and_then(Stage::parse),
        run_at,
        counters: Counters {
            attempts,
            max_retries,
            net_failures: net,
            server_failures: server,
            rate_limits: rate,
            blocked_failures: row.get(23)?,
            budget_started_at: row.get(22)?,
            rate_limited_since: row.get(26)?,
        },
    })
}

pub(super) fn load_job(conn: &Connection, id: i64) -> rusqlite::Result<Option<Job>> {
    // Cached: every failure reads its row back (and so did every completion once), and
    // parsing this join each time cost more than the rest of the completion.
    static SQL: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        format!(
            "SELECT {JOB_COLUMNS} FROM jobs j LEFT JOIN batches b ON b.id = j.batch_id WHERE j.id = ?1"
        )
    });
    conn.prepare_cached(&SQL)?
        .query_row([id], job_from_row)
        .optional()
}

pub(super) fn kind_str(kind: FailureKind) -> String {
    serde_json::to_value(kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| format!("{kind:?}"))
}

/// A job's status, or `None` if there is no such job.
pub(super) fn status_of(tx: &Transaction<'_>, id: i64) -> Result<Option<Status>> {
    let status: Option<String> = tx
        .query_row("SELECT status FROM jobs WHERE id = ?1", [id], |r| r.get(0))
        .optional()?;
    Ok(status.as_deref().and_then(Status::parse))
}
