//! `gleaner run`: the headless worker, how it stops on a signal, and what it says and exits
//! with when it ends.

use std::process::ExitCode;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use anyhow::Context as _;

use super::PolicyFlags;
use crate::engine::clock::{Clock, SystemClock};
use crate::engine::library::Library;
use crate::engine::queue::{Queue, StallKind};
use crate::engine::worker::{GaveUp, RunMode, Worker, WorkerError};

/// `run --until-idle`'s exit code when a problem of this machine's (a full disk) outlasted
/// its patience: not 1, which says some input was bad.
const STALLED_EXIT: u8 = 3;

/// How long a stopped run waits, once its jobs are handed back, for work off the async
/// runtime (a big page's extraction) that nothing needs any more.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// A signal that stops `gleaner run`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StopSignal {
    /// Ctrl+C.
    Interrupt,
    /// A service manager, `kill`.
    Terminate,
    /// The terminal closed.
    HangUp,
}

impl StopSignal {
    fn name(self) -> &'static str {
        match self {
            StopSignal::Interrupt => "SIGINT",
            StopSignal::Terminate => "SIGTERM",
            StopSignal::HangUp => "SIGHUP",
        }
    }

    /// What a shell reports for a process ended by this signal (128 + its number), so that
    /// `gleaner run --until-idle && gleaner export …` does not go on with half a library.
    fn exit_code(self) -> u8 {
        match self {
            StopSignal::HangUp => 129,
            StopSignal::Interrupt => 130,
            StopSignal::Terminate => 143,
        }
    }
}

pub(super) fn run_worker(
    store: Arc<dyn Queue>,
    data_dir: &std::path::Path,
    flags: PolicyFlags,
    until_idle: bool,
) -> anyhow::Result<ExitCode> {
    let stored = store.load_policy()?;
    let policy = flags.apply(stored.clone());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let queue = store.clone();
    let asked = store.clone();
    let stopped_by: Arc<OnceLock<StopSignal>> = Arc::new(OnceLock::new());
    let seen = stopped_by.clone();
    let code = runtime.block_on(async move {
        let library = Library::new(data_dir.join("library"));
        let worker = Worker::new(store.clone(), Arc::new(SystemClock), library, policy)?;
        // Settings saved in the window apply to this running worker too; flags still win.
        let follower = tokio::spawn(
            worker
                .clone()
                .follow_stored_policy(stored, move |p| flags.apply(p)),
        );
        let _watcher = worker
            .watch_queue()
            .map_err(|e| tracing::warn!(error = %e, "cannot watch the database; other processes' changes are picked up every 30 s"))
            .ok();
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let mut signals = Signals::new();
        tokio::spawn(async move {
            let first = signals.next().await;
            let _ = seen.set(first);
            tracing::info!(
                "stopping ({}): the fetches in flight go back to the queue with no retry spent; a second Ctrl+C leaves at once",
                first.name()
            );
            let _ = stop_tx.send(true);
            let second = signals.next().await;
            tracing::warn!(
                "stopping at once ({}): jobs still held go back to the queue when Gleaner next starts, each counting one interrupted attempt",
                second.name()
            );
            std::process::exit(i32::from(second.exit_code()));
        });
        let mode = if until_idle { RunMode::UntilIdle } else { RunMode::Forever };
        let summary = worker.run(mode, stop_rx).await;
        follower.abort();
        let summary = match summary {
            Err(WorkerError::Stalled(gave_up)) => {
                let waiting = asked.stats(SystemClock.now_ms()).map(|s| s.pending + s.running);
                eprintln!("{}", stalled_message(&gave_up, waiting.ok()));
                return Ok(ExitCode::from(STALLED_EXIT));
            }
            other => other?,
        };
        // What this run did; what still waits is read from the queue below, since a job
        // retried three times counted three retries here.
        tracing::info!(
            "run finished: {} done, {} dead, {} retries scheduled, {} interrupted attempts recovered",
            summary.done,
            summary.dead,
            summary.retried,
            summary.recovered
        );
        Ok::<_, anyhow::Error>(ExitCode::SUCCESS)
    });
    // An extraction still running off the runtime was cut short: its job is back in the queue.
    runtime.shutdown_timeout(SHUTDOWN_GRACE);
    let mut code = code?;
    // `--until-idle` stopped before the queue was idle did not finish what it was asked to.
    if until_idle && let Some(signal) = stopped_by.get() {
        code = ExitCode::from(signal.exit_code());
    }
    let left = queue.stats(SystemClock.now_ms())?;
    if left.pending > 0 {
        tracing::info!(
            "still pending: {} job{}, {} of them waiting to retry; the next `gleaner run` goes on with them",
            left.pending,
            if left.pending == 1 { "" } else { "s" },
            left.waiting
        );
    }
    Ok(code)
}

/// The signals that stop a run: Ctrl+C, SIGTERM, and SIGHUP (the terminal closed, which would
/// otherwise kill the process and spend a retry on every fetch in flight).
struct Signals {
    #[cfg(unix)]
    streams: Vec<(StopSignal, tokio::signal::unix::Signal)>,
}

