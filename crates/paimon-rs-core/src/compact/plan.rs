//! `compaction_plan`: per (partition, bucket) of the latest snapshot, the sorted runs and what a
//! compaction would do now and why (the universal picker's rule for primary-key buckets, the
//! small-file pick for append buckets; a deletion-vector append table's picks by its vectors,
//! read from the snapshot's index manifest). Reads metadata only; writes nothing.

use std::collections::BTreeMap;

use super::append::{pick_append, AppendCompactSettings};
use super::bucket::{levels_and_picker, CompactSettings};
use super::universal::{PickClock, PickReason};
use super::work::bucket_files;
use crate::error::Result;
use crate::read::deletion::{deletion_files_of, read_deletion_vector, DeletionFile};
use crate::spec::manifest::DataFileMeta;
use crate::table::live::live_entries;
use crate::table::FileStoreTable;

/// One sorted run: a level-0 file, or all files of a level ≥ 1 (append buckets: all files of
/// the bucket at their level).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanRun {
    pub level: i32,
    pub files: usize,
    pub bytes: u64,
    pub rows: i64,
}

/// One compaction a bucket would run: its input and where it goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanPick {
    pub files: usize,
    pub bytes: u64,
    pub rows: i64,
    pub output_level: i32,
    /// `size-amplification`, `size-ratio`, `run-count`, `early-full`, `force-up-level-0`,
    /// `deleted-rows` (primary-key buckets), `small-files` or `deletion-vectors` (append
    /// buckets: a bucket-unaware deletion-vector table's group of files with vectors, compacted
    /// whatever their size, `AppendCompactCoordinator`).
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BucketPlan {
    /// The partition's path (`dt=2024-01-01/`), empty for an unpartitioned table.
    pub partition: String,
    pub bucket: i32,
    pub primary_key: bool,
    /// Newest first (primary-key buckets).
    pub runs: Vec<PlanRun>,
    /// Empty: nothing to compact now.
    pub picks: Vec<PlanPick>,
    /// Why (not): the rule that fired or the thresholds that did not.
    pub explanation: String,
}

pub fn reason_name(r: PickReason) -> &'static str {
    match r {
        PickReason::EarlyFull => "early-full",
        PickReason::SizeAmplification => "size-amplification",
        PickReason::SizeRatio => "size-ratio",
        PickReason::RunCount => "run-count",
        PickReason::ForceUpLevel0 => "force-up-level-0",
    }
}

fn totals(files: &[DataFileMeta]) -> (u64, i64) {
    (
        files.iter().map(|f| f.file_size.max(0) as u64).sum(),
        files.iter().map(|f| f.row_count).sum(),
    )
}

fn pick_of(files: &[DataFileMeta], output_level: i32, reason: &str) -> PlanPick {
    let (bytes, rows) = totals(files);
    PlanPick {
        files: files.len(),
        bytes,
        rows,
        output_level,
        reason: reason.to_string(),
    }
}

/// §3.8 on a deletion-vector table's bucket: its max-level files (of `levels`) outside the
/// universal pick (`picked`) whose vectors mark more than `compaction.delete-ratio-threshold`
/// of their rows; a compaction rewrites them without those rows after its pick.
fn deleted_rows_pick(
    table: &FileStoreTable,
    threshold: f64,
    max_level: i32,
    files: &[DataFileMeta],
    picked: &[DataFileMeta],
    vectors: &BTreeMap<String, DeletionFile>,
) -> Result<Vec<DataFileMeta>> {
    // a file is named once in a bucket: compare names, not every field of the metadata
    let picked: std::collections::HashSet<&str> =
        picked.iter().map(|f| f.file_name.as_str()).collect();
    let mut out = vec![];
    for f in files {
        if f.level != max_level || f.row_count <= 0 || picked.contains(f.file_name.as_str()) {
            continue;
        }
        let Some(df) = vectors.get(&f.file_name) else {
            continue;
        };
        // the index manifest's cardinality (Java writes it since 0.9), else the vector itself
        let marked = match df.cardinality {
            Some(c) => c,
            None => read_deletion_vector(&table.path, df, &f.file_name, f.row_count)?.len() as i64,
        };
        if marked as f64 > f.row_count as f64 * threshold {
            out.push(f.clone());
        }
    }
    Ok(out)
}

fn pk_plan(
    table: &FileStoreTable,
    settings: &CompactSettings,
    files: Vec<DataFileMeta>,
    vectors: &BTreeMap<String, DeletionFile>,
) -> Result<Planned> {
    let ((runs, mut picks, mut explanation), picked) = pk_universal_plan(table, settings, &files)?;
    if let Some(threshold) = settings.delete_ratio_threshold {
        let max_level = settings.num_levels as i32 - 1;
        let deleted = deleted_rows_pick(table, threshold, max_level, &files, &picked, vectors)?;
        if !deleted.is_empty() {
            explanation = format!(
                "{explanation}; then rewrite {} level-{max_level} file(s) whose deletion \
                 vectors mark more than {threshold} of their rows \
                 (compaction.delete-ratio-threshold)",
                deleted.len()
            );
            picks.push(pick_of(&deleted, max_level, "deleted-rows"));
        }
    }
    Ok((runs, picks, explanation))
}

