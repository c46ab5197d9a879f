//! Dynamic bucket mode of primary-key tables (`bucket = -1`, paimon-behaviour.md §1.7,
//! paimon-format.md §4.6): each partition keeps a hash index, per bucket one `HASH` index
//! file of the big-endian int32 hashes (Java's `BinaryRow.hashCode()`) of the trimmed primary
//! keys written to it. A writer restores a partition's index from the latest snapshot's index
//! manifest; a known key stays in its bucket, a new key goes to the first bucket with fewer
//! than `dynamic-bucket.target-row-num` keys, else to a new bucket, and once
//! `dynamic-bucket.max-buckets` buckets exist to one of them picked by the key's hash (Java's
//! `HashBucketAssigner` / `PartitionIndex`, whose pick is random). At `prepare_commit` every
//! bucket that got new keys writes its whole hash set as a new index file which replaces the
//! bucket's previous one (Java's `DynamicBucketIndexMaintainer`).
//!
//! A distributed write runs several assigners: assigner `i` of `n` owns the buckets with
//! `bucket % n == i` and the keys [`assigner_of`] maps to it (Java's `BucketAssigner`), so two
//! assigners never create the same bucket nor see the same key.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use arrow_array::{ArrayRef, RecordBatch};

use crate::error::{Error, Result};
use crate::options::DynamicBucketOptions;
use crate::spec::bucket::{compute_hashes, hash_bytes};
use crate::spec::manifest::{IndexFileMeta, IndexManifestEntry, HASH_INDEX};
use crate::table::FileStoreTable;
use crate::write::assign::{partition_encoder, typed_column};
use crate::write::hash_index_cache::{
    merge_sorted, probe_pairs, sorted_keys, HashIndexCache, MergedIndex, SortedHashes,
};

/// Hasher of key hashes (already MurmurHash3 values): one multiply spreads them into the high
/// bits the hash table probes by, instead of SipHash over four bytes.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct KeyHashHasher(u64);

impl std::hash::Hasher for KeyHashHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    fn write_i32(&mut self, i: i32) {
        self.0 = u64::from(i as u32).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

/// A map keyed by key hashes or buckets.
pub(crate) type IntMap<V> = HashMap<i32, V, std::hash::BuildHasherDefault<KeyHashHasher>>;

/// Java keeps a bucket as a `short` in its hash-to-bucket map: at most 32,767 buckets.
const BUCKET_LIMIT: i32 = i16::MAX as i32;

/// Java's `BucketAssigner.computeAssigner`: the assigner (of `num_assigners`, over
/// `num_channels` tasks) that handles a key of a partition.
pub fn assigner_of(
    partition_hash: i32,
    key_hash: i32,
    num_channels: i32,
    num_assigners: i32,
) -> i32 {
    let start = (partition_hash % num_channels).wrapping_abs();
    let id = (key_hash % num_assigners).wrapping_abs();
    (start + id) % num_channels
}

/// The hashes of a `HASH` index file (big-endian int32s, `HashIndexFile`).
pub(crate) fn read_hash_index(table: &FileStoreTable, file: &IndexFileMeta) -> Result<Vec<i32>> {
    let p = table.index_file_path(&file.file_name, file.external_path.as_deref());
    let bytes = crate::io::read(&p)?;
    if bytes.len() % 4 != 0 {
        return Err(Error::corrupt(
            &p,
            format!(
                "hash index file of {} bytes: not a sequence of 4-byte hashes",
                bytes.len()
            ),
        ));
    }
    Ok(bytes
        .chunks_exact(4)
        .map(|w| i32::from_be_bytes([w[0], w[1], w[2], w[3]]))
        .collect())
}

/// Write `hashes` as a new `HASH` index file in the table's `index/` directory, named
/// `prefix` + a UUID + `-0` (Java's `index-<uuid>-<n>` under the default prefix).
pub(crate) fn write_hash_index(
    table: &FileStoreTable,
    hashes: &[i32],
    prefix: &str,
) -> Result<IndexFileMeta> {
    let mut bytes = Vec::with_capacity(hashes.len() * 4);
    for h in hashes {
        bytes.extend_from_slice(&h.to_be_bytes());
    }
    let name = format!("{prefix}{}-0", uuid::Uuid::new_v4());
    crate::io::write_new(&table.index_file_path(&name, None), &bytes)?;
    Ok(IndexFileMeta {
        index_type: HASH_INDEX.into(),
        file_name: name,
        file_size: bytes.len() as i64,
        row_count: hashes.len() as i64,
        dv_ranges: None,
        external_path: None,
        global_index: None,
    })
}

/// The hash index of one partition as its assigner keeps it (Java's `PartitionIndex` with the
/// hash sets of its buckets' `DynamicBucketIndexMaintainer`s). Restored keys are looked up
/// a batch at a time in the buckets' sorted hash lists (no per-key map of the whole index to
/// build at every restore); keys new since the last commit are in a few sorted runs.
#[derive(Debug, Default)]
struct PartitionIndex {
    /// Hashes of each bucket's live index file, sorted, in bucket order: restored, then
    /// replaced by each commit's file.
    restored: BTreeMap<i32, SortedHashes>,
    /// `restored` merged into one list (what a batch is looked up in): from the table handle's
    /// cache, else built at the first lookup; each commit merges its new keys in.
    merged: Option<MergedIndex>,
    /// (hash, bucket) pairs of the keys new since the last commit (none of them in `restored`),
    /// each run sorted by hash, a hash in one run only: a batch's new keys form a run; the
    /// last runs are merged while one is no more than twice the next ([`push_run`]), so a
    /// batch is looked up in a few runs whatever the number of batches.
    added: Vec<Vec<u64>>,
    /// The new key hashes of each bucket since the last commit, in arrival order.
    added_per_bucket: IntMap<Vec<i32>>,
    /// Key count of this assigner's buckets that may still have room, in bucket order.
    non_full: BTreeMap<i32, i64>,
    /// Every bucket of the partition this assigner may use, in creation order.
    buckets: Vec<i32>,
    bucket_set: BTreeSet<i32>,
    /// No new bucket can be created (`max-buckets` reached).
    upper_bound_reached: bool,
    /// The live index file of each bucket (replaced by the next one).
    files: HashMap<i32, IndexFileMeta>,
    /// Buckets that got new keys since the last commit.
    changed: BTreeSet<i32>,
    /// The bucket last added to `changed` (new keys fill one bucket in a row: one set insert
    /// per run instead of per key); reset when `changed` loses a bucket.
    last_changed: Option<i32>,
}

impl PartitionIndex {
    /// The bucket of each of `hashes` the index holds (-1: none), by one sort of the batch's
    /// hashes (`keyed`: (hash, position) entries by hash, see [`sorted_keys`]) and a galloping merge
    /// with the partition's merged (hash, bucket) list and with each run of keys new since the
    /// last commit; a hash in two buckets' files takes the higher bucket, as a map filled in
    /// bucket order would. A merged list built here goes to `cache` (the table handle's), under
    /// `partition`.
    fn known_buckets(
        &mut self,
        keyed: &[u64],
        cache: Option<(&HashIndexCache, &[u8])>,
    ) -> Vec<i32> {
        let mut out = vec![-1; keyed.len()];
        if self.restored.values().any(|l| l.len() > 0) {
            let merged = match &self.merged {
                Some(m) => m,
                None => {
                    let m = MergedIndex::of(self.restored.iter().map(|(&b, l)| (b, l)));
                    if let Some((cache, partition)) = cache {
                        cache.put_merged(partition, self.file_list(), &m);
                    }
                    self.merged.insert(m)
                }
            };
            merged.probe(keyed, &mut out);
        }
        for run in &self.added {
            probe_pairs(run, keyed, &mut out);
        }
        out
    }

    /// [`Self::known_buckets`] of `hashes`, sorting them here.
    #[cfg(test)]
    fn restored_buckets(
        &mut self,
        hashes: &[i32],
        cache: Option<(&HashIndexCache, &[u8])>,
    ) -> Vec<i32> {
        self.known_buckets(&sorted_keys(hashes), cache)
    }

    /// (bucket, file name) of the live index files, in bucket order: what `merged` was built of.
    fn file_list(&self) -> Vec<(i32, String)> {
        let mut files: Vec<(i32, String)> = self
            .files
            .iter()
            .map(|(&b, f)| (b, f.file_name.clone()))
            .collect();
        files.sort_unstable();
        files
    }

