//! A file given to intake (`add --file`, a drop on the window): a text holding links, a
//! reference file (BibTeX, RIS, CSL-JSON, MEDLINE) or a browser's bookmark export, told apart by its
//! start and its name, and read a piece at a time.

use std::io::{BufReader, Cursor, Read};

use super::bookmarks::firefox_json::{self, FirefoxBackupError};
use super::bookmarks::{self, Bookmarks, BookmarksError};
use super::entries::{self, EntrySource};
use super::web_page;
use super::{
    CHUNK, Found, HEAD_BYTES, Lines, ReferenceFileError, ReferenceFormat, looks_binary, utf16,
};

/// What a file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    Text,
    Bookmarks,
    /// Firefox's JSON backup of its bookmarks.
    FirefoxBackup,
    References(ReferenceFormat),
    /// A saved web page that is no bookmark export.
    WebPage,
}

impl FileKind {
    /// For messages: "a BibTeX file".
    pub fn describe(self) -> &'static str {
        match self {
            FileKind::Text => "a text file",
            FileKind::Bookmarks => "a bookmark export",
            FileKind::FirefoxBackup => "a Firefox bookmark backup",
            FileKind::References(ReferenceFormat::Bibtex) => "a BibTeX file",
            FileKind::References(ReferenceFormat::Ris) => "a RIS file",
            FileKind::References(ReferenceFormat::CslJson) => "a CSL-JSON file",
            FileKind::References(ReferenceFormat::Medline) => "a MEDLINE file",
            FileKind::WebPage => "a saved web page",
        }
    }
}

/// What a file's start (and its name, when the start does not say) makes it. A bookmark
/// export names itself in its first line; a reference file is told by its syntax.
pub fn kind_of(name: Option<&str>, head: &[u8]) -> FileKind {
    let text = String::from_utf8_lossy(head);
    if bookmarks::is_bookmark_export(&text) {
        return FileKind::Bookmarks;
    }
    // Before reference files: a backup is a JSON object, which would be taken for CSL-JSON.
    if firefox_json::is_firefox_backup(&text) {
        return FileKind::FirefoxBackup;
    }
    match super::detect(name, head) {
        Some(format) => FileKind::References(format),
        None if web_page::is_web_page(name, &text) => FileKind::WebPage,
        None => FileKind::Text,
    }
}

/// What pasted text (the window's box, one `gleaner add` argument) holds, told by its start as
/// a file's is: a BibTeX entry copied from Google Scholar is read as BibTeX, not scanned as
/// lines of text. It is a reference file only if it reads cleanly as one (every item read,
/// no link outside its entries): a checklist `[ ] https://…` is not CSL-JSON, and a BibTeX
/// entry followed by loose links keeps its links, both scanned as text.
pub fn pasted_kind(text: &str) -> FileKind {
    match kind_of(None, &text.as_bytes()[..text.len().min(HEAD_BYTES)]) {
        FileKind::References(format) if !reads_cleanly(format, text) => FileKind::Text,
        kind => kind,
    }
}

/// Whether `text` reads as a reference file of `format` with nothing lost: at least one entry,
/// none rejected, no error, and no link on a line outside its entries.
fn reads_cleanly(format: ReferenceFormat, text: &str) -> bool {
    let (mut entries, mut rejected) = (0, false);
    let read = super::read_reference_file(format, text.as_bytes(), |item| match item {
        super::Item::Entry(_) => entries += 1,
        super::Item::Rejected { .. } => rejected = true,
        super::Item::Skipped { .. } => {}
    });
    read.is_ok() && entries > 0 && !rejected && !link_outside_entries(format, text)
}

/// Whether a line outside the entries of a reference file holds a link (a reader skips such
/// lines between entries without a word).
fn link_outside_entries(format: ReferenceFormat, text: &str) -> bool {
    use super::reference_file::{bibtex_entry_start, ris_tag};
    let mut depth = 0i64;
    let mut pair = ('{', '}');
    let mut inside = false;
    for line in text.lines() {
        let trimmed = line.trim();
        let outside = match format {
            // The JSON reader takes the whole text or fails.
            ReferenceFormat::CslJson => false,
            ReferenceFormat::Bibtex => {
                let mut from = 0;
                if depth <= 0 {
                    depth = 0;
                    match bibtex_entry_start(trimmed) {
                        Some(at) => {
                            pair = if trimmed[at..].starts_with('(') {
                                ('(', ')')
                            } else {
                                ('{', '}')
                            };
                            from = at;
                        }
                        None => {
                            if trimmed.contains("://") {
                                return true;
                            }
                            continue;
                        }
                    }
                }
                for c in trimmed[from..].chars() {
                    if c == pair.0 {
                        depth += 1;
                    } else if c == pair.1 {
                        depth -= 1;
                    }
                }
                false
            }
            ReferenceFormat::Ris => {
                let tag = ris_tag(trimmed).map(|(tag, _)| tag);
                if tag == Some("TY") {
                    inside = true;
                }
                let outside = !inside;
                if tag == Some("ER") {
                    inside = false;
                }
                outside
            }
            // A record's lines are tags or their indented continuations.
            ReferenceFormat::Medline => {
                !line.starts_with(char::is_whitespace)
                    && super::medline::medline_tag(line).is_none()
            }
        };
        if outside && trimmed.contains("://") {
            return true;
        }
    }
    false
}

