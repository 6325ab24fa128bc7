//! Peer harness: apalis 1.0 + apalis-sqlite 1.0 for the Gleaner job-queue
//! benchmark.
//!
//!     bench/apalis/run.sh <NORMAL|FULL> <workers:1|4> [n=100000] [--drain-only]
//!     (or this binary directly with the same arguments; `--versions` prints
//!     the crate and SQLite versions and exits)
//!
//! Prints one JSON line per measurement on stdout:
//!     {"peer":"apalis","sync":..,"op":..,"workers":..,"n":..,"seconds":..,
//!      "per_sec":..,"peak_rss_mb":..}
//!
//! Every measured operation runs in its own fresh child process (this binary
//! re-executed with APALIS_BENCH_CHILD=1), so peak_rss_mb (VmHWM from
//! /proc/self/status, MiB) belongs to that operation only.
//!
//!   enqueue_one   : `TaskSink::push(Noop)` N times, awaited one by one. Each
//!                   push is one sqlx transaction (BEGIN; one INSERT; COMMIT)
//!                   on a pooled connection.
//!   enqueue_batch : `TaskSink::push_bulk(Vec<Noop>)` once, apalis's bulk
//!                   API. SqliteStorage buffers the N tasks in its Sink and
//!                   flushes them with `Persistence::push_tasks`, i.e. ONE
//!                   transaction holding N single-row INSERTs
//!                   (apalis_sqlite::queries::push_tasks).
//!   drain         : the db that enqueue_batch filled (not timed), then W
//!                   apalis workers -- W independent `WorkerBuilder` instances
//!                   ("bench-worker-0".."W-1"), each with its own
//!                   SqliteStorage clone (own fetch loop, own registration in
//!                   the Workers table) and `.concurrency(1)`, all on one sqlx
//!                   pool in one tokio process. That is the analogue of "W
//!                   workers" in the other harnesses: W independent claimers,
//!                   each running one job at a time (Gleaner: W threads, huey:
//!                   W consumer threads, plainjob: W processes). The handler
//!                   does nothing and returns Ok. Timed from spawning the
//!                   workers until every worker's run() has returned: the
//!                   handler that counts the N-th completion signals every
//!                   worker to stop, and a stopping apalis worker first
//!                   writes its outstanding acks (poll_close flushes the
//!                   Complete events), so the clock stops only when all N are
//!                   committed as Done. Then the db is checked by SQL: N rows
//!                   status='Done', nothing else.
//!                   (APALIS_DRAIN_MODE=concurrency instead runs ONE worker
//!                   with `.concurrency(W)`, for comparison only.)
//!
//! Drain size: APALIS_DRAIN_N (default: n) sets the number of jobs the drain
//! empties, so that the enqueue rows can stay at n = 100,000 while the drain
//! uses fewer jobs; the drain line's "n" is the drained count. Why: with
//! apalis-sqlite 1.0.0 the cost of each job in a drain grows linearly with
//! the queue's depth, so a whole drain grows quadratically (one worker,
//! NORMAL, loaded machine: 2,000 jobs at ~490/s, 5,000 at ~260/s, 20,000 at
//! ~70/s in 283 s; 100,000 would take hours). SQLite's plans for two of its
//! statements (EXPLAIN QUERY PLAN on a 100,000-job db):
//!   - the Lock UPDATE (queries/task/lock.sql, `id IN (SELECT value FROM
//!     json_each(?1)) AND (status = 'Queued' OR status = 'Pending' OR ..)`)
//!     runs as a MULTI-INDEX OR over idx_jobs_status_run_at(status=?), i.e.
//!     it visits every Pending row (28 ms with 50,000 pending);
//!   - the ack UPDATE (queries/task/ack.sql, `UPDATE Jobs .. FROM
//!     json_each(?1) .. WHERE Jobs.id = j.task_id AND Jobs.lock_by = ?2`)
//!     runs as a SEARCH on LIdx(lock_by=?) with json_each scanned for every
//!     row, and finished jobs keep their lock_by, so it visits every job this
//!     worker has ever finished (67 ms with 50,000).
//!
//! apalis-sqlite settings: Config::default() except the queue name, i.e.
//! batch_size 10 (a fetch claims up to 10 jobs in one UPDATE .. RETURNING),
//! lock_tasks = true (a Lock event marks each job Running), persist_results
//! = true (a Complete event acks it); events are written in batches, one
//! transaction per drained batch of events. heartbeat 30 s.
//!
//! Polling: a bare SqliteStorage has no poll timer: after a fetch comes back
//! empty the worker sleeps until something wakes it (a finished task, its
//! 30 s heartbeat). The harness wraps the storage in apalis's
//! `BackendExt::poll_with_interval(APALIS_POLL_MS, default 1 ms)` -- the
//! smallest whole-millisecond interval (apalis's own examples use 100 ms to
//! 1 s) -- so no measurement includes a poll sleep. In the drain all N jobs
//! are there before the workers start and a worker fetches its next batch as
//! soon as its buffer is empty, so the interval only matters at the tail
//! (idle workers re-fetch every 1 ms). Checked: 5,000-job drains at 1, 10
//! and 100 ms ran within noise of each other.
//!
//! Durability: WAL, and `PRAGMA synchronous` = NORMAL or FULL on every
//! connection of the pool, set through sqlx's SqliteConnectOptions
//! (`.journal_mode(Wal)`, `.synchronous(..)`), which runs the pragmas when it
//! opens each connection. An `after_connect` hook then reads both pragmas
//! back on EVERY new connection and fails the connection on a mismatch; the
//! child reports on stderr how many connections it opened and re-reads the
//! pragmas from a pooled connection after the measurement.
//! Note: `SqliteStorage::setup(&pool)` (apalis-sqlite's migration entry
//! point) itself runs `PRAGMA synchronous = OFF` (plus journal_mode=WAL,
//! temp_store, cache_size, ...) on whichever pooled connection executes it,
//! so a pool that setup() ran on would have one connection at OFF. The
//! harness therefore runs setup() on a separate one-connection pool that it
//! closes before opening the measured pool.
//!
//! sqlx pool: SqlitePoolOptions defaults (max 10 connections, busy_timeout
//! 5 s, test_before_acquire). APALIS_BUSY_TIMEOUT_MS overrides the busy
//! timeout, for comparison runs only.
//!
//! Failures: an apalis worker whose storage gets an error from SQLite (e.g.
//! "database is locked" after the busy timeout) dies: run() returns the
//! error at once (a failed event-flush transaction loses that batch of
//! Lock/Complete events too), so the jobs it had fetched -- possibly already
//! run -- stay 'Queued' with its lock_by until apalis's orphan
//! recovery (another worker's heartbeat, after 2 x 30 s) re-enqueues them.
//! Such a run is reported with ok=false, crashed_workers, db_status and the
//! errors; per_sec is then the jobs the db has as Done / seconds.

