//! The worker loop against the fault server, with an injected clock: backoff never blocks the
//! other jobs, and nothing sleeps through a real 60 s. Each test runs on every backend.

use std::time::{Duration, Instant};

use gleaner::engine::clock::{Clock, ManualClock};
use gleaner::engine::intake;
use gleaner::engine::library::Library;
use gleaner::engine::policy::Policy;
use gleaner::engine::queue::{Queue, Status};
use gleaner::engine::worker::{RunMode, Worker};
use gleaner_tests::Backend;
use gleaner_tests::server::{Behavior, FaultServer};

const T0: i64 = 1_800_000_000_000;

fn enqueue(store: &dyn Queue, urls: &[String], now: i64) -> Vec<i64> {
    let jobs: Vec<_> = intake::scan_args(urls)
        .iter()
        .filter_map(|f| f.as_new_job())
        .collect();
    assert_eq!(jobs.len(), urls.len());
    store
        .enqueue(None, &jobs, 5, now)
        .expect("enqueue")
        .into_iter()
        .map(|e| match e {
            gleaner::engine::queue::Enqueued::Queued { id, .. } => id,
            other => panic!("{other:?}"),
        })
        .collect()
}

async fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(15);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backing_off_job_does_not_block_the_others() {
    for backend in Backend::ALL {
        a_backing_off_job_does_not_block_the_others_on(backend).await;
    }
}

async fn a_backing_off_job_does_not_block_the_others_on(backend: Backend) {
    let server = FaultServer::start();
    let (dir, store) = backend.open();
    let clock = ManualClock::new(T0);
    let policy = Policy {
        base_delay: Duration::from_secs(60),
        jitter: 0.0,
        concurrency: 1,
        ..Policy::default()
    };
    // A fails once with a 500 (no host pause), then succeeds.
    server.script("/ok/a", vec![Behavior::Status(500)]);
    let a = enqueue(&*store, &[server.url("/ok/a")], T0)[0];
    let others: Vec<String> = (b'b'..=b'k')
        .map(|c| server.url(&format!("/ok/{}", c as char)))
        .collect();
    let other_ids = enqueue(&*store, &others, T0);

    let worker = Worker::new(
        store.clone(),
        clock.clone(),
        Library::new(dir.path().join("library")),
        policy,
    )
    .expect("worker");
    let (stop, stop_rx) = tokio::sync::watch::channel(false);
    let w = worker.clone();
    let run = tokio::spawn(async move { w.run(RunMode::Forever, stop_rx).await });

    // B..K all finish while A waits out its 60 s; the clock has not moved.
    wait_for("B..K done", || {
        other_ids
            .iter()
            .all(|&id| store.job(id).expect("job").expect("row").status == Status::Done)
    })
    .await;
    let job_a = store.job(a).expect("job").expect("row");
    assert_eq!(job_a.status, Status::Pending);
    assert_eq!(
        job_a.retry_after,
        Some(T0 + 60_000),
        "retry time is stored in the row"
    );
    assert_eq!(server.hits("/ok/a"), 1);
    for c in b'b'..=b'k' {
        assert_eq!(server.completions(&format!("/ok/{}", c as char)), 1);
    }

    // 59 s later: still not due.
    clock.advance(Duration::from_secs(59));
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        server.hits("/ok/a"),
        1,
        "A was fetched before its window passed"
    );

    // Past the window: the sleeping worker wakes and fetches A again.
    clock.advance(Duration::from_secs(1));
    wait_for("A done", || {
        store.job(a).expect("job").expect("row").status == Status::Done
    })
    .await;
    assert_eq!(server.hits("/ok/a"), 2);
    let history = store.attempts(a).expect("history");
    assert_eq!(history.len(), 2);
    assert_eq!(history[0].delay_ms, Some(60_000));
    assert_eq!(history[1].started_at, T0 + 60_000);
    assert_eq!(clock.now_ms(), T0 + 60_000);

    stop.send(true).expect("stop");
    run.await.expect("join").expect("run");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_limited_host_is_paused_for_every_job_on_it() {
    for backend in Backend::ALL {
        a_rate_limited_host_is_paused_for_every_job_on_it_on(backend).await;
    }
}

