//! References out as papers: a DOI resolved to its CSL-JSON metadata, its landing page and its
//! PDF; arXiv and PubMed ids at their services; a plain link whose page names a PDF; a dead
//! link's archived copy from the Wayback Machine. Each stage is an attempt of the job's own,
//! under the same classification, budgets and host pauses. Drives the real binary against fakes
//! of the services on loopback (`gleaner_tests::scholarly`), the publisher on 127.0.0.2 so that
//! its documents are filed apart.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant, SystemTime};

use gleaner_tests::scholarly::{
    self, Arxiv, Citation, Csl, DoiResolver, Eprint, KUCSKO_ABSTRACT, LOGIN_SENTENCE, Landing,
    PDF_BYTES, PDF_SENTENCE_2, Paper, PdfAnswer, PubMed, Publisher, Reply, SMITH_ABSTRACT,
    VASWANI_ABSTRACT, WAYBACK_TOOLBAR, Wayback,
};
use gleaner_tests::{Sandbox, stderr, stdout};
use serde_json::{Value, json};

/// Longest a `run --until-idle` may take before the test calls it hung.
const RUN_LIMIT: Duration = Duration::from_secs(120);

/// The five services, each on its own address.
struct Fakes {
    resolver: DoiResolver,
    publisher: Publisher,
    arxiv: Arxiv,
    pubmed: PubMed,
    wayback: Wayback,
}

impl Fakes {
    fn start() -> Fakes {
        Fakes {
            resolver: DoiResolver::start(),
            publisher: Publisher::start(),
            arxiv: Arxiv::start(),
            pubmed: PubMed::start(),
            wayback: Wayback::start(),
        }
    }

    /// The global flags that point Gleaner at the fakes, and keep retries quick.
    fn flags(&self) -> Vec<String> {
        [
            "--doi-resolver",
            &self.resolver.base(),
            "--arxiv",
            &self.arxiv.base(),
            "--pubmed",
            &self.pubmed.base(),
            "--pmc",
            &self.publisher.base(),
            "--wayback",
            &self.wayback.api_url(),
            "--base-delay",
            "100ms",
            "--jitter",
            "0",
        ]
        .iter()
        .map(|s| (*s).to_string())
        .collect()
    }

    /// `gleaner <flags> <extra> run --until-idle`, within [`RUN_LIMIT`]; its log.
    fn run(&self, sb: &Sandbox, extra: &[&str]) -> String {
        let mut args = self.flags();
        args.extend(extra.iter().map(|s| (*s).to_string()));
        args.extend(["run".to_string(), "--until-idle".to_string()]);
        run_within(sb, &args, RUN_LIMIT)
    }

    /// The publisher's landing page for `paper` at `/articles/{slug}`, its PDF (named by
    /// `citation_pdf_url`, absolute) at `/articles/{slug}.pdf` answering `pdf`, and the DOI
    /// registered with `csl`. Returns (landing path, PDF path).
    fn article(&self, paper: &Paper, slug: &str, csl: Csl, pdf: PdfAnswer) -> (String, String) {
        let landing_path = format!("/articles/{slug}");
        let pdf_path = format!("/articles/{slug}.pdf");
        self.publisher.landing(
            &landing_path,
            Landing::for_paper(paper).pdf_meta(&self.publisher.url(&pdf_path)),
        );
        self.publisher.pdf(&pdf_path, pdf);
        self.resolver
            .register(&paper.doi, &self.publisher.url(&landing_path), csl);
        (landing_path, pdf_path)
    }
}

fn run_within(sb: &Sandbox, args: &[String], limit: Duration) -> String {
    let log = tempfile::NamedTempFile::new().expect("log file");
    let out = tempfile::NamedTempFile::new().expect("output file");
    let mut child = sb
        .cmd()
        .args(args)
        .stdout(Stdio::from(out.reopen().expect("output file")))
        .stderr(Stdio::from(log.reopen().expect("log file")))
        .spawn()
        .expect("spawn gleaner");
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for gleaner") {
            break status;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "gleaner {args:?} still running after {limit:?}\n{}",
                std::fs::read_to_string(log.path()).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let text = std::fs::read_to_string(log.path()).unwrap_or_default();
    // Shown with a failing test's output.
    eprintln!("--- gleaner {args:?} ---\n{text}");
    assert!(
        status.success(),
        "gleaner {args:?} failed: {status}\n{text}"
    );
    text
}

fn add(sb: &Sandbox, items: &[&str]) {
    let mut args = vec!["add"];
    args.extend_from_slice(items);
    let out = sb.run(&args);
    assert!(
        out.status.success(),
        "add {items:?}: {}{}",
        stdout(&out),
        stderr(&out)
    );
}

fn job(sb: &Sandbox, id: u32) -> Value {
    sb.json(&["jobs", "show", &id.to_string(), "--json"])
}

fn history(job: &Value) -> &Vec<Value> {
    job["history"].as_array().expect("history")
}

/// (stage, outcome) of each attempt.
fn steps(job: &Value) -> Vec<(Value, Value)> {
    history(job)
        .iter()
        .map(|a| (a["stage"].clone(), a["outcome"].clone()))
        .collect()
}

/// A document: its front matter (each line `key: <JSON>`) and its text.
struct Doc {
    path: PathBuf,
    meta: serde_json::Map<String, Value>,
    text: String,
}

