use super::*;
use crate::engine::clock::ManualClock;
use crate::engine::sqlite::Store;

fn worker(dir: &std::path::Path) -> Arc<Worker> {
    let store: Arc<dyn Queue> = Arc::new(Store::open_in_memory().expect("store"));
    Worker::new(
        store,
        ManualClock::new(1_000_000),
        Library::new(dir.join("library")),
        Policy::default(),
    )
    .expect("worker")
}

fn failed(job_id: i64, kind: FailureKind) -> (Claimed, Finish) {
    failed_on(job_id, &format!("h{job_id}.example"), kind)
}

fn failed_on(job_id: i64, host: &str, kind: FailureKind) -> (Claimed, Finish) {
    let claimed = Claimed {
        job_id,
        url: format!("http://{host}/{job_id}"),
        host: host.to_string(),
        attempt: 1,
        started_at: 0,
        owner: "w".into(),
        throttled: false,
        reference: None,
        stage: None,
        target: None,
        document: None,
    };
    let failure = Failure::new(kind, format!("{kind:?}"));
    (claimed, Finish::Failure { failure, unit: 1.0 })
}

fn offline_now(w: &Worker) -> bool {
    w.offline().is_some()
}

/// An offline machine's probe that times out has not reached a server: the finding holds,
/// and the timeout spends no retry. A refused connection is an answer, and ends it.
#[test]
fn only_an_answer_ends_an_offline_finding() {
    let dir = tempfile::tempdir().expect("dir");
    let w = worker(dir.path());
    let policy = Policy::default();
    let mut group: Vec<_> = (1..=OFFLINE_AFTER as i64)
        .map(|id| failed(id, FailureKind::NetworkDown))
        .collect();
    w.observe_network(&mut group, &policy, 1_000_000);
    assert!(offline_now(&w), "found offline");

    let mut probe = vec![failed(10, FailureKind::Timeout)];
    w.observe_network(&mut probe, &policy, 1_001_000);
    assert!(offline_now(&w), "a timeout is no answer");
    assert!(
        matches!(probe[0].1, Finish::Offline(_)),
        "the probe's timeout spends no retry: {:?}",
        probe[0].1
    );

    // A link to a host that does not exist fails as ever: it says nothing of the network.
    let mut probe = vec![failed(12, FailureKind::NoSuchHost)];
    w.observe_network(&mut probe, &policy, 1_001_500);
    assert!(offline_now(&w));
    assert!(
        matches!(probe[0].1, Finish::Failure { .. }),
        "{:?}",
        probe[0].1
    );

    let mut probe = vec![failed(11, FailureKind::ConnectRefused)];
    w.observe_network(&mut probe, &policy, 1_002_000);
    assert!(!offline_now(&w), "a refusal is an answer");
    assert!(matches!(probe[0].1, Finish::Failure { .. }));
}

/// A run of failures all on one host, while another host has just answered, is that host's: a
/// dead domain whose name server fails for now does not make the machine offline, and its
/// jobs spend their retries. Once no other host has answered for [`OFFLINE_WINDOW`], the same
/// failures are the machine's again (a laptop that went offline with one host left to fetch).
#[test]
fn one_hosts_failures_are_its_own_while_another_host_answers() {
    let dir = tempfile::tempdir().expect("dir");
    let w = worker(dir.path());
    let policy = Policy::default();
    let t0 = 1_000_000;
    let mut answer = vec![failed_on(1, "good.example", FailureKind::ClientError)];
    w.observe_network(&mut answer, &policy, t0);
    for i in 0..OFFLINE_AFTER as i64 * 2 {
        let mut group = vec![failed_on(10 + i, "dead.example", FailureKind::DnsTemporary)];
        w.observe_network(&mut group, &policy, t0 + 1_000 * (i + 1));
        assert!(
            !offline_now(&w),
            "failure {i} of one host made the machine offline"
        );
        assert!(
            matches!(group[0].1, Finish::Failure { .. }),
            "charged as usual: {:?}",
            group[0].1
        );
    }

    // Failures on more than one host are the machine's.
    let mut group = vec![failed_on(30, "other.example", FailureKind::NetworkDown)];
    w.observe_network(&mut group, &policy, t0 + 8_000);
    assert!(offline_now(&w), "two hosts failing is the network");

    // With no other host heard from for the window, one host's failures are the machine's.
    let w = worker(dir.path());
    let mut answer = vec![failed_on(1, "good.example", FailureKind::ClientError)];
    w.observe_network(&mut answer, &policy, t0);
    let later = t0 + OFFLINE_WINDOW.as_millis() as Millis + 1;
    for i in 0..OFFLINE_AFTER as i64 {
        let mut group = vec![failed_on(10 + i, "dead.example", FailureKind::DnsTemporary)];
        w.observe_network(&mut group, &policy, later + i);
    }
    assert!(offline_now(&w), "a queue of one host still goes offline");

    // And with no other host at all.
    let w = worker(dir.path());
    for i in 0..OFFLINE_AFTER as i64 {
        let mut group = vec![failed_on(10 + i, "dead.example", FailureKind::NetworkDown)];
        w.observe_network(&mut group, &policy, t0 + i);
    }
    assert!(offline_now(&w));
}

