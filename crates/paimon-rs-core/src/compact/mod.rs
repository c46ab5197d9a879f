//! Compaction of a bucket's LSM tree (paimon-behaviour.md §2–§5): the interval partition of a
//! bucket's files into sections of sorted runs, and the universal picker, a pure
//! policy over run shapes. The compact task and the writer integration build on it.

pub mod append;
mod bucket;
mod expire;
pub mod interval;
mod levels;
pub mod plan;
pub mod progress;
mod task;
mod universal;

pub use bucket::{
    compact_table, compact_table_with_progress, BucketCompactor, CompactSettings, MergeTreeRewriter,
};
pub use expire::RecordExpire;
pub use levels::{LevelRun, Levels};
pub use task::{plan_task, run_task, CompactResult, CompactRewriter, Sections, Step, TaskOptions};

pub use universal::{
    CompactPick, LookupCompact, PickClock, PickReason, RunShape, UniversalCompaction,
};
