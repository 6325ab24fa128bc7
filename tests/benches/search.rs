//! Full-text search at library scale: GLEANER_BENCH_N documents (default 100,000) of about
//! 5 KB each, written into the index as the worker's successes write them (1,000 jobs per
//! step), then queried: one word, two words, a phrase, and a word no document has.
//!
//! The vocabulary is real: the words of the extraction dev set's ground-truth texts
//! (GLEANER_BENCH_VOCAB, default `../shared/extraction-dev/truth` beside the checkout), drawn
//! with their frequencies in that text, so common words are common and rare ones rare. With
//! GLEANER_BENCH_FILES=DIR the documents are also written there as Markdown files, one folder
//! per 1,000, for a peer to search the same text (ripgrep, as a user would today).
//!
//! Run: `cargo bench -p gleaner-tests --bench search`. One JSON line per measurement.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use gleaner::engine::policy::{NO_INTERVALS, Policy};
use gleaner::engine::queue::{ClaimRequest, Finish, Indexed, NewJob, Queue as _, Success};
use gleaner::engine::sqlite::{Store, db_path};

const QUERIES: usize = 200;
const STEP: usize = 1_000;

/// A tiny deterministic generator (xorshift), so every run builds the same library.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Every word of the texts under `dir`, lower-cased, in order: drawing from it at random
/// draws each word with its frequency.
fn vocabulary(dir: &Path) -> Vec<String> {
    let mut words = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(text) = std::fs::read_to_string(&p) {
                words.extend(
                    text.split(|c: char| !c.is_alphabetic())
                        .filter(|w| w.len() > 1)
                        .map(str::to_lowercase),
                );
            }
        }
    }
    words
}

