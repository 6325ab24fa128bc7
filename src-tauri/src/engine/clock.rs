//! Injected time. Every "now" in the engine comes from a [`Clock`], so tests can jump a 60 s
//! backoff forward instead of sleeping through it.
//!
//! A clock has two readings: the wall clock (what times are stored in) and a boot clock that
//! only moves forward, counts suspended time too, and is the same for every process on this
//! boot. Their difference changes only when somebody sets the wall clock, which is how the
//! store tells a clock set back or forward from a laptop that slept ([`Reading::offset`]).

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio::sync::Notify;

/// Unix time in milliseconds (UTC), the unit stored in every time column.
pub type Millis = i64;

/// A change of the wall clock's offset from the boot clock below this is drift that NTP
/// slews away, not a jump.
pub const JUMP_THRESHOLD_MS: Millis = 2_000;

pub trait Clock: Send + Sync + 'static {
    fn now_ms(&self) -> Millis;

    /// Milliseconds since this machine booted, counting time asleep (`CLOCK_BOOTTIME`): never
    /// set, never stepped.
    fn boot_ms(&self) -> Millis;

    /// Which boot [`Clock::boot_ms`] counts from: boot clocks of two boots cannot be compared.
    fn boot_id(&self) -> &str;

    /// How long this machine has been suspended since it booted, as far as it can tell: an
    /// attempt across a suspend is the machine's, not the site's, failure.
    fn asleep_ms(&self) -> Millis {
        0
    }

    fn reading(&self) -> Reading {
        Reading {
            wall: self.now_ms(),
            boot: self.boot_ms(),
            boot_id: self.boot_id().to_string(),
        }
    }

    /// Resolves once `boot_ms() >= deadline`: a wait on the boot clock, which no setting of
    /// the wall clock lengthens or cuts short. Must not busy-wait.
    fn sleep_until_boot(&self, deadline: Millis) -> futures_util::future::BoxFuture<'_, ()>;

    /// Sleeps as long as it is from now to the wall time `deadline`, measured now.
    fn sleep_until(&self, deadline: Millis) -> futures_util::future::BoxFuture<'_, ()> {
        self.sleep_until_from(&self.reading(), deadline)
    }

    /// Sleeps until the wall time `deadline` as `at` reckoned it: a deadline worked out from
    /// an earlier reading keeps its length even if the wall clock was set since.
    fn sleep_until_from(
        &self,
        at: &Reading,
        deadline: Millis,
    ) -> futures_util::future::BoxFuture<'_, ()> {
        self.sleep_until_boot(at.boot + (deadline - at.wall).max(0))
    }
}

pub type SharedClock = Arc<dyn Clock>;

/// Both readings of a clock at one instant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reading {
    pub wall: Millis,
    pub boot: Millis,
    pub boot_id: String,
}

impl Reading {
    /// Wall time at boot, as the wall clock says now. It moves by exactly the size of a jump
    /// of the wall clock, and not at all while the machine sleeps.
    pub fn offset(&self) -> Millis {
        self.wall - self.boot
    }
}

/// The wall clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> Millis {
        system_now_ms()
    }

    fn boot_ms(&self) -> Millis {
        boot_now_ms()
    }

    fn boot_id(&self) -> &str {
        system_boot_id()
    }

    fn asleep_ms(&self) -> Millis {
        // The boot clock counts a suspend, the monotonic one does not.
        #[cfg(any(target_os = "linux", target_os = "android"))]
        {
            let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
            (boot_now_ms() - (t.tv_sec.saturating_mul(1000) + t.tv_nsec / 1_000_000)).max(0)
        }
        #[cfg(not(any(target_os = "linux", target_os = "android")))]
        0
    }

    /// Tokio's timer runs on the monotonic clock, which stops while the machine is suspended:
    /// a wait that spans a suspend ends late, by at most the worker's idle fallback.
    fn sleep_until_boot(&self, deadline: Millis) -> futures_util::future::BoxFuture<'_, ()> {
        let wait = deadline.saturating_sub(self.boot_ms()).max(0);
        Box::pin(tokio::time::sleep(Duration::from_millis(wait as u64)))
    }
}

pub fn system_now_ms() -> Millis {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as Millis)
        .unwrap_or(0)
}

/// `CLOCK_BOOTTIME` in milliseconds, or the monotonic clock where there is none.
pub fn boot_now_ms() -> Millis {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Boottime);
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    t.tv_sec.saturating_mul(1000) + t.tv_nsec / 1_000_000
}

/// This boot's id (Linux's `boot_id`). Where there is none, this process's: the boot clock
/// there restarts at each boot, so an offset stored by an earlier process may belong to an
/// earlier boot, and comparing with it would take every restart for the clock set forward by
/// the time between the boots (and shift every wait by as much). Jumps are then noticed
/// within one process's life only.
fn system_boot_id() -> &'static str {
    static ID: OnceLock<String> = OnceLock::new();
    ID.get_or_init(|| {
        boot_id_or_process(std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok())
    })
}

fn boot_id_or_process(read: Option<String>) -> String {
    read.map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| format!("process-{}-{}", std::process::id(), system_now_ms()))
}

