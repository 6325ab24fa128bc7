//! MEDLINE files (`.nbib`), as PubMed's "Send to: Citation manager" writes them, read a line
//! at a time: `PMID- 31452104` opens a record, `TI  - ` and the like are its fields (a tag of
//! up to four letters, padded to four, then `- `), an indented line goes on the value before
//! it, and a blank line ends the record.

use std::collections::VecDeque;
use std::io::BufRead;

use super::entry::{Entry, Item};
use super::line_reader::{LineFormat, LineReader};
use super::reference_file::{TaggedRecord, is_pmid, issued_from_parts, month_number};

/// Why a MEDLINE file could not be read to its end.
#[derive(Debug, thiserror::Error)]
pub enum MedlineError {
    #[error("could not read the MEDLINE file: {0}")]
    Read(#[from] std::io::Error),
}

/// Read a MEDLINE file, handing each item to `on_item` in file order.
pub fn read_medline<R: BufRead>(
    reader: R,
    mut on_item: impl FnMut(Item),
) -> Result<(), MedlineError> {
    for item in MedlineReader::new(reader) {
        on_item(item?);
    }
    Ok(())
}

/// A MEDLINE line's tag and value: `FAU - Smith, John A` → (`FAU`, `Smith, John A`). The tag
/// is one to four capitals or digits, padded with spaces to four, then `-` and a space (or
/// the line's end).
pub(super) fn medline_tag(line: &str) -> Option<(&str, &str)> {
    let head = line.get(..4)?;
    let tag = head.trim_end_matches(' ');
    let tag_ok = !tag.is_empty()
        && tag
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
        && tag.as_bytes()[0].is_ascii_uppercase();
    let rest = line[4..].strip_prefix('-')?;
    if !tag_ok || !(rest.is_empty() || rest.starts_with(' ')) {
        return None;
    }
    Some((tag, rest.trim()))
}

/// The items of a MEDLINE file in file order: an entry per record, a rejection per record
/// too big to read and per stretch of text outside any record. An I/O error ends it.
pub type MedlineReader<R> = LineReader<R, Medline>;

/// The reading of MEDLINE lines into items (see [`MedlineReader`]).
#[derive(Default)]
pub struct Medline {
    line: usize,
    open: Option<TaggedRecord>,
    /// The first line of text found outside any record, not yet told.
    stray: Option<usize>,
    ready: VecDeque<Item>,
}

impl<R: BufRead> MedlineReader<R> {
    pub fn new(reader: R) -> Self {
        Self::with(reader, Medline::default())
    }
}

impl Medline {
    fn feed(&mut self, line: &str) {
        let line = line.trim_end();
        if line.is_empty() {
            self.close();
            return;
        }
        match medline_tag(line) {
            Some((tag, value)) => {
                // A PubMed id starts a record even where no blank line ended the one before.
                if tag == "PMID" {
                    self.close();
                }
                self.flush_stray();
                let line = self.line;
                self.open
                    .get_or_insert_with(|| TaggedRecord::new(line, "PMID"))
                    .push(tag, value);
            }
            // A value that goes on over lines (a title, an abstract, an affiliation).
            None => match self.open.as_mut() {
                Some(record) => record.go_on(line.trim()),
                None => {
                    self.stray.get_or_insert(self.line);
                }
            },
        }
    }

    fn close(&mut self) {
        let Some(record) = self.open.take() else {
            return;
        };
        let item = if record.overflow {
            Item::Rejected {
                what: record.name(),
                reason: record.too_big(),
            }
        } else {
            Item::Entry(entry_of(&record.tags))
        };
        self.ready.push_back(item);
    }

    fn flush_stray(&mut self) {
        if let Some(line) = self.stray.take() {
            self.ready.push_back(Item::Rejected {
                what: format!("line {line}"),
                reason: format!(
                    "line {line}: text outside any record (a record's lines start with a tag such as `PMID- `)"
                ),
            });
        }
    }
}

impl LineFormat for Medline {
    fn line(&mut self, number: usize, line: &str) {
        self.line = number;
        self.feed(line);
    }

    fn end(&mut self) {
        self.close();
        self.flush_stray();
    }