fn sentence(rng: &mut Rng, vocab: &[String], words: usize) -> String {
    (0..words)
        .map(|_| vocab[rng.below(vocab.len())].as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

fn document(rng: &mut Rng, vocab: &[String]) -> Indexed {
    let mut body = String::with_capacity(5_200);
    while body.len() < 5_000 {
        let words = 12 + rng.below(12);
        body.push_str(&sentence(rng, vocab, words));
        body.push_str(".\n\n");
    }
    Indexed {
        title: sentence(rng, vocab, 6),
        authors: format!("{}, {}", sentence(rng, vocab, 1), sentence(rng, vocab, 1)),
        body,
        ..Indexed::default()
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn line(op: &str, fields: &str) {
    println!("{{\"op\":\"{op}\",{fields}}}");
}

fn main() {
    let n: usize = std::env::var("GLEANER_BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let vocab_dir = std::env::var("GLEANER_BENCH_VOCAB").map_or_else(
        |_| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/extraction-dev/truth"),
        PathBuf::from,
    );
    let vocab = vocabulary(&vocab_dir);
    assert!(
        vocab.len() > 10_000,
        "no vocabulary under {} (set GLEANER_BENCH_VOCAB to a folder of texts)",
        vocab_dir.display()
    );
    let files = std::env::var("GLEANER_BENCH_FILES").ok().map(PathBuf::from);
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(&db_path(dir.path())).expect("store");
    let jobs: Vec<NewJob> = (0..n)
        .map(|i| NewJob {
            url: format!("https://site{}.example/doc/{i}", i % 500),
            url_key: format!("https://site{}.example/doc/{i}", i % 500),
            host: format!("site{}.example", i % 500),
            reference: None,
        })
        .collect();
    store.enqueue(None, &jobs, 5, 1).expect("enqueue");
    drop(jobs);

    // Index as the worker does: each success carries its document into the step.
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let policy = Policy::default();
    let (mut text_bytes, mut done, mut indexing) = (0u64, 0usize, Duration::ZERO);
    let mut sample_docs = Vec::new();
    while done < n {
        let request = ClaimRequest {
            owner: "bench",
            lease: Duration::from_secs(600),
            per_host: 1_000,
            intervals: &NO_INTERVALS,
            max: STEP,
            clock: None,
        };
        let claimed = store
            .step(&mut Vec::new(), &policy, 2, Some(&request))
            .expect("claim")
            .claimed;
        assert!(!claimed.is_empty(), "nothing left to claim at {done}");
        let mut finished = Vec::with_capacity(claimed.len());
        for c in claimed {
            let doc = document(&mut rng, &vocab);
            text_bytes += (doc.title.len() + doc.authors.len() + doc.body.len()) as u64;
            if let Some(root) = &files {
                let folder = root.join(format!("{:03}", c.job_id / 1_000));
                std::fs::create_dir_all(&folder).expect("folder");
                std::fs::write(
                    folder.join(format!("{}.md", c.job_id)),
                    format!("---\ntitle: {:?}\n---\n{}", doc.title, doc.body),
                )
                .expect("write");
            }
            if sample_docs.len() < QUERIES && rng.below(n / QUERIES + 1) == 0 {
                sample_docs.push(doc.body.clone());
            }
            let success = Success {
                http_status: 200,
                final_url: c.url.clone(),
                title: Some(doc.title.clone()),
                document: Some(format!("/library/{}.md", c.job_id)),
                index: Some(Box::new(doc)),
                ..Success::default()
            };
            finished.push((c, Finish::Success(success)));
        }
        done += finished.len();
        let t = Instant::now();
        store
            .step(&mut finished, &policy, 3, None)
            .expect("complete");
        indexing += t.elapsed();
    }
    let db_bytes: u64 = std::fs::read_dir(dir.path())
        .expect("data dir")
        .flatten()
        .filter_map(|e| e.metadata().ok())
        .map(|m| m.len())
        .sum();
    line(
        "index",
        &format!(
            "\"n\":{n},\"text_mb\":{:.1},\"db_mb\":{:.1},\"commit_seconds\":{:.2},\"docs_per_sec\":{:.0}",
            text_bytes as f64 / 1e6,
            db_bytes as f64 / 1e6,
            indexing.as_secs_f64(),
            n as f64 / indexing.as_secs_f64()
        ),
    );

    // Query words: from the sampled documents, so every one-word query has hits.
    let mut queries: Vec<(&str, Vec<String>)> = vec![
        ("one_word", Vec::new()),
        ("two_words", Vec::new()),
        ("phrase", Vec::new()),
        ("no_hit", Vec::new()),
    ];
    for (i, body) in sample_docs.iter().enumerate() {
        let words: Vec<&str> = body
            .split(|c: char| !c.is_alphabetic())
            .filter(|w| w.len() > 3)
            .collect();
        let a = words[i % words.len()];
        let b = words[(i * 7 + 3) % words.len()];
        queries[0].1.push(a.to_string());
        queries[1].1.push(format!("{a} {b}"));
        let at = i % (words.len() - 1);
        queries[2]
            .1
            .push(format!("\"{} {}\"", words[at], words[at + 1]));
        queries[3].1.push(format!("zq{i}xv"));
    }
    for (kind, list) in &queries {
        let mut ms = Vec::with_capacity(list.len());
        let mut hits = 0;
        for q in list {
            let t = Instant::now();
            hits += store.search(q, 20).expect("search").len();
            ms.push(t.elapsed().as_secs_f64() * 1000.0);
        }
        ms.sort_by(f64::total_cmp);
        line(
            "search",
            &format!(
                "\"kind\":\"{kind}\",\"n\":{n},\"queries\":{},\"median_ms\":{:.2},\"p95_ms\":{:.2},\"max_ms\":{:.2},\"mean_hits\":{:.1}",
                list.len(),
                percentile(&ms, 0.5),
                percentile(&ms, 0.95),
                ms[ms.len() - 1],
                hits as f64 / list.len() as f64
            ),
        );
    }
    if let Some(root) = &files {
        // The same one-word queries for a peer, one a line.
        let list: Vec<&str> = queries[0].1.iter().map(String::as_str).collect();
        std::fs::write(root.join("queries.txt"), list.join("\n")).expect("queries");
        // Every kind, `KIND<TAB>QUERY` a line (bench/tantivy-peer.sh DIR DIR/queries.tsv).
        let all: Vec<String> = queries
            .iter()
            .flat_map(|(kind, list)| list.iter().map(move |q| format!("{kind}\t{q}")))
            .collect();
        std::fs::write(root.join("queries.tsv"), all.join("\n")).expect("queries");
    }
}
