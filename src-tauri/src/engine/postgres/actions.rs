//! Intake, manual actions (retry, cancel, delete) and the deaths to announce, on PostgreSQL.

use super::hosts::ensure_host;
use super::library::add_tags_in;
use super::rows::{Conn, load_job};
use super::{Db, transaction};
use crate::engine::clock::Millis;
use crate::engine::queue::{ActionResult, Enqueued, Job, NewJob, Reference, Result, Status};
use crate::engine::tags::normalise;

/// The batch that new jobs join: an existing one, or one made only if a job is new.
#[derive(Debug, Clone, Copy)]
pub(super) enum Joins<'a> {
    Existing(i64),
    New { name: &'a str, source: &'a str },
}

pub(super) async fn create_batch(db: &Db, name: &str, source: &str, now: Millis) -> Result<i64> {
    transaction!(db, |tx| new_batch(&tx, name, source, now).await?)
}

async fn new_batch(tx: &impl Conn, name: &str, source: &str, now: Millis) -> Result<i64> {
    let rows = tx
        .query_rows(
            "INSERT INTO batches (name, source, created_at) VALUES ($1, $2, $3) RETURNING id",
            &[&name, &source, &now],
        )
        .await?;
    Ok(rows.first().map_or(0, |r| r.get(0)))
}

/// An intake of at least this many new jobs looks at whether the planner's statistics of
/// `jobs` are behind.
const ANALYZE_AFTER: usize = 1_000;

/// Refresh the planner's statistics of `jobs` when an intake grew it by a fifth or more. The
/// claim's plans are chosen from them: on a table the statistics still took for empty, a claim
/// scanned the whole batch for one host's job (20–130 ms a claim at 100,000 jobs) until
/// autovacuum's own ANALYZE, which may come minutes later. A member that does not own the
/// table is told so by a warning, not an error.
async fn analyze_if_grown(db: &Db, inserted: usize) -> Result<()> {
    let client = db.client().await?;
    let rows = client
        .query_rows(
            "SELECT reltuples FROM pg_class WHERE oid = 'jobs'::regclass",
            &[],
        )
        .await?;
    // -1 until the table is first analysed.
    let known = rows.first().map_or(-1.0, |r| r.get::<_, f32>(0)).max(0.0);
    if inserted as f32 >= 0.2 * known {
        client.batch("ANALYZE jobs").await?;
    }
    Ok(())
}

