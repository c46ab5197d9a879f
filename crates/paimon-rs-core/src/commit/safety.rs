//! The commit's safety checks (issue #9): a file is never added twice, never referenced if it
//! does not exist, never deleted while a snapshot references it; a commit of a primary-key
//! bucket that a concurrent commit wrote with sequence numbers ours do not follow is refused;
//! a commit identifier lands once per commit user.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use super::{CommitMessage, FileStoreCommit};
use crate::error::{Error, Result};
use crate::io;
use crate::spec::binary_row::deserialize_row;
use crate::spec::datum::{compare_rows, Datum};
use crate::spec::manifest::{read_manifest_entries, DataFileMeta, FileKind, ManifestEntry};
use crate::spec::snapshot::{Snapshot, BATCH_COMMIT_IDENTIFIER};
use crate::table::references::{Missing, Walker};

/// (serialized partition, bucket, file name): a data file of the table.
type FileKey = (Vec<u8>, i32, String);

/// A decoded key.
type Row = Vec<Option<Datum>>;

/// What `abort` did with the messages' data files.
#[derive(Debug, Default)]
pub struct AbortOutcome {
    /// Files deleted (no snapshot or tag references them).
    pub deleted: Vec<PathBuf>,
    /// Files kept because a snapshot or tag references them (the messages were committed).
    pub referenced: Vec<PathBuf>,
}

/// One of our new files, with its decoded key range (primary-key tables).
struct OurFile {
    /// The snapshot the writer restored sequence numbers from (0 = the table was empty).
    base: i64,
    name: String,
    min_seq: i64,
    max_seq: i64,
    min_key: Row,
    max_key: Row,
}

/// The concurrent-writer check of a commit's append files: the delta entries of the snapshots
/// committed since each message's writer restored its sequence numbers, read once per
/// snapshot across retry attempts.
pub(super) struct SequenceCheck {
    ours: HashMap<(Vec<u8>, i32), Vec<OurFile>>,
    /// Delta ADD entries of the buckets in `ours`, per snapshot id.
    seen: HashMap<i64, Vec<ManifestEntry>>,
}

impl FileStoreCommit {
    /// Path of a message's data file.
    pub(super) fn data_file_path(&self, m: &CommitMessage, f: &DataFileMeta) -> Result<PathBuf> {
        Ok(match &f.external_path {
            Some(p) => crate::io::external_file(p),
            None => self
                .bucket_dir_of(&m.partition, m.bucket)?
                .join(&f.file_name),
        })
    }

    /// `dt=a/bucket-0/data-….parquet`, for messages.
    pub(super) fn file_label(&self, partition: &[u8], bucket: i32, name: &str) -> String {
        match self.bucket_dir_of(partition, bucket) {
            Ok(d) => {
                let rel = d
                    .strip_prefix(&self.table().path)
                    .unwrap_or(&d)
                    .to_path_buf();
                rel.join(name).to_string_lossy().into_owned()
            }
            Err(_) => format!("bucket-{bucket}/{name}"),
        }
    }

