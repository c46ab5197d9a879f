//! Data files of every format a Paimon table holds, read through one function.
//!
//! A data file's format is its file name's extension (`data-<uuid>-<n>.parquet`, `.orc`,
//! `.avro`), as in Java Paimon (`DataFilePathFactory.formatIdentifier`): a table whose
//! `file.format` was changed by `ALTER TABLE` holds files of several formats, each read by its own
//! reader. [`open_data_file`] opens one and yields its record batches, the named top-level
//! columns only (by name: the file's columns are named by the fields of the schema it was
//! written with, and the caller maps them by field id), in the Arrow types the file decodes to
//! (the caller casts them to the table's types). What the readers share is in
//! [`super::data_file`].
//!
//! Writing: a table writes its data files in its `file.format` ([`WriteFormat`], checked with
//! the table's columns by [`check_write_format`] when the table is created or opened for
//! writing), each through a [`DataFileWriter`].

use std::path::{Path, PathBuf};

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use parquet::file::properties::WriterProperties;

use super::avro::{AvroCodec, AvroFileWriter};
use super::data_file::{DataFileReader, FileExpect};
use super::orc::{OrcCompression, OrcFileWriter};
use super::orc_write::OrcOwnWriter;
use super::parquet::{dictionary_by_sample, ParquetFileWriter};
use crate::error::{Error, Result};
use crate::options::{CoreOptions, FileKind};
use crate::spec::types::DataField;

/// The format of a data file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DataFormat {
    Parquet,
    Orc,
    Avro,
}

impl DataFormat {
    /// The format of the data file `path`, by its extension; an unknown one is refused naming
    /// the file.
    pub fn of_path(path: &Path) -> Result<DataFormat> {
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .unwrap_or("")
            .to_ascii_lowercase();
        match ext.as_str() {
            "parquet" => Ok(DataFormat::Parquet),
            "orc" => Ok(DataFormat::Orc),
            "avro" => Ok(DataFormat::Avro),
            other => Err(Error::unsupported(format!(
                "data file {}: format '{other}' (paimon_rs reads parquet, orc and avro data files)",
                path.display()
            ))),
        }
    }
}

/// Open the data file `path` (its format by its extension) for reading the named top-level
/// columns (all if `columns` is None; names the file lacks are left out). With `expect`, what
/// the manifest records of the file is checked as it is opened (its length, and its row count
/// where the format's footer records one).
pub fn open_data_file(
    path: &Path,
    columns: Option<&[String]>,
    batch_size: usize,
    expect: Option<FileExpect>,
) -> Result<DataFileReader> {
    match DataFormat::of_path(path)? {
        DataFormat::Parquet => super::parquet::open_reader(path, columns, batch_size, expect),
        DataFormat::Orc => super::orc::open_reader(path, columns, batch_size, expect),
        DataFormat::Avro => super::avro::open_reader(path, columns, batch_size, expect),
    }
}

/// [`open_data_file`] for the rows at positions `[begin, end)` of `rows`: a Parquet file yields
/// only them (its row groups and pages before `begin` are not read); Avro and ORC files are
/// read from their first row. Returns the reader and the position of the first row it yields.
pub fn open_data_file_rows(
    path: &Path,
    columns: Option<&[String]>,
    batch_size: usize,
    expect: Option<FileExpect>,
    rows: (u64, u64),
) -> Result<(DataFileReader, u64)> {
    match DataFormat::of_path(path)? {
        DataFormat::Parquet => {
            let r =
                super::parquet::open_reader_rows(path, columns, batch_size, expect, Some(rows))?;
            Ok((r, rows.0))
        }
        _ => Ok((open_data_file(path, columns, batch_size, expect)?, 0)),
    }
}

/// [`open_data_file`] for the rows at the positions `selected` holds, where the format can
/// skip the others (Parquet: [`super::parquet::open_reader_selected`]); None for the other
/// formats (the caller reads the whole file).
pub fn open_data_file_selected(
    path: &Path,
    columns: Option<&[String]>,
    batch_size: usize,
    expect: Option<FileExpect>,
    selected: &roaring::RoaringBitmap,
) -> Result<Option<DataFileReader>> {
    match DataFormat::of_path(path)? {
        DataFormat::Parquet => {
            super::parquet::open_reader_selected(path, columns, batch_size, expect, selected)
                .map(Some)
        }
        _ => Ok(None),
    }
}

