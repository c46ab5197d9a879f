//! The hashes of a dynamic-bucket table's hash index files, sorted ([`SortedHashes`]), a
//! partition's (hash, bucket) pairs merged into one sorted list ([`MergedIndex`]), and the cache
//! of both a table handle keeps for its writers ([`HashIndexCache`]); the index itself is in
//! [`super::dynamic_bucket`].

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
        let new: Vec<i32> = sort_by_high_bits(added.iter().map(|&h| flipped(h) << 32).collect())
            .into_iter()
            .map(|k| ((k >> 32) as u32 ^ 0x8000_0000) as i32)
            .collect();
        SortedHashes(Arc::new(merge_sorted(&self.0, &new)))
    }
}

/// `hash` with its sign bit flipped: unsigned order = signed order of the hashes.
fn flipped(hash: i32) -> u64 {
    u64::from(hash as u32 ^ 0x8000_0000)
}

/// `(hash, bucket)` as one integer ordered by hash, then bucket.
pub(crate) fn pair(hash: i32, bucket: i32) -> u64 {
    (flipped(hash) << 32) | u64::from(bucket as u32)
}

/// `v` sorted by its high 32 bits, stably (entries of one hash keep their order): an LSD radix
/// sort of 11, 11 and 10 bits (counts that fit the L1 cache), a few passes over the list where a
/// comparison sort of a batch's 100k keys did 17 rounds of unpredictable branches. Small lists
/// are sorted by comparison (the whole value: the same order when the low bits ascend).
pub(crate) fn sort_by_high_bits(mut v: Vec<u64>) -> Vec<u64> {
    if v.len() < 512 {
        v.sort_unstable();
        return v;
    }
    let mut tmp = vec![0u64; v.len()];
    for (shift, bits) in [(32u32, 11u32), (43, 11), (54, 10)] {
        let mask = (1u64 << bits) - 1;
        let mut counts = vec![0usize; 1 << bits];
        for &x in &v {
            counts[((x >> shift) & mask) as usize] += 1;
        }
        if counts.contains(&v.len()) {
            continue; // every entry has this digit: the pass would not move one
        }
        let mut at = 0;
        for c in counts.iter_mut() {
            let n = *c;
            *c = at;
            at += n;
        }
        for &x in &v {
            let d = ((x >> shift) & mask) as usize;
            tmp[counts[d]] = x;
            counts[d] += 1;
        }
        std::mem::swap(&mut v, &mut tmp);
    }
    v
}

/// Two sorted lists into one.
pub(crate) fn merge_sorted<T: Copy + Ord>(a: &[T], b: &[T]) -> Vec<T> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        if a[i] <= b[j] {
            out.push(a[i]);
            i += 1;
        } else {
            out.push(b[j]);
            j += 1;
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    out
}

/// Every (hash, bucket) of a partition's live hash index files in one list sorted by hash, then
/// bucket: a batch's keys are looked up in one galloping pass, whatever the number of buckets
/// (a pass per bucket's [`SortedHashes`] before). Built once per table handle from the buckets'
/// lists and kept up to date by each commit's new keys ([`Self::with`]).
#[derive(Clone, Default)]
pub struct MergedIndex(Arc<Vec<u64>>);

impl std::fmt::Debug for MergedIndex {
    /// The length only (the list is the partition's whole index).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MergedIndex")
            .field("pairs", &self.0.len())
            .finish()
    }
}