/// While offline, a probe whose host fails does not hold the next probe: another host's due
/// job goes next (the claim's turns between hosts), and the first answer brings the queue
/// back online. On every backend.
#[test]
fn offline_probes_take_turns_so_a_mixed_queue_recovers() {
    for store in [
        Arc::new(crate::engine::queue::suite::sqlite()) as Arc<dyn Queue>,
        Arc::new(crate::engine::queue::suite::postgres()),
    ] {
        probes_take_turns(store);
    }
}

fn probes_take_turns(store: Arc<dyn Queue>) {
    let dir = tempfile::tempdir().expect("dir");
    let t0 = 1_000_000;
    let jobs: Vec<_> = ["http://dead.example/1", "http://dead.example/2"]
        .iter()
        .chain(["http://good.example/1", "http://good.example/2"].iter())
        .map(|u| crate::engine::sqlite::testing::job(u))
        .collect();
    store.enqueue(None, &jobs, 5, t0).expect("enqueue");
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let _entered = runtime.enter();
    let w = Worker::new(
        store,
        ManualClock::new(t0),
        Library::new(dir.path().join("library")),
        Policy::default(),
    )
    .expect("worker");
    let policy = Arc::new(Policy::default());
    // Found offline by failures elsewhere.
    let mut group: Vec<_> = (0..OFFLINE_AFTER as i64)
        .map(|i| {
            failed_on(
                100 + i,
                &format!("gone{i}.example"),
                FailureKind::NetworkDown,
            )
        })
        .collect();
    w.observe_network(&mut group, &policy, t0);
    assert!(offline_now(&w));

    let mut run = Run::default();
    let mut probed = Vec::new();
    runtime.block_on(async {
        for _ in 0..4 {
            let now = w.offline().map_or(t0, |o| o.next_probe_at.max(t0));
            let claimed = w.step(&mut run, &policy, 1, now).await.expect("step");
            if !offline_now(&w) {
                break;
            }
            assert_eq!(claimed.len(), 1, "one probe at a time, after {probed:?}");
            let c = claimed.into_iter().next().expect("a probe");
            probed.push(c.host.clone());
            let finish = if c.host == "good.example" {
                Finish::Success(crate::engine::queue::Success {
                    final_url: c.url.clone(),
                    http_status: 200,
                    ..crate::engine::queue::Success::default()
                })
            } else {
                Finish::Failure {
                    failure: Failure::new(FailureKind::DnsTemporary, "name lookup failed for now"),
                    unit: 0.0,
                }
            };
            run.ready.push((c, finish));
            // Committed as the fetch ends; the next probe waits for its time.
            w.step(&mut run, &policy, 1, now).await.expect("commit");
        }
    });
    assert!(
        !offline_now(&w),
        "still offline after probing {probed:?}: the good host's jobs never got a turn"
    );
    assert!(probed.len() <= 2, "{probed:?}");
}

/// A cancelled attempt's page is removed once its outcome is discarded, but not while a later
/// attempt of the same job, running, may have saved the same page under the same name and not
/// recorded it yet.
#[tokio::test]
async fn a_discarded_page_is_kept_while_a_later_attempt_of_its_job_runs() {
    let dir = tempfile::tempdir().expect("dir");
    let store = Arc::new(Store::open_in_memory().expect("store"));
    let w = Worker::new(
        store.clone() as Arc<dyn Queue>,
        ManualClock::new(1_000_000),
        Library::new(dir.path().join("library")),
        Policy::default(),
    )
    .expect("worker");
    store
        .enqueue(
            None,
            &[crate::engine::sqlite::testing::job("https://a.example/p")],
            5,
            0,
        )
        .expect("enqueue");
    let claim = |now| {
        store
            .claim("w", now, Duration::from_secs(60), 8)
            .expect("claim")
            .expect("a job")
    };
    let first = claim(1);
    store.cancel(&[first.job_id], 1).expect("cancel");
    store.retry(&[first.job_id], 5, 2).expect("retry");
    let second = claim(3);
    assert_eq!(second.attempt, first.attempt + 1);
    let page = dir.path().join("p-1-abcd.md");
    std::fs::write(&page, "the page, saved by both attempts").expect("write");
    let discarded = |claimed: &Claimed| {
        let success = Success {
            http_status: 200,
            final_url: claimed.url.clone(),
            document: Some(page.to_string_lossy().into_owned()),
            ..Success::default()
        };
        (
            claimed.clone(),
            Finish::Success(success),
            Settled::Discarded,
        )
    };
    w.remove_orphaned_documents(&[discarded(&first)]).await;
    assert!(page.exists(), "removed under the running attempt");
    // Once no later attempt runs (the job cancelled again), the page no row names goes.
    store.cancel(&[second.job_id], 4).expect("cancel");
    w.remove_orphaned_documents(&[discarded(&first)]).await;
    assert!(!page.exists(), "kept with no attempt to own it");
}

