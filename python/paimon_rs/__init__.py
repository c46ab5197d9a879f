"""paimon_rs: a Rust engine for Apache Paimon tables with pypaimon's Python API.

Switching from pypaimon is an import change::

    from paimon_rs import CatalogFactory, Schema
"""

from __future__ import annotations

import os as _os

# The extension allocates with mimalloc, which keeps freed pages for a while before returning
# them; a bulk write frees large Arrow buffers in bursts, so return them at once (keeps peak RSS
# within write-buffer-size + ~250 MB; no measurable cost on a 2M-row write). Read by mimalloc
# when the extension loads; a value set by the user wins.
_os.environ.setdefault("MIMALLOC_PURGE_DELAY", "0")

from paimon_rs._core import __version__  # noqa: E402
from paimon_rs.catalog import Catalog, CatalogFactory, FileSystemCatalog, Identifier
from paimon_rs.exceptions import (
    CommitConflictError,
    CorruptFileError,
    DatabaseAlreadyExistsError,
    DatabaseNotFoundError,
    InvalidArgumentError,
    PaimonIOError,
    PaimonRsError,
    SchemaMismatchError,
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
    "Split",
    "Table",
    "TableAlreadyExistsError",
    "TableNotFoundError",
    "TableRead",
    "TableScan",
    "UnsupportedError",
]
