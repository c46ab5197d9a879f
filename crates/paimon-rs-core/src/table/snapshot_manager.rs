//! Snapshot and schema files: finding the latest, reading, creating exclusively
//! (paimon-format.md §9.1, §9.2).
//!
//! `LATEST` and `EARLIEST` are hints (Java's `HintFileUtils`): `LATEST = n` is trusted when
//! `snapshot-(n+1)` does not exist, `EARLIEST = e` when `snapshot-e` exists; otherwise the
//! directory is listed. Unlike a plain fallback to the listing, state that can only mean lost
//! snapshots is a [`Error::CorruptFile`], never an empty table (which the next commit would
//! start over from):
//! - `LATEST` names a snapshot that is missing while no newer one exists (Java fails on it too:
//!   it trusts the hint and then cannot read the snapshot);
//! - hints, or manifest files older than [`FIRST_COMMIT_GRACE_MILLIS`], without any snapshot.
//!
//! Snapshots below the earliest one are expired (deleted from the low end, then `EARLIEST` is
//! moved): asking for one is an invalid argument. A snapshot missing between the earliest and
//! the latest is a gap: corruption.
//!
//! A **stale** snapshot is one a commit created on an id that a concurrent expiry had freed and
//! that the commit did not withdraw (it was killed between the create and the withdrawal, or it
//! is a Java writer, which never checks): `snapshot-7` beside 17 and 18, or beside 8 and 9. It is
//! not on the table's chain (its base is gone, the newer ones do not descend from it). The
//! expiry that freed its id moved `EARLIEST` above it, and ids are contiguous from `EARLIEST` to
//! the latest (commits take latest + 1, expiry deletes from the bottom after moving the hint,
//! rollback from the top), so [`stale_among`]: with an `EARLIEST` hint that names an existing
//! snapshot, every id below it; without one, a lone id (neither its predecessor nor its
//! successor exists) below newer snapshots. Stale snapshots are never the latest or the
//! earliest, time travel to them is refused, the listings leave them out, and the next expiry
//! that expires deletes their snapshot files (their other files are left to the orphan clean).

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::io;
use crate::scan_options::ScanStart;
use crate::spec::schema::TableSchema;
use crate::spec::snapshot::{CommitKind, Snapshot};

const SNAPSHOT_PREFIX: &str = "snapshot-";
const SCHEMA_PREFIX: &str = "schema-";
const LATEST: &str = "LATEST";
const EARLIEST: &str = "EARLIEST";

/// Manifest files without any snapshot are corruption once they are this old; younger ones may
/// belong to the table's first commit, in flight in another process (a commit writes its
/// manifests, then its snapshot, within seconds).
pub const FIRST_COMMIT_GRACE_MILLIS: i64 = 10 * 60 * 1000;

/// How long `LATEST` may name a missing snapshot, with older ones present, before that is taken
/// for lost snapshots rather than a rollback in progress (see [`SnapshotManager::latest_id`]).
pub const LOST_LATEST_WAIT_MILLIS: u64 = 2000;

pub(crate) fn ids_in(dir: &Path, prefix: &str) -> Result<Vec<i64>> {
    let mut ids: Vec<i64> = io::list_names(dir)?
        .iter()
        .filter_map(|n| n.strip_prefix(prefix))
        .filter(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
        .filter_map(|s| s.parse::<i64>().ok())
        .collect();
    ids.sort_unstable();
    Ok(ids)
}

/// The stale snapshots among `ids` (a listing, ascending; see the module documentation): those
/// below `earliest` (the `EARLIEST` hint, when the snapshot it names exists; ids below it that
/// an expiry in progress has yet to delete are no longer on the chain either), else lone ids
/// below the newest one. A longer run below a gap (snapshots lost in the middle) is not stale,
/// nor, without the hint, a stale id right below the earliest (`snapshot-7` beside 8 and 9).
pub(crate) fn stale_among(ids: &[i64], earliest: Option<i64>) -> Vec<i64> {
    if let Some(e) = earliest {
        return ids.iter().copied().filter(|&id| id < e).collect();
    }
    let Some(&max) = ids.last() else {
        return vec![];
    };
    let has = |id: i64| ids.binary_search(&id).is_ok();
    ids.iter()
        .copied()
        .filter(|&id| id < max && !has(id - 1) && !has(id + 1))
        .collect()
}

/// A JSON metadata file (snapshot, schema, tag): missing is reported by the caller, which knows
/// what references it; bytes that are not UTF-8 are corruption of the file.
pub(crate) fn read_json_text(p: &Path) -> Result<Option<String>> {
    let bytes = match io::read(p) {
        Ok(b) => b,
        Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            return Ok(None)
        }
        Err(e) => return Err(e),
    };
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|e| Error::corrupt(p, format!("not valid UTF-8 JSON: {e}")))
}

pub fn schema_path(table: &Path, id: i64) -> PathBuf {
    table.join("schema").join(format!("{SCHEMA_PREFIX}{id}"))
}

