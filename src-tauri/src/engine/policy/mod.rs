//! What a failure means and what to do about it: classification, backoff and Retry-After.
//!
//! Everything here is pure: time and randomness come in as arguments, so the schedule can be
//! checked exactly in unit tests.

use std::error::Error as StdError;
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use super::clock::Millis;

mod intervals;

pub use intervals::{HostIntervals, NO_INTERVALS, as_claimed, default_intervals};

/// The three classes of the design's table, as stored in `jobs.error_class`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorClass {
    Transient,
    RateLimited,
    /// A 200 that was really a block or challenge page.
    Blocked,
    Fatal,
}

impl ErrorClass {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorClass::Transient => "transient",
            ErrorClass::RateLimited => "rate_limited",
            ErrorClass::Blocked => "blocked",
            ErrorClass::Fatal => "fatal",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "transient" => Some(Self::Transient),
            "rate_limited" => Some(Self::RateLimited),
            "blocked" => Some(Self::Blocked),
            "fatal" => Some(Self::Fatal),
            _ => None,
        }
    }
}

/// The finer reason behind a failed attempt. Kept explicit so every transient kind is named and
/// tested; anything not recognised lands in [`FailureKind::Unknown`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    // Network-side transients: they spend the network budget.
    ConnectRefused,
    ConnectFailed,
    Timeout,
    ClosedBeforeResponse,
    DroppedMidBody,
    Protocol,
    DnsTemporary,
    /// No route to the host's network (ENETUNREACH): this machine offline, or one host out of
    /// its reach.
    NetworkDown,
    /// The worker died (crash, kill -9) while this attempt was in flight.
    Interrupted,
    Unknown,
    // Server-side transients: they spend the server budget.
    ServerError,
    // Rate limits: bounded by the job's age, not by a count.
    RateLimited,
    /// A block or challenge page served with 200: retried on its own small budget.
    Blocked,
    // Fatal.
    ClientError,
    NoSuchHost,
    BadUrl,
    RedirectLoop,
    RedirectScheme,
    /// A web address redirected to this computer or its local network (a router, a cloud
    /// machine's metadata service).
    RedirectLocal,
    Tls,
    TooLarge,
    Unparsable,
    /// A 3xx the client could not follow (no usable Location).
    BadRedirect,
    /// A failure of this machine (disk full, library folder unwritable), not of the site.
    Local,
    /// Content the user's settings say not to keep (a type other than text).
    Refused,
}

impl FailureKind {
    /// Failures that say this machine cannot reach the network at all, rather than that one
    /// site is down: a name lookup that fails for now, no route, or a connection that could
    /// not be set up for another local reason. A refused connection is not one: something
    /// answered.
    pub fn suggests_offline(self) -> bool {
        matches!(
            self,
            FailureKind::DnsTemporary | FailureKind::NetworkDown | FailureKind::ConnectFailed
        )
    }

    /// Failures that prove a server answered (so the network works): a refusal, a reply cut
    /// short or malformed, an error status, a certificate. Not a timeout, a failed lookup or
    /// an unknown error, which an offline machine gives too.
    pub fn reached_a_server(self) -> bool {
        use FailureKind::*;
        matches!(
            self,
            ConnectRefused
                | ClosedBeforeResponse
                | DroppedMidBody
                | Protocol
                | ServerError
                | RateLimited
                | Blocked
                | ClientError
                | RedirectLoop
                | RedirectScheme
                | RedirectLocal
                | Tls
                | TooLarge
                | Unparsable
                | BadRedirect
                | Refused
        )
    }

    pub fn class(self) -> ErrorClass {
        use FailureKind::*;
        match self {
            ConnectRefused | ConnectFailed | Timeout | ClosedBeforeResponse | DroppedMidBody
            | Protocol | DnsTemporary | NetworkDown | Interrupted | Unknown | ServerError
            | Local => ErrorClass::Transient,
            RateLimited => ErrorClass::RateLimited,
            Blocked => ErrorClass::Blocked,
            ClientError | NoSuchHost | BadUrl | RedirectLoop | RedirectScheme | RedirectLocal
            | Tls | TooLarge | Unparsable | BadRedirect | Refused => ErrorClass::Fatal,
        }
    }

