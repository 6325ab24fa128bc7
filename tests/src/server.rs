//! Fault-injecting HTTP/1.1 server for Gleaner's test suite.
//!
//! Gleaner classifies fetch failures as transient, rate-limited or fatal, and
//! the only honest way to test that classification is to make a real HTTP
//! client (reqwest) meet real misbehaviour on a real socket. An HTTP server
//! library would refuse to produce most of the faults needed here (a garbage
//! status line, a body cut short of its `Content-Length`, a response that
//! never starts), so this server speaks HTTP/1.1 by hand over raw TCP.
//!
//! What a request gets is chosen by its request-target (see the list below),
//! or by a per-target script set with [`FaultServer::script`], which lets a
//! test say "fail twice, then succeed" without inventing a new URL scheme.
//!
//! | target | behaviour |
//! | --- | --- |
//! | `/ok/<any>` | 200 HTML page titled `OK <any>` |
//! | `/page?title=<pct>` | 200 HTML page whose `<title>` is the decoded value, unescaped |
//! | `/text/<any>` | 200 `text/plain` body `plain <any>` |
//! | `/status/<code>` | that status; `retry_after`, `retry_after_date`, `location` query parameters |
//! | `/stall-headers` | never answers; holds the connection until the client leaves |
//! | `/close-before-headers` | closes without sending a byte |
//! | `/drop-mid-body` | promises 1000 bytes, sends 100, closes |
//! | `/drip?bytes=N&every_ms=M` | N body bytes, one every M ms |
//! | `/garbage` | `HTTP/1.1 garbage` then close |
//! | `/redirect-loop`, `/redirect-chain/<n>`, `/redirect-file` | 302s |
//! | `/gzip-bomb?mb=N`, `/gzip-ok` | gzip-encoded bodies |
//! | `/big?mb=N` | N MiB of `a` |
//! | `/article?kb=N` | 200 HTML article of about N KiB |
//! | `/hold/<ms>/<any>` | waits, then like `/ok/<any>` |
//! | `/flaky/<n>/<any>` | 503 for the first n requests to that exact target, then 200 |
//! | anything else | 404 |
//!
//! The server runs on its own thread with its own tokio runtime so that it
//! behaves the same under `#[test]` and `#[tokio::test]`, and so that a test
//! runtime that is blocked (or shut down) cannot starve it.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::io::{self, Write as _};
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{oneshot, watch};

/// Largest request head accepted; beyond it the client gets a 431.
const MAX_HEAD: usize = 64 * 1024;
/// Write size for large bodies: big enough to be quick, small enough that a
/// client hanging up mid-body is noticed long before the body is done.
const CHUNK: usize = 64 * 1024;
const MIB: u64 = 1024 * 1024;
/// Upper bound for `/gzip-bomb?mb=N`, because the bomb is compressed and kept
/// in memory; a typo must not make the test suite compress a terabyte.
const MAX_BOMB_MIB: u64 = 4096;

/// What the server does with one request; see [`FaultServer::script`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Behavior {
    /// Exactly this response. `Date` and `Content-Length` are added unless
    /// `headers` already has them (or `Transfer-Encoding`), so a test can
    /// send a deliberately wrong length.
    Respond {
        status: u16,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
    },
    /// 200 with the small HTML page of `/ok/<any>`, `<any>` being the
    /// request-target without its leading `/`.
    Ok,
    /// As `/status/CODE` without query parameters.
    Status(u16),
    /// Reads the head and never answers, until the client closes.
    StallForever,
    /// Reads the head, then closes without sending a byte.
    CloseBeforeHeaders,
    /// As `/drop-mid-body`.
    DropMidBody,
    /// Waits, then behaves as the inner behaviour.
    Delay(Duration, Box<Behavior>),
}

/// Handle to a running fault server. Clones share the server; dropping the
/// last clone stops it and closes every connection it holds.
#[derive(Clone)]
pub struct FaultServer {
    inner: Arc<Running>,
}

struct Running {
    addr: SocketAddr,
    state: Arc<State>,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            // An Err only means the server thread is already gone.
            let _ = tx.send(());
        }
        if let Some(thread) = self.thread.take() {
            // Joining makes "server dropped" mean "port closed" by the time
            // drop returns; a panic in the server thread has already been
            // printed, and re-raising it from a destructor would abort.
            let _ = thread.join();
        }
    }
}

impl fmt::Debug for FaultServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FaultServer")
            .field("addr", &self.inner.addr)
            .finish_non_exhaustive()
    }
}

impl FaultServer {
    /// Starts a server on `127.0.0.1` and an ephemeral port.
    pub fn start() -> FaultServer {
        Self::start_on("127.0.0.1")
    }

    /// Starts a server on `ip` and an ephemeral port. Linux routes all of
    /// 127.0.0.0/8 to the loopback device, so `127.0.0.2` gives a test a
    /// second "host" for per-host limits without any network setup.
    pub fn start_on(ip: &str) -> FaultServer {
        let ip: IpAddr = ip
            .parse()
            .expect("FaultServer::start_on needs an IP address literal such as 127.0.0.2");
        Self::start_at(SocketAddr::new(ip, 0))
    }

    /// Starts a server on a fixed address, for a test that hands out its URLs before the
    /// server can exist (the network is down until the test brings it up).
    pub fn start_at(addr: SocketAddr) -> FaultServer {
        // Bound here, not on the server thread, so the port is known and
        // already accepting (into the backlog) when start returns.
        let listener = std::net::TcpListener::bind(addr)
            .expect("fault server cannot bind its listening socket");
        listener
            .set_nonblocking(true)
            .expect("tokio needs the listening socket to be non-blocking");
        let addr = listener
            .local_addr()
            .expect("a bound socket has a local address");
        // Built here too, so a failure panics in the test that asked for the
        // server instead of silently in a thread nobody joins until drop.
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("fault-server-worker")
            .enable_all()
            .build()
            .expect("fault server cannot build its tokio runtime");
        let listener = {
            let _entered = runtime.enter();
            TcpListener::from_std(listener).expect("tokio cannot adopt the listening socket")
        };
        let state = Arc::new(State::new());
        let (shutdown_tx, shutdown_rx) = oneshot::channel();
        let thread_state = Arc::clone(&state);
        let thread = std::thread::Builder::new()
            .name(format!("fault-server-{addr}"))
            .spawn(move || {
                runtime.block_on(async move {
                    tokio::select! {
                        _ = shutdown_rx => {}
                        () = accept_loop(listener, thread_state) => {}
                    }
                });
                // Dropping the runtime cancels every connection task and so
                // closes their sockets; the timeout only bounds a gzip-bomb
                // compression that is still running on the blocking pool.
                runtime.shutdown_timeout(Duration::from_secs(2));
            })
            .expect("fault server cannot spawn its thread");
        FaultServer {
            inner: Arc::new(Running {
                addr,
                state,
                shutdown: Some(shutdown_tx),
                thread: Some(thread),
            }),
        }
    }

