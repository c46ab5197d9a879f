//! The worker threads of the engine's parallel work, one pool per process.
//!
//! rayon's global pool is created once per process; a process forked after it exists (Spark's
//! Python workers are forked, so is `multiprocessing`'s default child) inherits the pool's
//! state but not its threads, and its first parallel read or write would wait forever. Every
//! call from Python therefore runs in a pool owned by the current process id: a forked child
//! builds its own on first use.

use std::sync::{Arc, Mutex};

use pyo3::prelude::*;

static POOL: Mutex<Option<(u32, Arc<rayon::ThreadPool>)>> = Mutex::new(None);

fn pool() -> Option<Arc<rayon::ThreadPool>> {
    let pid = std::process::id();
    let mut g = POOL.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((p, pool)) = g.as_ref() {
        if *p == pid {
            return Some(pool.clone());
        }
    }
    // A pool of the parent process: its threads do not exist here. Dropping it would signal
    // them and wait, so it is leaked (once per fork).
    if let Some((_, old)) = g.take() {
        std::mem::forget(old);
    }
    let built = rayon::ThreadPoolBuilder::new()
        .thread_name(|i| format!("paimon-rs-{i}"))
        .build()
        .ok()?;
    let pool = Arc::new(built);
    *g = Some((pid, pool.clone()));
    Some(pool)
}

/// Run `f` with the GIL released, its parallel work on this process's pool (if threads cannot
/// be created, on the calling thread and rayon's global pool, as before).
pub fn detach<T, F>(py: Python<'_>, f: F) -> T
where
    F: FnOnce() -> T + Send,
    T: Send,
{
    py.detach(|| match pool() {
        Some(p) => p.install(f),
        None => f(),
    })
}

/// Run `f` on this process's pool from a thread that does not hold the GIL (a thread the
/// binding spawned inside [`detach`]).
pub fn install<T, F>(f: F) -> T
where
    F: FnOnce() -> T + Send,
    T: Send,
{
    match pool() {
        Some(p) => p.install(f),
        None => f(),
    }
}
