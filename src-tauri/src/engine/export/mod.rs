//! The library out, for downstream tools: JSON Lines (one object per saved document, its front
//! matter plus `document` and `text`), and citations: BibTeX (biblatex), CSL-JSON and RIS, each
//! document one entry under a stable, unique key (`keys.rs`). Used by `gleaner export` and the
//! window. Either the whole library, chosen jobs, or what a library search finds.

mod bibtex;
mod csl;
mod file;
mod keys;
pub(crate) mod record;
mod ris;

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;

use serde::Serialize;

use super::library::read_document;
use super::queue::{Job, JobFilter, LibraryQuery, Queue, QueueError, Status};
pub use file::{Written, write_file};
use record::Record;

/// The most a front matter and the abstract after it may take: past it, the file is not one of
/// ours.
const MAX_HEAD_BYTES: u64 = 1 << 20;
/// Hits asked of the search for `Selection::Search` and `Selection::Library`: all of them, in
/// practice.
const SEARCH_LIMIT: u32 = 100_000;
/// Jobs read from the queue per page.
const PAGE: u32 = 500;

#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error(transparent)]
    Store(#[from] QueueError),
    #[error("cannot write the export: {0}")]
    Write(#[from] std::io::Error),
    #[error("cannot encode a document: {0}")]
    Encode(#[from] serde_json::Error),
    #[error("unknown export format {0:?}; choose jsonl, bibtex, csljson or ris")]
    UnknownFormat(String),
    #[error("cannot write {}: {source}", path.display())]
    File {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Jsonl,
    Bibtex,
    CslJson,
    Ris,
}

impl Format {
    pub const NAMES: [&'static str; 4] = ["jsonl", "bibtex", "csljson", "ris"];

    /// The name `--format` takes.
    pub fn name(self) -> &'static str {
        match self {
            Format::Jsonl => "jsonl",
            Format::Bibtex => "bibtex",
            Format::CslJson => "csljson",
            Format::Ris => "ris",
        }
    }

    /// The file name extension of an export.
    pub fn extension(self) -> &'static str {
        match self {
            Format::Jsonl => "jsonl",
            Format::Bibtex => "bib",
            Format::CslJson => "json",
            Format::Ris => "ris",
        }
    }
}

impl std::str::FromStr for Format {
    type Err = ExportError;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        match name.to_ascii_lowercase().as_str() {
            "jsonl" => Ok(Format::Jsonl),
            "bibtex" | "bib" | "biblatex" => Ok(Format::Bibtex),
            "csljson" | "csl-json" | "csl" => Ok(Format::CslJson),
            "ris" => Ok(Format::Ris),
            _ => Err(ExportError::UnknownFormat(name.to_string())),
        }
    }
}

/// Which documents go out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selection {
    All,
    /// These jobs' documents; an id that names no done job with a document is told back.
    Jobs(Vec<i64>),
    /// The documents a library search finds (`Queue::search`).
    Search(String),
    /// The documents the window's Library view finds with its filters (`Queue::library`), all
    /// of them, not the first page it shows.
    Library(LibraryQuery),
}

/// What an export wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    pub written: usize,
    /// The jobs of `Selection::Jobs` that were not written, in the order given.
    pub unusable: Vec<Unusable>,
}

/// A job named for the export that could not be exported, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Unusable {
    pub job_id: i64,
    pub reason: String,
}

