#[test]
fn leftovers_of_a_killed_process_are_removed_and_nothing_else() {
    let dir = tempfile::tempdir().expect("tempdir");
    let host = dir.path().join("news.example");
    std::fs::create_dir_all(&host).expect("host dir");
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    let put = |name: &str, aged: bool| {
        let path = host.join(name);
        std::fs::write(&path, b"x").expect("write");
        if aged {
            let f = std::fs::File::options()
                .write(true)
                .open(&path)
                .expect("open");
            f.set_modified(old).expect("mtime");
        }
    };
    put(".gleaner-a1b2c3.tmp", true);
    put(".tmpZ9y8X7", true);
    put("article-7-0123abcd.html", true); // raw copy, its document never written
    put("kept-8-89abcdef.html", true);
    put("kept-8-89abcdef.md", true);
    // A paper's PDF, named after its landing page and itself, its document never written.
    put("paper-9-0123abcd-4567cdef.pdf", true);
    put("paper-10-0123abcd-4567cdef.pdf", true);
    put("paper-10-0123abcd-4567cdef.md", true);
    put("note.txt", true); // not a name Gleaner writes
    put(".gleaner-young1.tmp", false); // may be a live process's
    let lib = Library::new(dir.path());
    assert_eq!(lib.clean_leftovers().expect("clean"), 4);
    let mut left: Vec<String> = std::fs::read_dir(&host)
        .expect("list")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(
        left,
        [
            ".gleaner-young1.tmp",
            "kept-8-89abcdef.html",
            "kept-8-89abcdef.md",
            "note.txt",
            "paper-10-0123abcd-4567cdef.md",
            "paper-10-0123abcd-4567cdef.pdf",
        ]
    );
}

#[test]
fn a_removed_document_takes_its_raw_copy_and_nothing_else() {
    let dir = tempfile::tempdir().expect("tempdir");
    let host = dir.path().join("journal.example");
    std::fs::create_dir_all(&host).expect("host dir");
    for name in [
        "paper-9-0123abcd-4567cdef.md",
        "paper-9-0123abcd-4567cdef.pdf",
        "paper-9-0123abcd.md",
        "paper-9-0123abcd.html",
        "other-10-0123abcd.pdf",
    ] {
        std::fs::write(host.join(name), b"x").expect("write");
    }
    remove_document(&host.join("paper-9-0123abcd-4567cdef.md")).expect("remove");
    let mut left: Vec<String> = std::fs::read_dir(&host)
        .expect("list")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(
        left,
        [
            "other-10-0123abcd.pdf",
            "paper-9-0123abcd.html",
            "paper-9-0123abcd.md"
        ]
    );
    remove_document(&host.join("paper-9-0123abcd.md")).expect("remove");
    assert!(!host.join("paper-9-0123abcd.html").exists());
}

use super::*;

fn from(url: &str) -> Provenance<'_> {
    Provenance {
        job_id: 7,
        url,
        host: "news.example",
        fetched_at: 1_700_000_000_000,
        reference: None,
        stage: None,
        replaces: None,
    }
}

#[test]
fn a_document_does_not_carry_the_credentials_of_its_url() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lib = Library::new(dir.path().join("library"));
    let f = Fetched {
        status: 200,
        final_url: "https://ghp_token123@git.example/notes?x=1".into(),
        content_type: Some("text/plain".into()),
        body: b"Field notes from the archive.".to_vec(),
    };
    let saved = lib
        .save(
            &from("https://reader:s3cret@news.example/private/a"),
            &f,
            SaveOptions::default(),
        )
        .expect("save");
    let text = std::fs::read_to_string(&saved.path).expect("read");
    let (meta, _) = read_document(&text).expect("front matter");
    assert_eq!(meta["url"], "https://news.example/private/a");
    assert_eq!(meta["final_url"], "https://git.example/notes?x=1");
    assert!(
        !text.contains("s3cret") && !text.contains("ghp_token123"),
        "{text}"
    );
}

