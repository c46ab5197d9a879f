//! Aggregates over nested values (paimon-behaviour.md §8.4): `collect` (ARRAY), `merge_map` and
//! `merge_map_with_keytime` (MAP), `nested_update` and `nested_partial_update` (ARRAY<ROW>).
//!
//! A nested accumulator is the Arrow array of its *elements* (list values, or map entries as a
//! struct of key and value). Elements are compared through their row encoding (arrow-row), which
//! gives value equality for every type, nested ones included, as Java's generated equalisers do.
//! Java builds its results in hash maps (no defined order); these functions keep the order of
//! first appearance, accumulator before input.

use std::collections::{HashMap, HashSet};

use arrow_array::{Array, ArrayRef, StructArray, UInt32Array};
use arrow_row::{RowConverter, Rows, SortField};

use crate::error::{Error, Result};

/// `fields.<f>.nested-key-null-strategy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NullKeyStrategy {
    Merge,
    Ignore,
    Error,
}

impl NullKeyStrategy {
    pub fn parse(option: &str, v: &str) -> Result<NullKeyStrategy> {
        Ok(match v.trim().to_ascii_lowercase().as_str() {
            "merge" => NullKeyStrategy::Merge,
            "ignore" => NullKeyStrategy::Ignore,
            "error" => NullKeyStrategy::Error,
            _ => {
                return Err(Error::invalid(format!(
                    "option '{option}' = '{v}': expected merge, ignore or error"
                )))
            }
        })
    }
}

/// Configuration of `nested_update` / `nested_partial_update`, resolved against the ROW type:
/// indices of the nested key and nested sequence fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NestedSpec {
    pub key: Vec<usize>,
    pub seq: Vec<usize>,
    pub count_limit: usize,
    pub null_key: NullKeyStrategy,
}

impl Default for NestedSpec {
    fn default() -> Self {
        NestedSpec {
            key: vec![],
            seq: vec![],
            count_limit: i32::MAX as usize,
            null_key: NullKeyStrategy::Merge,
        }
    }
}

fn row_err(field: &str, f: &str, e: impl std::fmt::Display) -> Error {
    Error::invalid(format!(
        "aggregate function '{f}' of field '{field}': cannot compare nested values: {e}"
    ))
}

/// Row encodings of `cols` (one row per element).
fn rows_of(field: &str, f: &str, cols: &[ArrayRef]) -> Result<Rows> {
    let conv = RowConverter::new(
        cols.iter()
            .map(|c| SortField::new(c.data_type().clone()))
            .collect(),
    )
    .map_err(|e| row_err(field, f, e))?;
    conv.convert_columns(cols).map_err(|e| row_err(field, f, e))
}

fn concat2(a: &ArrayRef, b: &ArrayRef) -> Result<ArrayRef> {
    Ok(arrow_select::concat::concat(&[a.as_ref(), b.as_ref()])?)
}

fn take(a: &ArrayRef, idx: Vec<u32>) -> Result<ArrayRef> {
    Ok(arrow_select::take::take(
        a.as_ref(),
        &UInt32Array::from(idx),
        None,
    )?)
}

fn as_struct<'a>(field: &str, f: &str, a: &'a ArrayRef) -> Result<&'a StructArray> {
    a.as_any().downcast_ref::<StructArray>().ok_or_else(|| {
        Error::invalid(format!(
            "aggregate function '{f}' of field '{field}' needs ROW elements, got {}",
            a.data_type()
        ))
    })
}

/// The common start of a collect / merge_map retraction: `Err(result)` when there is nothing
/// to do (a null accumulator stays null, nothing retracted leaves it unchanged), else the
/// accumulator and the accumulator's elements followed by the retracted ones.
#[allow(clippy::type_complexity)]
fn retract_start(
    acc: Option<ArrayRef>,
    retract: Option<ArrayRef>,
) -> Result<std::result::Result<(ArrayRef, ArrayRef), Option<ArrayRef>>> {
    let Some(acc) = acc else { return Ok(Err(None)) };
    let Some(r) = retract.filter(|r| !r.is_empty()) else {
        return Ok(Err(Some(acc)));
    };
    let all = concat2(&acc, &r)?;
    Ok(Ok((acc, all)))
}