impl Doc {
    fn of(job: &Value) -> Doc {
        let path = PathBuf::from(
            job["document"]
                .as_str()
                .unwrap_or_else(|| panic!("the job has no document: {job}")),
        );
        let whole =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let rest = whole
            .strip_prefix("---\n")
            .unwrap_or_else(|| panic!("no front matter in {}:\n{whole}", path.display()));
        let end = rest
            .find("\n---\n")
            .unwrap_or_else(|| panic!("front matter not closed:\n{whole}"));
        let mut meta = serde_json::Map::new();
        for line in rest[..end].lines() {
            let (key, value) = line
                .split_once(": ")
                .unwrap_or_else(|| panic!("not `key: value`: {line:?}\n{whole}"));
            let value: Value = serde_json::from_str(value)
                .unwrap_or_else(|e| panic!("{key}: not JSON ({e}): {value}\n{whole}"));
            meta.insert(key.to_string(), value);
        }
        Doc {
            path,
            meta,
            text: rest[end + "\n---\n".len()..].to_string(),
        }
    }

    /// A front matter value; `null` when the key is absent.
    fn get(&self, key: &str) -> &Value {
        self.meta.get(key).unwrap_or(&Value::Null)
    }

    /// The file the `pdf` key names, beside the document.
    fn pdf_file(&self) -> PathBuf {
        let name = self
            .get("pdf")
            .as_str()
            .unwrap_or_else(|| panic!("no `pdf` in the front matter of {}", self.path.display()));
        assert!(
            !name.contains('/') && name.ends_with(".pdf"),
            "`pdf` should name a .pdf file in the document's folder: {name}"
        );
        self.path.parent().expect("a folder").join(name)
    }

    /// No PDF was kept: no `pdf` key (or null) and no .pdf file beside the document.
    fn assert_no_pdf(&self) {
        assert!(self.get("pdf").is_null(), "pdf: {}", self.get("pdf"));
        let folder = self.path.parent().expect("a folder");
        let pdfs: Vec<String> = std::fs::read_dir(folder)
            .expect("the document's folder")
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".pdf"))
            .collect();
        assert!(pdfs.is_empty(), "PDF files beside the document: {pdfs:?}");
    }

    fn assert_full_text_pdf(&self) {
        assert_eq!(self.get("full_text"), &json!(true), "{}", self.dump());
        let pdf = self.pdf_file();
        let bytes = std::fs::read(&pdf).unwrap_or_else(|e| panic!("{}: {e}", pdf.display()));
        assert!(
            bytes == PDF_BYTES,
            "{} is not the PDF the publisher served ({} bytes, not {})",
            pdf.display(),
            bytes.len(),
            PDF_BYTES.len()
        );
        assert!(
            self.text.contains(PDF_SENTENCE_2),
            "the PDF's text is not the document's:\n{}",
            self.dump()
        );
    }

    fn dump(&self) -> String {
        format!(
            "--- {} ---\n{}\n---\n{}",
            self.path.display(),
            serde_json::to_string_pretty(&self.meta).unwrap_or_default(),
            self.text
        )
    }
}

fn under_host(doc: &Doc, host: &str) -> bool {
    doc.path
        .to_string_lossy()
        .contains(&format!("/library/{host}/"))
}

fn gap_ms(earlier: SystemTime, later: SystemTime) -> u128 {
    later
        .duration_since(earlier)
        .map(|d| d.as_millis())
        .unwrap_or(0)
}

/// A DOI is resolved in four requests, each an attempt of the job: the resolver asked for
/// CSL-JSON; the resolver asked plainly, whose redirect to the publisher is not followed but
/// queued in the publisher's lane; the publisher's landing page; and the PDF it names. The document is the PDF's text with the abstract, filed under
/// the publisher's site, with the registration agency's metadata (title, "Family, Given"
/// authors, the issue date, the journal) and the PDF kept beside it.
#[test]
fn a_doi_is_resolved_to_its_metadata_landing_page_and_pdf() {
    let fakes = Fakes::start();
    let paper = Paper::kucsko();
    let landing_path = "/articles/nature12373";
    let pdf_path = "/articles/nature12373.pdf";
    // The landing page's own meta differs from the agency's where Nature's does: authors as
    // "G. Kucsko", and the online date, a day before the issue date the CSL item gives.
    fakes.publisher.landing(
        landing_path,
        Landing::for_paper(&paper)
            .authors_as(&[
                "G. Kucsko",
                "P. C. Maurer",
                "N. Y. Yao",
                "M. Kubo",
                "H. J. Noh",
                "P. K. Lo",
                "H. Park",
                "M. D. Lukin",
            ])
            .published("2013/07/31")
            .pdf_meta(&fakes.publisher.url(pdf_path)),
    );
    fakes.publisher.pdf(pdf_path, PdfAnswer::Pdf);
    fakes.resolver.register(
        &paper.doi,
        &fakes.publisher.url(landing_path),
        Csl::Item(paper.csl()),
    );
    let sb = Sandbox::new();
    add(&sb, &["doi:10.1038/nature12373"]);
    fakes.run(&sb, &[]);

    let asked = fakes.resolver.requests();
    assert_eq!(
        asked.iter().map(|r| r.target.as_str()).collect::<Vec<_>>(),
        ["/10.1038/nature12373", "/10.1038/nature12373"],
        "the resolver is asked twice"
    );
    assert!(
        asked[0].wants_csl(),
        "the first request asks for CSL-JSON: Accept: {}",
        asked[0].accept()
    );
    assert!(
        !asked[1].wants_csl(),
        "the second request asks for the landing page: Accept: {}",
        asked[1].accept()
    );
    assert_eq!(
        fakes.publisher.targets(),
        [landing_path, pdf_path],
        "the landing page, then its PDF"
    );
    let landing = &fakes.publisher.requests()[0];
    let pdf = &fakes.publisher.requests()[1];
    assert!(asked[0].at <= asked[1].at && asked[1].at <= landing.at && landing.at <= pdf.at);

    let j = job(&sb, 1);
    assert_eq!(j["status"], "done", "{j}");
    assert_eq!(j["attempts"], 4, "{j}");
    assert_eq!(
        steps(&j),
        [
            (json!("csl"), json!("success")),
            (json!("landing"), json!("success")),
            (json!("landing"), json!("success")),
            (json!("pdf"), json!("success")),
        ],
        "{j}"
    );
    assert_eq!(
        history(&j)[1]["http_status"],
        302,
        "the resolver's redirect: {j}"
    );
    let doc = Doc::of(&j);
    assert!(under_host(&doc, "127.0.0.2"), "{}", doc.path.display());
    assert_eq!(doc.get("url"), &json!("doi:10.1038/nature12373"));
    assert_eq!(doc.get("doi"), &json!("10.1038/nature12373"));
    assert_eq!(doc.get("title"), &json!(paper.title), "{}", doc.dump());
    assert_eq!(
        doc.get("authors"),
        &json!(paper.author_names()),
        "{}",
        doc.dump()
    );
    assert_eq!(doc.get("issued"), &json!("2013-08-01"), "{}", doc.dump());
    assert_eq!(
        doc.get("container_title"),
        &json!("Nature"),
        "{}",
        doc.dump()
    );
    doc.assert_full_text_pdf();
    assert!(
        doc.text
            .contains(&format!("## Abstract\n\n{KUCSKO_ABSTRACT}")),
        "the abstract under its heading, without the JATS title's \"Abstract\": {}",
        doc.dump()
    );
    assert!(
        !doc.text.contains("<jats:") && !doc.text.contains("jats:p"),
        "the abstract's JATS markup is not text: {}",
        doc.dump()
    );
}

