//! The queue itself, through the engine's public API: 100,000 no-op jobs enqueued one by one
//! and in one batch, then drained by 1 and 4 workers, at synchronous=NORMAL and FULL. A drain
//! worker does what `Worker::run` does with a handler that returns at once: one
//! `Store::step` commits the finished jobs and claims the freed slots (group commit), with
//! `inflight` jobs per worker (4, the default concurrency, and 32). Each configuration runs in
//! a child process so its peak RSS is its own. Prints one JSON line per measurement, in the
//! same shape as bench/run-peers.sh.
//!
//! `claim_1m` builds the 1M-job queue of issue 5 (500,000 due, 500,000 backed off, a paused
//! host holding 100,000 at the head of the oldest batch), times 20,000 single claims, then
//! drains 10,000 jobs five times (median); `drain_10k` is the same drain on five fresh
//! 10,000-row queues, for the ratio.
//!
//! Run: `cargo bench -p gleaner-tests --bench queue` (GLEANER_BENCH_N changes N,
//! GLEANER_BENCH_ROUNDS the repetitions, GLEANER_BENCH_SYNC=NORMAL or FULL picks one level,
//! GLEANER_BENCH_OPS a comma list of ops: enqueue_one, enqueue_batch, drain, claim_1m).

use std::sync::Arc;
use std::time::{Duration, Instant};

use gleaner::engine::policy::Policy;
use gleaner::engine::store::{ClaimRequest, NewJob, Store, Success, db_path};

fn jobs(n: usize) -> Vec<NewJob> {
    named_jobs("job", 0, n, 1000)
}

