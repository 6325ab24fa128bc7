//! RIS files (`.ris`), as Zotero, EndNote, Mendeley and publishers' sites export them, read a
//! line at a time: `TY  - ` opens an entry, `ER  - ` closes it, a line without a tag goes on
//! the value before it.

use std::collections::VecDeque;
use std::io::BufRead;

use super::entry::{Entry, Item};
use super::line_reader::{LineFormat, LineReader};
use super::reference_file::{
    TaggedRecord, arxiv_in_text, csl_type, is_arxiv_id, is_key_like, is_pmid, issued_from_ymd,
    pmcid_in_note, pmid_in_note, ris_tag,
};

/// Why a RIS file could not be read to its end.
#[derive(Debug, thiserror::Error)]
pub enum RisError {
    #[error("could not read the RIS file: {0}")]
    Read(#[from] std::io::Error),
}

/// Read a RIS file, handing each item to `on_item` in file order.
pub fn read_ris<R: BufRead>(reader: R, mut on_item: impl FnMut(Item)) -> Result<(), RisError> {
    for item in RisReader::new(reader) {
        on_item(item?);
    }
    Ok(())
}

/// The items of a RIS file in file order: an entry per `TY`…`ER`, a rejection per malformed
/// one (an `ER` without its `TY`, tags outside any entry, an entry not closed). An I/O error
/// ends it.
pub type RisReader<R> = LineReader<R, Ris>;

/// The reading of RIS lines into items (see [`RisReader`]).
#[derive(Default)]
pub struct Ris {
    line: usize,
    open: Option<TaggedRecord>,
    /// The first line of tags found outside any entry, not yet told.
    stray: Option<usize>,
    ready: VecDeque<Item>,
}

impl<R: BufRead> RisReader<R> {
    pub fn new(reader: R) -> Self {
        Self::with(reader, Ris::default())
    }
}

impl Ris {
    fn feed(&mut self, line: &str) {
        let Some((tag, value)) = ris_tag(line) else {
            // A value that goes on over lines (an abstract, EndNote's notes).
            if let Some(open) = self.open.as_mut() {
                open.go_on(line.trim());
            }
            return;
        };
        match tag {
            "TY" => {
                self.flush_stray();
                if let Some(open) = self.open.take() {
                    self.reject(
                        &open,
                        format!(
                            "line {}: not closed with `ER  - ` before the next `TY` on line {}",
                            open.line, self.line
                        ),
                    );
                }
                let mut open = TaggedRecord::new(self.line, "ID");
                // Its type, which an export keeps (a `CONF` went out as a journal article).
                open.push(tag, value);
                self.open = Some(open);
            }
            "ER" => match self.open.take() {
                Some(open) if open.overflow => {
                    let reason = open.too_big();
                    self.reject(&open, reason);
                }
                Some(open) => self.ready.push_back(Item::Entry(entry_of(&open.tags))),
                None => {
                    self.flush_stray();
                    self.ready.push_back(Item::Rejected {
                        what: format!("line {}", self.line),
                        reason: format!(
                            "line {}: `ER  - ` closes no entry (no `TY  - ` before it)",
                            self.line
                        ),
                    });
                }
            },
            _ => match self.open.as_mut() {
                Some(open) => open.push(tag, value),
                None => {
                    self.stray.get_or_insert(self.line);
                }
            },
        }
    }

    fn flush_stray(&mut self) {
        if let Some(line) = self.stray.take() {
            self.ready.push_back(Item::Rejected {
                what: format!("line {line}"),
                reason: format!("line {line}: tags outside any entry (no `TY  - ` before them)"),
            });
        }
    }

    fn reject(&mut self, open: &TaggedRecord, reason: String) {
        self.ready.push_back(Item::Rejected {
            what: open.name(),
            reason,
        });
    }
}

impl LineFormat for Ris {
    fn line(&mut self, number: usize, line: &str) {
        self.line = number;
        self.feed(line);
    }

    fn end(&mut self) {
        self.flush_stray();
        if let Some(open) = self.open.take() {
            let reason = format!(
                "line {}: not closed with `ER  - ` before the end of the file",
                open.line
            );
            self.reject(&open, reason);
        }
    }