async fn a_rate_limited_host_is_paused_for_every_job_on_it_on(backend: Backend) {
    let server = FaultServer::start();
    let (dir, store) = backend.open();
    let clock = ManualClock::new(T0);
    let policy = Policy {
        jitter: 0.0,
        concurrency: 1,
        ..Policy::default()
    };
    server.script(
        "/ok/first",
        vec![Behavior::Respond {
            status: 429,
            headers: vec![("Retry-After".into(), "120".into())],
            body: Vec::new(),
        }],
    );
    let ids = enqueue(
        &*store,
        &[
            server.url("/ok/first"),
            server.url("/ok/second"),
            server.url("/ok/third"),
        ],
        T0,
    );
    let worker = Worker::new(
        store.clone(),
        clock.clone(),
        Library::new(dir.path().join("library")),
        policy,
    )
    .expect("worker");
    let (stop, stop_rx) = tokio::sync::watch::channel(false);
    let w = worker.clone();
    let run = tokio::spawn(async move { w.run(RunMode::Forever, stop_rx).await });

    wait_for("the 429", || server.hits("/ok/first") == 1).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        server.total_hits(),
        1,
        "no other job on the paused host started"
    );
    let stats = store.stats(clock.now_ms()).expect("stats");
    assert_eq!(stats.paused_hosts.len(), 1);
    assert_eq!(stats.paused_hosts[0].paused_until, Some(T0 + 120_000));

    clock.advance(Duration::from_secs(120));
    wait_for("all done", || {
        ids.iter()
            .all(|&id| store.job(id).expect("job").expect("row").status == Status::Done)
    })
    .await;
    let first = store.job(ids[0]).expect("job").expect("row");
    assert_eq!(first.attempts, 2);
    assert_eq!(first.counters.rate_limits, 1);
    stop.send(true).expect("stop");
    run.await.expect("join").expect("run");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn until_idle_returns_once_everything_is_settled() {
    for backend in Backend::ALL {
        until_idle_returns_once_everything_is_settled_on(backend).await;
    }
}

async fn until_idle_returns_once_everything_is_settled_on(backend: Backend) {
    let server = FaultServer::start();
    let (dir, store) = backend.open();
    let clock = ManualClock::new(T0);
    let ids = enqueue(
        &*store,
        &[server.url("/ok/1"), server.url("/status/404")],
        T0,
    );
    let worker = Worker::new(
        store.clone(),
        clock,
        Library::new(dir.path().join("library")),
        Policy::default(),
    )
    .expect("worker");
    let (_stop, stop_rx) = tokio::sync::watch::channel(false);
    let summary = tokio::time::timeout(
        Duration::from_secs(20),
        worker.run(RunMode::UntilIdle, stop_rx),
    )
    .await
    .expect("returned")
    .expect("run");
    assert_eq!((summary.done, summary.dead), (1, 1));
    let done = store.job(ids[0]).expect("job").expect("row");
    let doc = done.document.expect("document path");
    assert!(
        std::fs::read_to_string(doc)
            .expect("saved")
            .contains("Hello from 1")
    );
    assert_eq!(done.title.as_deref(), Some("OK 1"));
}

/// A job cancelled while its page is being fetched: the page saved for it belongs to no job, and
/// does not stay in the library.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_saved_for_a_job_cancelled_meanwhile_does_not_stay() {
    for backend in Backend::ALL {
        a_page_saved_for_a_job_cancelled_meanwhile_does_not_stay_on(backend).await;
    }
}

