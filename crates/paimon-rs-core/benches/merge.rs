//! Merge throughput: `merge_sorted_runs` (loser tree + deduplicate) over K sorted runs, against a
//! naive baseline (concatenate, lexsort by (key, seq), take) and a memcpy of the output bytes.
//! Run: `cargo bench -p paimon-rs-core --bench merge`. Rows/s = criterion's "thrpt".
//!
//! On a shared, loaded machine wall-clock rows/s swing by 2x; `MERGE_BENCH_CPU=1 cargo bench -p
//! paimon-rs-core --bench merge` instead prints rows per second of process CPU time (user + sys
//! from /proc/self/stat, best of 3 rounds of 20 merges each), steadier under load.

use std::sync::Arc;

use arrow_array::{ArrayRef, Int64Array, Int8Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use criterion::{criterion_group, BenchmarkId, Criterion, Throughput};
use paimon_rs_core::{merge_sorted_runs, BatchIter, KvLayout, MergeEngine};

const ROWS: usize = 1 << 20;
const BATCH: usize = 8192;

/// K runs of ROWS/K rows each; keys drawn so that about half of them repeat across runs.
fn runs(k: usize, string_key: bool) -> Vec<Vec<RecordBatch>> {
    let per = ROWS / k;
    let key_t = if string_key {
        DataType::Utf8
    } else {
        DataType::Int64
    };
    let schema = Arc::new(Schema::new(vec![
        Field::new("_KEY_id", key_t.clone(), false),
        Field::new("_SEQUENCE_NUMBER", DataType::Int64, false),
        Field::new("_VALUE_KIND", DataType::Int8, false),
        Field::new("id", key_t, false),
        Field::new("v", DataType::Int64, true),
        Field::new("s", DataType::Utf8, true),
    ]));
    let mut seq = 0i64;
    let mut state = 0x9e3779b97f4a7c15u64;
    (0..k)
        .map(|_| {
            let mut keys: Vec<i64> = (0..per)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    (state % (ROWS as u64 * 2)) as i64
                })
                .collect();
            keys.sort_unstable();
            keys.dedup();
            keys.chunks(BATCH)
                .map(|c| {
                    let n = c.len();
                    let key: ArrayRef = if string_key {
                        Arc::new(StringArray::from_iter_values(
                            c.iter().map(|k| format!("key-{k:010}")),
                        ))
                    } else {
                        Arc::new(Int64Array::from(c.to_vec()))
                    };
                    let seqs: Vec<i64> = (0..n as i64).map(|i| seq + i).collect();
                    seq += n as i64;
                    RecordBatch::try_new(
                        schema.clone(),
                        vec![
                            key.clone(),
                            Arc::new(Int64Array::from(seqs)),
                            Arc::new(Int8Array::from(vec![0i8; n])),
                            key,
                            Arc::new(Int64Array::from_iter_values(c.iter().map(|x| x * 3))),
                            Arc::new(StringArray::from_iter_values(
                                c.iter().map(|x| format!("value-{x}")),
                            )),
                        ],
                    )
                    .expect("batch")
                })
                .collect()
        })
        .collect()
}

fn merge(runs: &[Vec<RecordBatch>]) -> usize {
    let its: Vec<BatchIter> = runs
        .iter()
        .map(|r| Box::new(r.clone().into_iter().map(Ok)) as BatchIter)
        .collect();
    let layout = KvLayout { num_keys: 1 };
    merge_sorted_runs(its, layout, MergeEngine::Deduplicate, true)
        .expect("merge")
        .map(|b| b.expect("batch").num_rows())
        .sum()
}

fn naive(runs: &[Vec<RecordBatch>]) -> usize {
    let all: Vec<RecordBatch> = runs.iter().flatten().cloned().collect();
    let b = arrow_select::concat::concat_batches(&all[0].schema(), &all).expect("concat");
    let cols = vec![
        arrow_ord::sort::SortColumn {
            values: b.column(0).clone(),
            options: None,
        },
        arrow_ord::sort::SortColumn {
            values: b.column(1).clone(),
            options: None,
        },
    ];
    let idx = arrow_ord::sort::lexsort_to_indices(&cols, None).expect("sort");
    arrow_select::take::take_record_batch(&b, &idx)
        .expect("take")
        .num_rows()
}

fn bytes_of(runs: &[Vec<RecordBatch>]) -> Vec<u8> {
    let n: usize = runs
        .iter()
        .flatten()
        .map(|b| b.get_array_memory_size())
        .sum();
    vec![1u8; n]
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("merge");
    g.sample_size(10);
    g.measurement_time(std::time::Duration::from_secs(3));
    g.warm_up_time(std::time::Duration::from_millis(500));
    for string_key in [false, true] {
        let kt = if string_key { "string" } else { "int64" };
        for k in [2usize, 4, 8, 16] {
            let r = runs(k, string_key);
            let rows: usize = r.iter().flatten().map(|b| b.num_rows()).sum();
            g.throughput(Throughput::Elements(rows as u64));
            g.bench_with_input(
                BenchmarkId::new(format!("loser_tree_dedup/{kt}"), k),
                &r,
                |b, r| b.iter(|| merge(r)),
            );
            if k == 8 {
                g.bench_with_input(
                    BenchmarkId::new(format!("naive_sort/{kt}"), k),
                    &r,
                    |b, r| b.iter(|| naive(r)),
                );
                let src = bytes_of(&r);
                g.bench_with_input(BenchmarkId::new(format!("memcpy/{kt}"), k), &src, |b, s| {
                    b.iter(|| std::hint::black_box(s.clone()))
                });
            }
        }
    }
    g.finish();
}

/// Process CPU time (user + sys) in seconds, from /proc/self/stat (clock ticks of 10 ms).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("/proc/self/stat");
    // fields after the parenthesised command name: state is field 3, utime 14, stime 15
    let rest = &stat[stat.rfind(')').expect("stat") + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = f[11].parse::<f64>().expect("utime") + f[12].parse::<f64>().expect("stime");
    ticks / 100.0
}

/// Rows per CPU second of `f` over `rows` rows: best of 3 rounds of 20 calls.
fn cpu_rate(rows: usize, mut f: impl FnMut() -> usize) -> f64 {
    f();
    (0..3)
        .map(|_| {
            let t = cpu_seconds();
            for _ in 0..20 {
                std::hint::black_box(f());
            }
            20.0 * rows as f64 / (cpu_seconds() - t).max(0.01)
        })
        .fold(0.0, f64::max)
}

fn cpu_mode() {
    for string_key in [false, true] {
        let kt = if string_key { "string" } else { "int64" };
        for k in [2usize, 4, 8, 16] {
            let r = runs(k, string_key);
            let rows: usize = r.iter().flatten().map(|b| b.num_rows()).sum();
            let m = cpu_rate(rows, || merge(&r));
            let mut line = format!(
                "cpu-time {kt} K={k}: loser_tree_dedup {:.1} M rows/s",
                m / 1e6
            );
            if k == 8 {
                let n = cpu_rate(rows, || naive(&r));
                let src = bytes_of(&r);
                let c = cpu_rate(rows, || std::hint::black_box(src.clone()).len());
                line += &format!(
                    "; naive_sort {:.1} M ({:.2}x); memcpy {:.1} M ({:.2}x)",
                    n / 1e6,
                    m / n,
                    c / 1e6,
                    m / c
                );
            }
            println!("{line}");
        }
    }
}

criterion_group!(benches, bench);

fn main() {
    if std::env::var_os("MERGE_BENCH_CPU").is_some() {
        cpu_mode();
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