/// `collect`: concatenation; with `distinct` the first occurrence of each value only.
pub fn collect_agg(
    field: &str,
    acc: Option<ArrayRef>,
    inp: Option<ArrayRef>,
    distinct: bool,
) -> Result<Option<ArrayRef>> {
    let all = match (acc, inp) {
        (None, None) => return Ok(None),
        (Some(a), None) | (None, Some(a)) if !distinct => return Ok(Some(a)),
        (Some(a), None) | (None, Some(a)) => a,
        (Some(a), Some(b)) => concat2(&a, &b)?,
    };
    if !distinct {
        return Ok(Some(all));
    }
    let rows = rows_of(field, "collect", std::slice::from_ref(&all))?;
    let mut seen = HashSet::with_capacity(all.len());
    let idx: Vec<u32> = (0..all.len())
        .filter(|&i| seen.insert(rows.row(i)))
        .map(|i| i as u32)
        .collect();
    if idx.len() == all.len() {
        return Ok(Some(all));
    }
    Ok(Some(take(&all, idx)?))
}

/// `collect` retraction: each retracted element removes one equal element of the accumulator.
pub fn collect_retract(
    field: &str,
    acc: Option<ArrayRef>,
    retract: Option<ArrayRef>,
) -> Result<Option<ArrayRef>> {
    let (acc, all) = match retract_start(acc, retract)? {
        Ok(x) => x,
        Err(done) => return Ok(done),
    };
    let n = acc.len();
    let rows = rows_of(field, "collect", &[all])?;
    let mut pending: HashMap<_, usize> = HashMap::new();
    for i in n..rows.num_rows() {
        *pending.entry(rows.row(i)).or_default() += 1;
    }
    let mut idx = Vec::with_capacity(n);
    for i in 0..n {
        match pending.get_mut(&rows.row(i)) {
            Some(c) if *c > 0 => *c -= 1,
            _ => idx.push(i as u32),
        }
    }
    Ok(Some(take(&acc, idx)?))
}

/// Insertion-ordered map from an element key to the element index that currently holds it.
struct OrderedMap<'r> {
    pos: HashMap<arrow_row::Row<'r>, usize>,
    slots: Vec<Option<u32>>,
}

impl<'r> OrderedMap<'r> {
    fn new() -> Self {
        OrderedMap {
            pos: HashMap::new(),
            slots: vec![],
        }
    }
    fn get(&self, k: &arrow_row::Row<'r>) -> Option<u32> {
        self.pos.get(k).and_then(|&p| self.slots[p])
    }
    fn len(&self) -> usize {
        self.pos.len()
    }
    fn put(&mut self, k: arrow_row::Row<'r>, v: u32) {
        match self.pos.get(&k) {
            Some(&p) => self.slots[p] = Some(v),
            None => {
                self.pos.insert(k, self.slots.len());
                self.slots.push(Some(v));
            }
        }
    }
    fn remove(&mut self, k: &arrow_row::Row<'r>) {
        if let Some(p) = self.pos.remove(k) {
            self.slots[p] = None;
        }
    }
    fn into_indices(self) -> Vec<u32> {
        self.slots.into_iter().flatten().collect()
    }
}

/// `merge_map`: union of the entries, the input winning on a key clash.
pub fn merge_map_agg(
    field: &str,
    acc: Option<ArrayRef>,
    inp: Option<ArrayRef>,
) -> Result<Option<ArrayRef>> {
    let (a, b) = match (acc, inp) {
        (Some(a), Some(b)) => (a, b),
        (a, b) => return Ok(a.or(b)),
    };
    let all = concat2(&a, &b)?;
    let keys = as_struct(field, "merge_map", &all)?.column(0).clone();
    let rows = rows_of(field, "merge_map", &[keys])?;
    let mut m = OrderedMap::new();
    for i in 0..all.len() {
        m.put(rows.row(i), i as u32);
    }
    Ok(Some(take(&all, m.into_indices())?))
}

