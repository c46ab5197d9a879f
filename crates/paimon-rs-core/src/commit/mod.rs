//! Commits: turn the files written by TableWrite into a new snapshot (paimon-format.md §9).
//! Manifest, delta and base manifest lists are written under fresh names; the snapshot file is
//! created exclusively, so a lost race never overwrites another commit and is retried against
//! the new latest snapshot. A commit that fails leaves the table as it was, and keeps the
//! messages' data files (as Java does): a retry can land them, `abort` removes them.
//!
//! A commit writes one snapshot per kind of change, as Java: APPEND (or OVERWRITE) for the
//! messages' new files, then COMPACT for their compaction results (`compact_before` removed,
//! `compact_after` added; [`compaction`] holds its conflict checks).
//!
//! Safety (issue #9, [`safety`]): a file already live is never added again
//! (`DuplicateCommit`), a file that does not exist is never referenced (`StaleCommitMessage`),
//! `abort` never deletes a file a snapshot references, and a primary-key bucket written by a
//! concurrent commit with sequence numbers ours do not follow is refused (`CommitConflict`).

use std::collections::HashSet;
use std::path::PathBuf;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::io;
use crate::spec::binary_row::{deserialize_row, serialize_row};
use crate::spec::datum::{compare_nullable, Datum};
use crate::spec::manifest::{
    read_manifest_list, write_manifest_entries, write_manifest_list, DataFileMeta, FileKind,
    IndexManifestEntry, ManifestEntry, ManifestFileMeta, SimpleStats,
};
use crate::spec::snapshot::{CommitKind, Snapshot, BATCH_COMMIT_IDENTIFIER};
use crate::table::FileStoreTable;

mod compaction;
mod hash_index;
mod manifest_merge;
mod message;
mod partition_delete;
mod partition_expiry;
mod rewrite_check;
mod row_id_check;
mod row_tracking;
mod safety;
#[cfg(test)]
pub(crate) use safety::tests as test_support;
#[cfg(test)]
mod stale_tests;

pub use message::{CommitMessage, CompactIncrement, DataIncrement};
pub use partition_delete::partition_delete_messages;
pub use rewrite_check::ExpectedReplace;
use safety::SequenceCheck;
mod index;

use crate::spec::partition::PartitionSpec;

/// What an overwrite commit replaces.
#[derive(Debug, Clone, Copy)]
pub enum Overwrite<'a> {
    /// Every live file of the partitions matching the spec (the whole table if it is empty);
    /// every new file must lie in them.
    Static(&'a PartitionSpec),
    /// INSERT OVERWRITE without a static partition: with `dynamic-partition-overwrite` (default
    /// true) on a partitioned table, only the partitions the new files are in (no snapshot at
    /// all if there is none, as Java); otherwise the whole table.
    Dynamic,
    /// Drop partitions (Java's `FileStoreCommit.dropPartitions`): every live file of the
    /// partitions matching any of the specs (a spec may name a prefix of the partition keys);
    /// no new files.
    Partitions(&'a [PartitionSpec]),
}

/// An overwrite resolved against the table and the new files.
enum Replace {
    /// Live files of the partitions matching the spec.
    Spec(PartitionSpec),
    /// Every live file the partition filter of the new files' partitions admits.
    Written,
    /// Live files of the partitions matching any of the specs.
    Specs(Vec<PartitionSpec>),
}

/// The changes of one snapshot a commit writes.
enum Phase {
    /// New files (APPEND), replacing live files if `replace` is set (OVERWRITE).
    Append {
        adds: Vec<ManifestEntry>,
        replace: Option<Replace>,
        sequences: Option<SequenceCheck>,
        /// Racing column updates of a data-evolution table (None for an overwrite).
        row_ids: Option<Box<row_id_check::RowIdCheck>>,
    },
    /// Compaction results (COMPACT): DELETE entries of `compact_before`, then ADD entries of
    /// `compact_after`, message by message (Java's `ManifestEntryChanges`).
    Compact { entries: Vec<ManifestEntry> },
}

/// The messages' changes: new files, and compaction results, each with its changelog files
/// (ADD entries of the snapshot's changelog manifest list).
struct Changes {
    adds: Vec<ManifestEntry>,
    compact: Vec<ManifestEntry>,
    append_changelog: Vec<ManifestEntry>,
    compact_changelog: Vec<ManifestEntry>,
}

/// What a snapshot carries beside its data files' delta: changelog files (ADD entries of its
/// changelog manifest list) and index changes (see [`index`]).
#[derive(Clone, Copy, Default)]
struct Extras<'a> {
    changelog: &'a [ManifestEntry],
    index: &'a [IndexManifestEntry],
    /// Partitions whose dynamic-bucket hash index changes, with their writers' base snapshot.
    hash_bases: &'a [hash_index::HashBase],
    /// Dynamic-bucket partitions written (data), with their writers' base snapshot.
    written_bases: &'a [hash_index::HashBase],
    /// Cross-partition upsert: the snapshot the writers' key index was bootstrapped from.
    key_base: Option<i64>,
}

impl Extras<'_> {
    fn is_empty(&self) -> bool {
        self.changelog.is_empty() && self.index.is_empty()
    }
}

fn collect_changes(messages: &[CommitMessage]) -> Changes {
    let entry = |kind, m: &CommitMessage, f: &DataFileMeta| ManifestEntry {
        kind,
        partition: m.partition.clone(),
        bucket: m.bucket,
        total_buckets: m.total_buckets,
        file: f.clone(),
    };
    let mut out = Changes {
        adds: vec![],
        compact: vec![],
        append_changelog: vec![],
        compact_changelog: vec![],
    };
    for m in messages {
        let add = |f| entry(FileKind::Add, m, f);
        out.append_changelog
            .extend(m.data_increment.changelog_files.iter().map(add));
        out.compact_changelog
            .extend(m.compact_increment.changelog_files.iter().map(add));
        out.adds.extend(
            m.data_increment
                .new_files
                .iter()
                .map(|f| entry(FileKind::Add, m, f)),
        );
        out.compact.extend(
            m.compact_increment
                .compact_before
                .iter()
                .map(|f| entry(FileKind::Delete, m, f)),
        );
        out.compact.extend(
            m.compact_increment
                .compact_after
                .iter()
                .map(|f| entry(FileKind::Add, m, f)),
        );
    }
    out
}

pub struct FileStoreCommit {
    table: FileStoreTable,
    commit_user: String,
    /// When this commit object last checked for expired partitions (epoch millis).
    last_partition_check: std::sync::Mutex<i64>,
    /// An overwrite that must replace exactly these files (see [`rewrite_check`]).
    expected_replace: Option<ExpectedReplace>,
}

/// The manifest lists of a snapshot: (name, size) of the base, the delta and, if the snapshot
/// has changelog files, the changelog list.
struct ManifestLists {
    base: (String, i64),
    delta: (String, i64),
    changelog: Option<(String, i64)>,
}

fn new_file_name(prefix: &str, n: usize) -> String {
    format!("{prefix}-{}-{n}", uuid::Uuid::new_v4())
}

