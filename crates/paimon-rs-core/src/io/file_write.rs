//! What the writers of every data file format ([`super::parquet`], [`super::orc`],
//! [`super::avro`]) share: a file staged under a temp name and published under its own name when
//! whole, and batches cast to the types a file stores.

use std::fs::File;
use std::io::Write;
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
        self.publish_synced()
    }

    /// Publish the temp file, closed and already durable (several made so at once by
    /// [`super::sync_files`]), under its name; returns its size.
    pub fn publish_synced(&mut self) -> Result<u64> {
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

/// Bytes of a data file written between two requests to start their writeback.
const WRITEBACK_BYTES: u64 = 4 << 20;

/// A data file's temp file that asks the kernel to start writing its bytes to disk every
/// [`WRITEBACK_BYTES`] (Linux `sync_file_range(SYNC_FILE_RANGE_WRITE)`, which does not wait for
/// the disk). The disk then writes the file while its next row groups are encoded, and the
/// fsync of [`StagedFile::publish`] waits for the last stretch only: a 45 MB file of a bulk
/// write waited 22-42 ms in that fsync, with the writer's core idle. Only a hint: a failed
/// request is left to the fsync, which reports the error (elsewhere a no-op).
pub(crate) struct WritebackFile {
    file: File,
    written: u64,
    started: u64,
}

impl WritebackFile {
    pub fn new(file: File) -> Self {
        WritebackFile {
            file,
            written: 0,
            started: 0,
        }
    }

    pub fn into_file(self) -> File {
        self.file
    }

    /// Bytes up to which a writeback was requested.
    #[cfg(test)]
    fn started(&self) -> u64 {
        self.started
    }

    fn start_writeback(&mut self) {
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsRawFd;
            let (Ok(from), Ok(len)) = (
                libc::off64_t::try_from(self.started),
                libc::off64_t::try_from(self.written - self.started),
            ) else {
                return;
            };
            // SAFETY: a plain syscall on an open descriptor this struct owns; no memory passed
            unsafe {
                libc::sync_file_range(
                    self.file.as_raw_fd(),
                    from,
                    len,
                    libc::SYNC_FILE_RANGE_WRITE,
                );
            }
        }
        self.started = self.written;
    }
}

impl Write for WritebackFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.file.write(buf)?;
        self.written += n as u64;
        if self.written - self.started >= WRITEBACK_BYTES {
            self.start_writeback();
        }
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writeback_file_keeps_every_byte_and_requests_writeback_per_stretch() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let mut w = WritebackFile::new(File::create(&path).unwrap());
        let chunk: Vec<u8> = (0..1_000_003u32).map(|i| (i % 251) as u8).collect();
        let mut expect = vec![];
        for _ in 0..10 {
            w.write_all(&chunk).unwrap();
            expect.extend_from_slice(&chunk);
        }
        w.flush().unwrap();
        // a request per WRITEBACK_BYTES stretch: 10 MB written, the last request at >= 8 MiB
        assert!(w.started() >= 2 * WRITEBACK_BYTES, "{}", w.started());
        assert!(w.started() <= expect.len() as u64);
        let f = w.into_file();
        f.sync_all().unwrap();
        drop(f);
        assert_eq!(std::fs::read(&path).unwrap(), expect);
    }
}
