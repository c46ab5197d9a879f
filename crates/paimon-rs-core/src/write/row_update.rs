//! Updates of existing rows of a data-evolution table by `_ROW_ID` (pypaimon's
//! `TableUpdate.update_by_arrow_with_row_id`, Java's data-evolution `MERGE INTO` files):
//! paimon-behaviour.md, "Row tracking and data evolution".
//!
//! The rows of a data-evolution table live in file groups: the files sharing a `first_row_id`
//! cover the rows `[first_row_id, first_row_id + row_count)`, each holding some columns
//! (`write_cols`). An update of columns `C` of some rows of a group writes one new file of the
//! group's whole range holding only `C` (`write_cols` = `C`, `first_row_id` = the group's),
//! the updated rows' new values and the other rows' current ones, as pypaimon writes it. The
//! commit stamps it with the snapshot's id as its sequence number
//! (`commit/row_tracking.rs`), so a read merging the group takes `C` from it, the newest
//! file holding them. The caller reads the current values ([`row_id_groups`] tells which rows
//! a group covers) and hands over the merged columns; [`write_row_id_update`] writes the file.

use std::collections::BTreeMap;

use std::sync::Arc;

use arrow_array::{new_null_array, RecordBatch};
use arrow_schema::{Field, Schema};

use crate::commit::{CommitMessage, DataIncrement};
use crate::error::{Error, Result};
use crate::io::blob_nested::is_blob_file_type;
use crate::kv::{file_context, FileSource};
use crate::spec::manifest::{DataFileMeta, ManifestEntry};
use crate::table::FileStoreTable;
use crate::write::blob_write::BlobSidecars;
use crate::write::rolling::RollingFileWriter;

/// One file group of a data-evolution table: the rows `[first_row_id, first_row_id +
/// row_count)` of bucket `bucket` of a partition (its serialized row).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowIdGroup {
    pub first_row_id: i64,
    pub row_count: i64,
    pub partition: Vec<u8>,
    pub bucket: i32,
    pub total_buckets: i32,
    /// The BLOB columns some live `.blob` file of the group holds (`write_cols`): an update of
    /// one of them writes placeholders for the rows it leaves (they fall back to those files).
    pub blob_cols: Vec<String>,
    /// The live `.blob` files of the group: (column, first row id, row count, max sequence
    /// number); an update's `.blob` file must outrank those it overlaps (see
    /// [`write_blob_column`]).
    pub blob_files: Vec<(String, i64, i64, i64)>,
}

fn is_blob(f: &DataFileMeta) -> bool {
    f.file_name.ends_with(".blob")
}

fn check_table(table: &FileStoreTable) -> Result<()> {
    if !(table.options.row_tracking()? && table.options.data_evolution()?) {
        return Err(Error::unsupported(format!(
            "updating rows by _ROW_ID of table '{}': only data-evolution tables \
             ('row-tracking.enabled' and 'data-evolution.enabled') keep a row's other columns \
             when some are rewritten",
            table.name
        )));
    }
    table.check_writable()
}

/// The file groups of `entries` (the live files of a snapshot), ordered by `first_row_id`.
/// `.blob` files (which cover parts of their group's range) do not define a group.
fn groups_of(table: &str, entries: &[ManifestEntry]) -> Result<Vec<RowIdGroup>> {
    let mut groups: BTreeMap<i64, RowIdGroup> = BTreeMap::new();
    for e in entries.iter().filter(|e| !is_blob(&e.file)) {
        let Some(first) = e.file.first_row_id else {
            return Err(Error::Internal(format!(
                "data file {} of row-tracking table '{table}' has no first_row_id",
                e.file.file_name
            )));
        };
        let g = groups.entry(first).or_insert_with(|| RowIdGroup {
            first_row_id: first,
            row_count: e.file.row_count,
            partition: e.partition.clone(),
            bucket: e.bucket,
            total_buckets: e.total_buckets,
            blob_cols: vec![],
            blob_files: vec![],
        });
        if g.row_count != e.file.row_count || g.partition != e.partition || g.bucket != e.bucket {
            return Err(Error::unsupported(format!(
                "the files of table '{table}' with first_row_id {first} cover different rows \
                 ({} rows vs {} of {}): updating rows of such a group is not implemented",
                g.row_count, e.file.row_count, e.file.file_name
            )));
        }
    }
    for e in entries.iter().filter(|e| is_blob(&e.file)) {
        let Some(first) = e.file.first_row_id else {
            continue;
        };
        if let Some((_, g)) = groups.range_mut(..=first).next_back() {
            if first < g.first_row_id + g.row_count {
                for c in e.file.write_cols.iter().flatten() {
                    if !g.blob_cols.contains(c) {
                        g.blob_cols.push(c.clone());
                    }
                    g.blob_files.push((
                        c.clone(),
                        first,
                        e.file.row_count,
                        e.file.max_sequence_number,
                    ));
                }
            }
        }
    }
    let out: Vec<RowIdGroup> = groups.into_values().collect();
    for w in out.windows(2) {
        if w[0].first_row_id + w[0].row_count > w[1].first_row_id {
            return Err(Error::unsupported(format!(
                "the file groups of table '{table}' at first_row_id {} and {} overlap: \
                 updating their rows is not implemented",
                w[0].first_row_id, w[1].first_row_id
            )));
        }
    }
    Ok(out)
}

