//! Wake-ups across processes, since SQLite has no notifications across connections: every
//! commit that changed a row writes a byte to a signal file in a folder of its own beside the database, and a
//! worker watches that folder. Watching the database's own folder instead woke every watcher
//! once per WAL page written, dozens of times a commit (BENCHMARKS.md §13).

use std::fs::{File, OpenOptions};
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use notify::{EventKind, RecursiveMode, Watcher};
use tokio::sync::Notify;

use super::Store;
use crate::engine::queue::{QueueError, Result, Subscription};

/// The folder of the signal file of the database at `db_path`: `gleaner.db-wake`, named as
/// SQLite names its `-wal` and `-shm` files.
pub(super) fn signal_dir(db_path: &Path) -> PathBuf {
    let mut name = db_path.file_name().unwrap_or_default().to_os_string();
    name.push("-wake");
    db_path.with_file_name(name)
}

const SIGNAL_FILE: &str = "signal";

/// The signal file, opened on the first commit and kept open.
#[derive(Default)]
pub(super) struct Signal {
    file: Mutex<Option<File>>,
    warned: AtomicBool,
}

impl Signal {
    /// Tell other processes' watches that a commit happened. Never fails the commit: without
    /// the file, they find the change by their idle fallback instead.
    pub(super) fn send(&self, db_path: &Path) {
        let Ok(mut slot) = self.file.lock() else {
            return;
        };
        if slot.is_none() {
            match open_signal(db_path) {
                Ok(file) => *slot = Some(file),
                Err(e) => {
                    if !self.warned.swap(true, Ordering::Relaxed) {
                        tracing::warn!(error = %e, "cannot write the wake-up signal file; other Gleaner processes will notice this one's changes within 30 s instead of at once");
                    }
                    return;
                }
            }
        }
        // One byte at the start: the file never grows, and a full disk cannot refuse it.
        let written = slot.as_mut().map(|file| {
            file.seek(SeekFrom::Start(0))
                .and_then(|_| file.write_all(b"."))
        });
        if let Some(Err(e)) = written {
            tracing::debug!(error = %e, "wake-up signal not written");
            *slot = None;
        }
    }
}

fn open_signal(db_path: &Path) -> std::io::Result<File> {
    let dir = signal_dir(db_path);
    std::fs::create_dir_all(&dir)?;
    OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join(SIGNAL_FILE))
}

impl Store {
    /// Wake `wake` on every commit that changed a row of this database, by any process (this
    /// one's too). An
    /// in-memory database has no other process to hear from.
    pub fn subscribe(&self, wake: Arc<Notify>) -> Result<Subscription> {
        let Some(db_path) = self.path() else {
            return Ok(Subscription::new(()));
        };
        let dir = signal_dir(db_path);
        std::fs::create_dir_all(&dir).map_err(|source| QueueError::DataDir {
            path: dir.clone(),
            source,
        })?;
        let mut watcher =
            notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
                if let Ok(event) = res
                    && matches!(event.kind, EventKind::Modify(_) | EventKind::Create(_))
                {
                    wake.notify_one();
                }
            })?;
        watcher.watch(&dir, RecursiveMode::NonRecursive)?;
        Ok(Subscription::new(watcher))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::time::Duration;

    use crate::engine::sqlite::testing::job;

    async fn woken(wake: &Notify) -> bool {
        tokio::time::timeout(Duration::from_secs(5), wake.notified())
            .await
            .is_ok()
    }

    /// Not woken within half a second: long enough for an inotify event to arrive.
    async fn still_asleep(wake: &Notify) -> bool {
        tokio::time::timeout(Duration::from_millis(500), wake.notified())
            .await
            .is_err()
    }

    #[tokio::test]
    async fn a_commit_by_another_connection_wakes_the_watch() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("q.db");
        let watching = Store::open(&path).expect("store");
        let wake = Arc::new(Notify::new());
        let _subscription = watching.subscribe(wake.clone()).expect("subscribe");
        let other = Store::open(&path).expect("another process's store");
        other
            .enqueue(None, &[job("https://example.org/a")], 3, 0)
            .expect("enqueue");
        assert!(woken(&wake).await, "the enqueue did not wake the watch");
    }

    #[tokio::test]
    async fn the_watch_does_not_wake_for_writes_without_a_commit() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("q.db");
        let store = Store::open(&path).expect("store");
        // The signal file exists from the first commit on; what follows is measured alone.
        store
            .enqueue(None, &[job("https://example.org/a")], 3, 0)
            .expect("enqueue");
        let wake = Arc::new(Notify::new());
        let _subscription = store.subscribe(wake.clone()).expect("subscribe");
        // Reads and the WAL's checkpoint write the database's folder, not the signal's.
        store.integrity_check().expect("read");
        let conn = rusqlite::Connection::open(&path).expect("connection");
        conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .expect("checkpoint");
        std::fs::write(dir.path().join("unrelated"), b"x").expect("write");
        assert!(still_asleep(&wake).await, "woken without a commit");
    }

    #[tokio::test]
    async fn a_commit_that_changes_no_row_does_not_wake_the_watch() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("q.db");
        let store = Store::open(&path).expect("store");
        store
            .enqueue(None, &[job("https://example.org/a")], 3, 0)
            .expect("enqueue");
        let wake = Arc::new(Notify::new());
        let _subscription = store.subscribe(wake.clone()).expect("subscribe");
        // What an idle worker's recovery commits when no lease has expired.
        store
            .write(|tx| {
                tx.execute("UPDATE jobs SET attempts = attempts WHERE id < 0", [])?;
                Ok(())
            })
            .expect("empty commit");
        assert!(
            still_asleep(&wake).await,
            "woken by a commit that changed nothing"
        );
        store
            .write(|tx| {
                tx.execute("UPDATE jobs SET attempts = attempts WHERE id = 1", [])?;
                Ok(())
            })
            .expect("commit");
        assert!(
            woken(&wake).await,
            "a commit that changed a row did not wake"
        );
    }

    #[test]
    fn a_commit_succeeds_when_the_signal_cannot_be_written() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("q.db");
        let store = Store::open(&path).expect("store");
        // A file where the signal's folder should be: the folder cannot be made.
        std::fs::write(signal_dir(&path), b"in the way").expect("block");
        store
            .enqueue(None, &[job("https://example.org/a")], 3, 0)
            .expect("the commit does not depend on the signal");
        assert!(store.job(1).expect("read").is_some());
    }
}
