//! The key diff of two reads of one bucket (paimon-behaviour.md §9.7; Java's
//! `IncrementalDiffSplitRead` and its `DiffMerger`): an incremental read between two tags of a
//! primary-key table with deletion vectors returns, key by key, what changed from the start
//! tag's rows to the end tag's. A key only in the end tag's rows: its row; only in the start
//! tag's: its row as `-D` (an add; a retraction there is no row); in both: the end tag's row
//! unless the values and whether each is an add are equal.
//!
//! Both sides are batches of the same columns: the row kind (`+I`, `-U`, `+U`, `-D`) first,
//! then the table's columns. Each side holds a key once (a deletion-vector table's files above
//! level 0 hold each key's live row once: the vectors remove the others).

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, RecordBatch, StringArray, UInt32Array};
use arrow_row::{RowConverter, Rows, SortField};

use crate::error::{Error, Result};

/// Whether a row kind (its short string) is an add (`+I`, `+U`).
fn is_add(kind: &str) -> bool {
    kind.starts_with('+')
}

fn encode(batch: &RecordBatch, cols: &[usize]) -> Result<Rows> {
    let arrays: Vec<ArrayRef> = cols.iter().map(|&c| batch.column(c).clone()).collect();
    let fields = arrays
        .iter()
        .map(|a| SortField::new(a.data_type().clone()))
        .collect();
    Ok(RowConverter::new(fields)?.convert_columns(&arrays)?)
}

fn kinds(batch: &RecordBatch) -> Result<&StringArray> {
    batch
        .column(0)
        .as_any()
        .downcast_ref::<StringArray>()
        .ok_or_else(|| Error::Internal("diff read: the row kind column is not a string".into()))
}

