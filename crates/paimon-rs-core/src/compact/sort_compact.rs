//! Sort compaction (paimon-behaviour.md §16; Java's `SortCompactAction` with the
//! `order` / `zorder` / `hilbert` sorters): the live files of the selected partitions of a
//! bucket-unaware append table are read, their rows sorted by the strategy's key over the
//! order columns, written again in that order (rolled at `target-file-size`), and committed
//! as one OVERWRITE snapshot that removes exactly the files read. Files with nearby key values
//! end up together, so min/max statistics let a filter on the order columns skip most files.
//!
//! Java overwrites the partitions (whatever is in them at commit time); we remove only the
//! files we read, so an append committed meanwhile stays, and a commit that removed one of
//! them (a concurrent compaction or overwrite) makes ours fail with `CommitConflict`.
//!
//! A dynamic-bucket primary-key table (`bucket = -1`, every partition key in the primary key)
//! is sorted as Java sorts it: the selected partitions' rows (merged: one row per key) are
//! sorted and written again through the table's overwrite writer, which assigns the keys to
//! fresh buckets in sort order (so each bucket holds a stretch of the curve) and writes their
//! hash index anew; one OVERWRITE snapshot replaces the partitions' files and index files
//! (commit/hash_index.rs). As in Java, rows committed into those partitions meanwhile are
//! replaced too.
//!
//! Refused as Java refuses them: tables whose bucket mode is neither bucket-unaware nor
//! dynamic (`Sort Compact only supports bucket=-1 yet.`: fixed buckets, cross-partition
//! upsert tables, whose mode is not HASH_DYNAMIC in Java), data-evolution tables. Refused
//! because we do not implement them yet: deletion-vector tables, row tracking; a selection of
//! partitions of a dynamic-bucket table with `dynamic-partition-overwrite = false` (the
//! overwrite would replace the whole table). The distributed (Spark) sort of a dynamic-bucket
//! table assigns buckets in its tasks (python/paimon_rs/spark/sort_compaction.py):
//! [`sort_compaction_plan`] only checks and pins the snapshot for it.

use arrow_array::{ArrayRef, RecordBatch, UInt32Array};
use arrow_row::{RowConverter, SortField};
use arrow_schema::SortOptions;
use rayon::prelude::*;

use super::append::check_compactable;
use super::work::bucket_splits;
use crate::commit::{CommitMessage, CompactIncrement, DataIncrement, FileStoreCommit};
use crate::error::{Error, Result};
use crate::kv::{file_context, FileSource};
use crate::read::split::Split;
use crate::read::table_read::TableRead;
use crate::sort::curve::{self, OrderStrategy};
use crate::spec::manifest::DataFileMeta;
use crate::spec::partition::PartitionSpec;
use crate::spec::snapshot::BATCH_COMMIT_IDENTIFIER;
use crate::spec::types::DataType;
use crate::table::FileStoreTable;
use crate::write::rolling::RollingFileWriter;

/// Rows taken from the sorted permutation per batch handed to the writer.
const WRITE_BATCH_ROWS: usize = 64 * 1024;

/// A validated sort: the strategy and the order columns (index in the table's row, type).
#[derive(Debug, Clone)]
pub struct SortSpec {
    pub strategy: OrderStrategy,
    columns: Vec<(String, usize, DataType)>,
    /// `zorder.var-length-contribution` (Java's `CoreOptions.varTypeSize`, default 8).
    var_width: usize,
}

