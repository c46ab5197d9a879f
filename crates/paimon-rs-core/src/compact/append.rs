//! Compaction of append tables (paimon-behaviour.md §11): small files of a (partition, bucket)
//! are rewritten into files of about `target-file-size`, committed as a COMPACT snapshot.
//!
//! Bucketed tables follow Java's `BucketedAppendCompactManager`: the bucket's files in sequence
//! order (an append bucket's row order), a window sliding over them that fires once it holds
//! `compaction.min.file-num` files while staying under twice the target size; full compaction
//! skips the leading files of at least `target-file-size × compaction.small-file-ratio` and
//! rewrites the rest when small files outnumber large ones and there are at least 3 (or always
//! with `compaction.force-rewrite-all-files`). Bucket-unaware tables (`bucket = -1`) follow
//! `AppendCompactCoordinator`: the small files of a partition, smallest first, packed into bins
//! of twice the target size (each file counted with `source.split.open-file-cost`); a last bin
//! of at least `compaction.min.file-num` files is kept too (with `full`: of at least 2 files).
//!
//! Tables with deletion vectors (write/append_dv.rs): a compaction reads its files without
//! their deleted rows and drops their vectors in the same COMPACT snapshot (index files
//! replaced). Which files are picked follows Java: bucket-unaware tables also pick a file whose
//! deleted rows exceed `compaction.delete-ratio-threshold` (`AppendCompactCoordinator`), group
//! the files with vectors by their index file (so one rewrite replaces it) and always rewrite
//! those; a bucketed full compaction keeps leading large files only if they have no vector and
//! always rewrites the rest (`BucketedAppendCompactManager.FullCompactTask`).

use std::collections::BTreeMap;

use rayon::prelude::*;
use roaring::RoaringBitmap;

use super::progress::{ProgressSink, Tracker};
use super::work::{bool_opt, bucket_splits, commit_compactions, ratio_option, small_file_ratio};
use crate::commit::{CommitMessage, CompactIncrement, DataIncrement};
use crate::error::{Error, Result};
use crate::kv::{file_context, FileSource};
use crate::merge::BatchIter;
use crate::read::deletion::{deletion_files_of, DeletionFile};
use crate::read::split::Split;
use crate::read::table_read::TableRead;
use crate::spec::manifest::{DataFileMeta, IndexFileMeta};
use crate::spec::partition::PartitionSpec;
use crate::table::FileStoreTable;
use crate::write::append_dv::AppendDvMaintainer;
use crate::write::deletion_vectors::DeletionVectorsMaintainer;
use crate::write::rolling::RollingFileWriter;

/// Java's `FULL_COMPACT_MIN_FILE`: fewer files are not worth a full compaction.
const FULL_COMPACT_MIN_FILE: usize = 3;

/// The append-compaction options of a table.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AppendCompactSettings {
    /// `target-file-size` (Java's default for append tables: 256 MB).
    pub target_file_size: u64,
    /// Files below `target × compaction.small-file-ratio` are small.
    pub compaction_file_size: u64,
    /// `compaction.min.file-num`.
    pub min_file_num: usize,
    /// `source.split.open-file-cost` (bucket-unaware packing).
    pub open_file_cost: u64,
    /// `compaction.force-rewrite-all-files`.
    pub force_rewrite_all: bool,
    /// `compaction.delete-ratio-threshold`: a file whose deletion vector marks more than this
    /// share of its rows is compacted (bucket-unaware deletion-vector tables).
    pub delete_ratio_threshold: f64,
}

impl AppendCompactSettings {
    pub fn from_table(table: &FileStoreTable) -> Result<Self> {
        let o = &table.options;
        let ratio = small_file_ratio(&o.raw)?;
        let force = bool_opt(&o.raw, "compaction.force-rewrite-all-files")?;
        let target = o.target_file_size.unwrap_or(256 << 20);
        Ok(AppendCompactSettings {
            target_file_size: target,
            compaction_file_size: (target as f64 * ratio) as u64,
            min_file_num: o.compaction_min_file_num,
            open_file_cost: o.split_open_file_cost,
            force_rewrite_all: force,
            delete_ratio_threshold: ratio_option(&o.raw, "compaction.delete-ratio-threshold", 0.2)?,
        })
    }
}

