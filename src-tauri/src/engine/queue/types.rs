//! The queue's vocabulary: jobs, attempts, claims, outcomes and the window's reads, shared by
//! every backend.

use std::time::Duration;

use serde::Serialize;

use crate::engine::clock::{Clock, Millis};
use crate::engine::policy::{Counters, Decision, ErrorClass, Failure, HostIntervals};

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

/// A stage of a reference's resolution (DESIGN.md, "References in, papers out"). Each stage
/// is an attempt of its own, under the same classification, budgets and host pauses. A job
/// with no stage runs its first request: its own address, or its identifier's service.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Stage {
    /// A DOI's metadata: the resolver asked for CSL-JSON.
    Csl,
    /// The landing page: `citation_*` metadata, the abstract, and a link to the PDF.
    Landing,
    /// The paper's PDF, whose text becomes the document.
    Pdf,
    /// A dead link's closest snapshot, asked of the Wayback Machine's availability API.
    Wayback,
    /// The snapshot itself, its raw copy (`id_`).
    Archived,
}

impl Stage {
    pub const ALL: [Stage; 5] = [
        Stage::Csl,
        Stage::Landing,
        Stage::Pdf,
        Stage::Wayback,
        Stage::Archived,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Csl => "csl",
            Stage::Landing => "landing",
            Stage::Pdf => "pdf",
            Stage::Wayback => "wayback",
            Stage::Archived => "archived",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|st| st.as_str() == s)
    }

    /// The stage of a job's first request: a DOI asks its resolver for metadata first, an
    /// arXiv or PubMed id starts at its landing page, a plain link is a page (no stage).
    pub fn initial(url: &str) -> Option<Stage> {
        match url.split_once(':').map(|(scheme, _)| scheme) {
            Some("doi") => Some(Stage::Csl),
            Some("arxiv" | "pmid" | "pmcid") => Some(Stage::Landing),
            _ => None,
        }
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
    /// What the reference file or bookmark said about it; null for a plain link.
    pub reference: Option<Reference>,
    /// The resolution stage its next (or, once done, its last) attempt runs; null for a
    /// job's first request. `archived` on a done job: it is the archive's copy.
    pub stage: Option<Stage>,
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
    /// The resolution stage the attempt ran; null for a job's first request.
    pub stage: Option<Stage>,
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
    /// What a reference file or bookmark said about the job, for its document, and what its
    /// earlier stages found.
    pub reference: Option<Box<Reference>>,
    /// The stage this attempt runs, and its address; `None` for the job's first request.
    pub stage: Option<Stage>,
    pub target: Option<String>,
    /// The document an earlier stage saved (a landing page), which a paper replaces.
    pub document: Option<String>,
}

/// How a claimed job's attempt ended, for [`Queue::step`].
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
    /// A stage is done, and the job goes on to the next one, due now.
    Next(Box<Next>),
    /// The last stage failed for good, and the job is done with what an earlier stage saved
    /// (a landing page whose PDF could not be had). The attempt is recorded as that failure.
    Kept(Failure),
}

/// A stage finished and what comes next, for [`Finish::Next`].
#[derive(Debug, Clone)]
pub struct Next {
    pub stage: Stage,
    /// The next stage's address, and the host whose lane, pauses and limits it waits in.
    pub target: String,
    pub host: String,
    /// The attempt's HTTP status.
    pub http_status: Option<u16>,
    /// The failure that sent the job on (a dead link going to the archive); `None` when the
    /// stage succeeded.
    pub failure: Option<Failure>,
    /// The job's metadata as this stage left it, replacing what was stored.
    pub reference: Option<Box<Reference>>,
    /// The document this stage saved (a landing page), so the job has one whatever comes next.
    pub saved: Option<Success>,
}

/// A finished job as committed by [`Queue::step`].
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

/// What [`Queue::recover`] can tell of a lease's owner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Liveness {
    /// Running: its jobs are its own, expired lease or not.
    Alive,
    /// Gone: its jobs come back now.
    Gone,
    /// Not ours to judge (another machine's id): its lease decides.
    Unknown,
}

/// Which of a worker's running jobs [`Queue::put_back`] puts back.
#[derive(Debug, Clone, Copy)]
pub enum Held<'a> {
    All,
    Only(&'a [i64]),
    /// All but these: after a step whose reply was lost, the claims it may have committed
    /// are the running jobs the worker does not know it holds.
    AllBut(&'a [i64]),
}

impl Held<'_> {
    pub fn wants(&self, id: i64) -> bool {
        match self {
            Held::All => true,
            Held::Only(ids) => ids.contains(&id),
            Held::AllBut(ids) => !ids.contains(&id),
        }
    }
}

