//! Documents on disk under `<data-dir>/library/<host>/`. Writes are atomic (temp file, then
//! rename), so a crash never leaves half a document behind.

use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::clock::Millis;
use super::extract::{self, DocKind, Document, ExtractError};
use super::fetch::Fetched;
use super::intake;
use super::intake::Identifier;
use super::queue::{Indexed, Reference, Stage, rfc3339};

#[derive(Debug, thiserror::Error)]
pub enum LibraryError {
    #[error("cannot write {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The body is not a usable document: a block page, unparsable, or empty.
    #[error(transparent)]
    Content(#[from] ExtractError),
    #[error(
        "{content_type} is not text and is not kept (turn on \"Keep other types\" in the settings to save it raw)"
    )]
    Refused { content_type: String },
}

/// What to keep besides the Markdown, from the policy.
#[derive(Debug, Clone, Copy)]
pub struct SaveOptions {
    /// Save the fetched bytes of HTML, PDF and text beside the Markdown.
    pub keep_raw: bool,
    /// Keep non-text content raw beside a note; when false it is refused.
    pub keep_binary: bool,
}

impl Default for SaveOptions {
    fn default() -> Self {
        Self {
            keep_raw: false,
            keep_binary: true,
        }
    }
}

/// What was saved for a done job.
#[derive(Debug, Clone)]
pub struct Saved {
    /// The Markdown document (for binary content: a note pointing at the raw file).
    pub path: PathBuf,
    pub title: Option<String>,
    pub sha256: String,
    pub kind: DocKind,
    /// The job's metadata with what the page said filled in (`citation_*`, the abstract): what
    /// the next stage starts from.
    pub reference: Reference,
    /// The PDF a landing page names.
    pub pdf_url: Option<String>,
    /// What the search index and the Library list take of it: the document's text (without
    /// its front matter), its authors (or the page's byline), year, journal or site.
    pub index: Indexed,
}

/// Where a body came from, for the document's front matter.
#[derive(Debug, Clone)]
pub struct Provenance<'a> {
    pub job_id: i64,
    pub url: &'a str,
    pub host: &'a str,
    pub fetched_at: Millis,
    /// What a reference file or bookmark said about the job, if it came from one, and what
    /// its earlier stages found.
    pub reference: Option<&'a Reference>,
    /// The resolution stage that fetched the body: `Pdf` saves a paper (its PDF kept beside
    /// it, the abstract before its text), `Archived` an archive's copy of a dead link.
    pub stage: Option<Stage>,
    /// The document an earlier stage saved, which a paper's document replaces: one file per
    /// version of a paper, named after its landing page.
    pub replaces: Option<&'a Path>,
}

#[derive(Debug, Clone)]
pub struct Library {
    root: PathBuf,
    /// Folders whose names the library folder is known to hold durably: its fsync is needed
    /// only when a group writes into a folder not yet in here.
    durable_folders: std::sync::Arc<std::sync::Mutex<std::collections::HashSet<PathBuf>>>,
}

impl Library {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self {
            root: root.into(),
            durable_folders: Default::default(),
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Make the names of documents just written durable: fsync each of their folders once,
    /// and the library's own folder, which holds the folders' names, the first time a folder
    /// is seen. A document's bytes are synced as it is written, but its rename is durable
    /// only once its folder is. [`Library::save`] calls it for each document it writes.
    /// Returns how many folders were synced.
    pub fn sync_folders<'a>(
        &self,
        documents: impl IntoIterator<Item = &'a Path>,
    ) -> Result<usize, LibraryError> {
        let folders: std::collections::BTreeSet<&Path> =
            documents.into_iter().filter_map(Path::parent).collect();
        let sync = |dir: &Path| {
            std::fs::File::open(dir)
                .and_then(|f| f.sync_all())
                .map_err(io_err(dir))
        };
        for dir in &folders {
            sync(dir)?;
        }
        let new: Vec<PathBuf> = match self.durable_folders.lock() {
            Ok(known) => folders
                .iter()
                .filter(|d| !known.contains(**d))
                .map(|d| d.to_path_buf())
                .collect(),
            Err(_) => folders.iter().map(|d| d.to_path_buf()).collect(),
        };
        if new.is_empty() {
            return Ok(folders.len());
        }
        sync(&self.root)?;
        if let Ok(mut known) = self.durable_folders.lock() {
            known.extend(new);
        }
        Ok(folders.len() + 1)
    }

