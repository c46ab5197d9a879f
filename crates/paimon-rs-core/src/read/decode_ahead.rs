//! Decode-ahead for a lazy read: a thread pulls the next batches of a [`BatchIter`] while the
//! consumer works on the current one (e.g. a Spark Python worker handing a batch to the JVM).
//!
//! - Bounded: at most `depth` decoded batches wait for the consumer (plus the one it holds).
//! - Errors reach the consumer in stream order, unchanged (they name the table and file); the
//!   thread stops after the first one.
//! - Cancellation: [`DecodeAhead::close`] (or dropping it) tells the thread to stop; it exits
//!   after the batch it is decoding, never blocked on a consumer that is gone.
//! - Fork safety: the thread exists only in the process that spawned it. The caller spawns it
//!   lazily (on the first batch wanted), and a forked child that inherited a started stream gets
//!   an error instead of waiting forever; dropping such a stream in the child leaks it (as the
//!   binding's per-process pool does), never touching the parent's thread.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::Arc;
use std::thread::JoinHandle;

use arrow_array::RecordBatch;

use crate::error::{Error, Result};
use crate::merge::BatchIter;

/// Decode-ahead threads alive in this process (tests check that early stops free them).
static LIVE: AtomicUsize = AtomicUsize::new(0);

/// How many decode-ahead threads are running in this process.
pub fn decode_ahead_threads() -> usize {
    LIVE.load(Ordering::SeqCst)
}

struct LiveGuard;

impl Drop for LiveGuard {
    fn drop(&mut self) {
        LIVE.fetch_sub(1, Ordering::SeqCst);
    }
}

/// One step of the stream on the decode thread: `it.next()`, possibly run inside a thread pool
/// (the Python binding runs it on its per-process rayon pool).
pub type Step = Box<dyn FnMut(&mut BatchIter) -> Option<Result<RecordBatch>> + Send>;

/// A [`BatchIter`] decoded `depth` batches ahead on a thread of its own.
pub struct DecodeAhead {
    rx: Option<Receiver<Result<RecordBatch>>>,
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
    pid: u32,
}

impl DecodeAhead {
    /// Start decoding `it` on a new thread, keeping at most `depth` (>= 1) batches ready.
    pub fn spawn(mut it: BatchIter, depth: usize, mut step: Step) -> Result<Self> {
        if depth == 0 {
            return Err(Error::invalid("decode-ahead depth must be >= 1"));
        }
        // a rendezvous channel already holds one batch (blocked in `send`): depth - 1 more queue
        let (tx, rx) = sync_channel::<Result<RecordBatch>>(depth - 1);
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        LIVE.fetch_add(1, Ordering::SeqCst);
        let spawned = std::thread::Builder::new()
            .name("paimon-rs-decode-ahead".into())
            .spawn(move || {
                let _live = LiveGuard;
                while !stopped.load(Ordering::SeqCst) {
                    // a panic must not look like the end of the stream (rows silently missing)
                    let item = match catch_unwind(AssertUnwindSafe(|| step(&mut it))) {
                        Ok(Some(item)) => item,
                        Ok(None) => break,
                        Err(p) => Err(Error::Internal(format!(
                            "the decode-ahead thread panicked: {}",
                            panic_message(&*p)
                        ))),
                    };
                    let failed = item.is_err();
                    // blocks while `depth` batches wait; fails once the consumer is gone
                    if tx.send(item).is_err() || failed {
                        break;
                    }
                }
            });
        let handle = match spawned {
            Ok(h) => h,
            Err(e) => {
                LIVE.fetch_sub(1, Ordering::SeqCst);
                return Err(Error::Internal(format!(
                    "cannot start a decode-ahead thread: {e}"
                )));
            }
        };
        Ok(DecodeAhead {
            rx: Some(rx),
            stop,
            handle: Some(handle),
            pid: std::process::id(),
        })
    }

    /// The next batch: waits for the thread (call it without holding a lock others need).
    /// `None` once the stream is exhausted, after an error, or after `close`.
    pub fn next_batch(&mut self) -> Option<Result<RecordBatch>> {
        if self.pid != std::process::id() {
            return Some(Err(Error::Internal(format!(
                "a decode-ahead read started in process {} cannot be continued in the forked \
                 process {}: its thread does not exist here (start a new read in this process)",
                self.pid,
                std::process::id()
            ))));
        }
        let rx = self.rx.as_ref()?;
        let r = rx.recv().ok();
        if r.is_none() {
            self.close();
        }
        r
    }

    /// Stop the thread and wait for it (at most the batch it is decoding).
    pub fn close(&mut self) {
        if self.pid != std::process::id() {
            return;
        }
        self.stop.store(true, Ordering::SeqCst);
        self.rx = None; // a blocked send fails: the thread returns
        if let Some(h) = self.handle.take() {
            let _ = h.join(); // the thread catches its panics: nothing to report here
        }
    }
}

