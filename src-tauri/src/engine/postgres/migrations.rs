//! The PostgreSQL schema's versions (`src-tauri/migrations-postgres`), applied in order in one
//! transaction and recorded in `gleaner_schema`, under an advisory lock so that members
//! starting together take turns.

use crate::engine::queue::{QueueError, Result};

/// Schema versions, applied in order. Never edit a released one: add the next.
pub(super) const MIGRATIONS: &[&str] = &[
    include_str!("../../../migrations-postgres/0001_queue.sql"),
    include_str!("../../../migrations-postgres/0002_shared_documents.sql"),
    include_str!("../../../migrations-postgres/0003_cheaper_claims.sql"),
    include_str!("../../../migrations-postgres/0004_host_start_after_the_wait.sql"),
    include_str!("../../../migrations-postgres/0005_citation_keys.sql"),
    include_str!("../../../migrations-postgres/0006_document_hashes.sql"),
    include_str!("../../../migrations-postgres/0007_rate_limited_since.sql"),
    include_str!("../../../migrations-postgres/0008_claims_wait_for_a_host_a_while.sql"),
    include_str!("../../../migrations-postgres/0009_search_words_as_gleaner_splits_them.sql"),
    include_str!("../../../migrations-postgres/0010_search_keeps_marks_fts5_keeps.sql"),
    include_str!("../../../migrations-postgres/0011_arxiv_key_without_class.sql"),
    include_str!("../../../migrations-postgres/0012_batch_rotation_written_in_place.sql"),
    include_str!("../../../migrations-postgres/0013_members_keep_their_own_lane_positions.sql"),
];

/// The lock every migrating member takes (an arbitrary key of Gleaner's own).
const MIGRATION_LOCK: i64 = 0x0067_6c65_616e_6572;

/// Bring the schema up to date, or say that it is newer than this Gleaner knows (and then
/// change nothing).
pub(super) async fn migrate(client: &mut deadpool_postgres::Object) -> Result<()> {
    let tx = client.transaction().await?;
    // A member migrating a large library may hold the lock for longer than a step may wait.
    tx.batch_execute("SET LOCAL lock_timeout = 0").await?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await?;
    // Made only when missing: `IF NOT EXISTS` sent the server's notice ("already exists,
    // skipping") to every command's output, and needs CREATE on the schema even when the
    // schema is up to date, which a member without that right does not have.
    let exists: bool = tx
        .query_one("SELECT to_regclass('gleaner_schema') IS NOT NULL", &[])
        .await?
        .get(0);
    if !exists {
        tx.batch_execute(
            "CREATE TABLE gleaner_schema (version integer PRIMARY KEY, \
                 applied_at timestamptz NOT NULL DEFAULT now())",
        )
        .await?;
    }
    let found: i32 = tx
        .query_one("SELECT coalesce(max(version), 0) FROM gleaner_schema", &[])
        .await?
        .get(0);
    check_version(i64::from(found))?;
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(found as usize) {
        let version = i as i32 + 1;
        tx.batch_execute(sql).await?;
        tx.execute(
            "INSERT INTO gleaner_schema (version) VALUES ($1)",
            &[&version],
        )
        .await?;
        tracing::debug!(version, "PostgreSQL schema brought up to date");
    }
    tx.commit().await?;
    Ok(())
}

/// The version `found` is one this Gleaner cannot read.
pub(super) fn check_version(found: i64) -> Result<()> {
    if found > MIGRATIONS.len() as i64 {
        return Err(QueueError::NewerPostgresSchema {
            found,
            known: MIGRATIONS.len(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::engine::intake::Identifier;
    use crate::engine::postgres::PgStore;
    use crate::engine::postgres::testing::{execute, fresh_database_url};
    use crate::engine::queue::{Enqueued, NewJob, Queue};

    /// A lab's jobs queued under an old-style arXiv id's old key (its subject class in it) are
    /// still found as duplicates once the key leaves the class out (migration 0011).
    #[test]
    fn an_old_style_arxiv_job_keeps_its_duplicate_check_after_the_key_changed() {
        let url = fresh_database_url();
        let store = PgStore::open(&url, "m").expect("open");
        let old = |url: &str, key: &str| NewJob {
            url: url.into(),
            url_key: key.into(),
            host: "arxiv.org".into(),
            reference: None,
        };
        store
            .enqueue(
                None,
                &[
                    old("arxiv:math.GT/0309136", "arxiv:math.gt/0309136"),
                    old("arxiv:hep-th/9901001", "arxiv:hep-th/9901001"),
                    old("arxiv:2101.00001", "arxiv:2101.00001"),
                ],
                5,
                1,
            )
            .expect("jobs under the old keys");
        drop(store);
        // As migration 0011 found them: written by a Gleaner before it.
        execute(&url, "DELETE FROM gleaner_schema WHERE version >= 11");
        let store = PgStore::open(&url, "m").expect("migrate");
        for given in ["math.GT/0309136v2", "hep-th/9901001", "2101.00001"] {
            let key = Identifier::Arxiv(given.into()).key();
            let again = NewJob {
                url: format!("arxiv:{given}"),
                url_key: key.clone(),
                host: "arxiv.org".into(),
                reference: None,
            };
            let out = store.enqueue(None, &[again], 5, 2).expect("enqueue");
            assert!(
                matches!(out[..], [Enqueued::Duplicate { .. }]),
                "{key}: {out:?}"
            );
        }
    }
}
