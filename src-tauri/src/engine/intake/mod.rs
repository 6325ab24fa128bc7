//! Finding web addresses in whatever the researcher pasted, dropped or typed, and saying per
//! line why something was not taken.
//!
//! Prose lines without anything URL-like are text around the links, not input, and are passed
//! over. Anything that looks like an attempt at an address (it has `scheme:`/`://` or starts with
//! `www.`), or a line that is one lone word, is either queued or rejected with a reason.

use std::io::{BufRead, BufReader, Cursor, Read};

use serde::Serialize;
use url::Url;

use super::clock::Millis;
use super::queue::{Enqueued, NewJob, Queue, QueueError, Reference};

pub mod bibtex;
pub mod bookmarks;
pub mod csl_json;
pub mod entries;
mod entry;
pub mod files;
pub mod identifiers;
mod json_escapes;
pub mod line_reader;
pub mod medline;
pub mod reference_file;
pub mod ris;
mod utf16;
pub mod web_page;

pub use entry::{Entry, Item};
pub use identifiers::Identifier;
pub use reference_file::{ReferenceFileError, ReferenceFormat, detect, read_reference_file};

/// Why a file or standard input gave no links to scan.
#[derive(Debug, thiserror::Error)]
pub enum IntakeError {
    /// The caller says what could not be read.
    #[error(transparent)]
    Read(#[from] std::io::Error),
    /// What a caller says about it depends on where it came from (a dropped file, `--file`).
    #[error("it is not text (it holds binary data)")]
    Binary,
    #[error(transparent)]
    Store(#[from] QueueError),
}

/// One finding in the input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Found {
    Url {
        input: String,
        url: String,
        key: String,
        host: String,
        /// What a reference file or bookmark said about it.
        #[serde(skip_serializing_if = "Option::is_none")]
        reference: Option<Box<Reference>>,
    },
    Rejected {
        input: String,
        reason: String,
    },
    /// Left out on purpose (a bookmarklet, a smart folder): said, but not an error.
    Skipped {
        input: String,
        reason: String,
    },
}

impl Found {
    pub fn as_new_job(&self) -> Option<NewJob> {
        match self {
            Found::Url {
                url,
                key,
                host,
                reference,
                ..
            } => Some(NewJob {
                url: url.clone(),
                url_key: key.clone(),
                host: host.clone(),
                reference: reference.clone(),
            }),
            Found::Rejected { .. } | Found::Skipped { .. } => None,
        }
    }
}

pub(crate) const MAX_URL_LEN: usize = 8192;

/// Query parameters that only track the click; dropped from the duplicate key.
const TRACKING_PARAMS: &[&str] = &[
    "fbclid", "gclid", "dclid", "gbraid", "wbraid", "msclkid", "yclid", "mc_cid", "mc_eid",
    "igshid", "_ga", "_gl", "ref_src", "spm",
];

/// Scan free text (a paste, a dropped file, stdin).
pub fn scan_text(text: &str) -> Vec<Found> {
    let mut out = Vec::new();
    for line in text.lines() {
        scan_line(line, &mut out);
    }
    out
}

/// Scan one line of free text, adding what it holds to `out`: what streaming intake does for
/// every line of a file, so a file is never held whole.
pub fn scan_line(line: &str, out: &mut Vec<Found>) {
    let before = out.len();
    let mut ids = one_paper_once(identifiers::in_text(line))
        .into_iter()
        .peekable();
    for token in candidates(line) {
        // In line order: identifiers written before this link first.
        let at = token.as_ptr() as usize - line.as_ptr() as usize;
        while let Some(span) = ids.next_if(|s| s.start < at) {
            out.push(identifier_found(&line[span.start..span.end], &span.id));
        }
        out.push(vet(token));
    }
    for span in ids {
        out.push(identifier_found(&line[span.start..span.end], &span.id));
    }
    for (start, end, what) in identifiers::malformed(line) {
        out.push(Found::Rejected {
            input: shown(&line[start..end]),
            reason: format!("not {what}"),
        });
    }
    let trimmed = line.trim();
    if out.len() == before && is_lone_word(trimmed) {
        out.push(Found::Rejected {
            input: shown(trimmed),
            reason: no_address_reason(trimmed),
        });
    }
}

/// A line citing one paper by its DOI, PubMed id and PMC id (PubMed's own citation format)
/// names it once: by its DOI, else its PubMed id. A line of several DOIs or PubMed ids is a
/// list, and keeps every one.
fn one_paper_once(mut spans: Vec<identifiers::Span>) -> Vec<identifiers::Span> {
    let count = |spans: &[identifiers::Span], kind: fn(&Identifier) -> bool| {
        spans.iter().filter(|s| kind(&s.id)).count()
    };
    let is_doi = |id: &Identifier| matches!(id, Identifier::Doi(_));
    let is_pmid = |id: &Identifier| matches!(id, Identifier::Pmid(_));
    let is_pmcid = |id: &Identifier| matches!(id, Identifier::Pmcid(_));
    let (dois, pmids, pmcids) = (
        count(&spans, is_doi),
        count(&spans, is_pmid),
        count(&spans, is_pmcid),
    );
    if pmcids == 1 && (dois == 1 || pmids == 1) {
        spans.retain(|s| !is_pmcid(&s.id));
    }
    if pmids == 1 && dois == 1 {
        spans.retain(|s| !is_pmid(&s.id));
    }
    spans
}

/// How much of the start of a file or standard input decides whether it is text.
const HEAD_BYTES: usize = 64 * 1024;

/// The longest line scanned as one. A longer one (a minified page, a file without line
/// breaks) is cut at its last whitespace before this, or else here: memory stays bounded
/// whatever the input, and no URL is this long ([`MAX_URL_LEN`]).
pub const MAX_LINE_BYTES: usize = 1024 * 1024;

/// The lines of a file or standard input, read a bounded piece at a time: a 100 MB file is
/// never in memory at once. A line that is not UTF-8 is read as Windows-1252.
pub struct Lines<R> {
    reader: R,
    /// What a cut long line left over, the start of the next one.
    carry: Vec<u8>,
    /// The last line ended at a `\r` that ended the buffer: a `\n` next is part of its break.
    after_cr: bool,
}

/// What [`text_lines`] reads through: the start it looked at, then the rest.
pub type InputReader<R> = BufReader<std::io::Chain<Cursor<Vec<u8>>, R>>;

/// Start reading text from `reader`. Its first 64 KiB decide whether it is text (see
/// [`looks_binary`]): binary data is refused whole, before any of it is scanned, rather than
/// echoed back as thousands of rejected lines. A NUL further on is read as part of a line
/// (and escaped when it is echoed): by then links may already be queued.
pub fn text_lines<R: Read>(mut reader: R) -> Result<Lines<InputReader<R>>, IntakeError> {
    let mut head = Vec::with_capacity(HEAD_BYTES);
    (&mut reader)
        .take(HEAD_BYTES as u64)
        .read_to_end(&mut head)?;
    if looks_binary(&String::from_utf8_lossy(&head)) {
        return Err(IntakeError::Binary);
    }
    Ok(Lines {
        reader: BufReader::with_capacity(HEAD_BYTES, Cursor::new(head).chain(reader)),
        carry: Vec::new(),
        after_cr: false,
    })
}

impl<R: BufRead> Lines<R> {
    /// Lines of `reader` as it is, without looking at its start (the reference file readers).
    pub fn new(reader: R) -> Self {
        Self {
            reader,
            carry: Vec::new(),
            after_cr: false,
        }
    }

