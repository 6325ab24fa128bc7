//! Every row of the design's classification table, against a real socket on loopback.

use std::time::Duration;

use gleaner::engine::fetch::{Fetcher, Limits};
use gleaner::engine::intake::{self, Found};
use gleaner::engine::policy::{ErrorClass, Failure, FailureKind};
use gleaner_tests::server::{Behavior, FaultServer};

fn limits() -> Limits {
    Limits {
        timeout: Duration::from_millis(800),
        max_body: 1024 * 1024,
    }
}

async fn fail(url: &str) -> Failure {
    fail_with(url, limits()).await
}

async fn fail_with(url: &str, limits: Limits) -> Failure {
    let fetcher = Fetcher::new(5).expect("client");
    match fetcher.get(url, limits).await {
        Ok(f) => panic!("{url} unexpectedly succeeded with {}", f.status),
        Err(f) => f,
    }
}

fn assert_kind(f: &Failure, kind: FailureKind, class: ErrorClass) {
    assert_eq!((f.kind, f.class()), (kind, class), "{f:?}");
}

#[tokio::test]
async fn success_reads_the_body_and_final_url() {
    let s = FaultServer::start();
    let got = Fetcher::new(5)
        .expect("client")
        .get(&s.url("/redirect-chain/2"), limits())
        .await
        .expect("ok");
    assert_eq!(got.status, 200);
    assert!(
        got.final_url.ends_with("/redirect-chain/0"),
        "{}",
        got.final_url
    );
    let got = Fetcher::new(5)
        .expect("client")
        .get(&s.url("/gzip-ok"), limits())
        .await
        .expect("ok");
    assert!(
        String::from_utf8_lossy(&got.body).contains("<html"),
        "gzip decoded"
    );
}

#[tokio::test]
async fn connection_refused_is_transient() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    let f = fail(&format!("http://127.0.0.1:{port}/")).await;
    assert_kind(&f, FailureKind::ConnectRefused, ErrorClass::Transient);
}

#[tokio::test]
async fn read_stall_times_out_transient() {
    let s = FaultServer::start();
    let f = fail(&s.url("/stall-headers")).await;
    assert_kind(&f, FailureKind::Timeout, ErrorClass::Transient);
    assert!(f.message.contains("timed out"), "{}", f.message);
}

#[tokio::test]
async fn closed_before_headers_is_transient() {
    let s = FaultServer::start();
    let f = fail(&s.url("/close-before-headers")).await;
    assert_kind(&f, FailureKind::ClosedBeforeResponse, ErrorClass::Transient);
}

#[tokio::test]
async fn dropped_mid_body_is_transient_not_a_parse_error() {
    let s = FaultServer::start();
    let f = fail(&s.url("/drop-mid-body")).await;
    assert_kind(&f, FailureKind::DroppedMidBody, ErrorClass::Transient);
}

#[tokio::test]
async fn slow_drip_past_the_total_timeout_is_transient() {
    let s = FaultServer::start();
    // 100 bytes, one every 50 ms: each read is quick, the whole takes 5 s; the total limit is 0.8 s.
    let started = std::time::Instant::now();
    let f = fail(&s.url("/drip?bytes=100&every_ms=50")).await;
    assert_kind(&f, FailureKind::Timeout, ErrorClass::Transient);
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "the total timeout was not enforced"
    );
}

#[tokio::test]
async fn garbage_status_line_is_a_transient_protocol_error() {
    let s = FaultServer::start();
    let f = fail(&s.url("/garbage")).await;
    assert_kind(&f, FailureKind::Protocol, ErrorClass::Transient);
}

#[tokio::test]
async fn server_errors_are_transient() {
    let s = FaultServer::start();
    for code in [500, 502, 503, 504, 599] {
        let f = fail(&s.url(&format!("/status/{code}"))).await;
        assert_kind(&f, FailureKind::ServerError, ErrorClass::Transient);
        assert_eq!(f.http_status, Some(code));
    }
    assert_eq!(
        fail(&s.url("/status/503")).await.message,
        "503 Service Unavailable"
    );
}

#[tokio::test]
async fn rate_limits_honour_retry_after_in_both_forms() {
    let s = FaultServer::start();
    let f = fail(&s.url("/status/429?retry_after=7")).await;
    assert_kind(&f, FailureKind::RateLimited, ErrorClass::RateLimited);
    assert_eq!(f.retry_after, Some(Duration::from_secs(7)));

    let f = fail(&s.url("/status/429?retry_after_date=120")).await;
    assert_kind(&f, FailureKind::RateLimited, ErrorClass::RateLimited);
    // Measured against the response's Date; HTTP dates have 1 s resolution.
    let ra = f.retry_after.expect("parsed date");
    assert!((119..=121).contains(&ra.as_secs()), "{ra:?}");

    let f = fail(&s.url("/status/503?retry_after=3")).await;
    assert_kind(&f, FailureKind::RateLimited, ErrorClass::RateLimited);
    assert_eq!(f.retry_after, Some(Duration::from_secs(3)));

    // An unparsable Retry-After is ignored: a 503 stays a plain server error.
    let f = fail(&s.url("/status/503?retry_after=garbage")).await;
    assert_kind(&f, FailureKind::ServerError, ErrorClass::Transient);
    // A 429 without Retry-After is still a rate limit.
    let f = fail(&s.url("/status/429")).await;
    assert_kind(&f, FailureKind::RateLimited, ErrorClass::RateLimited);
    assert_eq!(f.retry_after, None);
}

