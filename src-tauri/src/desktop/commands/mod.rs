//! The app commands the page may call. Each one is listed in `build.rs` (the app manifest) and
//! granted in `capabilities/default.json`; anything else is refused by the ACL.
//!
//! Commands answer with plain data or a sentence for the user: the page shows errors as text.

use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tauri::{Runtime, State};

use super::DesktopState;
use crate::engine::clock::{Clock as _, SystemClock};
use crate::engine::intake::{self, Found};
use crate::engine::library::Library;
use crate::engine::policy::{self, HostIntervals, Policy, Services};
use crate::engine::queue::{
    ActionResult, Attempt, BatchInfo, Enqueued, HostCount, Job, JobFilter, Queue, QueueError,
    Stats, Status, rfc3339,
};
use crate::engine::worker::Worker;

/// Rows per page of the job table: the webview never holds the whole queue.
const PAGE_MAX: u32 = 500;

pub(super) fn store_error(what: &str) -> impl Fn(QueueError) -> String + '_ {
    move |e| {
        tracing::warn!(error = %e, "{what}");
        format!("{what}: {e}")
    }
}

/// Run a query on the blocking pool. Synchronous commands run on the main thread, one after
/// another; the window's opening reads (counts, first page, filter menus) then queue behind
/// each other and behind the UI itself.
pub(super) async fn off_main<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, String> + Send + 'static,
) -> Result<T, String> {
    tauri::async_runtime::spawn_blocking(f)
        .await
        .map_err(|e| format!("The request stopped: {e}"))?
}

/// The job, or a sentence saying it could not be read or no longer exists.
pub(super) fn job_or_gone(store: &dyn Queue, id: i64) -> Result<Job, String> {
    store
        .job(id)
        .map_err(store_error("Could not read the job"))?
        .ok_or_else(|| format!("Job {id} no longer exists."))
}

/// Web text in a job as the page shows it: control and bidi characters escaped
/// ([`intake::printable`]). A title holding U+202E would otherwise reverse the rest of its
/// row and the details pane. The host stays as stored: it is the key the pause buttons send.
fn shown_job(mut job: Job) -> Job {
    let escape = |t: &mut String| {
        if let std::borrow::Cow::Owned(escaped) = intake::printable(t) {
            *t = escaped;
        }
    };
    job.url = intake::shown_url(&job.url);
    if let Some(url) = &mut job.final_url {
        *url = intake::shown_url(url);
    }
    for t in [&mut job.title, &mut job.error, &mut job.content_type]
        .into_iter()
        .flatten()
    {
        escape(t);
    }
    // A reference's metadata comes from a resolver's answer or an imported file: web text too.
    if let Some(r) = &mut job.reference {
        let prose = |t: &mut String| {
            if let std::borrow::Cow::Owned(escaped) = intake::printable_prose(t) {
                *t = escaped;
            }
        };
        for t in [&mut r.title, &mut r.container_title, &mut r.citation_key]
            .into_iter()
            .flatten()
            .chain(r.authors.iter_mut())
        {
            prose(t);
        }
    }
    job
}

/// Counts for the header bar, and what the window must keep saying about its queue.
#[derive(Debug, Serialize)]
pub struct WindowStats {
    #[serde(flatten)]
    stats: Stats,
    notice: Option<String>,
    shared: Option<String>,
}

#[tauri::command]
pub async fn stats(state: State<'_, DesktopState>) -> Result<WindowStats, String> {
    let store = state.reader.clone();
    let stalled = state.worker.stalled();
    let mut stats = off_main(move || {
        store
            .stats(SystemClock.now_ms())
            .map_err(store_error("Could not read the queue"))
    })
    .await?;
    // This window's worker knows its stall even when the database could not record it.
    if stalled.is_some() {
        stats.stalled = stalled;
    }
    Ok(WindowStats {
        stats,
        notice: state.notice.clone(),
        shared: state.shared.clone(),
    })
}

