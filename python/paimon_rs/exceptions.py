"""Exceptions raised by paimon_rs. Every one is a :class:`PaimonRsError`; most also subclass the
matching builtin so that generic handlers (``except FileNotFoundError``) keep working."""

from __future__ import annotations


class PaimonRsError(Exception):
    """Base class of every error raised by paimon_rs."""


class CatalogError(PaimonRsError):
    """A catalog operation failed: a database or table is missing, exists already, or a
    database is not empty (pypaimon's ``CatalogException``)."""


class TableNotFoundError(CatalogError, FileNotFoundError):
    """The table does not exist in the catalog."""


class TableAlreadyExistsError(CatalogError, FileExistsError):
    """A table with that name exists already."""


class DatabaseNotFoundError(CatalogError, FileNotFoundError):
    """The database does not exist in the catalog."""


class DatabaseAlreadyExistsError(CatalogError, FileExistsError):
    """A database with that name exists already."""


class DatabaseNotEmptyError(CatalogError, ValueError):
    """``drop_database`` without ``cascade`` on a database that still holds tables (Java's
    ``DatabaseNotEmptyException``; pypaimon raises a ``ValueError``, which this is too)."""


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


class SnapshotExpiredError(PaimonRsError, ValueError):
    """The snapshot being read was expired or rolled back meanwhile (its files may be gone);
    the message names the snapshot. Read a retained snapshot or a tag."""


class CorruptFileError(PaimonRsError, OSError):
    """A table file exists but cannot be decoded; the message names the file."""


class PaimonIOError(PaimonRsError, OSError):
    """An operating-system I/O error, with the path involved."""


class ColumnNotExistException(CatalogError, ValueError):
    """``alter_table`` names a column the table does not have (Java's and pypaimon's
    ``ColumnNotExistException``)."""


class ColumnAlreadyExistException(CatalogError, ValueError):
    """``alter_table`` adds a column, or renames one, into a name the table already has (Java's
    and pypaimon's ``ColumnAlreadyExistException``)."""


class BranchNotExistException(CatalogError, InvalidArgumentError):
    """The catalog's branch operations name a branch that does not exist (pypaimon's; also an
    ``InvalidArgumentError``, as the table's branch methods raise). ``branch``: its name."""

    def __init__(self, branch: str, message: str = ""):
        super().__init__(message or f"Branch {branch} does not exist.")
        self.branch = branch


class BranchAlreadyExistException(CatalogError, InvalidArgumentError):
    """A branch is created or renamed onto a name that exists (pypaimon's). ``branch``: it."""

    def __init__(self, branch: str, message: str = ""):
        super().__init__(message or f"Branch {branch} already exists.")
        self.branch = branch


class TagNotExistException(CatalogError, InvalidArgumentError):
    """A branch is created from a tag that does not exist (pypaimon's). ``tag``: its name."""

    def __init__(self, tag: str, message: str = ""):
        super().__init__(message or f"Tag {tag} does not exist.")
        self.tag = tag


class TagAlreadyExistException(CatalogError, InvalidArgumentError):
    """``Catalog.create_tag`` names a tag that exists (pypaimon's; also an
    ``InvalidArgumentError``, as ``Table.create_tag`` raises). ``tag``: its name."""

    def __init__(self, tag: str, message: str = ""):
        super().__init__(message or f"Tag {tag} already exists.")
        self.tag = tag


# pypaimon's names (``pypaimon.catalog.catalog_exception``), so ``except TableNotExistException``
# keeps working after the import switch. They are the same classes, not copies.
CatalogException = CatalogError
TableNotExistException = TableNotFoundError
TableAlreadyExistException = TableAlreadyExistsError
DatabaseNotExistException = DatabaseNotFoundError
DatabaseAlreadyExistException = DatabaseAlreadyExistsError
DatabaseNotEmptyException = DatabaseNotEmptyError
IllegalArgumentError = InvalidArgumentError

__all__ = [
    "PaimonRsError",
    "CatalogError",
    "DatabaseNotEmptyError",
    "CatalogException",
    "TableNotExistException",
    "TableAlreadyExistException",
    "DatabaseNotExistException",
    "DatabaseAlreadyExistException",
    "DatabaseNotEmptyException",
    "IllegalArgumentError",
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
    "SnapshotExpiredError",
    "CorruptFileError",
    "PaimonIOError",
    "ColumnNotExistException",
    "ColumnAlreadyExistException",
    "BranchNotExistException",
    "BranchAlreadyExistException",
    "TagAlreadyExistException",
    "TagNotExistException",
]