/// `merge_map` retraction: the retracted keys leave the accumulator.
pub fn merge_map_retract(
    field: &str,
    acc: Option<ArrayRef>,
    retract: Option<ArrayRef>,
) -> Result<Option<ArrayRef>> {
    let (acc, all) = match retract_start(acc, retract)? {
        Ok(x) => x,
        Err(done) => return Ok(done),
    };
    let n = acc.len();
    let keys = as_struct(field, "merge_map", &all)?.column(0).clone();
    let rows = rows_of(field, "merge_map", &[keys])?;
    let gone: HashSet<_> = (n..all.len()).map(|i| rows.row(i)).collect();
    let mut m = OrderedMap::new();
    for i in 0..n {
        if !gone.contains(&rows.row(i)) {
            m.put(rows.row(i), i as u32);
        }
    }
    Ok(Some(take(&acc, m.into_indices())?))
}

/// `merge_map_with_keytime`: per key the entry whose timestamp field (index `ts` of the ROW
/// value) is greater *as a string* wins; a null value removes the key; an input entry with a
/// null timestamp is skipped.
pub fn keytime_agg(
    field: &str,
    acc: Option<ArrayRef>,
    inp: Option<ArrayRef>,
    ts: usize,
) -> Result<Option<ArrayRef>> {
    const F: &str = "merge_map_with_keytime";
    let (a, b) = match (acc, inp) {
        (None, b) => return Ok(b),
        (a, None) => return Ok(a),
        (Some(a), Some(b)) => (a, b),
    };
    let n = a.len();
    let all = concat2(&a, &b)?;
    let entries = as_struct(field, F, &all)?;
    let rows = rows_of(field, F, &[entries.column(0).clone()])?;
    let values = entries.column(1);
    let vstruct = as_struct(field, F, values)?;
    let tcol = arrow_cast::cast(vstruct.column(ts).as_ref(), &arrow_schema::DataType::Utf8)?;
    let tstr = tcol
        .as_any()
        .downcast_ref::<arrow_array::StringArray>()
        .ok_or_else(|| Error::Internal("timestamp column cast to Utf8".into()))?;
    let ts_of = |i: u32| -> Option<&str> {
        let i = i as usize;
        (values.is_valid(i) && tstr.is_valid(i)).then(|| tstr.value(i))
    };
    let mut m = OrderedMap::new();
    for i in 0..n {
        m.put(rows.row(i), i as u32);
    }
    for i in n..all.len() {
        let k = rows.row(i);
        if values.is_null(i) {
            m.remove(&k);
            continue;
        }
        let Some(new_ts) = ts_of(i as u32) else {
            continue;
        };
        match m.get(&k) {
            None => m.put(k, i as u32),
            Some(e) => match ts_of(e) {
                // Java: String.compareTo (UTF-16 code units); equal to byte order except
                // between surrogate pairs and U+E000..U+FFFF
                Some(old_ts) if new_ts <= old_ts => {}
                _ => m.put(k, i as u32),
            },
        }
    }
    Ok(Some(take(&all, m.into_indices())?))
}

/// Key rows of the non-null elements of `all` and whether each element is kept by the
/// null-key strategy.
fn key_rows(field: &str, f: &str, s: &StructArray, spec: &NestedSpec) -> Result<Rows> {
    let cols: Vec<ArrayRef> = spec.key.iter().map(|&i| s.column(i).clone()).collect();
    rows_of(field, f, &cols)
}

fn key_ok(field: &str, f: &str, s: &StructArray, spec: &NestedSpec, i: usize) -> Result<bool> {
    if !spec.key.iter().any(|&k| s.column(k).is_null(i)) {
        return Ok(true);
    }
    match spec.null_key {
        NullKeyStrategy::Merge => Ok(true),
        NullKeyStrategy::Ignore => Ok(false),
        NullKeyStrategy::Error => Err(Error::invalid(format!(
            "aggregate function '{f}' of field '{field}': nested key contains null values \
             (fields.{field}.nested-key-null-strategy = error)"
        ))),
    }
}