/// A reference's document carries its identifier and its entry's metadata, as JSON values
/// a YAML reader (Obsidian's properties) reads as strings and lists.
#[test]
fn a_paper_replaces_its_landing_page_with_the_abstract_and_keeps_its_pdf() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lib = Library::new(dir.path());
    let landing = Fetched {
        status: 200,
        final_url: "https://journal.example/articles/42".into(),
        content_type: Some("text/html".into()),
        body: include_bytes!("../../../tests-fixtures/extract/scholarly.html").to_vec(),
    };
    let of_doi = Provenance {
        url: "doi:10.5555/42",
        host: "journal.example",
        stage: Some(Stage::Landing),
        ..from("")
    };
    let page = lib
        .save(&of_doi, &landing, SaveOptions::default())
        .expect("landing");
    let text = std::fs::read_to_string(&page.path).expect("read");
    let (meta, _) = read_document(&text).expect("front matter");
    assert_eq!(meta["full_text"], false, "{text}");
    assert!(meta.get("pdf").is_none());
    assert_eq!(meta["authors"][0], "Okafor, Chidi");
    assert_eq!(meta["issued"], "2023-11-02");
    assert_eq!(
        page.pdf_url.as_deref(),
        Some("https://journal.example/articles/42.pdf")
    );

    let pdf_body = include_bytes!("../../../tests-fixtures/extract/article.pdf").to_vec();
    let pdf = Fetched {
        status: 200,
        final_url: "https://journal.example/articles/42.pdf".into(),
        content_type: Some("application/pdf".into()),
        body: pdf_body.clone(),
    };
    let of_pdf = Provenance {
        stage: Some(Stage::Pdf),
        reference: Some(&page.reference),
        replaces: Some(&page.path),
        ..of_doi
    };
    let paper = lib
        .save(&of_pdf, &pdf, SaveOptions::default())
        .expect("paper");
    // One document per version of a paper: named after its landing page and its PDF (the
    // worker removes the landing page's file once the paper is recorded).
    let page_stem = page.path.file_stem().expect("stem").to_string_lossy();
    assert_eq!(
        paper.path.file_name().expect("name").to_string_lossy(),
        format!("{page_stem}-{}.md", &paper.sha256[..8])
    );
    let text = std::fs::read_to_string(&paper.path).expect("read");
    let (meta, body) = read_document(&text).expect("front matter");
    assert_eq!(meta["full_text"], true);
    assert_eq!(meta["kind"], "pdf");
    assert_eq!(
        meta["title"], "Sediment Transport in Braided Rivers: A Field Study",
        "the landing page's title, not the PDF's"
    );
    let name = meta["pdf"].as_str().expect("pdf");
    let kept = std::fs::read(paper.path.with_file_name(name)).expect("the PDF beside it");
    assert_eq!(kept, pdf_body);
    // The Library list names the PDF by its path.
    let listed = paper
        .path
        .with_file_name(name)
        .to_string_lossy()
        .into_owned();
    assert_eq!(paper.index.pdf.as_deref(), Some(listed.as_str()));
    assert_eq!(page.index.pdf, None, "a landing page has no PDF of its own");
    assert!(
        body.starts_with("## Abstract\n\nA two-season field study"),
        "{body}"
    );
    assert!(body.contains("This sentence proves the PDF text layer was extracted."));
    assert_eq!(
        std::fs::read_dir(paper.path.parent().expect("dir"))
            .expect("ls")
            .count(),
        3,
        "the landing page's document, the paper's and its PDF"
    );
}

