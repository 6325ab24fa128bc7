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
