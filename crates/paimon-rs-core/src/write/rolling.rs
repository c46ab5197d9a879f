//! RollingFileWriter: writes a stream of sorted batches into data files (the table's
//! `file.format`), starting a new file when the current one reaches `target-file-size`, and fills
//! each file's DataFileMeta (min/max key, key and value stats, sequence range, row and delete
//! counts). The stats come from the Arrow batches, the same for every format.

use std::path::{Path, PathBuf};

use arrow_array::cast::AsArray;
use arrow_array::types::{Int64Type, Int8Type};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::SchemaRef;
use parquet::file::properties::WriterProperties;

use super::stats::StatsCollector;
use crate::error::Result;
use crate::io::format::{DataFileWriter, WriteFormat};
use crate::io::parquet::writer_properties;
use crate::options::{CoreOptions, FileKind, StatsMode};
use crate::spec::binary_row::{empty_row, RowEncoder};
use crate::spec::manifest::{DataFileMeta, SimpleStats};
use crate::spec::row_kind::is_retract_byte;
use crate::spec::types::DataType;

/// Rows written between two checks of the file size (Paimon checks every 1000 records).
const CHUNK_ROWS: usize = 4096;

/// `data-file.external-paths` of a writer and the table's directory (the bucket directory's
/// path below it is kept under the root).
pub type ExternalRoots = Option<(std::sync::Arc<super::external_path::ExternalPaths>, PathBuf)>;

/// Everything that is fixed for the files one writer produces.
#[derive(Clone)]
pub struct FileWriterContext {
    pub dir: PathBuf,
    pub prefix: String,
    pub file_schema: SchemaRef,
    /// The files' format (`file.format`); `props` are the Parquet writer's.
    pub format: WriteFormat,
    pub props: WriterProperties,
    pub target_size: u64,
    /// Rows at which a file rolls (`target-file-row-num`, written files only: compaction and
    /// changelog files roll by size alone, as Java's); `i64::MAX as u64` for no limit.
    pub target_rows: u64,
    pub schema_id: i64,
    pub level: i32,
    pub file_source: i32,
    /// Number of leading `_KEY_*` columns in the file batch (0 for append tables).
    pub key_types: Vec<DataType>,
    /// Index of `_SEQUENCE_NUMBER` / `_VALUE_KIND` in the file batch (primary-key files).
    pub seq_col: Option<usize>,
    pub kind_col: Option<usize>,
    /// Columns of the file batch that get value stats, with their types and names.
    pub value_stats_cols: Vec<usize>,
    pub value_stats_types: Vec<DataType>,
    /// `_VALUE_STATS_COLS`: None = all table columns, Some(list) otherwise.
    pub value_stats_names: Option<Vec<String>>,
    pub stats_mode: StatsMode,
    /// The file index each file gets (`file-index.bloom-filter.columns`), if any.
    pub file_index: Option<std::sync::Arc<crate::fileindex::FileIndexSpec>>,
    /// The files are changelog files (Java's `WriteFormatKey.isChangelog`): the
    /// `changelog-file.*` options choose their format, codec and stats mode.
    pub changelog: bool,
    /// The formats, codecs and stats modes of the levels `file.format.per.level`,
    /// `file.compression.per.level` name and of changelog files (primary-key tables with those
    /// options); None: every file is written as `format` / `props` / `stats_mode`.
    pub kinds: Option<std::sync::Arc<FileKindFormats>>,
    /// The table's BLOB columns, written to `.blob` files beside each data file
    /// (write/blob_write.rs); the file schema then holds the other columns only.
    pub blob: Option<std::sync::Arc<super::blob_write::BlobSpec>>,
    /// `data-file.external-paths`: new files go under these roots (their manifest entries
    /// name them by `_EXTERNAL_PATH`), `dir` taken relative to the table root given.
    pub external: ExternalRoots,
}

/// What one kind of file is written as.
#[derive(Clone)]
pub struct FileChoice {
    pub format: WriteFormat,
    pub props: WriterProperties,
    pub stats_mode: StatsMode,
}

