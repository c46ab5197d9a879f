//! Rust `log` records -> Python `logging`, under the record's target (`paimon_rs.commit`,
//! `paimon_rs.spill`, ...).
//!
//! Why not pyo3-log: it takes the GIL on the logging thread, and the engine logs from worker
//! threads while the Python thread that started the work may hold the GIL waiting on a lock the
//! worker holds (two Python threads sharing a write): a deadlock. Here a record is only queued
//! (no GIL); the binding hands the queue to Python with the GIL before and after each engine
//! call that logs (`flush`: writes, prepare_commit, commit). Records are thus emitted at the end
//! of the call that made them, each message carrying its own timing. Levels below the
//! `paimon_rs` logger's effective level are dropped before formatting (`log::set_max_level`,
//! refreshed at each flush, so a logging configuration made between calls takes effect).

use std::sync::Mutex;

use log::{Level, LevelFilter, Log, Metadata, Record};
use pyo3::prelude::*;

/// More records than this between two flushes are counted, not kept.
const MAX_QUEUED: usize = 10_000;

struct Queue {
    records: Vec<(Level, String, String)>,
    dropped: usize,
}

static QUEUE: Mutex<Queue> = Mutex::new(Queue {
    records: Vec::new(),
    dropped: 0,
});

struct Bridge;

static BRIDGE: Bridge = Bridge;

impl Log for Bridge {
    fn enabled(&self, metadata: &Metadata) -> bool {
        metadata.level() <= log::max_level() && metadata.target().starts_with("paimon_rs")
    }

    fn log(&self, record: &Record) {
        if !self.enabled(record.metadata()) {
            return;
        }
        // a poisoned queue only means a panic elsewhere while pushing: keep logging
        let mut q = QUEUE.lock().unwrap_or_else(|e| e.into_inner());
        if q.records.len() < MAX_QUEUED {
            let msg = record.args().to_string();
            q.records
                .push((record.level(), record.target().to_string(), msg));
        } else {
            q.dropped += 1;
        }
    }

    fn flush(&self) {}
}

/// Install the bridge (once per process; another `log` logger already installed wins).
pub fn init(py: Python<'_>) {
    if log::set_logger(&BRIDGE).is_ok() {
        log::set_max_level(LevelFilter::Debug);
        refresh_level(py);
    }
}

fn py_level(level: Level) -> i32 {
    match level {
        Level::Error => 40,
        Level::Warn => 30,
        Level::Info => 20,
        Level::Debug => 10,
        Level::Trace => 5,
    }
}

/// Queue only what the `paimon_rs` logger would emit now.
fn refresh_level(py: Python<'_>) {
    let level = py
        .import("logging")
        .and_then(|m| m.call_method1("getLogger", ("paimon_rs",)))
        .and_then(|l| l.call_method0("getEffectiveLevel"))
        .and_then(|v| v.extract::<i32>());
    let filter = match level {
        Ok(l) if l <= 5 => LevelFilter::Trace,
        Ok(l) if l <= 10 => LevelFilter::Debug,
        Ok(l) if l <= 20 => LevelFilter::Info,
        Ok(l) if l <= 30 => LevelFilter::Warn,
        Ok(l) if l <= 40 => LevelFilter::Error,
        Ok(_) => LevelFilter::Off,
        Err(_) => LevelFilter::Warn,
    };
    log::set_max_level(filter);
}

/// Hand the queued records to Python's `logging` (call with the GIL, after engine work). A
/// failing handler is Python's business (`logging` reports it itself); a failure to reach
/// `logging` at all drops the records rather than failing the engine call.
pub fn flush(py: Python<'_>) {
    let (records, dropped) = {
        let mut q = QUEUE.lock().unwrap_or_else(|e| e.into_inner());
        (
            std::mem::take(&mut q.records),
            std::mem::take(&mut q.dropped),
        )
    };
    if !records.is_empty() || dropped > 0 {
        let Ok(logging) = py.import("logging") else {
            return;
        };
        for (level, target, msg) in records {
            if let Ok(logger) = logging.call_method1("getLogger", (target,)) {
                let _ = logger.call_method1("log", (py_level(level), msg));
            }
        }
        if dropped > 0 {
            if let Ok(logger) = logging.call_method1("getLogger", ("paimon_rs",)) {
                let msg = format!("{dropped} log records dropped (more than {MAX_QUEUED} queued)");
                let _ = logger.call_method1("log", (30, msg));
            }
        }
    }
    refresh_level(py);
}

/// `paimon_rs._core.flush_logs()`: emit queued records now (the binding does after each call).
#[pyfunction]
pub fn flush_logs(py: Python<'_>) {
    flush(py);
}