/// The most rejected lines one add sends to the page; the rest are only counted. A dropped
/// 100 MB word list rejects millions of lines, and every one of them crossed the IPC bridge
/// before the page kept its first 300.
pub const REJECTED_SENT: usize = 300;

/// What one paste or drop did, for the summary under the box: counts, the first
/// [`REJECTED_SENT`] rejected lines, and the done duplicates (ids only) it can fetch again.
#[derive(Debug, Default, Serialize)]
pub struct AddSummary {
    /// The batch the links went into, for a drop that sends a big file in several pieces.
    batch: Option<i64>,
    queued: u64,
    duplicates: u64,
    rejected: u64,
    rejected_lines: Vec<Rejected>,
    /// Left out on purpose and said so (a bookmarklet, a smart folder); not errors.
    skipped: u64,
    skipped_lines: Vec<Rejected>,
    /// Duplicates already fetched: "fetch again" retries them.
    refetch: Vec<i64>,
    /// Duplicates whose job got tags it lacked (a bookmark folder, an entry's keywords).
    tagged: u64,
    /// Duplicates whose new tags could not be added, each with why.
    untagged_lines: Vec<Rejected>,
    /// Dropped files refused whole as binary data (the page stops sending the rest of one).
    binary_files: u64,
}

#[derive(Debug, Serialize)]
struct Rejected {
    input: String,
    reason: String,
}

impl AddSummary {
    fn reject(&mut self, input: String, reason: String) {
        self.rejected += 1;
        if self.rejected_lines.len() < REJECTED_SENT {
            self.rejected_lines.push(Rejected { input, reason });
        }
    }

    /// Queue one chunk of findings and count what became of them.
    fn take(
        &mut self,
        intake: &mut intake::Intake<'_>,
        found: &mut Vec<Found>,
    ) -> Result<(), QueueError> {
        for r in intake.enqueue(found)? {
            match r {
                Enqueued::Queued { .. } => self.queued += 1,
                Enqueued::Duplicate { id, status, .. } => {
                    self.duplicates += 1;
                    if status == Status::Done {
                        self.refetch.push(id);
                    }
                }
            }
        }
        for b in intake.take_brought() {
            match b.refused {
                None => self.tagged += 1,
                Some(reason) if self.untagged_lines.len() < REJECTED_SENT => {
                    self.untagged_lines.push(Rejected {
                        input: format!("job {} (tags {})", b.id, b.tags.join(", ")),
                        reason,
                    });
                }
                Some(_) => {}
            }
        }
        for f in found.drain(..) {
            match f {
                Found::Rejected { input, reason } => self.reject(input, reason),
                Found::Skipped { input, reason } => {
                    self.skipped += 1;
                    if self.skipped_lines.len() < REJECTED_SENT {
                        self.skipped_lines.push(Rejected { input, reason });
                    }
                }
                Found::Url { .. } => {}
            }
        }
        Ok(())
    }
}

/// A file dropped on the window, as the page read it (bytes that are not UTF-8 become U+FFFD).
#[derive(Debug, Deserialize)]
pub struct DroppedFile {
    name: String,
    text: String,
}

/// Queue the URLs found in pasted or dropped text, and in dropped files, as one batch. A file
/// that holds binary data is rejected whole, by name, instead of line by line. `batch` goes on
/// with the batch of an earlier call: the page sends a big dropped file in pieces.
///
/// Off the main thread, like every command that may take a while: a paste of 100,000 links
/// takes seconds, and a synchronous command would freeze the window for all of them.
#[tauri::command]
pub async fn add_urls(
    text: String,
    source: String,
    files: Option<Vec<DroppedFile>>,
    batch: Option<i64>,
    piece: Option<bool>,
    state: State<'_, DesktopState>,
) -> Result<AddSummary, String> {
    let library = Library::new(state.library_root.clone());
    write_then_wake(&state, move |store, worker| {
        add_found(
            &text,
            &source,
            files.unwrap_or_default(),
            (batch, piece.unwrap_or(false)),
            (store, &library),
            worker.policy().max_retries,
        )
    })
    .await
}

