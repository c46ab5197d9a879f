//! The assign stage of `paimon_rs.spark.write` into a dynamic-bucket table (core
//! `write::dynamic_bucket`): which assign task a row goes to, and that task's buckets.

use std::sync::Mutex;

use arrow::array::{Array, ArrayData, Int32Array, RecordBatch};
use arrow_pyarrow::{FromPyArrow, PyArrowType};
use paimon_rs_core::{AssignTask, CrossAssignTask};
use pyo3::prelude::*;

use crate::errors::IntoPy;
use crate::table::Table;

/// The number of assign tasks of a distributed write of `table` over `parallelism` engine
/// tasks (`dynamic-bucket.assigner-parallelism`, `max-buckets`, `initial-buckets`).
#[pyfunction]
pub fn num_assign_tasks(table: &Table, parallelism: i32) -> PyResult<i32> {
    paimon_rs_core::num_assign_tasks(table.core(), parallelism).py_err()
}

/// Per row of `batch` (at least the partition and primary-key columns, by name): its assign
/// task of `num_assigners` and its key hash, as two pyarrow int32 arrays.
#[pyfunction]
pub fn assigner_channels(
    py: Python<'_>,
    table: &Table,
    batch: &Bound<'_, PyAny>,
    num_assigners: i32,
) -> PyResult<Channels> {
    channels_with(
        py,
        table,
        batch,
        num_assigners,
        paimon_rs_core::assigner_channels,
    )
}

type Channels = (PyArrowType<ArrayData>, PyArrowType<ArrayData>);

/// A core function giving each row's assign task and key hash.
type ChannelsFn = fn(
    &paimon_rs_core::FileStoreTable,
    &RecordBatch,
    i32,
) -> paimon_rs_core::Result<(Vec<i32>, Vec<i32>)>;

/// `channels` of `batch` (GIL released) as two pyarrow int32 arrays.
fn channels_with(
    py: Python<'_>,
    table: &Table,
    batch: &Bound<'_, PyAny>,
    num_assigners: i32,
    channels: ChannelsFn,
) -> PyResult<Channels> {
    let batch = RecordBatch::from_pyarrow_bound(batch)?;
    let t = table.core();
    let (c, h) = crate::pool::detach(py, || channels(t, &batch, num_assigners)).py_err()?;
    Ok((
        PyArrowType(Int32Array::from(c).into_data()),
        PyArrowType(Int32Array::from(h).into_data()),
    ))
}

/// One assign task (`AssignTask`): assigner `assign_id` of `num_assigners` over the hash index
/// of snapshot `snapshot_id` (None: the empty table).
#[pyclass(module = "paimon_rs._core", frozen)]
pub struct DynamicAssignTask {
    inner: Mutex<AssignTask>,
}

#[pymethods]
impl DynamicAssignTask {
    #[new]
    #[pyo3(signature = (table, num_assigners, assign_id, snapshot_id=None))]
    fn new(
        py: Python<'_>,
        table: &Table,
        num_assigners: i32,
        assign_id: i32,
        snapshot_id: Option<i64>,
    ) -> PyResult<Self> {
        let t = table.core();
        let inner = crate::pool::detach(py, || {
            AssignTask::new(t, num_assigners, assign_id, snapshot_id)
        })
        .py_err()?;
        Ok(DynamicAssignTask {
            inner: Mutex::new(inner),
        })
    }

    /// The bucket of every row of `batch` (a pyarrow RecordBatch with at least the partition
    /// and primary-key columns), as a pyarrow int32 array.
    fn assign(&self, py: Python<'_>, batch: &Bound<'_, PyAny>) -> PyResult<PyArrowType<ArrayData>> {
        let batch = RecordBatch::from_pyarrow_bound(batch)?;
        let mut guard = self.inner.lock().map_err(|_| {
            pyo3::exceptions::PyRuntimeError::new_err("DynamicAssignTask: an assign call panicked")
        })?;
        let task: &mut AssignTask = &mut guard;
        let out = crate::pool::detach(py, || task.assign(&batch)).py_err()?;
        Ok(PyArrowType(Int32Array::from(out).into_data()))
    }
}

/// Per row of `batch` (at least the primary-key columns, by name) of a cross-partition upsert
/// table: its assign task of `num_assigners` (by the whole primary key's hash) and that hash,
/// as two pyarrow int32 arrays.
#[pyfunction]
pub fn cross_partition_channels(
    py: Python<'_>,
    table: &Table,
    batch: &Bound<'_, PyAny>,
    num_assigners: i32,
) -> PyResult<Channels> {
    channels_with(
        py,
        table,
        batch,
        num_assigners,
        paimon_rs_core::cross_partition_channels,
    )
}

/// One assign task of a distributed write of a cross-partition upsert table
/// (`CrossAssignTask`): assigner `assign_id` of `num_assigners` over the keys of snapshot
/// `snapshot_id` (None: the empty table). Its key index spills past
/// `lookup.cache-max-memory-size`; the spill files go when it is closed or dropped.
#[pyclass(module = "paimon_rs._core", frozen)]
pub struct CrossPartitionAssignTask {
    inner: Mutex<Option<CrossAssignTask>>,
}

#[pymethods]
impl CrossPartitionAssignTask {
    #[new]
    #[pyo3(signature = (table, num_assigners, assign_id, snapshot_id=None))]
    fn new(
        py: Python<'_>,
        table: &Table,
        num_assigners: i32,
        assign_id: i32,
        snapshot_id: Option<i64>,
    ) -> PyResult<Self> {
        let t = table.core();
        let inner = crate::pool::detach(py, || {
            CrossAssignTask::new(t, num_assigners, assign_id, snapshot_id)
        })
        .py_err()?;
        Ok(CrossPartitionAssignTask {
            inner: Mutex::new(Some(inner)),
        })
    }

    /// The rows of `batch` (a pyarrow RecordBatch of the table's columns) routed through the
    /// key index: (rows, row kinds as int8, buckets as int32), or None when no row is left.
    #[allow(clippy::type_complexity)]
    fn assign(
        &self,
        py: Python<'_>,
        batch: &Bound<'_, PyAny>,
    ) -> PyResult<
        Option<(
            PyArrowType<RecordBatch>,
            PyArrowType<ArrayData>,
            PyArrowType<ArrayData>,
        )>,
    > {
        let batch = RecordBatch::from_pyarrow_bound(batch)?;
        let mut guard = self.inner.lock().map_err(|_| {
            pyo3::exceptions::PyRuntimeError::new_err(
                "CrossPartitionAssignTask: an assign call panicked",
            )
        })?;
        let Some(task) = guard.as_mut() else {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "CrossPartitionAssignTask: closed",
            ));
        };
        crate::logbridge::flush(py);
        let out = crate::pool::detach(py, || task.assign(&batch));
        crate::logbridge::flush(py);
        let Some((rows, kinds, buckets)) = out.py_err()? else {
            return Ok(None);
        };
        Ok(Some((
            PyArrowType(rows),
            PyArrowType(kinds.into_data()),
            PyArrowType(buckets.into_data()),
        )))
    }

    /// Drop the key index and its spill files.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let task = self
            .inner
            .lock()
            .map_err(|_| {
                pyo3::exceptions::PyRuntimeError::new_err(
                    "CrossPartitionAssignTask: an assign call panicked",
                )
            })?
            .take();
        py.detach(move || drop(task));
        Ok(())
    }
}
