//! Every seed (`fuzz/seeds/<target>/`), every input of the committed fuzz corpus
//! (`fuzz/corpus/<target>/`) and every saved reproducer (`fuzz/regressions/<target>/`), run
//! through the harnesses' own entry points on stable, without afl: a case once found cannot
//! come back unnoticed. See docs/ARCHITECTURE.md, "Fuzzing".

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

#[path = "../../fuzz/src/lib.rs"]
mod targets;

/// The seed, corpus and regression files of one target, in name order so a failure is repeatable.
fn cases(target: &str) -> Vec<PathBuf> {
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz");
    let mut files = Vec::new();
    for kind in ["seeds", "corpus", "regressions"] {
        let Ok(entries) = std::fs::read_dir(fuzz.join(kind).join(target)) else {
            continue;
        };
        for entry in entries {
            let path = entry.expect("read the corpus folder").path();
            // AFL writes a README.txt beside its crashes; it is not an input.
            if path.is_file() && path.file_name().is_some_and(|n| n != "README.txt") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// Runs each case, failing on a panic (named by file) or on a case slower than `limit`: every
/// input here is a few KB at most, so a slow one is a hang the fuzzer's timeout caught.
fn replay(target: &str, limit: Duration, run: impl Fn(&[u8])) {
    let files = cases(target);
    assert!(!files.is_empty(), "no corpus for {target} under fuzz/");
    for path in &files {
        let data = std::fs::read(path).expect("read a corpus file");
        let start = Instant::now();
        if catch_unwind(AssertUnwindSafe(|| run(&data))).is_err() {
            panic!("{target}: {} panicked", path.display());
        }
        let took = start.elapsed();
        assert!(
            took < limit,
            "{target}: {} took {took:?} (limit {limit:?})",
            path.display()
        );
    }
    println!("{target}: {} cases replayed", files.len());
}

#[test]
fn intake_corpus() {
    replay("intake", Duration::from_secs(5), targets::intake);
}

#[test]
fn retry_after_corpus() {
    replay("retry_after", Duration::from_secs(1), targets::retry_after);
}

#[test]
fn html_corpus() {
    replay("html", Duration::from_secs(10), |d| {
        let _ = targets::html(d);
    });
}

#[test]
fn pdf_corpus() {
    replay("pdf", Duration::from_secs(10), |d| {
        let _ = targets::pdf(d);
    });
}
