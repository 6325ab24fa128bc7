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
//! drains 10,000 jobs seven times (median), each drain followed by the same drain of a fresh
//! 10,000-row queue (`drain_10k`), for the ratio; then seven such pairs again on connections
//! kept open ("warm", as a worker's is). Each drain also reports its workers' CPU time per job
//! and their wait for a CPU, so the machine's other tenants show.
//!
//! `wal_frames` counts what a drain of 1,000 jobs writes to the WAL, per table and index, from
//! the drain bench's queue of N jobs and from the 1M-job queue.
//!
//! Run: `cargo bench -p gleaner-tests --bench queue` (GLEANER_BENCH_N changes N,
//! GLEANER_BENCH_ROUNDS the repetitions, GLEANER_BENCH_SYNC=NORMAL or FULL picks one level,
//! GLEANER_BENCH_OPS a comma list of ops: enqueue_one, enqueue_batch, drain, claim_1m,
//! wal_frames).

use std::sync::Arc;
use std::time::{Duration, Instant};

use gleaner::engine::policy::{NO_INTERVALS, Policy};
use gleaner::engine::queue::{ClaimRequest, NewJob, Queue, Success};
use gleaner::engine::sqlite::{Store, db_path};

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
                reference: None,
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

/// What a drain did: the jobs done, and its workers' time on a CPU and waiting for one (ns,
/// summed over the worker threads; the background checkpointers are not counted).
#[derive(Default)]
struct Drained {
    done: usize,
    cpu_ns: u64,
    wait_ns: u64,
}

/// `workers` threads, each with its own connection, drain until `limit` jobs are done or
/// nothing is claimable, `inflight` jobs at a time each.
fn drain(
    path: &std::path::Path,
    full: bool,
    workers: usize,
    inflight: usize,
    limit: usize,
    now: i64,
) -> Drained {
    drain_on(None, path, full, workers, inflight, limit, now)
}

/// A connection that stays open between drains, as a worker's does, with its checkpointer.
fn kept_store(path: &std::path::Path, full: bool) -> Arc<Store> {
    let store = open(path, full);
    store.checkpoint_in_background().expect("checkpointer");
    Arc::new(store)
}

/// [`drain`], on the connections in `kept` (one per worker) if given, else on new ones.
fn drain_on(
    kept: Option<&[Arc<Store>]>,
    path: &std::path::Path,
    full: bool,
    workers: usize,
    inflight: usize,
    limit: usize,
    now: i64,
) -> Drained {
    let policy = Arc::new(Policy::default());
    let left = Arc::new(std::sync::atomic::AtomicIsize::new(limit as isize));
    let handles: Vec<_> = (0..workers)
        .map(|w| {
            let path = path.to_path_buf();
            let (policy, left) = (policy.clone(), left.clone());
            let kept = kept.map(|k| k[w].clone());
            std::thread::spawn(move || {
                let sched_at_start = gleaner_tests::thread_cpu_and_wait_ns();
                // As Worker::new does, and through the queue interface as the worker calls it.
                let store: Arc<dyn Queue> = kept.unwrap_or_else(|| kept_store(&path, full));
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
                        intervals: &NO_INTERVALS,
                        max: want,
                        clock: None,
                    };
                    let step = store
                        .step(&mut finished, &policy, now, Some(&request))
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
                let (cpu_ns, wait_ns) =
                    match (sched_at_start, gleaner_tests::thread_cpu_and_wait_ns()) {
                        (Some((c0, w0)), Some((c1, w1))) => (c1 - c0, w1 - w0),
                        _ => (0, 0),
                    };
                Drained {
                    done,
                    cpu_ns,
                    wait_ns,
                }
            })
        })
        .collect();
    handles
        .into_iter()
        .map(|h| h.join().expect("worker"))
        .fold(Drained::default(), |a, b| Drained {
            done: a.done + b.done,
            cpu_ns: a.cpu_ns + b.cpu_ns,
            wait_ns: a.wait_ns + b.wait_ns,
        })
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

