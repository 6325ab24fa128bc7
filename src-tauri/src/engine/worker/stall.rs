//! A worker that cannot go on for a reason of this machine's (a full disk, a library it may
//! not write, a database error) stalls: it starts no job, says why, probes with backoff and
//! goes on by itself. It keeps a little room in reserve so the database can still record the
//! put-backs when the disk fills.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use super::{Run, RunMode, Worker, WorkerError};
use crate::engine::clock::Millis;
use crate::engine::policy;
use crate::engine::queue::{StallKind, StallState};

/// A stall as this worker holds it: the shared state, plus what only this process knows.
#[derive(Debug, Clone)]
pub(super) struct Stall {
    pub(super) state: StallState,
    /// Boot-clock time it began, for `--until-idle`'s patience (the wall clock may jump).
    began_boot: Millis,
    /// The database has this state (a full database may not take it at first).
    recorded: bool,
    /// For a failed save: the library folder it wrote in, and the room it needed. The probe
    /// writes there and wants that much free, so a stall does not clear only for the same
    /// save to fail again.
    room: Option<(PathBuf, u64)>,
    /// The free room the probe wants on both file systems: a page's worth, doubled each time
    /// a stall comes back right after one cleared (a database step bigger than the probe's
    /// check passed it, then failed again), so the two do not take turns every second.
    want: u64,
}

/// `run --until-idle` gave up on a stall: what it was, how long it waited, and whether the
/// jobs it held went back to the queue.
#[derive(Debug, Clone)]
pub struct GaveUp {
    pub stall: StallState,
    /// From the stall's start to the end of the hand-back (boot clock).
    pub waited: Duration,
    /// Jobs the database would not take back; `None` when every one went back unspent.
    pub held: Option<StillHeld>,
}

/// Jobs a run that gave up still holds: the next run recovers them as interrupted.
#[derive(Debug, Clone)]
pub struct StillHeld {
    /// How many this run knows it holds (fetched, not yet recorded).
    pub jobs: usize,
    /// Why the database refused to take them back.
    pub error: String,
}

/// How long a run giving up on a stall goes on trying to hand its jobs back. An SQLite write
/// already waits a minute for a lock, so this leaves room for a second try.
pub(super) const PUT_BACK_PATIENCE: Duration = Duration::from_secs(120);

/// A stalled worker probes after 1 s, then twice as long each time, up to this: space freed
/// is noticed within this long.
pub(super) const STALL_PROBE_MAX: Duration = Duration::from_secs(5);

/// A stall within this long of the last one's end keeps that one's backoff.
pub const STALL_MEMORY: Duration = Duration::from_secs(60);

/// How long `run --until-idle` waits for a stall to clear before it gives up (and says why).
pub const STALL_PATIENCE: Duration = Duration::from_secs(45);

/// The probe wants this much free in the library folder: room for a page, not just a byte.
pub(super) const PROBE_FREE_BYTES: u64 = 1 << 20;

/// The most a stall that keeps coming back has its probe want free.
pub(super) const PROBE_FREE_MAX: u64 = 1 << 30;

/// ...and writes this much there, to know it can (a read-only or forbidden folder has room).
pub(super) const PROBE_BYTES: usize = 4096;

/// Room kept in reserve beside the database for the queue's own writes on a full disk.
pub(super) const RESERVE_BYTES: u64 = 1 << 20;

/// How often a running worker checks that its database is still the file at its path.
const DATABASE_CHECK_MS: Millis = 1_000;

/// How often a stall on a full disk looks for room (a statvfs, nothing written).
pub(super) const ROOM_CHECK_MS: Millis = 1_000;

