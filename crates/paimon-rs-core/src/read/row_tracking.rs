//! `_ROW_ID` and `_SEQUENCE_NUMBER` of a row-tracking table (`row-tracking.enabled`), the
//! system columns a read may project besides the table's (Java's
//! `SpecialFields.rowTypeWithRowTracking`, pypaimon's `with_projection(["_ROW_ID", ...])`).
//!
//! A row's `_ROW_ID` is its file's `first_row_id` plus its position in the file (counted
//! before deletion vectors drop rows); its `_SEQUENCE_NUMBER` is its file's
//! `max_sequence_number` (the snapshot that added it: commit/row_tracking.rs). Java's
//! compaction and row-id updates store both columns in the files they write (file source
//! COMPACT, or `_ROW_ID` in `write_cols`); reading those stored values is not implemented, so
//! such a file is refused when the columns are asked for (never numbered by position).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use arrow_array::{ArrayRef, Int64Array, RecordBatch};
use arrow_schema::{DataType as ArrowType, Field, Schema};

use super::deletion::{DeletionFile, DeletionFilter};
use super::split::part_of;
use crate::error::{Error, Result};
use crate::kv::reader::{file_path, file_rows, ColumnPlan};
use crate::kv::FileSource;
use crate::merge::BatchIter;
use crate::predicate::{LeafOp, Predicate};
use crate::spec::datum::Datum;
use crate::spec::manifest::DataFileMeta;
use crate::spec::types::{DataType, TypeKind};
use crate::table::FileStoreTable;

/// `_ROW_ID`.
pub const ROW_ID: &str = "_ROW_ID";
/// `_SEQUENCE_NUMBER`.
pub const SEQUENCE_NUMBER: &str = "_SEQUENCE_NUMBER";

/// A system column of a row-tracking table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tracking {
    RowId,
    Sequence,
}

impl Tracking {
    /// The system column `name` asks for on `table`: one of the two on a row-tracking table
    /// that has no column of that name, else None.
    pub(crate) fn of(table: &FileStoreTable, name: &str) -> Result<Option<Tracking>> {
        let t = match name {
            ROW_ID => Tracking::RowId,
            SEQUENCE_NUMBER => Tracking::Sequence,
            _ => return Ok(None),
        };
        if table.schema.field_index(name).is_some() || !table.options.row_tracking()? {
            return Ok(None);
        }
        Ok(Some(t))
    }

    pub(crate) fn field(self) -> Field {
        let name = match self {
            Tracking::RowId => ROW_ID,
            Tracking::Sequence => SEQUENCE_NUMBER,
        };
        // NOT NULL, as Java's and pypaimon's `SpecialFields` (a committed file of a
        // row-tracking table always has a first_row_id: `missing_first_row_id` otherwise)
        Field::new(name, ArrowType::Int64, false)
    }

    /// Where this column is in a batch of [`files_with_tracking`] (after the plan's columns).
    pub(crate) fn column_in(self, plan: &ColumnPlan) -> usize {
        plan.schema.fields().len()
            + match self {
                Tracking::RowId => 0,
                Tracking::Sequence => 1,
            }
    }
}

/// The type a filter compares `name` with on `table`: a column of the table, else a system
/// column of a row-tracking table (`_ROW_ID`, `_SEQUENCE_NUMBER`: BIGINT NOT NULL, pypaimon's
/// filters on `_ROW_ID`); None for anything else.
pub fn filter_column_type(table: &FileStoreTable, name: &str) -> Result<Option<DataType>> {
    if let Some(f) = table.schema.field(name) {
        return Ok(Some(f.data_type.clone()));
    }
    Ok(Tracking::of(table, name)?.map(|_| DataType::new(TypeKind::BigInt).with_nullable(false)))
}

