//! Branches, as Java's `FileSystemBranchManager` lays them out: branch `b` of a table is the
//! directory `<table>/branch/branch-b/` holding its own `snapshot/`, `schema/` and `tag/`
//! directories; data files, manifests, index and statistics files stay in the table directory
//! and are shared by every branch. A table handle reads and writes one branch, named by the
//! `branch` option (`main` when unset or blank; `catalog.get_table("db.t$branch_b")` sets it).
//!
//! - `create_branch(b)`: an empty branch with the current branch's schemas up to the latest
//!   (its first commit is snapshot 1); `create_branch(b, tag)`: the tag, its snapshot and the
//!   schemas up to the snapshot's are copied, so the branch starts at the tagged state.
//! - `drop_branch(b)`: the branch directory is deleted (the files only it referenced are left
//!   for expiry and the orphan clean, as in Java).
//! - `fast_forward(b)`: the current branch takes over `b`'s history: its snapshots, schemas and
//!   tags from `b`'s earliest snapshot on replace the current branch's, whose later ones are
//!   deleted (Java's order is delete-then-copy; here copy-then-delete, so a reader always finds
//!   a complete history).
//!
//! Expiry and the orphan clean read every branch's snapshots and tags (`expire::all_kept`,
//! `orphan`): a file a branch references is never deleted from another branch.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::io;
use crate::table::snapshot_manager::{self, SnapshotManager};
use crate::table::FileStoreTable;

/// The default branch (`CoreOptions.BRANCH`'s default).
pub const MAIN: &str = "main";
/// Prefix of a branch's directory name under `<table>/branch/`.
pub const BRANCH_PREFIX: &str = "branch-";
/// `t$branch_b` in a table identifier (Java's `Identifier`).
pub const IDENTIFIER_BRANCH_PREFIX: &str = "branch_";

/// The branch a `branch` option value names: blank is `main` (Java's `normalizeBranch`).
pub fn normalize(branch: Option<&str>) -> &str {
    match branch {
        Some(b) if !b.trim().is_empty() => b,
        _ => MAIN,
    }
}

/// `<table>` for `main`, else `<table>/branch/branch-<b>` (Java's `BranchManager.branchPath`).
pub fn branch_path(table: &Path, branch: &str) -> PathBuf {
    if branch == MAIN {
        table.to_path_buf()
    } else {
        table
            .join("branch")
            .join(format!("{BRANCH_PREFIX}{branch}"))
    }
}

/// Split an identifier's table part `t$branch_b` into `("t", Some("b"))` (Java's `Identifier`);
/// `t` alone is `("t", None)`. System tables (`t$snapshots`) are refused here: they are
/// read-only views the Python catalog's `get_table` builds (`paimon_rs.system_tables`).
pub fn split_object_name(object: &str) -> Result<(&str, Option<&str>)> {
    let mut parts = object.split('$');
    let table = parts.next().unwrap_or_default();
    match (parts.next(), parts.next()) {
        (None, _) => Ok((table, None)),
        (Some(b), None) if b.starts_with(IDENTIFIER_BRANCH_PREFIX) => {
            Ok((table, Some(&b[IDENTIFIER_BRANCH_PREFIX.len()..])))
        }
        _ => Err(Error::unsupported(format!(
            "system table '{object}': a read-only view, read it with catalog.get_table \
             (only tables and their branches 't$branch_<name>' can be changed or opened here)"
        ))),
    }
}

/// `db.t` (or `db.t$branch_x`) as the identifier of branch `branch`: `db.t$branch_b`, `db.t`
/// for `main`.
pub fn identifier_with_branch(name: &str, branch: &str) -> String {
    let base = match name.find("$branch_") {
        Some(i) => &name[..i],
        None => name,
    };
    if branch == MAIN {
        base.to_string()
    } else {
        format!("{base}${IDENTIFIER_BRANCH_PREFIX}{branch}")
    }
}

