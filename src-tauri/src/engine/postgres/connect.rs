//! The database's address, and every way a connection to it can fail, as one sentence that
//! says what is wrong. The password never appears in one.

use std::time::Duration;

use deadpool_postgres::PoolError;
use tokio_postgres::error::SqlState;

use super::Db;
use super::tls::{self, Tls};
use crate::engine::queue::QueueError;

/// How long a new connection may take before the server counts as unreachable.
pub(super) const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a step waits for a free connection of the pool.
pub(super) const WAIT_TIMEOUT: Duration = Duration::from_secs(30);
/// How long one call of the store (a step, a read) may wait for the server: the backstop for
/// a connection that is silent without being dropped (the kernel's limit,
/// `tcp_user_timeout`, catches data sent and never acknowledged; this, a peer that
/// acknowledges and never answers). A step that uploads gets more ([`upload_limit`]).
pub(super) const ANSWER_TIMEOUT: Duration = Duration::from_secs(120);
/// The slowest uplink a step's upload is given time for (bytes a second): a step that sends
/// documents may take [`ANSWER_TIMEOUT`] plus this long per byte, so a 25 MiB PDF has 7 min.
const SLOWEST_UPLINK: u64 = 64 * 1024;

/// How long a call that sends `bytes` may wait for the server: `base`, plus their time up the
/// slowest uplink given time for.
pub(super) fn upload_limit(base: Duration, bytes: u64) -> Duration {
    base + Duration::from_secs(bytes / SLOWEST_UPLINK)
}

/// How long data sent may go unacknowledged before the connection counts as dropped.
const TCP_USER_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a statement waits for a row another member holds (`lock_timeout`): a member
/// whose transaction stalls (a slow uplink, a laptop suspended mid-step) holds up the others
/// this long at most, and the waiting step is tried again (`QueueError::is_retryable`).
pub(super) const LOCK_TIMEOUT: &str = "5s";
/// How long the server keeps a transaction whose member went silent in the middle of it
/// (`idle_in_transaction_session_timeout`): its locks go with it. A step that uploads raises
/// it for its own transaction (the server counts a message still arriving as silence).
pub(super) const IDLE_IN_TRANSACTION_TIMEOUT: &str = "60s";

/// Whether `value` names a PostgreSQL database (rather than, say, a path).
pub fn is_postgres_url(value: &str) -> bool {
    value.starts_with("postgres://") || value.starts_with("postgresql://")
}

/// The address as the driver reads it, and the TLS its `sslmode` asks for.
pub(super) fn parse(url: &str) -> Result<(tokio_postgres::Config, Tls), QueueError> {
    if !is_postgres_url(url) {
        return Err(QueueError::Connect(format!(
            "{} is not a PostgreSQL address: give one like postgres://user:password@host:5432/gleaner",
            describe_url(url)
        )));
    }
    let tls = tls::from_url(url)?;
    let config = tls
        .driver_url
        .parse::<tokio_postgres::Config>()
        .map_err(|e| {
            QueueError::Connect(format!(
                "{} is not a valid PostgreSQL address ({e}): give one like \
             postgres://user:password@host:5432/gleaner",
                describe_url(url)
            ))
        })?;
    Ok((config, tls))
}

/// Time limits the address did not set: a server that does not answer is found out in
/// seconds, and a connection whose peer vanished (a machine unplugged) is dropped.
pub(super) fn tune(config: &mut tokio_postgres::Config) {
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(CONNECT_TIMEOUT);
    }
    config.keepalives(true);
    config.keepalives_idle(Duration::from_secs(30));
    // A silent peer (packets dropped) is found in about a minute, not the kernel's 15.
    config.keepalives_interval(Duration::from_secs(10));
    config.keepalives_retries(3);
    config.tcp_user_timeout(TCP_USER_TIMEOUT);
    if config.get_application_name().is_none() {
        config.application_name("gleaner");
    }
}

/// The server settings the address's `options` did not set, as the statements every new
/// connection runs before its first use. Set after connecting, not sent as startup `options`:
/// PgBouncer and Neon's pooler refuse a connection whose startup `options` they do not track
/// (`unsupported startup parameter in options`).
pub(super) fn session_settings(config: &tokio_postgres::Config) -> String {
    let options = config.get_options().unwrap_or_default();
    [
        ("lock_timeout", LOCK_TIMEOUT),
        (
            "idle_in_transaction_session_timeout",
            IDLE_IN_TRANSACTION_TIMEOUT,
        ),
    ]
    .into_iter()
    .filter(|(name, _)| !options.contains(name))
    .map(|(name, value)| format!("SET {name} = '{value}';"))
    .collect::<Vec<_>>()
    .join(" ")
}

/// What stands for a password in a described address.
pub const MASK: &str = "***";

/// A query parameter that holds a secret (`password`, `sslpassword`).
fn is_secret(key: &str) -> bool {
    key.to_ascii_lowercase().contains("password")
}

