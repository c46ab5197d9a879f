//! TableWrite: checks input rows, routes them to (partition, bucket) writers
//! ([`RecordWriter`]) and schedules those under one memory budget (Java's
//! `AbstractFileStoreWrite` with its memory pool): when the buffers exceed `write-buffer-size`
//! the largest writers spill or flush, and `prepare_commit` flushes every writer, runs the
//! commit's compactions and gathers their increments into one message per bucket.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, BooleanArray, Int32Array, Int8Array, RecordBatch, UInt32Array};
use arrow_schema::{Schema, SchemaRef};
use rayon::prelude::*;

use super::append_writer::AppendWriter;
use super::assign::BucketAssigner;
use super::bucket_writer::BucketWriter;
use super::buffer::{MemoryCounter, SharedInput};
use super::cross_partition::{is_cross_partition, CrossPartitionIndex};
use super::dynamic_bucket::{DynamicBucketAssigner, HashIndexChange};
use super::input::{align_batch, filter_rows, AlignedBatch};
use super::merge_tree_writer::MergeTreeWriter;
use super::record_writer::{BucketRows, CommitIncrement, FlushContext, WriteEnv};
use super::restore::{TableRestore, WriterKey};
use crate::commit::CommitMessage;
use crate::compact::CompactSettings;
use crate::error::{Error, Result};
use crate::kv::{file_context, kv_arrow_schema, FileSource};
use crate::merge::{KvLayout, MergeEngine};
use crate::options::ChangelogProducer;
use crate::sort::{SpillOptions, Spiller};
use crate::spec::binary_row::{datum_from_arrow, RowEncoder};
use crate::spec::datum::Datum;
use crate::spec::manifest::IndexManifestEntry;
use crate::spec::partition::partition_path;
use crate::spec::row_kind::{is_retract_byte as is_retract, RowKind};
use crate::spec::types::DataType;
use crate::table::FileStoreTable;

/// Put each bucket's new hash index file (and the one it replaces) in the data increment of
/// the bucket's message; a bucket without one gets a message of its own.
fn add_hash_changes(
    msgs: &mut Vec<CommitMessage>,
    changes: &[HashIndexChange],
    total_buckets: i32,
    restored_snapshot: Option<Option<i64>>,
) {
    for c in changes {
        let pos = msgs
            .iter()
            .position(|m| m.bucket == c.bucket && m.partition == c.partition);
        let m = match pos {
            Some(i) => &mut msgs[i],
            None => {
                msgs.push(CommitMessage {
                    partition: c.partition.clone(),
                    bucket: c.bucket,
                    total_buckets,
                    data_increment: Default::default(),
                    compact_increment: Default::default(),
                    restored_snapshot,
                });
                let last = msgs.len() - 1;
                &mut msgs[last]
            }
        };
        let d = &mut m.data_increment;
        d.new_index_files.push(c.new_file.clone());
        d.deleted_index_files.extend(c.replaced.iter().cloned());
    }
}

/// Rows grouped by partition (all in bucket 0, as [`TableWrite::route`] gives them in dynamic
/// bucket mode) split by each row's bucket, in row order within a bucket.
#[allow(clippy::type_complexity)]
fn split_by_bucket(
    routed: Vec<(WriterKey, (String, Vec<u32>))>,
    bucket_of: impl Fn(u32) -> i32,
) -> Vec<(WriterKey, (String, Vec<u32>))> {
    let mut out = vec![];
    for ((partition, _), (ppath, rows)) in routed {
        let mut per: super::dynamic_bucket::IntMap<Vec<u32>> = Default::default();
        for r in rows {
            per.entry(bucket_of(r)).or_default().push(r);
        }
        let mut per: Vec<(i32, Vec<u32>)> = per.into_iter().collect();
        per.sort_unstable_by_key(|(b, _)| *b);
        for (bucket, rows) in per {
            out.push(((partition.clone(), bucket), (ppath.clone(), rows)));
        }
    }
    out
}

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

pub struct TableWrite {
    table: FileStoreTable,
    row_schema: SchemaRef,
    kv_schema: Option<SchemaRef>,
    partition_types: Vec<DataType>,
    partition_idx: Vec<usize>,
    assigner: BucketAssigner,
    key_idx: Vec<usize>,
    writers: HashMap<WriterKey, BucketWriter>,
    /// The buckets this write wrote since its last full compaction (a `full-compaction` table
    /// or `full-compaction.delta-commits`; Java's `GlobalFullCompactionSinkWrite.writtenBuckets`):
    /// a full-compaction commit compacts each of them, written in this commit or not, so the
    /// commit's snapshot holds every one's changelog since the previous full compaction.
    full_window: HashSet<WriterKey>,
    /// The table's live files, read per partition on first write to it.
    restore: TableRestore,
    flush: FlushContext,
    spillable: bool,
    spiller: Spiller,
    /// Memory of the key-value buffers' input batches.
    memory: MemoryCounter,
    /// See [`Self::ignore_previous_files`].
    ignore_previous: bool,
    /// Compaction settings of a primary-key writer that compacts (not `write-only`).
    compact_settings: Option<CompactSettings>,
    /// Dynamic bucket mode (a primary-key table with `bucket = -1`): the assigner with its
    /// hash index, and the trimmed primary key's types it hashes.
    dynamic: Option<Dynamic>,
    /// Cross-partition upsert (dynamic bucket mode, a primary key without every partition
    /// key): the global key index (write/cross_partition.rs).
    cross: Option<CrossPartitionIndex>,
    /// Clustering at write time of a bucket-unaware append table (write/clustering.rs).
    cluster: Option<Arc<super::clustering::ClusterSpec>>,
    /// A stream write asked for compaction in the background ([`Self::set_async_compaction`]).
    async_compaction: bool,
    /// Whether the primary-key writers compact in the background now: asked for, and the
    /// table's compaction is one that may (see [`Self::compacts_in_background`]).
    background: bool,
    /// `commit.force-compact`: every `prepare_commit` waits for the buckets' compaction.
    force_compact: bool,
    /// The compaction thread of the background compactions (write/async_compact.rs).
    executor: super::async_compact::CompactExecutor,
    /// A partial-column write of a data-evolution table ([`Self::set_write_cols`]): the
    /// columns its files hold, their `write_cols`.
    write_cols: Option<Vec<String>>,
}

/// A dynamic-bucket table's assignment in a [`TableWrite`] (write/dynamic_bucket.rs).
struct Dynamic {
    assigner: DynamicBucketAssigner,
    key_types: Vec<DataType>,
    /// The live index files of the snapshot the write restored from, read once.
    live_index: Option<Vec<IndexManifestEntry>>,
}

