//! The durable queue in SQLite (WAL). Every state change happens in one `BEGIN IMMEDIATE`
//! transaction and is reported only after it commits, so what the logs and the UI say is what
//! the database holds.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use rusqlite::{Connection, OptionalExtension, Row, Transaction, TransactionBehavior, params};
use rusqlite_migration::{M, Migrations};
use serde::Serialize;

use super::clock::Millis;
use super::policy::{self, Counters, Decision, ErrorClass, Failure, FailureKind, Policy};

mod clock_jump;
mod stall;

pub use clock_jump::JUMP_THRESHOLD_MS;
pub use stall::{StallKind, StallState};

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// Not a `source`: its message holds the migration's whole SQL text.
    #[error("cannot bring the database's schema up to date: {}", migration_cause(.0))]
    Migration(rusqlite_migration::Error),
    #[error(
        "{} is not a Gleaner queue, or it is damaged; move it aside and Gleaner starts a new, \
         empty queue there",
        .0.display()
    )]
    NotADatabase(PathBuf),
    #[error(
        "this queue was last opened by a newer Gleaner (schema version {found}; this one knows \
         up to {known}); update Gleaner, or give another --data-dir"
    )]
    NewerSchema { found: i64, known: usize },
    #[error(
        "cannot take the lock that keeps two processes from upgrading {path} at once: {source}"
    )]
    MigrationLock {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot create the data folder {path}: {source}")]
    DataDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("stored settings are not valid: {0}")]
    Settings(#[from] serde_json::Error),
    #[error("the database lock was poisoned by a panic")]
    Poisoned,
}

pub type Result<T> = std::result::Result<T, StoreError>;

impl From<rusqlite_migration::Error> for StoreError {
    fn from(e: rusqlite_migration::Error) -> Self {
        Self::Migration(e)
    }
}

/// A migration's failure without the migration's whole SQL text, which rusqlite_migration
/// puts in its message.
fn migration_cause(e: &rusqlite_migration::Error) -> String {
    match e {
        rusqlite_migration::Error::RusqliteError { err, .. } => err.to_string(),
        other => other.to_string(),
    }
}

/// The database file inside a data folder. The window and every CLI process share it.
pub fn db_path(data_dir: &Path) -> PathBuf {
    data_dir.join("gleaner.db")
}

/// Schema versions, applied in order. Never edit a released one: add the next.
pub fn migrations() -> Migrations<'static> {
    Migrations::new(vec![
        M::up(include_str!("../../migrations/0001_queue.sql")),
        M::up(include_str!(
            "../../migrations/0002_notifications_and_host_politeness.sql"
        )),
        M::up(include_str!("../../migrations/0003_fair_batches.sql")),
        M::up(include_str!("../../migrations/0004_blocked_pages.sql")),
        M::up(include_str!("../../migrations/0005_job_browsing.sql")),
        M::up(include_str!("../../migrations/0006_host_due.sql")),
        M::up(include_str!("../../migrations/0007_host_lanes.sql")),
        M::up(include_str!("../../migrations/0008_lane_indexes_only.sql")),
        M::up(include_str!(
            "../../migrations/0009_attempt_written_once.sql"
        ))
        .foreign_key_check(),
        M::up(include_str!("../../migrations/0010_lane_cursor.sql")),
        M::up(include_str!(
            "../../migrations/0011_lane_upkeep_without_statement_journals.sql"
        )),
        M::up(include_str!("../../migrations/0012_lane_generation.sql")),
        M::up(include_str!(
            "../../migrations/0013_finished_jobs_apart.sql"
        )),
        M::up(include_str!(
            "../../migrations/0014_success_kept_in_the_job_row.sql"
        )),
        M::up(include_str!(
            "../../migrations/0015_running_jobs_out_of_the_status_index.sql"
        )),
    ])
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Pending,
    Running,
    Done,
    Dead,
    Cancelled,
}

impl Status {
    pub const ALL: [Status; 5] = [
        Status::Pending,
        Status::Running,
        Status::Done,
        Status::Dead,
        Status::Cancelled,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::Running => "running",
            Status::Done => "done",
            Status::Dead => "dead",
            Status::Cancelled => "cancelled",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|st| st.as_str() == s)
    }
}

/// A job as stored, with times in unix ms. Serializes to the design's JSON job object.
#[derive(Debug, Clone, Serialize)]
pub struct Job {
    pub id: i64,
    pub url: String,
    pub final_url: Option<String>,
    pub host: String,
    pub status: Status,
    pub attempts: u32,
    pub max_retries: u32,
    /// Retries spent from the budget of `max_retries`: the transient failures since the job
    /// was queued or last retried by hand. Rate-limit waits, tries cut short while the
    /// machine was offline, and block pages (which have a small budget of their own) spend
    /// none, so it can be well below `attempts`.
    pub retries_used: u32,
    /// The due time of a pending job that has failed before, else null.
    #[serde(serialize_with = "ser_opt_time")]
    pub retry_after: Option<Millis>,
    pub error_class: Option<ErrorClass>,
    pub error: Option<String>,
    pub http_status: Option<u16>,
    pub title: Option<String>,
    pub document: Option<String>,
    pub content_type: Option<String>,
    pub batch: Option<String>,
    pub batch_id: Option<i64>,
    #[serde(serialize_with = "ser_time")]
    pub created_at: Millis,
    #[serde(serialize_with = "ser_time")]
    pub updated_at: Millis,
    #[serde(serialize_with = "ser_opt_time")]
    pub finished_at: Option<Millis>,
    #[serde(skip)]
    pub run_at: Millis,
    #[serde(skip)]
    pub counters: Counters,
}

/// One row of a job's attempt history.
#[derive(Debug, Clone, Serialize)]
pub struct Attempt {
    pub number: u32,
    #[serde(serialize_with = "ser_time")]
    pub started_at: Millis,
    #[serde(serialize_with = "ser_opt_time")]
    pub finished_at: Option<Millis>,
    /// success | transient | rate_limited | fatal | interrupted; null while in flight.
    pub outcome: Option<String>,
    pub kind: Option<String>,
    pub http_status: Option<u16>,
    pub error: Option<String>,
    pub delay_ms: Option<i64>,
    pub worker: Option<String>,
}

/// What the worker holds while a job is in flight.
#[derive(Debug, Clone)]
pub struct Claimed {
    pub job_id: i64,
    pub url: String,
    pub host: String,
    pub attempt: u32,
    /// When this attempt began; its `attempts` row is written when it ends.
    pub started_at: Millis,
    pub owner: String,
    /// The host was held below the per-host limit after a rate limit when the job started:
    /// its success counts towards winning a connection back.
    pub throttled: bool,
}

/// How a claimed job's attempt ended, for [`Store::step`].
#[derive(Debug, Clone)]
pub enum Finish {
    Success(Success),
    /// `unit` is the jitter sample in [-1, 1].
    Failure {
        failure: Failure,
        unit: f64,
    },
    /// Failed while this machine was offline: recorded in the history, but the job keeps its
    /// retry budget and is due again as soon as the network is back.
    Offline(Failure),
    /// Fetched, but this machine could not keep it (disk full, library unwritable): nobody's
    /// fault on the web, so the job goes back with its budget untouched.
    Local(Failure),
}

/// A finished job as committed by [`Store::step`].
#[derive(Debug, Clone)]
pub enum Settled {
    /// Committed as done. The job is not read back: what a log line needs is in the claim and
    /// the success, and reading the row back was 9% of a drain at 4 jobs in flight.
    Done,
    Failed(Failed),
    /// Back to pending, budget untouched (see [`Finish::Offline`]).
    Offline(Job),
    /// Back to pending, budget untouched (see [`Finish::Local`]).
    Local(Job),
    /// The lease was lost meanwhile (cancelled, or recovered after expiry): the attempt is
    /// recorded, the job row is left alone.
    Discarded,
}

/// What [`Store::recover`] can tell of a lease's owner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Liveness {
    /// Running: its jobs are its own, expired lease or not.
    Alive,
    /// Gone: its jobs come back now.
    Gone,
    /// Not ours to judge (another machine's id): its lease decides.
    Unknown,
}

/// What a worker asks [`Store::step`] to claim.
#[derive(Debug, Clone)]
pub struct ClaimRequest<'a> {
    pub owner: &'a str,
    pub lease: Duration,
    pub per_host: u32,
    /// Free slots: claim at most this many.
    pub max: usize,
}

/// The result of one [`Store::step`]: every finished job as committed, then the new claims.
#[derive(Debug)]
pub struct Step {
    pub settled: Vec<(Claimed, Finish, Settled)>,
    pub claimed: Vec<Claimed>,
}

/// A new job for [`Store::enqueue`].
#[derive(Debug, Clone)]
pub struct NewJob {
    pub url: String,
    pub url_key: String,
    pub host: String,
}

/// The batch that new jobs join.
#[derive(Debug, Clone, Copy)]
enum Joins<'a> {
    Existing(i64),
    /// A batch made in the same transaction, and only if a job is new: an intake whose links
    /// are all duplicates leaves no empty batch behind.
    New {
        name: &'a str,
        source: &'a str,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "result", rename_all = "lowercase")]
pub enum Enqueued {
    Queued {
        id: i64,
        url: String,
    },
    Duplicate {
        id: i64,
        url: String,
        status: Status,
    },
}

/// The outcome of a successful fetch, written with the `done` transition.
#[derive(Debug, Clone, Default)]
pub struct Success {
    pub http_status: u16,
    pub final_url: String,
    pub title: Option<String>,
    pub document: Option<String>,
    pub content_type: Option<String>,
    pub sha256: Option<String>,
}

/// A failed attempt after its transaction committed: the row as stored and why.
#[derive(Debug, Clone)]
pub struct Failed {
    pub job: Job,
    pub failure: Failure,
    pub decision: Decision,
    /// The "now" the transaction used: `job.run_at - at` is the committed wait.
    pub at: Millis,
}

/// Filters for listing jobs; every field narrows the list.
#[derive(Debug, Clone, Default)]
pub struct JobFilter {
    pub status: Option<Status>,
    /// Exact host, lower case.
    pub host: Option<String>,
    pub batch_id: Option<i64>,
    /// Substring of the URL or title.
    pub search: Option<String>,
    /// Only ids below this (keyset paging, newest first).
    pub before_id: Option<i64>,
    pub limit: Option<u32>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Stats {
    pub pending: u64,
    pub running: u64,
    pub done: u64,
    pub dead: u64,
    pub cancelled: u64,
    pub total: u64,
    /// Pending jobs whose due time is in the future (backing off).
    pub waiting: u64,
    #[serde(serialize_with = "ser_opt_time")]
    pub next_retry_at: Option<Millis>,
    pub paused_hosts: Vec<PausedHost>,
    /// The whole queue is paused: no job starts in any process.
    pub queue_paused: bool,
    /// Hosts held below the per-host limit after a rate limit (adaptive politeness).
    pub throttled_hosts: Vec<HostState>,
    /// Set while a worker finds this machine offline.
    pub offline: Option<OfflineState>,
    /// Set while a worker waits out a problem of this machine's (a full disk, a database
    /// that cannot be written).
    pub stalled: Option<StallState>,
}

/// A worker's finding that this machine is offline: every attempt in a short window failed to
/// reach the network. While it lasts, the worker starts no jobs, spends no retry budgets and
/// probes the network with backoff.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OfflineState {
    #[serde(serialize_with = "ser_time")]
    pub since: Millis,
    #[serde(serialize_with = "ser_time")]
    pub next_probe_at: Millis,
    /// Probes that failed so far.
    pub probes: u32,
    /// The failure that says so, in plain words.
    pub reason: String,
    /// The worker that found it (its process may have ended since).
    pub worker: String,
}

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

/// A host's scheduling state, for `gleaner hosts` and the UI.
#[derive(Debug, Clone, Serialize)]
pub struct HostState {
    pub host: String,
    #[serde(serialize_with = "ser_opt_time")]
    pub paused_until: Option<Millis>,
    pub reason: Option<String>,
    pub manual_pause: bool,
    /// Connections allowed while the host recovers from a rate limit (null: the policy's).
    pub concurrency_limit: Option<u32>,
    pub pending: u64,
}

/// A host and how many jobs it has, for the window's host filter.
#[derive(Debug, Clone, Serialize)]
pub struct HostCount {
    pub host: String,
    pub jobs: u64,
}

/// A batch (one paste, drop or `add`) and how many jobs it holds.
#[derive(Debug, Clone, Serialize)]
pub struct BatchInfo {
    pub id: i64,
    pub name: String,
    pub source: String,
    #[serde(serialize_with = "ser_time")]
    pub created_at: Millis,
    pub jobs: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct PausedHost {
    pub host: String,
    #[serde(serialize_with = "ser_opt_time")]
    pub paused_until: Option<Millis>,
    pub reason: Option<String>,
    pub manual: bool,
}

/// The result of a manual action on one job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "result")]
pub enum ActionResult {
    Done { id: i64 },
    NotFound { id: i64 },
    WrongState { id: i64, status: Status },
}

pub struct Store {
    conn: Mutex<Connection>,
    path: Option<PathBuf>,
    checkpointer: Mutex<Option<Checkpointer>>,
    /// Keys of lanes this connection read ahead; only the claim uses it, inside a write.
    lane_keys: Mutex<LaneKeys>,
    /// The clock offset this store last saw recorded ([`Store::reconcile_clock`]).
    clock_anchor: Mutex<Option<clock_jump::Anchor>>,
}

/// A thread with its own connection that checkpoints the WAL, so the worker's commits do not
/// stop to copy thousands of pages back into the database file (measured: the claim's p99
/// at 1M jobs was 12 ms with checkpoints on the commit path). Once per 256 MiB of WAL a
/// commit copies the rest itself, so that the WAL can start again (see
/// [`Store::checkpoint_in_background_resetting_at`]).
struct Checkpointer {
    stop: std::sync::mpsc::Sender<()>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        let _ = self.stop.send(());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// How often the background checkpointer runs.
const CHECKPOINT_EVERY: Duration = Duration::from_millis(200);

/// WAL frames (4 KiB pages) after which a writer with a background checkpointer checkpoints
/// on its own commit, so that the WAL starts again from its beginning: 256 MiB. That commit
/// syncs the WAL written since the background thread last did (70-150 ms during the 1M-job
/// claims), so this bounds the file and is set high enough to be rare: at 64 MiB the 1M-job
/// claim's p99 rose from 0.22-0.33 ms to 0.34-0.50 ms; at 256 MiB it did not move.
const WAL_RESET_FRAMES: i64 = 65_536;

/// The size a WAL file is cut back to when it starts again (`journal_size_limit`), for
/// connections that checkpoint on SQLite's own schedule (every 4,000 frames).
const WAL_KEPT_BYTES: i64 = 64 * 1024 * 1024;

/// The bytes a WAL file of `frames` frames takes: a 32-byte header, then per frame a 24-byte
/// header and a 4 KiB page.
fn wal_bytes(frames: i64) -> i64 {
    32 + frames * (24 + 4096)
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("path", &self.path).finish()
    }
}

/// The claim's reads, in the order [`claim_many`] uses them. Each is a seek or an ordered walk
/// of an index; a unit test checks that none of them sorts (no temp B-tree).
///
/// Open batches with a due job, least recently served first.
const CLAIM_BATCHES: &str = "SELECT b.id, b.lane_after_seq, b.lane_after_host \
     FROM batches b INDEXED BY batches_rotation WHERE b.open = 1 \
       AND EXISTS (SELECT 1 FROM jobs j INDEXED BY jobs_batch_due \
           WHERE j.batch_id = b.id AND j.status = 'pending' AND j.run_at <= ?1) \
     ORDER BY b.served_seq, b.id";
/// The next lanes of a batch in cycle order after a keyset position and up to a bound.
const CLAIM_LANES: &str = "SELECT l.seq, l.host, l.cur_run_at, l.cur_id, l.generation FROM lanes l INDEXED BY lanes_rotation \
     WHERE l.batch_id = ?1 AND (l.seq, l.host) > (?2, ?3) AND (l.seq, l.host) <= (?5, ?6) \
     ORDER BY l.seq, l.host LIMIT ?4";
/// A lane's head, its earliest pending job, is looked for from the lane's cursor (cur_run_at,
/// cur_id), before which none of the lane's jobs is pending (migration 0010). In two seeks:
/// SQLite cannot seek an index to a (column, rowid) pair, and the jobs of one paste share one
/// due time, so a single range on `run_at` would walk every finished job of the lane.
///
/// First at the cursor's due time, from its job on.
const LANE_HEAD_AT: &str = "SELECT id, run_at FROM jobs INDEXED BY jobs_lane \
     WHERE batch_id = ?1 AND host = ?2 AND run_at = ?3 AND id >= ?4 AND status = 'pending' \
     ORDER BY id LIMIT 1";
/// Then after the cursor's due time.
const LANE_HEAD_AFTER: &str = "SELECT id, run_at FROM jobs INDEXED BY jobs_lane \
     WHERE batch_id = ?1 AND host = ?2 AND run_at > ?3 AND status = 'pending' \
     ORDER BY run_at, id LIMIT 1";
/// The keys of a lane's jobs from a position on, in claim order, whatever their status: the
/// index alone answers, with no read of the rows. First at the position's due time, from its
/// job on; then after that due time.
const LANE_KEYS_AT: &str = "SELECT run_at, id FROM jobs INDEXED BY jobs_lane \
     WHERE batch_id = ?1 AND host = ?2 AND run_at = ?3 AND id >= ?4 ORDER BY id LIMIT ?5";
const LANE_KEYS_AFTER: &str = "SELECT run_at, id FROM jobs INDEXED BY jobs_lane \
     WHERE batch_id = ?1 AND host = ?2 AND run_at > ?3 ORDER BY run_at, id LIMIT ?4";
/// How many keys one read of a lane fetches.
const LANE_KEYS_READ: usize = 16;
/// A lane's cursor.
const LANE_CURSOR: &str = "SELECT cur_run_at, cur_id FROM lanes WHERE batch_id = ?1 AND host = ?2";
/// Move a lane's cursor past the job just claimed from it. A job of the lane that becomes
/// pending again before the cursor moves it back (the trigger and `enqueue`, migration 0011).
const LANE_ADVANCE: &str =
    "UPDATE lanes SET cur_run_at = ?3, cur_id = ?4 WHERE batch_id = ?1 AND host = ?2";
/// A host's pause and own limit, and how many of its jobs run now (in every process).
const CLAIM_HOST: &str = "SELECT \
         (SELECT manual_pause != 0 OR coalesce(paused_until > ?2, 0) FROM hosts WHERE host = ?1), \
         (SELECT concurrency_limit FROM hosts WHERE host = ?1), \
         (SELECT count(*) FROM jobs INDEXED BY jobs_running_host WHERE status = 'running' AND host = ?1)";

/// Start a claimed job's attempt, if the job is still pending under the key the claim read.
const CLAIM_JOB_SQL: &str = "UPDATE jobs SET status = 'running', lease_owner = ?2, \
         lease_until = ?3, attempts = attempts + 1, updated_at = ?4, attempt_started_at = ?4 \
     WHERE id = ?1 AND status = 'pending' AND batch_id = ?5 AND host = ?6 AND run_at = ?7";
/// Record a success, if the job is still this worker's. The row keeps the attempt: when it
/// started, and who ran it (migration 0014).
const COMPLETE_SQL: &str = "UPDATE jobs SET status = 'done', lease_owner = NULL, \
         finished_by = lease_owner, lease_until = NULL, final_url = ?3, http_status = ?4, \
         title = ?5, document = ?6, content_type = ?7, sha256 = ?8, error_class = NULL, \
         error = NULL, updated_at = ?9, finished_at = ?9 \
     WHERE id = ?1 AND status = 'running' AND lease_owner = ?2 AND attempts = ?10";
/// Write an attempt's history row when it ends.
const END_ATTEMPT_SQL: &str = "INSERT INTO attempt_log (job_id, number, started_at, finished_at, \
         outcome, kind, http_status, error, delay_ms, worker) \
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)";

/// A job's attempts: the finished ones (the `attempts` view, migration 0014), then the one in
/// flight, which lives on the running job's row.
const HISTORY_SQL: &str = "SELECT * FROM (SELECT number, started_at, finished_at, outcome, kind, \
         http_status, error, delay_ms, worker, id FROM attempts WHERE job_id = ?1 \
     UNION ALL \
     SELECT attempts, coalesce(attempt_started_at, updated_at), NULL, NULL, NULL, NULL, \
         NULL, NULL, lease_owner, NULL FROM jobs WHERE id = ?1 AND status = 'running') \
     ORDER BY number, id IS NULL, id";

/// Remember the last lane a batch served.
const SERVED_LANE_SQL: &str =
    "UPDATE batches SET lane_after_seq = ?2, lane_after_host = ?3 WHERE id = ?1";
/// Move a batch to the back of the rotation, unless it is there already. A batch that is
/// alone, or was served last, keeps its place: rewriting `served_seq` would write a page of
/// `batches_rotation` in every claim's commit for an order that does not change (one of the
/// 9.3 WAL frames of a 4-job commit), and it is a separate statement because SQLite rewrites
/// an index whose column an UPDATE sets, even to the same value.
const TO_BACK_SQL: &str = "UPDATE batches SET served_seq = 1 + coalesce( \
         (SELECT max(served_seq) FROM batches INDEXED BY batches_rotation WHERE open = 1), 0) \
     WHERE id = ?1 AND EXISTS (SELECT 1 FROM batches o INDEXED BY batches_rotation \
         WHERE o.open = 1 AND (o.served_seq, o.id) > (batches.served_seq, batches.id))";

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
/// Dead jobs, of one host or of all.
const DEAD_JOBS_SQL: &str = "SELECT id FROM jobs WHERE status = 'dead' \
     AND status <> 'done' AND status <> 'running' AND (?1 IS NULL OR host = ?1) ORDER BY id";
/// Jobs per status.
const STATUS_COUNTS_SQL: &str = "SELECT status, count(*) FROM jobs \
         WHERE status <> 'done' AND status <> 'running' GROUP BY status \
     UNION ALL SELECT 'running', count(*) FROM jobs INDEXED BY jobs_running_host \
         WHERE status = 'running' \
     UNION ALL SELECT 'done', count(*) FROM jobs WHERE status = 'done'";

const JOB_COLUMNS: &str = "j.id, j.url, j.final_url, j.host, j.status, j.attempts, j.max_retries, \
     j.run_at, j.error_class, j.error, j.http_status, j.title, j.document, j.content_type, \
     j.batch_id, b.name, j.created_at, j.updated_at, j.finished_at, j.net_failures, \
     j.server_failures, j.rate_limits, j.budget_started_at, j.blocked_failures";

fn job_from_row(row: &Row<'_>) -> rusqlite::Result<Job> {
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
        retry_after: (status == Status::Pending && attempts > 0).then_some(run_at),
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
        run_at,
        counters: Counters {
            attempts,
            max_retries,
            net_failures: net,
            server_failures: server,
            rate_limits: rate,
            blocked_failures: row.get(23)?,
            budget_started_at: row.get(22)?,
        },
    })
}

