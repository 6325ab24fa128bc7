//! A lab on PostgreSQL: several real `gleaner run` processes, each with a data folder of its
//! own, over one database (a schema of its own on the test server), against the misbehaving
//! test server, which counts what they do.

use std::process::{Child, Stdio};
use std::time::{Duration, Instant, SystemTime};

use gleaner::engine::postgres::testing::fresh_database_url;
use gleaner_tests::server::{Behavior, FaultServer};
use gleaner_tests::{Sandbox, stderr, stdout};

/// A member of the lab: its own data folder, the shared database.
struct Member {
    sb: Sandbox,
    database: String,
}

impl Member {
    fn new(database: &str) -> Self {
        Self {
            sb: Sandbox::new(),
            database: database.to_string(),
        }
    }

    fn cmd(&self) -> std::process::Command {
        let mut c = self.sb.cmd();
        c.env("GLEANER_DATABASE_URL", &self.database);
        c
    }

    fn run(&self, args: &[&str]) -> std::process::Output {
        self.cmd().args(args).output().expect("run gleaner")
    }

    fn json(&self, args: &[&str]) -> serde_json::Value {
        let out = self.run(args);
        assert!(out.status.success(), "gleaner {args:?}: {}", stderr(&out));
        serde_json::from_slice(&out.stdout).expect("JSON")
    }

    fn worker(&self, args: &[&str]) -> Child {
        self.cmd()
            .args(args)
            .env(
                "GLEANER_LOG",
                std::env::var("PG_LAB_LOG").unwrap_or("warn".into()),
            )
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn worker")
    }
}

fn add(member: &Member, urls: &[String]) {
    let file = member.sb.path().join("urls.txt");
    std::fs::write(&file, urls.join("\n")).expect("write list");
    let out = member.run(&["add", "--file", file.to_str().expect("utf8")]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out)
            .lines()
            .filter(|l| l.starts_with("queued "))
            .count(),
        urls.len()
    );
}

fn wait_all(children: Vec<Child>) {
    for c in children {
        let out = c.wait_with_output().expect("wait");
        assert!(out.status.success(), "a worker failed: {}", stderr(&out));
        if std::env::var("PG_LAB_LOG").is_ok() {
            eprintln!("---- worker\n{}", stderr(&out));
        }
    }
}

/// Requests that arrived inside `(from, to)`.
fn arrivals_between(times: &[SystemTime], from: SystemTime, to: SystemTime) -> usize {
    times.iter().filter(|t| **t > from && **t < to).count()
}

