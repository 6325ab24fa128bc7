//! The SQLite store as a [`Queue`]: each step is the [`Store`] method of the same name, in
//! the file of its concern.

use std::path::Path;
use std::sync::Arc;

use tokio::sync::Notify;

use super::Store;
use crate::engine::clock::{Millis, Reading};
use crate::engine::policy::{HostIntervals, Policy};
use crate::engine::queue::{
    ActionResult, Attempt, BatchInfo, ClaimRequest, Claimed, Enqueued, Failed, Finish, Held, Hit,
    HostCount, HostState, Indexed, Job, JobFilter, LibraryQuery, Liveness, NewJob, OfflineState,
    Queue, Reindexed, Result, StallState, Stats, Step, Subscription,
};

impl Queue for Store {
    fn database_file(&self) -> Option<&Path> {
        self.path()
    }

    fn subscribe(&self, wake: Arc<Notify>) -> Result<Subscription> {
        Store::subscribe(self, wake)
    }

    fn start_upkeep(&self) -> Result<()> {
        self.checkpoint_in_background()
    }

    fn create_batch(&self, name: &str, source: &str, now: Millis) -> Result<i64> {
        Store::create_batch(self, name, source, now)
    }

    fn enqueue(
        &self,
        batch_id: Option<i64>,
        jobs: &[NewJob],
        max_retries: u32,
        now: Millis,
    ) -> Result<Vec<Enqueued>> {
        Store::enqueue(self, batch_id, jobs, max_retries, now)
    }

    fn enqueue_batch(
        &self,
        name: &str,
        source: &str,
        jobs: &[NewJob],
        max_retries: u32,
        now: Millis,
    ) -> Result<(Option<i64>, Vec<Enqueued>)> {
        Store::enqueue_batch(self, name, source, jobs, max_retries, now)
    }

    fn step(
        &self,
        finished: &mut Vec<(Claimed, Finish)>,
        policy: &Policy,
        now: Millis,
        claim: Option<&ClaimRequest<'_>>,
    ) -> Result<Step> {
        Store::step(self, finished, policy, now, claim)
    }

    fn recover(
        &self,
        policy: &Policy,
        now: Millis,
        liveness: &dyn Fn(&str) -> Liveness,
    ) -> Result<Vec<Failed>> {
        Store::recover(self, policy, now, liveness)
    }

    fn refresh(&self, owner: &str, held: &[i64], lease_until: Millis) -> Result<u64> {
        Store::refresh(self, owner, held, lease_until)
    }

    fn put_back(
        &self,
        owner: &str,
        which: Held<'_>,
        reason: &str,
        now: Millis,
    ) -> Result<Vec<i64>> {
        Store::put_back(self, owner, which, reason, now)
    }

    fn next_wakeup(&self, now: Millis, intervals: &HostIntervals) -> Result<Option<Millis>> {
        Store::next_wakeup(self, now, intervals)
    }

    fn has_active(&self) -> Result<bool> {
        Store::has_active(self)
    }

    fn reconcile_clock(&self, reading: &Reading) -> Result<Option<Millis>> {
        Store::reconcile_clock(self, reading)
    }

    fn set_offline(&self, state: Option<&OfflineState>) -> Result<()> {
        Store::set_offline(self, state)
    }

    fn offline(&self) -> Result<Option<OfflineState>> {
        Store::offline(self)
    }

    fn set_stalled(&self, state: Option<&StallState>) -> Result<()> {
        Store::set_stalled(self, state)
    }

    fn stalled(&self) -> Result<Option<StallState>> {
        Store::stalled(self)
    }

    fn job(&self, id: i64) -> Result<Option<Job>> {
        Store::job(self, id)
    }

    fn attempts(&self, job_id: i64) -> Result<Vec<Attempt>> {
        Store::attempts(self, job_id)
    }