impl Drop for DecodeAhead {
    fn drop(&mut self) {
        if self.pid != std::process::id() {
            // a forked child's copy: the thread is the parent's; touch nothing of it
            if let Some(h) = self.handle.take() {
                std::mem::forget(h);
            }
            if let Some(rx) = self.rx.take() {
                std::mem::forget(rx);
            }
            return;
        }
        // no join here (the owner may hold the GIL): the thread exits on its own
        self.stop.store(true, Ordering::SeqCst);
        self.rx = None;
        self.handle = None; // detached
    }
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".into())
}

impl Iterator for DecodeAhead {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_batch()
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::sync::Mutex;

    use arrow_array::{ArrayRef, Int64Array};

    use super::*;

    // LIVE is process-wide: tests that count threads run one at a time
    static SERIAL: Mutex<()> = Mutex::new(());

    fn batch(v: i64) -> RecordBatch {
        let a: ArrayRef = Arc::new(Int64Array::from(vec![v]));
        RecordBatch::try_from_iter([("v", a)]).expect("batch")
    }

    fn plain() -> Step {
        Box::new(|it: &mut BatchIter| it.next())
    }

    fn values(
        it: impl Iterator<Item = Result<RecordBatch>>,
    ) -> Vec<std::result::Result<i64, String>> {
        it.map(|r| match r {
            Ok(b) => Ok(b
                .column(0)
                .as_any()
                .downcast_ref::<Int64Array>()
                .expect("int64")
                .value(0)),
            Err(e) => Err(e.to_string()),
        })
        .collect()
    }

    fn wait_until_no_threads() -> usize {
        for _ in 0..2000 {
            if decode_ahead_threads() == 0 {
                return 0;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        decode_ahead_threads()
    }

    #[test]
    fn yields_every_batch_in_order() {
        let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        for depth in [1, 2, 5] {
            let it: BatchIter = Box::new((0..20).map(|v| Ok(batch(v))));
            let got = values(DecodeAhead::spawn(it, depth, plain()).expect("spawn"));
            assert_eq!(got, (0..20).map(Ok).collect::<Vec<_>>(), "depth {depth}");
        }
        assert_eq!(wait_until_no_threads(), 0);
    }

    #[test]
    fn an_error_in_the_middle_reaches_the_consumer_and_ends_the_stream() {
        let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let it: BatchIter = Box::new((0..10).map(|v| {
            if v == 3 {
                Err(Error::CorruptFile {
                    path: PathBuf::from("bucket-0/data-3.parquet"),
                    message: "bad page".into(),
                })
            } else {
                Ok(batch(v))
            }
        }));
        let got = values(DecodeAhead::spawn(it, 2, plain()).expect("spawn"));
        assert_eq!(got.len(), 4, "{got:?}");
        assert_eq!(got[..3], [Ok(0), Ok(1), Ok(2)]);
        let err = got[3].clone().expect_err("the 4th item is the error");
        assert!(err.contains("bucket-0/data-3.parquet"), "{err}");
        assert_eq!(wait_until_no_threads(), 0);
    }

    #[test]
    fn close_after_one_batch_stops_the_thread_of_an_endless_stream() {
        let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let it: BatchIter = Box::new((0..).map(|v| Ok(batch(v))));
        let mut d = DecodeAhead::spawn(it, 2, plain()).expect("spawn");
        assert!(d.next_batch().expect("one").is_ok());
        assert_eq!(decode_ahead_threads(), 1);
        d.close();
        assert_eq!(decode_ahead_threads(), 0, "close joins the thread");
        assert!(d.next_batch().is_none());
    }

    #[test]
    fn dropping_an_unfinished_stream_frees_the_thread() {
        let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let it: BatchIter = Box::new((0..).map(|v| Ok(batch(v))));
        let mut d = DecodeAhead::spawn(it, 1, plain()).expect("spawn");
        assert!(d.next_batch().expect("one").is_ok());
        drop(d);
        assert_eq!(wait_until_no_threads(), 0);
    }

    #[test]
    fn a_panic_in_the_decoder_is_an_error_not_an_end() {
        let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let it: BatchIter = Box::new((0..5).map(|v| {
            assert!(v != 2, "decoder bug at 2");
            Ok(batch(v))
        }));
        let got = values(DecodeAhead::spawn(it, 1, plain()).expect("spawn"));
        assert_eq!(got[..2], [Ok(0), Ok(1)]);
        let err = got[2].clone().expect_err("an error after the panic");
        assert!(err.contains("decoder bug at 2"), "{err}");
        assert_eq!(got.len(), 3);
        assert_eq!(wait_until_no_threads(), 0);
    }

    #[test]
    fn depth_zero_is_refused() {
        let it: BatchIter = Box::new(std::iter::empty());
        assert!(DecodeAhead::spawn(it, 0, plain()).is_err());
    }
}
