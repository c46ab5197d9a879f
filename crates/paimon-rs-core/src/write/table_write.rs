//! TableWrite: routes rows to (partition, bucket) writers and turns their buffers into level-0
//! files at `prepare_commit`.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use arrow_array::{ArrayRef, BooleanArray, Int8Array, RecordBatch, UInt32Array};
use arrow_schema::{Schema, SchemaRef};
use rayon::prelude::*;

use super::buffer::{MemoryCounter, SharedInput, SortBuffer, RUN_BATCH_ROWS};
use super::input::{align_batch, filter_rows, is_retract, AlignedBatch};
use super::pipeline::write_pipelined;
use super::rolling::{FileWriterContext, RollingFileWriter};
use crate::commit::CommitMessage;
use crate::compact::{BucketCompactor, CompactResult, CompactSettings};
use crate::error::{Error, Result};
use crate::io::parquet::ROW_GROUP_BYTES;
use crate::kv::{file_context, FileSource};
use crate::merge::{merge_sorted_runs, KvLayout, MergeEngine};
use crate::sort::{SpillOptions, Spiller};
use crate::spec::binary_row::{datum_from_arrow, RowEncoder};
use crate::spec::bucket::compute_buckets;
use crate::spec::datum::Datum;
use crate::spec::manifest::DataFileMeta;
use crate::spec::partition::partition_path;
use crate::spec::row_kind::RowKind;
use crate::spec::types::DataType;
use crate::table::FileStoreTable;

pub use crate::kv::kv_arrow_schema;

/// Arrow schema of the table's rows (field ids in metadata).
pub fn table_arrow_schema(table: &FileStoreTable) -> SchemaRef {
    Arc::new(Schema::new(
        table
            .schema
            .fields
            .iter()
            .map(|f| f.to_arrow())
            .collect::<Vec<_>>(),
    ))
}

/// What a bucket buffers: key-value rows (primary-key tables) or plain rows (append tables),
/// plus the files already flushed in this commit.
enum BucketBuffer {
    Kv(SortBuffer),
    Append {
        batches: Vec<RecordBatch>,
        bytes: usize,
        writer: Option<Box<RollingFileWriter>>,
    },
}

struct BucketWriter {
    partition: Vec<u8>,
    partition_path: String,
    bucket: i32,
    buffer: BucketBuffer,
    next_seq: i64,
    /// Level-0 files written by flushes under memory pressure, not yet handed to a commit.
    flushed: Vec<DataFileMeta>,
    /// Compactions run since the last commit because the bucket's sorted runs exceeded
    /// `num-sorted-run.stop-trigger` after a flush ([`stall_compact`]), accumulated.
    compacted: CompactResult,
}

impl BucketWriter {
    fn memory_size(&self) -> usize {
        match &self.buffer {
            BucketBuffer::Kv(b) => b.memory_size(),
            BucketBuffer::Append { bytes, writer, .. } => *bytes + open_file_bytes(writer),
        }
    }

    /// Spilled runs waiting for the final merge.
    fn spill_count(&self) -> usize {
        match &self.buffer {
            BucketBuffer::Kv(b) => b.spill_count(),
            BucketBuffer::Append { .. } => 0,
        }
    }

    fn buffered_rows(&self) -> usize {
        match &self.buffer {
            BucketBuffer::Kv(b) => b.in_memory_rows(),
            BucketBuffer::Append { batches, .. } => batches.iter().map(|b| b.num_rows()).sum(),
        }
    }
}

/// Key of a bucket writer: serialized partition BinaryRow and bucket.
type WriterKey = (Vec<u8>, i32);

/// What a writer knows of the sequence numbers already in the table.
#[derive(Default)]
struct Restored {
    /// The snapshot restored from (None = not read yet; Some(None) = the table is empty).
    snapshot: Option<Option<crate::spec::snapshot::Snapshot>>,
    /// Partitions whose live files were read.
    partitions: HashSet<Vec<u8>>,
    /// Every partition's live files were read.
    all: bool,
    /// Max sequence number per (partition, bucket) of those partitions' live files.
    max_seq: HashMap<WriterKey, i64>,
    /// Live files per (partition, bucket) of those partitions (primary-key tables that compact:
    /// a bucket's levels), kept up to date with what this writer hands out.
    files: HashMap<WriterKey, Vec<DataFileMeta>>,
}

/// Everything a flush needs that does not change per bucket.
struct FlushContext {
    file_ctx: FileWriterContext,
    layout: KvLayout,
    engine: MergeEngine,
    /// `write-buffer-size`: the budget of the buffers and of the final merges.
    budget: usize,
}

pub struct TableWrite {
    table: FileStoreTable,
    row_schema: SchemaRef,
    kv_schema: Option<SchemaRef>,
    partition_types: Vec<DataType>,
    partition_idx: Vec<usize>,
    bucket_idx: Vec<usize>,
    bucket_types: Vec<DataType>,
    key_idx: Vec<usize>,
    writers: HashMap<WriterKey, BucketWriter>,
    /// Sequence numbers of the table's live files, read per partition on first write to it.
    restored: Restored,
    flush: FlushContext,
    spillable: bool,
    spiller: Spiller,
    /// Memory of the key-value buffers' input batches.
    memory: MemoryCounter,
    /// See [`Self::ignore_previous_files`].
    ignore_previous: bool,
    /// Compaction settings of a primary-key writer that compacts (not `write-only`).
    compact_settings: Option<CompactSettings>,
}

impl TableWrite {
    pub fn new(table: FileStoreTable) -> Result<Self> {
        let pk = table.is_primary_key();
        table
            .check_writable()
            .map_err(|e| e.with_table(&table.name))?;
        let row_schema = table_arrow_schema(&table);
        let idx_of = |names: &[String]| -> Result<Vec<usize>> {
            names
                .iter()
                .map(|n| {
                    table
                        .schema
                        .field_index(n)
                        .ok_or_else(|| Error::schema(format!("column '{n}' is not in the schema")))
                })
                .collect()
        };
        let partition_idx = idx_of(table.partition_keys())?;
        let bucket_keys = table.bucket_keys();
        let bucket_idx = idx_of(&bucket_keys)?;
        let trimmed = table.trimmed_primary_keys();
        let key_idx = idx_of(&trimmed)?;
        let key_types = table.schema.types_of(&trimmed)?;
        let kv_schema = if pk {
            Some(kv_arrow_schema(&table, false)?)
        } else {
            None
        };
        let o = &table.options;
        let spiller = Spiller::new(SpillOptions::from_options(o));
        let file_ctx = file_context(&table, 0, FileSource::Append)?;
        let compact_settings = if pk && !o.write_only {
            Some(CompactSettings::from_table(&table).map_err(|e| e.with_table(&table.name))?)
        } else {
            None
        };
        Ok(TableWrite {
            partition_types: table.partition_types()?,
            bucket_types: table.schema.types_of(&bucket_keys)?,
            flush: FlushContext {
                file_ctx,
                layout: KvLayout {
                    num_keys: key_types.len(),
                },
                // the table's merge engine (validated options); append tables never merge
                engine: if pk {
                    table.merge_engine()?
                } else {
                    MergeEngine::Deduplicate
                },
                budget: o.write_buffer_size as usize,
            },
            spillable: o.write_buffer_spillable,
            spiller,
            memory: MemoryCounter::default(),
            ignore_previous: false,
            compact_settings,
            kv_schema,
            row_schema,
            partition_idx,
            bucket_idx,
            key_idx,
            writers: HashMap::new(),
            restored: Restored::default(),
            table,
        })
    }

