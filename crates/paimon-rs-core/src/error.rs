//! The one error type of the engine. Every variant names what it is about (table, file, field,
//! option) so that the Python exception raised from it is actionable. The pyo3 crate maps each
//! variant once to a class of the `paimon_rs.PaimonRsError` tree.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("table not found: {0}")]
    TableNotFound(String),
    #[error("table already exists: {0}")]
    TableAlreadyExists(String),
    #[error("database not found: {0}")]
    DatabaseNotFound(String),
    #[error("database already exists: {0}")]
    DatabaseAlreadyExists(String),
    /// A batch or a schema does not match the table: missing/extra/wrong-typed column,
    /// null in a NOT NULL column, a bad partition value.
    #[error("schema mismatch{}: {message}", table_ctx(.table, .message))]
    SchemaMismatch {
        table: Option<String>,
        message: String,
    },
    /// An option with a bad value, or an argument the API cannot accept.
    #[error("invalid option or argument{}: {message}", table_ctx(.table, .message))]
    InvalidArgument {
        table: Option<String>,
        message: String,
    },
    /// A feature or option the engine does not implement yet; never silently ignored.
    #[error("unsupported{}: {message}", table_ctx(.table, .message))]
    Unsupported {
        table: Option<String>,
        message: String,
    },
    /// Another writer won a race that cannot be retried (e.g. files we delete are gone, or a
    /// concurrent commit wrote the same keys with overlapping sequence numbers).
    #[error("commit conflict on table {table}: {message}")]
    CommitConflict { table: String, message: String },
    /// The commit messages (or their files) are already part of the table: committing them
    /// again would reference one file twice. Not retryable.
    #[error("duplicate commit on table {table}: {message}")]
    DuplicateCommit { table: String, message: String },
    /// Commit messages whose data files no longer exist (aborted, or cleaned after a failed
    /// commit): they can never be committed; the data must be written again.
    #[error("stale commit messages for table {table}: {message}")]
    StaleCommitMessage { table: String, message: String },
    /// A snapshot a read or operation needs was expired (or rolled back) meanwhile: its files
    /// may be gone. Read a retained snapshot or a tag instead.
    #[error("snapshot expired on table {table}: {message}")]
    SnapshotExpired { table: String, message: String },
    /// A file that exists but cannot be decoded as what it should be.
    #[error("corrupt file {}: {message}", .path.display())]
    CorruptFile { path: PathBuf, message: String },
    #[error("I/O error on {}: {source}", .path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("arrow error{}: {source}", ctx(.context))]
    Arrow {
        context: Option<String>,
        #[source]
        source: arrow_schema::ArrowError,
    },
    #[error("parquet error on {}: {source}", .path.display())]
    Parquet {
        path: PathBuf,
        #[source]
        source: parquet::errors::ParquetError,
    },
    /// Java's `ColumnNotExistException` (an alter naming a column the table lacks).
    #[error("Column {column} does not exist in the {table} table.")]
    ColumnNotFound { table: String, column: String },
    /// Java's `ColumnAlreadyExistException` (an alter adding or renaming into a taken name).
    #[error("Column {column} already exists in the {table} table.")]
    ColumnAlreadyExists { table: String, column: String },
    #[error("internal error: {0}")]
    Internal(String),
}

fn ctx(s: &Option<String>) -> String {
    match s {
        Some(s) => format!(" ({s})"),
        None => String::new(),
    }
}

/// " (db.t)" before a message, unless the message already names the table as `'db.t'`
/// (a message written to stand alone, e.g. "table 'db.t': file ... overlaps ...").
fn table_ctx(table: &Option<String>, message: &str) -> String {
    match table {
        Some(t) if message.contains(&format!("'{t}'")) => String::new(),
        _ => ctx(table),
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn schema(message: impl Into<String>) -> Self {
        Error::SchemaMismatch {
            table: None,
            message: message.into(),
        }
    }
    pub fn invalid(message: impl Into<String>) -> Self {
        Error::InvalidArgument {
            table: None,
            message: message.into(),
        }
    }
    pub fn unsupported(message: impl Into<String>) -> Self {
        Error::Unsupported {
            table: None,
            message: message.into(),
        }
    }
    pub fn corrupt(path: impl Into<PathBuf>, message: impl Into<String>) -> Self {
        Error::CorruptFile {
            path: path.into(),
            message: message.into(),
        }
    }
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }
    /// Attach the table name to the variants that carry one and do not have it yet.
    pub fn with_table(self, name: &str) -> Self {
        if name.is_empty() {
            return self; // a table not named yet (create_table names it)
        }
        match self {
            Error::SchemaMismatch {
                table: None,
                message,
            } => Error::SchemaMismatch {
                table: Some(name.to_string()),
                message,
            },
            Error::InvalidArgument {
                table: None,
                message,
            } => Error::InvalidArgument {
                table: Some(name.to_string()),
                message,
            },
            Error::Unsupported {
                table: None,
                message,
            } => Error::Unsupported {
                table: Some(name.to_string()),
                message,
            },
            other => other,
        }
    }
}

impl From<arrow_schema::ArrowError> for Error {
    fn from(source: arrow_schema::ArrowError) -> Self {
        Error::Arrow {
            context: None,
            source,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Error;

    #[test]
    fn a_message_naming_its_table_is_not_prefixed_with_it_again() {
        let named = Error::invalid("table 'db.t': file 'a' overlaps file 'b'").with_table("db.t");
        assert_eq!(
            named.to_string(),
            "invalid option or argument: table 'db.t': file 'a' overlaps file 'b'"
        );
        let plain = Error::invalid("bucket must be > 0").with_table("db.t");
        assert_eq!(
            plain.to_string(),
            "invalid option or argument (db.t): bucket must be > 0"
        );
        // Another table's name in the message keeps this table's context.
        let other = Error::unsupported("copying from 'db.u'").with_table("db.t");
        assert_eq!(other.to_string(), "unsupported (db.t): copying from 'db.u'");
    }
}
