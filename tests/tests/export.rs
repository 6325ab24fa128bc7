//! Citations out, through the real binary: a small library fetched for real (plain pages from
//! the fault server, a news page with a byline, a DOI and an arXiv id resolved at the scholarly
//! fakes, a BibTeX import with its own key and keywords), then `gleaner export` in every format,
//! each read back by something other than Gleaner's writer: BibTeX by the `biblatex` crate's
//! parser, CSL-JSON by CSL's own JSON schema, RIS by Gleaner's RIS reader in a fresh data folder.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

use biblatex::{Bibliography, ChunksExt as _, EntryType};
use gleaner_tests::scholarly::{
    Arxiv, Csl, DoiResolver, Eprint, Landing, Paper, PdfAnswer, PubMed, Publisher, Reply, Wayback,
};
use gleaner_tests::server::FaultServer;
use gleaner_tests::{Sandbox, stderr, stdout};
use serde_json::Value;

/// The news page's title: every character TeX treats specially, and one it does not.
const SPECIAL_TITLE: &str = "R&D at 100% of $5: #1 a_b ^ ~ C:\\temp {braces} in Müllheim";

/// A library built once for every test here (each test only reads it).
struct Built {
    sb: Sandbox,
    /// Every document's front matter, by job id, from the JSON Lines export.
    docs: BTreeMap<i64, Value>,
    /// The jobs: (id, url) as queued.
    urls: BTreeMap<i64, String>,
}

fn built() -> &'static Built {
    static BUILT: OnceLock<Built> = OnceLock::new();
    BUILT.get_or_init(build)
}

fn build() -> Built {
    let pages = FaultServer::start();
    let resolver = DoiResolver::start();
    let publisher = Publisher::start();
    let arxiv = Arxiv::start();
    let pubmed = PubMed::start();
    let wayback = Wayback::start();

    let paper = Paper::kucsko();
    let (landing, pdf) = ("/articles/nature12373", "/articles/nature12373.pdf");
    publisher.landing(
        landing,
        Landing::for_paper(&paper).pdf_meta(&publisher.url(pdf)),
    );
    publisher.pdf(pdf, PdfAnswer::Pdf);
    resolver.register(&paper.doi, &publisher.url(landing), Csl::Item(paper.csl()));
    arxiv.eprint("1706.03762", Eprint::vaswani());
    publisher.page("/news/specials", Reply::html(200, news_page()));

    let sb = Sandbox::new();
    let add = sb.run(&[
        "add",
        "doi:10.1038/nature12373",
        "arXiv:1706.03762",
        &pages.url("/ok/alpha"),
        &pages.url("/ok/beta"),
        &publisher.url("/news/specials"),
    ]);
    assert!(add.status.success(), "{}{}", stdout(&add), stderr(&add));
    let bib = sb.path().join("mine.bib");
    std::fs::write(
        &bib,
        format!(
            "@online{{Field2022:notes,\n  title = {{Notes on braided rivers}},\n  \
             author = {{Okafor, Chidi and Lindqvist, Astrid}},\n  date = {{2022-04-01}},\n  \
             url = {{{}}},\n  keywords = {{rivers, field work}},\n}}\n",
            pages.url("/ok/bib")
        ),
    )
    .expect("write the .bib");
    let add = sb.run(&["add", "--file", &bib.to_string_lossy()]);
    assert!(add.status.success(), "{}{}", stdout(&add), stderr(&add));

    let flags = [
        "--doi-resolver",
        &resolver.base(),
        "--arxiv",
        &arxiv.base(),
        "--pubmed",
        &pubmed.base(),
        "--wayback",
        &wayback.api_url(),
        "--base-delay",
        "100ms",
        "--jitter",
        "0",
        "run",
        "--until-idle",
    ]
    .map(str::to_string);
    let run = sb.run(&flags.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(run.status.success(), "{}", stderr(&run));

    let jobs = sb.json(&["jobs", "list", "--json"]);
    let urls: BTreeMap<i64, String> = jobs
        .as_array()
        .expect("jobs")
        .iter()
        .map(|j| {
            assert_eq!(j["status"], "done", "{j}");
            (
                j["id"].as_i64().expect("id"),
                j["url"].as_str().expect("url").to_string(),
            )
        })
        .collect();
    assert_eq!(urls.len(), 6, "{jobs}");
    let out = sb.run(&["export", "--format", "jsonl"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let docs = stdout(&out)
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).expect("a JSON line");
            (v["job_id"].as_i64().expect("job_id"), v)
        })
        .collect::<BTreeMap<_, _>>();
    assert_eq!(docs.len(), 6);
    Built { sb, docs, urls }
}