/// The row ids `[from, to)` (sorted, disjoint) that can pass `filter`, from its `_ROW_ID`
/// `=` / `IN` / `BETWEEN` under AND / OR (pypaimon's `_row_ranges_from_predicate`); None: any
/// row may (a leaf on another column or another operator says nothing of the ids). A
/// data-evolution plan keeps only the row-id groups meeting them; the filter still applies
/// exactly to the rows read.
pub(crate) fn row_id_filter_ranges(filter: &Predicate) -> Option<Vec<(i64, i64)>> {
    match filter {
        Predicate::And(c) => {
            let mut acc: Option<Vec<(i64, i64)>> = None;
            for p in c {
                if let Some(r) = row_id_filter_ranges(p) {
                    acc = Some(match acc {
                        None => r,
                        Some(a) => intersect_ranges(&a, &r),
                    });
                }
            }
            acc
        }
        Predicate::Or(c) => {
            let mut all = vec![];
            for p in c {
                all.extend(row_id_filter_ranges(p)?);
            }
            Some(merge_ranges(all))
        }
        Predicate::Leaf {
            field,
            op,
            literals,
        } if field == ROW_ID => {
            let id = |d: &Option<Datum>| match d {
                Some(Datum::BigInt(v)) => Some(*v),
                _ => None,
            };
            let ranges = match op {
                LeafOp::Equal | LeafOp::In => literals
                    .iter()
                    .filter_map(id)
                    .map(|v| (v, v.saturating_add(1)))
                    .collect(),
                LeafOp::Between => {
                    match (literals.first().and_then(id), literals.get(1).and_then(id)) {
                        (Some(lo), Some(hi)) if lo <= hi => vec![(lo, hi.saturating_add(1))],
                        _ => vec![],
                    }
                }
                _ => return None,
            };
            Some(merge_ranges(ranges))
        }
        Predicate::Leaf { .. } => None,
    }
}

/// `ranges` sorted, overlapping or adjacent ones merged.
pub(crate) fn merge_ranges(mut ranges: Vec<(i64, i64)>) -> Vec<(i64, i64)> {
    ranges.sort_unstable();
    let mut out: Vec<(i64, i64)> = Vec::with_capacity(ranges.len());
    for (f, t) in ranges {
        match out.last_mut() {
            Some(last) if f <= last.1 => last.1 = last.1.max(t),
            _ => out.push((f, t)),
        }
    }
    out
}

/// The ids in both of two sorted disjoint range lists (one pass over both: an AND of two
/// IN lists of 40k ids took 1.85 s comparing every range with every range, review35d).
pub(crate) fn intersect_ranges(a: &[(i64, i64)], b: &[(i64, i64)]) -> Vec<(i64, i64)> {
    let (mut i, mut j) = (0, 0);
    let mut out = vec![];
    while let (Some(&(af, at)), Some(&(bf, bt))) = (a.get(i), b.get(j)) {
        let (f, t) = (af.max(bf), at.min(bt));
        if f < t {
            out.push((f, t));
        }
        if at <= bt {
            i += 1;
        } else {
            j += 1;
        }
    }
    merge_ranges(out)
}

/// `files` read one after the other as a raw split (`FileChain::raw`), each batch followed by
/// the `_ROW_ID` and `_SEQUENCE_NUMBER` of its rows, then without the rows the file's deletion
/// vector (in `dvs`) marks.
pub(crate) fn files_with_tracking(
    table: &FileStoreTable,
    dir: &Path,
    files: &[DataFileMeta],
    dvs: &Arc<BTreeMap<String, DeletionFile>>,
    slices: &BTreeMap<String, (i64, i64)>,
    plan: &Arc<ColumnPlan>,
) -> Result<BatchIter> {
    for f in files {
        let stored = f
            .write_cols
            .as_ref()
            .is_some_and(|c| c.iter().any(|n| n == ROW_ID || n == SEQUENCE_NUMBER));
        if f.file_source != Some(FileSource::Append.as_i32()) || stored {
            return Err(Error::unsupported(format!(
                "reading _ROW_ID / _SEQUENCE_NUMBER of file '{}' (written by a compaction or \
                 a row-id update, which stores them in the file): reading the stored values is \
                 not implemented by paimon_rs",
                f.file_name
            ))
            .with_table(&table.name));
        }
    }
    let root = table.path.clone();
    let streams: Vec<BatchIter> = files
        .iter()
        .map(|f| -> BatchIter {
            let (begin, end) = part_of(slices, f);
            let chain = file_rows(file_path(dir, f), f, plan, true, (begin, end));
            let tracked = numbered(chain, f, begin as i64);
            DeletionFilter::over(tracked, &root, f, dvs.get(&f.file_name), None, (begin, end))
        })
        .collect();
    Ok(Box::new(streams.into_iter().flatten()))
}

