//! References in: identifiers in pasted reference lists, and their jobs fetched at the
//! services the settings name, here fakes on loopback. Drives the real binary.

use gleaner_tests::server::{Behavior, FaultServer};
use gleaner_tests::{Sandbox, stderr, stdout};

/// A reference list as a researcher pastes it: every identifier is queued once under its own
/// name, a DOI and its doi.org link are one job, and the prose around them is passed over.
#[test]
fn a_reference_list_is_queued_by_its_identifiers_and_each_doi_once() {
    let sb = Sandbox::new();
    let list = "\
References
1. Kucsko, G. et al. Nanometre-scale thermometry in a living cell. Nature 500, 54–58 (2013). doi:10.1038/nature12373
2. Vaswani, A. et al. Attention is all you need. NeurIPS 30 (2017). arXiv:1706.03762v5
3. Smith, J. A study of things. J. Examples 12, 45–67 (2019). PMID: 31452104
4. Roe, R. A trial. J. Trials 3 (2019). PMCID: PMC6738312
5. Kucsko, G. et al., again as a link: https://doi.org/10.1038/NATURE12373
6. Vaswani, A. et al., another version: https://arxiv.org/abs/1706.03762v7
";
    let out = sb.run_with_stdin(&["add", "--file", "-"], list.as_bytes());
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    let lines: Vec<String> = stdout(&out).lines().map(str::to_string).collect();
    assert_eq!(
        lines,
        [
            "queued 1 doi:10.1038/nature12373",
            "queued 2 arxiv:1706.03762v5",
            "queued 3 pmid:31452104",
            "queued 4 pmcid:PMC6738312",
            "duplicate 1 doi:10.1038/NATURE12373 (pending)",
            "duplicate 2 arxiv:1706.03762v7 (pending)",
        ],
        "{}",
        stdout(&out)
    );
    let jobs = sb.json(&["jobs", "list", "--json"]);
    let hosts: Vec<&str> = jobs
        .as_array()
        .expect("jobs")
        .iter()
        .map(|j| j["url"].as_str().expect("url"))
        .collect();
    assert_eq!(hosts.len(), 4, "{jobs}");
}

/// Each identifier is fetched at its service: the DOI's resolver link (which redirects to the
/// landing page), the arXiv abstract page and the PubMed page. The job keeps its identifier,
/// and its document is filed under the site the DOI resolved to.
#[test]
fn identifiers_are_fetched_at_the_services_the_settings_name() {
    let services = FaultServer::start();
    let publisher = FaultServer::start_on("127.0.0.2");
    let landing = publisher.url("/ok/kucsko-2013");
    services.script(
        "/10.1038/nature12373",
        vec![Behavior::Respond {
            status: 302,
            headers: vec![("Location".into(), landing.clone())],
            body: Vec::new(),
        }],
    );
    services.script("/abs/1706.03762", vec![Behavior::Ok]);
    services.script("/31452104/", vec![Behavior::Ok]);
    let base = services.url("");
    let flags = [
        "--doi-resolver",
        base.as_str(),
        "--arxiv",
        base.as_str(),
        "--pubmed",
        base.as_str(),
    ];
    let sb = Sandbox::new();
    let add = sb.run(&[
        "add",
        "doi:10.1038/nature12373",
        "arXiv:1706.03762",
        "PMID: 31452104",
    ]);
    assert!(add.status.success(), "{}", stdout(&add));
    let mut args = flags.to_vec();
    args.extend(["run", "--until-idle"]);
    let run = sb.run(&args);
    assert!(run.status.success(), "{}", stderr(&run));
    assert_eq!(services.hits("/10.1038/nature12373"), 1);
    assert_eq!(services.hits("/abs/1706.03762"), 1);
    assert_eq!(services.hits("/31452104/"), 1);
    assert_eq!(publisher.hits("/ok/kucsko-2013"), 1);

    let doi = sb.json(&["jobs", "show", "1", "--json"]);
    assert_eq!(doi["status"], "done", "{doi}");
    assert_eq!(doi["url"], "doi:10.1038/nature12373");
    assert_eq!(doi["final_url"], landing);
    let document = doi["document"].as_str().expect("document");
    assert!(
        document.contains("/library/127.0.0.2/"),
        "filed under the landing site: {document}"
    );
    let text = std::fs::read_to_string(document).expect("document");
    assert!(text.contains("url: \"doi:10.1038/nature12373\""), "{text}");
    assert!(text.contains("\ndoi: \"10.1038/nature12373\"\n"), "{text}");
    for id in ["2", "3"] {
        let job = sb.json(&["jobs", "show", id, "--json"]);
        assert_eq!(job["status"], "done", "{job}");
    }
}