    /// The next line without its line break, or `None` at the end. A line ends at `\n`,
    /// `\r\n`, or a `\r` alone (classic Mac OS, some EndNote exports), which lost every record
    /// of a file as one long line.
    pub fn next_line(&mut self) -> std::io::Result<Option<String>> {
        let mut line = std::mem::take(&mut self.carry);
        loop {
            let avail = match self.reader.fill_buf() {
                Ok(bytes) => bytes,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if std::mem::take(&mut self.after_cr) && avail.first() == Some(&b'\n') {
                self.reader.consume(1);
                continue;
            }
            if avail.is_empty() {
                return Ok((!line.is_empty()).then(|| decode_line(line)));
            }
            let room = &avail[..avail.len().min(MAX_LINE_BYTES - line.len())];
            if let Some(end) = room.iter().position(|&b| b == b'\n' || b == b'\r') {
                line.extend_from_slice(&room[..end]);
                let taken = match (room[end], avail.get(end + 1)) {
                    (b'\r', Some(b'\n')) => end + 2,
                    (b'\r', None) => {
                        self.after_cr = true;
                        end + 1
                    }
                    _ => end + 1,
                };
                self.reader.consume(taken);
                return Ok(Some(decode_line(line)));
            }
            let taken = room.len();
            line.extend_from_slice(room);
            self.reader.consume(taken);
            if line.len() >= MAX_LINE_BYTES {
                // At the last whitespace of the line's second half, else at a character's
                // first byte: a cut there keeps every character whole.
                let (cut, next) = match line.iter().rposition(u8::is_ascii_whitespace) {
                    Some(ws) if ws > MAX_LINE_BYTES / 2 => (ws, ws + 1),
                    _ => {
                        let mut at = line.len() - 1;
                        while at > line.len() - 4 && line[at] & 0xC0 == 0x80 {
                            at -= 1;
                        }
                        let at = if line[at] & 0xC0 == 0x80 {
                            line.len()
                        } else {
                            at
                        };
                        (at, at)
                    }
                };
                self.carry = line.split_off(next);
                line.truncate(cut);
                return Ok(Some(decode_line(line)));
            }
        }
    }
}

fn decode_line(mut line: Vec<u8>) -> String {
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    // Older tools wrote Windows-1252 or Latin-1 (JabRef's `% Encoding: ISO8859_1`, EndNote's
    // Windows exports); a line in them is almost never valid UTF-8.
    String::from_utf8(line).unwrap_or_else(|e| {
        encoding_rs::WINDOWS_1252
            .decode_without_bom_handling(e.as_bytes())
            .0
            .into_owned()
    })
}

/// Findings are queued this many at a time: a huge file's jobs go in a transaction per
/// chunk, so neither its findings nor a transaction grow with the file.
pub const CHUNK: usize = 10_000;

/// One intake (a paste, a drop, `gleaner add`) queued as one batch, a chunk at a time. The
/// first chunk with a new link makes the batch (so an intake of duplicates makes none); later
/// chunks join it. An intake that fits one chunk is one transaction, as before.
pub struct Intake<'a> {
    store: &'a dyn Queue,
    name: String,
    source: &'a str,
    max_retries: u32,
    now: Millis,
    batch: Option<i64>,
    library: Option<&'a crate::engine::library::Library>,
    brought: Vec<BroughtTags>,
}

/// Tags a duplicate brought that its job lacked: added, or why not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BroughtTags {
    pub id: i64,
    pub tags: Vec<String>,
    /// Why they were not added (the job is being fetched, its document cannot be written).
    pub refused: Option<String>,
}

