//! What a sort-merge sees of its inputs: each input batch with its keys, sequence numbers and
//! row kinds ([`Source`]), a record as a row of one of them ([`Rec`]), and the gather of picked
//! records into an output batch. The merge reader makes them; the merge engines read them.

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_buffer::ScalarBuffer;
use arrow_row::Rows;
use arrow_schema::SchemaRef;

use crate::error::Result;

/// The keys of a [`Source`]: i64 (single integer key) or arrow-row encoded.
pub(super) enum Keys {
    I64(ScalarBuffer<i64>),
    Rows(Rows),
}

/// One input batch, kept while the output may refer to it.
pub struct Source {
    pub batch: RecordBatch,
    pub(super) keys: Keys,
    pub seq: ScalarBuffer<i64>,
    pub kind: ScalarBuffer<i8>,
    /// Index of the input run the batch came from.
    pub run: u32,
}

/// A record: row `row` of source `src`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rec {
    pub src: u32,
    pub row: u32,
}

/// Rows `picks` = (batch, row) of `batches` as one batch. A column that is the same array as an
/// earlier one in every batch (the `_KEY_` copy of a key column in write buffers) is gathered
/// once and shared.
pub(crate) fn interleave_batches(
    schema: &SchemaRef,
    batches: &[&RecordBatch],
    picks: &[(usize, usize)],
) -> Result<RecordBatch> {
    let n = schema.fields().len();
    let mut cols: Vec<ArrayRef> = Vec::with_capacity(n);
    for c in 0..n {
        let same_as = (0..c).find(|&e| {
            batches
                .iter()
                .all(|b| Arc::ptr_eq(b.column(c), b.column(e)))
        });
        let col = match same_as {
            Some(e) => cols[e].clone(),
            None => {
                let arrays: Vec<&dyn Array> =
                    batches.iter().map(|b| b.column(c).as_ref()).collect();
                arrow_select::interleave::interleave(&arrays, picks)?
            }
        };
        cols.push(col);
    }
    Ok(RecordBatch::try_new_with_options(
        schema.clone(),
        cols,
        &arrow_array::RecordBatchOptions::new().with_row_count(Some(picks.len())),
    )?)
}
