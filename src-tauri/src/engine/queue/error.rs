//! What can go wrong with the queue's database, in sentences a user can act on.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum QueueError {
    #[error("database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// Not a `source`: its message holds the migration's whole SQL text.
    #[error("cannot bring the database's schema up to date: {}", migration_cause(.0))]
    Migration(rusqlite_migration::Error),
    #[error(
        "{} is not a Gleaner queue, or it is damaged; move it aside and Gleaner starts a new, \
         empty queue there",
        .0.display()
    )]
    NotADatabase(PathBuf),
    #[error(
        "this queue was last opened by a newer Gleaner (schema version {found}; this one knows \
         up to {known}); update Gleaner, or give another --data-dir"
    )]
    NewerSchema { found: i64, known: usize },
    #[error(
        "cannot take the lock that keeps two processes from upgrading {path} at once: {source}"
    )]
    MigrationLock {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot create the data folder {path}: {source}")]
    DataDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("stored settings are not valid: {0}")]
    Settings(#[from] serde_json::Error),
    #[error("cannot watch the queue for other processes' changes: {0}")]
    Watch(#[from] notify::Error),
    #[error("the database lock was poisoned by a panic")]
    Poisoned,
    /// A PostgreSQL statement failed: the server's own sentence, or the driver's.
    #[error("database error: {}", postgres_cause(.0))]
    Postgres(#[from] tokio_postgres::Error),
    /// PostgreSQL could not be used at all (a bad address, a refused connection, bad
    /// credentials): one sentence that says which, with the address's password left out.
    #[error("{0}")]
    Connect(String),
    #[error(
        "this PostgreSQL database was last used by a newer Gleaner (schema version {found}; this \
         one knows up to {known}); update Gleaner, or give another --database"
    )]
    NewerPostgresSchema { found: i64, known: usize },
}

pub type Result<T> = std::result::Result<T, QueueError>;

impl From<rusqlite_migration::Error> for QueueError {
    fn from(e: rusqlite_migration::Error) -> Self {
        Self::Migration(e)
    }
}

/// A PostgreSQL error in one line: the server's message (and its detail), else the driver's.
fn postgres_cause(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => match db.detail() {
            Some(detail) => format!("{} ({detail})", db.message()),
            None => db.message().to_string(),
        },
        None => crate::engine::policy::error_chain(e),
    }
}

/// A migration's failure without the migration's whole SQL text, which rusqlite_migration
/// puts in its message.
fn migration_cause(e: &rusqlite_migration::Error) -> String {
    match e {
        rusqlite_migration::Error::RusqliteError { err, .. } => err.to_string(),
        other => other.to_string(),
    }
}

impl QueueError {
    /// The database could not grow: its disk (or quota) is full.
    pub fn is_disk_full(&self) -> bool {
        match self {
            QueueError::Sqlite(rusqlite::Error::SqliteFailure(f, _)) => {
                f.code == rusqlite::ErrorCode::DiskFull
            }
            QueueError::Postgres(e) => {
                e.code() == Some(&tokio_postgres::error::SqlState::DISK_FULL)
            }
            _ => false,
        }
    }

    /// A transaction PostgreSQL gave up to break a deadlock or a serialization conflict:
    /// trying it again is the remedy.
    pub fn is_retryable(&self) -> bool {
        use tokio_postgres::error::SqlState;
        matches!(self, QueueError::Postgres(e)
            if e.code() == Some(&SqlState::T_R_DEADLOCK_DETECTED)
                || e.code() == Some(&SqlState::T_R_SERIALIZATION_FAILURE)
                // Another member held a row past `lock_timeout` (postgres/connect.rs).
                || e.code() == Some(&SqlState::LOCK_NOT_AVAILABLE))
    }
}