    /// The new keys at positions `firsts` of `hashes` (ascending: arrival order) joined the
    /// buckets `out` gives them; `by_hash`: their (hash, position) entries in hash order.
    fn add_new(&mut self, hashes: &[i32], out: &[i32], firsts: &[u32], by_hash: &[u64]) {
        if firsts.is_empty() {
            return;
        }
        let mut k = 0;
        while k < firsts.len() {
            // new keys fill one bucket in a row: one map access per run of a bucket
            let b = out[firsts[k] as usize];
            let end = firsts[k..]
                .iter()
                .position(|&i| out[i as usize] != b)
                .map_or(firsts.len(), |n| k + n);
            self.added_per_bucket
                .entry(b)
                .or_default()
                .extend(firsts[k..end].iter().map(|&i| hashes[i as usize]));
            if self.last_changed != Some(b) {
                self.changed.insert(b);
                self.last_changed = Some(b);
            }
            k = end;
        }
        // (hash, position) -> (hash, bucket): see `pair`
        let run = by_hash
            .iter()
            .map(|&k| (k & !0xffff_ffff) | u64::from(out[k as u32 as usize] as u32))
            .collect();
        push_run(&mut self.added, run);
    }

    /// Keys in the index (restored and new) per bucket.
    #[cfg(test)]
    fn bucket_len(&self, b: i32) -> usize {
        self.restored.get(&b).map_or(0, SortedHashes::len)
            + self.added_per_bucket.get(&b).map_or(0, Vec::len)
    }
}

/// One bucket's new index file, and the file it replaces.
#[derive(Debug, Clone)]
pub struct HashIndexChange {
    pub partition: Vec<u8>,
    pub bucket: i32,
    pub new_file: IndexFileMeta,
    pub replaced: Option<IndexFileMeta>,
    /// The new file's hashes, sorted: the bucket's restored list once committed.
    pub(crate) hashes: SortedHashes,
}

/// Assigns the keys of a dynamic-bucket table to buckets and maintains its hash index (see
/// the module doc).
#[derive(Debug)]
pub struct DynamicBucketAssigner {
    table: String,
    options: DynamicBucketOptions,
    num_channels: i32,
    num_assigners: i32,
    assign_id: i32,
    partitions: HashMap<Vec<u8>, PartitionIndex>,
    /// Name prefix of the index files this assigner writes (`index-`; a distributed write
    /// names each task attempt's files so its driver can delete those no commit took).
    index_prefix: String,
    /// The table handle's cache of index files read or written.
    cache: HashIndexCache,
}

impl DynamicBucketAssigner {
    /// The assigner of a local write: one assigner owning every bucket.
    pub fn new(table: &FileStoreTable) -> Result<Self> {
        Self::distributed(table, 1, 1, 0)
    }

    /// Assigner `assign_id` of a write with `num_channels` assign tasks and `num_assigners`
    /// assigners (Java's `HashBucketAssigner`).
    pub fn distributed(
        table: &FileStoreTable,
        num_channels: i32,
        num_assigners: i32,
        assign_id: i32,
    ) -> Result<Self> {
        if num_channels <= 0 || num_assigners <= 0 || !(0..num_channels).contains(&assign_id) {
            return Err(Error::invalid(format!(
                "dynamic bucket assigner {assign_id} of {num_assigners} over {num_channels} \
                 tasks"
            ))
            .with_table(&table.name));
        }
        Ok(DynamicBucketAssigner {
            table: table.name.clone(),
            options: table.options.dynamic_bucket()?,
            num_channels,
            num_assigners,
            assign_id,
            partitions: HashMap::new(),
            index_prefix: "index-".into(),
            cache: table.hash_index_cache.clone(),
        })
    }

    fn is_my_bucket(&self, bucket: i32) -> bool {
        bucket % self.num_assigners == self.assign_id % self.num_assigners
    }

    /// Whether `partition`'s index was loaded.
    pub fn has_partition(&self, partition: &[u8]) -> bool {
        self.partitions.contains_key(partition)
    }

    /// Load `partition`'s index from the `HASH` entries of `live_index` (the restored
    /// snapshot's live index files). Loaded once; later calls do nothing. A bucket whose live
    /// file the table handle's [`HashIndexCache`] holds (an earlier writer of the handle read
    /// or wrote it) is not read again. An assigner of a distributed write keeps the lists
    /// whole: it is only asked about its own keys ([`assigner_of`]).
    pub fn load(
        &mut self,
        table: &FileStoreTable,
        partition: &[u8],
        live_index: &[IndexManifestEntry],
    ) -> Result<()> {
        if self.has_partition(partition) {
            return Ok(());
        }
        let mut index = PartitionIndex::default();
        let mut entries: Vec<&IndexManifestEntry> = live_index
            .iter()
            .filter(|e| e.index_type == HASH_INDEX && e.partition == partition)
            .collect();
        entries.sort_by_key(|e| e.bucket);
        for e in entries {
            let meta = IndexFileMeta {
                index_type: e.index_type.clone(),
                file_name: e.file_name.clone(),
                file_size: e.file_size,
                row_count: e.row_count,
                dv_ranges: None,
                external_path: e.external_path.clone(),
                global_index: None,
            };
            if index.files.insert(e.bucket, meta.clone()).is_some() {
                return Err(Error::corrupt(
                    table.index_file_path(&e.file_name, e.external_path.as_deref()),
                    format!(
                        "two live hash index files of bucket {} in one partition",
                        e.bucket
                    ),
                ));
            }
            let hashes = match self.cache.get(partition, e.bucket, &e.file_name) {
                Some(h) => h,
                None => {
                    let h = SortedHashes::new(read_hash_index(table, &meta)?);
                    self.cache.put(partition, e.bucket, &e.file_name, &h);
                    h
                }
            };
            if self.is_my_bucket(e.bucket) {
                index.non_full.insert(e.bucket, hashes.len() as i64);
                index.buckets.push(e.bucket);
                index.bucket_set.insert(e.bucket);
            }
            index.restored.insert(e.bucket, hashes);
        }
        if !index.files.is_empty() {
            index.merged = self.cache.get_merged(partition, &index.file_list());
        }
        self.partitions.insert(partition.to_vec(), index);
        Ok(())
    }

    /// The bucket of a key with `hash` in a loaded `partition` (Java's `PartitionIndex.assign`).
    #[cfg(test)]
    pub fn assign(&mut self, partition: &[u8], hash: i32) -> Result<i32> {
        Ok(self.assign_all(partition, &[hash])?[0])
    }

