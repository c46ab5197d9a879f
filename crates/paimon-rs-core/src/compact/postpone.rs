//! Compaction of a postpone-bucket table (`bucket = -2`, Java's `PostponeBucketCompactSplitSource`
//! and `PostponeUtils`): the records of each partition's `bucket-postpone` files, replayed in
//! the order they were written, are written into the partition's real buckets (the bucket
//! count its real buckets already have, else `postpone.default-bucket-num`, else estimated
//! from `postpone.target-row-num-per-bucket` or `postpone.target-size-per-bucket`), after
//! what those buckets hold; the postpone files are removed in the same COMPACT snapshot.

use std::collections::{BTreeMap, HashMap};

use arrow_array::{Array, Int8Array, RecordBatch, StringArray};

use super::work::bucket_files;
use crate::commit::{CommitMessage, FileStoreCommit};
use crate::error::{Error, Result};
use crate::options::PostponeOptions;
use crate::read::split::Split;
use crate::read::table_read::TableRead;
use crate::spec::partition::PartitionSpec;
use crate::spec::row_kind::RowKind;
use crate::spec::snapshot::BATCH_COMMIT_IDENTIFIER;
use crate::table::live::live_entries;
use crate::table::FileStoreTable;
use crate::write::TableWrite;

/// The postpone bucket's id.
const POSTPONE_BUCKET: i32 = -2;

/// Whether `table` is a postpone-bucket primary-key table.
pub(crate) fn is_postpone(table: &FileStoreTable) -> bool {
    table.is_primary_key() && table.options.bucket == POSTPONE_BUCKET
}

/// Move the postpone files of the selected partitions into real buckets, committed as one
/// COMPACT snapshot (its id); None when there were none. The new files are level-0 files of
/// their buckets, with sequence numbers after the buckets' own (later writes win).
pub(crate) fn compact_postpone(
    table: &FileStoreTable,
    partitions: Option<&[PartitionSpec]>,
) -> Result<Option<i64>> {
    let options = table.options.postpone()?;
    let Some(snapshot) = table.snapshot_manager().latest()? else {
        return Ok(None);
    };
    let groups = bucket_files(table, &live_entries(table, &snapshot)?, partitions)?;
    let mut known: HashMap<Vec<u8>, i32> = HashMap::new();
    let mut pending = vec![];
    for ((partition, bucket), (total, files, path)) in groups {
        if bucket == POSTPONE_BUCKET {
            if !files.is_empty() {
                pending.push((partition, total, files, path));
            }
            continue;
        }
        if let Some(old) = known.insert(partition.clone(), total) {
            if old != total {
                return Err(Error::invalid(format!(
                    "a partition's real buckets have different total buckets {old} and {total}"
                )));
            }
        }
    }
    if pending.is_empty() {
        return Ok(None);
    }
    // the partitions by the bucket count their rows go to: one writer per count
    let mut by_count: BTreeMap<i32, Vec<_>> = BTreeMap::new();
    for p in pending {
        let n = match known.get(&p.0) {
            Some(&n) => n,
            None => bucket_num(
                &options,
                p.2.iter().map(|f| f.row_count).sum(),
                p.2.iter().map(|f| f.file_size).sum(),
            )?,
        };
        by_count.entry(n).or_default().push(p);
    }
    let commit = FileStoreCommit::new(
        table.clone(),
        format!("postpone-compact-{}", uuid::Uuid::new_v4()),
    );
    let mut messages = vec![];
    for (n, parts) in by_count {
        let mut real = table.clone();
        real.options.bucket = n;
        // the real buckets' files are compacted afterwards, by the table's compaction (so no
        // changelog, deletion-vector or index file comes out of this write: only data files)
        real.options.write_only = true;
        let mut write = TableWrite::new(real)?;
        if let Err(e) = move_group(table, &snapshot, &mut write, parts, &mut messages) {
            // the files this writer flushed since it started, then those of the groups
            // already prepared (none is in a snapshot)
            write.abort();
            discard(&commit, &messages);
            return Err(e);
        }
    }
    match commit.commit(&messages, BATCH_COMMIT_IDENTIFIER, None) {
        Ok(id) => Ok(id),
        Err(e) => {
            discard(&commit, &messages);
            Err(e)
        }
    }
}