impl Worker {
    /// While stalled: keep committing what finishes (when the database takes it), probe when
    /// the probe is due, and, for `--until-idle`, give up after [`STALL_PATIENCE`].
    pub(super) async fn wait_out_stall(
        self: &Arc<Self>,
        mode: RunMode,
        run: &mut Run,
        shutdown: &mut watch::Receiver<bool>,
    ) -> Result<(), WorkerError> {
        let Some(stall) = self.stall_full() else {
            return Ok(());
        };
        if !stall.recorded {
            let state = stall.state.clone();
            if self.db(move |s| s.set_stalled(Some(&state))).await.is_ok() {
                self.mark_stall_recorded();
            }
        }
        if run.has_finished() {
            let policy = self.policy();
            if let Err(e) = self.step(run, &policy, 0, self.clock.now_ms()).await {
                tracing::debug!(error = %e, "still cannot record finished jobs");
            }
        }
        let waited = Duration::from_millis((self.clock.boot_ms() - stall.began_boot).max(0) as u64);
        if mode == RunMode::UntilIdle && run.inflight.is_empty() && waited >= STALL_PATIENCE {
            let not_handed_back = self.hand_back_before_giving_up(&stall.state.reason).await;
            let held = not_handed_back.map(|error| StillHeld {
                jobs: run.ready.len() + run.observed.len(),
                error,
            });
            let waited =
                Duration::from_millis((self.clock.boot_ms() - stall.began_boot).max(0) as u64);
            return Err(WorkerError::Stalled(Box::new(GaveUp {
                stall: stall.state,
                waited,
                held,
            })));
        }
        let clock = self.clock.clone();
        // No probe is further off than the longest wait: a wall clock set back during the
        // stall would otherwise hold it back by as much.
        let next_probe_at = stall
            .state
            .next_probe_at
            .min(self.clock.now_ms() + STALL_PROBE_MAX.as_millis() as Millis);
        // A full disk is looked at every second, which costs one statvfs: space freed is seen
        // at once, while the probe that writes keeps its backoff.
        let disk_full = stall.state.kind == StallKind::DiskFull;
        let at = if disk_full {
            next_probe_at.min(self.clock.now_ms() + ROOM_CHECK_MS)
        } else {
            next_probe_at
        };
        let patience_ends = stall.began_boot + STALL_PATIENCE.as_millis() as Millis;
        let boot_left = (patience_ends - self.clock.boot_ms()).max(0) as u64;
        tokio::select! {
            Some(joined) = run.inflight.join_next_with_id(), if !run.inflight.is_empty() => {
                run.collect(joined);
                return Ok(());
            }
            _ = clock.sleep_until(at) => {}
            // Patience that runs out before the next probe is looked at when it does.
            _ = tokio::time::sleep(Duration::from_millis(boot_left)),
                if mode == RunMode::UntilIdle && boot_left > 0 => {
                return Ok(());
            }
            _ = shutdown.changed() => return Ok(()),
        }
        let early = self.clock.now_ms() < next_probe_at;
        if early && !(disk_full && self.has_room()) {
            return Ok(());
        }
        match self.probe().await {
            Ok(()) => self.clear_stall(),
            Err((kind, reason)) => self.stall_again(kind, reason),
        }
        Ok(())
    }

    /// Hand every job this worker holds back to the queue, unspent, trying again with backoff
    /// for [`PUT_BACK_PATIENCE`] (another program may hold the database locked for a while).
    /// The last error, if it never could.
    async fn hand_back_before_giving_up(&self, reason: &str) -> Option<String> {
        let started = self.clock.boot_ms();
        let mut wait = Duration::from_secs(1);
        loop {
            let (owner, now, why) = (self.owner.clone(), self.clock.now_ms(), reason.to_string());
            let error = match self
                .db(move |s| s.put_back(&owner, crate::engine::queue::Held::All, &why, now))
                .await
            {
                Ok(_) => return None,
                Err(e) => e.to_string(),
            };
            let spent = Duration::from_millis((self.clock.boot_ms() - started).max(0) as u64);
            if spent + wait > PUT_BACK_PATIENCE {
                tracing::error!(
                    "{error}; the jobs this run holds could not be handed back to the queue"
                );
                return Some(error);
            }
            tracing::warn!(
                "{error}; trying again in {} to hand the jobs this run holds back to the queue",
                policy::human_duration(wait)
            );
            self.clock
                .sleep_until_boot(self.clock.boot_ms() + wait.as_millis() as Millis)
                .await;
            wait = (wait * 2).min(STALL_PROBE_MAX);
        }
    }

