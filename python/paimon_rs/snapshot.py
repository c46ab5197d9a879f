"""A table's snapshots and partitions, read-only, with pypaimon 2.1.0's names:
``table.snapshot_manager()`` (:class:`SnapshotManager`), ``table.snapshots()`` (an Arrow table)
and ``table.list_partitions()`` (:class:`Partition` statistics from the manifests).

    sm = table.snapshot_manager()
    latest = sm.get_latest_snapshot()          # Snapshot or None
    print(latest.id, latest.commit_kind, latest.total_record_count)
    for s in sm:                               # every snapshot still present, oldest first
        ...
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Optional

import pyarrow as pa

from paimon_rs import _core

BATCH_COMMIT_IDENTIFIER = 2**63 - 1

# Paimon's JSON key of each Snapshot field (the snapshot file's form)
_JSON_KEYS = {
    "version": "version", "id": "id", "schema_id": "schemaId",
    "base_manifest_list": "baseManifestList", "delta_manifest_list": "deltaManifestList",
    "total_record_count": "totalRecordCount", "delta_record_count": "deltaRecordCount",
    "commit_user": "commitUser", "commit_identifier": "commitIdentifier",
    "commit_kind": "commitKind", "time_millis": "timeMillis",
    "base_manifest_list_size": "baseManifestListSize",
    "delta_manifest_list_size": "deltaManifestListSize",
    "changelog_manifest_list": "changelogManifestList",
    "changelog_manifest_list_size": "changelogManifestListSize",
    "index_manifest": "indexManifest", "changelog_record_count": "changelogRecordCount",
    "watermark": "watermark", "statistics": "statistics", "next_row_id": "nextRowId",
    "properties": "properties", "uuid": "uuid", "writer_version": "writerVersion",
}


@dataclass(frozen=True)
class Snapshot:
    """One ``snapshot/snapshot-<id>`` file, with pypaimon's ``Snapshot`` field names.
    ``commit_kind`` is ``"APPEND"``, ``"COMPACT"``, ``"OVERWRITE"`` or ``"ANALYZE"``;
    ``time_millis`` is epoch millis; a batch commit's ``commit_identifier`` is
    ``BATCH_COMMIT_IDENTIFIER`` (2^63 - 1)."""

    version: int
    id: int
    schema_id: int
    base_manifest_list: str
    delta_manifest_list: str
    total_record_count: int
    delta_record_count: int
    commit_user: str
    commit_identifier: int
    commit_kind: str
    time_millis: int
    base_manifest_list_size: Optional[int] = None
    delta_manifest_list_size: Optional[int] = None
    changelog_manifest_list: Optional[str] = None
    changelog_manifest_list_size: Optional[int] = None
    index_manifest: Optional[str] = None
    changelog_record_count: Optional[int] = None
    watermark: Optional[int] = None
    statistics: Optional[str] = None
    next_row_id: Optional[int] = None
    properties: Optional[Dict[str, str]] = None
    uuid: Optional[str] = None
    writer_version: Optional[str] = None

    @staticmethod
    def from_json(text: str) -> Snapshot:
        """Parse a snapshot file's JSON."""
        d = json.loads(text)
        return Snapshot(**{name: d.get(key) for name, key in _JSON_KEYS.items()})

    def to_json(self) -> str:
        """The snapshot file's JSON (Paimon's keys; absent optional fields left out)."""
        d = {key: getattr(self, name) for name, key in _JSON_KEYS.items()}
        return json.dumps({k: v for k, v in d.items() if v is not None})

    def to_dict(self) -> Dict[str, Any]:
        """The fields by their Python names."""
        return {name: getattr(self, name) for name in _JSON_KEYS}

    def __repr__(self) -> str:
        import datetime

        when = datetime.datetime.fromtimestamp(self.time_millis / 1000, tz=datetime.timezone.utc)
        return (f"Snapshot(id={self.id}, {self.commit_kind}, "
                f"{when.isoformat(sep=' ', timespec='milliseconds')}, "
                f"total_record_count={self.total_record_count}, "
                f"delta_record_count={self.delta_record_count}, schema_id={self.schema_id}, "
                f"commit_user={self.commit_user!r})")


