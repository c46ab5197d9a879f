"""VARIANT path functions over Arrow VARIANT columns, with pypaimon's names and signatures.

pypaimon (``pypaimon.data``: ``variant_get``, ``variant_replace``, ``variant_set``,
``variant_to_pylist``) reads, replaces and upserts paths of a VARIANT column given as a PyArrow
``struct<value: binary, metadata: binary>`` Array or ChunkedArray (what a paimon_rs read returns
for a VARIANT column, and what :meth:`GenericVariant.to_arrow_array` builds). These are the same
functions over the Parquet Variant binary encoding. ``variant_get`` of scalar types (dates,
microsecond timestamps and decimals included) and of nested ones (structs, lists, maps, any
depth), and ``variant_replace`` / ``variant_set`` run each chunk through a Rust kernel
(``_core.variant_get_scalars``, ``_core.variant_get_nested``, ``_core.variant_edit``: the GIL
released, the same checks, order and messages); the plain Python below stays the reference (the
kernels' oracle in the tests), reads ``variant_to_pylist``, and takes the rare rows a kernel
leaves (pypaimon vectorises with NumPy; the results are the same):

- paths: ``$`` (the root), ``.key``, ``['key']`` / ``["key"]`` (any key, dots included), ``[n]``;
  anything else is ``ValueError("Invalid VARIANT path: ...")``;
- no implicit casts: ``variant_get(column, '$.a', pa.float64())`` reads a DOUBLE and refuses a
  FLOAT, an integer or a string with ``TypeError("VARIANT path type does not match double")``;
  integers read as any signed Arrow integer; struct, list, fixed-size list and string-keyed map
  types read objects and arrays; a missing path or a VARIANT null reads as an Arrow null;
- replacements are a ``pa.Scalar`` (every row) or a ``pa.Array`` / ``pa.ChunkedArray`` (one per
  row, same length) of a scalar type; an Arrow null becomes a VARIANT null; the stored type must
  match (a VARIANT null matches anything); SQL null rows stay null;
- ``variant_replace`` leaves rows whose path is missing unchanged (``strict=True``: ValueError);
  ``variant_set`` also inserts a missing final object key (the key appended to the row's metadata
  dictionary when new, the field placed in the object by its UTF-8 name, as Java's binary search
  needs), and refuses a missing parent, a non-object parent and an array index past the end;
- a row whose bytes are not a valid encoding raises ``ValueError("MALFORMED_VARIANT: ...")``;
  every row the functions read is checked whole (container offsets, field ids against the
  metadata dictionary, duplicate ids, sizes), iteratively, so deep values are fine;
- the input is never modified; unchanged chunks are returned as they are (and the column itself
  when nothing changed); the metadata child is reused when no key was added; chunk boundaries,
  ``binary`` / ``large_binary`` and the field types are kept.
"""

from __future__ import annotations

import datetime
import decimal
import re
import struct
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import paimon_rs._core as _core
from paimon_rs.variant import (
    _ARRAY,
    _BINARY,
    _DATE,
    _DECIMAL4,
    _DECIMAL8,
    _DECIMAL16,
    _DOUBLE,
    _FALSE,
    _FIXED,
    _FLOAT,
    _INT8,
    _INT16,
    _INT32,
    _INT64,
    _NULL,
    _OBJECT,
    _PRIMITIVE,
    _SHORT_STR,
    _STRING,
    _TIMESTAMP,
    _TIMESTAMP_NTZ,
    _TRUE,
    _VERSION,
    _check_sizes,
    _decode,
    _Encoder,
    _width,
)

__all__ = ["variant_get", "variant_replace", "variant_set", "variant_to_pylist"]

_Path = Tuple[Tuple[str, Any], ...]
_INDEX = re.compile(r"\[(\d+)\]")
_KEY = re.compile(r"\.([^.\[]+)|\['([^']+)'\]|\[\"([^\"]+)\"\]")
_INTS = (_INT8, _INT16, _INT32, _INT64)
_DECIMALS = {_DECIMAL4: 9, _DECIMAL8: 18, _DECIMAL16: 38}


def _malformed(what: str) -> None:
    raise ValueError(f"MALFORMED_VARIANT: {what}")


# ---------------------------------------------------------------------------------------------
# paths


def _parse_path(path: Any) -> _Path:
    if not isinstance(path, str) or not path.startswith("$"):
        raise ValueError(f"Invalid VARIANT path: {path}")
    segments: List[Tuple[str, Any]] = []
    pos = 1
    while pos < len(path):
        m = _INDEX.match(path, pos)
        if m is not None:
            segments.append(("index", int(m.group(1))))
        else:
            m = _KEY.match(path, pos)
            if m is None:
                raise ValueError(f"Invalid VARIANT path: {path}")
            segments.append(("key", next(g for g in m.groups() if g is not None)))
        pos = m.end()
    return tuple(segments)