/// The address with its passwords replaced, for messages and logs: the one before the host
/// and any in the query (`?password=…`, which the driver reads too).
pub fn describe_url(url: &str) -> String {
    match url::Url::parse(url) {
        // Not an address with a host ("user:secret@host" parses as a scheme and a path).
        Ok(u) if !u.has_host() && url.contains('@') => "the database address".into(),
        Ok(mut u) => {
            if u.password().is_some() {
                let _ = u.set_password(Some(MASK));
            }
            replace_secrets(&mut u, |_, _| MASK.to_string());
            u.to_string()
        }
        // Not a URL at all: say so without echoing what may be a secret.
        Err(_) if url.contains('@') || is_secret(url) => "the database address".into(),
        Err(_) => format!("\"{url}\""),
    }
}

/// Give every secret query parameter of `u` the value `with(key, value)`, both as written in
/// the query (percent-encoded). The other parameters keep their bytes: rebuilding the query as
/// a form would write a space as `+`, which the driver reads as a `+`.
pub fn replace_secrets(u: &mut url::Url, with: impl Fn(&str, &str) -> String) {
    let Some(query) = u.query() else { return };
    if !query
        .split('&')
        .any(|pair| is_secret(pair.split('=').next().unwrap_or("")))
    {
        return;
    }
    let rebuilt: Vec<String> = query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((key, value)) if is_secret(key) => format!("{key}={}", with(key, value)),
            _ => pair.to_string(),
        })
        .collect();
    u.set_query(Some(&rebuilt.join("&")));
}

/// A pooled connection that could not be had, in a sentence.
pub(super) fn explain(db: &Db, e: PoolError) -> QueueError {
    let at = &db.described;
    match e {
        PoolError::Backend(e) => explain_connect(db, at, e),
        PoolError::Timeout(_) => QueueError::Connect(format!(
            "the PostgreSQL server at {at} did not answer in time; check that it runs and that \
             this machine can reach it"
        )),
        other => QueueError::Connect(format!("cannot connect to PostgreSQL at {at}: {other}")),
    }
}