    /// Before any attempt: no file twice in the messages, and every file added exists
    /// (messages whose files were aborted or cleaned can never be committed). A compaction
    /// output may carry the name of one of its message's inputs only at a higher level (an
    /// upgrade: the same file moved up).
    pub(super) fn check_messages(&self, messages: &[CommitMessage]) -> Result<()> {
        self.check_exist(messages)?;
        let mut seen: HashSet<FileKey> = HashSet::new();
        let mut removed: HashSet<FileKey> = HashSet::new();
        for m in messages {
            let mut inputs: HashMap<&str, i32> = HashMap::new();
            for f in &m.compact_increment.compact_before {
                inputs.insert(&f.file_name, f.level);
                if !removed.insert((m.partition.clone(), m.bucket, f.file_name.clone())) {
                    return Err(Error::DuplicateCommit {
                        table: self.table().name.clone(),
                        message: format!(
                            "trying to remove compaction input {} twice: it appears more than \
                             once in compact_before of these commit messages",
                            self.file_label(&m.partition, m.bucket, &f.file_name)
                        ),
                    });
                }
            }
            let outputs = m
                .data_increment
                .new_files
                .iter()
                .chain(&m.compact_increment.compact_after);
            for (i, f) in outputs.enumerate() {
                if i >= m.data_increment.new_files.len() {
                    match inputs.get(f.file_name.as_str()) {
                        Some(&level) if f.level > level => continue, // an upgrade
                        Some(&level) => {
                            return Err(Error::DuplicateCommit {
                                table: self.table().name.clone(),
                                message: format!(
                                    "compaction output {} at level {} is also an input, at \
                                     level {level}: only an upgrade to a higher level may keep \
                                     an input file",
                                    self.file_label(&m.partition, m.bucket, &f.file_name),
                                    f.level
                                ),
                            });
                        }
                        None => {}
                    }
                }
                let key = (m.partition.clone(), m.bucket, f.file_name.clone());
                if !seen.insert(key) {
                    return Err(Error::DuplicateCommit {
                        table: self.table().name.clone(),
                        message: format!(
                            "trying to add file {} twice: it appears more than once in the \
                             new files and compaction outputs of these commit messages (the \
                             same messages were passed twice?)",
                            self.file_label(&m.partition, m.bucket, &f.file_name)
                        ),
                    });
                }
            }
        }
        Ok(())
    }

    /// Every file the messages add (new files and compaction outputs) must exist; on an
    /// object store the checks go out together (`io::file_sizes`).
    fn check_exist(&self, messages: &[CommitMessage]) -> Result<()> {
        let mut paths = vec![];
        for m in messages {
            let outputs = m
                .data_increment
                .new_files
                .iter()
                .chain(&m.compact_increment.compact_after);
            for f in outputs {
                paths.push(self.data_file_path(m, f)?);
            }
        }
        for (path, size) in paths.iter().zip(crate::io::file_sizes(&paths)) {
            self.exists_or_stale(path, size)?;
        }
        Ok(())
    }

    /// A file a message adds must exist: `size` is what asking for its size gave.
    fn exists_or_stale(&self, path: &Path, size: std::io::Result<u64>) -> Result<()> {
        match size {
            Ok(_) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(Error::StaleCommitMessage {
                table: self.table().name.clone(),
                message: format!(
                    "data file {} of these commit messages does not exist (the messages were \
                     aborted, or their files removed): they can never be committed; write the \
                     data again",
                    path.display()
                ),
            }),
            Err(e) => Err(Error::io(path, e)),
        }
    }

    /// Java's "Trying to add file ... which is already added": refuse adds that are live in
    /// `snapshot` (the same messages committed before, by any commit object or process).
    pub(super) fn check_not_live(
        &self,
        live: &[ManifestEntry],
        adds: &[ManifestEntry],
        snapshot: Option<i64>,
    ) -> Result<()> {
        if adds.is_empty() || live.is_empty() {
            return Ok(());
        }
        let ours: HashSet<(&[u8], i32, &str)> = adds
            .iter()
            .map(|e| (e.partition.as_slice(), e.bucket, e.file.file_name.as_str()))
            .collect();
        let dup: Vec<String> = live
            .iter()
            .filter(|e| {
                ours.contains(&(e.partition.as_slice(), e.bucket, e.file.file_name.as_str()))
            })
            .map(|e| self.file_label(&e.partition, e.bucket, &e.file.file_name))
            .collect();
        if dup.is_empty() {
            return Ok(());
        }
        let more = if dup.len() > 3 {
            format!(" and {} more", dup.len() - 3)
        } else {
            String::new()
        };
        Err(Error::DuplicateCommit {
            table: self.table().name.clone(),
            message: format!(
                "trying to add file {}{more} which is already added (live in snapshot {}): \
                 these commit messages were already committed; nothing was written",
                dup[..dup.len().min(3)].join(", "),
                snapshot.unwrap_or(0),
            ),
        })
    }