    pub fn table(&self) -> &FileStoreTable {
        &self.table
    }

    /// Check, route and buffer one batch. Nothing is buffered if any check fails.
    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        self.write_batches(std::slice::from_ref(batch))
    }

    /// Check every batch, then route and buffer them all: if any check fails, nothing of any of
    /// them is buffered.
    pub fn write_batches(&mut self, batches: &[RecordBatch]) -> Result<()> {
        self.write_batches_as(batches, None)
    }

    /// [`Self::write_batches`] with every row of `batches` of row kind `kind` (when given),
    /// whatever the table's `rowkind.field` says: how a delete or a merge of the Python API
    /// writes its -D and +I rows into a table that has no row-kind column.
    pub fn write_batches_as(
        &mut self,
        batches: &[RecordBatch],
        kind: Option<RowKind>,
    ) -> Result<()> {
        let name = self.table.name.clone();
        let mut first_row = 0;
        let aligned = batches
            .iter()
            .map(|b| {
                let checked = self.check(b, first_row, kind);
                first_row += b.num_rows();
                checked
            })
            .collect::<Result<Vec<_>>>()
            .map_err(|e| e.with_table(&name))?;
        for a in aligned.into_iter().flatten() {
            // a stall's compaction reads restored files
            self.buffer(a)
                .map_err(|e| self.conflict_if_restored_gone(e))?;
        }
        Ok(())
    }

    /// Validate a batch against the table (`first_row`: rows of the same call before it, for
    /// messages); None if it has no rows left to write.
    fn check(
        &self,
        batch: &RecordBatch,
        first_row: usize,
        kind: Option<RowKind>,
    ) -> Result<Option<AlignedBatch>> {
        if batch.num_rows() == 0 {
            // still validate the columns
            align_batch(&self.table.schema, &self.row_schema, batch, None, first_row)?;
            return Ok(None);
        }
        let rowkind_field = match kind {
            Some(_) => None,
            None => self.table.options.rowkind_field.as_deref(),
        };
        let mut aligned = align_batch(
            &self.table.schema,
            &self.row_schema,
            batch,
            rowkind_field,
            first_row,
        )?;
        if let Some(k) = kind {
            aligned.kinds = Some(Int8Array::from(vec![k.byte(); batch.num_rows()]));
        }
        if !self.table.is_primary_key() {
            if let Some(k) = &aligned.kinds {
                if k.values().iter().any(|&v| is_retract(v)) {
                    return Err(Error::unsupported(
                        "-U/-D rows in an append table (it has no primary key to retract)",
                    ));
                }
            }
        }
        let (ign_del, ign_ub) = (
            self.table.options.ignore_delete,
            self.table.options.ignore_update_before,
        );
        if ign_del || ign_ub {
            if let Some(k) = &aligned.kinds {
                let keep: BooleanArray = k
                    .values()
                    .iter()
                    .map(|&v| {
                        Some(
                            !(ign_del && is_retract(v)
                                || ign_ub && v == RowKind::UpdateBefore.byte()),
                        )
                    })
                    .collect();
                aligned = filter_rows(&aligned, &keep)?;
            }
        }
        Ok(Some(aligned))
    }

    fn buffer(&mut self, aligned: AlignedBatch) -> Result<()> {
        let routed = self.route(&aligned)?;
        let n = aligned.batch.num_rows();
        // Primary-key buckets keep the checked batch itself (shared by all of them) and their
        // row indices: rows are copied once, when sorted rows are gathered for a file.
        let shared = self.kv_schema.as_ref().map(|_| {
            Arc::new(SharedInput::new(
                aligned.batch.clone(),
                aligned.kinds.clone(),
                &self.memory,
            ))
        });
        // sequence numbers continue from the table's files in the partitions new writers open
        let new_partitions: Vec<Vec<u8>> = routed
            .iter()
            .filter(|(key, _)| !self.writers.contains_key(key))
            .map(|((p, _), _)| p.clone())
            .collect();
        self.restore_sequences(new_partitions.iter().map(Vec::as_slice).collect())?;
        // All checks passed: only now touch the writers.
        for ((partition, bucket), (ppath, indices)) in routed {
            let key = (partition, bucket);
            if !self.writers.contains_key(&key) {
                let next_seq = self.restored_max_seq(&key) + 1;
                let buffer = match &self.kv_schema {
                    Some(s) => BucketBuffer::Kv(SortBuffer::new(
                        s.clone(),
                        self.flush.layout,
                        self.key_idx.clone(),
                        self.memory.clone(),
                    )),
                    None => BucketBuffer::Append {
                        batches: vec![],
                        bytes: 0,
                        writer: None,
                    },
                };
                self.writers.insert(
                    key.clone(),
                    BucketWriter {
                        partition: key.0.clone(),
                        partition_path: ppath,
                        bucket,
                        buffer,
                        next_seq,
                        flushed: vec![],
                        compacted: CompactResult::default(),
                    },
                );
            }
            if let Some(w) = self.writers.get_mut(&key) {
                let rows = indices.len();
                match (&mut w.buffer, &shared) {
                    (BucketBuffer::Kv(buf), Some(input)) => {
                        let indices = (rows < n).then_some(indices);
                        buf.put(input, indices, w.next_seq);
                        w.next_seq += rows as i64;
                    }
                    (BucketBuffer::Append { batches, bytes, .. }, _) => {
                        let idx = UInt32Array::from(indices);
                        let part = arrow_select::take::take_record_batch(&aligned.batch, &idx)?;
                        *bytes += part.get_array_memory_size();
                        batches.push(part);
                    }
                    (BucketBuffer::Kv(_), None) => {
                        return Err(Error::Internal("key-value buffer without a schema".into()))
                    }
                }
            }
        }
        drop(shared);
        self.enforce_budget()
    }

    /// While the buffers hold more than `write-buffer-size`: spill (or flush) the largest
    /// buffer together with every buffer at least half its size, in parallel, then copy the
    /// rows of the smaller buffers out of the shared input batches so those can be freed.
    /// (Rows of one input batch are spread over many buckets: spilling only the largest would
    /// free none of the input; with uniformly spread keys every bucket spills at once.)
    fn enforce_budget(&mut self) -> Result<()> {
        loop {
            if self.memory_size() <= self.flush.budget {
                return Ok(());
            }
            let largest = self
                .writers
                .values()
                .map(BucketWriter::memory_size)
                .max()
                .unwrap_or(0);
            if largest == 0 {
                return Ok(());
            }
            let spillable = self.spillable;
            let spiller = &self.spiller;
            let mut disk = 0u64;
            let mut chosen: Vec<(&mut BucketWriter, bool)> = vec![];
            let mut rest: Vec<&mut BucketWriter> = vec![];
            for w in self.writers.values_mut() {
                let size = w.memory_size();
                if size == 0 || size * 2 < largest {
                    rest.push(w);
                    continue;
                }
                let spill = match &w.buffer {
                    BucketBuffer::Kv(buf) if spillable => {
                        let est = buf.spill_estimate();
                        let fits = spiller.has_room(disk + est);
                        if fits {
                            disk += est;
                        }
                        fits
                    }
                    _ => false,
                };
                chosen.push((w, spill));
            }
            let table = &self.table;
            let flush = &self.flush;
            let stall = self.compact_settings.as_ref();
            let (restored, ignore_previous) = (&self.restored.files, self.ignore_previous);
            first_error(
                chosen
                    .into_par_iter()
                    .map(|(w, spill)| match &mut w.buffer {
                        BucketBuffer::Kv(buf) if spill => buf.spill(spiller),
                        _ => {
                            let dir = table.bucket_dir(&w.partition_path, w.bucket);
                            flush_bucket(flush, spiller, w, dir.clone(), false, false)?;
                            match stall {
                                Some(settings) => {
                                    let previous = match ignore_previous {
                                        true => None,
                                        false => restored.get(&(w.partition.clone(), w.bucket)),
                                    };
                                    let previous = previous.map_or(&[][..], Vec::as_slice);
                                    stall_compact(table, settings, previous, w, dir)
                                }
                                None => Ok(()),
                            }
                        }
                    }),
            )?;
            for w in rest {
                if let BucketBuffer::Kv(buf) = &mut w.buffer {
                    buf.compact()?;
                }
            }
        }
    }

    /// Read the highest sequence number per bucket of `partitions` from the table's live files,
    /// unless read before. The first read takes only the manifests that may hold these
    /// partitions (a write usually touches few); a later one, for partitions not seen yet,
    /// reads them all once, so a write spreading over many partitions reads the manifests at
    /// most twice. The snapshot is the latest at the first read, for every partition.
    fn restore_sequences(&mut self, partitions: Vec<&[u8]>) -> Result<()> {
        if self.restored.all {
            return Ok(());
        }
        let missing: Vec<&[u8]> = partitions
            .into_iter()
            .filter(|p| !self.restored.partitions.contains(*p))
            .collect::<HashSet<_>>()
            .into_iter()
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        if self.restored.snapshot.is_none() {
            self.restored.snapshot = Some(self.table.snapshot_manager().latest()?);
        }
        let everything = !self.restored.partitions.is_empty();
        if let Some(Some(snap)) = &self.restored.snapshot {
            let filter = if everything {
                None
            } else {
                crate::table::live::partitions_filter(&self.table, missing.clone())?
            };
            let entries =
                crate::table::live::live_entries_filtered(&self.table, snap, filter.as_ref())?;
            // only once the read succeeded: a failed read leaves what is known intact
            if everything {
                self.restored.max_seq.clear();
                self.restored.files.clear();
            }
            let keep_files = self.compacts();
            for e in entries {
                if keep_files {
                    self.restored
                        .files
                        .entry((e.partition.clone(), e.bucket))
                        .or_default()
                        .push(e.file.clone());
                }
                let v = self
                    .restored
                    .max_seq
                    .entry((e.partition.clone(), e.bucket))
                    .or_insert(-1);
                *v = (*v).max(e.file.max_sequence_number);
            }
        }
        self.restored.all = everything;
        self.restored
            .partitions
            .extend(missing.into_iter().map(<[u8]>::to_vec));
        Ok(())
    }

    /// Highest sequence number of a bucket's live files (-1 if none); its partition must have
    /// been restored.
    fn restored_max_seq(&self, key: &WriterKey) -> i64 {
        self.restored.max_seq.get(key).copied().unwrap_or(-1)
    }

    /// Group row indices by (partition, bucket). Returns (partition bytes, bucket) ->
    /// (partition path, row indices).
    #[allow(clippy::type_complexity)]
    fn route(&self, b: &AlignedBatch) -> Result<Vec<(WriterKey, (String, Vec<u32>))>> {
        let n = b.batch.num_rows();
        if n == 0 {
            return Ok(vec![]);
        }
        let cols = b.batch.columns();
        // partitions
        let mut parts: Vec<(Vec<u8>, Vec<u32>)> = vec![];
        if self.partition_idx.is_empty() {
            parts.push((
                crate::spec::binary_row::empty_row(),
                (0..n as u32).collect(),
            ));
        } else {
            let pcols: Vec<ArrayRef> = self
                .partition_idx
                .iter()
                .map(|&i| cols[i].clone())
                .collect();
            let enc = RowEncoder::new(&self.partition_types, &pcols)?;
            let mut pos: HashMap<Vec<u8>, usize> = HashMap::new();
            let mut buf = Vec::new();
            let arity = (self.partition_types.len() as i32).to_be_bytes();
            for r in 0..n {
                enc.encode(r, &mut buf)?;
                let mut keyb = Vec::with_capacity(4 + buf.len());
                keyb.extend_from_slice(&arity);
                keyb.extend_from_slice(&buf);
                match pos.get(&keyb) {
                    Some(&p) => parts[p].1.push(r as u32),
                    None => {
                        pos.insert(keyb.clone(), parts.len());
                        parts.push((keyb, vec![r as u32]));
                    }
                }
            }
        }
        let num_buckets = self.table.options.bucket;
        let mut out = vec![];
        for (pbytes, rows) in parts {
            let Some(&first) = rows.first() else { continue };
            let first = first as usize;
            let values: Vec<Option<Datum>> = self
                .partition_idx
                .iter()
                .zip(&self.partition_types)
                .map(|(&i, t)| datum_from_arrow(cols[i].as_ref(), first, t))
                .collect::<Result<_>>()?;
            let ppath = partition_path(
                self.table.partition_keys(),
                &self.partition_types,
                &values,
                &self.table.options.partition_default_name,
                self.table.options.partition_legacy_name,
            )?;
            if num_buckets <= 0 {
                out.push(((pbytes, 0), (ppath, rows)));
                continue;
            }
            let idx = UInt32Array::from(rows.clone());
            let bcols: Vec<ArrayRef> = if rows.len() == n {
                self.bucket_idx.iter().map(|&i| cols[i].clone()).collect()
            } else {
                self.bucket_idx
                    .iter()
                    .map(|&i| arrow_select::take::take(cols[i].as_ref(), &idx, None))
                    .collect::<std::result::Result<_, _>>()?
            };
            let buckets = compute_buckets(&bcols, &self.bucket_types, num_buckets)?;
            let mut per: Vec<Vec<u32>> = vec![vec![]; num_buckets as usize];
            for (j, &bk) in buckets.iter().enumerate() {
                per[bk as usize].push(rows[j]);
            }
            for (bk, r) in per.into_iter().enumerate() {
                if !r.is_empty() {
                    out.push(((pbytes.clone(), bk as i32), (ppath.clone(), r)));
                }
            }
        }
        Ok(out)
    }

    /// Flush every bucket (in parallel) into level-0 files; one message per bucket written.
    ///
    /// Buckets that spilled merge their runs last, at most [`Self::merge_slots`] at a time,
    /// each feeding a Parquet encoder on a second thread ([`write_pipelined`]); the others
    /// flush in parallel first.
    pub fn prepare_commit(&mut self) -> Result<Vec<CommitMessage>> {
        let name = self.table.name.clone();
        self.spill_before_merge().map_err(|e| e.with_table(&name))?;
        let total_buckets = self.table.options.bucket;
        let slots = self.merge_slots();
        let flush = &self.flush;
        let spiller = &self.spiller;
        let table = &self.table;
        // the snapshot every bucket writer continued the sequence numbers of
        let restored_snapshot = self
            .restored
            .snapshot
            .as_ref()
            .map(|s| s.as_ref().map(|s| s.id));
        let flush_one = |w: &mut BucketWriter, pipelined: bool| -> Result<CommitMessage> {
            let dir = table.bucket_dir(&w.partition_path, w.bucket);
            flush_bucket(flush, spiller, w, dir, true, pipelined)?;
            Ok(CommitMessage {
                partition: w.partition.clone(),
                bucket: w.bucket,
                total_buckets,
                new_files: std::mem::take(&mut w.flushed),
                // the stalls' compactions; compact_written continues from them
                compact_before: std::mem::take(&mut w.compacted.before),
                compact_after: std::mem::take(&mut w.compacted.after),
                restored_snapshot,
            })
        };
        let (merging, direct): (Vec<&mut BucketWriter>, Vec<&mut BucketWriter>) =
            self.writers.values_mut().partition(|w| w.spill_count() > 0);
        let mut results: Vec<Result<CommitMessage>> = direct
            .into_par_iter()
            .map(|w| flush_one(w, false))
            .collect();
        // deal the merging buckets into `slots` queues, run side by side
        let mut queues: Vec<Vec<&mut BucketWriter>> = (0..slots).map(|_| vec![]).collect();
        for (i, w) in merging.into_iter().enumerate() {
            queues[i % slots].push(w);
        }
        let merged: Vec<Vec<Result<CommitMessage>>> = queues
            .into_par_iter()
            .map(|q| q.into_iter().map(|w| flush_one(w, true)).collect())
            .collect();
        results.extend(merged.into_iter().flatten());
        let mut msgs = vec![];
        let mut first_err = None;
        for r in results {
            match r {
                Ok(m) if !m.is_empty() => msgs.push(m),
                Ok(_) => {}
                Err(e) if first_err.is_none() => first_err = Some(e),
                Err(_) => {}
            }
        }
        if first_err.is_none() {
            if let Err(e) = self.compact_written(&mut msgs) {
                first_err = Some(e);
            }
        }
        let mut paths = vec![];
        for m in &msgs {
            let ppath = self.partition_path_of(m);
            let written = CompactResult {
                before: m.compact_before.clone(),
                after: m.compact_after.clone(),
            }
            .written();
            for f in m.new_files.iter().chain(&written) {
                paths.push(self.table.bucket_dir(&ppath, m.bucket).join(&f.file_name));
            }
        }
        if let Some(e) = first_err {
            for p in paths {
                let _ = crate::io::remove_file_if_exists(&p);
            }
            return Err(self.conflict_if_restored_gone(e));
        }
        // every run was consumed: drop the (now empty) spill directory
        self.reset_spiller();
        Ok(msgs)
    }

    /// A restored file found missing because the snapshot this writer restored from was
    /// expired (or rolled back) meanwhile and its files deleted: a commit conflict (the data
    /// must be written again against the table as it is now), not a corrupt table.
    fn conflict_if_restored_gone(&self, e: Error) -> Error {
        let name = &self.table.name;
        match &self.restored.snapshot {
            Some(Some(snap))
                if crate::table::live::missing_since_gone(&self.table, snap.id, &e) =>
            {
                Error::CommitConflict {
                    table: name.clone(),
                    message: format!(
                        "snapshot {} this write restored its files from was expired (or rolled \
                         back) while it was being written, and files it compacts are gone ({e}); \
                         nothing was committed: write the data again",
                        snap.id
                    ),
                }
            }
            _ => e.with_table(name),
        }
    }

    /// An overwrite's writer (Java's `withIgnorePreviousFiles`): its compactions see only the
    /// files it writes, since the commit replaces the live ones.
    pub fn ignore_previous_files(&mut self, ignore: bool) {
        self.ignore_previous = ignore;
    }

    /// Whether this writer compacts (paimon-behaviour.md §1.6): primary-key tables unless
    /// `write-only`.
    fn compacts(&self) -> bool {
        // append tables: bucketed ones, as Java's BucketedAppendCompactManager (bucket-unaware
        // tables are compacted by a dedicated job, Table.compact)
        (self.table.is_primary_key() || self.table.options.bucket > 0)
            && !self.table.options.write_only
    }

    /// Compaction at `prepare_commit` (a batch write waits for it, §1.6): each written bucket's
    /// levels (its restored live files plus the new files) are handed to the universal picker
    /// (a full compaction with `full-compaction.delta-commits`, which batch writes apply at
    /// every commit, §12) and the task's before/after files go into the bucket's message.
    fn compact_written(&mut self, msgs: &mut [CommitMessage]) -> Result<()> {
        if !self.compacts() || msgs.is_empty() {
            return Ok(());
        }
        let settings = CompactSettings::from_table(&self.table)?;
        let full = self.table.options.full_compaction_delta_commits.is_some();
        let dirs: HashMap<WriterKey, std::path::PathBuf> = self
            .writers
            .iter()
            .map(|(k, w)| {
                (
                    k.clone(),
                    self.table.bucket_dir(&w.partition_path, w.bucket),
                )
            })
            .collect();
        let (table, restored) = (&self.table, &self.restored.files);
        let ignore_previous = self.ignore_previous;
        let results: Vec<Result<()>> = msgs
            .par_iter_mut()
            .map(|m| {
                let key = (m.partition.clone(), m.bucket);
                let Some(dir) = dirs.get(&key).cloned() else {
                    return Ok(());
                };
                let mut files = if ignore_previous {
                    vec![]
                } else {
                    restored.get(&key).cloned().unwrap_or_default()
                };
                files.extend(m.new_files.iter().cloned());
                // the stalls' compactions of this commit (primary-key buckets only)
                apply_compaction(&mut files, &m.compact_before, &m.compact_after);
                if !table.is_primary_key() {
                    if let Some((before, after)) = crate::compact::append::compact_written_bucket(
                        table,
                        &dir,
                        &m.partition,
                        m.bucket,
                        m.total_buckets,
                        &files,
                    )? {
                        m.compact_before = before;
                        m.compact_after = after;
                    }
                    return Ok(());
                }
                let mut c = BucketCompactor::new(table, &settings, dir.clone(), files)?;
                if let Some(r) = c.compact(full)? {
                    let mut acc = CompactResult {
                        before: std::mem::take(&mut m.compact_before),
                        after: std::mem::take(&mut m.compact_after),
                    };
                    let intermediate = acc.absorb(r);
                    (m.compact_before, m.compact_after) = (acc.before, acc.after);
                    for f in intermediate {
                        crate::io::remove_file_if_exists(&dir.join(&f.file_name))?;
                    }
                }
                Ok(())
            })
            .collect();
        results.into_iter().collect::<Result<Vec<()>>>()?;
        // the writer's view of each bucket: this commit's new files and compaction applied
        for m in msgs.iter() {
            let files = self
                .restored
                .files
                .entry((m.partition.clone(), m.bucket))
                .or_default();
            files.extend(m.new_files.iter().cloned());
            apply_compaction(files, &m.compact_before, &m.compact_after);
        }
        Ok(())
    }

    /// The budget covers the final merge too: a bucket that spilled merges its runs into a
    /// Parquet writer ([`merge_footprint`]), [`Self::merge_slots`] buckets at once. If that
    /// working memory and the in-memory rows together exceed `write-buffer-size`, the in-memory
    /// rows of the buckets that spilled are spilled first (as Paimon does at flush), so the
    /// merges start with the buffers free.
    fn spill_before_merge(&mut self) -> Result<()> {
        if !self.spillable {
            return Ok(());
        }
        let at_once = self.merge_slots();
        let in_memory = self.memory.get();
        let mut merging = vec![];
        for w in self.writers.values_mut() {
            if let BucketBuffer::Kv(buf) = &mut w.buffer {
                if buf.spill_count() > 0 && buf.in_memory_rows() > 0 {
                    merging.push(buf);
                }
            }
        }
        let per_merge = merging
            .iter()
            .map(|b| merge_footprint(b, self.flush.budget))
            .max()
            .unwrap_or(0);
        let estimate: u64 = merging.iter().map(|b| b.spill_estimate()).sum();
        if merging.is_empty()
            || in_memory + at_once * per_merge <= self.flush.budget
            || !self.spiller.has_room(estimate)
        {
            return Ok(());
        }
        let spiller = &self.spiller;
        first_error(merging.into_par_iter().map(|b| b.spill(spiller)))
    }

    /// How many buckets merge their spilled runs at once at `prepare_commit`: one per worker
    /// thread (each also has its encoder thread), and no more than fit `write-buffer-size`
    /// ([`merge_footprint`]). A small buffer thus merges one bucket at a time.
    fn merge_slots(&self) -> usize {
        let per_merge = self
            .writers
            .values()
            .filter_map(|w| match &w.buffer {
                BucketBuffer::Kv(b) if b.spill_count() > 0 => {
                    Some(merge_footprint(b, self.flush.budget))
                }
                _ => None,
            })
            .max()
            .unwrap_or(1)
            .max(1);
        let by_memory = (self.flush.budget / per_merge).max(1);
        rayon::current_num_threads().min(by_memory)
    }

    fn reset_spiller(&mut self) {
        let opts = self.spiller.options().clone();
        self.spiller = Spiller::new(opts);
    }

    /// Release buffers, spill files and the spill directory. Files handed out by
    /// `prepare_commit` are left to the commit.
    pub fn close(&mut self) {
        self.writers.clear();
        self.reset_spiller();
    }

    fn partition_path_of(&self, m: &CommitMessage) -> String {
        self.writers
            .get(&(m.partition.clone(), m.bucket))
            .map(|w| w.partition_path.clone())
            .unwrap_or_default()
    }

    /// Drop buffered rows and spill files and delete files flushed since the last
    /// `prepare_commit` (files it handed out belong to the commit: `FileStoreCommit`
    /// deletes them if the commit fails or is aborted).
    pub fn abort(&mut self) {
        for w in self.writers.values() {
            let dir = self.table.bucket_dir(&w.partition_path, w.bucket);
            for f in w.flushed.iter().chain(&w.compacted.written()) {
                let _ = crate::io::remove_file_if_exists(&dir.join(&f.file_name));
            }
        }
        // dropping the writers drops buffers, spill files and open file writers (which delete
        // their own files)
        self.writers.clear();
        self.reset_spiller();
    }

    pub fn buffered_rows(&self) -> usize {
        self.writers.values().map(BucketWriter::buffered_rows).sum()
    }

    /// Arrow memory held by all buffers (an input batch shared by several buckets counts once),
    /// and by the row groups of append tables' open files.
    pub fn memory_size(&self) -> usize {
        let append: usize = self
            .writers
            .values()
            .map(|w| match &w.buffer {
                BucketBuffer::Append { .. } => w.memory_size(),
                BucketBuffer::Kv(_) => 0,
            })
            .sum();
        self.memory.get() + append
    }

    /// Number of spill files currently held.
    pub fn spill_count(&self) -> usize {
        self.writers.values().map(BucketWriter::spill_count).sum()
    }

    /// The writer's spill directory, if it spilled.
    pub fn spill_dir(&self) -> Option<std::path::PathBuf> {
        self.spiller.spill_dir()
    }
}

