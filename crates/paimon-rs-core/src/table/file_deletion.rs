//! What snapshot expiry ([`super::expire`]), changelog expiry ([`super::changelog_expire`]),
//! rollback and tag deletion share (Java's `FileDeletionBase`): what keeps files alive (every
//! snapshot and tag, the branches', the consumers'), the manifest entries an expiry reads
//! tolerantly, and the deletion of files in the order that leaves only orphans when interrupted.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::io;
use crate::spec::binary_row::deserialize_row;
use crate::spec::manifest::{read_manifest_entries, read_manifest_list, FileKind, ManifestEntry};
use crate::spec::partition::partition_path;
use crate::spec::snapshot::Snapshot;
use crate::table::changelog::changelog_references;
use crate::table::references::{metadata_roots, Labeled, Missing, Referenced, Walker};
use crate::table::FileStoreTable;

/// Files deleted by an expiry, rollback or tag deletion.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reclaimed {
    /// Snapshot (or tag) files deleted.
    pub snapshots: Vec<i64>,
    /// Long-lived changelogs expired (their `changelog/changelog-<id>` files are in `files`).
    pub changelogs: Vec<i64>,
    /// Other files deleted, with their sizes.
    pub files: Vec<(PathBuf, u64)>,
}

impl Reclaimed {
    pub fn bytes(&self) -> u64 {
        self.files.iter().map(|(_, b)| b).sum()
    }
}

/// The snapshots and tags that keep files alive: every snapshot and tag of the table and of its
/// branches, read now. Long-lived changelogs keep files too, differently (see
/// `table::changelog`): [`delete_unreferenced`] adds them.
pub(crate) fn all_kept(table: &FileStoreTable) -> Result<Vec<Labeled>> {
    let mut out = crate::table::references::snapshots_and_tags(&table.path)?;
    out.extend(branch_snapshots_and_tags(table)?);
    Ok(out)
}

/// Files to delete, in the order they go: data files (with their extra files), index files,
/// statistics, then the metadata in `manifest/` that names them.
#[derive(Default)]
pub(crate) struct Doomed {
    pub(crate) data: Vec<ManifestEntry>,
    pub(crate) index: Vec<PathBuf>,
    pub(crate) statistics: Vec<String>,
    pub(crate) meta: Vec<String>,
}

/// The path of an index file an index manifest lists.
/// Delete `doomed` (what is already gone is skipped); an extra file of a doomed data file is
/// kept if `keep_extra` says so. Data first, then the metadata that names it: an interruption
/// leaves orphans only.
pub(crate) fn remove_doomed(
    table: &FileStoreTable,
    doomed: Doomed,
    keep_extra: &dyn Fn(&str) -> bool,
) -> Result<Vec<(PathBuf, u64)>> {
    let mut paths: Vec<PathBuf> = vec![];
    let mut seen: HashSet<String> = HashSet::new();
    let mut dirs: HashMap<(Vec<u8>, i32), PathBuf> = HashMap::new();
    let ptypes = table.partition_types()?;
    let o = &table.options;
    for e in doomed.data {
        if !seen.insert(e.file.file_name.clone()) {
            continue;
        }
        let dir = match &e.file.external_path {
            Some(p) => crate::io::external_file(p)
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_default(),
            None => match dirs.get(&(e.partition.clone(), e.bucket)) {
                Some(d) => d.clone(),
                None => {
                    let vals = deserialize_row(&ptypes, &e.partition)?;
                    let pp = partition_path(
                        table.partition_keys(),
                        &ptypes,
                        &vals,
                        &o.partition_default_name,
                        o.partition_legacy_name,
                    )?;
                    let d = table.bucket_dir(&pp, e.bucket);
                    dirs.insert((e.partition.clone(), e.bucket), d.clone());
                    d
                }
            },
        };
        paths.push(dir.join(&e.file.file_name));
        for x in &e.file.extra_files {
            if !keep_extra(x) {
                paths.push(dir.join(x));
            }
        }
    }
    paths.extend(doomed.index);
    let stats = table.path.join("statistics");
    paths.extend(doomed.statistics.iter().map(|s| stats.join(s)));
    let mut meta = doomed.meta;
    meta.sort();
    meta.dedup();
    paths.extend(meta.iter().map(|m| table.manifest_dir().join(m)));
    let mut out = vec![];
    for p in paths {
        let bytes = io::file_size(&p).unwrap_or(0);
        if io::exists(&p) {
            io::remove_file_if_exists(&p)?;
            out.push((p, bytes));
        }
    }
    Ok(out)
}

