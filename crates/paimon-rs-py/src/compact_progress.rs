//! `Table.compact` with a progress callback (`compact` is a method of `_core.Table`): the
//! compaction runs on the engine's pool while this thread calls the callback with the GIL.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;

use paimon_rs_core::{CompactProgress, Error, FileStoreTable, PartitionSpec};
use pyo3::prelude::*;

use crate::errors::IntoPy;

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
