"""paimon_rs <-> Java Paimon (the 1.0-SNAPSHOT bundle; a ``java09`` subset against 0.9.0).

Java runs as one JVM per session (java_env.py, java/PaimonDriver.java). Every test drives a
history through both engines and compares what each reads with a dict model of the rows:

* table kinds (primary key: deduplicate with row kinds from ``rowkind.field``, partitioned or
  not; partial-update; aggregation; first-row; append: unaware-bucket, partitioned, fixed
  bucket) x directions (Java writes -> we read; we write -> Java reads, also at an older
  snapshot; mixed: Java writes and compacts, we append, both read, Java writes and compacts
  again, both read);
* every type (as a value of a primary-key table) in the three directions, and a set of key types
  in a mixed history (the same key must land in the same bucket in both engines);
* table operations done by Java (tags, snapshot expiry, ALTER TABLE) that we must read after.

Known failures are ``xfail(strict=True)`` with the cause found, so a fix turns them red.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable, Optional

import pyarrow as pa
import pytest

from paimon_rs import CatalogFactory, CorruptFileError, Schema, UnsupportedError

import java_values as jv
from java_env import JavaError, JavaPaimon

pytestmark = pytest.mark.java

DB = "db"
DT = ["2026-11-01", "2026-11-02"]

def _xfail(reason: str, raises: type) -> pytest.MarkDecorator:
    return pytest.mark.xfail(strict=True, reason=reason, raises=raises)


# --------------------------------------------------------------------------- table kinds


@dataclass
class Kind:
    name: str
    fields: list            # [(name, paimon type, arrow type)]
    pk: list
    part: list
    options: dict
    engine: str             # deduplicate | partial-update | aggregation | first-row | append
    row_kinds: bool = False  # rowkind.field=op: commits carry -U/+U/-D
    java_compact: bool = True
    ours_write: Optional[str] = None  # paimon_rs refuses to write it: a regex of its UnsupportedError

    @property
    def names(self) -> list:
        return [f[0] for f in self.fields]

    @property
    def ptypes(self) -> list:
        return [f[1] for f in self.fields]

    @property
    def arrow_types(self) -> list:
        return [f[2] for f in self.fields]


_V = [("v", "BIGINT", pa.int64()), ("s", "STRING", pa.string()), ("d", "DECIMAL(20, 4)", pa.decimal128(20, 4))]
_ID = ("id", "INT", pa.int32())
_DT = ("dt", "STRING", pa.string())
_OP = ("op", "STRING", pa.string())

KINDS = {k.name: k for k in [
    Kind("pk_dedup", [_ID, *_V, _OP], ["id"], [], {"bucket": "3", "rowkind.field": "op"}, "deduplicate",
         row_kinds=True),
    Kind("pk_dedup_part", [_DT, _ID, *_V, _OP], ["dt", "id"], ["dt"], {"bucket": "2", "rowkind.field": "op"},
         "deduplicate", row_kinds=True),
    Kind("pk_partial", [_ID, *_V], ["id"], [], {"bucket": "2", "merge-engine": "partial-update"}, "partial-update"),
    Kind("pk_agg", [_DT, _ID, *_V], ["dt", "id"], ["dt"],
         {"bucket": "2", "merge-engine": "aggregation", "fields.v.aggregate-function": "sum",
          "fields.d.aggregate-function": "max"}, "aggregation"),
    Kind("pk_first_row", [_ID, *_V], ["id"], [], {"bucket": "2", "merge-engine": "first-row"}, "first-row"),
    # Java compacts on its own while writing (a sorted run trigger of 2)
    Kind("pk_auto_compact", [_DT, _ID, *_V, _OP], ["dt", "id"], ["dt"],
         {"bucket": "2", "rowkind.field": "op", "num-sorted-run.compaction-trigger": "2",
          "full-compaction.delta-commits": "2"}, "deduplicate", row_kinds=True),
    # table kinds paimon_rs does not write (ours_write: its refusal); some it cannot read (JAVA_ONLY_XFAIL)
    Kind("pk_deletion_vectors", [_ID, *_V, _OP], ["id"], [], {"bucket": "2", "rowkind.field": "op",
                                                             "deletion-vectors.enabled": "true"},
         "deduplicate", row_kinds=True),
    Kind("pk_dv_part", [_DT, _ID, *_V, _OP], ["dt", "id"], ["dt"],
         {"bucket": "2", "rowkind.field": "op", "deletion-vectors.enabled": "true"},
         "deduplicate", row_kinds=True),
    # dynamic bucket (bucket=-1, Paimon's default): the driver assigns buckets as Flink's sink
    # does (HASH index; cross-partition: a key moves between partitions)
    Kind("pk_dynamic_bucket", [_DT, _ID, *_V, _OP], ["dt", "id"], ["dt"],
         {"bucket": "-1", "rowkind.field": "op", "dynamic-bucket.target-row-num": "8"},
         "deduplicate", row_kinds=True),
    Kind("pk_cross_partition", [_DT, _ID, *_V, _OP], ["id"], ["dt"],
         {"bucket": "-1", "rowkind.field": "op", "dynamic-bucket.target-row-num": "8"},
         "deduplicate", row_kinds=True),
    Kind("pk_changelog_input", [_ID, *_V], ["id"], [], {"bucket": "2", "changelog-producer": "input"},
         "deduplicate"),
    Kind("pk_changelog_lookup", [_ID, *_V], ["id"], [], {"bucket": "2", "changelog-producer": "lookup"},
         "deduplicate"),
    Kind("pk_changelog_full_compaction", [_ID, *_V], ["id"], [],
         {"bucket": "2", "changelog-producer": "full-compaction"}, "deduplicate"),
    # ORC both ways; with a DECIMAL column paimon_rs writes with its own ORC writer (io/orc_write.rs)
    Kind("pk_orc", [_ID, *_V], ["id"], [], {"bucket": "2", "file.format": "orc"}, "deduplicate"),
    Kind("pk_orc_flat", [_ID, ("v", "BIGINT", pa.int64()), ("s", "STRING", pa.string()), _OP], ["id"], [],
         {"bucket": "2", "rowkind.field": "op", "file.format": "orc", "num-sorted-run.compaction-trigger": "2"},
         "deduplicate", row_kinds=True),
    Kind("append_orc_flat", [_ID, ("v", "BIGINT", pa.int64()), ("s", "STRING", pa.string())], [], [],
         {"bucket": "-1", "file.format": "orc"}, "append", java_compact=False),
    # Avro data files both ways (issue #29); the compacting kind has our writer compact too
    Kind("append_avro", [_ID, *_V], [], [], {"bucket": "-1", "file.format": "avro"}, "append",
         java_compact=False),
    Kind("pk_avro_part", [_DT, _ID, *_V, _OP], ["dt", "id"], ["dt"],
         {"bucket": "2", "rowkind.field": "op", "file.format": "avro"}, "deduplicate", row_kinds=True),
    Kind("pk_avro_compact", [_ID, *_V, _OP], ["id"], [],
         {"bucket": "2", "rowkind.field": "op", "file.format": "avro", "avro.codec": "zstandard",
          "num-sorted-run.compaction-trigger": "2"}, "deduplicate", row_kinds=True),
    Kind("append_bucketed_avro", [_ID, *_V], [], [],
         {"bucket": "2", "bucket-key": "id", "file.format": "avro", "compaction.min.file-num": "2"},
         "append"),
    Kind("append", [_ID, *_V], [], [], {"bucket": "-1"}, "append", java_compact=False),
    Kind("append_part", [_DT, _ID, *_V], [], ["dt"], {"bucket": "-1"}, "append", java_compact=False),
    Kind("append_bucketed", [_ID, *_V], [], [], {"bucket": "3", "bucket-key": "id"}, "append"),
]}


class Model:
    """The rows a table must hold after the commits applied so far."""

    def __init__(self, kind: Kind):
        self.kind = kind
        self.keyed: dict = {}
        self.rows: list = []
        self.key_idx = [kind.names.index(k) for k in kind.pk]

    def apply(self, rows: list, kinds: list) -> None:
        k = self.kind
        for row, rk in zip(rows, kinds):
            if k.engine == "append":
                self.rows.append(row)
                continue
            key = tuple(row[i] for i in self.key_idx)
            old = self.keyed.get(key)
            if k.engine == "deduplicate":
                if rk in ("+I", "+U"):
                    self.keyed[key] = row
                else:
                    self.keyed.pop(key, None)
            elif k.engine == "first-row":
                self.keyed.setdefault(key, row)
            elif k.engine == "partial-update":
                self.keyed[key] = row if old is None else [n if n is not None else o for n, o in zip(row, old)]
            elif k.engine == "aggregation":
                self.keyed[key] = row if old is None else [_agg(name, o, n) for name, o, n in zip(k.names, old, row)]
            else:
                raise ValueError(k.engine)

    def expected(self) -> list:
        return self.rows if self.kind.engine == "append" else list(self.keyed.values())

    def copy(self) -> Model:
        m = Model(self.kind)
        m.keyed, m.rows = dict(self.keyed), list(self.rows)
        return m


def _agg(name: str, old: Any, new: Any) -> Any:
    if name == "v":      # sum
        return new if old is None else old if new is None else old + new
    if name == "d":      # max
        from decimal import Decimal
        return new if old is None else old if new is None else max(old, new, key=Decimal)
    return new if new is not None else old  # last_non_null_value (pk columns are equal)


def commit_rows(kind: Kind, rng: random.Random, model: Model, n: int = 40) -> tuple[list, list]:
    """n random rows (and their row kinds) on a small key space, so commits update each other."""
    rows, kinds = [], []
    live = list(model.keyed)
    for _ in range(n):
        row = []
        for name, _t, _a in kind.fields:
            if name == "dt":
                row.append(rng.choice(DT))
            elif name == "id":
                row.append(rng.randrange(30) if kind.pk else rng.randrange(10**6))
            elif name == "v":
                row.append(None if rng.random() < 0.2 else rng.randint(-10**6, 10**6))
            elif name == "s":
                row.append(None if rng.random() < 0.2 else jv.TYPE_BY_ID["string"].gen(rng))
            elif name == "d":
                row.append(None if rng.random() < 0.2 else jv._dec(16, 4)(rng))
            elif name == "op":
                row.append("+I")
        rk = "+I"
        if kind.row_kinds and live and rng.random() < 0.3:
            key = rng.choice(live)
            for i, v in zip(model.key_idx, key):
                row[i] = v
            rk = rng.choice(["-D", "-U", "+U"])
            row[kind.names.index("op")] = rk
        rows.append(row)
        kinds.append(rk)
    return rows, kinds


# --------------------------------------------------------------------------- both engines


def _tname(request) -> str:
    return "t_" + "".join(c if c.isalnum() else "_" for c in request.node.name)[-80:]


def java_create(java: JavaPaimon, wh, table: str, fields: list, pk: list, part: list, options: dict) -> None:
    java.call("create_table", warehouse=str(wh), table=f"{DB}.{table}",
              fields=[{"name": n, "type": t} for n, t, *_ in fields], primary_keys=pk, partition_keys=part,
              table_options=options)


def java_write(java: JavaPaimon, wh, table: str, rows: list, kinds: Optional[list] = None) -> None:
    java.call("write", warehouse=str(wh), table=f"{DB}.{table}", commits=[{"rows": rows, "kinds": kinds}])


def java_read(java: JavaPaimon, wh, table: str, **kw) -> list:
    return java.call("read", warehouse=str(wh), table=f"{DB}.{table}", **kw)["rows"]


def ours_create(wh, table: str, fields: list, pk: list, part: list, options: dict) -> None:
    cat = CatalogFactory.create({"warehouse": str(wh)})
    cat.create_database(DB, True)
    schema = pa.schema([pa.field(n, a) for n, _t, a in fields])
    cat.create_table(f"{DB}.{table}", Schema.from_pyarrow_schema(schema, part, pk, dict(options)), False)


def ours_write(wh, table: str, names: list, arrow_types: list, rows: list, overwrite: Optional[dict] = None,
               options: Optional[dict] = None) -> None:
    t = CatalogFactory.create({"warehouse": str(wh)}).get_table(f"{DB}.{table}")
    if options:
        t = t.copy(options)
    wb = t.new_batch_write_builder()
    if overwrite is not None:
        wb = wb.overwrite(overwrite)
    w, c = wb.new_write(), wb.new_commit()
    try:
        w.write_arrow(jv.to_arrow(rows, names, arrow_types))
        c.commit(w.prepare_commit())
    finally:
        w.close()
        c.close()


def ours_read(wh, table: str, projection: Optional[list] = None) -> list:
    t = CatalogFactory.create({"warehouse": str(wh)}).get_table(f"{DB}.{table}")
    rb = t.new_read_builder()
    if projection is not None:
        rb = rb.with_projection(projection)
    return jv.from_arrow(rb.new_read().to_arrow(rb.new_scan().plan().splits()))


def check(actual: list, expected: list, ptypes: list, what: str) -> None:
    """Rows equal as multisets; for what Java read, an all-null ROW equals a null ROW
    (jv.JAVA_ALL_NULL_ROW)."""
    java = what.startswith("Java")
    a = Counter(jv.norm_row(r, ptypes, java) for r in actual)
    e = Counter(jv.norm_row(r, ptypes, java) for r in expected)
    if a != e:
        missing, extra = list((e - a).elements()), list((a - e).elements())
        pytest.fail(f"{what}: {len(actual)} rows, expected {len(expected)}; "
                    f"{len(missing)} missing, e.g. {missing[:3]}; {len(extra)} unexpected, e.g. {extra[:3]}")


# --------------------------------------------------------------------------- table kind x direction

# Java table kind -> (why paimon_rs cannot read it yet, the exception); none today
JAVA_ONLY_XFAIL: dict = {}
JAVA_ONLY = {k.name for k in KINDS.values() if k.ours_write}
JAVA_KINDS = [pytest.param(k, marks=[_xfail(*JAVA_ONLY_XFAIL[k])] if k in JAVA_ONLY_XFAIL else [], id=k)
              for k in KINDS]
OURS_KINDS = [k for k in KINDS if k not in JAVA_ONLY]


@pytest.mark.parametrize("kind_name", JAVA_KINDS)
def test_java_writes_we_read(java, tmp_path, request, kind_name):
    kind, t, rng = KINDS[kind_name], _tname(request), random.Random(kind_name)
    java_create(java, tmp_path, t, kind.fields, kind.pk, kind.part, kind.options)
    model = Model(kind)
    for i in range(4):
        rows, kinds = commit_rows(kind, rng, model)
        java_write(java, tmp_path, t, rows, kinds)
        model.apply(rows, kinds)
        if i == 1 and kind.java_compact:
            java.call("compact", warehouse=str(tmp_path), table=f"{DB}.{t}", full=True)
    check(java_read(java, tmp_path, t), model.expected(), kind.ptypes, "Java reads its own table")
    check(ours_read(tmp_path, t), model.expected(), kind.ptypes, "paimon_rs reads Java's table")
    levels = {f["level"] for f in java.call("files", warehouse=str(tmp_path), table=f"{DB}.{t}")}
    assert (max(levels) > 0) == (kind.java_compact and bool(kind.pk)), levels  # Java's compactions ran


@pytest.mark.parametrize("kind_name", OURS_KINDS)
def test_we_write_java_reads(java, tmp_path, request, kind_name):
    kind, t, rng = KINDS[kind_name], _tname(request), random.Random(kind_name)
    ours_create(tmp_path, t, kind.fields, kind.pk, kind.part, kind.options)
    model, first, first_sid = Model(kind), None, None
    for _ in range(3):
        rows, kinds = commit_rows(kind, rng, model)
        ours_write(tmp_path, t, kind.names, kind.arrow_types, rows)
        model.apply(rows, kinds)
        first = first or model.copy()
        # the first commit's last snapshot: a compacting writer's COMPACT one follows its APPEND
        # (first-row tables show only what compaction moved up)
        first_sid = first_sid or CatalogFactory.create({"warehouse": str(tmp_path)}).get_table(
            f"{DB}.{t}").latest_snapshot_id()
    check(ours_read(tmp_path, t), model.expected(), kind.ptypes, "paimon_rs reads its own table")
    check(java_read(java, tmp_path, t), model.expected(), kind.ptypes, "Java reads paimon_rs's table")
    check(java_read(java, tmp_path, t, snapshot_id=first_sid), first.expected(), kind.ptypes,
          f"Java reads paimon_rs's snapshot {first_sid}")
    proj = [n for n in kind.names if n not in ("s", "op")][::-1]
    idx = [kind.names.index(n) for n in proj]
    check(java_read(java, tmp_path, t, projection=proj), [[r[i] for i in idx] for r in model.expected()],
          [kind.ptypes[i] for i in idx], "Java reads paimon_rs's table, projected")


def test_java_compacts_one_bucket_we_read(java, tmp_path, request):
    """compact(partition, bucket, full) on one bucket: its files go up a level, the others stay."""
    kind, t = KINDS["pk_dedup_part"], _tname(request)
    model = _simple_history(java, tmp_path, t, kind, 3, "one-bucket")[-1]
    java.call("compact", warehouse=str(tmp_path), table=f"{DB}.{t}", partition=[DT[0]], bucket=1, full=True)
    files = java.call("files", warehouse=str(tmp_path), table=f"{DB}.{t}")
    assert {f["level"] for f in files if f["partition"] == [DT[0]] and f["bucket"] == 1} == {5}
    assert {f["level"] for f in files if f["partition"] != [DT[0]] or f["bucket"] != 1} == {0}
    check(ours_read(tmp_path, t), model.expected(), kind.ptypes, "paimon_rs reads after Java's compaction")


# --------------------------------------------------------------------------- deletion vectors


def _dv_history(java, wh, t: str, kind: Kind, commits: int, seed: str, compact_every: int = 1) -> Model:
    """Java writes ``commits`` commits of upserts and deletes into a deletion-vector table,
    compacting (not fully) after every ``compact_every``-th: the compactions mark the replaced rows
    of the files above level 0 in deletion vectors."""
    rng, model = random.Random(seed), Model(kind)
    java_create(java, wh, t, kind.fields, kind.pk, kind.part, kind.options)
    for i in range(commits):
        rows, kinds = commit_rows(kind, rng, model, n=60)
        java_write(java, wh, t, rows, kinds)
        model.apply(rows, kinds)
        if (i + 1) % compact_every == 0:
            java.call("compact", warehouse=str(wh), table=f"{DB}.{t}", full=False)
    return model


def _index_files(wh, t: str) -> list:
    return sorted((wh / f"{DB}.db" / t / "index").glob("index-*"))


@pytest.mark.parametrize("kind_name", ["pk_deletion_vectors", "pk_dv_part"])
def test_deletion_vectors_java_writes_compacts_we_read(java, tmp_path, request, kind_name):
    """Several commits of updates and deletes, compacted by Java (which writes the deletion
    vectors): we read what Java reads and what the model holds, with and without projection and
    filter; level-0 files stay hidden as in Java."""
    kind, t = KINDS[kind_name], _tname(request)
    model = _dv_history(java, tmp_path, t, kind, 6, kind_name + "dv")
    assert _index_files(tmp_path, t), "Java wrote no deletion vector index file"
    java_rows = java_read(java, tmp_path, t)
    check(java_rows, model.expected(), kind.ptypes, "Java reads its deletion-vector table")
    check(ours_read(tmp_path, t), java_rows, kind.ptypes, "paimon_rs reads Java's deletion-vector table")
    proj = ["v", "id"]
    check(ours_read(tmp_path, t, projection=proj), [[r[kind.names.index(n)] for n in proj] for r in java_rows],
          ["BIGINT", "INT"], "paimon_rs reads Java's deletion-vector table, projected")
    tb = CatalogFactory.create({"warehouse": str(tmp_path)}).get_table(f"{DB}.{t}")
    rb = tb.new_read_builder()
    rb = rb.with_filter(rb.new_predicate_builder().greater_than("id", 14))
    splits = rb.new_scan().plan().splits()
    import pickle
    splits = pickle.loads(pickle.dumps(splits))  # splits carry their deletion files, pickled
    got = jv.from_arrow(rb.new_read().to_arrow(splits))
    check(got, [r for r in java_rows if r[kind.names.index("id")] > 14], kind.ptypes,
          "paimon_rs reads Java's deletion-vector table, filtered")
    # Java's uncompacted level-0 files are hidden from both reads
    rows, kinds = commit_rows(kind, random.Random("late"), model, n=30)
    java.call("write", warehouse=str(tmp_path), table=f"{DB}.{t}", options={"write-only": "true"},
              commits=[{"rows": rows, "kinds": kinds}])
    java_rows = java_read(java, tmp_path, t)
    check(java_rows, model.expected(), kind.ptypes, "Java hides level 0")
    check(ours_read(tmp_path, t), java_rows, kind.ptypes, "paimon_rs hides level 0 as Java")
    # deletion-vectors.merge-on-read (newer Java): level 0 is merged in, the vectors still apply
    model.apply(rows, kinds)
    mor = tb.copy({"deletion-vectors.merge-on-read": "true"})
    rb = mor.new_read_builder()
    check(jv.from_arrow(rb.new_read().to_arrow(rb.new_scan().plan().splits())), model.expected(), kind.ptypes,
          "paimon_rs reads with deletion-vectors.merge-on-read")
    # we continue Java's table: our writer restores its vectors, compacts Java's level 0 up
    # (marking the rows it supersedes) and writes the bucket's new index file; Java reads it
    rows, kinds = commit_rows(kind, random.Random("ours"), model, n=30)
    ours_write(tmp_path, t, kind.names, kind.arrow_types, rows)  # row kinds in the op column
    model.apply(rows, kinds)
    java_rows = java_read(java, tmp_path, t)
    check(java_rows, model.expected(), kind.ptypes, "Java reads our deletion vectors on its table")
    check(ours_read(tmp_path, t), java_rows, kind.ptypes, "paimon_rs reads its deletion vectors on Java's table")


def test_deletion_vector_corrupt_index_file_is_reported(java, tmp_path, request):
    kind, t = KINDS["pk_deletion_vectors"], _tname(request)
    _dv_history(java, tmp_path, t, kind, 4, "dv-corrupt")
    files = _index_files(tmp_path, t)
    assert files
    for f in files:
        b = bytearray(f.read_bytes())
        b[len(b) // 2] ^= 0x10
        f.write_bytes(bytes(b))
    with pytest.raises(CorruptFileError, match=r"index-.*deletion vector of data-"):
        ours_read(tmp_path, t)


@pytest.mark.parametrize("kind_name", ["pk_changelog_input", "pk_changelog_lookup", "pk_changelog_full_compaction"])
def test_changelog_files_stay_out_of_the_data_read(java, tmp_path, request, kind_name):
    """Java writes changelog files next to the data files; a batch read returns the data only."""
    kind, t = KINDS[kind_name], _tname(request)
    model = _simple_history(java, tmp_path, t, kind, 3, kind_name + "cl")[-1]
    java.call("compact", warehouse=str(tmp_path), table=f"{DB}.{t}", full=True)
    changelogs = list((tmp_path / f"{DB}.db" / t).glob("bucket-*/changelog-*"))
    assert changelogs, "Java wrote no changelog file"
    check(ours_read(tmp_path, t), model.expected(), kind.ptypes, "paimon_rs reads Java's changelog table")


def test_java_filtered_read_of_our_table(java, tmp_path, request):
    kind, t, rng = KINDS["pk_dedup_part"], _tname(request), random.Random("filter")
    ours_create(tmp_path, t, kind.fields, kind.pk, kind.part, kind.options)
    model = Model(kind)
    for _ in range(2):
        rows, kinds = commit_rows(kind, rng, model)
        ours_write(tmp_path, t, kind.names, kind.arrow_types, rows)
        model.apply(rows, kinds)
    flt = {"op": "and", "children": [{"op": "equal", "field": "dt", "value": DT[1]},
                                     {"op": "or", "children": [{"op": "greater_than", "field": "v", "value": 0},
                                                               {"op": "is_null", "field": "v"}]}]}
    want = [r for r in model.expected() if r[0] == DT[1] and (r[2] is None or r[2] > 0)]
    assert want
    check(java_read(java, tmp_path, t, filter=flt), want, kind.ptypes, "Java reads ours, filtered")


@pytest.mark.parametrize("kind_name", JAVA_KINDS)
def test_mixed_history(java, tmp_path, request, kind_name):
    """Java writes and compacts, we append, both read; Java writes and compacts again, both read."""
    kind, t, rng = KINDS[kind_name], _tname(request), random.Random(kind_name + "mixed")
    wh, full = str(tmp_path), f"{DB}.{t}"
    java_create(java, tmp_path, t, kind.fields, kind.pk, kind.part, kind.options)
    model = Model(kind)
    for _ in range(2):
        rows, kinds = commit_rows(kind, rng, model)
        java_write(java, tmp_path, t, rows, kinds)
        model.apply(rows, kinds)
    if kind.java_compact:
        java.call("compact", warehouse=wh, table=full, full=True)
    rows, kinds = commit_rows(kind, rng, model)
    if kind.ours_write:
        with pytest.raises(UnsupportedError, match=kind.ours_write):
            ours_write(tmp_path, t, kind.names, kind.arrow_types, rows)
    else:
        ours_write(tmp_path, t, kind.names, kind.arrow_types, rows)
        model.apply(rows, kinds)
    check(java_read(java, tmp_path, t), model.expected(), kind.ptypes, "Java reads after our append")
    check(ours_read(tmp_path, t), model.expected(), kind.ptypes, "paimon_rs reads after our append")
    rows, kinds = commit_rows(kind, rng, model)
    java_write(java, tmp_path, t, rows, kinds)
    model.apply(rows, kinds)
    if kind.java_compact:
        java.call("compact", warehouse=wh, table=full, full=False)
    check(java_read(java, tmp_path, t), model.expected(), kind.ptypes, "Java reads after Java's second write")
    check(ours_read(tmp_path, t), model.expected(), kind.ptypes, "paimon_rs reads after Java's second write")


def _keys_per_bucket(wh, table: str, key_cols: list) -> tuple[Counter, int]:
    """How many (partition, bucket) slices of paimon_rs's scan hold each key (a key in two
    buckets would appear in two), and the number of slices."""
    t = CatalogFactory.create({"warehouse": str(wh)}).get_table(f"{DB}.{table}")
    rb = t.new_read_builder()
    slices: dict = {}
    for split in rb.new_scan().plan().splits():
        data = rb.new_read().to_arrow([split]).to_pydict()
        keys = set(zip(*(data[c] for c in key_cols)))
        slices.setdefault(split.bucket_path, set()).update(keys)
    return Counter(k for keys in slices.values() for k in keys), len(slices)


def test_dynamic_bucket_writers_alternate_one_bucket_per_key(java, tmp_path, request):
    """Java and paimon_rs take turns on one dynamic-bucket table (a small target row number, so
    buckets fill and new ones open): each continues the other's hash index, both read the
    model, and no key is ever in two buckets."""
    kind, t, rng = KINDS["pk_dynamic_bucket"], _tname(request), random.Random("dynamic-alternate")
    java_create(java, tmp_path, t, kind.fields, kind.pk, kind.part, kind.options)
    model = Model(kind)
    for i in range(6):
        rows, kinds = commit_rows(kind, rng, model, n=30)
        if i % 2 == 0:
            java_write(java, tmp_path, t, rows, kinds)
        else:
            ours_write(tmp_path, t, kind.names, kind.arrow_types, rows)
        model.apply(rows, kinds)
        counts, slices = _keys_per_bucket(tmp_path, t, kind.pk)
        twice = [k for k, n in counts.items() if n > 1]
        assert not twice, f"after commit {i}: keys in two buckets: {twice[:5]}"
        check(java_read(java, tmp_path, t), model.expected(), kind.ptypes, f"Java reads after commit {i}")
        check(ours_read(tmp_path, t), model.expected(), kind.ptypes, f"paimon_rs reads after commit {i}")
    assert slices > len(DT)  # buckets of 8 keys filled and new ones opened


# --------------------------------------------------------------------------- every type

# (type id, direction) -> (reason of a known failure, the exception it raises); none today
TYPE_XFAIL: dict = {}


def _type_params(direction: str, types: list) -> list:
    out = []
    for tc in types:
        known = TYPE_XFAIL.get((tc.id, direction))
        marks = [_xfail(*known)] if known else []
        out.append(pytest.param(tc.id, marks=marks, id=tc.id))
    return out


def _type_rows(tc: jv.TypeCase, rng: random.Random, n: int, key0: int = 0) -> list:
    return [[key0 + i, None if i % 7 == 3 and tc.java_null else tc.gen(rng)] for i in range(n)]


def _type_fields(tc: jv.TypeCase) -> list:
    return [("id", "INT", pa.int32()), ("c", tc.ptype, tc.arrow)]


@pytest.mark.parametrize("type_id", _type_params("java_to_ours", jv.TYPES))
def test_type_java_writes_we_read(java, tmp_path, request, type_id):
    tc, t, rng = jv.TYPE_BY_ID[type_id], _tname(request), random.Random(type_id)
    java_create(java, tmp_path, t, _type_fields(tc), ["id"], [], {"bucket": "2"})
    first, second = _type_rows(tc, rng, 30), _type_rows(tc, rng, 20, key0=15)
    java_write(java, tmp_path, t, first)
    java_write(java, tmp_path, t, second)
    expected = {r[0]: r for r in first + second}
    ptypes = ["INT", tc.ptype]
    check(java_read(java, tmp_path, t), list(expected.values()), ptypes, "Java reads its own table")
    check(ours_read(tmp_path, t), list(expected.values()), ptypes, f"paimon_rs reads Java's {tc.ptype}")


@pytest.mark.parametrize("type_id", _type_params("ours_to_java", [t for t in jv.TYPES if t.arrow is not None]))
def test_type_we_write_java_reads(java, tmp_path, request, type_id):
    tc, t, rng = jv.TYPE_BY_ID[type_id], _tname(request), random.Random(type_id)
    fields = _type_fields(tc)
    ours_create(tmp_path, t, fields, ["id"], [], {"bucket": "2"})
    first, second = _type_rows(tc, rng, 30), _type_rows(tc, rng, 20, key0=15)
    ours_write(tmp_path, t, ["id", "c"], [pa.int32(), tc.arrow], first)
    ours_write(tmp_path, t, ["id", "c"], [pa.int32(), tc.arrow], second)
    expected = {r[0]: r for r in first + second}
    ptypes = ["INT", tc.ptype]
    check(ours_read(tmp_path, t), list(expected.values()), ptypes, "paimon_rs reads its own table")
    check(java_read(java, tmp_path, t), list(expected.values()), ptypes, f"Java reads paimon_rs's {tc.ptype}")


def _arrow_for(ptype: Any) -> pa.DataType:
    """Arrow input for a column of a Java-created table (types Arrow cannot name: the nearest)."""
    tc = next(t for t in jv.TYPES if t.ptype == ptype)
    if tc.arrow is not None:
        return tc.arrow
    return {"CHAR": pa.string(), "VARCHAR": pa.string(), "VARBINARY": pa.binary(), "TIME": pa.time32("ms")}[
        jv.root(ptype)]


@pytest.mark.parametrize("type_id", _type_params("into_java_table", jv.TYPES))
def test_type_we_write_into_java_table(java, tmp_path, request, type_id):
    """Java creates the table (any Paimon type, e.g. CHAR(5), TIME(3)) and writes; we append; both read."""
    tc, t, rng = jv.TYPE_BY_ID[type_id], _tname(request), random.Random(type_id + "into")
    java_create(java, tmp_path, t, _type_fields(tc), ["id"], [], {"bucket": "2"})
    first, second = _type_rows(tc, rng, 30), _type_rows(tc, rng, 20, key0=15)
    java_write(java, tmp_path, t, first)
    ours_write(tmp_path, t, ["id", "c"], [pa.int32(), _arrow_for(tc.ptype)], second)
    expected = {r[0]: r for r in first + second}
    ptypes = ["INT", tc.ptype]
    check(ours_read(tmp_path, t), list(expected.values()), ptypes, "paimon_rs reads")
    check(java_read(java, tmp_path, t), list(expected.values()), ptypes, f"Java reads our {tc.ptype} rows")


def _all_types_fields(with_arrow_only: bool) -> list:
    return [("id", "INT", pa.int32())] + [
        (f"c_{tc.id}", tc.ptype, tc.arrow) for tc in jv.TYPES if tc.arrow is not None or not with_arrow_only]


def test_paimon_typed_schema_we_create_java_reads(java, tmp_path, request):
    """pypaimon's Schema(fields=[DataField...]): paimon_rs creates the table from Paimon types
    (every type, those Arrow cannot name too: CHAR(5), VARCHAR(20), BINARY(4), TIME(3)) and
    writes; Java sees the exact types and reads the rows."""
    from paimon_rs import DataField
    from paimon_rs.data_types import parse_data_type

    t, rng = _tname(request), random.Random("paimon-typed")
    fields = _all_types_fields(False)
    cat = CatalogFactory.create({"warehouse": str(tmp_path)})
    cat.create_database(DB, True)
    cat.create_table(f"{DB}.{t}", Schema(
        fields=[DataField(i, n, parse_data_type(ty), f"comment {i}") for i, (n, ty, _a) in enumerate(fields)],
        primary_keys=["id"], options={"bucket": "2"}), False)
    js = java.call("schema", warehouse=str(tmp_path), table=f"{DB}.{t}")
    java_types = {f["name"]: f["type"] for f in js["fields"]}
    for n, ty, _a in fields:
        if isinstance(ty, str) and jv.root(ty) in ("CHAR", "VARCHAR", "BINARY", "VARBINARY", "TIME"):
            assert java_types[n] == ty, (n, java_types[n])
    assert java_types["id"] == "INT NOT NULL"
    rows = [[i] + [_wide_value(n[2:], rng) for n, *_ in fields[1:]] for i in range(40)]
    ours_write(tmp_path, t, [f[0] for f in fields], [a if a is not None else _arrow_for(ty) for _n, ty, a in fields],
               rows)
    check(java_read(java, tmp_path, t), rows, [f[1] for f in fields], "Java reads a Paimon-typed table of ours")


def _wide_value(type_id: str, rng: random.Random) -> Any:
    tc = jv.TYPE_BY_ID[type_id]
    return None if tc.java_null and rng.random() < 0.1 else tc.gen(rng)


def test_all_types_append_java_writes_we_read(java, tmp_path, request):
    """Every type, TIMESTAMP_LTZ(9) (INT96 in Java's files) too."""
    t, rng = _tname(request), random.Random("wide")
    fields = _all_types_fields(False)
    java_create(java, tmp_path, t, fields, [], [], {"bucket": "-1"})
    rows = [[i] + [_wide_value(n[2:], rng) for n, *_ in fields[1:]] for i in range(60)]
    java_write(java, tmp_path, t, rows)
    ptypes = [f[1] for f in fields]
    check(ours_read(tmp_path, t), rows, ptypes, "paimon_rs reads Java's wide append table")
    names = [f[0] for f in fields][::-2]
    idx = [[f[0] for f in fields].index(n) for n in names]
    check(ours_read(tmp_path, t, projection=names), [[r[i] for i in idx] for r in rows], [ptypes[i] for i in idx],
          "paimon_rs reads Java's wide append table, projected")


def test_java_timestamp_9_before_1970_we_read(java, tmp_path, request):
    """Java writes TIMESTAMP(9) instants before 1970 (INT96); Java itself cannot read them back
    (jv.JAVA_INT96_PRE_EPOCH), we must."""
    t, rng = _tname(request), random.Random("pre-epoch")
    java_create(java, tmp_path, t, [("id", "INT"), ("c", "TIMESTAMP(9)")], ["id"], [], {"bucket": "1"})
    rows = [[i, jv._ts(9, lo_year=1700, hi_year=1969)(rng)] for i in range(20)] + [[20, -1], [21, -10**9 - 1]]
    java_write(java, tmp_path, t, rows)
    with pytest.raises(JavaError, match="IllegalArgumentException"):
        java_read(java, tmp_path, t)
    check(ours_read(tmp_path, t), rows, ["INT", "TIMESTAMP(9)"], "paimon_rs reads Java's pre-1970 TIMESTAMP(9)")


def test_we_write_timestamp_9_before_1970_java_reads(java, tmp_path, request):
    """Our INT96 values take the day by floor division (nanoseconds of the day never negative), so
    Java reads our instants before 1970 too, unlike its own (jv.JAVA_INT96_PRE_EPOCH)."""
    t, rng = _tname(request), random.Random("pre-epoch-ours")
    ts9, ltz9, arr9 = (jv.TYPE_BY_ID[i] for i in ("timestamp_9", "timestamp_ltz_9", "array_timestamp_9"))
    fields = [("id", "INT", pa.int32()), ("a", ts9.ptype, ts9.arrow), ("b", ltz9.ptype, ltz9.arrow),
              ("c", arr9.ptype, arr9.arrow)]
    ours_create(tmp_path, t, fields, ["id"], [], {"bucket": "1"})
    old = jv._ts(9, lo_year=1700, hi_year=1969)
    rows = [[i, old(rng), old(rng), [old(rng), None, old(rng)]] for i in range(20)]
    rows += [[20, -1, -1, [-1]], [21, -10**9 - 1, -(10**9) + 1, []], [22, None, None, None]]
    ours_write(tmp_path, t, [f[0] for f in fields], [f[2] for f in fields], rows)
    types = [f[1] for f in fields]
    check(ours_read(tmp_path, t), rows, types, "paimon_rs reads its pre-1970 TIMESTAMP(9)")
    check(java_read(java, tmp_path, t), rows, types, "Java reads our pre-1970 TIMESTAMP(9)")


def test_all_types_append_we_write_java_reads(java, tmp_path, request):
    """Every type Arrow can name, TIMESTAMP(9) ones too (INT96 in our files, as in Java's)."""
    t, rng = _tname(request), random.Random("wide2")
    fields = _all_types_fields(True)
    ours_create(tmp_path, t, fields, [], [], {"bucket": "-1"})
    rows = [[i] + [_wide_value(n[2:], rng) for n, *_ in fields[1:]] for i in range(60)]
    ours_write(tmp_path, t, [f[0] for f in fields], [f[2] for f in fields], rows)
    check(java_read(java, tmp_path, t), rows, [f[1] for f in fields], "Java reads our wide append table")


# --------------------------------------------------------------------------- ORC and Avro data files

# Java refuses TIMESTAMP / TIMESTAMP_LTZ above precision 6 in Avro (AvroSchemaConverter)
_FORMAT_TYPES = {
    "orc": [tc.id for tc in jv.TYPES],
    "avro": [tc.id for tc in jv.TYPES if "timestamp_9" not in tc.id and "ltz_9" not in tc.id],
}


@pytest.mark.parametrize("fmt", ["orc", "avro"])
def test_every_type_java_orc_avro_pk_table_we_read(java, tmp_path, request, fmt):
    """A primary-key table of every type the format holds in Java, as values: Java writes, updates,
    compacts (files of several levels), writes again; we read what Java reads, whole and projected."""
    t, rng = _tname(request), random.Random("fmt" + fmt)
    fields = [("id", "INT", pa.int32())] + [(f"c_{i}", jv.TYPE_BY_ID[i].ptype, None) for i in _FORMAT_TYPES[fmt]]
    java_create(java, tmp_path, t, fields, ["id"], [], {"bucket": "2", "file.format": fmt})
    model: dict = {}
    for n, (lo, hi) in enumerate([(0, 40), (20, 60), (50, 70)]):
        rows = [[i] + [_wide_value(f[0][2:], rng) for f in fields[1:]] for i in range(lo, hi)]
        java_write(java, tmp_path, t, rows)
        model.update({r[0]: r for r in rows})
        if n == 1:
            java.call("compact", warehouse=str(tmp_path), table=f"{DB}.{t}", full=True)
    files = java.call("files", warehouse=str(tmp_path), table=f"{DB}.{t}")
    assert {f["file"].rsplit(".", 1)[1] for f in files} == {fmt}
    assert {f["level"] for f in files} > {0}
    ptypes = [f[1] for f in fields]
    expected = list(model.values())
    check(java_read(java, tmp_path, t), expected, ptypes, f"Java reads its {fmt} table")
    check(ours_read(tmp_path, t), expected, ptypes, f"paimon_rs reads Java's {fmt} table")
    names = [f[0] for f in fields][::-3]
    idx = [[f[0] for f in fields].index(n) for n in names]
    check(ours_read(tmp_path, t, projection=names), [[r[i] for i in idx] for r in expected],
          [ptypes[i] for i in idx], f"paimon_rs reads Java's {fmt} table, projected")


def test_formats_changed_by_alter_merge_in_one_table(java, tmp_path, request):
    """Java writes Parquet, then ORC, then Avro files into one primary-key table (ALTER TABLE SET
    file.format between commits) and evolves its schema on the way: each file is read in its own
    format, the merge spans them; we write Avro while the table says avro, Parquet after Java sets
    it back, and both engines read everything."""
    t, wh = _tname(request), tmp_path
    fields = [("id", "INT"), ("a", "BIGINT"), ("s", "STRING"), ("ts", "TIMESTAMP(6)")]
    java_create(java, wh, t, fields, ["id"], [], {"bucket": "1", "file.format": "parquet"})
    model: dict = {}

    def put(rows: list) -> None:
        model.update({r[0]: r for r in rows})

    ts = jv._ts(6)
    rng = random.Random("alter-format")
    first = [[i, i, f"p{i}", ts(rng)] for i in range(30)]
    java_write(java, wh, t, first)
    put([r + [None] for r in first])
    _alter(java, wh, t, {"op": "set_option", "key": "file.format", "value": "orc"},
           {"op": "rename_column", "name": "s", "new_name": "s2"}, {"op": "add_column", "name": "n", "type": "INT"})
    second = [[i, -i, f"o{i}", ts(rng), i] for i in range(10, 40, 2)]
    java_write(java, wh, t, second)
    put(second)
    _alter(java, wh, t, {"op": "set_option", "key": "file.format", "value": "avro"})
    third = [[i, 7 * i, None, None, -i] for i in range(0, 50, 3)]
    java_write(java, wh, t, third)
    put(third)
    exts = {f["file"].rsplit(".", 1)[1] for f in java.call("files", warehouse=str(wh), table=f"{DB}.{t}")}
    assert exts == {"parquet", "orc", "avro"}, exts
    types = ["INT", "BIGINT", "STRING", "TIMESTAMP(6)", "INT"]
    names = ["id", "a", "s2", "ts", "n"]
    check(java_read(java, wh, t), list(model.values()), types, "Java reads its three-format table")
    check(ours_read(wh, t), list(model.values()), types, "paimon_rs reads Java's three-format table")
    arrow = [pa.int32(), pa.int64(), pa.string(), pa.timestamp("us"), pa.int32()]
    ours_avro = [[i, 2000 + i, f"a{i}", None, 2] for i in range(1, 60, 7)]
    ours_write(wh, t, names, arrow, ours_avro)
    put(ours_avro)
    check(java_read(java, wh, t), list(model.values()), types, "Java reads after our Avro append")
    ours = [[i, 1000 + i, f"r{i}", None, 1] for i in range(0, 60, 5)]
    _alter(java, wh, t, {"op": "set_option", "key": "file.format", "value": "parquet"})
    ours_write(wh, t, names, arrow, ours)
    put(ours)
    check(ours_read(wh, t), list(model.values()), types, "paimon_rs reads after its own Parquet append")
    check(java_read(java, wh, t), list(model.values()), types, "Java reads after our Parquet append")
    java.call("compact", warehouse=str(wh), table=f"{DB}.{t}", full=True)
    check(ours_read(wh, t), list(model.values()), types, "paimon_rs reads after Java's compaction")


# what paimon_rs writes in each format: the Arrow-nameable types the format holds as Java writes it
_OURS_FORMAT_TYPES = {
    "avro": [i for i in _FORMAT_TYPES["avro"] if jv.TYPE_BY_ID[i].arrow is not None
             and "timestamp_9" not in i],
    # DECIMAL and nested columns too (paimon_rs's own ORC writer writes such tables)
    "orc": [i for i in _FORMAT_TYPES["orc"] if jv.TYPE_BY_ID[i].arrow is not None],
}


@pytest.mark.parametrize("fmt", sorted(_OURS_FORMAT_TYPES))
def test_every_type_we_write_orc_avro_java_reads_and_continues(java, tmp_path, request, fmt):
    """A primary-key table of every type the format holds: we write, update and compact (files of
    several levels); Java reads it (whole and projected), writes on top and compacts; we read
    what Java reads."""
    t, rng = _tname(request), random.Random("ours-fmt" + fmt)
    ids = _OURS_FORMAT_TYPES[fmt]
    fields = [("id", "INT", pa.int32())] + [(f"c_{i}", jv.TYPE_BY_ID[i].ptype, jv.TYPE_BY_ID[i].arrow)
                                            for i in ids]
    names, arrow, ptypes = [f[0] for f in fields], [f[2] for f in fields], [f[1] for f in fields]
    ours_create(tmp_path, t, fields, ["id"], [], {"bucket": "2", "file.format": fmt})
    model: dict = {}

    def rows_for(lo: int, hi: int) -> list:
        return [[i] + [_wide_value(f[0][2:], rng) for f in fields[1:]] for i in range(lo, hi)]

    for n, (lo, hi) in enumerate([(0, 40), (20, 60), (50, 70)]):
        rows = rows_for(lo, hi)
        ours_write(tmp_path, t, names, arrow, rows)
        model.update({r[0]: r for r in rows})
        if n == 1:
            CatalogFactory.create({"warehouse": str(tmp_path)}).get_table(f"{DB}.{t}").compact(full=True)
    files = java.call("files", warehouse=str(tmp_path), table=f"{DB}.{t}")
    assert {f["file"].rsplit(".", 1)[1] for f in files} == {fmt}
    assert {f["level"] for f in files} > {0}
    check(ours_read(tmp_path, t), list(model.values()), ptypes, f"paimon_rs reads its {fmt} table")
    check(java_read(java, tmp_path, t), list(model.values()), ptypes, f"Java reads paimon_rs's {fmt} table")
    proj = names[::-3]
    idx = [names.index(n) for n in proj]
    check(java_read(java, tmp_path, t, projection=proj), [[r[i] for i in idx] for r in model.values()],
          [ptypes[i] for i in idx], f"Java reads paimon_rs's {fmt} table, projected")
    rows = rows_for(60, 90)
    java_write(java, tmp_path, t, rows)
    model.update({r[0]: r for r in rows})
    java.call("compact", warehouse=str(tmp_path), table=f"{DB}.{t}", full=True)
    check(ours_read(tmp_path, t), list(model.values()), ptypes, f"paimon_rs reads after Java continued ({fmt})")
    check(java_read(java, tmp_path, t), list(model.values()), ptypes, f"Java reads after it continued ({fmt})")


def test_java_reads_our_orc_char_varchar_decimal_nested(java, tmp_path, request):
    """An ORC primary-key table with CHAR(n), VARCHAR(n), DECIMAL and nested columns created by
    Java: paimon_rs writes and compacts it (its own ORC writer: ORC char / varchar / decimal /
    list / map / struct types), Java reads it, writes on top and compacts; we read what Java reads."""
    t, rng = _tname(request), random.Random("orc-char")
    ids = ["char_5", "varchar_20", "decimal_9_2", "decimal_38_10", "decimal_25_0", "array_decimal_38",
           "map_int_array_date", "row", "array_row", "row_nested", "timestamp_9", "time_0"]
    fields = [("id", "INT", pa.int32())] + [(f"c_{i}", jv.TYPE_BY_ID[i].ptype, jv.TYPE_BY_ID[i].arrow or pa.string())
                                            for i in ids]
    names, arrow, ptypes = [f[0] for f in fields], [f[2] for f in fields], [f[1] for f in fields]
    java_create(java, tmp_path, t, fields, ["id"], [], {"bucket": "2", "file.format": "orc"})
    model: dict = {}

    def rows_for(lo: int, hi: int) -> list:
        return [[i] + [_wide_value(f[0][2:], rng) for f in fields[1:]] for i in range(lo, hi)]

    for n, (lo, hi) in enumerate([(0, 40), (20, 60)]):
        rows = rows_for(lo, hi)
        ours_write(tmp_path, t, names, arrow, rows)
        model.update({r[0]: r for r in rows})
        if n == 1:
            CatalogFactory.create({"warehouse": str(tmp_path)}).get_table(f"{DB}.{t}").compact(full=True)
    files = java.call("files", warehouse=str(tmp_path), table=f"{DB}.{t}")
    assert {f["file"].rsplit(".", 1)[1] for f in files} == {"orc"}
    check(ours_read(tmp_path, t), list(model.values()), ptypes, "paimon_rs reads its ORC table")
    check(java_read(java, tmp_path, t), list(model.values()), ptypes, "Java reads paimon_rs's ORC table")
    rows = rows_for(50, 80)
    java_write(java, tmp_path, t, rows)
    model.update({r[0]: r for r in rows})
    java.call("compact", warehouse=str(tmp_path), table=f"{DB}.{t}", full=True)
    check(ours_read(tmp_path, t), list(model.values()), ptypes, "paimon_rs reads after Java continued (ORC)")


def test_java_padded_orc_char_values_read_trimmed(java, tmp_path, request):
    """Java's ORC writer pads CHAR(n) values to n and its reader trims them (Hive's
    CharTreeReader); its manifests hold the unpadded keys and statistics. paimon_rs read them
    padded: a Java ORC table with a CHAR key written twice failed its key-range check
    (CorruptFileError) and `c = 'x'` found nothing (review36c). Now: read as Java reads, filtered,
    continued by paimon_rs, and Java reads the result."""
    t = _tname(request)
    fields = [("k", "CHAR(4) NOT NULL", pa.string()), ("v", "INT", pa.int32()), ("c", "CHAR(3)", pa.string())]
    names, arrow, ptypes = [f[0] for f in fields], [f[2] for f in fields], [f[1] for f in fields]
    java_create(java, tmp_path, t, fields, ["k"], [], {"bucket": "1", "file.format": "orc"})
    java_write(java, tmp_path, t, [["ab", 1, "x"], ["abcd", 2, "yyy"]])
    java_write(java, tmp_path, t, [["ab", 3, "z"]])
    want = [["ab", 3, "z"], ["abcd", 2, "yyy"]]
    check(ours_read(tmp_path, t), want, ptypes, "paimon_rs reads Java's padded CHAR values")
    got = ours_read_filtered(tmp_path, t, lambda pb: pb.or_predicates([pb.equal("c", "yyy"), pb.equal("k", "ab")]))
    check(got, want, ptypes, "paimon_rs filters Java's CHAR values")
    ours_write(tmp_path, t, names, arrow, [["ab", 4, "w"], ["x", 5, None]])
    want = [["ab", 4, "w"], ["abcd", 2, "yyy"], ["x", 5, None]]
    check(ours_read(tmp_path, t), want, ptypes, "paimon_rs reads after writing on Java's CHAR table")
    check(java_read(java, tmp_path, t), want, ptypes, "Java reads after paimon_rs wrote")


@pytest.mark.parametrize("fmt", ["orc", "avro"])
def test_truncated_orc_avro_file_is_corrupt(java, tmp_path, request, fmt):
    """A Java ORC/Avro data file cut short (a lost tail): CorruptFileError naming the file, never
    fewer rows. Java's files carry no block checksums of ours: intact ones read without error."""
    kind, t = KINDS["pk_orc"], _tname(request)
    options = {**kind.options, "file.format": fmt}
    java_create(java, tmp_path, t, kind.fields, kind.pk, kind.part, options)
    rows = [[i, i, f"s{i}", "1.5000"] for i in range(200)]
    java_write(java, tmp_path, t, rows)
    check(ours_read(tmp_path, t), rows, kind.ptypes, f"paimon_rs reads Java's intact {fmt} files")
    victim = max((tmp_path / f"{DB}.db" / t).glob(f"bucket-*/data-*.{fmt}"), key=lambda p: p.stat().st_size)
    victim.write_bytes(victim.read_bytes()[:-7])
    with pytest.raises(CorruptFileError, match=victim.name):
        ours_read(tmp_path, t)


# --------------------------------------------------------------------------- key types: same bucket

KEY_TYPES = ["tinyint", "smallint", "int", "bigint", "decimal_9_2", "decimal_38_10", "string", "char_5",
             "binary_4", "bytes", "date", "timestamp_3", "timestamp_6", "timestamp_9", "timestamp_ltz_6",
             "boolean", "double"]
KEY_XFAIL: dict = {}  # type id -> (reason of a known failure, the exception it raises); none today


def _key_params() -> list:
    return [pytest.param(k, marks=[_xfail(*KEY_XFAIL[k])] if k in KEY_XFAIL else [], id=k) for k in KEY_TYPES]


@pytest.mark.parametrize("type_id", _key_params())
def test_key_type_mixed(java, tmp_path, request, type_id):
    """Java writes keys of the type, we upsert some of them: every key must stay in one bucket."""
    tc, t, rng = jv.TYPE_BY_ID[type_id], _tname(request), random.Random(type_id + "key")
    fields = [("k", tc.ptype, _arrow_for(tc.ptype)), ("v", "INT", pa.int32())]
    java_create(java, tmp_path, t, fields, ["k"], [], {"bucket": "4"})
    keys, seen = [], set()
    for _ in range(200):
        k = tc.gen(rng)
        nk = jv.norm(k, tc.ptype)
        if nk not in seen and nk != "NaN":
            seen.add(nk)
            keys.append(k)
    keys = keys[:40]
    java_write(java, tmp_path, t, [[k, 1] for k in keys])
    ours_write(tmp_path, t, ["k", "v"], [fields[0][2], pa.int32()], [[k, 2] for k in keys[::2]])
    expected = [[k, 2 if i % 2 == 0 else 1] for i, k in enumerate(keys)]
    check(java_read(java, tmp_path, t), expected, [tc.ptype, "INT"], "Java reads after our upsert")
    check(ours_read(tmp_path, t), expected, [tc.ptype, "INT"], "paimon_rs reads after our upsert")


PART_TYPES = ["tinyint", "int", "bigint", "decimal_9_2", "string", "char_5", "date", "timestamp_3", "boolean"]


@pytest.mark.parametrize("type_id", PART_TYPES)
def test_partition_type_mixed(java, tmp_path, request, type_id):
    """Java writes partitions of the type, we upsert into them: the same partition directory and
    BinaryRow (one partition, no duplicate keys) in both engines."""
    tc, t, rng = jv.TYPE_BY_ID[type_id], _tname(request), random.Random(type_id + "part")
    fields = [("p", tc.ptype, _arrow_for(tc.ptype)), ("k", "INT", pa.int32()), ("v", "INT", pa.int32())]
    java_create(java, tmp_path, t, fields, ["p", "k"], ["p"], {"bucket": "2"})
    parts: list = []
    while len(parts) < 2 or (type_id != "boolean" and len(parts) < 3):
        p = tc.gen(rng)
        if p not in parts:
            parts.append(p)
    java_write(java, tmp_path, t, [[p, k, 1] for p in parts for k in range(10)])
    ours_write(tmp_path, t, ["p", "k", "v"], [fields[0][2], pa.int32(), pa.int32()],
               [[p, k, 2] for p in parts for k in range(0, 10, 2)])
    expected = [[p, k, 2 if k % 2 == 0 else 1] for p in parts for k in range(10)]
    ptypes = [tc.ptype, "INT", "INT"]
    check(java_read(java, tmp_path, t), expected, ptypes, "Java reads after our upsert")
    check(ours_read(tmp_path, t), expected, ptypes, "paimon_rs reads after our upsert")
    dirs = [d.name for d in (tmp_path / f"{DB}.db" / t).iterdir() if d.name.startswith("p=")]
    assert len(dirs) == len(parts), dirs


# --------------------------------------------------------------------------- Java table operations


def _simple_history(java, wh, t, kind: Kind, commits: int, seed: str) -> list:
    """Java writes ``commits`` commits; returns the model after each."""
    rng, model, models = random.Random(seed), Model(kind), []
    java_create(java, wh, t, kind.fields, kind.pk, kind.part, kind.options)
    for _ in range(commits):
        rows, kinds = commit_rows(kind, rng, model)
        java_write(java, wh, t, rows, kinds)
        model.apply(rows, kinds)
        models.append(model.copy())
    return models


def test_overwrite_both_ways(java, tmp_path, request):
    """We overwrite a partition of Java's table, Java overwrites one of ours; both read the result."""
    kind, t = KINDS["pk_dedup_part"], _tname(request)
    model = _simple_history(java, tmp_path, t, kind, 2, "overwrite")[-1]
    fresh = [[DT[0], i, i, "ours", "1.5000", "+I"] for i in range(5)]
    ours_write(tmp_path, t, kind.names, kind.arrow_types, fresh, overwrite={"dt": DT[0]})
    expected = [r for r in model.expected() if r[0] != DT[0]] + fresh
    check(java_read(java, tmp_path, t), expected, kind.ptypes, "Java reads after our overwrite")
    theirs = [[DT[1], i, -i, "java", None, "+I"] for i in range(3)]
    java.call("write", warehouse=str(tmp_path), table=f"{DB}.{t}",
              commits=[{"rows": theirs, "overwrite": {"dt": DT[1]}}])
    check(ours_read(tmp_path, t), fresh + theirs, kind.ptypes, "paimon_rs reads after Java's overwrite")


def test_java_reads_our_spilled_rolled_files_and_merged_manifests(java, tmp_path, request):
    """A small write buffer (sorted runs spilled to disk), small target files (rolled files, several
    per bucket) and manifest merging on every commit: Java reads it, compacts it, we read it."""
    kind, t, rng = KINDS["pk_dedup"], _tname(request), random.Random("spill")
    options = {**kind.options, "bucket": "1", "manifest.merge-min-count": "2", "target-file-size": "64 kb"}
    ours_create(tmp_path, t, kind.fields, kind.pk, kind.part, options)
    model = Model(kind)
    for _ in range(3):
        rows = [[rng.randrange(12000), rng.randint(0, 10**9), rng.randbytes(40).hex(), None, "+I"]
                for _ in range(10000)]
        # write-only: our writers would compact the rolled files away
        ours_write(tmp_path, t, kind.names, kind.arrow_types, rows,
                   options={"write-buffer-size": "1 mb", "write-only": "true"})
        model.apply(rows, ["+I"] * len(rows))
    files = java.call("files", warehouse=str(tmp_path), table=f"{DB}.{t}")
    assert len(files) > 3  # rolled: more files than commits
    check(java_read(java, tmp_path, t), model.expected(), kind.ptypes, "Java reads our spilled, rolled files")
    java.call("compact", warehouse=str(tmp_path), table=f"{DB}.{t}", full=True)
    check(ours_read(tmp_path, t), model.expected(), kind.ptypes, "paimon_rs reads after Java's compaction")


def test_java_tag_and_time_travel_of_our_snapshots(java, tmp_path, request):
    kind, t, rng = KINDS["pk_dedup_part"], _tname(request), random.Random("tag")
    ours_create(tmp_path, t, kind.fields, kind.pk, kind.part, kind.options)
    model, models = Model(kind), []
    for _ in range(3):
        rows, kinds = commit_rows(kind, rng, model)
        ours_write(tmp_path, t, kind.names, kind.arrow_types, rows)
        model.apply(rows, kinds)
        models.append(model.copy())
    java.call("create_tag", warehouse=str(tmp_path), table=f"{DB}.{t}", name="t2", snapshot_id=2)
    check(java_read(java, tmp_path, t, tag="t2"), models[1].expected(), kind.ptypes, "Java reads tag t2")
    # the tag file must not disturb our reads and writes
    rows, kinds = commit_rows(kind, rng, model)
    ours_write(tmp_path, t, kind.names, kind.arrow_types, rows)
    model.apply(rows, kinds)
    check(ours_read(tmp_path, t), model.expected(), kind.ptypes, "paimon_rs reads after Java's tag")
    check(java_read(java, tmp_path, t, tag="t2"), models[1].expected(), kind.ptypes, "Java reads tag t2 again")


def test_java_expires_snapshots_then_we_read_and_write(java, tmp_path, request):
    kind, t = KINDS["pk_dedup"], _tname(request)
    models = _simple_history(java, tmp_path, t, kind, 5, "expire")
    expired = java.call("expire_snapshots", warehouse=str(tmp_path), table=f"{DB}.{t}", retain_max=2, retain_min=2)
    snapshots = sorted((tmp_path / f"{DB}.db" / t / "snapshot").glob("snapshot-*"))
    assert expired >= 3 and len(snapshots) == 2 and not (snapshots[0].parent / "snapshot-1").exists()
    model = models[-1]
    check(ours_read(tmp_path, t), model.expected(), kind.ptypes, "paimon_rs reads after expiry")
    rows, kinds = commit_rows(kind, random.Random("expire-ours"), model)
    ours_write(tmp_path, t, kind.names, kind.arrow_types, rows)
    model.apply(rows, kinds)
    check(java_read(java, tmp_path, t), model.expected(), kind.ptypes, "Java reads our commit after expiry")


def _alter(java, wh, t, *changes: dict) -> None:
    java.call("alter", warehouse=str(wh), table=f"{DB}.{t}", changes=list(changes))


def _evolution(java, wh, t, changes: list, fields_after: list, old_map: Callable[[list], list]):
    """Java writes, alters, writes again; returns (expected rows, Paimon types after)."""
    java_create(java, wh, t, [("id", "INT"), ("a", "INT"), ("b", "STRING")], ["id"], [], {"bucket": "2"})
    old = [[i, i * 10, f"b{i}"] for i in range(20)]
    java_write(java, wh, t, old)
    _alter(java, wh, t, *changes)
    new = [[i] + [f"n{i}" if jv.root(ty) in ("STRING", "VARCHAR") else i * 100 for _n, ty in fields_after[1:]]
           for i in range(10, 30)]
    java_write(java, wh, t, new)
    expected = {r[0]: old_map(r) for r in old}
    expected.update({r[0]: r for r in new})
    return list(expected.values()), [ty for _n, ty in fields_after]


def test_schema_evolution_add_column_and_widen(java, tmp_path, request):
    t = _tname(request)
    rows, types = _evolution(
        java, tmp_path, t,
        [{"op": "add_column", "name": "c", "type": "BIGINT"}, {"op": "update_column_type", "name": "a",
                                                                 "type": "BIGINT"}],
        [("id", "INT"), ("a", "BIGINT"), ("b", "STRING"), ("c", "BIGINT")],
        lambda r: [r[0], r[1], r[2], None])
    check(java_read(java, tmp_path, t), rows, types, "Java reads its evolved table")
    check(ours_read(tmp_path, t), rows, types, "paimon_rs reads Java's evolved table")


def test_schema_evolution_rename_column(java, tmp_path, request):
    t = _tname(request)
    rows, types = _evolution(
        java, tmp_path, t, [{"op": "rename_column", "name": "b", "new_name": "b2"}],
        [("id", "INT"), ("a", "INT"), ("b2", "STRING")], lambda r: r)
    check(java_read(java, tmp_path, t), rows, types, "Java reads its evolved table")
    check(ours_read(tmp_path, t), rows, types, "paimon_rs reads Java's evolved table")


def test_schema_evolution_drop_and_readd_column(java, tmp_path, request):
    t = _tname(request)
    rows, types = _evolution(
        java, tmp_path, t, [{"op": "drop_column", "name": "a"}, {"op": "add_column", "name": "a", "type": "INT"}],
        [("id", "INT"), ("b", "STRING"), ("a", "INT")], lambda r: [r[0], r[2], None])
    check(java_read(java, tmp_path, t), rows, types, "Java reads its evolved table")
    check(ours_read(tmp_path, t), rows, types, "paimon_rs reads Java's evolved table")


def test_schema_evolution_unreadable_file_schema_is_corrupt(java, tmp_path, request):
    """A data file's schema (schema/schema-<id>) that cannot be read: CorruptFileError naming it."""
    t = _tname(request)
    _evolution(java, tmp_path, t, [{"op": "rename_column", "name": "b", "new_name": "b2"}],
               [("id", "INT"), ("a", "INT"), ("b2", "STRING")], lambda r: r)
    (tmp_path / f"{DB}.db" / t / "schema" / "schema-0").write_text("{not json")
    with pytest.raises(CorruptFileError, match="schema-0"):
        ours_read(tmp_path, t)


def ours_read_filtered(wh, table: str, build: Callable[[Any], Any]) -> list:
    t = CatalogFactory.create({"warehouse": str(wh)}).get_table(f"{DB}.{table}")
    rb = t.new_read_builder()
    rb = rb.with_filter(build(rb.new_predicate_builder()))
    return jv.from_arrow(rb.new_read().to_arrow(rb.new_scan().plan().splits()))


@pytest.mark.parametrize("pk", [True, False], ids=["pk", "append"])
def test_schema_evolution_filter_on_renamed_and_added_columns(java, tmp_path, request, pk):
    """A filter names the current columns: in the files written before the rename it must test the
    old column (by field id), and a column the old files lack is NULL there."""
    t = _tname(request)
    java_create(java, tmp_path, t, [("id", "INT"), ("a", "INT"), ("b", "STRING")], ["id"] if pk else [], [],
                {"bucket": "2"} if pk else {"bucket": "-1"})
    old = [[i, i * 10, f"b{i}"] for i in range(20)]
    java_write(java, tmp_path, t, old)
    _alter(java, tmp_path, t, {"op": "rename_column", "name": "b", "new_name": "b2"},
           {"op": "add_column", "name": "c", "type": "INT"})
    new = [[i, i * 10, f"n{i}", i] for i in range(20, 30)]
    java_write(java, tmp_path, t, new)
    rows = [r + [None] for r in old] + new
    types = ["INT", "INT", "STRING", "INT"]
    cases = [
        ({"op": "equal", "field": "b2", "value": "b3"}, lambda p: p.equal("b2", "b3"), lambda r: r[2] == "b3"),
        ({"op": "in", "field": "b2", "values": ["b4", "n25"]}, lambda p: p.is_in("b2", ["b4", "n25"]),
         lambda r: r[2] in ("b4", "n25")),
        ({"op": "is_null", "field": "c"}, lambda p: p.is_null("c"), lambda r: r[3] is None),
        ({"op": "greater_than", "field": "c", "value": 25}, lambda p: p.greater_than("c", 25),
         lambda r: r[3] is not None and r[3] > 25),
    ]
    for jflt, ours, keep in cases:
        want = [r for r in rows if keep(r)]
        assert want
        check(java_read(java, tmp_path, t, filter=jflt), want, types, f"Java reads its table with {jflt}")
        check(ours_read_filtered(tmp_path, t, ours), want, types, f"paimon_rs reads Java's table with {jflt}")
    if not pk:
        # value statistics of the old files, renamed by field id, prune them: c is NULL there
        tb = CatalogFactory.create({"warehouse": str(tmp_path)}).get_table(f"{DB}.{t}")
        rb = tb.new_read_builder()
        rb = rb.with_filter(rb.new_predicate_builder().greater_than("c", 25))
        assert sum(s.row_count for s in rb.new_scan().plan().splits()) == len(new)
        rb = tb.new_read_builder()
        rb = rb.with_filter(rb.new_predicate_builder().equal("b2", "b3"))
        assert sum(s.row_count for s in rb.new_scan().plan().splits()) == len(old)


def test_schema_evolution_partitioned_pk_several_versions(java, tmp_path, request):
    """Four schema versions across the files of a partitioned primary-key table (add, rename + widen,
    drop + re-add under the same name), a Java compaction of one partition in between; then we write
    with the latest schema (our files carry its id) and both engines read everything."""
    t, wh = _tname(request), tmp_path
    java_create(java, wh, t, [("dt", "STRING"), ("id", "INT"), ("a", "INT"), ("b", "STRING")], ["dt", "id"],
                ["dt"], {"bucket": "2"})
    model: dict = {}

    def put(rows: list) -> None:
        for r in rows:
            model[(r[0], r[1])] = r

    # columns of the model: dt, id, a2 (was a, BIGINT since v2), b (re-added in v3), c (added in v1)
    v0 = [[DT[i % 2], i, i * 10, f"b{i}"] for i in range(30)]
    java_write(java, wh, t, v0)
    put([[r[0], r[1], r[2], None, None] for r in v0])          # b dropped later: never visible
    _alter(java, wh, t, {"op": "add_column", "name": "c", "type": "BIGINT"})
    v1 = [[DT[i % 2], i, i * 11, f"x{i}", i * 1000] for i in range(20, 40)]
    java_write(java, wh, t, v1)
    put([[r[0], r[1], r[2], None, r[4]] for r in v1])
    java.call("compact", warehouse=str(wh), table=f"{DB}.{t}", partition=[DT[0]], bucket=0, full=True)
    _alter(java, wh, t, {"op": "rename_column", "name": "a", "new_name": "a2"},
           {"op": "update_column_type", "name": "a2", "type": "BIGINT"})
    v2 = [[DT[i % 2], i, 2**40 + i, f"y{i}", None] for i in range(35, 45)]
    java_write(java, wh, t, v2)
    put([[r[0], r[1], r[2], None, r[4]] for r in v2])
    _alter(java, wh, t, {"op": "drop_column", "name": "b"}, {"op": "add_column", "name": "b", "type": "INT"})
    v3 = [[DT[i % 2], i, -i, i * 1000 + 1, 7] for i in range(40, 50)]
    java_write(java, wh, t, v3)
    put([[r[0], r[1], r[2], r[4], r[3]] for r in v3])
    names = ["dt", "id", "a2", "c", "b"]
    types = ["STRING", "INT", "BIGINT", "BIGINT", "INT"]
    schema_ids = {f["schema_id"] for f in java.call("files", warehouse=str(wh), table=f"{DB}.{t}")}
    assert len(schema_ids) >= 3, schema_ids  # files of several schema versions are live

    def expected() -> list:
        return [[r[0], r[1], r[2], r[4], r[3]] for r in model.values()]

    check(java_read(java, wh, t), expected(), types, "Java reads its evolved table")
    check(ours_read(wh, t), expected(), types, "paimon_rs reads Java's evolved table")
    proj = ["b", "a2", "id"]
    idx = [names.index(n) for n in proj]
    check(ours_read(wh, t, projection=proj), [[r[i] for i in idx] for r in expected()],
          [types[i] for i in idx], "paimon_rs reads Java's evolved table, projected")
    ours = [[DT[i % 2], i, 3 * i, -1, i] for i in range(0, 60, 3)]      # in the model's column order
    ours_write(wh, t, names, [pa.string(), pa.int32(), pa.int64(), pa.int64(), pa.int32()],
               [[r[0], r[1], r[2], r[4], r[3]] for r in ours])
    put([[r[0], r[1], r[2], r[3], r[4]] for r in ours])
    check(ours_read(wh, t), expected(), types, "paimon_rs reads after writing with the latest schema")
    check(java_read(java, wh, t), expected(), types, "Java reads our files of the latest schema")


def test_schema_evolution_partial_update_merges_files_of_several_schemas(java, tmp_path, request):
    """partial-update: a key's records in files of different schemas merge field by field, by id."""
    t, wh = _tname(request), tmp_path
    java_create(java, wh, t, [("id", "INT"), ("a", "INT"), ("b", "STRING"), ("x", "STRING")], ["id"], [],
                {"bucket": "1", "merge-engine": "partial-update"})
    java_write(java, wh, t, [[i, i, None, f"x{i}"] for i in range(10)])
    _alter(java, wh, t, {"op": "rename_column", "name": "b", "new_name": "b2"},
           {"op": "update_column_type", "name": "a", "type": "BIGINT"},
           {"op": "drop_column", "name": "x"}, {"op": "add_column", "name": "x", "type": "STRING"})
    java_write(java, wh, t, [[i, None, f"b{i}", None] for i in range(0, 10, 2)])
    java_write(java, wh, t, [[i, 2**33 + i, None, f"new{i}"] for i in range(0, 10, 3)])
    want = []
    for i in range(10):
        a = 2**33 + i if i % 3 == 0 else i
        want.append([i, a, f"b{i}" if i % 2 == 0 else None, f"new{i}" if i % 3 == 0 else None])
    types = ["INT", "BIGINT", "STRING", "STRING"]
    check(java_read(java, wh, t), want, types, "Java merges its evolved partial-update table")
    check(ours_read(wh, t), want, types, "paimon_rs merges Java's evolved partial-update table")


def test_schema_evolution_aggregation_merges_widened_columns(java, tmp_path, request):
    """aggregation: sums over files written before (INT, FLOAT) and after (BIGINT, DOUBLE) a widening,
    plus a column added later (NULL in the old files)."""
    t, wh = _tname(request), tmp_path
    java_create(java, wh, t, [("id", "INT"), ("n", "INT"), ("f", "FLOAT")], ["id"], [],
                {"bucket": "2", "merge-engine": "aggregation", "fields.n.aggregate-function": "sum",
                 "fields.f.aggregate-function": "max"})
    java_write(java, wh, t, [[i, 2**29, float(i) + 0.5] for i in range(8)])
    java_write(java, wh, t, [[i, 2**29, float(i)] for i in range(8)])
    _alter(java, wh, t, {"op": "update_column_type", "name": "n", "type": "BIGINT"},
           {"op": "update_column_type", "name": "f", "type": "DOUBLE"},
           {"op": "add_column", "name": "m", "type": "INT"},
           {"op": "set_option", "key": "fields.m.aggregate-function", "value": "sum"})
    java_write(java, wh, t, [[i, 2**31, float(i) - 1.0, i] for i in range(0, 8, 2)])
    want = [[i, 2**30 + (2**31 if i % 2 == 0 else 0), float(i) + 0.5, i if i % 2 == 0 else None]
            for i in range(8)]
    types = ["INT", "BIGINT", "DOUBLE", "INT"]
    check(java_read(java, wh, t), want, types, "Java aggregates its evolved table")
    check(ours_read(wh, t), want, types, "paimon_rs aggregates Java's evolved table")


# --------------------------------------------------------------------------- Java's compaction picker


def test_universal_compaction_picker_is_exposed(java):
    """The driver answers with Java's UniversalCompaction decisions (later compaction work compares
    its own picker with these); a few decisions every Paimon version makes."""
    def pick(runs, trigger=5, amp=200, ratio=1, levels=6):
        return java.call("universal_pick", runs=runs, num_levels=levels, max_size_amp=amp, size_ratio=ratio,
                         num_run_compaction_trigger=trigger)
    assert pick([[0, 10]] * 4) is None                           # below the trigger, no amplification
    assert pick([[0, 10]] * 5 + [[5, 100]]) == {"output_level": 4, "runs": [0, 1, 2, 3, 4]}
    # size amplification: the younger runs outweigh the oldest by more than 200% -> everything
    assert pick([[0, 100]] * 4 + [[5, 10]]) == {"output_level": 5, "runs": [0, 1, 2, 3, 4]}
    assert pick([[0, 100]] * 3 + [[5, 10]]) is None             # fewer runs than the trigger: nothing
    # size ratio: the young runs are not larger than the next one -> picked together
    unit = pick([[0, 1], [0, 1], [0, 1], [0, 1], [0, 1], [3, 1000], [5, 10000]])
    assert unit is not None and unit["runs"][:5] == [0, 1, 2, 3, 4]


# --------------------------------------------------------------------------- Paimon 0.9.0


# The main table kinds in both directions against 0.9.0: primary key with every merge engine,
# partitioned, Java's automatic compaction, deletion vectors, dynamic and cross-partition
# buckets, append (unaware, partitioned, bucketed). The ORC / Avro / changelog kinds are 1.0's.
JAVA09_KINDS = ["pk_dedup", "pk_dedup_part", "pk_partial", "pk_agg", "pk_first_row", "pk_auto_compact",
                "pk_deletion_vectors", "pk_dv_part", "pk_dynamic_bucket", "pk_cross_partition", "append",
                "append_part", "append_bucketed", "pk_orc", "pk_avro_part"]
JAVA09_OURS_KINDS = [k for k in JAVA09_KINDS if k in OURS_KINDS]


@pytest.mark.java09
@pytest.mark.parametrize("kind_name", JAVA09_KINDS)
def test_java09_writes_we_read(java09, tmp_path, request, kind_name):
    test_java_writes_we_read(java09, tmp_path, request, kind_name)


@pytest.mark.java09
@pytest.mark.parametrize("kind_name", JAVA09_OURS_KINDS)
def test_java09_reads_what_we_wrote(java09, tmp_path, request, kind_name):
    test_we_write_java_reads(java09, tmp_path, request, kind_name)


@pytest.mark.java09
@pytest.mark.parametrize("kind_name", JAVA09_KINDS)
def test_java09_mixed_history(java09, tmp_path, request, kind_name):
    test_mixed_history(java09, tmp_path, request, kind_name)


@pytest.mark.java09
@pytest.mark.parametrize("kind_name", ["pk_deletion_vectors", "pk_dv_part"])
def test_java09_deletion_vectors_compacted_we_read(java09, tmp_path, request, kind_name):
    test_deletion_vectors_java_writes_compacts_we_read(java09, tmp_path, request, kind_name)


@pytest.mark.java09
@pytest.mark.parametrize("type_id", _type_params("java_to_ours", [jv.TYPE_BY_ID[i] for i in (
    "decimal_38_10", "timestamp_9", "timestamp_ltz_3", "time_3", "row_nested", "map_int_array_date")]))
def test_java09_type_writes_we_read(java09, tmp_path, request, type_id):
    test_type_java_writes_we_read(java09, tmp_path, request, type_id)


@pytest.mark.java09
def test_each_jvm_runs_its_own_paimon(java, java09):
    assert java.call("ping")["paimon_jar"].endswith("/paimon-python-java-bridge.jar")
    assert java09.call("ping")["paimon_jar"].endswith("/paimon-python-java-bridge-0.9.0.jar")


def test_java_error_is_reported(java, tmp_path):
    with pytest.raises(JavaError, match="TableNotExist|does not exist"):
        java.call("read", warehouse=str(tmp_path), table=f"{DB}.missing")


def test_row_ids_of_java_10_files_in_a_row_tracking_table_are_refused(java, tmp_path):
    """Java 1.0 predates row tracking: appending to a row-tracking table paimon_rs created, it
    commits a file without first_row_id. Its rows still read; asking for their _ROW_ID (NOT
    NULL, as Java's SpecialFields) is refused naming the file, never a column of nulls."""
    wh = str(tmp_path)
    cat = CatalogFactory.create({"warehouse": wh})
    cat.create_database(DB, True)
    sch = pa.schema([("id", pa.int32()), ("s", pa.string())])
    cat.create_table(f"{DB}.rt", Schema.from_pyarrow_schema(sch, options={"row-tracking.enabled": "true"}),
                     False)
    t = cat.get_table(f"{DB}.rt")
    wb = t.new_batch_write_builder()
    w = wb.new_write()
    w.write_arrow(pa.table({"id": [1, 2], "s": ["a", "b"]}, schema=sch))
    wb.new_commit().commit(w.prepare_commit())
    java.call("write", warehouse=wh, table=f"{DB}.rt", commits=[{"rows": [[3, "java"]], "kinds": None}])

    def read(proj):
        rb = cat.get_table(f"{DB}.rt").new_read_builder().with_projection(proj)
        return rb.new_read().to_arrow(rb.new_scan().plan().splits())

    assert sorted(read(["id", "s"]).to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "s": "a"}, {"id": 2, "s": "b"}, {"id": 3, "s": "java"}]
    with pytest.raises(UnsupportedError, match=r"data file 'data-.*' of a row-tracking table has no "
                                               r"first_row_id: its _ROW_ID cannot be read"):
        read(["_ROW_ID", "id"])
