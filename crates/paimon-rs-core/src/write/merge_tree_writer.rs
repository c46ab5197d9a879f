//! The writer of a primary-key bucket (Java's `MergeTreeWriter`): rows go into a sort buffer
//! (spilled to disk under memory pressure), a flush sorts and merges them through the table's
//! merge engine into level-0 files, a flush under memory pressure waits for compaction while
//! the bucket has more sorted runs than `num-sorted-run.stop-trigger` (the write stall), and
//! the commit compacts the bucket's levels. The writer owns its buffer, its files (restored
//! ones and what it handed to commits) and its compaction results for its whole life.
//!
//! The compactor itself (levels and picker, [`BucketCompactor`]) is seeded from the writer's
//! files at each stall and each commit, as before this writer existed: a picker kept across
//! commits (Java's) would change which compactions run.
//!
//! In a stream write ([`WriteEnv::background`]) the writer follows Java's `MergeTreeWriter`
//! with its compaction on an executor instead: each flush takes a finished compaction (waiting
//! for the running one only while the bucket has more sorted runs than the stop trigger) and
//! submits the picker's next one; `prepare_commit` hands over the new files and the
//! compactions that finished, leaving a running one for a later commit, and waits only for
//! `wait_compaction` or more than stop-trigger + 1 sorted runs.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;

use super::async_compact::{CompactExecutor, PendingCompaction};
use super::buffer::{merge_fan_in, merge_footprint, MemoryCounter, SortBuffer};
use super::deletion_vectors::DeletionVectorsMaintainer;
use super::pipeline::write_pipelined;
use super::record_writer::{BucketFiles, BucketRows, CommitIncrement, RecordWriter, WriteEnv};
use super::restore::RestoreFiles;
use super::rolling::{FileWriterContext, RollingFileWriter};
use crate::compact::{BucketCompactor, CompactResult, CompactSettings, DvMarks};
use crate::error::{Error, Result};
use crate::merge::{merge_sorted_runs, BatchIter, KvLayout, MergeEngine};
use crate::sort::Spiller;
use crate::spec::manifest::DataFileMeta;
use crate::table::FileStoreTable;

pub(crate) struct MergeTreeWriter {
    dir: PathBuf,
    buffer: SortBuffer,
    /// The sequence number of the next row.
    next_seq: i64,
    files: BucketFiles,
    /// `lookup-compact = gentle`: picks since the last forced level-0 compaction (§3.5),
    /// carried from one commit's compactor to the next.
    gentle_counter: u32,
    /// The bucket's deletion vectors (`deletion-vectors.enabled`): files compaction removes
    /// lose theirs, and each commit that changed them writes the bucket's new index file.
    deletion_vectors: Option<DeletionVectorsMaintainer>,
    /// The compaction running in the background (a stream write's, Java's `taskFuture`).
    pending: Option<PendingCompaction>,
}

impl MergeTreeWriter {
    /// A writer of the bucket in `dir`, starting from `restore`. `schema` is the key-value
    /// schema of its files, `key_idx` the key columns' positions in the input batches;
    /// `compacts`: the writer compacts (keeps the bucket's files).
    pub fn new(
        dir: PathBuf,
        restore: RestoreFiles,
        schema: SchemaRef,
        layout: KvLayout,
        key_idx: Vec<usize>,
        memory: MemoryCounter,
        compacts: bool,
    ) -> Self {
        MergeTreeWriter {
            dir,
            buffer: SortBuffer::new(schema, layout, key_idx, memory),
            next_seq: restore.max_sequence_number + 1,
            files: BucketFiles::new(restore.data_files, compacts),
            gentle_counter: 0,
            deletion_vectors: restore.deletion_vectors,
            pending: None,
        }
    }

    /// The bucket's files as the writer sees them (restored, plus what it handed to commits)
    /// and its deletion vectors.
    /// A compaction running or finished but not handed to a commit is cancelled and its files
    /// deleted (Java's `close`).
    pub fn into_restore(mut self) -> (Vec<DataFileMeta>, Option<DeletionVectorsMaintainer>) {
        self.cancel_compaction();
        for f in std::mem::take(&mut self.files.compacted).written_all() {
            let _ = crate::fileindex::remove_data_file(&self.dir, &f);
        }
        (self.files.into_previous(), self.deletion_vectors)
    }

    /// Cancel the background compaction (or wait for it if it runs) and delete its files.
    fn cancel_compaction(&mut self) {
        if let Some(p) = self.pending.take() {
            p.cancel(&self.dir);
        }
    }