fn add_found(
    text: &str,
    source: &str,
    files: Vec<DroppedFile>,
    (batch, piece): (Option<i64>, bool),
    (store, library): (&dyn Queue, &Library),
    max_retries: u32,
) -> Result<AddSummary, String> {
    let source = if source == "drop" { "drop" } else { "paste" };
    let now = SystemClock.now_ms();
    let fail = store_error("Could not add to the queue");
    let name = format!("{source} {}", rfc3339(now));
    let mut intake =
        intake::Intake::new(store, name, source, max_retries, now, batch).with_library(library);
    let mut summary = AddSummary::default();
    let files_len: usize = files.iter().map(|f| f.text.len()).sum();
    // Line by line and a chunk at a time, as `gleaner add --file` reads: neither the
    // findings of a big drop nor a transaction grow with it.
    let mut found = Vec::new();
    // A later piece of a big dropped text file is that file's text, not a paste to sniff.
    if piece || intake::files::pasted_kind(text) == intake::files::FileKind::Text {
        for line in text.lines() {
            intake::scan_line(line, &mut found);
            if found.len() >= intake::CHUNK {
                summary.take(&mut intake, &mut found).map_err(&fail)?;
            }
        }
    } else {
        // A BibTeX entry or RIS record pasted is read as the file it came from would be.
        let read = intake::files::read_file(None, text.as_bytes(), Vec::new(), |chunk| {
            summary.take(&mut intake, chunk)
        });
        match read {
            Ok(_) => {}
            Err(intake::files::Stopped::Taker(e)) => return Err(fail(e)),
            Err(intake::files::Stopped::File(e)) => {
                summary.reject("the pasted text".into(), e.to_string())
            }
        }
    }
    for file in files {
        let read = intake::files::read_file(
            Some(&file.name),
            file.text.as_bytes(),
            std::mem::take(&mut found),
            |chunk| summary.take(&mut intake, chunk),
        );
        match read {
            Ok(_) => {}
            Err(intake::files::Stopped::Taker(e)) => return Err(fail(e)),
            Err(intake::files::Stopped::File(intake::files::FileError::Binary)) => {
                summary.binary_files += 1;
                summary.reject(
                    file.name,
                    "not text (it holds binary data); drop a text file with links in it, a \
                     BibTeX, RIS, CSL-JSON or PubMed (.nbib) file, or a bookmark export"
                        .into(),
                );
            }
            // A damaged reference file: its entries before the damage were queued.
            Err(intake::files::Stopped::File(e)) => summary.reject(file.name, e.to_string()),
        }
    }
    summary.take(&mut intake, &mut found).map_err(&fail)?;
    summary.batch = intake.batch();
    tracing::info!(
        source,
        bytes = text.len() + files_len,
        batch = ?summary.batch,
        queued = summary.queued,
        duplicates = summary.duplicates,
        rejected = summary.rejected,
        "links added"
    );
    Ok(summary)
}

/// The job table's filters and paging, as the page sends them.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct JobQuery {
    status: Option<String>,
    host: Option<String>,
    batch_id: Option<i64>,
    search: Option<String>,
    /// Keyset paging: only jobs older (lower id) than this.
    before_id: Option<i64>,
    limit: Option<u32>,
}

#[derive(Debug, Serialize)]
pub struct JobPage {
    jobs: Vec<Job>,
    /// How many jobs match the filters in all.
    total: u64,
    /// Another page follows this one.
    more: bool,
}

/// One page of jobs, newest first, narrowed by the filters.
#[tauri::command]
pub async fn list_jobs(query: JobQuery, state: State<'_, DesktopState>) -> Result<JobPage, String> {
    let store = state.reader.clone();
    off_main(move || page_of_jobs(query, &*store)).await
}

