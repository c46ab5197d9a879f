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
//! schema; `write_cols` names are resolved to field ids in the file's own schema (Java; pypaimon
//! 2.1.0 matches them against the current names, which differs after a rename). A file that holds no needed column is not
//! opened. `_ROW_ID` is `first_row_id` + position, `_SEQUENCE_NUMBER` the newest file's.
//!
//! Deletes (pypaimon's `delete_by_row_id` / `delete_by_predicate`, Java's data-evolution
//! deletion vectors) mark the deleted rows' positions in the deletion vector of the group's
//! anchor file (its oldest data file); the position of a row is its id minus the group's
//! `first_row_id`, whichever file holds its columns. A merged group drops the rows the vector
//! of any of its data files marks (in practice only the anchor has one).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::builder::LargeBinaryBuilder;
use arrow_array::{new_null_array, ArrayRef, Int64Array, RecordBatch, RecordBatchOptions};
use arrow_schema::{DataType as ArrowType, Field, Schema};

use super::deletion::{drop_deleted, read_deletion_vector, DeletionFile};
use super::evolution::SchemaCache;
use super::row_tracking::{Tracking, ROW_ID, SEQUENCE_NUMBER};
use crate::error::{Error, Result};
use crate::io::blob::{self, BlobSlot, BlobValue};
use crate::io::data_file::Source;
use crate::io::remote::ReadAt;
use crate::kv::reader::{file_path, file_rows, ColumnPlan};
use crate::merge::BatchIter;
use crate::spec::manifest::DataFileMeta;
use crate::table::FileStoreTable;

/// `files` in row-id groups: files with the same `first_row_id`, newest first; the groups in
/// row-id order (a file without a row id is a group of its own, first). Overlapping ranges
/// with different starts are an error naming both files.
pub(crate) fn row_id_groups(table: &str, files: &[DataFileMeta]) -> Result<Vec<Vec<DataFileMeta>>> {
    let (blobs, rest): (Vec<&DataFileMeta>, Vec<&DataFileMeta>) =
        files.iter().partition(|f| is_blob_file(f));
    let mut groups = data_groups(table, rest)?;
    // a BLOB column's `.blob` files roll at `blob.target-file-size`: each covers part of the
    // row ids of one data file, and joins that file's group (after the data files)
    for b in blobs {
        let (first, end) = match b.first_row_id {
            Some(first) => (first, first + b.row_count),
            None => {
                return Err(Error::unsupported(format!(
                    "BLOB file '{}' without a first row id: it cannot be matched to its rows",
                    b.file_name
                ))
                .with_table(table))
            }
        };
        let home = groups.iter_mut().find(|g| {
            let h = &g[0];
            !is_blob_file(h)
                && h.first_row_id
                    .is_some_and(|s| s <= first && end <= s + h.row_count)
        });
        match home {
            Some(g) => g.push(b.clone()),
            None => {
                return Err(Error::unsupported(format!(
                    "BLOB file '{}' (row ids {first} to {end}) lies in no data file's row-id \
                     range: it cannot be merged",
                    b.file_name
                ))
                .with_table(table))
            }
        }
    }
    Ok(groups)
}

/// Whether `f` is a `.blob` file (one BLOB column's values, io/blob.rs).
fn is_blob_file(f: &DataFileMeta) -> bool {
    f.file_name.ends_with(".blob")
}

/// The row-id groups of the files that are not `.blob` files (see [`row_id_groups`]).
fn data_groups(table: &str, files: Vec<&DataFileMeta>) -> Result<Vec<Vec<DataFileMeta>>> {
    let mut sorted = files;
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
                .with_table(table));
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
            .with_table(table));
        }
        end = first + f.row_count;
        groups.push(vec![f.clone()]);
    }
    Ok(groups)
}

