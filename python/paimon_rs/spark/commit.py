"""Exactly once for a distributed job: collect its task attempts' commit messages once, wait
until no attempt still runs, keep one attempt per Spark partition, commit once (a commit
identifier found committed means done), and delete the files no commit took."""

import os
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Set, Tuple

from paimon_rs import _core
from paimon_rs.exceptions import PaimonRsError
from paimon_rs.options import data_file_dir_prefix
from paimon_rs.spark.common import _has_spark_context, _log
from paimon_rs.table import CommitMessage, Table

#: one row per commit message a write task yields
_MESSAGE_SCHEMA = (
    "spark_partition int, attempt int, task_attempt_id long, bucket int, "
    "partition binary, message binary"
)

#: threads listing an object store's directories at once in ``_walk``
_LIST_THREADS = 16

# Directories of a table that never hold data files of a write.
_METADATA_DIRS = {"snapshot", "schema", "manifest", "index", "statistics", "tag", "changelog", "branch"}


#: how long the driver waits, after a job, for its task attempts still running to end
SETTLE_TIMEOUT_S = 120.0

#: after attempts were seen running: time for Spark to stop a killed attempt's Python worker
SETTLE_GRACE_S = 0.5

_JOB_GROUP_PROPS = ("spark.jobGroup.id", "spark.job.description", "spark.job.interruptOnCancel")


def _collect_settled(spark: Any, collect: Callable[[], List[Any]]) -> List[Any]:
    """``collect()`` (a ``collect`` of a DataFrame or RDD, which builds it too: building the RDD
    of a DataFrame with a shuffle runs the shuffle's stage under AQE) once (a second action
    would run every task again), in a job group of its own; then, succeeded or failed, wait
    until none of the job's task attempts runs. A job
    fails (or, with speculation, succeeds) while other attempts still run; Spark kills them, but
    one may finish writing its files after ``collect`` returned, and the driver's sweep of the
    files the commit did not take would miss them. The caller's job group is restored."""
    if not _has_spark_context(spark):  # Spark Connect: no status tracker; sweep as is
        return collect()
    sc = spark.sparkContext
    group = f"paimon_rs-{uuid.uuid4().hex}"
    previous = {k: sc.getLocalProperty(k) for k in _JOB_GROUP_PROPS}
    sc.setJobGroup(group, "paimon_rs writers", interruptOnCancel=True)
    try:
        return collect()
    finally:
        for k, v in previous.items():
            sc.setLocalProperty(k, v)  # None removes it
        _wait_for_attempts(sc, group)


def _wait_for_attempts(sc: Any, group: str) -> None:
    """Until no task attempt of the jobs of ``group`` runs (bounded by ``SETTLE_TIMEOUT_S``)."""
    tracker = sc.statusTracker()
    deadline = time.monotonic() + SETTLE_TIMEOUT_S
    seen_running = False
    while True:
        running = 0
        for job in tracker.getJobIdsForGroup(group):
            info = tracker.getJobInfo(job)
            for stage in (info.stageIds if info is not None else []):
                st = tracker.getStageInfo(stage)
                running += st.numActiveTasks if st is not None else 0
        if running == 0:
            break
        seen_running = True
        if time.monotonic() > deadline:
            _log.warning("%d task attempt(s) of job group %s still run after %.0f s; their files, "
                         "if any, are left for remove_orphan_files", running, group, SETTLE_TIMEOUT_S)
            return
        time.sleep(0.05)
    if seen_running:
        time.sleep(SETTLE_GRACE_S)


def _changelog_prefix(table: Table, file_prefix: str) -> str:
    """The changelog file prefix that goes with the data file prefix ``file_prefix`` of a
    write (``data-<write>-...`` -> ``changelog-<write>-...``, under the table's own
    ``data-file.prefix`` / ``changelog-file.prefix``)."""
    data = table.options.get("data-file.prefix", "data-")
    changelog = table.options.get("changelog-file.prefix", "changelog-")
    return changelog + (file_prefix[len(data):] if file_prefix.startswith(data) else file_prefix)