    fn list_jobs(&self, filter: &JobFilter) -> Result<Vec<Job>> {
        Store::list_jobs(self, filter)
    }

    fn count_jobs(&self, filter: &JobFilter) -> Result<u64> {
        Store::count_jobs(self, filter)
    }

    fn job_hosts(&self, limit: u32) -> Result<Vec<HostCount>> {
        Store::job_hosts(self, limit)
    }

    fn batches(&self, limit: u32) -> Result<Vec<BatchInfo>> {
        Store::batches(self, limit)
    }

    fn stats(&self, now: Millis) -> Result<Stats> {
        Store::stats(self, now)
    }

    fn hosts(&self, now: Millis) -> Result<Vec<HostState>> {
        Store::hosts(self, now)
    }

    fn retry(&self, ids: &[i64], max_retries: u32, now: Millis) -> Result<Vec<ActionResult>> {
        Store::retry(self, ids, max_retries, now)
    }

    fn retry_dead(&self, host: Option<&str>, max_retries: u32, now: Millis) -> Result<Vec<i64>> {
        Store::retry_dead(self, host, max_retries, now)
    }

    fn cancel(&self, ids: &[i64], now: Millis) -> Result<Vec<ActionResult>> {
        Store::cancel(self, ids, now)
    }

    fn delete(&self, ids: &[i64]) -> Result<Vec<ActionResult>> {
        Store::delete(self, ids)
    }

    fn library(&self, q: &LibraryQuery) -> Result<Vec<Hit>> {
        Store::library(self, q)
    }

    fn clear_index(&self) -> Result<()> {
        Store::clear_index(self)
    }

    fn reindex(&self, documents: &[(i64, String, Indexed)]) -> Result<Reindexed> {
        Store::reindex(self, documents)
    }

    fn job_tags(&self, job_id: i64) -> Result<Vec<String>> {
        Store::job_tags(self, job_id)
    }

    fn tag_counts(&self) -> Result<Vec<(String, u64)>> {
        Store::tag_counts(self)
    }

    fn library_tag_counts(&self) -> Result<Vec<(String, u64)>> {
        Store::library_tag_counts(self)
    }

    fn library_hosts(&self) -> Result<Vec<HostCount>> {
        Store::library_hosts(self)
    }

    fn citation_keys(&self) -> Result<Vec<(i64, String)>> {
        Store::citation_keys(self)
    }

    fn keep_citation_keys(&self, keys: &[(i64, String)]) -> Result<usize> {
        Store::keep_citation_keys(self, keys)
    }

    fn adopt_citation_key(&self, job_id: i64, key: &str) -> Result<bool> {
        Store::adopt_citation_key(self, job_id, key)
    }

    fn set_tags(&self, job_id: i64, tags: &[String]) -> Result<Option<Vec<String>>> {
        Store::set_tags(self, job_id, tags)
    }

    fn pause_host(&self, host: &str, now: Millis) -> Result<()> {
        Store::pause_host(self, host, now)
    }

    fn resume_host(&self, host: &str, now: Millis) -> Result<bool> {
        Store::resume_host(self, host, now)
    }

    fn set_queue_paused(&self, paused: bool) -> Result<()> {
        Store::set_queue_paused(self, paused)
    }

    fn is_queue_paused(&self) -> Result<bool> {
        Store::is_queue_paused(self)
    }

    fn setting(&self, key: &str) -> Result<Option<String>> {
        Store::setting(self, key)
    }

    fn set_setting(&self, key: &str, value: &str) -> Result<()> {
        Store::set_setting(self, key, value)
    }

    fn load_policy(&self) -> Result<Policy> {
        Store::load_policy(self)
    }

    fn save_policy(&self, policy: &Policy) -> Result<()> {
        Store::save_policy(self, policy)
    }

    fn take_unannounced_deaths(&self, limit: u32) -> Result<Vec<Job>> {
        Store::take_unannounced_deaths(self, limit)
    }
}
