//! Data files on object stores: ranged reads for the Parquet reader (its footer and the column
//! chunks it asks for, never a LIST), whole-object reads of small files, and uploads (one PUT,
//! or a multipart upload for a large file) of data files written to local disk first.

use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

use bytes::Bytes;
use object_store::{GetOptions, GetRange, ObjectStore, ObjectStoreExt, WriteMultipart};
use parquet::errors::{ParquetError, Result as PqResult};
use parquet::file::reader::{ChunkReader, Length};

use super::obj_err;
use super::store::{block_on, count, Remote, Req};
use crate::error::{Error, Result};

/// A file this small (or smaller) is read with one GET of the whole object, not a footer GET
/// followed by ranged GETs of its column chunks: [`PIECE_BYTES`], the largest ranged GET, so
/// such a file would cost one body GET anyway (see [`open_plan`]).
pub const WHOLE_OBJECT_BYTES: u64 = PIECE_BYTES;
/// The tail fetched with the first GET of a larger file: its Parquet footer, usually whole.
const TAIL_BYTES: u64 = 256 << 10;
/// Multipart uploads for files above this size, in parts of this size.
pub const PART_BYTES: usize = 16 << 20;
/// Parts uploaded at the same time.
const PART_CONCURRENCY: usize = 4;

/// Positional reads: a local file, or an object.
pub trait ReadAt: Send + Sync {
    fn read_at(&self, start: u64, len: usize) -> io::Result<Bytes>;

    /// The byte ranges a reader is about to ask for (a Parquet file's projected column
    /// chunks): an object fetches them ahead, concurrently; a local file does nothing.
    fn prefetch(&self, _ranges: &[std::ops::Range<u64>]) -> io::Result<()> {
        Ok(())
    }
}

impl ReadAt for std::fs::File {
    fn read_at(&self, start: u64, len: usize) -> io::Result<Bytes> {
        use std::os::unix::fs::FileExt;
        let mut buf = vec![0u8; len];
        self.read_exact_at(&mut buf, start)?;
        Ok(buf.into())
    }
}

impl ReadAt for Bytes {
    fn read_at(&self, start: u64, len: usize) -> io::Result<Bytes> {
        let s = usize::try_from(start).unwrap_or(usize::MAX);
        if s.checked_add(len).is_none_or(|e| e > self.len()) {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("reading {len} bytes at {start} of {}", self.len()),
            ));
        }
        Ok(self.slice(s..s + len))
    }
}

/// An object opened for reading: its size, and its bytes from `cached_from` to the end (the
/// whole object if small, else its tail) fetched by the first GET.
#[derive(Debug)]
pub struct RemoteObject {
    remote: Remote,
    size: u64,
    /// The ETag of the version the first GET read (None if the store gives none): every later
    /// ranged GET of this object asks for it (`If-Match`), so that an object replaced while
    /// it is read fails the read instead of mixing bytes of two versions.
    etag: Option<String>,
    cached_from: u64,
    cached: Bytes,
    /// Blocks of [`READ_BLOCK`] bytes fetched for smaller reads (the Parquet reader asks page
    /// by page): `(start, bytes)`, the newest last, at most [`BLOCKS_KEPT`].
    blocks: std::sync::Mutex<Vec<(u64, Bytes)>>,
    /// Ranges fetched ahead by [`ReadAt::prefetch`], kept while the object is open.
    pieces: Pieces,
}

/// `(start, bytes)` sorted by start, not overlapping.
type Pieces = std::sync::Arc<std::sync::RwLock<Vec<(u64, Bytes)>>>;

/// Prefetched ranges are rounded out to this (a multiple of the checksum block the verified
/// reader reads whole), and ranges less than [`MERGE_GAP`] apart are fetched as one.
const ALIGN: u64 = 64 << 10;
const MERGE_GAP: u64 = 1 << 20;
/// Largest ranged GET of a prefetch (S3's guidance for ranged reads is 8-16 MiB; a store that
/// charges per request, or per object touched as moto does, prefers fewer).
const PIECE_BYTES: u64 = 16 << 20;
/// GETs of one object in flight at once.
const FETCH_CONCURRENCY: usize = 8;
/// At most this much of one object is fetched ahead (the first ranges; the rest is read as
/// asked for): the memory of an open file, of which a merge holds two per sorted run.
const PREFETCH_OBJECT_BYTES: u64 = 64 << 20;

