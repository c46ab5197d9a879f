"""paimon_rs: a Rust engine for Apache Paimon tables with pypaimon's Python API.

Switching from pypaimon is an import change::

    from paimon_rs import CatalogFactory, Schema
"""

from __future__ import annotations

from paimon_rs._core import __version__
from paimon_rs.catalog import Catalog, CatalogFactory, Database, FileSystemCatalog, Identifier
from paimon_rs.exceptions import (
    BranchAlreadyExistException,
    BranchNotExistException,
    CatalogError,
    CatalogException,
    ColumnAlreadyExistException,
    ColumnNotExistException,
    CommitConflictError,
    CorruptFileError,
    DatabaseAlreadyExistException,
    DatabaseAlreadyExistsError,
    DatabaseNotEmptyError,
    DatabaseNotEmptyException,
    DatabaseNotExistException,
    DatabaseNotFoundError,
    DuplicateCommitError,
    InvalidArgumentError,
    PaimonIOError,
    PaimonRsError,
    SchemaMismatchError,
    SnapshotExpiredError,
    StaleCommitMessageError,
    TableAlreadyExistException,
    TableAlreadyExistsError,
    TableNotExistException,
    TableNotFoundError,
    TagNotExistException,
    UnsupportedError,
)
from paimon_rs.options import ConfigOption, CoreOptions
from paimon_rs.predicate import Predicate, PredicateBuilder
from paimon_rs.schema import DataField, Schema, TableSchema
from paimon_rs.schema_change import Move, SchemaChange
from paimon_rs.table import (
    BatchTableCommit,
    BatchTableWrite,
    BatchWriteBuilder,
    BucketMode,
    CommitMessage,
    DataFileMeta,
    GenericRow,
    Plan,
    ReadBuilder,
    Split,
    Table,
    TableOptions,
    TableRead,
    TableScan,
)

# pypaimon's class names for the same objects
FileStoreTable = Table
DataSplit = Split

__all__ = [
    "__version__",
    "BranchAlreadyExistException",
    "BranchNotExistException",
    "BucketMode",
    "CatalogError",
    "CatalogException",
    "ColumnAlreadyExistException",
    "ColumnNotExistException",
    "TagNotExistException",
    "Move",
    "SchemaChange",
    "ConfigOption",
    "CoreOptions",
    "DataField",
    "DataFileMeta",
    "DataSplit",
    "Database",
    "DatabaseAlreadyExistException",
    "DatabaseNotEmptyError",
    "DatabaseNotEmptyException",
    "DatabaseNotExistException",
    "FileStoreTable",
    "GenericRow",
    "TableAlreadyExistException",
    "TableNotExistException",
    "TableOptions",
    "TableSchema",
    "BatchTableCommit",
    "BatchTableWrite",
    "BatchWriteBuilder",
    "Catalog",
    "CatalogFactory",
    "CommitConflictError",
    "CommitMessage",
    "CorruptFileError",
    "DatabaseAlreadyExistsError",
    "DatabaseNotFoundError",
    "DuplicateCommitError",
    "FileSystemCatalog",
    "Identifier",
    "InvalidArgumentError",
    "PaimonIOError",
    "PaimonRsError",
    "Plan",
    "Predicate",
    "PredicateBuilder",
    "ReadBuilder",
    "Schema",
    "SchemaMismatchError",
    "StaleCommitMessageError",
    "SnapshotExpiredError",
    "Split",
    "Table",
    "TableAlreadyExistsError",
    "TableNotFoundError",
    "TableRead",
    "TableScan",
    "UnsupportedError",
]
