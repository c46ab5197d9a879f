//! Row tracking at commit (`row-tracking.enabled`, append tables with `bucket = -1`):
//! paimon-behaviour.md, "Row tracking". Java's `RowTrackingCommitUtils.assignRowTracking`,
//! called by `FileStoreCommitImpl.tryCommitOnce` on every attempt:
//!
//! - sequence numbers: Java stamps a new file whose `min_sequence_number` is 0 with the new
//!   snapshot's id as both (the first file of a Java writer of an unaware-bucket table, which
//!   counts from 0, and every file of pypaimon 2.1.0). `_SEQUENCE_NUMBER` of a row is its
//!   file's max sequence number, so a row's is the snapshot that added it. paimon_rs's append
//!   writer counts on from the bucket's restored files, so every new file of a row-tracking
//!   commit is stamped, whatever its counter (the rows are new either way);
//! - row ids: each new file written by a write (`file_source` APPEND, no `first_row_id` yet)
//!   gets `first_row_id` = the next free id, starting at the latest snapshot's `nextRowId`
//!   (0 without one), in the commit's file order grouped by partition
//!   (`row-tracking.partition-group-on-commit`, default true); the id advances by the file's row count,
//!   and the snapshot's `nextRowId` is where it ends. A retry starts again from the newer
//!   latest snapshot's `nextRowId`, so ids stay unique when commits race.
//!
//! - files whose `first_row_id` is set (data evolution: a file of some columns of rows that
//!   exist, write/row_update.rs; pypaimon's `new_files[i].first_row_id = ...` after a
//!   `with_write_type` write): the file keeps its ids, whatever they are (Java's
//!   `assignRowTrackingMeta`: ids from `nextRowId` on are the caller's, and `nextRowId` does
//!   not move for them), and gets the snapshot's id as its sequence numbers (Java's
//!   `assignSnapshotId`: its min sequence number is 0), so reads take its columns over the
//!   older files' of the same rows. [`check_updated_groups`] refuses one below `nextRowId`
//!   that is not exactly a live group.
//!
//! Files a compaction or a rewrite adds (`file_source` COMPACT) keep the ids Java writes into
//! them (`_ROW_ID` stored in the file); paimon_rs writes no such files, so a commit adding one
//! to a row-tracking table is refused ([`assign`]).

use crate::error::{Error, Result};
use crate::kv::FileSource;

use crate::spec::manifest::{DataFileMeta, FileKind, ManifestEntry, ManifestFileMeta};
use crate::spec::snapshot::Snapshot;
use crate::table::FileStoreTable;