impl MergedIndex {
    /// The lists of `buckets`, merged (pairwise, so `n log k` for `k` buckets).
    pub(crate) fn of<'a>(buckets: impl Iterator<Item = (i32, &'a SortedHashes)>) -> Self {
        let mut runs: Vec<Vec<u64>> = buckets
            .map(|(b, l)| l.as_slice().iter().map(|&h| pair(h, b)).collect())
            .collect();
        while runs.len() > 1 {
            let mut next = Vec::with_capacity(runs.len().div_ceil(2));
            let mut it = runs.into_iter();
            while let Some(a) = it.next() {
                next.push(match it.next() {
                    Some(b) => merge_sorted(&a, &b),
                    None => a,
                });
            }
            runs = next;
        }
        MergedIndex(Arc::new(runs.pop().unwrap_or_default()))
    }

    /// This list with the new keys `added` = (bucket, hashes in any order) of a commit, merged
    /// in place (from the back, into the grown list) when no one else holds the list, so a
    /// commit moves the list's pairs instead of writing a new list into freshly faulted pages.
    pub(crate) fn with(mut self, added: &[(i32, Vec<i32>)]) -> Self {
        let mut by_bucket: Vec<&(i32, Vec<i32>)> = added.iter().collect();
        by_bucket.sort_by_key(|(b, _)| *b);
        // in bucket order: the stable sort by hash leaves them ordered by (hash, bucket)
        let new = sort_by_high_bits(
            by_bucket
                .iter()
                .flat_map(|(b, hs)| hs.iter().map(move |&h| pair(h, *b)))
                .collect(),
        );
        merge_into(Arc::make_mut(&mut self.0), &new);
        self
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    /// For every key of `keyed` (a batch's (hash, position) entries sorted by hash, see
    /// [`sorted_keys`]) whose hash is in the list, set `out[position]` to its bucket (the
    /// highest, for a hash in two buckets' files, as a map filled in bucket order would). A
    /// galloping merge: linear when the batch is as large as the list, a binary search per key
    /// when it is small.
    pub(crate) fn probe(&self, keyed: &[u64], out: &mut [i32]) {
        probe_pairs(&self.0, keyed, out);
    }
}

/// [`MergedIndex::probe`] in `list`, (hash, bucket) pairs sorted (see [`pair`]).
pub(crate) fn probe_pairs(list: &[u64], keyed: &[u64], out: &mut [i32]) {
    let mut lo = 0;
    for &k in keyed {
        let h = k >> 32;
        let rest = &list[lo..];
        let (mut lower, mut bound) = (0, 1);
        while bound < rest.len() && rest[bound] >> 32 < h {
            lower = bound;
            bound *= 2;
        }
        let end = (bound + 1).min(rest.len());
        let pos = lo + lower + rest[lower..end].partition_point(|&x| x >> 32 < h);
        if pos == list.len() {
            return;
        }
        let mut last = pos;
        while last < list.len() && list[last] >> 32 == h {
            last += 1;
        }
        if last > pos {
            out[k as u32 as usize] = list[last - 1] as u32 as i32;
        }
        lo = pos;
    }
}

/// The (hash with its sign bit flipped, position) entries of `hashes` in one u64 each, sorted
/// by hash (stable: positions ascend within a hash): what a batch is looked up by.
pub(crate) fn sorted_keys(hashes: &[i32]) -> Vec<u64> {
    sort_by_high_bits(
        hashes
            .iter()
            .enumerate()
            .map(|(i, &h)| (flipped(h) << 32) | i as u64)
            .collect(),
    )
}

/// `v` and `new` (both sorted) merged into `v`, from the back: `v`'s pairs move once, in place.
fn merge_into(v: &mut Vec<u64>, new: &[u64]) {
    let (n, k) = (v.len(), new.len());
    v.resize(n + k, 0);
    let (mut i, mut j, mut w) = (n, k, n + k);
    while j > 0 {
        w -= 1;
        if i > 0 && v[i - 1] > new[j - 1] {
            v[w] = v[i - 1];
            i -= 1;
        } else {
            v[w] = new[j - 1];
            j -= 1;
        }
    }
}

/// The hashes of the index files a table handle's writers read or wrote, per (partition,
/// bucket) with the file's name: a later writer of the same handle whose snapshot lists the same
/// file for the bucket (index files are never rewritten: a new name per version) takes the
/// sorted hashes from here instead of reading and sorting the file again. One entry per bucket
/// ever loaded through the handle, replaced by the bucket's next file: at most the index of the
/// partitions written, as a streaming writer keeps it.
/// Besides, per partition, the [`MergedIndex`] of the live files it was built from (their
/// (bucket, file name) list): a later writer whose snapshot lists the same files takes it.
#[derive(Clone, Default)]
pub struct HashIndexCache(Arc<Mutex<Cached>>);

