//! paimon-rs-core: an engine for Apache Paimon tables (format, write path, merge read, commit).
//! Synchronous API, no Python; the pyo3 crate wraps it.
pub mod commit;
pub mod compact;
pub mod error;
pub mod io;
pub mod kv;
pub mod merge;
pub mod options;
pub mod predicate;
pub mod read;
pub mod scan_options;
pub mod sort;
pub mod spec;
pub mod table;
pub mod write;

pub use error::{Error, Result};