/// Stamps the ADD entries of `delta` (a commit attempt's changes) as the commit of snapshot
/// `snapshot_id` on a table whose latest snapshot's `nextRowId` is `next_row_id`; returns the
/// new snapshot's `nextRowId`.
pub(super) fn assign(
    table: &str,
    delta: &mut [ManifestEntry],
    snapshot_id: i64,
    next_row_id: i64,
) -> Result<i64> {
    let mut next = next_row_id;
    // `row-tracking.partition-group-on-commit` (default true, the only way paimon_rs does it):
    // a partition's files numbered together, partitions in the order they first appear
    let mut order: Vec<usize> = (0..delta.len())
        .filter(|&i| delta[i].kind == FileKind::Add)
        .collect();
    let mut first_seen: std::collections::HashMap<&[u8], usize> = Default::default();
    for &i in &order {
        let n = first_seen.len();
        first_seen.entry(delta[i].partition.as_slice()).or_insert(n);
    }
    let rank: Vec<usize> = order
        .iter()
        .map(|&i| first_seen[delta[i].partition.as_slice()])
        .collect();
    let mut by_rank: Vec<(usize, usize)> = rank.into_iter().zip(order).collect();
    by_rank.sort_by_key(|&(r, _)| r); // stable: files of a partition keep their order
    order = by_rank.into_iter().map(|(_, i)| i).collect();
    // `.blob` files (Java's `assignRowTrackingMeta`): a BLOB column's files take the row ids
    // of the data file before them, from its first, in order (write/blob_write.rs)
    let mut blob_default = next;
    let mut blob_starts: std::collections::HashMap<String, i64> = Default::default();
    for i in order {
        let f = &mut delta[i].file;
        let holds_row_id = f
            .write_cols
            .as_ref()
            .is_some_and(|c| c.iter().any(|n| n == "_ROW_ID"));
        if f.file_source != Some(FileSource::Append.as_i32()) || holds_row_id {
            return Err(Error::unsupported(format!(
                "committing file '{}' (written by a compaction or a rewrite) to the row-tracking \
                 table '{table}': its rows would lose their _ROW_ID (Java stores _ROW_ID in such \
                 files; paimon_rs does not)",
                f.file_name
            )));
        }
        if let Some(first) = f.first_row_id {
            check_update(table, f, first)?;
        }
        // an update's `.blob` file keeps the higher sequence its writer asked for, to outrank
        // the older `.blob` files of its rows (write/row_update.rs `write_blob_column`)
        let outrank = match f.first_row_id.is_some() && f.file_name.ends_with(".blob") {
            true => f.max_sequence_number,
            false => 0,
        };
        f.min_sequence_number = snapshot_id;
        f.max_sequence_number = snapshot_id.max(outrank);
        if f.first_row_id.is_some() {
            continue; // an update keeps its rows' ids
        }
        if f.file_name.ends_with(".blob") {
            let column = f
                .write_cols
                .as_ref()
                .and_then(|c| c.first())
                .cloned()
                .unwrap_or_default();
            let start = *blob_starts.get(&column).unwrap_or(&blob_default);
            if start + f.row_count > next {
                return Err(Error::Internal(format!(
                    "committing '{}' to '{table}': its {} rows of BLOB column '{column}' \
                     from row id {start} go past the data files' ({next})",
                    f.file_name, f.row_count
                )));
            }
            f.first_row_id = Some(start);
            blob_starts.insert(column, start + f.row_count);
            continue;
        }
        blob_default = next;
        blob_starts.clear();
        f.first_row_id = Some(next);
        next = next.checked_add(f.row_count).ok_or_else(|| {
            Error::Internal(format!(
                "row ids of table '{table}' overflow at {next} + {}",
                f.row_count
            ))
        })?;
    }
    Ok(next)
}