    /// The bucket of each key of `hashes` in a loaded `partition`, in order: Java's
    /// `PartitionIndex.assign` key after key, done a batch at a time (one sort of the batch's
    /// hashes, one lookup of each distinct hash, new keys handed to buckets a run at a time).
    pub fn assign_all(&mut self, partition: &[u8], hashes: &[i32]) -> Result<Vec<i32>> {
        let table = &self.table;
        let index = self.partitions.get_mut(partition).ok_or_else(|| {
            Error::Internal(format!("{table}: hash index of a partition not loaded"))
        })?;
        let keyed = sorted_keys(hashes);
        let mut out = index.known_buckets(&keyed, Some((&self.cache, partition)));
        let (firsts, by_hash) = first_of_new_hashes(&keyed, &mut out);
        index.assign_new(
            hashes,
            &firsts,
            &mut out,
            &self.options,
            (self.num_assigners, self.assign_id),
            table,
        )?;
        resolve_repeats(&mut out);
        index.add_new(hashes, &out, &firsts, &by_hash);
        Ok(out)
    }
}

/// The first position of each hash that `out` leaves unknown (-1), ascending, and the (hash,
/// position) entries of the same positions in hash order; every later position of such a hash
/// gets `-2 - first` in `out` ([`resolve_repeats`] gives it the first's bucket). `keyed`: the
/// batch's (hash, position) entries by hash ([`sorted_keys`]).
fn first_of_new_hashes(keyed: &[u64], out: &mut [i32]) -> (Vec<u32>, Vec<u64>) {
    let mut by_hash = vec![];
    let mut k = 0;
    while k < keyed.len() {
        let (h, first) = (keyed[k] >> 32, keyed[k] as u32 as usize);
        let mut end = k + 1;
        while end < keyed.len() && keyed[end] >> 32 == h {
            end += 1;
        }
        if out[first] == -1 {
            by_hash.push(keyed[k]);
            for &r in &keyed[k + 1..end] {
                out[r as u32 as usize] = -2 - first as i32;
            }
        }
        k = end;
    }
    let firsts = (0..out.len() as u32)
        .filter(|&i| out[i as usize] == -1)
        .collect();
    (firsts, by_hash)
}

/// Each repeat of a new hash (`-2 - first` in `out`) takes the bucket of its first position.
fn resolve_repeats(out: &mut [i32]) {
    for i in 0..out.len() {
        if out[i] <= -2 {
            // the first position is before `i`: resolved already
            out[i] = out[(-2 - out[i]) as usize];
        }
    }
}

/// Push `run` (sorted (hash, bucket) pairs) onto `runs`, merging the last two while the older
/// is at most twice the newer: O(log n) runs, each pair copied O(log n) times.
fn push_run(runs: &mut Vec<Vec<u64>>, run: Vec<u64>) {
    if run.is_empty() {
        return;
    }
    runs.push(run);
    while runs.len() >= 2 && runs[runs.len() - 2].len() <= 2 * runs[runs.len() - 1].len() {
        let (Some(newer), Some(older)) = (runs.pop(), runs.pop()) else {
            break;
        };
        runs.push(merge_sorted(&older, &newer));
    }
}

impl PartitionIndex {
    /// Java's `PartitionIndex.assign` for assigner `assigner` = (count, id), of the new keys at
    /// positions `firsts` of `hashes` (distinct, unknown to the index), in arrival order: sets
    /// their buckets in `out`. The buckets' state changes only when every key got a bucket.
    fn assign_new(
        &mut self,
        hashes: &[i32],
        firsts: &[u32],
        out: &mut [i32],
        options: &DynamicBucketOptions,
        (num_assigners, assign_id): (i32, i32),
        table: &str,
    ) -> Result<()> {
        if firsts.is_empty() {
            return Ok(());
        }
        let target = options.target_row_num;
        let max_buckets = options.max_buckets;
        let mut non_full = self.non_full.clone();
        let mut buckets = self.buckets.clone();
        let mut bucket_set = self.bucket_set.clone();
        let mut upper_bound_reached = self.upper_bound_reached;
        let mut j = 0;
        while j < firsts.len() {
            // 1. (a known key stays in its bucket: not one of `firsts`)
            // 2. the first bucket with room takes as many keys as it has room for
            if let Some((&b, n)) = non_full.iter_mut().next() {
                if *n < target {
                    let take = ((target - *n) as usize).min(firsts.len() - j);
                    *n += take as i64;
                    for &i in &firsts[j..j + take] {
                        out[i as usize] = b;
                    }
                    j += take;
                } else {
                    non_full.remove(&b);
                }
                continue;
            }
            // 3. a new bucket, while the bound allows: it takes this key (count 1, as Java)
            if !upper_bound_reached {
                let limit = if max_buckets == -1 {
                    BUCKET_LIMIT
                } else {
                    max_buckets
                };
                let new = (0..limit).find(|&b| {
                    b % num_assigners == assign_id % num_assigners && !bucket_set.contains(&b)
                });
                match new {
                    Some(b) => {
                        non_full.insert(b, 1);
                        buckets.push(b);
                        bucket_set.insert(b);
                        out[firsts[j] as usize] = b;
                        j += 1;
                        continue;
                    }
                    None if max_buckets == -1 => {
                        return Err(Error::unsupported(format!(
                            "partition reached {BUCKET_LIMIT} dynamic buckets of \
                             'dynamic-bucket.target-row-num' = {target} keys: increase the \
                             target row number"
                        ))
                        .with_table(table));
                    }
                    None => upper_bound_reached = true,
                }
            }
            // 4. every bucket is full and no more may be created: one of them, by the key's hash
            if buckets.is_empty() {
                return Err(Error::invalid(format!(
                    "no dynamic bucket is left for assigner {assign_id} of {num_assigners} \
                     under 'dynamic-bucket.max-buckets' = {max_buckets}"
                ))
                .with_table(table));
            }
            for &i in &firsts[j..] {
                out[i as usize] = buckets[(hashes[i as usize] as u32 as usize) % buckets.len()];
            }
            j = firsts.len();
        }
        self.non_full = non_full;
        self.buckets = buckets;
        self.bucket_set = bucket_set;
        self.upper_bound_reached = upper_bound_reached;
        Ok(())
    }
}

impl DynamicBucketAssigner {
    /// Write a new index file for every bucket that got new keys since the last commit; the
    /// assigner's state changes only by [`Self::committed`] (a failed prepare changes nothing:
    /// the files written are deleted).
    pub fn prepare_commit(&self, table: &FileStoreTable) -> Result<Vec<HashIndexChange>> {
        let mut out = vec![];
        let written = |out: &mut Vec<HashIndexChange>| -> Result<()> {
            for (p, index) in &self.partitions {
                for &b in &index.changed {
                    let added = index
                        .added_per_bucket
                        .get(&b)
                        .map_or(&[][..], Vec::as_slice);
                    let hashes = match index.restored.get(&b) {
                        Some(old) => old.merged(added),
                        None => SortedHashes::default().merged(added),
                    };
                    out.push(HashIndexChange {
                        partition: p.clone(),
                        bucket: b,
                        new_file: write_hash_index(table, hashes.as_slice(), &self.index_prefix)?,
                        replaced: index.files.get(&b).cloned(),
                        hashes,
                    });
                }
            }
            Ok(())
        };
        if let Err(e) = written(&mut out) {
            discard(table, &out);
            return Err(e.with_table(&table.name));
        }
        Ok(out)
    }

    /// The changes of [`Self::prepare_commit`] were handed to a commit: they are the buckets'
    /// live index files from now on (and the table handle's cache holds them: a later writer
    /// whose snapshot lists them takes them from there).
    pub fn committed(&mut self, changes: &[HashIndexChange]) {
        let mut moved: BTreeMap<&[u8], Vec<(i32, Vec<i32>)>> = BTreeMap::new();
        for c in changes {
            if let Some(index) = self.partitions.get_mut(&c.partition) {
                index.files.insert(c.bucket, c.new_file.clone());
                index.changed.remove(&c.bucket);
                index.last_changed = None;
                let added = index.added_per_bucket.remove(&c.bucket).unwrap_or_default();
                moved
                    .entry(&c.partition)
                    .or_default()
                    .push((c.bucket, added));
                index.restored.insert(c.bucket, c.hashes.clone());
                self.cache
                    .put(&c.partition, c.bucket, &c.new_file.file_name, &c.hashes);
            }
        }
        // the committed buckets' new keys are in their restored lists (and merged list) now
        for (p, added) in moved {
            if let Some(index) = self.partitions.get_mut(p) {
                if let Some(m) = index.merged.take() {
                    // the cache's copy goes first: the list is then ours alone, merged in place
                    self.cache.drop_merged(p);
                    let m = m.with(&added);
                    self.cache.put_merged(p, index.file_list(), &m);
                    index.merged = Some(m);
                }
                if index.added_per_bucket.is_empty() {
                    // the usual case, every changed bucket committed at once
                    index.added.clear();
                } else {
                    let done: BTreeSet<i32> = added.iter().map(|(b, _)| *b).collect();
                    for run in &mut index.added {
                        run.retain(|&p| !done.contains(&(p as u32 as i32)));
                    }
                    index.added.retain(|r| !r.is_empty());
                }
            }
        }
    }