    /// Extract a fetched body and write it as `<host>/<slug>-<id>.md` with YAML front matter.
    /// Content that is not text (images, archives) is kept raw beside a short note. Blocking:
    /// call it off the async runtime.
    pub fn save(
        &self,
        from: &Provenance<'_>,
        fetched: &Fetched,
        options: SaveOptions,
    ) -> Result<Saved, LibraryError> {
        let doc = extract::extract(
            &fetched.body,
            fetched.content_type.as_deref(),
            &fetched.final_url,
        )?;
        let paper = from.stage == Some(Stage::Pdf) && doc.kind == DocKind::Pdf;
        let archived = from.stage == Some(Stage::Archived);
        let reference = with_page_meta(from.reference, &doc);
        if doc.kind == DocKind::Raw && !options.keep_binary {
            return Err(LibraryError::Refused {
                content_type: fetched
                    .content_type
                    .clone()
                    .unwrap_or_else(|| "content of an unknown type".into()),
            });
        }
        let sha256 = hex::encode(Sha256::digest(&fetched.body));
        let dir = self.root.join(safe_segment(from.host));
        // The content hash in the name keeps every version a re-fetch brings: a changed page
        // gets a new file, an unchanged one rewrites its own.
        // An archived copy is named after the link it stands for, not the archive's address.
        let named_by = if archived {
            from.url
        } else {
            &fetched.final_url
        };
        // A paper is named after its landing page and its PDF: `<landing stem>-<pdf sha8>`.
        // Not the landing page's own name, which a re-fetch finding the landing page unchanged
        // writes again before it asks for the PDF: that overwrote the earlier paper's text
        // with the landing page's, and a PDF that had changed overwrote the earlier PDF. The
        // landing page's file, once the paper is recorded, is removed by the worker.
        let landing_stem = from
            .replaces
            .filter(|p| paper && p.parent() == Some(dir.as_path()))
            .and_then(|p| p.file_stem())
            .map(|s| format!("{}-{}", s.to_string_lossy(), &sha256[..8]));
        let stem = landing_stem
            .unwrap_or_else(|| format!("{}-{}-{}", slug(named_by), from.job_id, &sha256[..8]));
        let path = dir.join(format!("{stem}.md"));
        let full_text = if paper {
            Some(true)
        } else if doc.pdf_url.is_some() || Identifier::from_uri(from.url).is_some() {
            // A landing page: the paper's text is not in it.
            Some(false)
        } else {
            None
        };
        let mut body = doc.text.clone();
        if let (Some(has_text), Some(abstract_text)) = (full_text, &reference.abstract_text) {
            // The page's own title and sections sit under the second heading, so they go two
            // levels down. Without the paper's text, the abstract is what the document is for.
            let rest = demote_headings(&body, 2);
            let under = if has_text {
                "Full text"
            } else {
                "Landing page"
            };
            body = format!("## Abstract\n\n{abstract_text}\n\n## {under}\n\n{rest}");
        }
        let mut raw = None;
        // A paper's PDF is the paper: it is kept whatever `keep_raw` says.
        if doc.kind == DocKind::Raw || options.keep_raw || paper {
            let ext = match doc.kind {
                DocKind::Html => "html",
                DocKind::Pdf => "pdf",
                DocKind::Text | DocKind::Raw => extension_for(fetched.content_type.as_deref()),
            };
            let raw_name = format!("{stem}.{ext}");
            write_atomic(&dir, &dir.join(&raw_name), &fetched.body)?;
            raw = Some(raw_name);
        }
        if let (DocKind::Raw, Some(raw_name)) = (doc.kind, &raw) {
            body = format!(
                "Binary content ({}) saved unchanged as `{raw_name}`; no text was extracted.\n",
                fetched.content_type.as_deref().unwrap_or("unknown type")
            );
        }
        // The resolver's metadata is authoritative for a reference; a landing page's title (often
        // the site's wording of it) only fills a gap.
        let title = if paper || Identifier::from_uri(from.url).is_some() {
            reference.title.clone().or(doc.title.clone())
        } else {
            doc.title.clone().or_else(|| reference.title.clone())
        };
        let fields = Fields {
            title: &title,
            reference: &reference,
            raw: raw.as_deref(),
            pdf: if paper { raw.as_deref() } else { None },
            full_text,
            archived_at: if archived {
                reference.archived_at.as_deref()
            } else {
                None
            },
        };
        let text = format!(
            "{}\n{}",
            front_matter(from, fetched, &doc, &sha256, &fields),
            body
        );
        write_atomic(&dir, &path, text.as_bytes())?;
        // Its name is durable before its job can be recorded done; synced here, beside the
        // other saves, it holds up this job alone, not the worker's commits.
        if let Err(e) = self.sync_folders([path.as_path()]) {
            tracing::warn!(
                "{e}; the document just saved is kept, but a power cut now could lose its name"
            );
        }
        let author_list = if reference.authors.is_empty() {
            doc.byline.iter().cloned().collect()
        } else {
            reference.authors.clone()
        };
        let index = Indexed {
            title: title.clone().unwrap_or_default(),
            authors: author_list.join("; "),
            body,
            author_list,
            year: year_of(reference.issued.as_deref(), doc.published.as_deref()),
            container: reference
                .container_title
                .clone()
                .or_else(|| doc.site_name.clone()),
            kind: Some(kind_name(doc.kind).to_string()),
            pdf: fields
                .pdf
                .map(|name| dir.join(name).to_string_lossy().into_owned()),
        };
        Ok(Saved {
            path,
            title,
            sha256,
            kind: doc.kind,
            pdf_url: doc.pdf_url.clone(),
            reference,
            index,
        })
    }
}

