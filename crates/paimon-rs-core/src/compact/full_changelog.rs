//! `changelog-producer = full-compaction` (paimon-behaviour.md §9.4; Java's
//! `FullChangelogMergeTreeCompactRewriter` and `FullChangelogMergeFunctionWrapper`): a
//! compaction whose output is the max level (a full compaction: universal compaction writes
//! the max level only when it takes every run, §3.1) produces the changelog of the bucket since
//! the previous full compaction, key by key: the record the key had at the max level (the
//! previous full compaction's result) against the merge of all of its records. Other
//! compactions produce none. A file upgraded to the max level without a rewrite still emits
//! `+I` for each of its records (Java's `CHANGELOG_NO_REWRITE`).
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
        b.merge_inner(self.inner.as_mut(), group, sources)?;
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
}
