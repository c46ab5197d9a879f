//! The compaction task on real tables (issue #11): every bucket of a table written in several
//! commits is compacted by `BucketCompactor`; reading the compacted files gives what reading
//! the table gave, for each merge engine, with retractions dropped at the top level.

mod common;

use std::collections::{BTreeMap, HashMap};

use common::{commit_kvo, create_kvo, kvo_batch, read_kv, read_splits};
use paimon_rs_core::{
    live_entries, BucketCompactor, CompactIncrement, CompactSettings, DataFileMeta, DataIncrement,
    FileStoreCommit, FileStoreTable, Split, TableWrite, BATCH_COMMIT_IDENTIFIER,
};

/// Compact each bucket fully; read what the compacted files hold (merged, as a split of them).
fn compact_and_read(table: &FileStoreTable) -> (HashMap<i64, Option<i64>>, Vec<DataFileMeta>) {
    let snap = table.snapshot_manager().latest().unwrap().unwrap();
    let mut buckets: BTreeMap<i32, Vec<DataFileMeta>> = BTreeMap::new();
    for e in live_entries(table, &snap).unwrap() {
        buckets.entry(e.bucket).or_default().push(e.file);
    }
    let settings = CompactSettings::from_table(table).unwrap();
    let mut all = HashMap::new();
    let mut after_all = vec![];
    for (bucket, files) in buckets {
        let dir = table.bucket_dir("", bucket);
        let mut c = BucketCompactor::new(table, &settings, dir, files).unwrap();
        let res = c
            .compact(true)
            .unwrap()
            .expect("a full compaction of several runs");
        // one run, or none if every record of the bucket was deleted
        assert!(c.levels.number_of_sorted_runs() <= 1);
        assert!(res.after.iter().all(|f| f.level == 5), "{:?}", res.after);
        let split = Split {
            snapshot_id: snap.id,
            partition: snap_partition(),
            bucket,
            total_buckets: 2,
            bucket_path: format!("bucket-{bucket}"),
            files: res.after.clone(),
            raw_convertible: false,
            deletion_files: BTreeMap::new(),
            changelog: false,
            diff_before: None,
            row_slices: Default::default(),
            row_id_ranges: Vec::new(),
        };
        all.extend(read_splits(table, std::slice::from_ref(&split)));
        after_all.extend(res.after);
    }
    (all, after_all)
}

fn snap_partition() -> Vec<u8> {
    paimon_rs_core::serialize_row(&[], &[]).unwrap()
}

fn history(table: &FileStoreTable) {
    commit_kvo(
        table,
        &[(1, Some(1), "+I"), (2, Some(2), "+I"), (3, Some(3), "+I")],
    );
    commit_kvo(table, &[(2, Some(20), "+I"), (4, Some(4), "+I")]);
    commit_kvo(table, &[(3, Some(3), "-D"), (5, None, "+I")]);
    commit_kvo(
        table,
        &[(1, Some(100), "+I"), (6, Some(6), "+I"), (6, Some(6), "-D")],
    );
}

#[test]
fn full_compaction_keeps_what_every_merge_engine_reads() {
    for opts in [
        vec![],
        vec![
            ("merge-engine", "partial-update"),
            ("partial-update.remove-record-on-delete", "true"),
        ],
        vec![
            ("merge-engine", "aggregation"),
            ("fields.v.aggregate-function", "sum"),
        ],
    ] {
        let dir = tempfile::tempdir().unwrap();
        let table = create_kvo(dir.path(), 2, &opts);
        history(&table);
        let before = read_kv(&table);
        assert!(!before.is_empty());
        let (after, files) = compact_and_read(&table);
        assert_eq!(before, after, "options {opts:?}");
        // the top level holds no retraction: nothing older can need one
        assert!(
            files.iter().all(|f| f.delete_row_count == Some(0)),
            "{opts:?}: {files:?}"
        );
        assert!(files.iter().all(|f| f.file_source == Some(1)));
    }
}