/// A service address that is not a web address is refused before anything starts.
#[test]
fn a_service_that_is_not_a_web_address_is_refused() {
    let sb = Sandbox::new();
    let out = sb.run(&["--doi-resolver", "ftp://doi.example", "stats"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("--doi-resolver must be an http:// or https:// address"),
        "{err}"
    );
}

fn fixture(name: &str) -> String {
    format!(
        "{}/../src-tauri/tests-fixtures/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// A BibTeX library: an entry is a job, by its DOI, else its eprint, else its URL, and keeps its
/// own title, authors, date, container, keywords and key. Entries with nothing to fetch and
/// broken entries are named; the entries after them still come through.
#[test]
fn a_bibtex_file_is_a_job_per_entry_and_names_the_entries_it_cannot_take() {
    let sb = Sandbox::new();
    let out = sb.run(&["add", "--file", &fixture("references/library.bib")]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}{}", stderr(&out));
    for line in [
        "queued 1 doi:10.1038/nature12373",
        // arXiv's DataCite DOI is the paper's arXiv id.
        "queued 2 arxiv:1706.03762",
        "queued 3 doi:10.1002/andp.19263840404",
        "rejected broken-comma: line 49: missing `,` after field `title`",
        "rejected knuth1997art: nothing to fetch: the entry has no DOI, arXiv id, PubMed id or URL",
        "duplicate 1 doi:10.1038/nature12373 (pending)",
    ] {
        assert!(text.contains(line), "missing {line:?} in\n{text}");
    }
    let job = sb.json(&["jobs", "show", "1", "--json"]);
    assert_eq!(job["title"], "Nanometre-Scale Thermometry in a Living Cell");
    let r = &job["reference"];
    assert_eq!(r["citation_key"], "kucsko2013", "{job}");
    assert_eq!(r["authors"][0], "Kucsko, G.");
    assert_eq!(r["issued"], "2013-07-31");
    assert_eq!(r["container_title"], "Nature");
    assert_eq!(
        r["tags"],
        serde_json::json!([
            "nanoscale thermometry",
            "nitrogen-vacancy centres",
            "quantum sensing"
        ])
    );
    // Nothing that only the file's prose or a broken entry named was queued.
    let all = sb.json(&["jobs", "list", "--json"]);
    assert!(
        all.as_array()
            .expect("jobs")
            .iter()
            .all(|j| !j["url"].as_str().unwrap_or("").contains("never-read")),
        "{all}"
    );
}

/// RIS and CSL-JSON files read the same way, into the same jobs.
#[test]
fn ris_and_csl_json_files_join_the_same_jobs() {
    let sb = Sandbox::new();
    let bib = sb.run(&["add", "--file", &fixture("references/library.bib")]);
    assert_eq!(bib.status.code(), Some(1));
    let ris = sb.run(&["add", "--file", &fixture("references/library.ris")]);
    let text = stdout(&ris);
    assert!(
        text.contains("duplicate 1 doi:10.1038/nature12373"),
        "{text}"
    );
    assert!(
        text.contains("rejected unfinished: line 84: not closed"),
        "{text}"
    );
    let json = sb.run(&["add", "--file", &fixture("references/library.json")]);
    let text = stdout(&json);
    assert!(
        text.contains("duplicate 1 doi:10.1038/nature12373"),
        "{text}"
    );
    assert!(text.contains("queued"), "{text}");
}

/// PubMed's own export (MEDLINE, `.nbib`): a record with a DOI is its DOI, one without is its
/// PubMed id, and each keeps its title, authors, date and journal until better metadata comes.
#[test]
fn a_pubmed_export_queues_each_record_with_its_metadata() {
    let sb = Sandbox::new();
    let out = sb.run(&["add", "--file", &fixture("references/pubmed.nbib")]);
    let text = stdout(&out);
    assert!(out.status.success(), "{text}{}", stderr(&out));
    for line in [
        "queued 1 doi:10.1001/jama.2019.11921",
        "queued 2 pmid:12345678",
        "queued 3 pmid:30000001",
    ] {
        assert!(text.contains(line), "{line}: {text}");
    }
    assert!(!text.contains("rejected"), "{text}");
    let job = sb.json(&["jobs", "show", "2", "--json"]);
    assert_eq!(job["title"], "A study with no DOI.", "{job}");
    let r = &job["reference"];
    assert_eq!(
        r["authors"],
        serde_json::json!(["Doe, J", "WHO Study Group"])
    );
    assert_eq!(r["issued"], "2003-07");
    assert_eq!(r["container_title"], "Lancet");
    assert!(
        r["citation_key"].is_null(),
        "a PubMed id is no citation key: {job}"
    );
    let first = sb.json(&["jobs", "show", "1", "--json"]);
    assert_eq!(
        first["reference"]["authors"][1], "Reynolds, Charles F 3rd",
        "{first}"
    );
}

/// Firefox's JSON backup of its bookmarks is read as its HTML export would be, not refused as
/// a CSL-JSON file that is not one: folders are tags, smart folders and bookmarklets skipped.
#[test]
fn a_firefox_json_backup_takes_its_bookmarks_with_their_folders() {
    let sb = Sandbox::new();
    let out = sb.run(&["add", "--file", &fixture("bookmarks/firefox-backup.json")]);
    let text = stdout(&out);
    assert_eq!(
        out.status.code(),
        Some(1),
        "one bookmark is rejected: {text}"
    );
    assert!(
        text.contains("skipped Most Visited: a Firefox smart folder (place:), not a page"),
        "{text}"
    );
    assert!(
        text.contains("rejected A gopher hole: gopher: links cannot be fetched"),
        "{text}"
    );
    assert_eq!(text.matches("queued ").count(), 4, "{text}");
    assert!(!text.contains("CSL-JSON"), "{text}");
    let jobs = sb.json(&["jobs", "list", "--json"]);
    let arxiv = jobs
        .as_array()
        .expect("jobs")
        .iter()
        .find(|j| j["url"] == "arxiv:1706.03762")
        .expect("the arXiv bookmark is an arXiv job");
    assert_eq!(
        arxiv["reference"]["tags"],
        serde_json::json!(["Research", "Machine learning", "thesis", "transformers"]),
        "{arxiv}"
    );
}

/// A Firefox bookmark export: only HREFs count, entities decoded, icons ignored; smart folders
/// and bookmarklets are skipped with a reason and `add` still succeeds; folders are tags.
#[test]
fn a_firefox_bookmark_export_takes_its_links_and_skips_what_is_no_page() {
    let sb = Sandbox::new();
    let out = sb.run(&["add", "--file", &fixture("bookmarks/firefox.html")]);
    let text = stdout(&out);
    assert!(out.status.success(), "{text}{}", stderr(&out));
    assert!(
        text.contains("skipped Most Visited: a Firefox smart folder (place:), not a page"),
        "{text}"
    );
    assert!(
        text.contains("skipped Save to Wayback: a bookmarklet (javascript:), not a page"),
        "{text}"
    );
    assert!(
        text.contains(
            "https://scholar.google.com/scholar?hl=en&as_sdt=0%2C5&q=attention+is+all+you+need"
        ),
        "&amp; decoded: {text}"
    );
    assert!(!text.contains("favicon"), "an icon was queued: {text}");
    assert!(!text.contains("data:"), "an icon was read: {text}");
    assert!(!text.contains("rejected"), "{text}");
    let jobs = sb.json(&["jobs", "list", "--json"]);
    let arxiv = jobs
        .as_array()
        .expect("jobs")
        .iter()
        .find(|j| j["url"] == "arxiv:1706.03762")
        .expect("the arXiv bookmark is an arXiv job");
    let tags = &arxiv["reference"]["tags"];
    assert_eq!(tags[0], "Research", "{arxiv}");
    assert_eq!(tags[1], "Machine learning", "{arxiv}");
    assert!(arxiv["reference"]["citation_key"].is_null());
}

/// A DOI the resolver does not know dies at once as "no such DOI"; a DOI whose landing page is
/// gone after the redirect is a plain 404 of the publisher.
#[test]
fn a_doi_the_resolver_does_not_know_is_no_such_doi() {
    let resolver = FaultServer::start();
    let publisher = FaultServer::start_on("127.0.0.2");
    resolver.script(
        "/10.1000/moved",
        vec![Behavior::Respond {
            status: 302,
            headers: vec![("Location".into(), publisher.url("/gone"))],
            body: Vec::new(),
        }],
    );
    let sb = Sandbox::new();
    let add = sb.run(&["add", "doi:10.9999/nope", "doi:10.1000/moved"]);
    assert!(add.status.success(), "{}", stdout(&add));
    let base = resolver.url("");
    let run = sb.run(&["--doi-resolver", &base, "run", "--until-idle"]);
    assert!(run.status.success(), "{}", stderr(&run));
    let unknown = sb.json(&["jobs", "show", "1", "--json"]);
    assert_eq!(unknown["status"], "dead", "{unknown}");
    assert_eq!(unknown["attempts"], 1);
    let error = unknown["error"].as_str().expect("error");
    assert!(
        error.starts_with(
            "no such DOI: 10.9999/nope (the DOI resolver has no record of it: 404 Not Found)"
        ),
        "{error}"
    );
    let moved = sb.json(&["jobs", "show", "2", "--json"]);
    assert_eq!(moved["status"], "dead", "{moved}");
    let error = moved["error"].as_str().expect("error");
    assert!(error.starts_with("404 Not Found"), "{error}");
}

/// Chrome's and Safari's exports in their own formats: the folders each browser writes are
/// the tags (Safari's Reading List by that name), and what is no page is skipped.
#[test]
fn chrome_and_safari_exports_are_read_with_their_folders_as_tags() {
    let sb = Sandbox::new();
    for (file, skipped) in [
        (
            "bookmarks/chrome.html",
            "skipped Save to Zotero: a bookmarklet (javascript:), not a page",
        ),
        (
            "bookmarks/safari.html",
            "skipped Mail the lab: an e-mail address (mailto:), not a web page",
        ),
    ] {
        let out = sb.run(&["add", "--file", &fixture(file)]);
        let text = stdout(&out);
        assert!(out.status.success(), "{file}: {text}{}", stderr(&out));
        assert!(text.contains(skipped), "{file}: {text}");
        assert!(!text.contains("rejected"), "{file}: {text}");
    }
    let jobs = sb.json(&["jobs", "list", "--json"]);
    let tags_of = |url: &str| {
        jobs.as_array()
            .expect("jobs")
            .iter()
            .find(|j| j["url"] == url)
            .map(|j| j["reference"]["tags"].clone())
            .unwrap_or_else(|| panic!("no job for {url}: {jobs}"))
    };
    assert_eq!(
        tags_of("https://www.biorxiv.org/content/10.1101/2020.03.12.988246v1"),
        serde_json::json!(["Bookmarks bar", "Reading group"])
    );
    assert_eq!(
        tags_of("https://elifesciences.org/articles/82580"),
        serde_json::json!(["Reading List"])
    );
    // A PubMed link bookmarked in Chrome is a PubMed job.
    assert_eq!(
        tags_of("pmid:31452104"),
        serde_json::json!(["Bookmarks bar"])
    );
}
