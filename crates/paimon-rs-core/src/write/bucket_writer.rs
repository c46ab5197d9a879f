//! A bucket's writer of either kind ([`MergeTreeWriter`] for primary-key tables,
//! [`AppendWriter`] for append tables) behind the [`RecordWriter`] trait: what the table
//! write holds per (partition, bucket). Kept apart from the trait so the writers can import
//! the trait without importing each other.

use super::append_writer::AppendWriter;
use super::deletion_vectors::DeletionVectorsMaintainer;
use super::merge_tree_writer::MergeTreeWriter;
use super::record_writer::RecordWriter;
use crate::spec::manifest::DataFileMeta;

/// A bucket writer of either kind; dereferences to the [`RecordWriter`] it holds.
pub(crate) enum BucketWriter {
    MergeTree(MergeTreeWriter),
    Append(AppendWriter),
}

impl std::ops::Deref for BucketWriter {
    type Target = dyn RecordWriter;

    fn deref(&self) -> &Self::Target {
        match self {
            BucketWriter::MergeTree(w) => w,
            BucketWriter::Append(w) => w,
        }
    }
}

impl std::ops::DerefMut for BucketWriter {
    fn deref_mut(&mut self) -> &mut Self::Target {
        match self {
            BucketWriter::MergeTree(w) => w,
            BucketWriter::Append(w) => w,
        }
    }
}

impl BucketWriter {
    /// The bucket's files and deletion vectors as the writer sees them, the writer dropped.
    pub fn into_restore(self) -> (Vec<DataFileMeta>, Option<DeletionVectorsMaintainer>) {
        match self {
            BucketWriter::MergeTree(w) => w.into_restore(),
            BucketWriter::Append(w) => w.into_restore(),
        }
    }
}
