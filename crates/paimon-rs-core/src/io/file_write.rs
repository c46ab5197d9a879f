//! What the writers of every data file format ([`super::parquet`], [`super::orc`],
//! [`super::avro`]) share: a file staged under a temp name and published under its own name when
//! whole, and batches cast to the types a file stores.

use std::fs::File;
use std::path::PathBuf;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;

use crate::error::{Error, Result};

/// A data file being written under a temp name (on local disk for a file of an object store),
/// published under its own name by [`StagedFile::publish`]: a crash never leaves a truncated
/// file under a name a manifest could reference. Dropped unpublished, the temp file is removed.
pub(crate) struct StagedFile {
    pub path: PathBuf,
    pub tmp: PathBuf,
    published: bool,
}

impl StagedFile {
    /// The temp file for `path`, created.
    pub fn create(path: PathBuf) -> Result<(StagedFile, File)> {
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("data")
            .to_string();
        let tmp_name = format!(".{name}.{}.tmp", uuid::Uuid::new_v4());
        let tmp = if super::is_remote(&path) {
            std::env::temp_dir().join(tmp_name)
        } else {
            if let Some(parent) = path.parent() {
                super::mkdirs(parent)?;
            }
            path.with_file_name(tmp_name)
        };
        let f = super::create_new_file(&tmp)?;
        Ok((
            StagedFile {
                path,
                tmp,
                published: false,
            },
            f,
        ))
    }

    /// Sync `file` (the temp file, fully written) and publish it under its name (a rename, or
    /// an upload); returns its size.
    pub fn publish(&mut self, file: File) -> Result<u64> {
        file.sync_all().map_err(|e| Error::io(&self.tmp, e))?;
        drop(file);
        let size = std::fs::metadata(&self.tmp)
            .map_err(|e| Error::io(&self.tmp, e))?
            .len();
        super::upload_file(&self.tmp, &self.path)?;
        self.published = true;
        Ok(size)
    }
}

impl Drop for StagedFile {
    fn drop(&mut self) {
        if !self.published {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

/// `batch` with the columns of `file_schema` (the same columns), those of another type cast to
/// it: TIMESTAMP(0) is stored as millis, TIME as int in ORC.
pub(crate) fn to_file_types(batch: &RecordBatch, file_schema: &SchemaRef) -> Result<RecordBatch> {
    if batch
        .schema()
        .fields()
        .iter()
        .zip(file_schema.fields())
        .all(|(a, b)| a.data_type() == b.data_type())
    {
        return Ok(RecordBatch::try_new(
            file_schema.clone(),
            batch.columns().to_vec(),
        )?);
    }
    let cols = batch
        .columns()
        .iter()
        .zip(file_schema.fields())
        .map(|(c, f)| {
            if c.data_type() == f.data_type() {
                Ok(c.clone())
            } else {
                arrow_cast::cast(c, f.data_type())
            }
        })
        .collect::<std::result::Result<Vec<_>, _>>()?;
    Ok(RecordBatch::try_new(file_schema.clone(), cols)?)
}
