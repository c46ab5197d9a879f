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
//! Changelogs expire by their own retention ([`ChangelogRetention`], Java's
//! `ExpireChangelogImpl.expire`), only while the changelog is decoupled: of changelogs
//! `earliest..latest` (the latest long-lived changelog always stays), those below
//! `latest snapshot - changelog.num-retained.max + 1`, then while the changelog itself (not its
//! successor, unlike snapshots) is older than `changelog.time-retained`, up to
//! `latest snapshot - changelog.num-retained.min + 1` (exclusive), bounded by the consumers'
//! next snapshot and `snapshot.expire.limit`. Order: `changelog/EARLIEST` is moved first, then
//! the changelog files are deleted lowest first, then the files only they kept: an interrupted
//! expiry leaves orphans only.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::io;
use crate::options::{parse_duration_ms, ChangelogProducer};
use crate::spec::manifest::{read_manifest_entries, read_manifest_list, FileKind, ManifestEntry};
use crate::spec::snapshot::Snapshot;
use crate::table::expire::ExpireConfig;
use crate::table::references::{Labeled, Missing, Referenced};
use crate::table::FileStoreTable;

const PREFIX: &str = "changelog-";
const LATEST: &str = "LATEST";
const EARLIEST: &str = "EARLIEST";

/// `_FILE_SOURCE` of a file a compaction wrote (Java's `FileSource.COMPACT`).
pub(crate) const FILE_SOURCE_COMPACT: i32 = 1;

/// Changelog ids expired, and the files deleted (with their sizes).
type Expired = (Vec<i64>, Vec<(PathBuf, u64)>);

/// The long-lived changelogs of one branch: `<branch dir>/changelog/`.
pub struct ChangelogManager {
    dir: PathBuf,
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

