use std::collections::BTreeMap;
use std::sync::Mutex;

use arrow::array::{
    Array, ArrayData, Int32Array, RecordBatch, RecordBatchIterator, RecordBatchReader,
};
use arrow::ffi_stream::RecordBatchStreamReader;
use arrow_pyarrow::{FromPyArrow, PyArrowType};
use arrow_schema::{ArrowError, DataType, Schema, SchemaRef};
use paimon_rs_core::{
    datum_from_arrow, datums_to_arrow, deserialize_row,
    partition_bucket_of as partition_bucket_of_core, table_arrow_schema, BucketAssigner,
    CommitMessage as CoreMessage, DataField, DataFileMeta as CoreFileMeta, Error, FileStoreCommit,
    FileStoreTable, Overwrite, PartitionSpec, RowKind, Split as CoreSplit, TableRead as CoreRead,
    TableScan, TableWrite as CoreWrite,
};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::errors::IntoPy;
use crate::predicate;

#[pyclass(module = "paimon_rs._core", frozen)]
pub struct Table {
    inner: FileStoreTable,
}

impl Table {
    pub fn from_core(inner: FileStoreTable) -> Self {
        Table { inner }
    }

    pub fn core(&self) -> &FileStoreTable {
        &self.inner
    }
}

/// Removed files with their sizes, and removed directories.
type RemovedOrphans = (Vec<(String, u64)>, Vec<String>);

fn lock<T>(m: &Mutex<T>) -> PyResult<std::sync::MutexGuard<'_, T>> {
    m.lock()
        .map_err(|_| pyo3::exceptions::PyRuntimeError::new_err("poisoned lock"))
}

#[pymethods]
impl Table {
    /// Open the table stored at `path` (its latest schema) with `options` on top (dynamic
    /// options, as `copy`): how a table handle is rebuilt after pickling, e.g. in a Spark task.
    #[staticmethod]
    fn open(
        py: Python<'_>,
        name: &str,
        path: &str,
        options: BTreeMap<String, String>,
    ) -> PyResult<Table> {
        let path = path.trim_end_matches('/');
        let inner = py
            .detach(|| -> Result<FileStoreTable, Error> {
                let store = paimon_rs_core::store_options(&options);
                paimon_rs_core::configure_store(path, &store)?;
                let t = FileStoreTable::open(name, std::path::Path::new(path))?;
                if options.is_empty() {
                    Ok(t)
                } else {
                    t.copy(&options)
                }
            })
            .py_err()?;
        Ok(Table { inner })
    }

    #[getter]
    fn name(&self) -> String {
        self.inner.name.clone()
    }
    #[getter]
    fn path(&self) -> String {
        self.inner.path.to_string_lossy().into_owned()
    }
    #[getter]
    fn partition_keys(&self) -> Vec<String> {
        self.inner.schema.partition_keys.clone()
    }
    #[getter]
    fn primary_keys(&self) -> Vec<String> {
        self.inner.schema.primary_keys.clone()
    }
    #[getter]
    fn options(&self) -> BTreeMap<String, String> {
        self.inner.schema.options.clone()
    }
    /// The roots `data-file.external-paths` sends new data files to (local directories without
    /// `file:`, object store URIs) and how many levels of hash directories a file has below its
    /// bucket directory there (4 with `entropy-inject`, else 0); None when new files stay in the
    /// table's directory. Parsed once with the table's options (no I/O).
    #[getter]
    fn external_paths(&self) -> Option<(Vec<String>, usize)> {
        self.inner.options.external_paths.as_ref().map(|e| {
            let roots = e.root_paths();
            let roots = roots.iter().map(|r| r.to_string_lossy().into_owned());
            (roots.collect(), e.hash_levels())
        })
    }
    #[getter]
    fn schema_json(&self) -> String {
        self.inner.schema.to_json_string()
    }
    #[getter]
    fn comment(&self) -> Option<String> {
        self.inner.schema.comment.clone()
    }
    /// The table's rows as Arrow (no field-id metadata).
    fn arrow_schema(&self) -> PyArrowType<Schema> {
        let s = table_arrow_schema(&self.inner);
        let fields: Vec<_> = s
            .fields()
            .iter()
            .map(|f| {
                f.as_ref()
                    .clone()
                    .with_metadata(std::collections::HashMap::new())
            })
            .collect();
        PyArrowType(Schema::new(fields))
    }

    /// A copy with dynamic options (not stored in the table).
    fn copy(&self, py: Python<'_>, options: BTreeMap<String, String>) -> PyResult<Table> {
        // a branch or a time-travelled schema is read from storage
        let inner = py.detach(|| self.inner.copy(&options)).py_err()?;
        Ok(Table { inner })
    }

    /// `copy` keeping this table's schema when the options travel to a past snapshot.
    fn copy_without_time_travel(
        &self,
        py: Python<'_>,
        options: BTreeMap<String, String>,
    ) -> PyResult<Table> {
        let inner = py
            .detach(|| self.inner.copy_without_time_travel(&options))
            .py_err()?;
        Ok(Table { inner })
    }

    /// A writer; `ignore_previous_files` (an overwrite's writer) compacts only its new files.
    #[pyo3(signature = (ignore_previous_files=false))]
    fn new_write(&self, ignore_previous_files: bool) -> PyResult<TableWrite> {
        let mut w = CoreWrite::new(self.inner.clone()).py_err()?;
        w.ignore_previous_files(ignore_previous_files).py_err()?;
        Ok(TableWrite {
            inner: Mutex::new(w),
        })
    }

    fn new_commit(&self, commit_user: String) -> TableCommit {
        TableCommit {
            inner: FileStoreCommit::new(self.inner.clone(), commit_user),
        }
    }

    /// The splits of a read. `levels` of a primary-key table: None, a batch read's; `"top"`,
    /// the top level only (the `$ro` system table); `"all"`, level 0 too where a batch read
    /// hides it (deletion-vector and first-row tables); `"above-zero"`, every level but 0 (the
    /// last two for a streaming read's first full scan).
    /// `row_id_slice`: a data-evolution table's rows at those positions (pypaimon's
    /// `with_slice`, counted before the filter's statistics prune).
    #[pyo3(signature = (filter=None, snapshot_id=None, levels=None, row_id_slice=None))]
    fn plan(
        &self,
        py: Python<'_>,
        filter: Option<Bound<'_, PyAny>>,
        snapshot_id: Option<i64>,
        levels: Option<&str>,
        row_id_slice: Option<(i64, i64)>,
    ) -> PyResult<(Option<i64>, Vec<Split>)> {
        let levels = match levels {
            None => Levels::Batch,
            Some("top") => Levels::Top,
            Some("all") => Levels::All,
            Some("above-zero") => Levels::AboveZero,
            Some(other) => {
                return Err(Error::invalid(format!(
                    "plan of {}: levels must be 'top', 'all' or 'above-zero', not '{other}'",
                    self.inner.name
                )))
                .py_err()
            }
        };
        let (id, splits, _) =
            plan_counted(self, py, filter, snapshot_id, levels, false, row_id_slice)?;
        Ok((id, splits))
    }

    /// `plan`, with what each pruning stage kept (explain): (live files of the snapshot,
    /// files after the partition filter, after bucket selection (None: none), after the
    /// statistics).
    #[pyo3(signature = (filter=None, snapshot_id=None))]
    fn plan_with_stats(
        &self,
        py: Python<'_>,
        filter: Option<Bound<'_, PyAny>>,
        snapshot_id: Option<i64>,
    ) -> PyResult<PlanWithStats> {
        plan_counted(self, py, filter, snapshot_id, Levels::Batch, true, None)
    }

    /// A read of splits (`row_kinds`: a primary-key table's records keep their kind as the
    /// leading `rowkind` column, retractions included: the `$audit_log` system table).
    #[pyo3(signature = (projection=None, filter=None, row_kinds=false))]
    fn new_read(
        &self,
        projection: Option<Vec<String>>,
        filter: Option<Bound<'_, PyAny>>,
        row_kinds: bool,
    ) -> PyResult<TableRead> {
        let pred = filter
            .map(|f| predicate::convert(&self.inner, &f))
            .transpose()?;
        let read = match row_kinds {
            true => CoreRead::with_row_kinds(self.inner.clone(), projection, pred),
            false => CoreRead::new(self.inner.clone(), projection, pred),
        };
        Ok(TableRead {
            inner: read.py_err()?,
        })
    }

