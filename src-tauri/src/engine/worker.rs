//! The worker loop: claim due jobs up to the concurrency limit, fetch them concurrently, commit
//! each outcome, and log it from the committed row.
//!
//! No task ever sleeps on one job's backoff: the retry time lives in the job's row, and the
//! loop sleeps only when nothing at all is eligible, until the earliest due time or host pause
//! ends, or until something wakes it (an enqueue, a settings change, a commit by another
//! process on the same database).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::Duration;

use rand::Rng;
use tokio::sync::{Notify, broadcast, watch};
use tokio::task::JoinSet;

use super::clock::{Millis, SharedClock};
use super::extract::ExtractError;
use super::fetch::{Fetcher, Limits};
use super::library::{Library, LibraryError, Provenance, SaveOptions};
use super::policy::{self, Decision, Failure, FailureKind, Policy};
use super::store::{
    ClaimRequest, Claimed, Failed, Finish, Liveness, OfflineState, Settled, StallKind, StallState,
    Status, Store, StoreError, Success,
};

#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("a database task panicked or was cancelled: {0}")]
    Join(#[from] tokio::task::JoinError),
    #[error("cannot watch the data folder for changes: {0}")]
    Watch(#[from] notify::Error),
    /// `run --until-idle` gave up waiting for a problem of this machine's to clear.
    #[error("{}", .0.reason)]
    Stalled(StallState),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunMode {
    /// Return once no job is pending or running.
    UntilIdle,
    /// Run until shut down.
    Forever,
}

/// A committed change to a job, for the desktop shell's live updates (which re-read what they
/// show).
#[derive(Debug, Clone)]
pub struct JobEvent {
    pub job_id: i64,
    pub status: Status,
}

/// Counts of what one `run` did, for the CLI's closing line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunSummary {
    pub done: u64,
    pub retried: u64,
    pub dead: u64,
    pub recovered: u64,
}

pub struct Worker {
    store: Arc<Store>,
    clock: SharedClock,
    fetcher: Fetcher,
    library: Library,
    policy: Arc<RwLock<Policy>>,
    wake: Arc<Notify>,
    owner: String,
    events: broadcast::Sender<JobEvent>,
    network: Mutex<Network>,
    /// One permit: big bodies are extracted one at a time.
    big_saves: Arc<tokio::sync::Semaphore>,
    /// Set while a problem of this machine's (full disk, database errors) holds the worker.
    stall: Mutex<Option<Stall>>,
    health: watch::Sender<Option<StallState>>,
    /// The clock offset last reconciled with the store (see `store::clock_jump`).
    clock_offset: Mutex<Option<(String, Millis)>>,
    /// When the last stall cleared (boot clock) and the probes it had taken.
    last_stall: Mutex<Option<(Millis, u32)>>,
}

/// A stall as this worker holds it: the shared state, plus what only this process knows.
#[derive(Debug, Clone)]
struct Stall {
    state: StallState,
    /// Boot-clock time it began, for `--until-idle`'s patience (the wall clock may jump).
    began_boot: Millis,
    /// The database has this state (a full database may not take it at first).
    recorded: bool,
}

/// A body above this is extracted only while no other such body is. Extraction holds about
/// 14 times the body at its peak (BENCHMARKS.md §2), so four 50 MB pages at once, the
/// default body cap and fetches in flight, would take about 2.7 GB of a laptop's memory; one
/// at a time, plus the small ones beside it, stays under 1 GB.
const BIG_BODY_BYTES: usize = 4 * 1024 * 1024;

/// What the worker has seen of this machine's network. Offline is this process's finding
/// (written to the database so `stats` and the window show it): after [`OFFLINE_AFTER`]
/// attempts in a row within [`OFFLINE_WINDOW`] all failed to reach the network, the worker
/// stops starting jobs, stops spending retry budgets on such failures, and probes with one job
/// at a time with backoff until something answers.
#[derive(Debug, Default)]
struct Network {
    /// When each failure of the current run of offline-looking failures happened.
    streak: Vec<Millis>,
    offline: Option<OfflineState>,
}

/// Failures in a row that make the worker call the machine offline.
pub const OFFLINE_AFTER: usize = 3;
/// ...all within this long.
pub const OFFLINE_WINDOW: Duration = Duration::from_secs(30);

/// While nothing is eligible and nothing wakes us, look again after this long anyway: a safety
/// net for wake-ups that cannot be observed (another process on a filesystem without inotify).
const IDLE_FALLBACK: Duration = Duration::from_secs(30);
/// While other processes hold running jobs, `--until-idle` checks back this often.
const FOREIGN_RUNNING_RECHECK: Duration = Duration::from_millis(500);

/// A stalled worker probes after 1 s, then twice as long each time, up to this: space freed
/// is noticed within this long.
const STALL_PROBE_MAX: Duration = Duration::from_secs(5);
/// A stall within this long of the last one's end keeps that one's backoff.
const STALL_MEMORY: Duration = Duration::from_secs(60);
/// How long `run --until-idle` waits for a stall to clear before it gives up (and says why).
pub const STALL_PATIENCE: Duration = Duration::from_secs(45);
/// The probe wants this much free in the library folder: room for a page, not just a byte.
const PROBE_FREE_BYTES: u64 = 1 << 20;
/// ...and writes this much there, to know it can (a read-only or forbidden folder has room).
const PROBE_BYTES: usize = 4096;
/// Room kept in reserve beside the database for the queue's own writes on a full disk.
const RESERVE_BYTES: u64 = 1 << 20;
/// How often a stall on a full disk looks for room (a statvfs, nothing written).
const ROOM_CHECK_MS: Millis = 1_000;

impl Worker {
    pub fn new(
        store: Arc<Store>,
        clock: SharedClock,
        library: Library,
        policy: Policy,
    ) -> Result<Arc<Self>, super::fetch::FetchError> {
        let fetcher = Fetcher::new(policy.max_redirects)?;
        if let Err(e) = store.checkpoint_in_background() {
            tracing::warn!(error = %e, "cannot checkpoint in the background; commits will do it");
        }
        let (events, _) = broadcast::channel(1024);
        let owner = new_owner_id();
        if let Ok(mut set) = live_owners().lock() {
            set.insert(owner.clone());
        }
        Ok(Arc::new(Self {
            store,
            clock,
            fetcher,
            library,
            policy: Arc::new(RwLock::new(policy)),
            wake: Arc::new(Notify::new()),
            owner,
            events,
            network: Mutex::new(Network::default()),
            big_saves: Arc::new(tokio::sync::Semaphore::new(1)),
            stall: Mutex::new(None),
            health: watch::channel(None).0,
            clock_offset: Mutex::new(None),
            last_stall: Mutex::new(None),
        }))
    }

    pub fn owner(&self) -> &str {
        &self.owner
    }

    /// Wake the loop (after an enqueue, a manual retry, a settings change).
    pub fn wake(&self) {
        self.wake.notify_one();
    }

    pub fn subscribe(&self) -> broadcast::Receiver<JobEvent> {
        self.events.subscribe()
    }

    /// This worker's stall, as it changes: `Some` while a problem of this machine's holds it.
    /// The window shows it even when the database cannot record it.
    pub fn health(&self) -> watch::Receiver<Option<StallState>> {
        self.health.subscribe()
    }

    /// The stall holding this worker, if any.
    pub fn stalled(&self) -> Option<StallState> {
        self.stall
            .lock()
            .ok()
            .and_then(|s| s.as_ref().map(|s| s.state.clone()))
    }

    pub fn policy(&self) -> Policy {
        self.policy.read().map(|p| p.clone()).unwrap_or_default()
    }

    /// Apply a new policy to the running loop; in-flight fetches keep the limits they started with.
    pub fn set_policy(&self, policy: Policy) {
        if let Ok(mut p) = self.policy.write() {
            *p = policy;
        }
        self.wake();
    }

    async fn db<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Store) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, WorkerError> {
        let store = self.store.clone();
        Ok(tokio::task::spawn_blocking(move || f(&store)).await??)
    }

    /// Watch the database's folder so commits by other processes (a CLI `add` while the app
    /// runs) wake the loop without polling.
    pub fn watch_database(
        &self,
        db_path: &Path,
    ) -> Result<notify::RecommendedWatcher, WorkerError> {
        use notify::{EventKind, RecursiveMode, Watcher};
        let wake = self.wake.clone();
        let db_name = db_path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut watcher =
            notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
                if let Ok(event) = res {
                    let relevant =
                        matches!(event.kind, EventKind::Modify(_) | EventKind::Create(_))
                            && event.paths.iter().any(|p| {
                                p.file_name()
                                    .is_some_and(|n| n.to_string_lossy().starts_with(&db_name))
                            });
                    if relevant {
                        wake.notify_one();
                    }
                }
            })?;
        let dir = db_path.parent().unwrap_or(Path::new("."));
        watcher.watch(dir, RecursiveMode::NonRecursive)?;
        Ok(watcher)
    }

    /// The loop. Returns when `mode` says so or `shutdown` turns true. In-flight fetches are
    /// dropped on shutdown; their leases are recovered on the next start.
    ///
    /// No error ends it: a database or file-system error stalls the worker (no job starts,
    /// the reason is recorded for `stats` and the window), which probes with backoff and goes
    /// on by itself once the problem clears. Only `--until-idle` gives up, after
    /// [`STALL_PATIENCE`], with [`WorkerError::Stalled`].
    pub async fn run(
        self: &Arc<Self>,
        mode: RunMode,
        mut shutdown: watch::Receiver<bool>,
    ) -> Result<RunSummary, WorkerError> {
        let mut run = Run::default();
        loop {
            if *shutdown.borrow() {
                break;
            }
            if self.stall_state().is_some() {
                self.wait_out_stall(mode, &mut run, &mut shutdown).await?;
                continue;
            }
            match self.turn(mode, &mut run, &mut shutdown).await {
                Ok(Flow::Go) => {}
                Ok(Flow::Idle) => break,
                Err(e) => self.stall_on(&e),
            }
        }
        self.finish(run).await
    }

    /// What is left when the loop ends: commit work already done, hand back the rest.
    async fn finish(self: &Arc<Self>, mut run: Run) -> Result<RunSummary, WorkerError> {
        while let Some(joined) = run.inflight.try_join_next_with_id() {
            run.collect(joined);
        }
        if !run.ready.is_empty() {
            let policy = self.policy();
            if let Err(e) = self.step(&mut run, &policy, 0).await {
                tracing::error!(
                    "{}; {} finished jobs could not be recorded and will be fetched again",
                    e,
                    run.ready.len()
                );
            }
        }
        run.inflight.shutdown().await;
        // Hand back what we abandoned now rather than when the next run notices we are gone.
        let (policy, now, me) = (self.policy(), self.clock.now_ms(), self.owner.clone());
        let mine = move |owner: &str| {
            if owner == me {
                Liveness::Gone
            } else {
                Liveness::Alive
            }
        };
        match self.db(move |s| s.recover(&policy, now, mine)).await {
            Ok(released) => {
                for failed in &released {
                    self.log_failure(failed);
                }
            }
            Err(e) => tracing::error!(
                "{e}; the jobs this worker held go back to the queue when Gleaner next starts"
            ),
        }
        Ok(run.summary)
    }

    /// One pass of the loop: commit what finished, claim what fits, then sleep until there is
    /// something to do.
    async fn turn(
        self: &Arc<Self>,
        mode: RunMode,
        run: &mut Run,
        shutdown: &mut watch::Receiver<bool>,
    ) -> Result<Flow, WorkerError> {
        if !run.started {
            // An offline finding left by a worker that has stopped is stale: this one finds
            // out for itself.
            if self.db(|s| s.offline()).await?.is_some() {
                self.db(|s| s.set_offline(None)).await?;
            }
            self.reconcile_clock(true).await?;
            run.summary.recovered += self.recover().await? as u64;
            self.clean_library();
            self.take_reserve();
            run.started = true;
        }
        self.reconcile_clock(false).await?;
        let policy = self.policy();
        let mut free = (policy.concurrency.max(1) as usize).saturating_sub(run.inflight.len());
        // Offline: no jobs start, except one at a time as a probe when the probe is due.
        let probe_at = self.offline().map(|o| o.next_probe_at);
        if let Some(at) = probe_at {
            free = usize::from(run.inflight.is_empty() && self.clock.now_ms() >= at);
        }
        let mut claimed_none = false;
        if free > 0 || !run.ready.is_empty() {
            let claimed = self.step(run, &policy, free).await?;
            claimed_none = claimed.len() < free;
            // A save that failed for want of space stalls the worker: what it claimed in the
            // same transaction goes back at once.
            if let Some(stall) = self.stall_state()
                && !claimed.is_empty()
            {
                let ids: Vec<i64> = claimed.iter().map(|c| c.job_id).collect();
                let (owner, now) = (self.owner.clone(), self.clock.now_ms());
                self.db(move |s| s.put_back(&owner, Some(&ids), &stall.reason, now))
                    .await?;
                return Ok(Flow::Go);
            }
            for c in claimed {
                let me = self.clone();
                let policy = policy.clone();
                let job = c.clone();
                let task = run
                    .inflight
                    .spawn(async move { me.process(c, policy).await });
                run.tasks.insert(task.id(), job);
            }
        }
        let mut fallback = IDLE_FALLBACK;
        let mut deadline = None;
        if claimed_none {
            run.summary.recovered += self.recover().await? as u64;
            let now = self.clock.now_ms();
            deadline = self.db(move |s| s.next_wakeup(now)).await?;
            if run.inflight.is_empty() && mode == RunMode::UntilIdle {
                if !self.db(|s| s.has_active()).await? {
                    return Ok(Flow::Idle);
                }
                if deadline.is_none() {
                    // Only other processes' running jobs keep the queue active.
                    fallback = FOREIGN_RUNNING_RECHECK;
                }
            }
        }
        let clock = self.clock.clone();
        let sleep = async move {
            match deadline {
                Some(d) => clock.sleep_until(d).await,
                None => std::future::pending().await,
            }
        };
        let clock = self.clock.clone();
        let probe = async move {
            match probe_at {
                Some(at) => clock.sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            Some(joined) = run.inflight.join_next_with_id(), if !run.inflight.is_empty() => {
                run.collect(joined);
                // Everything else that finished meanwhile joins the same commit.
                while let Some(joined) = run.inflight.try_join_next_with_id() {
                    run.collect(joined);
                }
            }
            _ = self.wake.notified() => {}
            _ = sleep, if claimed_none => {}
            _ = probe, if probe_at.is_some() && free == 0 => {}
            _ = tokio::time::sleep(fallback), if claimed_none => {}
            _ = shutdown.changed() => {}
        }
        Ok(Flow::Go)
    }

    /// While stalled: keep committing what finishes (when the database takes it), probe when
    /// the probe is due, and, for `--until-idle`, give up after [`STALL_PATIENCE`].
    async fn wait_out_stall(
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
        if !run.ready.is_empty() {
            let policy = self.policy();
            if let Err(e) = self.step(run, &policy, 0).await {
                tracing::debug!(error = %e, "still cannot record finished jobs");
            }
        }
        let waited = Duration::from_millis((self.clock.boot_ms() - stall.began_boot).max(0) as u64);
        if mode == RunMode::UntilIdle && run.inflight.is_empty() && waited >= STALL_PATIENCE {
            let (owner, now, reason) = (
                self.owner.clone(),
                self.clock.now_ms(),
                stall.state.reason.clone(),
            );
            if let Err(e) = self
                .db(move |s| s.put_back(&owner, None, &reason, now))
                .await
            {
                tracing::debug!(error = %e, "cannot put back the jobs this worker holds");
            }
            return Err(WorkerError::Stalled(stall.state));
        }
        let clock = self.clock.clone();
        // A full disk is looked at every second, which costs one statvfs: space freed is seen
        // at once, while the probe that writes keeps its backoff.
        let disk_full = stall.state.kind == StallKind::DiskFull;
        let at = if disk_full {
            stall
                .state
                .next_probe_at
                .min(self.clock.now_ms() + ROOM_CHECK_MS)
        } else {
            stall.state.next_probe_at
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
        let early = self.clock.now_ms() < stall.state.next_probe_at;
        if early && !(disk_full && self.has_room()) {
            return Ok(());
        }
        match self.probe().await {
            Ok(()) => self.clear_stall(),
            Err((kind, reason)) => self.stall_again(kind, reason),
        }
        Ok(())
    }

    /// Whether the library's and the database's file systems have room again (statvfs only),
    /// the database's counting the reserve it gave up (see [`Worker::release_reserve`]).
    fn has_room(&self) -> bool {
        let library = free_bytes(self.library.root()).is_none_or(|f| f >= PROBE_FREE_BYTES);
        let database = match self.reserve_path() {
            Some(reserve) => {
                let want = PROBE_FREE_BYTES + if reserve.exists() { 0 } else { RESERVE_BYTES };
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
    fn reserve_path(&self) -> Option<PathBuf> {
        self.store
            .path()
            .and_then(Path::parent)
            .map(|dir| dir.join(".gleaner-reserve"))
    }

    /// Take the reserve, if it is not there (at start, and once a stall clears).
    fn take_reserve(&self) {
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
    fn release_reserve(&self) {
        if let Some(path) = self.reserve_path()
            && std::fs::remove_file(&path).is_ok()
        {
            tracing::info!(
                "gave the queue the {} KiB it keeps in reserve, so it can record what it holds",
                RESERVE_BYTES / 1024
            );
        }
    }

    /// One transaction: commit the finished jobs, claim up to `free` more. Logs and events are
    /// written from the committed rows. On an error the finished jobs stay in `run.ready`.
    async fn step(
        &self,
        run: &mut Run,
        policy: &Policy,
        free: usize,
    ) -> Result<Vec<Claimed>, WorkerError> {
        let (owner, now, p) = (self.owner.clone(), self.clock.now_ms(), policy.clone());
        let finished = std::mem::take(&mut run.ready);
        let mut finished = self.observe_network(finished, policy, now).await?;
        // What this group taught may be that the machine is offline (then only a due probe
        // starts), or that this machine cannot keep what it fetches (then nothing starts).
        let free = match self.offline() {
            Some(o) => usize::from(free > 0 && now >= o.next_probe_at),
            None => free,
        };
        let free = if self.stall_state().is_some() {
            0
        } else {
            free
        };
        let request = (free > 0).then(|| (lease_for(policy), policy.per_host.max(1)));
        let store = self.store.clone();
        let (finished, step) = tokio::task::spawn_blocking(move || {
            let claim = request.map(|(lease, per_host)| ClaimRequest {
                owner: &owner,
                lease,
                per_host,
                max: free,
            });
            let step = store.step(&mut finished, &p, now, claim.as_ref());
            (finished, step)
        })
        .await?;
        run.ready = finished;
        let step = step?;
        for (claimed, finish, settled) in &step.settled {
            run.summary.count(self.report(claimed, finish, settled));
        }
        Ok(step.claimed)
    }

    fn stall_state(&self) -> Option<StallState> {
        self.stalled()
    }

    fn stall_full(&self) -> Option<Stall> {
        self.stall.lock().ok().and_then(|s| s.clone())
    }

    fn mark_stall_recorded(&self) {
        if let Ok(mut s) = self.stall.lock()
            && let Some(s) = s.as_mut()
        {
            s.recorded = true;
        }
    }

    /// Stall on an error of the loop's own database work.
    fn stall_on(&self, e: &WorkerError) {
        let (kind, reason) = database_fault(e, self.store.path());
        self.stall_begin(kind, reason);
    }

    /// Start a stall, unless one holds already (several saves in flight fail together).
    fn stall_begin(&self, kind: StallKind, reason: String) {
        if self.stall_state().is_none() {
            self.stall_again(kind, reason);
        }
    }

    /// Start a stall, or, if one holds already, take the newer reason and wait longer before
    /// the next probe. The first of a stall is logged and announced; the others are not.
    fn stall_again(&self, kind: StallKind, reason: String) {
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
            .filter(|&(at, _)| boot - at < STALL_MEMORY.as_millis() as Millis)
            .map(|(_, probes)| probes + 1);
        let probes = slot
            .as_ref()
            .map(|s| s.state.probes + 1)
            .or(recent)
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
            began_boot: boot,
            recorded: false,
        });
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
    fn clear_stall(&self) {
        let Some(stall) = self.stall.lock().ok().and_then(|mut s| s.take()) else {
            return;
        };
        let took = Duration::from_millis((self.clock.boot_ms() - stall.began_boot).max(0) as u64);
        if let Ok(mut last) = self.last_stall.lock() {
            *last = Some((self.clock.boot_ms(), stall.state.probes));
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

    /// A cheap check that the stall's cause has cleared: a small write to the library folder
    /// and one to the database (which also clears the recorded stall).
    async fn probe(&self) -> Result<(), (StallKind, String)> {
        if !self.has_room()
            && let Some(stall) = self.stall_state()
        {
            return Err((stall.kind, stall.reason));
        }
        let root = self.library.root().to_path_buf();
        let file = root.join(format!(".gleaner-probe-{}.tmp", self.owner));
        let written = tokio::task::spawn_blocking(move || probe_write(&root, &file)).await;
        match written {
            Ok(Ok(())) => {}
            Ok(Err((path, e))) => {
                return Err(library_fault(self.library.root(), &e).unwrap_or_else(|| {
                    (
                        StallKind::Library,
                        format!("cannot write to the library ({}): {e}", path.display()),
                    )
                }));
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
            Err(e) => Err(database_fault(&e, self.store.path())),
        }
    }

    /// Notice a jump of the wall clock (see `store::clock_jump`), and keep this worker's own
    /// waits (the next offline probe, the next stall probe) to their length too. Without
    /// `force`, the store is asked only when this worker's own reading has moved.
    async fn reconcile_clock(&self, force: bool) -> Result<(), WorkerError> {
        let reading = self.clock.reading();
        let offset = reading.offset();
        let moved = match self.clock_offset.lock() {
            Ok(last) => last.as_ref().is_none_or(|(boot, o)| {
                *boot != reading.boot_id || (offset - o).abs() >= super::store::JUMP_THRESHOLD_MS
            }),
            Err(_) => true,
        };
        if !(force || moved) {
            return Ok(());
        }
        let r = reading.clone();
        let jump = self.db(move |s| s.reconcile_clock(&r)).await?;
        if let Ok(mut last) = self.clock_offset.lock() {
            *last = Some((reading.boot_id.clone(), offset));
        }
        if let Some(d) = jump {
            if let Ok(mut net) = self.network.lock()
                && let Some(o) = net.offline.as_mut()
            {
                o.next_probe_at += d;
            }
            if let Ok(mut stall) = self.stall.lock()
                && let Some(s) = stall.as_mut()
            {
                s.state.next_probe_at += d;
            }
        }
        Ok(())
    }

    /// Remove what a killed process left in the library: temp files and raw copies whose
    /// document was never written. In the background: a big library takes a while to list.
    fn clean_library(&self) {
        let library = self.library.clone();
        tokio::task::spawn_blocking(move || match library.clean_leftovers() {
            Ok(n) if n > 0 => {
                tracing::info!("removed {n} unfinished files a stopped Gleaner left in the library")
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "cannot clean up the library folder"),
        });
    }

    /// This process's finding that the machine is offline, if it has one.
    fn offline(&self) -> Option<OfflineState> {
        self.network.lock().ok().and_then(|n| n.offline.clone())
    }

    /// Learn from a group of finished attempts whether the network is there, and turn
    /// failures that happened while offline into [`Finish::Offline`] so they spend no budget.
    /// A change of state is committed (for `stats` and the window) before it is logged.
    async fn observe_network(
        &self,
        finished: Vec<(Claimed, Finish)>,
        policy: &Policy,
        now: Millis,
    ) -> Result<Vec<(Claimed, Finish)>, WorkerError> {
        let before = self.offline();
        let mut out = Vec::with_capacity(finished.len());
        let after = {
            let Ok(mut net) = self.network.lock() else {
                return Ok(finished);
            };
            // Anything that reached a server, even an error page, proves the network works.
            let reached = finished.iter().any(|(_, f)| match f {
                // A page fetched but not saved still came from a server.
                Finish::Success(_) | Finish::Local(_) => true,
                Finish::Failure { failure, .. } | Finish::Offline(failure) => {
                    !failure.kind.suggests_offline()
                }
            });
            if reached {
                net.streak.clear();
                net.offline = None;
            }
            let mut failed_offline = false;
            for (claimed, finish) in finished {
                let (failure, unit) = match finish {
                    Finish::Failure { failure, unit }
                        if failure.kind.suggests_offline() && !reached =>
                    {
                        (failure, unit)
                    }
                    other => {
                        out.push((claimed, other));
                        continue;
                    }
                };
                if net.offline.is_none() {
                    let window = OFFLINE_WINDOW.as_millis() as Millis;
                    net.streak.retain(|&t| now - t <= window);
                    net.streak.push(now);
                    if net.streak.len() >= OFFLINE_AFTER {
                        net.offline = Some(OfflineState {
                            since: now,
                            next_probe_at: now,
                            probes: 0,
                            reason: failure.message.clone(),
                            worker: self.owner.clone(),
                        });
                    }
                }
                match net.offline.as_mut() {
                    Some(state) => {
                        state.reason = failure.message.clone();
                        failed_offline = true;
                        out.push((claimed, Finish::Offline(failure)));
                    }
                    None => {
                        out.push((claimed, Finish::Failure { failure, unit }));
                    }
                }
            }
            if let Some(state) = net.offline.as_mut()
                && failed_offline
            {
                // This group was a failed probe: wait longer before the next one, on the
                // policy's own backoff schedule.
                state.probes += 1;
                let unit: f64 = rand::rng().random_range(-1.0..=1.0);
                let wait = policy.delay(state.probes, unit);
                state.next_probe_at = now + wait.as_millis() as Millis;
            }
            net.offline.clone()
        };
        if after != before {
            let state = after.clone();
            self.db(move |s| s.set_offline(state.as_ref())).await?;
            match (&before, &after) {
                (None, Some(state)) => tracing::warn!(
                    "This machine looks offline: the last {OFFLINE_AFTER} attempts could not reach the network ({}). \
                     No new fetches start and no retries are spent until it is back; checking again in {}.",
                    state.reason,
                    policy::human_duration(Duration::from_millis(
                        (state.next_probe_at - now).max(0) as u64
                    ))
                ),
                (Some(_), Some(state)) => tracing::info!(
                    "Still offline ({}); checking again in {} (check {}).",
                    state.reason,
                    policy::human_duration(Duration::from_millis(
                        (state.next_probe_at - now).max(0) as u64
                    )),
                    state.probes + 1
                ),
                (Some(state), None) => tracing::info!(
                    "Back online after {}; fetching again.",
                    policy::human_duration(
                        Duration::from_millis((now - state.since).max(0) as u64)
                    )
                ),
                (None, None) => {}
            }
        }
        Ok(out)
    }

    fn report(&self, claimed: &Claimed, finish: &Finish, settled: &Settled) -> Outcome {
        match settled {
            Settled::Done => {
                // What the transaction committed: the claim's attempt and this success (only a
                // success settles as done).
                if let Finish::Success(success) = finish {
                    tracing::info!(
                        job = claimed.job_id,
                        "GET {} done: {} {}, saved {} (attempt {}).",
                        redacted(&claimed.url),
                        success.http_status,
                        reqwest::StatusCode::from_u16(success.http_status)
                            .ok()
                            .and_then(|s| s.canonical_reason())
                            .unwrap_or("OK"),
                        success.document.as_deref().unwrap_or("-"),
                        claimed.attempt
                    );
                }
                self.emit(claimed.job_id, Status::Done);
                Outcome::Done
            }
            Settled::Failed(failed) => {
                self.log_failure(failed);
                self.emit(failed.job.id, failed.job.status);
                match failed.job.status {
                    Status::Dead => Outcome::Dead,
                    _ => Outcome::Retried,
                }
            }
            Settled::Offline(job) => {
                tracing::warn!(
                    job = job.id,
                    "GET {} failed: {} (offline). Not counted against its retries; it runs again when the network is back.",
                    redacted(&job.url),
                    finish_message(finish)
                );
                self.emit(job.id, job.status);
                Outcome::Retried
            }
            Settled::Local(job) => {
                tracing::warn!(
                    job = job.id,
                    "GET {} fetched, but not saved: {}. Not counted against its retries; it runs again once this is fixed.",
                    redacted(&job.url),
                    finish_message(finish)
                );
                self.emit(job.id, job.status);
                Outcome::PutBack
            }
            Settled::Discarded => {
                match finish {
                    Finish::Success(_) => tracing::info!(
                        job = claimed.job_id,
                        "GET {} finished, but the job was cancelled or taken over meanwhile; result discarded.",
                        redacted(&claimed.url)
                    ),
                    Finish::Failure { failure, .. }
                    | Finish::Offline(failure)
                    | Finish::Local(failure) => tracing::info!(
                        job = claimed.job_id,
                        "GET {} failed: {}, but the job was cancelled or taken over meanwhile.",
                        redacted(&claimed.url),
                        failure.message
                    ),
                }
                Outcome::Discarded
            }
        }
    }

    async fn recover(&self) -> Result<usize, WorkerError> {
        let policy = self.policy();
        let now = self.clock.now_ms();
        let me = self.owner.clone();
        let recovered = self
            .db(move |s| s.recover(&policy, now, |owner| liveness(owner, &me)))
            .await?;
        for failed in &recovered {
            self.log_failure(failed);
            self.emit(failed.job.id, failed.job.status);
        }
        Ok(recovered.len())
    }

    /// Fetch and save one claimed job. Nothing is committed here: the outcome goes into the
    /// loop's next group commit.
    async fn process(self: Arc<Self>, claimed: Claimed, policy: Policy) -> (Claimed, Finish) {
        let limits = Limits {
            timeout: policy.timeout,
            max_body: policy.max_body,
        };
        let failure = match self.fetcher.get(&claimed.url, limits).await {
            Ok(fetched) => {
                let library = self.library.clone();
                let (id, host, url) = (claimed.job_id, claimed.host.clone(), claimed.url.clone());
                let fetched_at = self.clock.now_ms();
                let options = SaveOptions {
                    keep_raw: policy.keep_raw,
                    keep_binary: policy.keep_binary,
                };
                // The permit is only ever refused if the semaphore is closed, which it never is.
                let permit = if fetched.body.len() > BIG_BODY_BYTES {
                    self.big_saves.clone().acquire_owned().await.ok()
                } else {
                    None
                };
                // Extraction, hashing and writing can take a while for big bodies: keep them
                // off the async runtime so other fetches keep flowing.
                let saved = tokio::task::spawn_blocking(move || {
                    let _one_big_body_at_a_time = permit;
                    let from = Provenance {
                        job_id: id,
                        url: &url,
                        host: &host,
                        fetched_at,
                    };
                    library.save(&from, &fetched, options).map(|s| (s, fetched))
                })
                .await;
                let saved = match saved {
                    Ok(saved) => saved,
                    Err(e) => {
                        let failure = Failure::new(
                            FailureKind::Unknown,
                            format!("Gleaner failed while saving the page: {e}"),
                        );
                        let unit: f64 = rand::rng().random_range(-1.0..=1.0);
                        return (claimed, Finish::Failure { failure, unit });
                    }
                };
                match saved {
                    Ok((saved, fetched)) => {
                        let success = Success {
                            http_status: fetched.status,
                            final_url: fetched.final_url,
                            title: saved.title,
                            document: Some(saved.path.to_string_lossy().into_owned()),
                            content_type: fetched.content_type,
                            sha256: Some(saved.sha256),
                        };
                        return (claimed, Finish::Success(success));
                    }
                    Err(LibraryError::Content(ExtractError::Blocked(why))) => Failure::new(
                        FailureKind::Blocked,
                        format!("200 OK but a block page ({why})"),
                    ),
                    Err(LibraryError::Content(c)) => {
                        Failure::new(FailureKind::Unparsable, c.to_string())
                    }
                    Err(LibraryError::Io { path, source }) => {
                        let failure = Failure::new(
                            FailureKind::Local,
                            format!("cannot write {}: {source}", path.display()),
                        );
                        // Nobody's fault on the web: the job goes back, and nothing starts
                        // until the disk has room again.
                        if let Some((kind, reason)) = library_fault(self.library.root(), &source) {
                            self.stall_begin(kind, reason);
                            return (claimed, Finish::Local(failure));
                        }
                        failure
                    }
                    Err(refused @ LibraryError::Refused { .. }) => {
                        Failure::new(FailureKind::Refused, refused.to_string())
                    }
                }
            }
            Err(failure) => failure,
        };
        let unit: f64 = rand::rng().random_range(-1.0..=1.0);
        (claimed, Finish::Failure { failure, unit })
    }

    /// One line per attempt outcome, written from the committed row.
    fn log_failure(&self, failed: &Failed) {
        let job = &failed.job;
        let class = failed.failure.class().as_str();
        let now = failed.at;
        let what = if failed.failure.kind == FailureKind::Interrupted {
            format!(
                "GET {} was interrupted ({})",
                redacted(&job.url),
                failed.failure.message
            )
        } else {
            format!(
                "GET {} failed: {} ({class})",
                redacted(&job.url),
                failed.failure.message
            )
        };
        match (&failed.decision, job.status) {
            (Decision::Retry { retry, .. }, Status::Pending) => {
                let blocked_budget = retry.map_or(0, |(_, of)| of);
                let wait = Duration::from_millis((job.run_at - now).max(0) as u64);
                let when = if wait.is_zero() {
                    "Will retry now".to_string()
                } else {
                    format!("Will retry in {}", policy::human_duration(wait))
                };
                let c = &job.counters;
                if failed.failure.class() == policy::ErrorClass::RateLimited {
                    tracing::warn!(
                        job = job.id,
                        "{what}. Host {} paused; {} (rate-limit waits do not count against the {} retries).",
                        job.host,
                        when.to_lowercase(),
                        job.max_retries
                    );
                } else {
                    // The counters as committed: block pages have a budget of their own.
                    let (n, of) = if failed.failure.class() == policy::ErrorClass::Blocked {
                        (c.blocked_failures, blocked_budget)
                    } else {
                        (c.net_failures + c.server_failures, job.max_retries)
                    };
                    tracing::warn!(job = job.id, "{what}. {when} (retry {n} of {of}).");
                }
            }
            _ => {
                let n = job.attempts;
                tracing::error!(
                    job = job.id,
                    "{what}. Dead after {n} attempt{}.",
                    if n == 1 { "" } else { "s" }
                );
            }
        }
    }

    fn emit(&self, job_id: i64, status: Status) {
        // No receivers (the CLI) is fine.
        let _ = self.events.send(JobEvent { job_id, status });
    }
}

#[derive(Debug, Clone, Copy)]
enum Outcome {
    Done,
    Retried,
    Dead,
    /// Back in the queue with its budget untouched: this machine could not keep it.
    PutBack,
    Discarded,
}

/// What one `run` holds between passes of its loop.
#[derive(Default)]
struct Run {
    summary: RunSummary,
    inflight: JoinSet<(Claimed, Finish)>,
    /// The job each fetch task holds, so a task that panics still gives its job back.
    tasks: HashMap<tokio::task::Id, Claimed>,
    /// Outcomes fetched but not yet committed: they go into the next step's transaction
    /// together with the claims for the slots they free (group commit).
    ready: Vec<(Claimed, Finish)>,
    /// Start-of-run upkeep (recovery, clean-up) is done.
    started: bool,
}

enum Flow {
    Go,
    Idle,
}

impl Run {
    /// A finished fetch task's outcome joins the next commit; a task that panicked fails its
    /// attempt like any unknown error.
    fn collect(
        &mut self,
        joined: Result<(tokio::task::Id, (Claimed, Finish)), tokio::task::JoinError>,
    ) {
        match joined {
            Ok((id, done)) => {
                self.tasks.remove(&id);
                self.ready.push(done);
            }
            Err(e) => {
                let Some(claimed) = self.tasks.remove(&e.id()) else {
                    tracing::error!(error = %e, "a fetch task failed");
                    return;
                };
                tracing::error!(error = %e, job = claimed.job_id, "a fetch task failed");
                let failure = Failure::new(
                    FailureKind::Unknown,
                    format!("Gleaner failed while fetching the page: {e}"),
                );
                let unit: f64 = rand::rng().random_range(-1.0..=1.0);
                self.ready
                    .push((claimed, Finish::Failure { failure, unit }));
            }
        }
    }
}

use super::redact::url as redacted;

fn finish_message(finish: &Finish) -> &str {
    match finish {
        Finish::Offline(f) | Finish::Local(f) | Finish::Failure { failure: f, .. } => {
            f.message.as_str()
        }
        Finish::Success(_) => "",
    }
}

/// A write to the library (at `root`) that failed for a reason of this machine's, which stalls
/// the queue rather than fail the job: what it is, in words that say what to do.
fn library_fault(root: &Path, e: &std::io::Error) -> Option<(StallKind, String)> {
    use std::io::ErrorKind;
    const ENOSPC: i32 = 28;
    const EDQUOT: i32 = 122;
    const EROFS: i32 = 30;
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
        (ErrorKind::PermissionDenied, _) => Some((
            StallKind::Library,
            format!("Gleaner may not write to the library ({where_})"),
        )),
        _ => None,
    }
}

/// What a database error means for the queue, in words that say what to do.
fn database_fault(e: &WorkerError, db: Option<&Path>) -> (StallKind, String) {
    let full = matches!(
        e,
        WorkerError::Store(StoreError::Sqlite(rusqlite::Error::SqliteFailure(f, _)))
            if f.code == rusqlite::ErrorCode::DiskFull
    );
    let db = db.map_or_else(
        || "the queue database".to_string(),
        |p| p.display().to_string(),
    );
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

impl RunSummary {
    fn count(&mut self, o: Outcome) {
        match o {
            Outcome::Done => self.done += 1,
            Outcome::Retried => self.retried += 1,
            Outcome::Dead => self.dead += 1,
            Outcome::PutBack | Outcome::Discarded => {}
        }
    }
}

/// The wait before a stalled worker's probe number `probes` (0 for the first).
fn stall_probe_wait(probes: u32) -> Duration {
    Duration::from_secs(1u64 << probes.min(8)).min(STALL_PROBE_MAX)
}

/// Check for [`PROBE_FREE_BYTES`] of room in `root`, then write, sync and remove
/// [`PROBE_BYTES`] there: cheap enough to repeat every few seconds for hours. On failure, the
/// path and the error.
fn probe_write(root: &Path, file: &Path) -> Result<(), (PathBuf, std::io::Error)> {
    use std::io::Write as _;
    std::fs::create_dir_all(root).map_err(|e| (root.to_path_buf(), e))?;
    if free_bytes(root).is_some_and(|free| free < PROBE_FREE_BYTES) {
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
fn free_bytes(dir: &Path) -> Option<u64> {
    let fs = rustix::fs::statvfs(dir).ok()?;
    Some(fs.f_bavail.saturating_mul(fs.f_frsize))
}

/// Long enough to cover the whole request plus saving; a lease only matters if its owner dies
/// somewhere we cannot see (another machine sharing the folder, a hung process).
fn lease_for(policy: &Policy) -> Duration {
    policy.timeout * 2 + Duration::from_secs(60)
}

/// Owner ids of the workers alive in this process.
fn live_owners() -> &'static Mutex<HashSet<String>> {
    static LIVE: OnceLock<Mutex<HashSet<String>>> = OnceLock::new();
    LIVE.get_or_init(|| Mutex::new(HashSet::new()))
}

impl Drop for Worker {
    fn drop(&mut self) {
        if let Ok(mut set) = live_owners().lock() {
            set.remove(&self.owner);
        }
    }
}

/// "pid-<pid>-<start>-<random>": the pid and its start time let any process on this machine
/// tell whether the owner still runs (a pid can be given out again); the random part tells
/// two workers of one process apart.
fn new_owner_id() -> String {
    let nonce: u32 = rand::rng().random();
    let pid = std::process::id();
    let start = process_start(pid).unwrap_or(0);
    format!("pid-{pid}-{start}-{nonce:08x}")
}

/// Whether the process behind a lease owner id still runs: ours, another worker of this
/// process, or a process of this machine that started when the id says. An id of another
/// form is not ours to judge.
pub fn liveness(owner: &str, me: &str) -> Liveness {
    if owner == me {
        return Liveness::Alive;
    }
    let mut parts = owner.strip_prefix("pid-").map(|rest| rest.split('-'));
    let Some(pid) = parts
        .as_mut()
        .and_then(|p| p.next())
        .and_then(|p| p.parse::<u32>().ok())
    else {
        return Liveness::Unknown;
    };
    let rest: Vec<&str> = parts.map(|p| p.collect()).unwrap_or_default();
    // "pid-<pid>-<start>-<nonce>"; earlier versions wrote "pid-<pid>-<nonce>".
    let started: Option<u64> = match rest.as_slice() {
        [start, _nonce] => start.parse().ok(),
        _ => None,
    };
    if pid == std::process::id() {
        // Our own process: another worker in it is alive exactly while it is registered; any
        // other owner with our pid was an earlier process that happened to get the same id.
        return match live_owners().lock() {
            Ok(set) if set.contains(owner) => Liveness::Alive,
            Ok(_) => Liveness::Gone,
            Err(_) => Liveness::Unknown,
        };
    }
    if !cfg!(target_os = "linux") {
        return Liveness::Unknown;
    }
    match (process_start(pid), started) {
        (None, _) => Liveness::Gone,
        // The pid was given to another process since.
        (Some(now), Some(then)) if now != then => Liveness::Gone,
        _ => Liveness::Alive,
    }
}

/// When a process started, in clock ticks after boot (`/proc/<pid>/stat`, field 22), or
/// `None` if there is no such process.
fn process_start(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: count from its end.
    let after_name = &stat[stat.rfind(')')? + 1..];
    after_name.split_whitespace().nth(19)?.parse().ok()
}
