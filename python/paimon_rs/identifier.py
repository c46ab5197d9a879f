"""``database.table`` names, as pypaimon's ``Identifier``."""

from __future__ import annotations

from dataclasses import dataclass

from paimon_rs.exceptions import InvalidArgumentError


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

    @staticmethod
    def create(database: str, object: str) -> Identifier:  # noqa: A002 (pypaimon's name)
        """``Identifier.create("db", "t")``, as pypaimon."""
        return Identifier(database, object)

    def get_object_name(self) -> str:
        return self.object

    def is_system_table(self) -> bool:
        """paimon_rs has no system tables (``t$snapshots``): always False."""
        return False

    def __str__(self) -> str:
        return self.get_full_name()