/// A re-fetch that finds the landing page unchanged writes it again under its own name; the
/// paper saved before keeps its text and its PDF, and a new PDF is a new version beside it.
#[test]
fn a_refetch_that_finds_the_landing_page_unchanged_keeps_the_earlier_paper() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lib = Library::new(dir.path());
    let landing = Fetched {
        status: 200,
        final_url: "https://journal.example/articles/42".into(),
        content_type: Some("text/html".into()),
        body: include_bytes!("../../../tests-fixtures/extract/scholarly.html").to_vec(),
    };
    let of_doi = Provenance {
        url: "doi:10.5555/42",
        host: "journal.example",
        stage: Some(Stage::Landing),
        ..from("")
    };
    let pdf = |body: &[u8]| Fetched {
        status: 200,
        final_url: "https://journal.example/articles/42.pdf".into(),
        content_type: Some("application/pdf".into()),
        body: body.to_vec(),
    };
    let first_pdf = include_bytes!("../../../tests-fixtures/extract/article.pdf");
    let page = lib
        .save(&of_doi, &landing, SaveOptions::default())
        .expect("landing");
    let paper = lib
        .save(
            &Provenance {
                stage: Some(Stage::Pdf),
                reference: Some(&page.reference),
                replaces: Some(&page.path),
                ..of_doi.clone()
            },
            &pdf(first_pdf),
            SaveOptions::default(),
        )
        .expect("paper");
    let paper_text = std::fs::read_to_string(&paper.path).expect("read");

    // Fetched again: the same landing page.
    let again = lib
        .save(&of_doi, &landing, SaveOptions::default())
        .expect("landing again");
    assert_ne!(
        again.path, paper.path,
        "the landing page has a name of its own"
    );
    assert_eq!(
        std::fs::read_to_string(&paper.path).expect("read"),
        paper_text,
        "the earlier paper is kept as it was"
    );
    let (meta, _) = read_document(&paper_text).expect("front matter");
    assert_eq!(meta["full_text"], true);
    let first_pdf_path = paper
        .path
        .with_file_name(meta["pdf"].as_str().expect("pdf"));

    // Its PDF has changed: a new version beside the old one, which keeps its bytes.
    let second_pdf = include_bytes!("../../../tests-fixtures/extract/untitled.pdf");
    assert_ne!(&first_pdf[..], &second_pdf[..]);
    let newer = lib
        .save(
            &Provenance {
                stage: Some(Stage::Pdf),
                reference: Some(&again.reference),
                replaces: Some(&again.path),
                ..of_doi.clone()
            },
            &pdf(second_pdf),
            SaveOptions::default(),
        )
        .expect("newer paper");
    assert_ne!(newer.path, paper.path);
    assert_eq!(
        std::fs::read(&first_pdf_path).expect("the earlier PDF"),
        first_pdf
    );
    assert_eq!(
        std::fs::read_to_string(&paper.path).expect("read"),
        paper_text
    );
}

#[test]
fn an_archived_copy_is_named_after_its_dead_link_and_says_when_it_was_taken() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lib = Library::new(dir.path());
    let reference = Reference {
        archived_at: Some("2013-09-19T04:46:12Z".into()),
        ..Reference::default()
    };
    let from = Provenance {
        url: "https://news.example/gone-story",
        stage: Some(Stage::Archived),
        reference: Some(&reference),
        ..from("")
    };
    let snapshot = Fetched {
        status: 200,
        final_url: "https://web.archive.org/web/20130919044612id_/https://news.example/gone-story"
            .into(),
        content_type: Some("text/plain".into()),
        body: b"The story as it was.".to_vec(),
    };
    let saved = lib
        .save(&from, &snapshot, SaveOptions::default())
        .expect("save");
    let name = saved
        .path
        .file_name()
        .expect("name")
        .to_string_lossy()
        .into_owned();
    assert!(name.starts_with("gone-story-7-"), "{name}");
    let text = std::fs::read_to_string(&saved.path).expect("read");
    let (meta, _) = read_document(&text).expect("front matter");
    assert_eq!(meta["archived_copy"], true);
    assert_eq!(meta["archived_at"], "2013-09-19T04:46:12Z");
    assert_eq!(meta["url"], "https://news.example/gone-story");
}

/// a YAML reader (Obsidian's properties) reads as strings and lists.
#[test]
fn a_references_document_names_its_identifier_authors_and_tags() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lib = Library::new(dir.path());
    let reference = Reference {
        title: Some("Nanometre-scale thermometry".into()),
        citation_key: Some("kucsko2013".into()),
        authors: vec!["Kucsko, G.".into(), "Lukin, M. D.".into()],
        issued: Some("2013-07-31".into()),
        container_title: Some("Nature".into()),
        entry_type: Some("article-journal".into()),
        tags: vec!["thesis".into(), "quantum \"sensing\"".into()],
        ..Reference::default()
    };
    let of_doi = Provenance {
        url: "doi:10.1038/nature12373",
        reference: Some(&reference),
        ..from("")
    };
    let f = Fetched {
        status: 200,
        final_url: "https://news.example/articles/nature12373".into(),
        content_type: Some("text/plain".into()),
        body: b"An abstract.".to_vec(),
    };
    let saved = lib.save(&of_doi, &f, SaveOptions::default()).expect("save");
    let text = std::fs::read_to_string(&saved.path).expect("read");
    let (meta, _) = read_document(&text).expect("front matter");
    assert_eq!(meta["doi"], "10.1038/nature12373");
    assert_eq!(meta["title"], "Nanometre-scale thermometry", "{text}");
    assert_eq!(
        meta["authors"],
        serde_json::json!(["Kucsko, G.", "Lukin, M. D."])
    );
    assert_eq!(meta["issued"], "2013-07-31");
    assert_eq!(meta["container_title"], "Nature");
    assert_eq!(meta["citation_key"], "kucsko2013");
    assert_eq!(meta["entry_type"], "article-journal");
    assert_eq!(meta["tags"][1], "quantum \"sensing\"");
    // A plain page has none of these keys.
    let plain = lib
        .save(&from("https://news.example/a"), &f, SaveOptions::default())
        .expect("save");
    let text = std::fs::read_to_string(&plain.path).expect("read");
    for key in ["doi:", "authors:", "tags:", "citation_key:", "entry_type:"] {
        assert!(!text.contains(key), "{key} in {text}");
    }
}