    /// The snapshot this commit user committed with `ident` (not the batch identifier),
    /// walking down from the latest snapshot to `after` (exclusive). A commit user's
    /// identifiers increase (Java's rule), so the walk stops at the user's first identifier
    /// below `ident`; an `ident` below one already committed but not found is out of order and
    /// refused (Java would silently drop it).
    pub(super) fn committed_identifier(
        &self,
        ident: i64,
        after: Option<i64>,
    ) -> Result<Option<i64>> {
        let sm = self.table().snapshot_manager();
        let mut above: Option<(i64, i64)> = None;
        // stale snapshots left out: a crashed commit's stale snapshot was never acknowledged,
        // so a retry of its identifier must land
        for id in sm.live_ids()?.into_iter().rev() {
            if Some(id) <= after {
                break;
            }
            let Some(s) = sm.try_snapshot(id)? else {
                continue; // expired meanwhile
            };
            if s.commit_user != self.commit_user() || s.commit_identifier == BATCH_COMMIT_IDENTIFIER
            {
                continue;
            }
            match s.commit_identifier.cmp(&ident) {
                std::cmp::Ordering::Equal => return Ok(Some(id)),
                std::cmp::Ordering::Less => break,
                std::cmp::Ordering::Greater => above = Some((s.commit_identifier, id)),
            }
        }
        match above {
            Some((higher, id)) if after.is_none() => Err(Error::InvalidArgument {
                table: Some(self.table().name.clone()),
                message: format!(
                    "commit user '{}' already committed identifier {higher} (snapshot {id}), \
                     above {ident}, and no snapshot of identifier {ident} exists: a commit \
                     user's identifiers must increase",
                    self.commit_user()
                ),
            }),
            _ => Ok(None),
        }
    }

    /// Delete the data files of messages that will not be committed (new files and compaction
    /// outputs; an upgraded output is its input and is kept), except files that any
    /// snapshot or tag references (messages that were committed: deleting their files would
    /// break the table, and time travel to older snapshots). Deletes nothing if the table's
    /// metadata cannot be read.
    pub fn abort(&self, messages: &[CommitMessage]) -> Result<AbortOutcome> {
        let mut candidates: Vec<(FileKey, PathBuf)> = vec![];
        for m in messages {
            // an upgraded compaction output is its input file: never the message's to delete
            let inputs: HashSet<&str> = m
                .compact_increment
                .compact_before
                .iter()
                .map(|f| &*f.file_name)
                .collect();
            let outputs = m
                .compact_increment
                .compact_after
                .iter()
                .filter(|f| !inputs.contains(&*f.file_name));
            for f in m.data_increment.new_files.iter().chain(outputs) {
                let path = self.data_file_path(m, f)?;
                if crate::io::exists(&path) {
                    // its index file (`<data file>.index`) goes with it
                    for x in &f.extra_files {
                        let key = (m.partition.clone(), m.bucket, f.file_name.clone());
                        candidates.push((key, path.with_file_name(x)));
                    }
                    candidates.push(((m.partition.clone(), m.bucket, f.file_name.clone()), path));
                }
            }
        }
        // index files the messages' writers wrote (deletion vectors of a delete, hash
        // indexes): written before the commit, so theirs to delete too
        let mut index_candidates: Vec<(String, PathBuf)> = vec![];
        for m in messages {
            let files = m
                .data_increment
                .new_index_files
                .iter()
                .chain(&m.compact_increment.new_index_files);
            for f in files {
                let path = self
                    .table()
                    .index_file_path(&f.file_name, f.external_path.as_deref());
                if crate::io::exists(&path) {
                    index_candidates.push((f.file_name.clone(), path));
                }
            }
        }
        let mut out = AbortOutcome::default();
        if candidates.is_empty() && index_candidates.is_empty() {
            return Ok(out);
        }
        let wanted: HashSet<&FileKey> = candidates.iter().map(|(k, _)| k).collect();
        let (referenced, referenced_index) = self.referenced_of(&wanted)?;
        for (key, path) in &candidates {
            if referenced.contains(key) {
                out.referenced.push(path.clone());
                continue;
            }
            crate::io::remove_file_if_exists(path)?;
            out.deleted.push(path.clone());
        }
        for (name, path) in &index_candidates {
            if referenced_index.contains(name) {
                out.referenced.push(path.clone());
                continue;
            }
            crate::io::remove_file_if_exists(path)?;
            out.deleted.push(path.clone());
        }
        Ok(out)
    }

