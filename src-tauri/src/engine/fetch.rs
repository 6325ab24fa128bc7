//! One HTTP GET, bounded in every dimension: a total timeout, a cap on decompressed bytes, a
//! redirect policy that refuses loops and non-web schemes. Failures come back classified.

use std::time::{Duration, SystemTime};

use futures_util::StreamExt;
use reqwest::header::{CONTENT_LENGTH, CONTENT_TYPE, DATE, HeaderMap, LOCATION, RETRY_AFTER};

use super::policy::{self, Failure, FailureKind, RedirectError};
use super::redact;

#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error("cannot build the HTTP client: {0}")]
    Client(#[from] reqwest::Error),
}

/// A 2xx response read to the end.
#[derive(Debug, Clone)]
pub struct Fetched {
    pub status: u16,
    pub final_url: String,
    pub content_type: Option<String>,
    pub body: Vec<u8>,
}

/// Limits for one request, taken from the policy in force when the request starts.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub timeout: Duration,
    pub max_body: u64,
}

#[derive(Debug, Clone)]
pub struct Fetcher {
    client: reqwest::Client,
    /// Follows redirects within the first host only (see [`Fetcher::get_within_host`]).
    within_host: reqwest::Client,
}

/// What [`Fetcher::get_within_host`] got: the body, or a redirect to another host.
#[derive(Debug)]
pub enum Answer {
    Body(Fetched),
    Moved { status: u16, to: String },
}

pub const USER_AGENT: &str = concat!("Gleaner/", env!("CARGO_PKG_VERSION"), " (research fetcher)");

impl Fetcher {
    pub fn new(max_redirects: u32) -> Result<Self, FetchError> {
        let client = Self::client(max_redirects, false)?;
        let within_host = Self::client(max_redirects, true)?;
        Ok(Self {
            client,
            within_host,
        })
    }

    fn client(max_redirects: u32, within_host: bool) -> Result<reqwest::Client, FetchError> {
        let redirect = reqwest::redirect::Policy::custom(move |attempt| {
            // Another host's pauses and limits are for the queue to keep: hand it back.
            let first = attempt.previous().first().and_then(|u| u.host_str());
            if within_host && first.is_some() && attempt.url().host_str() != first {
                return attempt.stop();
            }
            let scheme = attempt.url().scheme();
            if scheme != "http" && scheme != "https" {
                let target = attempt.url().to_string();
                return attempt.error(RedirectError::Scheme(target));
            }
            if attempt
                .previous()
                .first()
                .is_some_and(|from| policy::crosses_into_local(from, attempt.url()))
            {
                let target = redact::url(attempt.url().as_str()).into_owned();
                return attempt.error(RedirectError::Local(target));
            }
            if attempt.previous().iter().any(|u| u == attempt.url()) {
                let target = attempt.url().to_string();
                return attempt.error(RedirectError::Loop(target));
            }
            if attempt.previous().len() > max_redirects as usize {
                return attempt.error(RedirectError::TooMany(max_redirects));
            }
            attempt.follow()
        });
        Ok(reqwest::Client::builder()
            .user_agent(USER_AGENT)
            .redirect(redirect)
            .connect_timeout(Duration::from_secs(10))
            .pool_idle_timeout(Duration::from_secs(30))
            .build()?)
    }

    /// GET `url`, following redirects, and read the whole body within `limits`.
    pub async fn get(&self, url: &str, limits: Limits) -> Result<Fetched, Failure> {
        self.get_as(url, None, limits).await
    }

    /// As [`Fetcher::get`], asking for `accept` (content negotiation, as a DOI resolver does
    /// for CSL-JSON metadata).
    pub async fn get_as(
        &self,
        url: &str,
        accept: Option<&'static str>,
        limits: Limits,
    ) -> Result<Fetched, Failure> {
        match self.fetch(url, accept, limits, false).await? {
            Answer::Body(fetched) => Ok(fetched),
            // The client that follows every redirect never stops at one.
            Answer::Moved { status, .. } => Err(Failure {
                http_status: Some(status),
                ..Failure::new(
                    FailureKind::BadRedirect,
                    format!("{status} redirect not followed"),
                )
            }),
        }
    }

