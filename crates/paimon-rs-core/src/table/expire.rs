//! Snapshot expiry (Java's `ExpireSnapshotsImpl` / `SnapshotDeletion`), and the deletion of
//! what discarded snapshots alone referenced, shared with rollback and tag deletion.
//!
//! Which snapshots expire is Java's rule: of snapshots `earliest..=latest`, those below
//! `latest - snapshot.num-retained.max + 1` expire; the next ones expire while they are older
//! than `snapshot.time-retained`, up to `latest - snapshot.num-retained.min + 1` (exclusive), and
//! at most `snapshot.expire.limit` in one run; a consumer's next snapshot (`consumer/`) is kept.
//!
//! What is deleted differs in method, not in result: every file an expired snapshot referenced
//! (data and extra files, manifests, manifest lists, index manifests and index files,
//! statistics) that no remaining snapshot, tag, long-lived changelog or branch references. The
//! remaining ones are all read (each manifest once), where Java reads the expired deltas and
//! trusts that a deleted file never comes back. Order: `EARLIEST` is moved first, then snapshot
//! files are deleted lowest first (so the history never has a gap), then the files, read after
//! the snapshots are gone; a reader of an expired snapshot then finds its snapshot file missing
//! and gets [`Error::SnapshotExpired`]. An interrupted expiry leaves only orphans.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::io;
use crate::options::parse_duration_ms;
use crate::spec::binary_row::deserialize_row;
use crate::spec::manifest::ManifestEntry;
use crate::spec::partition::partition_path;
use crate::table::references::{Labeled, Missing, Walker};
use crate::table::snapshot_manager::SnapshotManager;
use crate::table::FileStoreTable;

/// Java's defaults.
pub const DEFAULT_NUM_RETAINED_MIN: i64 = 10;
pub const DEFAULT_NUM_RETAINED_MAX: i64 = i32::MAX as i64;
pub const DEFAULT_TIME_RETAINED_MS: i64 = 60 * 60 * 1000;
pub const DEFAULT_EXPIRE_LIMIT: i64 = 50;

/// What an expiry keeps: Java's `ExpireConfig`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpireConfig {
    pub num_retained_min: i64,
    pub num_retained_max: i64,
    pub time_retained_ms: i64,
    pub expire_limit: i64,
}

fn get<'a>(raw: &'a BTreeMap<String, String>, key: &str) -> Option<&'a str> {
    raw.get(key).map(String::as_str)
}

fn int_opt(raw: &BTreeMap<String, String>, key: &str) -> Result<Option<i64>> {
    get(raw, key)
        .map(|v| {
            v.trim().parse::<i64>().map_err(|_| {
                Error::invalid(format!(
                    "Could not parse value '{v}' for key '{key}'. (expected an integer)"
                ))
            })
        })
        .transpose()
}

impl ExpireConfig {
    /// From the table options (`snapshot.num-retained.min`, `.max`, `snapshot.time-retained`,
    /// `snapshot.expire.limit`), validated as Java does.
    pub fn from_options(raw: &BTreeMap<String, String>) -> Result<Self> {
        let time = match get(raw, "snapshot.time-retained") {
            Some(v) => parse_duration_ms("snapshot.time-retained", v)? as i64,
            None => DEFAULT_TIME_RETAINED_MS,
        };
        let c = ExpireConfig {
            num_retained_min: int_opt(raw, "snapshot.num-retained.min")?
                .unwrap_or(DEFAULT_NUM_RETAINED_MIN),
            num_retained_max: int_opt(raw, "snapshot.num-retained.max")?
                .unwrap_or(DEFAULT_NUM_RETAINED_MAX),
            time_retained_ms: time,
            expire_limit: int_opt(raw, "snapshot.expire.limit")?.unwrap_or(DEFAULT_EXPIRE_LIMIT),
        };
        c.validate()?;
        Ok(c)
    }

    /// Java's checks (`ExpireSnapshotsImpl` / `CoreOptions`), in its words.
    pub fn validate(&self) -> Result<()> {
        if self.num_retained_min < 1 {
            return Err(Error::invalid(
                "The minimum number of completed snapshots to retain should be >= 1.",
            ));
        }
        if self.num_retained_max < self.num_retained_min {
            return Err(Error::invalid(
                "The maximum number of snapshots to retain should be >= the minimum number.",
            ));
        }
        if self.expire_limit < 1 {
            return Err(Error::invalid("snapshot.expire.limit should be >= 1."));
        }
        if self.time_retained_ms < 0 {
            return Err(Error::invalid(
                "snapshot.time-retained must not be negative.",
            ));
        }
        Ok(())
    }
}

/// Files deleted by an expiry, rollback or tag deletion.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reclaimed {
    /// Snapshot (or tag) files deleted.
    pub snapshots: Vec<i64>,
    /// Other files deleted, with their sizes.
    pub files: Vec<(PathBuf, u64)>,
}

