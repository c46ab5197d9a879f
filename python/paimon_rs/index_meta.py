"""Index files as a commit message names them (pypaimon's ``IndexManifestEntry`` and
``IndexFileMeta``): ``CommitMessage.index_adds``, ``index_deletes``, ``compact_index_adds`` and
``compact_index_deletes`` (dynamic bucket hash indexes, deletion vectors)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple


@dataclass(frozen=True)
class DeletionVectorMeta:
    """Where one data file's deletion vector sits in a deletion-vectors index file."""

    data_file_name: str
    offset: int
    length: int
    cardinality: Optional[int] = None


@dataclass(frozen=True)
class IndexFileMeta:
    """An index file: ``index_type`` (``HASH``, ``DELETION_VECTORS``, ...), ``file_name`` (in the
    table's ``index/`` directory unless ``external_path``), ``file_size``, ``row_count`` and, for
    deletion vectors, ``dv_ranges`` by data file name."""

    index_type: str
    file_name: str
    file_size: int
    row_count: int
    dv_ranges: Optional[Dict[str, DeletionVectorMeta]] = None
    external_path: Optional[str] = None

    def __init__(self, index_type: str, file_name: str, file_size: int, row_count: int,
                 dv_ranges: Optional[List[Tuple[str, int, int, Optional[int]]]] = None,
                 external_path: Optional[str] = None):
        object.__setattr__(self, "index_type", index_type)
        object.__setattr__(self, "file_name", file_name)
        object.__setattr__(self, "file_size", file_size)
        object.__setattr__(self, "row_count", row_count)
        ranges = None
        if dv_ranges is not None:
            metas = [r if isinstance(r, DeletionVectorMeta) else DeletionVectorMeta(*r)
                     for r in (dv_ranges.values() if isinstance(dv_ranges, dict) else dv_ranges)]
            ranges = {m.data_file_name: m for m in metas}
        object.__setattr__(self, "dv_ranges", ranges)
        object.__setattr__(self, "external_path", external_path)


@dataclass(frozen=True)
class IndexManifestEntry:
    """An index file added (``kind`` 0) or removed (``kind`` 1) in ``bucket`` of ``partition``
    (the partition's serialized BinaryRow, as ``CommitMessage.partition``)."""

    kind: int
    partition: bytes
    bucket: int
    index_file: IndexFileMeta
