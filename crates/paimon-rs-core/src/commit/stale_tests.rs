//! A stale snapshot left by a crash: a commit based on snapshot `b` is prepared while other
//! commits create `b + 1` and newer ones and an expiry keeps only the newest two, so the id
//! `b + 1` is free again; the commit's exclusive create of it succeeds, and the process is killed
//! before it can see that its snapshot is not on the chain and withdraw it (`withdrawn`). What
//! every other part of the engine then does with `snapshot-(b+1)` beside the newer ones.

use std::collections::HashSet;
use std::panic::{catch_unwind, AssertUnwindSafe};

use super::safety::tests::{commit, live_rows, rows, table, written};
use super::tests::{arm, RacePoint};
use super::*;
use crate::table::expire::expire_snapshots;
use crate::table::orphan::remove_orphan_files;
use crate::table::orphan::tests::{age, all_files};
use crate::table::retention::ExpireConfig;
use crate::table::rollback::{rollback_to, RollbackTarget};

const USER: &str = "crashed-writer";
const IDENT: i64 = 42;
/// Commits before the crashed one, and during it.
const BEFORE: i64 = 6;
const DURING: i64 = 12;
/// Rows of the committed history (3 per commit); the crashed commit's 3 are not among them.
const COMMITTED_ROWS: i64 = 3 * (BEFORE + DURING);

fn keep(n: i64) -> ExpireConfig {
    ExpireConfig {
        num_retained_min: n,
        num_retained_max: n,
        time_retained_ms: 0,
        expire_limit: 100,
    }
}

fn far() -> i64 {
    chrono::Utc::now().timestamp_millis() + 3_600_000
}

struct Crashed {
    _dir: tempfile::TempDir,
    t: FileStoreTable,
    /// The crashed commit's messages (its data files are left in the table).
    ours: Vec<CommitMessage>,
    stale: i64,
    latest: i64,
}

/// The state the crash leaves (see the module documentation); `latest_on_stale`: `LATEST` names
/// the stale snapshot (as a Java writer, which never withdraws, leaves it), `earliest`: whether
/// the expiry's `EARLIEST` hint is there.
fn crashed(pk: bool, latest_on_stale: bool, earliest: bool) -> Crashed {
    crashed_with(pk, latest_on_stale, earliest, false)
}

/// [`crashed`]; `adjacent`: the expiry keeps every snapshot above the freed id, so the stale
/// snapshot lies right below the retained ones.
fn crashed_with(pk: bool, latest_on_stale: bool, earliest: bool, adjacent: bool) -> Crashed {
    let dir = tempfile::tempdir().unwrap();
    let t = table(dir.path(), pk);
    for i in 0..BEFORE {
        commit(&t, &written(&t, &[rows(1, 3 * i..3 * i + 3)])).unwrap();
    }
    let sm = t.snapshot_manager();
    let stale = sm.latest_id().unwrap().unwrap() + 1;
    let ours = written(&t, &[rows(1, 1000..1003)]);
    let t2 = t.clone();
    arm(RacePoint::BeforeCreate, move || {
        for i in BEFORE..BEFORE + DURING {
            commit(&t2, &written(&t2, &[rows(1, 3 * i..3 * i + 3)])).unwrap();
        }
        let now = t2.snapshot_manager().latest_id().unwrap().unwrap();
        let kept = if adjacent { now - stale } else { 2 };
        expire_snapshots(&t2, &keep(kept), far()).unwrap();
        arm(RacePoint::AfterCreate, || {
            panic!("killed between the create and the withdrawal")
        });
    });
    let killed = catch_unwind(AssertUnwindSafe(|| {
        FileStoreCommit::new(t.clone(), USER.to_string()).commit(&ours, IDENT, None)
    }));
    assert!(killed.is_err(), "the commit was to be killed");
    let ids = sm.ids().unwrap();
    let latest = *ids.last().unwrap();
    let first = if adjacent { stale + 1 } else { latest - 1 };
    let mut want = vec![stale];
    want.extend(first..=latest);
    assert_eq!(ids, want, "the crash's state");
    if latest_on_stale {
        sm.write_latest_hint(stale).unwrap();
    }
    if !earliest {
        std::fs::remove_file(t.path.join("snapshot").join("EARLIEST")).unwrap();
    }
    Crashed {
        _dir: dir,
        t,
        ours,
        stale,
        latest,
    }
}

