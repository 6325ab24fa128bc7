//! Faults a laptop brings, against the real `gleaner run` on real small tmpfs disks: for each,
//! jobs lost, jobs wrongly dead, retries wrongly spent (every page is a good page, so any dead
//! job or spent retry is wrong), and the time from the fault clearing to the first job saved
//! after it. Needs root (mount), as CI has.
//!
//! Run: `cargo build -p gleaner --bins && cargo bench -p gleaner-tests --bench reliability
//! --profile dev` (GLEANER_BENCH_ROUNDS, default 5). One JSON line per round, then a table.

use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use gleaner_tests::server::FaultServer;
use gleaner_tests::{Sandbox, Tmpfs};

const JOBS: usize = 40;

struct Round {
    lost: i64,
    dead: i64,
    spent: i64,
    resume: Duration,
}

fn counts(db: &Path) -> (i64, i64, i64, i64) {
    let c = rusqlite::Connection::open(db).expect("db");
    c.busy_timeout(Duration::from_secs(10)).expect("timeout");
    c.query_row(
        "SELECT count(*), coalesce(sum(status = 'done'), 0), coalesce(sum(status = 'dead'), 0), \
             coalesce(sum(net_failures + server_failures + blocked_failures), 0) FROM jobs",
        [],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
    )
    .expect("counts")
}

fn wait(what: &str, limit: Duration, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !ok() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn stalled(db: &Path) -> bool {
    let c = rusqlite::Connection::open(db).expect("db");
    c.busy_timeout(Duration::from_secs(10)).expect("timeout");
    c.query_row(
        "SELECT count(*) FROM settings WHERE key = 'stalled'",
        [],
        |r| r.get::<_, i64>(0),
    )
    .map(|n| n > 0)
    .unwrap_or(false)
}

/// One round: queue JOBS pages, run, let a few finish, `break_it`, wait for the stall and a few
/// seconds of probing, `fix_it`, then time the first job saved after it and drain.
fn round(
    server: &FaultServer,
    sandbox: &Sandbox,
    data: &Path,
    break_it: &dyn Fn(),
    fix_it: &dyn Fn(),
) -> Round {
    let urls: Vec<String> = (0..JOBS)
        .map(|n| server.url(&format!("/article?kb=64&n={n}&r={}", rand_tag())))
        .collect();
    let mut add = sandbox.cmd();
    add.env("GLEANER_DATA_DIR", data).arg("add").args(&urls);
    assert!(add.output().expect("add").status.success());
    let db = data.join("gleaner.db");
    let mut run: Child = sandbox
        .cmd()
        .env("GLEANER_DATA_DIR", data)
        .args(["--concurrency", "2", "run"])
        .stderr(Stdio::null())
        .spawn()
        .expect("run");
    wait("a few saved", Duration::from_secs(30), || {
        counts(&db).1 >= 3
    });
    break_it();
    // A database on the full disk may not take the stall's row: then give it a few seconds.
    let broke = Instant::now();
    wait("the stall", Duration::from_secs(30), || {
        stalled(&db) || broke.elapsed() > Duration::from_secs(8)
    });
    std::thread::sleep(Duration::from_secs(3));
    let before = counts(&db).1;
    fix_it();
    let cleared = Instant::now();
    wait("the first save after", Duration::from_secs(30), || {
        counts(&db).1 > before
    });
    let resume = cleared.elapsed();
    wait("the drain", Duration::from_secs(60), || {
        counts(&db).1 == JOBS as i64
    });
    let _ = run.kill();
    let _ = run.wait();
    let (total, _, dead, spent) = counts(&db);
    Round {
        lost: JOBS as i64 - total,
        dead,
        spent,
        resume,
    }
}

fn rand_tag() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}

fn remount(dir: &Path, opts: &str) {
    let ok = std::process::Command::new("mount")
        .args(["-o", &format!("remount,{opts}")])
        .arg(dir)
        .status()
        .expect("mount");
    assert!(ok.success());
}

fn main() {
    let rounds: usize = std::env::var("GLEANER_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    let server = FaultServer::start();
    let mut table = Vec::new();

    // 1. The library's disk fills up (the database is elsewhere); space is freed.
    let mut results = Vec::new();
    for _ in 0..rounds {
        let sandbox = Sandbox::new();
        let data = sandbox.path().to_path_buf();
        let disk = Tmpfs::mount_at(&data.join("library"), "8m");
        let filler = std::cell::RefCell::new(None);
        let r = round(
            &server,
            &sandbox,
            &data,
            &|| *filler.borrow_mut() = Some(disk.fill()),
            &|| {
                if let Some(f) = filler.borrow_mut().take() {
                    std::fs::remove_file(f).expect("free");
                }
            },
        );
        results.push(r);
    }
    table.push(("library disk full (ENOSPC), space freed", results));

    // 2. The whole data folder (database and library) on a disk that fills up; it grows.
    let mut results = Vec::new();
    for _ in 0..rounds {
        let sandbox = Sandbox::new();
        let disk = Tmpfs::mount("8m");
        let data = disk.path().join("data");
        let r = round(
            &server,
            &sandbox,
            &data,
            &|| {
                disk.fill();
            },
            &|| disk.resize("64m"),
        );
        results.push(r);
    }
    table.push(("data folder's disk full, disk grown", results));

    // 3. The library's file system turns read-only, then writable again.
    let mut results = Vec::new();
    for _ in 0..rounds {
        let sandbox = Sandbox::new();
        let data = sandbox.path().to_path_buf();
        let disk = Tmpfs::mount_at(&data.join("library"), "64m");
        let lib = disk.path().to_path_buf();
        let r = round(&server, &sandbox, &data, &|| remount(&lib, "ro"), &|| {
            remount(&lib, "rw")
        });
        results.push(r);
    }
    table.push(("library read-only (EROFS), made writable", results));

    println!();
    println!(
        "| fault | rounds | jobs lost | wrongly dead | retries wrongly spent | fault cleared → work resumed (median, min–max) |"
    );
    println!("|---|---|---|---|---|---|");
    for (name, rs) in &table {
        for r in rs {
            println!(
                "{{\"fault\":\"{name}\",\"lost\":{},\"dead\":{},\"spent\":{},\"resume_ms\":{}}}",
                r.lost,
                r.dead,
                r.spent,
                r.resume.as_millis()
            );
        }
    }
    for (name, rs) in &table {
        let mut ms: Vec<u128> = rs.iter().map(|r| r.resume.as_millis()).collect();
        ms.sort_unstable();
        println!(
            "| {name} | {} | {} | {} | {} | {:.1} s ({:.1}–{:.1} s) |",
            rs.len(),
            rs.iter().map(|r| r.lost).sum::<i64>(),
            rs.iter().map(|r| r.dead).sum::<i64>(),
            rs.iter().map(|r| r.spent).sum::<i64>(),
            ms[ms.len() / 2] as f64 / 1000.0,
            ms[0] as f64 / 1000.0,
            ms[ms.len() - 1] as f64 / 1000.0
        );
    }
}