    /// Java's `trySyncLatestCompaction`: take the background compaction's result if it
    /// finished (`block`: wait for it) into this commit's compactions; files an earlier
    /// compaction of this commit wrote and this one consumed are deleted. A failed compaction
    /// is this call's error (naming the bucket); its inputs stay the bucket's files.
    fn sync_compaction(&mut self, block: bool) -> Result<()> {
        let Some(p) = self.pending.as_mut() else {
            return Ok(());
        };
        let result = match p.take(block) {
            Ok(None) => return Ok(()),
            Ok(Some(r)) => r,
            Err(e) => {
                self.pending = None;
                return Err(e);
            }
        };
        self.pending = None;
        if let Some(r) = result {
            for f in self.files.compacted.absorb(r) {
                crate::fileindex::remove_data_file(&self.dir, &f)?;
            }
        }
        Ok(())
    }

    /// Java's `triggerCompaction(false)`: unless one runs, submit the picker's compaction of
    /// the bucket's files now (those of earlier commits, this commit's flushes, with the
    /// finished compactions applied).
    fn trigger_compaction(&mut self, env: &WriteEnv<'_>, exec: &CompactExecutor) -> Result<()> {
        let Some(settings) = env.compact else {
            return Ok(());
        };
        if self.pending.is_some() {
            return Ok(());
        }
        let files = self.files.current();
        let mut c = BucketCompactor::new(env.table, settings, self.dir.clone(), files)?;
        if let Some(unit) = c.pick_unit() {
            let label = c.label().to_string();
            self.pending = Some(exec.submit(c, unit, label)?);
        }
        Ok(())
    }

    /// Java's `flushWriteBuffer(waitForLatestCompaction, false)` of a writer that compacts in
    /// the background: if rows are buffered, wait for the running compaction when the bucket
    /// already has more sorted runs than the stop trigger (the write stall), and flush them;
    /// take the running compaction's result if done (`wait`: wait for it); submit the next.
    fn flush_background(
        &mut self,
        env: &WriteEnv<'_>,
        exec: &CompactExecutor,
        pipelined: bool,
        mut wait: bool,
    ) -> Result<()> {
        if !self.buffer.is_empty() {
            let stop = env.compact.map_or(usize::MAX, |s| s.stop_trigger);
            if sorted_runs(&self.files.current()) > stop {
                wait = true;
            }
            self.flush_buffer(env, pipelined)?;
        }
        self.sync_compaction(wait)?;
        self.trigger_compaction(env, exec)
    }

    /// The bucket's deletion vectors with the marks of this commit's compactions so far, for
    /// the next compaction's reads.
    fn give_vectors(&self, c: &mut BucketCompactor, pending: &DvMarks) {
        if let Some(dv) = &self.deletion_vectors {
            c.give_vectors(dv.vectors(), pending);
        }
    }

    /// Sort, merge and write what is buffered into level-0 files of this commit.
    fn flush_buffer(&mut self, env: &WriteEnv<'_>, pipelined: bool) -> Result<()> {
        let ctx = env.flush;
        let buf = &mut self.buffer;
        if buf.is_empty() {
            return Ok(());
        }
        let mut file_ctx = ctx.file_ctx.clone();
        file_ctx.dir = self.dir.clone();
        let writer = RollingFileWriter::new(file_ctx, 0);
        if let Some(changelog_ctx) = &ctx.changelog {
            return self.flush_with_changelog(env, changelog_ctx, writer, pipelined);
        }
        // plain deduplicate only: sequence.field / ignore-delete need the merge function
        let deduplicated = if ctx.engine.is_plain_deduplicate() {
            buf.take_deduplicated()?
        } else {
            None
        };
        let files = match deduplicated {
            // fast path: one in-memory run, newest record per key picked while sorting
            Some(run) => write_all(writer, run.into_iter().flatten(), pipelined)?,
            None => {
                let fan_in = merge_fan_in(buf, ctx.budget);
                let (runs, spill_bytes) = buf.take_runs(env.spiller, fan_in)?;
                let merged = merge_sorted_runs(runs, ctx.layout, ctx.engine.clone(), false)?;
                let files = write_all(writer, merged, pipelined)?;
                env.spiller.release(spill_bytes);
                files
            }
        };
        self.files.flushed.extend(files);
        Ok(())
    }

