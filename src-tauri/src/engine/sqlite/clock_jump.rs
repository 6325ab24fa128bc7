//! Waits keep their intended length when somebody sets the wall clock (NTP, a dual-boot RTC,
//! a dead CMOS battery). Every time the queue stores is wall time, so a clock set back an
//! hour would hold a `Retry-After: 2` pause for an hour and two seconds, and one set forward
//! would end pauses early and age rate-limited jobs to death. The clock's offset (wall time at
//! boot, [`Reading::offset`]) moves by exactly the size of such a jump and not at all while
//! the laptop sleeps; the first process to see it move shifts the queue's waits by as much,
//! in one transaction, and records the new offset so no other process shifts them again.

use rusqlite::{OptionalExtension, Transaction, params};

use super::Store;
use crate::engine::clock::{Millis, Reading};
use crate::engine::policy::{MAX_RETRY_AFTER, Policy};
use crate::engine::queue::{QueueError, Result};

use crate::engine::clock::JUMP_THRESHOLD_MS;

const ANCHOR_KEY: &str = "clock_anchor";

/// The offset last recorded, with the boot it belongs to.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(super) struct Anchor {
    boot_id: String,
    offset: Millis,
}

impl Anchor {
    fn of(reading: &Reading) -> Self {
        Self {
            boot_id: reading.boot_id.clone(),
            offset: reading.offset(),
        }
    }

    /// The jump from this anchor to `reading`, if it is one.
    fn jump_to(&self, reading: &Reading) -> Option<Millis> {
        let d = reading.offset() - self.offset;
        (self.boot_id == reading.boot_id && d.abs() >= JUMP_THRESHOLD_MS).then_some(d)
    }
}

impl Store {
    /// Notice a jump of the wall clock since the offset recorded last (by any process), and
    /// move every wait in the queue by the same amount: due times, host pauses, leases and
    /// the start of rate-limit budgets. Returns the jump, if there was one. Costs no database
    /// access while the offset this store saw last still holds.
    pub fn reconcile_clock(&self, reading: &Reading) -> Result<Option<Millis>> {
        let known = self
            .clock_anchor
            .lock()
            .map_err(|_| QueueError::Poisoned)?
            .clone();
        if known
            .as_ref()
            .is_some_and(|a| a.boot_id == reading.boot_id && a.jump_to(reading).is_none())
        {
            return Ok(None);
        }
        let (anchor, jump) = self.write(|tx| {
            let stored: Option<Anchor> = tx
                .query_row(
                    "SELECT value FROM settings WHERE key = ?1",
                    [ANCHOR_KEY],
                    |r| r.get::<_, String>(0),
                )
                .optional()?
                .and_then(|v| serde_json::from_str(&v).ok());
            match stored {
                // The same boot and no jump (or another process has shifted already).
                Some(a) if a.boot_id == reading.boot_id && a.jump_to(reading).is_none() => {
                    Ok((a, None))
                }
                Some(a) if a.boot_id == reading.boot_id => {
                    let jump = a.jump_to(reading);
                    if let Some(d) = jump {
                        shift_waits(tx, d)?;
                    }
                    let now = Anchor::of(reading);
                    store_anchor(tx, &now)?;
                    Ok((now, jump))
                }
                // A new boot (or the first reading ever): nothing to compare with, so waits
                // that no policy gives are cut back (DESIGN.md, "Time").
                _ => {
                    clamp_far_waits(tx, reading.wall)?;
                    let now = Anchor::of(reading);
                    store_anchor(tx, &now)?;
                    Ok((now, None))
                }
            }
        })?;
        if let Some(d) = jump {
            tracing::warn!(
                "The system clock was set {} by {}; the queue's waits and host pauses keep their length.",
                if d < 0 { "back" } else { "forward" },
                crate::engine::policy::human_duration(std::time::Duration::from_millis(
                    d.unsigned_abs()
                ))
            );
        }
        *self.clock_anchor.lock().map_err(|_| QueueError::Poisoned)? = Some(anchor);
        Ok(jump)
    }
}

fn store_anchor(tx: &Transaction<'_>, anchor: &Anchor) -> Result<()> {
    tx.execute(
        "INSERT INTO settings (key, value) VALUES (?1, ?2) \
         ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        params![ANCHOR_KEY, serde_json::to_string(anchor)?],
    )?;
    Ok(())
}

