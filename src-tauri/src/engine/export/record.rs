//! A document's front matter as one citation record: what every citation format writes, read
//! once, so that BibTeX, CSL-JSON and RIS say the same things about a document.

use serde_json::{Map, Value};

use crate::engine::intake::Identifier;
use crate::engine::policy::Services;

/// What a document is, for the entry type each format gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A page of the web: a blog post, a news article, documentation.
    WebPage,
    /// A paper in a journal (or proceedings): it has a container.
    Article,
    /// A paper without a container: an e-print, a PubMed record without its journal.
    Paper,
    /// A paper in a conference's proceedings (the file's or the resolver's type said so).
    ConferencePaper,
    /// A chapter of a book.
    Chapter,
}

/// One author.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Person {
    Name {
        family: String,
        given: Option<String>,
    },
    /// A name that is not "Family, Given": an organisation, or a page's byline as written.
    Literal(String),
}

/// Given names and the suffix stored after them ("Martin Luther Jr.", as the BibTeX reader and
/// `person_name` write "King, Martin Luther Jr."): each format has its own place for the
/// suffix, and CSL put it before the family name ("Martin Luther Jr. King").
pub fn given_and_suffix(given: &str) -> (&str, Option<&str>) {
    const SUFFIXES: &[&str] = &["Jr.", "Jr", "Sr.", "Sr", "II", "III", "IV"];
    match given.trim().rsplit_once(' ') {
        Some((names, last)) if SUFFIXES.contains(&last) && !names.trim().is_empty() => {
            (names.trim_end_matches(',').trim(), Some(last))
        }
        _ => (given.trim(), None),
    }
}

/// The days of `month` in `year` (Gregorian).
fn days_in(year: u16, month: u8) -> u8 {
    match month {
        2 if year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400)) => {
            29
        }
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// A calendar date as precise as the source gave it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Date {
    pub year: u16,
    pub month: Option<u8>,
    pub day: Option<u8>,
}

impl Date {
    /// `YYYY`, `YYYY-MM` or `YYYY-MM-DD` at the start of `text` (`2013-07-31T…`, `2013/07/31`).
    pub fn parse(text: &str) -> Option<Date> {
        let mut parts = text.trim().split(['-', '/', 'T', ' ']);
        let year = parts
            .next()
            .filter(|y| y.len() == 4 && y.bytes().all(|b| b.is_ascii_digit()))?
            .parse()
            .ok()?;
        let two = |p: Option<&str>, max: u8| {
            p.filter(|v| (1..=2).contains(&v.len()) && v.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|v| v.parse::<u8>().ok())
                .filter(|n| (1..=max).contains(n))
        };
        let month = two(parts.next(), 12);
        // A day the month does not have (2020-02-30) is dropped, not exported.
        let day = month.and_then(|m| two(parts.next(), days_in(year, m)));
        Some(Date { year, month, day })
    }

    /// ISO 8601 as far as it is known: `2013`, `2013-08`, `2013-08-01`.
    pub fn iso(&self) -> String {
        match (self.month, self.day) {
            (Some(m), Some(d)) => format!("{:04}-{m:02}-{d:02}", self.year),
            (Some(m), None) => format!("{:04}-{m:02}", self.year),
            _ => format!("{:04}", self.year),
        }
    }

    /// The parts that are known, for CSL's `date-parts`.
    pub fn parts(&self) -> Vec<u16> {
        let mut parts = vec![self.year];
        if let Some(m) = self.month {
            parts.push(u16::from(m));
            if let Some(d) = self.day {
                parts.push(u16::from(d));
            }
        }
        parts
    }
}

/// A document as a citation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub job_id: i64,
    pub kind: Kind,
    /// Set by [`super::keys::assign`]; empty until then.
    pub key: String,
    /// The key of the reference file entry it came from.
    pub imported_key: Option<String>,
    pub title: Option<String>,
    pub authors: Vec<Person>,
    pub issued: Option<Date>,
    /// The journal or proceedings of a paper; the site of a web page is [`Record::site_name`].
    pub container: Option<String>,
    pub site_name: Option<String>,
    pub doi: Option<String>,
    pub arxiv: Option<String>,
    pub pmid: Option<String>,
    pub pmcid: Option<String>,
    pub url: Option<String>,
    /// The URL is the identifier's own link (`https://doi.org/…`), not the document's address.
    pub url_is_identifier: bool,
    /// When it was fetched.
    pub accessed: Option<Date>,
    pub language: Option<String>,
    pub abstract_text: Option<String>,
    pub tags: Vec<String>,
    /// The host the document came from, for a key when nothing names an author.
    pub host: Option<String>,
}

