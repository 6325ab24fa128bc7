//! Opening the SQLite database: its pragmas, the write transaction every change runs in, and
//! the background checkpointer of a long-lived worker.

use std::path::Path;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use rusqlite::{Connection, Transaction, TransactionBehavior};

use super::Store;
use super::migrations::migrate;
use crate::engine::queue::{QueueError, Result};

/// A thread with its own connection that checkpoints the WAL, so the worker's commits do not
/// stop to copy pages back into the database file (docs/ARCHITECTURE.md, "SQLite tuning").
pub(super) struct Checkpointer {
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

/// WAL frames (4 KiB pages, so 256 MiB) after which a writer with a background checkpointer
/// checkpoints on its own commit so the WAL can start again: rare enough not to show in the
/// claim's p99.
const WAL_RESET_FRAMES: i64 = 65_536;

/// The size a WAL file is cut back to when it starts again (`journal_size_limit`), for
/// connections that checkpoint on SQLite's own schedule (every 4,000 frames).
const WAL_KEPT_BYTES: i64 = 64 * 1024 * 1024;

/// The bytes a WAL file of `frames` frames takes: a 32-byte header, then per frame a 24-byte
/// header and a 4 KiB page.
fn wal_bytes(frames: i64) -> i64 {
    32 + frames * (24 + 4096)
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
    // A small page cache: a commit after a page split walks all of it (docs/ARCHITECTURE.md,
    // "SQLite tuning", for this and the pragmas below).
    conn.pragma_update(None, "cache_size", -4_096)?;
    // No memory map: with one, every page read walks the WAL index's hash chain first.
    conn.pragma_update(None, "mmap_size", 0)?;
    // The statement journals of writes the lane trigger fires on stay in memory.
    conn.pragma_update(None, "temp_store", "MEMORY")?;
    conn.pragma_update(None, "wal_autocheckpoint", 4_000)?;
    // A WAL that starts again keeps the size it grew to (in a long drain, or while a reader
    // held an old snapshot) for as long as a connection stays open; this cuts it back.
    conn.pragma_update(None, "journal_size_limit", WAL_KEPT_BYTES)?;
    conn.set_prepared_statement_cache_capacity(64);
    // Cached statements are not re-prepared for a new `LIMIT ?`; `INDEXED BY` fixes the plans.
    conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG,
        true,
    )?;
    Ok(())
}

/// `gleaner.db-wal` beside `gleaner.db`.
fn wal_sibling(path: &Path, suffix: &str) -> std::path::PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    name.into()
}

impl Store {
    /// Open (creating if needed) the database at `path` and bring its schema up to date.
    pub fn open(path: &Path) -> Result<Self> {
        if let Some(dir) = path.parent() {
            crate::engine::create_private_dir(dir).map_err(|source| QueueError::DataDir {
                path: dir.to_path_buf(),
                source,
            })?;
        }
        let mut conn = Connection::open(path)?;
        // Before WAL mode makes its files, which SQLite gives the database's mode: the queue
        // keeps links whole, user names and passwords in them included.
        for file in [
            path.to_path_buf(),
            wal_sibling(path, "-wal"),
            wal_sibling(path, "-shm"),
        ] {
            crate::engine::make_private(&file);
        }
        let not_a_database = |e: QueueError| match e {
            QueueError::Sqlite(rusqlite::Error::SqliteFailure(f, _))
                if f.code == rusqlite::ErrorCode::NotADatabase =>
            {
                QueueError::NotADatabase(path.to_path_buf())
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
            signal: Default::default(),
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
            signal: Default::default(),
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
    /// `reset_frames` WAL frames: the background checkpoint alone never lets the WAL rewind
    /// while a worker commits without a pause.
    fn checkpoint_in_background_resetting_at(&self, reset_frames: i64) -> Result<()> {
        let Some(path) = self.path.clone() else {
            return Ok(());
        };
        let mut slot = self.checkpointer.lock().map_err(|_| QueueError::Poisoned)?;
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
            .map_err(|source| QueueError::DataDir {
                path: path.clone(),
                source,
            })?;
        let conn = self.conn()?;
        conn.pragma_update(None, "wal_autocheckpoint", reset_frames)?;
        // The WAL keeps the size it grows back to (a quarter over the mark), so the file
        // system does not allocate and free its blocks on every cycle.
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

    pub(super) fn conn(&self) -> Result<MutexGuard<'_, Connection>> {
        self.conn.lock().map_err(|_| QueueError::Poisoned)
    }

    pub(super) fn write<T>(&self, f: impl FnOnce(&Transaction<'_>) -> Result<T>) -> Result<T> {
        let mut conn = self.conn()?;
        let started = Instant::now();
        loop {
            let changes = conn.total_changes();
            match conn.transaction_with_behavior(TransactionBehavior::Immediate) {
                Ok(tx) => {
                    let out = f(&tx)?;
                    // A commit that changed no row tells no one anything; signalling it
                    // would wake this process's own idle loop, whose checks commit, forever.
                    let changed = tx.total_changes() != changes;
                    tx.commit()?;
                    if let Some(path) = &self.path
                        && changed
                    {
                        self.signal.send(path);
                    }
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

    /// Run a read-only check query, for tests and diagnostics (`PRAGMA integrity_check`).
    pub fn integrity_check(&self) -> Result<String> {
        let conn = self.conn()?;
        Ok(conn.query_row("PRAGMA integrity_check", [], |r| r.get(0))?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::policy::NO_INTERVALS;

    use std::time::Duration;

    use rusqlite::Connection;

    use crate::engine::policy::Policy;
    use crate::engine::queue::{ClaimRequest, Finish, Success};
    use crate::engine::sqlite::Store;
    use crate::engine::sqlite::testing::job;

    /// The queue keeps links whole, passwords in them included: its folder and files are this
    /// user's alone, also for a database made before (0644 under the usual umask).
    #[cfg(unix)]
    #[test]
    fn the_data_folder_and_the_database_are_the_users_alone() {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = |p: &Path| std::fs::metadata(p).expect("metadata").permissions().mode() & 0o777;
        let dir = tempfile::tempdir().expect("tempdir");
        let data = dir.path().join("new/data");
        let db = data.join("gleaner.db");
        let store = Store::open(&db).expect("open");
        store
            .enqueue(None, &[job("https://u:pw@a.example/1")], 5, 0)
            .expect("enqueue");
        assert_eq!(mode(&data), 0o700);
        for file in [
            db.clone(),
            wal_sibling(&db, "-wal"),
            wal_sibling(&db, "-shm"),
        ] {
            assert_eq!(mode(&file), 0o600, "{}", file.display());
        }
        drop(store);
        std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        let again = Store::open(&db).expect("open again");
        again
            .enqueue(None, &[job("https://a.example/2")], 5, 0)
            .expect("enqueue");
        assert_eq!(mode(&db), 0o600);
        assert_eq!(mode(&wal_sibling(&db, "-wal")), 0o600);
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
            intervals: &NO_INTERVALS,
            max: 4,
            clock: None,
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
