"""Table schema declaration, as pypaimon's ``Schema``."""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Union

import pyarrow as pa

from paimon_rs import _core
from paimon_rs.data_types import DataField
from paimon_rs.exceptions import InvalidArgumentError


def option_texts(options: Optional[Dict[str, Any]]) -> Dict[str, str]:
    """Table options as Paimon stores them, strings, from pypaimon's looser values
    (``{"bucket": 2, "deletion-vectors.enabled": True}`` is ``{"bucket": "2", ... "true"}``).
    A None value is refused (pypaimon's ``copy`` removes such an option; paimon_rs cannot
    unset an option through a copy, and never stores the text ``"None"``)."""
    for k, v in (options or {}).items():
        if v is None:
            raise InvalidArgumentError(
                f"option '{k}' is None: give its value as text (removing an option through a "
                "table copy, as pypaimon does for None, is not supported by paimon_rs)")
    return {str(k): option_text(v) for k, v in (options or {}).items()}


def option_text(v: Any) -> str:
    """One option value as text: a bool as ``true``/``false``; an enum member (pypaimon's
    ``ExternalPathStrategy.ROUND_ROBIN``, a ``str`` enum) as its value, ``round-robin``, which
    is what pypaimon stores, not its name."""
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, enum.Enum):
        return option_text(v.value)
    return str(v)


class Schema:
    """What a new table looks like: columns, keys, options, comment (pypaimon's ``Schema``).

    The columns are given either as Paimon-typed fields, as pypaimon takes them::

        Schema(fields=[DataField(0, "id", AtomicType("BIGINT")),
                       DataField(1, "code", AtomicType("VARCHAR(10)"), "a comment")],
               primary_keys=["id"], options={"bucket": "2"})

    or as a pyarrow schema (``Schema.from_pyarrow_schema``). ``fields`` (Paimon types) and
    ``pa_schema`` (the Arrow types paimon_rs reads the columns as) are both available whichever
    way the schema was made; the table is created from the form given, so Paimon types Arrow
    cannot name (``VARCHAR(10)``, ``CHAR(3)``, ``TIME(3)``, ``MULTISET<..>``) and field comments
    are kept exactly from ``fields``. Field ids of ``fields`` are not kept: a table's ids are
    assigned on create (columns in order, then nested fields), as Paimon does.

    Primary-key columns are made NOT NULL, as Paimon does (in ``fields`` here, on create for a
    pyarrow schema).

    Raises:
        TypeError: ``fields`` is neither a list of ``DataField`` nor a ``pyarrow.Schema``.
        UnsupportedError: a field of a type paimon_rs cannot hold (``VECTOR``), naming the
            field.
        ValueError: as pypaimon: ``primary-key.nullable`` or a ``changelog-producer`` other
            than ``none`` on a table without primary keys.
    """

    def __init__(self, fields: Union[None, List[DataField], pa.Schema] = None,
                 partition_keys: Optional[List[str]] = None, primary_keys: Optional[List[str]] = None,
                 options: Optional[Dict[str, Any]] = None, comment: Optional[str] = None):
        self.partition_keys: List[str] = list(partition_keys or [])
        self.primary_keys: List[str] = list(primary_keys or [])
        # Paimon stores every option as a string
        self.options: Dict[str, str] = option_texts(options)
        self.comment = comment
        if self.options.get("primary-key.nullable", "false").lower() == "true" and not self.primary_keys:
            raise ValueError("Option 'primary-key.nullable' can only be enabled for a table with primary keys.")
        producer = self.options.get("changelog-producer", "none")
        if producer != "none" and not self.primary_keys:
            raise ValueError(f"Cannot set 'changelog-producer' to '{producer}' on a table without primary keys. "
                             "Changelog producer requires primary keys to be defined.")
        self._pa_schema: Optional[pa.Schema] = None
        self._fields: Optional[List[DataField]] = None
        if isinstance(fields, pa.Schema):
            self._pa_schema = fields
        elif fields is None or isinstance(fields, (list, tuple)):
            fields = list(fields or [])
            for f in fields:
                if not isinstance(f, DataField):
                    raise TypeError(f"Schema fields must be DataFields (or a pyarrow.Schema), got {f!r}")
            self._fields = [self._key_not_null(f) for f in fields]
            # the Arrow form now: a type paimon_rs cannot hold is refused here, naming the field
            self._pa_schema = pa.schema([_core.arrow_field_of(json.dumps(f.to_dict())) for f in self._fields])
        else:
            raise TypeError(f"Schema fields must be a list of DataField or a pyarrow.Schema, "
                            f"got {type(fields).__name__}")

    def _key_not_null(self, f: DataField) -> DataField:
        if f.name not in self.primary_keys:
            return f
        from paimon_rs.data_types import parse_data_type, type_dict
        t = parse_data_type(type_dict(f.type))  # a copy: the caller's DataField is not changed
        t.nullable = self.options.get("primary-key.nullable", "false").lower() == "true"
        return DataField(f.id, f.name, t, f.description, f.default_value)

    @property
    def fields(self) -> List[DataField]:
        """The columns as Paimon-typed ``DataField``s (types as ``paimon_rs.data_types``
        objects); for a schema made from pyarrow, the Paimon types its Arrow types map to, with
        pypaimon's ids (columns 0, 1, ..., nested fields numbered after their column)."""
        if self._fields is None:
            from paimon_rs.data_types import parse_data_type
            out, next_id = [], 0
            for a in self._pa_schema or pa.schema([]):
                top = next_id
                if pa.types.is_large_binary(a.type):  # pypaimon: a large_binary column is a BLOB
                    t = parse_data_type("BLOB" if a.nullable else "BLOB NOT NULL")
                else:
                    t = parse_data_type(json.loads(_core.paimon_type_json(a)))
                next_id = _renumber(t, top + 1)
                desc = (a.metadata or {}).get(b"description")
                out.append(DataField(top, a.name, t, desc.decode() if desc is not None else None))
            return out
        return list(self._fields)

    @property
    def pa_schema(self) -> pa.Schema:
        """The columns as a ``pyarrow.Schema``: the Arrow types paimon_rs reads and writes them
        as (``VARCHAR(n)`` and ``CHAR(n)`` as string, ``TIMESTAMP(p)`` in the unit of ``p``, a
        ``TIMESTAMP WITH LOCAL TIME ZONE`` with tz UTC, ``MULTISET`` as a list, ...)."""
        return self._pa_schema if self._pa_schema is not None else pa.schema([])

    def _fields_json(self) -> Optional[str]:
        """The Paimon-typed fields for ``create_table`` (None: made from pyarrow)."""
        return None if self._fields is None else json.dumps([f.to_dict() for f in self._fields])

    @staticmethod
    def from_pyarrow_schema(
        pa_schema: pa.Schema,
        partition_keys: Optional[List[str]] = None,
        primary_keys: Optional[List[str]] = None,
        options: Optional[Dict[str, Any]] = None,
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
        return Schema(pa_schema, partition_keys, primary_keys, options, comment)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Schema):
            return NotImplemented
        return (self.fields, self.partition_keys, self.primary_keys, self.options, self.comment) == \
            (other.fields, other.partition_keys, other.primary_keys, other.options, other.comment)

    __hash__ = None  # type: ignore[assignment]  # mutable, as pypaimon's dataclass

    def __repr__(self) -> str:
        if self._fields is None:
            cols = ", ".join(f"{f.name}: {f.type}{'' if f.nullable else ' not null'}" for f in self.pa_schema)
        else:
            from paimon_rs.data_types import type_string
            cols = ", ".join(f"{f.name}: {type_string(f.type)}" for f in self._fields)
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


