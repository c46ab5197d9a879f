//! Decoded manifest files kept per process (#30), as Java's caching catalog keeps them
//! (`cache.manifest.small-file-threshold` 1 MiB, `cache.manifest.small-file-memory` 128 MiB).
//!
//! Every commit decodes the manifests of the latest snapshot (conflict check, live files,
//! manifest merge) and every scan those of its snapshot, so a table written by many small commits
//! decodes the same files again and again: in profiled upsert commits manifest decoding was ~7%
//! of the CPU, and in a plan of a 21-snapshot table most of it (Avro blocks, zstd contexts,
//! allocation). Manifest files are immutable (unique names, written once), so their decoded
//! entries can be kept. A local file is only taken from the cache while its length and
//! modification time are those it had when it was decoded, so a file rewritten or corrupted on
//! disk is decoded (and reported) again; on an object store the path alone is the key, as for
//! the metadata bytes `io::read_referenced` already keeps there.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::SystemTime;

use super::manifest::{read_manifest_entries, ManifestEntry};
use crate::error::Result;
use crate::io;

/// Files larger than this are decoded on every read (Java's small-file threshold).
const MAX_FILE_BYTES: usize = 1 << 20;
/// Estimated memory of all cached entries; past it the cache starts afresh.
const MAX_CACHED_BYTES: usize = 128 << 20;

/// What a cached decode is valid for: a local file's length and modification time (None on an
/// object store, whose files are never rewritten).
type Version = Option<(u64, Option<SystemTime>)>;

struct Cached {
    version: Version,
    entries: Arc<Vec<ManifestEntry>>,
    bytes: usize,
}

#[derive(Default)]
struct Cache {
    files: HashMap<PathBuf, Cached>,
    bytes: usize,
}

fn cache() -> &'static Mutex<Cache> {
    static C: OnceLock<Mutex<Cache>> = OnceLock::new();
    C.get_or_init(Default::default)
}

/// The version of `path` now; Err(()) when it cannot be told (the read then reports why).
fn version_of(path: &Path) -> std::result::Result<Version, ()> {
    if io::is_remote(path) {
        return Ok(None);
    }
    let m = std::fs::metadata(path).map_err(|_| ())?;
    Ok(Some((m.len(), m.modified().ok())))
}

/// A rough size of decoded entries: the structs plus their heap parts, which grow with the
/// encoded file (stats, keys, names).
fn estimated_bytes(entries: &[ManifestEntry], encoded: usize) -> usize {
    std::mem::size_of_val(entries) + encoded * 4
}

/// The entries of the manifest file `path` (referenced by `referrer`, named in errors), decoded
/// once per process while the file is unchanged.
pub fn read_manifest_entries_cached(path: &Path, referrer: &str) -> Result<Vec<ManifestEntry>> {
    let version = version_of(path).ok();
    if let Some(v) = &version {
        if let Ok(c) = cache().lock() {
            if let Some(hit) = c.files.get(path).filter(|h| &h.version == v) {
                return Ok(hit.entries.as_ref().clone());
            }
        }
    }
    let bytes = io::read_referenced(path, referrer)?;
    let entries = read_manifest_entries(&bytes, path)?;
    if let Some(version) = version.filter(|_| bytes.len() <= MAX_FILE_BYTES) {
        let size = estimated_bytes(&entries, bytes.len());
        if let Ok(mut c) = cache().lock() {
            if c.bytes + size > MAX_CACHED_BYTES {
                *c = Cache::default();
            }
            let old = c.files.insert(
                path.to_path_buf(),
                Cached {
                    version,
                    entries: Arc::new(entries.clone()),
                    bytes: size,
                },
            );
            c.bytes = c.bytes + size - old.map_or(0, |o| o.bytes);
        }
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::manifest::tests::write_manifest_entries_for_tests;

    #[test]
    fn a_file_rewritten_in_place_is_decoded_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("manifest-cache-test-0");
        let (one, two) = write_manifest_entries_for_tests();
        std::fs::write(&path, &one.0).unwrap();
        let first = read_manifest_entries_cached(&path, "a test").unwrap();
        assert_eq!(first, one.1);
        assert_eq!(
            read_manifest_entries_cached(&path, "a test").unwrap(),
            one.1
        );
        // Rewritten (another length): the new content, not the cached one.
        std::fs::write(&path, &two.0).unwrap();
        assert_eq!(
            read_manifest_entries_cached(&path, "a test").unwrap(),
            two.1
        );
        // Corrupted: reported, never served from the cache.
        std::fs::write(&path, b"not avro").unwrap();
        let err = read_manifest_entries_cached(&path, "a test").unwrap_err();
        assert!(err.to_string().contains("manifest-cache-test-0"), "{err}");
        // Gone: reported as missing, naming who references it.
        std::fs::remove_file(&path).unwrap();
        let err = read_manifest_entries_cached(&path, "a test").unwrap_err();
        assert!(
            err.to_string()
                .contains("missing, but referenced by a test"),
            "{err}"
        );
    }
}
