"""``Table.file_io``: pypaimon's ``FileIO`` over paimon_rs's own store.

Every operation goes through the Rust engine with the GIL released, on local paths and object
store URIs (``s3://``, ``oss://``, ``gs://``, ``az://``) alike: the store of a URI is the one
the catalog or table configured (its credentials and ``s3.*`` / ``fs.oss.*`` / ... options),
so ``table.file_io`` reaches exactly what the table reaches. pypaimon's method names and
return values (``exists``, ``read_file_utf8``, ``try_to_write_atomic``, ``list_status`` giving
``pyarrow.fs.FileInfo`` objects, ...).

What it does not do, refused: pypaimon's ``filesystem`` (a pyarrow file system object; use
paths with these methods) and its format writers (``write_parquet``, ``write_orc``, ...: data
files are written by table writes). Streams are whole files: ``new_input_stream`` reads the
file once into memory, ``new_output_stream`` writes on ``close`` (one atomic write: readers
never see a partial file).
"""

from __future__ import annotations

import io
import logging
from typing import Any, Dict, List, Optional

import pyarrow as pa
import pyarrow.fs as pafs

from paimon_rs import _core
from paimon_rs.exceptions import UnsupportedError

_LOG = logging.getLogger(__name__)


def _local(path: str) -> str:
    return path[len("file://"):] if path.startswith("file://") else path


def _info(path: str, is_dir: bool, size: int, mtime_millis: Optional[int]) -> pafs.FileInfo:
    kwargs: Dict[str, Any] = {}
    if mtime_millis is not None:
        kwargs["mtime_ns"] = mtime_millis * 1_000_000
    if is_dir:
        return pafs.FileInfo(path, pafs.FileType.Directory, **kwargs)
    return pafs.FileInfo(path, pafs.FileType.File, size=size, **kwargs)


class _OutputStream(io.RawIOBase):
    """A write stream that writes the file on ``close`` (``flush`` keeps the bytes)."""

    def __init__(self, path: str):
        super().__init__()
        self._path = path
        self._buf = bytearray()

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:  # type: ignore[override]
        if self.closed:
            raise ValueError(f"write to the closed output stream of {self._path}")
        view = memoryview(data).cast("B")
        self._buf += view
        return len(view)

    def tell(self) -> int:
        return len(self._buf)

    def close(self) -> None:
        if not self.closed:
            try:
                _core.fio_write(self._path, bytes(self._buf), True)
            finally:
                self._buf = bytearray()
                super().close()

    def __exit__(self, exc_type: Any, *rest: Any) -> None:
        if exc_type is not None and not self.closed:
            # the block failed: write nothing (the file is written whole or not at all)
            self._buf = bytearray()
            super().close()
            return
        self.close()

    def __del__(self) -> None:
        # never written by the garbage collector: only an explicit close writes
        if not self.closed:
            self._buf = bytearray()
            super().close()