def _check_distinct(parsed: Sequence[Tuple[str, _Path, Any]]) -> None:
    for i, (_, first, _) in enumerate(parsed):
        for _, second, _ in parsed[i + 1:]:
            n = min(len(first), len(second))
            if first[:n] == second[:n]:
                raise ValueError("VARIANT replacement paths must not overlap")


# ---------------------------------------------------------------------------------------------
# the binary encoding, checked


def _need(pos: int, size: int, limit: int) -> None:
    if pos < 0 or size < 0 or pos + size > limit:
        _malformed("value is truncated")


def _u(data: bytes, pos: int, n: int) -> int:
    return int.from_bytes(data[pos:pos + n], "little")


_UINT_CODE = {1: "B", 2: "H", 4: "I"}


def _uints(data: bytes, pos: int, count: int, width: int) -> List[int]:
    """``count`` little-endian unsigned ``width``-byte integers from ``pos`` (in range)."""
    code = _UINT_CODE.get(width)
    if code is not None:
        return list(struct.unpack_from(f"<{count}{code}", data, pos))
    return [_u(data, pos + i * width, width) for i in range(count)]


def _metadata_keys(metadata: bytes) -> List[str]:
    """The dictionary's keys by id; the metadata checked whole."""
    if not metadata:
        _malformed("empty metadata")
    if metadata[0] & 0x0F != _VERSION:
        _malformed("invalid metadata version")
    w = ((metadata[0] >> 6) & 3) + 1
    _need(1, w, len(metadata))
    n = _u(metadata, 1, w)
    strings = 1 + (n + 2) * w
    _need(1 + w, (n + 1) * w, len(metadata))
    offsets = [_u(metadata, 1 + (i + 1) * w, w) for i in range(n + 1)]
    if offsets[0] != 0 or offsets[-1] != len(metadata) - strings or any(
            b < a for a, b in zip(offsets, offsets[1:])):
        _malformed("invalid metadata offsets")
    keys = []
    for a, b in zip(offsets, offsets[1:]):
        try:
            keys.append(metadata[strings + a:strings + b].decode("utf-8"))
        except UnicodeDecodeError:
            _malformed("invalid metadata string")
    if len(set(keys)) != len(keys):
        _malformed("duplicate metadata key")
    return keys


def _object(value: bytes, pos: int, end: int) -> Tuple[List[int], List[Tuple[int, int]]]:
    """Field ids and (start, end) of each child, in stored order, of the object at [pos, end)."""
    _need(pos, 2, end)
    info = value[pos] >> 2
    size_w = 4 if (info >> 4) & 1 else 1
    _need(pos + 1, size_w, end)
    n = _u(value, pos + 1, size_w)
    id_w, off_w = ((info >> 2) & 3) + 1, (info & 3) + 1
    id_start = pos + 1 + size_w
    off_start = id_start + n * id_w
    data = off_start + (n + 1) * off_w
    _need(pos, data - pos, end)
    # rows of one shape share their objects' headers: parse and check each header once (headers
    # up to 1 KiB, at most 4096 of them: the cache stays a few MiB)
    if data - pos > 1024:
        hit = _object_header(value, pos, n, id_start, id_w, off_start, off_w, data, end)
    else:
        key = (value[pos:data], end - pos)
        hit = _OBJECT_LAYOUTS.get(key)
        if hit is None:
            if len(_OBJECT_LAYOUTS) > 4096:
                _OBJECT_LAYOUTS.clear()
            hit = _OBJECT_LAYOUTS[key] = _object_header(value, pos, n, id_start, id_w, off_start,
                                                        off_w, data, end)
    ids, children = hit
    return ids, [(pos + a, pos + b) for a, b in children] if pos else children


_OBJECT_LAYOUTS: Dict[Tuple[bytes, int], Tuple[List[int], List[Tuple[int, int]]]] = {}


def _object_header(value: bytes, pos: int, n: int, id_start: int, id_w: int, off_start: int,
                   off_w: int, data: int, end: int) -> Tuple[List[int], List[Tuple[int, int]]]:
    """:func:`_object`'s ids and children, positions relative to ``pos``; checked."""
    ids = _uints(value, id_start, n, id_w)
    offsets = _uints(value, off_start, n + 1, off_w)
    total = offsets[-1]
    if data + total != end:
        _malformed("object size does not match its container")
    if len(set(ids)) != n:
        _malformed("duplicate object field id")
    starts = offsets[:-1]
    if (len(set(starts)) != n or any(o >= total for o in starts) or (n and min(starts) != 0)
            or (not n and total != 0)):
        _malformed("invalid object offsets")
    ordered = sorted(starts) + [total]
    next_of = dict(zip(ordered, ordered[1:]))
    base = data - pos
    return ids, [(base + o, base + next_of[o]) for o in starts]


