//! The local lookup files of data files and their caches (Java's `LookupFile` with its
//! Caffeine caches): one file per data file of level ≥ 1, built on first need, a bloom filter
//! of its keys kept in memory, the loaded files in an LRU bounded by
//! `lookup.cache-max-memory-size`, the files on disk in an LRU bounded by
//! `lookup.cache-max-disk-size` (eviction deletes the file, its bloom filter and its loaded
//! copy), and files unused for `lookup.cache-file-retention` removed at the next access.
//!
//! One cache serves every bucket of a table, and outlives the writer ([`shared`]): Java's is
//! shared by a write task's buckets for the task's life (a Flink job's), while a Python user
//! typically opens a writer per commit, and rebuilding each bucket's lookup files at every
//! commit cost most of a lookup commit (the bench in benches/RESULTS.md). Entries are keyed by
//! data file name, unique within a table (a UUID each); data files never change, and deletion
//! vectors are applied at lookup time, so an entry stays right as long as its file lives.
//!
//! A lookup file is built in memory and written to local disk only when the memory LRU pushes
//! it out (Java writes every lookup file to disk first): within `lookup.cache-max-memory-size`
//! a lookup costs no disk I/O and no compression.

use std::collections::HashMap;
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use arrow_array::ArrayRef;
use arrow_array::RecordBatch;
use arrow_ipc::reader::FileReader;
use arrow_ipc::writer::{FileWriter, IpcWriteOptions};
use arrow_ipc::CompressionType;
use arrow_row::RowConverter;

use crate::error::{Error, Result};
use crate::kv::KvFileReader;
use crate::options::{parse_bool, parse_duration_ms, parse_memory_size, CoreOptions};
use crate::sort::gather::prefetch;
use crate::sort::spill_dir::SpillDir;
use crate::spec::manifest::DataFileMeta;

/// `lookup.local-file-type`: how a loaded lookup file finds a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LocalFileType {
    /// Java's default: a hash index (here an open-addressing table of row numbers over the
    /// file's row-encoded keys, built when the file is loaded, filled up to
    /// `lookup.hash-load-factor`): about one probe per key.
    Hash,
    /// Binary search over the file's sorted row-encoded keys; a batch of sorted keys searches
    /// each from where the previous one was found.
    Sort,
}

/// The `lookup.*` options a lookup store honours (paimon-behaviour.md §13, Java's
/// `CoreOptions`), parsed and validated.
#[derive(Debug, Clone, PartialEq)]
pub struct LookupOptions {
    pub file_type: LocalFileType,
    /// `lookup.hash-load-factor` (Java default 0.75): how full a hash index is.
    pub hash_load_factor: f64,
    /// `lookup.cache-max-memory-size` (Java default 256 mb).
    pub max_memory: u64,
    /// `lookup.cache-max-disk-size` (Java default unlimited).
    pub max_disk: u64,
    /// `lookup.cache-file-retention` (Java default 1 h).
    pub retention: Duration,
    /// `lookup.cache.bloom.filter.enabled` (true) with `lookup.cache.bloom.filter.fpp` (0.05).
    pub bloom_fpp: Option<f64>,
    /// `lookup.cache-spill-compression` (zstd, lz4 or none; Java default zstd).
    pub compression: Option<CompressionType>,
    /// Where the lookup directory is made: the spill base directory (`write-buffer-spill.dir`,
    /// `$PAIMON_RS_TMP_DIR` or the system temp dir).
    pub base_dir: PathBuf,
}