impl SortSpec {
    /// Check the strategy and the order columns against `table` (Java's `TableSorter`
    /// checks, and the indexers' type checks).
    pub fn new(table: &FileStoreTable, strategy: &str, order_by: &[String]) -> Result<Self> {
        let strategy = OrderStrategy::parse(strategy)?;
        if order_by.is_empty() {
            return Err(Error::invalid(
                "sort compaction: order column names should not be empty",
            ));
        }
        let fields = &table.schema.fields;
        let mut columns = vec![];
        for name in order_by {
            let name = name.trim();
            let i = fields.iter().position(|f| f.name == name).ok_or_else(|| {
                Error::invalid(format!(
                    "sort compaction: can't find column '{name}' in table columns. Possible \
                     columns are [{}]",
                    fields
                        .iter()
                        .map(|f| f.name.as_str())
                        .collect::<Vec<_>>()
                        .join(",")
                ))
            })?;
            let t = fields[i].data_type.clone();
            curve::check_sortable(name, &t)?;
            columns.push((name.to_string(), i, t));
        }
        if strategy == OrderStrategy::Hilbert && columns.len() < 2 {
            return Err(Error::invalid(
                "sort compaction: hilbert sort needs at least two columns",
            ));
        }
        let var_width = match table.options.raw.get("zorder.var-length-contribution") {
            None => curve::Z_PRIMITIVE_BYTES,
            Some(v) => v
                .trim()
                .parse::<usize>()
                .ok()
                .filter(|w| *w > 0)
                .ok_or_else(|| {
                    Error::invalid(format!(
                        "option 'zorder.var-length-contribution' = '{v}': expected a positive \
                     number of bytes"
                    ))
                })?,
        };
        if let Some(v) = table
            .options
            .raw
            .get("sort-compaction.local-sample.magnification")
        {
            // Java refuses values below 20; we sort each partition whole, no sampling
            match v.trim().parse::<i64>() {
                Ok(m) if m >= 20 => {}
                _ => {
                    return Err(Error::invalid(format!(
                        "the config 'sort-compaction.local-sample.magnification={v}' should \
                         not be set too small,greater than or equal to 20 is needed."
                    )))
                }
            }
        }
        Ok(SortSpec {
            strategy,
            columns,
            var_width,
        })
    }

    /// The order columns' names.
    pub fn column_names(&self) -> Vec<String> {
        self.columns.iter().map(|c| c.0.clone()).collect()
    }

