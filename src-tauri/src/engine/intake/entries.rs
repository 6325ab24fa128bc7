//! From an entry of a reference file or a bookmark export to a finding: what to fetch for it,
//! and what it said about itself.

use super::identifiers::{self, Identifier};
use super::{Entry, Found, Item, identifier_found, shown, vet};
use crate::engine::queue::Reference;

/// Where entries come from: a reference file's key is a citation key; a bookmark's is its
/// title.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntrySource {
    References,
    Bookmarks,
}

/// One item of a file as a finding. An entry is fetched by its DOI, else its arXiv id, else its
/// PubMed id, else its URL; with none of them it is rejected, naming it.
pub fn found(item: Item, source: EntrySource) -> Found {
    match item {
        Item::Entry(entry) => entry_found(entry, source),
        Item::Skipped { what, reason } => Found::Skipped {
            input: shown(&what),
            reason,
        },
        Item::Rejected { what, reason } => Found::Rejected {
            // A reader that names an entry by its line says the line once.
            reason: reason
                .strip_prefix(&format!("{what}: "))
                .map_or_else(|| reason.clone(), str::to_string),
            input: shown(&what),
        },
    }
}

fn entry_found(entry: Entry, source: EntrySource) -> Found {
    let name = entry
        .key
        .clone()
        .or_else(|| entry.title.clone())
        .or_else(|| entry.url.clone())
        .unwrap_or_else(|| "(an entry without a name)".into());
    let target = target(&entry);
    let bad_doi = entry
        .doi
        .as_deref()
        .map(str::trim)
        .filter(|d| !d.is_empty() && doi_of(d).is_none())
        .map(shown);
    let reference = Box::new(Reference {
        title: entry.title.filter(|t| !t.trim().is_empty()),
        citation_key: match source {
            EntrySource::References => entry.key,
            EntrySource::Bookmarks => None,
        },
        authors: entry.authors,
        // A bookmark's date is when it was saved, not when the work appeared: it is no
        // `issued` to cite.
        issued: match source {
            EntrySource::References => entry.issued,
            EntrySource::Bookmarks => None,
        },
        container_title: entry.container_title,
        entry_type: entry.kind,
        tags: entry.tags,
        ..Reference::default()
    });
    match target {
        Some(Target::Id(id)) => with_reference(identifier_found(&name, &id), reference),
        Some(Target::Url(url)) => match vet(&url) {
            found @ Found::Url { .. } => with_reference(found, reference),
            Found::Rejected { reason, .. } => Found::Rejected {
                input: shown(&name),
                reason: format!("{reason} ({})", shown(&url)),
            },
            other => other,
        },
        None => Found::Rejected {
            input: shown(&name),
            reason: match (source, bad_doi) {
                (EntrySource::References, Some(doi)) => format!(
                    "nothing to fetch: its DOI field \"{doi}\" is not a DOI (10.<number>/<name>), \
                     and it has no arXiv id, PubMed id or URL"
                ),
                (EntrySource::References, None) => {
                    "nothing to fetch: the entry has no DOI, arXiv id, PubMed id or URL".into()
                }
                (EntrySource::Bookmarks, _) => {
                    "nothing to fetch: the bookmark has no address".into()
                }
            },
        },
    }
}

fn with_reference(found: Found, with: Box<Reference>) -> Found {
    match found {
        Found::Url {
            input,
            url,
            key,
            host,
            ..
        } => Found::Url {
            input,
            url,
            key,
            host,
            reference: Some(with),
        },
        other => other,
    }
}

enum Target {
    Id(Identifier),
    Url(String),
}

/// What to fetch for an entry, in order of preference.
fn target(entry: &Entry) -> Option<Target> {
    let doi = entry.doi.as_deref().and_then(doi_of);
    let arxiv = entry.arxiv.as_deref().and_then(|a| {
        let a = a.trim();
        let a = a
            .get(..6)
            .filter(|p| p.eq_ignore_ascii_case("arxiv:"))
            .map_or(a, |_| &a[6..])
            .trim();
        identifiers::arxiv_id(a)
            .filter(|(_, len)| *len == a.len())
            .map(|(id, _)| Identifier::Arxiv(id))
    });
    let pmid = entry.pmid.as_deref().map(str::trim).and_then(|p| {
        (!p.is_empty() && p.len() <= 9 && p.bytes().all(|b| b.is_ascii_digit()))
            .then(|| Identifier::Pmid(p.trim_start_matches('0').to_string()))
            .filter(|id| !matches!(id, Identifier::Pmid(p) if p.is_empty()))
    });
    let pmcid = entry.pmcid.as_deref().map(str::trim).and_then(|p| {
        identifiers::pmcid(p)
            .filter(|(_, len)| *len == p.len())
            .map(|(id, _)| Identifier::Pmcid(id))
    });
    doi.or(arxiv)
        .or(pmid)
        .or(pmcid)
        .map(Target::Id)
        .or_else(|| {
            entry
                .url
                .as_deref()
                .map(str::trim)
                .filter(|u| !u.is_empty())
                .map(|u| Target::Url(u.to_string()))
        })
}

