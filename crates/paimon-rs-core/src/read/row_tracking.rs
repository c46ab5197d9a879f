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
use crate::spec::manifest::DataFileMeta;
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
