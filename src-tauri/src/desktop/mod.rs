//! The Tauri desktop shell: one `main` window (the static page in `ui/`) over the engine.
//!
//! This is the only module that imports Tauri. It opens the store, runs the engine's worker loop
//! on Tauri's async runtime, forwards committed job changes to the page as a coalesced
//! `jobs-changed` event, and exposes the app commands the page may call. Every app command must
//! also be listed in `build.rs` (`AppManifest::commands`) and granted in
//! `capabilities/default.json` (`allow-<command>`), or the ACL rejects the call.

mod commands;
pub mod database;
mod export;
mod handover;
mod library;
mod tray;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context as _;
use tauri::{Emitter as _, Manager as _, Runtime};

use crate::engine::library::Library;
use crate::engine::queue::{self, Queue};
use crate::engine::worker::{RunMode, Worker};

/// Label of the one window declared in `tauri.conf.json`.
pub const MAIN_WINDOW: &str = "main";

/// Committed changes are forwarded at most this often, however many jobs change.
const EVENT_COALESCE: Duration = Duration::from_millis(100);

/// State shared with the app commands through `tauri::State`.
pub struct DesktopState {
    store: Arc<dyn Queue>,
    /// A second connection for the window's reads: with WAL they never wait for the worker's
    /// writes, and the worker never waits for a big search.
    reader: Arc<dyn Queue>,
    worker: Arc<Worker>,
    /// Kept alive for the app's lifetime: it wakes the worker when a CLI process commits.
    watcher: Mutex<Option<queue::Subscription>>,
    data_dir: PathBuf,
    library_root: PathBuf,
    /// A tray icon exists, so closing the window hides it and the queue keeps working.
    has_tray: AtomicBool,
    /// Shown above the jobs while this window runs: why it is not on the queue Settings chose.
    notice: Option<String>,
    /// The shared database this window's queue is in (host, port and database: no user,
    /// password or parameters), shown in the footer; `None` on this computer's own queue.
    shared: Option<String>,
}

/// Where a shared database is, for the footer: host, port and database only.
fn shared_place(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(u) => format!(
            "{}{}{}",
            u.host_str().unwrap_or("localhost"),
            u.port().map(|p| format!(":{p}")).unwrap_or_default(),
            u.path()
        ),
        Err(_) => "a PostgreSQL database".into(),
    }
}

/// The queue a window opened: its shared database's address, if any, and why it is not the one
/// Settings chose, if it is not.
struct Opened {
    database: Option<String>,
    store: Arc<dyn Queue>,
    notice: Option<String>,
}

/// The queue Settings saved, or, when it cannot be opened, this computer's own queue and a
/// sentence saying so. A window that does not open could not be told to use another address.
fn open_saved_or_own(data_dir: &std::path::Path) -> anyhow::Result<Opened> {
    let url = match database::read(data_dir) {
        Ok(Some(url)) => url,
        Ok(None) => {
            return Ok(Opened {
                database: None,
                store: crate::cli::open_queue(data_dir, None)?,
                notice: None,
            });
        }
        Err(why) => {
            tracing::warn!("{why}; using this computer's queue");
            return Ok(Opened {
                database: None,
                store: crate::cli::open_queue(data_dir, None)?,
                notice: Some(own_queue_notice(&why)),
            });
        }
    };
    match crate::cli::open_queue(data_dir, Some(&url)) {
        Ok(store) => Ok(Opened {
            database: Some(url),
            store,
            notice: None,
        }),
        Err(e) => {
            let why = crate::cli::explain(&e);
            tracing::warn!(
                "the shared database saved in Settings cannot be opened ({why}); using this computer's queue"
            );
            Ok(Opened {
                database: None,
                store: crate::cli::open_queue(data_dir, None)?,
                notice: Some(own_queue_notice(&why)),
            })
        }
    }
}

fn own_queue_notice(why: &str) -> String {
    format!(
        "Not on the shared database: {}. This window uses this computer's own queue, and links \
         added now stay in it; Gleaner tries the shared database again at its next start \
         (change or clear its address in Settings).",
        why.trim_end_matches('.')
    )
}

/// Settings key: raise OS notifications for dead jobs ("true"/"false", default true). A
/// member's own on a shared queue: one lab member turning them off turned them off for all.
pub const NOTIFICATIONS_KEY: &str = "notifications";