impl Library {
    /// Every document in the library folder, for a rebuild of the search index: its job, its
    /// path and what the index takes of it, in batches of `batch` for `f`. A file that is not
    /// one of ours (no front matter naming a job) is passed over. How many files were ours.
    pub fn each_document<E: From<LibraryError>>(
        &self,
        batch: usize,
        mut f: impl FnMut(&[(i64, String, Indexed)]) -> Result<(), E>,
    ) -> Result<u64, E> {
        let Ok(hosts) = std::fs::read_dir(&self.root) else {
            return Ok(0);
        };
        let mut pending = Vec::with_capacity(batch);
        let mut seen = 0;
        for host in hosts {
            let host = host.map_err(|e| E::from(io_err(&self.root)(e)))?;
            let Ok(files) = std::fs::read_dir(host.path()) else {
                continue;
            };
            for file in files {
                let file = file.map_err(|e| E::from(io_err(&host.path())(e)))?;
                let path = file.path();
                if path.extension().is_none_or(|e| e != "md") {
                    continue;
                }
                let Ok(text) = std::fs::read_to_string(&path) else {
                    continue;
                };
                let Some((meta, body)) = read_document(&text) else {
                    continue;
                };
                let Some(job_id) = meta.get("job_id").and_then(serde_json::Value::as_i64) else {
                    continue;
                };
                let field = |k: &str| meta.get(k).and_then(|v| v.as_str()).map(str::to_string);
                let author_list: Vec<String> = match meta.get("authors").and_then(|v| v.as_array())
                {
                    Some(list) => list
                        .iter()
                        .filter_map(|a| a.as_str().map(str::to_string))
                        .collect(),
                    None => field("byline").into_iter().collect(),
                };
                let doc = Indexed {
                    title: field("title").unwrap_or_default(),
                    authors: author_list.join("; "),
                    body: body.to_string(),
                    author_list,
                    year: year_of(field("issued").as_deref(), field("published").as_deref()),
                    container: field("container_title").or_else(|| field("site_name")),
                    kind: field("kind"),
                    pdf: field("pdf")
                        .map(|name| host.path().join(name).to_string_lossy().into_owned()),
                };
                pending.push((job_id, path.to_string_lossy().into_owned(), doc));
                seen += 1;
                if pending.len() >= batch {
                    f(&pending)?;
                    pending.clear();
                }
            }
        }
        if !pending.is_empty() {
            f(&pending)?;
        }
        Ok(seen)
    }
}