impl<'a> Intake<'a> {
    /// `batch`: a batch this intake goes on with (the window sends a big file in pieces).
    pub fn new(
        store: &'a dyn Queue,
        name: String,
        source: &'a str,
        max_retries: u32,
        now: Millis,
        batch: Option<i64>,
    ) -> Self {
        Self {
            store,
            name,
            source,
            max_retries,
            now,
            batch,
            library: None,
            brought: Vec::new(),
        }
    }

    /// Tags that a duplicate link brings (its bookmark folder, its entry's keywords) and its
    /// job lacks are added to the job and its document in `library`. Without a library they
    /// are left, as before.
    pub fn with_library(mut self, library: &'a crate::engine::library::Library) -> Self {
        self.library = Some(library);
        self
    }

    /// What became of the tags duplicates brought since the last call.
    pub fn take_brought(&mut self) -> Vec<BroughtTags> {
        std::mem::take(&mut self.brought)
    }

    /// The batch the jobs went into, once one was made.
    pub fn batch(&self) -> Option<i64> {
        self.batch
    }

    /// Queue the links among `found`; each gets its result, in order.
    pub fn enqueue(&mut self, found: &[Found]) -> Result<Vec<Enqueued>, QueueError> {
        let jobs: Vec<NewJob> = found.iter().filter_map(Found::as_new_job).collect();
        if jobs.is_empty() {
            return Ok(Vec::new());
        }
        let results = self.enqueue_jobs(&jobs)?;
        // The key a reference file gives a work queued before without one is the one exported.
        for (job, result) in jobs.iter().zip(&results) {
            if let (Enqueued::Duplicate { id, .. }, Some(key)) = (
                result,
                job.reference
                    .as_ref()
                    .and_then(|r| r.citation_key.as_deref()),
            ) {
                crate::engine::tags::adopt_citation_key(self.store, self.library, *id, key)?;
            }
        }
        if let Some(library) = self.library {
            for (job, result) in jobs.iter().zip(&results) {
                let (Enqueued::Duplicate { id, .. }, Some(reference)) = (result, &job.reference)
                else {
                    continue;
                };
                if reference.tags.is_empty() {
                    continue;
                }
                let outcome =
                    crate::engine::tags::add_brought(self.store, library, *id, &reference.tags);
                match outcome {
                    Ok(added) if added.is_empty() => {}
                    Ok(added) => self.brought.push(BroughtTags {
                        id: *id,
                        tags: added,
                        refused: None,
                    }),
                    // The queue itself failing stops the intake, as it would the next chunk.
                    Err(crate::engine::tags::TagsError::Queue(e)) => return Err(e),
                    Err(e) => self.brought.push(BroughtTags {
                        id: *id,
                        tags: reference.tags.clone(),
                        refused: Some(e.to_string()),
                    }),
                }
            }
        }
        Ok(results)
    }

