//! Reference files (BibTeX/BibLaTeX, RIS, CSL-JSON, MEDLINE): telling which one a file is, reading it
//! with the reader of its format, and what the readers share (dates, keywords, arXiv and
//! PubMed ids).

use std::io::BufRead;

use super::{Item, bibtex, csl_json, medline, ris};

/// The formats of reference file that intake reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReferenceFormat {
    /// BibTeX or BibLaTeX (`.bib`).
    Bibtex,
    /// RIS (`.ris`), as Zotero, EndNote and publishers' sites export it.
    Ris,
    /// CSL-JSON (`.json`): an array of CSL items, as Zotero exports it.
    CslJson,
    /// MEDLINE (`.nbib`), as PubMed's "Send to: Citation manager" writes it.
    Medline,
}

/// The format a file name's extension says, if any (`refs.BIB` → BibTeX).
pub fn format_from_name(name: &str) -> Option<ReferenceFormat> {
    let ext = name.rsplit_once('.')?.1.to_ascii_lowercase();
    match ext.as_str() {
        "bib" | "bibtex" => Some(ReferenceFormat::Bibtex),
        "ris" => Some(ReferenceFormat::Ris),
        "json" => Some(ReferenceFormat::CslJson),
        "nbib" | "medline" => Some(ReferenceFormat::Medline),
        _ => None,
    }
}

/// The format the start of a file shows, if any: `[` followed by `{` or `]` (or `{` followed
/// by `"`) is JSON, a CSL-JSON candidate; a `TY  - ` line is RIS, a `PMID- ` line MEDLINE and
/// an `@article{` line is BibTeX, if it comes within the first ten lines and no link comes before it (publishers put
/// a few lines of header before RIS, Mendeley before BibTeX; `%` lines are BibTeX comments). A
/// file of links, prose or Markdown (`[title](https://…)`) is none of these.
pub fn format_from_content(head: &[u8]) -> Option<ReferenceFormat> {
    let head = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
    let text = String::from_utf8_lossy(head);
    let json_start = text.trim_start();
    let mut after = json_start.chars().skip(1).filter(|c| !c.is_whitespace());
    match (json_start.chars().next(), after.next()) {
        (Some('['), Some('{' | ']')) | (Some('{'), Some('"')) => {
            return Some(ReferenceFormat::CslJson);
        }
        // Only `[` or `{` seen so far (a short head): JSON it may be, links it is not.
        (Some('[' | '{'), None) => return Some(ReferenceFormat::CslJson),
        (Some('[' | '{'), Some(_)) => return None,
        _ => {}
    }
    let lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    for line in lines.take(10) {
        if ris_tag(line).is_some_and(|(tag, _)| tag == "TY") {
            return Some(ReferenceFormat::Ris);
        }
        if medline::medline_tag(line).is_some_and(|(tag, _)| tag == "PMID") {
            return Some(ReferenceFormat::Medline);
        }
        if line.starts_with('%') {
            continue;
        }
        if bibtex_entry_start(line).is_some() {
            return Some(ReferenceFormat::Bibtex);
        }
        if line.contains("://") {
            return None;
        }
    }
    None
}

/// The format of a file from its name and the start of its content: what the content shows
/// wins (a `.txt` holding BibTeX is BibTeX); else the extension, except that a `.json` must
/// start like JSON (or be empty) to be taken as CSL-JSON.
pub fn detect(name: Option<&str>, head: &[u8]) -> Option<ReferenceFormat> {
    if let Some(format) = format_from_content(head) {
        return Some(format);
    }
    match name.and_then(format_from_name)? {
        ReferenceFormat::CslJson => {
            let blank = head
                .strip_prefix(b"\xEF\xBB\xBF")
                .unwrap_or(head)
                .iter()
                .all(u8::is_ascii_whitespace);
            blank.then_some(ReferenceFormat::CslJson)
        }
        format => Some(format),
    }
}

