"""Paimon's column types as objects, with pypaimon's names (``pypaimon.schema.data_types``).

A schema file stores a column's type as a string (``"BIGINT NOT NULL"``, ``"DECIMAL(10, 2)"``) or,
for nested types, a dict (``{"type": "ARRAY", "element": "INT"}``: docs/paimon-format.md, the
schema file). ``parse_data_type`` makes these objects of that form and ``to_dict`` gives it back:

    AtomicType("BIGINT", nullable=False).to_dict()        # 'BIGINT NOT NULL'
    parse_data_type({"type": "ARRAY", "element": "INT"})  # ArrayType(True, AtomicType('INT'))
    DataField.from_dict({"id": 0, "name": "id", "type": "BIGINT NOT NULL"}).type

``Table.fields`` / ``table_schema.fields`` hold these objects in ``DataField.type``, as pypaimon's
do (``DataField.from_dict`` of each stored field); ``type_dict(field.type)`` is the stored form.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Union

_NOT_NULL = re.compile(r"\s+NOT\s+NULL\s*$", re.IGNORECASE)
_NULL = re.compile(r"\s+NULL\s*$", re.IGNORECASE)


def _split_nullability(text: str) -> tuple:
    """``"INT NOT NULL"`` -> ``("INT", False)``; ``"INT NULL"`` / ``"INT"`` -> ``("INT", True)``."""
    text = text.strip()
    m = _NOT_NULL.search(text)
    if m:
        return text[:m.start()].rstrip(), False
    m = _NULL.search(text)
    return (text[:m.start()].rstrip() if m else text), True


def _suffix(nullable: bool) -> str:
    return "" if nullable else " NOT NULL"


class DataType:
    """A column type (pypaimon's ``DataType``): ``nullable``, ``to_dict()`` (the schema file's
    form) and ``str()`` (SQL-like)."""

    nullable: bool

    def to_dict(self) -> Union[str, Dict[str, Any]]:  # pragma: no cover - abstract
        raise NotImplementedError

    def _key(self) -> tuple:  # pragma: no cover - abstract
        raise NotImplementedError

    @classmethod
    def from_dict(cls, data: Union[str, Dict[str, Any]]) -> DataType:
        """Parse the schema file's form (``parse_data_type``)."""
        return parse_data_type(data)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self._key() == other._key()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self).__name__, self._key()))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self})"


class AtomicType(DataType):
    """A type without children: ``AtomicType("DECIMAL(10, 2)", nullable=False)``. ``type`` is the
    name with its parameters, upper case as given, without the nullability."""

    def __init__(self, type: str, nullable: bool = True):
        self.type = type
        self.nullable = nullable

    def to_dict(self) -> str:
        """The schema file's form: the type string with `` NOT NULL`` when not nullable."""
        return self.type + _suffix(self.nullable)

    def __str__(self) -> str:
        return self.to_dict()

    def _key(self) -> tuple:
        return (self.type, self.nullable)


class _ElementType(DataType):
    """A collection of one element type (``KIND<element>``)."""

    KIND = ""

    def __init__(self, nullable: bool, element_type: DataType):
        self.nullable = nullable
        self.element = element_type

    def to_dict(self) -> Dict[str, Any]:
        return {"type": self.KIND + _suffix(self.nullable), "element": self.element.to_dict()}

    def __str__(self) -> str:
        return f"{self.KIND}<{self.element}>{_suffix(self.nullable)}"

    def _key(self) -> tuple:
        return (self.element, self.nullable)


class ArrayType(_ElementType):
    """``ARRAY<element>``: ``ArrayType(nullable, element_type)``; the element is ``element``."""

    KIND = "ARRAY"


class MultisetType(_ElementType):
    """``MULTISET<element>``: ``MultisetType(nullable, element_type)``."""

    KIND = "MULTISET"


class VectorType(DataType):
    """``VECTOR<element, length>``: ``VectorType(nullable, element_type, length)``, pypaimon's
    fixed-length vector of numbers. paimon_rs cannot hold vector columns: the type exists so
    that a schema naming one parses, and creating a table with it is refused naming the
    column."""

    VALID_ELEMENT_TYPES = {"BOOLEAN", "TINYINT", "SMALLINT", "INT", "INTEGER", "BIGINT", "FLOAT", "DOUBLE"}

    def __init__(self, nullable: bool, element_type: DataType, length: int):
        if length < 1:
            raise ValueError("Vector length must be greater than or equal to 1.")
        if not (isinstance(element_type, AtomicType) and element_type.type.upper() in self.VALID_ELEMENT_TYPES):
            raise ValueError(f"Invalid element type for vector: {element_type}")
        self.nullable = nullable
        self.element = element_type
        self.length = length

    def to_dict(self) -> Dict[str, Any]:
        return {"type": "VECTOR" + _suffix(self.nullable), "element": self.element.to_dict(),
                "length": self.length, "nullable": self.nullable}

    def __str__(self) -> str:
        return f"VECTOR<{self.element}, {self.length}>{_suffix(self.nullable)}"

    def _key(self) -> tuple:
        return (self.element, self.length, self.nullable)