#[test]
fn a_picked_compaction_keeps_retractions_when_older_data_lies_below() {
    let dir = tempfile::tempdir().unwrap();
    let table = create_kvo(
        dir.path(),
        1,
        &[
            ("num-sorted-run.compaction-trigger", "2"),
            ("num-levels", "3"),
        ],
    );
    // a big top level, so that the size ratio stops the pick below it
    let big: Vec<(i64, Option<i64>, &str)> = (1..5000).map(|k| (k, Some(k * 7), "+I")).collect();
    commit_kvo(&table, &big);
    // move everything to the top level first
    let snap = table.snapshot_manager().latest().unwrap().unwrap();
    let files: Vec<DataFileMeta> = live_entries(&table, &snap)
        .unwrap()
        .into_iter()
        .map(|e| e.file)
        .collect();
    let settings = CompactSettings::from_table(&table).unwrap();
    let mut c = BucketCompactor::new(&table, &settings, table.bucket_dir("", 0), files).unwrap();
    let top = c.compact(true).unwrap().unwrap();
    assert!(top.after.iter().all(|f| f.level == 2));
    // two newer level-0 files, one deleting key 1: the picker merges them into level 1, above
    // the top level that still holds key 1, so the -D must survive
    let (a, b) = (
        write_level0(&table, &[(1, None, "-D")]),
        write_level0(&table, &[(3, Some(3), "+I")]),
    );
    c.levels.update(&[], &[a, b]).unwrap();
    let r = c
        .compact(false)
        .unwrap()
        .expect("two level-0 runs reach the trigger");
    assert!(r.after.iter().all(|f| f.level == 1), "{:?}", r.after);
    let deletes: i64 = r.after.iter().map(|f| f.delete_row_count.unwrap()).sum();
    assert_eq!(deletes, 1, "the retraction of key 1 is kept: {:?}", r.after);
}

/// Write rows into new level-0 files of bucket 0 without committing them.
fn write_level0(table: &FileStoreTable, rows: &[(i64, Option<i64>, &str)]) -> DataFileMeta {
    let mut w = TableWrite::new(table.clone()).unwrap();
    w.write(&kvo_batch(rows)).unwrap();
    let mut msgs = w.prepare_commit().unwrap();
    assert_eq!(msgs.len(), 1);
    let f = msgs.remove(0).data_increment.new_files.remove(0);
    // commit it so that the next writer continues its sequence numbers
    FileStoreCommit::new(table.clone(), "u".into())
        .commit(
            &[paimon_rs_core::CommitMessage {
                partition: snap_partition(),
                bucket: 0,
                total_buckets: 1,
                data_increment: DataIncrement::new_files(vec![f.clone()]),
                compact_increment: CompactIncrement::default(),
                restored_snapshot: None,
            }],
            BATCH_COMMIT_IDENTIFIER,
            None,
        )
        .unwrap();
    f
}

/// The distributed compaction (`paimon_rs.spark.compact`): the plan lists every bucket with
/// more than one run, each bucket compacted on its own gives a COMPACT message, committing them
/// all reads as before with one run per bucket, and the plan is then empty.
#[test]
fn distributed_plan_then_per_bucket_compaction_commits_once() {
    use paimon_rs_core::{compact_one_bucket, plan_buckets};
    let dir = tempfile::tempdir().unwrap();
    let table = create_kvo(dir.path(), 2, &[("write-only", "true")]);
    history(&table);
    let before = read_kv(&table);
    let work = plan_buckets(&table, true, None).unwrap();
    assert_eq!(
        work.iter().map(|s| s.bucket).collect::<Vec<_>>(),
        vec![0, 1]
    );
    // work items travel serialized, as to a Spark task
    let msgs: Vec<_> = work
        .iter()
        .map(|s| Split::from_bytes(&s.to_bytes().unwrap()).unwrap())
        .filter_map(|s| compact_one_bucket(&table, &s, true).unwrap())
        .collect();
    assert_eq!(msgs.len(), 2);
    assert!(msgs
        .iter()
        .all(|m| m.data_increment.new_files.is_empty()
            && !m.compact_increment.compact_before.is_empty()));
    FileStoreCommit::new(table.clone(), "compact".into())
        .commit(&msgs, BATCH_COMMIT_IDENTIFIER, None)
        .unwrap();
    assert_eq!(read_kv(&table), before);
    assert!(plan_buckets(&table, true, None).unwrap().is_empty());
    // the picker (trigger 5) has nothing to do with one run per bucket
    assert!(plan_buckets(&table, false, None).unwrap().is_empty());
}
