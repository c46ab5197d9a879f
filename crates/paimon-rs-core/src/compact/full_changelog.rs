//! `changelog-producer = full-compaction` (paimon-behaviour.md §9.4; Java's
//! `FullChangelogMergeTreeCompactRewriter` and `FullChangelogMergeFunctionWrapper`): a
//! compaction whose output is the max level (a full compaction: universal compaction writes
//! the max level only when it takes every run, §3.1) produces the changelog of the bucket since
//! the previous full compaction, key by key: the record the key had at the max level (the
//! previous full compaction's result) against the merge of all of its records. Other
//! compactions produce none. A file upgraded to the max level without a rewrite still emits
//! `+I` for each of its records (Java's `CHANGELOG_NO_REWRITE`).
//!
//! With `force-lookup` (the only way a `full-compaction` table needs lookup: first-row and
//! deletion vectors are refused with it) level-0 files are forced up at each commit
//! (`ForceUpLevel0Compaction`); a force-up into a level below the max makes no changelog, and
//! the merges keep only a key's lowest level > 0 (`LookupMergeFunction`).
//!
//! When a writer's commit is a full compaction is decided by [`full_compaction_due`].

use super::lookup_rewrite::{diff_changelog, merge_result, ChangelogMode};
use crate::error::{Error, Result};
use crate::merge::engine::{Bound, MergeFunction};
use crate::merge::source::{Rec, Source};
use crate::options::{ChangelogProducer, CoreOptions};
use crate::spec::row_kind::{is_retract_byte as is_retract, RowKind};

/// The merge function of a rewrite into the max level of a `full-compaction` table, around
/// the engine's function: it sees every group (a lone record too) with each record's level.
pub struct FullChangelogWrapper {
    pub inner: Box<dyn MergeFunction>,
    pub max_level: i32,
    pub mode: ChangelogMode,
    /// A table that needs lookup (`force-lookup`): the engine's function merges a key's
    /// level-0 records and its record of the lowest level > 0 only (Java wraps the engine's
    /// function in `LookupMergeFunction` for such tables, `PrimaryKeyFileStoreTable.store`;
    /// the lowest record embodies the older ones, see `MergeTreeRewriter`).
    pub lookup_merge: bool,
}

impl MergeFunction for FullChangelogWrapper {
    fn merge(&mut self, b: &mut Bound, group: &[Rec], sources: &[Source]) -> Result<()> {
        let mut top = None;
        for &r in group {
            if b.level_of(sources, r) == self.max_level {
                if top.is_some() {
                    // the max level is one sorted run: a key has one record there
                    return Err(Error::Internal(format!(
                        "two records of one key at the max level {} (a corrupt bucket: its max \
                         level's files overlap)",
                        self.max_level
                    )));
                }
                top = Some(r);
            }
        }
        if let [only] = group {
            // a lone record is the result as it is; new (not from the max level) adds emit +I,
            // and the max level's own record is no change
            let only = *only;
            if top.is_none() && !is_retract(b.kind_of(sources, only)) {
                let seq = sources[only.src as usize].seq[only.row as usize];
                let cells = b.cells_of(only);
                b.push_changelog(only, seq, RowKind::Insert.byte(), cells);
            }
            b.push_row(only, sources);
            return Ok(());
        }
        let before_len = b.out_len();
        if self.lookup_merge {
            let lowest = b.lowest_level_only(group, sources);
            b.merge_inner(self.inner.as_mut(), &lowest, sources)?;
        } else {
            b.merge_inner(self.inner.as_mut(), group, sources)?;
        }
        let after = merge_result(b, sources, before_len);
        // the max level holds no retraction (full compactions drop them); one read from an
        // odd table counts as absent
        let before = top.filter(|t| !is_retract(b.kind_of(sources, *t)));
        diff_changelog(b, sources, &self.mode, before, after)
    }
}

/// The number of commits between a writer's full compactions, if its commits compact fully:
/// `full-compaction.delta-commits`, or 1 for `changelog-producer = full-compaction` without it
/// (Java's Flink sink, `FlinkSink.createWriteProvider`: either option makes every writer a
/// `GlobalFullCompactionSinkWrite` with `max(delta-commits, 1)`).
pub fn full_compaction_interval(o: &CoreOptions) -> Option<u32> {
    match o.full_compaction_delta_commits {
        Some(n) => Some(n),
        None if o.changelog_producer == ChangelogProducer::FullCompaction => Some(1),
        None => None,
    }
}

