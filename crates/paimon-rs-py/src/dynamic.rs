//! The assign stage of `paimon_rs.spark.write` into a dynamic-bucket table (core
//! `write::dynamic_bucket`): which assign task a row goes to, and that task's buckets.

use std::sync::Mutex;

use arrow::array::{Array, ArrayData, Int32Array, RecordBatch};
use arrow_pyarrow::{FromPyArrow, PyArrowType};
use paimon_rs_core::AssignTask;
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
) -> PyResult<(PyArrowType<ArrayData>, PyArrowType<ArrayData>)> {
    let batch = RecordBatch::from_pyarrow_bound(batch)?;
    let t = table.core();
    let (c, h) = crate::pool::detach(py, || {
        paimon_rs_core::assigner_channels(t, &batch, num_assigners)
    })
    .py_err()?;
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
