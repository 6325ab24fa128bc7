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
use crate::engine::policy::Policy;
use crate::engine::store::{
    ActionResult, Attempt, BatchInfo, Enqueued, HostCount, Job, JobFilter, Stats, Status, Store,
    StoreError, rfc3339,
};
use crate::engine::worker::Worker;

/// Rows per page of the job table: the webview never holds the whole queue.
const PAGE_MAX: u32 = 500;

fn store_error(what: &str) -> impl Fn(StoreError) -> String + '_ {
    move |e| {
        tracing::warn!(error = %e, "{what}");
        format!("{what}: {e}")
    }
}

/// Run a query on the blocking pool. Synchronous commands run on the main thread, one after
/// another; the window's opening reads (counts, first page, filter menus) then queue behind
/// each other and behind the UI itself.
async fn off_main<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, String> + Send + 'static,
) -> Result<T, String> {
    tauri::async_runtime::spawn_blocking(f)
        .await
        .map_err(|e| format!("The request stopped: {e}"))?
}

/// The job, or a sentence saying it could not be read or no longer exists.
fn job_or_gone(store: &Store, id: i64) -> Result<Job, String> {
    store
        .job(id)
        .map_err(store_error("Could not read the job"))?
        .ok_or_else(|| format!("Job {id} no longer exists."))
}

/// Counts for the header bar.
#[tauri::command]
pub async fn stats(state: State<'_, DesktopState>) -> Result<Stats, String> {
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
    Ok(stats)
}

/// What one paste or drop did, line by line, for the summary under the box.
#[derive(Debug, Default, Serialize)]
pub struct AddSummary {
    queued: Vec<String>,
    duplicates: Vec<Duplicate>,
    rejected: Vec<Rejected>,
}

/// A link already in the queue: the page can offer to fetch it again.
#[derive(Debug, Serialize)]
struct Duplicate {
    id: i64,
    url: String,
    status: Status,
}

#[derive(Debug, Serialize)]
struct Rejected {
    input: String,
    reason: String,
}

/// A file dropped on the window, as the page read it (bytes that are not UTF-8 become U+FFFD).
#[derive(Debug, Deserialize)]
pub struct DroppedFile {
    name: String,
    text: String,
}

/// Queue the URLs found in pasted or dropped text, and in dropped files, as one batch. A file
/// that holds binary data is rejected whole, by name, instead of line by line.
///
/// Off the main thread, like every command that may take a while: a paste of 100,000 links
/// takes seconds, and a synchronous command would freeze the window for all of them.
#[tauri::command]
pub async fn add_urls(
    text: String,
    source: String,
    files: Option<Vec<DroppedFile>>,
    state: State<'_, DesktopState>,
) -> Result<AddSummary, String> {
    write_then_wake(&state, move |store, worker| {
        add_found(text, &source, files, store, worker)
    })
    .await
}

fn add_found(
    text: String,
    source: &str,
    files: Option<Vec<DroppedFile>>,
    store: &Store,
    worker: &Worker,
) -> Result<AddSummary, String> {
    let source = if source == "drop" { "drop" } else { "paste" };
    let now = SystemClock.now_ms();
    let mut summary = AddSummary::default();
    let mut text = text;
    for file in files.unwrap_or_default() {
        if intake::looks_binary(&file.text) {
            summary.rejected.push(Rejected {
                input: file.name,
                reason: "not text (it holds binary data); drop a text file with links in it, \
                         or a bookmarks HTML file"
                    .into(),
            });
        } else {
            text.push('\n');
            text.push_str(&file.text);
        }
    }
    let found = intake::scan_text(&text);
    let jobs: Vec<_> = found.iter().filter_map(Found::as_new_job).collect();
    for f in &found {
        if let Found::Rejected { input, reason } = f {
            summary.rejected.push(Rejected {
                input: input.clone(),
                reason: reason.clone(),
            });
        }
    }
    if jobs.is_empty() {
        return Ok(summary);
    }
    let fail = store_error("Could not add to the queue");
    let policy = worker.policy();
    let name = format!("{source} {}", rfc3339(now));
    let (_, results) = store
        .enqueue_batch(&name, source, &jobs, policy.max_retries, now)
        .map_err(&fail)?;
    for r in results {
        match r {
            Enqueued::Queued { url, .. } => summary.queued.push(url),
            Enqueued::Duplicate { id, url, status } => {
                summary.duplicates.push(Duplicate { id, url, status })
            }
        }
    }
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
    off_main(move || page_of_jobs(query, &store)).await
}

