//! The PostgreSQL server the tests use: `GLEANER_TEST_DATABASE_URL` (scripts/test.sh starts a
//! throwaway one and sets it). Each caller gets a schema of its own, so tests run in parallel
//! and never see each other's jobs or wake-ups.

use std::sync::atomic::{AtomicU64, Ordering};

use tokio_postgres::NoTls;

/// The variable that names the test server.
pub const TEST_DATABASE_ENV: &str = "GLEANER_TEST_DATABASE_URL";

/// A new, empty schema on the test server, as an address whose connections use it. Panics
/// when there is no server, saying how to get one: a suite that skips itself unseen is worse
/// than one that fails.
pub fn fresh_database_url() -> String {
    let Ok(base) = std::env::var(TEST_DATABASE_ENV) else {
        panic!(
            "the PostgreSQL half of the tests needs a server: run scripts/test.sh (it starts \
             one), or export {TEST_DATABASE_ENV}=postgres://user@host:port/database"
        );
    };
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let schema = format!(
        "t{}_{}_{nanos}",
        std::process::id(),
        COUNT.fetch_add(1, Ordering::Relaxed)
    );
    execute(&base, &format!("CREATE SCHEMA {schema}"));
    let sep = if base.contains('?') { '&' } else { '?' };
    format!("{base}{sep}options=-c%20search_path%3D{schema}")
}

/// Run `sql` (statements) on the database at `url`, as a test's way around the queue.
pub fn execute(url: &str, sql: &str) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    // A thread of its own: the caller may be inside a runtime (a tokio test).
    let (url, sql) = (url.to_string(), sql.to_string());
    std::thread::spawn(move || {
        rt.block_on(async move {
            let (client, connection) = url
                .parse::<tokio_postgres::Config>()
                .expect("a PostgreSQL address")
                .connect(NoTls)
                .await
                .unwrap_or_else(|e| panic!("cannot connect to the test server: {e}"));
            let driver = tokio::spawn(connection);
            client.batch_execute(&sql).await.expect("statements");
            drop(client);
            let _ = driver.await;
        })
    })
    .join()
    .expect("statement thread");
}

/// Another member's connection with a transaction that `sql` begins and leaves open (a row
/// locked, a write not yet committed), and the runtime that drives it: the test ends it with
/// `rt.block_on(client.batch_execute("COMMIT"))`, or by dropping them.
pub fn open_transaction(url: &str, sql: &str) -> (tokio::runtime::Runtime, tokio_postgres::Client) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let client = rt.block_on(async {
        let (client, connection) = url
            .parse::<tokio_postgres::Config>()
            .expect("address")
            .connect(NoTls)
            .await
            .expect("another member");
        tokio::spawn(connection);
        client
            .batch_execute(sql)
            .await
            .expect("the open transaction");
        client
    });
    (rt, client)
}

/// The variable that names the root certificate of the test server's TLS certificate.
pub const TEST_ROOT_CERT_ENV: &str = "GLEANER_TEST_PG_ROOTCERT";

/// The test server's authority (PEM), and beside it `other-root.crt`, an authority that
/// signed nothing the server has. Panics, saying how to get them, when the server was not
/// started by scripts/postgres-for-tests.sh.
pub fn test_root_cert() -> std::path::PathBuf {
    let Ok(path) = std::env::var(TEST_ROOT_CERT_ENV) else {
        panic!(
            "the TLS tests need the test server's root certificate: run scripts/test.sh (it \
             makes one), or export {TEST_ROOT_CERT_ENV}=/path/to/root.crt for your server"
        );
    };
    path.into()
}
