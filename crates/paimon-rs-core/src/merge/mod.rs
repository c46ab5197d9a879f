//! Merging records of equal keys. The seam used by write-buffer flushes, reads and (later)
//! compaction: records are ordered by (key, sequence number); a merge function turns each group
//! of equal keys into at most one output record. Only `deduplicate` exists so far; the loser-tree
//! reader and the other engines (partial-update, aggregation, first-row) plug in here.

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type};
use arrow_array::{Array, ArrayRef, BooleanArray, RecordBatch, UInt32Array};
use arrow_row::{RowConverter, SortField};
use arrow_schema::DataType as ArrowType;

use crate::error::{Error, Result};
use crate::write::input::is_retract;

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
/// The seam shared by reads, write-buffer flushes and compaction. The current body concatenates
/// and sorts; the loser-tree reader replaces it without changing the signature.
pub fn merge_sorted_runs(
    runs: Vec<BatchIter>,
    layout: KvLayout,
    engine: MergeEngine,
    drop_delete: bool,
) -> Result<BatchIter> {
    let mut batches = vec![];
    for run in runs {
        for b in run {
            batches.push(b?);
        }
    }
    let Some(first) = batches.first() else {
        return Ok(Box::new(std::iter::empty()));
    };
    let schema = first.schema();
    let all = arrow_select::concat::concat_batches(&schema, &batches)?;
    let n = all.num_rows();
    let keys: Vec<ArrayRef> = all.columns()[..layout.num_keys].to_vec();
    let seq = all
        .column(layout.seq_col())
        .as_primitive_opt::<Int64Type>()
        .ok_or_else(|| Error::Internal("_SEQUENCE_NUMBER is not BIGINT".into()))?;
    let (sorted, bounds) = sort_by_key(&keys, Some(seq.values()), n)?;
    let winners = UInt32Array::from(engine.merge(&sorted, &bounds));
    let mut out = arrow_select::take::take_record_batch(&all, &winners)?;
    if drop_delete {
        let kinds = out
            .column(layout.kind_col())
            .as_primitive_opt::<arrow_array::types::Int8Type>()
            .ok_or_else(|| Error::Internal("_VALUE_KIND is not TINYINT".into()))?;
        if kinds.values().iter().any(|&k| is_retract(k)) {
            let keep: BooleanArray = kinds
                .values()
                .iter()
                .map(|&k| Some(!is_retract(k)))
                .collect();
            out = arrow_select::filter::filter_record_batch(&out, &keep)?;
        }
    }
    Ok(Box::new(std::iter::once(Ok(out))))
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
    if key_cols.len() == 1 && key_cols[0].null_count() == 0 && seq.is_none() {
        let col = &key_cols[0];
        let keyed: Option<Vec<(i64, u32)>> = match col.data_type() {
            ArrowType::Int64 => Some(
                col.as_primitive::<Int64Type>()
                    .values()
                    .iter()
                    .enumerate()
                    .map(|(i, &v)| (v, i as u32))
                    .collect(),
            ),
            ArrowType::Int32 => Some(
                col.as_primitive::<Int32Type>()
                    .values()
                    .iter()
                    .enumerate()
                    .map(|(i, &v)| (v as i64, i as u32))
                    .collect(),
            ),
            _ => None,
        };
        if let Some(mut keyed) = keyed {
            if keyed.len() == n {
                keyed.sort_unstable();
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

/// The table's merge engine, applied to groups of equal keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MergeEngine {
    /// The record with the highest sequence number wins (a -D/-U winner shadows older data).
    Deduplicate,
    /// No merging: every record is kept, in (key, sequence) order. Used to pre-merge spilled
    /// runs of the external sort (the real merge function runs once, at flush).
    KeepAll,
}

impl MergeEngine {
    /// Pick the output record of each group. Returns indices into the input, in key order.
    pub fn merge(&self, sorted: &[u32], bounds: &[usize]) -> Vec<u32> {
        match self {
            MergeEngine::Deduplicate => bounds[1..].iter().map(|&end| sorted[end - 1]).collect(),
            MergeEngine::KeepAll => sorted.to_vec(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
