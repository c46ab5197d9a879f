//! A delete whose predicate names partition columns only (pypaimon's `TableUpdate.
//! delete_by_predicate`, Java's Spark `DELETE FROM ... WHERE <partition filter>`, which becomes
//! `truncatePartitions`): the partitions the predicate matches are dropped whole, on any table
//! (deletion vectors or not), instead of marking rows.
//!
//! As pypaimon's, the delete is prepared and committed apart: [`partition_delete_messages`]
//! lists, per partition and bucket of the snapshot read, its live data files and index files as
//! deleted; committing such messages is an OVERWRITE of those partitions (Java's
//! `dropPartitions`) that must replace exactly the files the messages list (the
//! [`ExpectedReplace`] check of commit/rewrite_check.rs): a write, delete or compaction of one
//! of those partitions committed since the snapshot read is a conflict ("Overwrite conflict
//! detected", pypaimon's words), never a silent drop of rows the delete did not see.

use std::collections::BTreeMap;

use arrow_array::Array;

use super::{CommitMessage, DataIncrement, ExpectedReplace, FileStoreCommit, Overwrite};
use crate::error::{Error, Result};
use crate::predicate::Predicate;
use crate::spec::binary_row::deserialize_row;
use crate::spec::manifest::IndexFileMeta;
use crate::spec::partition::PartitionSpec;
use crate::table::FileStoreTable;

/// The commit messages that drop the partitions of snapshot `snapshot_id` that `filter` (a
/// predicate on partition columns) matches: one per partition and bucket holding live data or
/// index files, listing them as deleted. Nothing is written or committed.
pub fn partition_delete_messages(
    table: &FileStoreTable,
    snapshot_id: i64,
    filter: &Predicate,
) -> Result<Vec<CommitMessage>> {
    if table.partition_keys().is_empty() {
        return Err(Error::invalid(format!(
            "partition delete of {}: the table has no partition keys",
            table.name
        )));
    }
    let snapshot = table.snapshot_manager().snapshot(snapshot_id)?;
    // the stats test prunes (it answers "might match"); each partition is then decided exactly
    let entries = crate::table::live::live_entries_filtered(table, &snapshot, Some(filter))?;
    let mut exact = ExactMatch::new(table, filter)?;
    let mut by: Messages = BTreeMap::new();
    for e in &entries {
        if !exact.matches(&e.partition)? {
            continue;
        }
        message(
            &mut by,
            &e.partition,
            e.bucket,
            e.total_buckets,
            snapshot_id,
        )
        .data_increment
        .deleted_files
        .push(e.file.clone());
    }
    let index = table.live_index_entries(snapshot.index_manifest.as_deref())?;
    for e in index {
        if !exact.matches(&e.partition)? {
            continue;
        }
        let total = by
            .iter()
            .find(|((p, _), _)| *p == e.partition)
            .map_or(table.options.bucket, |(_, m)| m.total_buckets);
        message(&mut by, &e.partition, e.bucket, total, snapshot_id)
            .data_increment
            .deleted_index_files
            .push(IndexFileMeta {
                index_type: e.index_type,
                file_name: e.file_name,
                file_size: e.file_size,
                row_count: e.row_count,
                dv_ranges: e.dv_ranges,
                external_path: e.external_path,
                global_index: e.global_index,
            });
    }
    Ok(by.into_values().collect())
}

/// Whether a partition matches the filter, decided exactly (SQL semantics: a comparison with
/// null is not true) by evaluating the filter row-wise on a one-row batch of the partition's
/// values, once per distinct partition. `Predicate::test` is not enough: on stats it answers
/// "might match" (true for `contains`, `endswith`, `like`, ...), which would drop partitions the
/// predicate does not match.
struct ExactMatch<'a> {
    filter: &'a Predicate,
    keys: &'a [String],
    types: Vec<crate::spec::types::DataType>,
    schema: std::sync::Arc<arrow_schema::Schema>,
    seen: std::collections::HashMap<Vec<u8>, bool>,
}

impl<'a> ExactMatch<'a> {
    fn new(table: &'a FileStoreTable, filter: &'a Predicate) -> Result<Self> {
        let keys = table.partition_keys();
        let types = table.partition_types()?;
        if let Some(f) = filter.fields().into_iter().find(|f| !keys.contains(f)) {
            return Err(Error::invalid(format!(
                "partition delete of {}: the predicate names '{f}', which is not a partition \
                 column",
                table.name
            )));
        }
        let fields: Vec<arrow_schema::Field> = keys
            .iter()
            .zip(&types)
            .map(|(k, t)| arrow_schema::Field::new(k, t.to_arrow(), true))
            .collect();
        Ok(ExactMatch {
            filter,
            keys,
            types,
            schema: std::sync::Arc::new(arrow_schema::Schema::new(fields)),
            seen: Default::default(),
        })
    }