/// Java's `BranchManager.validateBranch`: not `main`, not blank, not all digits; and one file
/// name (paimon_rs refuses separators too, as it does for tag names).
pub fn validate_name(name: &str) -> Result<()> {
    if name == MAIN {
        return Err(Error::invalid(format!(
            "Branch name '{MAIN}' is the default branch and cannot be used."
        )));
    }
    if name.trim().is_empty() {
        return Err(Error::invalid(format!("Branch name '{name}' is blank.")));
    }
    if name.chars().all(|c| c.is_ascii_digit()) {
        return Err(Error::invalid(format!(
            "Branch name cannot be pure numeric string but is '{name}'."
        )));
    }
    if name.contains(['/', '\\', '$']) || name == "." || name == ".." {
        return Err(Error::invalid(format!(
            "'{name}' is not a valid branch name (it must be one file name without '$')"
        )));
    }
    Ok(())
}

/// Whether branch `name` exists (its directory does).
pub fn branch_exists(table: &FileStoreTable, name: &str) -> bool {
    name == MAIN || io::is_dir(&branch_path(&table.path, name))
}

/// The table's branches (not `main`), sorted.
pub fn list_branches(table: &FileStoreTable) -> Result<Vec<String>> {
    let dir = table.path.join("branch");
    let mut out: Vec<String> = io::list_names(&dir)?
        .into_iter()
        .filter_map(|n| n.strip_prefix(BRANCH_PREFIX).map(str::to_string))
        .filter(|n| io::is_dir(&branch_path(&table.path, n)))
        .collect();
    out.sort();
    Ok(out)
}

/// Copy `from` to `to`, replacing `to` (atomically: temp file then rename).
fn copy_file(from: &Path, to: &Path) -> Result<()> {
    io::write_new(to, &io::read(from)?)
}

/// Copy the schemas `0..=upto` of the current branch into branch `name` (Java's
/// `copySchemasToBranch`).
fn copy_schemas(table: &FileStoreTable, name: &str, upto: i64) -> Result<()> {
    let to = branch_path(&table.path, name);
    for id in 0..=upto {
        let src = snapshot_manager::schema_path(&table.meta_path(), id);
        if io::exists(&src) {
            copy_file(&src, &snapshot_manager::schema_path(&to, id))?;
        }
    }
    Ok(())
}

/// Create branch `name` of `table` (from the branch the handle reads), empty with the latest
/// schema, or from tag `tag`. An existing branch is refused unless `ignore_if_exists`.
pub fn create_branch(
    table: &FileStoreTable,
    name: &str,
    tag: Option<&str>,
    ignore_if_exists: bool,
) -> Result<()> {
    create_inner(table, name, tag, ignore_if_exists).map_err(|e| e.with_table(&table.name))
}

fn create_inner(
    table: &FileStoreTable,
    name: &str,
    tag: Option<&str>,
    ignore_if_exists: bool,
) -> Result<()> {
    if ignore_if_exists && branch_exists(table, name) {
        return Ok(());
    }
    validate_name(name)?;
    if branch_exists(table, name) {
        return Err(Error::invalid(format!(
            "Branch name '{name}' already exists."
        )));
    }
    let to = branch_path(&table.path, name);
    match tag {
        None => {
            let latest = snapshot_manager::latest_schema(&table.meta_path())?
                .ok_or_else(|| Error::TableNotFound(table.name.clone()))?;
            copy_schemas(table, name, latest.id)?;
        }
        Some(tag) => {
            let sm = table.snapshot_manager();
            let tag_path = sm.tag_path(tag);
            if !io::exists(&tag_path) {
                return Err(Error::invalid(format!("Tag '{tag}' doesn't exist.")));
            }
            let snapshot = sm.tag(tag)?;
            let branch_sm = SnapshotManager::new(&to);
            copy_file(&tag_path, &branch_sm.tag_path(tag))?;
            // the tagged snapshot may have expired: its JSON is the tag's (the tag fields are
            // not snapshot fields)
            let bytes = serde_json::to_vec_pretty(&snapshot)
                .map_err(|e| Error::Internal(format!("snapshot serialization: {e}")))?;
            io::write_new(&branch_sm.snapshot_path(snapshot.id), &bytes)?;
            copy_schemas(table, name, snapshot.schema_id)?;
        }
    }
    log::info!(target: "paimon_rs.branches", "{}: created branch '{name}'{}", table.name,
        tag.map(|t| format!(" from tag '{t}'")).unwrap_or_default());
    Ok(())
}