/// Every (LATEST, EARLIEST) hint state: LATEST on the newest or the stale snapshot, EARLIEST
/// present or not.
const HINTS: [(bool, bool); 4] = [(false, true), (true, true), (false, false), (true, false)];

/// An append table after the crash, in each hint state of [`HINTS`], with the state's label for
/// assertion messages.
fn crashed_in_each_hint_state() -> impl Iterator<Item = (Crashed, String)> {
    HINTS.into_iter().map(|(latest_on_stale, earliest)| {
        let c = crashed(false, latest_on_stale, earliest);
        (
            c,
            format!("LATEST on stale: {latest_on_stale}, EARLIEST: {earliest}"),
        )
    })
}

/// Every data file the latest snapshot references exists (and its manifests are readable).
fn live_files_exist(t: &FileStoreTable) {
    let names: HashSet<String> = all_files(&t.path)
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    let s = t.snapshot_manager().latest().unwrap().unwrap();
    for e in crate::table::live::live_entries(t, &s).unwrap() {
        assert!(
            names.contains(&e.file.file_name),
            "{} lost",
            e.file.file_name
        );
    }
}

#[test]
fn reads_and_listings_never_serve_the_stale_snapshot() {
    for (c, case) in crashed_in_each_hint_state() {
        let sm = c.t.snapshot_manager();
        assert_eq!(sm.latest_id().unwrap(), Some(c.latest), "{case}");
        assert_eq!(sm.latest().unwrap().unwrap().id, c.latest, "{case}");
        assert_eq!(sm.earliest_id().unwrap(), Some(c.latest - 1), "{case}");
        assert_eq!(
            sm.live_ids().unwrap(),
            vec![c.latest - 1, c.latest],
            "{case}"
        );
        assert_eq!(sm.stale_among(&sm.ids().unwrap()), vec![c.stale], "{case}");
        assert_eq!(live_rows(&c.t), COMMITTED_ROWS, "{case}");
        // time travel: the stale id is refused, an expired one is expired (not a gap), the
        // retained ones are served
        let e = sm.snapshot_for_read(c.stale).unwrap_err();
        assert!(
            matches!(e, Error::InvalidArgument { .. }) && e.to_string().contains("stale"),
            "{case}: {e}"
        );
        let e = sm.snapshot_for_read(c.stale + 1).unwrap_err();
        assert!(e.to_string().contains("expired"), "{case}: {e}");
        assert_eq!(sm.snapshot_for_read(c.latest - 1).unwrap().id, c.latest - 1);
        assert_eq!(
            sm.earlier_or_equal_time_millis(far()).unwrap().unwrap().id,
            c.latest,
            "{case}"
        );
        // the crashed commit's rows are in no snapshot a reader gets
        let s = sm.latest().unwrap().unwrap();
        let total: i64 = crate::table::live::live_entries(&c.t, &s)
            .unwrap()
            .iter()
            .map(|e| e.file.row_count)
            .sum();
        assert_eq!(total, COMMITTED_ROWS, "{case}");
    }
}

/// The next commit builds on the newest snapshot (not on the stale one, which `LATEST` may
/// name), and a restarted writer's retry of the crashed commit's identifier lands: the stale
/// snapshot that holds it was never acknowledged.
#[test]
fn the_next_commit_builds_on_the_newest_snapshot() {
    for pk in [false, true] {
        for latest_on_stale in [false, true] {
            let c = crashed(pk, latest_on_stale, true);
            let case = format!("pk {pk}, LATEST on stale: {latest_on_stale}");
            let next = written(&c.t, &[rows(1, 2000..2003)]);
            assert_eq!(commit(&c.t, &next).unwrap(), Some(c.latest + 1), "{case}");
            assert_eq!(live_rows(&c.t), COMMITTED_ROWS + 3, "{case}");
            // the crashed job restarts and commits its identifier again: the same files for
            // an append table; a primary-key writer restored from an expired snapshot cannot
            // be verified (CommitConflictError, see docs/concurrency.md), so it writes again
            let retry = if pk {
                written(&c.t, &[rows(1, 1000..1003)])
            } else {
                c.ours.clone()
            };
            let landed = FileStoreCommit::new(c.t.clone(), USER.to_string())
                .commit(&retry, IDENT, None)
                .unwrap();
            assert_eq!(landed, Some(c.latest + 2), "{case}");
            assert_eq!(live_rows(&c.t), COMMITTED_ROWS + 6, "{case}");
            live_files_exist(&c.t);
        }
    }
}

