use super::*;

/// The words of a page's address are not the error's: a refused connection to
/// `/birth-certificate` is a refused connection, not an invalid TLS certificate.
#[tokio::test]
async fn an_address_that_says_certificate_does_not_make_a_tls_failure() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port();
    // The listener is gone: the port refuses.
    let err = reqwest::Client::new()
        .get(format!("http://127.0.0.1:{port}/birth-certificate"))
        .send()
        .await
        .expect_err("refused");
    assert!(err.to_string().contains("certificate"), "{err}");
    assert_eq!(kind_of_reqwest_error(&err), FailureKind::ConnectRefused);
}

/// Every resolver's words for a name that does not exist are final; a lookup that failed
/// for now is not.
#[test]
fn lookup_errors_in_each_systems_words() {
    for text in [
        "failed to lookup address information: Name or service not known",
        "failed to lookup address information: nodename nor servname provided, or not known",
        "failed to lookup address information: Name does not resolve",
        "failed to lookup address information: No such host is known. (os error 11001)",
    ] {
        assert_eq!(
            kind_of_lookup_error(text),
            Some(FailureKind::NoSuchHost),
            "{text}"
        );
    }
    assert_eq!(
        kind_of_lookup_error(
            "failed to lookup address information: Temporary failure in name resolution"
        ),
        Some(FailureKind::DnsTemporary)
    );
    assert_eq!(kind_of_lookup_error("dns error"), None);
}

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

fn counters(net: u32, server: u32, rate: u32) -> Counters {
    Counters {
        attempts: net + server + rate + 1,
        max_retries: 5,
        net_failures: net,
        server_failures: server,
        rate_limits: rate,
        blocked_failures: 0,
        budget_started_at: 0,
        rate_limited_since: None,
    }
}

#[test]
fn schedule_without_jitter_is_30_60_120_240_300() {
    let p = Policy {
        jitter: 0.0,
        ..Policy::default()
    };
    let got: Vec<u64> = (1..=6).map(|n| p.delay(n, 1.0).as_secs()).collect();
    assert_eq!(got, vec![30, 60, 120, 240, 300, 300]);
}

#[test]
fn jitter_stays_within_bounds_and_reaches_them() {
    let p = Policy::default();
    for n in 1..=5 {
        let raw = p.raw_delay(n).as_secs_f64();
        assert!((p.delay(n, -1.0).as_secs_f64() - raw * 0.8).abs() < 1e-6);
        assert!((p.delay(n, 1.0).as_secs_f64() - raw * 1.2).abs() < 1e-6);
        for i in 0..=20 {
            let u = -1.0 + f64::from(i) / 10.0;
            let d = p.delay(n, u).as_secs_f64();
            assert!(
                d >= raw * 0.8 - 1e-9 && d <= raw * 1.2 + 1e-9,
                "n={n} u={u} d={d}"
            );
        }
    }
}

#[test]
fn huge_retry_numbers_do_not_overflow() {
    let p = Policy::default();
    assert_eq!(p.raw_delay(200), secs(300));
}

#[test]
fn transient_retries_count_up_then_die() {
    let p = Policy {
        jitter: 0.0,
        ..Policy::default()
    };
    let f = Failure::new(FailureKind::ServerError, "503 Service Unavailable");
    let d = decide(&p, &counters(0, 1, 0), &f, 0, 0.0);
    assert_eq!(
        d,
        Decision::Retry {
            delay: secs(60),
            retry: Some((2, 5)),
            pause_host: None
        }
    );
    let d = decide(&p, &counters(2, 3, 0), &f, 0, 0.0);
    assert!(matches!(d, Decision::Dead { .. }), "{d:?}");
}

#[test]
fn per_class_budget_caps_earlier() {
    let p = Policy {
        network_retries: Some(1),
        jitter: 0.0,
        ..Policy::default()
    };
    let f = Failure::new(FailureKind::Timeout, "timed out");
    assert!(matches!(
        decide(&p, &counters(0, 0, 0), &f, 0, 0.0),
        Decision::Retry { .. }
    ));
    assert!(matches!(
        decide(&p, &counters(1, 0, 0), &f, 0, 0.0),
        Decision::Dead { .. }
    ));
    // A server error still has its own budget.
    let s = Failure::new(FailureKind::ServerError, "500");
    assert!(matches!(
        decide(&p, &counters(1, 0, 0), &s, 0, 0.0),
        Decision::Retry { .. }
    ));
}

