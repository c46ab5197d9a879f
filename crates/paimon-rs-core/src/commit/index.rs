//! Index files in a commit (Java's `IndexManifestFileHandler`): a snapshot's index manifest
//! lists every live index file of the table (ADD entries only, cumulative); a commit whose
//! messages add or replace index files writes a new one, the latest snapshot's with the
//! replaced files removed and the new ones added, else the snapshot inherits the latest's.
//!
//! Deletion vectors of a bucket are maintained by its one writer from the index files it
//! restored: the files it replaces must still be live, and no other deletion-vector file of the
//! bucket may have appeared since (a concurrent writer's vectors would be lost), else the
//! commit is a conflict.

use std::collections::HashSet;
use std::path::PathBuf;

use super::{CommitMessage, FileStoreCommit};
use crate::error::{Error, Result};
use crate::spec::manifest::{
    write_index_manifest, FileKind, IndexManifestEntry, ManifestEntry, ManifestFileMeta,
    DELETION_VECTORS_INDEX, HASH_INDEX,
};
use crate::spec::snapshot::Snapshot;

/// The index changes of the messages' data increments (`compact` false) or compact increments:
/// DELETE entries of the replaced index files, then ADD entries of the new ones.
pub(super) fn index_changes(messages: &[CommitMessage], compact: bool) -> Vec<IndexManifestEntry> {
    let mut deleted = vec![];
    let mut added = vec![];
    for m in messages {
        let (new, old) = if compact {
            let c = &m.compact_increment;
            (&c.new_index_files, &c.deleted_index_files)
        } else {
            let d = &m.data_increment;
            (&d.new_index_files, &d.deleted_index_files)
        };
        let entry = |kind, f| IndexManifestEntry::of(kind, &m.partition, m.bucket, f);
        deleted.extend(old.iter().map(|f| entry(FileKind::Delete, f)));
        added.extend(new.iter().map(|f| entry(FileKind::Add, f)));
    }
    deleted.extend(added);
    deleted
}

/// pypaimon's (`ConflictDetection`) opening words of a conflict over deletion vectors, which
/// callers match; our message follows them.
const DV_CONFLICT: &str = "Deletion vector index conflict detected: ";

/// The opening words of a conflict over an index file of type `index_type` (pypaimon's).
fn conflict_kind(index_type: &str) -> &'static str {
    match index_type {
        DELETION_VECTORS_INDEX => DV_CONFLICT,
        HASH_INDEX => "HASH index conflict detected: ",
        _ => "",
    }
}

/// Identity of an index file in the manifest.
fn id(e: &IndexManifestEntry) -> (&[u8], i32, &str) {
    (&e.partition, e.bucket, &e.file_name)
}

impl FileStoreCommit {
    /// The index manifest of the snapshot after `latest` with `changes` applied: the latest's
    /// own name when there are none, else a new manifest (added to `written`).
    pub(super) fn index_manifest_after(
        &self,
        latest: Option<&Snapshot>,
        changes: &[IndexManifestEntry],
        written: &mut Vec<PathBuf>,
    ) -> Result<Option<String>> {
        let inherited = latest.and_then(|s| s.index_manifest.clone());
        if changes.is_empty() {
            return Ok(inherited);
        }
        let mut live = self.table().live_index_entries(inherited.as_deref())?;
        self.check_index_changes(&live, changes)?;
        let deleted: HashSet<(Vec<u8>, i32, String)> = changes
            .iter()
            .filter(|e| e.kind == FileKind::Delete)
            .map(|e| (e.partition.clone(), e.bucket, e.file_name.clone()))
            .collect();
        live.retain(|l| !deleted.contains(&(l.partition.clone(), l.bucket, l.file_name.clone())));
        // a new hash index file replaces its bucket's (Java's `BucketedCombiner`: a Java
        // message adds the bucket's new file without deleting the old one)
        let hashed: HashSet<(Vec<u8>, i32)> = changes
            .iter()
            .filter(|e| e.kind == FileKind::Add && e.index_type == HASH_INDEX)
            .map(|e| (e.partition.clone(), e.bucket))
            .collect();
        live.retain(|l| {
            l.index_type != HASH_INDEX || !hashed.contains(&(l.partition.clone(), l.bucket))
        });
        live.extend(changes.iter().filter(|e| e.kind == FileKind::Add).cloned());
        let name = format!("index-manifest-{}-0", uuid::Uuid::new_v4());
        let bytes = write_index_manifest(&live, &self.table().options.manifest_compression)?;
        let p = self.table().manifest_dir().join(&name);
        crate::io::write_new_unsynced(&p, &bytes)?;
        written.push(p);
        Ok(Some(name))
    }