impl FileStoreCommit {
    pub fn new(table: FileStoreTable, commit_user: String) -> Self {
        let interval = crate::table::partition_expire::PartitionExpire::from_table(&table)
            .ok()
            .flatten()
            .map_or(0, |p| p.check_interval_ms);
        let last = crate::table::partition_expire::PartitionExpire::initial_last_check(interval);
        FileStoreCommit {
            table,
            commit_user,
            last_partition_check: std::sync::Mutex::new(last),
            expected_replace: None,
        }
    }

    /// Make this commit's overwrites replace exactly `expected` (what they read), else fail
    /// with `CommitConflict` (commit/rewrite_check.rs).
    pub fn expecting_replace(mut self, expected: ExpectedReplace) -> Self {
        self.expected_replace = Some(expected);
        self
    }

    fn last_partition_check(&self) -> std::sync::MutexGuard<'_, i64> {
        // an i64 cannot be left half-written by a panic
        self.last_partition_check
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    pub fn table(&self) -> &FileStoreTable {
        &self.table
    }

    pub fn commit_user(&self) -> &str {
        &self.commit_user
    }

    /// The snapshot in which this commit user committed `ident`, if any: a driver that
    /// distributes a write (paimon_rs.spark) checks it before running a job again under the
    /// same identifier, so a retried job writes nothing.
    pub fn committed_snapshot(&self, ident: i64) -> Result<Option<i64>> {
        self.committed_identifier(ident, None)
            .map_err(|e| e.with_table(&self.table.name))
    }

    fn manifest_path(&self, name: &str) -> PathBuf {
        self.table.manifest_dir().join(name)
    }

