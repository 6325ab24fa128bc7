//! Wake-ups from other processes: a watch on the database's folder, since SQLite has no
//! notifications across connections.

use std::path::Path;
use std::sync::Arc;

use notify::{EventKind, RecursiveMode, Watcher};
use tokio::sync::Notify;

use super::Store;
use crate::engine::queue::{Result, Subscription};

impl Store {
    /// Wake `wake` on every change to the database's files (its WAL is written by every
    /// commit). An in-memory database has no other process to hear from.
    pub fn subscribe(&self, wake: Arc<Notify>) -> Result<Subscription> {
        let Some(db_path) = self.path() else {
            return Ok(Subscription::new(()));
        };
        let db_name = db_path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut watcher =
            notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
                if let Ok(event) = res {
                    let relevant =
                        matches!(event.kind, EventKind::Modify(_) | EventKind::Create(_))
                            && event.paths.iter().any(|p| {
                                p.file_name()
                                    .is_some_and(|n| n.to_string_lossy().starts_with(&db_name))
                            });
                    if relevant {
                        wake.notify_one();
                    }
                }
            })?;
        let dir = db_path.parent().unwrap_or(Path::new("."));
        watcher.watch(dir, RecursiveMode::NonRecursive)?;
        Ok(Subscription::new(watcher))
    }
}
