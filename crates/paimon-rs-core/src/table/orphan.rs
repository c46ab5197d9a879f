//! Remove orphan files: what crashed writers and lost commit races leave in a table directory
//! (paimon-behaviour.md; Java's `OrphanFilesClean` / `LocalOrphanFilesClean`).
//!
//! A file is an orphan when no snapshot, tag or changelog of the table or of any branch
//! references it and it is older than a limit (1 day by default, as Java's
//! `RemoveOrphanFilesAction`), so that files of a commit in flight are never taken.
//!
//! Safety rules, stricter than Java's:
//! - the referenced set is built from *every* snapshot, tag and changelog file of the main table
//!   and of every branch; a snapshot, manifest list, manifest, index manifest or statistics file
//!   that is referenced but missing or unreadable makes the whole clean refuse with
//!   [`Error::CorruptFile`] before anything is deleted (never delete on a partial view; Java
//!   skips such snapshots); except a long-lived changelog's base and delta manifest lists, index
//!   manifest and statistics, which an expiry deletes on a table with a changelog producer (as
//!   Java): those are kept if present (see `table::changelog`);
//! - a gap in the snapshot ids, a `LATEST` or `EARLIEST` hint beyond the newest snapshot, hints
//!   without any snapshot, a first snapshot other than 1 without an `EARLIEST` hint naming it
//!   or a later one (snapshots lost rather than expired), or manifest lists without any
//!   snapshot, tag or changelog that do not look like crashed first commits (see
//!   [`crashed_first_commits`]) are refused the same way;
//! - only files in `manifest/` (manifests, manifest lists, index manifests, temp files), in
//!   `index/` (hash index and deletion-vector index files, temp files) and in partition / bucket
//!   directories (data, changelog and sidecar files, temp files), plus temp files of crashed
//!   atomic writes in `snapshot/`, `schema/`, `tag/` and `changelog/`, are candidates. Snapshot,
//!   tag, schema, changelog and hint files themselves are never candidates, nor is anything in
//!   `statistics/`, nor anything outside the table directory (symbolic links are neither
//!   followed nor removed; an index file with an external path is not in `index/`);
//! - an index file is referenced when the index manifest of any snapshot, tag or stale snapshot
//!   of the table or of a branch (which share `index/`), or of a long-lived changelog, lists it
//!   (Java's `OrphanFilesClean` collects the same from every snapshot, tag, branch and
//!   changelog): a late speculative Spark attempt's hash index file or a crashed writer's
//!   deletion-vector file is an orphan once older than the limit;
//! - referenced data files are matched by name (names are unique: they carry a UUID), so a file
//!   referenced from any partition or bucket protects every file of that name;
//! - data files live under `<table>/<data-file.path-directory>` (the table itself when unset)
//!   and `<root>/<data-file.path-directory>` for each external root;
//! - an external root another table of the warehouse names (any of its schema files, or a
//!   branch's; however spelled), or this table's own directory it names, is shared: that
//!   table's references are read as strictly as this table's and every data file they name is
//!   kept (Java deletes them), see `shared_root_references`.
//!
//! Candidates are listed before the referenced files are collected, so a commit that lands while
//! the clean runs either is seen, or only references files younger than the limit.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::io::FileStatus;
use crate::spec::manifest::{read_manifest_entries, read_manifest_list, FileKind};
use crate::spec::snapshot::Snapshot;
use crate::table::references::{Missing, Referenced, Walker};
use crate::table::FileStoreTable;
use crate::write::external_path::normalize_root;

/// One removed (or, in a dry run, removable) file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrphanFile {
    pub path: PathBuf,
    pub bytes: u64,
}

/// What [`remove_orphan_files`] removed (or would remove, in a dry run).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OrphanCleanResult {
    pub files: Vec<OrphanFile>,
    /// Empty bucket and partition directories removed after their files.
    pub directories: Vec<PathBuf>,
}

impl OrphanCleanResult {
    /// Total size of the removed files.
    #[cfg(test)]
    pub fn bytes(&self) -> u64 {
        self.files.iter().map(|f| f.bytes).sum()
    }
}

/// Which referenced set a candidate is checked against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Area {
    /// `manifest/`: manifests, manifest lists, index manifests.
    Meta,
    /// Bucket directories: data, changelog and sidecar files.
    Data,
    /// `index/`: hash index and deletion-vector index files.
    Index,
    /// Temp files of interrupted atomic writes (`.<name>.<uuid>.tmp`): never referenced.
    Temp,
}

struct Candidate {
    path: PathBuf,
    name: String,
    bytes: u64,
    area: Area,
    /// Index of its bucket directory in [`Listing::dirs`].
    dir: Option<usize>,
}

/// A partition or bucket directory seen while listing.
struct DataDir {
    path: PathBuf,
    /// Last modified before the limit: nothing was added or removed in it recently.
    old: bool,
    /// Entries of any kind it held when listed.
    entries: usize,
    parent: Option<usize>,
}

#[derive(Default)]
struct Listing {
    candidates: Vec<Candidate>,
    /// Parents before children.
    dirs: Vec<DataDir>,
    /// Whether `manifest/` holds any manifest list, of any age.
    has_manifest_lists: bool,
}

fn is_temp_name(name: &str) -> bool {
    name.starts_with('.') && name.ends_with(".tmp")
}

/// Entries of `dir` with their metadata (not following symbolic links); empty if it is missing.
fn entries(dir: &Path) -> Result<Vec<(String, PathBuf, FileStatus)>> {
    Ok(crate::io::list_status(dir)?
        .into_iter()
        .map(|st| (st.name.clone(), st.path.clone(), st))
        .collect())
}

struct Cleaner<'a> {
    table: &'a FileStoreTable,
    older_than_millis: i64,
}

