//! The writer of an append bucket (Java's `AppendOnlyWriter`): rows are kept as they come and
//! written in arrival order into one rolling file per commit (under memory pressure its row
//! group goes to disk early); a bucketed table's commit compacts the bucket's small files
//! (Java's `BucketedAppendCompactManager`); with `deletion-vectors.enabled` the writer holds the
//! bucket's vectors, restored with its files, and its compaction leaves the deleted rows out and
//! replaces the bucket's index file in the same commit. With `clustering.columns` the rows go through a
//! [`ClusterBuffer`] instead and leave it sorted by the clustering key (write/clustering.rs).

use std::path::PathBuf;
use std::sync::Arc;

use arrow_array::{RecordBatch, UInt32Array};

use super::clustering::{ClusterBuffer, ClusterSpec};
use super::deletion_vectors::DeletionVectorsMaintainer;
use super::record_writer::{BucketFiles, BucketRows, CommitIncrement, RecordWriter, WriteEnv};
use super::restore::RestoreFiles;
use super::rolling::RollingFileWriter;
use crate::error::Result;
use crate::sort::Spiller;
use crate::spec::manifest::DataFileMeta;

pub(crate) struct AppendWriter {
    partition: Vec<u8>,
    bucket: i32,
    dir: PathBuf,
    batches: Vec<RecordBatch>,
    bytes: usize,
    /// The file of this commit, open until `prepare_commit`.
    writer: Option<Box<RollingFileWriter>>,
    /// The sequence number of the next row.
    next_seq: i64,
    files: BucketFiles,
    /// Clustering at write time: the rows buffered (and spilled) here, sorted at flush.
    cluster: Option<ClusterBuffer>,
    /// The bucket's deletion vectors (a bucketed deletion-vector table's writer that compacts).
    deletion_vectors: Option<DeletionVectorsMaintainer>,
    /// A flush failed part way (a value refused, an I/O error): the rows written since the last
    /// commit are gone (their files removed), so nothing more of this writer may be committed.
    failed: Option<String>,
}

impl AppendWriter {
    /// A writer of bucket `bucket` of `partition` (serialized), in `dir`, starting from
    /// `restore`; `compacts`: the writer compacts (keeps the bucket's files).
    pub fn new(
        partition: Vec<u8>,
        bucket: i32,
        dir: PathBuf,
        restore: RestoreFiles,
        compacts: bool,
        cluster: Option<Arc<ClusterSpec>>,
    ) -> Self {
        AppendWriter {
            partition,
            bucket,
            dir,
            batches: vec![],
            bytes: 0,
            writer: None,
            next_seq: restore.max_sequence_number + 1,
            files: BucketFiles::new(restore.data_files, compacts),
            cluster: cluster.map(ClusterBuffer::new),
            deletion_vectors: restore.deletion_vectors,
            failed: None,
        }
    }

    /// The bucket's files as the writer sees them (restored, plus what it handed to commits)
    /// and its deletion vectors.
    pub fn into_restore(self) -> (Vec<DataFileMeta>, Option<DeletionVectorsMaintainer>) {
        (self.files.into_previous(), self.deletion_vectors)
    }

    /// Write the buffered rows into the open file; with `last` close it (prepare_commit),
    /// otherwise write its row group out (memory pressure).
    fn flush_rows(&mut self, env: &WriteEnv<'_>, last: bool) -> Result<()> {
        self.check_not_failed()?;
        let r = self.flush_rows_inner(env, last);
        if let Err(e) = &r {
            // the open file held rows of earlier batches, and the batches after the failing
            // one were drained: drop it all (the writer's Drop removes its files), and refuse
            // to commit anything more of this bucket, which would be a part of the writes
            self.writer = None;
            self.batches.clear();
            self.bytes = 0;
            self.failed = Some(e.to_string());
        }
        r
    }

    fn check_not_failed(&self) -> Result<()> {
        match &self.failed {
            None => Ok(()),
            Some(why) => Err(crate::error::Error::invalid(format!(
                "an earlier flush of the writer of {} failed ({why}): the rows written since \
                 the last commit are gone; abort this write and write them again",
                self.dir.display()
            ))),
        }
    }

    fn flush_rows_inner(&mut self, env: &WriteEnv<'_>, last: bool) -> Result<()> {
        if self.cluster.is_some() {
            return self.flush_clustered(env);
        }
        if !self.batches.is_empty() {
            let rw = match &mut self.writer {
                Some(rw) => rw,
                None => {
                    let mut file_ctx = env.flush.file_ctx.clone();
                    file_ctx.dir = self.dir.clone();
                    self.writer
                        .insert(Box::new(RollingFileWriter::new(file_ctx, self.next_seq)))
                }
            };
            for b in self.batches.drain(..) {
                self.next_seq += b.num_rows() as i64;
                rw.write(&b)?;
            }
            self.bytes = 0;
        }
        if last {
            if let Some(rw) = self.writer.take() {
                self.files.flushed.extend(rw.close()?);
            }
        } else if let Some(rw) = &mut self.writer {
            // under memory pressure: the open file's row group goes to disk too
            rw.flush_row_group()?;
        }
        Ok(())
    }

