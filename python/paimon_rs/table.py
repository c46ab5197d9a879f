"""Tables, writes, commits, scans and reads with pypaimon's names."""

from __future__ import annotations

import dataclasses
import os
import uuid
import warnings
from contextlib import contextmanager
from enum import Enum
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple, Union

import pyarrow as pa

from paimon_rs import _core, table_ops
from paimon_rs.blob_view import needs_resolution, resolve_inline_blobs
from paimon_rs.commit_callback import CommitCallback, run_callbacks
from paimon_rs.consumer import ConsumerManager
from paimon_rs.data_types import DataField
from paimon_rs.exceptions import (
    InvalidArgumentError,
    PaimonRsError,
    SchemaMismatchError,
    TableNotFoundError,
    UnsupportedError,
)
from paimon_rs.file_io import FileIO
from paimon_rs.identifier import Identifier
from paimon_rs.maintenance import OlderThan, RemoveOrphanFilesResult, remove_orphan_files
from paimon_rs.mutations import DeleteResult, MergeBuilder, commit_or_abort
from paimon_rs.options import TIME_TRAVEL_OPTIONS, ConfigOption
from paimon_rs.predicate import Predicate, PredicateBuilder
from paimon_rs.progress import Progress, ProgressCallback
from paimon_rs.schema import TableSchema, option_texts
from paimon_rs.snapshot import Partition, SnapshotManager
from paimon_rs.table_ops import restrict_predicate, row_id_count, shard_range, shard_splits
from paimon_rs.tags import TagManager

if TYPE_CHECKING:  # pragma: no cover
    from paimon_rs.explain import ExplainResult
    from paimon_rs.postpone_write import PostponeFixedBucketWriteBuilder
    from paimon_rs.stream_read import StreamReadBuilder
    from paimon_rs.table_update import BatchTableUpdate, StreamTableUpdate

BATCH_COMMIT_IDENTIFIER = 2**63 - 1

CommitMessage = _core.CommitMessage