#[test]
fn what_the_library_list_shows_is_saved_and_read_back_alike() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lib = Library::new(dir.path());
    let reference = Reference {
        authors: vec!["Kucsko, G.".into(), "Lukin, M. D.".into()],
        issued: Some("2013-07-31".into()),
        container_title: Some("Nature".into()),
        ..Reference::default()
    };
    let of_doi = Provenance {
        url: "doi:10.1038/nature12373",
        reference: Some(&reference),
        ..from("")
    };
    let text = Fetched {
        status: 200,
        final_url: "https://news.example/articles/nature12373".into(),
        content_type: Some("text/plain".into()),
        body: b"An abstract.".to_vec(),
    };
    let paper = lib
        .save(&of_doi, &text, SaveOptions::default())
        .expect("save");
    let listed = |i: &Indexed| {
        (
            i.author_list.clone(),
            i.year.clone(),
            i.container.clone(),
            i.kind.clone(),
        )
    };
    assert_eq!(
        listed(&paper.index),
        (
            vec!["Kucsko, G.".to_string(), "Lukin, M. D.".to_string()],
            Some("2013".to_string()),
            Some("Nature".to_string()),
            Some("text".to_string())
        )
    );
    let page = Fetched {
        status: 200,
        final_url: "https://news.example/story".into(),
        content_type: Some("text/html".into()),
        body: "<!DOCTYPE html><html><head><title>A story</title>\
               <meta name=\"author\" content=\"Jane Doe\">\
               <meta property=\"og:site_name\" content=\"The Daily Example\">\
               <meta property=\"article:published_time\" content=\"2024-03-05T10:00:00Z\">\
               </head><body><article><h1>A story</h1><p>The fair came to town, and the \
               thermometers at the stalls all said it was warm for March.</p><p>Another \
               paragraph of ordinary words, so that the page reads as an article.</p>\
               </article></body></html>"
            .as_bytes()
            .to_vec(),
    };
    let story = lib
        .save(
            &from("https://news.example/story"),
            &page,
            SaveOptions::default(),
        )
        .expect("save");
    assert_eq!(
        listed(&story.index),
        (
            vec!["Jane Doe".to_string()],
            Some("2024".to_string()),
            Some("The Daily Example".to_string()),
            Some("html".to_string())
        )
    );
    // A rebuild reads the same from the front matter.
    let mut read = Vec::new();
    lib.each_document(10, |docs| -> Result<(), LibraryError> {
        read.extend(docs.iter().cloned());
        Ok(())
    })
    .expect("read back");
    for saved in [&paper, &story] {
        let path = saved.path.to_string_lossy();
        let (_, _, doc) = read.iter().find(|(_, p, _)| *p == path).expect("read back");
        assert_eq!(listed(doc), listed(&saved.index), "{path}");
        assert_eq!(doc.authors, saved.index.authors, "{path}");
    }
}

