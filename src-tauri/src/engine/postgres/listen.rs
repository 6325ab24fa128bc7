//! Wake-ups from other members: a connection of its own that `LISTEN`s on the database's
//! channel, which every change that makes work available notifies (no polling). A lost
//! connection is made again with backoff, and the worker is woken once it is back, since a
//! change may have come while it was away.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt as _;
use tokio::sync::Notify;
use tokio_postgres::AsyncMessage;
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::engine::queue::Subscription;

/// Stops the listening task when the subscription is dropped.
struct Listening(tokio::task::AbortHandle);

impl Drop for Listening {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The longest wait between two attempts to listen again.
const RETRY_MAX: Duration = Duration::from_secs(30);

/// The statement that listens on `channel`.
pub(super) fn statement(channel: &str) -> String {
    format!("LISTEN \"{}\"", channel.replace('"', "\"\""))
}

/// Forward the notifications of `first` (a listening connection, see [`connect`]) and of the
/// connections made after it, for as long as the subscription is kept.
pub(super) fn spawn(
    rt: &tokio::runtime::Runtime,
    (config, tls): (tokio_postgres::Config, MakeRustlsConnect),
    listen: String,
    wake: Arc<Notify>,
    first: impl std::future::Future<Output = ()> + Send + 'static,
) -> Subscription {
    let task = rt.spawn(async move {
        let mut current: Option<futures_util::future::BoxFuture<'static, ()>> =
            Some(Box::pin(first));
        let mut wait = Duration::from_secs(1);
        loop {
            if let Some(done) = current.take() {
                // Runs until the connection ends.
                done.await;
                wake.notify_one();
            }
            tokio::time::sleep(wait).await;
            match connect(&config, &tls, &listen, &wake).await {
                Ok(done) => {
                    wait = Duration::from_secs(1);
                    wake.notify_one();
                    current = Some(Box::pin(done));
                }
                Err(e) => {
                    tracing::debug!(error = %e, "cannot listen for other members' changes yet");
                    wait = (wait * 2).min(RETRY_MAX);
                }
            }
        }
    });
    Subscription::new(Listening(task.abort_handle()))
}

/// Connect and listen; the future that forwards notifications until the connection ends.
pub(super) async fn connect(
    config: &tokio_postgres::Config,
    tls: &MakeRustlsConnect,
    listen: &str,
    wake: &Arc<Notify>,
) -> std::result::Result<
    impl std::future::Future<Output = ()> + Send + 'static,
    tokio_postgres::Error,
> {
    let (client, mut connection) = config.connect(tls.clone()).await?;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let driver = tokio::spawn(async move {
        let mut messages = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
        while let Some(message) = messages.next().await {
            match message {
                Ok(AsyncMessage::Notification(_)) => {
                    if tx.send(()).is_err() {
                        break;
                    }
                }
                Ok(_) => {}
                Err(_) => break,
            }
        }
    });
    client.batch_execute(listen).await?;
    let wake = wake.clone();
    Ok(async move {
        // The client must live as long as the connection listens.
        let _client = client;
        while rx.recv().await.is_some() {
            wake.notify_one();
        }
        driver.abort();
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use crate::engine::postgres::PgStore;
    use crate::engine::postgres::testing::{TEST_DATABASE_ENV, execute, fresh_database_url};
    use crate::engine::queue::Queue;
    use crate::engine::sqlite::testing::job;

    /// The queue's tables in a schema named at PostgreSQL's longest (63 bytes), and a member
    /// with another schema first in its search path: another member's intake still wakes it.
    /// The channel was `gleaner_` and the search path's first schema, which differed between
    /// the two, and was too long for a channel past 55 bytes (every `pg_notify` failed).
    #[test]
    fn an_intake_wakes_a_member_whatever_the_schemas_name() {
        let base = std::env::var(TEST_DATABASE_ENV).expect("test server");
        // A fresh schema's unique name, made long.
        let short = fresh_database_url();
        let unique = short.rsplit("%3D").next().expect("schema").to_string();
        let long = format!("{unique}_{}", "x".repeat(62 - unique.len()));
        let first = format!("{unique}_first");
        execute(
            &base,
            &format!("CREATE SCHEMA {long}; CREATE SCHEMA {first}"),
        );
        let sep = if base.contains('?') { '&' } else { '?' };
        // One member has another schema first in its path, the other not.
        let other = PgStore::open(
            &format!("{base}{sep}options=-c%20search_path%3D{long}"),
            "n",
        )
        .expect("open the other");
        let url = format!("{base}{sep}options=-c%20search_path%3D{first},{long}");
        let here = PgStore::open(&url, "m").expect("open");
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let _in_runtime = rt.enter();
        let wake = Arc::new(tokio::sync::Notify::new());
        let _subscription = here.subscribe(wake.clone()).expect("subscribe");
        // A wake-up the new subscription may give at once is not the one looked for.
        let _ = rt.block_on(tokio::time::timeout(
            Duration::from_millis(500),
            wake.notified(),
        ));
        other
            .enqueue(None, &[job("http://a.example/1")], 5, 0)
            .expect("enqueue");
        rt.block_on(tokio::time::timeout(
            Duration::from_secs(10),
            wake.notified(),
        ))
        .expect("the intake woke the listening member");
    }

    /// What another member does by hand, or finds about its machine, reaches this member's
    /// window: a host paused, jobs deleted, tags set, the machine offline. None of these sent
    /// a wake-up, so the other windows showed the old state until something else changed.
    #[test]
    fn changes_made_by_hand_on_one_member_wake_the_others() {
        let url = fresh_database_url();
        let here = PgStore::open(&url, "m").expect("open");
        let other = PgStore::open(&url, "n").expect("open the other");
        other
            .enqueue(
                None,
                &[job("http://a.example/1"), job("http://a.example/2")],
                5,
                0,
            )
            .expect("enqueue");
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let _in_runtime = rt.enter();
        let wake = Arc::new(tokio::sync::Notify::new());
        let _subscription = here.subscribe(wake.clone()).expect("subscribe");
        let settle = || {
            let _ = rt.block_on(tokio::time::timeout(
                Duration::from_millis(500),
                wake.notified(),
            ));
        };
        let offline = crate::engine::queue::OfflineState {
            since: 0,
            next_probe_at: 1_000,
            probes: 0,
            reason: "the network is down".into(),
            worker: "w".into(),
        };
        let changes: [(&str, &dyn Fn()); 4] = [
            ("a host paused", &|| {
                other.pause_host("a.example", 0).expect("pause")
            }),
            ("tags set", &|| {
                other
                    .set_tags(1, &["thesis".to_string()])
                    .expect("tags")
                    .expect("a job");
            }),
            ("a job deleted", &|| {
                other.delete(&[2]).expect("delete");
            }),
            ("the machine offline", &|| {
                other.set_offline(Some(&offline)).expect("offline");
            }),
        ];
        for (what, change) in changes {
            settle();
            change();
            rt.block_on(tokio::time::timeout(
                Duration::from_secs(5),
                wake.notified(),
            ))
            .unwrap_or_else(|_| panic!("{what} woke no one"));
        }
    }
}