impl LookupOptions {
    pub fn from_options(o: &CoreOptions) -> Result<Self> {
        let get = |k: &str| o.raw.get(k).map(|v| v.trim());
        let hash_load_factor = match get("lookup.hash-load-factor") {
            None => 0.75,
            Some(v) => match v.parse::<f64>() {
                Ok(f) if f > 0.0 && f < 1.0 => f,
                _ => {
                    return Err(Error::invalid(format!(
                        "option 'lookup.hash-load-factor' = '{v}': expected a number between 0 \
                         and 1"
                    )))
                }
            },
        };
        let file_type = match get("lookup.local-file-type").map(str::to_ascii_lowercase) {
            None => LocalFileType::Hash,
            Some(v) if v == "hash" => LocalFileType::Hash,
            Some(v) if v == "sort" => LocalFileType::Sort,
            Some(v) => {
                return Err(Error::invalid(format!(
                    "Could not parse value '{v}' for key 'lookup.local-file-type'. (expected \
                     hash or sort)"
                )))
            }
        };
        let size = |k: &str, default: u64| -> Result<u64> {
            get(k).map_or(Ok(default), |v| parse_memory_size(k, v))
        };
        let bloom = match get("lookup.cache.bloom.filter.enabled") {
            Some(v) => parse_bool("lookup.cache.bloom.filter.enabled", v)?,
            None => true,
        };
        let fpp = match get("lookup.cache.bloom.filter.fpp") {
            None => 0.05,
            Some(v) => match v.parse::<f64>() {
                Ok(f) if f > 0.0 && f < 1.0 => f,
                _ => {
                    return Err(Error::invalid(format!(
                        "option 'lookup.cache.bloom.filter.fpp' = '{v}': expected a \
                         probability between 0 and 1"
                    )))
                }
            },
        };
        let compression = match get("lookup.cache-spill-compression").map(str::to_ascii_lowercase) {
            None => Some(CompressionType::ZSTD),
            Some(v) if v == "zstd" => Some(CompressionType::ZSTD),
            Some(v) if v == "lz4" => Some(CompressionType::LZ4_FRAME),
            Some(v) if v == "none" => None,
            Some(v) => {
                return Err(Error::unsupported(format!(
                    "option 'lookup.cache-spill-compression' = '{v}': paimon_rs compresses \
                     lookup files with zstd, lz4 or none"
                )))
            }
        };
        let retention = match get("lookup.cache-file-retention") {
            Some(v) => parse_duration_ms("lookup.cache-file-retention", v)?,
            None => 3_600_000,
        };
        Ok(LookupOptions {
            file_type,
            hash_load_factor,
            max_memory: size("lookup.cache-max-memory-size", 256 << 20)?,
            max_disk: size("lookup.cache-max-disk-size", u64::MAX)?,
            retention: Duration::from_millis(retention),
            bloom_fpp: bloom.then_some(fpp),
            compression,
            base_dir: o.tmp_dir.clone(),
        })
    }
}

/// A lookup file in memory: the data file's rows (key-value layout, file order, so a row's
/// index is its position in the data file) and the index over their keys. The keys are not
/// held row-encoded (that copy cost 17 of the ~80 bytes a row of the bench table took, and
/// pushed the lookup files of a 3M-row table out of the default 256 MB): probes compare with
/// the batch's own key columns, and the encoding is made chunk by chunk only to hash the keys
/// (and fill the bloom filter) while the index is built.
pub struct Loaded {
    pub batch: RecordBatch,
    /// The batch's key columns.
    keys: Vec<ArrayRef>,
    /// The hash index: slots of `row + 1` (0 = empty), a power of two many, linear probing.
    hash: Option<Vec<u32>>,
    bytes: usize,
}

fn hash_of(key: &[u8]) -> u64 {
    use std::hash::{BuildHasher, BuildHasherDefault};
    BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default().hash_one(key)
}

/// A split-block bloom filter (Parquet's layout: 256-bit blocks of eight 32-bit words, a key
/// sets one bit per word) fed the 64-bit hash the hash index uses ([`hash_of`]), so a key
/// is hashed once for both: the high half picks the block, the low half the bits. Not the
/// parquet crate's `Sbbf`: it hashes every value again with xxhash, and its methods taking a
/// hash are private.
pub struct Bloom {
    blocks: Vec<[u32; 8]>,
}

/// The eight odd multipliers of Parquet's split-block bloom filter.
const SALT: [u32; 8] = [
    0x47b6_137b,
    0x4497_4d91,
    0x8824_ad5b,
    0xa2b7_289d,
    0x7054_95c7,
    0x2df1_424b,
    0x9efc_4947,
    0x5c6b_fb31,
];

impl Bloom {
    /// Sized for `ndv` keys at false-positive rate `fpp` (Parquet's sizing: `-8 ndv /
    /// ln(1 - fpp^(1/8))` bits, a power of two of bytes between 32 bytes and 128 MB).
    fn new(ndv: usize, fpp: f64) -> Self {
        let bits = -8.0 * ndv.max(1) as f64 / (1.0 - fpp.powf(1.0 / 8.0)).ln();
        let bytes = ((bits / 8.0).ceil() as usize).clamp(32, 128 << 20);
        Bloom {
            blocks: vec![[0u32; 8]; bytes.next_power_of_two() / 32],
        }
    }

