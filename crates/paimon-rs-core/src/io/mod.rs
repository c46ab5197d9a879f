//! File access: local files, and object stores ([`store`]: s3://, oss://, gs://, az://) through
//! the same functions, chosen by the path's URI scheme. Data and manifest files have unique
//! names and are written once; snapshot and schema files are created exclusively so that a
//! concurrent writer can never overwrite them.

pub mod avro;
pub(crate) mod aws_profile;
pub mod blob;
pub mod blob_nested;
pub mod checksum;
pub mod data_file;
pub(crate) mod file_write;
pub mod format;
pub mod int96;
pub mod orc;
pub mod orc_write;
pub mod parquet;
pub mod remote;
pub mod store;

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload};

use crate::error::{Error, Result};
use store::{block_on, count, Remote, Req};

/// An `object_store` error as an `std::io::Error` of the matching kind (callers match
/// `NotFound` and `AlreadyExists` as they do for local files).
pub(crate) fn obj_err(e: object_store::Error) -> std::io::Error {
    use std::io::ErrorKind as K;
    let kind = match &e {
        object_store::Error::NotFound { .. } => K::NotFound,
        object_store::Error::AlreadyExists { .. } | object_store::Error::Precondition { .. } => {
            K::AlreadyExists
        }
        object_store::Error::NotImplemented { .. } => K::Unsupported,
        object_store::Error::PermissionDenied { .. }
        | object_store::Error::Unauthenticated { .. } => K::PermissionDenied,
        _ => K::Other,
    };
    std::io::Error::new(kind, e.to_string())
}

fn remote_of(path: &Path) -> Result<Option<Remote>> {
    store::remote(path)
}

/// `p` under `base`, or `p` itself if it is absolute or an object store URI (`Path::join`
/// keeps an absolute `p`, but a URI is not absolute to it).
pub fn resolve(base: &Path, p: impl AsRef<Path>) -> PathBuf {
    let p = p.as_ref();
    if is_remote(p) {
        p.to_path_buf()
    } else {
        base.join(p)
    }
}

/// The form every catalog and table holds its root in: an object store URI as it is, a local
/// path (`file://` prefix removed) made absolute against the current directory once, when the
/// catalog or table is opened. Every later path is a join onto that root, so neither a join of
/// the root with a table-relative path that already carries the root (a relative root joined
/// twice: `wh/db.db/t/wh/db.db/t/bucket-0`) nor a path shipped to another process (a Spark
/// executor with another working directory) depends on where the process runs.
pub fn absolute(path: &Path) -> Result<PathBuf> {
    if is_remote(path) {
        return Ok(path.to_path_buf());
    }
    let local = Path::new(store::local_path(&path.to_string_lossy())).to_path_buf();
    if local.as_os_str().is_empty() {
        return Err(Error::invalid("an empty path names no warehouse or table"));
    }
    std::path::absolute(&local).map_err(|e| Error::io(&local, e))
}

/// Whether `path` is on an object store (not a local file).
pub fn is_remote(path: &Path) -> bool {
    path.to_str().and_then(store::parse_uri).is_some()
}

pub(crate) fn get_bytes(r: &Remote) -> std::io::Result<bytes::Bytes> {
    count(Req::Get);
    block_on(async { r.store.get(&r.key).await?.bytes().await }).map_err(obj_err)
}

#[cfg(test)]
thread_local! {
    static METADATA_READS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    static LISTED: std::cell::RefCell<Vec<PathBuf>> = const { std::cell::RefCell::new(vec![]) };
}

/// The directories this thread listed since the last call (and empties the record): how tests
/// see which LIST requests an operation would send to an object store.
#[cfg(test)]
pub fn take_listed_on_this_thread() -> Vec<PathBuf> {
    LISTED.with(|l| std::mem::take(&mut *l.borrow_mut()))
}

/// Manifests, manifest lists and index manifests (files named `manifest-*`, `index-manifest-*`)
/// this thread has read from storage (not from the object-store cache) since it started: how
/// tests see how much metadata an operation reads.
#[cfg(test)]
pub fn metadata_reads_on_this_thread() -> u64 {
    METADATA_READS.with(|c| c.get())
}

fn read_io(path: &Path) -> std::io::Result<Vec<u8>> {
    #[cfg(test)]
    {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.starts_with("manifest-") || name.starts_with("index-manifest-") {
            METADATA_READS.with(|c| c.set(c.get() + 1));
        }
    }
    match remote_of(path).map_err(|e| std::io::Error::other(e.to_string()))? {
        None => fs::read(path),
        Some(r) => get_bytes(&r).map(|b| b.to_vec()),
    }
}

pub fn read(path: &Path) -> Result<Vec<u8>> {
    read_io(path).map_err(|e| Error::io(path, e))
}