/// Bytes `start..end` from `pieces`, if they hold all of them (a slice of one piece, or a copy
/// across adjacent ones).
fn from_pieces(pieces: &[(u64, Bytes)], start: u64, end: u64) -> Option<Bytes> {
    let i = pieces
        .partition_point(|(s, _)| *s <= start)
        .checked_sub(1)?;
    let (s, b) = &pieces[i];
    let piece_end = s + b.len() as u64;
    if start >= piece_end {
        return None;
    }
    if end <= piece_end {
        return Some(b.slice((start - s) as usize..(end - s) as usize));
    }
    let mut out = Vec::with_capacity((end - start) as usize);
    let mut pos = start;
    for (s, b) in &pieces[i..] {
        if *s > pos {
            return None;
        }
        let e = (s + b.len() as u64).min(end);
        out.extend_from_slice(&b[(pos - s) as usize..(e - s) as usize]);
        pos = e;
        if pos >= end {
            return Some(out.into());
        }
    }
    None
}

/// `ranges` rounded out to [`ALIGN`] (within `0..size`), sorted, merged across small gaps, cut
/// into pieces of at most [`PIECE_BYTES`].
fn plan_pieces(ranges: &[std::ops::Range<u64>], size: u64) -> Vec<std::ops::Range<u64>> {
    let mut rs: Vec<_> = ranges
        .iter()
        .filter(|r| r.start < r.end)
        .map(|r| (r.start / ALIGN * ALIGN)..(r.end.div_ceil(ALIGN) * ALIGN).min(size))
        .collect();
    rs.sort_by_key(|r| r.start);
    let mut merged: Vec<std::ops::Range<u64>> = vec![];
    for r in rs {
        match merged.last_mut() {
            Some(m) if r.start <= m.end + MERGE_GAP => m.end = m.end.max(r.end),
            _ => merged.push(r),
        }
    }
    merged
        .into_iter()
        .flat_map(|r| {
            (r.start..r.end)
                .step_by(PIECE_BYTES as usize)
                .map(move |s| s..(s + PIECE_BYTES).min(r.end))
        })
        .collect()
}

/// A read smaller than this that misses the cached bytes fetches this much from its start (one
/// GET for many pages of a column chunk instead of one per page).
const READ_BLOCK: u64 = 8 << 20;
const BLOCKS_KEPT: usize = 2;

/// The first GET of an object being opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OpenGet {
    /// The whole object, in one GET: no footer GET first.
    Whole,
    /// Its last this many bytes (a Parquet footer, usually whole); the column chunks the reader
    /// projects come after with ranged GETs ([`plan_pieces`]).
    Tail(u64),
}

/// How an object of `size` bytes (what the manifest records; None if unknown) is opened:
/// whole if asked (`whole`: a reader that reads every byte) or at most
/// [`WHOLE_OBJECT_BYTES`] (one GET instead of a footer GET and a body GET, the bytes of the
/// columns left out of a projection being cheaper than a round trip at this size); else its
/// tail, so that a narrow projection of a large file fetches only its columns' chunks. An
/// object of unknown size is asked for its tail, and a small one comes whole with it.
pub(crate) fn open_plan(size: Option<u64>, whole: bool) -> OpenGet {
    if whole || size.is_some_and(|s| s <= WHOLE_OBJECT_BYTES) {
        OpenGet::Whole
    } else {
        OpenGet::Tail(TAIL_BYTES)
    }
}

/// Whole-object GETs sent ahead of the files' opens (the data files of a split a read reaches
/// next, see [`fetch_ahead`]), by path: `(bytes, the GET's task)`, taken by the open.
type Ahead = std::collections::HashMap<std::path::PathBuf, (u64, AheadGet)>;
type AheadGet = tokio::task::JoinHandle<io::Result<Body>>;

/// A whole object's bytes as one GET brought them, with its size and ETag.
struct Body {
    size: u64,
    etag: Option<String>,
    bytes: Bytes,
}

