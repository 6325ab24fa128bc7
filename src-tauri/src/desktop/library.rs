//! The Library view's commands: search with filters, the reader, tags, and opening what a
//! document links to. Listed in `build.rs` and granted in `capabilities/default.json` like the
//! others.
//!
//! The reader's HTML is made in Rust ([`render::render_blocks`]): the page puts that, and
//! nothing else it is sent, into the document as markup.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use tauri::{Runtime, State};

use super::DesktopState;
use super::commands::{inside_library, job_or_gone, off_main, open_saved, store_error};
use crate::engine::intake;
use crate::engine::library::{Library, read_document};
use crate::engine::queue::{Hit, LibraryQuery};
use crate::engine::render;
use crate::engine::tags;

/// Results a search shows at most; a person refines the words rather than scroll further.
const RESULTS_MAX: u32 = 200;

/// A document larger than this is not rendered in the window: the file button opens it.
const READER_MAX_BYTES: u64 = 16 * 1024 * 1024;

#[derive(Debug, Deserialize)]
pub struct SearchArgs {
    #[serde(default)]
    text: String,
    tag: Option<String>,
    host: Option<String>,
    batch_id: Option<i64>,
    limit: Option<u32>,
}

impl SearchArgs {
    /// The query these filters ask for, at most `limit` documents; empty filters are none.
    pub(super) fn into_query(self, limit: u32) -> LibraryQuery {
        LibraryQuery {
            text: self.text,
            tag: self.tag.filter(|t| !t.is_empty()),
            host: self.host.filter(|h| !h.is_empty()),
            batch_id: self.batch_id,
            limit,
        }
    }
}

/// Ranked documents for the words, narrowed by the filters; with no words, the newest.
#[tauri::command]
pub async fn search_library(
    query: SearchArgs,
    state: State<'_, DesktopState>,
) -> Result<Vec<Hit>, String> {
    let store = state.reader.clone();
    off_main(move || {
        let limit = query.limit.unwrap_or(RESULTS_MAX).min(RESULTS_MAX);
        let q = query.into_query(limit);
        let mut hits = store
            .library(&q)
            .map_err(store_error("Could not search the library"))?;
        for hit in &mut hits {
            shown_hit(hit);
        }
        Ok(hits)
    })
    .await
}

/// Web text in a result, with control and bidi characters escaped as the job table does.
fn shown_hit(hit: &mut Hit) {
    let escape = |t: &mut String| {
        if let std::borrow::Cow::Owned(escaped) = intake::printable_prose(t) {
            *t = escaped;
        }
    };
    hit.url = intake::shown_url(&hit.url);
    // A snippet spans lines of the Markdown; in a result it is one run of text.
    hit.snippet = hit.snippet.split_whitespace().collect::<Vec<_>>().join(" ");
    escape(&mut hit.snippet);
    for t in [&mut hit.title, &mut hit.year, &mut hit.container]
        .into_iter()
        .flatten()
    {
        escape(t);
    }
    for t in hit.authors.iter_mut().chain(hit.tags.iter_mut()) {
        escape(t);
    }
}

#[derive(Debug, Serialize)]
pub struct TagCount {
    tag: String,
    count: u64,
}

/// Every tag with how many documents carry it, most used first, for the tag filter.
#[tauri::command]
pub async fn library_tags(state: State<'_, DesktopState>) -> Result<Vec<TagCount>, String> {
    let store = state.reader.clone();
    off_main(move || {
        Ok(store
            .library_tag_counts()
            .map_err(store_error("Could not read the tags"))?
            .into_iter()
            .map(|(tag, count)| TagCount { tag, count })
            .collect())
    })
    .await
}

/// Every host with documents in the library, by name, for the host filter.
#[tauri::command]
pub async fn library_hosts(
    state: State<'_, DesktopState>,
) -> Result<Vec<crate::engine::queue::HostCount>, String> {
    let store = state.reader.clone();
    off_main(move || {
        store
            .library_hosts()
            .map_err(store_error("Could not read the hosts"))
    })
    .await
}

