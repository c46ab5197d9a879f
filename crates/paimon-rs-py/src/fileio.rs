//! File operations for `paimon_rs.FileIO` (pypaimon's `Table.file_io`): local paths and object
//! store URIs alike, through the core's store (the table's credentials and options), every call
//! with the GIL released.

use std::path::{Path, PathBuf};

use paimon_rs_core::file_ops::{self, FileStatus};
use paimon_rs_core::Error;
use pyo3::exceptions::{PyFileExistsError, PyFileNotFoundError, PyOSError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::errors::{to_py, IntoPy};

/// (path, is a directory, size in bytes, modification time in epoch millis if known)
type StatusRow = (String, bool, u64, Option<i64>);

fn row(s: FileStatus) -> StatusRow {
    (
        s.path.to_string_lossy().into_owned(),
        s.is_dir,
        s.size,
        s.mtime_millis,
    )
}

/// A core error as Python's `FileNotFoundError` when the file is missing, else as usual.
fn io_err(e: Error) -> PyErr {
    match &e {
        Error::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
            PyFileNotFoundError::new_err(e.to_string())
        }
        _ => to_py(e),
    }
}

/// The status of `path`, None if nothing is there.
#[pyfunction]
pub fn fio_status(py: Python<'_>, path: &str) -> PyResult<Option<StatusRow>> {
    let p = PathBuf::from(path);
    Ok(py.detach(|| file_ops::status(&p)).py_err()?.map(row))
}

/// The entries of the directory `path` (not recursive); empty if it does not exist.
#[pyfunction]
pub fn fio_list(py: Python<'_>, path: &str) -> PyResult<Vec<StatusRow>> {
    let p = PathBuf::from(path);
    let l = py.detach(|| file_ops::list_status(&p)).py_err()?;
    Ok(l.into_iter().map(row).collect())
}

/// The content of the file `path`.
#[pyfunction]
pub fn fio_read<'py>(py: Python<'py>, path: &str) -> PyResult<Bound<'py, PyBytes>> {
    let p = PathBuf::from(path);
    let bytes = py.detach(|| file_ops::read(&p)).map_err(io_err)?;
    Ok(PyBytes::new(py, &bytes))
}

/// Write `data` to `path` (see `file_ops::write_file`); False if `overwrite` is off and
/// something is at `path`.
#[pyfunction]
pub fn fio_write(py: Python<'_>, path: &str, data: &[u8], overwrite: bool) -> PyResult<bool> {
    let p = PathBuf::from(path);
    py.detach(|| file_ops::write_file(&p, data, overwrite))
        .py_err()
}

/// Create the directory `path` and its parents (nothing to create on an object store);
/// `FileExistsError` if a file is there.
#[pyfunction]
pub fn fio_mkdirs(py: Python<'_>, path: &str) -> PyResult<bool> {
    let p = PathBuf::from(path);
    let st = py.detach(|| file_ops::status(&p)).py_err()?;
    if let Some(s) = st {
        if !s.is_dir {
            return Err(PyFileExistsError::new_err(format!(
                "path exists but is not a directory: {path}"
            )));
        }
        return Ok(true);
    }
    py.detach(|| file_ops::mkdirs(&p)).py_err()?;
    Ok(true)
}

enum Deleted {
    Nothing,
    Done,
    NotEmpty,
}

/// Delete the file or directory `path` (a directory with content only if `recursive`):
/// False if nothing was there, `OSError` for a non-empty directory without `recursive`.
#[pyfunction]
#[pyo3(signature = (path, recursive=false))]
pub fn fio_delete(py: Python<'_>, path: &str, recursive: bool) -> PyResult<bool> {
    let p = PathBuf::from(path);
    let done = py
        .detach(|| -> Result<Deleted, Error> {
            let Some(s) = file_ops::status(&p)? else {
                return Ok(Deleted::Nothing);
            };
            if !s.is_dir {
                file_ops::remove_file_if_exists(&p)?;
            } else if recursive {
                file_ops::remove_dir_all(&p)?;
            } else if !file_ops::list_status(&p)?.is_empty() {
                return Ok(Deleted::NotEmpty);
            } else {
                file_ops::remove_empty_dir(&p)?;
            }
            Ok(Deleted::Done)
        })
        .py_err()?;
    match done {
        Deleted::Nothing => Ok(false),
        Deleted::Done => Ok(true),
        Deleted::NotEmpty => Err(PyOSError::new_err(format!("directory {path} is not empty"))),
    }
}

/// Move `src` to `dst` as pypaimon's (Hadoop's) rename: into `dst` if it is a directory,
/// False if the target exists or `src` does not.
#[pyfunction]
pub fn fio_rename(py: Python<'_>, src: &str, dst: &str) -> PyResult<bool> {
    let from = PathBuf::from(src);
    let mut to = PathBuf::from(dst);
    py.detach(|| -> Result<bool, Error> {
        let Some(s) = file_ops::status(&from)? else {
            return Ok(false);
        };
        if let Some(d) = file_ops::status(&to)? {
            if !d.is_dir {
                return Ok(false);
            }
            let name = from.file_name().map(Path::new).unwrap_or(Path::new(""));
            to = to.join(name);
            if file_ops::status(&to)?.is_some() {
                return Ok(false);
            }
        }
        if s.is_dir {
            file_ops::rename_dir(&from, &to, "").map(|()| true)
        } else {
            file_ops::rename_file(&from, &to)
        }
    })
    .py_err()
}