/// The body of `res` (a GET of the whole object or of a range) in one buffer, filled on the
/// I/O runtime as the chunks arrive: one copy (the chunks into the buffer, sized from the
/// response), made while the rest of the body is still on its way, instead of the chunks
/// kept and joined by the thread that opens the file once the last one is in.
async fn collect_body(res: object_store::GetResult) -> object_store::Result<Body> {
    use futures::StreamExt;
    let size = res.meta.size;
    let etag = res.meta.e_tag.clone();
    let len = usize::try_from(res.range.end - res.range.start).unwrap_or(0);
    let mut body = res.into_stream();
    let Some(first) = body.next().await.transpose()? else {
        return Ok(Body {
            size,
            etag,
            bytes: Bytes::new(),
        });
    };
    if first.len() >= len {
        return Ok(Body {
            size,
            etag,
            bytes: first,
        });
    }
    let mut all = Vec::with_capacity(len);
    all.extend_from_slice(&first);
    drop(first);
    while let Some(c) = body.next().await {
        all.extend_from_slice(&c?);
    }
    Ok(Body {
        size,
        etag,
        bytes: all.into(),
    })
}

fn ahead() -> &'static std::sync::Mutex<Ahead> {
    static A: std::sync::OnceLock<std::sync::Mutex<Ahead>> = std::sync::OnceLock::new();
    A.get_or_init(Default::default)
}

/// At most this many bytes of objects fetched ahead and not yet opened, in the whole process.
pub const AHEAD_BYTES: u64 = 256 << 20;
static AHEAD_HELD: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Start whole-object GETs of `files` (`(path, size the manifest records)`) on the I/O runtime,
/// in this order, for their opens to take ([`RemoteObject::open_path`]): only objects that open
/// whole anyway ([`open_plan`]), not already on their way, within [`AHEAD_BYTES`]. Returns the
/// paths it sent GETs for: the caller gives untaken ones up with [`forget_ahead`].
pub fn fetch_ahead(files: &[(std::path::PathBuf, u64)]) -> Vec<std::path::PathBuf> {
    use std::sync::atomic::Ordering::SeqCst;
    let mut sent = vec![];
    let Ok(mut map) = ahead().lock() else {
        return sent;
    };
    for (path, size) in files {
        if open_plan(Some(*size), false) != OpenGet::Whole || map.contains_key(path) {
            continue;
        }
        let Ok(Some(r)) = super::store::remote(path) else {
            continue;
        };
        if AHEAD_HELD
            .fetch_update(SeqCst, SeqCst, |h| {
                (h + size <= AHEAD_BYTES).then_some(h + size)
            })
            .is_err()
        {
            break;
        }
        count(Req::GetAhead);
        let get = super::store::spawn(async move {
            let res = r.store.get(&r.key).await.map_err(obj_err)?;
            collect_body(res).await.map_err(obj_err)
        });
        map.insert(path.clone(), (*size, get));
        sent.push(path.clone());
    }
    sent
}

/// Give up the GETs [`fetch_ahead`] sent for `paths` that no open took (a read that ended
/// early, or failed): aborted if still running, their bytes dropped.
pub fn forget_ahead(paths: &[std::path::PathBuf]) {
    let Ok(mut map) = ahead().lock() else {
        return;
    };
    for p in paths {
        if let Some((size, get)) = map.remove(p) {
            get.abort();
            AHEAD_HELD.fetch_sub(size, std::sync::atomic::Ordering::SeqCst);
        }
    }
}

impl RemoteObject {
    /// Open the object of `path` (served by `remote`): the whole object fetched ahead for it
    /// ([`fetch_ahead`]), if any, else as [`RemoteObject::open`] does.
    pub fn open_path(
        remote: Remote,
        path: &Path,
        size: Option<u64>,
        whole: bool,
    ) -> io::Result<RemoteObject> {
        let got = ahead().lock().ok().and_then(|mut m| m.remove(path));
        let Some((held, get)) = got else {
            return RemoteObject::open(remote, size, whole);
        };
        AHEAD_HELD.fetch_sub(held, std::sync::atomic::Ordering::SeqCst);
        let body = block_on(get).map_err(io::Error::other)??;
        Ok(RemoteObject {
            remote,
            size: body.size,
            etag: body.etag,
            cached_from: 0,
            cached: body.bytes,
            blocks: Default::default(),
            pieces: Default::default(),
        })
    }