    /// Which retry budget a transient kind spends.
    pub fn budget(self) -> Budget {
        match self {
            FailureKind::ServerError => Budget::Server,
            FailureKind::RateLimited => Budget::RateLimit,
            FailureKind::Blocked => Budget::Blocked,
            _ => Budget::Network,
        }
    }

    /// A short phrase for people ("timed out", "refused"), used in the UI and notifications.
    pub fn plain_words(self) -> &'static str {
        use FailureKind::*;
        match self {
            ConnectRefused => "connection refused",
            ConnectFailed => "could not connect",
            Timeout => "timed out",
            ClosedBeforeResponse => "connection closed before a response",
            DroppedMidBody => "connection dropped mid-download",
            Protocol => "garbled HTTP response",
            DnsTemporary => "name lookup failed for now (offline?)",
            NetworkDown => "no network (this machine is offline)",
            Interrupted => "interrupted (Gleaner stopped during the download)",
            Unknown => "unrecognised network error",
            ServerError => "server error",
            RateLimited => "rate-limited by the site",
            Blocked => "the site showed a block page",
            ClientError => "the site refused the request",
            NoSuchHost => "no such host",
            BadUrl => "not a valid web address",
            RedirectLoop => "redirect loop",
            RedirectScheme => "redirected to a non-web address",
            RedirectLocal => "redirected to this computer or its local network",
            Tls => "the secure (TLS) connection failed",
            TooLarge => "too large",
            Unparsable => "content cannot be read",
            BadRedirect => "redirect without a usable target",
            Local => "could not save on this computer",
            Refused => "a type your settings do not keep",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Budget {
    Network,
    Server,
    RateLimit,
    Blocked,
}

/// A failed attempt, as the fetcher saw it.
#[derive(Debug, Clone)]
pub struct Failure {
    pub kind: FailureKind,
    /// Human summary: "503 Service Unavailable", "connection refused".
    pub message: String,
    pub http_status: Option<u16>,
    /// Retry-After already resolved to a wait, if the response carried a parsable one.
    pub retry_after: Option<Duration>,
    /// The address whose server gave the failing answer, after redirects.
    pub answered_by: Option<String>,
}

impl Failure {
    pub fn new(kind: FailureKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            http_status: None,
            retry_after: None,
            answered_by: None,
        }
    }

    pub fn class(&self) -> ErrorClass {
        self.kind.class()
    }

    /// The outcome an attempt history records for it: its class, or `interrupted` for an
    /// attempt a stopped worker left.
    pub fn attempt_outcome(&self) -> &'static str {
        if self.kind == FailureKind::Interrupted {
            "interrupted"
        } else {
            self.class().as_str()
        }
    }

    /// For a job's `rate_limited_since`, which keeps the first value it is given: a rate limit
    /// at `now` starts the clock of `max_job_age`, anything else leaves it.
    pub fn rate_limited_at(&self, now: Millis) -> Option<Millis> {
        (self.class() == ErrorClass::RateLimited).then_some(now)
    }
}

/// The retry policy. Stored in `settings`, overridable by CLI flags for one process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Policy {
    #[serde(with = "millis")]
    pub base_delay: Duration,
    #[serde(with = "millis")]
    pub max_delay: Duration,
    /// ± fraction of the delay, 0.0..=1.0.
    pub jitter: f64,
    /// Retries after the first attempt for transient failures (so attempts = 1 + max_retries).
    pub max_retries: u32,
    /// Optional tighter caps per budget; `None` means `max_retries`.
    pub network_retries: Option<u32>,
    pub server_retries: Option<u32>,
    /// Retries of a page that came back as a block page (CAPTCHA, challenge).
    pub blocked_retries: u32,
    /// Rate-limit waits do not spend retries; they end when the job is this old.
    #[serde(with = "millis")]
    pub max_job_age: Duration,
    pub concurrency: u32,
    pub per_host: u32,
    /// Total time for one request, connect to last byte.
    #[serde(with = "millis")]
    pub timeout: Duration,
    pub max_body: u64,
    pub max_redirects: u32,
    /// Also save the fetched bytes of HTML, PDF and text documents beside their Markdown.
    pub keep_raw: bool,
    /// Keep content that is not text (images, archives, video) raw beside a note; when false it
    /// is refused as a fatal failure that names the setting.
    pub keep_binary: bool,
    /// Where DOIs, arXiv and PubMed ids are resolved.
    pub services: Services,
    /// A link that is gone (404, 410, no such host) asks the Wayback Machine for an archived
    /// copy before it dies. Opt-in: it sends the link to a third party.
    pub wayback_fallback: bool,
    /// The least time between two requests to a host, across every process.
    #[serde(with = "intervals")]
    pub host_intervals: HostIntervals,
}