async fn a_page_saved_for_a_job_cancelled_meanwhile_does_not_stay_on(backend: Backend) {
    let server = FaultServer::start();
    let (dir, store) = backend.open();
    let clock = ManualClock::new(T0);
    server.script(
        "/ok/slow",
        vec![Behavior::Delay(
            Duration::from_millis(800),
            Box::new(Behavior::Ok),
        )],
    );
    let id = enqueue(&*store, &[server.url("/ok/slow")], T0)[0];
    let library = dir.path().join("library");
    let worker = Worker::new(
        store.clone(),
        clock.clone(),
        Library::new(&library),
        Policy::default(),
    )
    .expect("worker");
    let (stop, stop_rx) = tokio::sync::watch::channel(false);
    let w = worker.clone();
    let run = tokio::spawn(async move { w.run(RunMode::Forever, stop_rx).await });
    wait_for("the fetch", || server.hits("/ok/slow") == 1).await;
    store.cancel(&[id], clock.now_ms()).expect("cancel");
    wait_for("the page fetched", || server.completions("/ok/slow") == 1).await;
    // The page is saved, then its outcome committed as discarded (the file is written first).
    wait_for("the discarded outcome", || {
        store
            .attempts(id)
            .expect("history")
            .iter()
            .any(|a| a.outcome.as_deref() == Some("success_discarded"))
    })
    .await;
    let documents = || {
        walk(&library)
            .into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == "md"))
            .count()
    };
    wait_for("the page gone", || documents() == 0).await;
    assert_eq!(
        store.job(id).expect("job").expect("row").status,
        Status::Cancelled
    );
    stop.send(true).expect("stop");
    run.await.expect("join").expect("run");
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// A host this machine has no route to, among hosts that answer, is that host's trouble, not
/// the machine going offline: its jobs spend their retries and die, and the run ends. (One
/// host's failures once made the machine "offline", and its jobs were then tried for ever.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_out_of_reach_among_hosts_that_answer_is_not_the_machine_offline() {
    for backend in Backend::ALL {
        a_host_out_of_reach_among_hosts_that_answer_is_not_the_machine_offline_on(backend).await;
    }
}

async fn a_host_out_of_reach_among_hosts_that_answer_is_not_the_machine_offline_on(
    backend: Backend,
) {
    let server = FaultServer::start();
    let (dir, store) = backend.open();
    let clock = ManualClock::new(T0);
    let policy = Policy {
        base_delay: Duration::from_secs(10),
        jitter: 0.0,
        concurrency: 1,
        max_retries: 1,
        ..Policy::default()
    };
    // Linux refuses a TCP connection to a multicast address with ENETUNREACH, at once: a host
    // this machine has no route to.
    let unreachable: Vec<String> = (1..=3).map(|i| format!("http://224.0.0.1:9/{i}")).collect();
    let mut urls = vec![server.url("/ok/a")];
    urls.extend(unreachable);
    let ids = enqueue(&*store, &urls, T0);
    let (good, out_of_reach) = (ids[0], &ids[1..]);
    let worker = Worker::new(
        store.clone(),
        clock.clone(),
        Library::new(dir.path().join("library")),
        policy,
    )
    .expect("worker");
    let (stop, stop_rx) = tokio::sync::watch::channel(false);
    let w = worker.clone();
    let run = tokio::spawn(async move { w.run(RunMode::Forever, stop_rx).await });

    let job = |id| store.job(id).expect("job").expect("row");
    wait_for("the first round", || {
        job(good).status == Status::Done
            && out_of_reach
                .iter()
                .all(|&id| job(id).status == Status::Pending && job(id).retries_used == 1)
    })
    .await;
    assert!(store.offline().expect("offline").is_none());
    clock.advance(Duration::from_secs(10));
    wait_for("the unreachable host's jobs dead", || {
        out_of_reach
            .iter()
            .all(|&id| job(id).status == Status::Dead)
    })
    .await;
    assert!(store.offline().expect("offline").is_none());
    let dead = job(out_of_reach[0]);
    assert!(
        dead.error
            .as_deref()
            .is_some_and(|e| e.contains("no route to 224.0.0.1")),
        "{dead:?}"
    );
    stop.send(true).expect("stop");
    run.await.expect("join").expect("run");
}