/// Write the selected documents in `format` to `out`, newest job first. Documents that went
/// missing or lost their front matter are skipped with a warning. Citation keys are settled
/// over the whole library, so a selection gets the keys a full export gives.
pub fn export(
    store: &dyn Queue,
    format: Format,
    selection: &Selection,
    out: &mut dyn Write,
) -> Result<Summary, ExportError> {
    let chosen: Option<HashSet<i64>> = match selection {
        Selection::All => None,
        Selection::Jobs(ids) => Some(ids.iter().copied().collect()),
        Selection::Search(query) => Some(
            store
                .search(query, SEARCH_LIMIT)?
                .iter()
                .map(|hit| hit.job_id)
                .collect(),
        ),
        Selection::Library(query) => Some(
            store
                .library(&LibraryQuery {
                    limit: SEARCH_LIMIT,
                    ..query.clone()
                })?
                .iter()
                .map(|hit| hit.job_id)
                .collect(),
        ),
    };
    let is_chosen = |id: i64| chosen.as_ref().is_none_or(|c| c.contains(&id));
    let mut written_ids = HashSet::new();
    match format {
        Format::Jsonl => each_done_job(store, |job, path| {
            if !is_chosen(job.id) {
                return Ok(());
            }
            let read = match std::fs::read_to_string(path) {
                // A document of the shared library that another machine fetched.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    match store.stored_document(job.id)? {
                        Some(bytes) => Ok(String::from_utf8_lossy(&bytes).into_owned()),
                        None => Err(e),
                    }
                }
                other => other,
            };
            let text = match read {
                Ok(t) => t,
                Err(e) => {
                    tracing::warn!(job = job.id, "export skips {path}: {e}");
                    return Ok(());
                }
            };
            let Some((mut meta, body)) = read_document(&text) else {
                tracing::warn!(job = job.id, "export skips {path}: no front matter");
                return Ok(());
            };
            meta.insert("document".into(), path.into());
            meta.insert("text".into(), body.into());
            serde_json::to_writer(&mut *out, &meta)?;
            out.write_all(b"\n")?;
            written_ids.insert(job.id);
            Ok(())
        })?,
        Format::Bibtex | Format::CslJson | Format::Ris => {
            let mut wanted = Vec::new();
            let mut records = Vec::new();
            each_done_job(store, |job, path| {
                let chosen = is_chosen(job.id);
                let Some(mut record) = read_record(store, job.id, Path::new(path), chosen)? else {
                    return Ok(());
                };
                // The queue's tags: a file is rewritten only where they were set, and on a lab's
                // other members (or before a pull) it keeps the ones it was fetched with.
                record.tags = job
                    .reference
                    .as_ref()
                    .map(|r| r.tags.clone())
                    .unwrap_or_default();
                wanted.push((job.id, keys::wanted(&record)));
                if chosen {
                    records.push(record);
                }
                Ok(())
            })?;
            let mut keys = settle_keys(store, wanted)?;
            for record in &mut records {
                record.key = keys.remove(&record.job_id).unwrap_or_default();
                written_ids.insert(record.job_id);
            }
            match format {
                Format::Bibtex => bibtex::write(out, &records)?,
                Format::CslJson => csl::write(out, &records)?,
                Format::Ris | Format::Jsonl => ris::write(out, &records)?,
            }
        }
    }
    out.flush()?;
    let mut unusable = Vec::new();
    if let Selection::Jobs(ids) = selection {
        let mut told = HashSet::new();
        for &id in ids {
            if !written_ids.contains(&id) && told.insert(id) {
                unusable.push(Unusable {
                    job_id: id,
                    reason: why_not(store, id)?,
                });
            }
        }
    }
    Ok(Summary {
        written: written_ids.len(),
        unusable,
    })
}

/// Every document's key: those given before, and new ones given now and kept by the queue. When
/// another export gave some of the same keys at the same moment, the keys are settled again
/// over what it kept.
fn settle_keys(
    store: &dyn Queue,
    wanted: Vec<(i64, String)>,
) -> Result<HashMap<i64, String>, ExportError> {
    let mut tries = 0;
    loop {
        tries += 1;
        let given = store.citation_keys()?;
        let had: HashSet<i64> = given.iter().map(|(id, _)| *id).collect();
        let keys = keys::assign(&given, wanted.clone());
        let new: Vec<(i64, String)> = keys
            .iter()
            .filter(|(id, _)| !had.contains(id))
            .map(|(id, key)| (*id, key.clone()))
            .collect();
        if new.is_empty() {
            return Ok(keys);
        }
        match store.keep_citation_keys(&new) {
            Ok(kept) if kept < new.len() && tries < 3 => continue,
            Ok(_) => return Ok(keys),
            Err(e) => {
                tracing::warn!(
                    "the citation keys given now could not be kept ({e}); a later export may \
                     give these documents other keys"
                );
                return Ok(keys);
            }
        }
    }
}

/// Every done job's document as JSON Lines, as [`export`] with [`Format::Jsonl`] writes it.
pub fn export_jsonl(store: &dyn Queue, out: &mut dyn Write) -> Result<usize, ExportError> {
    Ok(export(store, Format::Jsonl, &Selection::All, out)?.written)
}