class SnapshotManager:
    """The snapshots of one table (pypaimon's ``SnapshotManager``), read-only. Iterating
    yields every snapshot still present, oldest first. ``SnapshotManager(table)`` as pypaimon's
    documentation makes it, or ``table.snapshot_manager()``."""

    def __init__(self, table: Any, table_path: Optional[str] = None,
                 branch: Optional[str] = None):
        # a paimon_rs Table (pypaimon's documented ``SnapshotManager(table)``) or its
        # _core.Table; or pypaimon's internal form ``SnapshotManager(file_io, table_path,
        # branch)`` with a paimon_rs ``FileIO`` (``table.file_io``): the table at that path
        from paimon_rs.file_io import FileIO

        if isinstance(table, FileIO):
            if table_path is None:
                raise TypeError("SnapshotManager(file_io, table_path): table_path is missing")
            options = _core.store_options(dict(table.properties))
            if branch and branch != "main":
                options["branch"] = branch
            parts = str(table_path).rstrip("/").split("/")
            db = parts[-2][:-3] if len(parts) >= 2 and parts[-2].endswith(".db") else "default"
            self._core = _core.Table.open(f"{db}.{parts[-1]}", str(table_path), options)
            return
        if table_path is not None or branch is not None:
            # pypaimon's internal form with another file IO (its FileIO, a test's mock): the
            # snapshots are read by the engine, through no Python file IO
            raise TypeError(
                f"SnapshotManager(file_io, table_path, branch) takes a paimon_rs FileIO "
                f"(table.file_io), got {type(table).__name__}: paimon_rs reads snapshots in its "
                f"engine, not through a Python file IO; or SnapshotManager(table)")
        self._core = getattr(table, "_core", table)

    @property
    def table_path(self) -> str:
        return self._core.path

    @property
    def branch(self) -> str:
        """The branch whose snapshots this manager reads (``"main"`` by default; pypaimon's)."""
        return _core.current_branch(self._core)

    @property
    def snapshot_dir(self) -> str:
        branch = self.branch
        root = self._core.path.rstrip("/")
        return f"{root}/snapshot" if branch == "main" else f"{root}/branch/branch-{branch}/snapshot"

    def get_snapshot_path(self, snapshot_id: int) -> str:
        """The file of snapshot ``snapshot_id``."""
        return f"{self.snapshot_dir}/snapshot-{snapshot_id}"

    def get_latest_snapshot(self) -> Optional[Snapshot]:
        """The newest snapshot, ``None`` for a table that never committed."""
        sid = self._core.latest_snapshot_id()
        return None if sid is None else self.get_snapshot_by_id(sid)

    def get_snapshot_by_id(self, snapshot_id: int) -> Optional[Snapshot]:
        """Snapshot ``snapshot_id``, ``None`` if it does not exist (never written, or expired)."""
        text = _core.snapshot_json(self._core, int(snapshot_id))
        return None if text is None else Snapshot.from_json(text)

    def try_get_earliest_snapshot(self) -> Optional[Snapshot]:
        """The oldest snapshot still present (``None`` for a table that never committed)."""
        sid = _core.earliest_snapshot_id(self._core)
        return None if sid is None else self.get_snapshot_by_id(sid)

    def earliest_snapshot(self) -> Optional[Snapshot]:
        """Alias of :meth:`try_get_earliest_snapshot`."""
        return self.try_get_earliest_snapshot()

    def latest_snapshot_id(self) -> Optional[int]:
        """The newest snapshot's id."""
        return self._core.latest_snapshot_id()

    def earliest_snapshot_id(self) -> Optional[int]:
        """The oldest present snapshot's id."""
        return _core.earliest_snapshot_id(self._core)

    def snapshot_ids(self) -> List[int]:
        """Ids of every snapshot present, ascending, less a stale one (a commit killed between
        creating its snapshot on an id that expiry had freed and withdrawing it leaves one; see
        docs/concurrency.md)."""
        return list(_core.snapshot_ids(self._core))

    def list_snapshots(self) -> List[Snapshot]:
        """Every snapshot still present, ascending by id (pypaimon's ``list_snapshots``)."""
        return [Snapshot.from_json(t) for t in _core.snapshots_json(self._core, self.snapshot_ids())]

    def snapshot_count(self) -> int:
        """How many snapshot files are present."""
        return len(self.snapshot_ids())

    def get_snapshots_batch(self, snapshot_ids: List[int], max_workers: int = 4) -> Dict[int, Optional[Snapshot]]:
        """``{id: Snapshot or None}`` for each id (read in parallel; ``max_workers`` is accepted
        for pypaimon compatibility, the engine's pool does the reading)."""
        got = {s.id: s for s in (Snapshot.from_json(t)
                                 for t in _core.snapshots_json(self._core, [int(i) for i in snapshot_ids]))}
        return {int(i): got.get(int(i)) for i in snapshot_ids}

    def earlier_or_equal_time_mills(self, timestamp: int) -> Optional[Snapshot]:
        """The newest snapshot committed at or before ``timestamp`` (epoch millis), or ``None``."""
        best = None
        for s in self.list_snapshots():
            if s.time_millis <= timestamp:
                best = s
        return best

    def later_or_equal_watermark(self, watermark: int) -> Optional[Snapshot]:
        """The first snapshot whose watermark is at least ``watermark``, or ``None``."""
        for s in self.list_snapshots():
            if s.watermark is not None and s.watermark >= watermark:
                return s
        return None

    def __iter__(self) -> Iterator[Snapshot]:
        return iter(self.list_snapshots())

    def __len__(self) -> int:
        return self.snapshot_count()


