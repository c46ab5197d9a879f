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
//! sorted and written again through the table's overwrite writer into fresh buckets in sort
//! order, cut at curve cells within `dynamic-bucket.target-row-num` x [1/2, 1]
//! ([`curve::cell_pieces`]; so each bucket holds whole cells of one stretch of the curve and
//! never more than the target), which writes their hash index anew; one OVERWRITE snapshot replaces the partitions' files and index files
//! (commit/hash_index.rs). The overwrite must replace exactly the data and index files read
//! ([`ExpectedReplace`], commit/rewrite_check.rs), else it conflicts: Java's overwrite
//! replaces whatever the partitions hold at commit time, so an upsert committed meanwhile is
//! lost there; here it makes the sort compaction fail with `CommitConflict` (nothing lost).
//!
//! Deletion-vector tables (Java reads them through the table's read, which applies the
//! vectors, and overwrites): the rows a vector marks are not written again. An append table's
//! split carries its files' vectors (the reader drops the marked rows) and the rewrite's
//! message replaces the partition's deletion-vector index files (all its vectors are of files
//! it rewrites); a delete committed meanwhile that marked rows of a file it rewrites conflicts
//! (commit/index.rs: the index file it replaces is gone, or a file it removes got a vector it
//! does not replace). A dynamic-bucket primary-key table is read merged with its vectors
//! applied (level 0 too: rows not yet compacted are kept, where Java's level-0-skipping read
//! would drop them), and its overwrite (checked as above) drops the partitions' index files
//! (hash index and vectors), as Java's.
//!
//! Refused as Java refuses them: tables whose bucket mode is neither bucket-unaware nor
//! dynamic (`Sort Compact only supports bucket=-1 yet.`: fixed buckets, cross-partition
//! upsert tables, whose mode is not HASH_DYNAMIC in Java), data-evolution tables. Refused
//! because we do not implement them yet: row tracking; a selection of partitions of a
//! dynamic-bucket table with `dynamic-partition-overwrite = false` (the overwrite would replace
//! the whole table). The distributed (Spark) sort of a dynamic-bucket table reads the splits
//! [`sort_compaction_plan`] plans (all levels, vectors attached) and assigns buckets in its
//! tasks (python/paimon_rs/spark/sort_compaction.py); the driver commits through
//! [`commit_sort_compaction`], with the same exact-replace check.

use arrow_array::{Array, ArrayRef, BinaryArray, Int32Array, RecordBatch, UInt32Array};
use arrow_row::{RowConverter, SortField};
use arrow_schema::SortOptions;

use super::append::{attach_vectors, check_compactable};
use super::work::bucket_splits;
use crate::commit::{
    CommitMessage, CompactIncrement, DataIncrement, ExpectedReplace, FileStoreCommit,
};
use crate::error::{Error, Result};
use crate::kv::{file_context, FileSource};
use crate::read::split::Split;
use crate::read::table_read::TableRead;
use crate::sort::curve::{self, OrderStrategy};
use crate::spec::manifest::{DataFileMeta, IndexFileMeta};
use crate::spec::partition::PartitionSpec;
use crate::spec::snapshot::BATCH_COMMIT_IDENTIFIER;
use crate::spec::types::DataType;
use crate::table::FileStoreTable;
use crate::write::append_dv::AppendDvMaintainer;
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
        Ok(self.sort_with(batch, false)?.0)
    }

    /// [`Self::permutation`] and the boundary depth at each of its positions
    /// ([`curve::boundary_depths`]: the leading key bits the row shares with the one before),
    /// which [`write_sorted`] cuts files by.
    pub fn sorted_cells(&self, batch: &RecordBatch) -> Result<(Vec<u32>, Vec<u16>)> {
        self.sort_with(batch, true)
    }

    fn sort_with(&self, batch: &RecordBatch, depths: bool) -> Result<(Vec<u32>, Vec<u16>)> {
        let n = batch.num_rows();
        if n > u32::MAX as usize {
            return Err(Error::unsupported(format!(
                "sort compaction of {n} rows in one partition (at most {} at once)",
                u32::MAX
            )));
        }
        Ok(match self.strategy {
            OrderStrategy::Order => {
                let rows = self.order_rows(batch)?;
                let key = |i| rows.row(i).data();
                if depths {
                    curve::sort_cells(n, key, false)
                } else {
                    (curve::sort_permutation(n, key, false), vec![])
                }
            }
            OrderStrategy::ZOrder | OrderStrategy::Hilbert => {
                let cols = self.order_arrays(batch);
                let (w, flat) = if self.strategy == OrderStrategy::ZOrder {
                    curve::z_indexes(&cols, self.var_width)?
                } else {
                    curve::hilbert_sort_keys(&cols)?
                };
                let key = |i: usize| &flat[i * w..(i + 1) * w];
                if depths {
                    curve::sort_cells(n, key, w <= 16)
                } else {
                    (curve::sort_permutation(n, key, w <= 16), vec![])
                }
            }
        })
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
        return Ok(());
    }
    if bucket != -1 {
        return Err(Error::invalid(format!(
            "Sort Compact only supports bucket=-1 yet. (this append table has bucket = {bucket})"
        )));
    }
    check_compactable(table)
}

/// Sort the rows of one partition's files (`split`, a bucket-unaware bucket; a deletion-vector
/// table's with its files' vectors attached, [`attach_vectors`]: the rows they mark are left
/// out) and write them as new files in its bucket directory. Returns the message (the files
/// read as `compact_before`, the new ones as `compact_after`, the partition's deletion-vector
/// index files as `deleted_index_files`), None if the split has no files. On error the files
/// written are removed.
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
        let (perm, depth) = spec.sorted_cells(&all)?;
        write_sorted(
            table,
            &split.bucket_path,
            &all,
            (&perm, &depth),
            first_seq(&split.files),
        )?
    };
    let mut compact_increment = CompactIncrement::of(split.files.clone(), after);
    if let Err(e) = with_dropped_vectors(table, split, &mut compact_increment) {
        discard_files(table, &split.bucket_path, &compact_increment.compact_after);
        return Err(e);
    }
    log::info!(
        target: "paimon_rs.compaction",
        "{} ({}): sort compaction ({} by {:?}) rewrote {} files ({} rows) into {} files",
        table.name,
        split.bucket_path,
        spec.strategy.name(),
        spec.column_names(),
        split.files.len(),
        split.files.iter().map(|f| f.row_count).sum::<i64>(),
        compact_increment.compact_after.len(),
    );
    Ok(Some(CommitMessage {
        partition: split.partition.clone(),
        bucket: split.bucket,
        total_buckets: split.total_buckets,
        data_increment: DataIncrement::default(),
        compact_increment,
        restored_snapshot: Some(Some(split.snapshot_id)),
    }))
}

