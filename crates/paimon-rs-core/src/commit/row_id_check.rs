//! Racing column updates of a data-evolution table (row tracking + `data-evolution.enabled`).
//!
//! An update file (write/row_update.rs) holds the whole row-id group's values of the columns
//! it updates, read from snapshot `b` (the message's `restored_snapshot`). If a commit after
//! `b` wrote any of those columns of any of those rows (another update, a MERGE INTO of Java,
//! a partial-column write), committing ours would put the group's values as of `b` over it:
//! the other commit's values would be undone without an error. Java's
//! `DataEvolutionConflictDetection.checkForRowIdFromSnapshot` with its
//! `RowIdColumnConflictChecker` (pypaimon's `check_row_id_from_snapshot`) refuse such a
//! commit; so do we: every data or `.blob` file a non-COMPACT snapshot after `b` added or
//! deleted whose row-id range meets ours and whose columns (by field id, so a rename does not
//! hide it; no `write_cols` = every column) meet ours is a conflict. A message without its snapshot (an
//! older paimon_rs, pypaimon's messages) is not checked, as Java without
//! `rowIdCheckFromSnapshot`.
//!
//! The same place refuses an update of a column that a live global index covers (Java /
//! pypaimon `create_global_index`): the index would answer with the old values (pypaimon's
//! default `global-index.column-update-action = THROW_ERROR`; the other actions are refused
//! options here).

use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};

use super::{CommitMessage, FileStoreCommit};
use crate::error::{Error, Result};
use crate::io;
use crate::spec::manifest::{read_manifest_entries, DataFileMeta, FileKind, ManifestEntry};
use crate::spec::snapshot::{CommitKind, Snapshot};
use crate::table::snapshot_manager::read_schema;

/// Java's `ErrorMessages.DATA_EVOLUTION_ROW_ID_CONFLICT_MESSAGE` (pypaimon's too): the words a
/// caller that retries such conflicts looks for; our message goes on with the files and rows.
pub(crate) const DATA_EVOLUTION_ROW_ID_CONFLICT: &str =
    "For Data Evolution table, multiple 'MERGE INTO' operations have encountered conflicts, \
     updating the same file, which can render some updates ineffective.";

/// One update file of the commit.
struct Ours {
    /// The snapshot the update read its rows from.
    base: i64,
    name: String,
    partition: Vec<u8>,
    /// Row ids `from..=to`.
    from: i64,
    to: i64,
    fields: HashSet<i32>,
    /// The updated columns' names (for messages).
    columns: Vec<String>,
}

/// The check of one commit's update files, kept across its attempts (the snapshots read
/// once).
pub(super) struct RowIdCheck {
    ours: Vec<Ours>,
    /// Delta entries (with a row id) of the non-COMPACT snapshots read so far.
    seen: HashMap<i64, Vec<ManifestEntry>>,
    /// Field name -> id of each schema read so far.
    schemas: HashMap<i64, HashMap<String, i32>>,
}

/// The row-id range `from..=to` of a file that has one.
fn range(f: &DataFileMeta) -> Option<(i64, i64)> {
    f.first_row_id.map(|s| (s, s + f.row_count.max(1) - 1))
}

impl RowIdCheck {
    /// The update files (ADDs that carry a `first_row_id` their writer set) of `messages`.
    pub(super) fn new(c: &FileStoreCommit, messages: &[CommitMessage]) -> Result<Self> {
        let mut check = RowIdCheck {
            ours: vec![],
            seen: HashMap::new(),
            schemas: HashMap::new(),
        };
        if !c.table().options.row_tracking()? {
            return Ok(check);
        }
        for m in messages {
            for f in &m.data_increment.new_files {
                let Some((from, to)) = range(f) else {
                    continue;
                };
                // (an update's `.blob` file too: its `write_cols` name its BLOB column, its
                // range the rows it covers, values or placeholders)
                let fields = check.fields_of(c, f)?;
                check.ours.push(Ours {
                    // without its snapshot: only the global index check
                    base: m.restored_snapshot.map_or(i64::MAX, |b| b.unwrap_or(0)),
                    name: f.file_name.clone(),
                    partition: m.partition.clone(),
                    from,
                    to,
                    fields,
                    columns: f.write_cols.clone().unwrap_or_default(),
                });
            }
        }
        Ok(check)
    }

    /// The field ids a file holds: its `write_cols` in its schema, else all of them.
    fn fields_of(&mut self, c: &FileStoreCommit, f: &DataFileMeta) -> Result<HashSet<i32>> {
        let ids = match self.schemas.entry(f.schema_id) {
            Entry::Occupied(o) => o.into_mut(),
            Entry::Vacant(v) => {
                let schema = read_schema(&c.table().meta_path(), f.schema_id)?;
                v.insert(
                    schema
                        .fields
                        .iter()
                        .map(|d| (d.name.clone(), d.id))
                        .collect(),
                )
            }
        };
        Ok(match &f.write_cols {
            None => ids.values().copied().collect(),
            // system columns (`_ROW_ID` ...) have no id in the schema: not a conflict
            Some(cols) => cols.iter().filter_map(|n| ids.get(n).copied()).collect(),
        })
    }