use std::{
    io::Write,
    path::{Path, PathBuf},
    process::{Command, Stdio},
    str::FromStr,
    sync::{
        atomic::{AtomicU64, AtomicUsize, Ordering},
        OnceLock,
    },
    time::{Duration, Instant},
};

use apalis::prelude::*;
use apalis_sqlite::{Config, SqliteStorage};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use sqlx::{
    sqlite::{
        SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
    },
    ConnectOptions, Connection, Row,
};

const PEER: &str = "apalis";
const QUEUE: &str = "bench-noop";
const CHILD_ENV: &str = "APALIS_BENCH_CHILD";
const LOCKFILE: &str = include_str!("../Cargo.lock");

type BoxErr = Box<dyn std::error::Error + Send + Sync>;

/// The no-op job. JSON-encoded by apalis as `null`.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Noop;

// ---------------------------------------------------------------- helpers

fn sync_code(sync: &str) -> Option<(SqliteSynchronous, i64)> {
    match sync {
        "OFF" => Some((SqliteSynchronous::Off, 0)),
        "NORMAL" => Some((SqliteSynchronous::Normal, 1)),
        "FULL" => Some((SqliteSynchronous::Full, 2)),
        "EXTRA" => Some((SqliteSynchronous::Extra, 3)),
        _ => None,
    }
}