fn page_of_jobs(query: JobQuery, store: &dyn Queue) -> Result<JobPage, String> {
    let status = match query.status.as_deref().filter(|s| !s.is_empty()) {
        None => None,
        Some(s) => Some(Status::parse(s).ok_or_else(|| format!("Unknown status “{s}”."))?),
    };
    let limit = query.limit.unwrap_or(100).clamp(1, PAGE_MAX);
    let mut filter = JobFilter {
        status,
        // A link pasted into the host box means its host.
        host: query
            .host
            .filter(|h| !h.trim().is_empty())
            .map(|h| intake::host_name(&h).unwrap_or(h)),
        batch_id: query.batch_id,
        search: query.search,
        before_id: query.before_id,
        // One extra row says whether another page follows.
        limit: Some(limit + 1),
    };
    let fail = store_error("Could not list jobs");
    let mut jobs = store.list_jobs(&filter).map_err(&fail)?;
    let more = jobs.len() > limit as usize;
    jobs.truncate(limit as usize);
    let jobs = jobs.into_iter().map(shown_job).collect();
    filter.before_id = None;
    let total = store.count_jobs(&filter).map_err(&fail)?;
    Ok(JobPage { jobs, total, more })
}

#[derive(Debug, Serialize)]
pub struct Filters {
    hosts: Vec<HostCount>,
    batches: Vec<BatchInfo>,
}

/// The hosts and batches the filter menus offer.
#[tauri::command]
pub async fn filters(state: State<'_, DesktopState>) -> Result<Filters, String> {
    let store = state.reader.clone();
    off_main(move || {
        let fail = store_error("Could not read the filters");
        Ok(Filters {
            hosts: store.job_hosts(500).map_err(&fail)?,
            batches: store.batches(100).map_err(&fail)?,
        })
    })
    .await
}

#[derive(Debug, Serialize)]
pub struct JobDetails {
    job: Job,
    attempts: Vec<Attempt>,
}

/// Everything about one job: the row and its whole attempt history.
#[tauri::command]
pub async fn job_details(id: i64, state: State<'_, DesktopState>) -> Result<JobDetails, String> {
    let store = state.reader.clone();
    off_main(move || {
        let job = shown_job(job_or_gone(&*store, id)?);
        let mut attempts = store
            .attempts(id)
            .map_err(store_error("Could not read the job"))?;
        for a in &mut attempts {
            if let Some(e) = a.error.as_mut()
                && let std::borrow::Cow::Owned(escaped) = intake::printable(e)
            {
                *e = escaped;
            }
        }
        Ok(JobDetails { job, attempts })
    })
    .await
}

/// What a manual action did, for the status line.
#[derive(Debug, Default, Serialize)]
pub struct ActionSummary {
    done: usize,
    skipped: Vec<String>,
}

fn summarize(results: Vec<ActionResult>, verb: &str) -> ActionSummary {
    let mut summary = ActionSummary::default();
    for r in results {
        match r {
            ActionResult::Done { .. } => summary.done += 1,
            ActionResult::NotFound { id } => {
                summary.skipped.push(format!("job {id} no longer exists"))
            }
            ActionResult::WrongState { id, status } => summary.skipped.push(format!(
                "job {id} is {} and cannot be {verb}",
                status.as_str()
            )),
        }
    }
    summary
}

/// Run a write on the blocking pool over the worker's connection, then wake the worker: the
/// write may have made jobs due.
async fn write_then_wake<T: Send + 'static>(
    state: &DesktopState,
    write: impl FnOnce(&dyn Queue, &Worker) -> Result<T, String> + Send + 'static,
) -> Result<T, String> {
    let (store, worker) = (state.store.clone(), state.worker.clone());
    off_main(move || {
        // Times written now must be on the same footing as the waits already queued.
        if let Err(e) = store.reconcile_clock(&SystemClock.reading()) {
            tracing::warn!(error = %e, "cannot check the queue's clock");
        }
        let done = write(&*store, &worker)?;
        worker.wake();
        Ok(done)
    })
    .await
}

/// Retry: dead, cancelled or done jobs start again with a fresh budget; pending jobs run now.
#[tauri::command]
pub async fn retry_jobs(
    ids: Vec<i64>,
    state: State<'_, DesktopState>,
) -> Result<ActionSummary, String> {
    write_then_wake(&state, move |store, worker| {
        let results = store
            .retry(&ids, worker.policy().max_retries, SystemClock.now_ms())
            .map_err(store_error("Could not retry"))?;
        Ok(summarize(results, "retried"))
    })
    .await
}

