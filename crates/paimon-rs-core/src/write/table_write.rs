//! TableWrite: routes rows to (partition, bucket) writers and turns their buffers into level-0
//! files at `prepare_commit`.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, BooleanArray, Int64Array, Int8Array, RecordBatch, UInt32Array};
use arrow_schema::{DataType as ArrowType, Field, Schema, SchemaRef};
use rayon::prelude::*;

use super::buffer::{InMemoryBuffer, WriteBuffer};
use super::input::{align_batch, filter_rows, is_retract, AlignedBatch};
use super::rolling::{FileWriterContext, RollingFileWriter, FILE_SOURCE_APPEND};
use crate::commit::CommitMessage;
use crate::error::{Error, Result};
use crate::io::parquet::writer_properties;
use crate::merge::{merge_sorted_runs, sort_by_key, BatchIter, KvLayout, MergeEngine};
use crate::spec::binary_row::{datum_from_arrow, RowEncoder};
use crate::spec::bucket::compute_buckets;
use crate::spec::datum::Datum;
use crate::spec::partition::partition_path;
use crate::spec::types::DataType;
use crate::table::FileStoreTable;

const KEY_FIELD_ID_START: i32 = i32::MAX / 2;
const SEQUENCE_FIELD_ID: i32 = i32::MAX - 1;
const VALUE_KIND_FIELD_ID: i32 = i32::MAX - 2;
pub const KEY_PREFIX: &str = "_KEY_";
pub const SEQUENCE_NUMBER: &str = "_SEQUENCE_NUMBER";
pub const VALUE_KIND: &str = "_VALUE_KIND";

