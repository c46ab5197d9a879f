"""paimon_rs: a Rust engine for Apache Paimon tables with pypaimon's Python API.

Switching from pypaimon is an import change::

    from paimon_rs import CatalogFactory, Schema
"""

from __future__ import annotations

import atexit

from paimon_rs import _core
from paimon_rs._core import __version__
from paimon_rs.blob import Blob, BlobData, BlobDescriptor, BlobRef
from paimon_rs.catalog import Catalog, CatalogFactory, Database, FileSystemCatalog, Identifier
from paimon_rs.commit_callback import CommitCallback, CommitCallbackContext
from paimon_rs.consumer import Consumer, ConsumerManager
from paimon_rs.data_types import ArrayType, AtomicType, DataField, DataType, MapType, MultisetType, RowType, VectorType
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
    DatabaseNoPermissionException,
    DatabaseNotEmptyError,
    DatabaseNotEmptyException,
    DatabaseNotExistException,
    DatabaseNotFoundError,
    DefinitionAlreadyExistException,
    DefinitionNotExistException,
    DialectAlreadyExistException,
    DialectNotExistException,
    DuplicateCommitError,
    FunctionAlreadyExistException,
    FunctionNotExistException,
    IllegalArgumentError,
    IllegalStateError,
    InvalidArgumentError,
    PaimonIOError,
    PaimonRsError,
    SchemaMismatchError,
    SnapshotExpiredError,
    StaleCommitMessageError,
    TableAlreadyExistException,
    TableAlreadyExistsError,
    TableNoPermissionException,
    TableNotExistException,
    TableNotFoundError,
    TagAlreadyExistException,
    TagNotExistException,
    UnsupportedError,
    ViewAlreadyExistException,
    ViewNotExistException,
)
from paimon_rs.file_io import FileIO
from paimon_rs.options import ConfigOption, CoreOptions
from paimon_rs.predicate import Predicate, PredicateBuilder
from paimon_rs.schema import Schema, TableSchema
from paimon_rs.schema_change import Move, SchemaChange
from paimon_rs.snapshot import GetTagResponse, PagedList, Snapshot, SnapshotManager
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
    StreamTableCommit,
    StreamTableWrite,
    StreamWriteBuilder,
    Table,
    TableOptions,
    TableRead,
    TableScan,
)
from paimon_rs.tags import Tag, TagManager
from paimon_rs.variant import GenericVariant
from paimon_rs.variant_path import variant_get, variant_replace, variant_set, variant_to_pylist
from paimon_rs.where_parser import parse_where_clause


def release_lookup_caches() -> int:
    """Free the lookup caches no writer of this process holds; return the bytes they held.

    Tables whose compaction looks keys up (``changelog-producer = lookup``, deletion vectors,
    first-row, ``force-lookup``) keep one lookup cache per table in the process, so that the
    next writer does not rebuild the lookup files of data files that did not change: up to
    ``lookup.cache-max-memory-size`` of memory (then local files, up to
    ``lookup.cache-max-disk-size``), until unused for ``lookup.cache-file-retention``. Call
    this when the process is done writing such tables for a while; the process's exit does it.
    """
    return _core.release_lookup_caches()


# spilled lookup files live in a local directory that goes with its cache
atexit.register(_core.release_lookup_caches)

# pypaimon's class names for the same objects
FileStoreTable = Table
DataSplit = Split

__all__ = [
    "Blob",
    "BlobData",
    "BlobDescriptor",
    "BlobRef",
    "DatabaseNoPermissionException",
    "TableNoPermissionException",
    "ViewNotExistException",
    "ViewAlreadyExistException",
    "FunctionNotExistException",
    "FunctionAlreadyExistException",
    "DefinitionNotExistException",
    "DefinitionAlreadyExistException",
    "DialectNotExistException",
    "DialectAlreadyExistException",
    "IllegalStateError",
    "IllegalArgumentError",
    "__version__",
    "ArrayType",
    "AtomicType",
    "DataType",
    "MapType",
    "MultisetType",
    "RowType",
    "release_lookup_caches",
    "BranchAlreadyExistException",
    "BranchNotExistException",
    "BucketMode",
    "CatalogError",
    "CatalogException",
    "ColumnAlreadyExistException",
    "ColumnNotExistException",
    "GetTagResponse",
    "PagedList",
    "Snapshot",
    "SnapshotManager",
    "Tag",
    "TagAlreadyExistException",
    "TagManager",
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
    "GenericVariant",
    "variant_get",
    "variant_replace",
    "variant_set",
    "variant_to_pylist",
    "TableAlreadyExistException",
    "TableNotExistException",
    "TableOptions",
    "TableSchema",
    "BatchTableCommit",
    "BatchTableWrite",
    "BatchWriteBuilder",
    "Catalog",
    "CatalogFactory",
    "CommitCallback",
    "CommitCallbackContext",
    "CommitConflictError",
    "CommitMessage",
    "Consumer",
    "ConsumerManager",
    "CorruptFileError",
    "DatabaseAlreadyExistsError",
    "DatabaseNotFoundError",
    "DuplicateCommitError",
    "FileIO",
    "FileSystemCatalog",
    "Identifier",
    "InvalidArgumentError",
    "PaimonIOError",
    "PaimonRsError",
    "Plan",
    "Predicate",
    "PredicateBuilder",
    "parse_where_clause",
    "ReadBuilder",
    "Schema",
    "SchemaMismatchError",
    "StaleCommitMessageError",
    "SnapshotExpiredError",
    "Split",
    "StreamTableCommit",
    "StreamTableWrite",
    "StreamWriteBuilder",
    "Table",
    "TableAlreadyExistsError",
    "TableNotFoundError",
    "TableRead",
    "TableScan",
    "UnsupportedError",
    "VectorType",
]