/// One document as the reader shows it.
#[derive(Debug, Default, Serialize)]
pub struct Reading {
    job_id: i64,
    title: Option<String>,
    url: String,
    /// The first piece of the rendered text, sanitised: with `pieces`, the only markup the
    /// page inserts.
    html: String,
    /// Where the rest starts (a top-level block), if the text did not fit the first piece:
    /// [`read_document_rest`] gives it.
    more: Option<usize>,
    authors: Vec<String>,
    published: Option<String>,
    /// The journal, or the site a page is from.
    container: Option<String>,
    doi: Option<String>,
    arxiv: Option<String>,
    pmid: Option<String>,
    fetched_at: Option<String>,
    archived_at: Option<String>,
    /// Whether the text is the paper's (`Some(false)`: a landing page and its abstract).
    full_text: Option<bool>,
    has_pdf: bool,
    document: String,
    tags: Vec<String>,
}

/// A job's document, rendered for the reader, with its metadata and tags: the text's first
/// piece only, so a long document is on screen before the rest is rendered.
#[tauri::command]
pub async fn read_document_of(id: i64, state: State<'_, DesktopState>) -> Result<Reading, String> {
    let store = state.reader.clone();
    let root = state.library_root.clone();
    off_main(move || {
        let (url, doc, path, text) = document_text(&*store, &root, id)?;
        let tags = store
            .job_tags(id)
            .map_err(store_error("Could not read the tags"))?;
        Ok(reading(id, &url, &doc, &path, &text, tags))
    })
    .await
}

/// The rest of a document's text from block `from`, in pieces the page appends one a frame.
/// `document` is the file the first piece came from: if a re-fetch replaced it since, the
/// reader must open the job again.
#[tauri::command]
pub async fn read_document_rest(
    id: i64,
    document: String,
    from: usize,
    state: State<'_, DesktopState>,
) -> Result<Vec<String>, String> {
    let store = state.reader.clone();
    let root = state.library_root.clone();
    off_main(move || {
        let (_, doc, _, text) = document_text(&*store, &root, id)?;
        if doc != document {
            return Err("The document was fetched again while it was open: open it again.".into());
        }
        let (meta, body) = split_document(&text);
        Ok(
            render::render_blocks(&body, base_in(&meta), from, render::PIECE_BYTES, usize::MAX)
                .pieces,
        )
    })
    .await
}

/// A job's URL, document name, file and text, within the reader's size limit.
fn document_text(
    store: &dyn crate::engine::queue::Queue,
    root: &Path,
    id: i64,
) -> Result<(String, String, PathBuf, String), String> {
    let job = job_or_gone(store, id)?;
    let doc = job
        .document
        .clone()
        .ok_or_else(|| "This job has no saved document yet.".to_string())?;
    // A document another machine of the lab fetched, not pulled here: the shared database
    // has it.
    if !Path::new(&doc).exists()
        && let Some(stored) = store
            .stored_document(id)
            .map_err(|e| format!("Could not read the shared copy of {doc}: {e}"))?
    {
        // The same limit as a file here: the window would render it all the same.
        within_reader_limit(stored.len() as u64)?;
        let text = String::from_utf8_lossy(&stored).into_owned();
        let path = PathBuf::from(&doc);
        return Ok((job.url, doc, path, text));
    }
    let path = inside_library(root, Path::new(&doc))?;
    let size = std::fs::metadata(&path)
        .map_err(|e| format!("Could not read {}: {e}", path.display()))?
        .len();
    within_reader_limit(size)?;
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("Could not read {}: {e}", path.display()))?;
    Ok((job.url, doc, path, text))
}

fn within_reader_limit(size: u64) -> Result<(), String> {
    if size > READER_MAX_BYTES {
        return Err(format!(
            "This document is {} MB, too large to show here. Open the file instead.",
            size / (1024 * 1024)
        ));
    }
    Ok(())
}