    /// The rows of snapshot `snapshot_id` of an append table that `filter` selects (and no
    /// deletion vector removed), with the `projection` columns (all if None) and where each
    /// row is: `_FILE_NAME`, `_ROW_POSITION` (GIL released).
    #[pyo3(signature = (snapshot_id, filter=None, projection=None))]
    fn read_with_positions(
        &self,
        py: Python<'_>,
        snapshot_id: i64,
        filter: Option<Bound<'_, PyAny>>,
        projection: Option<Vec<String>>,
    ) -> PyResult<PyArrowType<Box<dyn RecordBatchReader + Send>>> {
        let pred = filter
            .map(|f| predicate::convert(&self.inner, &f))
            .transpose()?;
        let batches = crate::pool::detach(py, || {
            let plan = TableScan::new(self.inner.clone(), pred.clone())
                .with_snapshot(snapshot_id)
                .plan()?;
            paimon_rs_core::read_with_positions(
                &self.inner,
                &plan.splits,
                projection,
                pred.as_ref(),
            )
        })
        .py_err()?;
        let schema = batches[0].schema();
        let it = RecordBatchIterator::new(batches.into_iter().map(Ok), schema);
        Ok(PyArrowType(Box::new(it)))
    }

    /// The commit messages dropping the partitions of snapshot `snapshot_id` that the
    /// partition-only predicate `filter` matches (a partition delete: committed, it is an
    /// OVERWRITE that must replace exactly the files they list; GIL released; nothing is
    /// committed).
    fn partition_delete_messages(
        &self,
        py: Python<'_>,
        snapshot_id: i64,
        filter: Bound<'_, PyAny>,
    ) -> PyResult<Vec<CommitMessage>> {
        let pred = predicate::convert(&self.inner, &filter)?;
        let ms = crate::pool::detach(py, || {
            paimon_rs_core::partition_delete_messages(&self.inner, snapshot_id, &pred)
        })
        .py_err()?;
        Ok(ms.into_iter().map(CommitMessage::from_core).collect())
    }

    /// Mark rows deleted through deletion vectors: `positions` holds `_FILE_NAME` and
    /// `_ROW_POSITION` of rows read from snapshot `snapshot_id`. Returns the commit messages
    /// of the new deletion-vector index files and the number of rows newly deleted (GIL
    /// released; nothing is committed).
    fn delete_positions(
        &self,
        py: Python<'_>,
        snapshot_id: i64,
        positions: PyArrowType<RecordBatch>,
    ) -> PyResult<(Vec<CommitMessage>, u64)> {
        let batch = positions.0;
        let col = |name: &str| {
            batch.column_by_name(name).cloned().ok_or_else(|| {
                Error::invalid(format!(
                    "delete_positions: the batch has no column '{name}'"
                ))
            })
        };
        let (files, rows) = (col("_FILE_NAME").py_err()?, col("_ROW_POSITION").py_err()?);
        let files = arrow::compute::cast(&files, &DataType::Utf8)
            .map_err(Error::from)
            .py_err()?;
        let rows = arrow::compute::cast(&rows, &DataType::Int64)
            .map_err(Error::from)
            .py_err()?;
        let (files, rows) = (
            files.as_any().downcast_ref::<arrow::array::StringArray>(),
            rows.as_any().downcast_ref::<arrow::array::Int64Array>(),
        );
        let (Some(files), Some(rows)) = (files, rows) else {
            return Err(Error::Internal("delete_positions: cast failed".into())).py_err();
        };
        let mut marks: BTreeMap<String, roaring::RoaringBitmap> = BTreeMap::new();
        for i in 0..batch.num_rows() {
            let (Some(f), Some(p)) = (
                files.is_valid(i).then(|| files.value(i)),
                rows.is_valid(i).then(|| rows.value(i)),
            ) else {
                return Err(Error::invalid(
                    "delete_positions: a null file name or position",
                ))
                .py_err();
            };
            let p = u32::try_from(p)
                .map_err(|_| Error::invalid(format!("delete_positions: row position {p} of {f}")))
                .py_err()?;
            marks.entry(f.to_string()).or_default().insert(p);
        }
        let out = crate::pool::detach(py, || {
            paimon_rs_core::delete_positions(&self.inner, snapshot_id, &marks)
        })
        .py_err()?;
        Ok((
            out.messages
                .into_iter()
                .map(CommitMessage::from_core)
                .collect(),
            out.deleted_rows,
        ))
    }

    /// The file groups of snapshot `snapshot_id` of a data-evolution table, ordered by
    /// `first_row_id`: `(first_row_id, row_count)` pairs (GIL released).
    fn row_id_groups(&self, py: Python<'_>, snapshot_id: i64) -> PyResult<Vec<(i64, i64)>> {
        let groups = crate::pool::detach(py, || {
            paimon_rs_core::row_id_groups(&self.inner, snapshot_id)
        })
        .py_err()?;
        Ok(groups
            .into_iter()
            .map(|g| (g.first_row_id, g.row_count))
            .collect())
    }

    /// Write the update file of the file group at `first_row_id` of snapshot `snapshot_id`:
    /// `data` holds the group's rows in `_ROW_ID` order, the updated columns only. Its commit
    /// message (nothing committed; GIL released). `updated`: the positions in the group of the
    /// rows the update sets (needed for BLOB columns, whose other rows are not read).
    #[pyo3(signature = (snapshot_id, first_row_id, data, updated=None))]
    fn write_row_id_update(
        &self,
        py: Python<'_>,
        snapshot_id: i64,
        first_row_id: i64,
        data: PyArrowType<RecordBatch>,
        updated: Option<Vec<usize>>,
    ) -> PyResult<CommitMessage> {
        let batch = data.0;
        let m = crate::pool::detach(py, || {
            paimon_rs_core::write_row_id_update(
                &self.inner,
                snapshot_id,
                first_row_id,
                &batch,
                updated.as_deref(),
            )
        })
        .py_err()?;
        Ok(CommitMessage::from_core(m))
    }

    fn latest_snapshot_id(&self, py: Python<'_>) -> PyResult<Option<i64>> {
        py.detach(|| self.inner.snapshot_manager().latest_id())
            .py_err()
    }

    /// Compact every bucket (of the partitions given as one-row batches of partition values,
    /// all if None): `full` = each bucket into one run at the top level, else what the
    /// universal picker chooses. One COMPACT snapshot; its id, or None if nothing was compacted.
    /// `progress`: called with the running totals (`compact_progress::compact_with_progress`).
    #[pyo3(signature = (full=true, partitions=None, progress=None))]
    fn compact(
        &self,
        py: Python<'_>,
        full: bool,
        partitions: Option<Vec<Bound<'_, PyAny>>>,
        progress: Option<Bound<'_, PyAny>>,
    ) -> PyResult<Option<i64>> {
        let specs = partition_specs(&self.inner, partitions, "compact")?;
        if let Some(cb) = progress {
            return crate::compact_progress::compact_with_progress(
                py,
                &self.inner,
                full,
                specs.as_deref(),
                &cb,
            );
        }
        crate::logbridge::flush(py);
        let r = crate::pool::detach(py, || {
            paimon_rs_core::compact_table(&self.inner, full, specs.as_deref())
        });
        crate::logbridge::flush(py);
        r.py_err()
    }

    /// Sort compaction (#28): the live files of the selected partitions (one-row batches of
    /// partition values, all if None) rewritten in `order_strategy` order ("order", "zorder",
    /// "hilbert") over `order_by`, committed as one OVERWRITE snapshot of exactly the files
    /// read. Its id, or None if there were no files.
    #[pyo3(signature = (order_strategy, order_by, partitions=None))]
    fn sort_compact(
        &self,
        py: Python<'_>,
        order_strategy: String,
        order_by: Vec<String>,
        partitions: Option<Vec<Bound<'_, PyAny>>>,
    ) -> PyResult<Option<i64>> {
        let specs = partition_specs(&self.inner, partitions, "sort_compact")?;
        crate::logbridge::flush(py);
        let r = crate::pool::detach(py, || {
            paimon_rs_core::sort_compact_table(
                &self.inner,
                &order_strategy,
                &order_by,
                specs.as_deref(),
            )
        });
        crate::logbridge::flush(py);
        r.py_err()
    }