    /// Number of keys in the loaded index of `partition` per bucket.
    #[cfg(test)]
    pub fn bucket_sizes(&self, partition: &[u8]) -> BTreeMap<i32, usize> {
        self.partitions
            .get(partition)
            .map(|i| {
                let buckets: BTreeSet<i32> = i
                    .restored
                    .keys()
                    .chain(i.added_per_bucket.keys())
                    .copied()
                    .collect();
                buckets.into_iter().map(|b| (b, i.bucket_len(b))).collect()
            })
            .unwrap_or_default()
    }
}

/// The rows of a batch by partition, with their key hashes: what a distributed write's assign
/// stage and its bucket writers need of a dynamic-bucket table's rows.
pub(crate) struct KeyedRows {
    /// The batch's partitions (serialized BinaryRows as writers key them), in first-seen order.
    pub partitions: Vec<Vec<u8>>,
    /// Row indices of each partition of `partitions`.
    pub rows: Vec<Vec<u32>>,
    /// Hash of each row's trimmed primary key (Java's `BinaryRow.hashCode()`).
    pub key_hash: Vec<i32>,
}

/// [`KeyedRows`] of `batch` (at least the partition and primary-key columns, by name; cast to
/// the table's types).
pub(crate) fn keyed_rows(table: &FileStoreTable, batch: &RecordBatch) -> Result<KeyedRows> {
    let n = batch.num_rows();
    let column = |name: &String| typed_column(table, batch, name);
    let trimmed = table.trimmed_primary_keys();
    let keys: Vec<ArrayRef> = trimmed.iter().map(column).collect::<Result<_>>()?;
    let key_hash = compute_hashes(&keys, &table.schema.types_of(&trimmed)?)?;
    let mut partitions = vec![];
    let mut rows: Vec<Vec<u32>> = vec![];
    if let Some(enc) = partition_encoder(table, batch)? {
        let arity = (table.partition_keys().len() as i32).to_be_bytes();
        let mut pos: HashMap<Vec<u8>, usize> = HashMap::new();
        let (mut buf, mut key) = (Vec::new(), Vec::new());
        for r in 0..n {
            enc.encode(r, &mut buf)?; // clears `buf` first
            key.clear();
            key.extend_from_slice(&arity);
            key.extend_from_slice(&buf);
            let i = match pos.get(&key) {
                Some(&i) => i,
                None => {
                    pos.insert(key.clone(), partitions.len());
                    partitions.push(key.clone());
                    rows.push(vec![]);
                    partitions.len() - 1
                }
            };
            rows[i].push(r as u32);
        }
    } else {
        partitions.push(crate::spec::binary_row::empty_row());
        rows.push((0..n as u32).collect());
    }
    Ok(KeyedRows {
        partitions,
        rows,
        key_hash,
    })
}

/// The hash of a serialized partition (arity prefix, then the BinaryRow) an assigner is chosen
/// by: the BinaryRow's MurmurHash3, 0 for the empty partition of an unpartitioned table (as
/// [`crate::write::assign::partition_bucket_of`]).
fn partition_hash(partition: &[u8]) -> i32 {
    match partition.get(..4) {
        Some(arity) if arity != [0, 0, 0, 0] => hash_bytes(&partition[4..]),
        _ => 0,
    }
}

/// The assign task (of `num_assigners`) of every row of `batch` of a dynamic-bucket table, and
/// its key hash: the first shuffle of a distributed write (Java's
/// `BucketAssigner.computeAssigner`; keys of one partition spread over the assigners by key
/// hash, each partition starting at its own assigner).
pub fn assigner_channels(
    table: &FileStoreTable,
    batch: &RecordBatch,
    num_assigners: i32,
) -> Result<(Vec<i32>, Vec<i32>)> {
    if num_assigners <= 0 {
        return Err(
            Error::invalid(format!("{num_assigners} dynamic bucket assigners"))
                .with_table(&table.name),
        );
    }
    let k = keyed_rows(table, batch)?;
    let mut channel = vec![0; batch.num_rows()];
    for (p, rows) in k.partitions.iter().zip(&k.rows) {
        let ph = partition_hash(p);
        for &r in rows {
            channel[r as usize] =
                assigner_of(ph, k.key_hash[r as usize], num_assigners, num_assigners);
        }
    }
    Ok((channel, k.key_hash))
}

/// The number of assign tasks of a distributed write of `table` whose engine runs
/// `parallelism` tasks: `dynamic-bucket.assigner-parallelism` (else `parallelism`), at most
/// `dynamic-bucket.max-buckets`, at most `dynamic-bucket.initial-buckets` (Java's
/// `PaimonSparkWriter`: its `numAssigners`). Each task is one assigner, so the assigners'
/// buckets (`bucket % n == i`) never meet.
pub fn num_assign_tasks(table: &FileStoreTable, parallelism: i32) -> Result<i32> {
    let o = table.options.dynamic_bucket()?;
    let mut n = o.assigner_parallelism.unwrap_or(parallelism).max(1);
    if o.max_buckets != -1 {
        n = n.min(o.max_buckets.max(1));
    }
    if let Some(initial) = o.initial_buckets {
        n = n.min(initial.max(1));
    }
    Ok(n)
}

/// One assign task of a distributed write of a dynamic-bucket table: assigner `assign_id` of
/// `num_assigners`, over the hash index of one snapshot (the one every writer of the write
/// restores from).
#[derive(Debug)]
pub struct AssignTask {
    table: FileStoreTable,
    assigner: DynamicBucketAssigner,
    live_index: Vec<IndexManifestEntry>,
}

impl AssignTask {
    /// `snapshot_id`: the snapshot to read the hash index from (None: the empty table).
    pub fn new(
        table: &FileStoreTable,
        num_assigners: i32,
        assign_id: i32,
        snapshot_id: Option<i64>,
    ) -> Result<Self> {
        if super::cross_partition::is_cross_partition(table) {
            return Err(cross_partition_distributed().with_table(&table.name));
        }
        let assigner =
            DynamicBucketAssigner::distributed(table, num_assigners, num_assigners, assign_id)?;
        let live_index = match snapshot_id {
            Some(id) => {
                let s = table.snapshot_manager().snapshot(id)?;
                table.live_index_entries(s.index_manifest.as_deref())?
            }
            None => vec![],
        };
        Ok(AssignTask {
            table: table.clone(),
            assigner,
            live_index,
        })
    }

    /// The bucket of every row of `batch` ([`DynamicBucketAssigner::assign_rows`]).
    pub fn assign(&mut self, batch: &RecordBatch) -> Result<Vec<i32>> {
        self.assigner
            .assign_rows(&self.table, batch, &self.live_index)
            .map_err(|e| e.with_table(&self.table.name))
    }
}

impl DynamicBucketAssigner {
    /// Name this assigner's index files `prefix<uuid>-0` (default `index-`).
    pub fn set_index_prefix(&mut self, prefix: &str) {
        self.index_prefix = prefix.to_string();
    }

    /// The bucket of every row of `batch` (at least the partition and primary-key columns) by
    /// this assigner of a distributed write, from the hash index of `live_index`: every row must
    /// be one [`assigner_channels`] sends to this assigner. Rows in the order of their key
    /// hashes give the same buckets whatever the order of equal hashes: a retried assign task
    /// whose input is sorted by key hash assigns as the first attempt did.
    pub fn assign_rows(
        &mut self,
        table: &FileStoreTable,
        batch: &RecordBatch,
        live_index: &[IndexManifestEntry],
    ) -> Result<Vec<i32>> {
        let k = keyed_rows(table, batch)?;
        let mut out = vec![0; batch.num_rows()];
        for (p, rows) in k.partitions.iter().zip(&k.rows) {
            let ph = partition_hash(p);
            self.load(table, p, live_index)?;
            let hashes: Vec<i32> = rows.iter().map(|&r| k.key_hash[r as usize]).collect();
            if let Some(h) = hashes.iter().find(|&&h| {
                assigner_of(ph, h, self.num_channels, self.num_assigners) != self.assign_id
            }) {
                return Err(Error::Internal(format!(
                    "{}: a key of hash {h} reached dynamic bucket assigner {} of {}, which \
                     does not own it",
                    self.table, self.assign_id, self.num_assigners
                )));
            }
            for (&r, b) in rows.iter().zip(self.assign_all(p, &hashes)?) {
                out[r as usize] = b;
            }
        }
        Ok(out)
    }

