"""Consumers: a reader's progress in ``<table>/consumer/consumer-<id>`` (on a branch: under the
branch's directory), the file Java Paimon's ``ConsumerManager`` writes, ``{"nextSnapshot": N}``
(the next snapshot the consumer reads). Snapshot expiry keeps every snapshot from the smallest
``nextSnapshot`` on (core ``table/expire.rs``), so a consumer that stops and resumes finds its
snapshots. The streaming read (``paimon_rs.spark.streaming``, option ``consumer-id``) writes it.

Written atomically: a temporary file (``.consumer-<id>.<uuid>.tmp``, which expiry skips and
removed on failure) renamed over the old one, so a reader sees the old or the new progress,
never a torn file. Local tables only: an object store has no atomic rename here.
"""

from __future__ import annotations

import json
import os
import re
import time
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Dict, List, Optional

from paimon_rs.exceptions import InvalidArgumentError, UnsupportedError

if TYPE_CHECKING:
    from paimon_rs.table import Table

_ID = re.compile(r"^[A-Za-z0-9_.\-]+$")


def check_id(consumer_id: str) -> None:
    """A consumer id names a file: letters, digits, ``_``, ``-`` and ``.`` (not ``.``/``..``)."""
    if not _ID.match(consumer_id) or consumer_id in (".", ".."):
        raise InvalidArgumentError(f"consumer-id {consumer_id!r}: use letters, digits, '_', '-' and '.'")


def consumer_dir(table: Table) -> str:
    """The local directory of ``table``'s consumers (its branch's, on a branch handle)."""
    path = table.table_path
    if "://" in path and not path.startswith("file:"):
        raise UnsupportedError(f"consumers of {table.identifier}: the table is on {path.split('://')[0]}://; "
                               "paimon_rs writes consumer files on local tables only (atomic rename)")
    root = path[len("file:"):] if path.startswith("file:") else path
    if root.startswith("//"):
        root = root[2:]
    branch = table.current_branch()
    if branch != "main":
        root = os.path.join(root, "branch", f"branch-{branch}")
    return os.path.join(root, "consumer")