/// Java's `DataEvolutionConflictDetection.checkNonCompactRowIdExistence` (pypaimon's
/// `check_row_id_existence`): each update file of `delta` (an ADD whose `first_row_id` its
/// writer or caller set) that starts below the latest snapshot's `nextRowId` must cover
/// exactly the row-id range of a file group live in the `latest` snapshot (the live data files
/// of its partition and bucket, overlapping ranges merged), else an overwrite, a compaction or
/// a rollback replaced those rows since the update was written (or the caller named rows that
/// are not a group), and committing it would bring back values of rows that are gone or leave
/// a group the reader cannot merge (a conflict, not retried). A file from `nextRowId` on holds
/// rows that are not numbered yet: Java commits it as it is (its ids are the caller's; the
/// table's `nextRowId` does not move, see [`assign`]). Called before [`assign`] numbers the
/// new files.
pub(super) fn check_updated_groups(
    table: &FileStoreTable,
    delta: &[ManifestEntry],
    latest: Option<&Snapshot>,
) -> Result<()> {
    let updates: Vec<&ManifestEntry> = delta
        .iter()
        .filter(|e| e.kind == FileKind::Add && e.file.first_row_id.is_some())
        .collect();
    if updates.is_empty() {
        return Ok(());
    }
    for e in &updates {
        check_update(&table.name, &e.file, e.file.first_row_id.unwrap_or(0))?;
    }
    // two updates of one column of one group in a commit: each file holds the whole group's
    // values of the column, with the same sequence number: which one a read takes is undefined
    type Group<'a> = (&'a [u8], i32, Option<i64>);
    let mut seen: std::collections::HashMap<Group<'_>, Vec<&str>> = Default::default();
    for e in updates
        .iter()
        .filter(|e| !e.file.file_name.ends_with(".blob"))
    {
        let cols: Vec<&str> = match &e.file.write_cols {
            Some(c) => c.iter().map(String::as_str).collect(),
            None => table
                .schema
                .fields
                .iter()
                .map(|f| f.name.as_str())
                .collect(),
        };
        let prev = seen
            .entry((e.partition.as_slice(), e.bucket, e.file.first_row_id))
            .or_default();
        if let Some(c) = cols.iter().find(|c| prev.contains(c)) {
            return Err(Error::invalid(format!(
                "table '{}': two updates of column '{c}' of the rows {:?} + {} in one \
                 commit (file '{}' and another; a read could take either); update them in one \
                 call or commit them one after the other",
                table.name, e.file.first_row_id, e.file.row_count, e.file.file_name
            )));
        }
        prev.extend(cols);
    }
    if !table.options.data_evolution()? {
        // Java commits it; a file below `nextRowId` would then be read twice under the same
        // ids, and one from `nextRowId` on too: the table's `nextRowId` does not move for it, so
        // the next append is numbered over its ids (review33b F3)
        let e = updates[0];
        return Err(Error::invalid(format!(
            "committing file '{}' with first_row_id {:?} to table '{}': only a data-evolution \
             table ('data-evolution.enabled') takes files whose row ids the caller set (here \
             they would repeat ids the table gave or will give out)",
            e.file.file_name, e.file.first_row_id, table.name
        )));
    }
    let next_row_id = latest.and_then(|s| s.next_row_id).unwrap_or(0);
    let numbered: Vec<&&ManifestEntry> = updates
        .iter()
        .filter(|e| e.file.first_row_id.is_some_and(|f| f < next_row_id))
        .collect();
    if numbered.is_empty() {
        return Ok(());
    }
    let live = match latest {
        Some(s) => crate::table::live::live_entries(table, s)?,
        None => vec![],
    };
    let groups = merged_ranges(&live);
    for e in numbered {
        let (first, rows) = (e.file.first_row_id.unwrap_or(0), e.file.row_count);
        let range = (first, first.saturating_add(rows.max(1) - 1));
        let ranges = groups
            .get(&(e.partition.as_slice(), e.bucket))
            .map_or(&[][..], Vec::as_slice);
        let ok = if e.file.file_name.ends_with(".blob") {
            // a BLOB file covers part of its data file's rows (Java's `contains`)
            ranges.iter().any(|r| r.0 <= range.0 && range.1 <= r.1)
        } else {
            ranges.contains(&range)
        };
        if !ok {
            return Err(Error::CommitConflict {
                table: table.name.clone(),
                message: format!(
                    "Row ID existence conflict: file '{}' with first_row_id {first} covers \
                     the rows {first}..{} that no live file group of the latest snapshot \
                     covers exactly (an overwrite, compaction or rollback replaced them since \
                     the update read them, or they are not one group); update the rows again",
                    e.file.file_name,
                    first.saturating_add(rows)
                ),
            });
        }
    }
    Ok(())
}

/// One data file in [`check_ranges`]: its row ids `from..=to`, its name, where it comes from.
struct Ranged<'a> {
    from: i64,
    to: i64,
    name: &'a str,
    /// `None`: live in the latest snapshot; `Some(true)`: of the commit, ids set by the caller;
    /// `Some(false)`: of the commit, numbered by [`assign`].
    ours: Option<bool>,
}