/// Peak resident set size of this process (VmHWM), MiB.
fn peak_rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map(|kib| kib / 1024.0)
        .unwrap_or(f64::NAN)
}

fn loadavg1() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|v| v.parse().ok()))
        .unwrap_or(f64::NAN)
}

fn lock_version(name: &str) -> String {
    let needle = format!("name = \"{name}\"\nversion = \"");
    LOCKFILE
        .find(&needle)
        .map(|i| {
            let rest = &LOCKFILE[i + needle.len()..];
            rest[..rest.find('"').unwrap_or(0)].to_owned()
        })
        .unwrap_or_else(|| "?".to_owned())
}

fn storage_config() -> Config {
    Config::default().queue(QUEUE)
}

/// sqlx's default busy_timeout is 5 s; APALIS_BUSY_TIMEOUT_MS overrides it
/// (for a comparison run only).
fn busy_timeout() -> Duration {
    std::env::var("APALIS_BUSY_TIMEOUT_MS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .map(Duration::from_millis)
        .unwrap_or(Duration::from_secs(5))
}

fn poll_interval() -> Duration {
    let ms = std::env::var("APALIS_POLL_MS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(1);
    Duration::from_millis(ms.max(1))
}

/// Create the schema with apalis-sqlite's own migrations, on a separate
/// one-connection pool (setup() sets synchronous=OFF on its connection).
async fn setup_db(path: &Path) -> Result<(), BoxErr> {
    let opts = SqliteConnectOptions::new()
        .filename(path)
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal);
    let pool = SqlitePoolOptions::new().max_connections(1).connect_with(opts).await?;
    SqliteStorage::setup(&pool).await?;
    pool.close().await;
    Ok(())
}

static CONNECTIONS: AtomicUsize = AtomicUsize::new(0);

/// The measured pool: WAL + synchronous on every connection, read back on
/// every new connection by after_connect.
async fn open_pool(path: &Path, sync: &str) -> Result<SqlitePool, BoxErr> {
    let (level, want) = sync_code(sync).ok_or("bad sync")?;
    let opts = SqliteConnectOptions::new()
        .filename(path)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(level)
        .busy_timeout(busy_timeout());
    let pool = SqlitePoolOptions::new()
        .after_connect(move |conn, _meta| {
            Box::pin(async move {
                let got: i64 = sqlx::query("PRAGMA synchronous").fetch_one(&mut *conn).await?.get(0);
                let mode: String =
                    sqlx::query("PRAGMA journal_mode").fetch_one(&mut *conn).await?.get(0);
                if got != want || mode != "wal" {
                    return Err(sqlx::Error::Configuration(
                        format!("pragma check failed: synchronous={got} journal_mode={mode}")
                            .into(),
                    ));
                }
                CONNECTIONS.fetch_add(1, Ordering::SeqCst);
                Ok(())
            })
        })
        .connect_with(opts)
        .await?;
    Ok(pool)
}

/// Read the pragmas back from a connection taken from the pool.
async fn pooled_pragmas(pool: &SqlitePool) -> Result<(i64, String, String), BoxErr> {
    let mut conn = pool.acquire().await?;
    let s: i64 = sqlx::query("PRAGMA synchronous").fetch_one(&mut *conn).await?.get(0);
    let j: String = sqlx::query("PRAGMA journal_mode").fetch_one(&mut *conn).await?.get(0);
    let v: String = sqlx::query("SELECT sqlite_version()").fetch_one(&mut *conn).await?.get(0);
    Ok((s, j, v))
}

async fn report_pragmas(role: &str, pool: &SqlitePool, sync: &str) -> Result<(), BoxErr> {
    let (s, j, v) = pooled_pragmas(pool).await?;
    let want = sync_code(sync).unwrap().1;
    eprintln!(
        "[apalis {role}] SQLite {v}; pooled connection reads synchronous={s} journal_mode={j}; \
         {} pool connection(s) opened, each checked synchronous={want} journal_mode=wal",
        CONNECTIONS.load(Ordering::SeqCst)
    );
    if s != want || j != "wal" {
        return Err(format!("pragma read-back failed: synchronous={s} journal_mode={j}").into());
    }
    Ok(())
}

/// Status counts straight from the db file, on a fresh connection.
async fn status_counts(path: &Path) -> Result<serde_json::Map<String, Value>, BoxErr> {
    let mut conn = SqliteConnectOptions::new().filename(path).connect().await?;
    let rows = sqlx::query("SELECT status, COUNT(*) FROM Jobs WHERE job_type = ?1 GROUP BY status")
        .bind(QUEUE)
        .fetch_all(&mut conn)
        .await?;
    let mut m = serde_json::Map::new();
    for r in rows {
        let s: String = r.get(0);
        let c: i64 = r.get(1);
        m.insert(s, json!(c));
    }
    conn.close().await?;
    Ok(m)
}

async fn done_by_worker(path: &Path) -> Result<Vec<i64>, BoxErr> {
    let mut conn = SqliteConnectOptions::new().filename(path).connect().await?;
    let rows = sqlx::query(
        "SELECT lock_by, COUNT(*) FROM Jobs WHERE job_type = ?1 AND status = 'Done' \
         GROUP BY lock_by ORDER BY lock_by",
    )
    .bind(QUEUE)
    .fetch_all(&mut conn)
    .await?;
    conn.close().await?;
    Ok(rows.iter().map(|r| r.get::<i64, _>(1)).collect())
}

fn count(m: &serde_json::Map<String, Value>, k: &str) -> i64 {
    m.get(k).and_then(Value::as_i64).unwrap_or(0)
}

// ------------------------------------------------------------ child roles

async fn child_enqueue(kind: &str, path: &Path, sync: &str, n: usize) -> Result<Value, BoxErr> {
    setup_db(path).await?;
    let pool = open_pool(path, sync).await?;
    let mut storage = SqliteStorage::<Noop>::new(&pool).with_config(storage_config());
    let seconds = match kind {
        "one" => {
            let t0 = Instant::now();
            for _ in 0..n {
                storage.push(Noop).await?;
            }
            t0.elapsed().as_secs_f64()
        }
        "batch" => {
            let jobs = vec![Noop; n];
            let t0 = Instant::now();
            storage.push_bulk(jobs).await?;
            t0.elapsed().as_secs_f64()
        }
        _ => return Err(format!("unknown enqueue kind {kind}").into()),
    };
    let rss = peak_rss_mb();
    report_pragmas(&format!("enqueue-{kind}"), &pool, sync).await?;
    pool.close().await;
    let counts = status_counts(path).await?;
    if count(&counts, "Pending") != n as i64 || counts.len() != 1 {
        return Err(format!("expected {n} Pending jobs, db has {counts:?}").into());
    }
    Ok(json!({"seconds": seconds, "rss": rss}))
}

// The drain's shared state: the handler is a plain fn, so it uses statics
// (one drain per process).
static DONE: AtomicUsize = AtomicUsize::new(0);
static TARGET: AtomicUsize = AtomicUsize::new(usize::MAX);
static T0: OnceLock<Instant> = OnceLock::new();
static LAST_HANDLER_NS: AtomicU64 = AtomicU64::new(0);
static FINISH: OnceLock<tokio::sync::watch::Sender<bool>> = OnceLock::new();

/// The no-op job handler; it only counts, and after the N-th completion
/// tells every worker to stop.
async fn noop(_job: Noop) -> Result<(), BoxDynError> {
    let done = DONE.fetch_add(1, Ordering::SeqCst) + 1;
    if done == TARGET.load(Ordering::SeqCst) {
        let ns = T0.get().map(|t| t.elapsed().as_nanos() as u64).unwrap_or(0);
        LAST_HANDLER_NS.store(ns, Ordering::SeqCst);
        if let Some(tx) = FINISH.get() {
            let _ = tx.send(true);
        }
    }
    Ok(())
}

async fn child_drain(path: &Path, sync: &str, n: usize, workers: usize) -> Result<Value, BoxErr> {
    let mode = std::env::var("APALIS_DRAIN_MODE").unwrap_or_else(|_| "instances".into());
    let (instances, concurrency) = match mode.as_str() {
        "instances" => (workers, 1),
        "concurrency" => (1, workers),
        m => return Err(format!("APALIS_DRAIN_MODE must be instances|concurrency, not {m}").into()),
    };
    let stall_secs: u64 = std::env::var("APALIS_STALL_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(150);
    let poll = poll_interval();

    let pool = open_pool(path, sync).await?;
    let before = status_counts(path).await?;
    if count(&before, "Pending") != n as i64 || before.len() != 1 {
        return Err(format!("drain: db does not hold {n} Pending jobs: {before:?}").into());
    }
    TARGET.store(n, Ordering::SeqCst);
    let (tx, rx) = tokio::sync::watch::channel(false);
    FINISH.set(tx).map_err(|_| "FINISH set twice")?;

    let t0 = Instant::now();
    T0.set(t0).map_err(|_| "T0 set twice")?;
    let mut handles = Vec::new();
    for i in 0..instances {
        let backend = SqliteStorage::<Noop>::new(&pool)
            .with_config(storage_config())
            .poll_with_interval(poll);
        let worker = WorkerBuilder::new(format!("bench-worker-{i}"))
            .backend(backend)
            .concurrency(concurrency)
            .build(noop);
        let rx = rx.clone();
        handles.push(tokio::spawn(worker.run_with_ctx(move |ctx| {
            let mut rx = rx.clone();
            async move {
                let _ = rx.wait_for(|stop| *stop).await;
                // stop() refuses a worker that has not started yet (possible
                // with a tiny n): try again briefly.
                let deadline = Instant::now() + Duration::from_secs(5);
                while ctx.stop().is_err() && Instant::now() < deadline {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
                Ok(())
            }
        })));
    }

    // Wait for the N-th completion, or for every worker to have exited, or
    // for progress to stall (a worker that died with jobs claimed leaves them
    // to apalis's orphan recovery, heartbeat 30 s x 2).
    let mut rx_main = rx.clone();
    let mut last = (0usize, Instant::now());
    let mut stalled = false;
    loop {
        if *rx_main.borrow() || handles.iter().all(|h| h.is_finished()) {
            break;
        }
        let _ = tokio::time::timeout(Duration::from_millis(200), rx_main.changed()).await;
        let d = DONE.load(Ordering::SeqCst);
        if d != last.0 {
            last = (d, Instant::now());
        } else if last.1.elapsed() > Duration::from_secs(stall_secs) {
            eprintln!("[apalis drain] stalled at {d} of {n} completions for {stall_secs} s");
            stalled = true;
            break;
        }
    }
    if stalled || !*rx_main.borrow() {
        let _ = FINISH.get().unwrap().send(true);
    }
    let mut crashed = 0usize;
    let mut errors = Vec::new();
    for h in handles {
        match tokio::time::timeout(Duration::from_secs(60), h).await {
            Ok(Ok(Ok(()))) => {}
            Ok(Ok(Err(e))) => {
                crashed += 1;
                errors.push(e.to_string());
            }
            Ok(Err(e)) => {
                crashed += 1;
                errors.push(format!("join: {e}"));
            }
            Err(_) => {
                crashed += 1;
                errors.push("worker did not stop within 60 s".into());
            }
        }
    }
    let seconds = t0.elapsed().as_secs_f64();
    let rss = peak_rss_mb();
    for e in &errors {
        eprintln!("[apalis drain] worker error: {e}");
    }
    report_pragmas("drain", &pool, sync).await?;
    pool.close().await;

    let counts = status_counts(path).await?;
    let per_worker = done_by_worker(path).await?;
    let done = count(&counts, "Done");
    let failed = count(&counts, "Failed") + count(&counts, "Killed");
    let handled = DONE.load(Ordering::SeqCst);
    let ok = done == n as i64 && counts.len() == 1 && crashed == 0 && !stalled;
    if !ok {
        eprintln!("[apalis drain] NOT OK: handler ran {handled}x, db by status {counts:?}");
    }
    Ok(json!({
        "seconds": seconds,
        "rss": rss,
        "completed": done,
        "failed": failed,
        "ok": ok,
        "crashed_workers": crashed,
        "handled": handled,
        "last_handler_s": LAST_HANDLER_NS.load(Ordering::SeqCst) as f64 / 1e9,
        "db_status": counts,
        "done_by_worker": per_worker,
        "errors": errors,
        "mode": mode,
        "poll_ms": poll.as_millis() as u64,
        "busy_timeout_ms": busy_timeout().as_millis() as u64,
    }))
}

async fn child_main(args: &[String]) -> Result<Value, BoxErr> {
    let role = args.first().ok_or("child: no role")?.as_str();
    let path = PathBuf::from(args.get(1).ok_or("child: no db path")?);
    let sync = args.get(2).ok_or("child: no sync")?.as_str();
    let n: usize = args.get(3).ok_or("child: no n")?.parse()?;
    match role {
        "enqueue-one" => child_enqueue("one", &path, sync, n).await,
        "enqueue-batch" => child_enqueue("batch", &path, sync, n).await,
        "drain" => {
            let w: usize = args.get(4).ok_or("child: no workers")?.parse()?;
            child_drain(&path, sync, n, w).await
        }
        r => Err(format!("unknown child role {r}").into()),
    }
}

// ----------------------------------------------------------------- parent

fn run_child(args: &[String]) -> Result<Value, BoxErr> {
    let exe = std::env::current_exe()?;
    let out = Command::new(exe)
        .env(CHILD_ENV, "1")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .output()?;
    if !out.status.success() {
        return Err(format!("child {} failed: {}", args[0], out.status).into());
    }
    let text = String::from_utf8(out.stdout)?;
    let last = text.lines().rev().find(|l| !l.trim().is_empty()).ok_or("child printed nothing")?;
    Ok(serde_json::from_str(last)?)
}

fn emit(mut line: serde_json::Map<String, Value>) {
    line.insert("loadavg1".into(), json!(loadavg1()));
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", Value::Object(line)).unwrap();
    out.flush().unwrap();
}

struct TempDir(PathBuf);
impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn versions() -> String {
    let sqlite = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .ok()
        .and_then(|rt| {
            rt.block_on(async {
                let mut c = SqliteConnectOptions::from_str("sqlite::memory:").ok()?.connect().await.ok()?;
                let v: String =
                    sqlx::query("SELECT sqlite_version()").fetch_one(&mut c).await.ok()?.get(0);
                Some(v)
            })
        })
        .unwrap_or_else(|| "?".into());
    format!(
        "apalis {}, apalis-sqlite {}, apalis-core {}, sqlx {}, tokio {}, SQLite {} (libsqlite3-sys {}, bundled)",
        lock_version("apalis"),
        lock_version("apalis-sqlite"),
        lock_version("apalis-core"),
        lock_version("sqlx"),
        lock_version("tokio"),
        sqlite,
        lock_version("libsqlite3-sys"),
    )
}

fn parent_main(argv: &[String]) -> Result<i32, BoxErr> {
    if argv.iter().any(|a| a == "--versions") {
        println!("{}", versions());
        return Ok(0);
    }
    let drain_only = argv.iter().any(|a| a == "--drain-only");
    let pos: Vec<&String> = argv.iter().filter(|a| !a.starts_with("--")).collect();
    let sync = pos.first().map(|s| s.to_uppercase()).unwrap_or_else(|| "NORMAL".into());
    let workers: usize = pos.get(1).map(|s| s.parse()).transpose()?.unwrap_or(1);
    let n: usize = pos.get(2).map(|s| s.parse()).transpose()?.unwrap_or(100_000);
    if sync_code(&sync).is_none() || workers < 1 || n < 1 {
        eprintln!("usage: gleaner-bench-apalis <NORMAL|FULL> <workers> [n] [--drain-only]");
        return Ok(2);
    }

    let stamp = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?.as_nanos();
    let dir = std::env::temp_dir().join(format!("gleaner-bench-apalis-{}-{stamp}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let tmp = TempDir(dir);
    let db = |name: &str| tmp.0.join(name).to_string_lossy().into_owned();

    let base = |op: &str, w: usize, n: usize, res: &Value| {
        let seconds = res["seconds"].as_f64().unwrap_or(f64::NAN);
        let mut m = serde_json::Map::new();
        m.insert("peer".into(), json!(PEER));
        m.insert("sync".into(), json!(sync));
        m.insert("op".into(), json!(op));
        m.insert("workers".into(), json!(w));
        m.insert("n".into(), json!(n));
        m.insert("seconds".into(), json!(seconds));
        m.insert("per_sec".into(), json!(n as f64 / seconds));
        m.insert("peak_rss_mb".into(), res["rss"].clone());
        m
    };

    if !drain_only {
        let res = run_child(&["enqueue-one".into(), db("one.db"), sync.clone(), n.to_string()])?;
        let mut m = base("enqueue_one", 1, n, &res);
        m.insert("note".into(), json!("TaskSink::push per job: one transaction per job"));
        emit(m);
    }
    // The batch-enqueued db is also the one the drain empties. Its size is
    // APALIS_DRAIN_N when set (default n): apalis-sqlite's drain costs grow
    // with the queue's depth (see the module doc), so a 100,000-job drain
    // takes hours on the 2-core bench machine.
    let drain_n: usize = match std::env::var("APALIS_DRAIN_N") {
        Ok(v) if !v.is_empty() => v.parse()?,
        _ => n,
    };
    if drain_n > 20_000 {
        eprintln!(
            "[apalis] warning: drain of {drain_n} jobs; apalis-sqlite's per-job drain cost grows \
             linearly with the queue depth (20,000 took ~5 min, 100,000 would take ~2 h on the \
             2-core bench machine). APALIS_DRAIN_N sets a smaller drain."
        );
    }
    let drain_db = db("drain.db");
    if drain_n != n && !drain_only {
        let res = run_child(&["enqueue-batch".into(), db("batch.db"), sync.clone(), n.to_string()])?;
        let mut m = base("enqueue_batch", 1, n, &res);
        m.insert(
            "note".into(),
            json!("TaskSink::push_bulk: all N INSERTs in one transaction"),
        );
        emit(m);
    }
    let res =
        run_child(&["enqueue-batch".into(), drain_db.clone(), sync.clone(), drain_n.to_string()])?;
    if drain_n == n && !drain_only {
        let mut m = base("enqueue_batch", 1, n, &res);
        m.insert(
            "note".into(),
            json!("TaskSink::push_bulk: all N INSERTs in one transaction"),
        );
        emit(m);
    }
    let res = run_child(&[
        "drain".into(),
        drain_db,
        sync.clone(),
        drain_n.to_string(),
        workers.to_string(),
    ])?;
    let mut m = base("drain", workers, drain_n, &res);
    let completed = res["completed"].as_i64().unwrap_or(0);
    let seconds = res["seconds"].as_f64().unwrap_or(f64::NAN);
    m.insert("per_sec".into(), json!(completed as f64 / seconds));
    let ok = res["ok"].as_bool().unwrap_or(false);
    for k in ["completed", "failed", "ok"] {
        m.insert(k.into(), res[k].clone());
    }
    for k in ["last_handler_s", "done_by_worker", "poll_ms", "busy_timeout_ms", "mode"] {
        m.insert(k.into(), res[k].clone());
    }
    if !ok {
        for k in ["crashed_workers", "handled", "db_status", "errors"] {
            m.insert(k.into(), res[k].clone());
        }
    }
    let note = if res["mode"] == "concurrency" {
        format!("one apalis worker with .concurrency({workers}), one process")
    } else {
        format!("{workers} apalis worker(s), each .concurrency(1), one process, one sqlx pool")
    };
    m.insert("note".into(), json!(note));
    emit(m);
    Ok(0)
}

fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    if std::env::var_os(CHILD_ENV).is_some() {
        let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
        match rt.block_on(child_main(&argv)) {
            Ok(v) => {
                println!("{v}");
                // Do not wait for lingering runtime tasks (idle timers).
                rt.shutdown_timeout(Duration::from_secs(1));
            }
            Err(e) => {
                eprintln!("[apalis child {}] error: {e}", argv.first().map(String::as_str).unwrap_or("?"));
                std::process::exit(1);
            }
        }
        return;
    }
    match parent_main(&argv) {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("[apalis] error: {e}");
            std::process::exit(1);
        }
    }
}