/// Split a document written by [`Library::save`] into its front matter (as JSON) and its text.
pub fn read_document(text: &str) -> Option<(serde_json::Map<String, serde_json::Value>, &str)> {
    let rest = text.strip_prefix("---\n")?;
    let end = rest.find("\n---\n")?;
    let mut meta = serde_json::Map::new();
    for line in rest[..end].lines() {
        let (key, value) = line.split_once(": ")?;
        meta.insert(key.to_string(), serde_json::from_str(value).ok()?);
    }
    Some((meta, rest[end + "\n---\n".len()..].trim_start_matches('\n')))
}

/// The job's metadata with the gaps filled from what the page said: the entry's or the
/// resolver's own values win, since a bibliography or CSL-JSON is written with more care than a
/// page's meta tags.
fn with_page_meta(reference: Option<&Reference>, doc: &Document) -> Reference {
    let mut r = reference.cloned().unwrap_or_default();
    if r.title.is_none() && !doc.authors.is_empty() {
        r.title = doc.title.clone();
    }
    if r.authors.is_empty() {
        r.authors = doc.authors.clone();
    }
    if r.issued.is_none() && !doc.authors.is_empty() {
        r.issued = doc.published.as_deref().and_then(issued_of);
    }
    // The journal a page names is its container; a site only for a page with authors.
    if r.container_title.is_none() {
        r.container_title = doc
            .journal
            .clone()
            .or_else(|| doc.site_name.clone().filter(|_| !doc.authors.is_empty()));
    }
    if r.abstract_text.is_none() {
        r.abstract_text = doc.abstract_text.clone();
    }
    if r.doi.is_none() {
        // A page's `citation_doi` may be a resolver link or `doi:…`: the DOI alone, or none.
        r.doi = doc
            .doi
            .as_deref()
            .and_then(crate::engine::intake::identifiers::doi_in_field);
    }
    r
}

/// The year the Library list shows: a reference's issued date's, else the page's published
/// date's.
fn year_of(issued: Option<&str>, published: Option<&str>) -> Option<String> {
    issued
        .and_then(|d| d.get(..4))
        .filter(|y| y.bytes().all(|b| b.is_ascii_digit()))
        .map(str::to_string)
        .or_else(|| published.and_then(issued_of)?.get(..4).map(str::to_string))
}

fn kind_name(kind: DocKind) -> &'static str {
    match kind {
        DocKind::Html => "html",
        DocKind::Pdf => "pdf",
        DocKind::Text => "text",
        DocKind::Raw => "raw",
    }
}

/// `YYYY`, `YYYY-MM` or `YYYY-MM-DD` from a page's date (`2013-07-31T…`, `2013/07/31`).
fn issued_of(date: &str) -> Option<String> {
    let parts: Vec<&str> = date.split(['-', '/', 'T', ' ']).take(3).collect();
    let year = parts
        .first()
        .filter(|y| y.len() == 4 && y.bytes().all(|b| b.is_ascii_digit()))?;
    // Google Scholar's own example writes `2010/5/12`: one digit or two.
    let two = |p: Option<&&str>| {
        p.filter(|v| (1..=2).contains(&v.len()) && v.bytes().all(|b| b.is_ascii_digit()))
            .map(|v| format!("{v:0>2}"))
    };
    Some(match (two(parts.get(1)), two(parts.get(2))) {
        (Some(m), Some(d)) => format!("{year}-{m}-{d}"),
        (Some(m), None) => format!("{year}-{m}"),
        _ => year.to_string(),
    })
}