impl Record {
    /// The record of a document from its front matter (as [`crate::engine::library::read_document`]
    /// reads it) and the abstract its text starts with, if any.
    pub fn from_front_matter(
        job_id: i64,
        meta: &Map<String, Value>,
        abstract_text: Option<String>,
    ) -> Record {
        let text = |key: &str| {
            meta.get(key)
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|v| !v.is_empty())
                .map(str::to_string)
        };
        let list = |key: &str| -> Vec<String> {
            meta.get(key)
                .and_then(Value::as_array)
                .map(|items| {
                    items
                        .iter()
                        .filter_map(Value::as_str)
                        .map(str::trim)
                        .filter(|v| !v.is_empty())
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default()
        };
        let (doi, arxiv, pmid, pmcid) = (text("doi"), text("arxiv"), text("pmid"), text("pmcid"));
        let site_name = text("site_name");
        let container_title = text("container_title");
        let identified = doi.is_some() || arxiv.is_some() || pmid.is_some() || pmcid.is_some();
        // A page with authors gets its site as `container_title` (library.rs): that is no journal.
        let names_site = |c: &str| {
            site_name
                .as_deref()
                .is_some_and(|s| s.eq_ignore_ascii_case(c))
        };
        let paper = identified
            || meta.get("full_text").is_some_and(Value::is_boolean)
            || text("pdf").is_some()
            || container_title.as_deref().is_some_and(|c| !names_site(c));
        // An e-print's abs page names arXiv as its site, which is no journal either.
        let container = container_title
            .filter(|c| paper && !(arxiv.is_some() && c.to_ascii_lowercase().contains("arxiv")));
        let kind = match (paper, &container, text("entry_type").as_deref()) {
            (false, _, _) => Kind::WebPage,
            (true, _, Some("paper-conference")) => Kind::ConferencePaper,
            (true, _, Some("chapter")) => Kind::Chapter,
            (true, Some(_), _) => Kind::Article,
            (true, None, _) => Kind::Paper,
        };
        let mut authors: Vec<Person> = list("authors").iter().map(|a| person(a)).collect();
        if authors.is_empty()
            && let Some(byline) = text("byline").as_deref().and_then(byline_person)
        {
            authors.push(byline);
        }
        let address = text("url").filter(|u| is_web(u));
        let identifier = [
            doi.clone().map(Identifier::Doi),
            arxiv.clone().map(Identifier::Arxiv),
            pmid.clone().map(Identifier::Pmid),
            pmcid.clone().map(Identifier::Pmcid),
        ]
        .into_iter()
        .flatten()
        .next();
        let (url, url_is_identifier) = match (address, identifier) {
            (Some(address), _) => (Some(address), false),
            (None, Some(id)) => (Some(identifier_link(&id)), true),
            (None, None) => (text("final_url").filter(|u| is_web(u)), false),
        };
        Record {
            job_id,
            kind,
            key: String::new(),
            imported_key: text("citation_key"),
            title: text("title"),
            authors,
            issued: text("issued")
                .or_else(|| text("published"))
                .as_deref()
                .and_then(Date::parse),
            container,
            site_name,
            doi,
            arxiv,
            pmid,
            pmcid,
            url,
            url_is_identifier,
            accessed: text("fetched_at").as_deref().and_then(Date::parse),
            language: text("language"),
            abstract_text: abstract_text
                .map(|a| a.trim().to_string())
                .filter(|a| !a.is_empty()),
            tags: list("tags"),
            host: text("final_url")
                .or_else(|| text("url"))
                .and_then(|u| url::Url::parse(&u).ok())
                .and_then(|u| u.host_str().map(str::to_string)),
        }
    }
}

fn is_web(url: &str) -> bool {
    let lower = url.get(..8).unwrap_or(url).to_ascii_lowercase();
    lower.starts_with("http://") || lower.starts_with("https://")
}

/// The public link of an identifier (not the configured services': those may be a mirror).
fn identifier_link(id: &Identifier) -> String {
    match id {
        Identifier::Pmcid(p) => format!("https://pmc.ncbi.nlm.nih.gov/articles/{p}/"),
        other => other.first_url(&Services::default()),
    }
}

/// A library author ("Family, Given"; a name without a comma is an organisation's).
fn person(name: &str) -> Person {
    match name.split_once(',') {
        Some((family, given)) if !family.trim().is_empty() => Person::Name {
            family: family.trim().to_string(),
            given: Some(given.trim().to_string()).filter(|g| !g.is_empty()),
        },
        _ => Person::Literal(name.trim().to_string()),
    }
}

/// A page's byline: "Family, Given" when it is written so (the family name one word, or a
/// lowercase particle and a word: "van Dijk, Jan") or is one person's name given names first
/// ("Jane Doe"), else the byline as written.
fn byline_person(byline: &str) -> Option<Person> {
    let text = byline.trim();
    let text = ["By ", "by ", "BY "]
        .iter()
        .find_map(|p| text.strip_prefix(p))
        .unwrap_or(text)
        .trim();
    if text.is_empty() {
        return None;
    }
    if let Some((family, given)) = text.split_once(',')
        && !given.contains(',')
    {
        let words: Vec<&str> = family.split_whitespace().collect();
        let family_ok = words.last().is_some_and(|w| starts_upper(w))
            && words[..words.len() - 1]
                .iter()
                .all(|w| w.chars().all(char::is_lowercase));
        let given_words: Vec<&str> = given.split_whitespace().collect();
        let given_ok = (1..=3).contains(&given_words.len())
            && given_words.iter().all(|w| starts_upper(w))
            && !given.chars().any(|c| c.is_ascii_digit());
        if family_ok && given_ok {
            return Some(Person::Name {
                family: words.join(" "),
                given: Some(given_words.join(" ")),
            });
        }
    }
    if let Some((family, given)) = crate::engine::person_name::family_and_given(text) {
        return Some(Person::Name {
            family,
            given: Some(given),
        });
    }
    Some(Person::Literal(text.to_string()))
}

fn starts_upper(word: &str) -> bool {
    word.chars().next().is_some_and(char::is_uppercase)
}

/// The abstract a paper's document starts with (`## Abstract`, up to the next heading), as
/// [`crate::engine::library::Library::save`] writes it.
pub fn abstract_of(body: &str) -> Option<String> {
    let rest = body.trim_start().strip_prefix("## Abstract\n")?;
    let end = rest.find("\n## ").unwrap_or(rest.len());
    Some(rest[..end].trim().to_string()).filter(|a| !a.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn meta(v: Value) -> Map<String, Value> {
        v.as_object().cloned().expect("an object")
    }

    #[test]
    fn a_plain_page_is_a_web_page_with_its_byline_site_and_dates() {
        let r = Record::from_front_matter(
            4,
            &meta(json!({
                "url": "https://www.example.org/notes/field",
                "final_url": "https://www.example.org/notes/field",
                "title": "Notes from the field",
                "byline": "By Jane Doe",
                "published": "2021-05-06T10:00:00Z",
                "language": "en",
                "site_name": "Example Notes",
                "fetched_at": "2024-03-14T10:12:55.000Z",
                "tags": ["rivers", "field work"],
            })),
            None,
        );
        assert_eq!(r.kind, Kind::WebPage);
        assert_eq!(
            r.authors,
            [Person::Name {
                family: "Doe".into(),
                given: Some("Jane".into())
            }],
            "a byline that is one person's name is cited as a person's"
        );
        assert_eq!(r.issued.map(|d| d.iso()).as_deref(), Some("2021-05-06"));
        assert_eq!(r.accessed.map(|d| d.iso()).as_deref(), Some("2024-03-14"));
        assert_eq!(
            r.url.as_deref(),
            Some("https://www.example.org/notes/field")
        );
        assert!(!r.url_is_identifier);
        assert_eq!(r.container, None);
        assert_eq!(r.site_name.as_deref(), Some("Example Notes"));
        assert_eq!(r.host.as_deref(), Some("www.example.org"));
        assert_eq!(r.tags, ["rivers", "field work"]);
    }

    #[test]
    fn a_doi_with_a_journal_is_an_article_linked_by_its_doi() {
        let r = Record::from_front_matter(
            1,
            &meta(json!({
                "url": "doi:10.1038/nature12373",
                "final_url": "http://127.0.0.2:4000/articles/nature12373.pdf",
                "title": "Nanometre-scale thermometry in a living cell",
                "site_name": "Nature",
                "doi": "10.1038/nature12373",
                "full_text": true,
                "authors": ["Kucsko, G.", "Maurer, P. C."],
                "issued": "2013-08",
                "container_title": "Nature",
                "citation_key": "kucsko2013",
            })),
            Some("An abstract.".into()),
        );
        assert_eq!(
            r.kind,
            Kind::Article,
            "a journal that is also the site name"
        );
        assert_eq!(r.container.as_deref(), Some("Nature"));
        assert_eq!(
            r.authors[1],
            Person::Name {
                family: "Maurer".into(),
                given: Some("P. C.".into())
            }
        );
        assert_eq!(r.issued.map(|d| d.parts()), Some(vec![2013, 8]));
        assert_eq!(
            r.url.as_deref(),
            Some("https://doi.org/10.1038/nature12373")
        );
        assert!(r.url_is_identifier);
        assert_eq!(r.imported_key.as_deref(), Some("kucsko2013"));
        assert_eq!(r.abstract_text.as_deref(), Some("An abstract."));
    }

    #[test]
    fn an_eprint_is_a_paper_without_arxiv_as_its_journal() {
        let r = Record::from_front_matter(
            2,
            &meta(json!({
                "url": "arxiv:1706.03762",
                "title": "Attention Is All You Need",
                "arxiv": "1706.03762",
                "container_title": "arXiv.org",
                "authors": ["Vaswani, Ashish"],
            })),
            None,
        );
        assert_eq!(r.kind, Kind::Paper);
        assert_eq!(r.container, None);
        assert_eq!(r.url.as_deref(), Some("https://arxiv.org/abs/1706.03762"));
    }

    #[test]
    fn a_page_whose_site_is_its_container_stays_a_web_page() {
        let r = Record::from_front_matter(
            3,
            &meta(json!({
                "url": "https://news.example/a",
                "site_name": "The Daily Example",
                "container_title": "The Daily Example",
                "authors": ["Roe, Richard"],
            })),
            None,
        );
        assert_eq!(r.kind, Kind::WebPage);
        assert_eq!(r.container, None);
    }

    #[test]
    fn bylines_are_names_only_when_written_family_comma_given() {
        let name = |f: &str, g: &str| Person::Name {
            family: f.into(),
            given: Some(g.into()),
        };
        assert_eq!(byline_person("Doe, Jane"), Some(name("Doe", "Jane")));
        assert_eq!(
            byline_person("van Dijk, Jan"),
            Some(name("van Dijk", "Jan"))
        );
        assert_eq!(
            byline_person("Jane Doe, Reuters staff writer"),
            Some(Person::Literal("Jane Doe, Reuters staff writer".into()))
        );
        assert_eq!(
            byline_person("by Jane Doe and John Roe"),
            Some(Person::Literal("Jane Doe and John Roe".into()))
        );
        assert_eq!(byline_person("  "), None);
    }

    #[test]
    fn dates_keep_the_precision_they_have_and_refuse_nonsense() {
        assert_eq!(
            Date::parse("2013/07/31").map(|d| d.iso()).as_deref(),
            Some("2013-07-31")
        );
        assert_eq!(
            Date::parse("2013-07").map(|d| d.iso()).as_deref(),
            Some("2013-07")
        );
        assert_eq!(
            Date::parse("2013-13-01").map(|d| d.iso()).as_deref(),
            Some("2013")
        );
        assert_eq!(Date::parse("13 July 2013"), None);
        // A day the month does not have keeps only the month; a leap day is kept.
        let iso = |t: &str| Date::parse(t).map(|d| d.iso());
        assert_eq!(iso("2020-02-30").as_deref(), Some("2020-02"));
        assert_eq!(iso("2019-02-29").as_deref(), Some("2019-02"));
        assert_eq!(iso("2020-02-29").as_deref(), Some("2020-02-29"));
        assert_eq!(iso("1900-02-29").as_deref(), Some("1900-02"));
        assert_eq!(iso("2021-04-31").as_deref(), Some("2021-04"));
    }

    #[test]
    fn the_abstract_is_the_section_a_paper_starts_with() {
        let body = "## Abstract\n\nWe did things.\n\nAnd more.\n\n## Full text\n\nBody.";
        assert_eq!(
            abstract_of(body).as_deref(),
            Some("We did things.\n\nAnd more.")
        );
        assert_eq!(abstract_of("Just a page.\n## Abstract\n\nNot this."), None);
    }
}
