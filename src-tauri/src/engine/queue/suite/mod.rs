//! The queue's behaviour, written once against [`Queue`] and run against every backend: each
//! test is a module with one test per backend, `sqlite` (a database in memory) and `postgres`
//! (a schema of its own on the test server, see [`crate::engine::postgres::testing`]).

use crate::engine::postgres::PgStore;
use crate::engine::postgres::testing::fresh_database_url;
use crate::engine::sqlite::Store;

mod actions;
mod claim;
mod enqueue;
mod hosts;
mod outcomes;
pub(crate) mod search;
mod stages;
mod stall;
pub(crate) mod tags;

/// A queue of each kind, empty.
pub(crate) fn sqlite() -> Store {
    Store::open_in_memory().expect("SQLite store")
}

pub(crate) fn postgres() -> PgStore {
    PgStore::open(&fresh_database_url(), "test-member").expect("PostgreSQL store")
}

/// `fn name(s) { … }` becomes the module `name` with the tests `sqlite` and `postgres`, each
/// running the body with `s: &dyn Queue` on a new, empty queue of its kind.
macro_rules! on_every_backend {
    ($($(#[$meta:meta])* fn $name:ident($s:ident) $body:block)*) => {
        $(
            $(#[$meta])*
            mod $name {
                #[allow(unused_imports)]
                use super::*;

                fn run($s: &dyn crate::engine::queue::Queue) $body

                #[test]
                fn sqlite() {
                    run(&crate::engine::queue::suite::sqlite())
                }

                #[test]
                fn postgres() {
                    run(&crate::engine::queue::suite::postgres())
                }
            }
        )*
    };
}
pub(crate) use on_every_backend;