/// Why a reference file could not be read to its end. Items read before the error were
/// already handed over.
#[derive(Debug, thiserror::Error)]
pub enum ReferenceFileError {
    #[error(transparent)]
    Bibtex(#[from] bibtex::BibtexError),
    #[error(transparent)]
    Ris(#[from] ris::RisError),
    #[error(transparent)]
    CslJson(#[from] csl_json::CslJsonError),
    #[error(transparent)]
    Medline(#[from] medline::MedlineError),
}

/// Read a reference file of `format`, handing each item to `on_item` in file order, a piece of
/// the file at a time.
pub fn read_reference_file<R: BufRead>(
    format: ReferenceFormat,
    reader: R,
    on_item: impl FnMut(Item),
) -> Result<(), ReferenceFileError> {
    match format {
        ReferenceFormat::Bibtex => bibtex::read_bibtex(reader, on_item)?,
        ReferenceFormat::Ris => ris::read_ris(reader, on_item)?,
        ReferenceFormat::CslJson => csl_json::read_csl_json(reader, on_item)?,
        ReferenceFormat::Medline => medline::read_medline(reader, on_item)?,
    }
    Ok(())
}

/// The most tag lines one record of a tagged file (RIS, MEDLINE) may hold, and the most text:
/// past either the record is rejected without holding more.
pub(super) const MAX_TAGS: usize = 10_000;
pub(super) const MAX_RECORD_BYTES: usize = 4 * 1024 * 1024;

/// A record of a tagged file (RIS, MEDLINE) as it is read: its tags in file order, within
/// [`MAX_TAGS`] and [`MAX_RECORD_BYTES`].
pub(super) struct TaggedRecord {
    /// The line it starts on.
    pub line: usize,
    pub tags: Vec<(String, String)>,
    /// Past the limits: only the tag that names it is kept.
    pub overflow: bool,
    bytes: usize,
    /// The tag that names the record (RIS `ID`, MEDLINE `PMID`).
    name_tag: &'static str,
}

impl TaggedRecord {
    pub fn new(line: usize, name_tag: &'static str) -> Self {
        Self {
            line,
            tags: Vec::new(),
            overflow: false,
            bytes: 0,
            name_tag,
        }
    }

    /// Counts `bytes` more; past the limits, lets go of all but the record's name.
    fn grow(&mut self, bytes: usize) -> bool {
        self.bytes += bytes;
        if !self.overflow && (self.bytes > MAX_RECORD_BYTES || self.tags.len() >= MAX_TAGS) {
            self.overflow = true;
            let name = self.name_tag;
            self.tags.retain(|(t, _)| t == name);
        }
        !self.overflow
    }

    pub fn push(&mut self, tag: &str, value: &str) {
        if self.grow(value.len()) {
            self.tags.push((tag.to_string(), value.to_string()));
        }
    }

    /// A line without a tag: the value before it goes on over lines.
    pub fn go_on(&mut self, text: &str) {
        if !text.is_empty()
            && self.grow(text.len())
            && let Some((_, last)) = self.tags.last_mut()
        {
            last.push(' ');
            last.push_str(text);
        }
    }

    /// Its name, for a rejection: the naming tag's value, else its line.
    pub fn name(&self) -> String {
        let key = self
            .tags
            .iter()
            .find(|(t, _)| t == self.name_tag)
            .map(|(_, v)| v.as_str());
        entry_name(key, self.line)
    }

    /// Why a record past the limits is not read.
    pub fn too_big(&self) -> String {
        format!(
            "line {}: more than {MAX_TAGS} tags or {} MiB, not read",
            self.line,
            MAX_RECORD_BYTES / (1024 * 1024)
        )
    }
}

/// A RIS line's tag and value: `AU  - Vaswani, Ashish` → (`AU`, `Vaswani, Ashish`). The tag is
/// two capitals or a capital and a digit; one space before the dash is tolerated, as is a
/// missing value (`ER  -`).
pub(super) fn ris_tag(line: &str) -> Option<(&str, &str)> {
    let bytes = line.as_bytes();
    let tag_ok = bytes.len() >= 4
        && bytes[0].is_ascii_uppercase()
        && (bytes[1].is_ascii_uppercase() || bytes[1].is_ascii_digit());
    if !tag_ok {
        return None;
    }
    let rest = &line[2..];
    let rest = rest
        .strip_prefix("  -")
        .or_else(|| rest.strip_prefix(" -"))?;
    if !(rest.is_empty() || rest.starts_with([' ', '\t'])) {
        return None;
    }
    Some((&line[..2], rest.trim()))
}

/// Where `line` starts a BibTeX entry (`@article{`, `@String (`): the byte offset of its
/// opening delimiter.
pub(super) fn bibtex_entry_start(line: &str) -> Option<usize> {
    let rest = line.strip_prefix('@')?;
    let word = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
        .unwrap_or(rest.len());
    if word == 0 || !rest.as_bytes()[0].is_ascii_alphabetic() {
        return None;
    }
    let after = &rest[word..];
    let gap = after.len() - after.trim_start().len();
    match after.trim_start().chars().next() {
        Some('{' | '(') => Some(1 + word + gap),
        _ => None,
    }
}

/// `YYYY`, `YYYY-MM` or `YYYY-MM-DD` from the parts of a date, each as far as it is valid: a
/// month outside 1–12 drops the month and day, a day outside 1–31 drops the day.
pub(super) fn issued_from_parts(year: u32, month: Option<u32>, day: Option<u32>) -> Option<String> {
    if !(1..=9999).contains(&year) {
        return None;
    }
    match month.filter(|m| (1..=12).contains(m)) {
        None => Some(format!("{year:04}")),
        Some(m) => match day.filter(|d| (1..=31).contains(d)) {
            None => Some(format!("{year:04}-{m:02}")),
            Some(d) => Some(format!("{year:04}-{m:02}-{d:02}")),
        },
    }
}

/// A date written year first with `-` or `/` between its parts (`2013-07-31`, RIS's
/// `2013/07/31/`, `2013/07`, `2013//`, `2013-07-31T12:00`): as much of it as is there.
pub(super) fn issued_from_ymd(text: &str) -> Option<String> {
    let text = text.trim();
    let year_len = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    if year_len != 4 {
        return None;
    }
    let year = text[..4].parse().ok()?;
    let mut parts = text[4..].split(['-', '/']).skip(1).map(|p| {
        let digits = p.find(|c: char| !c.is_ascii_digit()).unwrap_or(p.len());
        (digits > 0 && digits <= 2)
            .then(|| p[..digits].parse::<u32>().ok())
            .flatten()
    });
    let sep_ok = text[4..].is_empty() || text[4..].starts_with(['-', '/']);
    if !sep_ok {
        return issued_from_parts(year, None, None);
    }
    let month = parts.next().flatten();
    let day = month.and(parts.next().flatten());
    issued_from_parts(year, month, day)
}

/// The first run of exactly four digits in `text` (`2017`, `{2017a}`, `c. 1998`).
pub(super) fn year_in(text: &str) -> Option<u32> {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i].is_ascii_digit() {
            let start = i;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
            if i - start == 4 {
                return text[start..i].parse().ok();
            }
        } else {
            i += 1;
        }
    }
    None
}

/// A month by number (`7`, `07`) or English name or abbreviation (`Jul`, `jul.`, `July`).
pub(super) fn month_number(text: &str) -> Option<u32> {
    let t = text.trim().trim_end_matches('.').to_ascii_lowercase();
    if let Ok(n) = t.parse::<u32>() {
        return (1..=12).contains(&n).then_some(n);
    }
    const NAMES: [&str; 12] = [
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
    ];
    let pos = NAMES
        .iter()
        .position(|name| t.len() >= 3 && name.starts_with(t.as_str()))?;
    u32::try_from(pos + 1).ok()
}

/// Keywords as a list: split at commas and semicolons, trimmed, empty and repeated ones left
/// out.
pub(super) fn split_keywords(text: &str, tags: &mut Vec<String>) {
    for word in text.split([',', ';']).map(str::trim) {
        if !word.is_empty() && !tags.iter().any(|t| t == word) {
            tags.push(word.to_string());
        }
    }
}

/// Whether `text` is an arXiv id, with or without an `arXiv:` prefix: a new-style one
/// (`1706.03762`, `2106.09685v2`) or an old-style one (`hep-th/9901001`, `math.GT/0309136`).
pub(super) fn is_arxiv_id(text: &str) -> bool {
    let t = text.trim();
    let t = strip_prefix_ignore_case(t, "arxiv:").unwrap_or(t);
    // Without its version (`v2`).
    let id = match t.rfind('v') {
        Some(v) if v + 1 < t.len() && t[v + 1..].bytes().all(|b| b.is_ascii_digit()) => &t[..v],
        _ => t,
    };
    if let Some((yymm, num)) = id.split_once('.')
        && yymm.len() == 4
        && yymm.bytes().all(|b| b.is_ascii_digit())
        && (4..=5).contains(&num.len())
        && num.bytes().all(|b| b.is_ascii_digit())
    {
        return true;
    }
    if let Some((archive, num)) = id.split_once('/') {
        let (name, class) = archive.split_once('.').unwrap_or((archive, ""));
        let name_ok = !name.is_empty()
            && name.bytes().all(|b| b.is_ascii_lowercase() || b == b'-')
            && name.as_bytes()[0].is_ascii_lowercase();
        let class_ok =
            class.is_empty() || (class.len() == 2 && class.bytes().all(|b| b.is_ascii_uppercase()));
        return name_ok && class_ok && num.len() == 7 && num.bytes().all(|b| b.is_ascii_digit());
    }
    false
}

/// The arXiv id that prose names with an `arXiv:` prefix (Google Scholar's `journal = {arXiv
/// preprint arXiv:1706.03762}`), without the prefix.
pub(super) fn arxiv_in_text(text: &str) -> Option<String> {
    let lower = text.to_ascii_lowercase();
    let mut from = 0;
    while let Some(at) = lower[from..].find("arxiv:") {
        let start = from + at + "arxiv:".len();
        let rest = text[start..].trim_start();
        let end = rest
            .find(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | ')' | ']' | '}'))
            .unwrap_or(rest.len());
        let id = rest[..end].trim_end_matches('.');
        if is_arxiv_id(id) {
            return Some(id.to_string());
        }
        from = start;
    }
    None
}

/// Whether `text` is a PubMed id: one to eight digits.
/// A work's type as CSL names it, from CSL (and Crossref's names for the same), BibTeX's entry
/// type or RIS's `TY`: the kinds an export tells apart. A journal article is said too, so a
/// resolver's answer can correct a file's type.
pub fn csl_type(name: &str) -> Option<&'static str> {
    Some(match name.trim().to_ascii_lowercase().as_str() {
        "article-journal" | "journal-article" | "jour" | "ejour" => "article-journal",
        "paper-conference"
        | "proceedings-article"
        | "inproceedings"
        | "conference"
        | "conf"
        | "cpaper" => "paper-conference",
        "chapter" | "book-chapter" | "book-section" | "incollection" | "inbook" | "chap" => {
            "chapter"
        }
        "book" | "edited-book" | "monograph" | "ebook" | "edbook" => "book",
        "thesis" | "dissertation" | "phdthesis" | "mastersthesis" | "thes" => "thesis",
        "report" | "techreport" | "rprt" => "report",
        _ => return None,
    })
}

