//! The job table at 100,000 jobs: what opening the window and filtering cost.
//!
//! Part 1 times the store queries behind the window's commands (first page, total, counts,
//! filter menus), in this process. Part 2 opens the real release app on the same database
//! under Xvfb and times, inside the page, how long after the page started the first table was
//! on screen, and how long each filter change takes from the event to the rendered rows.
//!
//! Run: `cargo build --release -p gleaner && cargo bench -p gleaner-tests --bench job_table`
//! (set GLEANER_BENCH_SKIP_GUI=1 for part 1 only).

use std::time::{Duration, Instant};

use gleaner::engine::queue::{JobFilter, NewJob, Status};
use gleaner::engine::sqlite::{Store, db_path};
use gleaner_tests::desktop::DesktopSession;
use serde_json::json;

const JOBS: usize = 100_000;
const HOSTS: usize = 200;
const BATCHES: usize = 50;
const RUNS: usize = 25;

fn median_and_p95(mut samples: Vec<Duration>) -> (f64, f64) {
    samples.sort_unstable();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let p95 = samples[((samples.len() as f64) * 0.95).ceil() as usize - 1];
    (ms(samples[samples.len() / 2]), ms(p95))
}

fn time(mut f: impl FnMut()) -> (f64, f64) {
    f(); // warm the page cache and the statement cache
    median_and_p95(
        (0..RUNS)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed()
            })
            .collect(),
    )
}

/// 100,000 jobs over 200 hosts and 50 batches: 60 % done, 20 % dead, 15 % pending (half of
/// them backing off), 5 % cancelled, with titles and errors like real ones.
fn fill(store: &Store) {
    let mut per_batch = Vec::new();
    for b in 0..BATCHES {
        let batch = store
            .create_batch(&format!("paste {b}"), "paste", 1_700_000_000_000)
            .expect("batch");
        per_batch.push(batch);
    }
    let chunk = JOBS / BATCHES;
    for (b, batch) in per_batch.iter().enumerate() {
        let jobs: Vec<NewJob> = (0..chunk)
            .map(|i| {
                let n = b * chunk + i;
                let host = format!("host{}.example", n % HOSTS);
                let url = format!("https://{host}/articles/{n}/a-page-about-topic-{}", n % 977);
                NewJob {
                    url_key: url.clone(),
                    url,
                    host,
                    reference: None,
                }
            })
            .collect();
        store
            .enqueue(Some(*batch), &jobs, 5, 1_700_000_000_000)
            .expect("enqueue");
    }
    let conn = rusqlite::Connection::open(store.path().expect("file store")).expect("conn");
    conn.execute_batch(
        "UPDATE jobs SET status = 'done', attempts = 1, title = 'Article number ' || id || ' on topic ' || (id % 977), \
             finished_at = created_at WHERE id % 20 < 12;
         UPDATE jobs SET status = 'dead', attempts = 1, error_class = 'fatal', error = '404 Not Found (fatal)', \
             http_status = 404, finished_at = created_at WHERE id % 20 BETWEEN 12 AND 15;
         UPDATE jobs SET attempts = 2, error_class = 'transient', error = 'timed out (transient)', \
             run_at = 4102444800000 WHERE id % 20 IN (16, 17) AND id % 40 < 20;
         UPDATE jobs SET status = 'cancelled', finished_at = created_at WHERE id % 20 = 19;
         INSERT INTO settings (key, value) VALUES ('queue_paused', 'true')
             ON CONFLICT(key) DO UPDATE SET value = 'true';
         ANALYZE;",
    )
    .expect("statuses");
}

fn store_queries(store: &Store) {
    let now = 1_800_000_000_000;
    let page = |f: JobFilter| JobFilter {
        limit: Some(101),
        ..f
    };
    let cases: Vec<(&str, JobFilter)> = vec![
        ("no filter", JobFilter::default()),
        (
            "status = dead",
            JobFilter {
                status: Some(Status::Dead),
                ..JobFilter::default()
            },
        ),
        (
            "host = host7.example",
            JobFilter {
                host: Some("host7.example".into()),
                ..JobFilter::default()
            },
        ),
        (
            "batch = 25",
            JobFilter {
                batch_id: Some(25),
                ..JobFilter::default()
            },
        ),
        (
            "search 'topic-42/' (few hits)",
            JobFilter {
                search: Some("topic-42".into()),
                ..JobFilter::default()
            },
        ),
        (
            "search 'zzz' (no hit: full scan)",
            JobFilter {
                search: Some("zzz".into()),
                ..JobFilter::default()
            },
        ),
        (
            "dead + host + search",
            JobFilter {
                status: Some(Status::Dead),
                host: Some("host7.example".into()),
                search: Some("articles".into()),
                ..JobFilter::default()
            },
        ),
    ];
    println!("\n## Store queries behind the window, {JOBS} jobs (median / p95 of {RUNS}, ms)\n");
    println!("| what | list 100 + total | median | p95 |");
    println!("|---|---|---|---|");
    for (name, filter) in cases {
        let (med, p95) = time(|| {
            let rows = store.list_jobs(&page(filter.clone())).expect("list");
            let total = store.count_jobs(&filter).expect("count");
            std::hint::black_box((rows, total));
        });
        println!("| filter: {name} | list + count | {med:.2} | {p95:.2} |");
    }
    let (med, p95) = time(|| {
        std::hint::black_box(store.stats(now).expect("stats"));
    });
    println!("| header counts | stats | {med:.2} | {p95:.2} |");
    let (med, p95) = time(|| {
        std::hint::black_box(store.job_hosts(500).expect("hosts"));
        std::hint::black_box(store.batches(100).expect("batches"));
    });
    println!("| filter menus | hosts + batches | {med:.2} | {p95:.2} |");
    let (med, p95) = time(|| {
        std::hint::black_box(store.list_jobs(&page(JobFilter::default())).expect("list"));
        std::hint::black_box(store.count_jobs(&JobFilter::default()).expect("count"));
        std::hint::black_box(store.stats(now).expect("stats"));
        std::hint::black_box(store.job_hosts(500).expect("hosts"));
        std::hint::black_box(store.batches(100).expect("batches"));
    });
    println!(
        "| **opening: everything the window asks for** | all of the above, unfiltered | {med:.2} | {p95:.2} |"
    );
}

