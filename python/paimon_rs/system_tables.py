"""System tables: ``catalog.get_table("db.t$files")`` and the other metadata views Java Paimon
defines (``org.apache.paimon.table.system``), with Java's names, columns, column order and
logical types (BIGINT -> int64, INT -> int32, STRING -> string, TIMESTAMP(3) -> timestamp[ms],
BOOLEAN -> bool), read-only, with pypaimon's read surface::

    files = catalog.get_table("db.t$files")
    rb = files.new_read_builder().with_filter("level = 0").with_projection(["file_path"])
    rows = rb.new_read().to_arrow(rb.new_scan().plan().splits())

The rows are built from the table's metadata (snapshots, schemas, tags, branches, consumers,
manifests, index manifests: no data file is read) when read; a filter is applied exactly to
those rows, then the projection and the limit. Three are views of the data, read whole when
read (then filtered): ``$ro`` (read-optimized: a primary-key table's top-level files only, no
merge), ``$audit_log`` (the merged records with their row kind first in ``rowkind``,
retractions kept) and ``$binlog`` (the same, each column's value in a one-element array).
Timestamps are local wall-clock times, as Java renders them (``commit_time``: the snapshot's
epoch millis in this process's time zone).

Time travel (``scan.snapshot-id`` / ``scan.tag-name`` on the table, ``t$files`` of a
``table.copy({...})`` or ``new_read_builder(snapshot_id=...)``) is honoured by the tables that
describe one snapshot (``$files``, ``$manifests``, ``$partitions``, ``$buckets``,
``$table_indexes``, ``$ro``, ``$audit_log``, ``$binlog``) and refused by the others.
``t$branch_b$files`` reads branch ``b``'s.
"""

from __future__ import annotations

import datetime
import difflib
import json
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, List, Optional, Sequence, Union

import pyarrow as pa

from paimon_rs import _core
from paimon_rs.changelog import ROW_KIND_COLUMN
from paimon_rs.exceptions import InvalidArgumentError, SchemaMismatchError, UnsupportedError
from paimon_rs.options import data_file_dir_prefix
from paimon_rs.predicate import Predicate, PredicateBuilder
from paimon_rs.snapshot import java_duration

if TYPE_CHECKING:
    from paimon_rs.table import Table

# ---- schemas (Java's TABLE_TYPE of each system table, in column order) ----

_STR = pa.string()
_I64 = pa.int64()
_I32 = pa.int32()
_TS = pa.timestamp("ms")


def _schema(*cols: tuple) -> pa.Schema:
    return pa.schema([pa.field(c[0], c[1], nullable=c[2] if len(c) > 2 else True) for c in cols])


SNAPSHOTS = _schema(
    ("snapshot_id", _I64, False), ("schema_id", _I64, False), ("commit_user", _STR, False),
    ("commit_identifier", _I64, False), ("commit_kind", _STR, False), ("commit_time", _TS, False),
    ("base_manifest_list", _STR, False), ("delta_manifest_list", _STR, False),
    ("changelog_manifest_list", _STR), ("total_record_count", _I64), ("delta_record_count", _I64),
    ("changelog_record_count", _I64), ("watermark", _I64), ("next_row_id", _I64),
    ("operation", _STR), ("writer_version", _STR))
SCHEMAS = _schema(
    ("schema_id", _I64, False), ("fields", _STR, False), ("partition_keys", _STR, False),
    ("primary_keys", _STR, False), ("options", _STR, False), ("comment", _STR),
    ("update_time", _TS, False))
OPTIONS = _schema(("key", _STR, False), ("value", _STR, False))
TAGS = _schema(
    ("tag_name", _STR, False), ("snapshot_id", _I64, False), ("schema_id", _I64, False),
    ("commit_time", _TS, False), ("record_count", _I64), ("create_time", _TS),
    ("time_retained", _STR))