/// The table field ids `f` holds: its `write_cols` by name in the schema it was written with
/// (Java's `schemaFetcher.apply(file.schemaId()).project(file.writeCols())`, so a column renamed
/// since is still found by id), else every field of that schema. A name that schema does not
/// have (other than the row-tracking columns `_ROW_ID` / `_SEQUENCE_NUMBER`) is a corrupt entry,
/// never skipped: the column would silently read as null.
fn held_ids(schemas: &SchemaCache, dir: &Path, f: &DataFileMeta) -> Result<BTreeSet<i32>> {
    let schema = schemas.get(f.schema_id)?;
    let Some(cols) = &f.write_cols else {
        return Ok(schema.fields.iter().map(|x| x.id).collect());
    };
    let mut ids = BTreeSet::new();
    for c in cols {
        match schema.field(c) {
            Some(x) => {
                ids.insert(x.id);
            }
            None if c == ROW_ID || c == SEQUENCE_NUMBER => {}
            None => {
                return Err(Error::corrupt(
                    file_path(dir, f),
                    format!(
                        "its manifest entry's write_cols names column '{c}', which schema {} \
                         (the file's) does not have",
                        f.schema_id
                    ),
                ))
            }
        }
    }
    Ok(ids)
}

/// Builds the column plan of some of the read's needed columns (indices into `needed`).
pub(crate) type SubPlan<'a> = dyn Fn(&[usize]) -> Result<Arc<ColumnPlan>> + 'a;

/// One file's share of a row-id group: the needed columns it gives (indices into the plan's
/// `wanted`), read with a plan of those columns only.
struct Part {
    path: PathBuf,
    meta: DataFileMeta,
    plan: Arc<ColumnPlan>,
    mine: Vec<usize>,
}

/// A row-id group, planned: its rows, the files to open, and its `_ROW_ID` / sequence.
struct Group {
    rows: usize,
    newest: String,
    first_row_id: Option<i64>,
    sequence: i64,
    parts: Vec<Part>,
    blobs: Vec<BlobPart>,
    /// The deletion vectors of the group's data files (data file name, where the vector is),
    /// read with the group, and the table root they are relative to.
    deletions: Vec<(String, DeletionFile)>,
    root: PathBuf,
    /// The positions `[begin, end)` of the group's rows read (a slice of the plan,
    /// `Split::row_slices` of its data files), else all of them.
    part: Option<(usize, usize)>,
}

/// The `.blob` files giving needed column `k` of a row-id group; `as_descriptor`: the values
/// are serialized `BlobDescriptor`s of the bytes (`blob-as-descriptor`), else the bytes.
///
/// A data-evolution update of a BLOB column (pypaimon's `update_by_arrow_with_row_id`, Java's
/// `MERGE INTO`) adds `.blob` files over the rows `[first_row_id, last updated row]` of the
/// group, a placeholder (length `-2`) at each row it leaves as it was. Java's
/// `BlobFallbackRecordReader` and pypaimon's `BlobFallbackBatchReader` agree on the read: the
/// files are grouped by `max_sequence_number` (files of one sequence must not overlap), and a
/// row's value is the newest group's that has one for it and is not a placeholder; a row no
/// group gives a value reads as null.
struct BlobPart {
    k: usize,
    /// The files, newest sequence first, in row order within a sequence.
    files: Vec<BlobFile>,
    /// The group's rows.
    rows: usize,
    /// Whether `files` are one sequence's, tiling the group's rows (read by concatenation).
    tiling: bool,
    as_descriptor: bool,
    /// The column's type when it is `ARRAY<BLOB>` / `MAP<X, BLOB>` (io/blob_nested.rs).
    nested: Option<crate::spec::types::DataType>,
}

/// One `.blob` file of a [`BlobPart`]: its rows `[offset, offset + rows)` of the group.
struct BlobFile {
    path: PathBuf,
    offset: usize,
    rows: usize,
    seq: i64,
}