/// What the front matter says beyond the page itself.
struct Fields<'a> {
    title: &'a Option<String>,
    reference: &'a Reference,
    raw: Option<&'a str>,
    pdf: Option<&'a str>,
    /// `Some` for a reference or a landing page: whether the text is the paper's.
    full_text: Option<bool>,
    /// An archived copy's snapshot time.
    archived_at: Option<&'a str>,
}

/// YAML front matter. Values are written as JSON strings, which are valid YAML double-quoted
/// scalars, so no title or URL can break out of its field.
fn front_matter(
    from: &Provenance<'_>,
    fetched: &Fetched,
    doc: &Document,
    sha256: &str,
    fields: &Fields<'_>,
) -> String {
    let q = |v: &str| serde_json::to_string(v).unwrap_or_else(|_| "\"\"".to_string());
    let opt = |v: &Option<String>| v.as_deref().map_or_else(|| "null".to_string(), q);
    let kind = kind_name(doc.kind);
    let mut out = String::from("---\n");
    for (key, value) in [
        ("url", q(&intake::without_credentials(from.url))),
        (
            "final_url",
            q(&intake::without_credentials(&fetched.final_url)),
        ),
        ("title", opt(fields.title)),
        ("byline", opt(&doc.byline)),
        ("published", opt(&doc.published)),
        ("language", opt(&doc.language)),
        ("canonical_url", opt(&doc.canonical_url)),
        ("description", opt(&doc.description)),
        ("site_name", opt(&doc.site_name)),
        ("fetched_at", q(&rfc3339(from.fetched_at))),
        ("content_type", opt(&fetched.content_type)),
        ("kind", q(kind)),
        ("sha256", q(sha256)),
        ("raw", fields.raw.map_or_else(|| "null".to_string(), q)),
        ("job_id", from.job_id.to_string()),
    ] {
        out.push_str(key);
        out.push_str(": ");
        out.push_str(&yaml_safe(&value));
        out.push('\n');
    }
    for (key, value) in reference_fields(from.url, fields) {
        out.push_str(key);
        out.push_str(": ");
        out.push_str(&yaml_safe(&value));
        out.push('\n');
    }
    out.push_str("---\n");
    out
}