pub(super) async fn enqueue(
    db: &Db,
    joins: Joins<'_>,
    jobs: &[NewJob],
    max_retries: u32,
    now: Millis,
) -> Result<(Option<i64>, Vec<Enqueued>)> {
    // Tags are kept normalised, so the tag index and the metadata agree.
    let mut prepared = Vec::with_capacity(jobs.len());
    for job in jobs {
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
        prepared.push((meta, tags));
    }
    let hosts: Vec<&str> = jobs
        .iter()
        .map(|j| j.host.as_str())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let keys: Vec<&str> = jobs.iter().map(|j| j.url_key.as_str()).collect();
    let out: Result<(Option<i64>, Vec<Enqueued>)> = transaction!(db, |tx| {
        // Known links first, in one read, so that only new ones are inserted (and take ids).
        let mut known: std::collections::HashMap<String, (i64, Status)> = tx
            .query_rows(
                "SELECT url_key, id, status FROM jobs WHERE url_key = ANY($1)",
                &[&keys],
            )
            .await?
            .iter()
            .map(|r| {
                let status = Status::parse(r.get(2)).unwrap_or(Status::Pending);
                (r.get::<_, String>(0), (r.get::<_, i64>(1), status))
            })
            .collect();
        let mut first = std::collections::HashSet::new();
        let new: Vec<usize> = (0..jobs.len())
            .filter(|&i| {
                !known.contains_key(&jobs[i].url_key) && first.insert(jobs[i].url_key.as_str())
            })
            .collect();
        let batch = match joins {
            Joins::Existing(id) => Some(id),
            Joins::New { .. } if new.is_empty() => None,
            Joins::New { name, source } => Some(new_batch(&tx, name, source, now).await?),
        };
        if !new.is_empty() {
            ensure_hosts(&tx, &hosts).await?;
        }
        // Sent together and run in order, so ids follow the input. A link another member
        // queued in between is passed over (ON CONFLICT) and reported as a duplicate.
        let retries = max_retries as i32;
        let (tx, prepared) = (&tx, &prepared);
        let inserted = futures_util::future::try_join_all(new.iter().map(|&i| async move {
            let (job, (meta, _)) = (&jobs[i], &prepared[i]);
            let title = job.reference.as_ref().and_then(|r| r.title.as_deref());
            tx.query_rows(
                "INSERT INTO jobs (url, url_key, host, batch_id, status, run_at, max_retries, \
                     budget_started_at, created_at, updated_at, title, meta) \
                 VALUES ($1, $2, $3, $4, 'pending', $5, $6, $5, $5, $5, $7, $8::text::jsonb) \
                 ON CONFLICT (url_key) DO NOTHING RETURNING id",
                &[
                    &job.url,
                    &job.url_key,
                    &job.host,
                    &batch,
                    &now,
                    &retries,
                    &title,
                    meta,
                ],
            )
            .await
        }))
        .await?;
        let mut queued_ids = std::collections::HashMap::new();
        let mut raced = Vec::new();
        let mut tagged = Vec::new();
        for (&i, rows) in new.iter().zip(&inserted) {
            match rows.first() {
                Some(row) => {
                    let id: i64 = row.get(0);
                    queued_ids.insert(i, id);
                    tagged.push((id, prepared[i].1.as_slice()));
                }
                None => raced.push(jobs[i].url_key.as_str()),
            }
        }
        add_tags_in(tx, &tagged).await?;
        if !raced.is_empty() {
            for r in tx
                .query_rows(
                    "SELECT url_key, id, status FROM jobs WHERE url_key = ANY($1)",
                    &[&raced],
                )
                .await?
            {
                let status = Status::parse(r.get(2)).unwrap_or(Status::Pending);
                known.insert(r.get(0), (r.get(1), status));
            }
        }
        let mut out = Vec::with_capacity(jobs.len());
        for (i, job) in jobs.iter().enumerate() {
            if let Some(&id) = queued_ids.get(&i) {
                // A later copy of this link in the same intake is its duplicate.
                known.insert(job.url_key.clone(), (id, Status::Pending));
                out.push(Enqueued::Queued {
                    id,
                    url: job.url.clone(),
                });
            } else {
                let (id, status) = known
                    .get(&job.url_key)
                    .copied()
                    .unwrap_or((0, Status::Pending));
                out.push(Enqueued::Duplicate {
                    id,
                    url: job.url.clone(),
                    status,
                });
            }
        }
        let queued = !queued_ids.is_empty();
        let batch_id = match (joins, batch) {
            (Joins::Existing(id), _) => {
                if queued {
                    // A batch closed as empty by an idle worker goes back in the rotation.
                    // Written even when open, so its row stays locked until the jobs are
                    // committed: a recovery closing finished batches waits for them.
                    tx.exec("UPDATE batches SET open = true WHERE id = $1", &[&id])
                        .await?;
                }
                Some(id)
            }
            // Every new link was queued by another member meanwhile: no empty batch is left.
            (Joins::New { .. }, Some(id)) if !queued => {
                tx.exec("DELETE FROM batches WHERE id = $1", &[&id]).await?;
                None
            }
            (Joins::New { .. }, made) => made,
        };
        if queued {
            db.notify(&tx).await?;
        }
        (batch_id, out)
    });
    let (batch_id, out) = out?;
    let queued = out
        .iter()
        .filter(|e| matches!(e, Enqueued::Queued { .. }))
        .count();
    if queued >= ANALYZE_AFTER
        && let Err(e) = analyze_if_grown(db, queued).await
    {
        // The jobs are queued; only the claim's speed is at stake.
        tracing::warn!(error = %e, "cannot refresh the queue's statistics");
    }
    Ok((batch_id, out))
}

/// Every host with a job has a row, which the claim locks.
async fn ensure_hosts(tx: &impl Conn, hosts: &[&str]) -> Result<()> {
    tx.exec(
        "INSERT INTO hosts (host) SELECT unnest($1::text[]) ON CONFLICT (host) DO NOTHING",
        &[&hosts],
    )
    .await?;
    Ok(())
}

async fn status_locked(tx: &impl Conn, id: i64) -> Result<Option<Status>> {
    let rows = tx
        .query_rows("SELECT status FROM jobs WHERE id = $1 FOR UPDATE", &[&id])
        .await?;
    Ok(rows.first().and_then(|r| Status::parse(r.get(0))))
}

async fn revive(tx: &impl Conn, id: i64, max_retries: u32, now: Millis) -> Result<()> {
    tx.exec(
        "INSERT INTO attempt_log (job_id, number, started_at, finished_at, outcome, http_status, \
             worker, stage) \
         SELECT id, attempts, attempt_started_at, finished_at, 'success', http_status, \
             finished_by, stage \
         FROM jobs WHERE id = $1 AND status = 'done' AND attempt_started_at IS NOT NULL",
        &[&id],
    )
    .await?;
    let rows = tx
        .query_rows(
            "UPDATE jobs SET status = 'pending', run_at = $2, max_retries = $3, net_failures = 0, \
                 server_failures = 0, rate_limits = 0, blocked_failures = 0, \
                 budget_started_at = $2, rate_limited_since = NULL, updated_at = $2, finished_at = NULL, \
                 dead_notified = false, lease_owner = NULL, lease_until = NULL, \
                 error_class = NULL, error = NULL, http_status = NULL, attempt_started_at = NULL, \
                 finished_by = NULL, stage = NULL, target = NULL, \
                 host = coalesce(origin_host, host), origin_host = NULL \
             WHERE id = $1 RETURNING host, batch_id",
            &[&id, &now, &(max_retries as i32)],
        )
        .await?;
    if let Some(row) = rows.first() {
        ensure_host(tx, row.get(0)).await?;
        let batch: Option<i64> = row.get(1);
        tx.exec("UPDATE batches SET open = true WHERE id = $1", &[&batch])
            .await?;
    }
    Ok(())
}

