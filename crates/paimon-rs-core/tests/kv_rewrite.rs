//! The KV file API a compaction task uses: read a bucket's files as sorted runs of KV batches
//! (`kv::KvFileReader`), merge them with the table's merge engine, and write the result through
//! a rolling writer made by `kv_file_context` at a chosen level with file source COMPACT. The
//! rewritten file reads back as the table's merged rows.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int64Type, Int8Type};
use arrow_array::{ArrayRef, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use paimon_rs_core::{
    kv_file_context, merge_sorted_runs, FileSource, FileStoreCommit, FileStoreTable,
    FileSystemCatalog, KvFileReader, MergeEngine, NewTableSchema, RollingFileWriter, RowKind,
    TableScan, TableWrite, BATCH_COMMIT_IDENTIFIER, SEQUENCE_NUMBER, VALUE_KIND,
};

fn schema() -> Arc<Schema> {
    Arc::new(Schema::new(vec![
        Field::new("k", DataType::Int64, false),
        Field::new("v", DataType::Int64, true),
    ]))
}

fn commit(table: &FileStoreTable, rows: &[(i64, i64)]) {
    let cols: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.0))),
        Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.1))),
    ];
    let mut w = TableWrite::new(table.clone()).unwrap();
    w.write(&RecordBatch::try_new(schema(), cols).unwrap())
        .unwrap();
    let msgs = w.prepare_commit().unwrap();
    FileStoreCommit::new(table.clone(), "kv-test".into())
        .commit(&msgs, BATCH_COMMIT_IDENTIFIER, None)
        .unwrap();
}

#[test]
fn sorted_runs_read_merged_and_rewritten_at_a_level() {
    let dir = tempfile::tempdir().unwrap();
    let cat = FileSystemCatalog::new(dir.path()).unwrap();
    cat.create_database("db", true).unwrap();
    let opts: BTreeMap<String, String> = [("bucket".to_string(), "1".to_string())].into();
    let s = NewTableSchema::from_arrow(&schema(), vec![], vec!["k".into()], opts, None).unwrap();
    cat.create_table("db.t", s, false).unwrap();
    let t = cat.get_table("db.t").unwrap();
    commit(&t, &[(1, 10), (2, 20)]);
    commit(&t, &[(2, 21), (3, 31)]);

    let plan = TableScan::new(t.clone(), None).plan().unwrap();
    let split = &plan.splits[0];
    assert_eq!(split.files.len(), 2);
    let reader = KvFileReader::new(&t).unwrap();
    let names: Vec<String> = reader
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    assert_eq!(names, ["_KEY_k", SEQUENCE_NUMBER, VALUE_KIND, "k", "v"]);
    let runs: Vec<_> = split.files.iter().map(|f| vec![f.clone()]).collect();
    let iters = reader.read_runs(Path::new(&split.bucket_path), &runs, &split.deletion_files);
    assert_eq!(iters.len(), 2);
    let engine = MergeEngine::new(&t.name, &t.schema, &t.options).unwrap();
    let merged = merge_sorted_runs(iters, reader.layout(), engine, false).unwrap();

    let mut ctx = kv_file_context(&t, 3, FileSource::Compact).unwrap();
    ctx.dir = t.path.join(&split.bucket_path);
    let mut w = RollingFileWriter::new(ctx, 0);
    for b in merged {
        w.write(&b.unwrap()).unwrap();
    }
    let files = w.close().unwrap();
    assert_eq!(files.len(), 1);
    let f = &files[0];
    assert_eq!((f.level, f.file_source, f.row_count), (3, Some(1), 3));

    let back: Vec<RecordBatch> = reader
        .read_run(Path::new(&split.bucket_path), &files, &BTreeMap::new())
        .collect::<Result<_, _>>()
        .unwrap();
    let b = &back[0];
    let k = b.column(0).as_primitive::<Int64Type>().values().to_vec();
    let kind = b.column(2).as_primitive::<Int8Type>().values().to_vec();
    let v = b.column(4).as_primitive::<Int64Type>().values().to_vec();
    assert_eq!(k, [1, 2, 3]);
    assert_eq!(v, [10, 21, 31]);
    assert!(kind.iter().all(|&x| x == RowKind::Insert.byte()));
    assert!(KvFileReader::new(&append_table(&cat)).is_err());
}

fn append_table(cat: &FileSystemCatalog) -> FileStoreTable {
    let s = NewTableSchema::from_arrow(&schema(), vec![], vec![], BTreeMap::new(), None).unwrap();
    cat.create_table("db.a", s, false).unwrap();
    cat.get_table("db.a").unwrap()
}
