//! Whole data files of a read fetched ahead, in the order the read will open them, while the
//! files before them are decoded (object stores only).
//!
//! A read of several splits (or of one split after another, streamed) knows every file it will
//! open, and in which order. Without this, a split's files are asked for only when the split
//! starts, so each split waits for its GETs with nothing to decode (the reading threads idle
//! while the store sends). [`FetchAhead::start`] registers the read's files (those fetched
//! whole: see [`super::remote::open_plan`]) by path and fetches them on a thread of its own,
//! [`FETCH_CONCURRENCY`] GETs at a time counting those the readers send themselves, in that
//! order, within [`FETCH_AHEAD_BYTES`] of fetched bytes not yet opened (all reads of the
//! process). [`take`] (called by `RemoteObject::open`) hands a registered file's bytes to its
//! reader: fetched, or waited for while its GET is in flight, or while it is next in line;
//! a file the fetcher cannot start for want of memory is fetched by its reader, so no reader
//! waits on memory that only readers can free. The bytes are not kept beyond the read: taking
//! a file removes it, and dropping the handle (the read's end, error or early stop) removes what
//! is left and stops the fetcher.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};

use bytes::Bytes;
#[allow(unused_imports)]
use object_store::{ObjectStore, ObjectStoreExt};

use super::store::{block_on, count, Remote, Req};

/// Fetched bytes not yet taken by their readers, all reads of the process.
pub const FETCH_AHEAD_BYTES: u64 = 256 << 20;
/// GETs of one read in flight at once (the fetcher's and its readers' own): the files needed
/// first arrive first instead of sharing the store's bandwidth with later ones.
pub const FETCH_CONCURRENCY: usize = 4;

static AHEAD_BYTES: AtomicU64 = AtomicU64::new(0);

/// `n` bytes of [`FETCH_AHEAD_BYTES`], given back when dropped.
struct Budget(u64);

impl Budget {
    fn take(n: u64) -> Option<Budget> {
        AHEAD_BYTES
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |cur| {
                // one file larger than the whole budget still goes, alone
                (cur == 0 || cur + n <= FETCH_AHEAD_BYTES).then_some(cur + n)
            })
            .ok()
            .map(|_| Budget(n))
    }
}

impl Drop for Budget {
    fn drop(&mut self) {
        AHEAD_BYTES.fetch_sub(self.0, Ordering::SeqCst);
    }
}

enum State {
    /// Not started: the fetcher starts it in its turn.
    Queued,
    /// Its reader fetches it (taken while queued), or it is gone.
    Taken,
    /// The fetcher's GET is in flight.
    Fetching,
    /// Fetched: `(object size, bytes)`, holding its share of the budget.
    Ready(u64, Bytes, Budget),
    /// The fetch failed: the reader sends its own GET (and reports its error).
    Failed,
}

/// One read's files (by their index in the fetch order) and what its fetcher and readers share.
struct Shared {
    states: Mutex<Vec<State>>,
    changed: Condvar,
    /// GETs of this read in flight (fetcher's and readers' own).
    in_flight: AtomicUsize,
    stop: AtomicBool,
    /// The fetcher waits for memory: readers do not wait for queued files.
    starved: AtomicBool,
}

impl Shared {
    fn set(&self, i: usize, to: impl FnOnce(State) -> State) {
        if let Ok(mut st) = self.states.lock() {
            if let Some(s) = st.get_mut(i) {
                *s = to(std::mem::replace(s, State::Taken));
            }
        }
        self.changed.notify_all();
    }
}

type Registry = Mutex<HashMap<String, (Arc<Shared>, usize)>>;

fn registry() -> &'static Registry {
    static R: OnceLock<Registry> = OnceLock::new();
    R.get_or_init(Default::default)
}

fn key_of(r: &Remote) -> String {
    format!("{}/{}", r.root, r.key)
}

/// The files of one read being fetched ahead; dropping it stops the fetcher and forgets the
/// files not taken (their bytes are freed).
pub struct FetchAhead {
    keys: Vec<String>,
    shared: Arc<Shared>,
}

