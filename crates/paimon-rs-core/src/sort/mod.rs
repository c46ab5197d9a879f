//! External sort: sorted runs spilled to local disk as compressed Arrow IPC files, merged back
//! with a bounded fan-in (paimon-behaviour.md §1.3). Spill files live in a temp directory that
//! is removed when the writer finishes, fails or is dropped.

use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use arrow_array::{make_array, ArrayRef, RecordBatch};
use arrow_buffer::Buffer;
use arrow_data::transform::MutableArrayData;
use arrow_data::ArrayData;
use arrow_ipc::reader::FileReader;
use arrow_ipc::writer::{FileWriter, IpcWriteOptions};
use arrow_ipc::CompressionType;
use arrow_schema::SchemaRef;
use tempfile::NamedTempFile;

use crate::error::{Error, Result};
use crate::merge::{merge_sorted_runs, BatchIter, KvLayout, MergeEngine};

pub mod curve;
pub mod spill_dir;
use spill_dir::SpillDir;

/// Settings of the spilling write buffer.
#[derive(Debug, Clone)]
pub struct SpillOptions {
    /// Base directory for spill directories (default: the system temp dir).
    pub base_dir: PathBuf,
    pub compression: Option<CompressionType>,
    /// zstd level of `compression` (`spill-compression.zstd-level`; ignored by lz4).
    pub zstd_level: i32,
    /// Total bytes of spill files one writer may hold; None = unlimited.
    pub max_disk_size: Option<u64>,
    /// Most runs merged at once (`local-sort.max-num-file-handles`); more are pre-merged.
    pub max_fan_in: usize,
}

impl SpillOptions {
    /// The spill settings of a table's options.
    pub fn from_options(o: &crate::options::CoreOptions) -> Self {
        SpillOptions {
            base_dir: o.tmp_dir.clone(),
            compression: o.spill_compression,
            zstd_level: o.spill_zstd_level,
            max_disk_size: o.spill_max_disk_size,
            max_fan_in: o.local_sort_max_num_file_handles,
        }
    }
}

/// One sorted run on disk; the file is deleted when this is dropped.
pub struct SpillFile {
    file: NamedTempFile,
    pub bytes: u64,
    pub rows: usize,
}

impl SpillFile {
    pub fn path(&self) -> &Path {
        self.file.path()
    }

    /// Stream the run back, batch by batch. The file stays until the stream and this are gone.
    pub fn into_batches(self) -> Result<BatchIter> {
        let path = self.file.path().to_path_buf();
        let f = self.file.reopen().map_err(|e| Error::io(&path, e))?;
        let reader = FileReader::try_new(f, None)
            .map_err(|e| Error::corrupt(&path, format!("spill file: {e}")))?;
        let keep = self.file; // deleted when the iterator is dropped
        Ok(Box::new(reader.map(move |b| {
            let _ = &keep;
            b.map_err(|e| Error::corrupt(keep.path(), format!("spill file: {e}")))
                .and_then(detach_from_block)
        })))
    }
}

/// A decoded IPC batch whose arrays no longer pin the block they were read from.
///
/// A compressed IPC block stores a buffer uncompressed when compression does not shrink it
/// (random integer keys, floats); the reader hands such a buffer out as a slice of the whole
/// block, so one such column keeps the block (the compressed size of every column) alive next
/// to the decompressed copies. A merge holds a batch or two of every run at once, so this
/// doubled its memory. Columns holding a slice of a larger allocation are copied out.
fn detach_from_block(batch: RecordBatch) -> Result<RecordBatch> {
    let datas: Vec<ArrayData> = batch.columns().iter().map(|c| c.to_data()).collect();
    if !datas.iter().any(pins_larger_buffer) {
        return Ok(batch);
    }
    let columns: Vec<ArrayRef> = batch
        .columns()
        .iter()
        .zip(&datas)
        .map(|(c, data)| {
            if !pins_larger_buffer(data) {
                return Ok(c.clone());
            }
            let mut copy = MutableArrayData::new(vec![data], false, data.len());
            copy.try_extend(0, 0, data.len())?;
            Ok(make_array(copy.freeze()))
        })
        .collect::<Result<_>>()?;
    Ok(RecordBatch::try_new(batch.schema(), columns)?)
}