impl Reclaimed {
    pub fn bytes(&self) -> u64 {
        self.files.iter().map(|(_, b)| b).sum()
    }
}

/// The table directory and its branch directories (`branch/branch-<name>`): their snapshots,
/// tags and changelogs all share `manifest/` and the data files.
fn metadata_roots(table: &Path) -> Result<Vec<PathBuf>> {
    let mut roots = vec![table.to_path_buf()];
    for name in io::list_names(&table.join("branch"))? {
        let p = table.join("branch").join(&name);
        if name.starts_with("branch-") && io::is_dir(&p) {
            roots.push(p);
        }
    }
    Ok(roots)
}

/// Everything that keeps files alive: every snapshot, tag and long-lived changelog of the table
/// and of its branches, read now.
pub(crate) fn all_kept(table: &FileStoreTable) -> Result<Vec<Labeled>> {
    let mut out = vec![];
    for root in metadata_roots(&table.path)? {
        out.extend(crate::table::references::snapshots_and_tags(&root)?);
        let dir = root.join("changelog");
        for name in io::list_names(&dir)? {
            if name.starts_with("changelog-") && !name.ends_with(".tmp") {
                let p = dir.join(&name);
                let bytes = io::read(&p)?;
                let s = serde_json::from_slice(&bytes)
                    .map_err(|e| Error::corrupt(&p, e.to_string()))?;
                out.push((p, s));
            }
        }
    }
    Ok(out)
}