BRANCHES = _schema(("branch_name", _STR, False), ("create_time", _TS, False))
CONSUMERS = _schema(("consumer_id", _STR, False), ("next_snapshot_id", _I64, False))
FILES = _schema(
    ("partition", _STR), ("bucket", _I32, False), ("file_path", _STR, False),
    ("file_format", _STR, False), ("schema_id", _I64, False), ("level", _I32, False),
    ("record_count", _I64, False), ("file_size_in_bytes", _I64, False), ("min_key", _STR),
    ("max_key", _STR), ("null_value_counts", _STR, False), ("min_value_stats", _STR, False),
    ("max_value_stats", _STR, False), ("min_sequence_number", _I64),
    ("max_sequence_number", _I64), ("creation_time", _TS), ("deleteRowCount", _I64),
    ("file_source", _STR), ("first_row_id", _I64), ("write_cols", pa.list_(_STR)))
MANIFESTS = _schema(
    ("file_name", _STR, False), ("file_size", _I64, False), ("num_added_files", _I64, False),
    ("num_deleted_files", _I64, False), ("schema_id", _I64, False), ("min_partition_stats", _STR),
    ("max_partition_stats", _STR), ("min_row_id", _I64), ("max_row_id", _I64))
PARTITIONS = _schema(
    ("partition", _STR), ("record_count", _I64, False), ("file_size_in_bytes", _I64, False),
    ("file_count", _I64, False), ("last_update_time", _TS), ("created_at", _TS),
    ("created_by", _STR), ("updated_by", _STR), ("options", _STR), ("total_buckets", _I32, False),
    ("done", pa.bool_(), False), ("deleted_record_count", _I64))
BUCKETS = _schema(
    ("partition", _STR), ("bucket", _I32, False), ("record_count", _I64, False),
    ("file_size_in_bytes", _I64, False), ("file_count", _I64, False), ("last_update_time", _TS))
_DV_META = pa.struct([pa.field("f0", _STR, nullable=False), pa.field("f1", _I32, nullable=False),
                      pa.field("f2", _I32, nullable=False), pa.field("_CARDINALITY", _I64)])
TABLE_INDEXES = _schema(
    ("partition", _STR), ("bucket", _I32, False), ("index_type", _STR, False),
    ("file_name", _STR, False), ("file_size", _I64, False), ("row_count", _I64, False),
    ("dv_ranges", pa.list_(_DV_META)), ("row_range_start", _I64), ("row_range_end", _I64),
    ("index_field_id", _I32), ("index_field_name", _STR))


# ---- row builders ----

def _local(epoch_millis: Optional[int]) -> Optional[datetime.datetime]:
    """Epoch millis as this process's local wall-clock time (Java's ``ZoneId.systemDefault()``)."""
    if epoch_millis is None:
        return None
    return datetime.datetime.fromtimestamp(epoch_millis / 1000).replace(
        microsecond=(epoch_millis % 1000) * 1000)


def _raw_ts(millis: Optional[int]) -> Optional[datetime.datetime]:
    """A stored local timestamp (millis of a timestamp without time zone) as a naive datetime."""
    if millis is None:
        return None
    return datetime.datetime(1970, 1, 1) + datetime.timedelta(milliseconds=millis)


def _parse_local(text: str) -> datetime.datetime:
    """``%Y-%m-%dT%H:%M:%S[.fraction]`` (any number of fraction digits) as a naive datetime,
    truncated to microseconds."""
    whole, _, frac = text.partition(".")
    t = datetime.datetime.strptime(whole, "%Y-%m-%dT%H:%M:%S")
    return t.replace(microsecond=int((frac + "000000")[:6])) if frac else t


def _flat_json(v: Any) -> str:
    """Java's ``JsonSerdeUtil.toFlatJson``: compact JSON."""
    return json.dumps(v, separators=(",", ":"), ensure_ascii=False)


def _snapshots(table: Table, _: Optional[int]) -> List[Dict[str, Any]]:
    core = table._core
    rows = []
    for text in _core.snapshots_json(core, list(_core.snapshot_ids(core))):
        d = json.loads(text)
        rows.append({
            "snapshot_id": d["id"], "schema_id": d["schemaId"], "commit_user": d["commitUser"],
            "commit_identifier": d["commitIdentifier"], "commit_kind": d["commitKind"],
            "commit_time": _local(d["timeMillis"]), "base_manifest_list": d["baseManifestList"],
            "delta_manifest_list": d["deltaManifestList"],
            "changelog_manifest_list": d.get("changelogManifestList"),
            "total_record_count": d.get("totalRecordCount"),
            "delta_record_count": d.get("deltaRecordCount"),
            "changelog_record_count": d.get("changelogRecordCount"),
            "watermark": d.get("watermark"), "next_row_id": d.get("nextRowId"),
            "operation": d.get("operation"), "writer_version": d.get("writerVersion"),
        })
    return rows


