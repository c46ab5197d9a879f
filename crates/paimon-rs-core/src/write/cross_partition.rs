//! Cross-partition upsert (paimon-behaviour.md §1.8): a primary-key table with `bucket = -1`
//! whose primary key does not contain every partition key (Java's `BucketMode.KEY_DYNAMIC`).
//! A key is unique across the whole table, so a writer keeps a global index of every key's
//! (partition, bucket), bootstrapped from the table's live rows (Java's `IndexBootstrap`), and
//! routes each input row through it (Java's `GlobalIndexAssigner`):
//!
//! * a new key goes to a bucket of its partition with fewer than
//!   `dynamic-bucket.target-row-num` keys, else to the smallest unused bucket (Java's
//!   `crosspartition.BucketAssigner`; no hash index files are written in this mode);
//! * a key already in the row's partition goes to its bucket;
//! * a key in another partition (it moves): `deduplicate` writes a `-D` of it into its old
//!   (partition, bucket) and the row as a new key of its new partition; `partial-update` and
//!   `aggregation` write the row into the old (partition, bucket), its partition columns set to
//!   the old partition's values; `first-row` drops the row (Java's `ExistingProcessor`s).
//!
//! The index maps each encoded key to a partition id + bucket ([`KeyIndex`], write/key_index.rs):
//! in memory within `lookup.cache-max-memory-size`, spilled to a local file past it.

use std::collections::{BTreeMap, HashMap};

use arrow_array::{Array, ArrayRef, Int8Array, RecordBatch, UInt32Array};
use rayon::prelude::*;

use super::input::AlignedBatch;
use super::key_index::KeyIndex;
use crate::error::{Error, Result};
use crate::options::MergeEngineKind;
use crate::read::scan::TableScan;
use crate::read::table_read::TableRead;
use crate::spec::binary_row::{datums_to_arrow, deserialize_row, RowEncoder};
use crate::spec::row_kind::RowKind;
use crate::spec::snapshot::Snapshot;
use crate::spec::types::DataType;
use crate::table::FileStoreTable;

/// What happens to a row whose key lives in another partition (Java's `ExistingProcessor`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Existing {
    /// `deduplicate`: delete the old row, insert the new one in its own partition.
    DeleteOld,
    /// `partial-update`, `aggregation`: the row goes to the old partition and bucket.
    UseOld,
    /// `first-row`: the row is dropped.
    SkipNew,
}

/// Whether `table` is a cross-partition upsert table: a primary key without every partition
/// key, in dynamic bucket mode (Java's `TableSchema.crossPartitionUpdate` and `KEY_DYNAMIC`).
pub(crate) fn is_cross_partition(table: &FileStoreTable) -> bool {
    table.is_primary_key()
        && table.options.bucket == -1
        && table
            .partition_keys()
            .iter()
            .any(|p| !table.schema.primary_keys.contains(p))
}

/// The assign task (of `num_assigners`) of each row of `key_cols` (the primary key's columns):
/// the Paimon hash of the whole primary key, modulo (Java's `ChannelComputer.select`).
fn channels_of(
    key_cols: &[ArrayRef],
    pk_types: &[DataType],
    num_assigners: i32,
) -> Result<Vec<i32>> {
    Ok(crate::spec::bucket::compute_hashes(key_cols, pk_types)?
        .into_iter()
        .map(|h| (h % num_assigners).abs())
        .collect())
}