fn load_job(conn: &Connection, id: i64) -> rusqlite::Result<Option<Job>> {
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

impl Store {
    /// Open (creating if needed) the database at `path` and bring its schema up to date.
    pub fn open(path: &Path) -> Result<Self> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|source| StoreError::DataDir {
                path: dir.to_path_buf(),
                source,
            })?;
        }
        let mut conn = Connection::open(path)?;
        let not_a_database = |e: StoreError| match e {
            StoreError::Sqlite(rusqlite::Error::SqliteFailure(f, _))
                if f.code == rusqlite::ErrorCode::NotADatabase =>
            {
                StoreError::NotADatabase(path.to_path_buf())
            }
            other => other,
        };
        configure(&conn).map_err(|e| not_a_database(e.into()))?;
        migrate(&mut conn, Some(path)).map_err(not_a_database)?;
        Ok(Self {
            conn: Mutex::new(conn),
            path: Some(path.to_path_buf()),
            checkpointer: Mutex::new(None),
            lane_keys: Mutex::default(),
            clock_anchor: Mutex::default(),
        })
    }

    /// A private in-memory database through the same code path, for tests.
    pub fn open_in_memory() -> Result<Self> {
        let mut conn = Connection::open_in_memory()?;
        configure(&conn)?;
        migrate(&mut conn, None)?;
        Ok(Self {
            conn: Mutex::new(conn),
            path: None,
            checkpointer: Mutex::new(None),
            lane_keys: Mutex::default(),
            clock_anchor: Mutex::default(),
        })
    }

    /// Durability of this connection's commits: `NORMAL` (the default, safe against process
    /// crashes) or `FULL` (an fsync per commit, safe against power loss too).
    pub fn set_synchronous_full(&self, full: bool) -> Result<()> {
        let conn = self.conn()?;
        conn.pragma_update(None, "synchronous", if full { "FULL" } else { "NORMAL" })?;
        Ok(())
    }

    /// Checkpoint the WAL from a background thread instead of on this connection's commits.
    /// For a long-lived writer (the worker); short CLI commands keep SQLite's automatic
    /// checkpoints. Does nothing for an in-memory database or if already running.
    pub fn checkpoint_in_background(&self) -> Result<()> {
        self.checkpoint_in_background_resetting_at(WAL_RESET_FRAMES)
    }

    /// [`Self::checkpoint_in_background`], with this connection's own checkpoint at
    /// `reset_frames` WAL frames. The background checkpoint alone never lets the WAL start
    /// again while a worker commits without a pause: SQLite rewinds the WAL only in a write
    /// transaction that begins when every frame is already in the database file, and each
    /// commit lands while the background copy runs. A 100,000-job drain grew it to 1.3 GB.
    /// The commit that passes `reset_frames` copies what the background thread has not yet,
    /// and the next transaction rewinds.
    fn checkpoint_in_background_resetting_at(&self, reset_frames: i64) -> Result<()> {
        let Some(path) = self.path.clone() else {
            return Ok(());
        };
        let mut slot = self.checkpointer.lock().map_err(|_| StoreError::Poisoned)?;
        if slot.is_some() {
            return Ok(());
        }
        // Checkpoints only: the store that started it has migrated the schema.
        let conn = Connection::open(&path)?;
        configure(&conn)?;
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("gleaner-checkpoint".into())
            .spawn(move || {
                while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                    stopped.recv_timeout(CHECKPOINT_EVERY)
                {
                    // PASSIVE never waits for readers or writers; what it cannot copy now it
                    // copies next time.
                    if let Err(e) = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))
                    {
                        tracing::debug!(error = %e, "background checkpoint skipped");
                    }
                }
            })
            .map_err(|source| StoreError::DataDir {
                path: path.clone(),
                source,
            })?;
        let conn = self.conn()?;
        conn.pragma_update(None, "wal_autocheckpoint", reset_frames)?;
        // The WAL file keeps the size it will grow back to. Cut back after each rewind, a
        // drain grew it again page by page, and the file system allocated, zeroed and later
        // freed every block: keeping it made a drain at 4 jobs in flight 20-30% faster
        // (BENCHMARKS.md §3). A quarter more leaves room for the commits that pass the mark
        // before a checkpoint completes.
        conn.pragma_update(None, "journal_size_limit", wal_bytes(reset_frames * 5 / 4))?;
        drop(conn);
        *slot = Some(Checkpointer {
            stop,
            thread: Some(thread),
        });
        Ok(())
    }

    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    fn conn(&self) -> Result<MutexGuard<'_, Connection>> {
        self.conn.lock().map_err(|_| StoreError::Poisoned)
    }

    fn write<T>(&self, f: impl FnOnce(&Transaction<'_>) -> Result<T>) -> Result<T> {
        let mut conn = self.conn()?;
        let started = Instant::now();
        loop {
            match conn.transaction_with_behavior(TransactionBehavior::Immediate) {
                Ok(tx) => {
                    let out = f(&tx)?;
                    tx.commit()?;
                    return Ok(out);
                }
                // SQLite's busy handler is not fair: with several processes writing, one can
                // wait past the busy timeout while others keep taking the lock. Ask again
                // rather than fail the job's bookkeeping (a failed claim would stop a worker).
                Err(e) if is_busy(&e) && started.elapsed() < WRITE_PATIENCE => {
                    tracing::warn!(
                        waited_ms = started.elapsed().as_millis() as u64,
                        "the queue database is busy (another process is writing); still waiting"
                    );
                    std::thread::sleep(Duration::from_millis(
                        10 + (started.elapsed().subsec_nanos() % 40) as u64,
                    ));
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    pub fn create_batch(&self, name: &str, source: &str, now: Millis) -> Result<i64> {
        self.write(|tx| {
            tx.execute(
                "INSERT INTO batches (name, source, created_at) VALUES (?1, ?2, ?3)",
                params![name, source, now],
            )?;
            Ok(tx.last_insert_rowid())
        })
    }

    /// Queue new jobs in one transaction. A URL whose normalized form is already queued is
    /// reported as a duplicate with the existing job's id, and not queued again. Without a
    /// batch, the new jobs make one named after the time, from source `api`.
    pub fn enqueue(
        &self,
        batch_id: Option<i64>,
        jobs: &[NewJob],
        max_retries: u32,
        now: Millis,
    ) -> Result<Vec<Enqueued>> {
        let api_name;
        let joins = match batch_id {
            Some(id) => Joins::Existing(id),
            None => {
                api_name = format!("api {}", rfc3339(now));
                Joins::New {
                    name: &api_name,
                    source: "api",
                }
            }
        };
        Ok(self
            .write(|tx| enqueue_in(tx, joins, jobs, max_retries, now))?
            .1)
    }

    /// One intake (a paste, a drop, `gleaner add`): a new batch `name` from `source`, and its
    /// jobs, in one transaction, so no failure or idle worker can leave an empty batch or close
    /// it before its jobs arrive. The batch is made only if a job is new; its id is returned.
    pub fn enqueue_batch(
        &self,
        name: &str,
        source: &str,
        jobs: &[NewJob],
        max_retries: u32,
        now: Millis,
    ) -> Result<(Option<i64>, Vec<Enqueued>)> {
        self.write(|tx| enqueue_in(tx, Joins::New { name, source }, jobs, max_retries, now))
    }

    /// Atomically move one eligible job to `running` under `owner`'s lease.
    ///
    /// Eligible: pending, due, its host not paused and below `per_host` running jobs (counted
    /// across every process on this database). The claim counts the attempt up front, so a job
    /// that crashes the worker every time still runs out of attempts instead of looping.
    pub fn claim(
        &self,
        owner: &str,
        now: Millis,
        lease: Duration,
        per_host: u32,
    ) -> Result<Option<Claimed>> {
        let request = ClaimRequest {
            owner,
            lease,
            per_host,
            max: 1,
        };
        let step = self.step(&mut Vec::new(), &Policy::default(), now, Some(&request))?;
        Ok(step.claimed.into_iter().next())
    }

    /// Mark a claimed job done. Returns `None` if the lease was lost meanwhile (cancelled, or
    /// recovered by another worker after expiry): then nothing is written to the job.
    pub fn complete(
        &self,
        claimed: &Claimed,
        success: &Success,
        policy: &Policy,
        now: Millis,
    ) -> Result<Option<Job>> {
        self.write(|tx| {
            if complete_in(tx, claimed, success, policy, now)? {
                Ok(load_job(tx, claimed.job_id)?)
            } else {
                Ok(None)
            }
        })
    }

    /// Record a failed attempt and decide, inside the same transaction, whether the job waits
    /// for a retry or is dead. `unit` is the jitter sample in [-1, 1].
    pub fn fail(
        &self,
        claimed: &Claimed,
        failure: &Failure,
        policy: &Policy,
        now: Millis,
        unit: f64,
    ) -> Result<Option<Failed>> {
        self.write(|tx| fail_in(tx, claimed, failure, policy, now, unit))
    }

    /// Group commit: record the outcomes of finished jobs and claim up to `claim.max` more, all
    /// in one transaction, so a busy worker pays one commit (one fsync at `synchronous=FULL`)
    /// for a whole group of jobs instead of two per job. The results come back in the order
    /// of `finished`; nothing is reported before the transaction commits.
    ///
    /// `finished` is emptied only once the transaction has committed: on an error the
    /// outcomes are still there to commit later, and nothing fetched is lost.
    pub fn step(
        &self,
        finished: &mut Vec<(Claimed, Finish)>,
        policy: &Policy,
        now: Millis,
        claim: Option<&ClaimRequest<'_>>,
    ) -> Result<Step> {
        let (results, claimed) = self.write(|tx| {
            let mut settled = Vec::with_capacity(finished.len());
            for (claimed, finish) in finished.iter() {
                let result = match finish {
                    Finish::Success(success) => {
                        if complete_in(tx, claimed, success, policy, now)? {
                            Settled::Done
                        } else {
                            Settled::Discarded
                        }
                    }
                    Finish::Failure { failure, unit } => {
                        fail_in(tx, claimed, failure, policy, now, *unit)?
                            .map_or(Settled::Discarded, Settled::Failed)
                    }
                    Finish::Offline(failure) => {
                        put_back_in(tx, claimed, failure, now, PutBack::Offline)?
                            .map_or(Settled::Discarded, Settled::Offline)
                    }
                    Finish::Local(failure) => {
                        put_back_in(tx, claimed, failure, now, PutBack::Local)?
                            .map_or(Settled::Discarded, Settled::Local)
                    }
                };
                settled.push(result);
            }
            let mut claimed = Vec::new();
            if let Some(request) = claim.filter(|r| r.max > 0)
                && !queue_paused(tx)?
            {
                let mut lane_keys = self.lane_keys.lock().map_err(|_| StoreError::Poisoned)?;
                claimed = claim_many(tx, request, now, &mut lane_keys)?;
            }
            Ok((settled, claimed))
        })?;
        let settled = std::mem::take(finished)
            .into_iter()
            .zip(results)
            .map(|((claimed, finish), result)| (claimed, finish, result))
            .collect();
        Ok(Step { settled, claimed })
    }

    /// Put back jobs whose worker is gone: `liveness(owner)` says the owning process no longer
    /// exists, or it cannot tell and the lease has expired. A worker known to be alive keeps
    /// its jobs whatever the wall clock says (a laptop waking from sleep finds every lease
    /// expired). The interrupted attempt still counts.
    pub fn recover(
        &self,
        policy: &Policy,
        now: Millis,
        liveness: impl Fn(&str) -> Liveness,
    ) -> Result<Vec<Failed>> {
        self.write(|tx| {
            close_finished_batches(tx)?;
            let mut stmt = tx.prepare(&format!(
                "SELECT {JOB_COLUMNS}, j.lease_owner, j.lease_until, \
                     coalesce(j.attempt_started_at, j.updated_at) FROM jobs j INDEXED BY jobs_running_host \
                 LEFT JOIN batches b ON b.id = j.batch_id WHERE j.status = 'running'"
            ))?;
            let running = stmt
                .query_map([], |r| {
                    Ok((
                        job_from_row(r)?,
                        r.get::<_, Option<String>>(24)?,
                        r.get::<_, Option<Millis>>(25)?,
                        r.get::<_, Millis>(26)?,
                    ))
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            drop(stmt);
            let mut out = Vec::new();
            for (job, owner, lease_until, started_at) in running {
                let expired = lease_until.is_none_or(|t| t < now);
                let recover = match owner.as_deref().map_or(Liveness::Gone, &liveness) {
                    Liveness::Alive => false,
                    Liveness::Gone => true,
                    Liveness::Unknown => expired,
                };
                if !recover {
                    continue;
                }
                let attempt = AttemptRef {
                    job_id: job.id,
                    number: job.attempts,
                    started_at,
                    worker: owner.as_deref(),
                };
                let failure = Failure::new(
                    FailureKind::Interrupted,
                    if expired {
                        "interrupted: the worker's lease expired"
                    } else {
                        "interrupted: the worker stopped"
                    },
                );
                out.push(apply_failure(
                    tx,
                    &job,
                    Some(&attempt),
                    &failure,
                    policy,
                    now,
                    0.0,
                )?);
            }
            Ok(out)
        })
    }

    /// When the next job could become eligible: the earliest future due time or host pause end.
    pub fn next_wakeup(&self, now: Millis) -> Result<Option<Millis>> {
        let conn = self.conn()?;
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
        Ok(match (due, pause) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        })
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
        stats.stalled = stall::stalled_in(&conn)?;
        drop(conn);
        stats.throttled_hosts = self
            .hosts(now)?
            .into_iter()
            .filter(|h| h.concurrency_limit.is_some())
            .collect();
        Ok(stats)
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
        let conn = self.conn()?;
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

    /// Run a read-only check query, for tests and diagnostics (`PRAGMA integrity_check`).
    pub fn integrity_check(&self) -> Result<String> {
        let conn = self.conn()?;
        Ok(conn.query_row("PRAGMA integrity_check", [], |r| r.get(0))?)
    }
}

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

fn offline_state(conn: &Connection) -> Result<Option<OfflineState>> {
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

fn queue_paused(conn: &Connection) -> Result<bool> {
    let v: Option<String> = conn
        .prepare_cached("SELECT value FROM settings WHERE key = 'queue_paused'")?
        .query_row([], |r| r.get(0))
        .optional()?;
    Ok(v.as_deref() == Some("true"))
}

/// How long a write keeps asking for the lock, on top of each attempt's busy timeout.
const WRITE_PATIENCE: Duration = Duration::from_secs(60);

fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(e, rusqlite::Error::SqliteFailure(f, _)
        if matches!(f.code, rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked))
}

/// Put the database in WAL mode, waiting for another process that is doing the same.
///
/// On a new, empty database the switch writes the file's header: SQLite reads the header in
/// a read transaction, then upgrades it to a write. An upgrade never calls the busy handler
/// (two readers upgrading would wait for each other), so when another process holds the
/// lock the switch fails at once, busy timeout or not. Six `gleaner add` started together on
/// a new data folder hit this about once in 600 starts, and six threads opening one new file
/// at the same instant 48 times in 1,800.
fn switch_to_wal(conn: &Connection) -> rusqlite::Result<()> {
    let started = Instant::now();
    loop {
        match conn.pragma_update(None, "journal_mode", "WAL") {
            Err(e) if is_busy(&e) && started.elapsed() < WRITE_PATIENCE => {
                std::thread::sleep(Duration::from_millis(5));
            }
            other => return other,
        }
    }
}

fn configure(conn: &Connection) -> rusqlite::Result<()> {
    // 5 s covers another process's transaction; WAL lets the GUI read while a worker writes;
    // NORMAL is durable across process crashes (only an OS crash can lose the last commits).
    conn.busy_timeout(Duration::from_secs(5))?;
    switch_to_wal(conn)?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    // Measured with `cargo bench --bench queue`: the claim and completion spend their time in
    // B-tree pages. Checkpointing less often writes each hot page back once per 16 MB of WAL
    // instead of once per 4 MB. The page cache stays small (4 MB): a commit after a page split
    // walks the whole cache (SQLite parks a page at the lock-byte page number while it
    // renumbers siblings, and the commit then scans for pages past the end of the file), so
    // 32 MB made the 1M-job claim's p99 0.6 ms instead of 0.35 ms and the 100k drain 10%
    // slower.
    conn.pragma_update(None, "cache_size", -4_096)?;
    // No memory map. With one, SQLite looks every page up in the WAL index before it looks in
    // its cache, and a page written by every commit has one entry per commit in that index's
    // hash chain: 9% of a drain's time at 4 jobs in flight. Without it the 1M-job queue's
    // drain and claim were no slower, and its peak RSS was 187 MB instead of 297 MB.
    conn.pragma_update(None, "mmap_size", 0)?;
    // A write to `jobs` that the lane trigger fires on (migration 0011: one that sets `run_at`)
    // is a statement that may change several rows, so SQLite keeps a statement journal for it;
    // in a file, that is a write system call per page touched (it halved batched intake when
    // the trigger also fired on every insert).
    conn.pragma_update(None, "temp_store", "MEMORY")?;
    conn.pragma_update(None, "wal_autocheckpoint", 4_000)?;
    // A WAL that starts again keeps the size it grew to (in a long drain, or while a reader
    // held an old snapshot) for as long as a connection stays open; this cuts it back.
    conn.pragma_update(None, "journal_size_limit", WAL_KEPT_BYTES)?;
    conn.set_prepared_statement_cache_capacity(64);
    // Without the planner stability guarantee SQLite re-prepares a cached statement whenever
    // a bound value it peeked at changes (here the claim's `LIMIT ?`): 4% of a drain's time in
    // the profile. The claim's plans are fixed by `INDEXED BY` anyway.
    conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG,
        true,
    )?;
    Ok(())
}

/// Bring the schema up to date, then turn foreign keys on. They are off during the migrations:
/// a table rebuild (SQLite's procedure for schema changes ALTER TABLE cannot make) drops the
/// old table, which would cascade into its children. Migrations that rebuild run
/// `PRAGMA foreign_key_check` before they commit.
///
/// Processes that open the database at the same time take turns: rusqlite_migration reads the
/// schema version before its transaction, so two processes opening a new data folder together
/// both ran the first migration, and the later one failed with "table batches already exists"
/// (41 of 60 `gleaner stats` run six at a time on fresh folders). The turn is an exclusive lock
/// on a file beside the database (`db_path` + `-migrate.lock`), taken only when a migration is
/// due; the version is read again under it, so the process that waited finds the work done.
fn migrate(conn: &mut Connection, db: Option<&Path>) -> Result<()> {
    conn.pragma_update(None, "foreign_keys", "OFF")?;
    let migrations = migrations();
    let pending = migrations.pending_migrations(conn)?;
    if pending < 0 {
        let found: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
        return Err(StoreError::NewerSchema {
            found,
            known: (found + i64::from(pending)) as usize,
        });
    }
    if pending != 0 {
        let _turn = db.map(migration_turn).transpose()?;
        migrations.to_latest(conn)?;
    }
    conn.pragma_update(None, "foreign_keys", "ON")?;
    Ok(())
}

/// Wait for this process's turn to migrate the database at `db`; the turn lasts as long as the
/// returned file stays open, and the OS ends it if the process dies.
fn migration_turn(db: &Path) -> Result<std::fs::File> {
    let mut name = db.as_os_str().to_owned();
    name.push("-migrate.lock");
    let path = PathBuf::from(name);
    let lock_error = |source| StoreError::MigrationLock {
        path: path.clone(),
        source,
    };
    let file = super::open_lock_file(&path).map_err(lock_error)?;
    match file.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            tracing::info!(
                "another Gleaner process is upgrading the database {}; waiting for it",
                db.display()
            );
            file.lock().map_err(lock_error)?;
        }
        // A file system without locks (an NFS mount with `nolock`): migrate without a turn, as
        // before the lock existed, rather than not at all.
        Err(std::fs::TryLockError::Error(e)) => {
            tracing::warn!(error = %e, path = %path.display(), "cannot lock; migrating without waiting for other processes");
        }
    }
    Ok(file)
}

fn kind_str(kind: FailureKind) -> String {
    serde_json::to_value(kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| format!("{kind:?}"))
}

/// A job's status, or `None` if there is no such job.
fn status_of(tx: &Transaction<'_>, id: i64) -> Result<Option<Status>> {
    let status: Option<String> = tx
        .query_row("SELECT status FROM jobs WHERE id = ?1", [id], |r| r.get(0))
        .optional()?;
    Ok(status.as_deref().and_then(Status::parse))
}

fn revive(tx: &Transaction<'_>, id: i64, max_retries: u32, now: Millis) -> Result<()> {
    // A done job's success is kept in its row (migration 0014), which is about to be reset.
    tx.execute(
        "INSERT INTO attempt_log (job_id, number, started_at, finished_at, outcome, http_status, worker) \
         SELECT id, attempts, attempt_started_at, finished_at, 'success', http_status, finished_by \
         FROM jobs WHERE id = ?1 AND status = 'done' AND attempt_started_at IS NOT NULL",
        [id],
    )?;
    // The last error goes too: it was the verdict on the old budget ("…; retry budget of 2
    // spent"), and on a job queued again it reads as if the job had died again. The attempt
    // history keeps every failure.
    tx.execute(
        "UPDATE jobs SET status = 'pending', run_at = ?2, max_retries = ?3, net_failures = 0, \
             server_failures = 0, rate_limits = 0, blocked_failures = 0, budget_started_at = ?2, updated_at = ?2, \
             finished_at = NULL, dead_notified = 0, lease_owner = NULL, lease_until = NULL, \
             error_class = NULL, error = NULL, http_status = NULL, attempt_started_at = NULL, \
             finished_by = NULL \
         WHERE id = ?1",
        params![id, now, max_retries],
    )?;
    tx.execute(
        "UPDATE batches SET open = 1 WHERE id = (SELECT batch_id FROM jobs WHERE id = ?1)",
        [id],
    )?;
    Ok(())
}

/// A lane, and a keyset position in a batch's cycle of lanes: (seq, host).
type LanePos = (i64, String);

/// A lane read by the walk: its place in the cycle, its cursor (cur_run_at, cur_id) and its
/// generation (migration 0012).
struct Lane {
    pos: LanePos,
    cursor: (Millis, i64),
    generation: i64,
}

/// A key of `jobs_lane` within a lane: (due time, job id).
type LaneKey = (Millis, i64);

/// The keys of `jobs_lane` that follow the cursors of lanes this connection claimed from, so
/// that a visit to a lane usually reads no index page: with 1,000 lanes taking turns, each
/// visit would read a leaf of its own, and at a million jobs those leaves fall out of the
/// page cache.
///
/// What is kept for a lane lists, in order, every job of the lane whose key lies from the
/// lane's cursor up to the last key read, with one exception: keys already found not pending
/// in this lane may be dropped. It stays true while the lane's cursor and generation are the
/// ones recorded with it. Another connection's claim moves the cursor; a job of the lane
/// becoming pending anywhere, in any connection, gives the lane a new generation (the
/// trigger, migration 0012); and a job that stops being pending is found out when its claim
/// changes no row. A transaction that rolls back leaves a cursor here that the database does
/// not have, which the next visit sees as a mismatch.
#[derive(Default)]
struct LaneKeys {
    lanes: HashMap<(i64, String), KnownKeys>,
}

struct KnownKeys {
    generation: i64,
    cursor: LaneKey,
    /// The keys from the cursor on, as described on [`LaneKeys`].
    keys: std::collections::VecDeque<LaneKey>,
    /// Where the next read starts: just after the last key read.
    read_from: LaneKey,
}

/// Lanes kept at most: past this, everything is forgotten and read again.
const LANE_KEYS_KEPT: usize = 16_384;

impl LaneKeys {
    /// What is known of a lane whose row says `generation` and `cursor`: the remembered keys if they
    /// still hold, else nothing, to be read from the cursor.
    fn take(&mut self, batch_id: i64, host: &str, generation: i64, cursor: LaneKey) -> KnownKeys {
        match self.lanes.remove(&(batch_id, host.to_string())) {
            Some(known) if known.generation == generation && known.cursor == cursor => known,
            _ => KnownKeys {
                generation,
                cursor,
                keys: Default::default(),
                read_from: cursor,
            },
        }
    }

    fn keep(&mut self, batch_id: i64, host: String, known: KnownKeys) {
        if self.lanes.len() >= LANE_KEYS_KEPT {
            self.lanes.clear();
        }
        self.lanes.insert((batch_id, host), known);
    }
}

impl KnownKeys {
    /// The next key to try, reading the lane's index when nothing is left; `None` when the
    /// lane has no job from here on.
    fn front(
        &mut self,
        tx: &Transaction<'_>,
        batch_id: i64,
        host: &str,
    ) -> Result<Option<LaneKey>> {
        if self.keys.is_empty() {
            self.keys = lane_keys(tx, batch_id, host, self.read_from)?.into();
            if let Some(&(at, id)) = self.keys.back() {
                self.read_from = (at, id + 1);
            }
        }
        Ok(self.keys.front().copied())
    }
}

/// Up to [`LANE_KEYS_READ`] keys of a lane from `(at, id)` on, in claim order.
fn lane_keys(
    tx: &Transaction<'_>,
    batch_id: i64,
    host: &str,
    (at, id): LaneKey,
) -> Result<Vec<LaneKey>> {
    let row = |r: &Row<'_>| Ok((r.get(0)?, r.get(1)?));
    let mut keys = tx
        .prepare_cached(LANE_KEYS_AT)?
        .query_map(params![batch_id, host, at, id, LANE_KEYS_READ as i64], row)?
        .collect::<rusqlite::Result<Vec<LaneKey>>>()?;
    if keys.len() < LANE_KEYS_READ {
        let more = LANE_KEYS_READ - keys.len();
        keys.extend(
            tx.prepare_cached(LANE_KEYS_AFTER)?
                .query_map(params![batch_id, host, at, more as i64], row)?
                .collect::<rusqlite::Result<Vec<LaneKey>>>()?,
        );
    }
    Ok(keys)
}

/// The head of a lane (its earliest pending job: id and due time), read from its cursor.
fn lane_head(
    tx: &Transaction<'_>,
    batch_id: i64,
    host: &str,
    (at, id): (Millis, i64),
) -> Result<Option<(i64, Millis)>> {
    let row = |r: &Row<'_>| Ok((r.get(0)?, r.get(1)?));
    if let Some(head) = tx
        .prepare_cached(LANE_HEAD_AT)?
        .query_row(params![batch_id, host, at, id], row)
        .optional()?
    {
        return Ok(Some(head));
    }
    Ok(tx
        .prepare_cached(LANE_HEAD_AFTER)?
        .query_row(params![batch_id, host, at], row)
        .optional()?)
}

/// Where the claim is in one batch's cycle of lanes. A pass starts just after the lane the
/// batch served last, runs to the end of the cycle, then wraps around to that lane.
struct LaneCursor {
    batch_id: i64,
    /// Where the current pass started (and so where it ends).
    start: LanePos,
    /// Lanes fetched and not yet looked at.
    queue: std::collections::VecDeque<Lane>,
    /// Keyset position of the last lane fetched.
    after: LanePos,
    /// false: from `start` to the end of the cycle; true: from the beginning to `start`.
    wrapped: bool,
    /// The current stretch has no more lanes to fetch.
    at_end: bool,
    /// Jobs claimed in this batch during the current pass.
    claimed_this_pass: usize,
    /// The last lane served in this step: the batch's cursor when the step ends.
    last_served: Option<LanePos>,
    exhausted: bool,
    /// Lane reads so far in this step.
    fetches: u32,
}

impl LaneCursor {
    fn new(batch_id: i64, start: LanePos) -> Self {
        Self {
            batch_id,
            after: start.clone(),
            start,
            queue: Default::default(),
            wrapped: false,
            at_end: false,
            claimed_this_pass: 0,
            last_served: None,
            exhausted: false,
            fetches: 0,
        }
    }

    /// The next lane in the cycle. A lane gives one job per pass, so hosts take turns; when a
    /// pass that claimed something ends, the next one starts after the last lane served.
    fn next(&mut self, tx: &Transaction<'_>, chunk: usize) -> Result<Option<Lane>> {
        const BEGIN: (i64, &str) = (i64::MIN, "");
        loop {
            if let Some(lane) = self.queue.pop_front() {
                return Ok(Some(lane));
            }
            if self.at_end {
                if !self.wrapped {
                    self.wrapped = true;
                    self.after = (BEGIN.0, BEGIN.1.to_string());
                } else if self.claimed_this_pass == 0 {
                    self.exhausted = true;
                    return Ok(None);
                } else {
                    self.start = self
                        .last_served
                        .clone()
                        .unwrap_or_else(|| self.start.clone());
                    self.after = self.start.clone();
                    self.wrapped = false;
                    self.claimed_this_pass = 0;
                }
                self.at_end = false;
            }
            let upper = if self.wrapped {
                self.start.clone()
            } else {
                (i64::MAX, String::new())
            };
            let mut stmt = tx.prepare_cached(CLAIM_LANES)?;
            let rows = stmt
                .query_map(
                    params![
                        self.batch_id,
                        self.after.0,
                        self.after.1,
                        chunk as i64,
                        upper.0,
                        upper.1
                    ],
                    |r| {
                        Ok(Lane {
                            pos: (r.get(0)?, r.get(1)?),
                            cursor: (r.get(2)?, r.get(3)?),
                            generation: r.get(4)?,
                        })
                    },
                )?
                .collect::<rusqlite::Result<Vec<Lane>>>()?;
            self.fetches += 1;
            self.at_end = rows.len() < chunk;
            if let Some(last) = rows.last() {
                self.after = last.pos.clone();
            }
            self.queue.extend(rows);
        }
    }
}

/// See [`Store::enqueue_batch`]: the batch id (if a job was queued) and each job's result.
fn enqueue_in(
    tx: &Transaction<'_>,
    joins: Joins<'_>,
    jobs: &[NewJob],
    max_retries: u32,
    now: Millis,
) -> Result<(Option<i64>, Vec<Enqueued>)> {
    let mut batch_id = match joins {
        Joins::Existing(id) => Some(id),
        Joins::New { .. } => None,
    };
    let mut find = tx.prepare_cached("SELECT id, status FROM jobs WHERE url_key = ?1")?;
    let mut insert = tx.prepare_cached(
        "INSERT INTO jobs (url, url_key, host, batch_id, status, run_at, max_retries, \
             budget_started_at, created_at, updated_at) \
             VALUES (?1, ?2, ?3, ?4, 'pending', ?5, ?6, ?5, ?5, ?5)",
    )?;
    let mut out = Vec::with_capacity(jobs.len());
    // The first new job of each host queued here, in arrival order.
    let mut firsts: Vec<i64> = Vec::new();
    let mut hosts_seen: std::collections::HashSet<&str> = std::collections::HashSet::new();
    for job in jobs {
        let existing = find
            .query_row([&job.url_key], |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
            })
            .optional()?;
        if let Some((id, status)) = existing {
            out.push(Enqueued::Duplicate {
                id,
                url: job.url.clone(),
                status: Status::parse(&status).unwrap_or(Status::Pending),
            });
            continue;
        }
        let joined = match (batch_id, joins) {
            (Some(id), _) | (None, Joins::Existing(id)) => id,
            (None, Joins::New { name, source }) => {
                tx.execute(
                    "INSERT INTO batches (name, source, created_at) VALUES (?1, ?2, ?3)",
                    params![name, source, now],
                )?;
                *batch_id.insert(tx.last_insert_rowid())
            }
        };
        insert.execute(params![
            job.url,
            job.url_key,
            job.host,
            joined,
            now,
            max_retries
        ])?;
        let id = tx.last_insert_rowid();
        if hosts_seen.insert(job.host.as_str()) {
            firsts.push(id);
        }
        out.push(Enqueued::Queued {
            id,
            url: job.url.clone(),
        });
    }
    // Every pending job has a lane, and no pending job sorts before its lane's cursor.
    // The lane trigger keeps both (migration 0011); it fires on `run_at`, not on an
    // insert, so each host's first new job is touched once: a new lane starts there, at
    // the end of the batch's rotation, and an existing lane's cursor moves back to it
    // if it is past it (a lane whose jobs were all backed off past `now`).
    let mut touch = tx.prepare_cached("UPDATE jobs SET run_at = run_at WHERE id = ?1")?;
    for first in &firsts {
        touch.execute([first])?;
    }
    // A batch made in an earlier transaction may have been closed as empty by a worker
    // going idle in between; its new jobs put it back in the rotation.
    if let (Joins::Existing(id), Some(_)) = (joins, firsts.first()) {
        tx.prepare_cached("UPDATE batches SET open = 1 WHERE id = ?1 AND open = 0")?
            .execute([id])?;
    }
    Ok((batch_id, out))
}

/// Claim up to `req.max` eligible jobs inside `tx`. The open batches with due work take turns
/// (least recently served first); inside a batch, its lanes (one per host) take turns, one
/// job per lane per pass; inside a lane, the earliest due job goes first. Every read is a
/// seek or an ordered index walk, so the cost does not grow with the pending rows: a host that
/// is paused or at its connection limit costs one check per lane, not one per row, and a batch
/// with nothing due costs one seek. When the step ends, served batches move to the back of the
/// rotation in the order they were served, each remembering the last lane it served.
fn claim_many(
    tx: &Transaction<'_>,
    req: &ClaimRequest<'_>,
    now: Millis,
    lane_keys: &mut LaneKeys,
) -> Result<Vec<Claimed>> {
    let mut out = Vec::new();
    if req.max == 0 {
        return Ok(out);
    }
    let mut cursors: Vec<LaneCursor> = tx
        .prepare_cached(CLAIM_BATCHES)?
        .query_map([now], |r| {
            Ok(LaneCursor::new(r.get(0)?, (r.get(1)?, r.get(2)?)))
        })?
        .collect::<rusqlite::Result<_>>()?;
    // Connections each host may still open in this step, and whether it is throttled.
    let mut slots: HashMap<String, (u32, bool)> = HashMap::new();
    let mut served_batches: Vec<i64> = Vec::new();
    let mut empty_lanes: Vec<(i64, String)> = Vec::new();
    let lease_until = now + req.lease.as_millis() as Millis;
    while out.len() < req.max && cursors.iter().any(|c| !c.exhausted) {
        for cursor in cursors.iter_mut().filter(|c| !c.exhausted) {
            if out.len() >= req.max {
                break;
            }
            // Lanes are read a few more than the jobs still wanted: a single claim reads two
            // lanes, not a page of them, and a walk past many skipped lanes reads more at a time.
            let chunk = (req.max - out.len() + 1) << cursor.fetches.min(6);
            while let Some(Lane {
                pos: (seq, host),
                cursor: lane_cursor,
                generation,
            }) = cursor.next(tx, chunk)?
            {
                // A host already found paused or full in this step costs no index seek.
                if slots.get(&host).is_some_and(|slot| slot.0 == 0) {
                    continue;
                }
                let batch_id = cursor.batch_id;
                let mut known = lane_keys.take(batch_id, &host, generation, lane_cursor);
                // The lane's head is its first key whose job is still pending.
                let mut claimed = None;
                let empty = loop {
                    let Some((run_at, job_id)) = known.front(tx, batch_id, &host)? else {
                        break true;
                    };
                    if run_at > now {
                        break false;
                    }
                    let slot = match slots.get_mut(&host) {
                        Some(slot) => slot,
                        None => {
                            let slot = host_slots(tx, &host, now, req.per_host)?;
                            slots.entry(host.clone()).or_insert(slot)
                        }
                    };
                    if slot.0 == 0 {
                        break false;
                    }
                    let key = (batch_id, host.as_str(), (run_at, job_id));
                    known.keys.pop_front();
                    // No row changed: the job finished, was cancelled or moved since the key
                    // was read, and the next key is the head's candidate.
                    if let Some(mut job) = claim_job(tx, key, req, lease_until, now)? {
                        slot.0 -= 1;
                        job.throttled = slot.1;
                        known.cursor = (run_at, job_id + 1);
                        tx.prepare_cached(LANE_ADVANCE)?.execute(params![
                            batch_id,
                            host,
                            run_at,
                            job_id + 1
                        ])?;
                        claimed = Some(job);
                        break false;
                    }
                };
                if empty {
                    empty_lanes.push((batch_id, host));
                    continue;
                }
                lane_keys.keep(batch_id, host.clone(), known);
                let Some(claimed) = claimed else {
                    continue;
                };
                out.push(claimed);
                cursor.claimed_this_pass += 1;
                cursor.last_served = Some((seq, host));
                served_batches.retain(|&b| b != cursor.batch_id);
                served_batches.push(cursor.batch_id);
                break;
            }
        }
    }
    let mut lane_served = tx.prepare_cached(SERVED_LANE_SQL)?;
    let mut to_back = tx.prepare_cached(TO_BACK_SQL)?;
    for batch_id in &served_batches {
        if let Some(cursor) = cursors.iter().find(|c| c.batch_id == *batch_id)
            && let Some((seq, host)) = &cursor.last_served
        {
            lane_served.execute(params![batch_id, seq, host])?;
            to_back.execute([batch_id])?;
        }
    }
    if !empty_lanes.is_empty() {
        let mut delete = tx.prepare_cached(
            "DELETE FROM lanes WHERE batch_id = ?1 AND host = ?2 AND NOT EXISTS (SELECT 1 FROM jobs \
                 INDEXED BY jobs_lane WHERE batch_id = ?1 AND host = ?2 \
                     AND run_at >= lanes.cur_run_at AND (run_at > lanes.cur_run_at OR id >= lanes.cur_id) \
                     AND status = 'pending')",
        )?;
        for (batch_id, host) in &empty_lanes {
            delete.execute(params![batch_id, host])?;
        }
    }
    Ok(out)
}

/// Start job `key` (its batch, host, and key in its lane) if it is still pending there.
fn claim_job(
    tx: &Transaction<'_>,
    (batch_id, host, (run_at, job_id)): (i64, &str, LaneKey),
    req: &ClaimRequest<'_>,
    lease_until: Millis,
    now: Millis,
) -> Result<Option<Claimed>> {
    // Not `UPDATE … RETURNING`: SQLite collects returned rows in a temporary B-tree, and
    // opening and closing it cost more than reading the row back.
    let changed = tx.prepare_cached(CLAIM_JOB_SQL)?.execute(params![
        job_id,
        req.owner,
        lease_until,
        now,
        batch_id,
        host,
        run_at
    ])?;
    if changed != 1 {
        return Ok(None);
    }
    let (url, attempt): (String, u32) = tx
        .prepare_cached("SELECT url, attempts FROM jobs WHERE id = ?1")?
        .query_row([job_id], |r| Ok((r.get(0)?, r.get(1)?)))?;
    Ok(Some(Claimed {
        job_id,
        url,
        host: host.to_string(),
        attempt,
        started_at: now,
        owner: req.owner.to_string(),
        throttled: false,
    }))
}

/// How many more jobs for `host` may start now: none while it is paused, else its connection
/// limit (the policy's, or lower while it recovers from a rate limit) minus the jobs of every
/// process running on it.
fn host_slots(tx: &Transaction<'_>, host: &str, now: Millis, per_host: u32) -> Result<(u32, bool)> {
    let (paused, own_limit, running): (Option<bool>, Option<u32>, u32) = tx
        .prepare_cached(CLAIM_HOST)?
        .query_row(params![host, now], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })?;
    if paused == Some(true) {
        return Ok((0, own_limit.is_some()));
    }
    let limit = own_limit.map_or(per_host, |own| own.min(per_host)).max(1);
    Ok((limit.saturating_sub(running), own_limit.is_some()))
}

/// Record a success if the job is still this worker's; whether it was.
fn complete_in(
    tx: &Transaction<'_>,
    claimed: &Claimed,
    success: &Success,
    policy: &Policy,
    now: Millis,
) -> Result<bool> {
    let changed = tx.prepare_cached(COMPLETE_SQL)?.execute(params![
        claimed.job_id,
        claimed.owner,
        success.final_url,
        success.http_status,
        success.title,
        success.document,
        success.content_type,
        success.sha256,
        now,
        claimed.attempt
    ])?;
    let done = changed == 1;
    // The done row is also the attempt's history (migration 0014); a result that came too
    // late gets a row in `attempt_log`.
    if !done {
        let end = AttemptEnd {
            outcome: "success_discarded",
            http_status: Some(success.http_status),
            ..AttemptEnd::default()
        };
        end_attempt(tx, &AttemptRef::from(claimed), now, &end, true)?;
    }
    // Only a throttled host keeps a success streak; the others need no write.
    if done && claimed.throttled {
        record_host_success(tx, &claimed.host, policy.per_host)?;
    }
    Ok(done)
}

/// Why an attempt's job goes back to pending with its budget untouched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PutBack {
    /// The machine was offline.
    Offline,
    /// This machine could not keep what was fetched (disk full, library unwritable).
    Local,
}