    fn partition_matches(&self, partition: &[u8], spec: &PartitionSpec) -> Result<bool> {
        if spec.is_empty() {
            return Ok(true);
        }
        let types = self.table.partition_types()?;
        let values = deserialize_row(&types, partition)?;
        for (name, want) in spec {
            let i = self
                .table
                .partition_keys()
                .iter()
                .position(|k| k == name)
                .ok_or_else(|| Error::invalid(format!("'{name}' is not a partition key")))?;
            if compare_nullable(&values[i], want) != std::cmp::Ordering::Equal {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Commit `messages` as one snapshot. With `overwrite = Some(spec)`, every live file of the
    /// partitions matching `spec` is replaced (OVERWRITE). Returns the new snapshot id, or None if
    /// there was nothing to commit. See [`Self::commit_as`].
    pub fn commit(
        &self,
        messages: &[CommitMessage],
        commit_identifier: i64,
        overwrite: Option<&PartitionSpec>,
    ) -> Result<Option<i64>> {
        self.commit_as(
            messages,
            commit_identifier,
            overwrite.map(Overwrite::Static),
        )
    }

    /// Commit `messages` as one snapshot (an OVERWRITE if `overwrite` is given). Returns the new
    /// snapshot id, or None if there was nothing to commit.
    ///
    /// With an identifier other than [`BATCH_COMMIT_IDENTIFIER`] the commit lands once per
    /// (commit user, identifier): if this commit user already committed it, the id of that
    /// snapshot is returned and nothing is written (identifiers of a user must increase).
    ///
    /// Refused, before anything is written: files already live or passed twice
    /// (`DuplicateCommit`), files that do not exist (`StaleCommitMessage`), a primary-key bucket
    /// a concurrent commit wrote with the same keys and sequence numbers that reach ours
    /// (`CommitConflict`). On any failure the messages' data files are kept, so that a retry
    /// can land them; [`Self::abort`] deletes them.
    pub fn commit_as(
        &self,
        messages: &[CommitMessage],
        commit_identifier: i64,
        overwrite: Option<Overwrite<'_>>,
    ) -> Result<Option<i64>> {
        let expire = crate::table::partition_expire::PartitionExpire::from_table(&self.table)
            .map_err(|e| e.with_table(&self.table.name))?;
        let id = self
            .commit_inner(messages, commit_identifier, overwrite)
            .map_err(|e| e.with_table(&self.table.name))?;
        if let (Some(pe), Some(landed)) = (expire, id) {
            if !matches!(overwrite, Some(Overwrite::Partitions(_))) {
                // Java's TableCommitImpl: partitions expire after a commit, in their own
                // OVERWRITE snapshot
                match self.expire_partitions_on_commit(&pe, commit_identifier) {
                    Ok(Some(expired)) => return Ok(Some(expired)),
                    Ok(None) => {}
                    Err(e) => self.warn_after_commit(landed, "partition expiry", &e),
                }
            }
        }
        Ok(id)
    }

    /// Maintenance after a commit failed: the commit has landed as snapshot `landed`, so this is
    /// a warning naming both, never an error over the acknowledged commit (a caller would think
    /// it must retry); the next commit, `expire_snapshots` or `expire_partitions` tries again.
    fn warn_after_commit(&self, landed: i64, what: &str, e: &Error) {
        log::warn!(
            target: "paimon_rs.commit",
            "{}: snapshot {landed} committed, but the {what} after it failed: {e}",
            self.table.name
        );
    }

    /// Commit the compaction increments of `messages` (inputs removed, outputs added) as one
    /// OVERWRITE snapshot: sort compaction (paimon-behaviour.md §16) rewrites exactly the files
    /// it read, so a concurrent append survives beside it, and a concurrent commit that removed
    /// one of those files makes this one fail with `CommitConflict` (nothing is lost). Lands
    /// once per (commit user, identifier), as [`Self::commit_as`]. Returns the snapshot id, or
    /// None if there was nothing to commit.
    pub fn commit_rewrite(
        &self,
        messages: &[CommitMessage],
        commit_identifier: i64,
    ) -> Result<Option<i64>> {
        let run = || -> Result<Option<i64>> {
            for m in messages {
                m.check_supported()?;
                if !m.data_increment.is_empty() {
                    return Err(Error::invalid(
                        "a rewrite commit carries compaction increments only",
                    ));
                }
            }
            let changes = collect_changes(messages);
            let index = index::index_changes(messages, true);
            let extras = Extras {
                index: &index,
                ..Default::default()
            };
            if changes.compact.is_empty() && extras.is_empty() {
                return Ok(None);
            }
            if commit_identifier != BATCH_COMMIT_IDENTIFIER {
                if let Some(id) = self.committed_identifier(commit_identifier, None)? {
                    return Ok(Some(id));
                }
            }
            self.check_messages(messages)?;
            let mut phase = Phase::Compact {
                entries: changes.compact,
            };
            let id =
                self.try_commit(&mut phase, extras, CommitKind::Overwrite, commit_identifier)?;
            if let Some(id) = id {
                self.maintain(id);
            }
            Ok(id)
        };
        run().map_err(|e| e.with_table(&self.table.name))
    }

    /// Drop `partitions` in one OVERWRITE snapshot (Java's `FileStoreCommit.dropPartitions`).
    /// Returns its id, None when no live file was in them.
    pub fn drop_partitions(
        &self,
        partitions: &[PartitionSpec],
        commit_identifier: i64,
    ) -> Result<Option<i64>> {
        self.commit_inner(
            &[],
            commit_identifier,
            Some(Overwrite::Partitions(partitions)),
        )
        .map_err(|e| e.with_table(&self.table.name))
    }

    fn bucket_dir_of(&self, partition: &[u8], bucket: i32) -> Result<PathBuf> {
        let types = self.table.partition_types()?;
        let values = deserialize_row(&types, partition)?;
        let o = &self.table.options;
        let pp = crate::spec::partition::partition_path(
            self.table.partition_keys(),
            &types,
            &values,
            &o.partition_default_name,
            o.partition_legacy_name,
        )?;
        Ok(self.table.bucket_dir(&pp, bucket))
    }

    /// A commit in steps, as Java's `FileStoreCommitImpl.commit`: collect the changes, check
    /// the messages, then one snapshot per kind of change (APPEND or OVERWRITE for new files,
    /// then COMPACT for compaction results), each written by [`Self::try_commit`].
    fn commit_inner(
        &self,
        messages: &[CommitMessage],
        commit_identifier: i64,
        overwrite: Option<Overwrite<'_>>,
    ) -> Result<Option<i64>> {
        if messages.iter().any(partition_delete::is_partition_delete) {
            return self.commit_partition_delete(messages, commit_identifier, overwrite);
        }
        for m in messages {
            m.check_supported()
                .map_err(|e| e.with_table(&self.table.name))?;
        }
        let replace = self.resolve_overwrite(messages, overwrite)?;
        if replace.is_some() {
            self.refuse_overwriting_updates(messages)?;
        }
        let Changes {
            adds,
            compact,
            mut append_changelog,
            mut compact_changelog,
        } = collect_changes(messages);
        if replace.is_some() {
            self.drop_overwrite_changelog(&mut append_changelog, &mut compact_changelog);
        }
        let append_index = index::index_changes(messages, false);
        let compact_index = index::index_changes(messages, true);
        let hash_bases = hash_index::hash_bases(messages);
        let written_bases = hash_index::written_bases(self.table(), messages);
        let append_extras = Extras {
            changelog: &append_changelog,
            index: &append_index,
            hash_bases: &hash_bases,
            written_bases: &written_bases,
            key_base: hash_index::key_index_base(self.table(), messages),
        };
        let compact_extras = Extras {
            changelog: &compact_changelog,
            index: &compact_index,
            hash_bases: &[],
            written_bases: &[],
            key_base: None,
        };
        // dynamic overwrite of no data replaces nothing (Java skips the commit)
        let write_first = !(adds.is_empty()
            && append_extras.is_empty()
            && matches!(replace, None | Some(Replace::Written)));
        if !write_first && compact.is_empty() && compact_extras.is_empty() {
            return Ok(None);
        }
        let explicit = commit_identifier != BATCH_COMMIT_IDENTIFIER;
        if explicit {
            if let Some(id) = self.committed_identifier(commit_identifier, None)? {
                return Ok(Some(id));
            }
        }
        self.check_messages(messages)?;
        let mut last = None;
        if write_first {
            if !compact.is_empty() && replace.is_none() {
                // a compaction that would conflict fails before the APPEND snapshot lands
                self.precheck_compaction(&adds, &compact, &append_index, &compact_index)?;
            }
            // Only appends can be hidden: an overwrite replaces every live file of its partitions.
            let (sequences, row_ids) = match replace {
                None => (
                    Some(SequenceCheck::new(self, messages)?),
                    Some(Box::new(row_id_check::RowIdCheck::new(self, messages)?)),
                ),
                Some(_) => (None, None),
            };
            // deletion vectors of an append table's rows (a DELETE / UPDATE / MERGE) are an
            // OVERWRITE, as Java's `ConflictDetection.shouldBeOverwriteCommit`: streaming reads
            // skip it, like any change of existing rows
            let vectors = !self.table.is_primary_key()
                && append_index
                    .iter()
                    .any(|e| e.index_type == crate::spec::manifest::DELETION_VECTORS_INDEX);
            let kind = if replace.is_some() || vectors {
                CommitKind::Overwrite
            } else {
                CommitKind::Append
            };
            let mut phase = Phase::Append {
                adds,
                replace,
                sequences,
                row_ids,
            };
            last = self.try_commit(&mut phase, append_extras, kind, commit_identifier)?;
        }
        if !compact.is_empty() || !compact_extras.is_empty() {
            let mut phase = Phase::Compact { entries: compact };
            if let Some(id) = self.try_commit(
                &mut phase,
                compact_extras,
                CommitKind::Compact,
                commit_identifier,
            )? {
                last = Some(id);
            }
        }
        if let Some(id) = last {
            self.maintain(id);
        }
        Ok(last)
    }

    /// After a commit, as Java's `TableCommitImpl`: expire snapshots (not for `write-only`
    /// writers), then create the automatic tag that is due and expire tags past their
    /// retention. The commit has landed: a failure here is logged as a warning, never raised
    /// over the acknowledged commit (the next commit or `expire_snapshots` tries again).
    fn maintain(&self, snapshot_id: i64) {
        let t = &self.table;
        let run = || -> Result<()> {
            if !t.options.write_only {
                let config = crate::table::retention::ExpireConfig::from_options(&t.options.raw)?;
                let now = chrono::Utc::now().timestamp_millis();
                crate::table::expire::expire_snapshots_after_commit(t, &config, now, snapshot_id)?;
            }
            if let Some(auto) = crate::table::tags::AutoTag::from_options(&t.options.raw)? {
                if let Some(s) = t.snapshot_manager().try_snapshot(snapshot_id)? {
                    auto.run(t, &s)?;
                }
            }
            crate::table::tags::expire_tags_by_time(t, chrono::Local::now().naive_local())?;
            Ok(())
        };
        if let Err(e) = run() {
            self.warn_after_commit(snapshot_id, "maintenance (snapshot expiry, tags)", &e);
        }
    }

    /// A column update (data evolution: a file of some columns of existing rows, its
    /// `first_row_id` set by write/row_update.rs) cannot be an overwrite: the overwrite would
    /// delete the files holding the rows' other columns and keep only the updated ones.
    fn refuse_overwriting_updates(&self, messages: &[CommitMessage]) -> Result<()> {
        let update = messages
            .iter()
            .flat_map(|m| &m.data_increment.new_files)
            .find(|f| f.first_row_id.is_some() && !f.file_name.ends_with(".blob"));
        match update {
            None => Ok(()),
            Some(f) => Err(Error::invalid(format!(
                "table '{}': the update file '{}' (columns {}) cannot be committed as an \
                 overwrite: it would replace the rows' other columns; commit updates with a \
                 builder without overwrite",
                self.table.name,
                f.file_name,
                f.write_cols.as_deref().unwrap_or_default().join(", ")
            ))),
        }
    }

    /// An overwrite commits no changelog (Java: "Overwrite mode currently does not commit any
    /// changelog"): the rows it replaces have no retractions to describe them. Java leaves the
    /// files behind; they are deleted here, with the same warning.
    fn drop_overwrite_changelog(
        &self,
        append: &mut Vec<ManifestEntry>,
        compact: &mut Vec<ManifestEntry>,
    ) {
        let dropped: Vec<ManifestEntry> = append.drain(..).chain(compact.drain(..)).collect();
        if dropped.is_empty() {
            return;
        }
        log::warn!(
            target: "paimon_rs.commit",
            "{}: an overwrite commits no changelog; {} changelog file(s) of the overwrite are \
             deleted (streaming readers of the changelog see no rows for it)",
            self.table.name,
            dropped.len()
        );
        for e in dropped {
            if let Ok(dir) = self.bucket_dir_of(&e.partition, e.bucket) {
                let _ = crate::fileindex::remove_data_file(&dir, &e.file);
            }
        }
    }

    /// What an overwrite replaces; a static overwrite's new files must lie in its partitions.
    fn resolve_overwrite(
        &self,
        messages: &[CommitMessage],
        overwrite: Option<Overwrite<'_>>,
    ) -> Result<Option<Replace>> {
        let dynamic = !self.table.partition_keys().is_empty()
            && self.table.options.dynamic_partition_overwrite;
        Ok(match overwrite {
            None => None,
            Some(Overwrite::Dynamic) if dynamic => Some(Replace::Written),
            Some(Overwrite::Dynamic) => Some(Replace::Spec(vec![])),
            Some(Overwrite::Partitions(specs)) => {
                if specs.is_empty() || specs.iter().any(|s| s.is_empty()) {
                    return Err(Error::invalid(
                        "drop_partitions: give at least one partition, each with its values",
                    ));
                }
                if messages
                    .iter()
                    .any(|m| !m.data_increment.new_files.is_empty())
                {
                    return Err(Error::invalid("drop_partitions: commits no new files"));
                }
                Some(Replace::Specs(specs.to_vec()))
            }
            Some(Overwrite::Static(spec)) => {
                for m in messages {
                    if !m.data_increment.new_files.is_empty()
                        && !self.partition_matches(&m.partition, spec)?
                    {
                        return Err(Error::invalid(
                            "overwrite: the data contains rows outside the partition being overwritten",
                        ));
                    }
                }
                Some(Replace::Spec(spec.clone()))
            }
        })
    }

    /// Write one snapshot of `kind` holding `phase`'s changes, retrying against each new latest
    /// snapshot when a concurrent commit wins the race: (1) read the latest snapshot's live
    /// files, (2) build the delta and check it for conflicts, (3) write the delta manifest and
    /// the (merged) base manifest list, (4) create the snapshot file exclusively. Returns None if
    /// the delta is empty.
    fn try_commit(
        &self,
        phase: &mut Phase,
        extras: Extras<'_>,
        kind: CommitKind,
        commit_identifier: i64,
    ) -> Result<Option<i64>> {
        let sm = self.table.snapshot_manager();
        let o = &self.table.options;
        let started = std::time::Instant::now();
        let explicit = commit_identifier != BATCH_COMMIT_IDENTIFIER;
        // the first attempt's base: snapshots above it may be a retried attempt's own. Read
        // once for both (on an object store `latest_id` then `latest` cost five round trips;
        // `latest` alone one when this process saw the newest snapshot)
        let mut first = Some(sm.latest()?);
        let base_id = first.as_ref().and_then(|s| s.as_ref().map(|s| s.id));
        let mut wait = o.commit_min_retry_wait_ms.max(1);
        let mut written: Vec<PathBuf> = vec![];
        let result = (|| -> Result<Option<i64>> {
            for attempt in 0..=o.commit_max_retries {
                let latest = match first.take() {
                    Some(l) => l,
                    None => sm.latest()?,
                };
                if attempt > 0 {
                    let own = if explicit {
                        self.committed_identifier(commit_identifier, base_id)?
                    } else {
                        self.already_committed(base_id, commit_identifier, &kind)?
                    };
                    if own.is_some() {
                        return Ok(own);
                    }
                }
                let previous = self.manifests_of(latest.as_ref())?;
                let mut delta = self.build_delta(phase, previous.clone(), latest.as_ref())?;
                // row tracking: the new files' row ids and sequence numbers, from this
                // attempt's latest snapshot (a retry assigns them again)
                let next_row_id = if o.row_tracking()? {
                    row_tracking::check_updated_groups(&self.table, &delta, latest.as_ref())?;
                    if let Phase::Append {
                        row_ids: Some(check),
                        ..
                    } = phase
                    {
                        check.run(self, latest.as_ref())?;
                    }
                    let caller_set: Vec<bool> = delta
                        .iter()
                        .map(|e| e.file.first_row_id.is_some())
                        .collect();
                    let next = row_tracking::assign(
                        &self.table.name,
                        &mut delta,
                        latest.as_ref().map_or(1, |s| s.id + 1),
                        latest.as_ref().and_then(|s| s.next_row_id).unwrap_or(0),
                    )?;
                    row_tracking::check_ranges(&self.table, &delta, &caller_set, &previous)?;
                    Some(next)
                } else {
                    latest.as_ref().and_then(|s| s.next_row_id)
                };
                if delta.is_empty() && extras.is_empty() {
                    return Ok(None);
                }
                self.check_hash_index(latest.as_ref(), extras.hash_bases, extras.written_bases)?;
                self.check_key_index(latest.as_ref(), extras.key_base)?;
                self.check_append_vectors(
                    latest.as_ref(),
                    &previous,
                    &delta,
                    extras.index,
                    matches!(phase, Phase::Compact { .. }),
                )?;
                let mut index_changes = extras.index.to_vec();
                index_changes.extend(self.overwritten_index(
                    phase,
                    latest.as_ref(),
                    extras.index,
                )?);
                if let (
                    Some(expected),
                    Phase::Append {
                        adds,
                        replace: Some(_),
                        ..
                    },
                ) = (&self.expected_replace, &*phase)
                {
                    self.check_expected_replace(expected, adds, &delta, &index_changes)?;
                }
                let index_manifest =
                    self.index_manifest_after(latest.as_ref(), &index_changes, &mut written)?;
                let lists =
                    self.write_manifests(previous, &delta, extras.changelog, &mut written)?;
                let snapshot = self.new_snapshot(
                    latest.as_ref(),
                    &delta,
                    extras.changelog,
                    (lists, index_manifest),
                    kind.clone(),
                    commit_identifier,
                );
                let snapshot = Snapshot {
                    next_row_id,
                    ..snapshot
                };
                // a snapshot withdrawn after a concurrent rollback or expiry is retried as a
                // lost race
                // the manifests were written without a sync each: durable together, before
                // the snapshot that names them
                io::sync_files(&written)?;
                #[cfg(test)]
                tests::race_point(tests::RacePoint::BeforeCreate);
                let created = sm.try_create(&snapshot)?;
                #[cfg(test)]
                tests::race_point(tests::RacePoint::AfterCreate);
                if created && !self.withdrawn(&sm, &snapshot, latest.as_ref(), &delta)? {
                    sm.write_latest_hint_best_effort(snapshot.id);
                    log::info!(
                        target: "paimon_rs.commit",
                        "{}: committed snapshot {} ({kind:?}, {} files added, {} deleted, {} rows \
                         delta)",
                        self.table.name,
                        snapshot.id,
                        delta.iter().filter(|e| e.kind == FileKind::Add).count(),
                        delta.iter().filter(|e| e.kind == FileKind::Delete).count(),
                        snapshot.delta_record_count,
                    );
                    log::debug!(
                        target: "paimon_rs.commit",
                        "{}: commit of snapshot {} took {} ms ({} attempt(s))",
                        self.table.name,
                        snapshot.id,
                        started.elapsed().as_millis(),
                        attempt + 1
                    );
                    return Ok(Some(snapshot.id));
                }
                // Lost the race: drop this attempt's metadata files and retry.
                log::info!(
                    target: "paimon_rs.commit",
                    "{}: snapshot {} was taken by a concurrent commit; retrying in {wait} ms \
                     (attempt {} of {})",
                    self.table.name,
                    snapshot.id,
                    attempt + 1,
                    o.commit_max_retries + 1
                );
                for p in written.drain(..) {
                    let _ = crate::io::remove_file_if_exists(&p);
                }
                std::thread::sleep(Duration::from_millis(wait));
                wait = (wait * 2).min(o.commit_max_retry_wait_ms.max(1));
            }
            log::warn!(
                target: "paimon_rs.commit",
                "{}: commit gave up after {} attempts",
                self.table.name,
                o.commit_max_retries + 1
            );
            Err(Error::CommitConflict {
                table: self.table.name.clone(),
                message: format!(
                    "gave up after {} attempts: other writers kept committing",
                    o.commit_max_retries + 1
                ),
            })
        })();
        if result.is_err() {
            for p in written {
                let _ = crate::io::remove_file_if_exists(&p);
            }
        }
        result
    }

    /// Whether the snapshot this attempt just created must be withdrawn (deleted, and the commit
    /// retried on the table as it is now). Two races can make a created snapshot wrong:
    ///
    /// - A **rollback** deleted the snapshot this attempt was based on while we created ours on
    ///   top of it: ours would reference what the rollback cleans. Older snapshots are left.
    /// - An **expiry** made the id free again: while this attempt was built, other commits
    ///   created snapshot `ours.id` and newer ones, and an expiry deleted `ours.id` (with all
    ///   below it). The exclusive create then succeeds, but our snapshot is not on the table's
    ///   chain (the newer ones do not hold our changes): acknowledged, it would be lost.
    ///
    /// While the base exists, neither happened: an expiry deletes snapshots in ascending order
    /// and deleted files are never re-created. When the base is gone (and nothing older is
    /// left, or it is a rollback), the snapshots above ours tell the two apart. An expiry never
    /// deletes the latest snapshot it read, so if ours was taken over, some snapshot above ours
    /// exists; snapshot `ours.id + 1` missing while a newer one exists means the newer ones
    /// came before ours (an expiry deletes `ours.id` before `ours.id + 1`, and ours is still
    /// here); and when `ours.id + 1` exists, it descends from ours exactly when its base holds
    /// our changes.
    fn withdrawn(
        &self,
        sm: &crate::table::snapshot_manager::SnapshotManager,
        ours: &Snapshot,
        base: Option<&Snapshot>,
        delta: &[ManifestEntry],
    ) -> Result<bool> {
        if let Some(b) = base {
            if sm.try_snapshot(b.id)?.is_some() {
                return Ok(false);
            }
        }
        let below = ours.id - 1; // the base's id (0: the table was empty)

        // a stale snapshot a crashed commit left (see `snapshot_manager`) is no older history
        // (taking it for one would withdraw ours when an expiry took our base right after our
        // create, leaving the stale one alone); ours may look stale, it is what is asked
        let mut ids = sm.ids()?;
        let stale_ids = sm.stale_among(&ids);
        ids.retain(|i| *i == ours.id || !stale_ids.contains(i));
        let why = if ids.iter().any(|&i| i < below) {
            format!(
                "was based on snapshot {below}, which a concurrent rollback deleted; withdrawn, \
                 retrying on the rolled-back table"
            )
        } else {
            let above = ids.iter().any(|&i| i > ours.id);
            let next = ids.contains(&(ours.id + 1));
            let ours_listed = ids.contains(&ours.id);
            let off_chain = match (above, next) {
                (false, _) => false, // ours is the latest; older ones expired after it landed
                (true, false) => ours_listed,
                (true, true) => !self.descends_from(sm, ours.id + 1, delta)?,
            };
            if !off_chain {
                return Ok(false);
            }
            format!(
                "took an id that a concurrent expiry had freed: snapshot {0} and newer ones were \
                 committed and {0} expired while this commit was prepared, so ours is not on the \
                 table's chain; withdrawn, retrying on the latest snapshot",
                ours.id
            )
        };
        io::remove_file_if_exists(&sm.snapshot_path(ours.id))?;
        log::warn!(
            target: "paimon_rs.commit",
            "{}: snapshot {} {why}",
            self.table.name,
            ours.id,
        );
        Ok(true)
    }

    /// Whether snapshot `id` was committed on top of the snapshot whose changes are `delta`:
    /// its base manifests (the previous snapshot's live files) hold every file the delta added
    /// and none it deleted (file names are unique, so another snapshot cannot hold them).
    fn descends_from(
        &self,
        sm: &crate::table::snapshot_manager::SnapshotManager,
        id: i64,
        delta: &[ManifestEntry],
    ) -> Result<bool> {
        let Some(next) = sm.try_snapshot(id)? else {
            return Ok(false);
        };
        let metas = crate::table::live::read_list(&self.table, &next, &next.base_manifest_list)?;
        let live: HashSet<String> = crate::table::live::live_entries_of(&self.table, metas, None)?
            .into_iter()
            .map(|e| e.file.file_name)
            .collect();
        Ok(delta.iter().all(|e| match e.kind {
            FileKind::Add => live.contains(&e.file.file_name),
            FileKind::Delete => !live.contains(&e.file.file_name),
        }))
    }

    /// Steps 1–2 of an attempt: the live files `phase` concerns (of the partitions it changes),
    /// the conflict checks against them, and the delta entries (ADD, and DELETE of replaced or
    /// compacted files).
    fn build_delta(
        &self,
        phase: &mut Phase,
        previous: Vec<ManifestFileMeta>,
        latest: Option<&Snapshot>,
    ) -> Result<Vec<ManifestEntry>> {
        let latest_id = latest.map(|s| s.id);
        match phase {
            Phase::Append {
                adds,
                replace,
                sequences,
                ..
            } => {
                // An append (and a dynamic overwrite) only needs the live files of the
                // partitions it writes to; a static overwrite needs all it may replace.
                let filter = match replace {
                    Some(Replace::Spec(_) | Replace::Specs(_)) => None,
                    None | Some(Replace::Written) => crate::table::live::partitions_filter(
                        &self.table,
                        adds.iter().map(|e| e.partition.as_slice()),
                    )?,
                };
                let live =
                    crate::table::live::live_entries_of(&self.table, previous, filter.as_ref())?;
                self.check_not_live(&live, adds, latest_id)?;
                if let Some(check) = sequences.as_mut() {
                    check.run(self, latest)?;
                }
                let mut delta = vec![];
                match replace {
                    None => {}
                    // the filter admitted exactly the written partitions
                    Some(Replace::Written) => delta.extend(live.iter().map(|e| ManifestEntry {
                        kind: FileKind::Delete,
                        ..e.clone()
                    })),
                    Some(Replace::Specs(specs)) => {
                        for e in &live {
                            let mut hit = false;
                            for spec in specs.iter() {
                                hit = hit || self.partition_matches(&e.partition, spec)?;
                            }
                            if hit {
                                delta.push(ManifestEntry {
                                    kind: FileKind::Delete,
                                    ..e.clone()
                                });
                            }
                        }
                    }
                    Some(Replace::Spec(spec)) => {
                        for e in &live {
                            if self.partition_matches(&e.partition, spec)? {
                                delta.push(ManifestEntry {
                                    kind: FileKind::Delete,
                                    ..e.clone()
                                });
                            }
                        }
                    }
                }
                // an overwrite may change a partition's bucket count: the files it replaces
                // do not count (Java checks the files that stay live with the added ones)
                let replaced: std::collections::HashSet<(&[u8], i32, &str)> = delta
                    .iter()
                    .map(|e| (e.partition.as_slice(), e.bucket, e.file.file_name.as_str()))
                    .collect();
                let kept: Vec<&ManifestEntry> = live
                    .iter()
                    .filter(|e| {
                        !replaced.contains(&(
                            e.partition.as_slice(),
                            e.bucket,
                            e.file.file_name.as_str(),
                        ))
                    })
                    .collect();
                self.check_total_buckets(kept, adds)?;
                delta.extend(adds.iter().cloned());
                Ok(delta)
            }
            Phase::Compact { entries } => {
                let filter = crate::table::live::partitions_filter(
                    &self.table,
                    entries.iter().map(|e| e.partition.as_slice()),
                )?;
                let live =
                    crate::table::live::live_entries_of(&self.table, previous, filter.as_ref())?;
                let adds: Vec<ManifestEntry> = entries
                    .iter()
                    .filter(|e| e.kind == FileKind::Add)
                    .cloned()
                    .collect();
                self.check_total_buckets(live.iter(), &adds)?;
                self.check_compaction(&live, entries, latest_id)?;
                Ok(entries.clone())
            }
        }
    }

    /// Step 3: the delta manifest, its list, the base list of the latest snapshot's manifests
    /// (merged), and the changelog manifest and its list when there is changelog.
    fn write_manifests(
        &self,
        previous: Vec<ManifestFileMeta>,
        delta: &[ManifestEntry],
        changelog: &[ManifestEntry],
        written: &mut Vec<PathBuf>,
    ) -> Result<ManifestLists> {
        let list_prefix = new_file_name("manifest-list", 0);
        let list_prefix = list_prefix.trim_end_matches("-0");
        let manifest_prefix = new_file_name("manifest", 0);
        let manifest_prefix = manifest_prefix.trim_end_matches("-0");
        // every file encoded first, then written together (on an object store one round
        // trip for the three PUTs, not three): no snapshot names them before the commit's
        // create, so their order does not matter
        let mut files: Vec<(PathBuf, Vec<u8>)> = vec![];
        let delta_manifest =
            self.encode_manifest(&format!("{manifest_prefix}-0"), delta, &mut files)?;
        let base = self.merge_manifests(previous, written)?;
        let base_name = format!("{list_prefix}-0");
        let base_size = self.encode_list(&base_name, &base, &mut files)?;
        let delta_name = format!("{list_prefix}-1");
        let delta_size = self.encode_list(&delta_name, &[delta_manifest], &mut files)?;
        let changelog = if changelog.is_empty() {
            None
        } else {
            let meta =
                self.encode_manifest(&format!("{manifest_prefix}-1"), changelog, &mut files)?;
            let name = format!("{list_prefix}-2");
            let size = self.encode_list(&name, &[meta], &mut files)?;
            Some((name, size))
        };
        written.extend(files.iter().map(|(p, _)| p.clone()));
        io::write_new_unsynced_all(&files)?;
        Ok(ManifestLists {
            base: (base_name, base_size),
            delta: (delta_name, delta_size),
            changelog,
        })
    }

    /// Step 4: the snapshot following `latest`. Record counts as Java: the delta counts the
    /// rows of ADD entries minus those of DELETE entries (0 for a compaction that only
    /// upgrades files), the total adds it to the latest snapshot's.
    fn new_snapshot(
        &self,
        latest: Option<&Snapshot>,
        delta: &[ManifestEntry],
        changelog: &[ManifestEntry],
        (lists, index_manifest): (ManifestLists, Option<String>),
        kind: CommitKind,
        commit_identifier: i64,
    ) -> Snapshot {
        let rows = |k: FileKind| -> i64 {
            delta
                .iter()
                .filter(|e| e.kind == k)
                .map(|e| e.file.row_count)
                .sum()
        };
        let delta_rows = rows(FileKind::Add) - rows(FileKind::Delete);
        let ManifestLists {
            base: (base_name, base_size),
            delta: (delta_name, delta_size),
            changelog: changelog_list,
        } = lists;
        let (changelog_name, changelog_size) = changelog_list.unzip();
        Snapshot {
            version: 3,
            id: latest.map(|s| s.id + 1).unwrap_or(1),
            schema_id: self.table.schema.id,
            base_manifest_list: base_name,
            base_manifest_list_size: Some(base_size),
            delta_manifest_list: delta_name,
            delta_manifest_list_size: Some(delta_size),
            changelog_manifest_list: changelog_name,
            changelog_manifest_list_size: changelog_size,
            index_manifest,
            commit_user: self.commit_user.clone(),
            commit_identifier,
            commit_kind: kind,
            time_millis: chrono::Utc::now().timestamp_millis(),
            total_record_count: latest.map(|s| s.total_record_count).unwrap_or(0) + delta_rows,
            delta_record_count: delta_rows,
            // Java's `nullableRecordCount`: none without changelog files
            changelog_record_count: (!changelog.is_empty())
                .then(|| changelog.iter().map(|e| e.file.row_count).sum()),
            watermark: latest.and_then(|s| s.watermark),
            statistics: None,
            properties: None,
            // row tracking: set by the caller (row_tracking::assign)
            next_row_id: latest.and_then(|s| s.next_row_id),
            uuid: Some(uuid::Uuid::new_v4().to_string()),
            writer_version: Some(format!("paimon_rs-{}", env!("CARGO_PKG_VERSION"))),
        }
    }

    /// A snapshot after `base` by this commit user with `ident` and `kind` (a retry of a
    /// batch commit whose snapshot did land).
    fn already_committed(
        &self,
        base: Option<i64>,
        ident: i64,
        kind: &CommitKind,
    ) -> Result<Option<i64>> {
        let sm = self.table.snapshot_manager();
        for id in sm.live_ids()? {
            if Some(id) <= base {
                continue;
            }
            let Some(s) = sm.try_snapshot(id)? else {
                continue; // expired meanwhile (its files were live in a newer snapshot)
            };
            if s.commit_user == self.commit_user
                && s.commit_identifier == ident
                && &s.commit_kind == kind
            {
                return Ok(Some(id));
            }
        }
        Ok(None)
    }

    /// Java refuses to commit files whose `_TOTAL_BUCKETS` differs from that of the partition's
    /// files that stay live, or from that of the other files the commit adds to the partition
    /// (two writers that chose different bucket counts for a new partition). The message names
    /// the partition and which of the two it is.
    fn check_total_buckets<'a>(
        &self,
        live: impl IntoIterator<Item = &'a ManifestEntry>,
        adds: &[ManifestEntry],
    ) -> Result<()> {
        // partition -> (total buckets, whether the table's live files set it)
        let mut seen: std::collections::HashMap<&[u8], (i32, bool)> =
            std::collections::HashMap::new();
        // a postpone-bucket table's bucket-postpone (-2) files sit beside its real buckets
        for e in live.into_iter().filter(|e| e.bucket != -2) {
            seen.insert(&e.partition, (e.total_buckets, true));
        }
        for a in adds.iter().filter(|e| e.bucket != -2) {
            match seen.get(a.partition.as_slice()) {
                Some(&(t, from_table)) if t != a.total_buckets => {
                    let unpartitioned = self.table.partition_keys().is_empty();
                    let p = match self.partition_label(&a.partition) {
                        _ if unpartitioned => "the unpartitioned table".to_string(),
                        l => format!("partition {l}"),
                    };
                    let why = if from_table {
                        let (where_, what) = if unpartitioned {
                            (String::new(), "the table")
                        } else {
                            (format!(" in {p}"), "the partition")
                        };
                        format!(
                            "the table has {t} buckets{where_}, this commit writes {} (file \
                             '{}'); overwrite {what} to change its bucket count",
                            a.total_buckets,
                            self.file_label(&a.partition, a.bucket, &a.file.file_name)
                        )
                    } else {
                        format!(
                            "files of this commit disagree ({t} vs {}): its writers planned \
                             the partition's buckets differently",
                            a.total_buckets
                        )
                    };
                    return Err(Error::CommitConflict {
                        table: self.table.name.clone(),
                        message: format!("Total buckets of {p} differ: {why}; give up committing"),
                    });
                }
                Some(_) => {}
                None => {
                    seen.insert(&a.partition, (a.total_buckets, false));
                }
            }
        }
        Ok(())
    }

    /// The manifests of `snapshot`, base then delta (none for an empty table).
    fn manifests_of(&self, snapshot: Option<&Snapshot>) -> Result<Vec<ManifestFileMeta>> {
        let Some(s) = snapshot else {
            return Ok(vec![]);
        };
        crate::table::live::read_base_and_delta(&self.table, s)
    }

    fn read_list(&self, name: &str) -> Result<Vec<ManifestFileMeta>> {
        let p = self.manifest_path(name);
        let referrer = format!("the latest snapshot of table {}", self.table.name);
        read_manifest_list(&io::read_referenced(&p, &referrer)?, &p)
    }

    /// The manifest list `name` of `metas`, encoded into `files` (path, bytes) to be written;
    /// its size.
    fn encode_list(
        &self,
        name: &str,
        metas: &[ManifestFileMeta],
        files: &mut Vec<(PathBuf, Vec<u8>)>,
    ) -> Result<i64> {
        let bytes = write_manifest_list(metas, &self.table.options.manifest_compression)?;
        let size = bytes.len() as i64;
        files.push((self.manifest_path(name), bytes));
        Ok(size)
    }

    /// Write the manifest `name` of `entries` (unsynced; see `io::sync_files`); its meta.
    fn write_manifest(
        &self,
        name: &str,
        entries: &[ManifestEntry],
        written: &mut Vec<PathBuf>,
    ) -> Result<ManifestFileMeta> {
        let mut files = vec![];
        let meta = self.encode_manifest(name, entries, &mut files)?;
        for (p, bytes) in files {
            written.push(p.clone());
            io::write_new_unsynced(&p, &bytes)?;
        }
        Ok(meta)
    }

    /// The manifest `name` of `entries`, encoded into `files` (path, bytes) to be written; its
    /// meta.
    fn encode_manifest(
        &self,
        name: &str,
        entries: &[ManifestEntry],
        files: &mut Vec<(PathBuf, Vec<u8>)>,
    ) -> Result<ManifestFileMeta> {
        let bytes = write_manifest_entries(entries, &self.table.options.manifest_compression)?;
        let file_size = bytes.len() as i64;
        files.push((self.manifest_path(name), bytes));
        let types = self.table.partition_types()?;
        let partition_stats = if types.is_empty() {
            SimpleStats::empty()
        } else {
            let mut mins: Vec<Option<Datum>> = vec![None; types.len()];
            let mut maxs: Vec<Option<Datum>> = vec![None; types.len()];
            let mut nulls = vec![0i64; types.len()];
            let mut seen = HashSet::new();
            for e in entries {
                if !seen.insert(e.partition.as_slice()) {
                    continue;
                }
                let vals = deserialize_row(&types, &e.partition)?;
                for (i, v) in vals.into_iter().enumerate() {
                    match v {
                        None => nulls[i] += 1,
                        Some(d) => {
                            let lo = match &mins[i] {
                                None => true,
                                Some(m) => d.compare(m) == Some(std::cmp::Ordering::Less),
                            };
                            if lo {
                                mins[i] = Some(d.clone());
                            }
                            let hi = match &maxs[i] {
                                None => true,
                                Some(m) => d.compare(m) == Some(std::cmp::Ordering::Greater),
                            };
                            if hi {
                                maxs[i] = Some(d);
                            }
                        }
                    }
                }
            }
            SimpleStats {
                min_values: serialize_row(&types, &mins)?,
                max_values: serialize_row(&types, &maxs)?,
                null_counts: nulls.into_iter().map(Some).collect(),
            }
        };
        // row tracking: the row ids the entries span, when each has a first_row_id (Java's
        // ManifestAvroWriter.RowIdStats)
        let row_ids = entries.iter().try_fold(None, |acc: Option<(i64, i64)>, e| {
            let first = e.file.first_row_id?;
            let last = first + e.file.row_count - 1;
            Some(Some(acc.map_or((first, last), |(lo, hi)| {
                (lo.min(first), hi.max(last))
            })))
        });
        let row_ids = row_ids.flatten();
        let min_or = |f: &dyn Fn(&ManifestEntry) -> i32| entries.iter().map(f).min();
        let max_or = |f: &dyn Fn(&ManifestEntry) -> i32| entries.iter().map(f).max();
        Ok(ManifestFileMeta {
            file_name: name.to_string(),
            file_size,
            num_added_files: entries.iter().filter(|e| e.kind == FileKind::Add).count() as i64,
            num_deleted_files: entries
                .iter()
                .filter(|e| e.kind == FileKind::Delete)
                .count() as i64,
            partition_stats,
            schema_id: entries.iter().map(|e| e.file.schema_id).max().unwrap_or(0),
            min_bucket: min_or(&|e| e.bucket),
            max_bucket: max_or(&|e| e.bucket),
            min_level: min_or(&|e| e.file.level),
            max_level: max_or(&|e| e.file.level),
            min_row_id: row_ids.map(|r| r.0),
            max_row_id: row_ids.map(|r| r.1),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::safety::tests::{commit, live_rows, rows, table, written};
    use super::*;
    use crate::table::expire::expire_snapshots;
    use crate::table::retention::ExpireConfig;
    use std::cell::RefCell;

    #[derive(Clone, Copy, PartialEq, Debug)]
    pub(super) enum RacePoint {
        BeforeCreate,
        AfterCreate,
    }

    type Race = (RacePoint, Box<dyn FnOnce()>);

    thread_local! {
        static RACE: RefCell<Option<Race>> = const { RefCell::new(None) };
    }

    /// Runs the armed race once, when this thread's commit reaches its point (other commits
    /// run by the race itself pass through).
    pub(super) fn race_point(at: RacePoint) {
        let armed = RACE.with(|r| {
            let mut r = r.borrow_mut();
            match r.as_ref() {
                Some((p, _)) if *p == at => r.take(),
                _ => None,
            }
        });
        if let Some((_, f)) = armed {
            f();
        }
    }

    pub(super) fn arm(at: RacePoint, f: impl FnOnce() + 'static) {
        RACE.with(|r| *r.borrow_mut() = Some((at, Box::new(f))));
    }

    fn expire_all_but_latest(t: &FileStoreTable) {
        let keep_one = ExpireConfig {
            num_retained_min: 1,
            num_retained_max: 1,
            time_retained_ms: 0,
            expire_limit: 100,
        };
        let far = chrono::Utc::now().timestamp_millis() + 3_600_000;
        expire_snapshots(t, &keep_one, far).unwrap();
    }

    /// While a commit based on snapshot 1 is prepared, others commit 2..=`others + 1` and an
    /// expiry keeps only the latest: the id 2 is free again when our commit creates it. Ours
    /// must not stay as snapshot 2 (acknowledged, but invisible: nothing newer holds it): it is
    /// withdrawn and retried, so an append lands on top of the latest, and a primary-key write
    /// is refused as a conflict (the snapshots it would check its keys against are gone).
    #[test]
    fn a_snapshot_id_freed_by_a_concurrent_expiry_is_not_taken() {
        for (pk, others) in [(false, 2), (false, 3), (true, 2), (true, 3)] {
            let dir = tempfile::tempdir().unwrap();
            let t = table(dir.path(), pk);
            commit(&t, &written(&t, &[rows(1, 0..3)])).unwrap();
            let ours = written(&t, &[rows(1, 10..13)]);
            let t2 = t.clone();
            arm(RacePoint::BeforeCreate, move || {
                for i in 0..others {
                    let k = 20 + 10 * i;
                    commit(&t2, &written(&t2, &[rows(1, k..k + 3)])).unwrap();
                }
                expire_all_but_latest(&t2);
                assert!(!crate::io::exists(&t2.snapshot_manager().snapshot_path(2)));
            });
            let case = format!("pk {pk}, {others} concurrent commits");
            let landed = commit(&t, &ours);
            let sm = t.snapshot_manager();
            assert!(
                sm.try_snapshot(2).unwrap().is_none(),
                "{case}: stale snapshot left"
            );
            if pk {
                let e = landed.unwrap_err();
                assert!(matches!(e, Error::CommitConflict { .. }), "{case}: {e}");
                assert_eq!(live_rows(&t), 3 * (others + 1), "{case}");
                assert_eq!(sm.latest_id().unwrap(), Some(others + 1), "{case}");
            } else {
                assert_eq!(landed.unwrap(), Some(others + 2), "{case}");
                assert_eq!(live_rows(&t), 3 * (others + 2), "{case}");
                assert_eq!(sm.latest_id().unwrap(), Some(others + 2), "{case}");
            }
        }
    }

    /// Row tracking through real commits: a commit that lost the race to a concurrent one is
    /// retried with row ids from the winner's `nextRowId`, so every row has its own id and
    /// each file's sequence numbers are the snapshot that added it.
    #[test]
    fn row_ids_stay_unique_when_a_commit_is_retried() {
        use crate::table::catalog::FileSystemCatalog;
        use crate::table::new_schema::NewTableSchema;
        use arrow_schema::{DataType as AT, Field, Schema};
        let dir = tempfile::tempdir().unwrap();
        let cat = FileSystemCatalog::new(dir.path()).unwrap();
        cat.create_database("db", true).unwrap();
        let schema = Schema::new(vec![
            Field::new("p", AT::Int32, false),
            Field::new("k", AT::Int64, false),
        ]);
        let opts = [("row-tracking.enabled".to_string(), "true".to_string())].into();
        let s = NewTableSchema::from_arrow(&schema, vec!["p".into()], vec![], opts, None).unwrap();
        cat.create_table("db.t", s, false).unwrap();
        let t = cat.get_table("db.t").unwrap();
        commit(&t, &written(&t, &[rows(1, 0..3)])).unwrap();
        // ours: two partitions (two files); the race: 4 rows committed before our create
        let ours = written(&t, &[rows(1, 10..12), rows(2, 20..25)]);
        let t2 = t.clone();
        arm(RacePoint::BeforeCreate, move || {
            commit(&t2, &written(&t2, &[rows(3, 30..34)])).unwrap();
        });
        assert_eq!(commit(&t, &ours).unwrap(), Some(3));
        let sm = t.snapshot_manager();
        let latest = sm.latest().unwrap().unwrap();
        assert_eq!(latest.next_row_id, Some(14));
        let mut files: Vec<(i64, i64, i64, i64)> = crate::table::live::live_entries(&t, &latest)
            .unwrap()
            .iter()
            .map(|e| {
                let f = &e.file;
                let first = f.first_row_id.unwrap();
                (
                    first,
                    f.row_count,
                    f.min_sequence_number,
                    f.max_sequence_number,
                )
            })
            .collect();
        files.sort();
        // consecutive ranges 0..14; the retried commit (snapshot 3) came after the winner (2)
        let mut next = 0;
        for &(first, n, _, _) in &files {
            assert_eq!(first, next, "{files:?}");
            next += n;
        }
        assert_eq!(next, 14);
        let seqs: Vec<(i64, i64, i64)> = files.iter().map(|f| (f.1, f.2, f.3)).collect();
        assert_eq!(seqs[0], (3, 1, 1));
        assert_eq!(seqs[1], (4, 2, 2));
        let mut ours_seqs: Vec<_> = seqs[2..].to_vec();
        ours_seqs.sort();
        assert_eq!(ours_seqs, vec![(2, 3, 3), (5, 3, 3)]);
        // the delta manifest's row-id range (Java's RowIdStats): ours, ids 7..=13
        let c = FileStoreCommit::new(t.clone(), "reader".into());
        let delta = c.read_list(&latest.delta_manifest_list).unwrap();
        assert_eq!(
            (delta[0].min_row_id, delta[0].max_row_id),
            (Some(7), Some(13))
        );
    }

    /// The legitimate cases of a base that vanished after ours landed: an expiry ran right after
    /// our create (ours is the latest), or also a commit on top of ours. Ours stays.
    #[test]
    fn a_base_expired_after_ours_landed_keeps_ours() {
        for on_top in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let t = table(dir.path(), true);
            commit(&t, &written(&t, &[rows(1, 0..3)])).unwrap();
            let ours = written(&t, &[rows(1, 10..13)]);
            let next = written(&t, &[rows(1, 20..23)]);
            let t2 = t.clone();
            arm(RacePoint::AfterCreate, move || {
                expire_all_but_latest(&t2);
                if on_top {
                    assert_eq!(commit(&t2, &next).unwrap(), Some(3));
                }
            });
            assert_eq!(commit(&t, &ours).unwrap(), Some(2), "on top: {on_top}");
            let rows_now = if on_top { 9 } else { 6 };
            assert_eq!(live_rows(&t), rows_now, "on top: {on_top}");
        }
    }
}
