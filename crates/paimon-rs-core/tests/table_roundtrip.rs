//! End-to-end through the core API: create, write, commit, scan, read.

mod common;

use std::collections::{BTreeMap, HashMap};

use common::{commit_kvo, create_kvo, kvo_batch, read_kv, with_options};
use paimon_rs_core::{
    FileStoreCommit, FileStoreTable, TableScan, TableWrite, BATCH_COMMIT_IDENTIFIER,
};
use proptest::prelude::*;

#[test]
fn upsert_and_delete_across_commits() {
    let dir = tempfile::tempdir().unwrap();
    let t = create_kvo(dir.path(), 2, &[]);
    assert_eq!(
        commit_kvo(
            &t,
            &[(1, Some(1), "+I"), (2, Some(2), "+I"), (1, Some(3), "+U")]
        ),
        Some(1)
    );
    assert_eq!(commit_kvo(&t, &[(2, None, "-D"), (3, None, "+I")]), Some(2));
    let got = read_kv(&t);
    assert_eq!(got, HashMap::from([(1, Some(3)), (3, None)]));
    // empty commit creates no snapshot
    assert_eq!(commit_kvo(&t, &[]), None);
}

#[test]
fn lost_race_is_retried_with_the_next_id() {
    let dir = tempfile::tempdir().unwrap();
    let t = create_kvo(dir.path(), 1, &[]);
    commit_kvo(&t, &[(1, Some(1), "+I")]);
    let mut w = TableWrite::new(t.clone()).unwrap();
    w.write(&kvo_batch(&[(2, Some(2), "+I")])).unwrap();
    let msgs = w.prepare_commit().unwrap();
    // another writer takes snapshot-2 between our prepare and our commit
    commit_kvo(&t, &[(3, Some(3), "+I")]);
    let c = FileStoreCommit::new(t.clone(), "late".into());
    assert_eq!(
        c.commit(&msgs, BATCH_COMMIT_IDENTIFIER, None).unwrap(),
        Some(3)
    );
    assert_eq!(read_kv(&t).len(), 3);
}

#[derive(Debug, Clone)]
enum Op {
    Upsert(i64, i64),
    Delete(i64),
}

fn op_strategy() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0i64..20, -5i64..5).prop_map(|(k, v)| Op::Upsert(k, v)),
        (0i64..20).prop_map(Op::Delete),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
    #[test]
    fn matches_btreemap_model(commits in prop::collection::vec(prop::collection::vec(op_strategy(), 0..30), 1..5),
                              buckets in 1i32..4) {
        let dir = tempfile::tempdir().unwrap();
        let t = create_kvo(dir.path(), buckets, &[]);
        let mut model: BTreeMap<i64, i64> = BTreeMap::new();
        for ops in commits {
            let rows: Vec<(i64, Option<i64>, &str)> = ops.iter().map(|o| match o {
                Op::Upsert(k, v) => (*k, Some(*v), "+I"),
                Op::Delete(k) => (*k, None, "-D"),
            }).collect();
            commit_kvo(&t, &rows);
            for o in &ops {
                match o {
                    Op::Upsert(k, v) => { model.insert(*k, *v); }
                    Op::Delete(k) => { model.remove(k); }
                }
            }
            let got = read_kv(&t);
            let want: HashMap<i64, Option<i64>> = model.iter().map(|(k, v)| (*k, Some(*v))).collect();
            prop_assert_eq!(got, want);
        }
    }
}

fn commit_in_batches(
    table: &FileStoreTable,
    rows: &[(i64, Option<i64>, &str)],
    chunk: usize,
) -> usize {
    let mut w = TableWrite::new(table.clone()).unwrap();
    for part in rows.chunks(chunk.max(1)) {
        w.write(&kvo_batch(part)).unwrap();
    }
    let spills = w.spill_count();
    let msgs = w.prepare_commit().unwrap();
    let c = FileStoreCommit::new(table.clone(), "test".into());
    c.commit(&msgs, BATCH_COMMIT_IDENTIFIER, None).unwrap();
    spills
}