    fn order_arrays<'a>(
        &'a self,
        batch: &'a RecordBatch,
    ) -> Vec<(&'a str, &'a DataType, &'a ArrayRef)> {
        self.columns
            .iter()
            .map(|(n, i, t)| (n.as_str(), t, batch.column(*i)))
            .collect()
    }

    /// Java's index bytes of each row of `batch` (a batch of the table's rows): the z-order
    /// or hilbert index; for `order`, arrow's row encoding of the order columns (nulls first),
    /// which compares as Java's key comparator.
    pub fn index_bytes(&self, batch: &RecordBatch) -> Result<Vec<Vec<u8>>> {
        let cols = self.order_arrays(batch);
        match self.strategy {
            OrderStrategy::ZOrder => {
                let (w, flat) = curve::z_indexes(&cols, self.var_width)?;
                Ok(flat.chunks_exact(w).map(<[u8]>::to_vec).collect())
            }
            OrderStrategy::Hilbert => curve::hilbert_indexes(&cols),
            OrderStrategy::Order => {
                let rows = self.order_rows(batch)?;
                Ok(rows.iter().map(|r| r.as_ref().to_vec()).collect())
            }
        }
    }

    fn order_rows(&self, batch: &RecordBatch) -> Result<arrow_row::Rows> {
        let opts = SortOptions {
            descending: false,
            nulls_first: true,
        };
        let fields = self
            .columns
            .iter()
            .map(|(_, i, _)| {
                SortField::new_with_options(batch.column(*i).data_type().clone(), opts)
            })
            .collect();
        let conv = RowConverter::new(fields)
            .map_err(|e| Error::invalid(format!("sort compaction: {e}")))?;
        let arrays: Vec<ArrayRef> = self
            .columns
            .iter()
            .map(|(_, i, _)| batch.column(*i).clone())
            .collect();
        conv.convert_columns(&arrays)
            .map_err(|e| Error::invalid(format!("sort compaction: {e}")))
    }

    /// The row order of `batch` by this sort (stable: equal keys keep their order).
    pub fn permutation(&self, batch: &RecordBatch) -> Result<Vec<u32>> {
        let n = batch.num_rows();
        if n > u32::MAX as usize {
            return Err(Error::unsupported(format!(
                "sort compaction of {n} rows in one partition (at most {} at once)",
                u32::MAX
            )));
        }
        let mut perm: Vec<u32> = (0..n as u32).collect();
        match self.strategy {
            OrderStrategy::Order => {
                let rows = self.order_rows(batch)?;
                perm.par_sort_by(|a, b| rows.row(*a as usize).cmp(&rows.row(*b as usize)));
            }
            OrderStrategy::ZOrder | OrderStrategy::Hilbert => {
                let cols = self.order_arrays(batch);
                let (w, flat) = if self.strategy == OrderStrategy::ZOrder {
                    curve::z_indexes(&cols, self.var_width)?
                } else {
                    curve::hilbert_sort_keys(&cols)?
                };
                let key = |i: u32| &flat[i as usize * w..(i as usize + 1) * w];
                perm.par_sort_by(|a, b| key(*a).cmp(key(*b)));
            }
        }
        Ok(perm)
    }

    /// The sort key of each row of `batch` (a batch of the table's rows) as one non-null binary
    /// column whose bytes sort as [`Self::permutation`] does: the z-order index, the hilbert
    /// sort key, or for `order` arrow's row encoding of the order columns (nulls first).
    pub(crate) fn key_column(&self, batch: &RecordBatch) -> Result<ArrayRef> {
        let cols = self.order_arrays(batch);
        let (w, flat) = match self.strategy {
            OrderStrategy::Order => {
                let rows = self.order_rows(batch)?;
                let arr = arrow_array::BinaryArray::from_iter_values(rows.iter());
                return Ok(std::sync::Arc::new(arr));
            }
            OrderStrategy::ZOrder => curve::z_indexes(&cols, self.var_width)?,
            OrderStrategy::Hilbert => curve::hilbert_sort_keys(&cols)?,
        };
        let width = i32::try_from(w)
            .map_err(|_| Error::invalid(format!("curve key of {w} bytes is too wide")))?;
        let arr = arrow_array::FixedSizeBinaryArray::try_new(width, flat.into(), None)?;
        Ok(std::sync::Arc::new(arr))
    }

    /// `batch` sorted by this sort.
    pub fn sort_batch(&self, batch: &RecordBatch) -> Result<RecordBatch> {
        let perm = self.permutation(batch)?;
        take_rows(batch, &perm)
    }
}

fn take_rows(batch: &RecordBatch, rows: &[u32]) -> Result<RecordBatch> {
    let idx = UInt32Array::from(rows.to_vec());
    arrow_select::take::take_record_batch(batch, &idx)
        .map_err(|e| Error::invalid(format!("sort compaction: {e}")))
}

/// Refuse what sort compaction cannot do on `table` (see the module doc).
pub fn check_sort_compactable(table: &FileStoreTable) -> Result<()> {
    if table
        .options
        .raw
        .get("data-evolution.enabled")
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
    {
        return Err(Error::unsupported("Data Evolution table cannot be sorted!"));
    }
    let bucket = table.options.bucket;
    if table.is_primary_key() {
        if bucket == -1 && crate::write::cross_partition::is_cross_partition(table) {
            return Err(Error::invalid(
                "Sort Compact only supports bucket=-1 yet. (this is a cross-partition upsert \
                 table: its primary key lacks a partition key, a bucket mode sort compaction \
                 does not rewrite)",
            ));
        }
        if bucket != -1 {
            return Err(Error::invalid(format!(
                "Sort Compact only supports bucket=-1 yet. (this primary-key table has bucket = \
                 {bucket})"
            )));
        }
        if table.options.deletion_vectors()? {
            return Err(Error::unsupported(
                "sort compaction of a primary-key table with deletion-vectors.enabled = true: \
                 not implemented yet",
            ));
        }
        return Ok(());
    }
    if bucket != -1 {
        return Err(Error::invalid(format!(
            "Sort Compact only supports bucket=-1 yet. (this append table has bucket = {bucket})"
        )));
    }
    if table.options.deletion_vectors()? {
        return Err(Error::unsupported(
            "sort compaction of an append table with deletion-vectors.enabled = true: not \
             implemented yet",
        ));
    }
    check_compactable(table)
}