#[test]
fn a_folder_that_refuses_a_write_is_named_not_the_library_root() {
    let root = std::path::Path::new("/data/library");
    let path = root.join("example.org/page-1-abcdef01.md");
    let refused = std::io::Error::from(std::io::ErrorKind::PermissionDenied);
    let (kind, reason) = stall::library_fault(root, &path, &refused).expect("a stall");
    assert_eq!(kind, crate::engine::queue::StallKind::Library);
    assert!(reason.contains("/data/library/example.org"), "{reason}");
}

/// A probe that passes while the work still fails (a database step bigger than the probe's
/// check) makes the stall come back at once: each time it does, the probe wants twice the
/// room, so the two stop taking turns every second.
#[tokio::test]
async fn a_stall_that_comes_back_right_after_clearing_wants_more_room_each_time() {
    use crate::engine::queue::StallKind;
    let dir = tempfile::tempdir().expect("tempdir");
    let clock = ManualClock::new(1_000_000);
    let w = Worker::new(
        Arc::new(Store::open_in_memory().expect("store")),
        clock.clone(),
        Library::new(dir.path().join("library")),
        Policy::default(),
    )
    .expect("worker");
    assert_eq!(w.probe_want(), stall::PROBE_FREE_BYTES);
    w.stall_again(StallKind::DiskFull, "full".into());
    assert_eq!(w.probe_want(), stall::PROBE_FREE_BYTES, "a first stall");
    for times in 1..=3 {
        w.clear_stall();
        w.stall_again(StallKind::DiskFull, "full".into());
        assert_eq!(w.probe_want(), stall::PROBE_FREE_BYTES << times);
    }
    // One that begins long after the last cleared starts afresh.
    w.clear_stall();
    clock.advance(stall::STALL_MEMORY);
    w.stall_again(StallKind::DiskFull, "full".into());
    assert_eq!(w.probe_want(), stall::PROBE_FREE_BYTES);
}

/// A database that comes and goes (flaky Wi-Fi to PostgreSQL, SQLite locked by a backup tool)
/// does not make the probe want more room each time: only a full disk that comes back does,
/// and a stall that changes kind starts from a page's worth again.
#[tokio::test]
async fn a_flapping_database_does_not_make_the_probe_want_more_room() {
    use crate::engine::queue::StallKind;
    let dir = tempfile::tempdir().expect("tempdir");
    let clock = ManualClock::new(1_000_000);
    let w = Worker::new(
        Arc::new(Store::open_in_memory().expect("store")),
        clock.clone(),
        Library::new(dir.path().join("library")),
        Policy::default(),
    )
    .expect("worker");
    w.stall_again(StallKind::Database, "locked".into());
    for _ in 0..5 {
        w.clear_stall();
        w.stall_again(StallKind::Database, "locked".into());
        assert_eq!(w.probe_want(), stall::PROBE_FREE_BYTES);
    }
    // A full disk after a database stall starts afresh, then doubles as it comes back.
    w.clear_stall();
    w.stall_again(StallKind::DiskFull, "full".into());
    assert_eq!(w.probe_want(), stall::PROBE_FREE_BYTES);
    w.clear_stall();
    w.stall_again(StallKind::DiskFull, "full".into());
    assert_eq!(w.probe_want(), stall::PROBE_FREE_BYTES << 1);
    // The same stall turning into a database one wants a page's worth again.
    w.stall_again(StallKind::Database, "locked".into());
    assert_eq!(w.probe_want(), stall::PROBE_FREE_BYTES);
}