/// Each job that has a document, newest first, with the document's path: a done job, and one
/// being fetched again (or whose new fetch failed), whose last document is still the library's.
fn each_done_job(
    store: &dyn Queue,
    mut f: impl FnMut(&Job, &str) -> Result<(), ExportError>,
) -> Result<(), ExportError> {
    let mut before_id = None;
    loop {
        let page = store.list_jobs(&JobFilter {
            before_id,
            limit: Some(PAGE),
            ..JobFilter::default()
        })?;
        let Some(last) = page.last() else { break };
        before_id = Some(last.id);
        for job in &page {
            if let Some(path) = &job.document {
                f(job, path)?;
            }
        }
    }
    Ok(())
}

/// A document's citation record from its front matter, read without the rest of the file
/// (and, for a document that goes out, the abstract its text starts with).
fn read_record(
    store: &dyn Queue,
    job_id: i64,
    path: &Path,
    with_abstract: bool,
) -> Result<Option<Record>, ExportError> {
    let head = match std::fs::File::open(path) {
        // A document of the shared library that another machine fetched.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            match store.stored_document(job_id)? {
                Some(bytes) => read_head(&bytes[..], with_abstract),
                None => Err(e),
            }
        }
        Err(e) => Err(e),
        Ok(file) => read_head(file, with_abstract),
    };
    Ok(record_of(job_id, path, head, with_abstract))
}

fn record_of(
    job_id: i64,
    path: &Path,
    head: std::io::Result<Option<String>>,
    with_abstract: bool,
) -> Option<Record> {
    let head = match head {
        Ok(Some(head)) => head,
        Ok(None) => {
            tracing::warn!(
                job = job_id,
                "export skips {}: no front matter",
                path.display()
            );
            return None;
        }
        Err(e) => {
            tracing::warn!(job = job_id, "export skips {}: {e}", path.display());
            return None;
        }
    };
    let (meta, body) = read_document(&head)?;
    let abstract_text = with_abstract.then(|| record::abstract_of(body)).flatten();
    Some(Record::from_front_matter(job_id, &meta, abstract_text))
}

/// The front matter of a document (and the section after it when it is the abstract), up to
/// [`MAX_HEAD_BYTES`]; `None` when the file does not start with one.
fn read_head(source: impl std::io::Read, with_abstract: bool) -> std::io::Result<Option<String>> {
    let mut reader = BufReader::new(source.take(MAX_HEAD_BYTES));
    let mut head = String::new();
    let mut line = String::new();
    if reader.read_line(&mut line)? == 0 || line != "---\n" {
        return Ok(None);
    }
    head.push_str(&line);
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 {
            return Ok(None);
        }
        head.push_str(&line);
        if line == "---\n" {
            break;
        }
    }
    if with_abstract {
        let mut in_abstract = false;
        loop {
            line.clear();
            if reader.read_line(&mut line)? == 0 {
                break;
            }
            let text = line.trim_end();
            if text.is_empty() {
                head.push_str(&line);
                continue;
            }
            if !in_abstract && text != "## Abstract" {
                break;
            }
            if in_abstract && text.starts_with("## ") {
                break;
            }
            in_abstract = true;
            head.push_str(&line);
        }
    }
    Ok(Some(head))
}

