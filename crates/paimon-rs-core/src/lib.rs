//! paimon-rs-core: an engine for Apache Paimon tables (format, write path, merge read, commit).
//! Synchronous API, no Python; the pyo3 crate wraps it.
pub mod error;
pub mod spec;

pub use error::{Error, Result};
