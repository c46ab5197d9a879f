//! Tests of long-lived changelogs and their expiry ([`super::changelog`],
//! [`super::changelog_expire`]) through snapshot expiry, rollback and the orphan clean.

use std::collections::HashSet;
use std::path::Path;

use crate::error::Result;
use crate::io;
use crate::options::opts;
use crate::read::scan::TableScan;
use crate::table::changelog::{all_changelogs, ChangelogManager};
use crate::table::changelog_expire::entries_of;
use crate::table::orphan::remove_orphan_files;
use crate::table::orphan::tests::{age, all_files, commit, table};
use crate::table::retention::{ChangelogRetention, ExpireConfig};
use crate::table::rollback::{rollback_to, RollbackTarget};
use crate::table::FileStoreTable;

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
    let mut all = crate::table::file_deletion::all_kept(t).unwrap();
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