/// Set a filter in the page and time, inside the page, from the event to the rendered rows.
const FILTER_SCRIPT: &str = "
const [id, value, done] = [arguments[0], arguments[1], arguments[arguments.length - 1]];
const field = document.getElementById(id);
const rows = document.getElementById('job-rows');
const observer = new MutationObserver(() => {
  observer.disconnect();
  done(performance.now() - t0);
});
observer.observe(rows, { childList: true });
const t0 = performance.now();
field.value = value;
field.dispatchEvent(new Event('change', { bubbles: true }));
";

/// How long after the page started its first table was on screen (its `gleaner-ready` mark).
async fn first_table_after(s: &DesktopSession) -> Duration {
    let ready = s
        .js(
            "return performance.getEntriesByName('gleaner-ready')[0].startTime;",
            vec![],
        )
        .await;
    Duration::from_secs_f64(ready.as_f64().unwrap_or(f64::NAN) / 1000.0)
}

async fn gui(data_dir: &std::path::Path) {
    let mut opens = Vec::new();
    let mut filter_samples: Vec<(String, Vec<Duration>)> = Vec::new();
    let filters: [(&str, &str, &str); 8] = [
        ("status = dead", "filter-status", "dead"),
        ("status = all", "filter-status", ""),
        ("host = host7.example", "filter-host", "host7.example"),
        ("host cleared", "filter-host", ""),
        ("batch = 25", "filter-batch", "25"),
        ("batch = all", "filter-batch", ""),
        ("search 'topic-42'", "filter-search", "topic-42"),
        ("search cleared", "filter-search", ""),
    ];
    for round in 0..5 {
        let s = DesktopSession::launch_in(data_dir).await;
        opens.push(first_table_after(&s).await);
        for _ in 0..5 {
            for (i, (name, id, value)) in filters.iter().enumerate() {
                let ms = s
                    .client
                    .execute_async(FILTER_SCRIPT, vec![json!(id), json!(value)])
                    .await
                    .expect("filter script");
                if round == 0 && filter_samples.len() <= i {
                    filter_samples.push((name.to_string(), Vec::new()));
                }
                filter_samples[i].1.push(Duration::from_secs_f64(
                    ms.as_f64().unwrap_or(f64::NAN) / 1000.0,
                ));
            }
        }
        if round == 0 {
            s.screenshot("job-table-100k").await;
        }
        s.finish().await;
    }
    // The same on an empty queue: what the webview costs whatever the queue holds.
    let empty = tempfile::tempdir().expect("empty data dir");
    let mut empty_opens = Vec::new();
    for _ in 0..5 {
        let s = DesktopSession::launch_in(empty.path()).await;
        empty_opens.push(first_table_after(&s).await);
        s.finish().await;
    }
    println!("\n## The real window on that database (release build, Xvfb, WebKitGTK), ms\n");
    let (med, p95) = median_and_p95(opens);
    let (emed, ep95) = median_and_p95(empty_opens);
    println!("| what | median | p95 |");
    println!("|---|---|---|");
    println!(
        "| page start → first table on screen, 100,000 jobs (5 launches) | {med:.1} | {p95:.1} |"
    );
    println!(
        "| page start → first table on screen, empty queue (5 launches) | {emed:.1} | {ep95:.1} |"
    );
    println!(
        "| what 100,000 jobs add to opening (difference of medians) | {:.1} | |",
        med - emed
    );
    for (name, samples) in filter_samples {
        let (med, p95) = median_and_p95(samples);
        println!("| filter {name}: event → rows rendered (25 runs) | {med:.1} | {p95:.1} |");
    }
}

fn main() {
    let dir = tempfile::tempdir().expect("temp dir");
    let t = Instant::now();
    let store = Store::open(&db_path(dir.path())).expect("store");
    fill(&store);
    println!(
        "built a {JOBS}-job database in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    store_queries(&store);
    drop(store);
    if std::env::var_os("GLEANER_BENCH_SKIP_GUI").is_some() {
        return;
    }
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(gui(dir.path()));
}
