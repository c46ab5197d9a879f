//! Rollback (Java's `RollbackHelper`): the table goes back to a snapshot or a tag; the newer
//! snapshots, the tags on them and the newer long-lived changelogs are deleted, then every file
//! only they referenced.
//!
//! Order, so that every intermediate state is a valid, shorter history: (1) `LATEST` is pointed
//! at the target; (2) rolling back to a tag whose snapshot expired, the snapshot file is created
//! again from the tag; (3) snapshot files are deleted newest first, until none above the target
//! remains (a commit landing meanwhile on top of one being deleted is rolled back too: it came
//! before the rollback finished); (4) tags on discarded snapshots; (5) `EARLIEST` and `LATEST`
//! are set; (6) the files that only the snapshots and tags read in (1) referenced are deleted,
//! never files of commits that landed during the rollback (those are left for the orphan clean).
//! A writer that commits on top of a snapshot the rollback deleted withdraws its snapshot and
//! retries on the new latest (see `commit`), so nothing it acknowledges after the rollback is
//! lost. An interrupted rollback leaves a valid table; running it again finishes it.

use crate::error::{Error, Result};
use crate::io;
use crate::spec::snapshot::Snapshot;
use crate::table::changelog::ChangelogManager;
use crate::table::file_deletion::{all_kept, delete_unreferenced, Reclaimed};
use crate::table::references::Labeled;
use crate::table::FileStoreTable;

/// What to roll back to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RollbackTarget {
    Snapshot(i64),
    Tag(String),
}

/// Roll `table` back to `target`; returns what was deleted.
pub fn rollback_to(table: &FileStoreTable, target: &RollbackTarget) -> Result<Reclaimed> {
    rollback_inner(table, target).map_err(|e| e.with_table(&table.name))
}

/// Roll `table` back to the newest snapshot committed at or before `millis` (Java's
/// `rollback_to_timestamp` procedure, pypaimon's `rollback_to_timestamp`).
pub fn rollback_to_timestamp(table: &FileStoreTable, millis: i64) -> Result<Reclaimed> {
    let s = table
        .snapshot_manager()
        .earlier_or_equal_time_millis(millis)
        .map_err(|e| e.with_table(&table.name))?
        .ok_or_else(|| {
            Error::invalid(format!(
                "No snapshot found with timestamp earlier than or equal to {millis}ms."
            ))
            .with_table(&table.name)
        })?;
    rollback_to(table, &RollbackTarget::Snapshot(s.id))
}

/// The target snapshot, and whether its snapshot file must be created again from a tag.
fn resolve(table: &FileStoreTable, target: &RollbackTarget) -> Result<(Snapshot, bool)> {
    let sm = table.snapshot_manager();
    match target {
        RollbackTarget::Snapshot(id) => {
            // a stale snapshot (see `snapshot_manager`) is no state of the table: rolling back
            // to it would delete the live snapshots for a base whose files expiry removed
            let stale = match sm.try_snapshot(*id)? {
                Some(s) if !sm.is_stale(*id)? => return Ok((s, false)),
                found => found.is_some(),
            };
            // expired, but maybe tagged (as Java and pypaimon)
            for (_, s) in sm.tags()? {
                if s.id == *id {
                    return Ok((s, true));
                }
            }
            if stale {
                return Err(Error::invalid(format!(
                    "Rollback snapshot '{id}' is a stale snapshot (left by a commit that lost a \
                     race with snapshot expiry), not part of the table's history"
                )));
            }
            Err(Error::invalid(format!(
                "Rollback snapshot '{id}' doesn't exist (neither a snapshot nor a tag)."
            )))
        }
        RollbackTarget::Tag(name) => {
            let s = sm.tag(name)?;
            // the tag's snapshot expired and a stale snapshot took its id: recreate from the tag
            let missing = match sm.try_snapshot(s.id)? {
                None => true,
                Some(_) => sm.is_stale(s.id)?,
            };
            Ok((s, missing))
        }
    }
}

