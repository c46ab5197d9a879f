"""paimon_rs: a Rust engine for Apache Paimon tables with pypaimon's Python API.

Switching from pypaimon is an import change::

    from paimon_rs import CatalogFactory, Schema
"""

from __future__ import annotations

from paimon_rs._core import __version__
from paimon_rs.catalog import Catalog, CatalogFactory, FileSystemCatalog, Identifier
from paimon_rs.exceptions import (
    CommitConflictError,
    CorruptFileError,
    DatabaseAlreadyExistsError,
    DatabaseNotFoundError,
    DuplicateCommitError,
    InvalidArgumentError,
    PaimonIOError,
    PaimonRsError,
    SchemaMismatchError,
    StaleCommitMessageError,
    TableAlreadyExistsError,
    TableNotFoundError,
    UnsupportedError,
)
from paimon_rs.predicate import Predicate, PredicateBuilder
from paimon_rs.schema import Schema
from paimon_rs.table import (
    BatchTableCommit,
    BatchTableWrite,
    BatchWriteBuilder,
    CommitMessage,
    Plan,
    ReadBuilder,
    Split,
    Table,
    TableRead,
    TableScan,
)

__all__ = [
    "__version__",
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
    "Split",
    "Table",
    "TableAlreadyExistsError",
    "TableNotFoundError",
    "TableRead",
    "TableScan",
    "UnsupportedError",
]
