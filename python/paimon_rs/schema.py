"""Table schema declaration, as pypaimon's ``Schema``."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

import pyarrow as pa


@dataclass(repr=False)
class Schema:
    """What a new table looks like: columns (as a pyarrow schema), keys, options, comment.

    Primary-key columns are made NOT NULL when the table is created, as Paimon does.
    """

    pa_schema: pa.Schema
    partition_keys: List[str] = field(default_factory=list)
    primary_keys: List[str] = field(default_factory=list)
    options: Dict[str, str] = field(default_factory=dict)
    comment: Optional[str] = None

    @staticmethod
    def from_pyarrow_schema(
        pa_schema: pa.Schema,
        partition_keys: Optional[List[str]] = None,
        primary_keys: Optional[List[str]] = None,
        options: Optional[Dict[str, str]] = None,
        comment: Optional[str] = None,
    ) -> Schema:
        """The declaration of a new table, for ``catalog.create_table``.

        Args:
            pa_schema: the columns, as a ``pyarrow.Schema`` (types map to Paimon's: int64 to
                BIGINT, string to STRING, date32 to DATE, timestamp to TIMESTAMP, ...).
            partition_keys: columns whose values name the partition directories.
            primary_keys: columns of the primary key (a primary-key table: one row per key,
                a write upserts, ``table.delete`` / ``merge`` work by key); without one the
                table is an append table. They become NOT NULL. A partitioned primary-key
                table usually includes the partition keys in the primary key.
            options: table options (``{"bucket": "4"}``, docs/options.md); values are
                stored as strings (``True`` as ``"true"``).
            comment: the table comment.

        Raises:
            TypeError: ``pa_schema`` is not a ``pyarrow.Schema``. Unknown columns in the keys
                and unsupported options are refused by ``create_table``.

        Example::

            schema = Schema.from_pyarrow_schema(
                pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string())]),
                partition_keys=["dt"], primary_keys=["dt", "id"], options={"bucket": "2"})
        """
        if not isinstance(pa_schema, pa.Schema):
            raise TypeError(f"expected a pyarrow.Schema, got {type(pa_schema).__name__}")
        opts = {}
        for k, v in (options or {}).items():
            # Paimon stores every option as a string
            opts[str(k)] = str(v).lower() if isinstance(v, bool) else str(v)
        return Schema(
            pa_schema=pa_schema,
            partition_keys=list(partition_keys or []),
            primary_keys=list(primary_keys or []),
            options=opts,
            comment=comment,
        )

    def __repr__(self) -> str:
        cols = ", ".join(f"{f.name}: {f.type}{'' if f.nullable else ' not null'}" for f in self.pa_schema)
        parts = [f"[{cols}]"]
        if self.partition_keys:
            parts.append(f"partition_keys={self.partition_keys}")
        if self.primary_keys:
            parts.append(f"primary_keys={self.primary_keys}")
        if self.options:
            parts.append(f"options={self.options}")
        if self.comment:
            parts.append(f"comment={self.comment!r}")
        return f"Schema({', '.join(parts)})"


@dataclass(frozen=True)
class DataField:
    """One column of a table schema, as pypaimon's ``DataField``: its field ``id``, ``name``,
    Paimon ``type`` (the schema file's form: ``"BIGINT NOT NULL"``, or a dict for nested types)
    and ``description``."""

    id: int
    name: str
    type: Any
    description: Optional[str] = None
    default_value: Optional[str] = None

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> DataField:
        """A field from the schema file's JSON object (``{"id": 0, "name": "a", "type":
        "INT NOT NULL", "description": ..., "defaultValue": ...}``), its type parsed into a
        ``paimon_rs.data_types`` object (``AtomicType``, ``ArrayType``, ...), as pypaimon's
        ``DataField.from_dict``."""
        from paimon_rs.data_types import parse_data_type
        return cls(int(data["id"]), data["name"], parse_data_type(data["type"]), data.get("description"),
                   data.get("defaultValue"))

    def to_dict(self) -> Dict[str, Any]:
        """The schema file's JSON object of this field (``description`` and ``defaultValue``
        only when set), whether ``type`` is a type object or already the stored form."""
        from paimon_rs.data_types import type_dict
        d: Dict[str, Any] = {"id": self.id, "name": self.name, "type": type_dict(self.type)}
        if self.description is not None:
            d["description"] = self.description
        if self.default_value is not None:
            d["defaultValue"] = self.default_value
        return d


@dataclass(frozen=True)
class TableSchema:
    """A table's stored schema (``schema/schema-<id>``), as pypaimon's ``TableSchema``."""

    id: int
    fields: List[DataField]
    highest_field_id: int
    partition_keys: List[str]
    primary_keys: List[str]
    options: Dict[str, str]
    comment: Optional[str]
    time_millis: Optional[int] = None
    version: Optional[int] = None

    @staticmethod
    def from_json(text: str) -> TableSchema:
        """Parse the schema file's JSON."""
        d = json.loads(text)
        return TableSchema(
            id=d.get("id", 0),
            fields=[DataField(f["id"], f["name"], f["type"], f.get("description"), f.get("defaultValue"))
                    for f in d.get("fields", [])],
            highest_field_id=d.get("highestFieldId", 0),
            partition_keys=list(d.get("partitionKeys", [])),
            primary_keys=list(d.get("primaryKeys", [])),
            options=dict(d.get("options", {})),
            comment=d.get("comment"),
            time_millis=d.get("timeMillis"),
            version=d.get("version"),
        )

    def to_schema(self, pa_schema: pa.Schema) -> Schema:
        """This schema as a ``Schema`` to create another table like it (``pa_schema``: the
        table's ``arrow_schema``, which carries the column types in Arrow form)."""
        return Schema(pa_schema, list(self.partition_keys), list(self.primary_keys),
                      dict(self.options), self.comment)

    def cross_partition_update(self) -> bool:
        """A primary key that leaves out a partition key: a key may move between partitions."""
        return bool(self.primary_keys) and bool(self.partition_keys) and \
            not set(self.partition_keys) <= set(self.primary_keys)