#[test]
fn saves_markdown_with_front_matter_atomically() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lib = Library::new(dir.path().join("library"));
    let f = Fetched {
        status: 200,
        final_url: "https://news.example/2024/05/Great_Story.html".into(),
        content_type: Some("text/html; charset=utf-8".into()),
        body: include_bytes!("../../../tests-fixtures/extract/news-article.html").to_vec(),
    };
    let saved = lib
        .save(
            &from("https://news.example/s?utm_source=x"),
            &f,
            SaveOptions::default(),
        )
        .expect("save");
    assert_eq!(
        saved.path,
        dir.path().join("library/news.example").join(format!(
            "2024-05-great-story-html-7-{}.md",
            &saved.sha256[..8]
        ))
    );
    let text = std::fs::read_to_string(&saved.path).expect("read");
    assert!(text.starts_with("---\nurl: \"https://news.example/s?utm_source=x\"\nfinal_url: \"https://news.example/2024/05/Great_Story.html\"\n"), "{text}");
    assert!(
        text.contains("\nfetched_at: \"2023-11-14T22:13:20.000Z\"\n"),
        "{text}"
    );
    assert!(text.contains("\njob_id: 7\n---\n"), "{text}");
    assert!(text.contains(&format!("sha256: \"{}\"", saved.sha256)));
    assert_eq!(saved.kind, DocKind::Html);
    let leftovers = std::fs::read_dir(saved.path.parent().expect("dir"))
        .expect("ls")
        .count();
    assert_eq!(leftovers, 1, "no temp files left behind");
    // The save synced the new host folder and the library folder that names it: a later
    // sync of the same folder needs only the folder's own.
    assert_eq!(lib.sync_folders([saved.path.as_path()]).expect("sync"), 1);
    assert_eq!(
        Library::new(dir.path().join("library"))
            .sync_folders([saved.path.as_path()])
            .expect("sync"),
        2,
        "a library that saved nothing there syncs both"
    );
}

#[test]
fn documents_read_back_into_metadata_and_text() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lib = Library::new(dir.path());
    let f = Fetched {
        status: 200,
        final_url: "https://x.example/a".into(),
        content_type: Some("text/plain".into()),
        body: b"Hello: world\n---\nstill text".to_vec(),
    };
    let saved = lib
        .save(&from("https://x.example/a"), &f, SaveOptions::default())
        .expect("save");
    let text = std::fs::read_to_string(&saved.path).expect("read");
    let (meta, body) = read_document(&text).expect("parse");
    assert_eq!(meta["url"], "https://x.example/a");
    assert_eq!(meta["job_id"], 7);
    assert_eq!(meta["title"], serde_json::Value::Null);
    assert_eq!(body, "Hello: world\n---\nstill text");
}

#[test]
fn a_hostile_title_stays_inside_its_yaml_string() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lib = Library::new(dir.path());
    let f = Fetched {
        status: 200,
        final_url: "https://x.example/".into(),
        content_type: Some("text/html".into()),
        body: include_bytes!("../../../tests-fixtures/extract/xss-title.html").to_vec(),
    };
    let saved = lib
        .save(&from("https://x.example/"), &f, SaveOptions::default())
        .expect("save");
    let text = std::fs::read_to_string(&saved.path).expect("read");
    let title_line = text
        .lines()
        .find(|l| l.starts_with("title: "))
        .expect("title");
    let title: String =
        serde_json::from_str(&title_line["title: ".len()..]).expect("a quoted string");
    assert_eq!(Some(title), saved.title);
}

#[test]
fn binary_bodies_are_kept_raw_with_a_note_and_block_pages_are_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lib = Library::new(dir.path());
    let png = Fetched {
        status: 200,
        final_url: "https://x.example/pixel.png".into(),
        content_type: Some("image/png".into()),
        body: include_bytes!("../../../tests-fixtures/extract/pixel.png").to_vec(),
    };
    let saved = lib
        .save(
            &from("https://x.example/pixel.png"),
            &png,
            SaveOptions::default(),
        )
        .expect("save");
    assert_eq!(saved.kind, DocKind::Raw);
    let note = std::fs::read_to_string(&saved.path).expect("note");
    assert!(
        note.contains(&format!(
            "saved unchanged as `pixel-png-7-{}.png`",
            &saved.sha256[..8]
        )),
        "{note}"
    );
    assert_eq!(
        std::fs::read(dir.path().join(format!(
            "news.example/pixel-png-7-{}.png",
            &saved.sha256[..8]
        )))
        .expect("raw"),
        png.body
    );

    let block = Fetched {
        content_type: Some("text/html".into()),
        body: include_bytes!("../../../tests-fixtures/extract/cloudflare.html").to_vec(),
        ..png
    };
    assert!(matches!(
        lib.save(&from("https://x.example/"), &block, SaveOptions::default()),
        Err(LibraryError::Content(ExtractError::Blocked(_)))
    ));
}