fn rollback_inner(table: &FileStoreTable, target: &RollbackTarget) -> Result<Reclaimed> {
    let sm = table.snapshot_manager();
    let (snapshot, recreate) = resolve(table, target)?;
    let r = snapshot.id;
    let Some(latest) = sm.latest_id()? else {
        return Err(Error::invalid("the table has no snapshot to roll back"));
    };
    if r > latest {
        return Err(Error::invalid(format!(
            "cannot roll back to snapshot {r}: the latest snapshot is {latest}"
        )));
    }
    // what the rollback discards, read before anything changes
    let mut discarded: Vec<Labeled> = vec![];
    for id in sm.ids()?.into_iter().filter(|&id| id > r) {
        if let Some(s) = sm.try_snapshot(id)? {
            discarded.push((sm.snapshot_path(id), s));
        }
    }
    let mut doomed_tags = vec![];
    for (name, s) in sm.tags()? {
        if s.id > r {
            doomed_tags.push(name.clone());
            discarded.push((sm.tag_path(&name), s));
        }
    }
    // the long-lived changelogs above the target (Java's `cleanLongLivedChangelogs`); their
    // changelog files go with them unless something kept references them
    let changelogs = ChangelogManager::new(&table.meta_path());
    let mut doomed_changelogs = vec![];
    for id in changelogs.ids()?.into_iter().filter(|&id| id > r) {
        if let Some(c) = changelogs.try_changelog(id)? {
            doomed_changelogs.push(changelogs.path(id));
            discarded.push((changelogs.path(id), c));
        }
    }
    let changelog_earliest = changelogs.earliest_id()?;
    sm.write_latest_hint(r)?;
    if recreate {
        // EARLIEST first: a recreated snapshot below the earliest one, with the newer ones not
        // deleted yet, must not look stale to a concurrent expiry; a stale snapshot on its id
        // goes (its files are left to the orphan clean)
        sm.write_earliest_hint(r)?;
        io::remove_file_if_exists(&sm.snapshot_path(r))?;
        let bytes = serde_json::to_vec_pretty(&snapshot)
            .map_err(|e| Error::Internal(format!("snapshot serialization: {e}")))?;
        io::create_exclusive(&sm.snapshot_path(r), &bytes)?;
    }
    let mut out = Reclaimed::default();
    // newest first, including commits that land meanwhile on top of the ones being deleted
    loop {
        let above: Vec<i64> = sm.ids()?.into_iter().filter(|&id| id > r).collect();
        let Some(&top) = above.last() else { break };
        io::remove_file_if_exists(&sm.snapshot_path(top))?;
        out.snapshots.push(top);
    }
    for name in &doomed_tags {
        io::remove_file_if_exists(&sm.tag_path(name))?;
    }
    for p in doomed_changelogs.iter().rev() {
        io::remove_file_if_exists(p)?;
    }
    if !doomed_changelogs.is_empty() {
        // Java: the one below the target, or -1 when none is left
        let to = changelog_earliest.map_or(r + 1, |e| e.max(r + 1));
        let latest = if Some(to) == changelog_earliest {
            -1
        } else {
            to - 1
        };
        changelogs.write_latest_hint(latest)?;
    }
    if recreate || sm.earliest_id()?.is_some_and(|e| e > r) {
        sm.write_earliest_hint(r)?;
    }
    sm.write_latest_hint(r)?;
    // snapshots above the target now are commits that landed on a discarded one and are
    // withdrawing themselves (see `commit`), or commits on the target, which reference nothing
    // discarded: neither keeps anything
    let kept: Vec<Labeled> = all_kept(table)?
        .into_iter()
        .filter(|(p, s)| s.id <= r || *p != sm.snapshot_path(s.id))
        .collect();
    out.files = delete_unreferenced(
        table,
        &discarded,
        &kept,
        "refusing to clean after the rollback",
    )?;
    log::info!(
        target: "paimon_rs.rollback",
        "{}: rolled back to snapshot {r} ({} snapshots, {} tags, {} files deleted)",
        table.name,
        out.snapshots.len(),
        doomed_tags.len(),
        out.files.len()
    );
    Ok(out)
}
