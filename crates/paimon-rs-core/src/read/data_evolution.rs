//! The column-merged read of a data-evolution table (`data-evolution.enabled`), as Java's
//! `DataEvolutionSplitRead` and pypaimon's `DataEvolutionSplitRead` do it.
//!
//! A row-id update (pypaimon's `update_by_arrow_with_row_id`) or a write of some columns
//! (`with_write_type`) adds a file that holds only some columns (`write_cols`) of rows whose
//! ids an older file already holds, with the same `first_row_id` and `row_count`. The files of
//! a split are grouped by `first_row_id` (every file of a group must have the group's row
//! count; a file whose ids start inside another group is an error). Within a group each
//! needed column comes from the newest file (highest `max_sequence_number`) that holds it; a
//! column no file holds reads as nulls. A file with no `write_cols` holds the columns of its
//! schema; `write_cols` names are matched against the table's current field names (as
//! pypaimon's `_get_field_ids_from_write_cols`). A file that holds no needed column is not
//! opened. `_ROW_ID` is `first_row_id` + position, `_SEQUENCE_NUMBER` the newest file's.

use std::collections::{BTreeSet, VecDeque};
use std::path::Path;
use std::sync::Arc;

use arrow_array::{new_null_array, ArrayRef, Int64Array, RecordBatch, RecordBatchOptions};
use arrow_schema::{DataType as ArrowType, Field, Schema};

use super::evolution::SchemaCache;
use super::row_tracking::{Tracking, ROW_ID, SEQUENCE_NUMBER};
use crate::error::{Error, Result};
use crate::kv::reader::{file_path, ColumnPlan, FileChain};
use crate::merge::BatchIter;
use crate::spec::manifest::DataFileMeta;
use crate::table::FileStoreTable;

/// `files` in row-id groups: files with the same `first_row_id`, newest first; the groups in
/// row-id order (a file without a row id is a group of its own, first). Overlapping ranges
/// with different starts are an error naming both files.
pub(crate) fn row_id_groups(
    table: &FileStoreTable,
    files: &[DataFileMeta],
) -> Result<Vec<Vec<DataFileMeta>>> {
    let mut sorted: Vec<&DataFileMeta> = files.iter().collect();
    sorted.sort_by_key(|f| {
        (
            f.first_row_id.map_or(i128::MIN, i128::from),
            std::cmp::Reverse(f.max_sequence_number),
        )
    });
    let mut groups: Vec<Vec<DataFileMeta>> = vec![];
    let mut end = i64::MIN;
    for f in sorted {
        let Some(first) = f.first_row_id else {
            groups.push(vec![f.clone()]);
            continue;
        };
        if let Some(head) = groups.last_mut().and_then(|g| {
            let h = &g[0];
            (h.first_row_id == Some(first)).then_some(g)
        }) {
            let h = &head[0];
            if h.row_count != f.row_count {
                return Err(Error::unsupported(format!(
                    "data-evolution files '{}' ({} rows) and '{}' ({} rows) start at row id \
                     {first} with different row counts: a column merge needs equal ranges",
                    h.file_name, h.row_count, f.file_name, f.row_count
                ))
                .with_table(&table.name));
            }
            head.push(f.clone());
            continue;
        }
        if first < end {
            let prev = groups
                .last()
                .map_or("?", |g| g[0].file_name.as_str())
                .to_string();
            return Err(Error::unsupported(format!(
                "data-evolution file '{}' (row ids from {first}) overlaps file '{prev}' (row \
                 ids up to {end}) without the same first row id: such files cannot be merged",
                f.file_name
            ))
            .with_table(&table.name));
        }
        end = first + f.row_count;
        groups.push(vec![f.clone()]);
    }
    Ok(groups)
}

/// The table field ids `f` holds: its `write_cols` by the table's current names, else every
/// field of the schema it was written with.
fn held_ids(
    table: &FileStoreTable,
    schemas: &SchemaCache,
    f: &DataFileMeta,
) -> Result<BTreeSet<i32>> {
    Ok(match &f.write_cols {
        Some(cols) => cols
            .iter()
            .filter_map(|c| table.schema.field(c).map(|x| x.id))
            .collect(),
        None => schemas
            .get(f.schema_id)?
            .fields
            .iter()
            .map(|x| x.id)
            .collect(),
    })
}

