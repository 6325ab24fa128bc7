//! Fetched bodies become library documents, or classified failures: block pages are retried
//! on their own budget then dead, empty and unparsable bodies are fatal.

use gleaner_tests::server::{Behavior, FaultServer};
use gleaner_tests::{Sandbox, stderr};

fn respond(content_type: &str, body: &[u8]) -> Behavior {
    Behavior::Respond {
        status: 200,
        headers: vec![("Content-Type".into(), content_type.into())],
        body: body.to_vec(),
    }
}

#[test]
fn pages_pdfs_block_pages_and_empty_bodies() {
    let server = FaultServer::start();
    let article = include_bytes!("../../src-tauri/tests-fixtures/extract/news-article.html");
    let pdf = include_bytes!("../../src-tauri/tests-fixtures/extract/article.pdf");
    let block = include_bytes!("../../src-tauri/tests-fixtures/extract/cloudflare.html");
    let broken = include_bytes!("../../src-tauri/tests-fixtures/extract/truncated.pdf");
    server.script(
        "/article",
        vec![respond("text/html; charset=utf-8", article)],
    );
    server.script("/paper.pdf", vec![respond("application/pdf", pdf)]);
    server.script("/blocked", vec![respond("text/html", block); 3]);
    server.script("/broken.pdf", vec![respond("application/pdf", broken)]);
    server.script("/empty", vec![respond("text/html", b"")]);
    let sb = Sandbox::new();
    let urls: Vec<String> = [
        "/article",
        "/paper.pdf",
        "/blocked",
        "/broken.pdf",
        "/empty",
    ]
    .iter()
    .map(|p| server.url(p))
    .collect();
    let mut args = vec!["add"];
    args.extend(urls.iter().map(String::as_str));
    assert!(sb.run(&args).status.success());
    let out = sb.run(&[
        "--base-delay",
        "10ms",
        "--jitter",
        "0",
        "run",
        "--until-idle",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let log = stderr(&out);

    let article_job = sb.json(&["jobs", "show", "1", "--json"]);
    assert_eq!(article_job["status"], "done", "{article_job}");
    let doc = std::fs::read_to_string(article_job["document"].as_str().expect("document"))
        .expect("read doc");
    assert!(doc.starts_with("---\nurl: "), "{doc}");
    assert!(doc.contains("\nkind: \"html\"\n"), "{doc}");
    assert!(
        !doc.to_lowercase().contains("cookie"),
        "boilerplate left in: {doc}"
    );

    let paper = sb.json(&["jobs", "show", "2", "--json"]);
    assert_eq!(paper["status"], "done", "{paper}");
    let doc =
        std::fs::read_to_string(paper["document"].as_str().expect("document")).expect("read doc");
    assert!(doc.contains("\nkind: \"pdf\"\n"), "{doc}");

    let blocked = sb.json(&["jobs", "show", "3", "--json"]);
    assert_eq!(blocked["status"], "dead", "{blocked}");
    assert_eq!(blocked["error_class"], "blocked");
    assert_eq!(
        blocked["attempts"], 3,
        "two retries on the blocked budget, then dead"
    );
    assert!(
        log.contains("(blocked). Will retry in 10 ms (retry 1 of 2)."),
        "{log}"
    );
    assert!(log.contains("(blocked). Dead after 3 attempts."), "{log}");

    for id in ["4", "5"] {
        let job = sb.json(&["jobs", "show", id, "--json"]);
        assert_eq!(job["status"], "dead", "{job}");
        assert_eq!(job["error_class"], "fatal");
        assert_eq!(job["attempts"], 1);
    }
    assert!(
        sb.json(&["jobs", "show", "5", "--json"])["error"]
            .as_str()
            .expect("error")
            .contains("empty")
    );
}

#[test]
fn export_writes_one_json_object_per_document_and_refetch_keeps_versions() {
    let server = FaultServer::start();
    let sb = Sandbox::new();
    server.script(
        "/v",
        vec![
            respond("text/plain", b"first version"),
            respond("text/plain", b"second version"),
        ],
    );
    let url = server.url("/v");
    assert!(
        sb.run(&["add", &url, &server.url("/ok/two")])
            .status
            .success()
    );
    assert!(sb.run(&["run", "--until-idle"]).status.success());

    let again = sb.run(&["add", &url]);
    assert_eq!(
        gleaner_tests::stdout(&again),
        format!("duplicate 1 {url} (done; add --refetch to fetch it again)\n")
    );
    let again = sb.run(&["add", "--refetch", &url]);
    assert_eq!(
        gleaner_tests::stdout(&again),
        format!("refetch 1 {url} (was done)\n")
    );
    assert!(sb.run(&["run", "--until-idle"]).status.success());
    let files: Vec<_> = std::fs::read_dir(sb.path().join("library/127.0.0.1"))
        .expect("ls")
        .collect();
    assert_eq!(files.len(), 3, "both versions of /v are kept, plus /ok/two");

    let out = sb.run(&["export", "--format", "jsonl"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let lines: Vec<serde_json::Value> = gleaner_tests::stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect();
    assert_eq!(lines.len(), 2);
    let v = lines
        .iter()
        .find(|o| o["url"] == url.as_str())
        .expect("the /v document");
    assert_eq!(v["text"], "second version");
    assert_eq!(v["job_id"], 1);
    assert_eq!(v["content_type"], "text/plain");
    let two = lines
        .iter()
        .find(|o| o["job_id"] == 2)
        .expect("the /ok/two document");
    assert_eq!(two["title"], "OK two");
    assert!(
        two["text"]
            .as_str()
            .expect("text")
            .contains("Hello from two")
    );
}
