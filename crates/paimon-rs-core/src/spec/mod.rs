//! Format structs mirroring Paimon's on-disk layout (paimon-format.md).
pub mod datum;
pub mod manifest;
pub mod schema;
pub mod snapshot;
pub mod types;
