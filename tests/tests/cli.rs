//! The CLI contract, exercised through the real binary.

use gleaner_tests::server::FaultServer;
use gleaner_tests::{Sandbox, stderr, stdout};

#[test]
fn add_reports_every_input_and_fails_on_rejects() {
    let sb = Sandbox::new();
    let out = sb.run(&[
        "add",
        "https://example.com/a",
        "see https://example.org/b, ok",
        "javascript:alert(1)",
        "file:///etc/passwd",
        "http://",
    ]);
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert_eq!(lines.len(), 5, "{text}");
    assert_eq!(lines[0], "queued 1 https://example.com/a");
    assert_eq!(lines[1], "queued 2 https://example.org/b");
    assert!(
        lines[2].starts_with("rejected javascript:alert(1): "),
        "{text}"
    );
    assert!(
        lines[3].starts_with("rejected file:///etc/passwd: "),
        "{text}"
    );
    assert!(
        lines[4].starts_with("rejected http://: malformed"),
        "{text}"
    );

    // Nothing dangerous was queued.
    let jobs = sb.json(&["jobs", "list", "--json"]);
    let urls: Vec<&str> = jobs
        .as_array()
        .expect("array")
        .iter()
        .map(|j| j["url"].as_str().expect("url"))
        .collect();
    assert_eq!(urls, vec!["https://example.org/b", "https://example.com/a"]);

    // Same URL again (tracking parameters and fragment do not make it new): a duplicate, exit 0.
    let out = sb.run(&["add", "https://EXAMPLE.com/a?utm_source=feed#top"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        stdout(&out).trim(),
        "duplicate 1 https://example.com/a?utm_source=feed#top (pending)"
    );
}

#[test]
fn add_reads_files_and_stdin_as_free_text() {
    let sb = Sandbox::new();
    let file = sb.path().join("links.md");
    std::fs::write(&file, "# Reading\n- [one](https://one.example/x)\n- plain words\n@misc{k, url = {https://two.example/y}}\n").expect("write");
    let out = sb.run(&[
        "add",
        "--file",
        file.to_str().expect("utf8"),
        "--batch",
        "reading list",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "queued 1 https://one.example/x\nqueued 2 https://two.example/y\n"
    );

    let out = sb.run_with_stdin(
        &["add", "--file", "-"],
        b"https://three.example/z\nnot-a-url\n",
    );
    assert_eq!(out.status.code(), Some(1));
    let text = stdout(&out);
    assert!(
        text.starts_with(
            "queued 3 https://three.example/z\nrejected not-a-url: no web address found"
        ),
        "{text}"
    );

    let job = sb.json(&["jobs", "show", "1", "--json"]);
    assert_eq!(job["batch"], "reading list");
}

/// What `add --file` does with bytes that are not clean text.
#[test]
fn add_reads_damaged_text_and_refuses_binary_data() {
    let sb = Sandbox::new();
    let add_stdin = |bytes: &[u8]| sb.run_with_stdin(&["add", "--file", "-"], bytes);
    // A list with one line that is not UTF-8 still gives its links, from standard input as
    // from a file; the line is read as Windows-1252 and rejected with its control character
    // spelled out, as is a line holding a terminal escape sequence.
    let out =
        add_stdin(b"https://one.example/a\n\x80\x81word\nhttps://two.example/b\nbad\x1b[2Jword\n");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "queued 1 https://one.example/a\n\
         rejected \u{20ac}\\u{81}word: no web address found\n\
         queued 2 https://two.example/b\n\
         rejected bad\\u{1b}[2Jword: no web address found\n"
    );
    // Binary data is refused whole, with one reason, and nothing is queued from it.
    let noise: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    let out = add_stdin(&noise);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stdout(&out), "");
    assert!(
        stderr(&out).contains("standard input is not text (it holds binary data)"),
        "{}",
        stderr(&out)
    );
    let file = sb.path().join("photo.jpg");
    std::fs::write(&file, &noise).expect("write");
    let out = sb.run(&["add", "--file", file.to_str().expect("utf8")]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("photo.jpg is not text"),
        "{}",
        stderr(&out)
    );
    let stats = sb.json(&["stats", "--json"]);
    assert_eq!(stats["pending"].as_u64(), Some(2), "{stats}");
}