fn size(f: &DataFileMeta) -> u64 {
    f.file_size.max(0) as u64
}

/// A bucket's files in sequence order (Java's queue ordered by min sequence number).
pub fn sequence_order(files: &mut [DataFileMeta]) {
    files.sort_by(|a, b| {
        a.min_sequence_number
            .cmp(&b.min_sequence_number)
            .then(a.file_name.cmp(&b.file_name))
    });
}

/// The groups a bucketed append compaction rewrites. Without `full`: Java's
/// `pickCompactBefore` applied until the files run out (each pick a contiguous stretch of
/// `min_file_num` files whose total stays under twice the target size). With `full`: the files
/// after the leading large ones, if small files outnumber large ones and there are at least 3.
pub fn pick_bucketed(
    files: &[DataFileMeta],
    s: &AppendCompactSettings,
    full: bool,
) -> Vec<Vec<DataFileMeta>> {
    let mut files = files.to_vec();
    sequence_order(&mut files);
    if full {
        if !s.force_rewrite_all && files.len() < FULL_COMPACT_MIN_FILE {
            return vec![];
        }
        let skip = if s.force_rewrite_all {
            0
        } else {
            files
                .iter()
                .take_while(|f| size(f) >= s.compaction_file_size)
                .count()
        };
        let rest = files.split_off(skip);
        let small = rest
            .iter()
            .filter(|f| size(f) < s.compaction_file_size)
            .count();
        let big = rest.len() - small;
        let go = !rest.is_empty()
            && (s.force_rewrite_all || (small > big && rest.len() >= FULL_COMPACT_MIN_FILE));
        return if go { vec![rest] } else { vec![] };
    }
    let mut picks = vec![];
    let mut window: std::collections::VecDeque<DataFileMeta> = Default::default();
    let mut total = 0u64;
    for f in files {
        total += size(&f);
        window.push_back(f);
        if window.len() >= s.min_file_num {
            picks.push(window.drain(..).collect());
            total = 0;
        } else if total >= s.target_file_size.saturating_mul(2) {
            if let Some(r) = window.pop_front() {
                total -= size(&r);
            }
        }
    }
    picks
}

/// The groups a bucket-unaware compaction rewrites from one partition's files (Java's
/// `AppendCompactCoordinator` packing): the small files, smallest first, in bins of at least
/// twice the target size; a last bin of `min_file_num` files (with `full`: 2) is kept too.
/// Each group is returned in sequence order.
pub fn pick_unaware(
    files: &[DataFileMeta],
    s: &AppendCompactSettings,
    full: bool,
) -> Vec<Vec<DataFileMeta>> {
    let mut small: Vec<DataFileMeta> = files
        .iter()
        .filter(|f| s.force_rewrite_all || size(f) < s.compaction_file_size)
        .cloned()
        .collect();
    small.sort_by(|a, b| size(a).cmp(&size(b)).then(a.file_name.cmp(&b.file_name)));
    let mut out = vec![];
    let mut bin: Vec<DataFileMeta> = vec![];
    let mut total = 0u64;
    for f in small {
        total += size(&f) + s.open_file_cost;
        bin.push(f);
        if bin.len() > 1 && total >= s.target_file_size.saturating_mul(2) {
            out.push(std::mem::take(&mut bin));
            total = 0;
        }
    }
    let last_min = if full { 2 } else { s.min_file_num.max(2) };
    if bin.len() >= last_min {
        out.push(bin);
    }
    for g in &mut out {
        sequence_order(g);
    }
    out
}

/// What to rewrite in one (partition, bucket): bucketed or bucket-unaware picking.
/// `vectors`: the files' deletion vectors, for a deletion-vector table (Some even if none has
/// one: Java picks by its deletion-vector rules whenever they are enabled).
pub fn pick_append(
    files: &[DataFileMeta],
    bucket_unaware: bool,
    s: &AppendCompactSettings,
    full: bool,
    vectors: Option<&BTreeMap<String, DeletionFile>>,
) -> Vec<Vec<DataFileMeta>> {
    match (bucket_unaware, vectors) {
        (true, Some(v)) => pick_unaware_with_vectors(files, s, full, v),
        (true, None) => pick_unaware(files, s, full),
        (false, Some(v)) if full => pick_bucketed_full_with_vectors(files, s, v),
        (false, _) => pick_bucketed(files, s, full),
    }
}