impl Cleaner<'_> {
    fn old_enough(&self, md: &FileStatus) -> bool {
        md.mtime_millis.is_some_and(|m| m < self.older_than_millis)
    }

    fn candidate(&self, path: PathBuf, name: String, md: &FileStatus, area: Area) -> Candidate {
        Candidate {
            path,
            name,
            bytes: md.size,
            area,
            dir: None,
        }
    }

    fn list(&self) -> Result<Listing> {
        let root = &self.table.path;
        let mut l = Listing::default();
        for (name, path, md) in entries(&root.join("manifest"))? {
            if !md.is_file {
                continue;
            }
            if name.starts_with("manifest-list-") {
                l.has_manifest_lists = true;
            }
            let area = if is_temp_name(&name) {
                Area::Temp
            } else if name.starts_with("manifest-") || name.starts_with("index-manifest-") {
                Area::Meta
            } else {
                continue;
            };
            if self.old_enough(&md) {
                l.candidates.push(self.candidate(path, name, &md, area));
            }
        }
        for (name, path, md) in entries(&root.join("index"))? {
            if md.is_file && self.old_enough(&md) {
                let area = if is_temp_name(&name) {
                    Area::Temp
                } else {
                    Area::Index
                };
                l.candidates.push(self.candidate(path, name, &md, area));
            }
        }
        for meta_root in self.metadata_roots()? {
            for sub in ["snapshot", "schema", "tag", "changelog"] {
                for (name, path, md) in entries(&meta_root.join(sub))? {
                    if md.is_file && is_temp_name(&name) && self.old_enough(&md) {
                        l.candidates
                            .push(self.candidate(path, name, &md, Area::Temp));
                    }
                }
            }
        }
        let levels = self.table.partition_keys().len();
        // `<table>/<data-file.path-directory>` when set (Java's `dataFilePath()`)
        self.list_data_dirs(&self.table.data_root(), levels, 0, None, &mut l)?;
        // the roots `data-file.external-paths` writes to, listed the same way (Java's
        // `OrphanFilesClean.listPaimonFileDirs`), and with entropy-inject the hash directories
        // below their bucket directories (Java does not list those)
        if let Some(e) = &self.table.options.external_paths {
            let dir = self.table.options.data_file_path_directory.as_deref();
            for r in e.root_paths() {
                let r = dir.map_or_else(|| r.clone(), |d| r.join(d));
                self.list_data_dirs(&r, levels, e.hash_levels(), None, &mut l)?;
            }
        }
        Ok(l)
    }

    /// Partition directories (`key=value`) down `levels` levels, then `bucket-<n>` directories
    /// and their files, as Java's `listFileDirs`; below a bucket directory `hash_levels` levels
    /// of entropy-inject's hash directories (binary digits, see `is_hash_dir`) before the files.
    fn list_data_dirs(
        &self,
        dir: &Path,
        levels: usize,
        hash_levels: usize,
        parent: Option<usize>,
        l: &mut Listing,
    ) -> Result<()> {
        for (name, path, md) in entries(dir)? {
            if !md.is_dir {
                continue;
            }
            let is_bucket = levels == 0 && name.starts_with("bucket-");
            if !(is_bucket || (levels > 0 && name.contains('='))) {
                continue;
            }
            if is_bucket {
                self.list_bucket_dir(path, &md, 0, hash_levels, parent, l)?;
                continue;
            }
            let n = entries(&path)?.len();
            let idx = self.push_dir(path.clone(), &md, n, parent, l);
            self.list_data_dirs(&path, levels - 1, hash_levels, Some(idx), l)?;
        }
        Ok(())
    }

    /// Record the data directory `path` holding `entries` entries; its index in `l.dirs`.
    fn push_dir(
        &self,
        path: PathBuf,
        md: &FileStatus,
        entries: usize,
        parent: Option<usize>,
        l: &mut Listing,
    ) -> usize {
        l.dirs.push(DataDir {
            old: self.old_enough(md),
            path,
            entries,
            parent,
        });
        l.dirs.len() - 1
    }

    /// A bucket directory (`depth` 0) or a hash directory below it (`depth` 1..=`hash_levels`):
    /// the files at the last level are candidates, the directories above them only descended.
    fn list_bucket_dir(
        &self,
        path: PathBuf,
        md: &FileStatus,
        depth: usize,
        hash_levels: usize,
        parent: Option<usize>,
        l: &mut Listing,
    ) -> Result<()> {
        let inner = entries(&path)?;
        let idx = self.push_dir(path, md, inner.len(), parent, l);
        for (name, path, md) in inner {
            if depth < hash_levels {
                if md.is_dir && crate::write::external_path::is_hash_dir(depth, &name) {
                    self.list_bucket_dir(path, &md, depth + 1, hash_levels, Some(idx), l)?;
                }
                continue;
            }
            if md.is_file && self.old_enough(&md) {
                let area = if is_temp_name(&name) {
                    Area::Temp
                } else {
                    Area::Data
                };
                let mut c = self.candidate(path, name, &md, area);
                c.dir = Some(idx);
                l.candidates.push(c);
            }
        }
        Ok(())
    }

    /// The data files referenced by the other tables of the warehouse that may have written
    /// under a directory this clean lists: some schema file (any, not only the latest; of the
    /// table or of any branch) names in `data-file.external-paths` a root equal to, under or
    /// above one of this table's external roots or its own directory (compared as
    /// [`root_key`]s: however spelled, symbolic links resolved). No file carries the table it
    /// belongs to (Java's clean deletes them). "Shares a root" is decided from the raw JSON of
    /// the schema files, so a table with a type paimon_rs cannot hold is only opened when it
    /// shares; a directory none of whose schema files is JSON (or without any) is not a table
    /// and is skipped. The references of a sharing table are built as this table's are (every
    /// snapshot, tag, changelog and branch); a sharing table that cannot be read, a schema file
    /// that is not JSON beside readable ones, or a root that does not parse, refuses the clean.
    /// Tables of other warehouses are not seen (docs).
    fn shared_root_references(&self) -> Result<HashSet<String>> {
        let mut out = HashSet::new();
        let Some(warehouse) = self.table.path.parent().and_then(Path::parent) else {
            return Ok(out);
        };
        let me = root_key(&self.table.path.to_string_lossy());
        let mut own = vec![me.clone()];
        if let Some(e) = &self.table.options.external_paths {
            own.extend(e.roots().iter().map(|r| root_key(r)));
        }
        let overlaps = |r: &Path| own.iter().any(|o| o.starts_with(r) || r.starts_with(o));
        for (db, db_path, md) in entries(warehouse)? {
            let Some(db) = db.strip_suffix(".db").filter(|_| md.is_dir) else {
                continue;
            };
            for (name, path, md) in entries(&db_path)? {
                if !md.is_dir || path == self.table.path || root_key(&path.to_string_lossy()) == me
                {
                    continue;
                }
                let ident = format!("{db}.{name}");
                let Some(named) = self.shared_root_named(&ident, &path, &overlaps)? else {
                    continue;
                };
                let refuse = |e: Error| {
                    let why = format!(
                        "table {ident} names the external root '{named}', which overlaps this \
                         table's directories, but it could not be read ({e}): refusing to \
                         remove orphan files (its live files could be taken for orphans)"
                    );
                    match e {
                        Error::Unsupported { .. } => Error::unsupported(why),
                        Error::CorruptFile { path, .. } => Error::corrupt(path, why),
                        _ => Error::corrupt(&path, why),
                    }
                    .with_table(&self.table.name)
                };
                let other = FileStoreTable::open(&ident, &path).map_err(refuse)?;
                let c = Cleaner {
                    table: &other,
                    older_than_millis: self.older_than_millis,
                };
                let (snapshots, stale) = c.all_snapshots().map_err(refuse)?;
                let changelogs = c.changelogs().map_err(refuse)?;
                let used = c
                    .referenced(&snapshots, &stale, &changelogs)
                    .map_err(refuse)?;
                log::info!(
                    target: "paimon_rs.orphan",
                    "{}: table {ident} names the external root '{named}': its {} referenced data \
                     files are kept",
                    self.table.name,
                    used.data.len()
                );
                out.extend(used.data);
            }
        }
        Ok(out)
    }

    /// The root of `data-file.external-paths` (as spelled) some schema file of the table at
    /// `path` (or of a branch) names that `overlaps`; None when none does or the directory is
    /// not a table (no schema file is JSON). Refuses (corrupt) on a schema file that is not
    /// JSON beside readable ones, or a root that does not parse in a schema whose strategy
    /// writes to the roots.
    fn shared_root_named(
        &self,
        ident: &str,
        path: &Path,
        overlaps: &dyn Fn(&Path) -> bool,
    ) -> Result<Option<String>> {
        let schemas = crate::table::drop::raw_schemas(path)?;
        if schemas.iter().all(|s| s.json.is_none()) {
            log::debug!(
                target: "paimon_rs.orphan",
                "{}: {} is not a table (no schema file that is JSON): skipped",
                self.table.name,
                path.display()
            );
            return Ok(None);
        }
        let refuse = |p: &Path, why: String| {
            Err(Error::corrupt(
                p,
                format!(
                    "table {ident}: {why}: it may name an external root this table's clean \
                     lists; refusing to remove orphan files (its live files could be taken for \
                     orphans)"
                ),
            )
            .with_table(&self.table.name))
        };
        for s in &schemas {
            let options = match s.json.as_ref().map(|v| v.get("options")) {
                Some(Some(serde_json::Value::Object(o))) => o,
                Some(None | Some(serde_json::Value::Null)) => continue,
                _ => {
                    return refuse(
                        &s.path,
                        "the schema file is not JSON or its options are not an object".into(),
                    )
                }
            };
            let get = |k: &str| options.get(k).and_then(serde_json::Value::as_str);
            let writes = !get("data-file.external-paths.strategy")
                .unwrap_or("none")
                .eq_ignore_ascii_case("none");
            for r in get("data-file.external-paths")
                .unwrap_or("")
                .split(',')
                .map(str::trim)
                .filter(|r| !r.is_empty())
            {
                match normalize_root(r) {
                    Ok((_, root)) => {
                        if overlaps(&root_key(&root)) {
                            return Ok(Some(r.to_string()));
                        }
                    }
                    Err(why) if writes => {
                        return refuse(&s.path, format!("external root {why}"));
                    }
                    Err(_) => {}
                }
            }
        }
        Ok(None)
    }

    /// The table directory and every branch directory (`branch/branch-<name>`): each has its own
    /// snapshots, tags, changelogs and schemas; all share `manifest/` and the data directories.
    fn metadata_roots(&self) -> Result<Vec<PathBuf>> {
        let mut roots = vec![self.table.path.clone()];
        for (name, path, md) in entries(&self.table.path.join("branch"))? {
            if md.is_dir && name.starts_with("branch-") {
                roots.push(path);
            }
        }
        Ok(roots)
    }

    /// Every snapshot and tag file of every branch, all read; any
    /// failure refuses the clean. Apart, the stale snapshots (see `snapshot_manager`).
    #[allow(clippy::type_complexity)]
    fn all_snapshots(&self) -> Result<(Vec<(PathBuf, Snapshot)>, Vec<(PathBuf, Snapshot)>)> {
        let mut out = vec![];
        let mut stale = vec![];
        for root in self.metadata_roots()? {
            if crate::table::snapshot_manager::latest_schema(&root)?.is_none() {
                return Err(Error::corrupt(
                    root.join("schema"),
                    "a branch without any schema; refusing to remove orphan files",
                ));
            }
            let branch = root != self.table.path;
            let (live, st) = snapshots_of(&root, branch)?;
            out.extend(live);
            stale.extend(st);
            // long-lived changelogs are read apart (`changelogs`): their base and delta lists
            // may be gone (see `table::changelog`)
            for (name, path, md) in entries(&root.join("tag"))? {
                if name.starts_with("tag-") && !is_temp_name(&name) {
                    if !md.is_file {
                        return Err(Error::corrupt(&path, "not a regular file"));
                    }
                    let s = read_snapshot_file(&path)?;
                    out.push((path, s));
                }
            }
        }
        Ok((out, stale))
    }

    /// Every long-lived changelog of every branch, all read; any failure refuses the clean.
    fn changelogs(&self) -> Result<Vec<(PathBuf, Snapshot)>> {
        let mut out = vec![];
        for root in self.metadata_roots()? {
            for (name, path, md) in entries(&root.join("changelog"))? {
                if name.starts_with("changelog-") && !is_temp_name(&name) {
                    if !md.is_file {
                        return Err(Error::corrupt(&path, "not a regular file"));
                    }
                    out.push((path.clone(), read_snapshot_file(&path)?));
                }
            }
        }
        Ok(out)
    }

    /// Names of every file the snapshots and changelogs reference (files in `manifest/`, data
    /// files, index files). The stale snapshots' files are kept too, those of theirs that are
    /// gone skipped.
    /// A changelog's changelog manifest list is read strictly, its base and delta lists, index
    /// manifest and statistics if present (an expiry deletes them when the table has a
    /// changelog producer, as Java).
    fn referenced(
        &self,
        snapshots: &[(PathBuf, Snapshot)],
        stale: &[(PathBuf, Snapshot)],
        changelogs: &[(PathBuf, Snapshot)],
    ) -> Result<Referenced> {
        let why = "refusing to remove orphan files";
        let mut r = Walker::new(self.table, Missing::Refuse(why)).referenced(snapshots)?;
        if !changelogs.is_empty() {
            let c = crate::table::changelog::changelog_references(
                self.table,
                changelogs,
                Missing::Refuse(why),
                true,
            )?;
            r.meta.extend(c.meta);
            r.data.extend(c.data);
            r.index.extend(c.index);
        }
        if !stale.is_empty() {
            let s = Walker::new(self.table, Missing::Skip).referenced(stale)?;
            r.meta.extend(s.meta);
            r.data.extend(s.data);
            r.index.extend(s.index);
        }
        Ok(r)
    }
}

