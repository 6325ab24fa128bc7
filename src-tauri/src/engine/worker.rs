//! The worker loop: claim due jobs up to the concurrency limit, fetch them concurrently, commit
//! each outcome, and log it from the committed row.
//!
//! No task ever sleeps on one job's backoff: the retry time lives in the job's row, and the
//! loop sleeps only when nothing at all is eligible, until the earliest due time or host pause
//! ends, or until something wakes it (an enqueue, a settings change, a commit by another
//! process on the same database).

use std::collections::HashSet;
use std::path::Path;
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
    ClaimRequest, Claimed, Failed, Finish, OfflineState, Settled, Status, Store, StoreError,
    Success,
};

#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("a database task panicked or was cancelled: {0}")]
    Join(#[from] tokio::task::JoinError),
    #[error("cannot watch the data folder for changes: {0}")]
    Watch(#[from] notify::Error),
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
    pub async fn run(
        self: &Arc<Self>,
        mode: RunMode,
        mut shutdown: watch::Receiver<bool>,
    ) -> Result<RunSummary, WorkerError> {
        let mut summary = RunSummary::default();
        // An offline finding left by a worker that has stopped is stale: this one finds out
        // for itself.
        if self.db(|s| s.offline()).await?.is_some() {
            self.db(|s| s.set_offline(None)).await?;
        }
        summary.recovered += self.recover().await? as u64;
        let mut inflight: JoinSet<Result<(Claimed, Finish), WorkerError>> = JoinSet::new();
        // Outcomes fetched but not yet committed: they go into the next step's transaction
        // together with the claims for the slots they free (group commit).
        let mut ready: Vec<(Claimed, Finish)> = Vec::new();
        loop {
            if *shutdown.borrow() {
                break;
            }
            let policy = self.policy();
            let mut free = (policy.concurrency.max(1) as usize).saturating_sub(inflight.len());
            // Offline: no jobs start, except one at a time as a probe when the probe is due.
            let probe_at = self.offline().map(|o| o.next_probe_at);
            if let Some(at) = probe_at {
                free = usize::from(inflight.is_empty() && self.clock.now_ms() >= at);
            }
            let mut claimed_none = false;
            if free > 0 || !ready.is_empty() {
                let claimed = self
                    .step(std::mem::take(&mut ready), &policy, free, &mut summary)
                    .await?;
                claimed_none = claimed.len() < free;
                for c in claimed {
                    let me = self.clone();
                    let policy = policy.clone();
                    inflight.spawn(async move { me.process(c, policy).await });
                }
            }
            let mut fallback = IDLE_FALLBACK;
            let mut deadline = None;
            if claimed_none {
                summary.recovered += self.recover().await? as u64;
                let now = self.clock.now_ms();
                deadline = self.db(move |s| s.next_wakeup(now)).await?;
                if inflight.is_empty() && mode == RunMode::UntilIdle {
                    if !self.db(|s| s.has_active()).await? {
                        break;
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
                Some(joined) = inflight.join_next(), if !inflight.is_empty() => {
                    collect(joined, &mut ready);
                    // Everything else that finished meanwhile joins the same commit.
                    while let Some(joined) = inflight.try_join_next() {
                        collect(joined, &mut ready);
                    }
                }
                _ = self.wake.notified() => {}
                _ = sleep, if claimed_none => {}
                _ = probe, if probe_at.is_some() && free == 0 => {}
                _ = tokio::time::sleep(fallback), if claimed_none => {}
                _ = shutdown.changed() => {}
            }
        }
        // Work already done is committed, not thrown away.
        while let Some(joined) = inflight.try_join_next() {
            collect(joined, &mut ready);
        }
        if !ready.is_empty() {
            let policy = self.policy();
            self.step(ready, &policy, 0, &mut summary).await?;
        }
        inflight.shutdown().await;
        // Hand back what we abandoned now rather than when the next run notices we are gone.
        let (policy, now, me) = (self.policy(), self.clock.now_ms(), self.owner.clone());
        let released = self
            .db(move |s| s.recover(&policy, now, |owner| owner != me))
            .await?;
        for failed in &released {
            self.log_failure(failed);
        }
        Ok(summary)
    }

    /// One transaction: commit the finished jobs, claim up to `free` more. Logs and events are
    /// written from the committed rows.
    async fn step(
        &self,
        finished: Vec<(Claimed, Finish)>,
        policy: &Policy,
        free: usize,
        summary: &mut RunSummary,
    ) -> Result<Vec<Claimed>, WorkerError> {
        let (owner, now, p) = (self.owner.clone(), self.clock.now_ms(), policy.clone());
        let finished = self.observe_network(finished, policy, now).await?;
        // What this group taught may be that the machine is offline: then only a due probe
        // starts.
        let free = match self.offline() {
            Some(o) => usize::from(free > 0 && now >= o.next_probe_at),
            None => free,
        };
        let request = (free > 0).then(|| (lease_for(policy), policy.per_host.max(1)));
        let step = self
            .db(move |s| {
                let claim = request.map(|(lease, per_host)| ClaimRequest {
                    owner: &owner,
                    lease,
                    per_host,
                    max: free,
                });
                s.step(finished, &p, now, claim.as_ref())
            })
            .await?;
        for (claimed, finish, settled) in &step.settled {
            summary.count(self.report(claimed, finish, settled));
        }
        Ok(step.claimed)
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
                Finish::Success(_) => true,
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
                        claimed.url,
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
                    job.url,
                    match finish {
                        Finish::Offline(f) | Finish::Failure { failure: f, .. } =>
                            f.message.as_str(),
                        Finish::Success(_) => "",
                    }
                );
                self.emit(job.id, job.status);
                Outcome::Retried
            }
            Settled::Discarded => {
                match finish {
                    Finish::Success(_) => tracing::info!(
                        job = claimed.job_id,
                        "GET {} finished, but the job was cancelled or taken over meanwhile; result discarded.",
                        claimed.url
                    ),
                    Finish::Failure { failure, .. } | Finish::Offline(failure) => tracing::info!(
                        job = claimed.job_id,
                        "GET {} failed: {}, but the job was cancelled or taken over meanwhile.",
                        claimed.url,
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
            .db(move |s| s.recover(&policy, now, |owner| owner_alive(owner, &me)))
            .await?;
        for failed in &recovered {
            self.log_failure(failed);
            self.emit(failed.job.id, failed.job.status);
        }
        Ok(recovered.len())
    }

    /// Fetch and save one claimed job. Nothing is committed here: the outcome goes into the
    /// loop's next group commit.
    async fn process(
        self: Arc<Self>,
        claimed: Claimed,
        policy: Policy,
    ) -> Result<(Claimed, Finish), WorkerError> {
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
                .await?;
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
                        return Ok((claimed, Finish::Success(success)));
                    }
                    Err(LibraryError::Content(ExtractError::Blocked(why))) => Failure::new(
                        FailureKind::Blocked,
                        format!("200 OK but a block page ({why})"),
                    ),
                    Err(LibraryError::Content(c)) => {
                        Failure::new(FailureKind::Unparsable, c.to_string())
                    }
                    Err(io @ LibraryError::Io { .. }) => {
                        Failure::new(FailureKind::Local, io.to_string())
                    }
                    Err(refused @ LibraryError::Refused { .. }) => {
                        Failure::new(FailureKind::Refused, refused.to_string())
                    }
                }
            }
            Err(failure) => failure,
        };
        let unit: f64 = rand::rng().random_range(-1.0..=1.0);
        Ok((claimed, Finish::Failure { failure, unit }))
    }

    /// One line per attempt outcome, written from the committed row.
    fn log_failure(&self, failed: &Failed) {
        let job = &failed.job;
        let class = failed.failure.class().as_str();
        let now = failed.at;
        let what = if failed.failure.kind == FailureKind::Interrupted {
            format!(
                "GET {} was interrupted ({})",
                job.url, failed.failure.message
            )
        } else {
            format!(
                "GET {} failed: {} ({class})",
                job.url, failed.failure.message
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
    Discarded,
}

/// A finished fetch task's outcome joins the next commit; a task that failed to run at all
/// leaves its job running, and recovery hands it back.
fn collect(
    joined: Result<Result<(Claimed, Finish), WorkerError>, tokio::task::JoinError>,
    ready: &mut Vec<(Claimed, Finish)>,
) {
    match joined {
        Ok(Ok(done)) => ready.push(done),
        Ok(Err(e)) => {
            tracing::error!(error = %e, "could not finish a job's attempt; it will be recovered")
        }
        Err(e) => tracing::error!(error = %e, "a fetch task failed; its job will be recovered"),
    }
}

impl RunSummary {
    fn count(&mut self, o: Outcome) {
        match o {
            Outcome::Done => self.done += 1,
            Outcome::Retried => self.retried += 1,
            Outcome::Dead => self.dead += 1,
            Outcome::Discarded => {}
        }
    }
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

/// "pid-<pid>-<random>": the pid lets a restarted process tell at once that the previous owner
/// is gone; the random part tells two incarnations with the same pid apart.
fn new_owner_id() -> String {
    let nonce: u32 = rand::rng().random();
    format!("pid-{}-{nonce:08x}", std::process::id())
}

/// Whether the process behind a lease owner id still exists.
pub fn owner_alive(owner: &str, me: &str) -> bool {
    if owner == me {
        return true;
    }
    let Some(pid) = owner
        .strip_prefix("pid-")
        .and_then(|rest| rest.split('-').next())
        .and_then(|p| p.parse::<u32>().ok())
    else {
        // Not ours to judge: leave it to lease expiry.
        return true;
    };
    if pid == std::process::id() {
        // Our own process: another worker in it is alive exactly while it is registered; any
        // other owner with our pid was an earlier process that happened to get the same id.
        return live_owners()
            .lock()
            .map(|set| set.contains(owner))
            .unwrap_or(true);
    }
    if cfg!(target_os = "linux") {
        Path::new("/proc").join(pid.to_string()).exists()
    } else {
        true
    }
}