/// Working memory of one bucket's final merge: two batches of `RUN_BATCH_ROWS` rows per run
/// (the one being merged and the next, decoded) and the Parquet writer: its open row group
/// (up to `ROW_GROUP_BYTES`) plus a page and a dictionary per column, half as much again.
/// Measured with heaptrack on the 64 mb benchmark (10M rows, 4 buckets, ~20 runs a bucket):
/// 21 MB in the runs and the merge output, 25 MB in the Parquet writer; this gives 42 MB.
fn merge_footprint(buf: &SortBuffer, budget: usize) -> usize {
    let runs = buf.spill_count() + usize::from(buf.in_memory_rows() > 0);
    runs.min(merge_fan_in(buf, budget)) * run_footprint(buf) + ROW_GROUP_BYTES * 3 / 2
}

/// Memory of one run in a merge: the batch being merged and the next, decoded.
fn run_footprint(buf: &SortBuffer) -> usize {
    2 * RUN_BATCH_ROWS * buf.run_row_bytes().max(1)
}

/// Most runs a bucket's final merge reads at once: as many as `budget` holds (at least 2);
/// `local-sort.max-num-file-handles` caps it too. More runs are pre-merged into fewer first,
/// so a small buffer with many spills merges in several passes instead of holding a batch of
/// every run.
fn merge_fan_in(buf: &SortBuffer, budget: usize) -> usize {
    (budget / run_footprint(buf)).max(2)
}