/// Why a file could not be read to its end. What was read before it was handed over.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error(transparent)]
    Read(#[from] std::io::Error),
    /// What a caller says about it depends on where it came from (a dropped file, `--file`).
    #[error("it is not text (it holds binary data)")]
    Binary,
    #[error(transparent)]
    References(#[from] ReferenceFileError),
    #[error(transparent)]
    Bookmarks(#[from] BookmarksError),
    #[error(transparent)]
    FirefoxBackup(#[from] FirefoxBackupError),
}

/// How reading stopped early: the file, or the one taking the findings.
#[derive(Debug)]
pub enum Stopped<E> {
    File(FileError),
    Taker(E),
}

impl<E> From<FileError> for Stopped<E> {
    fn from(e: FileError) -> Self {
        Stopped::File(e)
    }
}

/// Read the findings of a file and hand them to `take` in file order, at most about [`CHUNK`]
/// at a time, after the findings already in `found` (a command line's arguments). `take`
/// empties what it is given. A text file is scanned line by line, a reference file entry by
/// entry, a bookmark export bookmark by bookmark. Its first 64 KiB decide whether it is text
/// and what kind; a file in UTF-16 with its byte order mark is read as the same text in UTF-8.
pub fn read_file<R: Read, E>(
    name: Option<&str>,
    mut reader: R,
    found: Vec<Found>,
    take: impl FnMut(&mut Vec<Found>) -> Result<(), E>,
) -> Result<FileKind, Stopped<E>> {
    let head = head_of(&mut reader)?;
    match utf16::by_its_mark(&head) {
        Some(encoding) => {
            let mut decoded = utf16::Utf8Of::new(encoding, Cursor::new(head).chain(reader));
            let head = head_of(&mut decoded)?;
            read_after(name, head, decoded, found, take)
        }
        None => read_after(name, head, reader, found, take),
    }
}

/// The first [`HEAD_BYTES`] of `reader`.
fn head_of(reader: &mut impl Read) -> Result<Vec<u8>, FileError> {
    let mut head = Vec::with_capacity(HEAD_BYTES);
    reader.take(HEAD_BYTES as u64).read_to_end(&mut head)?;
    Ok(head)
}

/// [`read_file`] once the file is UTF-8 (or bytes), its `head` already read from `reader`.
fn read_after<R: Read, E>(
    name: Option<&str>,
    head: Vec<u8>,
    reader: R,
    mut found: Vec<Found>,
    mut take: impl FnMut(&mut Vec<Found>) -> Result<(), E>,
) -> Result<FileKind, Stopped<E>> {
    if looks_binary(&String::from_utf8_lossy(&head)) {
        return Err(FileError::Binary.into());
    }
    let kind = kind_of(name, &head);
    let input = BufReader::with_capacity(HEAD_BYTES, Cursor::new(head).chain(reader));
    let mut give = |found: &mut Vec<Found>, last: bool| -> Result<(), E> {
        if found.len() >= CHUNK || (last && !found.is_empty()) {
            take(found)?;
            found.clear();
        }
        Ok(())
    };
    match kind {
        FileKind::Text => {
            let mut lines = Lines::new(input);
            while let Some(line) = lines.next_line().map_err(FileError::Read)? {
                super::scan_line(&line, &mut found);
                give(&mut found, false).map_err(Stopped::Taker)?;
            }
        }
        FileKind::Bookmarks => {
            for item in Bookmarks::new(input) {
                let item = item.map_err(FileError::Bookmarks)?;
                found.push(entries::found(item, EntrySource::Bookmarks));
                give(&mut found, false).map_err(Stopped::Taker)?;
            }
        }
        FileKind::FirefoxBackup => {
            called_back(&mut found, &mut give, EntrySource::Bookmarks, |on_item| {
                firefox_json::read_firefox_backup(input, on_item).map_err(FileError::from)
            })?;
        }
        FileKind::WebPage => {
            found.extend(web_page::read_web_page(input).map_err(FileError::Read)?);
        }
        FileKind::References(format) => {
            called_back(&mut found, &mut give, EntrySource::References, |on_item| {
                super::read_reference_file(format, input, on_item).map_err(FileError::from)
            })?;
        }
    }
    give(&mut found, true).map_err(Stopped::Taker)?;
    Ok(kind)
}

/// Run a reader that calls back with each item. A taker's error stops the rest quietly and
/// is handed back once the reader returns; items before a damaged end still count: they are
/// handed over, then the damage is told.
fn called_back<E>(
    found: &mut Vec<Found>,
    give: &mut impl FnMut(&mut Vec<Found>, bool) -> Result<(), E>,
    source: EntrySource,
    read: impl FnOnce(&mut dyn FnMut(super::Item)) -> Result<(), FileError>,
) -> Result<(), Stopped<E>> {
    let mut failed = None;
    let read = read(&mut |item| {
        if failed.is_some() {
            return;
        }
        found.push(entries::found(item, source));
        if let Err(e) = give(found, false) {
            failed = Some(e);
        }
    });
    if let Some(e) = failed {
        return Err(Stopped::Taker(e));
    }
    if let Err(e) = read {
        give(found, true).map_err(Stopped::Taker)?;
        return Err(e.into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A paste is a reference file only if it reads cleanly as one: a Markdown checklist of
    /// links was taken for CSL-JSON (queued nothing), and a BibTeX entry followed by loose
    /// links lost the links.
    #[test]
    fn a_paste_that_does_not_read_cleanly_as_references_is_text() {
        let checklist = "[ ] https://a.example/1\n[ ] https://b.example/2";
        assert_eq!(pasted_kind(checklist), FileKind::Text);
        assert_eq!(super::super::scan_text(checklist).len(), 2);
        let args = super::super::scan_args(&[checklist]);
        assert!(
            args.iter().all(|f| matches!(f, Found::Url { .. })) && args.len() == 2,
            "{args:?}"
        );
        let entry = "@article{k,\n  title = {T},\n  url = {https://c.example/p}\n}\n";
        assert_eq!(
            pasted_kind(entry),
            FileKind::References(ReferenceFormat::Bibtex)
        );
        let with_links = format!("{entry}https://a.example/1\nhttps://b.example/2\n");
        assert_eq!(pasted_kind(&with_links), FileKind::Text);
        let ris = "TY  - JOUR\nUR  - https://c.example/p\nER  - \n";
        assert_eq!(pasted_kind(ris), FileKind::References(ReferenceFormat::Ris));
        let ris_with_link = format!("{ris}https://a.example/1\n");
        assert_eq!(pasted_kind(&ris_with_link), FileKind::Text);
        let csl = r#"[{"id": "k", "URL": "https://c.example/p"}]"#;
        assert_eq!(
            pasted_kind(csl),
            FileKind::References(ReferenceFormat::CslJson)
        );
    }

    fn read(name: &str, text: &str) -> (FileKind, Vec<Found>) {
        let mut all = Vec::new();
        let kind = read_file(Some(name), text.as_bytes(), Vec::new(), |chunk| {
            all.append(chunk);
            Ok::<(), ()>(())
        })
        .expect("read");
        (kind, all)
    }

    fn urls(found: &[Found]) -> Vec<&str> {
        found
            .iter()
            .filter_map(|f| match f {
                Found::Url { url, .. } => Some(url.as_str()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn each_kind_of_file_is_read_by_its_reader() {
        let bib = "@article{kucsko2013, title={Nanometre-scale thermometry}, doi={10.1038/nature12373}}\n\
                   @misc{empty2020, title={Nothing to fetch}}\n";
        let (kind, found) = read("refs.bib", bib);
        assert_eq!(kind, FileKind::References(ReferenceFormat::Bibtex));
        assert_eq!(urls(&found), ["doi:10.1038/nature12373"]);
        assert!(
            matches!(&found[1], Found::Rejected { input, .. } if input == "empty2020"),
            "{found:?}"
        );

        let marks = "<!DOCTYPE NETSCAPE-Bookmark-file-1>\n<DL><p>\n\
                     <DT><H3>Thesis</H3>\n<DL><p>\n\
                     <DT><A HREF=\"https://example.com/a?x=1&amp;y=2\" ICON=\"data:image/png;base64,AAAA\">A</A>\n\
                     <DT><A HREF=\"javascript:void(0)\">Bookmarklet</A>\n\
                     </DL><p>\n</DL><p>\n";
        let (kind, found) = read("bookmarks.html", marks);
        assert_eq!(kind, FileKind::Bookmarks);
        assert_eq!(urls(&found), ["https://example.com/a?x=1&y=2"]);
        let Found::Url { reference, .. } = &found[0] else {
            panic!("{found:?}")
        };
        assert_eq!(reference.as_ref().expect("reference").tags, ["Thesis"]);
        assert!(matches!(&found[1], Found::Skipped { .. }), "{found:?}");

        // A Firefox backup is a JSON object: not taken for (and refused as) CSL-JSON.
        let backup = "{\"guid\":\"root________\",\"root\":\"placesRoot\",\"children\":[\
                      {\"root\":\"toolbarFolder\",\"children\":[{\"type\":\"text/x-moz-place\",\
                      \"title\":\"A\",\"uri\":\"https://example.com/a\"}]}]}";
        let (kind, found) = read("bookmarks-2026-12-03.json", backup);
        assert_eq!(kind, FileKind::FirefoxBackup);
        assert_eq!(urls(&found), ["https://example.com/a"]);
        let Found::Url { reference, .. } = &found[0] else {
            panic!("{found:?}")
        };
        assert_eq!(
            reference.as_ref().expect("reference").tags,
            ["Bookmarks Toolbar"]
        );

        let (kind, found) = read(
            "links.txt",
            "see https://example.org/x and doi:10.1000/xyz\n",
        );
        assert_eq!(kind, FileKind::Text);
        assert_eq!(urls(&found), ["https://example.org/x", "doi:10.1000/xyz"]);
    }

    #[test]
    fn a_damaged_reference_file_hands_over_what_came_before_then_says_so() {
        let json = r#"[{"id":"a","DOI":"10.1038/nature12373"}, {"id":"b", "DOI": "#;
        let mut all = Vec::new();
        let r = read_file(Some("refs.json"), json.as_bytes(), Vec::new(), |chunk| {
            all.append(chunk);
            Ok::<(), ()>(())
        });
        assert!(
            matches!(r, Err(Stopped::File(FileError::References(_)))),
            "{r:?}"
        );
        assert_eq!(urls(&all), ["doi:10.1038/nature12373"]);
    }

    #[test]
    fn binary_data_is_refused_whole() {
        let r = read_file(Some("x.bib"), &b"\0\x01\x02PNG"[..], Vec::new(), |_| {
            Ok::<(), ()>(())
        });
        assert!(matches!(r, Err(Stopped::File(FileError::Binary))));
    }

    /// Windows Notepad's "Unicode": a list of links and a BibTeX file, each in UTF-16 with its
    /// byte order mark, read as the same files in UTF-8 would be.
    #[test]
    fn utf16_files_are_read_as_text() {
        let utf16 = |text: &str, le: bool| -> Vec<u8> {
            let mut bytes = if le {
                vec![0xFF, 0xFE]
            } else {
                vec![0xFE, 0xFF]
            };
            for unit in text.encode_utf16() {
                bytes.extend(if le {
                    unit.to_le_bytes()
                } else {
                    unit.to_be_bytes()
                });
            }
            bytes
        };
        let urls = |name: &str, bytes: &[u8]| {
            let mut urls = Vec::new();
            let kind = read_file(Some(name), bytes, Vec::new(), |chunk| {
                urls.extend(chunk.drain(..).map(|f| match f {
                    Found::Url { url, .. } => url,
                    other => format!("{other:?}"),
                }));
                Ok::<(), ()>(())
            })
            .expect("read as text");
            (kind, urls)
        };
        let links = "https://example.org/café\r\nnot a link\r\nhttps://example.com/a\r\n";
        for le in [true, false] {
            let (kind, found) = urls("links.txt", &utf16(links, le));
            assert_eq!(kind, FileKind::Text);
            assert_eq!(
                found,
                ["https://example.org/caf%C3%A9", "https://example.com/a"]
            );
        }
        let bib = "@article{k, title={Ünïcode}, url={https://example.org/paper}}\n";
        let (kind, found) = urls("refs.bib", &utf16(bib, true));
        assert_eq!(kind, FileKind::References(ReferenceFormat::Bibtex));
        assert_eq!(found.len(), 1, "{found:?}");
        // Without its mark, UTF-16's NULs still make it binary.
        let unmarked = &utf16(links, true)[2..];
        let r = read_file(
            Some("links.txt"),
            unmarked,
            Vec::new(),
            |_| Ok::<(), ()>(()),
        );
        assert!(matches!(r, Err(Stopped::File(FileError::Binary))));
    }

    #[test]
    fn findings_go_over_in_chunks_and_a_takers_error_stops_the_reading() {
        let bib: String = (0..CHUNK + 10)
            .map(|i| format!("@misc{{k{i}, url={{https://example.com/{i}}}}}\n"))
            .collect();
        let mut sizes = Vec::new();
        read_file(Some("big.bib"), bib.as_bytes(), Vec::new(), |chunk| {
            sizes.push(chunk.len());
            chunk.clear();
            Ok::<(), ()>(())
        })
        .expect("read");
        assert_eq!(sizes, [CHUNK, 10]);
        let mut calls = 0;
        let r = read_file(Some("big.bib"), bib.as_bytes(), Vec::new(), |_| {
            calls += 1;
            Err("the queue is gone")
        });
        assert!(matches!(r, Err(Stopped::Taker("the queue is gone"))));
        assert_eq!(calls, 1);
    }
}
