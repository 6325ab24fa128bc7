//! The binary's edge: argument parsing, output formatting, exit codes. With no subcommand the
//! binary opens the desktop window; every subcommand works without a display.

use std::io::{IsTerminal, Read, Write as _};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::{Args, Parser, Subcommand};

use crate::engine::clock::{Clock, SystemClock};
use crate::engine::export;
use crate::engine::intake::{self, Found, printable, shown_url};
use crate::engine::library::Library;
use crate::engine::policy::{self, Policy};
use crate::engine::queue::{self, Enqueued, Job, Queue, Status, rfc3339};

/// `println!` that hands a failed write back as an error instead of panicking, so that
/// `gleaner jobs list | head` ends quietly when the reader stops reading (see [`main`]).
macro_rules! println {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout().lock(), $($arg)*)?
    }};
}

// After the macro above, which a module sees only when declared after it.
mod jobs;
mod library;
mod run;
mod tags;

#[derive(Debug, Parser)]
#[command(name = "gleaner", version, about = "Pull web pages into a local knowledge base.", long_about = None)]
pub struct Cli {
    /// Where the queue database and the library live [default: the platform data folder].
    #[arg(long, env = "GLEANER_DATA_DIR", global = true, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,

    /// A PostgreSQL database to keep the queue and the library in, shared with other machines
    /// (postgres://user:password@host:5432/gleaner) [default: SQLite in the data folder].
    #[arg(
        long,
        env = "GLEANER_DATABASE_URL",
        global = true,
        value_name = "URL",
        hide_env_values = true
    )]
    pub database: Option<String>,

    #[command(flatten)]
    pub policy: PolicyFlags,

    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Policy overrides for this process; the stored settings apply where a flag is absent.
