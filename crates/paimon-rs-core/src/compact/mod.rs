//! Compaction of a bucket's LSM tree (paimon-behaviour.md §2–§5): the interval partition of a
//! bucket's files into sections of sorted runs, and the universal picker, a pure
//! policy over run shapes. The compact task and the writer integration build on it.

pub mod append;
mod bucket;
pub mod distributed;
mod expire;
mod full_changelog;
pub mod interval;
pub(crate) mod levels;
mod lookup_rewrite;
pub mod plan;
mod postpone;
pub mod progress;
pub mod sort_compact;
mod task;
mod universal;
mod work;

pub(crate) use bucket::Unit;
pub use bucket::{compact_table, compact_table_with_progress, BucketCompactor, CompactSettings};
pub use distributed::compact_full_window;
pub use full_changelog::full_compaction_window;
pub(crate) use full_changelog::{full_compaction_due, full_compaction_interval};
pub(crate) use lookup_rewrite::leveled_runs;
pub use task::{CompactResult, DvMarks};
pub use universal::{PickClock, RunShape, UniversalCompaction};
