//! Long-lived changelogs (Java's `Changelog`, `ChangelogManager`, `ExpireChangelogImpl`,
//! `ChangelogDeletion`; paimon-format.md §2, §9.3): when `changelog.num-retained.min` / `.max`
//! or `changelog.time-retained` retain longer than the snapshot options (the changelog is
//! *decoupled*), a snapshot expiry writes each expired snapshot as `changelog/changelog-<id>`
//! (the snapshot's JSON, unchanged) in the branch's directory, with `changelog/LATEST` and
//! `changelog/EARLIEST` hints as for snapshots. Readers of the changelog (incremental reads,
//! streaming) read an expired snapshot's changes from there.
//!
//! What a long-lived changelog keeps alive (as Java's `SnapshotDeletion` with
//! `changelogDecoupled`): on a table with a changelog producer, its changelog manifest list,
//! the manifests it lists and the changelog files they add (its base and delta lists go with
//! the snapshot); on a table without one, its base and delta manifest lists and their manifests,
//! and the data files its delta adds that a compaction did not write (`_FILE_SOURCE` not
//! COMPACT: the changes a delta read returns). Index manifests and statistics are the
//! snapshot's only.
//!
//! Their expiry is in [`super::changelog_expire`].

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::io;
use crate::options::ChangelogProducer;
use crate::spec::manifest::{read_manifest_entries, read_manifest_list, FileKind};
use crate::spec::snapshot::Snapshot;
use crate::table::references::{metadata_roots, Labeled, Missing, Referenced};
use crate::table::FileStoreTable;

const PREFIX: &str = "changelog-";
const LATEST: &str = "LATEST";
pub(crate) const EARLIEST: &str = "EARLIEST";

/// `_FILE_SOURCE` of a file a compaction wrote (Java's `FileSource.COMPACT`).
pub(crate) const FILE_SOURCE_COMPACT: i32 = 1;

/// The long-lived changelogs of one branch: `<branch dir>/changelog/`.
pub struct ChangelogManager {
    pub(crate) dir: PathBuf,
}

impl ChangelogManager {
    /// The changelogs of the table or branch directory `root`.
    pub fn new(root: &Path) -> Self {
        ChangelogManager {
            dir: root.join("changelog"),
        }
    }

    pub fn path(&self, id: i64) -> PathBuf {
        self.dir.join(format!("{PREFIX}{id}"))
    }

    fn hint(&self, name: &str) -> Option<i64> {
        io::read_to_string(&self.dir.join(name))
            .ok()
            .and_then(|t| t.trim().parse::<i64>().ok())
    }

    /// Ids of the changelog files present, ascending.
    pub fn ids(&self) -> Result<Vec<i64>> {
        crate::table::snapshot_manager::ids_in(&self.dir, PREFIX)
    }

    /// Changelog `id`, None if its file does not exist.
    pub fn try_changelog(&self, id: i64) -> Result<Option<Snapshot>> {
        let p = self.path(id);
        match io::read(&p) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|e| Error::corrupt(&p, e.to_string())),
            Err(_) if !io::exists(&p) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The oldest changelog: `EARLIEST` if its changelog exists, else the smallest listed
    /// (Java's `HintFileUtils.findEarliest`).
    pub fn earliest_id(&self) -> Result<Option<i64>> {
        if let Some(e) = self.hint(EARLIEST) {
            if io::exists(&self.path(e)) {
                return Ok(Some(e));
            }
        }
        Ok(self.ids()?.first().copied())
    }

    /// The newest changelog: `LATEST` if its changelog exists and the next does not, else the
    /// largest listed (Java's `HintFileUtils.findLatest`).
    pub fn latest_id(&self) -> Result<Option<i64>> {
        if let Some(n) = self.hint(LATEST) {
            if io::exists(&self.path(n)) && !io::exists(&self.path(n + 1)) {
                return Ok(Some(n));
            }
        }
        Ok(self.ids()?.last().copied())
    }

    /// Write `snapshot` as changelog `snapshot.id` (Java overwrites one that exists), then the
    /// `LATEST` hint.
    pub fn commit(&self, snapshot: &Snapshot) -> Result<()> {
        let bytes = serde_json::to_vec_pretty(snapshot)
            .map_err(|e| Error::Internal(format!("changelog serialization: {e}")))?;
        io::mkdirs(&self.dir)?;
        io::overwrite_hint(&self.path(snapshot.id), &bytes)?;
        self.write_hint(LATEST, snapshot.id)
    }

    pub(crate) fn write_hint(&self, name: &str, id: i64) -> Result<()> {
        io::overwrite_hint(&self.dir.join(name), id.to_string().as_bytes())
    }

    /// Move `LATEST` (rollback: -1 when none is left, as Java).
    pub fn write_latest_hint(&self, id: i64) -> Result<()> {
        self.write_hint(LATEST, id)
    }

    /// Every changelog file, read (temp files of atomic writes left out).
    pub fn all(&self) -> Result<Vec<Labeled>> {
        let mut out = vec![];
        for id in self.ids()? {
            if let Some(s) = self.try_changelog(id)? {
                out.push((self.path(id), s));
            }
        }
        Ok(out)
    }
}