/// The groups of the last snapshot asked for, by its table's metadata path and its manifest
/// lists (names unique to the snapshot, so a snapshot id reused after a rollback does not hit):
/// an update asks once per touched group, each a scan of every live manifest entry otherwise.
type GroupsKey = (std::path::PathBuf, i64, String, String);
static LAST_GROUPS: std::sync::Mutex<Option<(GroupsKey, std::sync::Arc<Vec<RowIdGroup>>)>> =
    std::sync::Mutex::new(None);

/// The file groups of snapshot `snapshot_id` of `table`, ordered by `first_row_id`.
pub fn row_id_groups(table: &FileStoreTable, snapshot_id: i64) -> Result<Vec<RowIdGroup>> {
    Ok(cached_groups(table, snapshot_id)?.as_ref().clone())
}

fn cached_groups(
    table: &FileStoreTable,
    snapshot_id: i64,
) -> Result<std::sync::Arc<Vec<RowIdGroup>>> {
    check_table(table)?;
    let snapshot = table.snapshot_manager().snapshot(snapshot_id)?;
    let key: GroupsKey = (
        table.meta_path(),
        snapshot.id,
        snapshot.base_manifest_list.clone(),
        snapshot.delta_manifest_list.clone(),
    );
    if let Ok(last) = LAST_GROUPS.lock() {
        if let Some((k, g)) = last.as_ref() {
            if *k == key {
                return Ok(g.clone());
            }
        }
    }
    let live = crate::table::live::live_entries(table, &snapshot)?;
    let groups = std::sync::Arc::new(groups_of(&table.name, &live)?);
    if let Ok(mut last) = LAST_GROUPS.lock() {
        *last = Some((key, groups.clone()));
    }
    Ok(groups)
}

/// Writes the update file of the group at `first_row_id` of snapshot `snapshot_id`: `data`
/// holds the group's rows in `_ROW_ID` order (as many as the group covers), one column per
/// updated column (table columns, none a partition key). `updated`: the positions in the
/// group of the rows the update sets, needed when it sets a BLOB column (whose values at the
/// other positions are not read: see [`write_blob_column`]). Returns its commit message
/// (nothing is committed; the files are removed again on error).
pub fn write_row_id_update(
    table: &FileStoreTable,
    snapshot_id: i64,
    first_row_id: i64,
    data: &RecordBatch,
    updated: Option<&[usize]>,
) -> Result<CommitMessage> {
    let groups = cached_groups(table, snapshot_id)?;
    let group = groups
        .binary_search_by_key(&first_row_id, |g| g.first_row_id)
        .ok()
        .and_then(|i| groups.get(i))
        .ok_or_else(|| {
            Error::invalid(format!(
                "table '{}' has no file group at first_row_id {first_row_id} in snapshot \
                 {snapshot_id}",
                table.name
            ))
        })?;
    write_group(table, snapshot_id, group, data, updated)
}