/// Write what a bucket buffers into level-0 files. For primary-key buckets the in-memory and
/// spilled runs are merged through the merge function (each key once per flush). With `last`
/// the append writer is closed too (prepare_commit).
fn flush_bucket(
    ctx: &FlushContext,
    spiller: &Spiller,
    w: &mut BucketWriter,
    dir: std::path::PathBuf,
    last: bool,
    pipelined: bool,
) -> Result<()> {
    let mut file_ctx = ctx.file_ctx.clone();
    file_ctx.dir = dir;
    match &mut w.buffer {
        BucketBuffer::Kv(buf) => {
            if buf.is_empty() {
                return Ok(());
            }
            let writer = RollingFileWriter::new(file_ctx, 0);
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
                    let (runs, spill_bytes) = buf.take_runs(spiller, fan_in)?;
                    let merged = merge_sorted_runs(runs, ctx.layout, ctx.engine.clone(), false)?;
                    let files = write_all(writer, merged, pipelined)?;
                    spiller.release(spill_bytes);
                    files
                }
            };
            w.flushed.extend(files);
        }
        BucketBuffer::Append {
            batches,
            bytes,
            writer,
        } => {
            if !batches.is_empty() {
                let rw = match writer {
                    Some(rw) => rw,
                    None => writer.insert(Box::new(RollingFileWriter::new(file_ctx, w.next_seq))),
                };
                for b in batches.drain(..) {
                    w.next_seq += b.num_rows() as i64;
                    rw.write(&b)?;
                }
                *bytes = 0;
            }
            if last {
                if let Some(rw) = writer.take() {
                    w.flushed.extend(rw.close()?);
                }
            } else if let Some(rw) = writer {
                // under memory pressure: the open file's row group goes to disk too
                rw.flush_row_group()?;
            }
        }
    }
    Ok(())
}

