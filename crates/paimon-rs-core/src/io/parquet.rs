//! Parquet data files: writing with Paimon's compression settings and field ids, reading with a
//! projection by column name (both Paimon readers match columns by name).

use std::path::{Path, PathBuf};

use std::collections::HashSet;

use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_row::{RowConverter, SortField};
use arrow_schema::{DataType, SchemaRef};
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReader,
    ParquetRecordBatchReaderBuilder, RowSelection, RowSelector,
};
use parquet::arrow::{ArrowWriter, ProjectionMask};
use parquet::basic::{Compression, GzipLevel, ZstdLevel};
use parquet::file::metadata::{KeyValue, PageIndexPolicy};
use parquet::file::properties::WriterProperties;
use parquet::file::reader::ChunkReader;
use parquet::schema::types::ColumnPath;

use super::checksum::{self, Blocks, ChecksumWriter, VerifiedFile};
use super::data_file::{contain_panic, open_checked, Source};
use super::data_file::{DataFileReader, FileExpect};
use super::file_write::{StagedFile, WritebackFile};
use super::int96::{has_nanos, Int96FileWriter};
use super::remote::ReadAt;
use crate::error::{Error, Result};

/// Dictionary page size before a column falls back to plain encoding.
const DICTIONARY_PAGE_BYTES: usize = 256 << 10;

/// Largest row group, by estimated encoded size.
pub const ROW_GROUP_BYTES: usize = 16 << 20;

/// Writer properties for a data file. `unique_columns` (primary-key and sequence columns) hold
/// no repeated values, so dictionary encoding would only cost time.
pub fn writer_properties(
    compression: &str,
    zstd_level: i32,
    unique_columns: &[String],
) -> Result<WriterProperties> {
    let c = match compression {
        "zstd" => Compression::ZSTD(
            ZstdLevel::try_new(zstd_level)
                .map_err(|e| Error::invalid(format!("file.compression.zstd-level: {e}")))?,
        ),
        "snappy" => Compression::SNAPPY,
        "lz4" => Compression::LZ4_RAW,
        "gzip" => Compression::GZIP(GzipLevel::default()),
        "none" | "uncompressed" => Compression::UNCOMPRESSED,
        other => return Err(Error::unsupported(format!("file.compression '{other}'"))),
    };
    let mut b = WriterProperties::builder();
    for col in unique_columns {
        b = b.set_column_dictionary_enabled(ColumnPath::from(col.as_str()), false);
    }
    Ok(b.set_compression(c)
        // A column whose distinct values outgrow this falls back to plain encoding sooner:
        // high-cardinality columns stop paying for the dictionary early.
        .set_dictionary_page_size_limit(DICTIONARY_PAGE_BYTES)
        .set_max_row_group_row_count(Some(1 << 20))
        // Bounds the memory of an open file writer (a row group is buffered until flushed);
        // Java's parquet.block.size plays the same role.
        .set_max_row_group_bytes(Some(ROW_GROUP_BYTES))
        // Column-chunk statistics, as parquet-mr writes them: Java Paimon pushes predicates into
        // its Parquet reader (ParquetReaderFactory -> FilterCompat), which skips row groups by
        // them. They cost ~5% of a bulk write's CPU (a comparison per string value); page-level
        // statistics are left off.
        .set_statistics_enabled(parquet::file::properties::EnabledStatistics::Chunk)
        .build())
}

/// Rows of a file's first batch looked at to tell nearly unique columns.
const DICTIONARY_SAMPLE_ROWS: usize = 4096;

/// `props` with dictionary encoding switched off for the top-level columns whose values in the
/// first rows of `batch` are nearly all distinct (at least 90% of the non-null values). Such a
/// column would fill its dictionary page and fall back to plain encoding anyway, after paying
/// for hashing every value into the dictionary. A column of a few thousand distinct values
/// drawn at random shows ~70% distinct in 4096 rows and keeps its dictionary.
pub fn dictionary_by_sample(props: &WriterProperties, batch: &RecordBatch) -> WriterProperties {
    let n = batch.num_rows().min(DICTIONARY_SAMPLE_ROWS);
    if n < 64 {
        return props.clone();
    }
    let schema = batch.schema();
    let mut builder = None;
    for (field, col) in schema.fields().iter().zip(batch.columns()) {
        let path = ColumnPath::from(field.name().as_str());
        let flat = field.data_type().is_primitive()
            || matches!(
                field.data_type(),
                DataType::Utf8 | DataType::LargeUtf8 | DataType::Binary | DataType::LargeBinary
            );
        if !flat || !props.dictionary_enabled(&path) {
            continue;
        }
        let sample = col.slice(0, n);
        let non_null = n - sample.null_count();
        if non_null < 64 || distinct_values(&sample) * 10 < non_null * 9 {
            continue;
        }
        builder = Some(
            builder
                .unwrap_or_else(|| props.clone().into_builder())
                .set_column_dictionary_enabled(path, false),
        );
    }
    builder.map_or_else(|| props.clone(), |b| b.build())
}

/// Distinct non-null values of `array` (0 if its type cannot be row-encoded).
fn distinct_values(array: &ArrayRef) -> usize {
    let Ok(conv) = RowConverter::new(vec![SortField::new(array.data_type().clone())]) else {
        return 0;
    };
    let Ok(rows) = conv.convert_columns(std::slice::from_ref(array)) else {
        return 0;
    };
    let mut seen = HashSet::with_capacity(array.len());
    for i in 0..array.len() {
        if array.is_valid(i) {
            seen.insert(rows.row(i));
        }
    }
    seen.len()
}

