//! What bucket writers restore from the table (Java's `AbstractFileStoreWrite.scanExistingFileMetas`
//! and `RestoreFiles`): the latest snapshot's live files of the partitions a write opens, read
//! once for all of that partition's buckets, and handed to each new bucket writer as a
//! [`RestoreFiles`].

use std::collections::{HashMap, HashSet};

use super::deletion_vectors::DeletionVectorsMaintainer;
use crate::error::Result;
use crate::spec::manifest::{DataFileMeta, IndexManifestEntry};
use crate::spec::snapshot::Snapshot;
use crate::table::FileStoreTable;

/// Key of a bucket writer: serialized partition BinaryRow and bucket.
pub(crate) type WriterKey = (Vec<u8>, i32);

/// What one bucket writer starts from (Java's `RestoreFiles`).
#[derive(Debug, Default)]
pub(crate) struct RestoreFiles {
    /// The bucket's live data files: its levels, for writers that compact (empty otherwise).
    pub data_files: Vec<DataFileMeta>,
    /// Highest sequence number of the bucket's live files (-1 if none): the writer's sequence
    /// numbers continue after it.
    pub max_sequence_number: i64,
    /// The bucket's deletion vectors (primary-key and bucketed append tables with
    /// `deletion-vectors.enabled`, writers that compact): restored from the snapshot's index
    /// files.
    pub deletion_vectors: Option<DeletionVectorsMaintainer>,
}

/// The table's live files as the writers of one `TableWrite` read them: per partition on first
/// write to it, all from the snapshot that was the latest at the first read.
#[derive(Default)]
pub(crate) struct TableRestore {
    /// The snapshot restored from (None = not read yet; Some(None) = the table is empty).
    snapshot: Option<Option<Snapshot>>,
    /// Partitions whose live files were read.
    partitions: HashSet<Vec<u8>>,
    /// Every partition's live files were read.
    all: bool,
    /// Max sequence number per (partition, bucket) of those partitions' live files.
    max_seq: HashMap<WriterKey, i64>,
    /// Live files per (partition, bucket) of those partitions (writers that compact: a
    /// bucket's levels), until a writer of the bucket takes them.
    files: HashMap<WriterKey, Vec<DataFileMeta>>,
    /// Whether live files are kept for the writers (they compact).
    keep_files: bool,
    /// Deletion vectors of dropped writers, for the next writer of their bucket.
    deletion_vectors: HashMap<WriterKey, DeletionVectorsMaintainer>,
    /// The snapshot's live index files, read once for every bucket's writer.
    live_index: Option<Vec<IndexManifestEntry>>,
}

impl TableRestore {
    /// The snapshot read, once anything was read.
    pub fn snapshot(&self) -> Option<&Snapshot> {
        self.snapshot.as_ref().and_then(Option::as_ref)
    }

    /// Fix the snapshot the writers restore from (the latest), if not fixed yet: a
    /// cross-partition writer bootstraps its key index from it before any partition is read.
    pub fn pin_latest(&mut self, table: &FileStoreTable) -> Result<Option<&Snapshot>> {
        if self.snapshot.is_none() {
            self.snapshot = Some(table.snapshot_manager().latest()?);
        }
        Ok(self.snapshot())
    }

    /// The id of the snapshot read, for commit messages: `Some(None)` = the table was empty,
    /// None = nothing was read yet.
    pub fn snapshot_id(&self) -> Option<Option<i64>> {
        self.snapshot.as_ref().map(|s| s.as_ref().map(|s| s.id))
    }

    /// Restore from `snapshot` (None: the empty table) instead of the latest at the first read;
    /// refused once anything was read.
    pub fn pin(&mut self, snapshot: Option<Snapshot>) -> Result<()> {
        if self.snapshot.is_some() {
            return Err(crate::error::Error::Internal(
                "a writer's restored snapshot pinned after it read the table".into(),
            ));
        }
        self.snapshot = Some(snapshot);
        Ok(())
    }

    /// Read the highest sequence number per bucket of `partitions` from the table's live files
    /// (and, with `keep_files`, the files themselves), unless read before. The first read takes
    /// only the manifests that may hold these partitions (a write usually touches few); a later
    /// one, for partitions not seen yet, reads them all once, so a write spreading over many
    /// partitions reads the manifests at most twice. The snapshot is the latest at the first
    /// read, for every partition.
    pub fn read(
        &mut self,
        table: &FileStoreTable,
        partitions: Vec<&[u8]>,
        keep_files: bool,
    ) -> Result<()> {
        self.keep_files = keep_files;
        if self.all {
            return Ok(());
        }
        let missing: Vec<&[u8]> = partitions
            .into_iter()
            .filter(|p| !self.partitions.contains(*p))
            .collect::<HashSet<_>>()
            .into_iter()
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        if self.snapshot.is_none() {
            self.snapshot = Some(table.snapshot_manager().latest()?);
        }
        let everything = !self.partitions.is_empty();
        if let Some(Some(snap)) = &self.snapshot {
            let filter = if everything {
                None
            } else {
                crate::table::live::partitions_filter(table, missing.clone())?
            };
            let entries = crate::table::live::live_entries_filtered(table, snap, filter.as_ref())?;
            // only once the read succeeded: a failed read leaves what is known intact
            if everything {
                self.max_seq.clear();
                self.files.clear();
            }
            for e in entries {
                if keep_files {
                    self.files
                        .entry((e.partition.clone(), e.bucket))
                        .or_default()
                        .push(e.file.clone());
                }
                let v = self
                    .max_seq
                    .entry((e.partition.clone(), e.bucket))
                    .or_insert(-1);
                *v = (*v).max(e.file.max_sequence_number);
            }
        }
        self.all = everything;
        self.partitions
            .extend(missing.into_iter().map(<[u8]>::to_vec));
        Ok(())
    }

