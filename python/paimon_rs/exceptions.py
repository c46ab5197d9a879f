"""Exceptions raised by paimon_rs. Every one is a :class:`PaimonRsError`; most also subclass the
matching builtin so that generic handlers (``except FileNotFoundError``) keep working."""

from __future__ import annotations

from typing import Any, Tuple


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
        super().__init__(message or f"Branch {branch} doesn't exist.")
        self.branch = branch


class BranchAlreadyExistException(CatalogError, InvalidArgumentError):
    """A branch is created or renamed onto a name that exists (pypaimon's). ``branch``: it."""

    def __init__(self, branch: str, message: str = ""):
        super().__init__(message or f"Branch {branch} already exists.")
        self.branch = branch


class TagNotExistException(CatalogError, InvalidArgumentError):
    """A branch is created from a tag that does not exist (pypaimon's). ``tag``: its name."""

    def __init__(self, tag: str, message: str = ""):
        super().__init__(message or f"Tag {tag} doesn't exist.")
        self.tag = tag


class TagAlreadyExistException(CatalogError, InvalidArgumentError):
    """``Catalog.create_tag`` names a tag that exists (pypaimon's; also an
    ``InvalidArgumentError``, as ``Table.create_tag`` raises). ``tag``: its name."""

    def __init__(self, tag: str, message: str = ""):
        super().__init__(message or f"Tag {tag} already exists.")
        self.tag = tag


class _RestOnlyCatalogError(CatalogError):
    """pypaimon's catalog exceptions that only its REST catalog raises (permissions, views,
    functions, definitions, dialects): paimon_rs's filesystem catalog never raises them, the
    classes exist so that ``except`` clauses and imports written for pypaimon keep working. The
    constructor takes pypaimon's arguments (``ATTRS``, set as attributes)."""

    ATTRS: Tuple[str, ...] = ()
    MESSAGE = ""

    def __init__(self, *args: Any):
        for name, value in zip(self.ATTRS, args):
            setattr(self, name, value)
        shown = [a.get_full_name() if hasattr(a, "get_full_name") else a for a in args]
        super().__init__(self.MESSAGE.format(*shown))


def _rest_only(name: str, attrs: Tuple[str, ...], message: str) -> type:
    return type(name, (_RestOnlyCatalogError,), {"ATTRS": attrs, "MESSAGE": message, "__module__": __name__,
                                                  "__doc__": f"pypaimon's ``{name}`` (never raised by paimon_rs)."})


_ID, _ID_NAME = ("identifier",), ("identifier", "name")
DatabaseNoPermissionException = _rest_only("DatabaseNoPermissionException", ("database",),
                                           "No permission to access database {0}")
TableNoPermissionException = _rest_only("TableNoPermissionException", _ID, "No permission to access table {0}")
ViewNotExistException = _rest_only("ViewNotExistException", _ID, "View {0} does not exist")
ViewAlreadyExistException = _rest_only("ViewAlreadyExistException", _ID, "View {0} already exists")
FunctionNotExistException = _rest_only("FunctionNotExistException", _ID, "Function {0} does not exist")
FunctionAlreadyExistException = _rest_only("FunctionAlreadyExistException", _ID, "Function {0} already exists")
DefinitionNotExistException = _rest_only("DefinitionNotExistException", _ID_NAME,
                                         "Definition {1} does not exist in {0}")
DefinitionAlreadyExistException = _rest_only("DefinitionAlreadyExistException", _ID_NAME,
                                             "Definition {1} already exists in {0}")
DialectNotExistException = _rest_only("DialectNotExistException", ("identifier", "dialect"),
                                      "Dialect {1} does not exist in {0}")
DialectAlreadyExistException = _rest_only("DialectAlreadyExistException", ("identifier", "dialect"),
                                          "Dialect {1} already exists in {0}")


class IllegalStateError(CatalogError):
    """pypaimon's ``IllegalStateError`` (never raised by paimon_rs)."""


_RUNTIME_TWINS: dict = {}


def as_runtime_error(e: PaimonRsError) -> PaimonRsError:
    """``e``, made a ``RuntimeError`` too: pypaimon's ``FileSystemCatalog.alter_table`` raises
    every refusal as ``RuntimeError``; the error keeps its own class (``except
    ColumnNotExistException`` / ``except ValueError`` still catch it) through a subclass of
    that class and ``RuntimeError`` of the same name, its message and attributes unchanged."""
    cls = type(e)
    if isinstance(e, RuntimeError):
        return e
    twin = _RUNTIME_TWINS.get(cls)
    if twin is None:
        twin = type(cls.__name__, (cls, RuntimeError), {
            "__module__": cls.__module__, "__doc__": cls.__doc__,
            # pickled (multiprocessing) as the error's own class
            "__reduce__": lambda self: (cls, self.args, self.__dict__ or None)})
        _RUNTIME_TWINS[cls] = twin
    e.__class__ = twin
    return e


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
    "IllegalStateError",
]
__all__ += [n for n, v in list(globals().items())
            if isinstance(v, type) and issubclass(v, _RestOnlyCatalogError) and not n.startswith("_")]
