//! What dropping a table deletes outside its directory: the files it wrote under the roots of
//! `data-file.external-paths` (docs/write-path.md, "External data paths").
//!
//! pypaimon leaves them; Java deletes every root recursively, which destroys the files of other
//! tables sharing a root. Here the table's own manifests say which files are its: every data
//! file, changelog file and file index (`<file>.index`) a manifest in `manifest/` names by an
//! `_EXTERNAL_PATH`, and every index file an index manifest names so. `manifest/` is shared by
//! the table and all its branches and holds the manifests of every snapshot, tag and changelog
//! (and of crashed commits, whose files are the table's too); a file already deleted (expired)
//! is skipped. Nothing else under the roots is touched.
//!
//! Order, and what a crash leaves: (1) the manifests are read, nothing changed; a manifest that
//! cannot be read refuses the drop before anything is deleted (but see below); (2) the table
//! directory is removed, as without external paths: from then on the table is gone; (3) the
//! listed files are deleted, then the partition, bucket and hash directories they leave
//! empty. A crash in (3) leaves some of the table's files under the roots and nothing that
//! names them (what pypaimon always leaves); the table is dropped either way, never
//! half-readable. Deleting them before (2) would make a crash leave a table whose snapshots
//! name missing files.
//!
//! The manifests are only read when some schema of the table or of a branch sets external
//! paths (its raw `options`, no column type parsed): a table given them as dynamic options only
//! (`Table.copy`) keeps what it wrote there after a drop. A schema file that is not JSON may
//! have set them: the manifests are read then too, and if one cannot be read the drop goes on
//! (a corrupt schema must not block it for ever) and reports that files may be left.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::error::{Error, Result};
use crate::io;
use crate::spec::manifest::{read_index_manifest, read_manifest_entries};
use crate::table::references::metadata_roots;
use crate::table::snapshot_manager::{ids_in, read_json_text, schema_path};
use crate::write::external_path::{is_hash_dir, ExternalPaths};

/// What the schemas of a table (and of its branches) say about external paths, read from the
/// raw JSON only (`options`, `partitionKeys`): no type is parsed, so a schema with a type
/// paimon_rs cannot hold (a newer Java's) never blocks a drop.
#[derive(Default)]
struct SchemaFacts {
    /// Some schema sets external paths (or sets them so that they do not parse: files may have
    /// been written before).
    external: bool,
    /// The partition keys of the newest readable schema of the table.
    partition_levels: usize,
    /// Its `data-file.path-directory` (the directories between a root and the partitions).
    data_dir: Option<String>,
    /// A schema file that is not JSON (or whose options are not an object): it may have set
    /// external paths.
    corrupt: Option<PathBuf>,
}

/// One schema file of a table or of a branch, as raw JSON (no type parsed).
pub(crate) struct RawSchema {
    /// The table or branch directory it belongs to.
    pub root: PathBuf,
    /// The schema file.
    pub path: PathBuf,
    /// Its JSON; None when it is not UTF-8 JSON.
    pub json: Option<Value>,
}

/// Every schema file of the table at `path` and of its branches, read as raw JSON only: a
/// schema with a type paimon_rs cannot hold is read as any other. Shared by the drop and by the
/// orphan clean (which other tables share an external root).
pub(crate) fn raw_schemas(path: &Path) -> Result<Vec<RawSchema>> {
    let mut out = vec![];
    for root in metadata_roots(path)? {
        for id in ids_in(&root.join("schema"), "schema-")? {
            let p = schema_path(&root, id);
            let text = match read_json_text(&p) {
                Ok(Some(t)) => Some(t),
                Ok(None) => continue,
                Err(Error::CorruptFile { .. }) => None,
                Err(e) => return Err(e),
            };
            let json = text.and_then(|t| serde_json::from_str::<Value>(&t).ok());
            out.push(RawSchema {
                root: root.clone(),
                path: p,
                json,
            });
        }
    }
    Ok(out)
}

fn schema_facts(path: &Path) -> Result<SchemaFacts> {
    let mut facts = SchemaFacts::default();
    for RawSchema {
        root,
        path: p,
        json,
    } in raw_schemas(path)?
    {
        let v = json;
        let options = match v.as_ref().map(|v| v.get("options")) {
            Some(Some(Value::Object(o))) => Some(o),
            Some(None | Some(Value::Null)) => None,
            _ => {
                facts.corrupt.get_or_insert(p);
                continue;
            }
        };
        let get = |k: &str| options.and_then(|o| o.get(k)).and_then(Value::as_str);
        if !matches!(ExternalPaths::from_options(&get), Ok(None)) {
            facts.external = true;
        }
        if root == path {
            if let Some(Value::Array(keys)) = v.as_ref().and_then(|v| v.get("partitionKeys")) {
                facts.partition_levels = keys.len();
            }
            facts.data_dir = get("data-file.path-directory")
                .and_then(|d| crate::options::parse_data_file_path_directory(d).ok());
        }
    }
    Ok(facts)
}

/// The files a dropped table leaves to delete under `data-file.external-paths`.
pub(crate) struct ExternalFiles {
    /// The files, as the table's manifests name them.
    pub files: Vec<PathBuf>,
    /// How many partition directories they are under.
    pub partition_levels: usize,
    /// The `data-file.path-directory` above the partitions, if any.
    pub data_dir: Option<String>,
    /// Why files may be left under the roots although the drop goes on: a schema that is not
    /// JSON, and manifests that could not be read either.
    pub unknown: Option<String>,
}

