"""BLOB values as pypaimon's ``pypaimon.table.row.blob`` has them: ``Blob`` (the abstract
value), ``BlobData`` (bytes held in memory), ``BlobRef`` (a range of a file or URL read through a
URI reader) and ``BlobDescriptor`` (the URI, offset and length a ``BlobRef`` points at).

A descriptor serializes as Java Paimon's ``BlobDescriptor`` does, byte for byte with pypaimon:
version 2 = ``version:u8 | magic:u64 "BLOBDESC" | uri_len:i32 | uri (UTF-8) | offset:i64 |
length:i64``, all little-endian; version 1 (read only) lacks the magic. A length of -1 means "to
the end of the file".

What paimon_rs does not have: pypaimon's video-frame descriptors, and blob views (a BLOB that
points at another table's row) outside a ``blob-view-field`` column (``paimon_rs.blob_view``), are
refused with ``UnsupportedError`` when met in bytes; presigned
URLs need a REST catalog's object store, which paimon_rs has not.
"""

from __future__ import annotations

import io
import struct
import urllib.request
from abc import ABC, abstractmethod
from typing import Any, BinaryIO, Optional, Union
from urllib.parse import unquote, urlparse

from paimon_rs.exceptions import UnsupportedError

__all__ = [
    "Blob",
    "BlobData",
    "BlobDescriptor",
    "BlobRef",
    "FileUriReader",
    "HttpUriReader",
    "UriReader",
]

# pypaimon's other persisted BLOB wire types, recognised only to refuse them
_VIDEO_FRAME_MAGIC = 0x564944454F46524D  # "VIDEOFRM", version 1
_BLOB_VIEW_MAGIC = 0x424C4F4256494557  # "BLOBVIEW", version 1


def _has_magic(raw: bytes, version: int, magic: int) -> bool:
    return len(raw) >= 9 and raw[0] == version and struct.unpack_from("<Q", raw, 1)[0] == magic


def _refuse_other_wire_types(raw: bytes) -> None:
    if _has_magic(raw, 1, _VIDEO_FRAME_MAGIC):
        raise UnsupportedError("paimon_rs does not support video-frame BLOB descriptors")
    if _has_magic(raw, 1, _BLOB_VIEW_MAGIC):
        raise UnsupportedError("the bytes are a BlobViewStruct, which paimon_rs resolves only in "
                               "a 'blob-view-field' column (paimon_rs.blob_view parses them)")


