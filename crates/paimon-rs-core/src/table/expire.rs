//! Snapshot expiry (Java's `ExpireSnapshotsImpl` / `SnapshotDeletion`), and the deletion of
//! what discarded snapshots alone referenced, shared with rollback and tag deletion.
//!
//! Which snapshots expire is Java's rule: of snapshots `earliest..=latest`, those below
//! `latest - snapshot.num-retained.max + 1` expire; the next ones expire while the snapshot after
//! each is older than `snapshot.time-retained` (a snapshot was the table's state until its
//! successor was committed), up to `latest - snapshot.num-retained.min + 1` (exclusive), and at
//! most `snapshot.expire.limit` in one run; the next snapshot of a consumer of the branch
//! (`consumer/` in the branch's directory) is kept. When nothing can expire, neither `consumer/`
//! nor (with an `EARLIEST` hint, written then if missing) `snapshot/` is listed.
//!
//! What is deleted: every file an expired snapshot referenced (data and extra files, manifests,
//! manifest lists, index manifests and index files, statistics) that no remaining snapshot, tag,
//! long-lived changelog or branch references. What is read to decide it is what Java reads (see
//! [`delete_expired`]): the expired range's deltas and lists, and the lists of the first
//! retained snapshot and of the tags around the range, not the retained history.
//!
//! Order: `EARLIEST` is moved first, then snapshot files are deleted lowest first (so the
//! history never has a gap), then the files, read after the snapshots are gone; a reader of an
//! expired snapshot then finds its snapshot file missing and gets [`Error::SnapshotExpired`]. An
//! interrupted expiry leaves only orphans.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use crate::error::Result;
use crate::io;
use crate::spec::manifest::FileKind;
use crate::table::changelog::ChangelogManager;
use crate::table::changelog_expire::expire_changelogs;
use crate::table::file_deletion::{
    deleted_in_delta, doom_unkept, entries_of_list, held_by_tag_before, kept_outside,
    min_consumer_snapshot, remove_doomed, sorted_tags, Doomed, Reclaimed,
};
use crate::table::references::{Labeled, Missing, Walker};
use crate::table::retention::{ChangelogRetention, ExpireConfig};
use crate::table::snapshot_manager::SnapshotManager;
use crate::table::FileStoreTable;

