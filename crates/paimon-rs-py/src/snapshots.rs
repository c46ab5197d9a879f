//! Read-only metadata from Python: snapshots (as their JSON, which `paimon_rs.snapshot` parses
//! into pypaimon's `Snapshot`), per-partition statistics and the live data files, for
//! `Table.snapshot_manager()`, `Table.list_partitions()` and the CLI.

use paimon_rs_core::{Error, FileStoreTable, Snapshot};
use pyo3::prelude::*;

use crate::errors::IntoPy;
use crate::table::Table;

/// Ids of the snapshots on the table's chain (present, not stale), ascending.
#[pyfunction]
pub fn snapshot_ids(py: Python<'_>, table: &Table) -> PyResult<Vec<i64>> {
    let t = table.core().clone();
    py.detach(|| t.snapshot_manager().live_ids()).py_err()
}

/// The id of the oldest snapshot still present (the `EARLIEST` hint if its snapshot exists).
#[pyfunction]
pub fn earliest_snapshot_id(py: Python<'_>, table: &Table) -> PyResult<Option<i64>> {
    let t = table.core().clone();
    py.detach(|| t.snapshot_manager().earliest_id()).py_err()
}

fn to_json(t: &FileStoreTable, s: &Snapshot) -> Result<String, Error> {
    serde_json::to_string(s)
        .map_err(|e| Error::Internal(format!("table {}: snapshot {} to JSON: {e}", t.name, s.id)))
}

/// Snapshot `id` as Paimon's JSON, None if its file does not exist.
#[pyfunction]
pub fn snapshot_json(py: Python<'_>, table: &Table, id: i64) -> PyResult<Option<String>> {
    let t = table.core().clone();
    py.detach(|| {
        t.snapshot_manager()
            .try_snapshot(id)?
            .map(|s| to_json(&t, &s))
            .transpose()
    })
    .py_err()
}

/// The JSON of each snapshot in `ids` that exists (read in parallel), in the order given.
#[pyfunction]
pub fn snapshots_json(py: Python<'_>, table: &Table, ids: Vec<i64>) -> PyResult<Vec<String>> {
    use rayon::prelude::*;
    let t = table.core().clone();
    let got: Result<Vec<Option<String>>, Error> = crate::pool::detach(py, || {
        let sm = t.snapshot_manager();
        ids.par_iter()
            .map(|&id| sm.try_snapshot(id)?.map(|s| to_json(&t, &s)).transpose())
            .collect()
    });
    Ok(got.py_err()?.into_iter().flatten().collect())
}

fn snapshot_or_latest(t: &FileStoreTable, id: Option<i64>) -> Result<Option<Snapshot>, Error> {
    let sm = t.snapshot_manager();
    match id {
        Some(id) => sm.snapshot_for_read(id).map(Some),
        None => sm.latest(),
    }
}

/// `f` of snapshot `id` (the latest if None; nothing for a table that never committed), with
/// the GIL released.
fn of_snapshot<T: Send>(
    py: Python<'_>,
    table: &Table,
    id: Option<i64>,
    f: impl FnOnce(&FileStoreTable, &Snapshot) -> Result<Vec<T>, Error> + Send,
) -> PyResult<Vec<T>> {
    let t = table.core().clone();
    crate::pool::detach(py, || match snapshot_or_latest(&t, id)? {
        None => Ok(vec![]),
        Some(s) => f(&t, &s),
    })
    .py_err()
}

type PartitionRow = (
    Vec<(String, String)>,
    String,
    i64,
    i64,
    i64,
    Option<i64>,
    usize,
);

/// Per partition of snapshot `snapshot_id` (the latest if None): (spec, path, record count,
/// file size in bytes, file count, last file creation time (epoch millis), buckets).
#[pyfunction]
#[pyo3(signature = (table, snapshot_id=None))]
pub fn partition_stats(
    py: Python<'_>,
    table: &Table,
    snapshot_id: Option<i64>,
) -> PyResult<Vec<PartitionRow>> {
    let stats = of_snapshot(py, table, snapshot_id, paimon_rs_core::partition_stats)?;
    Ok(stats
        .into_iter()
        .map(|s| {
            (
                s.spec,
                s.path,
                s.record_count,
                s.file_size_in_bytes,
                s.file_count,
                s.last_file_creation_time,
                s.buckets,
            )
        })
        .collect())
}

