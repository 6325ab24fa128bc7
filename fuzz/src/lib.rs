//! One function per fuzz target, each calling Gleaner's parsers the way the app does. The AFL
//! harnesses (`src/bin/*.rs`) and the replay test (`tests/tests/fuzz_replay.rs`, which includes
//! this file by path) share it, so CI replays the corpus through exactly the fuzzed calls.
//!
//! Each function panics only on a finding: a panic escaping Gleaner, or a broken promise of its
//! API (checked with `assert!`).

use std::time::{Duration, SystemTime};

use gleaner::engine::extract::{self, DocKind, Document, ExtractError};
use gleaner::engine::intake::{self, Found};
use gleaner::engine::policy;

/// The largest body the app hands to extraction (`Policy::default().max_body`, which the
/// fetcher enforces); fuzz inputs are far smaller, so this only matters for odd replays.
pub fn max_body() -> usize {
    policy::Policy::default().max_body as usize
}

/// Links in free text: `gleaner add --file` and a dropped file (lossy UTF-8, binary refused
/// whole), a paste (scanned whatever it holds), `gleaner add URL…` (one argument per line) and
/// naming a host to pause.
pub fn intake(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let _ = intake::looks_binary(&text);
    check_found(&intake::scan_text(&text));
    let args: Vec<&str> = text.lines().collect();
    check_found(&intake::scan_args(&args));
    for line in text.lines().take(64) {
        if let Ok(host) = intake::host_name(line) {
            assert!(!host.is_empty(), "empty host from {line:?}");
        }
    }
}

fn check_found(found: &[Found]) {
    for f in found {
        match f {
            Found::Url { url, key, host, .. } => {
                assert!(
                    url.starts_with("http://")
                        || url.starts_with("https://")
                        || intake::Identifier::from_uri(url).is_some(),
                    "queued neither a web URL nor an identifier: {url}"
                );
                assert!(!host.is_empty(), "queued {url} without a host");
                assert!(!key.is_empty());
                let _ = intake::without_credentials(url);
            }
            // What is echoed to a terminal must not carry control characters.
            Found::Rejected { input, .. } | Found::Skipped { input, .. } => {
                assert!(
                    !input.chars().any(char::is_control),
                    "rejected input echoed raw: {input:?}"
                );
            }
        }
    }
}

/// A `Retry-After` value, then optionally a line feed and the response's `Date`, as the
/// fetcher reads a 429 or 503. Header values reach the parser only as visible ASCII
/// (`HeaderValue::to_str`), but any UTF-8 is tried.
pub fn retry_after(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (value, date) = text.split_once('\n').unwrap_or((text, ""));
    let date = httpdate::parse_http_date(date).ok();
    let now = SystemTime::now();
    for reference in [date, None] {
        if let Some(wait) = policy::parse_retry_after(value, reference, now) {
            assert!(wait <= policy::MAX_RETRY_AFTER, "{value:?} waits {wait:?}");
            let _ = policy::human_duration(wait);
        }
    }
    let _ = policy::human_duration(Duration::from_millis(data.len() as u64));
}

/// An HTML body, optionally after a first line `Content-Type: …` (else `text/html`), through
/// the extraction a fetched page gets.
pub fn html(data: &[u8]) -> Result<Document, ExtractError> {
    let (content_type, body) = match data.strip_prefix(b"Content-Type: ") {
        Some(rest) => {
            let end = rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len());
            let ct = String::from_utf8_lossy(&rest[..end]).into_owned();
            (Some(ct), rest.get(end + 1..).unwrap_or_default())
        }
        None => (Some("text/html".to_string()), data),
    };
    let body = &body[..body.len().min(max_body())];
    let doc = on_worker_stack(|| {
        extract::extract(
            body,
            content_type.as_deref(),
            "https://fuzz.example/dir/page.html",
        )
    });
    if let Ok(d) = &doc {
        check_document(d);
    }
    doc
}

/// A body served as `application/pdf`. pdf-extract's own panics are caught inside
/// `extract` and come back as an `Unparsable` error, which is what the app sees.
pub fn pdf(data: &[u8]) -> Result<Document, ExtractError> {
    let body = &data[..data.len().min(max_body())];
    let doc = on_worker_stack(|| {
        extract::extract(body, Some("application/pdf"), "https://fuzz.example/a.pdf")
    });
    if let Ok(d) = &doc {
        check_document(d);
    }
    doc
}

/// The stack extraction gets in the app: `Library::save` runs on tokio's blocking pool, whose
/// threads have 2 MiB. A recursion too deep for that (deeply nested markup) would kill the app,
/// so it must crash here too rather than pass on the main thread's 8 MiB.
fn on_worker_stack<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|scope| {
        let thread = std::thread::Builder::new()
            .stack_size(2 * 1024 * 1024)
            .spawn_scoped(scope, f)
            .expect("spawn the extraction thread");
        // A panic that escaped extraction goes on in the caller, where AFL sees it.
        thread
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

fn check_document(d: &Document) {
    // Extracted text goes into Markdown files that people `cat`.
    if matches!(d.kind, DocKind::Html | DocKind::Pdf) {
        assert!(
            !d.text
                .chars()
                .any(|c| c.is_control() && c != '\n' && c != '\t'),
            "control characters in the text"
        );
    }
    if let Some(title) = &d.title {
        assert!(!title.chars().any(char::is_control), "title {title:?}");
    }
}
