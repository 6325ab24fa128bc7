//! Runs Gleaner's extractor and rs-trafilatura (the Rust port, crates.io) over the extraction
//! dev set (`../shared/extraction-dev/`), writing one output file per page for its scorer, and
//! prints each extractor's throughput (issue 22, BENCHMARKS.md §12).
//!
//! Run: `cargo run --release -p gleaner-tests --example extraction_devset -- DEVSET OUT`, then
//! `python3 DEVSET/score.py OUT/gleaner` (and `OUT/rs-trafilatura`). `bench/extraction-devset.sh`
//! does all of it, with Python trafilatura beside.
//!
//! Gleaner's output is the Markdown a library document holds under its front matter: the same
//! `extract` call the library makes, on the page's bytes served as `text/html` with its URL.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

struct Page {
    dataset: String,
    id: String,
    /// Empty when the dev set does not know it.
    url: String,
    html: Vec<u8>,
}

fn pages(devset: &Path) -> Vec<Page> {
    let index =
        std::fs::read_to_string(devset.join("index.jsonl")).expect("the dev set's index.jsonl");
    index
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let v: serde_json::Value = serde_json::from_str(line).expect("an index line");
            let field = |k: &str| v[k].as_str().expect("dataset and id").to_string();
            let (dataset, id) = (field("dataset"), field("id"));
            let html = std::fs::read(
                devset
                    .join("pages")
                    .join(&dataset)
                    .join(format!("{id}.html")),
            )
            .expect("the page's HTML");
            Page {
                dataset,
                id,
                // Some pages have no known URL; Gleaner then leaves relative links as they are.
                url: v["url"].as_str().unwrap_or_default().to_string(),
                html,
            }
        })
        .collect()
}

fn write(out: &Path, page: &Page, ext: &str, text: &str) {
    let dir = out.join(&page.dataset);
    std::fs::create_dir_all(&dir).expect("the output folder");
    std::fs::write(dir.join(format!("{}.{ext}", page.id)), text).expect("write an output");
}

/// Runs `extract` over every page, writes what it gives, and reports its time and failures.
fn run(
    name: &str,
    pages: &[Page],
    out: &Path,
    ext: &str,
    extract: impl Fn(&Page) -> Option<String>,
) {
    let mut spent = Duration::ZERO;
    let mut failed = 0;
    for page in pages {
        let started = Instant::now();
        let text = extract(page);
        spent += started.elapsed();
        match text {
            Some(text) => write(out, page, ext, &text),
            None => failed += 1,
        }
    }
    let mb: f64 = pages.iter().map(|p| p.html.len() as f64).sum::<f64>() / 1e6;
    println!(
        "{name}: {} pages, {failed} gave nothing, {mb:.1} MB of HTML in {:.2} s: {:.1} MB/s",
        pages.len(),
        spent.as_secs_f64(),
        mb / spent.as_secs_f64()
    );
}

fn main() {
    let mut args = std::env::args().skip(1).map(PathBuf::from);
    let (Some(devset), Some(out)) = (args.next(), args.next()) else {
        eprintln!("usage: extraction_devset DEVSET_DIR OUT_DIR");
        std::process::exit(2);
    };
    let pages = pages(&devset);
    // GLEANER_DEVSET_ONLY=gleaner skips the peer: a profiler then counts Gleaner's work alone.
    let only_gleaner = std::env::var("GLEANER_DEVSET_ONLY").is_ok_and(|v| v == "gleaner");
    run("gleaner", &pages, &out.join("gleaner"), "md", |p| {
        gleaner::engine::extract::extract(&p.html, Some("text/html"), &p.url)
            .ok()
            .map(|d| d.text)
    });
    if only_gleaner {
        return;
    }
    run(
        "rs-trafilatura",
        &pages,
        &out.join("rs-trafilatura"),
        "txt",
        |p| {
            // It takes text: the bytes decoded as Gleaner decodes them (charset from the page).
            let html = gleaner::engine::extract::decode_html(&p.html, Some("text/html"));
            rs_trafilatura::extract(&html).ok().map(|r| r.content_text)
        },
    );
}