impl TableWrite {
    pub fn new(table: FileStoreTable) -> Result<Self> {
        let pk = table.is_primary_key();
        table
            .check_writable()
            .map_err(|e| e.with_table(&table.name))?;
        let postpone = pk && table.options.bucket == -2;
        let table = match postpone {
            true => postpone_write_table(table),
            false => table,
        };
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
        let assigner = BucketAssigner::new(&table)?;
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
        let cross = if is_cross_partition(&table) {
            Some(CrossPartitionIndex::new(&table)?)
        } else {
            None
        };
        let dynamic = if pk && o.bucket == -1 && cross.is_none() {
            Some(Dynamic {
                assigner: DynamicBucketAssigner::new(&table)?,
                key_types: key_types.clone(),
                live_index: None,
            })
        } else {
            None
        };
        let compact_settings = if pk && !o.write_only {
            Some(CompactSettings::from_table(&table).map_err(|e| e.with_table(&table.name))?)
        } else {
            None
        };
        let cluster = super::clustering::ClusterSpec::from_table(&table)
            .map_err(|e| e.with_table(&table.name))?;
        let force_compact = match o.raw.get("commit.force-compact") {
            None => false,
            Some(v) => crate::options::parse_bool("commit.force-compact", v)
                .map_err(|e| e.with_table(&table.name))?,
        };
        Ok(TableWrite {
            cluster,
            async_compaction: false,
            background: false,
            force_compact,
            executor: Default::default(),
            partition_types: table.partition_types()?,
            assigner,
            flush: FlushContext {
                file_ctx: file_ctx.clone(),
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
                changelog: if pk && o.changelog_producer == ChangelogProducer::Input {
                    Some(file_ctx.clone().into_changelog(&o.changelog_file_prefix))
                } else {
                    None
                },
            },
            spillable: o.write_buffer_spillable,
            spiller,
            memory: MemoryCounter::default(),
            compact_settings,
            dynamic,
            cross,
            kv_schema,
            row_schema,
            partition_idx,
            key_idx,
            writers: HashMap::new(),
            full_window: HashSet::new(),
            restore: TableRestore::default(),
            ignore_previous: postpone,
            write_cols: None,
            table,
        })
    }

    pub fn table(&self) -> &FileStoreTable {
        &self.table
    }

    /// A stream write's primary-key buckets compact in the background (Java's
    /// `MergeTreeWriter` with its compaction executor, paimon-behaviour.md §1.6): flushes and
    /// `prepare_commit_with(_, false)` go on while a bucket's compaction runs, and a commit
    /// hands over the compactions that finished. Tables whose compaction must finish within
    /// the commit keep compacting synchronously (see [`Self::compacts_in_background`]).
    pub fn set_async_compaction(&mut self, on: bool) -> Result<()> {
        if !on {
            // what runs is taken (or waited for) by the next commit as a synchronous one
            for w in self.writers.values_mut() {
                w.sync().map_err(|e| e.with_table(&self.table.name))?;
            }
        }
        self.async_compaction = on;
        self.background = self.compacts_in_background();
        Ok(())
    }

    /// Whether the primary-key writers compact in the background: asked for, a primary-key
    /// table that compacts, and not one whose commit must see its compaction done: tables
    /// that need lookup (Java's `lookup-wait`: first-row, `changelog-producer = lookup`,
    /// deletion vectors, `force-lookup`), `changelog-producer = full-compaction` and
    /// `full-compaction.delta-commits` (the commit's full compaction makes its changelog),
    /// and an overwrite's writer.
    pub fn compacts_in_background(&self) -> bool {
        let Some(s) = &self.compact_settings else {
            return false;
        };
        self.async_compaction
            && s.lookup.is_none()
            && !s.deletion_vectors
            && s.full_changelog.is_none()
            && crate::compact::full_compaction_interval(&self.table.options).is_none()
            && !self.ignore_previous
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
        self.write_checked(batches, kind, None)
    }

    /// A bucket writer of a distributed write of a dynamic-bucket table (`bucket = -1`): the
    /// rows of `batch` go to the buckets an assign stage chose (`buckets`, one per row; see
    /// `dynamic_bucket::DynamicBucketAssigner::assign_rows`), and their new keys join those
    /// buckets' hash index files, written at `prepare_commit` (Java's
    /// `DynamicBucketIndexMaintainer` in the bucket writers).
    pub fn write_assigned(&mut self, batch: &RecordBatch, buckets: &Int32Array) -> Result<()> {
        if self.cross.is_some() {
            let e = super::dynamic_bucket::cross_partition_distributed();
            return Err(e.with_table(&self.table.name));
        }
        if self.dynamic.is_none() {
            return Err(Error::invalid(
                "rows with assigned buckets written into a table that is not in dynamic bucket \
                 mode (a primary-key table with bucket = -1)",
            )
            .with_table(&self.table.name));
        }
        if buckets.len() != batch.num_rows() || buckets.null_count() > 0 {
            return Err(Error::invalid(format!(
                "{} assigned buckets (nulls: {}) for {} rows",
                buckets.len(),
                buckets.null_count(),
                batch.num_rows()
            ))
            .with_table(&self.table.name));
        }
        self.write_checked(std::slice::from_ref(batch), None, Some(buckets))
    }

    /// A bucket writer of a distributed write of a cross-partition upsert table: the rows of
    /// `batch` as its assign stage routed them ([`Self::assign_cross_partition`]): each row's
    /// (partition, bucket) and row kind (`kinds`: a moved key's `-D` in its old partition)
    /// are taken as given, the rows' own row kinds (`rowkind.field`) were read by that stage.
    pub fn write_assigned_rows(
        &mut self,
        batch: &RecordBatch,
        buckets: &Int32Array,
        kinds: &Int8Array,
    ) -> Result<()> {
        let name = self.table.name.clone();
        if self.cross.is_none() {
            return Err(Error::invalid(
                "rows routed by a cross-partition assign stage written into a table that is not \
                 a cross-partition upsert table",
            )
            .with_table(&name));
        }
        let n = batch.num_rows();
        let bad_kind = kinds
            .values()
            .iter()
            .any(|&k| RowKind::from_byte(k).is_none());
        if buckets.len() != n
            || kinds.len() != n
            || buckets.null_count() + kinds.null_count() > 0
            || bad_kind
        {
            return Err(Error::invalid(format!(
                "{} assigned buckets and {} row kinds (nulls: {}, invalid kinds: {bad_kind}) for \
                 {n} rows",
                buckets.len(),
                kinds.len(),
                buckets.null_count() + kinds.null_count(),
            ))
            .with_table(&name));
        }
        let checked = self
            .check(batch, 0, Some(RowKind::Insert), Some(buckets))
            .map_err(|e| e.with_table(&name))?;
        let Some(mut aligned) = checked else {
            return Ok(());
        };
        aligned.kinds = Some(kinds.clone());
        self.buffer(aligned)
            .map_err(|e| self.conflict_if_restored_gone(e))
    }