#[tokio::test]
async fn forbidden_with_an_exhausted_rate_limit_header_is_a_rate_limit() {
    let s = FaultServer::start();
    s.script(
        "/api",
        vec![Behavior::Respond {
            status: 403,
            headers: vec![("X-RateLimit-Remaining".into(), "0".into())],
            body: b"slow down".to_vec(),
        }],
    );
    assert_kind(
        &fail(&s.url("/api")).await,
        FailureKind::RateLimited,
        ErrorClass::RateLimited,
    );
}

/// GitHub's secondary rate limit: a 403 with a Retry-After that can be read is a rate limit,
/// waited out; a 403 with one that cannot stays a refusal.
#[tokio::test]
async fn forbidden_with_a_retry_after_is_a_rate_limit() {
    let s = FaultServer::start();
    let f = fail(&s.url("/status/403?retry_after=60")).await;
    assert_kind(&f, FailureKind::RateLimited, ErrorClass::RateLimited);
    assert_eq!(f.retry_after, Some(Duration::from_secs(60)));
    s.script(
        "/unreadable",
        vec![Behavior::Respond {
            status: 403,
            headers: vec![("Retry-After".into(), "soon".into())],
            body: Vec::new(),
        }],
    );
    let f = fail(&s.url("/unreadable")).await;
    assert_kind(&f, FailureKind::ClientError, ErrorClass::Fatal);
}

/// Statuses HTTP says may be tried again (408 Request Timeout, 421 Misdirected Request, 425
/// Too Early) are transient like a 5xx, not refusals.
#[tokio::test]
async fn statuses_that_may_be_retried_are_transient() {
    let s = FaultServer::start();
    for code in [408, 421, 425] {
        let f = fail(&s.url(&format!("/status/{code}"))).await;
        assert_kind(&f, FailureKind::ServerError, ErrorClass::Transient);
        assert_eq!(f.http_status, Some(code));
    }
}

#[tokio::test]
async fn other_client_errors_are_fatal() {
    let s = FaultServer::start();
    for code in [400, 401, 403, 404, 410, 422] {
        let f = fail(&s.url(&format!("/status/{code}"))).await;
        assert_kind(&f, FailureKind::ClientError, ErrorClass::Fatal);
        assert_eq!(f.http_status, Some(code));
    }
    assert_eq!(fail(&s.url("/status/404")).await.message, "404 Not Found");
}

#[tokio::test]
async fn redirect_loops_and_redirects_to_file_are_fatal() {
    let s = FaultServer::start();
    assert_kind(
        &fail(&s.url("/redirect-loop")).await,
        FailureKind::RedirectLoop,
        ErrorClass::Fatal,
    );
    assert_kind(
        &fail(&s.url("/redirect-chain/30")).await,
        FailureKind::RedirectLoop,
        ErrorClass::Fatal,
    );
    let f = fail(&s.url("/redirect-file")).await;
    assert_kind(&f, FailureKind::RedirectScheme, ErrorClass::Fatal);
    assert!(f.message.contains("file:"), "{}", f.message);
}

#[tokio::test]
async fn a_gzip_bomb_is_stopped_at_the_decompressed_size_cap() {
    let s = FaultServer::start();
    // 64 MiB of zeros compresses to about 64 KiB on the wire; the cap is 1 MiB of decoded bytes.
    let f = fail(&s.url("/gzip-bomb?mb=64")).await;
    assert_kind(&f, FailureKind::TooLarge, ErrorClass::Fatal);
    assert!(f.message.contains("after decompression"), "{}", f.message);
    let f = fail(&s.url("/big?mb=2")).await;
    assert_kind(&f, FailureKind::TooLarge, ErrorClass::Fatal);
}

#[tokio::test]
async fn reserved_hosts_and_malformed_urls_are_fatal() {
    let f = fail("http://paper.invalid/x").await;
    assert_kind(&f, FailureKind::NoSuchHost, ErrorClass::Fatal);
    let f = fail("http://[::1").await;
    assert_kind(&f, FailureKind::BadUrl, ErrorClass::Fatal);
    // Intake refuses both before they are ever queued.
    for input in [
        "http://paper.invalid/x",
        "http://[::1",
        "javascript:alert(1)",
        "file:///etc/passwd",
    ] {
        assert!(
            matches!(intake::vet(input), Found::Rejected { .. }),
            "{input} was accepted"
        );
    }
}