#[test]
fn settings_choose_whether_other_types_are_refused_and_raw_bodies_kept() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lib = Library::new(dir.path());
    let png = Fetched {
        status: 200,
        final_url: "https://x.example/pixel.png".into(),
        content_type: Some("image/png".into()),
        body: include_bytes!("../../../tests-fixtures/extract/pixel.png").to_vec(),
    };
    let refuse = SaveOptions {
        keep_binary: false,
        ..SaveOptions::default()
    };
    let err = lib
        .save(&from("https://x.example/pixel.png"), &png, refuse)
        .expect_err("refused");
    assert!(matches!(err, LibraryError::Refused { .. }));
    assert!(
        err.to_string()
            .starts_with("image/png is not text and is not kept"),
        "{err}"
    );
    assert!(
        std::fs::read_dir(dir.path()).expect("dir").next().is_none(),
        "nothing was written"
    );

    let html = Fetched {
        final_url: "https://x.example/article".into(),
        content_type: Some("text/html; charset=utf-8".into()),
        body: include_bytes!("../../../tests-fixtures/extract/news-article.html").to_vec(),
        ..png
    };
    let plain = lib
        .save(
            &from("https://x.example/article"),
            &html,
            SaveOptions::default(),
        )
        .expect("save");
    let text = std::fs::read_to_string(&plain.path).expect("read");
    assert!(
        text.contains("\nraw: null\n"),
        "no raw copy unless asked: {text}"
    );

    let keep_raw = SaveOptions {
        keep_raw: true,
        ..SaveOptions::default()
    };
    let saved = lib
        .save(&from("https://x.example/article"), &html, keep_raw)
        .expect("save");
    let text = std::fs::read_to_string(&saved.path).expect("read");
    let raw_name = saved
        .path
        .with_extension("html")
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .expect("name");
    assert!(text.contains(&format!("\nraw: \"{raw_name}\"\n")), "{text}");
    assert_eq!(
        std::fs::read(saved.path.with_extension("html")).expect("raw copy"),
        html.body
    );
}

#[test]
fn slugs_are_safe() {
    assert_eq!(slug("https://x.example/"), "index");
    assert_eq!(slug("https://x.example/../../etc/passwd"), "etc-passwd");
    assert_eq!(safe_segment(".."), "_");
}

#[test]
fn a_papers_own_headings_sit_below_full_text() {
    assert_eq!(
        demote_headings(
            "# A Field Study\n\nBy us.\n\n## 1 Introduction\n\n#hashtag\n",
            2
        ),
        "### A Field Study\n\nBy us.\n\n#### 1 Introduction\n\n#hashtag\n"
    );
    assert_eq!(
        demote_headings("##### Deep\n###### Deepest", 2),
        "###### Deep\n###### Deepest"
    );
}

#[test]
fn a_comment_in_a_code_block_is_no_heading_to_demote() {
    assert_eq!(
        demote_headings(
            "# Setup\n\n```sh\n# install it\napt install x\n```\n\n## Use\n\n~~~\n## not either\n~~~\n",
            2
        ),
        "### Setup\n\n```sh\n# install it\napt install x\n```\n\n#### Use\n\n~~~\n## not either\n~~~\n"
    );
}

#[test]
fn a_group_of_documents_syncs_each_of_their_folders_once_and_the_library_folder() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lib = Library::new(dir.path());
    let docs: Vec<std::path::PathBuf> = ["a.example/one.md", "a.example/two.md", "b.example/x.md"]
        .iter()
        .map(|d| dir.path().join(d))
        .collect();
    for d in &docs {
        write_atomic(d.parent().expect("folder"), d, b"text").expect("write");
    }
    let synced = lib
        .sync_folders(docs.iter().map(std::path::PathBuf::as_path))
        .expect("sync");
    assert_eq!(synced, 3, "two host folders and the library's own");
    let again = lib.sync_folders([docs[2].as_path()]).expect("sync");
    assert_eq!(
        again, 1,
        "a folder already named durably needs only its own sync"
    );
    assert_eq!(
        lib.sync_folders([]).expect("sync"),
        0,
        "nothing saved, nothing synced"
    );
    // A folder that is gone is an error that names it, not a silent success.
    let gone = dir.path().join("gone.example/doc.md");
    match lib.sync_folders([gone.as_path()]) {
        Err(LibraryError::Io { path, .. }) => assert!(path.ends_with("gone.example"), "{path:?}"),
        other => panic!("{other:?}"),
    }
}