def _array(value: bytes, pos: int, end: int) -> List[Tuple[int, int]]:
    """(start, end) of each element of the array at [pos, end)."""
    _need(pos, 2, end)
    info = value[pos] >> 2
    size_w = 4 if (info >> 2) & 1 else 1
    _need(pos + 1, size_w, end)
    n = _u(value, pos + 1, size_w)
    off_w = (info & 3) + 1
    off_start = pos + 1 + size_w
    data = off_start + (n + 1) * off_w
    _need(pos, data - pos, end)
    offsets = _uints(value, off_start, n + 1, off_w)
    if offsets[0] != 0 or any(b < a for a, b in zip(offsets, offsets[1:])):
        _malformed("invalid array offsets")
    if data + offsets[-1] != end:
        _malformed("array size does not match its container")
    return [(data + a, data + b) for a, b in zip(offsets, offsets[1:])]


def _scalar_size(value: bytes, pos: int, end: int) -> int:
    basic, info = value[pos] & 3, value[pos] >> 2
    if basic == _SHORT_STR:
        return 1 + info
    if info in (_BINARY, _STRING):
        _need(pos + 1, 4, end)
        return 5 + _u(value, pos + 1, 4)
    if info not in _FIXED:
        _malformed(f"unknown primitive type {info}")
    size = 1 + _FIXED[info]
    if info in _DECIMALS:
        _need(pos, size, end)
        unscaled = int.from_bytes(value[pos + 2:pos + size], "little", signed=True)
        if value[pos + 1] > _DECIMALS[info] or len(str(abs(unscaled))) > _DECIMALS[info]:
            _malformed("invalid decimal precision or scale")
    return size


def _check_value(value: bytes, pos: int, end: int, row: _Row) -> None:
    """That [pos, end) holds exactly one well-formed value, its field ids in the row's metadata
    dictionary (iterative: no recursion limit)."""
    stack = [(pos, end)]
    while stack:
        p, e = stack.pop()
        _need(p, 1, e)
        basic = value[p] & 3
        if basic == _OBJECT:
            ids, children = row.obj(p, e)
            if ids and max(ids) >= len(row.keys):
                _malformed("object field id is not in the metadata dictionary")
            stack.extend(children)
        elif basic == _ARRAY:
            stack.extend(row.arr(p, e))
        elif _scalar_size(value, p, e) != e - p:
            _malformed("child size does not match container offsets")


def _type_of(value: bytes, pos: int) -> Tuple[int, int]:
    """(basic type, primitive id; a short string counts as STRING)."""
    basic, info = value[pos] & 3, value[pos] >> 2
    if basic == _SHORT_STR:
        return _PRIMITIVE, _STRING
    return basic, info


class _Row:
    """One checked row: its value bytes, metadata, and the metadata's keys (parsed on first use:
    a value without objects and a path without keys never need the dictionary)."""

    __slots__ = ("value", "metadata", "_keys", "_ids", "_cache", "_layouts")

    def __init__(self, value: bytes, metadata: bytes, cache: Dict[bytes, Any]):
        if not metadata:
            _malformed("empty metadata")
        if metadata[0] & 0x0F != _VERSION:
            _malformed("invalid metadata version")
        self.value, self.metadata, self._cache = value, metadata, cache
        self._layouts: Dict[Tuple[int, int], Any] = {}
        self._keys: Optional[List[str]] = None
        self._ids: Optional[Dict[str, int]] = None
        _check_value(value, 0, len(value), self)

    def obj(self, pos: int, end: int) -> Tuple[List[int], List[Tuple[int, int]]]:
        """:func:`_object` of the current value, parsed once."""
        got = self._layouts.get((pos, end))
        if got is None:
            got = self._layouts[(pos, end)] = _object(self.value, pos, end)
        return got

    def arr(self, pos: int, end: int) -> List[Tuple[int, int]]:
        """:func:`_array` of the current value, parsed once."""
        got = self._layouts.get((pos, end))
        if got is None:
            got = self._layouts[(pos, end)] = _array(self.value, pos, end)
        return got

    def set_value(self, value: bytes) -> None:
        self.value = value
        self._layouts = {}

    def _parse_keys(self) -> None:
        hit = self._cache.get(self.metadata)
        if hit is None:
            keys = _metadata_keys(self.metadata)
            hit = self._cache[self.metadata] = (keys, {k: i for i, k in enumerate(keys)})
        self._keys, self._ids = hit

    @property
    def keys(self) -> List[str]:
        """The metadata dictionary's keys by id (shared between rows: never modified)."""
        if self._keys is None:
            self._parse_keys()
        return self._keys

    @property
    def ids(self) -> Dict[str, int]:
        """Key -> id (shared between rows: never modified)."""
        if self._ids is None:
            self._parse_keys()
        return self._ids

    def add_key(self, key: str) -> None:
        """Append ``key`` to this row's dictionary (copies: the shared ones stay as parsed)."""
        self._keys = self.keys + [key]
        self._ids = dict(self.ids)
        self._ids[key] = len(self._keys) - 1

    def walk(self, path: _Path) -> Tuple[List[Tuple[int, int]], Optional[Tuple[int, int]]]:
        """The (start, end) of each container visited, and of the target (None: missing)."""
        v = self.value
        here = (0, len(v))
        frames: List[Tuple[int, int]] = []
        for kind, seg in path:
            frames.append(here)
            p, e = here
            basic = v[p] & 3
            if kind == "key":
                kid = self.ids.get(seg)
                if basic != _OBJECT or kid is None:
                    return frames, None
                ids, children = self.obj(p, e)
                if kid not in ids:
                    return frames, None
                here = children[ids.index(kid)]
            else:
                if basic != _ARRAY:
                    return frames, None
                children = self.arr(p, e)
                if seg >= len(children):
                    return frames, None
                here = children[seg]
        return frames, here


