//! ORC data files (`file.format` = orc; Java Paimon's default before 1.0), read with orc-rust.
//!
//! orc-rust 0.9 decodes into arrow 59 record batches; they cross to this crate's arrow 60 through
//! the Arrow IPC stream format (written by arrow-ipc 59, read by arrow-ipc 60), a copy per batch
//! and no unsafe code. Projection is pushed down: only the named top-level columns' streams are
//! read. Java's ORC types decode as: TIMESTAMP to nanosecond timestamps without zone (wall clock
//! of the writer's zone, Java Paimon's meaning), TIMESTAMP_LTZ (ORC `timestamp with local time
//! zone`) to UTC instants, CHAR/VARCHAR to strings, TIME (ORC int) to milliseconds of the day;
//! the reader casts each to the table's type.
//!
//! Writing ([`OrcFileWriter`]) uses orc-rust's `ArrowWriter`, each batch crossing to arrow 59 the
//! same way. orc-rust 0.9 writes flat columns of boolean, integer, float, date, timestamp, string
//! and binary types only, with zstd (at its fixed level 3), zlib, snappy, lz4 or no compression,
//! and no column statistics or row indexes (Java's reader reads such files; the manifest's
//! statistics come from the rows, as for every format). What it cannot write as Java does is
//! refused when the table is created or opened for writing ([`check_schema`],
//! [`OrcCompression::from_options`]): MULTISET columns, other compressions, an explicit
//! `file.compression.zstd-level` other than 3. Tables with DECIMAL, CHAR(n), VARCHAR(n) or
//! nested columns, which orc-rust cannot write, are written by [`super::orc_write`] instead.

use std::fs::File;
use std::io::{Cursor, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};

use arrow_array::RecordBatch;
use arrow_schema::{DataType as ArrowType, Schema, SchemaRef};
use orc_rust::projection::ProjectionMask;
use orc_rust::ArrowReaderBuilder;

use super::data_file::{contain_panic, open_checked, DataFileReader, FileExpect, Source};
use super::file_write::{to_file_types, StagedFile};
use crate::error::{Error, Result};
use crate::options::CoreOptions;
use crate::spec::types::{DataField, TypeKind};

/// Open an ORC data file (see [`super::format::open_data_file`]).
pub fn open_reader(
    path: &Path,
    columns: Option<&[String]>,
    batch_size: usize,
    expect: Option<FileExpect>,
) -> Result<DataFileReader> {
    let reader = contain_panic(path, "ORC", || {
        let (src, _) = open_checked(path, expect, true)?;
        match src {
            Source::Local(f) => build(
                path,
                ArrowReaderBuilder::try_new(f),
                columns,
                batch_size,
                expect,
            ),
            Source::Remote(o) => {
                let b = o
                    .whole()
                    .ok_or_else(|| Error::Internal("an ORC object is read whole".into()))?;
                build(
                    path,
                    ArrowReaderBuilder::try_new(b),
                    columns,
                    batch_size,
                    expect,
                )
            }
        }
    })?;
    let p = path.to_path_buf();
    Ok(DataFileReader::new(
        path,
        "ORC",
        reader.map(move |r| {
            r.map_err(|e| e.to_string())
                .and_then(|b| from_arrow59(&b))
                .map_err(|e| Error::corrupt(&p, e))
        }),
    ))
}

type Batches59 =
    Box<dyn Iterator<Item = std::result::Result<arrow_array_orc::RecordBatch, String>> + Send>;

/// Check the footer's row count, project, and build the batch iterator.
fn build<R: orc_rust::reader::ChunkReader + Send + 'static>(
    path: &Path,
    builder: orc_rust::error::Result<ArrowReaderBuilder<R>>,
    columns: Option<&[String]>,
    batch_size: usize,
    expect: Option<FileExpect>,
) -> Result<Batches59> {
    let builder = builder.map_err(|e| Error::corrupt(path, e.to_string()))?;
    let meta = builder.file_metadata();
    if let Some(x) = expect {
        let rows = meta.number_of_rows();
        if rows != x.rows {
            return Err(Error::corrupt(
                path,
                format!(
                    "row count: the footer records {rows} rows, the manifest {}",
                    x.rows
                ),
            ));
        }
    }
    let mask = match columns {
        None => ProjectionMask::all(),
        Some(cols) => ProjectionMask::named_roots(meta.root_data_type(), cols),
    };
    // ORC char(n) values as Java's ORC reader gives them: right-trimmed of the padding Java's
    // writer adds (Hive's CharTreeReader), so keys and values equal the manifest's statistics
    let chars: Vec<String> = meta
        .root_data_type()
        .children()
        .iter()
        .filter(|c| matches!(c.data_type(), orc_rust::schema::DataType::Char { .. }))
        .map(|c| c.name().to_string())
        .collect();
    Ok(Box::new(
        builder
            .with_projection(mask)
            .with_batch_size(batch_size)
            .build()
            .map(move |r| {
                r.map_err(|e| e.to_string())
                    .and_then(|b| trim_chars(b, &chars))
            }),
    ))
}