def _schemas(table: Table, _: Optional[int]) -> List[Dict[str, Any]]:
    rows = []
    for sid, text in _core.schemas_json(table._core):
        d = json.loads(text)
        rows.append({
            "schema_id": sid, "fields": _flat_json(d.get("fields", [])),
            "partition_keys": _flat_json(d.get("partitionKeys", [])),
            "primary_keys": _flat_json(d.get("primaryKeys", [])),
            "options": _flat_json(d.get("options", {})), "comment": d.get("comment"),
            "update_time": _local(d.get("timeMillis", 0)),
        })
    return rows


def _options(table: Table, _: Optional[int]) -> List[Dict[str, Any]]:
    # the schema's options (Java's ``dataTable.schema().options()``), not a handle's dynamic ones
    opts = json.loads(table._core.schema_json).get("options", {})
    return [{"key": k, "value": v} for k, v in sorted(opts.items())]


def _tags(table: Table, _: Optional[int]) -> List[Dict[str, Any]]:
    rows = []
    for name, snap, created, retained in _core.tags_json(table._core):
        d = json.loads(snap)
        rows.append({
            "tag_name": name, "snapshot_id": d["id"], "schema_id": d["schemaId"],
            "commit_time": _local(d["timeMillis"]), "record_count": d.get("totalRecordCount"),
            "create_time": None if created is None else _parse_local(created),
            "time_retained": None if retained is None else java_duration(retained),
        })
    # Java's TagManager.tags(): by the tagged snapshot, then by name
    rows.sort(key=lambda r: (r["snapshot_id"], r["tag_name"]))
    return rows


def _branches(table: Table, _: Optional[int]) -> List[Dict[str, Any]]:
    return [{"branch_name": name, "create_time": _local(mtime or 0)}
            for name, mtime in _core.branch_times(table._core)]


def _consumers(table: Table, _: Optional[int]) -> List[Dict[str, Any]]:
    from paimon_rs import consumer

    d = consumer.consumer_dir(table)
    try:
        names = sorted(os.listdir(d))
    except FileNotFoundError:
        return []
    rows = []
    for n in names:
        if not n.startswith("consumer-"):
            continue
        cid = n[len("consumer-"):]
        nxt = consumer.next_snapshot(table, cid)
        if nxt is not None:
            rows.append({"consumer_id": cid, "next_snapshot_id": nxt})
    return rows


_FILE_SOURCE = {0: "APPEND", 1: "COMPACT"}


def _files(table: Table, snapshot_id: Optional[int]) -> List[Dict[str, Any]]:
    root = table.table_path.rstrip("/") + "/" + data_file_dir_prefix(table.options)
    partitioned = bool(table.partition_keys)
    rows = []
    for f, d in _core.file_details(table._core, snapshot_id):
        (ppath, bucket, _total, name, level, size, nrows, deleted, min_seq, max_seq, schema_id,
         created) = f
        (pstr, min_key, max_key, nulls, lows, highs, source, first_row_id, write_cols, external) = d
        rows.append({
            "partition": pstr if partitioned else "{}", "bucket": bucket,
            "file_path": external or f"{root}{ppath}bucket-{bucket}/{name}",
            "file_format": name.rsplit(".", 1)[-1] if "." in name else "",
            "schema_id": schema_id, "level": level, "record_count": nrows, "file_size_in_bytes": size,
            "min_key": min_key, "max_key": max_key, "null_value_counts": nulls,
            "min_value_stats": lows, "max_value_stats": highs, "min_sequence_number": min_seq,
            "max_sequence_number": max_seq, "creation_time": _raw_ts(created),
            "deleteRowCount": deleted,
            "file_source": None if source is None else _FILE_SOURCE.get(source, str(source)),
            "first_row_id": first_row_id, "write_cols": write_cols,
        })
    return rows