/// Whether a buffer of `data` (or of its children) is a small part of a larger allocation.
fn pins_larger_buffer(data: &ArrayData) -> bool {
    let larger = |b: &Buffer| b.capacity() > 2 * b.len() + 4096;
    data.buffers().iter().any(larger)
        || data.nulls().is_some_and(|n| larger(n.buffer()))
        || data.child_data().iter().any(pins_larger_buffer)
}

/// Spill files of one writer, in a temp directory of its own (created on first spill, removed
/// with the Spiller). Shared by the writer's buckets, so the disk cap is per writer.
pub struct Spiller {
    opts: SpillOptions,
    dir: OnceLock<SpillDir>,
    disk_bytes: AtomicU64,
}

impl Spiller {
    pub fn new(opts: SpillOptions) -> Self {
        Spiller {
            opts,
            dir: OnceLock::new(),
            disk_bytes: AtomicU64::new(0),
        }
    }

    pub fn options(&self) -> &SpillOptions {
        &self.opts
    }

    /// Bytes of spill files written and not yet released.
    pub fn disk_bytes(&self) -> u64 {
        self.disk_bytes.load(Ordering::Relaxed)
    }

    /// Whether `more` bytes still fit under `write-buffer-spill.max-disk-size`.
    pub fn has_room(&self, more: u64) -> bool {
        match self.opts.max_disk_size {
            None => true,
            Some(cap) => self.disk_bytes() + more <= cap,
        }
    }

    fn dir(&self) -> Result<&Path> {
        if let Some(d) = self.dir.get() {
            return Ok(d.path());
        }
        // named after this process and locked; dead writers' directories are swept
        let d = SpillDir::create(&self.opts.base_dir)?;
        // if another thread won the race, its directory is used and ours is removed
        let _ = self.dir.set(d);
        self.dir
            .get()
            .map(|d| d.path())
            .ok_or_else(|| Error::Internal("spill dir".into()))
    }

    /// The writer's spill directory, if it spilled.
    pub fn spill_dir(&self) -> Option<PathBuf> {
        self.dir.get().map(|d| d.path().to_path_buf())
    }

    /// Write a sorted run to a new spill file.
    pub fn spill(
        &self,
        schema: &SchemaRef,
        batches: impl Iterator<Item = Result<RecordBatch>>,
    ) -> Result<SpillFile> {
        let compression = self.opts.compression;
        let dir = self.dir()?.to_path_buf();
        let file = tempfile::Builder::new()
            .prefix("run-")
            .suffix(".arrow")
            .tempfile_in(&dir)
            .map_err(|e| Error::io(&dir, e))?;
        let path = file.path().to_path_buf();
        let level = (compression == Some(CompressionType::ZSTD)).then_some(self.opts.zstd_level);
        let opts = IpcWriteOptions::default()
            .try_with_compression(compression)
            .and_then(|o| o.try_with_compression_level(level))
            .map_err(|e| Error::Internal(format!("spill compression: {e}")))?;
        let handle = file.reopen().map_err(|e| Error::io(&path, e))?;
        let mut w = FileWriter::try_new_with_options(BufWriter::new(handle), schema, opts)
            .map_err(|e| Error::Arrow {
                context: Some(format!("spill {}", path.display())),
                source: e,
            })?;
        let mut rows = 0;
        for b in batches {
            let b = b?;
            rows += b.num_rows();
            w.write(&b).map_err(|e| Error::Arrow {
                context: Some(format!("spill {}", path.display())),
                source: e,
            })?;
        }
        w.finish().map_err(|e| Error::Arrow {
            context: Some(format!("spill {}", path.display())),
            source: e,
        })?;
        drop(w);
        let bytes = std::fs::metadata(&path)
            .map_err(|e| Error::io(&path, e))?
            .len();
        self.disk_bytes.fetch_add(bytes, Ordering::Relaxed);
        Ok(SpillFile { file, bytes, rows })
    }