/// An append table with deletion vectors: the index changes of rewriting every file of
/// `split` (a whole partition of its snapshot): the index files holding their vectors are
/// replaced (by none when, as here, every vector of the partition is of a rewritten file).
fn dropped_vectors(
    table: &FileStoreTable,
    split: &Split,
) -> Result<Option<(Vec<IndexFileMeta>, Vec<IndexFileMeta>)>> {
    if table.is_primary_key() || !table.options.deletion_vectors()? {
        return Ok(None);
    }
    AppendDvMaintainer::dropping(
        table,
        split.snapshot_id,
        (&split.partition, split.bucket),
        &split.files,
        &split.files,
    )
    .map(Some)
}

/// [`dropped_vectors`] put into `increment`.
fn with_dropped_vectors(
    table: &FileStoreTable,
    split: &Split,
    increment: &mut CompactIncrement,
) -> Result<()> {
    if let Some((new, replaced)) = dropped_vectors(table, split)? {
        increment.new_index_files = new;
        increment.deleted_index_files = replaced;
    }
    Ok(())
}

fn first_seq(files: &[DataFileMeta]) -> i64 {
    files
        .iter()
        .map(|f| f.min_sequence_number)
        .min()
        .unwrap_or(0)
}

/// Write the rows of `batch` in the order `perm` into new files of `bucket_path`, cut at curve
/// cells (`depth`, [`SortSpec::sorted_cells`]) near `target-file-size` (append tables: 256 MB
/// by default): a file is cut once its size is within [`CUT_WINDOW`] of the target, at the
/// shallowest boundary in the window (the highest key bit that changes: [`curve::cell_cut`]),
/// so its rows fill whole aligned cells of the curve and its min/max statistics stay tight; a
/// window whose keys are all equal is cut at the target size. A partition of at least two
/// target files' worth of rows (by their in-memory size) is cut into as many contiguous ranges
/// of `perm` as the pool has threads (at most one per target file), each cut at the shallowest
/// boundary within an eighth of a range of its even share and written by a rolling writer of
/// its own: the files stay in the sort's order one after another, as the ranges of Java's
/// range-shuffled sort tasks do, and each range may end in one smaller file.
pub fn write_sorted(
    table: &FileStoreTable,
    bucket_path: &str,
    batch: &RecordBatch,
    (perm, depth): (&[u32], &[u16]),
    first_seq: i64,
) -> Result<Vec<DataFileMeta>> {
    use rayon::prelude::*;

    if depth.len() != perm.len() {
        return Err(Error::invalid(format!(
            "sort compaction of {} ({bucket_path}): {} boundary depths for {} rows",
            table.name,
            depth.len(),
            perm.len()
        )));
    }
    let target = table.options.target_file_size.unwrap_or(256 << 20).max(1);
    let n = perm.len();
    let memory = (batch.get_array_memory_size() as u64).max(1);
    let ranges = ((memory / target) as usize).clamp(1, rayon::current_num_threads());
    let per_range = n.div_ceil(ranges).max(1);
    // a range ends at the shallowest boundary within an eighth of a range of its even share
    let half = (per_range / 8).max(1);
    let mut bounds = vec![0];
    for r in 1..ranges {
        let even = r * per_range;
        let prev = bounds[bounds.len() - 1];
        if even >= n || even <= prev {
            break;
        }
        let window = (even.saturating_sub(half)).max(prev + 1)..=(even + half).min(n - 1);
        bounds.push(curve::cell_cut(depth, window, even));
    }
    bounds.push(n);
    let written: Vec<Result<Vec<DataFileMeta>>> = bounds
        .par_windows(2)
        .map(|w| {
            let mut ctx = file_context(table, 0, FileSource::Compact)?;
            ctx.dir = crate::io::resolve(&table.path, bucket_path);
            let range = w[0]..w[1];
            let seq = first_seq + w[0] as i64;
            write_cells(ctx, batch, &perm[range.clone()], &depth[range], target, seq)
        })
        .collect();
    let mut out = Vec::with_capacity(written.len());
    let mut failed = None;
    for w in written {
        match w {
            Ok(files) => out.push(files),
            Err(e) => failed = failed.or(Some(e)),
        }
    }
    if let Some(e) = failed {
        for files in &out {
            discard_files(table, bucket_path, files);
        }
        return Err(e);
    }
    Ok(out.concat())
}

/// The window a sort-compaction file is cut in: `target-file-size` ± target / this, i.e. from
/// 3/4 to 5/4 of the target.
pub const CUT_WINDOW: u64 = 4;

/// The cuts are planned `target-file-size` / this inside either end of the window, for the
/// error of the size model (a few percent, [`write_cells`]).
const CUT_MARGIN: u64 = 32;

/// Rows written at least per step while a file fills up towards the cut window.
const MIN_STEP_ROWS: usize = 1024;