SNAPSHOTS_SCHEMA = pa.schema([
    ("snapshot_id", pa.int64()), ("schema_id", pa.int64()), ("commit_user", pa.string()),
    ("commit_identifier", pa.int64()), ("commit_kind", pa.string()),
    ("commit_time", pa.timestamp("ms")), ("base_manifest_list", pa.string()),
    ("delta_manifest_list", pa.string()), ("changelog_manifest_list", pa.string()),
    ("total_record_count", pa.int64()), ("delta_record_count", pa.int64()),
    ("changelog_record_count", pa.int64()), ("watermark", pa.int64()),
])


def snapshots_table(snapshots: List[Snapshot]) -> pa.Table:
    """Snapshots as an Arrow table with the columns of Paimon's ``$snapshots`` system table
    (``commit_time`` is the commit's UTC time)."""
    cols: Dict[str, List[Any]] = {f.name: [] for f in SNAPSHOTS_SCHEMA}
    for s in snapshots:
        cols["snapshot_id"].append(s.id)
        cols["commit_time"].append(s.time_millis)
        for name in ("schema_id", "commit_user", "commit_identifier", "commit_kind", "base_manifest_list",
                     "delta_manifest_list", "changelog_manifest_list", "total_record_count",
                     "delta_record_count", "changelog_record_count", "watermark"):
            cols[name].append(getattr(s, name))
    return pa.table({f.name: pa.array(cols[f.name], f.type) for f in SNAPSHOTS_SCHEMA},
                    schema=SNAPSHOTS_SCHEMA)


@dataclass(frozen=True)
class Partition:
    """Statistics of one partition from the manifests (pypaimon's ``Partition`` /
    ``PartitionStatistics``): ``spec`` (values as in the partition path), ``record_count``
    (primary-key tables: including delete rows, as Paimon counts), ``file_size_in_bytes``,
    ``file_count``, ``last_file_creation_time`` (epoch millis), ``total_buckets`` (buckets
    holding files), and ``path`` (the directory relative to the table, ``k=v/``)."""

    spec: Dict[str, str] = field(default_factory=dict)
    record_count: int = 0
    file_size_in_bytes: int = 0
    file_count: int = 0
    last_file_creation_time: int = 0
    total_buckets: int = 0
    path: str = ""


