//! New jobs: one transaction per intake, duplicates reported with the existing job's id.

use rusqlite::{OptionalExtension, Transaction, params};

use crate::engine::clock::Millis;

use super::Store;
use super::tags::add_tags_in;
use crate::engine::queue::{Enqueued, NewJob, Reference, Result, Status, rfc3339};
use crate::engine::tags::normalise;

/// The batch that new jobs join.
#[derive(Debug, Clone, Copy)]
enum Joins<'a> {
    Existing(i64),
    /// A batch made in the same transaction, and only if a job is new: an intake whose links
    /// are all duplicates leaves no empty batch behind.
    New {
        name: &'a str,
        source: &'a str,
    },
}

/// See [`Store::enqueue_batch`]: the batch id (if a job was queued) and each job's result.
fn enqueue_in(
    tx: &Transaction<'_>,
    joins: Joins<'_>,
    jobs: &[NewJob],
    max_retries: u32,
    now: Millis,
) -> Result<(Option<i64>, Vec<Enqueued>)> {
    let mut batch_id = match joins {
        Joins::Existing(id) => Some(id),
        Joins::New { .. } => None,
    };
    let mut find = tx.prepare_cached("SELECT id, status FROM jobs WHERE url_key = ?1")?;
    let mut insert = tx.prepare_cached(
        "INSERT INTO jobs (url, url_key, host, batch_id, status, run_at, max_retries, \
             budget_started_at, created_at, updated_at, title, meta) \
             VALUES (?1, ?2, ?3, ?4, 'pending', ?5, ?6, ?5, ?5, ?5, ?7, ?8)",
    )?;
    let mut out = Vec::with_capacity(jobs.len());
    // The first new job of each host queued here, in arrival order.
    let mut firsts: Vec<i64> = Vec::new();
    let mut hosts_seen: std::collections::HashSet<&str> = std::collections::HashSet::new();
    for job in jobs {
        let existing = find
            .query_row([&job.url_key], |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
            })
            .optional()?;
        if let Some((id, status)) = existing {
            out.push(Enqueued::Duplicate {
                id,
                url: job.url.clone(),
                status: Status::parse(&status).unwrap_or(Status::Pending),
            });
            continue;
        }
        let joined = match (batch_id, joins) {
            (Some(id), _) | (None, Joins::Existing(id)) => id,
            (None, Joins::New { name, source }) => {
                tx.execute(
                    "INSERT INTO batches (name, source, created_at) VALUES (?1, ?2, ?3)",
                    params![name, source, now],
                )?;
                *batch_id.insert(tx.last_insert_rowid())
            }
        };
        // Tags are kept normalised, so the tag index and the metadata agree (migration 0020).
        let tags = match &job.reference {
            Some(r) if !r.tags.is_empty() => normalise(&r.tags),
            _ => Vec::new(),
        };
        let meta = match &job.reference {
            Some(r) if r.tags != tags => Some(serde_json::to_string(&Reference {
                tags: tags.clone(),
                ..(**r).clone()
            })?),
            Some(r) => Some(serde_json::to_string(r)?),
            None => None,
        };
        insert.execute(params![
            job.url,
            job.url_key,
            job.host,
            joined,
            now,
            max_retries,
            job.reference.as_ref().and_then(|r| r.title.as_deref()),
            meta
        ])?;
        let id = tx.last_insert_rowid();
        if !tags.is_empty() {
            add_tags_in(tx, id, &tags)?;
        }
        if hosts_seen.insert(job.host.as_str()) {
            firsts.push(id);
        }
        out.push(Enqueued::Queued {
            id,
            url: job.url.clone(),
        });
    }
    // Every pending job has a lane, and no pending job sorts before its lane's cursor.
    // The lane trigger keeps both (migration 0011); it fires on `run_at`, not on an
    // insert, so each host's first new job is touched once: a new lane starts there, at
    // the end of the batch's rotation, and an existing lane's cursor moves back to it
    // if it is past it (a lane whose jobs were all backed off past `now`).
    let mut touch = tx.prepare_cached("UPDATE jobs SET run_at = run_at WHERE id = ?1")?;
    for first in &firsts {
        touch.execute([first])?;
    }
    // A batch made in an earlier transaction may have been closed as empty by a worker
    // going idle in between; its new jobs put it back in the rotation.
    if let (Joins::Existing(id), Some(_)) = (joins, firsts.first()) {
        tx.prepare_cached("UPDATE batches SET open = 1 WHERE id = ?1 AND open = 0")?
            .execute([id])?;
    }
    Ok((batch_id, out))
}