    /// A bucket writer of a distributed write: the keys of `hashes` of a loaded `partition` were
    /// written to `buckets` (an assign stage's choice); new keys join their bucket's index (Java's
    /// `DynamicBucketIndexMaintainer.notifyNewRecord`). A key the index places in another bucket
    /// is refused: it would be in two buckets.
    pub fn record(&mut self, partition: &[u8], hashes: &[i32], buckets: &[i32]) -> Result<()> {
        let table = &self.table;
        let index = self.partitions.get_mut(partition).ok_or_else(|| {
            Error::Internal(format!("{table}: hash index of a partition not loaded"))
        })?;
        if let Some(&b) = buckets.iter().find(|b| !(0..BUCKET_LIMIT).contains(*b)) {
            return Err(Error::invalid(format!(
                "dynamic bucket {b} given for a row (0 to {} allowed)",
                BUCKET_LIMIT - 1
            ))
            .with_table(table));
        }
        let keyed = sorted_keys(hashes);
        let mut known = index.known_buckets(&keyed, Some((&self.cache, partition)));
        let (firsts, by_hash) = first_of_new_hashes(&keyed, &mut known);
        for &i in &firsts {
            known[i as usize] = buckets[i as usize];
        }
        resolve_repeats(&mut known);
        if let Some(i) = (0..hashes.len()).find(|&i| known[i] != buckets[i]) {
            let (h, b, known) = (hashes[i], buckets[i], known[i]);
            return Err(Error::invalid(format!(
                "a key of hash {h} was assigned to bucket {b}, but the hash index \
                 holds it in bucket {known}: the assignment is stale (the index changed \
                 after the assign stage read it) and the key would be in two buckets"
            ))
            .with_table(table));
        }
        index.add_new(hashes, &known, &firsts, &by_hash);
        Ok(())
    }
}

/// A cross-partition upsert table through the dynamic-bucket assign stage: refused (its key
/// index spans every partition; `CrossAssignTask` is its assign stage).
pub(crate) fn cross_partition_distributed() -> Error {
    Error::unsupported(
        "a cross-partition upsert table through the dynamic-bucket assign stage: its key index \
         spans every partition; its rows go through a cross-partition assign task \
         (CrossAssignTask) and are written with their row kinds (write_assigned_rows)",
    )
}

/// Delete the index files of `changes` (a prepare or commit that failed).
pub(crate) fn discard(table: &FileStoreTable, changes: &[HashIndexChange]) {
    for c in changes {
        let _ =
            crate::io::remove_file_if_exists(&table.index_file_path(&c.new_file.file_name, None));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::manifest::FileKind;
    use crate::write::assign::tests::table;

    fn dynamic(dir: &std::path::Path, opts: &[(&str, &str)]) -> FileStoreTable {
        let mut o: std::collections::BTreeMap<String, String> = opts
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        o.insert("bucket".into(), "-1".into());
        table(dir, "1").copy(&o).unwrap()
    }

    fn entry(p: &[u8], bucket: i32, f: &IndexFileMeta) -> IndexManifestEntry {
        IndexManifestEntry::of(FileKind::Add, p, bucket, f)
    }

    /// Known keys stay, new keys fill a bucket to the target, then open the next one; the
    /// index files round-trip (big-endian ints) and a reloaded assigner continues where the
    /// first stopped.
    #[test]
    fn assigns_known_keys_to_their_bucket_and_new_keys_to_room() {
        let dir = tempfile::tempdir().unwrap();
        let t = dynamic(dir.path(), &[("dynamic-bucket.target-row-num", "3")]);
        let p = vec![1u8, 2, 3];
        let mut a = DynamicBucketAssigner::new(&t).unwrap();
        a.load(&t, &p, &[]).unwrap();
        let got: Vec<i32> = (0..7).map(|h| a.assign(&p, h * 10).unwrap()).collect();
        assert_eq!(got, [0, 0, 0, 1, 1, 1, 2]);
        assert_eq!(a.assign(&p, 10).unwrap(), 0);
        assert_eq!(a.assign(&p, 40).unwrap(), 1);
        let changes = a.prepare_commit(&t).unwrap();
        assert_eq!(changes.len(), 3);
        assert!(changes.iter().all(|c| c.replaced.is_none()));
        a.committed(&changes);
        assert!(a.prepare_commit(&t).unwrap().is_empty());
        let live: Vec<IndexManifestEntry> = changes
            .iter()
            .map(|c| entry(&c.partition, c.bucket, &c.new_file))
            .collect();
        let b0 = changes.iter().find(|c| c.bucket == 0).unwrap();
        assert_eq!(read_hash_index(&t, &b0.new_file).unwrap(), [0, 10, 20]);
        let bytes = std::fs::read(t.path.join("index").join(&b0.new_file.file_name)).unwrap();
        assert_eq!(&bytes[4..8], &10i32.to_be_bytes());

        let mut b = DynamicBucketAssigner::new(&t).unwrap();
        b.load(&t, &p, &live).unwrap();
        assert_eq!(b.assign(&p, 50).unwrap(), 1);
        assert_eq!(b.assign(&p, 60).unwrap(), 2);
        assert_eq!(b.assign(&p, 70).unwrap(), 2);
        assert_eq!(b.assign(&p, 80).unwrap(), 2); // 60 was bucket 2's first key
        assert_eq!(b.assign(&p, 90).unwrap(), 3);
        let changes = b.prepare_commit(&t).unwrap();
        let b2 = changes.iter().find(|c| c.bucket == 2).unwrap();
        assert!(b2.replaced.is_some());
        assert_eq!(read_hash_index(&t, &b2.new_file).unwrap(), [60, 70, 80]);
        assert_eq!(b.bucket_sizes(&p), [(0, 3), (1, 3), (2, 3), (3, 1)].into());
    }

    /// The batch lookup in the buckets' sorted lists answers as a map of every restored hash
    /// would (lists of very different sizes: galloping and linear merging both), and a merge
    /// keeps a list sorted.
    #[test]
    fn sorted_lists_answer_as_a_map() {
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % m) as i64 as i32 - (m / 2) as i32
        };
        for (sizes, queries) in [(vec![0, 5, 3000], 40), (vec![1, 200, 7], 5000), (vec![], 3)] {
            let mut index = PartitionIndex::default();
            let mut model = HashMap::new();
            for (b, &n) in sizes.iter().enumerate() {
                let mut hashes: Vec<i32> = (0..n).map(|_| next(20_000)).collect();
                hashes.retain(|h| !model.contains_key(h));
                hashes.sort_unstable();
                hashes.dedup();
                for &h in &hashes {
                    model.insert(h, b as i32);
                }
                hashes.reverse(); // as Java's files: any order
                index.restored.insert(b as i32, SortedHashes::new(hashes));
            }
            let q: Vec<i32> = (0..queries).map(|_| next(20_000)).collect();
            let want: Vec<i32> = q.iter().map(|h| *model.get(h).unwrap_or(&-1)).collect();
            assert_eq!(index.restored_buckets(&q, None), want);
            let merged = index.merged.clone().unwrap_or_default();
            let lists: usize = index.restored.values().map(SortedHashes::len).sum();
            assert_eq!(merged.len(), lists);
            if let Some(list) = index.restored.get(&1) {
                let new: Vec<i32> = q
                    .iter()
                    .filter(|h| !model.contains_key(h))
                    .copied()
                    .collect();
                let mut new = new;
                new.sort_unstable();
                new.dedup();
                let merged = list.merged(&new);
                assert!(merged.as_slice().is_sorted());
                assert_eq!(merged.len(), list.len() + new.len());
            }
        }
    }

    /// `max-buckets` bounds the buckets: once every one is full, new keys go to one of them.
    #[test]
    fn max_buckets_bounds_the_buckets() {
        let dir = tempfile::tempdir().unwrap();
        let t = dynamic(
            dir.path(),
            &[
                ("dynamic-bucket.target-row-num", "2"),
                ("dynamic-bucket.max-buckets", "2"),
            ],
        );
        let p = vec![];
        let mut a = DynamicBucketAssigner::new(&t).unwrap();
        a.load(&t, &p, &[]).unwrap();
        let got: Vec<i32> = (0..100).map(|h| a.assign(&p, h).unwrap()).collect();
        assert!(got.iter().all(|b| (0..2).contains(b)), "{got:?}");
        assert_eq!(got[..4], [0, 0, 1, 1]);
        for h in 0..100 {
            assert_eq!(a.assign(&p, h).unwrap(), got[h as usize]);
        }
    }

    /// Java's `PartitionIndex.assign`, one key at a time over a map: the model of the batch
    /// assignment (same buckets for every key, whatever the batches, repeats and commits).
    struct KeyByKey {
        map: HashMap<i32, i32>,
        non_full: BTreeMap<i32, i64>,
        buckets: Vec<i32>,
        bound: bool,
    }

    impl KeyByKey {
        fn assign(&mut self, h: i32, target: i64, max: i32) -> i32 {
            if let Some(&b) = self.map.get(&h) {
                return b;
            }
            let mut got = None;
            while let Some((&b, n)) = self.non_full.iter_mut().next() {
                if *n < target {
                    *n += 1;
                    got = Some(b);
                    break;
                }
                self.non_full.remove(&b);
            }
            if got.is_none() && !self.bound {
                let limit = if max == -1 { BUCKET_LIMIT } else { max };
                match (0..limit).find(|b| !self.buckets.contains(b)) {
                    Some(b) => {
                        self.non_full.insert(b, 1);
                        self.buckets.push(b);
                        got = Some(b);
                    }
                    None => self.bound = true,
                }
            }
            let b = got.unwrap_or_else(|| self.buckets[(h as u32 as usize) % self.buckets.len()]);
            self.map.insert(h, b);
            b
        }
    }