pub fn read_schema(table: &Path, id: i64) -> Result<TableSchema> {
    let p = schema_path(table, id);
    let text =
        read_json_text(&p)?.ok_or_else(|| Error::io(&p, std::io::ErrorKind::NotFound.into()))?;
    let v: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| Error::corrupt(&p, e.to_string()))?;
    TableSchema::from_json(&v).map_err(|e| Error::corrupt(&p, e.to_string()))
}

pub fn latest_schema(table: &Path) -> Result<Option<TableSchema>> {
    let dir = table.join("schema");
    // on an object store, the newest schema this process saw first: no LIST while it is still
    // the newest
    if let Some(s) = probe_newest(&dir, SCHEMA_PREFIX, |id| read_schema(table, id).map(Some)) {
        return Ok(Some(s));
    }
    match ids_in(&dir, SCHEMA_PREFIX)?.last() {
        None => Ok(None),
        Some(&id) => {
            let s = read_schema(table, id)?;
            saw(&dir, id);
            Ok(Some(s))
        }
    }
}

/// Per process, the newest id of a versioned file (`snapshot-<n>`, `schema-<n>`) seen in a
/// directory on an object store: where to look first next time, never what the file holds.
fn newest_seen() -> &'static std::sync::Mutex<std::collections::HashMap<PathBuf, i64>> {
    static SEEN: std::sync::OnceLock<std::sync::Mutex<std::collections::HashMap<PathBuf, i64>>> =
        std::sync::OnceLock::new();
    SEEN.get_or_init(Default::default)
}

fn saw(dir: &Path, id: i64) {
    if io::is_remote(dir) {
        if let Ok(mut m) = newest_seen().lock() {
            m.insert(dir.to_path_buf(), id);
        }
    }
}

/// On an object store: `<dir>/<prefix><k>` read (`read(k)`), k the newest id this process saw
/// in `dir`, while a HEAD asks for `<prefix><k+1>`. If `k` is there and `k+1` is not, `k` is
/// the newest: ids are created one after the other (latest + 1, exclusively), and removed only
/// from the bottom (expiry) or the top (rollback, fast-forward), as Paimon's own `LATEST` hint
/// is trusted when the next snapshot does not exist. The file is read afresh (a rollback and a
/// new commit rewrite a name). Anything else (no id seen, `k` gone, `k+1` there, an error):
/// None, and the caller takes its full path (a LIST).
fn probe_newest<T: Send>(
    dir: &Path,
    prefix: &str,
    read: impl FnOnce(i64) -> Result<Option<T>> + Send,
) -> Option<T> {
    if !io::is_remote(dir) {
        return None;
    }
    let k = newest_seen().lock().ok()?.get(dir).copied()?;
    let next = dir.join(format!("{prefix}{}", k + 1));
    // a scoped thread, not rayon: this may run outside the process's pool
    let (next_exists, this) = std::thread::scope(|sc| {
        let next = sc.spawn(|| io::exists(&next));
        let this = read(k);
        (next.join().unwrap_or(true), this)
    });
    match (next_exists, this) {
        (false, Ok(Some(x))) => Some(x),
        _ => None,
    }
}

/// Create `schema-<id>` exclusively. Returns false if it already exists.
pub fn create_schema(table: &Path, schema: &TableSchema) -> Result<bool> {
    let created = io::create_exclusive(
        &schema_path(table, schema.id),
        schema.to_json_string().as_bytes(),
    )?;
    if created {
        saw(&table.join("schema"), schema.id);
    }
    Ok(created)
}

pub struct SnapshotManager {
    table: PathBuf,
    dir: PathBuf,
}

impl SnapshotManager {
    pub fn new(table: &Path) -> Self {
        SnapshotManager {
            table: table.to_path_buf(),
            dir: table.join("snapshot"),
        }
    }

    pub fn snapshot_path(&self, id: i64) -> PathBuf {
        self.dir.join(format!("{SNAPSHOT_PREFIX}{id}"))
    }

    fn hint_path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// A hint's snapshot id; None if the file is absent or does not hold a number (Java ignores
    /// an unreadable hint and lists the directory).
    fn read_hint(&self, name: &str) -> Option<i64> {
        io::read_to_string(&self.hint_path(name))
            .ok()
            .and_then(|t| t.trim().parse::<i64>().ok())
    }

    /// The newest snapshot id, None for a table that never committed.
    ///
    /// A commit racing a rollback may write `LATEST` naming its snapshot just before the rollback
    /// deletes it; the hint is then wrong until the rollback sets it again at its end, moments
    /// later. So a hint naming a missing snapshot while older ones exist is only taken for lost
    /// snapshots once it stays so for [`LOST_LATEST_WAIT_MILLIS`].
    pub fn latest_id(&self) -> Result<Option<i64>> {
        let step = 50;
        for _ in 0..LOST_LATEST_WAIT_MILLIS / step {
            match self.latest_id_once() {
                Err(Error::CorruptFile { .. }) if !self.ids()?.is_empty() => {
                    std::thread::sleep(std::time::Duration::from_millis(step))
                }
                r => return r,
            }
        }
        self.latest_id_once()
    }