/// The row-id ranges of a data-evolution table's data files must be equal or disjoint across
/// the whole table (row ids are the table's, not a partition's: Java checks all entries together,
/// `checkDataFileRowIdRangeConflicts`, and a reader's `_ROW_ID` filter or slice would take a row
/// twice): a read merges the files of one range column by column and refuses
/// files that overlap without the same range or start together with different row counts
/// (read/data_evolution.rs, as Java's `DataEvolutionSplitRead`). Java's
/// `DataEvolutionConflictDetection.checkDataFileRowIdRangeConflicts` refuses such a layout only
/// when its commit runs a row-id check (or compacts); ids the caller set from `nextRowId` on
/// are otherwise committed as they are, and the table then fails every read. Here every commit
/// of a data-evolution table checks, after [`assign`] numbered the new files, the ranges of its
/// ADDs (not `.blob` files, which cover part of their data file's rows) against each other and
/// against the live files they meet (read from the manifests of `previous` whose row-id
/// range meets one of them; the files this commit deletes left out). `caller_set[i]`: whether
/// `delta[i]`'s ids were set by its writer. A group of overlapping ranges that holds a file of
/// the commit and ranges that differ is a conflict naming both files.
pub(super) fn check_ranges(
    table: &FileStoreTable,
    delta: &[ManifestEntry],
    caller_set: &[bool],
    previous: &[ManifestFileMeta],
) -> Result<()> {
    if !table.options.data_evolution()? {
        return Ok(());
    }
    let mut by: DataFiles<'_> = Default::default();
    // the `.blob` files of the commit, and the live ones they meet, with their column
    let mut blobs: Vec<Blob<'_>> = vec![];
    for (i, e) in delta.iter().enumerate() {
        if e.kind != FileKind::Add {
            continue;
        }
        let Some(from) = e.file.first_row_id else {
            continue;
        };
        let r = Ranged {
            from,
            to: from.saturating_add(e.file.row_count.max(1) - 1),
            name: &e.file.file_name,
            ours: Some(caller_set.get(i).copied().unwrap_or(false)),
        };
        place(e, r, &mut by, &mut blobs);
    }
    if by.is_empty() && blobs.is_empty() {
        return Ok(());
    }
    let mut spans: Vec<(i64, i64)> = by
        .iter()
        .map(|r| (r.from, r.to))
        .chain(blobs.iter().map(|b| (b.r.from, b.r.to)))
        .collect();
    spans.sort_unstable();
    let meets = |from: i64, to: i64| {
        // a span of the commit that meets from..=to (sorted by start)
        spans.iter().take_while(|s| s.0 <= to).any(|s| s.1 >= from)
    };
    let metas: Vec<ManifestFileMeta> = previous
        .iter()
        .filter(|m| match (m.min_row_id, m.max_row_id) {
            (Some(lo), Some(hi)) => meets(lo, hi),
            _ => true,
        })
        .cloned()
        .collect();
    let live = if metas.is_empty() {
        vec![]
    } else {
        crate::table::live::live_entries_of(table, metas, None)?
    };
    let deleted: std::collections::HashSet<_> = delta
        .iter()
        .filter(|e| e.kind == FileKind::Delete)
        .map(ManifestEntry::identifier)
        .collect();
    for e in &live {
        let Some(from) = e.file.first_row_id else {
            continue;
        };
        let to = from.saturating_add(e.file.row_count.max(1) - 1);
        if !meets(from, to) || deleted.contains(&e.identifier()) {
            continue;
        }
        let r = Ranged {
            from,
            to,
            name: &e.file.file_name,
            ours: None,
        };
        place(e, r, &mut by, &mut blobs);
    }
    // all partitions and buckets together, as Java's
    if by.iter().any(|r| r.ours.is_some()) {
        if let Some((ours, other)) = first_conflict(&mut by) {
            return Err(range_conflict(&table.name, &by[ours], &by[other]));
        }
    }
    check_blobs(&table.name, &by, &blobs)
}

/// The data files (not `.blob` files) in [`check_ranges`], of every partition and bucket.
type DataFiles<'a> = Vec<Ranged<'a>>;

/// Puts `e` (with its range `r`) among the data files `by` or the `.blob` files `blobs`.
fn place<'a>(
    e: &'a ManifestEntry,
    r: Ranged<'a>,
    by: &mut DataFiles<'a>,
    blobs: &mut Vec<Blob<'a>>,
) {
    if e.file.file_name.ends_with(".blob") {
        blobs.push(Blob::of(e, r));
    } else {
        by.push(r);
    }
}

/// A `.blob` file in [`check_ranges`]: its partition and bucket, its BLOB column, its range.
struct Blob<'a> {
    at: (&'a [u8], i32),
    col: &'a str,
    r: Ranged<'a>,
}

impl<'a> Blob<'a> {
    fn of(e: &'a ManifestEntry, r: Ranged<'a>) -> Self {
        let col = e
            .file
            .write_cols
            .as_ref()
            .and_then(|c| c.first())
            .map_or("", String::as_str);
        Blob {
            at: (e.partition.as_slice(), e.bucket),
            col,
            r,
        }
    }
}

