"""``ReadBuilder.explain()``: the scan plan of a read, as pypaimon's ``ExplainResult``.

One planning pass (the same ``plan()`` a read makes: snapshot, manifests, partition / bucket /
statistics pruning; no data file is opened) summarised: the snapshot and schema read, the
pushed-down filter, projection and limit, split and file counts, sizes, row estimates, the
level histogram, raw-convertible and deletion-vector splits; with ``verbose=True`` every split.

The pruning funnel, as pypaimon's (``PruningStat(before, after)``, in files): with a filter on
a partitioned table, ``partition_pruning`` goes from the snapshot's live files (its manifest
lists' counts) to those of the partitions the filter may match; ``bucket_pruning`` (fixed
buckets, a filter pinning every bucket key by ``=`` or ``IN``: Java's ``BucketSelectConverter``)
to those of the buckets the keys hash to; with a filter, ``file_skipping`` to the files whose
statistics (and level, file index) may hold a row, which the splits read. A stage that did
not run is None. Differences from pypaimon: the counts are of live files (pypaimon counts
manifest entries, DELETE entries included); the heading names paimon_rs.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Dict, List, Optional

if TYPE_CHECKING:  # pragma: no cover
    from paimon_rs.table import ReadBuilder


@dataclass
class PruningStat:
    """Entries before and after one pruning stage (None: not counted)."""

    before: Optional[int]
    after: Optional[int]

    @property
    def pruned(self) -> Optional[int]:
        if self.before is None or self.after is None:
            return None
        return self.before - self.after

    def format(self) -> str:
        if self.before is None and self.after is None:
            return "n/a"
        pruned = self.pruned
        return (f"{'?' if self.before is None else self.before} -> {'?' if self.after is None else self.after}"
                + ("" if pruned is None else f"  (pruned {pruned})"))


@dataclass
class ExplainSplitInfo:
    """One split of the plan (``explain(verbose=True)``)."""

    partition: Dict[str, Any]
    bucket: int
    file_count: int
    row_count: int
    merged_row_count: Optional[int]
    file_size: int
    raw_convertible: bool
    has_deletion_vectors: bool
    level_histogram: Dict[int, int]
    deletion_file_count: int
    file_paths: List[str]
    data_files: Optional[List[Any]] = None


@dataclass
class ExplainResult:
    """The scan plan of a ``ReadBuilder`` (pypaimon's fields; ``str()`` prints it)."""

    table_identifier: str
    is_primary_key_table: bool
    bucket_mode: str
    deletion_vectors_enabled: bool
    data_evolution_enabled: bool
    snapshot_id: Optional[int]
    schema_id: Optional[int]
    predicate: Optional[str] = None
    projection: Optional[List[str]] = None
    limit: Optional[int] = None
    partition_pruning: Optional[PruningStat] = None
    bucket_pruning: Optional[PruningStat] = None
    file_skipping: Optional[PruningStat] = None
    file_count: int = 0
    total_file_size: int = 0
    estimated_row_count: int = 0
    estimated_merged_row_count: Optional[int] = None
    deletion_file_count: int = 0
    level_histogram: Dict[int, int] = field(default_factory=dict)
    split_count: int = 0
    splits_raw_convertible: int = 0
    splits_with_deletion_vectors: int = 0
    splits_all_above_l0: int = 0
    files_per_split_min: int = 0
    files_per_split_max: int = 0
    files_per_split_avg: float = 0.0
    split_size_min: int = 0
    split_size_max: int = 0
    split_size_avg: float = 0.0
    split_size_p50: int = 0
    split_size_p95: int = 0
    has_auth: bool = False
    splits: Optional[List[ExplainSplitInfo]] = None
    # pypaimon's flag for ``scan.native-plan.enabled`` = true (its Rust planner); paimon_rs
    # always plans in Rust and counts either way: True when the option asks for it and there is
    # a snapshot to plan (pypaimon falls back on an empty table)
    native_planned: bool = False

    def __str__(self) -> str:
        return render_explain(self)


def _levels(files: List[Any]) -> Dict[int, int]:
    hist: Dict[int, int] = {}
    for f in files:
        hist[f.level] = hist.get(f.level, 0) + 1
    return hist


def _percentile(sorted_values: List[int], p: float) -> int:
    if not sorted_values:
        return 0
    return sorted_values[min(len(sorted_values) - 1, int(p * (len(sorted_values) - 1) + 0.5))]


def explain(builder: ReadBuilder, verbose: bool = False) -> ExplainResult:
    """The plan of ``builder``'s scan (``ReadBuilder.explain``)."""
    from paimon_rs import _core

    table = builder.table
    scan = builder.new_scan()
    from paimon_rs.table import _with_system_columns

    filt = scan.predicate.to_core(_with_system_columns(table)) if scan.predicate else None
    snapshot_id, splits, counts = table._core.plan_with_stats(filt, scan.snapshot_id)
    if scan._shard is not None:
        # the shard's own plan (of the same snapshot): a data-evolution table's is cut by row id
        scan.snapshot_id = snapshot_id
        splits = scan.plan().splits()
    live, after_partition, after_bucket, after_stats = counts
    schema_id = None
    if snapshot_id is not None:
        text = _core.snapshot_json(table._core, int(snapshot_id))
        schema_id = json.loads(text).get("schemaId") if text is not None else None
    pred = builder._combined_filter()
    opts = table.options
    result = ExplainResult(
        table_identifier=str(table.identifier),
        is_primary_key_table=table.is_primary_key_table,
        bucket_mode=str(table.bucket_mode()),
        deletion_vectors_enabled=opts.get("deletion-vectors.enabled", "false").lower() == "true",
        data_evolution_enabled=opts.get("data-evolution.enabled", "false").lower() == "true",
        snapshot_id=snapshot_id,
        schema_id=schema_id,
        predicate=str(pred) if pred is not None else None,
        projection=list(builder._projection) if builder._projection is not None else None,
        limit=builder._limit,
        native_planned=(snapshot_id is not None
                        and str(opts.get("scan.native-plan.enabled", "false")).lower() == "true"),
    )
    if scan.predicate is not None and snapshot_id is not None:
        if table.partition_keys and live is not None:
            result.partition_pruning = PruningStat(live, after_partition)
        if after_bucket is not None:
            result.bucket_pruning = PruningStat(after_partition, after_bucket)
        result.file_skipping = PruningStat(after_partition if after_bucket is None else after_bucket,
                                           after_stats)
    infos: List[ExplainSplitInfo] = []
    merged_total: Optional[int] = 0
    for s in splits:
        files = s.files
        merged = s.merged_row_count()
        merged_total = None if merged is None or merged_total is None else merged_total + merged
        dv_files = s.deletion_file_count
        partition = s.partition.to_dict() if s.partition is not None else {}
        infos.append(ExplainSplitInfo(
            partition=partition, bucket=s.bucket, file_count=len(files), row_count=s.row_count,
            merged_row_count=merged, file_size=s.file_size, raw_convertible=s.raw_convertible,
            has_deletion_vectors=s.has_deletion_vectors, level_histogram=_levels(files),
            deletion_file_count=dv_files, file_paths=list(s.file_paths),
            data_files=list(files) if verbose else None))
    result.split_count = len(infos)
    result.file_count = sum(i.file_count for i in infos)
    result.total_file_size = sum(i.file_size for i in infos)
    result.estimated_row_count = sum(i.row_count for i in infos)
    result.estimated_merged_row_count = merged_total if infos else None
    result.deletion_file_count = sum(i.deletion_file_count for i in infos)
    for i in infos:
        for lv, n in i.level_histogram.items():
            result.level_histogram[lv] = result.level_histogram.get(lv, 0) + n
    result.splits_raw_convertible = sum(1 for i in infos if i.raw_convertible)
    result.splits_with_deletion_vectors = sum(1 for i in infos if i.has_deletion_vectors)
    result.splits_all_above_l0 = sum(1 for i in infos if i.level_histogram and 0 not in i.level_histogram)
    if infos:
        counts = [i.file_count for i in infos]
        sizes = sorted(i.file_size for i in infos)
        result.files_per_split_min, result.files_per_split_max = min(counts), max(counts)
        result.files_per_split_avg = sum(counts) / len(counts)
        result.split_size_min, result.split_size_max = sizes[0], sizes[-1]
        result.split_size_avg = sum(sizes) / len(sizes)
        result.split_size_p50, result.split_size_p95 = _percentile(sizes, 0.5), _percentile(sizes, 0.95)
    if verbose:
        result.splits = infos
    return result


def render_explain(r: ExplainResult) -> str:
    """The plan as text (pypaimon's layout, a paimon_rs heading)."""
    out = io.StringIO()
    out.write("== paimon_rs Scan Plan ==\n")
    flags = ["PK" if r.is_primary_key_table else "Append", r.bucket_mode]
    if r.deletion_vectors_enabled:
        flags.append("dv=on")
    if r.data_evolution_enabled:
        flags.append("data-evolution=on")
    _line(out, "Table", f"{r.table_identifier} ({', '.join(flags)})")
    if r.snapshot_id is None:
        _line(out, "Snapshot", "<none>  (table is empty or has no snapshot)")
    else:
        _line(out, "Snapshot", f"{r.snapshot_id}" + ("" if r.schema_id is None else f"  (schema {r.schema_id})"))
    _line(out, "Predicate", r.predicate or "<none>")
    _line(out, "Projection", f"[{', '.join(r.projection)}]" if r.projection else "<all columns>")
    _line(out, "Limit", str(r.limit) if r.limit is not None else "<none>")
    out.write("\n")
    if r.native_planned:
        _line(out, "Planner", "native (paimon_rs's Rust planner, scan.native-plan.enabled)")
    for label, stat in (("Partition pruning", r.partition_pruning), ("Bucket pruning", r.bucket_pruning),
                        ("File skipping", r.file_skipping)):
        _line(out, label, stat.format() if stat else "n/a")
    out.write("\n")
    _line(out, "Splits", str(r.split_count))
    if r.split_count > 0:
        out.write(f"  raw-convertible:  {r.splits_raw_convertible} / {r.split_count}\n")
        out.write(f"  with DV:          {r.splits_with_deletion_vectors} / {r.split_count}\n")
        out.write(f"  all-above-L0:     {r.splits_all_above_l0} / {r.split_count}\n")
        out.write(f"  files/split:      min={r.files_per_split_min}  max={r.files_per_split_max}  "
                  f"avg={r.files_per_split_avg:.2f}\n")
        out.write(f"  size/split:       min={_size(r.split_size_min)}  p50={_size(r.split_size_p50)}  "
                  f"p95={_size(r.split_size_p95)}  max={_size(r.split_size_max)}\n")
    out.write("\n")
    _line(out, "Files", str(r.file_count))
    _line(out, "Total size", _size(r.total_file_size))
    rows = f"{r.estimated_row_count:,}"
    if r.estimated_merged_row_count is not None:
        rows += f"   (merged: {r.estimated_merged_row_count:,})"
    _line(out, "Estimated rows", rows)
    if r.level_histogram:
        _line(out, "Level histogram", "  ".join(f"L{lv}={n}" for lv, n in sorted(r.level_histogram.items())))
    _line(out, "Deletion files", str(r.deletion_file_count))
    if r.splits:
        out.write("\nSplits[]\n")
        for idx, s in enumerate(r.splits):
            out.write(f"  [{idx}] partition={s.partition} bucket={s.bucket} files={s.file_count} "
                      f"size={_size(s.file_size)} rows={s.row_count} raw={s.raw_convertible} "
                      f"dv={s.has_deletion_vectors}\n")
            if s.level_histogram:
                out.write("      levels: " + "  ".join(f"L{lv}={n}" for lv, n in sorted(s.level_histogram.items()))
                          + "\n")
            for path in s.file_paths:
                out.write(f"      file: {path}\n")
    return out.getvalue().rstrip("\n")


def _line(out: io.StringIO, label: str, value: str) -> None:
    out.write(f"{label + ':':<19} {value}\n")


def _size(num_bytes: Optional[int]) -> str:
    if num_bytes is None:
        return "?"
    size = float(num_bytes)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024.0:
            return f"{int(size)} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024.0
    return f"{size:.1f} PiB"


__all__ = ["ExplainResult", "ExplainSplitInfo", "PruningStat", "explain", "render_explain"]
