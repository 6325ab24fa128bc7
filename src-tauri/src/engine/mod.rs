//! The engine: everything Gleaner does without a window. No module here imports `tauri`.
//!
//! - [`queue`]: the queue interface every caller uses, and its vocabulary.
//! - [`sqlite`]: the durable queue in SQLite (jobs, attempts, hosts, batches, settings).
//! - [`policy`]: classification of outcomes, backoff, Retry-After.
//! - [`fetch`]: one bounded HTTP GET with reqwest.
//! - [`intake`]: finding and vetting URLs in free text.
//! - [`worker`]: the async loop that claims, fetches and commits.
//! - [`extract`]: readable text and metadata from HTML, PDF and text bodies.
//! - [`library`]: documents written to disk.
//! - [`render`]: a document's Markdown as safe HTML for the reader.
//! - [`export`]: the library as JSON Lines, BibTeX, CSL-JSON or RIS.
//! - [`redact`]: credentials kept out of logs and stored errors.
//! - [`person_name`]: a name written given names first, turned family first.
//! - [`tags`]: what a tag may be, and tags set by hand in the queue and the document together.
//! - [`clock`]: the injected notion of "now".
//! - [`open_lock_file`]: the files whose `flock` keeps processes from stepping on each other.

pub mod clock;
pub mod export;
pub mod extract;
pub mod fetch;
pub mod intake;
pub mod library;
pub mod person_name;
pub mod policy;
pub mod postgres;
pub mod queue;
pub mod redact;
pub mod render;
pub mod sqlite;
pub mod tags;
pub mod worker;

/// Makes `dir` and any missing parents, readable by this user alone where the platform has
/// modes: a data folder holds the queue, whose links may carry user names and passwords.
pub fn create_private_dir(dir: &std::path::Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

/// Makes an existing file readable and writable by this user alone (where the platform has
/// modes); a file that is not there is left so. A file system that keeps no modes (FAT or
/// exFAT on a USB drive refuse `chmod`) is said in the log, not an error: the data folder
/// works there as it did.
pub fn make_private(file: &std::path::Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let Ok(meta) = std::fs::metadata(file) else {
            return;
        };
        if meta.permissions().mode() & 0o777 == 0o600 {
            return;
        }
        if let Err(e) = std::fs::set_permissions(file, std::fs::Permissions::from_mode(0o600)) {
            tracing::warn!(file = %file.display(), error = %e, "cannot make the file private to this user");
        }
    }
    #[cfg(not(unix))]
    let _ = file;
}

/// Opens (creating if needed) a file that exists to be locked with `File::lock`: the lock,
/// not the content, is what matters, and the OS lets go of it when the process ends.
pub fn open_lock_file(path: &std::path::Path) -> std::io::Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
}

/// Whether SIGHUP is ignored in this process, as `nohup` (or a shell's `trap '' HUP`) leaves
/// it: listening for it then would undo that, and the run would stop when the session ends.
/// Read from /proc's SigIgn mask on Linux (no unsafe `sigaction` query); elsewhere it cannot be
/// told, so it is taken as ignored: a closed terminal ends the process as it always did, rather
/// than a `nohup` run ending with its session.
pub fn hangup_is_ignored() -> bool {
    #[cfg(target_os = "linux")]
    {
        let Ok(status) = std::fs::read_to_string("/proc/self/status") else {
            return true;
        };
        status
            .lines()
            .find_map(|line| line.strip_prefix("SigIgn:"))
            .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
            // Bit n-1 stands for signal n; SIGHUP is 1.
            .is_none_or(|mask| mask & 1 != 0)
    }
    #[cfg(not(target_os = "linux"))]
    true
}
