//! Offline awareness with the network really gone. The test runs itself again inside a new
//! network namespace (`unshare -rn`), where even loopback starts down, so every connection the
//! `gleaner run` process makes fails with ENETUNREACH, as on a laptop with its Wi-Fi off. Then
//! it brings loopback up and starts the servers, and the same process carries on.

use std::net::{SocketAddr, TcpStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use gleaner_tests::server::FaultServer;
use gleaner_tests::{Sandbox, stderr, stdout};

const HOSTS: [&str; 3] = ["127.0.0.1", "127.0.0.2", "127.0.0.3"];
const PORT: u16 = 18_731;

#[test]
fn offline_spends_no_retries_probes_and_resumes_when_the_network_is_back() {
    if gleaner_tests::ran_in_network_namespace(
        "offline_spends_no_retries_probes_and_resumes_when_the_network_is_back",
    ) {
        return;
    }
    inside_the_namespace();
}

fn inside_the_namespace() {
    // The premise: no network at all, not even loopback.
    let err = TcpStream::connect_timeout(
        &SocketAddr::from(([127, 0, 0, 1], PORT)),
        Duration::from_secs(1),
    )
    .expect_err("loopback is down in a fresh network namespace");
    assert_eq!(err.kind(), std::io::ErrorKind::NetworkUnreachable, "{err}");

    let sandbox = Sandbox::new();
    let urls: Vec<String> = HOSTS
        .iter()
        .flat_map(|h| (0..2).map(move |i| format!("http://{h}:{PORT}/ok/{h}-{i}")))
        .collect();
    let mut add = vec!["add"];
    add.extend(urls.iter().map(String::as_str));
    let out = sandbox.run(&add);
    assert!(out.status.success(), "{}", stderr(&out));

    // Without offline awareness these settings kill every job within about 3 s: two retries,
    // 1 s then 2 s apart.
    let log = sandbox.path().join("run.log");
    let mut run = sandbox
        .cmd()
        .args([
            "--base-delay",
            "1s",
            "--max-delay",
            "2s",
            "--max-retries",
            "2",
            "--jitter",
            "0",
            "run",
        ])
        .env("GLEANER_LOG", "info")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).expect("log file"))
        .spawn()
        .expect("gleaner run");

    let stats = || sandbox.json(&["stats", "--json"]);
    let offline = wait_for("stats to say offline", Duration::from_secs(20), || {
        let s = stats();
        (!s["offline"].is_null()).then_some(s)
    });
    let found_at = Instant::now();
    assert_eq!(offline["dead"], 0, "{offline}");
    assert!(
        offline["offline"]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("offline")),
        "{offline}"
    );
    let text = stdout(&sandbox.run(&["stats"]));
    assert!(text.contains("offline since"), "{text}");

    // Three times the budget's whole schedule later, nothing has died and the budgets that
    // were spent are only those of the attempts that showed the machine was offline.
    std::thread::sleep(Duration::from_secs(8).saturating_sub(found_at.elapsed()));
    let later = stats();
    assert_eq!(later["dead"], 0, "{later}");
    assert!(!later["offline"].is_null(), "{later}");
    let db = sandbox.sql();
    let spent: i64 = db
        .query_row("SELECT sum(net_failures) FROM jobs", [], |r| r.get(0))
        .expect("budgets");
    assert!(
        spent < 3,
        "only the attempts before the finding spend budget; spent {spent}"
    );
    // It kept probing, one job at a time, with growing waits (1 s, then 2 s at the cap).
    let probes: Vec<i64> = {
        let mut stmt = db
            .prepare(
                "SELECT started_at FROM attempts WHERE outcome = 'offline' ORDER BY started_at",
            )
            .expect("prepare");
        stmt.query_map([], |r| r.get(0))
            .expect("query")
            .collect::<rusqlite::Result<_>>()
            .expect("rows")
    };
    assert!(probes.len() >= 3, "probes: {probes:?}");
    let gaps: Vec<i64> = probes.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(
        gaps.iter().rev().take(2).all(|&g| g >= 1_500),
        "probes must back off, not spin: gaps {gaps:?} ms"
    );
    assert!(
        probes.len() <= 12,
        "8 s of probing at 1–2 s apart is a handful of probes, not {}",
        probes.len()
    );

    // The network comes back.
    let up = Command::new("ip")
        .args(["link", "set", "lo", "up"])
        .output()
        .expect("ip (iproute2)");
    assert!(up.status.success(), "{}", stderr(&up));
    let servers: Vec<FaultServer> = HOSTS
        .iter()
        .map(|h| FaultServer::start_at(format!("{h}:{PORT}").parse().expect("address")))
        .collect();
    let done = wait_for("every job to be done", Duration::from_secs(20), || {
        let s = stats();
        (s["done"] == 6).then_some(s)
    });
    assert!(done["offline"].is_null(), "{done}");
    assert_eq!(done["dead"], 0, "{done}");
    for (server, host) in servers.iter().zip(HOSTS) {
        for i in 0..2 {
            assert_eq!(server.hits(&format!("/ok/{host}-{i}")), 1);
        }
    }
    let _ = run.kill();
    let _ = run.wait();
    let log = std::fs::read_to_string(&log).expect("log");
    assert!(log.contains("This machine looks offline"), "{log}");
    assert!(log.contains("Not counted against its retries"), "{log}");
    assert!(log.contains("Back online after"), "{log}");
}