/// Java's `checkDedicatedFileRowIdRangeConflicts`, plus what the data-evolution reader needs:
/// each `.blob` file of the commit lies inside the row range of one data file (live or of the
/// commit), the `.blob` files of one column of a data file do not overlap and cover its rows
/// in order. The `.blob` files of an update of a BLOB column by `_ROW_ID` (ids set by their
/// writer) cover the data file's rows from its first to the last updated one only, in order,
/// and meet the live `.blob` files of their column: the read takes each row from the newest
/// file that does not hold a placeholder for it (read/data_evolution.rs). Not retryable: the
/// files themselves are laid out wrong.
fn check_blobs(table: &str, by: &DataFiles<'_>, blobs: &[Blob<'_>]) -> Result<()> {
    // the commit's `.blob` files by (data file range, column, partition, bucket)
    type Key<'a> = (i64, i64, &'a str, &'a [u8], i32, bool);
    let mut per: std::collections::BTreeMap<Key<'_>, Vec<&Ranged<'_>>> = Default::default();
    for b in blobs.iter().filter(|b| b.r.ours.is_some()) {
        let Some(d) = by
            .iter()
            .filter(|d| d.from <= b.r.from && b.r.to <= d.to)
            .min_by_key(|d| d.ours.is_none())
        else {
            return Err(Error::invalid(format!(
                "table '{table}': BLOB file '{}' with row ids {}..={} lies inside the row range \
                 of no data file (of this commit or live): a read could not join its values to \
                 rows; nothing was committed",
                b.r.name, b.r.from, b.r.to
            )));
        };
        let update = b.r.ours == Some(true);
        per.entry((d.from, d.to, b.col, b.at.0, b.at.1, update))
            .or_default()
            .push(&b.r);
    }
    for ((from, to, col, _, _, update), mut v) in per {
        v.sort_unstable_by_key(|r| (r.from, r.to));
        let mut next = from;
        for r in &v {
            if r.from < next {
                return Err(Error::invalid(format!(
                    "table '{table}': BLOB file '{}' of column '{col}' with row ids {}..={} \
                     overlaps the BLOB files before it (they end at {}): the BLOB files of a \
                     column must cover a data file's rows in order without overlap; nothing \
                     was committed",
                    r.name,
                    r.from,
                    r.to,
                    next - 1
                )));
            }
            if r.from > next {
                return Err(Error::invalid(format!(
                    "table '{table}': rows {next}..={} of the data file's rows {from}..={to} \
                     have no BLOB file of column '{col}' (the next one, '{}', starts at {}): \
                     the BLOB files of a column must cover a data file's rows in order; \
                     nothing was committed",
                    r.from - 1,
                    r.name,
                    r.from
                )));
            }
            next = r.to.saturating_add(1);
        }
        if !update && next != to.saturating_add(1) {
            return Err(Error::invalid(format!(
                "table '{table}': the BLOB files of column '{col}' cover the rows {from}..={} \
                 of a data file with rows {from}..={to}: they must cover all its rows; nothing \
                 was committed",
                next - 1
            )));
        }
    }
    Ok(())
}

/// Sorts `v` and returns a file of the commit and another file of a group of overlapping
/// ranges (Java's `mergeOverlappingRanges`) whose ranges differ, if any such group holds a
/// file of the commit.
fn first_conflict(v: &mut [Ranged<'_>]) -> Option<(usize, usize)> {
    v.sort_unstable_by_key(|r| (r.from, r.to));
    let mut start = 0;
    while start < v.len() {
        let mut end = start + 1;
        let mut to = v[start].to;
        while end < v.len() && v[end].from <= to {
            to = to.max(v[end].to);
            end += 1;
        }
        if let Some(ours) = (start..end).find(|&i| v[i].ours.is_some()) {
            let range = (v[ours].from, v[ours].to);
            if let Some(other) = (start..end).find(|&i| (v[i].from, v[i].to) != range) {
                return Some((ours, other));
            }
        }
        start = end;
    }
    None
}

fn range_conflict(table: &str, ours: &Ranged<'_>, other: &Ranged<'_>) -> Error {
    let what = |r: &Ranged<'_>| match r.ours {
        Some(true) => "of this commit, ids set by its writer",
        Some(false) => "of this commit, numbered from the table's nextRowId",
        None => "live in the latest snapshot",
    };
    let hint = if ours.ours == Some(false) || other.ours == Some(false) {
        " (files whose ids a writer set from nextRowId on do not move nextRowId, as Java's: \
         the next numbered files get the same ids and must make the same groups)"
    } else {
        ""
    };
    // the files of the commit are laid out wrong (against live files or each other): retrying
    // cannot help, so not a `CommitConflict`
    Error::invalid(format!(
        "table '{table}': file '{}' ({}) with row ids {}..={} overlaps file '{}' ({}) with row \
         ids {}..={} without the same range: a data-evolution read merges only files of the \
         same row ids and the same row count (Java's reader refuses them too), so the table \
         could not be read{hint}; nothing was committed",
        ours.name,
        what(ours),
        ours.from,
        ours.to,
        other.name,
        what(other),
        other.from,
        other.to
    ))
}

