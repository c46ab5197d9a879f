"""Inline BLOB columns, as Java Paimon and pypaimon 2.1.0 store them beside managed ``.blob``
files: ``blob-descriptor-field`` columns hold serialized ``BlobDescriptor`` bytes in the data
file (the bytes live elsewhere), ``blob-view-field`` columns hold serialized ``BlobViewStruct``
bytes naming a row of a BLOB column of an upstream table (its identifier, the field id, the
row's ``_ROW_ID``).

The engine reads and writes those bytes as they are; this module resolves them after a read
(pypaimon's ``BlobInlineConvertReader``): a descriptor becomes the bytes it points at (unless
``blob-as-descriptor``); a view is looked up in its upstream table, read through a filter on
``_ROW_ID``, and becomes that row's BLOB (its bytes, or its serialized descriptor with
``blob-as-descriptor``; null when the upstream value is null), unless
``blob-view.resolve.enabled`` is false, which keeps the struct bytes (to forward them to another
view table).
"""

from __future__ import annotations

import os
import struct
from typing import Any, Dict, List, Optional, Set, Tuple, Union

import pyarrow as pa

from paimon_rs.blob import BlobDescriptor, BlobRef, FileUriReader
from paimon_rs.exceptions import InvalidArgumentError, PaimonRsError
from paimon_rs.identifier import Identifier

__all__ = ["BlobViewStruct", "inline_blob_fields", "resolve_inline_blobs"]


class BlobViewStruct:
    """A reference to the BLOB of row ``row_id`` in field ``field_id`` of table ``identifier``
    (Java's ``BlobViewStruct``; wire: ``version:u8 = 1 | magic:u64 "BLOBVIEW" | id_len:u32 |
    identifier (UTF-8) | field_id:i32 | row_id:i64``, little-endian)."""

    CURRENT_VERSION = 1
    MAGIC = 0x424C4F4256494557  # "BLOBVIEW"

    def __init__(self, identifier: Union[Identifier, str], field_id: int, row_id: int):
        if isinstance(identifier, str):
            identifier = Identifier.from_string(identifier)
        if not isinstance(identifier, Identifier):
            raise TypeError("BlobViewStruct identifier must be Identifier or str.")
        self._identifier = identifier
        self._field_id = int(field_id)
        self._row_id = int(row_id)

    @property
    def identifier(self) -> Identifier:
        """The upstream table."""
        return self._identifier

    @property
    def field_id(self) -> int:
        """The id of the upstream BLOB field."""
        return self._field_id

    @property
    def row_id(self) -> int:
        """The upstream row's ``_ROW_ID``."""
        return self._row_id

    def serialize(self) -> bytes:
        """The wire bytes."""
        ident = self._identifier.get_full_name().encode("utf-8")
        return (struct.pack("<BQI", self.CURRENT_VERSION, self.MAGIC, len(ident)) + ident
                + struct.pack("<iq", self._field_id, self._row_id))

    @classmethod
    def deserialize(cls, data: bytes) -> BlobViewStruct:
        """Parse the wire bytes; ``ValueError`` if they are not exactly one struct."""
        raw = bytes(data)
        if len(raw) < 25:
            raise ValueError("Invalid BlobViewStruct data: too short")
        if raw[0] != cls.CURRENT_VERSION:
            raise ValueError(f"Expecting BlobViewStruct version to be {cls.CURRENT_VERSION}, "
                             f"but found {raw[0]}.")
        magic, length = struct.unpack_from("<QI", raw, 1)
        if magic != cls.MAGIC:
            raise ValueError(f"Invalid BlobViewStruct: missing magic header. Expected magic: "
                             f"{cls.MAGIC}, but found: {magic}")
        if 13 + length + 12 > len(raw):
            raise ValueError("Invalid BlobViewStruct data: identifier length exceeds data size")
        if 13 + length + 12 != len(raw):
            raise ValueError("Invalid BlobViewStruct data: trailing bytes")
        ident = raw[13:13 + length].decode("utf-8")
        field_id, row_id = struct.unpack_from("<iq", raw, 13 + length)
        return cls(Identifier.from_string(ident), field_id, row_id)

    @classmethod
    def is_blob_view_struct(cls, data: Any) -> bool:
        """Whether ``data`` starts as a serialized struct (version and magic)."""
        if not isinstance(data, (bytes, bytearray)) or len(data) < 9:
            return False
        return data[0] == cls.CURRENT_VERSION and struct.unpack_from("<Q", data, 1)[0] == cls.MAGIC

    def _key(self) -> Tuple[str, int, int]:
        return (self._identifier.get_full_name(), self._field_id, self._row_id)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, BlobViewStruct) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return (f"BlobViewStruct(identifier={self._identifier.get_full_name()}, "
                f"field_id={self._field_id}, row_id={self._row_id})")


def _field_set(value: Optional[str]) -> Set[str]:
    return {f.strip() for f in (value or "").split(",") if f.strip()}


def inline_blob_fields(options: Dict[str, str]) -> Tuple[Set[str], Set[str]]:
    """(``blob-descriptor-field`` columns, ``blob-view-field`` columns) of table options; the
    descriptor fields from ``blob.stored-descriptor-fields`` when the first key is absent."""
    if "blob-descriptor-field" in options:
        descriptor = _field_set(options["blob-descriptor-field"])
    else:
        descriptor = _field_set(options.get("blob.stored-descriptor-fields"))
    return descriptor, _field_set(options.get("blob-view-field"))


