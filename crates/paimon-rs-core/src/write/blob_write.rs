//! BLOB columns at write time (pypaimon 2.1.0's `DedicatedFormatWriter` + `BlobWriter`, Java's
//! `RollingBlobFileWriter`): an append table with row tracking and data evolution keeps each
//! top-level BLOB column out of its data files, in `.blob` files of its own (io/blob.rs).
//!
//! The rolling writer ([`RollingFileWriter`](super::rolling::RollingFileWriter)) writes the
//! other columns into the data file (its `write_cols` name them) and hands each chunk's BLOB
//! columns to [`BlobSidecars`]; a BLOB column's rows go into `.blob` files rolled at
//! `blob.target-file-size` (default `target-file-size`, checked after each row as pypaimon
//! does). When the data file closes, the `.blob` files holding its rows close too and follow
//! it in the commit's file list, grouped by column: `[data, blob(a)…, blob(b)…]`. The commit
//! gives them the data file's row ids (commit/row_tracking.rs). A `.blob` file's stats are
//! pypaimon's: one column (the BLOB), min and max null, null count 0. A `.blob` file's records
//! stream to its temp file (through a small buffer) as they come; the files of one data file
//! are synced together when it closes, then published under their names.
//!
//! A value that is a serialized `BlobDescriptor` (pypaimon's `BlobDescriptorSerde.is_descriptor`:
//! version 2, magic `BLOBDESC`) is written as the bytes it points at, as pypaimon does; only
//! descriptors of local files (a path or a `file:` URI) are read, others are refused.

use std::io::BufWriter;
use std::path::PathBuf;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, RecordBatch};
use arrow_schema::DataType as ArrowType;

use crate::error::{Error, Result};
use crate::io::blob::{BlobFileWriter, Part, DESCRIPTOR_MAGIC, DESCRIPTOR_VERSION};
use crate::io::blob_nested::{blob_bytes, is_blob_file_type, key_bytes};
use crate::io::file_write::{StagedFile, WritebackFile};
use crate::spec::binary_row::{empty_row, serialize_row};
use crate::spec::manifest::{DataFileMeta, SimpleStats};
use crate::spec::types::DataType;

/// How a table's rows split between its data files and its BLOB columns' `.blob` files.
#[derive(Debug, Clone)]
pub struct BlobSpec {
    /// Positions (in the table's row) of the columns the data file holds.
    pub normal_cols: Vec<usize>,
    /// Their names: the data file's `write_cols`.
    pub normal_names: Vec<String>,
    /// Position and name of each BLOB column.
    pub blob_cols: Vec<(usize, String)>,
    /// The type of each BLOB column (BLOB, `ARRAY<BLOB>` or `MAP<X, BLOB>`), as `blob_cols`.
    pub blob_types: Vec<DataType>,
    /// `blob.target-file-size` in bytes.
    pub target_size: u64,
    pub schema_id: i64,
    pub prefix: String,
    pub file_source: i32,
}

impl BlobSpec {
    /// The split of a table whose columns are `fields` (None: no BLOB column).
    pub fn new(
        fields: &[crate::spec::types::DataField],
        opts: &crate::options::CoreOptions,
        schema_id: i64,
        file_source: i32,
    ) -> Result<Option<Arc<BlobSpec>>> {
        // `blob-descriptor-field` / `blob-view-field` columns stay in the data file
        let (descriptor, view) = crate::options::blob_inline_fields(&opts.raw);
        let in_blob_file = |f: &crate::spec::types::DataField| {
            is_blob_file_type(&f.data_type)
                && !descriptor.contains(&f.name)
                && !view.contains(&f.name)
        };
        if !fields.iter().any(in_blob_file) {
            return Ok(None);
        }
        let target_size = match opts.raw.get("blob.target-file-size") {
            Some(v) => crate::options::parse_memory_size("blob.target-file-size", v)?,
            None => opts.target_file_size(),
        };
        let mut spec = BlobSpec {
            normal_cols: vec![],
            normal_names: vec![],
            blob_cols: vec![],
            blob_types: vec![],
            target_size: target_size.max(1),
            schema_id,
            prefix: opts.data_file_prefix.clone(),
            file_source,
        };
        for (i, f) in fields.iter().enumerate() {
            if in_blob_file(f) {
                spec.blob_cols.push((i, f.name.clone()));
                spec.blob_types.push(f.data_type.clone());
            } else {
                spec.normal_cols.push(i);
                spec.normal_names.push(f.name.clone());
            }
        }
        Ok(Some(Arc::new(spec)))
    }
}