    fn enqueue_jobs(&mut self, jobs: &[NewJob]) -> Result<Vec<Enqueued>, QueueError> {
        match self.batch {
            Some(id) => self
                .store
                .enqueue(Some(id), jobs, self.max_retries, self.now),
            None => {
                let (batch, results) = self.store.enqueue_batch(
                    &self.name,
                    self.source,
                    jobs,
                    self.max_retries,
                    self.now,
                )?;
                self.batch = batch;
                Ok(results)
            }
        }
    }
}

/// An argument that is a reference entry or bookmark export, read as its file would be; what
/// stops the reading is said of its first line.
fn read_pasted(arg: &str, out: &mut Vec<Found>) {
    let read = files::read_file(None, arg.as_bytes(), Vec::new(), |chunk| {
        out.append(chunk);
        Ok::<(), std::convert::Infallible>(())
    });
    if let Err(files::Stopped::File(e)) = read {
        out.push(Found::Rejected {
            input: shown(arg.trim().lines().next().unwrap_or_default()),
            reason: e.to_string(),
        });
    }
}

/// Scan command-line arguments: each argument must hold at least one address; one that is a
/// reference entry (BibTeX, RIS, CSL-JSON, MEDLINE) is read as one.
pub fn scan_args<S: AsRef<str>>(args: &[S]) -> Vec<Found> {
    let mut out = Vec::new();
    for arg in args {
        let arg = arg.as_ref();
        if files::pasted_kind(arg) != files::FileKind::Text {
            read_pasted(arg, &mut out);
            continue;
        }
        let mut found = scan_text(arg);
        if found.is_empty() {
            out.push(Found::Rejected {
                input: shown(arg.trim()),
                reason: no_address_reason(arg.trim()),
            });
            continue;
        }
        // One word that is one bad link is echoed as given, not as the part the scanner took
        // (`http://[::1` was "rejected http://").
        if let [Found::Rejected { input, .. }] = found.as_mut_slice()
            && !arg.trim().contains(char::is_whitespace)
        {
            *input = shown(arg.trim());
        }
        out.extend(found);
    }
    out
}

/// The host a person means by `input`, as jobs store it: a host name (`Example.COM`), a host
/// and port, or any link on the host (`https://example.com/a`). Lower-cased, international
/// names in their ASCII form. `Err` says why `input` names no host.
pub fn host_name(input: &str) -> Result<String, String> {
    let t = input.trim();
    // An IPv6 address without its brackets (`::1`, as a job's host column holds it).
    if let Ok(ip) = t.parse::<std::net::Ipv6Addr>() {
        return Ok(ip.to_string());
    }
    let url = if t.contains("://") {
        Url::parse(t)
    } else {
        Url::parse(&format!("http://{t}"))
    };
    match url.ok().as_ref().and_then(Url::host_str) {
        Some(host) if !host.is_empty() && !t.chars().any(char::is_whitespace) => Ok(host_key(host)),
        _ => Err(format!(
            "“{}” is not a host name; give one such as example.com, or a link on the host",
            shown(t)
        )),
    }
}