    /// `changes` (DELETE entries of replaced index files, ADD entries of new ones) against
    /// `live`, the index files they apply to: each replaced file must still be live, and a
    /// bucket of a bucketed table may keep no deletion-vector file besides those replaced (a
    /// concurrent writer's or delete's vectors would be lost); else a conflict.
    pub(super) fn check_index_changes(
        &self,
        live: &[IndexManifestEntry],
        changes: &[IndexManifestEntry],
    ) -> Result<()> {
        let conflict = |message: String| Error::CommitConflict {
            table: self.table().name.clone(),
            message,
        };
        let deleted: HashSet<(&[u8], i32, &str)> = changes
            .iter()
            .filter(|e| e.kind == FileKind::Delete)
            .map(id)
            .collect();
        let live_ids: HashSet<(&[u8], i32, &str)> = live.iter().map(id).collect();
        for d in changes.iter().filter(|e| e.kind == FileKind::Delete) {
            if !live_ids.contains(&id(d)) {
                return Err(conflict(format!(
                    "{}index file {} of bucket {} was replaced or removed by a concurrent \
                     commit; give up committing",
                    conflict_kind(&d.index_type),
                    d.file_name,
                    d.bucket
                )));
            }
        }
        // a bucketed table's vectors of a bucket are one index file; a bucket-unaware append
        // table has any number per partition ([`Self::check_append_vectors`] checks those)
        let unaware = self.table().is_unaware_append();
        for a in changes.iter().filter(|e| e.kind == FileKind::Add) {
            if a.index_type != DELETION_VECTORS_INDEX || unaware {
                continue;
            }
            let other = live.iter().find(|l| {
                l.index_type == DELETION_VECTORS_INDEX
                    && (&l.partition, l.bucket) == (&a.partition, a.bucket)
                    && !deleted.contains(&id(l))
            });
            if let Some(o) = other {
                return Err(conflict(format!(
                    "{DV_CONFLICT}deletion vectors of bucket {} changed concurrently (index file \
                     {} is not the one this writer restored); give up committing",
                    a.bucket, o.file_name
                )));
            }
        }
        Ok(())
    }
}