/// The 1M-job queue of issue 5, due at `now`: in the oldest batch a paused host's 100,000
/// jobs first, then 400,000 due jobs over 1,000 hosts; in a second batch 500,000 jobs backed
/// off (due in an hour).
fn queue_1m(store: &Store, now: i64) {
    let paused: Vec<NewJob> = (0..100_000)
        .map(|i| {
            let url = format!("https://paused.example/{i}");
            NewJob {
                url_key: url.clone(),
                url,
                host: "paused.example".into(),
                reference: None,
            }
        })
        .collect();
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
}

/// Which tables and indexes a drain writes, measured in the WAL: drains `jobs` jobs from the
/// queue at `dir`, `inflight` at a time, on one connection without the background checkpointer
/// (so that the WAL keeps every frame; `jobs` must stay below the automatic checkpoint's 4,000
/// frames), then reads the page number of every frame and maps it to its B-tree with the
/// `dbstat` table. Prints the commits and the frames per job of each B-tree.
fn wal_frames(dir: &std::path::Path, queue: &str, inflight: usize, jobs: usize, now: i64) {
    let path = db_path(dir);
    let store = Store::open(&path).expect("store");
    let policy = Policy::default();
    let (mut claimed, mut done, mut steps) = (0, 0, 0);
    let mut finished = Vec::new();
    while done < jobs {
        steps += 1;
        let request = ClaimRequest {
            owner: "bench",
            lease: Duration::from_secs(600),
            per_host: policy.per_host,
            intervals: &NO_INTERVALS,
            max: inflight.min(jobs - claimed),
            clock: None,
        };
        let step = store
            .step(&mut finished, &policy, now, Some(&request))
            .expect("step");
        done += step.settled.len();
        claimed += step.claimed.len();
        finished = gleaner_tests::succeed_all(step.claimed);
    }
    // A copy, taken while the connection is open: closing it checkpoints and deletes the WAL.
    let copy = tempfile::tempdir().expect("tempdir");
    let copied = copy.path().join("copy.db");
    std::fs::copy(&path, &copied).expect("copy the database");
    let wal = std::fs::read(path.with_extension("db-wal")).expect("the WAL");
    std::fs::write(copied.with_extension("db-wal"), &wal).expect("copy the WAL");
    drop(store);
    let be = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    let page_size = be(&wal[8..]) as usize;
    let mut frames: std::collections::HashMap<u32, usize> = Default::default();
    let mut commits = 0;
    for frame in wal[32..].chunks_exact(24 + page_size) {
        // A frame of an earlier generation of the WAL has other salts.
        if frame[8..16] != wal[16..24] {
            break;
        }
        *frames.entry(be(frame)).or_default() += 1;
        commits += usize::from(be(&frame[4..]) != 0);
    }
    assert_eq!(
        commits, steps,
        "an automatic checkpoint rewound the WAL: drain fewer jobs"
    );
    let conn = rusqlite::Connection::open(&copied).expect("open the copy");
    let mut names: std::collections::BTreeMap<String, usize> = Default::default();
    let mut stmt = conn
        .prepare("SELECT name, pageno FROM dbstat")
        .expect("dbstat");
    let pages: std::collections::HashMap<u32, String> = stmt
        .query_map([], |r| Ok((r.get(1)?, r.get(0)?)))
        .expect("dbstat")
        .collect::<rusqlite::Result<_>>()
        .expect("dbstat");
    for (page, n) in &frames {
        let name = pages.get(page).cloned().unwrap_or_else(|| "(free)".into());
        *names.entry(name).or_default() += n;
    }
    let total: usize = frames.values().sum();
    let per_job: Vec<String> = names
        .iter()
        .map(|(name, n)| format!("\"{name}\":{:.3}", *n as f64 / jobs as f64))
        .collect();
    println!(
        "{{\"op\":\"wal_frames\",\"queue\":\"{queue}\",\"inflight\":{inflight},\"jobs\":{jobs},\"commits\":{commits},\"frames_per_commit\":{:.2},\"frames_per_job\":{:.3},\"per_job\":{{{}}}}}",
        total as f64 / commits.max(1) as f64,
        total as f64 / jobs as f64,
        per_job.join(",")
    );
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// One drain of 10,000 jobs with 32 in flight: jobs per second, and the workers' CPU time and
/// wait for a CPU per job, in µs.
#[derive(Clone, Copy)]
struct DrainRate {
    per_sec: f64,
    cpu_us: f64,
    wait_us: f64,
}

fn drain_10k(
    kept: Option<&[Arc<Store>]>,
    path: &std::path::Path,
    full: bool,
    workers: usize,
    now: i64,
) -> DrainRate {
    let t = Instant::now();
    let d = drain_on(kept, path, full, workers, 32, 10_000, now);
    assert_eq!(d.done, 10_000);
    DrainRate {
        per_sec: d.done as f64 / t.elapsed().as_secs_f64(),
        cpu_us: d.cpu_ns as f64 / 1000.0 / d.done as f64,
        wait_us: d.wait_ns as f64 / 1000.0 / d.done as f64,
    }
}

/// How many drains of each queue `claim_1m` times, alternating between the two.
const PAIRED_DRAINS: usize = 7;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    percentile(&v, 0.5)
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
                let done = drain(dir.path(), full, workers, k, n, 2).done;
                let secs = t.elapsed().as_secs_f64();
                assert_eq!(done, n, "every job ran exactly once");
                line_with(sync, op, workers, n, secs, &format!(",\"inflight\":{k}"));
            }
        }
        "claim_1m" => {
            let now = 1_000_000;
            let t = Instant::now();
            queue_1m(&store, now);
            store.checkpoint_in_background().expect("checkpointer");
            eprintln!("built the 1M queue in {:.1} s", t.elapsed().as_secs_f64());
            let (p50, p99, _) = time_claims(&store, 20_000, now + 1);
            drop(store);
            // The same single claims on a 10,000-row queue, for comparison.
            let small = tempfile::tempdir().expect("tempdir");
            let store = open(small.path(), full);
            store
                .enqueue(None, &named_jobs("lat", 0, 10_000, 1000), 5, now)
                .expect("enqueue");
            store.checkpoint_in_background().expect("checkpointer");
            let (p50_small, p99_small, total_small) = time_claims(&store, 5_000, now + 1);
            drop(store);
            // Drains of 10,000 jobs from the 1M queue, each followed by the same drain of a
            // fresh 10,000-job queue: the same work and the same start-up cost, and
            // alternating puts both under the same load from the machine's other tenants, so
            // the ratio compares the queue's size and nothing else.
            //
            // Each of those drains opens new connections, and the last connection to close
            // deletes the WAL file, so each drain also grows a new WAL file and maps the
            // database afresh. A worker keeps its connection, so the same pairs run again on
            // connections kept open ("warm"): the 1M queue's from before its first warm drain,
            // each fresh 10k queue's from before its jobs are queued.
            let small_queue = |tag: String, keep: bool| {
                let fresh = tempfile::tempdir().expect("tempdir");
                let conns: Option<Vec<Arc<Store>>> = keep.then(|| {
                    (0..workers)
                        .map(|_| kept_store(fresh.path(), full))
                        .collect()
                });
                let queue = |store: &Store| {
                    store
                        .enqueue(None, &named_jobs(&tag, 0, 10_000, 1000), 5, now)
                        .expect("enqueue");
                };
                match &conns {
                    Some(c) => queue(&c[0]),
                    None => queue(&open(fresh.path(), full)),
                }
                (fresh, conns)
            };
            let mut big = Vec::new();
            let mut small = Vec::new();
            for round in 0..PAIRED_DRAINS {
                big.push(drain_10k(None, dir.path(), full, workers, now + 2));
                let (fresh, _) = small_queue(format!("small{round}"), false);
                small.push(drain_10k(None, fresh.path(), full, workers, now + 2));
            }
            let kept: Vec<Arc<Store>> =
                (0..workers).map(|_| kept_store(dir.path(), full)).collect();
            let mut warm = Vec::new();
            let mut warm_small = Vec::new();
            for round in 0..PAIRED_DRAINS {
                warm.push(drain_10k(Some(&kept), dir.path(), full, workers, now + 2));
                let (fresh, conns) = small_queue(format!("warm{round}"), true);
                warm_small.push(drain_10k(
                    conns.as_deref(),
                    fresh.path(),
                    full,
                    workers,
                    now + 2,
                ));
                drop(conns);
            }
            drop(kept);
            // The median rate, and the drains' fields named with `prefix` ("warm_" or none).
            let summary = |prefix: &str, runs: &[DrainRate]| {
                let rates = median(runs.iter().map(|r| r.per_sec).collect());
                let cpu = median(runs.iter().map(|r| r.cpu_us).collect());
                let wait = median(runs.iter().map(|r| r.wait_us).collect());
                let all: Vec<f64> = runs.iter().map(|r| r.per_sec).collect();
                (
                    rates,
                    format!(
                        ",\"{prefix}drain_rates\":{all:.0?},\"{prefix}cpu_us_per_job\":{cpu:.1},\"{prefix}cpu_wait_us_per_job\":{wait:.1}"
                    ),
                )
            };
            let (big_rate, big_fields) = summary("", &big);
            let (warm_rate, warm_fields) = summary("warm_", &warm);
            let (small_rate, small_fields) = summary("", &small);
            let (warm_small_rate, warm_small_fields) = summary("warm_", &warm_small);
            let ratios = |big: &[DrainRate], small: &[DrainRate]| -> (Vec<f64>, f64) {
                let pairs: Vec<f64> = big
                    .iter()
                    .zip(small)
                    .map(|(b, s)| b.per_sec / s.per_sec)
                    .collect();
                let cpu = median(small.iter().map(|r| r.cpu_us).collect())
                    / median(big.iter().map(|r| r.cpu_us).collect());
                (pairs, cpu)
            };
            let (pair_ratios, cpu_ratio) = ratios(&big, &small);
            let (warm_pair_ratios, warm_cpu_ratio) = ratios(&warm, &warm_small);
            line_with(
                sync,
                "claim_1m",
                workers,
                10_000,
                10_000.0 / big_rate,
                &format!(
                    ",\"claim_p50_ms\":{p50:.4},\"claim_p99_ms\":{p99:.4},\"inflight\":32{big_fields},\"warm_per_sec\":{warm_rate:.1}{warm_fields}"
                ),
            );
            line_with(
                sync,
                "claim_10k",
                1,
                5_000,
                total_small,
                &format!(",\"claim_p50_ms\":{p50_small:.4},\"claim_p99_ms\":{p99_small:.4}"),
            );
            line_with(
                sync,
                "drain_10k",
                workers,
                10_000,
                10_000.0 / small_rate,
                &format!(
                    ",\"inflight\":32{small_fields},\"ratio_1m_10k\":{:.3},\"pair_ratios\":{pair_ratios:.2?},\"median_pair_ratio\":{:.3},\"cpu_ratio_1m_10k\":{cpu_ratio:.3},\"warm_per_sec\":{warm_small_rate:.1}{warm_small_fields},\"warm_ratio_1m_10k\":{:.3},\"warm_pair_ratios\":{warm_pair_ratios:.2?},\"warm_median_pair_ratio\":{:.3},\"warm_cpu_ratio_1m_10k\":{warm_cpu_ratio:.3}",
                    big_rate / small_rate,
                    median(pair_ratios.clone()),
                    warm_rate / warm_small_rate,
                    median(warm_pair_ratios.clone()),
                ),
            );
        }
        "wal_frames" => {
            // The drain bench's queue, and the 1M-job queue: what one drain writes to each.
            let now = 1_000_000;
            store.enqueue(None, &all, 5, now).expect("enqueue");
            drop(store);
            for k in inflight() {
                wal_frames(dir.path(), &format!("{n}"), k, 1_000, now);
            }
            let big = tempfile::tempdir().expect("tempdir");
            queue_1m(&open(big.path(), full), now);
            for k in inflight() {
                wal_frames(big.path(), "1m", k, 1_000, now + 1);
            }
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
                ("wal_frames", 1),
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