    fn ready(&mut self) -> &mut VecDeque<Item> {
        &mut self.ready
    }
}

/// A record's fields as an [`Entry`].
fn entry_of(tags: &[(String, String)]) -> Entry {
    let all = |name: &'static str| {
        tags.iter()
            .filter(move |(t, v)| t == name && !v.is_empty())
            .map(|(_, v)| v.as_str())
    };
    let first = |names: &[&'static str]| names.iter().find_map(|n| all(n).next()).map(String::from);
    let pmid = all("PMID").next().filter(|p| is_pmid(p)).map(String::from);
    let pmcid = all("PMC").next().map(String::from);
    // The article's own DOI: `LID`/`AID - 10.1001/jama.2019.11921 [doi]`.
    let doi = all("LID")
        .chain(all("AID"))
        .find_map(|v| v.strip_suffix("[doi]"))
        .map(|d| d.trim().to_string());
    // Full names where PubMed has them (`FAU - Smith, John A`, followed by that author's
    // `AU  - Smith JA`), else the short form: an author with no `FAU` in a record where others
    // have one is kept too. A group author (`CN`) as it is written.
    let mut authors = Vec::new();
    let mut after_full = false;
    for (tag, value) in tags.iter().filter(|(_, v)| !v.is_empty()) {
        match tag.as_str() {
            "FAU" => {
                authors.push(value.clone());
                after_full = true;
            }
            "AU" if after_full => after_full = false,
            "AU" => authors.push(short_name(value)),
            _ => {}
        }
    }
    authors.extend(all("CN").map(String::from));
    // No citation key: a PubMed id is none, and an export makes one from author and year.
    let mut entry = Entry {
        doi,
        pmid,
        pmcid,
        title: first(&["TI", "BTI"]),
        authors,
        issued: all("DP").find_map(issued_from_dp),
        container_title: first(&["JT", "TA"]),
        ..Entry::default()
    };
    // The authors' own keywords; MeSH headings (`MH`) are the indexers' and too many to be tags.
    for keyword in all("OT") {
        if !entry.tags.iter().any(|t| t == keyword) {
            entry.tags.push(keyword.to_string());
        }
    }
    entry
}

/// `Smith JA` as "Smith, JA"; a one-word name as it is.
fn short_name(name: &str) -> String {
    match name.rsplit_once(' ') {
        Some((family, initials)) => format!("{}, {initials}", family.trim()),
        None => name.to_string(),
    }
}

/// A MEDLINE date (`2019 Aug 27`, `2019 Aug`, `2019 Aug-Sep`, `2019 Spring`, `2019`) as
/// `YYYY`, `YYYY-MM` or `YYYY-MM-DD`, as much of it as is there.
fn issued_from_dp(text: &str) -> Option<String> {
    let mut words = text.split_whitespace();
    let year = words.next()?;
    if year.len() != 4 {
        return None;
    }
    let year = year.parse().ok()?;
    let month = words
        .next()
        .and_then(|m| month_number(m.split('-').next().unwrap_or(m)));
    let day = month.and(words.next().and_then(|d| d.parse().ok()));
    issued_from_parts(year, month, day)
}

#[cfg(test)]
mod tests {
    use super::super::reference_file::MAX_RECORD_BYTES;
    use super::*;

    const CITATIONS: &str = include_str!("../../../tests-fixtures/references/pubmed.nbib");

