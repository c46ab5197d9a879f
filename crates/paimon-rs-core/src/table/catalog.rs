//! The filesystem catalog: `<warehouse>/<db>.db/<table>/` (paimon-format.md §1).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use arrow_schema::Schema as ArrowSchema;

use super::{snapshot_manager, FileStoreTable};
use crate::error::{Error, Result};
use crate::io;
use crate::options::CoreOptions;
use crate::spec::schema::{TableSchema, CURRENT_SCHEMA_VERSION};
use crate::spec::types::{highest_field_id, reassign_nested_ids, DataField, DataType};

const DB_SUFFIX: &str = ".db";
/// The empty object that makes a database exist on an object store (no directories there).
const DB_MARKER: &str = ".paimon-database";

/// What a user declares for a new table (pypaimon's `Schema`).
#[derive(Debug, Clone)]
pub struct NewTableSchema {
    pub fields: Vec<(String, DataType)>,
    pub partition_keys: Vec<String>,
    pub primary_keys: Vec<String>,
    pub options: BTreeMap<String, String>,
    pub comment: Option<String>,
}

impl NewTableSchema {
    pub fn from_arrow(
        schema: &ArrowSchema,
        partition_keys: Vec<String>,
        primary_keys: Vec<String>,
        options: BTreeMap<String, String>,
        comment: Option<String>,
    ) -> Result<Self> {
        let fields = schema
            .fields()
            .iter()
            .map(|f| {
                let t = DataType::from_arrow(f.data_type(), f.is_nullable())
                    .map_err(|e| Error::schema(format!("column '{}': {e}", f.name())))?;
                Ok((f.name().clone(), t))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(NewTableSchema {
            fields,
            partition_keys,
            primary_keys,
            options,
            comment,
        })
    }

    /// Validate and assign field ids, as Paimon does on create.
    pub fn into_table_schema(self) -> Result<TableSchema> {
        self.build(true)
    }

    /// [`Self::into_table_schema`]; `for_write`: also refuse options paimon_rs cannot write
    /// (an altered schema of a table only read is checked as for a read).
    pub(crate) fn build(self, for_write: bool) -> Result<TableSchema> {
        let mut seen = std::collections::HashSet::new();
        for (n, _) in &self.fields {
            if n.is_empty() {
                return Err(Error::schema("empty column name"));
            }
            if !seen.insert(n.as_str()) {
                return Err(Error::schema(format!("duplicate column '{n}'")));
            }
            if n.starts_with("_KEY_") || n == "_SEQUENCE_NUMBER" || n == "_VALUE_KIND" {
                return Err(Error::schema(format!(
                    "column name '{n}' is reserved by Paimon"
                )));
            }
        }
        for (what, keys) in [
            ("partition key", &self.partition_keys),
            ("primary key", &self.primary_keys),
        ] {
            let mut ks = std::collections::HashSet::new();
            for k in keys.iter() {
                if !seen.contains(k.as_str()) {
                    return Err(Error::schema(format!("{what} '{k}' is not a column")));
                }
                if !ks.insert(k) {
                    return Err(Error::schema(format!("{what} '{k}' listed twice")));
                }
            }
        }
        let pk = !self.primary_keys.is_empty();
        if pk {
            for p in &self.partition_keys {
                if !self.primary_keys.contains(p) {
                    return Err(Error::schema(format!(
                        "primary key {:?} must include all partition keys; '{p}' is missing",
                        self.primary_keys
                    )));
                }
            }
            if self.partition_keys.len() == self.primary_keys.len() {
                return Err(Error::schema(format!(
                    "Primary key constraint {} should not be same with partition fields {}, this \
                     will result in only one record in a partition",
                    java_list(&self.primary_keys),
                    java_list(&self.partition_keys)
                )));
            }
        }
        let opts = CoreOptions::new(&self.options, pk)?;
        if let Some(rk) = self.options.get("rowkind.field") {
            if !seen.contains(rk.as_str()) {
                return Err(Error::schema(format!(
                    "option 'rowkind.field': Rowkind field: '{rk}' can not be found in table \
                     schema."
                )));
            }
        }
        // Ids as Java's Schema.Builder assigns them: each column, then its nested fields depth
        // first, from one counter.
        let mut fields = Vec::with_capacity(self.fields.len());
        let mut next = 0i32;
        for (name, mut t) in self.fields.into_iter() {
            let is_key = self.primary_keys.contains(&name) || self.partition_keys.contains(&name);
            if is_key && t.is_nested() {
                let what = if self.primary_keys.contains(&name) {
                    "primary key"
                } else {
                    "partition"
                };
                return Err(Error::schema(format!(
                    "column '{name}' of type {}: The type {} in {what} field {name} is \
                     unsupported",
                    t.sql_string(),
                    java_type_class(&t)
                )));
            }
            if self.primary_keys.contains(&name) {
                t.nullable = false; // Paimon forces primary-key columns NOT NULL
            }
            let id = next;
            next += 1;
            reassign_nested_ids(&mut t, &mut next);
            fields.push(DataField::new(id, name, t));
        }
        if let Some(bk) = &opts.bucket_key {
            // Java's TableSchema and SchemaValidation.validateBucket, in their order
            let names: Vec<String> = fields.iter().map(|f| f.name.clone()).collect();
            let (bks, missing) = (java_list(bk), |ks: &[String]| {
                bk.iter().any(|k| !ks.contains(k))
            });
            if missing(&names) {
                return Err(Error::schema(format!(
                    "option 'bucket-key': Field names {} should contains all bucket keys {bks}.",
                    java_list(&names)
                )));
            }
            if bk.iter().any(|k| self.partition_keys.contains(k)) {
                return Err(Error::schema(format!(
                    "option 'bucket-key': Bucket keys {bks} should not in partition keys {}.",
                    java_list(&self.partition_keys)
                )));
            }
            if pk && missing(&self.primary_keys) {
                return Err(Error::schema(format!(
                    "option 'bucket-key': Primary keys {} should contains all bucket keys {bks}.",
                    java_list(&self.primary_keys)
                )));
            }
            if opts.bucket == -1 {
                return Err(Error::invalid(
                    "option 'bucket-key': Cannot define 'bucket-key' with bucket = -1, please \
                     remove the 'bucket-key' setting or specify a bucket number.",
                ));
            }
            let nested: Vec<String> = fields
                .iter()
                .filter(|f| bk.contains(&f.name) && f.data_type.is_nested())
                .map(|f| f.name.clone())
                .collect();
            if !nested.is_empty() {
                return Err(Error::schema(format!(
                    "option 'bucket-key': nested type can not in bucket-key, in your table these \
                     key are {}",
                    java_list(&nested)
                )));
            }
        }
        let highest = highest_field_id(&fields);
        let schema = TableSchema {
            version: CURRENT_SCHEMA_VERSION,
            id: 0,
            fields,
            highest_field_id: highest,
            partition_keys: self.partition_keys,
            primary_keys: self.primary_keys,
            options: self.options,
            comment: self.comment,
            time_millis: chrono::Utc::now().timestamp_millis(),
        };
        if pk {
            // merge-engine options (fields.*, sequence.field, ...) checked against the columns
            crate::merge::MergeEngine::from_table(&crate::table::FileStoreTable {
                name: String::new(),
                path: PathBuf::new(),
                schema: schema.clone(),
                options: opts.clone(),
            })?;
        }
        // after the definition's own checks, so a definition Java refuses gets Java's sentence
        // even where paimon_rs could not write the table anyway
        super::check_options(&opts, pk, for_write)?;
        Ok(schema)
    }
}

/// A list as Java's `List.toString` prints it (`[a, b]`), for messages in Java's words.
fn java_list(items: &[String]) -> String {
    format!("[{}]", items.join(", "))
}

/// The simple class name of a nested type in Java (`ArrayType`), as Java's messages print it.
fn java_type_class(t: &crate::spec::types::DataType) -> &'static str {
    use crate::spec::types::TypeKind;
    match t.kind {
        TypeKind::Array(_) => "ArrayType",
        TypeKind::Multiset(_) => "MultisetType",
        TypeKind::Map(..) => "MapType",
        _ => "RowType",
    }
}

#[derive(Debug, Clone)]
pub struct FileSystemCatalog {
    warehouse: PathBuf,
}

/// Split `db.table` into its parts.
pub fn parse_identifier(identifier: &str) -> Result<(String, String)> {
    match identifier.split_once('.') {
        Some((db, t)) if !db.is_empty() && !t.is_empty() && !t.contains('.') => {
            Ok((db.to_string(), t.to_string()))
        }
        _ => Err(Error::invalid(format!(
            "table identifier '{identifier}' must look like 'database.table'"
        ))),
    }
}

impl FileSystemCatalog {
    pub fn new(warehouse: impl Into<PathBuf>) -> Result<Self> {
        Self::with_options(warehouse, &BTreeMap::new())
    }