    fn block(&self, hash: u64) -> usize {
        (((hash >> 32) * self.blocks.len() as u64) >> 32) as usize
    }

    fn insert(&mut self, hash: u64) {
        let b = self.block(hash);
        for (w, salt) in self.blocks[b].iter_mut().zip(SALT) {
            *w |= 1 << ((hash as u32).wrapping_mul(salt) >> 27);
        }
    }

    /// Hint the cache to load the block of `hash` (inserts and checks are misses to memory
    /// once the filter outgrows the cache: prefetched a few keys ahead, they overlap).
    fn prefetch(&self, hash: u64) {
        prefetch(self.blocks.as_ptr().wrapping_add(self.block(hash)));
    }

    fn check(&self, hash: u64) -> bool {
        let b = &self.blocks[self.block(hash)];
        b.iter()
            .zip(SALT)
            .all(|(w, salt)| w & (1 << ((hash as u32).wrapping_mul(salt) >> 27)) != 0)
    }

    fn bytes(&self) -> usize {
        self.blocks.len() * 32
    }
}

/// Rows encoded at a time while a lookup file's index and bloom filter are built.
const ENCODE_CHUNK_ROWS: usize = 64 * 1024;

/// How many keys ahead of the one inserted or probed the hash slot and bloom block are
/// prefetched: the index and the filter of a large file are random accesses to memory (three
/// quarters of the index build's time went waiting for them).
const AHEAD: usize = 16;

/// Probes of one file: their row-encoded keys (ascending) and, for comparisons with the file's
/// key columns, those keys decoded (`cols`, the probe `i` at row `at[i]`).
pub struct Probes<'a> {
    pub encoded: &'a [&'a [u8]],
    pub cols: &'a [ArrayRef],
    pub at: &'a [usize],
}

impl Loaded {
    /// `batch` indexed by its first `num_keys` columns (encoded with `conv`); each key is
    /// also put into `bloom`.
    fn new(
        batch: RecordBatch,
        conv: &RowConverter,
        num_keys: usize,
        opts: &LookupOptions,
        mut bloom: Option<&mut Bloom>,
    ) -> Result<Self> {
        let keys: Vec<ArrayRef> = batch.columns()[..num_keys].to_vec();
        let n = batch.num_rows();
        let hashed = opts.file_type == LocalFileType::Hash;
        let mut table = if hashed {
            let slots =
                ((n as f64 / opts.hash_load_factor).ceil() as usize + 1).next_power_of_two();
            vec![0u32; slots]
        } else {
            vec![]
        };
        if hashed || bloom.is_some() {
            let mask = table.len().wrapping_sub(1);
            let mut at = 0;
            while at < n {
                let len = ENCODE_CHUNK_ROWS.min(n - at);
                let cols: Vec<ArrayRef> = keys.iter().map(|c| c.slice(at, len)).collect();
                let rows = conv.convert_columns(&cols)?;
                let hashes: Vec<u64> = rows.iter().map(|r| hash_of(r.as_ref())).collect();
                for (i, &h) in hashes.iter().enumerate() {
                    if let Some(&next) = hashes.get(i + AHEAD) {
                        if let Some(b) = bloom.as_deref() {
                            b.prefetch(next);
                        }
                        if hashed {
                            prefetch(table.as_ptr().wrapping_add(next as usize & mask));
                        }
                    }
                    if let Some(b) = bloom.as_deref_mut() {
                        b.insert(h);
                    }
                    if hashed {
                        let mut s = h as usize & mask;
                        while table[s] != 0 {
                            s = (s + 1) & mask;
                        }
                        table[s] = (at + i) as u32 + 1;
                    }
                }
                at += len;
            }
        }
        let hash = hashed.then_some(table);
        let index_bytes = hash.as_ref().map_or(0, |h| h.len() * 4);
        let bytes = batch.get_array_memory_size() + index_bytes;
        Ok(Loaded {
            batch,
            keys,
            hash,
            bytes,
        })
    }

