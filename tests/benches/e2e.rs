//! End to end: the real worker (claim → GET → extract and save → complete, group-committed)
//! against local keep-alive servers on 16 loopback hosts, 32 fetches in flight (2 per host).
//! Then the same work taken apart, to say where the time goes:
//! - `get_only`: the same GETs with the worker's fetcher and 32 in flight, nothing else;
//! - `save_only`: extraction and saving of the same pages, one after another;
//! - `queue_only`: claim and complete of as many no-op jobs, 32 in flight (Store::step).
//!
//! Run: `cargo bench -p gleaner-tests --bench e2e` (GLEANER_BENCH_N jobs, default 5,000;
//! GLEANER_BENCH_ROUNDS, default 3; GLEANER_BENCH_KB=N for articles of N KiB instead of the
//! small `/ok/` pages). One JSON line per measurement.

use std::sync::Arc;
use std::time::{Duration, Instant};

use gleaner::engine::clock::{SystemClock, system_now_ms};
use gleaner::engine::fetch::{Fetcher, Limits};
use gleaner::engine::intake;
use gleaner::engine::library::{Library, Provenance, SaveOptions};
use gleaner::engine::policy::{NO_INTERVALS, Policy};
use gleaner::engine::queue::{ClaimRequest, NewJob};
use gleaner::engine::sqlite::{Store, db_path};
use gleaner::engine::worker::{RunMode, Worker};
use gleaner_tests::server::FaultServer;

const HOSTS: usize = 16;

fn line(op: &str, n: usize, secs: f64) {
    println!(
        "{{\"op\":\"{op}\",\"n\":{n},\"concurrency\":32,\"hosts\":{HOSTS},\"seconds\":{secs:.4},\"per_sec\":{:.1},\"peak_rss_mb\":{:.1}}}",
        n as f64 / secs,
        gleaner_tests::peak_rss_kib() as f64 / 1024.0
    );
}

/// A job's page: the small `/ok/` page, or with GLEANER_BENCH_KB=N an article of about N KiB
/// (the index's cost grows with the text). Fresh paths each round.
fn page_path(round: usize, i: usize) -> String {
    match std::env::var("GLEANER_BENCH_KB") {
        Ok(kb) => format!("/article?kb={kb}&page=r{round}-{i}"),
        Err(_) => format!("/ok/r{round}-{i}"),
    }
}

fn policy() -> Policy {
    Policy {
        concurrency: 32,
        per_host: 2,
        ..Policy::default()
    }
}

async fn worker_round(urls: &[String]) -> f64 {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Arc::new(Store::open(&db_path(dir.path())).expect("store"));
    let jobs: Vec<NewJob> = intake::scan_args(urls)
        .iter()
        .filter_map(|f| f.as_new_job())
        .collect();
    assert_eq!(jobs.len(), urls.len());
    store
        .enqueue(None, &jobs, 5, system_now_ms())
        .expect("enqueue");
    let library = Library::new(dir.path().join("library"));
    let worker =
        Worker::new(store.clone(), Arc::new(SystemClock), library, policy()).expect("worker");
    let (_stop, shutdown) = tokio::sync::watch::channel(false);
    let t = Instant::now();
    let summary = worker
        .run(RunMode::UntilIdle, shutdown)
        .await
        .expect("worker run");
    let secs = t.elapsed().as_secs_f64();
    assert_eq!(summary.done as usize, urls.len(), "{summary:?}");
    secs
}

async fn get_round(urls: &[String]) -> (f64, Vec<(String, gleaner::engine::fetch::Fetched)>) {
    let fetcher = Fetcher::new(10).expect("fetcher");
    let limits = Limits {
        timeout: Duration::from_secs(30),
        max_body: 50 * 1024 * 1024,
    };
    let permits = Arc::new(tokio::sync::Semaphore::new(32));
    let mut set = tokio::task::JoinSet::new();
    let t = Instant::now();
    for url in urls {
        let (fetcher, permits, url) = (fetcher.clone(), permits.clone(), url.clone());
        set.spawn(async move {
            let _permit = permits.acquire_owned().await.expect("semaphore");
            let fetched = fetcher.get(&url, limits).await.expect("GET");
            (url, fetched)
        });
    }
    let mut pages = Vec::with_capacity(urls.len());
    while let Some(joined) = set.join_next().await {
        pages.push(joined.expect("task"));
    }
    (t.elapsed().as_secs_f64(), pages)
}

fn save_round(pages: &[(String, gleaner::engine::fetch::Fetched)]) -> f64 {
    let dir = tempfile::tempdir().expect("tempdir");
    let library = Library::new(dir.path());
    let t = Instant::now();
    for (i, (url, fetched)) in pages.iter().enumerate() {
        // http://<host>:<port>/...
        let host = url
            .split('/')
            .nth(2)
            .and_then(|a| a.split(':').next())
            .unwrap_or("");
        let from = Provenance {
            job_id: i as i64 + 1,
            url,
            host,
            fetched_at: system_now_ms(),
            reference: None,
            stage: None,
            replaces: None,
        };
        library
            .save(&from, fetched, SaveOptions::default())
            .expect("save");
    }
    t.elapsed().as_secs_f64()
}

fn queue_round(n: usize) -> f64 {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(&db_path(dir.path())).expect("store");
    store.checkpoint_in_background().expect("checkpointer");
    let jobs: Vec<NewJob> = (0..n)
        .map(|i| {
            let host = format!("127.0.0.{}", 2 + i % HOSTS);
            let url = format!("http://{host}/ok/{i}");
            NewJob {
                url_key: url.clone(),
                url,
                host,
                reference: None,
            }
        })
        .collect();
    store.enqueue(None, &jobs, 5, 1).expect("enqueue");
    let policy = policy();
    let t = Instant::now();
    let mut finished = Vec::new();
    let mut done = 0;
    loop {
        let request = ClaimRequest {
            owner: "bench",
            lease: Duration::from_secs(600),
            per_host: policy.per_host,
            intervals: &NO_INTERVALS,
            max: 32,
            clock: None,
        };
        let step = store
            .step(&mut finished, &policy, 2, Some(&request))
            .expect("step");
        done += step.settled.len();
        if step.claimed.is_empty() {
            break;
        }
        finished = gleaner_tests::succeed_all(step.claimed);
    }
    assert_eq!(done, n);
    t.elapsed().as_secs_f64()
}

fn main() {
    let n: usize = std::env::var("GLEANER_BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5_000);
    let rounds: usize = std::env::var("GLEANER_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let servers: Vec<FaultServer> = (0..HOSTS)
        .map(|i| FaultServer::start_on(&format!("127.0.0.{}", 2 + i)))
        .collect();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    for round in 0..rounds {
        // Fresh paths each round: the worker must fetch, not find duplicates.
        let urls: Vec<String> = (0..n)
            .map(|i| servers[i % HOSTS].url(&page_path(round, i)))
            .collect();
        let secs = runtime.block_on(worker_round(&urls));
        line("worker_end_to_end", n, secs);
        let (secs, pages) = runtime.block_on(get_round(&urls));
        line("get_only", n, secs);
        line("save_only", n, save_round(&pages));
        line("queue_only", n, queue_round(n));
    }
}