/// As doi.org really answers content negotiation: a redirect to the registration agency's
/// metadata service on another host (api.crossref.org), which answers with the CSL item. The
/// `Accept` header goes along, and a partial date (year and month) is kept as `YYYY-MM`. The
/// landing page is then asked of the DOI's resolver, not of the agency (which answers a plain
/// request with 406: the job died of it).
#[test]
fn csl_metadata_through_the_registration_agencys_redirect() {
    let fakes = Fakes::start();
    let mut paper = Paper::kucsko();
    paper.issued = vec![2013, 8];
    fakes.article(
        &paper,
        "nature12373",
        Csl::ViaAgency(paper.csl()),
        PdfAnswer::Pdf,
    );
    let sb = Sandbox::new();
    add(&sb, &["doi:10.1038/nature12373"]);
    fakes.run(&sb, &[]);
    let agency = fakes.resolver.agency();
    assert_eq!(agency.total_hits(), 1, "{:?}", agency.targets());
    let asked = &agency.requests()[0];
    assert_eq!(asked.target, DoiResolver::agency_path_of(&paper.doi));
    assert!(asked.wants_csl(), "Accept: {}", asked.accept());
    let plain: Vec<_> = fakes
        .resolver
        .requests()
        .into_iter()
        .filter(|r| !r.wants_csl())
        .map(|r| r.target)
        .collect();
    assert_eq!(plain, [DoiResolver::path_of(&paper.doi)]);
    assert_eq!(fakes.publisher.hits("/articles/nature12373"), 1);
    let j = job(&sb, 1);
    assert_eq!(j["status"], "done", "{j}");
    let doc = Doc::of(&j);
    assert!(under_host(&doc, "127.0.0.2"), "{}", doc.path.display());
    assert_eq!(doc.get("issued"), &json!("2013-08"), "{}", doc.dump());
    assert_eq!(doc.get("authors"), &json!(paper.author_names()));
    doc.assert_full_text_pdf();
}

/// A paywall: the landing page names a PDF that answers 403. The job is done with the landing
/// page and its abstract, `full_text: false`, no PDF kept; its last attempt is the PDF's 403.
#[test]
fn a_pdf_behind_a_paywall_leaves_the_landing_page_and_its_abstract() {
    let fakes = Fakes::start();
    let paper = Paper::kucsko();
    let (_, pdf_path) = fakes.article(
        &paper,
        "nature12373",
        Csl::Item(paper.csl()),
        PdfAnswer::Forbidden,
    );
    let sb = Sandbox::new();
    add(&sb, &["doi:10.1038/nature12373"]);
    fakes.run(&sb, &[]);
    assert_eq!(fakes.publisher.hits(&pdf_path), 1, "a 403 is not retried");
    let j = job(&sb, 1);
    assert_eq!(j["status"], "done", "{j}");
    let last = history(&j).last().expect("attempts");
    assert_eq!(last["stage"], "pdf", "{j}");
    assert_eq!(last["http_status"], 403, "{j}");
    let doc = Doc::of(&j);
    assert_eq!(doc.get("full_text"), &json!(false), "{}", doc.dump());
    doc.assert_no_pdf();
    assert!(doc.text.contains(KUCSKO_ABSTRACT), "{}", doc.dump());
    assert_eq!(doc.get("title"), &json!(paper.title));
}

