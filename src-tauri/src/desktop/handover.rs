//! A second launch over a library hands over to the window already open over it, before it
//! starts anything of its own.
//!
//! `tauri-plugin-single-instance` notices a second launch too, but only once Tauri has built its
//! event loop, and it then ends the process with `std::process::exit`. That runs the C
//! libraries' exit handlers while tao's X11 device-event thread is still starting: a second
//! launch crashed with SIGSEGV about once in 150 launches on a loaded machine (core dump: a
//! thread in `XISelectEvents` locking a mutex libXext had already torn down). Asking the open
//! window over D-Bus first, and returning from `main` when it answers, starts no GTK and no
//! thread that could race the exit. The plugin stays: it owns the name the open window answers
//! on.
//!
//! Two launches at the same instant both found no window to ask, and the later one to reach
//! the plugin took its exit path. So the window over a library is also the holder of an
//! exclusive lock on `window.lock` in the data folder, taken before anything else and held for
//! the process's life (the OS lets go of it when the process ends, however it ends). A launch
//! that finds the lock taken waits for the holder's window to answer on D-Bus instead.
//!
//! Decision: one window per library, not per desktop. The name carries a digest of the data
//! folder, so `gleaner --data-dir ~/other-library` opens a window over that library instead of
//! raising the window of another one.

use std::path::Path;
use std::time::Duration;

use sha2::{Digest as _, Sha256};

/// The app's identifier (`tauri.conf.json`), the stem of its D-Bus names.
const APP_ID: &str = "org.gleaner.app";

/// The base of the D-Bus name the window over the library in `data_dir` owns (the plugin appends
/// `.SingleInstance`). Given to the plugin explicitly, so the two sides cannot drift.
pub fn dbus_id(data_dir: &Path) -> String {
    // Two spellings of one folder are one library. A folder that does not exist yet has no
    // window open over it, whatever name it gets.
    let dir = std::fs::canonicalize(data_dir).unwrap_or_else(|_| data_dir.to_path_buf());
    let digest = Sha256::digest(dir.as_os_str().as_encoded_bytes());
    // A name element must not start with a digit.
    format!("{APP_ID}.library_{}", hex::encode(&digest[..8]))
}

/// How long the open window has to answer; past it, it is taken to be hung.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(5);

/// How long a launch waits for the window of another launch that holds the lock but does not
/// answer yet: it may be bringing a large queue's schema up to date before it opens.
const STARTING_PATIENCE: Duration = Duration::from_secs(60);

/// How often a waiting launch asks again.
const STARTING_POLL: Duration = Duration::from_millis(100);

/// The lock file, in the data folder.
const WINDOW_LOCK: &str = "window.lock";

#[derive(Debug, thiserror::Error)]
pub enum HandoverError {
    #[error(
        "Gleaner is already open over this library, but it did not answer within {} s; if its \
         window is frozen, end that process and launch Gleaner again",
        ANSWER_TIMEOUT.as_secs()
    )]
    NoAnswer,
    #[error(
        "another Gleaner process has been opening a window over this library for {} s and it \
         has not appeared; if that process is stuck, end it and launch Gleaner again",
        STARTING_PATIENCE.as_secs()
    )]
    NeverOpened,
    #[error(
        "Gleaner is already open over this library, and with no D-Bus session bus this launch \
         cannot ask it to show its window"
    )]
    NoBus,
    #[error("cannot use {path}, which keeps a library to one window: {source}")]
    Lock {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[cfg(target_os = "linux")]
    #[error(
        "Gleaner is already open over this library, but this launch cannot ask it to show its \
         window: {0}"
    )]
    Bus(#[from] zbus::Error),
}

/// What this launch is to do.
#[cfg(target_os = "linux")]
pub enum Launch {
    /// Open the window: this process holds the library's lock for as long as the file is open.
    Open(std::fs::File),
    /// The window already open over the library was asked to show itself; nothing more to do.
    HandedOver,
}