#[test]
fn fatal_is_dead_at_once() {
    let f = Failure::new(FailureKind::ClientError, "404 Not Found");
    assert!(matches!(
        decide(&Policy::default(), &counters(0, 0, 0), &f, 0, 0.0),
        Decision::Dead { .. }
    ));
}

#[test]
fn rate_limit_waits_max_of_header_and_backoff_and_spends_no_retries() {
    let p = Policy {
        jitter: 0.0,
        ..Policy::default()
    };
    let mut f = Failure::new(FailureKind::RateLimited, "429 Too Many Requests");
    f.retry_after = Some(secs(120));
    let c = counters(4, 0, 30); // 4 transient failures and 30 rate limits already
    assert_eq!(
        decide(&p, &c, &f, 0, 0.0),
        Decision::Retry {
            delay: secs(300),
            retry: None,
            pause_host: Some(secs(300))
        }
    );
    f.retry_after = Some(secs(10));
    let c = counters(0, 0, 0);
    assert_eq!(
        decide(&p, &c, &f, 0, 0.0),
        Decision::Retry {
            delay: secs(30),
            retry: None,
            pause_host: Some(secs(30))
        }
    );
}

#[test]
fn rate_limit_is_bounded_by_job_age() {
    let p = Policy {
        jitter: 0.0,
        ..Policy::default()
    };
    let f = Failure::new(FailureKind::RateLimited, "429 Too Many Requests");
    let day = 24 * 3600 * 1000;
    let limited_since_0 = Counters {
        rate_limited_since: Some(0),
        ..counters(0, 0, 3)
    };
    assert!(matches!(
        decide(&p, &limited_since_0, &f, day - 10_000, 0.0),
        Decision::Dead { .. }
    ));
    assert!(matches!(
        decide(&p, &limited_since_0, &f, day - 400_000, 0.0),
        Decision::Retry { .. }
    ));
}

/// The day of waiting counts from the first rate limit, not from the job's queueing: a job
/// queued two days ago (a queue paused over a weekend) waits out its first 429. It died
/// "still rate-limited after 24 h" at once.
#[test]
fn a_first_rate_limit_of_an_old_job_is_waited_out() {
    let p = Policy {
        jitter: 0.0,
        ..Policy::default()
    };
    let mut f = Failure::new(FailureKind::RateLimited, "429 Too Many Requests");
    f.retry_after = Some(secs(60));
    let two_days = 2 * 24 * 3600 * 1000;
    assert_eq!(
        decide(&p, &counters(0, 0, 0), &f, two_days, 0.0),
        Decision::Retry {
            delay: secs(60),
            retry: None,
            pause_host: Some(secs(60))
        }
    );
}

#[test]
fn a_503_without_retry_after_pauses_the_host_for_the_backoff() {
    let p = Policy {
        jitter: 0.0,
        ..Policy::default()
    };
    let mut f = Failure::new(FailureKind::ServerError, "503 Service Unavailable");
    f.http_status = Some(503);
    assert_eq!(
        decide(&p, &counters(0, 0, 0), &f, 0, 0.0),
        Decision::Retry {
            delay: secs(30),
            retry: Some((1, 5)),
            pause_host: Some(secs(30))
        }
    );
}

#[test]
fn retry_after_seconds_and_dates() {
    let now = SystemTime::UNIX_EPOCH + secs(1_700_000_000);
    assert_eq!(parse_retry_after("120", None, now), Some(secs(120)));
    assert_eq!(parse_retry_after(" 0 ", None, now), Some(secs(0)));
    assert_eq!(
        parse_retry_after("99999999999999999999", None, now),
        Some(MAX_RETRY_AFTER)
    );
    let date = httpdate::fmt_http_date(now + secs(90));
    assert_eq!(parse_retry_after(&date, None, now), Some(secs(90)));
    // Measured against the response's Date, not our clock (ours is 1 h fast here).
    let server_now = now;
    let ours = now + secs(3600);
    assert_eq!(
        parse_retry_after(&date, Some(server_now), ours),
        Some(secs(90))
    );
    // In the past: no wait. Far future: clamped.
    let past = httpdate::fmt_http_date(now - secs(30));
    assert_eq!(parse_retry_after(&past, None, now), Some(secs(0)));
    let far = httpdate::fmt_http_date(now + secs(30 * 24 * 3600));
    assert_eq!(parse_retry_after(&far, None, now), Some(MAX_RETRY_AFTER));
    assert_eq!(parse_retry_after("soon", None, now), None);
    assert_eq!(parse_retry_after("-5", None, now), None);
    assert_eq!(parse_retry_after("", None, now), None);
}

