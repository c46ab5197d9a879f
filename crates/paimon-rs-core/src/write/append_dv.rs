//! Deletion vectors of append tables (Java's `BaseAppendDeleteFileMaintainer` and Spark's
//! `DeleteFromPaimonTableCommand` on a `deletion-vectors.enabled` append table): a DELETE or
//! the deleting half of an UPDATE / MERGE marks the row positions of the matching rows in
//! their data files and commits only new deletion-vector index files; no data file is
//! rewritten. Append compaction later rewrites files without their deleted rows and drops
//! their vectors (`compact::append`).
//!
//! Where the vectors live (paimon-format.md, deletion vectors; Java's maintainers):
//! - a fixed-bucket append table keeps one index file per (partition, bucket), replaced as a
//!   whole on every change ([`DeletionVectorsMaintainer`], as primary-key tables);
//! - a bucket-unaware table (`bucket = -1`) keeps any number of index files per partition,
//!   all under bucket 0 (Java's `UNAWARE_BUCKET`); a change replaces only the index files that
//!   held a changed vector: their other vectors are written again, with the changed and the new
//!   ones, into one new index file of the partition.
//!
//! Each data file has at most one vector; the commit refuses (as a conflict) an index change
//! that would give a file two, a vector of a file no longer live, and a compaction removing a
//! file whose vector it did not replace (commit/index.rs).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use arrow_array::{ArrayRef, BooleanArray, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType as ArrowType, Field, Schema};
use rayon::prelude::*;
use roaring::RoaringBitmap;

use crate::commit::{CommitMessage, DataIncrement};
use crate::error::{Error, Result};
use crate::predicate::Predicate;
use crate::read::deletion::{read_deletion_vector, DeletionFile};
use crate::read::split::Split;
use crate::read::table_read::TableRead;
use crate::spec::manifest::{
    DataFileMeta, IndexFileMeta, IndexManifestEntry, DELETION_VECTORS_INDEX,
};
use crate::table::FileStoreTable;
use crate::write::deletion_vectors::{write_index_file, DeletionVectorsMaintainer};

/// The column of [`read_with_positions`] naming each row's data file.
pub const FILE_NAME_COLUMN: &str = "_FILE_NAME";
/// The column of [`read_with_positions`] giving each row's position in its data file.
pub const ROW_POSITION_COLUMN: &str = "_ROW_POSITION";

/// The bucket of a bucket-unaware table's files and index files (Java's `UNAWARE_BUCKET`).
const UNAWARE_BUCKET: i32 = 0;

