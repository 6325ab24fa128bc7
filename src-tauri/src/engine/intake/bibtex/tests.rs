use super::*;

const LIBRARY: &str = include_str!("../../../../tests-fixtures/references/library.bib");

fn read(text: &str) -> Vec<Item> {
    read_bytes(text.as_bytes())
}

fn read_bytes(bytes: &[u8]) -> Vec<Item> {
    BibtexReader::new(bytes)
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

fn one(text: &str) -> Entry {
    match read(text).as_slice() {
        [Item::Entry(e)] => e.clone(),
        other => panic!("{text}: {other:?}"),
    }
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

fn strings(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

#[test]
fn the_library_reads_in_file_order_with_broken_entries_named() {
    let items = read(LIBRARY);
    let names: Vec<String> = items
        .iter()
        .map(|i| match i {
            Item::Entry(e) => e.key.clone().unwrap_or_default(),
            Item::Rejected { what, .. } => format!("rejected {what}"),
            Item::Skipped { what, .. } => format!("skipped {what}"),
        })
        .collect();
    assert_eq!(
        names,
        [
            "kucsko2013",
            "vaswaniAttentionAllYou2017",
            "schrodinger1926",
            "rejected broken-comma",
            "rejected line 53",
            "who2020covid",
            "rejected broken-braces",
            "vaswani2017attention",
            "devlin2018bert",
            "kucsko2013zotero",
            "pubmed31452104",
            "rustbook",
            "knuth1997art",
            "garcia2019",
        ]
    );
    assert_eq!(
        rejected(&items),
        [
            (
                "broken-comma",
                "line 49: missing `,` after field `title` (found `a`)"
            ),
            (
                "line 53",
                "text outside any entry, not read (a broken entry?): “stray text = {left over from an edit}”"
            ),
            (
                "broken-braces",
                "line 63: not closed with `}` before the next entry on line 68 (its braces do not balance)"
            ),
        ]
    );
}

#[test]
fn a_biblatex_entry_maps_every_field() {
    let items = read(LIBRARY);
    let all = entries(&items);
    assert_eq!(
        *all[0],
        Entry {
            key: Some("kucsko2013".into()),
            doi: Some("https://doi.org/10.1038/nature12373".into()),
            arxiv: None,
            pmid: None,
            pmcid: None,
            url: Some("https://www.nature.com/articles/nature12373".into()),
            title: Some("Nanometre-Scale Thermometry in a Living Cell".into()),
            authors: strings(&[
                "Kucsko, G.",
                "Maurer, P. C.",
                "Yao, N. Y.",
                "Kubo, M.",
                "Noh, H. J.",
                "Lo, P. K.",
                "Park, H.",
                "Lukin, M. D.",
            ]),
            issued: Some("2013-07-31".into()),
            container_title: Some("Nature".into()),
            kind: Some("article-journal".into()),
            tags: strings(&[
                "nanoscale thermometry",
                "nitrogen-vacancy centres",
                "quantum sensing"
            ]),
        }
    );
    let attention = all[1];
    assert_eq!(attention.arxiv.as_deref(), Some("1706.03762"));
    assert_eq!(attention.doi.as_deref(), Some("10.48550/arXiv.1706.03762"));
    assert_eq!(
        attention.title.as_deref(),
        Some("Attention Is All You Need")
    );
    assert_eq!(attention.issued.as_deref(), Some("2017-06-12"));
    assert_eq!(
        attention.tags,
        [
            "Computer Science - Computation and Language",
            "Computer Science - Machine Learning"
        ]
    );
    let schrodinger = all[2];
    assert_eq!(schrodinger.authors, ["Schrödinger, Erwin"]);
    assert_eq!(
        schrodinger.container_title.as_deref(),
        Some("Annalen der Physik")
    );
    assert_eq!(
        schrodinger.title.as_deref(),
        Some("Quantisierung als Eigenwertproblem")
    );
    assert_eq!(schrodinger.issued.as_deref(), Some("1926"));
}

#[test]
fn zotero_and_scholar_exports_map_too() {
    let items = read(LIBRARY);
    let all = entries(&items);
    let who = all[3];
    assert_eq!(who.authors, ["World Health Organization"]);
    assert_eq!(
        who.title.as_deref(),
        Some(
            "WHO Director-General's Opening Remarks at the Media Briefing on COVID-19 – 11 March 2020"
        )
    );
    assert_eq!(who.issued.as_deref(), Some("2020-03"));
    assert_eq!(
        who.url.as_deref(),
        Some(
            "https://www.who.int/director-general/speeches/detail/who-director-general-s-opening-remarks-at-the-media-briefing-on-covid-19---11-march-2020"
        )
    );
    let scholar = all[4];
    assert_eq!(
        (&scholar.doi, &scholar.arxiv, &scholar.pmid, &scholar.url),
        (&None, &None, &None, &None)
    );
    assert_eq!(scholar.authors[6], "Kaiser, Łukasz");
    assert_eq!(scholar.authors[5], "Gomez, Aidan N");
    assert_eq!(
        scholar.container_title.as_deref(),
        Some("Advances in neural information processing systems")
    );
    assert_eq!(
        all[5].arxiv.as_deref(),
        Some("1810.04805"),
        "Scholar's arXiv preprint"
    );
    let zotero = all[6];
    assert_eq!(zotero.doi.as_deref(), Some("10.1038/nature12373"));
    assert_eq!(zotero.issued.as_deref(), Some("2013-07"));
    assert_eq!(zotero.container_title.as_deref(), Some("Nature"));
    assert_eq!(all[7].pmid.as_deref(), Some("31452104"));
    assert_eq!(all[7].issued.as_deref(), Some("2019"));
    assert_eq!(
        all[8].url.as_deref(),
        Some("https://doc.rust-lang.org/book/")
    );
    assert_eq!(all[8].title, None);
    let knuth = all[9];
    assert_eq!(knuth.authors, ["Knuth, Donald E."]);
    assert_eq!(
        (&knuth.doi, &knuth.url),
        (&None, &None),
        "nothing to fetch, still an entry"
    );
    let garcia = all[10];
    assert_eq!(
        garcia.authors,
        [
            "García-Márquez, Gabriel",
            "Müller, Jörg",
            "Ørsted, Hans Christian",
            "Erdős, Pál"
        ]
    );
    assert_eq!(
        garcia.title.as_deref(),
        Some("Café & Naïve Über-Straße: α-Tests — a Study")
    );
    assert_eq!(
        garcia.container_title.as_deref(),
        Some("Proceedings of the 1st Workshop on TeX & Friends")
    );
    assert_eq!(
        garcia.url.as_deref(),
        Some("https://example.org/papers/garcia2019?id=1&lang=en")
    );
    assert_eq!(garcia.issued.as_deref(), Some("2019-09"));
    assert_eq!(garcia.tags, ["tex", "accents"]);
}

#[test]
fn eprints_are_arxiv_or_pubmed_by_their_prefix_or_their_look() {
    let e =
        one("@misc{a, eprint = {2106.09685v2}, archivePrefix = {arXiv}, primaryClass = {cs.LG}}");
    assert_eq!(e.arxiv.as_deref(), Some("2106.09685v2"));
    let e = one("@misc{a, eprint = {hep-th/9901001}}");
    assert_eq!(
        e.arxiv.as_deref(),
        Some("hep-th/9901001"),
        "looks like arXiv"
    );
    let e = one("@misc{a, eprint = {12345}}");
    assert_eq!(e.arxiv, None, "a bare number is no arXiv id");
    let e = one("@misc{a, eprint = {1706.03762}, eprinttype = {jstor}}");
    assert_eq!((e.arxiv, e.pmid), (None, None), "another archive's id");
    let e = one("@misc{a, eprint = {31452104}, eprinttype = {PubMed}}");
    assert_eq!(e.pmid.as_deref(), Some("31452104"));
    let e = one("@misc{a, pmid = {31452104}, note = {See arXiv:1706.03762}}");
    assert_eq!(e.pmid.as_deref(), Some("31452104"));
    assert_eq!(e.arxiv.as_deref(), Some("1706.03762"), "named in the note");
    let e = one("@misc{a, pmid = {PMC123}}");
    assert_eq!(e.pmid, None, "not a PubMed id");
}

#[test]
fn identifiers_are_read_verbatim() {
    let e = one(r"@article{a, doi = {10.1000/a--b\_c}, url = {https://example.com/~x/a--b}}");
    assert_eq!(e.doi.as_deref(), Some("10.1000/a--b_c"));
    assert_eq!(e.url.as_deref(), Some("https://example.com/~x/a--b"));
    let e = one("@misc{a, howpublished = {Available at https://example.com/page and elsewhere}}");
    assert_eq!(e.url.as_deref(), Some("https://example.com/page"));
    let e = one("@misc{a, doi = {}, url = { }}");
    assert_eq!((e.doi, e.url), (None, None), "empty fields are no fields");
}

#[test]
fn dates_from_date_or_year_and_month() {
    let issued = |fields: &str| one(&format!("@misc{{a, {fields}}}")).issued;
    assert_eq!(issued("date = {2013-07-31}").as_deref(), Some("2013-07-31"));
    assert_eq!(
        issued("date = {2013-07/2013-08}").as_deref(),
        Some("2013-07")
    );
    assert_eq!(
        issued("date = {2013}, year = {1999}").as_deref(),
        Some("2013")
    );
    assert_eq!(
        issued("date = {circa}, year = {1999}").as_deref(),
        Some("1999")
    );
    assert_eq!(
        issued("year = 2017, month = dec").as_deref(),
        Some("2017-12")
    );
    assert_eq!(
        issued("year = {2017}, month = {Sept.}").as_deref(),
        Some("2017-09")
    );
    assert_eq!(
        issued("year = {2017}, month = {13}").as_deref(),
        Some("2017")
    );
    assert_eq!(issued("year = {in press}"), None);
    assert_eq!(issued("month = jul"), None);
}

#[test]
fn containers_in_order_of_preference_and_keywords_split() {
    let e = one("@inproceedings{a, booktitle = {Proc.}, journal = {J.}, journaltitle = {JT}}");
    assert_eq!(e.container_title.as_deref(), Some("JT"));
    let e = one("@inproceedings{a, booktitle = {Proc. of {ACL}}, journal = {}}");
    assert_eq!(e.container_title.as_deref(), Some("Proc. of ACL"));
    let e = one("@misc{a, keywords = {a, b;c ; {d, e}}}");
    assert_eq!(
        e.tags,
        ["a", "b", "c", "d", "e"],
        "braces do not protect commas here"
    );
}

#[test]
fn strings_expand_in_order_and_can_be_redefined() {
    let items = read(
        "@string{j = \"Journal\"}\n@string(jj = j # \" of Things\")\n\
         @article{a, journal = jj}\n@STRING{jj = {Other}}\n@article{b, journal = JJ # \" \" # 12}\n\
         @article{c, journal = notyet}\n@string{notyet = {Later}}\n",
    );
    let containers: Vec<Option<&str>> = entries(&items)
        .iter()
        .map(|e| e.container_title.as_deref())
        .collect();
    assert_eq!(
        containers,
        [Some("Journal of Things"), Some("Other 12"), None]
    );
}

#[test]
fn comments_preambles_and_prose_between_entries_are_passed_over() {
    let text = "Automatically generated by Mendeley Desktop 1.19.8\n\
                -----------------------------------------------------------------\n\
                Any changes to this file will be lost if it is regenerated by Mendeley.\n\n\
                % a comment line with = and {braces}\n\
                @Comment{jabref-meta: grouping:\n0 AllEntriesGroup:;\n}\n\
                @preamble{\"\\newcommand{\\x}{}\"}\n";
    assert_eq!(read(text), []);
    assert_eq!(read(""), []);
    assert_eq!(read("\n\n   \n"), []);
    assert_eq!(read("% only\n% comments\n@comment{x}\n"), []);
}

#[test]
fn malformed_entries_are_rejected_and_the_rest_read() {
    let items = read(
        "@article{ok1, title = {One}}\n\
         @article{title = {No key}}\n\
         @article{ok2, title = {Two}}\n\
         @article{nokey2 title = {x}}\n\
         @article{ok3, title = {Three}, year = {2020}}}, extra = {x}}\n\
         @article{ok4, title = {Four}}\n\
         @article{open, title = {Never closed}\n",
    );
    let keys: Vec<_> = entries(&items).iter().map(|e| e.key.as_deref()).collect();
    assert_eq!(keys, [Some("ok1"), Some("ok2"), Some("ok3"), Some("ok4")]);
    assert_eq!(
        rejected(&items),
        [
            (
                "line 2",
                "line 2: it has no citation key: a field comes first"
            ),
            (
                "nokey2",
                "line 4: expected `,` after the citation key, found `t`"
            ),
            (
                "line 5",
                "text outside any entry, not read (a broken entry?): “}, extra = {x}}”"
            ),
            (
                "open",
                "line 7: not closed with `}` before the end of the file (its braces do not balance)"
            ),
        ]
    );
}

#[test]
fn stray_text_is_named_by_the_line_that_looks_broken() {
    let items = read(
        "@misc{a, url = {https://a.example}}\nSome prose after it.\n\n\
         article{lost, title = {No at sign}}\nmore = {x}\n@misc{b, url = {https://b.example}}\n\
         @ misc\n",
    );
    assert_eq!(
        rejected(&items),
        [
            (
                "line 4",
                "text outside any entry, not read (a broken entry?): “article{lost, title = {No at sign}}”"
            ),
            (
                "line 7",
                "text outside any entry, not read (a broken entry?): “@ misc”"
            ),
        ]
    );
    assert_eq!(entries(&items).len(), 2);
}

#[test]
fn several_entries_on_a_line_and_parenthesised_entries() {
    let items = read(
        "@misc{a, url={https://a.example}}@misc{b, url={https://b.example}} @misc(c, title = \"x)y\")",
    );
    let keys: Vec<_> = entries(&items).iter().map(|e| e.key.clone()).collect();
    assert_eq!(keys, [Some("a".into()), Some("b".into()), Some("c".into())]);
    assert_eq!(entries(&items)[2].title.as_deref(), Some("x)y"));
}

#[test]
fn crlf_line_ends_and_a_byte_order_mark() {
    let crlf = LIBRARY.replace('\n', "\r\n");
    assert_eq!(read(&crlf), read(LIBRARY));
    let bom = format!("\u{feff}{LIBRARY}");
    assert_eq!(read(&bom), read(LIBRARY));
    let e = one("\u{feff}@misc{a,\r\n  title = {Two\r\n lines},\r\n}\r\n");
    assert_eq!(e.title.as_deref(), Some("Two lines"));
}

#[test]
fn a_5000_entry_file_reads_streaming() {
    struct Generated {
        n: usize,
        buf: Vec<u8>,
        at: usize,
    }
    impl std::io::Read for Generated {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            if self.at == self.buf.len() {
                if self.n == 5000 {
                    return Ok(0);
                }
                self.n += 1;
                self.buf = format!(
                    "@article{{key{n},\n  title = {{Paper {{{n}}} on Caf{{\\'e}}}},\n  author = {{Doe, Jane and Roe, Richard}},\n  doi = {{10.1000/{n}}},\n  year = {{2020}}\n}}\n\n",
                    n = self.n
                )
                .into_bytes();
                self.at = 0;
            }
            let n = out.len().min(self.buf.len() - self.at);
            out[..n].copy_from_slice(&self.buf[self.at..self.at + n]);
            self.at += n;
            Ok(n)
        }
    }
    let reader = std::io::BufReader::new(Generated {
        n: 0,
        buf: Vec::new(),
        at: 0,
    });
    let mut count = 0;
    let mut last = None;
    read_bibtex(reader, |item| {
        count += 1;
        last = Some(item);
    })
    .expect("read");
    assert_eq!(count, 5000);
    let Some(Item::Entry(e)) = last else {
        panic!("the last is an entry");
    };
    assert_eq!(e.doi.as_deref(), Some("10.1000/5000"));
    assert_eq!(e.title.as_deref(), Some("Paper 5000 on Café"));
}

#[test]
fn an_entry_past_the_size_limit_is_rejected_without_being_held() {
    let big = format!(
        "@article{{big,\n abstract = {{{}}}\n}}\n@misc{{after, url = {{https://example.com}}}}\n",
        "word ".repeat(MAX_BLOCK_BYTES / 5 + 10)
    );
    let items = read(&big);
    assert_eq!(
        rejected(&items),
        [("big", "line 1: longer than 4 MiB, not read")]
    );
    assert_eq!(entries(&items).len(), 1);
}

#[test]
fn macros_that_double_at_each_step_stay_bounded() {
    let mut text = String::from("@string{m0 = {xxxxxxxxxxxxxxxx}}\n");
    for i in 1..40 {
        text.push_str(&format!("@string{{m{i} = m{p} # m{p}}}\n", p = i - 1));
    }
    text.push_str("@misc{after, url = {https://example.com}}\n");
    let items = read(&text);
    assert!(!rejected(&items).is_empty(), "the long ones are refused");
    assert_eq!(entries(&items).len(), 1);
}

/// Where each entry of the full read ends in `text` (every entry of the library ends with a
/// `}` that starts a line).
fn entry_ends(text: &str) -> Vec<(String, usize)> {
    entries(&read(text))
        .iter()
        .filter_map(|e| {
            let key = e.key.clone()?;
            let start = text.find(&format!("{{{key},"))?;
            let end = start + text[start..].find("\n}")? + 2;
            Some((key, end))
        })
        .collect()
}

#[test]
fn every_truncation_reads_without_panic_and_keeps_the_entries_before_the_cut() {
    let full = read(LIBRARY);
    let ends = entry_ends(LIBRARY);
    assert_eq!(ends.len(), entries(&full).len());
    for cut in (0..=LIBRARY.len()).step_by(7).chain([LIBRARY.len()]) {
        let items = read_bytes(&LIBRARY.as_bytes()[..cut]);
        let got = entries(&items);
        for (key, end) in &ends {
            if *end <= cut {
                let want = entries(&full)
                    .into_iter()
                    .find(|e| e.key.as_deref() == Some(key.as_str()));
                assert!(
                    want.is_some_and(|w| got.contains(&w)),
                    "cut at {cut}: {key} (ends at {end}) is missing"
                );
            }
        }
    }
}

#[test]
fn noise_never_panics() {
    let mut seed = 0x2545_f491_u32;
    let alphabet = b"@{}()\"=,#%\\ \n\r\tabc{}@article{x,title=}\xc3\xa9\xff";
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
fn a_pmc_id_is_read_as_gleaners_own_export_writes_it() {
    let e = one("@article{k, title = {A paper}, eprint = {PMC6738312}, eprinttype = {PMCID}}");
    assert_eq!(e.pmcid.as_deref(), Some("PMC6738312"));
    let e = one("@article{k, title = {A paper}, pmcid = {PMC6738312}}");
    assert_eq!(e.pmcid.as_deref(), Some("PMC6738312"));
}

/// A field commented out with `%` between the others was "expected a field name, found `%`";
/// Mendeley's `url` holding every link was queued as one bogus address.
#[test]
fn comment_lines_between_fields_and_a_url_field_of_several_links() {
    let e = one(
        "@article{k,\n  title = {T},\n  % note = {left out},\n  %% another\n  doi = {10.1000/c1} % trailing\n}\n",
    );
    assert_eq!(e.doi.as_deref(), Some("10.1000/c1"));
    assert_eq!(e.title.as_deref(), Some("T"));
    let e = one("@article{m, url = {https://a.example/x https://b.example/y}}\n");
    assert_eq!(e.url.as_deref(), Some("https://a.example/x"));
    // A `%` inside a value is text.
    let e = one("@misc{p, title = {50% more}, url = {https://a.example/50%25}}\n");
    assert_eq!(e.title.as_deref(), Some("50% more"));
    assert_eq!(e.url.as_deref(), Some("https://a.example/50%25"));
}

/// `@inproceedings` and `@incollection` went out as journal articles: the type was dropped.
#[test]
fn an_entry_keeps_its_type() {
    let kind = |t: &str| one(&format!("@{t}{{k, doi = {{10.1/a}}}}\n")).kind;
    assert_eq!(kind("inproceedings").as_deref(), Some("paper-conference"));
    assert_eq!(kind("Conference").as_deref(), Some("paper-conference"));
    assert_eq!(kind("incollection").as_deref(), Some("chapter"));
    assert_eq!(kind("article").as_deref(), Some("article-journal"));
    assert_eq!(kind("misc"), None);
}
