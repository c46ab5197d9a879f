//! TIMESTAMP(7..9) and TIMESTAMP_LTZ(7..9) columns in Parquet as Java Paimon writes them: INT96
//! (Java's `ParquetSchemaConverter` and `ParquetRowDataWriter`: precision above 6 is INT96, also
//! inside ARRAY, MAP and ROW; its reader refuses anything else for these types with
//! "Unexpected type: INT64").
//!
//! arrow-rs cannot write INT96 from an Arrow timestamp column. INT96 values are 12 bytes each, and
//! a FIXED_LEN_BYTE_ARRAY(12) column holds exactly the same page bytes (PLAIN: the values
//! back to back; dictionary pages PLAIN too; the levels do not depend on the type). So such a
//! file is encoded by the arrow-rs column writers against a "shadow" schema where each of those
//! leaves is FIXED_LEN_BYTE_ARRAY(12) holding the INT96 bytes, and its chunks are spliced into a
//! file whose schema says INT96 at those leaves (the chunk metadata is re-typed; its min/max
//! statistics, which would be FLBA bytes, are dropped, keeping the null count: Java's
//! `ParquetSimpleStatsExtractor` records no min/max for INT96 columns either).
//!
//! The encoding of an instant: nanoseconds of the day (8 bytes, little endian) then the Julian
//! day (4 bytes, little endian), the day taken with floor division, so that the nanoseconds of
//! the day are in `0..86_400e9` as the INT96 convention wants. Java's writer truncates instead
//! (a negative nanosecond part before 1970), which its own reader then fails on; both decode to
//! the same instant by `(day - 2_440_588) * 86_400e9 + nanos`, which is what arrow-rs and Java do.

use std::io::Write;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::TimestampNanosecondType;
use arrow_array::{
    Array, ArrayRef, FixedSizeBinaryArray, ListArray, MapArray, RecordBatch, StructArray,
};
use arrow_schema::{DataType, FieldRef, Fields, Schema, SchemaRef, TimeUnit};
use parquet::arrow::arrow_writer::{
    compute_leaves, ArrowColumnChunk, ArrowColumnWriter, ArrowRowGroupWriterFactory,
};
use parquet::arrow::{add_encoded_arrow_schema_to_metadata, ArrowSchemaConverter};
use parquet::basic::Type as PhysicalType;
use parquet::errors::{ParquetError, Result as PqResult};
use parquet::file::metadata::{ColumnChunkMetaData, KeyValue};
use parquet::file::properties::WriterProperties;
use parquet::file::statistics::Statistics;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::{ColumnDescPtr, SchemaDescriptor, Type, TypePtr};

/// Julian day of 1970-01-01.
const JULIAN_EPOCH_DAY: i64 = 2_440_588;
const NANOS_PER_DAY: i64 = 86_400 * 1_000_000_000;

/// Does a column of this type hold a TIMESTAMP(7..9) (an Arrow nanosecond timestamp), at any
/// depth? Such a file is written by [`Int96FileWriter`].
pub fn has_nanos(t: &DataType) -> bool {
    match t {
        DataType::Timestamp(TimeUnit::Nanosecond, _) => true,
        DataType::List(f) | DataType::LargeList(f) | DataType::Map(f, _) => {
            has_nanos(f.data_type())
        }
        DataType::Struct(fs) => fs.iter().any(|f| has_nanos(f.data_type())),
        _ => false,
    }
}

/// The INT96 bytes of an instant in nanoseconds since the epoch (see the module doc).
pub fn int96_bytes(nanos: i64) -> [u8; 12] {
    let day = nanos.div_euclid(NANOS_PER_DAY) + JULIAN_EPOCH_DAY;
    let of_day = nanos.rem_euclid(NANOS_PER_DAY);
    let mut out = [0u8; 12];
    out[..8].copy_from_slice(&of_day.to_le_bytes());
    // i64 nanoseconds span years 1677..2262: the Julian day fits an i32/u32 with room to spare
    out[8..].copy_from_slice(&(day as u32).to_le_bytes());
    out
}

/// `t` with every nanosecond timestamp replaced by FixedSizeBinary(12).
fn shadow_type(t: &DataType) -> DataType {
    match t {
        DataType::Timestamp(TimeUnit::Nanosecond, _) => DataType::FixedSizeBinary(12),
        DataType::List(f) => DataType::List(shadow_field(f)),
        DataType::LargeList(f) => DataType::LargeList(shadow_field(f)),
        DataType::Map(f, sorted) => DataType::Map(shadow_field(f), *sorted),
        DataType::Struct(fs) => DataType::Struct(shadow_fields(fs)),
        other => other.clone(),
    }
}