/// Take the library's window lock, or hand over to the process that holds it. `bus` says
/// whether a D-Bus session bus can be reached; without one a launch that finds the lock taken
/// cannot reach the open window, and says so. Linux only: elsewhere the plugin's own check runs
/// before any window exists.
#[cfg(target_os = "linux")]
pub fn claim_window(data_dir: &Path, bus: bool) -> Result<Launch, HandoverError> {
    let path = data_dir.join(WINDOW_LOCK);
    let lock_error = |source| HandoverError::Lock {
        path: path.clone(),
        source,
    };
    crate::engine::create_private_dir(data_dir).map_err(lock_error)?;
    let file = crate::engine::open_lock_file(&path).map_err(lock_error)?;
    let open_window = OpenWindow::over(data_dir);
    let deadline = std::time::Instant::now() + STARTING_PATIENCE;
    let mut waiting = false;
    let mut connection = None;
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(Launch::Open(file)),
            Err(std::fs::TryLockError::WouldBlock) => {}
            // A file system without locks (an NFS mount with `nolock`): open the window, as
            // before the lock existed, rather than not at all.
            Err(std::fs::TryLockError::Error(e)) => {
                tracing::warn!(error = %e, path = %path.display(), "cannot lock; a second launch at the same instant may open a second window");
                return Ok(Launch::Open(file));
            }
        }
        if !bus {
            return Err(HandoverError::NoBus);
        }
        let connection = match &mut connection {
            Some(c) => c,
            None => connection.insert(super::session_bus(ANSWER_TIMEOUT)?),
        };
        if open_window.ask_to_show(connection)? {
            return Ok(Launch::HandedOver);
        }
        // The holder has not put its window on the bus yet.
        if std::time::Instant::now() >= deadline {
            return Err(HandoverError::NeverOpened);
        }
        if !waiting {
            tracing::info!(
                "another Gleaner process is opening a window over this library; waiting for it"
            );
            waiting = true;
        }
        std::thread::sleep(STARTING_POLL);
    }
}

/// The window over a library as a second launch asks it to show itself: the plugin's name and
/// object path for it (tauri-plugin-single-instance 2.x, linux.rs, without `semver`), and this
/// launch's arguments and folder, which the plugin's callback receives.
#[cfg(target_os = "linux")]
struct OpenWindow {
    name: String,
    path: String,
    launch: (Vec<String>, String),
}

#[cfg(target_os = "linux")]
impl OpenWindow {
    fn over(data_dir: &Path) -> Self {
        let name = format!("{}.SingleInstance", dbus_id(data_dir));
        let path = format!("/{}", name.replace('.', "/").replace('-', "_"));
        let cwd = std::env::current_dir()
            .map(|d| d.to_string_lossy().into_owned())
            .unwrap_or_default();
        Self {
            name,
            path,
            launch: (std::env::args().collect(), cwd),
        }
    }

    /// Asks the window to show itself. `Ok(true)`: it did, and this launch has nothing more to
    /// do. `Ok(false)`: no window is on the bus under that name.
    fn ask_to_show(&self, bus: &zbus::blocking::Connection) -> Result<bool, HandoverError> {
        match bus.call_method(
            Some(self.name.as_str()),
            self.path.as_str(),
            Some("org.SingleInstance.DBus"),
            "ExecuteCallback",
            &self.launch,
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
}

/// Tells the desktop, with an OS notification, that the window could not open and why. A launch
/// from an app menu has no terminal, and would otherwise end with no word at all.
#[cfg(target_os = "linux")]
pub fn notify_failed_start(message: &str) {
    let sent = super::session_bus(ANSWER_TIMEOUT).and_then(|bus| {
        let body = super::body_for(message, super::server_reads_markup(&bus));
        bus.call_method(
            Some("org.freedesktop.Notifications"),
            "/org/freedesktop/Notifications",
            Some("org.freedesktop.Notifications"),
            "Notify",
            &(
                "Gleaner",
                0u32,
                "",
                "Gleaner could not open its window",
                body.as_str(),
                Vec::<&str>::new(),
                std::collections::HashMap::<&str, zbus::zvariant::Value<'_>>::new(),
                -1i32,
            ),
        )
    });
    if let Err(e) = sent {
        tracing::debug!(error = %e, "cannot notify the desktop that the window did not open");
    }
}

#[cfg(not(target_os = "linux"))]
pub fn notify_failed_start(_message: &str) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_library_has_one_name_however_its_folder_is_spelled_and_others_have_their_own() {
        let root = tempfile::tempdir().expect("dir");
        let a = root.path().join("a");
        let b = root.path().join("b");
        std::fs::create_dir_all(&a).expect("a");
        std::fs::create_dir_all(&b).expect("b");
        let a_again = b.join("..").join("a");
        assert_eq!(dbus_id(&a), dbus_id(&a_again));
        assert_ne!(dbus_id(&a), dbus_id(&b));
        for dir in [&a, &b, &root.path().join("not yet")] {
            let name = format!("{}.SingleInstance", dbus_id(dir));
            assert!(
                zbus::names::WellKnownName::try_from(name.as_str()).is_ok(),
                "{name} is not a valid bus name"
            );
        }
    }
}
