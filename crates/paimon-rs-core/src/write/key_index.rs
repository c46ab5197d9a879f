//! The key store of a cross-partition writer (write/cross_partition.rs, paimon-behaviour.md
//! §1.8): encoded primary key -> (partition id, bucket), held in memory up to a budget, then
//! spilled to a local file (Java keeps the same map in RocksDB under the writer's temp dir:
//! `GlobalIndexAssigner` over `RocksDBValueState`, bulk-loaded by `IndexBootstrap`).
//!
//! * **Budget**: `lookup.cache-max-memory-size` (Java's option for the same store, default
//!   256 mb), counted as the encoded key plus [`ENTRY_OVERHEAD`] bytes per key in memory.
//!   Three quarters of it hold the in-memory map; a quarter (at least 1 MiB) is the page cache
//!   of the spill file.
//! * **Spill**: when the map passes its share, all its entries are written (sorted by key, in
//!   one transaction) into a [`redb`] B-tree file and the map is cleared; the map then holds
//!   the keys written since, and shadows the file (a lookup asks the map first). Spills are
//!   logged under `paimon_rs.write`.
//! * **Where**: `index.redb` in a spill directory of the writer (`sort/spill_dir.rs`: in
//!   `write-buffer-spill.dir`, `$PAIMON_RS_TMP_DIR` or the system temp dir, the place every
//!   spill and lookup file of the engine goes; locked by its owner, removed when the store is
//!   dropped, swept by the next writer when its owner was killed).
//! * **Bootstrap**: keys loaded with [`KeyIndex::load`] must not be seen twice at two places
//!   (a key in two buckets or partitions of the table): checked in the map, at each spill
//!   against the file, and by [`KeyIndex::end_load`] for the keys still in memory.
//!
//! Why `redb` (2.6: the newest line within the workspace's rust-version) rather than the
//! engine's lookup store (lookup/: immutable Arrow IPC files + bloom filters, one per data file)
//! or RocksDB: the key index is a mutable map (a key moves partitions, new keys arrive), which
//! the lookup store's write-once files would need an LSM (runs, merges, tombstones) on top of to
//! serve; RocksDB is a C++ build of many minutes on this project's 2-core machines. redb is pure
//! Rust with no dependencies (about 10 s to build), a copy-on-write B-tree with its own page
//! cache: a lookup past the map is one tree descent, mostly in cached pages.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use redb::{ReadOnlyTable, TableDefinition};

use crate::error::{Error, Result};
use crate::sort::spill_dir::SpillDir;

/// (partition id, bucket) of a key.
pub(crate) type Place = (u32, i32);

const TABLE: TableDefinition<&[u8], (u32, i32)> = TableDefinition::new("keys");
const FILE_NAME: &str = "index.redb";

/// Bytes a key takes in memory beside its encoding: the boxed slice (16), the value (8) and
/// the hash table's slot and spare capacity.
pub(crate) const ENTRY_OVERHEAD: usize = 40;

/// The spill file and its open read view.
struct Spilled {
    /// A read view of the last spill (None right after a spill, until the next lookup).
    view: Option<ReadOnlyTable<&'static [u8], (u32, i32)>>,
    /// Declared (so dropped) after `view` and before `dir`: the database closes before its
    /// directory is removed.
    db: redb::Database,
    keys: u64,
    spills: u64,
    dir: SpillDir,
}

impl Spilled {
    fn file(&self) -> PathBuf {
        self.dir.path().join(FILE_NAME)
    }
}

/// The key store (see the module doc).
pub(crate) struct KeyIndex {
    table: String,
    map: HashMap<Box<[u8]>, Place>,
    map_bytes: usize,
    map_budget: usize,
    cache_bytes: usize,
    base_dir: PathBuf,
    disk: Option<Spilled>,
    /// Inside `load`..`end_load`: a key at two places is an error.
    loading: bool,
}

fn duplicate(table: &str) -> Error {
    Error::invalid(
        "a primary key is in two buckets or partitions of the table: was it written by two \
         writers at once? (cross-partition upsert allows one writer)",
    )
    .with_table(table)
}