fn write_group(
    table: &FileStoreTable,
    snapshot_id: i64,
    group: &RowIdGroup,
    data: &RecordBatch,
    updated: Option<&[usize]>,
) -> Result<CommitMessage> {
    let cols: Vec<String> = data
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    if cols.is_empty() {
        return Err(Error::invalid(
            "an update by _ROW_ID names no column to update",
        ));
    }
    for c in &cols {
        if c.starts_with('_') && table.schema.field(c).is_none() {
            return Err(Error::invalid(format!(
                "system column '{c}' of table '{}' cannot be updated",
                table.name
            )));
        }
        if table.partition_keys().contains(c) {
            return Err(Error::unsupported(format!(
                "updating partition column '{c}' of table '{}' by _ROW_ID: the row would stay \
                 in its old partition",
                table.name
            )));
        }
    }
    if data.num_rows() as i64 != group.row_count {
        return Err(Error::invalid(format!(
            "the update of the file group at first_row_id {} of table '{}' has {} rows; the \
             group covers {}",
            group.first_row_id,
            table.name,
            data.num_rows(),
            group.row_count
        )));
    }
    // the table as the file sees it: the updated columns only (in the table's order), the
    // BLOB columns (`.blob` files of their own) apart; `blob-descriptor-field` /
    // `blob-view-field` columns live in the data file and are updated there
    let mut sub = table.clone();
    sub.schema.fields.retain(|f| cols.contains(&f.name));
    let blob_cols: Vec<String> = sub
        .schema
        .fields
        .iter()
        .filter(|f| {
            is_blob_file_type(&f.data_type)
                && !crate::options::is_inline_blob(&table.options.raw, &f.name)
        })
        .map(|f| f.name.clone())
        .collect();
    if let Some(f) = sub
        .schema
        .fields
        .iter()
        .find(|f| f.data_type.contains_blob() && !is_blob_file_type(&f.data_type))
    {
        return Err(Error::unsupported(format!(
            "updating column '{}' ({}) of table '{}' by _ROW_ID: a BLOB nested in it is kept \
             in no .blob file",
            f.name,
            f.data_type.sql_string(),
            table.name
        )));
    }
    let mut blob_files: Vec<DataFileMeta> = vec![];
    if !blob_cols.is_empty() {
        let Some(pos) = updated else {
            return Err(Error::invalid(format!(
                "updating BLOB columns {blob_cols:?} of table '{}' by _ROW_ID needs the \
                 positions of the updated rows",
                table.name
            )));
        };
        let dir = group_dir(table, group)?;
        for name in &blob_cols {
            let column = data
                .column_by_name(name)
                .ok_or_else(|| Error::Internal(format!("update column '{name}'")))?;
            match write_blob_column(table, group, &dir, name, column, pos) {
                Ok(files) => blob_files.extend(files),
                Err(e) => {
                    for f in &blob_files {
                        let _ = crate::fileindex::remove_data_file(&dir, f);
                    }
                    return Err(e);
                }
            }
        }
        sub.schema.fields.retain(|f| !blob_cols.contains(&f.name));
        if sub.schema.fields.is_empty() {
            return Ok(message(group, snapshot_id, blob_files));
        }
    }
    let data = &data.project(
        &sub.schema
            .fields
            .iter()
            .map(|f| data.schema().index_of(&f.name))
            .collect::<std::result::Result<Vec<usize>, _>>()?,
    )?;
    let written: Vec<String> = sub.schema.fields.iter().map(|f| f.name.clone()).collect();
    let mut ctx = file_context(&sub, 0, FileSource::Append)?;
    let aligned = crate::write::input::align_batch(&sub.schema, &ctx.file_schema, data, None, 0)?;
    ctx.dir = group_dir(table, group)?;
    let dir = ctx.dir.clone();
    let drop_blobs = |blob_files: &[DataFileMeta]| {
        for f in blob_files {
            let _ = crate::fileindex::remove_data_file(&dir, f);
        }
    };
    // `blob-descriptor-field` / `blob-view-field` values are checked as on write
    if let Err(e) = crate::write::blob_write::check_inline_blob_values(
        &table.options.raw,
        &sub.schema.fields,
        &aligned.batch,
    ) {
        drop_blobs(&blob_files);
        return Err(e.with_table(&table.name));
    }
    // one file of the group's range, as pypaimon (rolling disabled)
    // (the writer compares sizes as i64: u64::MAX would read as -1 and roll every chunk)
    ctx.target_size = i64::MAX as u64;
    ctx.target_rows = i64::MAX as u64;
    ctx.value_stats_names = Some(
        ctx.value_stats_cols
            .iter()
            .map(|&i| written[i].clone())
            .collect(),
    );
    let mut writer = RollingFileWriter::new(ctx, 0);
    let mut files = match writer.write(&aligned.batch).and_then(|()| writer.close()) {
        Ok(files) => files,
        Err(e) => {
            drop_blobs(&blob_files);
            return Err(e);
        }
    };
    if files.len() != 1 {
        drop_blobs(&files);
        drop_blobs(&blob_files);
        return Err(Error::Internal(format!(
            "the update of the file group at first_row_id {} of table '{}' wrote {} files",
            group.first_row_id,
            table.name,
            files.len()
        )));
    }
    for f in &mut files {
        f.first_row_id = Some(group.first_row_id);
        f.write_cols = Some(written.clone());
        // stamped with the commit's snapshot id (commit/row_tracking.rs)
        f.min_sequence_number = 0;
        f.max_sequence_number = 0;
    }
    files.extend(blob_files);
    Ok(message(group, snapshot_id, files))
}