class Table:
    """A Paimon table (pypaimon's ``FileStoreTable``)."""

    def __init__(self, core: _core.Table, dynamic_options: Optional[Dict[str, str]] = None):
        self._core = core
        self._arrow_schema: pa.Schema = core.arrow_schema()
        self._dynamic_options: Dict[str, str] = dict(dynamic_options or {})
        # the catalog that opened this table (a blob-view-field read loads upstream tables there)
        self._catalog: Any = None

    @staticmethod
    def open(path: str, options: Optional[Dict[str, str]] = None,
             name: Union[str, Identifier, None] = None) -> Table:
        """The table stored at ``path`` (``<warehouse>/<db>.db/<table>``), with ``options`` on
        top as ``copy`` does. ``name`` (default ``<db>.<table>`` from the path; a string or an
        ``Identifier``) is used in messages."""
        if name is None:
            parts = str(path).rstrip("/").split("/")
            db = parts[-2][:-3] if len(parts) >= 2 and parts[-2].endswith(".db") else "default"
            name = f"{db}.{parts[-1]}"
        return Table(_core.Table.open(str(name), str(path), dict(options or {})), options)

    def __reduce__(self) -> Any:
        # a table pickles as its path, name and dynamic options, never the native object (Spark
        # ships it to tasks, which reopen it)
        options = dict(self._dynamic_options)
        if self.current_branch() != "main":  # a branch handle reopens on its branch
            options["branch"] = self.current_branch()
        return (_reopen, (self.table_path, options, str(self.identifier)))

    @property
    def identifier(self) -> Identifier:
        """``db.table`` (``str(identifier)`` is the full name), as pypaimon."""
        return Identifier.from_string(self._core.name)

    @property
    def table_path(self) -> str:
        return self._core.path

    @property
    def partition_keys(self) -> List[str]:
        return self._core.partition_keys

    @property
    def primary_keys(self) -> List[str]:
        return self._core.primary_keys

    @property
    def options(self) -> TableOptions:
        """The table's options (stored plus dynamic ones): a ``dict`` that also answers
        pypaimon's ``CoreOptions`` calls (``options.bucket()``, ``options.options.to_map()``)."""
        return TableOptions(self._core.options, bool(self.primary_keys))

    @property
    def arrow_schema(self) -> pa.Schema:
        return self._arrow_schema

    @property
    def file_io(self) -> FileIO:
        """pypaimon's ``FileIO`` over this table's store (``paimon_rs.file_io.FileIO``: local
        paths and object store URIs with the table's credentials; I/O in Rust with the GIL
        released)."""
        return FileIO(dict(self._core.options))

    def copy(self, options: Dict[str, Any]) -> Table:
        """This table with dynamic options on top of its own (for this job only; the stored
        schema is unchanged), e.g. ``table.copy({"write-buffer-size": "64 mb"})``; values that
        are not strings are taken as pypaimon takes them (``{"bucket": 2}``, ``True``)."""
        options = option_texts(options)
        t = Table(self._core.copy(options), {**self._dynamic_options, **options})
        t._catalog = self._catalog
        return t

    def copy_without_time_travel(self, options: Dict[str, Any]) -> Table:
        """``copy`` keeping this table's current schema when ``options`` travel to a past
        snapshot (``scan.snapshot-id``, a tag, a timestamp): the snapshot's rows read with the
        columns as they are now (pypaimon's and Java's ``copyWithoutTimeTravel``)."""
        options = option_texts(options)
        t = Table(self._core.copy_without_time_travel(options), {**self._dynamic_options, **options})
        t._catalog = self._catalog
        return t

    def new_batch_write_builder(self) -> BatchWriteBuilder:
        return BatchWriteBuilder(self)

    def new_postpone_fixed_bucket_write_builder(self) -> PostponeFixedBucketWriteBuilder:
        """pypaimon's batch write of a postpone-bucket table (``bucket = -2``) straight into
        fixed buckets, readable at once: a partition keeps the bucket count of its real
        buckets, a new one gets one planned from ``postpone.*`` options
        (``paimon_rs.postpone_write``). Other tables: ``InvalidArgumentError``."""
        from paimon_rs.postpone_write import PostponeFixedBucketWriteBuilder

        return PostponeFixedBucketWriteBuilder(self)

    def new_stream_write_builder(self) -> StreamWriteBuilder:
        """A builder of a streaming job's write and commit: one write across many commits,
        each with an increasing identifier (``StreamWriteBuilder``)."""
        return StreamWriteBuilder(self)

    def new_stream_read_builder(self) -> StreamReadBuilder:
        """A builder of a streaming read (pypaimon's): a plan per snapshot as they are
        committed, from ``scan.mode``'s start; see ``paimon_rs.stream_read``."""
        from paimon_rs.stream_read import StreamReadBuilder

        return StreamReadBuilder(self)

    def new_read_builder(self, snapshot_id: Optional[int] = None, tag: Optional[str] = None) -> ReadBuilder:
        """A builder of reads of this table (projection, filter, limit, then scan and read).

        Args:
            snapshot_id: read that snapshot (time travel): the same as
                ``table.copy({"scan.snapshot-id": str(snapshot_id)}).new_read_builder()``.
            tag: read the snapshot of that tag: ``copy({"scan.tag-name": tag})``.

        Raises:
            InvalidArgumentError: both given, a snapshot that does not exist (expired or not
                yet committed) or a tag that does not, here rather than at read time; or
                another time-travel option (``scan.timestamp-millis``, ...) already set on
                this table handle.
        """
        if snapshot_id is None and tag is None:
            return ReadBuilder(self)
        return ReadBuilder(self._time_travel(snapshot_id, tag, "new_read_builder"))

    def delete(self, filter: Union[Predicate, str]) -> DeleteResult:
        """Delete the rows matching ``filter`` (a ``Predicate`` or a filter string, as
        ``ReadBuilder.with_filter``) in one snapshot; returns a
        ``paimon_rs.mutations.DeleteResult`` (``num_deleted_rows``, ``snapshot_id``; None when
        nothing matched and nothing was committed).

        Primary-key tables (``deduplicate`` merge engine): the matching rows are read and
        written back as ``-D`` rows. Append tables: the partitions holding matching rows are
        read and written back without them (an INSERT OVERWRITE of those partitions; with
        several partitions of which some end up empty, of the whole table).

        Raises:
            InvalidArgumentError: no filter, or a bad filter string.
            UnsupportedError: another merge engine, ``ignore-delete``, dynamic buckets.
            CommitConflictError: other commits kept changing the table meanwhile (nothing
                was committed; retry).

        Example::

            table.delete("dt = '2024-01-01' AND id IN (3, 4)").num_deleted_rows
        """
        from paimon_rs.mutations import delete
        return delete(self, filter)

    def merge(self, source: Any, on: Sequence[str]) -> MergeBuilder:
        """A ``paimon_rs.mutations.MergeBuilder``: match ``source`` rows (pyarrow, pandas,
        polars) to this table's rows by the ``on`` columns (for a primary-key table, exactly
        its primary key), add ``when_matched_update`` / ``when_matched_update_all`` /
        ``when_matched_delete`` / ``when_not_matched_insert`` / ``when_not_matched_insert_all``
        clauses, then ``execute()`` them in one snapshot.

        Example::

            (table.merge(df, on=["id"]).when_matched_update_all()
                  .when_not_matched_insert_all().execute())
        """
        return MergeBuilder(self, source, on)

    def _time_travel(self, snapshot_id: Optional[int], tag: Optional[str], what: str) -> Table:
        """This table pinned to ``snapshot_id`` or ``tag`` (both checked to exist now)."""
        if snapshot_id is not None and tag is not None:
            raise InvalidArgumentError(f"{what} on {self.identifier}: give snapshot_id or tag, not both")
        key = "scan.snapshot-id" if snapshot_id is not None else "scan.tag-name"
        given = {k: v for k, v in self.options.items() if k in TIME_TRAVEL_OPTIONS and k != key}
        if given:
            raise InvalidArgumentError(
                f"{what} on {self.identifier}: this table handle already travels in time with "
                f"{given}; take snapshot_id/tag on a handle without it")
        if snapshot_id is not None:
            if isinstance(snapshot_id, bool) or not isinstance(snapshot_id, int):
                raise InvalidArgumentError(f"{what}: snapshot_id must be an int, got {snapshot_id!r}")
            ids = _core.snapshot_ids(self._core)
            if snapshot_id not in ids:
                have = f"snapshots {ids[0]}..{ids[-1]}" if ids else "no snapshot"
                raise InvalidArgumentError(
                    f"{what}: snapshot {snapshot_id} of {self.identifier} does not exist (the table "
                    f"has {have}; expired snapshots cannot be read, tags can)")
            return self.copy({key: str(snapshot_id)})
        assert tag is not None
        if not isinstance(tag, str):
            raise InvalidArgumentError(f"{what}: tag must be a tag name (str), got {tag!r}")
        tags = self.list_tags()
        if tag not in tags:
            from paimon_rs.predicate import suggest_column
            hint = suggest_column(tag, tags).split(" (columns")[0] if tags else ""
            raise InvalidArgumentError(
                f"{what}: tag '{tag}' of {self.identifier} doesn't exist{hint} (tags: {tags})")
        return self.copy({key: tag})

    # ---- one-line reads and writes ----

    def _read_builder(self, filter: Union[Predicate, str, None], projection: Optional[List[str]],
                      snapshot_id: Optional[int], limit: Optional[int], tag: Optional[str],
                      what: str) -> ReadBuilder:
        rb = self.new_read_builder(snapshot_id=snapshot_id, tag=tag)
        if filter is not None:
            from paimon_rs.filter_parser import optional_filter
            # the columns a filter may name: the table's and, tracking rows, _ROW_ID / _SEQUENCE_NUMBER
            rb._predicate = optional_filter(filter, _with_system_columns(self), what)
        if projection is not None:
            rb.with_projection(projection)
        if limit is not None:
            if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
                raise InvalidArgumentError(f"{what}: limit must be an int >= 0, got {limit!r}")
            rb.with_limit(limit)
        return rb

    def to_arrow(self, filter: Union[Predicate, str, None] = None, projection: Optional[List[str]] = None,
                 snapshot_id: Optional[int] = None, limit: Optional[int] = None,
                 tag: Optional[str] = None) -> pa.Table:
        """Read the table (plan and read every split) into one pyarrow Table.

        Args:
            filter: a ``Predicate`` or a filter string (``"id > 3 AND v LIKE 'a%'"``, see
                ``ReadBuilder.with_filter``).
            projection: the columns to return, in this order (default: all).
            snapshot_id: read that snapshot instead of the latest (``new_read_builder``).
            limit: at most this many rows.
            tag: read the snapshot of this tag.

        Raises:
            InvalidArgumentError: a bad filter string, an unknown snapshot or tag, a bad limit.
            SchemaMismatchError: an unknown projected column.

        Example::

            table.to_arrow("dt = '2024-01-01'", projection=["id", "v"], limit=10)
        """
        rb = self._read_builder(filter, projection, snapshot_id, limit, tag, "to_arrow")
        return rb.new_read().to_arrow(rb.new_scan().plan().splits())

    def to_pandas(self, filter: Union[Predicate, str, None] = None, projection: Optional[List[str]] = None,
                  snapshot_id: Optional[int] = None, limit: Optional[int] = None,
                  tag: Optional[str] = None) -> Any:
        """``to_arrow`` (same arguments) as a pandas DataFrame (``TableRead.to_pandas``: integer
        and boolean columns with NULLs become nullable dtypes). Raises ``ImportError`` (``pip
        install pandas``) without pandas."""
        _optional_import("pandas", "to_pandas")
        rb = self._read_builder(filter, projection, snapshot_id, limit, tag, "to_pandas")
        return rb.new_read().to_pandas(rb.new_scan().plan().splits())

    def to_polars(self, filter: Union[Predicate, str, None] = None, projection: Optional[List[str]] = None,
                  snapshot_id: Optional[int] = None, limit: Optional[int] = None,
                  tag: Optional[str] = None) -> Any:
        """``to_arrow`` (same arguments) as a polars DataFrame. Raises ``ImportError`` (``pip
        install polars``) without polars."""
        _optional_import("polars", "to_polars")
        rb = self._read_builder(filter, projection, snapshot_id, limit, tag, "to_polars")
        return rb.new_read().to_polars(rb.new_scan().plan().splits())

    def write(self, data: Any, mode: str = "append",
              overwrite_partition: Optional[Dict[str, Any]] = None) -> Optional[int]:
        """Write ``data`` and commit it as one snapshot; returns its id (None if nothing changed).

        Args:
            data: a pyarrow Table / RecordBatch / RecordBatchReader, a polars DataFrame, any
                object with ``__arrow_c_stream__``, or a pandas DataFrame (``write_pandas``:
                columns converted to the table's types).
            mode: ``"append"`` (primary-key tables: upsert by key) or ``"overwrite"``
                (INSERT OVERWRITE, ``BatchWriteBuilder.overwrite``).
            overwrite_partition: with ``mode="overwrite"``: ``{"dt": "2024-01-01"}`` replaces
                that partition, ``{}`` the whole table. None replaces, on a partitioned table
                with ``dynamic-partition-overwrite`` = true (Paimon's default), only the
                partitions present in ``data``; otherwise the whole table.

        On any failure nothing is committed: the written files are deleted (the commit's
        messages are aborted) and the error is raised.

        Raises:
            InvalidArgumentError: an unknown mode, ``overwrite_partition`` with
                ``mode="append"``, or a partition key that is not one.
            SchemaMismatchError: data that does not fit the table.
            TypeError: data that is not a table.

        Example::

            table.write(pa.table({"id": [1, 2], "v": ["a", "b"]}))
            table.write(df, mode="overwrite", overwrite_partition={"dt": "2024-01-01"})
        """
        if mode not in ("append", "overwrite"):
            raise InvalidArgumentError(f"write on {self.identifier}: mode must be 'append' or "
                                       f"'overwrite', got {mode!r}")
        if mode == "append" and overwrite_partition is not None:
            raise InvalidArgumentError(f"write on {self.identifier}: overwrite_partition "
                                       f"{overwrite_partition!r} needs mode='overwrite'")
        builder = self.new_batch_write_builder()
        if mode == "overwrite":
            builder.overwrite(overwrite_partition)
        with builder.new_write() as w:
            _write_any(w, data, "write")
            messages = w.prepare_commit()
        return commit_or_abort(builder, messages)

    def latest_snapshot_id(self) -> Optional[int]:
        return self._core.latest_snapshot_id()

    def drop_partitions(self, partitions: List[Dict[str, Any]]) -> Optional[int]:
        """Drop partitions (``[{"dt": "2024-01-01"}, ...]``, a prefix of the keys allowed) in one
        OVERWRITE snapshot (Java's ``dropPartitions``); returns its id, None if nothing was in
        them. See docs/partitions.md."""
        return self.new_batch_write_builder().new_commit().truncate_partitions(partitions)

    def expire_partitions(self) -> List[Dict[str, Optional[str]]]:
        """Drop the partitions older than ``partition.expiration-time`` now, whatever the check
        interval (Java's ``expire_partitions`` procedure with the table's options); returns them
        ({key: value text}). Nothing without the option or on an unpartitioned table."""
        commit = self._core.new_commit(_new_commit_user(self))
        expired, _snapshot = commit.expire_partitions(BATCH_COMMIT_IDENTIFIER)
        return expired

    def remove_orphan_files(self, older_than: OlderThan = None, dry_run: bool = False) -> RemoveOrphanFilesResult:
        """Remove files no snapshot, tag, changelog or branch references (crash leftovers:
        uncommitted data files, manifests and manifest lists, temp files) that were last modified
        before ``older_than`` (a ``datetime.timedelta`` back from now, a ``datetime``, or epoch
        millis; default one day, as Paimon's ``RemoveOrphanFilesAction``), then the bucket and
        partition directories left empty. Refuses with ``CorruptFileError``, deleting nothing, if
        any referenced file is missing or unreadable. ``dry_run=True`` only lists. Returns a
        ``paimon_rs.maintenance.RemoveOrphanFilesResult`` (``files``, ``bytes``,
        ``directories``)."""
        return remove_orphan_files(self._core, older_than, dry_run)

    def compact(self, full: bool = True, partitions: Optional[List[Dict[str, Any]]] = None,
                progress: Optional[ProgressCallback] = None) -> Optional[int]:
        """Compact the table and commit the result as one COMPACT snapshot.

        ``full=True`` merges every bucket's sorted runs into one run at the top level (reads
        then need no merging; deletes are dropped); ``full=False`` runs, per bucket, what the
        universal compaction picker chooses (``num-sorted-run.compaction-trigger``,
        ``compaction.size-ratio``, ...), as Java Paimon's compaction job does. ``partitions``
        limits it to the partitions matching one of the given ``{column: value}`` specs.
        Returns the new snapshot id, or ``None`` if nothing needed compacting. Reads before and
        after give the same rows. Append tables: their small files are rewritten into
        target-size files (``full=False``: Java's small-file pick; docs/compaction.md, "Append tables, plan and
        CLI"). See :meth:`compaction_plan` for what ``full=False`` would do. A concurrent
        commit that removed the inputs raises ``CommitConflictError`` and leaves the table as it
        was. ``progress`` (a ``paimon_rs.progress.ProgressCallback``, e.g. ``TqdmProgress()``)
        gets a ``Progress(phase="compact")`` before the work, after each finished (partition,
        bucket) and, with ``done=True``, after the commit; an exception from it stops the
        compaction before anything is committed."""
        batches = None
        if partitions is not None:
            schema = self.arrow_schema
            batches = [_partition_batch(schema, p, "compact") for p in partitions]
        if progress is None:
            return self._core.compact(full, batches)
        last: List[Progress] = []

        def report(buckets: int, total: int, files: int, nbytes: int, rows: int,
                   files_out: int, bytes_out: int, rows_out: int) -> None:
            p = Progress("compact", rows, nbytes, files, buckets=buckets, total_buckets=total,
                         rows_out=rows_out, bytes_out=bytes_out, files_out=files_out)
            last[:] = [p]
            progress(p)
        sid = self._core.compact(full, batches, report)
        end = last[0] if last else Progress("compact", 0, 0, 0, buckets=0, total_buckets=0,
                                            rows_out=0, bytes_out=0, files_out=0)
        progress(dataclasses.replace(end, done=True))
        return sid

    def sort_compact(self, order_strategy: str, order_by: List[str],
                     partitions: Optional[List[Dict[str, Any]]] = None) -> Optional[int]:
        """Sort compaction: rewrite the table's files with their rows clustered by
        ``order_by``, so that filters on those columns skip most files (min/max statistics).

        ``order_strategy``: ``"order"`` (lexicographic, nulls first), ``"zorder"`` or
        ``"hilbert"`` (at least two columns), with Java Paimon's index bytes per type (files
        clustered here prune like files Java clusters). For bucket-unaware append tables
        (``bucket = -1``) and dynamic-bucket primary-key tables; ``partitions`` limits it to the
        partitions matching one of the given ``{column: value}`` specs. Each partition's rows
        are sorted whole. An append table's are written in files of ``target-file-size``; one
        OVERWRITE snapshot replaces exactly the files read, so an append committed meanwhile
        stays, and a commit that removed one of those files raises ``CommitConflictError``
        (nothing committed). A dynamic-bucket table's rows go through its overwrite writer (as
        Java): keys are assigned to fresh buckets in sort order and the hash index rebuilt, in
        one OVERWRITE snapshot of the partitions. Deletion-vector tables: the rows the vectors
        mark are not written again and the rewritten files' vectors leave the index; a delete
        committed meanwhile on the rewritten files raises ``CommitConflictError`` (nothing
        committed, the delete kept). Returns the snapshot id, ``None`` if there were no files.
        Raises ``InvalidArgumentError`` for an unknown strategy or column, and for bucketed and
        cross-partition tables (as Java: "Sort Compact only supports bucket=-1 yet.");
        ``UnsupportedError`` for nested order columns. See docs/compaction.md, "Sort
        compaction"."""
        batches = None
        if partitions is not None:
            schema = self.arrow_schema
            batches = [_partition_batch(schema, p, "sort_compact") for p in partitions]
        return self._core.sort_compact(order_strategy, list(order_by), batches)

    def compaction_plan(self) -> List[Any]:
        """Per (partition, bucket) of the latest snapshot: the sorted runs and what a compaction
        would do now and why — a list of ``paimon_rs.compaction.BucketCompactionPlan``
        (printable)."""
        from paimon_rs.compaction import compaction_plan
        return list(compaction_plan(self._core))

    # ---- snapshots and partitions, read-only (paimon_rs.snapshot; issue 15) ----

    def consumer_manager(self) -> ConsumerManager:
        """The consumers of this table's branch (``paimon_rs.consumer.ConsumerManager``,
        pypaimon's): their ``next_snapshot``, which snapshot expiry keeps."""
        return ConsumerManager(self.file_io, self.table_path, self.current_branch())

    def snapshot_manager(self) -> SnapshotManager:
        """The table's snapshots (``paimon_rs.snapshot.SnapshotManager``, pypaimon's names):
        ``get_latest_snapshot()``, ``get_snapshot_by_id(id)``, ``try_get_earliest_snapshot()``,
        ``list_snapshots()``; iterating yields every snapshot still present, oldest first."""
        return SnapshotManager(self._core)

    def snapshots(self) -> pa.Table:
        """Every snapshot still present as an Arrow table (one row each, oldest first, the
        columns of Paimon's ``$snapshots`` system table)."""
        from paimon_rs.snapshot import snapshots_table
        return snapshots_table(SnapshotManager(self._core).list_snapshots())

    def list_partitions(self, snapshot_id: Optional[int] = None) -> List[Partition]:
        """Per partition of the latest snapshot (or ``snapshot_id``), sorted by partition
        path: a ``paimon_rs.snapshot.Partition`` (pypaimon's fields: ``spec``,
        ``record_count``, ``file_size_in_bytes``, ``file_count``, ``last_file_creation_time``,
        ``total_buckets``), from the manifests only (no data file is read). An unpartitioned
        table has one entry with an empty spec once it holds files."""
        from paimon_rs.snapshot import list_partitions
        return list_partitions(self._core, snapshot_id)

    # ---- end of snapshots and partitions ----

    def changelog(self, start_snapshot: int, end_snapshot: Optional[int] = None,
                  filter: Optional[Predicate] = None, projection: Optional[List[str]] = None) -> pa.Table:
        """The changelog of snapshots ``(start_snapshot, end_snapshot]`` (default: up to the latest),
        unmerged, row kind first in ``rowkind``; see ``paimon_rs.changelog`` and README "Time travel"."""
        from paimon_rs.changelog import read_changelog
        return read_changelog(self, start_snapshot, end_snapshot, filter, projection)

    def __repr__(self) -> str:
        kind = f"primary key {self.primary_keys}" if self.primary_keys else "append"
        parts = [repr(str(self.identifier)), kind, f"bucket={self.total_buckets}"]
        if self.partition_keys:
            parts.append(f"partitioned by {self.partition_keys}")
        if self.current_branch() != "main":
            parts.append(f"branch={self.current_branch()!r}")
        travel = {k: v for k, v in self.options.items() if k in TIME_TRAVEL_OPTIONS}
        if travel:
            parts.append(f"reading {travel}")
        return f"Table({', '.join(parts)})"

    # --- pypaimon 2.1.0 names (FileStoreTable), see docs/pypaimon-parity.md ---

    @property
    def table_schema(self) -> TableSchema:
        """The stored schema (field ids, Paimon types, keys, options, comment)."""
        return TableSchema.from_json(self._core.schema_json)

    def schema(self) -> TableSchema:
        """The stored schema (pypaimon's ``table.schema()``)."""
        return self.table_schema

    def comment(self) -> Optional[str]:
        """The table comment."""
        return self._core.comment

    @property
    def fields(self) -> List[DataField]:
        return self.table_schema.fields

    @property
    def field_names(self) -> List[str]:
        return list(self._arrow_schema.names)

    @property
    def field_dict(self) -> Dict[str, DataField]:
        return {f.name: f for f in self.fields}

    @property
    def partition_keys_fields(self) -> List[DataField]:
        d = self.field_dict
        return [d[k] for k in self.partition_keys]

    @property
    def primary_keys_fields(self) -> List[DataField]:
        d = self.field_dict
        return [d[k] for k in self.primary_keys]

    @property
    def trimmed_primary_keys(self) -> List[str]:
        """The primary key without the partition keys (what files are sorted by)."""
        return [k for k in self.primary_keys if k not in self.partition_keys]

    @property
    def trimmed_primary_keys_fields(self) -> List[DataField]:
        d = self.field_dict
        return [d[k] for k in self.trimmed_primary_keys]

    @property
    def is_primary_key_table(self) -> bool:
        return bool(self.primary_keys)

    @property
    def cross_partition_update(self) -> bool:
        return self.table_schema.cross_partition_update()

    @property
    def total_buckets(self) -> int:
        """The ``bucket`` option (-1: dynamic or unaware bucket mode)."""
        return self.options.bucket()

    def bucket_mode(self) -> BucketMode:
        """How rows are assigned to buckets (pypaimon's ``BucketMode``)."""
        b = self.total_buckets
        if b == -2:
            return BucketMode.POSTPONE_MODE
        if b > 0:
            return BucketMode.HASH_FIXED
        if not self.is_primary_key_table:
            return BucketMode.BUCKET_UNAWARE
        return BucketMode.CROSS_PARTITION if self.cross_partition_update else BucketMode.HASH_DYNAMIC

    def current_branch(self) -> str:
        """The branch this handle reads and writes: ``"main"``, or the one named by the
        ``branch`` option or a ``db.t$branch_<name>`` identifier."""
        return _core.current_branch(self._core)

    # --- branches (docs/table-operations.md, "Branches"); Java's Table names, pypaimon's on the catalog ---

    def create_branch(self, branch_name: str, tag_name: Optional[str] = None,
                      ignore_if_exists: bool = False) -> None:
        """Create branch ``branch_name`` (``<table>/branch/branch-<name>/``, as Java lays it
        out): empty with the current schema, or from tag ``tag_name`` (its snapshot and schemas
        are copied, so the branch starts at the tagged state). Java's refusals (``main``, blank,
        numeric-only or existing names, a missing tag) raise ``InvalidArgumentError``."""
        _core.create_branch(self._core, branch_name, tag_name, ignore_if_exists)

    def delete_branch(self, branch_name: str) -> None:
        """Delete a branch (its directory); files only it referenced are left for expiry and
        ``remove_orphan_files``."""
        _core.drop_branch(self._core, branch_name)

    def drop_branch(self, branch_name: str) -> None:
        """``delete_branch`` (pypaimon's branch-manager name)."""
        self.delete_branch(branch_name)

    def rename_branch(self, from_branch: str, to_branch: str) -> None:
        """Rename a branch (its files are copied to the new name, then the old one is deleted)."""
        _core.rename_branch(self._core, from_branch, to_branch)

    def list_branches(self) -> List[str]:
        """The table's branches (``main`` not included), sorted."""
        return list(_core.list_branches(self._core))

    def tag_manager(self) -> TagManager:
        """pypaimon's ``tag_manager()`` (``paimon_rs.tags.TagManager``): ``get``, ``create_tag``,
        ``replace_tag``, ``delete_tag``, ``rename_tag``, ``list_tags``, ``tag_path``."""
        return TagManager(self)

    def branch_manager(self) -> BranchManager:
        """pypaimon's ``branch_manager()``: ``create_branch``, ``drop_branch``,
        ``rename_branch``, ``fast_forward``, ``branches``, ``branch_exists``."""
        return BranchManager(self)

    def fast_forward(self, branch_name: str) -> None:
        """Make this handle's branch (``main`` usually) take over ``branch_name``'s history, as
        Java's ``fastForward``: the branch's snapshots, schemas and tags from its earliest
        snapshot on replace this branch's, whose later ones are deleted."""
        _core.fast_forward(self._core, branch_name)

    def switch_to_branch(self, branch_name: str) -> Table:
        """This table on branch ``branch_name`` (``copy({"branch": name})``, Java's
        ``switchToBranch``): reads and writes go to the branch."""
        return self.copy({"branch": branch_name})

    def list_tags(self) -> List[str]:
        """Names of the table's tags (``tag/tag-<name>``), sorted."""
        return [t.name for t in table_ops.list_tag_infos(self._core)]

    def tags(self) -> List[table_ops.TagInfo]:
        """The tags with their snapshot ids, commit times and retentions, by name."""
        return table_ops.list_tag_infos(self._core)

    def create_tag(self, tag_name: str, snapshot_id: Optional[int] = None, ignore_if_exists: bool = False,
                   time_retained: table_ops.Duration = None) -> None:
        """Tag a snapshot (the latest if ``snapshot_id`` is None), as pypaimon: the tag file
        ``tag/tag-<name>`` is Paimon's (Java reads it). ``time_retained`` (``"1 d"``, a
        ``timedelta``; default ``tag.default-time-retained``) lets a commit delete the tag once it
        is that old. Raises ``InvalidArgumentError`` (a ``ValueError``) if the tag exists (unless
        ``ignore_if_exists``) or the snapshot does not."""
        table_ops.create_tag(self._core, tag_name, snapshot_id, ignore_if_exists, time_retained)

    def delete_tag(self, tag_name: str) -> bool:
        """Delete a tag and the files only it kept (its snapshot expired); False if it did not
        exist."""
        return table_ops.delete_tag(self._core, tag_name)

    def rename_tag(self, old_name: str, new_name: str) -> None:
        """Rename a tag (Java's ``renameTag``: the old one must exist, the new one must not)."""
        _core.rename_tag(self._core, old_name, new_name)

    def replace_tag(self, tag_name: str, snapshot_id: Optional[int] = None,
                    time_retained: table_ops.Duration = None) -> table_ops.ReclaimResult:
        """Point the existing tag ``tag_name`` at ``snapshot_id`` (the latest if None), with
        ``time_retained`` if given (Java's and pypaimon's ``replace_tag``). Files only the old
        tag kept are deleted, as ``delete_tag`` does; returns them."""
        return table_ops._result(_core.replace_tag(
            self._core, tag_name, snapshot_id, table_ops.duration_text(time_retained, "time_retained")))

    def rollback_to_timestamp(self, timestamp_millis: int) -> table_ops.ReclaimResult:
        """Roll back to the newest snapshot committed at or before ``timestamp_millis``
        (pypaimon's ``rollback_to_timestamp``); ``InvalidArgumentError`` if there is none."""
        return table_ops._result(_core.rollback_to_timestamp(self._core, int(timestamp_millis)))

    def rollback_to(self, target: Union[int, str]) -> table_ops.ReclaimResult:
        """Roll back to a snapshot id (int) or a tag name (str), as Java's ``RollbackHelper``:
        newer snapshots and the tags on them are deleted, then the files only they referenced.
        Returns what was deleted (``ReclaimResult``)."""
        return table_ops.rollback_to(self._core, target)

    def expire_snapshots(self, retain_min: Optional[int] = None, retain_max: Optional[int] = None,
                         older_than: table_ops.Duration = None,
                         max_deletes: Optional[int] = None) -> table_ops.ReclaimResult:
        """Expire snapshots now, as a commit does (Java's ``ExpireSnapshots``): keep at least
        ``retain_min`` (``snapshot.num-retained.min``, 10) and at most ``retain_max``
        (``snapshot.num-retained.max``), expire those older than ``older_than``
        (``snapshot.time-retained``, 1 h: a ``timedelta``, millis or ``"1 h"``), at most
        ``max_deletes`` (``snapshot.expire.limit``, 50) per call. Deletes every file no remaining
        snapshot, tag, branch or long-lived changelog references; returns a ``ReclaimResult``.

        When the table's changelog retention (``changelog.num-retained.min`` / ``.max``,
        ``changelog.time-retained``, each defaulting to the snapshot option) outlives the
        snapshots, each expired snapshot is kept as ``changelog/changelog-<id>`` with what its
        changelog needs (``Table.changelog`` and incremental reads still read it), and those
        long-lived changelogs are then expired by their own retention (``ReclaimResult.changelogs``),
        as Java's ``ExpireChangelogImpl``."""
        return table_ops.expire_snapshots(self._core, retain_min, retain_max, older_than, max_deletes)

    @staticmethod
    def from_path(table_path: str, file_io_options: Optional[Dict[str, str]] = None) -> Table:
        """Open the table at ``<warehouse>/<db>.db/<table>`` without a catalog (e.g. one Java
        wrote). A local path (``file_io_options`` must be empty), or an object store URI whose
        store ``file_io_options`` configure (docs/object-stores.md)."""
        if "://" in str(table_path) and not str(table_path).startswith("file://"):
            return Table.open(str(table_path).rstrip("/"), file_io_options)
        if file_io_options:
            raise UnsupportedError(f"from_path: file_io_options {sorted(file_io_options)} "
                                   "(paimon_rs reads local filesystems only)")
        local = str(table_path)
        # file:///wh/db.db/t (or file:/wh/...) is the local path, as for a catalog's warehouse
        local = local[len("file://"):] if local.startswith("file://") else local
        local = local[len("file:"):] if local.startswith("file:") else local
        path = os.path.abspath(local).rstrip(os.sep)
        db_dir, name = os.path.split(path)
        warehouse, db = os.path.split(db_dir)
        if not db.endswith(".db") or not name:
            raise InvalidArgumentError(
                f"from_path: '{table_path}' is not <warehouse>/<database>.db/<table>")
        if not os.path.isdir(os.path.join(path, "schema")):
            raise TableNotFoundError(f"from_path: no table at '{table_path}' (no schema directory)")
        return Table(_core.Catalog(warehouse).get_table(f"{db[:-3]}.{name}"))