/// Every dead job (of one host, if given) back to pending with a fresh budget.
#[tauri::command]
pub async fn retry_dead(
    host: Option<String>,
    state: State<'_, DesktopState>,
) -> Result<ActionSummary, String> {
    // As the table's filter reads it: a link pasted into the host box means its host.
    let host = host
        .filter(|h| !h.trim().is_empty())
        .map(|h| intake::host_name(&h).unwrap_or(h));
    write_then_wake(&state, move |store, worker| {
        let ids = store
            .retry_dead(
                host.as_deref(),
                worker.policy().max_retries,
                SystemClock.now_ms(),
            )
            .map_err(store_error("Could not retry the dead jobs"))?;
        Ok(ActionSummary {
            done: ids.len(),
            skipped: Vec::new(),
        })
    })
    .await
}

#[tauri::command]
pub async fn cancel_jobs(
    ids: Vec<i64>,
    state: State<'_, DesktopState>,
) -> Result<ActionSummary, String> {
    write_then_wake(&state, move |store, _| {
        let results = store
            .cancel(&ids, SystemClock.now_ms())
            .map_err(store_error("Could not cancel"))?;
        Ok(summarize(results, "cancelled"))
    })
    .await
}

#[tauri::command]
pub async fn delete_jobs(
    ids: Vec<i64>,
    state: State<'_, DesktopState>,
) -> Result<ActionSummary, String> {
    let store = state.store.clone();
    off_main(move || {
        let results = store
            .delete(&ids)
            .map_err(store_error("Could not delete"))?;
        Ok(summarize(
            results,
            "deleted while running (cancel it first)",
        ))
    })
    .await
}

/// Pause or resume the whole queue, for this window and every CLI worker on the database.
#[tauri::command]
pub async fn set_queue_paused<R: Runtime>(
    paused: bool,
    app: tauri::AppHandle<R>,
    state: State<'_, DesktopState>,
) -> Result<bool, String> {
    let (store, worker) = (state.store.clone(), state.worker.clone());
    off_main(move || {
        store
            .set_queue_paused(paused)
            .map_err(store_error("Could not change the queue"))?;
        worker.wake();
        super::tray::refresh(&app);
        Ok(paused)
    })
    .await
}

/// Pause or resume one host.
#[tauri::command]
pub async fn set_host_paused(
    host: String,
    paused: bool,
    state: State<'_, DesktopState>,
) -> Result<bool, String> {
    let host = intake::host_name(&host)?;
    write_then_wake(&state, move |store, _| {
        let now = SystemClock.now_ms();
        let fail = store_error("Could not change the host");
        if paused {
            store.pause_host(&host, now).map_err(&fail)?;
        } else {
            store.resume_host(&host, now).map_err(&fail)?;
        }
        Ok(paused)
    })
    .await
}

/// The settings panel, in the units a person types.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
///
/// Every number is an `f64`, as the page's inputs give it: a count field of `u32` made a value
/// such as 1e20 or 2.5 fail in the IPC layer ("invalid value: floating point …, expected
/// u32") instead of reaching [`Settings::apply`], which names the field and its range.
pub struct Settings {
    pub base_delay_secs: f64,
    pub max_delay_secs: f64,
    pub max_retries: f64,
    /// ± percent.
    pub jitter_percent: f64,
    pub concurrency: f64,
    pub per_host: f64,
    pub timeout_secs: f64,
    /// Keep non-text content raw (true) or refuse it (false).
    pub keep_binary: bool,
    /// Also save the fetched HTML/PDF bytes beside the Markdown.
    pub keep_raw: bool,
    pub notifications: bool,
    /// One `host=duration` a line.
    pub host_intervals: String,
    pub doi_resolver: String,
    pub arxiv: String,
    pub pubmed: String,
    /// Settings saved by a window before PMC had a field of its own lack it.
    #[serde(default = "default_pmc")]
    pub pmc: String,
    pub wayback: String,
    /// A gone link asks the Wayback Machine for an archived copy.
    pub wayback_fallback: bool,
    /// The shared PostgreSQL database this machine uses from its next start (its password
    /// masked); empty for the data folder's own queue.
    #[serde(default)]
    pub database: String,
}

