//! Extraction throughput (MB/s of body in) for HTML and PDF on the project's fixtures and on a
//! large synthetic article, and the peak memory of extracting a 20 MB page.
//!
//! Run: `cargo bench -p gleaner-tests --bench extract`
//!
//! Peak memory is measured in a child process (this binary again, with GLEANER_BENCH_CHILD
//! set), read from its VmHWM: once building the 20 MB body only, once building and extracting
//! it, so the difference is what extraction itself holds at its peak.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use gleaner::engine::extract::extract;
use gleaner_tests::peak_rss_kib;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../src-tauri/tests-fixtures/extract")
}

/// A long article with the usual boilerplate around it, about `bytes` long.
fn big_article(bytes: usize) -> Vec<u8> {
    let mut page = String::from(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>A very long report</title>\
         <meta name=\"author\" content=\"A. Writer\"></head><body>\
         <nav><a href=\"/\">Home</a> <a href=\"/news\">News</a> <a href=\"/about\">About</a></nav>\
         <div class=\"cookie-banner\">We use cookies. <button>Accept</button></div>\
         <article><h1>A very long report</h1>",
    );
    let mut n = 0;
    while page.len() < bytes {
        n += 1;
        page.push_str(&format!(
            "<h2>Section {n}</h2><p>Paragraph {n} of the report discusses measured results in some \
             detail, with <a href=\"/ref/{n}\">a reference</a>, <em>emphasis</em> and <strong>strong \
             words</strong>, so that the extractor has real inline markup to convert. The findings \
             are summarised in the table and the list below.</p><ul><li>first point {n}</li>\
             <li>second point {n}</li></ul><table><tr><th>a</th><th>b</th></tr><tr><td>{n}</td>\
             <td>{}</td></tr></table>",
            n * 7
        ));
    }
    page.push_str(
        "</article><aside class=\"related\"><h3>Related</h3><a href=\"/x\">Other story</a></aside>\
         <footer>© Example Media. All rights reserved.</footer></body></html>",
    );
    page.into_bytes()
}

/// MB/s over repeated extraction of `body`: the median of 5 rounds of at least 0.5 s each.
fn throughput(body: &[u8], content_type: &str) -> (f64, f64) {
    let mut rates = Vec::new();
    let mut per_doc = Vec::new();
    extract(body, Some(content_type), "https://bench.example/doc").expect("extracts");
    for _ in 0..5 {
        let start = Instant::now();
        let mut n = 0u32;
        while start.elapsed() < Duration::from_millis(500) || n < 3 {
            std::hint::black_box(
                extract(body, Some(content_type), "https://bench.example/doc").expect("extracts"),
            );
            n += 1;
        }
        let secs = start.elapsed().as_secs_f64();
        rates.push(body.len() as f64 * f64::from(n) / secs / 1e6);
        per_doc.push(secs * 1000.0 / f64::from(n));
    }
    rates.sort_by(f64::total_cmp);
    per_doc.sort_by(f64::total_cmp);
    (rates[2], per_doc[2])
}

fn child(mode: &str) {
    let body = big_article(20 * 1024 * 1024);
    let before = peak_rss_kib();
    if mode == "extract" {
        let doc = extract(&body, Some("text/html"), "https://bench.example/big").expect("extract");
        std::hint::black_box(&doc);
    }
    println!("{} {} {}", body.len(), before, peak_rss_kib());
}

fn main() {
    if let Ok(mode) = std::env::var("GLEANER_BENCH_CHILD") {
        child(&mode);
        return;
    }
    // `cargo bench` passes --bench; anything else (a filter) is not used by this harness.
    let dir = fixtures();
    let cases: [(&str, &str); 8] = [
        ("news-article.html", "text/html"),
        ("scholarly.html", "text/html"),
        ("jsonld-article.html", "text/html"),
        ("latin1-nometa.html", "text/html"),
        ("article.pdf", "application/pdf"),
        ("untitled.pdf", "application/pdf"),
        ("feed.rss", "application/rss+xml"),
        ("feed.json", "application/json"),
    ];
    println!("\n## Extraction throughput (release build; median of 5 rounds of ≥ 0.5 s)\n");
    println!("| input | size | MB/s | ms per document |");
    println!("|---|---:|---:|---:|");
    for (name, ct) in cases {
        let body = std::fs::read(dir.join(name)).expect("fixture");
        let (rate, ms) = throughput(&body, ct);
        println!(
            "| fixture `{name}` | {:.1} KB | {rate:.1} | {ms:.3} |",
            body.len() as f64 / 1024.0
        );
    }
    for mb in [2usize, 20] {
        let body = big_article(mb * 1024 * 1024);
        let (rate, ms) = throughput(&body, "text/html");
        println!("| synthetic article, {mb} MB | {mb} MB | {rate:.1} | {ms:.1} |");
    }

    println!("\n## Peak memory extracting a 20 MB HTML page (VmHWM of a child process)\n");
    let exe = std::env::current_exe().expect("this binary");
    let run = |mode: &str| -> (u64, u64, u64) {
        let out = std::process::Command::new(&exe)
            .env("GLEANER_BENCH_CHILD", mode)
            .output()
            .expect("child");
        let text = String::from_utf8_lossy(&out.stdout);
        let v: Vec<u64> = text
            .split_whitespace()
            .filter_map(|x| x.parse().ok())
            .collect();
        assert_eq!(v.len(), 3, "child said {text:?}");
        (v[0], v[1], v[2])
    };
    let mut peaks = Vec::new();
    let mut baseline = Vec::new();
    for _ in 0..3 {
        baseline.push(run("build").2);
        peaks.push(run("extract").2);
    }
    baseline.sort_unstable();
    peaks.sort_unstable();
    let (size, _, _) = run("build");
    println!("| what | peak RSS (median of 3) |");
    println!("|---|---:|");
    println!(
        "| process holding the {:.1} MB body only | {:.0} MB |",
        size as f64 / 1e6,
        baseline[1] as f64 / 1024.0
    );
    println!(
        "| the same, after extracting it | {:.0} MB |",
        peaks[1] as f64 / 1024.0
    );
    println!(
        "| extraction's own peak (difference) | {:.0} MB ({:.1}× the body) |",
        (peaks[1] - baseline[1]) as f64 / 1024.0,
        (peaks[1] - baseline[1]) as f64 * 1024.0 / size as f64
    );
}