/// A `.blob` file being written: its records go straight to its temp file.
struct OpenBlob {
    name: String,
    /// Its `_EXTERNAL_PATH` (data-file.external-paths), if any.
    external: Option<String>,
    staged: StagedFile,
    w: BlobFileWriter<BufWriter<WritebackFile>>,
}

/// A `.blob` file written whole under its temp name, published when its data file closes.
struct ClosedBlob {
    name: String,
    external: Option<String>,
    staged: StagedFile,
    size: u64,
    rows: i64,
}

/// Buffer between the records of a `.blob` file and its file (a value larger than this is
/// written through, not copied).
const BLOB_BUFFER: usize = 64 << 10;

/// One BLOB column's `.blob` files of the data file being written.
struct ColumnFiles {
    uuid: String,
    counter: usize,
    open: Option<OpenBlob>,
    /// Files of the open data file written so far, unpublished.
    closed: Vec<ClosedBlob>,
}

/// The `.blob` files beside a rolling writer's data files.
pub struct BlobSidecars {
    spec: Arc<BlobSpec>,
    dir: PathBuf,
    /// `data-file.external-paths` and the table's directory: each `.blob` file goes under a
    /// root, as a data file (Java's `DataFilePathFactory.newBlobPath`).
    external: super::rolling::ExternalRoots,
    columns: Vec<ColumnFiles>,
    /// Every `.blob` file written (to remove them if the write is abandoned).
    written: Vec<PathBuf>,
}

impl BlobSidecars {
    pub fn new(spec: Arc<BlobSpec>, dir: PathBuf, external: super::rolling::ExternalRoots) -> Self {
        let columns = spec
            .blob_cols
            .iter()
            .map(|_| ColumnFiles {
                uuid: uuid::Uuid::new_v4().to_string(),
                counter: 0,
                open: None,
                closed: vec![],
            })
            .collect();
        BlobSidecars {
            spec,
            dir,
            external,
            columns,
            written: vec![],
        }
    }

    /// The columns of `chunk` (a table row batch) the data file holds.
    pub fn data_columns(&self, chunk: &RecordBatch) -> Result<RecordBatch> {
        Ok(chunk.project(&self.spec.normal_cols)?)
    }

    /// The data file's `write_cols`.
    pub fn write_cols(&self) -> Vec<String> {
        self.spec.normal_names.clone()
    }

    /// Writes the BLOB columns of `chunk` (a table row batch). Every value is checked and every
    /// descriptor resolved (its file opened, its range checked) first, so one that fails leaves
    /// the `.blob` files as they were; a descriptor's bytes are then copied in chunks as its
    /// record is written (neither a chunk of descriptors of large files nor one array of them
    /// sits in memory). An I/O error of
    /// that second pass fails the bucket's write as a whole (write/append_writer.rs drops its
    /// files).
    pub fn write(&mut self, chunk: &RecordBatch) -> Result<()> {
        let spec = self.spec.clone();
        let mut columns: Vec<Vec<Cell<'_>>> = vec![];
        for ((pos, name), t) in spec.blob_cols.iter().zip(&spec.blob_types) {
            columns.push(cells(name, t, chunk.column(*pos).as_ref())?);
        }
        for (c, values) in columns.into_iter().enumerate() {
            for v in values {
                let open = self.open_column(c)?;
                let io = |e| Error::io(&open.staged.tmp, e);
                match v {
                    Cell::One(v) => {
                        open.w.add_part(part(&v)).map_err(io)?;
                    }
                    Cell::Array(elements) => {
                        let parts: Vec<Option<Part<'_>>> = elements.iter().map(part).collect();
                        open.w.add_array_parts(&parts).map_err(io)?;
                    }
                    Cell::Map(keys, values) => {
                        let parts: Vec<Option<Part<'_>>> = values.iter().map(part).collect();
                        let keys: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
                        open.w.add_map_parts(&keys, &parts).map_err(io)?;
                    }
                }
                if open.w.position() >= self.spec.target_size {
                    self.close_column(c)?;
                }
            }
        }
        Ok(())
    }

    /// Writes `n` placeholder rows (length `-2`: the row keeps its value of an older file) to
    /// column `c`, as pypaimon's update of a BLOB column by `_ROW_ID` writes the rows it leaves.
    pub fn write_placeholders(&mut self, c: usize, n: usize) -> Result<()> {
        for _ in 0..n {
            let open = self.open_column(c)?;
            open.w
                .add(crate::io::blob::BlobValue::PlaceHolder)
                .map_err(|e| Error::io(&open.staged.tmp, e))?;
            if open.w.position() >= self.spec.target_size {
                self.close_column(c)?;
            }
        }
        Ok(())
    }