    fn read(text: &str) -> Vec<Item> {
        MedlineReader::new(text.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .expect("reading from memory does not fail")
    }

    fn entries(items: &[Item]) -> Vec<&Entry> {
        items
            .iter()
            .filter_map(|i| match i {
                Item::Entry(e) => Some(e),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn pubmeds_export_reads_as_one_entry_per_record_with_its_fields() {
        let items = read(CITATIONS);
        let found = entries(&items);
        assert_eq!(found.len(), 3, "{items:?}");
        assert_eq!(found.len(), items.len(), "nothing rejected: {items:?}");
        let first = found[0];
        assert_eq!(first.pmid.as_deref(), Some("31452104"));
        assert_eq!(first.key, None, "a PubMed id is no citation key");
        assert_eq!(first.doi.as_deref(), Some("10.1001/jama.2019.11921"));
        assert_eq!(
            first.title.as_deref(),
            Some(
                "Effect of Vitamin D Supplementation on Depression Scores in Older Adults: \
                 A Randomized Clinical Trial."
            ),
            "the wrapped title is one line"
        );
        assert_eq!(
            first.authors,
            ["Okereke, Olivia I", "Reynolds, Charles F 3rd"]
        );
        assert_eq!(first.issued.as_deref(), Some("2020-08-04"));
        assert_eq!(first.container_title.as_deref(), Some("JAMA"));
        assert_eq!(first.tags, ["depression", "vitamin D"]);

        // No DOI and no full names: the PubMed id is what is fetched, short names are kept.
        let second = found[1];
        assert_eq!(
            (second.pmid.as_deref(), second.doi.as_deref()),
            (Some("12345678"), None)
        );
        assert_eq!(second.authors, ["Doe, J", "WHO Study Group"]);
        assert_eq!(second.issued.as_deref(), Some("2003-07"));
        assert_eq!(second.container_title.as_deref(), Some("Lancet"));

        // A book chapter: its title is the book's, the season is the year's.
        let third = found[2];
        assert_eq!(third.title.as_deref(), Some("A Handbook of Things."));
        assert_eq!(third.issued.as_deref(), Some("2019"));
    }

    /// An author PubMed gives no full name, among others it does, is kept, in order.
    #[test]
    fn an_author_without_a_full_name_among_others_is_kept() {
        let text = "PMID- 1\nTI  - T.\nFAU - Smith, John A\nAU  - Smith JA\n\
                    AD  - A university.\nAU  - Doe J\nFAU - Roe, Ann\nAU  - Roe A\n";
        let items = read(text);
        let found = entries(&items);
        assert_eq!(found[0].authors, ["Smith, John A", "Doe, J", "Roe, Ann"]);
    }

    #[test]
    fn tags_are_read_strictly_enough() {
        assert_eq!(medline_tag("PMID- 31452104"), Some(("PMID", "31452104")));
        assert_eq!(medline_tag("TI  - A title"), Some(("TI", "A title")));
        assert_eq!(medline_tag("FAU - Smith, J"), Some(("FAU", "Smith, J")));
        assert_eq!(medline_tag("AB  -"), Some(("AB", "")));
        assert_eq!(medline_tag("      continued text"), None);
        assert_eq!(medline_tag("TY  - JOUR"), Some(("TY", "JOUR")));
        assert_eq!(medline_tag("ti  - lower"), None);
        assert_eq!(medline_tag("PMID-31452104"), None);
        assert_eq!(medline_tag("https://pubmed.ncbi.nlm.nih.gov/1/"), None);
        assert_eq!(medline_tag("ÄU  - x"), None);
    }

    #[test]
    fn dates_take_as_much_as_is_there() {
        assert_eq!(issued_from_dp("2019 Aug 27").as_deref(), Some("2019-08-27"));
        assert_eq!(issued_from_dp("2019 Aug-Sep").as_deref(), Some("2019-08"));
        assert_eq!(issued_from_dp("2019 Spring").as_deref(), Some("2019"));
        assert_eq!(issued_from_dp("2019").as_deref(), Some("2019"));
        assert_eq!(issued_from_dp("Aug 2019"), None);
    }

    #[test]
    fn text_outside_a_record_is_named_and_records_without_blank_lines_are_apart() {
        let items = read("stray words\nmore of them\n\nPMID- 1\nTI  - One.\nPMID- 2\nTI  - Two.\n");
        assert_eq!(
            items[0],
            Item::Rejected {
                what: "line 1".into(),
                reason: "line 1: text outside any record (a record's lines start with a tag \
                         such as `PMID- `)"
                    .into()
            }
        );
        let titles: Vec<_> = entries(&items)
            .iter()
            .map(|e| (e.pmid.clone(), e.title.clone()))
            .collect();
        assert_eq!(
            titles,
            [
                (Some("1".into()), Some("One.".into())),
                (Some("2".into()), Some("Two.".into()))
            ]
        );
    }

    #[test]
    fn a_record_too_big_is_rejected_by_its_pubmed_id_without_being_held() {
        let mut text = String::from("PMID- 424242\nAB  - ");
        let line = "x".repeat(1000);
        for _ in 0..(MAX_RECORD_BYTES / 1000 + 10) {
            text.push_str("      ");
            text.push_str(&line);
            text.push('\n');
        }
        text.push_str("\nPMID- 7\nTI  - After it.\n");
        let items = read(&text);
        assert!(
            matches!(&items[0], Item::Rejected { what, reason }
                if what == "424242" && reason.contains("MiB, not read")),
            "{:?}",
            items[0]
        );
        assert_eq!(entries(&items)[0].title.as_deref(), Some("After it."));
    }

    #[test]
    fn a_records_pmc_id_is_read() {
        let items = read("PMID- 23903748\nTI  - A paper\nPMC - PMC4221854\n\n");
        assert_eq!(entries(&items)[0].pmcid.as_deref(), Some("PMC4221854"));
    }
}