fn notifications_enabled(store: &dyn Queue) -> bool {
    match store.member_setting(NOTIFICATIONS_KEY) {
        Ok(v) => v.as_deref() != Some("false"),
        Err(e) => {
            tracing::warn!(error = %e, "cannot read the notification setting; notifying");
            true
        }
    }
}

/// Opens the desktop window over the queue in `data_dir` and blocks until it is closed. If it
/// cannot, and no terminal shows the error (a launch from an app menu), an OS notification
/// says why.
pub fn run(data_dir: PathBuf, database: Option<String>) -> anyhow::Result<()> {
    let result = open_window(data_dir, database);
    if let Err(e) = &result
        && !std::io::IsTerminal::is_terminal(&std::io::stderr())
        && session_bus_available()
    {
        handover::notify_failed_start(&crate::cli::explain(e));
    }
    result
}

fn open_window(data_dir: PathBuf, database: Option<String>) -> anyhow::Result<()> {
    // Before anything else: a second launch needs neither the queue nor a display of its own.
    // The lock is held until this function returns, when the window has closed.
    #[cfg(target_os = "linux")]
    let _window_lock = match handover::claim_window(&data_dir, session_bus_available())? {
        handover::Launch::Open(lock) => lock,
        handover::Launch::HandedOver => {
            tracing::info!(
                "Gleaner is already open over this library ({}); showing its window",
                data_dir.display()
            );
            return Ok(());
        }
    };
    // GTK would panic deep inside the event loop; say what is wrong instead.
    let no_display = ["DISPLAY", "WAYLAND_DISPLAY"]
        .iter()
        .all(|v| std::env::var_os(v).is_none_or(|d| d.is_empty()));
    if cfg!(target_os = "linux") && no_display {
        anyhow::bail!(
            "there is no display to open the window on (DISPLAY and WAYLAND_DISPLAY are unset); \
             the subcommands work without one: see `gleaner --help`"
        );
    }
    // The command line and the environment come first, then what Settings saved.
    let Opened {
        database,
        store,
        notice,
    } = match database {
        Some(url) => Opened {
            store: crate::cli::open_queue(&data_dir, Some(&url))?,
            database: Some(url),
            notice: None,
        },
        None => open_saved_or_own(&data_dir)?,
    };
    let mut policy = store.load_policy()?;
    // Saved by an older Gleaner before settings were range-checked: run on the defaults rather
    // than on a setting that cannot work, and say which.
    if let Err(e) = policy.check() {
        tracing::warn!(
            "the saved settings cannot be used ({e}); running on the defaults until they are saved again"
        );
        policy = crate::engine::policy::Policy::default();
    }
    let library_root = data_dir.join("library");
    let worker = Worker::new(
        store.clone(),
        Arc::new(crate::engine::clock::SystemClock),
        Library::new(library_root.clone()),
        policy,
    )?;
    let reader = crate::cli::open_queue(&data_dir, database.as_deref())?;
    let state = DesktopState {
        store,
        reader,
        worker,
        watcher: Mutex::new(None),
        data_dir,
        library_root,
        notice,
        shared: database.as_deref().map(shared_place),
        has_tray: AtomicBool::new(false),
    };
    run_app(tauri::Builder::default(), state)
}

/// Builds the app on `builder` (any runtime, so tests can pass a mock builder) and runs its event
/// loop until the last window closes.
pub fn run_app<R: Runtime>(builder: tauri::Builder<R>, state: DesktopState) -> anyhow::Result<()> {
    let app = build_app(builder, state)?;
    let code = app.run_return(|app, event| {
        // Quit (the tray's, the last window's, a logout's SIGTERM): the worker hands its
        // fetches back unspent before the process ends, as `gleaner run` does on Ctrl+C.
        if let tauri::RunEvent::Exit = event
            && let Some(stop) = app.try_state::<WorkerStop>()
        {
            stop.stop_and_wait(STOP_PATIENCE);
        }
    });
    anyhow::ensure!(code == 0, "the desktop event loop exited with code {code}");
    Ok(())
}

