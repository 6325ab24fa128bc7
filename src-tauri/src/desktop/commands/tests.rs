use super::*;

#[test]
fn settings_round_trip_through_the_policy() {
    let p = Policy::default();
    let s = Settings::from_policy(&p, true);
    assert_eq!(s.base_delay_secs, 30.0);
    assert_eq!(s.jitter_percent, 20.0);
    let back = s.apply(Policy::default()).expect("valid");
    assert_eq!(back.base_delay, p.base_delay);
    assert_eq!(back.max_delay, p.max_delay);
    assert_eq!(back.concurrency, p.concurrency);
    assert!((back.jitter - p.jitter).abs() < 1e-9);
}

#[test]
fn settings_out_of_range_name_the_field() {
    let ok = Settings::from_policy(&Policy::default(), true);
    let cases = [
        (
            Settings {
                max_delay_secs: 5.0,
                base_delay_secs: 10.0,
                ..ok.clone()
            },
            "Delay cap must be at least",
        ),
        (
            Settings {
                concurrency: 0.0,
                ..ok.clone()
            },
            "Concurrent fetches",
        ),
        // Values the page's number inputs can send: each is refused naming the field and
        // its range, not with a message about types.
        (
            Settings {
                max_retries: 1e20,
                ..ok.clone()
            },
            "Max retries must be a whole number from 0 to 50.",
        ),
        (
            Settings {
                per_host: 2.5,
                ..ok.clone()
            },
            "Fetches per host must be a whole number from 1 to 16.",
        ),
        (
            Settings {
                timeout_secs: 1.8446744073709552e19,
                ..ok.clone()
            },
            "Timeout must be between 1 and 600 seconds.",
        ),
        (
            Settings {
                base_delay_secs: f64::INFINITY,
                ..ok.clone()
            },
            "Base delay must be between",
        ),
        (
            Settings {
                jitter_percent: f64::NAN,
                ..ok.clone()
            },
            "Jitter",
        ),
        (
            Settings {
                timeout_secs: 0.1,
                ..ok.clone()
            },
            "Timeout",
        ),
    ];
    for (s, want) in cases {
        let err = s.apply(Policy::default()).expect_err("out of range");
        assert!(err.contains(want), "{err:?} should mention {want:?}");
    }
    // Host intervals and services: a bad line or address is named.
    for (s, want) in [
        (
            Settings {
                host_intervals: "arxiv.org=3s\n\narxiv.org 3s\n".into(),
                ..ok.clone()
            },
            "Line 3 of the host intervals must be host=duration",
        ),
        (
            Settings {
                host_intervals: "arxiv.org=3h\n".into(),
                ..ok.clone()
            },
            "Line 1 of the host intervals: give a duration",
        ),
        (
            Settings {
                pubmed: "ftp://pubmed.example".into(),
                ..ok.clone()
            },
            "PubMed must be an http:// or https:// address.",
        ),
    ] {
        let err = s.apply(Policy::default()).expect_err("refused");
        assert!(err.contains(want), "{err:?} should mention {want:?}");
    }
    let applied = Settings {
        host_intervals: "Example.org=250ms\nexample.net=0s\n".into(),
        ..ok.clone()
    }
    .apply(Policy::default())
    .expect("applied");
    assert_eq!(
        applied.host_intervals.into_iter().collect::<Vec<_>>(),
        [("example.org".to_string(), Duration::from_millis(250))]
    );
    // A stored value the panel does not show, out of range, is refused too.
    let stored = Policy {
        max_job_age: Duration::from_secs(u64::MAX / 1000),
        ..Policy::default()
    };
    assert_eq!(
        ok.apply(stored),
        Err("The maximum job age must be from 1s to 1year.".to_string())
    );
    // The page sends JSON numbers; one far too big still reaches `apply`.
    let sent = serde_json::json!({
        "base_delay_secs": 30, "max_delay_secs": 300, "max_retries": 1e20,
        "jitter_percent": 20, "concurrency": 4, "per_host": 2, "timeout_secs": 30,
        "keep_binary": true, "keep_raw": false, "notifications": true,
        "host_intervals": "arxiv.org=3s\n", "doi_resolver": "https://doi.org",
        "arxiv": "https://arxiv.org", "pubmed": "https://pubmed.ncbi.nlm.nih.gov",
        "wayback": "https://archive.org/wayback/available", "wayback_fallback": false
    });
    let s: Settings = serde_json::from_value(sent).expect("numbers deserialize");
    assert!(s.apply(Policy::default()).is_err());
}

