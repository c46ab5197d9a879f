//! What the readers of every data file format share: opening a data file the manifest
//! references (a local file or an object), checking it against the manifest, and turning a
//! decoder's error or panic into a [`Error::CorruptFile`] naming the file.
//!
//! Parquet files written by this engine carry block checksums ([`super::checksum`]), checked as
//! they are read; files written by Java (any format) carry none, which is not an error. For every
//! format, the file's length must be what the manifest records, and a decoding error or a panic
//! of the decoder is a [`Error::CorruptFile`] naming the file.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use arrow_array::RecordBatch;

use super::remote::{ObjectCursor, RemoteObject};
use crate::error::{Error, Result};

/// What the manifest records of a data file: checked against the file when it is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileExpect {
    /// `DataFileMeta.file_size`.
    pub size: u64,
    /// `DataFileMeta.row_count`.
    pub rows: u64,
}

/// An opened data file: a local file, or an object (see [`super::remote`]).
pub(crate) enum Source {
    Local(File),
    Remote(RemoteObject),
}

impl Source {
    /// The bytes as a sequential reader (Avro): a local file, or an object's bytes fetched as
    /// they are read.
    pub(crate) fn into_read(self) -> Box<dyn Read + Send> {
        match self {
            Source::Local(f) => Box::new(f),
            Source::Remote(o) => match o.whole() {
                Some(b) => Box::new(std::io::Cursor::new(b)),
                None => Box::new(ObjectCursor::new(o)),
            },
        }
    }
}

/// Open `path`, a data file the manifest references: missing is corruption of the table; with
/// `expect`, a length other than the manifest's is too. Returns the file and its length. An
/// object is opened with one GET (the whole object if small or `whole`, else its tail).
pub(crate) fn open_checked(
    path: &Path,
    expect: Option<FileExpect>,
    whole: bool,
) -> Result<(Source, u64)> {
    let missing = |e: std::io::Error| {
        if e.kind() == std::io::ErrorKind::NotFound {
            Error::corrupt(path, "data file referenced by the manifest is missing")
        } else {
            Error::io(path, e)
        }
    };
    let (src, len) = match super::store::remote(path)? {
        Some(r) => {
            let o =
                RemoteObject::open_path(r, path, expect.map(|x| x.size), whole).map_err(missing)?;
            let len = o.size();
            (Source::Remote(o), len)
        }
        None => {
            let f = File::open(path).map_err(missing)?;
            let len = f.metadata().map_err(|e| Error::io(path, e))?.len();
            (Source::Local(f), len)
        }
    };
    if let Some(x) = expect {
        if len != x.size {
            return Err(Error::corrupt(
                path,
                format!("file is {len} bytes, the manifest records {}", x.size),
            ));
        }
    }
    Ok((src, len))
}

type Batches = Box<dyn Iterator<Item = Result<RecordBatch>> + Send>;

/// A data file's record batches. Decoding errors, and panics of a decoder on malformed input
/// (parquet 60 has some: a footer flip can make it expect a dictionary page the column chunk
/// lacks; orc-rust unwraps a stripe's time zone name), are [`Error::CorruptFile`] naming the file;
/// the reader ends after one.
pub struct DataFileReader {
    path: PathBuf,
    format: &'static str,
    inner: Option<Batches>,
}

impl DataFileReader {
    /// `batches` (already mapping their errors to [`Error`]) of the `format` file `path`.
    pub(crate) fn new(
        path: &Path,
        format: &'static str,
        batches: impl Iterator<Item = Result<RecordBatch>> + Send + 'static,
    ) -> Self {
        DataFileReader {
            path: path.to_path_buf(),
            format,
            inner: Some(Box::new(batches)),
        }
    }
}

impl Iterator for DataFileReader {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Result<RecordBatch>> {
        let inner = self.inner.as_mut()?;
        let r = contain_panic(&self.path, self.format, || inner.next().transpose()).transpose();
        if matches!(r, Some(Err(_)) | None) {
            self.inner = None;
        }
        r
    }
}

/// Run `f` (decoding `path`, a `format` file), turning a panic into a [`Error::CorruptFile`].
/// The decoder's state after a panic is not used again: the caller drops it.
pub(crate) fn contain_panic<T>(
    path: &Path,
    format: &str,
    f: impl FnOnce() -> Result<T>,
) -> Result<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|p| {
        let msg = p
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        Err(Error::corrupt(
            path,
            format!("the {format} decoder failed: {msg}"),
        ))
    })
}