pub(super) async fn delete(db: &Db, ids: &[i64]) -> Result<Vec<ActionResult>> {
    transaction!(db, |tx| {
        let mut out = Vec::with_capacity(ids.len());
        for &id in ids {
            match status_locked(&tx, id).await? {
                None => out.push(ActionResult::NotFound { id }),
                Some(Status::Running) => out.push(ActionResult::WrongState {
                    id,
                    status: Status::Running,
                }),
                Some(_) => {
                    tx.exec("DELETE FROM jobs WHERE id = $1", &[&id]).await?;
                    out.push(ActionResult::Done { id });
                }
            }
        }
        // Other members' windows drop the jobs.
        if out.iter().any(|r| matches!(r, ActionResult::Done { .. })) {
            db.notify(&tx).await?;
        }
        out
    })
}

pub(super) async fn retry(
    db: &Db,
    ids: &[i64],
    max_retries: u32,
    now: Millis,
) -> Result<Vec<ActionResult>> {
    transaction!(db, |tx| {
        let mut out = Vec::with_capacity(ids.len());
        for &id in ids {
            let Some(status) = status_locked(&tx, id).await? else {
                out.push(ActionResult::NotFound { id });
                continue;
            };
            match status {
                Status::Dead | Status::Cancelled | Status::Done => {
                    revive(&tx, id, max_retries, now).await?;
                    out.push(ActionResult::Done { id });
                }
                Status::Pending => {
                    // "Fetch now": due before its lane's head, its lane next in its batch, and
                    // its batch first in the rotation.
                    let rows = tx
                        .query_rows(
                            "SELECT batch_id, host, (SELECT min(run_at) FROM jobs o \
                                 WHERE o.batch_id = j.batch_id AND o.host = j.host \
                                   AND o.status = 'pending') FROM jobs j WHERE id = $1",
                            &[&id],
                        )
                        .await?;
                    let Some(row) = rows.first() else { continue };
                    let (batch_id, host, head): (Option<i64>, String, Option<Millis>) =
                        (row.get(0), row.get(1), row.get(2));
                    let run_at = now.min(head.map_or(now, |h| h - 1));
                    tx.exec(
                        "UPDATE jobs SET run_at = $2, updated_at = $3 WHERE id = $1",
                        &[&id, &run_at, &now],
                    )
                    .await?;
                    tx.exec(
                        "UPDATE batches SET open = true, served_seq = coalesce((SELECT \
                             min(served_seq) FROM batches WHERE open), 0) - 1, \
                             lane_after_host = (SELECT max(j.host) FROM jobs j \
                                 WHERE j.batch_id = $1 AND j.status = 'pending' AND j.host < $2) \
                         WHERE id = $1",
                        &[&batch_id, &host],
                    )
                    .await?;
                    out.push(ActionResult::Done { id });
                }
                other => out.push(ActionResult::WrongState { id, status: other }),
            }
        }
        db.notify(&tx).await?;
        out
    })
}

pub(super) async fn retry_dead(
    db: &Db,
    host: Option<&str>,
    max_retries: u32,
    now: Millis,
) -> Result<Vec<i64>> {
    let host = host.map(str::to_lowercase);
    transaction!(db, |tx| {
        let rows = tx
            .query_rows(
                "SELECT id FROM jobs WHERE status = 'dead' AND ($1::text IS NULL OR host = $1) \
                 ORDER BY id FOR UPDATE",
                &[&host],
            )
            .await?;
        let ids: Vec<i64> = rows.iter().map(|r| r.get(0)).collect();
        for &id in &ids {
            revive(&tx, id, max_retries, now).await?;
        }
        if !ids.is_empty() {
            db.notify(&tx).await?;
        }
        ids
    })
}

