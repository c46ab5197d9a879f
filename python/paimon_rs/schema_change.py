"""Schema changes for ``catalog.alter_table``, with pypaimon 2.1.0's names
(``pypaimon.schema.schema_change``): ``SchemaChange.add_column(...)`` and friends, ``Move``.

A column type may be given as a pyarrow type (``pa.int64()``: nullable), a Paimon type string as
in schema files (``"BIGINT"``, ``"DECIMAL(10, 2) NOT NULL"``), a schema-file dict for nested
types, or a pypaimon ``DataType`` (anything with ``to_dict()``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import Enum
from typing import Any, Dict, List, Optional, Union

import pyarrow as pa

from paimon_rs import _core


def _type_json(data_type: Any) -> Any:
    """A column type in the schema file's JSON form."""
    if isinstance(data_type, pa.Field):
        return json.loads(_core.paimon_type_json(data_type))
    if isinstance(data_type, pa.DataType):
        return json.loads(_core.paimon_type_json(pa.field("c", data_type, nullable=True)))
    if isinstance(data_type, (str, dict)):
        return data_type
    to_dict = getattr(data_type, "to_dict", None)
    if callable(to_dict):
        return to_dict()
    raise TypeError(f"a column type must be a pyarrow type, a Paimon type string or dict, or a "
                    f"pypaimon DataType; got {type(data_type).__name__}")


def _names(field_name: Union[str, List[str]]) -> List[str]:
    return [field_name] if isinstance(field_name, str) else list(field_name)


class MoveType(Enum):
    FIRST = "FIRST"
    AFTER = "AFTER"
    BEFORE = "BEFORE"
    LAST = "LAST"


@dataclass
class Move:
    """Where a column goes: ``Move.first(name)``, ``after(name, ref)``, ``before(name, ref)``,
    ``last(name)``."""

    field_name: str
    reference_field_name: Optional[str]
    type: MoveType

    @staticmethod
    def first(field_name: str) -> Move:
        return Move(field_name, None, MoveType.FIRST)

    @staticmethod
    def after(field_name: str, reference_field_name: str) -> Move:
        return Move(field_name, reference_field_name, MoveType.AFTER)

    @staticmethod
    def before(field_name: str, reference_field_name: str) -> Move:
        return Move(field_name, reference_field_name, MoveType.BEFORE)

    @staticmethod
    def last(field_name: str) -> Move:
        return Move(field_name, None, MoveType.LAST)

    def to_json(self) -> Dict[str, Any]:
        return {"fieldName": self.field_name, "referenceFieldName": self.reference_field_name,
                "type": self.type.value}


class SchemaChange:
    """Base of the changes; build them with the static methods (pypaimon's names)."""

    def to_json(self) -> Dict[str, Any]:  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    @staticmethod
    def set_option(key: str, value: str) -> SetOption:
        from paimon_rs.schema import option_text

        return SetOption(key, option_text(value))

    @staticmethod
    def remove_option(key: str) -> RemoveOption:
        return RemoveOption(key)

    @staticmethod
    def update_comment(comment: Optional[str]) -> UpdateComment:
        return UpdateComment(comment)

    @staticmethod
    def add_column(field_name: Union[str, List[str]], data_type: Any, comment: Optional[str] = None,
                   move: Optional[Move] = None) -> AddColumn:
        return AddColumn(_names(field_name), data_type, comment, move)

    @staticmethod
    def rename_column(field_name: Union[str, List[str]], new_name: str) -> RenameColumn:
        return RenameColumn(_names(field_name), new_name)

    @staticmethod
    def drop_column(field_name: Union[str, List[str]]) -> DropColumn:
        return DropColumn(_names(field_name))

    @staticmethod
    def update_column_type(field_name: Union[str, List[str]], new_data_type: Any,
                           keep_nullability: bool = False) -> UpdateColumnType:
        return UpdateColumnType(_names(field_name), new_data_type, keep_nullability)

    @staticmethod
    def update_column_nullability(field_name: Union[str, List[str]],
                                  new_nullability: bool) -> UpdateColumnNullability:
        return UpdateColumnNullability(_names(field_name), new_nullability)

    @staticmethod
    def update_column_comment(field_name: Union[str, List[str]], comment: str) -> UpdateColumnComment:
        return UpdateColumnComment(_names(field_name), comment)

    @staticmethod
    def update_column_default_value(field_names: List[str], default_value: str) -> UpdateColumnDefaultValue:
        return UpdateColumnDefaultValue(_names(field_names), default_value)

    @staticmethod
    def update_column_position(move: Move) -> UpdateColumnPosition:
        return UpdateColumnPosition(move)


@dataclass
class SetOption(SchemaChange):
    key: str
    value: str

    def to_json(self) -> Dict[str, Any]:
        return {"action": "setOption", "key": self.key, "value": self.value}


@dataclass
class RemoveOption(SchemaChange):
    key: str

    def to_json(self) -> Dict[str, Any]:
        return {"action": "removeOption", "key": self.key}