    /// Column `c`'s open `.blob` file, created if there is none.
    fn open_column(&mut self, c: usize) -> Result<&mut OpenBlob> {
        let col = &mut self.columns[c];
        if col.open.is_none() {
            let name = format!("{}{}-{}.blob", self.spec.prefix, col.uuid, col.counter);
            col.counter += 1;
            let (path, external) = match &self.external {
                Some((paths, root)) => {
                    let (path, uri) = paths.place(root, &self.dir, &name)?;
                    (path, Some(uri))
                }
                None => (self.dir.join(&name), None),
            };
            let (staged, file) = StagedFile::create(path)?;
            let out = BufWriter::with_capacity(BLOB_BUFFER, WritebackFile::new(file));
            col.open = Some(OpenBlob {
                name,
                external,
                staged,
                w: BlobFileWriter::to(out),
            });
        }
        col.open
            .as_mut()
            .ok_or_else(|| Error::Internal("no open .blob file".into()))
    }

    /// Writes out what the open `.blob` files buffer (memory pressure); they stay open.
    pub fn flush(&mut self) -> Result<()> {
        for open in self.columns.iter_mut().filter_map(|c| c.open.as_mut()) {
            open.w.flush().map_err(|e| Error::io(&open.staged.tmp, e))?;
        }
        Ok(())
    }

    /// Closes column `c`'s open `.blob` file (if any): index and footer written, the file
    /// closed unsynced (made durable with the data file's others in [`Self::finish_data_file`]).
    fn close_column(&mut self, c: usize) -> Result<()> {
        let col = &mut self.columns[c];
        let Some(OpenBlob {
            name,
            external,
            staged,
            w,
        }) = col.open.take()
        else {
            return Ok(());
        };
        let rows = w.row_count() as i64;
        let io = |e| Error::io(&staged.tmp, e);
        let (out, size) = w.finish().map_err(io)?;
        let file = out.into_inner().map_err(|e| io(e.into_error()))?;
        drop(file.into_file());
        col.closed.push(ClosedBlob {
            name,
            external,
            staged,
            size,
            rows,
        });
        Ok(())
    }

    /// The data file just closed holds `rows` rows: closes the `.blob` files of its rows and
    /// returns their metadata, column by column, each file with `seq` as its sequence range.
    pub fn finish_data_file(&mut self, rows: i64, seq: (i64, i64)) -> Result<Vec<DataFileMeta>> {
        let creation = chrono::Local::now()
            .naive_local()
            .and_utc()
            .timestamp_millis();
        let stats = SimpleStats {
            min_values: serialize_row(
                &[DataType::new(crate::spec::types::TypeKind::Blob)],
                &[None],
            )?,
            max_values: serialize_row(
                &[DataType::new(crate::spec::types::TypeKind::Blob)],
                &[None],
            )?,
            null_counts: vec![Some(0)],
        };
        let mut columns = vec![];
        for c in 0..self.columns.len() {
            self.close_column(c)?;
            let files = std::mem::take(&mut self.columns[c].closed);
            let held: i64 = files.iter().map(|f| f.rows).sum();
            if held != rows {
                return Err(Error::Internal(format!(
                    "BLOB column '{}': {held} rows in .blob files for a data file of {rows}",
                    self.spec.blob_cols[c].1
                )));
            }
            columns.push(files);
        }
        // one sync of all the data file's `.blob` files (their disk writes overlap), then
        // each published under its name
        let tmps: Vec<PathBuf> = columns
            .iter()
            .flatten()
            .map(|f| f.staged.tmp.clone())
            .collect();
        crate::io::sync_files(&tmps)?;
        let mut out = vec![];
        for (c, files) in columns.into_iter().enumerate() {
            for mut f in files {
                f.staged.publish_synced()?;
                self.written.push(f.staged.path.clone());
                out.push(DataFileMeta {
                    file_name: f.name,
                    file_size: f.size as i64,
                    row_count: f.rows,
                    min_key: empty_row(),
                    max_key: empty_row(),
                    key_stats: SimpleStats::empty(),
                    value_stats: stats.clone(),
                    min_sequence_number: seq.0,
                    max_sequence_number: seq.1,
                    schema_id: self.spec.schema_id,
                    level: 0,
                    extra_files: vec![],
                    creation_time: Some(creation),
                    delete_row_count: Some(0),
                    embedded_index: None,
                    file_source: Some(self.spec.file_source),
                    value_stats_cols: None,
                    external_path: f.external,
                    first_row_id: None,
                    write_cols: Some(vec![self.spec.blob_cols[c].1.clone()]),
                    write_cols_sequences: None,
                });
            }
        }
        Ok(out)
    }