    /// Open the object of `remote` with one GET, as [`open_plan`] says for its `size` (what
    /// the manifest records, where known) and `whole`. The caller checks the size.
    pub fn open(remote: Remote, size: Option<u64>, whole: bool) -> io::Result<RemoteObject> {
        count(Req::Get);
        let range = match open_plan(size, whole) {
            OpenGet::Whole => None,
            OpenGet::Tail(n) => Some(GetRange::Suffix(n)),
        };
        let opts = GetOptions {
            range,
            ..Default::default()
        };
        let (cached_from, body) = block_on(async {
            let r = remote.store.get_opts(&remote.key, opts).await?;
            let from = r.range.start;
            Ok::<_, object_store::Error>((from, collect_body(r).await?))
        })
        .map_err(obj_err)?;
        Ok(RemoteObject {
            remote,
            size: body.size,
            etag: body.etag,
            cached_from,
            cached: body.bytes,
            blocks: Default::default(),
            pieces: Default::default(),
        })
    }

    pub fn size(&self) -> u64 {
        self.size
    }

    /// Bytes `range` of the version of the object the first GET read: a GET that asks for its
    /// ETag (`If-Match`); an object replaced since it was opened is an error naming it.
    async fn get_range(&self, range: std::ops::Range<u64>) -> io::Result<Bytes> {
        let opts = GetOptions {
            range: Some(GetRange::Bounded(range)),
            if_match: self.etag.clone(),
            ..Default::default()
        };
        let res = self.remote.store.get_opts(&self.remote.key, opts).await;
        let res = match res {
            Err(object_store::Error::Precondition { .. }) => {
                return Err(io::Error::other(format!(
                    "object '{}' was replaced while it was read (its ETag is no longer {}): \
                     refusing to mix bytes of two versions",
                    self.remote.key,
                    self.etag.as_deref().unwrap_or("?")
                )))
            }
            r => r.map_err(obj_err)?,
        };
        res.bytes().await.map_err(obj_err)
    }

    /// The whole object, if the first GET fetched it.
    pub fn whole(&self) -> Option<Bytes> {
        (self.cached_from == 0).then(|| self.cached.clone())
    }
}

impl ReadAt for RemoteObject {
    fn read_at(&self, start: u64, len: usize) -> io::Result<Bytes> {
        let end = start + len as u64;
        if end > self.size {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "reading {len} bytes at {start} of a {} byte object",
                    self.size
                ),
            ));
        }
        if start >= self.cached_from {
            let off = (start - self.cached_from) as usize;
            return Ok(self.cached.slice(off..off + len));
        }
        if let Some(b) = self
            .pieces
            .read()
            .ok()
            .and_then(|p| from_pieces(&p, start, end))
        {
            return Ok(b);
        }
        if let Ok(blocks) = self.blocks.lock() {
            if let Some((from, b)) = blocks
                .iter()
                .rev()
                .find(|(from, b)| start >= *from && end <= from + b.len() as u64)
            {
                let off = (start - from) as usize;
                return Ok(b.slice(off..off + len));
            }
        }
        if len as u64 >= READ_BLOCK {
            count(Req::Get);
            return block_on(self.get_range(start..end));
        }
        // fetch a block from `start` (up to the cached tail or the end of the object)
        let to = (start + READ_BLOCK).min(self.cached_from).max(end);
        count(Req::Get);
        let b = block_on(self.get_range(start..to))?;
        let out = b.slice(0..len);
        if let Ok(mut blocks) = self.blocks.lock() {
            if blocks.len() >= BLOCKS_KEPT {
                blocks.remove(0);
            }
            blocks.push((start, b));
        }
        Ok(out)
    }

    fn prefetch(&self, ranges: &[std::ops::Range<u64>]) -> io::Result<()> {
        use futures::StreamExt;
        // what the first GET brought (the tail) is not fetched again
        let wanted: Vec<_> = ranges
            .iter()
            .filter(|r| r.start < self.cached_from)
            .map(|r| r.start..r.end.min(self.cached_from))
            .collect();
        let mut total = 0;
        let plan: Vec<_> = plan_pieces(&wanted, self.cached_from)
            .into_iter()
            .take_while(|r| {
                total += r.end - r.start;
                total <= PREFETCH_OBJECT_BYTES
            })
            .collect();
        if plan.is_empty() {
            return Ok(());
        }
        let fetched: Vec<io::Result<(u64, Bytes)>> = block_on(
            futures::stream::iter(plan.into_iter().map(|r| async move {
                count(Req::Get);
                let b = self.get_range(r.clone()).await?;
                Ok((r.start, b))
            }))
            .buffer_unordered(FETCH_CONCURRENCY)
            .collect(),
        );
        let mut got = fetched.into_iter().collect::<io::Result<Vec<_>>>()?;
        if let Ok(mut p) = self.pieces.write() {
            p.append(&mut got);
            p.sort_by_key(|(s, _)| *s);
        }
        Ok(())
    }
}

