//! `kill -9` in the middle of fetches, at random moments, again and again: no job is lost, none
//! is fetched to completion twice, interrupted attempts are counted, and the database is sound.

use std::time::Duration;

use gleaner_tests::server::FaultServer;
use gleaner_tests::{Sandbox, stderr};

/// A small deterministic generator, so a failing run can be replayed from its printed seed.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
}

#[test]
fn forty_kills_at_random_moments_lose_nothing_and_finish_nothing_twice() {
    // Host A stalls every response while we kill the worker, so no fetch completes in a run
    // that gets killed; host B answers 500 at once, so the worker is committing failures (and
    // recovering the interrupted attempts of the previous run) when the kill lands.
    let stalling = FaultServer::start();
    let failing = FaultServer::start_on("127.0.0.2");
    let sb = Sandbox::new();
    let a: Vec<String> = (0..60).map(|i| stalling.url(&format!("/ok/{i}"))).collect();
    let b: Vec<String> = (0..40)
        .map(|i| failing.url(&format!("/status/500?j={i}")))
        .collect();
    let mut args = vec!["add".to_string()];
    args.extend(a.iter().cloned());
    args.extend(b.iter().cloned());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    assert!(sb.run(&args).status.success());

    let seed = std::env::var("GLEANER_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(7)
        });
    eprintln!("crash test seed {seed} (set GLEANER_CRASH_SEED to replay)");
    let mut rng = Lcg(seed);
    let policy = [
        "--max-retries",
        "1000",
        "--base-delay",
        "5ms",
        "--max-delay",
        "20ms",
        "--concurrency",
        "8",
        "--per-host",
        "8",
        "--timeout",
        "60s",
    ];

    stalling.set_stall_all(true);
    let kills = 40;
    for round in 0..kills {
        let mut child = sb
            .cmd()
            .args(policy)
            .arg("run")
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("spawn");
        let wait = 20 + rng.next() % 400;
        std::thread::sleep(Duration::from_millis(wait));
        // SIGKILL: no handler runs, nothing is flushed.
        child.kill().expect("kill -9");
        child.wait().expect("reap");
        eprintln!("round {round}: killed after {wait} ms");
    }
    assert!(
        stalling.total_hits() > 0,
        "the killed runs did reach the stalling host"
    );
    for url in &a {
        let path = &url[url.find("/ok/").expect("path")..];
        assert_eq!(
            stalling.completions(path),
            0,
            "no fetch completed in a killed run"
        );
    }

    stalling.set_stall_all(false);
    let mut finish: Vec<&str> = policy.to_vec();
    finish[1] = "30"; // B's 500s must end dead in reasonable time now.
    let out = sb
        .cmd()
        .args(&finish)
        .args(["run", "--until-idle"])
        .output()
        .expect("final run");
    assert!(out.status.success(), "{}", stderr(&out));

    let db = sb.sql();
    let check: String = db
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .expect("integrity");
    assert_eq!(check, "ok");
    let count = |sql: &str| -> i64 { db.query_row(sql, [], |r| r.get(0)).expect(sql) };
    assert_eq!(count("SELECT count(*) FROM jobs"), 100, "no job lost");
    assert_eq!(
        count("SELECT count(*) FROM jobs WHERE status NOT IN ('done', 'dead')"),
        0
    );
    assert_eq!(count("SELECT count(*) FROM jobs WHERE status = 'done'"), 60);
    assert_eq!(count("SELECT count(*) FROM jobs WHERE status = 'dead'"), 40);
    for url in &a {
        let path = &url[url.find("/ok/").expect("path")..];
        assert_eq!(
            stalling.completions(path),
            1,
            "{path} fetched to completion exactly once"
        );
    }
    assert_eq!(
        count("SELECT count(*) FROM attempts WHERE finished_at IS NULL"),
        0,
        "every attempt closed"
    );
    assert_eq!(
        count("SELECT count(*) FROM attempts WHERE outcome = 'success'"),
        60
    );
    assert_eq!(
        count(
            "SELECT count(*) FROM jobs j WHERE attempts != (SELECT count(*) FROM attempts a WHERE a.job_id = j.id)"
        ),
        0,
        "the attempt counter matches the history"
    );
    let interrupted = count("SELECT count(*) FROM attempts WHERE outcome = 'interrupted'");
    assert!(
        interrupted > 0,
        "interrupted attempts are recorded and counted"
    );
    eprintln!("{interrupted} interrupted attempts recovered over {kills} kills");
}