/// Delete what `discarded` references and `kept` does not. `discarded` is read tolerantly
/// (what is already gone is skipped), `kept` strictly: if a kept snapshot's metadata cannot be
/// read nothing is deleted.
pub(crate) fn delete_unreferenced(
    table: &FileStoreTable,
    discarded: &[Labeled],
    kept: &[Labeled],
    why: &'static str,
) -> Result<Vec<(PathBuf, u64)>> {
    if discarded.is_empty() {
        return Ok(vec![]);
    }
    let keep = Walker::new(table, Missing::Refuse(why))
        .live_only()
        .referenced(kept)?;
    let mut data: Vec<ManifestEntry> = vec![];
    let mut index: Vec<PathBuf> = vec![];
    let gone = Walker::new(table, Missing::Skip).walk(
        discarded,
        |e| {
            if !keep.data.contains(&e.file.file_name) {
                data.push(e.clone());
            }
        },
        |e| {
            if !keep.index.contains(&e.file_name) {
                index.push(match &e.external_path {
                    Some(p) => PathBuf::from(p.strip_prefix("file:").unwrap_or(p)),
                    None => table.path.join("index").join(&e.file_name),
                });
            }
        },
    )?;
    let mut paths: Vec<PathBuf> = vec![];
    let mut seen: HashSet<String> = HashSet::new();
    let mut dirs: HashMap<(Vec<u8>, i32), PathBuf> = HashMap::new();
    let ptypes = table.partition_types()?;
    let o = &table.options;
    for e in data {
        if !seen.insert(e.file.file_name.clone()) {
            continue;
        }
        let dir = match &e.file.external_path {
            Some(p) => PathBuf::from(p.strip_prefix("file:").unwrap_or(p))
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
            if !keep.data.contains(x) {
                paths.push(dir.join(x));
            }
        }
    }
    paths.extend(index);
    for s in gone.statistics.difference(&keep.statistics) {
        paths.push(table.path.join("statistics").join(s));
    }
    // data first, then the metadata that names it: an interruption leaves orphans only
    let mut meta: Vec<&String> = gone.meta.difference(&keep.meta).collect();
    meta.sort();
    paths.extend(meta.into_iter().map(|m| table.manifest_dir().join(m)));
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

/// The smallest `nextSnapshot` of the table's consumers (`consumer/consumer-<id>`), which Java
/// never expires.
fn min_consumer_snapshot(table: &FileStoreTable) -> Result<Option<i64>> {
    let dir = table.path.join("consumer");
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

/// Changelog decoupling (`changelog.num-retained.*`, `changelog.time-retained` above the
/// snapshot retention) keeps the changelog of expired snapshots as `changelog/changelog-<id>`
/// files; paimon_rs writes no changelogs, so it refuses to expire a snapshot that has one
/// under such options rather than drop what Java would keep.
fn check_changelog_decoupling(table: &FileStoreTable, expiring: &[Labeled]) -> Result<()> {
    let raw = &table.options.raw;
    let decoupled = [
        "changelog.num-retained.min",
        "changelog.num-retained.max",
        "changelog.time-retained",
    ]
    .iter()
    .any(|k| raw.contains_key(*k));
    if !decoupled {
        return Ok(());
    }
    if let Some((p, s)) = expiring
        .iter()
        .find(|(_, s)| s.changelog_manifest_list.is_some())
    {
        return Err(Error::unsupported(format!(
            "expiring snapshot {} ({}), which has a changelog, with changelog.num-retained.* / \
             changelog.time-retained set: Java keeps such changelogs as long-lived changelog \
             files, which paimon_rs does not write; expire this table with Java Paimon",
            s.id,
            p.display()
        )));
    }
    Ok(())
}

/// Expire snapshots of `table` under `config` (Java's `ExpireSnapshotsImpl.expire`). `now_ms`
/// is the clock the time retention is measured against.
pub fn expire_snapshots(
    table: &FileStoreTable,
    config: &ExpireConfig,
    now_ms: i64,
) -> Result<Reclaimed> {
    config.validate().map_err(|e| e.with_table(&table.name))?;
    expire_inner(table, config, now_ms).map_err(|e| e.with_table(&table.name))
}

fn expire_inner(table: &FileStoreTable, config: &ExpireConfig, now_ms: i64) -> Result<Reclaimed> {
    let sm = table.snapshot_manager();
    let (Some(earliest), Some(latest)) = (sm.earliest_id()?, sm.latest_id()?) else {
        return Ok(Reclaimed::default());
    };
    let min = (latest - config.num_retained_max + 1).max(earliest);
    let mut max_exclusive = latest - config.num_retained_min + 1;
    if let Some(c) = min_consumer_snapshot(table)? {
        max_exclusive = max_exclusive.min(c);
    }
    max_exclusive = max_exclusive.min(earliest.saturating_add(config.expire_limit));
    let older_than = now_ms - config.time_retained_ms;
    let mut end = max_exclusive;
    for id in min..max_exclusive {
        if let Some(s) = sm.try_snapshot(id)? {
            if older_than <= s.time_millis {
                end = id;
                break;
            }
        }
    }
    expire_until(table, &sm, earliest, end)
}

/// Expire snapshots `earliest..end` (Java's `expireUntil`).
fn expire_until(
    table: &FileStoreTable,
    sm: &SnapshotManager,
    earliest: i64,
    end: i64,
) -> Result<Reclaimed> {
    if end <= earliest {
        return Ok(Reclaimed::default());
    }
    let mut expiring: Vec<Labeled> = vec![];
    for id in earliest..end {
        if let Some(s) = sm.try_snapshot(id)? {
            expiring.push((sm.snapshot_path(id), s));
        }
    }
    check_changelog_decoupling(table, &expiring)?;
    if sm.try_snapshot(end)?.is_none() {
        return Err(Error::corrupt(
            sm.snapshot_path(end),
            "missing: the snapshot that becomes the earliest after this expiry; refusing to expire",
        ));
    }
    // the new earliest first: readers never see a gap, an interrupted expiry resumes from it
    sm.write_earliest_hint(end)?;
    let mut out = Reclaimed::default();
    for (p, s) in &expiring {
        io::remove_file_if_exists(p)?;
        out.snapshots.push(s.id);
    }
    let kept = all_kept(table)?;
    out.files = delete_unreferenced(table, &expiring, &kept, "refusing to expire snapshots")?;
    log::info!(
        target: "paimon_rs.expire",
        "{}: expired snapshots {}..={} ({} files, {} bytes deleted)",
        table.name,
        earliest,
        end - 1,
        out.files.len(),
        out.bytes()
    );
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(kv: &[(&str, &str)]) -> BTreeMap<String, String> {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn config_defaults_and_javas_refusals() {
        let c = ExpireConfig::from_options(&opts(&[])).unwrap();
        assert_eq!(
            (
                c.num_retained_min,
                c.num_retained_max,
                c.time_retained_ms,
                c.expire_limit
            ),
            (10, i32::MAX as i64, 3_600_000, 50)
        );
        let c = ExpireConfig::from_options(&opts(&[
            ("snapshot.num-retained.min", "2"),
            ("snapshot.num-retained.max", "5"),
            ("snapshot.time-retained", "1 d"),
            ("snapshot.expire.limit", "3"),
        ]))
        .unwrap();
        assert_eq!(
            (
                c.num_retained_min,
                c.num_retained_max,
                c.time_retained_ms,
                c.expire_limit
            ),
            (2, 5, 86_400_000, 3)
        );
        for kv in [
            &[("snapshot.num-retained.min", "0")][..],
            &[("snapshot.num-retained.max", "3")],
            &[("snapshot.expire.limit", "0")],
            &[("snapshot.time-retained", "soon")],
            &[("snapshot.num-retained.min", "x")],
        ] {
            assert!(ExpireConfig::from_options(&opts(kv)).is_err(), "{kv:?}");
        }
    }
}