    /// Whether the library's and the database's file systems have room again (statvfs only),
    /// the library's for what the failed save needed, the database's counting the reserve it
    /// gave up (see [`Worker::release_reserve`]).
    pub(super) fn has_room(&self) -> bool {
        let (dir, want) = self.probe_target();
        let library = free_bytes(&dir).is_none_or(|f| f >= want);
        let database = match self.reserve_path() {
            Some(reserve) => {
                let want = self.probe_want() + if reserve.exists() { 0 } else { RESERVE_BYTES };
                reserve
                    .parent()
                    .and_then(free_bytes)
                    .is_none_or(|f| f >= want)
            }
            None => true,
        };
        library && database
    }

    /// A file of [`RESERVE_BYTES`] beside the database, given up when the disk fills so that
    /// the queue can still record what it holds (a full disk refuses the very writes that put
    /// jobs back), and taken again once there is room. As CockroachDB's ballast file does.
    pub(super) fn reserve_path(&self) -> Option<PathBuf> {
        self.store
            .database_file()
            .and_then(Path::parent)
            .map(|dir| dir.join(".gleaner-reserve"))
    }

    /// Take the reserve, if it is not there (at start, and once a stall clears).
    pub(super) fn take_reserve(&self) {
        let Some(path) = self.reserve_path() else {
            return;
        };
        tokio::task::spawn_blocking(move || {
            use std::io::Write as _;
            if std::fs::metadata(&path).is_ok_and(|m| m.len() >= RESERVE_BYTES) {
                return;
            }
            let written = std::fs::File::create(&path).and_then(|mut f| {
                f.write_all(&vec![0u8; RESERVE_BYTES as usize])?;
                f.sync_all()
            });
            if let Err(e) = written {
                // A disk already full: the stall will say so; nothing is held back for it.
                let _ = std::fs::remove_file(&path);
                tracing::debug!(error = %e, "cannot keep room in reserve for the queue");
            }
        });
    }

    /// Give the reserve up to the database: the disk is full.
    pub(super) fn release_reserve(&self) {
        if let Some(path) = self.reserve_path()
            && std::fs::remove_file(&path).is_ok()
        {
            tracing::info!(
                "gave the queue the {} KiB it keeps in reserve, so it can record what it holds",
                RESERVE_BYTES / 1024
            );
        }
    }

    /// Where the probe writes, and the room it wants there: the folder and size of a failed
    /// save, else the library's root and a page's worth.
    fn probe_target(&self) -> (PathBuf, u64) {
        let root = self.library.root().to_path_buf();
        let want = self.probe_want();
        match self.stall_full().and_then(|s| s.room) {
            Some((dir, needed)) => {
                // A folder not made yet is on its parent's file system.
                let dir = if dir.exists() { dir } else { root };
                (dir, needed.max(want))
            }
            None => (root, want),
        }
    }

    /// The free room this stall's probe wants (see [`Stall::want`]).
    pub(super) fn probe_want(&self) -> u64 {
        self.stall_full().map_or(PROBE_FREE_BYTES, |s| s.want)
    }

    /// Stall on a save that could not write `dir` (in the library), which needed `needed`
    /// bytes.
    pub(super) fn stall_on_save(&self, kind: StallKind, reason: String, dir: PathBuf, needed: u64) {
        self.stall_begin(kind, reason);
        if let Ok(mut slot) = self.stall.lock()
            && let Some(stall) = slot.as_mut()
            && stall.room.as_ref().is_none_or(|(_, n)| *n < needed)
        {
            stall.room = Some((dir, needed));
        }
    }