    /// What the writer of `key` starts from; its partition must have been read. The bucket's
    /// files move to the writer (see [`Self::give_back`]). A writer that compacts a
    /// deletion-vector table gets the bucket's vectors too, read from the snapshot's index
    /// files unless an earlier writer of the bucket gave them back.
    pub fn restore(&mut self, table: &FileStoreTable, key: &WriterKey) -> Result<RestoreFiles> {
        let data_files = self.files.remove(key).unwrap_or_default();
        let deletion_vectors = match self.deletion_vectors.remove(key) {
            Some(dv) => Some(dv),
            None if self.keeps_vectors(table)? => {
                if self.live_index.is_none() {
                    self.live_index = Some(DeletionVectorsMaintainer::live_index_of(
                        table,
                        self.snapshot(),
                    )?);
                }
                Some(DeletionVectorsMaintainer::restore(
                    table,
                    self.live_index.as_deref().unwrap_or_default(),
                    &key.0,
                    key.1,
                    &data_files,
                )?)
            }
            None => None,
        };
        Ok(RestoreFiles {
            data_files,
            max_sequence_number: self.max_seq.get(key).copied().unwrap_or(-1),
            deletion_vectors,
        })
    }

    /// Whether writers keep deletion vectors: a table with `deletion-vectors.enabled` whose
    /// live files were read (writers that compact), primary-key or bucketed append (Java's
    /// `AbstractFileStoreWrite` hands both a `BucketedDvMaintainer`; a bucketed append writer's
    /// compaction drops the rows and vectors of the files it rewrites). Bucket-unaware append
    /// tables keep their vectors per partition and their writers do not compact.
    fn keeps_vectors(&self, table: &FileStoreTable) -> Result<bool> {
        Ok(self.keep_files
            && (table.is_primary_key() || !table.is_unaware_append())
            && table.options.deletion_vectors()?)
    }

    /// A dropped writer's files (restored, plus what it handed to commits) and deletion
    /// vectors: a later writer of the same bucket starts from them.
    pub fn give_back(
        &mut self,
        key: WriterKey,
        files: Vec<DataFileMeta>,
        deletion_vectors: Option<DeletionVectorsMaintainer>,
    ) {
        if let Some(dv) = deletion_vectors {
            self.deletion_vectors.insert(key.clone(), dv);
        }
        if !files.is_empty() {
            self.files.insert(key, files);
        }
    }

    #[cfg(test)]
    pub fn read_all(&self) -> bool {
        self.all
    }

    #[cfg(test)]
    pub fn partitions_read(&self) -> usize {
        self.partitions.len()
    }

    #[cfg(test)]
    pub fn max_sequence_numbers(&self) -> Vec<i64> {
        self.max_seq.values().copied().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::write::assign::tests::{rows, table};
    use crate::write::TableWrite;

    /// A bucket's restore holds the live files of the latest snapshot and their highest
    /// sequence number; a bucket never written restores nothing.
    #[test]
    fn restore_files_of_a_table_with_files() {
        let dir = tempfile::tempdir().unwrap();
        let t = table(dir.path(), "1");
        let mut w = TableWrite::new(t.clone()).unwrap();
        w.write(&rows(1, 0..100)).unwrap();
        let msgs = w.prepare_commit().unwrap();
        let snap = crate::commit::FileStoreCommit::new(t.clone(), "u".into())
            .commit(&msgs, 1, None)
            .unwrap();
        let key = (msgs[0].partition.clone(), msgs[0].bucket);

        let mut r = TableRestore::default();
        r.read(&t, vec![&key.0], true).unwrap();
        let got = r.restore(&t, &key).unwrap();
        assert!(got.deletion_vectors.is_none());
        assert_eq!(r.snapshot().map(|s| s.id), snap);
        assert_eq!(got.max_sequence_number, 99);
        let names = |fs: &[DataFileMeta]| -> Vec<String> {
            fs.iter().map(|f| f.file_name.clone()).collect()
        };
        assert_eq!(
            names(&got.data_files),
            names(&msgs[0].data_increment.new_files)
        );
        // the files moved to the writer; given back, a later writer finds them
        assert!(r.restore(&t, &key).unwrap().data_files.is_empty());
        r.give_back(key.clone(), got.data_files, None);
        assert_eq!(r.restore(&t, &key).unwrap().data_files.len(), 1);

        // without files (a writer that does not compact): only the sequence number
        let mut r = TableRestore::default();
        r.read(&t, vec![&key.0], false).unwrap();
        let got = r.restore(&t, &key).unwrap();
        assert!(got.data_files.is_empty());
        assert_eq!(got.max_sequence_number, 99);
        let other = (key.0.clone(), 7);
        assert_eq!(r.restore(&t, &other).unwrap().max_sequence_number, -1);

        // an empty table: no snapshot
        let dir = tempfile::tempdir().unwrap();
        let empty = table(dir.path(), "1");
        let mut r = TableRestore::default();
        r.read(&empty, vec![&key.0], true).unwrap();
        assert!(r.snapshot().is_none());
        assert_eq!(r.restore(&empty, &key).unwrap().max_sequence_number, -1);
    }
}