/// The scholarly services Gleaner asks, as base URLs. Settings and flags, so that tests point
/// them at loopback.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Services {
    pub doi_resolver: String,
    pub arxiv: String,
    pub pubmed: String,
    /// PubMed Central, where a PMC id's article page is.
    pub pmc: String,
    pub wayback: String,
}

impl Default for Services {
    fn default() -> Self {
        Self {
            doi_resolver: "https://doi.org".into(),
            arxiv: "https://arxiv.org".into(),
            pubmed: "https://pubmed.ncbi.nlm.nih.gov".into(),
            pmc: "https://pmc.ncbi.nlm.nih.gov".into(),
            wayback: "https://archive.org/wayback/available".into(),
        }
    }
}

impl Services {
    /// Each service with what it is called in messages and flags.
    pub fn named(&self) -> [(&'static str, &str); 5] {
        [
            ("--doi-resolver", &self.doi_resolver),
            ("--arxiv", &self.arxiv),
            ("--pubmed", &self.pubmed),
            ("--pmc", &self.pmc),
            ("--wayback", &self.wayback),
        ]
    }
}

impl Default for Policy {
    fn default() -> Self {
        Self {
            base_delay: Duration::from_secs(30),
            max_delay: Duration::from_secs(300),
            jitter: 0.2,
            max_retries: 5,
            network_retries: None,
            server_retries: None,
            blocked_retries: 2,
            max_job_age: Duration::from_secs(24 * 3600),
            concurrency: 4,
            per_host: 2,
            timeout: Duration::from_secs(30),
            max_body: 50 * 1024 * 1024,
            max_redirects: 10,
            keep_raw: false,
            keep_binary: true,
            services: Services::default(),
            wayback_fallback: false,
            host_intervals: default_intervals(),
        }
    }
}

/// Retry-After values are clamped to this, so a bad header or a clock jump cannot park a job.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(6 * 3600);

/// The values a duration or size setting may take, wherever it comes from (a flag, the
/// stored settings). The bounds keep every sum and conversion the engine does with them in
/// range: a `--timeout` of u64::MAX seconds panicked when added to an `Instant`, and a
/// `--max-job-age` of 300,000,000 years wrapped around as i64 milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Range<T> {
    pub min: T,
    pub max: T,
}

impl Range<Duration> {
    pub fn contains(&self, d: Duration) -> bool {
        (self.min..=self.max).contains(&d)
    }

    /// "from 1ms to 24h", in the forms the flags take.
    pub fn describe(&self) -> String {
        format!(
            "from {} to {}",
            humantime::format_duration(self.min),
            humantime::format_duration(self.max)
        )
    }
}

impl Range<u64> {
    pub fn contains(&self, n: u64) -> bool {
        (self.min..=self.max).contains(&n)
    }

    /// "from 1B to 4GB".
    pub fn describe(&self) -> String {
        fn size(n: u64) -> String {
            const UNITS: [(u64, &str); 3] = [(1 << 30, "GB"), (1 << 20, "MB"), (1 << 10, "KB")];
            match UNITS.iter().find(|(u, _)| n >= *u && n.is_multiple_of(*u)) {
                Some((u, name)) => format!("{}{name}", n / u),
                None => format!("{n}B"),
            }
        }
        format!("from {} to {}", size(self.min), size(self.max))
    }
}

const fn span(min: Duration, max: Duration) -> Range<Duration> {
    Range { min, max }
}

/// `--base-delay`.
pub const BASE_DELAY_RANGE: Range<Duration> =
    span(Duration::from_millis(1), Duration::from_secs(24 * 3600));
/// `--max-delay`.
pub const MAX_DELAY_RANGE: Range<Duration> =
    span(Duration::from_millis(1), Duration::from_secs(7 * 24 * 3600));