    fn write_hint(&self, name: &str, id: i64) -> Result<()> {
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
    for root in crate::table::expire::metadata_roots(&table.path)? {
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

/// How long changelogs are kept: Java's `ExpireConfig` changelog half. An option not set takes
/// the snapshot option's value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangelogRetention {
    pub num_retained_min: i64,
    pub num_retained_max: i64,
    pub time_retained_ms: i64,
    pub expire_limit: i64,
}

impl ChangelogRetention {
    /// From the table options `changelog.num-retained.min`, `.max`, `changelog.time-retained`
    /// (each defaulting to `snapshot`'s), validated as Java's `SchemaValidation`.
    pub fn from_options(raw: &BTreeMap<String, String>, snapshot: &ExpireConfig) -> Result<Self> {
        let int = |key: &str| -> Result<Option<i64>> {
            raw.get(key)
                .map(|v| {
                    v.trim().parse::<i64>().map_err(|_| {
                        Error::invalid(format!(
                            "Could not parse value '{v}' for key '{key}'. (expected an integer)"
                        ))
                    })
                })
                .transpose()
        };
        let c = ChangelogRetention {
            num_retained_min: int("changelog.num-retained.min")?
                .unwrap_or(snapshot.num_retained_min),
            num_retained_max: int("changelog.num-retained.max")?
                .unwrap_or(snapshot.num_retained_max),
            time_retained_ms: match raw.get("changelog.time-retained") {
                Some(v) => parse_duration_ms("changelog.time-retained", v)? as i64,
                None => snapshot.time_retained_ms,
            },
            expire_limit: snapshot.expire_limit,
        };
        if c.num_retained_min < 1 {
            return Err(Error::invalid(
                "changelog.num-retained.min should be at least 1",
            ));
        }
        if c.num_retained_min > c.num_retained_max {
            return Err(Error::invalid(
                "changelog.num-retained.min should not be larger than changelog.num-retained.max",
            ));
        }
        Ok(c)
    }

    /// Whether changelogs outlive snapshots (Java's `changelogLifecycleDecoupled`).
    pub fn decoupled(&self, snapshot: &ExpireConfig) -> bool {
        self.num_retained_max > snapshot.num_retained_max
            || self.num_retained_min > snapshot.num_retained_min
            || self.time_retained_ms > snapshot.time_retained_ms
    }
}

/// Whether the table writes changelog files (Java's `produceChangelog`): its long-lived
/// changelogs then keep only their changelog manifest lists.
fn produces_changelog(table: &FileStoreTable) -> bool {
    table.options.changelog_producer != ChangelogProducer::None
}

/// The manifest lists a long-lived changelog keeps (see the module documentation).
fn kept_lists(table: &FileStoreTable, c: &Snapshot) -> Vec<String> {
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

/// Expire the handle's branch's long-lived changelogs under `retention` (Java's
/// `ExpireChangelogImpl.expire`); `now_ms` is the clock `changelog.time-retained` is measured
/// against. Returns the changelog ids expired and the files deleted (the changelog files
/// among them).
pub(crate) fn expire_changelogs(
    table: &FileStoreTable,
    retention: &ChangelogRetention,
    now_ms: i64,
) -> Result<Expired> {
    let none = Ok((vec![], vec![]));
    let sm = table.snapshot_manager();
    let cm = ChangelogManager::new(&table.meta_path());
    let (Some(latest_snapshot), Some(_)) = (sm.latest_id()?, sm.earliest_id()?) else {
        return none;
    };
    let (Some(latest), Some(earliest)) = (cm.latest_id()?, cm.earliest_id()?) else {
        return none;
    };
    if retention.num_retained_max < retention.num_retained_min {
        return Err(Error::invalid(format!(
            "retainMax ({}) must not be less than retainMin ({}).",
            retention.num_retained_max, retention.num_retained_min
        )));
    }
    let min = (latest_snapshot - retention.num_retained_max + 1).max(earliest);
    let mut max_exclusive = latest_snapshot - retention.num_retained_min + 1;
    if let Some(c) = crate::table::expire::min_consumer_snapshot(table)? {
        max_exclusive = max_exclusive.min(c);
    }
    max_exclusive = max_exclusive
        .min(earliest.saturating_add(retention.expire_limit))
        .min(latest);
    if max_exclusive <= earliest {
        return none;
    }
    let older_than = now_ms - retention.time_retained_ms;
    let mut end = max_exclusive;
    for id in min..=max_exclusive {
        if let Some(c) = cm.try_changelog(id)? {
            if older_than <= c.time_millis {
                end = id;
                break;
            }
        }
    }
    expire_changelogs_until(table, &cm, earliest, end)
}

/// Expire changelogs `earliest..end` (Java's `ExpireChangelogImpl.expireUntil`): changelog
/// `end` must exist (else nothing expires, as Java). What the expired changelogs alone keep is
/// deleted: on a table with a producer, the files their changelog manifests add; without one,
/// the data files their deltas delete (the compaction that replaced a file the delta read
/// needed) unless the newest tag before holds them; and their manifest lists and manifests
/// unless changelog `end`, the earliest snapshot or a tag around the range lists them. Branches
/// keep what they reference.
fn expire_changelogs_until(
    table: &FileStoreTable,
    cm: &ChangelogManager,
    earliest: i64,
    end: i64,
) -> Result<Expired> {
    let why = "refusing to expire changelogs";
    let Some(end_changelog) = cm.try_changelog(end)? else {
        log::warn!(
            target: "paimon_rs.expire",
            "{}: changelog {end} not found, not expiring changelogs",
            table.name
        );
        return Ok((vec![], vec![]));
    };
    let mut expiring: Vec<Labeled> = vec![];
    for id in earliest..end {
        if let Some(c) = cm.try_changelog(id)? {
            expiring.push((cm.path(id), c));
        }
    }
    let sm = table.snapshot_manager();
    let tags = crate::table::expire::sorted_tags(table)?;
    // what branches (snapshots, tags, changelogs) keep
    let branch_changelogs: Vec<Labeled> = all_changelogs(table)?
        .into_iter()
        .filter(|(p, _)| !p.starts_with(&cm.dir))
        .collect();
    let other = crate::table::expire::kept_outside(table, &branch_changelogs, why)?;

    // metadata kept: changelog `end`, the earliest snapshot, the tags around the range
    let mut keep = changelog_references(
        table,
        &[(cm.path(end), end_changelog)],
        Missing::Refuse(why),
        false,
    )?
    .meta;
    let mut keepers: Vec<Labeled> = vec![];
    if let Some(e) = sm.earliest_id()? {
        keepers.push((sm.snapshot_path(e), sm.snapshot(e)?));
    }
    let from = tags
        .iter()
        .rposition(|(_, t)| t.id <= earliest)
        .unwrap_or(0);
    keepers.extend(tags.iter().skip(from).filter(|(_, t)| t.id < end).cloned());
    keep.extend(
        crate::table::references::Walker::new(table, Missing::Refuse(why))
            .lists_only()
            .referenced(&keepers)?
            .meta,
    );
    keep.extend(other.meta.iter().cloned());

    let mut data: Vec<ManifestEntry> = vec![];
    let mut meta: Vec<String> = vec![];
    let mut tag_files: HashMap<i64, HashSet<String>> = HashMap::new();
    for (_, c) in &expiring {
        match &c.changelog_manifest_list {
            Some(list) => {
                let tagged = tags
                    .iter()
                    .any(|(_, t)| t.changelog_manifest_list.as_ref() == Some(list));
                if !tagged {
                    for e in entries_of(table, list)? {
                        if e.kind == FileKind::Add && !other.data.contains(&e.file.file_name) {
                            data.push(e);
                        }
                    }
                }
            }
            None => {
                let held = crate::table::expire::held_by_tag_before(
                    table,
                    &tags,
                    c.id,
                    &mut tag_files,
                    why,
                )?;
                for e in crate::table::expire::deleted_in_delta(table, c)?.unwrap_or_default() {
                    let name = &e.file.file_name;
                    if !held.is_some_and(|h| h.contains(name)) && !other.data.contains(name) {
                        data.push(e);
                    }
                }
            }
        }
        for list in kept_lists(table, c) {
            let p = table.manifest_dir().join(&list);
            let Ok(bytes) = io::read(&p) else { continue };
            for m in read_manifest_list(&bytes, &p)? {
                if !keep.contains(&m.file_name) {
                    meta.push(m.file_name);
                }
            }
            if !keep.contains(&list) {
                meta.push(list);
            }
        }
    }

    // EARLIEST first, then the changelog files lowest first, then what only they kept
    cm.write_hint(EARLIEST, end)?;
    let mut ids = vec![];
    let mut files = vec![];
    for (p, c) in &expiring {
        let bytes = io::file_size(p).unwrap_or(0);
        io::remove_file_if_exists(p)?;
        ids.push(c.id);
        files.push((p.clone(), bytes));
    }
    let keep_extra = |x: &str| {
        other.data.contains(x) || tag_files.values().any(|h: &HashSet<String>| h.contains(x))
    };
    files.extend(crate::table::expire::remove_files(
        table,
        data,
        meta,
        &keep_extra,
    )?);
    log::info!(
        target: "paimon_rs.expire",
        "{}: expired changelogs {earliest}..{end} ({} files deleted)",
        table.name,
        files.len()
    );
    Ok((ids, files))
}

/// Entries of the manifests of `list`, read tolerantly (what is gone is skipped).
fn entries_of(table: &FileStoreTable, list: &str) -> Result<Vec<ManifestEntry>> {
    Ok(crate::table::expire::entries_of_list(table, list)?.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::opts;
    use crate::read::scan::TableScan;
    use crate::table::orphan::remove_orphan_files;
    use crate::table::orphan::tests::{age, all_files, commit, table};
    use crate::table::rollback::{rollback_to, RollbackTarget};

    /// `db.t` (one bucket, key `dt`, `k`) with `options`, snapshots retained 1..=2.
    fn decoupled(dir: &Path, options: &[(&str, &str)]) -> FileStoreTable {
        let mut o = vec![
            ("snapshot.num-retained.min", "1"),
            ("snapshot.num-retained.max", "2"),
        ];
        o.extend_from_slice(options);
        table(dir, false).copy(&opts(&o)).unwrap()
    }

    fn hint(t: &FileStoreTable, name: &str) -> i64 {
        let p = t.path.join("changelog").join(name);
        io::read_to_string(&p).unwrap().trim().parse().unwrap()
    }

    /// Names of the files in the bucket directory starting with `prefix`.
    fn bucket_files(t: &FileStoreTable, prefix: &str) -> HashSet<String> {
        all_files(&t.bucket_dir("", 0))
            .into_iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(prefix))
            .collect()
    }

    /// The changelog files the snapshots, tags and long-lived changelogs list.
    fn listed_changelog_files(t: &FileStoreTable) -> HashSet<String> {
        let mut all = crate::table::expire::all_kept(t).unwrap();
        all.extend(all_changelogs(t).unwrap());
        let mut out = HashSet::new();
        for (_, s) in all {
            if let Some(l) = &s.changelog_manifest_list {
                for e in entries_of(t, l).unwrap() {
                    out.insert(e.file.file_name);
                }
            }
        }
        out
    }

    /// The files an incremental read of `(start, end]` in `mode` plans.
    fn planned(t: &FileStoreTable, start: i64, end: i64, mode: &str) -> Result<Vec<String>> {
        let r = t.copy(&opts(&[
            ("incremental-between", &format!("{start},{end}")),
            ("incremental-between-scan-mode", mode),
        ]))?;
        let plan = TableScan::new(r, None).plan()?;
        Ok(plan
            .splits
            .iter()
            .flat_map(|s| s.files.iter().map(|f| f.file_name.clone()))
            .collect())
    }

    fn now() -> i64 {
        chrono::Utc::now().timestamp_millis()
    }

    #[test]
    fn decoupled_expiry_keeps_changelogs_and_expires_them_by_their_own_retention() {
        let dir = tempfile::tempdir().unwrap();
        let t = decoupled(
            dir.path(),
            &[
                ("changelog-producer", "input"),
                ("changelog.num-retained.max", "6"),
            ],
        );
        for i in 0..12 {
            commit(&t, "a", &[i % 4, 100 + i]);
        }
        let sm = t.snapshot_manager();
        let latest = sm.latest_id().unwrap().unwrap();
        assert_eq!(sm.ids().unwrap(), vec![latest - 1, latest]);
        // changelogs of latest-5 ..= latest-2 are kept (the newest changelog 6 ids back, the
        // older ones expired by `changelog.num-retained.max`)
        let cm = ChangelogManager::new(&t.path);
        let ids: Vec<i64> = (latest - 5..=latest - 2).collect();
        assert_eq!(cm.ids().unwrap(), ids);
        assert_eq!(
            (hint(&t, "EARLIEST"), hint(&t, "LATEST")),
            (latest - 5, latest - 2)
        );
        // a changelog is its snapshot's JSON
        let c = cm.try_changelog(latest - 3).unwrap().unwrap();
        assert_eq!(c.id, latest - 3);
        // every changelog file on disk is listed by a snapshot or changelog, and every listed
        // one is on disk: the expired changelogs' files went, the kept ones' stayed
        let on_disk = bucket_files(&t, "changelog-");
        assert!(!on_disk.is_empty());
        assert_eq!(on_disk, listed_changelog_files(&t));
        // the changelog of expired snapshots is read from the long-lived changelogs
        let files = planned(&t, latest - 6, latest, "changelog").unwrap();
        assert_eq!(
            files.iter().collect::<HashSet<_>>(),
            on_disk.iter().collect()
        );
        // below the earliest changelog: expired
        assert!(planned(&t, latest - 7, latest, "changelog").is_err());
        // a delta read of a changelog-only snapshot: its delta went with the snapshot
        let e = planned(&t, latest - 6, latest, "delta").unwrap_err();
        assert!(
            e.to_string()
                .contains("incremental-between-scan-mode = changelog"),
            "{e}"
        );
        // the orphan clean finds nothing (the changelogs' base and delta lists are gone: read
        // only if present), and nothing was left behind
        age(&t.path);
        let r = remove_orphan_files(&t, now(), false).unwrap();
        assert_eq!(r.files, vec![], "orphans");
        assert_eq!(
            planned(&t, latest - 6, latest, "changelog").unwrap().len(),
            files.len()
        );
    }

    #[test]
    fn without_a_producer_the_appended_files_stay_for_the_delta_read() {
        let dir = tempfile::tempdir().unwrap();
        let t = decoupled(dir.path(), &[("changelog.num-retained.max", "40")]);
        for i in 0..12 {
            commit(&t, "a", &[1, 2, 3 + i]);
        }
        let sm = t.snapshot_manager();
        let latest = sm.latest_id().unwrap().unwrap();
        assert!(latest > 12, "compactions happened: {latest}");
        assert_eq!(sm.earliest_id().unwrap(), Some(latest - 1));
        // the delta read of the whole history: each commit's file, though compactions replaced
        // them (Java's SnapshotDeletion keeps APPEND files while a changelog needs them)
        let files = planned(&t, 0, latest, "delta").unwrap();
        assert_eq!(files.len(), 12);
        for f in &files {
            assert!(t.bucket_dir("", 0).join(f).exists(), "{f}");
        }
        age(&t.path);
        assert_eq!(remove_orphan_files(&t, now(), false).unwrap().files, vec![]);
        // changelogs then expire by their own retention, and with them the files only they kept
        let t2 = t
            .copy(&opts(&[("changelog.num-retained.max", "3")]))
            .unwrap();
        let config = ExpireConfig::from_options(&t2.options.raw).unwrap();
        let r = crate::table::expire::expire_snapshots(&t2, &config, now()).unwrap();
        assert_eq!(r.changelogs, (1..latest - 2).collect::<Vec<_>>());
        let left = bucket_files(&t2, "data-");
        assert!(files.iter().filter(|f| left.contains(*f)).count() < 12);
        age(&t.path);
        assert_eq!(
            remove_orphan_files(&t2, now(), false).unwrap().files,
            vec![]
        );
        assert!(planned(&t2, latest - 3, latest, "delta").is_ok());
    }

    #[test]
    fn rollback_removes_the_newer_changelogs_and_their_files() {
        let dir = tempfile::tempdir().unwrap();
        let t = decoupled(
            dir.path(),
            &[
                ("changelog-producer", "input"),
                ("changelog.num-retained.max", "50"),
            ],
        );
        commit(&t, "a", &[1]);
        commit(&t, "a", &[2]);
        crate::table::tags::create_tag(&t, "two", Some(2), None, false).unwrap();
        for i in 0..6 {
            commit(&t, "a", &[10 + i]);
        }
        let cm = ChangelogManager::new(&t.path);
        assert!(cm.ids().unwrap().contains(&3));
        rollback_to(&t, &RollbackTarget::Tag("two".into())).unwrap();
        assert_eq!(cm.ids().unwrap(), vec![1, 2]);
        assert_eq!(hint(&t, "LATEST"), 2);
        assert_eq!(t.snapshot_manager().latest_id().unwrap(), Some(2));
        assert_eq!(bucket_files(&t, "changelog-"), listed_changelog_files(&t));
        age(&t.path);
        assert_eq!(remove_orphan_files(&t, now(), false).unwrap().files, vec![]);
        assert_eq!(planned(&t, 0, 2, "changelog").unwrap().len(), 2);
    }

    #[test]
    fn changelogs_expire_once_older_than_their_time_retention() {
        // Java's ExpireChangelogImpl: a changelog stays while it (not its successor) is younger
        // than `changelog.time-retained`
        let dir = tempfile::tempdir().unwrap();
        let t = table(dir.path(), false)
            .copy(&opts(&[
                ("changelog-producer", "input"),
                ("changelog.time-retained", "3 s"),
                ("write-only", "true"),
            ]))
            .unwrap();
        for i in 1..=6 {
            commit(&t, "a", &[i]);
            let p = t.snapshot_manager().snapshot_path(i);
            let mut v: serde_json::Value = serde_json::from_slice(&io::read(&p).unwrap()).unwrap();
            v["timeMillis"] = (i * 1000).into();
            std::fs::write(&p, serde_json::to_vec(&v).unwrap()).unwrap();
        }
        let config = ExpireConfig {
            num_retained_min: 1,
            time_retained_ms: 0,
            ..ExpireConfig::from_options(&t.options.raw).unwrap()
        };
        let r = crate::table::expire::expire_snapshots(&t, &config, 6500).unwrap();
        // snapshots 1..=5 expired into changelogs; of those, 1..=3 are older than 3.5 s
        assert_eq!(r.snapshots, vec![1, 2, 3, 4, 5]);
        assert_eq!(r.changelogs, vec![1, 2, 3]);
        assert_eq!(ChangelogManager::new(&t.path).ids().unwrap(), vec![4, 5]);
        assert_eq!(bucket_files(&t, "changelog-"), listed_changelog_files(&t));
        assert_eq!(planned(&t, 3, 6, "changelog").unwrap().len(), 3);
    }

    #[test]
    fn a_decoupled_expiry_reads_the_expiring_snapshots_not_every_changelog() {
        let dir = tempfile::tempdir().unwrap();
        let t = decoupled(
            dir.path(),
            &[
                ("changelog-producer", "input"),
                ("changelog.num-retained.max", "500"),
            ],
        );
        for i in 0..40 {
            commit(&t, "a", &[i % 5, 100 + i]);
        }
        let kept = ChangelogManager::new(&t.path).ids().unwrap().len();
        assert!(kept > 35, "{kept} changelogs");
        let w = t.copy(&opts(&[("write-only", "true")])).unwrap();
        commit(&w, "a", &[7]);
        let config = ExpireConfig::from_options(&t.options.raw).unwrap();
        let before = io::metadata_reads_on_this_thread();
        let r = crate::table::expire::expire_snapshots(&t, &config, now()).unwrap();
        let reads = io::metadata_reads_on_this_thread() - before;
        assert!(!r.snapshots.is_empty());
        // the expiring snapshots' lists and deltas, the end's lists: not the changelogs' lists
        // and manifests (three reads each)
        println!("decoupled expiry: {reads} metadata files read beside {kept} changelogs");
        assert!(
            reads < 20,
            "{reads} metadata files read beside {kept} changelogs"
        );
        assert_eq!(bucket_files(&t, "changelog-"), listed_changelog_files(&t));
    }

    #[test]
    fn retention_defaults_to_the_snapshot_options_and_javas_refusals() {
        let snapshot = [
            ("snapshot.num-retained.min", "2"),
            ("snapshot.num-retained.max", "5"),
        ];
        let s = ExpireConfig::from_options(&opts(&snapshot)).unwrap();
        let c = ChangelogRetention::from_options(&opts(&[]), &s).unwrap();
        assert_eq!(
            (c.num_retained_min, c.num_retained_max, c.time_retained_ms),
            (2, 5, 3_600_000)
        );
        assert!(!c.decoupled(&s));
        let c = ChangelogRetention::from_options(
            &opts(&[
                ("changelog.time-retained", "2 h"),
                ("changelog.num-retained.max", "5"),
            ]),
            &s,
        )
        .unwrap();
        assert!(c.decoupled(&s));
        for (kv, msg) in [
            (
                &[("changelog.num-retained.min", "0")][..],
                "changelog.num-retained.min should be at least 1",
            ),
            (
                &[("changelog.num-retained.min", "6")],
                "changelog.num-retained.min should not be larger than changelog.num-retained.max",
            ),
            (
                &[("changelog.time-retained", "soon")],
                "changelog.time-retained",
            ),
        ] {
            let e = ChangelogRetention::from_options(&opts(kv), &s).unwrap_err();
            assert!(e.to_string().contains(msg), "{kv:?}: {e}");
        }
    }
}
