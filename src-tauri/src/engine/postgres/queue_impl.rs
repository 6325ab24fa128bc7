//! The PostgreSQL store as a [`Queue`]: each step blocks on the async function of the same
//! name, in the file of its concern.

use std::path::Path;
use std::sync::Arc;

use tokio::sync::Notify;

use super::actions::{self, Joins};
use super::documents::{self, Stored};
use super::hosts::{self, StoredOffline, StoredStall};
use super::{PgStore, library, listen, reads, step};
use crate::engine::clock::{Millis, Reading};
use crate::engine::policy::{HostIntervals, Policy};
use crate::engine::queue::{
    ActionResult, Attempt, BatchInfo, ClaimRequest, Claimed, Enqueued, Failed, Finish, Held, Hit,
    HostCount, HostState, Indexed, Job, JobFilter, LibraryQuery, Liveness, NewJob, OfflineState,
    Queue, QueueError, Reindexed, Result, Settled, SharedDocument, SharedEntry, StallState, Stats,
    Step, Subscription, Success, rfc3339,
};

const OFFLINE: &str = "offline";
const STALLED: &str = "stalled";

impl Queue for PgStore {
    fn database_file(&self) -> Option<&Path> {
        None
    }

    fn subscribe(&self, wake: Arc<Notify>) -> Result<Subscription> {
        let Some(rt) = self.rt.as_ref() else {
            return Err(QueueError::Connect(
                "the database driver has stopped".into(),
            ));
        };
        let (config, tls) = (self.db.config.clone(), self.db.tls.clone());
        let statement = listen::statement(&self.db.channel);
        let first = self.block(|| async {
            listen::connect(&config, &tls, &statement, &wake)
                .await
                .map_err(QueueError::Postgres)
        })?;
        Ok(listen::spawn(rt, (config, tls), statement, wake, first))
    }

    fn shared(&self) -> bool {
        true
    }

    fn start_upkeep(&self) -> Result<()> {
        Ok(())
    }

    fn create_batch(&self, name: &str, source: &str, now: Millis) -> Result<i64> {
        self.block(|| actions::create_batch(&self.db, name, source, now))
    }

    fn enqueue(
        &self,
        batch_id: Option<i64>,
        jobs: &[NewJob],
        max_retries: u32,
        now: Millis,
    ) -> Result<Vec<Enqueued>> {
        let name = format!("api {}", rfc3339(now));
        let joins = match batch_id {
            Some(id) => Joins::Existing(id),
            None => Joins::New {
                name: &name,
                source: "api",
            },
        };
        Ok(self
            .block_unlimited(|| actions::enqueue(&self.db, joins, jobs, max_retries, now))?
            .1)
    }

    fn enqueue_batch(
        &self,
        name: &str,
        source: &str,
        jobs: &[NewJob],
        max_retries: u32,
        now: Millis,
    ) -> Result<(Option<i64>, Vec<Enqueued>)> {
        let joins = Joins::New { name, source };
        self.block_unlimited(|| actions::enqueue(&self.db, joins, jobs, max_retries, now))
    }

    fn step(
        &self,
        finished: &mut Vec<(Claimed, Finish)>,
        policy: &Policy,
        now: Millis,
        claim: Option<&ClaimRequest<'_>>,
    ) -> Result<Step> {
        let (outgoing, stored): (Vec<_>, Vec<_>) =
            finished.iter().map(|(c, f)| self.outgoing(c, f)).unzip();
        // A step that uploads is given time for its bytes up a slow uplink: cut off at the
        // plain limit, it could never commit (its outcomes are sent again, with more).
        let bytes: u64 = stored.iter().flatten().map(Stored::len).sum();
        let limit = self
            .db
            .answer_timeout
            .map(|t| super::connect::upload_limit(t, bytes));
        let uploading = (bytes > 0).then(|| {
            limit.unwrap_or(super::connect::upload_limit(
                super::connect::ANSWER_TIMEOUT,
                bytes,
            ))
        });
        let (results, mut claimed) = self.block_within(limit, || {
            step::step(&self.db, &outgoing, &stored, policy, now, claim, uploading)
        })?;
        for c in &mut claimed {
            c.document = c.document.take().map(|d| self.paths.local(&d));
        }
        let settled = std::mem::take(finished)
            .into_iter()
            .zip(results)
            .map(|((claimed, finish), result)| (claimed, finish, self.local_settled(result)))
            .collect();
        Ok(Step { settled, claimed })
    }