    pub(super) fn stall_full(&self) -> Option<Stall> {
        self.stall.lock().ok().and_then(|s| s.clone())
    }

    pub(super) fn mark_stall_recorded(&self) {
        if let Ok(mut s) = self.stall.lock()
            && let Some(s) = s.as_mut()
        {
            s.recorded = true;
        }
    }

    /// Stall on an error of the loop's own database work.
    pub(super) fn stall_on(&self, e: &WorkerError) {
        let (kind, reason) = database_fault(e, self.store.database_file());
        self.stall_begin(kind, reason);
    }

    /// Start a stall, unless one holds already (several saves in flight fail together).
    pub(super) fn stall_begin(&self, kind: StallKind, reason: String) {
        if self.stalled().is_none() {
            self.stall_again(kind, reason);
        }
    }

    /// Start a stall, or, if one holds already, take the newer reason and wait longer before
    /// the next probe. The first of a stall is logged and announced; the others are not.
    pub(super) fn stall_again(&self, kind: StallKind, reason: String) {
        let (now, boot) = (self.clock.now_ms(), self.clock.boot_ms());
        let Ok(mut slot) = self.stall.lock() else {
            return;
        };
        // A stall that comes back soon after one cleared (the probe passed, the real work still
        // fails) goes on with the backoff it had, so the two never take turns every second.
        let recent = self
            .last_stall
            .lock()
            .ok()
            .and_then(|l| *l)
            .filter(|&(at, ..)| boot - at < STALL_MEMORY.as_millis() as Millis);
        // Only a full disk that came back wants more room: a database or a library that comes
        // and goes (flaky Wi-Fi, a backup tool's lock) would otherwise never have enough.
        let full_again = kind == StallKind::DiskFull
            && recent.is_some_and(|(.., last)| last == StallKind::DiskFull);
        let probes = slot
            .as_ref()
            .map(|s| s.state.probes + 1)
            .or(recent.map(|(_, probes, ..)| probes + 1))
            .unwrap_or(0);
        let wait = stall_probe_wait(probes);
        let fresh = slot.is_none();
        let stall = slot.get_or_insert_with(|| Stall {
            state: StallState {
                kind,
                reason: reason.clone(),
                since: now,
                next_probe_at: now,
                probes: 0,
                worker: self.owner.clone(),
            },
            // And its patience: `--until-idle` gives up on a cause that keeps coming back.
            began_boot: recent.map_or(boot, |(_, _, began, ..)| began),
            recorded: false,
            room: None,
            // The probe passed and the work failed again: it wants twice the room this time.
            want: match recent {
                Some((.., want, _)) if full_again => want.saturating_mul(2).min(PROBE_FREE_MAX),
                _ => PROBE_FREE_BYTES,
            },
        });
        if stall.state.kind != kind {
            stall.want = PROBE_FREE_BYTES;
        }
        stall.state.kind = kind;
        stall.state.reason = reason;
        stall.state.probes = probes;
        stall.state.next_probe_at = now + wait.as_millis() as Millis;
        stall.recorded = false;
        let state = stall.state.clone();
        drop(slot);
        if kind == StallKind::DiskFull {
            self.release_reserve();
        }
        if fresh {
            tracing::error!(
                "Paused: {}. No job starts and no retry is spent until this is fixed; Gleaner checks again by itself (next in {}).",
                state.reason,
                policy::human_duration(wait)
            );
        } else {
            tracing::warn!(
                "Still paused: {}; checking again in {}.",
                state.reason,
                policy::human_duration(wait)
            );
        }
        self.health.send_replace(Some(state));
    }

