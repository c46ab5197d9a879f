//! The hashes of a dynamic-bucket table's hash index files, sorted ([`SortedHashes`]), and the
//! cache of them a table handle keeps for its writers ([`HashIndexCache`]); the index itself is
//! in [`super::dynamic_bucket`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// A bucket's hashes, sorted ascending: as restored from its live index file (shared with the
/// table's [`HashIndexCache`]).
#[derive(Clone, Default)]
pub struct SortedHashes(Arc<Vec<i32>>);

impl std::fmt::Debug for SortedHashes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SortedHashes({} hashes)", self.0.len())
    }
}

impl SortedHashes {
    /// `hashes` sorted (our own index files are written sorted: no sort then).
    pub(crate) fn new(mut hashes: Vec<i32>) -> Self {
        if !hashes.is_sorted() {
            hashes.sort_unstable();
        }
        SortedHashes(Arc::new(hashes))
    }

    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    /// The hashes, ascending.
    pub(crate) fn as_slice(&self) -> &[i32] {
        &self.0
    }

    /// This list with `added` (hashes not in it), sorted: a bucket's next index file.
    pub(crate) fn merged(&self, added: &[i32]) -> SortedHashes {
        let mut new = added.to_vec();
        new.sort_unstable();
        let old = &self.0[..];
        let mut out = Vec::with_capacity(old.len() + new.len());
        let (mut i, mut j) = (0, 0);
        while i < old.len() && j < new.len() {
            if old[i] <= new[j] {
                out.push(old[i]);
                i += 1;
            } else {
                out.push(new[j]);
                j += 1;
            }
        }
        out.extend_from_slice(&old[i..]);
        out.extend_from_slice(&new[j..]);
        SortedHashes(Arc::new(out))
    }

    /// For every hash of `order` (batch positions sorted by hash, see [`sorted_positions`])
    /// found in this list, set `out[position] = bucket`. A galloping merge: linear when the
    /// batch is as large as the list, a binary search per key when it is small.
    pub(crate) fn probe(&self, hashes: &[i32], order: &[u32], bucket: i32, out: &mut [i32]) {
        let list = &self.0[..];
        let mut lo = 0;
        for &i in order {
            let h = hashes[i as usize];
            let rest = &list[lo..];
            let (mut lower, mut bound) = (0, 1);
            while bound < rest.len() && rest[bound] < h {
                lower = bound;
                bound *= 2;
            }
            let end = (bound + 1).min(rest.len());
            let pos = lo + lower + rest[lower..end].partition_point(|&x| x < h);
            if pos == list.len() {
                return;
            }
            if list[pos] == h {
                out[i as usize] = bucket;
            }
            lo = pos;
        }
    }
}

/// The hashes of the index files a table handle's writers read or wrote, per (partition,
/// bucket) with the file's name: a later writer of the same handle whose snapshot lists the same
/// file for the bucket (index files are never rewritten: a new name per version) takes the
/// sorted hashes from here instead of reading and sorting the file again. One entry per bucket
/// ever loaded through the handle, replaced by the bucket's next file: at most the index of the
/// partitions written, as a streaming writer keeps it.
#[derive(Clone, Default)]
pub struct HashIndexCache(Arc<Mutex<CachedFiles>>);

/// (partition, bucket) -> (index file name, its sorted hashes).
type CachedFiles = HashMap<(Vec<u8>, i32), (String, SortedHashes)>;

impl std::fmt::Debug for HashIndexCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HashIndexCache")
    }
}

impl HashIndexCache {
    pub(crate) fn get(
        &self,
        partition: &[u8],
        bucket: i32,
        file_name: &str,
    ) -> Option<SortedHashes> {
        let map = self.0.lock().ok()?;
        match map.get(&(partition.to_vec(), bucket)) {
            Some((name, hashes)) if name == file_name => Some(hashes.clone()),
            _ => None,
        }
    }

    pub(crate) fn put(
        &self,
        partition: &[u8],
        bucket: i32,
        file_name: &str,
        hashes: &SortedHashes,
    ) {
        if let Ok(mut map) = self.0.lock() {
            map.insert(
                (partition.to_vec(), bucket),
                (file_name.to_string(), hashes.clone()),
            );
        }
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.0.lock().map(|m| m.len()).unwrap_or(0)
    }
}