fn shadow_field(f: &FieldRef) -> FieldRef {
    Arc::new(
        f.as_ref()
            .clone()
            .with_data_type(shadow_type(f.data_type())),
    )
}

fn shadow_fields(fs: &Fields) -> Fields {
    fs.iter().map(shadow_field).collect()
}

/// `array` in its [`shadow_type`]: nanosecond timestamps as their INT96 bytes.
fn shadow_array(array: &ArrayRef) -> PqResult<ArrayRef> {
    let t = array.data_type();
    if !has_nanos(t) {
        return Ok(array.clone());
    }
    let err = |e: arrow_schema::ArrowError| ParquetError::General(e.to_string());
    Ok(match t {
        DataType::Timestamp(TimeUnit::Nanosecond, _) => {
            let ts = array.as_primitive::<TimestampNanosecondType>();
            let values = ts.values().iter().map(|&v| int96_bytes(v));
            let mut bytes = Vec::with_capacity(ts.len() * 12);
            for v in values {
                bytes.extend_from_slice(&v);
            }
            Arc::new(
                FixedSizeBinaryArray::try_new(12, bytes.into(), ts.nulls().cloned())
                    .map_err(err)?,
            )
        }
        DataType::List(f) => {
            let l = array.as_list::<i32>();
            Arc::new(
                ListArray::try_new(
                    shadow_field(f),
                    l.offsets().clone(),
                    shadow_array(l.values())?,
                    l.nulls().cloned(),
                )
                .map_err(err)?,
            )
        }
        DataType::Map(f, sorted) => {
            let m = array.as_map();
            let entries = shadow_array(&(Arc::new(m.entries().clone()) as ArrayRef))?;
            Arc::new(
                MapArray::try_new(
                    shadow_field(f),
                    m.offsets().clone(),
                    entries.as_struct().clone(),
                    m.nulls().cloned(),
                    *sorted,
                )
                .map_err(err)?,
            )
        }
        DataType::Struct(fs) => {
            let s = array.as_struct();
            let cols = s
                .columns()
                .iter()
                .map(shadow_array)
                .collect::<PqResult<Vec<_>>>()?;
            Arc::new(
                StructArray::try_new(shadow_fields(fs), cols, s.nulls().cloned()).map_err(err)?,
            )
        }
        other => {
            return Err(ParquetError::NYI(format!(
                "INT96 timestamps inside {other} are not written"
            )))
        }
    })
}

/// Leaf Arrow types in Parquet column order (the order arrow-rs's writers take).
fn arrow_leaves<'a>(t: &'a DataType, out: &mut Vec<&'a DataType>) {
    match t {
        DataType::List(f) | DataType::LargeList(f) => arrow_leaves(f.data_type(), out),
        DataType::Map(f, _) => arrow_leaves(f.data_type(), out),
        DataType::Struct(fs) => fs.iter().for_each(|f| arrow_leaves(f.data_type(), out)),
        other => out.push(other),
    }
}

/// The shadow Parquet type tree with the leaves numbered in `int96` (by leaf index) made INT96.
fn retype_leaves(t: &TypePtr, int96: &[bool], next: &mut usize) -> PqResult<TypePtr> {
    let info = t.get_basic_info();
    if t.is_primitive() {
        let i = *next;
        *next += 1;
        if !int96.get(i).copied().unwrap_or(false) {
            return Ok(t.clone());
        }
        let id = info.has_id().then(|| info.id());
        return Ok(Arc::new(
            Type::primitive_type_builder(info.name(), PhysicalType::INT96)
                .with_repetition(info.repetition())
                .with_id(id)
                .build()?,
        ));
    }
    let fields = t
        .get_fields()
        .iter()
        .map(|f| retype_leaves(f, int96, next))
        .collect::<PqResult<Vec<_>>>()?;
    let mut b = Type::group_type_builder(info.name())
        .with_fields(fields)
        .with_converted_type(info.converted_type())
        .with_logical_type(info.logical_type_ref().cloned())
        .with_id(info.has_id().then(|| info.id()));
    if info.has_repetition() {
        b = b.with_repetition(info.repetition());
    }
    Ok(Arc::new(b.build()?))
}