/// The bucket directory of `group`.
fn group_dir(table: &FileStoreTable, group: &RowIdGroup) -> Result<std::path::PathBuf> {
    let types = table.partition_types()?;
    let values = crate::spec::binary_row::deserialize_row(&types, &group.partition)?;
    let o = &table.options;
    let pp = crate::spec::partition::partition_path(
        table.partition_keys(),
        &types,
        &values,
        &o.partition_default_name,
        o.partition_legacy_name,
    )?;
    Ok(table.bucket_dir(&pp, group.bucket))
}

/// The commit message of the update files `files` of `group`, read from `snapshot_id`.
fn message(group: &RowIdGroup, snapshot_id: i64, files: Vec<DataFileMeta>) -> CommitMessage {
    CommitMessage {
        partition: group.partition.clone(),
        bucket: group.bucket,
        total_buckets: group.total_buckets,
        data_increment: DataIncrement {
            new_files: files,
            ..Default::default()
        },
        compact_increment: Default::default(),
        // the snapshot the rows were read from: the commit refuses the update if a commit
        // since wrote the same columns of the same rows (commit/row_id_check.rs)
        restored_snapshot: Some(Some(snapshot_id)),
    }
}

/// Writes the `.blob` files of an update of BLOB column `name` (a BLOB, `ARRAY<BLOB>` or
/// `MAP<X, BLOB>` column) of `group`: `column` holds the new values at the positions
/// `updated` (its other rows are not read). As pypaimon 2.1.0 writes them
/// (`_merge_update_with_original`): when a live `.blob` file of the group holds the column,
/// the files cover the rows from the group's first to the last updated one, a placeholder at
/// each row left as it was (the read falls back to the older files,
/// read/data_evolution.rs); else (no older value to fall back to) they cover the whole group,
/// a null at each row left. The files roll at `blob.target-file-size`; each takes its rows'
/// ids from the group's first on, and sequence 0 (stamped with the snapshot id at commit).
fn write_blob_column(
    table: &FileStoreTable,
    group: &RowIdGroup,
    dir: &std::path::Path,
    name: &str,
    column: &arrow_array::ArrayRef,
    updated: &[usize],
) -> Result<Vec<DataFileMeta>> {
    let n = group.row_count as usize;
    let mut set = vec![false; n];
    for &p in updated {
        *set.get_mut(p).ok_or_else(|| {
            Error::invalid(format!(
                "updated position {p} of the group at first_row_id {} ({n} rows)",
                group.first_row_id
            ))
        })? = true;
    }
    let nullable = table
        .schema
        .fields
        .iter()
        .find(|f| f.name == name)
        .is_none_or(|f| f.data_type.nullable);
    if let Some(p) = updated
        .iter()
        .find(|&&p| !nullable && p < column.len() && column.is_null(p))
    {
        return Err(Error::schema(format!(
            "update by _ROW_ID: null for the NOT NULL BLOB column '{name}' of table '{}' \
             (row id {})",
            table.name,
            group.first_row_id + *p as i64
        )));
    }
    let baseline = group.blob_cols.iter().any(|c| c == name);
    let len = match baseline {
        true => updated.iter().max().map_or(0, |&p| p + 1),
        false => n,
    };
    if len == 0 {
        return Ok(vec![]);
    }
    let mut bsub = table.clone();
    bsub.schema.fields.retain(|f| f.name == name);
    let ctx = file_context(&bsub, 0, FileSource::Append)?;
    let spec = ctx
        .blob
        .clone()
        .ok_or_else(|| Error::Internal(format!("BLOB column '{name}' without a .blob spec")))?;
    let one = RecordBatch::try_new(
        Arc::new(Schema::new(vec![Field::new(
            name,
            column.data_type().clone(),
            true,
        )])),
        vec![column.clone()],
    )?;
    // (the values as given: `.blob` records take any binary array, lists and maps of them)
    let mut sidecars = BlobSidecars::new(spec, dir.to_path_buf(), ctx.external.clone());
    let mut write = || -> Result<Vec<DataFileMeta>> {
        let mut at = 0;
        while at < len {
            let end = (at..len).find(|&p| set[p] != set[at]).unwrap_or(len);
            if set[at] {
                sidecars.write(&one.slice(at, end - at))?;
            } else if baseline {
                sidecars.write_placeholders(0, end - at)?;
            } else {
                let nulls = new_null_array(column.data_type(), end - at);
                sidecars.write(&RecordBatch::try_new(one.schema(), vec![nulls])?)?;
            }
            at = end;
        }
        sidecars.finish_data_file(len as i64, (0, 0))
    };
    let mut files = match write() {
        Ok(files) => files,
        Err(e) => {
            for p in sidecars.written_paths() {
                let _ = std::fs::remove_file(p);
            }
            return Err(e);
        }
    };
    sidecars.hand_over();
    // a read takes a row from the `.blob` file with the highest max sequence number; pypaimon
    // stamps the rolled `.blob` files of a write with per-row sequence numbers (e.g. 6..11,
    // 12..17), above the snapshot id the commit gives an update (commit/row_tracking.rs): so
    // ours asks for 1 + the highest of the live files of the column it overlaps (a concurrent
    // `.blob` file of the column over these rows is a conflict: commit/row_id_check.rs)
    let end = group.first_row_id + len as i64;
    let outrank = group
        .blob_files
        .iter()
        .filter(|(c, first, rows, _)| {
            c == name && *first < end && group.first_row_id < first + rows
        })
        .map(|&(_, _, _, seq)| seq.saturating_add(1))
        .max()
        .unwrap_or(0);
    let mut next = group.first_row_id;
    for f in &mut files {
        f.first_row_id = Some(next);
        next += f.row_count;
        f.min_sequence_number = 0;
        f.max_sequence_number = outrank;
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::manifest::FileKind;

    fn entry(name: &str, first: i64, rows: i64) -> ManifestEntry {
        let mut file = crate::compact::interval::tests::file(name, 0, 0, 1, 0);
        file.row_count = rows;
        file.first_row_id = Some(first);
        ManifestEntry {
            kind: FileKind::Add,
            partition: vec![],
            bucket: 0,
            total_buckets: -1,
            file,
        }
    }

    #[test]
    fn groups_are_ordered_and_blob_files_ignored() -> Result<()> {
        let live = vec![
            entry("c", 5, 2),
            entry("a", 0, 3),
            entry("a2", 0, 3),
            entry("x.blob", 0, 1),
            entry("b", 3, 2),
        ];
        let g = groups_of("t", &live)?;
        let ranges: Vec<(i64, i64)> = g.iter().map(|g| (g.first_row_id, g.row_count)).collect();
        assert_eq!(ranges, vec![(0, 3), (3, 2), (5, 2)]);
        Ok(())
    }

    #[test]
    fn groups_whose_files_differ_or_overlap_are_refused() {
        let differ = vec![entry("a", 0, 3), entry("b", 0, 2)];
        assert!(matches!(
            groups_of("t", &differ),
            Err(Error::Unsupported { .. })
        ));
        let overlap = vec![entry("a", 0, 3), entry("b", 2, 2)];
        assert!(matches!(
            groups_of("t", &overlap),
            Err(Error::Unsupported { .. })
        ));
    }
}
