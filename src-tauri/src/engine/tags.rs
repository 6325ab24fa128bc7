//! Tags (DESIGN.md, "The library"): from bookmark folders and BibTeX `keywords`, or set by
//! hand. What a tag may be, the `tag:` terms of a library query, and a hand-set change written
//! to the queue and to the document's front matter together.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use unicode_normalization::UnicodeNormalization;

use super::library::{Library, LibraryError, write_atomic};
use super::queue::{Queue, QueueError, Status};

/// A longer tag is cut here (in characters): a tag is a label, and a bookmark folder or a
/// keyword list pasted as one word should not fill the Library list.
pub const MAX_TAG_CHARS: usize = 100;
/// A job keeps at most this many tags; the first ones win.
pub const MAX_TAGS: usize = 50;

#[derive(Debug, thiserror::Error)]
pub enum TagsError {
    #[error("no job {0}")]
    NoSuchJob(i64),
    #[error("job {0} is being fetched right now; set its tags once it is done")]
    Running(i64),
    #[error(
        "{} is outside the library folder {}; its tags are left alone",
        path.display(),
        root.display()
    )]
    Outside { path: PathBuf, root: PathBuf },
    #[error("{} has no front matter that Gleaner wrote; its tags are left alone", .0.display())]
    NotADocument(PathBuf),
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Write(#[from] LibraryError),
    #[error(transparent)]
    Queue(#[from] QueueError),
}

/// One tag as it is kept: NFC, whitespace (newlines too) collapsed to single spaces, control
/// characters and bidi overrides and isolates dropped (a tag is a short label: one would
/// reverse the text after it wherever it is shown), cut to [`MAX_TAG_CHARS`]; `None` if
/// nothing is left.
pub fn clean(tag: &str) -> Option<String> {
    let nfc: String = tag
        .nfc()
        .filter(|c| !c.is_control() || c.is_whitespace())
        .filter(|&c| !matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'))
        .collect();
    let collapsed = nfc.split_whitespace().collect::<Vec<_>>().join(" ");
    let cut: String = collapsed.chars().take(MAX_TAG_CHARS).collect();
    let cut = cut.trim_end();
    (!cut.is_empty()).then(|| cut.to_string())
}

/// The key two tags are the same by: the cleaned tag in lower case (Unicode, so "Über" and
/// "über" are one tag). The queue matches and counts tags by it.
pub fn key(cleaned: &str) -> String {
    cleaned.to_lowercase()
}

/// Tags as a job keeps them: each [`clean`]ed, empties dropped, duplicates (by [`key`])
/// dropped after their first, at most [`MAX_TAGS`]. Order is kept.
pub fn normalise<S: AsRef<str>>(tags: &[S]) -> Vec<String> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for tag in tags {
        let Some(tag) = clean(tag.as_ref()) else {
            continue;
        };
        if seen.insert(key(&tag)) {
            out.push(tag);
            if out.len() == MAX_TAGS {
                break;
            }
        }
    }
    out
}

/// A library query's text with its `tag:NAME` and `tag:"two words"` terms taken out, and those
/// tags' keys (deduplicated). A term counts only where a word starts, outside a quoted phrase,
/// so `"see tag:x"` stays a phrase; `tag:` with no name is dropped.
pub fn split_tag_terms(text: &str) -> (String, Vec<String>) {
    let mut rest = String::with_capacity(text.len());
    let mut keys: Vec<String> = Vec::new();
    let mut in_phrase = false;
    let mut at_word_start = true;
    let mut i = 0;
    while i < text.len() {
        let tail = &text[i..];
        if !in_phrase && at_word_start && starts_with_tag(tail) {
            let after = &tail[4..];
            let (name, used) = match after.strip_prefix('"') {
                Some(quoted) => match quoted.find('"') {
                    Some(end) => (&quoted[..end], 4 + 1 + end + 1),
                    None => (quoted, tail.len()),
                },
                None => {
                    let end = after.find(char::is_whitespace).unwrap_or(after.len());
                    (&after[..end], 4 + end)
                }
            };
            if let Some(k) = clean(name).map(|n| key(&n))
                && !keys.contains(&k)
            {
                keys.push(k);
            }
            i += used;
            at_word_start = false;
            continue;
        }
        let Some(c) = tail.chars().next() else { break };
        if c == '"' {
            in_phrase = !in_phrase;
        }
        at_word_start = c.is_whitespace();
        rest.push(c);
        i += c.len_utf8();
    }
    (rest.split_whitespace().collect::<Vec<_>>().join(" "), keys)
}

fn starts_with_tag(text: &str) -> bool {
    text.get(..4)
        .is_some_and(|p| p.eq_ignore_ascii_case("tag:"))
}

/// A document's text with its front matter's `tags:` line set to `tags` (one JSON array on one
/// line), added before the closing `---` if absent, removed when `tags` is empty. Every other
/// line is left as it was. `None` if the text has no front matter as [`Library::save`] writes.
pub fn retag_text(text: &str, tags: &[String]) -> Option<String> {
    let rest = text.strip_prefix("---\n")?;
    let end = rest.find("\n---\n")?;
    let line = (!tags.is_empty())
        .then(|| serde_json::to_string(tags).map(|list| format!("tags: {list}")))
        .transpose()
        .ok()?;
    let mut lines: Vec<String> = Vec::new();
    let mut placed = false;
    for l in rest[..end].split('\n') {
        if l.starts_with("tags: ") || l == "tags:" {
            if let Some(new) = &line
                && !placed
            {
                lines.push(new.clone());
            }
            placed = true;
        } else {
            lines.push(l.to_string());
        }
    }
    if let (Some(new), false) = (&line, placed) {
        lines.push(new.clone());
    }
    Some(format!("---\n{}{}", lines.join("\n"), &rest[end..]))
}

/// The document's text with a `citation_key:` line in its front matter, where the library
/// writes it (before `tags:`); `None` for a text without Gleaner's front matter or one that
/// has a key.
pub fn with_citation_key_line(text: &str, key: &str) -> Option<String> {
    let rest = text.strip_prefix("---\n")?;
    let end = rest.find("\n---\n")?;
    let lines: Vec<&str> = rest[..end].split('\n').collect();
    if lines.iter().any(|l| l.starts_with("citation_key:")) {
        return None;
    }
    let line = format!("citation_key: {}", serde_json::to_string(key).ok()?);
    let at = lines
        .iter()
        .position(|l| l.starts_with("tags:"))
        .unwrap_or(lines.len());
    let mut out: Vec<&str> = lines[..at].to_vec();
    out.push(&line);
    out.extend(&lines[at..]);
    Some(format!("---\n{}{}", out.join("\n"), &rest[end..]))
}

/// A citation key a reference file brings for a job queued before without one (`gleaner add
/// DOI`, then the `.bib` that cites it): kept by the queue ([`Queue::adopt_citation_key`]) and
/// written into its document, so the export keys it as the file did. Whether it was kept. A
/// document that cannot be rewritten keeps the key in the queue for its next fetch.
pub fn adopt_citation_key(
    store: &dyn Queue,
    library: Option<&Library>,
    job_id: i64,
    key: &str,
) -> Result<bool, QueueError> {
    if !store.adopt_citation_key(job_id, key)? {
        return Ok(false);
    }
    tracing::info!(
        job_id,
        key,
        "the citation key a reference file brought is kept"
    );
    let (Some(library), Some(job)) = (library, store.job(job_id)?) else {
        return Ok(true);
    };
    let Some(doc) = job.document else {
        return Ok(true);
    };
    // A document with a key already (written by hand) keeps it.
    let keyed = |text: &str| with_citation_key_line(text, key).or_else(|| Some(text.to_string()));
    if let Err(e) = rewrite_document(library, Path::new(&doc), keyed) {
        tracing::warn!(job_id, document = %doc, error = %e, "the document's citation key cannot be written");
    }
    Ok(true)
}

/// What a document held before [`retag_document`] rewrote it, to put back if the change cannot
/// be committed.
#[derive(Debug)]
pub struct Previous {
    path: PathBuf,
    bytes: Vec<u8>,
}

impl Previous {
    /// Write the document back as it was.
    pub fn restore(self) -> Result<(), LibraryError> {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        write_atomic(dir, &self.path, &self.bytes)
    }
}

/// Rewrite the `tags:` line of the document at `path`, atomically. Refused for a path outside
/// the library folder (after following links) or a file without Gleaner's front matter.
/// `Ok(None)` when the file is gone: there is nothing to keep in step.
pub fn retag_document(
    library: &Library,
    path: &Path,
    tags: &[String],
) -> Result<Option<Previous>, TagsError> {
    rewrite_document(library, path, |text| retag_text(text, tags))
        .map(|r| r.map(|(path, bytes)| Previous { path, bytes }))
}

/// Rewrite the document at `path` with `change` (`None`: not Gleaner's front matter),
/// atomically; its real path and what it held. Refused for a path outside the library folder
/// (after following links). `Ok(None)` when the file is gone.
fn rewrite_document(
    library: &Library,
    path: &Path,
    change: impl FnOnce(&str) -> Option<String>,
) -> Result<Option<(PathBuf, Vec<u8>)>, TagsError> {
    let real = match path.canonicalize() {
        Ok(real) => real,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(TagsError::Read {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    let outside = || TagsError::Outside {
        path: path.to_path_buf(),
        root: library.root().to_path_buf(),
    };
    let root = library.root().canonicalize().map_err(|_| outside())?;
    if !real.starts_with(&root) {
        return Err(outside());
    }
    let bytes = std::fs::read(&real).map_err(|source| TagsError::Read {
        path: real.clone(),
        source,
    })?;
    let text =
        std::str::from_utf8(&bytes).map_err(|_| TagsError::NotADocument(path.to_path_buf()))?;
    let new = change(text).ok_or_else(|| TagsError::NotADocument(path.to_path_buf()))?;
    let dir = real.parent().unwrap_or(&root);
    write_atomic(dir, &real, new.as_bytes())?;
    Ok(Some((real, bytes)))
}

/// Set a job's tags by hand (the CLI's `gleaner tags` and the window both call this): the
/// tags as kept ([`normalise`]d).
///
/// The document is rewritten first, then the queue commits; if the commit fails, or the job
/// went meanwhile, the document is put back. The queue's commit is the one point where the
/// change happens, so a failure leaves both as they were. A crash between the two leaves the
/// file ahead of the queue, until the next change or re-fetch writes the line again. A job
/// being fetched is refused: its new document would be written with the tags of its claim.
/// Only the newest version's file is rewritten; a gone file is not an error.
pub fn set_tags(
    store: &dyn Queue,
    library: &Library,
    job_id: i64,
    tags: &[String],
) -> Result<Vec<String>, TagsError> {
    let job = store.job(job_id)?.ok_or(TagsError::NoSuchJob(job_id))?;
    if job.status == Status::Running {
        return Err(TagsError::Running(job_id));
    }
    let tags = normalise(tags);
    let previous = match &job.document {
        Some(doc) => retag_document(library, Path::new(doc), &tags)?,
        None => None,
    };
    if previous.is_none()
        && let Some(doc) = &job.document
    {
        tracing::warn!(job_id, document = %doc, "the document is gone; only the queue's tags change");
    }
    let put_back = |previous: Option<Previous>| {
        if let Some(p) = previous
            && let Err(e) = p.restore()
        {
            tracing::error!(job_id, error = %e, "cannot put the document's tags back");
        }
    };
    match store.set_tags(job_id, &tags) {
        Ok(Some(kept)) => {
            tracing::info!(job_id, tags = ?kept, "tags set");
            Ok(kept)
        }
        Ok(None) => {
            put_back(previous);
            Err(TagsError::NoSuchJob(job_id))
        }
        Err(e) => {
            put_back(previous);
            Err(e.into())
        }
    }
}

/// Tags a link brings again (a bookmark export imported after its folders changed, a `.bib`
/// with new keywords) added to its job, as [`set_tags`] sets them: the tags the job lacks, in
/// the order they came; none when it has them all. A job being fetched is refused, as by hand.
pub fn add_brought(
    store: &dyn Queue,
    library: &Library,
    job_id: i64,
    brought: &[String],
) -> Result<Vec<String>, TagsError> {
    let had = store.job_tags(job_id)?;
    let keys: HashSet<String> = had.iter().map(|t| key(t)).collect();
    let new: Vec<String> = normalise(brought)
        .into_iter()
        .filter(|t| !keys.contains(&key(t)))
        .collect();
    if new.is_empty() || had.len() >= MAX_TAGS {
        return Ok(Vec::new());
    }
    let all: Vec<String> = had.into_iter().chain(new).collect();
    let kept = set_tags(store, library, job_id, &all)?;
    Ok(kept
        .into_iter()
        .filter(|t| !keys.contains(&key(t)))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn tags_are_trimmed_collapsed_deduplicated_and_capped() {
        let long = "x".repeat(150);
        let many: Vec<String> = (0..80).map(|i| format!("t{i}")).collect();
        assert_eq!(
            normalise(&[
                "  quantum \n  sensing ",
                "",
                "   ",
                "Thesis",
                "thesis",
                "QUANTUM SENSING",
                "Über",
                "über",
                "e\u{301}cole",
                "école",
                "a\u{0}b",
                "draft\u{202e}fdp.exe",
                "\u{2067}isolated\u{2069}",
            ]),
            strings(&[
                "quantum sensing",
                "Thesis",
                "Über",
                "école",
                "ab",
                "draftfdp.exe",
                "isolated"
            ])
        );
        assert_eq!(
            normalise(&[long.as_str()]),
            [long[..MAX_TAG_CHARS].to_string()]
        );
        let capped = normalise(&many);
        assert_eq!(capped.len(), MAX_TAGS);
        assert_eq!(capped[0], "t0");
        // Cut at a character, not a byte, and no trailing space after the cut.
        let accented = format!("{} é", "é".repeat(MAX_TAG_CHARS - 1));
        assert_eq!(
            normalise(&[accented.as_str()]),
            ["é".repeat(MAX_TAG_CHARS - 1)]
        );
    }

    #[test]
    fn tag_terms_are_taken_out_of_the_query_text() {
        let split = |t: &str| split_tag_terms(t);
        assert_eq!(
            split("tag:thesis quantum"),
            ("quantum".into(), strings(&["thesis"]))
        );
        assert_eq!(
            split("bedload TAG:\"Reading Group\" tag:ml tag:ML"),
            ("bedload".into(), strings(&["reading group", "ml"]))
        );
        assert_eq!(split("tag:thesis"), (String::new(), strings(&["thesis"])));
        // Inside a phrase or a word, `tag:` is text.
        assert_eq!(
            split("\"see tag:x\" notag:y"),
            ("\"see tag:x\" notag:y".into(), vec![])
        );
        assert_eq!(split("tag: word"), ("word".into(), vec![]));
        assert_eq!(
            split("tag:\"unclosed tag"),
            (String::new(), strings(&["unclosed tag"]))
        );
        assert_eq!(split("NEAR/ (c++"), ("NEAR/ (c++".into(), vec![]));
    }

    const DOC: &str = "---\nurl: \"https://a.example/\"\ntitle: \"A\"\ntags: [\"old\"]\njob_id: 3\n---\n\nBody\ntags: [\"not front matter\"]\n";

    #[test]
    fn the_tags_line_is_replaced_and_nothing_else() {
        let new = retag_text(DOC, &strings(&["new", "two words"])).expect("ours");
        assert_eq!(
            new,
            DOC.replace("tags: [\"old\"]", "tags: [\"new\",\"two words\"]")
        );
    }

    #[test]
    fn the_tags_line_is_added_before_the_closing_line_and_removed_when_empty() {
        let without = DOC.replace("tags: [\"old\"]\n", "");
        let added = retag_text(&without, &strings(&["thesis"])).expect("ours");
        assert_eq!(
            added,
            without.replace("job_id: 3\n---\n", "job_id: 3\ntags: [\"thesis\"]\n---\n")
        );
        assert_eq!(retag_text(DOC, &[]).expect("ours"), without);
        assert_eq!(retag_text(&without, &[]).expect("ours"), without);
        assert!(retag_text("no front matter\n", &strings(&["x"])).is_none());
        assert!(retag_text("---\nunclosed: 1\n", &strings(&["x"])).is_none());
    }

    #[test]
    fn a_hostile_tag_stays_one_json_string_on_one_line() {
        let hostile = "evil\"]\n---\ninjected: true\n\\";
        let new = retag_text(DOC, &[hostile.to_string()]).expect("ours");
        let (meta, body) = crate::engine::library::read_document(&new).expect("still parses");
        assert_eq!(meta["tags"], serde_json::json!([hostile]));
        assert!(!meta.contains_key("injected"));
        assert_eq!(meta["job_id"], 3);
        assert!(body.starts_with("Body\n"), "{body}");
        assert_eq!(new.lines().filter(|l| l.starts_with("tags: ")).count(), 2);
    }

    #[test]
    fn a_document_outside_the_library_is_refused_and_one_inside_is_rewritten() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("library");
        std::fs::create_dir_all(root.join("a.example")).expect("dirs");
        let inside = root.join("a.example/a-3-01234567.md");
        let outside = dir.path().join("elsewhere.md");
        std::fs::write(&inside, DOC).expect("write");
        std::fs::write(&outside, DOC).expect("write");
        let lib = Library::new(&root);
        let err = retag_document(&lib, &outside, &strings(&["x"])).expect_err("outside");
        assert!(matches!(err, TagsError::Outside { .. }), "{err}");
        let sneaky = root.join("a.example/../../elsewhere.md");
        assert!(retag_document(&lib, &sneaky, &strings(&["x"])).is_err());
        assert_eq!(std::fs::read_to_string(&outside).expect("read"), DOC);

        let previous = retag_document(&lib, &inside, &strings(&["x"]))
            .expect("inside")
            .expect("the file is there");
        assert!(
            std::fs::read_to_string(&inside)
                .expect("read")
                .contains("\ntags: [\"x\"]\n")
        );
        previous.restore().expect("restore");
        assert_eq!(std::fs::read_to_string(&inside).expect("read"), DOC);
        let gone = root.join("a.example/gone.md");
        assert!(
            retag_document(&lib, &gone, &strings(&["x"]))
                .expect("gone")
                .is_none()
        );
        std::fs::write(&inside, "plain notes\n").expect("write");
        let err = retag_document(&lib, &inside, &strings(&["x"])).expect_err("not ours");
        assert!(matches!(err, TagsError::NotADocument(_)), "{err}");
    }

    /// A done job of `store` whose document is `path`, holding [`DOC`].
    fn done_with_document(store: &crate::engine::sqlite::Store, url: &str, path: &Path) -> i64 {
        use crate::engine::policy::Policy;
        use crate::engine::queue::{NewJob, Success};
        std::fs::create_dir_all(path.parent().expect("folder")).expect("dirs");
        std::fs::write(path, DOC).expect("write");
        let new = NewJob {
            url: url.into(),
            url_key: url.into(),
            host: "a.example".into(),
            reference: None,
        };
        store.enqueue(None, &[new], 5, 0).expect("enqueue");
        let c = store
            .claim("w", 1, std::time::Duration::from_secs(60), 8)
            .expect("claim")
            .expect("job");
        let success = Success {
            http_status: 200,
            final_url: url.into(),
            document: Some(path.to_string_lossy().into_owned()),
            ..Success::default()
        };
        store
            .complete(&c, &success, &Policy::default(), 2)
            .expect("complete")
            .expect("done");
        c.job_id
    }

    /// A link queued again with tags its job lacks (a bookmark export imported after its
    /// folders changed) adds them to the job and its document; tags it has, in any case, add
    /// nothing; a job being fetched is refused, as by hand.
    #[test]
    fn tags_a_duplicate_brings_are_added_to_its_job_and_its_document() {
        use crate::engine::intake::{Found, Intake};
        use crate::engine::queue::Reference;
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("library");
        let lib = Library::new(&root);
        let store = crate::engine::sqlite::Store::open(&dir.path().join("g.db")).expect("store");
        let doc = root.join("a.example/a-1-01234567.md");
        let id = done_with_document(&store, "https://a.example/1", &doc);
        set_tags(&store, &lib, id, &strings(&["Rivers"])).expect("set");
        let bookmark = |url: &str, tags: &[&str]| Found::Url {
            input: url.into(),
            url: url.into(),
            key: url.into(),
            host: "a.example".into(),
            reference: Some(Box::new(Reference {
                tags: strings(tags),
                ..Reference::default()
            })),
        };
        let mut intake =
            Intake::new(&store, "again".into(), "file", 5, 10, None).with_library(&lib);
        intake
            .enqueue(&[bookmark(
                "https://a.example/1",
                &["rivers", "Thesis/Chapter 2"],
            )])
            .expect("enqueue");
        let brought = intake.take_brought();
        assert_eq!(brought.len(), 1, "{brought:?}");
        assert_eq!((brought[0].id, brought[0].refused.as_deref()), (id, None));
        assert_eq!(brought[0].tags, ["Thesis/Chapter 2"]);
        assert_eq!(
            store.job_tags(id).expect("tags"),
            ["Rivers", "Thesis/Chapter 2"]
        );
        let text = std::fs::read_to_string(&doc).expect("read");
        assert!(
            text.contains("tags: [\"Rivers\",\"Thesis/Chapter 2\"]"),
            "{text}"
        );
        // Nothing new: nothing written, nothing said.
        intake
            .enqueue(&[bookmark("https://a.example/1", &["THESIS/chapter 2"])])
            .expect("enqueue");
        assert!(intake.take_brought().is_empty());
        // Without a library, as before: the duplicate's tags are left.
        let mut plain = Intake::new(&store, "plain".into(), "file", 5, 11, None);
        plain
            .enqueue(&[bookmark("https://a.example/1", &["other"])])
            .expect("enqueue");
        assert_eq!(
            store.job_tags(id).expect("tags"),
            ["Rivers", "Thesis/Chapter 2"]
        );
        // A job being fetched keeps its tags, and the intake says why.
        intake
            .enqueue(&[bookmark("https://a.example/2", &[])])
            .expect("enqueue");
        let running = store
            .claim("w", 12, std::time::Duration::from_secs(60), 8)
            .expect("claim")
            .expect("job");
        intake
            .enqueue(&[bookmark("https://a.example/2", &["late"])])
            .expect("enqueue");
        let brought = intake.take_brought();
        assert_eq!(brought.len(), 1, "{brought:?}");
        assert!(
            brought[0]
                .refused
                .as_deref()
                .is_some_and(|r| r.contains("being fetched")),
            "{brought:?}"
        );
        assert!(store.job_tags(running.job_id).expect("tags").is_empty());
    }

    /// `gleaner add DOI`, fetched, then the `.bib` citing it as `Mueller:2020`: the file's key
    /// is the job's and its document's, and the export's (it was dropped as a duplicate's).
    #[test]
    fn a_key_a_duplicate_brings_is_kept_and_exported() {
        use crate::engine::export::{Format, Selection, export};
        use crate::engine::intake::{Found, Intake};
        use crate::engine::queue::Reference;
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("library");
        let lib = Library::new(&root);
        let store = crate::engine::sqlite::Store::open(&dir.path().join("g.db")).expect("store");
        let doc = root.join("a.example/a-1-01234567.md");
        let id = done_with_document(&store, "https://a.example/1", &doc);
        let entry = |key: &str| Found::Url {
            input: "https://a.example/1".into(),
            url: "https://a.example/1".into(),
            key: "https://a.example/1".into(),
            host: "a.example".into(),
            reference: Some(Box::new(Reference {
                citation_key: Some(key.into()),
                ..Reference::default()
            })),
        };
        let mut intake = Intake::new(&store, "bib".into(), "file", 5, 10, None).with_library(&lib);
        intake.enqueue(&[entry("Mueller:2020")]).expect("enqueue");
        let text = std::fs::read_to_string(&doc).expect("read");
        assert!(
            text.starts_with("---\nurl: \"https://a.example/\"\ntitle: \"A\"\ncitation_key: \"Mueller:2020\"\ntags: [\"old\"]\n"),
            "{text}"
        );
        let r = store
            .job(id)
            .expect("job")
            .expect("there")
            .reference
            .expect("ref");
        assert_eq!(r.citation_key.as_deref(), Some("Mueller:2020"));
        let mut out = Vec::new();
        export(&store, Format::Bibtex, &Selection::All, &mut out).expect("export");
        let out = String::from_utf8(out).expect("utf-8");
        assert!(out.contains("{Mueller:2020,"), "{out}");
        // Given out now, it is the document's for good: another file's key changes nothing.
        intake.enqueue(&[entry("Other:2021")]).expect("enqueue");
        assert!(
            !std::fs::read_to_string(&doc)
                .expect("read")
                .contains("Other")
        );
    }

    #[test]
    fn set_by_hand_changes_the_file_and_the_queue_or_neither() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("library");
        let lib = Library::new(&root);
        let db = dir.path().join("gleaner.db");
        let store = crate::engine::sqlite::Store::open(&db).expect("store");
        let doc = root.join("a.example/a-1-01234567.md");
        let id = done_with_document(&store, "https://a.example/1", &doc);
        let tags_line = || {
            std::fs::read_to_string(&doc)
                .expect("read")
                .lines()
                .find(|l| l.starts_with("tags: "))
                .map(str::to_string)
        };

        let kept = set_tags(&store, &lib, id, &strings(&[" x ", "X", "two  words"])).expect("set");
        assert_eq!(kept, ["x", "two words"]);
        assert_eq!(store.job_tags(id).expect("tags"), kept);
        assert_eq!(tags_line().as_deref(), Some("tags: [\"x\",\"two words\"]"));

        // The queue refuses the change: the file is put back as it was.
        let raw = rusqlite::Connection::open(&db).expect("open");
        raw.execute_batch(
            "CREATE TRIGGER refuse BEFORE INSERT ON job_tags BEGIN SELECT RAISE(ABORT, 'refused'); END;",
        )
        .expect("trigger");
        let err = set_tags(&store, &lib, id, &strings(&["y"])).expect_err("refused");
        assert!(matches!(err, TagsError::Queue(_)), "{err}");
        assert_eq!(tags_line().as_deref(), Some("tags: [\"x\",\"two words\"]"));
        assert_eq!(store.job_tags(id).expect("tags"), ["x", "two words"]);
        raw.execute_batch("DROP TRIGGER refuse;").expect("drop");

        // A document outside the library is refused before anything changes.
        let outside = dir.path().join("elsewhere/a-2-01234567.md");
        let other = done_with_document(&store, "https://a.example/2", &outside);
        let err = set_tags(&store, &lib, other, &strings(&["y"])).expect_err("outside");
        assert!(matches!(err, TagsError::Outside { .. }), "{err}");
        assert!(store.job_tags(other).expect("tags").is_empty());
        assert_eq!(std::fs::read_to_string(&outside).expect("read"), DOC);

        // A job being fetched, and one that is not there.
        let new = crate::engine::queue::NewJob {
            url: "https://a.example/3".into(),
            url_key: "https://a.example/3".into(),
            host: "a.example".into(),
            reference: None,
        };
        store.enqueue(None, &[new], 5, 3).expect("enqueue");
        let running = store
            .claim("w", 4, std::time::Duration::from_secs(60), 8)
            .expect("claim")
            .expect("job");
        let err = set_tags(&store, &lib, running.job_id, &strings(&["y"])).expect_err("running");
        assert!(matches!(err, TagsError::Running(_)), "{err}");
        let err = set_tags(&store, &lib, 99, &strings(&["y"])).expect_err("no job");
        assert_eq!(err.to_string(), "no job 99");

        // A document gone from the folder: only the queue changes.
        std::fs::remove_file(&doc).expect("remove");
        assert_eq!(
            set_tags(&store, &lib, id, &strings(&["z"])).expect("set"),
            ["z"]
        );
        assert_eq!(store.job_tags(id).expect("tags"), ["z"]);
    }
}