/// The choices of a primary-key table whose options set formats, codecs or stats modes per
/// level or for changelog files (paimon-behaviour.md §1.5a): the choice of a file is made when
/// it is opened, from the writer's `level` and `changelog`, so a context whose level is set
/// after it was made (compaction's output level) writes what Java would.
pub struct FileKindFormats {
    named: std::collections::BTreeMap<FileKind, FileChoice>,
    /// Data files and changelog files of the levels no option names.
    other: FileChoice,
    other_changelog: FileChoice,
}

impl FileKindFormats {
    /// The choices of `opts` (None when no per-level or changelog-file option is set);
    /// `unique_columns` skip Parquet's dictionary encoding.
    pub fn new(
        opts: &CoreOptions,
        unique_columns: &[String],
    ) -> Result<Option<std::sync::Arc<FileKindFormats>>> {
        if !opts.has_file_kind_options() {
            return Ok(None);
        }
        let choice = |kind: FileKind| -> Result<FileChoice> {
            let format = WriteFormat::for_kind(opts, kind)?;
            let props = match format {
                WriteFormat::Parquet => writer_properties(
                    opts.file_compression_of(kind).0,
                    opts.zstd_level,
                    unique_columns,
                )?,
                _ => WriterProperties::default(),
            };
            Ok(FileChoice {
                format,
                props,
                stats_mode: opts.stats_mode_of(kind),
            })
        };
        let mut named = std::collections::BTreeMap::new();
        let mut levels = std::collections::BTreeSet::new();
        for level in opts
            .file_format_per_level
            .keys()
            .chain(opts.file_compression_per_level.keys())
            .chain(opts.stats_mode_per_level.keys())
        {
            levels.insert(*level);
            for changelog in [false, true] {
                let kind = FileKind {
                    level: *level,
                    changelog,
                };
                named.insert(kind, choice(kind)?);
            }
        }
        // a level no option names
        let free = (0..).find(|l| !levels.contains(l)).unwrap_or(i32::MAX);
        Ok(Some(std::sync::Arc::new(FileKindFormats {
            named,
            other: choice(FileKind {
                level: free,
                changelog: false,
            })?,
            other_changelog: choice(FileKind {
                level: free,
                changelog: true,
            })?,
        })))
    }

    /// The choice of a file of `kind`.
    pub fn choose(&self, kind: FileKind) -> &FileChoice {
        match self.named.get(&kind) {
            Some(c) => c,
            None if kind.changelog => &self.other_changelog,
            None => &self.other,
        }
    }
}

impl FileWriterContext {
    /// This context writing changelog files named with `prefix` (`changelog-file.prefix`).
    pub fn into_changelog(mut self, prefix: &str) -> FileWriterContext {
        self.prefix = prefix.to_string();
        self.changelog = true;
        // Java's changelog writers have no row limit
        self.target_rows = i64::MAX as u64;
        self
    }

    /// The format, Parquet properties and stats mode of the next file this context writes.
    fn choice(&self) -> (&WriteFormat, &WriterProperties, StatsMode) {
        match &self.kinds {
            Some(k) => {
                let c = k.choose(FileKind {
                    level: self.level,
                    changelog: self.changelog,
                });
                (&c.format, &c.props, c.stats_mode)
            }
            None => (&self.format, &self.props, self.stats_mode),
        }
    }
}

struct OpenFile {
    writer: DataFileWriter,
    name: String,
    /// The directory the file is in: `ctx.dir`, or an external path's.
    dir: PathBuf,
    /// Its `_EXTERNAL_PATH` (data-file.external-paths), if any.
    external: Option<String>,
    min_key: Option<Vec<u8>>,
    max_key: Option<Vec<u8>>,
    key_stats: StatsCollector,
    value_stats: StatsCollector,
    min_seq: i64,
    max_seq: i64,
    deletes: i64,
    index: Option<crate::fileindex::FileIndexBuilder>,
    stats_mode: StatsMode,
}

pub struct RollingFileWriter {
    ctx: FileWriterContext,
    uuid: String,
    counter: usize,
    current: Option<OpenFile>,
    done: Vec<DataFileMeta>,
    /// For append files without a sequence column: the next sequence number to assign.
    next_seq: i64,
    /// How much the open file's size estimate exceeded the bytes the file took when it was
    /// closed: the estimate counts the open pages of each column before compression, a
    /// roughly constant excess, so with a small `target-file-size` (a few pages per column)
    /// files land well under it. Learnt from this writer's first file rolled for size (None
    /// until then) and taken off the estimate of the next ones.
    size_excess: Option<i64>,
    /// The `.blob` files of the table's BLOB columns (`ctx.blob`).
    blobs: Option<super::blob_write::BlobSidecars>,
}

