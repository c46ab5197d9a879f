"""Exceptions raised by paimon_rs. Every one is a :class:`PaimonRsError`; most also subclass the
matching builtin so that generic handlers (``except FileNotFoundError``) keep working."""

from __future__ import annotations


class PaimonRsError(Exception):
    """Base class of every error raised by paimon_rs."""


class TableNotFoundError(PaimonRsError, FileNotFoundError):
    """The table does not exist in the catalog."""


class TableAlreadyExistsError(PaimonRsError, FileExistsError):
    """A table with that name exists already."""


class DatabaseNotFoundError(PaimonRsError, FileNotFoundError):
    """The database does not exist in the catalog."""


class DatabaseAlreadyExistsError(PaimonRsError, FileExistsError):
    """A database with that name exists already."""


class SchemaMismatchError(PaimonRsError, ValueError):
    """Data or a schema does not fit the table (missing, unknown or wrong-typed column,
    null in a NOT NULL or primary-key column)."""


class InvalidArgumentError(PaimonRsError, ValueError):
    """An option value or argument is invalid."""


class UnsupportedError(PaimonRsError, NotImplementedError):
    """A table option, merge engine or feature paimon_rs does not implement yet."""


class CommitConflictError(PaimonRsError, RuntimeError):
    """The commit lost against concurrent commits and was given up; the table is unchanged.
    Writing the data again (a new write and commit) is safe."""


class DuplicateCommitError(PaimonRsError, ValueError):
    """The commit messages, or files in them, were already committed to the table; committing
    them again would reference a file twice. The table is unchanged. Not retryable."""


class StaleCommitMessageError(PaimonRsError, ValueError):
    """The data files of these commit messages no longer exist (they were aborted, or removed
    after a failed commit): they can never be committed. Write the data again."""


class CorruptFileError(PaimonRsError, OSError):
    """A table file exists but cannot be decoded; the message names the file."""


class PaimonIOError(PaimonRsError, OSError):
    """An operating-system I/O error, with the path involved."""


__all__ = [
    "PaimonRsError",
    "TableNotFoundError",
    "TableAlreadyExistsError",
    "DatabaseNotFoundError",
    "DatabaseAlreadyExistsError",
    "SchemaMismatchError",
    "InvalidArgumentError",
    "UnsupportedError",
    "CommitConflictError",
    "DuplicateCommitError",
    "StaleCommitMessageError",
    "CorruptFileError",
    "PaimonIOError",
]
