//! Format structs mirroring Paimon's on-disk layout (paimon-format.md).
mod avro_names;
pub mod binary_row;
pub mod bucket;
pub mod datum;
pub mod manifest;
mod manifest_cache;
pub use manifest_cache::read_manifest_entries_cached;
pub mod partition;
pub mod row_kind;
pub mod schema;
pub mod snapshot;
pub mod types;
pub mod variant;