def next_snapshot(table: Table, consumer_id: str) -> Optional[int]:
    """The consumer's ``nextSnapshot``, None if it has no file."""
    check_id(consumer_id)
    p = os.path.join(consumer_dir(table), f"consumer-{consumer_id}")
    try:
        with open(p, encoding="utf-8") as f:
            doc = json.load(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        raise InvalidArgumentError(f"consumer file {p} cannot be read: {e}") from e
    n = doc.get("nextSnapshot") if isinstance(doc, dict) else None
    if isinstance(n, bool) or not isinstance(n, int):
        raise InvalidArgumentError(f"consumer file {p}: no integer 'nextSnapshot' in {doc!r}")
    return n


def write_next_snapshot(table: Table, consumer_id: str, next_snapshot_id: int) -> None:
    """Record that the consumer reads ``next_snapshot_id`` next (atomically, see the module)."""
    check_id(consumer_id)
    d = consumer_dir(table)
    os.makedirs(d, exist_ok=True)
    tmp = os.path.join(d, f".consumer-{consumer_id}.{uuid.uuid4().hex}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump({"nextSnapshot": int(next_snapshot_id)}, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, os.path.join(d, f"consumer-{consumer_id}"))
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


@dataclass
class Consumer:
    """A consumer's progress, pypaimon's (and Java's) ``Consumer``: the next snapshot it reads."""

    next_snapshot: int

    def to_json(self) -> str:
        return json.dumps({"nextSnapshot": self.next_snapshot})

    @staticmethod
    def from_json(json_str: str) -> Consumer:
        """Parse ``{"nextSnapshot": N, ...}`` (other fields ignored, as Java's)."""
        data = json.loads(json_str)
        n = data.get("nextSnapshot") if isinstance(data, dict) else None
        if isinstance(n, bool) or not isinstance(n, int):
            raise InvalidArgumentError(f"consumer: no integer 'nextSnapshot' in {json_str!r}")
        return Consumer(next_snapshot=n)

    @classmethod
    def from_path(cls, file_io: Any, path: str) -> Optional[Consumer]:
        """The consumer in file ``path`` (None if there is none), read through ``file_io``;
        a file that cannot be read or parsed is read again, 10 times 200 ms apart, as Java's
        ``Consumer.fromPath`` (a writer may be replacing it), then ``RuntimeError``."""
        error: Optional[Exception] = None
        for _ in range(10):
            try:
                return cls.from_json(file_io.read_file_utf8(path))
            except FileNotFoundError:
                return None
            except Exception as e:  # noqa: BLE001 - retried, then reported (Java's rule)
                error = e
                time.sleep(0.2)
        raise RuntimeError(f"Retry fail after 10 times: {error}")


class ConsumerManager:
    """The consumers of a table (``<table>/consumer/consumer-<id>``, on a branch under the
    branch's directory) through a ``FileIO``, pypaimon's ``ConsumerManager``:
    ``Table.consumer_manager()``, or ``ConsumerManager(file_io, table_path, branch)``."""

    CONSUMER_PREFIX = "consumer-"

    def __init__(self, file_io: Any, table_path: str, branch: Optional[str] = None):
        self._file_io = file_io
        self._table_path = table_path.rstrip("/")
        self._branch = branch if branch and branch.strip() else "main"

    def _dir(self) -> str:
        if self._branch == "main":
            return f"{self._table_path}/consumer"
        return f"{self._table_path}/branch/branch-{self._branch}/consumer"

    def _path(self, consumer_id: str) -> str:
        if not consumer_id:
            raise InvalidArgumentError("consumer_id cannot be empty")
        if "/" in consumer_id or "\\" in consumer_id or consumer_id in (".", ".."):
            raise InvalidArgumentError(f"consumer_id {consumer_id!r}: not a file name")
        return f"{self._dir()}/{self.CONSUMER_PREFIX}{consumer_id}"

    def _ids(self) -> List[str]:
        d = self._dir()
        if not self._file_io.exists(d):
            return []
        return sorted(s.base_name[len(self.CONSUMER_PREFIX):] for s in self._file_io.list_status(d)
                      if s.base_name.startswith(self.CONSUMER_PREFIX))

    def consumer(self, consumer_id: str) -> Optional[Consumer]:
        return Consumer.from_path(self._file_io, self._path(consumer_id))

    def reset_consumer(self, consumer_id: str, consumer: Consumer) -> None:
        """Write (or replace) the consumer's progress."""
        self._file_io.overwrite_file_utf8(self._path(consumer_id), consumer.to_json())

    def delete_consumer(self, consumer_id: str) -> None:
        self._file_io.delete_quietly(self._path(consumer_id))

    def min_next_snapshot(self) -> Optional[int]:
        """The smallest ``next_snapshot`` of the consumers (what snapshot expiry keeps)."""
        values = list(self.consumers().values())
        return min(values) if values else None

    def expire(self, expire_datetime: datetime) -> None:
        """Delete the consumers last written before ``expire_datetime``."""
        d = self._dir()
        if not self._file_io.exists(d):
            return
        for s in self._file_io.list_status(d):
            if s.base_name.startswith(self.CONSUMER_PREFIX) and s.mtime is not None \
                    and s.mtime.timestamp() < expire_datetime.timestamp():
                self._file_io.delete_quietly(f"{d}/{s.base_name}")

    def list_all_ids(self) -> List[str]:
        return self._ids()

    def consumers(self) -> Dict[str, int]:
        out = {}
        for cid in self._ids():
            c = self.consumer(cid)
            if c is not None:
                out[cid] = c.next_snapshot
        return out

    def clear_consumers(self, including_pattern: str, excluding_pattern: Optional[str] = None) -> None:
        """Delete the consumers whose id matches ``including_pattern`` and not
        ``excluding_pattern`` (regular expressions matched at the start, as Java's)."""
        inc = re.compile(including_pattern)
        exc = re.compile(excluding_pattern) if excluding_pattern else None
        for cid in self._ids():
            if inc.match(cid) and not (exc and exc.match(cid)):
                self.delete_consumer(cid)

    def with_branch(self, branch: Optional[str]) -> ConsumerManager:
        return ConsumerManager(self._file_io, self._table_path, branch)


__all__ = ["Consumer", "ConsumerManager", "check_id", "consumer_dir", "next_snapshot",
           "write_next_snapshot"]