class BranchManager:
    """pypaimon's ``FileSystemBranchManager`` over a table (``table.branch_manager()``)."""

    def __init__(self, table: Table):
        self._table = table

    def create_branch(self, branch_name: str, tag_name: Optional[str] = None,
                      ignore_if_exists: bool = False) -> None:
        self._table.create_branch(branch_name, tag_name, ignore_if_exists)

    def drop_branch(self, branch_name: str) -> None:
        self._table.delete_branch(branch_name)

    def rename_branch(self, from_branch: str, to_branch: str) -> None:
        self._table.rename_branch(from_branch, to_branch)

    def fast_forward(self, branch_name: str) -> None:
        self._table.fast_forward(branch_name)

    def branches(self) -> List[str]:
        return self._table.list_branches()

    def branch_exists(self, branch_name: str) -> bool:
        return branch_name == "main" or branch_name in self.branches()


class BucketMode(Enum):
    """pypaimon's ``BucketMode``."""

    HASH_FIXED = "HASH_FIXED"
    HASH_DYNAMIC = "HASH_DYNAMIC"
    CROSS_PARTITION = "CROSS_PARTITION"
    BUCKET_UNAWARE = "BUCKET_UNAWARE"
    POSTPONE_MODE = "POSTPONE_MODE"

    def __str__(self) -> str:
        return self.value


class TableOptions(Dict[str, str]):
    """A table's options: a plain ``dict`` of strings that also answers pypaimon's
    ``CoreOptions`` calls (every typed accessor of ``paimon_rs.options.CoreOptions``:
    ``bucket()``, ``file_format()``, ``target_file_size(pk)``, ...; ``options.to_map()``,
    ``get(CoreOptions.X)`` (the stored string), ``contains(...)``)."""

    def __init__(self, options: Dict[str, str], primary_key: bool = False):
        super().__init__(options)
        self._primary_key = primary_key

    @property
    def options(self) -> TableOptions:
        """pypaimon's ``CoreOptions.options`` (its ``Options``): this mapping itself."""
        return self

    def to_map(self) -> Dict[str, str]:
        return dict(self)

    def get(self, key: Any, default: Any = None) -> Any:  # type: ignore[override]
        """``get("bucket")`` or ``get(CoreOptions.BUCKET)``."""
        k = key.key() if isinstance(key, ConfigOption) else key
        return super().get(k, default)

    def contains(self, key: Union[str, ConfigOption]) -> bool:
        return (key.key() if isinstance(key, ConfigOption) else key) in self

    def __getattr__(self, name: str) -> Any:
        """The other typed accessors of ``paimon_rs.options.CoreOptions`` (``target_file_size``,
        ``commit_max_retries``, ...), over these options."""
        from paimon_rs.options import CoreOptions

        attr = getattr(CoreOptions, name, None) if not name.startswith("_") else None
        if attr is None or isinstance(attr, ConfigOption) or not callable(attr):
            raise AttributeError(f"{type(self).__name__} has no attribute {name!r}")
        return getattr(CoreOptions(dict(self)), name)


def _partition_batch(schema: pa.Schema, spec: Dict[str, Any], what: str) -> pa.RecordBatch:
    """A one-row batch of the partition values of ``spec`` (typed as the table's columns)."""
    arrays, fields = [], []
    for k, v in spec.items():
        if k not in schema.names:
            raise InvalidArgumentError(f"{what}: '{k}' is not a column of the table")
        f = schema.field(k)
        try:
            arrays.append(pa.array([v], type=f.type) if not isinstance(v, str) or pa.types.is_string(f.type)
                          else pa.array([v]).cast(f.type))
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError) as e:
            raise InvalidArgumentError(f"{what}: value {v!r} does not fit '{k}' ({f.type}): {e}") from e
        fields.append(pa.field(k, f.type))
    return pa.RecordBatch.from_arrays(arrays, schema=pa.schema(fields))