/// `--max-job-age`: up to a (Julian) year, which humantime spells "1year".
pub const MAX_JOB_AGE_RANGE: Range<Duration> =
    span(Duration::from_secs(1), Duration::from_secs(31_557_600));
/// `--timeout`: a request's whole time; the lease is twice this.
/// `--host-interval`: 0 (none) up to an hour between two requests to one host.
pub const HOST_INTERVAL_RANGE: Range<Duration> = span(Duration::ZERO, Duration::from_secs(3600));
pub const TIMEOUT_RANGE: Range<Duration> =
    span(Duration::from_millis(1), Duration::from_secs(3600));
/// `--max-body`: the body is held in memory while it is extracted.
pub const MAX_BODY_RANGE: Range<u64> = Range {
    min: 1,
    max: 4 << 30,
};

/// A policy that cannot work as meant.
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum PolicyError {
    #[error("{flag} must be an http:// or https:// address with a host, not {value:?}")]
    BadService { flag: &'static str, value: String },
    #[error("the {what} must be {range}")]
    OutOfRange { what: &'static str, range: String },
    #[error("the base delay must be more than 0 s: a retry would come at once, again and again")]
    NoBaseDelay,
    #[error(
        "the delay cap ({cap:?}) is below the base delay ({base:?}); every retry would wait the \
         cap, so give a cap of at least the base delay"
    )]
    CapBelowBase { base: Duration, cap: Duration },
    #[error("the timeout must be more than 0 s: every request would time out")]
    NoTimeout,
    #[error("the largest body must be more than 0 bytes: every page would be too large")]
    NoBody,
    #[error(
        "{which} retries ({n}) cannot be more than the retries of the whole budget ({max}); \
         raise --max-retries too"
    )]
    BudgetAboveMax {
        which: &'static str,
        n: u32,
        max: u32,
    },
}

/// Whether `value` is an http(s) address with a host, as a service's base must be.
pub fn is_web_address(value: &str) -> bool {
    url::Url::parse(value).is_ok_and(|u| {
        matches!(u.scheme(), "http" | "https") && u.host_str().is_some_and(|h| !h.is_empty())
    })
}

impl Policy {
    /// Whether this policy can work as meant: the window's settings are checked against
    /// narrower ranges of their own, and command-line flags only against this.
    pub fn check(&self) -> Result<(), PolicyError> {
        for (flag, value) in self.services.named() {
            if !is_web_address(value) {
                return Err(PolicyError::BadService {
                    flag,
                    value: value.to_string(),
                });
            }
        }
        if self.base_delay.is_zero() {
            return Err(PolicyError::NoBaseDelay);
        }
        if self.max_delay < self.base_delay {
            return Err(PolicyError::CapBelowBase {
                base: self.base_delay,
                cap: self.max_delay,
            });
        }
        if self.timeout.is_zero() {
            return Err(PolicyError::NoTimeout);
        }
        if self.max_body == 0 {
            return Err(PolicyError::NoBody);
        }
        for (what, d, range) in [
            ("base delay", self.base_delay, BASE_DELAY_RANGE),
            ("delay cap", self.max_delay, MAX_DELAY_RANGE),
            ("maximum job age", self.max_job_age, MAX_JOB_AGE_RANGE),
            ("timeout", self.timeout, TIMEOUT_RANGE),
        ] {
            if !range.contains(d) {
                return Err(PolicyError::OutOfRange {
                    what,
                    range: range.describe(),
                });
            }
        }
        if self
            .host_intervals
            .values()
            .any(|d| !HOST_INTERVAL_RANGE.contains(*d))
        {
            return Err(PolicyError::OutOfRange {
                what: "host interval",
                range: HOST_INTERVAL_RANGE.describe(),
            });
        }
        if !MAX_BODY_RANGE.contains(self.max_body) {
            return Err(PolicyError::OutOfRange {
                what: "largest body",
                range: MAX_BODY_RANGE.describe(),
            });
        }
        for (which, n) in [
            ("network", self.network_retries),
            ("server", self.server_retries),
        ] {
            if let Some(n) = n.filter(|&n| n > self.max_retries) {
                return Err(PolicyError::BudgetAboveMax {
                    which,
                    n,
                    max: self.max_retries,
                });
            }
        }
        Ok(())
    }

