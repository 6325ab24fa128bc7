//! BibTeX in biblatex's data model (read by biber): `@online` for web pages, `@article` for
//! papers in a journal, `@inproceedings` and `@incollection` (with `booktitle`) for
//! conference papers and chapters, `@misc` for other papers. Dates are `date`, journals `journaltitle`, the
//! access date `urldate`; arXiv and PubMed ids are `eprint` with `eprinttype`, which biblatex's
//! standard styles print and link (a `pmid` field is not in its data model, and biber drops it).

use std::io::Write;

use super::record::{Kind, Person, Record, given_and_suffix};

/// One entry per record, a blank line after each.
pub fn write(out: &mut dyn Write, records: &[Record]) -> std::io::Result<()> {
    for record in records {
        out.write_all(entry(record).as_bytes())?;
    }
    Ok(())
}

/// A record as one biblatex entry.
pub fn entry(r: &Record) -> String {
    let kind = match r.kind {
        Kind::WebPage => "online",
        Kind::Article => "article",
        Kind::Paper => "misc",
        Kind::ConferencePaper => "inproceedings",
        Kind::Chapter => "incollection",
    };
    let mut fields: Vec<(&str, String)> = Vec::new();
    if !r.authors.is_empty() {
        let names: Vec<String> = r.authors.iter().map(name).collect();
        fields.push(("author", names.join(" and ")));
    }
    if let Some(t) = &r.title {
        fields.push(("title", protect_case(&escape(t))));
    }
    match r.kind {
        Kind::Article => {
            if let Some(c) = &r.container {
                fields.push(("journaltitle", protect_case(&escape(c))));
            }
        }
        // `organization` is a list: a site named "X and Y" is kept one name by its braces.
        Kind::WebPage => {
            if let Some(site) = r.site_name.as_ref().or(r.container.as_ref()) {
                fields.push(("organization", protect_and(&escape(site))));
            }
        }
        // The proceedings or the book it is in.
        Kind::ConferencePaper | Kind::Chapter => {
            if let Some(c) = &r.container {
                fields.push(("booktitle", protect_case(&escape(c))));
            }
        }
        // A paper's site (arXiv.org, a publisher's) is not who published it; its e-print
        // fields say where it is.
        Kind::Paper => {}
    }
    if let Some(d) = &r.issued {
        fields.push(("date", d.iso()));
    }
    if let Some(doi) = &r.doi {
        fields.push(("doi", verbatim(doi)));
    }
    let eprint = match (&r.arxiv, &r.pmid, &r.pmcid) {
        (Some(a), _, _) => Some((a, "arxiv")),
        (None, Some(p), _) => Some((p, "pubmed")),
        (None, None, Some(p)) => Some((p, "PMCID")),
        _ => None,
    };
    if let Some((id, kind)) = eprint {
        fields.push(("eprint", verbatim(id)));
        fields.push(("eprinttype", kind.to_string()));
    }
    // The identifier's own link says no more than `doi` or `eprint`, which biblatex links.
    if let Some(url) = r.url.as_ref().filter(|_| !r.url_is_identifier) {
        fields.push(("url", verbatim(url)));
    }
    if let Some(d) = &r.accessed {
        fields.push(("urldate", d.iso()));
    }
    if let Some(a) = &r.abstract_text {
        fields.push(("abstract", escape(a)));
    }
    if !r.tags.is_empty() {
        // biblatex splits keywords at commas: a tag holding one is braced whole.
        let tags: Vec<String> = r
            .tags
            .iter()
            .map(|t| {
                let t = escape(t);
                if t.contains(',') {
                    format!("{{{t}}}")
                } else {
                    t
                }
            })
            .collect();
        fields.push(("keywords", tags.join(", ")));
    }
    let mut out = format!("@{kind}{{{},\n", r.key);
    for (name, value) in fields {
        out.push_str(&format!("  {name} = {{{value}}},\n"));
    }
    out.push_str("}\n\n");
    out
}

/// An author as BibTeX reads names: "Family, Given"; a literal name braced whole, so that it is
/// not split into given and family names.
fn name(person: &Person) -> String {
    match person {
        Person::Name { family, given } => {
            let family = protect_and(&escape(family));
            // BibTeX's own place for a suffix: "Family, Jr., Given".
            match given.as_deref().map(given_and_suffix) {
                Some((g, Some(suffix))) => {
                    format!("{family}, {}, {}", escape(suffix), protect_and(&escape(g)))
                }
                Some((g, None)) => format!("{family}, {}", protect_and(&escape(g))),
                None => family,
            }
        }
        Person::Literal(text) => format!("{{{}}}", escape(text)),
    }
}

