use super::*;

fn urls(found: &[Found]) -> Vec<String> {
    found
        .iter()
        .filter_map(|f| match f {
            Found::Url { url, .. } => Some(url.clone()),
            Found::Rejected { .. } | Found::Skipped { .. } => None,
        })
        .collect()
}

fn rejected(found: &[Found]) -> Vec<(String, String)> {
    found
        .iter()
        .filter_map(|f| match f {
            Found::Rejected { input, reason } => Some((input.clone(), reason.clone())),
            Found::Url { .. } | Found::Skipped { .. } => None,
        })
        .collect()
}

#[test]
fn credentials_are_taken_out_of_a_url_and_nothing_else_changes() {
    assert_eq!(
        without_credentials("https://reader:s3cret@news.example/a?b=c&d=e#f"),
        "https://news.example/a?b=c&d=e#f"
    );
    assert_eq!(
        without_credentials("https://ghp_token123@git.example/notes"),
        "https://git.example/notes"
    );
    assert_eq!(
        without_credentials("http://:pw@[::1]:8080/x"),
        "http://[::1]:8080/x"
    );
    // Without credentials, the text is returned as it came, even where the parser would
    // write it differently.
    for same in [
        "HTTP://Example.COM:80/a b",
        "http://127.0.0.1:8080/a?b=c#d",
        "not a url @ all",
    ] {
        assert_eq!(without_credentials(same), same);
    }
}

#[test]
fn text_from_the_web_is_printed_without_its_control_characters() {
    assert_eq!(printable("Plain title"), "Plain title");
    assert_eq!(
        printable("Evil \u{1b}]0;pwned\u{7} \u{9b}31m\nline"),
        "Evil \\u{1b}]0;pwned\\u{7} \\u{9b}31m\\nline"
    );
}

#[test]
fn bidi_controls_from_the_web_are_printed_escaped() {
    // U+202E makes "Invoice exe.txt" show as "Invoice txt.exe" and reverses what follows.
    assert_eq!(
        printable("Invoice \u{202e}exe.txt\u{202c} ok"),
        "Invoice \\u{202e}exe.txt\\u{202c} ok"
    );
    for c in [
        '\u{202a}', '\u{202b}', '\u{202c}', '\u{202d}', '\u{202e}', '\u{2066}', '\u{2067}',
        '\u{2068}', '\u{2069}', '\u{200e}', '\u{200f}', '\u{061c}',
    ] {
        assert!(is_bidi_control(c), "{c:?}");
        let shown = printable(&format!("a{c}b")).into_owned();
        assert!(!shown.contains(c), "{c:?} reached {shown:?}");
    }
    // Right-to-left text itself is text, not a control; in prose, so are its marks.
    assert_eq!(printable("שלום عربي"), "שלום عربي");
    let arabic = "الماس \u{200f}(NV)\u{200f} \u{061c}x \u{200e}y";
    assert_eq!(printable_prose(arabic), arabic);
    assert_eq!(
        printable_prose("Invoice \u{202e}exe.txt \u{2067}x\u{1b}"),
        "Invoice \\u{202e}exe.txt \\u{2067}x\\u{1b}"
    );
    assert!(!is_bidi_control('\u{200d}'));
    // A rejected line echoed back is escaped the same way.
    let r = rejected(&scan_text("evil\u{202e}word"));
    assert_eq!(r[0].0, "evil\\u{202e}word");
}

#[test]
fn an_ipv6_host_is_named_as_its_jobs_store_it() {
    let Found::Url { host, .. } = vet("http://[::1]:8080/x") else {
        panic!("an IPv6 link is taken")
    };
    assert_eq!(host, "::1");
    for name in [
        "[::1]",
        "::1",
        "http://[::1]:8080/x",
        "[::1]:8080",
        " [0:0::1] ",
    ] {
        assert_eq!(host_name(name).as_deref(), Ok(host.as_str()), "{name}");
    }
    let Found::Url { host, .. } = vet("https://[2001:DB8:0::1]/a") else {
        panic!("an IPv6 link is taken")
    };
    assert_eq!(host, "2001:db8::1");
    for name in [
        "2001:db8::1",
        "[2001:DB8::1]",
        "https://[2001:db8:0:0::1]:443/b",
    ] {
        assert_eq!(host_name(name).as_deref(), Ok(host.as_str()), "{name}");
    }
    assert!(host_name("[::1").is_err());
    assert!(host_name("[nothex]").is_err());
}

