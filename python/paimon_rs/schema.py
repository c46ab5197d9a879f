"""Table schema declaration, as pypaimon's ``Schema``."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

import pyarrow as pa


@dataclass
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


@dataclass(frozen=True)
class DataField:
    """One column of a table schema, as pypaimon's ``DataField``: its field ``id``, ``name``,
    Paimon ``type`` (the schema file's form: ``"BIGINT NOT NULL"``, or a dict for nested types)
    and ``description``."""

    id: int
    name: str
    type: Any
    description: Optional[str] = None


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
            fields=[DataField(f["id"], f["name"], f["type"], f.get("description"))
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
