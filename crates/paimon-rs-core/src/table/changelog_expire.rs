//! The expiry of long-lived changelogs (Java's `ExpireChangelogImpl` / `ChangelogDeletion`; what
//! a changelog is and keeps alive: [`super::changelog`]).
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

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use crate::error::{Error, Result};
use crate::io;
use crate::spec::manifest::{read_manifest_list, FileKind, ManifestEntry};
use crate::table::changelog::{
    all_changelogs, changelog_references, kept_lists, ChangelogManager, EARLIEST,
};
use crate::table::file_deletion::{
    deleted_in_delta, entries_of_list, held_by_tag_before, kept_outside, min_consumer_snapshot,
    remove_files, sorted_tags,
};
use crate::table::references::{Labeled, Missing};
use crate::table::retention::ChangelogRetention;
use crate::table::FileStoreTable;

/// Changelog ids expired, and the files deleted (with their sizes).
type Expired = (Vec<i64>, Vec<(PathBuf, u64)>);

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
    if let Some(c) = min_consumer_snapshot(table)? {
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
    let tags = sorted_tags(table)?;
    // what branches (snapshots, tags, changelogs) keep
    let branch_changelogs: Vec<Labeled> = all_changelogs(table)?
        .into_iter()
        .filter(|(p, _)| !p.starts_with(&cm.dir))
        .collect();
    let other = kept_outside(table, &branch_changelogs, why)?;

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
                let held = held_by_tag_before(table, &tags, c.id, &mut tag_files, why)?;
                for e in deleted_in_delta(table, c)?.unwrap_or_default() {
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
    files.extend(remove_files(table, data, meta, &keep_extra)?);
    log::info!(
        target: "paimon_rs.expire",
        "{}: expired changelogs {earliest}..{end} ({} files deleted)",
        table.name,
        files.len()
    );
    Ok((ids, files))
}

/// Entries of the manifests of `list`, read tolerantly (what is gone is skipped).
pub(crate) fn entries_of(table: &FileStoreTable, list: &str) -> Result<Vec<ManifestEntry>> {
    Ok(entries_of_list(table, list)?.unwrap_or_default())
}