class MapType(DataType):
    """``MAP<key, value>``: ``MapType(nullable, key_type, value_type)``; ``key`` and ``value``."""

    def __init__(self, nullable: bool, key_type: DataType, value_type: DataType):
        self.nullable = nullable
        self.key = key_type
        self.value = value_type

    def to_dict(self) -> Dict[str, Any]:
        return {"type": "MAP" + _suffix(self.nullable), "key": self.key.to_dict(), "value": self.value.to_dict()}

    def __str__(self) -> str:
        return f"MAP<{self.key}, {self.value}>{_suffix(self.nullable)}"

    def _key(self) -> tuple:
        return (self.key, self.value, self.nullable)


class RowType(DataType):
    """``ROW<name type, ...>``: ``RowType(nullable, fields)`` with ``DataField`` children (each
    with its own field id, as in the schema file)."""

    def __init__(self, nullable: bool, fields: List[Any]):
        self.nullable = nullable
        self.fields = list(fields or [])

    def to_dict(self) -> Dict[str, Any]:
        return {"type": "ROW" + _suffix(self.nullable), "fields": [f.to_dict() for f in self.fields]}

    def __str__(self) -> str:
        inner = ", ".join(f"{f.name}: {type_string(f.type)}" for f in self.fields)
        return f"ROW<{inner}>{_suffix(self.nullable)}"

    def _key(self) -> tuple:
        return (tuple(self.fields), self.nullable)


def type_string(t: Any) -> str:
    """A type object or its stored form as text."""
    return str(t) if isinstance(t, DataType) else str(parse_data_type(t))


def type_dict(t: Any) -> Union[str, Dict[str, Any]]:
    """A type object or its stored form, as the stored form."""
    return t.to_dict() if isinstance(t, DataType) else t


def parse_data_type(data: Union[str, Dict[str, Any], DataType]) -> DataType:
    """A type from the schema file's form: a type string, or a dict of a nested type.

    Raises:
        ValueError: a dict without ``type``, or a nested type this does not know.
    """
    if isinstance(data, DataType):
        return data
    if isinstance(data, str):
        name, nullable = _split_nullability(data)
        if not name:
            raise ValueError(f"empty type string: {data!r}")
        return AtomicType(name, nullable)
    if not isinstance(data, dict) or "type" not in data:
        raise ValueError(f"not a Paimon type (a string or a dict with 'type'): {data!r}")
    kind, nullable = _split_nullability(str(data["type"]))
    if "nullable" in data and data["nullable"] is not None:
        nullable = bool(data["nullable"])
    kind = kind.upper()
    if kind == "ARRAY":
        return ArrayType(nullable, parse_data_type(data["element"]))
    if kind == "MULTISET":
        return MultisetType(nullable, parse_data_type(data["element"]))
    if kind == "VECTOR":
        return VectorType(nullable, parse_data_type(data["element"]), int(data["length"]))
    if kind == "MAP":
        return MapType(nullable, parse_data_type(data["key"]), parse_data_type(data["value"]))
    if kind == "ROW":
        return RowType(nullable, [DataField.from_dict(f) for f in data.get("fields", [])])
    raise ValueError(f"unknown nested type {data['type']!r} in {data!r}")


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
        try:
            t = parse_data_type(data["type"])
        except ValueError as e:
            raise ValueError(f"field '{data.get('name')}': {e}") from None
        return cls(int(data["id"]), data["name"], t, data.get("description"), data.get("defaultValue"))

    def to_dict(self) -> Dict[str, Any]:
        """The schema file's JSON object of this field (``description`` and ``defaultValue``
        only when set), whether ``type`` is a type object or already the stored form."""
        d: Dict[str, Any] = {"id": self.id, "name": self.name, "type": type_dict(self.type)}
        if self.description is not None:
            d["description"] = self.description
        if self.default_value is not None:
            d["defaultValue"] = self.default_value
        return d


__all__ = ["ArrayType", "AtomicType", "DataField", "DataType", "MapType", "MultisetType", "RowType", "VectorType",
           "parse_data_type"]