    /// As [`Fetcher::get_as`], but a redirect to another host is not followed: it comes back
    /// as [`Answer::Moved`], so the queue can send the request to that host's lane, under its
    /// pauses, limits and intervals (a DOI resolver's redirect to a paused publisher).
    pub async fn get_within_host(
        &self,
        url: &str,
        accept: Option<&'static str>,
        limits: Limits,
    ) -> Result<Answer, Failure> {
        self.fetch(url, accept, limits, true).await
    }

    async fn fetch(
        &self,
        url: &str,
        accept: Option<&'static str>,
        limits: Limits,
        within_host: bool,
    ) -> Result<Answer, Failure> {
        let parsed = url::Url::parse(url)
            .map_err(|e| Failure::new(FailureKind::BadUrl, format!("malformed URL: {e}")))?;
        // Intake takes only http(s), but an archive's answer names a link of its own: reqwest
        // would refuse another scheme with an error no retry mends.
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(Failure::new(
                FailureKind::BadUrl,
                format!("not a web address: {}", parsed.scheme()),
            ));
        }
        if let Some(reason) = super::intake::unfetchable_host(&parsed) {
            return Err(Failure::new(FailureKind::NoSuchHost, reason));
        }
        let fut = self.get_inner(parsed, accept, limits, within_host);
        // reqwest's own timeout covers connect to last byte; this outer one is belt and braces
        // for anything that might not observe it (a stalled decoder, say).
        match tokio::time::timeout(limits.timeout + Duration::from_secs(1), fut).await {
            Ok(r) => r,
            Err(_) => Err(Failure::new(
                FailureKind::Timeout,
                format!("timed out after {}", policy::human_duration(limits.timeout)),
            )),
        }
    }

    async fn get_inner(
        &self,
        url: url::Url,
        accept: Option<&'static str>,
        limits: Limits,
        within_host: bool,
    ) -> Result<Answer, Failure> {
        let first_host = url.host_str().map(str::to_string);
        let client = if within_host {
            &self.within_host
        } else {
            &self.client
        };
        let mut request = client.get(url).timeout(limits.timeout);
        if let Some(accept) = accept {
            request = request.header(reqwest::header::ACCEPT, accept);
        }
        let response = request
            .send()
            .await
            .map_err(|e| failure_from_reqwest(&e, limits))?;
        let status = response.status();
        let final_url = response.url().to_string();
        if within_host && status.is_redirection() {
            let to = response
                .headers()
                .get(LOCATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|l| response.url().join(l).ok());
            if let Some(to) = to.filter(|to| {
                matches!(to.scheme(), "http" | "https") && to.host_str() != first_host.as_deref()
            }) {
                return Ok(Answer::Moved {
                    status: status.as_u16(),
                    to: to.to_string(),
                });
            }
        }
        if !status.is_success() {
            let mut failure = failure_from_status(status, response.headers());
            failure.answered_by = Some(final_url);
            return Err(failure);
        }
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let declared = response
            .headers()
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        // Content-Length is the compressed size when Content-Encoding is set, so it can only
        // reject early; the real guard is counting decoded bytes below.
        if declared.is_some_and(|n| n > limits.max_body)
            && !response
                .headers()
                .contains_key(reqwest::header::CONTENT_ENCODING)
        {
            return Err(too_large(limits.max_body));
        }
        // What a header claims reserves at most 1 MiB before a byte has come.
        let mut body =
            Vec::with_capacity(declared.unwrap_or(0).min(limits.max_body).min(1 << 20) as usize);
        let mut stream = response.bytes_stream();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| failure_from_reqwest(&e, limits))?;
            if body.len() as u64 + chunk.len() as u64 > limits.max_body {
                return Err(too_large(limits.max_body));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(Answer::Body(Fetched {
            status: status.as_u16(),
            final_url,
            content_type,
            body,
        }))
    }
}

