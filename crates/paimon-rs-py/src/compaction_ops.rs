//! What a compaction would do and did, from Python: `Table.compaction_plan` and the summary
//! the CLI prints, and the driver's and tasks' halves of `paimon_rs.spark.compact`.

use arrow::array::{Array, ArrayData, RecordBatch};
use arrow_pyarrow::PyArrowType;
use paimon_rs_core::Split as CoreSplit;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::errors::IntoPy;
use crate::table::{CommitMessage, Table};

type PlanRow = (
    String,
    i32,
    bool,
    Vec<(i32, usize, u64, i64)>,
    Vec<(usize, u64, i64, i32, String)>,
    String,
);

/// Per (partition, bucket): (partition path, bucket, primary key?, runs (level, files, bytes,
/// rows), picks (files, bytes, rows, output level, reason), explanation).
#[pyfunction]
pub fn compaction_plan(py: Python<'_>, table: &Table) -> PyResult<Vec<PlanRow>> {
    let t = table.core().clone();
    let plans = crate::pool::detach(py, || paimon_rs_core::compaction_plan(&t)).py_err()?;
    Ok(plans
        .into_iter()
        .map(|p| {
            (
                p.partition,
                p.bucket,
                p.primary_key,
                p.runs
                    .iter()
                    .map(|r| (r.level, r.files, r.bytes, r.rows))
                    .collect(),
                p.picks
                    .into_iter()
                    .map(|k| (k.files, k.bytes, k.rows, k.output_level, k.reason))
                    .collect(),
                p.explanation,
            )
        })
        .collect())
}

/// (files before, files after, bytes before, bytes after, rows before, rows after) of the
/// compaction snapshot `snapshot_id`.
#[pyfunction]
pub fn compaction_summary(
    py: Python<'_>,
    table: &Table,
    snapshot_id: i64,
) -> PyResult<(usize, usize, u64, u64, i64, i64)> {
    let t = table.core().clone();
    let s = py
        .detach(|| paimon_rs_core::compaction_summary(&t, snapshot_id))
        .py_err()?;
    Ok((
        s.files_before,
        s.files_after,
        s.bytes_before,
        s.bytes_after,
        s.rows_before,
        s.rows_after,
    ))
}

/// The buckets a compaction (`full`, or the picker's choice) would rewrite now, each as a
/// serialized split of its live files: the driver's plan of `paimon_rs.spark.compact`.
/// `partitions`: one-row batches of partition values (as `Table.compact`); only the buckets of
/// the partitions matching one of them (all if None).
#[pyfunction]
#[pyo3(signature = (table, full, partitions=None))]
pub fn compaction_work<'py>(
    py: Python<'py>,
    table: &Table,
    full: bool,
    partitions: Option<Vec<Bound<'py, PyAny>>>,
) -> PyResult<Vec<Bound<'py, PyBytes>>> {
    let t = table.core().clone();
    let specs = crate::table::partition_specs(&t, partitions, "compact")?;
    let splits = crate::pool::detach(py, || {
        paimon_rs_core::plan_buckets(&t, full, specs.as_deref())
    })
    .py_err()?;
    splits
        .iter()
        .map(|s| Ok(PyBytes::new(py, &s.to_bytes().py_err()?)))
        .collect()
}

/// Compact one bucket planned by `compaction_work` (a task of `paimon_rs.spark.compact`): its
/// COMPACT commit message, not committed; None if nothing was left to do.
#[pyfunction]
pub fn compact_bucket(
    py: Python<'_>,
    table: &Table,
    work: &[u8],
    full: bool,
) -> PyResult<Option<CommitMessage>> {
    let t = table.core().clone();
    let split = CoreSplit::from_bytes(work).py_err()?;
    crate::logbridge::flush(py);
    let r = crate::pool::detach(py, || paimon_rs_core::compact_one_bucket(&t, &split, full));
    crate::logbridge::flush(py);
    Ok(r.py_err()?.map(CommitMessage::from_core))
}

/// A streaming write's full compaction of the buckets `commit_user` wrote earlier in its
/// `full-compaction.delta-commits` window and not in this commit (`except`: (partition bytes,
/// bucket) of the commit's own messages), if `commit_identifier` is a full compaction's:
/// their COMPACT messages, not committed. The driver of
/// a Spark micro-batch whose identifier is a full compaction's adds them to its commit.
#[pyfunction]
pub fn compact_full_window(
    py: Python<'_>,
    table: &Table,
    commit_user: String,
    commit_identifier: i64,
    except: Vec<(Vec<u8>, i32)>,
) -> PyResult<Vec<CommitMessage>> {
    let t = table.core().clone();
    crate::logbridge::flush(py);
    let r = crate::pool::detach(py, || {
        paimon_rs_core::compact_full_window(&t, &commit_user, commit_identifier, &except)
    });
    crate::logbridge::flush(py);
    Ok(r.py_err()?
        .into_iter()
        .map(CommitMessage::from_core)
        .collect())
}