def _drop_specs(table: Table, partitions: List[Dict[str, Any]], what: str) -> List[pa.RecordBatch]:
    """Partition specs to drop as one-row batches: not empty, partition keys only (pypaimon's
    checks), the default partition name read as NULL."""
    if not partitions:
        raise InvalidArgumentError("Partitions list cannot be empty.")
    keys = table.partition_keys
    default = table.options.get("partition.default-name", "__DEFAULT_PARTITION__")
    out = []
    for part in partitions:
        if not part:
            raise InvalidArgumentError(f"{what}: an empty partition spec")
        for k in part:
            if k not in keys:
                raise InvalidArgumentError(
                    f"Partition spec key '{k}' is not a partition column. Partition keys are: {keys}.")
        spec = {k: None if v == default else v for k, v in part.items()}
        out.append(_partition_batch(table.arrow_schema, spec, what))
    return out


def _new_commit_user(table: Table) -> str:
    """A fresh commit user of ``table``'s write builders: a UUID, after ``commit.user-prefix``
    and ``_`` when the table sets it (Java's ``CoreOptions.createCommitUser``)."""
    prefix = table._core.options.get("commit.user-prefix")
    return str(uuid.uuid4()) if prefix is None else f"{prefix}_{uuid.uuid4()}"


def _reopen(path: str, options: Dict[str, str], name: str) -> Table:
    return Table.open(path, options, name)


class BatchWriteBuilder:
    """Creates the write and the commit of one batch job; ``overwrite()`` turns the commit into
    an INSERT OVERWRITE (see there)."""

    def __init__(self, table: Table):
        self.table = table
        self.commit_user = _new_commit_user(table)
        self.static_partition: Optional[Dict[str, Any]] = None
        self._overwrite = False

    def with_commit_user(self, commit_user: str) -> BatchWriteBuilder:
        """Commit as ``commit_user`` (Java's ``withCommitUser``; default: a fresh UUID per
        builder, after ``commit.user-prefix`` and ``_`` if set). A stable commit user makes
        ``commit(messages, commit_identifier=n)`` idempotent across processes: a retry of an
        identifier this user already committed returns that snapshot's id without committing
        again."""
        if not isinstance(commit_user, str) or not commit_user:
            raise InvalidArgumentError("with_commit_user: the commit user must be a non-empty string")
        self.commit_user = commit_user
        return self

    def overwrite(self, static_partition: Optional[Dict[str, Any]] = None) -> BatchWriteBuilder:
        """INSERT OVERWRITE. ``overwrite({"dt": ...})`` replaces that static partition (every
        written row must lie in it; an empty write empties it), ``overwrite({})`` the whole
        table. ``overwrite()`` without a partition replaces, on a partitioned table with
        ``dynamic-partition-overwrite`` = true (Paimon's default), only the partitions present
        in the data (nothing if the write is empty); otherwise the whole table."""
        spec = None if static_partition is None else dict(static_partition)
        for k in spec or {}:
            if k not in self.table.partition_keys:
                raise InvalidArgumentError(
                    f"overwrite: '{k}' is not a partition key of {self.table.identifier}"
                )
        self.static_partition = spec
        self._overwrite = True
        return self

    def new_write(self) -> BatchTableWrite:
        # the overwrite replaces the partitions' live files: its writer compacts only its new
        # files (Java's overwrite writers ignore previous files)
        w = BatchTableWrite(self.table, ignore_previous_files=self._overwrite)
        w._progress = getattr(self, "_progress", None)
        return w

    def with_progress(self, callback: Optional[ProgressCallback]) -> BatchWriteBuilder:
        """Call ``callback(paimon_rs.progress.Progress)`` as the writes of this builder go:
        after each ``write_*`` call (rows and bytes handed over) and at ``prepare_commit`` (data
        files written). ``paimon_rs.progress.TqdmProgress()`` shows a tqdm bar."""
        self._progress = callback
        return self

    def new_update(self) -> BatchTableUpdate:
        """pypaimon's ``new_update``: column updates of existing rows of a data-evolution table
        by ``_ROW_ID`` (``paimon_rs.table_update``), committed with ``new_commit()``."""
        from paimon_rs.table_update import BatchTableUpdate

        return BatchTableUpdate(self.table, self.commit_user)

    def new_commit(self) -> BatchTableCommit:
        return BatchTableCommit(self.table, self.commit_user, self.static_partition,
                                dynamic_overwrite=self._overwrite and self.static_partition is None)

    # --- pypaimon 2.1.0 names ---

    def with_restore_snapshot(self, snapshot_id: int) -> BatchWriteBuilder:
        """pypaimon restores a writer from a given snapshot; paimon_rs writers always continue
        from the latest one (and a commit checks for conflicting writers since): refused."""
        raise UnsupportedError(
            "with_restore_snapshot: paimon_rs writers restore from the latest snapshot; a commit "
            "checks writers that committed in between (docs/concurrency.md)")


def _refuse_non_tables(data: Any) -> None:
    """Objects that are not tables but look close to one get a hint instead of a bare Arrow
    C Data interface error (checked by class, so neither polars nor pandas is imported)."""
    cls = type(data)
    module, name = cls.__module__.split(".")[0], cls.__name__
    hint = None
    if module == "polars" and name == "LazyFrame":
        hint = "call .collect() to get a polars DataFrame first"
    elif module in ("polars", "pandas") and name == "Series":
        hint = "call .to_frame() to get a one-column DataFrame first"
    elif isinstance(data, (pa.Array, pa.ChunkedArray)):
        hint = "wrap it in a table first, e.g. pa.table({'column': array})"
    if hint is not None:
        raise TypeError(f"write_arrow expects a table (named columns), got a {module} {name}: {hint}")


_INPUT_SCHEMA = "Input schema isn't consistent with table schema and write cols."


@contextmanager
def _input_schema_words() -> Iterator[None]:
    """A write's data that does not fit the table (a missing column, a type that does not
    convert) refused in pypaimon's words first, then what exactly does not fit."""
    try:
        yield
    except SchemaMismatchError as e:
        if e.args and isinstance(e.args[0], str) and not e.args[0].startswith(_INPUT_SCHEMA):
            e.args = (f"{_INPUT_SCHEMA} {e.args[0]}",) + tuple(e.args[1:])
        raise


class BatchTableWrite:
    """Buffers rows per (partition, bucket); ``prepare_commit`` writes them as files."""

    def __init__(self, table: Table, ignore_previous_files: bool = False):
        self.table = table
        self._core = table._core.new_write(ignore_previous_files)
        self._closed = False
        self._prepared = False
        self._rows: List[Dict[str, Any]] = []
        self._write_cols: Optional[List[str]] = None
        self._partial = False  # with_write_type of a data-evolution table: partial files
        self._progress: Optional[ProgressCallback] = None
        self._done = (0, 0)  # rows, bytes handed over (progress)

    def _check_open(self) -> None:
        if self._closed:
            raise PaimonRsError("this write is closed")
        if self._prepared:
            raise PaimonRsError("a batch write can only prepare_commit once; start a new write")

    def write_arrow(self, data: Any) -> None:
        """Write a pyarrow Table or any object exporting ``__arrow_c_stream__`` (polars,
        duckdb results, pyarrow RecordBatchReader). Columns are matched by name; integers
        convert into any integer column (each value checked), FLOAT into DOUBLE; string data
        is checked for valid UTF-8 and offsets."""
        self._check_open()
        _refuse_non_tables(data)
        with _input_schema_words():
            data = self._fill_left_out(data)
            if hasattr(data, "__arrow_c_stream__"):
                self._core.write_stream(data)
            elif hasattr(data, "__arrow_c_array__"):
                self._core.write_batch(data)
            else:
                raise TypeError(
                    f"write_arrow expects an Arrow table or stream, got {type(data).__name__}"
                )
        self._report_written(data)

    def _report_written(self, data: Any) -> None:
        if self._progress is None:
            return
        rows, nbytes = self._done
        # row and byte counts where the object tells them (pyarrow, polars); streams: unknown
        rows += int(getattr(data, "num_rows", None) or getattr(data, "height", 0) or 0)
        size = getattr(data, "nbytes", None)
        nbytes += int(size if isinstance(size, int) else 0)
        self._done = (rows, nbytes)
        self._progress(Progress("write", rows, nbytes, 0))

    def write_arrow_batch(self, batch: Any) -> None:
        """Write one pyarrow RecordBatch (or any ``__arrow_c_array__`` exporter)."""
        # the stream import when there is one: the engine's checks then name column and row
        self.write_arrow(batch)

    def write_pandas(self, df: Any) -> None:
        """Write a pandas DataFrame. Its columns become Arrow as pandas types them (missing
        values, NaN included, become nulls), then follow ``write_arrow``'s one conversion rule:
        a value goes into a column of another type only when that column holds it exactly (an
        integer column with missing values, float64 in pandas, lands in a BIGINT column;
        ``datetime64[ns]`` in a TIMESTAMP(6) column when no nanosecond digits are lost); strings
        are never parsed into numbers or dates."""
        self._check_open()
        data = pa.Table.from_pandas(df, preserve_index=False)
        with _input_schema_words():
            data = self._fill_left_out(data)
            self._core.write_stream(data)
        self._report_written(data)

    def prepare_commit(self) -> List[CommitMessage]:
        """Write the buffered rows as data files; returns the messages to commit."""
        return self._prepare_commit(None)

    def _prepare_commit(self, commit_identifier: Optional[int],
                        wait_compaction: bool = True) -> List[CommitMessage]:
        """``prepare_commit`` for the commit that will carry ``commit_identifier`` (a streaming
        write's; None: a batch commit): a ``full-compaction`` table compacts fully on every
        ``full-compaction.delta-commits``-th identifier and on every batch commit.
        ``wait_compaction``: see ``StreamTableWrite.prepare_commit``."""
        self._check_open()
        self._flush_rows()
        self._prepared = True
        messages = self._core.prepare_commit(commit_identifier, wait_compaction)
        if self._progress is not None:
            files = sum(len(m.file_names) for m in messages)
            self._progress(Progress("prepare_commit", self._done[0], self._done[1], files, done=True))
        return messages

    # --- pypaimon 2.1.0 names ---

    _ROW_BATCH = 4096

    @property
    def commit_user(self) -> Optional[str]:
        """pypaimon's write carries the builder's commit user; a paimon_rs write does not need
        one (the commit has it): None."""
        return None

    @property
    def table_pyarrow_schema(self) -> pa.Schema:
        return self.table.arrow_schema

    def write_row(self, row: Any) -> None:
        """Write one row: a ``dict`` by column name, a tuple/list in the table's column order
        (or the ``with_write_type`` columns), or a row object with ``fields`` and ``values``
        (pypaimon's ``GenericRow``). Rows are buffered and written in batches."""
        self._check_open()
        cols = self._write_cols or self.table.arrow_schema.names
        if isinstance(row, dict):
            values = row
        elif hasattr(row, "fields") and hasattr(row, "values"):
            values = {getattr(f, "name", f): v for f, v in zip(row.fields, row.values)}
        elif isinstance(row, (tuple, list)):
            if len(row) != len(cols):
                raise SchemaMismatchError(
                    f"write_row on {self.table.identifier}: a row of {len(row)} values for "
                    f"{len(cols)} columns {list(cols)}")
            values = dict(zip(cols, row))
        else:
            raise TypeError(f"write_row expects a dict, tuple, list or row, got {type(row).__name__}")
        missing = [c for c in cols if c not in values]
        unknown = [c for c in values if c not in cols]
        if missing or unknown:
            raise SchemaMismatchError(
                f"write_row on {self.table.identifier}: missing columns {missing}, unknown {unknown}")
        self._rows.append(values)
        if len(self._rows) >= self._ROW_BATCH:
            self._flush_rows()

    def _flush_rows(self) -> None:
        if not getattr(self, "_rows", None):
            return
        rows, self._rows = self._rows, []
        schema = self.table.arrow_schema
        target = pa.schema([schema.field(c) for c in (self._write_cols or schema.names)])
        try:
            data = pa.Table.from_pylist(rows, schema=target)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError) as e:
            raise SchemaMismatchError(f"write_row on {self.table.identifier}: {e}") from e
        self.write_arrow(data)

    def with_blob_consumer(self, blob_consumer: Optional[Callable[..., Any]]) -> BatchTableWrite:
        """pypaimon's hook told ``(field_name, BlobDescriptor)`` of each BLOB value as it is
        written. Refused with ``UnsupportedError``: the ``.blob`` files are written by the
        engine, which reports no descriptors back (read the table with
        ``blob-as-descriptor`` = true for them). ``None`` (no consumer) is accepted."""
        self._refuse_blob_hook("with_blob_consumer", blob_consumer,
                               "no descriptor of each value written is reported back; read the "
                               "table with 'blob-as-descriptor'='true' for them")
        return self

    def with_blob_uri_reader_factory(self, uri_reader_factory: Any) -> BatchTableWrite:
        """pypaimon's pluggable reader of the URIs of written ``BlobDescriptor`` values.
        Refused with ``UnsupportedError``: descriptors of local files (a path or ``file:``
        URI) are read by the engine, others are refused. ``None`` is accepted."""
        self._refuse_blob_hook("with_blob_uri_reader_factory", uri_reader_factory,
                               "descriptor values are read from local files only")
        return self

    def _refuse_blob_hook(self, method: str, hook: Any, why: str) -> None:
        self._check_open()
        if hook is not None:
            raise UnsupportedError(f"{method} on {self.table.identifier}: {why}")

    def with_write_type(self, write_cols: List[str]) -> BatchTableWrite:
        """Write only these columns. On a data-evolution table (``row-tracking.enabled`` and
        ``data-evolution.enabled``) the files hold only these columns (and name them in
        ``write_cols``), as pypaimon and Java write them: new rows whose other columns read as
        nulls until a file of the same row ids gives them, or, with ``first_row_id`` set on the
        messages' files before the commit, new values of these columns of existing rows
        (docs/paimon-behaviour.md §18). Other tables get whole rows with the
        other columns as nulls (they must be nullable): append tables and primary-key tables
        whose merge engine keeps the old value of a null field (``partial-update``;
        ``aggregation`` with ignore-null functions); a ``deduplicate`` table is refused (its
        nulls would replace the stored values). Call it before writing rows."""
        schema = self.table.arrow_schema
        for c in write_cols:
            if c not in schema.names:
                raise SchemaMismatchError(f"with_write_type: column '{c}' is not in {self.table.identifier}")
        cols = list(write_cols)
        if self._partial or self._rows:
            raise PaimonRsError(
                f"with_write_type on {self.table.identifier}: call it once, before writing rows")
        if len(set(cols)) == len(schema.names):
            self._write_cols = None
            return self
        if self._is_data_evolution():
            self._core.set_write_cols(cols)
            self._write_cols = cols
            self._partial = True
            return self
        engine = self.table.options.merge_engine()
        if self.table.is_primary_key_table and engine not in ("partial-update", "aggregation"):
            raise UnsupportedError(
                f"with_write_type on {self.table.identifier}: a '{engine}' primary-key table would "
                "overwrite the columns left out with nulls; write every column")
        for c in self.table.primary_keys + self.table.partition_keys:
            if c not in cols:
                raise SchemaMismatchError(f"with_write_type: key column '{c}' must be written")
        left_out = [f for f in schema if f.name not in cols]
        not_null = [f.name for f in left_out if not f.nullable]
        if not_null:
            raise SchemaMismatchError(
                f"with_write_type on {self.table.identifier}: NOT NULL columns {not_null} left out")
        self._write_cols = cols
        return self

    def _is_data_evolution(self) -> bool:
        """An append table with ``row-tracking.enabled`` and ``data-evolution.enabled``."""
        opts = self.table.options
        on = [opts.get(k, "false").strip().lower() == "true"
              for k in ("row-tracking.enabled", "data-evolution.enabled")]
        return all(on) and not self.table.is_primary_key_table

    def _fill_left_out(self, data: Any) -> Any:
        """The input of a ``with_write_type`` write: the written columns in the table's order
        (a data-evolution table's partial files), or every column with the left-out ones as
        nulls. Input with every table column is taken when the left-out ones are all null
        (pypaimon takes it and drops them; values there would be lost: refused)."""
        if not self._write_cols:
            return data
        if not isinstance(data, (pa.Table, pa.RecordBatch)):
            data = pa.table(data)
        schema = self.table.arrow_schema
        names = data.schema.names
        if sorted(names) == sorted(schema.names) and sorted(names) != sorted(self._write_cols):
            lost = [c for c in names if c not in self._write_cols and data.column(c).null_count != len(data)]
            if lost:
                raise SchemaMismatchError(
                    f"write on {self.table.identifier}: columns {lost} hold values but are not "
                    f"among the with_write_type columns {self._write_cols}")
            data = data.select(self._write_cols)
            names = data.schema.names
        if sorted(names) != sorted(self._write_cols):
            raise SchemaMismatchError(
                f"write on {self.table.identifier}: columns {names}, expected the "
                f"with_write_type columns {self._write_cols}")
        if self._partial:
            return data.select([f.name for f in schema if f.name in self._write_cols])
        cols = [data.column(f.name) if f.name in self._write_cols else pa.nulls(data.num_rows, f.type)
                for f in schema]
        return pa.Table.from_arrays(cols, names=schema.names)

    def abort(self) -> None:
        """Drop everything this write buffered or flushed (nothing reaches the table)."""
        if not self._closed:
            self._closed = True
            self._rows = []
            self._core.abort()

    def close(self) -> None:
        """Release buffers and spill files; without a prepare_commit, the files flushed under
        memory pressure are deleted too (nothing of this write reaches the table)."""
        if not self._closed:
            self._closed = True
            if self._prepared:
                self._core.close()
            else:
                self._core.abort()

    def __enter__(self) -> BatchTableWrite:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _check_identifier(commit_identifier: Any) -> int:
    """A streaming commit identifier: an int below ``BATCH_COMMIT_IDENTIFIER`` (2**63-1)."""
    if isinstance(commit_identifier, bool) or not isinstance(commit_identifier, int) \
            or not -(2**63) <= commit_identifier < BATCH_COMMIT_IDENTIFIER:
        raise InvalidArgumentError(
            f"commit_identifier must be an int in [-2**63, 2**63-1), got {commit_identifier!r}"
        )
    return commit_identifier


