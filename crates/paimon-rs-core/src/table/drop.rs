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
//! cannot be read refuses the drop before anything is deleted; (2) the table directory is
//! removed, as without external paths: from then on the table is gone; (3) the listed files
//! are deleted, then the partition, bucket and hash directories they leave empty. A crash in (3)
//! leaves some of the table's files under the roots and nothing that names them (what pypaimon
//! always leaves); the table is dropped either way, never half-readable. Deleting them before
//! (2) would make a crash leave a table whose snapshots name missing files.
//!
//! The manifests are only read when some schema of the table or of a branch sets external
//! paths: a table given them as dynamic options only (`Table.copy`) keeps what it wrote there
//! after a drop.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::io;
use crate::spec::manifest::{read_index_manifest, read_manifest_entries};
use crate::table::references::metadata_roots;
use crate::table::snapshot_manager::{ids_in, read_schema};
use crate::write::external_path::{is_hash_dir, ExternalPaths};

/// Whether any schema of the table at `path` (or of a branch) sets external paths (a schema
/// whose external path options do not parse counts: files may have been written before).
fn ever_external(path: &Path) -> Result<bool> {
    for root in metadata_roots(path)? {
        for id in ids_in(&root.join("schema"), "schema-")? {
            let s = read_schema(&root, id)?;
            let o = &s.options;
            if !matches!(
                ExternalPaths::from_options(&|k| o.get(k).map(String::as_str)),
                Ok(None)
            ) {
                return Ok(true);
            }
        }
    }
    Ok(false)
}

/// The files the table at `path` wrote under external roots, as its manifests name them (see
/// the module documentation). Reads only.
pub(crate) fn external_files(path: &Path) -> Result<Vec<PathBuf>> {
    if !ever_external(path)? {
        return Ok(vec![]);
    }
    let dir = path.join("manifest");
    let refuse = |p: &Path, e: Error| {
        Error::corrupt(
            p,
            format!(
                "unreadable ({e}); refusing to drop the table: the files it names under \
                 data-file.external-paths would be left (nothing was deleted)"
            ),
        )
    };
    let mut out = BTreeSet::new();
    for name in io::list_names(&dir)? {
        let p = dir.join(&name);
        if name.starts_with("index-manifest-") {
            let bytes = io::read(&p).map_err(|e| refuse(&p, e))?;
            let entries = read_index_manifest(&bytes, &p).map_err(|e| refuse(&p, e))?;
            out.extend(
                entries
                    .iter()
                    .filter_map(|e| e.external_path.as_deref())
                    .map(io::external_file),
            );
        } else if name.starts_with("manifest-") && !name.starts_with("manifest-list-") {
            let bytes = io::read(&p).map_err(|e| refuse(&p, e))?;
            let entries = read_manifest_entries(&bytes, &p).map_err(|e| refuse(&p, e))?;
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
/// `partition_levels` partition directories (`key=value`). Never a root or above.
fn remove_empty_layout(dir: &Path, partition_levels: usize) -> Result<()> {
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
    Ok(())
}

/// Delete `files` (what is gone already is skipped), then the layout directories they leave
/// empty (see [`remove_empty_layout`]). Every file is tried; the first failure is returned
/// after, naming how many failed.
pub(crate) fn delete_external_files(
    table: &str,
    files: &[PathBuf],
    partition_levels: usize,
) -> Result<()> {
    let mut failed: Vec<(PathBuf, Error)> = vec![];
    let mut dirs = BTreeSet::new();
    for f in files {
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
        remove_empty_layout(d, partition_levels)?;
    }
    let n = failed.len();
    match failed.into_iter().next() {
        None => Ok(()),
        Some((p, e)) => Err(Error::io(
            p,
            std::io::Error::other(format!(
                "table {table} was dropped, but {n} of its files under \
                 data-file.external-paths could not be deleted (this one: {e}); nothing names \
                 them any more: delete them by hand"
            )),
        )),
    }
}
