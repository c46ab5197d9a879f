//! Avro data files (`file.format` = avro), read with arrow-rs's Avro reader (arrow-avro).
//!
//! Java Paimon writes an object container file of records whose fields are the data file's
//! columns (`AvroSchemaConverter`): nullable types as `["null", T]` unions, TINYINT and SMALLINT
//! as int, TIMESTAMP(p) as `timestamp-millis`/`-micros` longs (p <= 6), TIMESTAMP_LTZ as
//! `local-timestamp-*`, DECIMAL as bytes with the decimal logical type, maps with string keys as
//! Avro maps and other maps as arrays of {key, value} records. They decode to the nearest Arrow
//! types; the reader casts each to the table's type (a map stored as an array of records becomes
//! a map there, see `read::evolution::conform_physical`). Projection is pushed down to the
//! decoder (a reader schema holding only the named fields: the others are skipped, not built).

use std::io::BufReader;
use std::path::Path;

use arrow_avro::reader::ReaderBuilder;

use super::format::{contain_panic, open_checked, DataFileReader, FileExpect};
use crate::error::{Error, Result};

/// Open an Avro data file (see [`super::format::open_data_file`]). Avro records no row count
/// up front: the rows decoded are checked against the manifest at the file's end (the caller).
pub fn open_reader(
    path: &Path,
    columns: Option<&[String]>,
    batch_size: usize,
    expect: Option<FileExpect>,
) -> Result<DataFileReader> {
    let reader = contain_panic(path, "Avro", || {
        let corrupt = |e: arrow_schema::ArrowError| Error::corrupt(path, e.to_string());
        let builder = || ReaderBuilder::new().with_batch_size(batch_size);
        let (f, _) = open_checked(path, expect)?;
        let all = builder().build(BufReader::new(f)).map_err(corrupt)?;
        let Some(cols) = columns else {
            return Ok(all);
        };
        let schema = all.schema();
        let idx: Vec<usize> = cols
            .iter()
            .filter_map(|c| schema.index_of(c).ok())
            .collect();
        if idx.len() == schema.fields().len() && idx.iter().enumerate().all(|(i, &j)| i == j) {
            return Ok(all);
        }
        drop(all);
        let (f, _) = open_checked(path, expect)?;
        builder()
            .with_projection(idx)
            .build(BufReader::new(f))
            .map_err(corrupt)
    })?;
    let p = path.to_path_buf();
    Ok(DataFileReader::new(
        path,
        "Avro",
        reader.map(move |r| r.map_err(|e| Error::corrupt(&p, e.to_string()))),
    ))
}

#[cfg(test)]
mod tests {
    use arrow_array::cast::AsArray;
    use arrow_array::types::Int32Type;
    use arrow_array::RecordBatch;
    use arrow_avro::writer::AvroWriter;

    use super::*;

    fn read(
        path: &Path,
        cols: Option<&[String]>,
        expect: Option<FileExpect>,
    ) -> Result<Vec<RecordBatch>> {
        open_reader(path, cols, 100, expect)?.collect()
    }

    /// arrow-avro's writer stands in for Java's (Java-written files are read in
    /// tests/compat/test_java_interop.py): every row back, projection, and a damaged file is a
    /// CorruptFile error naming it.
    #[test]
    fn avro_files_read_projected_and_damage_is_corrupt() {
        let b = crate::io::orc::tests::batch(1000);
        let b = RecordBatch::try_new(
            std::sync::Arc::new(arrow_schema::Schema::new(
                b.schema()
                    .fields()
                    .iter()
                    .take(2)
                    .cloned()
                    .collect::<Vec<_>>(),
            )),
            b.columns()[..2].to_vec(),
        )
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data-x-0.avro");
        let mut w = AvroWriter::new(
            std::fs::File::create(&path).unwrap(),
            b.schema().as_ref().clone(),
        )
        .unwrap();
        w.write(&b).unwrap();
        w.finish().unwrap();
        drop(w);
        let size = std::fs::metadata(&path).unwrap().len();
        let expect = FileExpect { size, rows: 1000 };

        let got = read(&path, None, Some(expect)).unwrap();
        let all = arrow_select::concat::concat_batches(&got[0].schema(), &got).unwrap();
        assert_eq!(all.num_rows(), 1000);
        for c in 0..2 {
            assert_eq!(all.column(c).as_ref(), b.column(c).as_ref(), "column {c}");
        }
        let cols = ["id".to_string(), "gone".to_string()];
        let got = read(&path, Some(&cols), Some(expect)).unwrap();
        assert_eq!(got[0].num_columns(), 1);
        assert_eq!(got[0].column(0).as_primitive::<Int32Type>().value(3), 3);

        let e = read(
            &path,
            None,
            Some(FileExpect {
                size: size - 1,
                rows: 1000,
            }),
        )
        .unwrap_err();
        assert!(matches!(e, Error::CorruptFile { .. }), "{e}");
        let bytes = std::fs::read(&path).unwrap();
        for keep in [0, 3, bytes.len() / 2, bytes.len() - 1] {
            std::fs::write(&path, &bytes[..keep]).unwrap();
            let e = read(&path, None, None).unwrap_err();
            assert!(
                matches!(e, Error::CorruptFile { .. }) && e.to_string().contains("data-x-0.avro"),
                "cut at {keep}: {e}"
            );
        }
    }
}