/// Words whose capitals are not only a first letter (`DNA`, `iPhone`, `McLean`) braced, so
/// that a style that lowers a title's case (APA's sentence case) keeps them.
fn protect_case(escaped: &str) -> String {
    escaped
        .split(' ')
        .map(|word| {
            let inner_capital = word.chars().skip(1).any(|c| c.is_uppercase());
            // A word that opens with a command would become a "special character" group.
            if inner_capital && !word.starts_with('\\') {
                format!("{{{word}}}")
            } else {
                word.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A value with " and " in it braced, so that a name list does not split there.
fn protect_and(value: &str) -> String {
    if value.to_lowercase().contains(" and ") {
        format!("{{{value}}}")
    } else {
        value.to_string()
    }
}

/// Text for a field: TeX's special characters escaped, white space one space. Everything else
/// stays UTF-8, which biber reads.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for word in text.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        for c in word.chars() {
            match c {
                '\\' => out.push_str("\\textbackslash{}"),
                '^' => out.push_str("\\textasciicircum{}"),
                '~' => out.push_str("\\textasciitilde{}"),
                // `\{` counts as a brace to BibTeX's parser: a lone one unbalances the file.
                '{' => out.push_str("\\textbraceleft{}"),
                '}' => out.push_str("\\textbraceright{}"),
                '%' | '&' | '$' | '#' | '_' => {
                    out.push('\\');
                    out.push(c);
                }
                c if c.is_control() => {}
                c => out.push(c),
            }
        }
    }
    out
}

/// A verbatim field (`url`, `doi`, `eprint`), which biber takes as written: only what would
/// end the value early or unbalance its braces is percent-encoded.
pub fn verbatim(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.trim().chars() {
        match c {
            '{' => out.push_str("%7B"),
            '}' => out.push_str("%7D"),
            '\\' => out.push_str("%5C"),
            c if c.is_whitespace() => out.push_str("%20"),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::export::record::Date;

    fn base() -> Record {
        Record {
            job_id: 1,
            kind: Kind::WebPage,
            key: "doe2021notes".into(),
            imported_key: None,
            title: Some("Notes from the field".into()),
            authors: vec![Person::Literal("Jane Doe".into())],
            issued: Some(Date {
                year: 2021,
                month: Some(5),
                day: Some(6),
            }),
            container: None,
            site_name: Some("Example Notes".into()),
            doi: None,
            arxiv: None,
            pmid: None,
            pmcid: None,
            url: Some("https://www.example.org/notes?a=1&b=50%".into()),
            url_is_identifier: false,
            accessed: Some(Date {
                year: 2024,
                month: Some(3),
                day: Some(14),
            }),
            language: Some("en".into()),
            abstract_text: None,
            tags: vec!["rivers".into(), "field work".into()],
            host: Some("www.example.org".into()),
        }
    }

    #[test]
    fn a_web_page_is_an_online_entry_with_its_site_and_access_date() {
        assert_eq!(
            entry(&base()),
            "@online{doe2021notes,\n  author = {{Jane Doe}},\n  title = {Notes from the field},\n  \
             organization = {Example Notes},\n  date = {2021-05-06},\n  \
             url = {https://www.example.org/notes?a=1&b=50%},\n  urldate = {2024-03-14},\n  \
             keywords = {rivers, field work},\n}\n\n"
        );
    }

    #[test]
    fn a_journal_paper_is_an_article_with_its_doi_and_no_doi_link() {
        let r = Record {
            kind: Kind::Article,
            key: "kucsko2013".into(),
            authors: vec![
                Person::Name {
                    family: "Kucsko".into(),
                    given: Some("G.".into()),
                },
                Person::Name {
                    family: "Smith and Sons".into(),
                    given: None,
                },
            ],
            container: Some("Nature".into()),
            doi: Some("10.1038/nature12373".into()),
            url: Some("https://doi.org/10.1038/nature12373".into()),
            url_is_identifier: true,
            tags: Vec::new(),
            ..base()
        };
        let e = entry(&r);
        assert!(e.starts_with("@article{kucsko2013,\n"), "{e}");
        assert!(
            e.contains("  author = {Kucsko, G. and {Smith and Sons}},\n"),
            "{e}"
        );
        assert!(e.contains("  journaltitle = {Nature},\n"), "{e}");
        assert!(e.contains("  doi = {10.1038/nature12373},\n"), "{e}");
        assert!(!e.contains("url = "), "{e}");
        assert!(e.contains("  urldate = {2024-03-14},\n"), "{e}");
    }

    #[test]
    fn arxiv_and_pubmed_ids_are_eprints_of_their_type() {
        let arxiv = entry(&Record {
            kind: Kind::Paper,
            arxiv: Some("1706.03762".into()),
            site_name: None,
            ..base()
        });
        assert!(arxiv.starts_with("@misc{"), "{arxiv}");
        assert!(
            arxiv.contains("  eprint = {1706.03762},\n  eprinttype = {arxiv},\n"),
            "{arxiv}"
        );
        let pubmed = entry(&Record {
            kind: Kind::Paper,
            pmid: Some("31452104".into()),
            ..base()
        });
        assert!(
            pubmed.contains("  eprint = {31452104},\n  eprinttype = {pubmed},\n"),
            "{pubmed}"
        );
    }

    #[test]
    fn tex_specials_are_escaped_and_unicode_kept() {
        assert_eq!(
            escape("R&D: 100% of $5 #1 a_b ^ ~ \\ {x} Müller"),
            "R\\&D: 100\\% of \\$5 \\#1 a\\_b \\textasciicircum{} \\textasciitilde{} \
             \\textbackslash{} \\textbraceleft{}x\\textbraceright{} Müller"
        );
        // A lone brace leaves the field's braces balanced.
        let lone = escape("Über Flüsse { offen } end}");
        let depth = lone.chars().try_fold(0i32, |d, c| {
            let d = d + match c {
                '{' => 1,
                '}' => -1,
                _ => 0,
            };
            (d >= 0).then_some(d)
        });
        assert_eq!(depth, Some(0), "{lone}");
        assert_eq!(
            protect_case("The DNA of an iPhone in R\\&D, Said Smith"),
            "The {DNA} of an {iPhone} in {R\\&D,} Said Smith"
        );
        assert_eq!(escape("two\n\nlines\t here"), "two lines here");
    }

    #[test]
    fn verbatim_fields_keep_urls_and_balance_braces() {
        assert_eq!(
            verbatim("https://e.org/a_b?q=50%&x=#frag"),
            "https://e.org/a_b?q=50%&x=#frag"
        );
        assert_eq!(
            verbatim("https://e.org/{x}\\y z"),
            "https://e.org/%7Bx%7D%5Cy%20z"
        );
    }
}