fn wait_for<T>(what: &str, limit: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The group of failures that shows the machine offline is recorded even when the database
/// refuses the offline finding itself: the worker stalls on that error, and every job it had
/// fetched goes back to the queue, none left held as running.
#[test]
fn a_database_that_refuses_the_offline_finding_loses_no_attempt() {
    if gleaner_tests::ran_in_network_namespace(
        "a_database_that_refuses_the_offline_finding_loses_no_attempt",
    ) {
        return;
    }
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(offline_finding_refused());
}

async fn offline_finding_refused() {
    use gleaner::engine::clock::ManualClock;
    use gleaner::engine::library::Library;
    use gleaner::engine::policy::Policy;
    use gleaner::engine::queue::StallKind;
    use gleaner::engine::sqlite::Store;
    use gleaner::engine::worker::{RunMode, Worker};
    use std::sync::Arc;

    const T0: i64 = 1_800_000_000_000;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("gleaner.db");
    let store = Arc::new(Store::open(&path).expect("store"));
    let urls: Vec<String> = HOSTS
        .iter()
        .map(|h| format!("http://{h}:{PORT}/ok/refused-{h}"))
        .collect();
    let jobs: Vec<_> = gleaner::engine::intake::scan_args(&urls)
        .iter()
        .filter_map(|f| f.as_new_job())
        .collect();
    store.enqueue(None, &jobs, 5, T0).expect("enqueue");
    // The database refuses to keep the offline finding, and takes every other write.
    let other = rusqlite::Connection::open(&path).expect("second connection");
    other
        .execute_batch(
            "CREATE TRIGGER refuse_offline_insert BEFORE INSERT ON settings \
                 WHEN NEW.key = 'offline' BEGIN SELECT RAISE(ABORT, 'offline refused'); END; \
             CREATE TRIGGER refuse_offline_update BEFORE UPDATE ON settings \
                 WHEN NEW.key = 'offline' BEGIN SELECT RAISE(ABORT, 'offline refused'); END;",
        )
        .expect("refuse the offline finding");
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

    let counts = || {
        other
            .query_row(
                "SELECT sum(status = 'running'), sum(status = 'pending'), \
                     sum(net_failures + server_failures), count(*) FROM jobs",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )
            .expect("counts")
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (running, pending, spent, all): (i64, i64, i64, i64) = counts();
        let stalled = worker.stalled();
        if let Some(stall) = stalled.as_ref().filter(|_| running == 0 && pending == all) {
            // Only the failures before the finding count (as in the test above); the one that
            // made it is recorded as offline, not lost.
            assert!(spent < 3, "spent {spent}");
            let offline: i64 = other
                .query_row(
                    "SELECT count(*) FROM attempts WHERE outcome = 'offline'",
                    [],
                    |r| r.get(0),
                )
                .expect("attempts");
            assert!(offline >= 1, "the attempt that found the machine offline");
            assert_eq!(stall.kind, StallKind::Database);
            assert!(stall.reason.contains("offline refused"), "{}", stall.reason);
            break;
        }
        assert!(
            Instant::now() < deadline,
            "jobs held or lost: running {running}, pending {pending} of {all}; stall {stalled:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    stop.send(true).expect("stop");
    run.await.expect("join").expect("run");
}
