//! Table compaction split across processes (`paimon_rs.spark.compact`): the driver plans the
//! buckets that need work ([`plan_buckets`]), one task per bucket compacts it
//! ([`compact_one_bucket`]) and returns its commit message, and the driver commits all messages
//! as one COMPACT snapshot. A work item is a [`Split`] holding the bucket's live files (it
//! serializes with `Split::to_bytes`). A streaming commit of a `full-compaction` changelog
//! table also fully compacts, through the same two steps, the buckets written earlier in its
//! window ([`compact_full_window`]).

use super::append::{check_compactable, compact_append_bucket, pick_append, AppendCompactSettings};
use super::bucket::{bucket_compactor, compact_pk_bucket};
use super::full_changelog::{
    full_compaction_due, full_compaction_interval, full_compaction_window,
};
use super::work::bucket_splits;
use super::CompactSettings;
use crate::commit::CommitMessage;
use crate::error::Result;
use crate::read::split::Split;
use crate::read::table_read::TableRead;
use crate::spec::partition::PartitionSpec;
use crate::table::FileStoreTable;
use crate::write::deletion_vectors::DeletionVectorsMaintainer;

fn check(table: &FileStoreTable) -> Result<()> {
    if table.is_primary_key() {
        table.check_writable()
    } else {
        check_compactable(table)
    }
}

/// The buckets of the latest snapshot that a compaction (`full`, or the picker's choice per
/// bucket) would rewrite, of the partitions matching one of `partitions` (all if None), each
/// as a split of its live files. Empty if the table has no snapshot or nothing to compact.
pub fn plan_buckets(
    table: &FileStoreTable,
    full: bool,
    partitions: Option<&[PartitionSpec]>,
) -> Result<Vec<Split>> {
    plan_inner(table, full, partitions).map_err(|e| e.with_table(&table.name))
}

fn plan_inner(
    table: &FileStoreTable,
    full: bool,
    partitions: Option<&[PartitionSpec]>,
) -> Result<Vec<Split>> {
    check(table)?;
    let Some(snapshot) = table.snapshot_manager().latest()? else {
        return Ok(vec![]);
    };
    let pk = table.is_primary_key();
    let pk_settings = if pk {
        Some(CompactSettings::from_table(table)?)
    } else {
        None
    };
    // a deletion-vector table's vectors decide some picks (§3.7, §3.8)
    let live_index = match &pk_settings {
        Some(s) if s.deletion_vectors => Some(DeletionVectorsMaintainer::live_index_of(
            table,
            Some(&snapshot),
        )?),
        _ => None,
    };
    let append_settings = if pk {
        None
    } else {
        Some(AppendCompactSettings::from_table(table)?)
    };
    let mut out = vec![];
    for mut b in bucket_splits(table, &snapshot, partitions)? {
        if !pk {
            super::append::attach_vectors(table, &mut b)?;
        }
        let needed = match (&pk_settings, &append_settings) {
            (Some(s), _) => bucket_compactor(table, s, &b, live_index.as_deref())?
                .0
                .would_compact(full),
            (None, Some(s)) => {
                let unaware = b.bucket == -1 || b.total_buckets == -1;
                let dv = table.options.deletion_vectors()?;
                !pick_append(&b.files, unaware, s, full, dv.then_some(&b.deletion_files)).is_empty()
            }
            (None, None) => false,
        };
        if needed {
            out.push(b);
        }
    }
    // a stable order: the same plan gives the same task numbering
    out.sort_by(|a, b| (&a.partition, a.bucket).cmp(&(&b.partition, b.bucket)));
    Ok(out)
}

/// Compact one bucket planned by [`plan_buckets`] (`full`, or what the picker chooses now):
/// its COMPACT commit message, not committed; None if nothing was left to do. On error the
/// files written are removed. The files are named with the table's `data-file.prefix`.
pub fn compact_one_bucket(
    table: &FileStoreTable,
    work: &Split,
    full: bool,
) -> Result<Option<CommitMessage>> {
    compact_one_inner(table, work, full).map_err(|e| e.with_table(&table.name))
}

fn compact_one_inner(
    table: &FileStoreTable,
    work: &Split,
    full: bool,
) -> Result<Option<CommitMessage>> {
    check(table)?;
    let b = work.clone();
    if table.is_primary_key() {
        let s = CompactSettings::from_table(table)?;
        Ok(compact_pk_bucket(table, &s, b, full, None)?.map(|(m, _)| m))
    } else {
        let s = AppendCompactSettings::from_table(table)?;
        let reader = TableRead::new(table.clone(), None, None)?;
        compact_append_bucket(table, &reader, &s, b, full)
    }
}

/// When `commit_identifier` is a full compaction's ([`full_compaction_due`](super::full_changelog::full_compaction_due); else nothing):
/// the full compaction of the buckets in `commit_user`'s window
/// ([`full_compaction_window`]) other than `except` (those its commit compacts itself), each
/// as a COMPACT commit message, not committed (Java's `submitFullCompaction` for the buckets
/// a writer touched earlier in the window). Buckets with nothing to compact give none. On
/// error the files of the messages already made are deleted.
pub fn compact_full_window(
    table: &crate::table::FileStoreTable,
    commit_user: &str,
    commit_identifier: i64,
    except: &[(Vec<u8>, i32)],
) -> Result<Vec<crate::commit::CommitMessage>> {
    if !full_compaction_due(full_compaction_interval(&table.options), commit_identifier) {
        return Ok(vec![]);
    }
    let window =
        full_compaction_window(table, commit_user).map_err(|e| e.with_table(&table.name))?;
    let except: std::collections::HashSet<&(Vec<u8>, i32)> = except.iter().collect();
    let todo: std::collections::HashSet<&(Vec<u8>, i32)> =
        window.iter().filter(|k| !except.contains(k)).collect();
    if todo.is_empty() {
        return Ok(vec![]);
    }
    let splits = plan_buckets(table, true, None)?;
    let mut out = vec![];
    for split in splits {
        if !todo.contains(&(split.partition.clone(), split.bucket)) {
            continue;
        }
        match compact_one_bucket(table, &split, true) {
            Ok(Some(m)) => out.push(m),
            Ok(None) => {}
            Err(e) => {
                let c = crate::commit::FileStoreCommit::new(table.clone(), commit_user.into());
                let _ = c.abort(&out);
                return Err(e);
            }
        }
    }
    Ok(out)
}