/// A bucket's plan: its runs, picks and explanation.
type Planned = (Vec<PlanRun>, Vec<PlanPick>, String);

/// The universal picker's part of [`pk_plan`]: runs, picks, explanation and the files picked.
fn pk_universal_plan(
    table: &FileStoreTable,
    settings: &CompactSettings,
    files: &[DataFileMeta],
) -> Result<(Planned, Vec<DataFileMeta>)> {
    let key_types = table.schema.types_of(&table.trimmed_primary_keys())?;
    let (levels, mut picker) = levels_and_picker(&key_types, settings, files.to_vec())?;
    let runs = levels.level_sorted_runs();
    let plan_runs = runs
        .iter()
        .map(|r| {
            let (bytes, rows) = totals(&r.files);
            PlanRun {
                level: r.level,
                files: r.files.len(),
                bytes,
                rows,
            }
        })
        .collect();
    let trigger = picker.compaction_trigger();
    let shapes = levels.run_shapes();
    let Some(p) = picker.pick(levels.number_of_levels(), &shapes, PickClock::now()) else {
        let why = format!(
            "no rule fired: {} sorted runs (trigger {trigger}), size amplification and size \
             ratio below their thresholds",
            runs.len()
        );
        return Ok(((plan_runs, vec![], why), vec![]));
    };
    let files: Vec<DataFileMeta> = runs
        .into_iter()
        .take(p.runs)
        .flat_map(|r| r.files)
        .collect();
    let reason = reason_name(p.reason);
    if files.is_empty() || (files.len() == 1 && files[0].level == p.output_level) {
        let why = format!(
            "{reason} fired but the pick is a lone file already at level {}: nothing to do",
            p.output_level
        );
        return Ok(((plan_runs, vec![], why), vec![]));
    }
    let explanation = format!(
        "{reason}: merge the newest {} runs ({} files) into level {}",
        p.runs,
        files.len(),
        p.output_level
    );
    let pick = pick_of(&files, p.output_level, reason);
    Ok(((plan_runs, vec![pick], explanation), files))
}

/// An append bucket's plan; `vectors`: its files' deletion vectors (a deletion-vector table),
/// picked by as `compact()` picks (`pick_append`).
fn append_plan(
    settings: &AppendCompactSettings,
    unaware: bool,
    files: Vec<DataFileMeta>,
    vectors: Option<&BTreeMap<String, DeletionFile>>,
) -> (Vec<PlanRun>, Vec<PlanPick>, String) {
    let mut by_level: std::collections::BTreeMap<i32, Vec<&DataFileMeta>> = Default::default();
    for f in &files {
        by_level.entry(f.level).or_default().push(f);
    }
    let runs = by_level
        .into_iter()
        .map(|(level, fs)| PlanRun {
            level,
            files: fs.len(),
            bytes: fs.iter().map(|f| f.file_size.max(0) as u64).sum(),
            rows: fs.iter().map(|f| f.row_count).sum(),
        })
        .collect();
    let small = files
        .iter()
        .filter(|f| (f.file_size.max(0) as u64) < settings.compaction_file_size)
        .count();
    let groups = pick_append(&files, unaware, settings, false, vectors);
    let has_vector = |f: &DataFileMeta| vectors.is_some_and(|v| v.contains_key(&f.file_name));
    let picks: Vec<PlanPick> = groups
        .iter()
        .map(|g| {
            // bucket-unaware: files with vectors are grouped by index file and always compacted
            // (a bucketed table's non-full pick is by size and count only, as Java's)
            let by_vectors = unaware && g.iter().any(has_vector);
            pick_of(
                g,
                0,
                if by_vectors {
                    "deletion-vectors"
                } else {
                    "small-files"
                },
            )
        })
        .collect();
    let mut head = format!(
        "{small} of {} files are small (< {} bytes); compaction.min.file-num {}, target {} bytes",
        files.len(),
        settings.compaction_file_size,
        settings.min_file_num,
        settings.target_file_size
    );
    if let Some(v) = vectors {
        let marked: Vec<&DataFileMeta> = files.iter().filter(|f| has_vector(f)).collect();
        if !marked.is_empty() {
            let deleted: i64 = marked
                .iter()
                .filter_map(|f| v.get(&f.file_name)?.cardinality)
                .sum();
            head.push_str(&format!(
                "; {} files have deletion vectors ({deleted} deleted rows{})",
                marked.len(),
                if unaware {
                    format!(
                        ", a file is compacted whatever its size once they exceed \
                         compaction.delete-ratio-threshold {}",
                        settings.delete_ratio_threshold
                    )
                } else {
                    ": compact(full=True) rewrites them whatever their size".to_string()
                }
            ));
        }
    }
    let explanation = if picks.is_empty() {
        format!("{head}: nothing to compact")
    } else {
        format!(
            "{head}: rewrite {} group(s) of {} files",
            picks.len(),
            picks.iter().map(|p| p.files).sum::<usize>()
        )
    };
    (runs, picks, explanation)
}

