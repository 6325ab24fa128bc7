//! Fakes of the scholarly services a reference is resolved at, on real loopback sockets: the
//! DOI resolver (doi.org, with CSL-JSON content negotiation), a publisher (landing pages with
//! `citation_*` meta, PDFs, paywalls), arXiv, PubMed and the Wayback Machine (the availability
//! API and its snapshots). Each is its own server, so its own address.
//!
//! Every instance keeps each request it was sent (method, request-target, headers), so a test
//! can say which requests a job made, in which order, and with which `Accept` header. Replies
//! use the real services' wire formats:
//!
//! | service | request | reply |
//! | --- | --- | --- |
//! | [`DoiResolver`] | `GET /{doi}` with `Accept: application/vnd.citationstyles.csl+json` | 200, the CSL-JSON item (see [`Csl`] for resolvers that do not negotiate) |
//! | | `GET /{doi}` otherwise | 302 to the landing page |
//! | its agency (127.0.0.3) | `GET /v1/works/{doi}/transform` | the CSL-JSON item if asked for it, else 406 |
//! | | an unknown DOI | 404, with or without the header |
//! | [`Publisher`] | a landing path | HTML with `citation_*` meta and a visible abstract |
//! | | a PDF path | the PDF, a 403, a login page served with 200, ... ([`PdfAnswer`]) |
//! | [`Arxiv`] | `GET /abs/{id}`, `GET /pdf/{id}` | the abs page (its `citation_pdf_url` is `/pdf/{id}` here), the PDF |
//! | [`PubMed`] | `GET /{pmid}/` (`/{pmid}` redirects there) | the PubMed page: meta and abstract, no PDF |
//! | [`Wayback`] | `GET /wayback/available?url=…` | the availability API's JSON |
//! | | `GET /web/{timestamp}id_/{original}` | the archived page, as it was |
//! | | `GET /web/{timestamp}/{original}` | the same page with the Wayback toolbar injected |
//!
//! Any path can also be given a script of replies ([`Http::script`]), taken in order before the
//! path's own behaviour applies again: "503, then the PDF", "429 with Retry-After: 2".
//!
//! Each server runs on its own thread with its own tokio runtime, as [`crate::server`] does.
//! HTTP/1.1 is spoken by hand over TCP (keep-alive, `Content-Length` bodies); that is all a
//! real client needs of these fakes.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::ops::Deref;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

/// The media type of CSL-JSON, as doi.org's content negotiation takes and Crossref answers it.
pub const CSL_JSON: &str = "application/vnd.citationstyles.csl+json";

/// A real, small PDF (`src-tauri/tests-fixtures/extract/article.pdf`), served wherever a fake
/// serves "the PDF".
pub const PDF_BYTES: &[u8] = include_bytes!("../../src-tauri/tests-fixtures/extract/article.pdf");
/// The PDF's first line (its title in the text layer).
pub const PDF_TITLE: &str = "Field Notes on Moss";
/// Sentences of the PDF's text layer: a document that has them was made from the PDF.
pub const PDF_SENTENCE: &str = "Moss grows slowly on the north side of old stone walls.";
pub const PDF_SENTENCE_2: &str = "This sentence proves the PDF text layer was extracted.";

/// What the publisher's login page (served with 200 where a PDF was asked for) says.
pub const LOGIN_SENTENCE: &str =
    "Sign in through your institution or purchase this article to download the PDF.";
/// What the injected Wayback toolbar says.
pub const WAYBACK_TOOLBAR: &str = "WAYBACK TOOLBAR";
/// Where the fake Wayback Machine answers its availability API.
pub const WAYBACK_API_PATH: &str = "/wayback/available";

const MAX_HEAD: usize = 64 * 1024;

// ---------------------------------------------------------------------------
// Requests and replies
// ---------------------------------------------------------------------------

/// One request as it arrived.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    /// Path and query, exactly as sent.
    pub target: String,
    /// Header names lower-cased, values as sent, in order.
    pub headers: Vec<(String, String)>,
    /// When its head was read.
    pub at: SystemTime,
}

impl Request {
    /// The first value of header `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The `Accept` header, or "" when there was none.
    pub fn accept(&self) -> &str {
        self.header("accept").unwrap_or("")
    }

    /// Whether the request asked for CSL-JSON.
    pub fn wants_csl(&self) -> bool {
        self.accept().to_ascii_lowercase().contains(CSL_JSON)
    }

    /// The target without its query.
    pub fn path(&self) -> &str {
        self.target.split_once('?').map_or(&self.target, |(p, _)| p)
    }

    pub fn query(&self) -> &str {
        self.target.split_once('?').map_or("", |(_, q)| q)
    }

    /// A query parameter, decoded as a form value (`%XX`, and `+` for a space).
    pub fn query_param(&self, name: &str) -> Option<String> {
        self.query().split('&').find_map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            (form_decode(key) == name).then(|| form_decode(value))
        })
    }
}

/// What a fake sends back. `Date` and `Content-Length` are added.
#[derive(Clone, PartialEq, Eq)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// How long the server waits before it answers (a slow service).
    pub delay: Duration,
}

impl fmt::Debug for Reply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reply")
            .field("status", &self.status)
            .field("headers", &self.headers)
            .field("body_len", &self.body.len())
            .field("delay", &self.delay)
            .finish()
    }
}

impl Reply {
    /// `code` with a short `text/plain` body naming it.
    pub fn status(code: u16) -> Reply {
        Reply {
            status: code,
            headers: vec![header("Content-Type", "text/plain; charset=utf-8")],
            body: format!("{code} {}\n", reason(code)).into_bytes(),
            delay: Duration::ZERO,
        }
    }

    pub fn html(status: u16, body: impl Into<String>) -> Reply {
        Reply {
            status,
            headers: vec![header("Content-Type", "text/html; charset=utf-8")],
            body: body.into().into_bytes(),
            delay: Duration::ZERO,
        }
    }

    /// 200 with [`PDF_BYTES`] as `application/pdf`.
    pub fn pdf() -> Reply {
        Reply {
            status: 200,
            headers: vec![header("Content-Type", "application/pdf")],
            body: PDF_BYTES.to_vec(),
            delay: Duration::ZERO,
        }
    }

    pub fn json(status: u16, content_type: &str, value: &serde_json::Value) -> Reply {
        Reply {
            status,
            headers: vec![header("Content-Type", content_type)],
            body: serde_json::to_vec_pretty(value).expect("JSON serializes"),
            delay: Duration::ZERO,
        }
    }

    /// A 302 to `location` with the small HTML body servers send along.
    pub fn redirect(location: &str) -> Reply {
        Reply::redirect_with(302, location)
    }

    pub fn redirect_with(status: u16, location: &str) -> Reply {
        let escaped = escape(location);
        Reply::html(
            status,
            format!(
                "<html><head><title>Handle Redirect</title></head>\
                 <body><a href=\"{escaped}\">{escaped}</a></body></html>"
            ),
        )
        .with_header("Location", location)
    }

    /// 429 with `Retry-After: secs`.
    pub fn too_many_requests(secs: u64) -> Reply {
        Reply::status(429).with_header("Retry-After", secs.to_string())
    }

    /// The same reply, sent `delay` after the request arrived.
    pub fn after(mut self, delay: Duration) -> Reply {
        self.delay = delay;
        self
    }

