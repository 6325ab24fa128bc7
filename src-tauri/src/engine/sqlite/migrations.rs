//! The schema's versions, and how processes that open one database together take turns to
//! bring it up to date.

use std::path::{Path, PathBuf};

use rusqlite::Connection;
use rusqlite_migration::{M, Migrations};

use crate::engine::queue::{QueueError, Result};

/// Schema versions, applied in order. Never edit a released one: add the next.
pub fn migrations() -> Migrations<'static> {
    Migrations::new(vec![
        M::up(include_str!("../../../migrations/0001_queue.sql")),
        M::up(include_str!(
            "../../../migrations/0002_notifications_and_host_politeness.sql"
        )),
        M::up(include_str!("../../../migrations/0003_fair_batches.sql")),
        M::up(include_str!("../../../migrations/0004_blocked_pages.sql")),
        M::up(include_str!("../../../migrations/0005_job_browsing.sql")),
        M::up(include_str!("../../../migrations/0006_host_due.sql")),
        M::up(include_str!("../../../migrations/0007_host_lanes.sql")),
        M::up(include_str!(
            "../../../migrations/0008_lane_indexes_only.sql"
        )),
        M::up(include_str!(
            "../../../migrations/0009_attempt_written_once.sql"
        ))
        .foreign_key_check(),
        M::up(include_str!("../../../migrations/0010_lane_cursor.sql")),
        M::up(include_str!(
            "../../../migrations/0011_lane_upkeep_without_statement_journals.sql"
        )),
        M::up(include_str!("../../../migrations/0012_lane_generation.sql")),
        M::up(include_str!(
            "../../../migrations/0013_finished_jobs_apart.sql"
        )),
        M::up(include_str!(
            "../../../migrations/0014_success_kept_in_the_job_row.sql"
        )),
        M::up(include_str!(
            "../../../migrations/0015_running_jobs_out_of_the_status_index.sql"
        )),
        M::up(include_str!(
            "../../../migrations/0016_reference_metadata.sql"
        )),
        M::up(include_str!("../../../migrations/0017_host_intervals.sql")),
        M::up(include_str!(
            "../../../migrations/0018_resolution_stages.sql"
        )),
        M::up(include_str!("../../../migrations/0019_search_index.sql")),
        M::up_with_hook(
            include_str!("../../../migrations/0020_tags_and_library_list.sql"),
            super::tags::fill_from_meta,
        ),
        M::up(include_str!("../../../migrations/0021_citation_keys.sql")),
        M::up(include_str!(
            "../../../migrations/0022_rate_limited_since.sql"
        )),
        M::up_with_hook(
            include_str!("../../../migrations/0023_search_words_keep_their_marks.sql"),
            super::search::copy_into_new_index,
        ),
        M::up(include_str!(
            "../../../migrations/0024_arxiv_key_without_class.sql"
        )),
    ])
}

/// Bring the schema up to date, then turn foreign keys on. They are off during the migrations:
/// a table rebuild (SQLite's procedure for schema changes ALTER TABLE cannot make) drops the
/// old table, which would cascade into its children. Migrations that rebuild run
/// `PRAGMA foreign_key_check` before they commit.
///
/// Processes that open the database at the same time take turns: rusqlite_migration reads the
/// schema version before its transaction, so two processes opening a new data folder together
/// both ran the first migration, and the later one failed with "table batches already exists"
/// (41 of 60 `gleaner stats` run six at a time on fresh folders). The turn is an exclusive lock
/// on a file beside the database (`db_path` + `-migrate.lock`), taken only when a migration is
/// due; the version is read again under it, so the process that waited finds the work done.
pub(super) fn migrate(conn: &mut Connection, db: Option<&Path>) -> Result<()> {
    conn.pragma_update(None, "foreign_keys", "OFF")?;
    let migrations = migrations();
    let pending = migrations.pending_migrations(conn)?;
    if pending < 0 {
        let found: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
        return Err(QueueError::NewerSchema {
            found,
            known: (found + i64::from(pending)) as usize,
        });
    }
    if pending != 0 {
        let _turn = db.map(migration_turn).transpose()?;
        migrations.to_latest(conn)?;
    }
    conn.pragma_update(None, "foreign_keys", "ON")?;
    Ok(())
}