    /// Bytes the open `.blob` files buffer (their records are in their files).
    pub fn buffered_bytes(&self) -> usize {
        self.columns
            .iter()
            .filter_map(|c| c.open.as_ref())
            .map(|o| o.w.get_ref().buffer().len())
            .sum()
    }

    /// Forgets the `.blob` files written so far: their metadata went to the caller, which
    /// now owns them (an abandoned writer removes only what it still owns).
    pub fn hand_over(&mut self) {
        self.written.clear();
    }

    /// Every `.blob` file written so far.
    pub fn written_paths(&self) -> &[PathBuf] {
        &self.written
    }
}

/// A serialized `BlobDescriptor` (version 2): its URI, offset and length.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Descriptor {
    pub uri: String,
    pub offset: u64,
    /// None: to the end of the file (Java's and pypaimon's length -1).
    pub length: Option<u64>,
}

/// The magic of a pypaimon video-frame descriptor (`"VIDEOFRM"`, version 1) and of a BLOB view
/// (`"BLOBVIEW"`, version 1): pypaimon resolves them, paimon_rs refuses them.
const VIDEO_FRAME_MAGIC: u64 = 0x5649_4445_4F46_524D;
const BLOB_VIEW_MAGIC: u64 = 0x424C_4F42_5649_4557;

/// Refuses a value that is a serialized video-frame descriptor or BLOB view (never written as
/// plain bytes: pypaimon would resolve it).
fn refuse_video_frame(column: &str, b: &[u8]) -> Result<()> {
    if b.len() < 9 || b[0] != 1 {
        return Ok(());
    }
    let magic = u64::from_le_bytes(b[1..9].try_into().unwrap_or_default());
    let what = match magic {
        VIDEO_FRAME_MAGIC => "a video-frame descriptor",
        BLOB_VIEW_MAGIC => "a BLOB view (BlobViewStruct)",
        _ => return Ok(()),
    };
    Err(Error::unsupported(format!(
        "BLOB column '{column}': the value is {what}, which paimon_rs does not resolve"
    )))
}

/// `bytes` as a `BlobDescriptor` when they are one (pypaimon's `is_blob_descriptor`: version
/// byte 2, then the magic), else None; a value that starts as one but is cut short is an error.
pub fn parse_descriptor(bytes: &[u8]) -> Result<Option<Descriptor>> {
    if bytes.len() < 9
        || bytes[0] != DESCRIPTOR_VERSION
        || bytes[1..9] != DESCRIPTOR_MAGIC.to_le_bytes()
    {
        return Ok(None);
    }
    let bad = || Error::invalid("BLOB value: a truncated serialized BlobDescriptor");
    let rest = &bytes[9..];
    let uri_len = rest
        .get(..4)
        .and_then(|b| b.try_into().ok())
        .map(i32::from_le_bytes)
        .ok_or_else(bad)?;
    let uri_len = usize::try_from(uri_len).map_err(|_| bad())?;
    let uri = rest.get(4..4 + uri_len).ok_or_else(bad)?;
    let tail = rest.get(4 + uri_len..4 + uri_len + 16).ok_or_else(bad)?;
    let offset = i64::from_le_bytes(tail[..8].try_into().map_err(|_| bad())?);
    let length = i64::from_le_bytes(tail[8..].try_into().map_err(|_| bad())?);
    Ok(Some(Descriptor {
        uri: String::from_utf8(uri.to_vec()).map_err(|_| bad())?,
        offset: u64::try_from(offset).map_err(|_| bad())?,
        length: match length {
            -1 => None,
            l => Some(u64::try_from(l).map_err(|_| bad())?),
        },
    }))
}

/// Whether `b` is exactly one serialized `BlobViewStruct` (version 1, `"BLOBVIEW"`, the
/// upstream identifier, field id and row id, no trailing byte), as pypaimon checks it.
fn is_view_struct(b: &[u8]) -> bool {
    if b.len() < 25 || b[0] != 1 || b[1..9] != BLOB_VIEW_MAGIC.to_le_bytes() {
        return false;
    }
    let Some(len) = b
        .get(9..13)
        .and_then(|l| l.try_into().ok())
        .map(u32::from_le_bytes)
    else {
        return false;
    };
    let end = 13 + len as usize;
    end + 12 == b.len() && std::str::from_utf8(&b[13..end]).is_ok()
}

