//! An overwrite that writes back rows it read (a sort compaction of a deletion-vector table,
//! compact/sort_compact.rs) must replace exactly what it read: a delete committed meanwhile
//! marked rows of a file it rewrites (a new deletion-vector index file, or a replaced one), an
//! append added a file, a compaction replaced files: the overwrite would bring deleted rows back
//! or drop rows, so it is refused as a conflict. Java's overwrite replaces whatever the
//! partitions hold at commit time; this check is stricter (paimon-behaviour.md §16).

use std::collections::{BTreeMap, BTreeSet};

use super::FileStoreCommit;
use crate::error::{Error, Result};
use crate::spec::manifest::{FileKind, IndexManifestEntry, ManifestEntry};

/// What an overwrite must replace, per partition (serialized): the data files and the index
/// files it read at snapshot `base`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExpectedReplace {
    pub base: i64,
    pub files: BTreeMap<Vec<u8>, BTreeSet<String>>,
    pub index: BTreeMap<Vec<u8>, BTreeSet<String>>,
}

impl FileStoreCommit {
    /// Refuse an overwrite whose replaced data files (`delta`'s DELETE entries) or index files
    /// (DELETE entries of `index`) differ, in a partition it replaces or writes (`adds`), from
    /// what `expected` says it read.
    pub(super) fn check_expected_replace(
        &self,
        expected: &ExpectedReplace,
        adds: &[ManifestEntry],
        delta: &[ManifestEntry],
        index: &[IndexManifestEntry],
    ) -> Result<()> {
        let mut files: BTreeMap<&[u8], BTreeSet<&str>> = BTreeMap::new();
        let mut indexes: BTreeMap<&[u8], BTreeSet<&str>> = BTreeMap::new();
        for a in adds {
            files.entry(&a.partition).or_default();
        }
        for d in delta.iter().filter(|d| d.kind == FileKind::Delete) {
            files
                .entry(&d.partition)
                .or_default()
                .insert(&d.file.file_name);
        }
        for e in index.iter().filter(|e| e.kind == FileKind::Delete) {
            indexes
                .entry(&e.partition)
                .or_default()
                .insert(&e.file_name);
            files.entry(&e.partition).or_default();
        }
        let none = BTreeSet::new();
        for (p, got) in &files {
            let want = expected.files.get(*p).unwrap_or(&none);
            let got_index = indexes.get(p).cloned().unwrap_or_default();
            let want_index = expected.index.get(*p).unwrap_or(&none);
            let same = got.len() == want.len()
                && want.iter().all(|f| got.contains(f.as_str()))
                && got_index.len() == want_index.len()
                && want_index.iter().all(|f| got_index.contains(f.as_str()));
            if !same {
                let changed: Vec<&str> = got
                    .iter()
                    .copied()
                    .filter(|f| !want.contains(*f))
                    .chain(want.iter().map(String::as_str).filter(|f| !got.contains(f)))
                    .chain(
                        got_index
                            .iter()
                            .copied()
                            .filter(|f| !want_index.contains(*f)),
                    )
                    .chain(
                        want_index
                            .iter()
                            .map(String::as_str)
                            .filter(|f| !got_index.contains(f)),
                    )
                    .take(3)
                    .collect();
                return Err(Error::CommitConflict {
                    table: self.table().name.clone(),
                    message: format!(
                        "Overwrite conflict detected: partition {} changed after snapshot {} \
                         that this rewrite read (data or deletion-vector index files \
                         {changed:?} added or removed by a concurrent commit: a delete, a write \
                         or a compaction); overwriting it would bring deleted rows back or drop \
                         rows; give up committing",
                        self.partition_label(p),
                        expected.base
                    ),
                });
            }
        }
        Ok(())
    }
}