fn news_page() -> String {
    let escaped = SPECIAL_TITLE.replace('&', "&amp;");
    format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{escaped}</title>\
         <meta name=\"author\" content=\"Jürgen Müller\">\
         <meta property=\"og:site_name\" content=\"The Export Courier\">\
         <meta property=\"article:published_time\" content=\"2021-05-06T08:30:00Z\"></head>\
         <body><article><h1>{escaped}</h1><p>The committee met on Tuesday and agreed to fund \
         the mill, the bridge and the new footpath along the estuary, after a long debate.</p>\
         <p>This paragraph is here so that the page reads as an article: it has enough \
         ordinary words in it for the extractor to keep it as the story.</p></article></body></html>"
    )
}

impl Built {
    /// `gleaner export ARGS`, which must succeed; its standard output.
    fn export(&self, args: &[&str]) -> String {
        let mut all = vec!["export"];
        all.extend_from_slice(args);
        let out = self.sb.run(&all);
        assert!(out.status.success(), "export {args:?}: {}", stderr(&out));
        stdout(&out)
    }

    /// The job whose queued URL is `url`.
    fn job_of(&self, url: &str) -> i64 {
        *self
            .urls
            .iter()
            .find(|(_, u)| u.as_str() == url)
            .unwrap_or_else(|| panic!("no job for {url}: {:?}", self.urls))
            .0
    }

    fn job_ending(&self, suffix: &str) -> i64 {
        *self
            .urls
            .iter()
            .find(|(_, u)| u.ends_with(suffix))
            .unwrap_or_else(|| panic!("no job ending {suffix}: {:?}", self.urls))
            .0
    }

    /// The date the document of `job` was fetched, `YYYY-MM-DD`.
    fn fetched(&self, job: i64) -> String {
        self.docs[&job]["fetched_at"].as_str().expect("fetched_at")[..10].to_string()
    }

    /// Each CSL item's key by its title, from a full export.
    fn keys_by_title(&self) -> BTreeMap<String, String> {
        csl_items(&self.export(&["--format", "csljson"]))
            .iter()
            .map(|i| {
                (
                    i["title"].as_str().expect("title").to_string(),
                    i["id"].as_str().expect("id").to_string(),
                )
            })
            .collect()
    }
}

fn csl_items(text: &str) -> Vec<Value> {
    serde_json::from_str::<Value>(text)
        .unwrap_or_else(|e| panic!("CSL-JSON is JSON ({e}):\n{text}"))
        .as_array()
        .unwrap_or_else(|| panic!("one array:\n{text}"))
        .clone()
}

fn field(entry: &biblatex::Entry, name: &str) -> Option<String> {
    entry.get(name).map(|c| c.format_verbatim())
}