/// Expiry (with or without its `EARLIEST` hint, `LATEST` on either snapshot) takes the newest
/// snapshots' range, removes the stale snapshot file and deletes nothing a live snapshot
/// references; the orphan clean then removes what only the stale snapshot referenced.
#[test]
fn expiry_removes_the_stale_snapshot_and_no_live_file() {
    for (c, case) in crashed_in_each_hint_state() {
        let sm = c.t.snapshot_manager();
        let r = expire_snapshots(&c.t, &keep(1), far()).unwrap();
        assert_eq!(r.snapshots, vec![c.stale, c.latest - 1], "{case}");
        assert_eq!(sm.ids().unwrap(), vec![c.latest], "{case}");
        assert_eq!(sm.earliest_id().unwrap(), Some(c.latest), "{case}");
        assert_eq!(live_rows(&c.t), COMMITTED_ROWS, "{case}");
        live_files_exist(&c.t);
        // the crashed commit's data file is an orphan now
        let ours: Vec<String> = c.ours[0]
            .data_increment
            .new_files
            .iter()
            .map(|f| f.file_name.clone())
            .collect();
        let present = |name: &str| all_files(&c.t.path).iter().any(|p| p.ends_with(name));
        assert!(ours.iter().all(|n| present(n)), "{case}");
        age(&c.t.path);
        let now = chrono::Utc::now().timestamp_millis();
        remove_orphan_files(&c.t, now - 86_400_000, false).unwrap();
        assert!(ours.iter().all(|n| !present(n)), "{case}");
        live_files_exist(&c.t);
        assert_eq!(live_rows(&c.t), COMMITTED_ROWS, "{case}");
    }
}

/// Nothing to expire, no `EARLIEST` hint: the expiry writes the hint on the real earliest
/// snapshot (not on the stale one, which would stop every later expiry at the gap); the next
/// expiry that expires something removes the stale snapshot.
#[test]
fn an_expiry_without_its_hint_writes_it_on_the_chain() {
    let c = crashed(false, false, false);
    let sm = c.t.snapshot_manager();
    let r = expire_snapshots(&c.t, &keep(2), far()).unwrap();
    assert!(r.snapshots.is_empty());
    let hinted = sm.earliest_id_and_hint().unwrap();
    assert_eq!(hinted, (Some(c.latest - 1), true));
    assert_eq!(sm.live_ids().unwrap(), vec![c.latest - 1, c.latest]);
    let r = expire_snapshots(&c.t, &keep(1), far()).unwrap();
    assert_eq!(r.snapshots, vec![c.stale, c.latest - 1]);
    assert_eq!(sm.ids().unwrap(), vec![c.latest]);
}

/// The orphan clean neither refuses the table (a gap below the earliest snapshot) nor deletes a
/// live file; it keeps what the stale snapshot references (harmless: removed once the expiry
/// has removed the stale snapshot).
#[test]
fn the_orphan_clean_keeps_live_files_beside_a_stale_snapshot() {
    for earliest in [true, false] {
        let c = crashed(false, false, earliest);
        if !earliest {
            // the orphan clean refuses a first snapshot above 1 without EARLIEST (lost
            // snapshots?) whether or not a stale one is there: the next expiry writes it
            c.t.snapshot_manager()
                .write_earliest_hint(c.latest - 1)
                .unwrap();
        }
        age(&c.t.path);
        let now = chrono::Utc::now().timestamp_millis();
        let r = remove_orphan_files(&c.t, now - 86_400_000, false).unwrap();
        live_files_exist(&c.t);
        assert_eq!(live_rows(&c.t), COMMITTED_ROWS);
        let ours = &c.ours[0].data_increment.new_files[0].file_name;
        assert!(
            all_files(&c.t.path).iter().any(|p| p.ends_with(ours)),
            "the stale snapshot's data file is kept while it exists: {:?}",
            r.files
        );
    }
}