/// Delete the files of the expired snapshots `expiring` (ids from `begin`, all below `end`'s)
/// that nothing kept references, reading what Java's `ExpireSnapshotsImpl` and
/// `SnapshotDeletion` read rather than every kept snapshot. The history is linear and a file,
/// once deleted from it, never comes back, so:
/// - a data file dies in the delta of the snapshot that deletes it: the DELETE entries of the
///   deltas of snapshots `begin+1 ..= end` (those of `begin` were handled when its predecessor
///   expired) are deleted unless the newest tag before that snapshot holds the file live (older
///   tags hold it only if that one does; newer ones and `end` never do);
/// - a manifest, manifest list, index manifest, index or statistics file of an expired snapshot
///   stays if `end` or a tag from the one at or before `begin` to the last before `end`
///   references it (what older tags reference and the expired snapshots still carry, that tag
///   carries too; later snapshots carry forward only what `end` has);
/// - a changelog file (in a changelog manifest of an expired snapshot) is deleted with its
///   snapshot, unless a tag keeps that changelog manifest list.
///
/// Branches and long-lived changelogs share the data files and manifests without belonging to
/// this history: what they reference is read (all of it, only if there are any) and kept. With
/// a decoupled changelog retention the expired snapshots were just written as long-lived
/// changelogs, so what they keep (see `table::changelog`: their changelog files and lists, or
/// on a table without a producer their base and delta lists and the files their deltas add)
/// stays, as Java's `SnapshotDeletion` with `changelogDecoupled` keeps it. Then (`decoupled`)
/// only those changelogs are read, not the older ones (every commit expires, and a decoupled
/// table may retain thousands): an older changelog's changelog list and files are its own, its
/// base and delta lists (no producer) are carried by the expiring snapshots too, and the files
/// its delta appended that these deltas delete are kept as Java keeps them, by their
/// `_FILE_SOURCE` (not COMPACT), for the changelog expiry. Without decoupling every long-lived
/// changelog left from an earlier configuration is read.
/// `end` and the tags are read strictly (an unreadable one refuses the clean, see
/// [`Missing::Refuse`]), the expired snapshots tolerantly.
fn delete_expired(
    table: &FileStoreTable,
    expiring: &[Labeled],
    end: &Labeled,
    decoupled: bool,
) -> Result<Vec<(PathBuf, u64)>> {
    let Some((_, first)) = expiring.first() else {
        return Ok(vec![]);
    };
    let begin = first.id;
    let why = "refusing to expire snapshots";
    let tags = sorted_tags(table)?;
    let (changelogs, keep_appended) = if decoupled {
        let written = ChangelogManager::new(&table.meta_path());
        let as_changelogs: Vec<Labeled> = expiring
            .iter()
            .map(|(_, s)| (written.path(s.id), s.clone()))
            .collect();
        let no_producer =
            table.options.changelog_producer == crate::options::ChangelogProducer::None;
        (as_changelogs, no_producer)
    } else {
        (crate::table::changelog::all_changelogs(table)?, false)
    };
    let other = kept_outside(table, &changelogs, why)?;

    // data files deleted in the deltas of begin+1 ..= end, unless the previous tag keeps them
    let mut doomed = Doomed::default();
    let mut tag_files: HashMap<i64, HashSet<String>> = HashMap::new();
    for (_, s) in expiring.iter().skip(1).chain([end]) {
        let Some(deleted) = deleted_in_delta(table, s)? else {
            continue;
        };
        let held = held_by_tag_before(table, &tags, s.id, &mut tag_files, why)?;
        for e in deleted {
            let name = &e.file.file_name;
            let appended = e.file.file_source != Some(crate::table::changelog::FILE_SOURCE_COMPACT);
            if keep_appended && appended {
                continue; // for the long-lived changelog that appended it
            }
            if !held.is_some_and(|h| h.contains(name)) && !other.data.contains(name) {
                doomed.data.push(e);
            }
        }
    }
    // changelog files of the expired snapshots
    for (_, s) in expiring {
        let Some(list) = &s.changelog_manifest_list else {
            continue;
        };
        // (a branch or a long-lived changelog keeps its changelog files through `other`)
        let tagged = tags
            .iter()
            .any(|(_, t)| t.changelog_manifest_list.as_ref() == Some(list));
        if tagged {
            continue;
        }
        for e in entries_of_list(table, list)?.into_iter().flatten() {
            if e.kind == FileKind::Add && !other.data.contains(&e.file.file_name) {
                doomed.data.push(e);
            }
        }
    }

    // metadata: what `end`, the tags around the expired range and the rest keep
    let mut keepers: Vec<Labeled> = vec![end.clone()];
    let from = tags.iter().rposition(|(_, t)| t.id <= begin).unwrap_or(0);
    keepers.extend(
        tags.iter()
            .skip(from)
            .filter(|(_, t)| t.id < end.1.id)
            .cloned(),
    );
    let mut keep = Walker::new(table, Missing::Refuse(why))
        .lists_only()
        .referenced(&keepers)?;
    keep.meta.extend(other.meta);
    keep.index.extend(other.index);
    keep.statistics.extend(other.statistics);
    let meta = doom_unkept(
        table,
        Walker::new(table, Missing::Skip).lists_only(),
        expiring,
        &keep,
        |_| {},
    )?;
    doomed.index = meta.index;
    doomed.statistics = meta.statistics;
    doomed.meta = meta.meta;
    let keep_extra = |x: &str| other.data.contains(x) || tag_files.values().any(|h| h.contains(x));
    remove_doomed(table, doomed, &keep_extra)
}

/// Expire snapshots of `table` under `config` (Java's `ExpireSnapshotsImpl.expire`), then, when
/// the table's changelog retention (`changelog.num-retained.*`, `changelog.time-retained`, each
/// defaulting to `config`'s) outlives the snapshots, its long-lived changelogs (Java's
/// `ExpireChangelogImpl`, see `table::changelog`): the expired snapshots are then kept as
/// `changelog/changelog-<id>`. `now_ms` is the clock the time retentions are measured against.
pub fn expire_snapshots(
    table: &FileStoreTable,
    config: &ExpireConfig,
    now_ms: i64,
) -> Result<Reclaimed> {
    expire_snapshots_from(table, config, now_ms, None)
}

