//! Merging records of equal keys. The seam used by write-buffer flushes, reads and compaction:
//! [`merge_sorted_runs`] streams K sorted runs through a loser-tree sort-merge reader and the
//! table's merge engine (deduplicate, partial-update, aggregation, first-row; see
//! paimon-behaviour.md §7-§8).

pub mod agg;
pub mod engine;
pub mod loser_tree;
pub mod reader;
mod runs;
pub(crate) mod source;

pub use engine::MergeEngine;
#[cfg(test)]
pub use engine::{EngineConfig, EngineKind};
pub use runs::merge_order;
pub(crate) use source::interleave_batches;

use std::borrow::Cow;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_row::{RowConverter, SortField};
use arrow_schema::DataType as ArrowType;

use crate::error::Result;

/// Column layout of key-value batches (primary-key data files, write buffers, spill files):
/// `num_keys` key columns (`_KEY_*`, trimmed primary key), `_SEQUENCE_NUMBER`, `_VALUE_KIND`,
/// then the value columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KvLayout {
    pub num_keys: usize,
}

impl KvLayout {
    pub fn seq_col(&self) -> usize {
        self.num_keys
    }
    pub fn kind_col(&self) -> usize {
        self.num_keys + 1
    }
    pub fn value_offset(&self) -> usize {
        self.num_keys + 2
    }
}

/// A stream of record batches.
pub type BatchIter = Box<dyn Iterator<Item = Result<RecordBatch>> + Send>;

/// Merge sorted runs into one stream sorted by key with at most one record per key.
///
/// Each run is sorted by (key, sequence number) and may hold a key several times (a write buffer
/// run) or once (a data file). Records of one key are combined by `engine` in sequence order;
/// with `drop_delete` a retraction (-U/-D) that survives the merge is dropped (reads), otherwise
/// it is kept to shadow older data (flushes, partial compactions).
///
/// Streaming: memory is one batch per run plus the output batch. Records of one key reach the
/// engine ordered by `sequence.field` (if configured), sequence number, retraction first; a lone
/// record passes through untouched. Value columns may be a projection as long as they include
/// [`MergeEngine::required_fields`].
pub fn merge_sorted_runs(
    runs: Vec<BatchIter>,
    layout: KvLayout,
    engine: MergeEngine,
    drop_delete: bool,
) -> Result<BatchIter> {
    match reader::SortMergeReader::new(runs, layout, &engine, drop_delete)? {
        Some(r) => Ok(Box::new(r)),
        None => Ok(Box::new(std::iter::empty())),
    }
}

/// [`merge_sorted_runs`] with lookup compaction's hooks: run levels (of a key's records above
/// level 0 only the lowest level's is merged with its level-0 records), a wrapping merge
/// function and a changelog sink.
pub(crate) fn merge_sorted_runs_with(
    runs: Vec<BatchIter>,
    layout: KvLayout,
    engine: MergeEngine,
    drop_delete: bool,
    hooks: reader::MergeHooks,
) -> Result<BatchIter> {
    match reader::SortMergeReader::with_hooks(runs, layout, &engine, drop_delete, hooks)? {
        Some(r) => Ok(Box::new(r)),
        None => Ok(Box::new(std::iter::empty())),
    }
}

/// The key's values as i64 when it is one non-null 64/32-bit integer column: the fast path of
/// [`sort_by_key`] (numeric order, which the row format's agrees with). The merge of sorted runs
/// and the Spark pack stage's sort take it too, so all three order such keys alike.
pub fn int_key(key_cols: &[ArrayRef]) -> Option<Cow<'_, [i64]>> {
    match key_cols {
        [c] if c.null_count() == 0 => match c.data_type() {
            ArrowType::Int64 => Some(Cow::Borrowed(
                c.as_primitive::<Int64Type>().values().as_ref(),
            )),
            ArrowType::Int32 => Some(Cow::Owned(
                c.as_primitive::<Int32Type>()
                    .values()
                    .iter()
                    .map(|&v| i64::from(v))
                    .collect(),
            )),
            _ => None,
        },
        _ => None,
    }
}

/// The most rows the radix sort takes: its scratch copy (16 bytes a row) stays within 64 MB.
const RADIX_MAX_ROWS: usize = 1 << 22;