    fn recover(
        &self,
        policy: &Policy,
        now: Millis,
        liveness: &dyn Fn(&str) -> Liveness,
    ) -> Result<Vec<Failed>> {
        let running = self.block(|| step::running(&self.db))?;
        let gone: Vec<_> = running
            .iter()
            .filter_map(|r| step::judge(r, now, liveness).map(|expired| (r, expired)))
            .collect();
        if gone.is_empty() {
            return Ok(Vec::new());
        }
        let failed = self.block(|| step::recover(&self.db, &gone, policy, now))?;
        Ok(failed.into_iter().map(|f| self.local_failed(f)).collect())
    }

    fn refresh(&self, owner: &str, held: &[i64], lease_until: Millis) -> Result<u64> {
        self.block(|| step::refresh(&self.db, owner, held, lease_until))
    }

    fn put_back(
        &self,
        owner: &str,
        which: Held<'_>,
        reason: &str,
        now: Millis,
    ) -> Result<Vec<i64>> {
        self.block(|| step::put_back(&self.db, owner, which, reason, now))
    }

    fn next_wakeup(&self, now: Millis, intervals: &HostIntervals) -> Result<Option<Millis>> {
        self.block(|| reads::next_wakeup(&self.db, now, intervals))
    }

    fn has_active(&self) -> Result<bool> {
        self.block(|| reads::has_active(&self.db))
    }

    /// Times in a shared database are compared with every member's wall clock, so one
    /// machine's clock being set does not move the whole lab's waits (docs/ARCHITECTURE.md).
    fn reconcile_clock(&self, _reading: &Reading) -> Result<Option<Millis>> {
        Ok(None)
    }

    fn set_offline(&self, state: Option<&OfflineState>) -> Result<()> {
        let value = state
            .map(|s| serde_json::to_string(&StoredOffline::of(s)))
            .transpose()?;
        self.block(|| hosts::set_member_setting(&self.db, OFFLINE, value.as_deref()))
    }

    fn offline(&self) -> Result<Option<OfflineState>> {
        let text = self.block(|| async {
            hosts::member_setting(&self.db.client().await?, &self.db.member, OFFLINE).await
        })?;
        Ok(StoredOffline::read(text))
    }

    fn set_stalled(&self, state: Option<&StallState>) -> Result<()> {
        let value = state
            .map(|s| serde_json::to_string(&StoredStall::of(s)))
            .transpose()?;
        self.block(|| hosts::set_member_setting(&self.db, STALLED, value.as_deref()))
    }

    fn stalled(&self) -> Result<Option<StallState>> {
        let text = self.block(|| async {
            hosts::member_setting(&self.db.client().await?, &self.db.member, STALLED).await
        })?;
        Ok(StoredStall::read(text))
    }

    fn job(&self, id: i64) -> Result<Option<Job>> {
        Ok(self
            .block(|| reads::job(&self.db, id))?
            .map(|j| self.local_job(j)))
    }

    fn attempts(&self, job_id: i64) -> Result<Vec<Attempt>> {
        self.block(|| reads::attempts(&self.db, job_id))
    }

    fn list_jobs(&self, filter: &JobFilter) -> Result<Vec<Job>> {
        let jobs = self.block(|| reads::list_jobs(&self.db, filter))?;
        Ok(jobs.into_iter().map(|j| self.local_job(j)).collect())
    }

    fn count_jobs(&self, filter: &JobFilter) -> Result<u64> {
        self.block(|| reads::count_jobs(&self.db, filter))
    }