impl KeyIndex {
    /// A store of `budget` bytes spilling under `base_dir`.
    pub fn new(table: &str, budget: u64, base_dir: &Path) -> Self {
        let budget = usize::try_from(budget).unwrap_or(usize::MAX);
        KeyIndex {
            table: table.to_string(),
            map: HashMap::new(),
            map_bytes: 0,
            map_budget: budget / 4 * 3,
            cache_bytes: (budget / 4).max(1 << 20),
            base_dir: base_dir.to_path_buf(),
            disk: None,
            loading: false,
        }
    }

    fn disk_err(&self, e: impl std::fmt::Display) -> Error {
        let file = self
            .disk
            .as_ref()
            .map_or_else(|| self.base_dir.join(FILE_NAME), Spilled::file);
        Error::io(
            file,
            std::io::Error::other(format!("cross-partition key index: {e}")),
        )
        .with_table(&self.table)
    }

    /// Where `key` is (None: a new key).
    pub fn get(&mut self, key: &[u8]) -> Result<Option<Place>> {
        if let Some(&p) = self.map.get(key) {
            return Ok(Some(p));
        }
        let Some(disk) = self.disk.as_mut() else {
            return Ok(None);
        };
        if disk.view.is_none() {
            let view = disk
                .db
                .begin_read()
                .map_err(|e| e.to_string())
                .and_then(|t| t.open_table(TABLE).map_err(|e| e.to_string()));
            match view {
                Ok(v) => disk.view = Some(v),
                Err(e) => return Err(self.disk_err(e)),
            }
        }
        let found = match disk.view.as_ref().map(|v| v.get(key)) {
            Some(Ok(found)) => found.map(|g| g.value()),
            Some(Err(e)) => return Err(self.disk_err(e)),
            None => None,
        };
        Ok(found)
    }

    /// Set where `key` is.
    pub fn put(&mut self, key: &[u8], place: Place) -> Result<()> {
        match self.map.get_mut(key) {
            Some(p) => *p = place,
            None => {
                self.map_bytes += key.len() + ENTRY_OVERHEAD;
                self.map.insert(key.into(), place);
            }
        }
        self.spill_if_full()
    }

    /// Load a key of the table (bootstrap); a key seen at two places is an error. Returns
    /// whether the key is new to the map (a key seen again at the same place is not).
    pub fn load(&mut self, key: Box<[u8]>, place: Place) -> Result<bool> {
        self.loading = true;
        let len = key.len();
        match self.map.insert(key, place) {
            Some(p0) if p0 != place => return Err(duplicate(&self.table)),
            Some(_) => return Ok(false),
            None => self.map_bytes += len + ENTRY_OVERHEAD,
        }
        self.spill_if_full()?;
        Ok(true)
    }

    /// The end of the bootstrap: the keys still in memory are checked against those spilled.
    pub fn end_load(&mut self) -> Result<()> {
        if self.loading && self.disk.is_some() && !self.map.is_empty() {
            self.spill()?;
        }
        self.loading = false;
        Ok(())
    }

    fn spill_if_full(&mut self) -> Result<()> {
        if self.map_bytes > self.map_budget {
            self.spill()?;
        }
        Ok(())
    }