/// A Parquet file whose TIMESTAMP(7..9) leaves are INT96 (see the module doc). The same
/// contract as arrow-rs's `ArrowWriter` as [`super::parquet::ParquetFileWriter`] uses it:
/// batches are buffered into a row group, flushed at the writer properties' row and byte limits.
pub struct Int96FileWriter<W: Write + Send> {
    file: SerializedFileWriter<W>,
    /// Column writers over the shadow schema.
    factory: ArrowRowGroupWriterFactory,
    shadow: SchemaRef,
    /// Per leaf: the real (INT96) column descriptor where the leaf is INT96.
    int96: Vec<Option<ColumnDescPtr>>,
    in_progress: Option<(Vec<ArrowColumnWriter>, usize)>,
    max_rows: usize,
    max_bytes: usize,
}

/// Rows encoded at a time, so that the byte limit of a row group is checked often enough.
const SLICE_ROWS: usize = 8192;

impl<W: Write + Send> Int96FileWriter<W> {
    pub fn try_new(sink: W, schema: SchemaRef, props: WriterProperties) -> PqResult<Self> {
        let shadow = Arc::new(Schema::new_with_metadata(
            shadow_fields(schema.fields()),
            schema.metadata().clone(),
        ));
        let converter = ArrowSchemaConverter::new().with_coerce_types(props.coerce_types());
        let shadow_descr = converter.convert(&shadow)?;
        let mut leaves = vec![];
        for f in schema.fields() {
            arrow_leaves(f.data_type(), &mut leaves);
        }
        let flags: Vec<bool> = leaves
            .iter()
            .map(|t| matches!(t, DataType::Timestamp(TimeUnit::Nanosecond, _)))
            .collect();
        if flags.len() != shadow_descr.num_columns() {
            return Err(ParquetError::General(format!(
                "{} Arrow leaves for {} Parquet columns",
                flags.len(),
                shadow_descr.num_columns()
            )));
        }
        let root = retype_leaves(&shadow_descr.root_schema_ptr(), &flags, &mut 0)?;
        let real = SchemaDescriptor::new(root.clone());
        let int96 = flags
            .iter()
            .enumerate()
            .map(|(i, &b)| b.then(|| real.column(i)))
            .collect();
        let mut props = props;
        // the Arrow schema of the data (nanosecond timestamps): arrow-rs reads the INT96
        // columns back into it
        add_encoded_arrow_schema_to_metadata(&schema, &mut props);
        let max_rows = props.max_row_group_row_count().unwrap_or(usize::MAX);
        let max_bytes = props.max_row_group_bytes().unwrap_or(usize::MAX);
        let props = Arc::new(props);
        // the column writers take their schema from a file writer: one over the shadow schema
        // that is never written to
        let shadow_file = SerializedFileWriter::new(
            std::io::sink(),
            shadow_descr.root_schema_ptr(),
            props.clone(),
        )?;
        let factory = ArrowRowGroupWriterFactory::new(&shadow_file, shadow.clone());
        drop(shadow_file);
        let file = SerializedFileWriter::new(sink, root, props)?;
        Ok(Int96FileWriter {
            file,
            factory,
            shadow,
            int96,
            in_progress: None,
            max_rows,
            max_bytes,
        })
    }

    pub fn write(&mut self, batch: &RecordBatch) -> PqResult<()> {
        let cols = batch
            .columns()
            .iter()
            .map(shadow_array)
            .collect::<PqResult<Vec<_>>>()?;
        let shadow = RecordBatch::try_new(self.shadow.clone(), cols)
            .map_err(|e| ParquetError::General(e.to_string()))?;
        let mut at = 0;
        while at < shadow.num_rows() {
            if self.in_progress.is_none() {
                let writers = self
                    .factory
                    .create_column_writers(self.file.flushed_row_groups().len())?;
                self.in_progress = Some((writers, 0));
            }
            let Some((writers, rows)) = self.in_progress.as_mut() else {
                unreachable!("set above")
            };
            let n = (shadow.num_rows() - at)
                .min(self.max_rows - *rows)
                .min(SLICE_ROWS);
            let part = shadow.slice(at, n);
            let mut ws = writers.iter_mut();
            for (field, col) in self.shadow.fields().iter().zip(part.columns()) {
                for leaf in compute_leaves(field, col)? {
                    ws.next()
                        .ok_or_else(|| ParquetError::General("too few column writers".into()))?
                        .write(&leaf)?;
                }
            }
            *rows += n;
            at += n;
            let full = *rows >= self.max_rows;
            if full || self.in_progress_size() >= self.max_bytes {
                self.flush()?;
            }
        }
        Ok(())
    }