    /// Positions of `probes` in this file.
    fn find(&self, probes: &Probes<'_>, hashes: &[u64]) -> Result<Vec<Option<u32>>> {
        let opts = arrow_schema::SortOptions::default();
        // probe key (row `at[i]` of `cols`) against the file's row `r`, in the order of the
        // row encoding (arrow-row sorts as arrow-ord compares: numbers by value, floats by
        // total order, strings and binaries by bytes)
        let cmps = probes
            .cols
            .iter()
            .zip(&self.keys)
            .map(|(p, k)| arrow_ord::ord::make_comparator(p.as_ref(), k.as_ref(), opts))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        let cmp = |i: usize, r: usize| -> std::cmp::Ordering {
            for c in &cmps {
                match c(probes.at[i], r) {
                    std::cmp::Ordering::Equal => {}
                    o => return o,
                }
            }
            std::cmp::Ordering::Equal
        };
        if let Some(table) = &self.hash {
            let mask = table.len() - 1;
            return Ok(hashes
                .iter()
                .enumerate()
                .map(|(i, h)| {
                    if let Some(&next) = hashes.get(i + AHEAD) {
                        prefetch(table.as_ptr().wrapping_add(next as usize & mask));
                    }
                    let mut s = *h as usize & mask;
                    loop {
                        match table[s] {
                            0 => return None,
                            r if cmp(i, r as usize - 1).is_eq() => return Some(r - 1),
                            _ => s = (s + 1) & mask,
                        }
                    }
                })
                .collect());
        }
        let n = self.batch.num_rows();
        let mut lo = 0;
        Ok((0..probes.encoded.len())
            .map(|i| {
                // sorted probes: search only past the previous one
                let (mut a, mut b) = (lo, n);
                while a < b {
                    let m = (a + b) / 2;
                    if cmp(i, m).is_gt() {
                        a = m + 1;
                    } else {
                        b = m;
                    }
                }
                lo = a;
                (a < n && cmp(i, a).is_eq()).then_some(a as u32)
            })
            .collect())
    }
}

/// A probe's answer: the loaded file (None: no probe can be in it) and each probe's row.
pub type Probed = (Option<Arc<Loaded>>, Vec<Option<u32>>);

struct Entry {
    /// The lookup file on local disk, once the memory LRU spilled it.
    path: Option<PathBuf>,
    disk: u64,
    bloom: Option<Bloom>,
    loaded: Option<Arc<Loaded>>,
    used: u64,
    at: Instant,
}

/// What a cache did, for tests and logs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Lookup files built from data files.
    pub built: u64,
    /// Lookup files read back from local disk into memory.
    pub loaded: u64,
    /// Lookup files written to local disk when the memory LRU pushed them out.
    pub spilled: u64,
    /// Probes of files answered "absent" by the bloom filter alone.
    pub bloom_skips: u64,
    /// Lookup files deleted by the disk LRU or retention.
    pub evicted: u64,
    /// Lookup files built from the rows a compaction had just written (no data file read).
    pub seeded: u64,
    pub memory_bytes: u64,
    pub disk_bytes: u64,
    pub files: u64,
}

struct State {
    entries: HashMap<String, Entry>,
    /// Rows a compaction just wrote into these data files (key-value layout, file order),
    /// oldest first, waiting for the first probe to index them ([`LookupCache::seed`]).
    seeds: Vec<(String, RecordBatch)>,
    seed_bytes: usize,
    tick: u64,
    stats: CacheStats,
    /// The last probe (caches idle for longer than the retention leave the registry).
    last_used: Instant,
}

impl Default for State {
    fn default() -> Self {
        State {
            entries: HashMap::new(),
            seeds: Vec::new(),
            seed_bytes: 0,
            tick: 0,
            stats: CacheStats::default(),
            last_used: Instant::now(),
        }
    }
}

/// The lookup files of a table write, in a local directory removed when the cache is dropped.
pub struct LookupCache {
    opts: LookupOptions,
    dir: Mutex<Option<SpillDir>>,
    state: Mutex<State>,
}

impl std::fmt::Debug for LookupCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LookupCache")
            .field("opts", &self.opts)
            .finish()
    }
}

fn poisoned<T>(_: std::sync::PoisonError<T>) -> Error {
    Error::Internal("lookup cache lock poisoned".into())
}

impl LookupCache {
    pub fn new(opts: LookupOptions) -> Self {
        LookupCache {
            opts,
            dir: Mutex::new(None),
            state: Mutex::new(State::default()),
        }
    }

    /// `lookup.cache-max-memory-size`, in bytes.
    pub fn max_memory(&self) -> u64 {
        self.opts.max_memory
    }

    pub fn stats(&self) -> CacheStats {
        self.state.lock().map(|s| s.stats).unwrap_or_default()
    }