/// A clock set back while offline does not hold the next probe back by the jump when another
/// process (the window, a CLI command) reconciled the queue with the clock first, and so the
/// store reports no jump to this worker (DESIGN.md: a clock set back does not leave jobs
/// parked for the size of the jump).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clock_set_back_reconciled_by_another_process_first_still_moves_the_offline_probe() {
    use crate::engine::clock::Clock as _;
    const HOUR: Millis = 3_600_000;
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("gleaner.db");
    let t0 = 1_800_000_000_000;
    let clock = ManualClock::new(t0);
    let w = Worker::new(
        Arc::new(Store::open(&path).expect("store")),
        clock.clone(),
        Library::new(dir.path().join("library")),
        Policy::default(),
    )
    .expect("worker");
    w.reconcile_clock(&clock.reading(), true)
        .await
        .expect("reconcile");
    let policy = Arc::new(Policy::default());
    let mut group: Vec<_> = (0..OFFLINE_AFTER as i64)
        .map(|i| {
            failed_on(
                100 + i,
                &format!("gone{i}.example"),
                FailureKind::NetworkDown,
            )
        })
        .collect();
    w.observe_network(&mut group, &policy, t0);
    let wait = w.offline().expect("offline").next_probe_at - t0;
    assert!(wait > 0);

    clock.jump_wall(-HOUR);
    let other = Store::open(&path).expect("another process's handle");
    other
        .reconcile_clock(&clock.reading())
        .expect("reconciled by the other process");
    w.reconcile_clock(&clock.reading(), false)
        .await
        .expect("reconcile");
    let left = w.offline().expect("offline").next_probe_at - clock.now_ms();
    assert_eq!(
        left, wait,
        "the probe keeps its wait, not the jump's hour more"
    );
}

/// A worker that starts clears an offline finding left by one that has stopped, but not a
/// live one's (the window's, while a CLI run starts): it said the machine was online while the
/// window still held every job back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_starting_worker_keeps_a_live_workers_offline_finding() {
    let dir = tempfile::tempdir().expect("dir");
    let store = Arc::new(Store::open(&dir.path().join("gleaner.db")).expect("store"));
    let start = |store: &Arc<Store>| {
        Worker::new(
            store.clone(),
            ManualClock::new(1_000_000),
            Library::new(dir.path().join("library")),
            Policy::default(),
        )
        .expect("worker")
    };
    let live = start(&store);
    let finding = |worker: &str| crate::engine::queue::OfflineState {
        since: 1_000_000,
        next_probe_at: 1_030_000,
        probes: 1,
        reason: "no network".into(),
        worker: worker.into(),
    };
    store
        .set_offline(Some(&finding(live.owner())))
        .expect("the live worker's finding");
    let (_stop, stopped) = watch::channel(false);
    start(&store)
        .run(RunMode::UntilIdle, stopped.clone())
        .await
        .expect("run");
    assert!(store.offline().expect("offline").is_some(), "kept");
    // One whose worker is gone is stale.
    store
        .set_offline(Some(&finding("pid-4194000-1-0000abcd")))
        .expect("a gone worker's finding");
    start(&store)
        .run(RunMode::UntilIdle, stopped)
        .await
        .expect("run");
    assert!(store.offline().expect("offline").is_none(), "cleared");
}

/// A step that claimed and failed may have committed, its reply lost: the jobs it claimed
/// would stay running under this worker (alive, so never recovered, and on PostgreSQL renewed
/// by its heartbeat) until it stopped. The next turn puts them back, with no retry spent.
#[tokio::test]
async fn claims_whose_answer_was_lost_are_put_back_on_the_next_turn() {
    let dir = tempfile::tempdir().expect("dir");
    let w = worker(dir.path());
    let now = w.clock.now_ms();
    let job = crate::engine::sqlite::testing::job("http://a.example/1");
    w.store.enqueue(None, &[job], 5, now).expect("enqueue");
    let intervals = crate::engine::policy::HostIntervals::default();
    // The step that claimed it, as committed by the database; the worker heard an error.
    let lost = w
        .store
        .step(
            &mut Vec::new(),
            &Policy::default(),
            now,
            Some(&ClaimRequest {
                owner: w.owner(),
                lease: Duration::from_secs(60),
                per_host: 4,
                intervals: &intervals,
                max: 1,
                clock: None,
            }),
        )
        .expect("claim")
        .claimed;
    assert_eq!(lost.len(), 1);
    let id = lost[0].job_id;
    // Nothing is claimed again in the turn: the host is paused.
    w.store.pause_host("a.example", now).expect("pause");
    let mut run = Run {
        started: true,
        claims_unsure: true,
        ..Run::default()
    };
    let (_stop, mut stop_rx) = watch::channel(false);
    w.wake();
    w.turn(RunMode::Forever, &mut run, &mut stop_rx)
        .await
        .expect("turn");
    let j = w.store.job(id).expect("job").expect("row");
    assert_eq!((j.status, j.retries_used), (Status::Pending, 0));
    assert!(!run.claims_unsure);
}