/// Write the rows of `batch` in the order `perm` (one range of the sort) into files cut at
/// cells ([`write_sorted`]). The writer's size estimate counts the open row group encoded,
/// not compressed (at a few MB per file most of the file, overshooting by a share that depends
/// on the data), so a file is filled to the window's low end by the bytes per row of the
/// range's previous file (the estimate for the first), in steps of rows projected by it; there
/// its row group is written out, which makes its bytes so far exact, and the rows up to the
/// window's high end are projected by the file's own bytes per row and the file cut at their
/// shallowest boundary. A file thus has one more row group than the rolling writer would give
/// it (two instead of one below 16 MB). The rest of the range goes into one file when it fits
/// under the high end.
fn write_cells(
    mut ctx: crate::write::rolling::FileWriterContext,
    batch: &RecordBatch,
    perm: &[u32],
    depth: &[u16],
    target: u64,
    first_seq: i64,
) -> Result<Vec<DataFileMeta>> {
    // the window less a margin for the size model's error at either end
    let margin = target / CUT_MARGIN;
    let low = (target - target / CUT_WINDOW + margin) as f64;
    let high = (target + target / CUT_WINDOW - margin) as f64;
    // no roll of the writer's own: its estimate of an open row group is far above the bytes
    // it compresses to (here each file is cut by the model, which never passes the window)
    ctx.target_size = i64::MAX as u64;
    // an error drops the writer, which removes the files it wrote
    let mut writer = RollingFileWriter::new(ctx, first_seq);
    let write = |writer: &mut RollingFileWriter, rows: &[u32]| -> Result<()> {
        for chunk in rows.chunks(WRITE_BATCH_ROWS) {
            writer.write(&take_rows(batch, chunk)?)?;
        }
        Ok(())
    };
    let n = perm.len();
    // bytes per row of the previous file; (bytes, rows) of the open file at its flush
    let mut per_row: Option<f64> = None;
    let mut flushed: Option<(f64, f64)> = None;
    let mut pos = 0;
    while pos < n {
        let (estimate, rows) = writer.open_file_size().unwrap_or((0, 0));
        let rows = rows as f64;
        let (size, rate) = match (flushed, per_row) {
            (Some((b, r)), _) => (b + (rows - r) * b / r, b / r),
            (None, Some(p)) => (p * rows, p),
            (None, None) => (estimate as f64, estimate as f64 / rows.max(1.0)),
        };
        // rows that take the file from `size` to `bytes`
        let rows_to = |bytes: f64| ((bytes - size).max(0.0) / rate.max(f64::MIN_POSITIVE)) as usize;
        if size < low || rows == 0.0 {
            let step = if rows > 0.0 {
                rows_to(low)
            } else {
                MIN_STEP_ROWS
            };
            let step = step.clamp(MIN_STEP_ROWS, WRITE_BATCH_ROWS).min(n - pos);
            write(&mut writer, &perm[pos..pos + step])?;
            pos += step;
            continue;
        }
        if flushed.is_none() {
            // the row group written out: the bytes so far are the file's, compressed
            writer.flush_row_group()?;
            let (bytes, rows) = writer.open_file_size().unwrap_or((1, 1));
            flushed = Some((bytes.max(1) as f64, rows.max(1) as f64));
            continue;
        }
        let end = pos.saturating_add(rows_to(high));
        if end >= n {
            write(&mut writer, &perm[pos..])?;
            break;
        }
        let cut = curve::cell_cut(depth, pos..=end, pos + rows_to(target as f64));
        write(&mut writer, &perm[pos..cut])?;
        let rows = writer.open_file_size().map_or(0, |(_, r)| r);
        if let Some(bytes) = writer.roll_now()? {
            if rows > 0 && bytes > 0 {
                per_row = Some(bytes as f64 / rows as f64);
            }
        }
        flushed = None;
        pos = cut;
    }
    writer.close()
}

fn discard(table: &FileStoreTable, messages: &[(CommitMessage, String)]) {
    for (m, bucket_path) in messages {
        discard_files(table, bucket_path, &m.compact_increment.compact_after);
    }
}

fn discard_files(table: &FileStoreTable, bucket_path: &str, files: &[DataFileMeta]) {
    for f in files {
        let _ =
            crate::fileindex::remove_data_file(&crate::io::resolve(&table.path, bucket_path), f);
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
            // the reader leaves out the rows the files' deletion vectors mark
            if let Err(e) = attach_vectors(table, &mut s) {
                discard(table, &done);
                return Err(e);
            }
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
    match prepare_dynamic(table, spec, snapshot_id, partitions)? {
        Some(prepared) => commit_dynamic(table, spec, prepared),
        None => Ok(None),
    }
}

/// A dynamic-bucket sort compaction written, not committed.
struct DynamicSort {
    messages: Vec<CommitMessage>,
    /// What the overwrite must replace (the files and index files read).
    expected: ExpectedReplace,
    rows: usize,
    partitions: usize,
}

/// The read, sort and write of [`sort_compact_dynamic`]; None if the selection holds no row.
fn prepare_dynamic(
    table: &FileStoreTable,
    spec: &SortSpec,
    snapshot_id: i64,
    partitions: Option<&[PartitionSpec]>,
) -> Result<Option<DynamicSort>> {
    check_dynamic_selection(table, partitions)?;
    let snapshot = table.snapshot_manager().snapshot(snapshot_id)?;
    let mut by_partition: std::collections::BTreeMap<Vec<u8>, Vec<Split>> = Default::default();
    for mut s in bucket_splits(table, &snapshot, partitions)? {
        // merged with the files' deletion vectors applied (level 0 included)
        attach_vectors(table, &mut s)?;
        by_partition.entry(s.partition.clone()).or_default().push(s);
    }
    let expected = expected_replace(table, &snapshot, &by_partition, partitions)?;
    let dynamic = table.options.dynamic_bucket()?;
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
        if dynamic.max_buckets == -1 {
            // fresh buckets 0, 1, ... in sort order, cut at cells within target-row-num x
            // [1/2, 1] (a bucket holds at most target-row-num keys, as Java's assigner fills it)
            let (perm, depth) = spec.sorted_cells(&all)?;
            let target = usize::try_from(dynamic.target_row_num).unwrap_or(usize::MAX);
            let cuts = curve::cell_pieces(&depth, target - target / 2, target);
            let buckets = piece_buckets(perm.len(), &cuts, 0, 1)?;
            for (rows, b) in perm
                .chunks(WRITE_BATCH_ROWS)
                .zip(buckets.chunks(WRITE_BATCH_ROWS))
            {
                writer.write_assigned(&take_rows(&all, rows)?, &Int32Array::from(b.to_vec()))?;
            }
        } else {
            // a bucket cap: the assigner's (Java's) overflow of keys into existing buckets
            let perm = spec.permutation(&all)?;
            for chunk in perm.chunks(WRITE_BATCH_ROWS) {
                writer.write(&take_rows(&all, chunk)?)?;
            }
        }
        rows += all.num_rows();
    }
    if rows == 0 {
        writer.close();
        return Ok(None);
    }
    let messages = writer.prepare_commit()?;
    writer.close();
    Ok(Some(DynamicSort {
        messages,
        expected,
        rows,
        partitions: by_partition.len(),
    }))
}