/// Builds the column plan of some of the read's needed columns (indices into `needed`).
pub(crate) type SubPlan<'a> = dyn Fn(&[usize]) -> Result<Arc<ColumnPlan>> + 'a;

/// The batches of `groups` in the read's plan layout (`needed` table columns in order, then
/// `_ROW_ID` and `_SEQUENCE_NUMBER` when `tracking`), each group merged by columns.
pub(crate) fn merged_groups(
    table: &FileStoreTable,
    schemas: &SchemaCache,
    dir: &Path,
    groups: Vec<Vec<DataFileMeta>>,
    needed: &[usize],
    plan: &Arc<ColumnPlan>,
    sub_plan: &SubPlan<'_>,
    tracking: bool,
) -> Result<BatchIter> {
    let fields = &table.schema.fields;
    let mut out: Vec<Result<RecordBatch>> = Vec::with_capacity(groups.len());
    for group in groups {
        let newest = &group[0];
        if tracking {
            for f in &group {
                let stored = f
                    .write_cols
                    .as_ref()
                    .is_some_and(|c| c.iter().any(|n| n == ROW_ID || n == SEQUENCE_NUMBER));
                if stored {
                    return Err(Error::unsupported(format!(
                        "reading _ROW_ID / _SEQUENCE_NUMBER of file '{}' (it stores them): \
                         reading the stored values is not implemented by paimon_rs",
                        f.file_name
                    ))
                    .with_table(&table.name));
                }
            }
        }
        // which file gives each needed column: the newest that holds it
        let mut from: Vec<Option<usize>> = vec![None; needed.len()];
        for (fi, f) in group.iter().enumerate() {
            let held = held_ids(table, schemas, f)?;
            for (k, &i) in needed.iter().enumerate() {
                if from[k].is_none() && held.contains(&fields[i].id) {
                    from[k] = Some(fi);
                }
            }
        }
        let rows = newest.row_count as usize;
        let mut cols: Vec<Option<ArrayRef>> = vec![None; needed.len()];
        for (fi, f) in group.iter().enumerate() {
            let mine: Vec<usize> = (0..needed.len()).filter(|&k| from[k] == Some(fi)).collect();
            if mine.is_empty() {
                continue;
            }
            let p = sub_plan(&mine)?;
            let one = VecDeque::from([(file_path(dir, f), f.clone())]);
            let batches: Vec<RecordBatch> =
                FileChain::raw(one, p.clone()).collect::<Result<_>>()?;
            let b = arrow_select::concat::concat_batches(&p.schema, &batches)?;
            if b.num_rows() != rows {
                return Err(Error::corrupt(
                    file_path(dir, f),
                    format!(
                        "{} rows read, the data-evolution group of file '{}' has {rows}",
                        b.num_rows(),
                        newest.file_name
                    ),
                ));
            }
            for (j, &k) in mine.iter().enumerate() {
                cols[k] = Some(b.column(p.needed_at[j]).clone());
            }
        }
        let mut arrays: Vec<ArrayRef> = cols
            .into_iter()
            .zip(needed)
            .map(|(c, &i)| {
                c.unwrap_or_else(|| new_null_array(&fields[i].data_type.to_arrow(), rows))
            })
            .collect();
        let mut schema_fields: Vec<Field> = plan
            .schema
            .fields()
            .iter()
            .map(|f| f.as_ref().clone())
            .collect();
        if tracking {
            let ids: ArrayRef = match newest.first_row_id {
                Some(first) => Arc::new(Int64Array::from_iter_values(first..first + rows as i64)),
                None => new_null_array(&ArrowType::Int64, rows),
            };
            arrays.push(ids);
            arrays.push(Arc::new(Int64Array::from_value(
                newest.max_sequence_number,
                rows,
            )));
            schema_fields.push(Tracking::RowId.field());
            schema_fields.push(Tracking::Sequence.field());
        }
        out.push(
            RecordBatch::try_new_with_options(
                Arc::new(Schema::new(schema_fields)),
                arrays,
                &RecordBatchOptions::new().with_row_count(Some(rows)),
            )
            .map_err(Error::from),
        );
    }
    Ok(Box::new(out.into_iter()))
}