def _manifests(table: Table, snapshot_id: Optional[int]) -> List[Dict[str, Any]]:
    return [{"file_name": n, "file_size": size, "num_added_files": added,
             "num_deleted_files": deleted, "schema_id": sid, "min_partition_stats": lo,
             "max_partition_stats": hi, "min_row_id": None, "max_row_id": None}
            for n, size, added, deleted, sid, lo, hi in _core.manifest_files(table._core, snapshot_id)]


def _partitions(table: Table, snapshot_id: Optional[int]) -> List[Dict[str, Any]]:
    total: Dict[str, int] = {}
    last: Dict[str, int] = {}
    for ppath, _b, tb, *_rest, created in _core.live_files(table._core, snapshot_id):
        total[ppath] = max(total.get(ppath, tb), tb)
        if created is not None:
            last[ppath] = max(last.get(ppath, created), created)
    dv = table.options.deletion_vectors_enabled()
    deleted: Dict[str, int] = {}  # by the index's partition rendering, "{v1, v2}"
    part_str: Dict[str, str] = {}  # partition directory -> "{v1, v2}"
    if dv:
        for pstr, _b, kind, _n, _s, _r, ranges in _core.index_files(table._core, snapshot_id):
            if kind == "DELETION_VECTORS" and ranges:
                deleted[pstr] = deleted.get(pstr, 0) + sum(r[3] or 0 for r in ranges)
        part_str = {f[0]: d[0] for f, d in _core.file_details(table._core, snapshot_id)}
    rows = []
    for spec, ppath, nrows, size, nfiles, _last, _buckets in _core.partition_stats(table._core, snapshot_id):
        rows.append({
            "partition": "/".join(f"{k}={v}" for k, v in spec), "record_count": nrows,
            "file_size_in_bytes": size, "file_count": nfiles, "last_update_time": _raw_ts(last.get(ppath)),
            "created_at": None, "created_by": None, "updated_by": None, "options": None,
            "total_buckets": total.get(ppath, 0), "done": False,
            "deleted_record_count": deleted.get(part_str.get(ppath, ""), 0),
        })
    rows.sort(key=lambda r: r["partition"])
    return rows


def _buckets(table: Table, snapshot_id: Optional[int]) -> List[Dict[str, Any]]:
    partitioned = bool(table.partition_keys)
    acc: Dict[tuple, Dict[str, Any]] = {}
    for f, d in _core.file_details(table._core, snapshot_id):
        key = (d[0] if partitioned else "{}", f[1])
        r = acc.setdefault(key, {"partition": key[0], "bucket": f[1], "record_count": 0,
                                 "file_size_in_bytes": 0, "file_count": 0, "_last": None})
        r["record_count"] += f[6]
        r["file_size_in_bytes"] += f[5]
        r["file_count"] += 1
        if f[11] is not None:
            r["_last"] = f[11] if r["_last"] is None else max(r["_last"], f[11])
    rows = []
    for key in sorted(acc):
        r = acc[key]
        r["last_update_time"] = _raw_ts(r.pop("_last"))
        rows.append(r)
    return rows


def _table_indexes(table: Table, snapshot_id: Optional[int]) -> List[Dict[str, Any]]:
    partitioned = bool(table.partition_keys)
    return [{"partition": p if partitioned else "{}", "bucket": b, "index_type": kind,
             "file_name": n, "file_size": size, "row_count": nrows,
             "dv_ranges": None if ranges is None else [
                 {"f0": f, "f1": off, "f2": ln, "_CARDINALITY": card} for f, off, ln, card in ranges],
             "row_range_start": None, "row_range_end": None, "index_field_id": None,
             "index_field_name": None}
            for p, b, kind, n, size, nrows, ranges in _core.index_files(table._core, snapshot_id)]


RowsFn = Callable[["Table", Optional[int]], List[Dict[str, Any]]]


@dataclass(frozen=True)
class _Def:
    schema: pa.Schema
    rows: RowsFn
    time_travel: bool  # describes one snapshot: honours scan.snapshot-id / scan.tag-name
    # a data view ($ro, $audit_log): its columns follow the table's, its rows are a data read
    schema_of: Optional[Callable[[Table], pa.Schema]] = None
    data: Optional[Callable[[Table, Optional[int]], pa.Table]] = None