/// Sort the rows of one partition's files (`split`, a bucket-unaware bucket) and write them
/// as new files in its bucket directory. Returns the message (the files read as
/// `compact_before`, the new ones as `compact_after`), None if the split has no files. On
/// error the files written are removed.
pub fn sort_split(
    table: &FileStoreTable,
    reader: &TableRead,
    spec: &SortSpec,
    split: &Split,
) -> Result<Option<CommitMessage>> {
    if split.files.is_empty() {
        return Ok(None);
    }
    let mut batches = vec![];
    for b in reader.split_stream(split)? {
        let b = b?;
        if b.num_rows() > 0 {
            batches.push(b);
        }
    }
    let after = if batches.is_empty() {
        vec![]
    } else {
        let schema = batches[0].schema();
        let all = arrow_select::concat::concat_batches(&schema, &batches)
            .map_err(|e| Error::invalid(format!("sort compaction: {e}")))?;
        drop(batches);
        let perm = spec.permutation(&all)?;
        write_sorted(
            table,
            &split.bucket_path,
            &all,
            &perm,
            first_seq(&split.files),
        )?
    };
    log::info!(
        target: "paimon_rs.compaction",
        "{} ({}): sort compaction ({} by {:?}) rewrote {} files ({} rows) into {} files",
        table.name,
        split.bucket_path,
        spec.strategy.name(),
        spec.column_names(),
        split.files.len(),
        split.files.iter().map(|f| f.row_count).sum::<i64>(),
        after.len(),
    );
    Ok(Some(CommitMessage {
        partition: split.partition.clone(),
        bucket: split.bucket,
        total_buckets: split.total_buckets,
        data_increment: DataIncrement::default(),
        compact_increment: CompactIncrement::of(split.files.clone(), after),
        restored_snapshot: Some(Some(split.snapshot_id)),
    }))
}

fn first_seq(files: &[DataFileMeta]) -> i64 {
    files
        .iter()
        .map(|f| f.min_sequence_number)
        .min()
        .unwrap_or(0)
}

/// Write the rows of `batch` in the order `perm` into new files of `bucket_path`, rolled at
/// `target-file-size` (append tables: 256 MB by default).
pub fn write_sorted(
    table: &FileStoreTable,
    bucket_path: &str,
    batch: &RecordBatch,
    perm: &[u32],
    first_seq: i64,
) -> Result<Vec<DataFileMeta>> {
    let mut ctx = file_context(table, 0, FileSource::Compact)?;
    ctx.dir = crate::io::resolve(&table.path, bucket_path);
    ctx.target_size = table.options.target_file_size.unwrap_or(256 << 20);
    // an error drops the writer, which removes the files it wrote
    let mut writer = RollingFileWriter::new(ctx, first_seq);
    for chunk in perm.chunks(WRITE_BATCH_ROWS) {
        writer.write(&take_rows(batch, chunk)?)?;
    }
    writer.close()
}

fn discard(table: &FileStoreTable, messages: &[(CommitMessage, String)]) {
    for (m, bucket_path) in messages {
        for f in &m.compact_increment.compact_after {
            let _ = crate::fileindex::remove_data_file(
                &crate::io::resolve(&table.path, bucket_path),
                f,
            );
        }
    }
}