/// Configures plugins, state and commands on `builder` and builds the app without running it.
pub fn build_app<R: Runtime>(
    builder: tauri::Builder<R>,
    state: DesktopState,
) -> anyhow::Result<tauri::App<R>> {
    let builder = if session_bus_available() {
        // First, so the name a second launch asks for (see `handover`) is owned before anything
        // else starts. The plugin talks D-Bus on Linux and cannot start without a session bus.
        builder.plugin(
            tauri_plugin_single_instance::Builder::new()
                .dbus_id(handover::dbus_id(&state.data_dir))
                .callback(|app, _argv, _cwd| {
                    tracing::info!("a second launch handed over; showing the window");
                    focus_main_window(app);
                })
                .build(),
        )
    } else {
        tracing::warn!("no D-Bus session bus: a second launch cannot show this window");
        builder
    };
    builder
        .plugin(tauri_plugin_window_state::Builder::default().build())
        .plugin(tauri_plugin_notification::init())
        .plugin(tauri_plugin_opener::init())
        .plugin(navigation_guard())
        .manage(state)
        .setup(|app| {
            let has_tray = tray::install(app.handle());
            app.state::<DesktopState>()
                .has_tray
                .store(has_tray, Ordering::Relaxed);
            start_engine(app.handle());
            Ok(())
        })
        .on_window_event(|window, event| {
            // With a tray icon, closing the window only hides it: fetching goes on, and the
            // tray's Quit ends the app.
            if let tauri::WindowEvent::CloseRequested { api, .. } = event
                && window.label() == MAIN_WINDOW
                && window
                    .state::<DesktopState>()
                    .has_tray
                    .load(Ordering::Relaxed)
                && tray::shown()
            {
                api.prevent_close();
                if let Err(e) = window.hide() {
                    tracing::warn!(error = %e, "cannot hide the window");
                }
            }
        })
        .invoke_handler(tauri::generate_handler![
            commands::stats,
            commands::add_urls,
            commands::list_jobs,
            commands::filters,
            commands::job_details,
            commands::retry_jobs,
            commands::retry_dead,
            commands::cancel_jobs,
            commands::delete_jobs,
            commands::set_queue_paused,
            commands::set_host_paused,
            commands::get_settings,
            commands::save_settings,
            commands::open_document,
            commands::open_library,
            commands::open_in_browser,
            export::export_library,
            library::search_library,
            library::library_tags,
            library::library_hosts,
            library::read_document_of,
            library::read_document_rest,
            library::set_document_tags,
            library::open_pdf,
            library::open_link,
        ])
        .build(tauri::generate_context!())
        .context("could not build the desktop window")
}

/// The window shows the app's own pages only: a link that slipped past the reader's own click
/// handling would otherwise load a fetched site inside the app.
fn navigation_guard<R: Runtime>() -> tauri::plugin::TauriPlugin<R> {
    tauri::plugin::Builder::new("navigation-guard")
        .on_navigation(|_webview, url| {
            let own = matches!(url.scheme(), "tauri" | "about")
                || (matches!(url.scheme(), "http" | "https")
                    && url.host_str() == Some("tauri.localhost"));
            if !own {
                tracing::warn!(url = %crate::engine::redact::url(url.as_str()), "navigation away from the app refused");
            }
            own
        })
        .build()
}