    /// The assign stage of a distributed write of a cross-partition upsert table: `batch`
    /// checked as [`Self::write`] does, then routed through the key index (bootstrapped from
    /// the restored snapshot at the first call; see [`Self::set_cross_partition_shard`]).
    /// Returns the rows to write, each one's row kind and bucket (None: no row left); nothing
    /// is buffered.
    pub fn assign_cross_partition(
        &mut self,
        batch: &RecordBatch,
    ) -> Result<Option<(RecordBatch, Int8Array, Int32Array)>> {
        let name = self.table.name.clone();
        let checked = self
            .check(batch, 0, None, None)
            .map_err(|e| e.with_table(&name))?;
        let Some(aligned) = checked else {
            return Ok(None);
        };
        let (rows, routed) = self.route_cross_partition(aligned)?;
        let n = rows.batch.num_rows();
        let mut buckets = vec![0; n];
        for ((_, bucket), (_, rs)) in &routed {
            for &r in rs {
                buckets[r as usize] = *bucket;
            }
        }
        let kinds = rows
            .kinds
            .unwrap_or_else(|| Int8Array::from(vec![RowKind::Insert.byte(); n]));
        Ok(Some((rows.batch, kinds, Int32Array::from(buckets))))
    }

    /// Make this writer's key index that of assign task `assign_id` of `num_assigners` of a
    /// distributed cross-partition write (before its first write).
    pub fn set_cross_partition_shard(&mut self, num_assigners: i32, assign_id: i32) -> Result<()> {
        match self.cross.as_mut() {
            Some(c) => c.set_shard(num_assigners, assign_id),
            None => {
                Err(Error::invalid("not a cross-partition upsert table")
                    .with_table(&self.table.name))
            }
        }
    }

    /// Restore from snapshot `snapshot_id` (None: the empty table) instead of the latest one:
    /// the writers of a distributed dynamic-bucket write restore the snapshot its assign stage
    /// read the hash index from. Only before the first write.
    pub fn restore_from(&mut self, snapshot_id: Option<i64>) -> Result<()> {
        let snapshot = match snapshot_id {
            Some(id) => Some(self.table.snapshot_manager().snapshot(id)?),
            None => None,
        };
        self.restore
            .pin(snapshot)
            .map_err(|e| e.with_table(&self.table.name))
    }

    /// Name the hash index files of a dynamic-bucket table's writer `prefix<uuid>-0` (default
    /// `index-`): a distributed write's task attempts name theirs so its driver can delete
    /// those no commit took.
    pub fn set_index_file_prefix(&mut self, prefix: &str) {
        if let Some(d) = self.dynamic.as_mut() {
            d.assigner.set_index_prefix(prefix);
        }
    }

    /// Write `batch` (the table's columns) with each row's kind from `kinds` (Java's
    /// `RowKind` bytes): a postpone-bucket compaction replaying bucket-postpone's records into
    /// real buckets (compact/postpone.rs).
    pub(crate) fn write_kinds(&mut self, batch: &RecordBatch, kinds: Int8Array) -> Result<()> {
        let name = self.table.name.clone();
        let Some(mut aligned) = self
            .check(batch, 0, Some(RowKind::Insert), None)
            .map_err(|e| e.with_table(&name))?
        else {
            return Ok(());
        };
        aligned.kinds = Some(kinds);
        // the table's ignore-delete / ignore-update-before, as at a write (they may have been
        // set after the rows were written to bucket-postpone)
        let aligned = self
            .drop_ignored(aligned)
            .map_err(|e| e.with_table(&name))?;
        if aligned.batch.num_rows() == 0 {
            return Ok(());
        }
        self.buffer(aligned)
            .map_err(|e| self.conflict_if_restored_gone(e))
    }

