//! Manifest merging at commit (paimon-format.md §9.1 step 3, Java's `ManifestFileMerger`).
//!
//! Without it every commit adds one manifest to the base list for good, and every read and
//! commit reads them all. Before a commit writes its base manifest list, the manifests of the
//! latest snapshot are merged:
//! - **full compaction**, once the manifests that must change (smaller than
//!   `manifest.target-file-size`, or holding DELETE entries) add up to
//!   `manifest.full-compaction-threshold-size`: every DELETE entry is dropped together with the
//!   ADD it cancels; large manifests that hold none of the deleted files stay as they are
//!   (partition stats let most of them be skipped without reading);
//! - otherwise **minor compaction**: consecutive manifests are merged into one each time they
//!   reach `manifest.target-file-size` together, and a tail of small ones once there are
//!   `manifest.merge-min-count` of them. ADD/DELETE pairs inside a merged group cancel; a DELETE
//!   whose ADD lies in an earlier group stays.
//!
//! Merged manifests are ordinary manifests: Java Paimon and pypaimon read them as any other.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use rayon::prelude::*;

use super::{new_file_name, FileStoreCommit};
use crate::error::Result;
use crate::spec::manifest::{
    merge_entries_keep_deletes, FileIdentifier, FileKind, ManifestEntry, ManifestFileMeta,
};
use crate::table::live::manifest_may_match;

fn size_of(m: &ManifestFileMeta) -> u64 {
    m.file_size.max(0) as u64
}

impl FileStoreCommit {
    /// Merge `input` (the latest snapshot's base then delta manifests, in order). New manifests
    /// are recorded in `written`, so that a failed or lost commit removes them.
    pub(super) fn merge_manifests(
        &self,
        input: Vec<ManifestFileMeta>,
        written: &mut Vec<PathBuf>,
    ) -> Result<Vec<ManifestFileMeta>> {
        if let Some(full) = self.try_full_manifest_compaction(&input, written)? {
            return Ok(full);
        }
        self.minor_manifest_compaction(input, written)
    }

    fn read_entries_of(&self, metas: &[ManifestFileMeta]) -> Result<Vec<Vec<ManifestEntry>>> {
        metas
            .par_iter()
            .map(|m| {
                let p = self.manifest_path(&m.file_name);
                let referrer = format!("the latest snapshot of table {}", self.table.name);
                crate::spec::read_manifest_entries_cached(&p, &referrer)
            })
            .collect()
    }

    fn minor_manifest_compaction(
        &self,
        input: Vec<ManifestFileMeta>,
        written: &mut Vec<PathBuf>,
    ) -> Result<Vec<ManifestFileMeta>> {
        let o = &self.table.options;
        let mut result = Vec::with_capacity(input.len());
        let mut candidates = vec![];
        let mut total = 0u64;
        for m in input {
            total += size_of(&m);
            candidates.push(m);
            if total >= o.manifest_target_file_size {
                self.merge_candidates(std::mem::take(&mut candidates), &mut result, written)?;
                total = 0;
            }
        }
        if candidates.len() >= o.manifest_merge_min_count {
            self.merge_candidates(candidates, &mut result, written)?;
        } else {
            result.extend(candidates);
        }
        Ok(result)
    }

    fn merge_candidates(
        &self,
        candidates: Vec<ManifestFileMeta>,
        result: &mut Vec<ManifestFileMeta>,
        written: &mut Vec<PathBuf>,
    ) -> Result<()> {
        if candidates.len() <= 1 {
            result.extend(candidates);
            return Ok(());
        }
        let entries = self.read_entries_of(&candidates)?.into_iter().flatten();
        let merged = merge_entries_keep_deletes(entries)?;
        result.extend(self.write_manifests_rolling(&merged, &candidates, written)?);
        Ok(())
    }