    /// `min(base · 2^(n−1), cap)` for retry number `n` (1-based), before jitter.
    pub fn raw_delay(&self, n: u32) -> Duration {
        let n = n.max(1);
        let factor = 2u128.saturating_pow(n - 1);
        let ms = self.base_delay.as_millis().saturating_mul(factor);
        Duration::from_millis(ms.min(self.max_delay.as_millis()) as u64)
    }

    /// The delay with jitter. `unit` is a uniform sample from [-1, 1]; the result is within
    /// `raw · (1 ± jitter)`.
    pub fn delay(&self, n: u32, unit: f64) -> Duration {
        let raw = self.raw_delay(n).as_secs_f64();
        let j = self.jitter.clamp(0.0, 1.0) * unit.clamp(-1.0, 1.0);
        Duration::from_secs_f64((raw * (1.0 + j)).max(0.0))
    }

    pub fn budget_for(&self, budget: Budget, max_retries: u32) -> u32 {
        match budget {
            Budget::Network => self.network_retries.unwrap_or(max_retries).min(max_retries),
            Budget::Server => self.server_retries.unwrap_or(max_retries).min(max_retries),
            Budget::RateLimit => u32::MAX,
            Budget::Blocked => self.blocked_retries,
        }
    }
}

/// The counters of a job that a decision needs, as read inside the failing transaction.
#[derive(Debug, Clone, Copy)]
pub struct Counters {
    /// Attempts made so far, including the one that just failed.
    pub attempts: u32,
    pub max_retries: u32,
    pub net_failures: u32,
    pub server_failures: u32,
    pub rate_limits: u32,
    pub blocked_failures: u32,
    /// When the current budget started: creation, or the last manual retry.
    pub budget_started_at: Millis,
    /// When the job's current run of rate limits began: its first rate limit since the budget
    /// started or it went on to its next stage. The maximum job age counts from here.
    pub rate_limited_since: Option<Millis>,
}

/// What happens to a job after a failed attempt.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    Retry {
        delay: Duration,
        /// For budgeted retries: which retry this is, and of how many. None for rate-limit waits.
        retry: Option<(u32, u32)>,
        /// Pause the whole host until now + this.
        pause_host: Option<Duration>,
    },
    Dead {
        reason: String,
    },
}

/// Decide a failed attempt's fate. `unit` is the jitter sample in [-1, 1].
pub fn decide(
    policy: &Policy,
    c: &Counters,
    failure: &Failure,
    now: Millis,
    unit: f64,
) -> Decision {
    match failure.class() {
        ErrorClass::Fatal => Decision::Dead {
            reason: format!("{} (fatal)", failure.message),
        },
        ErrorClass::Blocked => {
            let n = c.blocked_failures + 1;
            if n > policy.blocked_retries {
                return Decision::Dead {
                    reason: format!(
                        "{} (blocked); still blocked after {} tries",
                        failure.message,
                        c.blocked_failures + 1
                    ),
                };
            }
            Decision::Retry {
                delay: policy.delay(n, unit),
                retry: Some((n, policy.blocked_retries)),
                pause_host: None,
            }
        }
        ErrorClass::Transient => {
            let spent = c.net_failures + c.server_failures;
            let n = spent + 1;
            let class_spent = match failure.kind.budget() {
                Budget::Server => c.server_failures,
                _ => c.net_failures,
            } + 1;
            let class_budget = policy.budget_for(failure.kind.budget(), c.max_retries);
            if n > c.max_retries || class_spent > class_budget {
                return Decision::Dead {
                    reason: format!(
                        "{} (transient); retry budget of {} spent",
                        failure.message,
                        class_budget.min(c.max_retries)
                    ),
                };
            }
            let delay = if failure.kind == FailureKind::Interrupted {
                // A crash is not the site's fault: run it again straight away.
                Duration::ZERO
            } else {
                policy.delay(n, unit)
            };
            // A 503 without Retry-After still tells us the host is struggling.
            let pause_host = (failure.http_status == Some(503)).then_some(delay);
            Decision::Retry {
                delay,
                retry: Some((n, c.max_retries)),
                pause_host,
            }
        }
        ErrorClass::RateLimited => {
            let backoff = policy.delay(c.rate_limits + 1, unit);
            let delay = failure
                .retry_after
                .map_or(backoff, |ra| ra.max(backoff))
                .min(MAX_RETRY_AFTER);
            // From the first rate limit, not from the job's queueing: a job queued days ago
            // (a queue paused over a weekend) gets its whole day of waiting too.
            let since = c.rate_limited_since.unwrap_or(now);
            let deadline = since + policy.max_job_age.as_millis() as Millis;
            if now + delay.as_millis() as Millis > deadline {
                return Decision::Dead {
                    reason: format!(
                        "{} (rate_limited); still rate-limited after {}",
                        failure.message,
                        human_duration(policy.max_job_age)
                    ),
                };
            }
            Decision::Retry {
                delay,
                retry: None,
                pause_host: Some(delay),
            }
        }
    }
}

