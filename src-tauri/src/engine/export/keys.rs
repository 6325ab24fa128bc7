//! Citation keys: stable and unique over the whole library (docs/ARCHITECTURE.md, "The
//! library: citations out"). A document keeps the key its reference file gave it; else it gets the first author's
//! family name, the year and the first significant word of the title (`kucsko2013nanometre`).
//! Keys that collide get `a`, `b`, … in job order, the oldest keeping the bare key.

use std::collections::{HashMap, HashSet};

use unicode_normalization::UnicodeNormalization as _;
use unicode_normalization::char::is_combining_mark;

use super::record::{Person, Record};

/// Words a title's key word skips.
const STOP_WORDS: &[&str] = &[
    "a", "an", "the", "on", "of", "in", "and", "or", "for", "to", "with", "at", "by", "from", "as",
    "is", "are", "into", "about", "over", "under", "via", "its", "de", "la", "le", "les", "des",
    "du", "der", "die", "das", "den", "el", "los", "un", "une", "ein", "eine",
];
/// A key's name part is cut here (a long site name would make a long key).
const MAX_NAME: usize = 24;

/// `text` lower-cased in ASCII letters and digits: accents dropped (`Müller` → `muller`),
/// letters with no decomposition spelled out (`ß` → `ss`), everything else left out.
pub fn fold(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.nfkd() {
        if is_combining_mark(c) {
            continue;
        }
        let spelled = match c {
            'ß' => "ss",
            'æ' | 'Æ' => "ae",
            'œ' | 'Œ' => "oe",
            'ø' | 'Ø' => "o",
            'đ' | 'Đ' | 'ð' | 'Ð' => "d",
            'ł' | 'Ł' => "l",
            'þ' | 'Þ' => "th",
            'ı' => "i",
            'ħ' | 'Ħ' => "h",
            'ŋ' | 'Ŋ' => "n",
            c if c.is_ascii_alphanumeric() => {
                out.push(c.to_ascii_lowercase());
                continue;
            }
            _ => continue,
        };
        out.push_str(spelled);
    }
    out
}

/// The key a record asks for before collisions are settled: its imported key if it is usable
/// as one, else name + year + title word.
pub fn wanted(record: &Record) -> String {
    if let Some(key) = record.imported_key.as_deref().and_then(usable_key) {
        return key;
    }
    let year = record
        .issued
        .map_or_else(|| "nd".to_string(), |d| format!("{:04}", d.year));
    let word = record
        .title
        .as_deref()
        .and_then(first_significant_word)
        .unwrap_or_default();
    format!("{}{year}{word}", name_part(record))
}

/// The first author's family name, else a literal name or byline (before any comma or "and"):
/// a person's family name if it reads as one person's name, else an organisation's words run
/// together (`worldhealthorganization`: its last word alone made every "… Organization" one
/// key); else the site's name, else its host, else `anon`.
fn name_part(record: &Record) -> String {
    let from_author = record.authors.first().map(|a| match a {
        Person::Name { family, .. } => fold(family),
        Person::Literal(text) => {
            let first = text
                .split([',', ';', '&'])
                .next()
                .unwrap_or(text)
                .split(" and ")
                .next()
                .unwrap_or(text);
            match crate::engine::person_name::family_and_given(first.trim()) {
                Some((family, _)) => fold(&family),
                None => words(first)
                    .filter(|w| !STOP_WORDS.contains(&w.as_str()))
                    .collect::<String>(),
            }
        }
    });
    let from_site = || {
        record.site_name.as_deref().map(|s| {
            words(s)
                .filter(|w| !STOP_WORDS.contains(&w.as_str()))
                .collect::<String>()
        })
    };
    let from_host = || record.host.as_deref().map(host_name);
    let name = [from_author, from_site(), from_host()]
        .into_iter()
        .flatten()
        .find(|n| !n.is_empty())
        .unwrap_or_else(|| "anon".to_string());
    name.chars().take(MAX_NAME).collect()
}

/// The folded words of `text`.
fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .map(fold)
        .filter(|w| !w.is_empty())
}