/// The rows of `splits` (an append table's plan) that `filter` selects and no deletion vector
/// removed, with the `projection` columns (all if None), then [`FILE_NAME_COLUMN`] and
/// [`ROW_POSITION_COLUMN`]: where each row is, for a delete through deletion vectors. Each data
/// file is read whole, in order, so positions count every row of the file (Java's
/// `_ROW_INDEX`).
pub fn read_with_positions(
    table: &FileStoreTable,
    splits: &[Split],
    projection: Option<Vec<String>>,
    filter: Option<&Predicate>,
) -> Result<Vec<RecordBatch>> {
    if table.is_primary_key() {
        return Err(Error::unsupported(format!(
            "reading row positions of primary-key table '{}' (its rows are merged by key)",
            table.name
        )));
    }
    for c in [FILE_NAME_COLUMN, ROW_POSITION_COLUMN] {
        if table.schema.field(c).is_some() {
            return Err(Error::unsupported(format!(
                "reading row positions of table '{}': its column '{c}' has the name of the \
                 position column",
                table.name
            )));
        }
    }
    let projection: Vec<String> = match projection {
        Some(p) => p,
        None => table.schema.fields.iter().map(|f| f.name.clone()).collect(),
    };
    let mut needed = projection.clone();
    for f in filter.iter().flat_map(|f| f.fields()) {
        if !needed.contains(&f) {
            needed.push(f);
        }
    }
    if needed.is_empty() {
        // a file read of no column has no rows: read one to count them
        needed.extend(table.schema.fields.first().map(|f| f.name.clone()));
    }
    let read = TableRead::new(table.clone(), Some(needed.clone()), None)?;
    let mut fields: Vec<Field> = projection
        .iter()
        .map(|n| {
            let schema = read.output_schema();
            let f = schema.field_with_name(n)?;
            Ok(f.clone())
        })
        .collect::<Result<_>>()?;
    fields.push(Field::new(FILE_NAME_COLUMN, ArrowType::Utf8, false));
    fields.push(Field::new(ROW_POSITION_COLUMN, ArrowType::Int64, false));
    let out_schema = Arc::new(Schema::new(fields));
    let files: Vec<(&Split, &DataFileMeta)> = splits
        .iter()
        .flat_map(|s| s.files.iter().map(move |f| (s, f)))
        .collect();
    let type_of = |n: &str| table.schema.field(n).map(|x| x.data_type.clone());
    let parts: Vec<Result<Vec<RecordBatch>>> = files
        .par_iter()
        .map(|(split, file)| {
            let dv = match split.deletion_files.get(&file.file_name) {
                Some(df) => Some(read_deletion_vector(
                    &table.path,
                    df,
                    &file.file_name,
                    file.row_count,
                )?),
                None => None,
            };
            let one = Split {
                files: vec![(*file).clone()],
                deletion_files: BTreeMap::new(),
                raw_convertible: true,
                changelog: false,
                diff_before: None,
                row_slices: Default::default(),
                row_id_ranges: Vec::new(),
                ..(*split).clone()
            };
            let mut pos: u64 = 0;
            let mut out = vec![];
            for b in read.split_stream(&one)? {
                let b = b?;
                let n = b.num_rows();
                let start = pos;
                pos += n as u64;
                let selected = match filter {
                    Some(f) => f.evaluate(&b, &type_of)?,
                    None => BooleanArray::from(vec![true; n]),
                };
                let keep: BooleanArray = (0..n)
                    .map(|i| {
                        let p = start + i as u64;
                        let deleted = dv
                            .as_ref()
                            .is_some_and(|d| u32::try_from(p).is_ok_and(|p| d.contains(p)));
                        Some(selected.value(i) && !deleted)
                    })
                    .collect();
                if keep.true_count() == 0 {
                    continue;
                }
                let positions: ArrayRef = Arc::new(Int64Array::from_iter_values(
                    (0..n as i64).map(|i| start as i64 + i),
                ));
                let names: ArrayRef = Arc::new(StringArray::from(vec![file.file_name.as_str(); n]));
                let mut cols = projection
                    .iter()
                    .map(|p| {
                        b.column_by_name(p)
                            .cloned()
                            .ok_or_else(|| Error::Internal(format!("column '{p}' not read")))
                    })
                    .collect::<Result<Vec<_>>>()?;
                cols.push(names);
                cols.push(positions);
                let batch = RecordBatch::try_new(out_schema.clone(), cols)?;
                out.push(arrow_select::filter::filter_record_batch(&batch, &keep)?);
            }
            if pos != file.row_count.max(0) as u64 {
                return Err(Error::corrupt(
                    &table.path,
                    format!(
                        "data file {} has {pos} rows, its manifest entry {}",
                        file.file_name, file.row_count
                    ),
                ));
            }
            Ok(out)
        })
        .collect();
    let mut out = vec![];
    for p in parts {
        out.extend(p?);
    }
    if out.is_empty() {
        out.push(RecordBatch::new_empty(out_schema));
    }
    Ok(out)
}

/// An unaware-bucket table's deletion vectors of one partition (Java's
/// `AppendDeleteFileMaintainer`): restored lazily from the partition's live index files;
/// index files holding a changed or removed vector are replaced at commit.
#[derive(Debug, Default)]
pub(crate) struct UnawareDvMaintainer {
    bitmap64: bool,
    /// Live index files of the partition, by name.
    index_files: BTreeMap<String, IndexFileMeta>,
    /// Each vector's index file and location, by data file.
    stored: BTreeMap<String, (String, DeletionFile)>,
    /// Row counts of the partition's live data files.
    rows: BTreeMap<String, i64>,
    /// New or changed vectors.
    changed: BTreeMap<String, RoaringBitmap>,
    /// Vectors of files that left the partition (compaction rewrote them).
    removed: BTreeSet<String>,
    /// Index files to replace.
    touched: BTreeSet<String>,
}