    pub fn addr(&self) -> SocketAddr {
        self.inner.addr
    }

    /// `http://IP:PORT` followed by `path`, which should start with `/`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.inner.addr, path)
    }

    /// Requests whose request-target (path and query, exactly as sent) is
    /// `path`, counted as soon as their head was parsed.
    pub fn hits(&self, path: &str) -> usize {
        lock(&self.inner.state.log)
            .iter()
            .filter(|(target, _)| target == path)
            .count()
    }

    pub fn hits_prefix(&self, prefix: &str) -> usize {
        lock(&self.inner.state.log)
            .iter()
            .filter(|(target, _)| target.starts_with(prefix))
            .count()
    }

    /// Responses to `path` written to their last byte. Stalls, early closes,
    /// truncated bodies and `/garbage` never count.
    pub fn completions(&self, path: &str) -> usize {
        lock(&self.inner.state.completions)
            .get(path)
            .copied()
            .unwrap_or(0)
    }

    pub fn completions_prefix(&self, prefix: &str) -> usize {
        lock(&self.inner.state.completions)
            .iter()
            .filter(|(target, _)| target.starts_with(prefix))
            .map(|(_, n)| n)
            .sum()
    }

    pub fn total_hits(&self) -> usize {
        lock(&self.inner.state.log).len()
    }

    /// Arrival time of each request whose target starts with `path_prefix`,
    /// in arrival order: for checking spacing, e.g. politeness delays.
    pub fn request_times(&self, path_prefix: &str) -> Vec<SystemTime> {
        lock(&self.inner.state.log)
            .iter()
            .filter(|(target, _)| target.starts_with(path_prefix))
            .map(|(_, at)| *at)
            .collect()
    }

    /// Most requests ever in progress at once: from head parsed until the
    /// response is done or the connection is gone.
    pub fn max_concurrent(&self) -> usize {
        self.inner.state.max_in_flight.load(Ordering::SeqCst)
    }

    /// While on, every request whose head arrives is held before any
    /// behaviour runs, until the client hangs up or this is turned off, when
    /// it is answered as usual. Requests already past that point are
    /// unaffected.
    pub fn set_stall_all(&self, on: bool) {
        self.inner.state.stall_all.send_replace(on);
    }

    /// The next requests to exactly `path` take `steps` in order; afterwards
    /// the target's own behaviour applies again. Replaces any steps left from
    /// an earlier call. A step is taken when the request's head arrives, so a
    /// request held by [`set_stall_all`](Self::set_stall_all) keeps its step
    /// even if the client gives up.
    pub fn script(&self, path: &str, steps: Vec<Behavior>) {
        lock(&self.inner.state.scripts).insert(path.to_string(), steps.into());
    }

    /// Forgets hits, completions, request times and `/flaky` counters, and
    /// restarts the concurrency high-water mark from the requests in progress
    /// now. Scripts and the stall switch are left alone.
    pub fn reset_counts(&self) {
        let state = &self.inner.state;
        lock(&state.log).clear();
        lock(&state.completions).clear();
        lock(&state.flaky).clear();
        state
            .max_in_flight
            .store(state.in_flight.load(Ordering::SeqCst), Ordering::SeqCst);
    }
}

/// A test that panicked while holding a lock must not turn every later
/// assertion into a confusing PoisonError; the data is plain counters.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

struct State {
    log: Mutex<Vec<(String, SystemTime)>>,
    completions: Mutex<HashMap<String, usize>>,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    stall_all: watch::Sender<bool>,
    scripts: Mutex<HashMap<String, VecDeque<Behavior>>>,
    flaky: Mutex<HashMap<String, usize>>,
    gzip_bombs: Mutex<HashMap<u64, Arc<Vec<u8>>>>,
}

impl State {
    fn new() -> State {
        State {
            log: Mutex::default(),
            completions: Mutex::default(),
            in_flight: AtomicUsize::new(0),
            max_in_flight: AtomicUsize::new(0),
            stall_all: watch::Sender::new(false),
            scripts: Mutex::default(),
            flaky: Mutex::default(),
            gzip_bombs: Mutex::default(),
        }
    }

    fn next_scripted(&self, target: &str) -> Option<Behavior> {
        let mut scripts = lock(&self.scripts);
        let steps = scripts.get_mut(target)?;
        let step = steps.pop_front();
        if steps.is_empty() {
            scripts.remove(target);
        }
        step
    }

    fn add_completion(&self, target: &str) {
        *lock(&self.completions)
            .entry(target.to_string())
            .or_insert(0) += 1;
    }

    fn undo_completion(&self, target: &str) {
        if let Some(n) = lock(&self.completions).get_mut(target) {
            *n = n.saturating_sub(1);
        }
    }
}

/// One request in progress, for `max_concurrent`. Ending on drop covers
/// every way a connection task can stop, including runtime shutdown.
struct InFlight {
    state: Arc<State>,
    ended: bool,
}

impl InFlight {
    fn begin(state: &Arc<State>) -> InFlight {
        let now = state.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        state.max_in_flight.fetch_max(now, Ordering::SeqCst);
        InFlight {
            state: Arc::clone(state),
            ended: false,
        }
    }