def _true(options: Dict[str, str], key: str, default: bool) -> bool:
    v = options.get(key)
    return default if v is None else str(v).strip().lower() == "true"


def needs_resolution(options: Dict[str, str]) -> bool:
    """Whether reads of a table with these options rewrite some inline BLOB column."""
    descriptor, view = inline_blob_fields(options)
    as_descriptor = _true(options, "blob-as-descriptor", False)
    return bool((descriptor and not as_descriptor)
                or (view and _true(options, "blob-view.resolve.enabled", True)))


def _upstream(table: Any, ident: Identifier) -> Any:
    """The upstream table ``ident`` of view table ``table``: through the catalog that opened
    ``table``, else beside it (``<warehouse>/<db>.db/<table>``)."""
    from paimon_rs.table import Table

    catalog = getattr(table, "_catalog", None)
    if catalog is not None:
        return catalog.get_table(ident.get_full_name())
    db_dir = os.path.dirname(str(table.table_path).rstrip("/"))
    path = f"{os.path.dirname(db_dir)}/{ident.get_database_name()}.db/{ident.get_object_name()}"
    return Table.open(path, name=ident.get_full_name())


class _ViewLookup:
    """The descriptors of the BLOBs the views of one read name, loaded per upstream table and
    field with one ``_ROW_ID`` filtered read each."""

    def __init__(self, table: Any):
        self._table = table
        self._found: Dict[BlobViewStruct, Optional[bytes]] = {}
        self._readers: Dict[str, FileUriReader] = {}

    def load(self, column: str, structs: List[BlobViewStruct]) -> None:
        by_table: Dict[str, Dict[int, Set[int]]] = {}
        idents: Dict[str, Identifier] = {}
        for s in structs:
            if s in self._found:
                continue
            name = s.identifier.get_full_name()
            idents[name] = s.identifier
            by_table.setdefault(name, {}).setdefault(s.field_id, set()).add(s.row_id)
        for name, fields in by_table.items():
            what = (f"blob view column '{column}' of table {self._table.identifier}: upstream "
                    f"table {name}")
            try:
                upstream = _upstream(self._table, idents[name])
            except PaimonRsError as e:
                raise InvalidArgumentError(f"{what} cannot be loaded: {e}") from e
            self._readers[name] = FileUriReader(upstream.file_io)
            by_id = {f.id: f.name for f in upstream.table_schema.fields}
            for field_id, rows in fields.items():
                if field_id not in by_id:
                    raise InvalidArgumentError(
                        f"{what}: Cannot find blob fieldId {field_id} in upstream table {name}.")
                field = by_id[field_id]
                src = upstream.copy({"blob-as-descriptor": "true"})
                rb = src.new_read_builder().with_projection([field, "_ROW_ID"])
                rb = rb.with_filter(rb.new_predicate_builder().is_in("_ROW_ID", sorted(rows)))
                got = rb.new_read().to_arrow(rb.new_scan().plan().splits())
                for row_id, value in zip(got.column("_ROW_ID").to_pylist(),
                                         got.column(field).to_pylist()):
                    self._found[BlobViewStruct(name, field_id, row_id)] = value
                missing = sorted(r for r in rows
                                 if BlobViewStruct(name, field_id, r) not in self._found)
                if missing:
                    raise InvalidArgumentError(
                        f"{what}: Cannot resolve BlobViewStruct because row id(s) "
                        f"{missing[:10]} of field '{field}' were not found in upstream table "
                        f"{name}.")

    def descriptor(self, s: BlobViewStruct) -> Optional[bytes]:
        return self._found[s]

    def data(self, s: BlobViewStruct) -> Optional[bytes]:
        raw = self._found[s]
        if raw is None:
            return None
        reader = self._readers[s.identifier.get_full_name()]
        return BlobRef(reader, BlobDescriptor.deserialize(raw)).to_data()


def _set(data: Any, name: str, values: List[Optional[bytes]]) -> Any:
    i = data.schema.get_field_index(name)
    return data.set_column(i, data.schema.field(i), pa.array(values, type=pa.large_binary()))


def resolve_inline_blobs(table: Any, data: Any) -> Any:
    """``data`` (a RecordBatch or Table read from ``table``) with its inline BLOB columns
    resolved as the module docstring says."""
    options = dict(table._core.options)
    descriptor, view = inline_blob_fields(options)
    as_descriptor = _true(options, "blob-as-descriptor", False)
    names = set(data.schema.names)
    if not as_descriptor:
        reader = FileUriReader(table.file_io)
        for name in sorted(descriptor & names):
            values = data.column(name).to_pylist()
            data = _set(data, name, [None if v is None else
                                     BlobRef(reader, BlobDescriptor.deserialize(v)).to_data()
                                     for v in values])
    if not _true(options, "blob-view.resolve.enabled", True):
        return data
    lookup = _ViewLookup(table)
    for name in sorted(view & names):
        values = data.column(name).to_pylist()
        structs: List[Optional[BlobViewStruct]] = []
        for v in values:
            if v is None:
                structs.append(None)
                continue
            if not BlobViewStruct.is_blob_view_struct(v):
                raise InvalidArgumentError(
                    f"Expected BlobViewStruct bytes in view field '{name}' of table "
                    f"{table.identifier}, but got non-BlobViewStruct bytes.")
            structs.append(BlobViewStruct.deserialize(v))
        lookup.load(name, [s for s in structs if s is not None])
        pick = lookup.descriptor if as_descriptor else lookup.data
        data = _set(data, name, [None if s is None else pick(s) for s in structs])
    return data
