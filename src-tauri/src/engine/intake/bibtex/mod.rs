//! BibTeX and BibLaTeX files (`.bib`), read a line at a time: the reader cuts the file into
//! blocks at top-level `@` by brace depth and reads each block on its own, so a 5,000-entry
//! file is never in memory whole and a broken entry costs only itself.
//!
//! Our own small parser: `biblatex` (typst's) overflows the stack on a self-referencing
//! `crossref` and, like `nom-bibtex`, reads a whole file or fails whole.
//!
//! An entry whose braces never close is cut at the next line that starts a block (`@book{`),
//! and rejected. Text between blocks is a comment, as BibTeX has it (Mendeley writes prose
//! there), unless it looks like a piece of an entry (braces, `=`, a leading `@`), which is
//! rejected naming its line.

mod names;
mod parse;
mod tex;

use std::collections::{HashMap, VecDeque};
use std::io::BufRead;

use super::entry::{Entry, Item};
use super::line_reader::{LineFormat, LineReader};
use super::reference_file::{
    arxiv_in_text, bibtex_entry_start, csl_type, entry_name, is_arxiv_id, is_pmid,
    issued_from_parts, issued_from_ymd, month_number, split_keywords, year_in,
};
use parse::{Block, block_kind, key_of, parse_block};
use tex::{to_text, verbatim};

/// The longest block read: a longer one (an entry that never closes, in a huge file) is
/// rejected without holding it, and reading goes on after it.
pub const MAX_BLOCK_BYTES: usize = 4 * 1024 * 1024;

/// The most that `@string` definitions may hold together.
const MAX_MACRO_BYTES: usize = 16 * 1024 * 1024;

/// Why a BibTeX file could not be read to its end.
#[derive(Debug, thiserror::Error)]
pub enum BibtexError {
    #[error("could not read the BibTeX file: {0}")]
    Read(#[from] std::io::Error),
}

/// Read a BibTeX file, handing each item to `on_item` in file order.
pub fn read_bibtex<R: BufRead>(
    reader: R,
    mut on_item: impl FnMut(Item),
) -> Result<(), BibtexError> {
    for item in BibtexReader::new(reader) {
        on_item(item?);
    }
    Ok(())
}

/// The items of a BibTeX file in file order: an entry per `@type{…}` (`@string`s expanded,
/// `@comment` and `@preamble` passed over), a rejection per malformed one. An I/O error ends
/// it.
pub type BibtexReader<R> = LineReader<R, Bibtex>;

/// The reading of BibTeX lines into items (see [`BibtexReader`]).
pub struct Bibtex {
    line: usize,
    macros: HashMap<String, String>,
    macro_bytes: usize,
    open: Option<Open>,
    stray: Option<Stray>,
    ready: VecDeque<Item>,
}

/// A block being read.
struct Open {
    /// From its `@`; emptied (and `overflow` set) past [`MAX_BLOCK_BYTES`].
    text: String,
    line: usize,
    kind: String,
    key: Option<String>,
    close: u8,
    /// Braces open (a `{…}` block counts its own).
    depth: usize,
    /// Inside `"…"` at the top of a `(…)` block, where a `)` does not close it.
    quote: bool,
    overflow: bool,
}

/// Text between blocks that looks like a piece of an entry.
struct Stray {
    line: usize,
    sample: String,
}

impl<R: BufRead> BibtexReader<R> {
    pub fn new(reader: R) -> Self {
        Self::with(reader, Bibtex::new())
    }
}

impl Bibtex {
    fn new() -> Self {
        let macros = [
            "January",
            "February",
            "March",
            "April",
            "May",
            "June",
            "July",
            "August",
            "September",
            "October",
            "November",
            "December",
        ]
        .iter()
        .map(|m| (m[..3].to_ascii_lowercase(), (*m).to_string()))
        .collect();
        Self {
            line: 0,
            macros,
            macro_bytes: 0,
            open: None,
            stray: None,
            ready: VecDeque::new(),
        }
    }

    fn feed(&mut self, line: &str) {
        let starts_block = bibtex_entry_start(line.trim_start()).is_some();
        if starts_block && let Some(open) = self.open.take() {
            self.unclosed(open, Some(self.line));
        }
        let mut pos = 0;
        while pos < line.len() {
            pos = match self.open {
                Some(_) => self.body(line, pos),
                None => self.outside(line, pos),
            };
        }
        if let Some(open) = self.open.as_mut()
            && !open.overflow
        {
            open.text.push('\n');
        }
    }