class BlobDescriptor:
    """Where a BLOB's bytes are: ``length`` bytes (-1: to the end) of ``uri`` from ``offset``."""

    CURRENT_VERSION = 2
    MAGIC = 0x424C4F4244455343  # "BLOBDESC"
    # version 1: version (1) + uri_length (4) + offset (8) + length (8)
    _V1_MIN_WIRE_SIZE = 1 + 4 + 16

    def __init__(self, uri: str, offset: int, length: int):
        self._version = self.CURRENT_VERSION
        self._uri = uri
        self._offset = offset
        self._length = length

    @property
    def uri(self) -> str:
        """The file path or URL."""
        return self._uri

    @property
    def offset(self) -> int:
        """The first byte's position in ``uri``."""
        return self._offset

    @property
    def length(self) -> int:
        """The number of bytes; -1 for up to the end of ``uri``."""
        return self._length

    @property
    def version(self) -> int:
        """The wire version it was read from (``CURRENT_VERSION`` when built)."""
        return self._version

    def serialize(self) -> bytes:
        """The version-2 wire bytes (always version 2, as Java writes them)."""
        uri = self._uri.encode("utf-8")
        return (struct.pack("<BQi", self.CURRENT_VERSION, self.MAGIC, len(uri)) + uri
                + struct.pack("<qq", self._offset, self._length))

    @classmethod
    def deserialize(cls, data: bytes) -> BlobDescriptor:
        """Parse version 1 or 2 wire bytes (trailing bytes ignored, as Java does); ``ValueError``
        if they are not a descriptor."""
        raw = bytes(data)
        _refuse_other_wire_types(raw)
        if len(raw) < 5:
            raise ValueError("Invalid BlobDescriptor data: too short")
        version = raw[0]
        if version > cls.CURRENT_VERSION:
            raise ValueError(
                f"Expecting BlobDescriptor version to be less than or equal to "
                f"{cls.CURRENT_VERSION}, but found {version}.")
        pos = 1
        if version > 1:
            if pos + 8 > len(raw):
                raise ValueError("Invalid BlobDescriptor data: too short")
            magic = struct.unpack_from("<Q", raw, pos)[0]
            if magic != cls.MAGIC:
                raise ValueError(
                    f"Invalid BlobDescriptor: missing magic header. Expected magic: "
                    f"{cls.MAGIC}, but found: {magic}")
            pos += 8
        if pos + 4 > len(raw):
            raise ValueError("Invalid BlobDescriptor data: too short")
        uri_length = struct.unpack_from("<i", raw, pos)[0]
        pos += 4
        if uri_length < 0:
            raise ValueError(f"Invalid BlobDescriptor data: negative URI length: {uri_length}")
        if pos + uri_length > len(raw):
            raise ValueError("Invalid BlobDescriptor data: URI length exceeds data size")
        uri = raw[pos:pos + uri_length].decode("utf-8")
        pos += uri_length
        if pos + 16 > len(raw):
            raise ValueError("Invalid BlobDescriptor data: missing offset/length")
        offset, length = struct.unpack_from("<qq", raw, pos)
        descriptor = cls(uri, offset, length)
        descriptor._version = version
        return descriptor

    @classmethod
    def parse_if_serialized(cls, data: Any) -> Optional[BlobDescriptor]:
        """The descriptor when ``data`` is exactly one (version 1 or 2, no trailing bytes), else
        None (a heuristic: payload bytes could happen to match)."""
        if not isinstance(data, (bytes, bytearray)):
            return None
        raw = bytes(data)
        if len(raw) < cls._V1_MIN_WIRE_SIZE or not 1 <= raw[0] <= cls.CURRENT_VERSION:
            return None
        pos = 1
        if raw[0] > 1:
            if struct.unpack_from("<Q", raw, pos)[0] != cls.MAGIC:
                return None
            pos += 8
        if pos + 4 > len(raw):
            return None
        uri_length = struct.unpack_from("<i", raw, pos)[0]
        if uri_length < 0 or pos + 4 + uri_length + 16 != len(raw):
            return None
        try:
            return cls.deserialize(raw)
        except (ValueError, UnicodeDecodeError):
            return None

    @classmethod
    def is_blob_descriptor(cls, data: Any) -> bool:
        """Whether ``data`` starts as a version-2 descriptor (version byte and magic)."""
        if not isinstance(data, (bytes, bytearray)):
            return False
        return _has_magic(bytes(data), cls.CURRENT_VERSION, cls.MAGIC)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, BlobDescriptor):
            return False
        return (self._version, self._uri, self._offset, self._length) == (
            other._version, other._uri, other._offset, other._length)

    def __hash__(self) -> int:
        return hash((self._version, self._uri, self._offset, self._length))

    def __str__(self) -> str:
        return (f"BlobDescriptor(version={self._version}, uri='{self._uri}', "
                f"offset={self._offset}, length={self._length})")

    __repr__ = __str__


class UriReader(ABC):
    """Opens the URI of a descriptor as a binary stream (pypaimon's ``UriReader``)."""

    @classmethod
    def from_http(cls) -> HttpUriReader:
        """A reader of http(s) URLs."""
        return HttpUriReader()

    @classmethod
    def from_file(cls, file_io: Any) -> FileUriReader:
        """A reader of paths through ``file_io`` (anything with ``new_input_stream(path)``)."""
        return FileUriReader(file_io)

    @abstractmethod
    def new_input_stream(self, uri: str) -> BinaryIO:
        """The content of ``uri`` as a readable, seekable stream."""


class FileUriReader(UriReader):
    """Reads paths (local or of the file IO's store) through a ``FileIO``."""

    def __init__(self, file_io: Any):
        self._file_io = file_io

    @property
    def file_io(self) -> Any:
        """The file IO the paths are read through."""
        return self._file_io

    def new_input_stream(self, uri: str) -> BinaryIO:
        """The file ``uri`` as a readable, seekable stream."""
        stream: BinaryIO = self._file_io.new_input_stream(uri)
        return stream


class HttpUriReader(UriReader):
    """Reads http(s) URLs (the whole body, then served from memory)."""

    def new_input_stream(self, uri: str) -> BinaryIO:
        """The body of ``uri`` as a readable, seekable stream."""
        with urllib.request.urlopen(uri) as response:  # noqa: S310 - the caller's URL
            return io.BytesIO(response.read())


class _LocalFileIO:
    def new_input_stream(self, path: str) -> BinaryIO:
        parsed = urlparse(path)
        if parsed.scheme != "file":
            return open(path, "rb")
        # a file URI's path is percent-encoded (``file:///tmp/a%20b``); a host other than
        # localhost is a UNC share, as pypaimon's LocalFileIO reads it
        local = unquote(parsed.path)
        if parsed.netloc and parsed.netloc != "localhost":
            local = f"//{parsed.netloc}{local}"
        return open(local, "rb")