#[test]
fn statuses_map_to_the_design_table() {
    use FailureKind::*;
    assert_eq!(kind_of_status(429, false, false), RateLimited);
    assert_eq!(kind_of_status(503, true, false), RateLimited);
    assert_eq!(kind_of_status(503, false, false), ServerError);
    assert_eq!(kind_of_status(500, false, false), ServerError);
    assert_eq!(kind_of_status(502, false, false), ServerError);
    assert_eq!(kind_of_status(504, false, false), ServerError);
    assert_eq!(kind_of_status(599, false, false), ServerError);
    assert_eq!(kind_of_status(403, false, true), RateLimited);
    assert_eq!(kind_of_status(403, true, false), RateLimited);
    for s in [408, 421, 425] {
        assert_eq!(kind_of_status(s, false, false), ServerError);
        assert_eq!(
            kind_of_status(s, false, false).class(),
            ErrorClass::Transient
        );
    }
    for s in [400, 401, 403, 404, 410, 422] {
        assert_eq!(kind_of_status(s, false, false), ClientError);
        assert_eq!(kind_of_status(s, false, false).class(), ErrorClass::Fatal);
    }
}

#[test]
fn human_durations() {
    assert_eq!(human_duration(secs(60)), "60 s");
    assert_eq!(human_duration(secs(300)), "5 min");
    assert_eq!(human_duration(secs(3600 * 24)), "24 h");
    assert_eq!(human_duration(Duration::from_millis(200)), "200 ms");
}

#[test]
fn a_policy_that_cannot_work_as_meant_is_refused() {
    assert_eq!(Policy::default().check(), Ok(()));
    let with = |f: fn(&mut Policy)| {
        let mut p = Policy::default();
        f(&mut p);
        p.check()
    };
    assert_eq!(
        with(|p| p.base_delay = Duration::ZERO),
        Err(PolicyError::NoBaseDelay)
    );
    assert_eq!(
        with(|p| p.base_delay = Duration::from_secs(600)),
        Err(PolicyError::CapBelowBase {
            base: Duration::from_secs(600),
            cap: Duration::from_secs(300)
        })
    );
    assert_eq!(
        with(|p| p.timeout = Duration::ZERO),
        Err(PolicyError::NoTimeout)
    );
    assert_eq!(with(|p| p.max_body = 0), Err(PolicyError::NoBody));
    assert_eq!(
        with(|p| p.server_retries = Some(9)),
        Err(PolicyError::BudgetAboveMax {
            which: "server",
            n: 9,
            max: 5
        })
    );
    assert_eq!(with(|p| p.network_retries = Some(5)), Ok(()));
    // Sub-second delays stay allowed: the tests and impatient users use them.
    assert_eq!(with(|p| p.base_delay = Duration::from_millis(200)), Ok(()));
}

#[test]
fn a_redirect_from_the_web_into_this_computer_or_its_network_is_refused() {
    let u = |s: &str| url::Url::parse(s).expect("url");
    let web = u("https://journal.example.org/article/1");
    for local in [
        "http://127.0.0.1:8888/admin",
        "http://169.254.169.254/latest/meta-data/",
        "http://192.168.1.1/",
        "http://10.0.0.5/",
        "http://172.16.3.4/",
        "http://100.64.0.1/",
        "http://0.0.0.0/",
        "http://[::1]/",
        "http://[fe80::1]/",
        "http://[fd12::1]/",
        "http://[::ffff:127.0.0.1]/",
        "http://localhost:3000/",
        "http://app.localhost/",
    ] {
        assert!(crosses_into_local(&web, &u(local)), "{local}");
    }
    for public in [
        "https://www.journal.example.org/article/1",
        "http://93.184.216.34/",
        "http://[2606:2800:220:1::]/",
        "http://172.32.0.1/",
    ] {
        assert!(!crosses_into_local(&web, &u(public)), "{public}");
    }
    // A link the user gave to this computer may move about on it.
    assert!(!crosses_into_local(
        &u("http://localhost:8080/notes"),
        &u("http://127.0.0.1:8080/notes/")
    ));
    assert!(!crosses_into_local(
        &u("http://192.168.1.20/wiki"),
        &u("http://192.168.1.20:8080/wiki")
    ));
    assert_eq!(
        FailureKind::RedirectLocal.class(),
        ErrorClass::Fatal,
        "never retried"
    );
}