@dataclass
class UpdateComment(SchemaChange):
    comment: Optional[str]

    def to_json(self) -> Dict[str, Any]:
        return {"action": "updateComment", "comment": self.comment}


@dataclass
class AddColumn(SchemaChange):
    field_names: List[str]
    data_type: Any
    comment: Optional[str] = None
    move: Optional[Move] = None

    def to_json(self) -> Dict[str, Any]:
        return {"action": "addColumn", "fieldNames": self.field_names,
                "dataType": _type_json(self.data_type), "comment": self.comment,
                "move": self.move.to_json() if self.move else None}


@dataclass
class RenameColumn(SchemaChange):
    field_names: List[str]
    new_name: str

    def to_json(self) -> Dict[str, Any]:
        return {"action": "renameColumn", "fieldNames": self.field_names, "newName": self.new_name}


@dataclass
class DropColumn(SchemaChange):
    field_names: List[str]

    def to_json(self) -> Dict[str, Any]:
        return {"action": "dropColumn", "fieldNames": self.field_names}


@dataclass
class UpdateColumnType(SchemaChange):
    field_names: List[str]
    new_data_type: Any
    keep_nullability: bool = False

    def to_json(self) -> Dict[str, Any]:
        return {"action": "updateColumnType", "fieldNames": self.field_names,
                "newDataType": _type_json(self.new_data_type),
                "keepNullability": self.keep_nullability}


@dataclass
class UpdateColumnNullability(SchemaChange):
    field_names: List[str]
    new_nullability: bool

    def to_json(self) -> Dict[str, Any]:
        return {"action": "updateColumnNullability", "fieldNames": self.field_names,
                "newNullability": bool(self.new_nullability)}


@dataclass
class UpdateColumnComment(SchemaChange):
    field_names: List[str]
    new_comment: Optional[str]

    def to_json(self) -> Dict[str, Any]:
        return {"action": "updateColumnComment", "fieldNames": self.field_names,
                "newComment": self.new_comment}


@dataclass
class UpdateColumnDefaultValue(SchemaChange):
    """Refused by paimon_rs when applied (writes do not fill default values)."""

    field_names: List[str]
    new_default_value: str

    def to_json(self) -> Dict[str, Any]:
        return {"action": "updateColumnDefaultValue", "fieldNames": self.field_names,
                "newDefaultValue": self.new_default_value}


@dataclass
class UpdateColumnPosition(SchemaChange):
    move: Move

    def to_json(self) -> Dict[str, Any]:
        return {"action": "updateColumnPosition", "move": self.move.to_json()}


def changes_json(changes: List[Any]) -> str:
    """The changes as the JSON list the engine applies. pypaimon's own ``SchemaChange`` objects
    are accepted too (by their class name and fields)."""
    out = []
    for c in changes:
        if isinstance(c, SchemaChange):
            out.append(c.to_json())
        else:
            out.append(_foreign_change(c))
    return json.dumps(out)


_FOREIGN = {
    "SetOption": lambda c: SetOption(c.key, c.value),
    "RemoveOption": lambda c: RemoveOption(c.key),
    "UpdateComment": lambda c: UpdateComment(c.comment),
    "AddColumn": lambda c: AddColumn(list(c.field_names), c.data_type, c.comment,
                                     _foreign_move(c.move) if c.move else None),
    "RenameColumn": lambda c: RenameColumn(list(c.field_names), c.new_name),
    "DropColumn": lambda c: DropColumn(list(c.field_names)),
    "UpdateColumnType": lambda c: UpdateColumnType(list(c.field_names), c.new_data_type,
                                                   bool(c.keep_nullability)),
    "UpdateColumnNullability": lambda c: UpdateColumnNullability(list(c.field_names),
                                                                 c.new_nullability),
    "UpdateColumnComment": lambda c: UpdateColumnComment(list(c.field_names), c.new_comment),
    "UpdateColumnDefaultValue": lambda c: UpdateColumnDefaultValue(list(c.field_names),
                                                                   c.new_default_value),
    "UpdateColumnPosition": lambda c: UpdateColumnPosition(_foreign_move(c.move)),
}


def _foreign_move(m: Any) -> Move:
    kind = getattr(m.type, "value", m.type)
    return Move(m.field_name, m.reference_field_name, MoveType(str(kind).upper()))


def _foreign_change(c: Any) -> Dict[str, Any]:
    conv = _FOREIGN.get(type(c).__name__)
    if conv is None:
        raise TypeError(f"not a schema change: {c!r} (use paimon_rs.SchemaChange.*)")
    return conv(c).to_json()


__all__ = [
    "AddColumn",
    "DropColumn",
    "Move",
    "MoveType",
    "RemoveOption",
    "RenameColumn",
    "SchemaChange",
    "SetOption",
    "UpdateColumnComment",
    "UpdateColumnDefaultValue",
    "UpdateColumnNullability",
    "UpdateColumnPosition",
    "UpdateColumnType",
    "UpdateComment",
]
