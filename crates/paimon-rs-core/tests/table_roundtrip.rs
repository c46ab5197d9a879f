//! End-to-end through the core API: create, write, commit, scan, read.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, ArrayRef, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use paimon_rs_core::commit::FileStoreCommit;
use paimon_rs_core::read::scan::TableScan;
use paimon_rs_core::read::table_read::TableRead;
use paimon_rs_core::spec::snapshot::BATCH_COMMIT_IDENTIFIER;
use paimon_rs_core::table::catalog::{FileSystemCatalog, NewTableSchema};
use paimon_rs_core::table::FileStoreTable;
use paimon_rs_core::write::TableWrite;
use proptest::prelude::*;

fn schema() -> Arc<Schema> {
    Arc::new(Schema::new(vec![
        Field::new("k", DataType::Int64, false),
        Field::new("v", DataType::Int64, true),
        Field::new("op", DataType::Utf8, false),
    ]))
}

fn create(dir: &std::path::Path, buckets: i32) -> FileStoreTable {
    let cat = FileSystemCatalog::new(dir).unwrap();
    cat.create_database("db", true).unwrap();
    let opts: BTreeMap<String, String> = [
        ("bucket".to_string(), buckets.to_string()),
        ("rowkind.field".to_string(), "op".to_string()),
    ]
    .into();
    let s = NewTableSchema::from_arrow(&schema(), vec![], vec!["k".into()], opts, None).unwrap();
    cat.create_table("db.t", s, false).unwrap();
    cat.get_table("db.t").unwrap()
}

fn batch(rows: &[(i64, Option<i64>, &str)]) -> RecordBatch {
    let cols: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from(
            rows.iter().map(|r| r.0).collect::<Vec<_>>(),
        )),
        Arc::new(Int64Array::from(
            rows.iter().map(|r| r.1).collect::<Vec<_>>(),
        )),
        Arc::new(StringArray::from(
            rows.iter().map(|r| r.2).collect::<Vec<_>>(),
        )),
    ];
    RecordBatch::try_new(schema(), cols).unwrap()
}

fn commit(table: &FileStoreTable, rows: &[(i64, Option<i64>, &str)]) -> Option<i64> {
    let mut w = TableWrite::new(table.clone()).unwrap();
    w.write(&batch(rows)).unwrap();
    let msgs = w.prepare_commit().unwrap();
    let c = FileStoreCommit::new(table.clone(), uuid_like());
    c.commit(&msgs, BATCH_COMMIT_IDENTIFIER, None).unwrap()
}

fn uuid_like() -> String {
    format!("user-{}", std::process::id())
}

fn read_all(table: &FileStoreTable) -> HashMap<i64, Option<i64>> {
    let plan = TableScan::new(table.clone(), None).plan().unwrap();
    let r = TableRead::new(table.clone(), Some(vec!["k".into(), "v".into()]), None).unwrap();
    let mut out = HashMap::new();
    for b in r.read_splits(&plan.splits).unwrap() {
        let k = b.column(0).as_primitive::<Int64Type>();
        let v = b.column(1).as_primitive::<Int64Type>();
        for i in 0..b.num_rows() {
            let prev = out.insert(k.value(i), (!v.is_null(i)).then(|| v.value(i)));
            assert!(prev.is_none(), "key {} read twice", k.value(i));
        }
    }
    out
}

#[test]
fn upsert_and_delete_across_commits() {
    let dir = tempfile::tempdir().unwrap();
    let t = create(dir.path(), 2);
    assert_eq!(
        commit(
            &t,
            &[(1, Some(1), "+I"), (2, Some(2), "+I"), (1, Some(3), "+U")]
        ),
        Some(1)
    );
    assert_eq!(commit(&t, &[(2, None, "-D"), (3, None, "+I")]), Some(2));
    let got = read_all(&t);
    assert_eq!(got, HashMap::from([(1, Some(3)), (3, None)]));
    // empty commit creates no snapshot
    assert_eq!(commit(&t, &[]), None);
}

#[test]
fn lost_race_is_retried_with_the_next_id() {
    let dir = tempfile::tempdir().unwrap();
    let t = create(dir.path(), 1);
    commit(&t, &[(1, Some(1), "+I")]);
    let mut w = TableWrite::new(t.clone()).unwrap();
    w.write(&batch(&[(2, Some(2), "+I")])).unwrap();
    let msgs = w.prepare_commit().unwrap();
    // another writer takes snapshot-2 between our prepare and our commit
    commit(&t, &[(3, Some(3), "+I")]);
    let c = FileStoreCommit::new(t.clone(), "late".into());
    assert_eq!(
        c.commit(&msgs, BATCH_COMMIT_IDENTIFIER, None).unwrap(),
        Some(3)
    );
    assert_eq!(read_all(&t).len(), 3);
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
        let t = create(dir.path(), buckets);
        let mut model: BTreeMap<i64, i64> = BTreeMap::new();
        for ops in commits {
            let rows: Vec<(i64, Option<i64>, &str)> = ops.iter().map(|o| match o {
                Op::Upsert(k, v) => (*k, Some(*v), "+I"),
                Op::Delete(k) => (*k, None, "-D"),
            }).collect();
            commit(&t, &rows);
            for o in &ops {
                match o {
                    Op::Upsert(k, v) => { model.insert(*k, *v); }
                    Op::Delete(k) => { model.remove(k); }
                }
            }
            let got = read_all(&t);
            let want: HashMap<i64, Option<i64>> = model.iter().map(|(k, v)| (*k, Some(*v))).collect();
            prop_assert_eq!(got, want);
        }
    }
}