/// Buckets of the rows of a dynamic-bucket table's sorted run of `n` rows cut into pieces at
/// `cuts` ([`curve::cell_pieces`]): piece `i`'s rows go to bucket `first + i * stride` (the
/// local sort: 0, 1, 2, ...; a Spark task `t` of `stride`: t, t + stride, ...). Refused past
/// the bucket ids a dynamic-bucket table can hold (Java's short).
fn piece_buckets(n: usize, cuts: &[usize], first: i32, stride: i32) -> Result<Vec<i32>> {
    let last = first as i64 + cuts.len() as i64 * stride as i64;
    if first < 0 || stride < 1 || last >= i16::MAX as i64 {
        return Err(Error::unsupported(format!(
            "sort compaction of a dynamic-bucket table: {} bucket(s) from bucket {first} in steps \
             of {stride} (bucket ids stop at {}); raise dynamic-bucket.target-row-num",
            cuts.len() + 1,
            i16::MAX - 1
        )));
    }
    let mut out = Vec::with_capacity(n);
    let mut start = 0;
    for (i, &end) in cuts.iter().chain(std::iter::once(&n)).enumerate() {
        let end = end.clamp(start, n);
        out.resize(end, first + i as i32 * stride);
        start = end;
    }
    Ok(out)
}

/// The identity order of `keys` (sort keys, [`SortSpec::index_bytes`], of rows already in
/// sort order: a Spark task's range) and its boundary depths ([`curve::boundary_depths`]);
/// refused when the keys are null or out of order.
fn sorted_key_depths(keys: &BinaryArray) -> Result<(Vec<u32>, Vec<u16>)> {
    let n = keys.len();
    if n > u32::MAX as usize || keys.null_count() > 0 {
        return Err(Error::invalid(format!(
            "sort compaction: {} null sort key(s) among {n} rows",
            keys.null_count()
        )));
    }
    if let Some(i) = (1..n).find(|&i| keys.value(i - 1) > keys.value(i)) {
        return Err(Error::invalid(format!(
            "sort compaction: rows out of sort order at row {i} of {n} (a task's range must \
             arrive sorted by its sort key)"
        )));
    }
    let perm: Vec<u32> = (0..n as u32).collect();
    let depth = curve::boundary_depths(&perm, |i| keys.value(i));
    Ok((perm, depth))
}

/// A Spark task's buckets of a dynamic-bucket table's distributed sort compaction: per row of
/// one partition's rows in sort order (`keys`, checked sorted), its bucket, the rows cut into
/// pieces at cells within `target_rows` x [1/2, 1] (`dynamic-bucket.target-row-num`) as the
/// local sort cuts its buckets ([`curve::cell_pieces`]), piece `i` in bucket `first + i * stride`
/// ([`piece_buckets`]).
pub fn sorted_key_buckets(
    keys: &BinaryArray,
    target_rows: usize,
    first: i32,
    stride: i32,
) -> Result<Vec<i32>> {
    let (_, depth) = sorted_key_depths(keys)?;
    let cuts = curve::cell_pieces(&depth, target_rows - target_rows / 2, target_rows);
    piece_buckets(keys.len(), &cuts, first, stride)
}

/// The serialized partition (manifest form, as the writer routes rows) of the rows of `batch`,
/// refused unless they all share it.
fn run_partition(table: &FileStoreTable, batch: &RecordBatch) -> Result<Vec<u8>> {
    let Some(enc) = crate::write::assign::partition_encoder(table, batch)? else {
        return Ok(crate::spec::binary_row::empty_row());
    };
    let (mut first, mut row) = (vec![], vec![]);
    enc.encode(0, &mut first)?;
    for r in 1..batch.num_rows() {
        row.clear();
        enc.encode(r, &mut row)?;
        if row != first {
            return Err(Error::invalid(format!(
                "sort compaction: rows of two partitions in one run (row {r})"
            )));
        }
    }
    let arity = (table.partition_keys().len() as i32).to_be_bytes();
    Ok([&arity[..], &first].concat())
}

/// A Spark task's share of the distributed sort compaction of an append table: `batch` (the
/// table's columns) holds rows of one partition in sort order, `keys` their sort keys
/// ([`SortSpec::index_bytes`], checked sorted); written into the bucket of that partition's
/// split among `planned` ([`sort_compaction_plan`]) in files cut at curve cells as a local
/// partition is ([`write_sorted`]); returned as one message of new files of that partition
/// and bucket (`rewrite_messages` joins them to the plan). A partition not planned is refused.
pub fn write_sorted_run(
    table: &FileStoreTable,
    planned: &[Split],
    batch: &RecordBatch,
    keys: &BinaryArray,
) -> Result<CommitMessage> {
    let run = || -> Result<CommitMessage> {
        if keys.len() != batch.num_rows() || keys.is_empty() {
            return Err(Error::invalid(format!(
                "sort compaction: {} sort keys for {} rows",
                keys.len(),
                batch.num_rows()
            )));
        }
        let partition = run_partition(table, batch)?;
        let split = planned
            .iter()
            .find(|s| s.partition == partition)
            .ok_or_else(|| {
                Error::invalid(format!(
                    "sort compaction: a task's {} rows belong to a partition that was not planned",
                    batch.num_rows()
                ))
            })?;
        let (perm, depth) = sorted_key_depths(keys)?;
        let files = write_sorted(
            table,
            &split.bucket_path,
            batch,
            (&perm, &depth),
            first_seq(&split.files),
        )?;
        Ok(CommitMessage {
            partition,
            bucket: split.bucket,
            total_buckets: split.total_buckets,
            data_increment: DataIncrement::new_files(files),
            compact_increment: CompactIncrement::default(),
            restored_snapshot: Some(Some(split.snapshot_id)),
        })
    };
    run().map_err(|e| e.with_table(&table.name))
}

/// The OVERWRITE commit of [`sort_compact_dynamic`]; on failure the written files are removed.
fn commit_dynamic(
    table: &FileStoreTable,
    spec: &SortSpec,
    prepared: DynamicSort,
) -> Result<Option<i64>> {
    let DynamicSort {
        messages,
        expected,
        rows,
        partitions,
    } = prepared;
    let id = overwrite_exactly(table, expected, &messages)?;
    log::info!(
        target: "paimon_rs.compaction",
        "{}: sort compaction ({} by {:?}) rewrote {} partition(s) of a dynamic-bucket table \
         ({rows} rows) as snapshot {id:?}",
        table.name,
        spec.strategy.name(),
        spec.column_names(),
        partitions,
    );
    Ok(id)
}