/// Whether a tag of the branch at `root` is on snapshot `id`: a branch created from a tag
/// starts at the tagged snapshot (Java's `createBranch(name, tag)` writes no EARLIEST hint).
fn tagged_start(root: &Path, id: i64) -> Result<bool> {
    let sm = crate::table::snapshot_manager::SnapshotManager::new(root);
    Ok(sm.tags()?.iter().any(|(_, s)| s.id == id))
}

/// Snapshots of one branch, refusing gaps and hints that name snapshots which are gone; and
/// apart, its stale snapshots.
#[allow(clippy::type_complexity)]
fn snapshots_of(
    root: &Path,
    branch: bool,
) -> Result<(Vec<(PathBuf, Snapshot)>, Vec<(PathBuf, Snapshot)>)> {
    let dir = root.join("snapshot");
    let mut ids = vec![];
    for (name, path, md) in entries(&dir)? {
        let Some(id) = name.strip_prefix("snapshot-") else {
            continue;
        };
        let id = id
            .parse::<i64>()
            .map_err(|_| Error::corrupt(&path, "a snapshot file whose id is not a number"))?;
        if !md.is_file {
            return Err(Error::corrupt(&path, "not a regular file"));
        }
        ids.push(id);
    }
    ids.sort_unstable();
    // stale snapshots (see `snapshot_manager`) are no state of the table and their base may be
    // gone: no gap in the history, and what they reference is kept only if present
    let stale = crate::table::snapshot_manager::SnapshotManager::new(root).stale_among(&ids);
    ids.retain(|id| !stale.contains(id));
    for w in ids.windows(2) {
        if w[1] != w[0] + 1 {
            return Err(Error::corrupt(
                dir.join(format!("snapshot-{}", w[0] + 1)),
                format!(
                    "snapshot missing between {} and {}; refusing to remove orphan files",
                    w[0], w[1]
                ),
            ));
        }
    }
    let mut earliest_hint = None;
    for hint in ["LATEST", "EARLIEST"] {
        let p = dir.join(hint);
        let text = match crate::io::read_to_string(&p) {
            Ok(t) => t,
            Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                continue
            }
            Err(e) => return Err(Error::corrupt(&p, format!("unreadable hint: {e}"))),
        };
        let named: i64 = text
            .trim()
            .parse()
            .map_err(|_| Error::corrupt(&p, format!("hint is not a snapshot id: {text:?}")))?;
        // EARLIEST may trail behind an expiry that deleted snapshots first; LATEST may trail
        // behind a commit that created its snapshot first. A hint ahead of every snapshot, or
        // a hint without snapshots, means snapshots are gone.
        if ids.last().is_none_or(|&max| named > max) {
            return Err(Error::corrupt(
                dir.join(format!("snapshot-{named}")),
                format!(
                    "{hint} names a snapshot that does not exist; refusing to remove orphan files"
                ),
            ));
        }
        if hint == "EARLIEST" {
            earliest_hint = Some(named);
        }
    }
    // snapshots before the first are only gone legitimately if an expiry recorded it: it moves
    // EARLIEST to the new first snapshot before deleting the older ones (an expiry that finds
    // nothing to expire writes EARLIEST naming the first snapshot, as Java's)
    if let Some(&min) = ids.first() {
        let expired = earliest_hint.is_some_and(|e| e >= min);
        if min > 1 && !expired && !(branch && tagged_start(root, min)?) {
            return Err(Error::corrupt(
                dir.join(format!("snapshot-{}", min - 1)),
                format!(
                    "the first snapshot is {min} but no EARLIEST hint records an expiry of the \
                     earlier ones (EARLIEST: {}; a Java expiry interrupted after deleting them \
                     leaves it behind: the next expiry that expires moves it); refusing to \
                     remove orphan files",
                    earliest_hint.map_or("none".to_string(), |e| e.to_string())
                ),
            ));
        }
    }
    let read = |ids: Vec<i64>| -> Result<Vec<(PathBuf, Snapshot)>> {
        ids.into_iter()
            .map(|id| {
                let p = dir.join(format!("snapshot-{id}"));
                read_snapshot_file(&p).map(|s| (p, s))
            })
            .collect()
    };
    Ok((read(ids)?, read(stale)?))
}

