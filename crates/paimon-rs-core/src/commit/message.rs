//! What a bucket writer (or a compaction task) hands to the committer: Java's
//! `CommitMessageImpl` of a [`DataIncrement`] (files the write added) and a
//! [`CompactIncrement`] (what compaction removed and added), each with room for changelog files
//! and index files (deletion vectors, hash indexes) for the writers that will produce them.
//!
//! The serialized form is the flat JSON that paimon_rs has always shipped (Spark tasks pickle
//! messages to the driver as `to_bytes`): `partition`, `bucket`, `total_buckets`,
//! `new_files`, `compact_before`, `compact_after`, `restored_snapshot`. The increments' other
//! lists are written only when not empty, so a message of today serializes byte for byte as
//! before, and a message of an older paimon_rs reads back unchanged.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::spec::manifest::{DataFileMeta, IndexFileMeta, DELETION_VECTORS_INDEX, HASH_INDEX};

/// Files a write added to a bucket (Java's `DataIncrement`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DataIncrement {
    /// New data files (level 0), added by the APPEND (or OVERWRITE) snapshot.
    pub new_files: Vec<DataFileMeta>,
    /// Data files the write removed (no writer of paimon_rs removes any yet).
    pub deleted_files: Vec<DataFileMeta>,
    /// Changelog files of the write (`changelog-producer = input`).
    pub changelog_files: Vec<DataFileMeta>,
    /// Index files the write added (dynamic bucket hash index files).
    pub new_index_files: Vec<IndexFileMeta>,
    /// Index files the write replaced.
    pub deleted_index_files: Vec<IndexFileMeta>,
}

impl DataIncrement {
    /// An increment of new data files only.
    pub fn new_files(new_files: Vec<DataFileMeta>) -> Self {
        DataIncrement {
            new_files,
            ..Default::default()
        }
    }

    pub fn is_empty(&self) -> bool {
        self.new_files.is_empty()
            && self.deleted_files.is_empty()
            && self.changelog_files.is_empty()
            && self.new_index_files.is_empty()
            && self.deleted_index_files.is_empty()
    }
}

/// What compaction changed in a bucket (Java's `CompactIncrement`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CompactIncrement {
    /// Compaction inputs, removed by the COMPACT snapshot (DELETE entries): files live in the
    /// latest snapshot (or added by `new_files` of the same commit), at their current level.
    pub compact_before: Vec<DataFileMeta>,
    /// Compaction outputs, added by the COMPACT snapshot (ADD entries). A file of
    /// `compact_before` may reappear here under the same name at a higher level (an upgrade:
    /// the file is moved up without being rewritten).
    pub compact_after: Vec<DataFileMeta>,
    /// Changelog files of the compaction (`full-compaction` / `lookup` producers; not written
    /// yet).
    pub changelog_files: Vec<DataFileMeta>,
    /// Index files the compaction added (deletion vectors maintained by lookup compaction).
    pub new_index_files: Vec<IndexFileMeta>,
    /// Index files the compaction replaced.
    pub deleted_index_files: Vec<IndexFileMeta>,
}

impl CompactIncrement {
    /// A compaction's inputs and outputs.
    pub fn of(compact_before: Vec<DataFileMeta>, compact_after: Vec<DataFileMeta>) -> Self {
        CompactIncrement {
            compact_before,
            compact_after,
            ..Default::default()
        }
    }

    pub fn is_empty(&self) -> bool {
        self.compact_before.is_empty()
            && self.compact_after.is_empty()
            && self.changelog_files.is_empty()
            && self.new_index_files.is_empty()
            && self.deleted_index_files.is_empty()
    }
}

/// What one bucket writer hands to the committer. Serializable, so that distributed tasks
/// (Spark) can ship it to the driver.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(from = "Wire", into = "Wire")]
pub struct CommitMessage {
    /// Serialized partition BinaryRow (manifest form).
    pub partition: Vec<u8>,
    pub bucket: i32,
    pub total_buckets: i32,
    /// Files the write added.
    pub data_increment: DataIncrement,
    /// What compaction changed.
    pub compact_increment: CompactIncrement,
    /// The snapshot the writer restored this bucket's sequence numbers from: `Some(None)` =
    /// the table was empty. `None` = not recorded (a message serialized by an older paimon_rs):
    /// the concurrent-writer check skips it.
    pub restored_snapshot: Option<Option<i64>>,
}