    /// Which of `wanted` any snapshot, tag or long-lived changelog references (reads each manifest once, only those
    /// whose partitions may hold one of them), and the names of every index file a snapshot or
    /// tag lists.
    fn referenced_of(
        &self,
        wanted: &HashSet<&FileKey>,
    ) -> Result<(HashSet<FileKey>, HashSet<String>)> {
        // every branch's snapshots and tags: a branch shares the data files
        let snapshots = crate::table::file_deletion::all_kept(self.table())?;
        let filter = crate::table::live::partitions_filter(
            self.table(),
            wanted.iter().map(|k| k.0.as_slice()),
        )?;
        let keys = self.table().partition_keys().to_vec();
        let types = self.table().partition_types()?;
        let walker = Walker::new(
            self.table(),
            Missing::Refuse("refusing to delete the messages' files"),
        )
        .with_manifest_filter(|m| {
            filter
                .as_ref()
                .is_none_or(|f| crate::table::live::manifest_may_match(m, &keys, &types, f))
        });
        let mut referenced = walker.referenced(&snapshots)?;
        let changelogs = crate::table::changelog::all_changelogs(self.table())?;
        if !changelogs.is_empty() {
            let c = crate::table::changelog::changelog_references(
                self.table(),
                &changelogs,
                Missing::Refuse("refusing to delete the messages' files"),
                true,
            )?;
            referenced.data.extend(c.data);
        }
        let data = wanted
            .iter()
            .filter(|k| referenced.data.contains(&k.2))
            .map(|k| (*k).clone())
            .collect();
        Ok((data, referenced.index))
    }
}

/// A snapshot the concurrent-writer check must read was expired meanwhile.
fn expired_between(c: &FileStoreCommit, id: i64) -> Error {
    Error::CommitConflict {
        table: c.table().name.clone(),
        message: format!(
            "snapshot {id}, committed after the snapshot these messages' writer started from, \
             has expired: the commit cannot verify that no concurrent writer wrote the same \
             keys; write the data again"
        ),
    }
}

impl SequenceCheck {
    /// The files of primary-key messages that recorded their writer's restored snapshot.
    pub(super) fn new(c: &FileStoreCommit, messages: &[CommitMessage]) -> Result<Self> {
        let mut ours: HashMap<(Vec<u8>, i32), Vec<OurFile>> = HashMap::new();
        if c.table().is_primary_key() {
            let types = c
                .table()
                .schema
                .types_of(&c.table().trimmed_primary_keys())?;
            for m in messages {
                let Some(base) = m.restored_snapshot else {
                    continue; // serialized before paimon_rs recorded it: not checked
                };
                for f in &m.data_increment.new_files {
                    ours.entry((m.partition.clone(), m.bucket))
                        .or_default()
                        .push(OurFile {
                            base: base.unwrap_or(0),
                            name: f.file_name.clone(),
                            min_seq: f.min_sequence_number,
                            max_seq: f.max_sequence_number,
                            min_key: deserialize_row(&types, &f.min_key)?,
                            max_key: deserialize_row(&types, &f.max_key)?,
                        });
                }
            }
        }
        Ok(SequenceCheck {
            ours,
            seen: HashMap::new(),
        })
    }

