"""VARIANT values: :class:`GenericVariant`, pypaimon's value class, on the Parquet Variant encoding.

A VARIANT value is two byte strings (the Parquet Variant binary encoding, which Java Paimon's
``org.apache.paimon.data.variant.GenericVariant`` implements):

- ``metadata``: a header byte (version 1 in bits 0-3, "sorted" in bit 4, offset width - 1 in
  bits 6-7), the dictionary size, ``size + 1`` offsets, then the UTF-8 object keys;
- ``value``: a header byte whose two low bits are the basic type (0 primitive, 1 short string,
  2 object, 3 array) and whose six high bits say which primitive, the string length, or the
  widths of an object's / array's field ids and offsets; then the payload, little endian.

In tables, a VARIANT column is the Arrow ``struct<value: binary NOT NULL, metadata: binary NOT
NULL>`` (Parquet: a group of two required binaries, ``value`` with field id 0 and ``metadata``
with field id 1, as Java's ``ParquetSchemaConverter`` writes it); paimon_rs reads and writes it
in Rust, this module only builds and decodes single values, with pypaimon's names
(``pypaimon.data.generic_variant.GenericVariant``): ``from_python``, ``from_arrow_struct``,
``to_arrow_array``, ``value()``, ``metadata()``, ``to_python()``. The encoder makes the same
choices as Java's and pypaimon's builders (smallest integer width, DECIMAL4/8/16 by precision,
object fields sorted by key with values in insertion order, keys in first-seen order), so a value
built here is byte-identical to pypaimon's.
"""

from __future__ import annotations

import calendar
import datetime
import decimal
import struct
import uuid
from typing import Any, Iterable, List, Optional, Tuple

__all__ = ["GenericVariant"]

# basic types (two low bits of a value's header byte)
_PRIMITIVE, _SHORT_STR, _OBJECT, _ARRAY = 0, 1, 2, 3
# primitive type ids (six high bits), Parquet Variant encoding spec
_NULL, _TRUE, _FALSE = 0, 1, 2
_INT8, _INT16, _INT32, _INT64 = 3, 4, 5, 6
_DOUBLE = 7
_DECIMAL4, _DECIMAL8, _DECIMAL16 = 8, 9, 10
_DATE, _TIMESTAMP, _TIMESTAMP_NTZ = 11, 12, 13
_FLOAT, _BINARY, _STRING = 14, 15, 16
_TIME_NTZ, _TIMESTAMP_NANOS, _TIMESTAMP_NTZ_NANOS, _UUID = 17, 18, 19, 20

_VERSION = 1
_MAX_SHORT_STR = 63
_SIZE_LIMIT = 128 * 1024 * 1024  # Java's GenericVariant / BinaryVariant size limit
_EPOCH_DATE = datetime.date(1970, 1, 1)
_EPOCH_UTC = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
_EPOCH_NTZ = datetime.datetime(1970, 1, 1)
# payload bytes after the header byte of the fixed-width primitives
_FIXED = {_NULL: 0, _TRUE: 0, _FALSE: 0, _INT8: 1, _INT16: 2, _INT32: 4, _INT64: 8, _DOUBLE: 8,
          _DECIMAL4: 5, _DECIMAL8: 9, _DECIMAL16: 17, _DATE: 4, _TIMESTAMP: 8, _TIMESTAMP_NTZ: 8,
          _FLOAT: 4, _TIME_NTZ: 8, _TIMESTAMP_NANOS: 8, _TIMESTAMP_NTZ_NANOS: 8, _UUID: 16}


def _width(n: int) -> int:
    """Bytes (1-4) needed for an unsigned ``n``."""
    return 1 if n < 0x100 else 2 if n < 0x10000 else 3 if n < 0x1000000 else 4


def _uint(data: bytes, pos: int, n: int) -> int:
    if pos < 0 or pos + n > len(data):
        raise ValueError("MALFORMED_VARIANT: read past the end of the value")
    return int.from_bytes(data[pos:pos + n], "little", signed=False)