    fn end(&mut self) {
        if !self.ended {
            self.ended = true;
            self.state.in_flight.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.end();
    }
}

async fn accept_loop(listener: TcpListener, state: Arc<State>) {
    loop {
        match listener.accept().await {
            Ok((stream, _peer)) => {
                // Drip and truncated bodies are about exactly when bytes
                // arrive; Nagle would batch them.
                let _ = stream.set_nodelay(true);
                tokio::spawn(serve_connection(stream, Arc::clone(&state)));
            }
            // Usually EMFILE under a stress test: back off instead of
            // spinning, and keep serving once descriptors are freed.
            Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
        }
    }
}

struct Request {
    head_only: bool,
    target: String,
    close: bool,
    content_length: usize,
}

enum HeadError {
    TooLarge,
    Gone,
}

/// What the connection does after a response.
enum Next {
    KeepAlive,
    Close,
}

async fn serve_connection(mut stream: TcpStream, state: Arc<State>) {
    // Bytes read past the current request (pipelining) carry over here.
    let mut pending: Vec<u8> = Vec::new();
    loop {
        let head = match read_head(&mut stream, &mut pending).await {
            Ok(Some(head)) => head,
            Ok(None) | Err(HeadError::Gone) => return,
            Err(HeadError::TooLarge) => {
                let _ = stream.write_all(&simple_response(431)).await;
                return;
            }
        };
        let Some(request) = parse_head(&head) else {
            let _ = stream.write_all(&simple_response(400)).await;
            return;
        };
        let mut flight = InFlight::begin(&state);
        lock(&state.log).push((request.target.clone(), SystemTime::now()));
        let scripted = state.next_scripted(&request.target);
        if discard_body(&mut stream, &mut pending, request.content_length)
            .await
            .is_err()
        {
            return;
        }
        let mut stall = state.stall_all.subscribe();
        if *stall.borrow_and_update() && !hold_while_stalled(&mut stream, &mut pending, stall).await
        {
            return;
        }
        let plan = match scripted {
            Some(behavior) => plan_for_behavior(behavior, &request.target),
            None => plan_for_target(&state, &request.target).await,
        };
        match execute(
            &mut stream,
            &mut pending,
            plan,
            &request,
            &state,
            &mut flight,
        )
        .await
        {
            Next::KeepAlive => {}
            Next::Close => return,
        }
    }
}

/// Reads up to and including the blank line ending a request head.
/// `Ok(None)` is a clean close between requests.
async fn read_head(
    stream: &mut TcpStream,
    pending: &mut Vec<u8>,
) -> Result<Option<Vec<u8>>, HeadError> {
    let mut scratch = [0u8; 8192];
    loop {
        // RFC 9112 asks servers to ignore empty lines before a request line;
        // some clients send a stray CRLF after a body.
        while pending.starts_with(b"\r\n") {
            pending.drain(..2);
        }
        if let Some(end) = find(pending, b"\r\n\r\n") {
            return Ok(Some(pending.drain(..end + 4).collect()));
        }
        if pending.len() >= MAX_HEAD {
            return Err(HeadError::TooLarge);
        }
        match stream.read(&mut scratch).await {
            Ok(0) if pending.is_empty() => return Ok(None),
            // A head cut short has no target to count or answer.
            Ok(0) | Err(_) => return Err(HeadError::Gone),
            Ok(n) => pending.extend_from_slice(&scratch[..n]),
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

fn parse_head(head: &[u8]) -> Option<Request> {
    let text = String::from_utf8_lossy(head);
    let mut lines = text.split("\r\n");
    let mut parts = lines.next()?.split_whitespace();
    let (method, target, version) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || !version.starts_with("HTTP/1.") {
        return None;
    }
    let mut close = version == "HTTP/1.0";
    let mut content_length = 0;
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            content_length = value.parse().ok()?;
        } else if name.eq_ignore_ascii_case("connection") {
            for token in value.split(',').map(str::trim) {
                if token.eq_ignore_ascii_case("close") {
                    close = true;
                } else if token.eq_ignore_ascii_case("keep-alive") {
                    close = false;
                }
            }
        }
    }
    Some(Request {
        head_only: method == "HEAD",
        target: target.to_string(),
        close,
        content_length,
    })
}

/// Request bodies are never used, but must be consumed so that the next
/// request on a kept-alive connection starts where it should.
async fn discard_body(stream: &mut TcpStream, pending: &mut Vec<u8>, len: usize) -> io::Result<()> {
    let from_pending = len.min(pending.len());
    pending.drain(..from_pending);
    let mut left = len - from_pending;
    let mut scratch = [0u8; 8192];
    while left > 0 {
        let want = left.min(scratch.len());
        let n = stream.read(&mut scratch[..want]).await?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        left -= n;
    }
    Ok(())
}

/// Keeps whatever the client sends meanwhile (a pipelined request), but no
/// more than a head's worth, since nothing reads it until the hold ends.
fn keep_pending(pending: &mut Vec<u8>, bytes: &[u8]) {
    let room = MAX_HEAD.saturating_sub(pending.len());
    pending.extend_from_slice(&bytes[..bytes.len().min(room)]);
}

/// Waits for the stall switch to go off; false if the client left first.
/// Reading at the same time is what notices the client leaving: without it
/// a held request would count as in progress forever.
async fn hold_while_stalled(
    stream: &mut TcpStream,
    pending: &mut Vec<u8>,
    mut stall: watch::Receiver<bool>,
) -> bool {
    let mut scratch = [0u8; 4096];
    loop {
        tokio::select! {
            // Hang-up first: a client that left while the switch flipped
            // must not be counted as answered.
            biased;
            read = stream.read(&mut scratch) => match read {
                Ok(0) | Err(_) => return false,
                Ok(n) => keep_pending(pending, &scratch[..n]),
            },
            released = stall.wait_for(|on| !*on) => {
                // Err means the sender is gone, which cannot happen while a
                // connection task holds the state; answering is the safe way out.
                drop(released);
                return true;
            }
        }
    }
}

async fn wait_for_hangup(stream: &mut TcpStream, pending: &mut Vec<u8>) {
    let mut scratch = [0u8; 4096];
    loop {
        match stream.read(&mut scratch).await {
            Ok(0) | Err(_) => return,
            Ok(n) => keep_pending(pending, &scratch[..n]),
        }
    }
}

/// A behaviour resolved down to what goes on the wire.
enum Plan {
    Respond {
        status: u16,
        headers: Vec<(String, String)>,
        body: Body,
    },
    Stall,
    CloseBeforeHeaders,
    Garbage,
    Delay(Duration, Box<Plan>),
}

enum Body {
    Bytes(Arc<Vec<u8>>),
    /// For statuses that have no body (1xx, 204, 304): no Content-Length.
    Absent,
    Repeat {
        byte: u8,
        len: u64,
    },
    Drip {
        len: u64,
        every: Duration,
    },
    /// Declares `declared` bytes, sends `sent`, then closes.
    Truncated {
        declared: u64,
        sent: Vec<u8>,
    },
}

impl Body {
    fn bytes(bytes: impl Into<Vec<u8>>) -> Body {
        Body::Bytes(Arc::new(bytes.into()))
    }

    fn declared_len(&self) -> Option<u64> {
        match self {
            Body::Bytes(bytes) => Some(bytes.len() as u64),
            Body::Absent => None,
            Body::Repeat { len, .. } | Body::Drip { len, .. } => Some(*len),
            Body::Truncated { declared, .. } => Some(*declared),
        }
    }
}

fn header(name: &str, value: impl Into<String>) -> (String, String) {
    (name.to_string(), value.into())
}

fn html(status: u16, body: Vec<u8>) -> Plan {
    Plan::Respond {
        status,
        headers: vec![header("Content-Type", "text/html; charset=utf-8")],
        body: Body::bytes(body),
    }
}

/// An HTML article of about `kb` KiB: sections of prose with inline markup, so extraction
/// has real work to do (and memory to hold) in proportion to the size.
fn article(kb: u64) -> Vec<u8> {
    let mut page = String::from(
        "<!doctype html><html><head><title>A long report</title></head><body>\
         <nav><a href=\"/\">Home</a></nav><article><h1>A long report</h1>",
    );
    let mut n = 0;
    while (page.len() as u64) < kb * 1024 {
        n += 1;
        page.push_str(&format!(
            "<h2>Section {n}</h2><p>Paragraph {n} discusses measured results in some detail, \
             with <a href=\"/ref/{n}\">a reference</a>, <em>emphasis</em> and <strong>strong \
             words</strong>.</p><ul><li>first point {n}</li><li>second point {n}</li></ul>"
        ));
    }
    page.push_str("</article><footer>Footer</footer></body></html>");
    page.into_bytes()
}

fn ok_page(name: &str) -> Plan {
    html(
        200,
        format!("<html><head><title>OK {name}</title></head><body><p>Hello from {name}.</p></body></html>")
            .into_bytes(),
    )
}

fn redirect(location: &str) -> Plan {
    let mut plan = status_plan(302, "");
    if let Plan::Respond { headers, .. } = &mut plan {
        headers.push(header("Location", location));
    }
    plan
}

fn status_plan(code: u16, query: &str) -> Plan {
    // One clock reading for both Date and an HTTP-date Retry-After, so a
    // client computing "Retry-After minus Date" gets exactly the asked delay.
    let now = SystemTime::now();
    let mut headers = vec![header("Date", httpdate::fmt_http_date(now))];
    if let Some(value) = query_param(query, "retry_after") {
        headers.push(header("Retry-After", String::from_utf8_lossy(&value)));
    }
    if let Some(secs) = query_number(query, "retry_after_date") {
        let at = now + Duration::from_secs(secs);
        headers.push(header("Retry-After", httpdate::fmt_http_date(at)));
    }
    if let Some(location) = query_param(query, "location") {
        headers.push(header("Location", String::from_utf8_lossy(&location)));
    }
    let body = if (100..200).contains(&code) || code == 204 || code == 304 {
        Body::Absent
    } else {
        headers.push(header("Content-Type", "text/plain; charset=utf-8"));
        Body::bytes(format!("{code} {}\n", reason(code)))
    };
    Plan::Respond {
        status: code,
        headers,
        body,
    }
}

fn plan_for_behavior(behavior: Behavior, target: &str) -> Plan {
    match behavior {
        Behavior::Respond {
            status,
            headers,
            body,
        } => Plan::Respond {
            status,
            headers,
            body: Body::bytes(body),
        },
        Behavior::Ok => ok_page(target.strip_prefix('/').unwrap_or(target)),
        Behavior::Status(code) => status_plan(code, ""),
        Behavior::StallForever => Plan::Stall,
        Behavior::CloseBeforeHeaders => Plan::CloseBeforeHeaders,
        Behavior::DropMidBody => drop_mid_body(),
        Behavior::Delay(wait, inner) => {
            Plan::Delay(wait, Box::new(plan_for_behavior(*inner, target)))
        }
    }
}

fn drop_mid_body() -> Plan {
    Plan::Respond {
        status: 200,
        headers: vec![header("Content-Type", "text/plain; charset=utf-8")],
        body: Body::Truncated {
            declared: 1000,
            sent: vec![b'x'; 100],
        },
    }
}

async fn plan_for_target(state: &Arc<State>, target: &str) -> Plan {
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    if path == "/ok" {
        return ok_page("");
    }
    if let Some(name) = path.strip_prefix("/ok/") {
        return ok_page(name);
    }
    if let Some(name) = path.strip_prefix("/text/") {
        return Plan::Respond {
            status: 200,
            headers: vec![header("Content-Type", "text/plain; charset=utf-8")],
            body: Body::bytes(format!("plain {name}")),
        };
    }
    if let Some(code) = path.strip_prefix("/status/") {
        return match code.parse::<u16>() {
            Ok(code @ 100..=999) => status_plan(code, query),
            _ => status_plan(404, ""),
        };
    }
    if let Some(count) = path.strip_prefix("/redirect-chain/") {
        return match count.parse::<u64>() {
            Ok(0) => ok_page("redirect-chain"),
            Ok(n) => redirect(&format!("/redirect-chain/{}", n - 1)),
            Err(_) => status_plan(404, ""),
        };
    }
    if let Some(rest) = path.strip_prefix("/hold/") {
        let (ms, name) = rest.split_once('/').unwrap_or((rest, ""));
        return match ms.parse::<u64>() {
            Ok(ms) => Plan::Delay(Duration::from_millis(ms), Box::new(ok_page(name))),
            Err(_) => status_plan(404, ""),
        };
    }
    if let Some(rest) = path.strip_prefix("/flaky/") {
        let (n, name) = rest.split_once('/').unwrap_or((rest, ""));
        let Ok(failures) = n.parse::<usize>() else {
            return status_plan(404, "");
        };
        // Keyed by the whole target so tests can use a fresh counter simply
        // by varying the name or query.
        let seen = {
            let mut flaky = lock(&state.flaky);
            let seen = flaky.entry(target.to_string()).or_insert(0);
            *seen += 1;
            *seen
        };
        return if seen <= failures {
            status_plan(503, "")
        } else {
            ok_page(name)
        };
    }
    match path {
        "/page" => {
            // Inserted unescaped on purpose: this is the XSS probe.
            let title = query_param(query, "title").unwrap_or_default();
            let mut body = b"<html><head><title>".to_vec();
            body.extend_from_slice(&title);
            body.extend_from_slice(b"</title></head><body><p>Page.</p></body></html>");
            html(200, body)
        }
        "/stall-headers" => Plan::Stall,
        "/close-before-headers" => Plan::CloseBeforeHeaders,
        "/drop-mid-body" => drop_mid_body(),
        "/drip" => Plan::Respond {
            status: 200,
            headers: vec![header("Content-Type", "text/plain; charset=utf-8")],
            body: Body::Drip {
                len: query_number(query, "bytes").unwrap_or(10),
                every: Duration::from_millis(query_number(query, "every_ms").unwrap_or(100)),
            },
        },
        "/garbage" => Plan::Garbage,
        "/redirect-loop" => redirect("/redirect-loop"),
        "/redirect-file" => redirect("file:///etc/passwd"),
        "/gzip-bomb" => {
            let mib = query_number(query, "mb").unwrap_or(1).min(MAX_BOMB_MIB);
            gzip_plan(gzip_bomb(state, mib).await)
        }
        "/gzip-ok" => gzip_plan(Arc::new(gzip(
            b"<html><head><title>Gzip OK</title></head><body><p>Hello, compressed.</p></body></html>",
        ))),
        "/article" => html(200, article(query_number(query, "kb").unwrap_or(1))),
        "/big" => Plan::Respond {
            status: 200,
            headers: vec![header("Content-Type", "text/plain; charset=utf-8")],
            body: Body::Repeat {
                byte: b'a',
                len: query_number(query, "mb").unwrap_or(1).saturating_mul(MIB),
            },
        },
        _ => status_plan(404, ""),
    }
}

fn gzip_plan(compressed: Arc<Vec<u8>>) -> Plan {
    Plan::Respond {
        status: 200,
        headers: vec![
            header("Content-Type", "text/html; charset=utf-8"),
            header("Content-Encoding", "gzip"),
        ],
        body: Body::Bytes(compressed),
    }
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    encoder
        .write_all(bytes)
        .expect("compressing into a Vec cannot fail");
    encoder
        .finish()
        .expect("compressing into a Vec cannot fail")
}

/// Compressing hundreds of MiB takes a while even at ~1000:1, so each size
/// is compressed once, off the async workers, and kept.
async fn gzip_bomb(state: &Arc<State>, mib: u64) -> Arc<Vec<u8>> {
    if let Some(bomb) = lock(&state.gzip_bombs).get(&mib) {
        return Arc::clone(bomb);
    }
    let compress = move || {
        let zeros = vec![0u8; CHUNK];
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        for _ in 0..mib * MIB / CHUNK as u64 {
            encoder
                .write_all(&zeros)
                .expect("compressing into a Vec cannot fail");
        }
        encoder
            .finish()
            .expect("compressing into a Vec cannot fail")
    };
    // A JoinError means the compression panicked; an empty body then makes
    // the failing test obvious without taking the server down.
    let bomb = Arc::new(
        tokio::task::spawn_blocking(compress)
            .await
            .unwrap_or_default(),
    );
    lock(&state.gzip_bombs).insert(mib, Arc::clone(&bomb));
    bomb
}

fn query_param(query: &str, name: &str) -> Option<Vec<u8>> {
    query.split('&').find_map(|pair| {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        (percent_decode(key) == name.as_bytes()).then(|| percent_decode(value))
    })
}

fn query_number(query: &str, name: &str) -> Option<u64> {
    String::from_utf8(query_param(query, name)?)
        .ok()?
        .parse()
        .ok()
}

/// Query-string decoding: `%XX` and `+` for space. Malformed escapes pass
/// through literally, as browsers do.
fn percent_decode(text: &str) -> Vec<u8> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                (Some(hi), Some(lo)) => {
                    out.push(hi << 4 | lo);
                    i += 3;
                    continue;
                }
                _ => out.push(b'%'),
            },
            b'+' => out.push(b' '),
            other => out.push(other),
        }
        i += 1;
    }
    out
}

