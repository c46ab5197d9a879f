//! The writer of one (partition, bucket) (Java's `RecordWriter`): rows in, files out, handed to
//! the commit as a [`CommitIncrement`]. [`TableWrite`](super::TableWrite) routes rows to its
//! bucket writers and schedules them under one memory budget; each writer owns its buffer, its
//! files and its compaction state for its whole life. Two kinds: the
//! [`MergeTreeWriter`](super::merge_tree_writer::MergeTreeWriter) of primary-key buckets and the
//! [`AppendWriter`](super::append_writer::AppendWriter) of append buckets, behind
//! [`BucketWriter`].
//!
//! The commit runs in two table-wide phases, so that every bucket's flush finishes (and a
//! failing one stops the rest) before any compaction starts: [`RecordWriter::prepare_commit`]
//! flushes and drains the writer, then [`RecordWriter::compact`] runs the commit's compaction
//! into the increment, and once every bucket succeeded [`RecordWriter::committed`] makes the
//! increment part of the writer's view of its bucket.

use std::collections::HashSet;
use std::sync::Arc;

use arrow_array::RecordBatch;

use super::async_compact::CompactExecutor;
use super::buffer::SharedInput;
use super::rolling::FileWriterContext;
use crate::commit::{CompactIncrement, DataIncrement};
use crate::compact::{CompactResult, CompactSettings, DvMarks};
use crate::error::Result;
use crate::merge::{KvLayout, MergeEngine};
use crate::sort::Spiller;
use crate::spec::manifest::DataFileMeta;
use crate::table::FileStoreTable;

/// Everything a flush needs that does not change per bucket.
pub(crate) struct FlushContext {
    pub file_ctx: FileWriterContext,
    pub layout: KvLayout,
    pub engine: MergeEngine,
    /// `write-buffer-size`: the budget of the buffers and of the final merges.
    pub budget: usize,
    /// `changelog-producer = input`: the context of the changelog files each flush writes
    /// beside its data files (every input record, unmerged).
    pub changelog: Option<FileWriterContext>,
}

/// What a bucket writer's calls share with every other bucket writer of the table write.
#[derive(Clone, Copy)]
pub(crate) struct WriteEnv<'a> {
    pub table: &'a FileStoreTable,
    pub flush: &'a FlushContext,
    pub spiller: &'a Spiller,
    /// Compaction settings of a primary-key writer that compacts (not `write-only`): its
    /// flushes stall for compaction above the stop trigger, its commits compact.
    pub compact: Option<&'a CompactSettings>,
    /// The commit's compaction is a full one (`changelog-producer = full-compaction` or
    /// `full-compaction.delta-commits`, on the commits `compact::full_compaction_due` names).
    pub full: bool,
    /// A stream write's primary-key writers compact in the background on this thread
    /// (write/async_compact.rs, paimon-behaviour.md §1.6); None: compaction runs in `flush`
    /// and `compact`, and the commit waits for it.
    pub background: Option<&'a CompactExecutor>,
    /// With `background`: this `prepare_commit` waits for the bucket's compaction (Java's
    /// `prepareCommit(waitCompaction = true)`, or `commit.force-compact`).
    pub wait_compaction: bool,
}

/// The rows of one checked input batch that belong to a bucket.
pub(crate) struct BucketRows<'a> {
    /// The checked batch (all of its rows, of every bucket).
    pub batch: &'a RecordBatch,
    /// The batch as key-value writers share it (primary-key tables only).
    pub shared: Option<&'a Arc<SharedInput>>,
    /// This bucket's rows of the batch.
    pub indices: Vec<u32>,
}

/// What a writer hands to a commit (Java's `CommitIncrement`).
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct CommitIncrement {
    pub data_increment: DataIncrement,
    pub compact_increment: CompactIncrement,
    /// Deletion-vector marks of the commit's lookup compactions (`deletion-vectors.enabled`):
    /// superseded row positions by data file name; the merge-tree writer moves them into its
    /// bucket's deletion vectors before writing the index file.
    pub dv_marks: DvMarks,
}

impl CommitIncrement {
    pub fn is_empty(&self) -> bool {
        self.data_increment.is_empty() && self.compact_increment.is_empty()
    }

