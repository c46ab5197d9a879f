//! The one place where engine errors become Python exceptions. The classes live in
//! `paimon_rs/exceptions.py` (so they can also subclass builtins such as FileNotFoundError).

use paimon_rs_core::Error;
use pyo3::prelude::*;
use pyo3::types::PyType;

fn class_name(e: &Error) -> &'static str {
    match e {
        Error::TableNotFound(_) => "TableNotFoundError",
        Error::TableAlreadyExists(_) => "TableAlreadyExistsError",
        Error::DatabaseNotFound(_) => "DatabaseNotFoundError",
        Error::DatabaseAlreadyExists(_) => "DatabaseAlreadyExistsError",
        Error::SchemaMismatch { .. } => "SchemaMismatchError",
        Error::InvalidArgument { .. } => "InvalidArgumentError",
        Error::Unsupported { .. } => "UnsupportedError",
        Error::CommitConflict { .. } => "CommitConflictError",
        Error::DuplicateCommit { .. } => "DuplicateCommitError",
        Error::StaleCommitMessage { .. } => "StaleCommitMessageError",
        Error::SnapshotExpired { .. } => "SnapshotExpiredError",
        Error::CorruptFile { .. } | Error::Parquet { .. } => "CorruptFileError",
        Error::Io { .. } => "PaimonIOError",
        Error::ColumnNotFound { .. } => "ColumnNotExistException",
        Error::ColumnAlreadyExists { .. } => "ColumnAlreadyExistException",
        Error::Arrow { .. } | Error::Internal(_) => "PaimonRsError",
    }
}

pub fn to_py(e: Error) -> PyErr {
    Python::attach(|py| {
        let msg = e.to_string();
        let cls = py
            .import("paimon_rs.exceptions")
            .and_then(|m| m.getattr(class_name(&e)))
            .and_then(|c| c.cast_into::<PyType>().map_err(PyErr::from));
        match cls {
            Ok(cls) => PyErr::from_type(cls, msg),
            Err(_) => pyo3::exceptions::PyRuntimeError::new_err(msg),
        }
    })
}

/// `?`-friendly conversion for results of the core.
pub trait IntoPy<T> {
    fn py_err(self) -> PyResult<T>;
}

impl<T> IntoPy<T> for Result<T, Error> {
    fn py_err(self) -> PyResult<T> {
        self.map_err(to_py)
    }
}