fn doi_of(field: &str) -> Option<Identifier> {
    identifiers::doi_in_field(field).map(Identifier::doi)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(key: &str) -> Entry {
        Entry {
            key: Some(key.into()),
            title: Some("A title".into()),
            authors: vec!["Kucsko, Georg".into(), "Maurer, Peter C.".into()],
            issued: Some("2013-07-31".into()),
            ..Entry::default()
        }
    }

    fn url_of(f: &Found) -> &str {
        match f {
            Found::Url { url, .. } => url,
            other => panic!("not queued: {other:?}"),
        }
    }

    #[test]
    fn the_doi_comes_first_then_the_arxiv_id_then_the_pubmed_id_then_the_url() {
        let all = Entry {
            doi: Some("https://doi.org/10.1038/NATURE12373".into()),
            arxiv: Some("arXiv:1706.03762v5".into()),
            pmid: Some("31452104".into()),
            url: Some("https://example.com/paper".into()),
            ..entry("k")
        };
        let f = found(Item::Entry(all.clone()), EntrySource::References);
        assert_eq!(url_of(&f), "doi:10.1038/NATURE12373");
        let no_doi = Entry { doi: None, ..all };
        let f = found(Item::Entry(no_doi.clone()), EntrySource::References);
        assert_eq!(url_of(&f), "arxiv:1706.03762v5");
        let no_arxiv = Entry {
            arxiv: None,
            ..no_doi
        };
        let f = found(Item::Entry(no_arxiv.clone()), EntrySource::References);
        assert_eq!(url_of(&f), "pmid:31452104");
        let no_pmid = Entry {
            pmid: None,
            pmcid: Some("PMC6738312".into()),
            ..no_arxiv
        };
        let f = found(Item::Entry(no_pmid.clone()), EntrySource::References);
        assert_eq!(url_of(&f), "pmcid:PMC6738312");
        let only_url = Entry {
            pmcid: None,
            ..no_pmid
        };
        let f = found(Item::Entry(only_url), EntrySource::References);
        assert_eq!(url_of(&f), "https://example.com/paper");
    }

    #[test]
    fn an_entry_keeps_its_own_metadata_and_a_bookmark_has_no_citation_key() {
        let e = Entry {
            doi: Some("doi:10.1038/nature12373".into()),
            tags: vec!["thesis".into()],
            container_title: Some("Nature".into()),
            ..entry("kucsko2013")
        };
        let Found::Url { reference, .. } = found(Item::Entry(e.clone()), EntrySource::References)
        else {
            panic!("not queued")
        };
        let r = reference.expect("reference");
        assert_eq!(r.citation_key.as_deref(), Some("kucsko2013"));
        assert_eq!(r.first_author(), Some("Kucsko"));
        assert_eq!(r.year(), Some("2013"));
        assert_eq!(r.tags, ["thesis"]);
        let Found::Url { reference, .. } = found(Item::Entry(e), EntrySource::Bookmarks) else {
            panic!("not queued")
        };
        assert_eq!(reference.expect("reference").citation_key, None);
    }

    #[test]
    fn an_entry_with_nothing_to_fetch_is_rejected_by_its_key() {
        let f = found(Item::Entry(entry("smith2020")), EntrySource::References);
        let Found::Rejected { input, reason } = f else {
            panic!("not rejected: {f:?}")
        };
        assert_eq!(input, "smith2020");
        assert!(
            reason.contains("no DOI, arXiv id, PubMed id or URL"),
            "{reason}"
        );
        // A DOI field that is not one does not count as one.
        let bad = Entry {
            doi: Some("n/a".into()),
            ..entry("jones")
        };
        assert!(matches!(
            found(Item::Entry(bad), EntrySource::References),
            Found::Rejected { .. }
        ));
    }

    #[test]
    fn a_bad_url_is_rejected_naming_the_entry_and_the_address() {
        let e = Entry {
            url: Some("javascript:alert(1)".into()),
            ..entry("Bookmarklet")
        };
        let Found::Rejected { input, reason } = found(Item::Entry(e), EntrySource::Bookmarks)
        else {
            panic!("not rejected")
        };
        assert_eq!(input, "Bookmarklet");
        assert!(reason.contains("javascript:"), "{reason}");
    }

    #[test]
    fn skipped_items_stay_skipped() {
        let f = found(
            Item::Skipped {
                what: "Most Visited".into(),
                reason: "a Firefox smart folder (place:), not a page".into(),
            },
            EntrySource::Bookmarks,
        );
        assert!(matches!(f, Found::Skipped { ref input, .. } if input == "Most Visited"));
    }

    #[test]
    fn a_doi_field_that_is_not_a_doi_is_named_in_the_rejection() {
        let e = Entry {
            doi: Some("10/bx4k".into()),
            ..entry("short")
        };
        match found(Item::Entry(e), EntrySource::References) {
            Found::Rejected { input, reason } => {
                assert_eq!(input, "short");
                assert!(
                    reason.contains("DOI field \"10/bx4k\" is not a DOI"),
                    "{reason}"
                );
            }
            other => panic!("{other:?}"),
        }
    }
}
