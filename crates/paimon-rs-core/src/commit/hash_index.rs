//! The dynamic-bucket hash index in a commit (paimon-behaviour.md §1.7): a partition's hash
//! index tells every writer which bucket holds a key; Java allows one writer per partition and
//! does not check. Two writers that restored the same index could put one new key in two
//! buckets (each opens or fills a bucket of its own), so a commit whose messages change the
//! hash index of a partition is refused as a conflict when a snapshot of another commit user,
//! after the snapshot the messages' writer restored from, changed that partition's `HASH`
//! index files. The same user's later snapshots are the writer's own earlier commits (a
//! streaming writer keeps its index across commits).

use std::collections::{BTreeSet, HashMap};

use super::{CommitMessage, FileStoreCommit, Phase, Replace};
use crate::error::{Error, Result};
use crate::spec::manifest::FileKind;
use crate::spec::manifest::{IndexManifestEntry, HASH_INDEX};
use crate::spec::snapshot::{CommitKind, Snapshot};

/// A partition whose hash index the commit changes, and the snapshot its writer restored it
/// from (0: the table was empty).
pub(super) type HashBase = (Vec<u8>, i64);

/// The partitions whose hash index the messages change (data increments: the writers'
/// assigners), each with the oldest snapshot one of its writers restored from.
pub(super) fn hash_bases(messages: &[CommitMessage]) -> Vec<HashBase> {
    let mut out: HashMap<&[u8], i64> = HashMap::new();
    for m in messages {
        let hash = |fs: &[crate::spec::manifest::IndexFileMeta]| {
            fs.iter().any(|f| f.index_type == HASH_INDEX)
        };
        let d = &m.data_increment;
        if !(hash(&d.new_index_files) || hash(&d.deleted_index_files)) {
            continue;
        }
        // a message without its restored snapshot predates hash indexes: nothing to check
        let Some(base) = m.restored_snapshot else {
            continue;
        };
        let base = base.unwrap_or(0);
        let b = out.entry(&m.partition).or_insert(base);
        *b = (*b).min(base);
    }
    let mut out: Vec<HashBase> = out.into_iter().map(|(p, b)| (p.to_vec(), b)).collect();
    out.sort();
    out
}

/// A dynamic-bucket table (not cross-partition): the partitions the messages write data into,
/// each with the oldest snapshot one of its writers restored from. A writer that only updates
/// or deletes known keys changes no hash index (its keys keep their buckets), but it took those
/// buckets from its snapshot's index: an OVERWRITE of the partition by another user since
/// (INSERT OVERWRITE, a sort compaction, a truncate) gave the keys new buckets or none, so the
/// rows would put a key in two buckets, or in a bucket the index no longer lists it in.
pub(super) fn written_bases(
    table: &crate::table::FileStoreTable,
    messages: &[CommitMessage],
) -> Vec<HashBase> {
    if !(table.is_primary_key() && table.options.bucket == -1)
        || crate::write::cross_partition::is_cross_partition(table)
    {
        return vec![];
    }
    let mut out: HashMap<&[u8], i64> = HashMap::new();
    for m in messages {
        if m.data_increment.new_files.is_empty() {
            continue;
        }
        let Some(base) = m.restored_snapshot else {
            continue;
        };
        let b = out.entry(&m.partition).or_insert(base.unwrap_or(0));
        *b = (*b).min(base.unwrap_or(0));
    }
    let mut out: Vec<HashBase> = out.into_iter().map(|(p, b)| (p.to_vec(), b)).collect();
    out.sort();
    out
}

/// Cross-partition upsert (write/cross_partition.rs): the oldest snapshot the writers of
/// `messages` that write data bootstrapped their key index from (0: the table was empty);
/// None when the table is not a cross-partition one or nothing is written.
pub(super) fn key_index_base(
    table: &crate::table::FileStoreTable,
    messages: &[CommitMessage],
) -> Option<i64> {
    if !crate::write::cross_partition::is_cross_partition(table) {
        return None;
    }
    messages
        .iter()
        .filter(|m| !m.data_increment.new_files.is_empty())
        .filter_map(|m| m.restored_snapshot.map(|b| b.unwrap_or(0)))
        .min()
}