/// (bucket, file name) of a partition's live hash index files, in bucket order.
type LiveFiles = Vec<(i32, String)>;

#[derive(Default)]
struct Cached {
    /// (partition, bucket) -> (index file name, its sorted hashes).
    files: HashMap<(Vec<u8>, i32), (String, SortedHashes)>,
    /// partition -> ((bucket, file name) of its live files, their merged index).
    merged: HashMap<Vec<u8>, (LiveFiles, MergedIndex)>,
}

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
        match map.files.get(&(partition.to_vec(), bucket)) {
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
            map.files.insert(
                (partition.to_vec(), bucket),
                (file_name.to_string(), hashes.clone()),
            );
        }
    }

    /// The merged index of `partition` when built from exactly the live files `files`.
    pub(crate) fn get_merged(
        &self,
        partition: &[u8],
        files: &[(i32, String)],
    ) -> Option<MergedIndex> {
        let map = self.0.lock().ok()?;
        match map.merged.get(partition) {
            Some((of, m)) if of.as_slice() == files => Some(m.clone()),
            _ => None,
        }
    }

    pub(crate) fn put_merged(&self, partition: &[u8], files: Vec<(i32, String)>, m: &MergedIndex) {
        if let Ok(mut map) = self.0.lock() {
            map.merged.insert(partition.to_vec(), (files, m.clone()));
        }
    }

    /// Forget `partition`'s merged index (its holder is about to change it).
    pub(crate) fn drop_merged(&self, partition: &[u8]) {
        if let Ok(mut map) = self.0.lock() {
            map.merged.remove(partition);
        }
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.0.lock().map(|m| m.files.len()).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The radix sort orders by hash like a comparison sort of (hash, position) pairs, for
    /// lists small and large, with repeated hashes and hashes of both signs.
    #[test]
    fn radix_sort_by_hash_is_a_stable_sort() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for (n, range) in [
            (10usize, 1u64 << 32),
            (5_000, 1 << 32),
            (70_000, 300),
            (4096, 1),
        ] {
            let keys: Vec<u64> = (0..n)
                .map(|i| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let h = (x % range) as u32 as i32;
                    (flipped(h) << 32) | i as u64
                })
                .collect();
            let mut want = keys.clone();
            want.sort_unstable();
            assert_eq!(sort_by_high_bits(keys), want);
        }
    }

    /// A merged index answers each hash with its bucket (the highest of a hash in two
    /// buckets' files) and a commit's new keys merged in equal the index built from the
    /// buckets' new lists.
    #[test]
    fn merged_index_probes_and_takes_new_keys() {
        let lists = [
            (0, SortedHashes::new(vec![-5, 1, 9, 40])),
            (1, SortedHashes::new(vec![-7, 2, 9])),
            (3, SortedHashes::new(vec![i32::MIN, 3, 9, i32::MAX])),
        ];
        let m = MergedIndex::of(lists.iter().map(|(b, l)| (*b, l)));
        let hashes = [9, 2, -5, 4, i32::MIN, i32::MAX, 40, 2, 100];
        let mut out = vec![-1; hashes.len()];
        m.probe(&sorted_keys(&hashes), &mut out);
        assert_eq!(out, vec![3, 1, 0, -1, 3, 3, 0, 1, -1]);
        let added = vec![(3, vec![50, -60]), (1, vec![4])];
        let grown = [
            (0, lists[0].1.clone()),
            (1, lists[1].1.merged(&[4])),
            (3, lists[2].1.merged(&[50, -60])),
        ];
        let want = MergedIndex::of(grown.iter().map(|(b, l)| (*b, l))).0;
        // shared (copied on write) and owned (merged in place) alike
        let shared = m.clone();
        assert_eq!(shared.with(&added).0, want);
        assert_eq!(m.0.len(), 11);
        assert_eq!(m.with(&added).0, want);
    }
}