    fn job_hosts(&self, limit: u32) -> Result<Vec<HostCount>> {
        self.block(|| reads::job_hosts(&self.db, limit))
    }

    fn batches(&self, limit: u32) -> Result<Vec<BatchInfo>> {
        self.block(|| reads::batches(&self.db, limit))
    }

    fn stats(&self, now: Millis) -> Result<Stats> {
        self.block(|| reads::stats(&self.db, now))
    }

    fn hosts(&self, now: Millis) -> Result<Vec<HostState>> {
        self.block(|| async { hosts::hosts(&self.db.client().await?, now).await })
    }

    fn retry(&self, ids: &[i64], max_retries: u32, now: Millis) -> Result<Vec<ActionResult>> {
        self.block(|| actions::retry(&self.db, ids, max_retries, now))
    }

    fn retry_dead(&self, host: Option<&str>, max_retries: u32, now: Millis) -> Result<Vec<i64>> {
        self.block(|| actions::retry_dead(&self.db, host, max_retries, now))
    }

    fn cancel(&self, ids: &[i64], now: Millis) -> Result<Vec<ActionResult>> {
        self.block(|| actions::cancel(&self.db, ids, now))
    }

    fn delete(&self, ids: &[i64]) -> Result<Vec<ActionResult>> {
        self.block(|| actions::delete(&self.db, ids))
    }

    fn library(&self, q: &LibraryQuery) -> Result<Vec<Hit>> {
        let hits = self.block(|| library::library(&self.db, q))?;
        Ok(hits
            .into_iter()
            .map(|mut h| {
                h.document = h.document.map(|d| self.paths.local(&d));
                h.pdf = h.pdf.map(|p| self.paths.local(&p));
                h
            })
            .collect())
    }

    fn clear_index(&self) -> Result<()> {
        self.block_unlimited(|| library::clear_index(&self.db))
    }

    fn reindex(&self, documents: &[(i64, String, Indexed)]) -> Result<Reindexed> {
        let documents: Vec<(i64, String, Indexed)> = documents
            .iter()
            .map(|(id, path, doc)| {
                let doc = Indexed {
                    pdf: doc.pdf.as_deref().map(|p| self.paths.relative(p)),
                    ..doc.clone()
                };
                (*id, self.paths.relative(path), doc)
            })
            .collect();
        self.block_unlimited(|| library::reindex(&self.db, &documents))
    }

    fn shared_listing(&self, after: i64, limit: u32) -> Result<Vec<SharedEntry>> {
        self.block(|| documents::shared_listing(&self.db, after, limit))
    }

    fn shared_document(&self, job_id: i64) -> Result<Option<SharedDocument>> {
        self.block(|| documents::shared_document(&self.db, job_id))
    }

    fn stored_document(&self, job_id: i64) -> Result<Option<Vec<u8>>> {
        self.block(|| documents::stored_document(&self.db, job_id))
    }

    fn job_tags(&self, job_id: i64) -> Result<Vec<String>> {
        self.block(|| library::job_tags(&self.db, job_id))
    }

    fn tag_counts(&self) -> Result<Vec<(String, u64)>> {
        self.block(|| library::tag_counts(&self.db))
    }

    fn library_tag_counts(&self) -> Result<Vec<(String, u64)>> {
        self.block(|| library::library_tag_counts(&self.db))
    }

    fn library_hosts(&self) -> Result<Vec<HostCount>> {
        self.block(|| library::library_hosts(&self.db))
    }

    fn citation_keys(&self) -> Result<Vec<(i64, String)>> {
        self.block(|| library::citation_keys(&self.db))
    }

    fn keep_citation_keys(&self, keys: &[(i64, String)]) -> Result<usize> {
        self.block(|| library::keep_citation_keys(&self.db, keys))
    }

    fn adopt_citation_key(&self, job_id: i64, key: &str) -> Result<bool> {
        self.block(|| library::adopt_citation_key(&self.db, job_id, key))
    }

    fn set_tags(&self, job_id: i64, tags: &[String]) -> Result<Option<Vec<String>>> {
        self.block(|| library::set_tags(&self.db, job_id, tags))
    }

