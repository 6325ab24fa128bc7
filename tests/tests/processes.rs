//! Several real `gleaner run` processes on one database, and an idle one.

use std::time::{Duration, Instant};

use gleaner_tests::server::{Behavior, FaultServer};
use gleaner_tests::{Sandbox, stderr, stdout};

/// CPU time (user + system) of a process, in clock ticks, from /proc.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("proc stat");
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    let after = &stat[stat.rfind(')').expect("comm") + 2..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    fields[11].parse::<u64>().expect("utime") + fields[12].parse::<u64>().expect("stime")
}

#[test]
fn four_processes_fetch_each_of_8000_jobs_exactly_once() {
    let server = FaultServer::start();
    let sb = Sandbox::new();
    let n = 8_000;
    let list: String = (0..n)
        .map(|i| format!("{}\n", server.url(&format!("/ok/{i}"))))
        .collect();
    let file = sb.path().join("urls.txt");
    std::fs::write(&file, list).expect("write list");
    let out = sb.run(&["add", "--file", file.to_str().expect("utf8")]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out)
            .lines()
            .filter(|l| l.starts_with("queued "))
            .count(),
        n
    );

    let started = Instant::now();
    let children: Vec<_> = (0..4)
        .map(|_| {
            sb.cmd()
                .args([
                    "--concurrency",
                    "4",
                    "--per-host",
                    "16",
                    "run",
                    "--until-idle",
                ])
                .env("GLEANER_LOG", "error")
                .stdout(std::process::Stdio::null())
                .spawn()
                .expect("spawn worker")
        })
        .collect();
    for mut c in children {
        let status = c.wait().expect("wait");
        assert!(status.success(), "a worker failed");
    }
    eprintln!("4 processes drained {n} jobs in {:?}", started.elapsed());

    let stats = sb.json(&["stats", "--json"]);
    assert_eq!(stats["done"].as_u64(), Some(n as u64), "{stats}");
    assert_eq!(
        server.total_hits(),
        n,
        "the server saw a request more than once"
    );
    for i in 0..n {
        assert_eq!(
            server.completions(&format!("/ok/{i}")),
            1,
            "job for /ok/{i}"
        );
    }
    let db = sb.sql();
    let workers: i64 = db
        .query_row("SELECT count(DISTINCT worker) FROM attempts", [], |r| {
            r.get(0)
        })
        .expect("workers");
    assert_eq!(workers, 4, "every process took a share");
    let doubled: i64 = db
        .query_row("SELECT count(*) FROM (SELECT job_id FROM attempts GROUP BY job_id HAVING count(*) > 1)", [], |r| r.get(0))
        .expect("attempts");
    assert_eq!(doubled, 0);
}

/// A script that queues links with several `gleaner add` at once, or a window opening while the
/// CLI runs, may be the first use of a data folder: every process must find the schema made,
/// whichever of them makes it.
#[test]
fn processes_opening_a_new_data_folder_together_all_start() {
    let server = FaultServer::start();
    for round in 0..8 {
        let sb = Sandbox::new();
        let children: Vec<_> = (0..6)
            .map(|i| {
                sb.cmd()
                    .args(["add", &server.url(&format!("/ok/{round}-{i}"))])
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .expect("spawn add")
            })
            .collect();
        for c in children {
            let out = c.wait_with_output().expect("wait");
            assert!(
                out.status.success(),
                "round {round}: {:?}: {}",
                out.status,
                stderr(&out)
            );
            assert!(stdout(&out).starts_with("queued "), "{}", stdout(&out));
        }
        let stats = sb.json(&["stats", "--json"]);
        assert_eq!(stats["pending"].as_u64(), Some(6), "round {round}: {stats}");
    }
}