    /// Files of this increment that were written for it: new files, changelog files and
    /// compaction outputs that are not upgrades (what a failed commit deletes).
    pub fn written(&self) -> Vec<DataFileMeta> {
        let (d, c) = (&self.data_increment, &self.compact_increment);
        let compacted = CompactResult {
            changelog: c.changelog_files.clone(),
            ..CompactResult::of(c.compact_before.clone(), c.compact_after.clone())
        };
        let mut out = d.new_files.clone();
        out.extend(d.changelog_files.iter().cloned());
        out.extend(compacted.written_all());
        out
    }
}

/// A bucket writer (Java's `RecordWriter`), and the memory owner the table write asks to free
/// memory (Java's `MemoryOwner`).
pub(crate) trait RecordWriter: Send {
    /// The bucket's directory.
    fn dir(&self) -> &std::path::Path;

    /// Buffer rows (sequence numbers continue from the bucket's restored files).
    fn write(&mut self, rows: BucketRows<'_>) -> Result<()>;

    /// Under memory pressure: write what is buffered into files of this commit (a primary-key
    /// bucket then waits for compaction while it has too many sorted runs).
    fn flush(&mut self, env: &WriteEnv<'_>) -> Result<()>;

    /// Flush everything (`pipelined`: encode on a second thread) and hand over this commit's
    /// files and the compactions its flushes waited for.
    fn prepare_commit(&mut self, env: &WriteEnv<'_>, pipelined: bool) -> Result<CommitIncrement>;

    /// The commit's compaction (paimon-behaviour.md §1.6) of the bucket's files with
    /// `increment` applied, accumulated into `increment` (Java's `RecordWriter.compact`).
    fn compact(&mut self, env: &WriteEnv<'_>, increment: &mut CommitIncrement) -> Result<()>;

    /// The bucket's files as this writer sees them.
    fn bucket_files(&mut self) -> &mut BucketFiles;

    /// Every bucket's increment of the commit was prepared: this one's files are now part of
    /// the bucket as the writer sees it.
    fn committed(&mut self, increment: &CommitIncrement) {
        self.bucket_files().committed(increment);
    }

    /// Wait for compaction running in the background (a stream write's primary-key writer;
    /// the others compact inside `flush` and `compact`).
    fn sync(&mut self) -> Result<()> {
        Ok(())
    }

    /// Drop buffered rows and delete the files written since the last `prepare_commit`
    /// (Java's `close`): files it handed out belong to the commit.
    fn close(&mut self) {
        let dir = self.dir().to_path_buf();
        self.bucket_files().discard(&dir);
    }

    /// See [`BucketFiles::set_ignore_previous`].
    fn ignore_previous_files(&mut self, ignore: bool) {
        self.bucket_files().set_ignore_previous(ignore);
    }

    /// Memory this writer holds (its share of the input batches, its open file).
    fn memory_size(&self) -> usize;

    /// Memory this writer holds that the shared input counter does not count (an append
    /// bucket's rows and open row group).
    fn own_memory(&self) -> usize;

    /// Rows held in memory.
    fn buffered_rows(&self) -> usize;

    /// Spilled runs waiting for the final merge.
    fn spill_count(&self) -> usize {
        0
    }

    /// Disk a spill of the in-memory rows would take; None if this writer cannot spill.
    fn spill_estimate(&self) -> Option<u64> {
        None
    }

    /// Spill the in-memory rows to disk.
    fn spill(&mut self, _spiller: &Spiller) -> Result<()> {
        Ok(())
    }

    /// Copy the buffered rows out of the shared input batches, so those can be freed.
    fn release_input(&mut self) -> Result<()> {
        Ok(())
    }

    /// Working memory of this writer's final merge of its spilled runs.
    fn merge_footprint(&self, _budget: usize) -> usize {
        0
    }
}

/// The files of a bucket as its writer sees them (Java: the compact manager's levels plus the
/// writer's `newFiles` / `compactBefore` / `compactAfter`).
#[derive(Debug, Default)]
pub(crate) struct BucketFiles {
    /// The bucket's live files: restored, plus what this writer handed to commits (writers
    /// that compact only).
    previous: Vec<DataFileMeta>,
    /// Whether `previous` is kept (writers that compact).
    keep: bool,
    /// An overwrite's writer (Java's `withIgnorePreviousFiles`): its compactions see only the
    /// files of the commit at hand, since the commit replaces the live ones.
    ignore_previous: bool,
    /// Files written since the last `prepare_commit`, not yet handed to a commit.
    pub flushed: Vec<DataFileMeta>,
    /// Changelog files of those flushes (`changelog-producer = input`).
    pub flushed_changelog: Vec<DataFileMeta>,
    /// Compactions run since the last commit because the bucket's sorted runs exceeded
    /// `num-sorted-run.stop-trigger` after a flush, accumulated.
    pub compacted: CompactResult,
}

impl BucketFiles {
    /// `restored` files are kept if `keep` (the writer compacts).
    pub fn new(restored: Vec<DataFileMeta>, keep: bool) -> Self {
        BucketFiles {
            previous: if keep { restored } else { vec![] },
            keep,
            ..Default::default()
        }
    }

    pub fn set_ignore_previous(&mut self, ignore: bool) {
        self.ignore_previous = ignore;
    }

    fn previous(&self) -> &[DataFileMeta] {
        if self.ignore_previous {
            &[]
        } else {
            &self.previous
        }
    }

    /// The bucket's files now: previous ones plus this commit's flushes, with this commit's
    /// compactions so far applied.
    pub fn current(&self) -> Vec<DataFileMeta> {
        let mut files: Vec<DataFileMeta> = self
            .previous()
            .iter()
            .chain(&self.flushed)
            .cloned()
            .collect();
        apply_compaction(&mut files, &self.compacted.before, &self.compacted.after);
        files
    }

    /// The bucket's files with a prepared (drained) `increment` applied.
    pub fn with(&self, increment: &CommitIncrement) -> Vec<DataFileMeta> {
        let mut files = self.previous().to_vec();
        files.extend(increment.data_increment.new_files.iter().cloned());
        let c = &increment.compact_increment;
        apply_compaction(&mut files, &c.compact_before, &c.compact_after);
        files
    }

    /// Hand this commit's files over.
    pub fn drain(&mut self) -> CommitIncrement {
        let compacted = std::mem::take(&mut self.compacted);
        CommitIncrement {
            data_increment: DataIncrement {
                new_files: std::mem::take(&mut self.flushed),
                changelog_files: std::mem::take(&mut self.flushed_changelog),
                ..Default::default()
            },
            compact_increment: CompactIncrement {
                changelog_files: compacted.changelog,
                ..CompactIncrement::of(compacted.before, compacted.after)
            },
            dv_marks: compacted.dv_marks,
        }
    }

    /// A prepared increment is now part of the bucket.
    pub fn committed(&mut self, increment: &CommitIncrement) {
        if !self.keep {
            return;
        }
        self.previous
            .extend(increment.data_increment.new_files.iter().cloned());
        let c = &increment.compact_increment;
        apply_compaction(&mut self.previous, &c.compact_before, &c.compact_after);
    }

    /// Delete the files written since the last `prepare_commit` in `dir`.
    pub fn discard(&mut self, dir: &std::path::Path) {
        let written = self.compacted.written_all();
        for f in self
            .flushed
            .iter()
            .chain(&self.flushed_changelog)
            .chain(&written)
        {
            let _ = crate::fileindex::remove_data_file(dir, f);
        }
        self.flushed.clear();
        self.flushed_changelog.clear();
        self.compacted = CompactResult::default();
    }

    pub fn into_previous(self) -> Vec<DataFileMeta> {
        self.previous
    }
}

/// Apply a compaction's result to a bucket's files: drop `before` (by name), add `after`.
pub(crate) fn apply_compaction(
    files: &mut Vec<DataFileMeta>,
    before: &[DataFileMeta],
    after: &[DataFileMeta],
) {
    let gone: HashSet<&str> = before.iter().map(|f| f.file_name.as_str()).collect();
    files.retain(|f| !gone.contains(f.file_name.as_str()));
    files.extend(after.iter().cloned());
}