    /// Java's z-order (`ZIndexer`) or hilbert (`HilbertIndexer`) index bytes of each row of
    /// `batch` (a pyarrow RecordBatch of the table's columns) over `order_by`; for "order",
    /// the comparable row encoding of the order columns.
    fn sort_index<'py>(
        &self,
        py: Python<'py>,
        order_strategy: String,
        order_by: Vec<String>,
        batch: PyArrowType<RecordBatch>,
    ) -> PyResult<Vec<Bound<'py, PyBytes>>> {
        let batch = batch.0;
        let keys = crate::pool::detach(py, || {
            let spec = paimon_rs_core::SortSpec::new(&self.inner, &order_strategy, &order_by)?;
            spec.index_bytes(&batch)
        })
        .py_err()?;
        Ok(keys.iter().map(|k| PyBytes::new(py, k)).collect())
    }

    /// Remove orphan files last modified before `older_than_millis` (epoch millis); returns the
    /// removed files with their sizes and the removed empty directories (what would be removed,
    /// with `dry_run`).
    #[pyo3(signature = (older_than_millis, dry_run=false))]
    fn remove_orphan_files(
        &self,
        py: Python<'_>,
        older_than_millis: i64,
        dry_run: bool,
    ) -> PyResult<RemovedOrphans> {
        let r = crate::pool::detach(py, || {
            paimon_rs_core::remove_orphan_files(&self.inner, older_than_millis, dry_run)
        })
        .py_err()?;
        let path = |p: &std::path::Path| p.to_string_lossy().into_owned();
        Ok((
            r.files.iter().map(|f| (path(&f.path), f.bytes)).collect(),
            r.directories.iter().map(|d| path(d)).collect(),
        ))
    }

    /// Create tag `name` on a snapshot (the latest if None).
    #[pyo3(signature = (name, snapshot_id=None, time_retained=None, ignore_if_exists=false))]
    fn create_tag(
        &self,
        py: Python<'_>,
        name: &str,
        snapshot_id: Option<i64>,
        time_retained: Option<&str>,
        ignore_if_exists: bool,
    ) -> PyResult<()> {
        let r = crate::pool::detach(py, || {
            paimon_rs_core::create_tag(
                &self.inner,
                name,
                snapshot_id,
                time_retained,
                ignore_if_exists,
            )
        });
        crate::logbridge::flush(py);
        r.py_err()
    }

    /// Delete tag `name`; the files only it referenced go too. None if there was no such tag.
    fn delete_tag(&self, py: Python<'_>, name: &str) -> PyResult<Option<Reclaimed>> {
        let r = crate::pool::detach(py, || paimon_rs_core::delete_tag(&self.inner, name));
        crate::logbridge::flush(py);
        Ok(r.py_err()?.map(|r| reclaimed(&r)))
    }

    /// Tags as (name, snapshot id, snapshot commit millis, create time ISO, retained millis).
    fn list_tags(&self, py: Python<'_>) -> PyResult<Vec<TagRow>> {
        Ok(py
            .detach(|| paimon_rs_core::list_tags(&self.inner))
            .py_err()?
            .into_iter()
            .map(|t| {
                (
                    t.name,
                    t.snapshot.id,
                    t.snapshot.time_millis,
                    t.create_time
                        .map(|c| c.format("%Y-%m-%dT%H:%M:%S%.f").to_string()),
                    t.time_retained_ms,
                )
            })
            .collect())
    }

    /// Roll back to a snapshot id or a tag name.
    #[pyo3(signature = (snapshot_id=None, tag=None))]
    fn rollback_to(
        &self,
        py: Python<'_>,
        snapshot_id: Option<i64>,
        tag: Option<String>,
    ) -> PyResult<Reclaimed> {
        let target = match (snapshot_id, tag) {
            (Some(id), None) => paimon_rs_core::RollbackTarget::Snapshot(id),
            (None, Some(t)) => paimon_rs_core::RollbackTarget::Tag(t),
            _ => {
                return Err(crate::errors::to_py(Error::invalid(
                    "rollback_to: give a snapshot id or a tag name",
                )))
            }
        };
        let r = crate::pool::detach(py, || paimon_rs_core::rollback_to(&self.inner, &target));
        crate::logbridge::flush(py);
        Ok(reclaimed(&r.py_err()?))
    }

    /// Expire snapshots; each argument overrides the table option of the same meaning.
    #[pyo3(signature = (retain_min=None, retain_max=None, older_than_ms=None, max_deletes=None, now_ms=None))]
    fn expire_snapshots(
        &self,
        py: Python<'_>,
        retain_min: Option<i64>,
        retain_max: Option<i64>,
        older_than_ms: Option<i64>,
        max_deletes: Option<i64>,
        now_ms: Option<i64>,
    ) -> PyResult<Reclaimed> {
        let mut c = paimon_rs_core::ExpireConfig::from_options(&self.inner.options.raw)
            .map_err(|e| e.with_table(&self.inner.name))
            .py_err()?;
        if let Some(v) = retain_min {
            c.num_retained_min = v;
        }
        if let Some(v) = retain_max {
            c.num_retained_max = v;
        }
        if let Some(v) = older_than_ms {
            c.time_retained_ms = v;
        }
        if let Some(v) = max_deletes {
            c.expire_limit = v;
        }
        let now = now_ms.unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_millis() as i64)
                .unwrap_or(0)
        });
        let r = crate::pool::detach(py, || {
            paimon_rs_core::expire_snapshots(&self.inner, &c, now)
        });
        crate::logbridge::flush(py);
        Ok(reclaimed(&r.py_err()?))
    }
}

/// (snapshot ids deleted, [(path, bytes)] of the other files deleted, long-lived changelog ids
/// expired).
pub(crate) type Reclaimed = (Vec<i64>, Vec<(String, u64)>, Vec<i64>);
type TagRow = (String, i64, i64, Option<String>, Option<i64>);

pub(crate) fn reclaimed(r: &paimon_rs_core::Reclaimed) -> Reclaimed {
    (
        r.snapshots.clone(),
        r.files
            .iter()
            .map(|(p, b)| (p.to_string_lossy().into_owned(), *b))
            .collect(),
        r.changelogs.clone(),
    )
}

#[pyclass(module = "paimon_rs._core")]
pub struct TableWrite {
    inner: Mutex<CoreWrite>,
}

impl TableWrite {
    /// Import an Arrow stream and write its batches, every row of kind `kind` when given
    /// (`TableWrite::write_batches_as`). Every batch is checked before any is buffered, so a
    /// bad batch leaves nothing behind; a stream without batches (an empty table) is checked
    /// like any other.
    fn write_stream_as(
        &self,
        py: Python<'_>,
        data: &Bound<'_, PyAny>,
        kind: Option<RowKind>,
    ) -> PyResult<()> {
        let reader = RecordBatchStreamReader::from_pyarrow_bound(data)?;
        let schema = reader.schema();
        let mut guard = lock(&self.inner)?;
        let w: &mut CoreWrite = &mut guard;
        crate::logbridge::flush(py);
        let r = crate::pool::detach(py, || -> Result<(), Error> {
            let mut batches: Vec<RecordBatch> = reader
                .collect::<Result<_, ArrowError>>()
                .map_err(|e| import_error(w, &schema, e))?;
            if batches.is_empty() {
                batches.push(RecordBatch::new_empty(schema));
            }
            w.write_batches_as(&batches, kind)
        });
        crate::logbridge::flush(py);
        r.py_err()
    }
}