def _build_object(fields: List[Tuple[int, bytes]]) -> bytes:
    data = b"".join(b for _, b in fields)
    n = len(fields)
    id_w = _width(max((i for i, _ in fields), default=0))
    off_w = _width(len(data))
    large = n > 0xFF
    out = bytearray([((1 if large else 0) << 4 | (id_w - 1) << 2 | (off_w - 1)) << 2 | _OBJECT])
    out += n.to_bytes(4 if large else 1, "little")
    for i, _ in fields:
        out += i.to_bytes(id_w, "little")
    off = 0
    for _, b in fields:
        out += off.to_bytes(off_w, "little")
        off += len(b)
    out += off.to_bytes(off_w, "little")
    return bytes(out + data)


def _build_array(items: List[bytes]) -> bytes:
    data = b"".join(items)
    n = len(items)
    off_w = _width(len(data))
    large = n > 0xFF
    out = bytearray([((1 if large else 0) << 2 | (off_w - 1)) << 2 | _ARRAY])
    out += n.to_bytes(4 if large else 1, "little")
    off = 0
    for b in items:
        out += off.to_bytes(off_w, "little")
        off += len(b)
    out += off.to_bytes(off_w, "little")
    return bytes(out + data)


def _rebuild(row: _Row, path: _Path, frames: List[Tuple[int, int]], new: bytes,
             insert: Optional[Tuple[int, str]] = None) -> bytes:
    """The row's value with the target of ``path`` replaced by ``new`` (``insert``: key id and
    name of a field added to the object at the last frame instead), rebuilt bottom-up."""
    v = row.value
    child = new
    for depth in range(len(frames) - 1, -1, -1):
        p, e = frames[depth]
        kind, seg = path[depth]
        if kind == "key":
            ids, children = row.obj(p, e)
            fields = [(i, v[a:b]) for i, (a, b) in zip(ids, children)]
            if insert is not None and depth == len(frames) - 1:
                kid, name = insert
                key = name.encode("utf-8")
                at = next((j for j, (i, _) in enumerate(fields)
                           if row.keys[i].encode("utf-8") > key), len(fields))
                fields.insert(at, (kid, child))
            else:
                j = ids.index(row.ids[seg])
                fields[j] = (fields[j][0], child)
            child = _build_object(fields)
        else:
            items = [v[a:b] for a, b in row.arr(p, e)]
            items[seg] = child
            child = _build_array(items)
    return child


def _metadata_with(keys: List[str]) -> bytes:
    encoded = [k.encode("utf-8") for k in keys]
    total = sum(len(k) for k in encoded)
    w = _width(max(total, len(encoded)))
    out = bytearray([_VERSION | (w - 1) << 6])
    out += len(encoded).to_bytes(w, "little")
    off = 0
    for k in encoded:
        out += off.to_bytes(w, "little")
        off += len(k)
    out += off.to_bytes(w, "little")
    return bytes(out + b"".join(encoded))


# ---------------------------------------------------------------------------------------------
# Arrow types


def _pa():
    import pyarrow as pa

    return pa


def _check_decimal_scale(t) -> None:
    pa = _pa()
    if pa.types.is_decimal(t) and t.scale < 0:
        raise ValueError("VARIANT decimal scale must be non-negative")
    if pa.types.is_struct(t):
        for f in t:
            _check_decimal_scale(f.type)
    elif pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        _check_decimal_scale(t.value_type)
    elif pa.types.is_map(t):
        _check_decimal_scale(t.item_type)


def _scalar_type(t, replacement: bool) -> bool:
    pa = _pa()
    return ((replacement and pa.types.is_null(t)) or pa.types.is_boolean(t)
            or pa.types.is_signed_integer(t) or pa.types.is_float32(t) or pa.types.is_float64(t)
            or pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)
            or pa.types.is_large_binary(t) or pa.types.is_date32(t) or pa.types.is_decimal128(t)
            or (pa.types.is_timestamp(t) and t.unit == "us"))


