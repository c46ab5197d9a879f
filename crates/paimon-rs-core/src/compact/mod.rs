//! Compaction of a bucket's LSM tree (paimon-behaviour.md §2–§5): the interval partition of a
//! bucket's files into sections of sorted runs, and the universal picker, a pure
//! policy over run shapes. The compact task and the writer integration build on it.

pub mod interval;
mod universal;

pub use universal::{
    CompactPick, LookupCompact, PickClock, PickReason, RunShape, UniversalCompaction,
};