    fn pause_host(&self, host: &str, now: Millis) -> Result<()> {
        self.block(|| hosts::pause_host(&self.db, host, now))
    }

    fn resume_host(&self, host: &str, now: Millis) -> Result<bool> {
        self.block(|| hosts::resume_host(&self.db, host, now))
    }

    fn set_queue_paused(&self, paused: bool) -> Result<()> {
        let value = if paused { "true" } else { "false" };
        self.block(|| hosts::set_setting(&self.db, "queue_paused", value))
    }

    fn is_queue_paused(&self) -> Result<bool> {
        Ok(self.setting("queue_paused")?.as_deref() == Some("true"))
    }

    fn setting(&self, key: &str) -> Result<Option<String>> {
        self.block(|| async { hosts::setting(&self.db.client().await?, key).await })
    }

    fn set_setting(&self, key: &str, value: &str) -> Result<()> {
        self.block(|| hosts::set_setting(&self.db, key, value))
    }

    fn member_setting(&self, key: &str) -> Result<Option<String>> {
        self.block(|| async {
            hosts::member_setting(&self.db.client().await?, &self.db.member, key).await
        })
    }

    fn set_member_setting(&self, key: &str, value: &str) -> Result<()> {
        self.block(|| hosts::set_member_setting(&self.db, key, Some(value)))
    }

    fn load_policy(&self) -> Result<Policy> {
        Ok(match self.setting("policy")? {
            Some(text) => serde_json::from_str(&text)?,
            None => Policy::default(),
        })
    }

    fn save_policy(&self, policy: &Policy) -> Result<()> {
        let text = serde_json::to_string(policy)?;
        self.set_setting("policy", &text)
    }

    fn take_unannounced_deaths(&self, limit: u32) -> Result<Vec<Job>> {
        let jobs = self.block(|| actions::take_unannounced_deaths(&self.db, limit))?;
        Ok(jobs.into_iter().map(|j| self.local_job(j)).collect())
    }
}

/// Paths between this member's library folder and the database's relative ones.
impl PgStore {
    fn local_job(&self, mut job: Job) -> Job {
        job.document = job.document.map(|d| self.paths.local(&d));
        job
    }

    fn local_failed(&self, mut failed: Failed) -> Failed {
        failed.job = self.local_job(failed.job);
        failed
    }

    fn local_settled(&self, settled: Settled) -> Settled {
        match settled {
            Settled::Failed(f) => Settled::Failed(self.local_failed(f)),
            Settled::Offline(j) => Settled::Offline(self.local_job(j)),
            Settled::Local(j) => Settled::Local(self.local_job(j)),
            other => other,
        }
    }

    /// A finished job as the database keeps it (paths relative to the library folder), and
    /// the document it saved, read to be shared.
    fn outgoing(&self, claimed: &Claimed, finish: &Finish) -> ((Claimed, Finish), Option<Stored>) {
        let relative = |s: &Success| Success {
            document: s.document.as_deref().map(|d| self.paths.relative(d)),
            index: s.index.as_ref().map(|i| {
                Box::new(Indexed {
                    pdf: i.pdf.as_deref().map(|p| self.paths.relative(p)),
                    ..(**i).clone()
                })
            }),
            ..s.clone()
        };
        let read = |s: &Success| {
            let pdf = s.index.as_ref().and_then(|i| i.pdf.as_deref());
            s.document
                .as_deref()
                .and_then(|d| self.paths.read(d, pdf, self.pdf_max))
        };
        match finish {
            Finish::Success(s) => ((claimed.clone(), Finish::Success(relative(s))), read(s)),
            Finish::Next(next) => {
                let stored = next.saved.as_ref().and_then(read);
                let next = crate::engine::queue::Next {
                    saved: next.saved.as_ref().map(relative),
                    ..(**next).clone()
                };
                ((claimed.clone(), Finish::Next(Box::new(next))), stored)
            }
            other => ((claimed.clone(), other.clone()), None),
        }
    }
}