/// A JSON value with the characters JSON leaves raw but YAML refuses (U+007F–U+009F, U+FFFE,
/// U+FFFF) written as `\u` escapes, which both read back as the character.
fn yaml_safe(json: &str) -> std::borrow::Cow<'_, str> {
    let refused = |c: char| matches!(c, '\u{7f}'..='\u{9f}' | '\u{fffe}' | '\u{ffff}');
    if !json.contains(refused) {
        return std::borrow::Cow::Borrowed(json);
    }
    let mut out = String::with_capacity(json.len() + 8);
    for c in json.chars() {
        if refused(c) {
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// The fields of a reference (DESIGN.md): its identifier, and what its entry said. Keys that do
/// not apply are left out, so a plain page's front matter is as before.
fn reference_fields(url: &str, fields: &Fields<'_>) -> Vec<(&'static str, String)> {
    let q = |v: &str| serde_json::to_string(v).unwrap_or_else(|_| "\"\"".to_string());
    let list = |v: &[String]| serde_json::to_string(v).unwrap_or_else(|_| "[]".to_string());
    let mut out = Vec::new();
    let r = fields.reference;
    match Identifier::from_uri(url) {
        Some(Identifier::Doi(d)) => out.push(("doi", q(&d))),
        Some(Identifier::Arxiv(a)) => out.push(("arxiv", q(&a))),
        Some(Identifier::Pmid(p)) => out.push(("pmid", q(&p))),
        Some(Identifier::Pmcid(p)) => out.push(("pmcid", q(&p))),
        None => {
            if let Some(d) = &r.doi {
                out.push(("doi", q(d)));
            }
        }
    }
    if let Some(pdf) = fields.pdf {
        out.push(("pdf", q(pdf)));
    }
    if let Some(full) = fields.full_text {
        out.push(("full_text", full.to_string()));
    }
    if let Some(at) = fields.archived_at {
        out.push(("archived_copy", "true".to_string()));
        out.push(("archived_at", q(at)));
    }
    if !r.authors.is_empty() {
        out.push(("authors", list(&r.authors)));
    }
    if let Some(v) = &r.issued {
        out.push(("issued", q(v)));
    }
    if let Some(v) = &r.container_title {
        out.push(("container_title", q(v)));
    }
    if let Some(v) = &r.entry_type {
        out.push(("entry_type", q(v)));
    }
    if let Some(v) = &r.citation_key {
        out.push(("citation_key", q(v)));
    }
    if !r.tags.is_empty() {
        out.push(("tags", list(&r.tags)));
    }
    out
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> LibraryError + '_ {
    move |source| LibraryError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Temp files are named `.gleaner-XXXXXX.tmp`, so that the ones a killed process left can be
/// told from anything else in the folder.
const TEMP_PREFIX: &str = ".gleaner-";
const TEMP_SUFFIX: &str = ".tmp";
/// What is younger than this may still be in the hands of a live process.
const LEFTOVER_AGE: std::time::Duration = std::time::Duration::from_secs(300);

impl Library {
    /// Remove what a killed process left: temp files (ours, and those of versions that used
    /// `tempfile`'s default names), and raw copies whose Markdown document was never written
    /// (the raw copy is written first). Files younger than a few minutes are left alone: a
    /// process still running may be writing them. Returns how many files went.
    pub fn clean_leftovers(&self) -> std::io::Result<usize> {
        let Ok(hosts) = std::fs::read_dir(&self.root) else {
            return Ok(0);
        };
        let mut removed = 0;
        for host in hosts {
            let host = host?;
            if !host.file_type()?.is_dir() {
                if is_temp_name(&host.file_name().to_string_lossy()) && old_enough(&host) {
                    std::fs::remove_file(host.path())?;
                    removed += 1;
                }
                continue;
            }
            for entry in std::fs::read_dir(host.path())? {
                let entry = entry?;
                let name = entry.file_name().to_string_lossy().into_owned();
                let leftover = is_temp_name(&name)
                    || orphan_raw_stem(&name)
                        .is_some_and(|stem| !host.path().join(format!("{stem}.md")).exists());
                if leftover && entry.file_type()?.is_file() && old_enough(&entry) {
                    std::fs::remove_file(entry.path())?;
                    removed += 1;
                }
            }
        }
        Ok(removed)
    }
}

fn is_temp_name(name: &str) -> bool {
    (name.starts_with(TEMP_PREFIX) && name.ends_with(TEMP_SUFFIX))
        // tempfile's default: ".tmp" and six random characters.
        || (name.starts_with(".tmp") && name.len() == 10)
}

/// The stem of a raw copy named as [`Library::save`] names them (`<slug>-<id>-<8 hex>.<ext>`,
/// or a paper's PDF `<slug>-<id>-<8 hex>-<8 hex>.pdf`), for a file that is not itself a
/// document.
fn orphan_raw_stem(name: &str) -> Option<&str> {
    let is_hash = |s: &str| s.len() == 8 && s.bytes().all(|b| b.is_ascii_hexdigit());
    let is_id = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let (stem, ext) = name.rsplit_once('.')?;
    if ext == "md" || ext.is_empty() {
        return None;
    }
    let (rest, hash) = stem.rsplit_once('-')?;
    let (before, id) = rest.rsplit_once('-')?;
    let ours = is_hash(hash)
        && (is_id(id) || (is_hash(id) && before.rsplit_once('-').is_some_and(|(_, id)| is_id(id))));
    ours.then_some(stem)
}

/// Remove a document Gleaner wrote and the raw copy kept beside it (the page as fetched, a
/// paper's PDF): the copy is named after the document. Blocking.
pub fn remove_document(path: &Path) -> std::io::Result<()> {
    std::fs::remove_file(path)?;
    let (Some(dir), Some(stem)) = (path.parent(), path.file_stem()) else {
        return Ok(());
    };
    let stem = stem.to_string_lossy();
    for entry in std::fs::read_dir(dir)? {
        let name = entry?.file_name().to_string_lossy().into_owned();
        if orphan_raw_stem(&name) == Some(stem.as_ref()) {
            std::fs::remove_file(dir.join(&name))?;
        }
    }
    Ok(())
}

fn old_enough(entry: &std::fs::DirEntry) -> bool {
    entry
        .metadata()
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok())
        .is_some_and(|age| age >= LEFTOVER_AGE)
}

/// Write `bytes` to `path` through a temp file in the same folder, fsynced, then renamed.
pub fn write_atomic(dir: &Path, path: &Path, bytes: &[u8]) -> Result<(), LibraryError> {
    std::fs::create_dir_all(dir).map_err(io_err(dir))?;
    let mut tmp = tempfile::Builder::new()
        .prefix(TEMP_PREFIX)
        .suffix(TEMP_SUFFIX)
        .tempfile_in(dir)
        .map_err(io_err(dir))?;
    tmp.write_all(bytes).map_err(io_err(path))?;
    tmp.as_file().sync_all().map_err(io_err(path))?;
    tmp.persist(path).map_err(|e| LibraryError::Io {
        path: path.to_path_buf(),
        source: e.error,
    })?;
    Ok(())
}

fn extension_for(content_type: Option<&str>) -> &'static str {
    let ct = content_type.unwrap_or("").to_ascii_lowercase();
    let mime = ct.split(';').next().unwrap_or("").trim();
    match mime {
        "text/html" | "application/xhtml+xml" => "html",
        "application/pdf" => "pdf",
        "text/plain" => "txt",
        // Not `md`: that is the document's own name, which the raw copy would be overwritten by.
        "text/markdown" => "markdown",
        "application/json" => "json",
        "application/xml" | "text/xml" | "application/rss+xml" | "application/atom+xml" => "xml",
        "image/png" => "png",
        "image/jpeg" => "jpg",
        "image/gif" => "gif",
        "image/webp" => "webp",
        "image/svg+xml" => "svg",
        "application/zip" => "zip",
        "application/gzip" => "gz",
        "video/mp4" => "mp4",
        "audio/mpeg" => "mp3",
        _ => "bin",
    }
}

/// A file-name-safe slug from the URL's path: "2024/05/great-story" → "2024-05-great-story".
/// `text` with every ATX heading `by` levels lower, down to `######` at most; a fenced code
/// block's `# comment` is no heading.
fn demote_headings(text: &str, by: usize) -> String {
    let mut out = String::with_capacity(text.len() + 64);
    let mut fences = crate::engine::extract::fence::Fences::default();
    for line in text.split_inclusive('\n') {
        let hashes = line.bytes().take_while(|b| *b == b'#').count();
        if !fences.is_code(line) && (1..=6).contains(&hashes) && line[hashes..].starts_with(' ') {
            out.push_str(&"#".repeat((hashes + by).min(6)));
            out.push_str(&line[hashes..]);
        } else {
            out.push_str(line);
        }
    }
    out
}

pub fn slug(url: &str) -> String {
    let path = url::Url::parse(url)
        .map(|u| u.path().to_string())
        .unwrap_or_default();
    let mut out = String::new();
    for c in path.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    let out = out.trim_end_matches('-');
    let out: String = out
        .chars()
        .rev()
        .take(60)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    let out = out.trim_start_matches('-');
    if out.is_empty() {
        "index".to_string()
    } else {
        out.to_string()
    }
}

fn safe_segment(host: &str) -> String {
    let s: String = host
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let s = s.trim_matches('.');
    if s.is_empty() {
        "_".to_string()
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests;