    /// Between blocks from `pos`: up to the next block's start, or the end of the line.
    fn outside(&mut self, line: &str, pos: usize) -> usize {
        let rest = &line[pos..];
        if pos == 0 && rest.trim_start().starts_with('%') {
            return line.len();
        }
        let start = rest
            .match_indices('@')
            .find_map(|(at, _)| bibtex_entry_start(&rest[at..]).map(|open| (at, open)));
        let Some((at, open)) = start else {
            self.note_stray(rest);
            return line.len();
        };
        self.note_stray(&rest[..at]);
        self.flush_stray();
        let header = &rest[at..=at + open];
        let close = if header.ends_with('(') { b')' } else { b'}' };
        self.open = Some(Open {
            text: header.to_string(),
            line: self.line,
            kind: block_kind(header),
            key: None,
            close,
            depth: usize::from(close == b'}'),
            quote: false,
            overflow: false,
        });
        pos + at + open + 1
    }

    /// Inside a block from `pos`: up to its end, or the end of the line.
    fn body(&mut self, line: &str, pos: usize) -> usize {
        let Some(open) = self.open.as_mut() else {
            return line.len();
        };
        let mut end = None;
        for (i, b) in line.bytes().enumerate().skip(pos) {
            match b {
                b'{' => open.depth += 1,
                b'}' => open.depth = open.depth.saturating_sub(1),
                b'"' if open.close == b')' && open.depth == 0 => open.quote = !open.quote,
                _ => {}
            }
            let closed = match open.close {
                b'}' => b == b'}' && open.depth == 0,
                _ => b == b')' && open.depth == 0 && !open.quote,
            };
            if closed {
                end = Some(i + 1);
                break;
            }
        }
        let upto = end.unwrap_or(line.len());
        if !open.overflow {
            open.text.push_str(&line[pos..upto]);
            if open.text.len() > MAX_BLOCK_BYTES {
                open.key = key_of(&open.text);
                open.overflow = true;
                open.text = String::new();
            }
        }
        if end.is_some()
            && let Some(open) = self.open.take()
        {
            self.finish(open);
        }
        upto
    }

    /// Text between blocks: passed over as a comment, unless it looks like a piece of an entry
    /// (braces, `=`, a leading `@`); the first such piece of a gap is told when the gap ends.
    fn note_stray(&mut self, text: &str) {
        let text = text.trim();
        let suspect = text.contains(['{', '}', '=']) || text.starts_with('@');
        if suspect && self.stray.is_none() {
            self.stray = Some(Stray {
                line: self.line,
                sample: text.chars().take(60).collect(),
            });
        }
    }

    fn flush_stray(&mut self) {
        if let Some(stray) = self.stray.take() {
            self.ready.push_back(Item::Rejected {
                what: format!("line {}", stray.line),
                reason: format!(
                    "text outside any entry, not read (a broken entry?): “{}”",
                    stray.sample
                ),
            });
        }
    }

    /// A block whose braces did not balance before the next block (on line `next`) or the
    /// end of the file.
    fn unclosed(&mut self, open: Open, next: Option<usize>) {
        if matches!(open.kind.as_str(), "comment" | "preamble") {
            return;
        }
        let key = open.key.clone().or_else(|| key_of(&open.text));
        let close = open.close as char;
        let reason = match next {
            Some(line) => format!(
                "line {}: not closed with `{close}` before the next entry on line {line} \
                 (its braces do not balance)",
                open.line
            ),
            None => format!(
                "line {}: not closed with `{close}` before the end of the file \
                 (its braces do not balance)",
                open.line
            ),
        };
        self.ready.push_back(Item::Rejected {
            what: entry_name(key.as_deref(), open.line),
            reason,
        });
    }