    /// Encoded bytes of the open row group (an estimate).
    pub fn in_progress_size(&self) -> usize {
        self.in_progress.as_ref().map_or(0, |(ws, _)| {
            ws.iter().map(|w| w.get_estimated_total_bytes()).sum()
        })
    }

    pub fn memory_size(&self) -> usize {
        self.in_progress
            .as_ref()
            .map_or(0, |(ws, _)| ws.iter().map(|w| w.memory_size()).sum())
    }

    pub fn bytes_written(&self) -> usize {
        self.file.bytes_written()
    }

    /// Write the open row group to the file.
    pub fn flush(&mut self) -> PqResult<()> {
        let Some((writers, _)) = self.in_progress.take() else {
            return Ok(());
        };
        let mut rg = self.file.next_row_group()?;
        for (w, real) in writers.into_iter().zip(&self.int96) {
            let mut chunk = w.close()?;
            if let Some(desc) = real {
                retype_chunk(&mut chunk, desc)?;
            }
            chunk.append_to_row_group(&mut rg)?;
        }
        rg.close()?;
        Ok(())
    }

    pub fn sync(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }

    pub fn inner(&self) -> &W {
        self.file.inner()
    }

    pub fn append_key_value_metadata(&mut self, kv: KeyValue) {
        self.file.append_key_value_metadata(kv)
    }

    /// Flush, write the footer and return the sink.
    pub fn into_inner(mut self) -> PqResult<W> {
        self.flush()?;
        self.file.into_inner()
    }
}

