"""Tables, writes, commits, scans and reads with pypaimon's names."""

from __future__ import annotations

import uuid
import warnings
from typing import Any, Dict, Iterator, List, Optional

import pyarrow as pa

from paimon_rs import _core
from paimon_rs.exceptions import InvalidArgumentError, PaimonRsError
from paimon_rs.maintenance import OlderThan, RemoveOrphanFilesResult, remove_orphan_files
from paimon_rs.predicate import Predicate, PredicateBuilder

BATCH_COMMIT_IDENTIFIER = 2**63 - 1

CommitMessage = _core.CommitMessage


class Table:
    """A Paimon table (pypaimon's ``FileStoreTable``)."""

    def __init__(self, core: _core.Table, dynamic_options: Optional[Dict[str, str]] = None):
        self._core = core
        self._arrow_schema: pa.Schema = core.arrow_schema()
        self._dynamic_options: Dict[str, str] = dict(dynamic_options or {})

    @staticmethod
    def open(path: str, options: Optional[Dict[str, str]] = None, name: Optional[str] = None) -> Table:
        """The table stored at ``path`` (``<warehouse>/<db>.db/<table>``), with ``options`` on
        top as ``copy`` does. ``name`` (default ``<db>.<table>`` from the path) is used in
        messages."""
        if name is None:
            parts = str(path).rstrip("/").split("/")
            db = parts[-2][:-3] if len(parts) >= 2 and parts[-2].endswith(".db") else "default"
            name = f"{db}.{parts[-1]}"
        return Table(_core.Table.open(name, str(path), dict(options or {})), options)

    def __reduce__(self) -> Any:
        # a table pickles as its path, name and dynamic options, never the native object (Spark
        # ships it to tasks, which reopen it)
        return (_reopen, (self.table_path, self._dynamic_options, self.identifier))

    @property
    def identifier(self) -> str:
        return self._core.name

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
    def options(self) -> Dict[str, str]:
        return self._core.options

    @property
    def arrow_schema(self) -> pa.Schema:
        return self._arrow_schema

    def copy(self, options: Dict[str, str]) -> Table:
        """This table with dynamic options on top of its own (for this job only; the stored
        schema is unchanged), e.g. ``table.copy({"write-buffer-size": "64 mb"})``."""
        return Table(self._core.copy(dict(options)), {**self._dynamic_options, **options})

    def new_batch_write_builder(self) -> BatchWriteBuilder:
        return BatchWriteBuilder(self)

    def new_read_builder(self) -> ReadBuilder:
        return ReadBuilder(self)

    def latest_snapshot_id(self) -> Optional[int]:
        return self._core.latest_snapshot_id()

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

    def __repr__(self) -> str:
        return f"Table({self.identifier!r})"


def _reopen(path: str, options: Dict[str, str], name: str) -> Table:
    return Table.open(path, options, name)


class BatchWriteBuilder:
    """Creates the write and the commit of one batch job; ``overwrite()`` turns the commit into
    an INSERT OVERWRITE (see there)."""

    def __init__(self, table: Table):
        self.table = table
        self.commit_user = str(uuid.uuid4())
        self.static_partition: Optional[Dict[str, Any]] = None
        self._overwrite = False

    def with_commit_user(self, commit_user: str) -> BatchWriteBuilder:
        """Commit as ``commit_user`` (Java's ``withCommitUser``; default: a fresh UUID per
        builder). A stable commit user makes ``commit(messages, commit_identifier=n)``
        idempotent across processes: a retry of an identifier this user already committed
        returns that snapshot's id without committing again."""
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
        return BatchTableWrite(self.table)

    def new_commit(self) -> BatchTableCommit:
        return BatchTableCommit(self.table, self.commit_user, self.static_partition,
                                dynamic_overwrite=self._overwrite and self.static_partition is None)


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


class BatchTableWrite:
    """Buffers rows per (partition, bucket); ``prepare_commit`` writes them as files."""

    def __init__(self, table: Table):
        self.table = table
        self._core = table._core.new_write()
        self._closed = False
        self._prepared = False

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
        if hasattr(data, "__arrow_c_stream__"):
            self._core.write_stream(data)
        elif hasattr(data, "__arrow_c_array__"):
            self._core.write_batch(data)
        else:
            raise TypeError(
                f"write_arrow expects an Arrow table or stream, got {type(data).__name__}"
            )

    def write_arrow_batch(self, batch: Any) -> None:
        """Write one pyarrow RecordBatch (or any ``__arrow_c_array__`` exporter)."""
        # the stream import when there is one: the engine's checks then name column and row
        self.write_arrow(batch)

    def write_pandas(self, df: Any) -> None:
        """Write a pandas DataFrame, converting its columns to the table's Arrow types (so an
        integer column with missing values, float64 in pandas, lands in a BIGINT column)."""
        self._check_open()
        schema = self.table.arrow_schema
        names = [str(c) for c in df.columns]
        if set(names) <= set(schema.names):
            target = pa.schema([schema.field(n) for n in names])
            try:
                data = pa.Table.from_pandas(df, schema=target, preserve_index=False)
            except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError):
                # let the engine name the offending column
                data = pa.Table.from_pandas(df, preserve_index=False)
        else:
            data = pa.Table.from_pandas(df, preserve_index=False)
        self._core.write_stream(data)

    def prepare_commit(self) -> List[CommitMessage]:
        self._check_open()
        self._prepared = True
        return self._core.prepare_commit()

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


