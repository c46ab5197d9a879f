//! Which files a set of snapshots (snapshot, tag and changelog files) references: the one walker
//! behind snapshot expiry, rollback, tag deletion, `abort` and the orphan clean.
//!
//! A snapshot references its manifest lists (base, delta, changelog), the manifests they list,
//! the data files those manifests name (with their extra files), its index manifest and the index
//! files it lists, and its statistics file. Each manifest list and manifest is read once, however
//! many snapshots share it.
//!
//! What "referenced" means to a caller that deletes files: a file is deleted only if no snapshot
//! it keeps references it, so the walk over the kept snapshots is strict ([`Missing::Refuse`]): a
//! referenced file that is missing or unreadable refuses the whole operation with
//! [`Error::CorruptFile`] before anything is deleted, never "unused". The walk over snapshots
//! being discarded may be tolerant ([`Missing::Skip`]): what it cannot read it cannot clean, and
//! the files stay for the orphan clean.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::io;
use crate::spec::manifest::{
    merge_entries, read_index_manifest, read_manifest_entries, read_manifest_list,
    IndexManifestEntry, ManifestEntry, ManifestFileMeta,
};
use crate::spec::snapshot::Snapshot;
use crate::table::FileStoreTable;

/// How the walk treats a referenced file it cannot read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Missing {
    /// Refuse with `CorruptFile`, naming the file, its referrer and `why` (what is refused).
    Refuse(&'static str),
    /// Skip it (and what only it references).
    Skip,
}

/// Names of the files some snapshots reference.
#[derive(Debug, Default, Clone)]
pub struct Referenced {
    /// Files in `manifest/`: manifest lists, manifests, index manifests.
    pub meta: HashSet<String>,
    /// Data files and their extra files (names are unique: they carry a UUID).
    pub data: HashSet<String>,
    /// Index files (`index/` or their external path), by name.
    pub index: HashSet<String>,
    /// Statistics files (`statistics/`).
    pub statistics: HashSet<String>,
}

/// A snapshot-like file to walk: where it was read from (for messages) and its content.
pub type Labeled = (PathBuf, Snapshot);

/// Which manifests a walk reads.
type ManifestFilter<'a> = Box<dyn Fn(&ManifestFileMeta) -> bool + 'a>;

/// Walks snapshots' metadata; see the module documentation.
pub struct Walker<'a> {
    table: &'a FileStoreTable,
    missing: Missing,
    /// Manifests this accepts are read; others are skipped (abort: only the partitions of its
    /// files). Default: all.
    manifest_filter: Option<ManifestFilter<'a>>,
    live_only: bool,
    lists_only: bool,
}

impl<'a> Walker<'a> {
    pub fn new(table: &'a FileStoreTable, missing: Missing) -> Self {
        Walker {
            table,
            missing,
            manifest_filter: None,
            live_only: false,
            lists_only: false,
        }
    }

    /// Read only the manifests `f` accepts.
    pub fn with_manifest_filter(mut self, f: impl Fn(&ManifestFileMeta) -> bool + 'a) -> Self {
        self.manifest_filter = Some(Box::new(f));
        self
    }

    /// A referenced file's bytes; None if missing and the walk skips what it cannot read.
    fn read(&self, path: &Path, from: &Path) -> Result<Option<Vec<u8>>> {
        match io::read(path) {
            Ok(b) => Ok(Some(b)),
            Err(e) => match self.missing {
                Missing::Skip => Ok(None),
                Missing::Refuse(why) => Err(Error::corrupt(
                    path,
                    format!(
                        "referenced by {} but unreadable ({}); {why}",
                        from.display(),
                        source_text(&e)
                    ),
                )),
            },
        }
    }

    fn require_exists(&self, path: &Path, from: &Path) -> Result<bool> {
        let present = if crate::io::is_remote(path) {
            crate::io::file_size(path).is_ok()
        } else {
            path.is_file()
        };
        if present {
            return Ok(true);
        }
        match self.missing {
            Missing::Skip => Ok(false),
            Missing::Refuse(why) => Err(Error::corrupt(
                path,
                format!(
                    "referenced by {} but missing or not a file; {why}",
                    from.display()
                ),
            )),
        }
    }

    /// Count a data file as referenced only while it is live in some snapshot (its manifests'
    /// ADD and DELETE entries merged), not merely named by a manifest: what expiry, rollback and
    /// tag deletion keep. Manifests are referenced either way. Default (orphan clean, abort):
    /// every file any manifest names.
    pub fn live_only(mut self) -> Self {
        self.live_only = true;
        self
    }

    /// Read manifest lists (and index manifests) but not the manifests they list: the walk
    /// names the manifests without their data files (`data` stays empty, `on_entry` is never
    /// called). What expiry needs to know which metadata a snapshot keeps.
    pub fn lists_only(mut self) -> Self {
        self.lists_only = true;
        self
    }