/// One Parquet file being written. It is written under a temp name and renamed on `close`, so a
/// crash never leaves a truncated file under a name a manifest could reference.
pub struct ParquetFileWriter {
    path: PathBuf,
    staged: StagedFile,
    writer: Option<Inner>,
    rows: u64,
}

/// arrow-rs's writer, or, for a schema with TIMESTAMP(7..9) columns (INT96 in Java's files),
/// [`Int96FileWriter`].
enum Inner {
    Arrow(ArrowWriter<ChecksumWriter<WritebackFile>>),
    Int96(Int96FileWriter<ChecksumWriter<WritebackFile>>),
}

impl Inner {
    fn write(&mut self, b: &RecordBatch) -> parquet::errors::Result<()> {
        match self {
            Inner::Arrow(w) => w.write(b),
            Inner::Int96(w) => w.write(b),
        }
    }

    fn bytes_written(&self) -> usize {
        match self {
            Inner::Arrow(w) => w.bytes_written(),
            Inner::Int96(w) => w.bytes_written(),
        }
    }

    fn in_progress_size(&self) -> usize {
        match self {
            Inner::Arrow(w) => w.in_progress_size(),
            Inner::Int96(w) => w.in_progress_size(),
        }
    }

    fn memory_size(&self) -> usize {
        match self {
            Inner::Arrow(w) => w.memory_size(),
            Inner::Int96(w) => w.memory_size(),
        }
    }

    fn flush(&mut self) -> parquet::errors::Result<()> {
        match self {
            Inner::Arrow(w) => w.flush(),
            Inner::Int96(w) => w.flush(),
        }
    }

    fn sync(&mut self) -> std::io::Result<()> {
        match self {
            Inner::Arrow(w) => w.sync(),
            Inner::Int96(w) => w.sync(),
        }
    }

    fn checksum(&self) -> &ChecksumWriter<WritebackFile> {
        match self {
            Inner::Arrow(w) => w.inner(),
            Inner::Int96(w) => w.inner(),
        }
    }

    fn append_key_value_metadata(&mut self, kv: KeyValue) {
        match self {
            Inner::Arrow(w) => w.append_key_value_metadata(kv),
            Inner::Int96(w) => w.append_key_value_metadata(kv),
        }
    }

    fn into_inner(self) -> parquet::errors::Result<ChecksumWriter<WritebackFile>> {
        match self {
            Inner::Arrow(w) => w.into_inner(),
            Inner::Int96(w) => w.into_inner(),
        }
    }
}

impl ParquetFileWriter {
    pub fn create(path: PathBuf, schema: SchemaRef, props: WriterProperties) -> Result<Self> {
        // a file for an object store is written to local disk first, then uploaded on close
        let (staged, f) = StagedFile::create(path.clone())?;
        let sink = ChecksumWriter::new(WritebackFile::new(f));
        let writer = if schema.fields().iter().any(|f| has_nanos(f.data_type())) {
            Int96FileWriter::try_new(sink, schema, props).map(Inner::Int96)
        } else {
            ArrowWriter::try_new(sink, schema, Some(props)).map(Inner::Arrow)
        }
        .map_err(|e| Error::Parquet {
            path: path.clone(),
            source: e,
        })?;
        Ok(ParquetFileWriter {
            path,
            staged,
            writer: Some(writer),
            rows: 0,
        })
    }

    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        let w = self
            .writer
            .as_mut()
            .ok_or_else(|| Error::Internal("writer closed".into()))?;
        w.write(batch).map_err(|e| Error::Parquet {
            path: self.path.clone(),
            source: e,
        })?;
        self.rows += batch.num_rows() as u64;
        Ok(())
    }

    /// Bytes written so far plus the encoded size of the open row group (an estimate).
    pub fn estimated_size(&self) -> u64 {
        self.writer
            .as_ref()
            .map(|w| (w.bytes_written() + w.in_progress_size()) as u64)
            .unwrap_or(0)
    }

    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Memory held by the open row group (encoded pages, page and dictionary buffers).
    pub fn buffered_bytes(&self) -> usize {
        self.writer.as_ref().map(|w| w.memory_size()).unwrap_or(0)
    }

    /// Write the open row group to the file, freeing its memory; the file stays open.
    pub fn flush_row_group(&mut self) -> Result<()> {
        if let Some(w) = self.writer.as_mut() {
            w.flush().map_err(|e| Error::Parquet {
                path: self.path.clone(),
                source: e,
            })?;
        }
        Ok(())
    }

    /// Finish the file; returns its size in bytes.
    pub fn close(mut self) -> Result<u64> {
        let mut w = self
            .writer
            .take()
            .ok_or_else(|| Error::Internal("writer closed".into()))?;
        let parquet_err = |e| Error::Parquet {
            path: self.path.clone(),
            source: e,
        };
        // every data byte through the checksum writer, then its block checksums into the footer
        w.flush().map_err(parquet_err)?;
        w.sync().map_err(|e| Error::io(&self.staged.tmp, e))?;
        let blocks = w.checksum().metadata_value();
        w.append_key_value_metadata(KeyValue::new(checksum::KEY.to_string(), blocks));
        let file = w
            .into_inner()
            .map_err(parquet_err)?
            .into_inner()
            .into_file();
        self.staged.publish(file)
    }
}