class FileIO:
    """pypaimon's ``FileIO`` (``pypaimon.common.file_io``) over paimon_rs's store: see the
    module's docstring. ``table.file_io`` or ``FileIO(properties)``."""

    def __init__(self, properties: Optional[Dict[str, str]] = None):
        self.properties: Dict[str, str] = dict(properties or {})

    # --- status ---

    def get_file_status(self, path: str) -> pafs.FileInfo:
        """The ``pyarrow.fs.FileInfo`` of ``path``; ``FileNotFoundError`` if nothing is there."""
        st = _core.fio_status(_local(path))
        if st is None:
            raise FileNotFoundError(f"File {path} does not exist")
        return _info(path, st[1], st[2], st[3])

    def exists(self, path: str) -> bool:
        """Whether a file or a directory is at ``path`` (on an object store, a directory
        exists while a key lies under it)."""
        return _core.fio_status(_local(path)) is not None

    def exists_batch(self, paths: List[str]) -> Dict[str, bool]:
        """``{path: exists(path)}``."""
        return {p: self.exists(p) for p in paths}

    def is_dir(self, path: str) -> bool:
        """Whether ``path`` is a directory (``FileNotFoundError`` if nothing is there)."""
        return self.get_file_status(path).type == pafs.FileType.Directory

    def get_file_size(self, path: str) -> int:
        """The size of the file ``path`` in bytes."""
        info = self.get_file_status(path)
        if info.size is None:
            raise ValueError(f"File size not available for {path}")
        return int(info.size)

    def list_status(self, path: str) -> List[pafs.FileInfo]:
        """The entries of the directory ``path`` (not recursive), ``pyarrow.fs.FileInfo``
        each; empty if it does not exist."""
        prefix = "file://" if path.startswith("file://") else ""
        return [_info(prefix + p, d, s, m) for p, d, s, m in _core.fio_list(_local(path))]

    def list_directories(self, path: str) -> List[pafs.FileInfo]:
        """The subdirectories of ``path``."""
        return [i for i in self.list_status(path) if i.type == pafs.FileType.Directory]

    def check_or_mkdirs(self, path: str) -> None:
        """Create the directory ``path`` unless it exists; ``ValueError`` if a file is there."""
        if self.exists(path):
            if not self.is_dir(path):
                raise ValueError(f"The path '{path}' should be a directory.")
        else:
            self.mkdirs(path)

    # --- changes ---

    def mkdirs(self, path: str) -> bool:
        """Create the directory ``path`` and its parents (nothing to create on an object
        store); ``FileExistsError`` if a file is there."""
        return _core.fio_mkdirs(_local(path))

    def delete(self, path: str, recursive: bool = False) -> bool:
        """Delete the file or directory ``path``; False if nothing was there. A directory with
        content needs ``recursive`` (else ``OSError``)."""
        return _core.fio_delete(_local(path), recursive)

    def _delete_quietly(self, path: str, recursive: bool, what: str) -> None:
        try:
            if not self.delete(path, recursive) and self.exists(path):
                _LOG.warning("Failed to delete %s %s", what, path)
        except Exception:
            _LOG.warning("Exception occurs when deleting %s %s", what, path, exc_info=True)

    def delete_quietly(self, path: str) -> None:
        """``delete`` that logs a failure instead of raising it (pypaimon's)."""
        self._delete_quietly(path, False, "file")

    def delete_files_quietly(self, files: List[str]) -> None:
        for f in files:
            self.delete_quietly(f)

    def delete_directory_quietly(self, directory: str) -> None:
        """Recursive ``delete`` that logs a failure instead of raising it."""
        self._delete_quietly(directory, True, "directory")

    def rename(self, src: str, dst: str) -> bool:
        """Move ``src`` to ``dst`` (into ``dst`` if it is a directory); False if the target
        exists or ``src`` does not. Locally atomic; on an object store a copy then a delete."""
        return _core.fio_rename(_local(src), _local(dst))

    # --- content ---

    def new_input_stream(self, path: str) -> pa.BufferReader:
        """The file ``path`` as a readable, seekable stream (``read``, ``seek``, ``read_at``,
        a context manager), read once into memory."""
        return pa.BufferReader(_core.fio_read(_local(path)))

    def new_output_stream(self, path: str) -> _OutputStream:
        """A writable stream (a context manager) that writes the file ``path`` when closed,
        replacing what was there, atomically; a ``with`` block that raises, or a stream never
        closed, writes nothing."""
        return _OutputStream(_local(path))

    def read_file_utf8(self, path: str) -> str:
        """The file's content as text."""
        return _core.fio_read(_local(path)).decode("utf-8")

    def read_file_range(self, path: str, offset: int, length: int) -> bytes:
        """``length`` bytes of the file from ``offset`` (to the end if ``length < 0``)."""
        data = _core.fio_read(_local(path))
        return data[offset:] if length < 0 else data[offset:offset + length]

    def read_overwritten_file_utf8(self, path: str) -> Optional[str]:
        """The file's content as text, None if it does not exist."""
        try:
            return self.read_file_utf8(path)
        except FileNotFoundError:
            return None

    def write_file(self, path: str, content: str, overwrite: bool = False) -> None:
        """Write ``content`` (text) to ``path``; ``FileExistsError`` if something is there and
        ``overwrite`` is off."""
        if not _core.fio_write(_local(path), content.encode("utf-8"), overwrite):
            raise FileExistsError(f"File {path} already exists and overwrite=False")

    def overwrite_file_utf8(self, path: str, content: str) -> None:
        """Write ``content`` to ``path``, replacing what was there (atomically)."""
        _core.fio_write(_local(path), content.encode("utf-8"), True)

    def try_to_write_atomic(self, path: str, content: str) -> bool:
        """Write ``content`` to ``path`` only if nothing is there, atomically; False if
        something is (pypaimon: a temp file renamed, which fails on an existing target). On an
        object store without conditional puts configured, a HEAD then a PUT, as pypaimon."""
        return _core.fio_write(_local(path), content.encode("utf-8"), False)

    def copy_file(self, source_path: str, target_path: str, overwrite: bool = False) -> None:
        """Copy a file; ``FileExistsError`` if the target exists and ``overwrite`` is off."""
        data = _core.fio_read(_local(source_path))
        if not _core.fio_write(_local(target_path), data, overwrite):
            raise FileExistsError(
                f"Target file {target_path} already exists and overwrite=False")

    def copy_files(self, source_directory: str, target_directory: str,
                   overwrite: bool = False) -> None:
        """Copy the files (not the subdirectories) of a directory."""
        for info in self.list_status(source_directory):
            if info.type == pafs.FileType.File:
                name = info.path.rstrip("/").split("/")[-1]
                self.copy_file(info.path, f"{target_directory.rstrip('/')}/{name}", overwrite)

    def to_filesystem_path(self, path: str) -> str:
        """The path as this FileIO's operations take it (``file://`` removed)."""
        return _local(path)

    def close(self) -> None:
        pass

    @property
    def filesystem(self) -> Any:
        raise UnsupportedError(
            "FileIO.filesystem: paimon_rs does its I/O in Rust over its own store and has no "
            "pyarrow file system object; use this FileIO's methods with the path")

    def _refuse(self, name: str) -> Any:
        raise UnsupportedError(
            f"FileIO.{name}: paimon_rs writes data files through table writes "
            "(table.new_batch_write_builder()), not through its FileIO")

    def write_parquet(self, path: str, data: Any, *args: Any, **kwargs: Any) -> None:
        self._refuse("write_parquet")

    def write_orc(self, path: str, data: Any, *args: Any, **kwargs: Any) -> None:
        self._refuse("write_orc")

    def write_avro(self, path: str, data: Any, *args: Any, **kwargs: Any) -> None:
        self._refuse("write_avro")