/// Whether `b` parses as a serialized `BlobDescriptor`: version 2 (with the magic), or
/// version 1 (without), whose URI length fits the value (Java's prefix parser).
fn is_descriptor(b: &[u8]) -> bool {
    if matches!(parse_descriptor(b), Ok(Some(_))) {
        return true;
    }
    let v1_uri = b
        .get(1..5)
        .and_then(|l| l.try_into().ok())
        .map(i32::from_le_bytes);
    b.first() == Some(&1)
        && !is_view_struct(b)
        && v1_uri
            .and_then(|l| usize::try_from(l).ok())
            .is_some_and(|l| 5 + l + 16 <= b.len())
}

/// Checks the values written to the inline BLOB columns of `batch` (the table's columns,
/// `fields`): a `blob-descriptor-field` value must be a serialized `BlobDescriptor`, a
/// `blob-view-field` value a serialized `BlobViewStruct` (pypaimon's
/// `_validate_inline_stored_fields_input`, its messages).
pub fn check_inline_blob_values(
    raw: &std::collections::BTreeMap<String, String>,
    fields: &[crate::spec::types::DataField],
    batch: &RecordBatch,
) -> Result<()> {
    let (descriptor, view) = crate::options::blob_inline_fields(raw);
    if descriptor.is_empty() && view.is_empty() {
        return Ok(());
    }
    for (i, f) in fields.iter().enumerate() {
        let (ok, what, option): (fn(&[u8]) -> bool, _, _) = if descriptor.contains(&f.name) {
            (is_descriptor, "BlobDescriptor", "blob-descriptor-field")
        } else if view.contains(&f.name) {
            (is_view_struct, "BlobViewStruct", "blob-view-field")
        } else {
            continue;
        };
        let Some(col) = batch.columns().get(i) else {
            continue;
        };
        let Some(values) = col.as_any().downcast_ref::<arrow_array::LargeBinaryArray>() else {
            return Err(Error::Internal(format!(
                "BLOB column '{}' aligned as {}",
                f.name,
                col.data_type()
            )));
        };
        if let Some(row) = values.iter().position(|v| v.is_some_and(|b| !ok(b))) {
            return Err(Error::invalid(format!(
                "{option} requires blob field value to be a serialized {what} (column '{}', \
                 row {row}).",
                f.name
            )));
        }
    }
    Ok(())
}

/// A BLOB value checked for writing: null, the bytes themselves, or the range `offset`,
/// `len` of a local file a descriptor points at (read when it is added).
enum Value<'a> {
    Null,
    Bytes(&'a [u8]),
    File(PathBuf, u64, usize),
}

/// One row of a BLOB column checked for writing: a BLOB value, an `ARRAY<BLOB>` value's
/// elements, or a `MAP<X, BLOB>` value's serialized keys and values (a null array or map is
/// `One(Null)`).
enum Cell<'a> {
    One(Value<'a>),
    Array(Vec<Value<'a>>),
    Map(Vec<Vec<u8>>, Vec<Value<'a>>),
}

/// What the record of `v` is written from (None a null): a descriptor's file range is copied
/// in chunks as it is written, never loaded whole.
fn part<'a>(v: &'a Value<'_>) -> Option<Part<'a>> {
    match v {
        Value::Null => None,
        Value::Bytes(b) => Some(Part::Bytes(b)),
        Value::File(path, offset, len) => Some(Part::File {
            path,
            offset: *offset,
            len: *len as u64,
        }),
    }
}

/// One BLOB value (`b`, None a null) of column `name`: a serialized `BlobDescriptor` is
/// resolved (its bytes are written), a video frame or view refused.
fn value<'a>(name: &str, b: Option<&'a [u8]>) -> Result<Value<'a>> {
    let Some(b) = b else {
        return Ok(Value::Null);
    };
    match parse_descriptor(b)? {
        Some(d) => resolve_descriptor(name, &d),
        None => {
            refuse_video_frame(name, b)?;
            Ok(Value::Bytes(b))
        }
    }
}

