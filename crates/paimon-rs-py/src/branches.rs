//! Branches (`paimon_rs_core::create_branch` ...) and the tag and rollback operations added with them
//! (`rename_tag`, `replace_tag`, `rollback_to_timestamp`), for `paimon_rs.Table` and the
//! catalog's branch methods.

use pyo3::prelude::*;

use crate::errors::IntoPy;
use crate::table::{reclaimed, Reclaimed, Table};

/// The branch the handle reads and writes (`main` by default).
#[pyfunction]
pub fn current_branch(table: &Table) -> String {
    table.core().branch().to_string()
}

/// The table's branches (not `main`), sorted.
#[pyfunction]
pub fn list_branches(py: Python<'_>, table: &Table) -> PyResult<Vec<String>> {
    let t = table.core().clone();
    py.detach(|| paimon_rs_core::list_branches(&t)).py_err()
}

/// Create branch `name`, empty with the latest schema or from tag `tag`.
#[pyfunction]
#[pyo3(signature = (table, name, tag=None, ignore_if_exists=false))]
pub fn create_branch(
    py: Python<'_>,
    table: &Table,
    name: &str,
    tag: Option<String>,
    ignore_if_exists: bool,
) -> PyResult<()> {
    let t = table.core().clone();
    let r = py.detach(|| paimon_rs_core::create_branch(&t, name, tag.as_deref(), ignore_if_exists));
    crate::logbridge::flush(py);
    r.py_err()
}

/// Delete branch `name`.
#[pyfunction]
pub fn drop_branch(py: Python<'_>, table: &Table, name: &str) -> PyResult<()> {
    let t = table.core().clone();
    let r = py.detach(|| paimon_rs_core::drop_branch(&t, name));
    crate::logbridge::flush(py);
    r.py_err()
}

/// Rename branch `from` to `to`.
#[pyfunction]
pub fn rename_branch(py: Python<'_>, table: &Table, from: &str, to: &str) -> PyResult<()> {
    let t = table.core().clone();
    py.detach(|| paimon_rs_core::rename_branch(&t, from, to))
        .py_err()
}

/// Make the handle's branch take over branch `name`'s history.
#[pyfunction]
pub fn fast_forward(py: Python<'_>, table: &Table, name: &str) -> PyResult<()> {
    let t = table.core().clone();
    let r = py.detach(|| paimon_rs_core::fast_forward(&t, name));
    crate::logbridge::flush(py);
    r.py_err()
}

/// Rename tag `from` to `to`.
#[pyfunction]
pub fn rename_tag(py: Python<'_>, table: &Table, from: &str, to: &str) -> PyResult<()> {
    let t = table.core().clone();
    let r = py.detach(|| paimon_rs_core::rename_tag(&t, from, to));
    crate::logbridge::flush(py);
    r.py_err()
}

/// Point tag `name` at another snapshot (the latest if None).
#[pyfunction]
#[pyo3(signature = (table, name, snapshot_id=None, time_retained=None))]
pub fn replace_tag(
    py: Python<'_>,
    table: &Table,
    name: &str,
    snapshot_id: Option<i64>,
    time_retained: Option<String>,
) -> PyResult<Reclaimed> {
    let t = table.core().clone();
    let r = crate::pool::detach(py, || {
        paimon_rs_core::replace_tag(&t, name, snapshot_id, time_retained.as_deref())
    });
    crate::logbridge::flush(py);
    Ok(reclaimed(&r.py_err()?))
}

/// Roll back to the newest snapshot committed at or before `millis`.
#[pyfunction]
pub fn rollback_to_timestamp(py: Python<'_>, table: &Table, millis: i64) -> PyResult<Reclaimed> {
    let t = table.core().clone();
    let r = crate::pool::detach(py, || paimon_rs_core::rollback_to_timestamp(&t, millis));
    crate::logbridge::flush(py);
    Ok(reclaimed(&r.py_err()?))
}
