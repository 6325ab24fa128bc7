//! The reader opening a 1 MB document: from the click on its result to its first piece of text
//! in the page, to the first frame painted after it (issue 21's target: under 150 ms), and to
//! the whole text in the page.
//!
//! Part 1 times the rendering alone (Markdown to sanitised HTML, in this process). Part 2 has
//! the real release app fetch a 1 MB article from the fault server on loopback, then opens it
//! in the Library's reader again and again, reading the times the page records.
//!
//! Run: `cargo build --release -p gleaner && cargo bench -p gleaner-tests --bench reader`

use std::time::{Duration, Instant};

use fantoccini::Locator;
use gleaner::engine::render::markdown_to_html;
use gleaner_tests::desktop::DesktopSession;
use gleaner_tests::server::FaultServer;
use serde_json::json;

const RUNS: usize = 25;
/// The article's HTML size; its Markdown comes out at about 1 MB.
const ARTICLE_KB: u32 = 1_500;

fn median_and_p95(mut ms: Vec<f64>) -> (f64, f64) {
    ms.sort_by(f64::total_cmp);
    let p95 = ms[((ms.len() as f64) * 0.95).ceil() as usize - 1];
    (ms[ms.len() / 2], p95)
}

async fn wait_for(s: &DesktopSession, script: &str, what: &str) -> serde_json::Value {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let v = s.js(script, vec![]).await;
        if !v.is_null() && v != json!(false) {
            return v;
        }
        if Instant::now() >= deadline {
            let status = s
                .js(
                    "return document.getElementById('status').textContent;",
                    vec![],
                )
                .await;
            panic!("timed out waiting for {what}; the status line says {status}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn main() {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(async {
            let server = FaultServer::start();
            let data = tempfile::tempdir().expect("data dir");
            let s = DesktopSession::launch_in(data.path()).await;
            s.cli(&["add", &server.url(&format!("/article?kb={ARTICLE_KB}"))]);
            wait_for(
                &s,
                "return document.querySelector('#job-rows tr .badge-done') !== null;",
                "the article to be fetched",
            )
            .await;
            let doc: String = s
                .sql()
                .query_row("SELECT document FROM jobs WHERE id = 1", [], |r| r.get(0))
                .expect("the document");
            let text = std::fs::read_to_string(&doc).expect("read the document");

            let mut render = Vec::new();
            for _ in 0..RUNS {
                let t = Instant::now();
                let html = markdown_to_html(&text);
                render.push(t.elapsed().as_secs_f64() * 1000.0);
                assert!(html.len() > text.len() / 2);
            }

            s.client
                .find(Locator::Id("tab-library"))
                .await
                .expect("Library tab")
                .click()
                .await
                .expect("open the Library");
            wait_for(
                &s,
                "return document.querySelector('#results button.result') !== null;",
                "the result",
            )
            .await;
            let (mut opened, mut painted, mut answered, mut complete) =
                (Vec::new(), Vec::new(), Vec::new(), Vec::new());
            for run in 0..=RUNS {
                s.js(
                    "document.getElementById('reader-close').click();\
                     delete document.getElementById('reader-doc').dataset.paintedMs;\
                     delete document.getElementById('reader-doc').dataset.completeMs;",
                    vec![],
                )
                .await;
                s.client
                    .find(Locator::Css("#results button.result"))
                    .await
                    .expect("result")
                    .click()
                    .await
                    .expect("open it");
                let times = wait_for(
                    &s,
                    "const d = document.getElementById('reader-doc').dataset;\
                     return d.paintedMs && d.completeMs ? [Number(d.openedMs), Number(d.paintedMs), Number(d.answeredMs), Number(d.completeMs)] : null;",
                    "the reader",
                )
                .await;
                // The first opening warms the page cache and the webview; it is not counted.
                if run > 0 {
                    opened.push(times[0].as_f64().unwrap_or(f64::NAN));
                    painted.push(times[1].as_f64().unwrap_or(f64::NAN));
                    answered.push(times[2].as_f64().unwrap_or(f64::NAN));
                    complete.push(times[3].as_f64().unwrap_or(f64::NAN));
                }
            }
            s.finish().await;

            println!(
                "\n## The reader on a {:.2} MB document ({RUNS} openings), ms\n",
                text.len() as f64 / 1e6
            );
            println!("| what | median | p95 |");
            println!("|---|---|---|");
            for (what, samples) in [
                ("Markdown to sanitised HTML (in process)", render),
                ("click to the backend's answer (read, render the first piece, IPC)", answered),
                ("click to the first piece in the page", opened),
                ("click to the next painted frame", painted),
                ("click to the whole text in the page", complete),
            ] {
                let (med, p95) = median_and_p95(samples);
                println!("| {what} | {med:.1} | {p95:.1} |");
            }
        });
}
