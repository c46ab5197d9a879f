//! The writer of an append bucket (Java's `AppendOnlyWriter`): rows are kept as they come and
//! written in arrival order into one rolling file per commit (under memory pressure its row
//! group goes to disk early); a bucketed table's commit compacts the bucket's small files
//! (Java's `BucketedAppendCompactManager`).

use std::path::PathBuf;

use arrow_array::{RecordBatch, UInt32Array};

use super::record_writer::{BucketFiles, BucketRows, CommitIncrement, RecordWriter, WriteEnv};
use super::restore::RestoreFiles;
use super::rolling::RollingFileWriter;
use crate::commit::CompactIncrement;
use crate::error::Result;
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
        }
    }

    /// The bucket's files as the writer sees them (restored, plus what it handed to commits).
    pub fn into_files(self) -> Vec<DataFileMeta> {
        self.files.into_previous()
    }

    /// Write the buffered rows into the open file; with `last` close it (prepare_commit),
    /// otherwise write its row group out (memory pressure).
    fn flush_rows(&mut self, env: &WriteEnv<'_>, last: bool) -> Result<()> {
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
        let idx = UInt32Array::from(rows.indices);
        let part = arrow_select::take::take_record_batch(rows.batch, &idx)?;
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
    /// [`pick_bucketed`](crate::compact::append) finds, rewritten.
    fn compact(&mut self, env: &WriteEnv<'_>, increment: &mut CommitIncrement) -> Result<()> {
        let files = self.files.with(increment);
        if let Some((before, after)) = crate::compact::append::compact_written_bucket(
            env.table,
            &self.dir,
            &self.partition,
            self.bucket,
            env.table.options.bucket,
            &files,
        )? {
            increment.compact_increment = CompactIncrement::of(before, after);
        }
        Ok(())
    }

    fn bucket_files(&mut self) -> &mut BucketFiles {
        &mut self.files
    }

    fn memory_size(&self) -> usize {
        self.bytes + self.open_file_bytes()
    }

    fn own_memory(&self) -> usize {
        self.memory_size()
    }

    fn buffered_rows(&self) -> usize {
        self.batches.iter().map(|b| b.num_rows()).sum()
    }
}