/// Open a Parquet file for reading the named top-level columns (all if `columns` is None).
/// Columns missing from the file are left out; the caller fills them (schema evolution).
///
/// With `expect`, the file's length and its footer's row counts (the file's and the sum of its
/// row groups') must be what the manifest records; a difference is a [`Error::CorruptFile`]
/// naming the file. Page CRCs, where a file carries them (Java's Parquet writer writes them),
/// are verified as pages are decoded (the parquet crate's `crc` feature); a file this engine
/// wrote is read through its block checksums (see [`super::checksum`]).
pub fn open_reader(
    path: &Path,
    columns: Option<&[String]>,
    batch_size: usize,
    expect: Option<FileExpect>,
) -> Result<DataFileReader> {
    open_reader_rows(path, columns, batch_size, expect, None)
}

/// [`open_reader`] yielding only the rows at positions `[begin, end)` of `rows` (all if None):
/// only the row groups holding them are read, and in those only the pages holding them
/// (skipped by the file's offset index where it has one, else decoded and dropped).
pub fn open_reader_rows(
    path: &Path,
    columns: Option<&[String]>,
    batch_size: usize,
    expect: Option<FileExpect>,
    rows: Option<(u64, u64)>,
) -> Result<DataFileReader> {
    let reader = contain_panic(path, "Parquet", || {
        open_parquet(path, columns, batch_size, expect, rows)
    })?;
    let p = path.to_path_buf();
    Ok(DataFileReader::new(
        path,
        "Parquet",
        reader.map(move |r| r.map_err(|e| Error::corrupt(&p, e.to_string()))),
    ))
}

/// [`open_reader`] yielding only the rows at the positions `selected` holds (a bitmap index's
/// selection, `crate::fileindex::row_selection`): only the row groups holding them are read,
/// and in those only the pages holding them (by the offset index, as [`open_reader_rows`]).
pub fn open_reader_selected(
    path: &Path,
    columns: Option<&[String]>,
    batch_size: usize,
    expect: Option<FileExpect>,
    selected: &roaring::RoaringBitmap,
) -> Result<DataFileReader> {
    let read = Read {
        columns,
        batch_size,
        expect,
        rows: None,
        selected: Some(selected),
    };
    let reader = contain_panic(path, "Parquet", || open_parquet_read(path, read))?;
    let p = path.to_path_buf();
    Ok(DataFileReader::new(
        path,
        "Parquet",
        reader.map(move |r| r.map_err(|e| Error::corrupt(&p, e.to_string()))),
    ))
}

/// The [`Part`] of the rows at the positions `selected` holds of the file of `meta`: the row
/// groups holding one, the span of those in each, and a selection of runs of them.
fn selected_part(meta: &ArrowReaderMetadata, selected: &roaring::RoaringBitmap) -> Part {
    let (mut groups, mut rows, mut selectors) = (vec![], vec![], vec![]);
    let mut start = 0u64;
    for (i, rg) in meta.metadata().row_groups().iter().enumerate() {
        let n = rg.num_rows().max(0) as u64;
        let (lo, hi) = (start, start + n);
        start = hi;
        // positions past u32 hold no selected row (a bitmap index's rows are u32)
        let Ok(lo32) = u32::try_from(lo) else { break };
        let hi32 = u32::try_from(hi).unwrap_or(u32::MAX);
        let mut runs: Vec<(u64, u64)> = vec![]; // [b, e) relative to the group
        for r in selected.range(lo32..hi32) {
            let r = u64::from(r) - lo;
            match runs.last_mut() {
                Some((_, e)) if *e == r => *e = r + 1,
                _ => runs.push((r, r + 1)),
            }
        }
        let (Some(&(first, _)), Some(&(_, last))) = (runs.first(), runs.last()) else {
            continue;
        };
        groups.push(i);
        rows.push((first, last));
        let mut at = 0;
        for (b, e) in runs {
            if b > at {
                selectors.push(RowSelector::skip((b - at) as usize));
            }
            selectors.push(RowSelector::select((e - b) as usize));
            at = e;
        }
        if n > at {
            selectors.push(RowSelector::skip((n - at) as usize));
        }
    }
    Part {
        groups,
        rows,
        selection: RowSelection::from(selectors),
    }
}

fn open_parquet(
    path: &Path,
    columns: Option<&[String]>,
    batch_size: usize,
    expect: Option<FileExpect>,
    rows: Option<(u64, u64)>,
) -> Result<ParquetRecordBatchReader> {
    let read = Read {
        columns,
        batch_size,
        expect,
        rows,
        selected: None,
    };
    open_parquet_read(path, read)
}

fn open_parquet_read(path: &Path, read: Read<'_>) -> Result<ParquetRecordBatchReader> {
    let (src, len) = open_checked(path, read.expect, false)?;
    match src {
        Source::Local(f) => open_parquet_from(path, f, len, read),
        Source::Remote(o) => match o.whole() {
            // a small object came whole with its first GET
            Some(b) => open_parquet_from(path, b, len, read),
            None => open_parquet_from(path, o, len, read),
        },
    }
}

/// What a read of a Parquet file asks for.
#[derive(Clone, Copy)]
struct Read<'a> {
    /// Top-level columns (all if None).
    columns: Option<&'a [String]>,
    batch_size: usize,
    expect: Option<FileExpect>,
    /// Only the rows at positions `[begin, end)` (all if None).
    rows: Option<(u64, u64)>,
    /// Only the rows at these positions (all if None; not with `rows`).
    selected: Option<&'a roaring::RoaringBitmap>,
}