/// Row-id ranges `from..=to` by (partition, bucket).
type RangesByBucket<'a> = std::collections::HashMap<(&'a [u8], i32), Vec<(i64, i64)>>;

/// The row-id ranges `from..=to` of the live data files (not `.blob`) of each partition and
/// bucket, overlapping ranges merged (Java's `RowRangeIndex.create(ranges, false)`).
fn merged_ranges(live: &[ManifestEntry]) -> RangesByBucket<'_> {
    let mut by: RangesByBucket<'_> = Default::default();
    for e in live.iter().filter(|e| !e.file.file_name.ends_with(".blob")) {
        if let Some(f) = e.file.first_row_id {
            let to = f.saturating_add(e.file.row_count.max(1) - 1);
            by.entry((e.partition.as_slice(), e.bucket))
                .or_default()
                .push((f, to));
        }
    }
    for v in by.values_mut() {
        v.sort_unstable();
        let mut out: Vec<(i64, i64)> = Vec::with_capacity(v.len());
        for &(f, t) in v.iter() {
            match out.last_mut() {
                Some(last) if f <= last.1 => last.1 = last.1.max(t),
                _ => out.push((f, t)),
            }
        }
        *v = out;
    }
    by
}

/// A file whose `first_row_id` its writer or caller set (an update of some columns of rows
/// that exist, write/row_update.rs, or pypaimon's `new_files[i].first_row_id = ...`) keeps
/// its row ids (Java's `assignRowTrackingMeta` skips it); negative ids or a range past
/// `i64::MAX` are corrupt.
fn check_update(table: &str, f: &DataFileMeta, first: i64) -> Result<()> {
    if first < 0 || first.checked_add(f.row_count).is_none() {
        return Err(Error::invalid(format!(
            "committing file '{}' with first_row_id {first} ({} rows) to the row-tracking \
             table '{table}': row ids run from 0 to {}",
            f.file_name,
            f.row_count,
            i64::MAX
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str, rows: i64, kind: FileKind, seq: (i64, i64)) -> ManifestEntry {
        let mut file = crate::commit::message::tests::file(name);
        file.row_count = rows;
        file.min_sequence_number = seq.0;
        file.max_sequence_number = seq.1;
        file.file_source = Some(0);
        ManifestEntry {
            kind,
            partition: vec![],
            bucket: 0,
            total_buckets: -1,
            file,
        }
    }

    fn ids(delta: &[ManifestEntry]) -> Vec<(Option<i64>, i64, i64)> {
        delta
            .iter()
            .map(|e| {
                let f: &DataFileMeta = &e.file;
                (f.first_row_id, f.min_sequence_number, f.max_sequence_number)
            })
            .collect()
    }

    #[test]
    fn new_files_get_consecutive_row_ids_from_next_row_id() {
        let mut delta = vec![
            entry("a", 3, FileKind::Add, (0, 2)),
            entry("b", 5, FileKind::Add, (3, 7)),
            entry("c", 1, FileKind::Add, (0, 0)),
        ];
        let next = assign("t", &mut delta, 4, 10).unwrap();
        assert_eq!(next, 19);
        // every new file's rows carry the snapshot's id as their sequence number
        assert_eq!(
            ids(&delta),
            vec![(Some(10), 4, 4), (Some(13), 4, 4), (Some(18), 4, 4)]
        );
    }

    #[test]
    fn files_of_a_partition_are_numbered_together() {
        let at = |name: &str, p: u8, rows: i64| {
            let mut e = entry(name, rows, FileKind::Add, (0, 0));
            e.partition = vec![p];
            e
        };
        // messages of two writers: partitions 1, 2, 1, 3
        let mut delta = vec![at("a", 1, 2), at("b", 2, 3), at("c", 1, 4), at("d", 3, 1)];
        assert_eq!(assign("t", &mut delta, 1, 0).unwrap(), 10);
        let firsts: Vec<Option<i64>> = delta.iter().map(|e| e.file.first_row_id).collect();
        // a 0..2, c 2..6 (partition 1), b 6..9, d 9..10
        assert_eq!(firsts, vec![Some(0), Some(6), Some(2), Some(9)]);
    }

    #[test]
    fn a_retry_assigns_again_from_the_newer_next_row_id() {
        let adds = vec![
            entry("a", 3, FileKind::Add, (0, 2)),
            entry("b", 2, FileKind::Add, (0, 1)),
        ];
        // first attempt against nextRowId 0 (snapshot 1), lost the race; the winner took
        // ids 0..7, so the retry (snapshot 2) starts at 7: no id is given twice
        let mut first = adds.clone();
        assert_eq!(assign("t", &mut first, 1, 0).unwrap(), 5);
        let mut retry = adds.clone();
        assert_eq!(assign("t", &mut retry, 2, 7).unwrap(), 12);
        assert_eq!(ids(&retry), vec![(Some(7), 2, 2), (Some(10), 2, 2)]);
    }

    #[test]
    fn blob_files_take_the_row_ids_of_the_data_file_before_them() {
        let blob = |name: &str, col: &str, rows: i64| {
            let mut e = entry(name, rows, FileKind::Add, (0, 0));
            e.file.file_name = format!("{name}.blob");
            e.file.write_cols = Some(vec![col.to_string()]);
            e
        };
        // data d1 (3 rows): b1 (2) + b2 (1) of column x, c1 (3) of y; data d2 (2): b3 (2)
        let mut delta = vec![
            entry("d1", 3, FileKind::Add, (0, 2)),
            blob("b1", "x", 2),
            blob("b2", "x", 1),
            blob("c1", "y", 3),
            entry("d2", 2, FileKind::Add, (0, 1)),
            blob("b3", "x", 2),
        ];
        assert_eq!(assign("t", &mut delta, 2, 10).unwrap(), 15);
        let firsts: Vec<Option<i64>> = delta.iter().map(|e| e.file.first_row_id).collect();
        assert_eq!(
            firsts,
            vec![Some(10), Some(10), Some(12), Some(10), Some(13), Some(13)]
        );
        // more blob rows than the data file holds: a bug, refused
        let mut bad = vec![entry("d", 1, FileKind::Add, (0, 0)), blob("b", "x", 2)];
        assert!(assign("t", &mut bad, 1, 0).is_err());
    }

    #[test]
    fn deletes_are_left_alone_and_no_adds_keep_next_row_id() {
        let mut del = entry("old", 4, FileKind::Delete, (1, 1));
        del.file.first_row_id = Some(0);
        let mut delta = vec![del];
        assert_eq!(assign("t", &mut delta, 3, 4).unwrap(), 4);
        assert_eq!(ids(&delta), vec![(Some(0), 1, 1)]);
    }

    #[test]
    fn compaction_outputs_are_refused() {
        let mut compact = entry("c", 3, FileKind::Add, (1, 2));
        compact.file.file_source = Some(1);
        let e = assign("t", &mut [compact], 3, 4).unwrap_err().to_string();
        assert!(e.contains("file 'c'") && e.contains("_ROW_ID"), "{e}");
    }

    fn update(name: &str, first: i64, rows: i64) -> ManifestEntry {
        let mut u = entry(name, rows, FileKind::Add, (0, 0));
        u.file.first_row_id = Some(first);
        u.file.write_cols = Some(vec!["a".into()]);
        u
    }

    #[test]
    fn updates_keep_their_row_ids_and_get_the_snapshot_as_sequence() {
        // an update of rows 2..5 and an append in one commit: the append is numbered from
        // nextRowId, the update keeps its ids; both carry the snapshot's id
        let mut delta = vec![update("u", 2, 3), entry("a", 2, FileKind::Add, (0, 1))];
        assert_eq!(assign("t", &mut delta, 6, 5).unwrap(), 7);
        assert_eq!(ids(&delta), vec![(Some(2), 6, 6), (Some(5), 6, 6)]);
    }

    #[test]
    fn an_update_blob_file_keeps_the_higher_sequence_its_writer_asked_for() {
        // write/row_update.rs asks for 1 + the max sequence of the older `.blob` files it
        // overlaps (pypaimon's per-row ranges): kept when above the snapshot id, else the id;
        // an update data file gets the snapshot id whatever it carries
        let blob = |name: &str, seq: i64| {
            let mut e = update(name, 2, 3);
            e.file.file_name = format!("{name}.blob");
            e.file.max_sequence_number = seq;
            e
        };
        let mut data = update("d", 2, 3);
        data.file.max_sequence_number = 150;
        let mut delta = vec![blob("hi", 150), blob("lo", 2), data];
        assign("t", &mut delta, 6, 5).unwrap();
        assert_eq!(
            ids(&delta),
            vec![(Some(2), 6, 150), (Some(2), 6, 6), (Some(2), 6, 6)]
        );
    }

    #[test]
    fn caller_set_row_ids_are_kept_and_do_not_move_next_row_id() {
        // Java's assignRowTrackingMeta: a file with a first_row_id keeps it, also from
        // nextRowId on (rows the caller numbers), and nextRowId stays where it is
        let mut delta = vec![update("u", 3, 3)];
        assert_eq!(assign("t", &mut delta, 3, 5).unwrap(), 5);
        assert_eq!(ids(&delta), vec![(Some(3), 3, 3)]);
        // a whole-row file (no write_cols) with a first_row_id: kept too
        let mut whole = update("w", 0, 1);
        whole.file.write_cols = None;
        assert_eq!(assign("t", &mut [whole], 3, 5).unwrap(), 5);
        for (first, rows) in [(-1, 1), (i64::MAX, 2)] {
            let e = assign("t", &mut [update("u", first, rows)], 3, 5)
                .unwrap_err()
                .to_string();
            assert!(e.contains("file 'u'") && e.contains("table 't'"), "{e}");
        }
    }

    fn live(name: &str, first: i64, rows: i64) -> ManifestEntry {
        let mut e = entry(name, rows, FileKind::Add, (1, 1));
        e.file.first_row_id = Some(first);
        e
    }

    #[test]
    fn a_group_holding_a_file_of_the_commit_must_have_one_range() {
        let r = |from: i64, to: i64, name: &'static str, ours: Option<bool>| Ranged {
            from,
            to,
            name,
            ours,
        };
        let names = |v: &[Ranged<'_>], c: Option<(usize, usize)>| {
            c.map(|(a, b)| (v[a].name.to_string(), v[b].name.to_string()))
        };
        // equal or disjoint: fine, whatever the live files do among themselves
        let mut ok = vec![
            r(5, 9, "n", Some(false)),
            r(0, 4, "c", Some(true)),
            r(0, 4, "l", None),
            r(20, 30, "l1", None),
            r(25, 26, "l2", None),
        ];
        assert_eq!(first_conflict(&mut ok), None);
        // a caller file straddling a live group; a numbered file longer than a caller group
        let mut v = vec![r(0, 4, "l", None), r(3, 6, "c", Some(true))];
        let c = first_conflict(&mut v);
        assert_eq!(names(&v, c), Some(("c".into(), "l".into())));
        let mut v = vec![r(1, 3, "n", Some(false)), r(1, 2, "c", Some(true))];
        let c = first_conflict(&mut v);
        assert_eq!(names(&v, c), Some(("c".into(), "n".into())));
        // a file nested in a longer group, found through the group's merged end
        let mut v = vec![
            r(0, 9, "l", None),
            r(0, 9, "c", Some(true)),
            r(10, 12, "x", None),
            r(11, 11, "y", Some(true)),
        ];
        let c = first_conflict(&mut v);
        assert_eq!(names(&v, c), Some(("y".into(), "x".into())));
    }

    #[test]
    fn groups_are_the_merged_ranges_of_the_live_data_files() {
        let files = vec![
            live("a", 0, 3),
            live("a2", 0, 3),
            live("b", 3, 2),
            live("c", 10, 4),
            live("c2", 12, 4),
            live("x.blob", 20, 5),
        ];
        let m = merged_ranges(&files);
        // adjacent ranges stay apart, overlapping ones merge, .blob files do not count
        assert_eq!(m[&(&[][..], 0)], vec![(0, 2), (3, 4), (10, 15)]);
    }
}