    /// Refuse the commit if a snapshot after a file's restored snapshot, up to `latest`, added
    /// a file to the same (partition, bucket) whose keys overlap ours and whose sequence
    /// numbers reach ours: the two writers continued from the same sequence numbers, so the
    /// merge could order their rows of a key against the commit order (ours would be hidden).
    pub(super) fn run(&mut self, c: &FileStoreCommit, latest: Option<&Snapshot>) -> Result<()> {
        let Some(latest) = latest else {
            return Ok(());
        };
        let Some(lowest) = self.ours.values().flatten().map(|f| f.base).min() else {
            return Ok(());
        };
        let types = c
            .table()
            .schema
            .types_of(&c.table().trimmed_primary_keys())?;
        let ids = (lowest + 1)..=latest.id;
        for id in ids.clone() {
            if !self.seen.contains_key(&id) {
                let entries = self.delta_adds(c, id, latest)?;
                self.seen.insert(id, entries);
            }
        }
        // our own files added since (committed, then overwritten): a duplicate, not a conflict
        for id in ids.clone() {
            for e in self.seen.get(&id).into_iter().flatten() {
                let files = self.ours.get(&(e.partition.clone(), e.bucket));
                if files.is_some_and(|fs| fs.iter().any(|o| o.name == e.file.file_name)) {
                    return Err(Error::DuplicateCommit {
                        table: c.table().name.clone(),
                        message: format!(
                            "trying to add file {} which snapshot {id} already added: these \
                             commit messages were already committed; nothing was written",
                            c.file_label(&e.partition, e.bucket, &e.file.file_name)
                        ),
                    });
                }
            }
        }
        for id in ids {
            for e in self.seen.get(&id).into_iter().flatten() {
                let Some(files) = self.ours.get(&(e.partition.clone(), e.bucket)) else {
                    continue;
                };
                let mut theirs: Option<(Row, Row)> = None;
                for o in files.iter().filter(|o| id > o.base) {
                    if e.file.max_sequence_number < o.min_seq {
                        continue;
                    }
                    if theirs.is_none() {
                        theirs = Some((
                            deserialize_row(&types, &e.file.min_key)?,
                            deserialize_row(&types, &e.file.max_key)?,
                        ));
                    }
                    let Some((tmin, tmax)) = &theirs else {
                        continue;
                    };
                    let disjoint = compare_rows(&o.max_key, tmin) == std::cmp::Ordering::Less
                        || compare_rows(tmax, &o.min_key) == std::cmp::Ordering::Less;
                    if disjoint {
                        continue;
                    }
                    return Err(Error::CommitConflict {
                        table: c.table().name.clone(),
                        message: format!(
                            "a concurrent writer wrote the same keys: snapshot {id} added {} \
                             (sequence numbers {}..={}) whose key range overlaps {} (sequence \
                             numbers {}..={}); both writers continued the sequence numbers of \
                             {}, so committing would let the earlier commit hide rows of this \
                             one. The table is unchanged; abort these messages and write the \
                             data again",
                            c.file_label(&e.partition, e.bucket, &e.file.file_name),
                            e.file.min_sequence_number,
                            e.file.max_sequence_number,
                            o.name,
                            o.min_seq,
                            o.max_seq,
                            match o.base {
                                0 => "the empty table".to_string(),
                                b => format!("snapshot {b}"),
                            },
                        ),
                    });
                }
            }
        }
        Ok(())
    }