fn default_pmc() -> String {
    Services::default().pmc
}

impl Settings {
    pub fn from_policy(p: &Policy, notifications: bool) -> Self {
        Self {
            base_delay_secs: p.base_delay.as_secs_f64(),
            max_delay_secs: p.max_delay.as_secs_f64(),
            max_retries: f64::from(p.max_retries),
            jitter_percent: (p.jitter * 100.0).round(),
            concurrency: f64::from(p.concurrency),
            per_host: f64::from(p.per_host),
            timeout_secs: p.timeout.as_secs_f64(),
            keep_binary: p.keep_binary,
            keep_raw: p.keep_raw,
            notifications,
            host_intervals: p
                .host_intervals
                .iter()
                .map(|(h, d)| format!("{h}={}\n", humantime::format_duration(*d)))
                .collect(),
            doi_resolver: p.services.doi_resolver.clone(),
            arxiv: p.services.arxiv.clone(),
            pubmed: p.services.pubmed.clone(),
            pmc: p.services.pmc.clone(),
            wayback: p.services.wayback.clone(),
            wayback_fallback: p.wayback_fallback,
            database: String::new(),
        }
    }

    /// The host intervals as typed: a `host=duration` a line, blank lines ignored.
    fn intervals(&self) -> Result<HostIntervals, String> {
        let mut out = HostIntervals::new();
        for (n, line) in self.host_intervals.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            let bad = || {
                format!(
                    "Line {} of the host intervals must be host=duration, e.g. arxiv.org=3s.",
                    n + 1
                )
            };
            let (host, d) = line.rsplit_once('=').ok_or_else(bad)?;
            let host = intake::host_name(host).map_err(|_| bad())?;
            let d = humantime::parse_duration(d.trim()).map_err(|_| bad())?;
            if !policy::HOST_INTERVAL_RANGE.contains(d) {
                return Err(format!(
                    "Line {} of the host intervals: give a duration {}.",
                    n + 1,
                    policy::HOST_INTERVAL_RANGE.describe()
                ));
            }
            if !d.is_zero() {
                out.insert(host, d);
            }
        }
        Ok(out)
    }

    fn services(&self) -> Result<Services, String> {
        for (name, value) in [
            ("DOI resolver", &self.doi_resolver),
            ("arXiv", &self.arxiv),
            ("PubMed", &self.pubmed),
            ("PubMed Central", &self.pmc),
            ("Wayback Machine", &self.wayback),
        ] {
            if !policy::is_web_address(value.trim()) {
                return Err(format!("{name} must be an http:// or https:// address."));
            }
        }
        let trimmed = |v: &str| v.trim().trim_end_matches('/').to_string();
        Ok(Services {
            doi_resolver: trimmed(&self.doi_resolver),
            arxiv: trimmed(&self.arxiv),
            pubmed: trimmed(&self.pubmed),
            pmc: trimmed(&self.pmc),
            wayback: trimmed(&self.wayback),
        })
    }

    /// `base` with these settings applied, or a sentence naming the first field out of range.
    pub fn apply(&self, base: Policy) -> Result<Policy, String> {
        fn secs(name: &str, v: f64, lo: f64, hi: f64) -> Result<Duration, String> {
            if v.is_finite() && (lo..=hi).contains(&v) {
                Ok(Duration::from_secs_f64(v))
            } else {
                Err(format!("{name} must be between {lo} and {hi} seconds."))
            }
        }
        fn count(name: &str, v: f64, lo: u32, hi: u32) -> Result<u32, String> {
            if v.fract() == 0.0 && (f64::from(lo)..=f64::from(hi)).contains(&v) {
                // A whole number within u32's range: the cast is exact.
                Ok(v as u32)
            } else {
                Err(format!("{name} must be a whole number from {lo} to {hi}."))
            }
        }
        let base_delay = secs("Base delay", self.base_delay_secs, 1.0, 86_400.0)?;
        let max_delay = secs("Delay cap", self.max_delay_secs, 1.0, 7.0 * 86_400.0)?;
        if max_delay < base_delay {
            return Err("Delay cap must be at least the base delay.".into());
        }
        if !(self.jitter_percent.is_finite() && (0.0..=100.0).contains(&self.jitter_percent)) {
            return Err("Jitter must be between 0 and 100 percent.".into());
        }
        let policy = Policy {
            base_delay,
            max_delay,
            max_retries: count("Max retries", self.max_retries, 0, 50)?,
            jitter: self.jitter_percent / 100.0,
            concurrency: count("Concurrent fetches", self.concurrency, 1, 64)?,
            per_host: count("Fetches per host", self.per_host, 1, 16)?,
            timeout: secs("Timeout", self.timeout_secs, 1.0, 600.0)?,
            keep_binary: self.keep_binary,
            keep_raw: self.keep_raw,
            wayback_fallback: self.wayback_fallback,
            host_intervals: self.intervals()?,
            services: self.services()?,
            ..base
        };
        // The fields the panel does not show (the maximum job age, the largest body) come
        // from the stored policy; a stored value out of range is refused here too.
        policy.check().map_err(|e| {
            let mut text = e.to_string();
            if let Some(first) = text.get(..1) {
                text.replace_range(..1, &first.to_uppercase());
            }
            format!("{text}.")
        })?;
        Ok(policy)
    }
}

