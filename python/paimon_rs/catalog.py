"""Catalogs, as pypaimon's ``CatalogFactory.create({...})``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Union

from paimon_rs import _core
from paimon_rs.exceptions import InvalidArgumentError, UnsupportedError
from paimon_rs.schema import Schema
from paimon_rs.table import Table


@dataclass(frozen=True)
class Identifier:
    """``database.table``."""

    database: str
    object: str

    @staticmethod
    def from_string(s: str) -> Identifier:
        parts = s.split(".")
        if len(parts) != 2 or not all(parts):
            raise InvalidArgumentError(f"table identifier '{s}' must look like 'database.table'")
        return Identifier(parts[0], parts[1])

    def get_full_name(self) -> str:
        return f"{self.database}.{self.object}"

    def get_database_name(self) -> str:
        return self.database

    def get_table_name(self) -> str:
        return self.object


def _identifier(identifier: Union[str, Identifier]) -> str:
    if isinstance(identifier, Identifier):
        return identifier.get_full_name()
    return Identifier.from_string(identifier).get_full_name()


class Catalog:
    """Base class of catalogs."""


class FileSystemCatalog(Catalog):
    """Tables stored under ``<warehouse>/<db>.db/<table>`` on a local filesystem."""

    def __init__(self, options: Dict[str, str]):
        warehouse = options.get("warehouse")
        if not warehouse:
            raise InvalidArgumentError("catalog option 'warehouse' is required")
        self.options = dict(options)
        self._core = _core.Catalog(str(warehouse))

    @property
    def warehouse(self) -> str:
        return self._core.warehouse()

    def create_database(
        self, name: str, ignore_if_exists: bool, properties: Optional[Dict[str, str]] = None
    ) -> None:
        self._core.create_database(name, ignore_if_exists)

    def list_databases(self) -> List[str]:
        return self._core.list_databases()

    def list_tables(self, database_name: str) -> List[str]:
        return self._core.list_tables(database_name)

    def create_table(
        self, identifier: Union[str, Identifier], schema: Schema, ignore_if_exists: bool
    ) -> None:
        if not isinstance(schema, Schema):
            raise TypeError("schema must be a paimon_rs.Schema (Schema.from_pyarrow_schema)")
        self._core.create_table(
            _identifier(identifier),
            schema.pa_schema,
            schema.partition_keys,
            schema.primary_keys,
            schema.options,
            schema.comment,
            ignore_if_exists,
        )

    def get_table(self, identifier: Union[str, Identifier]) -> Table:
        return Table(self._core.get_table(_identifier(identifier)))

    def drop_table(self, identifier: Union[str, Identifier], ignore_if_not_exists: bool = False) -> None:
        self._core.drop_table(_identifier(identifier), ignore_if_not_exists)


class CatalogFactory:
    """``CatalogFactory.create({"warehouse": "/path"})`` as in pypaimon."""

    @staticmethod
    def create(options: Dict[str, str]) -> Catalog:
        metastore = options.get("metastore", "filesystem")
        if metastore != "filesystem":
            raise UnsupportedError(f"metastore '{metastore}' (only 'filesystem' is supported)")
        return FileSystemCatalog(options)