    pub fn with_header(mut self, name: &str, value: impl Into<String>) -> Reply {
        self.headers.push(header(name, value));
        self
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

fn header(name: &str, value: impl Into<String>) -> (String, String) {
    (name.to_string(), value.into())
}

// ---------------------------------------------------------------------------
// The server every fake runs on
// ---------------------------------------------------------------------------

type Handler = dyn Fn(&Request, &str) -> Reply + Send + Sync;

struct Shared {
    log: Mutex<Vec<Request>>,
    scripts: Mutex<HashMap<String, VecDeque<Reply>>>,
    handler: Box<Handler>,
    base: String,
}

/// One running fake: an address, the requests it was sent, and scripts. Every fake derefs to
/// its `Http`. Dropping it closes the port and every connection.
pub struct Http {
    addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl fmt::Debug for Http {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Http")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl Drop for Http {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Http {
    /// Serve on `ip` and an ephemeral port; `handler` gets each request (not scripted) and the
    /// server's own base address (`http://IP:PORT`).
    pub fn start(
        ip: &str,
        handler: impl Fn(&Request, &str) -> Reply + Send + Sync + 'static,
    ) -> Http {
        let ip: IpAddr = ip.parse().expect("an IP address literal such as 127.0.0.2");
        let listener = std::net::TcpListener::bind(SocketAddr::new(ip, 0))
            .expect("the fake cannot bind its listening socket");
        listener
            .set_nonblocking(true)
            .expect("tokio needs a non-blocking listener");
        let addr = listener
            .local_addr()
            .expect("a bound socket has an address");
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("scholarly-fake")
            .enable_all()
            .build()
            .expect("the fake cannot build its runtime");
        let listener = {
            let _entered = runtime.enter();
            TcpListener::from_std(listener).expect("tokio adopts the listener")
        };
        let shared = Arc::new(Shared {
            log: Mutex::default(),
            scripts: Mutex::default(),
            handler: Box::new(handler),
            base: format!("http://{addr}"),
        });
        let (shutdown_tx, shutdown_rx) = oneshot::channel();
        let thread_shared = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name(format!("scholarly-fake-{addr}"))
            .spawn(move || {
                runtime.block_on(async move {
                    tokio::select! {
                        _ = shutdown_rx => {}
                        () = accept_loop(listener, thread_shared) => {}
                    }
                });
                runtime.shutdown_timeout(Duration::from_secs(2));
            })
            .expect("the fake cannot spawn its thread");
        Http {
            addr,
            shared,
            shutdown: Some(shutdown_tx),
            thread: Some(thread),
        }
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://IP:PORT`, no trailing slash: what a `--doi-resolver`-style flag takes.
    pub fn base(&self) -> String {
        self.shared.base.clone()
    }

    /// `http://IP:PORT` followed by `path`, which should start with `/`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.shared.base)
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<Request> {
        lock(&self.shared.log).clone()
    }

    /// The requests whose target (path and query, as sent) is exactly `target`.
    pub fn requests_to(&self, target: &str) -> Vec<Request> {
        lock(&self.shared.log)
            .iter()
            .filter(|r| r.target == target)
            .cloned()
            .collect()
    }

    /// The request-targets so far, in arrival order.
    pub fn targets(&self) -> Vec<String> {
        lock(&self.shared.log)
            .iter()
            .map(|r| r.target.clone())
            .collect()
    }

    pub fn hits(&self, target: &str) -> usize {
        lock(&self.shared.log)
            .iter()
            .filter(|r| r.target == target)
            .count()
    }

    pub fn hits_prefix(&self, prefix: &str) -> usize {
        lock(&self.shared.log)
            .iter()
            .filter(|r| r.target.starts_with(prefix))
            .count()
    }

    pub fn total_hits(&self) -> usize {
        lock(&self.shared.log).len()
    }

    /// The next requests to exactly `target` get `replies`, in order; then the path's own
    /// behaviour applies again. Replaces what was left of an earlier script.
    pub fn script(&self, target: &str, replies: Vec<Reply>) {
        lock(&self.shared.scripts).insert(target.to_string(), replies.into());
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                let _ = stream.set_nodelay(true);
                tokio::spawn(serve_connection(stream, Arc::clone(&shared)));
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
        }
    }
}

async fn serve_connection(mut stream: TcpStream, shared: Arc<Shared>) {
    let mut pending: Vec<u8> = Vec::new();
    let mut scratch = [0u8; 8192];
    loop {
        // The head.
        let head = loop {
            while pending.starts_with(b"\r\n") {
                pending.drain(..2);
            }
            if let Some(end) = find(&pending, b"\r\n\r\n") {
                break pending.drain(..end + 4).collect::<Vec<u8>>();
            }
            if pending.len() > MAX_HEAD {
                return;
            }
            match stream.read(&mut scratch).await {
                Ok(0) | Err(_) => return,
                Ok(n) => pending.extend_from_slice(&scratch[..n]),
            }
        };
        let Some((request, content_length, close)) = parse_head(&head) else {
            let _ = stream
                .write_all(&encode(&Reply::status(400), false, true))
                .await;
            return;
        };
        // The body, unused but consumed so the next request starts where it should.
        let mut left = content_length;
        let from_pending = left.min(pending.len());
        pending.drain(..from_pending);
        left -= from_pending;
        while left > 0 {
            match stream.read(&mut scratch[..left.min(8192)]).await {
                Ok(0) | Err(_) => return,
                Ok(n) => left -= n,
            }
        }
        lock(&shared.log).push(request.clone());
        let scripted = {
            let mut scripts = lock(&shared.scripts);
            let step = scripts
                .get_mut(&request.target)
                .and_then(VecDeque::pop_front);
            if scripts.get(&request.target).is_some_and(VecDeque::is_empty) {
                scripts.remove(&request.target);
            }
            step
        };
        let reply = scripted.unwrap_or_else(|| (shared.handler)(&request, &shared.base));
        let head_only = request.method == "HEAD";
        if !reply.delay.is_zero() {
            tokio::time::sleep(reply.delay).await;
        }
        if stream
            .write_all(&encode(&reply, head_only, close))
            .await
            .is_err()
            || close
        {
            let _ = stream.shutdown().await;
            return;
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn parse_head(head: &[u8]) -> Option<(Request, usize, bool)> {
    let text = String::from_utf8_lossy(head);
    let mut lines = text.split("\r\n");
    let mut parts = lines.next()?.split_whitespace();
    let (method, target, version) = (parts.next()?, parts.next()?, parts.next()?);
    if !version.starts_with("HTTP/1.") {
        return None;
    }
    let mut close = version == "HTTP/1.0";
    let mut content_length = 0;
    let mut headers = Vec::new();
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let (name, value) = (name.trim().to_ascii_lowercase(), value.trim().to_string());
        if name == "content-length" {
            content_length = value.parse().ok()?;
        } else if name == "connection" {
            close = value.to_ascii_lowercase().contains("close");
        }
        headers.push((name, value));
    }
    Some((
        Request {
            method: method.to_string(),
            target: target.to_string(),
            headers,
            at: SystemTime::now(),
        },
        content_length,
        close,
    ))
}

fn encode(reply: &Reply, head_only: bool, close: bool) -> Vec<u8> {
    let mut out = format!("HTTP/1.1 {} {}\r\n", reply.status, reason(reply.status));
    out.push_str(&format!(
        "Date: {}\r\n",
        httpdate::fmt_http_date(SystemTime::now())
    ));
    for (name, value) in &reply.headers {
        out.push_str(&format!("{name}: {value}\r\n"));
    }
    let bodyless = (100..200).contains(&reply.status) || reply.status == 204 || reply.status == 304;
    if !bodyless {
        out.push_str(&format!("Content-Length: {}\r\n", reply.body.len()));
    }
    if close {
        out.push_str("Connection: close\r\n");
    }
    out.push_str("\r\n");
    let mut bytes = out.into_bytes();
    if !head_only && !bodyless {
        bytes.extend_from_slice(&reply.body);
    }
    bytes
}

fn reason(code: u16) -> &'static str {
    match code {
        200 => "OK",
        204 => "No Content",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        304 => "Not Modified",
        307 => "Temporary Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        406 => "Not Acceptable",
        410 => "Gone",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Unknown",
    }
}

/// `%XX` and `+` for a space, as a form value is decoded. Bad escapes pass through.
pub fn form_decode(text: &str) -> String {
    percent_decode_bytes(text, true)
}

/// `%XX` only: a path segment.
pub fn path_decode(text: &str) -> String {
    percent_decode_bytes(text, false)
}

fn percent_decode_bytes(text: &str, plus_is_space: bool) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let hex = |b: u8| (b as char).to_digit(16).map(|d| d as u8);
                match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                    (Some(hi), Some(lo)) => {
                        out.push(hi << 4 | lo);
                        i += 3;
                        continue;
                    }
                    _ => out.push(b'%'),
                }
            }
            b'+' if plus_is_space => out.push(b' '),
            other => out.push(other),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// HTML text and attribute escaping.
pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn meta(name: &str, content: &str) -> String {
    format!(
        "<meta name=\"{}\" content=\"{}\">\n",
        escape(name),
        escape(content)
    )
}

// ---------------------------------------------------------------------------
// Papers: the metadata the fakes describe
// ---------------------------------------------------------------------------

/// A paper as a registration agency knows it: what its CSL-JSON item says.
#[derive(Debug, Clone)]
pub struct Paper {
    pub doi: String,
    pub title: String,
    /// (family, given)
    pub authors: Vec<(String, String)>,
    /// CSL `date-parts`: [year], [year, month] or [year, month, day].
    pub issued: Vec<u32>,
    pub container_title: String,
    /// The abstract as plain text; the CSL item carries it as JATS, as Crossref does.
    pub abstract_text: String,
    pub publisher: String,
    pub volume: String,
    pub issue: String,
    pub page: String,
}

/// The abstract of [`Paper::kucsko`]: a sentence no other fake page has.
pub const KUCSKO_ABSTRACT: &str = "Nitrogen-vacancy colour centres in nanodiamonds read out \
     temperature inside a single living cell to within a few millikelvin, at sub-micrometre \
     resolution.";

impl Paper {
    /// Kucsko et al., "Nanometre-scale thermometry in a living cell", Nature 500 (2013),
    /// doi:10.1038/nature12373, as Crossref describes it.
    pub fn kucsko() -> Paper {
        let authors = [
            ("Kucsko", "G."),
            ("Maurer", "P. C."),
            ("Yao", "N. Y."),
            ("Kubo", "M."),
            ("Noh", "H. J."),
            ("Lo", "P. K."),
            ("Park", "H."),
            ("Lukin", "M. D."),
        ];
        Paper {
            doi: "10.1038/nature12373".into(),
            title: "Nanometre-scale thermometry in a living cell".into(),
            authors: authors
                .iter()
                .map(|(f, g)| ((*f).to_string(), (*g).to_string()))
                .collect(),
            issued: vec![2013, 8, 1],
            container_title: "Nature".into(),
            abstract_text: KUCSKO_ABSTRACT.into(),
            publisher: "Springer Science and Business Media LLC".into(),
            volume: "500".into(),
            issue: "7460".into(),
            page: "54-58".into(),
        }
    }

    /// Another paper under another DOI, for tests that need two.
    pub fn okafor(doi: &str) -> Paper {
        Paper {
            doi: doi.into(),
            title: "Sediment Transport in Braided Rivers: A Field Study".into(),
            authors: vec![
                ("Okafor".into(), "Chidi".into()),
                ("Lindqvist".into(), "Astrid".into()),
            ],
            issued: vec![2023, 11, 2],
            container_title: "Journal of Fluvial Studies".into(),
            abstract_text: "Bedload transport rates varied by an order of magnitude between \
                            adjacent channels of one braided reach."
                .into(),
            publisher: "Example Press".into(),
            volume: "12".into(),
            issue: "4".into(),
            page: "101-119".into(),
        }
    }

    /// The authors as "Family, Given", the form a library keeps them in.
    pub fn author_names(&self) -> Vec<String> {
        self.authors
            .iter()
            .map(|(family, given)| format!("{family}, {given}"))
            .collect()
    }

    /// `issued` as `YYYY`, `YYYY-MM` or `YYYY-MM-DD`.
    pub fn issued_iso(&self) -> String {
        match self.issued.as_slice() {
            [y] => format!("{y:04}"),
            [y, m] => format!("{y:04}-{m:02}"),
            [y, m, d, ..] => format!("{y:04}-{m:02}-{d:02}"),
            [] => String::new(),
        }
    }

    /// The CSL-JSON item, shaped as Crossref's content negotiation answers it: one object, the
    /// abstract in JATS, `container-title` a string, `issued` as `date-parts`.
    pub fn csl(&self) -> serde_json::Value {
        let authors: Vec<serde_json::Value> = self
            .authors
            .iter()
            .enumerate()
            .map(|(i, (family, given))| {
                serde_json::json!({
                    "given": given,
                    "family": family,
                    "sequence": if i == 0 { "first" } else { "additional" },
                    "affiliation": [],
                })
            })
            .collect();
        let prefix = self.doi.split('/').next().unwrap_or("");
        serde_json::json!({
            "indexed": {"date-parts": [[2024, 3, 14]], "date-time": "2024-03-14T10:12:55Z", "timestamp": 1_710_411_175_000_u64},
            "reference-count": 30,
            "publisher": self.publisher,
            "issue": self.issue,
            "content-domain": {"domain": [], "crossmark-restriction": false},
            "abstract": format!("<jats:title>Abstract</jats:title><jats:p>{}</jats:p>", escape(&self.abstract_text)),
            "DOI": self.doi,
            "type": "article-journal",
            "page": self.page,
            "source": "Crossref",
            "is-referenced-by-count": 1432,
            "title": self.title,
            "prefix": prefix,
            "volume": self.volume,
            "author": authors,
            "container-title": self.container_title,
            "original-title": [],
            "language": "en",
            "deposited": {"date-parts": [[2023, 5, 18]], "date-time": "2023-05-18T16:02:11Z", "timestamp": 1_684_425_731_000_u64},
            "score": 1,
            "subtitle": [],
            "short-title": [],
            "issued": {"date-parts": [self.issued]},
            "references-count": 30,
            "URL": format!("https://doi.org/{}", self.doi),
            "subject": [],
        })
    }
}

// ---------------------------------------------------------------------------
// DOI resolver
// ---------------------------------------------------------------------------

/// How a resolver answers a request for CSL-JSON.
#[derive(Debug, Clone)]
pub enum Csl {
    /// 200, `Content-Type: application/vnd.citationstyles.csl+json`, this item.
    Item(serde_json::Value),
    /// As doi.org really does: a 302 to the registration agency's metadata service on another
    /// host (here `/v1/works/{doi}/transform` on the resolver's agency, a server of its own on
    /// 127.0.0.3, as api.crossref.org is to doi.org), which answers with this item when asked
    /// for CSL-JSON and 406 otherwise.
    ViaAgency(serde_json::Value),
    /// The resolver does not negotiate: 302 to the landing page, header or not.
    Ignored,
    /// 406 Not Acceptable.
    NotAcceptable,
}

#[derive(Debug, Clone)]
struct Registration {
    landing: String,
    csl: Csl,
}

/// The DOI resolver (doi.org). `GET /{doi}`: CSL-JSON when asked for it by `Accept`, else a 302
/// to the landing page; 404 for a DOI it does not know, with or without the header. Its
/// registration agency's metadata service ([`Csl::ViaAgency`]) is a second server, on another
/// address ([`DoiResolver::agency`]).
pub struct DoiResolver {
    http: Http,
    agency: Http,
    dois: Arc<Mutex<HashMap<String, Registration>>>,
}

impl Deref for DoiResolver {
    type Target = Http;
    fn deref(&self) -> &Http {
        &self.http
    }
}

impl Default for DoiResolver {
    fn default() -> Self {
        Self::start()
    }
}

impl DoiResolver {
    /// On 127.0.0.1.
    pub fn start() -> DoiResolver {
        Self::start_on("127.0.0.1")
    }

    /// On `ip`, with its agency on 127.0.0.3.
    pub fn start_on(ip: &str) -> DoiResolver {
        let dois: Arc<Mutex<HashMap<String, Registration>>> = Arc::default();
        let table = Arc::clone(&dois);
        let agency = Http::start("127.0.0.3", move |req, _base| {
            agency_reply(&lock(&table), req)
        });
        let table = Arc::clone(&dois);
        let agency_base = agency.base();
        let http = Http::start(ip, move |req, _base| {
            resolve(&lock(&table), req, &agency_base)
        });
        DoiResolver { http, agency, dois }
    }

    /// The registration agency's metadata service (api.crossref.org), where
    /// [`Csl::ViaAgency`] redirects a request for CSL-JSON.
    pub fn agency(&self) -> &Http {
        &self.agency
    }

    /// Register `doi` (matched without regard to case, as DOIs are) with its landing page and
    /// its answer to content negotiation.
    pub fn register(&self, doi: &str, landing: &str, csl: Csl) {
        lock(&self.dois).insert(
            doi.to_ascii_lowercase(),
            Registration {
                landing: landing.to_string(),
                csl,
            },
        );
    }

    /// The path the resolver is asked at for `doi`: `/10.1038/nature12373`.
    pub fn path_of(doi: &str) -> String {
        format!("/{doi}")
    }

    /// The path of the agency's metadata service for `doi` ([`Csl::ViaAgency`]), on
    /// [`DoiResolver::agency`].
    pub fn agency_path_of(doi: &str) -> String {
        format!("/v1/works/{doi}/transform")
    }
}

fn doi_not_found(doi: &str) -> Reply {
    Reply::html(
        404,
        format!(
            "<!DOCTYPE html><html><head><title>Error: DOI Not Found</title></head><body>\
             <h1>DOI Not Found</h1><p>{}</p><p>This DOI cannot be found in the DOI System.</p>\
             </body></html>",
            escape(doi)
        ),
    )
}

/// The agency's metadata service: the item for a request for CSL-JSON, 406 for any other.
fn agency_reply(dois: &HashMap<String, Registration>, req: &Request) -> Reply {
    let path = path_decode(req.path());
    let Some(doi) = path
        .strip_prefix("/v1/works/")
        .and_then(|p| p.strip_suffix("/transform"))
    else {
        return Reply::status(404);
    };
    match dois.get(&doi.to_ascii_lowercase()) {
        Some(Registration {
            csl: Csl::ViaAgency(item),
            ..
        }) if req.wants_csl() => Reply::json(200, CSL_JSON, item),
        Some(Registration {
            csl: Csl::ViaAgency(_),
            ..
        }) => Reply::status(406),
        _ => Reply::status(404),
    }
}

fn resolve(dois: &HashMap<String, Registration>, req: &Request, agency: &str) -> Reply {
    let path = path_decode(req.path());
    let doi = path.trim_start_matches('/');
    let Some(reg) = dois.get(&doi.to_ascii_lowercase()) else {
        return doi_not_found(doi);
    };
    if !req.wants_csl() {
        return Reply::redirect(&reg.landing);
    }
    match &reg.csl {
        Csl::Item(item) => Reply::json(200, CSL_JSON, item),
        Csl::ViaAgency(_) => Reply::redirect_with(
            302,
            &format!("{agency}{}", DoiResolver::agency_path_of(doi)),
        ),
        Csl::Ignored => Reply::redirect(&reg.landing),
        Csl::NotAcceptable => Reply::status(406),
    }
}

// ---------------------------------------------------------------------------
// Publisher
// ---------------------------------------------------------------------------

/// How a landing page names its PDF.
#[derive(Debug, Clone)]
pub enum PdfLink {
    None,
    /// `<meta name="citation_pdf_url" content=…>`, written as given (absolute or relative).
    Meta(String),
    /// Only `<link rel="alternate" type="application/pdf" href=…>`.
    Alternate(String),
}

/// A publisher's landing page for an article.
#[derive(Debug, Clone)]
pub struct Landing {
    /// `citation_title`.
    pub title: String,
    /// `<title>`: the article's title and the site's name, as publishers write it.
    pub html_title: String,
    /// `citation_author`, one each, written as given.
    pub authors: Vec<String>,
    /// `citation_publication_date`, e.g. "2013/07/31".
    pub publication_date: Option<String>,
    pub journal: Option<String>,
    pub doi: Option<String>,
    pub abstract_html_url: Option<String>,
    /// `<meta name="description">`; the abstract, as most publishers put it there.
    pub description: Option<String>,
    /// The abstract paragraph in the article body.
    pub abstract_text: String,
    /// Paragraphs after the abstract (a landing page usually shows the first few lines).
    pub body: Vec<String>,
    pub pdf: PdfLink,
}

impl Landing {
    /// The landing page of `paper`, its meta agreeing with the CSL item, authors written
    /// "Family, Given". No PDF link until one is set.
    pub fn for_paper(paper: &Paper) -> Landing {
        let date = match paper.issued.as_slice() {
            [y] => format!("{y}"),
            [y, m] => format!("{y}/{m:02}"),
            [y, m, d, ..] => format!("{y}/{m:02}/{d:02}"),
            [] => String::new(),
        };
        Landing {
            title: paper.title.clone(),
            html_title: format!("{} | {}", paper.title, paper.container_title),
            authors: paper.author_names(),
            publication_date: Some(date),
            journal: Some(paper.container_title.clone()),
            doi: Some(paper.doi.clone()),
            abstract_html_url: None,
            description: Some(paper.abstract_text.clone()),
            abstract_text: paper.abstract_text.clone(),
            body: vec![
                "Access options: subscribe to this journal, or buy this article.".into(),
                "References and supplementary information are listed below the article.".into(),
            ],
            pdf: PdfLink::None,
        }
    }

    pub fn pdf_meta(mut self, href: &str) -> Landing {
        self.pdf = PdfLink::Meta(href.to_string());
        self
    }

    pub fn pdf_alternate(mut self, href: &str) -> Landing {
        self.pdf = PdfLink::Alternate(href.to_string());
        self
    }

    /// `citation_author` values as written, e.g. Nature's "G. Kucsko".
    pub fn authors_as(mut self, authors: &[&str]) -> Landing {
        self.authors = authors.iter().map(|a| (*a).to_string()).collect();
        self
    }

    pub fn published(mut self, date: &str) -> Landing {
        self.publication_date = Some(date.to_string());
        self
    }

    pub fn html(&self) -> String {
        let mut head =
            String::from("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
        head.push_str(&format!("<title>{}</title>\n", escape(&self.html_title)));
        if let Some(d) = &self.description {
            head.push_str(&meta("description", d));
        }
        head.push_str(&format!(
            "<meta property=\"og:title\" content=\"{}\">\n<meta property=\"og:type\" content=\"article\">\n",
            escape(&self.title)
        ));
        head.push_str(&meta("citation_title", &self.title));
        for a in &self.authors {
            head.push_str(&meta("citation_author", a));
        }
        if let Some(d) = &self.publication_date {
            head.push_str(&meta("citation_publication_date", d));
        }
        if let Some(j) = &self.journal {
            head.push_str(&meta("citation_journal_title", j));
        }
        if let Some(d) = &self.doi {
            head.push_str(&meta("citation_doi", d));
        }
        if let Some(u) = &self.abstract_html_url {
            head.push_str(&meta("citation_abstract_html_url", u));
        }
        match &self.pdf {
            PdfLink::None => {}
            PdfLink::Meta(href) => head.push_str(&meta("citation_pdf_url", href)),
            PdfLink::Alternate(href) => head.push_str(&format!(
                "<link rel=\"alternate\" type=\"application/pdf\" title=\"PDF\" href=\"{}\">\n",
                escape(href)
            )),
        }
        head.push_str("</head>\n");
        let mut body = String::from(
            "<body>\n<header><nav><a href=\"/\">Home</a> <a href=\"/journals\">Journals</a> \
             <a href=\"/login\">Log in</a></nav></header>\n<main><article>\n",
        );
        body.push_str(&format!("<h1>{}</h1>\n", escape(&self.title)));
        body.push_str(&format!(
            "<ul class=\"authors\">{}</ul>\n",
            self.authors
                .iter()
                .map(|a| format!("<li>{}</li>", escape(a)))
                .collect::<String>()
        ));
        body.push_str(&format!(
            "<section class=\"abstract\" id=\"abstract\">\n<h2>Abstract</h2>\n<p>{}</p>\n</section>\n",
            escape(&self.abstract_text)
        ));
        body.push_str("<section>\n");
        for p in &self.body {
            body.push_str(&format!("<p>{}</p>\n", escape(p)));
        }
        body.push_str("</section>\n</article></main>\n<footer>Example Press. Terms of use. Privacy.</footer>\n</body>\n</html>\n");
        head + &body
    }
}

/// What a publisher's PDF address answers.
#[derive(Debug, Clone)]
pub enum PdfAnswer {
    /// 200, `application/pdf`, [`PDF_BYTES`].
    Pdf,
    /// 403, a subscription notice (a paywall).
    Forbidden,
    /// 200, `text/html`: the publisher's sign-in page where the PDF would be.
    LoginPage,
    /// Anything else.
    Reply(Reply),
}

impl PdfAnswer {
    pub fn reply(&self) -> Reply {
        match self {
            PdfAnswer::Pdf => Reply::pdf(),
            PdfAnswer::Forbidden => Reply::html(
                403,
                "<!DOCTYPE html><html><head><title>Subscription required | Example Press</title></head>\
                 <body><h1>Subscription required</h1><p>Your institution does not subscribe to \
                 this journal. Buy this article or subscribe to read the full text.</p></body></html>",
            ),
            PdfAnswer::LoginPage => Reply::html(200, login_page()),
            PdfAnswer::Reply(r) => r.clone(),
        }
    }
}

/// The sign-in page a publisher serves, with 200, in place of a PDF it will not give.
pub fn login_page() -> String {
    format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>Sign in | Example Press</title></head><body>\
         <header><nav><a href=\"/\">Home</a></nav></header><main>\
         <h1>Sign in to Example Press</h1><p>{LOGIN_SENTENCE}</p>\
         <form method=\"post\" action=\"/login\"><label>Email <input name=\"email\"></label>\
         <label>Password <input type=\"password\" name=\"password\"></label>\
         <button>Sign in</button></form>\
         <p><a href=\"/institution\">Access through your institution</a></p>\
         </main></body></html>"
    )
}

#[derive(Debug, Clone)]
enum Resource {
    Landing(Box<Landing>),
    Pdf(PdfAnswer),
    Page(Reply),
}

/// A publisher's site: landing pages and PDFs at paths the test names. Anything else is a 404.
pub struct Publisher {
    http: Http,
    paths: Arc<Mutex<HashMap<String, Resource>>>,
}

impl Deref for Publisher {
    type Target = Http;
    fn deref(&self) -> &Http {
        &self.http
    }
}

impl Default for Publisher {
    fn default() -> Self {
        Self::start()
    }
}

impl Publisher {
    /// On 127.0.0.2, so its documents are filed apart from the services on 127.0.0.1.
    pub fn start() -> Publisher {
        Self::start_on("127.0.0.2")
    }

    pub fn start_on(ip: &str) -> Publisher {
        let paths: Arc<Mutex<HashMap<String, Resource>>> = Arc::default();
        let table = Arc::clone(&paths);
        let http = Http::start(ip, move |req, _base| publisher_reply(&lock(&table), req));
        Publisher { http, paths }
    }

    /// Serve `landing` at `path`.
    pub fn landing(&self, path: &str, landing: Landing) {
        lock(&self.paths).insert(path.to_string(), Resource::Landing(Box::new(landing)));
    }

    /// Serve `answer` at `path`.
    pub fn pdf(&self, path: &str, answer: PdfAnswer) {
        lock(&self.paths).insert(path.to_string(), Resource::Pdf(answer));
    }

    /// Serve `reply` at `path`, every time.
    pub fn page(&self, path: &str, reply: Reply) {
        lock(&self.paths).insert(path.to_string(), Resource::Page(reply));
    }
}

fn publisher_reply(paths: &HashMap<String, Resource>, req: &Request) -> Reply {
    let resource = paths.get(&req.target).or_else(|| paths.get(req.path()));
    match resource {
        Some(Resource::Landing(l)) => Reply::html(200, l.html()),
        Some(Resource::Pdf(p)) => p.reply(),
        Some(Resource::Page(r)) => r.clone(),
        None => Reply::html(
            404,
            "<!DOCTYPE html><html><head><title>Page not found | Example Press</title></head>\
             <body><h1>Page not found</h1><p>The page you requested does not exist.</p></body></html>",
        ),
    }
}

// ---------------------------------------------------------------------------
// arXiv
// ---------------------------------------------------------------------------

/// An arXiv e-print as its abs page describes it.
#[derive(Debug, Clone)]
pub struct Eprint {
    pub title: String,
    /// `citation_author`, arXiv writes "Family, Given".
    pub authors: Vec<String>,
    /// `citation_date`, e.g. "2017/06/12".
    pub date: String,
    pub abstract_text: String,
    /// What `/pdf/{id}` answers.
    pub pdf: PdfAnswer,
}

pub const VASWANI_ABSTRACT: &str = "We propose a new simple network architecture, the \
     Transformer, based solely on attention mechanisms, dispensing with recurrence and \
     convolutions entirely.";

impl Eprint {
    /// Vaswani et al., "Attention Is All You Need", arXiv:1706.03762.
    pub fn vaswani() -> Eprint {
        Eprint {
            title: "Attention Is All You Need".into(),
            authors: [
                "Vaswani, Ashish",
                "Shazeer, Noam",
                "Parmar, Niki",
                "Uszkoreit, Jakob",
                "Jones, Llion",
                "Gomez, Aidan N.",
                "Kaiser, Lukasz",
                "Polosukhin, Illia",
            ]
            .iter()
            .map(|a| (*a).to_string())
            .collect(),
            date: "2017/06/12".into(),
            abstract_text: VASWANI_ABSTRACT.into(),
            pdf: PdfAnswer::Pdf,
        }
    }

    /// The abs page, its `citation_pdf_url` being `{base}/pdf/{id}`.
    pub fn abs_page(&self, id: &str, base: &str) -> String {
        let mut head = String::from("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n");
        head.push_str(&format!("<title>[{id}] {}</title>\n", escape(&self.title)));
        head.push_str(&meta(
            "description",
            &format!("Abstract page for arXiv paper {id}: {}", self.title),
        ));
        head.push_str(&format!(
            "<meta property=\"og:description\" content=\"{}\">\n",
            escape(&self.abstract_text)
        ));
        head.push_str(&meta("citation_title", &self.title));
        for a in &self.authors {
            head.push_str(&meta("citation_author", a));
        }
        head.push_str(&meta("citation_date", &self.date));
        head.push_str(&meta("citation_online_date", &self.date));
        head.push_str(&meta("citation_pdf_url", &format!("{base}/pdf/{id}")));
        head.push_str(&meta("citation_arxiv_id", id));
        head.push_str(&meta("citation_abstract", &self.abstract_text));
        head.push_str("</head>\n");
        let authors = self
            .authors
            .iter()
            .map(|a| format!("<a href=\"/a/{}\">{}</a>", escape(a), escape(a)))
            .collect::<Vec<_>>()
            .join(", ");
        head + &format!(
            "<body>\n<div id=\"header\"><a href=\"/\">arXiv</a> &gt; cs &gt; arXiv:{id}</div>\n\
             <div id=\"content\"><div id=\"abs\">\n\
             <h1 class=\"title mathjax\"><span class=\"descriptor\">Title:</span>{}</h1>\n\
             <div class=\"authors\"><span class=\"descriptor\">Authors:</span>{authors}</div>\n\
             <blockquote class=\"abstract mathjax\"><span class=\"descriptor\">Abstract:</span>{}</blockquote>\n\
             <div class=\"full-text\"><ul><li><a href=\"/pdf/{id}\" class=\"abs-button download-pdf\">View PDF</a></li></ul></div>\n\
             </div></div>\n</body>\n</html>\n",
            escape(&self.title),
            escape(&self.abstract_text)
        )
    }
}

/// arXiv: `/abs/{id}` and `/pdf/{id}` for the e-prints it holds; a version suffix (`v7`) finds
/// the same e-print.
pub struct Arxiv {
    http: Http,
    eprints: Arc<Mutex<HashMap<String, Eprint>>>,
}

impl Deref for Arxiv {
    type Target = Http;
    fn deref(&self) -> &Http {
        &self.http
    }
}

impl Default for Arxiv {
    fn default() -> Self {
        Self::start()
    }
}

impl Arxiv {
    pub fn start() -> Arxiv {
        Self::start_on("127.0.0.1")
    }

    pub fn start_on(ip: &str) -> Arxiv {
        let eprints: Arc<Mutex<HashMap<String, Eprint>>> = Arc::default();
        let table = Arc::clone(&eprints);
        let http = Http::start(ip, move |req, base| arxiv_reply(&lock(&table), req, base));
        Arxiv { http, eprints }
    }

    pub fn eprint(&self, id: &str, eprint: Eprint) {
        lock(&self.eprints).insert(id.to_string(), eprint);
    }
}

fn without_version(id: &str) -> &str {
    match id.rfind('v') {
        Some(i) if i > 0 && id[i + 1..].chars().all(|c| c.is_ascii_digit()) && i + 1 < id.len() => {
            &id[..i]
        }
        _ => id,
    }
}

fn arxiv_reply(eprints: &HashMap<String, Eprint>, req: &Request, base: &str) -> Reply {
    let path = req.path();
    let find = |id: &str| eprints.get(id).or_else(|| eprints.get(without_version(id)));
    if let Some(id) = path.strip_prefix("/abs/") {
        return match find(id) {
            Some(e) => Reply::html(200, e.abs_page(id, base)),
            None => Reply::html(
                404,
                format!(
                    "<html><head><title>Article identifier '{}' not recognized</title></head><body><h1>Article identifier '{}' not recognized</h1></body></html>",
                    escape(id),
                    escape(id)
                ),
            ),
        };
    }
    if let Some(id) = path.strip_prefix("/pdf/") {
        let id = id.strip_suffix(".pdf").unwrap_or(id);
        return match find(id) {
            Some(e) => e.pdf.reply(),
            None => Reply::status(404),
        };
    }
    Reply::status(404)
}

// ---------------------------------------------------------------------------
// PubMed
// ---------------------------------------------------------------------------

/// A PubMed record as its page shows it: metadata and the abstract, no full text.
#[derive(Debug, Clone)]
pub struct Citation {
    pub title: String,
    /// `citation_author`, one each, written as given.
    pub authors: Vec<String>,
    pub journal: String,
    pub doi: Option<String>,
    /// `citation_date`, e.g. "2019 Sep".
    pub date: String,
    pub abstract_text: String,
}

pub const SMITH_ABSTRACT: &str = "Things were studied in forty-two participants over twelve \
     months, and most of them changed in ways the protocol had predicted.";

impl Citation {
    /// PMID 31452104 as the reference lists in these tests cite it.
    pub fn smith() -> Citation {
        Citation {
            title: "A study of things".into(),
            authors: vec!["Smith, Jane".into(), "Roe, Richard".into()],
            journal: "Journal of Examples".into(),
            doi: Some("10.5555/examples.2019.45".into()),
            date: "2019 Sep".into(),
            abstract_text: SMITH_ABSTRACT.into(),
        }
    }

    pub fn page(&self, pmid: &str) -> String {
        let mut head =
            String::from("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"UTF-8\">\n");
        head.push_str(&format!(
            "<title>{} - PubMed</title>\n",
            escape(&self.title)
        ));
        head.push_str(&meta("description", &self.abstract_text));
        head.push_str(&meta("citation_title", &self.title));
        for a in &self.authors {
            head.push_str(&meta("citation_author", a));
        }
        head.push_str(&meta("citation_date", &self.date));
        head.push_str(&meta("citation_journal_title", &self.journal));
        if let Some(d) = &self.doi {
            head.push_str(&meta("citation_doi", d));
        }
        head.push_str(&meta("citation_pmid", pmid));
        head.push_str("<meta property=\"og:site_name\" content=\"PubMed\">\n</head>\n");
        let authors = self
            .authors
            .iter()
            .map(|a| format!("<span class=\"authors-list-item\"><a class=\"full-name\" href=\"/?term={}\">{}</a></span>", escape(a), escape(a)))
            .collect::<String>();
        head + &format!(
            "<body>\n<header class=\"ncbi-header\"><a href=\"https://www.ncbi.nlm.nih.gov/\">NCBI</a></header>\n\
             <main id=\"article-details\"><div class=\"article-citation\">\
             <div class=\"article-source\"><span class=\"citation-journal\">{}</span> {}</div></div>\n\
             <h1 class=\"heading-title\">{}</h1>\n\
             <div class=\"authors\"><div class=\"authors-list\">{authors}</div></div>\n\
             <ul class=\"identifiers\"><li><span class=\"identifier pubmed\">PMID: <strong class=\"current-id\">{pmid}</strong></span></li></ul>\n\
             <div class=\"abstract\" id=\"abstract\"><h2 class=\"title\">Abstract</h2>\n\
             <div class=\"abstract-content selected\" id=\"eng-abstract\"><p>{}</p></div></div>\n\
             </main>\n<footer>National Library of Medicine</footer>\n</body>\n</html>\n",
            escape(&self.journal),
            escape(&self.date),
            escape(&self.title),
            escape(&self.abstract_text)
        )
    }
}

/// PubMed: `/{pmid}/` for the records it holds; `/{pmid}` redirects there, as the real site
/// does.
pub struct PubMed {
    http: Http,
    records: Arc<Mutex<HashMap<String, Citation>>>,
}

impl Deref for PubMed {
    type Target = Http;
    fn deref(&self) -> &Http {
        &self.http
    }
}

impl Default for PubMed {
    fn default() -> Self {
        Self::start()
    }
}

impl PubMed {
    pub fn start() -> PubMed {
        Self::start_on("127.0.0.1")
    }

    pub fn start_on(ip: &str) -> PubMed {
        let records: Arc<Mutex<HashMap<String, Citation>>> = Arc::default();
        let table = Arc::clone(&records);
        let http = Http::start(ip, move |req, _base| {
            let path = req.path();
            let trimmed = path.trim_matches('/');
            match lock(&table).get(trimmed) {
                Some(c) if path.ends_with('/') => Reply::html(200, c.page(trimmed)),
                Some(_) => Reply::redirect_with(301, &format!("/{trimmed}/")),
                None => Reply::html(
                    404,
                    "<html><head><title>Page not available - PubMed</title></head>\
                     <body><h1>Page not available</h1></body></html>",
                ),
            }
        });
        PubMed { http, records }
    }

    pub fn record(&self, pmid: &str, citation: Citation) {
        lock(&self.records).insert(pmid.to_string(), citation);
    }
}

// ---------------------------------------------------------------------------
// The Wayback Machine
// ---------------------------------------------------------------------------

#[derive(Debug, Clone)]
struct Snapshot {
    original: String,
    timestamp: String,
    /// The status the capture recorded ("200", "404", "302").
    status: String,
    html: String,
}

/// The Wayback Machine: the availability API at [`WAYBACK_API_PATH`] and the snapshots it
/// names, at `/web/{timestamp}/{original}` (with the toolbar) and `/web/{timestamp}id_/{original}`
/// (the page as archived).
pub struct Wayback {
    http: Http,
    snapshots: Arc<Mutex<Vec<Snapshot>>>,
}

impl Deref for Wayback {
    type Target = Http;
    fn deref(&self) -> &Http {
        &self.http
    }
}

impl Default for Wayback {
    fn default() -> Self {
        Self::start()
    }
}

impl Wayback {
    pub fn start() -> Wayback {
        Self::start_on("127.0.0.1")
    }

    pub fn start_on(ip: &str) -> Wayback {
        let snapshots: Arc<Mutex<Vec<Snapshot>>> = Arc::default();
        let table = Arc::clone(&snapshots);
        let http = Http::start(ip, move |req, base| wayback_reply(&lock(&table), req, base));
        Wayback { http, snapshots }
    }

    /// The availability API's address: what `--wayback` takes.
    pub fn api_url(&self) -> String {
        self.url(WAYBACK_API_PATH)
    }

    /// Archive `html` as `original`'s copy taken at `timestamp` (14 digits, UTC).
    pub fn snapshot(&self, original: &str, timestamp: &str, html: &str) {
        self.capture(original, timestamp, "200", html);
    }

    /// A capture of `original` at `timestamp` that recorded `status` (a dead page's "404").
    pub fn capture(&self, original: &str, timestamp: &str, status: &str, html: &str) {
        lock(&self.snapshots).push(Snapshot {
            original: original.to_string(),
            timestamp: timestamp.to_string(),
            status: status.to_string(),
            html: html.to_string(),
        });
    }

    /// The requests to the availability API.
    pub fn api_requests(&self) -> Vec<Request> {
        self.requests()
            .into_iter()
            .filter(|r| r.path() == WAYBACK_API_PATH)
            .collect()
    }

    /// The `url=` of each availability request, decoded.
    pub fn asked_about(&self) -> Vec<String> {
        self.api_requests()
            .iter()
            .filter_map(|r| r.query_param("url"))
            .collect()
    }

    /// The path of the raw copy: `/web/{timestamp}id_/{original}`.
    pub fn raw_path(timestamp: &str, original: &str) -> String {
        format!("/web/{timestamp}id_/{original}")
    }

    /// The path of the copy with the toolbar: `/web/{timestamp}/{original}`.
    pub fn toolbar_path(timestamp: &str, original: &str) -> String {
        format!("/web/{timestamp}/{original}")
    }
}

/// An archived article: a title and a sentence no live page has.
pub fn archived_article(title: &str, sentence: &str) -> String {
    format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t}</title></head>\
         <body><nav><a href=\"/\">Home</a> <a href=\"/archive\">Archive</a></nav>\
         <article><h1>{t}</h1><p>{s}</p>\
         <p>The rest of this post explains how the measurements were taken, which instruments \
         were used, and what went wrong on the second day of the field campaign.</p>\
         <p>Comments are closed.</p></article><footer>Posted in field notes.</footer></body></html>",
        t = escape(title),
        s = escape(sentence)
    )
}

