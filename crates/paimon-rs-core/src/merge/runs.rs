//! The key order of rows that arrive as runs each already sorted by key: a k-way merge of the
//! runs instead of a sort of all their rows. A sort of ~1M rows reads them in random order; the
//! merge reads each run front to back, and so does the gather of the merged rows (measured, 20
//! runs of 62.5k rows of the Spark bench's columns: concat + sort + take 220 ms, merge +
//! interleave 80 ms; a scratch benchmark, session 13). The write buffer merges when every batch
//! it holds is sorted: Spark's pack stage sorts what it ships (docs/spark-integration.md "Packed
//! shuffle"), and a user's writes of sorted data (a CDC snapshot by key) take it too.

use std::borrow::Cow;
use std::cmp::Ordering;

use arrow_array::{Array, ArrayRef};
use arrow_row::{RowConverter, Rows, SortField};

use super::int_key;
use super::loser_tree::{KeyedLoserTree, LoserTree};
use crate::error::Result;

/// Rows ordered by key: each row as (run, position in the run), and the boundaries of the groups
/// of equal keys (group g is `rows[bounds[g]..bounds[g + 1]]`, as [`super::sort_by_key`]).
pub type MergedOrder = (Vec<(u32, u32)>, Vec<usize>);

/// The rows of `runs` (each run's key columns, in arrival order) ordered by key as
/// [`super::sort_by_key`] orders their concatenation: ties keep arrival order (run, then
/// position). None if some run is not sorted by key (the caller sorts instead).
pub fn merge_order(runs: &[Vec<ArrayRef>]) -> Result<Option<MergedOrder>> {
    if runs.iter().any(|cols| cols.is_empty()) {
        return Ok(None); // no key columns: no order to merge by (and no row count to go by)
    }
    if let Some(ints) = int_keys(runs) {
        return Ok(merge_ints(&ints));
    }
    merge_rows(runs)
}

/// Each run's key as i64 when every run's is one non-null 32/64-bit integer column
/// ([`int_key`], the order [`super::sort_by_key`]'s fast path sorts by).
fn int_keys(runs: &[Vec<ArrayRef>]) -> Option<Vec<Cow<'_, [i64]>>> {
    runs.iter().map(|cols| int_key(cols)).collect()
}