/// The longest wait the stored policy can give: a Retry-After's cap, the backoff's cap, or a
/// lease (twice the timeout and a minute).
fn longest_wait(tx: &Transaction<'_>) -> Result<Millis> {
    // A policy that no longer reads is the default's, as an unreadable anchor is none.
    let policy = match super::hosts::stored_policy(tx) {
        Err(QueueError::Settings(_)) => Policy::default(),
        other => other?,
    };
    let lease = policy.timeout * 2 + std::time::Duration::from_secs(60);
    Ok(MAX_RETRY_AFTER.max(policy.max_delay).max(lease).as_millis() as Millis)
}

/// On a new boot, no jump can be measured: a session whose wall clock was ahead (an RTC set
/// to local time, a wrong date) and a restart with the right time left its waits as far off
/// as the clock was, years for a wrong year. Here a wait is at most [`longest_wait`] from
/// `now`, and a pending job's row written "in the future" (`updated_at > now`) waits what it
/// was given to wait from when it was written, counted from now (a link pasted in that
/// session is due at once, not in as long as the clock was ahead). Start times that lie ahead
/// (a budget's, a rate limit's, an attempt's, a host's last request) become now. Pending jobs
/// are found through each open batch's due index, from `now` on, so a restart reads only the
/// jobs that wait.
fn clamp_far_waits(tx: &Transaction<'_>, now: Millis) -> Result<()> {
    let longest = longest_wait(tx)?;
    let bound = now + longest;
    tx.execute(
        "UPDATE jobs SET \
             run_at = CASE WHEN updated_at > ?1 THEN ?1 + min(max(run_at - updated_at, 0), ?2) \
                 ELSE min(run_at, ?3) END, \
             budget_started_at = min(budget_started_at, ?1), \
             rate_limited_since = min(rate_limited_since, ?1) \
         WHERE id IN (SELECT j.id FROM batches b INDEXED BY batches_rotation \
                 CROSS JOIN jobs j INDEXED BY jobs_batch_due \
             WHERE b.open = 1 AND j.batch_id = b.id AND j.status = 'pending' AND j.run_at > ?1 \
               AND (j.updated_at > ?1 OR j.run_at > ?3))",
        params![now, longest, bound],
    )?;
    tx.execute(
        "UPDATE jobs INDEXED BY jobs_running_host SET lease_until = min(lease_until, ?2), \
             budget_started_at = min(budget_started_at, ?1), \
             rate_limited_since = min(rate_limited_since, ?1), \
             attempt_started_at = min(attempt_started_at, ?1) \
         WHERE status = 'running' AND (lease_until > ?2 OR budget_started_at > ?1 \
             OR rate_limited_since > ?1 OR attempt_started_at > ?1)",
        params![now, bound],
    )?;
    tx.execute(
        "UPDATE hosts SET paused_until = ?1 WHERE paused_until > ?1",
        [bound],
    )?;
    tx.execute(
        "UPDATE hosts SET last_start_at = ?1 WHERE last_start_at > ?1",
        [now],
    )?;
    Ok(())
}

