//! Fixtures shared by the integration tests (`mod common;` in each test file): tables in a
//! temporary catalog, batches of `k`/`v`(/`op`) rows, write-and-commit, and reading back.
// Every test file is a crate of its own and uses a part of these helpers; the rest would be
// reported as unused in that crate.
#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, ArrayRef, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use paimon_rs_core::{
    FileStoreCommit, FileStoreTable, FileSystemCatalog, NewTableSchema, Split, TableRead,
    TableScan, TableWrite, BATCH_COMMIT_IDENTIFIER,
};

/// Key `k` BIGINT NOT NULL, value `v` BIGINT.
pub fn kv_schema() -> Arc<Schema> {
    Arc::new(Schema::new(vec![
        Field::new("k", DataType::Int64, false),
        Field::new("v", DataType::Int64, true),
    ]))
}

/// [`kv_schema`] and the row kind of each row in `op` STRING (`+I`, `-D`, ...; nullable, as an
/// aggregation table's merge leaves it null).
pub fn kvo_schema() -> Arc<Schema> {
    Arc::new(Schema::new(vec![
        Field::new("k", DataType::Int64, false),
        Field::new("v", DataType::Int64, true),
        Field::new("op", DataType::Utf8, true),
    ]))
}

/// A catalog in `dir` with the database `db`.
pub fn catalog(dir: &Path) -> FileSystemCatalog {
    let cat = FileSystemCatalog::new(dir).unwrap();
    cat.create_database("db", true).unwrap();
    cat
}

/// Create the table `name` (`db.x`) of `cat` with these keys and options, and open it.
pub fn create_table(
    cat: &FileSystemCatalog,
    name: &str,
    schema: &Schema,
    partition_keys: &[&str],
    primary_keys: &[&str],
    options: &[(&str, &str)],
) -> FileStoreTable {
    let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let opts: BTreeMap<String, String> = options
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let s = NewTableSchema::from_arrow(
        schema,
        strings(partition_keys),
        strings(primary_keys),
        opts,
        None,
    )
    .unwrap();
    cat.create_table(name, s, false).unwrap();
    cat.get_table(name).unwrap()
}

/// The table `db.t` in `dir` of [`kvo_schema`], keyed by `k`, row kinds in `op`, `buckets`
/// buckets and `options` besides.
pub fn create_kvo(dir: &Path, buckets: i32, options: &[(&str, &str)]) -> FileStoreTable {
    let buckets = buckets.to_string();
    let mut opts = vec![("bucket", buckets.as_str()), ("rowkind.field", "op")];
    opts.extend_from_slice(options);
    create_table(&catalog(dir), "db.t", &kvo_schema(), &[], &["k"], &opts)
}

/// `t` with `options` changed (parsed again, as a new table handle).
pub fn with_options(t: &FileStoreTable, options: &[(&str, &str)]) -> FileStoreTable {
    let m: BTreeMap<String, String> = options
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    t.copy(&m).unwrap()
}

/// A batch of [`kvo_schema`].
pub fn kvo_batch(rows: &[(i64, Option<i64>, &str)]) -> RecordBatch {
    let cols: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.0))),
        Arc::new(Int64Array::from_iter(rows.iter().map(|r| r.1))),
        Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.2))),
    ];
    RecordBatch::try_new(kvo_schema(), cols).unwrap()
}

/// A batch of [`kv_schema`].
pub fn kv_batch(rows: &[(i64, i64)]) -> RecordBatch {
    let cols: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.0))),
        Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.1))),
    ];
    RecordBatch::try_new(kv_schema(), cols).unwrap()
}

/// Write `batches` with one writer and commit them; the new snapshot's id (`None`: nothing
/// to commit).
pub fn commit_batches(table: &FileStoreTable, batches: &[RecordBatch]) -> Option<i64> {
    let mut w = TableWrite::new(table.clone()).unwrap();
    for b in batches {
        w.write(b).unwrap();
    }
    let msgs = w.prepare_commit().unwrap();
    FileStoreCommit::new(table.clone(), "test".into())
        .commit(&msgs, BATCH_COMMIT_IDENTIFIER, None)
        .unwrap()
}

/// Commit `rows` of [`kvo_schema`]; the new snapshot's id.
pub fn commit_kvo(table: &FileStoreTable, rows: &[(i64, Option<i64>, &str)]) -> Option<i64> {
    commit_batches(table, &[kvo_batch(rows)])
}

/// Commit `rows` of [`kv_schema`]; the new snapshot's id.
pub fn commit_kv(table: &FileStoreTable, rows: &[(i64, i64)]) -> Option<i64> {
    commit_batches(table, &[kv_batch(rows)])
}

/// `k -> v` of batches whose first two columns are `k`, `v`; a key read twice fails.
pub fn rows_of(batches: Vec<RecordBatch>) -> HashMap<i64, Option<i64>> {
    let mut out = HashMap::new();
    for b in batches {
        let k = b.column(0).as_primitive::<Int64Type>();
        let v = b.column(1).as_primitive::<Int64Type>();
        for i in 0..b.num_rows() {
            let prev = out.insert(k.value(i), (!v.is_null(i)).then(|| v.value(i)));
            assert!(prev.is_none(), "key {} read twice", k.value(i));
        }
    }
    out
}

/// `k -> v` read from `splits` of `table`.
pub fn read_splits(table: &FileStoreTable, splits: &[Split]) -> HashMap<i64, Option<i64>> {
    let r = TableRead::new(table.clone(), Some(vec!["k".into(), "v".into()]), None).unwrap();
    rows_of(r.read_splits(splits).unwrap())
}

/// `k -> v` of the table's latest snapshot.
pub fn read_kv(table: &FileStoreTable) -> HashMap<i64, Option<i64>> {
    let plan = TableScan::new(table.clone(), None).plan().unwrap();
    read_splits(table, &plan.splits)
}