/// A server that answers a TLS ClientHello with a fatal `handshake_failure` alert, as a site
/// does whose TLS versions or ciphers have nothing in common with ours.
fn tls_alert_server() -> u16 {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut hello = [0u8; 512];
            let _ = stream.read(&mut hello);
            // Record type alert, TLS 1.2, length 2: level fatal, description handshake_failure.
            let _ = stream.write_all(&[0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x28]);
        }
    });
    port
}

/// A TLS handshake that fails for any reason is fatal and says so in plain words. It was
/// "could not connect", transient and taken for this machine being offline.
#[tokio::test]
async fn a_tls_handshake_refused_by_the_site_is_fatal() {
    let port = tls_alert_server();
    let f = fail(&format!("https://127.0.0.1:{port}/paper")).await;
    assert_kind(&f, FailureKind::Tls, ErrorClass::Fatal);
    assert!(
        f.message.contains("refused a secure connection"),
        "{}",
        f.message
    );
}

/// A plain HTTP server that answers whatever it reads with a 400, as a web server does to a
/// TLS ClientHello on its plain port.
fn plain_http_server() -> u16 {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut hello = [0u8; 512];
            let _ = stream.read(&mut hello);
            let _ = stream.write_all(
                b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            );
        }
    });
    port
}

#[tokio::test]
async fn plain_http_on_an_https_address_is_a_fatal_tls_failure() {
    let port = plain_http_server();
    let f = fail(&format!("https://127.0.0.1:{port}/paper")).await;
    assert_kind(&f, FailureKind::Tls, ErrorClass::Fatal);
    assert!(f.message.contains("plain HTTP"), "{}", f.message);
}

/// A body that says it is gzip but is not (plain HTML under `Content-Encoding: gzip`) is the
/// same on every try: fatal, "corrupt", not a connection dropped mid-download retried six
/// times.
#[tokio::test]
async fn a_body_that_is_not_the_encoding_it_declares_is_fatal() {
    let s = FaultServer::start();
    s.script(
        "/mislabelled",
        vec![Behavior::Respond {
            status: 200,
            headers: vec![
                ("Content-Type".into(), "text/html".into()),
                ("Content-Encoding".into(), "gzip".into()),
            ],
            body: b"<html><body>plain, not gzip</body></html>".to_vec(),
        }],
    );
    let f = fail(&s.url("/mislabelled")).await;
    assert_kind(&f, FailureKind::Unparsable, ErrorClass::Fatal);
    assert!(
        f.message.contains("compressed body is corrupt"),
        "{}",
        f.message
    );
}

/// Compressed bodies whose data is corrupt, past a good gzip header or as brotli, are as
/// fatal as a mislabelled one.
#[tokio::test]
async fn a_corrupt_compressed_body_is_fatal() {
    let s = FaultServer::start();
    // A gzip header, then bytes that are no deflate stream.
    let mut gzip = vec![0x1f, 0x8b, 0x08, 0, 0, 0, 0, 0, 0, 0xff];
    gzip.extend_from_slice(&[0xff; 64]);
    for (path, encoding, body) in [
        ("/bad-gzip", "gzip", gzip),
        ("/bad-br", "br", vec![0xff; 64]),
        ("/bad-deflate", "deflate", vec![0xff; 64]),
    ] {
        s.script(
            path,
            vec![Behavior::Respond {
                status: 200,
                headers: vec![
                    ("Content-Type".into(), "text/html".into()),
                    ("Content-Encoding".into(), encoding.into()),
                ],
                body,
            }],
        );
        let f = fail(&s.url(path)).await;
        assert_kind(&f, FailureKind::Unparsable, ErrorClass::Fatal);
    }
}

/// A compressed body cut short by a connection that drops is still the connection's:
/// transient, not corrupt.
#[tokio::test]
async fn a_compressed_body_cut_short_is_dropped_mid_body() {
    use std::io::{Read, Write};
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let page: Vec<u8> = (0..20_000u32)
        .flat_map(|i| format!("<p>line {i}</p>").into_bytes())
        .collect();
    encoder.write_all(&page).expect("gzip");
    let gzip = encoder.finish().expect("gzip");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        if let Ok((mut stream, _)) = listener.accept() {
            let mut head = [0u8; 2048];
            let _ = stream.read(&mut head);
            let _ = stream.write_all(
                format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Encoding: gzip\r\n\
                     Content-Length: {}\r\n\r\n",
                    gzip.len()
                )
                .as_bytes(),
            );
            let _ = stream.write_all(&gzip[..gzip.len() / 2]);
        }
    });
    let f = fail(&format!("http://127.0.0.1:{port}/page")).await;
    assert_kind(&f, FailureKind::DroppedMidBody, ErrorClass::Transient);
}