/// Java's `FullCompactTask` with a deletion-vector maintainer: the leading large files without
/// a vector are kept, everything after them is rewritten (however few or large).
fn pick_bucketed_full_with_vectors(
    files: &[DataFileMeta],
    s: &AppendCompactSettings,
    vectors: &BTreeMap<String, DeletionFile>,
) -> Vec<Vec<DataFileMeta>> {
    let mut files = files.to_vec();
    sequence_order(&mut files);
    let skip = if s.force_rewrite_all {
        0
    } else {
        files
            .iter()
            .take_while(|f| {
                size(f) >= s.compaction_file_size && !vectors.contains_key(&f.file_name)
            })
            .count()
    };
    let rest = files.split_off(skip);
    if rest.is_empty() {
        vec![]
    } else {
        vec![rest]
    }
}

/// Java's `AppendCompactCoordinator` with deletion vectors: the candidates are the small files
/// and those whose vector marks more than `delete_ratio_threshold` of their rows; candidates
/// with a vector are grouped by the index file holding it (a rewrite replaces that index file,
/// so its files go together), groups packed smallest first into bins of twice the target size,
/// the last bin kept whatever its size (files with vectors are always compacted); candidates
/// without a vector are packed as usual.
fn pick_unaware_with_vectors(
    files: &[DataFileMeta],
    s: &AppendCompactSettings,
    full: bool,
    vectors: &BTreeMap<String, DeletionFile>,
) -> Vec<Vec<DataFileMeta>> {
    let mut by_index: BTreeMap<&str, Vec<DataFileMeta>> = BTreeMap::new();
    let mut rest = vec![];
    for f in files {
        let dv = vectors.get(&f.file_name);
        let deleted_much = dv.is_some_and(|d| {
            d.cardinality
                .is_none_or(|c| c as f64 > f.row_count as f64 * s.delete_ratio_threshold)
        });
        if !(s.force_rewrite_all || size(f) < s.compaction_file_size || deleted_much) {
            continue;
        }
        match dv {
            Some(d) => by_index.entry(d.path.as_str()).or_default().push(f.clone()),
            None => rest.push(f.clone()),
        }
    }
    let total = |g: &[DataFileMeta]| g.iter().map(size).sum::<u64>();
    let mut groups: Vec<Vec<DataFileMeta>> = by_index.into_values().collect();
    groups.sort_by_key(|g| total(g));
    let mut out = vec![];
    let mut bin: Vec<DataFileMeta> = vec![];
    let mut bin_size = 0u64;
    for g in groups {
        bin_size += g.iter().map(|f| size(f) + s.open_file_cost).sum::<u64>();
        bin.extend(g);
        if bin.len() > 1 && bin_size >= s.target_file_size.saturating_mul(2) {
            out.push(std::mem::take(&mut bin));
            bin_size = 0;
        }
    }
    if !bin.is_empty() {
        out.push(bin);
    }
    for g in &mut out {
        sequence_order(g);
    }
    if rest.len() > 1 {
        let candidates_only = AppendCompactSettings {
            force_rewrite_all: true, // `rest` holds the candidates already
            ..*s
        };
        out.extend(pick_unaware(&rest, &candidates_only, full));
    }
    out
}

/// The deletion vectors of `b`'s files (`b.deletion_files`), from its snapshot's index
/// manifest, for a deletion-vector table; `b` is left as it is for others.
pub(super) fn attach_vectors(table: &FileStoreTable, b: &mut Split) -> Result<()> {
    if !table.options.deletion_vectors()? {
        return Ok(());
    }
    let snapshot = table.snapshot_manager().snapshot(b.snapshot_id)?;
    let mut all = deletion_files_of(table, snapshot.index_manifest.as_deref())?;
    let mut mine = all
        .remove(&(b.partition.clone(), b.bucket))
        .unwrap_or_default();
    b.deletion_files = b
        .files
        .iter()
        .filter_map(|f| Some((f.file_name.clone(), mine.remove(&f.file_name)?)))
        .collect();
    Ok(())
}