/// Whether a writer's commit with `commit_identifier` compacts its buckets fully (Java's
/// `FullCompactedStartingScanner.isFullCompactedIdentifier`, which Flink's
/// `GlobalFullCompactionSinkWrite` asks at each checkpoint): every `interval`-th identifier,
/// and always a batch commit's (`BATCH_COMMIT_IDENTIFIER`, `Long.MAX_VALUE`: Flink's batch
/// jobs, and Spark's batch writes, compact fully at each commit). The count lives in the
/// identifier, not in the writer, so a writer per commit (the Python API) counts as a
/// long-running one does.
pub fn full_compaction_due(interval: Option<u32>, commit_identifier: i64) -> bool {
    interval.is_some_and(|n| {
        commit_identifier == i64::MAX || commit_identifier.rem_euclid(i64::from(n.max(1))) == 0
    })
}

/// The buckets `commit_user` wrote since its last full compaction, from the table's snapshots
/// (the state Flink's `GlobalFullCompactionSinkWrite` keeps in its checkpoints,
/// `writtenBuckets`): the (partition, bucket) of every file its APPEND snapshots added after
/// its latest commit whose identifier was a full compaction's (that commit compacted every
/// bucket written before it). A writer that lives for one commit only (a Spark micro-batch's
/// tasks) finds its window here. Snapshots expired meanwhile are not seen.
pub fn full_compaction_window(
    table: &crate::table::FileStoreTable,
    commit_user: &str,
) -> Result<Vec<(Vec<u8>, i32)>> {
    let interval = full_compaction_interval(&table.options);
    if interval.is_none() {
        return Ok(vec![]);
    }
    let sm = table.snapshot_manager();
    let (Some(latest), Some(earliest)) = (sm.latest_id()?, sm.earliest_id()?) else {
        return Ok(vec![]);
    };
    let mut out = std::collections::BTreeSet::new();
    for id in (earliest..=latest).rev() {
        let Some(s) = sm.try_snapshot(id)? else {
            break; // expired while we walked
        };
        if s.commit_user != commit_user {
            continue;
        }
        if full_compaction_due(interval, s.commit_identifier) {
            break;
        }
        if s.commit_kind != crate::spec::snapshot::CommitKind::Append {
            continue;
        }
        let Some(entries) =
            crate::table::file_deletion::entries_of_list(table, &s.delta_manifest_list)?
        else {
            return Err(Error::Internal(format!(
                "snapshot {id}'s delta manifests cannot be read (the buckets it wrote are \
                 needed for the full compaction of commit user '{commit_user}')"
            )));
        };
        for e in entries {
            if e.kind == crate::spec::manifest::FileKind::Add {
                out.insert((e.partition, e.bucket));
            }
        }
    }
    Ok(out.into_iter().collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::CoreOptions;

    fn opts(kv: &[(&str, &str)]) -> CoreOptions {
        CoreOptions::new(&crate::options::opts(kv), true).unwrap()
    }

    /// Java's rule: `full-compaction` alone compacts fully at every commit, `delta-commits`
    /// every N-th identifier, a batch commit always; neither option: never.
    #[test]
    fn full_compactions_fall_on_every_nth_identifier_and_every_batch_commit() {
        let none = full_compaction_interval(&opts(&[]));
        assert_eq!(none, None);
        assert!(!full_compaction_due(none, i64::MAX));
        let producer =
            full_compaction_interval(&opts(&[("changelog-producer", "full-compaction")]));
        assert_eq!(producer, Some(1));
        assert!((1..5).all(|i| full_compaction_due(producer, i)));
        let three = full_compaction_interval(&opts(&[
            ("changelog-producer", "full-compaction"),
            ("full-compaction.delta-commits", "3"),
        ]));
        assert_eq!(three, Some(3));
        let due: Vec<i64> = (1..10).filter(|&i| full_compaction_due(three, i)).collect();
        assert_eq!(due, vec![3, 6, 9]);
        assert!(full_compaction_due(three, i64::MAX));
        // without the producer, delta-commits still compacts (copy-on-write, §12)
        let cow = full_compaction_interval(&opts(&[("full-compaction.delta-commits", "2")]));
        assert_eq!(cow, Some(2));
        assert!(full_compaction_due(cow, 4) && !full_compaction_due(cow, 5));
    }

    /// (key, row kind, v) of every record of `files` (one run each), in file order.
    fn records(
        t: &crate::table::FileStoreTable,
        files: &[crate::spec::manifest::DataFileMeta],
    ) -> Vec<(i64, i8, String)> {
        use arrow_array::cast::AsArray;
        use arrow_array::types::{Int64Type, Int8Type};
        let mut out = vec![];
        for f in files {
            let file = std::fs::File::open(t.path.join("bucket-0").join(&f.file_name)).unwrap();
            let reader =
                parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
                    .unwrap()
                    .build()
                    .unwrap();
            for b in reader {
                let b = b.unwrap();
                let (k, kind, v) = (
                    b.column(0).as_primitive::<Int64Type>(),
                    b.column(2).as_primitive::<Int8Type>(),
                    b.column(4).as_string::<i32>(),
                );
                for i in 0..b.num_rows() {
                    out.push((k.value(i), kind.value(i), v.value(i).to_string()));
                }
            }
        }
        out
    }

    /// A bucket compactor of a `full-compaction` table with `force-lookup` and `extra` options,
    /// over a max-level file of `top` keys and a level-0 file of `level0` keys.
    fn force_lookup_bucket(
        dir: &std::path::Path,
        extra: &[(&str, &str)],
        top: &[i64],
        level0: &[i64],
    ) -> (
        crate::table::FileStoreTable,
        crate::compact::BucketCompactor,
        crate::spec::manifest::DataFileMeta,
    ) {
        use crate::compact::{BucketCompactor, CompactSettings};
        use crate::lookup::tests::data_file;
        let mut opts = vec![
            ("bucket", "1"),
            ("changelog-producer", "full-compaction"),
            ("force-lookup", "true"),
        ];
        opts.extend_from_slice(extra);
        let t = crate::write::table_write::tests::table(dir, &opts);
        let top = data_file(&t, 5, top, 0);
        let l0 = data_file(&t, 0, level0, 1000);
        let settings = CompactSettings::from_table(&t).unwrap();
        let c = BucketCompactor::new(
            &t,
            &settings,
            t.path.join("bucket-0"),
            vec![top, l0.clone()],
        )
        .unwrap();
        (t, c, l0)
    }

    /// A `full-compaction` table with `force-lookup` (Java: `ForceUpLevel0Compaction`,
    /// `FullChangelogMergeTreeCompactRewriter`, `LookupMergeFunction`): a level-0 file forced
    /// up below the max level makes no changelog; the next full compaction diffs each key's
    /// merge against its max-level record. `listagg` shows which records a merge takes: the
    /// force-up looks the key up in the max level (so the middle record embodies it), and the
    /// full compaction merges the lowest level > 0 only, not the max-level record again.
    #[test]
    fn force_lookup_forces_level0_up_without_changelog_then_diffs_full_compactions() {
        let dir = tempfile::tempdir().unwrap();
        let agg = [
            ("merge-engine", "aggregation"),
            ("fields.v.aggregate-function", "listagg"),
        ];
        let (t, mut c, l0) = force_lookup_bucket(dir.path(), &agg, &[1, 2, 3], &[2, 4]);
        assert!(c.forces_level0_up());
        let up = c.compact(false).unwrap().unwrap();
        assert_eq!(up.before, vec![l0.clone()]);
        assert_eq!(up.after.len(), 1);
        assert_eq!(up.after[0].level, 4);
        assert!(up.changelog.is_empty(), "{:?}", up.changelog);
        // rewritten (below the max level, 5 of 6 levels) with the max level's record of key 2 (an aggregation changes it)
        assert_eq!(
            records(&t, &up.after),
            vec![(2, 0, "v2@5,v2@0".into()), (4, 0, "v4@0".into())]
        );
        let full = c.compact(true).unwrap().unwrap();
        assert!(full.after.iter().all(|f| f.level == 5));
        assert_eq!(
            records(&t, &full.after),
            vec![
                (1, 0, "v1@5".into()),
                (2, 0, "v2@5,v2@0".into()),
                (3, 0, "v3@5".into()),
                (4, 0, "v4@0".into()),
            ]
        );
        let (ub, ua) = (RowKind::UpdateBefore.byte(), RowKind::UpdateAfter.byte());
        assert_eq!(
            records(&t, &full.changelog),
            vec![
                (2, ub, "v2@5".into()),
                (2, ua, "v2@5,v2@0".into()),
                (4, RowKind::Insert.byte(), "v4@0".into()),
            ]
        );
        assert!(full.changelog.iter().all(|f| f.level == 5));
    }

    /// Deduplicate with `force-lookup`: the force-up moves the level-0 file by metadata (no
    /// lookup changes a deduplicate merge), with no changelog; the full compaction's changelog
    /// is the diff against the max level.
    #[test]
    fn force_lookup_deduplicate_upgrades_level0_by_metadata() {
        let dir = tempfile::tempdir().unwrap();
        // a max level much larger than level 0: universal compaction leaves it be
        let keys: Vec<i64> = (1..=200).filter(|k| *k != 3).collect();
        let (t, mut c, l0) = force_lookup_bucket(dir.path(), &[], &keys, &[2, 3]);
        let up = c.compact(false).unwrap().unwrap();
        assert_eq!(up.after.len(), 1);
        assert_eq!(up.after[0].file_name, l0.file_name);
        assert_eq!(up.after[0].level, 4);
        assert!(up.changelog.is_empty());
        let full = c.compact(true).unwrap().unwrap();
        let (ub, ua) = (RowKind::UpdateBefore.byte(), RowKind::UpdateAfter.byte());
        assert_eq!(
            records(&t, &full.changelog),
            vec![
                (2, ub, "v2@5".into()),
                (2, ua, "v2@0".into()),
                (3, RowKind::Insert.byte(), "v3@0".into()),
            ]
        );
    }
}