def _index_prefix(table: Table, file_prefix: str) -> str:
    """The hash index file prefix that goes with the data file prefix ``file_prefix`` of a
    write (``data-<write>-...`` -> ``index-<write>-...``): a dynamic-bucket table's writers
    name their index files so, and the driver's sweep deletes those no commit took."""
    data = table.options.get("data-file.prefix", "data-")
    return "index-" + (file_prefix[len(data):] if file_prefix.startswith(data) else file_prefix)


def _root(table: Table) -> Tuple[str, bool]:
    """The table's directory (a local path, ``file://`` stripped, or an object store URI) and
    whether it is on an object store."""
    root = table.table_path
    if root.startswith("file://"):
        root = root[len("file://"):]
    return root, "://" in root


def _join(base: str, name: str, remote: bool) -> str:
    return base.rstrip("/") + "/" + name if remote else os.path.join(base, name)


def _ended_marker(table: Table, file_prefix: str) -> str:
    """The marker of a Data Source write whose driver side ended (``commit`` or ``abort`` was
    called), ``index/write-<write>-ended``: written before that side lists the write's files to
    sweep them; a task attempt that finds it after writing its files deletes them itself
    (``withdraw_if_ended``). It never matches ``_sweep``'s prefixes, and no snapshot lists it, so
    ``remove_orphan_files`` (ours and Java's ``OrphanFilesClean``, which list ``index/``)
    deletes it once older than their threshold. Under a local table a path, under an object
    store table (``s3://`` ...) a URI of the same store."""
    root, remote = _root(table)
    data = table.options.get("data-file.prefix", "data-")
    write = file_prefix[len(data):] if file_prefix.startswith(data) else file_prefix
    return _join(_join(root, "index", remote), f"write-{write}ended", remote)


