//! Catalog, tables and their metadata files (schemas, snapshots).

pub mod alter;
pub mod branches;
pub mod catalog;
pub mod changelog;
pub(crate) mod changelog_expire;
#[cfg(test)]
mod changelog_tests;
mod drop;
pub mod expire;
pub(crate) mod file_deletion;
pub mod inspect;
pub mod live;
pub mod new_schema;
pub mod orphan;
pub mod partition_expire;
pub mod references;
pub mod retention;
pub mod rollback;
pub mod snapshot_manager;
pub mod tags;

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::options::CoreOptions;
use crate::spec::schema::TableSchema;
use crate::spec::types::DataType;

/// An opened table: its directory, latest schema and parsed options.
#[derive(Debug, Clone)]
pub struct FileStoreTable {
    pub name: String,
    pub path: PathBuf,
    pub schema: TableSchema,
    pub options: CoreOptions,
    /// Hash index files of a dynamic-bucket table its writers read or wrote (shared by the
    /// handle's copies; write/dynamic_bucket.rs).
    pub(crate) hash_index_cache: crate::write::hash_index_cache::HashIndexCache,
}

/// Refuse options this engine cannot honour: `CoreOptions::check_supported`, and for a write
/// (`for_write`) also the options of what runs after each commit (snapshot expiry, automatic
/// tags), parsed here by the code that uses them so `options` stays a leaf.
pub fn check_options(opts: &CoreOptions, primary_key: bool, for_write: bool) -> Result<()> {
    opts.check_supported(primary_key, for_write)?;
    if for_write {
        let snapshots = retention::ExpireConfig::from_options(&opts.raw)?;
        retention::ChangelogRetention::from_options(&opts.raw, &snapshots)?;
        tags::AutoTag::from_options(&opts.raw)?;
        tags::time_expire_enabled(&opts.raw)?;
    }
    Ok(())
}

impl FileStoreTable {
    pub fn open(name: &str, path: &Path) -> Result<Self> {
        let path = &crate::io::absolute(path).map_err(|e| e.with_table(name))?;
        let schema = snapshot_manager::latest_schema(path)?
            .ok_or_else(|| Error::TableNotFound(name.to_string()))?;
        let options = CoreOptions::new(&schema.options, !schema.primary_keys.is_empty())
            .map_err(|e| e.with_table(name))?;
        let t = FileStoreTable {
            name: name.to_string(),
            path: path.to_path_buf(),
            schema,
            options,
            hash_index_cache: Default::default(),
        };
        t.options
            .check_supported(t.is_primary_key(), false)
            .map_err(|e| e.with_table(name))?;
        if t.is_primary_key() {
            t.merge_engine()?;
        }
        Ok(t)
    }

    /// The merge engine of this primary-key table (`merge-engine`, its aggregates and sequence
    /// fields), checked against the schema.
    pub fn merge_engine(&self) -> Result<crate::merge::MergeEngine> {
        crate::merge::MergeEngine::new(&self.name, &self.schema, &self.options)
    }

    /// Refuse a write or compaction this engine cannot honour (`check_options` for a write).
    pub fn check_writable(&self) -> Result<()> {
        // BLOB columns (top-level BLOB, `ARRAY<BLOB>`, `MAP<X, BLOB>`) are written to `.blob`
        // files (write/blob_write.rs); a BLOB nested otherwise is not
        if let Some(f) = self.schema.fields.iter().find(|f| {
            f.data_type.contains_blob() && !crate::io::blob_nested::is_blob_file_type(&f.data_type)
        }) {
            return Err(crate::table::new_schema::column_error(
                &f.name,
                Error::unsupported(format!(
                    "{} columns are not written by paimon_rs (BLOB, ARRAY<BLOB> and MAP<X, \
                     BLOB> columns are)",
                    f.data_type.sql_string()
                )),
            )
            .with_table(&self.name));
        }
        // BLOB columns: only as pypaimon writes them (an append table with row
        // tracking and data evolution), whatever the table's history (an ALTER TABLE that added
        // the column, a primary-key BLOB table of Java's, which keeps its BLOBs elsewhere)
        if let Some(f) = self
            .schema
            .fields
            .iter()
            .find(|f| crate::io::blob_nested::is_blob_file_type(&f.data_type))
        {
            let on = |k: &str| {
                self.options
                    .raw
                    .get(k)
                    .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
            };
            let why = if self.is_primary_key() {
                Some("a primary-key table".to_string())
            } else {
                ["row-tracking.enabled", "data-evolution.enabled"]
                    .into_iter()
                    .find(|k| !on(k))
                    .map(|k| format!("a table without {k} = true"))
            };
            if let Some(why) = why {
                return Err(crate::table::new_schema::column_error(
                    &f.name,
                    Error::unsupported(format!(
                        "writing BLOB columns of {why} (paimon_rs writes them into .blob files of \
                         append tables with row-tracking.enabled and data-evolution.enabled)"
                    )),
                )
                .with_table(&self.name));
            }
        }
        check_options(&self.options, self.is_primary_key(), true)?;
        crate::fileindex::check_options(&self.options.raw, &self.schema.fields)
            .map_err(|e| e.with_table(&self.name))?;
        crate::io::format::check_write_format(&self.name, &self.schema.fields, &self.options)
    }