type FileRow = (
    String,
    i32,
    i32,
    String,
    i32,
    i64,
    i64,
    Option<i64>,
    i64,
    i64,
    i64,
    Option<i64>,
);

/// The changelog files of the snapshots still present up to `snapshot_id` (the latest if None),
/// sorted by partition, bucket, snapshot, name: (snapshot id that added it, then the fields of
/// [`live_files`]).
#[pyfunction]
#[pyo3(signature = (table, snapshot_id=None))]
pub fn changelog_files(
    py: Python<'_>,
    table: &Table,
    snapshot_id: Option<i64>,
) -> PyResult<Vec<(i64, FileRow)>> {
    let files = of_snapshot(py, table, snapshot_id, paimon_rs_core::changelog_files)?;
    Ok(files.into_iter().map(|(id, f)| (id, file_row(f))).collect())
}

fn file_row(f: paimon_rs_core::LiveFile) -> FileRow {
    let e = f.entry;
    (
        f.partition,
        e.bucket,
        e.total_buckets,
        e.file.file_name,
        e.file.level,
        e.file.file_size,
        e.file.row_count,
        e.file.delete_row_count,
        e.file.min_sequence_number,
        e.file.max_sequence_number,
        e.file.schema_id,
        e.file.creation_time,
    )
}

/// The live data files of snapshot `snapshot_id` (the latest if None), sorted by partition,
/// bucket, level, name: (partition path, bucket, total buckets, file name, level, file size,
/// row count, delete row count, min sequence, max sequence, schema id, creation time (the
/// manifest's local wall-clock millis)).
#[pyfunction]
#[pyo3(signature = (table, snapshot_id=None))]
pub fn live_files(
    py: Python<'_>,
    table: &Table,
    snapshot_id: Option<i64>,
) -> PyResult<Vec<FileRow>> {
    let files = of_snapshot(py, table, snapshot_id, paimon_rs_core::live_files)?;
    Ok(files.into_iter().map(file_row).collect())
}

/// A live file's row of `$files` beyond `live_files`': (partition `{v1, v2}`, min key, max key,
/// null value counts, min value stats, max value stats, file source, first row id, write
/// columns, external path).
type FileDetailRow = (
    String,
    Option<String>,
    Option<String>,
    String,
    String,
    String,
    Option<i32>,
    Option<i64>,
    Option<Vec<String>>,
    Option<String>,
);

/// The live files of snapshot `snapshot_id` (the latest if None) as `live_files` orders and
/// renders them, each with its `$files` details (see `FileDetailRow`).
#[pyfunction]
#[pyo3(signature = (table, snapshot_id=None))]
pub fn file_details(
    py: Python<'_>,
    table: &Table,
    snapshot_id: Option<i64>,
) -> PyResult<Vec<(FileRow, FileDetailRow)>> {
    let files = of_snapshot(py, table, snapshot_id, paimon_rs_core::file_details)?;
    Ok(files
        .into_iter()
        .map(|(f, d)| {
            let m = &f.entry.file;
            let detail = (
                d.partition,
                d.min_key,
                d.max_key,
                d.null_value_counts,
                d.min_value_stats,
                d.max_value_stats,
                m.file_source,
                m.first_row_id,
                m.write_cols.clone(),
                m.external_path.clone(),
            );
            (file_row(f), detail)
        })
        .collect())
}

type ManifestRow = (String, i64, i64, i64, i64, String, String);

/// The data manifests of snapshot `snapshot_id` (the latest if None), base list then delta
/// list: (file name, file size, added files, deleted files, schema id, min partition `{..}`,
/// max partition `{..}`).
#[pyfunction]
#[pyo3(signature = (table, snapshot_id=None))]
pub fn manifest_files(
    py: Python<'_>,
    table: &Table,
    snapshot_id: Option<i64>,
) -> PyResult<Vec<ManifestRow>> {
    let rows = of_snapshot(py, table, snapshot_id, paimon_rs_core::manifest_files)?;
    Ok(rows
        .into_iter()
        .map(|r| {
            (
                r.meta.file_name,
                r.meta.file_size,
                r.meta.num_added_files,
                r.meta.num_deleted_files,
                r.meta.schema_id,
                r.min_partition_stats,
                r.max_partition_stats,
            )
        })
        .collect())
}

