//! The queue interface: every step the worker, the CLI and the window take on the durable
//! queue, whatever database holds it.
//!
//! Modelled on Oban's `Engine` behaviour: the engine (here, the worker and the shell) speaks
//! only these steps, and a backend implements them. [`crate::engine::sqlite`] is the one for a
//! data folder on this machine. Each step is one transaction that either commits or changes
//! nothing, and returns only what it committed.
//!
//! The steps block: a backend's database call runs on the caller's thread, so async callers
//! run them on a blocking thread (`spawn_blocking`), as they do for file I/O.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;

use super::clock::{Millis, Reading};
use super::policy::{Failure, HostIntervals, NO_INTERVALS, Policy};

mod error;
pub mod search_query;
#[cfg(test)]
pub(crate) mod suite;
mod types;

pub use error::{QueueError, Result};
pub use types::{
    ActionResult, Attempt, BatchInfo, ClaimRequest, Claimed, Enqueued, Failed, Finish, Held, Hit,
    HostCount, HostState, Indexed, Job, JobFilter, LibraryQuery, Liveness, NewJob, Next,
    OfflineState, PausedHost, Reference, Reindexed, Settled, SharedDocument, SharedEntry, Stage,
    StallKind, StallState, Stats, Status, Step, Success, claim_now, host_to_pause, rfc3339,
};

/// Wake-ups from other processes last as long as this is kept (see [`Queue::subscribe`]).
pub struct Subscription(#[allow(dead_code)] Box<dyn Send + Sync>);

impl Subscription {
    pub fn new(guard: impl Send + Sync + 'static) -> Self {
        Self(Box::new(guard))
    }
}

impl std::fmt::Debug for Subscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Subscription")
    }
}

/// Open the queue of a data folder: SQLite in `gleaner.db` there, made if it is new.
pub fn open(data_dir: &Path) -> Result<Arc<dyn Queue>> {
    open_with(data_dir, None)
}

/// Open the queue a member uses: the PostgreSQL database at `database` (shared by a lab, see
/// [`crate::engine::postgres`]), or without one the SQLite queue of its data folder. The data
/// folder is this member's either way: its library, and its name in the shared database.
pub fn open_with(data_dir: &Path, database: Option<&str>) -> Result<Arc<dyn Queue>> {
    match database.map(str::trim).filter(|d| !d.is_empty()) {
        Some(url) => {
            let member = super::postgres::member_name(data_dir);
            let library = data_dir.join("library");
            let store = super::postgres::PgStore::open_at(url, &member, Some(&library))?;
            // Only once the database is known to be good: a wrong address leaves nothing.
            super::create_private_dir(data_dir).map_err(|source| QueueError::DataDir {
                path: data_dir.to_path_buf(),
                source,
            })?;
            Ok(Arc::new(store))
        }
        None => {
            let store = super::sqlite::Store::open(&super::sqlite::db_path(data_dir))?;
            Ok(Arc::new(store))
        }
    }
}

/// Every step on the queue. Times are unix milliseconds from the caller's clock, so tests
/// move time by hand and no backend reads a clock of its own.
pub trait Queue: Send + Sync + std::fmt::Debug {
    /// The file on this machine that holds the queue, if there is one: the worker watches the
    /// room on its disk and keeps a reserve beside it.
    fn database_file(&self) -> Option<&Path>;

    /// Wake `wake` whenever another process changes the queue, so that workers never poll
    /// (SQLite: a watch on the database's folder), for as long as the subscription is kept.
    fn subscribe(&self, wake: Arc<Notify>) -> Result<Subscription>;

    /// Whether other machines share this queue (PostgreSQL): then a worker's leases are short
    /// and renewed by a heartbeat ([`Queue::refresh`]), since a machine that is gone cannot be
    /// asked whether it lives.
    fn shared(&self) -> bool {
        false
    }

    /// Background upkeep a long-lived worker wants (SQLite: checkpoints off the commit path).
    /// Short commands do without.
    fn start_upkeep(&self) -> Result<()>;

    // Intake.

    /// A new, empty batch; its id.
    fn create_batch(&self, name: &str, source: &str, now: Millis) -> Result<i64>;