/// Immutable metadata files (manifests, manifest lists, index manifests: unique names, written
/// once) read from object stores are kept per process, up to this many bytes.
const META_CACHE_BYTES: usize = 64 << 20;

fn meta_cache(
) -> &'static std::sync::Mutex<(usize, std::collections::HashMap<PathBuf, bytes::Bytes>)> {
    static C: std::sync::OnceLock<
        std::sync::Mutex<(usize, std::collections::HashMap<PathBuf, bytes::Bytes>)>,
    > = std::sync::OnceLock::new();
    C.get_or_init(Default::default)
}

/// Read a file the table's metadata references (a manifest list, a manifest): a missing one is
/// corruption of the table, reported naming the file and `referrer` (what references it). On
/// an object store, manifests are cached per process (they are never rewritten).
pub fn read_referenced(path: &Path, referrer: &str) -> Result<Vec<u8>> {
    let cacheable = is_remote(path)
        && path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("manifest-") || n.starts_with("index-manifest-"));
    if cacheable {
        if let Ok(c) = meta_cache().lock() {
            if let Some(b) = c.1.get(path) {
                return Ok(b.to_vec());
            }
        }
    }
    match read_io(path) {
        Ok(b) => {
            if cacheable {
                if let Ok(mut c) = meta_cache().lock() {
                    if c.0 + b.len() > META_CACHE_BYTES {
                        *c = Default::default();
                    }
                    c.0 += b.len();
                    c.1.insert(path.to_path_buf(), bytes::Bytes::from(b.clone()));
                }
            }
            Ok(b)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(Error::corrupt(
            path,
            format!("missing, but referenced by {referrer}"),
        )),
        Err(e) => Err(Error::io(path, e)),
    }
}

pub fn read_to_string(path: &Path) -> Result<String> {
    let b = read(path)?;
    String::from_utf8(b).map_err(|e| {
        Error::io(
            path,
            std::io::Error::new(std::io::ErrorKind::InvalidData, e.to_string()),
        )
    })
}

/// Whether the file (or, locally, the directory) `path` exists. On an object store this is one
/// HEAD of the object, never a LIST: use [`is_dir`] for a "directory" (a key prefix).
pub fn exists(path: &Path) -> bool {
    match remote_of(path) {
        Ok(None) => path.exists(),
        Ok(Some(r)) => {
            count(Req::Head);
            block_on(r.store.head(&r.key)).is_ok()
        }
        Err(_) => false,
    }
}

/// Whether the directory `path` exists; on an object store, whether any key lies under it.
pub fn is_dir(path: &Path) -> bool {
    match remote_of(path) {
        Ok(None) => path.is_dir(),
        Ok(Some(r)) => {
            use futures::StreamExt;
            count(Req::List);
            block_on(async { r.store.list(Some(&r.key)).next().await }).is_some_and(|x| x.is_ok())
        }
        Err(_) => false,
    }
}

/// The size of the file `path` (a HEAD on an object store).
pub fn file_size(path: &Path) -> std::io::Result<u64> {
    match remote_of(path).map_err(|e| std::io::Error::other(e.to_string()))? {
        None => fs::metadata(path).map(|m| m.len()),
        Some(r) => {
            count(Req::Head);
            block_on(r.store.head(&r.key))
                .map(|m| m.size)
                .map_err(obj_err)
        }
    }
}

/// [`file_size`] of each of `paths`, in order. On an object store the HEADs go out
/// [`STORE_CONCURRENCY`] at a time (one round trip for a commit's files, not one each).
pub fn file_sizes(paths: &[PathBuf]) -> Vec<std::io::Result<u64>> {
    use futures::StreamExt;
    let remotes: Vec<_> = paths.iter().map(|p| remote_of(p)).collect();
    if remotes.iter().all(|r| matches!(r, Ok(None))) {
        return paths
            .iter()
            .map(|p| fs::metadata(p).map(|m| m.len()))
            .collect();
    }
    block_on(
        futures::stream::iter(paths.iter().zip(remotes).map(|(p, r)| async move {
            match r.map_err(|e| std::io::Error::other(e.to_string()))? {
                None => fs::metadata(p).map(|m| m.len()),
                Some(r) => {
                    count(Req::Head);
                    r.store.head(&r.key).await.map(|m| m.size).map_err(obj_err)
                }
            }
        }))
        .buffered(STORE_CONCURRENCY)
        .collect(),
    )
}

/// The path of a file a manifest names by its external path (`_EXTERNAL_PATH`: an object
/// store URI kept as it is, a `file:` URI as its local path).
pub(crate) fn external_file(uri: &str) -> PathBuf {
    PathBuf::from(uri.strip_prefix("file:").unwrap_or(uri))
}