    /// A flush of a `changelog-producer = input` table (paimon-behaviour.md §9.2): every
    /// buffered record, sorted by key and sequence but not merged, goes into changelog files;
    /// the same sorted stream, merged by the table's engine, into the level-0 data files.
    fn flush_with_changelog(
        &mut self,
        env: &WriteEnv<'_>,
        changelog_ctx: &FileWriterContext,
        writer: RollingFileWriter,
        pipelined: bool,
    ) -> Result<()> {
        let ctx = env.flush;
        let buf = &mut self.buffer;
        let mut changelog_ctx = changelog_ctx.clone();
        changelog_ctx.dir = self.dir.clone();
        let changelog = Arc::new(Mutex::new(RollingFileWriter::new(changelog_ctx, 0)));
        let fan_in = merge_fan_in(buf, ctx.budget);
        let (runs, spill_bytes) = buf.take_runs(env.spiller, fan_in)?;
        let sorted = merge_sorted_runs(runs, ctx.layout, MergeEngine::KeepAll, false)?;
        // each sorted batch is written to the changelog as it passes on to the data merge
        let tee = Arc::clone(&changelog);
        let teed: BatchIter = Box::new(sorted.map(move |b| {
            let b = b?;
            lock(&tee)?.write(&b)?;
            Ok(b)
        }));
        let merged = merge_sorted_runs(vec![teed], ctx.layout, ctx.engine.clone(), false)?;
        // consumed and dropped by `write_all`, so the changelog writer is ours alone again (an
        // error drops the writers, which remove the files they wrote)
        let files = write_all(writer, merged, pipelined)?;
        let changelog = Arc::try_unwrap(changelog)
            .map_err(|_| Error::Internal("changelog writer still shared after the flush".into()))?
            .into_inner()
            .map_err(|_| Error::Internal("changelog writer poisoned".into()))?;
        let changelog_files = changelog.close()?;
        env.spiller.release(spill_bytes);
        self.files.flushed.extend(files);
        self.files.flushed_changelog.extend(changelog_files);
        Ok(())
    }

    /// Java's write stall (`MergeTreeWriter.flushWriteBuffer` waiting for compaction while
    /// `MergeTreeCompactManager.shouldWaitForLatestCompaction`): after a flush under memory
    /// pressure, while the bucket's sorted runs exceed `num-sorted-run.stop-trigger`, the
    /// picker's compaction runs before the write goes on. Its result accumulates in the
    /// writer's compaction results (files an earlier compaction of this commit wrote and this
    /// one consumed are deleted at once).
    fn stall(&mut self, table: &FileStoreTable, settings: &CompactSettings) -> Result<()> {
        let files = self.files.current();
        let mut n = sorted_runs(&files);
        if n <= settings.stop_trigger {
            return Ok(());
        }
        let dir = &self.dir;
        log::info!(
            target: "paimon_rs.compaction",
            "{} ({}): {n} sorted runs exceed num-sorted-run.stop-trigger {}: writes wait for \
             compaction",
            table.name,
            dir.strip_prefix(&table.path).unwrap_or(dir).display(),
            settings.stop_trigger
        );
        let mut c = BucketCompactor::new(table, settings, dir.clone(), files)?;
        while n > settings.stop_trigger {
            self.give_vectors(&mut c, &self.files.compacted.dv_marks);
            let Some(r) = c.compact(false)? else {
                break;
            };
            for f in self.files.compacted.absorb(r) {
                crate::fileindex::remove_data_file(&self.dir, &f)?;
            }
            let after = c.levels.number_of_sorted_runs();
            if after >= n {
                break;
            }
            n = after;
        }
        Ok(())
    }

    #[cfg(test)]
    pub fn buffer_mut(&mut self) -> &mut SortBuffer {
        &mut self.buffer
    }

    #[cfg(test)]
    pub fn sorted_runs(&self) -> usize {
        sorted_runs(&self.files.current())
    }

    /// Whether a background compaction is submitted and not taken yet.
    #[cfg(test)]
    pub fn compacting(&self) -> bool {
        self.pending.is_some()
    }

    #[cfg(test)]
    pub fn flushed_files(&self) -> usize {
        self.files.flushed.len()
    }
}

impl RecordWriter for MergeTreeWriter {
    fn dir(&self) -> &std::path::Path {
        &self.dir
    }

