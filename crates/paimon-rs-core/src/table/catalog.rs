//! The filesystem catalog: `<warehouse>/<db>.db/<table>/` (paimon-format.md §1).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::new_schema::NewTableSchema;
use super::{snapshot_manager, FileStoreTable};
use crate::error::{Error, Result};
use crate::io;
use crate::spec::schema::TableSchema;

const DB_SUFFIX: &str = ".db";
/// The empty object that makes a database exist on an object store (no directories there).
const DB_MARKER: &str = ".paimon-database";

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
    /// from the file system options among `options` (docs/object-stores.md).
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
            io::absolute(&warehouse)?
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
        crate::options::check_user_options(identifier, &schema.options)?;
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
        // its files under `data-file.external-paths`: listed first, deleted once the table is
        // gone (see `table::drop` for what a crash leaves)
        let external = super::drop::external_files(&path).map_err(|e| e.with_table(identifier))?;
        io::remove_dir_all(&path)?;
        match super::drop::delete_external_files(&external) {
            None => Ok(()),
            Some(w) => Err(super::drop::dropped_but_left(
                &path,
                &[(identifier.to_string(), w)],
            )),
        }
    }

    /// Delete the database `name` and everything under it (its directory; on an object store,
    /// every object under its prefix). The caller checks emptiness (`cascade`), as Java's
    /// `AbstractCatalog.dropDatabase` does before `dropDatabaseImpl`.
    pub fn remove_database(&self, name: &str) -> Result<()> {
        let p = self.db_path(name);
        if !io::is_dir(&p) {
            return Err(Error::DatabaseNotFound(name.to_string()));
        }
        // each table's files under `data-file.external-paths`, as `drop_table`
        let mut external = vec![];
        for t in self.list_tables(name)? {
            let ident = format!("{name}.{t}");
            let files =
                super::drop::external_files(&p.join(&t)).map_err(|e| e.with_table(&ident))?;
            external.push((ident, files));
        }
        io::remove_dir_all(&p)?;
        // every table is tried, whatever failed before
        let left: Vec<(String, String)> = external
            .into_iter()
            .filter_map(|(ident, files)| {
                super::drop::delete_external_files(&files).map(|w| (ident, w))
            })
            .collect();
        if left.is_empty() {
            Ok(())
        } else {
            Err(super::drop::dropped_but_left(&p, &left))
        }
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
