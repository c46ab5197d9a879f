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

use std::path::Path;

use super::data_file::{DataFileReader, FileExpect};
use crate::error::{Error, Result};

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
}