impl PutBack {
    fn outcome(self) -> &'static str {
        match self {
            PutBack::Offline => "offline",
            PutBack::Local => "local",
        }
    }

    fn note(self) -> &'static str {
        match self {
            PutBack::Offline => "offline: not counted against its retries",
            PutBack::Local => "a problem on this computer: not counted against its retries",
        }
    }
}

fn put_back_in(
    tx: &Transaction<'_>,
    claimed: &Claimed,
    failure: &Failure,
    now: Millis,
    why: PutBack,
) -> Result<Option<Job>> {
    let changed = tx
        .prepare_cached(
            "UPDATE jobs SET status = 'pending', run_at = ?3, error_class = 'transient', error = ?4, \
                 http_status = NULL, lease_owner = NULL, lease_until = NULL, updated_at = ?3, \
                 attempt_started_at = NULL \
             WHERE id = ?1 AND status = 'running' AND lease_owner = ?2 AND attempts = ?5",
        )?
        .execute(params![
            claimed.job_id,
            claimed.owner,
            now,
            format!("{} ({})", failure.message, why.note()),
            claimed.attempt
        ])?;
    let end = AttemptEnd {
        outcome: why.outcome(),
        kind: Some(failure.kind),
        error: Some(&failure.message),
        delay_ms: Some(0),
        ..AttemptEnd::default()
    };
    end_attempt(tx, &AttemptRef::from(claimed), now, &end, changed == 0)?;
    if changed == 0 {
        return Ok(None);
    }
    let job = load_job(tx, claimed.job_id)?.ok_or(rusqlite::Error::QueryReturnedNoRows)?;
    Ok(Some(job))
}

