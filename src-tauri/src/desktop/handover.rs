//! A second launch on the same desktop hands over to the window already open, before it starts
//! anything of its own.
//!
//! `tauri-plugin-single-instance` notices a second launch too, but only once Tauri has built its
//! event loop, and it then ends the process with `std::process::exit`. That runs the C
//! libraries' exit handlers while tao's X11 device-event thread is still starting: a second
//! launch crashed with SIGSEGV about once in 150 launches on a loaded machine (core dump: a
//! thread in `XISelectEvents` locking a mutex libXext had already torn down). Asking the open
//! window over D-Bus first, and returning from `main` when it answers, starts no GTK and no
//! thread that could race the exit. The plugin stays: it owns the name the open window answers
//! on, and it still catches two launches started at the same instant.

use std::time::Duration;

/// The base of the D-Bus name the plugin owns, given to it explicitly so the two cannot drift.
pub const DBUS_ID: &str = "org.gleaner.app";

/// How long the open window has to answer; past it, it is taken to be hung.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Debug, thiserror::Error)]
pub enum HandoverError {
    #[error(
        "Gleaner is already open on this desktop, but it did not answer within {} s; if its \
         window is frozen, end that process and launch Gleaner again",
        ANSWER_TIMEOUT.as_secs()
    )]
    NoAnswer,
    #[cfg(target_os = "linux")]
    #[error("cannot ask the session bus for an open Gleaner window: {0}")]
    Bus(#[from] zbus::Error),
}

/// Asks the window already open on this desktop to show itself. `Ok(true)`: it did, and this
/// launch has nothing more to do. `Ok(false)`: no window is open.
#[cfg(target_os = "linux")]
pub fn hand_over_to_open_window() -> Result<bool, HandoverError> {
    // The plugin's naming (tauri-plugin-single-instance 2.x, linux.rs, without `semver`).
    let name = format!("{DBUS_ID}.SingleInstance");
    let path = format!("/{}", name.replace('.', "/").replace('-', "_"));
    let bus = zbus::blocking::connection::Builder::session()?
        .method_timeout(ANSWER_TIMEOUT)
        .build()?;
    let argv: Vec<String> = std::env::args().collect();
    let cwd = std::env::current_dir()
        .map(|d| d.to_string_lossy().into_owned())
        .unwrap_or_default();
    match bus.call_method(
        Some(name.as_str()),
        path.as_str(),
        Some("org.SingleInstance.DBus"),
        "ExecuteCallback",
        &(argv, cwd),
    ) {
        Ok(_) => Ok(true),
        // Nobody owns the name, and no service file could start one.
        Err(zbus::Error::MethodError(error, _, _))
            if error.as_str() == "org.freedesktop.DBus.Error.ServiceUnknown" =>
        {
            Ok(false)
        }
        Err(zbus::Error::InputOutput(io)) if io.kind() == std::io::ErrorKind::TimedOut => {
            Err(HandoverError::NoAnswer)
        }
        Err(e) => Err(e.into()),
    }
}

/// Elsewhere the plugin's own check runs before any window exists.
#[cfg(not(target_os = "linux"))]
pub fn hand_over_to_open_window() -> Result<bool, HandoverError> {
    Ok(false)
}
