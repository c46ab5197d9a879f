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

use std::io::{BufReader, Cursor, Read};
use std::path::Path;

use arrow_avro::reader::ReaderBuilder;

use super::data_file::{contain_panic, open_checked, DataFileReader, FileExpect};
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
        let all = builder()
            .build(row_record_input(path, expect)?)
            .map_err(corrupt)?;
        let schema = all.schema();
        let idx: Vec<usize> = match columns {
            Some(cols) => cols
                .iter()
                .filter_map(|c| schema.index_of(c).ok())
                .collect(),
            None => (0..schema.fields().len())
                .filter(|&i| schema.field(i).name() != BRANCH)
                .collect(),
        };
        if idx.len() == schema.fields().len() && idx.iter().enumerate().all(|(i, &j)| i == j) {
            return Ok(all);
        }
        drop(all);
        builder()
            .with_projection(idx)
            .build(row_record_input(path, expect)?)
            .map_err(corrupt)
    })?;
    let p = path.to_path_buf();
    Ok(DataFileReader::new(
        path,
        "Avro",
        reader.map(move |r| r.map_err(|e| Error::corrupt(&p, e.to_string()))),
    ))
}

/// Name of the column standing for the row's union branch (see [`row_record_input`]).
const BRANCH: &str = "_paimon_rs_row_branch";

type Input = BufReader<std::io::Chain<Cursor<Vec<u8>>, BufReader<Box<dyn Read + Send>>>>;

/// The Avro object container file `path` as arrow-avro 60 can read it. Java writes the rows as a
/// nullable row, the union `["null", record]`, and arrow-avro reads only a record at the top. A
/// union value is encoded as its branch index (a zigzag varint) then the branch's value; the
/// record branch's index 1 is the byte 0x02, the very encoding of an `int` holding 1. So the
/// header's schema is replaced by the record with a leading `int` field [`BRANCH`] (the data
/// blocks, compressed or not, are left as they are: their sync marker is kept) and that column is
/// never projected. A file whose schema is a record already is read as it is.
fn row_record_input(path: &Path, expect: Option<FileExpect>) -> Result<Input> {
    let bad = |m: String| Error::corrupt(path, format!("Avro header: {m}"));
    let (f, _) = open_checked(path, expect, true)?;
    let mut r = BufReader::new(f.into_read());
    let mut magic = [0u8; 4];
    r.read_exact(&mut magic).map_err(|e| bad(e.to_string()))?;
    if &magic != b"Obj\x01" {
        return Err(bad("not an Avro object container file".into()));
    }
    let mut meta: Vec<(Vec<u8>, Vec<u8>)> = vec![];
    loop {
        let mut n = read_long(&mut r).map_err(&bad)?;
        if n == 0 {
            break;
        }
        if n < 0 {
            n = -n;
            read_long(&mut r).map_err(&bad)?;
        }
        for _ in 0..n {
            let k = read_bytes(&mut r).map_err(&bad)?;
            let v = read_bytes(&mut r).map_err(&bad)?;
            meta.push((k, v));
        }
    }
    let mut sync = [0u8; 16];
    r.read_exact(&mut sync).map_err(|e| bad(e.to_string()))?;
    for (k, v) in meta.iter_mut() {
        if k.as_slice() != b"avro.schema" {
            continue;
        }
        let schema: serde_json::Value =
            serde_json::from_slice(v).map_err(|e| bad(format!("schema: {e}")))?;
        if let serde_json::Value::Array(branches) = &schema {
            let at = branches
                .iter()
                .position(|b| b.get("type").and_then(|t| t.as_str()) == Some("record"))
                .ok_or_else(|| bad("a union without a record branch at the top".into()))?;
            let mut record = branches[at].clone();
            let fields = record
                .get_mut("fields")
                .and_then(|f| f.as_array_mut())
                .ok_or_else(|| bad("a record without fields".into()))?;
            if at != 1 {
                return Err(bad(format!("the row is branch {at} of the top union")));
            }
            fields.insert(0, serde_json::json!({"name": BRANCH, "type": "int"}));
            *v = serde_json::to_vec(&record).map_err(|e| bad(e.to_string()))?;
        }
    }
    let mut header = b"Obj\x01".to_vec();
    write_long(&mut header, meta.len() as i64);
    for (k, v) in &meta {
        write_long(&mut header, k.len() as i64);
        header.extend_from_slice(k);
        write_long(&mut header, v.len() as i64);
        header.extend_from_slice(v);
    }
    write_long(&mut header, 0);
    header.extend_from_slice(&sync);
    Ok(BufReader::new(Cursor::new(header).chain(r)))
}

fn read_long(r: &mut impl Read) -> std::result::Result<i64, String> {
    let mut v: u64 = 0;
    for shift in (0..64).step_by(7) {
        let mut b = [0u8; 1];
        r.read_exact(&mut b).map_err(|e| e.to_string())?;
        v |= u64::from(b[0] & 0x7f) << shift;
        if b[0] & 0x80 == 0 {
            return Ok((v >> 1) as i64 ^ -((v & 1) as i64));
        }
    }
    Err("a varint longer than 64 bits".into())
}

fn read_bytes(r: &mut impl Read) -> std::result::Result<Vec<u8>, String> {
    let n = read_long(r)?;
    if !(0..=(64 << 20)).contains(&n) {
        return Err(format!("a metadata value of {n} bytes"));
    }
    let mut b = vec![0u8; n as usize];
    r.read_exact(&mut b).map_err(|e| e.to_string())?;
    Ok(b)
}

fn write_long(out: &mut Vec<u8>, n: i64) {
    let mut v = ((n << 1) ^ (n >> 63)) as u64;
    while v >= 0x80 {
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
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
        // cut anywhere (no manifest check): the decoder's error naming the file, or (arrow-avro
        // 60 ends quietly at a cut inside the last block) fewer rows, never other ones; a table
        // read catches those by the manifest's file size and row count (read/table_read.rs)
        let bytes = std::fs::read(&path).unwrap();
        for keep in [0, 3, bytes.len() / 2, bytes.len() - 1] {
            std::fs::write(&path, &bytes[..keep]).unwrap();
            match read(&path, None, None) {
                Err(e) => assert!(
                    matches!(e, Error::CorruptFile { .. })
                        && e.to_string().contains("data-x-0.avro"),
                    "cut at {keep}: {e}"
                ),
                Ok(got) => {
                    let rows: usize = got.iter().map(|b| b.num_rows()).sum();
                    assert!(rows < 1000, "cut at {keep}: all rows");
                    if rows > 0 {
                        let got =
                            arrow_select::concat::concat_batches(&got[0].schema(), &got).unwrap();
                        assert_eq!(got, b.slice(0, rows), "cut at {keep}");
                    }
                }
            }
        }
    }
}