    /// The local directory (made on first use; swept like a spill directory if the process
    /// is killed).
    pub fn dir(&self) -> Result<PathBuf> {
        let mut d = self.dir.lock().map_err(poisoned)?;
        if d.is_none() {
            *d = Some(SpillDir::create(&self.opts.base_dir)?);
        }
        d.as_ref()
            .map(|d| d.path().to_path_buf())
            .ok_or_else(|| Error::Internal("lookup dir".into()))
    }

    /// Positions in data file `meta` (of bucket directory `dir`) of `probes` (row-encoded keys
    /// of `conv`, ascending), building the lookup file on first need, asking the bloom filter
    /// first and loading the file only if a probe may be in it. Returns the loaded file (None:
    /// no probe can be in it) and one answer per probe.
    pub fn probe(
        &self,
        reader: &KvFileReader,
        dir: &Path,
        meta: &DataFileMeta,
        conv: &RowConverter,
        probes: &Probes<'_>,
    ) -> Result<Probed> {
        let name = &meta.file_name;
        // built outside the lock: the buckets of a commit compact in parallel
        let cached = self
            .state
            .lock()
            .map_err(poisoned)?
            .entries
            .contains_key(name);
        let built = if cached {
            None
        } else {
            Some(self.build(reader, dir, meta, conv)?)
        };
        let mut st = self.state.lock().map_err(poisoned)?;
        st.tick += 1;
        st.last_used = Instant::now();
        let tick = st.tick;
        self.expire(&mut st, name);
        if let Some(e) = built {
            st.stats.built += 1;
            st.entries.entry(name.clone()).or_insert(e);
        } else if !st.entries.contains_key(name) {
            // evicted by another bucket's probe since it was seen
            let e = self.build(reader, dir, meta, conv)?;
            st.stats.built += 1;
            st.entries.insert(name.clone(), e);
        }
        let e = st
            .entries
            .get_mut(name)
            .ok_or_else(|| Error::Internal("lookup entry".into()))?;
        e.used = tick;
        e.at = Instant::now();
        // hashed once for the bloom filter and the hash index
        let hashes: Vec<u64> = if e.bloom.is_some() || self.opts.file_type == LocalFileType::Hash {
            probes.encoded.iter().map(|k| hash_of(k)).collect()
        } else {
            vec![]
        };
        let maybe: Vec<bool> = match &e.bloom {
            Some(b) => hashes
                .iter()
                .enumerate()
                .map(|(i, h)| {
                    if let Some(&next) = hashes.get(i + AHEAD) {
                        b.prefetch(next);
                    }
                    b.check(*h)
                })
                .collect(),
            None => vec![true; probes.encoded.len()],
        };
        let skipped = maybe.iter().filter(|m| !**m).count() as u64;
        st.stats.bloom_skips += skipped;
        if skipped == probes.encoded.len() as u64 {
            return Ok((None, vec![None; probes.encoded.len()]));
        }
        let loaded = match st.entries.get(name).and_then(|e| e.loaded.clone()) {
            Some(l) => l,
            None => {
                let path = st
                    .entries
                    .get(name)
                    .and_then(|e| e.path.clone())
                    .ok_or_else(|| Error::Internal(format!("lookup file of {name} lost")))?;
                let l = Arc::new(self.load(&path, conv, reader.layout().num_keys)?);
                st.stats.loaded += 1;
                if let Some(e) = st.entries.get_mut(name) {
                    e.loaded = Some(l.clone());
                }
                l
            }
        };
        let found = loaded.find(probes, &hashes)?;
        let answers = found
            .into_iter()
            .zip(maybe)
            .map(|(f, m)| if m { f } else { None })
            .collect();
        self.evict(&mut st, name);
        Ok((Some(loaded), answers))
    }