impl Length for RemoteObject {
    fn len(&self) -> u64 {
        self.size
    }
}

const READ_CHUNK: u64 = 1 << 20;

/// A `Read` over an owned object (ORC and Avro readers of large remote files).
pub struct ObjectCursor {
    obj: RemoteObject,
    pos: u64,
}

impl ObjectCursor {
    pub fn new(obj: RemoteObject) -> Self {
        ObjectCursor { obj, pos: 0 }
    }
}

impl Read for ObjectCursor {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let left = self.obj.size.saturating_sub(self.pos);
        let n = (out.len() as u64).min(left).min(READ_CHUNK) as usize;
        if n == 0 {
            return Ok(0);
        }
        let b = self.obj.read_at(self.pos, n)?;
        out[..n].copy_from_slice(&b);
        self.pos += n as u64;
        Ok(n)
    }
}

impl Seek for ObjectCursor {
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        let p = match pos {
            SeekFrom::Start(p) => p as i128,
            SeekFrom::End(d) => self.obj.size as i128 + d as i128,
            SeekFrom::Current(d) => self.pos as i128 + d as i128,
        };
        if p < 0 {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "seek before 0"));
        }
        self.pos = p as u64;
        Ok(self.pos)
    }
}

impl ChunkReader for RemoteObject {
    type T = ChunkedReadOwned;

    fn get_read(&self, start: u64) -> PqResult<Self::T> {
        // parquet asks for a reader to the end of the file; hand out the bytes lazily
        let n = READ_CHUNK.min(self.size.saturating_sub(start));
        let first = self
            .read_at(start, n as usize)
            .map_err(|e| ParquetError::External(Box::new(e)))?;
        Ok(ChunkedReadOwned {
            remote: self.remote.clone(),
            pieces: self.pieces.clone(),
            pos: start + n,
            end: self.size,
            buf: first,
        })
    }

    fn get_bytes(&self, start: u64, length: usize) -> PqResult<Bytes> {
        self.read_at(start, length)
            .map_err(|e| ParquetError::External(Box::new(e)))
    }
}

/// [`ChunkedRead`] owning its object handle (parquet's `ChunkReader::T` is `'static`).
pub struct ChunkedReadOwned {
    remote: Remote,
    pieces: Pieces,
    pos: u64,
    end: u64,
    buf: Bytes,
}

impl Read for ChunkedReadOwned {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.buf.is_empty() {
            if self.pos >= self.end {
                return Ok(0);
            }
            let n = READ_CHUNK.min(self.end - self.pos);
            let pre = self
                .pieces
                .read()
                .ok()
                .and_then(|p| from_pieces(&p, self.pos, self.pos + n));
            self.buf = match pre {
                Some(b) => b,
                None => {
                    count(Req::Get);
                    block_on(
                        self.remote
                            .store
                            .get_range(&self.remote.key, self.pos..self.pos + n),
                    )
                    .map_err(obj_err)?
                }
            };
            self.pos += n;
        }
        let n = out.len().min(self.buf.len());
        out[..n].copy_from_slice(&self.buf[..n]);
        self.buf = self.buf.slice(n..);
        Ok(n)
    }
}