/// Parse a Retry-After value: delta-seconds or an HTTP-date. A date is measured against the
/// response's own `Date` (so a skewed local clock does not matter), else against `now`.
/// The result is clamped to [0, 6 h]; unparsable values give `None`.
pub fn parse_retry_after(
    value: &str,
    response_date: Option<SystemTime>,
    now: SystemTime,
) -> Option<Duration> {
    let value = value.trim();
    if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        let secs = value.parse::<u64>().unwrap_or(u64::MAX);
        return Some(Duration::from_secs(secs).min(MAX_RETRY_AFTER));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    let reference = response_date.unwrap_or(now);
    let wait = at.duration_since(reference).unwrap_or(Duration::ZERO);
    Some(wait.min(MAX_RETRY_AFTER))
}

/// Map a non-2xx status (with its headers) to a failure kind. `retry_after_present` means a
/// Retry-After that could be read.
pub fn kind_of_status(
    status: u16,
    retry_after_present: bool,
    rate_limit_exhausted: bool,
) -> FailureKind {
    match status {
        429 => FailureKind::RateLimited,
        503 if retry_after_present => FailureKind::RateLimited,
        // GitHub's secondary rate limit is a 403 with Retry-After.
        403 if rate_limit_exhausted || retry_after_present => FailureKind::RateLimited,
        // RFC 9110/8470 say these may be retried: the server gave up waiting for the request
        // (408), the connection was for another host (421), or it would not take early data
        // (425). Retried like a 5xx, on the server budget; only a 503 pauses the host.
        408 | 421 | 425 => FailureKind::ServerError,
        500..=599 => FailureKind::ServerError,
        300..=399 => FailureKind::BadRedirect,
        _ => FailureKind::ClientError,
    }
}

/// Errors our redirect policy raises, found again in reqwest's error chain.
#[derive(Debug, thiserror::Error)]
pub enum RedirectError {
    #[error("redirect loop at {0}")]
    Loop(String),
    #[error("too many redirects (more than {0})")]
    TooMany(u32),
    #[error("redirected to a non-http(s) address: {0}")]
    Scheme(String),
    #[error("redirected from the web to this computer or its local network: {0}")]
    Local(String),
}

/// Whether a redirect from `from` to `to` leads from the web into this computer or its local
/// network: `to` names a loopback, private, link-local or unspecified address (or
/// `localhost`) and `from` does not. A page on the web must not have Gleaner read a router's
/// pages or a cloud machine's metadata service into the library, and on a lab's shared queue
/// another member's. A name that only resolves to such an address is not seen here.
pub fn crosses_into_local(from: &url::Url, to: &url::Url) -> bool {
    is_local(to) && !is_local(from)
}

fn is_local(url: &url::Url) -> bool {
    use std::net::IpAddr;
    let ip = match url.host() {
        Some(url::Host::Ipv4(v4)) => IpAddr::V4(v4),
        Some(url::Host::Ipv6(v6)) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(v6),
        },
        Some(url::Host::Domain(name)) => {
            let name = name.trim_end_matches('.').to_ascii_lowercase();
            return name == "localhost" || name.ends_with(".localhost");
        }
        None => return false,
    };
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                // Carrier-grade NAT (100.64.0.0/10): a provider's or a VPN's own network.
                || (a == 100 && (64..128).contains(&b))
        }
        IpAddr::V6(v6) => {
            let first = v6.segments()[0];
            v6.is_loopback()
                || v6.is_unspecified()
                || (first & 0xfe00) == 0xfc00 // unique local
                || (first & 0xffc0) == 0xfe80 // link-local
        }
    }
}

