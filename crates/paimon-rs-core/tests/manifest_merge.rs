//! Manifest merging at commit: the base manifest list stays short over many commits, ADD/DELETE
//! pairs cancel in a full compaction, and the table reads the same before and after.

mod common;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type};
use arrow_array::{ArrayRef, Int32Array, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use common::{catalog, create_table};
use paimon_rs_core::{
    read_manifest_entries, read_manifest_list, Datum, FileKind, FileStoreCommit, FileStoreTable,
    ManifestFileMeta, NewTableSchema, TableRead, TableScan, TableWrite, BATCH_COMMIT_IDENTIFIER,
};

fn schema() -> Arc<Schema> {
    Arc::new(Schema::new(vec![
        Field::new("p", DataType::Int32, false),
        Field::new("k", DataType::Int64, false),
        Field::new("v", DataType::Int64, true),
    ]))
}

fn create(dir: &std::path::Path, opts: &[(&str, &str)]) -> FileStoreTable {
    let mut o = vec![("bucket", "2")];
    o.extend_from_slice(opts);
    create_table(&catalog(dir), "db.t", &schema(), &["p"], &["p", "k"], &o)
}

/// Commit `rows` (overwriting partition `overwrite_p`); returns the number of new files.
fn commit(table: &FileStoreTable, rows: &[(i32, i64, i64)], overwrite_p: Option<i32>) -> usize {
    let cols: Vec<ArrayRef> = vec![
        Arc::new(Int32Array::from(
            rows.iter().map(|r| r.0).collect::<Vec<_>>(),
        )),
        Arc::new(Int64Array::from(
            rows.iter().map(|r| r.1).collect::<Vec<_>>(),
        )),
        Arc::new(Int64Array::from(
            rows.iter().map(|r| r.2).collect::<Vec<_>>(),
        )),
    ];
    let mut w = TableWrite::new(table.clone()).unwrap();
    w.write(&RecordBatch::try_new(schema(), cols).unwrap())
        .unwrap();
    let msgs = w.prepare_commit().unwrap();
    let files = msgs.iter().map(|m| m.data_increment.new_files.len()).sum();
    let c = FileStoreCommit::new(table.clone(), "merge-test".into());
    let spec = overwrite_p.map(|p| vec![("p".to_string(), Some(Datum::Int(p)))]);
    c.commit(&msgs, BATCH_COMMIT_IDENTIFIER, spec.as_ref())
        .unwrap()
        .expect("a snapshot");
    files
}

fn read_all(table: &FileStoreTable) -> HashMap<(i32, i64), i64> {
    let plan = TableScan::new(table.clone(), None).plan().unwrap();
    let r = TableRead::new(table.clone(), None, None).unwrap();
    let mut out = HashMap::new();
    for b in r.read_splits(&plan.splits).unwrap() {
        let p = b.column(0).as_primitive::<Int32Type>();
        let k = b.column(1).as_primitive::<Int64Type>();
        let v = b.column(2).as_primitive::<Int64Type>();
        for i in 0..b.num_rows() {
            assert!(out.insert((p.value(i), k.value(i)), v.value(i)).is_none());
        }
    }
    out
}

/// The latest snapshot's (base, delta) manifests.
fn manifests(table: &FileStoreTable) -> (Vec<ManifestFileMeta>, Vec<ManifestFileMeta>) {
    let s = table.snapshot_manager().latest().unwrap().unwrap();
    let list = |name: &str| {
        let p = table.manifest_dir().join(name);
        read_manifest_list(&std::fs::read(&p).unwrap(), &p).unwrap()
    };
    (list(&s.base_manifest_list), list(&s.delta_manifest_list))
}

#[test]
fn small_manifests_are_merged_once_min_count_is_reached() {
    let dir = tempfile::tempdir().unwrap();
    let t = create(dir.path(), &[("manifest.merge-min-count", "3")]);
    let mut model = HashMap::new();
    let mut max_base = 0;
    let mut files_before_last = 0;
    for i in 0..12i64 {
        let rows: Vec<(i32, i64, i64)> = (0..5).map(|j| ((i % 3) as i32, i * 3 + j, i)).collect();
        for r in &rows {
            model.insert((r.0, r.1), r.2);
        }
        let files = commit(&t, &rows, None);
        if i < 11 {
            files_before_last += files;
        }
        let (base, delta) = manifests(&t);
        assert_eq!(delta.len(), 1);
        max_base = max_base.max(base.len());
        assert_eq!(read_all(&t), model, "after commit {i}");
    }
    // Without merging the base list would hold 11 manifests; with min-count 3 it never
    // reaches 3 (merged as soon as it would).
    assert!(max_base < 3, "base list grew to {max_base} manifests");
    let (base, _) = manifests(&t);
    let added: i64 = base.iter().map(|m| m.num_added_files).sum();
    assert_eq!(
        added as usize, files_before_last,
        "every file of the first 11 commits is still listed once"
    );
}

#[test]
fn default_min_count_keeps_fewer_than_30_small_manifests() {
    let dir = tempfile::tempdir().unwrap();
    let t = create(dir.path(), &[]);
    for i in 0..35i64 {
        commit(&t, &[(0, i, i)], None);
    }
    let (base, _) = manifests(&t);
    assert!(base.len() < 30, "{} manifests", base.len());
    assert_eq!(read_all(&t).len(), 35);
}

#[test]
fn full_compaction_drops_deleted_files_and_their_deletes() {
    let dir = tempfile::tempdir().unwrap();
    // Every manifest is "small" (< 8 MiB) and the trigger is 1 byte: each commit rewrites all.
    let t = create(
        dir.path(),
        &[
            ("manifest.full-compaction-threshold-size", "1 b"),
            ("manifest.merge-min-count", "1000"),
        ],
    );
    commit(&t, &[(1, 1, 1), (2, 2, 2)], None);
    commit(&t, &[(1, 3, 3), (2, 4, 4)], None);
    // Overwrite partition 1: DELETE entries for its two files.
    commit(&t, &[(1, 5, 5)], Some(1));
    let (_, delta) = manifests(&t);
    assert!(delta.iter().any(|m| m.num_deleted_files > 0));
    commit(&t, &[(2, 6, 6)], None);
    let (base, _) = manifests(&t);
    assert_eq!(base.len(), 1, "one merged manifest");
    assert_eq!(base[0].num_deleted_files, 0);
    let p = t.manifest_dir().join(&base[0].file_name);
    let entries = read_manifest_entries(&std::fs::read(&p).unwrap(), &p).unwrap();
    assert!(entries.iter().all(|e| e.kind == FileKind::Add));
    // p=1: only the overwrite's file; p=2: two files (commits 1, 2); the new commit is in delta.
    assert_eq!(entries.len(), 3);
    assert_eq!(
        read_all(&t),
        HashMap::from([((1, 5), 5), ((2, 2), 2), ((2, 4), 4), ((2, 6), 6)])
    );
}

#[test]
fn merged_away_manifests_are_not_deleted_from_older_snapshots() {
    // Old snapshots keep pointing at the manifests they listed: time travel still works.
    let dir = tempfile::tempdir().unwrap();
    let t = create(dir.path(), &[("manifest.merge-min-count", "2")]);
    for i in 0..6i64 {
        commit(&t, &[(0, i, i)], None);
    }
    for id in 1..=6i64 {
        let plan = TableScan::new(t.clone(), None)
            .with_snapshot(id)
            .plan()
            .unwrap();
        let r = TableRead::new(t.clone(), None, None).unwrap();
        let rows: usize = r
            .read_splits(&plan.splits)
            .unwrap()
            .iter()
            .map(|b| b.num_rows())
            .sum();
        assert_eq!(rows, id as usize, "snapshot {id}");
    }
}

#[test]
fn bad_manifest_options_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let cat = catalog(dir.path());
    for (k, v) in [
        ("manifest.merge-min-count", "x"),
        ("manifest.target-file-size", "0"),
        ("manifest.full-compaction-threshold-size", "lots"),
    ] {
        let o: BTreeMap<String, String> =
            [("bucket".into(), "1".into()), (k.into(), v.into())].into();
        let s = NewTableSchema::from_arrow(&schema(), vec![], vec!["k".into()], o, None).unwrap();
        let err = cat
            .create_table("db.bad", s, false)
            .unwrap_err()
            .to_string();
        assert!(err.contains(k), "{err}");
    }
}