/// Delete branch `name` (its directory). Refused for a missing branch and for the branch that
/// `scan.fallback-branch` names (Java's `deleteBranch`).
pub fn drop_branch(table: &FileStoreTable, name: &str) -> Result<()> {
    drop_inner(table, name).map_err(|e| e.with_table(&table.name))
}

fn drop_inner(table: &FileStoreTable, name: &str) -> Result<()> {
    let raw = &table.options.raw;
    for key in ["scan.fallback-branch", "scan.primary-branch"] {
        if raw.get(key).is_some_and(|b| b == name) {
            return Err(Error::invalid(format!(
                "Cannot delete branch '{name}' because it is configured as '{key}'. Unset \
                 '{key}' first."
            )));
        }
    }
    if name == MAIN || name.trim().is_empty() || !branch_exists(table, name) {
        return Err(Error::invalid(format!(
            "Branch name '{name}' doesn't exist."
        )));
    }
    io::remove_dir_all(&branch_path(&table.path, name))?;
    log::info!(target: "paimon_rs.branches", "{}: deleted branch '{name}'", table.name);
    Ok(())
}

/// Every file under `dir`, relative to it (recursive).
fn files_under(dir: &Path, prefix: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    for st in io::list_status(dir)? {
        if st.is_dir {
            files_under(&st.path, &prefix.join(&st.name), out)?;
        } else {
            out.push(prefix.join(&st.name));
        }
    }
    Ok(())
}

/// Rename branch `from` to `to` (Java's `renameBranch`): the files are copied to the new
/// directory, then the old one is deleted (an object store cannot rename a directory).
pub fn rename_branch(table: &FileStoreTable, from: &str, to: &str) -> Result<()> {
    rename_inner(table, from, to).map_err(|e| e.with_table(&table.name))
}

fn rename_inner(table: &FileStoreTable, from: &str, to: &str) -> Result<()> {
    if from == MAIN {
        return Err(Error::invalid("Cannot rename the main branch."));
    }
    if from.trim().is_empty() || !branch_exists(table, from) {
        return Err(Error::invalid(format!(
            "Branch name '{from}' doesn't exist."
        )));
    }
    if branch_exists(table, to) {
        return Err(Error::invalid(format!(
            "Branch name '{to}' already exists."
        )));
    }
    validate_name(to)?;
    let src = branch_path(&table.path, from);
    let dst = branch_path(&table.path, to);
    let mut files = vec![];
    files_under(&src, Path::new(""), &mut files)?;
    for f in &files {
        copy_file(&src.join(f), &dst.join(f))?;
    }
    io::mkdirs(&dst)?;
    io::remove_dir_all(&src)
}

/// Ids of `<dir>/<prefix><id>` files, ascending.
fn ids(dir: &Path, prefix: &str) -> Result<Vec<i64>> {
    let mut v: Vec<i64> = io::list_names(dir)?
        .iter()
        .filter_map(|n| n.strip_prefix(prefix)?.parse::<i64>().ok())
        .collect();
    v.sort_unstable();
    Ok(v)
}

/// Make the branch `table` reads take over branch `name`'s history (Java's `fastForward`).
pub fn fast_forward(table: &FileStoreTable, name: &str) -> Result<()> {
    fast_forward_inner(table, name).map_err(|e| e.with_table(&table.name))
}