fn all_lines(bytes: &[u8]) -> Vec<String> {
    let mut lines = text_lines(bytes).expect("text");
    let mut out = Vec::new();
    while let Some(line) = lines.next_line().expect("read") {
        out.push(line);
    }
    out
}

#[test]
fn input_is_read_line_by_line_as_str_lines_would() {
    assert_eq!(
        all_lines(b"a\r\nb\n\nc\xe9\nlast"),
        vec!["a", "b", "", "c\u{e9}", "last"],
        "a line that is not UTF-8 is read as Windows-1252"
    );
    assert_eq!(all_lines(b"one\n"), vec!["one"]);
    assert!(all_lines(b"").is_empty());
    // Binary data is told from its start, as a whole text would be.
    let noise: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    assert!(matches!(text_lines(&noise[..]), Err(IntakeError::Binary)));
    assert!(matches!(
        text_lines(&b"https://a.example/\0"[..]),
        Err(IntakeError::Binary)
    ));
}

#[test]
fn a_line_longer_than_the_limit_is_cut_without_losing_a_link_or_a_character() {
    // Prose with a link past the limit: cut at a space, so the link stays whole.
    let mut text = "word ".repeat(MAX_LINE_BYTES / 5 + 10);
    text.push_str("https://late.example/page and more\n");
    let lines = all_lines(text.as_bytes());
    assert!(lines.len() >= 2, "{}", lines.len());
    assert!(lines.iter().all(|l| l.len() <= MAX_LINE_BYTES));
    assert_eq!(
        lines.concat().matches("word").count(),
        MAX_LINE_BYTES / 5 + 10
    );
    assert_eq!(
        urls(&scan_text(&lines.join("\n"))),
        vec!["https://late.example/page"]
    );
    // No whitespace at all, in characters of two bytes: cut between characters.
    let word = "é".repeat(MAX_LINE_BYTES);
    let lines = all_lines(word.as_bytes());
    assert!(lines.len() >= 2);
    assert!(
        lines
            .iter()
            .all(|l| l.len() <= MAX_LINE_BYTES && !l.contains('\u{fffd}'))
    );
    assert_eq!(lines.concat(), word);
}

#[test]
fn an_intake_in_chunks_is_one_batch_and_makes_none_of_duplicates() {
    let store = crate::engine::sqlite::Store::open_in_memory().expect("store");
    let found = |from: usize, to: usize| -> Vec<Found> {
        (from..to)
            .map(|i| vet(&format!("https://a.example/{i}")))
            .collect()
    };
    let mut intake = Intake::new(&store, "big".into(), "file", 5, 1_000, None);
    assert_eq!(intake.enqueue(&found(0, 3)).expect("enqueue").len(), 3);
    let batch = intake.batch().expect("a batch");
    assert_eq!(intake.enqueue(&found(3, 6)).expect("enqueue").len(), 3);
    assert_eq!(intake.batch(), Some(batch));
    let batches = store.batches(10).expect("batches");
    assert_eq!(batches.len(), 1, "{batches:?}");
    assert_eq!(batches[0].jobs, 6);
    // Only duplicates: no batch.
    let mut again = Intake::new(&store, "again".into(), "file", 5, 2_000, None);
    let results = again.enqueue(&found(0, 6)).expect("enqueue");
    assert!(
        results
            .iter()
            .all(|r| matches!(r, Enqueued::Duplicate { .. }))
    );
    assert_eq!(again.batch(), None);
    assert_eq!(store.batches(10).expect("batches").len(), 1);
}

#[test]
fn finds_urls_in_prose_markdown_bibtex_and_html() {
    let text = "See https://example.com/a, and (http://example.org/b).\n\
                [paper](https://doi.org/10.1000/xyz123) is good.\n\
                @article{x, url = {https://arxiv.org/abs/2101.00001}}\n\
                <DT><A HREF=\"https://news.example/story?id=1\" ADD_DATE=\"1\">Story</A>\n\
                wiki https://en.wikipedia.org/wiki/Rust_(programming_language).\n\
                www.example.net/page\n\
                local http://[::1]:8080/v6 and [v6](http://[2001:db8::1]/x).\n\
                <DL><p>\n\
                </DL>\n\
                Just some words here.";
    let found = scan_text(text);
    assert_eq!(
        urls(&found),
        vec![
            "https://example.com/a",
            "http://example.org/b",
            // Resolver and repository links are their identifiers.
            "doi:10.1000/xyz123",
            "arxiv:2101.00001",
            "https://news.example/story?id=1",
            "https://en.wikipedia.org/wiki/Rust_(programming_language)",
            "https://www.example.net/page",
            "http://[::1]:8080/v6",
            "http://[2001:db8::1]/x",
        ]
    );
    assert!(rejected(&found).is_empty(), "{found:?}");
}