/// The rows of `array`, column `name` of type `t`, checked for writing (pypaimon's
/// `BlobFormatWriter.add_element` checks: a null element of a NOT NULL element type, a
/// duplicate map key).
fn cells<'a>(name: &str, t: &DataType, array: &'a dyn Array) -> Result<Vec<Cell<'a>>> {
    use crate::spec::types::TypeKind;
    let mut out = Vec::with_capacity(array.len());
    match (&t.kind, array.data_type()) {
        (TypeKind::Blob, _) => {
            for row in 0..array.len() {
                let b = blob_bytes(array, row).map_err(|e| column_err(name, e))?;
                out.push(Cell::One(value(name, b)?));
            }
        }
        (TypeKind::Array(e), ArrowType::List(_)) => {
            let list = array.as_list::<i32>();
            let (values, offsets) = (list.values().as_ref(), list.value_offsets());
            for row in 0..array.len() {
                if array.is_null(row) {
                    out.push(Cell::One(Value::Null));
                    continue;
                }
                let mut elements = vec![];
                for i in offsets[row] as usize..offsets[row + 1] as usize {
                    let b = blob_bytes(values, i).map_err(|e| column_err(name, e))?;
                    if b.is_none() && !e.nullable {
                        return Err(Error::invalid(format!(
                            "ARRAY<BLOB> field '{name}' does not allow null elements"
                        )));
                    }
                    elements.push(value(name, b)?);
                }
                out.push(Cell::Array(elements));
            }
        }
        (TypeKind::Map(k, v), ArrowType::Map(..)) => {
            let map = array.as_map();
            let (keys, values, offsets) = (
                map.keys().as_ref(),
                map.values().as_ref(),
                map.value_offsets(),
            );
            for row in 0..array.len() {
                if array.is_null(row) {
                    out.push(Cell::One(Value::Null));
                    continue;
                }
                let (mut ks, mut vs) = (vec![], vec![]);
                let mut seen = std::collections::HashSet::new();
                for i in offsets[row] as usize..offsets[row + 1] as usize {
                    let key = key_bytes(keys, i, k).map_err(|e| column_err(name, e))?;
                    if !seen.insert(key.clone()) {
                        return Err(Error::invalid(format!(
                            "column '{name}': MAP<X, BLOB> keys must be unique."
                        )));
                    }
                    let b = blob_bytes(values, i).map_err(|e| column_err(name, e))?;
                    if b.is_none() && !v.nullable {
                        return Err(Error::invalid(format!(
                            "MAP<X, BLOB> field '{name}' does not allow null values"
                        )));
                    }
                    ks.push(key);
                    vs.push(value(name, b)?);
                }
                out.push(Cell::Map(ks, vs));
            }
        }
        (_, a) => {
            return Err(Error::invalid(format!(
                "BLOB column '{name}' of type {}: got Arrow {a}",
                t.sql_string()
            )))
        }
    }
    Ok(out)
}

fn column_err(name: &str, e: Error) -> Error {
    crate::table::new_schema::column_error(name, e)
}

/// The local file range a descriptor points at (a local file only; pypaimon reads any URI its
/// file IO knows), checked without reading it: a range past the file's end is an error naming
/// the file.
fn resolve_descriptor<'a>(column: &str, d: &Descriptor) -> Result<Value<'a>> {
    let Some(local) = local_file(&d.uri) else {
        return Err(Error::unsupported(format!(
            "BLOB column '{column}': reading the BlobDescriptor of '{}' to write its bytes \
             (paimon_rs writes descriptors of local files only: a path or a file: URI)",
            d.uri
        )));
    };
    let size = std::fs::metadata(&local)
        .map_err(|e| Error::io(&local, e))?
        .len();
    let len = match d.length {
        Some(l) if d.offset.checked_add(l).is_some_and(|end| end <= size) => l,
        None if d.offset <= size => size - d.offset,
        _ => {
            return Err(Error::invalid(format!(
                "BLOB column '{column}': the BlobDescriptor of '{}' points at bytes {}..{} of \
                 a file of {size} bytes",
                d.uri,
                d.offset,
                d.length.map_or("end".to_string(), |l| d
                    .offset
                    .saturating_add(l)
                    .to_string())
            )))
        }
    };
    let len = usize::try_from(len).map_err(|_| Error::invalid("BLOB descriptor too long"))?;
    Ok(Value::File(local, d.offset, len))
}