fn fail_in(
    tx: &Transaction<'_>,
    claimed: &Claimed,
    failure: &Failure,
    policy: &Policy,
    now: Millis,
    unit: f64,
) -> Result<Option<Failed>> {
    let job = tx
        .prepare_cached(&format!(
            "SELECT {JOB_COLUMNS} FROM jobs j LEFT JOIN batches b ON b.id = j.batch_id \
             WHERE j.id = ?1 AND j.status = 'running' AND j.lease_owner = ?2 AND j.attempts = ?3"
        ))?
        .query_row(
            params![claimed.job_id, claimed.owner, claimed.attempt],
            job_from_row,
        )
        .optional()?;
    let Some(job) = job else {
        let error = format!(
            "{} (result discarded: the job was cancelled or taken over)",
            failure.message
        );
        let end = AttemptEnd {
            outcome: failure.class().as_str(),
            kind: Some(failure.kind),
            http_status: failure.http_status,
            error: Some(&error),
            delay_ms: None,
        };
        end_attempt(tx, &AttemptRef::from(claimed), now, &end, true)?;
        return Ok(None);
    };
    let failed = apply_failure(
        tx,
        &job,
        Some(&AttemptRef::from(claimed)),
        failure,
        policy,
        now,
        unit,
    )?;
    Ok(Some(failed))
}

/// Take batches with nothing left to do out of the rotation, so the claim does not walk them.
fn close_finished_batches(tx: &Transaction<'_>) -> Result<()> {
    tx.execute(
        "UPDATE batches SET open = 0 WHERE open = 1 AND NOT EXISTS (SELECT 1 FROM jobs \
             WHERE jobs.batch_id = batches.id AND jobs.status IN ('pending', 'running'))",
        [],
    )?;
    tx.execute(
        "DELETE FROM lanes WHERE batch_id IN (SELECT id FROM batches WHERE open = 0)",
        [],
    )?;
    Ok(())
}

/// Successes after a rate limit win back one connection per [`RECOVERY_STREAK`]; once back at
/// the policy's per-host limit the host has no limit of its own again.
fn record_host_success(tx: &Transaction<'_>, host: &str, per_host: u32) -> Result<()> {
    tx.prepare_cached(
        "UPDATE hosts SET \
             concurrency_limit = CASE WHEN success_streak + 1 < ?3 THEN concurrency_limit \
                 WHEN concurrency_limit + 1 >= ?2 THEN NULL ELSE concurrency_limit + 1 END, \
             success_streak = CASE WHEN success_streak + 1 >= ?3 THEN 0 ELSE success_streak + 1 END \
         WHERE host = ?1 AND concurrency_limit IS NOT NULL",
    )?
    .execute(params![host, per_host, RECOVERY_STREAK])?;
    Ok(())
}