#[test]
fn rejects_dangerous_and_malformed_input_with_reasons() {
    let found = scan_text(
        "javascript:alert(1)\nfile:///etc/passwd\nhttp://\nhttps://exa mple.com\nftp://x.org/f\nhttp://a.invalid/x\nhttp://h:99999/\nnot_a_url\nexample.com",
    );
    let r = rejected(&found);
    let inputs: Vec<&str> = r.iter().map(|(i, _)| i.as_str()).collect();
    assert_eq!(
        inputs,
        vec![
            "javascript:alert(1)",
            "file:///etc/passwd",
            "http://",
            "ftp://x.org/f",
            "http://a.invalid/x",
            "http://h:99999/",
            "not_a_url",
            "example.com"
        ]
    );
    assert!(r[0].1.contains("only http:// and https://"), "{r:?}");
    assert!(r[1].1.contains("file:"), "{r:?}");
    assert!(r[2].1.contains("malformed"), "{r:?}");
    assert!(r[4].1.contains("never exists"), "{r:?}");
    assert!(r[5].1.contains("malformed"), "{r:?}");
    assert!(r[7].1.contains("https://"), "{r:?}");
    // "https://exa mple.com" is the address https://exa followed by prose.
    assert_eq!(urls(&found), vec!["https://exa/"]);
}

#[test]
fn a_heading_of_letters_is_prose_but_an_argument_of_letters_is_rejected() {
    for heading in ["References", "Bibliography:", "Références", "Literatur"] {
        assert!(scan_text(heading).is_empty(), "{heading}");
    }
    assert_eq!(rejected(&scan_args(&["notaurl"])).len(), 1);
}

#[test]
fn every_argument_must_hold_an_address() {
    let found = scan_args(&["https://ok.example/", "hello world"]);
    assert_eq!(urls(&found), vec!["https://ok.example/"]);
    assert_eq!(
        rejected(&found),
        vec![(
            "hello world".to_string(),
            "no web address found".to_string()
        )]
    );
}

/// `gleaner add "<a BibTeX entry>"` is the entry, with its metadata, as `add --file -` reads
/// it; it was a link per line that held one.
#[test]
fn an_argument_that_is_a_reference_entry_is_read_as_one() {
    let entry = "@article{k2013,\n  title={T},\n  doi={10.1038/nature12373},\n  \
                 url={https://www.nature.com/articles/nature12373}\n}\n";
    let found = scan_args(&["https://ok.example/", entry]);
    assert_eq!(
        urls(&found),
        vec!["https://ok.example/", "doi:10.1038/nature12373"]
    );
    let Found::Url { reference, .. } = &found[1] else {
        panic!("{found:?}")
    };
    let key = reference.as_ref().and_then(|r| r.citation_key.as_deref());
    assert_eq!(key, Some("k2013"));
    // A damaged entry is one rejection, as in a file.
    let found = scan_args(&["@article{x,\n title={never closed"]);
    assert_eq!(rejected(&found).len(), 1, "{found:?}");
    assert!(urls(&found).is_empty());
}

/// An argument that is one malformed link is named as typed, not as the part of it that
/// looked like a link.
#[test]
fn a_malformed_link_argument_is_echoed_whole() {
    let found = scan_args(&["http://[::1", "see http://[::1 too"]);
    let r = rejected(&found);
    assert_eq!(r.len(), 2, "{r:?}");
    assert_eq!(r[0].0, "http://[::1");
    assert!(r[0].1.contains("malformed"), "{r:?}");
    // In prose, the part that looked like a link is the one named.
    assert_eq!(r[1].0, "http://");
}