/// The files the table at `path` wrote under external roots, as its manifests name them (see
/// the module documentation). Reads only.
pub(crate) fn external_files(path: &Path) -> Result<ExternalFiles> {
    let facts = schema_facts(path)?;
    let mut out = ExternalFiles {
        files: vec![],
        partition_levels: facts.partition_levels,
        data_dir: facts.data_dir.clone(),
        unknown: None,
    };
    if !facts.external && facts.corrupt.is_none() {
        return Ok(out);
    }
    match manifest_files(path) {
        Ok(files) => out.files = files,
        // a schema that is not JSON would block the drop for ever: the table goes, and the
        // caller reports what may be left
        Err((_, e)) if !facts.external => {
            let schema = facts.corrupt.as_deref().unwrap_or(path);
            out.unknown = Some(format!(
                "its schema file {} is not readable JSON and its manifests could not be read \
                 ({e}): files it wrote under data-file.external-paths, if any, may be left there",
                schema.display()
            ));
        }
        Err((p, e)) => {
            return Err(Error::corrupt(
                &p,
                format!(
                    "unreadable ({e}); refusing to drop the table: the files it names under \
                     data-file.external-paths would be left (nothing was deleted). To drop it \
                     anyway, delete this manifest file (the files only it names are then left \
                     under the roots), or remove the table directory by hand"
                ),
            ))
        }
    }
    Ok(out)
}

/// Every file a manifest in `manifest/` names by an external path; on failure, the manifest
/// that could not be read.
fn manifest_files(path: &Path) -> std::result::Result<Vec<PathBuf>, (PathBuf, Error)> {
    let dir = path.join("manifest");
    let mut out = BTreeSet::new();
    for name in io::list_names(&dir).map_err(|e| (dir.clone(), e))? {
        let p = dir.join(&name);
        let at = |e| (p.clone(), e);
        if name.starts_with("index-manifest-") {
            let bytes = io::read(&p).map_err(at)?;
            let entries = read_index_manifest(&bytes, &p).map_err(at)?;
            out.extend(
                entries
                    .iter()
                    .filter_map(|e| e.external_path.as_deref())
                    .map(io::external_file),
            );
        } else if name.starts_with("manifest-") && !name.starts_with("manifest-list-") {
            let bytes = io::read(&p).map_err(at)?;
            let entries = read_manifest_entries(&bytes, &p).map_err(at)?;
            for e in entries {
                let Some(ext) = e.file.external_path.as_deref() else {
                    continue;
                };
                let file = io::external_file(ext);
                if let Some(parent) = file.parent() {
                    out.extend(e.file.extra_files.iter().map(|x| parent.join(x)));
                }
                out.insert(file);
            }
        }
    }
    Ok(out.into_iter().collect())
}

/// Remove `dir` (a file's directory under a root) if empty, then its parents as long as they
/// are empty and of the table's layout: up to four hash directories, one bucket directory, then
/// `partition_levels` partition directories (`key=value`), then the directories of
/// `data-file.path-directory` (`data_dir`). Never a root or above.
fn remove_empty_layout(dir: &Path, partition_levels: usize, data_dir: Option<&str>) -> Result<()> {
    let name_of = |d: &Path| {
        d.file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_string()
    };
    let mut d = dir.to_path_buf();
    let up = |d: &mut PathBuf| -> Result<bool> {
        if !io::remove_empty_dir(d)? {
            return Ok(false);
        }
        Ok(match d.parent() {
            Some(p) => {
                *d = p.to_path_buf();
                true
            }
            None => false,
        })
    };
    for depth in (0..4).rev() {
        if is_hash_dir(depth, &name_of(&d)) && !up(&mut d)? {
            return Ok(());
        }
    }
    if !name_of(&d).starts_with("bucket-") || !up(&mut d)? {
        return Ok(());
    }
    for _ in 0..partition_levels {
        if !name_of(&d).contains('=') || !up(&mut d)? {
            return Ok(());
        }
    }
    for seg in data_dir.into_iter().flat_map(|d| d.rsplit('/')) {
        if name_of(&d) != seg || !up(&mut d)? {
            return Ok(());
        }
    }
    Ok(())
}

/// Delete `files` (what is gone already is skipped), then the layout directories they leave
/// empty (see [`remove_empty_layout`]). Every file is tried; what failed is returned, for the
/// caller to report (the table is gone by then).
pub(crate) fn delete_external_files(ext: &ExternalFiles) -> Option<String> {
    let mut failed: Vec<(PathBuf, Error)> = vec![];
    let mut dirs = BTreeSet::new();
    for f in &ext.files {
        match io::remove_file_if_exists(f) {
            Ok(()) => {
                if let Some(d) = f.parent() {
                    dirs.insert(d.to_path_buf());
                }
            }
            Err(e) => failed.push((f.clone(), e)),
        }
    }
    // on an object store there are no directories: this only walks up the names
    for d in &dirs {
        if let Err(e) = remove_empty_layout(d, ext.partition_levels, ext.data_dir.as_deref()) {
            failed.push((d.clone(), e));
        }
    }
    let n = failed.len();
    let deleted = failed.into_iter().next().map(|(p, e)| {
        format!(
            "{n} of its files or directories under data-file.external-paths could not be \
             deleted (the first, {}: {e}); nothing names them any more: delete them by hand",
            p.display()
        )
    });
    match (ext.unknown.clone(), deleted) {
        (None, d) => d,
        (u, None) => u,
        (Some(u), Some(d)) => Some(format!("{u}; {d}")),
    }
}

/// The error of a drop that went through but left files under the roots: `left` is one
/// `(table, what)` per table (see [`delete_external_files`]).
pub(crate) fn dropped_but_left(at: &Path, left: &[(String, String)]) -> Error {
    let list: Vec<String> = left
        .iter()
        .map(|(t, w)| format!("table {t}: {w}"))
        .collect();
    Error::io(
        at,
        std::io::Error::other(format!(
            "dropped, but {} table(s) left files behind: {}",
            left.len(),
            list.join("; ")
        )),
    )
}