    /// The probe passed: go on.
    pub(super) fn clear_stall(&self) {
        let Some(stall) = self.stall.lock().ok().and_then(|mut s| s.take()) else {
            return;
        };
        let took = Duration::from_millis((self.clock.boot_ms() - stall.began_boot).max(0) as u64);
        if let Ok(mut last) = self.last_stall.lock() {
            *last = Some((
                self.clock.boot_ms(),
                stall.state.probes,
                stall.began_boot,
                stall.want,
                stall.state.kind,
            ));
        }
        tracing::info!(
            "Resumed after {}: {} no longer holds the queue.",
            policy::human_duration(took),
            stall.state.reason
        );
        self.health.send_replace(None);
        self.take_reserve();
        self.wake();
    }

    /// Whether a pass of the loop compares the database with the file at its path: once a
    /// second at most, since a drain's passes come thousands of times a second.
    pub(super) fn database_check_due(&self) -> bool {
        use std::sync::atomic::Ordering::Relaxed;
        let now = self.clock.boot_ms();
        let last = self.database_checked_at.load(Relaxed);
        now - last >= DATABASE_CHECK_MS
            && self
                .database_checked_at
                .compare_exchange(last, now, Relaxed, Relaxed)
                .is_ok()
    }

    /// Why the database this worker writes is not the one at its path any more (the data folder
    /// removed or moved while it ran), if it is not.
    pub(super) fn database_moved(&self) -> Option<String> {
        let (path, opened) = (self.store.database_file()?, self.database_identity?);
        (file_identity(path) != Some(opened)).then(|| {
            format!(
                "the queue database ({}) was removed or replaced while Gleaner was running; put \
                 the data folder back, or quit and start Gleaner again",
                path.display()
            )
        })
    }

    /// A cheap check that the stall's cause has cleared: a small write to the library folder
    /// and one to the database (which also clears the recorded stall).
    pub(super) async fn probe(&self) -> Result<(), (StallKind, String)> {
        if let Some(reason) = self.database_moved() {
            return Err((StallKind::Database, reason));
        }
        if !self.has_room()
            && let Some(stall) = self.stalled()
        {
            return Err((stall.kind, stall.reason));
        }
        let (dir, want) = self.probe_target();
        let file = dir.join(format!(".gleaner-probe-{}.tmp", self.owner));
        let written = tokio::task::spawn_blocking(move || probe_write(&dir, &file, want)).await;
        match written {
            Ok(Ok(())) => {}
            Ok(Err((path, e))) => {
                return Err(library_fault(self.library.root(), &path, &e)
                    .unwrap_or_else(|| unwritable(&path, &e)));
            }
            Err(e) => return Err((StallKind::Library, format!("the library check failed: {e}"))),
        }
        // A write, and a read of the queue itself: a settings row alone may pass where the
        // jobs cannot be read.
        let checked = self
            .db(|s| {
                s.set_stalled(None)?;
                s.has_active()
            })
            .await;
        match checked {
            Ok(_) => Ok(()),
            Err(e) => Err(database_fault(&e, self.store.database_file())),
        }
    }
}

/// A write to the library (at `root`, of `path`) that failed for a reason of this machine's,
/// which stalls the queue rather than fail the job: what it is, in words that say what to do.
/// Any error is the machine's (a file where a folder should be, EIO) but a name the file
/// system refuses (too long, or characters it does not take), which is the page's.
pub(super) fn library_fault(
    root: &Path,
    path: &Path,
    e: &std::io::Error,
) -> Option<(StallKind, String)> {
    use std::io::ErrorKind;
    const ENOSPC: i32 = 28;
    const EDQUOT: i32 = 122;
    const EROFS: i32 = 30;
    const ENAMETOOLONG: i32 = 36;
    const EINVAL: i32 = 22;
    let where_ = root.display();
    match (e.kind(), e.raw_os_error()) {
        (ErrorKind::StorageFull, _) | (_, Some(ENOSPC)) => Some((
            StallKind::DiskFull,
            format!("the disk holding the library ({where_}) is full"),
        )),
        (ErrorKind::QuotaExceeded, _) | (_, Some(EDQUOT)) => Some((
            StallKind::DiskFull,
            format!("the disk quota for the library ({where_}) is used up"),
        )),
        (ErrorKind::ReadOnlyFilesystem, _) | (_, Some(EROFS)) => Some((
            StallKind::Library,
            format!("the library ({where_}) is on a read-only file system"),
        )),
        // The folder that refused, which may be one inside the library (a host's, made by
        // another user): the root's own permissions may be fine.
        (ErrorKind::PermissionDenied, _) => Some((
            StallKind::Library,
            format!(
                "Gleaner may not write to the folder {} in the library",
                path.parent().unwrap_or(root).display()
            ),
        )),
        (_, Some(ENAMETOOLONG | EINVAL)) => None,
        _ => Some(unwritable(path, e)),
    }
}

