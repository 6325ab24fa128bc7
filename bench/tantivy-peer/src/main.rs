//! tantivy as a peer of Gleaner's full-text search (issue 21, BENCHMARKS.md §9), over the
//! Markdown files `cargo bench --bench search` writes with GLEANER_BENCH_FILES=DIR.
//!
//! - `index DIR INDEX_DIR [THREADS]`: every `DIR/NNN/ID.md` (front matter `title: "…"`, then
//!   the body) into a new index at INDEX_DIR, in one commit. The files are read into memory
//!   first, so the time printed is tantivy's alone (add_document, commit, merges), as
//!   Gleaner's bench times its steps alone.
//! - `query INDEX_DIR QUERIES_FILE`: each line `KIND<TAB>QUERY` (or a bare `QUERY`, kind
//!   `one_word`, as in the bench's `queries.txt`), parsed by tantivy's QueryParser over title
//!   (boost 10) and body (boost 1), all words required as in FTS5, top 20 by BM25, each hit's
//!   stored title read and a body snippet made. Median and p95 per kind.
//!
//! The tokenizer matches FTS5's `unicode61 remove_diacritics 2`: split on what is not a letter
//! or digit, lower-cased, accents folded (ASCII folding), no stemming, no stop words.
//!
//! Output: one JSON line per measurement, in the shape of the search bench's.

use std::path::{Path, PathBuf};
use std::time::Instant;

use tantivy::collector::TopDocs;
use tantivy::query::QueryParser;
use tantivy::schema::{
    Field, IndexRecordOption, STORED, Schema, TextFieldIndexing, TextOptions, Value as _,
};
use tantivy::snippet::SnippetGenerator;
use tantivy::tokenizer::{
    AsciiFoldingFilter, LowerCaser, RemoveLongFilter, SimpleTokenizer, TextAnalyzer,
};
use tantivy::{Index, IndexWriter, TantivyDocument, doc};

const TOKENIZER: &str = "gleaner";
const LIMIT: usize = 20;
/// FTS5's snippet is 16 tokens; at about 6 characters a token and its space, ~100 characters.
const SNIPPET_CHARS: usize = 100;
/// Memory for the writer, over all its threads.
const WRITER_BUDGET: usize = 512 << 20;

fn analyzer() -> TextAnalyzer {
    TextAnalyzer::builder(SimpleTokenizer::default())
        .filter(RemoveLongFilter::limit(100))
        .filter(LowerCaser)
        .filter(AsciiFoldingFilter)
        .build()
}

fn schema() -> (Schema, Field, Field, Field) {
    let mut b = Schema::builder();
    let text = TextOptions::default()
        .set_indexing_options(
            TextFieldIndexing::default()
                .set_tokenizer(TOKENIZER)
                .set_index_option(IndexRecordOption::WithFreqsAndPositions),
        )
        .set_stored();
    let id = b.add_u64_field("id", STORED);
    let title = b.add_text_field("title", text.clone());
    let body = b.add_text_field("body", text);
    (b.build(), id, title, body)
}

/// Every `*.md` under `root`, one folder deep, in path order.
fn files(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root)
        .expect("corpus dir")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    for d in dirs {
        let mut fs: Vec<PathBuf> = std::fs::read_dir(&d)
            .expect("folder")
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "md"))
            .collect();
        fs.sort();
        out.extend(fs);
    }
    out
}

/// The title (a Rust `{:?}` string in the front matter) and the body of one bench file.
fn parse(text: &str) -> (String, &str) {
    let rest = text.strip_prefix("---\ntitle: ").unwrap_or(text);
    let Some((quoted, body)) = rest.split_once("\n---\n") else {
        return (String::new(), text);
    };
    let inner = quoted.trim().trim_matches('"');
    let mut title = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            title.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => title.push('\n'),
            Some('t') => title.push('\t'),
            Some('r') => title.push('\r'),
            Some(o) => title.push(o),
            None => {}
        }
    }
    (title, body)
}

fn json_line(op: &str, fields: &str) {
    println!("{{\"engine\":\"tantivy\",\"op\":\"{op}\",{fields}}}");
}