    /// This table with `dynamic` options on top of the stored ones, for this process only
    /// (pypaimon's `table.copy`): e.g. a bigger `write-buffer-size` for one job.
    pub fn copy(&self, dynamic: &std::collections::BTreeMap<String, String>) -> Result<Self> {
        self.copy_inner(dynamic, false)?
            .with_time_travel_schema(dynamic)
    }

    /// [`copy`](Self::copy) keeping this table's schema when `dynamic` travels to a past
    /// snapshot (Java's `copyWithoutTimeTravel`): the snapshot's files read with the columns as
    /// they are now (an update of existing rows reads their current values so, and writes them
    /// under the current schema). A scan start in `dynamic` replaces the table's own (a table
    /// pinned to a tag read at a snapshot id, as pypaimon's updates clear its `SCAN_KEYS`).
    pub fn copy_without_time_travel(
        &self,
        dynamic: &std::collections::BTreeMap<String, String>,
    ) -> Result<Self> {
        self.copy_inner(dynamic, true)
    }

    fn copy_inner(
        &self,
        dynamic: &std::collections::BTreeMap<String, String>,
        replace_start: bool,
    ) -> Result<Self> {
        // the keys a user typed: unknown ones refused with the closest known key, options
        // paimon_rs does not implement refused, a user's own keys kept (options.rs)
        crate::options::check_user_options(&self.name, dynamic)?;
        // Java's `checkImmutability`: a copy cannot move the data files (pypaimon: "Cannot
        // change immutable option")
        let dir_key = "data-file.path-directory";
        if let Some(v) = dynamic.get(dir_key) {
            if self.schema.options.get(dir_key) != Some(v) {
                return Err(Error::invalid(format!(
                    "Change '{dir_key}' is not supported yet (an immutable option: the table's \
                     data files stay where they are)"
                ))
                .with_table(&self.name));
            }
        }
        let mut schema = self.schema.clone();
        // file system options (`s3.endpoint`, ...) configure the table's object store, they
        // are not table options
        let store = crate::io::store::store_options(dynamic);
        if !store.is_empty() {
            crate::io::store::configure(&self.path.to_string_lossy(), &store)
                .map_err(|e| e.with_table(&self.name))?;
        }
        // `branch`: the branch's own latest schema (Java's `switchToBranch`)
        let branch = dynamic.get("branch").map(|b| branches::normalize(Some(b)));
        let mut name = self.name.clone();
        if let Some(b) = branch.filter(|&b| b != self.branch()) {
            schema = snapshot_manager::latest_schema(&branches::branch_path(&self.path, b))?
                .ok_or_else(|| Error::invalid(format!("Branch {b} does not exist")))
                .map_err(|e| e.with_table(&self.name))?;
            name = branches::identifier_with_branch(&self.name, b);
        }
        let starts = |k: &str| k == "scan.mode" || crate::scan_options::STARTING_KEYS.contains(&k);
        if replace_start && dynamic.keys().any(|k| starts(k)) {
            schema.options.retain(|k, _| !starts(k));
        }
        for (k, v) in dynamic {
            if !crate::io::store::is_store_option(k) {
                schema.options.insert(k.clone(), v.clone());
            }
        }
        let options = CoreOptions::new(&schema.options, !schema.primary_keys.is_empty())
            .map_err(|e| e.with_table(&self.name))?;
        let t = FileStoreTable {
            name,
            path: self.path.clone(),
            schema,
            options,
            hash_index_cache: self.hash_index_cache.clone(),
        };
        t.options
            .check_supported(t.is_primary_key(), false)
            .map_err(|e| e.with_table(&t.name))?;
        Ok(t)
    }

    /// A table travelling to a past snapshot (`scan.snapshot-id`, `scan.tag-name`,
    /// `scan.timestamp*`) reads with that snapshot's schema, its options under `dynamic`
    /// (Java's `AbstractFileStoreTable.tryTimeTravel`): the columns as they were then. A
    /// snapshot that cannot be resolved leaves the table as it is; planning reports why.
    fn with_time_travel_schema(
        self,
        dynamic: &std::collections::BTreeMap<String, String>,
    ) -> Result<Self> {
        use crate::scan_options::ScanStart;
        if !matches!(
            self.options.scan,
            ScanStart::Snapshot(_) | ScanStart::Tag(_) | ScanStart::Timestamp(_)
        ) {
            return Ok(self);
        }
        let start = self
            .snapshot_manager()
            .scan_start(&self.name, &self.options.scan, None);
        let Ok((Some(snapshot), _)) = start else {
            return Ok(self);
        };
        if snapshot.schema_id == self.schema.id {
            return Ok(self);
        }
        let mut schema = snapshot_manager::read_schema(&self.meta_path(), snapshot.schema_id)?;
        for (k, v) in dynamic {
            schema.options.insert(k.clone(), v.clone());
        }
        let options = CoreOptions::new(&schema.options, !schema.primary_keys.is_empty())
            .map_err(|e| e.with_table(&self.name))?;
        Ok(FileStoreTable {
            schema,
            options,
            ..self
        })
    }