impl UnawareDvMaintainer {
    fn restore(
        table: &FileStoreTable,
        live_index: &[IndexManifestEntry],
        partition: &[u8],
        files: &[DataFileMeta],
    ) -> Result<Self> {
        let mut m = UnawareDvMaintainer {
            bitmap64: table.options.deletion_vectors_bitmap64()?,
            rows: files
                .iter()
                .map(|f| (f.file_name.clone(), f.row_count))
                .collect(),
            ..Default::default()
        };
        for e in live_index {
            if e.index_type != DELETION_VECTORS_INDEX || e.partition.as_slice() != partition {
                continue;
            }
            let path = crate::read::deletion::deletion_file_path(e);
            for r in e.dv_ranges.iter().flatten() {
                let df = DeletionFile {
                    path: path.clone(),
                    offset: i64::from(r.offset),
                    length: i64::from(r.length),
                    cardinality: r.cardinality,
                };
                m.stored
                    .insert(r.data_file.clone(), (e.file_name.clone(), df));
            }
            m.index_files.insert(e.file_name.clone(), e.index_file());
        }
        Ok(m)
    }

    fn stored_vector(&self, table: &FileStoreTable, file: &str) -> Result<Option<RoaringBitmap>> {
        let Some((_, df)) = self.stored.get(file) else {
            return Ok(None);
        };
        let rows = self.rows.get(file).copied().ok_or_else(|| {
            Error::invalid(format!(
                "deletion vector of data file {file}, which is not live in table '{}'",
                table.name
            ))
        })?;
        read_deletion_vector(&table.path, df, file, rows).map(Some)
    }

    fn vector(&self, table: &FileStoreTable, file: &str) -> Result<Option<RoaringBitmap>> {
        if self.removed.contains(file) {
            return Ok(None);
        }
        match self.changed.get(file) {
            Some(v) => Ok(Some(v.clone())),
            None => self.stored_vector(table, file),
        }
    }

    fn mark(
        &mut self,
        table: &FileStoreTable,
        file: &str,
        positions: &RoaringBitmap,
    ) -> Result<()> {
        let mut dv = self.vector(table, file)?.unwrap_or_default();
        let before = dv.len();
        dv |= positions;
        if dv.len() != before {
            if let Some((index, _)) = self.stored.get(file) {
                self.touched.insert(index.clone());
            }
            self.changed.insert(file.to_string(), dv);
        }
        Ok(())
    }

    fn remove(&mut self, file: &str) {
        self.changed.remove(file);
        if let Some((index, _)) = self.stored.get(file) {
            self.touched.insert(index.clone());
            self.removed.insert(file.to_string());
        }
    }

    fn prepare_commit(
        &mut self,
        table: &FileStoreTable,
    ) -> Result<(Vec<IndexFileMeta>, Vec<IndexFileMeta>)> {
        if self.changed.is_empty() && self.touched.is_empty() {
            return Ok((vec![], vec![]));
        }
        let mut vectors = std::mem::take(&mut self.changed);
        // the other vectors of the replaced index files move to the new one (those of files
        // no longer live are dropped)
        for (file, (index, _)) in &self.stored {
            if self.touched.contains(index)
                && !vectors.contains_key(file)
                && !self.removed.contains(file)
                && self.rows.contains_key(file)
            {
                if let Some(v) = self.stored_vector(table, file)? {
                    vectors.insert(file.clone(), v);
                }
            }
        }
        let new: Vec<IndexFileMeta> = write_index_file(table, &vectors, self.bitmap64)?
            .into_iter()
            .collect();
        let replaced = std::mem::take(&mut self.touched)
            .into_iter()
            .filter_map(|n| self.index_files.get(&n).cloned())
            .collect();
        Ok((new, replaced))
    }
}

/// The deletion vectors of an append table's (partition, bucket), kept as its table keeps them.
#[derive(Debug)]
pub(crate) enum AppendDvMaintainer {
    Bucketed(DeletionVectorsMaintainer),
    Unaware(Box<UnawareDvMaintainer>),
}