/// Whether the manifest lists of a table without any snapshot, tag, changelog or hint are what
/// first commits that crashed before creating `snapshot-1` leave: Ok(Err(why)) if not. Each
/// attempt of a first commit writes an empty base list and a delta list of manifests that only
/// add files; a lost history also has non-empty base lists (every snapshot after the first),
/// manifests listed twice (a snapshot's delta in the next one's base) or DELETE entries
/// (compactions, overwrites). A lost history of one snapshot looks the same as a crashed first
/// commit: its hint (`LATEST`, written after every commit) is what tells them apart.
fn crashed_first_commits(table: &FileStoreTable) -> Result<std::result::Result<(), String>> {
    let dir = table.manifest_dir();
    let (mut empty, mut full) = (0usize, 0usize);
    let mut listed: HashSet<String> = HashSet::new();
    for name in crate::io::list_names(&dir)? {
        if !name.starts_with("manifest-list-") {
            continue;
        }
        let p = dir.join(&name);
        let metas = read_manifest_list(&crate::io::read(&p)?, &p)?;
        if metas.is_empty() {
            empty += 1;
            continue;
        }
        full += 1;
        for m in metas {
            if !listed.insert(m.file_name.clone()) {
                return Ok(Err(format!("{} is listed twice", m.file_name)));
            }
            let mp = dir.join(&m.file_name);
            let bytes = match crate::io::read(&mp) {
                Ok(b) => b,
                Err(e) => return Ok(Err(format!("{name} lists {}: {e}", m.file_name))),
            };
            if read_manifest_entries(&bytes, &mp)?
                .iter()
                .any(|e| e.kind != FileKind::Add)
            {
                return Ok(Err(format!("{} deletes files", m.file_name)));
            }
        }
    }
    if full > empty {
        return Ok(Err(format!(
            "{full} non-empty manifest lists but {empty} empty ones"
        )));
    }
    Ok(Ok(()))
}

fn read_snapshot_file(path: &Path) -> Result<Snapshot> {
    let bytes = crate::io::read(path).map_err(|e| {
        Error::corrupt(
            path,
            format!("unreadable ({e}); refusing to remove orphan files"),
        )
    })?;
    serde_json::from_slice(&bytes).map_err(|e| Error::corrupt(path, e.to_string()))
}

/// The key a root (a normalized external root, `file:/dir` or a URI, or a local path) is
/// compared by: a local directory canonicalized (symbolic links resolved; `.` and `..` resolved
/// lexically when it does not exist, from its nearest existing ancestor), a URI with its scheme
/// in lower case and without trailing `/`.
fn root_key(root: &str) -> PathBuf {
    let local = match root.split_once(':') {
        Some((scheme, rest)) if scheme.eq_ignore_ascii_case("file") => rest,
        Some((scheme, rest)) if scheme.len() > 1 && !root.starts_with('/') => {
            return PathBuf::from(format!(
                "{}:{}",
                scheme.to_ascii_lowercase(),
                rest.trim_end_matches('/')
            ))
        }
        _ => root,
    };
    // lexical: `.` dropped, `..` pops (never above `/`); a relative path from the working
    // directory
    let local = std::path::absolute(local).unwrap_or_else(|_| PathBuf::from(local));
    let mut lexical = PathBuf::from("/");
    for c in local.components() {
        match c {
            std::path::Component::ParentDir => {
                lexical.pop();
            }
            std::path::Component::Normal(n) => lexical.push(n),
            _ => {}
        }
    }
    // canonicalize the nearest existing ancestor, then append the rest
    let mut rest = vec![];
    let mut at = lexical.as_path();
    loop {
        if let Ok(c) = std::fs::canonicalize(at) {
            let mut out = c;
            out.extend(rest.iter().rev());
            return out;
        }
        match (at.parent(), at.file_name()) {
            (Some(p), Some(n)) => {
                rest.push(n.to_os_string());
                at = p;
            }
            _ => return lexical,
        }
    }
}

