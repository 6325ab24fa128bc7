//! Claiming under real time: two workers in one process, per-host connection limits, and a
//! host-wide pause after a rate-limit response, observed from the server's side. Each test
//! runs on every backend.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use gleaner::engine::clock::SystemClock;
use gleaner::engine::intake;
use gleaner::engine::library::Library;
use gleaner::engine::policy::Policy;
use gleaner::engine::queue::{Queue, Status};
use gleaner::engine::worker::{RunMode, Worker};
use gleaner_tests::Backend;
use gleaner_tests::server::{Behavior, FaultServer};

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

fn enqueue(store: &dyn Queue, urls: &[String]) {
    let jobs: Vec<_> = intake::scan_args(urls)
        .iter()
        .filter_map(|f| f.as_new_job())
        .collect();
    assert_eq!(jobs.len(), urls.len());
    store.enqueue(None, &jobs, 5, now_ms()).expect("enqueue");
}

fn worker(store: Arc<dyn Queue>, dir: &std::path::Path, policy: Policy) -> Arc<Worker> {
    Worker::new(
        store,
        Arc::new(SystemClock),
        Library::new(dir.join("library")),
        policy,
    )
    .expect("worker")
}

/// Start a worker's `--until-idle` loop in the background.
fn spawn_until_idle(
    w: &Arc<Worker>,
) -> tokio::task::JoinHandle<
    Result<gleaner::engine::worker::RunSummary, gleaner::engine::worker::WorkerError>,
> {
    let w = w.clone();
    tokio::spawn(async move {
        let (_stop, rx) = tokio::sync::watch::channel(false);
        w.run(RunMode::UntilIdle, rx).await
    })
}

/// Wait for a background loop to finish, within `secs`.
async fn finish(
    run: tokio::task::JoinHandle<
        Result<gleaner::engine::worker::RunSummary, gleaner::engine::worker::WorkerError>,
    >,
    secs: u64,
) {
    tokio::time::timeout(Duration::from_secs(secs), run)
        .await
        .expect("drained in time")
        .expect("join")
        .expect("run");
}