/// The batches of `split`'s files, in order; with `vectors` (a writer's deletion vectors, held
/// in memory: data file → deleted row positions) in place of the split's deletion files, which
/// the reader applies either way (`TableRead::split_stream_with_vectors`).
fn group_batches(
    reader: &TableRead,
    split: &Split,
    vectors: Option<&BTreeMap<String, RoaringBitmap>>,
) -> Result<BatchIter> {
    match vectors {
        None => reader.split_stream(split),
        Some(v) => {
            // the vectors of the split's files only
            let mine = split
                .files
                .iter()
                .filter_map(|f| Some((f.file_name.clone(), v.get(&f.file_name)?.clone())))
                .collect();
            reader.split_stream_with_vectors(split, std::sync::Arc::new(mine))
        }
    }
}

/// Rewrite the files of `split` (in this order) into new level-0 COMPACT files of about the
/// target size, sequence numbers continuing from the first file's (as Java's rewrite), without
/// the rows the split's deletion files or `vectors` ([`group_batches`]) mark. The files
/// written are removed again on error.
fn rewrite_group(
    table: &FileStoreTable,
    reader: &TableRead,
    s: &AppendCompactSettings,
    split: &Split,
    vectors: Option<&BTreeMap<String, RoaringBitmap>>,
) -> Result<Vec<DataFileMeta>> {
    let mut ctx = file_context(table, 0, FileSource::Compact)?;
    ctx.dir = crate::io::resolve(&table.path, &split.bucket_path);
    ctx.target_size = s.target_file_size;
    let first_seq = split
        .files
        .first()
        .map(|f| f.min_sequence_number)
        .unwrap_or(0);
    let started = std::time::Instant::now();
    // an error drops the writer, which removes the files it wrote
    let mut writer = RollingFileWriter::new(ctx, first_seq);
    for b in group_batches(reader, split, vectors)? {
        let b = b?;
        if b.num_rows() > 0 {
            writer.write(&b)?;
        }
    }
    let after = writer.close()?;
    log::info!(
        target: "paimon_rs.compaction",
        "{} ({}): compacted {} append files ({} bytes) into {} files ({} bytes, {} rows)",
        table.name,
        split.bucket_path,
        split.files.len(),
        split.files.iter().map(|f| f.file_size).sum::<i64>(),
        after.len(),
        after.iter().map(|f| f.file_size).sum::<i64>(),
        after.iter().map(|f| f.row_count).sum::<i64>(),
    );
    log::debug!(
        target: "paimon_rs.compaction",
        "{} ({}): append compaction took {} ms",
        table.name,
        split.bucket_path,
        started.elapsed().as_millis()
    );
    Ok(after)
}

/// A writer's compaction of one bucketed append bucket at `prepare_commit` (Java's
/// `BucketedAppendCompactManager` triggered by the writer, one task): the first group
/// [`pick_bucketed`] finds in `files` (the bucket's live files plus the new ones), rewritten.
/// A deletion-vector table's writer holds the bucket's `vectors` (restored with its files,
/// write/restore.rs): the picked files are read without the rows their vectors mark, the
/// vectors dropped, and the bucket's new index file replaces its old one in the same increment
/// (Java's `compact` with a `BucketedDvMaintainer`); the commit refuses it if a delete changed
/// the bucket's vectors meanwhile (commit/index.rs). None if nothing was picked.
pub(crate) fn compact_written_bucket(
    table: &FileStoreTable,
    bucket_dir: &std::path::Path,
    partition: &[u8],
    (bucket, total_buckets): (i32, i32),
    files: &[DataFileMeta],
    vectors: Option<&mut DeletionVectorsMaintainer>,
) -> Result<Option<CompactIncrement>> {
    if vectors.is_none() && table.options.deletion_vectors()? {
        return Err(Error::Internal(format!(
            "the writer of bucket {bucket} of deletion-vector table '{}' holds no deletion \
             vectors: its compaction would bring deleted rows back",
            table.name
        )));
    }
    let s = AppendCompactSettings::from_table(table)?;
    // Java's writer picks by size and count only (`pickCompactBefore`, whatever the vectors):
    // `pick_append` with vectors differs for full compactions only
    let Some(group) = pick_bucketed(files, &s, false).into_iter().next() else {
        return Ok(None);
    };
    let reader = TableRead::new(table.clone(), None, None)?;
    let split = Split {
        snapshot_id: 0,
        partition: partition.to_vec(),
        bucket,
        total_buckets,
        // absolute: joined onto the table path it stays itself
        bucket_path: bucket_dir.to_string_lossy().into_owned(),
        files: group.clone(),
        raw_convertible: true,
        deletion_files: Default::default(),
        changelog: false,
        diff_before: None,
        row_slices: Default::default(),
        row_id_ranges: Vec::new(),
    };
    let after = rewrite_group(
        table,
        &reader,
        &s,
        &split,
        vectors.as_deref().map(|v| v.vectors()),
    )?;
    let mut increment = CompactIncrement::of(group, after);
    if let Some(m) = vectors {
        for f in &increment.compact_before {
            m.remove(&f.file_name);
        }
        let vectors = m.prepare_commit(table);
        with_index_files(table, &split.bucket_path, &mut increment, vectors)?;
    }
    Ok(Some(increment))
}