def _sint(data: bytes, pos: int, n: int) -> int:
    if pos < 0 or pos + n > len(data):
        raise ValueError("MALFORMED_VARIANT: read past the end of the value")
    return int.from_bytes(data[pos:pos + n], "little", signed=True)


def _check_sizes(value_size: int, metadata_size: int) -> None:
    if value_size > _SIZE_LIMIT or metadata_size > _SIZE_LIMIT:
        raise ValueError("VARIANT_CONSTRUCTOR_SIZE_LIMIT")


def _micros(dt: datetime.datetime) -> int:
    if dt.tzinfo is not None:
        dt = dt.astimezone(datetime.timezone.utc)
    return calendar.timegm(dt.timetuple()) * 1_000_000 + dt.microsecond


class _Encoder:
    """Builds one value and its key dictionary."""

    def __init__(self) -> None:
        self.buf = bytearray()
        self.keys: List[bytes] = []
        self.key_ids: dict = {}

    def _prim(self, type_id: int, payload: bytes = b"") -> None:
        self.buf.append(type_id << 2 | _PRIMITIVE)
        self.buf += payload

    def key_id(self, key: str) -> int:
        if not isinstance(key, str):
            raise TypeError(f"VARIANT object keys must be str, got {type(key).__name__}")
        kid = self.key_ids.get(key)
        if kid is None:
            kid = self.key_ids[key] = len(self.keys)
            self.keys.append(key.encode("utf-8"))
        return kid

    def long(self, n: int) -> None:
        for type_id, size in ((_INT8, 1), (_INT16, 2), (_INT32, 4), (_INT64, 8)):
            if -(1 << (8 * size - 1)) <= n < (1 << (8 * size - 1)):
                self._prim(type_id, n.to_bytes(size, "little", signed=True))
                return
        raise ValueError(f"VARIANT integer {n} does not fit in 64 bits")

    def decimal(self, d: decimal.Decimal) -> None:
        sign, digits, exponent = d.as_tuple()
        if not isinstance(exponent, int) or exponent > 0 or len(digits) > 38 or -exponent > 38:
            # NaN / infinity, a positive exponent or more than 38 digits: no VARIANT decimal
            self._prim(_DOUBLE, struct.pack("<d", float(d)))
            return
        scale = -exponent
        unscaled = int("".join(map(str, digits)) or "0") * (-1 if sign else 1)
        precision = max(1, len(str(abs(unscaled))))
        if precision <= 9 and scale <= 9:
            self._prim(_DECIMAL4, bytes([scale]) + unscaled.to_bytes(4, "little", signed=True))
        elif precision <= 18 and scale <= 18:
            self._prim(_DECIMAL8, bytes([scale]) + unscaled.to_bytes(8, "little", signed=True))
        else:
            self._prim(_DECIMAL16, bytes([scale]) + unscaled.to_bytes(16, "little", signed=True))

    def string(self, s: str) -> None:
        b = s.encode("utf-8")
        if len(b) <= _MAX_SHORT_STR:
            self.buf.append(len(b) << 2 | _SHORT_STR)
            self.buf += b
        else:
            self._prim(_STRING, len(b).to_bytes(4, "little") + b)

    def add(self, obj: Any) -> None:
        if obj is None:
            self._prim(_NULL)
        elif isinstance(obj, bool):
            self._prim(_TRUE if obj else _FALSE)
        elif isinstance(obj, int):
            self.long(obj)
        elif isinstance(obj, float):
            self._prim(_DOUBLE, struct.pack("<d", obj))
        elif isinstance(obj, decimal.Decimal):
            self.decimal(obj)
        elif isinstance(obj, str):
            self.string(obj)
        elif isinstance(obj, dict):
            self.obj(obj)
        elif isinstance(obj, (list, tuple)):
            self.array(obj)
        elif isinstance(obj, bytes):
            self._prim(_BINARY, len(obj).to_bytes(4, "little") + obj)
        elif isinstance(obj, uuid.UUID):
            self._prim(_UUID, obj.bytes)  # big endian, as the spec says
        elif isinstance(obj, datetime.datetime):
            t = _TIMESTAMP if obj.tzinfo is not None else _TIMESTAMP_NTZ
            self._prim(t, _micros(obj).to_bytes(8, "little", signed=True))
        elif isinstance(obj, datetime.date):
            self._prim(_DATE, (obj - _EPOCH_DATE).days.to_bytes(4, "little", signed=True))
        else:
            raise TypeError(f"Unsupported Python type for variant encoding: {type(obj).__name__}")

    def obj(self, d: dict) -> None:
        start = len(self.buf)
        fields: List[Tuple[bytes, int, int]] = []
        for k, v in d.items():
            kid = self.key_id(k)
            fields.append((self.keys[kid], kid, len(self.buf) - start))
            self.add(v)
        fields.sort(key=lambda f: f[0])
        data = bytes(self.buf[start:])
        del self.buf[start:]
        n = len(fields)
        large = n > 0xFF
        id_w = _width(max((f[1] for f in fields), default=0))
        off_w = _width(len(data))
        self.buf.append(((1 if large else 0) << 4 | (id_w - 1) << 2 | (off_w - 1)) << 2 | _OBJECT)
        self.buf += n.to_bytes(4 if large else 1, "little")
        for _, kid, _ in fields:
            self.buf += kid.to_bytes(id_w, "little")
        for _, _, off in fields:
            self.buf += off.to_bytes(off_w, "little")
        self.buf += len(data).to_bytes(off_w, "little")
        self.buf += data

    def array(self, items: Iterable[Any]) -> None:
        start = len(self.buf)
        offsets = []
        for v in items:
            offsets.append(len(self.buf) - start)
            self.add(v)
        data = bytes(self.buf[start:])
        del self.buf[start:]
        n = len(offsets)
        large = n > 0xFF
        off_w = _width(len(data))
        self.buf.append(((1 if large else 0) << 2 | (off_w - 1)) << 2 | _ARRAY)
        self.buf += n.to_bytes(4 if large else 1, "little")
        for off in offsets + [len(data)]:
            self.buf += off.to_bytes(off_w, "little")
        self.buf += data

    def metadata(self) -> bytes:
        total = sum(len(k) for k in self.keys)
        off_w = _width(max(total, len(self.keys)))
        out = bytearray([_VERSION | (off_w - 1) << 6])
        out += len(self.keys).to_bytes(off_w, "little")
        off = 0
        for k in self.keys:
            out += off.to_bytes(off_w, "little")
            off += len(k)
        out += off.to_bytes(off_w, "little")
        for k in self.keys:
            out += k
        return bytes(out)