/// A paper fetched again whose landing page has not changed but whose PDF is now behind a
/// paywall: the job ends done with the landing page, and the paper saved before is still there
/// as it was, its text and its PDF. A paper recorded leaves no landing page's file of its own
/// beside it.
#[test]
fn a_refetch_that_loses_the_pdf_keeps_the_paper_fetched_before() {
    let fakes = Fakes::start();
    let paper = Paper::kucsko();
    let (_, pdf_path) = fakes.article(
        &paper,
        "nature12373",
        Csl::Item(paper.csl()),
        PdfAnswer::Pdf,
    );
    let sb = Sandbox::new();
    add(&sb, &["doi:10.1038/nature12373"]);
    fakes.run(&sb, &[]);
    let first = Doc::of(&job(&sb, 1));
    first.assert_full_text_pdf();
    let folder = first.path.parent().expect("a folder").to_path_buf();
    let files = |folder: &PathBuf| {
        let mut names: Vec<String> = std::fs::read_dir(folder)
            .expect("the document's folder")
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    assert_eq!(
        files(&folder).len(),
        2,
        "the paper and its PDF: {:?}",
        files(&folder)
    );
    let first_text = std::fs::read_to_string(&first.path).expect("the paper");

    fakes.publisher.pdf(&pdf_path, PdfAnswer::Forbidden);
    let again = sb.run(&["add", "--refetch", "doi:10.1038/nature12373"]);
    assert!(again.status.success(), "{}", stderr(&again));
    fakes.run(&sb, &[]);
    let j = job(&sb, 1);
    assert_eq!(j["status"], "done", "{j}");
    assert_eq!(history(&j).last().expect("attempts")["http_status"], 403);
    let now = Doc::of(&j);
    assert_eq!(now.get("full_text"), &json!(false), "{}", now.dump());
    assert_ne!(now.path, first.path);
    assert_eq!(
        std::fs::read_to_string(&first.path).expect("the earlier paper"),
        first_text,
        "the paper fetched before is kept as it was"
    );
    first.assert_full_text_pdf();
}

/// A "PDF" link that answers 200 with the publisher's sign-in page is not the paper: the job is
/// done with the landing page, `full_text: false`, and the sign-in page is not the document.
#[test]
fn a_login_page_where_the_pdf_should_be_is_not_full_text() {
    let fakes = Fakes::start();
    let paper = Paper::kucsko();
    let (_, pdf_path) = fakes.article(
        &paper,
        "nature12373",
        Csl::Item(paper.csl()),
        PdfAnswer::LoginPage,
    );
    let sb = Sandbox::new();
    add(&sb, &["doi:10.1038/nature12373"]);
    fakes.run(&sb, &[]);
    assert_eq!(fakes.publisher.hits(&pdf_path), 1);
    let j = job(&sb, 1);
    assert_eq!(j["status"], "done", "{j}");
    let doc = Doc::of(&j);
    assert_eq!(doc.get("full_text"), &json!(false), "{}", doc.dump());
    doc.assert_no_pdf();
    assert!(doc.text.contains(KUCSKO_ABSTRACT), "{}", doc.dump());
    assert!(!doc.text.contains(LOGIN_SENTENCE), "{}", doc.dump());
}

/// A landing page that names no PDF is the document: done after two attempts, the landing
/// page's text with the abstract, `full_text: false`.
#[test]
fn a_landing_page_without_a_pdf_is_the_document() {
    let fakes = Fakes::start();
    let paper = Paper::kucsko();
    fakes
        .publisher
        .landing("/articles/nature12373", Landing::for_paper(&paper));
    fakes.resolver.register(
        &paper.doi,
        &fakes.publisher.url("/articles/nature12373"),
        Csl::Item(paper.csl()),
    );
    let sb = Sandbox::new();
    add(&sb, &["doi:10.1038/nature12373"]);
    fakes.run(&sb, &[]);
    assert_eq!(fakes.publisher.targets(), ["/articles/nature12373"]);
    let j = job(&sb, 1);
    assert_eq!(j["status"], "done", "{j}");
    assert_eq!(
        j["attempts"], 3,
        "metadata, the resolver's redirect, the page: {j}"
    );
    let doc = Doc::of(&j);
    assert_eq!(doc.get("full_text"), &json!(false), "{}", doc.dump());
    doc.assert_no_pdf();
    assert!(doc.text.contains(KUCSKO_ABSTRACT), "{}", doc.dump());
}

/// A landing page that names its PDF only by `<link rel="alternate" type="application/pdf">`
/// (here a relative address) gets its PDF fetched too.
#[test]
fn a_pdf_named_only_by_a_link_alternate_is_fetched() {
    let fakes = Fakes::start();
    let paper = Paper::kucsko();
    fakes.publisher.landing(
        "/articles/nature12373",
        Landing::for_paper(&paper).pdf_alternate("/content/pdf/nature12373.pdf"),
    );
    fakes
        .publisher
        .pdf("/content/pdf/nature12373.pdf", PdfAnswer::Pdf);
    fakes.resolver.register(
        &paper.doi,
        &fakes.publisher.url("/articles/nature12373"),
        Csl::Item(paper.csl()),
    );
    let sb = Sandbox::new();
    add(&sb, &["doi:10.1038/nature12373"]);
    fakes.run(&sb, &[]);
    assert_eq!(fakes.publisher.hits("/content/pdf/nature12373.pdf"), 1);
    let j = job(&sb, 1);
    assert_eq!(j["status"], "done", "{j}");
    Doc::of(&j).assert_full_text_pdf();
}

/// Checks for a DOI whose resolver gives no CSL-JSON: the landing page's `citation_*` meta is
/// the metadata, and the PDF it names is the text.
fn assert_resolved_from_the_landing_page(fakes: &Fakes, sb: &Sandbox, paper: &Paper, pdf: &str) {
    assert_eq!(
        fakes.publisher.hits(pdf),
        1,
        "{:?}",
        fakes.publisher.targets()
    );
    let j = job(sb, 1);
    assert_eq!(j["status"], "done", "{j}");
    let doc = Doc::of(&j);
    assert_eq!(doc.get("doi"), &json!(paper.doi));
    assert_eq!(doc.get("title"), &json!(paper.title), "{}", doc.dump());
    assert_eq!(
        doc.get("authors"),
        &json!(["Okafor, Chidi", "Lindqvist, Astrid"]),
        "{}",
        doc.dump()
    );
    doc.assert_full_text_pdf();
}

/// A resolver that does not negotiate, and redirects a request for CSL-JSON to the landing
/// page anyway: the job goes on with the landing page's own meta and its PDF.
#[test]
fn a_resolver_that_ignores_the_csl_request_still_gets_the_paper() {
    let fakes = Fakes::start();
    let paper = Paper::okafor("10.5555/fluvial.2023.42");
    let (_, pdf) = fakes.article(&paper, "fluvial-42", Csl::Ignored, PdfAnswer::Pdf);
    let sb = Sandbox::new();
    add(&sb, &["doi:10.5555/fluvial.2023.42"]);
    fakes.run(&sb, &[]);
    assert_resolved_from_the_landing_page(&fakes, &sb, &paper, &pdf);
}

/// A resolver that answers a request for CSL-JSON with 406 Not Acceptable: the job goes on to
/// the landing page, its meta and its PDF.
#[test]
fn a_resolver_that_refuses_csl_with_406_still_gets_the_paper() {
    let fakes = Fakes::start();
    let paper = Paper::okafor("10.5555/fluvial.2023.43");
    let (_, pdf) = fakes.article(&paper, "fluvial-43", Csl::NotAcceptable, PdfAnswer::Pdf);
    let sb = Sandbox::new();
    add(&sb, &["doi:10.5555/fluvial.2023.43"]);
    fakes.run(&sb, &[]);
    assert_eq!(
        fakes
            .resolver
            .requests()
            .iter()
            .filter(|r| !r.wants_csl())
            .count(),
        1,
        "asked plainly for the landing page after the 406: {:?}",
        fakes.resolver.targets()
    );
    assert_resolved_from_the_landing_page(&fakes, &sb, &paper, &pdf);
}

/// A resolver that does not negotiate sends the request for CSL-JSON on to the publisher,
/// whose page refuses that `Accept` with 406 (the job died of it, as only the resolver's own
/// 4xx went on): no metadata, so the landing page is next, asked of the resolver plainly.
#[test]
fn a_publisher_that_refuses_the_csl_request_with_406_still_gets_the_paper() {
    let fakes = Fakes::start();
    let paper = Paper::okafor("10.5555/fluvial.2023.45");
    let (landing, pdf) = fakes.article(&paper, "fluvial-45", Csl::Ignored, PdfAnswer::Pdf);
    fakes.publisher.script(&landing, vec![Reply::status(406)]);
    let sb = Sandbox::new();
    add(&sb, &["doi:10.5555/fluvial.2023.45"]);
    fakes.run(&sb, &[]);
    let asked: Vec<_> = fakes
        .publisher
        .requests()
        .into_iter()
        .filter(|r| r.target == landing)
        .map(|r| r.wants_csl())
        .collect();
    assert_eq!(asked, [true, false], "{:?}", fakes.publisher.targets());
    assert_resolved_from_the_landing_page(&fakes, &sb, &paper, &pdf);
}

/// An arXiv id: the abs page, then the PDF its `citation_pdf_url` names. The document is the
/// PDF's text with the abs page's metadata, `arxiv:` its id.
#[test]
fn an_arxiv_id_gets_its_abs_page_and_pdf() {
    let fakes = Fakes::start();
    fakes.arxiv.eprint("1706.03762", Eprint::vaswani());
    let sb = Sandbox::new();
    add(&sb, &["arXiv:1706.03762"]);
    fakes.run(&sb, &[]);
    assert_eq!(
        fakes.arxiv.targets(),
        ["/abs/1706.03762", "/pdf/1706.03762"]
    );
    let j = job(&sb, 1);
    assert_eq!(j["status"], "done", "{j}");
    assert_eq!(history(&j).last().expect("attempts")["stage"], "pdf", "{j}");
    let doc = Doc::of(&j);
    assert_eq!(doc.get("arxiv"), &json!("1706.03762"));
    assert_eq!(doc.get("title"), &json!("Attention Is All You Need"));
    assert_eq!(
        doc.get("authors").get(0),
        Some(&json!("Vaswani, Ashish")),
        "{}",
        doc.dump()
    );
    doc.assert_full_text_pdf();
    assert!(doc.text.contains(VASWANI_ABSTRACT), "{}", doc.dump());
}

/// A PubMed id: one request, the PubMed page. PubMed holds no full text, so the document is the
/// page's metadata and abstract, `full_text: false`.
#[test]
fn a_pubmed_id_is_its_pubmed_page_without_full_text() {
    let fakes = Fakes::start();
    let citation = Citation::smith();
    fakes.pubmed.record("31452104", citation.clone());
    let sb = Sandbox::new();
    add(&sb, &["PMID: 31452104"]);
    fakes.run(&sb, &[]);
    assert_eq!(fakes.pubmed.targets(), ["/31452104/"]);
    let j = job(&sb, 1);
    assert_eq!(j["status"], "done", "{j}");
    let doc = Doc::of(&j);
    assert_eq!(doc.get("pmid"), &json!("31452104"));
    assert_eq!(doc.get("full_text"), &json!(false), "{}", doc.dump());
    assert_eq!(doc.get("title"), &json!(citation.title), "{}", doc.dump());
    assert_eq!(
        doc.get("authors"),
        &json!(citation.authors),
        "{}",
        doc.dump()
    );
    doc.assert_no_pdf();
    assert!(doc.text.contains(SMITH_ABSTRACT), "{}", doc.dump());
}

/// A PMC id: its PMC article page (here on the publisher's fake, as `--pmc` says), then the
/// PDF it names. It asked PubMed's search (`/?term=PMC…`), which names no PDF and, for an
/// article PubMed does not index, answers "No results" as the paper.
#[test]
fn a_pmc_id_gets_its_pmc_article_page_and_pdf() {
    let fakes = Fakes::start();
    let paper = Paper::okafor("10.5555/fluvial.2023.46");
    fakes.publisher.landing(
        "/articles/PMC6738312/",
        Landing::for_paper(&paper).pdf_meta("/articles/PMC6738312/pdf/paper.pdf"),
    );
    fakes
        .publisher
        .pdf("/articles/PMC6738312/pdf/paper.pdf", PdfAnswer::Pdf);
    let sb = Sandbox::new();
    add(&sb, &["PMCID: PMC6738312"]);
    fakes.run(&sb, &[]);
    assert_eq!(fakes.pubmed.total_hits(), 0, "{:?}", fakes.pubmed.targets());
    assert_eq!(
        fakes.publisher.targets(),
        [
            "/articles/PMC6738312/",
            "/articles/PMC6738312/pdf/paper.pdf"
        ]
    );
    let j = job(&sb, 1);
    assert_eq!(j["status"], "done", "{j}");
    let doc = Doc::of(&j);
    assert_eq!(doc.get("pmcid"), &json!("PMC6738312"), "{}", doc.dump());
    doc.assert_full_text_pdf();
}

/// A plain link whose page has `citation_pdf_url` (relative, as many sites write it) gets the
/// PDF too: the PDF's text is the document, kept beside it, `full_text: true`.
#[test]
fn a_plain_link_whose_page_names_a_pdf_gets_the_pdf() {
    let fakes = Fakes::start();
    let paper = Paper::okafor("10.5555/fluvial.2023.44");
    fakes.publisher.landing(
        "/articles/fluvial-44",
        Landing::for_paper(&paper).pdf_meta("fluvial-44.pdf"),
    );
    fakes
        .publisher
        .pdf("/articles/fluvial-44.pdf", PdfAnswer::Pdf);
    let link = fakes.publisher.url("/articles/fluvial-44");
    let sb = Sandbox::new();
    add(&sb, &[&link]);
    fakes.run(&sb, &[]);
    assert_eq!(
        fakes.publisher.targets(),
        ["/articles/fluvial-44", "/articles/fluvial-44.pdf"]
    );
    let j = job(&sb, 1);
    assert_eq!(j["status"], "done", "{j}");
    assert_eq!(j["url"], link.as_str());
    assert_eq!(history(&j).last().expect("attempts")["stage"], "pdf", "{j}");
    let doc = Doc::of(&j);
    assert_eq!(doc.get("url"), &json!(link));
    doc.assert_full_text_pdf();
}

/// A 503 on the PDF is a transient failure of that stage, retried under the job's budget: four
/// attempts, the PDF stage's `transient` then `success`, one retry spent.
#[test]
fn a_transient_failure_of_the_pdf_is_retried_under_the_jobs_budget() {
    let fakes = Fakes::start();
    let paper = Paper::kucsko();
    let (_, pdf_path) = fakes.article(
        &paper,
        "nature12373",
        Csl::Item(paper.csl()),
        PdfAnswer::Pdf,
    );
    fakes.publisher.script(&pdf_path, vec![Reply::status(503)]);
    let sb = Sandbox::new();
    add(&sb, &["doi:10.1038/nature12373"]);
    fakes.run(&sb, &[]);
    assert_eq!(fakes.publisher.hits(&pdf_path), 2);
    let j = job(&sb, 1);
    assert_eq!(j["status"], "done", "{j}");
    assert_eq!(j["attempts"], 5, "{j}");
    assert_eq!(j["retries_used"], 1, "{j}");
    assert_eq!(
        steps(&j),
        [
            (json!("csl"), json!("success")),
            (json!("landing"), json!("success")),
            (json!("landing"), json!("success")),
            (json!("pdf"), json!("transient")),
            (json!("pdf"), json!("success")),
        ],
        "{j}"
    );
    assert_eq!(history(&j)[3]["http_status"], 503, "{j}");
    Doc::of(&j).assert_full_text_pdf();
}

/// With the Wayback fallback on, a link that is gone (404, 410, or a host that no longer
/// exists) is looked up in the availability API by its own address, and the archived copy is
/// fetched raw (`id_`, without the Wayback toolbar). The job is done at the `archived` stage,
/// and its document says it is an archived copy, and of when.
#[test]
fn a_dead_link_is_fetched_from_the_wayback_machine_when_the_fallback_is_on() {
    let fakes = Fakes::start();
    let not_found = fakes.publisher.url("/blog/2013/field-notes");
    let gone = fakes.publisher.url("/news/withdrawn-notice");
    fakes
        .publisher
        .page("/news/withdrawn-notice", Reply::status(410));
    // `.test` is never delegated (RFC 6761), so the name does not resolve; `add` refuses
    // `.invalid` names outright, as nothing can ever have been archived under one.
    let no_host = "http://gone.test/page".to_string();
    let cases = [
        (
            &not_found,
            "20130919044612",
            "2013-09-19T04:46:12Z",
            "The moss on the north wall had doubled by September.",
        ),
        (
            &gone,
            "20150102030405",
            "2015-01-02T03:04:05Z",
            "The notice was withdrawn at the authors' request.",
        ),
        (
            &no_host,
            "20190704120000",
            "2019-07-04T12:00:00Z",
            "This site moved to a new address in 2019.",
        ),
    ];
    for (original, stamp, _, sentence) in &cases {
        fakes.wayback.snapshot(
            original,
            stamp,
            &scholarly::archived_article("Field notes", sentence),
        );
    }
    let sb = Sandbox::new();
    add(&sb, &[&not_found, &gone, &no_host]);
    fakes.run(&sb, &["--wayback-fallback", "true"]);

    let asked = fakes.wayback.asked_about();
    for (id, (original, stamp, at, sentence)) in (1..).zip(&cases) {
        assert_eq!(
            asked.iter().filter(|u| u == original).count(),
            1,
            "the availability API asked about {original}: {asked:?}"
        );
        let raw = scholarly::Wayback::raw_path(stamp, original);
        assert_eq!(
            fakes.wayback.hits(&raw),
            1,
            "{raw}: {:?}",
            fakes.wayback.targets()
        );
        assert_eq!(
            fakes
                .wayback
                .hits(&scholarly::Wayback::toolbar_path(stamp, original)),
            0,
            "the copy with the toolbar was fetched"
        );
        let api_at = fakes
            .wayback
            .api_requests()
            .iter()
            .find(|r| r.query_param("url").as_deref() == Some(original.as_str()))
            .map(|r| r.at)
            .expect("asked");
        assert!(api_at <= fakes.wayback.requests_to(&raw)[0].at);

        let j = job(&sb, id);
        assert_eq!(j["status"], "done", "{original}: {j}");
        assert_eq!(j["stage"], "archived", "{original}: {j}");
        let doc = Doc::of(&j);
        assert_eq!(doc.get("url"), &json!(original), "{}", doc.dump());
        assert_eq!(doc.get("archived_copy"), &json!(true), "{}", doc.dump());
        assert_eq!(doc.get("archived_at"), &json!(at), "{}", doc.dump());
        assert!(doc.text.contains(sentence), "{}", doc.dump());
        assert!(!doc.text.contains(WAYBACK_TOOLBAR), "{}", doc.dump());
    }
}

/// A dead link the Wayback Machine has no copy of dies, and says both: its own failure and that
/// no archived copy exists.
#[test]
fn a_dead_link_without_an_archived_copy_dies_saying_so() {
    let fakes = Fakes::start();
    let link = fakes.publisher.url("/blog/never-archived");
    let sb = Sandbox::new();
    add(&sb, &[&link]);
    fakes.run(&sb, &["--wayback-fallback", "true"]);
    assert_eq!(fakes.wayback.asked_about(), [link.as_str()]);
    assert_eq!(fakes.wayback.hits_prefix("/web/"), 0);
    let j = job(&sb, 1);
    assert_eq!(j["status"], "dead", "{j}");
    let error = j["error"].as_str().expect("error");
    assert!(error.contains("404 Not Found"), "{error}");
    assert!(error.contains("no archived copy"), "{error}");
}

/// The availability API without a timestamp names the newest capture, and the newest of a
/// dead page is usually its 404: the oldest is asked for next (`timestamp=19960101`, the
/// closest to then), and its copy fetched. Before, the job died saying no copy existed. When
/// the oldest is no 2xx either, the death says what the archive holds.
#[test]
fn a_dead_link_whose_newest_capture_is_its_404_gets_the_oldest() {
    let fakes = Fakes::start();
    let link = fakes.publisher.url("/blog/2013/moss-survey");
    let sentence = "The survey counted forty species on the churchyard wall.";
    let page = scholarly::archived_article("Moss survey", sentence);
    fakes
        .wayback
        .capture(&link, "20230101000000", "404", "Not Found");
    fakes.wayback.capture(&link, "20140101000000", "200", &page);
    let never = fakes.publisher.url("/blog/2013/never-there");
    fakes
        .wayback
        .capture(&never, "20230101000000", "404", "Not Found");
    fakes
        .wayback
        .capture(&never, "20150101000000", "302", "Moved");
    let sb = Sandbox::new();
    add(&sb, &[&link, &never]);
    fakes.run(&sb, &["--wayback-fallback", "true"]);
    let asked: Vec<_> = fakes
        .wayback
        .api_requests()
        .iter()
        .filter(|r| r.query_param("url").as_deref() == Some(link.as_str()))
        .map(|r| r.query_param("timestamp"))
        .collect();
    assert_eq!(asked, [None, Some("19960101".to_string())]);
    let j = job(&sb, 1);
    assert_eq!(j["status"], "done", "{j}");
    let doc = Doc::of(&j);
    assert_eq!(doc.get("archived_at"), &json!("2014-01-01T00:00:00Z"));
    assert!(doc.text.contains(sentence), "{}", doc.dump());
    let j = job(&sb, 2);
    assert_eq!(j["status"], "dead", "{j}");
    let error = j["error"].as_str().expect("error");
    assert!(
        error.contains(
            "no usable archived copy (the Wayback Machine's newest snapshot of it is a 404, \
             and its oldest a 302 redirect)"
        ),
        "{error}"
    );
}

/// A dead link with a user name and password in it: the archive is asked about the page, not
/// told the password, and no stored error or log line holds it either.
#[test]
fn the_archive_is_never_told_a_links_password() {
    let fakes = Fakes::start();
    let link = fakes.publisher.url("/private/gone");
    let with_password = link.replacen("://", "://bob:hunter2@", 1);
    let sb = Sandbox::new();
    add(&sb, &[&with_password]);
    let log = fakes.run(&sb, &["--wayback-fallback", "true"]);
    assert_eq!(fakes.wayback.asked_about(), [link.as_str()]);
    let j = job(&sb, 1);
    assert_eq!(j["status"], "dead", "{j}");
    let said = format!("{} {} {log}", j["error"], j["history"]);
    assert!(!said.contains("hunter2"), "{said}");
}

/// The fallback is off unless asked for: a 404 dies after its one attempt and the Wayback
/// Machine hears nothing.
#[test]
fn without_the_fallback_a_dead_link_dies_and_the_archive_is_not_asked() {
    let fakes = Fakes::start();
    let link = fakes.publisher.url("/blog/never-archived");
    fakes.wayback.snapshot(
        &link,
        "20130919044612",
        &scholarly::archived_article("Never", "Not to be fetched."),
    );
    let sb = Sandbox::new();
    add(&sb, &[&link]);
    fakes.run(&sb, &[]);
    let j = job(&sb, 1);
    assert_eq!(j["status"], "dead", "{j}");
    assert_eq!(j["attempts"], 1, "{j}");
    assert_eq!(
        fakes.wayback.total_hits(),
        0,
        "{:?}",
        fakes.wayback.targets()
    );
}

/// A DOI the resolver has no record of is "no such DOI", not a dead link: the Wayback Machine
/// is not asked, even with the fallback on.
#[test]
fn a_doi_the_resolver_does_not_know_is_not_sent_to_the_archive() {
    let fakes = Fakes::start();
    let sb = Sandbox::new();
    add(&sb, &["doi:10.9999/nope"]);
    fakes.run(&sb, &["--wayback-fallback", "true"]);
    let j = job(&sb, 1);
    assert_eq!(j["status"], "dead", "{j}");
    assert_eq!(j["attempts"], 1, "{j}");
    let error = j["error"].as_str().expect("error");
    assert!(error.contains("no such DOI"), "{error}");
    assert_eq!(
        fakes.wayback.total_hits(),
        0,
        "{:?}",
        fakes.wayback.targets()
    );
}

/// Per-host politeness holds across stages: a 429 with `Retry-After: 2` from the publisher on
/// the PDF is a rate limit, not a failure (no retry spent); the PDF is asked for again after
/// the pause, and the job ends done with the full text.
#[test]
fn a_rate_limit_on_the_pdf_waits_out_the_pause_without_spending_retries() {
    let fakes = Fakes::start();
    let paper = Paper::kucsko();
    let (_, pdf_path) = fakes.article(
        &paper,
        "nature12373",
        Csl::Item(paper.csl()),
        PdfAnswer::Pdf,
    );
    fakes
        .publisher
        .script(&pdf_path, vec![Reply::too_many_requests(2)]);
    let sb = Sandbox::new();
    add(&sb, &["doi:10.1038/nature12373"]);
    fakes.run(&sb, &[]);

    let pdf_requests = fakes.publisher.requests_to(&pdf_path);
    assert_eq!(pdf_requests.len(), 2, "{:?}", fakes.publisher.targets());
    let waited = gap_ms(pdf_requests[0].at, pdf_requests[1].at);
    assert!(waited >= 1900, "the PDF was asked again after {waited} ms");
    let j = job(&sb, 1);
    assert_eq!(j["status"], "done", "{j}");
    assert_eq!(j["retries_used"], 0, "a rate limit spends no retry: {j}");
    assert_eq!(
        steps(&j),
        [
            (json!("csl"), json!("success")),
            (json!("landing"), json!("success")),
            (json!("landing"), json!("success")),
            (json!("pdf"), json!("rate_limited")),
            (json!("pdf"), json!("success")),
        ],
        "{j}"
    );
    Doc::of(&j).assert_full_text_pdf();
}

/// The publisher's pause holds for every job's stages, the ones that reach it through the
/// resolver's redirect included: while the publisher is paused after a 429, another DOI's
/// landing stage (whose CSL answer came late, so it starts during the pause) does not knock at
/// the publisher either. Requests already in flight when the 429 came are not counted.
#[test]
fn a_paused_publisher_is_not_reached_through_another_dois_redirect() {
    let fakes = Fakes::start();
    let first = Paper::kucsko();
    let second = Paper::okafor("10.5555/fluvial.2023.45");
    let (_, first_pdf) = fakes.article(
        &first,
        "nature12373",
        Csl::Item(first.csl()),
        PdfAnswer::Pdf,
    );
    fakes.article(
        &second,
        "fluvial-45",
        Csl::Item(second.csl()),
        PdfAnswer::Pdf,
    );
    fakes
        .publisher
        .script(&first_pdf, vec![Reply::too_many_requests(3)]);
    fakes.resolver.script(
        &DoiResolver::path_of(&second.doi),
        vec![
            Reply::json(200, scholarly::CSL_JSON, &second.csl()).after(Duration::from_millis(800)),
        ],
    );
    let sb = Sandbox::new();
    add(
        &sb,
        &["doi:10.1038/nature12373", "doi:10.5555/fluvial.2023.45"],
    );
    fakes.run(&sb, &[]);

    let limited_at = fakes
        .publisher
        .requests_to(&first_pdf)
        .first()
        .map(|r| r.at)
        .expect("the PDF was asked for");
    let during: Vec<(String, u128)> = fakes
        .publisher
        .requests()
        .iter()
        .filter(|r| r.at > limited_at)
        .map(|r| (r.target.clone(), gap_ms(limited_at, r.at)))
        .filter(|(_, ms)| (100..2900).contains(ms))
        .collect();
    assert!(
        during.is_empty(),
        "requests to the publisher during its 3 s pause (target, ms after the 429): {during:?}"
    );
    for id in [1, 2] {
        let j = job(&sb, id);
        assert_eq!(j["status"], "done", "{j}");
        Doc::of(&j).assert_full_text_pdf();
    }
}