def _no_rows(table: Table, snapshot_id: Optional[int]) -> List[Dict[str, Any]]:
    return []


def _read_optimized(table: Table, snapshot_id: Optional[int]) -> pa.Table:
    """``$ro`` (Java's ``ReadOptimizedTable``): a primary-key table's top-level files only, read
    without a merge (what compaction has not yet moved to the top is not there); an append
    table as it is."""
    pk = bool(table.primary_keys)
    _, splits = table._core.plan(None, snapshot_id, levels="top" if pk else None)
    return table._core.new_read(None, None).read(splits, None).read_all()


def _audit_log_schema(table: Table) -> pa.Schema:
    return pa.schema([pa.field(ROW_KIND_COLUMN, pa.string(), nullable=False), *table.arrow_schema])


def _audit_log(table: Table, snapshot_id: Optional[int]) -> pa.Table:
    """``$audit_log`` (Java's ``AuditLogTable``, batch): the table's merged records with each
    one's kind first in ``rowkind``, retractions kept (Java reads with ``forceKeepDelete``); an
    append table's rows are all ``+I``."""
    _, splits = table._core.plan(None, snapshot_id)
    pk = bool(table.primary_keys)
    data = table._core.new_read(None, None, row_kinds=pk).read(splits, None).read_all()
    if not pk:
        data = data.add_column(0, pa.field(ROW_KIND_COLUMN, pa.string(), nullable=False),
                               pa.array(["+I"] * data.num_rows, pa.string()))
    return data.cast(_audit_log_schema(table))


def _binlog_schema(table: Table) -> pa.Schema:
    return pa.schema([pa.field(ROW_KIND_COLUMN, pa.string(), nullable=False),
                      *(pa.field(f.name, pa.list_(pa.field("element", f.type, nullable=True)))
                        for f in table.arrow_schema)])


def _binlog(table: Table, snapshot_id: Optional[int]) -> pa.Table:
    """``$binlog`` (Java's ``BinlogTable``, batch read): ``$audit_log``'s rows with each column's
    value in a one-element array (a streaming read packs a ``-U``/``+U`` pair into two-element
    arrays; a batch read has no pairs)."""
    log = _audit_log(table, snapshot_id)
    schema = _binlog_schema(table)
    offsets = pa.array(range(log.num_rows + 1), pa.int32())
    cols = [log.column(0)] + [
        pa.ListArray.from_arrays(offsets, log.column(f.name).combine_chunks(), type=schema.field(f.name).type)
        for f in table.arrow_schema]
    return pa.Table.from_arrays(cols, schema=schema)


# Java's names (SystemTableLoader), lower case; $ro and $audit_log are views of the data, read
# on the reading process (Spark's read too: on the driver)
SYSTEM_TABLES: Dict[str, _Def] = {
    "snapshots": _Def(SNAPSHOTS, _snapshots, False),
    "schemas": _Def(SCHEMAS, _schemas, False),
    "options": _Def(OPTIONS, _options, False),
    "tags": _Def(TAGS, _tags, False),
    "branches": _Def(BRANCHES, _branches, False),
    "consumers": _Def(CONSUMERS, _consumers, False),
    "files": _Def(FILES, _files, True),
    "manifests": _Def(MANIFESTS, _manifests, True),
    "partitions": _Def(PARTITIONS, _partitions, True),
    "buckets": _Def(BUCKETS, _buckets, True),
    "table_indexes": _Def(TABLE_INDEXES, _table_indexes, True),
    "ro": _Def(pa.schema([]), _no_rows, True, schema_of=lambda t: t.arrow_schema, data=_read_optimized),
    "audit_log": _Def(pa.schema([]), _no_rows, True, schema_of=_audit_log_schema, data=_audit_log),
    "binlog": _Def(pa.schema([]), _no_rows, True, schema_of=_binlog_schema, data=_binlog),
}
# Java's other system tables, which paimon_rs does not provide (refused by name)
NOT_PROVIDED = ("aggregation_fields", "statistics", "row_tracking",
                "file_keys_ranges", "all_table_options", "catalog_options", "all_tables")