/// The part of a file a read asks for: the row groups holding it, the rows `[lo, hi)` of each
/// of those (positions within the group) and the selection of those rows within them.
struct Part {
    groups: Vec<usize>,
    rows: Vec<(u64, u64)>,
    selection: RowSelection,
}

/// The [`Part`] of the rows at positions `[begin, end)` of the file of `meta`.
fn row_part(meta: &ArrowReaderMetadata, begin: u64, end: u64) -> Part {
    let (mut groups, mut rows, mut selectors) = (vec![], vec![], vec![]);
    let mut start = 0u64;
    for (i, rg) in meta.metadata().row_groups().iter().enumerate() {
        let n = rg.num_rows().max(0) as u64;
        let (lo, hi) = (begin.max(start), end.min(start + n));
        if lo < hi {
            groups.push(i);
            rows.push((lo - start, hi - start));
            if lo > start {
                selectors.push(RowSelector::skip((lo - start) as usize));
            }
            selectors.push(RowSelector::select((hi - lo) as usize));
            if start + n > hi {
                selectors.push(RowSelector::skip((start + n - hi) as usize));
            }
        }
        start += n;
    }
    Part {
        groups,
        rows,
        selection: RowSelection::from(selectors),
    }
}

fn open_parquet_from<R: ChunkReader + ReadAt + 'static>(
    path: &Path,
    f: R,
    len: u64,
    read: Read<'_>,
) -> Result<ParquetRecordBatchReader> {
    let corrupt = |e: parquet::errors::ParquetError| Error::corrupt(path, e.to_string());
    // a read of part of the file loads the offset index, to skip the pages before the part
    let options = match (read.rows, read.selected) {
        (None, None) => ArrowReaderOptions::new(),
        _ => ArrowReaderOptions::new().with_offset_index_policy(PageIndexPolicy::Optional),
    };
    let meta = ArrowReaderMetadata::load(&f, options).map_err(corrupt)?;
    let blocks = meta
        .metadata()
        .file_metadata()
        .key_value_metadata()
        .and_then(|kv| kv.iter().find(|x| x.key == checksum::KEY))
        .map(|x| Blocks::parse(x.value.as_deref().unwrap_or("")))
        .transpose()
        .map_err(|m| Error::corrupt(path, m))?;
    let part = match (read.rows, read.selected) {
        (Some((begin, end)), _) => Some(row_part(&meta, begin, end)),
        (None, Some(s)) => Some(selected_part(&meta, s)),
        (None, None) => None,
    };
    // an object fetches the projected column chunks now, concurrently (a no-op locally); of a
    // part, only the pages holding its rows (rounded out to the checksum blocks they are
    // verified by)
    let block = blocks.as_ref().map(|_| checksum::BLOCK as u64);
    f.prefetch(&chunk_ranges(
        &meta,
        read.columns,
        part.as_ref(),
        block,
        len,
    ))
    .map_err(|e| Error::io(path, e))?;
    match blocks {
        // a file this engine wrote: every byte of its pages is checked against its block CRC
        Some(blocks) => {
            let verified = VerifiedFile::new(f, len, blocks);
            let builder = ParquetRecordBatchReaderBuilder::new_with_metadata(verified, meta);
            build_reader(path, with_part(builder, part), read)
        }
        None => {
            let builder = ParquetRecordBatchReaderBuilder::new_with_metadata(f, meta);
            build_reader(path, with_part(builder, part), read)
        }
    }
}

fn with_part<T: ChunkReader + 'static>(
    builder: ParquetRecordBatchReaderBuilder<T>,
    part: Option<Part>,
) -> ParquetRecordBatchReaderBuilder<T> {
    match part {
        Some(p) => builder
            .with_row_groups(p.groups)
            .with_row_selection(p.selection),
        None => builder,
    }
}

/// The byte ranges a read of the top-level `columns` (all if None) fetches: their column
/// chunks, of the row groups of `part` (all if None). Of a part with an offset index, in each
/// chunk only the dictionary page (the bytes before the first data page) and the data pages
/// holding the part's rows: the reader skips the others by their locations without reading
/// them. `block`: the checksum block size of a file this engine wrote (each range rounded out
/// to whole blocks within the file's `len` bytes, as they are verified whole).
fn chunk_ranges(
    meta: &ArrowReaderMetadata,
    columns: Option<&[String]>,
    part: Option<&Part>,
    block: Option<u64>,
    len: u64,
) -> Vec<std::ops::Range<u64>> {
    let mut out = vec![];
    let index = meta.metadata().page_index();
    for (i, rg) in meta.metadata().row_groups().iter().enumerate() {
        let rows = match part {
            None => None,
            Some(p) => match p.groups.iter().position(|&g| g == i) {
                None => continue,
                Some(k) => p.rows.get(k).copied(),
            },
        };
        for (c, cc) in rg.columns().iter().enumerate() {
            let root = cc.column_path().parts().first().map(String::as_str);
            if !columns.is_none_or(|cols| root.is_some_and(|r| cols.iter().any(|x| x == r))) {
                continue;
            }
            let (start, size) = cc.byte_range();
            let pages = index
                .and_then(|x| x.offset_index(i, c))
                .map(|o| o.page_locations());
            match (rows, pages) {
                (Some((lo, hi)), Some(pages)) if !pages.is_empty() => {
                    let first = pages[0].offset.max(0) as u64;
                    if first > start {
                        out.push(start..first); // the dictionary page
                    }
                    for (k, p) in pages.iter().enumerate() {
                        let from = p.first_row_index.max(0) as u64;
                        let to = pages.get(k + 1).map_or(rg.num_rows().max(0) as u64, |n| {
                            n.first_row_index.max(0) as u64
                        });
                        if from < hi && to > lo {
                            let at = p.offset.max(0) as u64;
                            out.push(at..at + p.compressed_page_size.max(0) as u64);
                        }
                    }
                }
                _ => out.push(start..start + size),
            }
        }
    }
    if let Some(b) = block.filter(|&b| b > 0) {
        for r in &mut out {
            *r = (r.start / b * b)..(r.end.div_ceil(b) * b).min(len);
        }
    }
    out
}

