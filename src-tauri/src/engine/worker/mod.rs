//! The worker loop: claim due jobs up to the concurrency limit, fetch them concurrently, commit
//! each outcome, and log it from the committed row.
//!
//! No task ever sleeps on one job's backoff: the retry time lives in the job's row, and the
//! loop sleeps only when nothing at all is eligible, until the earliest due time or host pause
//! ends, or until something wakes it (an enqueue, a settings change, a commit by another
//! process on the same database).

use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use rand::Rng;
use tokio::sync::{Notify, broadcast, watch};

use super::clock::{Millis, Reading, SharedClock};
use super::extract::{self, ExtractError};
use super::fetch::{Answer, Fetched, Fetcher, Limits};
use super::library::{Library, LibraryError, Provenance, SaveOptions, Saved};
use super::policy::{self, Decision, Failure, FailureKind, Policy};
use super::queue::{
    ClaimRequest, Claimed, Failed, Finish, Held, Next, Queue, QueueError, Settled, Stage,
    StallState, Status, Subscription, Success,
};

mod heartbeat;
mod network;
mod owners;
mod resolve;
mod run_state;
mod stall;
mod suspend;

pub use heartbeat::{HEARTBEAT_EVERY, SHARED_LEASE};
use network::Network;
pub use network::{OFFLINE_AFTER, OFFLINE_WINDOW};
pub use owners::liveness;
use owners::{live_owners, new_owner_id};
use run_state::{Flow, Run, paused_by_hand};
pub use stall::{GaveUp, STALL_MEMORY, STALL_PATIENCE, StillHeld};
use stall::{Stall, library_fault};