#[pymethods]
impl TableWrite {
    /// Write every batch of an Arrow stream (any object with `__arrow_c_stream__`).
    fn write_stream(&self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<()> {
        self.write_stream_as(py, data, None)
    }

    /// Write every batch of an Arrow stream with every row of row kind `kind` (`+I`, `-U`,
    /// `+U`, `-D`), whatever the table's `rowkind.field` says: the rows of a delete or a merge.
    fn write_stream_kind(
        &self,
        py: Python<'_>,
        data: &Bound<'_, PyAny>,
        kind: &str,
    ) -> PyResult<()> {
        let kind = RowKind::from_short_string(kind)
            .ok_or_else(|| {
                Error::invalid(format!("row kind '{kind}': expected one of +I, -U, +U, -D"))
            })
            .py_err()?;
        self.write_stream_as(py, data, Some(kind))
    }

    /// Write one record batch (any object with `__arrow_c_array__`).
    fn write_batch(&self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<()> {
        let batch = RecordBatch::from_pyarrow_bound(data)?;
        let mut guard = lock(&self.inner)?;
        let w: &mut CoreWrite = &mut guard;
        crate::logbridge::flush(py);
        let r = crate::pool::detach(py, || write_all(w, &[batch]));
        crate::logbridge::flush(py);
        r.py_err()
    }

    /// Write one record batch whose rows go to the dynamic buckets `buckets` (a pyarrow int32
    /// array, one per row) an assign stage chose (`DynamicAssignTask`): a bucket writer of a
    /// distributed write of a dynamic-bucket table. `kinds` (a pyarrow int8 array of row kinds):
    /// the rows of a cross-partition upsert table as its assign stage routed them
    /// (`CrossPartitionAssignTask`).
    #[pyo3(signature = (data, buckets, kinds=None))]
    fn write_assigned(
        &self,
        py: Python<'_>,
        data: &Bound<'_, PyAny>,
        buckets: &Bound<'_, PyAny>,
        kinds: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let batch = RecordBatch::from_pyarrow_bound(data)?;
        let buckets = ArrayData::from_pyarrow_bound(buckets)?;
        if buckets.data_type() != &DataType::Int32 {
            return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                "buckets: an int32 array expected, got {}",
                buckets.data_type()
            )));
        }
        let buckets = Int32Array::from(buckets);
        let kinds = match kinds {
            Some(k) => {
                let k = ArrayData::from_pyarrow_bound(k)?;
                if k.data_type() != &DataType::Int8 {
                    return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                        "kinds: an int8 array expected, got {}",
                        k.data_type()
                    )));
                }
                Some(arrow::array::Int8Array::from(k))
            }
            None => None,
        };
        let mut guard = lock(&self.inner)?;
        let w: &mut CoreWrite = &mut guard;
        crate::logbridge::flush(py);
        let r = crate::pool::detach(py, || match &kinds {
            Some(k) => w.write_assigned_rows(&batch, &buckets, k),
            None => w.write_assigned(&batch, &buckets),
        });
        crate::logbridge::flush(py);
        r.py_err()
    }

    /// Restore from snapshot `snapshot_id` (None: the empty table) instead of the latest one;
    /// before the first write.
    fn restore_from(&self, py: Python<'_>, snapshot_id: Option<i64>) -> PyResult<()> {
        let mut guard = lock(&self.inner)?;
        let w: &mut CoreWrite = &mut guard;
        crate::pool::detach(py, || w.restore_from(snapshot_id)).py_err()
    }

    /// `with_write_type` of a data-evolution table: the files hold only `cols` and name them
    /// in `write_cols` (`TableWrite::set_write_cols`). Before any row is written.
    fn set_write_cols(&self, cols: Vec<String>) -> PyResult<()> {
        lock(&self.inner)?.set_write_cols(&cols).py_err()
    }

    /// Name the hash index files this writer writes `prefix<uuid>-0` (dynamic-bucket tables).
    fn set_index_file_prefix(&self, prefix: &str) -> PyResult<()> {
        lock(&self.inner)?.set_index_file_prefix(prefix);
        Ok(())
    }

    /// A stream write: primary-key buckets compact in the background (Java's
    /// `MergeTreeWriter` with its compaction executor); see `TableWrite::set_async_compaction`.
    fn set_async_compaction(&self, py: Python<'_>, on: bool) -> PyResult<()> {
        // turning it off waits for running compactions: without the GIL
        py.detach(|| lock(&self.inner).and_then(|mut w| w.set_async_compaction(on).py_err()))
    }

    /// Whether this write's primary-key buckets compact in the background now.
    fn compacts_in_background(&self) -> PyResult<bool> {
        Ok(lock(&self.inner)?.compacts_in_background())
    }

    /// Flush and compact; `commit_identifier`: the identifier the commit will carry (a
    /// streaming write's), which decides whether a `full-compaction` table's commit compacts
    /// fully (None: a batch commit, which always does and waits for compaction).
    /// `wait_compaction` (a streaming write's, Java's `prepareCommit(waitCompaction, _)`):
    /// with compaction in the background, wait for the buckets' compactions.
    #[pyo3(signature = (commit_identifier=None, wait_compaction=true))]
    fn prepare_commit(
        &self,
        py: Python<'_>,
        commit_identifier: Option<i64>,
        wait_compaction: bool,
    ) -> PyResult<Vec<CommitMessage>> {
        let mut guard = lock(&self.inner)?;
        let w: &mut CoreWrite = &mut guard;
        crate::logbridge::flush(py);
        let msgs = crate::pool::detach(py, || match commit_identifier {
            Some(id) => w.prepare_commit_with(id, wait_compaction),
            None => w.prepare_commit(),
        });
        crate::logbridge::flush(py);
        let msgs = msgs.py_err()?;
        Ok(msgs.into_iter().map(CommitMessage::from_core).collect())
    }

    /// Drop buffered rows and delete every file no commit references.
    fn abort(&self, py: Python<'_>) -> PyResult<()> {
        // deletes files: without the GIL (the lock is taken there too, so a thread waiting for
        // it never holds the GIL)
        py.detach(|| lock(&self.inner).map(|mut w| w.abort()))
    }

    /// Release buffers and spill files (after prepare_commit the files belong to the commit).
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| lock(&self.inner).map(|mut w| w.close()))
    }

    /// Arrow memory held by the write buffers.
    fn memory_size(&self) -> PyResult<usize> {
        Ok(lock(&self.inner)?.memory_size())
    }

    /// Spill files currently held and the spill directory (None before the first spill).
    fn spill_info(&self) -> PyResult<(usize, Option<String>)> {
        let w = lock(&self.inner)?;
        Ok((
            w.spill_count(),
            w.spill_dir().map(|p| p.to_string_lossy().into_owned()),
        ))
    }

    fn buffered_rows(&self) -> PyResult<usize> {
        Ok(lock(&self.inner)?.buffered_rows())
    }
}

/// An Arrow stream whose batches cannot be imported. A column of Arrow type null (polars'
/// `Null` dtype: only missing values, no type) is the usual cause: name it and say what to do.
fn import_error(w: &CoreWrite, schema: &SchemaRef, e: ArrowError) -> Error {
    let table = w.table();
    let nulls: Vec<String> = schema
        .fields()
        .iter()
        .filter(|f| f.data_type() == &DataType::Null)
        .map(|f| match table.schema.field(f.name()) {
            Some(t) => format!("'{}' (cast it to {})", f.name(), t.data_type),
            None => format!("'{}' (not a column of the table)", f.name()),
        })
        .collect();
    if nulls.is_empty() {
        return e.into();
    }
    Error::schema(format!(
        "{} {} {} Arrow type null (only missing values, no type; e.g. polars' Null dtype) \
         and could not be imported ({e}); cast the column to the table's type before writing, \
         e.g. in polars df.with_columns(pl.col(name).cast(dtype))",
        if nulls.len() == 1 {
            "column"
        } else {
            "columns"
        },
        nulls.join(", "),
        if nulls.len() == 1 { "has" } else { "have" },
    ))
    .with_table(&table.name)
}

/// Validate all batches first (a failing batch must not leave earlier ones buffered), then
/// buffer them.
fn write_all(w: &mut CoreWrite, batches: &[RecordBatch]) -> Result<(), Error> {
    w.write_batches(batches)
}

/// A commit message. Behind a lock because pypaimon's tests (and users of data evolution) set
/// `first_row_id` on the files of `new_files` before committing, and that must reach the commit.
#[pyclass(module = "paimon_rs._core", frozen, from_py_object)]
pub struct CommitMessage {
    inner: Mutex<CoreMessage>,
}

impl Clone for CommitMessage {
    /// A deep copy of the message as it is now (extracting one to commit takes its current files).
    fn clone(&self) -> Self {
        CommitMessage::from_core(self.core().clone())
    }
}

impl CommitMessage {
    pub fn from_core(inner: CoreMessage) -> Self {
        CommitMessage {
            inner: Mutex::new(inner),
        }
    }
    pub fn into_core(self) -> CoreMessage {
        self.inner.into_inner().unwrap_or_else(|p| p.into_inner())
    }
    /// The message; a lock poisoned by a panic elsewhere still holds a whole message (the only
    /// writer sets one field), so it is used as it is.
    fn core(&self) -> std::sync::MutexGuard<'_, CoreMessage> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
    /// The index files `files` picks from the message as `paimon_rs.index_meta`
    /// `IndexManifestEntry`s of `kind` (0 ADD, 1 DELETE); copied out before Python runs, so
    /// the lock is not held across Python calls.
    fn index_entries<'py>(
        &self,
        py: Python<'py>,
        kind: i32,
        files: impl Fn(&CoreMessage) -> &Vec<paimon_rs_core::IndexFileMeta>,
    ) -> PyResult<Vec<Bound<'py, PyAny>>> {
        let (partition, bucket, files) = {
            let m = self.core();
            (m.partition.clone(), m.bucket, files(&m).clone())
        };
        let module = py.import("paimon_rs.index_meta")?;
        let (entry, meta) = (
            module.getattr("IndexManifestEntry")?,
            module.getattr("IndexFileMeta")?,
        );
        let partition = PyBytes::new(py, &partition);
        files
            .into_iter()
            .map(|f| {
                let dv = f.dv_ranges.map(|r| {
                    r.into_iter()
                        .map(|d| (d.data_file, d.offset, d.length, d.cardinality))
                        .collect::<Vec<_>>()
                });
                let m = meta.call1((
                    f.index_type,
                    f.file_name,
                    f.file_size,
                    f.row_count,
                    dv,
                    f.external_path,
                ))?;
                entry.call1((kind, partition.clone(), bucket, m))
            })
            .collect()
    }
}