fn explain_connect(db: &Db, at: &str, e: tokio_postgres::Error) -> QueueError {
    let user = db.config.get_user().unwrap_or("(the current user)");
    let dbname = db.config.get_dbname().unwrap_or(user);
    if let Some(code) = e.code() {
        let sentence = if *code == SqlState::INVALID_PASSWORD
            || *code == SqlState::INVALID_AUTHORIZATION_SPECIFICATION
        {
            format!(
                "PostgreSQL at {at} refused the user \"{user}\": the password is wrong, or the \
                 server does not let this user in; check the user and password in the address"
            )
        } else if *code == SqlState::INVALID_CATALOG_NAME {
            format!(
                "the PostgreSQL server at {at} has no database \"{dbname}\"; create it \
                 (createdb {dbname}) or give another database in the address"
            )
        } else if *code == SqlState::TOO_MANY_CONNECTIONS {
            format!("the PostgreSQL server at {at} has no connection to spare; try again later")
        } else {
            return QueueError::Postgres(e);
        };
        return QueueError::Connect(sentence);
    }
    let chain = crate::engine::policy::error_chain(&e);
    let lower = chain.to_ascii_lowercase();
    let sentence = if lower.contains("connection refused") {
        format!(
            "cannot connect to PostgreSQL at {at}: the connection was refused; check that the \
             server runs and listens on that host and port"
        )
    } else if lower.contains("timed out") || lower.contains("timeout") {
        format!(
            "cannot connect to PostgreSQL at {at}: it did not answer in time; check the host and \
             that this machine can reach it"
        )
    } else if lower.contains("failed to lookup") || lower.contains("name or service not known") {
        format!("cannot connect to PostgreSQL at {at}: the host name is not known")
    } else if lower.contains("unknownissuer") || lower.contains("badsignature") {
        format!(
            "cannot connect to PostgreSQL at {at}: its certificate is not signed by an \
             authority this machine trusts; give the server's root certificate in the address \
             (sslrootcert=/path/to/root.crt)"
        )
    } else if lower.contains("notvalidforname") || lower.contains("not valid for name") {
        format!(
            "cannot connect to PostgreSQL at {at}: its certificate is for another host name; \
             use the name the certificate gives, or sslmode=verify-ca to check the signature only"
        )
    } else if lower.contains("certificate expired")
        || lower.contains("not valid yet")
        || lower.contains("notvalidyet")
    {
        format!(
            "cannot connect to PostgreSQL at {at}: its certificate has expired or is not yet valid"
        )
    } else if lower.contains("does not support tls") {
        format!(
            "cannot connect to PostgreSQL at {at}: the server does not offer TLS, and the \
             address asks for it (sslmode={})",
            db.check.mode_name()
        )
    } else if lower.contains("tls") || lower.contains("ssl") || lower.contains("certificate") {
        format!("cannot connect to PostgreSQL at {at}: the TLS handshake failed: {chain}")
    } else {
        format!("cannot connect to PostgreSQL at {at}: {chain}")
    };
    QueueError::Connect(sentence)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_password_never_appears_in_a_description() {
        let d = describe_url("postgres://ann:s3cret@db.lab:5432/gleaner");
        assert!(!d.contains("s3cret"), "{d}");
        assert!(
            d.contains("ann") && d.contains("db.lab:5432/gleaner"),
            "{d}"
        );
        assert!(!describe_url("ann:s3cret@db.lab").contains("s3cret"));
        // The driver also takes the password as a query parameter.
        for url in [
            "postgres://ann@db.lab/gleaner?password=s3cret",
            "postgres://db.lab/gleaner?user=ann&password=s3cret&sslmode=require",
            "postgres://db.lab/gleaner?sslpassword=s3cret",
            "host=db.lab password=s3cret",
        ] {
            let d = describe_url(url);
            assert!(!d.contains("s3cret"), "{d}");
        }
        assert_eq!(
            describe_url("postgres://db.lab/gleaner?user=ann&password=s3cret&sslmode=require"),
            "postgres://db.lab/gleaner?user=ann&password=***&sslmode=require"
        );
        // The other parameters keep their bytes (a form would write `%20` as `+`).
        assert_eq!(
            describe_url("postgres://db/g?options=-c%20search_path%3Dx&password=my%20pw"),
            "postgres://db/g?options=-c%20search_path%3Dx&password=***"
        );
    }

    #[test]
    fn a_wrong_address_is_one_sentence() {
        for bad in [
            "mysql://x@y/z",
            "/home/ann/gleaner.db",
            "postgres://h:notaport/db",
        ] {
            let e = parse(bad).expect_err(bad).to_string();
            assert!(e.contains("PostgreSQL address"), "{bad}: {e}");
            assert_eq!(e.lines().count(), 1, "{e}");
        }
    }

    use crate::engine::postgres::PgStore;
    use crate::engine::postgres::testing::{execute, fresh_database_url};

    /// The test server's address with one part changed.
    fn altered(change: impl FnOnce(&mut url::Url)) -> String {
        let mut u = url::Url::parse(&fresh_database_url()).expect("url");
        change(&mut u);
        u.to_string()
    }

    fn refusal(url: &str) -> String {
        let e = PgStore::open(url, "m").expect_err("refused").to_string();
        assert_eq!(e.lines().count(), 1, "{e}");
        assert!(!e.contains("s3cret"), "{e}");
        e
    }

    #[test]
    fn a_refused_connection_is_one_sentence() {
        // Port 1 on loopback: nothing listens there.
        let e = refusal(&altered(|u| {
            let _ = u.set_port(Some(1));
        }));
        assert!(e.contains("the connection was refused"), "{e}");
    }

    #[test]
    fn a_missing_database_is_one_sentence() {
        let e = refusal(&altered(|u| u.set_path("/no_such_database")));
        assert!(e.contains("has no database \"no_such_database\""), "{e}");
    }

    #[test]
    fn wrong_credentials_are_one_sentence() {
        let e = refusal(&altered(|u| {
            let _ = u.set_username("nobody_here");
            let _ = u.set_password(Some("s3cret"));
        }));
        assert!(e.contains("refused the user \"nobody_here\""), "{e}");
    }

    /// A setting as a pooled connection of `store` sees it.
    fn show(store: &PgStore, name: &str) -> String {
        let sql = format!("SHOW {name}");
        store
            .block(|| async {
                let client = store.db.client().await?;
                Ok(client.query_one(&sql, &[]).await?.get::<_, String>(0))
            })
            .expect("show")
    }

    /// Poolers (PgBouncer, Neon's) refuse startup `options` they do not track: the time limits
    /// are set on each new connection instead, and the address's own settings win.
    #[test]
    fn time_limits_are_set_after_connecting_not_sent_as_startup_options() {
        let url = fresh_database_url();
        let (mut config, _) = parse(&url).expect("address");
        let ours = config.get_options().map(str::to_string);
        tune(&mut config);
        assert_eq!(config.get_options().map(str::to_string), ours);
        assert!(!ours.unwrap_or_default().contains("lock_timeout"));
        let store = PgStore::open(&url, "m").expect("open");
        assert_eq!(show(&store, "lock_timeout"), "5s");
        assert_eq!(show(&store, "idle_in_transaction_session_timeout"), "1min");
        drop(store);
        // An address that sets one keeps its own value.
        let own = format!("{url}%20-c%20lock_timeout%3D300");
        let store = PgStore::open(&own, "m").expect("open");
        let timeout = show(&store, "lock_timeout");
        assert_eq!(timeout, "300ms");
    }

    #[test]
    fn a_database_from_a_newer_gleaner_is_refused_and_left_alone() {
        let url = fresh_database_url();
        drop(PgStore::open(&url, "m").expect("first open"));
        execute(&url, "INSERT INTO gleaner_schema (version) VALUES (99)");
        let e = PgStore::open(&url, "m").expect_err("newer").to_string();
        assert!(e.contains("newer Gleaner (schema version 99"), "{e}");
        // Nothing was written: a version it does not know is not one it upgrades from.
        let rows = crate::engine::postgres::migrations::MIGRATIONS.len() + 1;
        execute(
            &url,
            &format!(
                "DO $$ BEGIN IF (SELECT count(*) FROM gleaner_schema) <> {rows} THEN \
                     RAISE EXCEPTION 'the schema table changed'; END IF; END $$"
            ),
        );
    }
}
