//! The queue on PostgreSQL (issue 19, part 2): 100,000 no-op jobs enqueued in one batch, then
//! drained by 1 and by 4 processes, each doing what `Worker::run` does with a handler that
//! returns at once (one `step` commits the finished jobs and claims the freed slots, 4 in
//! flight); and single claims at 1,000,000 pending with a paused host's 100,000 jobs at the
//! head of the oldest batch (the queue of issue 5). Prints one JSON line per measurement, in
//! the shape of bench/run-peers.sh, so bench/pg-peers/run.sh's graphile-worker and pg-boss
//! lines sit beside them.
//!
//! Run against a server: `GLEANER_TEST_DATABASE_URL=postgres://… cargo bench -p gleaner-tests
//! --bench queue_pg` (each run makes schemas of its own there). GLEANER_BENCH_N changes N,
//! GLEANER_BENCH_OPS picks ops (drain, or drain1 or drain4 for one
//! process count; claim_1m), GLEANER_BENCH_ROUNDS the repetitions.

use std::time::{Duration, Instant};

use gleaner::engine::policy::{NO_INTERVALS, Policy};
use gleaner::engine::postgres::PgStore;
use gleaner::engine::postgres::testing::fresh_database_url;
use gleaner::engine::queue::{ClaimRequest, NewJob, Queue, Success};

/// `n` jobs over `hosts` hosts; `tag` and `from` keep URLs unique across calls.
fn named_jobs(tag: &str, from: usize, n: usize, hosts: usize) -> Vec<NewJob> {
    (from..from + n)
        .map(|i| {
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

fn open(url: &str) -> PgStore {
    PgStore::open(url, "bench").expect("PostgreSQL store")
}

fn line(op: &str, workers: usize, n: usize, secs: f64, extra: &str) {
    println!(
        "{{\"peer\":\"gleaner-pg\",\"op\":\"{op}\",\"workers\":{workers},\"n\":{n},\"secs\":{secs:.3},\"jobs_per_sec\":{:.0}{extra}}}",
        n as f64 / secs
    );
}

/// Enqueue in pieces of 10,000 (one transaction each), as a large intake does.
fn enqueue(store: &PgStore, jobs: &[NewJob], now: i64) -> f64 {
    let started = Instant::now();
    let batch = store.create_batch("bench", "bench", now).expect("batch");
    for piece in jobs.chunks(10_000) {
        store.enqueue(Some(batch), piece, 5, now).expect("enqueue");
    }
    started.elapsed().as_secs_f64()
}

/// One drain process: steps until nothing is left to claim; how many jobs it finished.
fn drain_child(url: &str, inflight: usize, now: i64) -> usize {
    let store = open(url);
    let policy = Policy::default();
    let owner = format!("bench-{}", std::process::id());
    let mut finished = Vec::new();
    let mut done = 0;
    let mut idle = 0;
    loop {
        let request = ClaimRequest {
            owner: &owner,
            lease: Duration::from_secs(600),
            per_host: policy.per_host,
            intervals: &NO_INTERVALS,
            max: inflight,
            clock: None,
        };
        let step = store
            .step(&mut finished, &policy, now, Some(&request))
            .expect("step");
        done += step.settled.len();
        if step.claimed.is_empty() {
            if !store.has_active().expect("active") {
                break;
            }
            // Others hold the rest: look again shortly, as a woken worker would.
            idle += 1;
            std::thread::sleep(Duration::from_micros(500));
            continue;
        }
        finished = gleaner_tests::succeed_all(step.claimed);
    }
    if idle > 0 {
        eprintln!("drain child: {idle} empty claims");
    }
    done
}

fn drain(n: usize, workers: usize, now: i64) {
    let url = fresh_database_url();
    let store = open(&url);
    let secs = enqueue(&store, &named_jobs("job", 0, n, 1000), now);
    line("enqueue_batch", 1, n, secs, "");
    let exe = std::env::current_exe().expect("bench executable");
    let started = Instant::now();
    let children: Vec<_> = (0..workers)
        .map(|_| {
            std::process::Command::new(&exe)
                .env("GLEANER_BENCH_CHILD", format!("drain {now} {url}"))
                .stdout(std::process::Stdio::piped())
                .spawn()
                .expect("spawn drain process")
        })
        .collect();
    let mut done = 0;
    for c in children {
        let out = c.wait_with_output().expect("drain process");
        assert!(out.status.success(), "a drain process failed");
        done += String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse::<usize>()
            .expect("count");
    }
    let secs = started.elapsed().as_secs_f64();
    assert_eq!(done, n, "every job drained once");
    line("drain", workers, n, secs, ",\"inflight\":4");
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// The queue of issue 5 at 1,000,000 pending, then `n` single claims each followed by its
/// completion: p50 and p99 of the claims.
fn claim_1m(n: usize, now: i64) {
    let url = fresh_database_url();
    let store = open(&url);
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
    let started = Instant::now();
    let head = store.create_batch("head", "bench", now).expect("batch");
    for piece in paused.chunks(10_000) {
        store.enqueue(Some(head), piece, 5, now).expect("enqueue");
    }
    for piece in named_jobs("due", 0, 400_000, 1000).chunks(10_000) {
        store.enqueue(Some(head), piece, 5, now).expect("enqueue");
    }
    let later = store.create_batch("later", "bench", now).expect("batch");
    for piece in named_jobs("later", 0, 500_000, 1000).chunks(10_000) {
        store
            .enqueue(Some(later), piece, 5, now + 3_600_000)
            .expect("enqueue");
    }
    store.pause_host("paused.example", now).expect("pause");
    eprintln!("claim_1m: queue built in {:.0?}", started.elapsed());
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
    lat.sort_by(f64::total_cmp);
    println!(
        "{{\"peer\":\"gleaner-pg\",\"op\":\"claim_1m\",\"n\":{n},\"p50_ms\":{:.3},\"p99_ms\":{:.3}}}",
        percentile(&lat, 0.5),
        percentile(&lat, 0.99)
    );
}

fn main() {
    if let Ok(spec) = std::env::var("GLEANER_BENCH_CHILD") {
        let mut parts = spec.splitn(3, ' ');
        let (_op, now, url) = (parts.next(), parts.next(), parts.next());
        let now: i64 = now.and_then(|n| n.parse().ok()).expect("now");
        println!("{}", drain_child(url.expect("url"), 4, now));
        return;
    }
    let n: usize = std::env::var("GLEANER_BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let rounds: usize = std::env::var("GLEANER_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    let ops = std::env::var("GLEANER_BENCH_OPS").unwrap_or_else(|_| "drain,claim_1m".into());
    let now = 1_700_000_000_000;
    for _ in 0..rounds {
        for op in ops.split(',') {
            match op {
                "drain" => {
                    drain(n, 1, now);
                    drain(n, 4, now);
                }
                "drain1" => drain(n, 1, now),
                "drain4" => drain(n, 4, now),
                "claim_1m" => claim_1m(2_000, now),
                other => panic!("unknown op {other}"),
            }
        }
    }
}