/// Commit `messages` (a dynamic-bucket table's sort compaction, written by its overwrite
/// writer) as one OVERWRITE of the partitions written that must replace exactly `expected`
/// (what the sort read): a change committed since (an upsert, a delete, a compaction) conflicts
/// instead of being undone. On failure the written files are removed.
fn overwrite_exactly(
    table: &FileStoreTable,
    expected: ExpectedReplace,
    messages: &[CommitMessage],
) -> Result<Option<i64>> {
    let commit = FileStoreCommit::new(
        table.clone(),
        format!("sort-compact-{}", uuid::Uuid::new_v4()),
    )
    .expecting_replace(expected);
    commit
        .commit_as(
            messages,
            BATCH_COMMIT_IDENTIFIER,
            Some(crate::commit::Overwrite::Dynamic),
        )
        .inspect_err(|_| {
            // the written files belong to no snapshot: remove them
            let _ = commit.abort(messages);
        })
}

/// The driver's commit of the distributed sort compaction of a dynamic-bucket primary-key
/// table (`paimon_rs.spark.sort_compact`): the tasks read the splits [`sort_compaction_plan`]
/// planned at `snapshot_id` over `partitions` and wrote `messages` with the table's overwrite
/// writer; committed as the local one is ([`overwrite_exactly`]: one OVERWRITE of the
/// partitions written, replacing exactly the planned files and those partitions' index files,
/// else `CommitConflict`). On failure the written data files are removed.
pub fn commit_sort_compaction(
    table: &FileStoreTable,
    snapshot_id: i64,
    partitions: Option<&[PartitionSpec]>,
    messages: &[CommitMessage],
) -> Result<Option<i64>> {
    let run = || -> Result<Option<i64>> {
        if !table.is_primary_key() {
            return Err(Error::invalid(
                "commit_sort_compaction: only a dynamic-bucket primary-key table's sort \
                 compaction commits an overwrite (an append table's commits its rewrite)",
            ));
        }
        check_dynamic_selection(table, partitions)?;
        let snapshot = table.snapshot_manager().snapshot(snapshot_id)?;
        let mut by_partition: std::collections::BTreeMap<Vec<u8>, Vec<Split>> = Default::default();
        for s in bucket_splits(table, &snapshot, partitions)? {
            by_partition.entry(s.partition.clone()).or_default().push(s);
        }
        let expected = expected_replace(table, &snapshot, &by_partition, partitions)?;
        overwrite_exactly(table, expected, messages)
    };
    run().map_err(|e| e.with_table(&table.name))
}

/// What the overwrite of a dynamic-bucket table's sort compaction must replace:
/// the data files read (`by_partition`) and the live index files (hash index, deletion
/// vectors) of those partitions (of every partition when all are selected) at `snapshot`.
fn expected_replace(
    table: &FileStoreTable,
    snapshot: &crate::spec::snapshot::Snapshot,
    by_partition: &std::collections::BTreeMap<Vec<u8>, Vec<Split>>,
    partitions: Option<&[PartitionSpec]>,
) -> Result<ExpectedReplace> {
    let mut out = ExpectedReplace {
        base: snapshot.id,
        ..Default::default()
    };
    for (p, splits) in by_partition {
        let files = out.files.entry(p.clone()).or_default();
        files.extend(
            splits
                .iter()
                .flat_map(|s| &s.files)
                .map(|f| f.file_name.clone()),
        );
    }
    for e in table.live_index_entries(snapshot.index_manifest.as_deref())? {
        if partitions.is_none() || by_partition.contains_key(&e.partition) {
            out.index
                .entry(e.partition)
                .or_default()
                .insert(e.file_name);
        }
    }
    Ok(out)
}

/// The driver's half of a distributed sort compaction (`paimon_rs.spark.sort_compact`): the
/// checks of [`sort_compact_table`], then the latest snapshot's id and one split per selected
/// partition (its files: what the rewrite removes; a dynamic-bucket primary-key table: one
/// per selected bucket with its files' deletion vectors attached, which the Spark tasks read
/// merged and whose partitions the driver overwrites through [`commit_sort_compaction`]). None
/// if the table has no snapshot.
pub fn sort_compaction_plan(
    table: &FileStoreTable,
    order_strategy: &str,
    order_by: &[String],
    partitions: Option<&[PartitionSpec]>,
) -> Result<Option<(i64, Vec<Split>)>> {
    let run = || -> Result<Option<(i64, Vec<Split>)>> {
        check_sort_compactable(table)?;
        let pk = table.is_primary_key();
        if pk {
            check_dynamic_selection(table, partitions)?;
        }
        SortSpec::new(table, order_strategy, order_by)?;
        let Some(snapshot) = table.snapshot_manager().latest()? else {
            return Ok(None);
        };
        let mut splits = bucket_splits(table, &snapshot, partitions)?;
        splits.retain(|s| !s.files.is_empty());
        if pk {
            // the tasks read these splits merged, all levels, with their vectors applied
            for s in &mut splits {
                attach_vectors(table, s)?;
            }
        }
        splits.sort_by(|a, b| a.bucket_path.cmp(&b.bucket_path));
        Ok(Some((snapshot.id, splits)))
    };
    run().map_err(|e| e.with_table(&table.name))
}

