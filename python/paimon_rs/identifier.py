"""``database.table`` names, as pypaimon's ``Identifier``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from paimon_rs.exceptions import InvalidArgumentError


@dataclass(frozen=True, init=False)
class Identifier:
    """``database.table``, or ``database.table$branch_<b>`` for a branch (Java's encoding)."""

    database: str
    object: str

    def __init__(self, database: str, object: str, branch: Optional[str] = None,  # noqa: A002
                 system_table: Optional[str] = None):
        """``Identifier(db, t)``; ``Identifier(db, t, branch="b")`` is ``db.t$branch_b``
        (pypaimon's form; ``main`` is not encoded); ``system_table="files"`` appends
        ``$files`` (``db.t$branch_b$files``), as pypaimon's and Java's encoding."""
        if branch is not None and branch.lower() != "main":
            object = f"{object}$branch_{branch}"  # noqa: A001
        if system_table is not None:
            object = f"{object}${system_table}"  # noqa: A001
        super().__setattr__("database", database)
        super().__setattr__("object", object)

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
        """The table, without a ``$branch_<name>`` suffix."""
        return self.object.split("$", 1)[0]

    def get_branch_name(self) -> Optional[str]:
        """The branch ``t$branch_b`` names (``"b"``), None for ``t`` (Java's ``Identifier``)."""
        parts = self.object.split("$")
        if len(parts) >= 2 and parts[1].startswith("branch_"):
            return parts[1][len("branch_"):]
        return None

    def get_branch_name_or_default(self) -> str:
        return self.get_branch_name() or "main"

    @property
    def branch(self) -> Optional[str]:
        """The branch this identifier names, None for the main branch (pypaimon's
        ``Identifier.branch``; pypaimon can also set it, identifiers here are immutable: make a
        new one for another branch)."""
        return self.get_branch_name()

    @staticmethod
    def create(database: str, object: str, branch: Optional[str] = None,  # noqa: A002 (pypaimon's name)
               system_table: Optional[str] = None) -> Identifier:
        """``Identifier.create("db", "t")``, as pypaimon; ``branch`` (not ``main``) makes
        ``t$branch_<branch>``, ``system_table`` ``t$<system_table>``."""
        return Identifier(database, object, branch, system_table)

    def get_object_name(self) -> str:
        return self.object

    def get_system_table_name(self) -> Optional[str]:
        """The system table ``t$files`` / ``t$branch_b$files`` names (``"files"``), None for a
        table or a branch (Java's ``Identifier.getSystemTableName``)."""
        return split_system_name(self.object)[1]

    def is_system_table(self) -> bool:
        """``t$<name>`` / ``t$branch_b$<name>`` names a system table (``paimon_rs.system_tables``)."""
        return self.get_system_table_name() is not None

    def __str__(self) -> str:
        return self.get_full_name()


def split_system_name(object_name: str) -> tuple:
    """``t``, ``t$branch_b``, ``t$files``, ``t$branch_b$files`` as (data table object name,
    system table name or None), Java's ``Identifier`` rules."""
    parts = object_name.split("$")
    if len(parts) == 1:
        return object_name, None
    if len(parts) == 2:
        if parts[1].lower().startswith("branch_"):
            return object_name, None
        return parts[0], parts[1]
    if len(parts) == 3 and parts[1].lower().startswith("branch_"):
        return f"{parts[0]}${parts[1]}", parts[2]
    raise InvalidArgumentError(f"table name '{object_name}': at most 't$branch_<b>$<system table>'")