@dataclass(frozen=True)
class PagedList:
    """One page of a listing (pypaimon's ``PagedList``): ``elements`` and the token of the next
    page (``None`` on the last)."""

    elements: List[Any]
    next_page_token: Optional[str] = None


@dataclass(frozen=True)
class GetTagResponse:
    """One tag, as pypaimon's ``Catalog.get_tag`` returns it: ``tag_name``, the tagged
    ``snapshot``, ``tag_create_time`` (epoch millis) and ``tag_time_retained`` (an ISO-8601
    duration, ``PT24H``); both None for a tag without retention."""

    tag_name: str
    snapshot: Snapshot
    tag_create_time: Optional[int] = None
    tag_time_retained: Optional[str] = None


def java_duration(ms: int) -> str:
    """``java.time.Duration.toString`` of ``ms`` milliseconds (``PT1H30M``, ``PT0.5S``, ``PT0S``)."""
    neg = ms < 0
    ms = abs(ms)
    h, rest = divmod(ms, 3_600_000)
    m, rest = divmod(rest, 60_000)
    s, frac = divmod(rest, 1000)
    out = "PT"
    sign = "-" if neg else ""
    if h:
        out += f"{sign}{h}H"
    if m:
        out += f"{sign}{m}M"
    if s or frac or (not h and not m):
        out += f"{sign}{s}" + (f".{frac:03d}".rstrip("0") if frac else "") + "S"
    return out


def tag_response(name: str, snapshot: Snapshot, created: Optional[str], retained_ms: Optional[int]) -> GetTagResponse:
    """A ``GetTagResponse`` from ``_core.tags_json``'s row: ``created`` is the tag file's local
    time (``%Y-%m-%dT%H:%M:%S[.f]``), read in this process's zone as pypaimon does."""
    import datetime

    create_millis = None
    if created is not None:
        whole, _, frac = created.partition(".")
        local = datetime.datetime.strptime(whole, "%Y-%m-%dT%H:%M:%S")
        create_millis = int(local.timestamp()) * 1000 + int((frac + "000")[:3])
    retained = None if retained_ms is None else java_duration(retained_ms)
    return GetTagResponse(name, snapshot, create_millis, retained)


def paged_partitions(parts: List[Partition], max_results: Optional[int], page_token: Optional[str],
                     partition_name_pattern: Optional[str]) -> PagedList:
    """pypaimon's ``list_partitions_paged`` over ``parts``: ``partition_name_pattern`` matches
    ``k=v,k=v`` with ``*`` as a wildcard; the page token is the index of the next partition."""
    import re
    if partition_name_pattern:
        rx = re.compile(re.escape(partition_name_pattern).replace(r"\*", ".*"))
        parts = [p for p in parts if rx.fullmatch(",".join(f"{k}={v}" for k, v in p.spec.items()))]
    try:
        start = int(page_token) if page_token is not None else 0
    except ValueError:
        start = 0
    end = len(parts) if not max_results or max_results <= 0 else min(start + max_results, len(parts))
    return PagedList(parts[start:end], str(end) if max_results and end < len(parts) else None)


def list_partitions(core: _core.Table, snapshot_id: Optional[int] = None) -> List[Partition]:
    """See ``Table.list_partitions``."""
    return [Partition(dict(spec), rows, size, files, last or 0, buckets, path)
            for spec, path, rows, size, files, last, buckets in _core.partition_stats(core, snapshot_id)]


__all__ = ["BATCH_COMMIT_IDENTIFIER", "GetTagResponse", "PagedList", "Partition", "SNAPSHOTS_SCHEMA", "Snapshot",
           "SnapshotManager", "list_partitions", "paged_partitions", "snapshots_table"]