/// The `HASH` files of `partition` in live index entries: (bucket, file name).
fn hash_files(live: &[IndexManifestEntry], partition: &[u8]) -> BTreeSet<(i32, String)> {
    live.iter()
        .filter(|e| e.index_type == HASH_INDEX && e.partition == partition)
        .map(|e| (e.bucket, e.file_name.clone()))
        .collect()
}

impl FileStoreCommit {
    /// Refuse the commit if a snapshot of another commit user after a partition's base, up to
    /// `latest`, changed the partition's hash index (see the module doc), or if an OVERWRITE
    /// snapshot of another user changed the hash index of a partition in `written` (see
    /// [`written_bases`]).
    pub(super) fn check_hash_index(
        &self,
        latest: Option<&Snapshot>,
        bases: &[HashBase],
        written: &[HashBase],
    ) -> Result<()> {
        let lowest = bases.iter().chain(written).map(|b| b.1).min();
        let (Some(latest), Some(lowest)) = (latest, lowest) else {
            return Ok(());
        };
        let sm = self.table().snapshot_manager();
        let conflict = |message: String| Error::CommitConflict {
            table: self.table().name.clone(),
            message,
        };
        let expired = |id: i64| {
            conflict(format!(
                "snapshot {id}, committed after the snapshot this write restored the \
                 dynamic-bucket hash index from, has expired: the commit cannot verify that no \
                 concurrent writer assigned the same keys; write the data again"
            ))
        };
        let mut manifests: HashMap<String, Vec<IndexManifestEntry>> = HashMap::new();
        let mut live_of = |name: &Option<String>| -> Result<Vec<IndexManifestEntry>> {
            let Some(name) = name else {
                return Ok(vec![]);
            };
            if let Some(l) = manifests.get(name) {
                return Ok(l.clone());
            }
            let l = self.table().live_index_entries(Some(name))?;
            manifests.insert(name.clone(), l.clone());
            Ok(l)
        };
        let mut previous = match lowest {
            0 => None,
            id => match sm.try_snapshot(id)? {
                Some(s) => s.index_manifest,
                None => return Err(expired(id)),
            },
        };
        for id in (lowest + 1)..=latest.id {
            let s = match id == latest.id {
                true => latest.clone(),
                false => sm.try_snapshot(id)?.ok_or_else(|| expired(id))?,
            };
            if s.index_manifest != previous && s.commit_user != self.commit_user() {
                let before = live_of(&previous)?;
                let after = live_of(&s.index_manifest)?;
                for (p, base) in bases.iter().filter(|b| b.1 < id) {
                    if hash_files(&before, p) != hash_files(&after, p) {
                        return Err(conflict(format!(
                            "the dynamic-bucket hash index of partition {} was changed by \
                             snapshot {id} (commit user '{}') after this write restored it \
                             from snapshot {base}: two writers of one partition could put a \
                             key in two buckets; write the data again",
                            self.partition_label(p),
                            s.commit_user
                        )));
                    }
                }
                let overwrite = s.commit_kind == CommitKind::Overwrite;
                for (p, base) in written.iter().filter(|b| overwrite && b.1 < id) {
                    if hash_files(&before, p) != hash_files(&after, p) {
                        return Err(conflict(format!(
                            "partition {} was overwritten by snapshot {id} (commit user '{}') \
                             after this write took its keys' dynamic buckets from snapshot \
                             {base}: the overwrite gave the keys new buckets, so this write's \
                             rows could put a key in two buckets; write the data again",
                            self.partition_label(p),
                            s.commit_user
                        )));
                    }
                }
            }
            previous = s.index_manifest;
        }
        Ok(())
    }