fn hex(digit: u8) -> Option<u8> {
    (digit as char).to_digit(16).map(|d| d as u8)
}

fn reason(code: u16) -> &'static str {
    match code {
        200 => "OK",
        201 => "Created",
        204 => "No Content",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        304 => "Not Modified",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        410 => "Gone",
        418 => "I'm a teapot",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Unknown",
    }
}

/// For requests that cannot be parsed: not counted, connection closed.
fn simple_response(code: u16) -> Vec<u8> {
    let body = format!("{code} {}\n", reason(code));
    format!(
        "HTTP/1.1 {code} {}\r\nDate: {}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        reason(code),
        httpdate::fmt_http_date(SystemTime::now()),
        body.len()
    )
    .into_bytes()
}

async fn execute(
    stream: &mut TcpStream,
    pending: &mut Vec<u8>,
    plan: Plan,
    request: &Request,
    state: &State,
    flight: &mut InFlight,
) -> Next {
    let mut plan = plan;
    loop {
        return match plan {
            Plan::Delay(wait, inner) => {
                tokio::time::sleep(wait).await;
                plan = *inner;
                continue;
            }
            Plan::Stall => {
                wait_for_hangup(stream, pending).await;
                Next::Close
            }
            Plan::CloseBeforeHeaders => {
                // Ended before the close so a client that sees EOF already
                // sees the request as no longer in progress.
                flight.end();
                let _ = stream.shutdown().await;
                Next::Close
            }
            Plan::Garbage => {
                flight.end();
                let _ = stream.write_all(b"HTTP/1.1 garbage\r\n\r\n").await;
                let _ = stream.shutdown().await;
                Next::Close
            }
            Plan::Respond {
                status,
                headers,
                body,
            } => {
                let close = request.close || matches!(body, Body::Truncated { .. });
                let head = response_head(status, &headers, &body, close);
                let out = Out {
                    stream,
                    state,
                    target: &request.target,
                    flight,
                };
                match write_body(out, head, body, request.head_only).await {
                    Ok(Next::KeepAlive) if !close => Next::KeepAlive,
                    _ => Next::Close,
                }
            }
        };
    }
}