def _readable_type(t) -> bool:
    pa = _pa()
    if _scalar_type(t, False):
        return True
    if pa.types.is_struct(t):
        return all(_readable_type(f.type) for f in t)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return _readable_type(t.value_type)
    if pa.types.is_map(t):
        return ((pa.types.is_string(t.key_type) or pa.types.is_large_string(t.key_type))
                and _readable_type(t.item_type))
    return False


def _scalar_matches(value: bytes, pos: int, t) -> bool:
    """Whether the stored scalar at ``pos`` is exactly of Arrow type ``t`` (a VARIANT null is)."""
    pa = _pa()
    basic, info = _type_of(value, pos)
    if pa.types.is_null(t) or (basic == _PRIMITIVE and info == _NULL):
        return True
    if basic != _PRIMITIVE:
        return False
    if pa.types.is_boolean(t):
        return info in (_TRUE, _FALSE)
    if pa.types.is_signed_integer(t):
        return info in _INTS
    if pa.types.is_float32(t):
        return info == _FLOAT
    if pa.types.is_float64(t):
        return info == _DOUBLE
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return info == _STRING
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return info == _BINARY
    if pa.types.is_date32(t):
        return info == _DATE
    if pa.types.is_timestamp(t):
        return info == (_TIMESTAMP if t.tz else _TIMESTAMP_NTZ)
    if pa.types.is_decimal128(t):
        return info in _DECIMALS and value[pos + 1] == t.scale
    return False


def _mismatch(t):
    return TypeError(f"VARIANT path type does not match {t}")


def _read_exact(row: _Row, pos: int, end: int, t) -> Any:
    """The value at [pos, end) as a Python value of Arrow type ``t``; no casts."""
    pa = _pa()
    v = row.value
    basic, info = _type_of(v, pos)
    if basic == _PRIMITIVE and info == _NULL:
        return None
    if pa.types.is_struct(t):
        if basic != _OBJECT:
            raise _mismatch(t)
        ids, children = row.obj(pos, end)
        by_name = {row.keys[i]: c for i, c in zip(ids, children)}
        return {f.name: None if f.name not in by_name else _read_exact(row, *by_name[f.name], f.type)
                for f in t}
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        if basic != _ARRAY:
            raise _mismatch(t)
        children = row.arr(pos, end)
        if pa.types.is_fixed_size_list(t) and len(children) != t.list_size:
            raise _mismatch(t)
        return [_read_exact(row, a, b, t.value_type) for a, b in children]
    if pa.types.is_map(t):
        if basic != _OBJECT:
            raise _mismatch(t)
        ids, children = row.obj(pos, end)
        return [(row.keys[i], _read_exact(row, a, b, t.item_type)) for i, (a, b) in zip(ids, children)]
    if not _scalar_matches(v, pos, t):
        raise _mismatch(t)
    return _decode(v, row.metadata, pos)


def _encode_scalar(py: Any, t) -> bytes:
    """The encoded VARIANT value of one Python value of Arrow scalar type ``t``."""
    pa = _pa()
    enc = _Encoder()
    if py is None:
        enc.add(None)
    elif pa.types.is_boolean(t):
        enc.add(bool(py))
    elif pa.types.is_integer(t):
        enc.long(int(py))
    elif pa.types.is_float64(t):
        enc.add(float(py))
    elif pa.types.is_float32(t):
        enc.buf += bytes([_FLOAT << 2 | _PRIMITIVE]) + struct.pack("<f", py)
    elif pa.types.is_string(t) or pa.types.is_large_string(t):
        enc.string(str(py))
    elif pa.types.is_binary(t) or pa.types.is_large_binary(t):
        enc.add(bytes(py))
    elif pa.types.is_date32(t) or pa.types.is_timestamp(t):
        if pa.types.is_timestamp(t) and not isinstance(py, datetime.datetime):
            raise TypeError(f"VARIANT timestamp replacement is not a datetime: {py!r}")
        enc.add(py)  # date -> DATE, aware datetime -> TIMESTAMP, naive -> TIMESTAMP_NTZ
    elif pa.types.is_decimal128(t):
        sign, digits, exponent = decimal.Decimal(py).as_tuple()
        unscaled = int("".join(map(str, digits)) or "0") * (-1 if sign else 1)
        shift = exponent + t.scale
        if shift < 0 and unscaled % (10 ** -shift):
            raise ValueError(f"{py} does not have Arrow scale {t.scale}")
        unscaled = unscaled * 10 ** shift if shift >= 0 else unscaled // 10 ** -shift
        precision = max(1, len(str(abs(unscaled))))
        if precision > t.precision:
            raise ValueError(f"{py} exceeds Arrow precision {t.precision}")
        kind = _DECIMAL4 if precision <= 9 and t.scale <= 9 else (
            _DECIMAL8 if precision <= 18 and t.scale <= 18 else _DECIMAL16)
        width = {_DECIMAL4: 4, _DECIMAL8: 8, _DECIMAL16: 16}[kind]
        enc.buf += bytes([kind << 2 | _PRIMITIVE, t.scale]) + unscaled.to_bytes(
            width, "little", signed=True)
    else:
        raise TypeError(f"Unsupported exact VARIANT replacement type: {t}")
    return bytes(enc.buf)