fn unwritable(path: &Path, e: &std::io::Error) -> (StallKind, String) {
    (
        StallKind::Library,
        format!("cannot write to the library ({}): {e}", path.display()),
    )
}

/// The folder of the host a save wrote in (`root/HOST/file`), where its stall's probe writes.
pub(super) fn host_folder(root: &Path, path: &Path) -> PathBuf {
    path.strip_prefix(root)
        .ok()
        .and_then(|rel| rel.components().next())
        .map_or_else(|| root.to_path_buf(), |host| root.join(host))
}

/// A file's device and inode, where the platform has them.
pub(super) fn file_identity(path: &std::path::Path) -> Option<(u64, u64)> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt as _;
        std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        None
    }
}

/// What a database error means for the queue, in words that say what to do.
pub(super) fn database_fault(e: &WorkerError, db: Option<&Path>) -> (StallKind, String) {
    let full = matches!(e, WorkerError::Queue(q) if q.is_disk_full());
    let Some(db) = db.map(|p| p.display().to_string()) else {
        // A database on another machine (PostgreSQL): the error names it.
        let kind = if full {
            StallKind::DiskFull
        } else {
            StallKind::Database
        };
        return (kind, format!("the queue database cannot be used: {e}"));
    };
    if full {
        (
            StallKind::DiskFull,
            format!("the disk holding the database ({db}) is full"),
        )
    } else {
        (
            StallKind::Database,
            format!("the database ({db}) cannot be used: {e}"),
        )
    }
}

/// The wait before a stalled worker's probe number `probes` (0 for the first).
pub(super) fn stall_probe_wait(probes: u32) -> Duration {
    Duration::from_secs(1u64 << probes.min(8)).min(STALL_PROBE_MAX)
}

/// Check for [`PROBE_FREE_BYTES`] of room in `root`, then write, sync and remove
/// [`PROBE_BYTES`] there: cheap enough to repeat every few seconds for hours. On failure, the
/// path and the error.
pub(super) fn probe_write(
    root: &Path,
    file: &Path,
    want: u64,
) -> Result<(), (PathBuf, std::io::Error)> {
    use std::io::Write as _;
    std::fs::create_dir_all(root).map_err(|e| (root.to_path_buf(), e))?;
    if free_bytes(root).is_some_and(|free| free < want) {
        return Err((
            file.to_path_buf(),
            std::io::Error::from(std::io::ErrorKind::StorageFull),
        ));
    }
    let result = std::fs::File::create(file).and_then(|mut f| {
        f.write_all(&vec![0u8; PROBE_BYTES])?;
        f.sync_all()
    });
    let _ = std::fs::remove_file(file);
    result.map_err(|e| (file.to_path_buf(), e))
}

/// Room left for an unprivileged writer on the file system holding `dir`, where it can tell.
pub(super) fn free_bytes(dir: &Path) -> Option<u64> {
    let fs = rustix::fs::statvfs(dir).ok()?;
    Some(fs.f_bavail.saturating_mul(fs.f_frsize))
}
