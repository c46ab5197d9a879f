//! What a compaction would do and did, from Python: `Table.compaction_plan` and the summary
//! the CLI prints, and `Table.compact` with progress (`compact` is a method of `_core.Table`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;

use paimon_rs_core::{CompactProgress, Error, FileStoreTable, PartitionSpec, Split as CoreSplit};
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

/// `Table.compact` with a progress callback: the compaction runs on a thread of its own (no
/// GIL) and sends each report here; this thread takes the GIL only to call `callback` with
/// `(buckets_done, buckets_total, files_in, bytes_in, rows_in, files_out, bytes_out, rows_out)`.
///
/// Reports do not wait for the callback (the pool keeps compacting while it runs, and a callback
/// may itself use the engine, whose work runs on the same pool); once it raised, the next
/// report stops the compaction. The last report (all buckets done, before the commit) waits
/// for the answer to it and to every earlier one, so an exception from the callback always
/// stops the compaction before anything is committed (and is raised here). While it waits, the
/// reporting pool thread runs other pool work, so a callback's own engine calls can proceed
/// even on a one-thread pool.
pub fn compact_with_progress(
    py: Python<'_>,
    table: &FileStoreTable,
    full: bool,
    specs: Option<&[PartitionSpec]>,
    callback: &Bound<'_, PyAny>,
) -> PyResult<Option<i64>> {
    type Report = (CompactProgress, Option<mpsc::SyncSender<bool>>);
    let callback: Py<PyAny> = callback.clone().unbind();
    let stopped = AtomicBool::new(false);
    let mut raised: Option<PyErr> = None;
    crate::logbridge::flush(py);
    let result = py.detach(|| {
        let (tx, rx) = mpsc::channel::<Report>();
        std::thread::scope(|s| {
            let stopped = &stopped;
            let worker = s.spawn(move || {
                let stop = || Error::invalid("compaction stopped: the progress callback raised");
                let sink = |p: &CompactProgress| -> Result<(), Error> {
                    if stopped.load(Ordering::SeqCst) {
                        return Err(stop());
                    }
                    if p.buckets_done < p.buckets_total {
                        return tx.send((*p, None)).map_err(|_| stop());
                    }
                    let (reply_tx, reply_rx) = mpsc::sync_channel(1);
                    tx.send((*p, Some(reply_tx))).map_err(|_| stop())?;
                    if wait_helping_the_pool(&reply_rx) {
                        Ok(())
                    } else {
                        Err(stop())
                    }
                };
                crate::pool::install(|| {
                    paimon_rs_core::compact_table_with_progress(table, full, specs, &sink)
                })
            });
            // ends when the worker drops its sender
            for (p, reply) in rx {
                if raised.is_none() {
                    Python::attach(|py| {
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
                        if let Err(e) = callback.call1(py, args) {
                            raised = Some(e);
                            stopped.store(true, Ordering::SeqCst);
                        }
                    });
                }
                if let Some(reply) = reply {
                    // the worker waits for this answer; it cannot have gone
                    let _ = reply.send(raised.is_none());
                }
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

/// Wait for the answer on `rx` (false if the sender is gone), running pending work of the
/// current rayon pool meanwhile (a callback's engine call may be queued there).
fn wait_helping_the_pool(rx: &mpsc::Receiver<bool>) -> bool {
    loop {
        match rx.try_recv() {
            Ok(ok) => return ok,
            Err(mpsc::TryRecvError::Disconnected) => return false,
            Err(mpsc::TryRecvError::Empty) => {
                if rayon::yield_now() != Some(rayon::Yield::Executed) {
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
            }
        }
    }
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