class _RangeStream(io.RawIOBase):
    """``length`` bytes (-1: to the end) of ``wrapped`` from ``offset``, positions relative."""

    def __init__(self, wrapped: Any, offset: int, length: int):
        self._wrapped = wrapped
        self._offset = offset
        self._length = length
        wrapped.seek(offset)

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def _remaining(self, size: int) -> int:
        if self._length == -1:
            return size
        left = max(self._length - self.tell(), 0)
        return left if size < 0 or size > left else size

    def read(self, size: Optional[int] = -1) -> bytes:
        n = self._remaining(-1 if size is None else size)
        if n == 0:
            return b""
        return bytes(self._wrapped.read() if n < 0 else self._wrapped.read(n))

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)

    def seek(self, pos: int, whence: int = io.SEEK_SET) -> int:
        if whence == io.SEEK_SET:
            if pos < 0:
                raise ValueError(f"Negative seek position: {pos}")
            target = self._offset + pos
        elif whence == io.SEEK_CUR:
            target = max(self._wrapped.tell() + pos, self._offset)
        elif whence == io.SEEK_END:
            end = (self._offset + self._length if self._length != -1
                   else self._wrapped.seek(0, io.SEEK_END))
            target = max(end + pos, self._offset)
        else:
            raise ValueError(f"Invalid whence: {whence}")
        return int(self._wrapped.seek(target)) - self._offset

    def tell(self) -> int:
        return int(self._wrapped.tell()) - self._offset

    def close(self) -> None:
        if not self.closed:
            self._wrapped.close()
            super().close()


class Blob(ABC):
    """A BLOB value: its bytes (``to_data``), a stream of them, or where they are
    (``to_descriptor``, for values stored by reference)."""

    PLACE_HOLDER: Blob
    ARRAY_PLACE_HOLDER: Any
    MAP_PLACE_HOLDER: Any

    @abstractmethod
    def to_data(self) -> bytes:
        """All the bytes."""

    @abstractmethod
    def to_descriptor(self) -> BlobDescriptor:
        """Where the bytes are; ``RuntimeError`` for in-memory data."""

    @abstractmethod
    def new_input_stream(self) -> BinaryIO:
        """The bytes as a readable stream."""

    def to_presigned_url(self, file_io: Any, table_root: str, validity: Any) -> str:
        """Refused: presigned URLs need a REST catalog's object store."""
        raise UnsupportedError("paimon_rs does not create presigned BLOB URLs")

    @staticmethod
    def from_data(data: bytes) -> Blob:
        """A BLOB of these bytes."""
        return BlobData(data)

    @staticmethod
    def from_local(file: str) -> Blob:
        """A BLOB referring to the whole local file ``file`` (a path or a file:// URI)."""
        return BlobRef(FileUriReader(_LocalFileIO()), BlobDescriptor(file, 0, -1))

    @staticmethod
    def from_http(uri: str) -> Blob:
        """A BLOB referring to the body of an http(s) URL."""
        return BlobRef(UriReader.from_http(), BlobDescriptor(uri, 0, -1))

    @staticmethod
    def from_file(file_io: Any, file_path: str, offset: int, length: int) -> Blob:
        """A BLOB referring to ``length`` bytes of ``file_path`` (read through ``file_io``) from
        ``offset``."""
        return BlobRef(FileUriReader(file_io), BlobDescriptor(file_path, offset, length))

    @staticmethod
    def from_descriptor(uri_reader: Any, descriptor: BlobDescriptor) -> Blob:
        """A BLOB referring to ``descriptor``, read through ``uri_reader``."""
        return BlobRef(uri_reader, descriptor)

    @staticmethod
    def _ref(descriptor: BlobDescriptor, file_io: Any, uri_reader_factory: Any) -> BlobRef:
        if uri_reader_factory is not None:
            return BlobRef(uri_reader_factory.create(descriptor.uri), descriptor)
        if file_io is None:
            raise ValueError("file_io is required to resolve BlobDescriptor bytes")
        return BlobRef(UriReader.from_file(file_io), descriptor)

    @staticmethod
    def from_descriptor_bytes(data: Optional[bytes], file_io: Any = None,
                              uri_reader_factory: Any = None) -> Optional[Blob]:
        """A ``BlobRef`` of bytes known to be a serialized descriptor (None for None);
        ``ValueError`` if they do not parse."""
        if data is None:
            return None
        if not isinstance(data, (bytes, bytearray)):
            raise TypeError(f"Blob.from_descriptor_bytes expects bytes, got {type(data)}")
        try:
            descriptor = BlobDescriptor.deserialize(bytes(data))
        except (ValueError, struct.error, UnicodeDecodeError) as exc:
            raise ValueError("Expected BlobDescriptor bytes, got raw bytes") from exc
        return Blob._ref(descriptor, file_io, uri_reader_factory)

    @staticmethod
    def from_bytes(data: Optional[bytes], file_io: Any = None, uri_reader_factory: Any = None,
                   allow_blob_data: bool = True) -> Optional[Blob]:
        """A ``BlobRef`` when ``data`` is a version-2 descriptor (or always, when
        ``allow_blob_data`` is False), else a ``BlobData`` of them; None for None."""
        if data is None:
            return None
        if not isinstance(data, (bytes, bytearray)):
            raise TypeError(f"Blob.from_bytes expects bytes, got {type(data)}")
        raw = bytes(data)
        _refuse_other_wire_types(raw)
        if BlobDescriptor.is_blob_descriptor(raw) or not allow_blob_data:
            try:
                descriptor = BlobDescriptor.deserialize(raw)
            except (ValueError, struct.error, UnicodeDecodeError) as exc:
                raise ValueError(
                    "Expected BlobDescriptor bytes, got raw bytes"
                    + ("" if allow_blob_data else " (allow_blob_data=False)")) from exc
            return Blob._ref(descriptor, file_io, uri_reader_factory)
        return BlobData(raw)