/// Rollback to the stale id and a tag on it are refused; a rollback to a live snapshot leaves
/// a table whose files are all there.
#[test]
fn rollback_and_tags_refuse_the_stale_snapshot() {
    let c = crashed(false, true, true);
    let sm = c.t.snapshot_manager();
    let e = rollback_to(&c.t, &RollbackTarget::Snapshot(c.stale)).unwrap_err();
    assert!(
        matches!(e, Error::InvalidArgument { .. }) && e.to_string().contains("stale"),
        "{e}"
    );
    assert_eq!(sm.ids().unwrap(), vec![c.stale, c.latest - 1, c.latest]);
    let e =
        crate::table::tags::create_tag(&c.t, "on-stale", Some(c.stale), None, false).unwrap_err();
    assert!(e.to_string().contains("stale"), "{e}");
    crate::table::tags::create_tag(&c.t, "t", Some(c.latest - 1), None, false).unwrap();
    rollback_to(&c.t, &RollbackTarget::Snapshot(c.latest - 1)).unwrap();
    assert_eq!(sm.latest_id().unwrap(), Some(c.latest - 1));
    assert_eq!(live_rows(&c.t), COMMITTED_ROWS - 3);
    live_files_exist(&c.t);
}

/// With a stale snapshot below, a commit whose base an expiry takes right after the commit's
/// create keeps its snapshot: the stale one is no older history, which would make the vanished
/// base look like a rollback and withdraw the table's only live snapshot. The expiry is Java's
/// (its snapshot files deleted, then `EARLIEST` moved), which leaves stale snapshots alone.
#[test]
fn a_base_expired_after_ours_landed_keeps_ours_beside_a_stale_snapshot() {
    let c = crashed(false, false, true);
    let next = written(&c.t, &[rows(1, 2000..2003)]);
    let sm = c.t.snapshot_manager();
    let (path, latest) = (c.t.path.clone(), c.latest);
    arm(RacePoint::AfterCreate, move || {
        let sm = crate::table::snapshot_manager::SnapshotManager::new(&path);
        for id in [latest - 1, latest] {
            std::fs::remove_file(sm.snapshot_path(id)).unwrap();
        }
        sm.write_earliest_hint(latest + 1).unwrap();
    });
    assert_eq!(commit(&c.t, &next).unwrap(), Some(c.latest + 1));
    assert_eq!(sm.ids().unwrap(), vec![c.stale, c.latest + 1]);
    assert_eq!(sm.latest_id().unwrap(), Some(c.latest + 1));
}

/// The stale snapshot right below the retained ones (`snapshot-7` beside 8 and 9): not lone, told
/// by the `EARLIEST` hint the expiry that freed its id wrote; reads, expiry and the next commit
/// as above. (Without the hint it cannot be told from the earliest snapshot by its id: see
/// docs/concurrency.md, "Concurrent writers".)
#[test]
fn a_stale_snapshot_right_below_the_earliest_is_told_by_the_hint() {
    for latest_on_stale in [false, true] {
        let c = crashed_with(false, latest_on_stale, true, true);
        let case = format!("LATEST on stale: {latest_on_stale}");
        let sm = c.t.snapshot_manager();
        assert_eq!(sm.latest_id().unwrap(), Some(c.latest), "{case}");
        assert_eq!(sm.earliest_id().unwrap(), Some(c.stale + 1), "{case}");
        let live: Vec<i64> = (c.stale + 1..=c.latest).collect();
        assert_eq!(sm.live_ids().unwrap(), live, "{case}");
        let e = sm.snapshot_for_read(c.stale).unwrap_err();
        assert!(e.to_string().contains("stale"), "{case}: {e}");
        assert_eq!(live_rows(&c.t), COMMITTED_ROWS, "{case}");
        let next = written(&c.t, &[rows(1, 2000..2003)]);
        assert_eq!(commit(&c.t, &next).unwrap(), Some(c.latest + 1), "{case}");
        let r = expire_snapshots(&c.t, &keep(1), far()).unwrap();
        let mut gone = vec![c.stale];
        gone.extend(live);
        assert_eq!(r.snapshots, gone, "{case}");
        assert_eq!(sm.ids().unwrap(), vec![c.latest + 1], "{case}");
        assert_eq!(live_rows(&c.t), COMMITTED_ROWS + 3, "{case}");
        live_files_exist(&c.t);
    }
}