impl Signals {
    /// Must be called inside the runtime: from here on these signals no longer end the process.
    fn new() -> Self {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            let streams = [
                (StopSignal::Interrupt, SignalKind::interrupt()),
                (StopSignal::Terminate, SignalKind::terminate()),
                (StopSignal::HangUp, SignalKind::hangup()),
            ]
            .into_iter()
            // Under `nohup` SIGHUP stays ignored: a handler would stop the run with the session.
            .filter(|(which, _)| {
                *which != StopSignal::HangUp || !crate::engine::hangup_is_ignored()
            })
            .filter_map(|(which, kind)| match signal(kind) {
                Ok(stream) => Some((which, stream)),
                Err(e) => {
                    tracing::warn!(error = %e, signal = which.name(), "cannot listen for a signal");
                    None
                }
            })
            .collect();
            Signals { streams }
        }
        #[cfg(not(unix))]
        Signals {}
    }

    /// The next stop signal.
    async fn next(&mut self) -> StopSignal {
        #[cfg(unix)]
        {
            if self.streams.is_empty() {
                return std::future::pending().await;
            }
            let waits = self
                .streams
                .iter_mut()
                .map(|(which, stream)| {
                    let which = *which;
                    Box::pin(async move {
                        stream.recv().await;
                        which
                    })
                })
                .collect::<Vec<_>>();
            futures_util::future::select_all(waits).await.0
        }
        #[cfg(not(unix))]
        {
            if tokio::signal::ctrl_c().await.is_err() {
                std::future::pending::<()>().await;
            }
            StopSignal::Interrupt
        }
    }
}

/// What `run --until-idle` says when it gives up on a stall: what is wrong, how long it
/// waited, whether anything was lost, and what to do.
fn stalled_message(gave_up: &GaveUp, waiting: Option<u64>) -> String {
    let stall = &gave_up.stall;
    let what_to_do = match stall.kind {
        StallKind::DiskFull => "Free some space on that disk, then run `gleaner run` again",
        StallKind::Library => "Make the library folder writable, then run `gleaner run` again",
        StallKind::Database => "Check the disk and the database file, then run `gleaner run` again",
    };
    let kept = match waiting {
        Some(n) => format!("{n} job{} wait in the queue", if n == 1 { "" } else { "s" }),
        None => "every job waits in the queue".to_string(),
    };
    let waited =
        crate::engine::policy::human_duration(Duration::from_secs(gave_up.waited.as_secs()));
    match &gave_up.held {
        None => format!(
            "Stopped: {} (for {waited}). Nothing was lost: {kept}, and no retry was spent on this. {what_to_do}; it goes on where it stopped.",
            stall.reason,
        ),
        Some(held) => {
            let jobs = match held.jobs {
                0 => "The jobs this run held".to_string(),
                1 => "1 job this run held".to_string(),
                n => format!("{n} jobs this run held"),
            };
            format!(
                "Stopped: {} (for {waited}). {jobs} could not be handed back to the queue ({}): the next `gleaner run` takes them up again, each counting one interrupted attempt. Nothing else was lost: {kept}. {what_to_do}; it goes on where it stopped.",
                stall.reason, held.error,
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::queue::StallState;
    use crate::engine::worker::StillHeld;

    fn gave_up(held: Option<StillHeld>) -> GaveUp {
        GaveUp {
            stall: StallState {
                kind: StallKind::Database,
                reason: "the database (/d/gleaner.db) cannot be used: database is locked".into(),
                since: 0,
                next_probe_at: 0,
                probes: 3,
                worker: "w".into(),
            },
            waited: Duration::from_millis(107_400),
            held,
        }
    }

    #[test]
    fn a_run_that_gave_up_says_whether_its_jobs_went_back_and_how_long_it_waited() {
        let back = stalled_message(&gave_up(None), Some(4));
        assert!(back.contains("(for 107 s)"), "the time it waited: {back}");
        assert!(back.contains("Nothing was lost"), "{back}");
        assert!(back.contains("no retry was spent"), "{back}");

        let held = stalled_message(
            &gave_up(Some(StillHeld {
                jobs: 2,
                error: "database is locked".into(),
            })),
            Some(4),
        );
        assert!(!held.contains("Nothing was lost"), "{held}");
        assert!(!held.contains("no retry was spent"), "{held}");
        assert!(
            held.contains("2 jobs this run held could not be handed back"),
            "{held}"
        );
        assert!(held.contains("one interrupted attempt"), "{held}");
        assert!(held.contains("database is locked"), "{held}");
    }

    #[test]
    fn a_signal_that_stops_a_run_gives_the_exit_code_a_shell_expects() {
        assert_eq!(StopSignal::Interrupt.exit_code(), 130);
        assert_eq!(StopSignal::Terminate.exit_code(), 143);
        assert_eq!(StopSignal::HangUp.exit_code(), 129);
    }
}
