//! The live files of a snapshot: its manifest lists read, entries merged (ADD minus DELETE),
//! pruned by partition (paimon-format.md §4.5). Scans, writers (restoring sequence numbers),
//! commits (conflict checks) and compaction all start from here.

use std::collections::BTreeMap;

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::io;
use crate::predicate::{ColumnStat, LeafOp, Predicate};
use crate::spec::binary_row::deserialize_row;
use crate::spec::datum::Datum;
use crate::spec::manifest::{
    merge_entries, read_manifest_list, ManifestEntry, ManifestFileMeta, SimpleStats,
};
use crate::spec::snapshot::Snapshot;
use crate::spec::types::DataType;
use crate::table::FileStoreTable;

/// A manifest list of `snapshot` (`what`: its base or delta list).
pub(crate) fn read_list(
    table: &FileStoreTable,
    snapshot: &Snapshot,
    name: &str,
) -> Result<Vec<ManifestFileMeta>> {
    let p = table.manifest_dir().join(name);
    let referrer = format!("snapshot {} of table {}", snapshot.id, table.name);
    read_manifest_list(&io::read_referenced(&p, &referrer)?, &p)
}

/// The manifests of `snapshot`'s base and delta lists, base first. On an object store the two
/// lists are fetched at once (one round trip, not two: every scan, restore and commit reads
/// them); locally one after the other.
pub(crate) fn read_base_and_delta(
    table: &FileStoreTable,
    snapshot: &Snapshot,
) -> Result<Vec<ManifestFileMeta>> {
    let (base, delta) = if io::is_remote(&table.manifest_dir()) {
        // a scoped thread, not rayon: this may run outside the process's pool
        std::thread::scope(|sc| {
            let delta = sc.spawn(|| read_list(table, snapshot, &snapshot.delta_manifest_list));
            let base = read_list(table, snapshot, &snapshot.base_manifest_list);
            let delta = delta.join().unwrap_or_else(|_| {
                Err(Error::Internal(format!(
                    "reading manifest list {} of snapshot {} of table {}: the reading thread \
                     panicked",
                    snapshot.delta_manifest_list, snapshot.id, table.name
                )))
            });
            (base, delta)
        })
    } else {
        (
            read_list(table, snapshot, &snapshot.base_manifest_list),
            read_list(table, snapshot, &snapshot.delta_manifest_list),
        )
    };
    let mut metas = base?;
    metas.extend(delta?);
    Ok(metas)
}

/// Column stats by name from a SimpleStats over `names`/`types`.
pub(crate) fn stats_lookup(
    stats: &SimpleStats,
    names: &[String],
    types: &[DataType],
    row_count: i64,
) -> Option<Vec<(String, ColumnStat)>> {
    let mins = deserialize_row(types, &stats.min_values).ok()?;
    let maxs = deserialize_row(types, &stats.max_values).ok()?;
    Some(
        names
            .iter()
            .enumerate()
            .map(|(i, n)| {
                (
                    n.clone(),
                    ColumnStat {
                        min: mins.get(i).cloned().flatten(),
                        max: maxs.get(i).cloned().flatten(),
                        null_count: stats.null_counts.get(i).copied().flatten(),
                        row_count,
                    },
                )
            })
            .collect(),
    )
}

pub(crate) fn test_stats(pred: &Predicate, stats: &[(String, ColumnStat)]) -> bool {
    pred.test(&|f: &str| stats.iter().find(|(n, _)| n == f).map(|(_, s)| s.clone()))
}

/// May manifest `m` hold entries of partitions matching `filter` (by its partition stats)?
pub fn manifest_may_match(
    m: &ManifestFileMeta,
    partition_keys: &[String],
    partition_types: &[DataType],
    filter: &Predicate,
) -> bool {
    match stats_lookup(
        &m.partition_stats,
        partition_keys,
        partition_types,
        m.num_added_files + m.num_deleted_files,
    ) {
        Some(s) => test_stats(filter, &s),
        None => true,
    }
}

/// Live files of a snapshot, keeping only partitions that may match `partition_filter`.
pub fn live_entries_filtered(
    table: &FileStoreTable,
    snapshot: &Snapshot,
    partition_filter: Option<&Predicate>,
) -> Result<Vec<ManifestEntry>> {
    let entries = (|| {
        let metas = read_base_and_delta(table, snapshot)?;
        live_entries_of(table, metas, partition_filter)
    })();
    entries.map_err(|e| match e {
        Error::CorruptFile { path, message } => expired_or(
            table,
            snapshot.id,
            Error::CorruptFile {
                path,
                message: format!("{message} (reading snapshot {})", snapshot.id),
            },
        ),
        e => e,
    })
}