def _renumber(t: Any, next_id: int) -> int:
    """Number the nested fields of ``t`` from ``next_id`` depth first, as pypaimon's
    ``to_paimon_schema`` does (a row's fields in order, each followed by its own nested fields);
    returns the next free id."""
    from paimon_rs.data_types import ArrayType, MapType, MultisetType, RowType
    if isinstance(t, RowType):
        renumbered = []
        for f in t.fields:
            fid = next_id
            next_id = _renumber(f.type, next_id + 1)
            renumbered.append(DataField(fid, f.name, f.type, f.description, f.default_value))
        t.fields = renumbered
    elif isinstance(t, (ArrayType, MultisetType)):
        next_id = _renumber(t.element, next_id)
    elif isinstance(t, MapType):
        next_id = _renumber(t.value, _renumber(t.key, next_id))
    return next_id


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
            fields=[DataField.from_dict(f) for f in d.get("fields", [])],
            highest_field_id=d.get("highestFieldId", 0),
            partition_keys=list(d.get("partitionKeys", [])),
            primary_keys=list(d.get("primaryKeys", [])),
            options=dict(d.get("options", {})),
            comment=d.get("comment"),
            time_millis=d.get("timeMillis"),
            version=d.get("version"),
        )

    def to_schema(self, pa_schema: Optional[pa.Schema] = None) -> Schema:
        """This schema as a ``Schema`` to create another table like it: from its Paimon-typed
        fields (exact types and column comments), or from ``pa_schema`` when given (the
        table's ``arrow_schema``: Arrow types only)."""
        cols = pa_schema if pa_schema is not None else list(self.fields)
        return Schema(cols, list(self.partition_keys), list(self.primary_keys),
                      dict(self.options), self.comment)

    @property
    def bucket_keys(self) -> List[str]:
        """The columns a fixed-bucket table hashes rows by (Java's ``TableSchema.bucketKeys``):
        the ``bucket-key`` option, else the primary key without the partition keys."""
        configured = [k.strip() for k in self.options.get("bucket-key", "").split(",") if k.strip()]
        return configured or [k for k in self.primary_keys if k not in self.partition_keys]

    @property
    def logical_bucket_key_fields(self) -> List[DataField]:
        """The ``DataField``s of ``bucket_keys``, in their order (Java's
        ``logicalBucketKeyType``)."""
        by_name = {f.name: f for f in self.fields}
        return [by_name[k] for k in self.bucket_keys]

    def cross_partition_update(self) -> bool:
        """A primary key that leaves out a partition key: a key may move between partitions."""
        return bool(self.primary_keys) and bool(self.partition_keys) and \
            not set(self.partition_keys) <= set(self.primary_keys)