impl AppendDvMaintainer {
    /// The vectors of (partition, bucket) in a snapshot's live index
    /// ([`DeletionVectorsMaintainer::live_index_of`]); `files` are its live data files.
    pub fn restore(
        table: &FileStoreTable,
        live_index: &[IndexManifestEntry],
        partition: &[u8],
        bucket: i32,
        files: &[DataFileMeta],
    ) -> Result<Self> {
        Ok(if table.is_unaware_append() {
            AppendDvMaintainer::Unaware(Box::new(UnawareDvMaintainer::restore(
                table, live_index, partition, files,
            )?))
        } else {
            AppendDvMaintainer::Bucketed(DeletionVectorsMaintainer::restore(
                table, live_index, partition, bucket, files,
            )?)
        })
    }

    /// The vector of `file`, if it has one.
    pub fn vector(&self, table: &FileStoreTable, file: &str) -> Result<Option<RoaringBitmap>> {
        match self {
            AppendDvMaintainer::Bucketed(m) => Ok(m.vectors().get(file).cloned()),
            AppendDvMaintainer::Unaware(m) => m.vector(table, file),
        }
    }

    /// Mark `positions` of `file` deleted.
    pub fn mark(
        &mut self,
        table: &FileStoreTable,
        file: &str,
        positions: &RoaringBitmap,
    ) -> Result<()> {
        match self {
            AppendDvMaintainer::Bucketed(m) => {
                m.mark(file, positions);
                Ok(())
            }
            AppendDvMaintainer::Unaware(m) => m.mark(table, file, positions),
        }
    }

    /// `file` left the table (compaction rewrote it without its deleted rows).
    pub fn remove(&mut self, file: &str) {
        match self {
            AppendDvMaintainer::Bucketed(m) => m.remove(file),
            AppendDvMaintainer::Unaware(m) => m.remove(file),
        }
    }

    /// The index changes of a compaction that rewrote `removed` (their vectors go with them)
    /// among the live `files` of (partition, bucket) at snapshot `snapshot_id`: the new index
    /// files and those they replace.
    pub fn dropping(
        table: &FileStoreTable,
        snapshot_id: i64,
        (partition, bucket): (&[u8], i32),
        files: &[DataFileMeta],
        removed: &[DataFileMeta],
    ) -> Result<(Vec<IndexFileMeta>, Vec<IndexFileMeta>)> {
        let snapshot = table.snapshot_manager().snapshot(snapshot_id)?;
        let live = DeletionVectorsMaintainer::live_index_of(table, Some(&snapshot))?;
        let mut m = Self::restore(table, &live, partition, bucket, files)?;
        for f in removed {
            m.remove(&f.file_name);
        }
        m.prepare_commit(table)
    }

    /// The new index files and those they replace (both empty if nothing changed).
    pub fn prepare_commit(
        &mut self,
        table: &FileStoreTable,
    ) -> Result<(Vec<IndexFileMeta>, Vec<IndexFileMeta>)> {
        match self {
            AppendDvMaintainer::Bucketed(m) => m.prepare_commit(table),
            AppendDvMaintainer::Unaware(m) => m.prepare_commit(table),
        }
    }
}

/// (partition, bucket).
type Bucket = (Vec<u8>, i32);

/// What a delete through deletion vectors commits: one message per changed (partition,
/// bucket), holding only index files, and the rows it newly deletes.
#[derive(Debug, Default)]
pub struct DeletionVectorDelete {
    pub messages: Vec<CommitMessage>,
    pub deleted_rows: u64,
}