/// Classify a reqwest error by walking its whole `source()` chain.
///
/// reqwest reports a connection dropped mid-body as a *decode* or *body* error wrapping hyper's
/// IncompleteMessage or an io `UnexpectedEof`: that is transient, not "content cannot be parsed".
pub fn kind_of_reqwest_error(err: &reqwest::Error) -> FailureKind {
    let mut saw_dns = false;
    let mut source: Option<&(dyn StdError + 'static)> = Some(err);
    while let Some(e) = source {
        if let Some(r) = e.downcast_ref::<RedirectError>() {
            return match r {
                RedirectError::Scheme(_) => FailureKind::RedirectScheme,
                RedirectError::Local(_) => FailureKind::RedirectLocal,
                RedirectError::Loop(_) | RedirectError::TooMany(_) => FailureKind::RedirectLoop,
            };
        }
        if let Some(h) = e.downcast_ref::<hyper::Error>() {
            if h.is_incomplete_message() {
                return if err.is_body() || err.is_decode() {
                    FailureKind::DroppedMidBody
                } else {
                    FailureKind::ClosedBeforeResponse
                };
            }
            if h.is_parse() || h.is_parse_status() {
                return FailureKind::Protocol;
            }
            if h.is_timeout() {
                return FailureKind::Timeout;
            }
        }
        // Every TLS failure of the connection's setup is fatal: a site whose TLS cannot talk
        // with ours (an alert, no common version) or that is not TLS at all (plain HTTP on an
        // https address) will not change on a retry, and says nothing of this machine's
        // network. A TLS error inside a body is the connection's.
        if rustls_error(e).is_some() && !(err.is_body() || err.is_decode()) {
            return FailureKind::Tls;
        }
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            use std::io::ErrorKind as K;
            match io.kind() {
                K::ConnectionRefused => return FailureKind::ConnectRefused,
                K::NetworkUnreachable => return FailureKind::NetworkDown,
                K::TimedOut => return FailureKind::Timeout,
                K::UnexpectedEof if err.is_body() || err.is_decode() => {
                    return FailureKind::DroppedMidBody;
                }
                // A body the decompressor cannot read ("gzip" over plain HTML, a corrupt
                // stream) is the same bytes on every try; one cut short is UnexpectedEof.
                _ if err.is_decode() && corrupt_compression(io) => {
                    return FailureKind::Unparsable;
                }
                K::UnexpectedEof | K::ConnectionReset | K::ConnectionAborted | K::BrokenPipe => {
                    return if err.is_body() || err.is_decode() {
                        FailureKind::DroppedMidBody
                    } else {
                        FailureKind::ClosedBeforeResponse
                    };
                }
                _ => {}
            }
        }
        // reqwest's own message ends with the request's URL: a page named
        // `/birth-certificate` must not make a refused connection a TLS failure. What it
        // wraps is read further down the chain.
        let text = if e.is::<reqwest::Error>() {
            String::new()
        } else {
            e.to_string()
        };
        if text.contains("dns error") || text.contains("failed to lookup address") {
            saw_dns = true;
        }
        if saw_dns && let Some(kind) = kind_of_lookup_error(&text) {
            return kind;
        }
        if text.contains("certificate") || text.contains("InvalidCertificate") {
            return FailureKind::Tls;
        }
        source = e.source();
    }
    if err.is_timeout() {
        FailureKind::Timeout
    } else if saw_dns {
        FailureKind::DnsTemporary
    } else if err.is_connect() {
        FailureKind::ConnectFailed
    } else if err.is_redirect() {
        FailureKind::RedirectLoop
    } else if err.is_body() || err.is_decode() {
        FailureKind::DroppedMidBody
    } else {
        FailureKind::Unknown
    }
}