impl Store {
    pub fn create_batch(&self, name: &str, source: &str, now: Millis) -> Result<i64> {
        self.write(|tx| {
            tx.execute(
                "INSERT INTO batches (name, source, created_at) VALUES (?1, ?2, ?3)",
                params![name, source, now],
            )?;
            Ok(tx.last_insert_rowid())
        })
    }

    /// Queue new jobs in one transaction. A URL whose normalized form is already queued is
    /// reported as a duplicate with the existing job's id, and not queued again. Without a
    /// batch, the new jobs make one named after the time, from source `api`.
    pub fn enqueue(
        &self,
        batch_id: Option<i64>,
        jobs: &[NewJob],
        max_retries: u32,
        now: Millis,
    ) -> Result<Vec<Enqueued>> {
        let api_name;
        let joins = match batch_id {
            Some(id) => Joins::Existing(id),
            None => {
                api_name = format!("api {}", rfc3339(now));
                Joins::New {
                    name: &api_name,
                    source: "api",
                }
            }
        };
        Ok(self
            .write(|tx| enqueue_in(tx, joins, jobs, max_retries, now))?
            .1)
    }

    /// One intake (a paste, a drop, `gleaner add`): a new batch `name` from `source`, and its
    /// jobs, in one transaction, so no failure or idle worker can leave an empty batch or close
    /// it before its jobs arrive. The batch is made only if a job is new; its id is returned.
    pub fn enqueue_batch(
        &self,
        name: &str,
        source: &str,
        jobs: &[NewJob],
        max_retries: u32,
        now: Millis,
    ) -> Result<(Option<i64>, Vec<Enqueued>)> {
        self.write(|tx| enqueue_in(tx, Joins::New { name, source }, jobs, max_retries, now))
    }
}

#[cfg(test)]
mod tests {

    use crate::engine::queue::Queue as _;

    use std::time::Duration;

    use crate::engine::queue::Enqueued;
    use crate::engine::sqlite::Store;
    use crate::engine::sqlite::testing::job;

    #[test]
    fn an_intake_makes_its_batch_only_for_new_jobs() {
        let s = Store::open_in_memory().expect("store");
        let batches = || -> Vec<(i64, String, String)> {
            s.conn()
                .expect("conn")
                .prepare("SELECT id, name, source FROM batches ORDER BY id")
                .expect("prepare")
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                .expect("query")
                .collect::<rusqlite::Result<_>>()
                .expect("rows")
        };
        let (first, results) = s
            .enqueue_batch("paste 1", "paste", &[job("http://a.example/1")], 5, 0)
            .expect("enqueue");
        let first = first.expect("a batch for the new job");
        assert!(matches!(results[..], [Enqueued::Queued { .. }]));
        assert_eq!(
            batches(),
            [(first, "paste 1".to_string(), "paste".to_string())]
        );
        // Nothing new: no empty batch in the window's batch menu.
        let (none, results) = s
            .enqueue_batch("paste 2", "paste", &[job("http://a.example/1")], 5, 1)
            .expect("enqueue");
        assert_eq!(none, None);
        assert!(matches!(results[..], [Enqueued::Duplicate { .. }]));
        assert_eq!(batches().len(), 1);
        // A duplicate and a new link: the batch holds the new one.
        let (third, _) = s
            .enqueue_batch(
                "drop 3",
                "drop",
                &[job("http://a.example/1"), job("http://b.example/1")],
                5,
                2,
            )
            .expect("enqueue");
        let third = third.expect("a batch for the new job");
        let job = s
            .claim("w", 3, Duration::from_secs(60), 2)
            .expect("claim")
            .map(|c| c.job_id);
        let in_third: Vec<i64> = s
            .conn()
            .expect("conn")
            .prepare("SELECT id FROM jobs WHERE batch_id = ?1")
            .expect("prepare")
            .query_map([third], |r| r.get(0))
            .expect("query")
            .collect::<rusqlite::Result<_>>()
            .expect("rows");
        assert_eq!(in_third.len(), 1);
        assert!(job.is_some());
        assert_eq!(batches().len(), 2);
    }
}