/// Plans `files` (the `.blob` files of column `k` in the group of data file `head`): each
/// inside the group's row ids, the files of one sequence number not overlapping.
fn blob_part(
    table: &str,
    dir: &Path,
    head: &DataFileMeta,
    k: usize,
    mut files: Vec<&DataFileMeta>,
    as_descriptor: bool,
) -> Result<BlobPart> {
    files.sort_by_key(|f| (std::cmp::Reverse(f.max_sequence_number), f.first_row_id));
    let start = head.first_row_id.unwrap_or_default();
    let mut out: Vec<BlobFile> = Vec::with_capacity(files.len());
    for f in files {
        let first = f.first_row_id.unwrap_or(i64::MIN);
        let inside = first >= start && first.saturating_add(f.row_count) <= start + head.row_count;
        if !inside || f.row_count < 0 {
            return Err(Error::unsupported(format!(
                "BLOB file '{}' (row ids from {first}, {} rows) lies outside the row ids of \
                 data file '{}'",
                f.file_name, f.row_count, head.file_name
            ))
            .with_table(table));
        }
        let offset = (first - start) as usize;
        if let Some(prev) = out.last() {
            if prev.seq == f.max_sequence_number && prev.offset + prev.rows > offset {
                return Err(Error::corrupt(
                    file_path(dir, f),
                    format!(
                        "it overlaps the row ids of BLOB file '{}' of the same sequence number \
                         {}",
                        prev.path.display(),
                        prev.seq
                    ),
                ));
            }
        }
        out.push(BlobFile {
            path: file_path(dir, f),
            offset,
            rows: f.row_count as usize,
            seq: f.max_sequence_number,
        });
    }
    let rows = head.row_count as usize;
    let one_seq = out.windows(2).all(|w| w[0].seq == w[1].seq);
    let mut next = 0;
    let tiling = one_seq
        && out.iter().all(|f| {
            let at = f.offset == next;
            next += f.rows;
            at
        })
        && next == rows;
    Ok(BlobPart {
        k,
        files: out,
        rows,
        tiling,
        as_descriptor,
        nested: None,
    })
}

/// The values of one BLOB column read from its `.blob` files, the group's rows in order (see
/// [`BlobPart`]).
fn read_blobs(part: &BlobPart) -> Result<ArrayRef> {
    let mut read = Vec::with_capacity(part.files.len());
    for f in &part.files {
        read.push(read_blob_file(part, f)?);
    }
    if part.tiling {
        // one sequence covering the rows once: a placeholder has no older value (null)
        let arrays: Vec<&dyn arrow_array::Array> = read.iter().map(|(a, _)| a.as_ref()).collect();
        return match arrays.len() {
            1 => Ok(read[0].0.clone()),
            _ => Ok(arrow_select::concat::concat(&arrays)?),
        };
    }
    // each row from the newest file giving it a value (not a placeholder), else null
    let nulls = read
        .first()
        .map(|(a, _)| new_null_array(a.data_type(), 1))
        .ok_or_else(|| Error::Internal("a BLOB column without files".into()))?;
    let mut picks: Vec<(usize, usize)> = Vec::with_capacity(part.rows);
    for row in 0..part.rows {
        let pick = part.files.iter().enumerate().find_map(|(i, f)| {
            let at = row.checked_sub(f.offset).filter(|&at| at < f.rows)?;
            (!read[i].1[at]).then_some((i, at))
        });
        picks.push(pick.unwrap_or((read.len(), 0)));
    }
    let mut arrays: Vec<&dyn arrow_array::Array> = read.iter().map(|(a, _)| a.as_ref()).collect();
    arrays.push(nulls.as_ref());
    Ok(arrow_select::interleave::interleave(&arrays, &picks)?)
}

/// One `.blob` file's values and which of its rows are placeholders.
fn read_blob_file(part: &BlobPart, f: &BlobFile) -> Result<(ArrayRef, Vec<bool>)> {
    let (path, rows) = (&f.path, f.rows);
    let mut marks = Vec::with_capacity(rows);
    if let Some(t) = &part.nested {
        let files = [(path.clone(), rows)];
        let a = crate::io::blob_nested::read_column(&files, t, part.as_descriptor, &mut marks)?;
        return Ok((a, marks));
    }
    let mut b = LargeBinaryBuilder::new();
    let uri = path.to_string_lossy();
    // descriptors need only the index at the file's end; the bytes need the whole file
    let (slots, bytes) = match part.as_descriptor {
        true => {
            let (src, len) = crate::io::data_file::open_checked(path, None, false)?;
            let slots = match &src {
                Source::Local(f) => blob::read_index_at(len, |at, n| f.read_at(at, n), path)?,
                Source::Remote(o) => blob::read_index_at(len, |at, n| o.read_at(at, n), path)?,
            };
            (slots, None)
        }
        false => {
            let bytes = crate::io::read(path)?;
            (blob::read_index(&bytes, path)?, Some(bytes))
        }
    };
    if slots.len() != rows {
        return Err(Error::corrupt(
            path.clone(),
            format!(
                "{} rows in the .blob file, its manifest entry says {rows}",
                slots.len()
            ),
        ));
    }
    if let Some(bytes) = &bytes {
        for v in blob::decode(bytes, path)? {
            marks.push(v == BlobValue::PlaceHolder);
            match v {
                BlobValue::Null | BlobValue::PlaceHolder => b.append_null(),
                BlobValue::Data(d) => b.append_value(d),
            }
        }
        return Ok((Arc::new(b.finish()), marks));
    }
    for slot in slots {
        marks.push(slot == BlobSlot::PlaceHolder);
        match slot {
            BlobSlot::Null | BlobSlot::PlaceHolder => b.append_null(),
            BlobSlot::Data { offset, length } => {
                b.append_value(blob::descriptor_bytes(&uri, offset, length)?)
            }
        }
    }
    Ok((Arc::new(b.finish()), marks))
}

