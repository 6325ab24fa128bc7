//! Sleep and clock jumps, driven by the injected clock: the wall clock moved while the boot
//! clock is not (somebody set the clock), against the real worker and the fault server.

use std::sync::Arc;
use std::time::{Duration, Instant};

use gleaner::engine::clock::{Clock, ManualClock};
use gleaner::engine::intake;
use gleaner::engine::library::Library;
use gleaner::engine::policy::Policy;
use gleaner::engine::queue::{Enqueued, Status};
use gleaner::engine::sqlite::Store;
use gleaner::engine::worker::{RunMode, Worker, liveness};
use gleaner_tests::server::{Behavior, FaultServer};

const T0: i64 = 1_800_000_000_000;
const HOUR: i64 = 3_600_000;

fn enqueue(store: &Store, url: &str, now: i64) -> i64 {
    let jobs: Vec<_> = intake::scan_args(&[url.to_string()])
        .iter()
        .filter_map(|f| f.as_new_job())
        .collect();
    match store
        .enqueue(None, &jobs, 5, now)
        .expect("enqueue")
        .as_slice()
    {
        [Enqueued::Queued { id, .. }] => *id,
        other => panic!("{other:?}"),
    }
}

async fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(15);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn rate_limit(retry_after: &str) -> Behavior {
    Behavior::Respond {
        status: 429,
        headers: vec![("Retry-After".into(), retry_after.into())],
        body: Vec::new(),
    }
}

struct Running {
    store: Arc<Store>,
    clock: Arc<ManualClock>,
    worker: Arc<Worker>,
    stop: tokio::sync::watch::Sender<bool>,
    run: tokio::task::JoinHandle<()>,
    _dir: tempfile::TempDir,
}

fn start(policy: Policy, jobs: &[String]) -> (Running, Vec<i64>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Arc::new(Store::open(&dir.path().join("gleaner.db")).expect("store"));
    let clock = ManualClock::new(T0);
    let ids = jobs.iter().map(|u| enqueue(&store, u, T0)).collect();
    let worker = Worker::new(
        store.clone(),
        clock.clone(),
        Library::new(dir.path().join("library")),
        policy,
    )
    .expect("worker");
    let (stop, stop_rx) = tokio::sync::watch::channel(false);
    let w = worker.clone();
    let run = tokio::spawn(async move {
        w.run(RunMode::Forever, stop_rx).await.expect("run");
    });
    (
        Running {
            store,
            clock,
            worker,
            stop,
            run,
            _dir: dir,
        },
        ids,
    )
}

impl Running {
    fn status(&self, id: i64) -> Status {
        self.store.job(id).expect("job").expect("row").status
    }

