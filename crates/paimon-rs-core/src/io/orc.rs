//! ORC data files (`file.format` = orc; Java Paimon's default before 1.0), read with orc-rust.
//!
//! orc-rust 0.9 decodes into arrow 59 record batches; they cross to this crate's arrow 60 through
//! the Arrow IPC stream format (written by arrow-ipc 59, read by arrow-ipc 60), a copy per batch
//! and no unsafe code. Projection is pushed down: only the named top-level columns' streams are
//! read. Java's ORC types decode as: TIMESTAMP to nanosecond timestamps without zone (wall clock
//! of the writer's zone, Java Paimon's meaning), TIMESTAMP_LTZ (ORC `timestamp with local time
//! zone`) to UTC instants, CHAR/VARCHAR to strings, TIME (ORC int) to milliseconds of the day;
//! the reader casts each to the table's type.

use std::io::Cursor;
use std::path::Path;

use arrow_array::RecordBatch;
use orc_rust::projection::ProjectionMask;
use orc_rust::ArrowReaderBuilder;

use super::data_file::{contain_panic, open_checked, DataFileReader, FileExpect, Source};
use crate::error::{Error, Result};

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
    Ok(Box::new(
        builder
            .with_projection(mask)
            .with_batch_size(batch_size)
            .build()
            .map(|r| r.map_err(|e| e.to_string())),
    ))
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

#[cfg(test)]
pub(crate) mod tests {
    use std::sync::Arc;

    use arrow_array::cast::AsArray;
    use arrow_array::types::Int32Type;
    use arrow_array::{ArrayRef, Int32Array, Int64Array, StringArray, TimestampNanosecondArray};

    use super::*;

    /// An arrow 60 batch as an arrow 59 one (the reverse of [`from_arrow59`]), to write test
    /// files with orc-rust.
    fn to_arrow59(b: &RecordBatch) -> arrow_array_orc::RecordBatch {
        let mut buf = Vec::new();
        let mut w = arrow_ipc::writer::StreamWriter::try_new(&mut buf, &b.schema()).unwrap();
        w.write(b).unwrap();
        w.finish().unwrap();
        drop(w);
        let mut r = arrow_ipc_orc::reader::StreamReader::try_new(Cursor::new(buf), None).unwrap();
        r.next().unwrap().unwrap()
    }

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
        let b59 = to_arrow59(&b);
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
}