/// A document's front matter and its Markdown (a file without front matter is all body).
fn split_document(
    text: &str,
) -> (
    serde_json::Map<String, serde_json::Value>,
    std::borrow::Cow<'_, str>,
) {
    let (meta, body) = read_document(text).unwrap_or_default();
    let body = if meta.is_empty() { text } else { body };
    let plain_text = meta.get("kind").and_then(|k| k.as_str()) == Some("text")
        && !meta
            .get("content_type")
            .and_then(|c| c.as_str())
            .is_some_and(|c| c.to_ascii_lowercase().contains("markdown"));
    let body = if plain_text {
        as_written(body).into()
    } else {
        body.into()
    };
    (meta, body)
}

/// A plain-text document (a `.txt`, JSON, a feed) shown as written, not read as Markdown
/// (its `# comment` was a heading, `2*3*4` italic, its columns one paragraph): code blocks of
/// at most [`PLAIN_LINES`] lines each, so the reader still shows it a piece at a time.
fn as_written(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 64);
    let lines: Vec<&str> = text.lines().collect();
    for chunk in lines.chunks(PLAIN_LINES) {
        // A fence longer than any run of backticks in the chunk.
        let longest = chunk
            .iter()
            .flat_map(|l| l.split(|c| c != '`'))
            .map(str::len)
            .max()
            .unwrap_or(0);
        let fence = "`".repeat(longest.max(2) + 1);
        out.push_str(&fence);
        out.push('\n');
        for line in chunk {
            out.push_str(line);
            out.push('\n');
        }
        out.push_str(&fence);
        out.push_str("\n\n");
    }
    out
}

const PLAIN_LINES: usize = 200;

/// The address a document's body came from (its front matter's `final_url`, else `url`): its
/// relative links are relative to it.
fn base_in(meta: &serde_json::Map<String, serde_json::Value>) -> Option<&str> {
    ["final_url", "url"]
        .iter()
        .find_map(|k| meta.get(*k).and_then(|v| v.as_str()))
}

fn reading(id: i64, url: &str, doc: &str, path: &Path, text: &str, tags: Vec<String>) -> Reading {
    let (meta, body) = split_document(text);
    let first = render::render_blocks(&body, base_in(&meta), 0, render::FIRST_PIECE_BYTES, 1);
    let field = |key: &str| {
        meta.get(key)
            .and_then(|v| v.as_str())
            .map(|s| intake::printable_prose(s).into_owned())
    };
    let authors = match meta.get("authors").and_then(|v| v.as_array()) {
        Some(list) => list
            .iter()
            .filter_map(|a| a.as_str())
            .map(|a| intake::printable_prose(a).into_owned())
            .collect(),
        None => field("byline").into_iter().collect(),
    };
    // A file name beside the document, as `kept_pdf` requires: never a path to probe.
    let has_pdf = field("pdf")
        .filter(|name| !name.contains(['/', '\\']) && !name.starts_with('.'))
        .and_then(|name| path.parent().map(|dir| dir.join(name)))
        .is_some_and(|p| p.is_file());
    Reading {
        job_id: id,
        title: field("title"),
        url: intake::shown_url(url),
        html: first.pieces.concat(),
        more: first.next,
        authors,
        published: field("issued").or_else(|| field("published")),
        container: field("container_title").or_else(|| field("site_name")),
        doi: field("doi"),
        arxiv: field("arxiv"),
        pmid: field("pmid"),
        fetched_at: field("fetched_at"),
        archived_at: field("archived_at"),
        full_text: meta.get("full_text").and_then(|v| v.as_bool()),
        has_pdf,
        document: doc.to_string(),
        tags,
    }
}

/// Replace a document's tags (in the database and in its front matter); the tags as stored.
#[tauri::command]
pub async fn set_document_tags(
    id: i64,
    tags: Vec<String>,
    state: State<'_, DesktopState>,
) -> Result<Vec<String>, String> {
    let store = state.store.clone();
    let library = Library::new(state.library_root.clone());
    off_main(move || {
        tags::set_tags(&*store, &library, id, &tags)
            .map_err(|e| format!("Could not change the tags: {e}"))
    })
    .await
}

/// Open the PDF kept beside a paper's document with the system's viewer.
#[tauri::command]
pub async fn open_pdf<R: Runtime>(
    id: i64,
    app: tauri::AppHandle<R>,
    state: State<'_, DesktopState>,
) -> Result<(), String> {
    let (reader, root) = (state.reader.clone(), state.library_root.clone());
    off_main(move || open_saved(&app, &*reader, &root, id, kept_pdf)).await
}

