//! Parquet data files: writing with Paimon's compression settings and field ids, reading with a
//! projection by column name (both Paimon readers match columns by name).

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use std::collections::HashSet;

use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_row::{RowConverter, SortField};
use arrow_schema::{DataType, SchemaRef};
use parquet::arrow::arrow_reader::{ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder};
use parquet::arrow::{ArrowWriter, ProjectionMask};
use parquet::basic::{Compression, GzipLevel, ZstdLevel};
use parquet::file::properties::WriterProperties;
use parquet::schema::types::ColumnPath;

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
    tmp: PathBuf,
    writer: Option<ArrowWriter<File>>,
    rows: u64,
}

impl ParquetFileWriter {
    pub fn create(path: PathBuf, schema: SchemaRef, props: WriterProperties) -> Result<Self> {
        if let Some(parent) = path.parent() {
            super::mkdirs(parent)?;
        }
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("data")
            .to_string();
        let tmp = path.with_file_name(format!(".{name}.{}.tmp", uuid::Uuid::new_v4()));
        let f = super::create_new_file(&tmp)?;
        let writer = ArrowWriter::try_new(f, schema, Some(props)).map_err(|e| Error::Parquet {
            path: path.clone(),
            source: e,
        })?;
        Ok(ParquetFileWriter {
            path,
            tmp,
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

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Finish the file; returns its size in bytes.
    pub fn close(mut self) -> Result<u64> {
        let w = self
            .writer
            .take()
            .ok_or_else(|| Error::Internal("writer closed".into()))?;
        let file = w.into_inner().map_err(|e| Error::Parquet {
            path: self.path.clone(),
            source: e,
        })?;
        file.sync_all().map_err(|e| Error::io(&self.tmp, e))?;
        drop(file);
        fs::rename(&self.tmp, &self.path).map_err(|e| Error::io(&self.path, e))?;
        let size = fs::metadata(&self.path)
            .map_err(|e| Error::io(&self.path, e))?
            .len();
        Ok(size)
    }
}

impl Drop for ParquetFileWriter {
    fn drop(&mut self) {
        if self.writer.is_some() {
            // abandoned (error path): remove the temp file
            self.writer = None;
            let _ = fs::remove_file(&self.tmp);
        }
    }
}

/// Open a Parquet file for reading the named top-level columns (all if `columns` is None).
/// Columns missing from the file are left out; the caller fills them (schema evolution).
pub fn open_reader(
    path: &Path,
    columns: Option<&[String]>,
    batch_size: usize,
) -> Result<ParquetRecordBatchReader> {
    let f = File::open(path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            Error::corrupt(path, "data file referenced by the manifest is missing")
        } else {
            Error::io(path, e)
        }
    })?;
    let corrupt = |e: parquet::errors::ParquetError| Error::corrupt(path, e.to_string());
    let builder = ParquetRecordBatchReaderBuilder::try_new(f).map_err(corrupt)?;
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
pub fn read_all(path: &Path, columns: Option<&[String]>) -> Result<Vec<RecordBatch>> {
    let reader = open_reader(path, columns, 64 * 1024)?;
    reader
        .map(|b| b.map_err(|e| Error::corrupt(path, e.to_string())))
        .collect()
}

pub fn schema_ref(s: arrow_schema::Schema) -> SchemaRef {
    Arc::new(s)
}

#[cfg(test)]
mod tests {
    use arrow_array::{Int64Array, StringArray};
    use arrow_schema::{Field, Schema};
    use parquet::basic::Encoding;
    use parquet::file::reader::{FileReader, SerializedFileReader};

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
}