    /// The rows `batches` (key-value layout of `reader`, in order) that a compaction has just
    /// written into `files` (at a level ≥ 1, in the order the rolling writer made them): kept
    /// for each file's first probe, which indexes them instead of decoding the data file
    /// again. Kept only within `lookup.cache-max-memory-size` beside the loaded files (oldest
    /// seeds go first; a seed that does not fit is dropped: its file is read when probed).
    /// Nothing is kept if the rows do not add up to the files' row counts or their schema is
    /// not the reader's.
    pub fn seed(&self, reader: &KvFileReader, files: &[DataFileMeta], batches: &[RecordBatch]) {
        let schema = reader.schema();
        let types_match = |b: &RecordBatch| {
            b.num_columns() == schema.fields().len()
                && b.schema()
                    .fields()
                    .iter()
                    .zip(schema.fields())
                    .all(|(a, f)| a.data_type() == f.data_type())
        };
        let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
        let counted: i64 = files.iter().map(|f| f.row_count).sum();
        if files.is_empty() || rows as i64 != counted || !batches.iter().all(types_match) {
            return;
        }
        let Ok(mut st) = self.state.lock() else {
            return;
        };
        Self::account(&mut st);
        let room = (self.opts.max_memory as usize).saturating_sub(st.stats.memory_bytes as usize);
        let (mut bi, mut off) = (0usize, 0usize);
        for f in files {
            // this file's rows: the next `row_count` rows of the batches
            let mut want = f.row_count as usize;
            let mut parts = vec![];
            while want > 0 && bi < batches.len() {
                let b = &batches[bi];
                let take = want.min(b.num_rows() - off);
                parts.push(b.slice(off, take));
                want -= take;
                off += take;
                if off == b.num_rows() {
                    bi += 1;
                    off = 0;
                }
            }
            let Ok(batch) = arrow_select::concat::concat_batches(&schema, &parts) else {
                return;
            };
            let bytes = batch.get_array_memory_size();
            if bytes > room {
                continue;
            }
            while st.seed_bytes + bytes > room && !st.seeds.is_empty() {
                let (_, old) = st.seeds.remove(0);
                st.seed_bytes -= old.get_array_memory_size();
            }
            st.seed_bytes += bytes;
            st.seeds.push((f.file_name.clone(), batch));
        }
    }

    /// The seeded rows of data file `name`, taken out.
    fn take_seed(st: &mut State, name: &str) -> Option<RecordBatch> {
        let i = st.seeds.iter().position(|(n, _)| n == name)?;
        let (_, b) = st.seeds.remove(i);
        st.seed_bytes -= b.get_array_memory_size();
        Some(b)
    }