/// A filter admitting exactly these partitions (serialized BinaryRows); None for an
/// unpartitioned table.
pub fn partitions_filter<'a>(
    table: &FileStoreTable,
    partitions: impl IntoIterator<Item = &'a [u8]>,
) -> Result<Option<Predicate>> {
    let keys = table.partition_keys();
    if keys.is_empty() {
        return Ok(None);
    }
    let types = table.partition_types()?;
    let partitions: std::collections::HashSet<&[u8]> = partitions.into_iter().collect();
    let mut any = Vec::with_capacity(partitions.len());
    for p in partitions {
        let mut all = Vec::with_capacity(keys.len());
        for (k, v) in keys.iter().zip(deserialize_row(&types, p)?) {
            all.push(match v {
                None => Predicate::leaf(k, LeafOp::IsNull, vec![])?,
                Some(d) => Predicate::leaf(k, LeafOp::Equal, vec![Some(d)])?,
            });
        }
        any.push(Predicate::And(all));
    }
    Ok(Some(Predicate::Or(any)))
}

/// Live files listed by `metas` (a snapshot's base then delta manifests, already read),
/// keeping only partitions that may match `partition_filter`.
pub fn live_entries_of(
    table: &FileStoreTable,
    mut metas: Vec<ManifestFileMeta>,
    partition_filter: Option<&Predicate>,
) -> Result<Vec<ManifestEntry>> {
    let pkeys = table.partition_keys().to_vec();
    let ptypes = table.partition_types()?;
    if let Some(f) = partition_filter {
        // Manifest-level pruning with the partition stats; DELETE entries of a pruned manifest
        // can only concern files in partitions the filter rejects, so this is safe.
        metas.retain(|m| manifest_may_match(m, &pkeys, &ptypes, f));
    }
    let per_manifest: Vec<Result<Vec<ManifestEntry>>> = metas
        .par_iter()
        .map(|m| {
            let p = table.manifest_dir().join(&m.file_name);
            let referrer = format!("a manifest list of table {}", table.name);
            crate::spec::read_manifest_entries_cached(&p, &referrer)
        })
        .collect();
    let mut all = vec![];
    for r in per_manifest {
        all.extend(r?);
    }
    let mut live = merge_entries(all)?;
    if let Some(f) = partition_filter {
        let mut keep = Vec::with_capacity(live.len());
        let mut cache: BTreeMap<Vec<u8>, bool> = BTreeMap::new();
        for e in live {
            let ok = match cache.get(&e.partition) {
                Some(&b) => b,
                None => {
                    let vals = deserialize_row(&ptypes, &e.partition)?;
                    let b = partition_matches(f, &pkeys, &vals);
                    cache.insert(e.partition.clone(), b);
                    b
                }
            };
            if ok {
                keep.push(e);
            }
        }
        live = keep;
    }
    Ok(live)
}

pub fn partition_matches(f: &Predicate, keys: &[String], vals: &[Option<Datum>]) -> bool {
    f.test(&|name: &str| {
        let i = keys.iter().position(|k| k == name)?;
        let v = vals.get(i).cloned().flatten();
        Some(ColumnStat {
            null_count: Some(if v.is_none() { 1 } else { 0 }),
            min: v.clone(),
            max: v,
            row_count: 1,
        })
    })
}

/// All live files of a snapshot.
pub fn live_entries(table: &FileStoreTable, snapshot: &Snapshot) -> Result<Vec<ManifestEntry>> {
    live_entries_filtered(table, snapshot, None)
}

/// A file missing while a split of snapshot `id` is read: if the snapshot is gone (expired or
/// rolled back since the plan), say so (`SnapshotExpired`), never return fewer rows.
pub(crate) fn expired_or(table: &FileStoreTable, id: i64, e: Error) -> Error {
    if missing_since_gone(table, id, &e) {
        return Error::SnapshotExpired {
            table: table.name.clone(),
            message: format!(
                "snapshot {id} was expired (or rolled back) while it was being read, and its \
                 files are being deleted ({e}); read a retained snapshot or a tag \
                 (snapshot.num-retained.min / snapshot.time-retained keep snapshots longer)"
            ),
        };
    }
    e.with_table(&table.name)
}

/// Whether `e` is a file found missing (not found, or a manifest naming a file that is gone)
/// and snapshot `id` no longer exists and no tag holds it: an expiry or rollback deleted the
/// files since `id` was read, so the error is a race, not damage.
pub(crate) fn missing_since_gone(table: &FileStoreTable, id: i64, e: &Error) -> bool {
    let missing = match e {
        Error::Io { source, .. } => source.kind() == std::io::ErrorKind::NotFound,
        Error::CorruptFile { message, .. } => message.contains("missing"),
        _ => false,
    };
    let sm = table.snapshot_manager();
    missing && !crate::io::exists(&sm.snapshot_path(id)) && !tagged(&sm, id)
}

fn tagged(sm: &super::snapshot_manager::SnapshotManager, id: i64) -> bool {
    sm.tags()
        .map(|t| t.iter().any(|(_, s)| s.id == id))
        .unwrap_or(false)
}