/// Replay the postpone files of `parts` (partitions with the same bucket count) into `write`,
/// then its prepared files as compaction outputs replacing them, into `messages`.
fn move_group(
    table: &FileStoreTable,
    snapshot: &crate::spec::snapshot::Snapshot,
    write: &mut TableWrite,
    parts: Vec<(
        Vec<u8>,
        i32,
        Vec<crate::spec::manifest::DataFileMeta>,
        String,
    )>,
    messages: &mut Vec<CommitMessage>,
) -> Result<()> {
    let read = TableRead::with_row_kinds(table.clone(), None, None)?;
    for (partition, total, mut files, bucket_path) in parts {
        // a writer's files in the order written (Java groups by writer prefix, then
        // creation time; different writers have no order between them)
        files.sort_by_key(|f| f.creation_time.unwrap_or(i64::MIN));
        let split = Split {
            snapshot_id: snapshot.id,
            partition: partition.clone(),
            bucket: POSTPONE_BUCKET,
            total_buckets: total,
            bucket_path,
            files: files.clone(),
            raw_convertible: false,
            deletion_files: Default::default(),
            // read as stored: every record in file order, with its kind
            changelog: true,
            diff_before: None,
            row_slices: Default::default(),
            row_id_ranges: Vec::new(),
        };
        for batch in read.read_split(&split)? {
            let (values, kinds) = split_kinds(&batch)?;
            write.write_kinds(&values, kinds)?;
        }
        messages.push(CommitMessage {
            partition,
            bucket: POSTPONE_BUCKET,
            total_buckets: total,
            data_increment: Default::default(),
            compact_increment: crate::commit::CompactIncrement {
                compact_before: files,
                ..Default::default()
            },
            restored_snapshot: None,
        });
    }
    for mut m in write.prepare_commit()? {
        // the new files replace the postpone files: a compaction's output
        let inc = std::mem::take(&mut m.data_increment);
        let others = !inc.changelog_files.is_empty()
            || !inc.new_index_files.is_empty()
            || !inc.deleted_index_files.is_empty();
        m.compact_increment.compact_after.extend(inc.new_files);
        messages.push(m);
        if others {
            // a write-only writer makes none; moving them as compaction files is not built
            return Err(Error::unsupported(format!(
                "table '{}': moving postpone files made changelog or index files, which a \
                 postpone compaction does not commit",
                table.name
            )));
        }
    }
    Ok(())
}

/// Delete the new real-bucket files of `messages`, which will not be committed (the commit's
/// abort: it keeps any file a snapshot references, for a commit whose outcome is unknown).
fn discard(commit: &FileStoreCommit, messages: &[CommitMessage]) {
    if let Err(e) = commit.abort(messages) {
        log::warn!("postpone compaction: its new files were not deleted: {e}");
    }
}

/// The bucket count of a partition with no real bucket yet (Java's
/// `PostponeUtils.loadPostponeBucketNumResolver`): `postpone.default-bucket-num`, else its
/// postpone rows over `postpone.target-row-num-per-bucket`, else their file bytes over
/// `postpone.target-size-per-bucket`, rounded up (at least 1).
fn bucket_num(o: &PostponeOptions, rows: i64, bytes: i64) -> Result<i32> {
    if let Some(n) = o.default_bucket_num {
        return Ok(n);
    }
    let (value, target, key) = match o.target_row_num_per_bucket {
        Some(t) => (rows, t, "postpone.target-row-num-per-bucket"),
        None => (
            bytes,
            o.target_size_per_bucket.min(i64::MAX as u64) as i64,
            "postpone.target-size-per-bucket",
        ),
    };
    let n = if value <= 0 {
        1
    } else {
        (value - 1) / target + 1
    };
    i32::try_from(n).map_err(|_| {
        Error::invalid(format!(
            "Computed postpone bucket number {n} exceeds the maximum integer value \
             (Integer.MAX_VALUE = {}). Consider increasing '{key}' to reduce the bucket count.",
            i32::MAX
        ))
    })
}

/// A row-kind read's batch as the table's columns and each row's kind byte.
fn split_kinds(batch: &RecordBatch) -> Result<(RecordBatch, Int8Array)> {
    let column = batch.column(0);
    let names = column
        .as_any()
        .downcast_ref::<StringArray>()
        .ok_or_else(|| Error::Internal("a row-kind read without its rowkind column".into()))?;
    let kinds = (0..names.len())
        .map(|i| {
            RowKind::from_short_string(names.value(i))
                .map(RowKind::byte)
                .ok_or_else(|| Error::Internal(format!("unknown row kind '{}'", names.value(i))))
        })
        .collect::<Result<Vec<i8>>>()?;
    Ok((
        batch.project(&(1..batch.num_columns()).collect::<Vec<_>>())?,
        Int8Array::from(kinds),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(default: Option<i32>, rows: Option<i64>, size: u64) -> PostponeOptions {
        PostponeOptions {
            default_bucket_num: default,
            target_row_num_per_bucket: rows,
            target_size_per_bucket: size,
        }
    }

    #[test]
    fn bucket_num_as_java_resolves_it() {
        // the default first, exactly
        assert_eq!(bucket_num(&opts(Some(3), Some(1), 1), 15, 400).unwrap(), 3);
        // rows over the row target, rounded up
        assert_eq!(bucket_num(&opts(None, Some(4), 1), 15, 400).unwrap(), 4);
        assert_eq!(bucket_num(&opts(None, Some(15), 1), 15, 400).unwrap(), 1);
        // else bytes over the size target
        assert_eq!(bucket_num(&opts(None, None, 100), 15, 400).unwrap(), 4);
        assert_eq!(bucket_num(&opts(None, None, 1 << 30), 15, 400).unwrap(), 1);
        assert_eq!(bucket_num(&opts(None, None, 1), 0, 0).unwrap(), 1);
        let err = bucket_num(&opts(None, Some(1), 1), i64::MAX, 0).unwrap_err();
        assert!(err.to_string().contains("exceeds the maximum"), "{err}");
    }
}