// The settings commands, like every command that reaches the queue, run off the main thread:
// a shared database that answers slowly must not freeze the window.
#[tauri::command]
pub async fn get_settings(state: State<'_, DesktopState>) -> Result<Settings, String> {
    let (store, worker, data_dir) = (
        state.store.clone(),
        state.worker.clone(),
        state.data_dir.clone(),
    );
    off_main(move || {
        // The stored settings: on a shared queue another member may have changed them.
        let policy = match store.load_policy() {
            Ok(p) if p.check().is_ok() => p,
            _ => Policy::clone(&worker.policy()),
        };
        Ok(Settings {
            database: super::database::shown(&data_dir),
            ..Settings::from_policy(&policy, super::notifications_enabled(&*store))
        })
    })
    .await
}

/// Validate, persist, then apply to the running worker: no restart needed.
#[tauri::command]
pub async fn save_settings(
    settings: Settings,
    state: State<'_, DesktopState>,
) -> Result<Settings, String> {
    let (store, worker, data_dir) = (
        state.store.clone(),
        state.worker.clone(),
        state.data_dir.clone(),
    );
    off_main(move || {
        let fail = store_error("Could not save the settings");
        // On the stored settings, not this window's copy: what the window does not edit (or
        // another member changed meanwhile) is kept.
        let stored = match store.load_policy() {
            Ok(p) if p.check().is_ok() => p,
            Ok(_) => Policy::clone(&worker.policy()),
            Err(e) => return Err(fail(e)),
        };
        let policy = settings.apply(stored)?;
        store.save_policy(&policy).map_err(&fail)?;
        let notifications = if settings.notifications {
            "true"
        } else {
            "false"
        };
        store
            .set_member_setting(super::NOTIFICATIONS_KEY, notifications)
            .map_err(&fail)?;
        // Last: a refused save above leaves the address as it was too.
        if super::database::save(&data_dir, &settings.database)? {
            tracing::info!("the shared database changes at the next start");
        }
        worker.set_policy(policy.clone());
        tracing::info!(
            ?policy,
            notifications = settings.notifications,
            "settings saved"
        );
        Ok(Settings {
            database: super::database::shown(&data_dir),
            ..Settings::from_policy(&policy, settings.notifications)
        })
    })
    .await
}

