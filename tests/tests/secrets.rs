//! A URL's user name and password reach neither a log line nor a stored error message, even
//! through the HTTP stack's own error text, at the most verbose log level.

use gleaner_tests::server::FaultServer;
use gleaner_tests::{Sandbox, stderr, stdout};

#[test]
fn credentials_in_urls_stay_out_of_logs_and_stored_errors() {
    let server = FaultServer::start();
    let sb = Sandbox::new();
    // A port nothing listens on: reqwest's "error sending request for url (…)" quotes it.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let refused = format!(
        "http://reader:s3cret@{}/paper",
        closed.local_addr().expect("addr")
    );
    drop(closed);
    let with_password = |path: &str| server.url(path).replace("http://", "http://reader:s3cret@");
    let token_as_user = server
        .url("/drop-mid-body")
        .replace("http://", "http://ghp_T0KEN@");
    // A redirect whose target carries credentials of its own (spelt out in the query, so the
    // request line itself holds no secret): the error quotes the target.
    let redirect = server.url(
        "/status/302?location=ftp%3A%2F%2Freader%3A%73%33%63%72%65%74%40files.example%2Fpaper.pdf",
    );
    let urls = [
        redirect,
        refused,
        with_password("/status/500"),
        with_password("/status/404"),
        with_password("/redirect-loop"),
        token_as_user,
    ];
    let mut add = vec!["add"];
    add.extend(urls.iter().map(String::as_str));
    let out = sb.run(&add);
    assert!(out.status.success(), "{}", stderr(&out));
    // What a person is shown of a link leaves its credentials out; the queue keeps them.
    let added = stdout(&out);
    assert!(added.contains("queued 3 http://127.0.0.1:"), "{added}");
    for shown in [
        added,
        stdout(&sb.run(&["jobs", "list"])),
        stdout(&sb.run(&["jobs", "show", "3"])),
    ] {
        assert!(
            !shown.contains("s3cret") && !shown.contains("ghp_T0KEN"),
            "{shown}"
        );
    }
    let out = sb
        .cmd()
        .env("GLEANER_LOG", "trace")
        .args([
            "--max-retries",
            "1",
            "--base-delay",
            "10ms",
            "--max-delay",
            "10ms",
            "run",
            "--until-idle",
        ])
        .output()
        .expect("run");
    let log = format!("{}{}", stdout(&out), stderr(&out));
    assert!(out.status.success(), "{log}");
    assert!(log.contains("failed"), "the failures were logged: {log}");
    for secret in ["s3cret", "ghp_T0KEN"] {
        assert!(!log.contains(secret), "{secret} in the log:\n{log}");
    }
    let db = sb.sql();
    let mut stored: Vec<String> = Vec::new();
    for sql in [
        "SELECT coalesce(error, '') FROM jobs",
        "SELECT coalesce(error, '') FROM attempt_log",
    ] {
        let mut stmt = db.prepare(sql).expect(sql);
        let rows = stmt.query_map([], |r| r.get::<_, String>(0)).expect(sql);
        stored.extend(rows.map(|r| r.expect("row")));
    }
    assert!(
        stored
            .iter()
            .any(|e| e.contains("ftp://files.example/paper.pdf")),
        "an error quotes the redirect's target: {stored:?}"
    );
    for e in &stored {
        assert!(
            !e.contains("s3cret") && !e.contains("ghp_T0KEN"),
            "a stored error holds a credential: {e}"
        );
    }
}
