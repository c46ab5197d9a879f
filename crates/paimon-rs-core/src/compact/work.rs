//! What primary-key and append compaction share: the units of work of a table compaction
//! (one split per selected (partition, bucket)), the options both read, and the commit of
//! their results as one COMPACT snapshot.

use std::collections::{BTreeMap, HashMap};

use crate::commit::{CommitMessage, FileStoreCommit};
use crate::error::{Error, Result};
use crate::read::split::Split;
use crate::spec::binary_row::deserialize_row;
use crate::spec::datum::compare_nullable;
use crate::spec::manifest::DataFileMeta;
use crate::spec::partition::partition_path;
use crate::spec::partition::PartitionSpec;
use crate::spec::snapshot::BATCH_COMMIT_IDENTIFIER;
use crate::table::live::live_entries;
use crate::table::FileStoreTable;

/// `compaction.small-file-ratio` (default 0.7), shared by primary-key and append compaction.
pub(super) fn small_file_ratio(o: &BTreeMap<String, String>) -> Result<f64> {
    ratio_option(o, "compaction.small-file-ratio", 0.7)
}

/// Option `key`, a ratio in 0..1 (`default` when unset).
pub(super) fn ratio_option(o: &BTreeMap<String, String>, key: &str, default: f64) -> Result<f64> {
    match o.get(key) {
        None => Ok(default),
        Some(v) => v
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|r| (0.0..=1.0).contains(r))
            .ok_or_else(|| {
                Error::invalid(format!("option '{key}' = '{v}': expected a ratio in 0..1"))
            }),
    }
}

pub(super) fn bool_opt(o: &BTreeMap<String, String>, k: &str) -> Result<bool> {
    match o.get(k).map(|v| v.trim().to_ascii_lowercase()) {
        None => Ok(false),
        Some(v) if v == "true" => Ok(true),
        Some(v) if v == "false" => Ok(false),
        Some(v) => Err(Error::invalid(format!(
            "option '{k}' = '{v}': expected true or false"
        ))),
    }
}

/// Whether a partition (serialized) matches one of `specs` (each: equality on some partition
/// columns; an empty spec matches all).
pub(super) fn partition_selected(
    table: &FileStoreTable,
    partition: &[u8],
    specs: &[PartitionSpec],
) -> Result<bool> {
    let types = table.partition_types()?;
    let values = deserialize_row(&types, partition)?;
    for spec in specs {
        let mut all = true;
        for (name, want) in spec {
            let i = table
                .partition_keys()
                .iter()
                .position(|k| k == name)
                .ok_or_else(|| {
                    Error::invalid(format!("compact: '{name}' is not a partition key"))
                })?;
            if compare_nullable(&values[i], want) != std::cmp::Ordering::Equal {
                all = false;
                break;
            }
        }
        if all {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Commit the compaction messages of a table's buckets (`results`: one per bucket, None when
/// it had nothing to do) as one COMPACT snapshot; on any bucket's error, or a failed commit,
/// every bucket's written files are removed through `discard`. None if nothing was compacted.
pub(super) fn commit_compactions<T>(
    table: &FileStoreTable,
    results: Vec<Result<Option<(CommitMessage, T)>>>,
    discard: impl Fn(&CommitMessage, &T),
) -> Result<Option<i64>> {
    let mut done = vec![];
    let mut first_err = None;
    for r in results {
        match r {
            Ok(Some(x)) => done.push(x),
            Ok(None) => {}
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    let discard_all = |done: &[(CommitMessage, T)]| {
        for (m, t) in done {
            discard(m, t);
        }
    };
    if let Some(e) = first_err {
        discard_all(&done);
        return Err(e);
    }
    if done.is_empty() {
        return Ok(None);
    }
    let messages: Vec<CommitMessage> = done.iter().map(|(m, _)| m.clone()).collect();
    let commit = FileStoreCommit::new(table.clone(), format!("compact-{}", uuid::Uuid::new_v4()));
    match commit.commit(&messages, BATCH_COMMIT_IDENTIFIER, None) {
        Ok(id) => Ok(id),
        Err(e) => {
            discard_all(&done);
            Err(e)
        }
    }
}

/// The live files of each selected (partition, bucket) of `snapshot` but the postpone bucket,
/// as one split each (in no particular order): the units of work of a table compaction.
pub(super) fn bucket_splits(
    table: &FileStoreTable,
    snapshot: &crate::spec::snapshot::Snapshot,
    partitions: Option<&[PartitionSpec]>,
) -> Result<Vec<Split>> {
    let buckets = bucket_files(table, &live_entries(table, snapshot)?, partitions)?;
    Ok(buckets
        .into_iter()
        // a postpone-bucket table's bucket-postpone is moved into real buckets, not compacted
        // in place (compact/postpone.rs)
        .filter(|((_, bucket), _)| *bucket != -2)
        .map(
            |((partition, bucket), (total_buckets, files, bucket_path))| Split {
                snapshot_id: snapshot.id,
                partition,
                bucket,
                total_buckets,
                bucket_path,
                files,
                raw_convertible: false,
                deletion_files: Default::default(),
                changelog: false,
                diff_before: None,
                row_slices: Default::default(),
                row_id_ranges: Vec::new(),
            },
        )
        .collect())
}

/// Live files grouped by (partition, bucket), with the total bucket count and the bucket
/// directory relative to the table; only partitions matching one of `partitions` (all if None).
#[allow(clippy::type_complexity)]
pub(super) fn bucket_files(
    table: &FileStoreTable,
    entries: &[crate::spec::manifest::ManifestEntry],
    partitions: Option<&[PartitionSpec]>,
) -> Result<HashMap<(Vec<u8>, i32), (i32, Vec<DataFileMeta>, String)>> {
    let types = table.partition_types()?;
    let o = &table.options;
    let mut selected: HashMap<Vec<u8>, Option<String>> = HashMap::new();
    let mut out: HashMap<(Vec<u8>, i32), (i32, Vec<DataFileMeta>, String)> = HashMap::new();
    for e in entries {
        let pp = match selected.get(&e.partition) {
            Some(p) => p.clone(),
            None => {
                let keep = match partitions {
                    None => true,
                    Some(specs) => partition_selected(table, &e.partition, specs)?,
                };
                let p = if keep {
                    let values = deserialize_row(&types, &e.partition)?;
                    Some(partition_path(
                        table.partition_keys(),
                        &types,
                        &values,
                        &o.partition_default_name,
                        o.partition_legacy_name,
                    )?)
                } else {
                    None
                };
                selected.insert(e.partition.clone(), p.clone());
                p
            }
        };
        let Some(pp) = pp else { continue };
        let slot = out
            .entry((e.partition.clone(), e.bucket))
            .or_insert_with(|| (e.total_buckets, vec![], table.bucket_path(&pp, e.bucket)));
        slot.1.push(e.file.clone());
    }
    Ok(out)
}