    /// Refuse the commit if a snapshot after an update's base, up to `latest`, wrote one of
    /// its columns of one of its rows, or a live global index covers one of its columns.
    pub(super) fn run(&mut self, c: &FileStoreCommit, latest: Option<&Snapshot>) -> Result<()> {
        let Some(latest) = latest else {
            return Ok(());
        };
        if self.ours.is_empty() {
            return Ok(());
        }
        self.check_global_index(c, latest)?;
        let lowest = self.ours.iter().map(|o| o.base).min().unwrap_or(i64::MAX);
        if lowest >= latest.id {
            return Ok(());
        }
        for id in (lowest + 1)..=latest.id {
            if let Entry::Vacant(v) = self.seen.entry(id) {
                v.insert(delta_with_row_ids(c, id, latest)?);
            }
        }
        // taken out while the loop reads schemas into `self`, put back for a retry
        let seen = std::mem::take(&mut self.seen);
        let result = self.check_snapshots(c, &seen, lowest, latest.id);
        self.seen = seen;
        result
    }

    fn check_snapshots(
        &mut self,
        c: &FileStoreCommit,
        seen: &HashMap<i64, Vec<ManifestEntry>>,
        lowest: i64,
        latest: i64,
    ) -> Result<()> {
        for id in (lowest + 1)..=latest {
            for e in seen.get(&id).into_iter().flatten() {
                let Some((from, to)) = range(&e.file) else {
                    continue;
                };
                for i in 0..self.ours.len() {
                    let o = &self.ours[i];
                    if id <= o.base || o.partition != e.partition {
                        continue;
                    }
                    if e.kind == FileKind::Add && e.file.file_name == o.name {
                        return Err(Error::DuplicateCommit {
                            table: c.table().name.clone(),
                            message: format!(
                                "trying to add update file {} which snapshot {id} already \
                                 added: these commit messages were already committed; nothing \
                                 was written",
                                o.name
                            ),
                        });
                    }
                    if to < o.from || o.to < from {
                        continue;
                    }
                    let theirs = self.fields_of(c, &e.file)?;
                    let o = &self.ours[i];
                    if o.fields.is_disjoint(&theirs) {
                        continue;
                    }
                    return Err(Error::CommitConflict {
                        table: c.table().name.clone(),
                        message: format!(
                            "{DATA_EVOLUTION_ROW_ID_CONFLICT} Concurrent updates of the same \
                             rows and columns: the update file '{}' of the rows {}..={} (columns \
                             {}) was read from snapshot {}, and snapshot {id} since {} '{}' \
                             holding some of those columns of some of those rows; committing \
                             would undo it. Read the rows again and update them on the latest \
                             snapshot",
                            o.name,
                            o.from,
                            o.to,
                            o.columns.join(", "),
                            o.base,
                            if e.kind == FileKind::Add {
                                "added"
                            } else {
                                "removed"
                            },
                            e.file.file_name
                        ),
                    });
                }
            }
        }
        Ok(())
    }

    /// pypaimon's `apply_global_index_update_action` with its default THROW_ERROR.
    fn check_global_index(&self, c: &FileStoreCommit, latest: &Snapshot) -> Result<()> {
        if latest.index_manifest.is_none() {
            return Ok(());
        }
        let live = c
            .table()
            .live_index_entries(latest.index_manifest.as_deref())?;
        for e in &live {
            let Some(g) = &e.global_index else {
                continue;
            };
            let indexed: HashSet<i32> = g.field_ids().collect();
            for o in &self.ours {
                if o.partition != e.partition || o.fields.is_disjoint(&indexed) {
                    continue;
                }
                return Err(Error::Unsupported {
                    table: Some(c.table().name.clone()),
                    message: format!(
                        "updating the columns {} of the rows {}..={}: the global index '{}' \
                     ({}) covers some of them and would go on answering with their old \
                     values (pypaimon and Java refuse it too: \
                     global-index.column-update-action = THROW_ERROR); drop the index first",
                        o.columns.join(", "),
                        o.from,
                        o.to,
                        e.file_name,
                        e.index_type
                    ),
                });
            }
        }
        Ok(())
    }
}

/// The ADD and DELETE entries with a row id of snapshot `id`'s delta (none for a COMPACT
/// snapshot: a compaction rewrites values, it does not change them).
fn delta_with_row_ids(
    c: &FileStoreCommit,
    id: i64,
    latest: &Snapshot,
) -> Result<Vec<ManifestEntry>> {
    let sm = c.table().snapshot_manager();
    let expired = || Error::CommitConflict {
        table: c.table().name.clone(),
        message: format!(
            "snapshot {id}, committed after the snapshot the update read its rows from, has \
             expired: the commit cannot verify that no concurrent update wrote the same rows; \
             update them again"
        ),
    };
    let snap = if id == latest.id {
        latest.clone()
    } else {
        match sm.try_snapshot(id)? {
            Some(s) => s,
            None => return Err(expired()),
        }
    };
    if snap.commit_kind == CommitKind::Compact {
        return Ok(vec![]);
    }
    let gone = |e: Error| match sm.try_snapshot(id) {
        Ok(None) => expired(),
        _ => e,
    };
    let mut out = vec![];
    for m in c.read_list(&snap.delta_manifest_list).map_err(&gone)? {
        let p = c.table().manifest_dir().join(&m.file_name);
        for e in read_manifest_entries(&io::read(&p).map_err(&gone)?, &p)? {
            if e.file.first_row_id.is_some() {
                out.push(e);
            }
        }
    }
    Ok(out)
}