    fn write(&mut self, rows: BucketRows<'_>) -> Result<()> {
        let Some(input) = rows.shared else {
            return Err(Error::Internal("key-value buffer without a schema".into()));
        };
        let n = rows.indices.len();
        // every row of the batch: no indices to keep
        let indices = (n < rows.batch.num_rows()).then_some(rows.indices);
        self.buffer.put(input, indices, self.next_seq);
        self.next_seq += n as i64;
        Ok(())
    }

    fn flush(&mut self, env: &WriteEnv<'_>) -> Result<()> {
        if let (Some(exec), Some(_)) = (env.background, env.compact) {
            return self.flush_background(env, exec, false, false);
        }
        self.flush_buffer(env, false)?;
        match env.compact {
            Some(settings) => self.stall(env.table, settings),
            None => Ok(()),
        }
    }

    fn prepare_commit(&mut self, env: &WriteEnv<'_>, pipelined: bool) -> Result<CommitIncrement> {
        if let (Some(exec), Some(settings)) = (env.background, env.compact) {
            // Java's `MergeTreeWriter.prepareCommit(waitCompaction)`
            self.flush_background(env, exec, pipelined, env.wait_compaction)?;
            // `shouldWaitForPreparingCheckpoint`: more than stop-trigger + 1 sorted runs
            let wait = env.wait_compaction
                || sorted_runs(&self.files.current()) > settings.stop_trigger + 1;
            self.sync_compaction(wait)?;
            return Ok(self.files.drain());
        }
        self.flush_buffer(env, pipelined)?;
        Ok(self.files.drain())
    }

    fn compact(&mut self, env: &WriteEnv<'_>, increment: &mut CommitIncrement) -> Result<()> {
        let Some(settings) = env.compact else {
            return Ok(());
        };
        if env.background.is_some() {
            // compacted in the background: `prepare_commit` handed over what finished
            return Ok(());
        }
        let files = self.files.with(increment);
        let mut c = BucketCompactor::new(env.table, settings, self.dir.clone(), files)?;
        c.set_gentle_counter(self.gentle_counter);
        // the stalls' compactions of this commit, continued
        let inc = &mut increment.compact_increment;
        let mut acc = CompactResult {
            before: std::mem::take(&mut inc.compact_before),
            after: std::mem::take(&mut inc.compact_after),
            changelog: std::mem::take(&mut inc.changelog_files),
            dv_marks: std::mem::take(&mut increment.dv_marks),
        };
        let base = self.deletion_vectors.as_ref().map(|d| d.vectors());
        let done = c.compact_commit(env.full, &mut acc, base);
        (inc.compact_before, inc.compact_after) = (acc.before, acc.after);
        inc.changelog_files = acc.changelog;
        done?;
        self.gentle_counter = c.gentle_counter();
        match &mut self.deletion_vectors {
            // rows the commit's lookup compactions superseded (§10), then the vectors of the
            // files they removed; a changed bucket's new index file replaces its old ones
            Some(dv) => {
                dv.apply_compaction(acc.dv_marks, &inc.compact_before, &inc.compact_after)?;
                let (new, replaced) = dv.prepare_commit(env.table)?;
                inc.new_index_files.extend(new);
                inc.deleted_index_files.extend(replaced);
            }
            None => increment.dv_marks = acc.dv_marks,
        }
        Ok(())
    }

    fn bucket_files(&mut self) -> &mut BucketFiles {
        &mut self.files
    }

    fn sync(&mut self) -> Result<()> {
        self.sync_compaction(true)
    }

    fn close(&mut self) {
        // the background compaction first: it may be reading the files deleted below
        self.cancel_compaction();
        let dir = self.dir.clone();
        self.files.discard(&dir);
    }

    fn memory_size(&self) -> usize {
        self.buffer.memory_size()
    }

    fn own_memory(&self) -> usize {
        0
    }

    fn buffered_rows(&self) -> usize {
        self.buffer.in_memory_rows()
    }

    fn spill_count(&self) -> usize {
        self.buffer.spill_count()
    }

    fn spill_estimate(&self) -> Option<u64> {
        Some(self.buffer.spill_estimate())
    }

    fn spill(&mut self, spiller: &Spiller) -> Result<()> {
        self.buffer.spill(spiller)
    }

    fn release_input(&mut self) -> Result<()> {
        self.buffer.compact()
    }

    fn merge_footprint(&self, budget: usize) -> usize {
        merge_footprint(&self.buffer, budget)
    }
}