fn with_id(f: Field, id: i32) -> Field {
    f.with_metadata(HashMap::from([(
        "PARQUET:field_id".to_string(),
        id.to_string(),
    )]))
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

/// Arrow schema of primary-key data files: `_KEY_*`, `_SEQUENCE_NUMBER`, `_VALUE_KIND`, then
/// the table columns (paimon-format.md §6.1).
pub fn kv_arrow_schema(table: &FileStoreTable) -> Result<SchemaRef> {
    let mut fields = vec![];
    for k in table.trimmed_primary_keys() {
        let f = table
            .schema
            .field(&k)
            .ok_or_else(|| Error::schema(format!("primary key '{k}' is not a column")))?;
        fields.push(with_id(
            Field::new(format!("{KEY_PREFIX}{k}"), f.data_type.to_arrow(), false),
            KEY_FIELD_ID_START + f.id,
        ));
    }
    fields.push(with_id(
        Field::new(SEQUENCE_NUMBER, ArrowType::Int64, false),
        SEQUENCE_FIELD_ID,
    ));
    fields.push(with_id(
        Field::new(VALUE_KIND, ArrowType::Int8, false),
        VALUE_KIND_FIELD_ID,
    ));
    fields.extend(table.schema.fields.iter().map(|f| f.to_arrow()));
    Ok(Arc::new(Schema::new(fields)))
}

struct BucketWriter {
    partition: Vec<u8>,
    partition_path: String,
    bucket: i32,
    buffer: Box<dyn WriteBuffer>,
    next_seq: i64,
}

/// Key of a bucket writer: serialized partition BinaryRow and bucket.
type WriterKey = (Vec<u8>, i32);

pub struct TableWrite {
    table: FileStoreTable,
    row_schema: SchemaRef,
    kv_schema: Option<SchemaRef>,
    partition_types: Vec<DataType>,
    partition_idx: Vec<usize>,
    bucket_idx: Vec<usize>,
    bucket_types: Vec<DataType>,
    key_idx: Vec<usize>,
    key_types: Vec<DataType>,
    writers: HashMap<WriterKey, BucketWriter>,
    /// Max sequence number per (partition, bucket) of the table's live files, read on demand.
    restored: Option<HashMap<WriterKey, i64>>,
    /// Files finished by prepare_commit but not yet committed (deleted on abort).
    pending: Vec<std::path::PathBuf>,
    engine: MergeEngine,
}

impl TableWrite {
    pub fn new(table: FileStoreTable) -> Result<Self> {
        let pk = table.is_primary_key();
        table
            .options
            .check_supported(pk, true)
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
        Ok(TableWrite {
            kv_schema: if pk {
                Some(kv_arrow_schema(&table)?)
            } else {
                None
            },
            partition_types: table.partition_types()?,
            bucket_types: table.schema.types_of(&bucket_keys)?,
            key_types: table.schema.types_of(&trimmed)?,
            row_schema,
            partition_idx,
            bucket_idx,
            key_idx,
            writers: HashMap::new(),
            restored: None,
            pending: vec![],
            engine: if pk {
                MergeEngine::from_table(&table)?
            } else {
                MergeEngine::Deduplicate
            },
            table,
        })
    }

    pub fn table(&self) -> &FileStoreTable {
        &self.table
    }

    pub fn row_schema(&self) -> &SchemaRef {
        &self.row_schema
    }

    /// Check, route and buffer one batch. Nothing is buffered if any check fails.
    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        let name = self.table.name.clone();
        self.write_inner(batch).map_err(|e| e.with_table(&name))
    }

    fn write_inner(&mut self, batch: &RecordBatch) -> Result<()> {
        if batch.num_rows() == 0 {
            // still validate the columns
            align_batch(&self.table.schema, &self.row_schema, batch, None)?;
            return Ok(());
        }
        let mut aligned = align_batch(
            &self.table.schema,
            &self.row_schema,
            batch,
            self.table.options.rowkind_field.as_deref(),
        )?;
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
                    .map(|&v| Some(!(ign_del && is_retract(v) || ign_ub && v == 1)))
                    .collect();
                aligned = filter_rows(&aligned, &keep)?;
            }
        }
        let routed = self.route(&aligned)?;
        // All checks passed: only now touch the writers.
        for ((partition, bucket), (ppath, indices)) in routed {
            let idx = UInt32Array::from(indices);
            let rows = arrow_select::take::take_record_batch(&aligned.batch, &idx)?;
            let kinds = match &aligned.kinds {
                Some(k) => Some(take_i8(k, &idx)?),
                None => None,
            };
            let key = (partition, bucket);
            if !self.writers.contains_key(&key) {
                let next_seq = self.restored_max_seq(&key)? + 1;
                self.writers.insert(
                    key.clone(),
                    BucketWriter {
                        partition: key.0.clone(),
                        partition_path: ppath,
                        bucket,
                        buffer: Box::new(InMemoryBuffer::new(self.row_schema.clone())),
                        next_seq,
                    },
                );
            }
            if let Some(w) = self.writers.get_mut(&key) {
                w.buffer.put(rows, kinds)?;
            }
        }
        Ok(())
    }

    fn restored_max_seq(&mut self, key: &WriterKey) -> Result<i64> {
        if self.restored.is_none() {
            let mut m: HashMap<WriterKey, i64> = HashMap::new();
            let sm = self.table.snapshot_manager();
            if let Some(snap) = sm.latest()? {
                for e in crate::read::scan::live_entries(&self.table, &snap)? {
                    let v = m.entry((e.partition.clone(), e.bucket)).or_insert(-1);
                    *v = (*v).max(e.file.max_sequence_number);
                }
            }
            self.restored = Some(m);
        }
        Ok(self
            .restored
            .as_ref()
            .and_then(|m| m.get(key).copied())
            .unwrap_or(-1))
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

    fn file_context(&self, dir: std::path::PathBuf) -> Result<FileWriterContext> {
        let o = &self.table.options;
        let pk = self.table.is_primary_key();
        let nk = if pk { self.key_types.len() } else { 0 };
        let value_offset = if pk { nk + 2 } else { 0 };
        let fields = &self.table.schema.fields;
        let stat_fields: Vec<usize> = (0..fields.len())
            .filter(|&i| !fields[i].data_type.is_nested())
            .collect();
        let names = if stat_fields.len() == fields.len() {
            None
        } else {
            Some(
                stat_fields
                    .iter()
                    .map(|&i| fields[i].name.clone())
                    .collect(),
            )
        };
        Ok(FileWriterContext {
            dir,
            prefix: o.data_file_prefix.clone(),
            file_schema: if pk {
                self.kv_schema
                    .clone()
                    .ok_or_else(|| Error::Internal("kv schema".into()))?
            } else {
                self.row_schema.clone()
            },
            props: writer_properties(&o.file_compression, o.zstd_level)?,
            target_size: o.target_file_size(),
            schema_id: self.table.schema.id,
            level: 0,
            file_source: FILE_SOURCE_APPEND,
            key_types: if pk { self.key_types.clone() } else { vec![] },
            seq_col: if pk { Some(nk) } else { None },
            kind_col: if pk { Some(nk + 1) } else { None },
            value_stats_cols: stat_fields.iter().map(|&i| i + value_offset).collect(),
            value_stats_types: stat_fields
                .iter()
                .map(|&i| fields[i].data_type.clone())
                .collect(),
            value_stats_names: names,
            stats_mode: o.stats_mode,
        })
    }

    /// Flush every bucket (in parallel) into level-0 files; one message per bucket written.
    pub fn prepare_commit(&mut self) -> Result<Vec<CommitMessage>> {
        let name = self.table.name.clone();
        let mut work = vec![];
        for w in self.writers.values_mut() {
            if let Some((batch, kinds)) = w.buffer.drain()? {
                let seq = w.next_seq;
                w.next_seq += batch.num_rows() as i64;
                let dir = self.table.bucket_dir(&w.partition_path, w.bucket);
                work.push((w.partition.clone(), w.bucket, dir, batch, kinds, seq));
            }
        }
        let total_buckets = self.table.options.bucket;
        let results: Vec<Result<CommitMessage>> = work
            .into_par_iter()
            .map(|(partition, bucket, dir, batch, kinds, seq)| {
                let ctx = self.file_context(dir)?;
                let files = if self.table.is_primary_key() {
                    self.flush_kv(ctx, &batch, &kinds, seq)?
                } else {
                    let mut w = RollingFileWriter::new(ctx, seq);
                    w.write(&batch)?;
                    w.close()?
                };
                Ok(CommitMessage {
                    partition,
                    bucket,
                    total_buckets,
                    new_files: files,
                    compact_before: vec![],
                    compact_after: vec![],
                })
            })
            .collect();
        let mut msgs = vec![];
        let mut first_err = None;
        for r in results {
            match r {
                Ok(m) => msgs.push(m),
                Err(e) if first_err.is_none() => first_err = Some(e),
                Err(_) => {}
            }
        }
        let mut paths = vec![];
        for m in &msgs {
            let ppath = self.partition_path_of(m)?;
            for f in &m.new_files {
                paths.push(self.table.bucket_dir(&ppath, m.bucket).join(&f.file_name));
            }
        }
        if let Some(e) = first_err {
            for p in paths {
                let _ = std::fs::remove_file(p);
            }
            return Err(e.with_table(&name));
        }
        self.pending.extend(paths);
        Ok(msgs)
    }

    fn partition_path_of(&self, m: &CommitMessage) -> Result<String> {
        Ok(self
            .writers
            .get(&(m.partition.clone(), m.bucket))
            .map(|w| w.partition_path.clone())
            .unwrap_or_default())
    }

    /// Sort by (key, sequence), merge equal keys, write the survivors.
    fn flush_kv(
        &self,
        ctx: FileWriterContext,
        batch: &RecordBatch,
        kinds: &Int8Array,
        first_seq: i64,
    ) -> Result<Vec<crate::spec::manifest::DataFileMeta>> {
        let n = batch.num_rows();
        let keys: Vec<ArrayRef> = self
            .key_idx
            .iter()
            .map(|&i| batch.column(i).clone())
            .collect();
        // Sort by (key, arrival = sequence), then merge equal keys through the table's engine.
        let (sorted, _) = sort_by_key(&keys, None, n)?;
        let order = UInt32Array::from(sorted);
        let seqs: Int64Array = order
            .values()
            .iter()
            .map(|&i| first_seq + i as i64)
            .collect();
        let kinds = take_i8(kinds, &order)?;
        let values = arrow_select::take::take_record_batch(batch, &order)?;
        let mut cols: Vec<ArrayRef> = self
            .key_idx
            .iter()
            .map(|&i| values.column(i).clone())
            .collect();
        cols.push(Arc::new(seqs));
        cols.push(Arc::new(kinds));
        cols.extend(values.columns().iter().cloned());
        let kv = RecordBatch::try_new(ctx.file_schema.clone(), cols)?;
        let layout = KvLayout {
            num_keys: self.key_idx.len(),
        };
        let run: BatchIter = Box::new(std::iter::once(Ok(kv)));
        let merged = merge_sorted_runs(vec![run], layout, self.engine.clone(), false)?;
        let mut w = RollingFileWriter::new(ctx, first_seq);
        for b in merged {
            w.write(&b?)?;
        }
        w.close()
    }

    /// Files written by `prepare_commit` whose commit has not happened: forget them after a
    /// successful commit (`committed`) or delete them (`abort`).
    pub fn take_pending(&mut self) -> Vec<std::path::PathBuf> {
        std::mem::take(&mut self.pending)
    }

    /// Drop buffered rows and delete uncommitted files.
    pub fn abort(&mut self) {
        self.writers.clear();
        for p in self.take_pending() {
            let _ = std::fs::remove_file(p);
        }
    }

    pub fn buffered_rows(&self) -> usize {
        self.writers.values().map(|w| w.buffer.num_rows()).sum()
    }
}

fn take_i8(k: &Int8Array, idx: &UInt32Array) -> Result<Int8Array> {
    let t = arrow_select::take::take(k, idx, None)?;
    t.as_any()
        .downcast_ref::<Int8Array>()
        .cloned()
        .ok_or_else(|| Error::Internal("kinds take".into()))
}