/// A URL as the availability API matches it: without its scheme and a trailing slash.
fn archive_key(url: &str) -> String {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .unwrap_or(url);
    rest.trim_end_matches('/').to_string()
}

/// A timestamp as a number, its missing digits zeros (`1996` is 19960000000000).
fn stamp_value(timestamp: &str) -> u64 {
    format!("{timestamp:0<14}")
        .get(..14)
        .and_then(|t| t.parse().ok())
        .unwrap_or(0)
}

fn wayback_reply(snapshots: &[Snapshot], req: &Request, base: &str) -> Reply {
    let captures = |original: &str| {
        let key = archive_key(original);
        snapshots
            .iter()
            .filter(move |s| archive_key(&s.original) == key)
    };
    // The capture at `timestamp`, else the closest.
    let find = |original: &str, timestamp: &str| {
        let at = stamp_value(timestamp);
        captures(original).min_by_key(|s| stamp_value(&s.timestamp).abs_diff(at))
    };
    if req.path() == WAYBACK_API_PATH {
        let asked = req.query_param("url").unwrap_or_default();
        // As the real API: the capture closest to `timestamp`, else the newest.
        let closest = match req.query_param("timestamp") {
            Some(t) => find(&asked, &t),
            None => captures(&asked).max_by_key(|s| stamp_value(&s.timestamp)),
        };
        let body = match closest {
            Some(s) => serde_json::json!({
                "url": asked,
                "archived_snapshots": {
                    "closest": {
                        "status": s.status,
                        "available": true,
                        "url": format!("{base}/web/{}/{}", s.timestamp, s.original),
                        "timestamp": s.timestamp,
                    }
                }
            }),
            None => serde_json::json!({"url": asked, "archived_snapshots": {}}),
        };
        return Reply::json(200, "application/json", &body);
    }
    if let Some(rest) = req.target.strip_prefix("/web/") {
        let Some((stamp, original)) = rest.split_once('/') else {
            return Reply::status(404);
        };
        // A client that folded `http://` to `http:/` in the path still means the original.
        let original = if original.starts_with("http:/") && !original.starts_with("http://") {
            format!("http://{}", &original["http:/".len()..])
        } else if original.starts_with("https:/") && !original.starts_with("https://") {
            format!("https://{}", &original["https:/".len()..])
        } else {
            original.to_string()
        };
        let (timestamp, raw) = match stamp.strip_suffix("id_") {
            Some(t) => (t, true),
            None => (stamp, false),
        };
        let Some(snapshot) = find(&original, timestamp) else {
            return Reply::html(
                404,
                "<html><head><title>Wayback Machine</title></head><body>\
                 <p>The Wayback Machine has not archived that URL.</p></body></html>",
            );
        };
        if timestamp != snapshot.timestamp {
            // As the real one does: to the closest capture it has.
            let flag = if raw { "id_" } else { "" };
            return Reply::redirect(&format!(
                "{base}/web/{}{flag}/{}",
                snapshot.timestamp, snapshot.original
            ));
        }
        let html = if raw {
            snapshot.html.clone()
        } else {
            let toolbar = format!(
                "<!-- BEGIN WAYBACK TOOLBAR INSERT --><div id=\"wm-ipp\">{WAYBACK_TOOLBAR}</div>\
                 <!-- END WAYBACK TOOLBAR INSERT -->"
            );
            match snapshot.html.find("<body>") {
                Some(i) => {
                    let at = i + "<body>".len();
                    format!("{}{toolbar}{}", &snapshot.html[..at], &snapshot.html[at..])
                }
                None => format!("{toolbar}{}", snapshot.html),
            }
        };
        return Reply::html(200, html)
            .with_header("Memento-Datetime", memento_datetime(&snapshot.timestamp));
    }
    Reply::status(404)
}