class BatchTableCommit:
    """Commits the messages of a batch write as one snapshot (once).

    Safety: messages already committed are refused (``DuplicateCommitError``), messages whose
    files are gone too (``StaleCommitMessageError``), and so is a primary-key commit that a
    concurrent writer of the same keys got ahead of (``CommitConflictError``); the table is
    then unchanged. A failed commit keeps the messages' data files, as Java Paimon does, so
    the same messages can be committed again (after a ``CommitConflictError`` for lost races);
    call ``abort(messages)`` for messages you give up."""

    def __init__(self, table: Table, commit_user: str, static_partition: Optional[Dict[str, Any]],
                 dynamic_overwrite: bool = False):
        self.table = table
        self._core = table._core.new_commit(commit_user)
        self._static_partition = static_partition
        self._dynamic_overwrite = dynamic_overwrite
        self._committed = False

    @property
    def commit_user(self) -> str:
        return self._core.commit_user

    def _overwrite_batch(self) -> Optional[pa.RecordBatch]:
        if self._static_partition is None:
            return None
        schema = self.table.arrow_schema
        arrays, fields = [], []
        for k, v in self._static_partition.items():
            f = schema.field(k)
            try:
                arrays.append(pa.array([v], type=f.type) if not isinstance(v, str) or pa.types.is_string(f.type)
                              else pa.array([v]).cast(f.type))
            except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError) as e:
                raise InvalidArgumentError(f"overwrite: value {v!r} does not fit '{k}' ({f.type}): {e}") from e
            fields.append(pa.field(k, f.type))
        return pa.RecordBatch.from_arrays(arrays, schema=pa.schema(fields))

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
        ident = BATCH_COMMIT_IDENTIFIER
        if commit_identifier is not None:
            if isinstance(commit_identifier, bool) or not isinstance(commit_identifier, int) \
                    or not -(2**63) <= commit_identifier < BATCH_COMMIT_IDENTIFIER:
                raise InvalidArgumentError(
                    f"commit_identifier must be an int in [-2**63, 2**63-1), got {commit_identifier!r}"
                )
            ident = commit_identifier
        snapshot_id = self._core.commit(list(commit_messages), ident, self._overwrite_batch(),
                                        self._dynamic_overwrite)
        self._committed = True
        return snapshot_id

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
        pass

    def __enter__(self) -> BatchTableCommit:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


Split = _core.Split


class Plan:
    def __init__(self, snapshot_id: Optional[int], splits: List[Split]):
        self.snapshot_id = snapshot_id
        self._splits = splits

    def splits(self) -> List[Split]:
        return self._splits


class TableScan:
    def __init__(self, table: Table, predicate: Optional[Predicate], snapshot_id: Optional[int] = None):
        self.table = table
        self.predicate = predicate
        self.snapshot_id = snapshot_id

    def plan(self) -> Plan:
        filt = self.predicate.to_core(self.table.arrow_schema) if self.predicate else None
        snapshot_id, splits = self.table._core.plan(filt, self.snapshot_id)
        return Plan(snapshot_id, splits)


class TableRead:
    def __init__(self, table: Table, projection: Optional[List[str]], predicate: Optional[Predicate],
                 limit: Optional[int] = None):
        self.table = table
        filt = predicate.to_core(table.arrow_schema) if predicate else None
        self._core = table._core.new_read(projection, filt)
        self._limit = limit

    @property
    def schema(self) -> pa.Schema:
        return self._core.output_schema()

    def to_arrow_batch_reader(self, splits: List[Split]) -> pa.RecordBatchReader:
        # Streams: splits are read one after the other and merged batch by batch, so memory
        # stays bounded (one decoded batch per sorted run plus the output).
        def batches() -> Iterator[pa.RecordBatch]:
            remaining = self._limit
            for b in self._core.stream(list(splits)):
                if remaining is not None:
                    if remaining <= 0:
                        return
                    b = b.slice(0, remaining)
                    remaining -= b.num_rows
                yield b
        return pa.RecordBatchReader.from_batches(self.schema, batches())

    def to_arrow(self, splits: List[Split]) -> pa.Table:
        t = self._core.read(list(splits)).read_all()
        if self._limit is not None:
            t = t.slice(0, self._limit)
        return t

    def to_pandas(self, splits: List[Split]) -> Any:
        return self.to_arrow(splits).to_pandas()

    def to_iterator(self, splits: List[Split]) -> Iterator[Dict[str, Any]]:
        for b in self.to_arrow_batch_reader(splits):
            yield from b.to_pylist()


class ReadBuilder:
    def __init__(self, table: Table):
        self.table = table
        self._projection: Optional[List[str]] = None
        self._predicate: Optional[Predicate] = None
        self._limit: Optional[int] = None

    def with_filter(self, predicate: Optional[Predicate]) -> ReadBuilder:
        self._predicate = predicate
        return self

    def with_projection(self, projection: List[str]) -> ReadBuilder:
        self._projection = list(projection)
        return self

    def with_limit(self, limit: int) -> ReadBuilder:
        self._limit = limit
        return self

    def new_predicate_builder(self) -> PredicateBuilder:
        return PredicateBuilder(self.table.arrow_schema)

    def read_type(self) -> pa.Schema:
        return self.new_read().schema

    def new_scan(self) -> TableScan:
        return TableScan(self.table, self._predicate)

    def new_read(self) -> TableRead:
        return TableRead(self.table, self._projection, self._predicate, self._limit)