/// The local file a descriptor's URI names, as pypaimon's `LocalFileIO` reads it: a path, or
/// a `file:` URI (`file:///p`, `file://localhost/p`, `file:/p`; percent-decoded; another host
/// is a UNC share `//host/p`); None for another scheme or a path that is not UTF-8 once
/// decoded. A `file:` URI's query and fragment are dropped, as pypaimon's `urlparse`.
fn local_file(uri: &str) -> Option<PathBuf> {
    let Some(rest) = uri.strip_prefix("file:") else {
        return (!uri.contains("://")).then(|| PathBuf::from(uri));
    };
    // `urlparse`: a `file:` URI's query and fragment are not part of its path
    let rest = rest.split(['?', '#']).next().unwrap_or_default();
    let (host, path) = match rest.strip_prefix("//") {
        Some(r) => r.split_at(r.find('/').unwrap_or(r.len())),
        None => ("", rest),
    };
    let path = percent_encoding::percent_decode_str(path)
        .decode_utf8()
        .ok()?;
    Some(match host {
        "" | "localhost" => PathBuf::from(path.as_ref()),
        _ => PathBuf::from(format!("//{host}{path}")),
    })
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::io::blob::{decode, descriptor_bytes, BlobValue};

    #[test]
    fn descriptor_uris_name_local_files_as_pypaimon_reads_them() {
        use std::path::PathBuf;
        let p = |s: &str| Some(PathBuf::from(s));
        assert_eq!(local_file("/tmp/a b"), p("/tmp/a b"));
        assert_eq!(local_file("rel/x.bin"), p("rel/x.bin"));
        assert_eq!(local_file("file:///tmp/a%20b"), p("/tmp/a b"));
        assert_eq!(local_file("file://localhost/tmp/x"), p("/tmp/x"));
        assert_eq!(local_file("file:/tmp/x"), p("/tmp/x"));
        assert_eq!(local_file("file://server/share/x"), p("//server/share/x"));
        assert_eq!(local_file("s3://bucket/x"), None);
        assert_eq!(local_file("file:///bad%ff"), None);
        // a file: URI's query and fragment are cut as `urlparse` cuts them (a %23 stays)
        assert_eq!(local_file("file:///tmp/clip#2.bin"), p("/tmp/clip"));
        assert_eq!(local_file("file:///tmp/clip?x=1"), p("/tmp/clip"));
        assert_eq!(local_file("file:///tmp/clip%232.bin"), p("/tmp/clip#2.bin"));
    }

    fn spec(target: u64) -> Arc<BlobSpec> {
        Arc::new(BlobSpec {
            normal_cols: vec![0],
            normal_names: vec!["id".into()],
            blob_cols: vec![(1, "b".into())],
            blob_types: vec![DataType::new(crate::spec::types::TypeKind::Blob)],
            target_size: target,
            schema_id: 0,
            prefix: "data-".into(),
            file_source: 0,
        })
    }

    fn batch(values: Vec<Option<&[u8]>>) -> RecordBatch {
        let ids: Vec<i64> = (0..values.len() as i64).collect();
        RecordBatch::try_from_iter(vec![
            (
                "id",
                Arc::new(arrow_array::Int64Array::from(ids)) as arrow_array::ArrayRef,
            ),
            (
                "b",
                Arc::new(arrow_array::LargeBinaryArray::from(values)) as arrow_array::ArrayRef,
            ),
        ])
        .expect("batch")
    }

    #[test]
    fn blob_files_roll_at_the_target_size_and_cover_the_data_file() -> Result<()> {
        let dir = tempfile::tempdir().map_err(|e| Error::io(Path::new("tmp"), e))?;
        let mut s = BlobSidecars::new(spec(40), dir.path().to_path_buf(), None);
        let big = vec![7u8; 30];
        let b = batch(vec![Some(&big), None, Some(b"x"), Some(&big), Some(b"y")]);
        assert_eq!(s.data_columns(&b)?.num_columns(), 1);
        s.write(&b)?;
        let metas = s.finish_data_file(5, (3, 7))?;
        // 30 + 16 bytes of the first record reach 40: rolled after row 0, then after row 3
        let rows: Vec<i64> = metas.iter().map(|m| m.row_count).collect();
        assert_eq!(rows, vec![1, 3, 1]);
        let mut all = vec![];
        for m in &metas {
            assert_eq!(m.write_cols, Some(vec!["b".to_string()]));
            assert!(m.file_name.starts_with("data-") && m.file_name.ends_with(".blob"));
            let bytes = std::fs::read(dir.path().join(&m.file_name))
                .map_err(|e| Error::io(dir.path(), e))?;
            assert_eq!(bytes.len() as i64, m.file_size);
            for v in decode(&bytes, dir.path())? {
                all.push(match v {
                    BlobValue::Data(d) => Some(d.to_vec()),
                    _ => None,
                });
            }
        }
        assert_eq!(
            all,
            vec![
                Some(big.clone()),
                None,
                Some(b"x".to_vec()),
                Some(big),
                Some(b"y".to_vec())
            ]
        );
        assert_eq!(s.written_paths().len(), 3);
        // the next data file's blob files start afresh
        assert!(s.finish_data_file(0, (0, 0))?.is_empty());
        Ok(())
    }

    #[test]
    fn descriptors_of_local_files_are_written_as_their_bytes() -> Result<()> {
        let dir = tempfile::tempdir().map_err(|e| Error::io(Path::new("tmp"), e))?;
        let src = dir.path().join("src.bin");
        std::fs::write(&src, b"0123456789").map_err(|e| Error::io(&src, e))?;
        let d = descriptor_bytes(&format!("file://{}", src.display()), 2, 5)?;
        let parsed = parse_descriptor(&d)?.expect("a descriptor");
        assert_eq!((parsed.offset, parsed.length), (2, Some(5)));
        let mut s = BlobSidecars::new(spec(1 << 20), dir.path().to_path_buf(), None);
        s.write(&batch(vec![Some(&d)]))?;
        let metas = s.finish_data_file(1, (0, 0))?;
        let bytes = std::fs::read(dir.path().join(&metas[0].file_name))
            .map_err(|e| Error::io(dir.path(), e))?;
        assert_eq!(decode(&bytes, dir.path())?, vec![BlobValue::Data(b"23456")]);
        let remote = descriptor_bytes("s3://bucket/x", 0, 1)?;
        let e = s.write(&batch(vec![Some(&remote)])).unwrap_err();
        assert!(matches!(e, Error::Unsupported { .. }), "{e}");
        assert!(parse_descriptor(&d[..12]).is_err());
        assert_eq!(parse_descriptor(b"plain bytes")?, None);
        Ok(())
    }

    /// A value refused in the middle of a chunk (a descriptor past its file's end, a video
    /// frame) leaves the `.blob` files as they were; length -1 reads to the file's end; the
    /// open files close on memory pressure and the data file spans them.
    #[test]
    fn refused_values_leave_the_files_in_step() -> Result<()> {
        let dir = tempfile::tempdir().map_err(|e| Error::io(Path::new("tmp"), e))?;
        let src = dir.path().join("src.bin");
        std::fs::write(&src, b"0123456789").map_err(|e| Error::io(&src, e))?;
        let uri = src.display().to_string();
        let mut s = BlobSidecars::new(spec(1 << 20), dir.path().to_path_buf(), None);
        s.write(&batch(vec![Some(b"a")]))?;
        let mut to_end = descriptor_bytes(&uri, 7, 0)?;
        let n = to_end.len();
        to_end[n - 8..].copy_from_slice(&(-1i64).to_le_bytes());
        let past = descriptor_bytes(&uri, 8, 1 << 40)?;
        let e = s.write(&batch(vec![Some(b"b"), Some(&past)])).unwrap_err();
        assert!(e.to_string().contains("a file of 10 bytes"), "{e}");
        let mut frame = vec![1u8];
        frame.extend_from_slice(&VIDEO_FRAME_MAGIC.to_le_bytes());
        let e = s.write(&batch(vec![Some(b"c"), Some(&frame)])).unwrap_err();
        assert!(matches!(e, Error::Unsupported { .. }), "{e}");
        s.write(&batch(vec![Some(&to_end)]))?;
        s.close_column(0)?;
        s.write(&batch(vec![None]))?;
        let metas = s.finish_data_file(3, (0, 0))?;
        assert_eq!(
            metas.iter().map(|m| m.row_count).collect::<Vec<_>>(),
            vec![2, 1]
        );
        let mut all = vec![];
        for m in &metas {
            let bytes = std::fs::read(dir.path().join(&m.file_name))
                .map_err(|e| Error::io(dir.path(), e))?;
            all.extend(
                decode(&bytes, dir.path())?
                    .into_iter()
                    .map(|v| format!("{v:?}")),
            );
        }
        let want = [
            BlobValue::Data(b"a"),
            BlobValue::Data(b"789"),
            BlobValue::Null,
        ];
        assert_eq!(
            all,
            want.iter().map(|v| format!("{v:?}")).collect::<Vec<_>>()
        );
        Ok(())
    }
}