/// Create the directory `path` and its parents; nothing on an object store (no directories).
pub fn mkdirs(path: &Path) -> Result<()> {
    if is_remote(path) {
        return Ok(());
    }
    fs::create_dir_all(path).map_err(|e| Error::io(path, e))
}

pub fn remove_file_if_exists(path: &Path) -> Result<()> {
    if let Some(r) = remote_of(path)? {
        count(Req::Delete);
        return match block_on(r.store.delete(&r.key)) {
            Ok(()) => Ok(()),
            Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(Error::io(path, obj_err(e))),
        };
    }
    match fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io(path, e)),
    }
}

/// Remove the directory `path` if it is empty (Ok(false) if not); on an object store there are
/// no directories to remove (Ok(true)).
pub fn remove_empty_dir(path: &Path) -> Result<bool> {
    if is_remote(path) {
        return Ok(true);
    }
    Ok(fs::remove_dir(path).is_ok())
}

/// Remove `path` and everything under it. On an object store: one LIST of the prefix, then
/// the objects' DELETEs, [`STORE_CONCURRENCY`] at a time.
pub fn remove_dir_all(path: &Path) -> Result<()> {
    if let Some(r) = remote_of(path)? {
        let keys = list_keys(&r).map_err(|e| Error::io(path, e))?;
        return delete_keys(&r, keys).map_err(|(_, e)| Error::io(path, e));
    }
    fs::remove_dir_all(path).map_err(|e| Error::io(path, e))
}

/// Requests in flight at once for the many-object operations (deleting or copying a prefix).
const STORE_CONCURRENCY: usize = 16;

/// Every key under the "directory" `r.key` (one LIST, paginated by the store).
fn list_keys(r: &Remote) -> std::io::Result<Vec<object_store::path::Path>> {
    use futures::TryStreamExt;
    count(Req::List);
    block_on(
        r.store
            .list(Some(&r.key))
            .map_ok(|m| m.location)
            .try_collect::<Vec<_>>(),
    )
    .map_err(obj_err)
}

/// Delete `keys` (a missing one is not an error); on failure, how many were deleted and the error.
fn delete_keys(
    r: &Remote,
    keys: Vec<object_store::path::Path>,
) -> std::result::Result<(), (usize, std::io::Error)> {
    use futures::StreamExt;
    let results: Vec<_> = block_on(
        futures::stream::iter(keys.into_iter().map(|k| async move {
            count(Req::Delete);
            match r.store.delete(&k).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
                Err(e) => {
                    let e = obj_err(e);
                    Err(std::io::Error::new(e.kind(), format!("deleting {k}: {e}")))
                }
            }
        }))
        .buffer_unordered(STORE_CONCURRENCY)
        .collect(),
    );
    let done = results.iter().filter(|x| x.is_ok()).count();
    match results.into_iter().find_map(|x| x.err()) {
        None => Ok(()),
        Some(e) => Err((done, e)),
    }
}

/// The stores of `from` and `to` for a move between them: None if both are local; refused if
/// one is local and the other not, or if they are on two object stores.
fn move_stores(from: &Path, to: &Path) -> Result<Option<(Remote, Remote)>> {
    match (remote_of(from)?, remote_of(to)?) {
        (None, None) => Ok(None),
        (Some(src), Some(dst)) if src.root == dst.root => Ok(Some((src, dst))),
        (Some(_), Some(_)) => Err(Error::unsupported(format!(
            "moving {} to {}: between two object stores",
            from.display(),
            to.display()
        ))),
        _ => Err(Error::unsupported(format!(
            "moving {} to {}: between a local disk and an object store",
            from.display(),
            to.display()
        ))),
    }
}

