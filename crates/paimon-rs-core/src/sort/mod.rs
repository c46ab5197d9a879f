//! External sort: sorted runs spilled to local disk as compressed Arrow IPC files, merged back
//! with a bounded fan-in (paimon-behaviour.md §1.3). Spill files live in a temp directory that
//! is removed when the writer finishes, fails or is dropped.

use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use arrow_array::{make_array, ArrayRef, RecordBatch};
use arrow_buffer::Buffer;
use arrow_data::transform::MutableArrayData;
use arrow_data::ArrayData;
use arrow_ipc::reader::FileReader;
use arrow_ipc::writer::{FileWriter, IpcWriteOptions};
use arrow_ipc::CompressionType;
use arrow_schema::{Schema, SchemaRef};
use tempfile::NamedTempFile;

use crate::error::{Error, Result};
use crate::merge::{merge_sorted_runs, BatchIter, KvLayout, MergeEngine};

pub mod curve;
pub(crate) mod gather;
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

/// Columns of a batch that duplicate another column of it (a key-value batch's `_KEY_*`
/// columns are its value key columns): a spill file stores each once and the read gives the
/// copy back as a clone of the stored column (no bytes encoded, compressed, decoded twice).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Duplicates {
    /// (column, the column it duplicates), by position in the full schema; the duplicated
    /// column is not itself a duplicate.
    pairs: Vec<(usize, usize)>,
}

impl Duplicates {
    /// `pairs` (column, the column it equals); refused if a source is itself a copy.
    pub fn new(pairs: Vec<(usize, usize)>) -> Result<Self> {
        if pairs
            .iter()
            .any(|&(c, src)| c == src || pairs.iter().any(|&(copy, _)| copy == src))
        {
            return Err(Error::Internal(format!(
                "spill: duplicate columns {pairs:?} copy a copy"
            )));
        }
        Ok(Duplicates { pairs })
    }

    /// A key-value schema's `_KEY_*` columns (the first `num_keys`) equal the value columns
    /// at `value_offset + key_idx[i]`.
    pub fn of_keys(num_keys: usize, value_offset: usize, key_idx: &[usize]) -> Result<Self> {
        Self::new(
            key_idx
                .iter()
                .take(num_keys)
                .enumerate()
                .map(|(i, &k)| (i, value_offset + k))
                .collect(),
        )
    }

    fn is_copy(&self, c: usize) -> bool {
        self.pairs.iter().any(|&(copy, _)| copy == c)
    }

    /// The schema a spill file stores: `schema` without the copies.
    fn stored_schema(&self, schema: &SchemaRef) -> SchemaRef {
        if self.pairs.is_empty() {
            return schema.clone();
        }
        let fields: Vec<_> = (0..schema.fields().len())
            .filter(|&c| !self.is_copy(c))
            .map(|c| schema.field(c).clone())
            .collect();
        Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()))
    }

    /// `batch` without the copies, after checking they are copies.
    fn strip(&self, batch: &RecordBatch, stored: &SchemaRef) -> Result<RecordBatch> {
        if self.pairs.is_empty() {
            return Ok(batch.clone());
        }
        for &(copy, src) in &self.pairs {
            let (a, b) = (batch.column(copy).to_data(), batch.column(src).to_data());
            // the buffer's gather shares the array; a merge's output holds an equal one
            if !a.ptr_eq(&b) && a != b {
                return Err(Error::Internal(format!(
                    "spill: column {copy} is not a copy of column {src}"
                )));
            }
        }
        let cols = (0..batch.num_columns())
            .filter(|&c| !self.is_copy(c))
            .map(|c| batch.column(c).clone())
            .collect();
        Ok(RecordBatch::try_new(stored.clone(), cols)?)
    }

    /// A stored batch with the copies back in place, as `full`.
    fn restore(&self, stored: RecordBatch, full: &SchemaRef) -> Result<RecordBatch> {
        if self.pairs.is_empty() {
            return Ok(stored);
        }
        // position of each full column in the stored batch
        let mut at = vec![usize::MAX; full.fields().len()];
        let mut next = 0;
        for (c, slot) in at.iter_mut().enumerate() {
            if !self.is_copy(c) {
                *slot = next;
                next += 1;
            }
        }
        let cols = (0..full.fields().len())
            .map(|c| {
                let src = self
                    .pairs
                    .iter()
                    .find(|&&(copy, _)| copy == c)
                    .map_or(c, |&(_, src)| src);
                stored.column(at[src]).clone()
            })
            .collect();
        Ok(RecordBatch::try_new(full.clone(), cols)?)
    }
}

