"""Table operations: tags, rollback and snapshot expiry (``Table.create_tag``, ``delete_tag``,
``list_tags``, ``tags``, ``rollback_to``, ``expire_snapshots``), with pypaimon 2.1.0's names;
and the sharding of a plan's splits (``TableScan.with_shard``), which ``explain`` shares."""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from typing import Any, List, Optional, Tuple, Union

from paimon_rs import _core
from paimon_rs.exceptions import InvalidArgumentError

Duration = Union[_dt.timedelta, str, int, None]


@dataclass(frozen=True)
class TagInfo:
    """One tag: its name, the snapshot it holds, and its retention if any."""

    name: str
    snapshot_id: int
    snapshot_time_millis: int
    create_time: Optional[str] = None
    """``tagCreateTime`` (local time, ISO format), set for tags with a retention."""
    time_retained_millis: Optional[int] = None


@dataclass(frozen=True)
class ReclaimResult:
    """What an expiry, rollback or tag deletion deleted."""

    snapshots: List[int] = field(default_factory=list)
    """Snapshot ids whose files were deleted (expired or rolled back)."""
    files: List[str] = field(default_factory=list)
    """Other deleted files: data files, manifests, manifest lists, index files (and the
    ``changelog/changelog-<id>`` files of expired long-lived changelogs)."""
    bytes: int = 0
    """Their total size."""
    changelogs: List[int] = field(default_factory=list)
    """Long-lived changelogs expired (``changelog.num-retained.*`` / ``changelog.time-retained``
    outliving the snapshots: docs/table-operations.md)."""

    def __len__(self) -> int:
        return len(self.files)


def _result(raw: tuple) -> ReclaimResult:
    ids, files, changelogs = raw
    return ReclaimResult(snapshots=list(ids), files=[p for p, _ in files], bytes=sum(b for _, b in files),
                         changelogs=list(changelogs))


def duration_text(value: Duration, what: str) -> Optional[str]:
    """A retention as Paimon's duration text: ``timedelta`` and ints (millis) are converted,
    strings (``"1 d"``, ``"2h"``, ``"30 min"``) passed on."""
    if value is None:
        return None
    if isinstance(value, _dt.timedelta):
        return f"{int(value.total_seconds() * 1000)} ms"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value} ms"
    if isinstance(value, str):
        return value
    raise InvalidArgumentError(f"{what}: expected a datetime.timedelta, a duration string or millis, "
                               f"not {type(value).__name__}")


def duration_millis(value: Duration, what: str) -> Optional[int]:
    """A retention in milliseconds (``timedelta``, int millis, or ``"<n> <unit>"``)."""
    if value is None:
        return None
    if isinstance(value, _dt.timedelta):
        return int(value.total_seconds() * 1000)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        text = value.strip().lower()
        digits = len(text) - len(text.lstrip("0123456789"))
        units = {"": 1, "ms": 1, "s": 1000, "sec": 1000, "min": 60_000, "m": 60_000, "h": 3_600_000,
                 "hour": 3_600_000, "hours": 3_600_000, "d": 86_400_000, "day": 86_400_000,
                 "days": 86_400_000}
        unit = text[digits:].strip()
        if digits and unit in units:
            return int(text[:digits]) * units[unit]
    raise InvalidArgumentError(f"{what}: cannot read {value!r} as a duration (a timedelta, millis, or e.g. '1 h')")


def create_tag(core: _core.Table, tag_name: str, snapshot_id: Optional[int], ignore_if_exists: bool,
               time_retained: Duration) -> None:
    """See ``Table.create_tag``."""
    core.create_tag(tag_name, snapshot_id, duration_text(time_retained, "time_retained"), ignore_if_exists)


def delete_tag(core: _core.Table, tag_name: str) -> bool:
    """See ``Table.delete_tag``."""
    return core.delete_tag(tag_name) is not None


def list_tag_infos(core: _core.Table) -> List[TagInfo]:
    """Every tag with its snapshot and retention, by name."""
    return [TagInfo(n, i, t, c, r) for n, i, t, c, r in core.list_tags()]


def rollback_to(core: _core.Table, target: Union[int, str]) -> ReclaimResult:
    """See ``Table.rollback_to``."""
    if isinstance(target, bool) or not isinstance(target, (int, str)):
        raise InvalidArgumentError(f"Unsupported rollback target type: {type(target).__name__} "
                                   "(a snapshot id or a tag name)")
    if isinstance(target, int):
        return _result(core.rollback_to(snapshot_id=target))
    return _result(core.rollback_to(tag=target))