/// `n` jobs over `hosts` hosts; `tag` and `from` keep URLs unique across calls.
fn named_jobs(tag: &str, from: usize, n: usize, hosts: usize) -> Vec<NewJob> {
    (from..from + n)
        .map(|i| {
            // Many hosts, so the per-host limit (2) rarely throttles a no-op drain.
            let host = format!("h{}.example", i % hosts);
            let url = format!("https://{host}/{tag}/{i}");
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
    line_with(sync, op, workers, n, secs, "");
}

fn line_with(sync: &str, op: &str, workers: usize, n: usize, secs: f64, extra: &str) {
    println!(
        "{{\"peer\":\"gleaner\",\"sync\":\"{sync}\",\"op\":\"{op}\",\"workers\":{workers},\"n\":{n},\"seconds\":{secs:.4},\"per_sec\":{:.1},\"peak_rss_mb\":{:.1}{extra}}}",
        n as f64 / secs,
        gleaner_tests::peak_rss_kib() as f64 / 1024.0
    );
}

/// `workers` threads, each with its own connection, drain until `limit` jobs are done or
/// nothing is claimable, `inflight` jobs at a time each. Returns the jobs done.
fn drain(
    path: &std::path::Path,
    full: bool,
    workers: usize,
    inflight: usize,
    limit: usize,
    now: i64,
) -> usize {
    let policy = Arc::new(Policy::default());
    let left = Arc::new(std::sync::atomic::AtomicIsize::new(limit as isize));
    let handles: Vec<_> = (0..workers)
        .map(|w| {
            let path = path.to_path_buf();
            let (policy, left) = (policy.clone(), left.clone());
            std::thread::spawn(move || {
                let store = open(&path, full);
                // As Worker::new does.
                store.checkpoint_in_background().expect("checkpointer");
                let owner = format!("bench-{w}");
                let mut done = 0usize;
                let mut finished: Vec<_> = Vec::new();
                loop {
                    use std::sync::atomic::Ordering;
                    let want = left
                        .fetch_sub(inflight as isize, Ordering::Relaxed)
                        .clamp(0, inflight as isize) as usize;
                    let request = ClaimRequest {
                        owner: &owner,
                        lease: Duration::from_secs(600),
                        per_host: policy.per_host,
                        max: want,
                    };
                    let step = store
                        .step(std::mem::take(&mut finished), &policy, now, Some(&request))
                        .expect("step");
                    done += step.settled.len();
                    if step.claimed.is_empty() {
                        left.fetch_add(inflight as isize, Ordering::Relaxed);
                        if left.load(Ordering::Relaxed) <= 0 {
                            break;
                        }
                        // The rest is running in other workers, or its hosts are at their
                        // limit: look again shortly, as Worker::run does when woken.
                        std::thread::sleep(Duration::from_micros(200));
                        continue;
                    }
                    // Hand back the slots this round did not fill.
                    left.fetch_add((inflight - step.claimed.len()) as isize, Ordering::Relaxed);
                    finished = gleaner_tests::succeed_all(step.claimed);
                }
                done
            })
        })
        .collect();
    handles.into_iter().map(|h| h.join().expect("worker")).sum()
}

fn inflight() -> Vec<usize> {
    std::env::var("GLEANER_BENCH_INFLIGHT")
        .ok()
        .map(|v| v.split(',').filter_map(|x| x.parse().ok()).collect())
        .unwrap_or_else(|| vec![4, 32])
}

/// `n` single claims (each its own transaction), each followed by its completion: the
/// claims' p50 and p99 in ms, and their total in seconds. No claim may reach the paused host.
fn time_claims(store: &Store, n: usize, now: i64) -> (f64, f64, f64) {
    let policy = Policy::default();
    let mut lat = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        let c = store
            .claim("bench", now, Duration::from_secs(600), 10_000)
            .expect("claim")
            .expect("a due job");
        lat.push(t.elapsed().as_secs_f64() * 1000.0);
        assert_ne!(c.host, "paused.example");
        let ok = Success {
            http_status: 200,
            ..Success::default()
        };
        store.complete(&c, &ok, &policy, now).expect("complete");
    }
    let total = lat.iter().sum::<f64>() / 1000.0;
    lat.sort_by(f64::total_cmp);
    (percentile(&lat, 0.5), percentile(&lat, 0.99), total)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// Drain 10,000 jobs with 32 in flight: jobs per second.
fn drain_10k(path: &std::path::Path, full: bool, workers: usize, now: i64) -> f64 {
    let t = Instant::now();
    let done = drain(path, full, workers, 32, 10_000, now);
    assert_eq!(done, 10_000);
    done as f64 / t.elapsed().as_secs_f64()
}

/// Five runs' rates, sorted (the median is the third).
fn five_drains(run: impl FnMut() -> f64) -> Vec<f64> {
    let mut rates: Vec<f64> = std::iter::repeat_with(run).take(5).collect();
    rates.sort_by(f64::total_cmp);
    rates
}

/// One configuration, in this (child) process.
fn child(sync: &str, op: &str, workers: usize, n: usize) {
    let full = sync == "FULL";
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(dir.path(), full);
    let all = jobs(n);
    match op {
        "enqueue_one" => {
            // One transaction per job, into one batch (as the peers' queues have no batches;
            // `enqueue(None, ..)` would also create a batch per call).
            let t = Instant::now();
            let batch = store.create_batch("bench", "bench", 1).expect("batch");
            for job in &all {
                store
                    .enqueue(Some(batch), std::slice::from_ref(job), 5, 1)
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
            for k in inflight() {
                if k != inflight()[0] {
                    // A fresh queue for each in-flight setting.
                    let store = open(dir.path(), full);
                    store
                        .enqueue(None, &named_jobs(&format!("k{k}"), 0, n, 1000), 5, 1)
                        .expect("enqueue");
                }
                let t = Instant::now();
                let done = drain(dir.path(), full, workers, k, n, 2);
                let secs = t.elapsed().as_secs_f64();
                assert_eq!(done, n, "every job ran exactly once");
                line_with(sync, op, workers, n, secs, &format!(",\"inflight\":{k}"));
            }
        }
        "claim_1m" => {
            // Oldest batch: a paused host's 100,000 jobs first, then 400,000 due jobs over
            // 1,000 hosts. A second batch: 500,000 jobs backed off (due in an hour).
            let now = 1_000_000;
            let paused: Vec<NewJob> = (0..100_000)
                .map(|i| {
                    let url = format!("https://paused.example/{i}");
                    NewJob {
                        url_key: url.clone(),
                        url,
                        host: "paused.example".into(),
                    }
                })
                .collect();
            let t = Instant::now();
            let head = store.create_batch("head", "bench", now).expect("batch");
            store.enqueue(Some(head), &paused, 5, now).expect("enqueue");
            store
                .enqueue(Some(head), &named_jobs("due", 0, 400_000, 1000), 5, now)
                .expect("enqueue");
            store
                .enqueue(
                    None,
                    &named_jobs("later", 0, 500_000, 1000),
                    5,
                    now + 3_600_000,
                )
                .expect("enqueue");
            store.pause_host("paused.example", now).expect("pause");
            store.checkpoint_in_background().expect("checkpointer");
            eprintln!("built the 1M queue in {:.1} s", t.elapsed().as_secs_f64());
            let (p50, p99, _) = time_claims(&store, 20_000, now + 1);
            drop(store);
            // Five drains of 10,000 jobs each from the 1M queue, and below five from fresh
            // 10,000-job queues: the same work and the same start-up cost, so the medians
            // compare the queue's size and nothing else.
            let rates = five_drains(|| drain_10k(dir.path(), full, workers, now + 2));
            line_with(
                sync,
                "claim_1m",
                workers,
                10_000,
                10_000.0 / rates[2],
                &format!(
                    ",\"claim_p50_ms\":{p50:.4},\"claim_p99_ms\":{p99:.4},\"inflight\":32,\"drain_rates\":{rates:.0?}"
                ),
            );
            // The same single claims on a 10,000-row queue, for comparison.
            let small = tempfile::tempdir().expect("tempdir");
            let store = open(small.path(), full);
            store
                .enqueue(None, &named_jobs("lat", 0, 10_000, 1000), 5, now)
                .expect("enqueue");
            store.checkpoint_in_background().expect("checkpointer");
            let (p50, p99, total) = time_claims(&store, 5_000, now + 1);
            drop(store);
            line_with(
                sync,
                "claim_10k",
                1,
                5_000,
                total,
                &format!(",\"claim_p50_ms\":{p50:.4},\"claim_p99_ms\":{p99:.4}"),
            );
            // The same drain on a 10,000-row queue.
            let rates = five_drains(|| {
                let small = tempfile::tempdir().expect("tempdir");
                let store = open(small.path(), full);
                store
                    .enqueue(None, &named_jobs("small", 0, 10_000, 1000), 5, now)
                    .expect("enqueue");
                drop(store);
                drain_10k(small.path(), full, workers, now + 2)
            });
            line_with(
                sync,
                "drain_10k",
                workers,
                10_000,
                10_000.0 / rates[2],
                &format!(",\"inflight\":32,\"drain_rates\":{rates:.0?}"),
            );
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
    let ops: Vec<String> = std::env::var("GLEANER_BENCH_OPS")
        .map(|v| v.split(',').map(str::to_string).collect())
        .unwrap_or_else(|_| {
            ["enqueue_one", "enqueue_batch", "drain", "claim_1m"]
                .map(String::from)
                .to_vec()
        });
    for _ in 0..rounds {
        for sync in &syncs {
            for (op, workers) in [
                ("enqueue_one", 1),
                ("enqueue_batch", 1),
                ("drain", 1),
                ("drain", 4),
                ("claim_1m", 1),
            ] {
                if !ops.iter().any(|o| o == op) {
                    continue;
                }
                let out = std::process::Command::new(&exe)
                    .env("GLEANER_BENCH_CHILD", format!("{sync},{op},{workers}"))
                    .env("GLEANER_BENCH_N", n.to_string())
                    .env(
                        "GLEANER_BENCH_INFLIGHT",
                        inflight()
                            .iter()
                            .map(|k| k.to_string())
                            .collect::<Vec<_>>()
                            .join(","),
                    )
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