/// The assign task of every row of `batch` (at least the primary-key columns, by name) of a
/// distributed write of the cross-partition table `table` over `num_assigners` tasks, and its
/// key hash: a key goes to one task whatever its partition, so that one task's index holds it
/// (Java's Spark/Flink cross-partition writers shuffle by the primary key).
pub fn cross_partition_channels(
    table: &FileStoreTable,
    batch: &RecordBatch,
    num_assigners: i32,
) -> Result<(Vec<i32>, Vec<i32>)> {
    if !is_cross_partition(table) || num_assigners <= 0 {
        return Err(Error::invalid(format!(
            "cross-partition assign channels over {num_assigners} tasks of a table that is {}a \
             cross-partition upsert table",
            if is_cross_partition(table) {
                ""
            } else {
                "not "
            }
        ))
        .with_table(&table.name));
    }
    let cols = table
        .schema
        .primary_keys
        .iter()
        .map(|k| {
            batch.column_by_name(k).cloned().ok_or_else(|| {
                Error::schema(format!("primary key column '{k}' is not in the batch"))
                    .with_table(&table.name)
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let types = table.schema.types_of(&table.schema.primary_keys)?;
    let hashes = crate::spec::bucket::compute_hashes(&cols, &types)?;
    let channels = hashes.iter().map(|h| (h % num_assigners).abs()).collect();
    Ok((channels, hashes))
}

/// The global key index of a cross-partition writer (see the module doc).
pub(crate) struct CrossPartitionIndex {
    table: String,
    existing: Existing,
    target_row_num: i64,
    pk_idx: Vec<usize>,
    pk_types: Vec<DataType>,
    part_idx: Vec<usize>,
    part_types: Vec<DataType>,
    /// Partitions (serialized BinaryRow) by id, and ids by partition.
    parts: Vec<Vec<u8>>,
    part_ids: HashMap<Vec<u8>, u32>,
    /// Keys per bucket of each partition (by id): where a new key goes.
    counts: Vec<BTreeMap<i32, i64>>,
    /// Encoded primary key -> (partition id, bucket); None once closed.
    keys: Option<KeyIndex>,
    /// One-row arrays of each partition's values (by id), for rows moved into it.
    part_arrays: HashMap<u32, Vec<ArrayRef>>,
    bootstrapped: bool,
    /// `cross-partition-upsert.index-ttl`, in milliseconds.
    index_ttl_ms: Option<u64>,
    /// `cross-partition-upsert.bootstrap-parallelism` (default 10).
    bootstrap_parallelism: usize,
    /// An assign task of a distributed write: (assigners, this one). It holds the keys whose
    /// hash ([`key_channels`]) is its own, and opens only its own buckets (`bucket % n == id`).
    shard: Option<(i32, i32)>,
}

/// Rows routed through the index: the rows to write (the input, or a new batch when rows were
/// dropped, retracted or moved) and the bucket of each.
pub(crate) struct Routed {
    pub rows: AlignedBatch,
    pub buckets: Vec<i32>,
}

/// The encoded keys of one split, with its partition and bucket.
type SplitKeys = (Vec<u8>, i32, Vec<Box<[u8]>>);

/// One output row: the input row it copies, the partition whose values replace its partition
/// columns (None: its own), and its row kind when not its own.
struct Out {
    src: u32,
    part: Option<u32>,
    kind: Option<i8>,
}

impl CrossPartitionIndex {
    pub fn new(table: &FileStoreTable) -> Result<Self> {
        let idx_of = |names: &[String]| -> Result<Vec<usize>> {
            names
                .iter()
                .map(|n| {
                    table.schema.field_index(n).ok_or_else(|| {
                        Error::schema(format!("column '{n}' is not in the schema"))
                            .with_table(&table.name)
                    })
                })
                .collect()
        };
        let o = &table.options;
        if o.raw.contains_key("sequence.field") {
            // Java's SchemaValidation
            return Err(Error::invalid(format!(
                "You can not use sequence.field in cross partition update case (Primary key \
                 constraint '{:?}' not include all partition fields '{:?}').",
                table.schema.primary_keys,
                table.partition_keys()
            ))
            .with_table(&table.name));
        }
        let existing = match o.merge_engine {
            MergeEngineKind::Deduplicate => Existing::DeleteOld,
            MergeEngineKind::PartialUpdate | MergeEngineKind::Aggregation => Existing::UseOld,
            MergeEngineKind::FirstRow => Existing::SkipNew,
        };
        let name = &table.name;
        let index_ttl_ms = match o.raw.get("cross-partition-upsert.index-ttl") {
            Some(v) => Some(
                crate::options::parse_duration_ms("cross-partition-upsert.index-ttl", v)
                    .map_err(|e| e.with_table(name))?,
            ),
            None => None,
        };
        let bootstrap_parallelism = match o.raw.get("cross-partition-upsert.bootstrap-parallelism")
        {
            Some(v) => match v.trim().parse::<usize>() {
                Ok(n) if n > 0 => n,
                _ => {
                    return Err(Error::invalid(format!(
                        "'cross-partition-upsert.bootstrap-parallelism' = '{v}': expected a \
                         positive integer"
                    ))
                    .with_table(name))
                }
            },
            None => 10,
        };
        // Java's GlobalIndexAssigner sizes its RocksDB cache by this option (default 256 mb)
        let budget = match o.raw.get("lookup.cache-max-memory-size") {
            Some(v) => crate::options::parse_memory_size("lookup.cache-max-memory-size", v)
                .map_err(|e| e.with_table(name))?,
            None => 256 << 20,
        };
        let pk = &table.schema.primary_keys;
        Ok(CrossPartitionIndex {
            index_ttl_ms,
            bootstrap_parallelism,
            table: table.name.clone(),
            existing,
            target_row_num: o.dynamic_bucket()?.target_row_num,
            pk_idx: idx_of(pk)?,
            pk_types: table.schema.types_of(pk)?,
            part_idx: idx_of(table.partition_keys())?,
            part_types: table.partition_types()?,
            parts: vec![],
            part_ids: HashMap::new(),
            counts: vec![],
            keys: Some(KeyIndex::new(&table.name, budget, &o.tmp_dir)),
            shard: None,
            part_arrays: HashMap::new(),
            bootstrapped: false,
        })
    }

    pub fn is_bootstrapped(&self) -> bool {
        self.bootstrapped
    }

    /// Make this the index of assign task `assign_id` of `num_assigners` (before the
    /// bootstrap): Java's `GlobalIndexAssigner` with `numAssigners`, `assignId`.
    pub fn set_shard(&mut self, num_assigners: i32, assign_id: i32) -> Result<()> {
        if num_assigners <= 0 || !(0..num_assigners).contains(&assign_id) || self.bootstrapped {
            return Err(Error::Internal(format!(
                "{}: cross-partition assigner {assign_id} of {num_assigners} (bootstrapped: {})",
                self.table, self.bootstrapped
            )));
        }
        self.shard = Some((num_assigners, assign_id));
        Ok(())
    }

    /// Drop the key index and its spill files (the writer closes); a later write is refused.
    pub fn close(&mut self) {
        self.keys = None;
    }

    fn keys(&mut self) -> Result<&mut KeyIndex> {
        let table = &self.table;
        self.keys.as_mut().ok_or_else(|| {
            Error::invalid(
                "the writer was closed: its cross-partition key index is gone (open a new \
                 writer)",
            )
            .with_table(table)
        })
    }

    fn part_id(&mut self, partition: &[u8]) -> u32 {
        if let Some(&id) = self.part_ids.get(partition) {
            return id;
        }
        let id = self.parts.len() as u32;
        self.parts.push(partition.to_vec());
        self.part_ids.insert(partition.to_vec(), id);
        self.counts.push(BTreeMap::new());
        id
    }

    /// Load every live key of `snapshot` (None: the table is empty) with its partition and
    /// bucket (Java's `IndexBootstrap`): level 0 included, buckets whose files are all older
    /// than `cross-partition-upsert.index-ttl` left out, the splits read by
    /// `cross-partition-upsert.bootstrap-parallelism` threads.
    pub fn bootstrap(&mut self, table: &FileStoreTable, snapshot: Option<&Snapshot>) -> Result<()> {
        if self.bootstrapped {
            return Ok(());
        }
        if let Some(snap) = snapshot {
            let (ttl, parallelism) = (self.index_ttl_ms, self.bootstrap_parallelism);
            let mut splits = TableScan::new(table.clone(), None)
                .with_snapshot(snap.id)
                .with_all_levels()
                .plan()?
                .splits;
            if let Some(ttl) = ttl {
                let now = chrono::Utc::now().timestamp_millis();
                splits.retain(|s| {
                    s.files.iter().any(|f| {
                        f.creation_time
                            .and_then(chrono::DateTime::from_timestamp_millis)
                            .and_then(|t| crate::scan_options::local_to_epoch_millis(t.naive_utc()))
                            .is_some_and(|t| now <= t.saturating_add(ttl as i64))
                    })
                });
            }
            let read =
                TableRead::new(table.clone(), Some(table.schema.primary_keys.clone()), None)?;
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(parallelism)
                .build()
                .map_err(|e| Error::Internal(format!("bootstrap thread pool: {e}")))?;
            // `parallelism` splits at a time, so that only their keys are held beside the index
            // (which spills past its budget)
            let shard = self.shard;
            for chunk in splits.chunks(parallelism) {
                let pk_types = &self.pk_types;
                let per_split: Vec<SplitKeys> = pool.install(|| {
                    chunk
                        .par_iter()
                        .map(|s| {
                            let mut keys = vec![];
                            let mut buf = vec![];
                            for b in read.read_split(s)? {
                                let enc = RowEncoder::new(pk_types, b.columns())?;
                                let channels = match shard {
                                    Some((n, _)) => channels_of(b.columns(), pk_types, n)?,
                                    None => vec![],
                                };
                                let mine = |r: usize| shard.is_none_or(|(_, id)| channels[r] == id);
                                for r in (0..b.num_rows()).filter(|&r| mine(r)) {
                                    enc.encode(r, &mut buf)?;
                                    keys.push(buf.as_slice().into());
                                }
                            }
                            Ok((s.partition.clone(), s.bucket, keys))
                        })
                        .collect::<Result<_>>()
                })?;
                for (partition, bucket, keys) in per_split {
                    let pid = self.part_id(&partition);
                    let index = self.keys()?;
                    let mut added = 0;
                    for k in keys {
                        if index.load(k, (pid, bucket))? {
                            added += 1;
                        }
                    }
                    *self.counts[pid as usize].entry(bucket).or_insert(0) += added;
                }
            }
        }
        self.keys()?.end_load()?;
        self.bootstrapped = true;
        Ok(())
    }

    /// A bucket of partition `pid` for a new key (Java's `crosspartition.BucketAssigner`).
    fn new_bucket(&mut self, pid: u32) -> i32 {
        let counts = &mut self.counts[pid as usize];
        let own = |b: i32| self.shard.is_none_or(|(n, id)| b % n == id);
        if let Some((&b, n)) = counts
            .iter_mut()
            .find(|(b, n)| own(**b) && **n < self.target_row_num)
        {
            *n += 1;
            return b;
        }
        let b = (0..)
            .find(|&b| own(b) && !counts.contains_key(&b))
            .unwrap_or(0);
        counts.insert(b, 1);
        b
    }

    /// Route `batch` (its rows' partitions in `partitions`, serialized) through the index, in
    /// row order (see the module doc).
    pub fn route(&mut self, batch: &AlignedBatch, partitions: &[&[u8]]) -> Result<Routed> {
        let n = batch.batch.num_rows();
        let cols = batch.batch.columns();
        let key_cols: Vec<ArrayRef> = self.pk_idx.iter().map(|&i| cols[i].clone()).collect();
        let enc = RowEncoder::new(&self.pk_types, &key_cols)?;
        if let Some((assigners, id)) = self.shard {
            let channels = channels_of(&key_cols, &self.pk_types, assigners)?;
            if let Some(c) = channels.iter().find(|&&c| c != id) {
                return Err(Error::Internal(format!(
                    "{}: a key of assign channel {c} reached cross-partition assigner {id} of \
                     {assigners}",
                    self.table
                )));
            }
        }
        let mut out: Vec<Out> = Vec::with_capacity(n);
        let mut buckets = Vec::with_capacity(n);
        let mut changed = false;
        let mut buf = vec![];
        for (r, partition) in partitions.iter().enumerate().take(n) {
            enc.encode(r, &mut buf)?;
            let pid = self.part_id(partition);
            let src = r as u32;
            let mut emit = |part: Option<u32>, kind: Option<i8>, bucket: i32| {
                out.push(Out { src, part, kind });
                buckets.push(bucket);
            };
            let is_new = match self.keys()?.get(buf.as_slice())? {
                None => true,
                Some((p0, b0)) if p0 == pid => {
                    emit(None, None, b0);
                    false
                }
                Some((p0, b0)) => {
                    changed = true;
                    match self.existing {
                        Existing::SkipNew => false,
                        Existing::UseOld => {
                            emit(Some(p0), None, b0);
                            false
                        }
                        Existing::DeleteOld => {
                            emit(Some(p0), Some(RowKind::Delete.byte()), b0);
                            if let Some(c) = self.counts[p0 as usize].get_mut(&b0) {
                                *c -= 1;
                            }
                            true
                        }
                    }
                }
            };
            if is_new {
                let b = self.new_bucket(pid);
                self.keys()?.put(&buf, (pid, b))?;
                emit(None, None, b);
            }
        }
        if !changed {
            return Ok(Routed {
                rows: AlignedBatch {
                    batch: batch.batch.clone(),
                    kinds: batch.kinds.clone(),
                    buckets: None,
                },
                buckets,
            });
        }
        Ok(Routed {
            rows: self.rebuild(batch, &out)?,
            buckets,
        })
    }

    /// The rows of `out` as a batch: input rows copied, partition columns of moved rows and
    /// retractions set to their partition's values, row kinds of retractions set.
    fn rebuild(&mut self, batch: &AlignedBatch, out: &[Out]) -> Result<AlignedBatch> {
        let idx = UInt32Array::from_iter_values(out.iter().map(|o| o.src));
        let mut columns: Vec<ArrayRef> = batch
            .batch
            .columns()
            .iter()
            .map(|c| arrow_select::take::take(c.as_ref(), &idx, None))
            .collect::<std::result::Result<_, _>>()?;
        // partition ids used, and their one-row arrays
        let mut used: Vec<u32> = out.iter().filter_map(|o| o.part).collect();
        used.sort_unstable();
        used.dedup();
        for &pid in &used {
            if !self.part_arrays.contains_key(&pid) {
                let values = deserialize_row(&self.part_types, &self.parts[pid as usize])?;
                let arrays = self
                    .part_types
                    .iter()
                    .zip(values)
                    .map(|(t, v)| datums_to_arrow(t, &[v]))
                    .collect::<Result<Vec<_>>>()?;
                self.part_arrays.insert(pid, arrays);
            }
        }
        let slot = |pid: u32| used.binary_search(&pid).map_or(0, |i| i + 1);
        let picks: Vec<(usize, usize)> = out
            .iter()
            .enumerate()
            .map(|(i, o)| match o.part {
                None => (0, i),
                Some(pid) => (slot(pid), 0),
            })
            .collect();
        for (j, &ci) in self.part_idx.iter().enumerate() {
            let mut sources: Vec<&dyn Array> = vec![columns[ci].as_ref()];
            for pid in &used {
                let arrays = self.part_arrays.get(pid).ok_or_else(|| {
                    Error::Internal(format!("{}: partition values not built", self.table))
                })?;
                sources.push(arrays[j].as_ref());
            }
            columns[ci] = arrow_select::interleave::interleave(&sources, &picks)?;
        }
        let kinds: Int8Array = out
            .iter()
            .map(|o| {
                Some(o.kind.unwrap_or_else(|| {
                    batch
                        .kinds
                        .as_ref()
                        .map_or(RowKind::Insert.byte(), |k| k.value(o.src as usize))
                }))
            })
            .collect();
        let batch = RecordBatch::try_new(batch.batch.schema(), columns)?;
        Ok(AlignedBatch {
            batch,
            kinds: Some(kinds),
            buckets: None,
        })
    }
}

/// One assign task of a distributed write of a cross-partition upsert table (Java's
/// `GlobalIndexAssigner` with `numAssigners`, `assignId`, in the Spark/Flink assign operator):
/// its input is every row whose key [`cross_partition_channels`] sends to it, in an order the
/// same in every attempt; it bootstraps the keys of the snapshot `snapshot_id` that are its own
/// and routes each row (see the module doc); the bucket writers write the rows it returns with
/// `TableWrite::write_assigned_rows`, restored from the same snapshot, so the commit's check
/// (commit/hash_index.rs, `key_index_base`) starts from it.
pub struct CrossAssignTask {
    write: super::TableWrite,
}

impl CrossAssignTask {
    pub fn new(
        table: &FileStoreTable,
        num_assigners: i32,
        assign_id: i32,
        snapshot_id: Option<i64>,
    ) -> Result<Self> {
        if !is_cross_partition(table) {
            return Err(Error::invalid(
                "a cross-partition assign task for a table that is not a cross-partition upsert \
                 table",
            )
            .with_table(&table.name));
        }
        let mut write = super::TableWrite::new(table.clone())?;
        write.restore_from(snapshot_id)?;
        write.set_cross_partition_shard(num_assigners, assign_id)?;
        Ok(CrossAssignTask { write })
    }

    /// The rows of `batch` routed: the rows to write (the table's columns), each one's row kind
    /// and bucket; None when no row is left (all dropped).
    pub fn assign(
        &mut self,
        batch: &RecordBatch,
    ) -> Result<Option<(RecordBatch, Int8Array, arrow_array::Int32Array)>> {
        self.write.assign_cross_partition(batch)
    }
}