def expire_snapshots(core: _core.Table, retain_min: Optional[int], retain_max: Optional[int],
                     older_than: Duration, max_deletes: Optional[int]) -> ReclaimResult:
    """See ``Table.expire_snapshots``."""
    return _result(core.expire_snapshots(retain_min, retain_max, duration_millis(older_than, "older_than"),
                                         max_deletes))


__all__ = ["ReclaimResult", "TagInfo", "create_tag", "delete_tag", "expire_snapshots", "java_file_name_shard",
           "list_tag_infos", "row_id_count", "shard_range", "shard_splits", "rollback_to"]


def shard_range(total: int, index: int, count: int) -> Tuple[int, int]:
    """Worker ``index`` of ``count``'s positions ``[start, end)`` of ``total``: ``total // count``
    each, the first ``total % count`` workers one more (pypaimon's ``shard_range``)."""
    base, remainder = divmod(total, count)
    start = index * base + min(index, remainder)
    return start, start + base + int(index < remainder)


def row_id_count(splits: List[Any]) -> int:
    """The row ids the files of ``splits`` cover, overlapping ranges counted once."""
    ranges = sorted((f.first_row_id, f.first_row_id + f.row_count) for s in splits for f in s.files
                    if f.first_row_id is not None)
    total, end = 0, None
    for lo, hi in ranges:
        if end is not None and lo < end:
            total += max(0, hi - end)
            end = max(end, hi)
        else:
            total += hi - lo
            end = hi
    return total


def restrict_predicate(predicate: Any, fields: List[str]) -> Any:
    """The part of ``predicate`` on ``fields`` only (core's ``Predicate::restrict_to``): an
    AND keeps its children that are, an OR only when all its children are; None: no part."""
    if predicate is None:
        return None
    if predicate.method not in ("and", "or"):
        return predicate if predicate.field in fields else None
    kept = [k for k in (restrict_predicate(c, fields) for c in predicate.children) if k is not None]
    if predicate.method == "or":
        return predicate.new_literals(kept) if len(kept) == len(predicate.children) else None
    if not kept:
        return None
    return kept[0] if len(kept) == 1 else predicate.new_literals(kept)


def java_file_name_shard(file_name: str, count: int) -> int:
    """The shard of a file by name, as Java's ``SnapshotReaderImpl``: ``abs(hash % count)`` of
    the name's Java ``String.hashCode`` (a 32-bit signed sum over its UTF-16 code units)."""
    units = file_name.encode("utf-16-be", "surrogatepass")
    h = 0
    for i in range(0, len(units), 2):
        h = (31 * h + int.from_bytes(units[i:i + 2], "big")) & 0xFFFFFFFF
    if h >= 0x80000000:
        h -= 0x100000000
    # Java's abs(h % count): its % keeps the dividend's sign
    return abs(h) % count


def _shard_files_by_name(splits: List[Any], index: int, count: int) -> List[Any]:
    """The files of ``splits`` whose name hashes to shard ``index``, each split cut to runs of
    them (``slice_splits`` over a split's own positions: whole files, deletion files kept)."""
    out: List[Any] = []
    for s in splits:
        runs: List[List[int]] = []
        offset = 0
        for f in s.files:
            if java_file_name_shard(f.file_name, count) == index:
                if runs and runs[-1][1] == offset:
                    runs[-1][1] += f.row_count
                else:
                    runs.append([offset, offset + f.row_count])
            offset += f.row_count
        if len(runs) == 1 and runs[0] == [0, offset]:
            out.append(s)
            continue
        for start, end in runs:
            out.extend(_core.slice_splits([s], start, end))
    return out


def shard_splits(splits: List[Any], primary_key: bool, index: int, count: int,
                 by_file_name: bool = False) -> List[Any]:
    """Shard ``index`` of ``count`` of a plan's splits (``with_shard``): a primary-key table's
    by bucket (``bucket % count``), so a key's rows stay in one shard, or with
    ``by_file_name`` (deletion-vector and first-row tables, whose files are read without
    merging: Java's and pypaimon's choice) by ``java_file_name_shard``; an append table's by
    row count, as pypaimon 2.1.0's: the plan's rows (every planned file's, before deletion
    vectors, in plan order) cut into ``count`` balanced position ranges (``shard_range``),
    ``index``'s read (``with_slice``'s cut, a file partly in the range read in part). A
    data-evolution table is sharded by row id while planned (``TableScan.with_shard``)."""
    if primary_key and by_file_name:
        return _shard_files_by_name(splits, index, count)
    if primary_key:
        return [s for s in splits if s.bucket % count == index]
    start, end = shard_range(sum(s.row_count for s in splits), index, count)
    return _core.slice_splits(splits, start, end) if start < end else []