class _TableCommit:
    """What batch and stream commits share: the commit user, commit callbacks, abort, close."""

    def __init__(self, table: Table, commit_user: str):
        self.table = table
        self._core = table._core.new_commit(commit_user)
        self._callbacks: List[CommitCallback] = []

    @property
    def commit_user(self) -> str:
        return self._core.commit_user

    def add_commit_callback(self, callback: CommitCallback) -> None:
        """Call ``callback`` after each successful commit of this object
        (``paimon_rs.commit_callback``: the snapshot and its delta's manifest entries), also
        for a retried identifier that was already committed (callbacks must be idempotent:
        Java's ``CommitCallback.retry``). Its exception propagates from ``commit``, after the
        commit; ``close`` closes it."""
        self._callbacks.append(callback)

    def abort(self, commit_messages: List[CommitMessage]) -> None:
        """Delete the data files of messages that will not be committed.

        Never deletes a file that a snapshot or tag references (messages that were committed:
        their files are live data, or older snapshots' for time travel): such files are kept
        with a ``RuntimeWarning``. Abort never raises for that, nor when the table's metadata
        cannot be read (it then deletes nothing and warns), so ``try: commit(...) except:
        abort(...); raise`` re-raises the commit's own error. Only abort messages no other
        process may still be committing."""
        try:
            kept = self._core.abort(list(commit_messages))
        except PaimonRsError as e:
            warnings.warn(
                f"abort on {self.table.identifier}: deleted no file, the table's snapshots could "
                f"not be read to rule out that they reference these files: {e}",
                RuntimeWarning, stacklevel=2,
            )
            return
        if kept:
            warnings.warn(
                f"abort on {self.table.identifier}: kept {len(kept)} data file(s) that snapshots "
                f"reference (these messages were committed), e.g. {kept[0]}",
                RuntimeWarning, stacklevel=2,
            )

    def close(self) -> None:
        """Close the commit callbacks (their errors ignored, as pypaimon)."""
        callbacks, self._callbacks = self._callbacks, []
        for cb in callbacks:
            try:
                cb.close()
            except Exception:  # noqa: BLE001 - pypaimon's FileStoreCommit.close ignores them
                pass

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class BatchTableCommit(_TableCommit):
    """Commits the messages of a batch write as one snapshot (once).

    Safety: messages already committed are refused (``DuplicateCommitError``), messages whose
    files are gone too (``StaleCommitMessageError``), and so is a primary-key commit that a
    concurrent writer of the same keys got ahead of (``CommitConflictError``); the table is
    then unchanged. A failed commit keeps the messages' data files, as Java Paimon does, so
    the same messages can be committed again (after a ``CommitConflictError`` for lost races);
    call ``abort(messages)`` for messages you give up."""

    def __init__(self, table: Table, commit_user: str, static_partition: Optional[Dict[str, Any]],
                 dynamic_overwrite: bool = False):
        super().__init__(table, commit_user)
        self._static_partition = static_partition
        self._dynamic_overwrite = dynamic_overwrite
        self._committed = False

    def _overwrite_batch(self) -> Optional[pa.RecordBatch]:
        if self._static_partition is None:
            return None
        return _partition_batch(self.table.arrow_schema, self._static_partition, "overwrite")

    def commit(self, commit_messages: List[CommitMessage],
               commit_identifier: Optional[int] = None) -> Optional[int]:
        """Commit; returns the new snapshot id (None if there was nothing to commit).

        ``commit_identifier`` (an int below 2**63-1; a commit user's identifiers must increase)
        makes the commit land once: if this commit user (``BatchWriteBuilder.with_commit_user``)
        already committed that identifier, its snapshot id is returned and nothing is written,
        so a retry after a crash or a lost response is safe, across processes too. Without it,
        committing the same messages twice is refused with ``DuplicateCommitError``.

        On failure the table is unchanged and the data files are kept: commit the same messages
        again (this object too) or ``abort`` them. A commit object commits once."""
        if self._committed:
            raise PaimonRsError("a batch commit can only commit once")
        ident = BATCH_COMMIT_IDENTIFIER if commit_identifier is None else _check_identifier(commit_identifier)
        snapshot_id = self._core.commit(list(commit_messages), ident, self._overwrite_batch(),
                                        self._dynamic_overwrite)
        self._committed = True
        run_callbacks(self._callbacks, self.table._core, snapshot_id, ident)
        return snapshot_id

    # --- pypaimon 2.1.0 names ---

    @property
    def batch_committed(self) -> bool:
        """Whether this commit object has committed (a batch commit commits once)."""
        return self._committed

    @property
    def overwrite_partition(self) -> Optional[Dict[str, Any]]:
        """The static partition of an ``overwrite(...)`` builder (``{}``: the whole table)."""
        return self._static_partition

    def truncate_table(self) -> Optional[int]:
        """Delete every row (an INSERT OVERWRITE of the whole table with no data); returns the
        new snapshot id."""
        if self._committed:
            raise PaimonRsError("a batch commit can only commit once")
        empty = pa.RecordBatch.from_arrays([], schema=pa.schema([]))
        snapshot_id = self._core.commit([], BATCH_COMMIT_IDENTIFIER, empty, False)
        self._committed = True
        run_callbacks(self._callbacks, self.table._core, snapshot_id, BATCH_COMMIT_IDENTIFIER)
        return snapshot_id

    def truncate_partitions(self, partitions: List[Dict[str, Any]]) -> Optional[int]:
        """Delete the rows of the partitions (``[{"dt": "2024-01-01"}, ...]``; a spec may give a
        prefix of the partition keys, and the default partition name or None stands for NULL)
        in one OVERWRITE snapshot, as Java's ``FileStoreCommit.dropPartitions``; returns its id
        (None if no file was in them)."""
        if self._committed:
            raise PaimonRsError("a batch commit can only commit once")
        batches = _drop_specs(self.table, partitions, "truncate_partitions")
        snapshot_id = self._core.drop_partitions(batches, BATCH_COMMIT_IDENTIFIER)
        self._committed = True
        run_callbacks(self._callbacks, self.table._core, snapshot_id, BATCH_COMMIT_IDENTIFIER)
        return snapshot_id

    def __enter__(self) -> BatchTableCommit:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class StreamWriteBuilder:
    """Creates the write and the commit of a streaming job (pypaimon's and Java's
    ``StreamWriteBuilder``): one ``StreamTableWrite`` lives across many commits, each
    ``prepare_commit(n)`` / ``commit(messages, n)`` pair carrying an increasing identifier
    ``n`` (a checkpoint's), and a commit of an identifier this commit user already committed
    lands nothing (a retry after a crash is safe with a stable ``with_commit_user``)."""

    def __init__(self, table: Table):
        self.table = table
        self.commit_user = _new_commit_user(table)
        self._progress: Optional[ProgressCallback] = None

    def with_commit_user(self, commit_user: str) -> StreamWriteBuilder:
        """Commit as ``commit_user`` (default: a fresh UUID per builder, after
        ``commit.user-prefix`` and ``_`` if set). A job that restarts must keep its commit
        user, so that re-committing a checkpoint's identifier is found and skipped (Java's
        ``filterAndCommit``)."""
        if not isinstance(commit_user, str) or not commit_user:
            raise InvalidArgumentError("with_commit_user: the commit user must be a non-empty string")
        self.commit_user = commit_user
        return self

    def with_progress(self, callback: Optional[ProgressCallback]) -> StreamWriteBuilder:
        """As ``BatchWriteBuilder.with_progress``; the counts run over the write's lifetime."""
        self._progress = callback
        return self

    def new_write(self) -> StreamTableWrite:
        w = StreamTableWrite(self.table)
        w._progress = self._progress
        return w

    def new_update(self) -> StreamTableUpdate:
        """pypaimon's ``new_update`` of a stream builder: column updates of existing rows of a
        data-evolution table by ``_ROW_ID`` (``paimon_rs.table_update``)."""
        from paimon_rs.table_update import StreamTableUpdate

        return StreamTableUpdate(self.table, self.commit_user)

    def new_commit(self) -> StreamTableCommit:
        return StreamTableCommit(self.table, self.commit_user)

    def with_restore_snapshot(self, snapshot_id: int) -> StreamWriteBuilder:
        """Refused, as ``BatchWriteBuilder.with_restore_snapshot``."""
        raise UnsupportedError(
            "with_restore_snapshot: paimon_rs writers restore from the latest snapshot; a commit "
            "checks writers that committed in between (docs/concurrency.md)")