    fn latest_id_once(&self) -> Result<Option<i64>> {
        if let Some(n) = self.read_hint(LATEST).filter(|&n| n > 0) {
            if !io::exists(&self.snapshot_path(n + 1)) {
                if io::exists(&self.snapshot_path(n)) {
                    // a stale snapshot (see the module documentation) may be named by the hint
                    // (a Java writer writes it after its create): with its predecessor gone
                    // and the earliest above it, the listing decides (its newest id is never
                    // stale). One HEAD more in the common case.
                    if io::exists(&self.snapshot_path(n - 1))
                        || self.usable_earliest_hint().is_some_and(|e| e <= n)
                    {
                        return Ok(Some(n));
                    }
                    return Ok(self.ids()?.last().copied().or(Some(n)));
                }
                // The hint is only ever moved to a snapshot that exists, and the latest
                // snapshot is never expired: the snapshot it names was lost.
                let ids = self.ids()?;
                match ids.last() {
                    Some(&max) if max > n => return Ok(Some(max)),
                    newest => {
                        return Err(Error::corrupt(
                            self.snapshot_path(n),
                            format!(
                                "missing: the {LATEST} hint ({}) names snapshot {n} as the \
                                 latest, and {}; the table's latest state is lost (restore the \
                                 snapshot directory from a backup); refusing to read or write \
                                 it as if it were older or empty",
                                self.hint_path(LATEST).display(),
                                match newest {
                                    Some(m) => format!("the newest snapshot left is {m}"),
                                    None => "no snapshot is left".to_string(),
                                }
                            ),
                        ))
                    }
                }
            }
        }
        let ids = self.ids()?;
        match ids.last() {
            Some(&max) => Ok(Some(max)),
            None => {
                self.check_never_committed()?;
                Ok(None)
            }
        }
    }