/// The rustls error `e` is or wraps: tokio-rustls hands it up inside an io::Error, which
/// reqwest's connector wraps in another, and an io::Error's `source()` skips what it wraps.
fn rustls_error<'a>(mut e: &'a (dyn StdError + 'static)) -> Option<&'a rustls::Error> {
    loop {
        if let Some(tls) = e.downcast_ref::<rustls::Error>() {
            return Some(tls);
        }
        e = e.downcast_ref::<std::io::Error>()?.get_ref()?;
    }
}

/// Whether a decoding error is the decompressor refusing its input: a gzip header that is not
/// one (InvalidData), deflate data that is not (flate2's error, for gzip and deflate), or a
/// brotli stream that is not ("brotli error", all the brotli decoder says). Not a TLS error
/// (rustls's are InvalidData too) nor a connection's.
fn corrupt_compression(io: &std::io::Error) -> bool {
    let inner = io.get_ref();
    match io.kind() {
        std::io::ErrorKind::InvalidData => {
            inner.is_none_or(|e| !e.is::<std::io::Error>()) && rustls_error(io).is_none()
        }
        std::io::ErrorKind::Other => inner
            .is_some_and(|e| e.is::<flate2::DecompressError>() || e.to_string() == "brotli error"),
        _ => false,
    }
}

/// A TLS failure in plain words, if `err` is one.
pub fn tls_message(err: &reqwest::Error) -> Option<String> {
    use rustls::Error as E;
    let mut source: Option<&(dyn StdError + 'static)> = Some(err);
    let tls = loop {
        let e = source?;
        if let Some(tls) = rustls_error(e) {
            break tls;
        }
        source = e.source();
    };
    Some(match tls {
        E::InvalidCertificate(_) | E::NoCertificatesPresented => {
            format!("invalid TLS certificate ({tls})")
        }
        E::AlertReceived(alert) => format!(
            "the site refused a secure connection (TLS alert {alert:?}): its TLS and Gleaner's have nothing in common"
        ),
        E::PeerIncompatible(why) => {
            format!("the site's TLS cannot work with Gleaner's ({why:?})")
        }
        E::InvalidMessage(rustls::InvalidMessage::InvalidContentType) => {
            "the site did not answer in TLS: an https address served without it (plain HTTP?)"
                .to_string()
        }
        _ => format!("the secure connection could not be set up ({tls})"),
    })
}

/// A failed name lookup's message, as the system's resolver words it: EAI_AGAIN is temporary
/// (offline, or a name server failing for now), EAI_NONAME final. glibc says "Name or service
/// not known", macOS "nodename nor servname provided, or not known", musl "Name does not
/// resolve", Windows "No such host is known."
fn kind_of_lookup_error(text: &str) -> Option<FailureKind> {
    if text.contains("Temporary failure") || text.contains("temporary failure") {
        return Some(FailureKind::DnsTemporary);
    }
    let final_words = [
        "not known",
        "No such host is known",
        "does not resolve",
        "No address associated",
        "no record found",
        "NXDOMAIN",
    ];
    final_words
        .iter()
        .any(|w| text.contains(w))
        .then_some(FailureKind::NoSuchHost)
}

/// The chain of an error as one line, for logs and the attempt history.
pub fn error_chain(err: &dyn StdError) -> String {
    let mut out = err.to_string();
    let mut source = err.source();
    while let Some(e) = source {
        let s = e.to_string();
        if !out.contains(&s) {
            out.push_str(": ");
            out.push_str(&s);
        }
        source = e.source();
    }
    out
}

/// "60 s", "5 min", "2 h 30 min": short and exact enough for log lines and the UI.
pub fn human_duration(d: Duration) -> String {
    let secs = d.as_secs_f64().round() as u64;
    if d < Duration::from_secs(1) && !d.is_zero() {
        return format!("{} ms", d.as_millis());
    }
    if secs < 120 {
        return format!("{secs} s");
    }
    if secs < 3600 {
        let (m, s) = (secs / 60, secs % 60);
        return if s == 0 {
            format!("{m} min")
        } else {
            format!("{m} min {s} s")
        };
    }
    let (h, m) = (secs / 3600, (secs % 3600) / 60);
    if m == 0 {
        format!("{h} h")
    } else {
        format!("{h} h {m} min")
    }
}

mod millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(d.as_millis() as u64)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        Ok(Duration::from_millis(u64::deserialize(d)?))
    }
}

#[cfg(test)]
mod tests;