    fn finish(&mut self, open: Open) {
        if open.overflow {
            if !matches!(open.kind.as_str(), "comment" | "preamble") {
                self.ready.push_back(Item::Rejected {
                    what: entry_name(open.key.as_deref(), open.line),
                    reason: format!(
                        "line {}: longer than {} MiB, not read",
                        open.line,
                        MAX_BLOCK_BYTES / (1024 * 1024)
                    ),
                });
            }
            return;
        }
        match parse_block(&open.text, &self.macros) {
            Ok(Block::Ignored) => {}
            Ok(Block::String { name, value }) => {
                if self.macro_bytes + value.len() > MAX_MACRO_BYTES {
                    self.ready.push_back(Item::Rejected {
                        what: format!("line {}", open.line),
                        reason: format!("@string `{name}`: the file's @strings hold too much"),
                    });
                } else {
                    self.macro_bytes += value.len();
                    self.macros.insert(name, value);
                }
            }
            Ok(Block::Entry { key, fields }) => {
                // BibTeX's `@article` is a journal's; CSL's `article` is not.
                let kind = match open.kind.as_str() {
                    "article" => Some("article-journal"),
                    other => csl_type(other),
                };
                let entry = Entry {
                    kind: kind.map(str::to_string),
                    ..entry_of(key, &fields)
                };
                self.ready.push_back(Item::Entry(entry));
            }
            Err(e) => {
                let line = open.line
                    + open.text.as_bytes()[..e.offset.min(open.text.len())]
                        .iter()
                        .filter(|&&b| b == b'\n')
                        .count();
                let what = if open.kind == "string" {
                    format!("line {}", open.line)
                } else {
                    entry_name(e.key.as_deref(), open.line)
                };
                self.ready.push_back(Item::Rejected {
                    what,
                    reason: format!("line {line}: {}", e.message),
                });
            }
        }
    }
}

impl LineFormat for Bibtex {
    fn line(&mut self, number: usize, line: &str) {
        self.line = number;
        self.feed(line);
    }

    fn end(&mut self) {
        if let Some(open) = self.open.take() {
            self.unclosed(open, None);
        }
        self.flush_stray();
    }

    fn ready(&mut self) -> &mut VecDeque<Item> {
        &mut self.ready
    }
}

/// An entry's fields as an [`Entry`].
fn entry_of(key: Option<String>, fields: &[(String, String)]) -> Entry {
    let get = |name: &str| {
        fields
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    };
    let plain = |name: &str| get(name).map(to_text).filter(|v| !v.is_empty());
    let literal = |name: &str| get(name).map(verbatim).filter(|v| !v.is_empty());

    let mut entry = Entry {
        key,
        doi: literal("doi"),
        pmid: literal("pmid").filter(|p| is_pmid(p)),
        pmcid: literal("pmcid"),
        // Mendeley writes every link in one field (`{https://a/x https://b/y}`): the first.
        url: literal("url")
            .map(|u| match u.contains(char::is_whitespace) {
                true => url_in(&u).unwrap_or(u),
                false => u,
            })
            .or_else(|| get("howpublished").and_then(url_in)),
        title: plain("title"),
        authors: get("author").map(names::authors).unwrap_or_default(),
        container_title: plain("journaltitle")
            .or_else(|| plain("journal"))
            .or_else(|| plain("booktitle")),
        ..Entry::default()
    };
    if let Some(eprint) = literal("eprint") {
        let kind = plain("archiveprefix")
            .or_else(|| plain("eprinttype"))
            .map(|k| k.to_ascii_lowercase());
        match kind.as_deref() {
            Some("arxiv") => entry.arxiv = Some(eprint),
            Some("pubmed") if is_pmid(&eprint) => entry.pmid = entry.pmid.or(Some(eprint)),
            Some("pmcid" | "pmc") => entry.pmcid = entry.pmcid.or(Some(eprint)),
            None if is_arxiv_id(&eprint) => entry.arxiv = Some(eprint),
            _ => {}
        }
    }
    if entry.arxiv.is_none() {
        // Google Scholar's preprints: `journal = {arXiv preprint arXiv:1706.03762}`.
        entry.arxiv = ["journal", "journaltitle", "note", "howpublished"]
            .iter()
            .find_map(|f| plain(f).as_deref().and_then(arxiv_in_text));
    }
    entry.issued = plain("date")
        .and_then(|d| issued_from_ymd(d.split('/').next().unwrap_or_default()))
        .or_else(|| {
            let year = year_in(&plain("year")?)?;
            issued_from_parts(year, plain("month").and_then(|m| month_number(&m)), None)
        });
    if let Some(keywords) = plain("keywords") {
        split_keywords(&keywords, &mut entry.tags);
    }
    entry
}

/// The web address in a `howpublished` field (`\url{https://…}`, or a bare link).
fn url_in(field: &str) -> Option<String> {
    let start = field.find("http://").or_else(|| field.find("https://"))?;
    let rest = &field[start..];
    let end = rest
        .find(|c: char| c.is_whitespace() || c == '}')
        .unwrap_or(rest.len());
    Some(verbatim(&rest[..end])).filter(|u| !u.is_empty())
}

#[cfg(test)]
mod tests;