type DvRange = (String, i32, i32, Option<i64>);
type IndexRow = (String, i32, String, String, i64, i64, Option<Vec<DvRange>>);

/// The live index files of snapshot `snapshot_id` (the latest if None): (partition `{..}`,
/// bucket, index type, file name, file size, row count, deletion-vector ranges (data file,
/// offset, length, cardinality) or None).
#[pyfunction]
#[pyo3(signature = (table, snapshot_id=None))]
pub fn index_files(
    py: Python<'_>,
    table: &Table,
    snapshot_id: Option<i64>,
) -> PyResult<Vec<IndexRow>> {
    let rows = of_snapshot(py, table, snapshot_id, paimon_rs_core::index_files)?;
    Ok(rows
        .into_iter()
        .map(|(p, e)| {
            let dvs = e.dv_ranges.map(|v| {
                v.into_iter()
                    .map(|r| (r.data_file, r.offset, r.length, r.cardinality))
                    .collect()
            });
            (
                p,
                e.bucket,
                e.index_type,
                e.file_name,
                e.file_size,
                e.row_count,
                dvs,
            )
        })
        .collect())
}

/// Every schema file of the table's branch: (id, JSON), ascending.
#[pyfunction]
pub fn schemas_json(py: Python<'_>, table: &Table) -> PyResult<Vec<(i64, String)>> {
    let t = table.core().clone();
    crate::pool::detach(py, || paimon_rs_core::schema_files(&t)).py_err()
}

type TagJsonRow = (String, String, Option<String>, Option<i64>);

/// The table's tags: (name, the tagged snapshot's JSON, create time `%Y-%m-%dT%H:%M:%S%.f`
/// (local, as the tag file stores it) or None, time retained in millis or None).
#[pyfunction]
pub fn tags_json(py: Python<'_>, table: &Table) -> PyResult<Vec<TagJsonRow>> {
    let t = table.core().clone();
    crate::pool::detach(py, || {
        paimon_rs_core::list_tags(&t)?
            .into_iter()
            .map(|tag| {
                Ok((
                    tag.name,
                    to_json(&t, &tag.snapshot)?,
                    tag.create_time
                        .map(|c| c.format("%Y-%m-%dT%H:%M:%S%.f").to_string()),
                    tag.time_retained_ms,
                ))
            })
            .collect::<Result<Vec<_>, Error>>()
    })
    .py_err()
}

/// The table's branches with their directory's modification time (epoch millis, None where
/// unknown), sorted by name.
#[pyfunction]
pub fn branch_times(py: Python<'_>, table: &Table) -> PyResult<Vec<(String, Option<i64>)>> {
    let t = table.core().clone();
    crate::pool::detach(py, || paimon_rs_core::branch_create_times(&t)).py_err()
}

/// A commit entry: (kind 0 ADD / 1 DELETE, partition spec `[(key, value as in the path)]`,
/// the fields of [`live_files`], first row id, external path).
type DeltaRow = (
    i32,
    Vec<(String, String)>,
    FileRow,
    Option<i64>,
    Option<String>,
);

/// The entries of snapshot `snapshot_id`'s delta (what its commit added and deleted), in
/// manifest order: the `commit_entries` of a `CommitCallbackContext`.
#[pyfunction]
pub fn delta_files(py: Python<'_>, table: &Table, snapshot_id: i64) -> PyResult<Vec<DeltaRow>> {
    let files = of_snapshot(py, table, Some(snapshot_id), paimon_rs_core::delta_files)?;
    Ok(files
        .into_iter()
        .map(|d| {
            let first_row_id = d.entry.file.first_row_id;
            let external = d.entry.file.external_path.clone();
            let kind = d.entry.kind.to_byte();
            let live = paimon_rs_core::LiveFile {
                partition: d.partition,
                entry: d.entry,
            };
            (kind, d.spec, file_row(live), first_row_id, external)
        })
        .collect())
}