/// A journal's landing page names its journal and its publisher's site apart: the journal is
/// the container a citation needs, the site is not.
#[test]
fn a_pages_journal_is_its_container_even_beside_a_site_name() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lib = Library::new(dir.path());
    let page = Fetched {
        status: 200,
        final_url: "https://publisher.example/articles/42".into(),
        content_type: Some("text/html".into()),
        body: br#"<html><head><title>On rivers</title>
            <meta property="og:site_name" content="PublisherSite">
            <meta name="citation_title" content="On Rivers">
            <meta name="citation_author" content="Doe, Jane">
            <meta name="citation_journal_title" content="Journal of Testing">
            </head><body><article><p>Rivers carry sediment downstream over many seasons,
            and this article says how much and why it matters to the people who live there.</p>
            </article></body></html>"#
            .to_vec(),
    };
    let saved = lib
        .save(
            &from("https://publisher.example/articles/42"),
            &page,
            SaveOptions::default(),
        )
        .expect("save");
    let text = std::fs::read_to_string(&saved.path).expect("read");
    let (meta, _) = read_document(&text).expect("front matter");
    assert_eq!(meta["container_title"], "Journal of Testing");
    assert_eq!(meta["site_name"], "PublisherSite");
}

/// A journal article's page without a site name of its own, a DOI written as a link, and a
/// date as Google Scholar's guidelines write it: cited as an article, with the DOI alone and
/// the whole date.
#[test]
fn a_journal_pages_doi_link_and_short_date_are_read_for_its_citation() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lib = Library::new(dir.path());
    let page = Fetched {
        status: 200,
        final_url: "https://fluvial.example/articles/7".into(),
        content_type: Some("text/html".into()),
        body: br#"<html><head><title>On rivers</title>
            <meta name="citation_title" content="On Rivers">
            <meta name="citation_author" content="Doe, Jane">
            <meta name="citation_publication_date" content="2010/5/12">
            <meta name="citation_doi" content="https://doi.org/10.1234/ABC_def(1)">
            <meta name="citation_journal_title" content="Journal of Fluvial Studies">
            </head><body><article><p>Rivers carry sediment downstream over many seasons,
            and this article says how much and why it matters to the people who live there.</p>
            </article></body></html>"#
            .to_vec(),
    };
    let saved = lib
        .save(
            &from("https://fluvial.example/articles/7"),
            &page,
            SaveOptions::default(),
        )
        .expect("save");
    let text = std::fs::read_to_string(&saved.path).expect("read");
    let (meta, _) = read_document(&text).expect("front matter");
    assert_eq!(meta["doi"], "10.1234/ABC_def(1)");
    assert_eq!(meta["issued"], "2010-05-12");
    assert_eq!(meta["container_title"], "Journal of Fluvial Studies");
    assert!(meta["site_name"].is_null(), "{meta:?}");
    let record = crate::engine::export::record::Record::from_front_matter(1, &meta, None);
    assert_eq!(record.kind, crate::engine::export::record::Kind::Article);
}

/// A DOI's landing page without its PDF: the resolver's title is the document's, not the
/// landing page's wording of it.
#[test]
fn a_references_title_from_the_resolver_beats_its_landing_pages() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lib = Library::new(dir.path());
    let reference = Reference {
        title: Some("Effects of E. coli on Rivers & Lakes".into()),
        ..Reference::default()
    };
    let of_doi = Provenance {
        url: "doi:10.1234/rivers",
        reference: Some(&reference),
        ..from("")
    };
    let page = Fetched {
        status: 200,
        final_url: "https://publisher.example/rivers".into(),
        content_type: Some("text/html".into()),
        body: br#"<html><head><meta name="citation_title" content="Landing title"></head>
            <body><article><p>Rivers carry sediment downstream over many seasons, and this
            article says how much and why it matters to the people who live there.</p>
            </article></body></html>"#
            .to_vec(),
    };
    let saved = lib
        .save(&of_doi, &page, SaveOptions::default())
        .expect("save");
    let text = std::fs::read_to_string(&saved.path).expect("read");
    let (meta, _) = read_document(&text).expect("front matter");
    assert_eq!(meta["title"], "Effects of E. coli on Rivers & Lakes");
}