    #[test]
    fn batch_assignment_equals_java_key_by_key() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        for (target, max) in [(1i64, -1i32), (3, -1), (7, 4), (50, 2), (1000, -1)] {
            let dir = tempfile::tempdir().unwrap();
            let t = dynamic(
                dir.path(),
                &[
                    ("dynamic-bucket.target-row-num", &target.to_string()),
                    ("dynamic-bucket.max-buckets", &max.to_string()),
                ],
            );
            let p = vec![7u8];
            let mut model = KeyByKey {
                map: HashMap::new(),
                non_full: BTreeMap::new(),
                buckets: vec![],
                bound: false,
            };
            let mut live: Vec<IndexManifestEntry> = vec![];
            for commit in 0..4 {
                // a fresh assigner per commit restores from the committed files
                let mut a = DynamicBucketAssigner::new(&t).unwrap();
                a.load(&t, &p, &live).unwrap();
                if commit > 0 {
                    // Java's restore: counts from the files, buckets in file order
                    model.non_full = a.partitions[&p].non_full.clone();
                    model.bound = false;
                }
                for _ in 0..1 + next(3) {
                    let n = next(400) as usize;
                    // hashes from a small range: repeats within and across batches
                    let hashes: Vec<i32> = (0..n).map(|_| next(600) as i32 - 300).collect();
                    let got = a.assign_all(&p, &hashes).unwrap();
                    let want: Vec<i32> = hashes
                        .iter()
                        .map(|&h| model.assign(h, target, max))
                        .collect();
                    assert_eq!(got, want, "target {target}, max {max}, commit {commit}");
                }
                let changes = a.prepare_commit(&t).unwrap();
                a.committed(&changes);
                for c in &changes {
                    live.retain(|e| e.bucket != c.bucket);
                    live.push(entry(&c.partition, c.bucket, &c.new_file));
                }
            }
        }
    }

    /// Assigner `i` of `n` creates only buckets `b % n == i`, and keeps only its own keys.
    #[test]
    fn distributed_assigners_own_disjoint_buckets() {
        let dir = tempfile::tempdir().unwrap();
        let t = dynamic(dir.path(), &[("dynamic-bucket.target-row-num", "1")]);
        let p = vec![];
        let mut changes = vec![];
        let mut owners = BTreeMap::new();
        let mut placed = BTreeMap::new();
        for id in 0..3 {
            let mut a = DynamicBucketAssigner::distributed(&t, 3, 3, id).unwrap();
            a.load(&t, &p, &[]).unwrap();
            for h in (0..30).filter(|h| assigner_of(7, *h, 3, 3) == id) {
                let b = a.assign(&p, h).unwrap();
                assert_eq!(b % 3, id);
                assert!(owners.insert(b, id).is_none());
                placed.insert(h, b);
            }
            changes.extend(a.prepare_commit(&t).unwrap());
        }
        assert_eq!(owners.len(), 30);
        // a reloaded assigner 1 keeps its keys in their buckets and uses only its buckets
        let live: Vec<_> = changes
            .iter()
            .map(|c| entry(&c.partition, c.bucket, &c.new_file))
            .collect();
        let mut a = DynamicBucketAssigner::distributed(&t, 3, 3, 1).unwrap();
        a.load(&t, &p, &live).unwrap();
        assert!(a.partitions[&p].buckets.iter().all(|b| b % 3 == 1));
        for h in (0..30).filter(|h| assigner_of(7, *h, 3, 3) == 1) {
            assert_eq!(a.assign(&p, h).unwrap(), placed[&h]);
        }
        assert!(a.prepare_commit(&t).unwrap().is_empty());
        assert_eq!(a.assign(&p, 1000).unwrap() % 3, 1);
        assert!(DynamicBucketAssigner::distributed(&t, 2, 2, 2).is_err());
    }

    // ---- through TableWrite and FileStoreCommit ----

    use crate::commit::{CommitMessage, FileStoreCommit};
    use crate::spec::manifest::{live_index_entries, read_index_manifest};
    use crate::write::assign::tests::rows;
    use crate::write::TableWrite;
    use arrow_array::{Int64Array, StringArray};

    fn write(t: &FileStoreTable, batches: &[arrow_array::RecordBatch]) -> Vec<CommitMessage> {
        let mut w = TableWrite::new(t.clone()).unwrap();
        for b in batches {
            w.write(b).unwrap();
        }
        w.prepare_commit().unwrap()
    }

    fn commit_as(t: &FileStoreTable, user: &str, msgs: &[CommitMessage]) -> Result<Option<i64>> {
        FileStoreCommit::new(t.clone(), user.into()).commit(msgs, i64::MAX, None)
    }

    /// (partition value, bucket) -> key -> value, read per split.
    fn read_by_bucket(t: &FileStoreTable) -> BTreeMap<(i32, i32), BTreeMap<i64, String>> {
        let plan = crate::read::scan::TableScan::new(t.clone(), None)
            .plan()
            .unwrap();
        let r = crate::read::table_read::TableRead::new(t.clone(), None, None).unwrap();
        let mut out: BTreeMap<(i32, i32), BTreeMap<i64, String>> = BTreeMap::new();
        for split in &plan.splits {
            let pv = i32::from_le_bytes(split.partition[12..16].try_into().unwrap());
            for b in r.read_splits(std::slice::from_ref(split)).unwrap() {
                let k = b.column(1).as_any().downcast_ref::<Int64Array>().unwrap();
                let v = b.column(2).as_any().downcast_ref::<StringArray>().unwrap();
                for i in 0..b.num_rows() {
                    out.entry((pv, split.bucket))
                        .or_default()
                        .insert(k.value(i), v.value(i).to_string());
                }
            }
        }
        out
    }

    fn live_hash_files(t: &FileStoreTable) -> Vec<IndexManifestEntry> {
        let s = t.snapshot_manager().latest().unwrap().unwrap();
        let Some(name) = s.index_manifest else {
            return vec![];
        };
        let p = t.manifest_dir().join(name);
        live_index_entries(read_index_manifest(&crate::io::read(&p).unwrap(), &p).unwrap())
            .into_iter()
            .filter(|e| e.index_type == HASH_INDEX)
            .collect()
    }

    /// Writes over several commits (upserts of known keys, new keys, two partitions): every
    /// key is in exactly one bucket with its newest value, buckets hold at most the target,
    /// each bucket has one live hash index file listing exactly its keys' hashes; a full
    /// compaction and snapshot expiry keep the index.
    #[test]
    fn writes_keep_each_key_in_one_bucket() {
        let dir = tempfile::tempdir().unwrap();
        let t = dynamic(dir.path(), &[("dynamic-bucket.target-row-num", "40")]);
        commit_as(&t, "u", &write(&t, &[rows(1, 0..100), rows(2, 0..30)])).unwrap();
        commit_as(&t, "u", &write(&t, &[rows(1, 50..170)])).unwrap();
        commit_as(&t, "u", &write(&t, &[tagged(1, 0..170, "new")])).unwrap();
        let check = |t: &FileStoreTable| {
            let got = read_by_bucket(t);
            let mut seen: BTreeMap<(i32, i64), i32> = BTreeMap::new();
            for ((p, b), keys) in &got {
                assert!(keys.len() <= 40, "bucket {b} of {p}: {} keys", keys.len());
                for k in keys.keys() {
                    assert!(
                        seen.insert((*p, *k), *b).is_none(),
                        "key {k} in two buckets"
                    );
                }
            }
            assert_eq!(seen.len(), 200);
            assert_eq!(got.keys().filter(|(p, _)| *p == 1).count(), 5);
            let files = live_hash_files(t);
            assert_eq!(files.len(), got.len());
            for e in &files {
                let pv = i32::from_le_bytes(e.partition[12..16].try_into().unwrap());
                let meta = IndexFileMeta {
                    index_type: HASH_INDEX.into(),
                    file_name: e.file_name.clone(),
                    file_size: e.file_size,
                    row_count: e.row_count,
                    dv_ranges: None,
                    external_path: None,
                    global_index: None,
                };
                let mut hashes = read_hash_index(t, &meta).unwrap();
                hashes.sort();
                let keys: Vec<i64> = got[&(pv, e.bucket)].keys().copied().collect();
                let arr: arrow_array::ArrayRef = std::sync::Arc::new(Int64Array::from(keys));
                let mut want = crate::spec::bucket::compute_hashes(
                    &[arr],
                    &[crate::spec::types::DataType::new(
                        crate::spec::types::TypeKind::BigInt,
                    )],
                )
                .unwrap();
                want.sort();
                assert_eq!(hashes, want, "bucket {} of partition {pv}", e.bucket);
                assert_eq!(e.row_count as usize, want.len());
            }
        };
        check(&t);
        let got = read_by_bucket(&t);
        assert!(got
            .iter()
            .filter(|((p, _), _)| *p == 1)
            .all(|(_, keys)| keys.iter().all(|(k, v)| *v == format!("new{k}"))));
        crate::compact::compact_table(&t, true, None).unwrap();
        check(&t);
        let config = crate::table::retention::ExpireConfig {
            num_retained_min: 1,
            num_retained_max: 1,
            time_retained_ms: 0,
            expire_limit: 100,
        };
        crate::table::expire::expire_snapshots(&t, &config, i64::MAX).unwrap();
        check(&t);
        // a writer after expiry restores the index: known keys stay in their buckets
        commit_as(&t, "u", &write(&t, &[rows(1, 0..170)])).unwrap();
        check(&t);
    }

    /// Two writers restored the same index: the second commit conflicts instead of putting a
    /// key in two buckets; the same user's streaming writer continues its own index.
    #[test]
    fn concurrent_writers_of_a_partition_conflict() {
        let dir = tempfile::tempdir().unwrap();
        let t = dynamic(dir.path(), &[("dynamic-bucket.target-row-num", "10")]);
        commit_as(&t, "u", &write(&t, &[rows(1, 0..5)])).unwrap();
        // a fills bucket 0; b too, then opens bucket 1: keys of disjoint ranges, so only
        // the hash index tells that both assigned from the same restored index
        let a = write(&t, &[rows(1, 100..103)]);
        let b = write(&t, &[rows(1, 200..210)]);
        let other = write(&t, &[rows(2, 0..3)]); // another partition: no conflict
        commit_as(&t, "a", &a).unwrap();
        commit_as(&t, "o", &other).unwrap();
        let e = commit_as(&t, "b", &b).unwrap_err();
        assert!(
            matches!(&e, Error::CommitConflict { message, .. }
                if message.contains("hash index of partition 'p=1'")),
            "{e}"
        );
        let got = read_by_bucket(&t);
        let n: usize = got.values().map(BTreeMap::len).sum();
        assert_eq!(n, 5 + 3 + 3);

        // one streaming writer, several commits of one user
        let mut w = TableWrite::new(t.clone()).unwrap();
        for i in 0..3 {
            w.write(&rows(1, (300 + i * 10)..(315 + i * 10))).unwrap();
            commit_as(&t, "s", &w.prepare_commit_as(i).unwrap()).unwrap();
        }
        let got = read_by_bucket(&t);
        let mut keys: Vec<(i32, i64)> = got
            .iter()
            .flat_map(|((p, _), m)| m.keys().map(|k| (*p, *k)))
            .collect();
        let n = keys.len();
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), n, "a key in two buckets");
        assert_eq!(n, 5 + 3 + 3 + 35); // p=1: 0..5, 100..103, 300..335; p=2: 0..3
    }

    /// A writer that only updates known keys changes no hash index, but took their buckets
    /// from its restored snapshot: an OVERWRITE of the partition by another user since (new
    /// buckets for the keys) makes its commit conflict instead of putting a key in two
    /// buckets; an overwrite of another partition, or a plain write of another user, does not.
    #[test]
    fn an_overwrite_since_the_restored_snapshot_conflicts_with_updates_of_known_keys() {
        let dir = tempfile::tempdir().unwrap();
        let t = dynamic(dir.path(), &[("dynamic-bucket.target-row-num", "5")]);
        commit_as(&t, "u", &write(&t, &[rows(1, 0..20), rows(2, 0..20)])).unwrap();
        // updates of known keys of both partitions, restored from snapshot 1
        let updates = write(&t, &[tagged(1, 0..20, "late"), tagged(2, 0..20, "late")]);
        assert!(updates
            .iter()
            .all(|m| m.data_increment.new_index_files.is_empty()));
        // another user writes new keys into p=2 (no conflict: our keys keep their buckets)
        commit_as(&t, "o", &write(&t, &[rows(2, 100..103)])).unwrap();
        // the overwrite of p=1 assigns its keys afresh (a new hash index): new keys first, so
        // keys 0..20 land in other buckets than before (and no bucket's key range overlaps
        // ours: the sequence-number check sees nothing)
        let mut w = TableWrite::new(t.clone()).unwrap();
        w.ignore_previous_files(true).unwrap();
        w.write(&tagged(1, 100..120, "over")).unwrap();
        w.write(&tagged(1, 0..20, "over")).unwrap();
        let over = w.prepare_commit().unwrap();
        let spec = vec![("p".to_string(), Some(crate::spec::datum::Datum::Int(1)))];
        FileStoreCommit::new(t.clone(), "o".into())
            .commit(&over, i64::MAX, Some(&spec))
            .unwrap();
        let e = commit_as(&t, "u2", &updates).unwrap_err();
        assert!(
            matches!(&e, Error::CommitConflict { message, .. }
                if message.contains("partition 'p=1' was overwritten by snapshot 3")),
            "{e}"
        );
        let only_p2 = write(&t, &[tagged(2, 0..20, "late2")]);
        let got = read_by_bucket(&t);
        assert!(got.values().flatten().all(|(_, v)| !v.starts_with("late")));
        // updates of p=2 only, restored after the overwrite: committed
        commit_as(&t, "u2", &only_p2).unwrap();
        let got = read_by_bucket(&t);
        let mut seen = BTreeMap::new();
        for ((p, b), keys) in &got {
            for k in keys.keys() {
                assert!(
                    seen.insert((*p, *k), *b).is_none(),
                    "key {k} in two buckets"
                );
            }
        }
    }

    /// Every key of [`read_by_bucket`] in one bucket, at most `target` per bucket: the keys.
    fn keys_once(t: &FileStoreTable, target: usize) -> BTreeMap<(i32, i64), i32> {
        let mut seen = BTreeMap::new();
        for ((p, b), keys) in read_by_bucket(t) {
            assert!(keys.len() <= target, "bucket {b}: {} keys", keys.len());
            for k in keys.keys() {
                assert!(seen.insert((p, *k), b).is_none(), "key {k} in two buckets");
            }
        }
        seen
    }

    /// A later writer of the same table handle takes the hash index the handle's earlier writer
    /// committed from the handle's cache (it reads no index file: they may even be gone), and
    /// re-reads a bucket whose file another handle's commit replaced meanwhile.
    #[test]
    fn writers_of_a_handle_reuse_its_committed_index() {
        let dir = tempfile::tempdir().unwrap();
        let t = dynamic(dir.path(), &[("dynamic-bucket.target-row-num", "10")]);
        commit_as(&t, "u", &write(&t, &[rows(1, 0..25)])).unwrap();
        assert_eq!(t.hash_index_cache.len(), 3);
        // another handle (its own cache) fills bucket 2 and opens bucket 3
        let other = FileStoreTable {
            hash_index_cache: Default::default(),
            ..t.clone()
        };
        commit_as(&other, "o", &write(&other, &[rows(1, 25..33)])).unwrap();
        // t's cached list of bucket 2 is stale: the writer reads the file the snapshot lists
        commit_as(&t, "u", &write(&t, &[rows(1, 0..40)])).unwrap();
        let first = keys_once(&t, 10);
        assert_eq!(first.len(), 40);
        assert_eq!(t.hash_index_cache.len(), 4);
        // the cache holds every live file: with the files gone, t's next writer still keeps
        // each key in its bucket (a writer that reads them fails)
        for f in live_hash_files(&t) {
            std::fs::remove_file(t.path.join("index").join(&f.file_name)).unwrap();
        }
        commit_as(&t, "u", &write(&t, &[tagged(1, 0..40, "again")])).unwrap();
        assert_eq!(keys_once(&t, 10), first);
        let mut w = TableWrite::new(other.clone()).unwrap();
        assert!(w.write(&rows(1, 0..1)).is_err());
    }

    /// A distributed write: two assign tasks (each its own buckets), then two bucket writers
    /// that take the rows of the buckets they are given and write those buckets' index files;
    /// one commit of both. Then a second round from the committed index: known keys keep their
    /// buckets. A writer given a bucket the index contradicts refuses the row.
    #[test]
    fn assign_tasks_then_bucket_writers() {
        let dir = tempfile::tempdir().unwrap();
        let t = dynamic(dir.path(), &[("dynamic-bucket.target-row-num", "10")]);
        let round = |batch: &arrow_array::RecordBatch| {
            let latest = t.snapshot_manager().latest().unwrap().map(|s| s.id);
            let (channel, _) = assigner_channels(&t, batch, 2).unwrap();
            let mut writers: Vec<TableWrite> = (0..2)
                .map(|_| {
                    let mut w = TableWrite::new(t.clone()).unwrap();
                    w.restore_from(latest).unwrap();
                    w
                })
                .collect();
            for id in 0..2 {
                let mine: arrow_array::BooleanArray =
                    channel.iter().map(|&c| Some(c == id)).collect();
                let rows = arrow_select::filter::filter_record_batch(batch, &mine).unwrap();
                let mut task = AssignTask::new(&t, 2, id, latest).unwrap();
                let buckets = task.assign(&rows).unwrap();
                assert!(buckets.iter().all(|b| b % 2 == id));
                // writer w takes buckets b with b / 2 % 2 == w
                for w in 0..2 {
                    let sel: arrow_array::BooleanArray =
                        buckets.iter().map(|b| Some(b / 2 % 2 == w)).collect();
                    let part = arrow_select::filter::filter_record_batch(&rows, &sel).unwrap();
                    let bk: arrow_array::Int32Array = buckets
                        .iter()
                        .zip(sel.values().iter())
                        .filter(|(_, s)| *s)
                        .map(|(b, _)| *b)
                        .collect();
                    writers[w as usize].write_assigned(&part, &bk).unwrap();
                }
            }
            let msgs: Vec<CommitMessage> = writers
                .iter_mut()
                .flat_map(|w| w.prepare_commit().unwrap())
                .collect();
            commit_as(&t, "spark", &msgs).unwrap();
        };
        round(&rows(1, 0..60));
        let first = read_by_bucket(&t);
        assert_eq!(first.len(), 6);
        round(&rows(1, 30..100));
        let second = read_by_bucket(&t);
        let mut seen = BTreeMap::new();
        for ((_, b), keys) in &second {
            assert!(keys.len() <= 10);
            for k in keys.keys() {
                assert!(seen.insert(*k, *b).is_none(), "key {k} in two buckets");
            }
        }
        assert_eq!(seen.len(), 100);
        for ((_, b), keys) in &first {
            assert!(keys.keys().all(|k| seen[k] == *b));
        }
        assert_eq!(live_hash_files(&t).len(), second.len());
        // a stale assignment: key 0 is in bucket seen[&0], given another one
        let mut w = TableWrite::new(t.clone()).unwrap();
        let wrong = arrow_array::Int32Array::from(vec![seen[&0] + 1]);
        let e = w.write_assigned(&rows(1, 0..1), &wrong).unwrap_err();
        assert!(e.to_string().contains("two buckets"), "{e}");
    }

    /// Create `db.<name>` partitioned by `p INT`, keyed by `k BIGINT` alone (a `v STRING`
    /// value), with `opts`.
    fn create_cross(dir: &std::path::Path, name: &str, opts: &[(&str, &str)]) -> Result<()> {
        let cat = crate::table::catalog::FileSystemCatalog::new(dir)?;
        cat.create_database("db", true)?;
        let schema = arrow_schema::Schema::new(vec![
            arrow_schema::Field::new("p", arrow_schema::DataType::Int32, false),
            arrow_schema::Field::new("k", arrow_schema::DataType::Int64, false),
            arrow_schema::Field::new("v", arrow_schema::DataType::Utf8, true),
        ]);
        let o = opts
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let s = crate::table::new_schema::NewTableSchema::from_arrow(
            &schema,
            vec!["p".into()],
            vec!["k".into()],
            o,
            None,
        )?;
        cat.create_table(&format!("db.{name}"), s, false)
    }

    /// A cross-partition upsert table `db.x` (see [`create_cross`]), `bucket` -1 and `opts`.
    fn cross(dir: &std::path::Path, opts: &[(&str, &str)]) -> FileStoreTable {
        let mut o = opts.to_vec();
        o.push(("bucket", "-1"));
        create_cross(dir, "x", &o).unwrap();
        crate::table::catalog::FileSystemCatalog::new(dir)
            .unwrap()
            .get_table("db.x")
            .unwrap()
    }

    /// Rows (p, k, v) with values `tag<k>`.
    fn tagged(p: i32, ks: std::ops::Range<i64>, tag: &str) -> arrow_array::RecordBatch {
        let b = rows(p, ks.clone());
        let v: StringArray = ks.map(|k| Some(format!("{tag}{k}"))).collect();
        arrow_array::RecordBatch::try_new(
            b.schema(),
            vec![
                b.column(0).clone(),
                b.column(1).clone(),
                std::sync::Arc::new(v),
            ],
        )
        .unwrap()
    }

    /// key -> (partition, bucket, value), asserting no key is in two places.
    fn placed(t: &FileStoreTable) -> BTreeMap<i64, (i32, i32, String)> {
        let mut out = BTreeMap::new();
        for ((p, b), keys) in read_by_bucket(t) {
            for (k, v) in keys {
                let prev = out.insert(k, (p, b, v));
                assert!(
                    prev.is_none(),
                    "key {k} in two places: {prev:?} and ({p}, {b})"
                );
            }
        }
        out
    }

    /// Deduplicate: a key written to another partition leaves its old partition (a -D there,
    /// in the same commit and across commits, and twice in one batch); new keys fill buckets
    /// to the target; a new writer bootstraps the index from the table; no hash index files.
    #[test]
    fn cross_partition_keys_move_between_partitions() {
        let dir = tempfile::tempdir().unwrap();
        let t = cross(dir.path(), &[("dynamic-bucket.target-row-num", "30")]);
        commit_as(&t, "u", &write(&t, &[rows(1, 0..100)])).unwrap();
        // 40..60 move to partition 2 (a new writer: bootstrapped), 100..110 are new there
        commit_as(&t, "u", &write(&t, &[tagged(2, 40..110, "b")])).unwrap();
        // one batch: 0..5 to partition 3, then back to 1; 50..55 back to partition 1
        let mut w = TableWrite::new(t.clone()).unwrap();
        w.write(&tagged(3, 0..5, "c")).unwrap();
        w.write(&tagged(1, 0..5, "d")).unwrap();
        w.write(&tagged(1, 50..55, "e")).unwrap();
        commit_as(&t, "u", &w.prepare_commit().unwrap()).unwrap();
        let got = placed(&t);
        assert_eq!(got.len(), 110);
        for (k, (p, b, v)) in &got {
            let (wp, wv) = match k {
                0..=4 => (1, format!("d{k}")),
                50..=54 => (1, format!("e{k}")),
                40..=109 => (2, format!("b{k}")),
                _ => (1, format!("v{k}")),
            };
            assert_eq!((*p, v.as_str()), (wp, wv.as_str()), "key {k} (bucket {b})");
        }
        let mut per: BTreeMap<(i32, i32), usize> = BTreeMap::new();
        for (p, b, _) in got.values() {
            *per.entry((*p, *b)).or_default() += 1;
        }
        assert!(per.values().all(|&n| n <= 30), "{per:?}");
        assert!(live_hash_files(&t).is_empty());
    }

    /// Partial-update keeps a moved key in its old partition (its partition column set to the
    /// old value); first-row drops the row of a key that exists elsewhere.
    #[test]
    fn cross_partition_use_old_and_skip_new() {
        for (engine, want) in [("partial-update", "n7"), ("first-row", "v7")] {
            let dir = tempfile::tempdir().unwrap();
            let t = cross(dir.path(), &[("merge-engine", engine)]);
            commit_as(&t, "u", &write(&t, &[rows(1, 0..10)])).unwrap();
            commit_as(
                &t,
                "u",
                &write(&t, &[tagged(2, 7..8, "n"), rows(2, 20..21)]),
            )
            .unwrap();
            let got = placed(&t);
            assert_eq!(got.len(), 11, "{engine}");
            assert_eq!((got[&7].0, got[&7].2.as_str()), (1, want), "{engine}");
            assert_eq!(got[&20].0, 2, "{engine}");
        }
    }

    /// Two writers bootstrapped from one snapshot: the second to commit conflicts (it could put
    /// a key in two partitions); its own later commits do not.
    #[test]
    fn concurrent_cross_partition_writers_conflict() {
        let dir = tempfile::tempdir().unwrap();
        let t = cross(dir.path(), &[]);
        commit_as(&t, "u0", &write(&t, &[rows(1, 0..10)])).unwrap();
        // b's keys are new to its index, and a may have written them elsewhere
        let a = write(&t, &[rows(2, 0..3)]);
        let b = write(&t, &[rows(3, 100..103)]);
        commit_as(&t, "a", &a).unwrap();
        let e = commit_as(&t, "b", &b).unwrap_err();
        assert!(matches!(e, Error::CommitConflict { .. }), "{e}");
        let e = e.to_string();
        assert!(e.contains("cross-partition") && e.contains("db.x"), "{e}");
        let got = placed(&t);
        assert_eq!(got.len(), 10);
        assert_eq!(got[&0].0, 2);
        // a sequential writer sees a's keys
        commit_as(&t, "c", &write(&t, &[rows(3, 0..1)])).unwrap();
        assert_eq!(placed(&t)[&0].0, 3);
    }

    /// Spill directories holding a cross-partition key index file under `base`.
    fn key_index_dirs(base: &std::path::Path) -> Vec<std::path::PathBuf> {
        std::fs::read_dir(base)
            .map(|d| {
                d.map(|e| e.unwrap().path())
                    .filter(|p| p.join("index.redb").exists())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// A key index past `lookup.cache-max-memory-size` spills to a file in the writer's spill
    /// directory (at bootstrap and while routing) and routes as in memory: keys spilled at
    /// bootstrap move partitions (a -D in the old one), keys moved after a spill move again;
    /// the file is gone once the writer closes.
    #[test]
    fn cross_partition_index_spills_and_keeps_routing() {
        let dir = tempfile::tempdir().unwrap();
        let spill = tempfile::tempdir().unwrap();
        let spill_dir = spill.path().to_str().unwrap();
        let t = cross(
            dir.path(),
            &[
                ("lookup.cache-max-memory-size", "4 kb"),
                ("write-buffer-spill.dir", spill_dir),
                ("dynamic-bucket.target-row-num", "100"),
            ],
        );
        let mut w = TableWrite::new(t.clone()).unwrap();
        w.write(&rows(1, 0..400)).unwrap();
        assert_eq!(
            key_index_dirs(spill.path()).len(),
            1,
            "spilled while routing"
        );
        commit_as(&t, "u", &w.prepare_commit().unwrap()).unwrap();
        w.close();
        assert!(key_index_dirs(spill.path()).is_empty(), "removed at close");
        // a new writer: the bootstrap spills; 100..200 move to 2, then 150..160 on to 3 and
        // 0..10 to 3, after more spills
        let mut w = TableWrite::new(t.clone()).unwrap();
        w.write(&tagged(2, 100..200, "b")).unwrap();
        assert_eq!(key_index_dirs(spill.path()).len(), 1);
        w.write(&tagged(3, 150..160, "c")).unwrap();
        w.write(&tagged(3, 0..10, "d")).unwrap();
        w.write(&tagged(1, 400..450, "e")).unwrap();
        commit_as(&t, "u", &w.prepare_commit().unwrap()).unwrap();
        drop(w);
        assert!(key_index_dirs(spill.path()).is_empty(), "removed on drop");
        let got = placed(&t);
        assert_eq!(got.len(), 450);
        for (k, (p, b, v)) in &got {
            let (wp, wv) = match k {
                0..=9 => (3, format!("d{k}")),
                150..=159 => (3, format!("c{k}")),
                100..=199 => (2, format!("b{k}")),
                400.. => (1, format!("e{k}")),
                _ => (1, format!("v{k}")),
            };
            assert_eq!((*p, v.as_str()), (wp, wv.as_str()), "key {k} (bucket {b})");
        }
        // a writer closed is refused, never silently empty
        let mut w = TableWrite::new(t.clone()).unwrap();
        w.write(&rows(1, 0..1)).unwrap();
        w.close();
        let e = w.write(&rows(1, 1..2)).unwrap_err().to_string();
        assert!(e.contains("closed") && e.contains("db.x"), "{e}");
    }

    /// Java refuses `sequence.field` with cross-partition update.
    #[test]
    fn cross_partition_refusals() {
        let dir = tempfile::tempdir().unwrap();
        let e = create_cross(dir.path(), "y", &[("sequence.field", "p")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("sequence.field in cross partition"), "{e}");
    }
}
