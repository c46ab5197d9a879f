"""``TableScan.with_chunk_shuffle`` (pypaimon's, for ML data loading): an append table's plan cut
into chunks of at most ``chunk_size`` rows, each within one (partition, bucket), shuffled with
``random.Random(seed)`` and, with ``with_shard``, dealt to the workers as balanced contiguous runs
of the shuffled list. The same snapshot, seed and size give every worker the same chunk order, so
the workers' plans are disjoint and together hold every row.

Chunks count the rows of the planned files in plan order (``with_slice``'s positions). pypaimon
counts live rows (its ``_live_row_slicer`` reads each deletion vector's positions): the plan
does not give us those positions, so a plan with deletion vectors is refused
(``UnsupportedError``) rather than cut into chunks other than pypaimon's, which would make
mixed paimon_rs / pypaimon workers lose or double rows. On a data-evolution table (pypaimon's
``DataEvolutionChunkShuffleSplitGenerator``) a chunk counts row ids in row-id order, the rows a
group of files holds counting once, and reads every file of each group it meets."""

from __future__ import annotations

import random
from typing import Any, Dict, List, Optional, Tuple

from paimon_rs import _core
from paimon_rs.exceptions import InvalidArgumentError, UnsupportedError
from paimon_rs.table_ops import row_id_count, shard_range


def check_chunk_shuffle(seed: Any, chunk_size: Any) -> Tuple[int, int]:
    """The validated ``(seed, chunk_size)`` of ``with_chunk_shuffle``."""
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise InvalidArgumentError("chunk_shuffle seed must be an int")
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size <= 0:
        raise InvalidArgumentError("chunk_shuffle chunk_size must be a positive int")
    return seed, chunk_size


def check_compatible(scan: Any) -> None:
    """What pypaimon refuses with a chunk shuffle: primary-key tables, ``with_slice``, a limit,
    a filter on other columns than partition keys (it would shrink the chunks)."""
    table = scan.table
    if table.is_primary_key_table:
        raise InvalidArgumentError("chunk_shuffle only supports append tables")
    if scan._slice is not None:
        raise InvalidArgumentError("chunk_shuffle cannot combine with with_slice")
    if scan.limit is not None:
        raise InvalidArgumentError("chunk_shuffle cannot combine with limit")
    if scan.predicate is not None:
        others = set(scan.predicate.fields()) - set(table.partition_keys)
        if others:
            raise InvalidArgumentError(
                "chunk_shuffle predicate must reference only partition keys; got non-partition "
                f"fields: {sorted(others)}")


def refuse_deletion_vectors(table: str, splits: List[Any]) -> None:
    """Refuse a chunk shuffle of a plan whose files have deletion vectors (see the module)."""
    if any(s.has_deletion_vectors for s in splits):
        raise UnsupportedError(
            f"with_chunk_shuffle on {table}: the plan has deletion vectors; pypaimon sizes chunks "
            "in live rows, which needs the deleted positions paimon_rs's plan does not expose, and "
            "chunks of other sizes would give paimon_rs and pypaimon workers different shards "
            "(compact the table to drop the deletion vectors, or read it without the chunk shuffle)")


def chunk_shuffle_splits(splits: List[Any], seed: int, chunk_size: int,
                         shard: Optional[Tuple[int, int]], by_row_id: Optional[str] = None) -> List[Any]:
    """This worker's splits of the shuffled chunks of ``splits`` (see the module); ``by_row_id``:
    the name of a data-evolution table, whose chunks count row ids."""
    groups: Dict[Tuple[Tuple[Any, ...], int], List[Any]] = {}
    for s in splits:
        groups.setdefault((tuple(s.partition.values), s.bucket), []).append(s)
    chunks = []
    # null-safe: a NULL partition value sorts before the others, never compared with them
    for key in sorted(groups, key=lambda k: (tuple((v is not None, v) for v in k[0]), k[1])):
        group = groups[key]
        total = row_id_count(group) if by_row_id is not None else sum(s.row_count for s in group)
        chunks.extend((group, start, min(start + chunk_size, total)) for start in range(0, total, chunk_size))
    random.Random(seed).shuffle(chunks)
    if shard is not None:
        start, end = shard_range(len(chunks), *shard)
        chunks = chunks[start:end]
    out: List[Any] = []
    for group, start, end in chunks:
        if by_row_id is not None:
            out.extend(_core.slice_splits_by_row_id(by_row_id, group, start, end))
        else:
            out.extend(_core.slice_splits(group, start, end))
    return out
