//! Helpers shared by the SQLite queue's unit tests.

use rusqlite::Connection;

use super::Store;
use crate::engine::queue::NewJob;

pub(crate) fn job(url: &str) -> NewJob {
    let host = url::Url::parse(url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_string))
        .unwrap_or_default();
    NewJob {
        url: url.into(),
        url_key: url.into(),
        host,
        reference: None,
    }
}

/// `f`'s SQLite VM instructions on this store's connection, to the nearest 10.
pub(crate) fn vm_ops<T>(s: &Store, f: impl FnOnce() -> T) -> (T, u64) {
    use std::sync::atomic::{AtomicU64, Ordering};
    let count = std::sync::Arc::new(AtomicU64::new(0));
    let counter = count.clone();
    s.conn().expect("conn").progress_handler(
        10,
        Some(move || {
            counter.fetch_add(10, Ordering::Relaxed);
            false
        }),
    );
    let out = f();
    s.conn()
        .expect("conn")
        .progress_handler(10, None::<fn() -> bool>);
    (out, count.load(Ordering::Relaxed))
}

/// The lines of `EXPLAIN QUERY PLAN` for `sql` with `args`.
pub(crate) fn query_plan(conn: &Connection, sql: &str, args: impl rusqlite::Params) -> String {
    let rows: Vec<String> = conn
        .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
        .expect("prepare")
        .query_map(args, |r| r.get::<_, String>(3))
        .expect("plan")
        .collect::<rusqlite::Result<_>>()
        .expect("rows");
    rows.join("\n")
}
