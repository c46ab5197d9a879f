//! Compaction of a table from Python: `Table.compact`, `Table.compaction_plan` and the
//! summary the CLI prints.

use arrow::array::RecordBatch;
use arrow_pyarrow::FromPyArrow;
use paimon_rs_core::commit::PartitionSpec;
use paimon_rs_core::compact::{compact_table as core_compact, plan};
use paimon_rs_core::error::Error;
use paimon_rs_core::spec::binary_row::datum_from_arrow;
use paimon_rs_core::table::FileStoreTable;
use pyo3::prelude::*;

use crate::errors::IntoPy;
use crate::table::Table;

/// A one-row batch of partition columns → a partition spec.
fn spec_of(table: &FileStoreTable, batch: &RecordBatch) -> Result<PartitionSpec, Error> {
    let mut spec = vec![];
    for (i, f) in batch.schema().fields().iter().enumerate() {
        if !table.partition_keys().contains(f.name()) {
            return Err(Error::invalid(format!(
                "compact: '{}' is not a partition key of table {}",
                f.name(),
                table.name
            )));
        }
        let t = table
            .schema
            .field(f.name())
            .map(|x| x.data_type.clone())
            .ok_or_else(|| Error::invalid(format!("unknown column {}", f.name())))?;
        if batch.num_rows() != 1 {
            return Err(Error::invalid("compact: a partition spec is one row"));
        }
        spec.push((
            f.name().clone(),
            datum_from_arrow(batch.column(i).as_ref(), 0, &t)?,
        ));
    }
    Ok(spec)
}

/// Compact `table` (full or picked), only partitions matching one of `partitions` (one-row
/// Arrow batches of partition columns); returns the COMPACT snapshot id or None.
#[pyfunction]
#[pyo3(signature = (table, full=false, partitions=None))]
pub fn compact_table(
    py: Python<'_>,
    table: &Table,
    full: bool,
    partitions: Option<Vec<Bound<'_, PyAny>>>,
) -> PyResult<Option<i64>> {
    let t = table.core().clone();
    let specs: Option<Vec<PartitionSpec>> = match partitions {
        None => None,
        Some(list) => Some(
            list.iter()
                .map(|o| {
                    let b = RecordBatch::from_pyarrow_bound(o)?;
                    spec_of(&t, &b).py_err()
                })
                .collect::<PyResult<_>>()?,
        ),
    };
    crate::logbridge::flush(py);
    let r = py.detach(|| core_compact(&t, full, specs.as_deref()));
    crate::logbridge::flush(py);
    r.py_err()
}

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
    let plans = py.detach(|| plan::compaction_plan(&t)).py_err()?;
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
        .detach(|| plan::compaction_summary(&t, snapshot_id))
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