    /// ADD entries of snapshot `id`'s delta manifests in our buckets.
    fn delta_adds(
        &self,
        c: &FileStoreCommit,
        id: i64,
        latest: &Snapshot,
    ) -> Result<Vec<ManifestEntry>> {
        let snap = if id == latest.id {
            latest.clone()
        } else {
            match c.table().snapshot_manager().try_snapshot(id)? {
                Some(s) => s,
                None => return Err(expired_between(c, id)),
            }
        };
        let (min_b, max_b) = self
            .ours
            .keys()
            .fold((i32::MAX, i32::MIN), |(lo, hi), (_, b)| {
                (lo.min(*b), hi.max(*b))
            });
        let mut out = vec![];
        let sm = c.table().snapshot_manager();
        let gone = |e: Error| match sm.try_snapshot(id) {
            Ok(None) => expired_between(c, id),
            _ => e,
        };
        for m in c.read_list(&snap.delta_manifest_list).map_err(&gone)? {
            if m.min_bucket.is_some_and(|b| b > max_b) || m.max_bucket.is_some_and(|b| b < min_b) {
                continue;
            }
            let p = c.table().manifest_dir().join(&m.file_name);
            for e in read_manifest_entries(&io::read(&p).map_err(&gone)?, &p)? {
                if e.kind == FileKind::Add
                    && self.ours.contains_key(&(e.partition.clone(), e.bucket))
                {
                    out.push(e);
                }
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use arrow_array::{Int32Array, Int64Array, RecordBatch};
    use arrow_schema::{DataType as AT, Field, Schema};

    use super::*;
    use crate::commit::Overwrite;
    use crate::table::catalog::FileSystemCatalog;
    use crate::table::new_schema::NewTableSchema;
    use crate::table::FileStoreTable;
    use crate::write::TableWrite;

    /// `p` INT partition, `k` BIGINT; primary key (p, k) or none; one bucket.
    pub(crate) fn table(dir: &std::path::Path, pk: bool) -> FileStoreTable {
        let cat = FileSystemCatalog::new(dir).unwrap();
        cat.create_database("db", true).unwrap();
        let schema = Schema::new(vec![
            Field::new("p", AT::Int32, false),
            Field::new("k", AT::Int64, false),
        ]);
        let mut opts: BTreeMap<String, String> = [("bucket".to_string(), "1".to_string())].into();
        if !pk {
            opts.insert("bucket-key".into(), "k".into());
        }
        let keys = if pk {
            vec!["p".into(), "k".into()]
        } else {
            vec![]
        };
        let s = NewTableSchema::from_arrow(&schema, vec!["p".into()], keys, opts, None).unwrap();
        cat.create_table("db.t", s, false).unwrap();
        cat.get_table("db.t").unwrap()
    }

    pub(crate) fn rows(p: i32, ks: std::ops::Range<i64>) -> RecordBatch {
        let n = (ks.end - ks.start) as usize;
        let schema = Arc::new(Schema::new(vec![
            Field::new("p", AT::Int32, false),
            Field::new("k", AT::Int64, false),
        ]));
        RecordBatch::try_new(
            schema,
            vec![
                Arc::new(Int32Array::from(vec![p; n])),
                Arc::new(Int64Array::from_iter_values(ks)),
            ],
        )
        .unwrap()
    }

    pub(crate) fn written(t: &FileStoreTable, batches: &[RecordBatch]) -> Vec<CommitMessage> {
        let mut w = TableWrite::new(t.clone()).unwrap();
        for b in batches {
            w.write(b).unwrap();
        }
        let msgs = w.prepare_commit().unwrap();
        w.close();
        msgs
    }

    pub(crate) fn commit(t: &FileStoreTable, msgs: &[CommitMessage]) -> Result<Option<i64>> {
        FileStoreCommit::new(t.clone(), uuid::Uuid::new_v4().to_string()).commit(
            msgs,
            BATCH_COMMIT_IDENTIFIER,
            None,
        )
    }

    pub(crate) fn paths(c: &FileStoreCommit, msgs: &[CommitMessage]) -> Vec<PathBuf> {
        msgs.iter()
            .flat_map(|m| {
                m.data_increment
                    .new_files
                    .iter()
                    .map(|f| c.data_file_path(m, f).unwrap())
            })
            .collect()
    }

    pub(crate) fn live_rows(t: &FileStoreTable) -> i64 {
        let s = t.snapshot_manager().latest().unwrap().unwrap();
        crate::table::live::live_entries(t, &s)
            .unwrap()
            .iter()
            .map(|e| e.file.row_count)
            .sum()
    }

    #[test]
    fn restored_snapshot_absent_null_and_set() {
        let dir = tempfile::tempdir().unwrap();
        let t = table(dir.path(), true);
        let msgs = written(&t, &[rows(1, 0..3)]);
        assert_eq!(msgs[0].restored_snapshot, Some(None)); // empty table
        let bytes = msgs[0].to_bytes().unwrap();
        assert_eq!(CommitMessage::from_bytes(&bytes).unwrap(), msgs[0]);
        // a message serialized before the field existed: unknown, not "empty table"
        let mut v: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        v.as_object_mut().unwrap().remove("restored_snapshot");
        let old = CommitMessage::from_bytes(&serde_json::to_vec(&v).unwrap()).unwrap();
        assert_eq!(old.restored_snapshot, None);
        commit(&t, &msgs).unwrap();
        let msgs = written(&t, &[rows(1, 0..3)]);
        assert_eq!(msgs[0].restored_snapshot, Some(Some(1)));
    }

    #[test]
    fn same_messages_twice_are_refused_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let t = table(dir.path(), true);
        let msgs = written(&t, &[rows(1, 0..10), rows(2, 0..10)]);
        assert_eq!(commit(&t, &msgs).unwrap(), Some(1));
        let e = commit(&t, &msgs).unwrap_err();
        assert!(matches!(e, Error::DuplicateCommit { .. }), "{e}");
        assert!(e.to_string().contains("already added"), "{e}");
        assert!(
            e.to_string()
                .contains(&msgs[0].data_increment.new_files[0].file_name)
                || e.to_string()
                    .contains(&msgs[1].data_increment.new_files[0].file_name),
            "{e}"
        );
        // passed twice in one commit
        let more = written(&t, &[rows(3, 0..10)]);
        let twice = [more.clone(), more.clone()].concat();
        let e = commit(&t, &twice).unwrap_err();
        assert!(matches!(e, Error::DuplicateCommit { .. }), "{e}");
        // nothing written, nothing deleted
        assert_eq!(t.snapshot_manager().latest_id().unwrap(), Some(1));
        let c = FileStoreCommit::new(t.clone(), "x".into());
        assert!(paths(&c, &msgs).iter().all(|p| p.exists()));
        assert_eq!(live_rows(&t), 20);
    }

    #[test]
    fn messages_committed_then_overwritten_are_refused() {
        // the files are no longer live, but the delta of the snapshot that added them is read
        let dir = tempfile::tempdir().unwrap();
        let t = table(dir.path(), true);
        let first = written(&t, &[rows(1, 0..5)]);
        let msgs = written(&t, &[rows(1, 0..10)]);
        commit(&t, &first).unwrap();
        let c = FileStoreCommit::new(t.clone(), "u".into());
        // committed after `first` would conflict; commit `msgs` by overwrite, then overwrite again
        c.commit_as(&msgs, BATCH_COMMIT_IDENTIFIER, Some(Overwrite::Dynamic))
            .unwrap();
        c.commit_as(
            &written(&t, &[rows(1, 0..2)]),
            BATCH_COMMIT_IDENTIFIER,
            Some(Overwrite::Dynamic),
        )
        .unwrap();
        let e = commit(&t, &msgs).unwrap_err();
        assert!(matches!(e, Error::DuplicateCommit { .. }), "{e}");
    }

    #[test]
    fn missing_files_are_stale() {
        let dir = tempfile::tempdir().unwrap();
        let t = table(dir.path(), false);
        let msgs = written(&t, &[rows(1, 0..10)]);
        let c = FileStoreCommit::new(t.clone(), "x".into());
        let out = c.abort(&msgs).unwrap();
        assert_eq!(out.deleted.len(), 1);
        assert!(out.referenced.is_empty());
        let e = commit(&t, &msgs).unwrap_err();
        assert!(matches!(e, Error::StaleCommitMessage { .. }), "{e}");
        assert!(
            e.to_string()
                .contains(&msgs[0].data_increment.new_files[0].file_name),
            "{e}"
        );
        assert_eq!(t.snapshot_manager().latest_id().unwrap(), None);
    }

    #[test]
    fn abort_keeps_files_any_snapshot_references() {
        let dir = tempfile::tempdir().unwrap();
        let t = table(dir.path(), false);
        let c = FileStoreCommit::new(t.clone(), "x".into());
        let msgs = written(&t, &[rows(1, 0..10)]);
        commit(&t, &msgs).unwrap();
        // overwritten: live in snapshot 1 only (time travel)
        c.commit(
            &written(&t, &[rows(1, 0..3)]),
            BATCH_COMMIT_IDENTIFIER,
            Some(&vec![]),
        )
        .unwrap();
        let out = c.abort(&msgs).unwrap();
        assert!(out.deleted.is_empty());
        assert_eq!(out.referenced, paths(&c, &msgs));
        assert!(paths(&c, &msgs)[0].exists());
    }

    #[test]
    fn concurrent_writers_of_the_same_keys_conflict() {
        let dir = tempfile::tempdir().unwrap();
        let t = table(dir.path(), true);
        commit(&t, &written(&t, &[rows(1, 0..100)])).unwrap();
        // both writers continue from snapshot 1's sequence numbers
        let a = written(&t, &[rows(1, 10..20)]);
        let b = written(&t, &[rows(1, 15..16)]);
        let disjoint = written(&t, &[rows(1, 50..60)]);
        let other_partition = written(&t, &[rows(2, 10..20)]);
        assert_eq!(commit(&t, &a).unwrap(), Some(2));
        let e = commit(&t, &b).unwrap_err();
        assert!(matches!(e, Error::CommitConflict { .. }), "{e}");
        assert!(e.to_string().contains("concurrent writer"), "{e}");
        assert_eq!(t.snapshot_manager().latest_id().unwrap(), Some(2));
        // other keys of the bucket, or another bucket, do not conflict
        assert_eq!(commit(&t, &disjoint).unwrap(), Some(3));
        assert_eq!(commit(&t, &other_partition).unwrap(), Some(4));
        // written after the conflicting commit: its sequence numbers follow
        assert_eq!(
            commit(&t, &written(&t, &[rows(1, 15..16)])).unwrap(),
            Some(5)
        );
        // an old message (no restored snapshot recorded) is not checked
        let mut old = b.clone();
        old[0].restored_snapshot = None;
        assert!(commit(&t, &old).is_ok());
    }

    #[test]
    fn append_tables_have_no_sequence_check() {
        let dir = tempfile::tempdir().unwrap();
        let t = table(dir.path(), false);
        let a = written(&t, &[rows(1, 0..10)]);
        let b = written(&t, &[rows(1, 0..10)]);
        commit(&t, &a).unwrap();
        commit(&t, &b).unwrap();
        assert_eq!(live_rows(&t), 20);
    }

    #[test]
    fn commit_identifier_lands_once_per_user() {
        let dir = tempfile::tempdir().unwrap();
        let t = table(dir.path(), false);
        let msgs = written(&t, &[rows(1, 0..10)]);
        let c = FileStoreCommit::new(t.clone(), "job".into());
        assert_eq!(c.commit(&msgs, 7, None).unwrap(), Some(1));
        commit(&t, &written(&t, &[rows(2, 0..10)])).unwrap();
        // another commit object (process) of the same user: already there
        let again = FileStoreCommit::new(t.clone(), "job".into());
        assert_eq!(again.commit(&msgs, 7, None).unwrap(), Some(1));
        assert_eq!(t.snapshot_manager().latest_id().unwrap(), Some(2));
        // out of order
        let e = again
            .commit(&written(&t, &[rows(3, 0..1)]), 5, None)
            .unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { .. }), "{e}");
        // the next identifier commits
        assert_eq!(
            again
                .commit(&written(&t, &[rows(3, 0..1)]), 8, None)
                .unwrap(),
            Some(3)
        );
        // another user is independent
        let other = FileStoreCommit::new(t.clone(), "other".into());
        assert_eq!(
            other
                .commit(&written(&t, &[rows(4, 0..1)]), 7, None)
                .unwrap(),
            Some(4)
        );
    }

