//! Reading first-row tables written by others: level-0 files are hidden, files at level >= 1 are
//! read (raw when planning says so, merged keeping the oldest record otherwise). paimon_rs
//! cannot write first-row tables (no lookup compaction), so the files are written as a
//! deduplicate table and then re-labelled: levels changed in the split, engine in the options.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, ArrayRef, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use paimon_rs_core::{
    FileStoreCommit, FileStoreTable, FileSystemCatalog, NewTableSchema, Split, TableRead,
    TableScan, TableWrite, BATCH_COMMIT_IDENTIFIER,
};

fn schema() -> Arc<Schema> {
    Arc::new(Schema::new(vec![
        Field::new("k", DataType::Int64, false),
        Field::new("v", DataType::Int64, true),
    ]))
}

fn commit(table: &FileStoreTable, rows: &[(i64, i64)]) {
    let cols: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from(
            rows.iter().map(|r| r.0).collect::<Vec<_>>(),
        )),
        Arc::new(Int64Array::from(
            rows.iter().map(|r| r.1).collect::<Vec<_>>(),
        )),
    ];
    let mut w = TableWrite::new(table.clone()).unwrap();
    w.write(&RecordBatch::try_new(schema(), cols).unwrap())
        .unwrap();
    let msgs = w.prepare_commit().unwrap();
    FileStoreCommit::new(table.clone(), "first-row-test".into())
        .commit(&msgs, BATCH_COMMIT_IDENTIFIER, None)
        .unwrap();
}

fn rows(table: &FileStoreTable, splits: &[Split]) -> HashMap<i64, i64> {
    let r = TableRead::new(table.clone(), None, None).unwrap();
    let mut out = HashMap::new();
    for b in r.read_splits(splits).unwrap() {
        let k = b.column(0).as_primitive::<Int64Type>();
        let v = b.column(1).as_primitive::<Int64Type>();
        for i in 0..b.num_rows() {
            assert!(out.insert(k.value(i), v.value(i)).is_none(), "key twice");
            assert!(v.is_valid(i));
        }
    }
    out
}

#[test]
fn first_row_reads_skip_level_zero_and_keep_the_oldest() {
    let dir = tempfile::tempdir().unwrap();
    let cat = FileSystemCatalog::new(dir.path()).unwrap();
    cat.create_database("db", true).unwrap();
    let opts: BTreeMap<String, String> = [("bucket".to_string(), "1".to_string())].into();
    let s = NewTableSchema::from_arrow(&schema(), vec![], vec!["k".into()], opts, None).unwrap();
    cat.create_table("db.t", s, false).unwrap();
    let dedup = cat.get_table("db.t").unwrap();
    commit(&dedup, &[(1, 10), (2, 20)]);
    commit(&dedup, &[(2, 21), (3, 31)]);

    // options are parsed once: re-label through `copy`, which parses them again
    let fr = dedup
        .copy(&[("merge-engine".to_string(), "first-row".to_string())].into())
        .unwrap();
    // Level 0 is invisible to batch reads of a first-row table.
    let plan = TableScan::new(fr.clone(), None).plan().unwrap();
    assert!(plan.splits.is_empty());

    // The same files at level >= 1, merged: the oldest record of key 2 wins.
    let plan = TableScan::new(dedup.clone(), None).plan().unwrap();
    let mut split = plan.splits[0].clone();
    assert_eq!(split.files.len(), 2);
    for (i, f) in split.files.iter_mut().enumerate() {
        f.level = 1 + i as i32;
    }
    split.raw_convertible = false;
    let got = rows(&fr, &[split]);
    assert_eq!(got, HashMap::from([(1, 10), (2, 20), (3, 31)]));
    // and deduplicate keeps the newest
    let plan = TableScan::new(dedup.clone(), None).plan().unwrap();
    assert_eq!(rows(&dedup, &plan.splits)[&2], 21);
}
