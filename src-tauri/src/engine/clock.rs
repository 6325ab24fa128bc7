//! Injected time. Every "now" in the engine comes from a [`Clock`], so tests can jump a 60 s
//! backoff forward instead of sleeping through it.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use tokio::sync::Notify;

/// Unix time in milliseconds (UTC), the unit stored in every time column.
pub type Millis = i64;

pub trait Clock: Send + Sync + 'static {
    fn now_ms(&self) -> Millis;

    /// Resolves once `now_ms() >= deadline`. Must not busy-wait.
    fn sleep_until(&self, deadline: Millis) -> futures_util::future::BoxFuture<'_, ()>;
}

pub type SharedClock = Arc<dyn Clock>;

/// The wall clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> Millis {
        system_now_ms()
    }

    fn sleep_until(&self, deadline: Millis) -> futures_util::future::BoxFuture<'_, ()> {
        let wait = deadline.saturating_sub(self.now_ms()).max(0);
        Box::pin(tokio::time::sleep(Duration::from_millis(wait as u64)))
    }
}

pub fn system_now_ms() -> Millis {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as Millis)
        .unwrap_or(0)
}

/// A clock that moves only when told to. Sleepers wake when it is advanced past their deadline.
#[derive(Debug, Default)]
pub struct ManualClock {
    now: AtomicI64,
    moved: Notify,
}

impl ManualClock {
    pub fn new(start: Millis) -> Arc<Self> {
        Arc::new(Self {
            now: AtomicI64::new(start),
            moved: Notify::new(),
        })
    }

    pub fn advance(&self, by: Duration) {
        self.now
            .fetch_add(by.as_millis() as Millis, Ordering::SeqCst);
        self.moved.notify_waiters();
    }

    pub fn set(&self, to: Millis) {
        self.now.store(to, Ordering::SeqCst);
        self.moved.notify_waiters();
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> Millis {
        self.now.load(Ordering::SeqCst)
    }

    fn sleep_until(&self, deadline: Millis) -> futures_util::future::BoxFuture<'_, ()> {
        Box::pin(async move {
            loop {
                // Register interest before reading the time so an advance in between is not lost.
                let moved = self.moved.notified();
                if self.now_ms() >= deadline {
                    return;
                }
                moved.await;
            }
        })
    }
}

#[cfg(test)]
mod tests {
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
}