/// Sort-compact `table` (see the module doc): the selected partitions (all if None) of the
/// latest snapshot sorted by `order_strategy` over `order_by`, committed as one OVERWRITE
/// snapshot whose id is returned (None: the table or the selected partitions hold no file).
/// On error the files written are removed and nothing is committed.
pub fn sort_compact_table(
    table: &FileStoreTable,
    order_strategy: &str,
    order_by: &[String],
    partitions: Option<&[PartitionSpec]>,
) -> Result<Option<i64>> {
    let run = || -> Result<Option<i64>> {
        check_sort_compactable(table)?;
        let spec = SortSpec::new(table, order_strategy, order_by)?;
        let Some(snapshot) = table.snapshot_manager().latest()? else {
            return Ok(None);
        };
        if table.is_primary_key() {
            return sort_compact_dynamic(table, &spec, snapshot.id, partitions);
        }
        let reader = TableRead::new(table.clone(), None, None)?;
        let mut splits = bucket_splits(table, &snapshot, partitions)?;
        splits.sort_by(|a, b| a.bucket_path.cmp(&b.bucket_path));
        let mut done: Vec<(CommitMessage, String)> = vec![];
        for mut s in splits {
            s.raw_convertible = true;
            match sort_split(table, &reader, &spec, &s) {
                Ok(Some(m)) => done.push((m, s.bucket_path.clone())),
                Ok(None) => {}
                Err(e) => {
                    discard(table, &done);
                    return Err(e);
                }
            }
        }
        if done.is_empty() {
            return Ok(None);
        }
        let messages: Vec<CommitMessage> = done.iter().map(|(m, _)| m.clone()).collect();
        let commit = FileStoreCommit::new(
            table.clone(),
            format!("sort-compact-{}", uuid::Uuid::new_v4()),
        );
        match commit.commit_rewrite(&messages, BATCH_COMMIT_IDENTIFIER) {
            Ok(id) => Ok(id),
            Err(e) => {
                discard(table, &done);
                Err(e)
            }
        }
    };
    run().map_err(|e| e.with_table(&table.name))
}

/// A sort compaction of a dynamic-bucket table commits an OVERWRITE of the partitions it
/// writes, which replaces the whole table when `dynamic-partition-overwrite` is false: a
/// selection of some partitions is then refused.
fn check_dynamic_selection(
    table: &FileStoreTable,
    partitions: Option<&[PartitionSpec]>,
) -> Result<()> {
    let partitioned = !table.partition_keys().is_empty();
    if partitioned && partitions.is_some() && !table.options.dynamic_partition_overwrite {
        return Err(Error::unsupported(
            "sort compaction of some partitions of a dynamic-bucket table with \
             dynamic-partition-overwrite = false (its overwrite replaces the whole table); sort \
             every partition, or set dynamic-partition-overwrite = true",
        ));
    }
    Ok(())
}

/// Sort compaction of a dynamic-bucket primary-key table (see the module doc): each selected
/// partition of snapshot `snapshot_id` read merged and whole, sorted, and written through one
/// overwrite writer restored from that snapshot; committed as one OVERWRITE of the partitions
/// written. None if the selection holds no row.
fn sort_compact_dynamic(
    table: &FileStoreTable,
    spec: &SortSpec,
    snapshot_id: i64,
    partitions: Option<&[PartitionSpec]>,
) -> Result<Option<i64>> {
    check_dynamic_selection(table, partitions)?;
    let snapshot = table.snapshot_manager().snapshot(snapshot_id)?;
    let mut by_partition: std::collections::BTreeMap<Vec<u8>, Vec<Split>> = Default::default();
    for s in bucket_splits(table, &snapshot, partitions)? {
        by_partition.entry(s.partition.clone()).or_default().push(s);
    }
    let reader = TableRead::new(table.clone(), None, None)?;
    let mut writer = crate::write::TableWrite::new(table.clone())?;
    writer.restore_from(Some(snapshot_id))?;
    writer.ignore_previous_files(true)?;
    let mut rows = 0usize;
    for splits in by_partition.values() {
        let mut batches = vec![];
        for split in splits {
            for b in reader.split_stream(split)? {
                let b = b?;
                if b.num_rows() > 0 {
                    batches.push(b);
                }
            }
        }
        let Some(first) = batches.first() else {
            continue;
        };
        let all = arrow_select::concat::concat_batches(&first.schema(), &batches)
            .map_err(|e| Error::invalid(format!("sort compaction: {e}")))?;
        drop(batches);
        let perm = spec.permutation(&all)?;
        for chunk in perm.chunks(WRITE_BATCH_ROWS) {
            writer.write(&take_rows(&all, chunk)?)?;
        }
        rows += all.num_rows();
    }
    if rows == 0 {
        writer.close();
        return Ok(None);
    }
    let messages = writer.prepare_commit()?;
    writer.close();
    let commit = FileStoreCommit::new(
        table.clone(),
        format!("sort-compact-{}", uuid::Uuid::new_v4()),
    );
    let id = commit
        .commit_as(
            &messages,
            BATCH_COMMIT_IDENTIFIER,
            Some(crate::commit::Overwrite::Dynamic),
        )
        .inspect_err(|_| {
            // the written files belong to no snapshot: remove them
            let _ = commit.abort(&messages);
        })?;
    log::info!(
        target: "paimon_rs.compaction",
        "{}: sort compaction ({} by {:?}) rewrote {} partition(s) of a dynamic-bucket table \
         ({rows} rows) as snapshot {id:?}",
        table.name,
        spec.strategy.name(),
        spec.column_names(),
        by_partition.len(),
    );
    Ok(id)
}