/// The driver's plan of `paimon_rs.spark.sort_compact`: (snapshot id, one serialized split
/// per selected partition, its files being what the rewrite removes); None if the table has no
/// snapshot. Refuses what `Table.sort_compact` refuses.
#[pyfunction]
#[pyo3(signature = (table, order_strategy, order_by, partitions=None))]
pub fn sort_compaction_plan<'py>(
    py: Python<'py>,
    table: &Table,
    order_strategy: String,
    order_by: Vec<String>,
    partitions: Option<Vec<Bound<'py, PyAny>>>,
) -> PyResult<Option<(i64, Vec<Bound<'py, PyBytes>>)>> {
    let t = table.core().clone();
    let specs = crate::table::partition_specs(&t, partitions, "sort_compact")?;
    let plan = crate::pool::detach(py, || {
        paimon_rs_core::sort_compaction_plan(&t, &order_strategy, &order_by, specs.as_deref())
    })
    .py_err()?;
    let Some((id, splits)) = plan else {
        return Ok(None);
    };
    let items = splits
        .iter()
        .map(|s| Ok(PyBytes::new(py, &s.to_bytes().py_err()?)))
        .collect::<PyResult<Vec<_>>>()?;
    Ok(Some((id, items)))
}

/// The rewrite messages of `paimon_rs.spark.sort_compact`: per planned split (`plan`), its
/// files removed and the new files the tasks wrote into its partition (`written`) added
/// (a deletion-vector table: the partitions' index files removed, which reads the index
/// manifest: the GIL is released).
#[pyfunction]
pub fn sort_compaction_messages(
    py: Python<'_>,
    table: &Table,
    plan: Vec<Vec<u8>>,
    written: Vec<CommitMessage>,
) -> PyResult<Vec<CommitMessage>> {
    let splits = planned_splits(&plan).py_err()?;
    let written: Vec<_> = written.into_iter().map(|m| m.into_core()).collect();
    let t = table.core().clone();
    let out = crate::pool::detach(py, || {
        paimon_rs_core::rewrite_messages(&t, &splits, &written)
    })
    .py_err()?;
    Ok(out.into_iter().map(CommitMessage::from_core).collect())
}

/// The driver's commit of `paimon_rs.spark.sort_compact` of a dynamic-bucket primary-key table:
/// the messages the tasks' overwrite writers wrote, committed as one OVERWRITE of the
/// partitions written that must replace exactly the files planned at `snapshot_id` (over
/// `partitions`) and those partitions' index files, else `CommitConflictError`; the snapshot
/// id. On failure the written data files are removed.
#[pyfunction]
#[pyo3(signature = (table, snapshot_id, messages, partitions=None))]
pub fn sort_compaction_commit<'py>(
    py: Python<'py>,
    table: &Table,
    snapshot_id: i64,
    messages: Vec<CommitMessage>,
    partitions: Option<Vec<Bound<'py, PyAny>>>,
) -> PyResult<Option<i64>> {
    let t = table.core().clone();
    let specs = crate::table::partition_specs(&t, partitions, "sort_compact")?;
    let msgs: Vec<_> = messages.into_iter().map(|m| m.into_core()).collect();
    crate::logbridge::flush(py);
    let r = crate::pool::detach(py, || {
        paimon_rs_core::commit_sort_compaction(&t, snapshot_id, specs.as_deref(), &msgs)
    });
    crate::logbridge::flush(py);
    r.py_err()
}

/// The splits of a sort compaction's plan (`sort_compaction_plan`'s serialized splits).
fn planned_splits(plan: &[Vec<u8>]) -> paimon_rs_core::Result<Vec<CoreSplit>> {
    plan.iter().map(|b| CoreSplit::from_bytes(b)).collect()
}

/// Sort keys from Python (`Table.sort_index` bytes as a pyarrow binary array, one chunk):
/// refused unless binary.
fn binary_keys(keys: ArrayData) -> PyResult<arrow::array::BinaryArray> {
    if keys.data_type() != &arrow::datatypes::DataType::Binary {
        return Err(crate::errors::to_py(paimon_rs_core::Error::invalid(
            format!(
                "sort keys must be a pyarrow binary array, got {}",
                keys.data_type()
            ),
        )));
    }
    Ok(arrow::array::BinaryArray::from(keys))
}

/// A task's share of `paimon_rs.spark.sort_compact` of an append table: `batch` (the table's
/// columns) holds rows of one partition in sort order, `keys` their sort keys; written into
/// that partition's split among `plan` (`sort_compaction_plan`'s) in files cut at curve cells
/// as the local sort writes a partition. The message of the new files
/// (`sort_compaction_messages` joins it to the plan).
#[pyfunction]
pub fn sort_write_run(
    py: Python<'_>,
    table: &Table,
    plan: Vec<Vec<u8>>,
    batch: PyArrowType<RecordBatch>,
    keys: PyArrowType<ArrayData>,
) -> PyResult<CommitMessage> {
    let keys = binary_keys(keys.0)?;
    let (t, batch) = (table.core().clone(), batch.0);
    let m = crate::pool::detach(py, || {
        let splits = planned_splits(&plan)?;
        paimon_rs_core::write_sorted_run(&t, &splits, &batch, &keys)
    })
    .py_err()?;
    Ok(CommitMessage::from_core(m))
}

/// A task's buckets of `paimon_rs.spark.sort_compact` of a dynamic-bucket table: per row of one
/// partition's rows in sort order (`keys`), its bucket, the rows cut at curve cells near
/// `target_rows`, piece `i` in bucket `first + i * stride` (as the local sort cuts buckets).
#[pyfunction]
pub fn sort_key_buckets(
    py: Python<'_>,
    keys: PyArrowType<ArrayData>,
    target_rows: usize,
    first: i32,
    stride: i32,
) -> PyResult<PyArrowType<ArrayData>> {
    let keys = binary_keys(keys.0)?;
    let buckets = crate::pool::detach(py, || {
        paimon_rs_core::sorted_key_buckets(&keys, target_rows, first, stride)
    })
    .py_err()?;
    Ok(PyArrowType(
        arrow::array::Int32Array::from(buckets).into_data(),
    ))
}
