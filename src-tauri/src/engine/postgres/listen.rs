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