    fn ready(&mut self) -> &mut VecDeque<Item> {
        &mut self.ready
    }
}

/// An entry's tags as an [`Entry`].
fn entry_of(tags: &[(String, String)]) -> Entry {
    let first = |names: &[&str]| {
        names.iter().find_map(|name| {
            tags.iter()
                .find(|(t, v)| t == name && !v.is_empty())
                .map(|(_, v)| v.clone())
        })
    };
    let all = |names: &'static [&'static str]| {
        tags.iter()
            .filter(move |(t, v)| names.contains(&t.as_str()) && !v.is_empty())
            .map(|(_, v)| v.as_str())
    };
    let mut entry = Entry {
        key: first(&["ID"]).filter(|k| is_key_like(k)),
        doi: first(&["DO"]),
        url: all(&["UR", "L1", "L2"])
            .flat_map(|v| v.split([';', ' ']))
            .map(str::trim)
            .find(|u| {
                let lower = u.to_ascii_lowercase();
                lower.starts_with("http://") || lower.starts_with("https://")
            })
            .map(str::to_string),
        title: first(&["TI", "T1"]),
        authors: all(&["AU", "A1"]).filter_map(person).collect(),
        // The longest of the dates given (`DA  - 2013/07/31/` says more than `PY  - 2013`).
        issued: all(&["PY", "Y1", "DA"])
            .filter_map(issued_from_ymd)
            .reduce(|best, d| if d.len() > best.len() { d } else { best }),
        container_title: first(&["JF", "T2", "JO", "JA"]),
        kind: first(&["TY"])
            .and_then(|t| csl_type(&t))
            .map(str::to_string),
        ..Entry::default()
    };
    // One keyword a line; some exporters put several on one, between semicolons. A comma
    // belongs to a keyword (`Neoplasms, Experimental`).
    for keyword in all(&["KW"]).flat_map(|k| k.split(';')).map(str::trim) {
        if !keyword.is_empty() && !entry.tags.iter().any(|t| t == keyword) {
            entry.tags.push(keyword.to_string());
        }
    }
    // A PubMed id only where it is plainly one: `PMID: …` in a note, or the accession number
    // of a record from PubMed or MEDLINE.
    let from_pubmed = all(&["DB", "DP"]).any(|v| {
        let v = v.to_ascii_lowercase();
        v.contains("pubmed") || v.contains("medline") || v == "nlm"
    });
    entry.pmid = all(&["AN", "M1", "N1"]).find_map(pmid_in_note).or_else(|| {
        all(&["AN"])
            .find(|an| from_pubmed && is_pmid(an.trim()))
            .map(|an| an.trim().to_string())
    });
    entry.pmcid = all(&["N1", "M1", "AN"]).find_map(pmcid_in_note);
    entry.arxiv = all(&["AN", "M1", "M3"])
        .find(|v| v.to_ascii_lowercase().starts_with("arxiv:") && is_arxiv_id(v))
        .map(str::to_string)
        .or_else(|| all(&["JF", "T2", "JO", "N1"]).find_map(arxiv_in_text));
    entry
}

/// A RIS name (`Family, Given`, `Family, Given, Suffix`, or one name) as "Family, Given".
fn person(name: &str) -> Option<String> {
    // RIS says "Family, Given"; some programs write "Given Family" or "Family GK" anyway.
    if let Some(turned) = crate::engine::person_name::family_first_or_initials(name) {
        return Some(turned);
    }
    let mut parts = name.split(',').map(str::trim);
    let family = parts.next().unwrap_or_default();
    let given = parts
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    match (family.is_empty(), given.is_empty()) {
        (true, true) => None,
        (false, true) => Some(family.to_string()),
        (true, false) => Some(given),
        (false, false) => Some(format!("{family}, {given}")),
    }
}

#[cfg(test)]
mod tests {
    use super::super::reference_file::MAX_TAGS;
    use super::*;

    const LIBRARY: &str = include_str!("../../../tests-fixtures/references/library.ris");