#[derive(Debug, Default, Clone, Args)]
pub struct PolicyFlags {
    /// First retry delay, e.g. 30s.
    #[arg(long, global = true, value_parser = parse_base_delay, value_name = "DURATION")]
    pub base_delay: Option<Duration>,
    /// Longest retry delay, e.g. 5m.
    #[arg(long, global = true, value_parser = parse_max_delay, value_name = "DURATION")]
    pub max_delay: Option<Duration>,
    /// Retries after the first attempt for transient failures.
    #[arg(long, global = true, value_name = "N")]
    pub max_retries: Option<u32>,
    /// Retries allowed for network failures (at most --max-retries).
    #[arg(long, global = true, value_name = "N")]
    pub network_retries: Option<u32>,
    /// Retries allowed for 5xx responses (at most --max-retries).
    #[arg(long, global = true, value_name = "N")]
    pub server_retries: Option<u32>,
    /// Random spread of each delay, as a fraction (0.2 = ±20%).
    #[arg(long, global = true, value_parser = parse_jitter, value_name = "FRACTION")]
    pub jitter: Option<f64>,
    /// Rate-limited jobs give up once they are this old, e.g. 24h.
    #[arg(long, global = true, value_parser = parse_max_job_age, value_name = "DURATION")]
    pub max_job_age: Option<Duration>,
    /// Fetches in flight at once.
    #[arg(long, global = true, value_parser = clap::value_parser!(u32).range(1..=256), value_name = "N")]
    pub concurrency: Option<u32>,
    /// Fetches in flight at once to one host.
    #[arg(long, global = true, value_parser = clap::value_parser!(u32).range(1..=64), value_name = "N")]
    pub per_host: Option<u32>,
    /// Total time for one request, connect to last byte, e.g. 30s.
    #[arg(long, global = true, value_parser = parse_timeout, value_name = "DURATION")]
    pub timeout: Option<Duration>,
    /// Largest response body, after decompression, e.g. 50MB.
    #[arg(long, global = true, value_parser = parse_max_body, value_name = "SIZE")]
    pub max_body: Option<u64>,
    /// Also save the fetched HTML/PDF/text bytes beside each Markdown document (true/false).
    #[arg(long, global = true, value_name = "BOOL")]
    pub keep_raw: Option<bool>,
    /// Keep content that is not text (images, archives, video) raw beside a note (true), or
    /// refuse it as a fatal failure (false).
    #[arg(long, global = true, value_name = "BOOL")]
    pub keep_other_types: Option<bool>,
    /// Give a link that is gone (404, 410, no such host) a second chance from the Wayback
    /// Machine's archived copy (true/false; default false).
    #[arg(long, global = true, value_name = "BOOL")]
    pub wayback_fallback: Option<bool>,
    /// Where DOIs are resolved (default https://doi.org).
    #[arg(long, global = true, value_name = "URL")]
    pub doi_resolver: Option<String>,
    /// Where arXiv ids are looked up (default https://arxiv.org).
    #[arg(long, global = true, value_name = "URL")]
    pub arxiv: Option<String>,
    /// Where PubMed ids are looked up (default https://pubmed.ncbi.nlm.nih.gov).
    #[arg(long, global = true, value_name = "URL")]
    pub pubmed: Option<String>,
    /// Where PMC ids' articles are (default https://pmc.ncbi.nlm.nih.gov).
    #[arg(long, global = true, value_name = "URL")]
    pub pmc: Option<String>,
    /// The Wayback Machine's availability API (default https://archive.org/wayback/available).
    #[arg(long, global = true, value_name = "URL")]
    pub wayback: Option<String>,
    /// The least time between two requests to HOST, in every process, e.g. arxiv.org=3s
    /// (repeatable; 0 takes a host's interval away). arXiv, NCBI and the Wayback Machine
    /// have theirs by default.
    #[arg(long, global = true, value_parser = parse_host_interval, value_name = "HOST=DURATION")]
    pub host_interval: Vec<(String, Duration)>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Queue URLs found in the arguments, a file, or standard input (--file -).
    Add {
        /// URLs, or any text holding them.
        urls: Vec<String>,
        /// Read text holding URLs from this file, or from standard input with "-".
        #[arg(long, value_name = "F")]
        file: Option<String>,
        /// Name for this batch [default: "cli <time>"].
        #[arg(long, value_name = "NAME")]
        batch: Option<String>,
        /// Fetch URLs again that were already done, dead or cancelled.
        #[arg(long)]
        refetch: bool,
    },
    /// Write the library for downstream tools: JSON Lines (metadata and text), or citations
    /// (BibTeX for biblatex, CSL-JSON, RIS) with a stable, unique key per document.
    Export {
        /// jsonl: one JSON object per document; bibtex, csljson, ris: one citation per document.
        #[arg(long, default_value = "jsonl", value_parser = export::Format::NAMES)]
        format: String,
        /// Write here (atomically) instead of standard output.
        #[arg(long, value_name = "F")]
        output: Option<PathBuf>,
        /// Only these jobs, e.g. 3,5,9 (an id without a document is named on stderr, exit 1).
        #[arg(long, value_name = "IDS", value_delimiter = ',', num_args = 1.., conflicts_with = "search")]
        jobs: Option<Vec<i64>>,
        /// Only the documents a library search for QUERY finds (as `gleaner search`).
        #[arg(long, value_name = "QUERY")]
        search: Option<String>,
    },
    /// Search the library: documents ranked by how well they match, with the matched words
    /// in context. Words are all required; "a phrase", `word*` (a prefix), `a OR b` and `-word`
    /// (without) work, and any other text is read as words, never an error. `tag:NAME` filters
    /// by a tag. A query matching more than 10,000 documents is ranked among its 10,000 newest
    /// matches.
    Search {
        /// The words to find; several words are one query.
        #[arg(required = true, value_name = "QUERY", allow_hyphen_values = true)]
        query: Vec<String>,
        /// At most this many hits.
        #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=10_000), value_name = "N")]
        limit: u32,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Tags: every tag with its job count; a job's tags (ID); or change them (--add, --remove).
    Tags {
        /// A job's id.
        id: Option<i64>,
        /// Tags to give the job.
        #[arg(long, requires = "id", num_args = 1.., value_name = "TAG")]
        add: Vec<String>,
        /// Tags to take from the job (matched without regard to case).
        #[arg(long, requires = "id", num_args = 1.., value_name = "TAG")]
        remove: Vec<String>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// The library folder.
    Library {
        #[command(subcommand)]
        command: LibraryCommand,
    },
    /// Run the worker without a window.
    Run {
        /// Exit once no job is pending or running.
        #[arg(long)]
        until_idle: bool,
    },
    /// List, inspect, retry or cancel jobs.
    Jobs {
        #[command(subcommand)]
        command: JobsCommand,
    },
    /// Counts by status, and paused hosts.
    Stats {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Hosts with a state of their own; pause or resume one host.
    Hosts {
        #[command(subcommand)]
        command: Option<HostsCommand>,
    },
    /// Pause the whole queue (every process on this data folder, or every machine on a shared
    /// database): nothing new starts.
    Pause,
    /// Resume the whole queue.
    Resume,
}

#[derive(Debug, Subcommand)]
pub enum LibraryCommand {
    /// Rebuild the search index from the documents in the library folder.
    Reindex,
    /// Write the shared library's documents this machine lacks into its library folder
    /// (with --database: the ones other machines fetched).
    Pull,
    /// With --database: the largest PDF kept in the database for the other machines (shown,
    /// or set for every machine: e.g. 50MiB; 0 shares no PDF).
    PdfLimit {
        #[arg(value_parser = parse_size, value_name = "SIZE")]
        size: Option<u64>,
    },
}

#[derive(Debug, Subcommand)]
pub enum HostsCommand {
    /// Paused and throttled hosts (the default).
    List {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// No job for HOST starts until it is resumed. HOST may also be a link on the host.
    Pause {
        /// A host name, or a link on the host.
        #[arg(value_parser = parse_host)]
        host: String,
    },
    /// Lift a manual pause, or a rate-limit pause still running, from HOST.
    Resume {
        /// A host name, or a link on the host.
        #[arg(value_parser = parse_host)]
        host: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum JobsCommand {
    /// Jobs, newest first.
    List {
        /// pending, running, done, dead or cancelled.
        #[arg(long, value_parser = parse_status)]
        status: Option<Status>,
        /// Only this host.
        #[arg(long, value_parser = parse_host)]
        host: Option<String>,
        /// Only URLs or titles containing this text.
        #[arg(long)]
        search: Option<String>,
        /// At most this many rows.
        #[arg(long)]
        limit: Option<u32>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// One job with its attempt history.
    Show {
        /// The job's number (see `jobs list`).
        id: i64,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Dead and cancelled jobs back to pending with a fresh budget; pending jobs made due now;
    /// done jobs fetched again (a changed page is kept as a new version).
    #[command(group(clap::ArgGroup::new("which").required(true).args(["ids", "dead"])))]
    Retry {
        /// The jobs' numbers (see `jobs list`).
        ids: Vec<i64>,
        /// Every dead job.
        #[arg(long)]
        dead: bool,
        /// With --dead: only this host's.
        #[arg(long, requires = "dead", conflicts_with = "ids", value_parser = parse_host)]
        host: Option<String>,
    },
    /// Cancel pending or running jobs.
    Cancel {
        /// The jobs' numbers (see `jobs list`).
        #[arg(required = true)]
        ids: Vec<i64>,
    },
}

pub fn parse_duration(s: &str) -> Result<Duration, String> {
    humantime::parse_duration(s.trim())
        .map_err(|e| format!("{e} (use forms like 200ms, 30s, 5m, 1h)"))
}

/// A duration flag's value, refused with the allowed range when it is outside it.
fn duration_in(s: &str, range: policy::Range<Duration>) -> Result<Duration, String> {
    let d = parse_duration(s)?;
    if range.contains(d) {
        Ok(d)
    } else {
        Err(format!(
            "out of range: give a duration {}",
            range.describe()
        ))
    }
}

fn parse_base_delay(s: &str) -> Result<Duration, String> {
    duration_in(s, policy::BASE_DELAY_RANGE)
}

fn parse_max_delay(s: &str) -> Result<Duration, String> {
    duration_in(s, policy::MAX_DELAY_RANGE)
}

fn parse_max_job_age(s: &str) -> Result<Duration, String> {
    duration_in(s, policy::MAX_JOB_AGE_RANGE)
}

fn parse_host_interval(s: &str) -> Result<(String, Duration), String> {
    let (host, d) = s
        .rsplit_once('=')
        .ok_or_else(|| "give HOST=DURATION, e.g. arxiv.org=3s".to_string())?;
    let host = intake::host_name(host)?;
    Ok((host, duration_in(d, policy::HOST_INTERVAL_RANGE)?))
}

fn parse_timeout(s: &str) -> Result<Duration, String> {
    duration_in(s, policy::TIMEOUT_RANGE)
}

fn parse_max_body(s: &str) -> Result<u64, String> {
    let n = parse_size(s)?;
    if policy::MAX_BODY_RANGE.contains(n) {
        Ok(n)
    } else {
        Err(format!(
            "out of range: give a size {}",
            policy::MAX_BODY_RANGE.describe()
        ))
    }
}

fn parse_jitter(s: &str) -> Result<f64, String> {
    let v: f64 = s.parse().map_err(|_| format!("not a number: {s}"))?;
    if (0.0..=1.0).contains(&v) {
        Ok(v)
    } else {
        Err("jitter must be between 0 and 1".into())
    }
}

fn parse_host(s: &str) -> Result<String, String> {
    intake::host_name(s)
}

fn parse_status(s: &str) -> Result<Status, String> {
    Status::parse(s).ok_or_else(|| "expected pending, running, done, dead or cancelled".into())
}

/// "50MB", "512KiB", "1GB", "1000" (bytes). Decimal and binary prefixes both mean powers of 1024,
/// which is what people expect of a download limit.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num
        .parse()
        .map_err(|_| format!("not a size: {s} (use forms like 50MB)"))?;
    let mult = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1024,
        "m" | "mb" | "mib" => 1024 * 1024,
        "g" | "gb" | "gib" => 1024 * 1024 * 1024,
        other => return Err(format!("unknown size unit {other:?} (use B, KB, MB or GB)")),
    };
    n.checked_mul(mult)
        .ok_or_else(|| format!("size too large: {s}"))
}

impl PolicyFlags {
    pub fn apply(&self, mut p: Policy) -> Policy {
        if let Some(v) = self.base_delay {
            p.base_delay = v;
        }
        if let Some(v) = self.max_delay {
            p.max_delay = v;
        }
        if let Some(v) = self.max_retries {
            p.max_retries = v;
        }
        if let Some(v) = self.network_retries {
            p.network_retries = Some(v);
        }
        if let Some(v) = self.server_retries {
            p.server_retries = Some(v);
        }
        if let Some(v) = self.jitter {
            p.jitter = v;
        }
        if let Some(v) = self.max_job_age {
            p.max_job_age = v;
        }
        if let Some(v) = self.concurrency {
            p.concurrency = v;
        }
        if let Some(v) = self.per_host {
            p.per_host = v;
        }
        if let Some(v) = self.timeout {
            p.timeout = v;
        }
        if let Some(v) = self.max_body {
            p.max_body = v;
        }
        if let Some(v) = self.keep_raw {
            p.keep_raw = v;
        }
        if let Some(v) = self.keep_other_types {
            p.keep_binary = v;
        }
        if let Some(v) = self.wayback_fallback {
            p.wayback_fallback = v;
        }
        for (flag, slot) in [
            (&self.doi_resolver, &mut p.services.doi_resolver),
            (&self.arxiv, &mut p.services.arxiv),
            (&self.pubmed, &mut p.services.pubmed),
            (&self.pmc, &mut p.services.pmc),
            (&self.wayback, &mut p.services.wayback),
        ] {
            if let Some(v) = flag {
                *slot = v.trim_end_matches('/').to_string();
            }
        }
        for (host, interval) in &self.host_interval {
            if interval.is_zero() {
                p.host_intervals.remove(host);
            } else {
                p.host_intervals.insert(host.clone(), *interval);
            }
        }
        p
    }
}

pub fn default_data_dir() -> PathBuf {
    dirs::data_dir()
        .or_else(dirs::home_dir)
        .unwrap_or_else(|| PathBuf::from("."))
        .join("gleaner")
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    init_tracing();
    match run(cli) {
        Ok(code) => code,
        // The reader of our output has gone (`| head`): nothing is wrong, and no one is left
        // to tell.
        Err(e)
            if e.downcast_ref::<std::io::Error>()
                .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe) =>
        {
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("gleaner: {}", explain(&e));
            ExitCode::FAILURE
        }
    }
}

/// An error and its causes, joined with ": ", each said once. The engine's errors put their
/// cause in their own message, which is what the window shows; anyhow's `{:#}` would then
/// print it a second time ("File exists (os error 17): File exists (os error 17)").
pub fn explain(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if out.contains(&text) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
    }
    out
}

/// Standard error with the credentials of every URL taken out: a backstop for log lines the
/// engine does not write itself (reqwest's and hyper's, at debug level), which may quote a URL
/// whole. The formatter hands over one event per write.
struct RedactedStderr;

impl std::io::Write for RedactedStderr {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        std::io::stderr().write_all(crate::engine::redact::text(&text).as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

/// The queue this process works on, or one sentence saying why it cannot be had.
pub fn open_queue(
    data_dir: &std::path::Path,
    database: Option<&str>,
) -> anyhow::Result<std::sync::Arc<dyn queue::Queue>> {
    match database.filter(|d| !d.trim().is_empty()) {
        // The error names the database (without its password) itself.
        Some(url) => Ok(queue::open_with(data_dir, Some(url))?),
        None => queue::open(data_dir)
            .with_context(|| format!("cannot open the queue in {}", data_dir.display())),
    }
}

fn init_tracing() {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_env("GLEANER_LOG").unwrap_or_else(|_| EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(|| RedactedStderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_target(false)
        .try_init();
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let data_dir = cli.data_dir.clone().unwrap_or_else(default_data_dir);
    // Absolute once, here: documents are recorded by their path, and a relative one
    // (`--data-dir ./data`) named nothing from another folder (reindex emptied the index).
    let data_dir = std::path::absolute(&data_dir).unwrap_or(data_dir);
    let Some(command) = cli.command else {
        crate::desktop::run(data_dir, cli.database.clone())?;
        return Ok(ExitCode::SUCCESS);
    };
    let refuse = |e: policy::PolicyError| -> ! {
        use clap::CommandFactory as _;
        Cli::command()
            .error(clap::error::ErrorKind::ArgumentConflict, e)
            .exit()
    };
    // Flags that contradict each other are refused before a data folder is made or migrated.
    if let (Some(base), Some(cap)) = (cli.policy.base_delay, cli.policy.max_delay)
        && cap < base
    {
        refuse(policy::PolicyError::CapBelowBase { base, cap });
    }
    // The shared database the window's Settings saved in this data folder, unless the flag or
    // the environment names one: `gleaner add` and `run` went to a private queue of their own.
    let database = match cli.database.clone() {
        Some(url) => Some(url),
        None => {
            let saved = crate::desktop::database::read(&data_dir).map_err(anyhow::Error::msg)?;
            if let Some(url) = &saved {
                tracing::info!(
                    "using the shared database saved in the window's settings: {}",
                    crate::engine::postgres::describe_url(url)
                );
            }
            saved
        }
    };
    let store = open_queue(&data_dir, database.as_deref())?;
    let policy = cli.policy.apply(store.load_policy()?);
    if let Err(e) = policy.check() {
        refuse(e);
    }
    // Times written now must be on the same footing as the waits already queued.
    let writes = matches!(
        command,
        Command::Add { .. } | Command::Jobs { .. } | Command::Hosts { .. }
    );
    if writes && let Err(e) = store.reconcile_clock(&SystemClock.reading()) {
        tracing::warn!(error = %e, "cannot check the queue's clock");
    }
    let now = SystemClock.now_ms();
    match command {
        Command::Add {
            urls,
            file,
            batch,
            refetch,
        } => add(
            &*store,
            &Library::new(data_dir.join("library")),
            &policy,
            urls,
            file,
            batch,
            refetch,
            now,
        ),
        Command::Export {
            format,
            output,
            jobs,
            search,
        } => {
            let selection = match (jobs, search) {
                (Some(ids), _) => export::Selection::Jobs(ids),
                (None, Some(query)) => export::Selection::Search(query),
                (None, None) => export::Selection::All,
            };
            library::export(&*store, format.parse()?, &selection, output)
        }
        Command::Search { query, limit, json } => {
            let (query, limit, json) = library::search_flags(query, limit, json)?;
            library::search(&*store, &query, limit, json)
        }
        Command::Tags {
            id,
            add,
            remove,
            json,
        } => tags::tags(
            &*store,
            &Library::new(data_dir.join("library")),
            tags::TagsArgs {
                id,
                add,
                remove,
                json,
            },
        ),
        Command::Library {
            command: LibraryCommand::Reindex,
        } => library::reindex(&*store, &Library::new(data_dir.join("library"))),
        Command::Library {
            command: LibraryCommand::Pull,
        } => library::pull(&*store, &Library::new(data_dir.join("library"))),
        Command::Library {
            command: LibraryCommand::PdfLimit { size },
        } => library::pdf_limit(&*store, size),
        Command::Run { until_idle } => {
            run::run_worker(store, &data_dir, cli.policy.clone(), until_idle)
        }
        Command::Stats { json } => stats(&*store, json, now),
        Command::Jobs { command } => jobs::jobs(&*store, &policy, command, now),
        Command::Hosts { command } => hosts(
            &*store,
            command.unwrap_or(HostsCommand::List { json: false }),
            now,
        ),
        Command::Pause => {
            store.set_queue_paused(true)?;
            if database.is_some() {
                println!(
                    "queue paused for every machine on the shared database: no new fetch starts \
                     until `gleaner resume`"
                );
            } else {
                println!("queue paused: no new fetch starts until `gleaner resume`");
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Resume => {
            store.set_queue_paused(false)?;
            println!("queue resumed");
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// `gleaner add`: the arguments, then the file or standard input: text holding links, a
/// reference file (BibTeX, RIS, CSL-JSON, MEDLINE) or a bookmark export. Findings are queued and printed
/// a chunk at a time, in input order, so a 100 MB file of junk needs no more memory than a
/// short one (BENCHMARKS.md, "Intake of a large file").
#[allow(clippy::too_many_arguments)]
fn add(
    store: &dyn Queue,
    library: &Library,
    policy: &Policy,
    urls: Vec<String>,
    file: Option<String>,
    batch: Option<String>,
    refetch: bool,
    now: i64,
) -> anyhow::Result<ExitCode> {
    let found = intake::scan_args(&urls);
    let source = match file.as_deref() {
        Some("-") => "stdin",
        Some(_) => "file",
        None => "cli",
    };
    let name = batch.unwrap_or_else(|| format!("{source} {}", rfc3339(now)));
    let mut intake = intake::Intake::new(store, name, source, policy.max_retries, now, None)
        .with_library(library);
    let (mut seen, mut rejected) = (0usize, 0usize);
    // Buffered: a file of a million rejected lines was a million writes. Each chunk's lines
    // are written out once the chunk is queued.
    // `gleaner add --file big.txt | head` queues every line: once the reader stops reading, the
    // lines are no longer printed.
    let mut out = std::io::BufWriter::new(UntilClosed {
        inner: std::io::stdout().lock(),
        closed: false,
    });
    let mut take = |chunk: &mut Vec<Found>| -> anyhow::Result<()> {
        seen += chunk.len();
        rejected += report_added(store, policy, &mut intake, chunk, refetch, now, &mut out)?;
        out.flush()?;
        Ok(())
    };
    let (reader, what): (Box<dyn Read>, String) = match file.as_deref() {
        Some("-") => (Box::new(std::io::stdin().lock()), "standard input".into()),
        Some(path) => (
            Box::new(std::fs::File::open(path).with_context(|| format!("cannot read {path}"))?),
            path.to_string(),
        ),
        None => {
            if !found.is_empty() {
                let mut found = found;
                take(&mut found)?;
            }
            return finish_add(seen, rejected, None);
        }
    };
    let name = file.as_deref().filter(|f| *f != "-");
    match intake::files::read_file(name, reader, found, &mut take) {
        Ok(_) => {}
        Err(intake::files::Stopped::Taker(e)) => return Err(e),
        Err(intake::files::Stopped::File(intake::files::FileError::Binary)) => bail!(
            "{what} is not text (it holds binary data); give a text file with links in it \
             (one per line, or any text around them), a BibTeX, RIS, CSL-JSON or PubMed \
             (.nbib) file, or a bookmark export"
        ),
        Err(intake::files::Stopped::File(e)) => {
            return Err(anyhow::Error::new(e).context(format!("cannot read {what}")));
        }
    }
    finish_add(seen, rejected, Some(&what))
}

/// A writer whose reader may go away: from then on, what is written is dropped.
struct UntilClosed<W> {
    inner: W,
    closed: bool,
}

impl<W: std::io::Write> std::io::Write for UntilClosed<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.closed {
            return Ok(buf.len());
        }
        match self.inner.write(buf) {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                self.closed = true;
                Ok(buf.len())
            }
            other => other,
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.closed {
            return Ok(());
        }
        match self.inner.flush() {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                self.closed = true;
                Ok(())
            }
            other => other,
        }
    }
}

/// `read`: the file or standard input read, if one was.
fn finish_add(seen: usize, rejected: usize, read: Option<&str>) -> anyhow::Result<ExitCode> {
    if let (0, Some(what)) = (seen, read) {
        bail!("{what} holds no links or references");
    }
    if seen == 0 {
        bail!("nothing to add: give URLs as arguments, or --file F (use - for standard input)");
    }
    Ok(if rejected > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// Queue one chunk of findings and print a line for each, in order; how many were rejected.
fn report_added(
    store: &dyn Queue,
    policy: &Policy,
    intake: &mut intake::Intake<'_>,
    found: &[Found],
    refetch: bool,
    now: i64,
    out: &mut impl std::io::Write,
) -> anyhow::Result<usize> {
    let mut results = intake.enqueue(found)?.into_iter();
    let brought: std::collections::HashMap<i64, intake::BroughtTags> = intake
        .take_brought()
        .into_iter()
        .map(|b| (b.id, b))
        .collect();
    // What became of the tags a duplicate brought, after its status.
    let tags_note = |id: i64| match brought.get(&id) {
        Some(b) => match &b.refused {
            None => format!("; tags added: {}", b.tags.join(", ")),
            Some(why) => format!("; its tags {} were not added: {why}", b.tags.join(", ")),
        },
        None => String::new(),
    };
    let mut rejected = 0;
    for f in found {
        match f {
            Found::Url { .. } => match results.next() {
                Some(Enqueued::Queued { id, url }) => {
                    writeln!(out, "queued {id} {}", shown_url(&url))?
                }
                Some(Enqueued::Duplicate { id, url, status }) => {
                    let url = shown_url(&url);
                    let finished =
                        matches!(status, Status::Done | Status::Dead | Status::Cancelled);
                    let tags = tags_note(id);
                    if refetch && finished {
                        store.retry(&[id], policy.max_retries, now)?;
                        writeln!(out, "refetch {id} {url} (was {}{tags})", status.as_str())?;
                    } else if finished {
                        writeln!(
                            out,
                            "duplicate {id} {url} ({}{tags}; add --refetch to fetch it again)",
                            status.as_str()
                        )?;
                    } else {
                        writeln!(out, "duplicate {id} {url} ({}{tags})", status.as_str())?;
                    }
                }
                None => {}
            },
            Found::Rejected { input, reason } => {
                rejected += 1;
                writeln!(out, "rejected {input}: {reason}")?;
            }
            Found::Skipped { input, reason } => writeln!(out, "skipped {input}: {reason}")?,
        }
    }
    Ok(rejected)
}

fn hosts(store: &dyn Queue, command: HostsCommand, now: i64) -> anyhow::Result<ExitCode> {
    match command {
        HostsCommand::List { json } => {
            let hosts = store.hosts(now)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&hosts)?);
                return Ok(ExitCode::SUCCESS);
            }
            if hosts.is_empty() {
                println!("no host is paused or throttled");
            }
            for h in hosts {
                let mut state = Vec::new();
                if h.manual_pause {
                    state.push("paused until resumed".to_string());
                } else if let Some(t) = h.paused_until {
                    state.push(format!("paused for {}", wait_until(t, now)));
                }
                if let Some(limit) = h.concurrency_limit {
                    state.push(format!(
                        "throttled to {limit} connection{} after a rate limit",
                        if limit == 1 { "" } else { "s" }
                    ));
                }
                println!(
                    "{}  {}  ({} pending){}",
                    h.host,
                    state.join(", "),
                    h.pending,
                    h.reason
                        .map(|r| format!(": {}", printable(&r)))
                        .unwrap_or_default()
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        HostsCommand::Pause { host } => {
            store.pause_host(&host, now)?;
            println!("host {host} paused");
            Ok(ExitCode::SUCCESS)
        }
        HostsCommand::Resume { host } => {
            if store.resume_host(&host, now)? {
                println!("host {host} resumed");
                Ok(ExitCode::SUCCESS)
            } else {
                eprintln!("host {host} was not paused");
                Ok(ExitCode::FAILURE)
            }
        }
    }
}

fn stats(store: &dyn Queue, json: bool, now: i64) -> anyhow::Result<ExitCode> {
    let s = store.stats(now)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&s)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "pending {} ({} waiting to retry)  running {}  done {}  dead {}  cancelled {}  total {}",
        s.pending, s.waiting, s.running, s.done, s.dead, s.cancelled, s.total
    );
    if let Some(o) = &s.offline {
        println!(
            "offline since {} ago: {} (retries are not spent while offline; next check in {})",
            wait_until(now, o.since),
            o.reason,
            wait_until(o.next_probe_at, now)
        );
    }
    if let Some(st) = &s.stalled {
        println!(
            "stalled since {} ago: {}; no job starts and no retry is spent until it clears (next check in {})",
            wait_until(now, st.since),
            st.reason,
            wait_until(st.next_probe_at, now)
        );
    }
    if s.queue_paused {
        println!("the queue is paused: `gleaner resume` starts it again");
    }
    for h in &s.throttled_hosts {
        if let Some(limit) = h.concurrency_limit {
            println!(
                "host {} throttled to {limit} connection{} after a rate limit",
                h.host,
                if limit == 1 { "" } else { "s" }
            );
        }
    }
    if let Some(t) = s.next_retry_at {
        println!("next retry in {}", wait_until(t, now));
    }
    for h in &s.paused_hosts {
        let until = match (h.manual, h.paused_until) {
            (true, _) => "until resumed".to_string(),
            (false, Some(t)) => format!("for {}", wait_until(t, now)),
            (false, None) => String::new(),
        };
        println!(
            "host {} paused {until}: {}",
            h.host,
            printable(h.reason.as_deref().unwrap_or("-"))
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// "60 s" from `now` until `t` (nothing left: "0 s").
pub(super) fn wait_until(t: i64, now: i64) -> String {
    policy::human_duration(Duration::from_millis((t - now).max(0) as u64))
}

pub(super) fn error_suffix(j: &Job) -> String {
    match (&j.error, j.status) {
        (Some(e), Status::Dead | Status::Pending) => format!("  ({})", printable(e)),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_durations_take_human_forms() {
        assert_eq!(parse_size("50MB"), Ok(50 * 1024 * 1024));
        assert_eq!(parse_size("512 KiB"), Ok(512 * 1024));
        assert_eq!(parse_size("1000"), Ok(1000));
        assert!(parse_size("5 parsecs").is_err());
        assert_eq!(parse_duration("200ms"), Ok(Duration::from_millis(200)));
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
        assert!(parse_duration("soon").is_err());
    }

    #[test]
    fn durations_and_sizes_out_of_range_are_refused_with_the_range() {
        // Once a panic (an Instant plus u64::MAX seconds), once a wrap (300 million years in
        // i64 milliseconds).
        assert_eq!(
            parse_timeout("18446744073709551615s"),
            Err("out of range: give a duration from 1ms to 1h".to_string())
        );
        assert_eq!(
            parse_max_job_age("300000000y"),
            Err("out of range: give a duration from 1s to 1year".to_string())
        );
        assert!(parse_base_delay("25h").is_err());
        assert!(parse_max_delay("0s").is_err());
        assert_eq!(
            parse_max_body("5GB"),
            Err("out of range: give a size from 1B to 4GB".to_string())
        );
        assert!(parse_max_body("0").is_err());
        assert!(parse_max_body("99999999999999999999").is_err());
        // The bounds are taken, and whatever a flag takes the policy accepts.
        assert_eq!(parse_timeout("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_base_delay("1ms"), Ok(Duration::from_millis(1)));
        assert_eq!(parse_max_body("4GB"), Ok(4 << 30));
        let widest = Policy {
            base_delay: parse_base_delay("24h").expect("in range"),
            max_delay: parse_max_delay("7days").expect("in range"),
            max_job_age: parse_max_job_age("1year").expect("in range"),
            timeout: parse_timeout("1h").expect("in range"),
            max_body: parse_max_body("4GB").expect("in range"),
            ..Policy::default()
        };
        assert_eq!(widest.check(), Ok(()));
        // And a stored policy out of range is refused as a flag would be.
        let stored = Policy {
            max_job_age: Duration::from_secs(300_000_000 * 31_557_600),
            ..Policy::default()
        };
        assert_eq!(
            stored.check().map_err(|e| e.to_string()),
            Err("the maximum job age must be from 1s to 1year".to_string())
        );
    }

    #[test]
    fn an_error_says_each_cause_once() {
        let io = std::io::Error::from_raw_os_error(17);
        let store = crate::engine::queue::QueueError::DataDir {
            path: "/tmp/afile".into(),
            source: io,
        };
        let e = anyhow::Error::new(store).context("cannot open the queue in /tmp/afile");
        assert_eq!(
            explain(&e),
            "cannot open the queue in /tmp/afile: cannot create the data folder /tmp/afile: \
             File exists (os error 17)"
        );
        // A cause its parent does not repeat is kept.
        let e = anyhow::anyhow!("inner").context("outer");
        assert_eq!(explain(&e), "outer: inner");
    }

    #[test]
    fn the_cli_definition_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