impl CommitMessage {
    pub fn is_empty(&self) -> bool {
        self.data_increment.is_empty() && self.compact_increment.is_empty()
    }

    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        serde_json::to_vec(self)
            .map_err(|e| Error::Internal(format!("commit message serialization: {e}")))
    }

    pub fn from_bytes(b: &[u8]) -> Result<Self> {
        serde_json::from_slice(b)
            .map_err(|e| Error::invalid(format!("not a serialized commit message: {e}")))
    }

    /// Refuse what the committer cannot land yet: index files other than deletion vectors
    /// and hash indexes (no writer of paimon_rs produces them; a message that carries them
    /// comes from elsewhere and must not lose them silently). Changelog files,
    /// deletion-vector and dynamic-bucket hash index files are committed; removed data files
    /// only in a partition delete's messages (commit/partition_delete.rs).
    pub(super) fn check_supported(&self) -> Result<()> {
        let (d, c) = (&self.data_increment, &self.compact_increment);
        let other_index = [
            &d.new_index_files,
            &d.deleted_index_files,
            &c.new_index_files,
            &c.deleted_index_files,
        ]
        .into_iter()
        .flatten()
        .any(|f| f.index_type != DELETION_VECTORS_INDEX && f.index_type != HASH_INDEX);
        // deleted data files: a partition delete's (commit/partition_delete.rs, committed apart)
        let what = if other_index {
            "index files other than deletion vectors and hash indexes"
        } else {
            return Ok(());
        };
        Err(Error::unsupported(format!(
            "committing a message with {what} (bucket {}): paimon_rs does not commit them yet",
            self.bucket
        )))
    }
}

fn is_empty<T>(v: &[T]) -> bool {
    v.is_empty()
}

/// The serialized form of a [`CommitMessage`]: flat, as paimon_rs has always written it.
#[derive(Serialize, Deserialize)]
struct Wire {
    partition: Vec<u8>,
    bucket: i32,
    total_buckets: i32,
    new_files: Vec<DataFileMeta>,
    compact_before: Vec<DataFileMeta>,
    compact_after: Vec<DataFileMeta>,
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    restored_snapshot: Option<Option<i64>>,
    #[serde(default, skip_serializing_if = "is_empty")]
    deleted_files: Vec<DataFileMeta>,
    #[serde(default, skip_serializing_if = "is_empty")]
    changelog_files: Vec<DataFileMeta>,
    #[serde(default, skip_serializing_if = "is_empty")]
    new_index_files: Vec<IndexFileMeta>,
    #[serde(default, skip_serializing_if = "is_empty")]
    deleted_index_files: Vec<IndexFileMeta>,
    #[serde(default, skip_serializing_if = "is_empty")]
    compact_changelog_files: Vec<DataFileMeta>,
    #[serde(default, skip_serializing_if = "is_empty")]
    compact_new_index_files: Vec<IndexFileMeta>,
    #[serde(default, skip_serializing_if = "is_empty")]
    compact_deleted_index_files: Vec<IndexFileMeta>,
}

/// A field that is present (even as `null`) deserializes to `Some`; absent, `default` gives None.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Option<i64>>, D::Error> {
    Option::<i64>::deserialize(d).map(Some)
}

impl From<Wire> for CommitMessage {
    fn from(w: Wire) -> Self {
        CommitMessage {
            partition: w.partition,
            bucket: w.bucket,
            total_buckets: w.total_buckets,
            data_increment: DataIncrement {
                new_files: w.new_files,
                deleted_files: w.deleted_files,
                changelog_files: w.changelog_files,
                new_index_files: w.new_index_files,
                deleted_index_files: w.deleted_index_files,
            },
            compact_increment: CompactIncrement {
                compact_before: w.compact_before,
                compact_after: w.compact_after,
                changelog_files: w.compact_changelog_files,
                new_index_files: w.compact_new_index_files,
                deleted_index_files: w.compact_deleted_index_files,
            },
            restored_snapshot: w.restored_snapshot,
        }
    }
}