/// What a worker asks [`Queue::step`] to claim.
#[derive(Clone)]
pub struct ClaimRequest<'a> {
    pub owner: &'a str,
    pub lease: Duration,
    pub per_host: u32,
    /// Hosts whose requests start at least this far apart, across every process.
    pub intervals: &'a HostIntervals,
    /// Free slots: claim at most this many.
    pub max: usize,
    /// Read once the claim holds the queue's lock, for the claim's own "now". A step that
    /// waited behind another process's write would otherwise start its jobs, and record a
    /// host's last start, at a time already past. Without it, the step's `now` serves.
    pub clock: Option<&'a dyn Clock>,
}

impl ClaimRequest<'_> {
    /// The claim's "now", read when it is called: see [`ClaimRequest::clock`].
    /// Never before the step's: a wall clock set back during the step would put the claim's
    /// times on another footing than the step's outcomes, which the next clock check shifts.
    pub fn now(&self, step_now: Millis) -> Millis {
        claim_now(self.clock, step_now)
    }
}

/// The host a failure's pause and throttle are for (a rate limit, a 503): the host that gave
/// the answer, when a plain link followed a redirect to another host; else the job's own. A
/// reference's stages do not follow redirects to another host, and their lane is named for
/// their service (`doi.org`) wherever the service is.
pub fn host_to_pause(job: &Job, failure: &Failure) -> String {
    let plain_link = job.stage.is_none() && Stage::initial(&job.url).is_none();
    failure
        .answered_by
        .as_deref()
        .filter(|_| plain_link)
        .and_then(|url| crate::engine::intake::host_name(url).ok())
        .unwrap_or_else(|| job.host.clone())
}

/// [`ClaimRequest::now`] for a backend that keeps only the request's clock.
pub fn claim_now(clock: Option<&dyn Clock>, step_now: Millis) -> Millis {
    clock.map_or(step_now, |c| c.now_ms().max(step_now))
}

/// The result of one [`Queue::step`]: every finished job as committed, then the new claims.
#[derive(Debug)]
pub struct Step {
    pub settled: Vec<(Claimed, Finish, Settled)>,
    pub claimed: Vec<Claimed>,
}

/// A new job for [`Queue::enqueue`].
#[derive(Debug, Clone, Default)]
pub struct NewJob {
    pub url: String,
    pub url_key: String,
    pub host: String,
    /// What a reference file or bookmark said about it.
    pub reference: Option<Box<Reference>>,
}

/// What a reference file or a bookmark export said about an entry. It is kept with the job
/// and shown until better metadata arrives (the fetched page's title replaces `title`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Reference {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub citation_key: Option<String>,
    /// "Family, Given".
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub authors: Vec<String>,
    /// `YYYY`, `YYYY-MM` or `YYYY-MM-DD`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issued: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_title: Option<String>,
    /// What kind of work, as CSL names it (`paper-conference`, `chapter`…), from the file's
    /// entry type or the resolver's CSL-JSON, so an export keeps a proceedings paper one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry_type: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// The abstract, as plain text: from CSL-JSON metadata or the landing page, kept when the
    /// PDF's text becomes the document.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub abstract_text: Option<String>,
    /// A DOI the metadata named (a landing page's `citation_doi`), for a job that is not a DOI.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub doi: Option<String>,
    /// Why the live link failed, for a job sent to the archive: its error if no copy exists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dead_link: Option<String>,
    /// The Wayback Machine's newest snapshot of a dead link, (status, timestamp), when it was
    /// no 2xx and the oldest is asked for next.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub newest_snapshot: Option<(String, String)>,
    /// The archived copy's time (RFC 3339), once the archive named a snapshot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archived_at: Option<String>,
    /// The landing page the PDF was named by.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub landing_url: Option<String>,
    /// Redirects to another host taken so far, each in that host's lane (bounded by
    /// `max_redirects`, so two hosts sending a job back and forth do not do it for ever).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub hops: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl Reference {
    /// The first author's family name, for the job table.
    pub fn first_author(&self) -> Option<&str> {
        self.authors
            .first()
            .map(|a| a.split(',').next().unwrap_or(a).trim())
    }

    /// The year of `issued`.
    pub fn year(&self) -> Option<&str> {
        self.issued.as_deref().and_then(|d| d.get(..4))
    }
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
    /// The job's metadata as the page filled it in, replacing what was stored; `None` leaves
    /// it (a plain page).
    pub reference: Option<Box<Reference>>,
    /// The document's searchable text, indexed with the success (replacing the job's older
    /// version); `None` leaves the index as it is.
    pub index: Option<Box<Indexed>>,
}