impl FetchAhead {
    /// Fetch `files` (path, size as the manifest records it), in this order: the remote ones
    /// fetched whole. None if there is nothing to fetch (local files, large files).
    pub fn start(files: impl IntoIterator<Item = (PathBuf, u64)>) -> Option<FetchAhead> {
        let mut work = vec![];
        for (path, size) in files {
            if super::remote::open_plan(Some(size), false) != super::remote::OpenGet::Whole {
                continue;
            }
            if let Ok(Some(remote)) = super::store::remote(&path) {
                work.push((remote, size));
            }
        }
        if work.is_empty() {
            return None;
        }
        let shared = Arc::new(Shared {
            states: Mutex::new(work.iter().map(|_| State::Queued).collect()),
            changed: Condvar::new(),
            in_flight: AtomicUsize::new(0),
            stop: AtomicBool::new(false),
            starved: AtomicBool::new(false),
        });
        let mut keys = vec![];
        {
            let mut reg = registry().lock().ok()?;
            for (i, (r, _)) in work.iter().enumerate() {
                let key = key_of(r);
                // another read of the same file fetches it (its reader or ours takes it)
                if let std::collections::hash_map::Entry::Vacant(e) = reg.entry(key.clone()) {
                    e.insert((shared.clone(), i));
                    keys.push(key);
                } else {
                    shared.set(i, |_| State::Taken);
                }
            }
        }
        let sh = shared.clone();
        let spawned = std::thread::Builder::new()
            .name("paimon-rs-fetch".into())
            .spawn(move || fetch_all(work, &sh));
        // no thread to spare: the readers fetch their files themselves (dropping the handle
        // forgets them)
        let ahead = FetchAhead { keys, shared };
        spawned.ok().map(|_| ahead)
    }
}

impl Drop for FetchAhead {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        if let Ok(mut reg) = registry().lock() {
            for k in &self.keys {
                if reg
                    .get(k)
                    .is_some_and(|(s, _)| Arc::ptr_eq(s, &self.shared))
                {
                    reg.remove(k);
                }
            }
        }
        // frees fetched bytes nobody took; a queued file is not started
        if let Ok(mut st) = self.shared.states.lock() {
            for s in st.iter_mut() {
                if !matches!(*s, State::Fetching) {
                    *s = State::Taken;
                }
            }
        }
        self.shared.changed.notify_all();
    }
}

/// The fetcher: starts the files in order while fewer than [`FETCH_CONCURRENCY`] GETs of the
/// read are in flight and the budget allows.
fn fetch_all(work: Vec<(Remote, u64)>, shared: &Arc<Shared>) {
    use futures::StreamExt;
    let queued = |i: usize| {
        shared
            .states
            .lock()
            .map(|s| matches!(s.get(i), Some(State::Queued)))
            .unwrap_or(false)
    };
    block_on(
        futures::stream::iter(work.into_iter().enumerate()).for_each_concurrent(
            FETCH_CONCURRENCY,
            |(i, (r, size))| async move {
                let budget = loop {
                    if shared.stop.load(Ordering::SeqCst) || !queued(i) {
                        return;
                    }
                    if shared.in_flight.load(Ordering::SeqCst) < FETCH_CONCURRENCY {
                        match Budget::take(size) {
                            Some(b) => {
                                shared.starved.store(false, Ordering::SeqCst);
                                break b;
                            }
                            None => {
                                // readers stop waiting for queued files: they fetch them
                                if !shared.starved.swap(true, Ordering::SeqCst) {
                                    shared.changed.notify_all();
                                }
                            }
                        }
                    }
                    tokio::time::sleep(std::time::Duration::from_millis(1)).await;
                };
                {
                    let Ok(mut st) = shared.states.lock() else {
                        return;
                    };
                    match st.get_mut(i) {
                        Some(s @ State::Queued) => *s = State::Fetching,
                        _ => return,
                    }
                    // counted before the lock is released: a reader never sees a file being
                    // fetched while the read's GETs in flight look fewer
                    shared.in_flight.fetch_add(1, Ordering::SeqCst);
                }
                count(Req::Get);
                let got = async {
                    let g = r.store.get(&r.key).await?;
                    let n = g.meta.size;
                    Ok::<_, object_store::Error>((n, g.bytes().await?))
                }
                .await;
                shared.in_flight.fetch_sub(1, Ordering::SeqCst);
                let stopped = shared.stop.load(Ordering::SeqCst);
                shared.set(i, |_| match got {
                    Ok((n, b)) if !stopped => State::Ready(n, b, budget),
                    Ok(_) => State::Taken,
                    Err(_) => State::Failed,
                });
            },
        ),
    );
}

