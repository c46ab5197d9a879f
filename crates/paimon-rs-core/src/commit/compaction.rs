//! The conflict checks of a COMPACT snapshot (Java's `ConflictDetection.checkConflicts` and
//! `PrimaryKeyConflictDetection`): every compaction input must still be live (at its level) in
//! the latest snapshot, no output may already be live, and after the change the files of each
//! level above 0 of a primary-key bucket must hold disjoint key ranges (the LSM invariant the
//! reader relies on).

use std::collections::{BTreeMap, HashSet};

use super::FileStoreCommit;
use crate::error::{Error, Result};
use crate::spec::binary_row::deserialize_row;
use crate::spec::datum::{compare_rows, Datum};
use crate::spec::manifest::{FileIdentifier, FileKind, IndexManifestEntry, ManifestEntry};

type Row = Vec<Option<Datum>>;

/// The files of one level of one bucket, with their decoded key ranges.
type Runs<'a> = BTreeMap<(&'a [u8], i32, i32), Vec<(Row, Row, &'a ManifestEntry)>>;

impl FileStoreCommit {
    /// Check `compact` (DELETE entries of the inputs, ADD entries of the outputs) against
    /// `live`, the latest snapshot's live files of the partitions it changes.
    pub(super) fn check_compaction(
        &self,
        live: &[ManifestEntry],
        compact: &[ManifestEntry],
        snapshot: Option<i64>,
    ) -> Result<()> {
        let live_ids: HashSet<FileIdentifier> = live.iter().map(|e| e.identifier()).collect();
        let mut removed: HashSet<FileIdentifier> = HashSet::new();
        for e in compact.iter().filter(|e| e.kind == FileKind::Delete) {
            let id = e.identifier();
            if !live_ids.contains(&id) {
                let now = live.iter().find(|l| {
                    l.partition == e.partition
                        && l.bucket == e.bucket
                        && l.file.file_name == e.file.file_name
                });
                let why = match now {
                    Some(l) => format!(
                        "it is now at level {} (another compaction moved it)",
                        l.file.level
                    ),
                    None => "another commit removed, compacted or overwrote it".to_string(),
                };
                return Err(Error::CommitConflict {
                    table: self.table().name.clone(),
                    message: format!(
                        "compaction input {} (level {}) is no longer live in snapshot {}: {why}. \
                         The compaction was not committed; abort its messages and compact again",
                        self.file_label(&e.partition, e.bucket, &e.file.file_name),
                        e.file.level,
                        snapshot.unwrap_or(0),
                    ),
                });
            }
            removed.insert(id);
        }
        let remaining: Vec<ManifestEntry> = live
            .iter()
            .filter(|e| !removed.contains(&e.identifier()))
            .cloned()
            .collect();
        let adds: Vec<ManifestEntry> = compact
            .iter()
            .filter(|e| e.kind == FileKind::Add)
            .cloned()
            .collect();
        self.check_not_live(&remaining, &adds, snapshot)?;
        if self.table().is_primary_key() {
            let touched: HashSet<(&[u8], i32)> = compact
                .iter()
                .map(|e| (e.partition.as_slice(), e.bucket))
                .collect();
            let after = remaining.iter().chain(&adds);
            self.check_levels(after.filter(|e| touched.contains(&(&e.partition[..], e.bucket))))?;
        }
        Ok(())
    }

    /// Java's "LSM conflicts detected": two files of one level above 0 of a bucket whose key
    /// ranges overlap (the files of such a level form one sorted run).
    fn check_levels<'a>(&self, files: impl Iterator<Item = &'a ManifestEntry>) -> Result<()> {
        let types = self
            .table()
            .schema
            .types_of(&self.table().trimmed_primary_keys())?;
        let mut levels: Runs<'a> = BTreeMap::new();
        for e in files.filter(|e| e.file.level > 0) {
            levels
                .entry((&e.partition, e.bucket, e.file.level))
                .or_default()
                .push((
                    deserialize_row(&types, &e.file.min_key)?,
                    deserialize_row(&types, &e.file.max_key)?,
                    e,
                ));
        }
        for ((_, _, level), mut run) in levels {
            run.sort_by(|a, b| compare_rows(&a.0, &b.0));
            for pair in run.windows(2) {
                let (a, b) = (&pair[0], &pair[1]);
                if compare_rows(&a.1, &b.0) != std::cmp::Ordering::Less {
                    return Err(Error::CommitConflict {
                        table: self.table().name.clone(),
                        message: format!(
                            "LSM conflict: files {} (keys {:?}..={:?}) and {} (keys \
                             {:?}..={:?}) of level {level} overlap in key range; the files of \
                             a level above 0 of a bucket must hold disjoint keys. The \
                             compaction was not committed",
                            self.file_label(&a.2.partition, a.2.bucket, &a.2.file.file_name),
                            a.0,
                            a.1,
                            b.2.file.file_name,
                            b.0,
                            b.1,
                        ),
                    });
                }
            }
        }
        Ok(())
    }

    /// Before the APPEND snapshot of a commit that also carries compaction results: check the
    /// compaction against the latest snapshot plus the new files, so that a compaction that
    /// conflicts already fails before anything is written. (A concurrent commit can still make
    /// the COMPACT snapshot conflict after the APPEND snapshot landed, as in Java.) Deletion
    /// vectors too (`compact_index`: the compaction's index changes, applied after the APPEND
    /// snapshot's `append_index`): a bucketed append writer's compaction that lost the race
    /// with a delete of its bucket (the index file it replaces is gone, or an input got a
    /// vector since it read it) fails here, so the commit's rows are not committed without it.
    pub(super) fn precheck_compaction(
        &self,
        adds: &[ManifestEntry],
        compact: &[ManifestEntry],
        append_index: &[IndexManifestEntry],
        compact_index: &[IndexManifestEntry],
    ) -> Result<()> {
        let latest = self.table().snapshot_manager().latest()?;
        let previous = self.manifests_of(latest.as_ref())?;
        self.check_append_vectors(latest.as_ref(), &previous, compact, compact_index, true)?;
        if !compact_index.is_empty() {
            let index = latest.as_ref().and_then(|s| s.index_manifest.as_deref());
            let mut live_index = self.table().live_index_entries(index)?;
            let gone: HashSet<(&[u8], i32, &str)> = append_index
                .iter()
                .filter(|e| e.kind == FileKind::Delete)
                .map(|e| (e.partition.as_slice(), e.bucket, e.file_name.as_str()))
                .collect();
            live_index.retain(|l| {
                !gone.contains(&(l.partition.as_slice(), l.bucket, l.file_name.as_str()))
            });
            live_index.extend(
                append_index
                    .iter()
                    .filter(|e| e.kind == FileKind::Add)
                    .cloned(),
            );
            self.check_index_changes(&live_index, compact_index)?;
        }
        let filter = crate::table::live::partitions_filter(
            self.table(),
            compact.iter().map(|e| e.partition.as_slice()),
        )?;
        let mut live =
            crate::table::live::live_entries_of(self.table(), previous, filter.as_ref())?;
        let parts: HashSet<&[u8]> = compact.iter().map(|e| &e.partition[..]).collect();
        live.extend(
            adds.iter()
                .filter(|e| parts.contains(&e.partition[..]))
                .cloned(),
        );
        self.check_compaction(&live, compact, latest.map(|s| s.id))
    }
}