pub(super) async fn cancel(db: &Db, ids: &[i64], now: Millis) -> Result<Vec<ActionResult>> {
    transaction!(db, |tx| {
        let mut out = Vec::with_capacity(ids.len());
        for &id in ids {
            match status_locked(&tx, id).await? {
                None => out.push(ActionResult::NotFound { id }),
                Some(Status::Pending | Status::Running) => {
                    tx.exec(
                        "INSERT INTO attempt_log (job_id, number, started_at, finished_at, \
                             outcome, worker) \
                         SELECT id, attempts, coalesce(attempt_started_at, updated_at), $2, \
                             'cancelled', lease_owner FROM jobs WHERE id = $1 AND status = 'running'",
                        &[&id, &now],
                    )
                    .await?;
                    tx.exec(
                        "UPDATE jobs SET status = 'cancelled', lease_owner = NULL, \
                             lease_until = NULL, updated_at = $2, finished_at = $2, \
                             attempt_started_at = NULL WHERE id = $1",
                        &[&id, &now],
                    )
                    .await?;
                    out.push(ActionResult::Done { id });
                }
                Some(other) => out.push(ActionResult::WrongState { id, status: other }),
            }
        }
        // A cancelled running job frees a connection of its host.
        db.notify(&tx).await?;
        out
    })
}

pub(super) async fn take_unannounced_deaths(db: &Db, limit: u32) -> Result<Vec<Job>> {
    transaction!(db, |tx| {
        let rows = tx
            .query_rows(
                "UPDATE jobs SET dead_notified = true WHERE id IN (SELECT id FROM jobs \
                     WHERE status = 'dead' AND NOT dead_notified ORDER BY id LIMIT $1 \
                     FOR UPDATE SKIP LOCKED) RETURNING id",
                &[&i64::from(limit)],
            )
            .await?;
        let mut ids: Vec<i64> = rows.iter().map(|r| r.get(0)).collect();
        ids.sort_unstable();
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            if let Some(job) = load_job(&tx, id).await? {
                out.push(job);
            }
        }
        out
    })
}

#[cfg(test)]
mod tests {
    use crate::engine::postgres::PgStore;
    use crate::engine::postgres::testing::{execute, fresh_database_url};
    use crate::engine::queue::{NewJob, Queue};

    fn jobs(n: usize) -> Vec<NewJob> {
        (0..n)
            .map(|i| {
                let url = format!("https://h{}.example/{i}", i % 50);
                NewJob {
                    url_key: url.clone(),
                    host: format!("h{}.example", i % 50),
                    url,
                    reference: None,
                }
            })
            .collect()
    }

    /// The planner's statistics of `jobs`, checked on the server (a failed check is an error).
    fn assert_planner_knows(url: &str, at_least: u32) {
        execute(
            url,
            &format!(
                "DO $$ BEGIN IF (SELECT reltuples FROM pg_class WHERE oid = 'jobs'::regclass) \
                 < {at_least} THEN RAISE EXCEPTION 'the statistics were not refreshed'; END IF; \
                 END $$"
            ),
        );
    }

    #[test]
    fn a_large_intake_refreshes_the_planners_statistics_and_a_small_one_does_not() {
        let url = fresh_database_url();
        let store = PgStore::open(&url, "m").expect("open");
        store.enqueue(None, &jobs(10), 5, 0).expect("small intake");
        // Never analysed: -1, and ten jobs are not worth an ANALYZE.
        execute(
            &url,
            "DO $$ BEGIN IF (SELECT reltuples FROM pg_class WHERE oid = 'jobs'::regclass) >= 0 \
             THEN RAISE EXCEPTION 'analysed after ten jobs'; END IF; END $$",
        );
        let batch = store.create_batch("big", "test", 0).expect("batch");
        store
            .enqueue(Some(batch), &jobs(3_000)[10..], 5, 0)
            .expect("large intake");
        assert_planner_knows(&url, 2_990);
    }

    /// An intake's length grows with its file (a 10,000-entry .bib from a member far from the
    /// server): it is not cut off by the per-call limit and rolled back as if the server had
    /// not answered, and its tags all arrive.
    #[test]
    fn a_large_tagged_intake_is_not_cut_off_by_the_answer_limit() {
        let url = fresh_database_url();
        let mut store = PgStore::open(&url, "m").expect("open");
        store.set_answer_timeout(std::time::Duration::from_millis(20));
        let tagged: Vec<NewJob> = jobs(2_000)
            .into_iter()
            .map(|mut j| {
                j.reference = Some(Box::new(crate::engine::queue::Reference {
                    tags: vec!["alpha".into(), "beta".into(), "gamma".into()],
                    ..Default::default()
                }));
                j
            })
            .collect();
        let (_, out) = store
            .enqueue_batch("big.bib", "file", &tagged, 5, 0)
            .expect("the intake finished");
        assert_eq!(out.len(), 2_000);
        execute(
            &url,
            "DO $$ BEGIN IF (SELECT count(*) FROM job_tags) <> 6000 \
             THEN RAISE EXCEPTION 'tags missing'; END IF; END $$",
        );
    }
}
