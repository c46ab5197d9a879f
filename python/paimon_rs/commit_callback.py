"""Commit callbacks with pypaimon's names (``pypaimon.write.commit_callback``).

``table_commit.add_commit_callback(cb)``: after each successful commit of that commit object,
``cb.call(CommitCallbackContext(snapshot, commit_entries, identifier))`` with the committed
snapshot and its delta's manifest entries (read back by the Rust engine from the snapshot's
delta manifest list: what the commit added and deleted), in the order the callbacks were added.
A callback that raises: its exception propagates from ``commit`` after the commit (the
snapshot stays committed, its files stay; later callbacks are not called), as pypaimon.
``table_commit.close()`` calls each callback's ``close`` (their errors ignored, as pypaimon).
Implementations must be idempotent (a retry of a commit that landed calls them again).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from paimon_rs import _core
from paimon_rs.exceptions import PaimonRsError
from paimon_rs.options import data_file_dir_prefix
from paimon_rs.snapshot import Snapshot

ADD = 0
DELETE = 1


@dataclass
class CommittedFile:
    """A data file of a commit entry, with pypaimon's ``DataFileMeta`` field names."""

    file_name: str
    file_size: int
    row_count: int
    level: int
    min_sequence_number: int
    max_sequence_number: int
    schema_id: int
    delete_row_count: Optional[int] = None
    first_row_id: Optional[int] = None
    external_path: Optional[str] = None
    creation_time: Optional[int] = None
    file_path: Optional[str] = None


@dataclass
class CommitEntry:
    """One manifest entry of a commit (pypaimon's ``ManifestEntry``): ``kind`` 0 ADD or 1
    DELETE, ``partition`` as ``{key: value}`` with the values as the partition path spells
    them (strings; the default partition name for NULL), ``bucket``, ``total_buckets``,
    ``file``."""

    kind: int
    partition: Dict[str, str]
    bucket: int
    total_buckets: int
    file: CommittedFile = field(repr=False)


@dataclass
class CommitCallbackContext:
    """Context passed to CommitCallback after a successful commit.

    Implementations must be idempotent because the callback might be called
    multiple times if a failure occurs right after the commit."""

    snapshot: Snapshot
    commit_entries: List[CommitEntry]
    identifier: int


class CommitCallback(ABC):
    """Callback invoked after a list of commit entries is successfully committed.

    Implementations must be idempotent because the callback might be called
    multiple times if a failure occurs right after the commit."""

    @abstractmethod
    def call(self, context: CommitCallbackContext) -> None:
        """Invoked after a snapshot is successfully committed."""

    def close(self) -> None:  # noqa: B027 - optional hook, a no-op by default (pypaimon's)
        """Release any resources held by this callback."""


def commit_entries(core: Any, snapshot_id: int) -> List[CommitEntry]:
    """The entries of snapshot ``snapshot_id``'s delta (``core``: a ``_core.Table``)."""
    root = core.path.rstrip("/") + "/" + data_file_dir_prefix(core.options)
    out = []
    for kind, spec, row, first_row_id, external in _core.delta_files(core, snapshot_id):
        (part_path, bucket, total_buckets, name, level, size, rows, deleted, min_seq, max_seq,
         schema_id, created) = row
        path = external or f"{root}{part_path}bucket-{bucket}/{name}"
        f = CommittedFile(name, size, rows, level, min_seq, max_seq, schema_id, deleted,
                          first_row_id, external, created, path)
        out.append(CommitEntry(kind, dict(spec), bucket, total_buckets, f))
    return out


def run_callbacks(callbacks: List[CommitCallback], core: Any, snapshot_id: Optional[int],
                  identifier: int) -> None:
    """Call ``callbacks`` for a commit that created ``snapshot_id`` (nothing if None)."""
    if not callbacks or snapshot_id is None:
        return
    text = _core.snapshot_json(core, int(snapshot_id))
    if text is None:
        raise PaimonRsError(
            f"snapshot {snapshot_id} of table {core.name} was committed, but it was expired "
            "before the commit callbacks could read it; they were not called")
    context = CommitCallbackContext(Snapshot.from_json(text), commit_entries(core, snapshot_id),
                                    identifier)
    for cb in callbacks:
        cb.call(context)