/// The batches of `groups` in the read's plan layout (`needed` table columns in order, then
/// `_ROW_ID` and `_SEQUENCE_NUMBER` when `tracking`), each group merged by columns, without
/// the rows the deletion vectors of its data files (`dvs`, by data file name) mark, only the
/// positions `slices` gives its newest data file when it names it (a slice of the plan). The groups
/// are planned here (which file gives each column; refusals and corrupt entries fail now) and
/// read lazily, one group at a time, as the batches are pulled.
#[allow(clippy::too_many_arguments)]
pub(crate) fn merged_groups(
    table: &FileStoreTable,
    schemas: &SchemaCache,
    dir: &Path,
    groups: Vec<Vec<DataFileMeta>>,
    dvs: &BTreeMap<String, DeletionFile>,
    slices: &BTreeMap<String, (i64, i64)>,
    plan: &Arc<ColumnPlan>,
    sub_plan: &SubPlan<'_>,
    tracking: bool,
) -> Result<BatchIter> {
    // an append table's plan decodes the needed columns in order (needed_at[k] = k)
    let wanted = &plan.wanted;
    let as_descriptor = match table.options.raw.get("blob-as-descriptor") {
        Some(v) => crate::options::parse_bool("blob-as-descriptor", v)?,
        None => false,
    };
    let mut planned: Vec<Group> = Vec::with_capacity(groups.len());
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
        // which file gives each needed column: the newest that holds it; a column no data
        // file holds may come from the group's `.blob` files, all of them together
        let mut from: Vec<Option<usize>> = vec![None; wanted.len()];
        let mut blob_files: Vec<Vec<usize>> = vec![vec![]; wanted.len()];
        for (fi, f) in group.iter().enumerate() {
            let held = held_ids(schemas, dir, f)?;
            for (k, w) in wanted.iter().enumerate() {
                let id = w.field.as_ref().map(|x| x.id);
                if !id.is_some_and(|id| held.contains(&id)) {
                    continue;
                }
                if is_blob_file(f) {
                    blob_files[k].push(fi);
                } else if from[k].is_none() {
                    from[k] = Some(fi);
                }
            }
        }
        let mut blobs = vec![];
        for (k, fis) in blob_files.into_iter().enumerate() {
            if from[k].is_none() && !fis.is_empty() {
                let files: Vec<&DataFileMeta> = fis.iter().map(|&fi| &group[fi]).collect();
                let mut part = blob_part(&table.name, dir, newest, k, files, as_descriptor)?;
                part.nested = wanted[k]
                    .field
                    .as_ref()
                    .map(|f| &f.data_type)
                    .filter(|t| crate::io::blob_nested::is_nested_blob(t))
                    .cloned();
                blobs.push(part);
            }
        }
        let mut parts = vec![];
        for (fi, f) in group.iter().enumerate() {
            let mine: Vec<usize> = (0..wanted.len()).filter(|&k| from[k] == Some(fi)).collect();
            if is_blob_file(f) && !mine.is_empty() {
                return Err(Error::Internal(format!(
                    "BLOB file '{}' planned as a data file",
                    f.file_name
                )));
            }
            if !mine.is_empty() {
                parts.push(Part {
                    path: file_path(dir, f),
                    meta: f.clone(),
                    plan: sub_plan(&mine)?,
                    mine,
                });
            }
        }
        let deletions = group
            .iter()
            .filter(|f| !is_blob_file(f))
            .filter_map(|f| {
                dvs.get(&f.file_name)
                    .map(|d| (f.file_name.clone(), d.clone()))
            })
            .collect();
        planned.push(Group {
            rows: newest.row_count as usize,
            newest: newest.file_name.clone(),
            first_row_id: newest.first_row_id,
            sequence: newest.max_sequence_number,
            parts,
            blobs,
            deletions,
            root: table.path.clone(),
            part: slices.get(&newest.file_name).map(|_| {
                let (b, e) = super::split::part_of(slices, newest);
                (b as usize, e as usize)
            }),
        });
    }
    let dtypes: Vec<ArrowType> = wanted.iter().map(|w| w.dtype.clone()).collect();
    let mut fields: Vec<Field> = plan
        .schema
        .fields()
        .iter()
        .map(|f| f.as_ref().clone())
        .collect();
    if tracking {
        fields.push(Tracking::RowId.field());
        fields.push(Tracking::Sequence.field());
    }
    let schema = Arc::new(Schema::new(fields));
    Ok(Box::new(
        planned
            .into_iter()
            .map(move |g| read_group(g, &dtypes, &schema, tracking)),
    ))
}