/// Check the footer's row counts, then project and build.
fn build_reader<T: ChunkReader + 'static>(
    path: &Path,
    builder: ParquetRecordBatchReaderBuilder<T>,
    read: Read<'_>,
) -> Result<ParquetRecordBatchReader> {
    let Read {
        columns,
        batch_size,
        expect,
        ..
    } = read;
    let corrupt = |e: parquet::errors::ParquetError| Error::corrupt(path, e.to_string());
    if let Some(x) = expect {
        let meta = builder.metadata();
        let footer = meta.file_metadata().num_rows();
        let groups: i64 = meta.row_groups().iter().map(|g| g.num_rows()).sum();
        if footer != x.rows as i64 || groups != x.rows as i64 {
            return Err(Error::corrupt(
                path,
                format!(
                    "row count: the footer records {footer} rows ({groups} in its row groups), \
                     the manifest {}",
                    x.rows
                ),
            ));
        }
    }
    let mask = match columns {
        None => ProjectionMask::all(),
        Some(cols) => {
            let schema = builder.schema().clone();
            let roots: Vec<usize> = cols
                .iter()
                .filter_map(|c| schema.index_of(c).ok())
                .collect();
            ProjectionMask::roots(builder.parquet_schema(), roots)
        }
    };
    builder
        .with_projection(mask)
        .with_batch_size(batch_size)
        .build()
        .map_err(corrupt)
}

/// Read a whole file (projected) into batches.
#[cfg(test)]
pub fn read_all(path: &Path, columns: Option<&[String]>) -> Result<Vec<RecordBatch>> {
    open_reader(path, columns, 64 * 1024, None)?.collect()
}

#[cfg(test)]
mod tests {
    use std::fs::{self, File};

    use arrow_array::{Int64Array, StringArray};
    use arrow_schema::{Field, Schema};
    use parquet::basic::Encoding;
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use std::sync::Arc;

    use super::*;

