//! File access. Local filesystem first; object stores later behind a feature, through the same
//! functions. Data and manifest files have unique names and are written once; snapshot and schema
//! files are created exclusively so that a concurrent writer can never overwrite them.

pub mod avro;
pub mod checksum;
pub mod format;
pub mod int96;
pub mod orc;
pub mod parquet;

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

pub fn read(path: &Path) -> Result<Vec<u8>> {
    fs::read(path).map_err(|e| Error::io(path, e))
}

/// Read a file the table's metadata references (a manifest list, a manifest): a missing one is
/// corruption of the table, reported naming the file and `referrer` (what references it).
pub fn read_referenced(path: &Path, referrer: &str) -> Result<Vec<u8>> {
    match fs::read(path) {
        Ok(b) => Ok(b),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(Error::corrupt(
            path,
            format!("missing, but referenced by {referrer}"),
        )),
        Err(e) => Err(Error::io(path, e)),
    }
}

pub fn read_to_string(path: &Path) -> Result<String> {
    fs::read_to_string(path).map_err(|e| Error::io(path, e))
}

pub fn exists(path: &Path) -> bool {
    path.exists()
}

pub fn mkdirs(path: &Path) -> Result<()> {
    fs::create_dir_all(path).map_err(|e| Error::io(path, e))
}

pub fn remove_file_if_exists(path: &Path) -> Result<()> {
    match fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io(path, e)),
    }
}

/// `read_dir`, or None if `dir` does not exist.
pub fn read_dir_if_exists(dir: &Path) -> Result<Option<fs::ReadDir>> {
    match fs::read_dir(dir) {
        Ok(rd) => Ok(Some(rd)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(dir, e)),
    }
}

/// File names in `dir` (not recursive); empty if `dir` does not exist.
pub fn list_names(dir: &Path) -> Result<Vec<String>> {
    let Some(rd) = read_dir_if_exists(dir)? else {
        return Ok(vec![]);
    };
    let mut out = vec![];
    for entry in rd {
        let entry = entry.map_err(|e| Error::io(dir, e))?;
        if let Some(n) = entry.file_name().to_str() {
            out.push(n.to_string());
        }
    }
    Ok(out)
}

fn temp_path_for(path: &Path) -> PathBuf {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let tmp = format!(".{name}.{}.tmp", uuid::Uuid::new_v4());
    path.with_file_name(tmp)
}

/// Create the new file `path`, and its directory if missing. If the directory vanishes between
/// the two (`remove_orphan_files` removes empty bucket and partition directories), it is created
/// again, once.
pub fn create_new_file(path: &Path) -> Result<File> {
    let open = || OpenOptions::new().write(true).create_new(true).open(path);
    if let Some(parent) = path.parent() {
        mkdirs(parent)?;
    }
    match open() {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if let Some(parent) = path.parent() {
                mkdirs(parent)?;
            }
            open().map_err(|e| Error::io(path, e))
        }
        r => r.map_err(|e| Error::io(path, e)),
    }
}

fn write_synced(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut f = create_new_file(path)?;
    f.write_all(bytes).map_err(|e| Error::io(path, e))?;
    f.sync_all().map_err(|e| Error::io(path, e))
}

/// Write a file that has a unique name (data files, manifests): temp file, fsync, rename. Readers
/// never see a partial file under the final name.
pub fn write_new(path: &Path, bytes: &[u8]) -> Result<()> {
    if let Some(parent) = path.parent() {
        mkdirs(parent)?;
    }
    let tmp = temp_path_for(path);
    let res = write_synced(&tmp, bytes)
        .and_then(|_| fs::rename(&tmp, path).map_err(|e| Error::io(path, e)));
    if res.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    res
}

/// Create `path` with `bytes` only if it does not exist yet, atomically: the content is written
/// and fsynced to a temp file which is then hard-linked to the final name. `link` fails if the
/// name exists, so two racing writers can never both succeed nor overwrite each other.
/// Returns `Ok(false)` if the name was taken.
pub fn create_exclusive(path: &Path, bytes: &[u8]) -> Result<bool> {
    if let Some(parent) = path.parent() {
        mkdirs(parent)?;
    }
    let tmp = temp_path_for(path);
    write_synced(&tmp, bytes)?;
    let res = fs::hard_link(&tmp, path);
    let _ = fs::remove_file(&tmp);
    match res {
        Ok(()) => {
            if let Some(parent) = path.parent() {
                // Make the new directory entry durable; failure here is not fatal.
                if let Ok(d) = File::open(parent) {
                    let _ = d.sync_all();
                }
            }
            Ok(true)
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(Error::io(path, e)),
    }
}

/// Overwrite a hint file (`LATEST`): temp file then rename (atomic replace).
pub fn overwrite_hint(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = temp_path_for(path);
    let res = write_synced(&tmp, bytes)
        .and_then(|_| fs::rename(&tmp, path).map_err(|e| Error::io(path, e)));
    if res.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    res
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn create_exclusive_never_overwrites() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("snapshot-1");
        assert!(create_exclusive(&p, b"a").unwrap());
        assert!(!create_exclusive(&p, b"b").unwrap());
        assert_eq!(read(&p).unwrap(), b"a");
        // no temp files left behind
        assert_eq!(
            list_names(dir.path()).unwrap(),
            vec!["snapshot-1".to_string()]
        );
    }
}