    fn write_checked(
        &mut self,
        batches: &[RecordBatch],
        kind: Option<RowKind>,
        buckets: Option<&Int32Array>,
    ) -> Result<()> {
        let name = self.table.name.clone();
        let mut first_row = 0;
        let aligned = batches
            .iter()
            .map(|b| {
                let checked = self.check(b, first_row, kind, buckets);
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
        buckets: Option<&Int32Array>,
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
        crate::write::blob_write::check_inline_blob_values(
            &self.table.options.raw,
            &self.table.schema.fields,
            &aligned.batch,
        )?;
        if let Some(k) = kind {
            aligned.kinds = Some(Int8Array::from(vec![k.byte(); batch.num_rows()]));
        }
        aligned.buckets = buckets.cloned();
        if !self.table.is_primary_key() {
            if let Some(k) = &aligned.kinds {
                if k.values().iter().any(|&v| is_retract(v)) {
                    return Err(Error::unsupported(
                        "-U/-D rows in an append table (it has no primary key to retract)",
                    ));
                }
            }
        }
        self.drop_ignored(aligned).map(Some)
    }

    /// `aligned` without the rows `ignore-delete` / `ignore-update-before` drop.
    fn drop_ignored(&self, aligned: AlignedBatch) -> Result<AlignedBatch> {
        let (ign_del, ign_ub) = (
            self.table.options.ignore_delete,
            self.table.options.ignore_update_before,
        );
        match &aligned.kinds {
            Some(k) if ign_del || ign_ub => {
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
                filter_rows(&aligned, &keep)
            }
            _ => Ok(aligned),
        }
    }

    fn buffer(&mut self, aligned: AlignedBatch) -> Result<()> {
        let (aligned, routed) = match (self.cross.is_some(), aligned.buckets.clone()) {
            (true, None) => self.route_cross_partition(aligned)?,
            // routed by a distributed write's assign stage (`write_assigned_rows`)
            (true, Some(given)) => {
                let routed = self.route(&aligned)?;
                (
                    aligned,
                    split_by_bucket(routed, |r| given.value(r as usize)),
                )
            }
            (false, _) => {
                let mut routed = self.route(&aligned)?;
                if self.dynamic.is_some() {
                    routed = self.assign_dynamic(&aligned, routed)?;
                }
                (aligned, routed)
            }
        };
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
        let compacts = self.compacts();
        self.restore.read(
            &self.table,
            new_partitions.iter().map(Vec::as_slice).collect(),
            compacts,
        )?;
        // All checks passed: only now touch the writers.
        for (key, (ppath, indices)) in routed {
            let w = match self.writers.entry(key) {
                std::collections::hash_map::Entry::Occupied(o) => o.into_mut(),
                std::collections::hash_map::Entry::Vacant(v) => {
                    let restore = self.restore.restore(&self.table, v.key())?;
                    let dir = self.table.bucket_dir(&ppath, v.key().1);
                    let mut w = match &self.kv_schema {
                        Some(s) => BucketWriter::MergeTree(MergeTreeWriter::new(
                            dir,
                            restore,
                            s.clone(),
                            self.flush.layout,
                            self.key_idx.clone(),
                            self.memory.clone(),
                            compacts,
                        )),
                        None => BucketWriter::Append(AppendWriter::new(
                            v.key().0.clone(),
                            v.key().1,
                            dir,
                            restore,
                            compacts,
                            self.cluster.clone(),
                        )),
                    };
                    w.ignore_previous_files(self.ignore_previous);
                    v.insert(w)
                }
            };
            w.write(BucketRows {
                batch: &aligned.batch,
                shared: shared.as_ref(),
                indices,
            })?;
        }
        drop(shared);
        self.enforce_budget()
    }

    /// Cross-partition upsert: the rows routed through the key index (bootstrapped from the
    /// snapshot the write restores from on first use), which may retract a moved key in its
    /// old partition, move a row into its key's partition or drop it; then grouped by
    /// (partition, bucket).
    #[allow(clippy::type_complexity)]
    fn route_cross_partition(
        &mut self,
        aligned: AlignedBatch,
    ) -> Result<(AlignedBatch, Vec<(WriterKey, (String, Vec<u32>))>)> {
        let Some(cross) = self.cross.as_mut() else {
            return Err(Error::Internal("not a cross-partition write".into()));
        };
        if !cross.is_bootstrapped() {
            let snapshot = self.restore.pin_latest(&self.table)?;
            cross.bootstrap(&self.table, snapshot)?;
        }
        let by_partition = self.route(&aligned)?;
        let mut partitions: Vec<&[u8]> = vec![&[]; aligned.batch.num_rows()];
        for ((p, _), (_, rows)) in &by_partition {
            for &r in rows {
                partitions[r as usize] = p;
            }
        }
        let Some(cross) = self.cross.as_mut() else {
            return Err(Error::Internal("not a cross-partition write".into()));
        };
        let routed = cross.route(&aligned, &partitions)?;
        let rows = routed.rows;
        let by_partition = self.route(&rows)?;
        let out = split_by_bucket(by_partition, |r| routed.buckets[r as usize]);
        Ok((rows, out))
    }

    /// Dynamic bucket mode: the rows [`Self::route`] grouped by partition (all in bucket 0),
    /// split by the bucket the assigner gives each row's key, from the partition's hash index
    /// in the snapshot the write restores from.
    #[allow(clippy::type_complexity)]
    fn assign_dynamic(
        &mut self,
        b: &AlignedBatch,
        routed: Vec<(WriterKey, (String, Vec<u32>))>,
    ) -> Result<Vec<(WriterKey, (String, Vec<u32>))>> {
        let compacts = self.compacts();
        self.restore.read(
            &self.table,
            routed.iter().map(|((p, _), _)| p.as_slice()).collect(),
            compacts,
        )?;
        let Some(d) = self.dynamic.as_mut() else {
            return Ok(routed);
        };
        if d.live_index.is_none() {
            d.live_index = Some(
                super::deletion_vectors::DeletionVectorsMaintainer::live_index_of(
                    &self.table,
                    self.restore.snapshot(),
                )?,
            );
        }
        // an overwrite's writer starts from no index: the commit drops the replaced
        // partitions' index files (commit/hash_index.rs, `overwritten_index`)
        let live = match self.ignore_previous {
            true => &[][..],
            false => d.live_index.as_deref().unwrap_or_default(),
        };
        let keys: Vec<ArrayRef> = self
            .key_idx
            .iter()
            .map(|&i| b.batch.column(i).clone())
            .collect();
        let hashes = crate::spec::bucket::compute_hashes(&keys, &d.key_types)?;
        let mut buckets = vec![0; b.batch.num_rows()];
        for ((partition, _), (_, rows)) in &routed {
            d.assigner.load(&self.table, partition, live)?;
            let mine: Vec<i32> = rows.iter().map(|&r| hashes[r as usize]).collect();
            let assigned = match &b.buckets {
                // an assign stage chose them: the buckets' index files take the new keys
                Some(given) => {
                    let given: Vec<i32> = rows.iter().map(|&r| given.value(r as usize)).collect();
                    d.assigner.record(partition, &mine, &given)?;
                    given
                }
                None => d.assigner.assign_all(partition, &mine)?,
            };
            for (&r, bk) in rows.iter().zip(assigned) {
                buckets[r as usize] = bk;
            }
        }
        Ok(split_by_bucket(routed, |r| buckets[r as usize]))
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
                .map(|w| w.memory_size())
                .max()
                .unwrap_or(0);
            if largest == 0 {
                return Ok(());
            }
            let env = WriteEnv {
                table: &self.table,
                flush: &self.flush,
                spiller: &self.spiller,
                compact: self.compact_settings.as_ref(),
                full: false,
                background: self.background.then_some(&self.executor),
                wait_compaction: false,
            };
            let mut disk = 0u64;
            let mut chosen: Vec<(&mut BucketWriter, bool)> = vec![];
            let mut rest: Vec<&mut BucketWriter> = vec![];
            for w in self.writers.values_mut() {
                let size = w.memory_size();
                if size == 0 || size * 2 < largest {
                    rest.push(w);
                    continue;
                }
                let spill = match w.spill_estimate() {
                    Some(est) if self.spillable => {
                        let fits = env.spiller.has_room(disk + est);
                        if fits {
                            disk += est;
                        }
                        fits
                    }
                    _ => false,
                };
                chosen.push((w, spill));
            }
            first_error(chosen.into_par_iter().map(|(w, spill)| match spill {
                true => w.spill(env.spiller),
                // a primary-key bucket then waits for compaction above the stop trigger
                false => w.flush(&env),
            }))?;
            for w in rest {
                w.release_input()?;
            }
        }
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
            if !self.assigner.is_fixed() {
                // dynamic / unaware: bucket 0 (assigned later); postpone: bucket-postpone
                let bucket = if self.table.options.bucket == -2 {
                    -2
                } else {
                    0
                };
                out.push(((pbytes, bucket), (ppath, rows)));
                continue;
            }
            let idx = UInt32Array::from(rows.clone());
            let key_idx = self.assigner.key_indices();
            let bcols: Vec<ArrayRef> = if rows.len() == n {
                key_idx.iter().map(|&i| cols[i].clone()).collect()
            } else {
                key_idx
                    .iter()
                    .map(|&i| arrow_select::take::take(cols[i].as_ref(), &idx, None))
                    .collect::<std::result::Result<_, _>>()?
            };
            let buckets = self.assigner.buckets(&bcols, rows.len())?;
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

    /// Flush every bucket (in parallel) into level-0 files, run the commit's compactions; one
    /// message per bucket written. A batch commit (Java's `BatchTableWrite.prepareCommit`,
    /// identifier `BATCH_COMMIT_IDENTIFIER`): see [`Self::prepare_commit_as`].
    ///
    /// Buckets that spilled merge their runs last, at most [`Self::merge_slots`] at a time,
    /// each feeding a Parquet encoder on a second thread (`write_pipelined`); the others
    /// flush in parallel first. Compaction starts once every bucket flushed.
    pub fn prepare_commit(&mut self) -> Result<Vec<CommitMessage>> {
        self.prepare_commit_as(crate::spec::snapshot::BATCH_COMMIT_IDENTIFIER)
    }

    /// [`Self::prepare_commit`] for the commit that will carry `commit_identifier` (Java's
    /// `StreamTableWrite.prepareCommit(waitCompaction, commitIdentifier)`): in a table with
    /// `changelog-producer = full-compaction` or `full-compaction.delta-commits`, the written
    /// buckets are compacted fully when the identifier is a multiple of the delta commits (1
    /// if unset) or the batch identifier, as Flink's `GlobalFullCompactionSinkWrite`
    /// (paimon-behaviour.md §9.4, §12).
    pub fn prepare_commit_as(&mut self, commit_identifier: i64) -> Result<Vec<CommitMessage>> {
        self.prepare_commit_with(commit_identifier, true)
    }

    /// [`Self::prepare_commit_as`] of a stream write (Java's `StreamTableWrite.prepareCommit(
    /// waitCompaction, commitIdentifier)`): with compaction in the background
    /// ([`Self::set_async_compaction`]) and `wait_compaction` false, each bucket hands over its
    /// new files and the compactions that finished, and leaves a running one to a later
    /// commit; it waits only while the bucket has more than `num-sorted-run.stop-trigger` + 1
    /// sorted runs, or with `commit.force-compact`. Otherwise as `prepare_commit_as`.
    pub fn prepare_commit_with(
        &mut self,
        commit_identifier: i64,
        wait_compaction: bool,
    ) -> Result<Vec<CommitMessage>> {
        let name = self.table.name.clone();
        if !self.background {
            for w in self.writers.values_mut() {
                w.sync().map_err(|e| e.with_table(&name))?;
            }
        }
        self.spill_before_merge().map_err(|e| e.with_table(&name))?;
        let total_buckets = self.table.options.bucket;
        // the hash index files of the buckets that got new keys (dynamic bucket mode)
        let hash_changes = match &self.dynamic {
            Some(d) => d.assigner.prepare_commit(&self.table)?,
            None => vec![],
        };
        let slots = self.merge_slots();
        let compacts = self.compacts();
        // the snapshot every bucket writer continued the sequence numbers of
        let restored_snapshot = self.restore.snapshot_id();
        let env = WriteEnv {
            table: &self.table,
            flush: &self.flush,
            spiller: &self.spiller,
            compact: self.compact_settings.as_ref(),
            full: crate::compact::full_compaction_due(
                crate::compact::full_compaction_interval(&self.table.options),
                commit_identifier,
            ),
            background: self.background.then_some(&self.executor),
            wait_compaction: wait_compaction || self.force_compact,
        };
        let (merging, mut direct): (Vec<_>, Vec<_>) = self
            .writers
            .iter_mut()
            .partition(|(_, w)| w.spill_count() > 0);
        // the largest buffers first, a task each: the pool's threads end together (a
        // longest-first schedule) where one bucket holds much of a commit's rows, as a new
        // dynamic bucket taking every new key does
        direct.sort_unstable_by_key(|(_, w)| std::cmp::Reverse(w.buffered_rows()));
        let mut results: Vec<Prepared<'_>> = direct
            .into_par_iter()
            .with_max_len(1)
            .map(|kw| prepare(&env, kw, false))
            .collect();
        // deal the merging buckets into `slots` queues, run side by side
        let mut queues: Vec<Vec<_>> = (0..slots).map(|_| vec![]).collect();
        for (i, kw) in merging.into_iter().enumerate() {
            queues[i % slots].push(kw);
        }
        let merged: Vec<Vec<Prepared<'_>>> = queues
            .into_par_iter()
            .map(|q| q.into_iter().map(|kw| prepare(&env, kw, true)).collect())
            .collect();
        results.extend(merged.into_iter().flatten());
        let mut prepared = vec![];
        let mut first_err = None;
        let mut written = vec![];
        for (k, w, r) in results {
            match r {
                Ok(inc) if !inc.is_empty() => {
                    written.push(k.clone());
                    prepared.push((k, w, inc));
                }
                // a full compaction takes every bucket written since the previous one, also
                // those this commit did not write (Java's `submitFullCompaction`)
                Ok(inc) if env.full && self.full_window.contains(k) => prepared.push((k, w, inc)),
                Ok(_) => {}
                Err(e) if first_err.is_none() => first_err = Some(e),
                Err(_) => {}
            }
        }
        // compaction at prepare_commit (a batch write waits for it, paimon-behaviour.md §1.6)
        if first_err.is_none() && compacts {
            let compacted = first_error(
                prepared
                    .par_iter_mut()
                    .map(|(_, w, inc)| w.compact(&env, inc)),
            );
            if let Err(e) = compacted {
                first_err = Some(e);
            }
        }
        if let Some(e) = first_err {
            for (_, w, inc) in &prepared {
                for f in inc.written() {
                    let _ = crate::fileindex::remove_data_file(w.dir(), &f);
                }
            }
            drop(prepared);
            super::dynamic_bucket::discard(&self.table, &hash_changes);
            return Err(self.conflict_if_restored_gone(e));
        }
        // a full compaction clears the window (its commit compacts every bucket of it, §9.4);
        // otherwise the window gains this commit's buckets
        if env.full {
            self.full_window.clear();
        } else if crate::compact::full_compaction_interval(&self.table.options).is_some() {
            self.full_window.extend(written);
        }
        let mut msgs: Vec<CommitMessage> = prepared
            .into_iter()
            .filter(|(_, _, inc)| !inc.is_empty())
            .map(|(k, w, inc)| {
                // the writer's view of its bucket: this commit's new files and compaction
                w.committed(&inc);
                CommitMessage {
                    partition: k.0.clone(),
                    bucket: k.1,
                    total_buckets,
                    data_increment: inc.data_increment,
                    compact_increment: inc.compact_increment,
                    restored_snapshot,
                }
            })
            .collect();
        if let Some(cols) = &self.write_cols {
            super::partial::mark_write_cols(&mut msgs, cols);
        }
        if let Some(d) = self.dynamic.as_mut() {
            add_hash_changes(&mut msgs, &hash_changes, total_buckets, restored_snapshot);
            d.assigner.committed(&hash_changes);
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
        match self.restore.snapshot() {
            Some(snap) if crate::table::live::missing_since_gone(&self.table, snap.id, &e) => {
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
    ///
    /// Refused for a cross-partition upsert table: a row whose key lives in a partition the
    /// overwrite does not replace retracts it there, and a dynamic overwrite would then
    /// replace that whole partition too, losing its other rows.
    /// `with_write_type(cols)` of a data-evolution table (pypaimon's and Java's partial-column
    /// write, write/partial.rs): the files of this write hold only `cols` (in the table's
    /// order) and name them in `write_cols`. Before any row is written.
    pub fn set_write_cols(&mut self, cols: &[String]) -> Result<()> {
        let sub = super::partial::partial_table(&self.table, cols, !self.writers.is_empty())
            .map_err(|e| e.with_table(&self.table.name))?;
        if self.cluster.is_some() {
            return Err(Error::unsupported(
                "with_write_type of a table clustered at write time: the clustering columns \
                 may be left out",
            )
            .with_table(&self.table.name));
        }
        let mut ctx = file_context(&sub, 0, FileSource::Append)?;
        super::partial::name_stats(&mut ctx, &sub);
        self.flush.file_ctx = ctx;
        self.row_schema = table_arrow_schema(&sub);
        self.partition_idx = self
            .table
            .partition_keys()
            .iter()
            .filter_map(|k| sub.schema.field_index(k))
            .collect();
        self.write_cols = Some(sub.schema.fields.iter().map(|f| f.name.clone()).collect());
        self.table = sub;
        Ok(())
    }

    pub fn ignore_previous_files(&mut self, ignore: bool) -> Result<()> {
        if ignore && self.cross.is_some() {
            return Err(Error::unsupported(
                "INSERT OVERWRITE of a cross-partition upsert table (a key's row may live in a \
                 partition the overwrite does not replace); delete the rows, then write",
            )
            .with_table(&self.table.name));
        }
        let postpone = self.table.is_primary_key() && self.table.options.bucket == -2;
        if ignore && postpone {
            return Err(Error::unsupported(
                "INSERT OVERWRITE of a postpone-bucket table (bucket = -2; Java writes it into \
                 fixed buckets of postpone.default-bucket-num)",
            )
            .with_table(&self.table.name));
        }
        // a postpone-bucket writer never restores earlier files (Java's
        // `PostponeBucketFileStoreWrite.withIgnorePreviousFiles`)
        let ignore = ignore || postpone;
        if ignore && self.background {
            for w in self.writers.values_mut() {
                w.sync().map_err(|e| e.with_table(&self.table.name))?;
            }
        }
        self.ignore_previous = ignore;
        self.background = self.compacts_in_background();
        for w in self.writers.values_mut() {
            w.ignore_previous_files(ignore);
        }
        Ok(())
    }

    /// Whether this writer compacts (paimon-behaviour.md §1.6): primary-key tables unless
    /// `write-only`.
    fn compacts(&self) -> bool {
        // append tables: bucketed ones, as Java's BucketedAppendCompactManager (bucket-unaware
        // tables are compacted by a dedicated job, Table.compact)
        (self.table.is_primary_key() || self.table.options.bucket > 0)
            && !self.table.options.write_only
    }

    /// The budget covers the final merge too: a bucket that spilled merges its runs into a
    /// Parquet writer (its merge footprint), [`Self::merge_slots`] buckets at once. If that
    /// working memory and the in-memory rows together exceed `write-buffer-size`, the in-memory
    /// rows of the buckets that spilled are spilled first (as Paimon does at flush), so the
    /// merges start with the buffers free.
    fn spill_before_merge(&mut self) -> Result<()> {
        if !self.spillable {
            return Ok(());
        }
        let at_once = self.merge_slots();
        let in_memory = self.memory.get();
        let budget = self.flush.budget;
        let merging: Vec<&mut BucketWriter> = self
            .writers
            .values_mut()
            .filter(|w| w.spill_count() > 0 && w.buffered_rows() > 0)
            .collect();
        let per_merge = merging
            .iter()
            .map(|w| w.merge_footprint(budget))
            .max()
            .unwrap_or(0);
        let estimate: u64 = merging
            .iter()
            .map(|w| w.spill_estimate().unwrap_or(0))
            .sum();
        if merging.is_empty()
            || in_memory + at_once * per_merge <= budget
            || !self.spiller.has_room(estimate)
        {
            return Ok(());
        }
        let spiller = &self.spiller;
        first_error(merging.into_par_iter().map(|w| w.spill(spiller)))
    }

    /// How many buckets merge their spilled runs at once at `prepare_commit`: one per worker
    /// thread (each also has its encoder thread), and no more than fit `write-buffer-size`
    /// (the merge footprint). A small buffer thus merges one bucket at a time.
    fn merge_slots(&self) -> usize {
        let per_merge = self
            .writers
            .values()
            .filter(|w| w.spill_count() > 0)
            .map(|w| w.merge_footprint(self.flush.budget))
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

    /// Drop the writers; a later writer of one of their buckets starts from what they knew.
    fn drop_writers(&mut self) {
        for (key, w) in self.writers.drain() {
            let (files, dvs) = w.into_restore();
            self.restore.give_back(key, files, dvs);
        }
    }

    /// Release buffers, spill files and the spill directory. Files handed out by
    /// `prepare_commit` are left to the commit.
    pub fn close(&mut self) {
        self.drop_writers();
        self.reset_spiller();
        // the cross-partition key index and its spill file (write/key_index.rs)
        if let Some(c) = self.cross.as_mut() {
            c.close();
        }
    }

    /// Drop buffered rows and spill files and delete files flushed since the last
    /// `prepare_commit` (files it handed out belong to the commit: `FileStoreCommit`
    /// deletes them if the commit fails or is aborted).
    pub fn abort(&mut self) {
        for w in self.writers.values_mut() {
            w.close();
        }
        // dropping the writers drops buffers, spill files and open file writers (which delete
        // their own files)
        self.drop_writers();
        self.reset_spiller();
    }

    pub fn buffered_rows(&self) -> usize {
        self.writers.values().map(|w| w.buffered_rows()).sum()
    }

    /// Arrow memory held by all buffers (an input batch shared by several buckets counts once),
    /// and by the row groups of append tables' open files.
    pub fn memory_size(&self) -> usize {
        let own: usize = self.writers.values().map(|w| w.own_memory()).sum();
        self.memory.get() + own
    }

    /// Number of spill files currently held.
    pub fn spill_count(&self) -> usize {
        self.writers.values().map(|w| w.spill_count()).sum()
    }

    /// The writer's spill directory, if it spilled.
    pub fn spill_dir(&self) -> Option<std::path::PathBuf> {
        self.spiller.spill_dir()
    }

    /// The budget, the spiller and the buffer of the only (primary-key) bucket writer.
    #[cfg(test)]
    pub(crate) fn merge_tree_buffer(
        &mut self,
    ) -> (usize, &Spiller, &mut super::buffer::SortBuffer) {
        match self.writers.values_mut().next() {
            Some(BucketWriter::MergeTree(w)) => (self.flush.budget, &self.spiller, w.buffer_mut()),
            _ => panic!("one key-value bucket"),
        }
    }
}

/// A bucket writer and what its `prepare_commit` gave.
type Prepared<'w> = (&'w WriterKey, &'w mut BucketWriter, Result<CommitIncrement>);

fn prepare<'w>(
    env: &WriteEnv<'_>,
    (key, w): (&'w WriterKey, &'w mut BucketWriter),
    pipelined: bool,
) -> Prepared<'w> {
    let r = w.prepare_commit(env, pipelined);
    (key, w, r)
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
pub(crate) mod tests {
    use std::collections::BTreeMap;

    use arrow_array::{Int64Array, StringArray};
    use arrow_schema::DataType as AT;
    use arrow_schema::Field;

    use super::*;
    use crate::spec::manifest::DataFileMeta;
    use crate::table::catalog::FileSystemCatalog;
    use crate::table::new_schema::NewTableSchema;

    /// A primary-key table `db.t` (k BIGINT key, v STRING) with `opts` (shared by the write
    /// module's tests).
    pub(crate) fn table(dir: &std::path::Path, opts: &[(&str, &str)]) -> FileStoreTable {
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

    /// Rows `start..start + n` of [`table`]: `v` = `value-<k>`.
    pub(crate) fn rows(start: i64, n: i64) -> RecordBatch {
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
            .filter(|b| b.spill_count() > 0)
            .map(|b| b.buffered_rows())
            .sum()
    }

    /// The largest number of sorted runs of any bucket, as the writer sees its buckets now.
    fn max_runs(w: &TableWrite) -> usize {
        w.writers
            .values()
            .map(|b| match b {
                BucketWriter::MergeTree(m) => m.sorted_runs(),
                BucketWriter::Append(_) => 0,
            })
            .max()
            .unwrap_or(0)
    }

    /// Level-0 files the writers flushed and have not handed to a commit yet.
    fn flushed(w: &TableWrite) -> usize {
        w.writers
            .values()
            .map(|b| match b {
                BucketWriter::MergeTree(m) => m.flushed_files(),
                BucketWriter::Append(_) => 0,
            })
            .sum()
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
                let before = flushed(&w);
                // upserts over 5,000 keys
                w.write(&rows((i % 5) * 1000, 1000)).unwrap();
                flushes += flushed(&w) - before;
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
        let got = read_all(&t);
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
    /// Rows `ks` of [`table`] with `v` = `c<commit>-<k>`.
    fn tagged(ks: std::ops::Range<i64>, commit: i64) -> RecordBatch {
        let b = rows(ks.start, ks.end - ks.start);
        let vs: Vec<String> = ks.map(|k| format!("c{commit}-{k}")).collect();
        RecordBatch::try_new(
            b.schema(),
            vec![b.column(0).clone(), Arc::new(StringArray::from(vs))],
        )
        .unwrap()
    }

    fn read_all(t: &FileStoreTable) -> BTreeMap<i64, String> {
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
        got
    }

    /// A stream write compacting in the background over many commits, checked against a dict
    /// model: every commit's snapshot reads the rows written so far; no snapshot's bucket has
    /// more than stop-trigger + 1 sorted runs (Java's bound at prepareCommit); at least one
    /// compaction was handed over by a later commit than the one that submitted it (commits
    /// with compaction but no new file of theirs in it); after `close` the bucket holds only
    /// files some commit referenced.
    #[test]
    fn stream_commits_compact_in_the_background() {
        let dir = tempfile::tempdir().unwrap();
        let t = stall_table(dir.path(), "false");
        let mut w = TableWrite::new(t.clone()).unwrap();
        w.set_async_compaction(true).unwrap();
        assert!(w.compacts_in_background());
        let commit = crate::commit::FileStoreCommit::new(t.clone(), "u".into());
        let mut model = BTreeMap::new();
        let mut referenced = std::collections::HashSet::new();
        let mut handed_later = 0;
        for c in 0..16i64 {
            // upserts over 6,000 keys, several flushes a commit
            let start = (c * 1700) % 6000;
            let ks = start..(start + 1500 + (c % 3) * 700);
            w.write(&tagged(ks.clone(), c)).unwrap();
            for k in ks {
                model.insert(k, format!("c{c}-{k}"));
            }
            let msgs = w.prepare_commit_with(c, false).unwrap();
            for m in &msgs {
                let new: std::collections::HashSet<&str> = m
                    .data_increment
                    .new_files
                    .iter()
                    .map(|f| f.file_name.as_str())
                    .collect();
                let c = &m.compact_increment;
                if !c.compact_before.is_empty()
                    && c.compact_before
                        .iter()
                        .all(|f| !new.contains(f.file_name.as_str()))
                {
                    handed_later += 1;
                }
                referenced.extend(
                    m.data_increment
                        .new_files
                        .iter()
                        .map(|f| f.file_name.clone()),
                );
                referenced.extend(c.compact_after.iter().map(|f| f.file_name.clone()));
            }
            commit.commit(&msgs, c, None).unwrap();
            assert_eq!(read_all(&t), model, "commit {c}");
            for b in crate::compact::plan::compaction_plan(&t).unwrap() {
                assert!(b.runs.len() <= 5, "commit {c}: {} runs", b.runs.len());
            }
        }
        assert!(
            handed_later > 0,
            "no compaction handed over by a later commit"
        );
        // the last commit waits for compaction (Java's prepareCommit(true, _))
        let msgs = w.prepare_commit_with(16, true).unwrap();
        for m in &msgs {
            let c = &m.compact_increment;
            referenced.extend(c.compact_after.iter().map(|f| f.file_name.clone()));
        }
        commit.commit(&msgs, 16, None).unwrap();
        assert_eq!(read_all(&t), model);
        w.close();
        let on_disk: Vec<String> = std::fs::read_dir(t.bucket_dir("", 0))
            .unwrap()
            .map(|f| f.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        for f in &on_disk {
            assert!(referenced.contains(f), "{f} on disk, in no commit");
        }
    }

    /// `commit.force-compact`: a stream write's every `prepare_commit` waits, so no compaction
    /// is left running after it; a value that is not a boolean is refused. A deletion-vector
    /// table (needs lookup) never compacts in the background.
    #[test]
    fn force_compact_makes_stream_commits_wait() {
        let dir = tempfile::tempdir().unwrap();
        let t = table(
            dir.path(),
            &[
                ("bucket", "1"),
                ("num-sorted-run.compaction-trigger", "2"),
                ("commit.force-compact", "true"),
            ],
        );
        let mut w = TableWrite::new(t.clone()).unwrap();
        w.set_async_compaction(true).unwrap();
        let commit = crate::commit::FileStoreCommit::new(t.clone(), "u".into());
        let mut compacted = 0;
        for c in 0..6 {
            w.write(&rows(c * 100, 1000)).unwrap();
            let msgs = w.prepare_commit_with(c, false).unwrap();
            compacted += msgs
                .iter()
                .filter(|m| !m.compact_increment.compact_before.is_empty())
                .count();
            for b in w.writers.values() {
                if let BucketWriter::MergeTree(m) = b {
                    assert!(!m.compacting(), "commit {c}: a compaction still runs");
                }
            }
            commit.commit(&msgs, c, None).unwrap();
        }
        assert!(compacted >= 1, "{compacted}");
        w.close();
        let bad = table(
            &dir.path().join("bad"),
            &[("bucket", "1"), ("commit.force-compact", "yes")],
        );
        let err = TableWrite::new(bad).err().unwrap().to_string();
        assert!(err.contains("commit.force-compact"), "{err}");
        let dv = table(
            &dir.path().join("dv"),
            &[("bucket", "1"), ("deletion-vectors.enabled", "true")],
        );
        let mut w = TableWrite::new(dv).unwrap();
        w.set_async_compaction(true).unwrap();
        assert!(!w.compacts_in_background());
    }

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
        assert!(msgs
            .iter()
            .all(|m| m.compact_increment.compact_before.is_empty()));
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
        let routed = w
            .route(&w.check(&part, 0, None, None).unwrap().unwrap())
            .unwrap();
        let key = &routed[0].0;
        msgs.iter()
            .filter(|m| (&m.partition, m.bucket) == (&key.0, key.1))
            .flat_map(|m| {
                m.data_increment
                    .new_files
                    .iter()
                    .map(|f| f.min_sequence_number)
            })
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
        assert!(!w.restore.read_all());
        assert_eq!(w.restore.partitions_read(), 1);
        assert_eq!(w.restore.max_sequence_numbers(), vec![99]);
        // a partition not seen yet: everything is read once
        w.write(&partition_rows(2, 0..5)).unwrap();
        w.write(&partition_rows(3, 0..5)).unwrap();
        assert!(w.restore.read_all());
        assert_eq!(w.restore.max_sequence_numbers().len(), 2);
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
                .map(|b| match b {
                    BucketWriter::Append(a) => a.open_file_bytes(),
                    BucketWriter::MergeTree(_) => 0,
                })
                .sum();
            assert!(
                open <= budget,
                "open row groups hold {open} bytes after write {i}"
            );
            assert!(w.memory_size() <= budget);
        }
        let msgs = w.prepare_commit().unwrap();
        let files: Vec<&DataFileMeta> = msgs
            .iter()
            .flat_map(|m| &m.data_increment.new_files)
            .collect();
        // row groups were flushed, files were not cut: one file per partition
        assert_eq!(files.len(), 16);
        assert_eq!(files.iter().map(|f| f.row_count).sum::<i64>(), 400_000);
        w.abort();
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
            .flat_map(|m| &m.data_increment.new_files)
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

    /// A postpone compaction's replay (`write_kinds`) drops what `ignore-delete` /
    /// `ignore-update-before` drop at a write.
    #[test]
    fn write_kinds_honours_ignore_options() {
        let kinds = || {
            Int8Array::from(vec![
                RowKind::Insert.byte(),
                RowKind::UpdateBefore.byte(),
                RowKind::UpdateAfter.byte(),
                RowKind::Delete.byte(),
            ])
        };
        for (opts, kept) in [
            (vec![], 4),
            (vec![("ignore-delete", "true")], 2),
            (vec![("ignore-update-before", "true")], 3),
        ] {
            let dir = tempfile::tempdir().unwrap();
            let mut w = TableWrite::new(table(dir.path(), &opts)).unwrap();
            w.write_kinds(&rows(0, 4), kinds()).unwrap();
            assert_eq!(w.buffered_rows(), kept, "{opts:?}");
            w.abort();
        }
    }
}

#[cfg(test)]
mod full_window_tests {
    use super::tests::{rows, table};
    use super::*;

    /// (bucket, new files, changelog files of the compaction) of each message.
    fn shape(msgs: &[CommitMessage]) -> Vec<(i32, usize, usize)> {
        let mut v: Vec<_> = msgs
            .iter()
            .map(|m| {
                (
                    m.bucket,
                    m.data_increment.new_files.len(),
                    m.compact_increment.changelog_files.len(),
                )
            })
            .collect();
        v.sort();
        v
    }

    /// `changelog-producer = full-compaction` with `full-compaction.delta-commits = 2` in a
    /// write kept across commits (Java's `GlobalFullCompactionSinkWrite`): the full compaction
    /// of identifier 2 takes the bucket written at identifier 1 only, so its changelog lands in
    /// the snapshot a `full-compaction.delta-commits` reader waits for; the window then starts
    /// again (identifier 4 takes only what 3 wrote).
    #[test]
    fn full_compaction_takes_buckets_written_earlier_in_the_window() {
        let dir = tempfile::tempdir().unwrap();
        let t = table(
            dir.path(),
            &[
                ("bucket", "2"),
                ("changelog-producer", "full-compaction"),
                ("full-compaction.delta-commits", "2"),
            ],
        );
        let mut w = TableWrite::new(t).unwrap();
        w.write(&rows(0, 40)).unwrap();
        let first = w.prepare_commit_as(1).unwrap();
        assert_eq!(
            shape(&first),
            vec![(0, 1, 0), (1, 1, 0)],
            "no full compaction at 1"
        );
        // identifier 2 writes key 0's bucket only; the other bucket is compacted too
        w.write(&rows(0, 1)).unwrap();
        let second = w.prepare_commit_as(2).unwrap();
        let written = second
            .iter()
            .find(|m| !m.data_increment.new_files.is_empty())
            .unwrap()
            .bucket;
        let other = 1 - written;
        let mut want = vec![(written, 1, 1), (other, 0, 1)];
        want.sort();
        assert_eq!(shape(&second), want);
        // 3 writes key 0's bucket, 4 writes nothing: only that bucket is compacted at 4
        w.write(&rows(0, 1)).unwrap();
        assert_eq!(
            shape(&w.prepare_commit_as(3).unwrap()),
            vec![(written, 1, 0)]
        );
        assert_eq!(
            shape(&w.prepare_commit_as(4).unwrap()),
            vec![(written, 0, 1)]
        );
        // and after a full compaction nothing is left to compact
        assert!(w.prepare_commit_as(6).unwrap().is_empty());
    }
}

/// The table a postpone-bucket table's writes use (Java's `PostponeBucketFileStoreWrite`):
/// every row goes to `bucket-postpone` (bucket -2), in Avro, under a prefix unique to the
/// writer (`<data-file.prefix>-u-<user>-s-<n>-w-`, which Java's compaction groups files by:
/// Java puts its commit user and its write id, or a random int without one; here a random
/// UUID and a random non-negative int, unique to this writer),
/// without compaction, changelog or restoring earlier files; a compaction later moves the
/// rows into real buckets (compact/postpone.rs).
fn postpone_write_table(mut table: FileStoreTable) -> FileStoreTable {
    let o = &mut table.options;
    o.file_format = "avro".into();
    o.file_format_per_level.clear();
    o.write_only = true;
    o.changelog_producer = ChangelogProducer::None;
    let user = uuid::Uuid::new_v4();
    let n = (user.as_u128() as u32) & 0x7fff_ffff;
    o.data_file_prefix = format!("{}-u-{user}-s-{n}-w-", o.data_file_prefix);
    table
}