    /// Everything `snapshots` reference. `on_entry` sees every manifest entry read (each
    /// manifest once) and `on_index` every index manifest entry.
    pub fn walk(
        &self,
        snapshots: &[Labeled],
        mut on_entry: impl FnMut(&ManifestEntry),
        mut on_index: impl FnMut(&IndexManifestEntry),
    ) -> Result<Referenced> {
        let dir = self.table.manifest_dir();
        let mut r = Referenced::default();
        let mut lists: HashMap<String, Vec<String>> = HashMap::new();
        let mut manifests: HashMap<String, Vec<ManifestEntry>> = HashMap::new();
        for (from, s) in snapshots {
            let data_lists = [Some(&s.base_manifest_list), Some(&s.delta_manifest_list)];
            let all_lists = data_lists
                .iter()
                .copied()
                .chain([s.changelog_manifest_list.as_ref()]);
            for list in all_lists.flatten() {
                if lists.contains_key(list) {
                    continue;
                }
                r.meta.insert(list.clone());
                let p = dir.join(list);
                let mut names = vec![];
                if let Some(bytes) = self.read(&p, from)? {
                    for m in read_manifest_list(&bytes, &p)? {
                        if self.manifest_filter.as_ref().is_some_and(|f| !f(&m)) {
                            continue;
                        }
                        names.push(m.file_name.clone());
                        if manifests.contains_key(&m.file_name) {
                            continue;
                        }
                        r.meta.insert(m.file_name.clone());
                        if self.lists_only {
                            continue;
                        }
                        let mp = dir.join(&m.file_name);
                        let entries = match self.read(&mp, &p)? {
                            Some(b) => read_manifest_entries(&b, &mp)?,
                            None => vec![],
                        };
                        for e in &entries {
                            on_entry(e);
                            if !self.live_only {
                                r.data.extend(e.file.extra_files.iter().cloned());
                                r.data.insert(e.file.file_name.clone());
                            }
                        }
                        manifests.insert(m.file_name, entries);
                    }
                }
                lists.insert(list.clone(), names);
            }
            if self.live_only {
                // the snapshot's live data files, and every changelog file it lists
                let named = |l: &String| lists.get(l).into_iter().flatten();
                let data = data_lists.iter().flatten().flat_map(|l| named(l));
                let entries = data.flat_map(|m| manifests.get(m).into_iter().flatten().cloned());
                for e in merge_entries(entries)? {
                    r.data.extend(e.file.extra_files);
                    r.data.insert(e.file.file_name);
                }
                for m in s.changelog_manifest_list.iter().flat_map(named) {
                    for e in manifests.get(m).into_iter().flatten() {
                        r.data.extend(e.file.extra_files.iter().cloned());
                        r.data.insert(e.file.file_name.clone());
                    }
                }
            }
            if let Some(index) = &s.index_manifest {
                if r.meta.insert(index.clone()) {
                    let p = dir.join(index);
                    if let Some(bytes) = self.read(&p, from)? {
                        for e in read_index_manifest(&bytes, &p)? {
                            on_index(&e);
                            r.index.insert(e.file_name.clone());
                        }
                    }
                }
            }
            if let Some(stats) = &s.statistics {
                let p = self.table.path.join("statistics").join(stats);
                if self.require_exists(&p, from)? {
                    r.statistics.insert(stats.clone());
                }
            }
        }
        Ok(r)
    }

    /// [`Self::walk`] without callbacks.
    pub fn referenced(&self, snapshots: &[Labeled]) -> Result<Referenced> {
        self.walk(snapshots, |_| {}, |_| {})
    }
}

fn source_text(e: &Error) -> String {
    match e {
        Error::Io { source, .. } => source.to_string(),
        other => other.to_string(),
    }
}

/// Every snapshot file (those that vanish while listed were expired meanwhile and are left out;
/// stale ones, which are no state of the table and whose files may be gone, too) and every tag
/// of the table at `root` (the table or a branch directory), labeled by path.
pub fn snapshots_and_tags(root: &Path) -> Result<Vec<Labeled>> {
    let sm = crate::table::snapshot_manager::SnapshotManager::new(root);
    let mut out = vec![];
    for id in sm.live_ids()? {
        if let Some(s) = sm.try_snapshot(id)? {
            out.push((sm.snapshot_path(id), s));
        }
    }
    for (name, s) in sm.tags()? {
        out.push((sm.tag_path(&name), s));
    }
    Ok(out)
}

/// The table directory and its branch directories (`branch/branch-<name>`): their snapshots,
/// tags and changelogs all share `manifest/` and the data files.
pub(crate) fn metadata_roots(table: &Path) -> Result<Vec<PathBuf>> {
    let mut roots = vec![table.to_path_buf()];
    for name in io::list_names(&table.join("branch"))? {
        let p = table.join("branch").join(&name);
        if name.starts_with("branch-") && io::is_dir(&p) {
            roots.push(p);
        }
    }
    Ok(roots)
}
