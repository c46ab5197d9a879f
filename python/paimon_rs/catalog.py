"""Catalogs, as pypaimon's ``CatalogFactory.create({...})``."""

from __future__ import annotations

import os
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Optional, Union

from paimon_rs import _core
from paimon_rs.exceptions import (
    BranchAlreadyExistException,
    BranchNotExistException,
    DatabaseNotEmptyError,
    DatabaseNotFoundError,
    InvalidArgumentError,
    PaimonRsError,
    TableNotFoundError,
    TagAlreadyExistException,
    TagNotExistException,
    UnsupportedError,
    as_runtime_error,
)
from paimon_rs.identifier import Identifier
from paimon_rs.schema import Schema, TableSchema
from paimon_rs.snapshot import GetTagResponse, PagedList
from paimon_rs.table import Table


def _identifier(identifier: Union[str, Identifier]) -> str:
    if isinstance(identifier, Identifier):
        return identifier.get_full_name()
    return Identifier.from_string(identifier).get_full_name()


@contextmanager
def _branch_errors(missing: Optional[str] = None, exists: Optional[str] = None,
                   tag: Optional[str] = None) -> Iterator[None]:
    """The table's branch refusals (Java's messages) as pypaimon's catalog exceptions."""
    try:
        yield
    except InvalidArgumentError as e:
        msg = str(e)
        if tag is not None and f"Tag '{tag}' doesn't exist." in msg:
            raise TagNotExistException(tag, msg) from e
        if missing is not None and f"Branch name '{missing}' doesn't exist." in msg:
            raise BranchNotExistException(missing, msg) from e
        if exists is not None and f"Branch name '{exists}' already exists." in msg:
            raise BranchAlreadyExistException(exists, msg) from e
        raise


class Catalog:
    """Base class of catalogs."""

    DB_SUFFIX = ".db"
    DEFAULT_DATABASE = "default"
    SYSTEM_DATABASE_NAME = "sys"
    DB_LOCATION_PROP = "location"
    COMMENT_PROP = "comment"
    OWNER_PROP = "owner"


@dataclass
class Database:
    """A database of the catalog, as pypaimon's ``Database`` (a filesystem catalog stores no
    database properties: ``options`` is empty, ``comment`` None)."""

    name: str
    options: Dict[str, str] = field(default_factory=dict)
    comment: Optional[str] = None