def _object_layout(value: bytes, pos: int) -> Tuple[int, int, int, int, int, int]:
    """(size, id width, offset width, id start, offset start, data start) of an object."""
    info = value[pos] >> 2
    large = (info >> 4) & 1
    size_w = 4 if large else 1
    size = _uint(value, pos + 1, size_w)
    id_w, off_w = ((info >> 2) & 3) + 1, (info & 3) + 1
    id_start = pos + 1 + size_w
    off_start = id_start + size * id_w
    return size, id_w, off_w, id_start, off_start, off_start + (size + 1) * off_w


def _array_layout(value: bytes, pos: int) -> Tuple[int, int, int, int]:
    """(size, offset width, offset start, data start) of an array."""
    info = value[pos] >> 2
    size_w = 4 if (info >> 2) & 1 else 1
    size = _uint(value, pos + 1, size_w)
    off_w = (info & 3) + 1
    off_start = pos + 1 + size_w
    return size, off_w, off_start, off_start + (size + 1) * off_w


def _value_size(value: bytes, pos: int) -> int:
    """Bytes taken by the value starting at ``pos``."""
    if pos >= len(value):
        raise ValueError("MALFORMED_VARIANT: value position out of range")
    basic, info = value[pos] & 3, value[pos] >> 2
    if basic == _SHORT_STR:
        return 1 + info
    if basic == _OBJECT:
        size, _, off_w, _, off_start, data_start = _object_layout(value, pos)
        return data_start - pos + _uint(value, off_start + size * off_w, off_w)
    if basic == _ARRAY:
        size, off_w, off_start, data_start = _array_layout(value, pos)
        return data_start - pos + _uint(value, off_start + size * off_w, off_w)
    if info in (_BINARY, _STRING):
        return 5 + _uint(value, pos + 1, 4)
    if info in _FIXED:
        return 1 + _FIXED[info]
    raise ValueError(f"MALFORMED_VARIANT: unknown primitive type id {info}")