/// The BibTeX export parses with a real BibTeX parser: an entry per document under unique
/// keys, biblatex's types and fields, TeX's special characters read back as written.
#[test]
fn bibtex_parses_with_every_document_under_a_unique_key() {
    let b = built();
    let text = b.export(&["--format", "bibtex"]);
    let bib = Bibliography::parse(&text).unwrap_or_else(|e| panic!("{e:?}\n{text}"));
    assert_eq!(bib.len(), 6, "{text}");
    let keys: BTreeSet<String> = bib.keys().map(str::to_lowercase).collect();
    assert_eq!(keys.len(), 6, "keys unique, whatever their case: {keys:?}");

    let doi = bib
        .get("kucsko2013nanometre")
        .unwrap_or_else(|| panic!("{text}"));
    assert_eq!(doi.entry_type, EntryType::Article);
    assert_eq!(doi.doi().expect("doi"), "10.1038/nature12373");
    let authors = doi.author().expect("authors");
    assert_eq!(authors.len(), 8);
    assert_eq!(
        (authors[0].name.as_str(), authors[0].given_name.as_str()),
        ("Kucsko", "G.")
    );
    assert_eq!(
        (authors[7].name.as_str(), authors[7].given_name.as_str()),
        ("Lukin", "M. D.")
    );
    assert_eq!(field(doi, "journaltitle").as_deref(), Some("Nature"));
    assert_eq!(field(doi, "date").as_deref(), Some("2013-08-01"));
    let fetched = b.fetched(b.job_of("doi:10.1038/nature12373"));
    assert_eq!(field(doi, "urldate"), Some(fetched));
    assert!(doi.url_date().is_ok(), "urldate is a date biblatex reads");
    assert!(
        doi.verify().is_ok(),
        "an article biblatex finds complete: {text}"
    );
    assert!(
        field(doi, "abstract").is_some_and(|a| a.contains("Nitrogen-vacancy colour centres")),
        "{text}"
    );

    let eprint = bib
        .get("vaswani2017attention")
        .unwrap_or_else(|| panic!("{text}"));
    assert_eq!(eprint.entry_type, EntryType::Misc);
    assert_eq!(eprint.eprint().expect("eprint"), "1706.03762");
    assert_eq!(field(eprint, "eprinttype").as_deref(), Some("arxiv"));
    assert_eq!(eprint.author().expect("authors")[0].name, "Vaswani");
    assert!(eprint.verify().is_ok(), "{text}");

    let imported = bib
        .get("Field2022:notes")
        .unwrap_or_else(|| panic!("the imported key is kept: {text}"));
    assert_eq!(imported.entry_type, EntryType::Online);
    let names: Vec<String> = imported
        .author()
        .expect("authors")
        .iter()
        .map(|p| format!("{}, {}", p.name, p.given_name))
        .collect();
    assert_eq!(names, ["Okafor, Chidi", "Lindqvist, Astrid"]);
    assert_eq!(
        field(imported, "keywords").as_deref(),
        Some("rivers, field work")
    );
    assert!(imported.url().expect("url").ends_with("/ok/bib"), "{text}");

    // Two plain pages with the same name, year and word: the older keeps the bare key.
    let alpha = b.job_ending("/ok/alpha");
    let beta = b.job_ending("/ok/beta");
    assert!(alpha < beta);
    let key_of = |suffix: &str| {
        bib.iter()
            .find(|e| e.url().is_ok_and(|u| u.ends_with(suffix)))
            .map(|e| e.key.clone())
            .unwrap_or_else(|| panic!("no entry for {suffix}: {text}"))
    };
    assert_eq!(key_of("/ok/alpha"), "127001ndok");
    assert_eq!(key_of("/ok/beta"), "127001ndoka");

    let news = bib
        .iter()
        .find(|e| e.url().is_ok_and(|u| u.ends_with("/news/specials")))
        .unwrap_or_else(|| panic!("{text}"));
    assert_eq!(news.entry_type, EntryType::Online);
    assert_eq!(
        news.key, "muller2021r",
        "the byline's family name, folded; R&D is two words"
    );
    assert_eq!(
        news.title().expect("title").format_verbatim(),
        SPECIAL_TITLE,
        "TeX specials escaped so that a parser reads the title back: {text}"
    );
    let author = &news.author().expect("author")[0];
    assert_eq!(
        (author.name.as_str(), author.given_name.as_str()),
        ("Müller", "Jürgen"),
        "a byline that is one person's name is cited family first, in UTF-8"
    );
    assert_eq!(
        field(news, "organization").as_deref(),
        Some("The Export Courier")
    );
    assert_eq!(field(news, "date").as_deref(), Some("2021-05-06"));
}

