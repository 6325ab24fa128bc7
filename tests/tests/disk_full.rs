//! A full disk is nobody's fault on the web: no retry is spent, no job dies, the queue waits
//! for space and goes on by itself. On a real small tmpfs (the tests run as root, as CI does).
//! A database that errors for another reason stalls the queue the same way.

use std::sync::Arc;
use std::time::{Duration, Instant};

use gleaner::engine::clock::ManualClock;
use gleaner::engine::intake;
use gleaner::engine::library::Library;
use gleaner::engine::policy::Policy;
use gleaner::engine::queue::{Enqueued, StallKind, Status};
use gleaner::engine::sqlite::Store;
use gleaner::engine::worker::{RunMode, Worker};
use gleaner_tests::server::FaultServer;
use gleaner_tests::{Sandbox, Tmpfs, stderr};

const T0: i64 = 1_800_000_000_000;

fn enqueue_all(store: &Store, urls: &[String]) -> Vec<i64> {
    let jobs: Vec<_> = intake::scan_args(urls)
        .iter()
        .filter_map(|f| f.as_new_job())
        .collect();
    store
        .enqueue(None, &jobs, 5, T0)
        .expect("enqueue")
        .into_iter()
        .map(|e| match e {
            Enqueued::Queued { id, .. } => id,
            other => panic!("{other:?}"),
        })
        .collect()
}

async fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_library_disk_stalls_the_queue_without_spending_a_retry_and_it_resumes_by_itself() {
    let server = FaultServer::start();
    let disk = Tmpfs::mount("1m");
    let filler = disk.fill();
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Arc::new(Store::open(&dir.path().join("gleaner.db")).expect("store"));
    let urls: Vec<String> = (0..12)
        .map(|n| server.url(&format!("/article?kb=20&n={n}")))
        .collect();
    let ids = enqueue_all(&store, &urls);
    let clock = ManualClock::new(T0);
    let worker = Worker::new(
        store.clone(),
        clock.clone(),
        Library::new(disk.path().join("library")),
        Policy::default(),
    )
    .expect("worker");
    let (stop, stop_rx) = tokio::sync::watch::channel(false);
    let w = worker.clone();
    let run = tokio::spawn(async move { w.run(RunMode::Forever, stop_rx).await });

    wait_for("the stall", || {
        worker
            .stalled()
            .is_some_and(|s| s.kind == StallKind::DiskFull)
    })
    .await;
    let stall = worker.stalled().expect("stalled");
    assert!(stall.reason.contains("is full"), "{}", stall.reason);
    assert!(
        stall.reason.contains(&disk.path().display().to_string()),
        "says which disk: {}",
        stall.reason
    );
    // The jobs it held are back in the queue at once, with their budgets whole.
    wait_for("the held jobs back", || {
        store.stats(T0).expect("stats").running == 0
    })
    .await;
    let stats = store.stats(T0).expect("stats");
    assert_eq!((stats.dead, stats.done), (0, 0));
    assert_eq!(
        stats.stalled.map(|s| s.kind),
        Some(StallKind::DiskFull),
        "recorded for `stats` and other windows"
    );
    let mut locals = 0;
    for &id in &ids {
        let job = store.job(id).expect("job").expect("row");
        assert_eq!(
            job.retries_used, 0,
            "job {id} spent a retry: {:?}",
            job.error
        );
        locals += store
            .attempts(id)
            .expect("history")
            .iter()
            .filter(|a| a.outcome.as_deref() == Some("local"))
            .count();
    }
    assert!(locals >= 1, "the attempt is recorded as this machine's");
    let hits_while_full = server.hits_prefix("/article");
    // It probes, cheaply, and does not fetch while the disk is full.
    for _ in 0..3 {
        clock.advance(Duration::from_secs(10));
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(server.hits_prefix("/article"), hits_while_full);

    // Space comes back: the queue goes on with no restart.
    std::fs::remove_file(&filler).expect("free the disk");
    let freed = Instant::now();
    wait_for("every job done", || {
        clock.advance(Duration::from_secs(1));
        store.stats(T0).expect("stats").done == ids.len() as u64
    })
    .await;
    eprintln!(
        "resumed and drained in {:?} after the space came back",
        freed.elapsed()
    );
    for &id in &ids {
        let job = store.job(id).expect("job").expect("row");
        assert_eq!((job.status, job.retries_used), (Status::Done, 0));
    }
    assert!(worker.stalled().is_none());
    assert!(store.stalled().expect("stalled").is_none(), "cleared");
    stop.send(true).expect("stop");
    run.await.expect("join").expect("run");
}

/// A disk with some room left, but less than a page needs: the stall waits for the room that
/// page needs, instead of clearing on a small probe and fetching the page again every second.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disk_with_less_room_than_a_page_needs_stays_paused_without_fetching_it_again() {
    let server = FaultServer::start();
    let disk = Tmpfs::mount("4m");
    let filler = disk.path().join("filler");
    std::fs::write(&filler, vec![0u8; 2_300_000]).expect("fill most of the disk");
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Arc::new(Store::open(&dir.path().join("gleaner.db")).expect("store"));
    let ids = enqueue_all(&store, &[server.url("/article?kb=2500")]);
    let clock = ManualClock::new(T0);
    let worker = Worker::new(
        store.clone(),
        clock.clone(),
        Library::new(disk.path().join("library")),
        Policy::default(),
    )
    .expect("worker");
    let (stop, stop_rx) = tokio::sync::watch::channel(false);
    let w = worker.clone();
    let run = tokio::spawn(async move { w.run(RunMode::Forever, stop_rx).await });
    wait_for("the stall", || {
        worker
            .stalled()
            .is_some_and(|s| s.kind == StallKind::DiskFull)
    })
    .await;
    // More than a megabyte is free, which a small probe would take for room enough.
    for _ in 0..6 {
        clock.advance(Duration::from_secs(10));
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    assert_eq!(
        server.hits_prefix("/article"),
        1,
        "the page is not fetched again while it cannot be saved"
    );
    assert!(worker.stalled().is_some(), "still paused");
    std::fs::remove_file(&filler).expect("free the disk");
    wait_for("the job done", || {
        clock.advance(Duration::from_secs(1));
        store.stats(T0).expect("stats").done == 1
    })
    .await;
    let job = store.job(ids[0]).expect("job").expect("row");
    assert_eq!((job.status, job.retries_used), (Status::Done, 0));
    stop.send(true).expect("stop");
    run.await.expect("join").expect("run");
}

/// `gleaner run --until-idle` on a data folder whose disk fills up mid-run and stays full:
/// it exits non-zero within a minute saying what is full and that nothing was lost; with
/// space back, the next run finishes every job, none dead and no retry spent.
#[test]
fn run_until_idle_on_a_disk_that_stays_full_says_so_and_loses_nothing() {
    let server = FaultServer::start();
    let disk = Tmpfs::mount("4m");
    let sandbox = Sandbox::new();
    let data = disk.path().join("data");
    let urls: Vec<String> = (0..60)
        .map(|n| server.url(&format!("/article?kb=64&n={n}")))
        .collect();
    let mut add = sandbox.cmd();
    add.env("GLEANER_DATA_DIR", &data).arg("add").args(&urls);
    let added = add.output().expect("add");
    assert!(added.status.success(), "{}", stderr(&added));

    let mut run = sandbox.cmd();
    run.env("GLEANER_DATA_DIR", &data)
        .args(["--concurrency", "2", "run", "--until-idle"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let started = Instant::now();
    let child = run.spawn().expect("run");
    // Let it save a few, then fill the disk under it.
    let db = rusqlite::Connection::open(data.join("gleaner.db")).expect("db");
    db.busy_timeout(Duration::from_secs(10)).expect("timeout");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let done: i64 = db
            .query_row("SELECT count(*) FROM jobs WHERE status = 'done'", [], |r| {
                r.get(0)
            })
            .expect("count");
        if done >= 3 {
            break;
        }
        assert!(Instant::now() < deadline, "nothing was saved");
        std::thread::sleep(Duration::from_millis(20));
    }
    let filler = disk.fill();
    let out = child.wait_with_output().expect("wait");
    let took = started.elapsed();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(took < Duration::from_secs(60), "took {took:?}");
    assert!(err.contains("is full"), "says what is full: {err}");
    assert!(err.contains(&disk.path().display().to_string()), "{err}");
    assert!(err.contains("Nothing was lost"), "{err}");
    assert!(err.contains("Free some space"), "says what to do: {err}");

    let (dead, spent, running): (i64, i64, i64) = db
        .query_row(
            "SELECT sum(status = 'dead'), sum(net_failures + server_failures), \
                 sum(status = 'running') FROM jobs",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .expect("counts");
    assert_eq!(
        (dead, spent, running),
        (0, 0, 0),
        "dead, retries spent, still held"
    );

    std::fs::remove_file(filler).expect("free");
    disk.resize("64m");
    let mut again = sandbox.cmd();
    again
        .env("GLEANER_DATA_DIR", &data)
        .args(["run", "--until-idle"]);
    let out = again.output().expect("run again");
    assert!(out.status.success(), "{}", stderr(&out));
    let (done, dead, spent): (i64, i64, i64) = db
        .query_row(
            "SELECT sum(status = 'done'), sum(status = 'dead'), sum(net_failures + server_failures) FROM jobs",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .expect("counts");
    assert_eq!((done, dead, spent), (60, 0, 0));
    // The stall the first run left behind is not shown for good.
    let mut stats = sandbox.cmd();
    stats
        .env("GLEANER_DATA_DIR", &data)
        .args(["stats", "--json"]);
    let stats: serde_json::Value =
        serde_json::from_slice(&stats.output().expect("stats").stdout).expect("JSON");
    assert!(stats["stalled"].is_null(), "{stats}");
}

/// The queue's table goes missing under a running worker (as a damaged or half-restored
/// database would look): the worker stalls with the database's own words, probes, and goes on
/// by itself once the table is back, with no job dead and no retry spent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_error_stalls_the_worker_with_its_reason_until_it_clears() {
    let server = FaultServer::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("gleaner.db");
    let store = Arc::new(Store::open(&path).expect("store"));
    let clock = ManualClock::new(T0);
    let worker = Worker::new(
        store.clone(),
        clock.clone(),
        Library::new(dir.path().join("library")),
        Policy::default(),
    )
    .expect("worker");
    let (stop, stop_rx) = tokio::sync::watch::channel(false);
    let w = worker.clone();
    let run = tokio::spawn(async move { w.run(RunMode::Forever, stop_rx).await });
    let other = rusqlite::Connection::open(&path).expect("second connection");
    other
        .busy_timeout(Duration::from_secs(10))
        .expect("timeout");
    other
        .execute_batch("ALTER TABLE jobs RENAME TO jobs_away")
        .expect("hide the jobs");
    worker.wake();
    wait_for("the stall", || worker.stalled().is_some()).await;
    let stall = worker.stalled().expect("stalled");
    assert_eq!(stall.kind, StallKind::Database);
    assert!(stall.reason.contains("no such table"), "{}", stall.reason);
    assert!(
        stall.reason.contains(&path.display().to_string()),
        "{}",
        stall.reason
    );
    // Probes that pass the write but not the queue keep it stalled, backing off. (Each probe
    // writes and syncs a file: on a loaded machine one may take longer than a fixed pause.)
    wait_for("two probes", || {
        clock.advance(Duration::from_secs(5));
        let stall = worker.stalled();
        assert!(stall.is_some(), "cleared while the table is gone");
        stall.is_some_and(|s| s.probes >= 2)
    })
    .await;
    // The wall clock set back an hour (a sync, a correction) does not hold the next probe back
    // by as much: it comes within the longest wait, on time that passes.
    clock.jump_wall(-3_600_000);
    let probes = worker.stalled().expect("stalled").probes;
    wait_for("a probe after the clock went back", || {
        clock.advance(Duration::from_secs(1));
        worker.stalled().is_some_and(|s| s.probes > probes)
    })
    .await;

    other
        .execute_batch("ALTER TABLE jobs_away RENAME TO jobs")
        .expect("restore the jobs");
    let urls: Vec<String> = (0..5).map(|n| server.url(&format!("/ok/db-{n}"))).collect();
    let ids = enqueue_all(&store, &urls);
    wait_for("every job done", || {
        clock.advance(Duration::from_secs(1));
        worker.wake();
        store.stats(T0).expect("stats").done == ids.len() as u64
    })
    .await;
    assert!(worker.stalled().is_none());
    for &id in &ids {
        let job = store.job(id).expect("job").expect("row");
        assert_eq!((job.status, job.retries_used), (Status::Done, 0));
    }
    stop.send(true).expect("stop");
    run.await.expect("join").expect("run");
}

/// The data folder moved (or removed) under a running worker: its connection would go on
/// writing a file nobody sees, so it stalls saying so, and goes on once the folder is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_moved_away_under_the_worker_stalls_it_until_it_is_back() {
    let server = FaultServer::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).expect("data folder");
    let store = Arc::new(Store::open(&data.join("gleaner.db")).expect("store"));
    let clock = ManualClock::new(T0);
    let worker = Worker::new(
        store.clone(),
        clock.clone(),
        Library::new(data.join("library")),
        Policy::default(),
    )
    .expect("worker");
    let (stop, stop_rx) = tokio::sync::watch::channel(false);
    let w = worker.clone();
    let run = tokio::spawn(async move { w.run(RunMode::Forever, stop_rx).await });
    let first = enqueue_all(&store, &[server.url("/ok/before")]);
    worker.wake();
    wait_for("the first job", || {
        store.stats(T0).expect("stats").done == 1
    })
    .await;

    let away = dir.path().join("moved");
    std::fs::rename(&data, &away).expect("move the data folder");
    wait_for("the stall", || {
        clock.advance(Duration::from_secs(1));
        worker.wake();
        worker.stalled().is_some()
    })
    .await;
    let stall = worker.stalled().expect("stalled");
    assert_eq!(stall.kind, StallKind::Database);
    assert!(
        stall.reason.contains("removed or replaced"),
        "{}",
        stall.reason
    );
    let later = enqueue_all(&store, &[server.url("/ok/after")]);
    for _ in 0..3 {
        clock.advance(Duration::from_secs(5));
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        server.hits("/ok/after"),
        0,
        "nothing starts while it is away"
    );

    std::fs::rename(&away, &data).expect("put it back");
    wait_for("the job queued meanwhile, done", || {
        clock.advance(Duration::from_secs(1));
        worker.wake();
        store.job(later[0]).expect("job").expect("row").status == Status::Done
    })
    .await;
    assert!(worker.stalled().is_none());
    assert_eq!(first.len(), 1);
    stop.send(true).expect("stop");
    run.await.expect("join").expect("run");
}

/// `run --until-idle` giving up on a stall hands its jobs back, unspent, even when the
/// database refuses that at first (another program holding it, a table away): it tries again
/// until it can, and says how long it waited. A hand-back tried once left the job held, to be
/// recovered by the next run as an interrupted attempt, while it said nothing was lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_giving_up_on_a_stall_keeps_trying_to_hand_its_jobs_back() {
    use gleaner::engine::worker::WorkerError;
    let server = FaultServer::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("gleaner.db");
    let store = Arc::new(Store::open(&path).expect("store"));
    let ids = enqueue_all(&store, &[server.url("/hold/1500/held")]);
    let clock = ManualClock::new(T0);
    let worker = Worker::new(
        store.clone(),
        clock.clone(),
        Library::new(dir.path().join("library")),
        Policy::default(),
    )
    .expect("worker");
    let (_stop, stop_rx) = tokio::sync::watch::channel(false);
    let w = worker.clone();
    let run = tokio::spawn(async move { w.run(RunMode::UntilIdle, stop_rx).await });
    wait_for("the fetch under way", || server.hits_prefix("/hold/") == 1).await;
    // The table goes away while the page is fetched: its outcome cannot be recorded.
    let other = rusqlite::Connection::open(&path).expect("second connection");
    other
        .busy_timeout(Duration::from_secs(10))
        .expect("timeout");
    other
        .execute_batch("ALTER TABLE jobs RENAME TO jobs_away")
        .expect("hide the jobs");
    wait_for("the stall", || worker.stalled().is_some()).await;
    // Past the patience: the run gives up, and its first hand-back fails.
    clock.advance(Duration::from_secs(50));
    tokio::time::sleep(Duration::from_millis(500)).await;
    other
        .execute_batch("ALTER TABLE jobs_away RENAME TO jobs")
        .expect("restore the jobs");
    let deadline = Instant::now() + Duration::from_secs(20);
    while !run.is_finished() {
        assert!(Instant::now() < deadline, "the run never gave up");
        clock.advance(Duration::from_secs(1));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let gave_up = match run.await.expect("join") {
        Err(WorkerError::Stalled(g)) => g,
        other => panic!("{other:?}"),
    };
    assert!(gave_up.held.is_none(), "{:?}", gave_up.held);
    assert!(gave_up.waited >= Duration::from_secs(50), "{gave_up:?}");
    let job = store.job(ids[0]).expect("job").expect("row");
    assert_eq!(
        (job.status, job.retries_used),
        (Status::Pending, 0),
        "handed back unspent"
    );
}