    /// Drop the lookup files of these data files (they left the levels).
    pub fn forget<'a>(&self, names: impl IntoIterator<Item = &'a str>) {
        if let Ok(mut st) = self.state.lock() {
            for n in names {
                if let Some(e) = st.entries.remove(n) {
                    remove(&e);
                }
                Self::take_seed(&mut st, n);
            }
            Self::account(&mut st);
        }
    }

    fn build(
        &self,
        reader: &KvFileReader,
        dir: &Path,
        meta: &DataFileMeta,
        conv: &RowConverter,
    ) -> Result<Entry> {
        let seeded = {
            let mut st = self.state.lock().map_err(poisoned)?;
            let b = Self::take_seed(&mut st, &meta.file_name);
            st.stats.seeded += b.is_some() as u64;
            b
        };
        let batch = match seeded {
            Some(b) => b,
            None => {
                let no_dvs = Default::default();
                let batches = reader
                    .read_run(dir, std::slice::from_ref(meta), &no_dvs)
                    .collect::<Result<Vec<_>>>()?;
                arrow_select::concat::concat_batches(&reader.schema(), &batches)?
            }
        };
        let num_keys = reader.layout().num_keys;
        let mut bloom = self
            .opts
            .bloom_fpp
            .map(|fpp| Bloom::new(batch.num_rows(), fpp));
        let loaded = Loaded::new(batch, conv, num_keys, &self.opts, bloom.as_mut())?;
        Ok(Entry {
            path: None,
            disk: 0,
            bloom,
            loaded: Some(Arc::new(loaded)),
            used: 0,
            at: Instant::now(),
        })
    }

    /// Write a loaded lookup file to local disk (Arrow IPC, `lookup.cache-spill-compression`);
    /// returns its path and size.
    fn spill(&self, name: &str, loaded: &Loaded) -> Result<(PathBuf, u64)> {
        let path = self.dir()?.join(format!("{name}.lookup.arrow"));
        let ctx = |e| Error::Arrow {
            context: Some(format!("lookup file {}", path.display())),
            source: e,
        };
        let opts = IpcWriteOptions::default()
            .try_with_compression(self.opts.compression)
            .map_err(ctx)?;
        let f = File::create(&path).map_err(|e| Error::io(&path, e))?;
        let mut w =
            FileWriter::try_new_with_options(BufWriter::new(f), &loaded.batch.schema(), opts)
                .map_err(ctx)?;
        w.write(&loaded.batch).map_err(ctx)?;
        w.finish().map_err(ctx)?;
        drop(w);
        let disk = std::fs::metadata(&path)
            .map_err(|e| Error::io(&path, e))?
            .len();
        Ok((path, disk))
    }

    fn load(&self, path: &Path, conv: &RowConverter, num_keys: usize) -> Result<Loaded> {
        let f = File::open(path).map_err(|e| Error::io(path, e))?;
        let r = FileReader::try_new(f, None)
            .map_err(|e| Error::corrupt(path, format!("lookup file: {e}")))?;
        let schema = r.schema();
        let batches = r
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| Error::corrupt(path, format!("lookup file: {e}")))?;
        // concatenated: one batch, detached from the IPC blocks it was decoded from
        let batch = arrow_select::concat::concat_batches(&schema, &batches)?;
        Loaded::new(batch, conv, num_keys, &self.opts, None)
    }

    /// Remove entries unused for longer than the retention (never `keep`).
    fn expire(&self, st: &mut State, keep: &str) {
        let old: Vec<String> = st
            .entries
            .iter()
            .filter(|(n, e)| n.as_str() != keep && e.at.elapsed() > self.opts.retention)
            .map(|(n, _)| n.clone())
            .collect();
        for n in old {
            if let Some(e) = st.entries.remove(&n) {
                remove(&e);
                st.stats.evicted += 1;
            }
        }
    }

    /// Within the limits: least recently used loaded files leave memory (written to disk
    /// first if they are not there yet), least recently used files leave the disk (with their
    /// bloom filters). `keep` (in use) stays.
    fn evict(&self, st: &mut State, keep: &str) {
        Self::account(st);
        // rows seeded by compactions count against the memory limit too, and go first
        while st.stats.memory_bytes as usize + st.seed_bytes > self.opts.max_memory as usize
            && !st.seeds.is_empty()
        {
            let (_, old) = st.seeds.remove(0);
            st.seed_bytes -= old.get_array_memory_size();
        }
        while st.stats.memory_bytes > self.opts.max_memory {
            let victim = st
                .entries
                .iter()
                .filter(|(n, e)| n.as_str() != keep && e.loaded.is_some())
                .min_by_key(|(_, e)| e.used)
                .map(|(n, _)| n.clone());
            let Some(v) = victim else { break };
            let Some(e) = st.entries.get_mut(&v) else {
                break;
            };
            if let (None, Some(l)) = (&e.path, e.loaded.take()) {
                match self.spill(&v, &l) {
                    Ok((path, disk)) => {
                        e.path = Some(path);
                        e.disk = disk;
                        st.stats.spilled += 1;
                    }
                    Err(err) => {
                        // a cache: the entry goes, and is rebuilt from its data file if needed
                        log::warn!(target: "paimon_rs.lookup", "lookup file of {v} not spilled: {err}");
                        st.entries.remove(&v);
                        st.stats.evicted += 1;
                    }
                }
            }
            Self::account(st);
        }
        while st.stats.disk_bytes > self.opts.max_disk {
            let victim = st
                .entries
                .iter()
                .filter(|(n, e)| n.as_str() != keep && e.path.is_some())
                .min_by_key(|(_, e)| e.used)
                .map(|(n, _)| n.clone());
            let Some(v) = victim else { break };
            if let Some(e) = st.entries.remove(&v) {
                remove(&e);
                st.stats.evicted += 1;
            }
            Self::account(st);
        }
    }

    /// When this cache was last probed.
    fn idle(&self) -> Duration {
        self.state
            .lock()
            .map(|s| s.last_used.elapsed())
            .unwrap_or_default()
    }

    /// Memory and local disk this cache holds, in bytes.
    fn held_bytes(&self) -> u64 {
        self.state.lock().map_or(0, |mut s| {
            Self::account(&mut s);
            s.stats.memory_bytes + s.stats.disk_bytes + s.seed_bytes as u64
        })
    }

    fn account(st: &mut State) {
        let (mut mem, mut disk) = (0u64, 0u64);
        for e in st.entries.values() {
            disk += e.disk;
            mem += e.loaded.as_ref().map_or(0, |l| l.bytes as u64)
                + e.bloom.as_ref().map_or(0, |b| b.bytes() as u64);
        }
        st.stats.memory_bytes = mem;
        st.stats.disk_bytes = disk;
        st.stats.files = st.entries.len() as u64;
    }
}

/// Delete an entry's lookup file, if it has one on disk.
fn remove(e: &Entry) {
    if let Some(p) = &e.path {
        let _ = std::fs::remove_file(p);
    }
}