    /// Queue `jobs` into a batch (`None`: a new one named after the time, from source `api`).
    /// A job whose `url_key` is queued already is reported as a duplicate with that job's id.
    fn enqueue(
        &self,
        batch_id: Option<i64>,
        jobs: &[NewJob],
        max_retries: u32,
        now: Millis,
    ) -> Result<Vec<Enqueued>>;

    /// One intake (a paste, a drop, `gleaner add`): a batch and its jobs together, the batch
    /// made only if a job is new; its id, and each job's result.
    fn enqueue_batch(
        &self,
        name: &str,
        source: &str,
        jobs: &[NewJob],
        max_retries: u32,
        now: Millis,
    ) -> Result<(Option<i64>, Vec<Enqueued>)>;

    // The worker's steps.

    /// Group commit: record the outcomes in `finished`, then claim up to `claim.max` jobs,
    /// all in one transaction. `finished` is emptied only once it has committed, so on an
    /// error nothing fetched is lost.
    ///
    /// A claim takes pending, due jobs whose host is not paused and is below its connection
    /// limit (counted across every process), batches and then hosts taking turns. It counts
    /// the attempt up front, so a job that kills its worker every time still runs out.
    fn step(
        &self,
        finished: &mut Vec<(Claimed, Finish)>,
        policy: &Policy,
        now: Millis,
        claim: Option<&ClaimRequest<'_>>,
    ) -> Result<Step>;

    /// Put back running jobs whose worker is gone (`liveness` says so, or cannot tell and the
    /// lease has expired), counting the interrupted attempt.
    fn recover(
        &self,
        policy: &Policy,
        now: Millis,
        liveness: &dyn Fn(&str) -> Liveness,
    ) -> Result<Vec<Failed>>;

    /// The heartbeat: extend the leases of those of `held` that are `owner`'s running jobs to
    /// `lease_until`; how many it holds. A live worker's jobs are then never taken on another
    /// machine, and a job whose claim the worker never heard of (a lost reply) is not kept.
    fn refresh(&self, owner: &str, held: &[i64], lease_until: Millis) -> Result<u64>;