/// A clock that moves only when told to. Sleepers wake when it is advanced past their deadline.
///
/// [`ManualClock::advance`] is time passing (both readings move, as over a sleep too);
/// [`ManualClock::jump_wall`] is somebody setting the wall clock (the boot clock stays).
#[derive(Debug, Default)]
pub struct ManualClock {
    now: AtomicI64,
    boot: AtomicI64,
    asleep: AtomicI64,
    moved: Notify,
}

impl ManualClock {
    pub fn new(start: Millis) -> Arc<Self> {
        Arc::new(Self {
            now: AtomicI64::new(start),
            boot: AtomicI64::new(1_000),
            asleep: AtomicI64::new(0),
            moved: Notify::new(),
        })
    }

    pub fn advance(&self, by: Duration) {
        let by = by.as_millis() as Millis;
        self.boot.fetch_add(by, Ordering::SeqCst);
        self.now.fetch_add(by, Ordering::SeqCst);
        self.moved.notify_waiters();
    }

    /// The machine sleeps for `by` (a closed lid): both readings move, and the time counts as
    /// suspended.
    pub fn suspend(&self, by: Duration) {
        self.asleep
            .fetch_add(by.as_millis() as Millis, Ordering::SeqCst);
        self.advance(by);
    }

    /// Set the wall clock forward (positive) or back (negative) by `by_ms`, as NTP or a user
    /// does; no time passes.
    pub fn jump_wall(&self, by_ms: Millis) {
        self.now.fetch_add(by_ms, Ordering::SeqCst);
    }

    /// Set the wall clock to `to`, with time passing as it moves (a test's "it is now…").
    pub fn set(&self, to: Millis) {
        let from = self.now.swap(to, Ordering::SeqCst);
        self.boot.fetch_add(to - from, Ordering::SeqCst);
        self.moved.notify_waiters();
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> Millis {
        self.now.load(Ordering::SeqCst)
    }

    fn boot_ms(&self) -> Millis {
        self.boot.load(Ordering::SeqCst)
    }

    fn boot_id(&self) -> &str {
        "manual-clock"
    }

    fn asleep_ms(&self) -> Millis {
        self.asleep.load(Ordering::SeqCst)
    }

    fn sleep_until_boot(&self, deadline: Millis) -> futures_util::future::BoxFuture<'_, ()> {
        Box::pin(async move {
            loop {
                // Register interest before reading the time so an advance in between is not lost.
                let moved = self.moved.notified();
                if self.boot_ms() >= deadline {
                    return;
                }
                moved.await;
            }
        })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn without_a_boot_id_each_process_is_a_boot_of_its_own() {
        assert_eq!(boot_id_or_process(Some("abc\n".into())), "abc");
        let own = boot_id_or_process(None);
        assert!(
            own.starts_with(&format!("process-{}-", std::process::id())),
            "{own}"
        );
        assert_ne!(own, "this-boot");
    }

    use super::*;

    #[tokio::test]
    async fn manual_clock_wakes_sleepers_only_past_deadline() {
        let clock = ManualClock::new(1_000);
        let c2 = clock.clone();
        let sleeper = tokio::spawn(async move { c2.sleep_until(61_000).await });
        clock.advance(Duration::from_secs(30));
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!sleeper.is_finished(), "woke before its deadline");
        clock.advance(Duration::from_secs(30));
        tokio::time::timeout(Duration::from_secs(2), sleeper)
            .await
            .expect("sleeper did not wake")
            .expect("join");
    }

    #[tokio::test]
    async fn a_jump_of_the_wall_clock_neither_ends_nor_lengthens_a_sleep_worked_out_before_it() {
        let clock = ManualClock::new(1_000_000);
        let before = clock.reading();
        let c2 = clock.clone();
        // Set back an hour between the reading and the start of the sleep.
        clock.jump_wall(-3_600_000);
        let sleeper = tokio::spawn(async move { c2.sleep_until_from(&before, 1_002_000).await });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!sleeper.is_finished(), "the jump ended the sleep");
        clock.advance(Duration::from_millis(1_500));
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!sleeper.is_finished(), "woke before its two seconds");
        clock.advance(Duration::from_millis(500));
        tokio::time::timeout(Duration::from_secs(2), sleeper)
            .await
            .expect("the sleep was held by the hour the clock was set back")
            .expect("join");
    }

    #[test]
    fn the_offset_moves_with_a_jump_of_the_wall_clock_and_not_with_time_passing() {
        let clock = ManualClock::new(1_000_000);
        let before = clock.reading().offset();
        clock.advance(Duration::from_secs(3600));
        assert_eq!(
            clock.reading().offset(),
            before,
            "time passing is not a jump"
        );
        clock.jump_wall(-3_600_000);
        assert_eq!(clock.reading().offset(), before - 3_600_000);
    }

    #[test]
    fn the_system_boot_clock_moves_forward() {
        let a = SystemClock.boot_ms();
        std::thread::sleep(Duration::from_millis(20));
        let b = SystemClock.boot_ms();
        assert!(b >= a + 15, "{a} then {b}");
        assert!(!SystemClock.boot_id().is_empty());
    }
}