/// The format (and its settings) of the data files a table writes.
#[derive(Debug, Clone, PartialEq)]
pub enum WriteFormat {
    /// Parquet, with the writer properties of the file context.
    Parquet,
    Avro(AvroCodec),
    Orc(OrcCompression),
}

impl WriteFormat {
    /// The format `opts` ask for (`file.format`), with its settings; one that cannot be
    /// written is refused, naming the option.
    pub fn from_options(opts: &CoreOptions) -> Result<WriteFormat> {
        WriteFormat::new(
            opts,
            (&opts.file_format, "file.format"),
            (&opts.file_compression, "file.compression"),
        )
    }

    /// The format of a data file of `kind` (its level; a changelog file or not), with its
    /// codec: `file.format.per.level`, `file.compression.per.level` and the `changelog-file.*`
    /// options over `file.format` / `file.compression` (paimon-behaviour.md §1.5a).
    pub fn for_kind(opts: &CoreOptions, kind: FileKind) -> Result<WriteFormat> {
        let (format, format_key) = opts.file_format_of(kind);
        let (codec, codec_key) = opts.file_compression_of(kind);
        WriteFormat::new(opts, (format, &format_key), (codec, &codec_key))
    }

    /// `format` compressed with `codec`, each with the option that named it.
    fn new(opts: &CoreOptions, format: (&str, &str), codec: (&str, &str)) -> Result<WriteFormat> {
        match format.0 {
            "parquet" => {
                // parquet::writer_properties's codecs
                if !matches!(
                    codec.0,
                    "zstd" | "snappy" | "lz4" | "gzip" | "none" | "uncompressed"
                ) {
                    return Err(Error::unsupported(format!(
                        "table option '{}' = '{}' for Parquet data files: paimon_rs writes \
                         Parquet with zstd, snappy, lz4, gzip or none",
                        codec.1, codec.0
                    )));
                }
                Ok(WriteFormat::Parquet)
            }
            "avro" => Ok(WriteFormat::Avro(AvroCodec::for_compression(
                opts, codec.0, codec.1,
            )?)),
            "orc" => Ok(WriteFormat::Orc(OrcCompression::for_compression(
                opts, codec.0, codec.1,
            )?)),
            other => Err(Error::unsupported(format!(
                "table option '{}' = '{other}': paimon_rs writes parquet, avro and orc data files",
                format.1
            ))),
        }
    }

    /// The extension of its file names (`DataFilePathFactory`: the format's identifier).
    pub fn extension(&self) -> &'static str {
        match self {
            WriteFormat::Parquet => "parquet",
            WriteFormat::Avro(_) => "avro",
            WriteFormat::Orc(_) => "orc",
        }
    }
}

/// Refuse a table whose data files cannot be written in its `file.format`: the format, its
/// compression options, or a column the format cannot hold (naming the table and column).
/// With `file.format.per.level`, `file.compression.per.level` and `changelog-file.format` /
/// `.compression`, every format and codec they name is checked the same way.
pub fn check_write_format(table: &str, fields: &[DataField], opts: &CoreOptions) -> Result<()> {
    let mut formats = vec![WriteFormat::from_options(opts).map_err(|e| e.with_table(table))?];
    for kind in opts.file_kinds_named() {
        formats.push(WriteFormat::for_kind(opts, kind).map_err(|e| e.with_table(table))?);
    }
    let (mut avro, mut orc) = (false, false);
    // VARIANT is a Parquet-only type in Java (ORC's FieldWriterFactory and
    // AvroSchemaConverter throw "Unsupported type"): refused rather than written in a form
    // no other engine reads
    let variant = fields.iter().find(|f| holds_variant(&f.data_type));
    if let (Some(f), Some(fmt)) = (
        variant,
        formats.iter().find(|w| !matches!(w, WriteFormat::Parquet)),
    ) {
        let name = match fmt {
            WriteFormat::Avro(_) => "Avro",
            _ => "ORC",
        };
        return Err(Error::unsupported(format!(
            "column '{}' of type {}: {name} data files cannot hold VARIANT (Java writes it to \
             Parquet only); use file.format = parquet",
            f.name,
            f.data_type.sql_string()
        ))
        .with_table(table));
    }
    for f in formats {
        match f {
            WriteFormat::Parquet => {}
            WriteFormat::Avro(_) if !avro => {
                avro = true;
                super::avro::check_schema(table, fields)?;
            }
            WriteFormat::Orc(_) if !orc => {
                orc = true;
                super::orc::check_schema(table, fields)?;
            }
            _ => {}
        }
    }
    Ok(())
}