    async fn stop(self) {
        self.stop.send(true).expect("stop");
        self.run.await.expect("join");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clock_set_back_an_hour_does_not_hold_a_two_second_retry_after_for_an_hour() {
    let server = FaultServer::start();
    server.script("/ok/slow", vec![rate_limit("2")]);
    let policy = Policy {
        base_delay: Duration::from_secs(1),
        jitter: 0.0,
        ..Policy::default()
    };
    let (w, ids) = start(policy, &[server.url("/ok/slow")]);
    wait_for("the rate limit", || {
        w.store.job(ids[0]).expect("job").expect("row").attempts == 1
            && w.status(ids[0]) == Status::Pending
    })
    .await;
    // NTP (or a dual-boot RTC) sets the clock back an hour while the host waits.
    w.clock.jump_wall(-HOUR);
    w.clock.advance(Duration::from_millis(1_500));
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(server.hits("/ok/slow"), 1, "the host's pause was cut short");
    w.clock.advance(Duration::from_millis(600));
    wait_for("the retry, two seconds after the rate limit", || {
        w.status(ids[0]) == Status::Done
    })
    .await;
    assert_eq!(server.hits("/ok/slow"), 2);
    w.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fetch_in_flight_when_the_clock_jumps_forward_is_not_taken_from_its_live_worker() {
    let server = FaultServer::start();
    server.script(
        "/ok/held",
        vec![Behavior::Delay(
            Duration::from_millis(800),
            Box::new(Behavior::Ok),
        )],
    );
    let (w, ids) = start(Policy::default(), &[server.url("/ok/held")]);
    wait_for("the fetch in flight", || {
        w.status(ids[0]) == Status::Running
    })
    .await;
    // The lid opens two hours later: every lease has expired by the wall clock. Another
    // process on this machine (here: its own store) looks for jobs to recover.
    w.clock.jump_wall(2 * HOUR);
    let other = Store::open(w.store.path().expect("file")).expect("second store");
    let recovered = other
        .recover(&Policy::default(), w.clock.now_ms(), |o| {
            liveness(o, "pid-1-other")
        })
        .expect("recover");
    assert!(
        recovered.is_empty(),
        "a live worker's job was taken: {recovered:?}"
    );
    wait_for("the fetch to finish", || w.status(ids[0]) == Status::Done).await;
    let history = w.store.attempts(ids[0]).expect("history");
    assert_eq!(history.len(), 1, "fetched once, not twice: {history:?}");
    assert_eq!(history[0].outcome.as_deref(), Some("success"));
    assert_eq!(server.hits("/ok/held"), 1);
    w.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clock_set_forward_does_not_age_a_rate_limited_job_to_death() {
    let server = FaultServer::start();
    server.script("/ok/limited", vec![rate_limit("60"), rate_limit("60")]);
    let policy = Policy {
        base_delay: Duration::from_secs(1),
        jitter: 0.0,
        max_job_age: Duration::from_secs(3600),
        ..Policy::default()
    };
    let (w, ids) = start(policy, &[server.url("/ok/limited")]);
    // Committed, not only claimed: a jump before the 429 is recorded would move the minute
    // it asks for past the clock's later advance (a race that loaded machines lost).
    wait_for("the rate limit", || {
        let job = w.store.job(ids[0]).expect("job").expect("row");
        job.attempts == 1 && job.status == Status::Pending
    })
    .await;
    // Set forward past the job's whole age budget, then the minute the site asked for.
    w.clock.jump_wall(25 * HOUR);
    w.clock.advance(Duration::from_secs(61));
    wait_for("the second rate limit", || {
        w.store.job(ids[0]).expect("job").expect("row").attempts == 2
            && w.status(ids[0]) != Status::Running
    })
    .await;
    let job = w.store.job(ids[0]).expect("job").expect("row");
    assert_eq!(
        job.status,
        Status::Pending,
        "it died of age: {:?}",
        job.error
    );
    w.clock.advance(Duration::from_secs(61));
    wait_for("the third try", || w.status(ids[0]) == Status::Done).await;
    assert!(w.worker.stalled().is_none());
    w.stop().await;
}

/// The lid closes during a fetch and its connection dies with the sleep: that is the machine's
/// doing, not the site's, and spends no retry.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fetch_cut_by_a_suspend_spends_no_retry() {
    let server = FaultServer::start();
    server.script(
        "/ok/lid",
        vec![Behavior::Delay(
            Duration::from_millis(600),
            Box::new(Behavior::CloseBeforeHeaders),
        )],
    );
    let (w, ids) = start(Policy::default(), &[server.url("/ok/lid")]);
    wait_for("the fetch in flight", || server.hits("/ok/lid") == 1).await;
    w.clock.suspend(Duration::from_secs(20 * 60));
    wait_for("the fetch again, after the wake", || {
        w.status(ids[0]) == Status::Done
    })
    .await;
    let job = w.store.job(ids[0]).expect("job").expect("row");
    assert_eq!(job.retries_used, 0, "{:?}", job);
    let history = w.store.attempts(ids[0]).expect("history");
    assert!(
        history[0]
            .error
            .as_deref()
            .is_some_and(|e| e.contains("the computer slept")),
        "{history:?}"
    );
    w.stop().await;
}