fn serialize_key(types: &[DataType], cols: &[ArrayRef], row: usize) -> Result<Vec<u8>> {
    let enc = RowEncoder::new(types, cols)?;
    let mut buf = Vec::new();
    enc.encode(row, &mut buf)?;
    let mut out = Vec::with_capacity(4 + buf.len());
    out.extend_from_slice(&(types.len() as i32).to_be_bytes());
    out.extend_from_slice(&buf);
    Ok(out)
}

impl RollingFileWriter {
    pub fn new(ctx: FileWriterContext, next_seq: i64) -> Self {
        let blobs = ctx.blob.clone().map(|spec| {
            super::blob_write::BlobSidecars::new(spec, ctx.dir.clone(), ctx.external.clone())
        });
        RollingFileWriter {
            ctx,
            blobs,
            uuid: uuid::Uuid::new_v4().to_string(),
            counter: 0,
            current: None,
            done: vec![],
            next_seq,
            size_excess: None,
        }
    }

    /// Open the next file; `first` (its first rows, file types) decides which Parquet columns
    /// skip dictionary encoding.
    fn open(&mut self, first: &RecordBatch) -> Result<OpenFile> {
        let (format, props, stats_mode) = self.ctx.choice();
        let name = format!(
            "{}{}-{}.{}",
            self.ctx.prefix,
            self.uuid,
            self.counter,
            format.extension()
        );
        self.counter += 1;
        let (path, external) = match &self.ctx.external {
            Some((paths, root)) => {
                let (path, uri) = paths.place(root, &self.ctx.dir, &name)?;
                (path, Some(uri))
            }
            None => (self.ctx.dir.join(&name), None),
        };
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let writer =
            DataFileWriter::create(format, path, self.ctx.file_schema.clone(), props, first)?;
        Ok(OpenFile {
            writer,
            name,
            dir,
            external,
            min_key: None,
            max_key: None,
            key_stats: StatsCollector::new(&self.ctx.key_types, StatsMode::Full),
            value_stats: StatsCollector::new(&self.ctx.value_stats_types, stats_mode),
            min_seq: i64::MAX,
            max_seq: i64::MIN,
            deletes: 0,
            index: self
                .ctx
                .file_index
                .as_deref()
                .map(crate::fileindex::FileIndexBuilder::new)
                .transpose()?,
            stats_mode,
        })
    }

