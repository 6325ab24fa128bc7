//! RIS, as Zotero, EndNote and Mendeley import it: `ELEC` for web pages, `JOUR` for papers in a
//! journal, `GEN` for other papers. Lines end in CRLF, as the RIS specification says, so that
//! any importer that follows it reads them; dates are `YYYY/MM/DD/`.

use std::io::Write;

use super::record::{Date, Kind, Person, Record, given_and_suffix};

pub fn write(out: &mut dyn Write, records: &[Record]) -> std::io::Result<()> {
    for record in records {
        out.write_all(entry(record).as_bytes())?;
    }
    Ok(())
}

/// A record as one RIS entry, a blank line after it.
pub fn entry(r: &Record) -> String {
    let mut out = String::new();
    let mut tag = |tag: &str, value: &str| {
        let value = one_line(value);
        if !value.is_empty() || tag == "ER" {
            out.push_str(tag);
            out.push_str("  - ");
            out.push_str(&value);
            out.push_str("\r\n");
        }
    };
    tag(
        "TY",
        match r.kind {
            Kind::WebPage => "ELEC",
            Kind::Article => "JOUR",
            Kind::Paper => "GEN",
            Kind::ConferencePaper => "CONF",
            Kind::Chapter => "CHAP",
        },
    );
    tag("ID", &r.key);
    if let Some(t) = &r.title {
        tag("TI", t);
    }
    for person in &r.authors {
        match person {
            // RIS writes a suffix last: "Family, Given, Jr.".
            Person::Name {
                family,
                given: Some(given),
            } => match given_and_suffix(given) {
                (given, Some(suffix)) => tag("AU", &format!("{family}, {given}, {suffix}")),
                (given, None) => tag("AU", &format!("{family}, {given}")),
            },
            Person::Name {
                family,
                given: None,
            } => tag("AU", family),
            Person::Literal(text) => tag("AU", text),
        }
    }
    if let Some(d) = &r.issued {
        tag("PY", &format!("{:04}", d.year));
        tag("DA", &ris_date(d));
    }
    // T2 is the journal of a `JOUR` and the website of an `ELEC` (Zotero reads it so).
    let container = match r.kind {
        // A paper's site (arXiv.org, a publisher's) is no container of it.
        Kind::Article | Kind::Paper | Kind::ConferencePaper | Kind::Chapter => r.container.as_ref(),
        Kind::WebPage => r.site_name.as_ref().or(r.container.as_ref()),
    };
    if let Some(c) = container {
        tag("T2", c);
    }
    if let Some(doi) = &r.doi {
        tag("DO", doi);
    }
    // An accession number, as arXiv's and PubMed's own records carry it.
    if let Some(a) = &r.arxiv {
        tag("AN", &format!("arXiv:{a}"));
    } else if let Some(p) = &r.pmid {
        tag("AN", p);
        tag("DB", "PubMed");
    }
    if let Some(p) = &r.pmcid {
        tag("N1", &format!("PMCID: {p}"));
    }
    if let Some(url) = &r.url {
        tag("UR", url);
    }
    if let Some(d) = &r.accessed {
        tag("Y2", &ris_date(d));
    }
    if let Some(l) = &r.language {
        tag("LA", l);
    }
    if let Some(a) = &r.abstract_text {
        tag("AB", a);
    }
    for t in &r.tags {
        tag("KW", t);
    }
    tag("ER", "");
    out.push_str("\r\n");
    out
}

/// `YYYY/MM/DD/`, with what is unknown left empty (`2013/08//`).
fn ris_date(d: &Date) -> String {
    let two = |n: Option<u8>| n.map(|n| format!("{n:02}")).unwrap_or_default();
    format!("{:04}/{}/{}/", d.year, two(d.month), two(d.day))
}

/// A value on one line: a line break would end it, and the next line could read as a tag.
fn one_line(value: &str) -> String {
    value
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .filter(|c| !c.is_control())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> Record {
        Record {
            job_id: 1,
            kind: Kind::Article,
            key: "kucsko2013".into(),
            imported_key: None,
            title: Some("Nanometre-scale thermometry\nin a living cell".into()),
            authors: vec![Person::Name {
                family: "Kucsko".into(),
                given: Some("G.".into()),
            }],
            issued: Some(Date {
                year: 2013,
                month: Some(8),
                day: None,
            }),
            container: Some("Nature".into()),
            site_name: Some("nature.com".into()),
            doi: Some("10.1038/nature12373".into()),
            arxiv: None,
            pmid: None,
            pmcid: None,
            url: Some("https://doi.org/10.1038/nature12373".into()),
            url_is_identifier: true,
            accessed: Some(Date {
                year: 2024,
                month: Some(3),
                day: Some(14),
            }),
            language: None,
            abstract_text: None,
            tags: vec!["quantum sensing".into(), "thermometry".into()],
            host: None,
        }
    }

    #[test]
    fn a_journal_paper_is_a_jour_entry_with_crlf_lines() {
        assert_eq!(
            entry(&record()),
            "TY  - JOUR\r\nID  - kucsko2013\r\nTI  - Nanometre-scale thermometry in a living cell\r\n\
             AU  - Kucsko, G.\r\nPY  - 2013\r\nDA  - 2013/08//\r\nT2  - Nature\r\n\
             DO  - 10.1038/nature12373\r\nUR  - https://doi.org/10.1038/nature12373\r\n\
             Y2  - 2024/03/14/\r\nKW  - quantum sensing\r\nKW  - thermometry\r\nER  - \r\n\r\n"
        );
    }

    #[test]
    fn web_pages_are_elec_and_pubmed_ids_accession_numbers() {
        let page = entry(&Record {
            kind: Kind::WebPage,
            container: None,
            doi: None,
            ..record()
        });
        assert!(page.starts_with("TY  - ELEC\r\n"), "{page}");
        assert!(page.contains("T2  - nature.com\r\n"), "{page}");
        let pubmed = entry(&Record {
            kind: Kind::Paper,
            doi: None,
            pmid: Some("31452104".into()),
            ..record()
        });
        assert!(pubmed.starts_with("TY  - GEN\r\n"), "{pubmed}");
        assert!(
            pubmed.contains("AN  - 31452104\r\nDB  - PubMed\r\n"),
            "{pubmed}"
        );
    }

    #[test]
    fn what_this_writes_gleaners_own_reader_reads_back() {
        use crate::engine::intake::{Item, ris::RisReader};
        let text = entry(&Record {
            kind: Kind::Paper,
            doi: None,
            arxiv: Some("1706.03762".into()),
            ..record()
        });
        let items: Vec<Item> = RisReader::new(text.as_bytes())
            .collect::<Result<_, _>>()
            .expect("read from memory");
        let [Item::Entry(e)] = items.as_slice() else {
            panic!("one entry: {items:?}")
        };
        assert_eq!(e.key.as_deref(), Some("kucsko2013"));
        assert_eq!(e.arxiv.as_deref(), Some("arXiv:1706.03762"));
        assert_eq!(
            e.title.as_deref(),
            Some("Nanometre-scale thermometry in a living cell")
        );
        assert_eq!(e.authors, ["Kucsko, G."]);
        assert_eq!(e.issued.as_deref(), Some("2013-08"));
        assert_eq!(
            e.container_title.as_deref(),
            Some("Nature"),
            "a paper's site is not its container"
        );
        assert_eq!(e.tags, ["quantum sensing", "thermometry"]);
    }
}