#[test]
fn an_idle_worker_sleeps_instead_of_polling_and_wakes_for_a_new_job() {
    let server = FaultServer::start();
    let sb = Sandbox::new();
    // Create the database first so start-up work is not measured.
    assert!(sb.run(&["stats"]).status.success());
    let mut child = sb
        .cmd()
        .arg("run")
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn run");
    std::thread::sleep(Duration::from_millis(1500));
    let before = cpu_ticks(child.id());
    std::thread::sleep(Duration::from_secs(5));
    let used = cpu_ticks(child.id()) - before;
    // 1% of 5 s at the usual 100 ticks/s is 5 ticks.
    let ticks_per_sec = 100;
    assert!(
        used * 100 < 5 * ticks_per_sec,
        "idle worker used {used} ticks in 5 s"
    );

    // A job added by another process is picked up without waiting for any poll interval.
    let url = server.url("/ok/late");
    let added = Instant::now();
    assert!(sb.run(&["add", &url]).status.success());
    while server.completions("/ok/late") == 0 {
        assert!(
            added.elapsed() < Duration::from_secs(10),
            "the idle worker did not wake up"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    eprintln!("picked up {:?} after the add", added.elapsed());
    assert!(added.elapsed() < Duration::from_secs(5));
    child.kill().expect("kill");
    child.wait().expect("reap");
}

#[test]
fn a_running_worker_applies_settings_saved_by_another_process() {
    let server = FaultServer::start();
    let sb = Sandbox::new();
    assert!(sb.run(&["stats"]).status.success());
    let mut child = sb
        .cmd()
        .arg("run")
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn run");
    std::thread::sleep(Duration::from_millis(1000));
    // What the window's settings panel writes: no retries at all.
    let policy = serde_json::json!({ "max_retries": 0 }).to_string();
    sb.sql()
        .execute(
            "INSERT INTO settings (key, value) VALUES ('policy', ?1) \
             ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            [&policy],
        )
        .expect("save settings");
    std::thread::sleep(Duration::from_millis(2500));
    // Queued with the old budget in its row, by a process that did not see the change...
    let url = server.url("/status/503");
    assert!(
        sb.run(&["--max-retries", "5", "add", &url])
            .status
            .success()
    );
    // ...it still dies after one attempt: the running worker decides with the new settings.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let status: String = sb
            .sql()
            .query_row("SELECT status FROM jobs", [], |r| r.get(0))
            .expect("job");
        if status == "dead" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the worker kept the old policy: the job is {status}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(server.hits("/status/503"), 1);
    child.kill().expect("kill");
    child.wait().expect("reap");
}

#[test]
fn a_stopped_run_says_what_is_still_waiting_from_the_queue() {
    let server = FaultServer::start();
    let sb = Sandbox::new();
    let url = server.url("/status/503");
    assert!(sb.run(&["add", &url]).status.success());
    let child = sb
        .cmd()
        .args(["--base-delay", "1h", "--max-delay", "1h", "run"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn run");
    let deadline = Instant::now() + Duration::from_secs(10);
    while sb
        .sql()
        .query_row(
            "SELECT count(*) FROM jobs WHERE status = 'pending' AND attempts = 1",
            [],
            |r| r.get::<_, i64>(0),
        )
        .expect("count")
        == 0
    {
        assert!(Instant::now() < deadline, "the first attempt never ended");
        std::thread::sleep(Duration::from_millis(50));
    }
    let log = stop_with_sigterm(child);
    assert!(
        log.contains("run finished: 0 done, 0 dead, 1 retries scheduled"),
        "{log}"
    );
    assert!(
        log.contains("still pending: 1 job, 1 of them waiting to retry"),
        "{log}"
    );
}

/// A stop asked for (Ctrl+C, a service manager, the window's Quit) is not a crash: the fetch it
/// cut short goes back to the queue with no retry spent, and its history says why.
#[test]
fn a_stop_hands_its_fetches_in_flight_back_without_spending_a_retry() {
    let server = FaultServer::start();
    server.script("/hangs", vec![Behavior::StallForever]);
    let sb = Sandbox::new();
    assert!(sb.run(&["add", &server.url("/hangs")]).status.success());
    let child = sb
        .cmd()
        .arg("run")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn run");
    let deadline = Instant::now() + Duration::from_secs(10);
    while server.hits("/hangs") == 0 {
        assert!(Instant::now() < deadline, "the fetch never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    let log = stop_with_sigterm(child);
    assert!(
        log.contains("1 fetch in flight handed back to the queue, with no retry spent"),
        "{log}"
    );
    let job = sb.json(&["jobs", "show", "1", "--json"]);
    assert_eq!(job["status"], "pending", "{job}");
    assert_eq!(job["retries_used"], 0, "{job}");
    let history = job["history"].as_array().expect("history");
    assert_eq!(history.len(), 1, "{job}");
    assert_ne!(history[0]["outcome"], "interrupted", "{job}");
    assert!(
        history[0]["error"]
            .as_str()
            .is_some_and(|e| e.contains("Gleaner stopped")),
        "{job}"
    );
}

#[test]
fn big_pages_fetched_together_are_extracted_one_at_a_time() {
    // Extraction holds about 14 times a body at its peak. Four 6 MB pages fetched together and
    // extracted at once peaked at 455 MiB here (debug build); one at a time, at 213 MiB.
    let server = FaultServer::start();
    let sb = Sandbox::new();
    let urls: Vec<String> = (0..4)
        .map(|i| server.url(&format!("/article?kb=6144&copy={i}")))
        .collect();
    let mut args = vec!["add"];
    args.extend(urls.iter().map(String::as_str));
    assert!(sb.run(&args).status.success());
    let mut child = sb
        .cmd()
        .args([
            "--per-host",
            "4",
            "--concurrency",
            "4",
            "--timeout",
            "10m",
            "run",
        ])
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn run");
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let done: i64 = sb
            .sql()
            .query_row("SELECT count(*) FROM jobs WHERE status = 'done'", [], |r| {
                r.get(0)
            })
            .expect("count");
        if done == 4 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the pages were not saved in time"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(server.hits_prefix("/article"), 4, "each page fetched once");
    let peak_mib = gleaner_tests::peak_rss_kib_of(child.id()).expect("VmHWM of the run") / 1024;
    child.kill().expect("kill");
    child.wait().expect("reap");
    eprintln!("peak RSS {peak_mib} MiB");
    assert!(peak_mib < 320, "peak RSS {peak_mib} MiB");
}

/// Stop a `gleaner run` as a service manager or Ctrl+C does (SIGTERM), and wait for it to end
/// cleanly; its log.
fn stop_with_sigterm(child: std::process::Child) -> String {
    send_signal(&child, "TERM");
    let out = wait_within(child, Duration::from_secs(30), "SIGTERM");
    let log = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{log}");
    log
}

/// The run's output once it has ended; killed, and the test failed, if it has not within `limit`.
fn wait_within(child: std::process::Child, limit: Duration, after: &str) -> std::process::Output {
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(limit) {
        Ok(out) => out.expect("the run ends"),
        Err(_) => {
            let _ = std::process::Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
            panic!("the run was still going {limit:?} after {after}");
        }
    }
}

/// Send `signal` (TERM, INT, HUP) to a process, as `kill` does.
fn send_signal(child: &std::process::Child, signal: &str) {
    let sent = std::process::Command::new("kill")
        .args([&format!("-{signal}"), &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(sent.success());
}

/// The sandbox's `gleaner`, started through `wrapper` (a program that execs it), with its
/// environment.
fn wrapped(sb: &Sandbox, wrapper: &[&str]) -> std::process::Command {
    let inner = sb.cmd();
    let mut cmd = std::process::Command::new(wrapper[0]);
    cmd.args(&wrapper[1..])
        .arg(inner.get_program())
        .stdin(std::process::Stdio::null());
    for (key, value) in inner.get_envs() {
        match value {
            Some(value) => cmd.env(key, value),
            None => cmd.env_remove(key),
        };
    }
    cmd
}

/// A `gleaner run` with one job whose page never comes, once that fetch has started.
fn run_with_a_fetch_in_flight(
    sb: &Sandbox,
    server: &FaultServer,
    args: &[&str],
) -> std::process::Child {
    let before = server.hits("/hangs");
    // As a terminal starts it, SIGHUP at its default: a harness run under `nohup` ignores it,
    // and `gleaner run` keeps an ignored SIGHUP ignored (the nohup test below).
    let child = wrapped(sb, &["env", "--default-signal=HUP"])
        .args(args)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn run");
    let deadline = Instant::now() + Duration::from_secs(10);
    while server.hits("/hangs") == before {
        assert!(Instant::now() < deadline, "the fetch never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    child
}

/// `gleaner run --until-idle && gleaner export …` must not go on when the run was stopped
/// before the queue was idle: Ctrl+C exits 130 and SIGTERM 143, as a shell reports a process
/// the signal ended (it exited 0, and the export went out with half a library).
#[test]
fn an_until_idle_run_stopped_by_a_signal_does_not_exit_zero() {
    let server = FaultServer::start();
    server.script(
        "/hangs",
        vec![Behavior::StallForever, Behavior::StallForever],
    );
    let sb = Sandbox::new();
    assert!(sb.run(&["add", &server.url("/hangs")]).status.success());
    for (signal, code) in [("INT", 130), ("TERM", 143)] {
        let child = run_with_a_fetch_in_flight(&sb, &server, &["run", "--until-idle"]);
        send_signal(&child, signal);
        let out = wait_within(child, Duration::from_secs(30), &format!("SIG{signal}"));
        assert_eq!(
            out.status.code(),
            Some(code),
            "SIG{signal}: {}",
            stderr(&out)
        );
        let job = sb.json(&["jobs", "show", "1", "--json"]);
        assert_eq!(
            (&job["status"], &job["retries_used"]),
            (&"pending".into(), &0.into()),
            "{job}"
        );
    }
}

/// Closing the terminal (SIGHUP) stops `gleaner run` as Ctrl+C does: the fetch in flight goes
/// back unspent. It used to kill the process, and the next run counted an interrupted attempt.
#[test]
fn a_closed_terminal_hands_the_fetches_in_flight_back_without_spending_a_retry() {
    let server = FaultServer::start();
    server.script(
        "/hangs",
        vec![Behavior::StallForever, Behavior::StallForever],
    );
    let sb = Sandbox::new();
    assert!(sb.run(&["add", &server.url("/hangs")]).status.success());
    let child = run_with_a_fetch_in_flight(&sb, &server, &["run"]);
    send_signal(&child, "HUP");
    let out = wait_within(child, Duration::from_secs(30), "SIGHUP");
    let log = stderr(&out);
    assert!(
        log.contains("1 fetch in flight handed back to the queue, with no retry spent"),
        "{log}"
    );
    // The next run does not count the stop as an interrupted attempt.
    let again = run_with_a_fetch_in_flight(&sb, &server, &["run"]);
    stop_with_sigterm(again);
    let job = sb.json(&["jobs", "show", "1", "--json"]);
    assert_eq!(job["retries_used"], 0, "{job}");
    let history = job["history"].as_array().expect("history");
    assert!(
        history.iter().all(|h| h["outcome"] != "interrupted"),
        "{job}"
    );
}

/// `nohup gleaner run &` keeps running when the session that started it ends: SIGHUP left
/// ignored by nohup stays ignored (a handler for it stopped the run with the SSH session).
#[test]
fn a_run_started_under_nohup_outlives_its_session() {
    let server = FaultServer::start();
    server.script(
        "/hangs",
        vec![Behavior::StallForever, Behavior::StallForever],
    );
    let sb = Sandbox::new();
    assert!(sb.run(&["add", &server.url("/hangs")]).status.success());
    let child = wrapped(&sb, &["nohup"])
        .arg("run")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn nohup gleaner run");
    let deadline = Instant::now() + Duration::from_secs(10);
    while server.hits("/hangs") == 0 {
        assert!(Instant::now() < deadline, "the fetch never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut child = child;
    send_signal(&child, "HUP");
    std::thread::sleep(Duration::from_secs(1));
    assert!(
        child.try_wait().expect("poll the run").is_none(),
        "the run stopped on SIGHUP under nohup"
    );
    let log = stop_with_sigterm(child);
    assert!(
        log.contains("1 fetch in flight handed back to the queue, with no retry spent"),
        "{log}"
    );
}

/// Ctrl+C does not wait for a big page's extraction to end: the job goes back unspent and the
/// run ends within a few seconds (it waited for the extraction, however long it took).
#[test]
fn a_stop_does_not_wait_for_an_extraction_under_way() {
    let server = FaultServer::start();
    let sb = Sandbox::new();
    let url = server.url("/article?kb=12000");
    assert!(sb.run(&["add", &url]).status.success());
    let child = sb
        .cmd()
        .args(["--timeout", "10m", "--max-body", "100MB", "run"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn run");
    let deadline = Instant::now() + Duration::from_secs(60);
    while server.completions_prefix("/article") == 0 {
        assert!(Instant::now() < deadline, "the page was never sent");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    let stopped = Instant::now();
    send_signal(&child, "INT");
    let out = wait_within(child, Duration::from_secs(30), "SIGINT");
    let took = stopped.elapsed();
    let log = stderr(&out);
    assert!(took < Duration::from_secs(4), "took {took:?}: {log}");
    let job = sb.json(&["jobs", "show", "1", "--json"]);
    assert_eq!(job["status"], "pending", "{job}");
    assert_eq!(job["retries_used"], 0, "{job}");
}

/// A second Ctrl+C leaves at once, even while the first stop waits on a database another
/// program holds locked; it used to be ignored.
#[test]
fn a_second_ctrl_c_leaves_at_once() {
    let server = FaultServer::start();
    server.script("/hangs", vec![Behavior::StallForever]);
    let sb = Sandbox::new();
    assert!(sb.run(&["add", &server.url("/hangs")]).status.success());
    let child = run_with_a_fetch_in_flight(&sb, &server, &["run"]);
    let lock = sb.sql();
    lock.execute_batch("BEGIN EXCLUSIVE")
        .expect("lock the database");
    send_signal(&child, "INT");
    std::thread::sleep(Duration::from_millis(500));
    let again = Instant::now();
    send_signal(&child, "INT");
    let out = wait_within(child, Duration::from_secs(30), "SIGINT");
    let took = again.elapsed();
    assert!(took < Duration::from_secs(3), "took {took:?}");
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    lock.execute_batch("ROLLBACK").expect("unlock");
}
