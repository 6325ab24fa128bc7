//! The engine: everything Gleaner does without a window. No module here imports `tauri`.
//!
//! - [`store`]: the durable SQLite queue (jobs, attempts, hosts, batches, settings).
//! - [`policy`]: classification of outcomes, backoff, Retry-After.
//! - [`fetch`]: one bounded HTTP GET with reqwest.
//! - [`intake`]: finding and vetting URLs in free text.
//! - [`worker`]: the async loop that claims, fetches and commits.
//! - [`extract`]: readable text and metadata from HTML, PDF and text bodies.
//! - [`library`]: documents written to disk.
//! - [`export`]: the library as JSON Lines.
//! - [`clock`]: the injected notion of "now".

pub mod clock;
pub mod export;
pub mod extract;
pub mod fetch;
pub mod intake;
pub mod library;
pub mod policy;
pub mod store;
pub mod worker;