/// Three members share one queue: every job is fetched once, the per-host limit holds across
/// the three (the server never sees more than 2 requests at once, where 3 could come), and
/// each 429's Retry-After keeps every member off the host until it has passed. One job at a
/// time per member: with more, the first member could hold both of the host's slots throughout
/// (a slot a member frees, it claims again in the same transaction), and nothing would show
/// that another member's claims are counted.
#[test]
fn three_members_hold_the_per_host_limit_and_every_retry_after_window() {
    let server = FaultServer::start();
    let database = fresh_database_url();
    let members: Vec<Member> = (0..3).map(|_| Member::new(&database)).collect();
    let n = 48;
    let urls: Vec<String> = (0..n)
        .map(|i| server.url(&format!("/hold/150/{i}")))
        .collect();
    // Two rate limits, early and in the middle, each once.
    let limited = [("/hold/150/6", 1), ("/hold/150/24", 2)];
    for (path, secs) in limited {
        server.script(
            path,
            vec![Behavior::Respond {
                status: 429,
                headers: vec![("Retry-After".into(), secs.to_string())],
                body: Vec::new(),
            }],
        );
    }
    add(&members[0], &urls);

    let started = Instant::now();
    let workers: Vec<Child> = members
        .iter()
        .map(|m| {
            m.worker(&[
                "--concurrency",
                "1",
                "--per-host",
                "2",
                "--jitter",
                "0",
                // So that a Retry-After of 1 or 2 s is the wait (the backoff is at least this).
                "--base-delay",
                "1s",
                "run",
                "--until-idle",
            ])
        })
        .collect();
    wait_all(workers);
    eprintln!("3 members drained {n} jobs in {:?}", started.elapsed());

    for m in &members {
        let stats = m.json(&["stats", "--json"]);
        assert_eq!(stats["done"].as_u64(), Some(n as u64), "{stats}");
    }
    for i in 0..n {
        let path = format!("/hold/150/{i}");
        // A rate-limited job: its 429, then its page.
        let want = if limited.iter().any(|(p, _)| *p == path) {
            2
        } else {
            1
        };
        assert_eq!(server.completions(&path), want, "job {i}");
    }
    assert!(
        server.max_concurrent() <= 2,
        "the server saw {} requests at once",
        server.max_concurrent()
    );
    let all = server.request_times("/hold/");
    for (path, secs) in limited {
        let times = server.request_times(path);
        assert_eq!(times.len(), 2, "{path}: the 429, then the retry");
        let limited_at = times[0];
        // The pause starts when the 429 is committed, a moment after it arrived.
        let from = limited_at + Duration::from_millis(300);
        let to = limited_at + Duration::from_secs(secs) - Duration::from_millis(50);
        assert_eq!(
            arrivals_between(&all, from, to),
            0,
            "a request reached the host inside {path}'s Retry-After window of {secs} s"
        );
        assert!(times[1] >= limited_at + Duration::from_secs(secs));
    }
    // The members shared the work.
    let workers: std::collections::BTreeSet<String> = (0..n)
        .flat_map(|i| {
            let attempts = members[1].json(&["jobs", "show", &(i + 1).to_string(), "--json"]);
            attempts["history"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .filter_map(|a| a["worker"].as_str().map(str::to_string))
        })
        .map(|w| w.split('-').take(2).collect::<Vec<_>>().join("-"))
        .collect();
    // Two connections among three members: at least two of them fetched.
    assert!(
        workers.len() >= 2,
        "the members shared the work: {workers:?}"
    );
}

/// A member killed with SIGKILL mid-fetch: the others take its jobs back (as interrupted
/// attempts) and finish every one of them.
#[test]
fn a_member_killed_with_sigkill_has_its_jobs_finished_by_the_others() {
    let server = FaultServer::start();
    let database = fresh_database_url();
    let members: Vec<Member> = (0..3).map(|_| Member::new(&database)).collect();
    let n = 12;
    let urls: Vec<String> = (0..n)
        .map(|i| server.url(&format!("/hold/3000/{i}")))
        .collect();
    add(&members[0], &urls);
    let mut doomed = members[0].worker(&["--concurrency", "4", "--per-host", "8", "run"]);
    let deadline = Instant::now() + Duration::from_secs(30);
    while server.total_hits() < 4 {
        assert!(Instant::now() < deadline, "the first member never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    doomed.kill().expect("SIGKILL");
    doomed.wait().expect("reap");
    let held = server.total_hits();

    let started = Instant::now();
    let others: Vec<Child> = members[1..]
        .iter()
        .map(|m| {
            m.worker(&[
                "--concurrency",
                "4",
                "--per-host",
                "8",
                "run",
                "--until-idle",
            ])
        })
        .collect();
    wait_all(others);
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "the others took {:?}",
        started.elapsed()
    );
    let stats = members[2].json(&["stats", "--json"]);
    assert_eq!(stats["done"].as_u64(), Some(n as u64), "{stats}");
    assert_eq!(stats["running"].as_u64(), Some(0), "{stats}");
    let mut interrupted = 0;
    for id in 1..=n {
        let job = members[1].json(&["jobs", "show", &id.to_string(), "--json"]);
        interrupted += job["history"].as_array().map_or(0, |a| {
            a.iter().filter(|a| a["outcome"] == "interrupted").count()
        });
    }
    assert_eq!(
        interrupted, held,
        "each job the killed member held is one interrupted attempt"
    );
}

/// The database gone mid-run (the network to it cut): the worker pauses, saying why, fetches
/// nothing it cannot record, and goes on by itself once the database is back; every job is
/// fetched once and recorded.
#[test]
fn losing_the_database_mid_run_pauses_the_worker_until_it_is_back() {
    use gleaner_tests::proxy::TcpProxy;
    let server = FaultServer::start();
    let direct = fresh_database_url();
    let mut u = url::Url::parse(&direct).expect("url");
    let upstream = format!(
        "{}:{}",
        u.host_str().expect("host"),
        u.port().unwrap_or(5432)
    );
    let proxy = TcpProxy::start(
        std::net::ToSocketAddrs::to_socket_addrs(&upstream)
            .expect("resolve")
            .next()
            .expect("address"),
    );
    u.set_port(Some(proxy.addr().port())).expect("port");
    let member = Member::new(u.as_str());
    let n = 30;
    let urls: Vec<String> = (0..n)
        .map(|i| server.url(&format!("/hold/100/{i}")))
        .collect();
    add(&member, &urls);
    let worker = member
        .cmd()
        .args(["--concurrency", "2", "run", "--until-idle"])
        .env("GLEANER_LOG", "info")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn worker");
    let deadline = Instant::now() + Duration::from_secs(30);
    while server.completions_prefix("/hold/") < 5 {
        assert!(Instant::now() < deadline, "the worker never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    proxy.unplug();
    let cut = server.total_hits();
    std::thread::sleep(Duration::from_secs(4));
    // At most the jobs it held when the network went: nothing new starts while it is paused.
    assert!(
        server.total_hits() <= cut + 2,
        "{} requests while the database was gone",
        server.total_hits() - cut
    );
    proxy.plug();
    let out = worker.wait_with_output().expect("worker");
    let log = stderr(&out);
    assert!(out.status.success(), "{log}");
    assert!(
        log.contains("Paused: the queue database cannot be used"),
        "{log}"
    );
    assert!(log.contains("Resumed after"), "{log}");
    let stats = Member::new(&direct).json(&["stats", "--json"]);
    assert_eq!(stats["done"].as_u64(), Some(n as u64), "{stats}");
    for i in 0..n {
        assert_eq!(server.completions(&format!("/hold/100/{i}")), 1, "job {i}");
    }
}

/// The library is the lab's: whatever member fetched a document, an export from any member
/// holds every document (even with the other members' folders gone), search finds it there,
/// and `library pull` writes what a member lacks into its own folder.
#[test]
fn an_export_from_any_member_holds_every_document_and_pull_fills_its_folder() {
    let server = FaultServer::start();
    let database = fresh_database_url();
    let members: Vec<Member> = (0..3).map(|_| Member::new(&database)).collect();
    let n = 24;
    let urls: Vec<String> = (0..n)
        .map(|i| server.url(&format!("/hold/50/shared-{i}")))
        .collect();
    add(&members[0], &urls);
    // Two members fetch; the third fetches nothing itself.
    let workers: Vec<Child> = members[..2]
        .iter()
        .map(|m| {
            m.worker(&[
                "--concurrency",
                "2",
                "--per-host",
                "4",
                "run",
                "--until-idle",
            ])
        })
        .collect();
    wait_all(workers);
    let own = |m: &Member| -> usize {
        walk(&m.sb.path().join("library"))
            .into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == "md"))
            .count()
    };
    let (a, b) = (own(&members[0]), own(&members[1]));
    assert_eq!(
        a + b,
        n,
        "each document written once, by the member that fetched it"
    );
    assert!(a > 0 && b > 0, "both members fetched: {a} and {b}");
    for m in &members[..2] {
        std::fs::remove_dir_all(m.sb.path().join("library")).expect("remove a member's folder");
    }

    let reader = &members[2];
    let out = reader.run(&["export", "--format", "jsonl"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let lines: Vec<serde_json::Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    assert_eq!(lines.len(), n, "{}", stderr(&out));
    for line in &lines {
        assert!(
            line["text"]
                .as_str()
                .is_some_and(|t| t.contains("Hello from shared-")),
            "{line}"
        );
    }
    let hits = reader.json(&["search", "--json", "--limit", "100", "shared"]);
    assert_eq!(hits.as_array().map(Vec::len), Some(n), "{hits}");

    // A member whose folder is empty rebuilding the index: the lab's index still holds every
    // document (it used to be emptied for the whole lab, then refilled from that folder).
    let out = members[0].run(&["library", "reindex"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let hits = reader.json(&["search", "--json", "--limit", "100", "shared"]);
    assert_eq!(hits.as_array().map(Vec::len), Some(n), "{hits}");

    assert_eq!(own(reader), 0);
    let out = reader.run(&["library", "pull"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with(&format!("pulled {n} files")),
        "{}",
        stdout(&out)
    );
    assert_eq!(own(reader), n);
    let again = reader.run(&["library", "pull"]);
    assert!(
        stdout(&again).starts_with("pulled 0 files"),
        "{}",
        stdout(&again)
    );
    // The PDF limit is the lab's: set on one member, read on another.
    let shown = |m: &Member| stdout(&m.run(&["library", "pdf-limit"]));
    assert!(
        shown(reader).contains("up to 26214400 bytes"),
        "{}",
        shown(reader)
    );
    assert!(
        reader
            .run(&["library", "pdf-limit", "1MiB"])
            .status
            .success()
    );
    assert!(
        shown(&members[0]).contains("up to 1048576 bytes"),
        "{}",
        shown(&members[0])
    );
    let alone = Sandbox::new().run(&["library", "pdf-limit"]);
    assert!(!alone.status.success());
    assert!(
        stderr(&alone).contains("shared database"),
        "{}",
        stderr(&alone)
    );
    // The reader's own folder now serves the export.
    let out = reader.run(&["export", "--format", "bibtex"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out).matches("@online{").count(),
        n,
        "{}",
        stdout(&out)
    );
}

/// Every file under `dir`.
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// A live member's jobs are never taken: its heartbeat renews their leases, so another member's
/// recovery, which can only judge an owner of another machine by its lease, leaves them alone
/// however long the fetch takes; a lease that is not renewed is taken back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_members_leases_are_renewed_and_its_jobs_never_taken() {
    use gleaner::engine::clock::{Clock, ManualClock};
    use gleaner::engine::library::Library;
    use gleaner::engine::policy::Policy;
    use gleaner::engine::queue::{Liveness, NewJob, Status};
    use gleaner::engine::worker::{HEARTBEAT_EVERY, RunMode, SHARED_LEASE, Worker};

    const T0: i64 = 1_800_000_000_000;
    let server = FaultServer::start();
    let database = fresh_database_url();
    let dir = tempfile::tempdir().expect("dir");
    let here = gleaner::engine::queue::open_with(dir.path(), Some(&database)).expect("member");
    let other = gleaner::engine::queue::open_with(dir.path(), Some(&database)).expect("other");
    let url = server.url("/stall-headers");
    let job = NewJob {
        url: url.clone(),
        url_key: url,
        host: "127.0.0.1".into(),
        reference: None,
    };
    here.enqueue(None, &[job], 5, T0).expect("enqueue");
    let clock = ManualClock::new(T0);
    let policy = Policy {
        timeout: Duration::from_secs(600),
        ..Policy::default()
    };
    let worker = Worker::new(
        here.clone(),
        clock.clone(),
        Library::new(dir.path().join("library")),
        policy.clone(),
    )
    .expect("worker");
    let (stop, stop_rx) = tokio::sync::watch::channel(false);
    let w = worker.clone();
    let run = tokio::spawn(async move { w.run(RunMode::Forever, stop_rx).await });
    let deadline = Instant::now() + Duration::from_secs(15);
    while server.total_hits() < 1 {
        assert!(Instant::now() < deadline, "the job never started");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Four leases' time passes, a beat at a time; another machine's recovery looks each time.
    let beats = 4 * SHARED_LEASE.as_secs() / HEARTBEAT_EVERY.as_secs();
    for _ in 0..beats {
        clock.advance(HEARTBEAT_EVERY);
        tokio::time::sleep(Duration::from_millis(300)).await;
        let now = clock.now_ms();
        let taken = other
            .recover(&policy, now, &|_| Liveness::Unknown)
            .expect("recover");
        assert!(
            taken.is_empty(),
            "a live member's job was taken at {}",
            now - T0
        );
    }
    let job = here.job(1).expect("job").expect("row");
    assert_eq!(job.status, Status::Running);
    assert_eq!(server.total_hits(), 1, "fetched once");
    // The worker stops without a word (its heartbeat with it): a lease later, the job is back.
    run.abort();
    let _ = run.await;
    drop(stop);
    drop(worker);
    clock.advance(SHARED_LEASE + Duration::from_secs(1));
    let taken = other
        .recover(&policy, clock.now_ms(), &|_| Liveness::Unknown)
        .expect("recover");
    assert_eq!(taken.len(), 1, "the silent member's job is taken back");
    assert_eq!(
        other.attempts(1).expect("history")[0].outcome.as_deref(),
        Some("interrupted")
    );
}

/// A member that joined the lab in the window's Settings (the address saved in its data
/// folder): the CLI on that folder works on the lab's queue, not on a private one.
#[test]
fn the_cli_uses_the_shared_database_saved_in_the_data_folder() {
    let database = fresh_database_url();
    let lab = Member::new(&database);
    let out = lab.run(&["add", "https://example.com/in-the-lab"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let sb = Sandbox::new();
    std::fs::write(sb.path().join("database-url"), format!("{database}\n")).expect("save");
    let out = sb.run(&["stats", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let stats: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(stats["pending"], 1, "the lab's queue: {stats}");
    assert!(
        !sb.path().join("gleaner.db").exists(),
        "no private queue was made"
    );
    assert!(!stderr(&out).contains("gleaner-test"), "no password shown");
    // A database already made says nothing of it on each command.
    let again = sb.run(&["stats"]);
    assert!(!stderr(&again).contains("NOTICE"), "{}", stderr(&again));
}

/// Tags set on one member reach every member's export and the files `library pull` writes.
#[test]
fn tags_set_on_one_member_are_in_every_members_export() {
    let server = FaultServer::start();
    let database = fresh_database_url();
    let members: Vec<Member> = (0..2).map(|_| Member::new(&database)).collect();
    add(&members[0], &[server.url("/ok/tagged-page")]);
    let out = members[0].run(&["run", "--until-idle"]);
    assert!(out.status.success(), "{}", stderr(&out));
    // The other member has not pulled: its folder has no copy of the document.
    let out = members[1].run(&["tags", "1", "--add", "rivers"]);
    assert!(out.status.success(), "{}", stderr(&out));
    for member in &members {
        let out = member.run(&["export", "--format", "bibtex"]);
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(
            stdout(&out).contains("keywords = {rivers}"),
            "{}",
            stdout(&out)
        );
    }
    // The member that fetched it holds the older version under the same name: a pull
    // replaces it (it counted it "already there"), and a second pull moves nothing.
    let out = members[0].run(&["library", "pull"]);
    assert!(
        stdout(&out).contains("pulled 0 files") && stdout(&out).contains("1 replaced"),
        "{}",
        stdout(&out)
    );
    let files = walk(&members[0].sb.path().join("library"));
    let document = files
        .iter()
        .find(|p| p.extension().is_some_and(|e| e == "md"))
        .expect("the document");
    let text = std::fs::read_to_string(document).expect("read");
    assert!(text.contains("tags: [\"rivers\"]"), "{text}");
    let again = members[0].run(&["library", "pull"]);
    assert!(stdout(&again).contains("0 replaced"), "{}", stdout(&again));
}

/// A member killed while every live member's slots are busy: its jobs are taken back within a
/// few beats all the same. Recovery ran only after a claim that came back short, which a
/// member busy with long fetches never made, so the killed member's jobs stayed running.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_members_jobs_are_taken_back_while_the_others_are_busy() {
    use gleaner::engine::clock::{Clock, ManualClock};
    use gleaner::engine::library::Library;
    use gleaner::engine::policy::{HostIntervals, Policy};
    use gleaner::engine::queue::{ClaimRequest, NewJob, Status};
    use gleaner::engine::worker::{HEARTBEAT_EVERY, RunMode, SHARED_LEASE, Worker};

    const T0: i64 = 1_800_000_000_000;
    let server = FaultServer::start();
    let database = fresh_database_url();
    let dir = tempfile::tempdir().expect("dir");
    let here = gleaner::engine::queue::open_with(dir.path(), Some(&database)).expect("member");
    let job = |url: String| NewJob {
        url: url.clone(),
        url_key: url,
        host: "127.0.0.1".into(),
        reference: None,
    };
    here.enqueue(None, &[job(server.url("/hold/1/killed"))], 5, T0)
        .expect("enqueue");
    // A member of another machine claims it, and is killed.
    let intervals = HostIntervals::default();
    let killed = here
        .step(
            &mut Vec::new(),
            &Policy::default(),
            T0,
            Some(&ClaimRequest {
                owner: "pid-1-1-0000dead@elsewhere",
                lease: SHARED_LEASE,
                per_host: 8,
                intervals: &intervals,
                max: 1,
                clock: None,
            }),
        )
        .expect("the killed member's claim")
        .claimed;
    assert_eq!(killed.len(), 1);
    let killed = killed[0].job_id;
    // This member's one slot is busy with a fetch that takes as long as the test.
    here.enqueue(None, &[job(server.url("/stall-headers"))], 5, T0)
        .expect("enqueue");
    let clock = ManualClock::new(T0);
    let policy = Policy {
        concurrency: 1,
        timeout: Duration::from_secs(600),
        ..Policy::default()
    };
    let worker = Worker::new(
        here.clone(),
        clock.clone(),
        Library::new(dir.path().join("library")),
        policy,
    )
    .expect("worker");
    let (stop, stop_rx) = tokio::sync::watch::channel(false);
    let w = worker.clone();
    let run = tokio::spawn(async move { w.run(RunMode::Forever, stop_rx).await });
    let deadline = Instant::now() + Duration::from_secs(15);
    while server.total_hits() < 1 {
        assert!(Instant::now() < deadline, "the fetch never started");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let beats = 2 * SHARED_LEASE.as_secs() / HEARTBEAT_EVERY.as_secs();
    for _ in 0..beats {
        clock.advance(HEARTBEAT_EVERY);
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let job = here.job(killed).expect("job").expect("row");
    assert_eq!(job.status, Status::Pending, "at {}", clock.now_ms() - T0);
    assert_eq!(
        here.attempts(killed).expect("history")[0]
            .outcome
            .as_deref(),
        Some("interrupted")
    );
    let _ = stop.send(true);
    run.abort();
    let _ = run.await;
}

/// The network to the database goes silent (packets dropped, nothing closed): the worker
/// pauses within the answer timeout, saying the database does not answer. It waited on the
/// step's reply for as long as the kernel kept the connection (about 15 minutes), showing
/// nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_database_pauses_the_worker_within_the_answer_timeout() {
    use gleaner::engine::clock::ManualClock;
    use gleaner::engine::library::Library;
    use gleaner::engine::policy::Policy;
    use gleaner::engine::postgres::PgStore;
    use gleaner::engine::queue::{NewJob, Queue};
    use gleaner::engine::worker::{RunMode, Worker};
    use gleaner_tests::proxy::TcpProxy;

    const T0: i64 = 1_800_000_000_000;
    let server = FaultServer::start();
    let mut u = url::Url::parse(&fresh_database_url()).expect("url");
    let upstream = format!(
        "{}:{}",
        u.host_str().expect("host"),
        u.port().unwrap_or(5432)
    );
    let proxy = TcpProxy::start(
        std::net::ToSocketAddrs::to_socket_addrs(&upstream)
            .expect("resolve")
            .next()
            .expect("address"),
    );
    u.set_port(Some(proxy.addr().port())).expect("port");
    let dir = tempfile::tempdir().expect("dir");
    let library = dir.path().join("library");
    let mut store = PgStore::open_at(u.as_str(), "m", Some(&library)).expect("open");
    let limit = Duration::from_secs(2);
    store.set_answer_timeout(limit);
    let store: std::sync::Arc<dyn Queue> = std::sync::Arc::new(store);
    let url = server.url("/hold/1500/silent");
    let job = NewJob {
        url: url.clone(),
        url_key: url,
        host: "127.0.0.1".into(),
        reference: None,
    };
    store.enqueue(None, &[job], 5, T0).expect("enqueue");
    let policy = Policy {
        concurrency: 1,
        ..Policy::default()
    };
    let worker =
        Worker::new(store, ManualClock::new(T0), Library::new(library), policy).expect("worker");
    let mut health = worker.health();
    let (stop, stop_rx) = tokio::sync::watch::channel(false);
    let w = worker.clone();
    let run = tokio::spawn(async move { w.run(RunMode::Forever, stop_rx).await });
    let deadline = Instant::now() + Duration::from_secs(15);
    while server.total_hits() < 1 {
        assert!(Instant::now() < deadline, "the fetch never started");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // The fetch goes on; its outcome's step meets the silence.
    proxy.silence();
    let silenced = Instant::now();
    let stalled = tokio::time::timeout(Duration::from_secs(15), async {
        loop {
            if let Some(state) = health.borrow_and_update().clone() {
                return state;
            }
            if health.changed().await.is_err() {
                panic!("the worker's health went away");
            }
        }
    })
    .await
    .expect("the worker paused");
    assert!(
        stalled.reason.contains("did not answer"),
        "{}",
        stalled.reason
    );
    assert!(
        silenced.elapsed() < Duration::from_secs(10),
        "{:?}",
        silenced.elapsed()
    );
    let _ = stop.send(true);
    run.abort();
    let _ = run.await;
}