/// What the search index holds of a job's document, and what the Library list shows of it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Indexed {
    pub title: String,
    /// The authors, or a page's byline, as one line.
    pub authors: String,
    /// The document's text (Markdown).
    pub body: String,
    /// The authors one by one ("Family, Given"): a reference's, else the page's byline.
    pub author_list: Vec<String>,
    /// `YYYY`: a reference's issued date, else the page's published date.
    pub year: Option<String>,
    /// The journal, or a web page's site name.
    pub container: Option<String>,
    /// What the document was made from: html, pdf, text or raw.
    pub kind: Option<String>,
    /// The paper's PDF kept beside the document (a path).
    pub pdf: Option<String>,
}

/// What the window's Library view (and `gleaner search`) asks for: every field narrows.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(default)]
pub struct LibraryQuery {
    /// Ranked as [`crate::engine::queue::Queue::search`] ranks; `tag:NAME` and
    /// `tag:"two words"` terms in it are filters. Empty: every document, newest first.
    pub text: String,
    /// One more tag every document must have (matched without regard to case).
    pub tag: Option<String>,
    /// Exact host, lower case.
    pub host: Option<String>,
    pub batch_id: Option<i64>,
    /// At most this many (50 unless told).
    pub limit: u32,
}

impl Default for LibraryQuery {
    fn default() -> Self {
        Self {
            text: String::new(),
            tag: None,
            host: None,
            batch_id: None,
            limit: 50,
        }
    }
}

/// One search result, best first. Serializes to the CLI's `search --json` object.
#[derive(Debug, Clone, Serialize)]
pub struct Hit {
    pub job_id: i64,
    pub url: String,
    pub title: Option<String>,
    pub document: Option<String>,
    /// The matched words in context, each between `**`; for a query of no words, the start
    /// of the text.
    pub snippet: String,
    /// Relevance (BM25, title and authors weighted above the text): higher is better; 0 for a
    /// query of no words.
    pub score: f64,
    /// The host the job was fetched from (a reference's: the site it resolved to).
    pub host: String,
    /// "Family, Given", or a page's byline.
    pub authors: Vec<String>,
    pub year: Option<String>,
    /// The journal, or a web page's site name.
    pub container: Option<String>,
    pub tags: Vec<String>,
    /// The batch's name and id.
    pub batch: Option<String>,
    pub batch_id: Option<i64>,
    /// html, pdf, text or raw.
    pub kind: Option<String>,
    /// The paper's PDF beside the document (a path).
    pub pdf: Option<String>,
}

/// A document of the shared library as the database lists it, without its bytes (see
/// [`crate::engine::queue::Queue::shared_listing`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedEntry {
    pub job_id: i64,
    /// Relative to a member's library folder.
    pub path: String,
    /// The SHA-256 of the document as the database keeps it.
    pub sha256: Vec<u8>,
    /// The PDF beside it, when kept: its relative path and SHA-256.
    pub pdf: Option<(String, Vec<u8>)>,
}

/// A shared document with its bytes (see [`crate::engine::queue::Queue::shared_document`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedDocument {
    pub job_id: i64,
    /// Relative to a member's library folder.
    pub path: String,
    /// The file as its member wrote it: front matter and Markdown.
    pub content: Vec<u8>,
    /// The paper's PDF beside it (its relative path and bytes), when it was small enough.
    pub pdf: Option<(String, Vec<u8>)>,
}

/// What `Queue::reindex` did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Reindexed {
    /// Documents indexed: the newest version of a job.
    pub indexed: u64,
    /// Files passed over: an older version, or a job no longer in the queue.
    pub passed_over: u64,
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

/// What stopped the worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StallKind {
    /// A disk (or quota) holding the library or the database is full.
    DiskFull,
    /// The library folder cannot be written for another reason (read-only, permissions).
    Library,
    /// The database cannot be read or written.
    Database,
}

/// A worker that starts no job until the problem clears. It probes with backoff and goes
/// on by itself; the jobs it held went back to the queue with their budgets untouched.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct StallState {
    pub kind: StallKind,
    /// What is wrong and what to do, in plain words.
    pub reason: String,
    #[serde(serialize_with = "ser_time")]
    pub since: Millis,
    #[serde(serialize_with = "ser_time")]
    pub next_probe_at: Millis,
    /// Probes that failed so far.
    pub probes: u32,
    /// The worker that found it.
    pub worker: String,
}