    /// A unique column, a column of 50 values, and a column of a few thousand values.
    fn batch(n: usize) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![
            Field::new("unique", DataType::Int64, false),
            Field::new("few", DataType::Utf8, true),
            Field::new("thousands", DataType::Int64, true),
        ]));
        let mut x: u64 = 7;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let unique: Int64Array = (0..n as i64).map(|i| i * 7919).collect();
        let few: StringArray = (0..n)
            .map(|i| (i % 10 != 0).then(|| format!("city-{}", next() % 50)))
            .collect();
        let thousands: Int64Array = (0..n).map(|_| Some((next() % 5000) as i64)).collect();
        RecordBatch::try_new(
            schema,
            vec![Arc::new(unique), Arc::new(few), Arc::new(thousands)],
        )
        .unwrap()
    }

    /// A read of rows `[begin, end)` yields exactly them, across row groups and pages, from a
    /// file whose offset index lets the pages before `begin` be skipped unread.
    #[test]
    fn a_part_of_a_file_is_its_rows_at_those_positions() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("part.parquet");
        let b = batch(10_000);
        let props = WriterProperties::builder()
            .set_max_row_group_row_count(Some(3_000))
            .set_data_page_row_count_limit(250)
            .set_write_batch_size(250)
            .build();
        let mut w = ParquetFileWriter::create(path.clone(), b.schema(), props).unwrap();
        w.write(&b).unwrap();
        let size = w.close().unwrap();
        let options = ArrowReaderOptions::new().with_offset_index_policy(PageIndexPolicy::Optional);
        let meta = ArrowReaderMetadata::load(&File::open(&path).unwrap(), options).unwrap();
        assert_eq!(meta.metadata().num_row_groups(), 4);
        let index = meta.metadata().page_index().unwrap();
        let pages = index.num_data_pages(0, 0).unwrap_or(0);
        assert!(pages >= 10, "{pages} pages in the first row group");
        let expect = Some(FileExpect { size, rows: 10_000 });
        for (begin, end) in [
            (0, 10_000),
            (0, 1),
            (2_999, 3_001),
            (3_000, 6_000),
            (4_321, 9_876),
            (9_999, 10_000),
            (5_000, 5_000),
        ] {
            let cols = ["thousands".to_string(), "unique".to_string()];
            let got: Vec<RecordBatch> =
                open_reader_rows(&path, Some(&cols), 1024, expect, Some((begin, end)))
                    .unwrap()
                    .collect::<Result<_>>()
                    .unwrap();
            let want = b.slice(begin as usize, (end - begin) as usize);
            let want = want.project(&[0, 2]).unwrap();
            let got = arrow_select::concat::concat_batches(&want.schema(), &got).unwrap();
            assert_eq!(got, want, "[{begin}, {end})");
        }
    }

    /// A file's bytes that records the ranges prefetched and, after the prefetch, every range
    /// the reader reads.
    struct Recorder {
        bytes: bytes::Bytes,
        prefetched: Ranges,
        reads: Ranges,
    }

    type Ranges = Arc<std::sync::Mutex<Vec<std::ops::Range<u64>>>>;

    impl Recorder {
        fn record(&self, r: std::ops::Range<u64>) {
            if !self.prefetched.lock().unwrap().is_empty() {
                self.reads.lock().unwrap().push(r);
            }
        }
    }

    impl parquet::file::reader::Length for Recorder {
        fn len(&self) -> u64 {
            self.bytes.len() as u64
        }
    }

    impl ChunkReader for Recorder {
        type T = bytes::buf::Reader<bytes::Bytes>;
        fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
            self.record(start..self.bytes.len() as u64);
            self.bytes.get_read(start)
        }
        fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<bytes::Bytes> {
            self.record(start..start + length as u64);
            self.bytes.get_bytes(start, length)
        }
    }

    impl ReadAt for Recorder {
        fn read_at(&self, start: u64, len: usize) -> std::io::Result<bytes::Bytes> {
            self.record(start..start + len as u64);
            self.bytes.read_at(start, len)
        }
        fn prefetch(&self, ranges: &[std::ops::Range<u64>]) -> std::io::Result<()> {
            self.prefetched.lock().unwrap().extend_from_slice(ranges);
            Ok(())
        }
    }

    /// A file of 20,000 rows of [`batch`] in row groups of `group_rows`, pages of 500 rows.
    fn paged_file(group_rows: usize) -> (RecordBatch, bytes::Bytes) {
        let b = batch(20_000);
        let props = WriterProperties::builder()
            .set_max_row_group_row_count(Some(group_rows))
            // (a dictionary of 20,000 unique values would be most of the chunk)
            .set_column_dictionary_enabled(ColumnPath::from("unique"), false)
            .set_data_page_row_count_limit(500)
            .set_write_batch_size(500)
            .build();
        let mut buf = vec![];
        let mut w = ArrowWriter::try_new(&mut buf, b.schema(), Some(props)).unwrap();
        w.write(&b).unwrap();
        w.close().unwrap();
        (b, bytes::Bytes::from(buf))
    }

    /// A part read of a file with an offset index prefetches only the dictionary and the pages
    /// holding the part's rows (an object store fetches no more), and reads nothing else;
    /// with checksum blocks (a file this engine wrote) the ranges are whole blocks.
    #[test]
    fn a_part_prefetches_only_its_pages() {
        let (b, bytes) = paged_file(20_000);
        let len = bytes.len() as u64;
        let cols = ["unique".to_string(), "few".to_string()];
        for (begin, end) in [(0, 1), (7_250, 7_800), (19_990, 20_000), (0, 20_000)] {
            let f = Recorder {
                bytes: bytes.clone(),
                prefetched: Default::default(),
                reads: Default::default(),
            };
            let read = Read {
                columns: Some(&cols),
                batch_size: 1024,
                expect: None,
                rows: Some((begin, end)),
                selected: None,
            };
            let got: Vec<RecordBatch> = open_parquet_from(Path::new("mem"), f, len, read)
                .map(|r| r.collect::<std::result::Result<_, _>>().unwrap())
                .unwrap();
            let want = b.slice(begin as usize, (end - begin) as usize);
            let want = want.project(&[0, 1]).unwrap();
            let got = arrow_select::concat::concat_batches(&want.schema(), &got).unwrap();
            assert_eq!(got, want, "[{begin}, {end})");
        }
        // the ranges themselves, and that the reader stays inside them
        let options = ArrowReaderOptions::new().with_offset_index_policy(PageIndexPolicy::Optional);
        let meta = ArrowReaderMetadata::load(&bytes, options).unwrap();
        let chunks: u64 = chunk_ranges(&meta, Some(&cols), None, None, len)
            .iter()
            .map(|r| r.end - r.start)
            .sum();
        let part = row_part(&meta, 7_250, 7_800);
        let ranges = chunk_ranges(&meta, Some(&cols), Some(&part), None, len);
        let fetched: u64 = ranges.iter().map(|r| r.end - r.start).sum();
        assert!(
            fetched * 5 < chunks,
            "{fetched} of {chunks} bytes for 550 of 20,000 rows"
        );
        let (prefetched, reads) = (Ranges::default(), Ranges::default());
        let f = Recorder {
            bytes: bytes.clone(),
            prefetched: prefetched.clone(),
            reads: reads.clone(),
        };
        let read = Read {
            columns: Some(&cols),
            batch_size: 1024,
            expect: None,
            rows: Some((7_250, 7_800)),
            selected: None,
        };
        let n: usize = open_parquet_from(Path::new("mem"), f, len, read)
            .unwrap()
            .map(|b| b.unwrap().num_rows())
            .sum();
        assert_eq!(n, 550);
        assert_eq!(*prefetched.lock().unwrap(), ranges);
        assert!(!reads.lock().unwrap().is_empty());
        for r in reads.lock().unwrap().iter() {
            assert!(
                ranges.iter().any(|p| p.start <= r.start && r.end <= p.end),
                "read {r:?} outside the prefetched {ranges:?}"
            );
        }
        // checksum blocks: every range starts and ends on a block (or the file's end)
        let blocked = chunk_ranges(&meta, Some(&cols), Some(&part), Some(16 << 10), len);
        for r in &blocked {
            assert_eq!(r.start % (16 << 10), 0);
            assert!(r.end % (16 << 10) == 0 || r.end == len);
        }
    }

    /// A read of selected rows (a bitmap index's selection) over several row groups yields
    /// exactly those rows and reads only the pages holding them.
    #[test]
    fn a_selection_reads_its_rows_and_only_their_pages() {
        let (b, bytes) = paged_file(6_000);
        let len = bytes.len() as u64;
        let cols = ["unique".to_string(), "few".to_string()];
        let mut selected = roaring::RoaringBitmap::new();
        selected.extend([0u32, 5, 5_999, 6_000, 19_999]);
        selected.insert_range(7_300..7_310);
        let (prefetched, reads) = (Ranges::default(), Ranges::default());
        let f = Recorder {
            bytes: bytes.clone(),
            prefetched: prefetched.clone(),
            reads: reads.clone(),
        };
        let read = Read {
            columns: Some(&cols),
            batch_size: 1024,
            expect: None,
            rows: None,
            selected: Some(&selected),
        };
        let got: Vec<RecordBatch> = open_parquet_from(Path::new("mem"), f, len, read)
            .map(|r| r.collect::<std::result::Result<_, _>>().unwrap())
            .unwrap();
        let want = b.project(&[0, 1]).unwrap();
        let idx = arrow_array::UInt32Array::from_iter_values(selected.iter());
        let want = arrow_select::take::take_record_batch(&want, &idx).unwrap();
        let got = arrow_select::concat::concat_batches(&want.schema(), &got).unwrap();
        assert_eq!(got, want);
        let read_bytes: u64 = reads.lock().unwrap().iter().map(|r| r.end - r.start).sum();
        assert!(
            read_bytes * 3 < len,
            "{read_bytes} of {len} bytes read for 15 of 20,000 rows"
        );
    }

    #[test]
    fn nearly_unique_columns_skip_the_dictionary() {
        let props = writer_properties("zstd", 1, &[]).unwrap();
        let b = batch(20_000);
        let p = dictionary_by_sample(&props, &b);
        let enabled = |c: &str| p.dictionary_enabled(&ColumnPath::from(c));
        assert!(!enabled("unique"));
        assert!(enabled("few"));
        assert!(enabled("thousands"));
        // too few rows to judge: unchanged
        let p = dictionary_by_sample(&props, &b.slice(0, 10));
        assert!(p.dictionary_enabled(&ColumnPath::from("unique")));

        // the file: plain pages for the unique column, a dictionary for the others
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.parquet");
        let mut w =
            ParquetFileWriter::create(path.clone(), b.schema(), dictionary_by_sample(&props, &b))
                .unwrap();
        w.write(&b).unwrap();
        w.close().unwrap();
        let reader = SerializedFileReader::new(File::open(&path).unwrap()).unwrap();
        let rg = reader.metadata().row_group(0);
        let dict = |i: usize| {
            rg.column(i)
                .encodings()
                .any(|e| e == Encoding::RLE_DICTIONARY || e == Encoding::PLAIN_DICTIONARY)
        };
        assert!(!dict(0));
        assert!(dict(1));
        assert!(dict(2));
        assert_eq!(read_all(&path, None).unwrap(), vec![b]);
    }

    /// `n` rows of incompressible int64 columns `cols` (8 bytes a value in the file).
    fn random_columns(cols: &[&str], n: usize) -> RecordBatch {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let fields: Vec<Field> = cols
            .iter()
            .map(|c| Field::new(*c, DataType::Int64, false))
            .collect();
        let arrays: Vec<ArrayRef> = cols
            .iter()
            .map(|_| {
                let a: Int64Array = (0..n)
                    .map(|_| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        x as i64
                    })
                    .collect();
                Arc::new(a) as ArrayRef
            })
            .collect();
        RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays).unwrap()
    }

    /// Write `b` to the in-memory object store at `path`; its size.
    fn write_object(path: &Path, b: &RecordBatch) -> u64 {
        let props = writer_properties("none", 1, &[]).unwrap();
        let mut w = ParquetFileWriter::create(path.to_path_buf(), b.schema(), props).unwrap();
        w.write(b).unwrap();
        w.close().unwrap()
    }

    /// On an object store, a file of at most 16 MiB whose size the manifest records is one GET
    /// (the old policy sent two: its footer, then its column chunks); a larger file read for
    /// one of its columns is its footer, then ranged GETs of that column's chunks only.
    #[test]
    fn remote_files_whole_or_by_projected_ranges() {
        use crate::io::remote::WHOLE_OBJECT_BYTES;
        use crate::io::store::gets_on_this_thread;
        let read = |path: &Path, cols: Option<&[String]>, size: u64, rows: u64| {
            let before = gets_on_this_thread();
            let expect = FileExpect { size, rows };
            let got: Vec<RecordBatch> = open_reader(path, cols, 64 * 1024, Some(expect))
                .unwrap()
                .collect::<Result<_>>()
                .unwrap();
            (got, gets_on_this_thread() - before)
        };

        // 12 MB: more than the old 8 MiB threshold, at most 16 MiB
        let mid = Path::new("memory://parquet-test/wh/mid.parquet");
        let b = random_columns(&["a", "b"], 750_000);
        let size = write_object(mid, &b);
        assert!(size > 8 << 20 && size <= 16 << 20, "{size}");
        let (got, gets) = read(mid, None, size, 750_000);
        assert_eq!(
            arrow_select::concat::concat_batches(&b.schema(), &got).unwrap(),
            b
        );
        assert_eq!(gets, 1, "one GET of the whole object");

        // 24 MB, one column of three read: not fetched whole
        let big = Path::new("memory://parquet-test/wh/big.parquet");
        let b = random_columns(&["a", "b", "c"], 1_000_000);
        let size = write_object(big, &b);
        assert!(size > WHOLE_OBJECT_BYTES, "{size}");
        let a = vec!["a".to_string()];
        let (got, gets) = read(big, Some(&a), size, 1_000_000);
        let got = arrow_select::concat::concat_batches(&got[0].schema(), &got).unwrap();
        assert_eq!(got.column(0), b.column(0));
        let groups = SerializedFileReader::new(bytes::Bytes::from(crate::io::read(big).unwrap()))
            .unwrap()
            .metadata()
            .num_row_groups() as u64;
        // the tail, then a ranged GET per row group's chunk of `a` (the chunks of `b` and `c`
        // lie between them): never one GET of the whole object
        assert!(
            gets >= 2 && gets <= 1 + groups,
            "{gets} GETs, {groups} row groups"
        );
    }

    /// Read `path` through the manifest checks; Err is the error's message.
    fn read_checked(
        path: &Path,
        expect: FileExpect,
    ) -> std::result::Result<Vec<RecordBatch>, String> {
        let reader = open_reader(path, None, 1024, Some(expect)).map_err(|e| e.to_string())?;
        reader.map(|b| b.map_err(|e| e.to_string())).collect()
    }

    /// Java's Parquet writer gives each page a CRC (so does pyarrow with
    /// `write_page_checksum=True`, which wrote this file: 64 plain, uncompressed int64 values
    /// 0x1122334455660000 + i). A flipped byte inside a value is caught by the page CRC.
    #[test]
    fn page_crcs_are_verified() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/page_crc.parquet");
        let bytes = fs::read(&src).unwrap();
        let expect = FileExpect {
            size: bytes.len() as u64,
            rows: 64,
        };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("crc.parquet");
        fs::write(&path, &bytes).unwrap();
        let rows: usize = read_checked(&path, expect)
            .unwrap()
            .iter()
            .map(|b| b.num_rows())
            .sum();
        assert_eq!(rows, 64);
        let value = (0x1122334455660000i64 + 10).to_le_bytes();
        let at = bytes.windows(8).position(|w| w == value).unwrap();
        let mut flipped = bytes.clone();
        flipped[at] ^= 0x01;
        fs::write(&path, &flipped).unwrap();
        let e = read_checked(&path, expect).unwrap_err();
        assert!(
            e.contains("crc.parquet") && e.contains("CRC checksum mismatch"),
            "{e}"
        );
    }

    /// A truncated, emptied or flipped data file: every read is a CorruptFile error naming the
    /// file or the original rows, never a panic nor other rows; a cut anywhere is caught.
    #[test]
    fn damaged_files_are_corrupt_file_errors() {
        let b = batch(3000);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.parquet");
        let props = writer_properties("zstd", 1, &[]).unwrap();
        let mut w = ParquetFileWriter::create(path.clone(), b.schema(), props).unwrap();
        w.write(&b).unwrap();
        let size = w.close().unwrap();
        let expect = FileExpect { size, rows: 3000 };
        let want = read_checked(&path, expect).unwrap();
        let original = fs::read(&path).unwrap();
        let reader = SerializedFileReader::new(File::open(&path).unwrap()).unwrap();
        let footer_start = reader
            .metadata()
            .row_groups()
            .iter()
            .flat_map(|g| g.columns())
            .map(|c| {
                let (start, len) = c.byte_range();
                start + len
            })
            .max()
            .unwrap() as usize;
        let (mut errors, mut same, mut changed) = (0, 0, vec![]);
        let mut attempt = |label: String, content: &[u8], must_fail: bool| {
            fs::write(&path, content).unwrap();
            match read_checked(&path, expect) {
                Err(e) => {
                    assert!(
                        e.contains("corrupt file") && e.contains("f.parquet"),
                        "{label}: {e}"
                    );
                    errors += 1;
                }
                Ok(got) => {
                    assert!(!must_fail, "{label}: read without an error");
                    if got == want {
                        same += 1;
                    } else {
                        changed.push(label);
                    }
                }
            }
        };
        for keep in [
            0,
            1,
            4,
            8,
            footer_start,
            original.len() - 8,
            original.len() - 1,
        ] {
            attempt(format!("cut at {keep}"), &original[..keep], true);
        }
        for at in (0..original.len()).step_by(5) {
            let mut flipped = original.clone();
            flipped[at] ^= 0xFF;
            attempt(format!("flip at {at}"), &flipped, false);
        }
        // the footer: its own length and the magic fail outright; a flip in the thrift either
        // fails to decode or changes what the rows do not depend on (statistics)
        for at in footer_start..original.len() {
            let mut flipped = original.clone();
            flipped[at] ^= 0xFF;
            fs::write(&path, &flipped).unwrap();
            if let Ok(got) = read_checked(&path, expect) {
                assert_eq!(got, want, "footer flip at {at}");
            }
        }
        // the block checksums cover every page byte: no flip decodes to other rows
        println!("{errors} errors, {same} original rows, changed: {changed:?}");
        assert!(changed.is_empty(), "silently changed rows: {changed:?}");
        assert!(errors > 0);
    }
}