/// An attempt that was in flight: which job and which of its attempts, when it began, and the
/// worker that made it.
struct AttemptRef<'a> {
    job_id: i64,
    number: u32,
    started_at: Millis,
    worker: Option<&'a str>,
}

impl<'a> From<&'a Claimed> for AttemptRef<'a> {
    fn from(c: &'a Claimed) -> Self {
        Self {
            job_id: c.job_id,
            number: c.attempt,
            started_at: c.started_at,
            worker: Some(&c.owner),
        }
    }
}

/// How an attempt ended, for its `attempts` row.
#[derive(Default)]
struct AttemptEnd<'a> {
    outcome: &'a str,
    kind: Option<FailureKind>,
    http_status: Option<u16>,
    error: Option<&'a str>,
    delay_ms: Option<i64>,
}

/// Write the row of an attempt that has ended. An attempt is written once, when it ends; while
/// in flight it lives on the job's row. A `late` result (the job was cancelled or recovered in
/// the meantime, which already wrote this attempt's row) replaces that row, so the history
/// says what really became of the attempt.
fn end_attempt(
    tx: &Transaction<'_>,
    at: &AttemptRef<'_>,
    now: Millis,
    end: &AttemptEnd<'_>,
    late: bool,
) -> Result<()> {
    let kind = end.kind.map(kind_str);
    if late {
        let replaced = tx
            .prepare_cached(
                "UPDATE attempt_log SET finished_at = ?3, outcome = ?4, kind = ?5, http_status = ?6, \
                     error = ?7, delay_ms = ?8 WHERE job_id = ?1 AND number = ?2",
            )?
            .execute(params![
                at.job_id,
                at.number,
                now,
                end.outcome,
                kind,
                end.http_status,
                end.error,
                end.delay_ms
            ])?;
        if replaced > 0 {
            return Ok(());
        }
        // A job cancelled and then deleted has no history to add to.
        if status_of(tx, at.job_id)?.is_none() {
            return Ok(());
        }
    }
    tx.prepare_cached(END_ATTEMPT_SQL)?.execute(params![
        at.job_id,
        at.number,
        at.started_at,
        now,
        end.outcome,
        kind,
        end.http_status,
        end.error,
        end.delay_ms,
        at.worker
    ])?;
    Ok(())
}

/// Successes in a row that raise a throttled host's connection limit by one.
pub const RECOVERY_STREAK: u32 = 10;

/// The shared tail of a failed attempt: counters, decision, job row, attempt row, host pause.
fn apply_failure(
    tx: &Transaction<'_>,
    job: &Job,
    attempt: Option<&AttemptRef>,
    failure: &Failure,
    policy: &Policy,
    now: Millis,
    unit: f64,
) -> Result<Failed> {
    // The budget in force is the current policy's, so a settings change reaches queued jobs.
    let counters = Counters {
        max_retries: policy.max_retries,
        ..job.counters
    };
    let decision = policy::decide(policy, &counters, failure, now, unit);
    let (net, server, rate, blocked) = match failure.kind.budget() {
        _ if failure.class() == ErrorClass::Fatal => (0, 0, 0, 0),
        policy::Budget::Network => (1, 0, 0, 0),
        policy::Budget::Server => (0, 1, 0, 0),
        policy::Budget::RateLimit => (0, 0, 1, 0),
        policy::Budget::Blocked => (0, 0, 0, 1),
    };
    let (status, run_at, delay_ms, finished_at, error) = match &decision {
        Decision::Retry { delay, .. } => {
            let d = delay.as_millis() as Millis;
            ("pending", now + d, Some(d), None, failure.message.clone())
        }
        Decision::Dead { reason } => ("dead", job.run_at, None, Some(now), reason.clone()),
    };
    tx.prepare_cached("UPDATE jobs SET status = ?2, run_at = ?3, net_failures = net_failures + ?4, \
             server_failures = server_failures + ?5, rate_limits = rate_limits + ?6, \
             error_class = ?7, error = ?8, http_status = ?9, lease_owner = NULL, lease_until = NULL, \
             updated_at = ?10, finished_at = ?11, max_retries = ?12, \
             blocked_failures = blocked_failures + ?13, attempt_started_at = NULL \
         WHERE id = ?1")?.execute(params![
            job.id,
            status,
            run_at,
            net,
            server,
            rate,
            failure.class().as_str(),
            error,
            failure.http_status,
            now,
            finished_at,
            policy.max_retries,
            blocked
        ])?;
    if let Some(attempt) = attempt {
        let end = AttemptEnd {
            outcome: if failure.kind == FailureKind::Interrupted {
                "interrupted"
            } else {
                failure.class().as_str()
            },
            kind: Some(failure.kind),
            http_status: failure.http_status,
            error: Some(&failure.message),
            delay_ms,
        };
        end_attempt(tx, attempt, now, &end, false)?;
    }
    if let Decision::Retry {
        pause_host: Some(pause),
        ..
    } = &decision
    {
        let until = now + pause.as_millis() as Millis;
        // After a rate limit the host gets one connection at a time until it has shown a run
        // of successes; a plain 503 only pauses it.
        let limit: Option<u32> = (failure.class() == ErrorClass::RateLimited).then_some(1);
        tx.prepare_cached("INSERT INTO hosts (host, paused_until, pause_reason, concurrency_limit) VALUES (?1, ?2, ?3, ?4) \
             ON CONFLICT(host) DO UPDATE SET paused_until = max(coalesce(paused_until, 0), excluded.paused_until), \
                 pause_reason = excluded.pause_reason, success_streak = 0, \
                 concurrency_limit = coalesce(excluded.concurrency_limit, concurrency_limit)")?.execute(params![job.host, until, failure.message, limit])?;
        // None of the host's waiting jobs can start before the pause ends, so their rows say
        // so: the claim's scan over due jobs then never walks a paused host's backlog (100,000
        // rows at the head of a batch would otherwise be checked and skipped on every claim),
        // and the window shows when they will really run.
        // Each lane is read from its cursor, so the host's finished jobs are not walked.
        tx.prepare_cached("UPDATE jobs SET run_at = (SELECT paused_until FROM hosts WHERE host = ?1) \
             WHERE id IN (SELECT j.id FROM lanes l INDEXED BY lanes_host CROSS JOIN jobs j INDEXED BY jobs_lane \
                 WHERE l.host = ?1 AND j.batch_id = l.batch_id AND j.host = ?1 \
                   AND j.run_at >= l.cur_run_at AND (j.run_at > l.cur_run_at OR j.id >= l.cur_id) \
                   AND j.status = 'pending' \
                   AND j.run_at < (SELECT paused_until FROM hosts WHERE host = ?1))")?.execute([&job.host])?;
    }
    let job = load_job(tx, job.id)?.ok_or(rusqlite::Error::QueryReturnedNoRows)?;
    Ok(Failed {
        job,
        failure: failure.clone(),
        decision,
        at: now,
    })
}

fn ser_time<S: serde::Serializer>(t: &Millis, s: S) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_str(&rfc3339(*t))
}

fn ser_opt_time<S: serde::Serializer>(
    t: &Option<Millis>,
    s: S,
) -> std::result::Result<S::Ok, S::Error> {
    match t {
        Some(t) => s.serialize_str(&rfc3339(*t)),
        None => s.serialize_none(),
    }
}