/// One sorted run on disk; the file is deleted when this is dropped.
pub struct SpillFile {
    file: NamedTempFile,
    pub bytes: u64,
    pub rows: usize,
    /// The schema of the batches read back and the columns the file does not store.
    schema: SchemaRef,
    duplicates: Duplicates,
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
        let (schema, duplicates) = (self.schema, self.duplicates);
        Ok(Box::new(reader.map(move |b| {
            let _ = &keep;
            b.map_err(|e| Error::corrupt(keep.path(), format!("spill file: {e}")))
                .and_then(detach_from_block)
                .and_then(|b| duplicates.restore(b, &schema))
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
        self.spill_deduplicated(schema, &Duplicates::default(), batches)
    }

    /// Write a sorted run to a new spill file that stores the `duplicates` columns once (they
    /// are cloned back on read).
    pub fn spill_deduplicated(
        &self,
        schema: &SchemaRef,
        duplicates: &Duplicates,
        batches: impl Iterator<Item = Result<RecordBatch>>,
    ) -> Result<SpillFile> {
        let stored = duplicates.stored_schema(schema);
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
        let mut w = FileWriter::try_new_with_options(BufWriter::new(handle), &stored, opts)
            .map_err(|e| Error::Arrow {
                context: Some(format!("spill {}", path.display())),
                source: e,
            })?;
        let mut rows = 0;
        for b in batches {
            let b = duplicates.strip(&b?, &stored)?;
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
        Ok(SpillFile {
            file,
            bytes,
            rows,
            schema: schema.clone(),
            duplicates: duplicates.clone(),
        })
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
            let duplicates = group[0].duplicates.clone();
            let runs = group
                .into_iter()
                .map(SpillFile::into_batches)
                .collect::<Result<Vec<_>>>()?;
            let merged = merge_sorted_runs(runs, layout, MergeEngine::KeepAll, false)?;
            let out = self.spill_deduplicated(schema, &duplicates, merged)?;
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

    fn tmp() -> Result<tempfile::TempDir> {
        tempfile::tempdir().map_err(|e| Error::io(Path::new("tmp"), e))
    }

    /// `rows` pseudo-random (incompressible) keys.
    fn random_keys(rows: usize) -> Int64Array {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        (0..rows)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 2) as i64
            })
            .collect()
    }

    /// One incompressible column (IPC stores it uncompressed, as a slice of the block) and one
    /// compressible column: the batches read back must not keep their blocks alive.
    #[test]
    fn read_back_batches_do_not_pin_their_ipc_block() -> Result<()> {
        let dir = tmp()?;
        let schema = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int64, false),
            Field::new("s", DataType::Utf8, true),
        ]));
        let rows = 4096;
        let keys = random_keys(rows);
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

    /// A key-value run's `_KEY_k` column equals its value column `k`: the spill file stores it
    /// once (smaller file) and the batches read back equal the written ones; a column that is
    /// not a copy is refused, not silently replaced.
    #[test]
    fn duplicated_key_columns_are_stored_once() -> Result<()> {
        let kv = Arc::new(Schema::new(vec![
            Field::new("_KEY_k", DataType::Int64, false),
            Field::new("_SEQUENCE_NUMBER", DataType::Int64, false),
            Field::new("v", DataType::Utf8, true),
            Field::new("k", DataType::Int64, false),
        ]));
        let keys: ArrayRef = Arc::new(random_keys(4096));
        let seqs: ArrayRef = Arc::new(Int64Array::from_iter_values(0..4096));
        let vals: ArrayRef = Arc::new(StringArray::from_iter_values(
            (0..4096).map(|i| format!("v{}", i % 9)),
        ));
        let batch = RecordBatch::try_new(
            kv.clone(),
            vec![keys.clone(), seqs.clone(), vals.clone(), keys.clone()],
        )?;
        let dups = Duplicates::of_keys(1, 3, &[0])?;
        let dir = tmp()?;
        let sp = spiller(dir.path(), Some(CompressionType::ZSTD));
        let plain = sp.spill(&kv, vec![Ok(batch.clone())].into_iter())?;
        let once = sp.spill_deduplicated(&kv, &dups, vec![Ok(batch.clone())].into_iter())?;
        assert!(
            once.bytes + 8 * 1024 < plain.bytes,
            "{} vs {}",
            once.bytes,
            plain.bytes
        );
        let back: Vec<RecordBatch> = once.into_batches()?.collect::<Result<_>>()?;
        assert_eq!(back, vec![batch.clone()]);
        // an equal column that is not the same array is accepted (a merge's output)
        let k = keys.as_any().downcast_ref::<Int64Array>().unwrap();
        let copy: ArrayRef = Arc::new(Int64Array::from_iter_values(k.values().iter().copied()));
        assert!(!copy.to_data().ptr_eq(&keys.to_data()));
        let equal = RecordBatch::try_new(
            kv.clone(),
            vec![copy, seqs.clone(), vals.clone(), keys.clone()],
        )?;
        let f = sp.spill_deduplicated(&kv, &dups, vec![Ok(equal.clone())].into_iter())?;
        assert_eq!(f.into_batches()?.collect::<Result<Vec<_>>>()?, vec![equal]);
        // a key column that differs from its value column
        let other = RecordBatch::try_new(kv.clone(), vec![seqs.clone(), seqs, vals, keys])?;
        let err = sp
            .spill_deduplicated(&kv, &dups, vec![Ok(other)].into_iter())
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("not a copy"), "{err}");
        assert!(Duplicates::new(vec![(0, 1), (1, 2)]).is_err());
        Ok(())
    }
}