#[test]
fn a_queue_that_is_not_one_or_is_from_a_newer_gleaner_is_explained() {
    let sb = Sandbox::new();
    std::fs::write(sb.db_path(), "notes, not a database\n".repeat(40)).expect("write");
    let out = sb.run(&["stats"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("gleaner.db is not a Gleaner queue, or it is damaged; move it aside"),
        "{}",
        stderr(&out)
    );

    let sb = Sandbox::new();
    assert!(sb.run(&["stats"]).status.success());
    rusqlite::Connection::open(sb.db_path())
        .and_then(|c| c.pragma_update(None, "user_version", 99))
        .expect("version");
    let out = sb.run(&["stats"]);
    assert_eq!(out.status.code(), Some(1));
    let said = stderr(&out);
    assert!(
        said.contains("this queue was last opened by a newer Gleaner (schema version 99; this one knows up to "),
        "{said}"
    );
    assert!(
        said.contains("update Gleaner, or give another --data-dir"),
        "{said}"
    );
}

#[test]
fn job_objects_have_the_contract_fields() {
    let sb = Sandbox::new();
    sb.run(&["add", "https://example.com/a"]);
    let jobs = sb.json(&["jobs", "list", "--status", "pending", "--json"]);
    let job = &jobs[0];
    for field in [
        "id",
        "url",
        "final_url",
        "status",
        "attempts",
        "max_retries",
        "retry_after",
        "error_class",
        "error",
        "http_status",
        "title",
        "document",
        "batch",
        "created_at",
        "updated_at",
    ] {
        assert!(job.get(field).is_some(), "missing {field} in {job}");
    }
    assert_eq!(job["status"], "pending");
    assert_eq!(job["max_retries"], 5);
    assert!(job["retry_after"].is_null());
    assert!(
        job["created_at"].as_str().expect("time").ends_with('Z'),
        "RFC 3339 UTC"
    );
    assert_eq!(
        sb.json(&["jobs", "list", "--status", "done", "--json"]),
        serde_json::json!([])
    );
}

#[test]
fn run_logs_each_attempt_from_the_committed_state() {
    let server = FaultServer::start();
    let sb = Sandbox::new();
    let flaky = server.url("/status/503");
    let missing = server.url("/status/404");
    let fine = server.url("/ok/fine");
    let out = sb.run(&["add", &flaky, &missing, &fine]);
    assert!(out.status.success(), "{}", stdout(&out));
    let out = sb.run(&[
        "--base-delay",
        "100ms",
        "--max-retries",
        "2",
        "--jitter",
        "0",
        "run",
        "--until-idle",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let log = stderr(&out);
    let expect = [
        format!(
            "GET {flaky} failed: 503 Service Unavailable (transient). Will retry in 100 ms (retry 1 of 2)."
        ),
        format!(
            "GET {flaky} failed: 503 Service Unavailable (transient). Will retry in 200 ms (retry 2 of 2)."
        ),
        format!("GET {flaky} failed: 503 Service Unavailable (transient). Dead after 3 attempts."),
        format!("GET {missing} failed: 404 Not Found (fatal). Dead after 1 attempt."),
    ];
    for line in &expect {
        assert_eq!(
            log.matches(line.as_str()).count(),
            1,
            "expected once: {line}\n--- log ---\n{log}"
        );
    }
    assert!(log.contains(&format!("GET {fine} done: 200 OK")), "{log}");
    // The details say the class once: the stored reason ends with it already.
    let shown = stdout(&sb.run(&["jobs", "show", "2"]));
    assert!(
        shown.contains("error      404 Not Found (fatal)\n"),
        "{shown}"
    );
    // The summary counts what the run did; nothing is left waiting after --until-idle.
    assert!(
        log.contains("run finished: 1 done, 2 dead, 2 retries scheduled, 0 interrupted"),
        "{log}"
    );
    assert!(!log.contains("still pending"), "{log}");
    assert_eq!(server.hits("/status/503"), 3);
    assert_eq!(server.hits("/status/404"), 1);

    // The database agrees with the log.
    let dead = sb.json(&["jobs", "show", "1", "--json"]);
    assert_eq!(dead["status"], "dead");
    assert_eq!(dead["attempts"], 3);
    assert_eq!(dead["retries_used"], 2, "the third failure bought no retry");
    assert_eq!(dead["error_class"], "transient");
    assert_eq!(dead["http_status"], 503);
    let history = dead["history"].as_array().expect("history");
    assert_eq!(history.len(), 3);
    assert_eq!(history[0]["delay_ms"], 100);
    assert_eq!(history[1]["delay_ms"], 200);
    assert!(history[2]["delay_ms"].is_null());

    let stats = sb.json(&["stats", "--json"]);
    assert_eq!(
        (stats["done"].as_u64(), stats["dead"].as_u64()),
        (Some(1), Some(2))
    );

    // Manual retry gives the dead jobs a fresh budget and keeps their history.
    let out = sb.run(&["jobs", "retry", "--dead"]);
    assert_eq!(stdout(&out).trim(), "2 dead jobs queued again");
    let again = sb.json(&["jobs", "show", "1", "--json"]);
    assert_eq!(again["status"], "pending");
    assert_eq!(again["retries_used"], 0, "a fresh budget");
    let text = stdout(&sb.run(&["jobs", "show", "1"]));
    assert!(
        text.contains("attempts   3\nretries    0 of 5 used\n"),
        "{text}"
    );
    assert!(
        !text.contains("budget of 2 spent"),
        "the old verdict: {text}"
    );
    assert!(
        text.contains("transient HTTP 503"),
        "the history keeps the failures: {text}"
    );
    assert_eq!(again["history"].as_array().expect("history").len(), 3);
    let out = sb.run(&[
        "--base-delay",
        "10ms",
        "--max-retries",
        "1",
        "--jitter",
        "0",
        "run",
        "--until-idle",
    ]);
    assert!(
        stderr(&out).contains(&format!(
            "GET {flaky} failed: 503 Service Unavailable (transient). Dead after 5 attempts."
        )),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        sb.json(&["jobs", "show", "1", "--json"])["history"]
            .as_array()
            .expect("history")
            .len(),
        5
    );
}

#[test]
fn a_page_title_cannot_drive_the_terminal() {
    // The page's <title> holds escape sequences that clear the screen and retitle the
    // terminal window, and a bell.
    let server = FaultServer::start();
    let sb = Sandbox::new();
    let url = server.url("/page?title=Evil%1B%5B2J%1B%5D0%3Bpwned%07+title");
    assert!(sb.run(&["add", &url]).status.success());
    let out = sb.run(&["run", "--until-idle"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let show = sb.run(&["jobs", "show", "1"]);
    let shown = stdout(&show);
    assert!(
        !shown.contains(['\u{1b}', '\u{7}']),
        "control characters reached the terminal: {shown:?}"
    );
    assert!(
        shown.contains("title      Evil [2J ]0;pwned title"),
        "{shown}"
    );
    let doc = sb.json(&["jobs", "show", "1", "--json"]);
    let path = doc["document"].as_str().expect("a saved document");
    let saved = std::fs::read_to_string(path).expect("the document");
    assert!(!saved.contains('\u{1b}'), "{saved:?}");
}

#[test]
fn retry_and_cancel_report_per_id() {
    let sb = Sandbox::new();
    sb.run(&["add", "https://example.com/a", "https://example.com/b"]);
    let out = sb.run(&["jobs", "cancel", "1", "99"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stdout(&out), "cancelled 1\n");
    assert_eq!(stderr(&out), "no job 99\n", "failures go to standard error");
    let out = sb.run(&["jobs", "cancel", "1"]);
    assert_eq!(stdout(&out), "");
    assert_eq!(stderr(&out), "job 1 is cancelled: nothing to do\n");
    let out = sb.run(&["jobs", "retry", "1", "2"]);
    assert!(out.status.success());
    assert_eq!(stdout(&out), "queued again 1\nqueued again 2\n");
    assert_eq!(
        sb.json(&["jobs", "show", "1", "--json"])["status"],
        "pending"
    );
}

#[test]
fn data_dir_flag_and_environment_choose_the_database() {
    let a = Sandbox::new();
    let b = Sandbox::new();
    let out = a
        .cmd()
        .args([
            "--data-dir",
            b.path().to_str().expect("utf8"),
            "add",
            "https://example.com/x",
        ])
        .output()
        .expect("run");
    assert!(out.status.success());
    assert!(
        b.db_path().exists(),
        "--data-dir wins over GLEANER_DATA_DIR"
    );
    assert!(!a.db_path().exists());
    assert_eq!(b.json(&["stats", "--json"])["pending"], 1);
}

#[test]
fn bad_flags_are_explained() {
    let sb = Sandbox::new();
    // Contradicting flags on a new data folder: refused, and no queue is made for them.
    let out = sb.run(&["--base-delay", "20s", "--max-delay", "10s", "stats"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        !sb.path().join("gleaner.db").exists(),
        "a queue was made for a refused command"
    );
    // `--host` narrows `--dead`; with job numbers it would be dropped unsaid.
    let out = sb.run(&["jobs", "retry", "--host", "example.com", "1"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("'--host <HOST>' cannot be used with"),
        "{}",
        stderr(&out)
    );
    let out = sb.run(&["--timeout", "soon", "stats"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("200ms, 30s, 5m"), "{}", stderr(&out));
    let out = sb.run(&["jobs", "show", "42"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("no job 42"));
    // Flags that are each well formed but together cannot work are refused before anything runs.
    for (args, says) in [
        (
            &[
                "--base-delay",
                "10m",
                "--max-delay",
                "1s",
                "run",
                "--until-idle",
            ][..],
            "the delay cap (1s) is below the base delay (600s)",
        ),
        (
            &["--timeout", "0s", "run", "--until-idle"][..],
            "out of range: give a duration from 1ms to 1h",
        ),
        (
            &["--server-retries", "9", "run", "--until-idle"][..],
            "server retries (9) cannot be more than the retries of the whole budget (5)",
        ),
    ] {
        let out = sb.run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(stderr(&out).contains(says), "{args:?}: {}", stderr(&out));
    }
}

#[test]
fn hosts_and_the_whole_queue_can_be_paused_and_resumed() {
    let server = FaultServer::start();
    let sb = Sandbox::new();
    sb.run(&["add", &server.url("/ok/1")]);
    assert_eq!(
        stdout(&sb.run(&["hosts", "pause", "127.0.0.1"])),
        "host 127.0.0.1 paused\n"
    );
    let listed = stdout(&sb.run(&["hosts"]));
    assert!(
        listed.starts_with("127.0.0.1  paused until resumed  (1 pending)"),
        "{listed}"
    );
    // A paused host blocks `run --until-idle` from finishing its job; resume lets it through.
    assert!(sb.run(&["hosts", "resume", "127.0.0.1"]).status.success());
    assert_eq!(
        sb.run(&["hosts", "resume", "127.0.0.1"]).status.code(),
        Some(1),
        "not paused any more"
    );
    // A link names its host; something that cannot be a host is refused rather than paused
    // to no effect.
    assert_eq!(
        stdout(&sb.run(&["hosts", "pause", &server.url("/ok/1")])),
        "host 127.0.0.1 paused\n"
    );
    assert!(sb.run(&["hosts", "resume", "127.0.0.1"]).status.success());
    let out = sb.run(&["hosts", "pause", "not a host!"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("“not a host!” is not a host name; give one such as example.com"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        stdout(&sb.run(&["hosts"])),
        "no host is paused or throttled\n"
    );

    assert_eq!(
        stdout(&sb.run(&["pause"])),
        "queue paused: no new fetch starts until `gleaner resume`\n"
    );
    assert_eq!(sb.json(&["stats", "--json"])["queue_paused"], true);
    let mut run = sb
        .cmd()
        .args(["run", "--until-idle"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    std::thread::sleep(std::time::Duration::from_millis(800));
    assert_eq!(
        server.total_hits(),
        0,
        "nothing starts while the queue is paused"
    );
    assert!(sb.run(&["resume"]).status.success());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while run.try_wait().expect("wait").is_none() {
        assert!(
            std::time::Instant::now() < deadline,
            "the paused worker did not resume"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(server.completions("/ok/1"), 1);
    let log = stderr(&run.wait_with_output().expect("its output"));
    assert_eq!(
        log.matches("the queue is paused, so no job starts").count(),
        1,
        "the waiting run says why, once: {log}"
    );
}

#[test]
fn without_a_display_the_window_says_so_instead_of_crashing() {
    let sb = Sandbox::new();
    let out = sb
        .cmd()
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .output()
        .expect("run gleaner");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("no display to open the window on") && err.contains("gleaner --help"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn output_into_a_pipe_whose_reader_has_gone_ends_quietly() {
    // `gleaner jobs list | head -1`: the reader stops before the listing does.
    let sb = Sandbox::new();
    let urls: Vec<String> = (0..2_000)
        .map(|i| format!("https://example.com/a-long-enough-path/{i}"))
        .collect();
    let mut add = vec!["add"];
    add.extend(urls.iter().map(String::as_str));
    assert!(sb.run(&add).status.success());
    let mut child = sb
        .cmd()
        .args(["jobs", "list", "--limit", "2000"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("gleaner jobs list");
    // 2,000 lines are more than a pipe holds, so the listing is still writing when the read
    // end closes, whenever that is.
    drop(child.stdout.take());
    let out = child.wait_with_output().expect("wait");
    let err = stderr(&out);
    assert!(!err.contains("panicked"), "{err}");
    assert!(out.status.success(), "{:?}: {err}", out.status);
}

/// A large-ish file of junk with a link in every 1,000 lines: `(text, expected output)`.
/// Line i is a link, a lone word (rejected) or prose (passed over).
fn junk_file(lines: usize) -> (String, String, usize) {
    use std::fmt::Write as _;
    // Id 1 is the link the test queues first.
    let (mut text, mut expected, mut id) = (String::new(), String::new(), 1);
    let mut seed = 18u64;
    for i in 0..lines {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        if i % 1000 == 999 {
            id += 1;
            let url = format!("https://site{}.example/paper/{i}", i % 7);
            writeln!(text, "{url}").expect("write");
            writeln!(expected, "queued {id} {url}").expect("write");
        } else if i % 3 == 0 {
            writeln!(text, "some prose words {seed:x} here").expect("write");
        } else {
            let word = format!("junk{seed:016x}{:x}", seed.rotate_left(17));
            writeln!(text, "{word}").expect("write");
            writeln!(expected, "rejected {word}: no web address found").expect("write");
        }
    }
    (text, expected, id - 1)
}

#[test]
fn a_large_junk_file_is_read_as_it_goes_and_answered_line_by_line() {
    let sb = Sandbox::new();
    // What the binary holds before it reads any input (its libraries, the open queue): an
    // add that waits for standard input.
    let baseline_kib = {
        use std::io::Write as _;
        let mut waiting = sb
            .cmd()
            .args(["add", "--file", "-"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("spawn gleaner");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while !sb.db_path().exists() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        std::thread::sleep(std::time::Duration::from_millis(500));
        let kib = gleaner_tests::peak_rss_kib_of(waiting.id()).expect("VmHWM");
        let mut input = waiting.stdin.take().expect("stdin");
        input.write_all(b"https://first.example/\n").expect("write");
        drop(input);
        assert!(waiting.wait().expect("wait").success());
        kib
    };
    // 8 MB, and many more findings than one chunk holds.
    let (text, expected, links) = junk_file(200_000);
    let file = sb.path().join("junk.txt");
    std::fs::write(&file, &text).expect("write");
    let mut child = sb
        .cmd()
        .args(["add", "--file", file.to_str().expect("utf8")])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn gleaner");
    // Read the answer slowly enough to look at the process's memory while it prints: the old
    // intake held the whole file and every rejected line until the end.
    let mut peak_kib = 0;
    let mut out = Vec::new();
    {
        use std::io::BufRead as _;
        let mut reader = std::io::BufReader::new(child.stdout.take().expect("stdout"));
        let mut line = Vec::new();
        let mut read = 0u64;
        while reader.read_until(b'\n', &mut line).expect("read") > 0 {
            out.extend_from_slice(&line);
            line.clear();
            read += 1;
            if read.is_multiple_of(100)
                && let Some(kib) = gleaner_tests::peak_rss_kib_of(child.id())
            {
                peak_kib = peak_kib.max(kib);
            }
        }
    }
    let status = child.wait().expect("wait");
    let out = String::from_utf8(out).expect("utf8");
    assert_eq!(status.code(), Some(1), "rejected lines make exit 1");
    assert_eq!(out.lines().count(), expected.lines().count());
    assert!(
        out == expected,
        "the output is not one line per input, in order"
    );
    // The old intake held the file, and a finding per line, at once: 8 MB of junk took 50 MB
    // more than the binary alone (debug build); read as it goes, about 5 MB more.
    let grown_mib = peak_kib.saturating_sub(baseline_kib) / 1024;
    eprintln!(
        "peak RSS {} MiB, {grown_mib} MiB over the {} MiB before any input",
        peak_kib / 1024,
        baseline_kib / 1024
    );
    assert!(grown_mib < 20, "{grown_mib} MiB more for an 8 MB file");
    // One batch, even though its jobs were queued a chunk at a time.
    let db = sb.sql();
    let batches: Vec<(String, i64)> = db
        .prepare("SELECT b.name, count(j.id) FROM batches b JOIN jobs j ON j.batch_id = b.id GROUP BY b.id ORDER BY b.id")
        .expect("prepare")
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows");
    // The first link's batch, and the file's.
    assert_eq!(batches.len(), 2, "{batches:?}");
    assert_eq!(batches[1].1, links as i64);
    // The same file again: every link a duplicate, and no new batch.
    let out = sb.run(&["add", "--file", file.to_str().expect("utf8")]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stdout(&out)
            .lines()
            .filter(|l| l.starts_with("duplicate "))
            .count(),
        links
    );
    let count: i64 = db
        .query_row("SELECT count(*) FROM batches", [], |r| r.get(0))
        .expect("count");
    assert_eq!(count, 2);
}

#[test]
fn durations_and_sizes_out_of_range_are_usage_errors() {
    let sb = Sandbox::new();
    for (args, says) in [
        (
            &["--timeout", "18446744073709551615s", "run", "--until-idle"][..],
            "invalid value '18446744073709551615s' for '--timeout <DURATION>': out of range: \
             give a duration from 1ms to 1h",
        ),
        (
            &["--max-job-age", "300000000y", "run", "--until-idle"][..],
            "for '--max-job-age <DURATION>': out of range: give a duration from 1s to 1year",
        ),
        (
            &["--base-delay", "2days", "add", "https://example.com/"][..],
            "for '--base-delay <DURATION>': out of range: give a duration from 1ms to 1day",
        ),
        (
            &["--max-delay", "8days", "stats"][..],
            "for '--max-delay <DURATION>': out of range: give a duration from 1ms to 7days",
        ),
        (
            &["--timeout", "0s", "run", "--until-idle"][..],
            "out of range: give a duration from 1ms to 1h",
        ),
        (
            &["--max-body", "16384GB", "stats"][..],
            "for '--max-body <SIZE>': out of range: give a size from 1B to 4GB",
        ),
        (
            &["--max-body", "0", "stats"][..],
            "out of range: give a size from 1B to 4GB",
        ),
    ] {
        let out = sb.run(args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
    // Nothing was queued by the refused add, and the bounds themselves are taken.
    let out = sb.run(&[
        "--timeout",
        "1h",
        "--max-job-age",
        "1year",
        "--max-body",
        "4GB",
        "stats",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("total 0"), "{}", stdout(&out));
}

#[test]
fn an_ipv6_host_is_paused_and_resumed_by_name_or_link() {
    let sb = Sandbox::new();
    let out = sb.run(&["add", "http://[::1]:8080/x", "http://[::1]:9/y"]);
    assert!(out.status.success(), "{}", stderr(&out));
    for pause in ["[::1]", "http://[::1]:8080/x", "::1"] {
        let out = sb.run(&["hosts", "pause", pause]);
        assert!(out.status.success(), "{pause}: {}", stderr(&out));
        assert_eq!(stdout(&out), "host ::1 paused\n", "{pause}");
        // The pause is on the host the jobs have: both of them wait behind it.
        let listed = stdout(&sb.run(&["hosts"]));
        assert!(
            listed.starts_with("::1  paused until resumed  (2 pending)"),
            "{pause}: {listed}"
        );
        let out = sb.run(&["hosts", "resume", "http://[::1]:9/other"]);
        assert!(out.status.success(), "{pause}: {}", stdout(&out));
        assert_eq!(stdout(&out), "host ::1 resumed\n");
    }
    let jobs = sb.json(&["jobs", "list", "--host", "[::1]", "--json"]);
    assert_eq!(jobs.as_array().expect("array").len(), 2, "{jobs}");
    assert_eq!(jobs[0]["host"], "::1");
}

#[test]
fn bidi_controls_reach_neither_titles_nor_the_terminal() {
    // A title with a right-to-left override: "Invoice <U+202E>exe.txt" shows as "Invoice txt.exe",
    // and everything after it on the line is reversed.
    let server = FaultServer::start();
    let sb = Sandbox::new();
    let url = server.url("/page?title=Invoice+%E2%80%AEexe.txt%E2%80%AC+and+%E2%81%A7more");
    assert!(sb.run(&["add", &url]).status.success());
    let out = sb.run(&["run", "--until-idle"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let shown = stdout(&sb.run(&["jobs", "show", "1"]));
    assert!(
        shown.contains("title      Invoice exe.txt and more"),
        "{shown}"
    );
    // Rows saved before, or text that reaches the row another way, are escaped when shown.
    sb.sql()
        .execute(
            "UPDATE jobs SET title = 'T\u{202e}it', error = 'E\u{2066}rr\u{200f}', \
             status = 'dead', error_class = 'fatal' WHERE id = 1",
            [],
        )
        .expect("update");
    let bidi = |s: &str| {
        s.contains([
            '\u{202a}', '\u{202b}', '\u{202c}', '\u{202d}', '\u{202e}', '\u{2066}', '\u{2067}',
            '\u{2068}', '\u{2069}', '\u{200e}', '\u{200f}', '\u{061c}',
        ])
    };
    let shown = stdout(&sb.run(&["jobs", "show", "1"]));
    assert!(!bidi(&shown), "{shown:?}");
    assert!(shown.contains("title      T\\u{202e}it"), "{shown}");
    assert!(
        shown.contains("error      E\\u{2066}rr\\u{200f}"),
        "{shown}"
    );
    let listed = stdout(&sb.run(&["jobs", "list"]));
    assert!(!bidi(&listed), "{listed:?}");
    assert!(listed.contains("(E\\u{2066}rr\\u{200f})"), "{listed}");
    // add echoes a rejected line escaped.
    let out = sb.run(&["add", "evil\u{202e}word"]);
    assert_eq!(
        stdout(&out),
        "rejected evil\\u{202e}word: no web address found\n"
    );
}

#[test]
fn a_reader_that_stops_reading_neither_stops_an_intake_nor_makes_search_panic() {
    use std::io::{BufRead as _, BufReader};
    use std::process::Stdio;
    let sb = Sandbox::new();
    let list = sb.path().join("big.txt");
    let lines: String = (0..25_000)
        .map(|i| format!("https://example.com/p{i}\n"))
        .collect();
    std::fs::write(&list, lines).expect("write the list");
    // `gleaner add --file big.txt | head -1`: the reader goes after one line.
    let mut child = sb
        .cmd()
        .args(["add", "--file", &list.to_string_lossy()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut first = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut first)
        .expect("one line");
    assert!(first.starts_with("queued 1 "), "{first}");
    let out = child.wait_with_output().expect("wait");
    assert!(out.status.success(), "{}", stderr(&out));
    let stats = sb.json(&["stats", "--json"]);
    assert_eq!(
        stats["pending"].as_u64(),
        Some(25_000),
        "every line queued: {stats}"
    );

    // `gleaner search … | head -1` ends quietly too (it panicked on the closed pipe).
    let mut child = sb
        .cmd()
        .args(["search", "anything"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    drop(child.stdout.take());
    let out = child.wait_with_output().expect("wait");
    assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
}

#[test]
fn an_empty_file_is_said_to_hold_nothing() {
    let sb = Sandbox::new();
    let empty = sb.path().join("empty.txt");
    std::fs::write(&empty, "\n  \n").expect("write");
    let out = sb.run(&["add", "--file", &empty.to_string_lossy()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("empty.txt holds no links or references"),
        "{}",
        stderr(&out)
    );
}