/// The CSL-JSON export is valid against CSL's own schema, and says what the BibTeX says.
#[test]
fn csl_json_validates_against_the_csl_schema() {
    let b = built();
    let text = b.export(&["--format", "csljson"]);
    let items: Value = serde_json::from_str(&text).expect("JSON");
    let schema: Value = serde_json::from_str(include_str!("../data/csl-data.json"))
        .expect("the vendored schema is JSON");
    let validator = jsonschema::validator_for(&schema).expect("the schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(&items)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}\n{text}");
    // The schema is strict enough to refuse what CSL does not define.
    let mut bad = items.clone();
    bad[0]["doi"] = Value::from("lower-case is not CSL's DOI");
    assert!(
        !validator.is_valid(&bad),
        "the schema refuses unknown variables"
    );

    let items = items.as_array().expect("an array");
    assert_eq!(items.len(), 6);
    let by_id = |id: &str| {
        items
            .iter()
            .find(|i| i["id"] == id)
            .unwrap_or_else(|| panic!("no item {id}: {text}"))
    };
    let doi = by_id("kucsko2013nanometre");
    assert_eq!(doi["type"], "article-journal");
    assert_eq!(doi["DOI"], "10.1038/nature12373");
    assert_eq!(doi["container-title"], "Nature");
    assert_eq!(
        doi["author"][0],
        serde_json::json!({"family": "Kucsko", "given": "G."})
    );
    assert_eq!(
        doi["issued"]["date-parts"],
        serde_json::json!([[2013, 8, 1]])
    );
    let fetched = b.fetched(b.job_of("doi:10.1038/nature12373"));
    let parts: Vec<String> = doi["accessed"]["date-parts"][0]
        .as_array()
        .expect("accessed")
        .iter()
        .map(|p| format!("{:02}", p.as_u64().expect("a number")))
        .collect();
    assert_eq!(parts.join("-"), fetched);
    let eprint = by_id("vaswani2017attention");
    assert_eq!(eprint["type"], "article");
    assert_eq!(eprint["URL"], "https://arxiv.org/abs/1706.03762");
    let news = by_id("muller2021r");
    assert_eq!(news["type"], "webpage");
    assert_eq!(
        news["author"],
        serde_json::json!([{"family": "Müller", "given": "Jürgen"}])
    );
    assert_eq!(news["title"], SPECIAL_TITLE);
    assert_eq!(news["container-title"], "The Export Courier");
    assert_eq!(by_id("Field2022:notes")["keyword"], "rivers, field work");
}