class StreamTableWrite(BatchTableWrite):
    """A write kept across commits (Java's ``StreamTableWrite``): ``prepare_commit(n)`` hands
    out the files written since the previous one and keeps the writers, their buffers'
    memory, the buckets' levels and sequence numbers, so the next commit continues them
    (compactions see the files of earlier commits; a ``full-compaction`` table compacts on
    every ``full-compaction.delta-commits``-th identifier). Every prepared message list must
    be committed (or the job restarted with a new write): the writers count its files as the
    table's. ``close`` drops what was written since the last ``prepare_commit``.

    A primary-key bucket compacts in the background, as Java's streaming writer does
    (``MergeTreeWriter`` with its compaction executor, one compaction thread per write): a
    ``prepare_commit`` hands over the compactions that finished and leaves a running one to a
    later commit, waiting only when a bucket has more than ``num-sorted-run.stop-trigger`` + 1
    sorted runs, with ``commit.force-compact`` or ``wait_compaction=True``. Tables whose commit
    must see its compaction done compact within ``prepare_commit`` instead: those that need
    lookup (first-row, ``changelog-producer = lookup``, deletion vectors, ``force-lookup``;
    Java's ``lookup-wait``), ``changelog-producer = full-compaction`` and
    ``full-compaction.delta-commits``. A failed background compaction is the error of the next
    ``write_*`` or ``prepare_commit``, naming the table, partition and bucket."""

    def __init__(self, table: Table):
        super().__init__(table)
        self._written = False
        self._core.set_async_compaction(True)

    def _check_open(self) -> None:
        if self._closed:
            raise PaimonRsError("this write is closed")

    def _report_written(self, data: Any) -> None:
        self._written = True
        super()._report_written(data)

    def prepare_commit(self, commit_identifier: int,  # type: ignore[override]
                       wait_compaction: bool = False) -> List[CommitMessage]:
        """Write the rows buffered since the last call as data files for the commit that will
        carry ``commit_identifier``, with the compactions that finished; returns its messages.
        ``wait_compaction`` (Java's ``prepareCommit(waitCompaction, commitIdentifier)``): wait
        for the buckets' running compactions and hand them over too (e.g. the job's last
        commit)."""
        if not isinstance(wait_compaction, bool):
            raise InvalidArgumentError(
                f"prepare_commit: wait_compaction must be a bool, got {type(wait_compaction).__name__}")
        messages = self._prepare_commit(_check_identifier(commit_identifier), wait_compaction)
        self._written = False
        return messages

    def close(self) -> None:
        """Release buffers and spill files; files flushed since the last ``prepare_commit``
        are deleted (no commit will reference them), those handed out stay for the commit."""
        if not self._closed:
            self._closed = True
            if self._written or self._rows:
                self._rows = []
                self._core.abort()
            else:
                self._core.close()

    def __enter__(self) -> StreamTableWrite:
        return self


class StreamTableCommit(_TableCommit):
    """Commits a streaming write's messages, one snapshot per identifier, many times
    (pypaimon's ``StreamTableCommit``; Java's ``StreamTableCommit.commit``)."""

    def commit(self, commit_messages: List[CommitMessage], commit_identifier: int,
               snapshot_properties: Optional[Dict[str, str]] = None) -> Optional[int]:
        """Commit the messages of ``prepare_commit(commit_identifier)``; returns the snapshot
        id (None if there was nothing to commit: pypaimon's default, Java's streaming commit
        writes an empty snapshot instead).

        A commit user's identifiers must increase. If this commit user already committed
        ``commit_identifier``, that snapshot's id is returned and nothing is written (Java's
        ``filterAndCommit``); the commit callbacks run again for it. On failure the table is
        unchanged and the files are kept: commit again or ``abort``."""
        ident = _check_identifier(commit_identifier)
        if snapshot_properties:
            raise UnsupportedError(
                f"commit on {self.table.identifier}: snapshot_properties are not written by "
                "paimon_rs; commit without them")
        snapshot_id = self._core.commit(list(commit_messages), ident, None, False)
        run_callbacks(self._callbacks, self.table._core, snapshot_id, ident)
        return snapshot_id

    def __enter__(self) -> StreamTableCommit:
        return self


Split = _core.Split
DataFileMeta = _core.DataFileMeta


def _split_repr(self: Any) -> str:
    partition = self.partition.to_dict() if self.partition is not None else {}
    part = f"partition={partition}, " if partition else ""
    return (f"Split({part}bucket={self.bucket}, files={len(self.file_paths)}, "
            f"row_count={self.row_count}, snapshot_id={self.snapshot_id})")


def _commit_message_repr(self: Any) -> str:
    compact = (f", compact_before={len(self.compact_before)}, compact_after={len(self.compact_after)}"
               if self.compact_before or self.compact_after else "")
    return (f"CommitMessage(bucket={self.bucket}, files={self.file_names}, "
            f"row_count={self.row_count}{compact})")


# the native classes print what they hold (the engine defines no __repr__ for them)
for _cls, _repr in ((_core.Split, _split_repr), (_core.CommitMessage, _commit_message_repr)):
    if "__repr__" not in vars(_cls):
        try:
            _cls.__repr__ = _repr  # type: ignore[method-assign]
        except TypeError:  # an immutable native type: keep its default repr
            pass


class GenericRow:
    """A split's partition, as pypaimon's ``GenericRow``: ``values`` in the order of
    ``fields`` (the partition columns as pyarrow fields); ``to_dict()`` by name."""

    def __init__(self, values: List[Any], fields: List[pa.Field]):
        self.values = values
        self.fields = fields

    @staticmethod
    def from_arrow(batch: pa.RecordBatch) -> GenericRow:
        """The row of a one-row batch (what ``Split.partition`` decodes)."""
        return GenericRow([batch.column(i)[0].as_py() for i in range(batch.num_columns)],
                          list(batch.schema))

    def get_field(self, pos: int) -> Any:
        return self.values[pos]

    def to_dict(self) -> Dict[str, Any]:
        return {f.name: v for f, v in zip(self.fields, self.values)}

    def __len__(self) -> int:
        return len(self.values)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GenericRow) and self.to_dict() == other.to_dict()

    def __repr__(self) -> str:
        return f"GenericRow({self.to_dict()!r})"


class Plan:
    def __init__(self, snapshot_id: Optional[int], splits: List[Split]):
        self.snapshot_id = snapshot_id
        self._splits = splits

    def splits(self) -> List[Split]:
        return self._splits


def _is_data_evolution(table: Any) -> bool:
    """Whether ``table``'s plans are sliced by row id (pypaimon's data-evolution split
    generators): its files may hold different columns of the same rows."""
    return table.options.get("data-evolution.enabled", "false").lower() == "true"


class TableScan:
    def __init__(self, table: Table, predicate: Optional[Predicate], snapshot_id: Optional[int] = None):
        self.table = table
        self.predicate = predicate
        self.snapshot_id = snapshot_id
        self._shard: Optional[tuple] = None
        self._slice: Optional[Tuple[int, int]] = None
        self.limit: Optional[int] = None
        self.partition_predicate: Optional[Predicate] = None
        self._chunk_shuffle: Optional[Tuple[int, int]] = None

    def plan(self) -> Plan:
        """The splits to read (only this worker's with ``with_shard`` or ``with_slice``)."""
        return self._plan(None)

    def plan_for_write(self) -> Plan:
        """``plan`` with level 0 too where a batch read hides it (first-row and
        deletion-vector primary-key tables): every live file, as pypaimon's writers restore
        and overwrite from (pypaimon's ``plan_for_write``). Other tables: ``plan``."""
        return self._plan("all")

    def _plan(self, levels: Optional[str]) -> Plan:
        filt = self.predicate.to_core(_with_system_columns(self.table)) if self.predicate else None
        if self._chunk_shuffle is not None:
            from paimon_rs.chunk_shuffle import check_compatible, chunk_shuffle_splits, refuse_deletion_vectors

            check_compatible(self)
            snapshot_id, splits = self.table._core.plan(filt, self.snapshot_id, levels)
            refuse_deletion_vectors(str(self.table.identifier), splits)
            by_row_id = str(self.table.identifier) if _is_data_evolution(self.table) else None
            return Plan(snapshot_id, chunk_shuffle_splits(splits, *self._chunk_shuffle, self._shard, by_row_id))
        # a data-evolution plan is sliced while planned: positions count the row ids before
        # the filter's statistics prune (pypaimon's order)
        by_row_id = self._slice if self._slice is not None and _is_data_evolution(self.table) else None
        snapshot_id = self.snapshot_id
        if self._shard is not None and _is_data_evolution(self.table) and not self.table.is_primary_key_table:
            snapshot_id, by_row_id = self._row_id_shard(levels)
            if by_row_id is None:
                return Plan(snapshot_id, [])
        snapshot_id, splits = self.table._core.plan(filt, snapshot_id, levels, by_row_id)
        if self._shard is not None and by_row_id is None:
            splits = shard_splits(splits, self.table.is_primary_key_table, *self._shard,
                                  by_file_name=_shards_by_file_name(self.table))
        if self._slice is not None and by_row_id is None:
            splits = _core.slice_splits(splits, *self._slice)
        return Plan(snapshot_id, splits)

    def _row_id_shard(self, levels: Optional[str]) -> Tuple[Optional[int], Optional[Tuple[int, int]]]:
        """A data-evolution table's ``with_shard`` as pypaimon 2.1.0's: the row ids of the
        files the partition filter keeps (before statistics prune, as ``with_slice``'s
        positions) cut into balanced position ranges; this worker's range (None: empty) and
        the snapshot it counts, which the sharded plan must read."""
        assert self._shard is not None
        part = restrict_predicate(self.predicate, list(self.table.partition_keys))
        pfilt = part.to_core(self.table.arrow_schema) if part is not None else None
        snapshot_id, splits = self.table._core.plan(pfilt, self.snapshot_id, levels)
        start, end = shard_range(row_id_count(splits), *self._shard)
        return snapshot_id, ((start, end) if start < end else None)

    def with_slice(self, start_pos: int, end_pos: int) -> TableScan:
        """Plan only the rows at positions ``[start_pos, end_pos)`` of an append table's plan
        (pypaimon's ``with_slice``): positions count every planned file's rows in plan order,
        before deletion vectors and the filter's row-level part (files its statistics rule out
        are not counted); a file partly in the range is read in part. Workers planning the
        same snapshot with the same filter get disjoint slices of one plan; a range past the
        plan's rows is cut short. Primary-key tables are sliced by ``with_shard`` instead.
        A data-evolution table's plan is sliced by row id, as pypaimon's: positions count the
        row ids its files cover (a row whose columns several files hold counts once), in
        row-id order, and the slice reads the rows with ids from the one at ``start_pos`` to
        the one before ``end_pos``, every file of a row's group together; as pypaimon's,
        positions count every row id the partition filter keeps, before a filter's statistics
        drop groups, so paimon_rs and pypaimon workers can share one filtered sliced plan."""
        for v in (start_pos, end_pos):
            if isinstance(v, bool) or not isinstance(v, int):
                raise InvalidArgumentError(f"with_slice: positions are ints, got {v!r}")
        if start_pos < 0 or start_pos >= end_pos:
            raise InvalidArgumentError(f"with_slice: start_pos must be >= 0 and less than end_pos, got "
                                       f"[{start_pos}, {end_pos})")
        if self.table.is_primary_key_table:
            raise UnsupportedError(f"with_slice on {self.table.identifier}: primary-key tables are not sliced "
                                   "by row position; use with_shard")
        if self._shard is not None:
            raise InvalidArgumentError("with_slice and with_shard cannot be used together")
        self._slice = (start_pos, end_pos)
        return self

    def with_chunk_shuffle(self, seed: int, chunk_size: int) -> TableScan:
        """Plan an append table as chunks of at most ``chunk_size`` rows (each within one
        partition and bucket) in an order shuffled by ``seed``; with ``with_shard`` each worker
        gets a balanced run of the shuffled chunks (pypaimon's ML data-loading shuffle,
        ``paimon_rs.chunk_shuffle``). ``plan`` refuses primary-key tables, ``with_slice``, a
        limit and a filter on other columns than partition keys."""
        from paimon_rs.chunk_shuffle import check_chunk_shuffle

        self._chunk_shuffle = check_chunk_shuffle(seed, chunk_size)
        return self

    # --- pypaimon 2.1.0 names ---

    def with_shard(self, idx_of_this_subtask: int, number_of_para_subtasks: int) -> TableScan:
        """Plan only worker ``idx_of_this_subtask``'s share of ``number_of_para_subtasks``:
        the workers' plans (of the same snapshot) are disjoint and together hold every split.
        Primary-key tables go by bucket (``bucket % count``, so every version of a key stays
        with one worker), deletion-vector and first-row ones (read without merging) by a hash
        of the file name, as Java and pypaimon 2.1.0; append tables by row count, as pypaimon 2.1.0's: the plan's rows
        (``with_slice``'s positions) cut into ``number_of_para_subtasks`` ranges, ``total //
        n`` rows each and the first ``total % n`` workers one more, so paimon_rs and pypaimon
        workers can share one plan. A data-evolution table counts row ids as its
        ``with_slice`` does (every row id the partition filter keeps, before statistics)."""
        _validate_shard(idx_of_this_subtask, number_of_para_subtasks)
        if self._slice is not None:
            raise InvalidArgumentError("with_shard and with_slice cannot be used together")
        self._shard = (idx_of_this_subtask, number_of_para_subtasks)
        return self