/// Whether a file's item id can be a citation key. Zotero's CSL-JSON ids are URIs
/// (`http://zotero.org/users/local/…/items/QWERTY12`) or `library/item` (its web API's), and
/// a RIS `ID` is often a database's record number: a paper cites none of them, and a key once
/// exported is kept for good.
pub fn is_key_like(id: &str) -> bool {
    !id.contains('/') && !id.bytes().all(|b| b.is_ascii_digit())
}

pub(super) fn is_pmid(text: &str) -> bool {
    (1..=8).contains(&text.len()) && text.bytes().all(|b| b.is_ascii_digit())
}

/// The PubMed id of a `PMID: 31452104` note (as Zotero keeps it in an item's Extra field).
pub(super) fn pmid_in_note(text: &str) -> Option<String> {
    let rest = strip_prefix_ignore_case(text.trim(), "pmid")?;
    let rest = rest.trim_start().strip_prefix(':')?.trim_start();
    let end = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    is_pmid(&rest[..end]).then(|| rest[..end].to_string())
}

/// A PMC id in a note, as EndNote and Zotero write it: `PMCID: PMC6738312`.
pub(super) fn pmcid_in_note(text: &str) -> Option<String> {
    let rest = strip_prefix_ignore_case(text.trim(), "pmcid")?;
    let rest = rest.trim_start().strip_prefix(':')?.trim_start();
    super::identifiers::pmcid(rest).map(|(id, _)| id)
}