    /// A catalog over `warehouse`: a local path, `file://...`, or an object store URI
    /// (`s3://bucket/path`, `oss://`, `gs://`, `az://`, `abfss://`) whose store is configured
    /// from the file system options among `options` (README, "Object stores").
    pub fn with_options(
        warehouse: impl Into<PathBuf>,
        options: &BTreeMap<String, String>,
    ) -> Result<Self> {
        let warehouse: PathBuf = warehouse.into();
        let s = warehouse.to_string_lossy().into_owned();
        let warehouse = if io::store::parse_uri(&s).is_some() {
            let trimmed = s.trim_end_matches('/');
            io::store::configure(trimmed, options)?;
            PathBuf::from(trimmed)
        } else {
            io::store::configure(&s, options)?;
            PathBuf::from(io::store::local_path(&s))
        };
        io::mkdirs(&warehouse)?;
        Ok(FileSystemCatalog { warehouse })
    }

    pub fn warehouse(&self) -> &Path {
        &self.warehouse
    }

    fn db_path(&self, db: &str) -> PathBuf {
        self.warehouse.join(format!("{db}{DB_SUFFIX}"))
    }

    pub fn table_path(&self, identifier: &str) -> Result<PathBuf> {
        let (db, t) = parse_identifier(identifier)?;
        let (t, _) = super::branches::split_object_name(&t)?;
        Ok(self.db_path(&db).join(t))
    }