#[pymethods]
impl CommitMessage {
    #[getter]
    fn bucket(&self) -> i32 {
        self.core().bucket
    }
    /// The bucket count of the partition the message's files were written for (pypaimon's
    /// `CommitMessage.total_buckets`: the table's `bucket`, -1 for dynamic or unaware buckets,
    /// the planned count of a postpone-bucket table's fixed-bucket write).
    #[getter]
    fn total_buckets(&self) -> i32 {
        self.core().total_buckets
    }
    /// The partition as Paimon's serialized BinaryRow (equal partitions, equal bytes).
    #[getter]
    fn partition<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.core().partition)
    }
    #[getter]
    fn file_names(&self) -> Vec<String> {
        self.core()
            .data_increment
            .new_files
            .iter()
            .map(|f| f.file_name.clone())
            .collect()
    }
    /// The data files this message adds, as pypaimon's `CommitMessage.new_files`. A message
    /// does not know the table's location: `file_path` is the file's external path when it has
    /// one (`data-file.external-paths`), else its name relative to its bucket directory.
    /// Setting `first_row_id` on one of them sets it in this message (pypaimon's data-evolution
    /// writes: a file of some columns of rows that exist names the first of those rows).
    #[getter]
    fn new_files(slf: &Bound<'_, Self>) -> Vec<DataFileMeta> {
        let owner = slf.clone().unbind();
        slf.get()
            .core()
            .data_increment
            .new_files
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let path = f
                    .external_path
                    .clone()
                    .unwrap_or_else(|| f.file_name.clone());
                let mut meta = DataFileMeta::from_core(f, path);
                meta.owner = Some((owner.clone_ref(slf.py()), i));
                meta
            })
            .collect()
    }
    /// The data files this message deletes (pypaimon's `CommitMessage.deleted_files`: a
    /// partition delete's), read-only.
    #[getter]
    fn deleted_files(&self) -> Vec<DataFileMeta> {
        self.core()
            .data_increment
            .deleted_files
            .iter()
            .map(|f| {
                let path = f
                    .external_path
                    .clone()
                    .unwrap_or_else(|| f.file_name.clone());
                DataFileMeta::from_core(f, path)
            })
            .collect()
    }
    #[getter]
    fn row_count(&self) -> i64 {
        self.core()
            .data_increment
            .new_files
            .iter()
            .map(|f| f.row_count)
            .sum()
    }
    /// Names of the changelog files this message adds (its writes' and its compactions').
    #[getter]
    fn changelog_file_names(&self) -> Vec<String> {
        let m = &*self.core();
        m.data_increment
            .changelog_files
            .iter()
            .chain(&m.compact_increment.changelog_files)
            .map(|f| f.file_name.clone())
            .collect()
    }
    /// Names of the index files this message adds (hash index, deletion vectors).
    #[getter]
    fn index_file_names(&self) -> Vec<String> {
        let m = &*self.core();
        m.data_increment
            .new_index_files
            .iter()
            .chain(&m.compact_increment.new_index_files)
            .map(|f| f.file_name.clone())
            .collect()
    }
    /// Names of the compaction inputs this message removes.
    #[getter]
    fn compact_before(&self) -> Vec<String> {
        self.core()
            .compact_increment
            .compact_before
            .iter()
            .map(|f| f.file_name.clone())
            .collect()
    }
    /// Names of the compaction outputs this message adds.
    #[getter]
    fn compact_after(&self) -> Vec<String> {
        self.core()
            .compact_increment
            .compact_after
            .iter()
            .map(|f| f.file_name.clone())
            .collect()
    }
    /// pypaimon's `CommitMessage.index_adds`: the index files the write added (dynamic
    /// bucket hash indexes, deletion vectors of a delete), as `paimon_rs.index_meta`
    /// `IndexManifestEntry`s.
    #[getter]
    fn index_adds<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyAny>>> {
        self.index_entries(py, 0, |m| &m.data_increment.new_index_files)
    }
    /// pypaimon's `CommitMessage.index_deletes`: the index files the write replaced.
    #[getter]
    fn index_deletes<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyAny>>> {
        self.index_entries(py, 1, |m| &m.data_increment.deleted_index_files)
    }
    /// pypaimon's `CommitMessage.compact_index_adds`: the index files a compaction added.
    #[getter]
    fn compact_index_adds<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyAny>>> {
        self.index_entries(py, 0, |m| &m.compact_increment.new_index_files)
    }
    /// pypaimon's `CommitMessage.compact_index_deletes`: the index files a compaction replaced.
    #[getter]
    fn compact_index_deletes<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyAny>>> {
        self.index_entries(py, 1, |m| &m.compact_increment.deleted_index_files)
    }
    fn is_empty(&self) -> bool {
        self.core().is_empty()
    }
    fn to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        Ok(PyBytes::new(py, &self.core().to_bytes().py_err()?))
    }
    /// Picklable (Spark ships splits to tasks and commit messages back to the driver).
    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyAny>, (Bound<'py, PyBytes>,))> {
        let f = slf.get_type().getattr("from_bytes")?;
        Ok((f, (slf.get().to_bytes(slf.py())?,)))
    }
    #[staticmethod]
    fn from_bytes(b: &[u8]) -> PyResult<Self> {
        Ok(CommitMessage::from_core(
            CoreMessage::from_bytes(b).py_err()?,
        ))
    }
}

#[pyclass(module = "paimon_rs._core", frozen)]
pub struct TableCommit {
    inner: FileStoreCommit,
}

#[pymethods]
impl TableCommit {
    /// Commit; `overwrite` is None (append) or a one-row pyarrow RecordBatch of partition values
    /// (zero columns = the whole table); `dynamic_overwrite` = an overwrite of the partitions
    /// written (`dynamic-partition-overwrite`). Returns the new snapshot id (or the one that
    /// already holds this commit identifier) or None if nothing changed.
    #[pyo3(signature = (messages, commit_identifier, overwrite=None, dynamic_overwrite=false))]
    fn commit(
        &self,
        py: Python<'_>,
        messages: Vec<CommitMessage>,
        commit_identifier: i64,
        overwrite: Option<Bound<'_, PyAny>>,
        dynamic_overwrite: bool,
    ) -> PyResult<Option<i64>> {
        let spec: Option<PartitionSpec> = match overwrite {
            None => None,
            Some(obj) => {
                let batch = RecordBatch::from_pyarrow_bound(&obj)?;
                Some(self.spec_from_batch(&batch).py_err()?)
            }
        };
        let mode = match (&spec, dynamic_overwrite) {
            (_, true) => Some(Overwrite::Dynamic),
            (Some(s), false) => Some(Overwrite::Static(s)),
            (None, false) => None,
        };
        let msgs: Vec<CoreMessage> = messages.into_iter().map(|m| m.into_core()).collect();
        crate::logbridge::flush(py);
        let r = crate::pool::detach(py, || self.inner.commit_as(&msgs, commit_identifier, mode));
        crate::logbridge::flush(py);
        r.py_err()
    }

    /// Commit compaction increments as one OVERWRITE snapshot removing exactly their inputs
    /// (sort compaction); once per (commit user, identifier).
    fn commit_rewrite(
        &self,
        py: Python<'_>,
        messages: Vec<CommitMessage>,
        commit_identifier: i64,
    ) -> PyResult<Option<i64>> {
        let msgs: Vec<CoreMessage> = messages.into_iter().map(|m| m.into_core()).collect();
        crate::logbridge::flush(py);
        let r = crate::pool::detach(py, || self.inner.commit_rewrite(&msgs, commit_identifier));
        crate::logbridge::flush(py);
        r.py_err()
    }