/// One planned group's batch: each part's columns read from its file, nulls for the columns no
/// file holds, then `_ROW_ID` / `_SEQUENCE_NUMBER` when `tracking`.
fn read_group(
    g: Group,
    dtypes: &[ArrowType],
    schema: &Arc<Schema>,
    tracking: bool,
) -> Result<RecordBatch> {
    let rows = g.rows;
    // a slice of the plan: only the group's rows at positions `[begin, end)` are read from its
    // data files (the row groups and pages holding them, `kv::reader::file_rows`), its `.blob`
    // columns cut to them
    let (begin, end) = match g.part {
        None => (0, rows),
        Some((b, e)) if b <= e && e <= rows => (b, e),
        Some((b, e)) => {
            return Err(Error::Internal(format!(
                "positions {b}..{e} of the {rows} rows of data-evolution file '{}'",
                g.newest
            )))
        }
    };
    let n = end - begin;
    let mut cols: Vec<Option<ArrayRef>> = vec![None; dtypes.len()];
    for part in g.parts {
        let batches: Vec<RecordBatch> = file_rows(
            part.path.clone(),
            &part.meta,
            &part.plan,
            true,
            (begin as u64, end as u64),
        )
        .collect::<Result<_>>()?;
        let b = arrow_select::concat::concat_batches(&part.plan.schema, &batches)?;
        if b.num_rows() != n {
            return Err(Error::corrupt(
                part.path,
                format!(
                    "{} rows read at positions {begin}..{end}, the data-evolution group of file \
                     '{}' has {rows}",
                    b.num_rows(),
                    g.newest
                ),
            ));
        }
        for (j, &k) in part.mine.iter().enumerate() {
            cols[k] = Some(b.column(part.plan.needed_at[j]).clone());
        }
    }
    for part in &g.blobs {
        cols[part.k] = Some(read_blobs(part)?.slice(begin, n));
    }
    let mut arrays: Vec<ArrayRef> = cols
        .into_iter()
        .zip(dtypes)
        .map(|(c, t)| c.unwrap_or_else(|| new_null_array(t, n)))
        .collect();
    if tracking {
        let first = g
            .first_row_id
            .ok_or_else(|| super::row_tracking::missing_first_row_id(&g.newest))?;
        let ids: ArrayRef = Arc::new(Int64Array::from_iter_values(
            first + begin as i64..first + end as i64,
        ));
        arrays.push(ids);
        arrays.push(Arc::new(Int64Array::from_value(g.sequence, n)));
    }
    let mut batch = RecordBatch::try_new_with_options(
        schema.clone(),
        arrays,
        &RecordBatchOptions::new().with_row_count(Some(n)),
    )?;
    // deleted rows dropped by their positions in the group
    for (file, df) in &g.deletions {
        let dv = read_deletion_vector(&g.root, df, file, rows as i64)?;
        batch = drop_deleted(batch, begin as u64, &dv)?;
    }
    Ok(batch)
}

#[cfg(test)]
mod tests {
    use super::{held_ids, row_id_groups};
    use crate::error::Error;
    use crate::read::evolution::SchemaCache;
    use crate::spec::manifest::DataFileMeta;
    use crate::spec::manifest::SimpleStats;
    use crate::spec::schema::TableSchema;