/// `nested_update`: without a nested key, rows are appended (up to `count-limit`); with one,
/// rows are upserted by key (`nested-sequence-field` decides between equal keys, ties to the
/// input), and new keys stop at `count-limit`. Null elements are dropped.
pub fn nested_update_agg(
    field: &str,
    acc: Option<ArrayRef>,
    inp: Option<ArrayRef>,
    spec: &NestedSpec,
) -> Result<Option<ArrayRef>> {
    const F: &str = "nested_update";
    let Some(b) = inp else { return Ok(acc) };
    let limit = spec.count_limit;
    if spec.key.is_empty() {
        let nonnull = |a: &ArrayRef, max: usize| -> Vec<u32> {
            (0..a.len())
                .filter(|&i| a.is_valid(i))
                .take(max)
                .map(|i| i as u32)
                .collect()
        };
        let Some(a) = acc else {
            return Ok(Some(take(&b, nonnull(&b, limit))?));
        };
        if a.len() >= limit {
            return Ok(Some(a));
        }
        let remain = limit - a.len();
        let n = a.len();
        let all = concat2(&a, &b)?;
        let mut idx = nonnull(&a, usize::MAX);
        idx.extend(nonnull(&b, remain).into_iter().map(|i| i + n as u32));
        return Ok(Some(take(&all, idx)?));
    }
    let n = acc.as_ref().map_or(0, |a| a.len());
    let all = match &acc {
        Some(a) => concat2(a, &b)?,
        None => b,
    };
    let s = as_struct(field, F, &all)?;
    let keys = key_rows(field, F, s, spec)?;
    let seqs = if spec.seq.is_empty() {
        None
    } else {
        let cols: Vec<ArrayRef> = spec.seq.iter().map(|&i| s.column(i).clone()).collect();
        Some(rows_of(field, F, &cols)?)
    };
    let mut m = OrderedMap::new();
    for i in 0..all.len() {
        if all.is_null(i) || !key_ok(field, F, s, spec, i)? {
            continue;
        }
        let k = keys.row(i);
        match m.get(&k) {
            Some(e) => {
                let newer = seqs.as_ref().is_none_or(|q| q.row(i) >= q.row(e as usize));
                if newer {
                    m.put(k, i as u32);
                }
            }
            None => {
                if i < n || m.len() < limit {
                    m.put(k, i as u32);
                }
            }
        }
    }
    Ok(Some(take(&all, m.into_indices())?))
}

/// `nested_update` retraction: without a nested key every accumulated row equal to a retracted
/// row goes; with one, the retracted keys go.
pub fn nested_update_retract(
    field: &str,
    acc: Option<ArrayRef>,
    retract: Option<ArrayRef>,
    spec: &NestedSpec,
) -> Result<Option<ArrayRef>> {
    const F: &str = "nested_update";
    let (Some(a), Some(r)) = (acc.clone(), retract) else {
        return Ok(acc);
    };
    let n = a.len();
    let all = concat2(&a, &r)?;
    let s = as_struct(field, F, &all)?;
    if spec.key.is_empty() {
        let rows = rows_of(field, F, s.columns())?;
        let gone: HashSet<_> = (n..all.len())
            .filter(|&i| all.is_valid(i))
            .map(|i| rows.row(i))
            .collect();
        let idx = (0..n)
            .filter(|&i| a.is_valid(i) && !gone.contains(&rows.row(i)))
            .map(|i| i as u32)
            .collect();
        return Ok(Some(take(&a, idx)?));
    }
    let keys = key_rows(field, F, s, spec)?;
    let mut m = OrderedMap::new();
    for i in 0..n {
        if a.is_valid(i) && key_ok(field, F, s, spec, i)? {
            m.put(keys.row(i), i as u32);
        }
    }
    for i in n..all.len() {
        if all.is_valid(i) && key_ok(field, F, s, spec, i)? {
            m.remove(&keys.row(i));
        }
    }
    Ok(Some(take(&a, m.into_indices())?))
}