    /// No snapshot file exists: make sure the table never had one (no hint, no manifest old
    /// enough not to belong to a first commit in flight).
    fn check_never_committed(&self) -> Result<()> {
        for hint in [LATEST, EARLIEST] {
            let p = self.hint_path(hint);
            if io::exists(&p) {
                return Err(Error::corrupt(
                    &p,
                    format!(
                        "the snapshot hint exists but {} holds no snapshot: the table's \
                         snapshots are lost (restore them from a backup); refusing to read or \
                         write it as an empty table",
                        self.dir.display()
                    ),
                ));
            }
        }
        let manifest_dir = self.table.join("manifest");
        let now = chrono::Utc::now().timestamp_millis();
        for st in io::list_status(&manifest_dir)? {
            if st.name.starts_with('.') {
                continue; // temp file of an atomic write
            }
            let p = st.path;
            let old = st
                .mtime_millis
                .is_some_and(|m| now - m >= FIRST_COMMIT_GRACE_MILLIS);
            if old {
                return Err(Error::corrupt(
                    &p,
                    format!(
                        "manifest file without any snapshot in {}: either the snapshots were \
                         lost (restore them from a backup; do not remove files), or the table's \
                         very first commit crashed after writing its manifests. In that case \
                         (no commit ever succeeded on this table) \
                         table.remove_orphan_files(older_than=...) removes the crashed commit's \
                         manifests and data files (it refuses what looks like a lost history), \
                         then write again. Refusing to read or write the table as empty",
                        self.dir.display()
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The oldest snapshot id still present: `EARLIEST` if its snapshot exists, else the
    /// smallest listed (as Java's `findEarliest`).
    pub fn earliest_id(&self) -> Result<Option<i64>> {
        Ok(self.earliest_id_and_hint()?.0)
    }

    /// [`Self::earliest_id`], and whether the `EARLIEST` hint exists (Java's
    /// `earliestFileNotExists`, negated: a hint that does not hold a number counts as absent).
    /// Without a usable hint, the smallest listed id that is not stale.
    pub fn earliest_id_and_hint(&self) -> Result<(Option<i64>, bool)> {
        let hint = self.read_hint(EARLIEST);
        if let Some(e) = hint {
            if io::exists(&self.snapshot_path(e)) {
                return Ok((Some(e), true));
            }
        }
        let ids = self.ids()?;
        let stale = stale_among(&ids, None);
        let first = ids.into_iter().find(|id| !stale.contains(id));
        Ok((first, hint.is_some()))
    }

    /// The `EARLIEST` hint if the snapshot it names exists.
    fn usable_earliest_hint(&self) -> Option<i64> {
        self.read_hint(EARLIEST)
            .filter(|&e| io::exists(&self.snapshot_path(e)))
    }

    /// The stale ones of `ids` (this table's listing, ascending: whether the snapshot the
    /// `EARLIEST` hint names exists is read off it).
    pub fn stale_among(&self, ids: &[i64]) -> Vec<i64> {
        let earliest = self
            .read_hint(EARLIEST)
            .filter(|e| ids.binary_search(e).is_ok());
        stale_among(ids, earliest)
    }

    /// Ids of the snapshots on the table's chain, ascending: those present, less stale ones.
    pub fn live_ids(&self) -> Result<Vec<i64>> {
        let ids = self.ids()?;
        let stale = self.stale_among(&ids);
        Ok(ids.into_iter().filter(|id| !stale.contains(id)).collect())
    }

    /// Whether snapshot `id` (present) is stale: below a usable `EARLIEST` hint; without one,
    /// never when its predecessor or successor exists, else the listing decides.
    pub fn is_stale(&self, id: i64) -> Result<bool> {
        if let Some(e) = self.usable_earliest_hint() {
            return Ok(id < e);
        }
        if io::exists(&self.snapshot_path(id - 1)) || io::exists(&self.snapshot_path(id + 1)) {
            return Ok(false);
        }
        // no usable hint (read above): the listing alone decides
        Ok(stale_among(&self.ids()?, None).contains(&id))
    }

    /// Snapshot `id`, None if its file does not exist.
    pub fn try_snapshot(&self, id: i64) -> Result<Option<Snapshot>> {
        let p = self.snapshot_path(id);
        match read_json_text(&p)? {
            None => Ok(None),
            Some(text) => serde_json::from_str(&text)
                .map(Some)
                .map_err(|e| Error::corrupt(&p, e.to_string())),
        }
    }

    /// Snapshot `id`, which the caller knows must exist (listed, or named as the latest):
    /// missing is corruption.
    pub fn snapshot(&self, id: i64) -> Result<Snapshot> {
        self.try_snapshot(id)?.ok_or_else(|| {
            Error::corrupt(
                self.snapshot_path(id),
                "missing: the snapshot was listed or named as the latest, then vanished",
            )
        })
    }

    /// Snapshot `id` asked for by a reader (time travel): an id below the earliest snapshot
    /// was expired and one above the latest does not exist yet (invalid arguments); a missing
    /// one in between is a gap in the table's history (corruption).
    ///
    /// A stale snapshot (see the module documentation) is refused: it is not a state the table
    /// ever had.
    pub fn snapshot_for_read(&self, id: i64) -> Result<Snapshot> {
        let s = self.snapshot_in_history(id)?;
        if self.is_stale(id)? {
            return Err(Error::invalid(format!(
                "snapshot {id} is not part of the table's history: it is below the earliest \
                 snapshot, either expiring, or a stale snapshot that a commit left after it lost \
                 a race with snapshot expiry (killed before it could withdraw it), not a state \
                 the table ever had; the next snapshot expiry removes it"
            )));
        }
        Ok(s)
    }

    /// [`Self::snapshot_for_read`] without the stale check, for ids between ones known to be on
    /// the chain (a stale id is lone: a range of more than one id that holds it has a missing
    /// id, which is refused).
    pub fn snapshot_in_history(&self, id: i64) -> Result<Snapshot> {
        if let Some(s) = self.try_snapshot(id)? {
            return Ok(s);
        }
        let (earliest, latest) = (self.earliest_id()?, self.latest_id()?);
        let (Some(earliest), Some(latest)) = (earliest, latest) else {
            return Err(Error::invalid(format!(
                "snapshot {id} does not exist: the table has no snapshot yet"
            )));
        };
        if id < earliest || id > latest {
            let why = if id < earliest {
                "has expired (or never existed)"
            } else {
                "does not exist"
            };
            return Err(Error::invalid(format!(
                "snapshot {id} {why}: the table's snapshots are {earliest}..={latest}"
            )));
        }
        Err(Error::corrupt(
            self.snapshot_path(id),
            format!(
                "missing: snapshots {earliest}..={latest} are retained (expiry only removes \
                 snapshots below the earliest one), so this is a gap in the table's history"
            ),
        ))
    }

    /// `tag/tag-<name>`.
    pub fn tag_path(&self, name: &str) -> PathBuf {
        self.table.join("tag").join(format!("tag-{name}"))
    }

    /// Refuse a tag name that is not one file name (Java refuses blank names).
    pub fn check_tag_name(name: &str) -> Result<()> {
        if name.trim().is_empty() || name.contains(['/', '\\']) || name == "." || name == ".." {
            return Err(Error::invalid(format!("'{name}' is not a valid tag name")));
        }
        Ok(())
    }

    /// Move the `EARLIEST` hint (expiry, rollback to an expired tag).
    pub fn write_earliest_hint(&self, id: i64) -> Result<()> {
        io::overwrite_hint(&self.hint_path(EARLIEST), id.to_string().as_bytes())
    }

    /// Move the `LATEST` hint (rollback).
    pub fn write_latest_hint(&self, id: i64) -> Result<()> {
        io::overwrite_hint(&self.hint_path(LATEST), id.to_string().as_bytes())
    }

    /// The snapshot of tag `name` (`tag/tag-<name>`: a snapshot JSON with extra fields).
    pub fn tag(&self, name: &str) -> Result<Snapshot> {
        Self::check_tag_name(name)?;
        let p = self.tag_path(name);
        match read_json_text(&p)? {
            None => Err(Error::invalid(format!(
                "tag '{name}' doesn't exist (no file {})",
                p.display()
            ))),
            Some(text) => {
                serde_json::from_str(&text).map_err(|e| Error::corrupt(&p, e.to_string()))
            }
        }
    }

    /// Every tag of the table, by name (`tag/tag-<name>`), in name order.
    pub fn tags(&self) -> Result<Vec<(String, Snapshot)>> {
        let dir = self.table.join("tag");
        let mut names: Vec<String> = io::list_names(&dir)?
            .into_iter()
            .filter(|n| !n.ends_with(".tmp"))
            .filter_map(|n| n.strip_prefix("tag-").map(str::to_string))
            .collect();
        names.sort();
        names
            .into_iter()
            .map(|n| self.tag(&n).map(|s| (n, s)))
            .collect()
    }

    /// The newest snapshot committed at or before `millis`; None if there is no snapshot or
    /// the earliest one is newer (Java's `earlierOrEqualTimeMills`: a binary search over
    /// earliest..=latest, whose snapshots are ordered by commit time).
    pub fn earlier_or_equal_time_millis(&self, millis: i64) -> Result<Option<Snapshot>> {
        let (Some(mut lo), Some(mut hi)) = (self.earliest_id()?, self.latest_id()?) else {
            return Ok(None);
        };
        let earliest = self.snapshot_in_history(lo)?;
        if earliest.time_millis > millis {
            return Ok(None);
        }
        let mut found = earliest;
        lo += 1;
        while lo <= hi {
            let mid = lo + (hi - lo) / 2;
            let s = self.snapshot_in_history(mid)?;
            if s.time_millis <= millis {
                lo = mid + 1;
                found = s;
            } else {
                hi = mid - 1;
            }
        }
        Ok(Some(found))
    }

    /// The newest snapshot (latest down to earliest) that `pick` accepts, else the latest
    /// (Java's `pickOrLatest`).
    pub fn pick_or_latest(&self, pick: impl Fn(&Snapshot) -> bool) -> Result<Option<Snapshot>> {
        let (Some(earliest), Some(latest)) = (self.earliest_id()?, self.latest_id()?) else {
            return Ok(None);
        };
        for id in (earliest..=latest).rev() {
            if let Some(s) = self.try_snapshot(id)? {
                if pick(&s) {
                    return Ok(Some(s));
                }
            }
        }
        self.snapshot(latest).map(Some)
    }

    /// The newest snapshot. One that vanishes between finding and reading it was expired (or
    /// rolled back) after a newer one landed: look again.
    pub fn latest(&self) -> Result<Option<Snapshot>> {
        // On an object store, when `LATEST` names n: whether snapshot-(n+1) exists is asked
        // while snapshot-n is read (both are needed when the hint is right, the usual case),
        // two serial requests fewer than `latest_id` (HEAD n+1, HEAD n) and then the GET. Any
        // other outcome takes the full path below, which tells a stale hint from lost snapshots.
        if io::is_remote(&self.dir) {
            // the newest snapshot this process saw, if it still is: no GET of `LATEST` either
            if let Some(s) = probe_newest(&self.dir, SNAPSHOT_PREFIX, |id| self.try_snapshot(id)) {
                return Ok(Some(s));
            }
            if let Some(n) = self.read_hint(LATEST).filter(|&n| n > 0) {
                // a scoped thread, not rayon: this may run outside the process's pool
                // and whether snapshot-(n-1) exists: a stale snapshot named by the hint has
                // none (see the module documentation)
                let (next, prev, this) = std::thread::scope(|sc| {
                    let next = sc.spawn(|| io::exists(&self.snapshot_path(n + 1)));
                    let prev = sc.spawn(|| io::exists(&self.snapshot_path(n - 1)));
                    let this = self.try_snapshot(n);
                    (
                        next.join().unwrap_or(true),
                        prev.join().unwrap_or(false),
                        this,
                    )
                });
                if let (false, true, Ok(Some(s))) = (next, prev, this) {
                    saw(&self.dir, s.id);
                    return Ok(Some(s));
                }
            }
        }
        for _ in 0..16 {
            match self.latest_id()? {
                None => return Ok(None),
                Some(id) => {
                    if let Some(s) = self.try_snapshot(id)? {
                        saw(&self.dir, s.id);
                        return Ok(Some(s));
                    }
                }
            }
        }
        match self.latest_id()? {
            None => Ok(None),
            Some(id) => {
                let s = self.snapshot(id)?;
                saw(&self.dir, s.id);
                Ok(Some(s))
            }
        }
    }

    /// Ids of all snapshot files present, ascending.
    pub fn ids(&self) -> Result<Vec<i64>> {
        ids_in(&self.dir, SNAPSHOT_PREFIX)
    }

    /// Atomically create `snapshot-<id>`; false if another writer took the id.
    #[cfg(test)]
    pub fn try_commit(&self, snapshot: &Snapshot) -> Result<bool> {
        let created = self.try_create(snapshot)?;
        if created {
            self.write_latest_hint_best_effort(snapshot.id);
        }
        Ok(created)
    }

    /// Atomically create `snapshot-<id>` without moving `LATEST`; false if the id is taken.
    pub fn try_create(&self, snapshot: &Snapshot) -> Result<bool> {
        let bytes = serde_json::to_vec_pretty(snapshot)
            .map_err(|e| Error::Internal(format!("snapshot serialization: {e}")))?;
        // not remembered as the newest seen (`saw`) until the commit keeps it (its hint is
        // written): a withdrawn one must not be probed as the latest
        io::create_exclusive(&self.snapshot_path(snapshot.id), &bytes)
    }

    /// LATEST is only a hint: a failure to update it is harmless. But it must never be left
    /// naming a snapshot that is gone with none newer ([`Self::latest_id`] takes that for lost
    /// snapshots), and a rollback may delete the commit's snapshot between its creation and this
    /// write, then set `LATEST` before this write lands: so once written, the snapshot named is
    /// checked, and while it is gone the hint is moved to the newest snapshot listed. A check
    /// that finds it present comes after the write, so a rollback deleting it later also sets
    /// `LATEST` later.
    pub fn write_latest_hint_best_effort(&self, id: i64) {
        saw(&self.dir, id);
        let mut id = id;
        for _ in 0..100 {
            if io::overwrite_hint_unsynced(&self.hint_path(LATEST), id.to_string().as_bytes())
                .is_err()
                || io::exists(&self.snapshot_path(id))
            {
                return;
            }
            match self.ids().ok().and_then(|ids| ids.last().copied()) {
                Some(newest) => id = newest,
                None => return,
            }
        }
    }

    /// The snapshot a scan of table `name` reads: `explicit` (a scan's `with_snapshot`), else
    /// the one its scan options' `start` names; and, for `scan.file-creation-time-millis`, the
    /// creation time files must have.
    pub(crate) fn scan_start(
        &self,
        name: &str,
        start: &ScanStart,
        explicit: Option<i64>,
    ) -> Result<(Option<Snapshot>, Option<i64>)> {
        let sm = self;
        if let Some(id) = explicit {
            return Ok((Some(sm.snapshot_for_read(id)?), None));
        }
        Ok(match start {
            ScanStart::Latest => (sm.latest()?, None),
            ScanStart::Snapshot(id) => (
                Some(sm.snapshot_for_read(*id).map_err(|e| e.with_table(name))?),
                None,
            ),
            ScanStart::Tag(tag) => (Some(sm.tag(tag).map_err(|e| e.with_table(name))?), None),
            ScanStart::Timestamp(ms) => match sm.earlier_or_equal_time_millis(*ms)? {
                Some(s) => (Some(s), None),
                None => {
                    let earliest = match sm.earliest_id()? {
                        Some(id) => sm.snapshot_for_read(id)?.time_millis.to_string(),
                        None => "null".to_string(),
                    };
                    return Err(Error::invalid(format!(
                        "there is currently no snapshot earlier than or equal to timestamp [{ms}], the earliest snapshot's timestamp is [{earliest}]"
                    ))
                    .with_table(name));
                }
            },
            ScanStart::FileCreationTime(ms) => (sm.latest()?, Some(*ms)),
            ScanStart::CompactedFull {
                full_compaction_delta_commits,
            } => (
                sm.pick_or_latest(|s| {
                    s.commit_kind == CommitKind::Compact
                        && full_compaction_delta_commits.is_none_or(|d| {
                            s.commit_identifier % d == 0 || s.commit_identifier == i64::MAX
                        })
                })?,
                None,
            ),
            ScanStart::Unsupported(what) => {
                return Err(Error::unsupported(what.clone()).with_table(name))
            }
            ScanStart::Incremental(..) => {
                return Err(Error::Internal("incremental scans plan elsewhere".into()))
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn snap(id: i64, time_millis: i64) -> Snapshot {
        Snapshot {
            version: 3,
            id,
            schema_id: 0,
            base_manifest_list: "b".into(),
            base_manifest_list_size: None,
            delta_manifest_list: "d".into(),
            delta_manifest_list_size: None,
            changelog_manifest_list: None,
            changelog_manifest_list_size: None,
            index_manifest: None,
            commit_user: "u".into(),
            commit_identifier: id,
            commit_kind: crate::spec::snapshot::CommitKind::Append,
            time_millis,
            total_record_count: 0,
            delta_record_count: 0,
            changelog_record_count: None,
            watermark: None,
            statistics: None,
            properties: None,
            next_row_id: None,
            uuid: None,
            writer_version: None,
        }
    }

    /// A table directory with snapshots 1..=n committed at 100, 200, ...
    fn table(n: i64) -> (tempfile::TempDir, SnapshotManager) {
        let dir = tempfile::tempdir().unwrap();
        let sm = SnapshotManager::new(dir.path());
        for id in 1..=n {
            assert!(sm.try_commit(&snap(id, id * 100)).unwrap());
        }
        (dir, sm)
    }

    fn corrupt_path(e: Error) -> String {
        match e {
            Error::CorruptFile { path, message } => format!("{} {message}", path.display()),
            other => panic!("expected CorruptFile, got {other}"),
        }
    }

    #[test]
    fn latest_hint_naming_a_lost_snapshot_is_corruption() {
        let (_d, sm) = table(3);
        assert_eq!(sm.latest_id().unwrap(), Some(3));
        std::fs::remove_file(sm.snapshot_path(3)).unwrap();
        let e = corrupt_path(sm.latest_id().unwrap_err());
        assert!(
            e.contains("snapshot-3") && e.contains("newest snapshot left is 2"),
            "{e}"
        );
        // every snapshot gone, LATEST left behind
        for id in 1..=2 {
            std::fs::remove_file(sm.snapshot_path(id)).unwrap();
        }
        let e = corrupt_path(sm.latest_id().unwrap_err());
        assert!(e.contains("no snapshot is left"), "{e}");
    }

    #[test]
    fn a_commit_rolled_back_before_its_hint_is_written_leaves_no_lost_latest() {
        let (_d, sm) = table(3);
        // a rollback to 1 deleted 3 and 2 and set LATEST, then the writer of 3 writes its hint
        for id in [3, 2] {
            std::fs::remove_file(sm.snapshot_path(id)).unwrap();
        }
        sm.write_latest_hint(1).unwrap();
        sm.write_latest_hint_best_effort(3);
        assert_eq!(sm.read_hint(LATEST), Some(1));
        assert_eq!(sm.latest_id().unwrap(), Some(1));
    }

    #[test]
    fn a_rollback_in_progress_is_not_taken_for_lost_snapshots() {
        let (d, sm) = table(3);
        // a commit wrote LATEST = 3, then the rollback to 1 deleted 3 and 2 and has yet to set
        // LATEST again
        for id in [3, 2] {
            std::fs::remove_file(sm.snapshot_path(id)).unwrap();
        }
        let rollback = {
            let sm = SnapshotManager::new(d.path());
            std::thread::spawn(move || {
                std::thread::sleep(std::time::Duration::from_millis(100));
                sm.write_latest_hint(1).unwrap();
            })
        };
        assert_eq!(sm.latest_id().unwrap(), Some(1));
        rollback.join().unwrap();
    }

    #[test]
    fn stale_or_unreadable_hints_fall_back_to_the_listing() {
        let (_d, sm) = table(3);
        std::fs::write(sm.hint_path(LATEST), "1").unwrap();
        assert_eq!(sm.latest_id().unwrap(), Some(3));
        std::fs::write(sm.hint_path(LATEST), "x").unwrap();
        assert_eq!(sm.latest_id().unwrap(), Some(3));
        // LATEST names an expired snapshot, newer ones exist
        std::fs::write(sm.hint_path(LATEST), "1").unwrap();
        std::fs::remove_file(sm.snapshot_path(1)).unwrap();
        assert_eq!(sm.latest_id().unwrap(), Some(3));
    }

    #[test]
    fn hints_or_old_manifests_without_snapshots_are_corruption() {
        let (d, sm) = table(0);
        assert_eq!(sm.latest_id().unwrap(), None);
        std::fs::create_dir_all(d.path().join("snapshot")).unwrap();
        std::fs::write(sm.hint_path(EARLIEST), "4").unwrap();
        assert!(corrupt_path(sm.latest_id().unwrap_err()).contains("EARLIEST"));
        std::fs::remove_file(sm.hint_path(EARLIEST)).unwrap();

        let m = d.path().join("manifest").join("manifest-list-x-0");
        io::write_new(&m, b"x").unwrap();
        // young: maybe a first commit in flight
        assert_eq!(sm.latest_id().unwrap(), None);
        let old = std::time::SystemTime::now()
            - std::time::Duration::from_millis(FIRST_COMMIT_GRACE_MILLIS as u64 + 1000);
        std::fs::File::options()
            .write(true)
            .open(&m)
            .unwrap()
            .set_modified(old)
            .unwrap();
        let e = corrupt_path(sm.latest_id().unwrap_err());
        assert!(
            e.contains("manifest-list-x-0") && e.contains("remove_orphan_files"),
            "{e}"
        );
    }

    #[test]
    fn time_travel_classifies_missing_snapshots() {
        let (_d, sm) = table(4);
        assert_eq!(sm.snapshot_for_read(2).unwrap().id, 2);
        let e = sm.snapshot_for_read(5).unwrap_err().to_string();
        assert!(
            e.contains("snapshot 5 does not exist") && e.contains("1..=4"),
            "{e}"
        );
        // expiry: from the low end, then EARLIEST
        std::fs::remove_file(sm.snapshot_path(1)).unwrap();
        std::fs::write(sm.hint_path(EARLIEST), "2").unwrap();
        let e = sm.snapshot_for_read(1).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { .. }), "{e}");
        assert!(e.to_string().contains("expired"), "{e}");
        // a gap above the earliest
        std::fs::remove_file(sm.snapshot_path(3)).unwrap();
        assert!(corrupt_path(sm.snapshot_for_read(3).unwrap_err()).contains("gap"));
    }

    #[test]
    fn timestamps_pick_the_newest_snapshot_at_or_before() {
        let (_d, sm) = table(5);
        let at = |ms| sm.earlier_or_equal_time_millis(ms).unwrap().map(|s| s.id);
        assert_eq!(at(99), None);
        assert_eq!(at(100), Some(1));
        assert_eq!(at(350), Some(3));
        assert_eq!(at(400), Some(4));
        assert_eq!(at(10_000), Some(5));
    }

    #[test]
    fn invalid_utf8_is_corruption_naming_the_file() {
        let (d, sm) = table(1);
        std::fs::write(sm.snapshot_path(1), b"{\"id\": \xff}").unwrap();
        assert!(corrupt_path(sm.latest().unwrap_err()).contains("snapshot-1"));
        std::fs::create_dir_all(d.path().join("schema")).unwrap();
        std::fs::write(schema_path(d.path(), 0), b"\xfe{}").unwrap();
        assert!(corrupt_path(latest_schema(d.path()).unwrap_err()).contains("schema-0"));
    }
}

#[cfg(test)]
mod probe_tests {
    use super::tests::snap;
    use super::*;
    use crate::io::store::gets_on_this_thread;

    fn schema(id: i64, comment: &str) -> TableSchema {
        let arrow = arrow_schema::Schema::new(vec![arrow_schema::Field::new(
            "k",
            arrow_schema::DataType::Int64,
            false,
        )]);
        let mut s = crate::table::new_schema::NewTableSchema::from_arrow(
            &arrow,
            vec![],
            vec![],
            Default::default(),
            Some(comment.to_string()),
        )
        .unwrap()
        .into_table_schema()
        .unwrap();
        s.id = id;
        s
    }

    /// On an object store the newest schema this process saw is read first, while a HEAD asks
    /// for the next one: no LIST of `schema/` while it is still the newest (before: a LIST on
    /// every `get_table`). A schema added by another process, one removed from the top, and a
    /// name rewritten are all seen.
    #[test]
    fn the_newest_schema_seen_is_probed_before_listing() {
        let t = Path::new("memory://probe-schema/wh/db.db/t");
        assert!(create_schema(t, &schema(0, "a")).unwrap());
        crate::io::take_listed_on_this_thread();
        assert_eq!(
            latest_schema(t).unwrap().unwrap().comment.as_deref(),
            Some("a")
        );
        assert!(
            crate::io::take_listed_on_this_thread().is_empty(),
            "no LIST"
        );
        // another process's ALTER (not through this process's create_schema)
        let s1 = schema(1, "b");
        io::create_exclusive(&schema_path(t, 1), s1.to_json_string().as_bytes()).unwrap();
        assert_eq!(latest_schema(t).unwrap().unwrap().id, 1);
        assert_eq!(
            crate::io::take_listed_on_this_thread().len(),
            1,
            "listed once"
        );
        assert_eq!(latest_schema(t).unwrap().unwrap().id, 1);
        assert!(crate::io::take_listed_on_this_thread().is_empty());
        // removed from the top (a fast-forward), then the name rewritten
        io::remove_file_if_exists(&schema_path(t, 1)).unwrap();
        assert_eq!(latest_schema(t).unwrap().unwrap().id, 0);
        let again = schema(1, "c");
        io::create_exclusive(&schema_path(t, 1), again.to_json_string().as_bytes()).unwrap();
        assert_eq!(
            latest_schema(t).unwrap().unwrap().comment.as_deref(),
            Some("c")
        );
        // a dropped table
        io::remove_dir_all(t).unwrap();
        assert!(latest_schema(t).unwrap().is_none());
    }

    /// On an object store the newest snapshot this process saw (read or committed) is read
    /// while a HEAD asks for the next one: one GET, no GET of `LATEST` (before: two GETs).
    /// A newer snapshot committed elsewhere, and a rollback that rewrote the name, are seen.
    #[test]
    fn the_newest_snapshot_seen_is_probed_before_the_hint() {
        let sm = SnapshotManager::new(Path::new("memory://probe-snap/wh/db.db/t"));
        assert!(sm.try_commit(&snap(1, 100)).unwrap());
        let gets = gets_on_this_thread();
        assert_eq!(sm.latest().unwrap().unwrap().id, 1);
        assert_eq!(gets_on_this_thread() - gets, 1, "the snapshot only");
        // committed by another process: written directly, `LATEST` moved
        let bytes = serde_json::to_vec(&snap(2, 200)).unwrap();
        io::create_exclusive(&sm.snapshot_path(2), &bytes).unwrap();
        sm.write_latest_hint(2).unwrap();
        assert_eq!(sm.latest().unwrap().unwrap().id, 2);
        let gets = gets_on_this_thread();
        assert_eq!(sm.latest().unwrap().unwrap().id, 2);
        assert_eq!(gets_on_this_thread() - gets, 1);
        // rolled back to 1, then snapshot 2 committed again with other content
        io::remove_file_if_exists(&sm.snapshot_path(2)).unwrap();
        sm.write_latest_hint(1).unwrap();
        assert_eq!(sm.latest().unwrap().unwrap().id, 1);
        let bytes = serde_json::to_vec(&snap(2, 999)).unwrap();
        io::create_exclusive(&sm.snapshot_path(2), &bytes).unwrap();
        assert_eq!(sm.latest().unwrap().unwrap().time_millis, 999);
    }
}