    /// Drop the partitions (one-row batches of partition values, a prefix of the keys allowed)
    /// in one OVERWRITE snapshot; its id, None if no live file was in them.
    fn drop_partitions(
        &self,
        py: Python<'_>,
        partitions: Vec<Bound<'_, PyAny>>,
        commit_identifier: i64,
    ) -> PyResult<Option<i64>> {
        let mut specs = Vec::with_capacity(partitions.len());
        for obj in &partitions {
            let batch = RecordBatch::from_pyarrow_bound(obj)?;
            specs.push(spec_from_batch(self.inner.table(), &batch, "drop_partitions").py_err()?);
        }
        crate::logbridge::flush(py);
        let r = crate::pool::detach(py, || self.inner.drop_partitions(&specs, commit_identifier));
        crate::logbridge::flush(py);
        r.py_err()
    }

    /// Expire partitions now (`partition.expiration-time`, whatever the check interval):
    /// returns the dropped partitions as {key: value text} and the snapshot id.
    fn expire_partitions(
        &self,
        py: Python<'_>,
        commit_identifier: i64,
    ) -> PyResult<(Vec<PartitionText>, Option<i64>)> {
        let table = self.inner.table();
        let pe = paimon_rs_core::PartitionExpire::from_table(table)
            .map_err(|e| e.with_table(&table.name))
            .py_err()?;
        let Some(pe) = pe else {
            return Ok((vec![], None));
        };
        crate::logbridge::flush(py);
        let r = crate::pool::detach(py, || {
            self.inner.expire_partitions_now(&pe, commit_identifier)
        });
        crate::logbridge::flush(py);
        let (specs, id) = r.py_err()?;
        let legacy = table.options.partition_legacy_name;
        let mut out = vec![];
        for spec in specs {
            let mut m = BTreeMap::new();
            for (k, v) in spec {
                let t = table
                    .schema
                    .field(&k)
                    .map(|f| f.data_type.clone())
                    .ok_or_else(|| Error::invalid(format!("unknown column {k}")))
                    .py_err()?;
                let text = paimon_rs_core::partition_value_string(&v, &t, legacy).py_err()?;
                m.insert(k, text);
            }
            out.push(m);
        }
        Ok((out, id))
    }

    /// Delete the messages' data files that no snapshot or tag references; returns the paths
    /// kept because one does (the messages were committed). Deletes nothing and raises if the
    /// table's metadata cannot be read.
    fn abort(&self, py: Python<'_>, messages: Vec<CommitMessage>) -> PyResult<Vec<String>> {
        let msgs: Vec<CoreMessage> = messages.into_iter().map(|m| m.into_core()).collect();
        let out = crate::pool::detach(py, || self.inner.abort(&msgs)).py_err()?;
        Ok(out
            .referenced
            .iter()
            .map(|p| p.to_string_lossy().into_owned())
            .collect())
    }

    #[getter]
    fn commit_user(&self) -> String {
        self.inner.commit_user().to_string()
    }

    /// The snapshot in which this commit user committed `commit_identifier`, if any.
    fn committed_snapshot(&self, py: Python<'_>, commit_identifier: i64) -> PyResult<Option<i64>> {
        crate::pool::detach(py, || self.inner.committed_snapshot(commit_identifier)).py_err()
    }
}

impl TableCommit {
    fn spec_from_batch(&self, batch: &RecordBatch) -> Result<PartitionSpec, Error> {
        spec_from_batch(self.inner.table(), batch, "overwrite")
    }
}

/// Partition specs from one-row batches of partition values (None: every partition); `what`
/// names the operation in errors.
pub(crate) fn partition_specs(
    table: &FileStoreTable,
    partitions: Option<Vec<Bound<'_, PyAny>>>,
    what: &str,
) -> PyResult<Option<Vec<PartitionSpec>>> {
    let Some(list) = partitions else {
        return Ok(None);
    };
    list.iter()
        .map(|b| {
            let batch = RecordBatch::from_pyarrow_bound(b)?;
            spec_from_batch(table, &batch, what).py_err()
        })
        .collect::<PyResult<Vec<_>>>()
        .map(Some)
}

/// A partition spec from a one-row batch of partition values (zero columns = every partition);
/// `what` names the operation in errors.
fn spec_from_batch(
    table: &FileStoreTable,
    batch: &RecordBatch,
    what: &str,
) -> Result<PartitionSpec, Error> {
    let mut spec = vec![];
    for (i, f) in batch.schema().fields().iter().enumerate() {
        if !table.partition_keys().contains(f.name()) {
            return Err(Error::invalid(format!(
                "{what}: '{}' is not a partition key",
                f.name()
            )));
        }
        let t = table
            .schema
            .field(f.name())
            .map(|x| x.data_type.clone())
            .ok_or_else(|| Error::invalid(format!("unknown column {}", f.name())))?;
        spec.push((
            f.name().clone(),
            datum_from_arrow(batch.column(i).as_ref(), 0, &t)?,
        ));
    }
    Ok(spec)
}

/// A partition as {key: value text} (None: NULL).
type PartitionText = BTreeMap<String, Option<String>>;

#[pyclass(module = "paimon_rs._core", frozen, from_py_object)]
#[derive(Clone)]
pub struct Split {
    pub inner: CoreSplit,
    /// The table's partition columns, to decode `inner.partition` (pickled along).
    pub partition_fields: std::sync::Arc<Vec<DataField>>,
}