fn op_rows(ops: &[Op]) -> Vec<(i64, Option<i64>, &'static str)> {
    ops.iter()
        .map(|o| match o {
            Op::Upsert(k, v) => (*k, Some(*v), if *v % 2 == 0 { "+I" } else { "+U" }),
            Op::Delete(k) => (*k, None, if *k % 2 == 0 { "-D" } else { "-U" }),
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]
    /// A tiny buffer (a spill per batch, multi-pass merge with fan-in 2) reads exactly like a
    /// huge one, and like the model.
    #[test]
    fn tiny_spilling_buffer_matches_huge_buffer(
        commits in prop::collection::vec(prop::collection::vec(op_strategy(), 0..60), 1..4),
        chunk in 1usize..7,
    ) {
        let d1 = tempfile::tempdir().unwrap();
        let d2 = tempfile::tempdir().unwrap();
        let spill_dir = tempfile::tempdir().unwrap();
        let huge = create_kvo(d1.path(), 2, &[]);
        let tiny = with_options(&create_kvo(d2.path(), 2, &[]), &[
            ("write-buffer-size", "1 b"),
            ("local-sort.max-num-file-handles", "2"),
            ("write-buffer-spill.dir", spill_dir.path().to_str().unwrap()),
        ]);
        let mut model: BTreeMap<i64, i64> = BTreeMap::new();
        let mut spilled = 0;
        for ops in &commits {
            let rows = op_rows(ops);
            commit_in_batches(&huge, &rows, 1000);
            spilled += commit_in_batches(&tiny, &rows, chunk);
            for o in ops {
                match o {
                    Op::Upsert(k, v) => { model.insert(*k, *v); }
                    Op::Delete(k) => { model.remove(k); }
                }
            }
            let want: HashMap<i64, Option<i64>> = model.iter().map(|(k, v)| (*k, Some(*v))).collect();
            prop_assert_eq!(read_kv(&huge), want.clone());
            prop_assert_eq!(read_kv(&tiny), want);
        }
        let total_rows: usize = commits.iter().map(Vec::len).sum();
        prop_assert!(total_rows < 2 || spilled > 0);
        // no spill directory or file survives the writers
        prop_assert_eq!(std::fs::read_dir(spill_dir.path()).unwrap().count(), 0);
    }

    /// Without spilling, memory pressure flushes level-0 files early; same result.
    #[test]
    fn non_spillable_buffer_flushes_early(ops in prop::collection::vec(op_strategy(), 1..80)) {
        let d = tempfile::tempdir().unwrap();
        let t = with_options(&create_kvo(d.path(), 1, &[]), &[
            ("write-buffer-size", "1 b"),
            ("write-buffer-spillable", "false"),
        ]);
        let rows = op_rows(&ops);
        commit_in_batches(&t, &rows, 3);
        let mut model: BTreeMap<i64, i64> = BTreeMap::new();
        for o in &ops {
            match o {
                Op::Upsert(k, v) => { model.insert(*k, *v); }
                Op::Delete(k) => { model.remove(k); }
            }
        }
        let want: HashMap<i64, Option<i64>> = model.iter().map(|(k, v)| (*k, Some(*v))).collect();
        prop_assert_eq!(read_kv(&t), want);
    }
}

#[test]
fn spill_disk_cap_falls_back_to_flushing() {
    let d = tempfile::tempdir().unwrap();
    let t = with_options(
        &create_kvo(d.path(), 1, &[]),
        &[
            ("write-buffer-size", "1 b"),
            ("write-buffer-spill.max-disk-size", "1 b"),
            // the flushed level-0 files are what this test counts: no writer compaction
            ("write-only", "true"),
        ],
    );
    let rows: Vec<(i64, Option<i64>, &str)> = (0..50).map(|i| (i % 7, Some(i), "+I")).collect();
    assert_eq!(
        commit_in_batches(&t, &rows, 5),
        0,
        "the disk cap forbids every spill"
    );
    let got = read_kv(&t);
    assert_eq!(got.len(), 7);
    assert_eq!(got[&6], Some(48));
    // several level-0 files were flushed within one commit
    let plan = TableScan::new(t.clone(), None).plan().unwrap();
    assert!(plan.splits.iter().map(|s| s.files.len()).sum::<usize>() > 1);
}

#[test]
fn rolling_writer_cuts_files_with_disjoint_increasing_keys() {
    let d = tempfile::tempdir().unwrap();
    let t = with_options(
        &create_kvo(d.path(), 1, &[]),
        &[("target-file-size", "1 kb")],
    );
    let rows: Vec<(i64, Option<i64>, &str)> =
        (0..20_000).rev().map(|i| (i, Some(i * 3), "+I")).collect();
    commit_in_batches(&t, &rows, 20_000);
    let plan = TableScan::new(t.clone(), None).plan().unwrap();
    let files: Vec<_> = plan.splits.iter().flat_map(|s| s.files.clone()).collect();
    assert!(
        files.len() > 2,
        "expected several files, got {}",
        files.len()
    );
    let types = vec![paimon_rs_core::DataType::new(
        paimon_rs_core::TypeKind::BigInt,
    )];
    let key = |b: &[u8]| match paimon_rs_core::deserialize_row(&types, b).unwrap()[0] {
        Some(paimon_rs_core::Datum::BigInt(v)) => v,
        ref other => panic!("bad key {other:?}"),
    };
    let mut ranges: Vec<(i64, i64)> = files
        .iter()
        .map(|f| (key(&f.min_key), key(&f.max_key)))
        .collect();
    ranges.sort();
    for w in ranges.windows(2) {
        assert!(w[0].1 < w[1].0, "overlapping key ranges {ranges:?}");
    }
    assert_eq!(ranges.first().unwrap().0, 0);
    assert_eq!(ranges.last().unwrap().1, 19_999);
    assert_eq!(files.iter().map(|f| f.row_count).sum::<i64>(), 20_000);
    assert_eq!(read_kv(&t).len(), 20_000);
}