/// Characters JSON leaves raw but YAML refuses (U+007F–U+009F) are escaped in the front matter,
/// so a YAML reader takes it, and they read back as they were.
#[test]
fn front_matter_escapes_what_yaml_refuses() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lib = Library::new(dir.path());
    let reference = Reference {
        title: Some("Key\u{7f}One \u{85}x".into()),
        authors: vec!["M\u{fc}ller\u{9f}, Hans".into()],
        ..Reference::default()
    };
    let from = Provenance {
        reference: Some(&reference),
        ..from("https://refs.example/a")
    };
    let page = Fetched {
        status: 200,
        final_url: "https://refs.example/a".into(),
        content_type: Some("text/plain".into()),
        body: b"Some text.".to_vec(),
    };
    let saved = lib
        .save(&from, &page, SaveOptions::default())
        .expect("save");
    let text = std::fs::read_to_string(&saved.path).expect("read");
    let head = text.split("\n---\n").next().expect("front matter");
    assert!(
        !head.contains(|c: char| ('\u{7f}'..='\u{9f}').contains(&c)),
        "{head:?}"
    );
    let (meta, _) = read_document(&text).expect("front matter");
    assert_eq!(meta["authors"][0], "M\u{fc}ller\u{9f}, Hans");
}

/// A Markdown page kept raw: its copy has a name of its own, so the document does not
/// overwrite the bytes it was made from.
#[test]
fn a_markdown_pages_raw_copy_is_not_its_document() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lib = Library::new(dir.path());
    let page = Fetched {
        status: 200,
        final_url: "https://notes.example/notes.md".into(),
        content_type: Some("text/markdown".into()),
        body: b"# Notes\n\nThe original bytes.\n".to_vec(),
    };
    let saved = lib
        .save(
            &from("https://notes.example/notes.md"),
            &page,
            SaveOptions {
                keep_raw: true,
                ..SaveOptions::default()
            },
        )
        .expect("save");
    let text = std::fs::read_to_string(&saved.path).expect("read");
    let (meta, _) = read_document(&text).expect("front matter");
    let raw = meta["raw"].as_str().expect("a raw copy");
    assert!(raw.ends_with(".markdown"), "{raw}");
    let copy = saved.path.with_file_name(raw);
    assert_eq!(std::fs::read(copy).expect("the copy"), page.body);
}

/// A reference whose full text cannot be had: the abstract and the metadata are the document
/// (DESIGN), so the abstract leads it, and an export finds it.
#[test]
fn a_landing_page_without_its_paper_leads_with_the_abstract() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lib = Library::new(dir.path());
    let reference = Reference {
        title: Some("Sediment pulses".into()),
        abstract_text: Some("We tagged stones and followed them through floods.".into()),
        ..Reference::default()
    };
    let of_doi = Provenance {
        url: "doi:10.1234/pulses",
        reference: Some(&reference),
        ..from("")
    };
    let page = Fetched {
        status: 200,
        final_url: "https://publisher.example/pulses".into(),
        content_type: Some("text/html".into()),
        body: br#"<html><head><title>Pulses</title></head><body><article><h1>Pulses</h1>
            <p>Access to the full text of this article requires a subscription, which your
            institution may provide; sign in to read it or buy it for a day.</p>
            </article></body></html>"#
            .to_vec(),
    };
    let saved = lib
        .save(&of_doi, &page, SaveOptions::default())
        .expect("save");
    let text = std::fs::read_to_string(&saved.path).expect("read");
    let (meta, body) = read_document(&text).expect("front matter");
    assert_eq!(meta["full_text"], false);
    assert!(
        body.trim_start().starts_with(
            "## Abstract\n\nWe tagged stones and followed them through floods.\n\n## Landing page"
        ),
        "{body}"
    );
    assert_eq!(
        crate::engine::export::record::abstract_of(body).as_deref(),
        Some("We tagged stones and followed them through floods.")
    );
}