fn page_of_jobs(query: JobQuery, store: &Store) -> Result<JobPage, String> {
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
        let job = job_or_gone(&store, id)?;
        let attempts = store
            .attempts(id)
            .map_err(store_error("Could not read the job"))?;
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
    write: impl FnOnce(&Store, &Worker) -> Result<T, String> + Send + 'static,
) -> Result<T, String> {
    let (store, worker) = (state.store.clone(), state.worker.clone());
    off_main(move || {
        // Times written now must be on the same footing as the waits already queued.
        if let Err(e) = store.reconcile_clock(&SystemClock.reading()) {
            tracing::warn!(error = %e, "cannot check the queue's clock");
        }
        let done = write(&store, &worker)?;
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
    let host = host.filter(|h| !h.trim().is_empty());
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
pub fn set_queue_paused<R: Runtime>(
    paused: bool,
    app: tauri::AppHandle<R>,
    state: State<'_, DesktopState>,
) -> Result<bool, String> {
    state
        .store
        .set_queue_paused(paused)
        .map_err(store_error("Could not change the queue"))?;
    state.worker.wake();
    super::tray::refresh(&app);
    Ok(paused)
}

/// Pause or resume one host.
#[tauri::command]
pub fn set_host_paused(
    host: String,
    paused: bool,
    state: State<'_, DesktopState>,
) -> Result<bool, String> {
    let host = intake::host_name(&host)?;
    let now = SystemClock.now_ms();
    let fail = store_error("Could not change the host");
    if paused {
        state.store.pause_host(&host, now).map_err(&fail)?;
    } else {
        state.store.resume_host(&host, now).map_err(&fail)?;
    }
    state.worker.wake();
    Ok(paused)
}

/// The settings panel, in the units a person types.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    pub base_delay_secs: f64,
    pub max_delay_secs: f64,
    pub max_retries: u32,
    /// ± percent.
    pub jitter_percent: f64,
    pub concurrency: u32,
    pub per_host: u32,
    pub timeout_secs: f64,
    /// Keep non-text content raw (true) or refuse it (false).
    pub keep_binary: bool,
    /// Also save the fetched HTML/PDF bytes beside the Markdown.
    pub keep_raw: bool,
    pub notifications: bool,
}

impl Settings {
    pub fn from_policy(p: &Policy, notifications: bool) -> Self {
        Self {
            base_delay_secs: p.base_delay.as_secs_f64(),
            max_delay_secs: p.max_delay.as_secs_f64(),
            max_retries: p.max_retries,
            jitter_percent: (p.jitter * 100.0).round(),
            concurrency: p.concurrency,
            per_host: p.per_host,
            timeout_secs: p.timeout.as_secs_f64(),
            keep_binary: p.keep_binary,
            keep_raw: p.keep_raw,
            notifications,
        }
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
        fn count(name: &str, v: u32, lo: u32, hi: u32) -> Result<u32, String> {
            if (lo..=hi).contains(&v) {
                Ok(v)
            } else {
                Err(format!("{name} must be between {lo} and {hi}."))
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
        Ok(Policy {
            base_delay,
            max_delay,
            max_retries: count("Max retries", self.max_retries, 0, 50)?,
            jitter: self.jitter_percent / 100.0,
            concurrency: count("Concurrent fetches", self.concurrency, 1, 64)?,
            per_host: count("Fetches per host", self.per_host, 1, 16)?,
            timeout: secs("Timeout", self.timeout_secs, 1.0, 600.0)?,
            keep_binary: self.keep_binary,
            keep_raw: self.keep_raw,
            ..base
        })
    }
}

#[tauri::command]
pub fn get_settings(state: State<'_, DesktopState>) -> Result<Settings, String> {
    Ok(Settings::from_policy(
        &state.worker.policy(),
        super::notifications_enabled(&state.store),
    ))
}

/// Validate, persist, then apply to the running worker: no restart needed.
#[tauri::command]
pub fn save_settings(
    settings: Settings,
    state: State<'_, DesktopState>,
) -> Result<Settings, String> {
    let policy = settings.apply(state.worker.policy())?;
    let fail = store_error("Could not save the settings");
    state.store.save_policy(&policy).map_err(&fail)?;
    state
        .store
        .set_setting(
            super::NOTIFICATIONS_KEY,
            if settings.notifications {
                "true"
            } else {
                "false"
            },
        )
        .map_err(&fail)?;
    state.worker.set_policy(policy.clone());
    tracing::info!(
        ?policy,
        notifications = settings.notifications,
        "settings saved"
    );
    Ok(Settings::from_policy(&policy, settings.notifications))
}

#[derive(Debug, Serialize)]
pub struct Exported {
    path: String,
    documents: usize,
}

/// Write the library as JSON Lines to `<data-dir>/exports/library-<time>.jsonl`, atomically.
#[tauri::command]
pub async fn export_library(state: State<'_, DesktopState>) -> Result<Exported, String> {
    let store = state.store.clone();
    let dir = state.data_dir.join("exports");
    let stamp = rfc3339(SystemClock.now_ms()).replace([':', '.'], "-");
    let path = dir.join(format!("library-{stamp}.jsonl"));
    // Reading every document takes a while on a big library: off the async runtime.
    tauri::async_runtime::spawn_blocking(move || {
        let fail =
            |e: &dyn std::fmt::Display| format!("Could not export to {}: {e}", dir.display());
        std::fs::create_dir_all(&dir).map_err(|e| fail(&e))?;
        let tmp = tempfile::NamedTempFile::new_in(&dir).map_err(|e| fail(&e))?;
        let mut out = std::io::BufWriter::new(tmp);
        let documents =
            crate::engine::export::export_jsonl(&store, &mut out).map_err(|e| fail(&e))?;
        let tmp = out.into_inner().map_err(|e| fail(&e.into_error()))?;
        tmp.persist(&path).map_err(|e| fail(&e.error))?;
        tracing::info!(documents, path = %path.display(), "library exported");
        Ok(Exported {
            path: path.to_string_lossy().into_owned(),
            documents,
        })
    })
    .await
    .map_err(|e| format!("The export stopped: {e}"))?
}

/// Open a job's saved document with the system's default app. The path comes from the database,
/// never from the page, and must lie inside the library folder.
#[tauri::command]
pub fn open_document<R: Runtime>(
    id: i64,
    app: tauri::AppHandle<R>,
    state: State<'_, DesktopState>,
) -> Result<(), String> {
    use tauri_plugin_opener::OpenerExt as _;
    let job = job_or_gone(&state.store, id)?;
    let doc = job
        .document
        .ok_or_else(|| "This job has no saved document yet.".to_string())?;
    let path = inside_library(&state.library_root, Path::new(&doc))?;
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

/// Open a job's page in the default browser (never in the app's window), http(s) only.
#[tauri::command]
pub fn open_in_browser<R: Runtime>(
    id: i64,
    app: tauri::AppHandle<R>,
    state: State<'_, DesktopState>,
) -> Result<(), String> {
    use tauri_plugin_opener::OpenerExt as _;
    let job = job_or_gone(&state.store, id)?;
    let target = job.final_url.unwrap_or(job.url);
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
fn inside_library(root: &Path, path: &Path) -> Result<std::path::PathBuf, String> {
    let missing = |e: std::io::Error| format!("The document {} is gone: {e}", path.display());
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
mod tests {
    use super::*;

    #[test]
    fn settings_round_trip_through_the_policy() {
        let p = Policy::default();
        let s = Settings::from_policy(&p, true);
        assert_eq!(s.base_delay_secs, 30.0);
        assert_eq!(s.jitter_percent, 20.0);
        let back = s.apply(Policy::default()).expect("valid");
        assert_eq!(back.base_delay, p.base_delay);
        assert_eq!(back.max_delay, p.max_delay);
        assert_eq!(back.concurrency, p.concurrency);
        assert!((back.jitter - p.jitter).abs() < 1e-9);
    }

    #[test]
    fn settings_out_of_range_name_the_field() {
        let ok = Settings::from_policy(&Policy::default(), true);
        let cases = [
            (
                Settings {
                    max_delay_secs: 5.0,
                    base_delay_secs: 10.0,
                    ..ok.clone()
                },
                "Delay cap must be at least",
            ),
            (
                Settings {
                    concurrency: 0,
                    ..ok.clone()
                },
                "Concurrent fetches",
            ),
            (
                Settings {
                    jitter_percent: f64::NAN,
                    ..ok.clone()
                },
                "Jitter",
            ),
            (
                Settings {
                    timeout_secs: 0.1,
                    ..ok.clone()
                },
                "Timeout",
            ),
        ];
        for (s, want) in cases {
            let err = s.apply(Policy::default()).expect_err("out of range");
            assert!(err.contains(want), "{err:?} should mention {want:?}");
        }
    }

    #[test]
    fn only_paths_inside_the_library_open() {
        let dir = tempfile::tempdir().expect("tempdir");
        let lib = dir.path().join("library");
        std::fs::create_dir_all(lib.join("example.org")).expect("mkdir");
        let inside = lib.join("example.org").join("a.md");
        std::fs::write(&inside, "x").expect("write");
        let outside = dir.path().join("secret.txt");
        std::fs::write(&outside, "x").expect("write");
        assert!(inside_library(&lib, &inside).is_ok());
        let err = inside_library(&lib, &outside).expect_err("outside");
        assert!(err.contains("outside the library"), "{err}");
        let sneaky = lib
            .join("example.org")
            .join("..")
            .join("..")
            .join("secret.txt");
        assert!(inside_library(&lib, &sneaky).is_err());
        assert!(inside_library(&lib, &lib.join("nope.md")).is_err());
    }
}
