//! Write-path benchmarks (issue 3): the write buffer's sort and the external sort.
//!
//! * `sort_by_key/*`: ordering 1M key-value rows by key (what a write buffer does before it
//!   spills or flushes), for a BIGINT key (the integer fast path) and a ~16-char string key
//!   (the arrow-row path).
//! * `sort_buffer/*`: `SortBuffer::put` of 1M rows in 64k-row batches + `take_runs` (gather
//!   the keys, sort, gather the sorted key-value rows in 8k-row chunks): the whole in-memory
//!   sort of one bucket buffer.
//! * `table_write/*`: `TableWrite::write` + `prepare_commit` of 400k rows of the
//!   bench_foundation shape (BIGINT key + 6 value columns, 4 buckets) with a huge
//!   `write-buffer-size` (nothing spills), a tiny one (spills to sorted runs, merged at flush),
//!   and a tiny one with `write-buffer-spillable` = false (flushes level-0 files instead).
//! * `rolling_writer/*`: `RollingFileWriter` writing 400k sorted key-value rows of that shape
//!   into one Parquet file (with stats): the table's writer properties (zstd level 1, no
//!   dictionary on the key and sequence columns, 256 KiB dictionary fallback), the properties
//!   before that (dictionary everywhere, 1 MiB fallback), no dictionary at all, and no codec.
//!
//! `cargo bench -p paimon-rs-core --bench write_buffer` (a few minutes on 2 cores).

use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow_array::{
    ArrayRef, BooleanArray, Float64Array, Int32Array, Int64Array, Int8Array, RecordBatch,
    StringArray,
};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use paimon_rs_core::{
    kv_arrow_schema, parquet_writer_properties, sort_by_key, FileStoreTable, FileSystemCatalog,
    FileWriterContext, KvLayout, MemoryCounter, NewTableSchema, RollingFileWriter, SharedInput,
    SortBuffer, SpillOptions, Spiller, StatsMode, TableWrite,
};
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::{EnabledStatistics, WriterProperties};

const SORT_ROWS: usize = 1_000_000;
const WRITE_ROWS: usize = 400_000;
const BATCH_ROWS: usize = 64 * 1024;

/// splitmix64: a deterministic generator without a `rand` dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// 0..n shuffled (unique keys, random order, like bench_foundation's permutation).
fn shuffled_keys(rng: &mut Rng, n: usize) -> Vec<i64> {
    let mut v: Vec<i64> = (0..n as i64).collect();
    for i in (1..n).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        v.swap(i, j);
    }
    v
}

fn strings(rng: &mut Rng, n: usize, lo: usize, hi: usize) -> StringArray {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_";
    let mut s = String::with_capacity(hi);
    (0..n)
        .map(|_| {
            s.clear();
            let len = lo + rng.below((hi - lo + 1) as u64) as usize;
            for _ in 0..len {
                s.push(ALPHABET[rng.below(ALPHABET.len() as u64) as usize] as char);
            }
            Some(s.clone())
        })
        .collect()
}

fn table_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("v_i64", DataType::Int64, true),
        Field::new("v_f64", DataType::Float64, true),
        Field::new("v_s16", DataType::Utf8, true),
        Field::new("v_s64", DataType::Utf8, true),
        Field::new("v_i32", DataType::Int32, true),
        Field::new("v_bool", DataType::Boolean, true),
    ]))
}

/// Rows of the bench_foundation shape, split into `BATCH_ROWS`-row batches.
fn table_rows(n: usize, seed: u64) -> Vec<RecordBatch> {
    let mut rng = Rng(seed);
    let ids = shuffled_keys(&mut rng, n);
    let mut out = vec![];
    for chunk in ids.chunks(BATCH_ROWS) {
        let m = chunk.len();
        let cols: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(chunk.to_vec())),
            Arc::new(Int64Array::from_iter_values(
                (0..m).map(|_| rng.next() as i64 >> 1),
            )),
            Arc::new(Float64Array::from_iter_values(
                (0..m).map(|_| rng.next() as f64 / u64::MAX as f64),
            )),
            Arc::new(strings(&mut rng, m, 12, 20)),
            Arc::new(strings(&mut rng, m, 56, 72)),
            Arc::new(Int32Array::from_iter_values(
                (0..m).map(|_| rng.next() as i32),
            )),
            Arc::new(BooleanArray::from_iter(
                (0..m).map(|_| Some(rng.next() & 1 == 1)),
            )),
        ];
        out.push(RecordBatch::try_new(table_schema(), cols).unwrap());
    }
    out
}