class _Replacement:
    """A replacement value: one scalar for every row, or one value per row."""

    def __init__(self, value: Any, length: int):
        pa = _pa()
        self.broadcast = isinstance(value, pa.Scalar)
        if self.broadcast:
            self.type, self._one, self._many = value.type, value.as_py(), None
            self._arrow = pa.repeat(value, 1)
        elif isinstance(value, (pa.Array, pa.ChunkedArray)):
            if len(value) != length:
                raise ValueError("VARIANT replacement length must match the input column")
            self.type, self._one, self._many = value.type, None, value
        else:
            raise TypeError("VARIANT replacement must be an Arrow Scalar or Array")
        _check_decimal_scale(self.type)
        if not _scalar_type(self.type, True):
            raise TypeError(f"Unsupported exact VARIANT replacement type: {self.type}")
        self._rows: Optional[List[Any]] = None
        self._scalar: Optional[bytes] = None

    def rows(self, base: int, length: int):
        """The Arrow values of rows ``base`` .. ``base + length`` (a scalar: its one value)."""
        if self._many is None:
            return self._arrow
        rows = self._many.slice(base, length)
        return rows.combine_chunks() if isinstance(rows, _pa().ChunkedArray) else rows

    def check_source(self, value: bytes, pos: int) -> None:
        if not _scalar_matches(value, pos, self.type):
            raise _mismatch(self.type)

    def encoded(self, row: int) -> bytes:
        if self._many is None:
            if self._scalar is None:
                self._scalar = _encode_scalar(self._one, self.type)
            return self._scalar
        if self._rows is None:
            self._rows = self._many.to_pylist()
        return _encode_scalar(self._rows[row], self.type)


# ---------------------------------------------------------------------------------------------
# columns


def _chunks(column) -> Tuple[list, bool, Any]:
    pa = _pa()
    if isinstance(column, pa.ChunkedArray):
        chunks, chunked, t = list(column.chunks), True, column.type
    elif isinstance(column, pa.Array):
        chunks, chunked, t = [column], False, column.type
    else:
        raise TypeError("VARIANT input must be a PyArrow Array or ChunkedArray")
    if not pa.types.is_struct(t) or [f.name for f in t] != ["value", "metadata"]:
        raise TypeError("VARIANT input must contain value and metadata fields")
    for i, name in ((0, "value"), (1, "metadata")):
        if not (pa.types.is_binary(t[i].type) or pa.types.is_large_binary(t[i].type)):
            raise TypeError(f"VARIANT {name} field must be binary")
    return chunks, chunked, t


def _rows(chunk) -> Tuple[List[Optional[bytes]], List[Optional[bytes]], List[bool]]:
    return (chunk.field(0).to_pylist(), chunk.field(1).to_pylist(),
            chunk.is_valid().to_pylist())


def _rebuilt_chunk(chunk, values: List[Optional[bytes]], metadata: Optional[List[Optional[bytes]]]):
    pa = _pa()
    t = chunk.type
    value_col = pa.array(values, type=t[0].type)
    meta_col = chunk.field(1) if metadata is None else pa.array(metadata, type=t[1].type)
    return pa.StructArray.from_arrays([value_col, meta_col], fields=list(t), mask=chunk.is_null())


def _parsed_replacements(path, replacement, length: int, omitted: str):
    if isinstance(path, Mapping):
        if replacement is not None:
            raise TypeError(f"VARIANT {omitted} must be omitted for path mappings")
        items = path
    else:
        items = {path: replacement}
    parsed = [(p, _parse_path(p), _Replacement(r, length)) for p, r in items.items()]
    _check_distinct(parsed)
    return parsed


def _edit(column, parsed, strict: bool, upsert: bool, kernel: bool = True):
    """``variant_replace`` / ``variant_set`` chunk by chunk: each through the Rust kernel
    (``_core.variant_edit``, the GIL released), or, for a row it leaves (a null child in a valid
    row, a decimal past its Arrow precision) or with ``kernel=False``, :func:`_edit_chunk`."""
    pa = _pa()
    chunks, chunked, t = _chunks(column)
    out, changed, base = [], False, 0
    cache: Dict[bytes, Any] = {}
    for chunk in chunks:
        handled = False
        if kernel:
            edits = [(_kernel_segments(path), repl.rows(base, len(chunk)), repl.broadcast, text,
                      str(repl.type)) for text, path, repl in parsed]
            handled, new = _core.variant_edit(chunk, edits, strict, upsert)
        if not handled:
            new = _edit_chunk(chunk, parsed, strict, upsert, base, cache)
        if new is None:
            out.append(chunk)
        else:
            out.append(new)
            changed = True
        base += len(chunk)
    if not changed:
        return column
    return pa.chunked_array(out, type=t) if chunked else out[0]


