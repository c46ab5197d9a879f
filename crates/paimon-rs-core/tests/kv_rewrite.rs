//! The KV file API a compaction task uses: read a bucket's files as sorted runs of KV batches
//! (`kv::KvFileReader`), merge them with the table's merge engine, and write the result through
//! a rolling writer made by `kv_file_context` at a chosen level with file source COMPACT. The
//! rewritten file reads back as the table's merged rows.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int64Type, Int8Type};
use arrow_array::RecordBatch;
use common::{catalog, commit_kv, create_table, kv_schema};
use paimon_rs_core::{
    kv_file_context, merge_sorted_runs, FileSource, KvFileReader, MergeEngine, RollingFileWriter,
    RowKind, TableScan, SEQUENCE_NUMBER, VALUE_KIND,
};

#[test]
fn sorted_runs_read_merged_and_rewritten_at_a_level() {
    let dir = tempfile::tempdir().unwrap();
    let cat = catalog(dir.path());
    let t = create_table(&cat, "db.t", &kv_schema(), &[], &["k"], &[("bucket", "1")]);
    commit_kv(&t, &[(1, 10), (2, 20)]);
    commit_kv(&t, &[(2, 21), (3, 31)]);

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
    let append = create_table(&cat, "db.a", &kv_schema(), &[], &[], &[]);
    assert!(KvFileReader::new(&append).is_err());
}