/// `keyed` = (key, position) pairs in position order, sorted as `sort_unstable` sorts them
/// (key, then position). Between 1024 and [`RADIX_MAX_ROWS`] rows: a least-significant-digit
/// radix sort on the key's bytes (stable, so equal keys keep position order), skipping the bytes
/// every key shares (ids below 2^24 take 3 passes). The sort was ~5% of a 2M-row bulk write's
/// CPU; this took the write's CPU -4% (session 26, benches/RESULTS.md).
fn sort_keyed(keyed: &mut Vec<(i64, u32)>) {
    let n = keyed.len();
    if !(1024..=RADIX_MAX_ROWS).contains(&n) || !keyed.windows(2).all(|w| w[0].1 < w[1].1) {
        keyed.sort_unstable();
        return;
    }
    // the key with its sign bit flipped orders as an unsigned integer
    let digit = |k: i64, d: usize| ((((k as u64) ^ (1 << 63)) >> (8 * d)) & 0xff) as usize;
    let mut counts = vec![[0usize; 256]; 8];
    for &(k, _) in keyed.iter() {
        for (d, c) in counts.iter_mut().enumerate() {
            c[digit(k, d)] += 1;
        }
    }
    let mut scratch: Vec<(i64, u32)> = vec![(0, 0); n];
    let mut in_keyed = true;
    for (d, c) in counts.iter().enumerate() {
        if c.contains(&n) {
            continue; // every key has the same byte here
        }
        let mut next = [0usize; 256];
        let mut at = 0;
        for (slot, &count) in next.iter_mut().zip(c) {
            *slot = at;
            at += count;
        }
        let (src, dst) = if in_keyed {
            (&keyed[..], &mut scratch[..])
        } else {
            (&scratch[..], &mut keyed[..])
        };
        for &(k, i) in src {
            let b = digit(k, d);
            dst[next[b]] = (k, i);
            next[b] += 1;
        }
        in_keyed = !in_keyed;
    }
    if !in_keyed {
        *keyed = scratch;
    }
}