/// A compaction's deletion-vector index changes (`vectors`: the new index files and those they
/// replace) put into its increment; on error the files it wrote are removed.
fn with_index_files(
    table: &FileStoreTable,
    bucket_path: &str,
    increment: &mut CompactIncrement,
    vectors: Result<(Vec<IndexFileMeta>, Vec<IndexFileMeta>)>,
) -> Result<()> {
    match vectors {
        Ok((new, replaced)) => {
            increment.new_index_files = new;
            increment.deleted_index_files = replaced;
            Ok(())
        }
        Err(e) => {
            discard(table, bucket_path, &increment.compact_after);
            Err(e)
        }
    }
}

fn discard(table: &FileStoreTable, bucket_path: &str, files: &[DataFileMeta]) {
    for f in files {
        let _ =
            crate::fileindex::remove_data_file(&crate::io::resolve(&table.path, bucket_path), f);
    }
}

/// Refuses append tables whose compaction we cannot do.
pub(super) fn check_compactable(table: &FileStoreTable) -> Result<()> {
    // data-evolution first: it implies row tracking, and its files are not whole rows
    for (k, why) in [
        (
            "data-evolution.enabled",
            "Java's compaction merges the files of each row-id range column by column into \
             whole-row files that keep the rows' _ROW_IDs; paimon_rs does not",
        ),
        (
            "row-tracking.enabled",
            "Java's compaction stores each row's _ROW_ID in the file it writes; paimon_rs \
             does not, and the rows would lose their ids",
        ),
    ] {
        if table
            .options
            .raw
            .get(k)
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
        {
            return Err(Error::unsupported(format!(
                "compacting an append table with {k} = true ({why})"
            )));
        }
    }
    table.check_writable()
}

/// Compact an append table (`compact_table` dispatches here): every selected (partition,
/// bucket)'s picked groups rewritten, committed as one COMPACT snapshot whose id is returned;
/// None if nothing needed compacting. On error the files written are removed.
pub fn compact_append_table(
    table: &FileStoreTable,
    full: bool,
    partitions: Option<&[PartitionSpec]>,
    progress: ProgressSink<'_>,
) -> Result<Option<i64>> {
    check_compactable(table)?;
    let s = AppendCompactSettings::from_table(table)?;
    let Some(snapshot) = table.snapshot_manager().latest()? else {
        return Ok(None);
    };
    let reader = TableRead::new(table.clone(), None, None)?;
    let work = bucket_splits(table, &snapshot, partitions)?;
    let tracker = Tracker::start(work.len(), progress)?;
    let results: Vec<Result<Option<(CommitMessage, String)>>> = work
        .into_par_iter()
        .map(|b| {
            let path = b.bucket_path.clone();
            let r = compact_append_bucket(table, &reader, &s, b, full)?;
            let (before, after): (&[DataFileMeta], &[DataFileMeta]) = match &r {
                None => (&[], &[]),
                Some(m) => (
                    &m.compact_increment.compact_before,
                    &m.compact_increment.compact_after,
                ),
            };
            if let Err(e) = tracker.bucket_done(before, after) {
                if let Some(m) = &r {
                    discard(table, &path, &m.compact_increment.compact_after);
                }
                return Err(e);
            }
            Ok(r.map(|m| (m, path)))
        })
        .collect();
    commit_compactions(table, results, |m, p: &String| {
        discard(table, p, &m.compact_increment.compact_after)
    })
}