/// Walk `discarded` with `walker` (`on_entry` sees the manifest entries it reads): the index
/// files, statistics and metadata they reference that `keep` does not.
pub(crate) fn doom_unkept(
    table: &FileStoreTable,
    walker: Walker<'_>,
    discarded: &[Labeled],
    keep: &Referenced,
    on_entry: impl FnMut(&ManifestEntry),
) -> Result<Doomed> {
    let mut index = vec![];
    let gone = walker.walk(discarded, on_entry, |e| {
        if !keep.index.contains(&e.file_name) {
            index.push(table.index_file_path(&e.file_name, e.external_path.as_deref()));
        }
    })?;
    Ok(Doomed {
        data: vec![],
        index,
        statistics: gone
            .statistics
            .difference(&keep.statistics)
            .cloned()
            .collect(),
        meta: gone.meta.difference(&keep.meta).cloned().collect(),
    })
}

/// Delete what `discarded` references and `kept` and the long-lived changelogs do not (rollback,
/// tag deletion). `discarded` is read tolerantly (what is already gone is skipped), `kept`
/// strictly: if a kept snapshot's metadata cannot be read nothing is deleted.
pub(crate) fn delete_unreferenced(
    table: &FileStoreTable,
    discarded: &[Labeled],
    kept: &[Labeled],
    why: &'static str,
) -> Result<Vec<(PathBuf, u64)>> {
    if discarded.is_empty() {
        return Ok(vec![]);
    }
    let mut keep = Walker::new(table, Missing::Refuse(why))
        .live_only()
        .referenced(kept)?;
    let changelogs = crate::table::changelog::all_changelogs(table)?;
    if !changelogs.is_empty() {
        let c = changelog_references(table, &changelogs, Missing::Refuse(why), false)?;
        keep.meta.extend(c.meta);
        keep.data.extend(c.data);
    }
    let mut data = vec![];
    let mut doomed = doom_unkept(
        table,
        Walker::new(table, Missing::Skip),
        discarded,
        &keep,
        |e| {
            if !keep.data.contains(&e.file.file_name) {
                data.push(e.clone());
            }
        },
    )?;
    doomed.data = data;
    remove_doomed(table, doomed, &|x| keep.data.contains(x))
}

/// Manifest entries of a manifest list that an expiry reads tolerantly (Java's
/// `tryReadManifestList`): a list or manifest that is missing or unreadable is skipped (its
/// files stay for the orphan clean); one that is there but corrupt is an error.
pub(crate) fn entries_of_list(
    table: &FileStoreTable,
    list: &str,
) -> Result<Option<Vec<ManifestEntry>>> {
    let dir = table.manifest_dir();
    let p = dir.join(list);
    let Ok(bytes) = io::read(&p) else {
        return Ok(None);
    };
    let mut out = vec![];
    for m in read_manifest_list(&bytes, &p)? {
        let mp = dir.join(&m.file_name);
        let Ok(b) = io::read(&mp) else {
            return Ok(None);
        };
        out.extend(read_manifest_entries(&b, &mp)?);
    }
    Ok(Some(out))
}

/// The data files snapshot `s` deleted (Java's `planDeletedInDeltaManifest`): DELETE entries
/// of its delta that no later entry of the delta adds again (a compaction that only changes a
/// file's level deletes and adds it). None if its delta cannot be read.
pub(crate) fn deleted_in_delta(
    table: &FileStoreTable,
    s: &Snapshot,
) -> Result<Option<Vec<ManifestEntry>>> {
    let Some(entries) = entries_of_list(table, &s.delta_manifest_list)? else {
        return Ok(None);
    };
    let mut last: HashMap<String, ManifestEntry> = HashMap::new();
    for e in entries {
        last.insert(e.file.file_name.clone(), e);
    }
    let mut out: Vec<ManifestEntry> = last
        .into_values()
        .filter(|e| e.kind == FileKind::Delete)
        .collect();
    out.sort_by(|a, b| a.file.file_name.cmp(&b.file.file_name));
    Ok(Some(out))
}

