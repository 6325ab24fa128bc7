//! CSL-JSON (the input format of citeproc, Zotero and pandoc): one array, an item a line.
//! Web pages are `webpage` (their site the `container-title`), papers in a journal
//! `article-journal`, other papers `article` (CSL's preprint or working paper).

use std::io::Write;

use serde_json::{Map, Value, json};

use super::ExportError;
use super::record::{Date, Kind, Person, Record, given_and_suffix};

/// The array, opened and closed even when it is empty.
pub fn write(out: &mut dyn Write, records: &[Record]) -> Result<(), ExportError> {
    out.write_all(b"[")?;
    for (n, record) in records.iter().enumerate() {
        out.write_all(if n == 0 { b"\n" } else { b",\n" })?;
        serde_json::to_writer(&mut *out, &item(record))?;
    }
    out.write_all(b"\n]\n")?;
    Ok(())
}

/// A record as one CSL item.
pub fn item(r: &Record) -> Value {
    let mut item = Map::new();
    let mut put = |k: &str, v: Value| {
        item.insert(k.to_string(), v);
    };
    put("id", json!(r.key));
    put("citation-key", json!(r.key));
    put(
        "type",
        json!(match r.kind {
            Kind::WebPage => "webpage",
            Kind::Article => "article-journal",
            Kind::Paper => "article",
            Kind::ConferencePaper => "paper-conference",
            Kind::Chapter => "chapter",
        }),
    );
    if let Some(t) = &r.title {
        put("title", json!(t));
    }
    if !r.authors.is_empty() {
        put("author", Value::Array(r.authors.iter().map(name).collect()));
    }
    if let Some(d) = &r.issued {
        put("issued", date(d));
    }
    if let Some(d) = &r.accessed {
        put("accessed", date(d));
    }
    let container = match r.kind {
        // A paper's site (arXiv.org, a publisher's) is no container of it.
        Kind::Article | Kind::Paper | Kind::ConferencePaper | Kind::Chapter => r.container.as_ref(),
        Kind::WebPage => r.site_name.as_ref().or(r.container.as_ref()),
    };
    if let Some(c) = container {
        put("container-title", json!(c));
    }
    if let Some(url) = &r.url {
        put("URL", json!(url));
    }
    if let Some(doi) = &r.doi {
        put("DOI", json!(doi));
    }
    if let Some(p) = &r.pmid {
        put("PMID", json!(p));
    }
    if let Some(p) = &r.pmcid {
        put("PMCID", json!(p));
    }
    // CSL has no arXiv variable: Zotero and citeproc-js write the id as the item's number.
    if let Some(a) = &r.arxiv {
        put("number", json!(format!("arXiv:{a}")));
        if r.kind == Kind::Paper {
            put("publisher", json!("arXiv"));
        }
    }
    if let Some(l) = &r.language {
        put("language", json!(l));
    }
    if let Some(a) = &r.abstract_text {
        put("abstract", json!(a));
    }
    if !r.tags.is_empty() {
        put("keyword", json!(r.tags.join(", ")));
    }
    Value::Object(item)
}

fn name(person: &Person) -> Value {
    match person {
        Person::Name {
            family,
            given: Some(given),
        } => match given_and_suffix(given) {
            (given, Some(suffix)) => json!({"family": family, "given": given, "suffix": suffix}),
            (given, None) => json!({"family": family, "given": given}),
        },
        Person::Name {
            family,
            given: None,
        } => json!({"family": family}),
        Person::Literal(text) => json!({"literal": text}),
    }
}

fn date(d: &Date) -> Value {
    json!({"date-parts": [d.parts()]})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> Record {
        Record {
            job_id: 2,
            kind: Kind::Paper,
            key: "vaswani2017attention".into(),
            imported_key: None,
            title: Some("Attention Is All You Need".into()),
            authors: vec![
                Person::Name {
                    family: "Vaswani".into(),
                    given: Some("Ashish".into()),
                },
                Person::Literal("Google Brain".into()),
            ],
            issued: Some(Date {
                year: 2017,
                month: Some(6),
                day: None,
            }),
            container: None,
            site_name: None,
            doi: None,
            arxiv: Some("1706.03762".into()),
            pmid: None,
            pmcid: None,
            url: Some("https://arxiv.org/abs/1706.03762".into()),
            url_is_identifier: true,
            accessed: Some(Date {
                year: 2024,
                month: Some(3),
                day: Some(14),
            }),
            language: Some("en".into()),
            abstract_text: Some("We propose.".into()),
            tags: vec!["ml".into(), "attention".into()],
            host: None,
        }
    }

    #[test]
    fn an_eprint_is_an_article_item_with_names_dates_and_its_id() {
        assert_eq!(
            item(&record()),
            json!({
                "id": "vaswani2017attention",
                "citation-key": "vaswani2017attention",
                "type": "article",
                "title": "Attention Is All You Need",
                "author": [{"family": "Vaswani", "given": "Ashish"}, {"literal": "Google Brain"}],
                "issued": {"date-parts": [[2017, 6]]},
                "accessed": {"date-parts": [[2024, 3, 14]]},
                "URL": "https://arxiv.org/abs/1706.03762",
                "number": "arXiv:1706.03762",
                "publisher": "arXiv",
                "language": "en",
                "abstract": "We propose.",
                "keyword": "ml, attention",
            })
        );
    }

    #[test]
    fn a_suffix_has_its_own_place_in_every_format() {
        let r = Record {
            authors: vec![Person::Name {
                family: "King".into(),
                given: Some("Martin Luther Jr.".into()),
            }],
            ..record()
        };
        assert_eq!(
            item(&r)["author"],
            json!([{"family": "King", "given": "Martin Luther", "suffix": "Jr."}])
        );
        let bib = super::super::bibtex::entry(&r);
        assert!(bib.contains("author = {King, Jr., Martin Luther}"), "{bib}");
        let ris = super::super::ris::entry(&r);
        assert!(ris.contains("AU  - King, Martin Luther, Jr.\r\n"), "{ris}");
        // A given name that only ends like one is no suffix.
        assert_eq!(super::super::record::given_and_suffix("Iv"), ("Iv", None));
    }

    #[test]
    fn a_papers_site_is_not_its_container() {
        let r = Record {
            site_name: Some("arXiv.org".into()),
            ..record()
        };
        assert!(item(&r).get("container-title").is_none(), "{:?}", item(&r));
    }

    #[test]
    fn a_web_page_names_its_site_as_container() {
        let r = Record {
            kind: Kind::WebPage,
            arxiv: None,
            site_name: Some("Example Notes".into()),
            ..record()
        };
        let v = item(&r);
        assert_eq!(v["type"], "webpage");
        assert_eq!(v["container-title"], "Example Notes");
        assert!(v.get("number").is_none());
    }

    #[test]
    fn the_file_is_one_array_even_when_empty() {
        let mut out = Vec::new();
        write(&mut out, &[]).expect("write");
        assert_eq!(
            serde_json::from_slice::<Value>(&out).expect("JSON"),
            json!([])
        );
        let mut out = Vec::new();
        write(&mut out, &[record(), record()]).expect("write");
        let all: Value = serde_json::from_slice(&out).expect("JSON");
        assert_eq!(all.as_array().map(Vec::len), Some(2));
        assert_eq!(String::from_utf8_lossy(&out).lines().count(), 4);
    }
}
