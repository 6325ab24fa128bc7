//! `gleaner search` and `gleaner library`: the library as a knowledge base.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;

use crate::engine::library::Library;
use crate::engine::queue::Queue;

use crate::engine::intake::printable;

/// Documents read from the folder per transaction of a rebuild.
const REINDEX_BATCH: usize = 500;

pub fn search(
    store: &dyn Queue,
    words: &[String],
    limit: u32,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let query = words.join(" ");
    let hits = store.search(&query, limit)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&hits)?);
        return Ok(ExitCode::SUCCESS);
    }
    if hits.is_empty() {
        println!("no document matches {}", printable(&query));
    }
    for (n, hit) in hits.iter().enumerate() {
        println!(
            "{:>3}. {}  (job {}, score {:.2})",
            n + 1,
            printable(hit.title.as_deref().unwrap_or("(no title)")),
            hit.job_id,
            hit.score
        );
        println!("     {}", printable(&hit.url));
        println!("     {}", printable(&hit.snippet.replace('\n', " ")));
        if let Some(d) = &hit.document {
            println!("     {d}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Write the library as JSON lines, to `output` or standard output.
pub fn export(store: &dyn Queue, output: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    let mut out: Box<dyn std::io::Write> = match &output {
        Some(path) => Box::new(std::io::BufWriter::new(
            std::fs::File::create(path)
                .with_context(|| format!("cannot create {}", path.display()))?,
        )),
        None => Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
    };
    let written = crate::engine::export::export_jsonl(store, &mut out)?;
    if output.is_some() {
        eprintln!(
            "exported {written} document{}",
            if written == 1 { "" } else { "s" }
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Rebuild the search index from the library folder.
pub fn reindex(store: &dyn Queue, library: &Library) -> anyhow::Result<ExitCode> {
    store.clear_index()?;
    let (mut indexed, mut passed_over) = (0, 0);
    let read = library.each_document(REINDEX_BATCH, |docs| -> anyhow::Result<()> {
        let r = store.reindex(docs)?;
        indexed += r.indexed;
        passed_over += r.passed_over;
        Ok(())
    })?;
    println!(
        "indexed {indexed} document{} of {read} in {}; {passed_over} passed over (older versions, or jobs no longer queued)",
        if indexed == 1 { "" } else { "s" },
        library.root().display()
    );
    Ok(ExitCode::SUCCESS)
}