/// Input batches as a write buffer holds them (the key `k` and a ~64-char string `v`, in
/// 64k-row batches), and the key-value schema of the runs it produces (`_KEY_k`,
/// `_SEQUENCE_NUMBER`, `_VALUE_KIND`, `k`, `v`).
fn kv_batches(key: &ArrayRef) -> (SchemaRef, Vec<RecordBatch>) {
    let mut rng = Rng(7);
    let input_schema = Arc::new(Schema::new(vec![
        Field::new("k", key.data_type().clone(), false),
        Field::new("v", DataType::Utf8, true),
    ]));
    let kv_schema = Arc::new(Schema::new(vec![
        Field::new("_KEY_k", key.data_type().clone(), false),
        Field::new("_SEQUENCE_NUMBER", DataType::Int64, false),
        Field::new("_VALUE_KIND", DataType::Int8, false),
        Field::new("k", key.data_type().clone(), false),
        Field::new("v", DataType::Utf8, true),
    ]));
    let n = key.len();
    let mut out = vec![];
    let mut start = 0;
    while start < n {
        let m = BATCH_ROWS.min(n - start);
        let cols: Vec<ArrayRef> = vec![key.slice(start, m), Arc::new(strings(&mut rng, m, 56, 72))];
        out.push(RecordBatch::try_new(input_schema.clone(), cols).unwrap());
        start += m;
    }
    (kv_schema, out)
}

fn sort_keys() -> Vec<(&'static str, ArrayRef)> {
    let mut rng = Rng(42);
    let ints: ArrayRef = Arc::new(Int64Array::from(shuffled_keys(&mut rng, SORT_ROWS)));
    let strs: ArrayRef = Arc::new(strings(&mut rng, SORT_ROWS, 12, 20));
    vec![("int64_key", ints), ("string_key", strs)]
}

fn bench_sort(c: &mut Criterion) {
    let keys = sort_keys();
    let mut g = c.benchmark_group("sort_by_key");
    g.sample_size(10);
    g.throughput(Throughput::Elements(SORT_ROWS as u64));
    for (name, key) in &keys {
        g.bench_function(*name, |b| {
            b.iter(|| sort_by_key(std::slice::from_ref(key), None, SORT_ROWS).unwrap())
        });
    }
    g.finish();

    let spill_dir = tempfile::tempdir().unwrap();
    let spiller = Spiller::new(SpillOptions {
        base_dir: spill_dir.path().to_path_buf(),
        compression: None,
        zstd_level: 1,
        max_disk_size: None,
        max_fan_in: 128,
    });
    let mut g = c.benchmark_group("sort_buffer");
    g.sample_size(10);
    g.throughput(Throughput::Elements(SORT_ROWS as u64));
    for (name, key) in &keys {
        let (schema, batches) = kv_batches(key);
        g.bench_function(*name, |b| {
            b.iter_batched(
                || batches.clone(),
                |batches| {
                    let counter = MemoryCounter::default();
                    let mut buf = SortBuffer::new(
                        schema.clone(),
                        KvLayout { num_keys: 1 },
                        vec![0],
                        counter.clone(),
                    );
                    let mut seq = 0;
                    for batch in batches {
                        let n = batch.num_rows();
                        buf.put(
                            &Arc::new(SharedInput::new(batch, None, &counter)),
                            None,
                            seq,
                        );
                        seq += n as i64;
                    }
                    let (runs, _) = buf.take_runs(&spiller, usize::MAX).unwrap();
                    // drain the in-memory run so the gather is part of the measurement
                    let rows: usize = runs
                        .into_iter()
                        .flatten()
                        .map(|b| b.unwrap().num_rows())
                        .sum();
                    black_box(rows)
                },
                BatchSize::LargeInput,
            )
        });
    }
    g.finish();
}

fn create_table(dir: &std::path::Path) -> FileStoreTable {
    let cat = FileSystemCatalog::new(dir).unwrap();
    cat.create_database("db", true).unwrap();
    let opts: BTreeMap<String, String> = [("bucket".to_string(), "4".to_string())].into();
    let s =
        NewTableSchema::from_arrow(&table_schema(), vec![], vec!["id".into()], opts, None).unwrap();
    cat.create_table("db.t", s, false).unwrap();
    cat.get_table("db.t").unwrap()
}