    /// Account for spill files that were consumed (their files are gone once dropped).
    pub fn release(&self, bytes: u64) {
        let _ = self
            .disk_bytes
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
                Some(v.saturating_sub(bytes))
            });
    }

    /// Turn `files` (plus `extra_runs` in-memory runs, newest) into at most `fan_in` runs
    /// (and `max_fan_in`, at least 2) by pre-merging the smallest spill files with `KeepAll`
    /// (no reduction: the merge function runs once, at the final merge), then return the runs
    /// to merge.
    pub fn reduce_runs(
        &self,
        schema: &SchemaRef,
        layout: KvLayout,
        mut files: Vec<SpillFile>,
        extra_runs: usize,
        fan_in: usize,
    ) -> Result<Vec<SpillFile>> {
        let fan_in = fan_in.min(self.opts.max_fan_in).max(2);
        while files.len() + extra_runs > fan_in {
            // Merge the smallest files first; merging k runs removes k-1.
            files.sort_by_key(|f| std::cmp::Reverse(f.bytes));
            let excess = files.len() + extra_runs - fan_in + 1;
            let k = excess.clamp(2, fan_in).min(files.len());
            let group: Vec<SpillFile> = files.split_off(files.len() - k);
            let released: u64 = group.iter().map(|f| f.bytes).sum();
            let runs = group
                .into_iter()
                .map(SpillFile::into_batches)
                .collect::<Result<Vec<_>>>()?;
            let merged = merge_sorted_runs(runs, layout, MergeEngine::KeepAll, false)?;
            let out = self.spill(schema, merged)?;
            self.release(released);
            files.push(out);
        }
        Ok(files)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{Array, Int64Array, StringArray};
    use arrow_schema::{DataType, Field, Schema};

    use super::*;

    fn spiller(dir: &Path, compression: Option<CompressionType>) -> Spiller {
        Spiller::new(SpillOptions {
            base_dir: dir.to_path_buf(),
            compression,
            zstd_level: 1,
            max_disk_size: None,
            max_fan_in: 128,
        })
    }

    /// One incompressible column (IPC stores it uncompressed, as a slice of the block) and one
    /// compressible column: the batches read back must not keep their blocks alive.
    #[test]
    fn read_back_batches_do_not_pin_their_ipc_block() -> Result<()> {
        let dir = tempfile::tempdir().map_err(|e| Error::io(Path::new("tmp"), e))?;
        let schema = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int64, false),
            Field::new("s", DataType::Utf8, true),
        ]));
        let rows = 4096;
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let keys: Int64Array = (0..rows)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 2) as i64
            })
            .collect();
        let strings: StringArray = (0..rows)
            .map(|i| (i % 7 != 0).then(|| format!("value-{}", i % 13)))
            .collect();
        let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(keys), Arc::new(strings)])?;
        for compression in [
            Some(CompressionType::ZSTD),
            Some(CompressionType::LZ4_FRAME),
            None,
        ] {
            let sp = spiller(dir.path(), compression);
            let run = sp.spill(
                &schema,
                vec![Ok(batch.clone()), Ok(batch.clone())].into_iter(),
            )?;
            let back: Vec<RecordBatch> = run.into_batches()?.collect::<Result<_>>()?;
            assert_eq!(back.len(), 2);
            for b in &back {
                assert_eq!(b, &batch, "{compression:?}");
                for c in b.columns() {
                    assert!(!pins_larger_buffer(&c.to_data()), "{compression:?}");
                }
                // the arrays hold their own data and nothing of the block: about the size of
                // the original batch, not that plus the block
                let (got, want) = (b.get_array_memory_size(), batch.get_array_memory_size());
                assert!(got <= want + want / 4, "{compression:?}: {got} > {want}");
            }
        }
        Ok(())
    }
}
