//! The queue in PostgreSQL, shared by every member of a lab (docs/ARCHITECTURE.md, "The queue
//! on PostgreSQL"). Each step is one transaction, as in SQLite; the claim is one call of the
//! `gleaner_claim` function (migration 0001), which takes jobs with `FOR UPDATE SKIP LOCKED`
//! and counts a host's connections under a lock on its row, so limits hold across machines.
//! Changes that make work available send a `NOTIFY`, which [`PgStore::subscribe`] turns into
//! wake-ups.
//!
//! The [`Queue`](crate::engine::queue::Queue) steps are blocking, and tokio-postgres is async:
//! the store owns a small runtime that drives its connections, and each step blocks on its
//! future there (from a thread of its own when the caller is inside another runtime).

use std::future::Future;

use deadpool_postgres::{HookError, Manager, ManagerConfig, Pool, RecyclingMethod};

use crate::engine::queue::{QueueError, Result};

mod actions;
mod connect;
mod documents;
mod hosts;
mod library;
mod listen;
mod migrations;
mod outcomes;
mod queue_impl;
mod reads;
mod rows;
mod step;
#[doc(hidden)]
pub mod testing;
mod tls;

pub use connect::{MASK, describe_url, is_postgres_url, replace_secrets};
pub use documents::{PDF_MAX_DEFAULT, PDF_MAX_SETTING};

/// Connections a process keeps: the worker's steps, the window's reads and a heartbeat.
const POOL_SIZE: usize = 8;

/// What the async code of every concern shares.
pub(crate) struct Db {
    pool: Pool,
    config: tokio_postgres::Config,
    /// This member of the lab (its machine and data folder): what it finds about its own
    /// machine (offline, stalled) is kept under this name.
    member: String,
    /// The channel of this database's (and schema's) wake-ups.
    channel: String,
    /// The channel as an SQL literal, for a notice sent inside a batch of statements.
    channel_literal: String,
    /// The address without its password, for sentences.
    described: String,
    /// TLS as the address's `sslmode` asks, for every connection.
    tls: tokio_postgres_rustls::MakeRustlsConnect,
    /// How much of the server's certificate is checked, for sentences.
    check: tls::Check,
    /// Whether the worker's steps commit without waiting for the server's disk (see
    /// [`STEP_COMMIT_ENV`]).
    fast_steps: bool,
    /// How long one call (a step, a read) may wait for the server; none while opening.
    answer_timeout: Option<std::time::Duration>,
}

/// `GLEANER_PG_SYNCHRONOUS_COMMIT=on` makes the worker's steps wait for the server's disk at
/// each commit, as the server's other transactions do. By default they do not (PostgreSQL's
/// `synchronous_commit = off` for those transactions alone), as SQLite's queue runs at
/// `synchronous = NORMAL`: a crash of the server may forget the last fraction of a second of
/// outcomes and claims, whose jobs are then fetched again; nothing is corrupted, and intake and
/// manual actions stay durable (docs/ARCHITECTURE.md).
pub const STEP_COMMIT_ENV: &str = "GLEANER_PG_SYNCHRONOUS_COMMIT";

/// The PostgreSQL queue of one process.
pub struct PgStore {
    db: Db,
    rt: Option<tokio::runtime::Runtime>,
    /// This member's library folder, which the database's relative paths are in.
    paths: documents::Paths,
    /// The largest PDF shared through the database.
    pdf_max: u64,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("database", &self.db.described)
            .field("member", &self.db.member)
            .finish()
    }
}