/// `20130919044612` as an HTTP-date, for `Memento-Datetime`.
fn memento_datetime(timestamp: &str) -> String {
    let n = |r: std::ops::Range<usize>| -> u64 {
        timestamp.get(r).and_then(|s| s.parse().ok()).unwrap_or(0)
    };
    let (y, mo, d, h, mi, s) = (n(0..4), n(4..6), n(6..8), n(8..10), n(10..12), n(12..14));
    // Days since 1970-01-01 (civil-from-days inverse, Howard Hinnant's algorithm).
    let (y2, m2) = if mo <= 2 {
        (y - 1, mo + 9)
    } else {
        (y, mo - 3)
    };
    let era = y2 / 400;
    let yoe = y2 - era * 400;
    let doy = (153 * m2 + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + h * 3600 + mi * 60 + s;
    httpdate::fmt_http_date(SystemTime::UNIX_EPOCH + Duration::from_secs(secs))
}

/// `20130919044612` as RFC 3339: `2013-09-19T04:46:12Z`.
pub fn timestamp_rfc3339(timestamp: &str) -> String {
    let t = timestamp;
    format!(
        "{}-{}-{}T{}:{}:{}Z",
        &t[0..4],
        &t[4..6],
        &t[6..8],
        &t[8..10],
        &t[10..12],
        &t[12..14]
    )
}

#[cfg(test)]
mod tests {
    //! The fakes' wire formats, checked with a plain HTTP/1.1 client over TCP.

    use super::*;
    use std::io::{Read, Write};

    struct Got {
        status: u16,
        head: String,
        body: Vec<u8>,
    }

    impl Got {
        fn header(&self, name: &str) -> Option<String> {
            self.head.lines().find_map(|l| {
                let (n, v) = l.split_once(':')?;
                n.eq_ignore_ascii_case(name).then(|| v.trim().to_string())
            })
        }
        fn text(&self) -> String {
            String::from_utf8_lossy(&self.body).into_owned()
        }
    }

    fn get(http: &Http, target: &str, accept: Option<&str>) -> Got {
        let mut s = std::net::TcpStream::connect(http.addr()).expect("connect");
        let accept = accept.map_or(String::new(), |a| format!("Accept: {a}\r\n"));
        write!(
            s,
            "GET {target} HTTP/1.1\r\nHost: {}\r\n{accept}Connection: close\r\n\r\n",
            http.addr()
        )
        .expect("send");
        let mut raw = Vec::new();
        s.read_to_end(&mut raw).expect("read");
        let split = find(&raw, b"\r\n\r\n").expect("a head") + 4;
        let head = String::from_utf8_lossy(&raw[..split]).into_owned();
        let status = head
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .expect("status");
        Got {
            status,
            head,
            body: raw[split..].to_vec(),
        }
    }

    #[test]
    fn the_resolver_negotiates_csl_and_redirects_otherwise() {
        let resolver = DoiResolver::start();
        let paper = Paper::kucsko();
        resolver.register(
            &paper.doi,
            "http://127.0.0.2:9/landing",
            Csl::Item(paper.csl()),
        );
        let csl = get(&resolver, "/10.1038/NATURE12373", Some(CSL_JSON));
        assert_eq!(csl.status, 200);
        assert_eq!(csl.header("content-type").as_deref(), Some(CSL_JSON));
        let item: serde_json::Value = serde_json::from_slice(&csl.body).expect("JSON");
        assert_eq!(item["DOI"], "10.1038/nature12373");
        assert_eq!(item["author"][0]["family"], "Kucsko");
        assert_eq!(
            item["issued"]["date-parts"],
            serde_json::json!([[2013, 8, 1]])
        );
        assert!(
            item["abstract"]
                .as_str()
                .expect("abstract")
                .starts_with("<jats:title>")
        );
        let plain = get(&resolver, "/10.1038/nature12373", Some("text/html"));
        assert_eq!(plain.status, 302);
        assert_eq!(
            plain.header("location").as_deref(),
            Some("http://127.0.0.2:9/landing")
        );
        assert_eq!(get(&resolver, "/10.9999/nope", Some(CSL_JSON)).status, 404);
        assert_eq!(get(&resolver, "/10.9999/nope", None).status, 404);
        let seen = resolver.requests();
        assert_eq!(seen.len(), 4);
        assert!(seen[0].wants_csl());
        assert!(!seen[1].wants_csl());
        assert_eq!(seen[1].accept(), "text/html");
    }

    #[test]
    fn resolvers_that_do_not_negotiate_and_the_agency_redirect() {
        let resolver = DoiResolver::start();
        resolver.register("10.1/a", "http://x.test/a", Csl::Ignored);
        resolver.register("10.1/b", "http://x.test/b", Csl::NotAcceptable);
        resolver.register(
            "10.1/c",
            "http://x.test/c",
            Csl::ViaAgency(serde_json::json!({"DOI": "10.1/c"})),
        );
        assert_eq!(get(&resolver, "/10.1/a", Some(CSL_JSON)).status, 302);
        assert_eq!(get(&resolver, "/10.1/b", Some(CSL_JSON)).status, 406);
        let via = get(&resolver, "/10.1/c", Some(CSL_JSON));
        let agency = resolver.agency();
        assert_eq!(agency.addr().ip().to_string(), "127.0.0.3");
        assert_eq!(
            via.header("location"),
            Some(agency.url("/v1/works/10.1/c/transform"))
        );
        let item = get(agency, "/v1/works/10.1/c/transform", Some(CSL_JSON));
        assert_eq!(item.status, 200);
        assert!(item.text().contains("10.1/c"));
        assert_eq!(get(agency, "/v1/works/10.1/c/transform", None).status, 406);
    }

    #[test]
    fn the_publisher_serves_landings_pdfs_and_paywalls() {
        let publisher = Publisher::start();
        assert_eq!(publisher.addr().ip().to_string(), "127.0.0.2");
        let paper = Paper::kucsko();
        publisher.landing("/a", Landing::for_paper(&paper).pdf_meta("/a.pdf"));
        publisher.landing("/b", Landing::for_paper(&paper).pdf_alternate("b.pdf"));
        publisher.pdf("/a.pdf", PdfAnswer::Pdf);
        publisher.pdf("/b.pdf", PdfAnswer::Forbidden);
        publisher.pdf("/c.pdf", PdfAnswer::LoginPage);
        let a = get(&publisher, "/a", None).text();
        assert!(
            a.contains("<meta name=\"citation_pdf_url\" content=\"/a.pdf\">"),
            "{a}"
        );
        assert!(a.contains("<meta name=\"citation_author\" content=\"Kucsko, G.\">"));
        assert!(a.contains(KUCSKO_ABSTRACT));
        let b = get(&publisher, "/b", None).text();
        assert!(b.contains("<link rel=\"alternate\" type=\"application/pdf\""));
        assert!(!b.contains("citation_pdf_url"));
        let pdf = get(&publisher, "/a.pdf", None);
        assert_eq!((pdf.status, pdf.body.as_slice()), (200, PDF_BYTES));
        assert_eq!(get(&publisher, "/b.pdf", None).status, 403);
        let login = get(&publisher, "/c.pdf", None);
        assert_eq!(login.status, 200);
        assert!(login.text().contains(LOGIN_SENTENCE));
        assert_eq!(get(&publisher, "/nope", None).status, 404);
        publisher.script(
            "/a.pdf",
            vec![Reply::status(503), Reply::too_many_requests(2)],
        );
        assert_eq!(get(&publisher, "/a.pdf", None).status, 503);
        let limited = get(&publisher, "/a.pdf", None);
        assert_eq!(
            (limited.status, limited.header("retry-after").as_deref()),
            (429, Some("2"))
        );
        assert_eq!(get(&publisher, "/a.pdf", None).status, 200);
        assert_eq!(publisher.hits("/a.pdf"), 4);
        publisher.script(
            "/slow",
            vec![Reply::status(204).after(Duration::from_millis(150))],
        );
        let started = std::time::Instant::now();
        assert_eq!(get(&publisher, "/slow", None).status, 204);
        assert!(started.elapsed() >= Duration::from_millis(150));
    }

    #[test]
    fn arxiv_and_pubmed_pages() {
        let arxiv = Arxiv::start();
        arxiv.eprint("1706.03762", Eprint::vaswani());
        let abs = get(&arxiv, "/abs/1706.03762", None).text();
        assert!(abs.contains(&format!(
            "<meta name=\"citation_pdf_url\" content=\"{}/pdf/1706.03762\">",
            arxiv.base()
        )));
        assert_eq!(get(&arxiv, "/abs/1706.03762v7", None).status, 200);
        assert_eq!(get(&arxiv, "/pdf/1706.03762", None).body, PDF_BYTES);
        let pubmed = PubMed::start();
        pubmed.record("31452104", Citation::smith());
        let page = get(&pubmed, "/31452104/", None);
        assert_eq!(page.status, 200);
        assert!(
            page.text()
                .contains("<meta name=\"citation_pmid\" content=\"31452104\">")
        );
        assert!(!page.text().contains("pdf"));
        let moved = get(&pubmed, "/31452104", None);
        assert_eq!(
            (moved.status, moved.header("location").as_deref()),
            (301, Some("/31452104/"))
        );
    }

    #[test]
    fn the_wayback_api_and_its_snapshots() {
        let wayback = Wayback::start();
        let original = "http://127.0.0.2:8080/post?id=7";
        wayback.snapshot(
            original,
            "20130919044612",
            &archived_article("Post", "Unique words."),
        );
        let asked = get(
            &wayback,
            "/wayback/available?url=http%3A%2F%2F127.0.0.2%3A8080%2Fpost%3Fid%3D7",
            None,
        );
        assert_eq!(
            asked.header("content-type").as_deref(),
            Some("application/json")
        );
        let v: serde_json::Value = serde_json::from_slice(&asked.body).expect("JSON");
        assert_eq!(v["url"], original);
        let closest = &v["archived_snapshots"]["closest"];
        assert_eq!(closest["status"], "200");
        assert_eq!(closest["available"], true);
        assert_eq!(closest["timestamp"], "20130919044612");
        assert_eq!(
            closest["url"],
            format!("{}/web/20130919044612/{original}", wayback.base())
        );
        assert_eq!(wayback.asked_about(), [original]);
        let none = get(
            &wayback,
            "/wayback/available?url=http%3A%2F%2Fnowhere.test%2F",
            None,
        );
        let v: serde_json::Value = serde_json::from_slice(&none.body).expect("JSON");
        assert_eq!(
            v,
            serde_json::json!({"url": "http://nowhere.test/", "archived_snapshots": {}})
        );
        let raw = get(
            &wayback,
            &Wayback::raw_path("20130919044612", original),
            None,
        );
        assert_eq!(raw.status, 200);
        assert!(raw.text().contains("Unique words."));
        assert!(!raw.text().contains(WAYBACK_TOOLBAR));
        let framed = get(
            &wayback,
            &Wayback::toolbar_path("20130919044612", original),
            None,
        );
        assert!(framed.text().contains(WAYBACK_TOOLBAR));
        assert_eq!(
            framed.header("memento-datetime").as_deref(),
            Some("Thu, 19 Sep 2013 04:46:12 GMT")
        );
        let elsewhen = get(&wayback, &Wayback::raw_path("2013", original), None);
        assert_eq!(elsewhen.status, 302);
        assert_eq!(timestamp_rfc3339("20130919044612"), "2013-09-19T04:46:12Z");
    }
}