/// RFC 3339 in UTC with milliseconds.
pub fn rfc3339(ms: Millis) -> String {
    let format = time::macros::format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"
    );
    time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .ok()
        .and_then(|t| t.format(&format).ok())
        .unwrap_or_else(|| ms.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn job(url: &str) -> NewJob {
        let host = url::Url::parse(url)
            .ok()
            .and_then(|u| u.host_str().map(str::to_string))
            .unwrap_or_default();
        NewJob {
            url: url.into(),
            url_key: url.into(),
            host,
        }
    }

    /// Threads stand in for processes here: SQLite takes the same file locks for each
    /// connection. A barrier starts them together, closer than processes ever start.
    #[test]
    fn stores_opening_one_new_database_at_the_same_instant_all_open() {
        let mut failures = Vec::new();
        for _ in 0..40 {
            let dir = tempfile::tempdir().expect("tempdir");
            let path = dir.path().join("queue.db");
            let start = std::sync::Arc::new(std::sync::Barrier::new(6));
            let openers: Vec<_> = (0..6)
                .map(|_| {
                    let (path, start) = (path.clone(), start.clone());
                    std::thread::spawn(move || {
                        start.wait();
                        Store::open(&path).map(drop)
                    })
                })
                .collect();
            for opener in openers {
                if let Err(e) = opener.join().expect("opener") {
                    failures.push(e.to_string());
                }
            }
        }
        assert!(
            failures.is_empty(),
            "{} of 240 opens failed: {:?}",
            failures.len(),
            failures.first()
        );
    }

    #[test]
    fn migrates_a_version_1_database_and_keeps_its_jobs() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("old.db");
        {
            let mut conn = Connection::open(&path).expect("open");
            Migrations::new(vec![M::up(include_str!("../../migrations/0001_queue.sql"))])
                .to_latest(&mut conn)
                .expect("v1");
            conn.execute(
                "INSERT INTO jobs (url, url_key, host, status, run_at, max_retries, budget_started_at, created_at, updated_at) \
                 VALUES ('http://a.example/', 'http://a.example/', 'a.example', 'dead', 1, 5, 1, 1, 1)",
                [],
            )
            .expect("insert");
            let v: i64 = conn
                .query_row("PRAGMA user_version", [], |r| r.get(0))
                .expect("version");
            assert_eq!(v, 1);
        }
        let store = Store::open(&path).expect("migrate");
        let conn = store.conn().expect("conn");
        let v: i64 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .expect("version");
        assert_eq!(v, 15);
        let (url, notified): (String, i64) = conn
            .query_row("SELECT url, dead_notified FROM jobs", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .expect("row");
        assert_eq!(url, "http://a.example/");
        assert_eq!(notified, 0);
        let batch: String = conn
            .query_row(
                "SELECT b.name FROM jobs j JOIN batches b ON b.id = j.batch_id",
                [],
                |r| r.get(0),
            )
            .expect("batch");
        assert_eq!(batch, "earlier jobs", "jobs from before batches joined one");
        let mode: String = conn
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .expect("mode");
        assert_eq!(mode, "wal");
    }

    #[test]
    fn the_jobs_rebuild_keeps_every_attempt_and_moves_the_one_in_flight_onto_its_job() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("v8.db");
        {
            let mut conn = Connection::open(&path).expect("open");
            conn.pragma_update(None, "foreign_keys", "ON").expect("fk");
            migrations().to_version(&mut conn, 8).expect("v8");
            conn.execute_batch(
                "INSERT INTO batches (id, name, source, created_at) VALUES (1, 'b', 'cli', 1); \
                 INSERT INTO jobs (id, url, url_key, host, batch_id, status, run_at, attempts, \
                     max_retries, budget_started_at, created_at, updated_at, lease_owner, lease_until) \
                 VALUES (7, 'http://a.example/', 'http://a.example/', 'a.example', 1, 'running', 1, 2, \
                     5, 1, 1, 60, 'gone-worker', 100); \
                 INSERT INTO attempts (job_id, number, started_at, finished_at, outcome, worker) \
                     VALUES (7, 1, 10, 20, 'transient', 'gone-worker'); \
                 INSERT INTO attempts (job_id, number, started_at, worker) VALUES (7, 2, 50, 'gone-worker');",
            )
            .expect("v8 rows");
        }
        let store = Store::open(&path).expect("migrate");
        let history = store.attempts(7).expect("attempts");
        assert_eq!(history.len(), 2, "{history:?}");
        assert_eq!(history[0].outcome.as_deref(), Some("transient"));
        assert_eq!(
            (
                history[1].number,
                history[1].started_at,
                history[1].finished_at
            ),
            (2, 50, None),
            "the attempt in flight keeps its start"
        );
        // Its worker is gone: recovery writes the interrupted attempt with its real start.
        store
            .recover(&Policy::default(), 1_000, |_| Liveness::Gone)
            .expect("recover");
        let history = store.attempts(7).expect("attempts");
        assert_eq!(history.len(), 2, "{history:?}");
        assert_eq!(history[1].started_at, 50);
        assert_eq!(history[1].finished_at, Some(1_000));
        assert_eq!(history[1].outcome.as_deref(), Some("interrupted"));
        assert_eq!(history[1].worker.as_deref(), Some("gone-worker"));
        let conn = store.conn().expect("conn");
        let fk: bool = conn
            .query_row("PRAGMA foreign_keys", [], |r| r.get(0))
            .expect("fk");
        assert!(fk, "foreign keys are back on after the migrations");
    }

    #[test]
    fn a_cancelled_attempt_is_closed_and_a_late_result_replaces_it() {
        let s = Store::open_in_memory().expect("store");
        let policy = Policy::default();
        s.enqueue(None, &[job("http://a.example/1")], 5, 0)
            .expect("enqueue");
        let c = s
            .claim("w", 10, Duration::from_secs(60), 2)
            .expect("claim")
            .expect("a job");
        let running = s.attempts(c.job_id).expect("attempts");
        assert_eq!(running.len(), 1);
        assert_eq!((running[0].started_at, running[0].finished_at), (10, None));
        s.cancel(&[c.job_id], 20).expect("cancel");
        let cancelled = s.attempts(c.job_id).expect("attempts");
        assert_eq!(cancelled.len(), 1, "{cancelled:?}");
        assert_eq!(cancelled[0].outcome.as_deref(), Some("cancelled"));
        assert_eq!(cancelled[0].worker.as_deref(), Some("w"));
        let success = Success {
            final_url: c.url.clone(),
            http_status: 200,
            title: None,
            document: None,
            content_type: None,
            sha256: None,
        };
        let step = s
            .step(
                &mut vec![(c.clone(), Finish::Success(success))],
                &policy,
                30,
                None,
            )
            .expect("step");
        assert!(matches!(step.settled[0].2, Settled::Discarded));
        let late = s.attempts(c.job_id).expect("attempts");
        assert_eq!(late.len(), 1, "one row per attempt: {late:?}");
        assert_eq!(late[0].outcome.as_deref(), Some("success_discarded"));
        // Deleted after it was cancelled: the late result has nothing to add to.
        s.delete(&[c.job_id]).expect("delete");
        let failure = Failure::new(FailureKind::Timeout, "timed out");
        s.step(
            &mut vec![(c, Finish::Failure { failure, unit: 0.0 })],
            &policy,
            40,
            None,
        )
        .expect("a late result for a deleted job does not fail the step");
    }

    #[test]
    fn a_done_job_keeps_its_success_in_its_row_and_a_refetch_keeps_it_in_the_history() {
        let s = Store::open_in_memory().expect("store");
        let policy = Policy::default();
        s.enqueue(None, &[job("http://a.example/1")], 5, 0)
            .expect("enqueue");
        let c = s
            .claim("w1", 10, Duration::from_secs(60), 2)
            .expect("claim")
            .expect("a job");
        let ok = |status| Success {
            final_url: c.url.clone(),
            http_status: status,
            ..Success::default()
        };
        s.complete(&c, &ok(200), &policy, 25).expect("complete");
        let rows = || -> i64 {
            s.conn()
                .expect("conn")
                .query_row("SELECT count(*) FROM attempt_log", [], |r| r.get(0))
                .expect("count")
        };
        assert_eq!(rows(), 0, "a success writes no row of its own");
        let done = s.attempts(c.job_id).expect("attempts");
        assert_eq!(done.len(), 1, "{done:?}");
        assert_eq!(
            (
                done[0].number,
                done[0].started_at,
                done[0].finished_at,
                done[0].outcome.as_deref(),
                done[0].http_status,
                done[0].worker.as_deref()
            ),
            (1, 10, Some(25), Some("success"), Some(200), Some("w1"))
        );
        // Fetched again: the first success moves into `attempts` before the row is reset.
        s.retry(&[c.job_id], 5, 30).expect("retry");
        assert_eq!(rows(), 1);
        let c2 = s
            .claim("w2", 40, Duration::from_secs(60), 2)
            .expect("claim")
            .expect("the job again");
        s.complete(&c2, &ok(203), &policy, 50).expect("complete");
        let history = s.attempts(c.job_id).expect("attempts");
        let seen: Vec<_> = history
            .iter()
            .map(|a| {
                (
                    a.number,
                    a.started_at,
                    a.finished_at,
                    a.http_status,
                    a.worker.as_deref(),
                )
            })
            .collect();
        assert_eq!(
            seen,
            [
                (1, 10, Some(25), Some(200), Some("w1")),
                (2, 40, Some(50), Some(203), Some("w2"))
            ]
        );
    }

    #[test]
    fn a_job_done_before_its_success_stayed_in_its_row_has_that_success_once() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("v13.db");
        {
            let mut conn = Connection::open(&path).expect("open");
            migrations().to_version(&mut conn, 13).expect("v13");
            conn.execute_batch(
                "INSERT INTO batches (id, name, source, created_at) VALUES (1, 'b', 'cli', 1); \
                 INSERT INTO jobs (id, url, url_key, host, batch_id, status, run_at, attempts, \
                     max_retries, budget_started_at, created_at, updated_at, finished_at, http_status) \
                 VALUES (7, 'http://a.example/', 'http://a.example/', 'a.example', 1, 'done', 1, 1, \
                     5, 1, 1, 20, 20, 200); \
                 INSERT INTO attempts (job_id, number, started_at, finished_at, outcome, http_status, worker) \
                     VALUES (7, 1, 10, 20, 'success', 200, 'old-worker');",
            )
            .expect("v13 rows");
        }
        let store = Store::open(&path).expect("migrate");
        let history = store.attempts(7).expect("attempts");
        assert_eq!(history.len(), 1, "{history:?}");
        assert_eq!(history[0].worker.as_deref(), Some("old-worker"));
        store.retry(&[7], 5, 30).expect("retry");
        assert_eq!(store.attempts(7).expect("attempts").len(), 1);
    }

    #[test]
    fn migrations_are_valid() {
        migrations().validate().expect("valid migrations");
    }

    #[test]
    fn duplicates_are_reported_with_the_existing_id() {
        let s = Store::open_in_memory().expect("store");
        let r = s
            .enqueue(
                None,
                &[job("http://a.example/x"), job("http://a.example/x")],
                5,
                10,
            )
            .expect("enqueue");
        let Enqueued::Queued { id, .. } = r[0] else {
            panic!("{r:?}")
        };
        assert_eq!(
            r[1],
            Enqueued::Duplicate {
                id,
                url: "http://a.example/x".into(),
                status: Status::Pending
            }
        );
    }

    #[test]
    fn claim_takes_due_jobs_only_and_never_twice() {
        let s = Store::open_in_memory().expect("store");
        s.enqueue(None, &[job("http://a.example/1")], 5, 100)
            .expect("enqueue");
        assert!(
            s.claim("w", 99, Duration::from_secs(60), 2)
                .expect("claim")
                .is_none(),
            "not due yet"
        );
        let c = s
            .claim("w", 100, Duration::from_secs(60), 2)
            .expect("claim")
            .expect("job");
        assert_eq!(c.attempt, 1);
        assert!(
            s.claim("w2", 100, Duration::from_secs(60), 2)
                .expect("claim")
                .is_none()
        );
    }

    #[test]
    fn a_write_outwaits_another_process_holding_the_lock_past_the_busy_timeout() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("q.db");
        let store = Store::open(&path).expect("store");
        let other = Connection::open(&path).expect("second connection");
        other
            .execute_batch("BEGIN IMMEDIATE")
            .expect("take the write lock");
        let holder = std::thread::spawn(move || {
            // Longer than the 5 s busy timeout of one attempt.
            std::thread::sleep(Duration::from_millis(6500));
            other.execute_batch("COMMIT").expect("release");
        });
        let started = std::time::Instant::now();
        let batch = store.create_batch("late", "cli", 1);
        holder.join().expect("holder");
        assert!(batch.is_ok(), "{batch:?}");
        assert!(started.elapsed() >= Duration::from_millis(6000));
    }

    #[test]
    fn delete_removes_a_job_with_its_history_but_not_one_in_flight() {
        let s = Store::open_in_memory().expect("store");
        s.enqueue(
            None,
            &[job("http://a.example/1"), job("http://a.example/2")],
            5,
            0,
        )
        .expect("enqueue");
        let running = s
            .claim("w", 1, Duration::from_secs(60), 2)
            .expect("claim")
            .expect("one");
        let other = if running.job_id == 1 { 2 } else { 1 };
        let results = s.delete(&[running.job_id, other, 99]).expect("delete");
        assert_eq!(
            results,
            vec![
                ActionResult::WrongState {
                    id: running.job_id,
                    status: Status::Running
                },
                ActionResult::Done { id: other },
                ActionResult::NotFound { id: 99 },
            ]
        );
        assert!(s.job(other).expect("read").is_none());
        assert!(s.job(running.job_id).expect("read").is_some());
        assert!(s.attempts(running.job_id).expect("attempts").len() == 1);
    }

    #[test]
    fn a_batch_closed_while_empty_reopens_when_its_jobs_arrive() {
        let s = Store::open_in_memory().expect("store");
        let batch = s.create_batch("paste", "paste", 0).expect("batch");
        // A worker going idle between the batch's creation and its enqueue closes it as empty.
        s.recover(&Policy::default(), 1, |_| Liveness::Unknown)
            .expect("recover");
        s.enqueue(Some(batch), &[job("http://a.example/1")], 5, 2)
            .expect("enqueue");
        let claimed = s
            .claim("w", 3, Duration::from_secs(60), 2)
            .expect("claim")
            .expect("the new job is claimable");
        assert_eq!(claimed.url, "http://a.example/1");
    }

    #[test]
    fn an_intake_makes_its_batch_only_for_new_jobs() {
        let s = Store::open_in_memory().expect("store");
        let batches = || -> Vec<(i64, String, String)> {
            s.conn()
                .expect("conn")
                .prepare("SELECT id, name, source FROM batches ORDER BY id")
                .expect("prepare")
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                .expect("query")
                .collect::<rusqlite::Result<_>>()
                .expect("rows")
        };
        let (first, results) = s
            .enqueue_batch("paste 1", "paste", &[job("http://a.example/1")], 5, 0)
            .expect("enqueue");
        let first = first.expect("a batch for the new job");
        assert!(matches!(results[..], [Enqueued::Queued { .. }]));
        assert_eq!(
            batches(),
            [(first, "paste 1".to_string(), "paste".to_string())]
        );
        // Nothing new: no empty batch in the window's batch menu.
        let (none, results) = s
            .enqueue_batch("paste 2", "paste", &[job("http://a.example/1")], 5, 1)
            .expect("enqueue");
        assert_eq!(none, None);
        assert!(matches!(results[..], [Enqueued::Duplicate { .. }]));
        assert_eq!(batches().len(), 1);
        // A duplicate and a new link: the batch holds the new one.
        let (third, _) = s
            .enqueue_batch(
                "drop 3",
                "drop",
                &[job("http://a.example/1"), job("http://b.example/1")],
                5,
                2,
            )
            .expect("enqueue");
        let third = third.expect("a batch for the new job");
        let job = s
            .claim("w", 3, Duration::from_secs(60), 2)
            .expect("claim")
            .map(|c| c.job_id);
        let in_third: Vec<i64> = s
            .conn()
            .expect("conn")
            .prepare("SELECT id FROM jobs WHERE batch_id = ?1")
            .expect("prepare")
            .query_map([third], |r| r.get(0))
            .expect("query")
            .collect::<rusqlite::Result<_>>()
            .expect("rows");
        assert_eq!(in_third.len(), 1);
        assert!(job.is_some());
        assert_eq!(batches().len(), 2);
    }

    #[test]
    fn per_host_limit_and_host_pause_gate_the_claim() {
        let s = Store::open_in_memory().expect("store");
        let mut jobs: Vec<_> = (0..4)
            .map(|i| job(&format!("http://a.example/{i}")))
            .collect();
        jobs.push(job("http://b.example/1"));
        s.enqueue(None, &jobs, 5, 0).expect("enqueue");
        let lease = Duration::from_secs(60);
        // Hosts take turns inside a batch: a, b, then a again.
        let first = s.claim("w", 10, lease, 2).expect("claim").expect("a1");
        let other = s.claim("w", 10, lease, 2).expect("claim").expect("b");
        let second = s.claim("w", 10, lease, 2).expect("claim").expect("a2");
        assert_eq!(
            [&first.host, &other.host, &second.host],
            ["a.example", "b.example", "a.example"]
        );
        assert!(
            s.claim("w", 10, lease, 2).expect("claim").is_none(),
            "a.example is at its limit of 2"
        );

        // A 429 on a.example pauses the whole host, even though one of its slots frees up.
        let policy = Policy {
            jitter: 0.0,
            ..Policy::default()
        };
        let mut f = Failure::new(FailureKind::RateLimited, "429 Too Many Requests");
        f.retry_after = Some(Duration::from_secs(120));
        let failed = s
            .fail(&first, &f, &policy, 10, 0.0)
            .expect("fail")
            .expect("lease held");
        assert_eq!(failed.job.run_at, 10 + 120_000);
        // The host's other waiting jobs now say when they can really start; b.example's
        // finished job and a2 (running) are untouched.
        let waiting: Vec<(String, Millis)> = {
            let conn = s.conn().expect("conn");
            let mut stmt = conn
                .prepare("SELECT url, run_at FROM jobs WHERE status = 'pending' ORDER BY url")
                .expect("prepare");
            stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
                .expect("query")
                .collect::<rusqlite::Result<_>>()
                .expect("rows")
        };
        assert_eq!(
            waiting,
            vec![
                ("http://a.example/0".to_string(), 120_010),
                ("http://a.example/2".to_string(), 120_010),
                ("http://a.example/3".to_string(), 120_010),
            ]
        );
        assert!(
            s.claim("w", 11, lease, 2).expect("claim").is_none(),
            "host paused"
        );
        assert_eq!(s.next_wakeup(11).expect("wakeup"), Some(120_010));
        // Pause over, but the host is throttled to one connection and a2 still holds it.
        assert!(s.claim("w", 120_010, lease, 2).expect("claim").is_none());
        let ok = Success {
            http_status: 200,
            ..Success::default()
        };
        s.complete(&second, &ok, &policy, 120_010)
            .expect("complete");
        let again = s
            .claim("w", 120_010, lease, 2)
            .expect("claim")
            .expect("after pause");
        assert_eq!(again.host, "a.example");
    }

    #[test]
    fn a_failure_backs_off_then_dies_with_its_history() {
        let s = Store::open_in_memory().expect("store");
        s.enqueue(None, &[job("http://a.example/")], 2, 0)
            .expect("enqueue");
        let policy = Policy {
            jitter: 0.0,
            max_retries: 2,
            ..Policy::default()
        };
        let mut now = 0;
        let mut f = Failure::new(FailureKind::ServerError, "500 Internal Server Error");
        f.http_status = Some(500);
        for expected_delay in [30_000, 60_000] {
            let c = s
                .claim("w", now, Duration::from_secs(60), 2)
                .expect("claim")
                .expect("due");
            let failed = s
                .fail(&c, &f, &policy, now, 0.0)
                .expect("fail")
                .expect("held");
            assert_eq!(failed.job.status, Status::Pending);
            assert_eq!(failed.job.retry_after, Some(now + expected_delay));
            now += expected_delay;
        }
        let c = s
            .claim("w", now, Duration::from_secs(60), 2)
            .expect("claim")
            .expect("due");
        let failed = s
            .fail(&c, &f, &policy, now, 0.0)
            .expect("fail")
            .expect("held");
        assert_eq!(failed.job.status, Status::Dead);
        assert_eq!(failed.job.attempts, 3);
        let history = s.attempts(failed.job.id).expect("attempts");
        assert_eq!(history.len(), 3);
        assert_eq!(history[0].delay_ms, Some(30_000));
        assert_eq!(history[2].delay_ms, None);
        assert!(
            history
                .iter()
                .all(|a| a.outcome.as_deref() == Some("transient"))
        );

        // A manual retry gives a fresh budget and keeps the history.
        let ids = s.retry_dead(None, 2, now).expect("retry");
        assert_eq!(ids, vec![failed.job.id]);
        let revived = s.job(failed.job.id).expect("read").expect("job");
        assert_eq!(
            (
                revived.status,
                revived.error_class,
                revived.error.as_deref()
            ),
            (Status::Pending, None, None),
            "no death verdict on a job queued again"
        );
        assert_eq!(s.attempts(revived.id).expect("attempts").len(), 3);
        let c = s
            .claim("w", now, Duration::from_secs(60), 2)
            .expect("claim")
            .expect("due again");
        let failed = s
            .fail(&c, &f, &policy, now, 0.0)
            .expect("fail")
            .expect("held");
        assert_eq!(
            failed.decision,
            Decision::Retry {
                delay: Duration::from_secs(30),
                retry: Some((1, 2)),
                pause_host: None
            }
        );
        assert_eq!(s.attempts(failed.job.id).expect("attempts").len(), 4);
    }

    #[test]
    fn a_rate_limit_throttles_the_host_until_a_run_of_successes() {
        let s = Store::open_in_memory().expect("store");
        let jobs: Vec<_> = (0..30)
            .map(|i| job(&format!("http://a.example/{i}")))
            .collect();
        s.enqueue(None, &jobs, 5, 0).expect("enqueue");
        let policy = Policy {
            jitter: 0.0,
            ..Policy::default()
        };
        let ok = Success {
            http_status: 200,
            ..Success::default()
        };
        let lease = Duration::from_secs(60);
        let first = s.claim("w", 0, lease, 2).expect("claim").expect("job");
        let f = Failure::new(FailureKind::RateLimited, "429 Too Many Requests");
        s.fail(&first, &f, &policy, 0, 0.0)
            .expect("fail")
            .expect("held");
        let after = 31_000;
        assert_eq!(s.hosts(after).expect("hosts")[0].concurrency_limit, Some(1));
        let stats = s.stats(after).expect("stats");
        assert_eq!(stats.throttled_hosts.len(), 1, "visible in stats");
        let one = s.claim("w", after, lease, 2).expect("claim").expect("one");
        assert!(
            s.claim("w", after, lease, 2).expect("claim").is_none(),
            "throttled to 1 connection"
        );
        s.complete(&one, &ok, &policy, after).expect("done");
        for _ in 1..RECOVERY_STREAK {
            let c = s.claim("w", after, lease, 2).expect("claim").expect("job");
            s.complete(&c, &ok, &policy, after).expect("done");
        }
        // Ten successes in a row: back to the policy's 2, and no limit of its own any more.
        assert!(s.hosts(after).expect("hosts").is_empty());
        assert!(s.claim("w", after, lease, 2).expect("claim").is_some());
        assert!(s.claim("w", after, lease, 2).expect("claim").is_some());
    }

    #[test]
    fn retries_used_counts_only_the_retries_the_budget_paid_for() {
        let s = Store::open_in_memory().expect("store");
        s.enqueue(None, &[job("http://a.example/1")], 2, 0)
            .expect("enqueue");
        let policy = Policy {
            jitter: 0.0,
            max_retries: 2,
            ..Policy::default()
        };
        let lease = Duration::from_secs(60);
        let mut now = 0;
        let mut attempt = |kind: FailureKind| {
            // An hour apart: past any backoff or host pause these failures set.
            now += 3_600_000;
            let c = s.claim("w", now, lease, 2).expect("claim").expect("due");
            s.fail(&c, &Failure::new(kind, "failed"), &policy, now, 0.0)
                .expect("fail")
                .expect("held");
            let j = s.job(c.job_id).expect("read").expect("job");
            (j.attempts, j.retries_used, j.status)
        };
        // Rate-limit waits spend nothing.
        assert_eq!(attempt(FailureKind::RateLimited), (1, 0, Status::Pending));
        assert_eq!(attempt(FailureKind::RateLimited), (2, 0, Status::Pending));
        // Two retries are paid for; the third failure finds the budget spent and buys none.
        assert_eq!(attempt(FailureKind::Timeout), (3, 1, Status::Pending));
        assert_eq!(attempt(FailureKind::Timeout), (4, 2, Status::Pending));
        assert_eq!(attempt(FailureKind::Timeout), (5, 2, Status::Dead));
    }

    #[test]
    fn paused_queue_and_paused_host_start_nothing() {
        let s = Store::open_in_memory().expect("store");
        s.enqueue(
            None,
            &[job("http://a.example/1"), job("http://b.example/1")],
            5,
            0,
        )
        .expect("enqueue");
        let lease = Duration::from_secs(60);
        s.set_queue_paused(true).expect("pause");
        assert!(s.claim("w", 0, lease, 2).expect("claim").is_none());
        assert!(s.stats(0).expect("stats").queue_paused);
        s.set_queue_paused(false).expect("resume");
        s.pause_host("A.example", 0).expect("pause host");
        assert_eq!(
            s.claim("w", 0, lease, 2).expect("claim").expect("b").host,
            "b.example"
        );
        assert!(s.claim("w", 0, lease, 2).expect("claim").is_none());
        assert!(s.resume_host("a.example", 0).expect("resume"));
        assert_eq!(
            s.claim("w", 0, lease, 2).expect("claim").expect("a").host,
            "a.example"
        );
    }

    #[test]
    fn the_claim_rotates_across_batches() {
        let s = Store::open_in_memory().expect("store");
        let big: Vec<_> = (0..100)
            .map(|i| job(&format!("http://a{i}.example/")))
            .collect();
        let small: Vec<_> = (0..3)
            .map(|i| job(&format!("http://b{i}.example/")))
            .collect();
        s.enqueue(None, &big, 5, 0).expect("enqueue big");
        s.enqueue(None, &small, 5, 1).expect("enqueue small");
        let lease = Duration::from_secs(60);
        let hosts: Vec<String> = (0..8)
            .map(|_| {
                s.claim("w", 10, lease, 2)
                    .expect("claim")
                    .expect("job")
                    .host
            })
            .collect();
        assert_eq!(
            hosts,
            ["a0", "b0", "a1", "b1", "a2", "b2", "a3", "a4"].map(|h| format!("{h}.example"))
        );
    }

    #[test]
    fn a_batch_moves_to_the_back_of_the_rotation_only_behind_another() {
        let s = Store::open_in_memory().expect("store");
        let jobs: Vec<_> = (0..6)
            .map(|i| job(&format!("http://a{i}.example/")))
            .collect();
        s.enqueue(None, &jobs, 5, 0).expect("enqueue");
        let places = || -> Vec<(i64, i64)> {
            s.conn()
                .expect("conn")
                .prepare("SELECT id, served_seq FROM batches ORDER BY id")
                .expect("prepare")
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
                .expect("query")
                .collect::<rusqlite::Result<_>>()
                .expect("rows")
        };
        let lease = Duration::from_secs(60);
        let claim = || {
            s.claim("w", 10, lease, 2)
                .expect("claim")
                .expect("job")
                .host
        };
        // Alone, the batch keeps its place: no write to `batches_rotation` per claim.
        let alone = places();
        claim();
        claim();
        assert_eq!(places(), alone);
        // Behind a new batch, each claim moves the batch it served behind the other.
        s.enqueue(
            None,
            &[job("http://b0.example/"), job("http://b1.example/")],
            5,
            1,
        )
        .expect("enqueue");
        let served: Vec<String> = (0..4).map(|_| claim()).collect();
        assert_eq!(
            served,
            ["a2", "b0", "a3", "b1"].map(|h| format!("{h}.example"))
        );
        let p = places();
        assert!(p[1].1 > p[0].1, "the batch served last is behind: {p:?}");
    }

    #[test]
    fn hosts_take_turns_inside_a_batch() {
        let s = Store::open_in_memory().expect("store");
        let mut jobs: Vec<_> = (0..300)
            .map(|i| job(&format!("http://journal.example/{i}")))
            .collect();
        jobs.extend((0..2).map(|i| job(&format!("http://small.example/{i}"))));
        jobs.extend((0..2).map(|i| job(&format!("http://blog.example/{i}"))));
        s.enqueue(None, &jobs, 5, 0).expect("enqueue");
        let hosts: Vec<String> = (0..8)
            .map(|_| {
                s.claim("w", 10, Duration::from_secs(60), 100)
                    .expect("claim")
                    .expect("job")
                    .host
            })
            .collect();
        assert_eq!(
            hosts,
            [
                "journal", "small", "blog", "journal", "small", "blog", "journal", "journal"
            ]
            .map(|h| format!("{h}.example"))
        );
    }

    #[test]
    fn a_paused_host_with_a_backlog_at_the_head_costs_the_claim_the_same_at_any_size() {
        // SQLite's own count of virtual-machine instructions, not a timing: the claim's work
        // must not grow with the paused host's backlog.
        let claim_cost = |backlog: usize| -> u64 {
            let s = Store::open_in_memory().expect("store");
            let mut jobs: Vec<_> = (0..backlog)
                .map(|i| job(&format!("http://paused.example/{i}")))
                .collect();
            jobs.push(job("http://open.example/1"));
            s.enqueue(None, &jobs, 5, 0).expect("enqueue");
            s.pause_host("paused.example", 1).expect("pause");
            let (c, ops) = vm_ops(&s, || s.claim("w", 10, Duration::from_secs(60), 2));
            assert_eq!(c.expect("claim").expect("job").host, "open.example");
            assert!(s.resume_host("paused.example", 20).expect("resume"));
            let c = s
                .claim("w", 20, Duration::from_secs(60), 2)
                .expect("claim")
                .expect("resumed");
            assert_eq!(c.host, "paused.example");
            ops
        };
        let small = claim_cost(10);
        let big = claim_cost(10_000);
        eprintln!("claim VM ops: {small} past 10 paused rows, {big} past 10,000");
        assert!(
            big <= small + 200,
            "a claim past 10 paused rows took {small} VM ops, past 10,000 took {big}"
        );
    }

    /// `f`'s SQLite VM instructions on this store's connection, to the nearest 10.
    fn vm_ops<T>(s: &Store, f: impl FnOnce() -> T) -> (T, u64) {
        use std::sync::atomic::{AtomicU64, Ordering};
        let count = std::sync::Arc::new(AtomicU64::new(0));
        let counter = count.clone();
        s.conn().expect("conn").progress_handler(
            10,
            Some(move || {
                counter.fetch_add(10, Ordering::Relaxed);
                false
            }),
        );
        let out = f();
        s.conn()
            .expect("conn")
            .progress_handler(10, None::<fn() -> bool>);
        (out, count.load(Ordering::Relaxed))
    }

    #[test]
    fn one_step_commits_a_group_of_outcomes_and_claims_the_freed_slots() {
        let s = Store::open_in_memory().expect("store");
        let jobs: Vec<_> = (0..6)
            .map(|i| job(&format!("http://h{i}.example/")))
            .collect();
        s.enqueue(None, &jobs, 5, 0).expect("enqueue");
        let policy = Policy {
            jitter: 0.0,
            ..Policy::default()
        };
        let request = ClaimRequest {
            owner: "w",
            lease: Duration::from_secs(60),
            per_host: 2,
            max: 3,
        };
        let first = s
            .step(&mut Vec::new(), &policy, 10, Some(&request))
            .expect("step");
        assert!(first.settled.is_empty());
        let ids: Vec<i64> = first.claimed.iter().map(|c| c.job_id).collect();
        assert_eq!(ids, [1, 2, 3]);
        // Job 2 is cancelled while in flight: its success is discarded, the others commit.
        s.cancel(&[2], 11).expect("cancel");
        let mut server = Failure::new(FailureKind::ServerError, "500 Internal Server Error");
        server.http_status = Some(500);
        let ok = Success {
            http_status: 200,
            ..Success::default()
        };
        let mut finished = vec![
            (first.claimed[0].clone(), Finish::Success(ok.clone())),
            (first.claimed[1].clone(), Finish::Success(ok)),
            (
                first.claimed[2].clone(),
                Finish::Failure {
                    failure: server,
                    unit: 0.0,
                },
            ),
        ];
        let second = s
            .step(&mut finished, &policy, 12, Some(&request))
            .expect("step");
        let results: Vec<(i64, &str)> = second
            .settled
            .iter()
            .map(|(c, _, settled)| {
                (
                    c.job_id,
                    match settled {
                        Settled::Done => "done",
                        Settled::Failed(f) => f.job.status.as_str(),
                        Settled::Offline(_) => "offline",
                        Settled::Local(_) => "local",
                        Settled::Discarded => "discarded",
                    },
                )
            })
            .collect();
        assert_eq!(results, [(1, "done"), (2, "discarded"), (3, "pending")]);
        let ids: Vec<i64> = second.claimed.iter().map(|c| c.job_id).collect();
        assert_eq!(ids, [4, 5, 6], "job 3 waits 30 s for its retry");
        // The whole step is one transaction: every outcome and claim is in the database.
        assert_eq!(s.job(3).expect("job").expect("row").run_at, 12 + 30_000);
        assert_eq!(s.stats(12).expect("stats").running, 3);
    }

    #[test]
    fn a_job_queued_before_its_lanes_cursor_is_still_claimed() {
        // The wall clock stepped back between two intakes into one batch: the second job's
        // key sorts before the lane's cursor, which enqueue must move back to it.
        let s = Store::open_in_memory().expect("store");
        let batch = s.create_batch("b", "cli", 0).expect("batch");
        s.enqueue(Some(batch), &[job("http://a.example/later")], 5, 100)
            .expect("enqueue");
        s.enqueue(Some(batch), &[job("http://a.example/earlier")], 5, 50)
            .expect("enqueue");
        let c = s
            .claim("w", 60, Duration::from_secs(60), 2)
            .expect("claim")
            .expect("the job due at 50");
        assert_eq!(c.url, "http://a.example/earlier");
    }

    #[test]
    fn a_job_that_becomes_pending_among_keys_read_ahead_is_claimed_in_its_turn() {
        // The claim remembers the keys that follow a lane's cursor (`LaneKeys`). Job 2 fails
        // and waits for a retry due between jobs 3 and 4, whose keys the claim has already
        // read: it must come back between them, not be passed over.
        let s = Store::open_in_memory().expect("store");
        let batch = s.create_batch("b", "cli", 0).expect("batch");
        for (path, at) in [("1", 0), ("2", 0), ("3", 50), ("4", 60_000)] {
            s.enqueue(
                Some(batch),
                &[job(&format!("http://a.example/{path}"))],
                5,
                at,
            )
            .expect("enqueue");
        }
        let policy = Policy {
            jitter: 0.0,
            ..Policy::default()
        };
        let lease = Duration::from_secs(600);
        let first = s.claim("w", 10, lease, 9).expect("claim").expect("job 1");
        let second = s.claim("w", 10, lease, 9).expect("claim").expect("job 2");
        assert_eq!((first.job_id, second.job_id), (1, 2));
        s.fail(
            &second,
            &Failure::new(FailureKind::Timeout, "timed out"),
            &policy,
            10,
            0.0,
        )
        .expect("fail");
        let due = s.job(2).expect("job").expect("row").run_at;
        assert!(50 < due && due < 60_000, "due at {due}");
        let order: Vec<i64> =
            std::iter::from_fn(|| s.claim("w", 100_000, lease, 9).expect("claim"))
                .map(|c| c.job_id)
                .collect();
        assert_eq!(order, [3, 2, 4]);
    }

    #[test]
    fn a_claim_rolled_back_leaves_no_remembered_key_ahead_of_the_database() {
        // The claim moves the lane's remembered cursor in memory before its transaction
        // commits; if the transaction then fails, the next claim must read the lane again
        // rather than trust keys past a job that is still pending.
        let s = Store::open_in_memory().expect("store");
        let jobs: Vec<_> = (1..=3)
            .map(|i| job(&format!("http://a.example/{i}")))
            .collect();
        s.enqueue(None, &jobs, 2, 0).expect("enqueue");
        let lease = Duration::from_secs(60);
        let first = s.claim("w", 1, lease, 9).expect("claim").expect("job");
        assert_eq!(first.job_id, 1);
        // Fail the claim's last write, after job 2 was started and its lane moved past it.
        let conn = || s.conn().expect("connection");
        conn()
            .execute_batch(
                "CREATE TEMP TRIGGER fail_the_claim BEFORE UPDATE ON main.batches \
                 BEGIN SELECT RAISE(ABORT, 'injected'); END;",
            )
            .expect("trigger");
        assert!(s.claim("w", 1, lease, 9).is_err(), "the claim must fail");
        conn()
            .execute_batch("DROP TRIGGER fail_the_claim")
            .expect("drop");
        let status: String = conn()
            .query_row("SELECT status FROM jobs WHERE id = 2", [], |r| r.get(0))
            .expect("job 2");
        assert_eq!(status, "pending", "rolled back");
        let order: Vec<i64> = std::iter::from_fn(|| s.claim("w", 1, lease, 9).expect("claim"))
            .map(|c| c.job_id)
            .collect();
        assert_eq!(order, [2, 3]);
    }

    #[test]
    fn two_connections_claiming_from_the_same_lanes_pass_no_pending_job_and_repeat_none() {
        // Each connection remembers keys read ahead in the lanes; the other one's claims,
        // failures and retries must make it read again, never claim a job twice, and never
        // move a lane's cursor past a pending job.
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("queue.db");
        let stores = [
            Store::open(&path).expect("first"),
            Store::open(&path).expect("second"),
        ];
        let policy = Policy {
            jitter: 0.0,
            max_retries: 2,
            ..Policy::default()
        };
        let lease = Duration::from_secs(600);
        let ok = Success {
            http_status: 200,
            ..Success::default()
        };
        let jobs: Vec<_> = (0..60)
            .map(|i| job(&format!("http://h{}.example/{i}", i % 3)))
            .collect();
        stores[0].enqueue(None, &jobs, 2, 0).expect("enqueue");
        let mut roll = rolls(0xfeed);
        let mut now: Millis = 1_000;
        let mut running: Vec<(usize, Claimed)> = Vec::new();
        let finish = |w: usize, c: &Claimed, fail: bool, now: Millis| {
            if fail {
                stores[w]
                    .fail(
                        c,
                        &Failure::new(FailureKind::Timeout, "timed out"),
                        &policy,
                        now,
                        0.0,
                    )
                    .expect("fail");
            } else {
                stores[w].complete(c, &ok, &policy, now).expect("complete");
            }
        };
        for step in 0..600 {
            now += 1 + roll(20_000) as Millis;
            let w = roll(2) as usize;
            let owner = format!("w{w}");
            if let Some(c) = stores[w].claim(&owner, now, lease, 9).expect("claim") {
                assert!(
                    !running.iter().any(|(_, r)| r.job_id == c.job_id),
                    "step {step}: job {} claimed while it runs",
                    c.job_id
                );
                running.push((w, c));
            }
            if !running.is_empty() && roll(2) == 0 {
                let (w, c) = running.swap_remove(roll(running.len() as u64) as usize);
                finish(w, &c, roll(3) == 0, now);
            }
            let hidden = jobs_hidden_from_their_lanes(&stores[0]);
            assert!(hidden.is_empty(), "step {step}: {hidden:?} passed over");
        }
        for (w, c) in running.drain(..) {
            finish(w, &c, false, now);
        }
        let later = now + 86_400_000;
        let mut w = 0;
        while let Some(c) = stores[w].claim("end", later, lease, 9).expect("claim") {
            stores[w]
                .complete(&c, &ok, &policy, later)
                .expect("complete");
            w = 1 - w;
        }
        let stats = stores[1].stats(later).expect("stats");
        assert_eq!((stats.pending, stats.running), (0, 0), "{stats:?}");
        assert_eq!(stats.done + stats.dead, 60, "{stats:?}");
    }

    #[test]
    fn a_revived_job_is_claimable_after_its_lane_was_dropped() {
        let s = Store::open_in_memory().expect("store");
        s.enqueue(None, &[job("http://a.example/1")], 5, 0)
            .expect("enqueue");
        s.enqueue(None, &[job("http://b.example/1")], 5, 0)
            .expect("enqueue");
        let policy = Policy::default();
        let c = s
            .claim("w", 1, Duration::from_secs(60), 2)
            .expect("claim")
            .expect("a");
        let mut gone = Failure::new(FailureKind::ClientError, "404 Not Found");
        gone.http_status = Some(404);
        s.fail(&c, &gone, &policy, 2, 0.0).expect("fail");
        // The next claim finds a's lane empty and drops it.
        let b = s
            .claim("w", 3, Duration::from_secs(60), 2)
            .expect("claim")
            .expect("b");
        assert_eq!(b.host, "b.example");
        s.retry(&[c.job_id], 5, 4).expect("retry");
        let again = s
            .claim("w", 5, Duration::from_secs(60), 2)
            .expect("claim")
            .expect("revived");
        assert_eq!(again.job_id, c.job_id);
    }

    /// A repeatable dice for scripted mixes: `roll(n)` is in 0..n.
    fn rolls(mut seed: u64) -> impl FnMut(u64) -> u64 {
        move |n| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) % n
        }
    }

    /// Pending jobs that no lane's cursor can reach: must always be none.
    fn jobs_hidden_from_their_lanes(s: &Store) -> Vec<i64> {
        let conn = s.conn().expect("conn");
        conn.prepare(
            "SELECT j.id FROM jobs j WHERE j.status = 'pending' AND NOT EXISTS (SELECT 1 FROM lanes l \
                 WHERE l.batch_id = j.batch_id AND l.host = j.host \
                   AND (l.cur_run_at < j.run_at OR (l.cur_run_at = j.run_at AND l.cur_id <= j.id)))",
        )
        .expect("prepare")
        .query_map([], |r| r.get(0))
        .expect("query")
        .collect::<rusqlite::Result<_>>()
        .expect("rows")
    }

    /// The lane trigger fires on `UPDATE OF run_at` (migration 0011), not on `status`, so a
    /// statement that made a job pending without setting `run_at` would leave the job's lane
    /// cursor past it and the job unreachable; and no trigger sees an INSERT.
    #[test]
    fn every_write_that_can_make_a_job_pending_keeps_its_lane() {
        let engine = [
            ("store.rs", include_str!("store.rs")),
            ("worker.rs", include_str!("worker.rs")),
            ("policy.rs", include_str!("policy.rs")),
            ("intake.rs", include_str!("intake.rs")),
            ("library.rs", include_str!("library.rs")),
            ("export.rs", include_str!("export.rs")),
        ];
        let mut checked = 0;
        for (file, source) in engine {
            for (at, _) in source.match_indices("UPDATE jobs") {
                let statement = &source[at..];
                let set = &statement[..statement.find("WHERE").unwrap_or(statement.len())];
                // `status = 'pending'` or `status = ?N` as an assignment (not `http_status`).
                let sets_pending = set.match_indices("status = ").any(|(i, _)| {
                    let before = set[..i].trim_end();
                    let value = &set[i + "status = ".len()..];
                    (before.ends_with("SET") || before.ends_with(','))
                        && (value.starts_with("'pending'") || value.starts_with('?'))
                });
                if sets_pending {
                    assert!(
                        set.contains("run_at ="),
                        "{file}: an UPDATE makes jobs pending without setting run_at: {set}"
                    );
                    checked += 1;
                }
            }
        }
        // Revive by hand, lease recovery, and a failure's retry.
        assert!(checked >= 3, "found only {checked} such statements");
        // And no trigger sees an INSERT: `enqueue` fires the lane trigger for the jobs it
        // inserts, and is the only code outside tests that inserts jobs.
        let code = include_str!("store.rs");
        let code = &code[..code.find("#[cfg(test)]").unwrap_or(code.len())];
        assert_eq!(code.matches("INSERT INTO jobs").count(), 1);
        for (file, source) in &engine[1..] {
            assert!(!source.contains("INSERT INTO jobs"), "{file} inserts jobs");
        }
    }

    #[test]
    fn every_way_back_to_pending_leaves_the_job_reachable_from_its_lanes_cursor() {
        // The claim reads each lane from a cursor it moves past the jobs it takes (migration
        // 0010). Every path that makes a job pending again must leave it reachable: retries,
        // rate-limit moves, "fetch now", revival by hand, crash recovery. A scripted mix of
        // them, checked after every step, then a drain that must finish every job.
        let s = Store::open_in_memory().expect("store");
        let policy = Policy {
            jitter: 0.0,
            max_retries: 3,
            ..Policy::default()
        };
        let lease = Duration::from_secs(60);
        let ok = Success {
            http_status: 200,
            ..Success::default()
        };
        let hosts = ["a.example", "b.example", "c.example"];
        for batch in 0..3 {
            let jobs: Vec<_> = (0..12)
                .map(|i| job(&format!("http://{}/{batch}/{i}", hosts[i % 3])))
                .collect();
            s.enqueue(None, &jobs, 3, 0).expect("enqueue");
        }
        let mut roll = rolls(0x5eed);
        let mut now: Millis = 1_000;
        for step in 0..400 {
            now += 1 + roll(3_000) as Millis;
            let Some(c) = s.claim("w", now, lease, 2).expect("claim") else {
                continue;
            };
            match roll(7) {
                0 | 1 => {
                    s.complete(&c, &ok, &policy, now).expect("complete");
                }
                2 => {
                    s.fail(
                        &c,
                        &Failure::new(FailureKind::Timeout, "timed out"),
                        &policy,
                        now,
                        0.0,
                    )
                    .expect("fail");
                }
                3 => {
                    let mut f = Failure::new(FailureKind::RateLimited, "429 Too Many Requests");
                    f.retry_after = Some(Duration::from_secs(2));
                    s.fail(&c, &f, &policy, now, 0.0).expect("fail");
                }
                4 => {
                    let mut gone = Failure::new(FailureKind::ClientError, "404 Not Found");
                    gone.http_status = Some(404);
                    s.fail(&c, &gone, &policy, now, 0.0).expect("fail");
                    // Revived by hand, now or later.
                    if roll(2) == 0 {
                        s.retry(&[c.job_id], 3, now).expect("revive");
                    }
                }
                5 => {
                    // The worker dies with the job in flight; a new one recovers it.
                    s.recover(&policy, now + 61_000, |_| Liveness::Gone)
                        .expect("recover");
                }
                _ => {
                    // Left in flight while another pending job is fetched now.
                    let pending = s
                        .list_jobs(&JobFilter {
                            status: Some(Status::Pending),
                            ..JobFilter::default()
                        })
                        .expect("list");
                    if let Some(p) = pending.get(roll(pending.len().max(1) as u64) as usize) {
                        s.retry(&[p.id], 3, now).expect("fetch now");
                    }
                    s.complete(&c, &ok, &policy, now).expect("complete");
                }
            }
            let hidden = jobs_hidden_from_their_lanes(&s);
            assert!(
                hidden.is_empty(),
                "step {step}: pending jobs {hidden:?} sit before their lane's cursor"
            );
        }
        // Every job left is reachable: a long drain finishes them all.
        s.recover(&policy, now + 61_000, |_| Liveness::Gone)
            .expect("recover");
        let dead: Vec<i64> = s
            .list_jobs(&JobFilter {
                status: Some(Status::Dead),
                ..JobFilter::default()
            })
            .expect("list")
            .iter()
            .map(|j| j.id)
            .collect();
        s.retry(&dead, 3, now).expect("revive the dead");
        let later = now + 86_400_000;
        while let Some(c) = s.claim("w", later, lease, 99).expect("claim") {
            s.complete(&c, &ok, &policy, later).expect("complete");
        }
        let stats = s.stats(later).expect("stats");
        assert_eq!(
            (stats.pending, stats.running, stats.done),
            (0, 0, 36),
            "{stats:?}"
        );
    }

    #[test]
    fn resuming_a_rate_limited_host_makes_its_waiting_jobs_due_at_once() {
        let s = Store::open_in_memory().expect("store");
        // The host's jobs sit in two batches, so the move must reach every lane of the host.
        s.enqueue(
            None,
            &[job("http://a.example/1"), job("http://a.example/2")],
            5,
            0,
        )
        .expect("enqueue");
        s.enqueue(
            None,
            &[job("http://a.example/3"), job("http://b.example/1")],
            5,
            0,
        )
        .expect("enqueue");
        let policy = Policy {
            jitter: 0.0,
            ..Policy::default()
        };
        let c = s
            .claim("w", 10, Duration::from_secs(60), 2)
            .expect("claim")
            .expect("a1");
        let mut f = Failure::new(FailureKind::RateLimited, "429 Too Many Requests");
        f.retry_after = Some(Duration::from_secs(600));
        s.fail(&c, &f, &policy, 10, 0.0).expect("fail");
        let due_of = |id: i64| s.job(id).expect("job").expect("row").run_at;
        assert_eq!([due_of(1), due_of(2), due_of(3)], [600_010; 3]);
        assert_eq!(due_of(4), 0, "b.example is not paused");
        assert!(s.resume_host("a.example", 20).expect("resume"));
        assert_eq!([due_of(1), due_of(2), due_of(3)], [20; 3]);
    }

    #[test]
    fn fetch_now_puts_a_pending_job_ahead_of_every_due_job() {
        let s = Store::open_in_memory().expect("store");
        let jobs: Vec<_> = (0..5)
            .map(|i| job(&format!("http://a.example/{i}")))
            .collect();
        s.enqueue(None, &jobs, 5, 0).expect("enqueue");
        s.retry(&[5], 5, 10).expect("fetch now");
        assert_eq!(
            s.claim("w", 10, Duration::from_secs(60), 9)
                .expect("claim")
                .expect("job")
                .job_id,
            5
        );
    }

    #[test]
    fn each_death_is_announced_once() {
        let s = Store::open_in_memory().expect("store");
        s.enqueue(
            None,
            &[job("http://a.example/1"), job("http://a.example/2")],
            5,
            0,
        )
        .expect("enqueue");
        let policy = Policy::default();
        let f = Failure::new(FailureKind::ClientError, "404 Not Found");
        let c = s
            .claim("w", 0, Duration::from_secs(60), 2)
            .expect("claim")
            .expect("job");
        s.fail(&c, &f, &policy, 1, 0.0)
            .expect("fail")
            .expect("held");
        let first = s.take_unannounced_deaths(10).expect("take");
        assert_eq!(first.len(), 1);
        assert_eq!(first[0].error.as_deref(), Some("404 Not Found (fatal)"));
        assert!(
            s.take_unannounced_deaths(10).expect("take").is_empty(),
            "announced once"
        );
        // A manual retry that dies again is a new death.
        s.retry(&[c.job_id], 5, 2).expect("retry");
        let c = s
            .claim("w", 2, Duration::from_secs(60), 2)
            .expect("claim")
            .expect("job");
        s.fail(&c, &f, &policy, 3, 0.0)
            .expect("fail")
            .expect("held");
        assert_eq!(s.take_unannounced_deaths(10).expect("take").len(), 1);
    }

    #[test]
    fn a_lost_lease_cannot_complete() {
        let s = Store::open_in_memory().expect("store");
        s.enqueue(None, &[job("http://a.example/")], 5, 0)
            .expect("enqueue");
        let c = s
            .claim("w", 0, Duration::from_secs(60), 2)
            .expect("claim")
            .expect("job");
        s.cancel(&[c.job_id], 1).expect("cancel");
        let done = s
            .complete(
                &c,
                &Success {
                    http_status: 200,
                    ..Success::default()
                },
                &Policy::default(),
                2,
            )
            .expect("complete");
        assert!(done.is_none());
        assert_eq!(
            s.job(c.job_id).expect("job").expect("row").status,
            Status::Cancelled
        );
    }

    #[test]
    fn recovery_requeues_orphans_and_counts_the_attempt() {
        let s = Store::open_in_memory().expect("store");
        s.enqueue(
            None,
            &[job("http://a.example/1"), job("http://b.example/2")],
            1,
            0,
        )
        .expect("enqueue");
        let lease = Duration::from_secs(60);
        let dead_owner = s.claim("gone", 0, lease, 2).expect("claim").expect("1");
        let live_owner = s.claim("alive", 0, lease, 2).expect("claim").expect("2");
        let policy = Policy {
            max_retries: 1,
            ..Policy::default()
        };
        let judge = |o: &str| {
            if o == "alive" {
                Liveness::Alive
            } else {
                Liveness::Gone
            }
        };
        let recovered = s.recover(&policy, 10, judge).expect("recover");
        assert_eq!(recovered.len(), 1);
        let j = s.job(dead_owner.job_id).expect("job").expect("row");
        assert_eq!((j.status, j.attempts, j.run_at), (Status::Pending, 1, 10));
        assert_eq!(
            s.job(live_owner.job_id).expect("job").expect("row").status,
            Status::Running
        );
        let h = s.attempts(dead_owner.job_id).expect("attempts");
        assert_eq!(h[0].outcome.as_deref(), Some("interrupted"));
        // Crash again: with one retry allowed, the second interruption kills it.
        let again = s
            .claim("gone", 10, lease, 2)
            .expect("claim")
            .expect("again");
        assert_eq!(again.job_id, dead_owner.job_id);
        s.recover(&policy, 20, judge).expect("recover");
        assert_eq!(
            s.job(again.job_id).expect("job").expect("row").status,
            Status::Dead
        );
        // A live owner keeps its job past its lease (the wall clock jumped, or the laptop
        // slept); an owner that cannot be judged loses it once the lease expires.
        let kept = s.recover(&policy, 61_000, judge).expect("recover");
        assert!(kept.is_empty(), "{kept:?}");
        let rec = s
            .recover(&policy, 61_000, |_| Liveness::Unknown)
            .expect("recover");
        assert_eq!(rec.len(), 1);
        assert_eq!(rec[0].job.id, live_owner.job_id);
    }

    #[test]
    fn the_statements_run_for_every_job_build_no_temporary_b_tree() {
        // A temporary B-tree per statement (for `RETURNING` rows, or for a constant IN list
        // of more than two values, as the old status CHECK had) cost a tenth of a drain.
        let s = Store::open_in_memory().expect("store");
        let conn = s.conn().expect("conn");
        for sql in [
            CLAIM_JOB_SQL,
            COMPLETE_SQL,
            END_ATTEMPT_SQL,
            LANE_HEAD_AT,
            LANE_HEAD_AFTER,
            LANE_KEYS_AT,
            LANE_KEYS_AFTER,
            LANE_CURSOR,
            LANE_ADVANCE,
            CLAIM_LANES,
            CLAIM_HOST,
            CLAIM_BATCHES,
            SERVED_LANE_SQL,
            TO_BACK_SQL,
            "SELECT url, attempts FROM jobs WHERE id = ?1",
        ] {
            let mut explain = conn.prepare(&format!("EXPLAIN {sql}")).expect("prepare");
            // Unbound parameters are NULL; EXPLAIN only lists the program.
            let opcodes: Vec<String> = explain
                .raw_query()
                .mapped(|r| r.get::<_, String>(1))
                .collect::<rusqlite::Result<_>>()
                .expect("opcodes");
            assert!(
                !opcodes.iter().any(|op| op == "OpenEphemeral"),
                "{sql} opens a temporary B-tree"
            );
        }
        let qpsg = conn
            .db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG)
            .expect("db_config");
        assert!(
            qpsg,
            "cached statements are not re-prepared for new bound values"
        );
    }

    /// The lines of `EXPLAIN QUERY PLAN` for `sql` with `args`.
    fn query_plan(conn: &Connection, sql: &str, args: impl rusqlite::Params) -> String {
        let rows: Vec<String> = conn
            .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
            .expect("prepare")
            .query_map(args, |r| r.get::<_, String>(3))
            .expect("plan")
            .collect::<rusqlite::Result<_>>()
            .expect("rows");
        rows.join("\n")
    }

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

    #[test]
    fn the_claim_walks_indexes_without_sorting() {
        let s = Store::open_in_memory().expect("store");
        let conn = s.conn().expect("conn");
        let plan_of = |sql: &str, args: &[&dyn rusqlite::ToSql]| query_plan(&conn, sql, args);
        for (sql, args, indexes) in [
            (
                CLAIM_BATCHES,
                vec![&5 as &dyn rusqlite::ToSql],
                &["batches_rotation", "jobs_batch_due"][..],
            ),
            (
                CLAIM_LANES,
                vec![&1 as &dyn rusqlite::ToSql, &0, &"h", &16, &99, &"z"],
                &["lanes_rotation"][..],
            ),
            (
                // The seek reaches the cursor's job: no walk over the lane's finished jobs.
                LANE_HEAD_AT,
                vec![&1 as &dyn rusqlite::ToSql, &"h", &5, &7],
                &["jobs_lane (batch_id=? AND host=? AND run_at=? AND rowid>?)"][..],
            ),
            (
                LANE_HEAD_AFTER,
                vec![&1 as &dyn rusqlite::ToSql, &"h", &5],
                &["jobs_lane (batch_id=? AND host=? AND run_at>?)"][..],
            ),
            (
                // The index alone: a lane's keys are read without its rows.
                LANE_KEYS_AT,
                vec![&1 as &dyn rusqlite::ToSql, &"h", &5, &7, &16],
                &["COVERING INDEX jobs_lane (batch_id=? AND host=? AND run_at=? AND rowid>?)"][..],
            ),
            (
                LANE_KEYS_AFTER,
                vec![&1 as &dyn rusqlite::ToSql, &"h", &5, &16],
                &["COVERING INDEX jobs_lane (batch_id=? AND host=? AND run_at>?)"][..],
            ),
            (
                CLAIM_HOST,
                vec![&"h" as &dyn rusqlite::ToSql, &5],
                &["sqlite_autoindex_hosts_1", "jobs_running_host"][..],
            ),
        ] {
            let plan = plan_of(sql, &args);
            for index in indexes {
                assert!(plan.contains(index), "{sql}:\n{plan}");
            }
            assert!(!plan.contains("TEMP B-TREE"), "{sql}:\n{plan}");
            assert!(!plan.starts_with("SCAN jobs"), "{sql}:\n{plan}");
        }
    }

    #[test]
    fn a_worker_that_never_pauses_keeps_its_wal_small_and_rewinds_it_in_place() {
        // A background checkpoint alone never lets the WAL start again under a writer that
        // commits without a pause; the writer's own checkpoint past `reset_frames` must, and
        // the file keeps its size for the frames that follow.
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("queue.db");
        let store = Store::open(&path).expect("open");
        store
            .checkpoint_in_background_resetting_at(256)
            .expect("checkpointer");
        let jobs: Vec<_> = (0..2_000)
            .map(|i| job(&format!("http://h{}.example/{i}", i % 50)))
            .collect();
        store.enqueue(None, &jobs, 2, 0).expect("enqueue");
        let ok = Success {
            http_status: 200,
            ..Success::default()
        };
        let request = ClaimRequest {
            owner: "w",
            lease: Duration::from_secs(600),
            per_host: 2,
            max: 4,
        };
        let wal = dir.path().join("queue.db-wal");
        let (mut finished, mut done, mut largest) = (Vec::new(), 0, 0);
        let (mut size, mut cut_back) = (0, Vec::new());
        loop {
            let step = store
                .step(&mut finished, &Policy::default(), 1_000, Some(&request))
                .expect("step");
            done += step.settled.len();
            let now = std::fs::metadata(&wal).map_or(0, |m| m.len());
            if now < size {
                cut_back.push((size, now));
            }
            size = now;
            largest = largest.max(size);
            if step.claimed.is_empty() {
                break;
            }
            finished = (step.claimed.into_iter())
                .map(|c| (c, Finish::Success(ok.clone())))
                .collect();
        }
        assert_eq!(done, 2_000);
        // 256 frames are 1 MiB; without the writer's checkpoint this drain grows the WAL to
        // about 25 MB.
        assert!(largest < 4 << 20, "the WAL grew to {largest} bytes");
        // Rewound in place: a file cut back below what the next 256 frames need is grown again
        // block by block. (When a checkpoint waits for the background one, the WAL passes the
        // mark by a few commits; one past the limit is cut back to the limit, which is fine.)
        assert!(
            cut_back.iter().all(|&(_, to)| to as i64 >= wal_bytes(256)),
            "the WAL file was cut back below 256 frames: {cut_back:?}"
        );
    }
}