#[cfg(test)]
mod tests {
    use super::super::safety::tests::{commit, live_rows, paths, rows, table, written};
    use super::*;
    use crate::commit::{CommitMessage, Overwrite};
    use crate::spec::manifest::DataFileMeta;
    use crate::spec::snapshot::{CommitKind, BATCH_COMMIT_IDENTIFIER};
    use crate::table::FileStoreTable;

    fn at(files: &[DataFileMeta], level: i32) -> Vec<DataFileMeta> {
        files
            .iter()
            .map(|f| DataFileMeta { level, ..f.clone() })
            .collect()
    }

    /// A message of `of`'s bucket compacting `before` into `after`.
    fn compaction(
        of: &CommitMessage,
        before: Vec<DataFileMeta>,
        after: Vec<DataFileMeta>,
    ) -> CommitMessage {
        CommitMessage {
            data_increment: crate::commit::DataIncrement::default(),
            compact_increment: crate::commit::CompactIncrement::of(before, after),
            restored_snapshot: None,
            ..of.clone()
        }
    }

    /// Three commits of disjoint keys (0..10, 10..20, 20..30) to partition 1: their messages.
    fn three_commits(t: &FileStoreTable) -> Vec<CommitMessage> {
        let mut out = vec![];
        for r in [0..10, 10..20, 20..30] {
            let m = written(t, &[rows(1, r)]);
            commit(t, &m).unwrap();
            out.extend(m);
        }
        out
    }