_TIME_TRAVEL = ("scan.snapshot-id", "scan.tag-name", "scan.timestamp-millis", "scan.timestamp",
                "scan.watermark", "scan.version")


def system_table_def(name: str, full_name: str) -> _Def:
    """The definition of system table ``name`` (case-insensitive, as Java), or an error naming
    the known ones (with the closest)."""
    key = name.lower()
    if key in SYSTEM_TABLES:
        return SYSTEM_TABLES[key]
    if key in NOT_PROVIDED:
        raise UnsupportedError(f"system table '{full_name}': paimon_rs does not provide ${key} "
                               f"(it has {', '.join('$' + n for n in SYSTEM_TABLES)})")
    close = difflib.get_close_matches(key, list(SYSTEM_TABLES), n=1)
    hint = f"; did you mean '${close[0]}'?" if close else ""
    raise InvalidArgumentError(f"unknown system table '${name}' in '{full_name}' (system tables: "
                               f"{', '.join('$' + n for n in SYSTEM_TABLES)}){hint}")


class SystemTable:
    """A read-only system table of a data table (``catalog.get_table("db.t$files")``)."""

    def __init__(self, table: Table, name: str):
        self._def = system_table_def(name, f"{table.identifier}${name}")
        self.table = table
        self.system_table_name = name.lower()

    @property
    def identifier(self) -> str:
        """``db.t$name`` (``db.t$branch_b$name`` on a branch)."""
        return f"{self.table.identifier}${self.system_table_name}"

    @property
    def name(self) -> str:
        return self.identifier.split(".", 1)[-1]

    @property
    def arrow_schema(self) -> pa.Schema:
        """The columns (Java's, in Java's order)."""
        if self._def.schema_of is not None:
            return self._def.schema_of(self.table)
        return self._def.schema

    @property
    def partition_keys(self) -> List[str]:
        return []

    @property
    def primary_keys(self) -> List[str]:
        return []

    @property
    def table_path(self) -> str:
        """The data table's path."""
        return self.table.table_path

    def is_system_table(self) -> bool:
        return True

    def copy(self, options: Dict[str, str]) -> SystemTable:
        """This system table over ``table.copy(options)`` (``scan.snapshot-id`` for time
        travel on ``$files``, ``$manifests``, ``$partitions``, ``$buckets``, ``$table_indexes``)."""
        return SystemTable(self.table.copy(options), self.system_table_name)

    def _snapshot_id(self) -> Optional[int]:
        opts = self.table.options
        travel = {k: opts[k] for k in _TIME_TRAVEL if k in opts}
        if not travel:
            return None
        if not self._def.time_travel:
            raise UnsupportedError(f"{self.identifier}: time travel ({travel}) is not defined for "
                                   f"${self.system_table_name}; only $files, $manifests, "
                                   "$partitions, $buckets, $table_indexes and the data views "
                                   "$ro, $audit_log, $binlog describe one snapshot")
        if set(travel) - {"scan.snapshot-id", "scan.tag-name"}:
            raise UnsupportedError(f"{self.identifier}: time travel by {sorted(travel)}: system "
                                   "tables honour scan.snapshot-id and scan.tag-name")
        if "scan.snapshot-id" in travel:
            try:
                sid = int(travel["scan.snapshot-id"])
            except ValueError as e:
                raise InvalidArgumentError(f"{self.identifier}: scan.snapshot-id "
                                           f"{travel['scan.snapshot-id']!r} is not an integer") from e
            if _core.snapshot_json(self.table._core, sid) is None:
                raise InvalidArgumentError(f"{self.identifier}: snapshot {sid} does not exist")
            return sid
        tag = travel["scan.tag-name"]
        for name, snap, _c, _r in _core.tags_json(self.table._core):
            if name == tag:
                return int(json.loads(snap)["id"])
        raise InvalidArgumentError(f"{self.identifier}: Tag '{tag}' doesn't exist.")

    def _rows(self) -> pa.Table:
        if self._def.data is not None:
            return self._def.data(self.table, self._snapshot_id())
        rows = self._def.rows(self.table, self._snapshot_id())
        schema = self._def.schema
        return pa.table({f.name: pa.array([r[f.name] for r in rows], f.type) for f in schema}, schema=schema)

    # ---- reads ----

    def new_read_builder(self, snapshot_id: Optional[int] = None, tag: Optional[str] = None) -> SystemReadBuilder:
        """A builder of reads (``with_filter``, ``with_projection``, ``with_limit``, then
        ``new_scan().plan().splits()`` and ``new_read().to_arrow(splits)``); ``snapshot_id`` /
        ``tag`` time-travel the tables that describe one snapshot."""
        t = self
        if snapshot_id is not None or tag is not None:
            if snapshot_id is not None and tag is not None:
                raise InvalidArgumentError(f"{self.identifier}: give snapshot_id or tag, not both")
            t = self.copy({"scan.snapshot-id": str(snapshot_id)} if snapshot_id is not None
                          else {"scan.tag-name": str(tag)})
            t._snapshot_id()
        return SystemReadBuilder(t)

    def to_arrow(self, filter: Union[Predicate, str, None] = None, projection: Optional[List[str]] = None,
                 snapshot_id: Optional[int] = None, limit: Optional[int] = None,
                 tag: Optional[str] = None) -> pa.Table:
        """All rows (filtered, projected, limited) as one Arrow table, as ``Table.to_arrow``."""
        rb = self.new_read_builder(snapshot_id=snapshot_id, tag=tag)
        if filter is not None:
            rb.with_filter(filter)
        if projection is not None:
            rb.with_projection(projection)
        if limit is not None:
            if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
                raise InvalidArgumentError(f"to_arrow: limit must be an int >= 0, got {limit!r}")
            rb.with_limit(limit)
        return rb.new_read().to_arrow(rb.new_scan().plan().splits())

    def to_pandas(self, filter: Union[Predicate, str, None] = None, projection: Optional[List[str]] = None,
                  snapshot_id: Optional[int] = None, limit: Optional[int] = None,
                  tag: Optional[str] = None) -> Any:
        """``to_arrow`` as a pandas DataFrame."""
        return self.to_arrow(filter, projection, snapshot_id, limit, tag).to_pandas()

    # ---- writes: refused ----

    def _refuse(self, what: str) -> UnsupportedError:
        return UnsupportedError(f"{self.identifier} is a system table (read-only): {what} is refused")

    def new_batch_write_builder(self) -> Any:
        """Refused: system tables are read-only."""
        raise self._refuse("writing")

    def new_stream_write_builder(self) -> Any:
        """Refused: system tables are read-only."""
        raise self._refuse("writing")

    def write(self, *args: Any, **kwargs: Any) -> Any:
        """Refused: system tables are read-only."""
        raise self._refuse("write")

    def delete(self, *args: Any, **kwargs: Any) -> Any:
        """Refused: system tables are read-only."""
        raise self._refuse("delete")

    def merge(self, *args: Any, **kwargs: Any) -> Any:
        """Refused: system tables are read-only."""
        raise self._refuse("merge")

    def compact(self, *args: Any, **kwargs: Any) -> Any:
        """Refused: system tables are read-only."""
        raise self._refuse("compact")

    def __getattr__(self, name: str) -> Any:
        # any other table operation (tags, branches, expiry, ...) belongs to the data table
        if name.startswith("_"):
            raise AttributeError(name)
        raise AttributeError(f"{self.identifier} is a system table: it has no '{name}' "
                             f"(use catalog.get_table('{self.table.identifier}') for the table)")

    def __repr__(self) -> str:
        return f"SystemTable({self.identifier!r}, columns={self.arrow_schema.names})"