/// Move every time that measures a wait by `d`. Finished jobs keep their history as it was.
/// The lane trigger (migration 0012) moves the lanes' cursors back with the jobs it sees.
fn shift_waits(tx: &Transaction<'_>, d: Millis) -> Result<()> {
    tx.execute(
        "UPDATE jobs SET run_at = run_at + ?1, budget_started_at = budget_started_at + ?1, \
             rate_limited_since = rate_limited_since + ?1 \
         WHERE status = 'pending'",
        [d],
    )?;
    tx.execute(
        "UPDATE jobs SET lease_until = lease_until + ?1, budget_started_at = budget_started_at + ?1, \
             rate_limited_since = rate_limited_since + ?1, attempt_started_at = attempt_started_at + ?1 \
         WHERE status = 'running'",
        [d],
    )?;
    tx.execute(
        "UPDATE hosts SET paused_until = paused_until + ?1 WHERE paused_until IS NOT NULL",
        [d],
    )?;
    // The last start of a host with an interval: a clock set back would hold the host for as
    // long as it was set back.
    tx.execute(
        "UPDATE hosts SET last_start_at = last_start_at + ?1 WHERE last_start_at IS NOT NULL",
        [d],
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::engine::clock::{Clock as _, ManualClock, Millis};
    use crate::engine::policy::{Failure, FailureKind, MAX_RETRY_AFTER, NO_INTERVALS, Policy};
    use crate::engine::queue::{ClaimRequest, Finish, Status};
    use crate::engine::sqlite::Store;
    use crate::engine::sqlite::testing::job;

    fn claim_one(s: &Store, now: i64) -> Vec<crate::engine::queue::Claimed> {
        let request = ClaimRequest {
            owner: "pid-1-test",
            lease: Duration::from_secs(120),
            per_host: 2,
            intervals: &NO_INTERVALS,
            max: 1,
            clock: None,
        };
        s.step(&mut Vec::new(), &Policy::default(), now, Some(&request))
            .expect("step")
            .claimed
    }

    /// A host rate-limited with Retry-After: 2, then the clock set back an hour.
    #[test]
    fn a_clock_set_back_keeps_a_pause_and_a_due_time_to_their_length() {
        let clock = ManualClock::new(1_800_000_000_000);
        let s = Store::open_in_memory().expect("open");
        s.reconcile_clock(&clock.reading()).expect("first reading");
        s.enqueue(None, &[job("https://slow.example/a")], 5, clock.now_ms())
            .expect("enqueue");
        let claimed = claim_one(&s, clock.now_ms());
        let mut failure = Failure::new(FailureKind::RateLimited, "429 Too Many Requests");
        failure.http_status = Some(429);
        failure.retry_after = Some(Duration::from_secs(2));
        let policy = Policy {
            base_delay: Duration::from_secs(1),
            jitter: 0.0,
            ..Policy::default()
        };
        let mut finished = vec![(claimed[0].clone(), Finish::Failure { failure, unit: 0.0 })];
        s.step(&mut finished, &policy, clock.now_ms(), None)
            .expect("fail");
        let due = s.job(claimed[0].job_id).expect("job").expect("row").run_at;
        assert_eq!(due, clock.now_ms() + 2_000);

        clock.jump_wall(-3_600_000);
        assert_eq!(
            s.reconcile_clock(&clock.reading()).expect("reconcile"),
            Some(-3_600_000)
        );
        let now = clock.now_ms();
        let job = s.job(claimed[0].job_id).expect("job").expect("row");
        assert_eq!(job.run_at, now + 2_000, "the wait is still two seconds");
        let paused = s.next_wakeup(now, &NO_INTERVALS).expect("wakeup");
        assert_eq!(paused, Some(now + 2_000), "and so is the host's pause");
        assert!(claim_one(&s, now + 1_000).is_empty(), "not before the wait");
        clock.advance(Duration::from_secs(2));
        let again = claim_one(&s, clock.now_ms());
        assert_eq!(
            again.len(),
            1,
            "due two seconds after the jump, not an hour"
        );
        assert_eq!(again[0].job_id, job.id);
    }

    /// A host with an interval started a request just before the clock was set back: its next
    /// start is still one interval after the last, not an hour later.
    #[test]
    fn a_clock_set_back_keeps_a_host_interval_to_its_length() {
        let clock = ManualClock::new(1_800_000_000_000);
        let s = Store::open_in_memory().expect("open");
        s.reconcile_clock(&clock.reading()).expect("first reading");
        let jobs = [
            job("https://arxiv.example/1"),
            job("https://arxiv.example/2"),
        ];
        s.enqueue(None, &jobs, 5, clock.now_ms()).expect("enqueue");
        let intervals: crate::engine::policy::HostIntervals =
            [("arxiv.example".to_string(), Duration::from_secs(3))]
                .into_iter()
                .collect();
        let claim = |now: Millis| {
            let request = ClaimRequest {
                owner: "w",
                lease: Duration::from_secs(60),
                per_host: 4,
                intervals: &intervals,
                max: 4,
                clock: None,
            };
            s.step(&mut Vec::new(), &Policy::default(), now, Some(&request))
                .expect("step")
                .claimed
                .len()
        };
        assert_eq!(claim(clock.now_ms()), 1);
        clock.jump_wall(-3_600_000);
        s.reconcile_clock(&clock.reading()).expect("reconcile");
        assert_eq!(claim(clock.now_ms() + 2_000), 0, "not before the interval");
        assert_eq!(
            claim(clock.now_ms() + 3_000),
            1,
            "three seconds, not an hour"
        );
    }

    #[test]
    fn a_jump_is_applied_once_however_many_stores_see_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("gleaner.db");
        let clock = ManualClock::new(1_800_000_000_000);
        let a = Store::open(&path).expect("open a");
        let b = Store::open(&path).expect("open b");
        a.reconcile_clock(&clock.reading()).expect("a");
        b.reconcile_clock(&clock.reading()).expect("b");
        let policy = Policy::default();
        a.enqueue(None, &[job("https://x.example/1")], 5, clock.now_ms())
            .expect("enqueue");
        // Due in 60 s.
        let claimed = claim_one(&a, clock.now_ms());
        let failure = Failure::new(FailureKind::ServerError, "503");
        let mut finished = vec![(claimed[0].clone(), Finish::Failure { failure, unit: 0.0 })];
        a.step(&mut finished, &policy, clock.now_ms(), None)
            .expect("fail");
        let before = a.job(claimed[0].job_id).expect("job").expect("row").run_at;
        clock.jump_wall(5 * 3_600_000);
        assert_eq!(
            a.reconcile_clock(&clock.reading()).expect("a"),
            Some(5 * 3_600_000)
        );
        assert_eq!(
            b.reconcile_clock(&clock.reading()).expect("b"),
            None,
            "already shifted"
        );
        let after = b.job(claimed[0].job_id).expect("job").expect("row");
        assert_eq!(after.run_at, before + 5 * 3_600_000);
        assert_eq!(after.status, Status::Pending);
    }

    /// A session with the wall clock three years ahead, then a restart with the right time:
    /// nothing waits for that date. A link pasted then is due at once, a rate-limited one
    /// and its host wait no longer than the longest wait a policy gives.
    #[test]
    fn after_a_session_with_the_clock_years_ahead_a_new_boot_waits_no_longer_than_a_policy_can() {
        let right = 1_800_000_000_000;
        let ahead = right + 3 * 365 * 24 * 3_600_000;
        let clock = ManualClock::new(ahead);
        let s = Store::open_in_memory().expect("open");
        s.reconcile_clock(&clock.reading()).expect("first reading");
        s.enqueue(None, &[job("https://slow.example/a")], 5, clock.now_ms())
            .expect("enqueue");
        let claimed = claim_one(&s, clock.now_ms());
        let mut failure = Failure::new(FailureKind::RateLimited, "429 Too Many Requests");
        failure.http_status = Some(429);
        failure.retry_after = Some(Duration::from_secs(3600));
        let policy = Policy {
            jitter: 0.0,
            ..Policy::default()
        };
        let mut finished = vec![(claimed[0].clone(), Finish::Failure { failure, unit: 0.0 })];
        s.step(&mut finished, &policy, clock.now_ms(), None)
            .expect("fail");
        let pasted = s
            .enqueue(None, &[job("https://quick.example/b")], 5, clock.now_ms())
            .expect("enqueue");
        let pasted_id = match pasted[0] {
            crate::engine::queue::Enqueued::Queued { id, .. } => id,
            ref other => panic!("{other:?}"),
        };

        let mut restarted = clock.reading();
        restarted.boot_id = "the next boot".into();
        restarted.boot = 5;
        restarted.wall = right;
        assert_eq!(s.reconcile_clock(&restarted).expect("new boot"), None);
        let rate_limited = s.job(claimed[0].job_id).expect("job").expect("row");
        assert_eq!(
            rate_limited.run_at,
            right + 3_600_000,
            "the hour it was told to wait, from now"
        );
        assert!(rate_limited.counters.rate_limited_since <= Some(right));
        let due = s.job(pasted_id).expect("job").expect("row");
        assert_eq!(due.run_at, right, "due at once");
        let wakeup = s.next_wakeup(right, &NO_INTERVALS).expect("wakeup");
        assert!(
            wakeup.is_some_and(|t| t <= right + MAX_RETRY_AFTER.as_millis() as Millis),
            "{wakeup:?}"
        );
        let first = claim_one(&s, right);
        assert_eq!(first.len(), 1);
        assert_eq!(first[0].job_id, pasted_id);
        let later = right + MAX_RETRY_AFTER.as_millis() as Millis;
        let again = claim_one(&s, later);
        assert_eq!(
            again.iter().map(|c| c.job_id).collect::<Vec<_>>(),
            [claimed[0].job_id],
            "the host's pause is over by then too"
        );
    }

    #[test]
    fn time_passing_and_a_new_boot_shift_nothing() {
        let clock = ManualClock::new(1_800_000_000_000);
        let s = Store::open_in_memory().expect("open");
        s.reconcile_clock(&clock.reading()).expect("first");
        clock.advance(Duration::from_secs(7 * 3600));
        assert_eq!(s.reconcile_clock(&clock.reading()).expect("later"), None);
        let mut other_boot = clock.reading();
        other_boot.boot_id = "another-boot".into();
        other_boot.boot = 5;
        assert_eq!(s.reconcile_clock(&other_boot).expect("new boot"), None);
    }
}