def _edit_chunk(chunk, parsed, strict: bool, upsert: bool, base: int, cache: Dict[bytes, Any]):
    """The reference of the Rust kernel for one chunk: the rebuilt chunk, None when no row
    changed (the kernel's oracle in tests/unit/test_variant_path.py)."""
    values, metas, valid = _rows(chunk)
    new_values = list(values)
    new_metas: Optional[List[Optional[bytes]]] = None
    touched = False
    # row by row, path by path: located (missing: refused with strict, or by variant_set when
    # its parent is), then its stored type checked; pypaimon's vectorised groups may report
    # another of several refusals first
    planned = []
    for r in range(len(chunk)):
        if not valid[r]:
            continue
        row = _Row(values[r], metas[r], cache)
        plans = []
        for text, path, repl in parsed:
            frames, target = row.walk(path)
            if target is not None:
                repl.check_source(row.value, target[0])
                plans.append((path, repl, None))
                continue
            if not upsert:
                if strict:
                    raise ValueError(f"VARIANT path does not exist: {text}")
                continue
            if len(frames) < len(path):
                raise ValueError(f"VARIANT parent path does not exist: {text}")
            if path[-1][0] != "key":
                raise ValueError(f"VARIANT array index insertion is not supported: {text}")
            if row.value[frames[-1][0]] & 3 != _OBJECT:
                raise ValueError(f"VARIANT parent path is not an object: {text}")
            plans.append((path, repl, path[-1][1]))
        planned.append((r, row, plans))
    for r, row, plans in planned:
        if not plans:
            continue
        added = False
        for _, _, key in plans:
            if key is not None and key not in row.ids:
                row.add_key(key)
                added = True
        value = row.value
        for path, repl, key in plans:
            frames, target = row.walk(path)
            new = repl.encoded(base + r)
            if key is not None and target is None:
                value = _rebuild(row, path, frames, new, (row.ids[key], key))
            else:
                value = _rebuild(row, path, frames, new)
            row.set_value(value)
        metadata = _metadata_with(row.keys) if added else metas[r]
        _check_sizes(len(value), len(metadata))
        if value != values[r] or metadata != metas[r]:
            new_values[r] = value
            touched = True
            if metadata != metas[r]:
                if new_metas is None:
                    new_metas = list(metas)
                new_metas[r] = metadata
    return _rebuilt_chunk(chunk, new_values, new_metas) if touched else None


# ---------------------------------------------------------------------------------------------
# the public functions (pypaimon's names and signatures)


def _kernel_code(t) -> Optional[int]:
    """The Rust kernel's code of a scalar Arrow type it reads (None: the Python path reads it)."""
    pa = _pa()
    for code, test in enumerate((pa.types.is_boolean, pa.types.is_int8, pa.types.is_int16,
                                 pa.types.is_int32, pa.types.is_int64, pa.types.is_float32,
                                 pa.types.is_float64, pa.types.is_string, pa.types.is_large_string,
                                 pa.types.is_binary, pa.types.is_large_binary,
                                 pa.types.is_date32, _is_timestamp_us, pa.types.is_decimal128)):
        if test(t):
            return code
    return None


def _is_timestamp_us(t) -> bool:
    pa = _pa()
    return pa.types.is_timestamp(t) and t.unit == "us"


def _kernel_paths(parsed) -> Optional[list]:
    """The paths as ``_core.variant_get_scalars`` takes them, when it reads all their types:
    each row is checked whole and read there (the GIL released), with the same checks, order
    and messages as the code below, which stays the reference for other types and the rows the
    kernel leaves (integers out of the type's range, invalid UTF-8, null children, dates and
    timestamps past Python's ``datetime`` range, decimals past the type's precision)."""
    out = []
    for _, path, t in parsed:
        code = _kernel_code(t)
        if code is None:
            return None
        out.append((_kernel_segments(path), code, str(t), t))
    return out


def _nested_paths(parsed) -> list:
    """The paths as ``_core.variant_get_nested`` takes them (any type ``variant_get`` reads:
    structs, lists, fixed-size and large lists and string-keyed maps, nested, of the scalar
    types above): each row checked whole and read there (the GIL released), with the same
    checks, order and messages as :func:`_read_exact`, which stays the reference and reads the
    chunks the kernel leaves: those of :func:`_kernel_paths` plus a struct type with a repeated
    field name, a null in a non-nullable child, list offsets past the type's range."""
    return [(_kernel_segments(path), t, _type_texts(t)) for _, path, t in parsed]


def _type_texts(t) -> List[str]:
    """``str`` of each node of a type in preorder (a struct's fields in order, a list's item,
    a map's item): the kernel names the node a value did not match by its number here."""
    pa = _pa()
    out = [str(t)]
    if pa.types.is_struct(t):
        for f in t:
            out += _type_texts(f.type)
    elif pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        out += _type_texts(t.value_type)
    elif pa.types.is_map(t):
        out += _type_texts(t.item_type)
    return out