fn fast_forward_inner(table: &FileStoreTable, name: &str) -> Result<()> {
    if name == MAIN {
        return Err(Error::invalid(format!(
            "Branch name '{name}' do not use in fast-forward."
        )));
    }
    if name.trim().is_empty() {
        return Err(Error::invalid(format!("Branch name '{name}' is blank.")));
    }
    if name == table.branch() {
        return Err(Error::invalid(format!(
            "Fast-forward from the current branch '{name}' is not allowed."
        )));
    }
    if !branch_exists(table, name) {
        return Err(Error::invalid(format!(
            "Branch name '{name}' doesn't exist."
        )));
    }
    let src = branch_path(&table.path, name);
    let dst = table.meta_path();
    let from = SnapshotManager::new(&src);
    let into = table.snapshot_manager();
    let Some(earliest) = from.earliest_id()? else {
        return Err(Error::invalid(format!(
            "Cannot fast forward branch {name}, because it does not have snapshot."
        )));
    };
    let earliest_schema = from.snapshot(earliest)?.schema_id;
    // stale snapshots (see `snapshot_manager`) are not the branch's history: not copied
    let branch_snapshots = from.live_ids()?;
    let branch_schemas = ids(&src.join("schema"), "schema-")?;
    let branch_tags: Vec<String> = from.tags()?.into_iter().map(|(n, _)| n).collect();
    let Some(&latest) = branch_snapshots.last() else {
        return Err(Error::invalid(format!(
            "Cannot fast forward branch {name}, because it does not have snapshot."
        )));
    };
    // (1) the branch's schemas, snapshots and tags over the current branch's (each file
    // replaced atomically; schemas first, so every snapshot copied finds its schema)
    for &id in branch_schemas.iter().filter(|&&id| id >= earliest_schema) {
        copy_file(
            &snapshot_manager::schema_path(&src, id),
            &snapshot_manager::schema_path(&dst, id),
        )?;
    }
    for &id in &branch_snapshots {
        copy_file(&from.snapshot_path(id), &into.snapshot_path(id))?;
    }
    for tag in &branch_tags {
        copy_file(&from.tag_path(tag), &into.tag_path(tag))?;
    }
    // (2) the current branch's own later history: snapshots newest first, then its tags on
    // snapshots from `earliest` on and its schemas from `earliest_schema` on
    for id in into.ids()?.into_iter().rev() {
        if id > latest || (id >= earliest && !branch_snapshots.contains(&id)) {
            io::remove_file_if_exists(&into.snapshot_path(id))?;
        }
    }
    for (tag, s) in into.tags()? {
        if s.id >= earliest && !branch_tags.contains(&tag) {
            io::remove_file_if_exists(&into.tag_path(&tag))?;
        }
    }
    for id in ids(&dst.join("schema"), "schema-")? {
        if id >= earliest_schema && !branch_schemas.contains(&id) {
            io::remove_file_if_exists(&snapshot_manager::schema_path(&dst, id))?;
        }
    }
    // (3) the hints
    into.write_latest_hint(latest)?;
    if let Some(&first) = into.live_ids()?.first() {
        into.write_earliest_hint(first)?;
    }
    log::info!(target: "paimon_rs.branches", "{}: fast-forwarded '{}' to branch '{name}' \
        (snapshots {earliest}..={latest})", table.name, table.branch());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_validated_as_java_does() {
        let msg = |n: &str| validate_name(n).unwrap_err().to_string();
        assert!(
            msg("main").contains("Branch name 'main' is the default branch and cannot be used.")
        );
        assert!(msg("  ").contains("Branch name '  ' is blank."));
        assert!(msg("123").contains("Branch name cannot be pure numeric string but is '123'."));
        assert!(msg("a/b").contains("not a valid branch name"));
        validate_name("b1").unwrap();
    }

    #[test]
    fn paths_and_identifiers() {
        let t = Path::new("/w/db.db/t");
        assert_eq!(branch_path(t, MAIN), t);
        assert_eq!(branch_path(t, "b"), Path::new("/w/db.db/t/branch/branch-b"));
        assert_eq!(split_object_name("t").unwrap(), ("t", None));
        assert_eq!(split_object_name("t$branch_b").unwrap(), ("t", Some("b")));
        assert!(split_object_name("t$snapshots").is_err());
        assert_eq!(normalize(Some(" ")), MAIN);
        assert_eq!(normalize(None), MAIN);
        assert_eq!(normalize(Some("b")), "b");
        assert_eq!(identifier_with_branch("db.t", "b"), "db.t$branch_b");
        assert_eq!(identifier_with_branch("db.t$branch_b", "main"), "db.t");
        assert_eq!(
            identifier_with_branch("db.t$branch_b", "c"),
            "db.t$branch_c"
        );
    }
}