/// Start the worker loop and the event forwarder on Tauri's async runtime.
fn start_engine<R: Runtime>(app: &tauri::AppHandle<R>) {
    let state = app.state::<DesktopState>();
    let worker = state.worker.clone();
    match worker.watch_queue() {
        Ok(w) => {
            if let Ok(mut slot) = state.watcher.lock() {
                *slot = Some(w);
            }
        }
        Err(e) => {
            tracing::warn!(error = %e, "cannot watch the database; CLI changes show up within 30 s")
        }
    }
    // Deaths committed while the window was closed (a CLI run, a crash) are announced now.
    off_the_runtime(app, |app| announce_deaths(app));
    let mut events = worker.subscribe();
    // Changes this worker did not make (a `gleaner add` in a terminal while the queue is
    // paused, another member of a shared queue) reach the window and the tray too.
    let elsewhere = Arc::new(tokio::sync::Notify::new());
    let subscription = match state.store.subscribe(elsewhere.clone()) {
        Ok(s) => Some(s),
        Err(e) => {
            tracing::warn!(error = %e, "cannot watch the queue for other processes' changes");
            None
        }
    };
    let handle = app.clone();
    tauri::async_runtime::spawn(async move {
        let _subscription = subscription;
        loop {
            tokio::select! {
                event = events.recv() => match event {
                    Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
                },
                () = elsewhere.notified() => {}
            }
            // Let a burst settle, then send one event for all of it.
            tokio::time::sleep(EVENT_COALESCE).await;
            while events.try_recv().is_ok() {}
            // This worker's own commits wake the watch too: one event covers both.
            let _ = futures_util::FutureExt::now_or_never(elsewhere.notified());
            emit_changed(&handle);
            // Reads of the queue and a D-Bus call: on a shared database that has gone away
            // they wait for its timeouts, which must not hold a thread of the async runtime.
            let _ = off_the_runtime(&handle, |app| {
                tray::refresh(app);
                announce_deaths(app);
            })
            .await;
        }
    });
    watch_health(app, worker.health());
    // Settings another member of a shared queue (or `gleaner` on this folder) saves apply here.
    tauri::async_runtime::spawn(worker.clone().follow_stored_policy(
        crate::engine::policy::Policy::clone(&worker.policy()),
        |p| p,
    ));
    let handle = app.clone();
    let (stop, stop_rx) = tokio::sync::watch::channel(false);
    let (stopped, stopped_rx) = std::sync::mpsc::channel();
    app.manage(WorkerStop {
        stop,
        stopped: Mutex::new(stopped_rx),
    });
    tauri::async_runtime::spawn(async move {
        // The loop stalls rather than fail; an error here is one it could not survive.
        if let Err(e) = worker.run(RunMode::Forever, stop_rx).await {
            tracing::error!(error = %e, "the worker stopped");
            notify(
                &handle,
                "Gleaner stopped fetching",
                &format!("{e}. Quit and start Gleaner again to go on; nothing queued was lost."),
            );
        }
        let _ = stopped.send(());
    });
    // A logout, `kill`, Ctrl+C in the terminal that started it, or that terminal closed ends
    // the app as its Quit does (the last two killed it, and a retry was spent per fetch).
    #[cfg(unix)]
    for (kind, name) in [
        (tokio::signal::unix::SignalKind::terminate(), "SIGTERM"),
        (tokio::signal::unix::SignalKind::interrupt(), "SIGINT"),
        (tokio::signal::unix::SignalKind::hangup(), "SIGHUP"),
    ] {
        // Started under `nohup`, SIGHUP stays ignored: a handler would quit with the session.
        if name == "SIGHUP" && crate::engine::hangup_is_ignored() {
            continue;
        }
        let handle = app.clone();
        tauri::async_runtime::spawn(async move {
            if let Ok(mut signal) = tokio::signal::unix::signal(kind) {
                signal.recv().await;
                tracing::info!("asked to stop ({name}): handing the fetches in flight back");
                handle.exit(0);
            }
        });
    }
}

/// How long quitting waits for the worker to hand its fetches back.
const STOP_PATIENCE: Duration = Duration::from_secs(5);

/// The worker's stop signal, and word that it has stopped.
pub struct WorkerStop {
    stop: tokio::sync::watch::Sender<bool>,
    stopped: Mutex<std::sync::mpsc::Receiver<()>>,
}

impl WorkerStop {
    /// Ask the worker to stop, and wait (at most `within`) until it has put back what it held.
    fn stop_and_wait(&self, within: Duration) {
        let _ = self.stop.send(true);
        if let Ok(stopped) = self.stopped.lock()
            && stopped.recv_timeout(within).is_err()
        {
            tracing::warn!("the worker did not stop in time; the next start recovers its jobs");
        }
    }
}

/// Show the worker's stalls where a person looks: the window's status line and the tray on
/// every change, and one OS notification when a stall begins, unless one ended within
/// [`STALL_MEMORY`](crate::engine::worker::STALL_MEMORY) (a cause that comes back is the
/// same pause, not news).
fn watch_health<R: Runtime>(
    app: &tauri::AppHandle<R>,
    mut health: tokio::sync::watch::Receiver<Option<crate::engine::queue::StallState>>,
) {
    let handle = app.clone();
    tauri::async_runtime::spawn(async move {
        let mut stalled = false;
        let mut ended_at = None;
        while health.changed().await.is_ok() {
            let now = health.borrow_and_update().clone();
            let at = crate::engine::clock::boot_now_ms();
            let news = !stalled && now.is_some() && stall_is_news(ended_at, at);
            if stalled && now.is_none() {
                ended_at = Some(at);
            }
            let began = now.as_ref().filter(|_| news).map(|stall| {
                format!(
                    "{}. No fetch starts and no retry is spent; Gleaner goes on by itself once this is fixed.",
                    capitalised(&stall.reason)
                )
            });
            stalled = now.is_some();
            emit_changed(&handle);
            let _ = off_the_runtime(&handle, move |app| {
                if let Some(body) = began {
                    notify(app, "Gleaner paused", &body);
                }
                tray::refresh(app);
            })
            .await;
        }
    });
}