/// A FIXED_LEN_BYTE_ARRAY(12) chunk of INT96 bytes as an INT96 chunk: same pages, the column
/// descriptor `desc`, statistics reduced to the null count.
fn retype_chunk(chunk: &mut ArrowColumnChunk, desc: &ColumnDescPtr) -> PqResult<()> {
    let close = chunk.close_mut();
    let m = &close.metadata;
    let nulls = m.statistics().and_then(|s| s.null_count_opt());
    let mut b = ColumnChunkMetaData::builder(desc.clone())
        .set_compression_codec(m.compression_codec())
        .set_encodings_mask(*m.encodings_mask())
        .set_total_compressed_size(m.compressed_size())
        .set_total_uncompressed_size(m.uncompressed_size())
        .set_num_values(m.num_values())
        .set_data_page_offset(m.data_page_offset())
        .set_dictionary_page_offset(m.dictionary_page_offset())
        .set_repetition_level_histogram(m.repetition_level_histogram().cloned())
        .set_definition_level_histogram(m.definition_level_histogram().cloned())
        .set_statistics(Statistics::int96(None, None, None, nulls, false));
    if let Some(s) = m.page_encoding_stats() {
        b = b.set_page_encoding_stats(s.clone());
    }
    close.metadata = b.build()?;
    // page-level min/max of FLBA bytes would be misread as INT96 ones
    close.column_index = None;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::builder::{
        Int32Builder, ListBuilder, MapBuilder, StringBuilder, TimestampNanosecondBuilder,
    };
    use arrow_array::{Int32Array, TimestampNanosecondArray};
    use arrow_schema::Field;
    use parquet::file::reader::{FileReader, SerializedFileReader};

    /// A nanosecond timestamp array's values (any zone).
    fn nanos_of(a: &ArrayRef) -> Vec<Option<i64>> {
        a.as_primitive::<TimestampNanosecondType>().iter().collect()
    }

    #[test]
    fn int96_bytes_floor_the_day() {
        // 1970-01-01T00:00:00.000000001
        let b = int96_bytes(1);
        assert_eq!(i64::from_le_bytes(b[..8].try_into().unwrap()), 1);
        assert_eq!(u32::from_le_bytes(b[8..].try_into().unwrap()), 2_440_588);
        // one nanosecond before the epoch: the previous day, its last nanosecond
        let b = int96_bytes(-1);
        assert_eq!(
            i64::from_le_bytes(b[..8].try_into().unwrap()),
            NANOS_PER_DAY - 1
        );
        assert_eq!(u32::from_le_bytes(b[8..].try_into().unwrap()), 2_440_587);
    }

    fn ts_field(name: &str, id: i32, tz: Option<&str>) -> Field {
        Field::new(
            name,
            DataType::Timestamp(TimeUnit::Nanosecond, tz.map(Into::into)),
            true,
        )
        .with_metadata([("PARQUET:field_id".to_string(), id.to_string())])
    }

    /// Top-level, LTZ, list element, map value and struct field TIMESTAMP(9)s are INT96 in the
    /// file (field ids kept); nulls, pre-epoch instants and several row groups read back.
    #[test]
    fn nanosecond_timestamps_are_int96_at_any_depth() {
        let n = 3000usize;
        let vals: Vec<Option<i64>> = (0..n)
            .map(|i| (i % 7 != 3).then(|| (i as i64 - 1500) * 86_400_000_000_123 + 7))
            .collect();
        let ts: ArrayRef = Arc::new(TimestampNanosecondArray::from(vals.clone()));
        let ltz: ArrayRef =
            Arc::new(TimestampNanosecondArray::from(vals.clone()).with_timezone("UTC"));
        let mut lb = ListBuilder::new(TimestampNanosecondBuilder::new());
        let mut mb = MapBuilder::new(
            None,
            StringBuilder::new(),
            TimestampNanosecondBuilder::new(),
        );
        for (i, v) in vals.iter().enumerate() {
            if i % 5 == 0 {
                lb.append_null();
                mb.append(false).unwrap();
                continue;
            }
            lb.values().append_option(*v);
            lb.values().append_value(i as i64);
            lb.append(true);
            mb.keys().append_value(format!("k{i}"));
            mb.values().append_option(*v);
            mb.append(true).unwrap();
        }
        let list: ArrayRef = Arc::new(lb.finish());
        let map: ArrayRef = Arc::new(mb.finish());
        let ids: ArrayRef = Arc::new(Int32Array::from_iter_values(0..n as i32));
        let sfields = Fields::from(vec![
            Field::new("a", DataType::Int32, true),
            Field::new("t", DataType::Timestamp(TimeUnit::Nanosecond, None), true),
        ]);
        let strukt: ArrayRef = Arc::new(StructArray::new(
            sfields.clone(),
            vec![
                Arc::new({
                    let mut b = Int32Builder::new();
                    (0..n).for_each(|i| b.append_value(i as i32));
                    b.finish()
                }),
                ts.clone(),
            ],
            None,
        ));
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int32, false),
            ts_field("ts", 1, None),
            ts_field("ltz", 2, Some("UTC")),
            Field::new("l", list.data_type().clone(), true),
            Field::new("m", map.data_type().clone(), true),
            Field::new("s", DataType::Struct(sfields), true),
        ]));
        let batch =
            RecordBatch::try_new(schema.clone(), vec![ids, ts, ltz, list, map, strukt]).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.parquet");
        let props = WriterProperties::builder()
            .set_max_row_group_row_count(Some(1000))
            .build();
        let mut w =
            Int96FileWriter::try_new(std::fs::File::create(&path).unwrap(), schema, props).unwrap();
        w.write(&batch.slice(0, 1200)).unwrap();
        w.write(&batch.slice(1200, n - 1200)).unwrap();
        w.into_inner().unwrap();

        let reader = SerializedFileReader::new(std::fs::File::open(&path).unwrap()).unwrap();
        let md = reader.metadata();
        assert_eq!(md.num_row_groups(), 3);
        let descr = md.file_metadata().schema_descr();
        let int96: Vec<String> = (0..descr.num_columns())
            .filter(|&i| descr.column(i).physical_type() == PhysicalType::INT96)
            .map(|i| descr.column(i).path().string())
            .collect();
        let roots: Vec<&str> = int96.iter().map(|p| p.split('.').next().unwrap()).collect();
        assert_eq!(roots, ["ts", "ltz", "l", "m", "s"], "{int96:?}");
        assert_eq!(descr.column(1).self_type().get_basic_info().id(), 1);
        let stats = md.row_group(0).column(1).statistics().unwrap();
        assert_eq!(stats.null_count_opt(), Some(143));
        assert!(stats.min_bytes_opt().is_none());

        let got = super::super::parquet::read_all(&path, None).unwrap();
        let got = arrow_select::concat::concat_batches(&got[0].schema(), &got).unwrap();
        assert_eq!(got.num_rows(), n);
        assert_eq!(nanos_of(got.column(1)), vals);
        assert_eq!(got.column(2).data_type(), batch.column(2).data_type());
        assert_eq!(nanos_of(got.column(2)), vals);
        for c in 3..6 {
            assert_eq!(
                got.column(c).as_ref(),
                batch.column(c).as_ref(),
                "column {c}"
            );
        }
    }
}