def _kernel_segments(path: _Path) -> list:
    """A parsed path as the Rust kernels take it: ``(is_index, key, index)`` per segment."""
    return [(kind == "index", seg if kind == "key" else "", seg if kind == "index" else 0)
            for kind, seg in path]


def variant_get(column, path, data_type=None):
    """Read one VARIANT path as an Arrow array of ``data_type`` (or a mapping of paths to types:
    a dict of arrays), without implicit casts; a missing path or VARIANT null is null."""
    pa = _pa()
    if isinstance(path, Mapping):
        if data_type is not None:
            raise TypeError("VARIANT data_type must be omitted for path mappings")
        wanted = dict(path)
    else:
        if data_type is None:
            raise TypeError("VARIANT data_type must be a PyArrow data type")
        wanted = {path: data_type}
    parsed = []
    for text, t in wanted.items():
        if not isinstance(t, pa.DataType):
            raise TypeError("VARIANT data_type must be a PyArrow data type")
        _check_decimal_scale(t)
        if not _readable_type(t):
            raise TypeError(f"Unsupported exact VARIANT data type: {t}")
        parsed.append((text, _parse_path(text), t))
    chunks, chunked, _ = _chunks(column)
    cache: Dict[bytes, Any] = {}
    results: Dict[str, list] = {text: [] for text in wanted}
    kernel = _kernel_paths(parsed)
    nested = _nested_paths(parsed) if kernel is None else None
    for chunk in chunks:
        if kernel is not None or nested is not None:
            arrays = (_core.variant_get_scalars(chunk, kernel) if kernel is not None
                      else _core.variant_get_nested(chunk, nested))
            if arrays is not None:  # None: a row the kernel leaves to the code below
                for (text, _, _), array in zip(parsed, arrays):
                    results[text].append(array)
                continue
        values, metas, valid = _rows(chunk)
        decoded: Dict[str, list] = {text: [] for text in wanted}
        for r in range(len(chunk)):
            row = _Row(values[r], metas[r], cache) if valid[r] else None
            for text, p, t in parsed:
                target = None if row is None else row.walk(p)[1]
                decoded[text].append(None if target is None else _read_exact(row, *target, t))
        for text, _, t in parsed:
            results[text].append(pa.array(decoded[text], type=t))
    out = {text: pa.chunked_array(arrays, type=wanted[text]) if chunked else arrays[0]
           for text, arrays in results.items()}
    return out if isinstance(path, Mapping) else out[path]


def variant_to_pylist(column, fields: Sequence[str]):
    """The selected top-level fields of each row as a dict (natural Python types; a missing field
    is left out, a VARIANT null is None); a SQL null row is None. Names are literal keys."""
    if isinstance(fields, (str, bytes)):
        raise TypeError("VARIANT fields must be a sequence of field names")
    try:
        names = tuple(dict.fromkeys(fields))
    except TypeError:
        raise TypeError("VARIANT fields must be a sequence of field names") from None
    if any(not isinstance(n, str) for n in names):
        raise TypeError("VARIANT field names must be strings")
    chunks, _, _ = _chunks(column)
    cache: Dict[bytes, Any] = {}
    result: List[Optional[dict]] = []
    for chunk in chunks:
        values, metas, valid = _rows(chunk)
        for r in range(len(chunk)):
            if not valid[r]:
                result.append(None)
                continue
            row = _Row(values[r], metas[r], cache)
            if not row.value or row.value[0] & 3 != _OBJECT:
                raise TypeError("VARIANT root must be an object")
            ids, children = row.obj(0, len(row.value))
            wanted = set(names)  # in the object's field order, as pypaimon gives them
            result.append({row.keys[i]: _decode(row.value, row.metadata, a)
                           for i, (a, _) in zip(ids, children) if row.keys[i] in wanted})
    return result


def variant_replace(column, path, replacement=None, strict: bool = False):
    """Replace existing VARIANT paths (one path and its replacement, or a mapping of paths to
    replacements) without casts; rows missing a path are left as they are, or with
    ``strict=True`` refused."""
    if not isinstance(strict, bool):
        raise TypeError("VARIANT strict must be a boolean")
    parsed = _parsed_replacements(path, replacement, len(column), "replacement")
    if not parsed:
        return column
    return _edit(column, parsed, strict, upsert=False)


def variant_set(column, path, value=None):
    """Replace existing VARIANT paths or insert missing final OBJECT keys.

    Missing intermediate paths, non-OBJECT parents and array indexes past the end raise
    ValueError: it never creates intermediate objects or extends arrays."""
    parsed = _parsed_replacements(path, value, len(column), "value")
    if not parsed:
        return column
    return _edit(column, parsed, False, upsert=True)
