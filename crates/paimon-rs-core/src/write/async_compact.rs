//! Compaction in the background for a stream write (Java's `MergeTreeCompactManager` submitting
//! to the write's compaction executor, `CompactFutureManager.taskFuture`;
//! paimon-behaviour.md §1.6): a bucket's picked compaction runs on the write's compaction
//! thread while the writer goes on buffering and flushing; the writer takes a finished result
//! at its next flush or `prepare_commit` (waiting only where Java waits).
//!
//! One thread per table write, as Java's single-threaded `compactExecutor` of
//! `AbstractFileStoreWrite`: compactions of different buckets queue in submission order, the
//! flushes keep the shared rayon pool (and the other core) to themselves, and memory held by
//! compactions stays that of one merge at a time.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, TryRecvError};
use std::sync::{Arc, OnceLock};

use crate::compact::{BucketCompactor, CompactResult, Unit};
use crate::error::{Error, Result};

type Outcome = Result<CompactResult>;

/// The compaction thread of one table write, started on the first compaction it runs.
#[derive(Default)]
pub(crate) struct CompactExecutor {
    pool: OnceLock<std::result::Result<rayon::ThreadPool, String>>,
    /// Tests: hold jobs back while locked (a compaction "still running").
    #[cfg(test)]
    pub(crate) hold: Arc<std::sync::Mutex<()>>,
    /// Tests: the next job fails as an I/O error would.
    #[cfg(test)]
    pub(crate) fail_next: Arc<AtomicBool>,
}

impl CompactExecutor {
    fn pool(&self) -> Result<&rayon::ThreadPool> {
        let pool = self.pool.get_or_init(|| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(1)
                .thread_name(|_| "paimon-rs-compaction".into())
                .build()
                .map_err(|e| e.to_string())
        });
        pool.as_ref()
            .map_err(|e| Error::Internal(format!("cannot start the compaction thread: {e}")))
    }

    /// Run `unit` of `compactor` on the compaction thread; `label` names the bucket
    /// (`table (partition/bucket-n)`) in its errors.
    pub fn submit(
        &self,
        mut compactor: BucketCompactor,
        unit: Unit,
        label: String,
    ) -> Result<PendingCompaction> {
        let (tx, rx) = mpsc::channel::<Outcome>();
        let cancel = Arc::new(AtomicBool::new(false));
        let cancelled = Arc::clone(&cancel);
        #[cfg(test)]
        let (hold, fail) = (Arc::clone(&self.hold), Arc::clone(&self.fail_next));
        self.pool()?.spawn(move || {
            #[cfg(test)]
            let _held = hold.lock();
            if cancelled.load(Ordering::Acquire) {
                // cancelled before it started: nothing written (the receiver sees the sender
                // dropped)
                return;
            }
            #[cfg(test)]
            if fail.swap(false, Ordering::AcqRel) {
                let _ = tx.send(Err(Error::io(
                    "injected",
                    std::io::Error::other("injected compaction failure"),
                )));
                return;
            }
            let r = compactor.run_unit(unit);
            if let Err(mpsc::SendError(Ok(r))) = tx.send(r) {
                // the writer is gone: its files belong to no commit
                compactor.discard(&r);
            }
        });
        Ok(PendingCompaction {
            rx: Some(rx),
            cancel,
            label,
        })
    }
}

/// A compaction submitted to the compaction thread and not yet taken by its writer (Java's
/// `taskFuture`). Dropped unfinished, it is cancelled (or waited for) and its files deleted.
pub(crate) struct PendingCompaction {
    rx: Option<Receiver<Outcome>>,
    cancel: Arc<AtomicBool>,
    label: String,
}

impl PendingCompaction {
    /// The result if the compaction finished (`block`: wait for it). `Ok(None)`: still running;
    /// `Ok(Some(None))`: it ended without a result (cancelled before it started).
    pub fn take(&mut self, block: bool) -> Result<Option<Option<CompactResult>>> {
        let Some(rx) = &self.rx else {
            return Ok(Some(None));
        };
        let got = if block {
            rx.recv().map_err(|_| TryRecvError::Disconnected)
        } else {
            rx.try_recv()
        };
        let outcome = match got {
            Ok(o) => o,
            Err(TryRecvError::Empty) => return Ok(None),
            Err(TryRecvError::Disconnected) => {
                self.rx = None;
                return Ok(Some(None));
            }
        };
        self.rx = None;
        match outcome {
            Ok(r) => Ok(Some(Some(r))),
            Err(e) => Err(in_background(e, &self.label)),
        }
    }

    /// Java's `cancelCompaction` then `sync` at `close`: a compaction not started yet never
    /// starts; a running one is waited for. Files it wrote are deleted (`dir`: the bucket's).
    pub fn cancel(mut self, dir: &std::path::Path) {
        self.cancel_in(dir);
    }

    fn cancel_in(&mut self, dir: &std::path::Path) {
        self.cancel.store(true, Ordering::Release);
        if let Ok(Some(Some(r))) = self.take(true) {
            for f in r.written_all() {
                let _ = crate::fileindex::remove_data_file(dir, &f);
            }
        }
    }
}

impl Drop for PendingCompaction {
    fn drop(&mut self) {
        if self.rx.is_some() {
            // dropped without `cancel` (a writer dropped mid-compaction): the job deletes its
            // own files when nobody receives them
            self.cancel.store(true, Ordering::Release);
        }
    }
}

/// An error of a background compaction, naming the bucket (`label`): I/O, corrupt-file and
/// internal errors keep their kind, the message prefixed; a Parquet error names the data file
/// in the bucket's directory already; any other becomes an internal error with its message.
fn in_background(e: Error, label: &str) -> Error {
    let what = |m: String| format!("background compaction of {label} failed: {m}");
    match e {
        Error::Io { path, source } => Error::Io {
            path,
            source: std::io::Error::new(source.kind(), what(source.to_string())),
        },
        Error::CorruptFile { path, message } => Error::CorruptFile {
            path,
            message: what(message),
        },
        e @ Error::Parquet { .. } => e,
        Error::Internal(m) => Error::Internal(what(m)),
        other => Error::Internal(what(other.to_string())),
    }
}