    fn files_of(msgs: &[CommitMessage]) -> Vec<DataFileMeta> {
        msgs.iter()
            .flat_map(|m| m.data_increment.new_files.clone())
            .collect()
    }

    fn live_levels(t: &FileStoreTable) -> Vec<(String, i32)> {
        let s = t.snapshot_manager().latest().unwrap().unwrap();
        let mut v: Vec<(String, i32)> = crate::table::live::live_entries(t, &s)
            .unwrap()
            .into_iter()
            .map(|e| (e.file.file_name, e.file.level))
            .collect();
        v.sort();
        v
    }

    #[test]
    fn upgrade_writes_one_compact_snapshot() {
        let dir = tempfile::tempdir().unwrap();
        let t = table(dir.path(), true);
        let msgs = three_commits(&t);
        let before = files_of(&msgs);
        let m = compaction(&msgs[0], before.clone(), at(&before, 5));
        assert_eq!(commit(&t, &[m]).unwrap(), Some(4));
        let s = t.snapshot_manager().snapshot(4).unwrap();
        assert_eq!(s.commit_kind, CommitKind::Compact);
        assert_eq!(s.delta_record_count, 0);
        assert_eq!(s.total_record_count, 30);
        assert_eq!(live_rows(&t), 30);
        assert!(live_levels(&t).iter().all(|(_, l)| *l == 5));
        assert_eq!(live_levels(&t).len(), 3);
    }

    #[test]
    fn new_files_and_compaction_write_append_then_compact() {
        let dir = tempfile::tempdir().unwrap();
        let t = table(dir.path(), true);
        let msgs = three_commits(&t);
        // a rewrite: the three files into one new file (its rows written by a writer)
        let out = written(&t, &[rows(1, 0..30)]);
        let mut m = compaction(
            &msgs[0],
            files_of(&msgs),
            at(&out[0].data_increment.new_files, 5),
        );
        m.data_increment.new_files = written(&t, &[rows(1, 100..105)])[0]
            .data_increment
            .new_files
            .clone();
        assert_eq!(commit(&t, &[m]).unwrap(), Some(5));
        let sm = t.snapshot_manager();
        let (a, c) = (sm.snapshot(4).unwrap(), sm.snapshot(5).unwrap());
        assert_eq!(a.commit_kind, CommitKind::Append);
        assert_eq!((a.delta_record_count, a.total_record_count), (5, 35));
        assert_eq!(c.commit_kind, CommitKind::Compact);
        // Java: ADD rows minus DELETE rows
        assert_eq!((c.delta_record_count, c.total_record_count), (0, 35));
        assert_eq!(live_levels(&t).len(), 2);
        assert_eq!(live_rows(&t), 35);
    }

    #[test]
    fn a_new_file_compacted_in_the_same_commit() {
        // Java's writer may compact a file it flushed in the same round: new file at level 0,
        // compaction input at level 0, output upgraded
        let dir = tempfile::tempdir().unwrap();
        let t = table(dir.path(), true);
        let mut m = written(&t, &[rows(1, 0..10)]).remove(0);
        m.compact_increment.compact_before = m.data_increment.new_files.clone();
        m.compact_increment.compact_after = at(&m.data_increment.new_files, 3);
        assert_eq!(commit(&t, &[m.clone()]).unwrap(), Some(2));
        assert_eq!(
            live_levels(&t),
            vec![(m.data_increment.new_files[0].file_name.clone(), 3)]
        );
    }