    #[test]
    fn dynamic_overwrite_replaces_written_partitions_only() {
        let dir = tempfile::tempdir().unwrap();
        let t = table(dir.path(), false);
        commit(&t, &written(&t, &[rows(1, 0..10), rows(2, 0..10)])).unwrap();
        let c = FileStoreCommit::new(t.clone(), "x".into());
        c.commit_as(
            &written(&t, &[rows(1, 0..3)]),
            BATCH_COMMIT_IDENTIFIER,
            Some(Overwrite::Dynamic),
        )
        .unwrap();
        assert_eq!(live_rows(&t), 13);
        // no data: nothing replaced, no snapshot
        assert_eq!(
            c.commit_as(&[], BATCH_COMMIT_IDENTIFIER, Some(Overwrite::Dynamic))
                .unwrap(),
            None
        );
        // option off: the whole table
        let off = t
            .copy(
                &[(
                    "dynamic-partition-overwrite".to_string(),
                    "false".to_string(),
                )]
                .into(),
            )
            .unwrap();
        FileStoreCommit::new(off.clone(), "y".into())
            .commit_as(
                &written(&off, &[rows(1, 0..4)]),
                BATCH_COMMIT_IDENTIFIER,
                Some(Overwrite::Dynamic),
            )
            .unwrap();
        assert_eq!(live_rows(&t), 4);
    }
}