/// Prose's quotes, ellipses and full-width punctuation end a link; an apostrophe inside a
/// path does not.
#[test]
fn unicode_punctuation_ends_a_link_and_an_apostrophe_in_a_path_does_not() {
    let found = scan_text(
        "See \u{201C}https://example.com/curly\u{201D} and \u{2018}https://example.com/single\u{2019}. \
         Then https://example.com/ellipsis\u{2026} \u{00AB}https://example.com/guillemets\u{00BB} \
         https://example.com/a\u{FF0C}https://example.com/b\u{3002} \
         https://en.wikipedia.org/wiki/Hilbert's_problems 'https://example.com/quoted' \
         ['https://example.com/x','https://example.com/y']",
    );
    assert_eq!(
        urls(&found),
        [
            "https://example.com/curly",
            "https://example.com/single",
            "https://example.com/ellipsis",
            "https://example.com/guillemets",
            "https://example.com/a",
            "https://example.com/b",
            "https://en.wikipedia.org/wiki/Hilbert's_problems",
            "https://example.com/quoted",
            "https://example.com/x",
            "https://example.com/y",
        ]
    );
}

/// A Markdown link whose text is the DOI it links to is one paper, not a second job made
/// of the link's syntax.
#[test]
fn a_markdown_link_named_by_its_doi_is_one_paper() {
    for text in [
        "[doi:10.1038/nature12373](https://doi.org/10.1038/nature12373)",
        "[10.1038/nature12373](https://doi.org/10.1038/nature12373)",
    ] {
        let found = scan_text(text);
        assert!(rejected(&found).is_empty(), "{text}: {found:?}");
        let keys: std::collections::BTreeSet<&str> = found
            .iter()
            .filter_map(|f| match f {
                Found::Url { key, .. } => Some(key.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(keys.len(), 1, "{text}: {found:?}");
        assert!(!keys.iter().any(|k| k.contains("](")), "{keys:?}");
    }
}

/// Thousands of identifiers on one line without spaces are all found (each used to look
/// back to the line's start: 21 s for 10,000).
#[test]
fn a_long_line_of_identifiers_is_read_whole() {
    let line: Vec<String> = (0..10_000)
        .map(|i| format!("arXiv:{:02}{:02}.{:05}", 15 + (i / 12) % 10, 1 + i % 12, i))
        .collect();
    let found = scan_text(&line.join(","));
    assert_eq!(urls(&found).len(), 10_000);
    let found = scan_text(&"arXiv:".repeat(50_000));
    assert!(urls(&found).is_empty());
}

#[test]
fn normalization_drops_tracking_fragment_and_default_port() {
    let u = Url::parse("HTTP://Example.COM:80/a?utm_source=x&id=3&fbclid=y#frag").expect("url");
    assert_eq!(normalize(&u), "http://example.com/a?id=3");
    let u = Url::parse("https://example.com:443/?gclid=1").expect("url");
    assert_eq!(normalize(&u), "https://example.com/");
    // Escaped unreserved characters are the characters themselves; other escapes stay.
    let key = |s: &str| normalize(&Url::parse(s).expect("url"));
    assert_eq!(
        key("https://example.com/%7Euser/%41b"),
        "https://example.com/~user/Ab"
    );
    assert_eq!(
        key("https://example.com/%7euser"),
        key("https://example.com/~user")
    );
    assert_eq!(
        key("https://example.com/a%2Fb%20c%"),
        "https://example.com/a%2Fb%20c%"
    );
    assert_eq!(
        key("https://example.com/caf%C3%A9/%7E"),
        "https://example.com/caf%C3%A9/~"
    );
}

#[test]
fn a_rejected_input_is_echoed_without_control_characters_and_cut_when_long() {
    // An escape sequence in a dropped file must not reach the terminal that prints it.
    let r = rejected(&scan_text(
        "evil\u{1b}]0;owned\u{7}word\nhttps://ok.example/",
    ));
    assert_eq!(r.len(), 1, "{r:?}");
    assert_eq!(r[0].0, "evil\\u{1b}]0;owned\\u{7}word");
    assert!(!r[0].0.chars().any(char::is_control));
    let long = "x".repeat(100_000);
    let r = rejected(&scan_text(&long));
    assert_eq!(r[0].0, format!("{}… (100000 characters)", "x".repeat(200)));
    let r = rejected(&scan_text(&format!("https://{long}.example/")));
    assert!(r[0].0.ends_with("… (100017 characters)"), "{}", r[0].0);
    assert_eq!(r[0].1, "address longer than 8192 characters");
}

#[test]
fn long_runs_of_parentheses_and_brackets_are_scanned_in_linear_time() {
    // Each `)` trimmed used to recount the token's parentheses, and each `[` after `://`
    // searched the rest of the line for a `]`: minutes for a line of a dropped file.
    let parens = format!("see http://x.example/a{}.", ")".repeat(20_000));
    let brackets = "://[".repeat(250_000);
    let start = std::time::Instant::now();
    assert_eq!(trim_trailing(&parens[4..]), "http://x.example/a");
    assert_eq!(tokens(&brackets).len(), 250_000);
    let took = start.elapsed();
    assert!(took < std::time::Duration::from_secs(1), "took {took:?}");
    // What is kept is unchanged: balanced parentheses stay, an IPv6 host stays whole.
    assert_eq!(
        urls(&scan_text(&format!("{parens}\n(https://w.example/a_(b)).")))[1..],
        ["https://w.example/a_(b)"]
    );
    assert_eq!(
        urls(&scan_text("http://[::1]:1/a [x] http://[::2]/b]")),
        ["http://[::1]:1/a", "http://[::2]/b"]
    );
}

#[test]
fn binary_data_is_told_from_text() {
    assert!(looks_binary("https://a.example/\0"));
    let noise = String::from_utf8_lossy(&[0xff, 0xfe, 0x41, 0x80, 0x9f, 0x42, 0xc3]).into_owned();
    assert!(looks_binary(&noise.repeat(50)));
    assert!(!looks_binary(
        "https://a.example/\r\n\tnotes\x0c\nhttps://b.example/"
    ));
    // A few bad bytes in a long list are a damaged text file, not a binary one.
    let list = format!("{}\u{fffd}\n", "https://a.example/page\n".repeat(40));
    assert!(!looks_binary(&list));
}

#[test]
fn a_host_is_named_by_its_name_or_by_a_link_on_it() {
    assert_eq!(host_name("Example.COM").as_deref(), Ok("example.com"));
    assert_eq!(
        host_name(" example.com:8080 ").as_deref(),
        Ok("example.com")
    );
    assert_eq!(
        host_name("https://Sub.Example.com/a?b=1").as_deref(),
        Ok("sub.example.com")
    );
    assert_eq!(
        host_name("example.com/paper/1").as_deref(),
        Ok("example.com")
    );
    assert_eq!(
        host_name("bücher.example").as_deref(),
        Ok("xn--bcher-kva.example")
    );
    assert_eq!(host_name("127.0.0.1").as_deref(), Ok("127.0.0.1"));
    for bad in [
        "not a host!",
        "",
        "https://",
        "a b.example",
        "file:///etc/passwd",
    ] {
        let e = host_name(bad).expect_err(bad);
        assert!(e.contains("is not a host name"), "{bad}: {e}");
    }
}

#[test]
fn a_resolver_link_keeps_a_sici_dois_brackets() {
    for sici in [
        "10.1175/1520-0469(1963)020<0130:DNF>2.0.CO;2",
        "10.1890/0012-9658(2002)083[0001:AMFTPP]2.0.CO;2",
    ] {
        let found = scan_text(&format!("see https://doi.org/{sici}."));
        assert_eq!(urls(&found), [format!("doi:{sici}")]);
    }
    // Brackets of prose after an ordinary link still end it.
    assert_eq!(
        urls(&scan_text("https://doi.org/10.1038/nature12373[1]")),
        ["doi:10.1038/nature12373"]
    );
}

#[test]
fn a_comma_before_a_link_and_an_em_dash_end_a_link() {
    assert_eq!(
        urls(&scan_text("A,https://example.com/a,2019")),
        ["https://example.com/a,2019"],
        "a comma inside a link's path stays"
    );
    assert_eq!(
        urls(&scan_text("B,https://example.com/b,https://example.com/c")),
        ["https://example.com/b", "https://example.com/c"]
    );
    assert_eq!(
        urls(&scan_text("see https://example.com/a4\u{2014}then this")),
        ["https://example.com/a4"]
    );
}

#[test]
fn pubmeds_citation_line_is_one_paper() {
    let line = "Kucsko G, et al. Nanometre-scale thermometry. Nature. 2013;500(7460):54-58. \
                doi:10.1038/nature12373. PMID: 23903748; PMCID: PMC4221854.";
    assert_eq!(urls(&scan_text(line)), ["doi:10.1038/nature12373"]);
    assert_eq!(
        urls(&scan_text("Some paper. PMID: 23903748; PMCID: PMC4221854.")),
        ["pmid:23903748"]
    );
    // Lists of identifiers keep every one.
    assert_eq!(
        urls(&scan_text(
            "PMID: 23903748, PMID: 31452104; PMCID: PMC4221854"
        )),
        ["pmid:23903748", "pmid:31452104", "pmcid:PMC4221854"]
    );
    assert_eq!(
        urls(&scan_text(
            "10.1038/nature12373 10.1038/nature12374 PMID: 23903748"
        )),
        [
            "doi:10.1038/nature12373",
            "doi:10.1038/nature12374",
            "pmid:23903748"
        ]
    );
}

#[test]
fn a_latin1_reference_file_keeps_its_accents() {
    // JabRef 2.x wrote its files in the platform's encoding and said so in a comment.
    let mut bib = b"% Encoding: ISO8859_1\n\n@article{k,\n  author = {M".to_vec();
    bib.extend_from_slice(
        b"\xfcller, J\xf6rg},\n  title = {\xdcber Caf\xe9},\n  doi = {10.1038/x}\n}\n",
    );
    let mut entries = Vec::new();
    reference_file::read_reference_file(
        reference_file::ReferenceFormat::Bibtex,
        bib.as_slice(),
        |item| entries.push(item),
    )
    .expect("read");
    match entries.as_slice() {
        [entry::Item::Entry(e)] => {
            assert_eq!(e.authors, ["Müller, Jörg"]);
            assert_eq!(e.title.as_deref(), Some("Über Café"));
        }
        other => panic!("{other:?}"),
    }
    // A UTF-8 line is read as UTF-8.
    let mut lines = Lines::new("Müller\n".as_bytes());
    assert_eq!(lines.next_line().expect("read").as_deref(), Some("Müller"));
}

#[test]
fn a_labelled_identifier_that_is_not_one_is_rejected_with_its_reason() {
    let found = scan_text(
        "Smith J. Title. 2019. doi: 10.1038.\nJones K. 2020. PMID: 0314521.\nRoe R. arXiv:1501.0001 (2015).\nPMCID: PMC12x",
    );
    assert_eq!(urls(&found), Vec::<String>::new());
    let reasons = rejected(&found);
    assert_eq!(
        reasons.iter().map(|(i, _)| i.as_str()).collect::<Vec<_>>(),
        [
            "doi: 10.1038",
            "PMID: 0314521",
            "arXiv:1501.0001",
            "PMCID: PMC12x"
        ]
    );
    assert!(reasons[0].1.starts_with("not a DOI"), "{reasons:?}");
    assert!(reasons[2].1.starts_with("not an arXiv id"), "{reasons:?}");
    // Prose with the words is no identifier at all; good ones are queued.
    let found = scan_text("the doi: a prefix, and PMID: 23903748; arXiv: 2101.00001");
    assert!(rejected(&found).is_empty(), "{found:?}");
    assert_eq!(urls(&found), ["pmid:23903748", "arxiv:2101.00001"]);
    // A bare number says how to give a PubMed id.
    let reasons = rejected(&scan_text("31452104"));
    assert!(reasons[0].1.contains("write PMID:"), "{reasons:?}");
}

/// A file with classic Mac OS line ends (`\r` alone, some EndNote exports) was one long line:
/// every record of a RIS file was lost. `\r\n` is one break however the buffer cuts it.
#[test]
fn a_lone_carriage_return_ends_a_line() {
    let text = b"a\rb\r\nc\n\rd\r";
    for capacity in [1, 2, 3, 4, 64] {
        let mut lines = Lines::new(std::io::BufReader::with_capacity(capacity, &text[..]));
        let mut got = Vec::new();
        while let Some(line) = lines.next_line().expect("read") {
            got.push(line);
        }
        assert_eq!(got, ["a", "b", "c", "", "d"], "buffer of {capacity}");
    }
    let ris = b"TY  - JOUR\rAU  - Smith, J.\rTI  - CR only\rDO  - 10.1000/cr1\rER  - \r\rTY  - JOUR\rTI  - Two\rDO  - 10.1000/cr2\rER  - \r";
    let mut found = Vec::new();
    let kind = files::read_file(Some("cr.ris"), &ris[..], Vec::new(), |chunk| {
        found.append(chunk);
        Ok::<(), std::convert::Infallible>(())
    })
    .expect("read");
    assert_eq!(kind, files::FileKind::References(ReferenceFormat::Ris));
    assert_eq!(urls(&found), ["doi:10.1000/cr1", "doi:10.1000/cr2"]);
}