/// The driver's half of a distributed sort compaction (`paimon_rs.spark.sort_compact`): the
/// checks of [`sort_compact_table`], then the latest snapshot's id and one split per selected
/// partition (its files: what the rewrite removes; a dynamic-bucket primary-key table: one
/// per selected bucket, whose partitions the Spark job overwrites as the local one does). None
/// if the table has no snapshot.
pub fn sort_compaction_plan(
    table: &FileStoreTable,
    order_strategy: &str,
    order_by: &[String],
    partitions: Option<&[PartitionSpec]>,
) -> Result<Option<(i64, Vec<Split>)>> {
    let run = || -> Result<Option<(i64, Vec<Split>)>> {
        check_sort_compactable(table)?;
        if table.is_primary_key() {
            check_dynamic_selection(table, partitions)?;
        }
        SortSpec::new(table, order_strategy, order_by)?;
        let Some(snapshot) = table.snapshot_manager().latest()? else {
            return Ok(None);
        };
        let mut splits = bucket_splits(table, &snapshot, partitions)?;
        splits.retain(|s| !s.files.is_empty());
        splits.sort_by(|a, b| a.bucket_path.cmp(&b.bucket_path));
        Ok(Some((snapshot.id, splits)))
    };
    run().map_err(|e| e.with_table(&table.name))
}