/// `batch` with its top-level columns named in `chars` (ORC char(n)) right-trimmed of spaces.
fn trim_chars(
    batch: arrow_array_orc::RecordBatch,
    chars: &[String],
) -> std::result::Result<arrow_array_orc::RecordBatch, String> {
    use arrow_array_orc::{Array, ArrayRef as ArrayRef59, StringArray};
    if chars.is_empty() {
        return Ok(batch);
    }
    let schema = batch.schema();
    let mut columns: Vec<ArrayRef59> = batch.columns().to_vec();
    for (i, f) in schema.fields().iter().enumerate() {
        if !chars.iter().any(|c| c == f.name()) {
            continue;
        }
        let Some(a) = columns[i].as_any().downcast_ref::<StringArray>() else {
            continue; // a char column decodes as Utf8; any other shape is left as read
        };
        if !a.iter().flatten().any(|v| v.ends_with(' ')) {
            continue;
        }
        let trimmed: StringArray = a
            .iter()
            .map(|v| v.map(|v| v.trim_end_matches(' ')))
            .collect();
        columns[i] = std::sync::Arc::new(trimmed);
    }
    arrow_array_orc::RecordBatch::try_new(schema, columns).map_err(|e| e.to_string())
}

/// An arrow 59 record batch (orc-rust's) as an arrow 60 one, through the IPC stream format.
fn from_arrow59(b: &arrow_array_orc::RecordBatch) -> std::result::Result<RecordBatch, String> {
    let mut buf = Vec::new();
    {
        let mut w = arrow_ipc_orc::writer::StreamWriter::try_new(&mut buf, &b.schema())
            .map_err(|e| e.to_string())?;
        w.write(b).map_err(|e| e.to_string())?;
        w.finish().map_err(|e| e.to_string())?;
    }
    let mut r = arrow_ipc::reader::StreamReader::try_new(Cursor::new(buf), None)
        .map_err(|e| e.to_string())?;
    r.next()
        .transpose()
        .map_err(|e| e.to_string())?
        .ok_or_else(|| "a batch lost crossing from arrow 59".to_string())
}

/// The compression of the ORC data files a table writes (`file.compression`, as Java's
/// `OrcFileFormat` passes it to ORC's `CompressionKind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OrcCompression {
    None,
    Zlib,
    Snappy,
    Lz4,
    /// zstd at orc-rust's fixed level ([`ORC_ZSTD_LEVEL`]).
    Zstd,
}

/// The zstd level orc-rust 0.9 compresses at (zstd's default; it takes no level).
pub const ORC_ZSTD_LEVEL: i32 = 3;

impl OrcCompression {
    /// The compression `opts` ask for; one orc-rust cannot write is refused, naming the option.
    pub fn from_options(opts: &CoreOptions) -> Result<OrcCompression> {
        OrcCompression::for_compression(opts, &opts.file_compression, "file.compression")
    }

    /// The compression of an ORC file compressed with `compression` (the value of option
    /// `key`: `file.compression`, a level's entry of `file.compression.per.level`, ...).
    pub fn for_compression(
        opts: &CoreOptions,
        compression: &str,
        key: &str,
    ) -> Result<OrcCompression> {
        let c = match compression {
            "zstd" => OrcCompression::Zstd,
            "zlib" => OrcCompression::Zlib,
            "snappy" => OrcCompression::Snappy,
            "lz4" => OrcCompression::Lz4,
            "none" | "uncompressed" => OrcCompression::None,
            other => {
                return Err(Error::unsupported(format!(
                    "table option '{key}' = '{other}' for ORC data files: paimon_rs \
                     (orc-rust) writes ORC with zstd, zlib, snappy, lz4 or none"
                )))
            }
        };
        if c == OrcCompression::Zstd {
            if let Some(v) = opts.raw.get("file.compression.zstd-level") {
                if opts.zstd_level != ORC_ZSTD_LEVEL {
                    return Err(Error::unsupported(format!(
                        "table option 'file.compression.zstd-level' = '{v}' for ORC data files: \
                         orc-rust compresses ORC at zstd level {ORC_ZSTD_LEVEL} only (set it to \
                         {ORC_ZSTD_LEVEL}, or leave it unset)"
                    )));
                }
            }
        }
        Ok(c)
    }