/// The PDF a document's front matter names, beside it.
fn kept_pdf(doc: &Path) -> Result<PathBuf, String> {
    let text = std::fs::read_to_string(doc)
        .map_err(|e| format!("Could not read {}: {e}", doc.display()))?;
    let name = read_document(&text)
        .and_then(|(meta, _)| meta.get("pdf").and_then(|v| v.as_str()).map(String::from))
        .ok_or_else(|| "No PDF was kept for this document.".to_string())?;
    // A name, not a path: the PDF is saved beside its document.
    if name.contains(['/', '\\']) || name.starts_with('.') {
        return Err(format!("The kept PDF's name {name:?} is not a file name."));
    }
    doc.parent()
        .map(|dir| dir.join(&name))
        .ok_or_else(|| "The document has no folder.".to_string())
}

/// Open a link from the reader in the system browser: http(s) only, and never in the window.
#[tauri::command]
pub fn open_link<R: Runtime>(url: String, app: tauri::AppHandle<R>) -> Result<(), String> {
    use tauri_plugin_opener::OpenerExt as _;
    let parsed = url::Url::parse(&url).map_err(|e| format!("Not a valid address: {e}"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(format!(
            "Only http and https links are opened, not {}.",
            intake::printable(&url)
        ));
    }
    app.opener()
        .open_url(parsed.as_str(), None::<&str>)
        .map_err(|e| format!("Could not open the browser: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reading_takes_its_facts_from_the_front_matter_and_renders_only_the_body() {
        let dir = tempfile::tempdir().expect("tempdir");
        let doc = dir.path().join("paper.md");
        std::fs::write(dir.path().join("paper.pdf"), b"%PDF-1.4").expect("pdf");
        let text = "---\nurl: \"https://doi.org/10.1/x\"\ntitle: \"A \\u202eTitle\"\nauthors: [\"Curie, Marie\"]\nissued: \"1903\"\ncontainer_title: \"Nature\"\ndoi: \"10.1/x\"\npdf: \"paper.pdf\"\nfull_text: true\n---\n# Heading\n\n<script>alert(1)</script>\n";
        std::fs::write(&doc, text).expect("doc");
        let r = reading(
            7,
            "doi:10.1/x",
            "paper.md",
            &doc,
            text,
            vec!["thesis".into()],
        );
        assert_eq!(r.title.as_deref(), Some("A \\u{202e}Title"));
        assert_eq!(r.authors, ["Curie, Marie"]);
        assert_eq!(r.published.as_deref(), Some("1903"));
        assert_eq!(r.container.as_deref(), Some("Nature"));
        assert_eq!(r.full_text, Some(true));
        assert!(r.has_pdf);
        assert!(r.html.contains("<h1>Heading</h1>"), "{}", r.html);
        assert!(
            !r.html.contains("url:"),
            "front matter rendered: {}",
            r.html
        );
        assert!(!r.html.contains("<script"), "{}", r.html);
        assert_eq!(r.tags, ["thesis"]);
    }

    #[test]
    fn a_plain_text_document_is_shown_as_written_and_markdown_as_markdown() {
        let dir = tempfile::tempdir().expect("tempdir");
        let doc = dir.path().join("notes.md");
        let body = "Results\n=======\n# a shell comment\n2*3*4 and __init__.py\ncol1   col2\n<b>x</b> ```\n";
        let text = format!("---\nkind: \"text\"\ncontent_type: \"text/plain\"\n---\n{body}");
        let r = reading(
            1,
            "https://x.example/notes.txt",
            "notes.md",
            &doc,
            &text,
            Vec::new(),
        );
        assert!(!r.html.contains("<h1>"), "{}", r.html);
        assert!(
            !r.html.contains("<em>") && !r.html.contains("<strong>"),
            "{}",
            r.html
        );
        assert!(r.html.contains("<pre>"), "{}", r.html);
        assert!(
            r.html.contains("2*3*4 and __init__.py\ncol1   col2"),
            "{}",
            r.html
        );
        assert!(r.html.contains("&lt;b&gt;x&lt;/b&gt; ```"), "{}", r.html);
        let text = "---\nkind: \"text\"\ncontent_type: \"text/markdown\"\n---\n# Title\n";
        let r = reading(1, "https://x.example/n.md", "n.md", &doc, text, Vec::new());
        assert!(r.html.contains("<h1>Title</h1>"), "{}", r.html);
    }

    #[test]
    fn a_pdf_name_that_leaves_the_folder_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let doc = dir.path().join("d.md");
        std::fs::write(&doc, "---\npdf: \"../../etc/passwd\"\n---\ntext\n").expect("doc");
        assert!(kept_pdf(&doc).is_err());
        std::fs::write(&doc, "---\ntitle: \"t\"\n---\ntext\n").expect("doc");
        assert_eq!(
            kept_pdf(&doc).err().as_deref(),
            Some("No PDF was kept for this document.")
        );
    }

    /// A document another member fetched is read from the shared database where this
    /// member's folder lacks it; a SQLite queue, which has no copy, says the file is gone.
    #[test]
    fn the_reader_reads_another_members_document_from_the_shared_database() {
        use crate::engine::policy::Policy;
        use crate::engine::queue::{Queue, Success};
        use std::time::Duration;

        let fetcher = tempfile::tempdir().expect("fetcher's folder");
        let reader = tempfile::tempdir().expect("reader's folder");
        let url = crate::engine::postgres::testing::fresh_database_url();
        let open = |dir: &Path| {
            crate::engine::queue::open_with(dir, Some(&url)).expect("member of the lab")
        };
        let (theirs, ours) = (open(fetcher.path()), open(reader.path()));
        theirs
            .enqueue(
                None,
                &[crate::engine::sqlite::testing::job("https://a.example/1")],
                5,
                0,
            )
            .expect("enqueue");
        let c = theirs
            .claim("w", 1, Duration::from_secs(60), 2)
            .expect("claim")
            .expect("job");
        let saved = fetcher.path().join("library/a.example/1.md");
        std::fs::create_dir_all(saved.parent().expect("dir")).expect("dir");
        std::fs::write(&saved, "---\ntitle: \"One\"\n---\nShared text.\n").expect("doc");
        let ok = Success {
            http_status: 200,
            final_url: c.url.clone(),
            document: Some(saved.to_string_lossy().into_owned()),
            ..Success::default()
        };
        theirs
            .complete(&c, &ok, &Policy::default(), 2)
            .expect("complete");
        let root = reader.path().join("library");
        let (_, doc, path, text) = document_text(&*ours, &root, c.job_id).expect("read");
        assert_eq!(
            path,
            root.join("a.example/1.md"),
            "the path is this member's"
        );
        assert_eq!(doc, path.to_string_lossy());
        assert!(text.contains("Shared text."), "{text}");
        // The reader's size limit holds for the shared copy as for a file here (it was read
        // and rendered whatever its size).
        crate::engine::postgres::testing::execute(
            &url,
            "UPDATE documents SET content = convert_to(repeat('x', 17 * 1024 * 1024), 'UTF8')",
        );
        let Err(e) = document_text(&*ours, &root, c.job_id) else {
            panic!("a 17 MB shared copy was read for the reader");
        };
        assert!(e.contains("too large to show here"), "{e}");

        let alone = crate::engine::sqlite::Store::open_in_memory().expect("store");
        alone
            .enqueue(
                None,
                &[crate::engine::sqlite::testing::job("https://a.example/1")],
                5,
                0,
            )
            .expect("enqueue");
        let c = alone
            .claim("w", 1, Duration::from_secs(60), 2)
            .expect("claim")
            .expect("job");
        let gone = Success {
            document: Some(root.join("gone.md").to_string_lossy().into_owned()),
            ..ok
        };
        alone
            .complete(&c, &gone, &Policy::default(), 2)
            .expect("complete");
        assert!(document_text(&alone, &root, c.job_id).is_err());
    }
}