    /// Cross-partition upsert: refuse the commit if a snapshot of another commit user after
    /// `base` (see [`key_index_base`]) wrote data: its keys are not in this writer's key index,
    /// which could then have put a key in two partitions (Java allows one writer and checks
    /// nothing).
    pub(super) fn check_key_index(
        &self,
        latest: Option<&Snapshot>,
        base: Option<i64>,
    ) -> Result<()> {
        let (Some(latest), Some(base)) = (latest, base) else {
            return Ok(());
        };
        let sm = self.table().snapshot_manager();
        for id in (base + 1)..=latest.id {
            let s = match id == latest.id {
                true => latest.clone(),
                false => sm.try_snapshot(id)?.ok_or_else(|| Error::CommitConflict {
                    table: self.table().name.clone(),
                    message: format!(
                        "snapshot {id}, committed after the snapshot this cross-partition write \
                         bootstrapped its key index from, has expired: the commit cannot verify \
                         that no concurrent writer wrote the same keys; write the data again"
                    ),
                })?,
            };
            if s.commit_user != self.commit_user() && s.commit_kind != CommitKind::Compact {
                return Err(Error::CommitConflict {
                    table: self.table().name.clone(),
                    message: format!(
                        "snapshot {id} (commit user '{}') wrote to this cross-partition upsert \
                         table after this write bootstrapped its key index from snapshot {base}: \
                         two writers could put one key in two partitions; write the data again",
                        s.commit_user
                    ),
                });
            }
        }
        Ok(())
    }

    /// A partition as its directory names it (`p=1/`), for messages.
    pub(super) fn partition_label(&self, partition: &[u8]) -> String {
        match self.bucket_dir_of(partition, 0) {
            Ok(d) => d
                .parent()
                .and_then(|p| p.strip_prefix(self.table().data_root()).ok())
                .map(|p| format!("'{}'", p.to_string_lossy()))
                .filter(|l| l != "''")
                .unwrap_or_else(|| "(the table has no partitions)".into()),
            Err(_) => "(undecodable)".into(),
        }
    }
}

impl FileStoreCommit {
    /// An overwrite (INSERT OVERWRITE, truncate, drop partitions) drops every live index file
    /// (hash index, deletion vectors) of the partitions it replaces, as Java's
    /// `OverwriteChangesProvider` (paimon-behaviour.md §1.7): the keys of the replaced data must
    /// not pin buckets. `changes` are the commit's own index changes (its files already
    /// deleted there are not deleted twice). Empty for anything but an overwrite.
    pub(super) fn overwritten_index(
        &self,
        phase: &Phase,
        latest: Option<&Snapshot>,
        changes: &[IndexManifestEntry],
    ) -> Result<Vec<IndexManifestEntry>> {
        let Phase::Append {
            adds,
            replace: Some(replace),
            ..
        } = phase
        else {
            return Ok(vec![]);
        };
        let Some(name) = latest.and_then(|s| s.index_manifest.as_deref()) else {
            return Ok(vec![]);
        };
        let written: BTreeSet<&[u8]> = adds.iter().map(|e| e.partition.as_slice()).collect();
        let already: BTreeSet<(&[u8], i32, &str)> = changes
            .iter()
            .filter(|e| e.kind == FileKind::Delete)
            .map(|e| (e.partition.as_slice(), e.bucket, e.file_name.as_str()))
            .collect();
        let mut out = vec![];
        for e in self.table().live_index_entries(Some(name))? {
            let hit = match replace {
                Replace::Written => written.contains(e.partition.as_slice()),
                Replace::Spec(spec) => self.partition_matches(&e.partition, spec)?,
                Replace::Specs(specs) => {
                    let mut hit = false;
                    for spec in specs {
                        hit = hit || self.partition_matches(&e.partition, spec)?;
                    }
                    hit
                }
            };
            if hit && !already.contains(&(e.partition.as_slice(), e.bucket, e.file_name.as_str())) {
                out.push(IndexManifestEntry {
                    kind: FileKind::Delete,
                    ..e
                });
            }
        }
        Ok(out)
    }
}