    /// Write a batch with the file schema. Primary-key batches must be sorted by key and hold
    /// each key at most once across all batches of this writer.
    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        let n = batch.num_rows();
        let mut offset = 0;
        while offset < n {
            // a chunk never crosses the row limit (`target-file-row-num`)
            let in_file = self.current.as_ref().map_or(0, |f| f.writer.rows());
            let room = self.ctx.target_rows.saturating_sub(in_file).max(1);
            let len = CHUNK_ROWS
                .min(n - offset)
                .min(usize::try_from(room).unwrap_or(usize::MAX));
            let chunk = batch.slice(offset, len);
            self.write_chunk(&chunk)?;
            offset += len;
            let (full, rows_full) = self
                .current
                .as_ref()
                .map(|f| {
                    let excess = self.size_excess.unwrap_or(0);
                    (
                        f.writer.estimated_size() as i64 - excess >= self.ctx.target_size as i64,
                        f.writer.rows() >= self.ctx.target_rows,
                    )
                })
                .unwrap_or((false, false));
            if full {
                self.roll(true)?;
            } else if rows_full {
                self.roll(false)?;
            }
        }
        Ok(())
    }

    fn write_chunk(&mut self, chunk: &RecordBatch) -> Result<()> {
        let file_batch = match &mut self.blobs {
            Some(b) => {
                // the data columns converted first: a value they refuse leaves the `.blob`
                // files as they were (in step with the data file)
                let data = crate::io::file_write::to_file_types(
                    &b.data_columns(chunk)?,
                    &self.ctx.file_schema,
                )?;
                b.write(chunk)?;
                data
            }
            None => crate::io::file_write::to_file_types(chunk, &self.ctx.file_schema)?,
        };
        let mut file = match self.current.take() {
            Some(f) => f,
            None => self.open(&file_batch)?,
        };
        let rows = chunk.num_rows();
        file.writer.write(&file_batch)?;
        let nk = self.ctx.key_types.len();
        if nk > 0 {
            let keys: Vec<ArrayRef> = chunk.columns()[..nk].to_vec();
            if file.min_key.is_none() {
                file.min_key = Some(serialize_key(&self.ctx.key_types, &keys, 0)?);
            }
            file.max_key = Some(serialize_key(&self.ctx.key_types, &keys, rows - 1)?);
            let refs: Vec<&dyn Array> = keys.iter().map(|a| a.as_ref()).collect();
            file.key_stats.update(&refs)?;
        }
        let vals: Vec<&dyn Array> = self
            .ctx
            .value_stats_cols
            .iter()
            .map(|&i| chunk.column(i).as_ref())
            .collect();
        file.value_stats.update(&vals)?;
        if let (Some(ix), Some(spec)) = (file.index.as_mut(), self.ctx.file_index.as_deref()) {
            ix.update(spec, chunk)?;
        }
        match self.ctx.seq_col {
            Some(i) => {
                let s = chunk.column(i).as_primitive::<Int64Type>();
                if let (Some(lo), Some(hi)) = (arrow::compute::min(s), arrow::compute::max(s)) {
                    file.min_seq = file.min_seq.min(lo);
                    file.max_seq = file.max_seq.max(hi);
                }
            }
            None => {
                file.min_seq = file.min_seq.min(self.next_seq);
                self.next_seq += rows as i64;
                file.max_seq = file.max_seq.max(self.next_seq - 1);
            }
        }
        if let Some(i) = self.ctx.kind_col {
            let k = chunk.column(i).as_primitive::<Int8Type>();
            file.deletes += k.values().iter().filter(|&&v| is_retract_byte(v)).count() as i64;
        }
        self.current = Some(file);
        Ok(())
    }

    /// Close the open file; `for_size`: it reached the target size (the close then tells how
    /// the estimate compares with the bytes written, see `size_excess`).
    fn roll(&mut self, for_size: bool) -> Result<()> {
        let Some(file) = self.current.take() else {
            return Ok(());
        };
        let rows = file.writer.rows() as i64;
        let estimate = file.writer.estimated_size();
        let size = file.writer.close()?;
        if for_size && self.size_excess.is_none() {
            let half = self.ctx.target_size as i64 / 2;
            self.size_excess = Some((estimate as i64 - size as i64).clamp(-half, half));
        }
        let (min_key, max_key, key_stats) = if self.ctx.key_types.is_empty() {
            (empty_row(), empty_row(), SimpleStats::empty())
        } else {
            (
                file.min_key.unwrap_or_else(empty_row),
                file.max_key.unwrap_or_else(empty_row),
                file.key_stats.finish()?,
            )
        };
        let (value_stats, cols) = if matches!(file.stats_mode, StatsMode::None) {
            (SimpleStats::empty(), Some(vec![]))
        } else {
            (
                file.value_stats.finish()?,
                self.ctx.value_stats_names.clone(),
            )
        };
        // the file index: in the manifest when small, else in `<data file>.index` beside it
        // (Java's DataFileIndexWriter; docs/paimon-format.md §13)
        let (embedded_index, extra_files) = match (file.index, self.ctx.file_index.as_deref()) {
            (Some(ix), Some(spec)) => match ix.finish(spec)? {
                crate::fileindex::BuiltIndex::Embedded(b) => (Some(b), vec![]),
                crate::fileindex::BuiltIndex::File(b) => {
                    let name = format!("{}{}", file.name, crate::fileindex::INDEX_SUFFIX);
                    let path = file.dir.join(&name);
                    if let Err(e) = crate::io::write_new(&path, &b) {
                        let _ = crate::io::remove_file_if_exists(&file.dir.join(&file.name));
                        return Err(e);
                    }
                    (None, vec![name])
                }
            },
            _ => (None, vec![]),
        };
        let creation = chrono::Local::now()
            .naive_local()
            .and_utc()
            .timestamp_millis();
        let min_sequence_number = if rows > 0 { file.min_seq } else { 0 };
        let max_sequence_number = if rows > 0 { file.max_seq } else { 0 };
        // the `.blob` files of this file's rows follow it (pypaimon's order)
        let (write_cols, blob_files) = match &mut self.blobs {
            Some(b) => (
                Some(b.write_cols()),
                b.finish_data_file(rows, (min_sequence_number, max_sequence_number))?,
            ),
            None => (None, vec![]),
        };
        self.done.push(DataFileMeta {
            file_name: file.name,
            file_size: size as i64,
            row_count: rows,
            min_key,
            max_key,
            key_stats,
            value_stats,
            min_sequence_number,
            max_sequence_number,
            schema_id: self.ctx.schema_id,
            level: self.ctx.level,
            extra_files,
            creation_time: Some(creation),
            delete_row_count: Some(file.deletes),
            embedded_index,
            file_source: Some(self.ctx.file_source),
            value_stats_cols: cols,
            external_path: file.external,
            first_row_id: None,
            write_cols,
            write_cols_sequences: None,
        });
        self.done.extend(blob_files);
        Ok(())
    }

    /// The open file's size estimate (bytes written plus the open row group's encoded size)
    /// and its rows; None when no file is open. For callers that choose their own cut points.
    pub fn open_file_size(&self) -> Option<(u64, u64)> {
        let f = self.current.as_ref()?;
        Some((f.writer.estimated_size(), f.writer.rows()))
    }

    /// Close the open file now (a cut the caller chose: sort compaction's curve cells) and
    /// return its size in bytes (None: no file was open); the next write opens a new one.
    pub fn roll_now(&mut self) -> Result<Option<u64>> {
        let before = self.done.len();
        self.roll(false)?;
        Ok(self.done[before..].first().map(|f| f.file_size as u64))
    }

    /// Close the open file and return the metadata of every file written.
    pub fn close(mut self) -> Result<Vec<DataFileMeta>> {
        self.roll(false)?;
        if let Some(b) = &mut self.blobs {
            b.hand_over(); // the caller owns the `.blob` files now (they are in `done`)
        }
        Ok(std::mem::take(&mut self.done))
    }

    /// Memory held by the open file's row group (Parquet) or block (Avro).
    pub fn buffered_bytes(&self) -> usize {
        let blobs = self.blobs.as_ref().map_or(0, |b| b.buffered_bytes());
        self.current
            .as_ref()
            .map(|f| f.writer.buffered_bytes())
            .unwrap_or(0)
            + blobs
    }

    /// Write the open file's row group out (freeing its memory); the file stays open, as do
    /// the open `.blob` files (their buffers written out).
    pub fn flush_row_group(&mut self) -> Result<()> {
        if let Some(b) = &mut self.blobs {
            b.flush()?;
        }
        match self.current.as_mut() {
            Some(f) => f.writer.flush_buffered(),
            None => Ok(()),
        }
    }

    /// Paths of the finished files and their index files (to delete them if the write is
    /// abandoned).
    pub fn written_paths(&self) -> Vec<PathBuf> {
        let mut paths: Vec<PathBuf> = self
            .done
            .iter()
            .flat_map(|f| {
                let dir = crate::kv::reader::file_dir(&self.ctx.dir, f);
                std::iter::once(crate::kv::reader::file_path(&self.ctx.dir, f))
                    .chain(f.extra_files.iter().map(move |x| dir.join(x)))
            })
            .collect();
        // `.blob` files of the open data file (not in `done` yet)
        if let Some(b) = &self.blobs {
            for p in b.written_paths() {
                if !paths.contains(p) {
                    paths.push(p.clone());
                }
            }
        }
        paths
    }
}

impl Drop for RollingFileWriter {
    fn drop(&mut self) {
        // An abandoned writer (error path) removes what it wrote; the open file's temp file is
        // removed by the file writer's own Drop.
        if !self.done.is_empty()
            || self
                .blobs
                .as_ref()
                .is_some_and(|b| !b.written_paths().is_empty())
        {
            for p in self.written_paths() {
                let _ = crate::io::remove_file_if_exists(&p);
            }
        }
    }
}