    fn try_full_manifest_compaction(
        &self,
        input: &[ManifestFileMeta],
        written: &mut Vec<PathBuf>,
    ) -> Result<Option<Vec<ManifestFileMeta>>> {
        let o = &self.table.options;
        let must_change = |m: &ManifestFileMeta| {
            m.num_deleted_files > 0 || size_of(m) < o.manifest_target_file_size
        };
        let delta_size: u64 = input.iter().filter(|m| must_change(m)).map(size_of).sum();
        if delta_size < o.manifest_full_compaction_threshold_size {
            return Ok(None);
        }
        // Manifests with deletes are read once: for the delete set now, for the rewrite below.
        let with_deletes: Vec<ManifestFileMeta> = input
            .iter()
            .filter(|m| m.num_deleted_files > 0)
            .cloned()
            .collect();
        let mut already_read: HashMap<String, Vec<ManifestEntry>> = with_deletes
            .iter()
            .map(|m| m.file_name.clone())
            .zip(self.read_entries_of(&with_deletes)?)
            .collect();
        let deleted: HashSet<FileIdentifier> = already_read
            .values()
            .flatten()
            .filter(|e| e.kind == FileKind::Delete)
            .map(|e| e.identifier())
            .collect();
        // Large manifests without deletes are kept unless they may hold a deleted file: with
        // no deletes none does; in a partitioned table only those whose partition stats admit
        // a partition with deletes can.
        let keys = self.table.partition_keys().to_vec();
        let types = self.table.partition_types()?;
        let touched = if deleted.is_empty() {
            None
        } else {
            crate::table::live::partitions_filter(
                &self.table,
                deleted.iter().map(|d| d.partition.as_slice()),
            )?
        };
        let mut result = vec![];
        let mut to_merge = vec![];
        for m in input {
            let may_hold_deleted = !deleted.is_empty()
                && touched
                    .as_ref()
                    .is_none_or(|f| manifest_may_match(m, &keys, &types, f));
            if must_change(m) || may_hold_deleted {
                to_merge.push(m.clone());
            } else {
                result.push(m.clone());
            }
        }
        if to_merge.len() <= 1 {
            return Ok(None);
        }
        let mut kept_entries = vec![];
        let unread: Vec<ManifestFileMeta> = to_merge
            .iter()
            .filter(|m| !already_read.contains_key(&m.file_name))
            .cloned()
            .collect();
        let mut fresh = self.read_entries_of(&unread)?.into_iter();
        for m in &to_merge {
            let entries = match already_read.remove(&m.file_name) {
                Some(e) => e,
                None => fresh.next().unwrap_or_default(),
            };
            let mut rewrite = must_change(m);
            let before = kept_entries.len();
            for e in entries {
                if e.kind == FileKind::Delete {
                    if !deleted.contains(&e.identifier()) {
                        // Its manifest under-counts its deletes (not written by Paimon's
                        // rules): dropping this DELETE could resurrect a file, so merge
                        // conservatively instead.
                        return Ok(None);
                    }
                    continue;
                }
                if deleted.contains(&e.identifier()) {
                    rewrite = true;
                } else {
                    kept_entries.push(e);
                }
            }
            if !rewrite {
                kept_entries.truncate(before);
                result.push(m.clone());
            }
        }
        result.extend(self.write_manifests_rolling(&kept_entries, &to_merge, written)?);
        Ok(Some(result))
    }

    /// Write `entries` as manifests of about `manifest.target-file-size` each, estimating the
    /// bytes per entry from the manifests they came from.
    fn write_manifests_rolling(
        &self,
        entries: &[ManifestEntry],
        sources: &[ManifestFileMeta],
        written: &mut Vec<PathBuf>,
    ) -> Result<Vec<ManifestFileMeta>> {
        if entries.is_empty() {
            return Ok(vec![]);
        }
        let bytes: u64 = sources.iter().map(size_of).sum();
        let count: u64 = sources
            .iter()
            .map(|m| (m.num_added_files + m.num_deleted_files).max(0) as u64)
            .sum();
        let per_entry = (bytes / count.max(1)).max(1);
        let chunk = (self.table.options.manifest_target_file_size / per_entry).max(1) as usize;
        let mut out = vec![];
        for (i, part) in entries.chunks(chunk).enumerate() {
            out.push(self.write_manifest(&new_file_name("manifest", i), part, written)?);
        }
        Ok(out)
    }
}