/// The most of a rejected input that is echoed back.
const SHOWN_CHARS: usize = 200;

/// A rejected input as it is echoed to the terminal or the window: control characters escaped
/// (see [`printable`]), and a long one cut, saying how long it was.
fn shown(input: &str) -> String {
    let total = input.chars().count();
    if total <= SHOWN_CHARS {
        return printable(input).into_owned();
    }
    let cut: String = input.chars().take(SHOWN_CHARS).collect();
    format!("{}… ({total} characters)", printable(&cut))
}

/// Text from outside (a line of input, a page's title, an error quoting a server) with its
/// control characters escaped (`\u{1b}`): an escape sequence printed raw would act on the
/// terminal that prints it (clear it, retitle it, or on some terminals write the clipboard).
/// Bidi controls ([`is_bidi_control`]) are escaped too: a right-to-left override in a title
/// reorders the rest of the line it is shown on, in a terminal as in the window's table.
pub fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    escaped(text, |c| c.is_control() || is_bidi_control(c))
}

/// Prose from outside (a document's text in a snippet, its title and authors in the reader)
/// escaped as [`printable`] escapes, but for the right-to-left and left-to-right marks: common
/// punctuation of right-to-left text, which showed as `\u{200f}` there. They give a character a
/// direction; unlike an override they reorder no run of text.
pub fn printable_prose(text: &str) -> std::borrow::Cow<'_, str> {
    escaped(text, |c| {
        c.is_control() || (is_bidi_control(c) && !matches!(c, '\u{200e}' | '\u{200f}' | '\u{061c}'))
    })
}

