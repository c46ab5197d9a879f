//! Splits: the unit of read work. Serializable so that a distributed engine (Spark) can ship
//! them to tasks.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::deletion::DeletionFile;

use crate::error::{Error, Result};
use crate::spec::manifest::DataFileMeta;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Split {
    pub snapshot_id: i64,
    /// Serialized partition BinaryRow.
    pub partition: Vec<u8>,
    pub bucket: i32,
    pub total_buckets: i32,
    /// Bucket directory relative to the table root, e.g. `dt=2024-01-01/bucket-0`.
    pub bucket_path: String,
    pub files: Vec<DataFileMeta>,
    /// The files can be read by concatenation (no two share a key).
    pub raw_convertible: bool,
    /// Deletion vectors of the files (by data file name; deletion-vector tables): where each is,
    /// read when its file is read.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub deletion_files: BTreeMap<String, DeletionFile>,
    /// The files are changelog files (an incremental read in `changelog` mode): read without
    /// merging, every record as stored with its row kind, in file order.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub changelog: bool,
    /// An incremental read between two tags of a primary-key deletion-vector table (Java's
    /// `IncrementalSplit`, read by `IncrementalDiffSplitRead`): `files` and `deletion_files`
    /// are the end tag's side, this the start tag's; the read returns the key diff of the two
    /// (`read::diff`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff_before: Option<DiffBefore>,
}

/// The start tag's side of a diff split: its files of the bucket that are not in the end tag
/// with the same deletion vector, and their vectors in the start tag.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiffBefore {
    pub files: Vec<DataFileMeta>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub deletion_files: BTreeMap<String, DeletionFile>,
}

impl Split {
    pub fn row_count(&self) -> i64 {
        self.files.iter().map(|f| f.row_count).sum()
    }

    pub fn file_size(&self) -> i64 {
        self.files.iter().map(|f| f.file_size).sum()
    }

    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        serde_json::to_vec(self).map_err(|e| Error::Internal(format!("split serialization: {e}")))
    }

    pub fn from_bytes(b: &[u8]) -> Result<Self> {
        serde_json::from_slice(b)
            .map_err(|e| Error::invalid(format!("not a serialized split: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(changelog: bool) -> Split {
        Split {
            snapshot_id: 3,
            partition: vec![0; 8],
            bucket: 1,
            total_buckets: 2,
            bucket_path: "bucket-1".into(),
            files: vec![],
            raw_convertible: false,
            deletion_files: BTreeMap::new(),
            changelog,
            diff_before: None,
        }
    }

    /// The changelog flag survives serialization (the binding pickles splits for Spark), and a
    /// split serialized before the flag existed reads as a data split.
    #[test]
    fn changelog_flag_round_trips_and_defaults_to_data() {
        for c in [false, true] {
            let s = split(c);
            let b = s.to_bytes().unwrap();
            assert_eq!(Split::from_bytes(&b).unwrap(), s);
            assert_eq!(String::from_utf8_lossy(&b).contains("changelog"), c);
        }
        let old = br#"{"snapshot_id":3,"partition":[0,0,0,0,0,0,0,0],"bucket":1,"total_buckets":2,"bucket_path":"bucket-1","files":[],"raw_convertible":true}"#;
        assert!(!Split::from_bytes(old).unwrap().changelog);
        assert!(Split::from_bytes(old).unwrap().diff_before.is_none());
    }

    /// A diff split's start-tag side survives serialization (Spark ships it to a task).
    #[test]
    fn diff_side_round_trips() {
        let mut s = split(false);
        s.diff_before = Some(DiffBefore {
            files: vec![],
            deletion_files: BTreeMap::new(),
        });
        let b = s.to_bytes().unwrap();
        assert!(String::from_utf8_lossy(&b).contains("diff_before"));
        assert_eq!(Split::from_bytes(&b).unwrap(), s);
        assert!(!String::from_utf8_lossy(&split(false).to_bytes().unwrap()).contains("diff_before"));
    }
}