/// Move the directory `from` to `to` (which the caller checked is free). Locally a rename,
/// atomic. An object store has no rename: as Hadoop's S3A `rename` (which Java Paimon's
/// `FileSystemCatalog.renameTableImpl` calls through `FileIO.rename` on S3), every object under
/// `from` is copied server side to `to`, then the objects under `from` are deleted. The objects
/// under `from/<last>` are copied last and deleted first (`last` = a table's `schema`
/// directory: the copy becomes a table only once complete, and the source stops being one
/// before anything else of it goes). A failed copy removes what it copied and leaves `from`
/// as it was; a failed delete says which objects are left at `from`.
pub fn rename_dir(from: &Path, to: &Path, last: &str) -> Result<()> {
    let Some((src, dst)) = move_stores(from, to)? else {
        return fs::rename(from, to).map_err(|e| Error::io(from, e));
    };
    let keys = list_keys(&src).map_err(|e| Error::io(from, e))?;
    if keys.is_empty() {
        return Err(Error::io(
            from,
            std::io::Error::new(std::io::ErrorKind::NotFound, "nothing to move"),
        ));
    }
    let prefix = format!("{}/", src.key.as_ref());
    let last_prefix = format!("{prefix}{last}/");
    let (tail, head): (Vec<_>, Vec<_>) = keys
        .into_iter()
        .partition(|k| k.as_ref().starts_with(&last_prefix));
    let target = |k: &object_store::path::Path| {
        let rel = k.as_ref().strip_prefix(&prefix).unwrap_or(k.as_ref());
        object_store::path::Path::from(format!("{}/{rel}", dst.key.as_ref()))
    };
    for group in [&head, &tail] {
        if let Err(e) = copy_keys(&src, group.iter().map(|k| (k.clone(), target(k))).collect()) {
            let cleanup = list_keys(&dst)
                .map_err(|e| (0, e))
                .and_then(|ks| delete_keys(&dst, ks));
            let left = match cleanup {
                Ok(()) => "the partial copy was removed".to_string(),
                Err((_, c)) => format!(
                    "removing the partial copy failed too ({c}): delete what is under {} by hand",
                    to.display()
                ),
            };
            return Err(Error::io(
                from,
                std::io::Error::new(
                    e.kind(),
                    format!(
                        "moving to {}: {e}; nothing was deleted from {}, {left}",
                        to.display(),
                        from.display()
                    ),
                ),
            ));
        }
    }
    let total = head.len() + tail.len();
    let mut deleted = 0;
    // the `last` objects first, then the rest
    for group in [tail, head] {
        let n = group.len();
        if let Err((done, e)) = delete_keys(&src, group) {
            deleted += done;
            return Err(Error::io(
                from,
                std::io::Error::new(
                    e.kind(),
                    format!(
                        "moved to {} (complete there), but deleting the source failed ({e}): \
                         {} of its {total} objects are left under {}; delete them by hand",
                        to.display(),
                        total - deleted,
                        from.display()
                    ),
                ),
            ));
        }
        deleted += n;
    }
    Ok(())
}

/// Server-side copies `(from, to)` within `r`'s store, [`STORE_CONCURRENCY`] at a time.
fn copy_keys(
    r: &Remote,
    pairs: Vec<(object_store::path::Path, object_store::path::Path)>,
) -> std::io::Result<()> {
    use futures::StreamExt;
    let results: Vec<_> = block_on(
        futures::stream::iter(pairs.into_iter().map(|(a, b)| async move {
            count(Req::Put);
            r.store.copy(&a, &b).await.map_err(|e| {
                let e = obj_err(e);
                std::io::Error::new(e.kind(), format!("copying {a}: {e}"))
            })
        }))
        .buffer_unordered(STORE_CONCURRENCY)
        .collect(),
    );
    results.into_iter().collect()
}

/// An entry of a directory listing with its metadata (orphan clean).
#[derive(Debug, Clone)]
pub struct FileStatus {
    pub name: String,
    pub path: PathBuf,
    pub is_dir: bool,
    /// A regular file (not a directory, not a symbolic link).
    pub is_file: bool,
    pub size: u64,
    /// Last modification, milliseconds since the epoch; None where unknown (object store
    /// "directories").
    pub mtime_millis: Option<i64>,
}

/// The entries of `dir` (not recursive, not following symbolic links) with their metadata;
/// empty if `dir` does not exist. One LIST request on an object store, where "directories"
/// are common key prefixes.
pub fn list_status(dir: &Path) -> Result<Vec<FileStatus>> {
    #[cfg(test)]
    LISTED.with(|l| l.borrow_mut().push(dir.to_path_buf()));
    if let Some(r) = remote_of(dir)? {
        count(Req::List);
        let l = block_on(r.store.list_with_delimiter(Some(&r.key)))
            .map_err(|e| Error::io(dir, obj_err(e)))?;
        let mut out = vec![];
        for p in l.common_prefixes {
            if let Some(n) = p.filename() {
                out.push(FileStatus {
                    name: n.to_string(),
                    path: dir.join(n),
                    is_dir: true,
                    is_file: false,
                    size: 0,
                    mtime_millis: None,
                });
            }
        }
        for m in l.objects {
            if let Some(n) = m.location.filename() {
                out.push(FileStatus {
                    name: n.to_string(),
                    path: dir.join(n),
                    is_dir: false,
                    is_file: true,
                    size: m.size,
                    mtime_millis: Some(m.last_modified.timestamp_millis()),
                });
            }
        }
        return Ok(out);
    }
    let rd = match fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(vec![]),
        Err(e) => return Err(Error::io(dir, e)),
    };
    let mut out = vec![];
    for entry in rd {
        let entry = entry.map_err(|e| Error::io(dir, e))?;
        let path = entry.path();
        let md = match fs::symlink_metadata(&path) {
            Ok(md) => md,
            // removed since it was listed (a concurrent writer's temp file)
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(Error::io(&path, e)),
        };
        let mtime_millis = md
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .and_then(|d| i64::try_from(d.as_millis()).ok());
        out.push(FileStatus {
            name: entry.file_name().to_string_lossy().into_owned(),
            path,
            is_dir: md.is_dir(),
            is_file: md.is_file(),
            size: md.len(),
            mtime_millis,
        });
    }
    Ok(out)
}