fn merge_ints(runs: &[Cow<'_, [i64]>]) -> Option<MergedOrder> {
    if !runs.iter().all(|r| r.windows(2).all(|w| w[0] <= w[1])) {
        return None;
    }
    let n: usize = runs.iter().map(|r| r.len()).sum();
    // leaf (key, arrival position, run): the position breaks ties in arrival order; an exhausted
    // run sorts after every live one (a live position is below i64::MAX)
    let mut offsets = Vec::with_capacity(runs.len());
    let mut at = 0i64;
    for r in runs {
        offsets.push(at);
        at += r.len() as i64;
    }
    let leaf = |r: usize, p: usize| match runs[r].get(p) {
        Some(&k) => (k, offsets[r] + p as i64, r as u32),
        None => (i64::MAX, i64::MAX, u32::MAX),
    };
    let mut order = Vec::with_capacity(n);
    let mut bounds = Vec::with_capacity(n.min(1 << 20) + 1);
    let leaves: Vec<_> = (0..runs.len()).map(|r| leaf(r, 0)).collect();
    if let Some(mut tree) = KeyedLoserTree::new(&leaves) {
        let mut pos = vec![0usize; runs.len()];
        let mut prev = None;
        for i in 0..n {
            let (key, _, r) = tree.winner();
            let r = r as usize;
            if prev != Some(key) {
                bounds.push(i);
                prev = Some(key);
            }
            order.push((r as u32, pos[r] as u32));
            pos[r] += 1;
            tree.replay(r, leaf(r, pos[r]));
        }
    }
    bounds.push(n);
    Some((order, bounds))
}

fn merge_rows(runs: &[Vec<ArrayRef>]) -> Result<Option<MergedOrder>> {
    let Some(first) = runs.first() else {
        return Ok(Some((vec![], vec![0])));
    };
    let fields = first
        .iter()
        .map(|c| SortField::new(c.data_type().clone()))
        .collect();
    let conv = RowConverter::new(fields)?;
    let mut rows: Vec<Rows> = Vec::with_capacity(runs.len());
    for cols in runs {
        let r = conv.convert_columns(cols)?;
        // run by run: an unsorted input costs one run's conversion before the caller sorts
        if !(1..r.num_rows()).all(|i| r.row(i - 1) <= r.row(i)) {
            return Ok(None);
        }
        rows.push(r);
    }
    let n: usize = rows.iter().map(|r| r.num_rows()).sum();
    let mut pos = vec![0usize; rows.len()];
    // run a before run b: the smaller live row; equal rows in run order; exhausted runs last
    let less = |pos: &[usize], a: usize, b: usize| -> bool {
        match (pos[a] < rows[a].num_rows(), pos[b] < rows[b].num_rows()) {
            (true, true) => match rows[a].row(pos[a]).cmp(&rows[b].row(pos[b])) {
                Ordering::Less => true,
                Ordering::Greater => false,
                Ordering::Equal => a < b,
            },
            (true, false) => true,
            (false, _) => false,
        }
    };
    let mut tree = LoserTree::new(rows.len(), |a, b| less(&pos, a, b));
    let mut order: Vec<(u32, u32)> = Vec::with_capacity(n);
    let mut bounds = Vec::with_capacity(n.min(1 << 20) + 1);
    for i in 0..n {
        let r = tree.winner();
        let p = pos[r];
        let new_key = match order.last() {
            None => true,
            Some(&(pr, pp)) => rows[pr as usize].row(pp as usize) != rows[r].row(p),
        };
        if new_key {
            bounds.push(i);
        }
        order.push((r as u32, p as u32));
        pos[r] += 1;
        tree.replay(|a, b| less(&pos, a, b));
    }
    bounds.push(n);
    Ok(Some((order, bounds)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::merge::sort_by_key;
    use arrow_array::{Int32Array, Int64Array, StringArray};
    use std::sync::Arc;

    fn next(s: &mut u64) -> u64 {
        *s ^= *s << 13;
        *s ^= *s >> 7;
        *s ^= *s << 17;
        *s
    }

    /// The merge gives the order (and groups) a sort of the concatenated runs gives, for every
    /// key kind the buffer sorts by: int64, int32, strings, two columns; duplicate keys within
    /// and across runs, empty runs.
    #[test]
    fn merged_runs_order_as_the_sort_of_their_concatenation() {
        let mut s = 0x9E37_79B9_7F4A_7C15u64;
        for case in 0..200 {
            let k = 1 + (next(&mut s) % 7) as usize;
            let domain = 1 + next(&mut s) % 40;
            let mut runs: Vec<Vec<ArrayRef>> = vec![];
            let mut flat: Vec<(i64, i64)> = vec![];
            for _ in 0..k {
                let len = (next(&mut s) % 30) as usize;
                let mut ks: Vec<(i64, i64)> = (0..len)
                    .map(|_| {
                        (
                            (next(&mut s) % domain) as i64 - 5,
                            (next(&mut s) % 3) as i64,
                        )
                    })
                    .collect();
                ks.sort_unstable();
                flat.extend(&ks);
                let a: Vec<i64> = ks.iter().map(|p| p.0).collect();
                let b: Vec<i64> = ks.iter().map(|p| p.1).collect();
                runs.push(match case % 4 {
                    0 => vec![Arc::new(Int64Array::from(a)) as ArrayRef],
                    1 => vec![Arc::new(Int32Array::from_iter_values(
                        a.iter().map(|&v| v as i32),
                    ))],
                    // zero-padded: string order = numeric order
                    2 => vec![Arc::new(StringArray::from_iter_values(
                        a.iter().map(|v| format!("{:05}", v + 100)),
                    ))],
                    _ => vec![
                        Arc::new(Int64Array::from(a)) as ArrayRef,
                        Arc::new(StringArray::from_iter_values(
                            b.iter().map(|v| v.to_string()),
                        )),
                    ],
                });
            }
            let (order, bounds) = merge_order(&runs).unwrap().expect("sorted runs merge");
            let cols = runs[0].len();
            let concat: Vec<ArrayRef> = (0..cols)
                .map(|c| {
                    let parts: Vec<&dyn Array> = runs.iter().map(|r| r[c].as_ref()).collect();
                    arrow_select::concat::concat(&parts).unwrap()
                })
                .collect();
            let (sorted, want_bounds) = sort_by_key(&concat, None, flat.len()).unwrap();
            let mut offsets = vec![0u32];
            for r in &runs {
                offsets.push(offsets.last().unwrap() + r[0].len() as u32);
            }
            let got: Vec<u32> = order
                .iter()
                .map(|&(r, p)| offsets[r as usize] + p)
                .collect();
            assert_eq!(got, sorted, "case {case}");
            assert_eq!(bounds, want_bounds, "case {case}");
        }
    }

    #[test]
    fn an_unsorted_run_is_refused_and_no_runs_merge_to_nothing() {
        let sorted: ArrayRef = Arc::new(Int64Array::from(vec![1, 2, 2, 9]));
        let unsorted: ArrayRef = Arc::new(Int64Array::from(vec![1, 3, 2]));
        assert!(merge_order(&[vec![sorted.clone()], vec![unsorted]])
            .unwrap()
            .is_none());
        let s: ArrayRef = Arc::new(StringArray::from(vec!["a", "c", "b"]));
        assert!(merge_order(&[vec![s]]).unwrap().is_none());
        let with_null: ArrayRef = Arc::new(Int64Array::from(vec![None, Some(1)]));
        // a null key takes the rows path (nulls first): still sorted
        assert!(merge_order(&[vec![with_null]]).unwrap().is_some());
        assert_eq!(merge_order(&[]).unwrap(), Some((vec![], vec![0])));
        assert_eq!(merge_order(&[vec![]]).unwrap(), None, "no key columns");
        let (order, bounds) = merge_order(&[vec![sorted]]).unwrap().unwrap();
        assert_eq!(order, vec![(0, 0), (0, 1), (0, 2), (0, 3)]);
        assert_eq!(bounds, vec![0, 1, 3, 4]);
    }
}