class _PlaceholderBlob(Blob):
    def to_data(self) -> bytes:
        raise RuntimeError("Should never call this method for placeholder blob.")

    def to_descriptor(self) -> BlobDescriptor:
        raise RuntimeError("Should never call this method for placeholder blob.")

    def new_input_stream(self) -> BinaryIO:
        raise RuntimeError("Should never call this method for placeholder blob.")


class _PlaceholderBlobArray:
    def __repr__(self) -> str:
        return "Blob.ARRAY_PLACE_HOLDER"


class _PlaceholderBlobMap:
    def __repr__(self) -> str:
        return "Blob.MAP_PLACE_HOLDER"


# markers pypaimon's writers use for values supplied later (kept for API parity)
Blob.PLACE_HOLDER = _PlaceholderBlob()
Blob.ARRAY_PLACE_HOLDER = _PlaceholderBlobArray()
Blob.MAP_PLACE_HOLDER = _PlaceholderBlobMap()


class BlobData(Blob):
    """A BLOB held in memory."""

    def __init__(self, data: Optional[Union[bytes, bytearray]] = None):
        if data is None:
            self._data = b""
        elif isinstance(data, (bytes, bytearray)):
            self._data = bytes(data)
        else:
            raise TypeError(f"BlobData expects bytes, bytearray, or None, got {type(data)}")

    @classmethod
    def from_bytes(cls, data: bytes) -> BlobData:  # type: ignore[override]
        """A ``BlobData`` of these bytes."""
        return cls(data)

    @property
    def data(self) -> bytes:
        """The bytes."""
        return self._data

    def to_data(self) -> bytes:
        """The bytes."""
        return self._data

    def to_descriptor(self) -> BlobDescriptor:
        """Refused (``RuntimeError``): in-memory data has no descriptor."""
        raise RuntimeError("Blob data can not convert to descriptor.")

    def new_input_stream(self) -> BinaryIO:
        """The bytes as a stream."""
        return io.BytesIO(self._data)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, BlobData) and self._data == other._data

    def __hash__(self) -> int:
        return hash(self._data)


class BlobRef(Blob):
    """A BLOB stored elsewhere: the range ``descriptor`` names, read through ``uri_reader``."""

    def __init__(self, uri_reader: Any, descriptor: BlobDescriptor):
        self._uri_reader = uri_reader
        self._descriptor = descriptor

    @property
    def uri_reader(self) -> Any:
        """The reader that opens the descriptor's URI."""
        return self._uri_reader

    def to_data(self) -> bytes:
        """The bytes of the range (``IOError`` if they cannot be read)."""
        try:
            with self.new_input_stream() as stream:
                return bytes(stream.read())
        except Exception as e:
            raise OSError(f"Failed to read blob data: {e}") from e

    def to_descriptor(self) -> BlobDescriptor:
        """Where the bytes are."""
        return self._descriptor

    def new_input_stream(self) -> BinaryIO:
        """The range as a readable, seekable stream."""
        d = self._descriptor
        stream = self._uri_reader.new_input_stream(d.uri)
        try:
            return _RangeStream(stream, d.offset, d.length)  # type: ignore[return-value]
        except Exception:
            stream.close()
            raise

    def __eq__(self, other: object) -> bool:
        return isinstance(other, BlobRef) and self._descriptor == other._descriptor

    def __hash__(self) -> int:
        return hash(self._descriptor)