/// Wait for this process's turn to migrate the database at `db`; the turn lasts as long as the
/// returned file stays open, and the OS ends it if the process dies.
fn migration_turn(db: &Path) -> Result<std::fs::File> {
    let mut name = db.as_os_str().to_owned();
    name.push("-migrate.lock");
    let path = PathBuf::from(name);
    let lock_error = |source| QueueError::MigrationLock {
        path: path.clone(),
        source,
    };
    let file = crate::engine::open_lock_file(&path).map_err(lock_error)?;
    match file.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            tracing::info!(
                "another Gleaner process is upgrading the database {}; waiting for it",
                db.display()
            );
            file.lock().map_err(lock_error)?;
        }
        // A file system without locks (an NFS mount with `nolock`): migrate without a turn, as
        // before the lock existed, rather than not at all.
        Err(std::fs::TryLockError::Error(e)) => {
            tracing::warn!(error = %e, path = %path.display(), "cannot lock; migrating without waiting for other processes");
        }
    }
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::queue::Queue as _;

    use std::time::Duration;

    use rusqlite::Connection;

    use crate::engine::policy::Policy;
    use crate::engine::queue::{Liveness, Success};
    use crate::engine::sqlite::Store;
    use crate::engine::sqlite::testing::job;

    /// An old-style arXiv job queued before its key lost the subject class is still found as
    /// a duplicate: a .bib dropped again queued those papers twice.
    #[test]
    fn an_old_style_arxiv_job_keeps_its_duplicate_check_after_the_key_changed() {
        use crate::engine::intake::Identifier;
        use crate::engine::queue::{Enqueued, NewJob};
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("old.db");
        {
            let mut conn = Connection::open(&path).expect("open");
            migrations().to_version(&mut conn, 22).expect("v22");
            conn.execute_batch(
                "INSERT INTO jobs (id, url, url_key, host, status, run_at, max_retries, \
                     budget_started_at, created_at, updated_at) VALUES \
                 (1, 'arxiv:math.GT/0309136', 'arxiv:math.gt/0309136', 'arxiv.org', 'done', \
                     1, 5, 1, 1, 1), \
                 (2, 'arxiv:hep-th/9901001', 'arxiv:hep-th/9901001', 'arxiv.org', 'done', \
                     1, 5, 1, 1, 1), \
                 (3, 'arxiv:2101.00001', 'arxiv:2101.00001', 'arxiv.org', 'done', 1, 5, 1, 1, 1);",
            )
            .expect("jobs under the old keys");
        }
        let store = Store::open(&path).expect("migrate");
        for (id, given) in [
            (1, "math.GT/0309136v2"),
            (2, "hep-th/9901001"),
            (3, "2101.00001"),
        ] {
            let key = Identifier::Arxiv(given.into()).key();
            let again = NewJob {
                url: format!("arxiv:{given}"),
                url_key: key.clone(),
                host: "arxiv.org".into(),
                reference: None,
            };
            let out = store.enqueue(None, &[again], 5, 2).expect("enqueue");
            assert!(
                matches!(out[..], [Enqueued::Duplicate { id: d, .. }] if d == id),
                "{key}: {out:?}"
            );
        }
    }

    /// A job waiting on a rate limit when Gleaner is upgraded takes, as the start of its day
    /// of waiting, its first rate limit since its budget started (not one of an old budget).
    #[test]
    fn a_rate_limited_job_gets_its_first_rate_limit_since_its_budget_started() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("old.db");
        {
            let mut conn = Connection::open(&path).expect("open");
            migrations().to_version(&mut conn, 21).expect("v21");
            conn.execute_batch(
                "INSERT INTO jobs (id, url, url_key, host, status, run_at, max_retries, \
                     budget_started_at, created_at, updated_at, rate_limits) \
                 VALUES (1, 'http://a.example/', 'http://a.example/', 'a.example', 'pending', \
                     9000, 5, 1000, 1, 1, 2); \
                 INSERT INTO attempt_log (job_id, number, started_at, outcome) VALUES \
                     (1, 1, 500, 'rate_limited'), (1, 2, 3000, 'transient'), \
                     (1, 3, 5000, 'rate_limited'), (1, 4, 8000, 'rate_limited');",
            )
            .expect("a rate-limited job");
        }
        let store = Store::open(&path).expect("migrate");
        let job = store.job(1).expect("read").expect("job");
        assert_eq!(job.counters.rate_limited_since, Some(5000));
    }

    /// A database version 22 and its documents (`(body, id)`), indexed with the tokenizer of
    /// before migration 0023.
    fn indexed_at_v22(path: &std::path::Path, bodies: &[&str]) {
        let mut conn = Connection::open(path).expect("open");
        migrations().to_version(&mut conn, 22).expect("v22");
        let tx = conn.transaction().expect("tx");
        for (i, body) in bodies.iter().enumerate() {
            let id = i as i64 + 1;
            tx.execute(
                "INSERT INTO jobs (id, url, url_key, host, status, run_at, max_retries, \
                     budget_started_at, created_at, updated_at, document) \
                 VALUES (?1, 'http://a.example/' || ?1, 'http://a.example/' || ?1, 'a.example', \
                     'done', 1, 5, 1, 1, 1, 'a.md')",
                [id],
            )
            .expect("job");
            tx.execute(
                "INSERT INTO search (rowid, title, authors, body) VALUES (?1, 'T', '', ?2)",
                rusqlite::params![id, body],
            )
            .expect("index row");
        }
        tx.commit().expect("commit");
    }

    /// The index of an upgraded library reads vowel signs and voicing marks as part of their
    /// words, and holds its text composed: "काम" found "कुमार" and "किमी" too, and a "й" or
    /// "が" indexed decomposed was not found as typed.
    #[test]
    fn the_search_index_is_rebuilt_with_marks_inside_words_and_composed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("old.db");
        indexed_at_v22(
            &path,
            &[
                "हम काम करते हैं",
                "कुमार",
                "किमी दूर",
                "и\u{306} か\u{3099}くせい résumé",
            ],
        );
        let store = Store::open(&path).expect("migrate");
        let found = |q: &str| -> Vec<i64> {
            let mut ids: Vec<i64> = store
                .search(q, 10)
                .expect(q)
                .iter()
                .map(|h| h.job_id)
                .collect();
            ids.sort_unstable();
            ids
        };
        assert_eq!(found("काम"), [1]);
        assert_eq!(found("कुमार"), [2]);
        for q in ["й", "がくせい", "resume"] {
            assert_eq!(found(q), [4], "{q}");
        }
        let conn = store.conn().expect("conn");
        let old: i64 = conn
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE name LIKE 'search_before%'",
                [],
                |r| r.get(0),
            )
            .expect("schema");
        assert_eq!(old, 0, "the old index is gone");
        conn.execute("DELETE FROM jobs WHERE id = 2", [])
            .expect("delete");
        let rows: i64 = conn
            .query_row("SELECT count(*) FROM search", [], |r| r.get(0))
            .expect("count");
        assert_eq!(rows, 3, "a deleted job takes its index row with it");
    }

    #[test]
    fn migrates_a_version_1_database_and_keeps_its_jobs() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("old.db");
        {
            let mut conn = Connection::open(&path).expect("open");
            Migrations::new(vec![M::up(include_str!(
                "../../../migrations/0001_queue.sql"
            ))])
            .to_latest(&mut conn)
            .expect("v1");
            conn.execute(
                "INSERT INTO jobs (url, url_key, host, status, run_at, max_retries, budget_started_at, created_at, updated_at) \
                 VALUES ('http://a.example/', 'http://a.example/', 'a.example', 'dead', 1, 5, 1, 1, 1)",
                [],
            )
            .expect("insert");
            let v: i64 = conn
                .query_row("PRAGMA user_version", [], |r| r.get(0))
                .expect("version");
            assert_eq!(v, 1);
        }
        let store = Store::open(&path).expect("migrate");
        let conn = store.conn().expect("conn");
        let v: i64 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .expect("version");
        assert_eq!(v, 24, "brought up to the latest version");
        let (url, notified): (String, i64) = conn
            .query_row("SELECT url, dead_notified FROM jobs", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .expect("row");
        assert_eq!(url, "http://a.example/");
        assert_eq!(notified, 0);
        let batch: String = conn
            .query_row(
                "SELECT b.name FROM jobs j JOIN batches b ON b.id = j.batch_id",
                [],
                |r| r.get(0),
            )
            .expect("batch");
        assert_eq!(batch, "earlier jobs", "jobs from before batches joined one");
        let mode: String = conn
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .expect("mode");
        assert_eq!(mode, "wal");
    }

    #[test]
    fn the_jobs_rebuild_keeps_every_attempt_and_moves_the_one_in_flight_onto_its_job() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("v8.db");
        {
            let mut conn = Connection::open(&path).expect("open");
            conn.pragma_update(None, "foreign_keys", "ON").expect("fk");
            migrations().to_version(&mut conn, 8).expect("v8");
            conn.execute_batch(
                "INSERT INTO batches (id, name, source, created_at) VALUES (1, 'b', 'cli', 1); \
                 INSERT INTO jobs (id, url, url_key, host, batch_id, status, run_at, attempts, \
                     max_retries, budget_started_at, created_at, updated_at, lease_owner, lease_until) \
                 VALUES (7, 'http://a.example/', 'http://a.example/', 'a.example', 1, 'running', 1, 2, \
                     5, 1, 1, 60, 'gone-worker', 100); \
                 INSERT INTO attempts (job_id, number, started_at, finished_at, outcome, worker) \
                     VALUES (7, 1, 10, 20, 'transient', 'gone-worker'); \
                 INSERT INTO attempts (job_id, number, started_at, worker) VALUES (7, 2, 50, 'gone-worker');",
            )
            .expect("v8 rows");
        }
        let store = Store::open(&path).expect("migrate");
        let history = store.attempts(7).expect("attempts");
        assert_eq!(history.len(), 2, "{history:?}");
        assert_eq!(history[0].outcome.as_deref(), Some("transient"));
        assert_eq!(
            (
                history[1].number,
                history[1].started_at,
                history[1].finished_at
            ),
            (2, 50, None),
            "the attempt in flight keeps its start"
        );
        // Its worker is gone: recovery writes the interrupted attempt with its real start.
        store
            .recover(&Policy::default(), 1_000, |_| Liveness::Gone)
            .expect("recover");
        let history = store.attempts(7).expect("attempts");
        assert_eq!(history.len(), 2, "{history:?}");
        assert_eq!(history[1].started_at, 50);
        assert_eq!(history[1].finished_at, Some(1_000));
        assert_eq!(history[1].outcome.as_deref(), Some("interrupted"));
        assert_eq!(history[1].worker.as_deref(), Some("gone-worker"));
        let conn = store.conn().expect("conn");
        let fk: bool = conn
            .query_row("PRAGMA foreign_keys", [], |r| r.get(0))
            .expect("fk");
        assert!(fk, "foreign keys are back on after the migrations");
    }

    #[test]
    fn a_done_job_keeps_its_success_in_its_row_and_a_refetch_keeps_it_in_the_history() {
        let s = Store::open_in_memory().expect("store");
        let policy = Policy::default();
        s.enqueue(None, &[job("http://a.example/1")], 5, 0)
            .expect("enqueue");
        let c = s
            .claim("w1", 10, Duration::from_secs(60), 2)
            .expect("claim")
            .expect("a job");
        let ok = |status| Success {
            final_url: c.url.clone(),
            http_status: status,
            ..Success::default()
        };
        s.complete(&c, &ok(200), &policy, 25).expect("complete");
        let rows = || -> i64 {
            s.conn()
                .expect("conn")
                .query_row("SELECT count(*) FROM attempt_log", [], |r| r.get(0))
                .expect("count")
        };
        assert_eq!(rows(), 0, "a success writes no row of its own");
        let done = s.attempts(c.job_id).expect("attempts");
        assert_eq!(done.len(), 1, "{done:?}");
        assert_eq!(
            (
                done[0].number,
                done[0].started_at,
                done[0].finished_at,
                done[0].outcome.as_deref(),
                done[0].http_status,
                done[0].worker.as_deref()
            ),
            (1, 10, Some(25), Some("success"), Some(200), Some("w1"))
        );
        // Fetched again: the first success moves into `attempts` before the row is reset.
        s.retry(&[c.job_id], 5, 30).expect("retry");
        assert_eq!(rows(), 1);
        let c2 = s
            .claim("w2", 40, Duration::from_secs(60), 2)
            .expect("claim")
            .expect("the job again");
        s.complete(&c2, &ok(203), &policy, 50).expect("complete");
        let history = s.attempts(c.job_id).expect("attempts");
        let seen: Vec<_> = history
            .iter()
            .map(|a| {
                (
                    a.number,
                    a.started_at,
                    a.finished_at,
                    a.http_status,
                    a.worker.as_deref(),
                )
            })
            .collect();
        assert_eq!(
            seen,
            [
                (1, 10, Some(25), Some(200), Some("w1")),
                (2, 40, Some(50), Some(203), Some("w2"))
            ]
        );
    }

    #[test]
    fn a_job_done_before_its_success_stayed_in_its_row_has_that_success_once() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("v13.db");
        {
            let mut conn = Connection::open(&path).expect("open");
            migrations().to_version(&mut conn, 13).expect("v13");
            conn.execute_batch(
                "INSERT INTO batches (id, name, source, created_at) VALUES (1, 'b', 'cli', 1); \
                 INSERT INTO jobs (id, url, url_key, host, batch_id, status, run_at, attempts, \
                     max_retries, budget_started_at, created_at, updated_at, finished_at, http_status) \
                 VALUES (7, 'http://a.example/', 'http://a.example/', 'a.example', 1, 'done', 1, 1, \
                     5, 1, 1, 20, 20, 200); \
                 INSERT INTO attempts (job_id, number, started_at, finished_at, outcome, http_status, worker) \
                     VALUES (7, 1, 10, 20, 'success', 200, 'old-worker');",
            )
            .expect("v13 rows");
        }
        let store = Store::open(&path).expect("migrate");
        let history = store.attempts(7).expect("attempts");
        assert_eq!(history.len(), 1, "{history:?}");
        assert_eq!(history[0].worker.as_deref(), Some("old-worker"));
        store.retry(&[7], 5, 30).expect("retry");
        assert_eq!(store.attempts(7).expect("attempts").len(), 1);
    }

    #[test]
    fn migrations_are_valid() {
        migrations().validate().expect("valid migrations");
    }
}