fn first_significant_word(title: &str) -> Option<String> {
    words(title).find(|w| !STOP_WORDS.contains(&w.as_str()))
}

/// The name a host goes by: `news.bbc.co.uk` → `bbc`, `www.example.org` → `example`; an IP
/// address as its digits.
fn host_name(host: &str) -> String {
    let host = host.trim_matches(['[', ']']);
    if host.parse::<std::net::IpAddr>().is_ok() {
        return fold(host);
    }
    let mut labels: Vec<&str> = host.split('.').filter(|l| !l.is_empty()).collect();
    if labels.len() > 1 {
        labels.pop();
    }
    // A second-level domain under a country's (`co.uk`, `ac.jp`) is not the site's name.
    if labels.len() > 1
        && matches!(
            labels.last().copied(),
            Some("co" | "com" | "ac" | "org" | "gov" | "edu" | "net" | "ne" | "or")
        )
    {
        labels.pop();
    }
    labels.last().map(|l| fold(l)).unwrap_or_default()
}

/// An imported key as BibTeX and biber read keys: without spaces and the characters that end
/// or break one (`{}(),=#%~"'\@`); `None` when nothing is left.
fn usable_key(key: &str) -> Option<String> {
    // A database's id stored before intake told them apart (a Zotero URI, a RIS record
    // number) is no key; a `/` alone is (DBLP's `DBLP:conf/nips/…`, ACM's DOI keys).
    if key.contains("://") || key.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let kept: String = key
        .chars()
        .filter(|c| {
            !c.is_whitespace()
                && !c.is_control()
                && !matches!(
                    c,
                    '@' | '{' | '}' | '"' | '#' | '\'' | '(' | ')' | ',' | '=' | '%' | '\\' | '~'
                )
        })
        .collect();
    // biber refuses a key that starts with these.
    let kept = kept.trim_start_matches([':', '<', '-', '>']);
    (!kept.is_empty()).then(|| kept.to_string())
}

/// The suffix for the `n`th repeat (0-based): `a` … `z`, `aa`, `ab` …
fn suffix(mut n: usize) -> String {
    let mut out = Vec::new();
    loop {
        out.push(b'a' + (n % 26) as u8);
        if n < 26 {
            break;
        }
        n = n / 26 - 1;
    }
    out.reverse();
    String::from_utf8(out).unwrap_or_default()
}