    #[test]
    fn compacting_files_no_longer_live_conflicts_and_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let t = table(dir.path(), true);
        let msgs = three_commits(&t);
        let before = files_of(&msgs);
        commit(&t, &[compaction(&msgs[0], before.clone(), at(&before, 5))]).unwrap();
        // the same inputs again (a second compaction of them): they moved up
        let again = compaction(&msgs[0], before[..1].to_vec(), at(&before[..1], 4));
        let e = commit(&t, &[again]).unwrap_err();
        assert!(matches!(e, Error::CommitConflict { .. }), "{e}");
        assert!(e.to_string().contains("no longer live"), "{e}");
        assert!(e.to_string().contains("now at level 5"), "{e}");
        assert_eq!(t.snapshot_manager().latest_id().unwrap(), Some(4));
        // with new files: the APPEND snapshot is not written either
        let mut mixed = compaction(&msgs[0], before[..1].to_vec(), at(&before[..1], 4));
        mixed.data_increment.new_files = written(&t, &[rows(1, 50..51)])[0]
            .data_increment
            .new_files
            .clone();
        let e = commit(&t, &[mixed]).unwrap_err();
        assert!(matches!(e, Error::CommitConflict { .. }), "{e}");
        assert_eq!(t.snapshot_manager().latest_id().unwrap(), Some(4));
        assert_eq!(live_rows(&t), 30);
    }

    #[test]
    fn compacting_overwritten_files_conflicts() {
        let dir = tempfile::tempdir().unwrap();
        let t = table(dir.path(), true);
        let msgs = three_commits(&t);
        FileStoreCommit::new(t.clone(), "o".into())
            .commit_as(
                &written(&t, &[rows(1, 0..3)]),
                BATCH_COMMIT_IDENTIFIER,
                Some(Overwrite::Dynamic),
            )
            .unwrap();
        let before = files_of(&msgs);
        let e = commit(&t, &[compaction(&msgs[0], before.clone(), at(&before, 5))]).unwrap_err();
        assert!(matches!(e, Error::CommitConflict { .. }), "{e}");
        assert!(
            e.to_string().contains("removed, compacted or overwrote"),
            "{e}"
        );
        assert_eq!(t.snapshot_manager().latest_id().unwrap(), Some(4));
        assert_eq!(live_rows(&t), 3);
    }

    #[test]
    fn overlapping_files_of_one_level_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let t = table(dir.path(), true);
        let a = written(&t, &[rows(1, 0..10)]);
        commit(&t, &a).unwrap();
        let b = written(&t, &[rows(1, 5..15)]);
        commit(&t, &b).unwrap();
        let (fa, fb) = (files_of(&a), files_of(&b));
        // both to level 2 at once
        let both = [fa.clone(), fb.clone()].concat();
        let e = commit(&t, &[compaction(&a[0], both.clone(), at(&both, 2))]).unwrap_err();
        assert!(matches!(e, Error::CommitConflict { .. }), "{e}");
        assert!(e.to_string().contains("LSM conflict"), "{e}");
        // one then the other into the same level
        commit(&t, &[compaction(&a[0], fa.clone(), at(&fa, 2))]).unwrap();
        let e = commit(&t, &[compaction(&b[0], fb.clone(), at(&fb, 2))]).unwrap_err();
        assert!(e.to_string().contains("LSM conflict"), "{e}");
        assert_eq!(t.snapshot_manager().latest_id().unwrap(), Some(3));
        // another level is fine
        assert_eq!(
            commit(&t, &[compaction(&b[0], fb.clone(), at(&fb, 1))]).unwrap(),
            Some(4)
        );
    }

    #[test]
    fn duplicates_are_refused_but_upgrades_are_not() {
        let dir = tempfile::tempdir().unwrap();
        let t = table(dir.path(), true);
        let msgs = three_commits(&t);
        let f = files_of(&msgs[..1]);
        // same name, same level: not an upgrade
        let e = commit(&t, &[compaction(&msgs[0], f.clone(), f.clone())]).unwrap_err();
        assert!(matches!(e, Error::DuplicateCommit { .. }), "{e}");
        // an output that is already live (and not an input)
        let e = commit(&t, &[compaction(&msgs[0], vec![], f.clone())]).unwrap_err();
        assert!(matches!(e, Error::DuplicateCommit { .. }), "{e}");
        // an input twice
        let twice = [f.clone(), f.clone()].concat();
        let e = commit(&t, &[compaction(&msgs[0], twice, at(&f, 2))]).unwrap_err();
        assert!(matches!(e, Error::DuplicateCommit { .. }), "{e}");
        // an output in new files and compaction outputs
        let mut m = compaction(&msgs[0], f.clone(), at(&f, 2));
        m.data_increment.new_files = at(&f, 2);
        let e = commit(&t, &[m]).unwrap_err();
        assert!(matches!(e, Error::DuplicateCommit { .. }), "{e}");
        assert_eq!(t.snapshot_manager().latest_id().unwrap(), Some(3));
        assert_eq!(
            commit(&t, &[compaction(&msgs[0], f.clone(), at(&f, 2))]).unwrap(),
            Some(4)
        );
    }

    #[test]
    fn abort_deletes_unreferenced_outputs_and_keeps_upgrades() {
        let dir = tempfile::tempdir().unwrap();
        let t = table(dir.path(), true);
        let msgs = three_commits(&t);
        let c = FileStoreCommit::new(t.clone(), "x".into());
        let out = written(&t, &[rows(1, 0..20)]);
        let before = files_of(&msgs);
        let (rewritten, upgraded) = (at(&out[0].data_increment.new_files, 4), at(&before[2..], 4));
        let m = compaction(
            &msgs[0],
            before.clone(),
            [rewritten.clone(), upgraded].concat(),
        );
        let outcome = c.abort(std::slice::from_ref(&m)).unwrap();
        assert_eq!(outcome.deleted, paths(&c, &out));
        assert!(outcome.referenced.is_empty());
        assert!(paths(&c, &msgs).iter().all(|p| p.exists()));
        // the aborted message can no longer be committed
        let e = commit(&t, &[m]).unwrap_err();
        assert!(matches!(e, Error::StaleCommitMessage { .. }), "{e}");
        // a committed compaction's outputs are referenced: kept
        let out = written(&t, &[rows(1, 0..30)]);
        let m = compaction(&msgs[0], before, at(&out[0].data_increment.new_files, 4));
        commit(&t, std::slice::from_ref(&m)).unwrap();
        let outcome = c.abort(&[m]).unwrap();
        assert!(outcome.deleted.is_empty());
        assert_eq!(outcome.referenced, paths(&c, &out));
    }

    #[test]
    fn concurrent_compactions_of_the_same_files_land_once_beside_appends() {
        let dir = tempfile::tempdir().unwrap();
        let t = table(dir.path(), true);
        let msgs = three_commits(&t);
        let before = files_of(&msgs);
        let compact = compaction(&msgs[0], before.clone(), at(&before, 5));
        let appends: Vec<Vec<CommitMessage>> = (0..2)
            .map(|i| written(&t, &[rows(1, 100 * (i + 1)..100 * (i + 1) + 10)]))
            .collect();
        let barrier = std::sync::Barrier::new(5);
        let (compacted, appended) = std::thread::scope(|s| {
            let c: Vec<_> = (0..3)
                .map(|_| {
                    s.spawn(|| {
                        barrier.wait();
                        commit(&t, std::slice::from_ref(&compact))
                    })
                })
                .collect();
            let a: Vec<_> = appends
                .iter()
                .map(|m| {
                    s.spawn(|| {
                        barrier.wait();
                        commit(&t, m)
                    })
                })
                .collect();
            let join = |v: Vec<std::thread::ScopedJoinHandle<'_, Result<Option<i64>>>>| {
                v.into_iter().map(|h| h.join().unwrap()).collect::<Vec<_>>()
            };
            (join(c), join(a))
        });
        assert!(appended.iter().all(|r| r.is_ok()), "{appended:?}");
        assert_eq!(compacted.iter().filter(|r| r.is_ok()).count(), 1);
        for r in compacted.iter().filter(|r| r.is_err()) {
            assert!(matches!(r, Err(Error::CommitConflict { .. })), "{r:?}");
        }
        let sm = t.snapshot_manager();
        let kinds: Vec<CommitKind> = (4..=6)
            .map(|i| sm.snapshot(i).unwrap().commit_kind)
            .collect();
        assert_eq!(
            kinds.iter().filter(|k| **k == CommitKind::Compact).count(),
            1
        );
        assert_eq!(sm.latest_id().unwrap(), Some(6));
        assert_eq!(live_rows(&t), 50);
        assert_eq!(sm.latest().unwrap().unwrap().total_record_count, 50);
    }

    #[test]
    fn compaction_messages_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let t = table(dir.path(), true);
        let msgs = three_commits(&t);
        let before = files_of(&msgs);
        let m = compaction(&msgs[0], before.clone(), at(&before, 5));
        assert_eq!(
            CommitMessage::from_bytes(&m.to_bytes().unwrap()).unwrap(),
            m
        );
        assert!(!m.is_empty());
    }
}