def _shards_by_file_name(table: Table) -> bool:
    """Whether ``with_shard`` deals a primary-key table's files by name (Java's and pypaimon's
    choice for deletion-vector and first-row tables, whose files are read without merging)."""
    opts = table.options
    return table.is_primary_key_table and (
        opts.get("deletion-vectors.enabled", "false").lower() == "true"
        or opts.get("merge-engine", "deduplicate").lower() == "first-row")


def _validate_shard(index: int, count: int) -> None:
    if isinstance(count, bool) or not isinstance(count, int) or count <= 0:
        raise InvalidArgumentError(f"with_shard: the worker count must be a positive int, got {count!r}")
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < count:
        raise InvalidArgumentError(f"with_shard: the worker index must be in [0, {count}), got {index!r}")


def _positive_int_option(table: Table, key: str) -> Optional[int]:
    """An option that must be an integer >= 1 when set (None: unset)."""
    raw = table.options.get(key)
    if raw is None:
        return None
    try:
        v = int(str(raw).strip())
    except ValueError:
        v = 0
    if v < 1:
        raise InvalidArgumentError(f"table {table.identifier}: option '{key}' must be an integer >= 1, got {raw!r}")
    return v


# a row-tracking table's system columns (Java's SpecialFields.rowTypeWithRowTracking)
_SYSTEM_COLUMNS = ("_ROW_ID", "_SEQUENCE_NUMBER")


def _tracks_rows(table: Table) -> bool:
    return str(table.options.get("row-tracking.enabled", "false")).strip().lower() == "true"


def _with_system_columns(table: Table) -> pa.Schema:
    """The table's columns, then on a row-tracking table the system columns it does not
    shadow (a filter may name them: ``_ROW_ID = 5``, as pypaimon)."""
    schema = table.arrow_schema
    if not _tracks_rows(table):
        return schema
    extra = [pa.field(n, pa.int64(), nullable=False) for n in _SYSTEM_COLUMNS
             if n not in schema.names]
    return pa.schema(list(schema) + extra)


