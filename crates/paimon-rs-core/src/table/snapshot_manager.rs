//! Snapshot and schema files: finding the latest, reading, creating exclusively
//! (paimon-format.md §9.1, §9.2).

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::io;
use crate::spec::schema::TableSchema;
use crate::spec::snapshot::Snapshot;

const SNAPSHOT_PREFIX: &str = "snapshot-";
const SCHEMA_PREFIX: &str = "schema-";

fn max_id(dir: &Path, prefix: &str) -> Result<Option<i64>> {
    Ok(io::list_names(dir)?
        .iter()
        .filter_map(|n| n.strip_prefix(prefix))
        .filter(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
        .filter_map(|s| s.parse::<i64>().ok())
        .max())
}

pub fn schema_path(table: &Path, id: i64) -> PathBuf {
    table.join("schema").join(format!("{SCHEMA_PREFIX}{id}"))
}

pub fn read_schema(table: &Path, id: i64) -> Result<TableSchema> {
    let p = schema_path(table, id);
    let text = io::read_to_string(&p)?;
    let v: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| Error::corrupt(&p, e.to_string()))?;
    TableSchema::from_json(&v).map_err(|e| Error::corrupt(&p, e.to_string()))
}

pub fn latest_schema(table: &Path) -> Result<Option<TableSchema>> {
    match max_id(&table.join("schema"), SCHEMA_PREFIX)? {
        None => Ok(None),
        Some(id) => read_schema(table, id).map(Some),
    }
}

/// Create `schema-<id>` exclusively. Returns false if it already exists.
pub fn create_schema(table: &Path, schema: &TableSchema) -> Result<bool> {
    io::create_exclusive(
        &schema_path(table, schema.id),
        schema.to_json_string().as_bytes(),
    )
}

pub struct SnapshotManager {
    dir: PathBuf,
}

impl SnapshotManager {
    pub fn new(table: &Path) -> Self {
        SnapshotManager {
            dir: table.join("snapshot"),
        }
    }

    pub fn snapshot_path(&self, id: i64) -> PathBuf {
        self.dir.join(format!("{SNAPSHOT_PREFIX}{id}"))
    }

    /// The newest snapshot id: trust `LATEST = n` only if `snapshot-n` exists and
    /// `snapshot-(n+1)` does not; otherwise list the directory.
    pub fn latest_id(&self) -> Result<Option<i64>> {
        if let Ok(text) = std::fs::read_to_string(self.dir.join("LATEST")) {
            if let Ok(n) = text.trim().parse::<i64>() {
                if self.snapshot_path(n).exists() && !self.snapshot_path(n + 1).exists() {
                    return Ok(Some(n));
                }
            }
        }
        max_id(&self.dir, SNAPSHOT_PREFIX)
    }

    pub fn snapshot(&self, id: i64) -> Result<Snapshot> {
        let p = self.snapshot_path(id);
        let text = io::read_to_string(&p)?;
        serde_json::from_str(&text).map_err(|e| Error::corrupt(&p, e.to_string()))
    }

    pub fn latest(&self) -> Result<Option<Snapshot>> {
        match self.latest_id()? {
            None => Ok(None),
            Some(id) => self.snapshot(id).map(Some),
        }
    }

    /// Ids of all snapshot files present, ascending.
    pub fn ids(&self) -> Result<Vec<i64>> {
        let mut ids: Vec<i64> = io::list_names(&self.dir)?
            .iter()
            .filter_map(|n| n.strip_prefix(SNAPSHOT_PREFIX))
            .filter_map(|s| s.parse::<i64>().ok())
            .collect();
        ids.sort_unstable();
        Ok(ids)
    }

    /// Atomically create `snapshot-<id>`; false if another writer took the id.
    pub fn try_commit(&self, snapshot: &Snapshot) -> Result<bool> {
        let bytes = serde_json::to_vec_pretty(snapshot)
            .map_err(|e| Error::Internal(format!("snapshot serialization: {e}")))?;
        let created = io::create_exclusive(&self.snapshot_path(snapshot.id), &bytes)?;
        if created {
            // LATEST is only a hint: a failure to update it is harmless.
            let _ =
                io::overwrite_hint(&self.dir.join("LATEST"), snapshot.id.to_string().as_bytes());
        }
        Ok(created)
    }
}