    /// Put `owner`'s running jobs (those `which` names) back to pending with their budget
    /// untouched, recording `reason` in their history; their ids.
    fn put_back(&self, owner: &str, which: Held<'_>, reason: &str, now: Millis)
    -> Result<Vec<i64>>;

    /// When the next job could become eligible: the earliest future due time or end of a
    /// host's pause.
    /// `intervals`: the hosts whose requests start at least this far apart.
    fn next_wakeup(&self, now: Millis, intervals: &HostIntervals) -> Result<Option<Millis>>;

    /// Whether any job is pending or running (what `run --until-idle` waits for).
    fn has_active(&self) -> Result<bool>;

    /// Compare the clock `reading` with the one last recorded and, after a wall-clock jump,
    /// shift every stored due time, lease and pause by it; the shift, if any.
    fn reconcile_clock(&self, reading: &Reading) -> Result<Option<Millis>>;

    /// Record (or clear) a worker's finding that this machine is offline.
    fn set_offline(&self, state: Option<&OfflineState>) -> Result<()>;
    fn offline(&self) -> Result<Option<OfflineState>>;

    /// Record (or clear) a worker's stall (a full disk, a database it cannot write). The
    /// write is also the stall's cheap probe of the database.
    fn set_stalled(&self, state: Option<&StallState>) -> Result<()>;
    fn stalled(&self) -> Result<Option<StallState>>;

    // Reads, for the window and the CLI.

    fn job(&self, id: i64) -> Result<Option<Job>>;
    /// A job's attempts, oldest first, ending with the one in flight.
    fn attempts(&self, job_id: i64) -> Result<Vec<Attempt>>;
    /// Jobs newest first, narrowed by `filter`.
    fn list_jobs(&self, filter: &JobFilter) -> Result<Vec<Job>>;
    /// How many jobs match `filter`, ignoring its paging.
    fn count_jobs(&self, filter: &JobFilter) -> Result<u64>;
    /// Hosts with jobs, most jobs first.
    fn job_hosts(&self, limit: u32) -> Result<Vec<HostCount>>;
    /// The newest batches with their job counts.
    fn batches(&self, limit: u32) -> Result<Vec<BatchInfo>>;
    fn stats(&self, now: Millis) -> Result<Stats>;
    /// Every host with a state of its own: paused, or throttled after a rate limit.
    fn hosts(&self, now: Millis) -> Result<Vec<HostState>>;

    // Manual actions, each with a result per job.

    /// Dead, cancelled and done jobs back to pending with a fresh budget; pending jobs made
    /// due now, ahead of every other due job.
    fn retry(&self, ids: &[i64], max_retries: u32, now: Millis) -> Result<Vec<ActionResult>>;
    /// Every dead job (of one host, or all) back to pending with a fresh budget; their ids.
    fn retry_dead(&self, host: Option<&str>, max_retries: u32, now: Millis) -> Result<Vec<i64>>;
    /// Cancel pending or running jobs; a running job's worker finds its lease gone.
    fn cancel(&self, ids: &[i64], now: Millis) -> Result<Vec<ActionResult>>;
    /// Remove jobs and their history; a running job is refused.
    fn delete(&self, ids: &[i64]) -> Result<Vec<ActionResult>>;

    // Search.

    /// The library's documents that match `query`, best first, at most `limit`. Any text is a
    /// query: what the index's syntax cannot parse is searched as plain words. `tag:` terms
    /// are filters, as in [`Queue::library`]; a query of no words at all finds nothing.
    fn search(&self, query: &str, limit: u32) -> Result<Vec<Hit>> {
        if query.split_whitespace().next().is_none() {
            return Ok(Vec::new());
        }
        self.library(&LibraryQuery {
            text: query.to_string(),
            limit,
            ..LibraryQuery::default()
        })
    }
    /// The window's Library view: documents (of jobs that have one) matching `q`, at most
    /// `q.limit`. Text is ranked as [`Queue::search`] ranks it, after its `tag:` terms are
    /// taken out as filters (all required, matched without regard to case); with no text
    /// left, the matching documents come newest job first, each snippet the start of its
    /// text. The host and batch filters narrow both.
    fn library(&self, q: &LibraryQuery) -> Result<Vec<Hit>>;
    /// Empty the index, before it is rebuilt from the library folder.
    fn clear_index(&self) -> Result<()>;
    /// Index documents read back from the library, `(job id, path, text)`, in one
    /// transaction; a rebuild passes the folder a piece at a time. Only a job's newest version
    /// (the path its row names) is indexed.
    fn reindex(&self, documents: &[(i64, String, Indexed)]) -> Result<Reindexed>;

    /// The shared library's documents after job `after`, at most `limit`, by job, named and
    /// hashed but without their bytes: what `gleaner library pull` compares a member's folder
    /// with. None where the library is the data folder alone (SQLite).
    fn shared_listing(&self, _after: i64, _limit: u32) -> Result<Vec<SharedEntry>> {
        Ok(Vec::new())
    }

    /// One shared document with its bytes (and its PDF's), for a pull that lacks it.
    fn shared_document(&self, _job_id: i64) -> Result<Option<SharedDocument>> {
        Ok(None)
    }

    /// A job's document as the database keeps it, for a member whose folder lacks the file;
    /// `None` where the library is the data folder alone.
    fn stored_document(&self, _job_id: i64) -> Result<Option<Vec<u8>>> {
        Ok(None)
    }

    // Citation keys.

    /// Every citation key given out so far, by job.
    fn citation_keys(&self) -> Result<Vec<(i64, String)>>;
    /// Keep keys given out now, `(job id, key)`, in one transaction; a job that has a key
    /// already, or a key another job has (without regard to case), is left as it is. How many
    /// were kept: fewer than given when another export gave keys at the same time.
    fn keep_citation_keys(&self, keys: &[(i64, String)]) -> Result<usize>;
    /// The citation key a reference file brings for a job queued before without one (the
    /// imported key is the one exported): kept in the job's metadata, and in the lab's copy of
    /// its document, unless the job has a key already, an export gave it one, or it is being
    /// fetched. Whether it was kept.
    fn adopt_citation_key(&self, job_id: i64, key: &str) -> Result<bool>;

    // Tags.

    /// A job's tags, in the order they were set; none for a job that is not there.
    fn job_tags(&self, job_id: i64) -> Result<Vec<String>>;
    /// Every tag with how many jobs carry it, most used first (then by name), for the
    /// window's tag filter and `gleaner tags`.
    fn tag_counts(&self) -> Result<Vec<(String, u64)>>;
    /// Every tag with how many documents in the library carry it (a job not fetched yet is
    /// not in the library), most used first: the Library's tag filter.
    fn library_tag_counts(&self) -> Result<Vec<(String, u64)>>;
    /// Every host with documents in the library and how many, by name: the Library's host
    /// filter (all of them: a cap by job count left out the hosts of a few papers).
    fn library_hosts(&self) -> Result<Vec<HostCount>>;
    /// Replace a job's tags (normalised: [`crate::engine::tags::normalise`]) in one
    /// transaction, in the tag index and in the job's metadata, so a re-fetch writes them into
    /// its new document; the tags as kept, or `None` if the job is not there. Tags change
    /// only here and at intake: a step keeps the tags the job has.
    fn set_tags(&self, job_id: i64, tags: &[String]) -> Result<Option<Vec<String>>>;

    // Hosts and the queue.

    /// Pause a host until resumed: none of its jobs starts, in any process.
    fn pause_host(&self, host: &str, now: Millis) -> Result<()>;
    /// Clear a host's manual pause and any rate-limit pause; false if it was not paused.
    fn resume_host(&self, host: &str, now: Millis) -> Result<bool>;
    /// Pause or resume the whole queue: while paused no job starts in any process.
    fn set_queue_paused(&self, paused: bool) -> Result<()>;
    fn is_queue_paused(&self) -> Result<bool>;

    // Settings.

    /// A free-form setting (JSON text), or `None` when never set.
    fn setting(&self, key: &str) -> Result<Option<String>>;
    fn set_setting(&self, key: &str, value: &str) -> Result<()>;
    /// A setting of this member's alone (on a shared queue, where [`Queue::setting`] is the
    /// lab's): one machine's choice that must not change the others'. The queue's own
    /// setting where no other machine shares it.
    fn member_setting(&self, key: &str) -> Result<Option<String>> {
        self.setting(key)
    }
    fn set_member_setting(&self, key: &str, value: &str) -> Result<()> {
        self.set_setting(key, value)
    }
    /// The stored policy, or the defaults.
    fn load_policy(&self) -> Result<Policy>;
    fn save_policy(&self, policy: &Policy) -> Result<()>;

    // Announcements.

    /// Dead jobs not announced yet, marked announced in the same transaction: each death is
    /// announced once, across restarts and windows.
    fn take_unannounced_deaths(&self, limit: u32) -> Result<Vec<Job>>;

    // Single steps, for tests and tools: each is one `step`.

    /// Claim one job.
    fn claim(
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
            intervals: &NO_INTERVALS,
            max: 1,
            clock: None,
        };
        let step = self.step(&mut Vec::new(), &Policy::default(), now, Some(&request))?;
        Ok(step.claimed.into_iter().next())
    }

    /// Record a success; the job as done, or `None` if the lease was lost meanwhile.
    fn complete(
        &self,
        claimed: &Claimed,
        success: &Success,
        policy: &Policy,
        now: Millis,
    ) -> Result<Option<Job>> {
        let finished = (claimed.clone(), Finish::Success(success.clone()));
        let step = self.step(&mut vec![finished], policy, now, None)?;
        match step.settled.into_iter().next() {
            Some((_, _, Settled::Done)) => self.job(claimed.job_id),
            _ => Ok(None),
        }
    }

    /// Record a failure and its decision (`unit` is the jitter sample in [-1, 1]); `None` if
    /// the lease was lost meanwhile.
    fn fail(
        &self,
        claimed: &Claimed,
        failure: &Failure,
        policy: &Policy,
        now: Millis,
        unit: f64,
    ) -> Result<Option<Failed>> {
        let finish = Finish::Failure {
            failure: failure.clone(),
            unit,
        };
        let step = self.step(&mut vec![(claimed.clone(), finish)], policy, now, None)?;
        Ok(match step.settled.into_iter().next() {
            Some((_, _, Settled::Failed(failed))) => Some(failed),
            _ => None,
        })
    }
}