fn response_head(status: u16, headers: &[(String, String)], body: &Body, close: bool) -> Vec<u8> {
    let has = |name: &str| {
        headers
            .iter()
            .any(|(key, _)| key.eq_ignore_ascii_case(name))
    };
    let mut head = format!("HTTP/1.1 {status} {}\r\n", reason(status));
    if !has("date") {
        head.push_str(&format!(
            "Date: {}\r\n",
            httpdate::fmt_http_date(SystemTime::now())
        ));
    }
    let framed_by_caller = has("content-length") || has("transfer-encoding");
    if let (Some(len), false) = (body.declared_len(), framed_by_caller) {
        head.push_str(&format!("Content-Length: {len}\r\n"));
    }
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    if close && !has("connection") {
        head.push_str("Connection: close\r\n");
    }
    head.push_str("\r\n");
    head.into_bytes()
}

/// Writes a response, counting it complete at the right moment.
struct Out<'a> {
    stream: &'a mut TcpStream,
    state: &'a State,
    target: &'a str,
    flight: &'a mut InFlight,
}

impl Out<'_> {
    async fn part(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.stream.write_all(bytes).await
    }

    /// The completion is counted, and the request stops being in progress,
    /// *before* the last bytes are written: once the client has read them it
    /// may assert on the counters at once, and counting afterwards would race
    /// it. A failed write takes the completion back.
    async fn last(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.state.add_completion(self.target);
        self.flight.end();
        let written = match self.stream.write_all(bytes).await {
            Ok(()) => self.stream.flush().await,
            Err(err) => Err(err),
        };
        if written.is_err() {
            self.state.undo_completion(self.target);
        }
        written
    }
}