/// `nested_partial_update`: rows with equal nested keys are merged field by field, a non-null
/// value overwriting (accumulator first, then input). Null elements are dropped.
pub fn nested_partial_update_agg(
    field: &str,
    acc: Option<ArrayRef>,
    inp: Option<ArrayRef>,
    spec: &NestedSpec,
) -> Result<Option<ArrayRef>> {
    const F: &str = "nested_partial_update";
    let Some(b) = inp else { return Ok(acc) };
    let all = match &acc {
        Some(a) => concat2(a, &b)?,
        None => b,
    };
    let s = as_struct(field, F, &all)?;
    let keys = key_rows(field, F, s, spec)?;
    let nf = s.num_columns();
    // per key: for each nested field, the index of its latest non-null value
    let mut pos: HashMap<arrow_row::Row<'_>, usize> = HashMap::new();
    let mut merged: Vec<Vec<Option<u32>>> = vec![];
    for i in 0..all.len() {
        if all.is_null(i) || !key_ok(field, F, s, spec, i)? {
            continue;
        }
        let p = *pos.entry(keys.row(i)).or_insert_with(|| {
            merged.push(vec![None; nf]);
            merged.len() - 1
        });
        for (c, slot) in merged[p].iter_mut().enumerate() {
            if s.column(c).is_valid(i) {
                *slot = Some(i as u32);
            }
        }
    }
    let mut cols = Vec::with_capacity(nf);
    for c in 0..nf {
        let idx: UInt32Array = merged.iter().map(|m| m[c]).collect();
        cols.push(arrow_select::take::take(s.column(c).as_ref(), &idx, None)?);
    }
    let out = StructArray::try_new(s.fields().clone(), cols, None)?;
    Ok(Some(std::sync::Arc::new(out)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::cast::AsArray;
    use arrow_array::types::Int64Type;
    use arrow_array::Int64Array;
    use std::sync::Arc;

    fn ints(v: &[Option<i64>]) -> Option<ArrayRef> {
        Some(Arc::new(Int64Array::from(v.to_vec())))
    }

    fn vals(a: Option<ArrayRef>) -> Vec<Option<i64>> {
        a.unwrap().as_primitive::<Int64Type>().iter().collect()
    }

    #[test]
    fn collect_distinct_and_retract() {
        let got = collect_agg(
            "f",
            ints(&[Some(1), Some(2)]),
            ints(&[Some(2), None, None]),
            true,
        );
        assert_eq!(vals(got.unwrap()), vec![Some(1), Some(2), None]);
        let got = collect_agg("f", None, ints(&[Some(3), Some(3)]), false).unwrap();
        assert_eq!(vals(got), vec![Some(3), Some(3)]);
        assert!(collect_agg("f", None, None, true).unwrap().is_none());
        // one occurrence per retracted element
        let got = collect_retract("f", ints(&[Some(1), Some(2), Some(1)]), ints(&[Some(1)]));
        assert_eq!(vals(got.unwrap()), vec![Some(2), Some(1)]);
        assert!(collect_retract("f", None, ints(&[Some(1)]))
            .unwrap()
            .is_none());
    }

    #[test]
    fn nested_update_keyed_with_limit() {
        use arrow_array::StringArray;
        use arrow_schema::{DataType, Field};
        let row = |ids: &[i64], names: &[&str]| -> Option<ArrayRef> {
            Some(Arc::new(
                StructArray::try_new(
                    vec![
                        Field::new("id", DataType::Int64, true),
                        Field::new("name", DataType::Utf8, true),
                    ]
                    .into(),
                    vec![
                        Arc::new(Int64Array::from(ids.to_vec())),
                        Arc::new(StringArray::from(names.to_vec())),
                    ],
                    None,
                )
                .unwrap(),
            ))
        };
        let spec = NestedSpec {
            key: vec![0],
            count_limit: 2,
            ..Default::default()
        };
        let got = nested_update_agg(
            "f",
            row(&[1], &["a"]),
            row(&[2, 3, 1], &["b", "c", "A"]),
            &spec,
        )
        .unwrap()
        .unwrap();
        let s = got.as_struct();
        assert_eq!(vals(Some(s.column(0).clone())), vec![Some(1), Some(2)]);
        assert_eq!(s.column(1).as_string::<i32>().value(0), "A");
        let got = nested_update_retract("f", Some(got.clone()), row(&[2], &["zzz"]), &spec);
        assert_eq!(
            vals(Some(got.unwrap().unwrap().as_struct().column(0).clone())),
            vec![Some(1)]
        );
    }
}