/// The long-lived changelogs of the table and of all its branches.
pub(crate) fn all_changelogs(table: &FileStoreTable) -> Result<Vec<Labeled>> {
    let mut out = vec![];
    for root in metadata_roots(&table.path)? {
        out.extend(ChangelogManager::new(&root).all()?);
    }
    Ok(out)
}

/// Snapshot `id` of the handle's branch, or its long-lived changelog once it expired; None if
/// neither exists.
pub(crate) fn snapshot_or_changelog(table: &FileStoreTable, id: i64) -> Result<Option<Snapshot>> {
    if let Some(s) = table.snapshot_manager().try_snapshot(id)? {
        return Ok(Some(s));
    }
    ChangelogManager::new(&table.meta_path()).try_changelog(id)
}

/// Whether the table writes changelog files (Java's `produceChangelog`): its long-lived
/// changelogs then keep only their changelog manifest lists.
fn produces_changelog(table: &FileStoreTable) -> bool {
    table.options.changelog_producer != ChangelogProducer::None
}

/// The manifest lists a long-lived changelog keeps (see the module documentation).
pub(crate) fn kept_lists(table: &FileStoreTable, c: &Snapshot) -> Vec<String> {
    let mut lists: Vec<String> = c.changelog_manifest_list.iter().cloned().collect();
    if !produces_changelog(table) {
        lists.push(c.delta_manifest_list.clone());
        lists.push(c.base_manifest_list.clone());
    }
    lists
}

/// What `changelogs` keep alive. The changelog manifest list is read strictly (`missing`); base
/// and delta lists only if present (a table whose producer changed, or Java, may have deleted
/// them). With `every_named` (the orphan clean), every file a present list names, and the index
/// manifest and statistics if present, as Java's orphan clean; else (expiry, rollback, tag
/// deletion) what the module documentation says.
pub(crate) fn changelog_references(
    table: &FileStoreTable,
    changelogs: &[Labeled],
    missing: Missing,
    every_named: bool,
) -> Result<Referenced> {
    let dir = table.manifest_dir();
    let mut r = Referenced::default();
    let mut seen_lists: HashSet<String> = HashSet::new();
    let mut seen_manifests: HashSet<String> = HashSet::new();
    for (from, c) in changelogs {
        let mut lists: Vec<(String, bool)> = vec![];
        if let Some(l) = &c.changelog_manifest_list {
            lists.push((l.clone(), true));
        }
        if every_named || !produces_changelog(table) {
            lists.push((c.delta_manifest_list.clone(), false));
            lists.push((c.base_manifest_list.clone(), false));
        }
        for (list, strict) in lists {
            let p = dir.join(&list);
            if !strict && !io::exists(&p) {
                continue;
            }
            if !seen_lists.insert(list.clone()) {
                continue;
            }
            let bytes = match io::read(&p) {
                Ok(b) => b,
                Err(e) => match missing {
                    Missing::Skip => continue,
                    Missing::Refuse(why) => {
                        return Err(Error::corrupt(
                            &p,
                            format!(
                                "referenced by {} but unreadable ({e}); {why}",
                                from.display()
                            ),
                        ))
                    }
                },
            };
            r.meta.insert(list.clone());
            let is_changelog = c.changelog_manifest_list.as_ref() == Some(&list);
            let is_delta = list == c.delta_manifest_list;
            let want_data = every_named || is_changelog || is_delta;
            for m in read_manifest_list(&bytes, &p)? {
                r.meta.insert(m.file_name.clone());
                if !want_data || !seen_manifests.insert(m.file_name.clone()) {
                    continue;
                }
                let mp = dir.join(&m.file_name);
                let entries = match io::read(&mp) {
                    Ok(b) => read_manifest_entries(&b, &mp)?,
                    Err(e) => match missing {
                        Missing::Skip => continue,
                        Missing::Refuse(why) => {
                            return Err(Error::corrupt(
                                &mp,
                                format!("referenced by {list} but unreadable ({e}); {why}"),
                            ))
                        }
                    },
                };
                for e in entries {
                    let keep = every_named
                        || (e.kind == FileKind::Add
                            && (is_changelog || e.file.file_source != Some(FILE_SOURCE_COMPACT)));
                    if keep {
                        r.data.extend(e.file.extra_files.iter().cloned());
                        r.data.insert(e.file.file_name.clone());
                    }
                }
            }
        }
        if every_named {
            if let Some(index) = &c.index_manifest {
                let p = dir.join(index);
                // gone: a changelog may outlive its snapshot's index manifest; present but
                // unreadable: never guess what it lists (its index files would be removed)
                if io::exists(&p) {
                    let bytes = io::read(&p).map_err(|e| {
                        Error::corrupt(
                            &p,
                            format!("referenced by {} but unreadable ({e})", from.display()),
                        )
                    })?;
                    r.meta.insert(index.clone());
                    for e in crate::spec::manifest::read_index_manifest(&bytes, &p)? {
                        r.index.insert(e.file_name.clone());
                    }
                }
            }
            if let Some(stats) = &c.statistics {
                if io::exists(&table.path.join("statistics").join(stats)) {
                    r.statistics.insert(stats.clone());
                }
            }
        }
    }
    Ok(r)
}