impl Drop for PgStore {
    fn drop(&mut self) {
        // A runtime cannot be dropped (which blocks) inside another runtime's task.
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

impl PgStore {
    /// Connect to the database at `url` as `member`, and bring its schema up to date. Every
    /// way this can fail is one sentence ([`QueueError::Connect`],
    /// [`QueueError::NewerPostgresSchema`]), and nothing is written before the connection and
    /// the schema's version are known to be good.
    pub fn open(url: &str, member: &str) -> Result<Self> {
        Self::open_at(url, member, None)
    }

    /// As [`PgStore::open`], for a member whose library folder is `library`: the documents'
    /// paths are kept relative to it, and the ones it reads are in it.
    pub fn open_at(url: &str, member: &str, library: Option<&std::path::Path>) -> Result<Self> {
        let (mut config, tls) = connect::parse(url)?;
        connect::tune(&mut config);
        let described = describe_url(url);
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("gleaner-postgres")
            .enable_all()
            .build()
            .map_err(|e| QueueError::Connect(format!("cannot start the database driver: {e}")))?;
        let manager = Manager::from_config(
            config.clone(),
            tls.connector.clone(),
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let settings = connect::session_settings(&config);
        let pool = Pool::builder(manager)
            .post_create(deadpool_postgres::Hook::async_fn(move |client, _| {
                let settings = settings.clone();
                Box::pin(async move {
                    if !settings.is_empty() {
                        client
                            .batch_execute(&settings)
                            .await
                            .map_err(HookError::Backend)?;
                    }
                    Ok(())
                })
            }))
            .max_size(POOL_SIZE)
            .runtime(deadpool_postgres::Runtime::Tokio1)
            .create_timeout(Some(connect::CONNECT_TIMEOUT))
            .wait_timeout(Some(connect::WAIT_TIMEOUT))
            .build()
            .map_err(|e| {
                QueueError::Connect(format!("cannot set up connections to {described}: {e}"))
            })?;
        let mut store = Self {
            db: Db {
                pool,
                config,
                member: member.to_string(),
                channel: String::new(),
                channel_literal: String::new(),
                described,
                tls: tls.connector,
                check: tls.check,
                fast_steps: std::env::var(STEP_COMMIT_ENV).map_or(true, |v| v.trim() != "on"),
                // Bringing a large schema up to date may take longer.
                answer_timeout: None,
            },
            rt: Some(rt),
            paths: documents::Paths {
                root: library.map(std::path::Path::to_path_buf),
            },
            pdf_max: documents::PDF_MAX_DEFAULT,
        };
        let channel = store.block(|| async {
            let mut client = store.db.client().await?;
            migrations::migrate(&mut client).await?;
            // The tables' schema, which the claim function names too (migration 0008).
            let row = client.query_one("SELECT gleaner_channel()", &[]).await?;
            Ok(row.get::<_, String>(0))
        })?;
        store.db.channel_literal = string_literal(&channel);
        store.db.channel = channel;
        store.pdf_max = store.block(|| documents::pdf_max(&store.db))?;
        let split = store.block(|| library::split_words(&store.db))?;
        if split > 0 {
            tracing::info!("{split} documents of the search index brought up to date");
        }
        store.db.answer_timeout = Some(connect::ANSWER_TIMEOUT);
        Ok(store)
    }

    /// How long one call may wait for the server ([`connect::ANSWER_TIMEOUT`]): shorter in
    /// tests.
    #[doc(hidden)]
    pub fn set_answer_timeout(&mut self, limit: std::time::Duration) {
        self.db.answer_timeout = Some(limit);
    }

    /// As [`PgStore::block`], with no limit on the wait: work whose length grows with the
    /// library (a reindex) or with what the user gave (an intake of 10,000 links). TCP
    /// keepalives and `tcp_user_timeout` still find a peer that vanished.
    fn block_unlimited<T, F>(&self, make: impl Fn() -> F + Sync) -> Result<T>
    where
        T: Send,
        F: Future<Output = Result<T>> + Send,
    {
        self.block_within(None, make)
    }

    /// Run a step's future to its end: on the store's runtime, from this thread, or from a
    /// thread of its own when this one is inside a runtime already (the window's commands). A
    /// transaction PostgreSQL broke off to end a deadlock is tried again. A server that does
    /// not answer within the answer timeout is an error (the worker pauses, saying so).
    fn block<T, F>(&self, make: impl Fn() -> F + Sync) -> Result<T>
    where
        T: Send,
        F: Future<Output = Result<T>> + Send,
    {
        self.block_within(self.db.answer_timeout, make)
    }

    fn block_within<T, F>(
        &self,
        limit: Option<std::time::Duration>,
        make: impl Fn() -> F + Sync,
    ) -> Result<T>
    where
        T: Send,
        F: Future<Output = Result<T>> + Send,
    {
        let make = || async {
            let Some(limit) = limit else {
                return make().await;
            };
            match tokio::time::timeout(limit, make()).await {
                Ok(out) => out,
                Err(_) => {
                    // The connection the call was on may be mid-transaction or mid-message:
                    // none that is idle now is used again.
                    self.db.pool.retain(|_, _| false);
                    Err(QueueError::Connect(format!(
                        "the PostgreSQL server at {} did not answer for {} s; check that it \
                         runs and that this machine can reach it",
                        self.db.described,
                        limit.as_secs_f32()
                    )))
                }
            }
        };
        let Some(rt) = self.rt.as_ref() else {
            return Err(QueueError::Connect(
                "the database driver has stopped".into(),
            ));
        };
        let mut tries = 0;
        loop {
            let out = if tokio::runtime::Handle::try_current().is_ok() {
                std::thread::scope(|s| {
                    s.spawn(|| rt.block_on(make()))
                        .join()
                        .unwrap_or(Err(QueueError::Poisoned))
                })
            } else {
                rt.block_on(make())
            };
            match out {
                Err(e) if e.is_retryable() && tries < 8 => {
                    tries += 1;
                    tracing::debug!(error = %e, "trying a transaction again");
                }
                other => return other,
            }
        }
    }

    /// The member name this store writes its machine's findings under.
    pub fn member(&self) -> &str {
        &self.db.member
    }
}

impl Db {
    /// A pooled connection; a connection that cannot be had is one sentence.
    async fn client(&self) -> Result<deadpool_postgres::Object> {
        self.pool.get().await.map_err(|e| connect::explain(self, e))
    }

    /// Wake every member's worker when this transaction commits.
    async fn notify(&self, tx: &impl rows::Conn) -> Result<()> {
        tx.exec("SELECT pg_notify($1, '')", &[&self.channel])
            .await?;
        Ok(())
    }
}

/// `text` as an SQL string literal. An escape string, whose backslashes mean the same whatever
/// the session's `standard_conforming_strings`.
fn string_literal(text: &str) -> String {
    format!("E'{}'", text.replace('\\', "\\\\").replace('\'', "''"))
}

/// Run `$body` (which uses `$tx`) in one transaction of `$db`, committing when it returns Ok.
macro_rules! transaction {
    ($db:expr, |$tx:ident| $body:expr) => {{
        let mut client = $db.client().await?;
        let $tx = client.transaction().await?;
        let out = $body;
        $tx.commit().await?;
        Ok(out)
    }};
}
pub(crate) use transaction;

/// A member name for this machine's `data_dir`: the host name and the folder, so two data
/// folders on one machine are two members.
pub fn member_name(data_dir: &std::path::Path) -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "localhost".into());
    // Absolute, and the same whether the folder exists yet or not.
    let dir = std::path::absolute(data_dir).unwrap_or_else(|_| data_dir.to_path_buf());
    format!("{host}:{}", dir.display())
}
