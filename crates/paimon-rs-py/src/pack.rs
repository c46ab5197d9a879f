//! `_core.ShufflePacker`: the pack stage of `paimon_rs.spark.write` (core `write::pack`).

use std::sync::Mutex;

use arrow::array::{Array, ArrayData, Int32Array, RecordBatch};
use arrow_pyarrow::{FromPyArrow, PyArrowType};
use paimon_rs_core::{Packer, ShuffleKeys};
use pyo3::prelude::*;

use crate::errors::IntoPy;
use crate::table::Table;

fn shuffle_keys_of(identity_keys: Option<Vec<i32>>) -> ShuffleKeys {
    match identity_keys {
        Some(k) => ShuffleKeys::Identity(k),
        None => ShuffleKeys::PartitionBucket,
    }
}

/// The shuffle key of every row of `batch` (at least the partition and bucket-key columns), as
/// a pyarrow int32 array: the keys `ShufflePacker` groups by, for the row shuffle's key UDF.
#[pyfunction]
#[pyo3(signature = (table, batch, identity_keys=None))]
pub fn shuffle_keys(
    py: Python<'_>,
    table: &Table,
    batch: &Bound<'_, PyAny>,
    identity_keys: Option<Vec<i32>>,
) -> PyResult<PyArrowType<ArrayData>> {
    let batch = RecordBatch::from_pyarrow_bound(batch)?;
    let keys = shuffle_keys_of(identity_keys);
    let t = table.core();
    let out = crate::pool::detach(py, || keys.of(t, &batch)).py_err()?;
    Ok(PyArrowType(Int32Array::from(out).into_data()))
}

/// Rows held by shuffle key (the table's bucket hash; `identity_keys[bucket]` on an
/// unpartitioned table, else partition hash * 31 + bucket), emitted as Arrow IPC streams.
#[pyclass(module = "paimon_rs._core", frozen)]
pub struct ShufflePacker {
    inner: Mutex<Packer>,
}

impl ShufflePacker {
    fn packer(&self) -> PyResult<std::sync::MutexGuard<'_, Packer>> {
        self.inner.lock().map_err(|_| {
            pyo3::exceptions::PyRuntimeError::new_err("ShufflePacker: a packer call panicked")
        })
    }
}

#[pymethods]
impl ShufflePacker {
    #[new]
    #[pyo3(signature = (identity_keys=None, compression=None))]
    fn new(identity_keys: Option<Vec<i32>>, compression: Option<&str>) -> PyResult<Self> {
        Ok(ShufflePacker {
            inner: Mutex::new(Packer::new(shuffle_keys_of(identity_keys), compression).py_err()?),
        })
    }

    /// Hold the rows of `batch` (a pyarrow RecordBatch of the table's columns) by shuffle key.
    fn push(&self, py: Python<'_>, table: &Table, batch: &Bound<'_, PyAny>) -> PyResult<()> {
        let batch = RecordBatch::from_pyarrow_bound(batch)?;
        let mut guard = self.packer()?;
        let p: &mut Packer = &mut guard;
        let t = table.core();
        crate::pool::detach(py, || p.push(t, &batch)).py_err()
    }

    /// Bytes of the rows held.
    #[getter]
    fn bytes(&self) -> PyResult<usize> {
        Ok(self.packer()?.bytes())
    }

    /// Every key held as one IPC stream: batches of `(k int32, blob binary | large_binary)` of
    /// about `max_bytes` of blobs at most; the packer is empty after.
    fn finish(
        &self,
        py: Python<'_>,
        large: bool,
        max_bytes: usize,
    ) -> PyResult<Vec<PyArrowType<RecordBatch>>> {
        let mut guard = self.packer()?;
        let p: &mut Packer = &mut guard;
        let out = crate::pool::detach(py, || p.finish(large, max_bytes)).py_err()?;
        Ok(out.into_iter().map(PyArrowType).collect())
    }
}