/// The RIS export, added to a fresh data folder, gives the same jobs: the same DOIs, ids and
/// URLs, the same titles, and the export's keys as the entries' own.
#[test]
fn ris_reads_back_into_the_same_jobs() {
    let b = built();
    let text = b.export(&["--format", "ris"]);
    assert!(text.contains("\r\nER  - \r\n"), "CRLF lines: {text:?}");
    assert_eq!(text.matches("TY  - ").count(), 6, "{text}");
    let keys = b.keys_by_title();
    let fresh = Sandbox::new();
    let file = fresh.path().join("library.ris");
    std::fs::write(&file, &text).expect("write");
    let add = fresh.run(&["add", "--file", &file.to_string_lossy()]);
    assert!(add.status.success(), "{}{}", stdout(&add), stderr(&add));
    let jobs = fresh.json(&["jobs", "list", "--json"]);
    let back: BTreeMap<String, (String, String)> = jobs
        .as_array()
        .expect("jobs")
        .iter()
        .map(|j| {
            (
                j["url"].as_str().expect("url").to_string(),
                (
                    j["title"].as_str().unwrap_or_default().to_string(),
                    j["reference"]["citation_key"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                ),
            )
        })
        .collect();
    let want: BTreeMap<String, (String, String)> = b
        .docs
        .iter()
        .map(|(id, doc)| {
            let title = doc["title"].as_str().expect("title").to_string();
            let key = keys[&title].clone();
            (b.urls[id].clone(), (title, key))
        })
        .collect();
    assert_eq!(back, want, "{text}");
}

/// `--jobs` and `--search` export only their selection, under the keys the full export gives;
/// a named job that cannot go out is named on stderr and makes the exit 1, the rest still
/// written; `--jobs` with `--search` is refused.
#[test]
fn a_selection_exports_only_itself_under_the_full_exports_keys() {
    let b = built();
    let keys = b.keys_by_title();
    let beta = b.job_ending("/ok/beta");
    let eprint = b.job_of("arxiv:1706.03762");
    let ids = format!("{beta},{eprint}");
    let chosen = csl_items(&b.export(&["--format", "csljson", "--jobs", &ids]));
    let got: BTreeMap<String, String> = chosen
        .iter()
        .map(|i| {
            (
                i["title"].as_str().expect("title").to_string(),
                i["id"].as_str().expect("id").to_string(),
            )
        })
        .collect();
    let want: BTreeMap<String, String> = [beta, eprint]
        .iter()
        .map(|id| {
            let title = b.docs[id]["title"].as_str().expect("title").to_string();
            let key = keys[&title].clone();
            (title, key)
        })
        .collect();
    assert_eq!(got, want);
    assert_eq!(
        want.values()
            .filter(|k| k.as_str() == "127001ndoka")
            .count(),
        1
    );

    let found = b.export(&["--format", "bibtex", "--search", "thermometry"]);
    let bib = Bibliography::parse(&found).expect("BibTeX");
    assert_eq!(
        bib.keys().collect::<Vec<_>>(),
        ["kucsko2013nanometre"],
        "{found}"
    );

    let out_path = b.sb.path().join("exports-test").join("some.ris");
    std::fs::create_dir_all(out_path.parent().expect("a folder")).expect("mkdir");
    let out = b.sb.run(&[
        "export",
        "--format",
        "ris",
        "--jobs",
        &format!("{beta},999"),
        "--output",
        &out_path.to_string_lossy(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("job 999: no such job"), "{err}");
    assert!(err.contains("exported 1 document to "), "{err}");
    let written = std::fs::read_to_string(&out_path).expect("the output file");
    assert_eq!(written.matches("TY  - ").count(), 1, "{written}");
    assert!(written.contains("ID  - 127001ndoka\r\n"), "{written}");
    let left: Vec<_> = std::fs::read_dir(out_path.parent().expect("a folder"))
        .expect("ls")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(
        left.len(),
        1,
        "no temporary file left beside the output: {left:?}"
    );

    // Through a link, to the file it names, which keeps its mode.
    use std::os::unix::fs::PermissionsExt as _;
    let real = out_path.with_file_name("real.ris");
    std::fs::write(&real, "old").expect("write");
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let link = out_path.with_file_name("link.ris");
    std::os::unix::fs::symlink(&real, &link).expect("symlink");
    b.export(&["--format", "ris", "--output", &link.to_string_lossy()]);
    assert!(
        std::fs::symlink_metadata(&link)
            .expect("the link")
            .file_type()
            .is_symlink(),
        "the link is still a link"
    );
    let written = std::fs::read_to_string(&real).expect("the linked file");
    assert!(written.contains("TY  - "), "{written}");
    let mode = std::fs::metadata(&real).expect("stat").permissions().mode();
    assert_eq!(mode & 0o777, 0o644, "the file keeps its mode");

    let both = b.sb.run(&["export", "--jobs", "1", "--search", "x"]);
    assert_eq!(both.status.code(), Some(2), "{}", stderr(&both));
    assert!(
        stderr(&both).contains("cannot be used with"),
        "{}",
        stderr(&both)
    );
}