impl From<CommitMessage> for Wire {
    fn from(m: CommitMessage) -> Self {
        let (d, c) = (m.data_increment, m.compact_increment);
        Wire {
            partition: m.partition,
            bucket: m.bucket,
            total_buckets: m.total_buckets,
            new_files: d.new_files,
            compact_before: c.compact_before,
            compact_after: c.compact_after,
            restored_snapshot: m.restored_snapshot,
            deleted_files: d.deleted_files,
            changelog_files: d.changelog_files,
            new_index_files: d.new_index_files,
            deleted_index_files: d.deleted_index_files,
            compact_changelog_files: c.changelog_files,
            compact_new_index_files: c.new_index_files,
            compact_deleted_index_files: c.deleted_index_files,
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn file(name: &str) -> DataFileMeta {
        use crate::spec::manifest::SimpleStats;
        DataFileMeta {
            file_name: name.to_string(),
            file_size: 10,
            row_count: 5,
            min_key: vec![1],
            max_key: vec![5],
            key_stats: SimpleStats::empty(),
            value_stats: SimpleStats::empty(),
            min_sequence_number: 0,
            max_sequence_number: 4,
            schema_id: 0,
            level: 0,
            extra_files: vec![],
            creation_time: Some(1),
            delete_row_count: Some(0),
            embedded_index: None,
            file_source: Some(0),
            value_stats_cols: None,
            external_path: None,
            first_row_id: None,
            write_cols: None,
            write_cols_sequences: None,
        }
    }

    /// The flat form of before the increments, written field by field as the old struct did.
    #[derive(Serialize)]
    struct Old {
        partition: Vec<u8>,
        bucket: i32,
        total_buckets: i32,
        new_files: Vec<DataFileMeta>,
        compact_before: Vec<DataFileMeta>,
        compact_after: Vec<DataFileMeta>,
        #[serde(skip_serializing_if = "Option::is_none")]
        restored_snapshot: Option<Option<i64>>,
    }

    fn message() -> CommitMessage {
        CommitMessage {
            partition: vec![0, 0, 0, 0],
            bucket: 3,
            total_buckets: 4,
            data_increment: DataIncrement::new_files(vec![file("a")]),
            compact_increment: CompactIncrement::of(vec![file("b")], vec![file("c")]),
            restored_snapshot: Some(None),
        }
    }

    /// A message serializes byte for byte as before the increments (Spark ships these bytes
    /// between processes that may run different builds), and old bytes read back.
    #[test]
    fn serialized_form_is_unchanged() {
        let m = message();
        let old = Old {
            partition: m.partition.clone(),
            bucket: 3,
            total_buckets: 4,
            new_files: vec![file("a")],
            compact_before: vec![file("b")],
            compact_after: vec![file("c")],
            restored_snapshot: Some(None),
        };
        let bytes = serde_json::to_vec(&old).unwrap();
        assert_eq!(m.to_bytes().unwrap(), bytes);
        assert_eq!(CommitMessage::from_bytes(&bytes).unwrap(), m);
        let unrecorded = Old {
            restored_snapshot: None,
            ..old
        };
        let back = CommitMessage::from_bytes(&serde_json::to_vec(&unrecorded).unwrap()).unwrap();
        assert_eq!(back.restored_snapshot, None);
    }

    /// Changelog and index files round-trip; the committer takes changelog files, deletion-vector
    /// and hash index files, and refuses other index files for now.
    #[test]
    fn changelog_and_index_files_round_trip_and_index_files_are_refused() {
        let mut m = message();
        assert!(m.check_supported().is_ok());
        m.compact_increment.changelog_files.push(file("log"));
        m.data_increment.new_index_files.push(IndexFileMeta {
            index_type: "BTREE".into(),
            file_name: "index-1".into(),
            file_size: 10,
            row_count: 2,
            dv_ranges: None,
            external_path: None,
            global_index: None,
        });
        let back = CommitMessage::from_bytes(&m.to_bytes().unwrap()).unwrap();
        assert_eq!(back, m);
        let e = m.check_supported().unwrap_err().to_string();
        assert!(e.contains("index files other than deletion vectors"), "{e}");
        assert!(!m.is_empty());
        m.data_increment.new_index_files[0].index_type = DELETION_VECTORS_INDEX.into();
        assert!(m.check_supported().is_ok());
        m.data_increment.new_index_files[0].index_type = HASH_INDEX.into();
        assert!(m.check_supported().is_ok());
    }
}