/// The status of `path` (a file, or a directory), None if nothing is there. Locally one
/// `stat`; on an object store one HEAD of the object and, if there is none, one LIST of the
/// prefix (a "directory" exists while a key lies under it).
pub fn status(path: &Path) -> Result<Option<FileStatus>> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let Some(r) = remote_of(path)? else {
        let md = match fs::metadata(path) {
            Ok(md) => md,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io(path, e)),
        };
        let mtime_millis = md
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .and_then(|d| i64::try_from(d.as_millis()).ok());
        return Ok(Some(FileStatus {
            name,
            path: path.to_path_buf(),
            is_dir: md.is_dir(),
            is_file: md.is_file(),
            size: md.len(),
            mtime_millis,
        }));
    };
    count(Req::Head);
    match block_on(r.store.head(&r.key)) {
        Ok(m) => Ok(Some(FileStatus {
            name,
            path: path.to_path_buf(),
            is_dir: false,
            is_file: true,
            size: m.size,
            mtime_millis: Some(m.last_modified.timestamp_millis()),
        })),
        Err(object_store::Error::NotFound { .. }) => Ok(is_dir(path).then(|| FileStatus {
            name,
            path: path.to_path_buf(),
            is_dir: true,
            is_file: false,
            size: 0,
            mtime_millis: None,
        })),
        Err(e) => Err(Error::io(path, obj_err(e))),
    }
}

/// Move the file `from` to `to` if `to` does not exist: `Ok(false)` if it does (nothing
/// moved). Locally a rename (atomic; the check and the rename are two steps, so a racing
/// creator of `to` can be overwritten, as with Hadoop's local rename). On an object store
/// (no rename) a server-side copy then a delete of `from`, as Hadoop's S3A rename: not atomic.
pub fn rename_file(from: &Path, to: &Path) -> Result<bool> {
    let Some((src, dst)) = move_stores(from, to)? else {
        if to.exists() {
            return Ok(false);
        }
        if let Some(parent) = to.parent() {
            mkdirs(parent)?;
        }
        return fs::rename(from, to)
            .map(|()| true)
            .map_err(|e| Error::io(from, e));
    };
    if exists(to) {
        return Ok(false);
    }
    count(Req::Put);
    block_on(src.store.copy(&src.key, &dst.key)).map_err(|e| Error::io(from, obj_err(e)))?;
    count(Req::Delete);
    block_on(src.store.delete(&src.key)).map_err(|e| {
        Error::io(
            from,
            std::io::Error::other(format!(
                "copied to {}, but deleting the source failed: {}",
                to.display(),
                obj_err(e)
            )),
        )
    })?;
    Ok(true)
}

/// File names in `dir` (not recursive); empty if `dir` does not exist. On an object store, one
/// LIST request; sub-"directories" are listed by name as locally.
pub fn list_names(dir: &Path) -> Result<Vec<String>> {
    Ok(list_status(dir)?.into_iter().map(|s| s.name).collect())
}

fn temp_path_for(path: &Path) -> PathBuf {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let tmp = format!(".{name}.{}.tmp", uuid::Uuid::new_v4());
    path.with_file_name(tmp)
}

/// Create the new local file `path`, and its directory if missing. If the directory vanishes
/// between the two (`remove_orphan_files` removes empty bucket and partition directories), it
/// is created again, once.
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

fn write_synced(path: &Path, bytes: &[u8], sync: bool) -> Result<()> {
    let mut f = create_new_file(path)?;
    f.write_all(bytes).map_err(|e| Error::io(path, e))?;
    if !sync {
        return Ok(());
    }
    f.sync_all().map_err(|e| Error::io(path, e))
}

fn put(r: &Remote, path: &Path, bytes: &[u8], mode: PutMode) -> std::io::Result<()> {
    block_on(put_async(r, path, bytes, mode))
}

async fn put_async(r: &Remote, path: &Path, bytes: &[u8], mode: PutMode) -> std::io::Result<()> {
    count(Req::Put);
    let opts = PutOptions {
        mode,
        ..Default::default()
    };
    let payload = PutPayload::from(bytes::Bytes::copy_from_slice(bytes));
    r.store
        .put_opts(&r.key, payload, opts)
        .await
        .map(|_| ())
        .map_err(obj_err)
        .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", path.display())))
}

/// Write a file that has a unique name (data files, manifests): temp file, fsync, rename.
/// Readers never see a partial file under the final name (on an object store a PUT is atomic).
pub fn write_new(path: &Path, bytes: &[u8]) -> Result<()> {
    write_new_with(path, bytes, true)
}