fn too_large(max: u64) -> Failure {
    Failure::new(
        FailureKind::TooLarge,
        format!(
            "response larger than the {} limit (after decompression)",
            human_bytes(max)
        ),
    )
}

pub fn human_bytes(n: u64) -> String {
    const MB: u64 = 1024 * 1024;
    if n >= MB && n.is_multiple_of(MB) {
        format!("{} MB", n / MB)
    } else if n >= 1024 && n.is_multiple_of(1024) {
        format!("{} KB", n / 1024)
    } else {
        format!("{n} bytes")
    }
}

fn failure_from_reqwest(err: &reqwest::Error, limits: Limits) -> Failure {
    let kind = policy::kind_of_reqwest_error(err);
    let message = match kind {
        FailureKind::Timeout => {
            format!("timed out after {}", policy::human_duration(limits.timeout))
        }
        FailureKind::ConnectRefused => "connection refused".to_string(),
        FailureKind::NoSuchHost => format!(
            "no such host: {} (the name does not resolve)",
            err.url().and_then(|u| u.host_str()).unwrap_or("?")
        ),
        FailureKind::DnsTemporary => format!(
            "name lookup for {} failed for now (offline?)",
            err.url().and_then(|u| u.host_str()).unwrap_or("?")
        ),
        FailureKind::ClosedBeforeResponse => "connection closed before a response".to_string(),
        // Said of the host: one host may be out of this network's reach (an IPv6-only host on
        // an IPv4 network) while the others answer.
        FailureKind::NetworkDown => format!(
            "no route to {} (is this machine offline?)",
            err.url()
                .and_then(|u| u.host_str())
                .unwrap_or("the network")
        ),
        FailureKind::Unparsable => format!(
            "the site's compressed body is corrupt ({})",
            policy::error_chain(err)
        ),
        FailureKind::Tls => policy::tls_message(err).unwrap_or_else(|| policy::error_chain(err)),
        FailureKind::DroppedMidBody => {
            format!("connection dropped mid-body ({})", policy::error_chain(err))
        }
        FailureKind::Unknown => {
            tracing::warn!(
                error = %redact::text(&policy::error_chain(err)),
                debug = %redact::text(&format!("{err:?}")),
                "unrecognised fetch error, treated as transient"
            );
            policy::error_chain(err)
        }
        _ => policy::error_chain(err),
    };
    // reqwest's messages quote the URL, user name and password included.
    Failure::new(kind, redact::text(&message))
}

fn failure_from_status(status: reqwest::StatusCode, headers: &HeaderMap) -> Failure {
    let code = status.as_u16();
    let now = SystemTime::now();
    let date = headers
        .get(DATE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| httpdate::parse_http_date(v).ok());
    let retry_after = headers
        .get(RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| policy::parse_retry_after(v, date, now));
    let exhausted = ["x-ratelimit-remaining", "ratelimit-remaining"]
        .iter()
        .any(|h| {
            headers
                .get(*h)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.trim() == "0")
        });
    if (300..400).contains(&code) {
        // reqwest hands back a redirect it will not follow (a file: or other non-web Location)
        // as a plain 3xx response; say where it pointed.
        let location = headers
            .get(LOCATION)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        let scheme = location
            .split(':')
            .next()
            .unwrap_or("")
            .to_ascii_lowercase();
        let (kind, message) = if !location.is_empty()
            && scheme != "http"
            && scheme != "https"
            && location.contains(':')
        {
            (
                FailureKind::RedirectScheme,
                format!(
                    "{code} redirect to a non-web address: {}",
                    redact::text(location)
                ),
            )
        } else {
            (
                FailureKind::BadRedirect,
                format!("{code} redirect without a usable Location"),
            )
        };
        return Failure {
            kind,
            message,
            http_status: Some(code),
            retry_after: None,
            answered_by: None,
        };
    }
    let kind = policy::kind_of_status(code, retry_after.is_some(), exhausted);
    let reason = status.canonical_reason().unwrap_or("");
    let message = format!("{code} {reason}").trim().to_string();
    Failure {
        kind,
        message,
        http_status: Some(code),
        retry_after,
        answered_by: None,
    }
}