async fn drain(workers: &[Arc<Worker>]) {
    let runs: Vec<_> = workers.iter().map(spawn_until_idle).collect();
    for r in runs {
        finish(r, 60).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_workers_in_one_process_never_share_a_job() {
    for backend in Backend::ALL {
        two_workers_in_one_process_never_share_a_job_on(backend).await;
    }
}

async fn two_workers_in_one_process_never_share_a_job_on(backend: Backend) {
    let server = FaultServer::start();
    let (dir, a, b) = backend.open_twice();
    let urls: Vec<String> = (0..400).map(|i| server.url(&format!("/ok/{i}"))).collect();
    enqueue(&*a, &urls);
    let policy = Policy {
        concurrency: 4,
        per_host: 8,
        ..Policy::default()
    };
    let wa = worker(a.clone(), dir.path(), policy.clone());
    let wb = worker(b, dir.path(), policy);
    // As `gleaner run` does: each hears the other's changes instead of waiting out the 30 s fallback.
    let _watching = (
        wa.watch_queue().expect("watch"),
        wb.watch_queue().expect("watch"),
    );
    drain(&[wa.clone(), wb.clone()]).await;
    assert_eq!(server.total_hits(), 400);
    for i in 0..400 {
        assert_eq!(server.completions(&format!("/ok/{i}")), 1);
    }
    assert_eq!(a.stats(now_ms()).expect("stats").done, 400);
    let workers: Vec<Option<String>> = a
        .list_jobs(&Default::default())
        .expect("jobs")
        .iter()
        .flat_map(|j| a.attempts(j.id).expect("attempts"))
        .map(|attempt| attempt.worker)
        .collect();
    let share = |owner: &str| {
        workers
            .iter()
            .filter(|w| w.as_deref() == Some(owner))
            .count()
    };
    assert!(
        share(wa.owner()) > 0 && share(wb.owner()) > 0,
        "both workers took jobs"
    );
    assert_eq!(share(wa.owner()) + share(wb.owner()), 400);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_most_per_host_connections_while_other_hosts_proceed() {
    for backend in Backend::ALL {
        at_most_per_host_connections_while_other_hosts_proceed_on(backend).await;
    }
}

async fn at_most_per_host_connections_while_other_hosts_proceed_on(backend: Backend) {
    let slow = FaultServer::start();
    let other = FaultServer::start_on("127.0.0.2");
    let (dir, store) = backend.open();
    let slow_urls: Vec<String> = (0..40)
        .map(|i| slow.url(&format!("/hold/300/{i}")))
        .collect();
    let other_urls: Vec<String> = (0..10).map(|i| other.url(&format!("/ok/{i}"))).collect();
    enqueue(&*store, &slow_urls);
    enqueue(&*store, &other_urls);
    let w = worker(
        store.clone(),
        dir.path(),
        Policy {
            concurrency: 4,
            per_host: 2,
            ..Policy::default()
        },
    );
    let started = Instant::now();
    let run = spawn_until_idle(&w);
    // The other host's jobs finish while the slow host still has most of its 40 to go.
    while other.completions_prefix("/ok/") < 10 {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "other host starved"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        slow.completions_prefix("/hold/") < 20,
        "other host waited behind the slow one"
    );
    finish(run, 60).await;
    assert_eq!(slow.completions_prefix("/hold/"), 40);
    assert_eq!(
        slow.max_concurrent(),
        2,
        "never more than --per-host connections to one host"
    );
    // 40 × 300 ms at 2 at a time is 6 s; a limit of 1 would take 12 s.
    eprintln!("slow host drained in {:?}", started.elapsed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_503_with_retry_after_pauses_the_whole_host() {
    for backend in Backend::ALL {
        a_503_with_retry_after_pauses_the_whole_host_on(backend).await;
    }
}

async fn a_503_with_retry_after_pauses_the_whole_host_on(backend: Backend) {
    let server = FaultServer::start();
    let (dir, store) = backend.open();
    server.script(
        "/ok/0",
        vec![Behavior::Respond {
            status: 503,
            headers: vec![("Retry-After".into(), "2".into())],
            body: Vec::new(),
        }],
    );
    let urls: Vec<String> = (0..10).map(|i| server.url(&format!("/ok/{i}"))).collect();
    enqueue(&*store, &urls);
    let policy = Policy {
        base_delay: Duration::from_millis(100),
        concurrency: 1,
        ..Policy::default()
    };
    let w = worker(store.clone(), dir.path(), policy);
    drain(&[w]).await;
    let times = server.request_times("/ok/");
    assert_eq!(times.len(), 11, "10 jobs, one of them twice");
    let first = times[0];
    for t in &times[1..] {
        let gap = t.duration_since(first).unwrap_or_default();
        assert!(
            gap >= Duration::from_millis(1990),
            "a request came {gap:?} after the 503, inside the 2 s pause"
        );
    }
    let job0 = store
        .list_jobs(&Default::default())
        .expect("list")
        .into_iter()
        .find(|j| j.url.ends_with("/ok/0"))
        .expect("job");
    assert_eq!(job0.status, Status::Done);
    assert_eq!(job0.counters.rate_limits, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_small_batch_is_not_stuck_behind_a_big_one() {
    for backend in Backend::ALL {
        a_small_batch_is_not_stuck_behind_a_big_one_on(backend).await;
    }
}

async fn a_small_batch_is_not_stuck_behind_a_big_one_on(backend: Backend) {
    let server = FaultServer::start();
    let (dir, store) = backend.open();
    let big: Vec<String> = (0..1000)
        .map(|i| server.url(&format!("/ok/a{i}")))
        .collect();
    let small: Vec<String> = (0..5).map(|i| server.url(&format!("/ok/b{i}"))).collect();
    for (name, urls) in [("big", &big), ("small", &small)] {
        let batch = store.create_batch(name, "cli", now_ms()).expect("batch");
        let jobs: Vec<_> = intake::scan_args(urls)
            .iter()
            .filter_map(|f| f.as_new_job())
            .collect();
        store
            .enqueue(Some(batch), &jobs, 5, now_ms())
            .expect("enqueue");
    }
    let w = worker(
        store.clone(),
        dir.path(),
        Policy {
            concurrency: 4,
            per_host: 4,
            ..Policy::default()
        },
    );
    let run = spawn_until_idle(&w);
    let deadline = Instant::now() + Duration::from_secs(30);
    while server.completions_prefix("/ok/b") < 5 {
        assert!(Instant::now() < deadline, "the small batch never finished");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let big_done_when_small_finished = server.completions_prefix("/ok/a");
    assert!(
        big_done_when_small_finished < 50,
        "the big batch had {big_done_when_small_finished} jobs done before the small one finished"
    );
    finish(run, 120).await;
    assert_eq!(server.completions_prefix("/ok/a"), 1000);
}