fn bench_table_write(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let spill_dir = tempfile::tempdir().unwrap();
    let base = create_table(dir.path());
    let rows = table_rows(WRITE_ROWS, 1);
    let spill = spill_dir.path().to_string_lossy().to_string();
    // 400k rows are ~60 MB of Arrow memory: 4 MB spills ~15 runs, 1 GB never spills.
    let configs: [(&str, &[(&str, &str)]); 3] = [
        ("no_spill_1gb", &[("write-buffer-size", "1 gb")]),
        ("spill_4mb", &[("write-buffer-size", "4 mb")]),
        (
            "flush_4mb_unspillable",
            &[
                ("write-buffer-size", "4 mb"),
                ("write-buffer-spillable", "false"),
            ],
        ),
    ];
    let mut g = c.benchmark_group("table_write");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(20));
    g.throughput(Throughput::Elements(WRITE_ROWS as u64));
    for (name, opts) in configs {
        let mut dynamic: BTreeMap<String, String> = opts
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        dynamic.insert("write-buffer-spill.dir".into(), spill.clone());
        let table = base.copy(&dynamic).unwrap();
        // what the configuration does: spill files before the flush, files written
        let mut w = TableWrite::new(table.clone()).unwrap();
        for batch in &rows {
            w.write(batch).unwrap();
        }
        let spills = w.spill_count();
        let files: usize = w
            .prepare_commit()
            .unwrap()
            .iter()
            .map(|m| m.data_increment.new_files.len())
            .sum();
        w.abort();
        eprintln!("table_write/{name}: {spills} spill files, {files} data files");
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let t0 = Instant::now();
                    let mut w = TableWrite::new(table.clone()).unwrap();
                    for batch in &rows {
                        w.write(batch).unwrap();
                    }
                    let msgs = w.prepare_commit().unwrap();
                    total += t0.elapsed();
                    black_box(msgs);
                    // delete the uncommitted files, so every iteration starts alike
                    w.abort();
                }
                total
            })
        });
    }
    g.finish();
}

/// Data file properties without the table's per-column dictionary tuning: dictionaries on or
/// off for every column, parquet's default 1 MiB dictionary fallback.
fn props(dictionary: bool) -> WriterProperties {
    WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(1).unwrap()))
        .set_max_row_group_row_count(Some(1 << 20))
        .set_statistics_enabled(EnabledStatistics::Chunk)
        .set_dictionary_enabled(dictionary)
        .build()
}

fn bench_rolling_writer(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let table = create_table(dir.path());
    let file_schema = kv_arrow_schema(&table, true).unwrap();
    // sorted key-value batches: ids ascending, sequence = position, all +I
    let rows = table_rows(WRITE_ROWS, 3);
    let mut seq = 0i64;
    let kv: Vec<RecordBatch> = rows
        .iter()
        .enumerate()
        .map(|(b, batch)| {
            let m = batch.num_rows();
            let start = (b * BATCH_ROWS) as i64;
            let id: ArrayRef = Arc::new(Int64Array::from_iter_values(start..start + m as i64));
            let mut cols: Vec<ArrayRef> = vec![
                id.clone(),
                Arc::new(Int64Array::from_iter_values(seq..seq + m as i64)),
                Arc::new(Int8Array::from(vec![0i8; m])),
                id,
            ];
            seq += m as i64;
            cols.extend(batch.columns()[1..].iter().cloned());
            RecordBatch::try_new(file_schema.clone(), cols).unwrap()
        })
        .collect();
    let fields = &table.schema.fields;
    let ctx = |props: WriterProperties| FileWriterContext {
        dir: dir.path().to_path_buf(),
        prefix: "data-".into(),
        file_schema: file_schema.clone(),
        format: paimon_rs_core::WriteFormat::Parquet,
        props,
        target_size: 128 << 20,
        target_rows: i64::MAX as u64,
        schema_id: 0,
        level: 0,
        file_source: 0,
        key_types: vec![table.schema.field("id").unwrap().data_type.clone()],
        seq_col: Some(1),
        kind_col: Some(2),
        value_stats_cols: (3..3 + fields.len()).collect(),
        value_stats_types: fields.iter().map(|f| f.data_type.clone()).collect(),
        value_stats_names: None,
        stats_mode: StatsMode::Truncate(16),
        file_index: None,
        changelog: false,
        kinds: None,
        blob: None,
        external: None,
    };
    let unique = ["_KEY_id".to_string(), "_SEQUENCE_NUMBER".to_string()];
    let configs = [
        (
            "table_props",
            parquet_writer_properties("zstd", 1, &unique).unwrap(),
        ),
        ("dict_everywhere_1mb", props(true)),
        ("no_dict", props(false)),
        (
            "table_props_uncompressed",
            parquet_writer_properties("none", 1, &unique).unwrap(),
        ),
    ];
    let mut g = c.benchmark_group("rolling_writer");
    g.sample_size(10);
    g.throughput(Throughput::Elements(WRITE_ROWS as u64));
    for (name, p) in configs {
        let ctx = ctx(p);
        g.bench_function(name, |b| {
            b.iter(|| {
                let mut w = RollingFileWriter::new(ctx.clone(), 0);
                for batch in &kv {
                    w.write(batch).unwrap();
                }
                let files = w.close().unwrap();
                for f in &files {
                    std::fs::remove_file(dir.path().join(&f.file_name)).unwrap();
                }
                files.len()
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench_sort, bench_table_write, bench_rolling_writer);
criterion_main!(benches);