/// Every job's key: the key it was given before (`given`, kept by the queue), else, settled in
/// job order, the key it wants if free, else the first free one of `key` + `a`, `b`, ….
/// Compared without case, as BibTeX does. A key once given stays its job's, whatever other
/// jobs finish, fail or are fetched again later; a selection gets the keys the whole library
/// gets.
pub fn assign(given: &[(i64, String)], mut wanted: Vec<(i64, String)>) -> HashMap<i64, String> {
    wanted.sort_by_key(|(id, _)| *id);
    let mut taken: HashSet<String> = given.iter().map(|(_, k)| k.to_lowercase()).collect();
    let mut keys: HashMap<i64, String> = given.iter().cloned().collect();
    // How many repeats each wanted key has had: the next suffix to try.
    let mut repeats: HashMap<String, usize> = HashMap::new();
    for (id, want) in wanted {
        if keys.contains_key(&id) {
            continue;
        }
        let lower = want.to_lowercase();
        let key = if taken.insert(lower.clone()) {
            want
        } else {
            let n = repeats.entry(lower).or_insert(0);
            loop {
                let candidate = format!("{want}{}", suffix(*n));
                *n += 1;
                if taken.insert(candidate.to_lowercase()) {
                    break candidate;
                }
            }
        };
        keys.insert(id, key);
    }
    keys
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::export::record::{Date, Kind};

    fn record(id: i64) -> Record {
        Record {
            job_id: id,
            kind: Kind::WebPage,
            key: String::new(),
            imported_key: None,
            title: None,
            authors: Vec::new(),
            issued: None,
            container: None,
            site_name: None,
            doi: None,
            arxiv: None,
            pmid: None,
            pmcid: None,
            url: None,
            url_is_identifier: false,
            accessed: None,
            language: None,
            abstract_text: None,
            tags: Vec::new(),
            host: None,
        }
    }

    fn paper(id: i64, family: &str, year: u16, title: &str) -> Record {
        Record {
            authors: vec![Person::Name {
                family: family.into(),
                given: Some("A.".into()),
            }],
            issued: Some(Date {
                year,
                month: None,
                day: None,
            }),
            title: Some(title.into()),
            ..record(id)
        }
    }

    #[test]
    fn folding_drops_accents_and_spells_out_letters() {
        assert_eq!(fold("Müller"), "muller");
        assert_eq!(fold("Gauß"), "gauss");
        assert_eq!(fold("Łukasiewicz"), "lukasiewicz");
        assert_eq!(fold("Ørsted-Æbelø"), "orstedaebelo");
        assert_eq!(fold("van der Waals"), "vanderwaals");
        assert_eq!(fold("李"), "");
    }

    #[test]
    fn a_key_is_family_year_and_first_significant_title_word() {
        assert_eq!(
            wanted(&paper(1, "Müller", 2020, "The Rivers of Bavaria")),
            "muller2020rivers"
        );
        assert_eq!(
            wanted(&paper(1, "Kucsko", 2013, "Nanometre-scale thermometry")),
            "kucsko2013nanometre"
        );
        let undated = Record {
            issued: None,
            ..paper(1, "Roe", 2000, "On the Of")
        };
        assert_eq!(
            wanted(&undated),
            "roend",
            "stop words only: no word; no date: nd"
        );
        let worded = Record {
            issued: None,
            ..paper(1, "Roe", 2000, "On a Theory of Everything")
        };
        assert_eq!(wanted(&worded), "roendtheory");
    }

    #[test]
    fn without_an_author_the_byline_then_the_site_then_the_host_names_it() {
        let byline = Record {
            authors: vec![Person::Literal("Jane Doe, Reuters".into())],
            title: Some("Floods".into()),
            ..record(1)
        };
        assert_eq!(wanted(&byline), "doendfloods");
        let organisation = |name: &str| Record {
            authors: vec![Person::Literal(name.into())],
            title: Some("Global report".into()),
            ..record(1)
        };
        assert_eq!(
            wanted(&organisation("World Health Organization")),
            "worldhealthorganizationndglobal"
        );
        assert_eq!(
            wanted(&organisation("The Lancet Group")),
            "lancetgroupndglobal"
        );
        let site = Record {
            site_name: Some("The Daily Example".into()),
            host: Some("www.example.org".into()),
            ..record(1)
        };
        assert_eq!(wanted(&site), "dailyexamplend");
        let host = Record {
            host: Some("news.bbc.co.uk".into()),
            ..record(1)
        };
        assert_eq!(wanted(&host), "bbcnd");
        assert_eq!(wanted(&record(1)), "anonnd");
        assert_eq!(host_name("127.0.0.1"), "127001");
    }

    #[test]
    fn an_imported_key_is_kept_as_far_as_bibtex_can_read_it() {
        let imported = Record {
            imported_key: Some("Kucsko:2013 {x}".into()),
            ..paper(1, "Kucsko", 2013, "Thermometry")
        };
        assert_eq!(wanted(&imported), "Kucsko:2013x");
        let unusable = Record {
            imported_key: Some("{}".into()),
            ..paper(1, "Kucsko", 2013, "Thermometry")
        };
        assert_eq!(wanted(&unusable), "kucsko2013thermometry");
        // A database's id kept before intake told them apart: a Zotero URI, a record number.
        for id in ["http://zotero.org/users/local/aBcD1234/items/QWERTY12", "7"] {
            let stored = Record {
                imported_key: Some(id.into()),
                ..paper(1, "Kucsko", 2013, "Thermometry")
            };
            assert_eq!(wanted(&stored), "kucsko2013thermometry", "{id}");
        }
    }

    /// DBLP's and ACM's keys hold a `/`: read from a .bib, they go out as they came in.
    #[test]
    fn a_dblp_or_acm_key_goes_out_as_it_came_in() {
        use crate::engine::intake::{Item, reference_file};
        for key in ["DBLP:conf/nips/VaswaniSPUJGKP17", "10.1145/3313831.3376134"] {
            let bib = format!(
                "@inproceedings{{{key},\n  title = {{Attention}},\n  doi = {{10.1000/x}}\n}}\n"
            );
            let mut keys = Vec::new();
            reference_file::read_reference_file(
                reference_file::ReferenceFormat::Bibtex,
                bib.as_bytes(),
                |item| {
                    if let Item::Entry(e) = item {
                        keys.push(e.key);
                    }
                },
            )
            .expect("read");
            assert_eq!(keys, [Some(key.to_string())]);
            let imported = Record {
                imported_key: keys.pop().flatten(),
                ..paper(1, "Vaswani", 2017, "Attention")
            };
            assert_eq!(wanted(&imported), key);
        }
    }

    #[test]
    fn collisions_get_suffixes_in_job_order_and_the_oldest_keeps_the_bare_key() {
        let keys = assign(
            &[],
            vec![
                (9, "smith2020deep".into()),
                (3, "smith2020deep".into()),
                (5, "Smith2020Deep".into()),
                (7, "other2020x".into()),
            ],
        );
        assert_eq!(keys[&3], "smith2020deep");
        assert_eq!(
            keys[&5], "Smith2020Deepa",
            "case does not make a key unique"
        );
        assert_eq!(keys[&9], "smith2020deepb");
        assert_eq!(keys[&7], "other2020x");
    }

    #[test]
    fn a_suffixed_key_never_takes_a_key_another_document_has() {
        let keys = assign(
            &[],
            vec![
                (1, "roe2020a".into()),
                (2, "roe2020".into()),
                (3, "roe2020".into()),
            ],
        );
        assert_eq!(keys[&1], "roe2020a");
        assert_eq!(keys[&2], "roe2020");
        assert_eq!(keys[&3], "roe2020b", "roe2020a was taken");
        let values: HashSet<&String> = keys.values().collect();
        assert_eq!(values.len(), 3);
    }

    #[test]
    fn newer_documents_never_change_older_keys() {
        let old = vec![(1, "k".to_string()), (2, "k".to_string())];
        let before = assign(&[], old.clone());
        let mut more = old;
        more.extend([(3, "k".to_string()), (4, "k2".to_string())]);
        let after = assign(&[], more);
        assert_eq!(before[&1], after[&1]);
        assert_eq!(before[&2], after[&2]);
        assert_eq!(after[&3], "kb");
    }

    #[test]
    fn a_key_given_before_stays_its_jobs_and_is_taken_for_the_others() {
        // Job 1 failed when job 2 was first exported as "k"; now job 1 has its document too.
        let given = [(2, "k".to_string())];
        let keys = assign(&given, vec![(1, "k".to_string()), (2, "k".to_string())]);
        assert_eq!(keys[&2], "k");
        assert_eq!(keys[&1], "ka");
        // A given key is taken without regard to case, and a job's new wish does not move it.
        let given = [(5, "Smith2020".to_string())];
        let keys = assign(
            &given,
            vec![(5, "jones2021".to_string()), (6, "smith2020".to_string())],
        );
        assert_eq!(
            (keys[&5].as_str(), keys[&6].as_str()),
            ("Smith2020", "smith2020a")
        );
    }

    #[test]
    fn suffixes_run_past_z() {
        assert_eq!(suffix(0), "a");
        assert_eq!(suffix(25), "z");
        assert_eq!(suffix(26), "aa");
        assert_eq!(suffix(27), "ab");
        let keys = assign(&[], (0..30).map(|i| (i, "k".to_string())).collect());
        assert_eq!(keys[&0], "k");
        assert_eq!(keys[&26], "kz");
        assert_eq!(keys[&27], "kaa");
    }
}