    /// Write the map into the spill file (created at the first spill) and clear it.
    fn spill(&mut self) -> Result<()> {
        if self.disk.is_none() {
            let dir = SpillDir::create(&self.base_dir).map_err(|e| e.with_table(&self.table))?;
            let db = redb::Database::builder()
                .set_cache_size(self.cache_bytes)
                .create(dir.path().join(FILE_NAME));
            let db = match db {
                Ok(db) => db,
                Err(e) => {
                    return Err(Error::io(
                        dir.path().join(FILE_NAME),
                        std::io::Error::other(format!("cross-partition key index: {e}")),
                    )
                    .with_table(&self.table))
                }
            };
            self.disk = Some(Spilled {
                view: None,
                db,
                keys: 0,
                spills: 0,
                dir,
            });
        }
        let mut entries: Vec<(Box<[u8]>, Place)> = self.map.drain().collect();
        entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let n = entries.len();
        let check = self.loading;
        let Some(disk) = self.disk.as_mut() else {
            return Err(Error::Internal("key index spill file not created".into()));
        };
        // a live read view would keep the pages the write replaces
        disk.view = None;
        let written = (|| -> std::result::Result<(u64, bool), String> {
            let txn = disk.db.begin_write().map_err(|e| e.to_string())?;
            let mut added = 0;
            let mut dup = false;
            {
                let mut t = txn.open_table(TABLE).map_err(|e| e.to_string())?;
                for (k, p) in &entries {
                    let old = t.insert(&**k, p).map_err(|e| e.to_string())?;
                    match old.map(|g| g.value()) {
                        None => added += 1,
                        Some(p0) if check && p0 != *p => dup = true,
                        Some(_) => {}
                    }
                }
            }
            txn.commit().map_err(|e| e.to_string())?;
            Ok((added, dup))
        })();
        self.map_bytes = 0;
        let (added, dup) = match written {
            Ok(w) => w,
            Err(e) => return Err(self.disk_err(e)),
        };
        if dup {
            return Err(duplicate(&self.table));
        }
        disk.keys += added;
        disk.spills += 1;
        log::info!(
            target: "paimon_rs.write",
            "{}: cross-partition key index spilled {n} keys to {} ({} keys on disk, spill {})",
            self.table,
            disk.file().display(),
            disk.keys,
            disk.spills,
        );
        Ok(())
    }

    /// The spill directory (None before the first spill).
    #[cfg(test)]
    pub fn spill_dir(&self) -> Option<&Path> {
        self.disk.as_ref().map(|d| d.dir.path())
    }

    /// Keys held in memory.
    #[cfg(test)]
    pub fn keys_in_memory(&self) -> usize {
        self.map.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(i: u32) -> Vec<u8> {
        format!("key-{i:06}").into_bytes()
    }

    #[test]
    fn spills_past_the_budget_and_newest_wins() {
        let base = tempfile::tempdir().unwrap();
        // 16 KiB: the map holds 12 KiB, about 240 of these keys
        let mut s = KeyIndex::new("t", 16 << 10, base.path());
        for i in 0..2000 {
            s.load(key(i).into(), (i % 3, (i % 5) as i32)).unwrap();
        }
        s.end_load().unwrap();
        assert!(s.spill_dir().is_some());
        assert_eq!(s.keys_in_memory(), 0);
        // moves after the spill: the map shadows the file, then spills over it
        for i in (0..2000).step_by(7) {
            s.put(&key(i), (9, 1)).unwrap();
        }
        for i in 0..2000 {
            let want = if i % 7 == 0 {
                (9, 1)
            } else {
                (i % 3, (i % 5) as i32)
            };
            assert_eq!(s.get(&key(i)).unwrap(), Some(want), "key {i}");
        }
        assert_eq!(s.get(b"nope").unwrap(), None);
        let dir = s.spill_dir().unwrap().to_path_buf();
        assert!(dir.join(FILE_NAME).exists());
        drop(s);
        assert!(!dir.exists(), "the spill directory is removed on drop");
    }

    #[test]
    fn a_key_loaded_at_two_places_is_refused_across_spills() {
        let base = tempfile::tempdir().unwrap();
        let mut s = KeyIndex::new("t", 4 << 10, base.path());
        for i in 0..500 {
            s.load(key(i).into(), (0, 0)).unwrap();
        }
        assert!(s.spill_dir().is_some());
        // key 3 went to the file long ago; now seen in another partition
        s.load(key(3).into(), (1, 0)).unwrap();
        let e = s.end_load().unwrap_err().to_string();
        assert!(e.contains("two buckets or partitions"), "{e}");
        // the same place twice is no conflict
        let mut s = KeyIndex::new("t", 4 << 10, base.path());
        for i in 0..500 {
            s.load(key(i).into(), (0, 0)).unwrap();
        }
        s.load(key(3).into(), (0, 0)).unwrap();
        s.end_load().unwrap();
        assert_eq!(s.get(&key(3)).unwrap(), Some((0, 0)));
    }

    #[test]
    fn in_memory_below_the_budget() {
        let base = tempfile::tempdir().unwrap();
        let mut s = KeyIndex::new("t", 256 << 20, base.path());
        for i in 0..1000 {
            s.put(&key(i), (0, 0)).unwrap();
        }
        assert!(s.spill_dir().is_none());
        assert_eq!(s.keys_in_memory(), 1000);
    }
}