impl FileStoreCommit {
    /// Deletion vectors of an append table (write/append_dv.rs), against the latest snapshot
    /// (Java's `ConflictDetection` attaches each data file's vector to its entry): a vector
    /// this commit adds must be of a data file live after it (a concurrent compaction may have
    /// rewritten the file: the deleted rows would come back), no data file may end up with two
    /// vectors (two concurrent deletes on a bucket-unaware table each write a new index file),
    /// and a compaction may remove a data file only together with its vector's index file (a
    /// vector committed since the compaction read the file would be lost with it).
    pub(super) fn check_append_vectors(
        &self,
        latest: Option<&Snapshot>,
        previous: &[ManifestFileMeta],
        delta: &[ManifestEntry],
        changes: &[IndexManifestEntry],
        compaction: bool,
    ) -> Result<()> {
        let t = self.table();
        if t.is_primary_key() || !t.options.deletion_vectors()? {
            return Ok(());
        }
        let adds: Vec<&IndexManifestEntry> = changes
            .iter()
            .filter(|e| e.kind == FileKind::Add && e.index_type == DELETION_VECTORS_INDEX)
            .collect();
        if adds.is_empty() && !compaction {
            return Ok(());
        }
        let conflict = |message: String| Error::CommitConflict {
            table: t.name.clone(),
            message,
        };
        let live_index = t.live_index_entries(latest.and_then(|s| s.index_manifest.as_deref()))?;
        let replaced: HashSet<(&[u8], i32, &str)> = changes
            .iter()
            .filter(|e| e.kind == FileKind::Delete)
            .map(id)
            .collect();
        // data file → the index file of its vector, after this commit
        let mut owner: std::collections::HashMap<&str, &str> = Default::default();
        for e in live_index
            .iter()
            .filter(|e| e.index_type == DELETION_VECTORS_INDEX)
        {
            for r in e.dv_ranges.iter().flatten() {
                if compaction && !replaced.contains(&id(e)) {
                    let gone = delta
                        .iter()
                        .any(|d| d.kind == FileKind::Delete && d.file.file_name == r.data_file);
                    if gone
                        && !delta
                            .iter()
                            .any(|d| d.kind == FileKind::Add && d.file.file_name == r.data_file)
                    {
                        return Err(conflict(format!(
                            "{DV_CONFLICT}data file {} was given a deletion vector (index \
                             file {}) by a concurrent commit; the compaction would drop its \
                             deleted rows; give up committing",
                            r.data_file, e.file_name
                        )));
                    }
                }
                if !replaced.contains(&id(e)) {
                    owner.insert(&r.data_file, &e.file_name);
                }
            }
        }
        if adds.is_empty() {
            return Ok(());
        }
        for a in &adds {
            for r in a.dv_ranges.iter().flatten() {
                if let Some(o) = owner.insert(&r.data_file, &a.file_name) {
                    return Err(conflict(format!(
                        "{DV_CONFLICT}data file {} has a deletion vector in index file {o}, \
                         written by a concurrent commit, and this commit writes another; give up \
                         committing",
                        r.data_file
                    )));
                }
            }
        }
        let filter =
            crate::table::live::partitions_filter(t, adds.iter().map(|e| e.partition.as_slice()))?;
        let mut live: HashSet<String> =
            crate::table::live::live_entries_of(t, previous.to_vec(), filter.as_ref())?
                .into_iter()
                .map(|e| e.file.file_name)
                .collect();
        for d in delta {
            match d.kind {
                FileKind::Add => live.insert(d.file.file_name.clone()),
                FileKind::Delete => live.remove(&d.file.file_name),
            };
        }
        for a in &adds {
            for r in a.dv_ranges.iter().flatten() {
                if !live.contains(&r.data_file) {
                    return Err(conflict(format!(
                        "{DV_CONFLICT}a deletion vector of data file {}, which a concurrent \
                         commit removed (compacted or overwritten); give up committing",
                        r.data_file
                    )));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use arrow_array::Int64Array;
    use roaring::RoaringBitmap;

    use super::super::safety::tests::{commit, rows, table, written};
    use super::*;
    use crate::table::FileStoreTable;
    use crate::write::deletion_vectors::DeletionVectorsMaintainer;

    /// The table's keys as a deletion-vector reader sees them.
    fn keys(t: &FileStoreTable) -> Vec<i64> {
        let dv: std::collections::BTreeMap<String, String> =
            [("deletion-vectors.enabled".to_string(), "true".to_string())].into();
        let t = t.copy(&dv).unwrap();
        let plan = crate::read::scan::TableScan::new(t.clone(), None)
            .plan()
            .unwrap();
        let r = crate::read::table_read::TableRead::new(t, None, None).unwrap();
        let mut out = vec![];
        for b in r.read_splits(&plan.splits).unwrap() {
            let k = b.column(1).as_any().downcast_ref::<Int64Array>().unwrap();
            out.extend(k.values().iter().copied());
        }
        out.sort();
        out
    }

    /// A message of the bucket's maintainer (restored from the latest snapshot) after marking
    /// `positions` of `file`.
    fn marked(
        t: &FileStoreTable,
        m: &CommitMessage,
        file: &str,
        positions: &[u32],
    ) -> CommitMessage {
        let latest = t.snapshot_manager().latest().unwrap();
        let files = crate::table::live::live_entries(t, latest.as_ref().unwrap()).unwrap();
        let files: Vec<_> = files.into_iter().map(|e| e.file).collect();
        let mut dv = DeletionVectorsMaintainer::restore(
            t,
            &DeletionVectorsMaintainer::live_index_of(t, latest.as_ref()).unwrap(),
            &m.partition,
            m.bucket,
            &files,
        )
        .unwrap();
        dv.mark(file, &positions.iter().copied().collect::<RoaringBitmap>());
        let (new, old) = dv.prepare_commit(t).unwrap();
        let mut out = m.clone();
        out.data_increment = Default::default();
        out.compact_increment = Default::default();
        out.compact_increment.new_index_files = new;
        out.compact_increment.deleted_index_files = old;
        out
    }

    /// Deletion vectors committed as index files: readers drop the marked rows; a second
    /// commit replaces the bucket's index file (one live file, both marks); a writer whose
    /// restored vectors were replaced meanwhile conflicts instead of losing the other's marks.
    #[test]
    fn deletion_vector_index_files_are_committed_and_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let t = table(dir.path(), false);
        let msgs = written(&t, &[rows(1, 0..10)]);
        commit(&t, &msgs).unwrap();
        let m = &msgs[0];
        let file = m.data_increment.new_files[0].file_name.clone();
        assert_eq!(keys(&t), (0..10).collect::<Vec<_>>());

        let first = marked(&t, m, &file, &[2, 5]);
        let stale = marked(&t, m, &file, &[9]); // restored from the same snapshot
        commit(&t, &[first]).unwrap();
        assert_eq!(keys(&t), [0, 1, 3, 4, 6, 7, 8, 9]);

        let e = commit(&t, &[stale]).unwrap_err();
        assert!(
            matches!(&e, Error::CommitConflict { message, .. } if message.contains("deletion vectors")),
            "{e}"
        );

        let second = marked(&t, m, &file, &[7]);
        assert_eq!(second.compact_increment.deleted_index_files.len(), 1);
        commit(&t, std::slice::from_ref(&second)).unwrap();
        assert_eq!(keys(&t), [0, 1, 3, 4, 6, 8, 9]);
        let s = t.snapshot_manager().latest().unwrap().unwrap();
        let live = t.live_index_entries(s.index_manifest.as_deref()).unwrap();
        assert_eq!(live.len(), 1);
        assert_eq!(
            live[0].file_name,
            second.compact_increment.new_index_files[0].file_name
        );
        assert_eq!(live[0].dv_ranges.as_ref().unwrap()[0].cardinality, Some(3));
        // replacing a file that is no longer live is a conflict too
        let e = commit(&t, &[second]).unwrap_err();
        assert!(matches!(&e, Error::CommitConflict { .. }), "{e}");
    }
}