/// Mark `positions` (data file name → row positions, as [`read_with_positions`] returned them
/// from snapshot `snapshot_id`) deleted: the commit messages of the new deletion-vector index
/// files (Spark's `PaimonSparkWriter.persistDeletionVectors`). Committed, they conflict with a
/// concurrent change of the same vectors or a compaction of the same files.
pub fn delete_positions(
    table: &FileStoreTable,
    snapshot_id: i64,
    positions: &BTreeMap<String, RoaringBitmap>,
) -> Result<DeletionVectorDelete> {
    if table.is_primary_key() {
        return Err(Error::unsupported(format!(
            "deleting row positions of primary-key table '{}' (write -D rows instead)",
            table.name
        )));
    }
    if !table.options.deletion_vectors()? {
        return Err(Error::invalid(format!(
            "table '{}' does not set 'deletion-vectors.enabled' = true: its rows cannot be \
             deleted through deletion vectors",
            table.name
        )));
    }
    table.check_writable()?;
    let snapshot = table.snapshot_manager().snapshot(snapshot_id)?;
    let live = crate::table::live::live_entries(table, &snapshot)?;
    // (partition, bucket) → (total buckets, live files)
    let mut buckets: BTreeMap<Bucket, (i32, Vec<DataFileMeta>)> = BTreeMap::new();
    let mut where_is: BTreeMap<&str, Bucket> = BTreeMap::new();
    for e in &live {
        where_is.insert(e.file.file_name.as_str(), (e.partition.clone(), e.bucket));
        buckets
            .entry((e.partition.clone(), e.bucket))
            .or_insert((e.total_buckets, vec![]))
            .1
            .push(e.file.clone());
    }
    let mut by_bucket: BTreeMap<Bucket, Vec<(&str, &RoaringBitmap)>> = BTreeMap::new();
    for (file, p) in positions {
        if p.is_empty() {
            continue;
        }
        let at = where_is.get(file.as_str()).ok_or_else(|| {
            Error::invalid(format!(
                "data file {file} is not live in snapshot {snapshot_id} of table '{}'",
                table.name
            ))
        })?;
        by_bucket.entry(at.clone()).or_default().push((file, p));
    }
    let live_index = DeletionVectorsMaintainer::live_index_of(table, Some(&snapshot))?;
    let mut out = DeletionVectorDelete::default();
    for ((partition, bucket), marks) in by_bucket {
        let (total_buckets, files) = &buckets[&(partition.clone(), bucket)];
        let mut m = AppendDvMaintainer::restore(table, &live_index, &partition, bucket, files)?;
        for (file, p) in marks {
            let rows = files
                .iter()
                .find(|f| f.file_name == file)
                .map_or(0, |f| f.row_count);
            if p.max().is_some_and(|x| i64::from(x) >= rows) {
                return Err(Error::invalid(format!(
                    "row position {} is past the end of data file {file} ({rows} rows) of \
                     table '{}'",
                    p.max().unwrap_or(0),
                    table.name
                )));
            }
            let before = m.vector(table, file)?.map_or(0, |v| v.len());
            m.mark(table, file, p)?;
            let after = m.vector(table, file)?.map_or(0, |v| v.len());
            out.deleted_rows += after - before;
        }
        let (new, replaced) = m.prepare_commit(table)?;
        if new.is_empty() && replaced.is_empty() {
            continue;
        }
        out.messages.push(CommitMessage {
            partition: partition.clone(),
            bucket: if table.is_unaware_append() {
                UNAWARE_BUCKET
            } else {
                bucket
            },
            total_buckets: *total_buckets,
            data_increment: DataIncrement {
                new_index_files: new,
                deleted_index_files: replaced,
                ..Default::default()
            },
            compact_increment: Default::default(),
            restored_snapshot: None,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use arrow_array::Int64Array;
    use arrow_schema::{DataType as AT, Field, Schema};

    use super::*;
    use crate::commit::test_support::{commit, live_rows, rows, written};
    use crate::spec::manifest::{live_index_entries, read_index_manifest};
    use crate::table::catalog::FileSystemCatalog;
    use crate::table::new_schema::NewTableSchema;

    /// `p` INT partition, `k` BIGINT; an append table with deletion vectors, bucket-unaware
    /// (`bucket` = None) or with that many buckets.
    fn dv_table(dir: &std::path::Path, bucket: Option<i32>) -> FileStoreTable {
        let cat = FileSystemCatalog::new(dir).unwrap();
        cat.create_database("db", true).unwrap();
        let schema = Schema::new(vec![
            Field::new("p", AT::Int32, false),
            Field::new("k", AT::Int64, false),
        ]);
        let mut opts: BTreeMap<String, String> =
            [("deletion-vectors.enabled".to_string(), "true".to_string())].into();
        match bucket {
            None => opts.insert("bucket".into(), "-1".into()),
            Some(n) => {
                opts.insert("bucket-key".into(), "k".into());
                opts.insert("bucket".into(), n.to_string())
            }
        };
        let s = NewTableSchema::from_arrow(&schema, vec!["p".into()], vec![], opts, None).unwrap();
        cat.create_table("db.t", s, false).unwrap();
        cat.get_table("db.t").unwrap()
    }

    /// The live `k` values, as the table reads (vectors applied) and as
    /// [`read_with_positions`] finds them.
    fn keys(t: &FileStoreTable) -> Vec<i64> {
        let plan = crate::read::scan::TableScan::new(t.clone(), None)
            .plan()
            .unwrap();
        let column = |batches: Vec<RecordBatch>, at: usize| {
            let mut out: Vec<i64> = batches
                .iter()
                .flat_map(|b| {
                    let k = b.column(at).as_any().downcast_ref::<Int64Array>().unwrap();
                    k.values().to_vec()
                })
                .collect();
            out.sort();
            out
        };
        let read = TableRead::new(t.clone(), None, None).unwrap();
        let all = column(read.read_splits(&plan.splits).unwrap(), 1);
        let k = Some(vec!["k".to_string()]);
        let found = column(read_with_positions(t, &plan.splits, k, None).unwrap(), 0);
        assert_eq!(all, found);
        all
    }

    /// `k` values of the rows to delete → their positions, read from the latest snapshot.
    fn positions_of(t: &FileStoreTable, ks: &[i64]) -> (i64, BTreeMap<String, RoaringBitmap>) {
        let sid = t.snapshot_manager().latest_id().unwrap().unwrap();
        let plan = crate::read::scan::TableScan::new(t.clone(), None)
            .with_snapshot(sid)
            .plan()
            .unwrap();
        let lits = ks.iter().map(|k| Some(crate::Datum::BigInt(*k))).collect();
        let f = Predicate::leaf("k", crate::LeafOp::In, lits).unwrap();
        let mut out: BTreeMap<String, RoaringBitmap> = BTreeMap::new();
        for b in read_with_positions(t, &plan.splits, Some(vec![]), Some(&f)).unwrap() {
            assert_eq!(b.num_columns(), 2);
            let files = b.column(0).as_any().downcast_ref::<StringArray>().unwrap();
            let pos = b.column(1).as_any().downcast_ref::<Int64Array>().unwrap();
            for i in 0..b.num_rows() {
                out.entry(files.value(i).to_string())
                    .or_default()
                    .insert(pos.value(i) as u32);
            }
        }
        (sid, out)
    }

    fn delete(t: &FileStoreTable, ks: &[i64]) -> Result<Option<i64>> {
        let (sid, p) = positions_of(t, ks);
        let d = delete_positions(t, sid, &p)?;
        commit(t, &d.messages)
    }

    fn live_index(t: &FileStoreTable) -> Vec<IndexManifestEntry> {
        let s = t.snapshot_manager().latest().unwrap().unwrap();
        let p = t.manifest_dir().join(s.index_manifest.as_ref().unwrap());
        live_index_entries(read_index_manifest(&crate::io::read(&p).unwrap(), &p).unwrap())
    }

    /// Bucket-unaware: index files under bucket 0 of the partition; a change replaces only the
    /// index files holding a changed vector, their other vectors moving to the new file.
    #[test]
    fn unaware_deletes_replace_only_touched_index_files() {
        let dir = tempfile::tempdir().unwrap();
        let t = dv_table(dir.path(), None);
        for i in 0..3 {
            commit(&t, &written(&t, &[rows(1, i * 10..i * 10 + 10)])).unwrap();
        }
        delete(&t, &[1]).unwrap();
        delete(&t, &[11]).unwrap();
        let idx = live_index(&t);
        assert_eq!(idx.len(), 2);
        assert!(idx.iter().all(|e| e.bucket == UNAWARE_BUCKET));
        let second = idx.iter().find(|e| {
            e.dv_ranges.as_ref().unwrap().len() == 1
                && e.dv_ranges.as_ref().unwrap()[0].cardinality == Some(1)
        });
        assert!(second.is_some());
        // rows of the first and third file: the first file's index file is replaced (its
        // vector grows), the second file's stays, the third's vector joins the new file
        delete(&t, &[2, 21]).unwrap();
        let after = live_index(&t);
        assert_eq!(after.len(), 2);
        let by_files: Vec<usize> = after
            .iter()
            .map(|e| e.dv_ranges.as_ref().unwrap().len())
            .collect();
        assert!(
            by_files.contains(&2) && by_files.contains(&1),
            "{by_files:?}"
        );
        let want: Vec<i64> = (0..30).filter(|k| ![1, 2, 11, 21].contains(k)).collect();
        assert_eq!(keys(&t), want);
        let s = t.snapshot_manager().latest().unwrap().unwrap();
        assert_eq!(s.commit_kind, crate::spec::snapshot::CommitKind::Overwrite);
    }

    /// Two deletes computed on the same snapshot: on a bucket-unaware table each writes a new
    /// index file for the same data file, on a bucketed one each replaces the bucket's; the
    /// second to commit conflicts instead of losing the first's rows.
    #[test]
    fn concurrent_deletes_of_one_file_conflict() {
        for bucket in [None, Some(1)] {
            let dir = tempfile::tempdir().unwrap();
            let t = dv_table(dir.path(), bucket);
            commit(&t, &written(&t, &[rows(1, 0..10)])).unwrap();
            let (sid, a) = positions_of(&t, &[3]);
            let (_, b) = positions_of(&t, &[4]);
            let a = delete_positions(&t, sid, &a).unwrap();
            let b = delete_positions(&t, sid, &b).unwrap();
            assert_eq!((a.deleted_rows, b.deleted_rows), (1, 1));
            commit(&t, &a.messages).unwrap();
            let e = commit(&t, &b.messages).unwrap_err();
            assert!(matches!(e, Error::CommitConflict { .. }), "{bucket:?}: {e}");
            assert_eq!(keys(&t), [0, 1, 2, 4, 5, 6, 7, 8, 9]);
        }
    }

    /// A bucketed table (one bucket) whose writers compact once a bucket has 3 files.
    fn compacting_table(dir: &std::path::Path) -> FileStoreTable {
        let opts: BTreeMap<String, String> =
            [("compaction.min.file-num".to_string(), "3".to_string())].into();
        dv_table(dir, Some(1)).copy(&opts).unwrap()
    }

    /// The live deletion-vector index files (none if the snapshot has no index manifest).
    fn vector_files(t: &FileStoreTable) -> usize {
        let s = t.snapshot_manager().latest().unwrap().unwrap();
        t.live_index_entries(s.index_manifest.as_deref())
            .unwrap()
            .len()
    }

    /// Issue 27: a bucketed deletion-vector table's writer restores the bucket's vectors with
    /// its files and compacts as Java's (`BucketedAppendCompactManager` with a
    /// `BucketedDvMaintainer`): the rewrite leaves the deleted rows out, and the bucket's index
    /// file is replaced (here dropped: every vector went with its file) in the same COMPACT
    /// snapshot.
    #[test]
    fn bucketed_writer_compacts_without_the_deleted_rows() {
        let dir = tempfile::tempdir().unwrap();
        let t = compacting_table(dir.path());
        commit(&t, &written(&t, &[rows(1, 0..10)])).unwrap();
        commit(&t, &written(&t, &[rows(1, 10..20)])).unwrap();
        delete(&t, &[3, 15]).unwrap();
        assert_eq!(vector_files(&t), 1);
        let msgs = written(&t, &[rows(1, 20..30)]);
        let c = &msgs[0].compact_increment;
        assert_eq!(c.compact_before.len(), 3);
        assert_eq!(
            c.deleted_index_files.len(),
            1,
            "the bucket's index file is replaced"
        );
        assert!(c.new_index_files.is_empty(), "no vector is left");
        assert_eq!(c.compact_after.iter().map(|f| f.row_count).sum::<i64>(), 28);
        commit(&t, &msgs).unwrap();
        let s = t.snapshot_manager().latest().unwrap().unwrap();
        assert_eq!(s.commit_kind, crate::spec::snapshot::CommitKind::Compact);
        let want: Vec<i64> = (0..30).filter(|k| ![3, 15].contains(k)).collect();
        assert_eq!(keys(&t), want);
        assert_eq!(vector_files(&t), 0);
        assert_eq!(
            live_rows(&t),
            28,
            "the deleted rows are gone from the files"
        );
        // deletes go on, on the compacted file; the next compaction drops them too
        delete(&t, &[0, 29]).unwrap();
        commit(&t, &written(&t, &[rows(1, 30..35)])).unwrap();
        commit(&t, &written(&t, &[rows(1, 35..40)])).unwrap();
        let want: Vec<i64> = (1..40).filter(|k| ![3, 15, 29].contains(k)).collect();
        assert_eq!(keys(&t), want);
        assert_eq!(live_rows(&t), want.len() as i64);
        assert_eq!(vector_files(&t), 0);
    }

    /// Issue 27: a writer's compaction that races a delete of its bucket (a vector committed
    /// after the writer restored the bucket, for a file it rewrote) is refused as a conflict
    /// before anything of the commit lands (the rows too: no APPEND snapshot), whether the
    /// bucket had vectors when the writer restored it (its index file was replaced) or not (an
    /// input got its first vector).
    #[test]
    fn bucketed_writer_compaction_racing_a_delete_conflicts() {
        for vectors_before in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let t = compacting_table(dir.path());
            commit(&t, &written(&t, &[rows(1, 0..10)])).unwrap();
            commit(&t, &written(&t, &[rows(1, 10..20)])).unwrap();
            if vectors_before {
                delete(&t, &[3]).unwrap();
            }
            let msgs = written(&t, &[rows(1, 20..30)]);
            assert_eq!(msgs[0].compact_increment.compact_before.len(), 3);
            delete(&t, &[15]).unwrap();
            let latest = t.snapshot_manager().latest_id().unwrap();
            let e = commit(&t, &msgs).unwrap_err();
            assert!(
                matches!(&e, Error::CommitConflict { .. }),
                "{vectors_before}: {e}"
            );
            assert_eq!(t.snapshot_manager().latest_id().unwrap(), latest);
            let want: Vec<i64> = (0..20)
                .filter(|k| *k != 15 && !(vectors_before && *k == 3))
                .collect();
            assert_eq!(keys(&t), want, "{vectors_before}");
            // written again against the table as it is now, the rows land and compact
            commit(&t, &written(&t, &[rows(1, 20..30)])).unwrap();
            assert_eq!(keys(&t).len(), want.len() + 10);
            assert_eq!(live_rows(&t), want.len() as i64 + 10);
        }
    }

    /// `compaction_plan` reads the vectors: a bucket-unaware table's large file whose vector
    /// marks over `compaction.delete-ratio-threshold` of its rows is a `deletion-vectors` pick,
    /// the one `compact()` makes.
    #[test]
    fn compaction_plan_shows_picks_by_vectors() {
        let dir = tempfile::tempdir().unwrap();
        let opts: BTreeMap<String, String> =
            [("target-file-size".to_string(), "100 b".to_string())].into();
        let t = dv_table(dir.path(), None).copy(&opts).unwrap();
        commit(&t, &written(&t, &[rows(1, 0..10)])).unwrap();
        commit(&t, &written(&t, &[rows(1, 10..20)])).unwrap();
        let plan = crate::compact::plan::compaction_plan(&t).unwrap();
        assert!(plan[0].picks.is_empty(), "{plan:?}");
        delete(&t, &[1, 2, 3]).unwrap();
        let plan = crate::compact::plan::compaction_plan(&t).unwrap();
        let picks: Vec<(usize, i64, &str)> = plan[0]
            .picks
            .iter()
            .map(|p| (p.files, p.rows, p.reason.as_str()))
            .collect();
        assert_eq!(picks, [(1, 10, "deletion-vectors")]);
        assert!(
            plan[0]
                .explanation
                .contains("1 files have deletion vectors (3 deleted rows"),
            "{}",
            plan[0].explanation
        );
    }

    /// A position past the file's rows or a file not live is refused, naming the file.
    #[test]
    fn bad_positions_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let t = dv_table(dir.path(), None);
        commit(&t, &written(&t, &[rows(1, 0..3)])).unwrap();
        let (sid, p) = positions_of(&t, &[0]);
        let file = p.keys().next().unwrap().clone();
        let past: BTreeMap<String, RoaringBitmap> =
            [(file.clone(), [7u32].into_iter().collect())].into();
        let e = delete_positions(&t, sid, &past).unwrap_err();
        assert!(
            e.to_string().contains("past the end") && e.to_string().contains(&file),
            "{e}"
        );
        let gone: BTreeMap<String, RoaringBitmap> =
            [("data-x.parquet".to_string(), [0u32].into_iter().collect())].into();
        let e = delete_positions(&t, sid, &gone).unwrap_err();
        assert!(e.to_string().contains("not live"), "{e}");
    }
}