/// The snapshots and tags of the table's branches: they share the data files and manifests
/// without belonging to the main table's history.
pub(crate) fn branch_snapshots_and_tags(table: &FileStoreTable) -> Result<Vec<Labeled>> {
    let mut out = vec![];
    for root in metadata_roots(&table.path)? {
        if root != table.path {
            out.extend(crate::table::references::snapshots_and_tags(&root)?);
        }
    }
    Ok(out)
}

/// The handle's branch's tags, by snapshot id.
pub(crate) fn sorted_tags(table: &FileStoreTable) -> Result<Vec<Labeled>> {
    let sm = table.snapshot_manager();
    let mut tags: Vec<Labeled> = sm
        .tags()?
        .into_iter()
        .map(|(name, s)| (sm.tag_path(&name), s))
        .collect();
    tags.sort_by_key(|(_, s)| s.id);
    Ok(tags)
}

/// What keeps files alive outside the handle's branch's snapshots and tags: the branches'
/// snapshots and tags (their live files) and `changelogs` (see `table::changelog`), read
/// strictly, only if there are any.
pub(crate) fn kept_outside(
    table: &FileStoreTable,
    changelogs: &[Labeled],
    why: &'static str,
) -> Result<Referenced> {
    let elsewhere = branch_snapshots_and_tags(table)?;
    let mut other = if elsewhere.is_empty() {
        Referenced::default()
    } else {
        Walker::new(table, Missing::Refuse(why))
            .live_only()
            .referenced(&elsewhere)?
    };
    if !changelogs.is_empty() {
        let c = changelog_references(table, changelogs, Missing::Refuse(why), false)?;
        other.meta.extend(c.meta);
        other.data.extend(c.data);
    }
    Ok(other)
}

/// Delete `data` (with their extra files, unless `keep_extra` keeps one) and the metadata
/// `meta` in `manifest/` (long-lived changelog expiry).
pub(crate) fn remove_files(
    table: &FileStoreTable,
    data: Vec<ManifestEntry>,
    meta: Vec<String>,
    keep_extra: &dyn Fn(&str) -> bool,
) -> Result<Vec<(PathBuf, u64)>> {
    let doomed = Doomed {
        data,
        meta,
        ..Doomed::default()
    };
    remove_doomed(table, doomed, keep_extra)
}

/// The data files live in the newest of `tags` (sorted by id) before snapshot `id`, read once
/// into `cache`; None without such a tag.
pub(crate) fn held_by_tag_before<'a>(
    table: &FileStoreTable,
    tags: &[Labeled],
    id: i64,
    cache: &'a mut HashMap<i64, HashSet<String>>,
    why: &'static str,
) -> Result<Option<&'a HashSet<String>>> {
    let Some((p, t)) = tags.iter().rev().find(|(_, t)| t.id < id) else {
        return Ok(None);
    };
    if let std::collections::hash_map::Entry::Vacant(slot) = cache.entry(t.id) {
        let live = Walker::new(table, Missing::Refuse(why))
            .live_only()
            .referenced(&[(p.clone(), t.clone())])?
            .data;
        slot.insert(live);
    }
    Ok(cache.get(&t.id))
}

/// The smallest `nextSnapshot` of the consumers of the handle's branch (`consumer/consumer-<id>`
/// under the branch's directory, as Java's `ConsumerManager`), which Java never expires.
pub(crate) fn min_consumer_snapshot(table: &FileStoreTable) -> Result<Option<i64>> {
    let dir = table.meta_path().join("consumer");
    let mut min: Option<i64> = None;
    for name in io::list_names(&dir)? {
        if !name.starts_with("consumer-") || name.ends_with(".tmp") {
            continue;
        }
        let p = dir.join(&name);
        let v: serde_json::Value = serde_json::from_slice(&io::read(&p)?)
            .map_err(|e| Error::corrupt(&p, e.to_string()))?;
        let next = v
            .get("nextSnapshot")
            .and_then(serde_json::Value::as_i64)
            .ok_or_else(|| Error::corrupt(&p, "no numeric 'nextSnapshot'"))?;
        min = Some(min.map_or(next, |m: i64| m.min(next)));
    }
    Ok(min)
}