/// A cache of the process-wide registry, with what it serves.
struct Registered {
    /// The table's directory.
    table: String,
    /// The table's directory, schema and options: what the lookup files' rows depend on.
    key: String,
    cache: Arc<LookupCache>,
}

static SHARED: Mutex<Vec<Registered>> = Mutex::new(Vec::new());

fn in_use(r: &Registered) -> bool {
    Arc::strong_count(&r.cache) > 1
}

/// The lookup cache of the table at `table` whose schema and options are `fingerprint`,
/// shared by the writers of this process and kept between them: the lookup files of a
/// table's unchanged levels are built once, not once per commit. A cache no writer holds
/// leaves the registry when idle for longer than `lookup.cache-file-retention` (Java's
/// retention of an unused lookup file), or when the table's schema or lookup options change
/// (its rows would no longer be the table's); [`release_shared`] empties the registry.
pub fn shared(table: &str, fingerprint: &str, opts: LookupOptions) -> Arc<LookupCache> {
    let key = format!("{table}\u{0}{fingerprint}\u{0}{opts:?}");
    let Ok(mut reg) = SHARED.lock() else {
        // a panicked writer poisoned the registry: serve this write with a cache of its own
        return Arc::new(LookupCache::new(opts));
    };
    reg.retain(|r| in_use(r) || r.cache.idle() <= r.cache.opts.retention);
    if let Some(r) = reg.iter().find(|r| r.key == key) {
        return r.cache.clone();
    }
    reg.retain(|r| r.table != table || in_use(r));
    let cache = Arc::new(LookupCache::new(opts));
    reg.push(Registered {
        table: table.to_string(),
        key,
        cache: cache.clone(),
    });
    cache
}

/// Drop the shared lookup caches no writer holds (their memory and local files); returns
/// the bytes they held.
pub fn release_shared() -> u64 {
    let Ok(mut reg) = SHARED.lock() else {
        return 0;
    };
    let mut freed = 0;
    reg.retain(|r| {
        if in_use(r) {
            return true;
        }
        freed += r.cache.held_bytes();
        false
    });
    freed
}

/// The statistics of the shared cache of the table at `table`, if it has one.
pub fn shared_stats(table: &str) -> Option<CacheStats> {
    let reg = SHARED.lock().ok()?;
    reg.iter()
        .rev()
        .find(|r| r.table == table)
        .map(|r| r.cache.stats())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bloom filter fed the index's hash: no key put in is ever answered "absent", and
    /// keys never put in are "maybe" at about the false-positive rate it was sized for.
    #[test]
    fn the_bloom_filter_has_no_false_negatives_and_about_its_false_positive_rate() {
        let n = 100_000u64;
        let mut b = Bloom::new(n as usize, 0.05);
        for k in 0..n {
            b.insert(hash_of(&k.to_be_bytes()));
        }
        assert!((0..n).all(|k| b.check(hash_of(&k.to_be_bytes()))));
        let fp = (n..2 * n)
            .filter(|k| b.check(hash_of(&k.to_be_bytes())))
            .count() as f64
            / n as f64;
        assert!(fp > 0.0 && fp < 0.08, "false-positive rate {fp}");
        // a tiny filter is one block
        assert_eq!(Bloom::new(0, 0.05).bytes(), 32);
    }

    /// Rows seeded by compactions count against `lookup.cache-max-memory-size`: the oldest
    /// go when the limit is passed.
    #[test]
    fn seeded_rows_leave_first_when_memory_is_over_the_limit() {
        let raw = [(
            "lookup.cache-max-memory-size".to_string(),
            "1 kb".to_string(),
        )];
        let o = CoreOptions::new(&raw.into_iter().collect(), true).unwrap();
        let c = LookupCache::new(LookupOptions::from_options(&o).unwrap());
        let batch = |n: i64| {
            let a: ArrayRef = Arc::new(arrow_array::Int64Array::from_iter_values(0..n));
            RecordBatch::try_from_iter([("k", a)]).unwrap()
        };
        let mut st = c.state.lock().unwrap();
        for (name, n) in [("a", 100), ("b", 10)] {
            let b = batch(n);
            st.seed_bytes += b.get_array_memory_size();
            st.seeds.push((name.to_string(), b));
        }
        assert!(st.seed_bytes > 1024);
        c.evict(&mut st, "");
        let left: Vec<&str> = st.seeds.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(left, ["b"]);
        assert!(st.seed_bytes <= 1024);
    }
}