class SystemSplit:
    """The one split of a system table read (its rows are built when read)."""

    def __init__(self, table: SystemTable):
        self._table = table

    @property
    def row_count(self) -> int:
        return self._table._rows().num_rows

    def __repr__(self) -> str:
        return f"SystemSplit({self._table.identifier!r})"


class SystemPlan:
    def __init__(self, splits: List[SystemSplit]):
        self._splits = splits

    def splits(self) -> List[SystemSplit]:
        return self._splits


class SystemScan:
    def __init__(self, table: SystemTable):
        self._table = table

    def plan(self) -> SystemPlan:
        """One split (system tables are small: their rows are built on the reading process)."""
        return SystemPlan([SystemSplit(self._table)])


def _check_columns(st: SystemTable, cols: Sequence[str], what: str) -> None:
    from paimon_rs.predicate import suggest_column

    names = st.arrow_schema.names
    for c in cols:
        if c not in names:
            raise SchemaMismatchError(f"{what} on {st.identifier}: column '{c}' is not in the "
                                      f"system table{suggest_column(str(c), names)}")


class SystemReadBuilder:
    """``ReadBuilder`` of a system table: filter, projection, limit."""

    def __init__(self, table: SystemTable):
        self.table = table
        self._projection: Optional[List[str]] = None
        self._predicate: Optional[Predicate] = None
        self._limit: Optional[int] = None

    def with_filter(self, predicate: Union[Predicate, str, None]) -> SystemReadBuilder:
        """Only the rows matching ``predicate`` (a Predicate on the system table's columns or a
        filter string, as ``ReadBuilder.with_filter``)."""
        from paimon_rs.filter_parser import optional_filter

        self._predicate = optional_filter(predicate, self.table.arrow_schema, "with_filter")
        return self

    def with_projection(self, projection: List[str]) -> SystemReadBuilder:
        """Only these columns, in this order."""
        if isinstance(projection, str):
            raise TypeError(f"with_projection takes a list of column names, got the string {projection!r}")
        cols = list(projection)
        _check_columns(self.table, cols, "with_projection")
        self._projection = cols
        return self

    def with_limit(self, limit: int) -> SystemReadBuilder:
        """At most ``limit`` rows."""
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise InvalidArgumentError(f"with_limit: limit must be an int >= 0, got {limit!r}")
        self._limit = limit
        return self

    def new_predicate_builder(self) -> PredicateBuilder:
        """Predicates on the system table's columns."""
        return PredicateBuilder(self.table.arrow_schema)

    def read_type(self) -> pa.Schema:
        """The schema ``new_read`` returns."""
        s = self.table.arrow_schema
        return s if self._projection is None else pa.schema([s.field(c) for c in self._projection])

    def new_scan(self) -> SystemScan:
        return SystemScan(self.table)

    def new_read(self) -> SystemRead:
        return SystemRead(self.table, self._projection, self._predicate, self._limit)