/// [`expire_snapshots`] right after a commit landed snapshot `committed`: while its file
/// exists, it is taken as the latest. Ids only grow but by a rollback, which deletes every id
/// above its target: so an existing `committed` is at or below the real latest, and an older
/// latest only keeps more snapshots (the retention counts back from it; the latest itself is
/// never expired). That saves finding the latest afresh: one existence check instead of, on an
/// object store, four serial round trips (the `LATEST` hint, whether snapshots n + 1, n and
/// n - 1 exist). Gone (a rollback below it): the latest is found as usual.
pub(crate) fn expire_snapshots_after_commit(
    table: &FileStoreTable,
    config: &ExpireConfig,
    now_ms: i64,
    committed: i64,
) -> Result<Reclaimed> {
    expire_snapshots_from(table, config, now_ms, Some(committed))
}

fn expire_snapshots_from(
    table: &FileStoreTable,
    config: &ExpireConfig,
    now_ms: i64,
    known_latest: Option<i64>,
) -> Result<Reclaimed> {
    table.named(|| {
        config.validate()?;
        let retention = ChangelogRetention::from_options(&table.options.raw, config)?;
        let decoupled = retention.decoupled(config);
        let mut out = expire_snapshots_only(table, config, now_ms, decoupled, known_latest)?;
        if decoupled {
            let (ids, files) = expire_changelogs(table, &retention, now_ms)?;
            out.changelogs = ids;
            out.files.extend(files);
        }
        Ok(out)
    })
}

fn expire_snapshots_only(
    table: &FileStoreTable,
    config: &ExpireConfig,
    now_ms: i64,
    decoupled: bool,
    known_latest: Option<i64>,
) -> Result<Reclaimed> {
    {
        let sm = table.snapshot_manager();
        let (latest, earliest) = match known_latest {
            // on an object store the check and the earliest at once (one round trip for both);
            // locally a stat, then the earliest below, without a thread
            Some(id) if !io::is_remote(&sm.snapshot_path(id)) => {
                (io::exists(&sm.snapshot_path(id)).then_some(id), None)
            }
            Some(id) => std::thread::scope(|sc| {
                let earliest = sc.spawn(|| sm.earliest_id_and_hint());
                let exists = io::exists(&sm.snapshot_path(id));
                let earliest = earliest.join().unwrap_or_else(|_| {
                    Err(crate::error::Error::Internal(format!(
                        "{}: finding the earliest snapshot: the thread panicked",
                        table.name
                    )))
                });
                (exists.then_some(id), Some(earliest))
            }),
            None => (None, None),
        };
        let Some(latest) = latest.map_or_else(|| sm.latest_id(), |id| Ok(Some(id)))? else {
            return Ok(Reclaimed::default());
        };
        let (Some(earliest), earliest_hinted) =
            earliest.unwrap_or_else(|| sm.earliest_id_and_hint())?
        else {
            return Ok(Reclaimed::default());
        };
        let min = (latest - config.num_retained_max + 1).max(earliest);
        let max_exclusive = (latest - config.num_retained_min + 1)
            .min(earliest.saturating_add(config.expire_limit));
        // Snapshot `id` expires only once its successor is older than the retention: `id` was
        // the table's state until then (Java's loop tests `id + 1`; a missing one is skipped).
        let older_than = now_ms - config.time_retained_ms;
        let mut end = max_exclusive;
        for id in min..max_exclusive {
            if let Some(next) = sm.try_snapshot(id + 1)? {
                if older_than <= next.time_millis {
                    end = id;
                    break;
                }
            }
        }
        // Java bounds `max_exclusive` by the consumers' next snapshot before the loop; bounding
        // the loop's `end` after it is the same (the loop stops at the same id, or at the
        // bound), and lists `consumer/` only when something is left to expire (fewer requests
        // per commit).
        if end > earliest {
            if let Some(c) = min_consumer_snapshot(table)? {
                end = end.min(c);
            }
        }
        if end <= earliest {
            // nothing expires: Java writes the hint if it is missing, so the next expiry (the
            // next commit's) finds the earliest without listing `snapshot/`
            // (the earliest found without a hint is never a stale snapshot: see
            // `snapshot_manager`)
            if !earliest_hinted {
                sm.write_earliest_hint(earliest)?;
            }
            return Ok(Reclaimed::default());
        }
        expire_until(table, &sm, earliest, end, decoupled)
    }
}