class FileSystemCatalog(Catalog):
    """Tables stored under ``<warehouse>/<db>.db/<table>`` on a local filesystem or an object
    store (``s3://bucket/path`` and the other URIs of docs/object-stores.md, configured by
    the file system options among the catalog's options)."""

    def __init__(self, options: Dict[str, str]):
        warehouse = options.get("warehouse")
        if not warehouse:
            raise InvalidArgumentError("catalog option 'warehouse' is required")
        self.options = dict(options)
        self._core = _core.Catalog(str(warehouse), {str(k): str(v) for k, v in options.items()})
        # carried by every table handle, so that a pickled one (a Spark task) reopens the store
        self._store_options: Dict[str, str] = _core.store_options(
            {str(k): str(v) for k, v in options.items()})

    def _remote(self) -> bool:
        return "://" in self.warehouse

    @property
    def warehouse(self) -> str:
        return self._core.warehouse()

    def create_database(
        self, name: str, ignore_if_exists: bool, properties: Optional[Dict[str, str]] = None
    ) -> None:
        """Create ``<warehouse>/<name>.db``. A filesystem catalog has nowhere to keep database
        properties: ``location`` is refused, others are dropped with a warning (Java's
        ``FileSystemCatalog`` does both)."""
        if properties and Catalog.DB_LOCATION_PROP in properties:
            raise InvalidArgumentError(
                "Cannot specify location for a database when using fileSystem catalog.")
        if properties:
            warnings.warn(f"filesystem catalog cannot store database properties, discarded: "
                          f"{sorted(properties)}", RuntimeWarning, stacklevel=2)
        self._core.create_database(name, ignore_if_exists)

    def list_databases(self) -> List[str]:
        return self._core.list_databases()

    def list_tables(self, database_name: str) -> List[str]:
        return self._core.list_tables(database_name)

    def create_table(
        self, identifier: Union[str, Identifier], schema: Schema, ignore_if_exists: bool
    ) -> None:
        """Create a table (its first schema file, ``<warehouse>/<db>.db/<table>/schema/schema-0``).

        Args:
            identifier: ``"db.table"`` or an ``Identifier``; the database must exist
                (``create_database``).
            schema: a ``Schema`` (``Schema(fields=[DataField...])`` with Paimon types, or
                ``Schema.from_pyarrow_schema``): columns, partition keys, primary keys,
                options, comment.
            ignore_if_exists: do nothing if the table exists (else raise).

        Raises:
            TableAlreadyExistsError: the table exists and ``ignore_if_exists`` is False.
            DatabaseNotFoundError: the database does not exist.
            InvalidArgumentError / UnsupportedError: keys that are not columns, option values
                Paimon refuses or paimon_rs does not implement.
            TypeError: ``schema`` is not a ``paimon_rs.Schema``.

        Example::

            catalog.create_database("db", True)
            catalog.create_table("db.t", Schema.from_pyarrow_schema(
                pa.schema([("id", pa.int64()), ("v", pa.string())]), primary_keys=["id"],
                options={"bucket": "2"}), ignore_if_exists=True)
        """
        if not isinstance(schema, Schema):
            raise TypeError("schema must be a paimon_rs.Schema (Schema(fields=...) or Schema.from_pyarrow_schema)")
        fields_json = schema._fields_json()
        self._core.create_table(
            _identifier(identifier),
            schema.pa_schema if fields_json is None else None,
            schema.partition_keys,
            schema.primary_keys,
            schema.options,
            schema.comment,
            ignore_if_exists,
            fields_json,
        )

    def get_table(self, identifier: Union[str, Identifier]) -> Table:
        """The table ``identifier`` (``"db.table"``, an ``Identifier``, or
        ``"db.table$branch_<name>"`` for a branch): a ``Table`` to read (``to_arrow``,
        ``new_read_builder``), write (``write``, ``new_batch_write_builder``) and change
        (``delete``, ``merge``). ``"db.table$files"`` (``$snapshots``, ``$schemas``, ...; also
        ``"db.table$branch_<name>$files"``) is a read-only ``paimon_rs.system_tables.SystemTable``
        with Java's columns (docs/system-tables.md).

        Raises:
            TableNotFoundError: no such table (also ``TableNotExistException``, pypaimon's
                name).
            InvalidArgumentError: an unknown system table (the known ones and the closest
                are named).

        Example::

            table = catalog.get_table("db.t")
            table.to_arrow("id > 10")
        """
        full = _identifier(identifier)
        db, obj = full.split(".", 1)
        from paimon_rs.identifier import split_system_name
        from paimon_rs.system_tables import SystemTable, system_table_def

        data_obj, system = split_system_name(obj)
        if system is not None:
            system_table_def(system, full)  # an unknown name fails before the table is opened
            data = Table(self._core.get_table(f"{db}.{data_obj}"), self._store_options or None)
            return SystemTable(data, system)  # type: ignore[return-value]
        table = Table(self._core.get_table(full), self._store_options or None)
        table._catalog = self
        return table

    def drop_table(self, identifier: Union[str, Identifier], ignore_if_not_exists: bool = False) -> None:
        self._core.drop_table(_identifier(identifier), ignore_if_not_exists)

    def alter_table(self, identifier: Union[str, Identifier], changes: List[Any],
                    ignore_if_not_exists: bool = False) -> None:
        """Apply ``SchemaChange``s (``paimon_rs.SchemaChange``, pypaimon's names) in order and
        commit the result as the table's next schema (``schema/schema-<id>``, created
        exclusively; a concurrent alter makes this one apply again on top of it). Refusals are
        Paimon's, in Java's words: ``ColumnNotExistException`` / ``ColumnAlreadyExistException``,
        ``InvalidArgumentError`` for what Paimon refuses (changing partition or primary-key
        columns, narrowing a type without explicit casts, immutable options of a table with
        snapshots), ``UnsupportedError`` for what Paimon allows but paimon_rs cannot honour.
        A missing table raises ``TableNotExistException`` unless ``ignore_if_not_exists``.
        Every other refusal is also a ``RuntimeError``, as pypaimon's ``alter_table`` raises
        them all (``except RuntimeError`` and ``except ColumnNotExistException`` both work);
        an error that is not paimon_rs's (a change that is no ``SchemaChange``: ``TypeError``)
        is raised as a ``RuntimeError`` from it, as pypaimon's ``Failed to alter table ...``."""
        from paimon_rs.schema_change import changes_json

        name = _identifier(identifier)
        try:
            self._core.alter_table(name, changes_json(list(changes)), ignore_if_not_exists)
        except (TableNotFoundError, DatabaseNotFoundError):
            raise
        except PaimonRsError as e:
            as_runtime_error(e)
            raise
        except RuntimeError:
            raise
        except Exception as e:  # a change that is no SchemaChange (TypeError...), as pypaimon
            raise RuntimeError(f"Failed to alter table {name}: {e}") from e

    # --- branches (pypaimon 2.1.0's FileSystemCatalog names and exceptions; docs/table-operations.md, "Branches") ---

    def create_branch(self, identifier: Union[str, Identifier], branch_name: str,
                      tag_name: Optional[str] = None) -> None:
        """Create branch ``branch_name`` of the table: empty with its latest schema, or from
        tag ``tag_name`` (``Table.create_branch``). ``BranchAlreadyExistException``,
        ``TagNotExistException`` as pypaimon."""
        with _branch_errors(exists=branch_name, tag=tag_name):
            self.get_table(identifier).create_branch(branch_name, tag_name)

    def drop_branch(self, identifier: Union[str, Identifier], branch_name: str) -> None:
        """Delete a branch of the table (``Table.delete_branch``); ``BranchNotExistException``."""
        with _branch_errors(missing=branch_name):
            self.get_table(identifier).delete_branch(branch_name)

    def rename_branch(self, identifier: Union[str, Identifier], from_branch: str, to_branch: str) -> None:
        """Rename a branch of the table; ``BranchNotExistException``,
        ``BranchAlreadyExistException``."""
        with _branch_errors(missing=from_branch, exists=to_branch):
            self.get_table(identifier).rename_branch(from_branch, to_branch)

    def fast_forward(self, identifier: Union[str, Identifier], branch_name: str) -> None:
        """Make the table (or the branch ``identifier`` names) take over ``branch_name``'s
        history (``Table.fast_forward``); ``BranchNotExistException``."""
        with _branch_errors(missing=branch_name):
            self.get_table(identifier).fast_forward(branch_name)

    def list_branches(self, identifier: Union[str, Identifier]) -> List[str]:
        """The table's branches (``main`` not included), sorted."""
        return self.get_table(identifier).list_branches()

    # --- tags (pypaimon's FileSystemCatalog tag CRUD over the table's tag methods) ---

    def create_tag(self, identifier: Union[str, Identifier], tag_name: str, snapshot_id: Optional[int] = None,
                   time_retained: Any = None, ignore_if_exists: bool = False) -> None:
        """Tag a snapshot of the table (``Table.create_tag``; the latest if ``snapshot_id`` is
        None), pypaimon's argument order. ``TagAlreadyExistException`` if the tag exists (unless
        ``ignore_if_exists``), ``TableNotExistException`` if the table does not."""
        table = self.get_table(identifier)
        try:
            table.create_tag(tag_name, snapshot_id, ignore_if_exists=ignore_if_exists,
                             time_retained=time_retained)
        except InvalidArgumentError as e:
            if f"Tag name '{tag_name}' already exists." in str(e):
                raise TagAlreadyExistException(tag_name, str(e)) from e
            raise

    def delete_tag(self, identifier: Union[str, Identifier], tag_name: str) -> None:
        """Delete a tag of the table (``Table.delete_tag``); ``TagNotExistException`` if there is
        no such tag."""
        if not self.get_table(identifier).delete_tag(tag_name):
            raise TagNotExistException(tag_name)

    def get_tag(self, identifier: Union[str, Identifier], tag_name: str) -> GetTagResponse:
        """The tag ``tag_name`` of the table as pypaimon's ``GetTagResponse``: the tagged
        ``Snapshot``, ``tag_create_time`` (epoch millis, the stored local time read in this
        process's zone, as pypaimon and Java's REST catalog) and ``tag_time_retained`` (an ISO-8601
        duration, ``PT24H``), both None for a tag without retention. ``TagNotExistException``."""
        from paimon_rs.snapshot import Snapshot, tag_response
        table = self.get_table(identifier)
        for name, snap, created, retained in _core.tags_json(table._core):
            if name == tag_name:
                return tag_response(name, Snapshot.from_json(snap), created, retained)
        raise TagNotExistException(tag_name)

    def list_tags_paged(self, identifier: Union[str, Identifier], max_results: Optional[int] = None,
                        page_token: Optional[str] = None, tag_name_prefix: Optional[str] = None) -> PagedList:
        """The table's tag names, sorted, as pypaimon: a ``PagedList`` of at most ``max_results``
        names after ``page_token`` (the previous page's last name), those starting with
        ``tag_name_prefix`` if given."""
        tags = sorted(self.get_table(identifier).list_tags())
        if tag_name_prefix:
            tags = [t for t in tags if t.startswith(tag_name_prefix)]
        if page_token:
            tags = [t for t in tags if t > page_token]
        if max_results is not None and 0 < max_results < len(tags):
            return PagedList(tags[:max_results], tags[max_results - 1])
        return PagedList(tags, None)

    # --- pypaimon 2.1.0 names (FileSystemCatalog), see docs/pypaimon-parity.md ---

    @property
    def catalog_options(self) -> Dict[str, str]:
        """The options the catalog was created with."""
        return dict(self.options)

    @property
    def file_io(self) -> Any:
        """pypaimon's ``FileIO`` over the warehouse's store (``paimon_rs.file_io.FileIO``:
        local paths and object store URIs with the catalog's credentials)."""
        from paimon_rs.file_io import FileIO

        return FileIO(dict(self.options))

    def get_database_path(self, name: str) -> str:
        return os.path.join(self.warehouse, f"{name}{Catalog.DB_SUFFIX}")

    def get_table_path(self, identifier: Union[str, Identifier]) -> str:
        ident = Identifier.from_string(_identifier(identifier))
        return os.path.join(self.get_database_path(ident.database), ident.get_table_name())

    def get_database(self, name: str) -> Database:
        """The database, or ``DatabaseNotExistException`` (``DatabaseNotFoundError``)."""
        exists = (name in self.list_databases() if self._remote()
                  else os.path.isdir(self.get_database_path(name)))
        if not exists:
            raise DatabaseNotFoundError(f"database '{name}' does not exist")
        return Database(name)

    def drop_database(self, name: str, ignore_if_not_exists: bool = False, cascade: bool = False) -> None:
        """Drop a database. One that still holds tables needs ``cascade=True`` (which drops
        them) and otherwise raises ``DatabaseNotEmptyError`` (a ``ValueError``, as pypaimon)."""
        try:
            self.get_database(name)
        except DatabaseNotFoundError:
            if ignore_if_not_exists:
                return
            raise
        tables = self.list_tables(name)
        if tables and not cascade:
            raise DatabaseNotEmptyError(
                f"database '{name}' is not empty ({len(tables)} tables); use cascade=True")
        # its directory, or on an object store every object under its prefix
        self._core.remove_database(name)

    def alter_database(self, name: str, changes: List[Any]) -> None:
        """Refused, as by pypaimon's and Java's filesystem catalogs: it stores no database
        properties."""
        self.get_database(name)
        raise UnsupportedError("alter_database: a filesystem catalog stores no database properties")

    def rename_table(self, source_identifier: Union[str, Identifier],
                     target_identifier: Union[str, Identifier]) -> None:
        """Rename (or move to another database of this catalog) a table: its directory is
        renamed, as Java's ``FileSystemCatalog`` does (``FileIO.rename``). The source must exist
        (``TableNotExistException``), the target database too, the target table must not
        (``TableAlreadyExistException``). Do not rename a table that is being written. On an
        object store, which has no rename, its objects are copied (server side) then deleted,
        as Hadoop's S3A rename that Java uses there: not atomic; a failure names what is left
        where (docs/object-stores.md)."""
        self._core.rename_table(_identifier(source_identifier), _identifier(target_identifier))

    def get_table_schema(self, identifier: Union[str, Identifier]) -> TableSchema:
        """The table's latest stored schema."""
        return self.get_table(identifier).table_schema

    def supports_version_management(self) -> bool:
        return False

    def load_snapshot(self, identifier: Union[str, Identifier]) -> Any:
        raise UnsupportedError("load_snapshot: a filesystem catalog does not manage versions (REST catalogs do)")

    def commit_snapshot(self, identifier: Union[str, Identifier], *args: Any, **kwargs: Any) -> bool:
        raise UnsupportedError("commit_snapshot: a filesystem catalog does not manage versions "
                               "(REST catalogs do); commit through a table's write builder")

    def create_partitions(self, identifier: Union[str, Identifier], partitions: List[Dict[str, str]],
                          ignore_if_exists: bool = True) -> None:
        raise UnsupportedError("create_partitions: a filesystem catalog has no partition metadata "
                               "(REST catalogs do); partitions appear when data is written")

    def list_partitions_paged(self, identifier: Union[str, Identifier], max_results: Optional[int] = None,
                              page_token: Optional[str] = None,
                              partition_name_pattern: Optional[str] = None) -> Any:
        """The table's partitions with statistics (``Table.list_partitions``), sorted, as
        pypaimon: a ``paimon_rs.snapshot.PagedList`` of at most ``max_results``
        ``Partition`` entries from ``page_token`` on, filtered by ``partition_name_pattern``
        (``dt=2024-*``)."""
        from paimon_rs.snapshot import paged_partitions
        return paged_partitions(self.get_table(identifier).list_partitions(), max_results, page_token,
                                partition_name_pattern)

    def drop_partitions(self, identifier: Union[str, Identifier], partitions: List[Dict[str, str]]) -> None:
        """Drop partitions (``[{"dt": "..."}, ...]``) in one OVERWRITE snapshot, as pypaimon's
        and Java's ``dropPartitions`` (``Table.drop_partitions``)."""
        if not partitions:
            raise InvalidArgumentError("Partitions list cannot be empty.")
        self.get_table(identifier).drop_partitions(partitions)


class CatalogFactory:
    """``CatalogFactory.create({"warehouse": "/path"})`` as in pypaimon."""

    @staticmethod
    def create(options: Dict[str, str]) -> FileSystemCatalog:
        metastore = options.get("metastore", "filesystem")
        if metastore != "filesystem":
            raise UnsupportedError(f"metastore '{metastore}' (only 'filesystem' is supported)")
        return FileSystemCatalog(options)
