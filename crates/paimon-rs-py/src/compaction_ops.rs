//! What a compaction would do and did, from Python: `Table.compaction_plan` and the summary
//! the CLI prints, and `Table.compact` with progress (`compact` is a method of `_core.Table`).

use std::sync::mpsc;

use paimon_rs_core::commit::PartitionSpec;
use paimon_rs_core::compact::{self, plan, progress::CompactProgress};
use paimon_rs_core::table::FileStoreTable;
use paimon_rs_core::Error;
use pyo3::prelude::*;

use crate::errors::IntoPy;
use crate::table::Table;

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
    let plans = crate::pool::detach(py, || plan::compaction_plan(&t)).py_err()?;
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

/// `Table.compact` with a progress callback: the compaction runs on a thread of its own (no
/// GIL) and sends each report here; this thread takes the GIL only to call `callback` with
/// `(buckets_done, buckets_total, files_in, bytes_in, rows_in, files_out, bytes_out, rows_out)`
/// and answers whether it returned. The worker waits for the answer, so an exception from the
/// callback stops the compaction before anything is committed (and is raised here).
pub fn compact_with_progress(
    py: Python<'_>,
    table: &FileStoreTable,
    full: bool,
    specs: Option<&[PartitionSpec]>,
    callback: &Bound<'_, PyAny>,
) -> PyResult<Option<i64>> {
    type Report = (CompactProgress, mpsc::SyncSender<bool>);
    let callback: Py<PyAny> = callback.clone().unbind();
    let mut raised: Option<PyErr> = None;
    crate::logbridge::flush(py);
    let result = py.detach(|| {
        let (tx, rx) = mpsc::channel::<Report>();
        std::thread::scope(|s| {
            let worker = s.spawn(move || {
                let sink = |p: &CompactProgress| -> Result<(), Error> {
                    let (reply_tx, reply_rx) = mpsc::sync_channel(1);
                    let stopped =
                        || Error::invalid("compaction stopped: the progress callback raised");
                    tx.send((*p, reply_tx)).map_err(|_| stopped())?;
                    match reply_rx.recv() {
                        Ok(true) => Ok(()),
                        _ => Err(stopped()),
                    }
                };
                crate::pool::install(|| {
                    compact::compact_table_with_progress(table, full, specs, &sink)
                })
            });
            // ends when the worker drops its sender
            for (p, reply) in rx {
                let ok = raised.is_none()
                    && Python::attach(|py| {
                        let args = (
                            p.buckets_done,
                            p.buckets_total,
                            p.files_in,
                            p.bytes_in,
                            p.rows_in,
                            p.files_out,
                            p.bytes_out,
                            p.rows_out,
                        );
                        match callback.call1(py, args) {
                            Ok(_) => true,
                            Err(e) => {
                                raised = Some(e);
                                false
                            }
                        }
                    });
                // the worker may have stopped waiting (it never does before answering)
                let _ = reply.send(ok);
            }
            worker
                .join()
                .unwrap_or_else(|_| Err(Error::Internal("the compaction thread panicked".into())))
        })
    });
    crate::logbridge::flush(py);
    if let Some(e) = raised {
        return Err(e);
    }
    result.py_err()
}