/// The compaction plan of every (partition, bucket) of the latest snapshot, ordered by
/// partition path then bucket. Empty for a table without snapshots.
pub fn compaction_plan(table: &FileStoreTable) -> Result<Vec<BucketPlan>> {
    compaction_plan_inner(table).map_err(|e| e.with_table(&table.name))
}

fn compaction_plan_inner(table: &FileStoreTable) -> Result<Vec<BucketPlan>> {
    let Some(snapshot) = table.snapshot_manager().latest()? else {
        return Ok(vec![]);
    };
    let pk = table.is_primary_key();
    let buckets = bucket_files(table, &live_entries(table, &snapshot)?, None)?;
    let pk_settings = if pk {
        Some(CompactSettings::from_table(table)?)
    } else {
        None
    };
    let append_settings = AppendCompactSettings::from_table(table)?;
    // a deletion-vector table's vectors: §3.8's picks of a primary-key table (their
    // cardinalities), an append table's picks by its vectors (`pick_append`)
    let append_dv = !pk && table.options.deletion_vectors()?;
    let mut vectors = match &pk_settings {
        Some(s) if s.delete_ratio_threshold.is_some() => {
            deletion_files_of(table, snapshot.index_manifest.as_deref())?
        }
        None if append_dv => deletion_files_of(table, snapshot.index_manifest.as_deref())?,
        _ => Default::default(),
    };
    let mut out = vec![];
    for ((part, bucket), (total_buckets, files, bucket_path)) in buckets {
        let partition = bucket_path
            .strip_suffix(&crate::table::bucket_dir_name(bucket))
            .unwrap_or("");
        let partition = partition
            .strip_prefix(&table.data_file_dir_prefix())
            .unwrap_or(partition)
            .to_string();
        let (runs, picks, explanation) = match &pk_settings {
            Some(s) => {
                let dvs = vectors.remove(&(part, bucket)).unwrap_or_default();
                pk_plan(table, s, files, &dvs)?
            }
            None => {
                let dvs = vectors.remove(&(part, bucket)).unwrap_or_default();
                let unaware = bucket == -1 || total_buckets == -1;
                append_plan(&append_settings, unaware, files, append_dv.then_some(&dvs))
            }
        };
        out.push(BucketPlan {
            partition,
            bucket,
            primary_key: pk,
            runs,
            picks,
            explanation,
        });
    }
    out.sort_by(|a, b| (&a.partition, a.bucket).cmp(&(&b.partition, b.bucket)));
    Ok(out)
}

/// What a compaction snapshot changed: files, bytes and rows it removed (`before`) and added
/// (`after`), the difference of the live files of `snapshot_id - 1` and `snapshot_id`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CompactionSummary {
    pub files_before: usize,
    pub files_after: usize,
    pub bytes_before: u64,
    pub bytes_after: u64,
    pub rows_before: i64,
    pub rows_after: i64,
}

pub fn compaction_summary(table: &FileStoreTable, snapshot_id: i64) -> Result<CompactionSummary> {
    use std::collections::HashMap;
    let sm = table.snapshot_manager();
    let after = live_entries(table, &sm.snapshot(snapshot_id)?)?;
    let before = if snapshot_id > 1 {
        live_entries(table, &sm.snapshot(snapshot_id - 1)?)?
    } else {
        vec![]
    };
    let key = |e: &crate::spec::manifest::ManifestEntry| {
        (e.partition.clone(), e.bucket, e.file.file_name.clone())
    };
    let old: HashMap<_, _> = before.iter().map(|e| (key(e), &e.file)).collect();
    let new: HashMap<_, _> = after.iter().map(|e| (key(e), &e.file)).collect();
    let mut s = CompactionSummary::default();
    for (k, f) in &old {
        if !new.contains_key(k) {
            s.files_before += 1;
            s.bytes_before += f.file_size.max(0) as u64;
            s.rows_before += f.row_count;
        }
    }
    for (k, f) in &new {
        if !old.contains_key(k) {
            s.files_after += 1;
            s.bytes_after += f.file_size.max(0) as u64;
            s.rows_after += f.row_count;
        }
    }
    Ok(s)
}