/// Delete the snapshot files of the stale snapshots below `earliest` (a commit killed between
/// creating a snapshot on an id an expiry had freed and withdrawing it leaves one; see
/// `snapshot_manager`): never the table's state, never served, so nothing else reads them. Their
/// other files are left to the orphan clean, whose age limit protects a restarted writer that
/// commits the crashed commit's data files again. Lists `snapshot/` (once per expiry that
/// expires something).
fn remove_stale(table: &FileStoreTable, sm: &SnapshotManager, earliest: i64) -> Result<Vec<i64>> {
    let ids = sm.ids()?;
    let stale = crate::table::snapshot_manager::stale_among(&ids, Some(earliest));
    for &id in &stale {
        io::remove_file_if_exists(&sm.snapshot_path(id))?;
        log::warn!(
            target: "paimon_rs.expire",
            "{}: removed stale snapshot {id} (below the earliest snapshot {earliest}: a commit \
             that lost a race with expiry was killed before withdrawing it, or an expiry in \
             progress); its files are left to remove_orphan_files",
            table.name
        );
    }
    Ok(stale)
}

/// Expire snapshots `earliest..end` (Java's `expireUntil`); `decoupled`: each is kept as a
/// long-lived changelog, written before its snapshot file is deleted (a reader finds one or the
/// other).
fn expire_until(
    table: &FileStoreTable,
    sm: &SnapshotManager,
    earliest: i64,
    end: i64,
    decoupled: bool,
) -> Result<Reclaimed> {
    let mut expiring: Vec<Labeled> = vec![];
    let mut end_snapshot = None;
    for id in earliest..=end {
        match sm.try_snapshot(id)? {
            Some(s) if id == end => end_snapshot = Some(s),
            Some(s) => expiring.push((sm.snapshot_path(id), s)),
            // a gap: a commit based on a snapshot a rollback deleted, about to withdraw itself
            // (see `commit`), or a rollback in progress; `end` may be that commit: expire
            // nothing (Java, finding `end` missing, deletes no snapshot either)
            None if id > earliest => {
                log::info!(
                    target: "paimon_rs.expire",
                    "{}: snapshot {id} is missing up to {end} (a rollback or a withdrawn commit \
                     in progress); not expiring now",
                    table.name
                );
                return Ok(Reclaimed::default());
            }
            None => {}
        }
    }
    let Some(end_snapshot) = end_snapshot else {
        return Ok(Reclaimed::default()); // end <= earliest
    };
    let mut out = Reclaimed {
        snapshots: remove_stale(table, sm, earliest)?,
        ..Default::default()
    };
    // the new earliest first: readers never see a gap, an interrupted expiry resumes from it
    sm.write_earliest_hint(end)?;
    let changelogs = ChangelogManager::new(&table.meta_path());
    for (p, s) in &expiring {
        if decoupled {
            changelogs.commit(s)?;
        }
        io::remove_file_if_exists(p)?;
        out.snapshots.push(s.id);
    }
    let end_labeled = (sm.snapshot_path(end), end_snapshot);
    out.files = delete_expired(table, &expiring, &end_labeled, decoupled)?;
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
    use crate::commit::FileStoreCommit;
    use crate::options::opts;
    use crate::spec::datum::Datum;
    use crate::table::catalog::FileSystemCatalog;
    use crate::table::file_deletion::{all_kept, delete_unreferenced};
    use crate::table::orphan::tests::{all_files, commit, prepare, table};
    use crate::table::retention::{DEFAULT_NUM_RETAINED_MAX, DEFAULT_TIME_RETAINED_MS};
    use crate::table::rollback::{rollback_to, RollbackTarget};
    use std::fs;
    use std::path::Path;

    fn keep(min: i64, max: i64, limit: i64) -> ExpireConfig {
        ExpireConfig {
            num_retained_min: min,
            num_retained_max: max,
            time_retained_ms: DEFAULT_TIME_RETAINED_MS,
            expire_limit: limit,
        }
    }

    fn now() -> i64 {
        chrono::Utc::now().timestamp_millis()
    }

    /// 50 commits over two partitions (writer compactions add COMPACT snapshots).
    fn history(t: &FileStoreTable, commits: i64) {
        for i in 0..commits {
            commit(t, if i % 2 == 0 { "a" } else { "b" }, &[i % 13, 100 + i]);
        }
    }

    #[test]
    fn expiry_reads_the_expired_deltas_not_the_retained_history() {
        let dir = tempfile::tempdir().unwrap();
        let t = table(dir.path(), true);
        history(&t, 50);
        let latest = t.snapshot_manager().latest_id().unwrap().unwrap();
        assert!(latest > 50, "compactions happened: {latest}");
        // what the expiry read before (all retained snapshots), on a copy
        let copy_dir_path = dir.path().join("copy");
        copy_dir(&t.path, &copy_dir_path);
        let mut copy = t.clone();
        copy.path = copy_dir_path;
        let before = io::metadata_reads_on_this_thread();
        let old = expire_reading_everything(&copy, &(1..=10).collect::<Vec<_>>());
        let old_reads = io::metadata_reads_on_this_thread() - before;
        // expire the 10 oldest, retain the other 40+
        let before = io::metadata_reads_on_this_thread();
        let r = expire_snapshots(&t, &keep(1, latest - 10, 1000), now()).unwrap();
        let reads = io::metadata_reads_on_this_thread() - before;
        assert_eq!(r.snapshots, (1..=10).collect::<Vec<_>>());
        assert!(!r.files.is_empty());
        // per expired snapshot: its two lists, and one delta (list and manifest) of the range;
        // then the two lists of the first retained snapshot. Reading the retained snapshots'
        // manifests (what expiry did before) is several hundred reads.
        println!(
            "expired 10 of {latest} snapshots: {reads} metadata files read ({old_reads} reading \
             every retained snapshot)"
        );
        assert_eq!(r.files.len(), old.len());
        assert!(reads <= 4 * 10 + 4, "{reads} metadata files read");
    }

    fn copy_dir(from: &Path, to: &Path) {
        fs::create_dir_all(to).unwrap();
        for e in fs::read_dir(from).unwrap() {
            let e = e.unwrap();
            let dest = to.join(e.file_name());
            if e.file_type().unwrap().is_dir() {
                copy_dir(&e.path(), &dest);
            } else {
                fs::copy(e.path(), &dest).unwrap();
            }
        }
    }

    fn relative(root: &Path, paths: impl IntoIterator<Item = PathBuf>) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = paths
            .into_iter()
            .map(|p| p.strip_prefix(root).unwrap().to_path_buf())
            .collect();
        out.sort();
        out
    }

    /// The expiry before Java's method: delete the snapshots, then whatever they reference that
    /// no snapshot, tag or changelog left references, all read.
    fn expire_reading_everything(t: &FileStoreTable, ids: &[i64]) -> Vec<(PathBuf, u64)> {
        let sm = t.snapshot_manager();
        let discarded: Vec<Labeled> = ids
            .iter()
            .map(|&id| (sm.snapshot_path(id), sm.snapshot(id).unwrap()))
            .collect();
        sm.write_earliest_hint(ids.last().unwrap() + 1).unwrap();
        for (p, _) in &discarded {
            io::remove_file_if_exists(p).unwrap();
        }
        let kept = all_kept(t).unwrap();
        delete_unreferenced(t, &discarded, &kept, "test").unwrap()
    }

    #[test]
    fn expiry_deletes_what_reading_everything_deletes() {
        let dir = tempfile::tempdir().unwrap();
        let t = table(&dir.path().join("a"), true);
        let overwrite: crate::spec::partition::PartitionSpec =
            vec![("dt".into(), Some(Datum::String("b".into())))];
        let mut compared = 0;
        for i in 0..60i64 {
            if i % 7 == 6 {
                let msgs = prepare(&t, "b", &[i]);
                FileStoreCommit::new(t.clone(), "u".into())
                    .commit(&msgs, i64::MAX, Some(&overwrite))
                    .unwrap();
            } else {
                commit(&t, ["a", "b", "c"][(i % 3) as usize], &[i % 11, 50 + i]);
            }
            let latest = t.snapshot_manager().latest_id().unwrap().unwrap();
            if i % 9 == 4 {
                crate::table::tags::create_tag(&t, &format!("t{i}"), Some(latest - 2), None, false)
                    .unwrap();
            }
            if i == 40 {
                crate::table::tags::delete_tag(&t, "t22").unwrap();
                // back to a tag whose snapshot expired: it is created again, the earliest
                rollback_to(&t, &RollbackTarget::Tag("t13".into())).unwrap();
            }
            if i % 5 != 4 || i < 10 {
                continue;
            }
            fs::remove_dir_all(dir.path().join("b")).ok();
            copy_dir(&dir.path().join("a"), &dir.path().join("b"));
            let copy = FileSystemCatalog::new(dir.path().join("b"))
                .unwrap()
                .get_table("db.t")
                .unwrap();
            let r = expire_snapshots(&t, &keep(2, 6, 5), now()).unwrap();
            if r.snapshots.is_empty() {
                continue;
            }
            let old = expire_reading_everything(&copy, &r.snapshots);
            assert_eq!(
                relative(&t.path, r.files.iter().map(|(p, _)| p.clone())),
                relative(&copy.path, old.into_iter().map(|(p, _)| p)),
                "files deleted by the expiry of {:?}",
                r.snapshots
            );
            assert_eq!(
                relative(&t.path, all_files(&t.path)),
                relative(&copy.path, all_files(&copy.path))
            );
            compared += usize::from(!r.files.is_empty());
        }
        assert!(compared >= 5, "{compared} expiries deleted files");
    }

    /// Set snapshot `id`'s commit time (`timeMillis`) in its file.
    fn set_time(t: &FileStoreTable, id: i64, millis: i64) {
        let p = t.snapshot_manager().snapshot_path(id);
        let mut v: serde_json::Value = serde_json::from_slice(&fs::read(&p).unwrap()).unwrap();
        v["timeMillis"] = millis.into();
        fs::write(&p, serde_json::to_vec(&v).unwrap()).unwrap();
    }

    /// Snapshots 1..=5 committed at 1000, 2000, ... 5000 ms (by a write-only writer: no
    /// compaction snapshots, no expiry).
    fn five_timed(dir: &Path) -> FileStoreTable {
        let t = table(dir, false);
        timed_commits(&t);
        t
    }

    fn timed_commits(t: &FileStoreTable) {
        let w = t
            .copy(&[("write-only".to_string(), "true".to_string())].into())
            .unwrap();
        for i in 1..=5 {
            commit(&w, "a", &[i]);
            set_time(t, i, i * 1000);
        }
        assert_eq!(t.snapshot_manager().latest_id().unwrap(), Some(5));
    }

    #[test]
    fn a_snapshot_expires_once_its_successor_is_older_than_the_retention() {
        // Java's ExpireSnapshotsImpl.expire: snapshot n stays while n + 1 is younger than
        // `snapshot.time-retained`, n having been the table's state until n + 1 was committed
        let dir = tempfile::tempdir().unwrap();
        let t = five_timed(dir.path());
        let config = ExpireConfig {
            time_retained_ms: 1000,
            ..keep(1, DEFAULT_NUM_RETAINED_MAX, 50)
        };
        // older than 3500: snapshots 1, 2, 3; 3 stays, 4 being younger
        let r = expire_snapshots(&t, &config, 4500).unwrap();
        assert_eq!(r.snapshots, vec![1, 2]);
        assert_eq!(t.snapshot_manager().earliest_id().unwrap(), Some(3));
        // a missing successor is skipped (as Java's `FileNotFoundException`), the next decides
        fs::remove_file(t.snapshot_manager().snapshot_path(4)).unwrap();
        let r = expire_snapshots(&t, &config, 5500).unwrap();
        assert_eq!(
            r.snapshots,
            Vec::<i64>::new(),
            "the gap at 4 stops the expiry"
        );
        // num-retained.max expires regardless of time, num-retained.min and the limit bound it
        let t = five_timed(&dir.path().join("b"));
        let r = expire_snapshots(&t, &keep(1, 2, 50), 0).unwrap();
        assert_eq!(r.snapshots, vec![1, 2, 3], "max 2 kept, however young");
        let t = five_timed(&dir.path().join("c"));
        let old = ExpireConfig {
            time_retained_ms: 0,
            ..keep(2, DEFAULT_NUM_RETAINED_MAX, 2)
        };
        assert_eq!(
            expire_snapshots(&t, &old, 10_000).unwrap().snapshots,
            vec![1, 2]
        );
        assert_eq!(
            expire_snapshots(&t, &old, 10_000).unwrap().snapshots,
            vec![3]
        );
        assert!(expire_snapshots(&t, &old, 10_000)
            .unwrap()
            .snapshots
            .is_empty());
    }

    #[test]
    fn nothing_to_expire_lists_neither_snapshots_nor_consumers() {
        let dir = tempfile::tempdir().unwrap();
        let t = table(dir.path(), false);
        for i in 0..3 {
            commit(&t, "a", &[i]);
        }
        assert_eq!(t.snapshot_manager().latest_id().unwrap(), Some(3));
        let hint = t.path.join("snapshot").join("EARLIEST");
        fs::remove_file(&hint).ok();
        // no hint: the listing finds the earliest, and nothing expiring, the hint is written
        io::take_listed_on_this_thread();
        let config = ExpireConfig::from_options(&t.options.raw).unwrap();
        assert!(expire_snapshots(&t, &config, now())
            .unwrap()
            .snapshots
            .is_empty());
        assert_eq!(
            io::take_listed_on_this_thread(),
            vec![t.path.join("snapshot")]
        );
        assert_eq!(fs::read_to_string(&hint).unwrap(), "1");
        // with it: no listing at all (3 snapshots, 10 retained at minimum; or all young)
        assert!(expire_snapshots(&t, &config, now())
            .unwrap()
            .snapshots
            .is_empty());
        assert!(expire_snapshots(&t, &keep(1, 100, 50), now())
            .unwrap()
            .snapshots
            .is_empty());
        assert_eq!(io::take_listed_on_this_thread(), Vec::<PathBuf>::new());
        // a hint naming an expired snapshot is not trusted
        fs::write(&hint, "0").unwrap();
        let r = expire_snapshots(&t, &keep(1, 1, 50), now()).unwrap();
        assert_eq!(r.snapshots, vec![1, 2]);
        let listed = io::take_listed_on_this_thread();
        assert!(listed.contains(&t.path.join("snapshot")), "{listed:?}");
        assert!(listed.contains(&t.path.join("consumer")), "{listed:?}");
        assert_eq!(fs::read_to_string(&hint).unwrap(), "3");
    }

    #[test]
    fn consumers_are_read_from_the_handles_branch() {
        let dir = tempfile::tempdir().unwrap();
        let t = five_timed(dir.path());
        crate::table::branches::create_branch(&t, "b", None, false).unwrap();
        let b = t
            .copy(&[("branch".to_string(), "b".to_string())].into())
            .unwrap();
        timed_commits(&b);
        let consumer = |root: &Path, next: i64| {
            fs::create_dir_all(root.join("consumer")).unwrap();
            let body = format!("{{\"nextSnapshot\":{next}}}");
            fs::write(root.join("consumer").join("consumer-c"), body).unwrap();
        };
        // the main branch's consumer holds main's snapshot 3, the branch's its snapshot 2
        consumer(&t.path, 3);
        consumer(&b.meta_path(), 2);
        let all = ExpireConfig {
            time_retained_ms: 0,
            ..keep(1, DEFAULT_NUM_RETAINED_MAX, 50)
        };
        assert_eq!(
            expire_snapshots(&b, &all, 10_000).unwrap().snapshots,
            vec![1]
        );
        assert_eq!(
            expire_snapshots(&t, &all, 10_000).unwrap().snapshots,
            vec![1, 2]
        );
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
