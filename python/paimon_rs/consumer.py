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
import uuid
from typing import TYPE_CHECKING, Optional

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


__all__ = ["check_id", "consumer_dir", "next_snapshot", "write_next_snapshot"]