    /// Run a table operation, naming this table in its error (`Error::with_table`).
    pub(crate) fn named<T>(&self, op: impl FnOnce() -> Result<T>) -> Result<T> {
        op().map_err(|e| e.with_table(&self.name))
    }

    pub fn is_primary_key(&self) -> bool {
        !self.schema.primary_keys.is_empty()
    }

    /// Whether this is an append table without buckets (`bucket = -1`): its deletion vectors
    /// are kept per partition in any number of index files.
    pub(crate) fn is_unaware_append(&self) -> bool {
        !self.is_primary_key() && self.options.bucket == -1
    }

    pub fn partition_keys(&self) -> &[String] {
        &self.schema.partition_keys
    }

    pub fn partition_types(&self) -> Result<Vec<DataType>> {
        self.schema.types_of(&self.schema.partition_keys)
    }

    pub fn trimmed_primary_keys(&self) -> Vec<String> {
        self.schema.trimmed_primary_keys()
    }

    /// Columns the bucket is hashed on: `bucket-key`, else the trimmed primary key.
    pub fn bucket_keys(&self) -> Vec<String> {
        match &self.options.bucket_key {
            Some(k) => k.clone(),
            None => self.trimmed_primary_keys(),
        }
    }

    /// The branch this handle reads and writes (the `branch` option; `main` by default).
    pub fn branch(&self) -> &str {
        branches::normalize(self.options.raw.get("branch").map(String::as_str))
    }

    /// Where the branch's `snapshot/`, `schema/` and `tag/` live: the table directory for
    /// `main`, else `branch/branch-<name>` (data files and manifests are the table's).
    pub fn meta_path(&self) -> PathBuf {
        branches::branch_path(&self.path, self.branch())
    }

    /// The snapshots and tags of the handle's branch.
    pub fn snapshot_manager(&self) -> snapshot_manager::SnapshotManager {
        snapshot_manager::SnapshotManager::new(&self.meta_path())
    }

    pub fn manifest_dir(&self) -> PathBuf {
        self.path.join("manifest")
    }

    /// The live entries of the index manifest `name` (a snapshot's `indexManifest`; none for
    /// None): its ADD entries without those it DELETEs.
    pub fn live_index_entries(
        &self,
        name: Option<&str>,
    ) -> crate::error::Result<Vec<crate::spec::manifest::IndexManifestEntry>> {
        let Some(name) = name else {
            return Ok(vec![]);
        };
        let p = self.manifest_dir().join(name);
        Ok(crate::spec::manifest::live_index_entries(
            crate::spec::manifest::read_index_manifest(&crate::io::read(&p)?, &p)?,
        ))
    }

    /// Where an index file the index manifest lists lives: its external path (a `file:` URI
    /// or a local path) or `<table>/index/<file name>`.
    pub fn index_file_path(&self, file_name: &str, external: Option<&str>) -> PathBuf {
        match external {
            Some(p) => crate::io::external_file(p),
            None => self.path.join("index").join(file_name),
        }
    }

    /// `<table>/[<data-file.path-directory>/]<partition path>bucket-<b>/`; `partition_path`
    /// ends with '/' or is empty. Every data file's directory is derived here (or from
    /// `bucket_path`, the same relative to the table).
    pub fn bucket_dir(&self, partition_path: &str, bucket: i32) -> PathBuf {
        self.path.join(self.bucket_path(partition_path, bucket))
    }

    /// A bucket's directory relative to the table (a split's `bucket_path`):
    /// `[<data-file.path-directory>/]<partition path>bucket-<b>`.
    pub fn bucket_path(&self, partition_path: &str, bucket: i32) -> String {
        format!(
            "{}{partition_path}{}",
            self.data_file_dir_prefix(),
            bucket_dir_name(bucket)
        )
    }

    /// `<data-file.path-directory>/`, or "" when the option is unset.
    pub fn data_file_dir_prefix(&self) -> String {
        match &self.options.data_file_path_directory {
            Some(d) => format!("{d}/"),
            None => String::new(),
        }
    }

    /// The directory partition and bucket directories live under: `<table>/<dir>` or the table.
    pub fn data_root(&self) -> PathBuf {
        match &self.options.data_file_path_directory {
            Some(d) => self.path.join(d),
            None => self.path.clone(),
        }
    }
}

/// A bucket's directory name: `bucket-<n>`, `bucket-postpone` for the postpone bucket (-2).
pub fn bucket_dir_name(bucket: i32) -> String {
    match bucket {
        -2 => "bucket-postpone".into(),
        b => format!("bucket-{b}"),
    }
}