fn lock(w: &Mutex<RollingFileWriter>) -> Result<std::sync::MutexGuard<'_, RollingFileWriter>> {
    w.lock()
        .map_err(|_| Error::Internal("changelog writer poisoned".into()))
}

/// Sorted runs of a bucket's files: each level-0 file, plus one per non-empty level above.
fn sorted_runs(files: &[DataFileMeta]) -> usize {
    let upper: std::collections::HashSet<i32> =
        files.iter().map(|f| f.level).filter(|&l| l > 0).collect();
    files.iter().filter(|f| f.level == 0).count() + upper.len()
}

/// Write sorted batches into `writer` and close it, encoding on a second thread if `pipelined`.
fn write_all(
    mut writer: RollingFileWriter,
    batches: impl Iterator<Item = Result<RecordBatch>>,
    pipelined: bool,
) -> Result<Vec<DataFileMeta>> {
    if pipelined {
        return write_pipelined(writer, batches);
    }
    for b in batches {
        writer.write(&b?)?;
    }
    writer.close()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::Int64Array;

    use super::*;
    use crate::kv::{file_context, kv_arrow_schema, FileSource};
    use crate::merge::MergeEngine;
    use crate::sort::SpillOptions;
    use crate::write::buffer::SharedInput;
    use crate::write::record_writer::FlushContext;
    use crate::write::table_write::tests::{rows, table};

    /// A table's writer context, as the table write builds it.
    struct Env {
        table: FileStoreTable,
        flush: FlushContext,
        spiller: Spiller,
        settings: CompactSettings,
        memory: MemoryCounter,
    }

    impl Env {
        fn new(table: FileStoreTable) -> Self {
            Env {
                flush: FlushContext {
                    file_ctx: file_context(&table, 0, FileSource::Append).unwrap(),
                    layout: KvLayout { num_keys: 1 },
                    engine: MergeEngine::Deduplicate,
                    budget: table.options.write_buffer_size as usize,
                    changelog: None,
                },
                spiller: Spiller::new(SpillOptions::from_options(&table.options)),
                settings: CompactSettings::from_table(&table).unwrap(),
                memory: MemoryCounter::default(),
                table,
            }
        }

        fn env(&self, full: bool) -> WriteEnv<'_> {
            WriteEnv {
                table: &self.table,
                flush: &self.flush,
                spiller: &self.spiller,
                compact: Some(&self.settings),
                full,
                background: None,
                wait_compaction: false,
            }
        }

        fn writer(&self, restore: RestoreFiles) -> MergeTreeWriter {
            MergeTreeWriter::new(
                self.table.bucket_dir("", 0),
                restore,
                kv_arrow_schema(&self.table, false).unwrap(),
                self.flush.layout,
                vec![0],
                self.memory.clone(),
                true,
            )
        }

        fn write(&self, w: &mut MergeTreeWriter, batch: &RecordBatch) {
            let shared = Arc::new(SharedInput::new(batch.clone(), None, &self.memory));
            let indices = (0..batch.num_rows() as u32).collect();
            w.write(BucketRows {
                batch,
                shared: Some(&shared),
                indices,
            })
            .unwrap();
        }
    }

    /// A merge-tree writer driven alone: its first commit hands over a level-0 file (data
    /// increment, sequence numbers after the restored ones); with a full compaction at commit
    /// the second commit's increment compacts both commits' files (compact increment).
    #[test]
    fn prepare_commit_gives_data_then_compact_increments() {
        let dir = tempfile::tempdir().unwrap();
        let e = Env::new(table(dir.path(), &[("bucket", "1")]));
        let restore = RestoreFiles {
            data_files: vec![],
            max_sequence_number: 9,
            deletion_vectors: None,
        };
        let mut w = e.writer(restore);
        e.write(&mut w, &rows(0, 100));
        assert_eq!(w.buffered_rows(), 100);
        let mut first = w.prepare_commit(&e.env(false), false).unwrap();
        let new = &first.data_increment.new_files;
        assert_eq!(new.len(), 1);
        assert_eq!(
            (new[0].level, new[0].row_count, new[0].min_sequence_number),
            (0, 100, 10)
        );
        assert!(first.compact_increment.is_empty());
        // a single level-0 file: the picker leaves it
        w.compact(&e.env(false), &mut first).unwrap();
        assert!(first.compact_increment.is_empty());
        w.committed(&first);
        assert_eq!(w.sorted_runs(), 1);

        e.write(&mut w, &rows(50, 100));
        let mut second = w.prepare_commit(&e.env(true), false).unwrap();
        assert_eq!(second.data_increment.new_files.len(), 1);
        assert_eq!(second.data_increment.new_files[0].min_sequence_number, 110);
        w.compact(&e.env(true), &mut second).unwrap();
        let c = &second.compact_increment;
        let mut before: Vec<&str> = c.compact_before.iter().map(|f| &*f.file_name).collect();
        before.sort();
        let mut want = vec![
            &*first.data_increment.new_files[0].file_name,
            &*second.data_increment.new_files[0].file_name,
        ];
        want.sort();
        assert_eq!(before, want);
        assert_eq!(c.compact_after.len(), 1);
        assert_eq!(c.compact_after[0].row_count, 150);
        assert_eq!(c.compact_after[0].level, 5);
        w.committed(&second);
        assert_eq!(w.sorted_runs(), 1);
        // nothing new: an empty increment
        assert!(w.prepare_commit(&e.env(false), false).unwrap().is_empty());
    }

    /// A flush with per-level and changelog-file options: the data file in level 0's format
    /// and stats mode, the input changelog file in `changelog-file.format` with its own stats
    /// mode (paimon-behaviour.md §1.5a).
    #[test]
    fn flush_writes_level_zero_and_changelog_in_their_formats() {
        let dir = tempfile::tempdir().unwrap();
        let mut e = Env::new(table(
            dir.path(),
            &[
                ("bucket", "1"),
                ("changelog-producer", "input"),
                ("file.format.per.level", "0:avro"),
                ("metadata.stats-mode.per.level", "0:full"),
                ("changelog-file.format", "orc"),
                ("changelog-file.stats-mode", "none"),
            ],
        ));
        e.flush.changelog = Some(e.flush.file_ctx.clone().into_changelog("changelog-"));
        let mut w = e.writer(RestoreFiles::default());
        e.write(&mut w, &rows(0, 20));
        let inc = w.prepare_commit(&e.env(false), false).unwrap();
        let d = &inc.data_increment;
        let (data, log) = (&d.new_files[0], &d.changelog_files[0]);
        assert!(data.file_name.ends_with(".avro"), "{}", data.file_name);
        assert!(log.file_name.starts_with("changelog-"), "{}", log.file_name);
        assert!(log.file_name.ends_with(".orc"), "{}", log.file_name);
        assert_eq!(log.value_stats_cols, Some(vec![]), "stats mode none");
        assert_eq!(data.value_stats_cols, None, "every column's stats");
        assert_eq!(data.value_stats.null_counts.len(), 2);
        w.close();
    }

    /// `changelog-producer = input`: a flush writes every buffered record, unmerged, into
    /// changelog files beside the merged data file; both go to the data increment, and
    /// `close` deletes the changelog files of an unprepared flush too.
    #[test]
    fn input_producer_writes_the_unmerged_records_as_changelog() {
        let dir = tempfile::tempdir().unwrap();
        let mut e = Env::new(table(
            dir.path(),
            &[("bucket", "1"), ("changelog-producer", "input")],
        ));
        e.flush.changelog = Some(e.flush.file_ctx.clone().into_changelog("changelog-"));
        let mut w = e.writer(RestoreFiles::default());
        e.write(&mut w, &rows(0, 100));
        e.write(&mut w, &rows(50, 100));
        let inc = w.prepare_commit(&e.env(false), false).unwrap();
        let d = &inc.data_increment;
        assert_eq!(d.new_files.iter().map(|f| f.row_count).sum::<i64>(), 150);
        assert_eq!(d.changelog_files.len(), 1);
        let log = &d.changelog_files[0];
        assert!(log.file_name.starts_with("changelog-"), "{}", log.file_name);
        assert_eq!((log.row_count, log.level), (200, 0));
        // the default restore (max sequence 0) starts at 1
        assert_eq!((log.min_sequence_number, log.max_sequence_number), (1, 200));
        assert_eq!(inc.written().len(), 2);

        e.write(&mut w, &rows(0, 10));
        w.flush(&e.env(false)).unwrap();
        let bucket = e.table.bucket_dir("", 0);
        let names = || -> Vec<String> {
            std::fs::read_dir(&bucket)
                .unwrap()
                .map(|f| f.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        };
        assert_eq!(names().len(), 4);
        w.close();
        let mut left = names();
        left.sort();
        let mut want = vec![log.file_name.clone(), d.new_files[0].file_name.clone()];
        want.sort();
        assert_eq!(left, want);
    }

    /// A stream write's env: compaction on `exec`, commits that do not wait.
    fn background<'a>(e: &'a Env, exec: &'a CompactExecutor) -> WriteEnv<'a> {
        WriteEnv {
            background: Some(exec),
            ..e.env(false)
        }
    }

    /// As [`background`], for a commit that waits for compaction (`wait_compaction`).
    fn waiting<'a>(e: &'a Env, exec: &'a CompactExecutor) -> WriteEnv<'a> {
        WriteEnv {
            wait_compaction: true,
            ..background(e, exec)
        }
    }

    /// Names of the files in the bucket's directory.
    fn on_disk(e: &Env) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(e.table.bucket_dir("", 0))
            .map(|d| {
                d.map(|f| f.unwrap().file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    }

    /// The compaction thread held back (a compaction "still running") until `release`.
    struct Hold {
        tx: std::sync::mpsc::Sender<()>,
        thread: std::thread::JoinHandle<()>,
    }

    fn hold(exec: &CompactExecutor) -> Hold {
        let gate = Arc::clone(&exec.hold);
        let (locked_tx, locked) = std::sync::mpsc::channel();
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            let _held = gate.lock().unwrap();
            locked_tx.send(()).unwrap();
            let _ = rx.recv();
        });
        locked.recv().unwrap();
        Hold { tx, thread }
    }

    impl Hold {
        fn release(self) {
            drop(self.tx);
            self.thread.join().unwrap();
        }
    }

    fn names(files: &[DataFileMeta]) -> Vec<String> {
        let mut n: Vec<String> = files.iter().map(|f| f.file_name.clone()).collect();
        n.sort();
        n
    }

    /// A writer with trigger 2 compacting on `exec` (held back by `held`) after `n` commits of
    /// 100 rows each (keys from `i * 10`), and their new files; the second commit submitted a
    /// compaction.
    fn held_commits(
        e: &Env,
        exec: &CompactExecutor,
        n: i64,
    ) -> (MergeTreeWriter, Vec<DataFileMeta>) {
        let mut w = e.writer(RestoreFiles::default());
        let mut committed = vec![];
        for i in 0..n {
            e.write(&mut w, &rows(i * 10, 100));
            let inc = w.prepare_commit(&background(e, exec), false).unwrap();
            assert!(inc.compact_increment.is_empty(), "commit {i}");
            assert_eq!(inc.data_increment.new_files.len(), 1);
            committed.extend(inc.data_increment.new_files.iter().cloned());
            w.committed(&inc);
        }
        assert!(w.pending.is_some());
        (w, committed)
    }

    fn trigger_two(dir: &std::path::Path) -> Env {
        Env::new(table(
            dir,
            &[("bucket", "1"), ("num-sorted-run.compaction-trigger", "2")],
        ))
    }

    /// Java's asynchronous compaction: the compaction a commit submits keeps running while
    /// that commit and the next hand over only their new files; the first commit after it
    /// finished hands it over (compact increment of the earlier commits' files).
    #[test]
    fn a_running_compaction_is_handed_over_by_a_later_commit() {
        let dir = tempfile::tempdir().unwrap();
        let e = trigger_two(dir.path());
        let exec = CompactExecutor::default();
        let held = hold(&exec);
        // submitted by the second commit (two runs), held back since
        let (mut w, mut committed) = held_commits(&e, &exec, 3);
        held.release();
        w.sync().unwrap();
        let inc = w.prepare_commit(&background(&e, &exec), false).unwrap();
        assert!(inc.data_increment.is_empty());
        let c = &inc.compact_increment;
        // the first two commits' files: the third came after the pick
        assert_eq!(names(&c.compact_before), names(&committed[..2]));
        assert_eq!(
            c.compact_after.iter().map(|f| f.row_count).sum::<i64>(),
            110
        );
        committed.extend(c.compact_after.iter().cloned());
        w.committed(&inc);
        // the next compaction (two runs again): a waiting commit hands it over
        let inc = w.prepare_commit(&waiting(&e, &exec), false).unwrap();
        assert_eq!(inc.compact_increment.compact_before.len(), 2);
        committed.extend(inc.compact_increment.compact_after.iter().cloned());
        w.committed(&inc);
        let live = w.files.current();
        assert_eq!(live.len(), 1);
        assert_eq!(live.iter().map(|f| f.row_count).sum::<i64>(), 120);
        w.close();
        // every file a commit referenced, no other
        assert_eq!(on_disk(&e), names(&committed));
    }

    /// `close` while the bucket's compaction is queued or has finished unseen leaves exactly
    /// the files commits reference: a queued one never starts, a finished one's files are
    /// deleted.
    #[test]
    fn close_mid_compaction_leaves_only_committed_files() {
        for finish_first in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let e = trigger_two(dir.path());
            let exec = CompactExecutor::default();
            let held = hold(&exec);
            let (mut w, committed) = held_commits(&e, &exec, 2);
            // rows flushed after the last commit: deleted by close too
            e.write(&mut w, &rows(500, 10));
            w.flush(&background(&e, &exec)).unwrap();
            if finish_first {
                held.release();
                // the compaction wrote its file; nobody took it
                let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
                while on_disk(&e).len() < 4 && std::time::Instant::now() < deadline {
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                assert_eq!(on_disk(&e).len(), 4, "{:?}", on_disk(&e));
                w.close();
            } else {
                // release the thread only after close cancelled the job
                let releaser = std::thread::spawn(move || {
                    std::thread::sleep(std::time::Duration::from_millis(100));
                    held.release();
                });
                w.close();
                releaser.join().unwrap();
            }
            assert_eq!(
                on_disk(&e),
                names(&committed),
                "finish first: {finish_first}"
            );
        }
    }

    /// A failed background compaction is the next call's error, naming the bucket; the
    /// bucket's files stay as they were and the next commit compacts them.
    #[test]
    fn a_failed_background_compaction_surfaces_at_the_next_call() {
        let dir = tempfile::tempdir().unwrap();
        let e = trigger_two(dir.path());
        let exec = CompactExecutor::default();
        exec.fail_next
            .store(true, std::sync::atomic::Ordering::SeqCst);
        let held = hold(&exec);
        let (mut w, _) = held_commits(&e, &exec, 2);
        held.release();
        let err = w.sync().unwrap_err().to_string();
        assert!(err.contains("background compaction of"), "{err}");
        assert!(err.contains("(bucket-0) failed"), "{err}");
        // nothing lost: the next commit submits the compaction again and waits for it
        let inc = w.prepare_commit(&waiting(&e, &exec), false).unwrap();
        assert_eq!(inc.compact_increment.compact_before.len(), 2);
        w.committed(&inc);
        assert_eq!(w.sorted_runs(), 1);
        w.close();
    }

    /// `close` deletes what was flushed since the last `prepare_commit`.
    #[test]
    fn close_deletes_uncommitted_files() {
        let dir = tempfile::tempdir().unwrap();
        let e = Env::new(table(dir.path(), &[("bucket", "1")]));
        let mut w = e.writer(RestoreFiles::default());
        e.write(&mut w, &rows(0, 100));
        w.flush(&e.env(false)).unwrap();
        assert_eq!(w.flushed_files(), 1);
        let bucket = e.table.bucket_dir("", 0);
        let files = || std::fs::read_dir(&bucket).unwrap().count();
        assert_eq!(files(), 1);
        w.close();
        assert_eq!(files(), 0);
        assert!(w.prepare_commit(&e.env(false), false).unwrap().is_empty());
    }

    #[test]
    fn a_small_budget_merges_few_runs_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let t = table(
            dir.path(),
            &[("bucket", "1"), ("write-buffer-size", "64 kb")],
        );
        let mut w = crate::write::TableWrite::new(t).unwrap();
        for i in 0..40 {
            w.write(&rows(i * 1000, 1000)).unwrap();
        }
        let spills = w.spill_count();
        let (budget, spiller, buf) = w.merge_tree_buffer();
        // ~40 bytes a row: two 4k-row batches of a run are more than 64 kb
        let fan_in = merge_fan_in(buf, budget);
        assert_eq!(fan_in, 2);
        assert!(spills > 4, "{spills} spills");
        let (runs, _) = buf.take_runs(spiller, fan_in).unwrap();
        assert!(runs.len() <= 2, "{} runs", runs.len());
        let mut keys = vec![];
        let merged = merge_sorted_runs(
            runs,
            KvLayout { num_keys: 1 },
            MergeEngine::Deduplicate,
            false,
        );
        for b in merged.unwrap() {
            let b = b.unwrap();
            let k = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
            keys.extend(k.values().iter().copied());
        }
        assert_eq!(keys, (0..40_000).collect::<Vec<i64>>());
    }
}