def _metadata_key(metadata: bytes, key_id: int) -> str:
    off_w = ((metadata[0] >> 6) & 3) + 1
    n = _uint(metadata, 1, off_w)
    if key_id >= n:
        raise ValueError("MALFORMED_VARIANT: key id out of range")
    strings = 1 + (n + 2) * off_w
    a = _uint(metadata, 1 + (key_id + 1) * off_w, off_w)
    b = _uint(metadata, 1 + (key_id + 2) * off_w, off_w)
    return metadata[strings + a:strings + b].decode("utf-8")


def _decode(value: bytes, metadata: bytes, pos: int) -> Any:
    if pos >= len(value):
        raise ValueError("MALFORMED_VARIANT: value position out of range")
    basic, info = value[pos] & 3, value[pos] >> 2
    if basic == _SHORT_STR:
        return value[pos + 1:pos + 1 + info].decode("utf-8")
    if basic == _OBJECT:
        size, id_w, off_w, id_start, off_start, data_start = _object_layout(value, pos)
        return {
            _metadata_key(metadata, _uint(value, id_start + i * id_w, id_w)):
                _decode(value, metadata, data_start + _uint(value, off_start + i * off_w, off_w))
            for i in range(size)
        }
    if basic == _ARRAY:
        size, off_w, off_start, data_start = _array_layout(value, pos)
        return [_decode(value, metadata, data_start + _uint(value, off_start + i * off_w, off_w))
                for i in range(size)]
    p = pos + 1
    if info == _NULL:
        return None
    if info in (_TRUE, _FALSE):
        return info == _TRUE
    if info in (_INT8, _INT16, _INT32, _INT64):
        return _sint(value, p, _FIXED[info])
    if info == _DOUBLE:
        return struct.unpack_from("<d", value, p)[0]
    if info == _FLOAT:
        return float(struct.unpack_from("<f", value, p)[0])
    if info in (_DECIMAL4, _DECIMAL8, _DECIMAL16):
        scale = value[p]
        unscaled = _sint(value, p + 1, _FIXED[info] - 1)
        # from the digits, not by arithmetic: the context's 28 digits would round DECIMAL16
        digits = tuple(int(c) for c in str(abs(unscaled)))
        return decimal.Decimal((1 if unscaled < 0 else 0, digits, -scale))
    if info in (_STRING, _BINARY):
        n = _uint(value, p, 4)
        raw = bytes(value[p + 4:p + 4 + n])
        return raw.decode("utf-8") if info == _STRING else raw
    if info == _DATE:
        return _EPOCH_DATE + datetime.timedelta(days=_sint(value, p, 4))
    if info == _TIMESTAMP:
        return _EPOCH_UTC + datetime.timedelta(microseconds=_sint(value, p, 8))
    if info == _TIMESTAMP_NTZ:
        return _EPOCH_NTZ + datetime.timedelta(microseconds=_sint(value, p, 8))
    if info == _TIMESTAMP_NANOS:  # Python's datetime holds microseconds: the nanos are floored
        return _EPOCH_UTC + datetime.timedelta(microseconds=_sint(value, p, 8) // 1000)
    if info == _TIMESTAMP_NTZ_NANOS:
        return _EPOCH_NTZ + datetime.timedelta(microseconds=_sint(value, p, 8) // 1000)
    if info == _TIME_NTZ:
        return (datetime.datetime.min + datetime.timedelta(microseconds=_sint(value, p, 8))).time()
    if info == _UUID:
        return uuid.UUID(bytes=bytes(value[p:p + 16]))
    raise ValueError(f"MALFORMED_VARIANT: unknown primitive type id {info}")


class GenericVariant:
    """One VARIANT value: its ``value`` and ``metadata`` bytes (pypaimon's ``GenericVariant``).

    Write::

        col = GenericVariant.to_arrow_array([GenericVariant.from_python({"age": 30}), None])
        table.new_batch_write_builder()...write_arrow(pa.table({"id": [1, 2], "v": col}))

    Read: a VARIANT column comes back as ``struct<value, metadata>``;
    ``GenericVariant.from_arrow_struct(row).to_python()`` decodes one row.
    """

    __slots__ = ("_value", "_metadata", "_pos")

    def __init__(self, value: bytes, metadata: bytes, _pos: int = 0):
        _check_sizes(len(value), len(metadata))
        if len(metadata) < 1 or (metadata[0] & 0x0F) != _VERSION:
            raise ValueError("MALFORMED_VARIANT: invalid metadata version")
        self._value = bytes(value)
        self._metadata = bytes(metadata)
        self._pos = _pos

    @classmethod
    def from_python(cls, obj: Any) -> GenericVariant:
        """Encode None, bool, int, float, Decimal, str, bytes, date, datetime (aware: TIMESTAMP,
        naive: TIMESTAMP_NTZ), UUID, dict (str keys) and list/tuple, nested."""
        enc = _Encoder()
        enc.add(obj)
        metadata = enc.metadata()
        _check_sizes(len(enc.buf), len(metadata))
        return cls(bytes(enc.buf), metadata)

    @classmethod
    def from_arrow_struct(cls, d: dict) -> GenericVariant:
        """Wrap one row of a VARIANT Arrow column (``{"value": bytes, "metadata": bytes}``)."""
        return cls(bytes(d["value"]), bytes(d["metadata"]))

    @classmethod
    def to_arrow_array(cls, variants: Iterable[Optional[GenericVariant]]):
        """A ``struct<value: binary NOT NULL, metadata: binary NOT NULL>`` array of the values,
        ``None`` for a SQL NULL row: the column form paimon_rs (and pypaimon) write."""
        import pyarrow as pa

        values, metas, mask = [], [], []
        for v in variants:
            values.append(b"" if v is None else v.value())
            metas.append(b"" if v is None else v.metadata())
            mask.append(v is None)
        fields = [pa.field("value", pa.binary(), nullable=False),
                  pa.field("metadata", pa.binary(), nullable=False)]
        return pa.StructArray.from_arrays(
            [pa.array(values, pa.binary()), pa.array(metas, pa.binary())],
            fields=fields, mask=pa.array(mask, pa.bool_()))

    def value(self) -> bytes:
        """The encoded value bytes."""
        if self._pos == 0:
            return self._value
        return self._value[self._pos:self._pos + _value_size(self._value, self._pos)]

    def metadata(self) -> bytes:
        """The metadata (key dictionary) bytes."""
        return self._metadata

    def to_python(self) -> Any:
        """Decode: object -> dict, array -> list, integers -> int, float/double -> float,
        decimal -> Decimal, string -> str, binary -> bytes, date -> date, timestamp -> aware
        (UTC) datetime, timestamp_ntz -> naive datetime, uuid -> UUID, null -> None."""
        return _decode(self._value, self._metadata, self._pos)

    def __repr__(self) -> str:
        return f"GenericVariant({self.to_python()!r})"

    def __str__(self) -> str:
        return str(self.to_python())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, GenericVariant):
            return NotImplemented
        return self.value() == other.value() and self._metadata == other._metadata

    def __hash__(self) -> int:
        return hash((self.value(), self._metadata))
