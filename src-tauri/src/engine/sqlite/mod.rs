//! The queue in SQLite (WAL), in a data folder on this machine. Every state change happens in
//! one `BEGIN IMMEDIATE` transaction and is reported only after it commits, so what the logs
//! and the UI say is what the database holds.
//!
//! One file per concern; [`Store`]'s methods are spread over them, and `queue_impl.rs` maps
//! them onto [`crate::engine::queue::Queue`].

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rusqlite::Connection;

mod actions;
mod citation_keys;
mod claim;
mod clock_jump;
mod connection;
mod enqueue;
mod hosts;
mod lanes;
mod migrations;
mod outcomes;
mod queue_impl;
mod reads;
mod rows;
pub(crate) mod search;
pub(crate) mod snippet;
mod stages;
mod stall;
mod tags;
#[cfg(test)]
pub(crate) mod testing;
mod watch;

pub use migrations::migrations;
pub use outcomes::RECOVERY_STREAK;

use connection::Checkpointer;
use lanes::LaneKeys;

/// The SQLite queue: one connection, shared by the threads of one process.
pub struct Store {
    conn: Mutex<Connection>,
    path: Option<PathBuf>,
    checkpointer: Mutex<Option<Checkpointer>>,
    /// Keys of lanes this connection read ahead; only the claim uses it, inside a write.
    lane_keys: Mutex<LaneKeys>,
    /// The clock offset this store last saw recorded ([`Store::reconcile_clock`]).
    clock_anchor: Mutex<Option<clock_jump::Anchor>>,
    /// Written after every commit that changed a row, for other processes' watches ([`watch`]).
    signal: watch::Signal,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("path", &self.path).finish()
    }
}

/// The database file inside a data folder. The window and every CLI process share it.
pub fn db_path(data_dir: &Path) -> PathBuf {
    data_dir.join("gleaner.db")
}