/// The diff from `before` to `after` (see the module doc), in key order. `key_cols` are the
/// positions of the primary key's columns in both batches; every column after the first (the
/// row kind) is compared.
pub fn diff_sides(
    before: &RecordBatch,
    after: &RecordBatch,
    key_cols: &[usize],
) -> Result<RecordBatch> {
    if before.schema() != after.schema() {
        return Err(Error::Internal(
            "diff read: the two sides' columns differ".into(),
        ));
    }
    let value_cols: Vec<usize> = (1..after.num_columns()).collect();
    let (bk, ak) = (encode(before, key_cols)?, encode(after, key_cols)?);
    // one converter for both sides' values, so their encodings compare
    let values = |b: &RecordBatch| -> Vec<ArrayRef> {
        value_cols.iter().map(|&c| b.column(c).clone()).collect()
    };
    let conv = RowConverter::new(
        value_cols
            .iter()
            .map(|&c| SortField::new(after.column(c).data_type().clone()))
            .collect(),
    )?;
    let (bv, av) = (
        conv.convert_columns(&values(before))?,
        conv.convert_columns(&values(after))?,
    );
    let (bkind, akind) = (kinds(before)?, kinds(after)?);
    let mut by_key: std::collections::HashMap<arrow_row::Row<'_>, u32> =
        std::collections::HashMap::with_capacity(before.num_rows());
    for i in 0..before.num_rows() {
        if by_key.insert(bk.row(i), i as u32).is_some() {
            return Err(Error::Internal(
                "diff read: a key twice in the start tag's rows of a bucket".into(),
            ));
        }
    }
    // (key, side, row): side 0 the end tag's row, 1 the start tag's row as -D
    let mut out: Vec<(arrow_row::Row<'_>, u8, u32)> = vec![];
    for i in 0..after.num_rows() {
        let key = ak.row(i);
        match by_key.remove(&key) {
            None => out.push((key, 0, i as u32)),
            Some(j) => {
                let same = bv.row(j as usize) == av.row(i)
                    && is_add(bkind.value(j as usize)) == is_add(akind.value(i));
                if !same {
                    out.push((key, 0, i as u32));
                }
            }
        }
    }
    for (key, j) in by_key {
        if is_add(bkind.value(j as usize)) {
            out.push((key, 1, j));
        }
    }
    out.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    // the end tag's rows, then the start tag's as -D, interleaved back into key order
    let pick =
        |side: u8| -> UInt32Array { out.iter().filter(|o| o.1 == side).map(|o| o.2).collect() };
    let (from_after, from_before) = (pick(0), pick(1));
    let take = |b: &RecordBatch, idx: &UInt32Array| -> Result<Vec<ArrayRef>> {
        b.columns()
            .iter()
            .map(|c| Ok(arrow_select::take::take(c.as_ref(), idx, None)?))
            .collect()
    };
    let a = take(after, &from_after)?;
    let mut d = take(before, &from_before)?;
    d[0] = Arc::new(StringArray::from(vec!["-D"; from_before.len()]));
    let both = RecordBatch::try_new(after.schema(), a)?;
    let deleted = RecordBatch::try_new(after.schema(), d)?;
    let all = arrow_select::concat::concat_batches(&after.schema(), [&both, &deleted])?;
    // key order: positions of `out` in the concatenation
    let (mut na, mut nd) = (0u32, from_after.len() as u32);
    let order: UInt32Array = out
        .iter()
        .map(|o| {
            if o.1 == 0 {
                na += 1;
                na - 1
            } else {
                nd += 1;
                nd - 1
            }
        })
        .collect();
    let cols = take(&all, &order)?;
    Ok(RecordBatch::try_new(after.schema(), cols)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::cast::AsArray;
    use arrow_array::types::Int64Type;
    use arrow_array::Int64Array;
    use arrow_schema::{DataType, Field, Schema};

    fn side(rows: &[(&str, i64, Option<&str>)]) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![
            Field::new("rowkind", DataType::Utf8, false),
            Field::new("k", DataType::Int64, false),
            Field::new("v", DataType::Utf8, true),
        ]));
        RecordBatch::try_new(
            schema,
            vec![
                Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.0))),
                Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.1))),
                Arc::new(StringArray::from_iter(rows.iter().map(|r| r.2))),
            ],
        )
        .unwrap()
    }

    fn show(b: &RecordBatch) -> Vec<(String, i64, Option<String>)> {
        let (k, n, v) = (
            b.column(0).as_string::<i32>(),
            b.column(1).as_primitive::<Int64Type>(),
            b.column(2).as_string::<i32>(),
        );
        (0..b.num_rows())
            .map(|i| {
                (
                    k.value(i).to_string(),
                    n.value(i),
                    v.is_valid(i).then(|| v.value(i).to_string()),
                )
            })
            .collect()
    }

    /// Java's `DiffMerger` with deletes kept: new keys and changed values from the end tag,
    /// vanished keys as -D of the start tag's row, equal rows (a null equal to a null) and a
    /// vanished retraction nothing; the output in key order.
    #[test]
    fn diff_is_new_and_changed_rows_and_vanished_keys_as_deletes() {
        let before = side(&[
            ("+I", 5, Some("a")),
            ("+I", 1, Some("same")),
            ("+I", 3, Some("old")),
            ("+I", 4, None),
            ("-D", 9, Some("gone")),
            ("+U", 7, Some("kind")),
        ]);
        let after = side(&[
            ("+I", 1, Some("same")),
            ("+U", 3, Some("new")),
            ("+I", 2, None),
            ("+I", 4, None),
            ("+I", 7, Some("kind")),
        ]);
        let got = show(&diff_sides(&before, &after, &[1]).unwrap());
        let s = |k: &str, n: i64, v: Option<&str>| (k.to_string(), n, v.map(str::to_string));
        assert_eq!(
            got,
            vec![
                s("+I", 2, None),
                s("+U", 3, Some("new")),
                s("-D", 5, Some("a")),
            ]
        );
        // nothing changed: nothing
        assert_eq!(diff_sides(&after, &after, &[1]).unwrap().num_rows(), 0);
    }
}