/// Indices that order `n` records by key, then by sequence number (`seq`, or the position when
/// positions are in sequence order). Returns (sorted indices, group boundaries): group g is
/// `sorted[bounds[g]..bounds[g+1]]`.
pub fn sort_by_key(
    key_cols: &[ArrayRef],
    seq: Option<&[i64]>,
    n: usize,
) -> Result<(Vec<u32>, Vec<usize>)> {
    // Fast path: a single non-null 64/32-bit integer key, ordered by position.
    if let (Some(values), None) = (int_key(key_cols), seq) {
        if values.len() == n {
            let mut keyed: Vec<(i64, u32)> = values
                .iter()
                .enumerate()
                .map(|(i, &v)| (v, i as u32))
                .collect();
            sort_keyed(&mut keyed);
            let mut bounds = Vec::with_capacity(n + 1);
            for i in 0..keyed.len() {
                if i == 0 || keyed[i].0 != keyed[i - 1].0 {
                    bounds.push(i);
                }
            }
            bounds.push(n);
            return Ok((keyed.into_iter().map(|(_, i)| i).collect(), bounds));
        }
    }
    let fields: Vec<SortField> = key_cols
        .iter()
        .map(|c| SortField::new(c.data_type().clone()))
        .collect();
    let conv = RowConverter::new(fields)?;
    let rows = conv.convert_columns(key_cols)?;
    let mut idx: Vec<u32> = (0..n as u32).collect();
    match seq {
        Some(seq) => idx.sort_unstable_by(|&a, &b| {
            rows.row(a as usize)
                .cmp(&rows.row(b as usize))
                .then(seq[a as usize].cmp(&seq[b as usize]))
                .then(a.cmp(&b))
        }),
        None => idx.sort_unstable_by(|&a, &b| {
            rows.row(a as usize)
                .cmp(&rows.row(b as usize))
                .then(a.cmp(&b))
        }),
    }
    let mut bounds = Vec::with_capacity(n + 1);
    for i in 0..idx.len() {
        if i == 0 || rows.row(idx[i] as usize) != rows.row(idx[i - 1] as usize) {
            bounds.push(i);
        }
    }
    bounds.push(n);
    Ok((idx, bounds))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::Strategy;

    proptest::proptest! {
        #[test]
        fn radix_sort_orders_as_sort_unstable(
            keys in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::num::i64::ANY,
                    -300i64..300,
                    (0i64..5).prop_map(|k| k << 40),
                ],
                1000..3000,
            ),
        ) {
            let mut keyed: Vec<(i64, u32)> =
                keys.iter().enumerate().map(|(i, &k)| (k, i as u32)).collect();
            let mut want = keyed.clone();
            want.sort_unstable();
            sort_keyed(&mut keyed);
            proptest::prop_assert_eq!(keyed, want);
        }
    }
    use arrow_array::{Int64Array, StringArray};
    use std::sync::Arc;

    #[test]
    fn dedup_keeps_last_per_key() {
        let k: ArrayRef = Arc::new(Int64Array::from(vec![3, 1, 3, 2, 1]));
        let (s, b) = sort_by_key(&[k], None, 5).unwrap();
        assert_eq!(MergeEngine::Deduplicate.merge(&s, &b), vec![4, 3, 2]);
        let k: ArrayRef = Arc::new(StringArray::from(vec!["b", "a", "b"]));
        let (s, b) = sort_by_key(&[k], None, 3).unwrap();
        assert_eq!(MergeEngine::Deduplicate.merge(&s, &b), vec![1, 2]);
    }

    use arrow_array::{Int8Array, StringArray as Str};
    use arrow_schema::{Field, Schema};

    /// A kv batch `_KEY_k, _SEQUENCE_NUMBER, _VALUE_KIND, k, v` with an int64 or string key.
    fn kv(
        keys: &[i64],
        seqs: &[i64],
        kinds: &[i8],
        vals: &[Option<i64>],
        string_key: bool,
    ) -> RecordBatch {
        let (kt, karr): (ArrowType, ArrayRef) = if string_key {
            let s: Vec<String> = keys.iter().map(|k| format!("{k:05}")).collect();
            (ArrowType::Utf8, Arc::new(Str::from(s)))
        } else {
            (ArrowType::Int64, Arc::new(Int64Array::from(keys.to_vec())))
        };
        let schema = Arc::new(Schema::new(vec![
            Field::new("_KEY_k", kt.clone(), false),
            Field::new("_SEQUENCE_NUMBER", ArrowType::Int64, false),
            Field::new("_VALUE_KIND", ArrowType::Int8, false),
            Field::new("k", kt, false),
            Field::new("v", ArrowType::Int64, true),
        ]));
        RecordBatch::try_new(
            schema,
            vec![
                karr.clone(),
                Arc::new(Int64Array::from(seqs.to_vec())),
                Arc::new(Int8Array::from(kinds.to_vec())),
                karr,
                Arc::new(Int64Array::from(vals.to_vec())),
            ],
        )
        .unwrap()
    }

    const L: KvLayout = KvLayout { num_keys: 1 };

    /// (key, sequence number, row kind, value)
    type Row = (i64, i64, i8, Option<i64>);

    /// (key, seq, kind, v) rows of the merged output.
    fn rows(it: BatchIter) -> Vec<Row> {
        let mut out = vec![];
        for b in it {
            let b = b.unwrap();
            let seq = b.column(1).as_primitive::<Int64Type>();
            let kind = b.column(2).as_primitive::<arrow_array::types::Int8Type>();
            let v = b.column(4).as_primitive::<Int64Type>();
            for i in 0..b.num_rows() {
                let k = match b.column(0).data_type() {
                    ArrowType::Utf8 => b.column(0).as_string::<i32>().value(i).parse().unwrap(),
                    _ => b.column(0).as_primitive::<Int64Type>().value(i),
                };
                out.push((
                    k,
                    seq.value(i),
                    kind.value(i),
                    v.is_valid(i).then(|| v.value(i)),
                ));
            }
        }
        out
    }

    /// Split a sorted run into batches of at most `n` rows.
    fn run_of(rows: &[Row], n: usize, string_key: bool) -> BatchIter {
        let batches: Vec<Result<RecordBatch>> = rows
            .chunks(n.max(1))
            .map(|c| {
                let k: Vec<i64> = c.iter().map(|r| r.0).collect();
                let s: Vec<i64> = c.iter().map(|r| r.1).collect();
                let t: Vec<i8> = c.iter().map(|r| r.2).collect();
                let v: Vec<Option<i64>> = c.iter().map(|r| r.3).collect();
                Ok(kv(&k, &s, &t, &v, string_key))
            })
            .collect();
        Box::new(batches.into_iter())
    }

    fn engine(kind: EngineKind, cfg: EngineConfig) -> MergeEngine {
        MergeEngine {
            kind,
            config: Some(Arc::new(cfg)),
        }
    }

    fn int_fields() -> Vec<(String, crate::spec::types::DataType)> {
        use crate::spec::types::{DataType, TypeKind};
        vec![
            ("k".into(), DataType::new(TypeKind::BigInt)),
            ("v".into(), DataType::new(TypeKind::BigInt)),
        ]
    }

    #[test]
    fn aggregation_sum_with_retract_and_remove_on_delete() {
        let mut aggs = std::collections::BTreeMap::new();
        aggs.insert(
            "v".to_string(),
            agg::FieldAgg {
                field: "v".into(),
                func: agg::AggFunc::Sum,
                ignore_retract: false,
                delimiter: ",".into(),
                distinct: false,
            },
        );
        let cfg = EngineConfig {
            fields: int_fields(),
            primary_keys: vec!["k".into()],
            aggs,
            ..Default::default()
        };
        // +I 3, -D 3 -> +I 0 (the row stays)
        let r = run_of(&[(1, 0, 0, Some(3)), (1, 1, 3, Some(3))], 8, false);
        let out = rows(
            merge_sorted_runs(
                vec![r],
                L,
                engine(EngineKind::Aggregation, cfg.clone()),
                true,
            )
            .unwrap(),
        );
        assert_eq!(out, vec![(1, 1, 0, Some(0))]);
        // remove-record-on-delete: +I 3, +I 4, -D 5, +I 2 -> +I 7
        let cfg2 = EngineConfig {
            remove_record_on_delete: true,
            ..cfg
        };
        let r = run_of(
            &[
                (1, 0, 0, Some(3)),
                (1, 1, 0, Some(4)),
                (1, 2, 3, Some(5)),
                (1, 3, 0, Some(2)),
            ],
            2,
            false,
        );
        let out = rows(
            merge_sorted_runs(vec![r], L, engine(EngineKind::Aggregation, cfg2), true).unwrap(),
        );
        assert_eq!(out, vec![(1, 3, 0, Some(7))]);
    }

    #[test]
    fn first_row_keeps_oldest_and_refuses_retractions() {
        let cfg = EngineConfig {
            fields: int_fields(),
            primary_keys: vec!["k".into()],
            ..Default::default()
        };
        let a = run_of(&[(1, 5, 0, Some(50)), (2, 6, 0, Some(60))], 8, false);
        let b = run_of(&[(1, 1, 0, Some(10))], 8, false);
        let out = rows(
            merge_sorted_runs(
                vec![a, b],
                L,
                engine(EngineKind::FirstRow, cfg.clone()),
                true,
            )
            .unwrap(),
        );
        assert_eq!(out, vec![(1, 1, 0, Some(10)), (2, 6, 0, Some(60))]);
        let a = run_of(&[(1, 5, 3, Some(50))], 8, false);
        let b = run_of(&[(1, 1, 0, Some(10))], 8, false);
        let r: Result<Vec<RecordBatch>> = merge_sorted_runs(
            vec![a, b],
            L,
            engine(EngineKind::FirstRow, cfg.clone()),
            true,
        )
        .unwrap()
        .collect();
        assert!(r.unwrap_err().to_string().contains("first-row"));
        let a = run_of(&[(1, 5, 3, Some(50))], 8, false);
        let b = run_of(&[(1, 1, 0, Some(10))], 8, false);
        let cfg = EngineConfig {
            ignore_delete: true,
            ..cfg
        };
        let out = rows(
            merge_sorted_runs(vec![a, b], L, engine(EngineKind::FirstRow, cfg), true).unwrap(),
        );
        assert_eq!(out, vec![(1, 1, 0, Some(10))]);
    }

    #[test]
    fn sequence_field_orders_before_sequence_number() {
        // v is the sequence field: the record with the larger v wins even though it is older
        let cfg = EngineConfig {
            fields: int_fields(),
            primary_keys: vec!["k".into()],
            seq_fields: vec!["v".into()],
            ..Default::default()
        };
        let a = run_of(&[(1, 0, 0, Some(9)), (2, 1, 0, None)], 8, false);
        let b = run_of(&[(1, 5, 0, Some(3)), (2, 6, 0, Some(1))], 8, false);
        let e = engine(EngineKind::Deduplicate, cfg.clone());
        let out = rows(merge_sorted_runs(vec![a, b], L, e, true).unwrap());
        assert_eq!(out, vec![(1, 0, 0, Some(9)), (2, 6, 0, Some(1))]);
        let cfg = EngineConfig {
            seq_descending: true,
            ..cfg
        };
        let a = run_of(&[(1, 0, 0, Some(9)), (2, 1, 0, None)], 8, false);
        let b = run_of(&[(1, 5, 0, Some(3)), (2, 6, 0, Some(1))], 8, false);
        let out = rows(
            merge_sorted_runs(vec![a, b], L, engine(EngineKind::Deduplicate, cfg), true).unwrap(),
        );
        // descending: the smaller value is newer; nulls are still oldest
        assert_eq!(out, vec![(1, 5, 0, Some(3)), (2, 6, 0, Some(1))]);
    }

    fn arb_runs() -> impl proptest::strategy::Strategy<Value = Vec<Vec<Row>>> {
        use proptest::prelude::*;
        // rows (key, kind, value); sequence numbers assigned globally unique afterwards
        proptest::collection::vec(
            proptest::collection::vec(
                (
                    0i64..12,
                    prop_oneof![Just(0i8), Just(2i8), Just(3i8)],
                    proptest::option::of(0i64..100),
                ),
                0..20,
            ),
            1..9,
        )
        .prop_map(|runs| {
            let mut seq = 0;
            runs.into_iter()
                .map(|r| {
                    let mut r: Vec<Row> = r
                        .into_iter()
                        .map(|(k, t, v)| {
                            seq += 1;
                            (k, seq, t, v)
                        })
                        .collect();
                    r.sort();
                    r
                })
                .collect()
        })
    }

    proptest::proptest! {
        /// KeepAll is a plain sort by (key, seq); Deduplicate keeps the newest per key; both
        /// for int64 and string keys and any batch size.
        #[test]
        fn merge_equals_sort(runs in arb_runs(), bs in 1usize..6, sk in proptest::bool::ANY) {
            let mut all: Vec<_> = runs.concat();
            all.sort_by_key(|r| (r.0, r.1));
            let its = runs.iter().map(|r| run_of(r, bs, sk)).collect();
            let out = rows(merge_sorted_runs(its, L, MergeEngine::KeepAll, false).unwrap());
            proptest::prop_assert_eq!(&out, &all);
            let mut last: std::collections::BTreeMap<i64, Row> = Default::default();
            for r in &all { last.insert(r.0, *r); }
            let expect: Vec<_> = last.values().copied().filter(|r| r.2 != 3).collect();
            let its = runs.iter().map(|r| run_of(r, bs, sk)).collect();
            let out = rows(merge_sorted_runs(its, L, MergeEngine::Deduplicate, true).unwrap());
            proptest::prop_assert_eq!(out, expect);
        }
    }

    proptest::proptest! {
        #[test]
        fn fast_path_matches_row_path(keys in proptest::collection::vec(-5i64..5, 0..60)) {
            let n = keys.len();
            let a: ArrayRef = Arc::new(Int64Array::from(keys.clone()));
            let (s1, b1) = sort_by_key(std::slice::from_ref(&a), None, n).unwrap();
            // force the row path with a second (constant) key column
            let c: ArrayRef = Arc::new(Int64Array::from(vec![0i64; n]));
            let (s2, b2) = sort_by_key(&[a, c], None, n).unwrap();
            proptest::prop_assert_eq!(s1, s2);
            proptest::prop_assert_eq!(b1, b2);
        }
    }
}