#[test]
fn web_text_reaches_the_page_with_bidi_and_control_characters_escaped() {
    let store = crate::engine::sqlite::Store::open_in_memory().expect("store");
    let found = [intake::vet("http://[::1]:8080/a?b=c")];
    let mut intake = intake::Intake::new(&store, "t".into(), "paste", 5, 1, None);
    let Some(Enqueued::Queued { id, .. }) = intake.enqueue(&found).expect("enqueue").pop() else {
        panic!("queued")
    };
    let mut job = store.job(id).expect("read").expect("job");
    job.title = Some("Invoice \u{202e}exe.txt\u{202c}".into());
    job.error = Some("503 \u{2066}busy\u{1b}[2J".into());
    job.final_url = Some("http://[::1]:8080/\u{200f}".into());
    job.reference = Some(crate::engine::queue::Reference {
        authors: vec!["Doe\u{202e}, Jane".into()],
        container_title: Some("J. \u{1b}[31mChem".into()),
        citation_key: Some("doe\u{2066}2020".into()),
        ..Default::default()
    });
    let shown = shown_job(job);
    let r = shown.reference.as_ref().expect("reference");
    assert_eq!(r.authors, ["Doe\\u{202e}, Jane"]);
    assert_eq!(r.container_title.as_deref(), Some("J. \\u{1b}[31mChem"));
    assert_eq!(r.citation_key.as_deref(), Some("doe\\u{2066}2020"));
    assert_eq!(
        shown.title.as_deref(),
        Some("Invoice \\u{202e}exe.txt\\u{202c}")
    );
    assert_eq!(shown.error.as_deref(), Some("503 \\u{2066}busy\\u{1b}[2J"));
    assert_eq!(
        shown.final_url.as_deref(),
        Some("http://[::1]:8080/\\u{200f}")
    );
    // The URL and the host key are as stored: the pause button sends the host back.
    assert_eq!(shown.url, "http://[::1]:8080/a?b=c");
    assert_eq!(shown.host, "::1");
    assert_eq!(intake::host_name(&shown.host).as_deref(), Ok("::1"));
}

#[test]
fn a_drop_returns_counts_and_a_few_hundred_rejected_lines() {
    let store = crate::engine::sqlite::Store::open_in_memory().expect("store");
    let mut intake = intake::Intake::new(&store, "t".into(), "drop", 5, 1, None);
    let mut summary = AddSummary::default();
    let mut found = Vec::new();
    for i in 0..(intake::CHUNK * 3) {
        let line = if i % 100 == 0 {
            format!("https://a.example/{i}")
        } else {
            format!("junk{i}")
        };
        intake::scan_line(&line, &mut found);
        if found.len() >= intake::CHUNK {
            summary.take(&mut intake, &mut found).expect("take");
        }
    }
    summary.take(&mut intake, &mut found).expect("take");
    assert_eq!(summary.queued, 300);
    assert_eq!(summary.rejected, (intake::CHUNK * 3 - 300) as u64);
    assert_eq!(summary.rejected_lines.len(), REJECTED_SENT);
    assert_eq!(summary.rejected_lines[0].input, "junk1");
    let json = serde_json::to_string(&summary).expect("json");
    assert!(json.len() < 32 * 1024, "{} bytes to the page", json.len());
}

/// A Google Scholar BibTeX entry pasted is one job with its metadata, as through
/// `add --file -`; it was seven rejected lines and two jobs.
#[test]
fn a_pasted_bibtex_entry_is_read_as_bibtex() {
    let dir = tempfile::tempdir().expect("tempdir");
    let library = Library::new(dir.path().join("library"));
    let store = crate::engine::sqlite::Store::open_in_memory().expect("store");
    let pasted = "@article{kucsko2013nanometre,\n  title={Nanometre-scale thermometry},\n  \
                  author={Kucsko, Georg},\n  journal={Nature},\n  year={2013},\n  \
                  doi={10.1038/nature12373},\n  \
                  url={https://www.nature.com/articles/nature12373}\n}\n";
    let summary = add_found(
        pasted,
        "paste",
        Vec::new(),
        (None, false),
        (&store, &library),
        5,
    )
    .expect("add");
    assert_eq!((summary.queued, summary.rejected), (1, 0), "{summary:?}");
    let job = store.job(1).expect("job").expect("there");
    assert_eq!(job.url, "doi:10.1038/nature12373");
    let r = job.reference.expect("reference");
    assert_eq!(r.citation_key.as_deref(), Some("kucsko2013nanometre"));
    // Plain text is scanned line by line, as before.
    let summary = add_found(
        "see https://a.example/1\nand https://a.example/2",
        "paste",
        Vec::new(),
        (None, false),
        (&store, &library),
        5,
    )
    .expect("add");
    assert_eq!((summary.queued, summary.rejected), (2, 0), "{summary:?}");
    // A big dropped text file's later piece is its text even where it reads as BibTeX.
    let summary = add_found(
        pasted,
        "drop",
        Vec::new(),
        (None, true),
        (&store, &library),
        5,
    )
    .expect("add");
    assert_eq!((summary.queued, summary.rejected), (1, 4), "{summary:?}");
}

#[test]
fn only_paths_inside_the_library_open() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lib = dir.path().join("library");
    std::fs::create_dir_all(lib.join("example.org")).expect("mkdir");
    let inside = lib.join("example.org").join("a.md");
    std::fs::write(&inside, "x").expect("write");
    let outside = dir.path().join("secret.txt");
    std::fs::write(&outside, "x").expect("write");
    assert!(inside_library(&lib, &inside).is_ok());
    let err = inside_library(&lib, &outside).expect_err("outside");
    assert!(err.contains("outside the library"), "{err}");
    let sneaky = lib
        .join("example.org")
        .join("..")
        .join("..")
        .join("secret.txt");
    assert!(inside_library(&lib, &sneaky).is_err());
    let gone = inside_library(&lib, &lib.join("nope.md")).expect_err("missing");
    assert!(gone.ends_with("Retry the job to fetch it again."), "{gone}");
}