    /// The branch `db.t$branch_b` names, None for `db.t`.
    fn branch_of(identifier: &str) -> Result<Option<String>> {
        let (_, t) = parse_identifier(identifier)?;
        Ok(super::branches::split_object_name(&t)?
            .1
            .map(str::to_string))
    }

    /// Refuse `db.t$branch_b` where only a table can be meant (create, drop).
    fn no_branch(identifier: &str, what: &str) -> Result<()> {
        match Self::branch_of(identifier)? {
            Some(_) => Err(Error::invalid(format!(
                "cannot {what} '{identifier}': it names a branch (use create_branch / \
                 drop_branch)"
            ))),
            None => Ok(()),
        }
    }

    pub fn create_database(&self, name: &str, ignore_if_exists: bool) -> Result<()> {
        if name.is_empty() || name.contains('/') || name.contains('.') {
            return Err(Error::invalid(format!("bad database name '{name}'")));
        }
        let p = self.db_path(name);
        if io::is_dir(&p) {
            return if ignore_if_exists {
                Ok(())
            } else {
                Err(Error::DatabaseAlreadyExists(name.to_string()))
            };
        }
        if io::is_remote(&p) {
            // an object store has no directories: a marker object makes the database exist
            return io::write_new(&p.join(DB_MARKER), b"");
        }
        io::mkdirs(&p)
    }

    pub fn list_databases(&self) -> Result<Vec<String>> {
        let mut v: Vec<String> = io::list_names(&self.warehouse)?
            .into_iter()
            .filter_map(|n| n.strip_suffix(DB_SUFFIX).map(str::to_string))
            .collect();
        v.sort();
        Ok(v)
    }

    pub fn list_tables(&self, db: &str) -> Result<Vec<String>> {
        let p = self.db_path(db);
        if !io::is_dir(&p) {
            return Err(Error::DatabaseNotFound(db.to_string()));
        }
        let mut v: Vec<String> = io::list_names(&p)?
            .into_iter()
            .filter(|n| io::is_dir(&p.join(n).join("schema")))
            .collect();
        v.sort();
        Ok(v)
    }

