//! Compaction of a bucket's LSM tree (paimon-behaviour.md §2–§5): the universal picker, a pure
//! policy over run shapes. The compact task and the writer integration build on it.

mod levels;
mod universal;

pub use levels::{num_levels_option, LevelRun, Levels};

pub use universal::{
    CompactPick, LookupCompact, PickClock, PickReason, RunShape, UniversalCompaction,
};