/// Whether `t` is or contains a VARIANT.
fn holds_variant(t: &crate::spec::types::DataType) -> bool {
    use crate::spec::types::TypeKind;
    match &t.kind {
        TypeKind::Variant => true,
        TypeKind::Array(e) | TypeKind::Multiset(e) => holds_variant(e),
        TypeKind::Map(k, v) => holds_variant(k) || holds_variant(v),
        TypeKind::Row(fs) => fs.iter().any(|f| holds_variant(&f.data_type)),
        _ => false,
    }
}

/// One data file being written, in any format.
pub enum DataFileWriter {
    Parquet(ParquetFileWriter),
    Avro(AvroFileWriter),
    Orc(OrcFileWriter),
    /// An ORC file of columns orc-rust cannot write ([`super::orc_write`]).
    OrcOwn(OrcOwnWriter),
}

impl DataFileWriter {
    /// Create `path` in `format`, holding columns `schema`; `first` (its first rows) tunes
    /// the Parquet writer's `props` (see [`dictionary_by_sample`]).
    pub fn create(
        format: &WriteFormat,
        path: PathBuf,
        schema: SchemaRef,
        props: &WriterProperties,
        first: &RecordBatch,
    ) -> Result<Self> {
        Ok(match format {
            WriteFormat::Parquet => DataFileWriter::Parquet(ParquetFileWriter::create(
                path,
                schema,
                dictionary_by_sample(props, first),
            )?),
            WriteFormat::Avro(codec) => {
                DataFileWriter::Avro(AvroFileWriter::create(path, schema, *codec)?)
            }
            WriteFormat::Orc(c) if super::orc_write::needed(&schema) => {
                DataFileWriter::OrcOwn(OrcOwnWriter::create(path, schema, *c)?)
            }
            WriteFormat::Orc(c) => DataFileWriter::Orc(OrcFileWriter::create(path, schema, *c)?),
        })
    }

    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        match self {
            DataFileWriter::Parquet(w) => w.write(batch),
            DataFileWriter::Avro(w) => w.write(batch),
            DataFileWriter::Orc(w) => w.write(batch),
            DataFileWriter::OrcOwn(w) => w.write(batch),
        }
    }

    /// Bytes written so far plus an estimate of what is buffered.
    pub fn estimated_size(&self) -> u64 {
        match self {
            DataFileWriter::Parquet(w) => w.estimated_size(),
            DataFileWriter::Avro(w) => w.estimated_size(),
            DataFileWriter::Orc(w) => w.estimated_size(),
            DataFileWriter::OrcOwn(w) => w.estimated_size(),
        }
    }

    pub fn rows(&self) -> u64 {
        match self {
            DataFileWriter::Parquet(w) => w.rows(),
            DataFileWriter::Avro(w) => w.rows(),
            DataFileWriter::Orc(w) => w.rows(),
            DataFileWriter::OrcOwn(w) => w.rows(),
        }
    }

    /// Memory held by what is buffered (a Parquet row group, an Avro block, an ORC stripe).
    pub fn buffered_bytes(&self) -> usize {
        match self {
            DataFileWriter::Parquet(w) => w.buffered_bytes(),
            DataFileWriter::Avro(w) => w.buffered_bytes(),
            DataFileWriter::Orc(w) => w.buffered_bytes(),
            DataFileWriter::OrcOwn(w) => w.buffered_bytes(),
        }
    }

    /// Write what is buffered out, freeing its memory; the file stays open.
    pub fn flush_buffered(&mut self) -> Result<()> {
        match self {
            DataFileWriter::Parquet(w) => w.flush_row_group(),
            DataFileWriter::Avro(w) => w.flush_block(),
            DataFileWriter::Orc(w) => w.flush_stripe(),
            DataFileWriter::OrcOwn(w) => w.flush_stripe(),
        }
    }

    /// Finish the file; returns its size in bytes.
    pub fn close(self) -> Result<u64> {
        match self {
            DataFileWriter::Parquet(w) => w.close(),
            DataFileWriter::Avro(w) => w.close(),
            DataFileWriter::Orc(w) => w.close(),
            DataFileWriter::OrcOwn(w) => w.close(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_format_is_the_extension() {
        let f = |p: &str| DataFormat::of_path(Path::new(p));
        assert_eq!(f("b/data-1-0.parquet").unwrap(), DataFormat::Parquet);
        assert_eq!(f("b/data-1-0.orc").unwrap(), DataFormat::Orc);
        assert_eq!(f("b/data-1-0.AVRO").unwrap(), DataFormat::Avro);
        let e = f("b/data-1-0.csv").unwrap_err().to_string();
        assert!(e.contains("data-1-0.csv") && e.contains("'csv'"), "{e}");
    }

    /// Every format and codec a per-level or changelog-file option names is checked as
    /// `file.format` / `file.compression` are, the error naming the option (and level).
    #[test]
    fn per_level_formats_and_codecs_are_checked_naming_the_option() {
        use crate::options::opts;
        use crate::spec::types::{DataType, TypeKind};
        let fields = vec![
            DataField::new(0, "k", DataType::new(TypeKind::Int)),
            DataField::new(
                1,
                "d",
                DataType::new(TypeKind::Decimal {
                    precision: 10,
                    scale: 2,
                }),
            ),
        ];
        let check = |kv: &[(&str, &str)]| {
            let o = CoreOptions::new(&opts(kv), true).unwrap();
            check_write_format("t", &fields, &o).map_err(|e| e.to_string())
        };
        check(&[("file.format.per.level", "0:avro,5:parquet")]).unwrap();
        check(&[("file.compression.per.level", "0:lz4,1:none")]).unwrap();
        check(&[
            ("changelog-file.format", "avro"),
            ("changelog-file.compression", "snappy"),
        ])
        .unwrap();
        for (kv, want) in [
            (
                vec![("file.format.per.level", "0:csv")],
                "'file.format.per.level (level 0)' = 'csv'",
            ),
            (
                vec![
                    ("file.format.per.level", "0:avro"),
                    ("file.compression.per.level", "0:lz4"),
                ],
                "'file.compression.per.level (level 0)' = 'lz4' for Avro",
            ),
            (
                vec![("file.compression.per.level", "2:zlib")],
                "'file.compression.per.level (level 2)' = 'zlib' for Parquet",
            ),
            (
                vec![("changelog-file.format", "json")],
                "'changelog-file.format' = 'json'",
            ),
            (
                vec![
                    ("changelog-file.format", "avro"),
                    ("changelog-file.compression", "lz4"),
                ],
                "'changelog-file.compression' = 'lz4'",
            ),
        ] {
            let e = check(&kv).unwrap_err();
            assert!(e.contains(want), "{kv:?}: {e}");
        }
        // the codec of a level is checked against that level's format: lz4 is an ORC codec
        check(&[
            ("file.format.per.level", "0:orc"),
            ("file.compression.per.level", "0:zlib"),
        ])
        .unwrap(); // ORC holds the decimal column (io/orc_write.rs)
        let f = vec![DataField::new(0, "k", DataType::new(TypeKind::Int))];
        let o = CoreOptions::new(
            &opts(&[
                ("file.format.per.level", "0:orc"),
                ("file.compression.per.level", "0:zlib"),
            ]),
            true,
        )
        .unwrap();
        check_write_format("t", &f, &o).unwrap();
        assert_eq!(
            WriteFormat::for_kind(
                &o,
                FileKind {
                    level: 0,
                    changelog: false
                }
            )
            .unwrap(),
            WriteFormat::Orc(OrcCompression::Zlib)
        );
        assert_eq!(
            WriteFormat::for_kind(
                &o,
                FileKind {
                    level: 1,
                    changelog: true
                }
            )
            .unwrap(),
            WriteFormat::Parquet
        );
    }
}
