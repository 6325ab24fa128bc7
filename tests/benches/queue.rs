//! The queue itself, through the engine's public API: 100,000 no-op jobs enqueued one by one
//! and in one batch, then drained (claim → complete, no fetch) by 1 and 4 workers, at
//! synchronous=NORMAL and FULL. Each configuration runs in a child process so its peak RSS is
//! its own. Prints one JSON line per measurement, in the same shape as bench/run-peers.sh.
//!
//! Run: `cargo bench -p gleaner-tests --bench queue` (GLEANER_BENCH_N changes N,
//! GLEANER_BENCH_ROUNDS the repetitions, GLEANER_BENCH_SYNC=NORMAL or FULL picks one level).

use std::sync::Arc;
use std::time::{Duration, Instant};

use gleaner::engine::policy::Policy;
use gleaner::engine::store::{NewJob, Store, Success, db_path};

fn jobs(n: usize) -> Vec<NewJob> {
    (0..n)
        .map(|i| {
            // Many hosts, so the per-host limit never throttles a no-op drain.
            let host = format!("h{}.example", i % 1000);
            let url = format!("https://{host}/job/{i}");
            NewJob {
                url_key: url.clone(),
                url,
                host,
            }
        })
        .collect()
}

fn open(dir: &std::path::Path, full: bool) -> Store {
    let store = Store::open(&db_path(dir)).expect("store");
    store.set_synchronous_full(full).expect("synchronous");
    store
}

fn line(sync: &str, op: &str, workers: usize, n: usize, secs: f64) {
    println!(
        "{{\"peer\":\"gleaner\",\"sync\":\"{sync}\",\"op\":\"{op}\",\"workers\":{workers},\"n\":{n},\"seconds\":{secs:.4},\"per_sec\":{:.1},\"peak_rss_mb\":{:.1}}}",
        n as f64 / secs,
        gleaner_tests::peak_rss_kib() as f64 / 1024.0
    );
}

/// One configuration, in this (child) process.
fn child(sync: &str, op: &str, workers: usize, n: usize) {
    let full = sync == "FULL";
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(dir.path(), full);
    let all = jobs(n);
    match op {
        "enqueue_one" => {
            let t = Instant::now();
            for job in &all {
                store
                    .enqueue(None, std::slice::from_ref(job), 5, 1)
                    .expect("enqueue");
            }
            line(sync, op, 1, n, t.elapsed().as_secs_f64());
        }
        "enqueue_batch" => {
            let t = Instant::now();
            store.enqueue(None, &all, 5, 1).expect("enqueue");
            line(sync, op, 1, n, t.elapsed().as_secs_f64());
        }
        "drain" => {
            store.enqueue(None, &all, 5, 1).expect("enqueue");
            drop(store);
            let policy = Arc::new(Policy::default());
            let t = Instant::now();
            let handles: Vec<_> = (0..workers)
                .map(|w| {
                    let path = dir.path().to_path_buf();
                    let policy = policy.clone();
                    std::thread::spawn(move || {
                        let store = open(&path, full);
                        let owner = format!("bench-{w}");
                        let mut done = 0usize;
                        while let Some(c) = store
                            .claim(&owner, 2, Duration::from_secs(600), 10_000)
                            .expect("claim")
                        {
                            let ok = Success {
                                http_status: 200,
                                final_url: c.url.clone(),
                                ..Success::default()
                            };
                            store.complete(&c, &ok, &policy, 3).expect("complete");
                            done += 1;
                        }
                        done
                    })
                })
                .collect();
            let done: usize = handles.into_iter().map(|h| h.join().expect("worker")).sum();
            let secs = t.elapsed().as_secs_f64();
            assert_eq!(done, n, "every job ran exactly once");
            line(sync, op, workers, n, secs);
        }
        other => panic!("unknown op {other}"),
    }
}

fn main() {
    let n: usize = std::env::var("GLEANER_BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    if let Ok(spec) = std::env::var("GLEANER_BENCH_CHILD") {
        let parts: Vec<&str> = spec.split(',').collect();
        child(parts[0], parts[1], parts[2].parse().unwrap_or(1), n);
        return;
    }
    let exe = std::env::current_exe().expect("this binary");
    let rounds: usize = std::env::var("GLEANER_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let syncs: Vec<String> = std::env::var("GLEANER_BENCH_SYNC")
        .map(|v| v.split(',').map(str::to_string).collect())
        .unwrap_or_else(|_| vec!["NORMAL".into(), "FULL".into()]);
    for _ in 0..rounds {
        for sync in &syncs {
            for (op, workers) in [
                ("enqueue_one", 1),
                ("enqueue_batch", 1),
                ("drain", 1),
                ("drain", 4),
            ] {
                let out = std::process::Command::new(&exe)
                    .env("GLEANER_BENCH_CHILD", format!("{sync},{op},{workers}"))
                    .env("GLEANER_BENCH_N", n.to_string())
                    .output()
                    .expect("child");
                print!("{}", String::from_utf8_lossy(&out.stdout));
                if !out.status.success() {
                    eprintln!(
                        "{sync} {op} {workers}: {}",
                        String::from_utf8_lossy(&out.stderr)
                    );
                }
            }
        }
    }
}