    fn matches(&mut self, partition: &[u8]) -> Result<bool> {
        if let Some(&m) = self.seen.get(partition) {
            return Ok(m);
        }
        let vals = deserialize_row(&self.types, partition)?;
        let cols = self
            .types
            .iter()
            .zip(vals)
            .map(|(t, v)| crate::spec::binary_row::datums_to_arrow(t, &[v]))
            .collect::<Result<Vec<_>>>()?;
        let batch = arrow_array::RecordBatch::try_new(self.schema.clone(), cols)?;
        let type_of = |n: &str| {
            let i = self.keys.iter().position(|k| k == n)?;
            self.types.get(i).cloned()
        };
        let mask = self.filter.evaluate(&batch, &type_of)?;
        let m = mask.len() == 1 && mask.is_valid(0) && mask.value(0);
        self.seen.insert(partition.to_vec(), m);
        Ok(m)
    }
}

/// The messages of [`partition_delete_messages`] by partition and bucket.
type Messages = BTreeMap<(Vec<u8>, i32), CommitMessage>;

/// The message of (`partition`, `bucket`) in `by`, a new empty one read from `snapshot_id` if
/// there is none yet.
fn message<'a>(
    by: &'a mut Messages,
    partition: &[u8],
    bucket: i32,
    total_buckets: i32,
    snapshot_id: i64,
) -> &'a mut CommitMessage {
    by.entry((partition.to_vec(), bucket))
        .or_insert_with(|| CommitMessage {
            partition: partition.to_vec(),
            bucket,
            total_buckets,
            data_increment: DataIncrement::default(),
            compact_increment: Default::default(),
            restored_snapshot: Some(Some(snapshot_id)),
        })
}

/// Whether `m` is a message of [`partition_delete_messages`] (it deletes data files).
pub(super) fn is_partition_delete(m: &CommitMessage) -> bool {
    !m.data_increment.deleted_files.is_empty()
}

impl FileStoreCommit {
    /// Commit the messages of [`partition_delete_messages`]: an OVERWRITE dropping their
    /// partitions, refused (`CommitConflict`) if those partitions no longer hold exactly the
    /// files the messages list. Refused (`Unsupported`) beside other messages or without the
    /// snapshot they were read from.
    pub(super) fn commit_partition_delete(
        &self,
        messages: &[CommitMessage],
        commit_identifier: i64,
        overwrite: Option<Overwrite<'_>>,
    ) -> Result<Option<i64>> {
        let refuse = |why: &str| {
            Err(Error::unsupported(format!(
                "committing a message with deleted data files (a partition delete) {why}"
            )))
        };
        if overwrite.is_some() {
            return refuse("as an overwrite");
        }
        let mut base = None;
        for m in messages {
            let d = &m.data_increment;
            // a bucket may hold only an index file (a dynamic-bucket hash index whose rows
            // were all deleted and compacted away): its message deletes that file alone
            if (d.deleted_files.is_empty() && d.deleted_index_files.is_empty())
                || !d.new_files.is_empty()
                || !d.changelog_files.is_empty()
                || !d.new_index_files.is_empty()
                || !m.compact_increment.is_empty()
            {
                return refuse(
                    "together with new files, compactions or other messages: commit it alone",
                );
            }
            match (m.restored_snapshot, base) {
                (Some(Some(s)), None) => base = Some(s),
                (Some(Some(s)), Some(b)) if s == b => {}
                _ => return refuse("without the one snapshot its files were read from"),
            }
        }
        let Some(base) = base else {
            return Ok(None);
        };
        let types = self.table().partition_types()?;
        let keys = self.table().partition_keys();
        let mut expected = ExpectedReplace {
            base,
            ..Default::default()
        };
        let mut specs: Vec<PartitionSpec> = vec![];
        for m in messages {
            if !expected.files.contains_key(&m.partition) {
                let vals = deserialize_row(&types, &m.partition)?;
                specs.push(keys.iter().cloned().zip(vals).collect());
            }
            let d = &m.data_increment;
            expected
                .files
                .entry(m.partition.clone())
                .or_default()
                .extend(d.deleted_files.iter().map(|f| f.file_name.clone()));
            expected
                .index
                .entry(m.partition.clone())
                .or_default()
                .extend(d.deleted_index_files.iter().map(|f| f.file_name.clone()));
        }
        FileStoreCommit::new(self.table().clone(), self.commit_user().to_string())
            .expecting_replace(expected)
            .commit_inner(&[], commit_identifier, Some(Overwrite::Partitions(&specs)))
    }
}