/// The rewrite messages of a distributed sort compaction: per planned split, its files as
/// `compact_before` (a deletion-vector table: the partition's index files as
/// `deleted_index_files`, the tasks read the planned snapshot with its vectors applied) and
/// the files the tasks wrote into that partition (`written`: append messages of new files) as
/// `compact_after`. New files outside the planned partitions, or messages carrying anything
/// but new data files, are refused (nothing may be lost or added outside the rewrite).
pub fn rewrite_messages(
    table: &FileStoreTable,
    planned: &[Split],
    written: &[CommitMessage],
) -> Result<Vec<CommitMessage>> {
    let mut out: Vec<CommitMessage> = vec![];
    for s in planned {
        let mut compact_increment = CompactIncrement::of(s.files.clone(), vec![]);
        with_dropped_vectors(table, s, &mut compact_increment)?;
        out.push(CommitMessage {
            partition: s.partition.clone(),
            bucket: s.bucket,
            total_buckets: s.total_buckets,
            data_increment: DataIncrement::default(),
            compact_increment,
            restored_snapshot: Some(Some(s.snapshot_id)),
        });
    }
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
                    "sort compaction of {}: a task wrote {} file(s) into bucket {} of a \
                     partition that was not planned",
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

    /// A partition of many target files is written as one range per pool thread: the files
    /// still read back in the sort's order, their sequence numbers one run without gaps.
    #[test]
    fn a_large_partition_is_written_in_parallel_ranges_that_keep_the_order() {
        let dir = tempfile::tempdir().unwrap();
        let t = table(dir.path());
        append(&t, rows(1, 0..30_000));
        let opts = BTreeMap::from([("target-file-size".to_string(), "16kb".to_string())]);
        let t = t.copy(&opts).unwrap();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        let id = pool
            .install(|| sort_compact_table(&t, "order", &["y".into(), "x".into()], None))
            .unwrap()
            .unwrap();
        let spec = SortSpec::new(&t, "order", &["y".into(), "x".into()]).unwrap();
        let reader = TableRead::new(t.clone(), None, None).unwrap();
        let s = t.snapshot_manager().snapshot(id).unwrap();
        let splits = bucket_splits(&t, &s, None).unwrap();
        assert_eq!(splits.len(), 1);
        let mut files = splits[0].files.clone();
        assert!(files.len() >= 4, "{} files", files.len());
        let batches: Vec<RecordBatch> = reader
            .split_stream(&splits[0])
            .unwrap()
            .collect::<Result<_>>()
            .unwrap();
        let all = arrow_select::concat::concat_batches(&batches[0].schema(), &batches).unwrap();
        assert_eq!(all.num_rows(), 30_000);
        let keys = spec.index_bytes(&all).unwrap();
        assert!(keys.windows(2).all(|w| w[0] <= w[1]));
        files.sort_by_key(|f| f.min_sequence_number);
        for w in files.windows(2) {
            assert_eq!(w[1].min_sequence_number, w[0].max_sequence_number + 1);
        }
    }

    /// `n` rows of partition 1 with (x, y) uniform in [0, 65536)² (a fixed generator), or x
    /// = 5 and y uniform when `same`.
    fn square(n: usize, same: bool) -> RecordBatch {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 48) as i64
        };
        let (xs, ys): (Vec<i64>, Vec<i64>) = (0..n)
            .map(|_| (if same { 5 } else { next() }, next()))
            .unzip();
        let b = rows(1, 0..n as i64);
        RecordBatch::try_new(
            b.schema(),
            vec![
                b.column(0).clone(),
                Arc::new(Int64Array::from(xs)),
                Arc::new(Int64Array::from(ys)),
            ],
        )
        .unwrap()
    }

    /// Sort-compact `t` (one partition) on one thread (one range); its files in curve order.
    fn sorted_files(t: &FileStoreTable, strategy: &str, cols: &[&str]) -> Vec<DataFileMeta> {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        let cols: Vec<String> = cols.iter().map(|c| c.to_string()).collect();
        let id = pool
            .install(|| sort_compact_table(t, strategy, &cols, None))
            .unwrap()
            .unwrap();
        let s = t.snapshot_manager().snapshot(id).unwrap();
        let splits = bucket_splits(t, &s, None).unwrap();
        assert_eq!(splits.len(), 1);
        let mut files = splits[0].files.clone();
        files.sort_by_key(|f| f.min_sequence_number);
        files
    }

    /// Files are cut within target-file-size ± 1/4 (all but the range's last, which takes the
    /// rest; the cell boundaries themselves: curve.rs's `cell_cut` tests, and
    /// tests/unit/test_sort_compaction_cells.py's files read), and the rows stay the same.
    #[test]
    fn sort_compaction_files_are_cut_at_cells_within_the_size_window() {
        for strategy in ["zorder", "hilbert"] {
            let dir = tempfile::tempdir().unwrap();
            let t = table(dir.path());
            append(&t, square(200_000, false));
            let before = visible(&t);
            let t = t
                .copy(&BTreeMap::from([(
                    "target-file-size".to_string(),
                    "128kb".to_string(),
                )]))
                .unwrap();
            let files = sorted_files(&t, strategy, &["x", "y"]);
            assert!(files.len() >= 6, "{strategy}: {} files", files.len());
            let target = 128 << 10;
            for f in &files[..files.len() - 1] {
                let size = f.file_size;
                assert!(
                    size >= target * 3 / 4 && size <= target * 5 / 4,
                    "{strategy}: {} of {size} bytes, target {target}",
                    f.file_name
                );
            }
            assert!(files.last().unwrap().file_size <= target * 5 / 4);
            assert_eq!(visible(&t), before, "{strategy}");
        }
    }

    /// A window whose keys are all equal has no cell boundary: the files are cut by size (sorted
    /// by x alone, which is 5 in every row).
    #[test]
    fn sort_compaction_of_equal_keys_cuts_by_size() {
        let dir = tempfile::tempdir().unwrap();
        let t = table(dir.path());
        append(&t, square(100_000, true));
        let t = t
            .copy(&BTreeMap::from([(
                "target-file-size".to_string(),
                "16kb".to_string(),
            )]))
            .unwrap();
        let before = visible(&t);
        let files = sorted_files(&t, "order", &["x"]);
        assert!(files.len() >= 3, "{} files", files.len());
        for f in &files[..files.len() - 1] {
            assert!(
                f.file_size >= 12 << 10 && f.file_size <= 20 << 10,
                "{} bytes",
                f.file_size
            );
        }
        assert_eq!(visible(&t), before);
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

    /// `table` with `opts` and, when `pk`, primary key (p, x) (a dynamic-bucket table).
    fn table_with(dir: &std::path::Path, pk: bool, opts: &[(&str, &str)]) -> FileStoreTable {
        let cat = FileSystemCatalog::new(dir).unwrap();
        cat.create_database("db", true).unwrap();
        let schema = Schema::new(vec![
            Field::new("p", AT::Int32, false),
            Field::new("x", AT::Int64, !pk),
            Field::new("y", AT::Int64, true),
        ]);
        let mut o: BTreeMap<String, String> = [("bucket".to_string(), "-1".to_string())].into();
        for (k, v) in opts {
            o.insert(k.to_string(), v.to_string());
        }
        let keys = if pk {
            vec!["p".into(), "x".into()]
        } else {
            vec![]
        };
        let s = NewTableSchema::from_arrow(&schema, vec!["p".into()], keys, o, None).unwrap();
        cat.create_table("db.t", s, false).unwrap();
        cat.get_table("db.t").unwrap()
    }

    fn dv_append_table(dir: &std::path::Path) -> FileStoreTable {
        table_with(dir, false, &[("deletion-vectors.enabled", "true")])
    }

    /// The (p, x, y) rows a reader sees (vectors applied), sorted.
    fn visible(t: &FileStoreTable) -> Vec<(i32, i64, i64)> {
        let plan = crate::read::scan::TableScan::new(t.clone(), None)
            .plan()
            .unwrap();
        let r = TableRead::new(t.clone(), None, None).unwrap();
        let mut out = vec![];
        for b in r.read_splits(&plan.splits).unwrap() {
            let p = b.column(0).as_any().downcast_ref::<Int32Array>().unwrap();
            let x = b.column(1).as_any().downcast_ref::<Int64Array>().unwrap();
            let y = b.column(2).as_any().downcast_ref::<Int64Array>().unwrap();
            for i in 0..b.num_rows() {
                out.push((p.value(i), x.value(i), y.value(i)));
            }
        }
        out.sort();
        out
    }

    /// Mark `positions` of the `nth` live file (in name order) of partition `p` deleted, as a
    /// DELETE through deletion vectors commits it.
    fn delete_positions_of(t: &FileStoreTable, p: i32, nth: usize, positions: &[u32]) {
        let s = t.snapshot_manager().latest().unwrap().unwrap();
        let types = t.partition_types().unwrap();
        let mut files: Vec<String> = crate::table::live::live_entries(t, &s)
            .unwrap()
            .into_iter()
            .filter(|e| {
                crate::spec::binary_row::deserialize_row(&types, &e.partition).unwrap()
                    == vec![Some(crate::Datum::Int(p))]
            })
            .map(|e| e.file.file_name)
            .collect();
        files.sort();
        let marks = BTreeMap::from([(
            files[nth].clone(),
            positions
                .iter()
                .copied()
                .collect::<roaring::RoaringBitmap>(),
        )]);
        let d = crate::write::append_dv::delete_positions(t, s.id, &marks).unwrap();
        FileStoreCommit::new(t.clone(), "deleter".into())
            .commit(&d.messages, BATCH_COMMIT_IDENTIFIER, None)
            .unwrap();
    }

    fn live_index(t: &FileStoreTable) -> Vec<crate::spec::manifest::IndexManifestEntry> {
        let s = t.snapshot_manager().latest().unwrap().unwrap();
        t.live_index_entries(s.index_manifest.as_deref()).unwrap()
    }

    /// A bucket-unaware append table with deletion vectors: the rows the vectors mark are not
    /// rewritten, the rows kept are exactly those a reader saw, and the partitions' index files
    /// leave the index manifest with the files they held vectors of.
    #[test]
    fn deletion_vector_append_table_drops_marked_rows_and_their_vectors() {
        let dir = tempfile::tempdir().unwrap();
        let t = dv_append_table(dir.path());
        append(&t, rows(1, 0..100));
        append(&t, rows(1, 100..200));
        append(&t, rows(2, 0..50));
        delete_positions_of(&t, 1, 0, &[0, 1, 2, 50]);
        delete_positions_of(&t, 1, 1, &[7]);
        delete_positions_of(&t, 2, 0, &[10, 11]);
        assert!(!live_index(&t).is_empty());
        let before = visible(&t);
        assert_eq!(before.len(), 250 - 7);
        let id = sort_compact_table(&t, "zorder", &["x".into(), "y".into()], None)
            .unwrap()
            .unwrap();
        let s = t.snapshot_manager().snapshot(id).unwrap();
        assert_eq!(s.commit_kind, crate::spec::snapshot::CommitKind::Overwrite);
        assert_eq!(visible(&t), before);
        assert_eq!(live_rows(&t), 243, "the marked rows were not written again");
        assert!(live_index(&t).is_empty(), "{:?}", live_index(&t));
        // the table goes on: a delete of a sorted file
        delete_positions_of(&t, 2, 0, &[0]);
        assert_eq!(visible(&t).len(), 242);
    }

    /// A delete committed while the sort ran, marking rows of a file the sort rewrites, makes
    /// the sort's commit a conflict (a new index file: the removed file got a vector the sort
    /// does not replace; a replaced index file: the one the sort drops is gone); the delete
    /// stays and nothing is lost.
    #[test]
    fn a_delete_racing_the_sort_conflicts() {
        for marked_before in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let t = dv_append_table(dir.path());
            append(&t, rows(1, 0..100));
            append(&t, rows(1, 100..200));
            if marked_before {
                delete_positions_of(&t, 1, 0, &[3]);
            }
            let spec = SortSpec::new(&t, "order", &["x".into()]).unwrap();
            let reader = TableRead::new(t.clone(), None, None).unwrap();
            let s = t.snapshot_manager().latest().unwrap().unwrap();
            let mut msgs = vec![];
            for mut sp in bucket_splits(&t, &s, None).unwrap() {
                sp.raw_convertible = true;
                attach_vectors(&t, &mut sp).unwrap();
                msgs.push(sort_split(&t, &reader, &spec, &sp).unwrap().unwrap());
            }
            assert_eq!(
                msgs[0].compact_increment.deleted_index_files.len(),
                usize::from(marked_before)
            );
            delete_positions_of(&t, 1, 0, &[9]);
            let expected = visible(&t);
            let err = FileStoreCommit::new(t.clone(), "sort".into())
                .commit_rewrite(&msgs, BATCH_COMMIT_IDENTIFIER)
                .unwrap_err();
            assert!(matches!(err, Error::CommitConflict { .. }), "{err}");
            assert_eq!(visible(&t), expected);
            assert_eq!(expected.len(), 200 - 1 - usize::from(marked_before));
        }
    }

    /// The distributed rewrite of a deletion-vector append table drops the partition's index
    /// files with its files.
    #[test]
    fn rewrite_messages_drop_the_partitions_vectors() {
        let dir = tempfile::tempdir().unwrap();
        let t = dv_append_table(dir.path());
        append(&t, rows(1, 0..100));
        delete_positions_of(&t, 1, 0, &[1, 2]);
        let (_, plan) = sort_compaction_plan(&t, "order", &["x".into()], None)
            .unwrap()
            .unwrap();
        let msgs = rewrite_messages(&t, &plan, &[]).unwrap();
        assert_eq!(msgs[0].compact_increment.deleted_index_files.len(), 1);
        assert_eq!(
            msgs[0].compact_increment.deleted_index_files[0].file_name,
            live_index(&t)[0].file_name
        );
    }

    fn upsert(t: &FileStoreTable, p: i32, xs: &[i64], y: i64) {
        let b = RecordBatch::try_new(
            Arc::new(Schema::new(vec![
                Field::new("p", AT::Int32, false),
                Field::new("x", AT::Int64, false),
                Field::new("y", AT::Int64, true),
            ])),
            vec![
                Arc::new(Int32Array::from(vec![p; xs.len()])),
                Arc::new(Int64Array::from(xs.to_vec())),
                Arc::new(Int64Array::from(vec![y; xs.len()])),
            ],
        )
        .unwrap();
        append(t, b);
    }

    /// A dynamic-bucket primary-key table with deletion vectors: read merged with the vectors
    /// applied (one row per key, the newest), sorted and overwritten, the partitions' old index
    /// files (hash index, vectors) gone; a change committed between the read and the overwrite
    /// (an upsert, whose lookup compaction marks rows of a file the sort rewrites) conflicts
    /// instead of being undone.
    #[test]
    fn dynamic_deletion_vector_table_sorted_and_a_racing_upsert_conflicts() {
        let dir = tempfile::tempdir().unwrap();
        let t = table_with(dir.path(), true, &[("deletion-vectors.enabled", "true")]);
        upsert(&t, 1, &(0..50).collect::<Vec<_>>(), 1);
        upsert(&t, 1, &(20..30).collect::<Vec<_>>(), 2);
        upsert(&t, 2, &(0..10).collect::<Vec<_>>(), 1);
        assert!(live_index(&t)
            .iter()
            .any(|e| e.index_type == crate::spec::manifest::DELETION_VECTORS_INDEX));
        let before = visible(&t);
        assert_eq!(before.len(), 60);
        let old_index: Vec<String> = live_index(&t).into_iter().map(|e| e.file_name).collect();
        sort_compact_table(&t, "order", &["y".into()], None)
            .unwrap()
            .unwrap();
        assert_eq!(visible(&t), before);
        assert!(live_index(&t)
            .iter()
            .all(|e| !old_index.contains(&e.file_name)));

        let spec = SortSpec::new(&t, "order", &["y".into()]).unwrap();
        let sid = t.snapshot_manager().latest_id().unwrap().unwrap();
        let prepared = prepare_dynamic(&t, &spec, sid, None).unwrap().unwrap();
        upsert(&t, 1, &[5], 3);
        let expected = visible(&t);
        let err = commit_dynamic(&t, &spec, prepared).unwrap_err();
        assert!(
            matches!(&err, Error::CommitConflict { message, .. } if message.contains("changed after snapshot")),
            "{err}"
        );
        assert_eq!(visible(&t), expected);
        assert!(expected.contains(&(1, 5, 3)));
    }

    /// The distributed sort of a dynamic-bucket deletion-vector table: the plan's splits carry
    /// their files' vectors and level 0, so reading them merged gives what a reader sees; the
    /// driver's commit of what the tasks wrote (here: the overwrite writer, as a task) replaces
    /// the table, and conflicts when an upsert was committed after the plan.
    #[test]
    fn distributed_dynamic_deletion_vector_sort_reads_the_plan_and_checks_its_commit() {
        let dir = tempfile::tempdir().unwrap();
        let t = table_with(dir.path(), true, &[("deletion-vectors.enabled", "true")]);
        upsert(&t, 1, &(0..50).collect::<Vec<_>>(), 1);
        upsert(&t, 1, &(20..30).collect::<Vec<_>>(), 2);
        upsert(&t, 2, &(0..10).collect::<Vec<_>>(), 1);
        let before = visible(&t);
        for race in [false, true] {
            let (sid, plan) = sort_compaction_plan(&t, "order", &["y".into()], None)
                .unwrap()
                .unwrap();
            assert!(race || plan.iter().any(|s| !s.deletion_files.is_empty()));
            let reader = TableRead::new(t.clone(), None, None).unwrap();
            let mut w = crate::write::TableWrite::new(t.clone()).unwrap();
            w.restore_from(Some(sid)).unwrap();
            w.ignore_previous_files(true).unwrap();
            let mut read = 0;
            for s in &plan {
                for b in reader.split_stream(s).unwrap() {
                    let b = b.unwrap();
                    read += b.num_rows();
                    w.write(&b).unwrap();
                }
            }
            assert_eq!(read, before.len(), "one row per key, vectors applied");
            let msgs = w.prepare_commit().unwrap();
            w.close();
            if race {
                upsert(&t, 2, &[3], 9);
                let expected = visible(&t);
                let err = commit_sort_compaction(&t, sid, None, &msgs).unwrap_err();
                assert!(matches!(err, Error::CommitConflict { .. }), "{err}");
                assert_eq!(visible(&t), expected);
                assert!(expected.contains(&(2, 3, 9)));
            } else {
                commit_sort_compaction(&t, sid, None, &msgs)
                    .unwrap()
                    .unwrap();
                assert_eq!(visible(&t), before);
            }
        }
    }

    /// A dynamic-bucket table without deletion vectors: an upsert of an existing key committed
    /// between the sort's read and its overwrite (no new key, so the hash index does not
    /// change) would be replaced by the overwrite, as in Java; the exact-replace check makes
    /// the commit a conflict instead, locally and for the distributed commit.
    #[test]
    fn a_racing_upsert_into_a_dynamic_table_without_vectors_conflicts() {
        for distributed in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let t = table_with(dir.path(), true, &[]);
            upsert(&t, 1, &(0..50).collect::<Vec<_>>(), 1);
            upsert(&t, 2, &(0..10).collect::<Vec<_>>(), 1);
            let spec = SortSpec::new(&t, "order", &["y".into()]).unwrap();
            let sid = t.snapshot_manager().latest_id().unwrap().unwrap();
            let prepared = prepare_dynamic(&t, &spec, sid, None).unwrap().unwrap();
            upsert(&t, 1, &[7], 5);
            let expected = visible(&t);
            let err = if distributed {
                commit_sort_compaction(&t, sid, None, &prepared.messages).unwrap_err()
            } else {
                commit_dynamic(&t, &spec, prepared).unwrap_err()
            };
            assert!(
                matches!(&err, Error::CommitConflict { message, .. } if message.contains("changed after snapshot")),
                "{err}"
            );
            assert_eq!(visible(&t), expected);
            assert!(expected.contains(&(1, 7, 5)), "the upsert is kept");
            // nothing raced: the sort goes through
            sort_compact_table(&t, "order", &["y".into()], None)
                .unwrap()
                .unwrap();
            assert_eq!(visible(&t), expected);
        }
    }
}