/// [`write_new`] without the fsync, for files a commit writes before the snapshot that names
/// them: the commit makes them durable together with [`sync_files`] before it creates the
/// snapshot (one disk flush in parallel instead of one after another, on the commit's critical
/// path). Until then no snapshot names them, so a crash can only leave an unreferenced file.
pub fn write_new_unsynced(path: &Path, bytes: &[u8]) -> Result<()> {
    write_new_with(path, bytes, false)
}

/// [`write_new_unsynced`] of each `(path, bytes)`; on an object store the PUTs go out
/// [`STORE_CONCURRENCY`] at a time (a commit's manifests in one round trip). The first error
/// is returned after every write ended (the caller removes what was written).
pub fn write_new_unsynced_all(files: &[(PathBuf, Vec<u8>)]) -> Result<()> {
    use futures::StreamExt;
    let mut remote = vec![];
    for (p, bytes) in files {
        match remote_of(p)? {
            None => write_new_unsynced(p, bytes)?,
            Some(r) => remote.push((r, p, bytes)),
        }
    }
    let results: Vec<Result<()>> = block_on(
        futures::stream::iter(remote.into_iter().map(|(r, p, bytes)| async move {
            put_async(&r, p, bytes, PutMode::Overwrite)
                .await
                .map_err(|e| Error::io(p, e))
        }))
        .buffer_unordered(STORE_CONCURRENCY)
        .collect(),
    );
    results.into_iter().collect()
}

/// Make the local files `paths` durable (fsync), several at once: their disk writes overlap
/// (and a journaling file system shares its commits between them) instead of waiting one for
/// another. Files on an object store are skipped (a PUT is durable when it returns).
pub fn sync_files(paths: &[PathBuf]) -> Result<()> {
    let mut local = vec![];
    for p in paths {
        if remote_of(p)?.is_none() {
            local.push(p.as_path());
        }
    }
    let sync = |p: &Path| -> Result<()> {
        File::open(p)
            .and_then(|f| f.sync_all())
            .map_err(|e| Error::io(p, e))
    };
    if local.len() < 2 {
        return local.into_iter().try_for_each(sync);
    }
    // a scoped thread per file (at most SYNC_THREADS at a time), not rayon: the callers may
    // hold the pool's threads, and the threads only wait for the disk
    const SYNC_THREADS: usize = 8;
    for chunk in local.chunks(SYNC_THREADS) {
        std::thread::scope(|s| {
            let handles: Vec<_> = chunk.iter().map(|&p| s.spawn(move || sync(p))).collect();
            handles.into_iter().try_for_each(|h| {
                h.join()
                    .map_err(|_| Error::Internal("fsync thread panicked".into()))?
            })
        })?;
    }
    Ok(())
}

fn write_new_with(path: &Path, bytes: &[u8], sync: bool) -> Result<()> {
    if let Some(r) = remote_of(path)? {
        return put(&r, path, bytes, PutMode::Overwrite).map_err(|e| Error::io(path, e));
    }
    if let Some(parent) = path.parent() {
        mkdirs(parent)?;
    }
    let tmp = temp_path_for(path);
    let res = write_synced(&tmp, bytes, sync)
        .and_then(|_| fs::rename(&tmp, path).map_err(|e| Error::io(path, e)));
    if res.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    res
}

/// Upload the local file `local` as `path` (a data file written to local disk first): one PUT,
/// or a multipart upload for a large file. Local `path`: a rename.
pub fn upload_file(local: &Path, path: &Path) -> Result<()> {
    let Some(r) = remote_of(path)? else {
        return fs::rename(local, path).map_err(|e| Error::io(path, e));
    };
    remote::upload(&r, local, path)
}

/// Create `path` with `bytes` only if it does not exist yet, atomically: the content is written
/// and fsynced to a temp file which is then hard-linked to the final name. `link` fails if the
/// name exists, so two racing writers can never both succeed nor overwrite each other.
/// On an object store, a conditional create-only PUT (`If-None-Match: *`); a store that cannot
/// do one is refused (paimon_rs has no commit lock).
/// Returns `Ok(false)` if the name was taken.
pub fn create_exclusive(path: &Path, bytes: &[u8]) -> Result<bool> {
    if let Some(r) = remote_of(path)? {
        if !r.create_only {
            return Err(Error::unsupported(format!(
                "{}: the object store {} is not configured for conditional create-only puts \
                 (If-None-Match: *), so a commit could overwrite a concurrent one; paimon_rs \
                 has no commit lock to fall back on. Use a store that supports them and say so \
                 with 's3.conditional-put' = 'etag' (or 'fs.oss.conditional-put'; on GCS, \
                 'gs.conditional-put' = 'generation')",
                path.display(),
                r.root
            )));
        }
        return match put(&r, path, bytes, PutMode::Create) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
            Err(e) if e.kind() == std::io::ErrorKind::Unsupported => {
                Err(Error::unsupported(format!(
                    "{}: the store refuses conditional create-only puts: {e}",
                    path.display()
                )))
            }
            Err(e) => Err(Error::io(path, e)),
        };
    }
    if let Some(parent) = path.parent() {
        mkdirs(parent)?;
    }
    let tmp = temp_path_for(path);
    write_synced(&tmp, bytes, true)?;
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