fn index(dir: &Path, index_dir: &Path, threads: usize) -> tantivy::Result<()> {
    let t = Instant::now();
    let mut docs = Vec::new();
    let mut text_bytes = 0u64;
    for p in files(dir) {
        let id: u64 = p
            .file_stem()
            .and_then(|s| s.to_str())
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let text = std::fs::read_to_string(&p)?;
        let (title, body) = parse(&text);
        text_bytes += (title.len() + body.len()) as u64;
        docs.push((id, title, body.to_string()));
    }
    let read = t.elapsed();
    let n = docs.len();
    assert!(n > 0, "no documents under {}", dir.display());

    std::fs::create_dir_all(index_dir)?;
    let (schema, f_id, f_title, f_body) = schema();
    let index = Index::create_in_dir(index_dir, schema)?;
    index.tokenizers().register(TOKENIZER, analyzer());
    let t = Instant::now();
    let mut writer: IndexWriter = index.writer_with_num_threads(threads, WRITER_BUDGET)?;
    for (id, title, body) in docs {
        writer.add_document(doc!(f_id => id, f_title => title, f_body => body))?;
    }
    writer.commit()?;
    let committed = t.elapsed();
    writer.wait_merging_threads()?;
    let total = t.elapsed();
    let index_bytes: u64 = std::fs::read_dir(index_dir)?
        .flatten()
        .filter_map(|e| e.metadata().ok())
        .map(|m| m.len())
        .sum();
    let segments = index.searchable_segment_ids()?.len();
    json_line(
        "index",
        &format!(
            "\"n\":{n},\"threads\":{threads},\"text_mb\":{:.1},\"index_mb\":{:.1},\"segments\":{segments},\
             \"read_seconds\":{:.2},\"commit_seconds\":{:.2},\"seconds\":{:.2},\"docs_per_sec\":{:.0}",
            text_bytes as f64 / 1e6,
            index_bytes as f64 / 1e6,
            read.as_secs_f64(),
            committed.as_secs_f64(),
            total.as_secs_f64(),
            n as f64 / total.as_secs_f64()
        ),
    );
    Ok(())
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn query(index_dir: &Path, queries_file: &Path) -> tantivy::Result<()> {
    let index = Index::open_in_dir(index_dir)?;
    index.tokenizers().register(TOKENIZER, analyzer());
    let schema = index.schema();
    let f_title = schema.get_field("title")?;
    let f_body = schema.get_field("body")?;
    let reader = index.reader()?;
    let searcher = reader.searcher();
    let mut parser = QueryParser::for_index(&index, vec![f_title, f_body]);
    parser.set_field_boost(f_title, 10.0);
    parser.set_field_boost(f_body, 1.0);
    parser.set_conjunction_by_default();

    // Kinds in the order they first appear.
    let mut kinds: Vec<(String, Vec<String>)> = Vec::new();
    for line in std::fs::read_to_string(queries_file)?.lines() {
        if line.trim().is_empty() {
            continue;
        }
        let (kind, q) = line.split_once('\t').unwrap_or(("one_word", line));
        match kinds.iter_mut().find(|(k, _)| k == kind) {
            Some((_, list)) => list.push(q.to_string()),
            None => kinds.push((kind.to_string(), vec![q.to_string()])),
        }
    }

    // TANTIVY_PEER_SHOW=1: each query's first hit on stderr, to see what the work returns.
    let show = std::env::var_os("TANTIVY_PEER_SHOW").is_some();
    let run = |q: &str| -> tantivy::Result<(usize, usize)> {
        let (query, _errors) = parser.parse_query_lenient(q);
        let top = searcher.search(&query, &TopDocs::with_limit(LIMIT).order_by_score())?;
        let mut generator = SnippetGenerator::create(&searcher, &*query, f_body)?;
        generator.set_max_num_chars(SNIPPET_CHARS);
        let mut chars = 0;
        for (_score, addr) in &top {
            let d: TantivyDocument = searcher.doc(*addr)?;
            let title = d.get_first(f_title).and_then(|v| v.as_str()).unwrap_or("");
            let snippet = generator.snippet_from_doc(&d);
            let html = snippet.to_html();
            if show && chars == 0 {
                eprintln!("{q} -> {} hits; {title:?}: {html}", top.len());
            }
            chars += title.len() + html.len();
        }
        Ok((top.len(), chars))
    };

    // Warm the page cache and the term dictionary as Gleaner's bench finds them warm (it
    // queries right after indexing): one pass over every query, not measured.
    for (_, list) in &kinds {
        for q in list {
            run(q)?;
        }
    }
    for (kind, list) in &kinds {
        let mut ms = Vec::with_capacity(list.len());
        let mut hits = 0;
        for q in list {
            let t = Instant::now();
            let (h, chars) = run(q)?;
            ms.push(t.elapsed().as_secs_f64() * 1000.0);
            std::hint::black_box(chars);
            hits += h;
        }
        ms.sort_by(f64::total_cmp);
        json_line(
            "search",
            &format!(
                "\"kind\":\"{kind}\",\"n\":{},\"queries\":{},\"median_ms\":{:.2},\"p95_ms\":{:.2},\"max_ms\":{:.2},\"mean_hits\":{:.1}",
                searcher.num_docs(),
                list.len(),
                percentile(&ms, 0.5),
                percentile(&ms, 0.95),
                ms[ms.len() - 1],
                hits as f64 / list.len() as f64
            ),
        );
    }
    Ok(())
}

fn usage() -> ! {
    eprintln!(
        "usage: tantivy-peer index CORPUS_DIR INDEX_DIR [THREADS]\n       tantivy-peer query INDEX_DIR QUERIES_FILE"
    );
    std::process::exit(2)
}

fn main() -> tantivy::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        ["index", dir, index_dir, rest @ ..] => {
            let threads = match rest {
                [] => 1,
                [t] => t.parse().unwrap_or_else(|_| usage()),
                _ => usage(),
            };
            index(Path::new(dir), Path::new(index_dir), threads)
        }
        ["query", index_dir, queries] => query(Path::new(index_dir), Path::new(queries)),
        _ => usage(),
    }
}