    /// Clustering: everything buffered, merged in clustering order, into files of its own (a
    /// flush under memory pressure that could not spill writes one sorted run of files; the
    /// commit's flush writes the rest).
    fn flush_clustered(&mut self, env: &WriteEnv<'_>) -> Result<()> {
        let Some(cluster) = &mut self.cluster else {
            return Ok(());
        };
        let Some((rows, spill_bytes)) = cluster.take_sorted(env.spiller, env.flush.budget)? else {
            return Ok(());
        };
        let mut file_ctx = env.flush.file_ctx.clone();
        file_ctx.dir = self.dir.clone();
        // an error drops the writer, which removes the files it wrote
        let mut rw = RollingFileWriter::new(file_ctx, self.next_seq);
        for b in rows {
            let b = b?;
            self.next_seq += b.num_rows() as i64;
            rw.write(&b)?;
        }
        let files = rw.close()?;
        log::debug!(
            target: "paimon_rs.write",
            "{}: clustered ({}) {} rows into {} files",
            self.dir.display(),
            cluster.spec().describe(),
            files.iter().map(|f| f.row_count).sum::<i64>(),
            files.len()
        );
        self.files.flushed.extend(files);
        env.spiller.release(spill_bytes);
        Ok(())
    }

    /// Memory held by the open file (its row group).
    pub fn open_file_bytes(&self) -> usize {
        self.writer.as_ref().map_or(0, |rw| rw.buffered_bytes())
    }
}

impl RecordWriter for AppendWriter {
    fn dir(&self) -> &std::path::Path {
        &self.dir
    }

    fn write(&mut self, rows: BucketRows<'_>) -> Result<()> {
        self.check_not_failed()?;
        let idx = UInt32Array::from(rows.indices);
        let part = arrow_select::take::take_record_batch(rows.batch, &idx)?;
        if let Some(cluster) = &mut self.cluster {
            return cluster.put(part);
        }
        self.bytes += part.get_array_memory_size();
        self.batches.push(part);
        Ok(())
    }

    fn flush(&mut self, env: &WriteEnv<'_>) -> Result<()> {
        self.flush_rows(env, false)
    }

    fn prepare_commit(&mut self, env: &WriteEnv<'_>, _pipelined: bool) -> Result<CommitIncrement> {
        self.flush_rows(env, true)?;
        Ok(self.files.drain())
    }

    /// A bucketed table's compaction at commit: the first group of small files
    /// [`pick_bucketed`](crate::compact::append) finds, rewritten (without the rows the
    /// bucket's deletion vectors mark; their vectors dropped, the bucket's index file replaced).
    fn compact(&mut self, env: &WriteEnv<'_>, increment: &mut CommitIncrement) -> Result<()> {
        let files = self.files.with(increment);
        if let Some(c) = crate::compact::append::compact_written_bucket(
            env.table,
            &self.dir,
            &self.partition,
            (self.bucket, env.table.options.bucket),
            &files,
            self.deletion_vectors.as_mut(),
        )? {
            increment.compact_increment = c;
        }
        Ok(())
    }

    fn bucket_files(&mut self) -> &mut BucketFiles {
        &mut self.files
    }

    fn memory_size(&self) -> usize {
        let cluster = self.cluster.as_ref().map_or(0, |c| c.memory_size());
        self.bytes + self.open_file_bytes() + cluster
    }

    fn own_memory(&self) -> usize {
        self.memory_size()
    }

    fn buffered_rows(&self) -> usize {
        let cluster = self.cluster.as_ref().map_or(0, |c| c.buffered_rows());
        self.batches.iter().map(|b| b.num_rows()).sum::<usize>() + cluster
    }

    fn spill_count(&self) -> usize {
        self.cluster.as_ref().map_or(0, |c| c.spill_count())
    }

    /// Only a clustering writer spills (its rows must all be sorted before they are written);
    /// a plain append writer writes its rows out instead.
    fn spill_estimate(&self) -> Option<u64> {
        self.cluster.as_ref().and_then(|c| c.spill_estimate())
    }

    fn spill(&mut self, spiller: &Spiller) -> Result<()> {
        match &mut self.cluster {
            Some(c) => c.spill(spiller),
            None => Ok(()),
        }
    }

    fn merge_footprint(&self, budget: usize) -> usize {
        self.cluster
            .as_ref()
            .map_or(0, |c| c.merge_footprint(budget))
    }
}