/// Remove the orphan files of `table` last modified before `older_than_millis` (epoch millis),
/// then the bucket and partition directories this leaves empty. With `dry_run`, nothing is
/// deleted and the result lists what would be. See the module documentation for what is never
/// touched and when the clean refuses.
pub fn remove_orphan_files(
    table: &FileStoreTable,
    older_than_millis: i64,
    dry_run: bool,
) -> Result<OrphanCleanResult> {
    let now = chrono::Utc::now().timestamp_millis();
    if older_than_millis > now {
        return Err(Error::invalid(format!(
            "remove_orphan_files: older_than ({older_than_millis} ms) must not be in the future: \
             files of writes in flight would be removed"
        ))
        .with_table(&table.name));
    }
    let c = Cleaner {
        table,
        older_than_millis,
    };
    // list first, then read the snapshots: a commit landing in between is either seen or
    // references only files younger than the limit
    let listing = c.list()?;
    let (snapshots, stale) = c.all_snapshots()?;
    let changelogs = c.changelogs()?;
    if snapshots.is_empty() && changelogs.is_empty() && listing.has_manifest_lists {
        if let Err(why) = crashed_first_commits(table)? {
            return Err(Error::corrupt(
                table.path.join("snapshot"),
                format!(
                    "manifest lists exist but no snapshot, tag or changelog references them, and \
                     they are not what crashed first commits leave ({why}): snapshots lost? \
                     refusing to remove orphan files"
                ),
            ));
        }
    }
    let mut used = c.referenced(&snapshots, &stale, &changelogs)?;
    // external roots another table of the warehouse also writes to: its live files are kept
    used.data.extend(c.shared_root_references()?);
    let mut result = OrphanCleanResult::default();
    let mut removed_in = vec![0usize; listing.dirs.len()];
    for cand in listing.candidates {
        let used = match cand.area {
            Area::Meta => used.meta.contains(&cand.name),
            Area::Data => used.data.contains(&cand.name),
            Area::Index => used.index.contains(&cand.name),
            Area::Temp => false,
        };
        if used {
            continue;
        }
        if !dry_run {
            crate::io::remove_file_if_exists(&cand.path)?;
        }
        if let Some(d) = cand.dir {
            removed_in[d] += 1;
        }
        result.files.push(OrphanFile {
            path: cand.path,
            bytes: cand.bytes,
        });
    }
    // children come after their parents: walk backwards so a partition directory counts the
    // bucket directories removed from it
    for (i, dir) in listing.dirs.iter().enumerate().rev() {
        if !dir.old || removed_in[i] != dir.entries {
            continue;
        }
        // remove_dir refuses a directory that is not empty: a file a writer has just added keeps
        // it; a failure only leaves an empty directory behind
        if dry_run || crate::io::remove_empty_dir(&dir.path)? {
            result.directories.push(dir.path.clone());
            if let Some(p) = dir.parent {
                removed_in[p] += 1;
            }
        }
    }
    Ok(result)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::fs;
    use std::sync::Arc;
    use std::time::{Duration, SystemTime};

    use arrow_array::{Int64Array, RecordBatch, StringArray};
    use arrow_schema::{DataType, Field, Schema};

    use crate::commit::FileStoreCommit;
    use crate::table::catalog::FileSystemCatalog;
    use crate::table::new_schema::NewTableSchema;
    use crate::write::TableWrite;

    /// Table `db.t`: key (`dt` STRING, `k` BIGINT), value `v` STRING, one bucket;
    /// partitioned by `dt` if asked.
    pub(crate) fn table(dir: &Path, partitioned: bool) -> FileStoreTable {
        table_with_buckets(dir, partitioned, "1")
    }

    /// [`table`] with option `bucket` = `bucket`.
    fn table_with_buckets(dir: &Path, partitioned: bool, bucket: &str) -> FileStoreTable {
        table_with_options(dir, "db.t", partitioned, &[("bucket", bucket)])
    }

    /// [`table`] with `options`.
    fn table_with_options(
        dir: &Path,
        name: &str,
        partitioned: bool,
        options: &[(&str, &str)],
    ) -> FileStoreTable {
        let cat = FileSystemCatalog::new(dir).unwrap();
        cat.create_database("db", true).unwrap();
        let schema = Schema::new(vec![
            Field::new("dt", DataType::Utf8, false),
            Field::new("k", DataType::Int64, false),
            Field::new("v", DataType::Utf8, true),
        ]);
        let part = if partitioned {
            vec!["dt".into()]
        } else {
            vec![]
        };
        let mut opts: std::collections::BTreeMap<String, String> = [("bucket", "1")]
            .iter()
            .chain(options)
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        opts.entry("bucket".into()).or_insert_with(|| "1".into());
        let s =
            NewTableSchema::from_arrow(&schema, part, vec!["dt".into(), "k".into()], opts, None)
                .unwrap();
        cat.create_table(name, s, false).unwrap();
        cat.get_table(name).unwrap()
    }

    pub(crate) fn batch(dt: &str, ks: &[i64]) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![
            Field::new("dt", DataType::Utf8, false),
            Field::new("k", DataType::Int64, false),
            Field::new("v", DataType::Utf8, true),
        ]));
        RecordBatch::try_new(
            schema,
            vec![
                Arc::new(StringArray::from(vec![dt; ks.len()])),
                Arc::new(Int64Array::from(ks.to_vec())),
                Arc::new(StringArray::from(vec!["x"; ks.len()])),
            ],
        )
        .unwrap()
    }

    pub(crate) fn prepare(
        t: &FileStoreTable,
        dt: &str,
        ks: &[i64],
    ) -> Vec<crate::commit::CommitMessage> {
        let mut w = TableWrite::new(t.clone()).unwrap();
        w.write(&batch(dt, ks)).unwrap();
        w.prepare_commit().unwrap()
    }

    pub(crate) fn commit(t: &FileStoreTable, dt: &str, ks: &[i64]) {
        let msgs = prepare(t, dt, ks);
        FileStoreCommit::new(t.clone(), "u".into())
            .commit(&msgs, i64::MAX, None)
            .unwrap();
    }

    pub(crate) fn all_files(dir: &Path) -> Vec<PathBuf> {
        let mut out = vec![];
        for e in fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                out.extend(all_files(&p));
            } else {
                out.push(p);
            }
        }
        out.sort();
        out
    }

    /// Age every file and directory under `dir` by two days.
    pub(crate) fn age(dir: &Path) {
        let old = SystemTime::now() - Duration::from_secs(2 * 86_400);
        for e in fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                age(&p);
            }
            let f = fs::File::options().read(true).open(&p).unwrap();
            f.set_modified(old).unwrap();
        }
    }

    /// Java's default limit (the Python API's default too): files younger than one day are
    /// never removed.
    const DEFAULT_OLDER_THAN_MILLIS: i64 = 24 * 60 * 60 * 1000;

    fn default_limit() -> i64 {
        chrono::Utc::now().timestamp_millis() - DEFAULT_OLDER_THAN_MILLIS
    }

    #[test]
    fn removes_uncommitted_files_and_keeps_referenced_ones() {
        let dir = tempfile::tempdir().unwrap();
        let t = table(dir.path(), true);
        commit(&t, "a", &[1, 2]);
        commit(&t, "a", &[3]);
        let referenced = all_files(&t.path);
        // a writer killed after prepare_commit: data files in a new partition, nothing else
        let _orphans = prepare(&t, "b", &[7, 8]);
        // a commit killed after writing its manifest and manifest lists
        fs::write(t.manifest_dir().join("manifest-dead-0"), b"x").unwrap();
        fs::write(t.manifest_dir().join("manifest-list-dead-0"), b"x").unwrap();
        fs::write(t.path.join("snapshot").join(".snapshot-3.u.tmp"), b"x").unwrap();
        age(&t.path);
        let all = all_files(&t.path);
        assert!(all.len() > referenced.len() + 3);

        let dry = remove_orphan_files(&t, default_limit(), true).unwrap();
        assert_eq!(all_files(&t.path), all, "a dry run deletes nothing");
        let res = remove_orphan_files(&t, default_limit(), false).unwrap();
        assert_eq!(dry, res);
        assert_eq!(all_files(&t.path), referenced);
        assert_eq!(res.files.len(), all.len() - referenced.len());
        assert!(res.bytes() > 0);
        // the partition of the uncommitted write is gone with its bucket directory
        assert!(!t.path.join("dt=b").exists());
        assert_eq!(res.directories.len(), 2);
        // idempotent
        assert_eq!(
            remove_orphan_files(&t, default_limit(), false).unwrap(),
            Default::default()
        );
    }

    #[test]
    fn data_file_path_directory_is_where_data_files_are_listed() {
        let dir = tempfile::tempdir().unwrap();
        let t = table_with_options(
            dir.path(),
            "db.t",
            true,
            &[("data-file.path-directory", "./d/x/")],
        );
        commit(&t, "a", &[1, 2]);
        let referenced = all_files(&t.path);
        let data: Vec<_> = referenced
            .iter()
            .filter(|p| p.to_string_lossy().contains("bucket-"))
            .collect();
        assert!(!data.is_empty());
        for p in &data {
            assert!(
                p.starts_with(t.path.join("d/x/dt=a/bucket-0")),
                "{}",
                p.display()
            );
        }
        // a killed writer's files in a new partition under the directory
        let _orphans = prepare(&t, "b", &[7]);
        assert!(t.path.join("d/x/dt=b/bucket-0").is_dir());
        age(&t.path);
        let res = remove_orphan_files(&t, default_limit(), false).unwrap();
        assert!(!res.files.is_empty());
        assert_eq!(all_files(&t.path), referenced);
        assert!(!t.path.join("d/x/dt=b").exists());
        // the split names the bucket relative to the table, under the directory
        let plan = crate::TableScan::new(t.clone(), None).plan().unwrap();
        assert_eq!(plan.splits[0].bucket_path, "d/x/dt=a/bucket-0");
    }

    #[test]
    fn a_root_shared_with_another_table_keeps_that_tables_live_files() {
        let dir = tempfile::tempdir().unwrap();
        let ext = dir.path().join("ext");
        let uri = format!("file://{}", ext.display());
        let opts = [
            ("data-file.external-paths", uri.as_str()),
            ("data-file.external-paths.strategy", "round-robin"),
        ];
        let a = table_with_options(dir.path(), "db.a", true, &opts);
        let b = table_with_options(dir.path(), "db.b", true, &opts);
        commit(&a, "x", &[1, 2]);
        commit(&b, "x", &[3, 4]);
        let live = all_files(&ext);
        assert!(live.len() >= 2, "{live:?}");
        // a crashed writer of `a` under the shared root
        let _orphans = prepare(&a, "y", &[9]);
        age(&ext);
        let res = remove_orphan_files(&a, default_limit(), false).unwrap();
        assert_eq!(res.files.len(), 1, "{res:?}");
        assert_eq!(
            all_files(&ext),
            live,
            "b's live files were taken for orphans"
        );
        // `b` unreadable: `a`'s clean refuses rather than guess
        let _more = prepare(&a, "y", &[10]);
        age(&ext);
        fs::remove_dir_all(b.path.join("snapshot")).unwrap();
        fs::create_dir_all(b.path.join("snapshot")).unwrap();
        fs::write(b.path.join("snapshot").join("snapshot-1"), b"{").unwrap();
        let err = remove_orphan_files(&a, default_limit(), false).unwrap_err();
        assert!(err.to_string().contains("db.b"), "{err}");
        assert!(all_files(&ext).len() > live.len());
    }

    #[test]
    fn young_files_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        let t = table(dir.path(), false);
        commit(&t, "a", &[1]);
        let _orphans = prepare(&t, "a", &[2]);
        let before = all_files(&t.path);
        let res = remove_orphan_files(&t, default_limit(), false).unwrap();
        assert!(res.files.is_empty());
        assert_eq!(all_files(&t.path), before);
        // a limit in the future is refused
        let future = chrono::Utc::now().timestamp_millis() + 60_000;
        assert!(matches!(
            remove_orphan_files(&t, future, false),
            Err(Error::InvalidArgument { .. })
        ));
    }

    /// Branch `b` of `t` with the table's schema and no snapshot yet: its directory.
    fn new_branch(t: &FileStoreTable) -> PathBuf {
        let branch = t.path.join("branch").join("branch-b");
        fs::create_dir_all(branch.join("snapshot")).unwrap();
        fs::create_dir_all(branch.join("schema")).unwrap();
        fs::copy(
            t.path.join("schema").join("schema-0"),
            branch.join("schema").join("schema-0"),
        )
        .unwrap();
        branch
    }

    #[test]
    fn files_of_tags_old_snapshots_and_branches_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        let t = table(dir.path(), false);
        commit(&t, "a", &[1]);
        // overwrite: snapshot 2 deletes snapshot 1's file, which only snapshot 1 references
        let msgs = prepare(&t, "a", &[2]);
        FileStoreCommit::new(t.clone(), "u".into())
            .commit(&msgs, i64::MAX, Some(&vec![]))
            .unwrap();
        // a tag of snapshot 1, then snapshot 1 expired: only the tag references its files
        let s1 = t.path.join("snapshot").join("snapshot-1");
        fs::create_dir_all(t.path.join("tag")).unwrap();
        fs::copy(&s1, t.path.join("tag").join("tag-v1")).unwrap();
        fs::remove_file(&s1).unwrap();
        fs::write(t.path.join("snapshot").join("EARLIEST"), "2").unwrap();
        let referenced = all_files(&t.path);
        age(&t.path);
        let res = remove_orphan_files(&t, default_limit(), false).unwrap();
        assert!(res.files.is_empty(), "{res:?}");
        assert_eq!(all_files(&t.path), referenced);

        // a branch whose snapshot alone references a file
        let branch = new_branch(&t);
        fs::rename(
            t.path.join("tag").join("tag-v1"),
            branch.join("snapshot").join("snapshot-1"),
        )
        .unwrap();
        age(&t.path);
        let res = remove_orphan_files(&t, default_limit(), false).unwrap();
        assert!(res.files.is_empty(), "{res:?}");
    }

    #[test]
    fn refuses_on_a_partial_view() {
        let dir = tempfile::tempdir().unwrap();
        let t = table(dir.path(), false);
        commit(&t, "a", &[1]);
        commit(&t, "a", &[2]);
        commit(&t, "a", &[3]);
        let _orphans = prepare(&t, "a", &[4]);
        age(&t.path);
        let snap = t.snapshot_manager().snapshot(2).unwrap();
        let before = all_files(&t.path);
        let refused = |t: &FileStoreTable| {
            let r = remove_orphan_files(t, default_limit(), false);
            assert!(matches!(r, Err(Error::CorruptFile { .. })), "{r:?}");
            assert_eq!(all_files(&t.path).len(), before.len(), "nothing deleted");
        };
        let hide = |p: PathBuf| {
            let aside = p.with_extension("aside");
            fs::rename(&p, &aside).unwrap();
            (p, aside)
        };
        let mf = t.manifest_dir();
        let first_manifest = read_manifest_list(
            &fs::read(mf.join(&snap.delta_manifest_list)).unwrap(),
            Path::new("x"),
        )
        .unwrap()[0]
            .file_name
            .clone();
        for p in [
            mf.join(&snap.delta_manifest_list),
            mf.join(&first_manifest),
            t.path.join("snapshot").join("snapshot-2"),
            t.path.join("snapshot").join("snapshot-1"),
        ] {
            let (p, aside) = hide(p);
            refused(&t);
            fs::rename(aside, p).unwrap();
        }
        // an unreadable (not decodable) manifest list
        let p = mf.join(&snap.base_manifest_list);
        let bytes = fs::read(&p).unwrap();
        fs::write(&p, b"garbage").unwrap();
        let r = remove_orphan_files(&t, default_limit(), false);
        assert!(matches!(r, Err(Error::CorruptFile { .. })), "{r:?}");
        fs::write(&p, bytes).unwrap();
        // LATEST ahead of every snapshot
        fs::write(t.path.join("snapshot").join("LATEST"), "9").unwrap();
        let r = remove_orphan_files(&t, default_limit(), false);
        assert!(matches!(r, Err(Error::CorruptFile { .. })), "{r:?}");
        fs::write(t.path.join("snapshot").join("LATEST"), "3").unwrap();
        assert_eq!(all_files(&t.path), before);
        // all fine again: only the uncommitted file goes
        age(&t.path);
        let res = remove_orphan_files(&t, default_limit(), false).unwrap();
        assert_eq!(res.files.len(), 1);
    }

    #[test]
    fn manifests_without_snapshots_are_refused_data_files_alone_are_orphans() {
        let dir = tempfile::tempdir().unwrap();
        let t = table(dir.path(), false);
        // first write killed before its commit: data files only
        let _orphans = prepare(&t, "a", &[1]);
        age(&t.path);
        let res = remove_orphan_files(&t, default_limit(), false).unwrap();
        assert_eq!(res.files.len(), 1);
        // manifest lists but no snapshot at all: snapshots may have been lost
        fs::create_dir_all(t.manifest_dir()).unwrap();
        fs::write(t.manifest_dir().join("manifest-list-x-0"), b"x").unwrap();
        age(&t.path);
        let r = remove_orphan_files(&t, default_limit(), false);
        assert!(matches!(r, Err(Error::CorruptFile { .. })), "{r:?}");
    }

    /// What a first commit killed after its manifest lists and before `snapshot-1` leaves: a
    /// committed table without its snapshot files and hints.
    fn drop_snapshots(t: &FileStoreTable) {
        let sdir = t.path.join("snapshot");
        for e in fs::read_dir(&sdir).unwrap() {
            fs::remove_file(e.unwrap().path()).unwrap();
        }
    }

    #[test]
    fn crashed_first_commits_are_cleaned_lost_histories_refused() {
        let dir = tempfile::tempdir().unwrap();
        let t = table(dir.path(), true);
        // two attempts of the first commit, each killed before its snapshot
        commit(&t, "a", &[1]);
        drop_snapshots(&t);
        commit(&t, "b", &[2]);
        drop_snapshots(&t);
        let left = all_files(&t.path);
        // young: kept (a first commit may be in flight)
        assert!(remove_orphan_files(&t, default_limit(), false)
            .unwrap()
            .files
            .is_empty());
        age(&t.path);
        let res = remove_orphan_files(&t, default_limit(), false).unwrap();
        let schema = all_files(&t.path.join("schema"));
        assert_eq!(all_files(&t.path), schema, "only the schema is left");
        assert_eq!(res.files.len(), left.len() - schema.len());
        // the next commit starts the table
        commit(&t, "c", &[3]);
        let sm = t.snapshot_manager();
        assert_eq!(sm.ids().unwrap(), vec![1]);
        let live = crate::table::live::live_entries(&t, &sm.snapshot(1).unwrap()).unwrap();
        assert_eq!(live.len(), 1);
        assert_eq!(live[0].file.row_count, 1);

        // a lost history of two snapshots is not mistaken for crashed first commits
        let dir = tempfile::tempdir().unwrap();
        let t = table(dir.path(), true);
        commit(&t, "a", &[1]);
        commit(&t, "b", &[2]);
        drop_snapshots(&t);
        age(&t.path);
        let before = all_files(&t.path);
        let r = remove_orphan_files(&t, default_limit(), false);
        let refused = |m: &str| m.contains("not what crashed first commits leave");
        assert!(
            matches!(&r, Err(Error::CorruptFile { message, .. }) if refused(message)),
            "{r:?}"
        );
        assert_eq!(all_files(&t.path), before);
    }

    /// Like [`table`], partitioned, with dynamic buckets (`bucket = -1`): every commit that
    /// writes new keys writes a hash index file into `index/`.
    fn dynamic_table(dir: &Path) -> FileStoreTable {
        table_with_buckets(dir, true, "-1")
    }

    fn index_files(t: &FileStoreTable) -> Vec<PathBuf> {
        let d = t.path.join("index");
        if d.exists() {
            all_files(&d)
        } else {
            vec![]
        }
    }

    /// `index/` (Java's `OrphanFilesClean` lists it too): a hash index file no snapshot lists
    /// (a write prepared but never committed, a stray file) is removed once old enough, a dry
    /// run only lists it; the index files live snapshots list stay, and the table reads as
    /// before.
    #[test]
    fn unreferenced_index_files_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let t = dynamic_table(dir.path());
        commit(&t, "a", &[1, 2]);
        commit(&t, "a", &[3]);
        let referenced = all_files(&t.path);
        let kept_index = index_files(&t);
        assert!(!kept_index.is_empty());
        // a writer (a late speculative attempt) that prepared its commit and died
        let orphan_msgs = prepare(&t, "a", &[9]);
        let orphan_index: Vec<String> = orphan_msgs
            .iter()
            .flat_map(|m| &m.data_increment.new_index_files)
            .map(|f| f.file_name.clone())
            .collect();
        assert_eq!(orphan_index.len(), 1);
        fs::write(t.path.join("index").join("index-dead-0"), b"x").unwrap();
        fs::write(t.path.join("index").join(".index-x-0.u.tmp"), b"x").unwrap();
        age(&t.path);
        let all = all_files(&t.path);
        let dry = remove_orphan_files(&t, default_limit(), true).unwrap();
        assert_eq!(all_files(&t.path), all, "a dry run deletes nothing");
        for name in orphan_index
            .iter()
            .map(String::as_str)
            .chain(["index-dead-0"])
        {
            assert!(
                dry.files.iter().any(|f| f.path.ends_with(name)),
                "{name}: {dry:?}"
            );
        }
        let res = remove_orphan_files(&t, default_limit(), false).unwrap();
        assert_eq!(dry, res);
        assert_eq!(all_files(&t.path), referenced);
        assert_eq!(index_files(&t), kept_index);
        assert_eq!(crate::commit::test_support::live_rows(&t), 3);
    }

    /// An index file no live snapshot lists is kept while a tag, a branch or a long-lived
    /// changelog does (their index manifests are read as the snapshots'), and removed after.
    #[test]
    fn index_files_of_tags_branches_and_changelogs_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        let t = dynamic_table(dir.path());
        commit(&t, "a", &[1]);
        let first_index = index_files(&t);
        assert_eq!(first_index.len(), 1);
        // an overwrite drops the partition's hash index: only snapshot 1 lists the first file
        let msgs = prepare(&t, "a", &[2]);
        FileStoreCommit::new(t.clone(), "u".into())
            .commit(&msgs, i64::MAX, Some(&vec![]))
            .unwrap();
        let s1 = t.path.join("snapshot").join("snapshot-1");
        let s1_bytes = fs::read(&s1).unwrap();
        fs::remove_file(&s1).unwrap();
        fs::write(t.path.join("snapshot").join("EARLIEST"), "2").unwrap();
        let kept = |t: &FileStoreTable| {
            age(&t.path);
            let res = remove_orphan_files(t, default_limit(), false).unwrap();
            assert!(
                res.files
                    .iter()
                    .all(|f| !f.path.starts_with(t.path.join("index"))),
                "{res:?}"
            );
            assert!(first_index[0].exists());
        };
        // a tag of snapshot 1
        fs::create_dir_all(t.path.join("tag")).unwrap();
        fs::write(t.path.join("tag").join("tag-v1"), &s1_bytes).unwrap();
        kept(&t);
        fs::remove_file(t.path.join("tag").join("tag-v1")).unwrap();
        // a branch whose snapshot 1 it is
        let branch = new_branch(&t);
        fs::write(branch.join("snapshot").join("snapshot-1"), &s1_bytes).unwrap();
        kept(&t);
        fs::remove_dir_all(t.path.join("branch")).unwrap();
        // a long-lived changelog of the expired snapshot 1
        fs::create_dir_all(t.path.join("changelog")).unwrap();
        fs::write(t.path.join("changelog").join("changelog-1"), &s1_bytes).unwrap();
        kept(&t);
        fs::remove_file(t.path.join("changelog").join("changelog-1")).unwrap();
        // nothing lists it any more
        age(&t.path);
        let res = remove_orphan_files(&t, default_limit(), false).unwrap();
        assert!(
            res.files.iter().any(|f| f.path == first_index[0]),
            "{res:?}"
        );
        assert!(!first_index[0].exists());
        assert_eq!(index_files(&t).len(), 1);
        assert_eq!(crate::commit::test_support::live_rows(&t), 1);
    }

    #[cfg(unix)]
    #[test]
    fn never_follows_symlinks_out_of_the_table() {
        let dir = tempfile::tempdir().unwrap();
        let t = table(dir.path(), true);
        commit(&t, "a", &[1]);
        let outside = dir.path().join("outside");
        fs::create_dir_all(outside.join("bucket-0")).unwrap();
        fs::write(outside.join("bucket-0").join("data-x.parquet"), b"x").unwrap();
        std::os::unix::fs::symlink(&outside, t.path.join("dt=z")).unwrap();
        std::os::unix::fs::symlink(
            outside.join("bucket-0").join("data-x.parquet"),
            t.path
                .join("dt=a")
                .join("bucket-0")
                .join("data-link.parquet"),
        )
        .unwrap();
        age(&outside);
        age(&t.path);
        let res = remove_orphan_files(&t, default_limit(), false).unwrap();
        assert!(res.files.is_empty(), "{res:?}");
        assert!(outside.join("bucket-0").join("data-x.parquet").exists());
    }

    #[cfg(unix)]
    #[test]
    fn root_keys_compare_a_directory_however_spelled() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let ext = d.join("ext");
        fs::create_dir_all(ext.join("sub")).unwrap();
        fs::create_dir(d.join("x")).unwrap();
        std::os::unix::fs::symlink(&ext, d.join("link")).unwrap();
        let key = root_key(
            &normalize_root(&format!("file://{}", ext.display()))
                .unwrap()
                .1,
        );
        for spelling in [
            format!("file://localhost{}", ext.display()),
            format!("FILE://{}/", ext.display()),
            format!("file:{}//", ext.display()),
            format!("file://{}/x/../ext", d.display()),
            format!("file://{}/./link", d.display()),
        ] {
            let (_, root) = normalize_root(&spelling).unwrap();
            assert_eq!(root_key(&root), key, "{spelling}");
        }
        // a missing directory: `..` resolved lexically, the existing part canonicalized
        let missing = format!("file://{}/link/new/../new2", d.display());
        assert_eq!(
            root_key(&normalize_root(&missing).unwrap().1),
            key.join("new2")
        );
        assert!(root_key(&format!("{}/sub", ext.display())).starts_with(&key));
        assert_eq!(root_key("S3://bucket/dir/"), root_key("s3://bucket/dir"));
        assert!(normalize_root("file://server/dir").is_err());
        assert!(normalize_root("relative/dir").is_err());
    }
}