    fn orc_rust(self) -> Option<orc_rust::compression::CompressionType> {
        use orc_rust::compression::CompressionType as C;
        match self {
            OrcCompression::None => None,
            OrcCompression::Zlib => Some(C::Zlib),
            OrcCompression::Snappy => Some(C::Snappy),
            OrcCompression::Lz4 => Some(C::Lz4),
            OrcCompression::Zstd => Some(C::Zstd),
        }
    }
}

/// Refuse the columns of `fields` that paimon_rs cannot write to ORC data files as Java Paimon
/// writes them, naming the column. orc-rust writes flat columns of a few types; the others
/// (DECIMAL, CHAR(n), VARCHAR(n), ARRAY, MAP, ROW) are written by [`super::orc_write`]. MULTISET
/// is refused: Java writes it as an ORC map of element to count, paimon_rs holds it as a list.
pub fn check_schema(table: &str, fields: &[DataField]) -> Result<()> {
    fn multiset(t: &crate::spec::types::DataType) -> bool {
        match &t.kind {
            TypeKind::Multiset(_) => true,
            TypeKind::Array(e) => multiset(e),
            TypeKind::Map(k, v) => multiset(k) || multiset(v),
            TypeKind::Row(fs) => fs.iter().any(|f| multiset(&f.data_type)),
            _ => false,
        }
    }
    for f in fields {
        if multiset(&f.data_type) {
            return Err(Error::unsupported(format!(
                "file.format = orc: column '{}' is {}: Java writes MULTISET to ORC as a map of \
                 element to count, which paimon_rs does not write",
                f.name,
                f.data_type.sql_string()
            ))
            .with_table(table));
        }
    }
    Ok(())
}

/// A sink counting the bytes written through it (orc-rust's writer does not say).
struct Counting<W> {
    inner: W,
    count: Arc<AtomicU64>,
}