#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    #[error(transparent)]
    Queue(#[from] QueueError),
    #[error("a database task panicked or was cancelled: {0}")]
    Join(#[from] tokio::task::JoinError),
    /// `run --until-idle` gave up waiting for a problem of this machine's to clear.
    #[error("{}", .0.stall.reason)]
    Stalled(Box<GaveUp>),
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
    store: Arc<dyn Queue>,
    clock: SharedClock,
    fetcher: Fetcher,
    library: Library,
    /// Shared by reference: every job in flight holds the policy it started with.
    policy: Arc<RwLock<Arc<Policy>>>,
    wake: Arc<Notify>,
    owner: String,
    events: broadcast::Sender<JobEvent>,
    network: Mutex<Network>,
    /// One permit: big bodies are extracted one at a time.
    big_saves: Arc<tokio::sync::Semaphore>,
    /// Set while a problem of this machine's (full disk, database errors) holds the worker.
    stall: Mutex<Option<Stall>>,
    health: watch::Sender<Option<StallState>>,
    /// The clock offset last reconciled with the store (see `Queue::reconcile_clock`).
    clock_offset: Mutex<Option<(String, Millis)>>,
    /// The database file this worker opened (device and inode), to notice it removed or
    /// replaced under it: the open connection would go on writing a file no one can see.
    database_identity: Option<(u64, u64)>,
    /// The jobs the loop holds (fetching, or fetched and not yet recorded): the heartbeat
    /// renews these leases alone.
    held: Mutex<Vec<i64>>,
    /// When it was last compared with the file at the path (boot clock).
    database_checked_at: std::sync::atomic::AtomicI64,
    last_stall: Mutex<Option<LastStall>>,
}

/// When the last stall cleared (boot clock), the probes it had taken, when it began, the room
/// its probe wanted, and its kind.
type LastStall = (Millis, u32, Millis, u64, super::queue::StallKind);

/// A body above this is extracted only while no other such body is: extraction's peak is
/// many times the body (BENCHMARKS.md §2), and four at once would not fit a laptop.
const BIG_BODY_BYTES: usize = 4 * 1024 * 1024;

/// While nothing is eligible and nothing wakes us, look again after this long anyway: a safety
/// net for wake-ups that cannot be observed (another process on a filesystem without inotify).
const IDLE_FALLBACK: Duration = Duration::from_secs(30);
/// How often a running worker reads the stored settings for a change.
const POLICY_RECHECK: Duration = Duration::from_secs(1);
/// While other processes hold running jobs, `--until-idle` checks back this often.
const FOREIGN_RUNNING_RECHECK: Duration = Duration::from_millis(500);

impl Worker {
    pub fn new(
        store: Arc<dyn Queue>,
        clock: SharedClock,
        library: Library,
        policy: Policy,
    ) -> Result<Arc<Self>, super::fetch::FetchError> {
        let fetcher = Fetcher::new(policy.max_redirects)?;
        if let Err(e) = store.start_upkeep() {
            tracing::warn!(error = %e, "cannot checkpoint in the background; commits will do it");
        }
        let (events, _) = broadcast::channel(1024);
        let owner = new_owner_id();
        if let Ok(mut set) = live_owners().lock() {
            set.insert(owner.clone());
        }
        let database_identity = store.database_file().and_then(stall::file_identity);
        Ok(Arc::new(Self {
            database_identity,
            database_checked_at: std::sync::atomic::AtomicI64::new(Millis::MIN / 2),
            store,
            clock,
            fetcher,
            library,
            policy: Arc::new(RwLock::new(Arc::new(policy))),
            wake: Arc::new(Notify::new()),
            owner,
            events,
            network: Mutex::new(Network::default()),
            big_saves: Arc::new(tokio::sync::Semaphore::new(1)),
            stall: Mutex::new(None),
            health: watch::channel(None).0,
            clock_offset: Mutex::new(None),
            last_stall: Mutex::new(None),
            held: Mutex::new(Vec::new()),
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

    pub fn policy(&self) -> Arc<Policy> {
        self.policy.read().map(|p| p.clone()).unwrap_or_default()
    }

    /// Apply a new policy to the running loop; in-flight fetches keep the limits they started with.
    pub fn set_policy(&self, policy: Policy) {
        if let Ok(mut p) = self.policy.write() {
            *p = Arc::new(policy);
        }
        self.wake();
    }

    /// Apply the stored settings to this worker whenever they change (saved in a window, by
    /// another process, or by another member of a shared queue), as `adjust` makes them (a
    /// command line's flags still win). `applied` is what the worker started from. A stored
    /// policy that cannot work is not applied. Never returns.
    pub async fn follow_stored_policy(
        self: Arc<Self>,
        mut applied: Policy,
        adjust: impl Fn(Policy) -> Policy,
    ) {
        let mut tick = tokio::time::interval(POLICY_RECHECK);
        loop {
            tick.tick().await;
            let latest = match self.db(|s| s.load_policy()).await {
                Ok(p) => p,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot read the stored settings");
                    continue;
                }
            };
            if latest == applied {
                continue;
            }
            // Checked as it would run: a command line's flags may not fit the new settings.
            let next = adjust(latest.clone());
            if let Err(e) = next.check() {
                tracing::warn!(
                    "the stored settings changed but cannot be used ({e}); keeping the ones in force"
                );
            } else {
                tracing::info!("the stored settings changed; applying them now");
                self.set_policy(next);
            }
            applied = latest;
        }
    }

    async fn db<T: Send + 'static>(
        &self,
        f: impl FnOnce(&dyn Queue) -> Result<T, QueueError> + Send + 'static,
    ) -> Result<T, WorkerError> {
        let store = self.store.clone();
        Ok(tokio::task::spawn_blocking(move || f(&*store)).await??)
    }

    /// Wake the loop when another process changes the queue (a CLI `add` while the app
    /// runs), without polling, for as long as the subscription is kept.
    pub fn watch_queue(&self) -> Result<Subscription, WorkerError> {
        Ok(self.store.subscribe(self.wake.clone())?)
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
        let _heartbeat = self.start_heartbeat();
        loop {
            if *shutdown.borrow() {
                break;
            }
            self.note_held(&run);
            if self.stalled().is_some() {
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
        if run.has_finished() {
            let policy = self.policy();
            if let Err(e) = self.step(&mut run, &policy, 0, self.clock.now_ms()).await {
                tracing::error!(
                    "{}; {} finished jobs could not be recorded and will be fetched again",
                    e,
                    run.ready.len() + run.observed.len()
                );
            }
        }
        run.inflight.shutdown().await;
        // Hand back what we abandoned now rather than when the next run notices we are gone.
        // A stop asked for is not a crash: no retry is spent (recovery counts one for a process
        // that died, in case the job is what kills it).
        let (now, owner) = (self.clock.now_ms(), self.owner.clone());
        let reason = "Gleaner stopped while this was being fetched".to_string();
        match self
            .db(move |s| s.put_back(&owner, Held::All, &reason, now))
            .await
        {
            Ok(ids) if !ids.is_empty() => tracing::info!(
                "{} fetch{} in flight handed back to the queue, with no retry spent",
                ids.len(),
                if ids.len() == 1 { "" } else { "es" }
            ),
            Ok(_) => {}
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
            // out for itself. A live one's (the window's, while a CLI run starts) stays.
            let me = self.owner.clone();
            if let Some(offline) = self.db(|s| s.offline()).await?
                && liveness(&offline.worker, &me) == crate::engine::queue::Liveness::Gone
            {
                self.db(|s| s.set_offline(None)).await?;
            }
            // So is a stall recorded by a worker that is gone (a run that gave up on it): the
            // window and `stats` showed it for good. A live one's (another process's) stays.
            if let Some(stall) = self.db(|s| s.stalled()).await?
                && liveness(&stall.worker, &me) == crate::engine::queue::Liveness::Gone
            {
                self.db(|s| s.set_stalled(None)).await?;
            }
            self.reconcile_clock(&self.clock.reading(), true).await?;
            run.summary.recovered += self.recover().await? as u64;
            self.clean_library();
            self.take_reserve();
            run.started = true;
        }
        if self.database_check_due()
            && let Some(reason) = self.database_moved()
        {
            self.stall_begin(crate::engine::queue::StallKind::Database, reason);
            return Ok(Flow::Go);
        }
        // One reading for the whole turn: the queue is reconciled with it, claimed at its
        // wall time, and slept on from it. A clock set between two readings would otherwise
        // claim against waits not yet moved, or sleep the jump's length on a deadline from
        // before it.
        let reading = self.clock.reading();
        self.reconcile_clock(&reading, false).await?;
        let now = reading.wall;
        let policy = self.policy();
        let mut free = (policy.concurrency.max(1) as usize).saturating_sub(run.inflight.len());
        // Offline: no jobs start, except one at a time as a probe when the probe is due.
        let probe_at = self.offline().map(|o| o.next_probe_at);
        if let Some(at) = probe_at {
            free = usize::from(run.inflight.is_empty() && now >= at);
        }
        if run.claims_unsure {
            self.put_back_unknown_claims(run).await?;
        }
        let mut claimed_none = false;
        if free > 0 || run.has_finished() {
            let claimed = self.step(run, &policy, free, now).await?;
            claimed_none = claimed.len() < free;
            // A save that failed for want of space stalls the worker: what it claimed in the
            // same transaction goes back at once.
            if let Some(stall) = self.stalled()
                && !claimed.is_empty()
            {
                let ids: Vec<i64> = claimed.iter().map(|c| c.job_id).collect();
                let (owner, now) = (self.owner.clone(), self.clock.now_ms());
                let reason = stall.reason.clone();
                if let Err(e) = self
                    .db(move |s| s.put_back(&owner, Held::Only(&ids), &reason, now))
                    .await
                {
                    // The same full disk may refuse this too: the stall's own steps record
                    // them, as if they had run, so none stays held by a worker that forgot it.
                    let failure = Failure::new(FailureKind::Local, stall.reason);
                    run.observed.extend(
                        claimed
                            .into_iter()
                            .map(|c| (c, Finish::Local(failure.clone()))),
                    );
                    return Err(e);
                }
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
            self.note_held(run);
        }
        // On a shared queue a killed member's jobs are looked for every beat, even while this
        // member's slots are all busy: other members may be busy too, and none would look.
        let shared = self.store.shared();
        let recovery_due = shared && run.next_recovery.is_none_or(|at| now >= at);
        if claimed_none || recovery_due {
            run.summary.recovered += self.recover().await? as u64;
            run.next_recovery = Some(now + HEARTBEAT_EVERY.as_millis() as Millis);
        }
        let mut fallback = IDLE_FALLBACK;
        let mut deadline = None;
        if claimed_none {
            // From the claim's own "now": a job that fell due after it was neither claimed nor
            // a future wake-up, and waited out the idle fallback.
            let intervals = crate::engine::policy::as_claimed(&policy.host_intervals);
            deadline = self.db(move |s| s.next_wakeup(now, &intervals)).await?;
            if run.inflight.is_empty() && mode == RunMode::UntilIdle {
                if !self.db(|s| s.has_active()).await? {
                    return Ok(Flow::Idle);
                }
                if !run.told_paused
                    && let Some(why) = self.db(move |s| paused_by_hand(s, now)).await?
                {
                    // An until-idle run waits for work paused by hand: say why nothing starts.
                    tracing::warn!("{why}");
                    run.told_paused = true;
                }
                if deadline.is_none() {
                    // Only other processes' running jobs keep the queue active.
                    fallback = FOREIGN_RUNNING_RECHECK;
                }
            }
        }
        let (clock, from) = (self.clock.clone(), reading.clone());
        let sleep = async move {
            match deadline {
                Some(d) => clock.sleep_until_from(&from, d).await,
                None => std::future::pending().await,
            }
        };
        let (clock, from, next_recovery) = (self.clock.clone(), reading.clone(), run.next_recovery);
        let recovery = async move {
            match next_recovery {
                Some(at) => clock.sleep_until_from(&from, at).await,
                None => std::future::pending().await,
            }
        };
        let clock = self.clock.clone();
        let probe = async move {
            match probe_at {
                Some(at) => clock.sleep_until_from(&reading, at).await,
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
            _ = recovery, if shared => {}
            _ = tokio::time::sleep(fallback), if claimed_none => {}
            _ = shutdown.changed() => {}
        }
        Ok(Flow::Go)
    }

    /// One transaction: commit the finished jobs, claim up to `free` more. Logs and events are
    /// written from the committed rows. On an error the finished jobs stay in `run.observed`.
    async fn step(
        &self,
        run: &mut Run,
        policy: &Arc<Policy>,
        free: usize,
        now: Millis,
    ) -> Result<Vec<Claimed>, WorkerError> {
        let (owner, p) = (self.owner.clone(), policy.clone());
        let mut fresh = std::mem::take(&mut run.ready);
        self.observe_network(&mut fresh, policy, now);
        // Observed once: a commit tried again must not count the same failures again.
        let mut finished = std::mem::take(&mut run.observed);
        finished.append(&mut fresh);
        // What this group taught may be that the machine is offline (then only a due probe
        // starts), or that this machine cannot keep what it fetches (then nothing starts).
        let free = match self.offline() {
            Some(o) => usize::from(free > 0 && now >= o.next_probe_at),
            None => free,
        };
        let free = if self.stalled().is_some() { 0 } else { free };
        let request = (free > 0).then(|| (self.lease(policy), policy.per_host.max(1)));
        let (store, clock) = (self.store.clone(), self.clock.clone());
        // Made only for a step that claims.
        let intervals = request.map(|_| crate::engine::policy::as_claimed(&p.host_intervals));
        let (finished, step) = tokio::task::spawn_blocking(move || {
            let claim = request
                .zip(intervals.as_ref())
                .map(|((lease, per_host), intervals)| ClaimRequest {
                    owner: &owner,
                    lease,
                    per_host,
                    intervals,
                    max: free,
                    clock: Some(clock.as_ref()),
                });
            let step = store.step(&mut finished, &p, now, claim.as_ref());
            (finished, step)
        })
        .await?;
        run.observed = finished;
        if step.is_err() && free > 0 {
            // Its claims may have committed, the reply lost: the next turn puts back what this
            // worker does not know it holds.
            run.claims_unsure = true;
        }
        let step = step?;
        for (claimed, finish, settled) in &step.settled {
            run.summary.count(self.report(claimed, finish, settled));
        }
        self.remove_orphaned_documents(&step.settled).await;
        // After the outcomes, which a database that refuses the finding must not hold up; the
        // claims stand, and a stall puts them back.
        if let Err(e) = self.save_network(now).await {
            self.stall_on(&e);
        }
        Ok(step.claimed)
    }

    /// A document saved for a job that was cancelled (or taken over) meanwhile belongs to no job:
    /// it goes, unless the job's row names it (another worker saved the same one since). So
    /// does the landing page's document of a paper just recorded: the paper, named after it
    /// and its PDF, holds its abstract (see `Library::save`).
    async fn remove_orphaned_documents(&self, settled: &[(Claimed, Finish, Settled)]) {
        let written: Vec<(i64, u32, String)> = settled
            .iter()
            .filter_map(|(claimed, finish, settled)| {
                let document = match (finish, settled) {
                    (Finish::Success(success), Settled::Discarded) => success.document.clone(),
                    (Finish::Next(next), Settled::Discarded) => {
                        next.saved.as_ref().and_then(|s| s.document.clone())
                    }
                    (Finish::Success(success), Settled::Done)
                        if claimed.stage == Some(Stage::Pdf)
                            && success.document.is_some()
                            && success.document != claimed.document =>
                    {
                        claimed.document.clone()
                    }
                    _ => None,
                };
                document.map(|d| (claimed.job_id, claimed.attempt, d))
            })
            .collect();
        for (job_id, attempt, path) in written {
            let row = self.db(move |s| s.job(job_id)).await;
            // A later attempt of the same job still running may have saved the same page under
            // the same name, not recorded yet: its file is its own.
            let named = row.map(|job| {
                job.and_then(|j| {
                    if j.status == Status::Running && j.attempts > attempt {
                        Some(path.clone())
                    } else {
                        j.document
                    }
                })
            });
            match named {
                Ok(named) if named.as_deref() != Some(path.as_str()) => {
                    if let Err(e) = super::library::remove_document(std::path::Path::new(&path)) {
                        tracing::debug!(error = %e, "cannot remove {path}");
                    }
                }
                // Kept while it cannot be told: the start-up clean-up does not touch documents.
                _ => {}
            }
        }
    }

    /// Notice a jump of the wall clock (see `Queue::reconcile_clock`), and keep this worker's own
    /// waits (the next offline probe, the next stall probe) to their length too. Without
    /// `force`, the store is asked only when this worker's own reading has moved.
    async fn reconcile_clock(&self, reading: &Reading, force: bool) -> Result<(), WorkerError> {
        let offset = reading.offset();
        let last = self.clock_offset.lock().ok().and_then(|l| l.clone());
        let moved = last.as_ref().is_none_or(|(boot, o)| {
            *boot != reading.boot_id || (offset - o).abs() >= super::clock::JUMP_THRESHOLD_MS
        });
        if !(force || moved) {
            return Ok(());
        }
        let r = reading.clone();
        let jump = self.db(move |s| s.reconcile_clock(&r)).await?;
        if let Ok(mut last) = self.clock_offset.lock() {
            *last = Some((reading.boot_id.clone(), offset));
        }
        // This worker's own waits move by the jump it saw itself: the store says none when
        // another process (the window, a CLI command) reconciled it first.
        let own = last
            .filter(|(boot, _)| *boot == reading.boot_id)
            .map(|(_, o)| offset - o)
            .filter(|d| d.abs() >= super::clock::JUMP_THRESHOLD_MS);
        if let Some(d) = own.or(jump) {
            if let Ok(mut net) = self.network.lock() {
                net.shift(d);
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

    fn report(&self, claimed: &Claimed, finish: &Finish, settled: &Settled) -> Outcome {
        match (settled, finish) {
            (Settled::Done, Finish::Next(next)) => {
                let how = match &next.failure {
                    Some(f) => f.message.clone(),
                    None => next
                        .http_status
                        .map_or_else(|| "done".to_string(), |s| s.to_string()),
                };
                tracing::info!(
                    job = claimed.job_id,
                    "GET {} ({}): {how}; next: {} (attempt {}).",
                    redacted(&claimed.url),
                    claimed.stage.map_or("page", Stage::as_str),
                    next.stage.as_str(),
                    claimed.attempt
                );
                self.emit(claimed.job_id, Status::Pending);
                return Outcome::Advanced;
            }
            (Settled::Done, Finish::Kept(failure) | Finish::Failure { failure, .. }) => {
                tracing::warn!(
                    job = claimed.job_id,
                    "GET {} ({}) failed: {}. Done with the landing page, without the paper's full text (attempt {}).",
                    redacted(&claimed.url),
                    claimed.stage.map_or("page", Stage::as_str),
                    failure.message,
                    claimed.attempt
                );
                self.emit(claimed.job_id, Status::Done);
                return Outcome::Done;
            }
            _ => {}
        }
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
                    Finish::Next(_) => tracing::info!(
                        job = claimed.job_id,
                        "GET {} finished its stage, but the job was cancelled or taken over meanwhile.",
                        redacted(&claimed.url)
                    ),
                    Finish::Failure { failure, .. }
                    | Finish::Offline(failure)
                    | Finish::Local(failure)
                    | Finish::Kept(failure) => tracing::info!(
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

    /// Remember the jobs `run` holds, for the heartbeat.
    fn note_held(&self, run: &Run) {
        if let Ok(mut held) = self.held.lock() {
            *held = run.held_ids();
        }
    }

    /// After a step that failed while claiming: its claims may have committed with the reply
    /// lost, and would stay running under this worker, renewed by nobody and never recovered
    /// (this worker is alive). They go back with no retry spent.
    async fn put_back_unknown_claims(&self, run: &mut Run) -> Result<(), WorkerError> {
        let (owner, now, held) = (self.owner.clone(), self.clock.now_ms(), run.held_ids());
        let reason = "the database's answer to the claim was lost".to_string();
        let ids = self
            .db(move |s| s.put_back(&owner, Held::AllBut(&held), &reason, now))
            .await?;
        if !ids.is_empty() {
            tracing::info!(
                "{} job{} claimed in a step whose answer was lost handed back to the queue",
                ids.len(),
                if ids.len() == 1 { "" } else { "s" }
            );
        }
        run.claims_unsure = false;
        Ok(())
    }

    async fn recover(&self) -> Result<usize, WorkerError> {
        let policy = self.policy();
        let now = self.clock.now_ms();
        let me = self.owner.clone();
        let recovered = self
            .db(move |s| s.recover(&policy, now, &|owner: &str| liveness(owner, &me)))
            .await?;
        for failed in &recovered {
            self.log_failure(failed);
            self.emit(failed.job.id, failed.job.status);
        }
        Ok(recovered.len())
    }

    /// Fetch and save one claimed job's attempt. Nothing is committed here: the outcome goes
    /// into the loop's next group commit.
    async fn process(self: Arc<Self>, claimed: Claimed, policy: Arc<Policy>) -> (Claimed, Finish) {
        let asleep = self.clock.asleep_ms();
        let finish = self.attempt(&claimed, &policy).await;
        let finish = suspend::across(finish, self.clock.asleep_ms() - asleep);
        (claimed, finish)
    }

    /// One request of a job, at the address its stage names, and where that leaves the job.
    async fn attempt(&self, claimed: &Claimed, policy: &Arc<Policy>) -> Finish {
        let limits = Limits {
            timeout: policy.timeout,
            max_body: policy.max_body,
        };
        let (address, accept) = resolve::address(claimed, &policy.services);
        // A plain link follows its redirects; a stage of a reference hands a redirect to
        // another host back to the queue, so that host's pauses and limits hold it.
        let answer = match claimed.stage {
            None => self
                .fetcher
                .get_as(&address, accept, limits)
                .await
                .map(Answer::Body),
            Some(_) => self.fetcher.get_within_host(&address, accept, limits).await,
        };
        let fetched = match answer {
            Ok(Answer::Body(fetched)) => fetched,
            Ok(Answer::Moved { status, to }) => return resolve::moved(claimed, status, to, policy),
            Err(failure) => return resolve::after_failure(claimed, &address, failure, policy),
        };
        match claimed.stage {
            Some(Stage::Csl) => {
                match resolve::csl_reference(claimed.reference.as_deref(), &fetched) {
                    Some(reference) => {
                        let (target, host) = resolve::landing(claimed, &address, &policy.services);
                        Finish::Next(Box::new(Next {
                            stage: Stage::Landing,
                            target,
                            host,
                            http_status: Some(fetched.status),
                            failure: None,
                            reference: Some(Box::new(reference)),
                            saved: None,
                        }))
                    }
                    // A resolver that does not negotiate answered with the landing page.
                    None => self.save_page(claimed, fetched, policy).await,
                }
            }
            Some(Stage::Wayback) => resolve::after_wayback(claimed, &fetched),
            Some(Stage::Pdf) if !extract::is_pdf(&fetched.body) => Finish::Kept(Failure {
                http_status: Some(fetched.status),
                ..Failure::new(
                    FailureKind::Unparsable,
                    format!(
                        "the PDF link answered with {}, not a PDF",
                        fetched
                            .content_type
                            .as_deref()
                            .unwrap_or("a body of no stated type")
                    ),
                )
            }),
            Some(Stage::Pdf) => match self.save(claimed, fetched, policy).await {
                Ok((saved, fetched)) => Finish::Success(success_of(claimed, saved, fetched)),
                // A PDF that cannot be read leaves the landing page as the document.
                Err(Finish::Failure { failure, .. }) if failure.kind == FailureKind::Unparsable => {
                    Finish::Kept(failure)
                }
                Err(finish) => finish,
            },
            Some(Stage::Archived) => match self.save(claimed, fetched, policy).await {
                Ok((saved, fetched)) => Finish::Success(success_of(claimed, saved, fetched)),
                Err(finish) => finish,
            },
            None | Some(Stage::Landing) => self.save_page(claimed, fetched, policy).await,
        }
    }

    /// Save a page; a page that names its PDF sends the job on to fetch it.
    async fn save_page(&self, claimed: &Claimed, fetched: Fetched, policy: &Arc<Policy>) -> Finish {
        let (saved, fetched) = match self.save(claimed, fetched, policy).await {
            Ok(done) => done,
            Err(finish) => return finish,
        };
        let pdf_url = saved.pdf_url.clone();
        let landing = fetched.final_url.clone();
        let status = fetched.status;
        let reference = saved.reference.clone();
        let success = success_of(claimed, saved, fetched);
        match pdf_url.and_then(|pdf| resolve::to_pdf(&pdf, &landing, reference, status)) {
            Some(mut next) => {
                next.saved = Some(success);
                Finish::Next(Box::new(next))
            }
            None => Finish::Success(success),
        }
    }

    /// Extract and write a fetched body, off the async runtime. A failure comes back as the
    /// attempt's outcome.
    async fn save(
        &self,
        claimed: &Claimed,
        fetched: Fetched,
        policy: &Arc<Policy>,
    ) -> Result<(Saved, Fetched), Finish> {
        let library = self.library.clone();
        let (id, url, stage) = (claimed.job_id, claimed.url.clone(), claimed.stage);
        let reference = claimed.reference.clone();
        let host = filed_under(claimed, &fetched);
        let replaces = claimed.document.clone().map(std::path::PathBuf::from);
        let fetched_at = self.clock.now_ms();
        let options = SaveOptions {
            keep_raw: policy.keep_raw,
            keep_binary: policy.keep_binary,
        };
        // What a save writes at most: the Markdown (no bigger than the body), and the body again
        // when it is kept raw or is a paper's PDF.
        // A paper's PDF is kept whatever `keep_raw` says.
        let pdf = claimed.stage == Some(Stage::Pdf);
        let needed = fetched.body.len() as u64 * if options.keep_raw || pdf { 2 } else { 1 };
        // The permit is only ever refused if the semaphore is closed, which it never is.
        let permit = if fetched.body.len() > BIG_BODY_BYTES {
            self.big_saves.clone().acquire_owned().await.ok()
        } else {
            None
        };
        // Extraction, hashing and writing can take a while for big bodies: keep them off the
        // async runtime so other fetches keep flowing.
        let saved = tokio::task::spawn_blocking(move || {
            let _one_big_body_at_a_time = permit;
            let from = Provenance {
                job_id: id,
                url: &url,
                host: &host,
                fetched_at,
                reference: reference.as_deref(),
                stage,
                replaces: replaces.as_deref(),
            };
            library.save(&from, &fetched, options).map(|s| (s, fetched))
        })
        .await;
        let failure = match saved {
            Ok(Ok(done)) => return Ok(done),
            Err(e) => Failure::new(
                FailureKind::Unknown,
                format!("Gleaner failed while saving the page: {e}"),
            ),
            Ok(Err(LibraryError::Content(ExtractError::Blocked(why)))) => Failure::new(
                FailureKind::Blocked,
                format!("200 OK but a block page ({why})"),
            ),
            Ok(Err(LibraryError::Content(c))) => {
                Failure::new(FailureKind::Unparsable, c.to_string())
            }
            Ok(Err(LibraryError::Io { path, source })) => {
                let failure = Failure::new(
                    FailureKind::Local,
                    format!("cannot write {}: {source}", path.display()),
                );
                // Nobody's fault on the web: the job goes back, and nothing starts until the
                // library can be written again.
                let root = self.library.root();
                if let Some((kind, reason)) = library_fault(root, &path, &source) {
                    self.stall_on_save(kind, reason, stall::host_folder(root, &path), needed);
                    return Err(Finish::Local(failure));
                }
                failure
            }
            Ok(Err(refused @ LibraryError::Refused { .. })) => {
                Failure::new(FailureKind::Refused, refused.to_string())
            }
        };
        let unit: f64 = rand::rng().random_range(-1.0..=1.0);
        Err(Finish::Failure { failure, unit })
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
                        crate::engine::queue::host_to_pause(job, &failed.failure),
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
            // Recovery of a PDF that crashed the worker once too often.
            (_, Status::Done) => tracing::warn!(
                job = job.id,
                "{what}. Done with the landing page, without the paper's full text (attempt {}).",
                job.attempts
            ),
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
    /// On to its next stage.
    Advanced,
    Discarded,
}

use super::redact::url as redacted;

fn finish_message(finish: &Finish) -> &str {
    match finish {
        Finish::Offline(f)
        | Finish::Local(f)
        | Finish::Kept(f)
        | Finish::Failure { failure: f, .. } => f.message.as_str(),
        Finish::Success(_) | Finish::Next(_) => "",
    }
}

impl RunSummary {
    fn count(&mut self, o: Outcome) {
        match o {
            Outcome::Done => self.done += 1,
            Outcome::Retried => self.retried += 1,
            Outcome::Dead => self.dead += 1,
            Outcome::PutBack | Outcome::Discarded | Outcome::Advanced => {}
        }
    }
}

/// What a saved attempt commits: the document, and the metadata it filled in.
fn success_of(claimed: &Claimed, saved: Saved, fetched: Fetched) -> Success {
    // A plain page that said nothing scholarly leaves its job's metadata as it was.
    let reference = (claimed.stage.is_some()
        || claimed.reference.is_some()
        || !saved.reference.authors.is_empty())
    .then(|| Box::new(saved.reference));
    Success {
        http_status: fetched.status,
        final_url: fetched.final_url,
        title: saved.title,
        document: Some(saved.path.to_string_lossy().into_owned()),
        content_type: fetched.content_type,
        sha256: Some(saved.sha256),
        reference,
        index: Some(Box::new(saved.index)),
    }
}

/// The library folder a document goes in: a plain link's own host; for a reference, the site
/// it resolved to (its PDF beside its landing page); for an archived copy, the dead link's.
fn filed_under(claimed: &Claimed, fetched: &Fetched) -> String {
    let landing = claimed
        .reference
        .as_ref()
        .and_then(|r| r.landing_url.as_deref());
    let from = match claimed.stage {
        None => return claimed.host.clone(),
        Some(Stage::Archived) => resolve::host_of(&claimed.url),
        Some(Stage::Pdf) => landing.and_then(resolve::host_of),
        Some(_) => resolve::host_of(&fetched.final_url),
    };
    from.unwrap_or_else(|| claimed.host.clone())
}

impl Drop for Worker {
    fn drop(&mut self) {
        if let Ok(mut set) = live_owners().lock() {
            set.remove(&self.owner);
        }
    }
}

#[cfg(test)]
mod tests;