    pub fn create_table(
        &self,
        identifier: &str,
        schema: NewTableSchema,
        ignore_if_exists: bool,
    ) -> Result<()> {
        let (db, _) = parse_identifier(identifier)?;
        Self::no_branch(identifier, "create table")?;
        if !io::is_dir(&self.db_path(&db)) {
            return Err(Error::DatabaseNotFound(db));
        }
        let path = self.table_path(identifier)?;
        if snapshot_manager::latest_schema(&path)?.is_some() {
            return if ignore_if_exists {
                Ok(())
            } else {
                Err(Error::TableAlreadyExists(identifier.to_string()))
            };
        }
        let ts = schema
            .into_table_schema()
            .map_err(|e| e.with_table(identifier))?;
        if !snapshot_manager::create_schema(&path, &ts)? && !ignore_if_exists {
            return Err(Error::TableAlreadyExists(identifier.to_string()));
        }
        Ok(())
    }

    pub fn get_table(&self, identifier: &str) -> Result<FileStoreTable> {
        let path = self.table_path(identifier)?;
        // no existence check of `schema/` first: `open` lists it to find the latest schema and
        // reports a missing table itself (one LIST fewer per `get_table` on an object store)
        match Self::branch_of(identifier)? {
            None => FileStoreTable::open(identifier, &path),
            Some(b) => {
                let (db, t) = parse_identifier(identifier)?;
                let main = format!("{db}.{}", super::branches::split_object_name(&t)?.0);
                let branch = super::branches::normalize(Some(&b)).to_string();
                if !io::is_dir(&super::branches::branch_path(&path, &branch)) {
                    return Err(Error::TableNotFound(identifier.to_string()));
                }
                FileStoreTable::open(&main, &path)?
                    .copy(&BTreeMap::from([("branch".to_string(), branch)]))
            }
        }
    }

    /// `ALTER TABLE`: apply `changes` and commit the new schema (see [`super::alter`]).
    /// Returns the new schema, None for a missing table with `ignore_if_not_exists`.
    pub fn alter_table(
        &self,
        identifier: &str,
        changes: &[super::alter::SchemaChange],
        ignore_if_not_exists: bool,
    ) -> Result<Option<TableSchema>> {
        let mut path = self.table_path(identifier)?;
        if let Some(b) = Self::branch_of(identifier)? {
            // a branch's schema is its own (`branch/branch-<b>/schema/`)
            path = super::branches::branch_path(&path, super::branches::normalize(Some(&b)));
        }
        if snapshot_manager::latest_schema(&path)?.is_none() {
            return if ignore_if_not_exists {
                Ok(None)
            } else {
                Err(Error::TableNotFound(identifier.to_string()))
            };
        }
        super::alter::commit_changes(&path, identifier, changes).map(Some)
    }

    pub fn drop_table(&self, identifier: &str, ignore_if_not_exists: bool) -> Result<()> {
        Self::no_branch(identifier, "drop table")?;
        let path = self.table_path(identifier)?;
        if !io::is_dir(&path.join("schema")) {
            return if ignore_if_not_exists {
                Ok(())
            } else {
                Err(Error::TableNotFound(identifier.to_string()))
            };
        }
        io::remove_dir_all(&path)
    }

    /// Delete the database `name` and everything under it (its directory; on an object store,
    /// every object under its prefix). The caller checks emptiness (`cascade`), as Java's
    /// `AbstractCatalog.dropDatabase` does before `dropDatabaseImpl`.
    pub fn remove_database(&self, name: &str) -> Result<()> {
        let p = self.db_path(name);
        if !io::is_dir(&p) {
            return Err(Error::DatabaseNotFound(name.to_string()));
        }
        io::remove_dir_all(&p)
    }

    /// Rename (or move to another database) the table `from`, as Java's
    /// `FileSystemCatalog.renameTableImpl` (`FileIO.rename` of its directory): a rename on a
    /// local disk; on an object store, a copy then a delete (see [`io::rename_dir`]), not atomic.
    pub fn rename_table(&self, from: &str, to: &str) -> Result<()> {
        let src = self.table_path(from)?;
        let (db, _) = parse_identifier(to)?;
        let dst = self.table_path(to)?;
        if !io::is_dir(&src.join("schema")) {
            return Err(Error::TableNotFound(from.to_string()));
        }
        if !io::is_dir(&self.db_path(&db)) {
            return Err(Error::DatabaseNotFound(db));
        }
        if io::is_dir(&dst) || io::exists(&dst) {
            return Err(Error::TableAlreadyExists(to.to_string()));
        }
        io::rename_dir(&src, &dst, "schema").map_err(|e| e.with_table(from))
    }
}