impl<W: Write> Write for Counting<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.count.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Arrow memory of the rows buffered in a stripe before it is written out (orc-rust buffers a
/// stripe's encoded streams in memory; this bounds them as the Parquet row group is bounded).
const STRIPE_ARROW_BYTES: usize = 16 << 20;

/// One ORC data file being written with orc-rust's writer (arrow 59: each batch crosses over
/// through the Arrow IPC stream format, as the reader's do the other way). Written under a temp
/// name and published on `close`, as the Parquet writer does. TIME columns are written as ORC
/// int (milliseconds of the day), as Java writes them. orc-rust's writer is not `Send` (its
/// column encoders are boxed trait objects without the bound), so it lives on a thread of its
/// own ([`OrcWorker`]) and each call waits for that thread's answer.
pub struct OrcFileWriter {
    staged: StagedFile,
    worker: Option<OrcWorker>,
    written: Arc<AtomicU64>,
    /// The schema of the batches as written (TIME as int).
    file_schema: SchemaRef,
    /// Arrow bytes of the open stripe, and of the stripes written with the bytes they took.
    pending: usize,
    flushed_arrow: u64,
    flushed_bytes: u64,
    rows: u64,
}

enum OrcCmd {
    Write(arrow_array_orc::RecordBatch),
    FlushStripe,
    Close,
}

type Reply = std::result::Result<(), String>;

/// The thread owning orc-rust's writer of one file.
struct OrcWorker {
    tx: mpsc::Sender<OrcCmd>,
    rx: mpsc::Receiver<Reply>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl OrcWorker {
    fn start(
        sink: Counting<File>,
        // an empty batch of the file's schema, in arrow 59 (its schema names the columns)
        empty59: arrow_array_orc::RecordBatch,
        compression: OrcCompression,
    ) -> std::result::Result<OrcWorker, String> {
        let (tx, cmds) = mpsc::channel::<OrcCmd>();
        let (replies, rx) = mpsc::channel::<Reply>();
        let handle = std::thread::Builder::new()
            .name("paimon-rs-orc-writer".into())
            .spawn(move || {
                let mut b = orc_rust::ArrowWriterBuilder::new(sink, empty59.schema())
                    // stripes are cut by the caller ([`STRIPE_ARROW_BYTES`]), not by orc-rust
                    .with_stripe_byte_size(usize::MAX);
                if let Some(c) = compression.orc_rust() {
                    b = b.with_compression(c);
                }
                let mut w = match b.try_build() {
                    Ok(w) => {
                        let _ = replies.send(Ok(()));
                        w
                    }
                    Err(e) => {
                        let _ = replies.send(Err(e.to_string()));
                        return;
                    }
                };
                while let Ok(cmd) = cmds.recv() {
                    let r = match cmd {
                        OrcCmd::Write(b) => w.write(&b).map_err(|e| e.to_string()),
                        OrcCmd::FlushStripe => w.flush_stripe().map_err(|e| e.to_string()),
                        OrcCmd::Close => {
                            let _ = replies.send(w.close().map_err(|e| e.to_string()));
                            return;
                        }
                    };
                    if replies.send(r).is_err() {
                        return;
                    }
                }
            })
            .map_err(|e| e.to_string())?;
        let w = OrcWorker {
            tx,
            rx,
            handle: Some(handle),
        };
        w.reply()?;
        Ok(w)
    }

    fn reply(&self) -> Reply {
        self.rx
            .recv()
            .map_err(|_| "the ORC writer thread ended".to_string())?
    }

    fn call(&self, cmd: OrcCmd) -> Reply {
        self.tx
            .send(cmd)
            .map_err(|_| "the ORC writer thread ended".to_string())?;
        self.reply()
    }

    fn close(mut self) -> Reply {
        let r = self.call(OrcCmd::Close);
        if let Some(h) = self.handle.take() {
            h.join()
                .map_err(|_| "the ORC writer thread panicked".to_string())?;
        }
        r
    }
}

impl OrcFileWriter {
    /// Create the data file `path` holding columns `schema` (the file's Arrow types).
    pub fn create(path: PathBuf, schema: SchemaRef, compression: OrcCompression) -> Result<Self> {
        let file_schema = Arc::new(Schema::new(
            schema
                .fields()
                .iter()
                .map(|f| match f.data_type() {
                    ArrowType::Time32(_) => f.as_ref().clone().with_data_type(ArrowType::Int32),
                    _ => f.as_ref().clone(),
                })
                .collect::<Vec<_>>(),
        ));
        let bad = |m: String| {
            Error::unsupported(format!(
                "ORC data file {}: cannot write {m}",
                path.display()
            ))
        };
        for f in file_schema.fields() {
            let ok = match f.data_type() {
                ArrowType::Boolean
                | ArrowType::Int8
                | ArrowType::Int16
                | ArrowType::Int32
                | ArrowType::Int64
                | ArrowType::Float32
                | ArrowType::Float64
                | ArrowType::Date32
                | ArrowType::Timestamp(_, None)
                | ArrowType::Utf8
                | ArrowType::Binary => true,
                ArrowType::Timestamp(_, Some(tz)) => tz.as_ref() == "UTC",
                _ => false,
            };
            if !ok {
                return Err(bad(format!(
                    "column '{}' of type {}",
                    f.name(),
                    f.data_type()
                )));
            }
        }
        let empty = RecordBatch::new_empty(file_schema.clone());
        let empty59 = to_arrow59(&empty).map_err(bad)?;
        let (staged, file) = StagedFile::create(path)?;
        let written = Arc::new(AtomicU64::new(0));
        let sink = Counting {
            inner: file,
            count: written.clone(),
        };
        let worker = OrcWorker::start(sink, empty59, compression)
            .map_err(|e| Error::io(&staged.path, std::io::Error::other(e)))?;
        Ok(OrcFileWriter {
            staged,
            worker: Some(worker),
            written,
            file_schema,
            pending: 0,
            flushed_arrow: 0,
            flushed_bytes: 0,
            rows: 0,
        })
    }

    fn call(&self, cmd: OrcCmd) -> Result<()> {
        let w = self
            .worker
            .as_ref()
            .ok_or_else(|| Error::Internal("ORC writer closed".into()))?;
        w.call(cmd).map_err(|e| self.orc_err(e))
    }

    fn orc_err(&self, e: impl std::fmt::Display) -> Error {
        Error::Internal(format!(
            "writing ORC data file {}: {e}",
            self.staged.path.display()
        ))
    }

    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        let b = to_file_types(batch, &self.file_schema)?;
        let b59 = to_arrow59(&b).map_err(|e| self.orc_err(e))?;
        self.call(OrcCmd::Write(b59))?;
        self.pending += b.get_array_memory_size();
        self.rows += b.num_rows() as u64;
        if self.pending >= STRIPE_ARROW_BYTES {
            self.flush_stripe()?;
        }
        Ok(())
    }

    /// Write the open stripe out, freeing its memory; the file stays open.
    pub fn flush_stripe(&mut self) -> Result<()> {
        if self.pending == 0 {
            return Ok(());
        }
        let before = self.written.load(Ordering::Relaxed);
        self.call(OrcCmd::FlushStripe)?;
        self.flushed_bytes += self.written.load(Ordering::Relaxed) - before;
        self.flushed_arrow += self.pending as u64;
        self.pending = 0;
        Ok(())
    }

    /// Bytes written so far plus the open stripe, at the ratio of encoded to Arrow bytes of the
    /// stripes written (1 before the first).
    pub fn estimated_size(&self) -> u64 {
        let pending = if self.flushed_arrow > 0 {
            (self.pending as f64 * self.flushed_bytes as f64 / self.flushed_arrow as f64) as u64
        } else {
            self.pending as u64
        };
        self.written.load(Ordering::Relaxed) + pending
    }

    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Arrow memory of the rows of the open stripe (an estimate of its encoded streams).
    pub fn buffered_bytes(&self) -> usize {
        self.pending
    }

    /// Finish the file; returns its size in bytes.
    pub fn close(mut self) -> Result<u64> {
        let w = self
            .worker
            .take()
            .ok_or_else(|| Error::Internal("ORC writer closed".into()))?;
        w.close().map_err(|e| self.orc_err(e))?;
        // orc-rust's close consumed the sink (unbuffered): the file is opened again to sync it
        let file = File::options()
            .write(true)
            .open(&self.staged.tmp)
            .map_err(|e| Error::io(&self.staged.tmp, e))?;
        self.staged.publish(file)
    }
}

/// An arrow 60 batch as an arrow 59 one (orc-rust's), through the IPC stream format.
fn to_arrow59(b: &RecordBatch) -> std::result::Result<arrow_array_orc::RecordBatch, String> {
    let mut buf = Vec::new();
    {
        let mut w = arrow_ipc::writer::StreamWriter::try_new(&mut buf, &b.schema())
            .map_err(|e| e.to_string())?;
        w.write(b).map_err(|e| e.to_string())?;
        w.finish().map_err(|e| e.to_string())?;
    }
    let mut r = arrow_ipc_orc::reader::StreamReader::try_new(Cursor::new(buf), None)
        .map_err(|e| e.to_string())?;
    r.next()
        .transpose()
        .map_err(|e| e.to_string())?
        .ok_or_else(|| "a batch lost crossing to arrow 59".to_string())
}

#[cfg(test)]
pub(crate) mod tests {
    use std::sync::Arc;

    use arrow_array::cast::AsArray;
    use arrow_array::types::Int32Type;
    use arrow_array::{ArrayRef, Int32Array, Int64Array, StringArray, TimestampNanosecondArray};

    use super::*;

    pub(crate) fn batch(n: i32) -> RecordBatch {
        let cols: Vec<ArrayRef> = vec![
            Arc::new(Int32Array::from_iter_values(0..n)),
            Arc::new(StringArray::from_iter(
                (0..n).map(|i| (i % 5 != 0).then(|| format!("s{i}"))),
            )),
            Arc::new(TimestampNanosecondArray::from_iter(
                (0..n).map(|i| (i % 7 != 0).then_some(i as i64 * 1_000_000_007 - 5)),
            )),
            Arc::new(Int64Array::from_iter(
                (0..n).map(|i| (i % 3 != 0).then_some(i as i64 * -12345)),
            )),
        ];
        RecordBatch::try_from_iter(["id", "s", "ts", "d"].into_iter().zip(cols)).unwrap()
    }

    fn read(
        path: &Path,
        cols: Option<&[String]>,
        expect: Option<FileExpect>,
    ) -> Result<Vec<RecordBatch>> {
        open_reader(path, cols, 100, expect)?.collect()
    }

    /// orc-rust's own writer stands in for Java's (Java-written files are read in
    /// tests/compat/test_java_interop.py): every row back, projection, and a damaged file is a
    /// CorruptFile error naming it.
    #[test]
    fn orc_files_read_projected_and_damage_is_corrupt() {
        let b = batch(1000);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data-x-0.orc");
        let b59 = to_arrow59(&b).unwrap();
        let mut w =
            orc_rust::ArrowWriterBuilder::new(std::fs::File::create(&path).unwrap(), b59.schema())
                .try_build()
                .unwrap();
        w.write(&b59).unwrap();
        w.close().unwrap();
        let size = std::fs::metadata(&path).unwrap().len();
        let expect = FileExpect { size, rows: 1000 };

        let got = read(&path, None, Some(expect)).unwrap();
        assert_eq!(got.len(), 10);
        let all = arrow_select::concat::concat_batches(&got[0].schema(), &got).unwrap();
        assert_eq!(all.num_rows(), 1000);
        for c in 0..4 {
            assert_eq!(all.column(c).as_ref(), b.column(c).as_ref(), "column {c}");
        }
        let cols = ["d".to_string(), "id".to_string(), "gone".to_string()];
        let got = read(&path, Some(&cols), Some(expect)).unwrap();
        assert_eq!(got[0].num_columns(), 2);
        assert_eq!(got[0].schema().field(0).name(), "id");
        assert_eq!(got[0].column(0).as_primitive::<Int32Type>().value(3), 3);

        // what the manifest records must be the file's
        let e = read(&path, None, Some(FileExpect { size, rows: 999 })).unwrap_err();
        assert!(e.to_string().contains("footer records 1000 rows"), "{e}");
        let e = read(
            &path,
            None,
            Some(FileExpect {
                size: size + 1,
                rows: 1000,
            }),
        )
        .unwrap_err();
        assert!(matches!(e, Error::CorruptFile { .. }), "{e}");
        // cut anywhere (no manifest check): the decoder's error, naming the file
        let bytes = std::fs::read(&path).unwrap();
        for keep in [0, 3, bytes.len() / 2, bytes.len() - 1] {
            std::fs::write(&path, &bytes[..keep]).unwrap();
            let e = read(&path, None, None).unwrap_err();
            assert!(
                matches!(e, Error::CorruptFile { .. }) && e.to_string().contains("data-x-0.orc"),
                "cut at {keep}: {e}"
            );
        }
    }

    /// Every type paimon_rs writes to ORC, written with each compression and read back (TIME
    /// as ORC int, timestamps of every precision, LTZ as ORC timestamp with local time zone).
    #[test]
    fn orc_files_round_trip_every_flat_type_and_compression() {
        use crate::io::avro::tests::{assert_column, column, ty};
        let types = [
            "BOOLEAN",
            "TINYINT",
            "SMALLINT",
            "INT",
            "BIGINT",
            "FLOAT",
            "DOUBLE",
            "STRING",
            "BYTES",
            "BINARY(3)",
            "DATE",
            "TIME(3)",
            "TIMESTAMP(0)",
            "TIMESTAMP(3)",
            "TIMESTAMP(6)",
            "TIMESTAMP(9)",
            "TIMESTAMP(3) WITH LOCAL TIME ZONE",
            "TIMESTAMP(9) WITH LOCAL TIME ZONE",
        ];
        let fields: Vec<DataField> = types
            .iter()
            .enumerate()
            .map(|(i, t)| DataField::new(i as i32, format!("c{i}"), ty(t)))
            .collect();
        check_schema("t", &fields).unwrap();
        let schema = Arc::new(Schema::new(
            fields.iter().map(|f| f.to_arrow_file()).collect::<Vec<_>>(),
        ));
        let n = 3000;
        let cols = schema
            .fields()
            .iter()
            .map(|f| match f.data_type() {
                ArrowType::Timestamp(arrow_schema::TimeUnit::Nanosecond, tz) => Arc::new(
                    arrow_array::TimestampNanosecondArray::from_iter(
                        (0..n).map(|i| (i % 7 != 3).then_some(i as i64 * 1_234_567_891_013)),
                    )
                    .with_timezone_opt(tz.clone()),
                )
                    as ArrayRef,
                t => column(t, true, n),
            })
            .collect();
        let batch = RecordBatch::try_new(schema.clone(), cols).unwrap();
        let dir = tempfile::tempdir().unwrap();
        for (i, c) in [
            OrcCompression::None,
            OrcCompression::Zstd,
            OrcCompression::Zlib,
            OrcCompression::Snappy,
            OrcCompression::Lz4,
        ]
        .into_iter()
        .enumerate()
        {
            let path = dir.path().join(format!("data-{i}.orc"));
            let mut w = OrcFileWriter::create(path.clone(), schema.clone(), c).unwrap();
            for k in 0..3 {
                w.write(&batch.slice(k * 1000, 1000)).unwrap();
                if k == 1 {
                    w.flush_stripe().unwrap();
                }
            }
            assert!(w.estimated_size() > 0 && w.rows() == 3000);
            let size = w.close().unwrap();
            assert_eq!(size, std::fs::metadata(&path).unwrap().len());
            assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), i + 1);
            let got = read(&path, None, Some(FileExpect { size, rows: 3000 })).unwrap();
            let got = arrow_select::concat::concat_batches(&got[0].schema(), &got).unwrap();
            for (k, f) in schema.fields().iter().enumerate() {
                let at = got.schema().index_of(f.name()).unwrap();
                assert_column(
                    &format!("{} {c:?}", types[k]),
                    got.column(at),
                    batch.column(k),
                );
            }
        }
    }

    /// ORC-763: an instant in the second before 1970 with a fraction of a second cannot be held
    /// by an ORC timestamp (Java's ORC writer writes one that reads back as another instant);
    /// orc-rust refuses it, and so the write fails naming the file, never writing another value.
    #[test]
    fn an_orc_timestamp_in_the_second_before_1970_fails_the_write() {
        let schema = Arc::new(Schema::new(vec![arrow_schema::Field::new(
            "ts",
            ArrowType::Timestamp(arrow_schema::TimeUnit::Millisecond, None),
            true,
        )]));
        let b = RecordBatch::try_new(
            schema.clone(),
            vec![Arc::new(arrow_array::TimestampMillisecondArray::from(
                vec![-99],
            ))],
        )
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data-t.orc");
        let mut w = OrcFileWriter::create(path.clone(), schema, OrcCompression::Zstd).unwrap();
        let e = w.write(&b).unwrap_err().to_string();
        assert!(e.contains("data-t.orc") && e.contains("-99"), "{e}");
        drop(w);
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            0,
            "temp file removed"
        );
    }

    #[test]
    fn what_orc_rust_cannot_write_is_refused() {
        use crate::io::avro::tests::{nested, ty};
        for (t, needle) in [
            (
                nested(TypeKind::Multiset(Box::new(ty("INT")))),
                "MULTISET<INT>",
            ),
            (
                nested(TypeKind::Array(Box::new(nested(TypeKind::Multiset(
                    Box::new(ty("INT")),
                ))))),
                "ARRAY<MULTISET<INT>>",
            ),
        ] {
            let e = check_schema("db.t", &[DataField::new(0, "c", t)]).unwrap_err();
            let m = e.to_string();
            assert!(matches!(e, Error::Unsupported { .. }), "{m}");
            assert!(
                m.contains("db.t") && m.contains("column 'c'") && m.contains(needle),
                "{m}"
            );
        }
        for t in ["DECIMAL(10, 2)", "CHAR(5)", "VARCHAR(5)"] {
            check_schema("db.t", &[DataField::new(0, "c", ty(t))]).unwrap();
        }
        let opts = |kv: &[(&str, &str)]| {
            let raw = kv
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            OrcCompression::from_options(&CoreOptions::new(&raw, false).unwrap())
        };
        assert_eq!(opts(&[]).unwrap(), OrcCompression::Zstd);
        assert_eq!(
            opts(&[("file.compression", "LZ4")]).unwrap(),
            OrcCompression::Lz4
        );
        assert_eq!(
            opts(&[("file.compression.zstd-level", "3")]).unwrap(),
            OrcCompression::Zstd
        );
        let e = opts(&[("file.compression.zstd-level", "9")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("'file.compression.zstd-level' = '9'"), "{e}");
        let e = opts(&[("file.compression", "gzip")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("'file.compression' = 'gzip'"), "{e}");
    }
}