/// Write the file `path` for a user (pypaimon's `FileIO.write_file`): with `overwrite`, as
/// [`write_new`] (readers never see a partial file); without, only if nothing is at `path`,
/// `Ok(false)` if something is. That check is atomic locally and on a store configured for
/// conditional puts ([`create_exclusive`]); on another store it is a HEAD then a PUT, as
/// pypaimon's own check-then-write, so a racing writer of the same name can be overwritten.
pub fn write_file(path: &Path, bytes: &[u8], overwrite: bool) -> Result<bool> {
    if overwrite {
        return write_new(path, bytes).map(|()| true);
    }
    match remote_of(path)? {
        Some(r) if !r.create_only => {
            if exists(path) || is_dir(path) {
                return Ok(false);
            }
            put(&r, path, bytes, PutMode::Overwrite).map_err(|e| Error::io(path, e))?;
            Ok(true)
        }
        _ => create_exclusive(path, bytes),
    }
}

/// Overwrite a hint file (`LATEST`): temp file then rename (atomic replace); a plain PUT on an
/// object store.
pub fn overwrite_hint(path: &Path, bytes: &[u8]) -> Result<()> {
    write_new_with(path, bytes, true)
}

/// [`overwrite_hint`] without the fsync, for the `LATEST` hint a commit moves after creating
/// its snapshot (Java's `commitLatestHint` does not sync either): a crash may leave it stale,
/// empty or missing, which its readers take as no hint and list the snapshots
/// (`SnapshotManager::latest_id`).
pub fn overwrite_hint_unsynced(path: &Path, bytes: &[u8]) -> Result<()> {
    write_new_with(path, bytes, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absolute_roots_local_paths_once_and_keeps_uris() {
        let cwd = std::env::current_dir().unwrap();
        assert_eq!(absolute(Path::new("wh")).unwrap(), cwd.join("wh"));
        assert_eq!(
            absolute(Path::new("file:///tmp/wh")).unwrap(),
            Path::new("/tmp/wh")
        );
        assert_eq!(
            absolute(Path::new("/tmp/wh")).unwrap(),
            Path::new("/tmp/wh")
        );
        assert_eq!(
            absolute(Path::new("s3://b/wh")).unwrap(),
            Path::new("s3://b/wh")
        );
        assert!(absolute(Path::new("")).is_err());
        // a table-relative path under an absolute root resolves once
        let root = absolute(Path::new("wh/db.db/t")).unwrap();
        assert_eq!(resolve(&root, "bucket-0"), cwd.join("wh/db.db/t/bucket-0"));
    }

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

    #[test]
    fn unsynced_writes_are_synced_together_and_a_missing_file_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let paths: Vec<PathBuf> = (0..11).map(|i| dir.path().join(format!("m-{i}"))).collect();
        for (i, p) in paths.iter().enumerate() {
            write_new_unsynced(p, format!("{i}").as_bytes()).unwrap();
        }
        overwrite_hint_unsynced(&dir.path().join("LATEST"), b"3").unwrap();
        overwrite_hint_unsynced(&dir.path().join("LATEST"), b"4").unwrap();
        assert_eq!(read(&dir.path().join("LATEST")).unwrap(), b"4");
        // more files than sync threads: synced in chunks
        sync_files(&paths).unwrap();
        sync_files(&paths[..1]).unwrap();
        sync_files(&[]).unwrap();
        let mut names = list_names(dir.path()).unwrap();
        names.sort();
        assert_eq!(names.len(), 12, "no temp files left behind: {names:?}");
        // a file gone before the snapshot that would name it is created: the commit fails
        let gone = dir.path().join("m-gone");
        let mut with_gone = paths.clone();
        with_gone.insert(3, gone.clone());
        let err = sync_files(&with_gone).unwrap_err().to_string();
        assert!(err.contains("m-gone"), "{err}");
        // object-store paths are skipped (a PUT is durable when it returns)
        sync_files(&[PathBuf::from("memory://io-sync/wh/t/manifest/m-0")]).unwrap();
    }

    #[test]
    fn object_store_paths_go_through_the_same_functions() {
        let root = Path::new("memory://io-fns/wh/t");
        let snap = root.join("snapshot").join("snapshot-1");
        assert!(!exists(&snap));
        assert!(create_exclusive(&snap, b"a").unwrap());
        assert!(
            !create_exclusive(&snap, b"b").unwrap(),
            "create-only: never overwritten"
        );
        assert_eq!(read(&snap).unwrap(), b"a");
        assert!(exists(&snap));
        write_new(
            &root.join("dt=a").join("bucket-0").join("data-1.parquet"),
            b"xyz",
        )
        .unwrap();
        overwrite_hint(&root.join("snapshot").join("LATEST"), b"1").unwrap();
        overwrite_hint(&root.join("snapshot").join("LATEST"), b"2").unwrap();
        assert_eq!(
            read_to_string(&root.join("snapshot").join("LATEST")).unwrap(),
            "2"
        );
        let mut names = list_names(root).unwrap();
        names.sort();
        assert_eq!(names, vec!["dt=a".to_string(), "snapshot".to_string()]);
        let st = list_status(&root.join("dt=a").join("bucket-0")).unwrap();
        assert_eq!(st.len(), 1);
        assert!(st[0].is_file && st[0].size == 3 && st[0].mtime_millis.is_some());
        assert_eq!(
            st[0].path,
            root.join("dt=a").join("bucket-0").join("data-1.parquet")
        );
        assert!(is_dir(&root.join("dt=a")));
        assert!(!is_dir(&root.join("dt=b")));
        assert_eq!(file_size(&snap).unwrap(), 1);
        let e = read_referenced(&root.join("manifest").join("manifest-x"), "snapshot 1");
        assert!(e.unwrap_err().to_string().contains("missing"));
        remove_file_if_exists(&snap).unwrap();
        remove_file_if_exists(&snap).unwrap();
        assert!(!exists(&snap));
        remove_dir_all(root).unwrap();
        assert!(list_names(root).unwrap().is_empty());
    }

    #[test]
    fn rename_dir_on_an_object_store_copies_then_deletes() {
        let from = Path::new("memory://io-rename/wh/db.db/a");
        let to = Path::new("memory://io-rename/wh/d2.db/b");
        let names = [
            "schema/schema-0",
            "snapshot/snapshot-1",
            "dt=a/bucket-0/data-1.parquet",
        ];
        for n in names {
            write_new(&from.join(n), n.as_bytes()).unwrap();
        }
        // a sibling sharing the name's prefix is not part of the directory
        write_new(Path::new("memory://io-rename/wh/db.db/ab/x"), b"x").unwrap();
        rename_dir(from, to, "schema").unwrap();
        for n in names {
            assert_eq!(read(&to.join(n)).unwrap(), n.as_bytes());
            assert!(!exists(&from.join(n)));
        }
        assert!(!is_dir(from));
        assert!(exists(Path::new("memory://io-rename/wh/db.db/ab/x")));
        let e = rename_dir(from, to, "schema").unwrap_err().to_string();
        assert!(e.contains("nothing to move"), "{e}");
        // locally, a rename
        let dir = tempfile::tempdir().unwrap();
        write_new(&dir.path().join("a").join("f"), b"1").unwrap();
        rename_dir(&dir.path().join("a"), &dir.path().join("b"), "schema").unwrap();
        assert_eq!(read(&dir.path().join("b").join("f")).unwrap(), b"1");
        assert!(rename_dir(&dir.path().join("b"), to, "schema").is_err());
    }

    #[test]
    fn status_rename_file_and_write_file_local_and_on_an_object_store() {
        let dir = tempfile::tempdir().unwrap();
        let local = dir.path().join("t");
        for root in [local.as_path(), Path::new("memory://io-fileio/wh/t")] {
            let a = root.join("d").join("a");
            assert!(status(&a).unwrap().is_none());
            assert!(write_file(&a, b"12", false).unwrap());
            assert!(!write_file(&a, b"x", false).unwrap(), "not overwritten");
            assert_eq!(read(&a).unwrap(), b"12");
            assert!(write_file(&a, b"345", true).unwrap());
            let st = status(&a).unwrap().unwrap();
            assert!(st.is_file && !st.is_dir && st.size == 3 && st.mtime_millis.is_some());
            let d = status(&root.join("d")).unwrap().unwrap();
            assert!(d.is_dir && !d.is_file);
            let b = root.join("d").join("b");
            assert!(rename_file(&a, &b).unwrap());
            assert!(status(&a).unwrap().is_none());
            assert_eq!(read(&b).unwrap(), b"345");
            write_new(&a, b"new").unwrap();
            assert!(
                !rename_file(&a, &b).unwrap(),
                "target exists: nothing moved"
            );
            assert_eq!(read(&b).unwrap(), b"345");
            assert_eq!(read(&a).unwrap(), b"new");
        }
        let e = rename_file(
            &local.join("d").join("a"),
            Path::new("memory://io-fileio/x"),
        );
        assert!(e.unwrap_err().to_string().contains("between a local disk"));
    }
}
