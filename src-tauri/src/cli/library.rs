//! `gleaner search` and `gleaner library`: the library as a knowledge base.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use sha2::{Digest as _, Sha256};

use crate::engine::export::{self, Format, Selection};
use crate::engine::library::Library;
use crate::engine::queue::Queue;

use crate::engine::intake::{printable, printable_prose, shown_url};

/// Documents read from the folder per transaction of a rebuild.
const REINDEX_BATCH: usize = 500;

/// `search`'s own flags written after its words: the words take values that start with a
/// hyphen (`-flume`, a word to leave out), so clap hands `--json` and `--limit N` over as words.
pub(super) fn search_flags(
    words: Vec<String>,
    mut limit: u32,
    mut json: bool,
) -> anyhow::Result<(Vec<String>, u32, bool)> {
    let mut query = Vec::with_capacity(words.len());
    let mut words = words.into_iter();
    while let Some(word) = words.next() {
        let value = match word.as_str() {
            "--json" => {
                json = true;
                continue;
            }
            "--limit" => words.next(),
            w => match w.strip_prefix("--limit=") {
                Some(v) => Some(v.to_string()),
                None => {
                    query.push(word);
                    continue;
                }
            },
        };
        limit = value
            .as_deref()
            .and_then(|v| v.parse().ok())
            .filter(|n| (1..=10_000).contains(n))
            .with_context(|| "--limit takes a number from 1 to 10000")?;
    }
    if query.is_empty() {
        anyhow::bail!("give the words to search for");
    }
    Ok((query, limit, json))
}

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
            "{:>3}. {}  (job {})",
            n + 1,
            printable_prose(hit.title.as_deref().unwrap_or("(no title)")),
            hit.job_id
        );
        println!("     {}", shown_url(&hit.url));
        if !hit.tags.is_empty() {
            println!("     tags: {}", printable(&hit.tags.join(", ")));
        }
        println!("     {}", printable_prose(&hit.snippet.replace('\n', " ")));
        if let Some(d) = &hit.document {
            println!("     {d}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Write the selected documents in `format` to `output` (atomically: a temporary file beside
/// it, renamed over it once complete) or to standard output. A job named with `--jobs` that
/// cannot go out is named on stderr; the rest still go out, and the exit is 1.
pub fn export(
    store: &dyn Queue,
    format: Format,
    selection: &Selection,
    output: Option<PathBuf>,
) -> anyhow::Result<ExitCode> {
    let (summary, file_written) = match &output {
        Some(path) => {
            let w = export::write_file(store, format, selection, path, true)?;
            (w.summary, w.file_written)
        }
        None => {
            let mut out = std::io::BufWriter::new(std::io::stdout().lock());
            (export::export(store, format, selection, &mut out)?, true)
        }
    };
    for u in &summary.unusable {
        eprintln!("job {}: {}", u.job_id, u.reason);
    }
    match &output {
        Some(path) if !file_written => {
            eprintln!("nothing exported; {} left as it was", path.display());
        }
        Some(path) => eprintln!(
            "exported {} document{} to {}",
            summary.written,
            if summary.written == 1 { "" } else { "s" },
            path.display()
        ),
        None => {}
    }
    Ok(if summary.unusable.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Rebuild the search index from the library folder.
pub fn reindex(store: &dyn Queue, library: &Library) -> anyhow::Result<ExitCode> {
    if store.shared() {
        // The index is the whole lab's: this member first writes the documents its folder
        // lacks, then indexes them all again, over the rows there (emptying it first would
        // leave the lab with this member's folder alone).
        pull(store, library)?;
    } else {
        store.clear_index()?;
    }
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

/// Documents asked of the database per round of a pull.
const PULL_BATCH: u32 = 100;

/// Write the shared library's documents (and PDFs) that this member's folder lacks, or holds
/// in another version: the database's listing (paths and SHA-256) is compared with the files
/// first, and only what differs is fetched.
pub fn pull(store: &dyn Queue, library: &Library) -> anyhow::Result<ExitCode> {
    let (mut written, mut replaced, mut present, mut after) = (0u64, 0u64, 0u64, 0i64);
    loop {
        let listed = store.shared_listing(after, PULL_BATCH)?;
        let Some(last) = listed.last() else { break };
        after = last.job_id;
        for entry in &listed {
            let files = std::iter::once((entry.path.as_str(), entry.sha256.as_slice()))
                .chain(entry.pdf.as_ref().map(|(p, h)| (p.as_str(), h.as_slice())));
            let mut wanted = Vec::new();
            for (relative, sha256) in files {
                let Some(path) = inside(library.root(), relative) else {
                    eprintln!(
                        "job {}: {} is not a path inside the library; skipped",
                        entry.job_id,
                        printable(relative)
                    );
                    continue;
                };
                match std::fs::read(&path) {
                    Ok(bytes) if Sha256::digest(&bytes).as_slice() == sha256 => present += 1,
                    // Another version under the same name: a landing page the paper replaced
                    // on another member, or tags set since.
                    Ok(_) => wanted.push((relative.to_string(), path, true)),
                    Err(_) => wanted.push((relative.to_string(), path, false)),
                }
            }
            if wanted.is_empty() {
                continue;
            }
            let Some(doc) = store.shared_document(entry.job_id)? else {
                continue;
            };
            let files = std::iter::once((doc.path.as_str(), doc.content.as_slice()))
                .chain(doc.pdf.as_ref().map(|(p, b)| (p.as_str(), b.as_slice())));
            for (relative, bytes) in files {
                let Some((_, path, was_there)) = wanted.iter().find(|(r, _, _)| r == relative)
                else {
                    continue;
                };
                let dir = path.parent().unwrap_or(library.root());
                std::fs::create_dir_all(dir)
                    .with_context(|| format!("cannot make {}", dir.display()))?;
                crate::engine::library::write_atomic(dir, path, bytes)
                    .with_context(|| format!("cannot write {}", path.display()))?;
                if *was_there {
                    replaced += 1;
                } else {
                    written += 1;
                }
            }
        }
    }
    println!(
        "pulled {written} file{} into {}; {replaced} replaced by the lab's newer version; {present} already there",
        if written == 1 { "" } else { "s" },
        library.root().display()
    );
    Ok(ExitCode::SUCCESS)
}

/// `relative` under `root`, if it names a file inside it: a path from the database is not
/// trusted to stay in the library (no root, no `..`).
fn inside(root: &std::path::Path, relative: &str) -> Option<PathBuf> {
    use std::path::Component;
    let rel = std::path::Path::new(relative);
    let plain = rel.components().all(|c| matches!(c, Component::Normal(_)));
    (plain && rel.components().next().is_some()).then(|| root.join(rel))
}

/// Show or set the largest PDF the shared library keeps in the database.
pub fn pdf_limit(store: &dyn Queue, size: Option<u64>) -> anyhow::Result<ExitCode> {
    use crate::engine::postgres::{PDF_MAX_DEFAULT, PDF_MAX_SETTING};
    if !store.shared() {
        anyhow::bail!(
            "the library is this data folder's alone: the PDF limit applies to a shared database (--database)"
        );
    }
    if let Some(bytes) = size {
        store.set_setting(PDF_MAX_SETTING, &bytes.to_string())?;
        println!(
            "PDFs up to {bytes} bytes are shared from now on (each machine reads it when it starts)"
        );
        return Ok(ExitCode::SUCCESS);
    }
    let current = store
        .setting(PDF_MAX_SETTING)?
        .and_then(|v| v.trim().parse::<u64>().ok())
        .unwrap_or(PDF_MAX_DEFAULT);
    println!("PDFs up to {current} bytes are shared");
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser as _;

    #[test]
    fn a_search_takes_words_to_leave_out_and_its_flags_around_them() {
        let words = |args: &[&str]| match super::super::Cli::try_parse_from(args).map(|c| c.command)
        {
            Ok(Some(super::super::Command::Search { query, limit, json })) => {
                search_flags(query, limit, json).expect("a search")
            }
            other => panic!("{args:?}: {other:?}"),
        };
        let (query, limit, json) = words(&["gleaner", "search", "bedload", "-flume", "--json"]);
        assert_eq!(
            (query, limit, json),
            (vec!["bedload".into(), "-flume".into()], 20, true)
        );
        let (query, limit, _) = words(&[
            "gleaner", "search", "--json", "a", "-\"b c\"", "--limit", "5",
        ]);
        assert_eq!((query, limit), (vec!["a".into(), "-\"b c\"".into()], 5));
        let (_, limit, _) = words(&["gleaner", "search", "a", "--limit=7"]);
        assert_eq!(limit, 7);
    }
}
