//! `_core.ShufflePacker`: the pack stage of `paimon_rs.spark.write` (core `write::pack`).

use std::sync::Mutex;

use arrow::array::RecordBatch;
use arrow_pyarrow::{FromPyArrow, PyArrowType};
use paimon_rs_core::{Packer, ShuffleKeys};
use pyo3::prelude::*;

use crate::errors::IntoPy;
use crate::table::Table;

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
        let keys = match identity_keys {
            Some(k) => ShuffleKeys::Identity(k),
            None => ShuffleKeys::PartitionBucket,
        };
        Ok(ShufflePacker {
            inner: Mutex::new(Packer::new(keys, compression).py_err()?),
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