/// Compact one append bucket: its picked groups rewritten, as one commit message (COMPACT);
/// None if nothing was picked. On error the files written are removed.
pub(super) fn compact_append_bucket(
    table: &FileStoreTable,
    reader: &TableRead,
    s: &AppendCompactSettings,
    mut b: Split,
    full: bool,
) -> Result<Option<CommitMessage>> {
    let unaware = b.bucket == -1 || b.total_buckets == -1;
    let dv = table.options.deletion_vectors()?;
    attach_vectors(table, &mut b)?;
    let groups = pick_append(&b.files, unaware, s, full, dv.then_some(&b.deletion_files));
    if groups.is_empty() {
        return Ok(None);
    }
    let (mut before, mut after) = (vec![], vec![]);
    for g in &groups {
        let split = Split {
            snapshot_id: b.snapshot_id,
            partition: b.partition.clone(),
            bucket: b.bucket,
            total_buckets: b.total_buckets,
            bucket_path: b.bucket_path.clone(),
            files: g.clone(),
            raw_convertible: true,
            // the rewrite leaves the deleted rows out
            deletion_files: g
                .iter()
                .filter_map(|f| {
                    let d = b.deletion_files.get(&f.file_name)?;
                    Some((f.file_name.clone(), d.clone()))
                })
                .collect(),
            changelog: false,
            diff_before: None,
            row_slices: Default::default(),
            row_id_ranges: Vec::new(),
        };
        match rewrite_group(table, reader, s, &split, None) {
            Ok(out) => {
                before.extend(g.iter().cloned());
                after.extend(out);
            }
            Err(e) => {
                discard(table, &b.bucket_path, &after);
                return Err(e);
            }
        }
    }
    let mut compact_increment = CompactIncrement::of(before, after);
    if dv {
        // the rewritten files' vectors go (their index files replaced in this snapshot)
        let vectors = AppendDvMaintainer::dropping(
            table,
            b.snapshot_id,
            (&b.partition, b.bucket),
            &b.files,
            &compact_increment.compact_before,
        );
        with_index_files(table, &b.bucket_path, &mut compact_increment, vectors)?;
    }
    Ok(Some(CommitMessage {
        partition: b.partition,
        bucket: b.bucket,
        total_buckets: b.total_buckets,
        data_increment: DataIncrement::default(),
        compact_increment,
        restored_snapshot: Some(Some(b.snapshot_id)),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str, size: i64, seq: i64) -> DataFileMeta {
        crate::compact::levels::tests::file(name, 0, 0, 0, size, seq)
    }

    fn settings() -> AppendCompactSettings {
        AppendCompactSettings {
            target_file_size: 100,
            compaction_file_size: 70,
            min_file_num: 3,
            open_file_cost: 0,
            force_rewrite_all: false,
            delete_ratio_threshold: 0.2,
        }
    }

    fn vector(index: &str, cardinality: i64) -> DeletionFile {
        DeletionFile {
            path: format!("index/{index}"),
            offset: 1,
            length: 10,
            cardinality: Some(cardinality),
        }
    }

    /// Bucket-unaware with deletion vectors (Java's `packInDeletionVectorVMode`): a large file
    /// is picked once its vector marks over 20% of its rows; files with vectors are grouped by
    /// index file and always compacted, even alone; the others need company.
    #[test]
    fn unaware_picks_files_by_their_vectors() {
        let s = settings();
        // f rows: 0 in the helper's files, so give the big ones rows through the ratio
        let mut big = file("big", 90, 1);
        big.row_count = 10;
        let mut big_few = file("big-few", 90, 2);
        big_few.row_count = 10;
        let lone = file("small", 10, 3);
        let files = vec![big.clone(), big_few.clone(), lone.clone()];
        let v: BTreeMap<String, DeletionFile> = [
            ("big".to_string(), vector("i1", 3)),
            ("big-few".to_string(), vector("i2", 1)),
        ]
        .into();
        // big (30% deleted) is picked alone; big-few (10%) is not; one small file is no group
        assert_eq!(
            names(&pick_append(&files, true, &s, false, Some(&v))),
            [["big"]]
        );
        // without vectors the large files stay
        assert!(pick_append(&files, true, &s, false, None).is_empty());
        // a small file with a vector is always compacted, with the files of its index file
        let mut small_dv = file("small-dv", 10, 4);
        small_dv.row_count = 10;
        let v2: BTreeMap<String, DeletionFile> = [
            ("big".to_string(), vector("i1", 3)),
            ("small-dv".to_string(), vector("i1", 1)),
        ]
        .into();
        let files = vec![big, big_few, lone, small_dv];
        assert_eq!(
            names(&pick_append(&files, true, &s, false, Some(&v2))),
            [["big", "small-dv"]]
        );
    }

    /// Bucketed full compaction with deletion vectors (`FullCompactTask`): leading large files
    /// stay unless they have a vector; the rest is rewritten however few.
    #[test]
    fn bucketed_full_rewrites_files_with_vectors() {
        let s = settings();
        let files = vec![file("a", 90, 1), file("b", 90, 2)];
        assert!(pick_append(&files, false, &s, true, None).is_empty());
        let none = BTreeMap::new();
        assert!(pick_append(&files, false, &s, true, Some(&none)).is_empty());
        let v: BTreeMap<String, DeletionFile> = [("b".to_string(), vector("i", 1))].into();
        assert_eq!(
            names(&pick_append(&files, false, &s, true, Some(&v))),
            [["b"]]
        );
        let v: BTreeMap<String, DeletionFile> = [("a".to_string(), vector("i", 1))].into();
        assert_eq!(
            names(&pick_append(&files, false, &s, true, Some(&v))),
            [["a", "b"]]
        );
    }

    fn names(g: &[Vec<DataFileMeta>]) -> Vec<Vec<String>> {
        g.iter()
            .map(|v| v.iter().map(|f| f.file_name.clone()).collect())
            .collect()
    }

    #[test]
    fn bucketed_window_slides_past_large_stretches() {
        // a(150) b(60) c(10) d(10) e(10): the window [a,b] reaches 2×target → a leaves;
        // [b,c,d] has 3 files → picked; [e] alone stays
        let fs = vec![
            file("e", 10, 5),
            file("a", 150, 1),
            file("b", 60, 2),
            file("c", 10, 3),
            file("d", 10, 4),
        ];
        let g = pick_bucketed(&fs, &settings(), false);
        assert_eq!(names(&g), vec![vec!["b", "c", "d"]]);
    }

    #[test]
    fn bucketed_full_skips_leading_large_files_and_needs_more_small_than_large() {
        let s = settings();
        let fs = vec![
            file("a", 90, 1),
            file("b", 10, 2),
            file("c", 80, 3),
            file("d", 10, 4),
            file("e", 10, 5),
        ];
        assert_eq!(
            names(&pick_bucketed(&fs, &s, true)),
            vec![vec!["b", "c", "d", "e"]]
        );
        // 2 small vs 2 large after the skip: nothing
        let fs2 = vec![
            file("b", 10, 2),
            file("c", 80, 3),
            file("d", 10, 4),
            file("x", 80, 5),
        ];
        assert!(pick_bucketed(&fs2, &s, true).is_empty());
        // fewer than 3 files: nothing
        assert!(pick_bucketed(&fs[..2], &s, true).is_empty());
    }

    #[test]
    fn unaware_packs_small_files_smallest_first() {
        let s = settings();
        let fs = vec![
            file("big", 90, 1),
            file("s1", 60, 2),
            file("s2", 50, 3),
            file("s3", 65, 4),
            file("s4", 5, 5),
        ];
        // sorted by size: s4 5, s2 50, s1 60, s3 65 → bins at ≥200: [s4,s2,s1,s3] = 180 < 200,
        // the last bin has 4 ≥ min 3 files → kept, in sequence order
        assert_eq!(
            names(&pick_unaware(&fs, &s, false)),
            vec![vec!["s1", "s2", "s3", "s4"]]
        );
        // two small files: only a full compaction takes them
        assert!(pick_unaware(&fs[..3], &s, false).is_empty());
        assert_eq!(
            names(&pick_unaware(&fs[..3], &s, true)),
            vec![vec!["s1", "s2"]]
        );
    }
}