/// Whether a stall beginning at `now` (boot clock) is worth a notification: none ended within
/// `STALL_MEMORY` before it.
fn stall_is_news(
    ended_at: Option<crate::engine::clock::Millis>,
    now: crate::engine::clock::Millis,
) -> bool {
    let memory = crate::engine::worker::STALL_MEMORY.as_millis() as crate::engine::clock::Millis;
    ended_at.is_none_or(|ended| now - ended >= memory)
}

fn capitalised(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// Run `work` (reads of the queue, D-Bus calls) on a blocking thread, off the async runtime
/// and the main thread, which both keep the window answering.
fn off_the_runtime<R: Runtime>(
    app: &tauri::AppHandle<R>,
    work: impl FnOnce(&tauri::AppHandle<R>) + Send + 'static,
) -> tauri::async_runtime::JoinHandle<()> {
    let app = app.clone();
    tauri::async_runtime::spawn_blocking(move || work(&app))
}

fn notify<R: Runtime>(app: &tauri::AppHandle<R>, title: &str, body: &str) {
    use tauri_plugin_notification::NotificationExt as _;
    let body = notification_body(body);
    if let Err(e) = app.notification().builder().title(title).body(body).show() {
        tracing::warn!(error = %e, "cannot show a notification");
    }
}

/// Tell the page that committed job state changed; it re-reads what it shows.
fn emit_changed<R: Runtime>(app: &tauri::AppHandle<R>) {
    if let Err(e) = app.emit("jobs-changed", ()) {
        tracing::warn!(error = %e, "cannot notify the window of job changes");
    }
}

/// A connection to the session bus whose method calls give up after `method_timeout`.
#[cfg(target_os = "linux")]
fn session_bus(method_timeout: Duration) -> zbus::Result<zbus::blocking::Connection> {
    zbus::blocking::connection::Builder::session()?
        .method_timeout(method_timeout)
        .build()
}

/// The body of an OS notification as its server will read it. A server that advertises
/// `body-markup` (GNOME Shell, KDE Plasma, dunst and mako do) parses the body as markup, where
/// the `&` of a URL's query is an error and a `<` starts a tag; to the others the body is
/// plain text. Asked at each notification: a desktop's notification server can be replaced
/// while Gleaner runs, and deaths are announced at most a few times a second.
fn notification_body(text: &str) -> String {
    #[cfg(target_os = "linux")]
    let markup = session_bus(Duration::from_secs(1))
        .map(|bus| server_reads_markup(&bus))
        .unwrap_or_else(|e| {
            tracing::debug!(error = %e, "cannot ask the notification server what it reads");
            false
        });
    #[cfg(not(target_os = "linux"))]
    let markup = false;
    body_for(text, markup)
}

/// `text` as a notification body for a server that reads markup, or not.
fn body_for(text: &str, markup: bool) -> String {
    if markup {
        text.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
    } else {
        text.to_string()
    }
}

/// Whether the notification server on `bus` advertises `body-markup`.
#[cfg(target_os = "linux")]
fn server_reads_markup(bus: &zbus::blocking::Connection) -> bool {
    let capabilities = bus
        .call_method(
            Some("org.freedesktop.Notifications"),
            "/org/freedesktop/Notifications",
            Some("org.freedesktop.Notifications"),
            "GetCapabilities",
            &(),
        )
        .and_then(|reply| reply.body().deserialize::<Vec<String>>());
    match capabilities {
        Ok(caps) => caps.iter().any(|c| c == "body-markup"),
        Err(e) => {
            tracing::debug!(error = %e, "cannot ask the notification server what it reads");
            false
        }
    }
}

/// Whether a D-Bus session bus can be reached (Linux); elsewhere there is nothing to check.
fn session_bus_available() -> bool {
    if !cfg!(target_os = "linux") {
        return true;
    }
    if std::env::var_os("DBUS_SESSION_BUS_ADDRESS").is_some_and(|a| !a.is_empty()) {
        return true;
    }
    std::env::var_os("XDG_RUNTIME_DIR")
        .is_some_and(|dir| std::path::Path::new(&dir).join("bus").exists())
}

/// The deaths this window announces, marked announced. With notifications off they are taken
/// all the same where the queue is this machine's, so turning them back on does not replay
/// old ones; on a shared queue they are left to the members whose notifications are on (a
/// window with them off took every member's deaths, and no one was told).
fn deaths_to_announce(store: &dyn Queue) -> queue::Result<Vec<queue::Job>> {
    let enabled = notifications_enabled(store);
    if !enabled && store.shared() {
        return Ok(Vec::new());
    }
    let dead = store.take_unannounced_deaths(1000)?;
    Ok(if enabled { dead } else { Vec::new() })
}

/// Raise one OS notification for the deaths committed since the last one: a single job by
/// name, a burst as a summary ("3 jobs died: 2× 404 Not Found, 1× timed out").
fn announce_deaths<R: Runtime>(app: &tauri::AppHandle<R>) {
    use tauri_plugin_notification::NotificationExt as _;
    let state = app.state::<DesktopState>();
    let dead = match deaths_to_announce(&*state.store) {
        Ok(d) if !d.is_empty() => d,
        Ok(_) => return,
        Err(e) => {
            tracing::warn!(error = %e, "cannot read dead jobs to announce");
            return;
        }
    };
    // The error may quote a server: its control and bidi characters are escaped, as in the
    // window and the terminal.
    let reason = |j: &crate::engine::queue::Job| {
        let e = j.error.as_deref().unwrap_or("failed");
        crate::engine::intake::printable(e.split(" (").next().unwrap_or(e)).into_owned()
    };
    let (title, body) = if let [job] = dead.as_slice() {
        (
            "A page could not be fetched".to_string(),
            format!(
                "{}\n{}",
                crate::engine::intake::without_credentials(&job.url),
                reason(job)
            ),
        )
    } else {
        let mut counts: Vec<(String, usize)> = Vec::new();
        for j in &dead {
            let r = reason(j);
            match counts.iter_mut().find(|(k, _)| *k == r) {
                Some((_, n)) => *n += 1,
                None => counts.push((r, 1)),
            }
        }
        counts.sort_by_key(|c| std::cmp::Reverse(c.1));
        let parts: Vec<String> = counts.iter().map(|(r, n)| format!("{n}× {r}")).collect();
        (format!("{} jobs died", dead.len()), parts.join(", "))
    };
    let body = notification_body(&body);
    if let Err(e) = app.notification().builder().title(title).body(body).show() {
        tracing::warn!(error = %e, "cannot show a notification");
    }
}

/// Brings the main window to the front (a second launch, the tray's Show).
fn focus_main_window<R: Runtime>(app: &tauri::AppHandle<R>) {
    let Some(window) = app.get_webview_window(MAIN_WINDOW) else {
        tracing::warn!("second launch, but there is no main window to focus");
        return;
    };
    let shown = window
        .unminimize()
        .and_then(|()| window.show())
        .and_then(|()| window.set_focus());
    if let Err(err) = shown {
        tracing::warn!(error = %err, "could not focus the main window");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::postgres::PgStore;
    use crate::engine::postgres::testing::{execute, fresh_database_url};
    use crate::engine::sqlite::testing::job;

    /// On a shared queue each member's window has its own switch for death notifications, and
    /// one with them off leaves the lab's deaths to the members that announce them. The switch
    /// was the lab's (one member turning it off turned it off for all), and a window with it
    /// off took every death, so no member was told.
    #[test]
    fn a_member_with_notifications_off_leaves_deaths_to_the_others() {
        let url = fresh_database_url();
        let quiet = PgStore::open(&url, "quiet").expect("open");
        let told = PgStore::open(&url, "told").expect("open the other");
        quiet
            .enqueue(None, &[job("http://a.example/1")], 5, 0)
            .expect("enqueue");
        execute(
            &url,
            "UPDATE jobs SET status = 'dead', dead_notified = false",
        );
        quiet
            .set_member_setting(NOTIFICATIONS_KEY, "false")
            .expect("switch off");
        assert!(!notifications_enabled(&quiet));
        assert!(notifications_enabled(&told), "the other member's switch");
        assert!(deaths_to_announce(&quiet).expect("take").is_empty());
        let dead = deaths_to_announce(&told).expect("take");
        assert_eq!(
            dead.len(),
            1,
            "the death was left for a member that announces it"
        );
    }

    #[test]
    fn a_stall_that_comes_back_within_a_minute_is_not_announced_again() {
        let minute = crate::engine::worker::STALL_MEMORY.as_millis() as i64;
        assert!(super::stall_is_news(None, 5_000));
        assert!(!super::stall_is_news(Some(5_000), 6_000));
        assert!(!super::stall_is_news(Some(5_000), 5_000 + minute - 1));
        assert!(super::stall_is_news(Some(5_000), 5_000 + minute));
    }
}