    fn read(text: &str) -> Vec<Item> {
        read_bytes(text.as_bytes())
    }

    fn read_bytes(bytes: &[u8]) -> Vec<Item> {
        RisReader::new(bytes)
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

    fn rejected(items: &[Item]) -> Vec<(&str, &str)> {
        items
            .iter()
            .filter_map(|i| match i {
                Item::Rejected { what, reason } => Some((what.as_str(), reason.as_str())),
                _ => None,
            })
            .collect()
    }

    fn one(text: &str) -> Entry {
        match read(text).as_slice() {
            [Item::Entry(e)] => e.clone(),
            other => panic!("{text}: {other:?}"),
        }
    }

    #[test]
    fn a_record_number_is_no_citation_key() {
        let key = |id: &str| one(&format!("TY  - JOUR\nID  - {id}\nDO  - 10.1/a\nER  - \n")).key;
        assert_eq!(key("12345"), None);
        assert_eq!(key("lib/123"), None);
        assert_eq!(key("smith2020").as_deref(), Some("smith2020"));
    }

    #[test]
    fn a_record_keeps_its_type() {
        let kind = |ty: &str| one(&format!("TY  - {ty}\nDO  - 10.1/a\nER  - \n")).kind;
        assert_eq!(kind("CONF").as_deref(), Some("paper-conference"));
        assert_eq!(kind("CPAPER").as_deref(), Some("paper-conference"));
        assert_eq!(kind("CHAP").as_deref(), Some("chapter"));
        assert_eq!(kind("JOUR").as_deref(), Some("article-journal"));
        assert_eq!(kind("GEN"), None);
    }

    #[test]
    fn the_library_reads_in_file_order_with_malformed_records_named() {
        let items = read(LIBRARY);
        let names: Vec<String> = items
            .iter()
            .map(|i| match i {
                Item::Entry(e) => e.key.clone().unwrap_or_else(|| "-".into()),
                Item::Rejected { what, .. } => format!("rejected {what}"),
                Item::Skipped { what, .. } => format!("skipped {what}"),
            })
            .collect();
        assert_eq!(
            names,
            [
                "-",
                "-",
                "rejected line 47",
                "rejected line 49",
                "-",
                "rejected devlin2018",
                "-",
                "knuth1997",
                "rejected unfinished",
            ]
        );
        assert_eq!(
            rejected(&items),
            [
                (
                    "line 47",
                    "line 47: `ER  - ` closes no entry (no `TY  - ` before it)"
                ),
                (
                    "line 49",
                    "line 49: tags outside any entry (no `TY  - ` before them)"
                ),
                (
                    "devlin2018",
                    "line 62: not closed with `ER  - ` before the next `TY` on line 68"
                ),
                (
                    "unfinished",
                    "line 84: not closed with `ER  - ` before the end of the file"
                ),
            ]
        );
    }

    #[test]
    fn a_zotero_record_maps_every_tag() {
        let items = read(LIBRARY);
        let authors = [
            "Kucsko, G.",
            "Maurer, P. C.",
            "Yao, N. Y.",
            "Kubo, M.",
            "Noh, H. J.",
            "Lo, P. K.",
            "Park, H.",
            "Lukin, M. D.",
        ];
        assert_eq!(
            *entries(&items)[0],
            Entry {
                key: None,
                doi: Some("10.1038/nature12373".into()),
                arxiv: None,
                pmid: None,
                pmcid: None,
                url: Some("https://www.nature.com/articles/nature12373".into()),
                title: Some("Nanometre-scale thermometry in a living cell".into()),
                authors: authors.iter().map(|a| a.to_string()).collect(),
                issued: Some("2013-07-31".into()),
                container_title: Some("Nature".into()),
                tags: vec!["Nanoscale materials".into(), "Quantum physics".into()],
                kind: Some("article-journal".into()),
            }
        );
    }

    #[test]
    fn endnote_pubmed_and_report_records_map() {
        let items = read(LIBRARY);
        let all = entries(&items);
        let endnote = all[1];
        assert_eq!(
            endnote.key, None,
            "EndNote's record number is no citation key"
        );
        assert_eq!(endnote.title.as_deref(), Some("Attention Is All You Need"));
        assert_eq!(
            endnote.authors,
            ["Vaswani, Ashish", "Shazeer, Noam", "Parmar, Niki"]
        );
        assert_eq!(
            endnote.container_title.as_deref(),
            Some("Advances in Neural Information Processing Systems"),
            "JF before JO"
        );
        assert_eq!(endnote.issued.as_deref(), Some("2017"));
        assert_eq!(
            endnote.url.as_deref(),
            Some("https://papers.nips.cc/paper/7181-attention-is-all-you-need"),
            "the first http(s) link, not the PDF's internal path"
        );
        assert_eq!(endnote.arxiv.as_deref(), Some("arXiv:1706.03762"));
        assert_eq!(endnote.pmid, None, "a PMCID note is no PMID");
        assert_eq!(endnote.tags, ["attention", "transformers"]);
        let pubmed = all[2];
        assert_eq!(pubmed.pmid.as_deref(), Some("31452104"));
        assert_eq!(pubmed.issued.as_deref(), Some("2019-08-27"));
        assert_eq!(pubmed.tags, ["Humans", "Neoplasms, Experimental"]);
        let who = all[3];
        assert_eq!(who.authors, ["World Health Organization"]);
        assert_eq!(who.issued.as_deref(), Some("2020-03-11"));
        assert_eq!(
            who.url.as_deref(),
            Some("https://apps.who.int/iris/handle/10665/331475")
        );
        let knuth = all[4];
        assert_eq!((&knuth.doi, &knuth.url, &knuth.pmid), (&None, &None, &None));
        assert_eq!(knuth.authors, ["Knuth, Donald E."]);
    }

    #[test]
    fn a_pmid_only_where_it_is_plainly_one() {
        let pmid = |tags: &str| one(&format!("TY  - JOUR\n{tags}\nER  - \n")).pmid;
        assert_eq!(
            pmid("AN  - 31452104\nDB  - MEDLINE").as_deref(),
            Some("31452104")
        );
        assert_eq!(
            pmid("AN  - 31452104"),
            None,
            "an accession number of some database"
        );
        assert_eq!(pmid("AN  - WOS:000123\nDB  - PubMed"), None);
        assert_eq!(pmid("M1  - PMID: 31452104").as_deref(), Some("31452104"));
        assert_eq!(
            pmid("N1  - PMID: 31452104 PMCID: PMC1").as_deref(),
            Some("31452104")
        );
        assert_eq!(pmid("M1  - 31452104"), None);
    }

    #[test]
    fn dates_names_and_values_over_lines() {
        let e = one(
            "TY  - JOUR\nTI  - A title\n  that goes on\nAU  - King, Martin Luther, Jr.\nAU  - Smith,\n\
             AU  - \nAU  - Ada Lovelace\nAU  - Curie M\nAU  - World Health Organization\nPY  - 2013///\nY1  - 2013/07\nJO  - J. Things\nT2  - Journal of Things\nER  -\n",
        );
        assert_eq!(e.title.as_deref(), Some("A title that goes on"));
        assert_eq!(
            e.authors,
            [
                "King, Martin Luther Jr.",
                "Smith",
                "Lovelace, Ada",
                "Curie, M.",
                "World Health Organization"
            ]
        );
        assert_eq!(e.issued.as_deref(), Some("2013-07"));
        assert_eq!(
            e.container_title.as_deref(),
            Some("Journal of Things"),
            "T2 before JO"
        );
        let e = one("TY  - GEN\nDA  - July 31\nPY  - 2013\nJA  - Abbr.\nER  - \n");
        assert_eq!(
            e.issued.as_deref(),
            Some("2013"),
            "an unreadable date is passed over"
        );
        assert_eq!(e.container_title.as_deref(), Some("Abbr."));
        let e = one("TY  - GEN\nT2  - arXiv preprint arXiv:1810.04805\nER  - \n");
        assert_eq!(e.arxiv.as_deref(), Some("1810.04805"));
    }

    #[test]
    fn empty_files_prose_crlf_and_a_byte_order_mark() {
        assert_eq!(read(""), []);
        assert_eq!(read("\n\n  \n"), []);
        assert_eq!(
            read("Exported from a reference manager\n"),
            [],
            "prose outside records"
        );
        let crlf = LIBRARY.replace('\n', "\r\n");
        assert_eq!(read(&crlf), read(LIBRARY));
        let bom = format!("\u{feff}{LIBRARY}");
        assert_eq!(read(&bom), read(LIBRARY));
    }

    #[test]
    fn a_5000_record_file_reads() {
        let mut text = String::new();
        for n in 0..5000 {
            text.push_str(&format!(
                "TY  - JOUR\r\nID  - r{n}\r\nTI  - Paper {n}\r\nDO  - 10.1000/{n}\r\nER  - \r\n\r\n"
            ));
        }
        let items = read(&text);
        assert_eq!(entries(&items).len(), 5000);
        assert_eq!(entries(&items)[4999].doi.as_deref(), Some("10.1000/4999"));
    }

    #[test]
    fn a_record_with_too_many_tags_is_rejected_without_being_held() {
        let mut text = String::from("TY  - JOUR\nID  - huge\n");
        for n in 0..MAX_TAGS + 5 {
            text.push_str(&format!("KW  - k{n}\n"));
        }
        text.push_str("ER  - \nTY  - JOUR\nDO  - 10.1000/after\nER  - \n");
        let items = read(&text);
        assert_eq!(
            rejected(&items),
            [("huge", "line 1: more than 10000 tags or 4 MiB, not read")]
        );
        assert_eq!(entries(&items).len(), 1);
        let text = format!(
            "TY  - JOUR\nID  - long\nAB  - start\n{}ER  - \nTY  - JOUR\nDO  - 10.1000/after\nER  - \n",
            format!("{}\n", "word ".repeat(1000)).repeat(1000)
        );
        let items = read(&text);
        assert_eq!(
            rejected(&items),
            [("long", "line 1: more than 10000 tags or 4 MiB, not read")],
            "an abstract that goes on over 5 MB of lines"
        );
        assert_eq!(entries(&items).len(), 1);
    }

    #[test]
    fn every_truncation_reads_without_panic_and_keeps_the_records_before_the_cut() {
        let full = read(LIBRARY);
        let full_entries = entries(&full);
        // Where each record of the full read ends: after the `ER  - ` that closes it.
        let (mut ends, mut open, mut at) = (Vec::new(), false, 0);
        for line in LIBRARY.split_inclusive('\n') {
            at += line.len();
            if line.starts_with("TY  - ") {
                open = true;
            } else if line.starts_with("ER  - ") && std::mem::take(&mut open) {
                ends.push(at);
            }
        }
        assert_eq!(ends.len(), full_entries.len());
        for cut in (0..=LIBRARY.len()).step_by(7).chain([LIBRARY.len()]) {
            let items = read_bytes(&LIBRARY.as_bytes()[..cut]);
            let complete = ends.iter().filter(|&&e| e <= cut).count();
            let got = entries(&items);
            assert!(got.len() >= complete, "cut at {cut}");
            assert_eq!(got[..complete], full_entries[..complete], "cut at {cut}");
        }
    }

    #[test]
    fn noise_never_panics() {
        let mut seed = 0x9e37_79b9_u32;
        let alphabet = b"TYERAU  - \n\r\n-ER  - TY  - JOUR\nab\xc3\xa9\xff";
        for _ in 0..300 {
            let len = (seed % 400) as usize;
            let bytes: Vec<u8> = (0..len)
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 17;
                    seed ^= seed << 5;
                    alphabet[seed as usize % alphabet.len()]
                })
                .collect();
            let _ = read_bytes(&bytes);
        }
    }

    #[test]
    fn a_pmc_id_in_a_note_is_read() {
        let e = one("TY  - JOUR\nTI  - A paper\nN1  - PMCID: PMC6738313\nER  - \n");
        assert_eq!(e.pmcid.as_deref(), Some("PMC6738313"));
    }
}