/// The rewrite messages of a distributed sort compaction: per planned split, its files as
/// `compact_before` and the files the tasks wrote into that partition (`written`: append
/// messages of new files) as `compact_after`. New files outside the planned partitions, or
/// messages carrying anything but new data files, are refused (nothing may be lost or added
/// outside the rewrite).
pub fn rewrite_messages(
    table: &FileStoreTable,
    planned: &[Split],
    written: &[CommitMessage],
) -> Result<Vec<CommitMessage>> {
    let mut out: Vec<CommitMessage> = planned
        .iter()
        .map(|s| CommitMessage {
            partition: s.partition.clone(),
            bucket: s.bucket,
            total_buckets: s.total_buckets,
            data_increment: DataIncrement::default(),
            compact_increment: CompactIncrement::of(s.files.clone(), vec![]),
            restored_snapshot: Some(Some(s.snapshot_id)),
        })
        .collect();
    for m in written {
        let d = &m.data_increment;
        if !m.compact_increment.is_empty()
            || !d.deleted_files.is_empty()
            || !d.changelog_files.is_empty()
            || !d.new_index_files.is_empty()
            || !d.deleted_index_files.is_empty()
        {
            return Err(Error::invalid(format!(
                "sort compaction of {}: a task's message carries more than new data files",
                table.name
            )));
        }
        if d.new_files.is_empty() {
            continue;
        }
        let target = out
            .iter_mut()
            .find(|o| o.partition == m.partition && o.bucket == m.bucket)
            .ok_or_else(|| {
                Error::invalid(format!(
                    "sort compaction of {}: a task wrote {} file(s) into bucket {} of a                      partition that was not planned",
                    table.name,
                    d.new_files.len(),
                    m.bucket
                ))
            })?;
        target
            .compact_increment
            .compact_after
            .extend(d.new_files.iter().cloned());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use arrow_array::{Int32Array, Int64Array};
    use arrow_schema::{DataType as AT, Field, Schema};

    use super::*;
    use crate::commit::test_support::live_rows;
    use crate::table::catalog::FileSystemCatalog;
    use crate::table::new_schema::NewTableSchema;
    use crate::write::TableWrite;

    /// A bucket-unaware append table partitioned by `p INT`, with `x, y BIGINT`.
    fn table(dir: &std::path::Path) -> FileStoreTable {
        let cat = FileSystemCatalog::new(dir).unwrap();
        cat.create_database("db", true).unwrap();
        let schema = Schema::new(vec![
            Field::new("p", AT::Int32, false),
            Field::new("x", AT::Int64, true),
            Field::new("y", AT::Int64, true),
        ]);
        let opts = BTreeMap::from([("bucket".to_string(), "-1".to_string())]);
        let s = NewTableSchema::from_arrow(&schema, vec!["p".into()], vec![], opts, None).unwrap();
        cat.create_table("db.t", s, false).unwrap();
        cat.get_table("db.t").unwrap()
    }

    fn rows(p: i32, xs: std::ops::Range<i64>) -> RecordBatch {
        let n = (xs.end - xs.start) as usize;
        let ys: Vec<i64> = xs.clone().map(|x| (x * 7919) % 101).collect();
        RecordBatch::try_new(
            Arc::new(Schema::new(vec![
                Field::new("p", AT::Int32, false),
                Field::new("x", AT::Int64, true),
                Field::new("y", AT::Int64, true),
            ])),
            vec![
                Arc::new(Int32Array::from(vec![p; n])),
                Arc::new(Int64Array::from_iter_values(xs.rev())),
                Arc::new(Int64Array::from(ys)),
            ],
        )
        .unwrap()
    }

    fn append(t: &FileStoreTable, b: RecordBatch) {
        let mut w = TableWrite::new(t.clone()).unwrap();
        w.write(&b).unwrap();
        let msgs = w.prepare_commit().unwrap();
        FileStoreCommit::new(t.clone(), "w".into())
            .commit(&msgs, BATCH_COMMIT_IDENTIFIER, None)
            .unwrap();
    }

    /// The messages of a sort compaction prepared on the latest snapshot, not committed.
    fn prepared(t: &FileStoreTable) -> Vec<CommitMessage> {
        let spec = SortSpec::new(t, "zorder", &["x".into(), "y".into()]).unwrap();
        let reader = TableRead::new(t.clone(), None, None).unwrap();
        let s = t.snapshot_manager().latest().unwrap().unwrap();
        bucket_splits(t, &s, None)
            .unwrap()
            .into_iter()
            .map(|mut sp| {
                sp.raw_convertible = true;
                sort_split(t, &reader, &spec, &sp).unwrap().unwrap()
            })
            .collect()
    }

    /// An append committed while the sort ran stays: the OVERWRITE snapshot removes only the
    /// files the sort read.
    #[test]
    fn a_concurrent_append_survives() {
        let dir = tempfile::tempdir().unwrap();
        let t = table(dir.path());
        append(&t, rows(1, 0..100));
        append(&t, rows(1, 100..200));
        let msgs = prepared(&t);
        append(&t, rows(1, 200..250));
        let c = FileStoreCommit::new(t.clone(), "sort".into());
        let id = c.commit_rewrite(&msgs, 1).unwrap().unwrap();
        let s = t.snapshot_manager().snapshot(id).unwrap();
        assert_eq!(s.commit_kind, crate::spec::snapshot::CommitKind::Overwrite);
        assert_eq!(live_rows(&t), 250);
        // exactly once per identifier
        assert_eq!(c.commit_rewrite(&msgs, 1).unwrap(), Some(id));
        assert_eq!(live_rows(&t), 250);
    }

    /// A commit that removed a file the sort read (a compaction) makes the sort's commit fail
    /// with CommitConflict; the table keeps the compaction's result.
    #[test]
    fn a_concurrent_compaction_conflicts() {
        let dir = tempfile::tempdir().unwrap();
        let t = table(dir.path());
        for i in 0..3 {
            append(&t, rows(1, i * 100..i * 100 + 100));
        }
        let msgs = prepared(&t);
        assert!(crate::compact::compact_table(&t, true, None)
            .unwrap()
            .is_some());
        let err = FileStoreCommit::new(t.clone(), "sort".into())
            .commit_rewrite(&msgs, BATCH_COMMIT_IDENTIFIER)
            .unwrap_err();
        assert!(matches!(err, Error::CommitConflict { .. }), "{err}");
        assert_eq!(live_rows(&t), 300);
    }

    /// The whole table: rows kept, one OVERWRITE snapshot, the output in z-order.
    #[test]
    fn sort_compact_table_sorts_each_partition() {
        let dir = tempfile::tempdir().unwrap();
        let t = table(dir.path());
        append(&t, rows(1, 0..500));
        append(&t, rows(2, 0..300));
        let id = sort_compact_table(&t, "zorder", &["x".into(), "y".into()], None)
            .unwrap()
            .unwrap();
        assert_eq!(live_rows(&t), 800);
        let spec = SortSpec::new(&t, "zorder", &["x".into(), "y".into()]).unwrap();
        let reader = TableRead::new(t.clone(), None, None).unwrap();
        let s = t.snapshot_manager().snapshot(id).unwrap();
        for sp in bucket_splits(&t, &s, None).unwrap() {
            let batches: Vec<RecordBatch> = reader
                .split_stream(&sp)
                .unwrap()
                .collect::<Result<_>>()
                .unwrap();
            let all = arrow_select::concat::concat_batches(&batches[0].schema(), &batches).unwrap();
            let keys = spec.index_bytes(&all).unwrap();
            assert!(keys.windows(2).all(|w| w[0] <= w[1]));
        }
        // an unknown strategy is named
        let err = SortSpec::new(&t, "spiral", &["x".into()]).unwrap_err();
        assert!(err.to_string().contains("order_strategy"), "{err}");
    }

    /// The distributed rewrite: the tasks' new files become the compact_after of their
    /// partition's planned split; new files elsewhere, or messages with more than new files,
    /// are refused.
    #[test]
    fn rewrite_messages_join_the_plan_and_refuse_strays() {
        let dir = tempfile::tempdir().unwrap();
        let t = table(dir.path());
        append(&t, rows(1, 0..100));
        append(&t, rows(2, 0..100));
        let (sid, plan) = sort_compaction_plan(&t, "hilbert", &["x".into(), "y".into()], None)
            .unwrap()
            .unwrap();
        assert_eq!(plan.len(), 2);
        let p1: Vec<Split> = plan
            .iter()
            .filter(|s| s.partition == plan[0].partition)
            .cloned()
            .collect();
        let mut w = TableWrite::new(t.clone()).unwrap();
        w.write(&rows(1, 0..100)).unwrap();
        let written = w.prepare_commit().unwrap();
        let msgs = rewrite_messages(&t, &p1, &written).unwrap();
        assert_eq!(msgs.len(), 1);
        assert_eq!(msgs[0].compact_increment.compact_before, p1[0].files);
        assert_eq!(
            msgs[0].compact_increment.compact_after,
            written[0].data_increment.new_files
        );
        let id = FileStoreCommit::new(t.clone(), "s".into())
            .commit_rewrite(&msgs, BATCH_COMMIT_IDENTIFIER)
            .unwrap()
            .unwrap();
        assert!(id > sid);
        assert_eq!(live_rows(&t), 200);
        // a file of partition 2 is not in a plan of partition 1 only
        let mut w = TableWrite::new(t.clone()).unwrap();
        w.write(&rows(2, 0..10)).unwrap();
        let stray = w.prepare_commit().unwrap();
        let err = rewrite_messages(&t, &p1, &stray).unwrap_err();
        assert!(err.to_string().contains("not planned"), "{err}");
        let mut odd = stray.clone();
        odd[0].compact_increment.compact_before = odd[0].data_increment.new_files.clone();
        assert!(rewrite_messages(&t, &plan, &odd).is_err());
    }
}