/// `Split.__reduce__`: `from_bytes` with the split's bytes and its partition fields (JSON).
type SplitReduce<'py> = (Bound<'py, PyAny>, (Bound<'py, PyBytes>, String));

/// One data file of a split, as pypaimon's `DataFileMeta` (the fields a user reads).
#[pyclass(module = "paimon_rs._core")]
pub struct DataFileMeta {
    #[pyo3(get)]
    file_name: String,
    #[pyo3(get)]
    file_path: String,
    #[pyo3(get)]
    file_size: i64,
    #[pyo3(get)]
    row_count: i64,
    #[pyo3(get)]
    min_sequence_number: i64,
    #[pyo3(get)]
    max_sequence_number: i64,
    #[pyo3(get)]
    schema_id: i64,
    #[pyo3(get)]
    level: i32,
    #[pyo3(get)]
    extra_files: Vec<String>,
    /// Epoch millis of the writer's local wall clock, as Paimon stores it.
    #[pyo3(get)]
    creation_time: Option<i64>,
    #[pyo3(get)]
    delete_row_count: Option<i64>,
    /// Where the file lives when it is outside the bucket directory (`data-file.external-paths`).
    #[pyo3(get)]
    external_path: Option<String>,
    /// The columns whose statistics the file's `value_stats` hold (None: all columns).
    #[pyo3(get)]
    value_stats_cols: Option<Vec<String>>,
    /// The `_ROW_ID` of the file's first row (row-tracking tables), None otherwise.
    #[pyo3(get)]
    first_row_id: Option<i64>,
    /// The columns the file holds when it holds only some of the table's (data evolution).
    #[pyo3(get)]
    write_cols: Option<Vec<String>>,
    /// 0: written as new data, 1: written by a compaction (None when not recorded).
    #[pyo3(get)]
    file_source: Option<i32>,
    /// The commit message this file is one of `new_files` of (and its index there), for
    /// `first_row_id` set on it to reach the message.
    owner: Option<(Py<CommitMessage>, usize)>,
}

impl DataFileMeta {
    /// The user-visible fields of `f`, which lives at `file_path`.
    fn from_core(f: &CoreFileMeta, file_path: String) -> Self {
        DataFileMeta {
            file_name: f.file_name.clone(),
            file_path,
            file_size: f.file_size,
            row_count: f.row_count,
            min_sequence_number: f.min_sequence_number,
            max_sequence_number: f.max_sequence_number,
            schema_id: f.schema_id,
            level: f.level,
            extra_files: f.extra_files.clone(),
            creation_time: f.creation_time,
            delete_row_count: f.delete_row_count,
            external_path: f.external_path.clone(),
            value_stats_cols: f.value_stats_cols.clone(),
            first_row_id: f.first_row_id,
            write_cols: f.write_cols.clone(),
            file_source: f.file_source,
            owner: None,
        }
    }
}

#[pymethods]
impl DataFileMeta {
    /// Set the `_ROW_ID` of the file's first row; on a file of a commit message's `new_files`
    /// it sets it in the message, as pypaimon (a data-evolution file of some columns of rows
    /// that exist names the first of them). A file of a split is a copy: the table is unchanged.
    #[setter]
    fn set_first_row_id(&mut self, value: Option<i64>) -> PyResult<()> {
        if let Some((msg, i)) = &self.owner {
            let m = msg.get();
            let mut core = m.core();
            match core.data_increment.new_files.get_mut(*i) {
                Some(f) => f.first_row_id = value,
                None => {
                    return Err(Error::invalid(format!(
                        "file {} is no longer one of its commit message's new files",
                        self.file_name
                    )))
                    .py_err()
                }
            }
        }
        self.first_row_id = value;
        Ok(())
    }
    fn __repr__(&self) -> String {
        format!(
            "DataFileMeta(file_name={:?}, row_count={}, file_size={}, level={})",
            self.file_name, self.row_count, self.file_size, self.level
        )
    }
}

impl Split {
    fn partition_fields_json(&self) -> String {
        serde_json::Value::Array(self.partition_fields.iter().map(|f| f.to_json()).collect())
            .to_string()
    }
}

#[pymethods]
impl Split {
    #[getter]
    fn bucket(&self) -> i32 {
        self.inner.bucket
    }
    #[getter]
    fn bucket_path(&self) -> String {
        self.inner.bucket_path.clone()
    }
    #[getter]
    fn row_count(&self) -> i64 {
        self.inner.row_count()
    }
    #[getter]
    fn file_size(&self) -> i64 {
        self.inner.file_size()
    }
    #[getter]
    fn file_paths(&self) -> Vec<String> {
        self.inner
            .files
            .iter()
            .map(|f| format!("{}/{}", self.inner.bucket_path, f.file_name))
            .collect()
    }
    #[getter]
    fn raw_convertible(&self) -> bool {
        self.inner.raw_convertible
    }
    /// Whether the files are changelog files (an incremental read in `changelog` mode), read
    /// without merging, each record with its row kind.
    #[getter]
    fn changelog(&self) -> bool {
        self.inner.changelog
    }
    #[getter]
    fn snapshot_id(&self) -> i64 {
        self.inner.snapshot_id
    }
    #[getter]
    fn total_buckets(&self) -> i32 {
        self.inner.total_buckets
    }
    /// The data files of this split (pypaimon's `DataFileMeta` fields a user reads).
    #[getter]
    fn files(&self) -> Vec<DataFileMeta> {
        self.inner
            .files
            .iter()
            .map(|f| {
                let path = format!("{}/{}", self.inner.bucket_path, f.file_name);
                DataFileMeta::from_core(f, path)
            })
            .collect()
    }
    /// Whether some file of this split has a deletion vector (rows to skip).
    #[getter]
    fn has_deletion_vectors(&self) -> bool {
        !self.inner.deletion_files.is_empty()
    }
    /// How many of this split's data files have a deletion vector.
    #[getter]
    fn deletion_file_count(&self) -> usize {
        self.inner.deletion_files.len()
    }
    /// pypaimon's `merged_row_count()`: the rows a read of this split returns, when the files'
    /// row counts tell it without reading: a raw-convertible split (no two files hold the same
    /// key) minus the rows its deletion vectors mark; None otherwise (files to merge, or a
    /// deletion vector whose cardinality the index manifest does not record).
    /// A data-evolution split cut to a slice: its row-id ranges' rows (`row_count`), as
    /// pypaimon's `IndexedSplit`.
    fn merged_row_count(&self) -> Option<i64> {
        let s = &self.inner;
        if !s.row_id_ranges.is_empty() {
            return Some(s.row_count());
        }
        if !s.raw_convertible {
            return None;
        }
        s.files
            .iter()
            .try_fold(0i64, |n, f| match s.deletion_files.get(&f.file_name) {
                None => Some(n + s.rows_of(f)),
                // a vector's cardinality counts the whole file's marks, not a part's
                Some(_) if s.row_slices.contains_key(&f.file_name) => None,
                Some(d) => d.cardinality.map(|deleted| n + f.row_count - deleted),
            })
    }
    /// The partition values, as pypaimon's `GenericRow` (`paimon_rs.table.GenericRow`).
    #[getter]
    fn partition<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let batch = self.partition_batch()?;
        py.import("paimon_rs.table")?
            .getattr("GenericRow")?
            .call_method1("from_arrow", (batch,))
    }
    /// The partition as a one-row Arrow batch of the partition columns (zero columns for an
    /// unpartitioned table); `paimon_rs.table` wraps it as pypaimon's `GenericRow`.
    fn partition_batch(&self) -> PyResult<PyArrowType<RecordBatch>> {
        let types: Vec<_> = self
            .partition_fields
            .iter()
            .map(|f| f.data_type.clone())
            .collect();
        let values = if types.is_empty() {
            vec![]
        } else {
            deserialize_row(&types, &self.inner.partition).py_err()?
        };
        let mut cols = Vec::with_capacity(types.len());
        for (t, v) in types.iter().zip(values) {
            cols.push(datums_to_arrow(t, &[v]).py_err()?);
        }
        let schema = std::sync::Arc::new(Schema::new(
            self.partition_fields
                .iter()
                .map(|f| f.to_arrow())
                .collect::<Vec<_>>(),
        ));
        let opts = arrow::array::RecordBatchOptions::new().with_row_count(Some(1));
        Ok(PyArrowType(
            RecordBatch::try_new_with_options(schema, cols, &opts)
                .map_err(Error::from)
                .py_err()?,
        ))
    }
    fn to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        Ok(PyBytes::new(py, &self.inner.to_bytes().py_err()?))
    }
    /// Picklable (Spark ships splits to tasks and commit messages back to the driver).
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<SplitReduce<'py>> {
        let f = slf.get_type().getattr("from_bytes")?;
        let me = slf.get();
        Ok((f, (me.to_bytes(slf.py())?, me.partition_fields_json())))
    }
    #[staticmethod]
    #[pyo3(signature = (b, partition_fields=None))]
    fn from_bytes(b: &[u8], partition_fields: Option<&str>) -> PyResult<Self> {
        let fields = match partition_fields {
            None => vec![],
            Some(j) => {
                let v: serde_json::Value = serde_json::from_str(j)
                    .map_err(|e| Error::invalid(format!("split partition fields: {e}")))
                    .py_err()?;
                v.as_array()
                    .map(|a| a.iter().map(DataField::from_json).collect())
                    .unwrap_or_else(|| Ok(vec![]))
                    .py_err()?
            }
        };
        Ok(Split {
            inner: CoreSplit::from_bytes(b).py_err()?,
            partition_fields: std::sync::Arc::new(fields),
        })
    }
}

/// pypaimon's `with_slice` of a data-evolution table's plan: the row ids at positions
/// `[start, end)` of the plan's merged row-id ranges, whole row-id groups kept together
/// (`paimon_rs_core::slice_splits_by_row_id`; a group partly in the slice read in part).
#[pyfunction]
pub fn slice_splits_by_row_id(
    table: &str,
    splits: Vec<Split>,
    start: i64,
    end: i64,
) -> PyResult<Vec<Split>> {
    let Some(fields) = splits.first().map(|s| s.partition_fields.clone()) else {
        return Ok(vec![]);
    };
    let core = splits.into_iter().map(|s| s.inner).collect();
    Ok(
        paimon_rs_core::slice_splits_by_row_id(table, core, start, end)
            .py_err()?
            .into_iter()
            .map(|inner| Split {
                inner,
                partition_fields: fields.clone(),
            })
            .collect(),
    )
}

/// pypaimon's `with_slice` of an append table's plan: the splits holding the plan's rows at
/// positions `[start, end)` (`paimon_rs_core::slice_splits`; files read in part).
#[pyfunction]
pub fn slice_splits(splits: Vec<Split>, start: i64, end: i64) -> Vec<Split> {
    let Some(fields) = splits.first().map(|s| s.partition_fields.clone()) else {
        return vec![];
    };
    let core = splits.into_iter().map(|s| s.inner).collect();
    paimon_rs_core::slice_splits(core, start, end)
        .into_iter()
        .map(|inner| Split {
            inner,
            partition_fields: fields.clone(),
        })
        .collect()
}

#[pyclass(module = "paimon_rs._core", frozen)]
pub struct TableRead {
    inner: CoreRead,
}

#[pymethods]
impl TableRead {
    fn output_schema(&self) -> PyArrowType<Schema> {
        PyArrowType(self.inner.output_schema().as_ref().clone())
    }

