//! Format structs mirroring Paimon's on-disk layout (paimon-format.md).
pub mod binary_row;
pub mod bucket;
pub mod datum;
pub mod manifest;
pub mod partition;
pub mod row_kind;
pub mod schema;
pub mod snapshot;
pub mod types;