fn escaped(text: &str, odd: impl Fn(char) -> bool) -> std::borrow::Cow<'_, str> {
    if !text.contains(&odd) {
        return text.into();
    }
    text.chars()
        .map(|c| {
            if odd(c) {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect::<String>()
        .into()
}

/// The invisible characters that change the order in which text around them is shown:
/// embeddings and overrides (U+202A–U+202E), isolates (U+2066–U+2069), the left-to-right and
/// right-to-left marks (U+200E, U+200F) and the Arabic letter mark (U+061C). They are not
/// control characters to Unicode (they are "format" characters), so `char::is_control` misses
/// them.
pub fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{061c}')
}

/// Whether text decoded from a file or standard input is binary data rather than text: it
/// holds a NUL, or more than one character in ten of its start is not text (bytes that were
/// not UTF-8, control characters other than tab, line feed, carriage return and form feed).
pub fn looks_binary(text: &str) -> bool {
    if text.contains('\0') {
        return true;
    }
    let (mut chars, mut odd) = (0usize, 0usize);
    for c in text.chars().take(8192) {
        chars += 1;
        if c == char::REPLACEMENT_CHARACTER
            || (c.is_control() && !matches!(c, '\t' | '\n' | '\r' | '\x0c'))
        {
            odd += 1;
        }
    }
    odd * 10 > chars
}

fn no_address_reason(input: &str) -> String {
    if input.bytes().all(|b| b.is_ascii_digit()) {
        "no web address found (a number alone is not taken as a PubMed id: write PMID: and the number)"
            .into()
    } else if input.contains('.') && !input.contains(char::is_whitespace) {
        "no web address found (did you mean https://…? only http:// and https:// links are taken)"
            .into()
    } else {
        "no web address found".into()
    }
}

fn is_lone_word(line: &str) -> bool {
    // Markup such as a bookmarks file's `<DL><p>` surrounds links; it is not an attempt at one.
    let markup = line.starts_with('<') && line.ends_with('>');
    // Nor is a heading of a reference list ("References", "Bibliography:"): letters only.
    let heading = line.len() <= 40
        && line
            .strip_suffix(':')
            .unwrap_or(line)
            .chars()
            .all(char::is_alphabetic);
    !line.is_empty()
        && !heading
        && !line.contains(char::is_whitespace)
        && !line.starts_with('#')
        && !line.starts_with("//")
        && !markup
}

/// Characters that never appear unescaped inside a URL, so they delimit one in free text
/// (Markdown brackets, BibTeX braces, HTML attribute quotes).
fn is_delimiter(c: char) -> bool {
    // Not `'` (see [`tokens`]): it is legal in a path (`/wiki/Hilbert's_problems`). Prose's
    // own quotes, brackets and commas beyond ASCII never belong to a link written in text (a
    // link that means one has it percent-encoded).
    c.is_whitespace()
        || matches!(
            c,
            '<' | '>'
                | '"'
                | '`'
                | '{'
                | '}'
                | '|'
                | '\\'
                | '^'
                | '['
                | ']'
                | '\u{2014}'
                | '\u{2018}'
                | '\u{2019}'
                | '\u{201A}'
                | '\u{201C}'
                | '\u{201D}'
                | '\u{201E}'
                | '«'
                | '»'
                | '‹'
                | '›'
                | '（'
                | '）'
                | '「'
                | '」'
                | '『'
                | '』'
                | '【'
                | '】'
                | '〈'
                | '〉'
                | '《'
                | '》'
                | '，'
                | '。'
                | '、'
                | '；'
                | '：'
                | '！'
                | '？'
        )
}

/// Schemes that are never fetched but are worth a clear rejection when someone pastes them.
const REFUSED_SCHEMES: &[&str] = &[
    "javascript:",
    "vbscript:",
    "file:",
    "data:",
    "mailto:",
    "about:",
    "blob:",
    "chrome:",
];

/// The line cut at delimiters, except the brackets of an IPv6 address right after `://`
/// (`http://[::1]:8080/`), which belong to the URL.
fn tokens(line: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = None;
    // Where the next `]` is, found once per `]` rather than once per `[`: a line of many
    // `://[` without a `]` was searched to its end for each one (quadratic).
    let mut next_close: Option<Option<usize>> = None;
    let mut rest = line.char_indices();
    while let Some((i, c)) = rest.next() {
        if c == '['
            && line[..i].ends_with("://")
            && let Some(len) = next_close_after(line, i, &mut next_close).filter(|&len| {
                len > 0
                    && line[i + 1..i + 1 + len]
                        .chars()
                        .all(|c| c.is_ascii_hexdigit() || matches!(c, ':' | '.' | '%'))
            })
        {
            // Past the closing bracket; the token goes on.
            rest.nth(len);
            continue;
        }
        if let Some(s) = start
            && let Some(len) = sici_part(&line[s..i], &line[i..])
        {
            rest.nth(len);
            continue;
        }
        if is_delimiter(c)
            || (c == '\'' && !inside_a_word(line, i))
            || (c == ',' && starts_a_link(&line[i + 1..]))
        {
            if let Some(s) = start.take() {
                out.push(&line[s..i]);
            }
        } else if start.is_none() {
            start = Some(i);
        }
    }
    if let Some(s) = start {
        out.push(&line[s..]);
    }
    out
}

/// In a resolver's link, a SICI's bracketed part (`…083[0001:AMFTPP]2.0.CO;2`,
/// `…020<0130:DNF>2.0.CO;2`) belongs to the DOI: the characters to skip past its opening
/// bracket at the start of `rest` to reach its closing one, if `rest` starts one.
fn sici_part(token: &str, rest: &str) -> Option<usize> {
    let close = match rest.chars().next()? {
        '<' => '>',
        '[' => ']',
        _ => return None,
    };
    if !token.to_ascii_lowercase().contains("doi.org/10.") {
        return None;
    }
    let inside = &rest[1..];
    let end = inside.find(|c: char| c == close || is_delimiter(c))?;
    (inside[end..].starts_with(close) && inside[..end].contains(':'))
        .then(|| inside[..end].chars().count())
}

/// Whether `rest` starts with a web address's scheme: a comma before one ends the link before it
/// (a CSV's cells).
fn starts_a_link(rest: &str) -> bool {
    let lower = rest.get(..8).unwrap_or(rest).to_ascii_lowercase();
    lower.starts_with("http://") || lower.starts_with("https://")
}

/// Whether the `'` at `i` has a letter or digit on both sides (`Hilbert's`, `O'Brien`): then it
/// is part of a link; anywhere else (`'https://a.org','https://b.org'`) it ends one.
fn inside_a_word(line: &str, i: usize) -> bool {
    line[..i]
        .chars()
        .next_back()
        .is_some_and(char::is_alphanumeric)
        && line[i + 1..]
            .chars()
            .next()
            .is_some_and(char::is_alphanumeric)
}

/// The distance from the `[` at `i` to the first `]` after it, if any. `cache` holds the last
/// `]` found (or that there is none after it), which stays the answer until `i` passes it.
fn next_close_after(line: &str, i: usize, cache: &mut Option<Option<usize>>) -> Option<usize> {
    let close = match *cache {
        Some(Some(at)) if at > i => Some(at),
        Some(None) => None,
        _ => {
            let found = line[i + 1..].find(']').map(|len| i + 1 + len);
            *cache = Some(found);
            found
        }
    };
    close.map(|at| at - i - 1)
}

fn candidates(line: &str) -> Vec<&str> {
    let mut out = Vec::new();
    for token in tokens(line) {
        let lower = token.to_ascii_lowercase();
        let start = lower
            .find("://")
            .map(|i| scheme_start(&lower[..i]))
            .or_else(|| {
                lower
                    .find("www.")
                    .filter(|&i| i == 0 || !lower.as_bytes()[i - 1].is_ascii_alphanumeric())
            })
            .or_else(|| {
                REFUSED_SCHEMES
                    .iter()
                    .filter_map(|s| find_scheme(&lower, s))
                    .min()
            });
        let Some(start) = start else { continue };
        let candidate = trim_trailing(&token[start..]);
        if !candidate.is_empty() {
            out.push(candidate);
        }
    }
    out
}

fn find_scheme(lower: &str, scheme: &str) -> Option<usize> {
    lower
        .find(scheme)
        .filter(|&i| i == 0 || !lower.as_bytes()[i - 1].is_ascii_alphanumeric())
}

/// Walk back from `://` over the scheme's characters.
fn scheme_start(before: &str) -> usize {
    let bytes = before.as_bytes();
    let mut i = bytes.len();
    while i > 0
        && (bytes[i - 1].is_ascii_alphanumeric() || matches!(bytes[i - 1], b'+' | b'-' | b'.'))
    {
        i -= 1;
    }
    // A scheme starts with a letter: skip leading digits or punctuation glued on ("1.http://").
    while i < bytes.len() && !bytes[i].is_ascii_alphabetic() {
        i += 1;
    }
    i
}

/// Drop sentence punctuation and unbalanced closing parentheses after a URL in prose.
fn trim_trailing(s: &str) -> &str {
    // The parentheses are counted once and kept up to date: recounting them for each `)`
    // dropped made a long run of them quadratic (minutes for a 100 KB line).
    let open = s.matches('(').count();
    let mut close = s.matches(')').count();
    let mut s = s;
    loop {
        let before = s.len();
        s = s.trim_end_matches(['.', ',', ';', ':', '!', '?', '*', '\'', '…', '—']);
        if s.ends_with(')') && close > open {
            s = &s[..s.len() - 1];
            close -= 1;
        }
        if s.len() == before {
            return s;
        }
    }
}

/// Decide one candidate.
pub fn vet(input: &str) -> Found {
    let reject = |reason: String| Found::Rejected {
        input: shown(input),
        reason,
    };
    if input.len() > MAX_URL_LEN {
        return reject(format!("address longer than {MAX_URL_LEN} characters"));
    }
    let lower = input.to_ascii_lowercase();
    let text = if lower.starts_with("www.") {
        format!("https://{input}")
    } else {
        input.to_string()
    };
    let url = match Url::parse(&text) {
        Ok(u) => u,
        Err(e) => {
            if let Some(s) = REFUSED_SCHEMES.iter().find(|s| lower.starts_with(**s)) {
                return reject(format!(
                    "{s} links cannot be fetched; only http:// and https:// are taken"
                ));
            }
            return reject(format!("malformed address: {e}"));
        }
    };
    if url.scheme() != "http" && url.scheme() != "https" {
        return reject(format!(
            "{}: links cannot be fetched; only http:// and https:// are taken",
            url.scheme()
        ));
    }
    let Some(host) = url.host_str().filter(|h| !h.is_empty()) else {
        return reject("malformed address: no host".into());
    };
    if let Some(reason) = unfetchable_host(&url) {
        return reject(reason);
    }
    if let Some(id) = identifiers::from_link(&url) {
        return identifier_found(input, &id);
    }
    Found::Url {
        input: input.to_string(),
        url: url.to_string(),
        key: normalize(&url),
        host: host_key(host),
        reference: None,
    }
}

/// A job for an identifier: its address is the identifier (`doi:…`), its key the identifier's
/// key, and its host the service it asks first.
fn identifier_found(input: &str, id: &Identifier) -> Found {
    Found::Url {
        input: input.to_string(),
        url: id.uri(),
        key: id.key(),
        host: id.service_host().to_string(),
        reference: None,
    }
}

/// The host as the queue stores it (a job's `host`, a `hosts` row): the URL parser's host
/// (lower case, international names in ASCII, IPv6 compressed) without an IPv6 address's
/// brackets. Pausing a host and queueing a job both go through here, so they agree.
fn host_key(host: &str) -> String {
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase()
}

/// A host that cannot exist by definition; fetching it would only wait for DNS to say so.
pub fn unfetchable_host(url: &Url) -> Option<String> {
    let host = url.host_str()?.trim_end_matches('.').to_ascii_lowercase();
    if host == "invalid" || host.ends_with(".invalid") {
        return Some(format!(
            "no such host: {host} (the .invalid domain never exists)"
        ));
    }
    None
}

/// A URL without its user name and password, for what leaves the queue: a library document (a
/// library gets shared and synced) or an OS notification (shown on a locked screen and kept in
/// the notification history). What sits before the `@` is often a secret: a password, or an
/// access token given as the user name (`https://TOKEN@git.example/`). The queue keeps the
/// whole URL, which it needs to fetch.
pub fn without_credentials(url: &str) -> std::borrow::Cow<'_, str> {
    match Url::parse(url) {
        Ok(mut u) if !u.username().is_empty() || u.password().is_some() => {
            // Both only fail for URLs that cannot have credentials, which these have.
            let _ = u.set_username("");
            let _ = u.set_password(None);
            u.to_string().into()
        }
        _ => url.into(),
    }
}