/// Upload the local file `local` to `r` (the object of `path`), then remove `local`: one PUT
/// up to [`PART_BYTES`], else a multipart upload ([`PART_CONCURRENCY`] parts in flight), aborted
/// on error.
pub fn upload(r: &Remote, local: &Path, path: &Path) -> Result<()> {
    let res = upload_inner(r, local, path);
    let _ = std::fs::remove_file(local);
    res
}

fn upload_inner(r: &Remote, local: &Path, path: &Path) -> Result<()> {
    let size = std::fs::metadata(local)
        .map_err(|e| Error::io(local, e))?
        .len();
    if size <= PART_BYTES as u64 {
        let bytes = std::fs::read(local).map_err(|e| Error::io(local, e))?;
        count(Req::Put);
        return block_on(r.store.put(&r.key, bytes.into()))
            .map(|_| ())
            .map_err(|e| Error::io(path, obj_err(e)));
    }
    let mut f = std::fs::File::open(local).map_err(|e| Error::io(local, e))?;
    block_on(async {
        count(Req::Put);
        let upload = r.store.put_multipart(&r.key).await?;
        let mut w = WriteMultipart::new_with_chunk_size(upload, PART_BYTES);
        let mut buf = vec![0u8; PART_BYTES];
        loop {
            let n = read_full(&mut f, &mut buf).map_err(|e| object_store::Error::Generic {
                store: "upload",
                source: Box::new(e),
            })?;
            if n == 0 {
                break;
            }
            w.wait_for_capacity(PART_CONCURRENCY).await?;
            count(Req::Put);
            w.write(&buf[..n]);
        }
        match w.finish().await {
            Ok(_) => Ok(()),
            Err(e) => Err(e),
        }
    })
    .map_err(|e| Error::io(path, obj_err(e)))
}