    fn file(name: &str, first: Option<i64>, rows: i64, seq: i64) -> DataFileMeta {
        DataFileMeta {
            file_name: name.to_string(),
            file_size: 10,
            row_count: rows,
            min_key: vec![],
            max_key: vec![],
            key_stats: SimpleStats::empty(),
            value_stats: SimpleStats::empty(),
            min_sequence_number: seq,
            max_sequence_number: seq,
            schema_id: 0,
            level: 0,
            extra_files: vec![],
            creation_time: None,
            delete_row_count: Some(0),
            embedded_index: None,
            file_source: Some(0),
            value_stats_cols: None,
            external_path: None,
            first_row_id: first,
            write_cols: None,
            write_cols_sequences: None,
        }
    }

    fn names(g: &[Vec<DataFileMeta>]) -> Vec<Vec<&str>> {
        g.iter()
            .map(|g| g.iter().map(|f| f.file_name.as_str()).collect())
            .collect()
    }

    #[test]
    fn files_group_by_first_row_id_newest_first() {
        let files = vec![
            file("b", Some(3), 2, 2),
            file("a", Some(0), 3, 1),
            file("a2", Some(0), 3, 4),
            file("n", None, 5, 1),
            file("a1", Some(0), 3, 3),
        ];
        let g = row_id_groups("t", &files).unwrap();
        assert_eq!(names(&g), vec![vec!["n"], vec!["a2", "a1", "a"], vec!["b"]]);
    }

    #[test]
    fn blob_files_join_the_group_whose_rows_they_hold() {
        let files = vec![
            file("x.blob", Some(3), 1, 3),
            file("a.parquet", Some(0), 4, 1),
            file("w.blob", Some(0), 3, 2),
            file("b.parquet", Some(4), 2, 4),
            file("y.blob", Some(4), 2, 5),
        ];
        let g = row_id_groups("t", &files).unwrap();
        assert_eq!(
            names(&g),
            vec![
                vec!["a.parquet", "x.blob", "w.blob"],
                vec!["b.parquet", "y.blob"]
            ]
        );
        // a blob file straddling two data files, or without a row id, is refused
        for bad in [file("z.blob", Some(3), 2, 6), file("z.blob", None, 1, 6)] {
            let mut fs = files.clone();
            fs.push(bad);
            let e = row_id_groups("t", &fs).unwrap_err();
            assert!(matches!(e, Error::Unsupported { .. }), "{e}");
            assert!(e.to_string().contains("z.blob"), "{e}");
        }
    }

    #[test]
    fn unequal_or_overlapping_ranges_are_refused() {
        let e = row_id_groups("t", &[file("a", Some(0), 3, 1), file("b", Some(0), 2, 2)])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("different row counts") && e.contains("'b'"),
            "{e}"
        );
        let e = row_id_groups("t", &[file("a", Some(0), 3, 1), file("c", Some(2), 2, 2)])
            .unwrap_err()
            .to_string();
        assert!(e.contains("overlaps file 'a'") && e.contains("'c'"), "{e}");
    }

    #[test]
    fn write_cols_resolve_by_the_files_schema_and_an_unknown_name_is_corrupt() {
        let schema = TableSchema::from_json(&serde_json::json!({"version": 3, "id": 0, "fields": [
            {"id": 0, "name": "id", "type": "BIGINT"},
            {"id": 1, "name": "a", "type": "STRING"},
            {"id": 2, "name": "b", "type": "INT"}]}))
        .unwrap();
        let dir = std::path::Path::new("/wh/db.db/t/bucket-0");
        let schemas = SchemaCache::new("/wh/db.db/t".into(), &schema);
        let mut f = file("data-1.parquet", Some(0), 3, 2);
        assert_eq!(held_ids(&schemas, dir, &f).unwrap().len(), 3);
        f.write_cols = Some(vec!["b".into(), "_ROW_ID".into()]);
        assert_eq!(
            held_ids(&schemas, dir, &f)
                .unwrap()
                .into_iter()
                .collect::<Vec<_>>(),
            vec![2]
        );
        f.write_cols = Some(vec!["b".into(), "c".into()]);
        let e = held_ids(&schemas, dir, &f).unwrap_err().to_string();
        assert!(e.contains("data-1.parquet") && e.contains("'c'"), "{e}");
    }
}