/// A link as a person is shown it: without the user name and password it may hold (the queue
/// keeps them, to fetch with; a screen or a terminal's scrollback need not), then
/// [`printable`].
pub fn shown_url(url: &str) -> String {
    printable(&without_credentials(url)).into_owned()
}

/// The duplicate key: scheme and host lower-cased and default port dropped (the URL parser
/// does both), fragment removed, click-tracking parameters removed.
pub fn normalize(url: &Url) -> String {
    let mut u = url.clone();
    u.set_fragment(None);
    if let Some(path) = decode_unreserved(u.path()) {
        u.set_path(&path);
    }
    if u.query().is_some() {
        let kept: Vec<(String, String)> = u
            .query_pairs()
            .filter(|(k, _)| {
                let k = k.to_ascii_lowercase();
                !k.starts_with("utm_") && !TRACKING_PARAMS.contains(&k.as_str())
            })
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        if kept.is_empty() {
            u.set_query(None);
        } else {
            u.query_pairs_mut().clear().extend_pairs(kept);
        }
    }
    u.to_string()
}

/// The path with percent-encoded unreserved characters decoded (`%7Euser` is `~user`, RFC
/// 3986 §6.2.2.2), or `None` if it has none. Other escapes stay: `%2F` is not a `/`.
fn decode_unreserved(path: &str) -> Option<String> {
    let bytes = path.as_bytes();
    let hex = |b: u8| (b as char).to_digit(16);
    let mut out = String::with_capacity(path.len());
    let (mut i, mut changed) = (0, false);
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let (Some(hi), Some(lo)) = (
                bytes.get(i + 1).copied().and_then(hex),
                bytes.get(i + 2).copied().and_then(hex),
            )
        {
            let c = char::from((hi * 16 + lo) as u8);
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | '~') {
                out.push(c);
                changed = true;
                i += 3;
                continue;
            }
        }
        // Copy up to the next '%' whole, so characters beyond ASCII stay intact.
        let next = path[i + 1..].find('%').map_or(bytes.len(), |n| i + 1 + n);
        out.push_str(&path[i..next]);
        i = next;
    }
    changed.then_some(out)
}

#[cfg(test)]
mod tests;