def mark_ended(table: Table, file_prefix: str) -> None:
    """Write the ended marker of the write ``file_prefix`` durably before returning (a local
    file and its directory synced; an object store's PUT is durable and visible to every later
    read and list once it returns); called before the driver side lists the write's files."""
    path = _ended_marker(table, file_prefix)
    if _root(table)[1]:
        _core.fio_write(path, b"1", True)
        return
    d = os.path.dirname(path)
    os.makedirs(d, exist_ok=True)
    with open(path, "wb") as f:
        f.write(b"1")
        f.flush()
        os.fsync(f.fileno())
    fd = os.open(d, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def withdraw_if_ended(table: Table, file_prefix: str, attempt_prefix: str) -> bool:
    """In a task attempt of the Data Source write ``file_prefix``, after it wrote every file
    (named ``attempt_prefix``) and before it returns its message: if the driver side already
    ended (its marker exists), delete this attempt's files (data, changelog, hash index) and
    return True (the attempt returns no message). Else the files were all written before the
    marker existed, hence before the driver listed them: its sweep deletes them unless its
    commit took them."""
    path = _ended_marker(table, file_prefix)
    found = _core.fio_status(path) is not None if _root(table)[1] else os.path.exists(path)
    if not found:
        return False
    _sweep(table, attempt_prefix, set())
    return True


def _task_options(table: Table, task_prefix: str) -> Dict[str, str]:
    """The options of one task attempt's copy of ``table``: its data files named
    ``task_prefix`` and its changelog files (lookup, input and full-compaction producers) named
    by the matching changelog prefix, so the driver's sweep finds both when the attempt is not
    the one committed."""
    return {"data-file.prefix": task_prefix,
            "changelog-file.prefix": _changelog_prefix(table, task_prefix)}


#: suffixes of a data file's extra files, named after it: ``<data file>.index`` holds its file
#: index (bloom filters) when too big for the manifest (``file-index.in-manifest-threshold``)
_EXTRA_FILE_SUFFIXES = (".index",)


def _kept(name: str, keep: Set[str]) -> bool:
    """Whether ``name`` is in ``keep`` or is an extra file of a data file in it."""
    return name in keep or any(name.endswith(x) and name[:-len(x)] in keep for x in _EXTRA_FILE_SUFFIXES)


def _walk(root: str, remote: bool) -> Iterator[Tuple[str, List[str], List[str]]]:
    """``os.walk(root)`` (top-down; the caller may prune the yielded directory names) for a
    local path; for an object store URI the same over the store's listing, one level of
    directories listed at a time by up to ``_LIST_THREADS`` threads (``_core.fio_list``
    releases the GIL: a table of many partitions costs one request per directory, as
    ``remove_orphan_files``)."""
    if not remote:
        yield from os.walk(root)
        return
    level = [root]
    with ThreadPoolExecutor(max_workers=_LIST_THREADS) as pool:
        while level:
            below: List[str] = []
            for d, entries in zip(level, pool.map(_core.fio_list, level)):
                dirs: List[str] = []
                files: List[str] = []
                for path, is_dir, _, _ in entries:
                    (dirs if is_dir else files).append(path.rstrip("/").rsplit("/", 1)[-1])
                yield d, dirs, files
                below.extend(_join(d, x, True) for x in dirs)
            level = below


def _sweep(table: Table, file_prefix: str, keep: Set[str]) -> List[str]:
    """Delete the data files named ``file_prefix*`` (with their extra files: a file index),
    the changelog files named by the matching changelog prefix and the index files by the
    matching index prefix (this write's, any task attempt) that are not in ``keep`` (an extra
    file goes with its data file), on a local disk or an object store alike. Returns the
    deleted paths."""
    deleted: List[str] = []
    root, remote = _root(table)
    prefixes = (file_prefix, _changelog_prefix(table, file_prefix))
    index_dir = _join(root, "index", remote)
    index_prefix = _index_prefix(table, file_prefix)
    levels = len(table.partition_keys)
    walks = [(root, remote, True, 0)] + [(r, rr, False, h) for r, rr, h in _external_walks(table)]
    for top, top_remote, own, hash_levels in walks:
        keep_dir = _data_dir_filter(levels, hash_levels)
        for dirpath, dirnames, filenames in _walk(top, top_remote):
            if own and dirpath == top:
                dirnames[:] = [d for d in dirnames if d not in _METADATA_DIRS or d == "index"]
            if not own:
                rel = dirpath[len(top):].strip("/" if top_remote else os.sep)
                depth = len(rel.split("/" if top_remote else os.sep)) if rel else 0
                dirnames[:] = [d for d in dirnames if keep_dir(depth, d)]
            # in index/: a dynamic-bucket table's hash index files of this write's task attempts
            mine = (index_prefix,) if own and dirpath == index_dir else prefixes
            if own and dirpath == index_dir:
                dirnames[:] = []
            for f in filenames:
                if f.startswith(mine) and not _kept(f, keep):
                    p = _join(dirpath, f, top_remote)
                    if top_remote:
                        if _core.fio_delete(p):
                            deleted.append(p)
                        continue
                    try:
                        os.remove(p)
                        deleted.append(p)
                    except FileNotFoundError:
                        pass
    return deleted


def _external_walks(table: Table) -> List[Tuple[str, bool, int]]:
    """The roots ``data-file.external-paths`` sends new data files to, as parsed by the engine
    (``_core.Table.external_paths``; none with strategy ``none``, only those of its scheme with
    ``specific-fs``): each as a local path or object store URI, whether remote, and how many
    levels of hash directories (entropy-inject) its files have below their bucket directory.
    A task attempt's files may be there (docs/write-path.md, External data paths)."""
    ext = table._core.external_paths
    if ext is None:
        return []
    roots, hash_levels = ext
    # Java: `<root>/<data-file.path-directory>/<partition>/bucket-<n>/`
    sub = data_file_dir_prefix(table.options).rstrip("/")
    return [(_join(r, sub, "://" in r) if sub else r, "://" in r, hash_levels) for r in roots]


#: the widths of entropy-inject's hash directories below a bucket directory, outermost first
_HASH_DIR_WIDTHS = (4, 4, 4, 8)


def _data_dir_filter(levels: int, hash_levels: int) -> Callable[[int, str], bool]:
    """Which directory names a walk of an external root descends into, by depth below the root
    (0 = the root's entries): ``key=value`` partition directories down ``levels`` levels, then
    ``bucket-<n>``, then ``hash_levels`` levels of hash directories (binary digits of
    ``_HASH_DIR_WIDTHS``): the listing stays in this table's layout, not in whatever else shares
    the root."""
    def keep(depth: int, name: str) -> bool:
        if depth < levels:
            return "=" in name
        if depth == levels:
            return name.startswith("bucket-")
        h = depth - levels - 1
        return h < hash_levels and len(name) == _HASH_DIR_WIDTHS[h] and set(name) <= {"0", "1"}
    return keep


@dataclass
class _Collected:
    """Commit messages of a distributed job, one task attempt per Spark partition."""

    messages: List[CommitMessage]
    files: Set[str]


def _choose_attempts(rows: Sequence[Any], bucketed: bool, table: Table) -> _Collected:
    """Keep one attempt per Spark partition (Spark returns one per partition; a second would be
    a bug) and check that no (partition, bucket) came from two tasks."""
    by_part: Dict[int, int] = {}
    for r in rows:
        by_part.setdefault(r["spark_partition"], r["task_attempt_id"])
    msgs: List[CommitMessage] = []
    owner: Dict[Tuple[bytes, int], int] = {}
    for r in rows:
        if by_part[r["spark_partition"]] != r["task_attempt_id"]:
            continue
        key = (bytes(r["partition"]), r["bucket"])
        if bucketed and owner.setdefault(key, r["spark_partition"]) != r["spark_partition"]:
            raise PaimonRsError(
                f"paimon_rs.spark.write into {table.identifier}: bucket {r['bucket']} of one partition "
                f"was written by Spark partitions {owner[key]} and {r['spark_partition']} (the shuffle must "
                "put a bucket in one task); nothing was committed"
            )
        msgs.append(CommitMessage.from_bytes(bytes(r["message"])))
    files = {f for m in msgs for f in m.file_names + m.compact_after + m.changelog_file_names + m.index_file_names}
    return _Collected(msgs, files)


def _commit_collected(table: Table, builder: Any, collected: _Collected, file_prefix: str,
                      commit_identifier: Optional[int]) -> Optional[int]:
    """Commit once; then delete this write's files that are not committed. On a failed commit
    the files go too, unless the commit landed all the same (its identifier is found)."""
    commit = builder.new_commit()
    try:
        snapshot = commit.commit(collected.messages, commit_identifier=commit_identifier)
    except BaseException:
        landed = None
        if commit_identifier is not None:
            try:
                landed = builder.new_commit()._core.committed_snapshot(commit_identifier)
            except Exception:  # noqa: BLE001 (cannot tell: delete nothing but the losers)
                _sweep(table, file_prefix, collected.files)
                raise
        if landed is None:
            commit.abort(collected.messages)  # never deletes a file a snapshot references
            _sweep(table, file_prefix, set())
        else:
            _sweep(table, file_prefix, collected.files)
        raise
    if commit_identifier is not None and collected.messages:
        # Another run of this job may have committed the identifier meanwhile: the commit then
        # returned that snapshot and wrote nothing. abort deletes our files unless a snapshot
        # references them (ours landed), so they never outlive a commit that did not take them.
        try:
            commit._core.abort(collected.messages)
        except PaimonRsError:
            pass  # the snapshots could not be read: keep what the commit may hold
    _sweep(table, file_prefix, collected.files)
    return snapshot


def _collect_and_commit(spark: Any, collect: Callable[[], List[Any]], bucketed: bool, table: Table, builder: Any,
                        file_prefix: str) -> Optional[int]:
    """A job of a compaction (no commit identifier): ``collect()`` once (``_collect_settled``),
    one attempt per Spark partition (``_choose_attempts``), one commit through ``builder``
    (``_commit_collected``); None, nothing committed and the job's files deleted, when no task
    wrote; a failed job deletes its files."""
    collected = _collect_attempts(spark, collect, bucketed, table, file_prefix)
    if collected is None:
        return None
    return _commit_collected(table, builder, collected, file_prefix, None)


def _collect_attempts(spark: Any, collect: Callable[[], List[Any]], bucketed: bool, table: Table,
                      file_prefix: str) -> Optional[_Collected]:
    """``collect()`` once (``_collect_settled``) and one attempt per Spark partition
    (``_choose_attempts``); None, the job's files deleted, when no task wrote; a failed job
    deletes its files."""
    try:
        got = _collect_settled(spark, collect)
        collected = _choose_attempts(got, bucketed, table)
    except BaseException:
        _sweep(table, file_prefix, set())
        raise
    if not collected.messages:
        _sweep(table, file_prefix, set())
        return None
    return collected