#[cfg(test)]
mod tests {
    use super::super::safety::tests::{commit, rows, table, written};
    use super::*;
    use crate::predicate::LeafOp;
    use crate::spec::datum::Datum;

    fn partitions(t: &FileStoreTable) -> Vec<Vec<u8>> {
        let latest = t.snapshot_manager().latest().unwrap().unwrap();
        let mut ps: Vec<Vec<u8>> = crate::table::live::live_entries(t, &latest)
            .unwrap()
            .into_iter()
            .map(|e| e.partition)
            .collect();
        ps.sort();
        ps.dedup();
        ps
    }

    /// The messages of partition `p` = 1 drop it; a write to it after they were read makes
    /// their commit an "Overwrite conflict", a write to another partition does not.
    #[test]
    fn partition_delete_drops_what_it_read_or_conflicts() {
        for pk in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let t = table(dir.path(), pk);
            commit(&t, &written(&t, &[rows(1, 0..3), rows(2, 0..2)])).unwrap();
            let p1 = Predicate::leaf("p", LeafOp::Equal, vec![Some(Datum::Int(1))]).unwrap();
            let sid = |t: &FileStoreTable| t.snapshot_manager().latest().unwrap().unwrap().id;
            let msgs = partition_delete_messages(&t, sid(&t), &p1).unwrap();
            assert_eq!(msgs.len(), 1);
            assert!(msgs
                .iter()
                .all(|m| m.restored_snapshot == Some(Some(sid(&t)))));
            commit(&t, &written(&t, &[rows(1, 5..6)])).unwrap();
            let e = commit(&t, &msgs).unwrap_err();
            assert!(
                matches!(&e, Error::CommitConflict { message, .. }
                    if message.contains("Overwrite conflict detected")),
                "{e}"
            );
            assert_eq!(partitions(&t).len(), 2);
            let msgs = partition_delete_messages(&t, sid(&t), &p1).unwrap();
            commit(&t, &written(&t, &[rows(2, 5..6)])).unwrap();
            let before = sid(&t);
            assert_eq!(commit(&t, &msgs).unwrap(), Some(before + 1));
            let latest = t.snapshot_manager().latest().unwrap().unwrap();
            assert_eq!(
                latest.commit_kind,
                crate::spec::snapshot::CommitKind::Overwrite
            );
            assert_eq!(partitions(&t).len(), 1);
        }
    }

    /// Beside a message of new files, or as an overwrite, they are refused.
    #[test]
    fn partition_delete_messages_are_committed_alone() {
        let dir = tempfile::tempdir().unwrap();
        let t = table(dir.path(), false);
        commit(&t, &written(&t, &[rows(1, 0..3)])).unwrap();
        let p1 = Predicate::leaf("p", LeafOp::Equal, vec![Some(Datum::Int(1))]).unwrap();
        let sid = t.snapshot_manager().latest().unwrap().unwrap().id;
        let mut msgs = partition_delete_messages(&t, sid, &p1).unwrap();
        msgs.extend(written(&t, &[rows(2, 0..1)]));
        let e = commit(&t, &msgs).unwrap_err();
        assert!(e.to_string().contains("commit it alone"), "{e}");
    }

    /// Partitions are chosen exactly (row-wise on their values), and a predicate naming a
    /// non-partition column is refused rather than tested as "might match" on every partition.
    #[test]
    fn partition_delete_chooses_partitions_exactly() {
        let dir = tempfile::tempdir().unwrap();
        let t = table(dir.path(), false);
        commit(
            &t,
            &written(&t, &[rows(1, 0..1), rows(2, 0..1), rows(3, 0..1)]),
        )
        .unwrap();
        let sid = t.snapshot_manager().latest().unwrap().unwrap().id;
        let ne2 = Predicate::leaf("p", LeafOp::NotEqual, vec![Some(Datum::Int(2))]).unwrap();
        assert_eq!(partition_delete_messages(&t, sid, &ne2).unwrap().len(), 2);
        let k = Predicate::leaf("k", LeafOp::Equal, vec![Some(Datum::BigInt(0))]).unwrap();
        let e = partition_delete_messages(&t, sid, &k).unwrap_err();
        assert!(e.to_string().contains("not a partition column"), "{e}");
    }
}