/// A bucket's files as this writer sees them: `previous` live files plus this commit's flushes,
/// with this commit's compactions so far applied.
fn bucket_files(previous: &[DataFileMeta], w: &BucketWriter) -> Vec<DataFileMeta> {
    let mut files: Vec<DataFileMeta> = previous.iter().chain(&w.flushed).cloned().collect();
    apply_compaction(&mut files, &w.compacted.before, &w.compacted.after);
    files
}

/// Apply a compaction's result to a bucket's files: drop `before` (by name), add `after`.
fn apply_compaction(
    files: &mut Vec<DataFileMeta>,
    before: &[DataFileMeta],
    after: &[DataFileMeta],
) {
    let gone: HashSet<&str> = before.iter().map(|f| f.file_name.as_str()).collect();
    files.retain(|f| !gone.contains(f.file_name.as_str()));
    files.extend(after.iter().cloned());
}

/// Sorted runs of a bucket's files: each level-0 file, plus one per non-empty level above.
fn sorted_runs(files: &[DataFileMeta]) -> usize {
    let upper: HashSet<i32> = files.iter().map(|f| f.level).filter(|&l| l > 0).collect();
    files.iter().filter(|f| f.level == 0).count() + upper.len()
}

/// Java's write stall (`MergeTreeWriter.flushWriteBuffer` waiting for compaction while
/// `MergeTreeCompactManager.shouldWaitForLatestCompaction`): after a flush under memory
/// pressure, while the bucket's sorted runs (`previous` live files plus this commit's flushes,
/// with this commit's compactions applied) exceed `num-sorted-run.stop-trigger`, the picker's
/// compaction runs before the write goes on. Its result accumulates in `w.compacted` (files an
/// earlier compaction of this commit wrote and this one consumed are deleted at once).
fn stall_compact(
    table: &FileStoreTable,
    settings: &CompactSettings,
    previous: &[DataFileMeta],
    w: &mut BucketWriter,
    dir: std::path::PathBuf,
) -> Result<()> {
    let files = bucket_files(previous, w);
    let mut n = sorted_runs(&files);
    if n <= settings.stop_trigger {
        return Ok(());
    }
    log::info!(
        target: "paimon_rs.compaction",
        "{} ({}): {n} sorted runs exceed num-sorted-run.stop-trigger {}: writes wait for \
         compaction",
        table.name,
        dir.strip_prefix(&table.path).unwrap_or(&dir).display(),
        settings.stop_trigger
    );
    let mut c = BucketCompactor::new(table, settings, dir.clone(), files)?;
    while n > settings.stop_trigger {
        let Some(r) = c.compact(false)? else {
            break;
        };
        for f in w.compacted.absorb(r) {
            crate::io::remove_file_if_exists(&dir.join(&f.file_name))?;
        }
        let after = c.levels.number_of_sorted_runs();
        if after >= n {
            break;
        }
        n = after;
    }
    Ok(())
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

/// Memory held by an append bucket's open file (its row group).
fn open_file_bytes(writer: &Option<Box<RollingFileWriter>>) -> usize {
    writer.as_ref().map_or(0, |rw| rw.buffered_bytes())
}

/// Wait for every result; the first error, if any.
fn first_error(results: impl ParallelIterator<Item = Result<()>>) -> Result<()> {
    let errors: Vec<Error> = results.filter_map(|r| r.err()).collect();
    match errors.into_iter().next() {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use arrow_array::{Int64Array, StringArray};
    use arrow_schema::DataType as AT;
    use arrow_schema::Field;

    use super::*;
    use crate::table::catalog::{FileSystemCatalog, NewTableSchema};

    fn table(dir: &std::path::Path, opts: &[(&str, &str)]) -> FileStoreTable {
        let cat = FileSystemCatalog::new(dir).unwrap();
        cat.create_database("db", true).unwrap();
        let schema = Schema::new(vec![
            Field::new("k", AT::Int64, false),
            Field::new("v", AT::Utf8, true),
        ]);
        let opts: BTreeMap<String, String> = opts
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let s = NewTableSchema::from_arrow(&schema, vec![], vec!["k".into()], opts, None).unwrap();
        cat.create_table("db.t", s, false).unwrap();
        cat.get_table("db.t").unwrap()
    }

    fn rows(start: i64, n: i64) -> RecordBatch {
        let ks: Vec<i64> = (start..start + n).collect();
        let vs: Vec<String> = ks.iter().map(|k| format!("value-{k:012}")).collect();
        let schema = Arc::new(Schema::new(vec![
            Field::new("k", AT::Int64, false),
            Field::new("v", AT::Utf8, true),
        ]));
        RecordBatch::try_new(
            schema,
            vec![
                Arc::new(Int64Array::from(ks)),
                Arc::new(StringArray::from(vs)),
            ],
        )
        .unwrap()
    }

    fn in_memory_rows_of_spilled_buckets(w: &TableWrite) -> usize {
        w.writers
            .values()
            .map(|b| match &b.buffer {
                BucketBuffer::Kv(buf) if buf.spill_count() > 0 => buf.in_memory_rows(),
                _ => 0,
            })
            .sum()
    }

    /// The largest number of sorted runs of any bucket, as the writer sees its buckets now.
    fn max_runs(w: &TableWrite) -> usize {
        w.writers
            .iter()
            .map(|(key, b)| {
                let previous = w.restored.files.get(key).map_or(&[][..], Vec::as_slice);
                sorted_runs(&bucket_files(previous, b))
            })
            .max()
            .unwrap_or(0)
    }

    /// One bucket, no spilling, a 64 kb buffer (a flush every ~1,500 rows), stop trigger 4.
    fn stall_table(dir: &std::path::Path, write_only: &str) -> FileStoreTable {
        let opts = [
            ("bucket", "1"),
            ("write-buffer-spillable", "false"),
            ("write-buffer-size", "32 kb"),
            ("num-sorted-run.compaction-trigger", "3"),
            ("num-sorted-run.stop-trigger", "4"),
            ("write-only", write_only),
        ];
        table(dir, &opts)
    }

    /// Many flushes per commit (no spilling, a tiny buffer): after every write and after the
    /// commit no bucket holds more sorted runs than the stop trigger, and every key reads back
    /// with its newest value. Without the stall the single bucket reaches dozens of runs.
    #[test]
    fn flushes_stall_for_compaction_above_the_stop_trigger() {
        let dir = tempfile::tempdir().unwrap();
        let t = stall_table(dir.path(), "false");
        for commit in 0..2 {
            let mut w = TableWrite::new(t.clone()).unwrap();
            let mut flushes = 0;
            for i in 0..30 {
                let before = w.writers.values().map(|b| b.flushed.len()).sum::<usize>();
                // upserts over 5,000 keys
                w.write(&rows((i % 5) * 1000, 1000)).unwrap();
                flushes += w.writers.values().map(|b| b.flushed.len()).sum::<usize>() - before;
                assert!(
                    max_runs(&w) <= 4,
                    "commit {commit} write {i}: {} runs",
                    max_runs(&w)
                );
            }
            assert!(flushes > 10, "{flushes} flushes");
            let msgs = w.prepare_commit().unwrap();
            crate::commit::FileStoreCommit::new(t.clone(), "u".into())
                .commit(&msgs, commit, None)
                .unwrap();
            assert!(max_runs(&w) <= 4);
        }
        for b in crate::compact::plan::compaction_plan(&t).unwrap() {
            assert!(b.runs.len() <= 4, "{} runs after the commits", b.runs.len());
        }
        let plan = crate::read::scan::TableScan::new(t.clone(), None)
            .plan()
            .unwrap();
        let r = crate::read::table_read::TableRead::new(t.clone(), None, None).unwrap();
        let mut got = BTreeMap::new();
        for b in r.read_splits(&plan.splits).unwrap() {
            let k = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
            let v = b.column(1).as_any().downcast_ref::<StringArray>().unwrap();
            for i in 0..b.num_rows() {
                assert!(got.insert(k.value(i), v.value(i).to_string()).is_none());
            }
        }
        let want: BTreeMap<i64, String> =
            (0..5000).map(|k| (k, format!("value-{k:012}"))).collect();
        assert_eq!(got, want);
    }

    /// `write_batches_as` writes every row with the given kind, ignoring `rowkind.field`: -D
    /// rows delete their keys in a table whose row-kind column says +I; an append table
    /// refuses retractions.
    #[test]
    fn forced_row_kinds_delete_keys_whatever_the_rowkind_field_says() {
        let dir = tempfile::tempdir().unwrap();
        let t = table(dir.path(), &[("bucket", "2"), ("rowkind.field", "v")]);
        let plus = |start, n| {
            let b = rows(start, n);
            let kinds = StringArray::from(vec!["+I"; n as usize]);
            RecordBatch::try_new(b.schema(), vec![b.column(0).clone(), Arc::new(kinds)]).unwrap()
        };
        let commit = |msgs: &[CommitMessage], id| {
            crate::commit::FileStoreCommit::new(t.clone(), "u".into())
                .commit(msgs, id, None)
                .unwrap();
        };
        let mut w = TableWrite::new(t.clone()).unwrap();
        w.write(&plus(0, 10)).unwrap();
        commit(&w.prepare_commit().unwrap(), 0);
        let mut w = TableWrite::new(t.clone()).unwrap();
        w.write_batches_as(&[plus(3, 4)], Some(RowKind::Delete))
            .unwrap();
        commit(&w.prepare_commit().unwrap(), 1);
        let plan = crate::read::scan::TableScan::new(t.clone(), None)
            .plan()
            .unwrap();
        let r = crate::read::table_read::TableRead::new(t.clone(), None, None).unwrap();
        let mut got: Vec<i64> = r
            .read_splits(&plan.splits)
            .unwrap()
            .iter()
            .flat_map(|b| {
                let k = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
                k.values().to_vec()
            })
            .collect();
        got.sort_unstable();
        assert_eq!(got, vec![0, 1, 2, 7, 8, 9]);

        let dir = tempfile::tempdir().unwrap();
        let cat = FileSystemCatalog::new(dir.path()).unwrap();
        cat.create_database("db", true).unwrap();
        let schema = Schema::new(vec![
            Field::new("k", AT::Int64, false),
            Field::new("v", AT::Utf8, true),
        ]);
        let s = NewTableSchema::from_arrow(&schema, vec![], vec![], BTreeMap::new(), None).unwrap();
        cat.create_table("db.a", s, false).unwrap();
        let mut w = TableWrite::new(cat.get_table("db.a").unwrap()).unwrap();
        let err = w
            .write_batches_as(&[rows(0, 3)], Some(RowKind::Delete))
            .unwrap_err();
        assert!(err.to_string().contains("append table"), "{err}");
        assert_eq!(w.buffered_rows(), 0);
    }

    /// `write-only=true` turns the stall off with all compaction (Java: no compact manager).
    #[test]
    fn write_only_writers_do_not_stall() {
        let dir = tempfile::tempdir().unwrap();
        let t = stall_table(dir.path(), "true");
        let mut w = TableWrite::new(t.clone()).unwrap();
        for i in 0..30 {
            w.write(&rows((i % 5) * 1000, 1000)).unwrap();
        }
        assert!(max_runs(&w) > 10, "{} runs", max_runs(&w));
        let msgs = w.prepare_commit().unwrap();
        assert!(msgs.iter().all(|m| m.compact_before.is_empty()));
    }

    #[test]
    fn input_routed_to_several_buckets_is_counted_once() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = TableWrite::new(table(dir.path(), &[("bucket", "4")])).unwrap();
        let b = rows(0, 10_000);
        w.write(&b).unwrap();
        let input: usize = b
            .columns()
            .iter()
            .map(|c| c.to_data().get_slice_memory_size().unwrap())
            .sum();
        // the batch's rows once plus the buckets' row indices (4 bytes a row, Vec growth)
        assert!(w.memory_size() >= input);
        assert!(w.memory_size() <= input + 8 * 10_000, "{}", w.memory_size());
        w.abort();
    }

    /// Partition `p` (INT) and key `k`; rows of partition `p` with keys `ks`.
    fn partitioned(dir: &std::path::Path) -> FileStoreTable {
        let cat = FileSystemCatalog::new(dir).unwrap();
        cat.create_database("db", true).unwrap();
        let schema = Schema::new(vec![
            Field::new("p", AT::Int32, false),
            Field::new("k", AT::Int64, false),
        ]);
        let opts = [("bucket".to_string(), "1".to_string())].into();
        let s = NewTableSchema::from_arrow(
            &schema,
            vec!["p".into()],
            vec!["p".into(), "k".into()],
            opts,
            None,
        )
        .unwrap();
        cat.create_table("db.pt", s, false).unwrap();
        cat.get_table("db.pt").unwrap()
    }

    fn partition_rows(p: i32, ks: std::ops::Range<i64>) -> RecordBatch {
        let n = (ks.end - ks.start) as usize;
        let schema = Arc::new(Schema::new(vec![
            Field::new("p", AT::Int32, false),
            Field::new("k", AT::Int64, false),
        ]));
        RecordBatch::try_new(
            schema,
            vec![
                Arc::new(arrow_array::Int32Array::from(vec![p; n])),
                Arc::new(Int64Array::from_iter_values(ks)),
            ],
        )
        .unwrap()
    }

    fn min_seq_of(msgs: &[CommitMessage], w: &TableWrite, p: i32) -> Vec<i64> {
        let part = partition_rows(p, 0..1);
        let routed = w.route(&w.check(&part, 0, None).unwrap().unwrap()).unwrap();
        let key = &routed[0].0;
        msgs.iter()
            .filter(|m| (&m.partition, m.bucket) == (&key.0, key.1))
            .flat_map(|m| m.new_files.iter().map(|f| f.min_sequence_number))
            .collect()
    }

    #[test]
    fn sequence_numbers_continue_per_partition_reading_only_what_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let t = partitioned(dir.path());
        let commit = |msgs: &[CommitMessage]| {
            crate::commit::FileStoreCommit::new(t.clone(), "test".into())
                .commit(msgs, i64::MAX, None)
                .unwrap();
        };
        // partition 1 gets sequence numbers 0..=99, partition 2 0..=9
        let mut w = TableWrite::new(t.clone()).unwrap();
        w.write(&partition_rows(1, 0..100)).unwrap();
        w.write(&partition_rows(2, 0..10)).unwrap();
        commit(&w.prepare_commit().unwrap());

        let mut w = TableWrite::new(t.clone()).unwrap();
        w.write(&partition_rows(1, 0..5)).unwrap();
        // only partition 1's files were read
        assert!(!w.restored.all);
        assert_eq!(w.restored.partitions.len(), 1);
        assert_eq!(w.restored.max_seq.len(), 1);
        assert_eq!(
            w.restored.max_seq.values().copied().collect::<Vec<_>>(),
            vec![99]
        );
        // a partition not seen yet: everything is read once
        w.write(&partition_rows(2, 0..5)).unwrap();
        w.write(&partition_rows(3, 0..5)).unwrap();
        assert!(w.restored.all);
        assert_eq!(w.restored.max_seq.len(), 2);
        let msgs = w.prepare_commit().unwrap();
        assert_eq!(min_seq_of(&msgs, &w, 1), vec![100]);
        assert_eq!(min_seq_of(&msgs, &w, 2), vec![10]);
        assert_eq!(min_seq_of(&msgs, &w, 3), vec![0]);
        commit(&msgs);
    }

    #[test]
    fn open_append_files_count_against_the_budget() {
        let dir = tempfile::tempdir().unwrap();
        let cat = FileSystemCatalog::new(dir.path()).unwrap();
        cat.create_database("db", true).unwrap();
        let schema = Arc::new(Schema::new(vec![
            Field::new("p", AT::Int32, false),
            Field::new("v", AT::Utf8, true),
        ]));
        let opts = [
            ("bucket".to_string(), "-1".to_string()),
            ("write-buffer-size".to_string(), "1 mb".to_string()),
        ]
        .into();
        let s = NewTableSchema::from_arrow(&schema, vec!["p".into()], vec![], opts, None).unwrap();
        cat.create_table("db.a", s, false).unwrap();
        let mut w = TableWrite::new(cat.get_table("db.a").unwrap()).unwrap();
        let budget = w.flush.budget;
        let mut x: u64 = 1;
        for i in 0..40 {
            // 16 partitions, incompressible values: each open file's row group grows
            let n = 10_000;
            let ps: Vec<i32> = (0..n).map(|r| r % 16).collect();
            let vs: Vec<String> = (0..n)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    format!("{x:016x}{i}")
                })
                .collect();
            let b = RecordBatch::try_new(
                schema.clone(),
                vec![
                    Arc::new(arrow_array::Int32Array::from(ps)),
                    Arc::new(StringArray::from(vs)),
                ],
            )
            .unwrap();
            w.write(&b).unwrap();
            let open: usize = w
                .writers
                .values()
                .map(|b| match &b.buffer {
                    BucketBuffer::Append { writer, .. } => open_file_bytes(writer),
                    BucketBuffer::Kv(_) => 0,
                })
                .sum();
            assert!(
                open <= budget,
                "open row groups hold {open} bytes after write {i}"
            );
            assert!(w.memory_size() <= budget);
        }
        let msgs = w.prepare_commit().unwrap();
        let files: Vec<&DataFileMeta> = msgs.iter().flat_map(|m| &m.new_files).collect();
        // row groups were flushed, files were not cut: one file per partition
        assert_eq!(files.len(), 16);
        assert_eq!(files.iter().map(|f| f.row_count).sum::<i64>(), 400_000);
        w.abort();
    }

    #[test]
    fn a_small_budget_merges_few_runs_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let t = table(
            dir.path(),
            &[("bucket", "1"), ("write-buffer-size", "64 kb")],
        );
        let mut w = TableWrite::new(t).unwrap();
        for i in 0..40 {
            w.write(&rows(i * 1000, 1000)).unwrap();
        }
        let spills = w.spill_count();
        let budget = w.flush.budget;
        let spiller = &w.spiller;
        let buf = match w.writers.values_mut().next().map(|b| &mut b.buffer) {
            Some(BucketBuffer::Kv(buf)) => buf,
            _ => panic!("one key-value bucket"),
        };
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

    #[test]
    fn budget_covers_the_merge_at_prepare_commit() {
        let dir = tempfile::tempdir().unwrap();
        let spill = tempfile::tempdir().unwrap();
        let spill_dir = spill.path().to_str().unwrap();
        let t = table(
            dir.path(),
            &[
                ("bucket", "2"),
                ("write-buffer-size", "256 kb"),
                ("write-buffer-spill.dir", spill_dir),
            ],
        );
        let mut w = TableWrite::new(t.clone()).unwrap();
        let mut written = 0;
        while w.spill_count() == 0 || in_memory_rows_of_spilled_buckets(&w) == 0 {
            w.write(&rows(written, 1000)).unwrap();
            written += 1000;
        }
        let spills = w.spill_count();
        // one merge's working memory (a row group alone) is more than 256 kb: one at a time
        assert_eq!(w.merge_slots(), 1);
        // with room for many merges, one per worker thread
        w.flush.budget = 1 << 30;
        assert_eq!(w.merge_slots(), rayon::current_num_threads());
        w.flush.budget = 256 << 10;
        // a merge holds a run batch per run and a row group: with 256 kb that does not fit
        // next to the in-memory rows, which are spilled first
        w.spill_before_merge().unwrap();
        assert_eq!(in_memory_rows_of_spilled_buckets(&w), 0);
        assert!(w.spill_count() > spills);
        assert_eq!(w.memory_size(), 0);
        let msgs = w.prepare_commit().unwrap();
        let n: i64 = msgs
            .iter()
            .flat_map(|m| &m.new_files)
            .map(|f| f.row_count)
            .sum();
        assert_eq!(n, written);
        w.abort();

        // with a budget that holds everything, nothing spills and nothing is spilled first
        let big = t
            .copy(&[("write-buffer-size".to_string(), "1 gb".to_string())].into())
            .unwrap();
        let mut w = TableWrite::new(big).unwrap();
        for i in 0..30 {
            w.write(&rows(i * 1000, 1000)).unwrap();
        }
        w.spill_before_merge().unwrap();
        assert_eq!(w.spill_count(), 0);
        assert_eq!(w.buffered_rows(), 30_000);
        w.abort();
    }
}