/// The whole object `r` if a read registered it: `(size, bytes)` once fetched. The caller
/// sends its own GET if it is not registered, or its fetch failed, or the fetcher cannot start
/// it (want of memory); a registered one's is counted against the read's concurrency while in
/// flight ([`ReaderGet`]).
pub(crate) fn take(r: &Remote) -> Taken {
    let found = match registry().lock() {
        Ok(mut reg) => reg.remove(&key_of(r)),
        Err(_) => None,
    };
    let Some((shared, i)) = found else {
        return Taken::NotRegistered;
    };
    let Ok(mut st) = shared.states.lock() else {
        return Taken::NotRegistered;
    };
    loop {
        let Some(s) = st.get_mut(i) else {
            return Taken::NotRegistered;
        };
        match std::mem::replace(s, State::Taken) {
            State::Ready(n, b, _budget) => {
                #[cfg(test)]
                if let Ok(mut h) = HANDED.lock() {
                    h.push(key_of(r));
                }
                return Taken::Fetched(n, b);
            }
            State::Fetching => *s = State::Fetching,
            State::Queued
                if !shared.starved.load(Ordering::SeqCst)
                    && !shared.stop.load(Ordering::SeqCst) =>
            {
                *s = State::Queued
            }
            // queued while the fetcher waits for memory, or failed: the reader's own GET
            State::Queued | State::Failed | State::Taken => {
                shared.in_flight.fetch_add(1, Ordering::SeqCst);
                drop(st);
                return Taken::Fetch(ReaderGet(shared));
            }
        }
        st = match shared.changed.wait(st) {
            Ok(s) => s,
            Err(_) => return Taken::NotRegistered,
        };
    }
}

/// The objects handed to their readers from a fetch ahead (tests).
#[cfg(test)]
pub(crate) static HANDED: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// What [`take`] found.
pub(crate) enum Taken {
    NotRegistered,
    Fetched(u64, Bytes),
    /// Registered, to be fetched by the caller: hold this while the GET is in flight.
    Fetch(ReaderGet),
}

/// A reader's own GET of a registered file, in flight: counted against its read's concurrency.
pub(crate) struct ReaderGet(Arc<Shared>);

impl Drop for ReaderGet {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn put(p: &Path, n: usize) -> Vec<u8> {
        let data: Vec<u8> = (0..n).map(|i| (i % 251) as u8).collect();
        super::super::write_new(p, &data).unwrap();
        data
    }

    #[test]
    fn registered_files_are_fetched_ahead_and_handed_over_once() {
        let dir = Path::new("memory://fetch-ahead-1/t/bucket-0");
        let files: Vec<_> = (0..6)
            .map(|i| {
                let p = dir.join(format!("data-{i}.parquet"));
                let d = put(&p, 1000 + i);
                (p, d)
            })
            .collect();
        let local = tempfile::tempdir().unwrap();
        let ahead = FetchAhead::start(
            files
                .iter()
                .map(|(p, d)| (p.clone(), d.len() as u64))
                // local files and large files are left to their readers
                .chain([(local.path().join("x.parquet"), 10)])
                .chain([(dir.join("big.parquet"), 1 << 40)]),
        )
        .expect("remote files to fetch");
        assert_eq!(ahead.keys.len(), 6);
        for (p, d) in &files {
            let r = super::super::store::remote(p).unwrap().unwrap();
            match take(&r) {
                Taken::Fetched(n, b) => {
                    assert_eq!(n, d.len() as u64);
                    assert_eq!(&b[..], &d[..]);
                }
                Taken::Fetch(_) => {} // a race with the fetcher is allowed, never a wrong byte
                Taken::NotRegistered => panic!("{} was registered", p.display()),
            }
            // taken once: a second open of the file is not served from the read's fetch
            assert!(matches!(take(&r), Taken::NotRegistered));
        }
        drop(ahead);
        let left = registry().lock().unwrap();
        assert!(!left.keys().any(|k| k.contains("fetch-ahead-1")));
    }

    #[test]
    fn dropping_the_read_frees_what_it_did_not_take() {
        let dir = Path::new("memory://fetch-ahead-2/t/bucket-0");
        let files: Vec<_> = (0..3)
            .map(|i| {
                let p = dir.join(format!("data-{i}.parquet"));
                put(&p, 100_000);
                (p, 100_000u64)
            })
            .collect();
        let ahead = FetchAhead::start(files.clone()).unwrap();
        // wait until the fetcher is done with them
        let shared = ahead.shared.clone();
        {
            let mut st = shared.states.lock().unwrap();
            while st
                .iter()
                .any(|s| matches!(s, State::Queued | State::Fetching))
            {
                st = shared.changed.wait(st).unwrap();
            }
            assert!(st.iter().all(|s| matches!(s, State::Ready(..))));
        }
        drop(ahead);
        assert!(shared
            .states
            .lock()
            .unwrap()
            .iter()
            .all(|s| matches!(s, State::Taken)));
        let r = super::super::store::remote(&files[0].0).unwrap().unwrap();
        assert!(matches!(take(&r), Taken::NotRegistered));
    }
}