fn read_full(f: &mut std::fs::File, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn ranged_reads_and_uploads_through_the_memory_store() {
        let p = Path::new("memory://remote-test/wh/f.bin");
        let r = super::super::store::remote(p).unwrap().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let local = dir.path().join("x");
        let data: Vec<u8> = (0..(PART_BYTES as u32 + 1000))
            .map(|i| (i % 251) as u8)
            .collect();
        std::fs::write(&local, &data).unwrap();
        upload(&r, &local, p).unwrap();
        assert!(!local.exists(), "the local copy is removed");
        let obj = RemoteObject::open(r, None, false).unwrap();
        assert_eq!(obj.size(), data.len() as u64);
        assert!(obj.whole().is_none(), "a large object keeps its tail only");
        let b = obj.read_at(100, 5000).unwrap();
        assert_eq!(&b[..], &data[100..5100]);
        // a later read inside the block fetched for the first one is served from it
        assert_eq!(obj.blocks.lock().unwrap().len(), 1);
        assert_eq!(&obj.read_at(6000, 100).unwrap()[..], &data[6000..6100]);
        assert_eq!(obj.blocks.lock().unwrap().len(), 1, "served from the block");
        let tail = obj.read_at(data.len() as u64 - 8, 8).unwrap();
        assert_eq!(&tail[..], &data[data.len() - 8..]);
        let mut all = vec![];
        obj.get_read(10).unwrap().read_to_end(&mut all).unwrap();
        assert_eq!(&all[..], &data[10..]);
        assert!(obj.read_at(data.len() as u64 - 2, 8).is_err());
    }

    /// The GET plan: whole up to [`WHOLE_OBJECT_BYTES`] (16 MiB, a file that one ranged GET
    /// would fetch anyway) or when asked; a larger file, or one of unknown size, by its tail
    /// first. The old policy (whole only up to 8 MiB) sent a 13 MB file's footer GET first.
    #[test]
    fn open_plan_fetches_small_and_mid_sized_files_whole() {
        assert_eq!(open_plan(Some(13_300_000), false), OpenGet::Whole);
        assert_eq!(open_plan(Some(2_600_000), false), OpenGet::Whole);
        assert_eq!(open_plan(Some(WHOLE_OBJECT_BYTES), false), OpenGet::Whole);
        assert_eq!(
            open_plan(Some(WHOLE_OBJECT_BYTES + 1), false),
            OpenGet::Tail(TAIL_BYTES)
        );
        assert_eq!(open_plan(Some(128 << 20), false), OpenGet::Tail(TAIL_BYTES));
        assert_eq!(open_plan(None, false), OpenGet::Tail(TAIL_BYTES));
        assert_eq!(open_plan(Some(128 << 20), true), OpenGet::Whole);
        assert_eq!(open_plan(None, true), OpenGet::Whole);
    }

    /// Objects fetched ahead (a read's next round of splits) are taken by their opens, one GET
    /// each; objects opened by their tail are not fetched ahead; one given up is opened with a
    /// GET of its own; a missing one is NotFound at its open, as without the GET ahead.
    #[test]
    fn objects_fetched_ahead_are_taken_by_their_open() {
        use crate::io::store::gets_on_this_thread;
        use std::path::PathBuf;
        let dir = tempfile::tempdir().unwrap();
        let mut files = vec![];
        for (i, n) in [(0u8, 1000usize), (1, 2000)] {
            let p = PathBuf::from(format!("memory://remote-ahead/wh/f{i}.bin"));
            let r = super::super::store::remote(&p).unwrap().unwrap();
            let local = dir.path().join(format!("x{i}"));
            std::fs::write(&local, vec![i + 1; n]).unwrap();
            upload(&r, &local, &p).unwrap();
            files.push((p, n as u64));
        }
        let open = |p: &PathBuf, size: u64| {
            let r = super::super::store::remote(p).unwrap().unwrap();
            RemoteObject::open_path(r, p, Some(size), false)
        };
        let big = PathBuf::from("memory://remote-ahead/wh/big.bin");
        let gets = gets_on_this_thread();
        let sent = fetch_ahead(&[
            files[0].clone(),
            files[1].clone(),
            (big, WHOLE_OBJECT_BYTES + 1),
        ]);
        assert_eq!(sent, vec![files[0].0.clone(), files[1].0.clone()]);
        assert!(fetch_ahead(&files[..1]).is_empty(), "already on its way");
        assert_eq!(gets_on_this_thread() - gets, 2);
        let o = open(&files[0].0, 1000).unwrap();
        assert_eq!(
            gets_on_this_thread() - gets,
            2,
            "the open took the GET sent ahead"
        );
        assert_eq!(o.whole().unwrap(), vec![1u8; 1000]);
        forget_ahead(&sent);
        let o = open(&files[1].0, 2000).unwrap();
        assert_eq!(
            gets_on_this_thread() - gets,
            3,
            "given up: opened with a GET of its own"
        );
        assert_eq!(o.whole().unwrap(), vec![2u8; 2000]);
        let missing = PathBuf::from("memory://remote-ahead/wh/none.bin");
        let sent = fetch_ahead(&[(missing.clone(), 10)]);
        assert_eq!(sent.len(), 1);
        let e = open(&missing, 10).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound, "{e}");
    }

    #[test]
    fn prefetched_ranges_serve_later_reads() {
        let p = Path::new("memory://remote-test/wh/pre.bin");
        let r = super::super::store::remote(p).unwrap().unwrap();
        let data: Vec<u8> = (0..(PIECE_BYTES as u32 + READ_BLOCK as u32 + 5000))
            .map(|i| (i % 241) as u8)
            .collect();
        let dir = tempfile::tempdir().unwrap();
        let local = dir.path().join("x");
        std::fs::write(&local, &data).unwrap();
        upload(&r, &local, p).unwrap();
        let obj = RemoteObject::open(r, None, false).unwrap();
        // two column chunks a small gap apart, one far off, one inside the cached tail
        let end = data.len() as u64;
        let far = PIECE_BYTES + (4 << 20);
        obj.prefetch(&[
            100..70_000,
            80_000..PIECE_BYTES + 10,
            far..far + 10,
            end - 5..end,
        ])
        .unwrap();
        let pieces = obj.pieces.read().unwrap().clone();
        let spans: Vec<_> = pieces
            .iter()
            .map(|(s, b)| (*s, *s + b.len() as u64))
            .collect();
        assert_eq!(
            spans,
            vec![
                (0, PIECE_BYTES),
                (PIECE_BYTES, PIECE_BYTES + ALIGN),
                (far, far + ALIGN)
            ],
            "aligned, merged across the gap, cut at {PIECE_BYTES} bytes; the tail not fetched"
        );
        // within a piece, across two pieces, and a miss (fetched as before)
        for (s, n) in [
            (100u64, 50usize),
            (PIECE_BYTES - 10, 30),
            (PIECE_BYTES + (2 << 20), 64),
        ] {
            let got = obj.read_at(s, n).unwrap();
            assert_eq!(&got[..], &data[s as usize..s as usize + n]);
        }
        assert!(
            obj.blocks.lock().unwrap().len() == 1,
            "only the miss fetched a block"
        );
        let mut all = vec![];
        obj.get_read(10).unwrap().read_to_end(&mut all).unwrap();
        assert_eq!(&all[..], &data[10..]);
    }

    /// An object opened by its tail and replaced (same key, same size, other bytes) before its
    /// column chunks are fetched: each later GET asks for the version the tail came from, so
    /// the read fails naming the object instead of decoding a footer of one version over
    /// pages of another. Without the pin the ranged reads returned the new version's bytes.
    #[test]
    fn an_object_replaced_while_read_fails_instead_of_mixing_versions() {
        let p = Path::new("memory://remote-etag/wh/f.bin");
        let r = super::super::store::remote(p).unwrap().unwrap();
        let n = WHOLE_OBJECT_BYTES as usize + 4096;
        let dir = tempfile::tempdir().unwrap();
        let local = dir.path().join("x");
        std::fs::write(&local, vec![1u8; n]).unwrap();
        upload(&r, &local, p).unwrap();
        let obj = RemoteObject::open(r.clone(), Some(n as u64), false).unwrap();
        assert!(obj.whole().is_none(), "opened by its tail");
        assert!(obj.etag.is_some(), "the memory store gives ETags");
        assert_eq!(&obj.read_at(0, 4).unwrap()[..], &[1u8; 4]);
        // replaced under the reader
        std::fs::write(&local, vec![2u8; n]).unwrap();
        upload(&r, &local, p).unwrap();
        // a block already fetched still serves (same version); a new GET fails
        assert_eq!(&obj.read_at(8, 4).unwrap()[..], &[1u8; 4]);
        let far = READ_BLOCK + 100;
        let e = obj.read_at(far, 4).unwrap_err();
        assert!(
            e.to_string().contains("was replaced while it was read"),
            "{e}"
        );
        assert!(e.to_string().contains("wh/f.bin"), "{e}");
        let e = obj
            .prefetch(&[far..far + 10, far + ALIGN * 4..far + ALIGN * 5])
            .unwrap_err();
        assert!(
            e.to_string().contains("was replaced while it was read"),
            "{e}"
        );
        // a new open reads the new version whole
        let obj = RemoteObject::open(r, Some(n as u64), false).unwrap();
        assert_eq!(&obj.read_at(far, 4).unwrap()[..], &[2u8; 4]);
    }

    /// Bodies of several chunks are gathered into one buffer of the response's length.
    #[test]
    fn a_whole_object_fetched_ahead_arrives_in_one_buffer() {
        use std::path::PathBuf;
        let p = PathBuf::from("memory://remote-body/wh/f.bin");
        let r = super::super::store::remote(&p).unwrap().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let local = dir.path().join("x");
        let data: Vec<u8> = (0..3_000_000u32).map(|i| (i % 253) as u8).collect();
        std::fs::write(&local, &data).unwrap();
        upload(&r, &local, &p).unwrap();
        assert_eq!(
            fetch_ahead(&[(p.clone(), data.len() as u64)]),
            vec![p.clone()]
        );
        let o = RemoteObject::open_path(r, &p, Some(data.len() as u64), false).unwrap();
        assert_eq!(o.whole().unwrap(), data);
        assert!(o.etag.is_some());
    }
}