    /// Read splits (in parallel, GIL released); returns a pyarrow.RecordBatchReader.
    /// `parallelism`: read on a pool of that many threads (1: one split after the other);
    /// default: the shared pool, one thread per core.
    #[pyo3(signature = (splits, parallelism=None))]
    fn read(
        &self,
        py: Python<'_>,
        splits: Vec<Split>,
        parallelism: Option<usize>,
    ) -> PyResult<PyArrowType<Box<dyn RecordBatchReader + Send>>> {
        let core: Vec<CoreSplit> = splits.into_iter().map(|s| s.inner).collect();
        let pool = match parallelism {
            None => None,
            Some(0) => return Err(Error::invalid("parallelism must be >= 1")).py_err(),
            Some(n) => Some(
                rayon::ThreadPoolBuilder::new()
                    .num_threads(n)
                    .build()
                    .map_err(|e| Error::invalid(format!("read pool of {n} threads: {e}")))
                    .py_err()?,
            ),
        };
        let batches = crate::pool::detach(py, || match &pool {
            Some(p) => p.install(|| self.inner.read_splits(&core)),
            None => self.inner.read_splits(&core),
        })
        .py_err()?;
        let schema = self.inner.output_schema();
        let it = RecordBatchIterator::new(batches.into_iter().map(Ok), schema);
        Ok(PyArrowType(Box::new(it)))
    }

    /// Read splits lazily, one after the other: each `next` decodes and merges just enough for
    /// one batch (GIL released), so memory stays bounded by the merge, not by the splits.
    /// `decode_ahead` = n > 0: a thread of its own decodes up to n batches ahead while the
    /// caller works on the current one (started on the first `next`; `close` stops it).
    #[pyo3(signature = (splits, decode_ahead=0))]
    fn stream(&self, splits: Vec<Split>, decode_ahead: usize) -> BatchStream {
        let core: Vec<CoreSplit> = splits.into_iter().map(|s| s.inner).collect();
        let it = self.inner.stream(core);
        BatchStream {
            inner: Mutex::new(if decode_ahead == 0 {
                StreamState::Plain(it)
            } else {
                StreamState::NotStarted(it, decode_ahead)
            }),
        }
    }
}

enum StreamState {
    Plain(paimon_rs_core::BatchIter),
    /// decode-ahead, its thread not started yet (started lazily: fork-safe until then)
    NotStarted(paimon_rs_core::BatchIter, usize),
    Ahead(paimon_rs_core::DecodeAhead),
    Done,
}

/// An iterator of pyarrow RecordBatches over a lazy read (`TableRead.stream`).
#[pyclass(module = "paimon_rs._core", frozen)]
pub struct BatchStream {
    inner: Mutex<StreamState>,
}

#[pymethods]
impl BatchStream {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<PyArrowType<RecordBatch>>> {
        // Waiting for the decode-ahead thread must not occupy a thread of the pool (the decode
        // itself may need one): only the plain stream runs inside the pool.
        let next = py.detach(|| -> PyResult<Option<Result<RecordBatch, Error>>> {
            let mut g = lock(&self.inner)?;
            if matches!(*g, StreamState::NotStarted(..)) {
                let StreamState::NotStarted(it, depth) =
                    std::mem::replace(&mut *g, StreamState::Done)
                else {
                    unreachable!("matched above")
                };
                let step: paimon_rs_core::DecodeAheadStep =
                    Box::new(|it: &mut paimon_rs_core::BatchIter| {
                        crate::pool::install(|| it.next())
                    });
                *g = StreamState::Ahead(
                    paimon_rs_core::DecodeAhead::spawn(it, depth, step).py_err()?,
                );
            }
            let r = match &mut *g {
                StreamState::Plain(it) => crate::pool::install(|| it.next()),
                StreamState::Ahead(d) => d.next_batch(),
                StreamState::NotStarted(..) | StreamState::Done => None,
            };
            if r.is_none() {
                *g = StreamState::Done; // exhausted: release the readers (and the thread)
            }
            Ok(r)
        })?;
        match next {
            None => Ok(None),
            Some(r) => Ok(Some(PyArrowType(r.py_err()?))),
        }
    }

    /// Stop reading: release the readers; a decode-ahead thread is stopped and joined (it
    /// finishes the batch it is decoding). Iterating afterwards yields nothing.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let state = std::mem::replace(&mut *lock(&self.inner)?, StreamState::Done);
        if let StreamState::Ahead(mut d) = state {
            py.detach(move || d.close());
        }
        Ok(())
    }
}

/// Drop the lookup caches no writer of this process holds (memory and local lookup files);
/// returns the bytes they held.
#[pyfunction]
pub fn release_lookup_caches(py: Python<'_>) -> u64 {
    py.detach(paimon_rs_core::release_lookup_caches)
}

/// Decode-ahead threads running in this process (tests: an early stop must free them).
#[pyfunction]
pub fn decode_ahead_threads() -> usize {
    paimon_rs_core::decode_ahead_threads()
}

/// `(rows selected, rows of their files)` of the raw reads narrowed by bitmap file indexes in
/// this process (tests and benchmarks: the rows not selected were not decoded).
#[pyfunction]
pub fn bitmap_selection_stats() -> (u64, u64) {
    paimon_rs_core::bitmap_selection_stats()
}

/// Buckets the table's [`BucketAssigner`] assigns to rows of `keys` (columns = bucket key
/// columns, cast to the types the table declares).
#[pyfunction]
pub fn bucket_of_rows(table: &Table, keys: &Bound<'_, PyAny>) -> PyResult<Vec<i32>> {
    let batch = RecordBatch::from_pyarrow_bound(keys)?;
    let assigner = BucketAssigner::new(&table.inner).py_err()?;
    let mut cols = vec![];
    for (n, ty) in assigner.key_names().iter().zip(assigner.key_types()) {
        let c = batch.column_by_name(n).ok_or_else(|| {
            pyo3::exceptions::PyValueError::new_err(format!("missing key column {n}"))
        })?;
        cols.push(
            arrow::compute::cast(c, &ty.to_arrow())
                .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))?,
        );
    }
    assigner.buckets(&cols, batch.num_rows()).py_err()
}

/// Per row of `batch` (at least the partition and bucket-key columns, by name): a hash of its
/// partition and its bucket, as two pyarrow int32 arrays (`paimon_rs.spark` shuffles by them).
#[pyfunction]
pub fn partition_bucket_of(
    py: Python<'_>,
    table: &Table,
    batch: &Bound<'_, PyAny>,
) -> PyResult<(PyArrowType<ArrayData>, PyArrowType<ArrayData>)> {
    let batch = RecordBatch::from_pyarrow_bound(batch)?;
    let (p, b) =
        crate::pool::detach(py, || partition_bucket_of_core(&table.inner, &batch)).py_err()?;
    Ok((
        PyArrowType(Int32Array::from(p).into_data()),
        PyArrowType(Int32Array::from(b).into_data()),
    ))
}

/// A plan's snapshot, splits and pruning counts (`TableScan::with_stats`).
type PlanWithStats = (
    Option<i64>,
    Vec<Split>,
    (Option<i64>, usize, Option<usize>, usize),
);

/// Which levels of a primary-key table a plan takes.
#[derive(Clone, Copy)]
enum Levels {
    /// A batch read's (level 0 hidden in deletion-vector and first-row tables).
    Batch,
    Top,
    All,
    AboveZero,
}

fn plan_counted(
    t: &Table,
    py: Python<'_>,
    filter: Option<Bound<'_, PyAny>>,
    snapshot_id: Option<i64>,
    levels: Levels,
    count: bool,
    row_id_slice: Option<(i64, i64)>,
) -> PyResult<PlanWithStats> {
    let pred = filter
        .map(|f| predicate::convert(&t.inner, &f))
        .transpose()?;
    let mut scan = TableScan::new(t.inner.clone(), pred);
    if let Some(id) = snapshot_id {
        scan = scan.with_snapshot(id);
    }
    scan = match levels {
        Levels::Batch => scan,
        Levels::Top => scan.with_top_level_only(),
        Levels::All => scan.with_all_levels(),
        Levels::AboveZero => scan.with_level0_hidden(),
    };
    if count {
        scan = scan.with_stats();
    }
    if let Some((start, end)) = row_id_slice {
        scan = scan.with_row_id_slice(start, end);
    }
    let plan = crate::pool::detach(py, || scan.plan()).py_err()?;
    let st = &plan.stats;
    let stats = (
        st.live_files,
        st.after_partition,
        st.after_bucket,
        st.after_stats,
    );
    let partition_fields = std::sync::Arc::new(
        t.inner
            .schema
            .fields_of(t.inner.partition_keys())
            .py_err()?,
    );
    Ok((
        plan.snapshot_id,
        plan.splits
            .into_iter()
            .map(|s| Split {
                inner: s,
                partition_fields: partition_fields.clone(),
            })
            .collect(),
        stats,
    ))
}