class SystemRead:
    """``TableRead`` of a system table."""

    def __init__(self, table: SystemTable, projection: Optional[List[str]], predicate: Optional[Predicate],
                 limit: Optional[int]):
        self.table = table
        self._projection = projection
        self._predicate = predicate
        self._limit = limit

    def to_arrow(self, splits: List[SystemSplit]) -> pa.Table:
        """The rows of ``splits`` (filtered, projected, limited)."""
        from paimon_rs.mutations import predicate_mask

        parts = []
        for s in splits:
            if not isinstance(s, SystemSplit):
                raise InvalidArgumentError(f"{self.table.identifier}: read a split of another table ({s!r})")
            t = s._table._rows()
            if self._predicate is not None:
                t = t.filter(predicate_mask(self._predicate, t))
            parts.append(t)
        out = pa.concat_tables(parts) if parts else self.table.arrow_schema.empty_table()
        if self._projection is not None:
            out = out.select(self._projection)
        if self._limit is not None:
            out = out.slice(0, self._limit)
        return out

    def to_pandas(self, splits: List[SystemSplit]) -> Any:
        """``to_arrow`` as a pandas DataFrame."""
        return self.to_arrow(splits).to_pandas()

    def to_arrow_batch_reader(self, splits: List[SystemSplit]) -> pa.RecordBatchReader:
        t = self.to_arrow(splits)
        return pa.RecordBatchReader.from_batches(t.schema, t.to_batches())

    def to_iterator(self, splits: List[SystemSplit]) -> Iterator[Dict[str, Any]]:
        """The rows as dicts."""
        return iter(self.to_arrow(splits).to_pylist())


__all__ = ["NOT_PROVIDED", "SYSTEM_TABLES", "SystemReadBuilder", "SystemTable", "system_table_def"]