async fn write_body(
    mut out: Out<'_>,
    head: Vec<u8>,
    body: Body,
    head_only: bool,
) -> io::Result<Next> {
    if head_only {
        out.last(&head).await?;
        return Ok(Next::KeepAlive);
    }
    match body {
        Body::Absent => out.last(&head).await?,
        // Small bodies go out with the head in one write, as real servers
        // do, so that a client never sees a head without its body.
        Body::Bytes(bytes) if bytes.len() <= CHUNK => {
            let mut all = head;
            all.extend_from_slice(&bytes);
            out.last(&all).await?;
        }
        Body::Bytes(bytes) => {
            out.part(&head).await?;
            let mut chunks = bytes.chunks(CHUNK).peekable();
            while let Some(chunk) = chunks.next() {
                if chunks.peek().is_some() {
                    out.part(chunk).await?;
                } else {
                    out.last(chunk).await?;
                }
            }
        }
        Body::Repeat { byte, len } => {
            if len == 0 {
                out.last(&head).await?;
            } else {
                out.part(&head).await?;
                let chunk = vec![byte; CHUNK];
                let mut left = len;
                while left > CHUNK as u64 {
                    out.part(&chunk).await?;
                    left -= CHUNK as u64;
                }
                out.last(&chunk[..left as usize]).await?;
            }
        }
        Body::Drip { len, every } => {
            if len == 0 {
                out.last(&head).await?;
            } else {
                out.part(&head).await?;
                for sent in 1..=len {
                    tokio::time::sleep(every).await;
                    if sent < len {
                        out.part(b"x").await?;
                    } else {
                        out.last(b"x").await?;
                    }
                }
            }
        }
        Body::Truncated { sent, .. } => {
            let mut all = head;
            all.extend_from_slice(&sent);
            out.part(&all).await?;
            out.flight.end();
            // A FIN rather than a reset: the client must get the 100 bytes
            // and then a clean EOF short of the promised length.
            let _ = out.stream.shutdown().await;
            return Ok(Next::Close);
        }
    }
    Ok(Next::KeepAlive)
}

#[cfg(test)]
mod tests {
    //! Raw-socket tests: the destination crate has no HTTP client, and a raw
    //! socket also shows exactly which bytes were (not) sent.

    use super::*;
    use std::io::{BufRead, BufReader, Read};
    use std::net::{Shutdown, TcpStream};
    use std::time::Instant;

    const PATIENCE: Duration = Duration::from_secs(5);

    struct Response {
        status: u16,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
    }

    impl Response {
        fn header(&self, name: &str) -> Option<&str> {
            self.headers
                .iter()
                .find(|(key, _)| key.eq_ignore_ascii_case(name))
                .map(|(_, value)| value.as_str())
        }

        fn text(&self) -> String {
            String::from_utf8_lossy(&self.body).into_owned()
        }
    }

    /// One client connection, kept alive across requests.
    struct Conn {
        reader: BufReader<TcpStream>,
        writer: TcpStream,
    }

    impl Conn {
        fn open(addr: SocketAddr) -> Conn {
            let writer = TcpStream::connect(addr).expect("connect to fault server");
            writer
                .set_read_timeout(Some(PATIENCE))
                .expect("set read timeout");
            let reader = BufReader::new(writer.try_clone().expect("clone socket"));
            Conn { reader, writer }
        }

        fn send_raw(&mut self, bytes: &[u8]) {
            self.writer.write_all(bytes).expect("send request");
        }

        fn send(&mut self, method: &str, target: &str, extra: &str) {
            let request = format!("{method} {target} HTTP/1.1\r\nHost: test\r\n{extra}\r\n");
            self.send_raw(request.as_bytes());
        }

        /// Reads one response; a body without Content-Length runs to EOF.
        fn read_response(&mut self, head_only: bool) -> Response {
            let mut status_line = String::new();
            self.reader
                .read_line(&mut status_line)
                .expect("read status line");
            let status = status_line
                .split_whitespace()
                .nth(1)
                .and_then(|code| code.parse().ok())
                .unwrap_or_else(|| panic!("bad status line {status_line:?}"));
            let mut headers = Vec::new();
            loop {
                let mut line = String::new();
                self.reader.read_line(&mut line).expect("read header line");
                let line = line.trim_end();
                if line.is_empty() {
                    break;
                }
                let (name, value) = line.split_once(':').expect("header has a colon");
                headers.push((name.to_string(), value.trim().to_string()));
            }
            let mut response = Response {
                status,
                headers,
                body: Vec::new(),
            };
            if head_only {
                return response;
            }
            match response.header("content-length") {
                Some(len) => {
                    let len: usize = len.parse().expect("numeric Content-Length");
                    response.body = vec![0; len];
                    self.reader
                        .read_exact(&mut response.body)
                        .expect("read body");
                }
                None => {
                    self.reader
                        .read_to_end(&mut response.body)
                        .expect("read body to EOF");
                }
            }
            response
        }

        fn read_to_eof(&mut self) -> Vec<u8> {
            let mut all = Vec::new();
            self.reader.read_to_end(&mut all).expect("read to EOF");
            all
        }

        /// True if nothing arrives within `wait` and the connection is open.
        fn silent_for(&mut self, wait: Duration) -> bool {
            self.writer
                .set_read_timeout(Some(wait))
                .expect("set read timeout");
            let mut byte = [0u8; 1];
            let silent = match self.reader.read(&mut byte) {
                Err(err) => matches!(
                    err.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ),
                Ok(_) => false,
            };
            self.writer
                .set_read_timeout(Some(PATIENCE))
                .expect("set read timeout");
            silent
        }
    }