def _check_parallelism(name: str, value: Any) -> None:
    """Refuse a thread count that is not None or an int >= 1 (pypaimon raises ValueError
    below 1)."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise InvalidArgumentError(f"{name} must be an int >= 1, got {value!r}")


class TableRead:
    def __init__(self, table: Table, projection: Optional[List[str]], predicate: Optional[Predicate],
                 limit: Optional[int] = None,
                 nested: Optional[List[Tuple[str, List[int]]]] = None,
                 residual: Optional[Predicate] = None):
        self.table = table
        self.predicate = predicate
        filt = predicate.to_core(_with_system_columns(table)) if predicate else None
        # a nested projection (``"s.a"``): the engine reads the top-level columns it walks
        # into, each output column is then picked from them (Arrow's struct_field kernel per
        # batch: the child arrays as they are, the parent's nulls applied); ``residual``, the
        # filter's conjuncts on picked nested fields (``mv_latest_version > 150``), is then
        # applied to the picked rows, reading the table columns it also names
        self._nested = nested
        self._residual = residual
        # ``with_projection([])``: the rows and no column, as pypaimon (the engine reads the
        # first column, to count the rows the filter keeps; ``_pick`` then drops it)
        self._no_columns = nested is None and projection is not None and len(projection) == 0
        if self._no_columns:
            projection = table.arrow_schema.names[:1]
        if nested is not None:
            names = _with_system_columns(table).names
            aliases = {alias for alias, _ in nested}
            extra = sorted(residual.fields() - aliases) if residual is not None else []
            projection = list(dict.fromkeys([names[path[0]] for _, path in nested] + extra))
        self._core = table._core.new_read(projection, filt)
        self._limit = limit
        self._progress: Optional[ProgressCallback] = None
        # pypaimon's read options: splits read at once when ``to_arrow`` is given no
        # parallelism (unset: one per core), and the most rows of a batch of
        # ``to_arrow_batch_reader`` (unset: the engine's batches)
        self._parallelism = _positive_int_option(table, "read.parallelism")
        self._batch_size = _positive_int_option(table, "read.batch-size")
        # blob-descriptor-field / blob-view-field columns resolved after the engine's read
        self._inline_blobs = needs_resolution(dict(table._core.options))

    @property
    def schema(self) -> pa.Schema:
        if self._no_columns:
            return pa.schema([])
        if self._nested is not None:
            return _nested_schema(_with_system_columns(self.table), self._nested)
        return self._core.output_schema()

    @property
    def read_type(self) -> pa.Schema:
        """The fields this read returns (pypaimon's ``TableRead.read_type``; the same value as
        ``ReadBuilder.read_type()``: an Arrow schema, whose fields have pypaimon's ``name``)."""
        return self.schema

    def _pick(self, data: Any) -> Any:
        """The nested projection's columns of ``data`` (a batch or table of the top-level
        columns read)."""
        if self._no_columns:
            return data.select([])  # keeps the number of rows
        if self._nested is None:
            return data
        import pyarrow.compute as pc

        top = _with_system_columns(self.table).names
        cols = []
        for _, path in self._nested:
            col = data.column(top[path[0]])
            cols.append(pc.struct_field(col, path[1:]) if len(path) > 1 else col)
        schema = self.schema
        make = pa.RecordBatch.from_arrays if isinstance(data, pa.RecordBatch) else pa.Table.from_arrays
        if self._residual is not None:
            from paimon_rs.mutations import predicate_mask

            # the picked columns by their output names, beside the table columns read
            view = {name: data.column(name) for name in data.schema.names}
            view.update(zip(schema.names, cols))
            mask = predicate_mask(self._residual, make(list(view.values()), names=list(view)))
            cols = [pc.filter(c, mask) for c in cols]
        return make(cols, schema=schema)

    def to_arrow_batch_reader(self, splits: List[Split],
                              blob_parallelism: Optional[int] = None) -> pa.RecordBatchReader:
        """The splits' rows as a stream of batches, split after split (bounded memory).
        ``blob_parallelism`` is pypaimon's for BLOB columns, which paimon_rs does not have
        (validated as pypaimon does, an int >= 1, then unused, as in ``to_arrow``)."""
        _check_parallelism("blob_parallelism", blob_parallelism)
        # Streams: splits are read one after the other and merged batch by batch, so memory
        # stays bounded (one decoded batch per sorted run plus the output).
        def batches() -> Iterator[pa.RecordBatch]:
            remaining = self._limit
            for b in self._core.stream(list(splits)):
                b = self._pick(self._resolve_blobs(b))
                if remaining is not None:
                    if remaining <= 0:
                        return
                    b = b.slice(0, remaining)
                    remaining -= b.num_rows
                if self._batch_size is None or b.num_rows <= self._batch_size:
                    yield b
                else:  # read.batch-size: zero-copy slices of at most that many rows
                    for off in range(0, b.num_rows, self._batch_size):
                        yield b.slice(off, self._batch_size)
        return pa.RecordBatchReader.from_batches(self.schema, batches())

    def to_arrow(self, splits: List[Split], parallelism: Optional[int] = None,
                 blob_parallelism: Optional[int] = None) -> pa.Table:
        """Read the splits into one table, in split order. ``parallelism``: threads reading
        splits at once (1: one after the other; default: the table option
        ``read.parallelism``, else one per core). ``blob_parallelism`` is
        pypaimon's for BLOB columns, which paimon_rs does not have (an int >= 1, else
        InvalidArgumentError as ``parallelism``; unused)."""
        _check_parallelism("parallelism", parallelism)
        _check_parallelism("blob_parallelism", blob_parallelism)
        if parallelism is None:
            parallelism = self._parallelism
        if self._progress is not None:
            t = self._read_with_progress(list(splits), parallelism)
        else:
            t = self._core.read(list(splits), parallelism).read_all()
        # the pick applies the filter left after the engine's read (a nested leaf): before the limit
        t = self._pick(self._resolve_blobs(t))
        if self._limit is not None:
            t = t.slice(0, self._limit)
        return t

    def _resolve_blobs(self, data: Any) -> Any:
        """``data`` with its ``blob-descriptor-field`` / ``blob-view-field`` columns resolved
        (``paimon_rs.blob_view``)."""
        return resolve_inline_blobs(self.table, data) if self._inline_blobs else data

    def to_pandas(self, splits: List[Split], parallelism: Optional[int] = None) -> Any:
        """Read into a pandas DataFrame, as ``to_arrow(...).to_pandas()`` (pypaimon's), except
        that integer and boolean columns holding NULLs come back as pandas nullable dtypes
        (``Int64``, ``boolean``: NULL stays ``<NA>``, large integers stay exact) instead of
        float64 / object. TIME columns come back as ``datetime.time`` (milliseconds, what
        Paimon stores)."""
        return _arrow_to_pandas(self.to_arrow(splits, parallelism=parallelism))

    def _read_with_progress(self, splits: List[Split], parallelism: Optional[int]) -> pa.Table:
        """``to_arrow`` in chunks of as many splits as read at once, reporting after each."""
        assert self._progress is not None
        step = parallelism or os.cpu_count() or 1
        total_rows = sum(s.row_count for s in splits)
        total_files = sum(len(s.file_paths) for s in splits)
        parts, rows, nbytes, files = [], 0, 0, 0
        for i in range(0, len(splits), step):
            chunk = splits[i:i + step]
            part = self._core.read(chunk, parallelism).read_all()
            parts.append(part)
            rows, nbytes = rows + part.num_rows, nbytes + part.nbytes
            files += sum(len(s.file_paths) for s in chunk)
            self._progress(Progress("read", rows, nbytes, files, total_rows, total_files,
                                    done=i + step >= len(splits)))
        if not parts:
            self._progress(Progress("read", 0, 0, 0, 0, 0, done=True))
            return self._core.output_schema().empty_table()
        return pa.concat_tables(parts)

    # --- pypaimon 2.1.0 names, and the other engines ---

    @property
    def limit(self) -> Optional[int]:
        return self._limit

    def to_duckdb(self, splits: List[Split], table_name: str, connection: Any = None,
                  parallelism: Optional[int] = None) -> Any:
        """Register the rows as ``table_name`` in a DuckDB connection (a new in-memory one by
        default) and return the connection. Needs the ``duckdb`` package."""
        duckdb = _optional_import("duckdb", "to_duckdb")
        con = connection if connection is not None else duckdb.connect(database=":memory:")
        con.register(table_name, self.to_arrow(splits, parallelism=parallelism))
        return con

    def to_polars(self, splits: List[Split], parallelism: Optional[int] = None) -> Any:
        """Read into a polars DataFrame (zero-copy from Arrow). Needs the ``polars`` package."""
        pl = _optional_import("polars", "to_polars")
        return pl.from_arrow(self.to_arrow(splits, parallelism=parallelism))

    def to_ray(self, splits: List[Split], *, ray_remote_args: Optional[Dict[str, Any]] = None,
               concurrency: Optional[int] = None, override_num_blocks: Optional[int] = None,
               **read_args: Any) -> Any:
        """A Ray Dataset of the rows. Needs the ``ray`` package. The splits are read here, in
        this process, and handed to Ray as Arrow (pypaimon reads them in Ray tasks); the Ray
        arguments are refused rather than ignored."""
        ray = _optional_import("ray", "to_ray")
        given = {k: v for k, v in dict(ray_remote_args=ray_remote_args, concurrency=concurrency,
                                        override_num_blocks=override_num_blocks, **read_args).items()
                 if v is not None}
        if given:
            raise UnsupportedError(f"to_ray: {sorted(given)} (paimon_rs reads the splits in this "
                                   "process and hands Ray the Arrow table)")
        return ray.data.from_arrow(self.to_arrow(splits))


    def to_iterator(self, splits: List[Split]) -> Iterator[Dict[str, Any]]:
        for b in self.to_arrow_batch_reader(splits):
            yield from b.to_pylist()


def _write_any(w: BatchTableWrite, data: Any, what: str) -> None:
    """Hand ``data`` to ``w``: pandas through ``write_pandas``, Arrow objects through
    ``write_arrow``; anything else is refused naming what is accepted."""
    cls = type(data)
    if cls.__module__.split(".")[0] == "pandas" and cls.__name__ == "DataFrame":
        w.write_pandas(data)
    elif hasattr(data, "__arrow_c_stream__") or hasattr(data, "__arrow_c_array__"):
        w.write_arrow(data)
    else:
        hint = " (pa.Table.from_pylist(rows) or pa.table(columns) first)" \
            if isinstance(data, (list, dict, tuple)) else ""
        raise TypeError(f"{what} on {w.table.identifier}: expected a pyarrow Table / RecordBatch / "
                        f"RecordBatchReader, a pandas or polars DataFrame or an object with "
                        f"__arrow_c_stream__, got {cls.__name__}{hint}")


def _optional_import(module: str, method: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise ImportError(f"{method} needs the '{module}' package: pip install {module}") from e


def _arrow_to_pandas(table: pa.Table) -> Any:
    """``table.to_pandas()`` (as pypaimon), except integer and boolean columns holding NULLs:
    those become pandas nullable dtypes (``Int64``, ``boolean``) instead of float64 / object,
    which would round integers above 2**53 and turn NULL into NaN."""
    pd = _optional_import("pandas", "to_pandas")
    nullable = {pa.int8(): pd.Int8Dtype(), pa.int16(): pd.Int16Dtype(), pa.int32(): pd.Int32Dtype(),
                pa.int64(): pd.Int64Dtype(), pa.uint8(): pd.UInt8Dtype(), pa.uint16(): pd.UInt16Dtype(),
                pa.uint32(): pd.UInt32Dtype(), pa.uint64(): pd.UInt64Dtype(), pa.bool_(): pd.BooleanDtype()}
    df = table.to_pandas()
    for name in table.column_names:
        col = table.column(name)
        if col.null_count and col.type in nullable:
            df[name] = col.to_pandas(types_mapper=nullable.get).values
    return df


def _struct_path(schema: pa.Schema, name: str) -> Optional[List[int]]:
    """The field indexes ``name`` (``"s.a.b"``) walks through the struct columns of ``schema``,
    None if it does not name a nested field (pypaimon's ``_resolve_dotted_paths``)."""
    parts = name.split(".")
    if parts[0] not in schema.names:
        return None
    path = [schema.get_field_index(parts[0])]
    t = schema.field(path[0]).type
    for part in parts[1:]:
        if not pa.types.is_struct(t):
            return None
        i = t.get_field_index(part)
        if i < 0:
            return None
        path.append(i)
        t = t.field(i).type
    return path


def _nested_projection(schema: pa.Schema, cols: List[str]) -> List[Tuple[str, List[int]]]:
    """(output name, field path) per projected name: a top-level column as it is (it wins over
    a dotted path of the same spelling), a nested field named by its path joined with ``_``
    (a repeated name gets ``__<n>``), as pypaimon's ``NestedProjection.project``."""
    out: List[Tuple[str, List[int]]] = []
    seen: set = set()
    dup = 0
    for c in cols:
        path = [schema.get_field_index(c)] if c in schema.names else _struct_path(schema, c)
        assert path is not None  # checked by with_projection
        names, t = [schema.field(path[0]).name], schema.field(path[0]).type
        for i in path[1:]:
            names.append(t.field(i).name)
            t = t.field(i).type
        base = "_".join(names)
        final = base
        while final in seen:
            final = f"{base}__{dup}"
            dup += 1
        seen.add(final)
        out.append((final, path))
    return out


def _nested_schema(schema: pa.Schema, nested: List[Tuple[str, List[int]]]) -> pa.Schema:
    fields = []
    for name, path in nested:
        f = schema.field(path[0])
        nullable = f.nullable
        for i in path[1:]:
            f = f.type.field(i)
            nullable = nullable or f.nullable
        # a null parent makes the picked child null
        fields.append(f.with_name(name).with_nullable(nullable))
    return pa.schema(fields)


def _conjuncts(p: Predicate) -> List[Predicate]:
    if p.method == "and":
        return [c for child in p.children for c in _conjuncts(child)]
    return [p]


def _and_all(preds: List[Predicate]) -> Optional[Predicate]:
    if not preds:
        return None
    return preds[0] if len(preds) == 1 else Predicate(method="and", children=preds)


class ReadBuilder:
    def __init__(self, table: Table):
        self.table = table
        self._projection: Optional[List[str]] = None
        self._nested: Optional[List[Tuple[str, List[int]]]] = None
        self._predicate: Optional[Predicate] = None
        self._limit: Optional[int] = None

    def with_filter(self, predicate: Union[Predicate, str, None]) -> ReadBuilder:
        """Read only the rows matching ``predicate`` (replacing an earlier ``with_filter``).

        Args:
            predicate: a ``Predicate`` from ``new_predicate_builder()``, a filter string
                parsed at once (``"id = 1 AND v LIKE 'a%'"``: comparisons, ``[NOT] IN``,
                ``[NOT] BETWEEN``, ``IS [NOT] NULL``, ``LIKE``, ``AND`` / ``OR`` / ``NOT``,
                parentheses, ``DATE '...'`` / ``TIMESTAMP '...'``; see
                ``paimon_rs.filter_parser``), or None for no filter.

        The filter prunes partitions and files by their statistics, then is applied exactly to
        the rows read. On a row-tracking table it may name ``_ROW_ID`` / ``_SEQUENCE_NUMBER``,
        projected or not (as pypaimon; ``_ROW_ID`` ``=`` / ``IN`` / ``BETWEEN`` also prune a
        data-evolution plan to the row-id groups holding those ids).

        Raises:
            InvalidArgumentError: a filter string that does not parse, names an unknown
                column (the closest one is suggested), has a literal that does not fit its
                column's type, or cannot be expressed as predicates (``NOT LIKE``).
            TypeError: anything else than a Predicate, a string or None.

        Example::

            rb = table.new_read_builder().with_filter("dt = '2024-01-01' AND id IN (1, 2)")
            rows = rb.new_read().to_arrow(rb.new_scan().plan().splits())
        """
        from paimon_rs.filter_parser import optional_filter

        self._predicate = optional_filter(predicate, self._filter_schema(), "with_filter")
        return self

    def with_projection(self, projection: List[str]) -> ReadBuilder:
        """Read only these columns, in this order (``TableRead.schema`` is then theirs).

        Args:
            projection: column names of the table; a filter may use other columns. A table
                with ``row-tracking.enabled`` also has ``_ROW_ID`` and ``_SEQUENCE_NUMBER``
                (not read unless asked for, as in Java and pypaimon).

        Raises:
            SchemaMismatchError: an unknown column (at this call; the closest name is suggested).

        Example::

            table.new_read_builder().with_projection(["id", "name"])
        """
        if isinstance(projection, str):
            raise TypeError(f"with_projection takes a list of column names, got the string "
                            f"{projection!r} (write [{projection!r}])")
        cols = list(projection)
        from paimon_rs.predicate import suggest_column

        schema = self.table.arrow_schema
        names = schema.names
        # a row-tracking table's system columns (Java's SpecialFields.rowTypeWithRowTracking)
        system = _SYSTEM_COLUMNS if _tracks_rows(self.table) else ()
        nested = False
        for c in cols:
            if c in names or c in system:
                continue
            if isinstance(c, str) and "." in c and _struct_path(schema, c) is not None:
                nested = True
                continue
            raise SchemaMismatchError(f"with_projection on {self.table.identifier}: projected "
                                      f"column '{c}' is not in the table"
                                      f"{suggest_column(str(c), names)}")
        self._projection = cols
        # the system columns come after the table's: a nested projection may name them too
        self._nested = _nested_projection(_with_system_columns(self.table), cols) if nested else None
        return self

    def with_limit(self, limit: int) -> ReadBuilder:
        self._limit = limit
        return self

    def new_predicate_builder(self) -> PredicateBuilder:
        """Predicates over the table's columns and, after a nested projection, its output
        names (``with_projection(["mv.latest_version"])`` -> ``mv_latest_version``, as
        pypaimon). After ``with_projection`` a leaf's ``index`` is, as pypaimon's, its
        column's position in the projected rows (``Predicate.test`` reads those rows); a
        column filtered but not projected (pypaimon refuses it) has index None, so that
        ``test`` of a positional row refuses it rather than reading another column."""
        pb = PredicateBuilder(self._filter_schema())
        if self._projection is not None:  # the read's output names, without building a read
            names = (list(self._projection) if self._nested is None
                     else _nested_schema(_with_system_columns(self.table), self._nested).names)
            pb._positions = {n: i for i, n in reversed(list(enumerate(names)))}
        return pb

    def _filter_schema(self) -> pa.Schema:
        """The columns a filter may name: the table's, then a nested projection's outputs."""
        schema = _with_system_columns(self.table)
        if self._nested is None:
            return schema
        extra = [f for f in _nested_schema(schema, self._nested) if f.name not in schema.names]
        return pa.schema(list(schema) + extra)

    def _split_filter(self) -> Tuple[Optional[Predicate], Optional[Predicate]]:
        """(the filter the engine applies, the conjuncts on a nested projection's outputs that
        the read applies to the picked rows). pypaimon does the same: the nested leaf's
        predicate is not pushed down, the rows are filtered after the pick."""
        pred = self._combined_filter()
        if pred is None:
            return None, None
        table_cols = set(_with_system_columns(self.table).names)
        if pred.fields() <= table_cols:
            return pred, None
        aliases = set(self._filter_schema().names) - table_cols
        if not aliases:
            return pred, None  # the engine names the unknown column
        unknown = sorted(pred.fields() - table_cols - aliases)
        if unknown:
            raise InvalidArgumentError(
                f"filter on {self.table.identifier}: {unknown} are neither columns of the table "
                f"nor outputs of its nested projection {sorted(aliases)}")
        conj = _conjuncts(pred)
        push = [c for c in conj if c.fields() <= table_cols]
        rest = [c for c in conj if not c.fields() <= table_cols]
        return _and_all(push), _and_all(rest)

    def explain(self, verbose: bool = False) -> ExplainResult:
        """The plan of this builder's scan, as pypaimon's ``ReadBuilder.explain``: one
        planning pass (manifests only, no data file opened) summarised as a
        ``paimon_rs.explain.ExplainResult``: snapshot and schema, filter / projection / limit,
        splits (raw-convertible, with deletion vectors, files and bytes per split), files,
        bytes, estimated rows, level histogram; ``verbose=True`` lists every split.
        ``print(result)`` shows it. The pruning counters (``partition_pruning``, ...) are None:
        paimon_rs's planner does not count them.

        Example::

            print(table.new_read_builder().with_filter("dt = '2024-01-01'").explain())
        """
        from paimon_rs.explain import explain

        return explain(self, verbose)

    def __repr__(self) -> str:
        parts = [repr(str(self.table.identifier))]
        travel = {k: v for k, v in self.table.options.items() if k in TIME_TRAVEL_OPTIONS}
        if travel:
            parts.append(f"reading {travel}")
        if self._projection is not None:
            parts.append(f"projection={self._projection}")
        pred = self._combined_filter()
        if pred is not None:
            parts.append(f"filter={str(pred)!r}")
        if self._limit is not None:
            parts.append(f"limit={self._limit}")
        return f"ReadBuilder({', '.join(parts)})"

    def read_type(self) -> pa.Schema:
        return self.new_read().schema

    def new_scan(self) -> TableScan:
        scan = TableScan(self.table, self._split_filter()[0])
        scan.limit = self._limit
        scan.partition_predicate = getattr(self, "_partition_filter", None)
        if getattr(self, "_shard", None) is not None:
            scan.with_shard(*self._shard)
        return scan

    def new_read(self) -> TableRead:
        pushed, residual = self._split_filter()
        r = TableRead(self.table, self._projection, pushed, self._limit, nested=self._nested,
                      residual=residual)
        r._progress = getattr(self, "_progress", None)
        return r

    # --- pypaimon 2.1.0 names ---

    def with_partition_filter(self, partition_filter: Union[Predicate, str, None]) -> ReadBuilder:
        """A filter on partition columns only (ANDed with ``with_filter``'s); prunes
        partitions when the scan plans. A Predicate or a filter string (``"dt >= '2024-01-01'"``,
        as ``with_filter``)."""
        from paimon_rs.filter_parser import optional_filter

        partition_filter = optional_filter(partition_filter, self.table.arrow_schema,
                                           "with_partition_filter")
        if partition_filter is not None:
            cols = partition_filter.fields()
            outside = sorted(cols - set(self.table.partition_keys))
            if outside:
                raise InvalidArgumentError(
                    f"with_partition_filter: {outside} are not partition keys of {self.table.identifier}")
        self._partition_filter = partition_filter
        return self

    def with_read_type(self, read_type: Sequence[Any]) -> ReadBuilder:
        """Read these fields (``DataField``s, pyarrow fields or names), as a projection."""
        return self.with_projection([getattr(f, "name", f) for f in read_type])

    def with_progress(self, callback: Optional[ProgressCallback]) -> ReadBuilder:
        """Reads of this builder call ``callback(paimon_rs.progress.Progress)`` as ``to_arrow``
        / ``to_pandas`` / ``to_polars`` / ``to_duckdb`` go: rows, bytes and files read of the
        total (``paimon_rs.progress.TqdmProgress()`` shows a tqdm bar). The splits are then read
        in chunks of ``parallelism`` (default: one per core) so that progress can be reported."""
        self._progress = callback
        return self

    def with_shard(self, idx_of_this_subtask: int, number_of_para_subtasks: int) -> ReadBuilder:
        """Scans of this builder plan only this worker's splits (``TableScan.with_shard``)."""
        _validate_shard(idx_of_this_subtask, number_of_para_subtasks)
        self._shard = (idx_of_this_subtask, number_of_para_subtasks)
        return self

    def _combined_filter(self) -> Optional[Predicate]:
        pf = getattr(self, "_partition_filter", None)
        if pf is None:
            return self._predicate
        if self._predicate is None:
            return pf
        return Predicate(method="and", children=[self._predicate, pf])
