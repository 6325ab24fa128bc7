//! The tray icon: counts at a glance, and Show / Pause / Quit while the window is closed, so the
//! queue keeps working in the background.

use tauri::menu::{Menu, MenuItem, PredefinedMenuItem};
use tauri::tray::TrayIconBuilder;
use tauri::{Manager as _, Runtime};

use super::DesktopState;
use crate::engine::clock::{Clock as _, SystemClock};

const SHOW: &str = "show";
const PAUSE: &str = "pause";
const QUIT: &str = "quit";

/// The menu items whose text follows the queue.
pub struct TrayItems<R: Runtime> {
    counts: MenuItem<R>,
    pause: MenuItem<R>,
}

/// Build the tray icon. Returns false when the desktop has no tray (the window then quits the
/// app when closed, instead of hiding).
pub fn install<R: Runtime>(app: &tauri::AppHandle<R>) -> bool {
    match build(app) {
        Ok(items) => {
            app.manage(items);
            refresh(app);
            true
        }
        Err(e) => {
            tracing::warn!(error = %e, "no tray icon; closing the window will quit Gleaner");
            false
        }
    }
}

/// Whether the desktop shows tray icons now. On Linux an icon is a StatusNotifierItem, and only
/// a panel that runs the StatusNotifierWatcher shows one: stock GNOME has none, and there the
/// icon is built without error and never seen. Closing the window must then quit, or Gleaner
/// would go on in the background with no way back to it but a second launch, and no Quit.
/// Asked at each close, since a panel may start or stop while Gleaner runs.
#[cfg(target_os = "linux")]
pub fn shown() -> bool {
    let answer = super::session_bus(std::time::Duration::from_secs(1)).and_then(|bus| {
        let dbus = zbus::blocking::fdo::DBusProxy::new(&bus)?;
        let watcher = zbus::names::BusName::try_from("org.kde.StatusNotifierWatcher")?;
        dbus.name_has_owner(watcher).map_err(zbus::Error::from)
    });
    match answer {
        Ok(true) => true,
        Ok(false) => {
            tracing::info!("no tray is shown on this desktop; closing the window quits Gleaner");
            false
        }
        Err(e) => {
            tracing::warn!(error = %e, "cannot tell whether a tray is shown; closing the window quits Gleaner");
            false
        }
    }
}

#[cfg(not(target_os = "linux"))]
pub fn shown() -> bool {
    true
}

fn build<R: Runtime>(app: &tauri::AppHandle<R>) -> tauri::Result<TrayItems<R>> {
    let counts = MenuItem::with_id(app, "counts", "Gleaner", false, None::<&str>)?;
    let show = MenuItem::with_id(app, SHOW, "Show Gleaner", true, None::<&str>)?;
    let pause = MenuItem::with_id(app, PAUSE, "Pause queue", true, None::<&str>)?;
    let quit = MenuItem::with_id(app, QUIT, "Quit Gleaner", true, None::<&str>)?;
    let menu = Menu::with_items(
        app,
        &[
            &counts,
            &PredefinedMenuItem::separator(app)?,
            &show,
            &pause,
            &PredefinedMenuItem::separator(app)?,
            &quit,
        ],
    )?;
    let mut tray = TrayIconBuilder::with_id("main")
        .tooltip("Gleaner")
        .menu(&menu)
        .show_menu_on_left_click(true)
        .on_menu_event(|app, event| match event.id.as_ref() {
            SHOW => super::focus_main_window(app),
            PAUSE => toggle_pause(app),
            QUIT => app.exit(0),
            _ => {}
        });
    if let Some(icon) = app.default_window_icon() {
        tray = tray.icon(icon.clone());
    }
    tray.build(app)?;
    Ok(TrayItems { counts, pause })
}

/// Off the main thread: a shared database that has gone away would freeze every window until
/// its timeouts. A failure is said where a person with the window hidden sees it.
fn toggle_pause<R: Runtime>(app: &tauri::AppHandle<R>) {
    super::off_the_runtime(app, |app| {
        let state = app.state::<DesktopState>();
        let result = state
            .store
            .is_queue_paused()
            .and_then(|paused| state.store.set_queue_paused(!paused));
        if let Err(e) = result {
            tracing::warn!(error = %e, "cannot pause or resume the queue from the tray");
            super::notify(
                app,
                "Could not pause or resume the queue",
                &format!("{e}. Nothing changed: the queue goes on as it was."),
            );
        }
        state.worker.wake();
        refresh(app);
        super::emit_changed(app);
    });
}

/// Bring the counts and the Pause/Resume label up to date with the database.
pub fn refresh<R: Runtime>(app: &tauri::AppHandle<R>) {
    let Some(items) = app.try_state::<TrayItems<R>>() else {
        return;
    };
    let state = app.state::<DesktopState>();
    let stats = state
        .store
        .stats(SystemClock.now_ms())
        .map_err(|e| tracing::warn!(error = %e, "cannot read counts for the tray"))
        .ok();
    // A database that cannot be read is often why the worker is stalled: the stall is still
    // said, from the worker, without the counts.
    let mut text = match &stats {
        Some(stats) => format!(
            "{} pending · {} running · {} done · {} dead",
            stats.pending, stats.running, stats.done, stats.dead
        ),
        None => "counts unavailable".to_string(),
    };
    let queue_paused = stats.as_ref().is_some_and(|s| s.queue_paused);
    if queue_paused {
        text.push_str(" (paused)");
    }
    let recorded = stats.and_then(|s| s.stalled);
    if let Some(stall) = state.worker.stalled().or(recorded) {
        text.push_str(&format!(" · paused: {}", stall.reason));
    }
    let label = if queue_paused {
        "Resume queue"
    } else {
        "Pause queue"
    };
    let updated = items
        .counts
        .set_text(&text)
        .and_then(|()| items.pause.set_text(label));
    if let Err(e) = updated {
        tracing::warn!(error = %e, "cannot update the tray menu");
    }
    if let Some(tray) = app.tray_by_id("main")
        && let Err(e) = tray.set_tooltip(Some(format!("Gleaner: {text}")))
    {
        tracing::warn!(error = %e, "cannot update the tray tooltip");
    }
}