/// Open a job's saved document with the system's default app. The path comes from the database,
/// never from the page, and must lie inside the library folder.
#[tauri::command]
pub async fn open_document<R: Runtime>(
    id: i64,
    app: tauri::AppHandle<R>,
    state: State<'_, DesktopState>,
) -> Result<(), String> {
    let (store, root) = (state.store.clone(), state.library_root.clone());
    off_main(move || open_saved(&app, &*store, &root, id, |doc| Ok(doc.to_path_buf()))).await
}

/// Open, with the system's default app, the file `locate` finds from a job's saved document.
/// The document's path comes from the database, never from the page, and what is opened must
/// lie inside the library folder.
pub(super) fn open_saved<R: Runtime>(
    app: &tauri::AppHandle<R>,
    store: &dyn Queue,
    root: &Path,
    id: i64,
    locate: impl FnOnce(&Path) -> Result<std::path::PathBuf, String>,
) -> Result<(), String> {
    use tauri_plugin_opener::OpenerExt as _;
    let doc = job_or_gone(store, id)?
        .document
        .ok_or_else(|| "This job has no saved document yet.".to_string())?;
    // The document is checked before `locate` reads it, and what it names after.
    let doc = inside_library(root, Path::new(&doc))?;
    let path = inside_library(root, &locate(&doc)?)?;
    app.opener()
        .open_path(path.to_string_lossy(), None::<&str>)
        .map_err(|e| format!("Could not open {}: {e}", path.display()))
}

/// Open the library folder itself.
#[tauri::command]
pub fn open_library<R: Runtime>(
    app: tauri::AppHandle<R>,
    state: State<'_, DesktopState>,
) -> Result<(), String> {
    use tauri_plugin_opener::OpenerExt as _;
    let root = &state.library_root;
    std::fs::create_dir_all(root)
        .map_err(|e| format!("Could not create {}: {e}", root.display()))?;
    app.opener()
        .open_path(root.to_string_lossy(), None::<&str>)
        .map_err(|e| format!("Could not open {}: {e}", root.display()))
}

/// Open a job's page in the default browser (never in the app's window), http(s) only. A
/// reference not fetched yet (a DOI, an arXiv or PubMed id) opens at the service the worker
/// would ask first.
#[tauri::command]
pub async fn open_in_browser<R: Runtime>(
    id: i64,
    app: tauri::AppHandle<R>,
    state: State<'_, DesktopState>,
) -> Result<(), String> {
    use tauri_plugin_opener::OpenerExt as _;
    let store = state.store.clone();
    let job = off_main(move || job_or_gone(&*store, id)).await?;
    let target = job.final_url.unwrap_or(job.url);
    let target = match intake::identifiers::Identifier::from_uri(&target) {
        Some(id) => id.first_url(&state.worker.policy().services),
        None => target,
    };
    let parsed = url::Url::parse(&target).map_err(|e| format!("Not a valid address: {e}"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(format!(
            "Only http and https pages can be opened, not {target}."
        ));
    }
    app.opener()
        .open_url(parsed.as_str(), None::<&str>)
        .map_err(|e| format!("Could not open the browser: {e}"))
}

/// `path` canonicalized, if it lies inside `root`; a sentence otherwise.
pub(super) fn inside_library(root: &Path, path: &Path) -> Result<std::path::PathBuf, String> {
    let missing = |e: std::io::Error| {
        if e.kind() == std::io::ErrorKind::NotFound {
            format!(
                "The document {} is no longer in the library folder. Retry the job to fetch it again.",
                path.display()
            )
        } else {
            format!("The document {} cannot be read: {e}", path.display())
        }
    };
    let real = path.canonicalize().map_err(missing)?;
    let root = root
        .canonicalize()
        .map_err(|e| format!("The library folder {} is gone: {e}", root.display()))?;
    if real.starts_with(&root) {
        Ok(real)
    } else {
        Err(format!(
            "{} is outside the library folder and will not be opened.",
            real.display()
        ))
    }
}

#[cfg(test)]
mod tests;