fn strip_prefix_ignore_case<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let head = text.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &text[prefix.len()..])
}

/// How a rejected entry is named: its key, else the line it starts on.
pub(super) fn entry_name(key: Option<&str>, line: usize) -> String {
    match key.map(str::trim).filter(|k| !k.is_empty()) {
        Some(key) => key.to_string(),
        None => format!("line {line}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_extension_names_the_format_in_any_case() {
        assert_eq!(
            format_from_name("My Library.bib"),
            Some(ReferenceFormat::Bibtex)
        );
        assert_eq!(
            format_from_name("refs.BIBTEX"),
            Some(ReferenceFormat::Bibtex)
        );
        assert_eq!(format_from_name("export.ris"), Some(ReferenceFormat::Ris));
        assert_eq!(
            format_from_name("citations.NBIB"),
            Some(ReferenceFormat::Medline)
        );
        assert_eq!(
            format_from_name("zotero.Json"),
            Some(ReferenceFormat::CslJson)
        );
        assert_eq!(format_from_name("links.txt"), None);
        assert_eq!(format_from_name("bib"), None);
    }

    #[test]
    fn the_content_names_the_format() {
        let bib = b"% Encoding: UTF-8\n\n@Article{vaswani2017,\n title={x}}";
        assert_eq!(format_from_content(bib), Some(ReferenceFormat::Bibtex));
        assert_eq!(
            format_from_content(b"\xEF\xBB\xBF@string (x = \"y\")"),
            Some(ReferenceFormat::Bibtex)
        );
        assert_eq!(
            format_from_content(b"\r\n\r\nTY  - JOUR\r\nTI  - x\r\nER  - \r\n"),
            Some(ReferenceFormat::Ris)
        );
        assert_eq!(
            format_from_content(b"[\n  {\n    \"id\": \"a\"\n  }\n]"),
            Some(ReferenceFormat::CslJson)
        );
        assert_eq!(format_from_content(b"[]"), Some(ReferenceFormat::CslJson));
        assert_eq!(
            format_from_content(b" {\"id\": 1}"),
            Some(ReferenceFormat::CslJson)
        );
        let elsevier = "Provider: Elsevier\nDatabase: Elsevier SD ScienceDirect\n\
                        Content: text/plain; charset=\"UTF-8\"\n\nTY  - JOUR\n";
        assert_eq!(
            format_from_content(elsevier.as_bytes()),
            Some(ReferenceFormat::Ris)
        );
        let mendeley = "Automatically generated by Mendeley Desktop 1.19.8\n\
                        ---------------------------------------------\n\n@article{a,\n";
        assert_eq!(
            format_from_content(mendeley.as_bytes()),
            Some(ReferenceFormat::Bibtex)
        );
    }

    #[test]
    fn a_file_of_links_is_no_reference_file() {
        for text in [
            "https://example.com/a\nhttps://example.org/b\n",
            "[A title](https://example.com/a)\n",
            "Write to me@example.com {soon}\n",
            "@someone said https://example.com\n",
            "TY is not RIS\n",
            "# Reading list\n\n- https://example.com\n",
            "{not json}\n",
            "https://example.com/a\n@article{cited,\n  title = {In a README}}\n",
            "See https://example.com\nTY  - JOUR\n",
            "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n@article{late,\n",
            "",
        ] {
            assert_eq!(format_from_content(text.as_bytes()), None, "{text:?}");
            assert_eq!(detect(Some("links.txt"), text.as_bytes()), None, "{text:?}");
        }
        assert_eq!(
            detect(Some("links.json"), b"https://example.com\n"),
            None,
            "a .json of links"
        );
    }

    #[test]
    fn detection_prefers_the_content_and_falls_back_on_the_extension() {
        assert_eq!(
            detect(Some("refs.txt"), b"@article{a, title={x}}"),
            Some(ReferenceFormat::Bibtex)
        );
        assert_eq!(
            detect(Some("refs.bib"), b"TY  - JOUR\n"),
            Some(ReferenceFormat::Ris)
        );
        assert_eq!(
            detect(Some("empty.bib"), b""),
            Some(ReferenceFormat::Bibtex)
        );
        assert_eq!(
            detect(Some("notes.bib"), b"Made by Mendeley Desktop\n"),
            Some(ReferenceFormat::Bibtex)
        );
        assert_eq!(
            detect(Some("export.ris"), b"Provider: a publisher\n"),
            Some(ReferenceFormat::Ris)
        );
        assert_eq!(
            detect(Some("empty.json"), b"\n"),
            Some(ReferenceFormat::CslJson)
        );
        assert_eq!(
            detect(Some("citations.txt"), b"\nPMID- 31452104\nOWN - NLM\n"),
            Some(ReferenceFormat::Medline)
        );
        assert_eq!(
            detect(Some("citations.nbib"), b"  \n"),
            Some(ReferenceFormat::Medline)
        );
        assert_eq!(
            detect(None, b"PMID: 31452104\n"),
            None,
            "a PubMed id in prose"
        );
        assert_eq!(detect(None, b"plain words"), None);
    }

    #[test]
    fn each_fixture_is_detected_and_read_by_its_reader() {
        let fixtures: [(&str, &[u8], ReferenceFormat, usize); 4] = [
            (
                "library.bib",
                include_bytes!("../../../tests-fixtures/references/library.bib"),
                ReferenceFormat::Bibtex,
                14,
            ),
            (
                "library.ris",
                include_bytes!("../../../tests-fixtures/references/library.ris"),
                ReferenceFormat::Ris,
                9,
            ),
            (
                "library.json",
                include_bytes!("../../../tests-fixtures/references/library.json"),
                ReferenceFormat::CslJson,
                6,
            ),
            (
                "pubmed.nbib",
                include_bytes!("../../../tests-fixtures/references/pubmed.nbib"),
                ReferenceFormat::Medline,
                3,
            ),
        ];
        for (name, bytes, format, count) in fixtures {
            assert_eq!(detect(Some(name), bytes), Some(format), "{name}");
            assert_eq!(detect(None, bytes), Some(format), "{name} by its content");
            let mut items = 0;
            read_reference_file(format, bytes, |_| items += 1).expect("read");
            assert_eq!(items, count, "{name}");
        }
    }

    #[test]
    fn ris_tags_are_read_strictly_enough() {
        assert_eq!(
            ris_tag("AU  - Vaswani, Ashish"),
            Some(("AU", "Vaswani, Ashish"))
        );
        assert_eq!(ris_tag("ER  - "), Some(("ER", "")));
        assert_eq!(ris_tag("ER  -"), Some(("ER", "")));
        assert_eq!(ris_tag("T1 - Title"), Some(("T1", "Title")));
        assert_eq!(ris_tag("Tx  - x"), None);
        assert_eq!(ris_tag("AU  -x"), None);
        assert_eq!(ris_tag("https://example.com"), None);
        assert_eq!(ris_tag("ÄU  - x"), None);
    }

    #[test]
    fn dates_are_normalised_as_far_as_they_are_valid() {
        assert_eq!(
            issued_from_ymd("2013/07/31/").as_deref(),
            Some("2013-07-31")
        );
        assert_eq!(issued_from_ymd("2013/07//").as_deref(), Some("2013-07"));
        assert_eq!(issued_from_ymd("2013///").as_deref(), Some("2013"));
        assert_eq!(issued_from_ymd("2013-7-3").as_deref(), Some("2013-07-03"));
        assert_eq!(
            issued_from_ymd("2013-07-31T10:00Z").as_deref(),
            Some("2013-07-31")
        );
        assert_eq!(issued_from_ymd("2013/13/01").as_deref(), Some("2013"));
        assert_eq!(issued_from_ymd("2013/07/32").as_deref(), Some("2013-07"));
        assert_eq!(issued_from_ymd("2013/2014").as_deref(), Some("2013"));
        assert_eq!(issued_from_ymd("13/07/2013"), None);
        assert_eq!(issued_from_ymd("in press"), None);
        assert_eq!(issued_from_parts(0, None, None), None);
        assert_eq!(year_in("{2017a}"), Some(2017));
        assert_eq!(year_in("vol. 12345, 1998"), Some(1998));
        assert_eq!(year_in("n.d."), None);
    }

    #[test]
    fn months_by_number_or_name() {
        assert_eq!(month_number("7"), Some(7));
        assert_eq!(month_number("07"), Some(7));
        assert_eq!(month_number("Jul."), Some(7));
        assert_eq!(month_number("JULY"), Some(7));
        assert_eq!(month_number("sept"), Some(9));
        assert_eq!(month_number("13"), None);
        assert_eq!(month_number("ju"), None);
        assert_eq!(month_number("Summer"), None);
    }

    #[test]
    fn keywords_split_at_commas_and_semicolons() {
        let mut tags = vec!["kept".to_string()];
        split_keywords(
            " deep learning, attention;transformers ;; kept, attention ",
            &mut tags,
        );
        assert_eq!(tags, ["kept", "deep learning", "attention", "transformers"]);
    }

    #[test]
    fn arxiv_and_pubmed_ids_are_recognised() {
        for id in [
            "1706.03762",
            "2106.09685v2",
            "arXiv:1706.03762",
            "ARXIV:1501.00001v10",
            "hep-th/9901001",
            "math.GT/0309136v1",
            "cond-mat/0102536",
        ] {
            assert!(is_arxiv_id(id), "{id}");
        }
        for id in [
            "10.1038/nature12373",
            "170603762",
            "1706.037",
            "HEP-TH/9901001",
            "a/1",
            "v2",
        ] {
            assert!(!is_arxiv_id(id), "{id}");
        }
        assert_eq!(
            arxiv_in_text("arXiv preprint arXiv:1706.03762").as_deref(),
            Some("1706.03762")
        );
        assert_eq!(
            arxiv_in_text("arXiv: hep-th/9901001.").as_deref(),
            Some("hep-th/9901001")
        );
        assert_eq!(arxiv_in_text("Posted on arXiv: soon"), None);
        assert!(is_pmid("31452104"));
        assert!(!is_pmid("PMC6712345"));
        assert!(!is_pmid("123456789"));
        assert!(!is_pmid(""));
        assert_eq!(pmid_in_note("PMID: 31452104").as_deref(), Some("31452104"));
        assert_eq!(
            pmid_in_note("pmid:31452104 PMCID: PMC1").as_deref(),
            Some("31452104")
        );
        assert_eq!(pmid_in_note("PMCID: PMC6712345"), None);
        assert_eq!(pmid_in_note("31452104"), None);
    }
}