/// Why a job named for the export was not in it.
fn why_not(store: &dyn Queue, id: i64) -> Result<String, ExportError> {
    Ok(match store.job(id)? {
        None => "no such job".to_string(),
        Some(job) if job.document.is_none() && job.status != Status::Done => {
            format!(
                "not done ({}), so it has no document to export",
                job.status.as_str()
            )
        }
        Some(job) if job.document.is_none() => "done, but it has no document".to_string(),
        Some(_) => "its document cannot be read (see the log)".to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::policy::Policy;
    use crate::engine::queue::Success;
    use crate::engine::sqlite::Store;
    use crate::engine::sqlite::testing::job;
    use std::time::Duration;

    /// A pending job; its id.
    fn queued(store: &Store, url: &str) -> i64 {
        let queued = store.enqueue(None, &[job(url)], 5, 0).expect("enqueue");
        match queued.first() {
            Some(crate::engine::queue::Enqueued::Queued { id, .. }) => *id,
            other => panic!("not queued: {other:?}"),
        }
    }

    /// A library of `docs` (front matter lines, body), each a done job, in a temporary folder.
    fn library(docs: &[(&str, &str)]) -> (tempfile::TempDir, Store, Vec<i64>) {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = Store::open_in_memory().expect("store");
        let mut ids = Vec::new();
        for (n, (front, body)) in docs.iter().enumerate() {
            queued(&store, &format!("https://example.org/{n}"));
            let c = store
                .claim("w", 1, Duration::from_secs(60), 8)
                .expect("claim")
                .expect("job");
            ids.push(finish(&store, &dir, &c, front, body));
        }
        (dir, store, ids)
    }

    /// Complete a claimed job with a document of `front` matter and `body`; its id.
    fn finish(
        store: &Store,
        dir: &tempfile::TempDir,
        c: &crate::engine::queue::Claimed,
        front: &str,
        body: &str,
    ) -> i64 {
        let path = dir.path().join(format!("{}.md", c.job_id));
        let text = format!("---\njob_id: {}\n{front}\n---\n\n{body}", c.job_id);
        std::fs::write(&path, text).expect("write");
        let success = Success {
            http_status: 200,
            final_url: c.url.clone(),
            document: Some(path.to_string_lossy().into_owned()),
            ..Success::default()
        };
        store
            .complete(c, &success, &Policy::default(), 2)
            .expect("complete")
            .expect("done");
        c.job_id
    }

    #[test]
    fn a_key_given_out_stays_when_an_older_job_lands_later_or_a_job_is_fetched_again() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = Store::open_in_memory().expect("store");
        let claim = || {
            store
                .claim("w", 1, Duration::from_secs(60), 8)
                .expect("claim")
                .expect("job")
        };
        queued(&store, "https://example.org/slow");
        let older = claim();
        queued(&store, "https://example.org/quick");
        let newer = finish(&store, &dir, &claim(), DOCS[0].0, "Text.");
        let (_, text) = run(&store, Format::Bibtex, &Selection::All);
        assert!(text.contains("@online{muller2020rivers,"), "{text}");
        // The older job lands with a document that wants the same key: it gets the next one.
        let older = finish(&store, &dir, &older, DOCS[0].0, "Text.");
        let (_, text) = run(&store, Format::Bibtex, &Selection::Jobs(vec![newer]));
        assert!(text.starts_with("@online{muller2020rivers,"), "{text}");
        let (_, text) = run(&store, Format::Bibtex, &Selection::Jobs(vec![older]));
        assert!(text.starts_with("@online{muller2020riversa,"), "{text}");
        // Fetched again, the newer job's document is still the library's, under its key.
        store.retry(&[newer], 5, 3).expect("retry");
        let (all, text) = run(&store, Format::Bibtex, &Selection::All);
        assert_eq!(all.written, 2, "{text}");
        assert!(text.contains("@online{muller2020rivers,"), "{text}");
        assert!(text.contains("@online{muller2020riversa,"), "{text}");
    }

    fn run(store: &Store, format: Format, selection: &Selection) -> (Summary, String) {
        let mut out = Vec::new();
        let summary = export(store, format, selection, &mut out).expect("export");
        (summary, String::from_utf8(out).expect("UTF-8"))
    }

    const DOCS: &[(&str, &str)] = &[
        (
            "url: \"https://example.org/0\"\ntitle: \"Rivers of Bavaria\"\nauthors: [\"Müller, Jürgen\"]\nissued: \"2020\"\nfetched_at: \"2024-03-14T10:00:00.000Z\"",
            "Text.",
        ),
        (
            "url: \"https://example.org/1\"\ntitle: \"Rivers, again\"\nauthors: [\"Muller, Anna\"]\nissued: \"2020-05\"\nfetched_at: \"2024-03-14T10:00:00.000Z\"",
            "Text.",
        ),
        (
            "url: \"doi:10.1/x\"\ntitle: \"A paper\"\ndoi: \"10.1/x\"\nfull_text: true\ncitation_key: \"mine2019\"\ncontainer_title: \"J. X\"",
            "## Abstract\n\nWhat we found.\n\n## Full text\n\nBody.",
        ),
    ];

    #[test]
    fn a_selection_gets_the_keys_the_whole_library_gets() {
        let (_dir, store, ids) = library(DOCS);
        let (all, text) = run(&store, Format::Bibtex, &Selection::All);
        assert_eq!(all.written, 3);
        assert!(text.contains("@online{muller2020rivers,"), "{text}");
        assert!(text.contains("@online{muller2020riversa,"), "{text}");
        assert!(text.contains("@article{mine2019,"), "{text}");
        let (one, text) = run(&store, Format::Bibtex, &Selection::Jobs(vec![ids[1]]));
        assert_eq!(one.written, 1);
        assert!(one.unusable.is_empty());
        assert!(text.starts_with("@online{muller2020riversa,"), "{text}");
        assert!(!text.contains("muller2020rivers,"), "{text}");
    }

    #[test]
    fn the_abstract_goes_out_with_the_paper() {
        let (_dir, store, ids) = library(DOCS);
        let (_, text) = run(&store, Format::CslJson, &Selection::Jobs(vec![ids[2]]));
        let items: serde_json::Value = serde_json::from_str(&text).expect("JSON");
        assert_eq!(items[0]["abstract"], "What we found.");
        assert_eq!(items[0]["type"], "article-journal");
        assert_eq!(items[0]["DOI"], "10.1/x");
    }

    /// A proceedings paper and a chapter went out as journal articles: the entry type was
    /// thrown away at intake.
    #[test]
    fn a_conference_paper_and_a_chapter_keep_their_type() {
        let (_dir, store, _) = library(&[
            (
                "url: \"doi:10.1145/conf1\"\ntitle: \"A conference paper\"\ndoi: \"10.1145/conf1\"\nauthors: [\"Lee, Ann\"]\nissued: \"2019\"\ncontainer_title: \"Proceedings of KDD\"\nentry_type: \"paper-conference\"",
                "Text.",
            ),
            (
                "url: \"doi:10.1007/chap1\"\ntitle: \"A chapter\"\ndoi: \"10.1007/chap1\"\nauthors: [\"Roe, Bo\"]\nissued: \"2018\"\ncontainer_title: \"Handbook of Things\"\nentry_type: \"chapter\"",
                "Text.",
            ),
        ]);
        let (_, text) = run(&store, Format::Bibtex, &Selection::All);
        assert!(text.contains("@inproceedings{lee2019conference,"), "{text}");
        assert!(
            text.contains("booktitle = {Proceedings of {KDD}}"),
            "{text}"
        );
        assert!(text.contains("@incollection{roe2018chapter,"), "{text}");
        assert!(text.contains("booktitle = {Handbook of Things}"), "{text}");
        assert!(!text.contains("journaltitle"), "{text}");
        let (_, text) = run(&store, Format::CslJson, &Selection::All);
        let items: serde_json::Value = serde_json::from_str(&text).expect("JSON");
        let types: Vec<&str> = items
            .as_array()
            .expect("items")
            .iter()
            .filter_map(|i| i["type"].as_str())
            .collect();
        assert!(
            types.contains(&"paper-conference") && types.contains(&"chapter"),
            "{types:?}"
        );
        let (_, text) = run(&store, Format::Ris, &Selection::All);
        assert!(
            text.contains("TY  - CONF\r\n") && text.contains("TY  - CHAP\r\n"),
            "{text}"
        );
        assert!(text.contains("T2  - Handbook of Things\r\n"), "{text}");
    }

    #[test]
    fn named_jobs_that_cannot_go_out_are_told_back() {
        let (_dir, store, ids) = library(DOCS);
        let pending = queued(&store, "https://example.org/pending");
        let (summary, text) = run(
            &store,
            Format::Ris,
            &Selection::Jobs(vec![ids[0], 999, pending, 999]),
        );
        assert_eq!(summary.written, 1);
        assert_eq!(text.matches("TY  - ").count(), 1);
        assert_eq!(
            summary
                .unusable
                .iter()
                .map(|u| (u.job_id, u.reason.as_str()))
                .collect::<Vec<_>>(),
            [
                (999, "no such job"),
                (
                    pending,
                    "not done (pending), so it has no document to export"
                )
            ]
        );
    }

    #[test]
    fn the_library_views_results_go_out_whole_not_the_page_it_shows() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = Store::open_in_memory().expect("store");
        for (n, body) in ["alpha one", "beta", "alpha two"].iter().enumerate() {
            queued(&store, &format!("https://example.org/{n}"));
            let c = store
                .claim("w", 1, Duration::from_secs(60), 8)
                .expect("claim")
                .expect("job");
            let path = dir.path().join(format!("{}.md", c.job_id));
            let text = format!("---\njob_id: {}\ntitle: \"T{n}\"\n---\n\n{body}", c.job_id);
            std::fs::write(&path, text).expect("write");
            let success = Success {
                http_status: 200,
                final_url: c.url.clone(),
                document: Some(path.to_string_lossy().into_owned()),
                index: Some(Box::new(crate::engine::queue::Indexed {
                    title: format!("T{n}"),
                    body: body.to_string(),
                    ..Default::default()
                })),
                ..Success::default()
            };
            store
                .complete(&c, &success, &Policy::default(), 2)
                .expect("complete")
                .expect("done");
        }
        // The window shows one result a page here; the export takes every match.
        let query = LibraryQuery {
            text: "alpha".into(),
            limit: 1,
            ..LibraryQuery::default()
        };
        let (summary, text) = run(&store, Format::Jsonl, &Selection::Library(query));
        assert_eq!(summary.written, 2, "{text}");
        assert!(text.contains("alpha one") && text.contains("alpha two"));
        assert!(!text.contains("\"beta\""), "{text}");
    }

    #[test]
    fn a_file_export_of_nothing_leaves_the_file_as_it_was() {
        let (dir, store, ids) = library(DOCS);
        let path = dir.path().join("out.bib");
        std::fs::write(&path, "old").expect("write");
        let pending = queued(&store, "https://example.org/pending");
        let w = write_file(
            &store,
            Format::Bibtex,
            &Selection::Jobs(vec![pending]),
            &path,
            true,
        )
        .expect("export");
        assert!(!w.file_written);
        assert_eq!(w.summary.unusable.len(), 1);
        assert_eq!(std::fs::read_to_string(&path).expect("read"), "old");
        // Nothing to write and nothing unusable: written empty only when asked.
        let empty = Store::open_in_memory().expect("store");
        let fresh = dir.path().join("fresh.bib");
        let w = write_file(&empty, Format::Bibtex, &Selection::All, &fresh, false).expect("export");
        assert!(!w.file_written && !fresh.exists());
        let w = write_file(&empty, Format::Bibtex, &Selection::All, &fresh, true).expect("export");
        assert!(w.file_written && fresh.exists());
        // A file written gets a new file's mode, not the temporary file's 0600.
        let w = write_file(
            &store,
            Format::Bibtex,
            &Selection::Jobs(vec![ids[0]]),
            &path,
            false,
        )
        .expect("export");
        assert!(w.file_written);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let made = dir.path().join("made.bib");
            write_file(&store, Format::Bibtex, &Selection::All, &made, false).expect("export");
            let mode = |p: &Path| std::fs::metadata(p).expect("meta").permissions().mode() & 0o777;
            let plain = dir.path().join("plain");
            std::fs::File::create(&plain).expect("create");
            assert_eq!(mode(&made), mode(&plain), "not the mode a new file gets");
        }
    }

    #[test]
    fn a_missing_document_is_skipped_and_the_rest_exported() {
        let (dir, store, ids) = library(DOCS);
        std::fs::remove_file(dir.path().join(format!("{}.md", ids[0]))).expect("remove");
        let (summary, text) = run(&store, Format::Jsonl, &Selection::All);
        assert_eq!(summary.written, 2);
        let (summary, _) = run(&store, Format::Bibtex, &Selection::Jobs(vec![ids[0]]));
        assert_eq!(summary.written, 0);
        assert_eq!(
            summary.unusable[0].reason,
            "its document cannot be read (see the log)"
        );
        assert_eq!(text.lines().count(), 2);
    }

    #[test]
    fn jsonl_is_the_front_matter_with_document_and_text() {
        let (dir, store, ids) = library(&DOCS[..1]);
        let (_, text) = run(&store, Format::Jsonl, &Selection::All);
        let v: serde_json::Value = serde_json::from_str(text.trim_end()).expect("JSON");
        assert_eq!(v["title"], "Rivers of Bavaria");
        assert_eq!(v["text"], "Text.");
        assert_eq!(
            v["document"],
            dir.path()
                .join(format!("{}.md", ids[0]))
                .to_string_lossy()
                .as_ref()
        );
        assert!(v.get("citation_key").is_none(), "jsonl is as it was");
    }

    #[test]
    fn formats_are_named_as_the_cli_names_them() {
        for name in Format::NAMES {
            let f: Format = name.parse().expect("a format");
            assert_eq!(f.name(), name);
        }
        assert!("docx".parse::<Format>().is_err());
    }
}