    /// Polls for server-side state that a client cannot observe directly.
    fn wait_until(what: &str, condition: impl Fn() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(2);
        while !condition() {
            assert!(Instant::now() < deadline, "timed out waiting until {what}");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    fn in_flight(server: &FaultServer) -> usize {
        server.inner.state.in_flight.load(Ordering::SeqCst)
    }

    fn get(server: &FaultServer, target: &str) -> Response {
        let mut conn = Conn::open(server.addr());
        conn.send("GET", target, "Connection: close\r\n");
        conn.read_response(false)
    }

    #[test]
    fn ok_page_has_body_length_type_and_date() {
        let server = FaultServer::start();
        let response = get(&server, "/ok/alpha");
        assert_eq!(response.status, 200);
        let expected = "<html><head><title>OK alpha</title></head><body><p>Hello from alpha.</p></body></html>";
        assert_eq!(response.text(), expected);
        assert_eq!(
            response.header("content-length"),
            Some(expected.len().to_string().as_str())
        );
        assert_eq!(
            response.header("content-type"),
            Some("text/html; charset=utf-8")
        );
        let date = response.header("date").expect("Date header");
        httpdate::parse_http_date(date).expect("Date is an HTTP-date");
        assert!(server.url("/x").starts_with("http://127.0.0.1:"));
    }

    #[test]
    fn keep_alive_serves_two_requests_on_one_connection() {
        let server = FaultServer::start();
        let mut conn = Conn::open(server.addr());
        conn.send("GET", "/ok/one", "");
        assert!(conn.read_response(false).text().contains("OK one"));
        conn.send("GET", "/text/two", "");
        let second = conn.read_response(false);
        assert_eq!(second.text(), "plain two");
        assert_eq!(
            second.header("content-type"),
            Some("text/plain; charset=utf-8")
        );
        assert_eq!(server.total_hits(), 2);
        assert_eq!(server.completions("/ok/one"), 1);
        assert_eq!(server.completions("/text/two"), 1);
    }

    #[test]
    fn pipelined_requests_and_request_bodies_keep_framing() {
        let server = FaultServer::start();
        let mut conn = Conn::open(server.addr());
        conn.send_raw(
            b"POST /ok/a HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhelloGET /ok/b HTTP/1.1\r\nHost: t\r\n\r\n",
        );
        assert!(conn.read_response(false).text().contains("OK a"));
        assert!(conn.read_response(false).text().contains("OK b"));
        conn.send("HEAD", "/ok/c", "");
        let head = conn.read_response(true);
        assert_eq!(head.status, 200);
        assert!(head.header("content-length").is_some());
        // If HEAD had sent a body, this response would be misread.
        conn.send("GET", "/text/d", "");
        assert_eq!(conn.read_response(false).text(), "plain d");
    }

    #[test]
    fn hits_and_completions_skip_unfinished_responses() {
        let server = FaultServer::start();
        get(&server, "/ok/x?q=1");
        get(&server, "/ok/x?q=1");
        assert_eq!(server.hits("/ok/x?q=1"), 2);
        assert_eq!(server.hits("/ok/x"), 0, "the query is part of the target");
        assert_eq!(server.completions("/ok/x?q=1"), 2);

        let mut stalled = Conn::open(server.addr());
        stalled.send("GET", "/stall-headers", "");
        assert!(stalled.silent_for(Duration::from_millis(200)));
        drop(stalled);

        let mut closed = Conn::open(server.addr());
        closed.send("GET", "/close-before-headers", "");
        assert!(closed.read_to_eof().is_empty(), "no bytes before close");

        let mut dropped = Conn::open(server.addr());
        dropped.send("GET", "/drop-mid-body", "");
        dropped.read_to_eof();

        let mut garbage = Conn::open(server.addr());
        garbage.send("GET", "/garbage", "");
        assert_eq!(garbage.read_to_eof(), b"HTTP/1.1 garbage\r\n\r\n");

        for target in [
            "/stall-headers",
            "/close-before-headers",
            "/drop-mid-body",
            "/garbage",
        ] {
            assert_eq!(server.hits(target), 1, "{target}");
            assert_eq!(server.completions(target), 0, "{target}");
        }
        assert_eq!(server.hits_prefix("/ok/"), 2);
        assert_eq!(server.completions_prefix("/ok/"), 2);
        assert_eq!(server.total_hits(), 6);
        assert_eq!(server.request_times("/ok/").len(), 2);
        let times = server.request_times("");
        assert!(times.windows(2).all(|pair| pair[0] <= pair[1]));

        server.reset_counts();
        assert_eq!(server.total_hits(), 0);
        assert_eq!(server.completions_prefix("/"), 0);
    }

    #[test]
    fn script_runs_in_order_then_falls_back() {
        let server = FaultServer::start();
        server.script(
            "/ok/s",
            vec![
                Behavior::Status(503),
                Behavior::Respond {
                    status: 201,
                    headers: vec![("X-Test".into(), "yes".into())],
                    body: b"made".to_vec(),
                },
                Behavior::Delay(Duration::from_millis(100), Box::new(Behavior::Status(429))),
                Behavior::Ok,
            ],
        );
        assert_eq!(get(&server, "/ok/s").status, 503);
        let custom = get(&server, "/ok/s");
        assert_eq!((custom.status, custom.text()), (201, "made".to_string()));
        assert_eq!(custom.header("x-test"), Some("yes"));
        assert_eq!(custom.header("content-length"), Some("4"));
        let started = Instant::now();
        assert_eq!(get(&server, "/ok/s").status, 429);
        assert!(started.elapsed() >= Duration::from_millis(100));
        assert!(
            get(&server, "/ok/s")
                .text()
                .contains("<title>OK ok/s</title>")
        );
        // Script used up: the path's own behaviour.
        assert!(get(&server, "/ok/s").text().contains("<title>OK s</title>"));
        assert_eq!(server.hits("/ok/s"), 5);

        server.script("/anything", vec![Behavior::CloseBeforeHeaders]);
        let mut conn = Conn::open(server.addr());
        conn.send("GET", "/anything", "");
        assert!(conn.read_to_eof().is_empty());
        assert_eq!(get(&server, "/anything").status, 404);
    }

    #[test]
    fn scripted_respond_can_lie_about_length() {
        let server = FaultServer::start();
        server.script(
            "/liar",
            vec![Behavior::Respond {
                status: 200,
                headers: vec![
                    ("Content-Length".into(), "50".into()),
                    ("Connection".into(), "close".into()),
                ],
                body: b"short".to_vec(),
            }],
        );
        let mut conn = Conn::open(server.addr());
        conn.send("GET", "/liar", "Connection: close\r\n");
        let raw = String::from_utf8(conn.read_to_eof()).expect("ASCII response");
        assert_eq!(raw.matches("Content-Length").count(), 1);
        assert!(raw.contains("Content-Length: 50\r\n"));
        assert!(raw.ends_with("\r\n\r\nshort"));
    }

    #[test]
    fn stall_all_holds_then_releases() {
        let server = FaultServer::start();
        server.set_stall_all(true);
        let mut held = Conn::open(server.addr());
        held.send("GET", "/ok/held", "");
        let mut gone = Conn::open(server.addr());
        gone.send("GET", "/ok/gone", "");
        assert!(held.silent_for(Duration::from_millis(300)));
        assert_eq!(server.hits("/ok/held"), 1, "counted although held");
        wait_until("both requests are held", || in_flight(&server) == 2);
        gone.writer.shutdown(Shutdown::Both).expect("hang up");
        drop(gone);
        wait_until("the hang-up is noticed", || in_flight(&server) == 1);
        server.set_stall_all(false);
        let response = held.read_response(false);
        assert_eq!(response.status, 200);
        assert!(response.text().contains("OK held"));
        assert_eq!(server.completions("/ok/held"), 1);
        assert_eq!(server.completions("/ok/gone"), 0);
        assert_eq!(get(&server, "/ok/after").status, 200);
    }

    #[test]
    fn drop_mid_body_sends_exactly_100_of_1000_bytes() {
        let server = FaultServer::start();
        let mut conn = Conn::open(server.addr());
        conn.send("GET", "/drop-mid-body", "");
        let raw = conn.read_to_eof();
        let split = find(&raw, b"\r\n\r\n").expect("complete head") + 4;
        let head = String::from_utf8_lossy(&raw[..split]);
        assert!(head.starts_with("HTTP/1.1 200 "));
        assert!(head.contains("Content-Length: 1000\r\n"));
        assert_eq!(raw.len() - split, 100);
    }

    #[test]
    fn gzip_bomb_decompresses_to_the_asked_size() {
        use flate2::read::GzDecoder;
        let server = FaultServer::start();
        let response = get(&server, "/gzip-bomb?mb=3");
        assert_eq!(response.header("content-encoding"), Some("gzip"));
        assert_eq!(
            response.header("content-type"),
            Some("text/html; charset=utf-8")
        );
        assert!(
            response.body.len() < 3 * MIB as usize / 500,
            "compressed to {} bytes",
            response.body.len()
        );
        let mut decoded = Vec::new();
        GzDecoder::new(response.body.as_slice())
            .read_to_end(&mut decoded)
            .expect("valid gzip");
        assert_eq!(decoded.len() as u64, 3 * MIB);
        assert!(decoded.iter().all(|&byte| byte == 0));
        // Cached: the second one is byte-identical.
        assert_eq!(get(&server, "/gzip-bomb?mb=3").body, response.body);

        let small = get(&server, "/gzip-ok");
        let mut page = String::new();
        GzDecoder::new(small.body.as_slice())
            .read_to_string(&mut page)
            .expect("valid gzip");
        assert!(page.contains("<title>Gzip OK</title>"));
    }

    #[test]
    fn retry_after_forms() {
        let server = FaultServer::start();
        let seconds = get(&server, "/status/429?retry_after=7");
        assert_eq!(seconds.status, 429);
        assert_eq!(seconds.header("retry-after"), Some("7"));
        assert!(seconds.text().starts_with("429 Too Many Requests"));

        let dated = get(&server, "/status/503?retry_after_date=120");
        let date =
            httpdate::parse_http_date(dated.header("date").expect("Date")).expect("HTTP-date");
        let retry = httpdate::parse_http_date(dated.header("retry-after").expect("Retry-After"))
            .expect("Retry-After is an HTTP-date");
        assert_eq!(
            retry.duration_since(date).expect("later"),
            Duration::from_secs(120)
        );

        let garbage = get(&server, "/status/503?retry_after=soon%20ish");
        assert_eq!(garbage.header("retry-after"), Some("soon ish"));
        assert_eq!(get(&server, "/status/503").header("retry-after"), None);

        let moved = get(
            &server,
            "/status/301?location=https%3A%2F%2Fexample.com%2Fx",
        );
        assert_eq!(moved.header("location"), Some("https://example.com/x"));
    }

    #[test]
    fn max_concurrent_sees_parallel_holds() {
        let server = FaultServer::start();
        let workers: Vec<_> = (0..3)
            .map(|i| {
                let server = server.clone();
                std::thread::spawn(move || get(&server, &format!("/hold/400/h{i}")).status)
            })
            .collect();
        for worker in workers {
            assert_eq!(worker.join().expect("client thread"), 200);
        }
        assert!(
            server.max_concurrent() >= 3,
            "max_concurrent = {}",
            server.max_concurrent()
        );
        assert_eq!(server.completions_prefix("/hold/"), 3);
        server.reset_counts();
        assert_eq!(server.max_concurrent(), 0);
        get(&server, "/ok/a");
        get(&server, "/ok/b");
        assert_eq!(
            server.max_concurrent(),
            1,
            "sequential requests never overlap"
        );
    }

    #[test]
    fn start_on_second_loopback_address() {
        let server = FaultServer::start_on("127.0.0.2");
        assert_eq!(server.addr().ip().to_string(), "127.0.0.2");
        assert!(server.url("/ok/two").starts_with("http://127.0.0.2:"));
        assert_eq!(get(&server, "/ok/two").status, 200);
    }

    #[test]
    fn page_title_is_decoded_verbatim() {
        let server = FaultServer::start();
        let response = get(
            &server,
            "/page?title=%3Cscript%3Ealert(1)%3C%2Fscript%3E+%26",
        );
        assert!(
            response
                .text()
                .contains("<title><script>alert(1)</script> &</title>")
        );
    }

    #[test]
    fn redirects_flaky_and_not_found() {
        let server = FaultServer::start();
        let looped = get(&server, "/redirect-loop");
        assert_eq!(
            (looped.status, looped.header("location")),
            (302, Some("/redirect-loop"))
        );
        let chain = get(&server, "/redirect-chain/2");
        assert_eq!(chain.header("location"), Some("/redirect-chain/1"));
        assert_eq!(get(&server, "/redirect-chain/0").status, 200);
        assert_eq!(
            get(&server, "/redirect-file").header("location"),
            Some("file:///etc/passwd")
        );

        let statuses: Vec<u16> = (0..3).map(|_| get(&server, "/flaky/2/f").status).collect();
        assert_eq!(statuses, [503, 503, 200]);
        assert_eq!(
            get(&server, "/flaky/2/f?other").status,
            503,
            "counted per target"
        );

        let missing = get(&server, "/nope");
        assert_eq!(
            (missing.status, missing.text()),
            (404, "404 Not Found\n".to_string())
        );
        let no_content = get(&server, "/status/204");
        assert_eq!(
            (no_content.status, no_content.header("content-length")),
            (204, None)
        );
    }

    #[test]
    fn big_and_drip_bodies() {
        let server = FaultServer::start();
        let big = get(&server, "/big?mb=2");
        assert_eq!(big.body.len() as u64, 2 * MIB);
        assert!(big.body.iter().all(|&byte| byte == b'a'));
        assert_eq!(server.completions("/big?mb=2"), 1);

        let started = Instant::now();
        let drip = get(&server, "/drip?bytes=5&every_ms=40");
        assert_eq!(drip.body.len(), 5);
        assert!(started.elapsed() >= Duration::from_millis(200));
    }

    #[test]
    fn oversized_head_gets_431() {
        let server = FaultServer::start();
        let mut conn = Conn::open(server.addr());
        let filler = "a".repeat(MAX_HEAD);
        conn.send("GET", "/ok/x", &format!("X-Filler: {filler}\r\n"));
        assert_eq!(conn.read_response(false).status, 431);
        assert_eq!(server.total_hits(), 0);
    }

    #[test]
    fn dropping_last_handle_stops_the_server() {
        let server = FaultServer::start();
        let addr = server.addr();
        let clone = server.clone();
        let mut idle = Conn::open(addr);
        idle.send("GET", "/stall-headers", "");
        // Until its head is read, the connection may sit in the backlog or
        // with unread bytes, and closing it then is a reset, not an EOF.
        wait_until("the stalled head is read", || {
            clone.hits("/stall-headers") == 1
        });
        drop(server);
        assert_eq!(
            get(&clone, "/ok/alive").status,
            200,
            "a clone keeps it running"
        );
        drop(clone);
        assert!(TcpStream::connect(addr).is_err(), "listener closed");
        assert!(idle.read_to_eof().is_empty(), "held connection closed too");
    }

    #[test]
    fn works_inside_a_tokio_runtime() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("test runtime");
        runtime.block_on(async {
            let server = FaultServer::start();
            let mut stream = tokio::net::TcpStream::connect(server.addr())
                .await
                .expect("connect");
            stream
                .write_all(b"GET /ok/rt HTTP/1.1\r\nConnection: close\r\n\r\n")
                .await
                .expect("send");
            let mut raw = Vec::new();
            stream.read_to_end(&mut raw).await.expect("read");
            assert!(String::from_utf8_lossy(&raw).contains("OK rt"));
            // Dropped inside the runtime: must neither panic nor hang.
            drop(server);
        });
    }
}