/// `_ROW_ID` asked of a data file without a `first_row_id` (Java >= 1.1 and pypaimon assign
/// one to every file a row-tracking table commits; Java 1.0, which predates row tracking,
/// writes files without one). Unsupported like the stored-`_ROW_ID` case above.
pub(crate) fn missing_first_row_id(file: &str) -> Error {
    Error::unsupported(format!(
        "data file '{file}' of a row-tracking table has no first_row_id: its _ROW_ID cannot be \
         read"
    ))
}

/// The batches of one file from position `from` on, each with its rows' `_ROW_ID`
/// (first_row_id + position) and `_SEQUENCE_NUMBER` appended.
fn numbered(it: BatchIter, f: &DataFileMeta, from: i64) -> BatchIter {
    let (first, seq) = (f.first_row_id, f.max_sequence_number);
    let name = f.file_name.clone();
    let mut pos: i64 = from;
    Box::new(it.map(move |b| {
        let b = b?;
        let n = b.num_rows();
        let Some(first) = first else {
            return Err(missing_first_row_id(&name));
        };
        let start = first + pos;
        let ids: ArrayRef = Arc::new(Int64Array::from_iter_values(start..start + n as i64));
        pos += n as i64;
        let seqs: ArrayRef = Arc::new(Int64Array::from_value(seq, n));
        let mut fields: Vec<Field> = b
            .schema()
            .fields()
            .iter()
            .map(|f| f.as_ref().clone())
            .collect();
        fields.push(Tracking::RowId.field());
        fields.push(Tracking::Sequence.field());
        let mut cols = b.columns().to_vec();
        cols.extend([ids, seqs]);
        Ok(RecordBatch::try_new(Arc::new(Schema::new(fields)), cols)?)
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaf(op: LeafOp, ids: &[i64]) -> Predicate {
        Predicate::Leaf {
            field: ROW_ID.into(),
            op,
            literals: ids.iter().map(|&v| Some(Datum::BigInt(v))).collect(),
        }
    }

    fn other() -> Predicate {
        Predicate::Leaf {
            field: "id".into(),
            op: LeafOp::Equal,
            literals: vec![Some(Datum::BigInt(1))],
        }
    }

    /// pypaimon's `_row_ranges_from_predicate`: =, IN, BETWEEN give ranges; AND intersects
    /// (ignoring leaves that say nothing), OR unites (any such leaf: no ranges).
    #[test]
    fn ranges_of_equal_in_between_under_and_or() {
        use LeafOp::*;
        assert_eq!(row_id_filter_ranges(&leaf(Equal, &[5])), Some(vec![(5, 6)]));
        assert_eq!(
            row_id_filter_ranges(&leaf(In, &[9, 1, 2, 30])),
            Some(vec![(1, 3), (9, 10), (30, 31)])
        );
        assert_eq!(
            row_id_filter_ranges(&leaf(Between, &[3, 6])),
            Some(vec![(3, 7)])
        );
        assert_eq!(row_id_filter_ranges(&leaf(Between, &[6, 3])), Some(vec![]));
        assert_eq!(row_id_filter_ranges(&leaf(LessThan, &[3])), None);
        assert_eq!(row_id_filter_ranges(&other()), None);
        let and = Predicate::And(vec![leaf(Between, &[2, 9]), other(), leaf(In, &[1, 4, 9])]);
        assert_eq!(row_id_filter_ranges(&and), Some(vec![(4, 5), (9, 10)]));
        let or = Predicate::Or(vec![leaf(Equal, &[2]), leaf(Equal, &[11])]);
        assert_eq!(row_id_filter_ranges(&or), Some(vec![(2, 3), (11, 12)]));
        assert_eq!(
            row_id_filter_ranges(&Predicate::Or(vec![leaf(Equal, &[2]), other()])),
            None
        );
    }
}
