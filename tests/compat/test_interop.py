"""paimon_rs <-> pypaimon 2.1.0 interoperability, both directions.

For every case of interop_cases.py (pk tables with updates / -U / +U / -D and
overwrites, append tables; every Paimon type in the roles pypaimon supports):

* ``<case>_pp``  written by pypaimon (all commits): validates the reference
  model and is the reference for schema JSON, read types and file layout.
* ``<case>_a``   written by us (all commits): (a) pypaimon must read exactly the
  model's rows; (c) each key's partition directory and bucket must be the ones
  pypaimon picked in ``_pp`` and what pypaimon's FixedBucketRowKeyExtractor says.
* ``<case>_b``   pypaimon writes ``commits[:split]``, we read it (b), append the
  remaining commits, and both sides must read the model's rows.

pypaimon runs in its own venv (pypaimon_env.py) in two driver launches: one
before our writes, one after. Rows are compared order-insensitively by key;
column values and Arrow types (incl. nullability) are compared in full.
paimon_rs is a hard requirement: this module fails to import without it.
"""

from __future__ import annotations

import glob
import json
import os
import re
import traceback
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paimon_rs import CatalogFactory, Schema

import interop_cases as ic
from pypaimon_env import pypaimon_batch, read_ipc, write_ipc

pytestmark = pytest.mark.compat

DB = "db"
MAX_REPORT = 25
# pypaimon's Rust read path (pypaimon-rust 0.4.0): dynamic options on table.copy(). It falls back
# to the Python reader (with a warning) for routes it does not support.
NATIVE_READ = {"read.native.enabled": "true", "scan.native-plan.enabled": "true"}
# pypaimon-rust 0.4.0: "Float(FloatType ..) type is not supported as partition key" (same for Double)
NATIVE_UNSUPPORTED = {"pk_part_float", "pk_part_double"}


# --------------------------------------------------------------------------
# our side (paimon_rs API, mirroring pypaimon)


def _ours_catalog(wh):
    return CatalogFactory.create({"warehouse": str(wh)})


def ours_create(wh, name, case: ic.Case):
    cat = _ours_catalog(wh)
    cat.create_database(DB, True)
    schema = Schema.from_pyarrow_schema(case.schema, partition_keys=case.partition_keys,
                                        primary_keys=case.primary_keys, options=dict(case.options))
    cat.create_table(f"{DB}.{name}", schema, False)


def ours_write(wh, name, commit: ic.Commit):
    table = _ours_catalog(wh).get_table(f"{DB}.{name}")
    wb = table.new_batch_write_builder()
    if commit.overwrite is not None:
        wb = wb.overwrite(dict(commit.overwrite))
    w, c = wb.new_write(), wb.new_commit()
    try:
        if commit.mode == "arrow":
            w.write_arrow(commit.data)
        elif commit.mode == "batch":
            for batch in commit.data.to_batches(max_chunksize=max(1, commit.data.num_rows // 3)):
                w.write_arrow_batch(batch)
        elif commit.mode == "pandas":
            w.write_pandas(commit.data.to_pandas())
        else:
            raise ValueError(commit.mode)
        c.commit(w.prepare_commit())
    finally:
        w.close()
        c.close()


def _predicate(pb, spec):
    op = spec["op"]
    if op in ("and", "or"):
        children = [_predicate(pb, c) for c in spec["children"]]
        return pb.and_predicates(children) if op == "and" else pb.or_predicates(children)
    fn = getattr(pb, op)
    if op in ("is_null", "is_not_null"):
        return fn(spec["field"])
    if op in ("is_in", "is_not_in"):
        return fn(spec["field"], spec["literals"])
    return fn(spec["field"], spec["literal"])


def ours_read(wh, name, mode="arrow", projection=None, filter=None) -> pa.Table:
    table = _ours_catalog(wh).get_table(f"{DB}.{name}")
    rb = table.new_read_builder()
    if filter is not None:  # built on all columns: the filter may use unprojected ones
        rb = rb.with_filter(_predicate(table.new_read_builder().new_predicate_builder(), filter))
    if projection is not None:
        rb = rb.with_projection(list(projection))
    splits = rb.new_scan().plan().splits()
    read = rb.new_read()
    if mode == "arrow":
        return read.to_arrow(splits)
    if mode == "batch_reader":
        return read.to_arrow_batch_reader(splits).read_all()
    if mode == "pandas":
        return read.to_pandas(splits)
    raise ValueError(mode)


# --------------------------------------------------------------------------
# data-file layout (which partition directory / bucket each key landed in)


def file_layout(table_dir, cols):
    """{key tuple: {(partition dir, bucket)}} over every data file on disk."""
    out: dict = {}
    for path in glob.glob(os.path.join(table_dir, "**", "bucket-*", "data-*"), recursive=True):
        bucket_dir = os.path.dirname(path)
        part = os.path.relpath(os.path.dirname(bucket_dir), table_dir)
        bucket = os.path.basename(bucket_dir)[len("bucket-"):]
        t = pq.ParquetFile(path).read(columns=list(cols))  # (read_table would add hive partitions)
        for key in zip(*[t.column(c).to_pylist() for c in cols]):
            out.setdefault(key, set()).add((part, bucket))
    return out


# --------------------------------------------------------------------------
# comparison


def _fmt(v):
    s = repr(v)
    return s if len(s) < 120 else s[:117] + "..."


def row_problems(actual: pa.Table, expected_rows: list, id_cols, schema: pa.Schema):
    """Order-insensitive comparison by ``id_cols``; every column value compared."""
    problems = []
    if actual.column_names != schema.names:
        problems.append(f"columns: got {actual.column_names}, expected {schema.names}")
    got: dict = {}
    for r in actual.to_pylist():
        k = tuple(r.get(c) for c in id_cols)
        if k in got:
            problems.append(f"duplicate row for key {_fmt(k)}: {_fmt(got[k])} and {_fmt(r)}")
        got[k] = r
    exp = {tuple(r[c] for c in id_cols): r for r in expected_rows}
    missing = [k for k in exp if k not in got]
    extra = [k for k in got if k not in exp]
    if missing:
        problems.append(f"{len(missing)} missing rows, e.g. keys {[_fmt(k) for k in missing[:5]]}")
    if extra:
        problems.append(f"{len(extra)} unexpected rows, e.g. {[_fmt(got[k]) for k in extra[:3]]}")
    diffs: dict = {}
    for k, e in exp.items():
        g = got.get(k)
        if g is None:
            continue
        for c in schema.names:
            if c in g and g[c] != e[c]:
                diffs.setdefault(c, []).append(f"key {_fmt(k)}: expected {_fmt(e[c])}, got {_fmt(g[c])}")
    for c, lst in diffs.items():
        problems.append(f"column {c!r}: {len(lst)} rows differ, e.g. " + "; ".join(lst[:2]))
    if problems:
        problems.append(f"(rows: got {actual.num_rows}, expected {len(expected_rows)})")
    return problems


def schema_problems(actual: pa.Schema, expected: pa.Schema, what="read schema"):
    problems = []
    if actual.names != expected.names:
        return [f"{what}: columns {actual.names} != expected {expected.names}"]
    for a, e in zip(actual, expected):
        if not a.type.equals(e.type):
            problems.append(f"{what}: column {a.name!r} type {a.type} != pypaimon's {e.type}")
        if a.nullable != e.nullable:
            problems.append(f"{what}: column {a.name!r} nullable={a.nullable}, pypaimon: {e.nullable}")
    return problems


def check(problems, title):
    if problems:
        shown = problems[:MAX_REPORT]
        more = f"\n... {len(problems) - MAX_REPORT} more" if len(problems) > MAX_REPORT else ""
        pytest.fail(f"{title}:\n  " + "\n  ".join(shown) + more, pytrace=False)


_TS_LTZ = re.compile(r"^TIMESTAMP_LTZ\((\d+)\)$")
_TS_WLTZ = re.compile(r"^TIMESTAMP\((\d+)\) WITH LOCAL TIME ZONE$")


def norm_type(t):
    """Canonical form of a schema-JSON type (Java and pypaimon spellings)."""
    if isinstance(t, str):
        s = " ".join(t.upper().split())
        nullable = not s.endswith(" NOT NULL")
        s = s[: -len(" NOT NULL")] if not nullable else s
        s = re.sub(r"\s*,\s*", ", ", s)
        s = {"INTEGER": "INT", "DECIMAL": "DECIMAL(10, 0)", "TIMESTAMP": "TIMESTAMP(6)",
             "TIMESTAMP_LTZ": "TIMESTAMP_LTZ(6)", "TIME": "TIME(0)"}.get(s, s)
        m = _TS_WLTZ.match(s)
        if m:
            s = f"TIMESTAMP_LTZ({m.group(1)})"
        if s == "TIMESTAMP WITH LOCAL TIME ZONE":
            s = "TIMESTAMP_LTZ(6)"
        return (s, nullable)
    kind = t["type"].upper()
    nullable = t.get("nullable", not kind.endswith("NOT NULL"))
    kind = kind.replace(" NOT NULL", "").strip()
    if kind == "ROW":
        return (kind, nullable, tuple((f["id"], f["name"], norm_type(f["type"])) for f in t["fields"]))
    if kind == "MAP":
        return (kind, nullable, norm_type(t["key"]), norm_type(t["value"]))
    return (kind, nullable, norm_type(t["element"]))


def norm_schema(s: dict):
    return {
        "fields": [(f["id"], f["name"], norm_type(f["type"])) for f in s["fields"]],
        "highestFieldId": s.get("highestFieldId"),
        "partitionKeys": s.get("partitionKeys"),
        "primaryKeys": s.get("primaryKeys"),
        "options": s.get("options"),
        "version": s.get("version"),
    }


# --------------------------------------------------------------------------
# the run: pypaimon batch 1 -> our writes/reads -> pypaimon batch 2


@dataclass
class CaseRun:
    case: ic.Case
    errors: dict = field(default_factory=dict)  # step -> traceback / driver error
    results: dict = field(default_factory=dict)  # step -> value

    def need(self, *steps):
        for s in steps:
            if s in self.errors:
                pytest.fail(f"step {s!r} failed:\n{self.errors[s]}", pytrace=False)
            if s not in self.results:
                pytest.fail(f"step {s!r} did not run (an earlier step failed: {sorted(self.errors)})",
                            pytrace=False)
        return [self.results[s] for s in steps]

    def run(self, step, fn, *args, **kwargs):
        try:
            self.results[step] = fn(*args, **kwargs)
        except Exception:  # noqa: BLE001 - recorded and reported by the tests
            self.errors[step] = traceback.format_exc()
        return step not in self.errors


@pytest.fixture(scope="module")
def interop(tmp_path_factory, pypaimon_venv):
    root = tmp_path_factory.mktemp("interop")
    wh = str(root / "warehouse")
    ipc_dir = root / "ipc"
    ipc_dir.mkdir()
    runs = {c.name: CaseRun(c) for c in ic.CASES}

    def tdir(name):
        return os.path.join(wh, f"{DB}.db", name)

    def ipc(name):
        return str(ipc_dir / f"{name}.arrow")

    # ---- pypaimon, batch 1: reference table, the "_b" table (first commits)
    ops, keys = [], []

    def op(run, step, cmd, payload):
        ops.append({"cmd": cmd, "payload": payload, "catch": True})
        keys.append((run, step))

    for run in runs.values():
        c = run.case
        files = [write_ipc(ipc(f"{c.name}-c{i}"), cm.data) for i, cm in enumerate(c.commits)]
        create = {"warehouse": wh, "schema_ipc": files[0], "partition_keys": c.partition_keys,
                  "primary_keys": c.primary_keys, "options": c.options, "types": c.types}
        op(run, "pp_create", "create_table", dict(create, table=f"{DB}.{c.name}_pp"))
        for i, cm in enumerate(c.commits):
            op(run, f"pp_write{i}", "write", {"warehouse": wh, "table": f"{DB}.{c.name}_pp",
                                              "files": [files[i]], "overwrite": cm.overwrite})
        op(run, "pp_read_pp", "read", {"warehouse": wh, "table": f"{DB}.{c.name}_pp",
                                       "out": ipc(f"{c.name}-pp-read")})
        op(run, "pp_create_b", "create_table", dict(create, table=f"{DB}.{c.name}_b"))
        for i, cm in enumerate(c.commits[: c.split]):
            op(run, f"pp_write_b{i}", "write", {"warehouse": wh, "table": f"{DB}.{c.name}_b",
                                                "files": [files[i]], "overwrite": cm.overwrite})
        if not c.ours_creates:
            op(run, "pp_create_a", "create_table", dict(create, table=f"{DB}.{c.name}_a"))
    _run_batch(ops, keys)
    for run in runs.values():
        name = run.case.name
        if "pp_read_pp" in run.results:
            run.results["pp_table"] = read_ipc(ipc(f"{name}-pp-read"))

    # ---- our side
    for run in runs.values():
        c = run.case
        a, b = f"{c.name}_a", f"{c.name}_b"
        ok = run.run("ours_create_a", ours_create, wh, a, c) if c.ours_creates else \
            run.run("ours_create_a", lambda: None) and "pp_create_a" not in run.errors
        for i, cm in enumerate(c.commits):
            ok = ok and run.run(f"ours_write_a{i}", ours_write, wh, a, cm)
        if ok:
            run.results["ours_wrote_a"] = True
            run.run("ours_read_a", ours_read, wh, a)
            for mode in c.read_modes:
                if mode != "arrow":
                    run.run(f"ours_read_a_{mode}", ours_read, wh, a, mode=mode)
            if c.filter is not None or c.projection is not None:
                run.run("ours_read_a_filtered", ours_read, wh, a, projection=c.projection, filter=c.filter)
        if all(f"pp_write_b{i}" in run.results for i in range(c.split)) and "pp_create_b" in run.results:
            run.run("ours_read_b_before", ours_read, wh, b)
            ok = True
            for i, cm in enumerate(c.commits[c.split:], start=c.split):
                ok = ok and run.run(f"ours_write_b{i}", ours_write, wh, b, cm)
            if ok:
                run.results["ours_wrote_b"] = True
                run.run("ours_read_b_after", ours_read, wh, b)

    # ---- pypaimon, batch 2: read our writes, bucket function on the keys we wrote
    ops, keys = [], []
    for run in runs.values():
        c = run.case
        a, b = f"{c.name}_a", f"{c.name}_b"
        if "ours_wrote_a" in run.results:
            op(run, "pp_read_a", "read", {"warehouse": wh, "table": f"{DB}.{a}", "out": ipc(f"{a}-read")})
            op(run, "pp_native_read_a", "read", {"warehouse": wh, "table": f"{DB}.{a}",
                                                 "out": ipc(f"{a}-read-native"), "options": NATIVE_READ})
            if c.filter is not None or c.projection is not None:
                op(run, "pp_read_a_filtered", "read", {
                    "warehouse": wh, "table": f"{DB}.{a}", "out": ipc(f"{a}-read-filtered"),
                    "projection": c.projection, "filter": c.filter})
            if c.bucket > 0 and run.run("layout_a", file_layout, tdir(a), c.partition_keys + c.bucket_keys):
                k = _distinct_rows_from_layout(run.results["layout_a"], c)
                op(run, "pp_bucket_of_a", "bucket_of", {"warehouse": wh, "table": f"{DB}.{a}",
                                                        "keys_ipc": write_ipc(ipc(f"{a}-keys"), k)})
                run.results["keys_a"] = k
        if "ours_wrote_b" in run.results:
            op(run, "pp_read_b", "read", {"warehouse": wh, "table": f"{DB}.{b}", "out": ipc(f"{b}-read")})
    _run_batch(ops, keys)
    for run in runs.values():
        for step, suffix in (("pp_read_a", "_a-read"), ("pp_read_b", "_b-read"),
                             ("pp_native_read_a", "_a-read-native"),
                             ("pp_read_a_filtered", "_a-read-filtered")):
            if step in run.results:
                run.results[step + "_table"] = read_ipc(ipc(run.case.name + suffix))
        for t, step in (("_a", "layout_a_all"), ("_pp", "layout_pp"), ("_b", "layout_b")):
            cols = run.case.partition_keys + (run.case.bucket_keys if run.case.bucket > 0 else ["id"])
            if os.path.isdir(tdir(run.case.name + t)):
                run.run(step, file_layout, tdir(run.case.name + t), cols)
        for t in ("_a", "_pp", "_b"):
            p = os.path.join(tdir(run.case.name + t), "schema", "schema-0")
            if os.path.exists(p):
                with open(p) as f:
                    run.results["schema_json" + t] = json.load(f)
    return runs


def _distinct_rows_from_layout(layout, case):
    cols = case.partition_keys + case.bucket_keys
    return pa.table({c: [k[i] for k in layout] for i, c in enumerate(cols)},
                    schema=pa.schema([case.schema.field(c) for c in cols]))


def _run_batch(ops, keys):
    if not ops:
        return
    results = pypaimon_batch(ops)
    for (run, step), res in zip(keys, results):
        if "error" in res:
            run.errors[step] = f"pypaimon: {res['error']}\n{res.get('traceback', '')}"
        else:
            run.results[step] = res


# --------------------------------------------------------------------------
# tests

CASE_IDS = [c.name for c in ic.CASES]
OURS_CREATES = [c.name for c in ic.CASES if c.ours_creates]
FILTERED = [c.name for c in ic.CASES if c.filter is not None or c.projection is not None]
READ_MODES = [(c.name, m) for c in ic.CASES for m in c.read_modes if m != "arrow"]
BUCKETED = [c.name for c in ic.CASES if c.bucket > 0]


@pytest.mark.parametrize("name", CASE_IDS)
def test_reference_model_matches_pypaimon(interop, name):
    """Sanity of the test data: pypaimon's own writes read back as the model says."""
    run = interop[name]
    (pp,) = run.need("pp_table")
    check(row_problems(pp, run.case.expected(), run.case.row_id, run.case.schema),
          "pypaimon wrote + read its own table; differs from the reference model (test bug?)")


@pytest.mark.parametrize("name", OURS_CREATES)
def test_create_table_schema_matches_pypaimon(interop, name):
    """Schema.from_pyarrow_schema + create_table store what pypaimon stores."""
    run = interop[name]
    run.need("ours_create_a")
    ours, ref = run.need("schema_json_a", "schema_json_pp")
    o, r = norm_schema(ours), norm_schema(ref)
    problems = []
    for k in r:
        if k == "fields":
            for i, (fo, fr) in enumerate(zip(o["fields"], r["fields"])):
                if fo != fr:
                    problems.append(f"field #{i}: ours {fo} != pypaimon {fr}")
            if len(o["fields"]) != len(r["fields"]):
                problems.append(f"{len(o['fields'])} fields, pypaimon {len(r['fields'])}")
        elif o[k] != r[k]:
            problems.append(f"{k}: ours {o[k]!r} != pypaimon {r[k]!r}")
    check(problems, f"schema-0 of our table vs pypaimon's for the same Arrow schema ({name})")


@pytest.mark.parametrize("name", CASE_IDS)
def test_we_read_what_we_wrote(interop, name):
    run = interop[name]
    c = run.case
    (got,) = run.need(*[f"ours_write_a{i}" for i in range(len(c.commits))], "ours_read_a")[-1:]
    (pp,) = run.need("pp_table")
    check(schema_problems(got.schema, pp.schema) + row_problems(got, c.expected(), c.row_id, c.schema),
          "paimon_rs wrote all commits, paimon_rs read")


@pytest.mark.parametrize("name", CASE_IDS)
def test_pypaimon_reads_what_we_wrote(interop, name):
    """(a) pypaimon reads exactly the rows we wrote."""
    run = interop[name]
    c = run.case
    run.need(*[f"ours_write_a{i}" for i in range(len(c.commits))])
    (got,) = run.need("pp_read_a_table")
    check(row_problems(got, c.expected(), c.row_id, c.schema), "paimon_rs wrote all commits, pypaimon read")


@pytest.mark.parametrize("name", CASE_IDS)
def test_pypaimon_native_reads_what_we_wrote(interop, name):
    """(a) also through pypaimon's native (pypaimon-rust) reader."""
    if name in NATIVE_UNSUPPORTED:
        pytest.skip("pypaimon-rust 0.4.0 does not support FLOAT/DOUBLE partition keys")
    run = interop[name]
    c = run.case
    run.need(*[f"ours_write_a{i}" for i in range(len(c.commits))])
    got, res = run.need("pp_native_read_a_table", "pp_native_read_a")
    fallbacks = [w for w in res.get("warnings", []) if "native" in w.lower()]
    check(row_problems(got, c.expected(), c.row_id, c.schema)
          + [f"pypaimon fell back to its Python reader: {w}" for w in fallbacks],
          "paimon_rs wrote all commits, pypaimon read with read.native.enabled (pypaimon-rust)")


@pytest.mark.parametrize("name", CASE_IDS)
def test_we_read_what_pypaimon_wrote(interop, name):
    """(b) we read exactly what pypaimon wrote (commits[:split])."""
    run = interop[name]
    c = run.case
    run.need(*[f"pp_write_b{i}" for i in range(c.split)])
    got, pp = run.need("ours_read_b_before", "pp_table")
    check(schema_problems(got.schema, pp.schema) + row_problems(got, c.expected(c.split), c.row_id, c.schema),
          f"pypaimon wrote commits 1..{c.split}, paimon_rs read")


@pytest.mark.parametrize("name", CASE_IDS)
def test_pypaimon_reads_after_we_append(interop, name):
    """(b) we append (updates of pypaimon's keys, new keys, -D deletes, overwrites) to
    pypaimon's table; pypaimon reads the right rows."""
    run = interop[name]
    c = run.case
    run.need(*[f"ours_write_b{i}" for i in range(c.split, len(c.commits))])
    (got,) = run.need("pp_read_b_table")
    check(row_problems(got, c.expected(), c.row_id, c.schema),
          f"pypaimon wrote commits 1..{c.split}, paimon_rs appended the rest, pypaimon read")


@pytest.mark.parametrize("name", CASE_IDS)
def test_we_read_after_we_append(interop, name):
    run = interop[name]
    c = run.case
    (got,) = run.need("ours_read_b_after")
    check(row_problems(got, c.expected(), c.row_id, c.schema),
          f"pypaimon wrote commits 1..{c.split}, paimon_rs appended the rest, paimon_rs read")


@pytest.mark.parametrize("name", CASE_IDS)
def test_same_partition_and_bucket_dirs_as_pypaimon(interop, name):
    """(c) every key (or append row) lands in the partition directory and bucket that
    pypaimon chose for it; keys written by both sides never spread over two buckets."""
    run = interop[name]
    c = run.case
    ours, ref = run.need("layout_a_all", "layout_pp")
    problems = []
    for key, places in ours.items():
        if len(places) != 1:
            problems.append(f"our table: key {_fmt(key)} in several directories: {sorted(places)}")
        if key in ref and places != ref[key]:
            problems.append(f"key {_fmt(key)}: ours {sorted(places)}, pypaimon {sorted(ref[key])}")
    missing = set(ref) - set(ours)
    if missing:
        problems.append(f"{len(missing)} keys in pypaimon's files but in none of ours, "
                        f"e.g. {[_fmt(k) for k in list(missing)[:3]]}")
    if "layout_b" in run.results:
        for key, places in run.results["layout_b"].items():
            if len(places) != 1:
                problems.append(f"mixed table (pypaimon then us): key {_fmt(key)} in {sorted(places)}")
    check(problems, f"data file directories (partition path / bucket), bucket-key {c.bucket_keys}")


@pytest.mark.parametrize("name", BUCKETED)
def test_bucket_matches_pypaimon_bucket_function(interop, name):
    """(c) our bucket of each key == pypaimon's FixedBucketRowKeyExtractor."""
    run = interop[name]
    c = run.case
    keys, res = run.need("keys_a", "pp_bucket_of_a")
    layout = run.results["layout_a"]
    problems = []
    rows = list(zip(*[keys.column(i).to_pylist() for i in range(keys.num_columns)]))
    for key, expected in zip(rows, res["buckets"]):
        got = {b for _, b in layout[key]}
        if got != {str(expected)}:
            problems.append(f"key {_fmt(key)}: our bucket(s) {sorted(got)}, pypaimon {expected}")
    check(problems, f"bucket of {len(rows)} keys (bucket={c.bucket}, bucket-key {res.get('bucket_keys')})")


@pytest.mark.parametrize("name", FILTERED)
def test_projection_and_filter_match_pypaimon(interop, name):
    run = interop[name]
    got, ref = run.need("ours_read_a_filtered", "pp_read_a_filtered_table")
    problems = schema_problems(got.schema, ref.schema, "projected schema")

    def rows(t):
        return sorted(repr(r) for r in t.to_pylist())
    g, r = rows(got), rows(ref)
    if g != r:
        only_g = [x for x in g if x not in r][:2]
        only_r = [x for x in r if x not in g][:2]
        problems.append(f"rows differ: ours {len(g)}, pypaimon {len(r)}; only ours: {only_g}; "
                        f"only pypaimon: {only_r}")
    check(problems, f"with_projection({run.case.projection}) + with_filter({run.case.filter})")


@pytest.mark.parametrize("name,mode", READ_MODES)
def test_read_apis_agree(interop, name, mode):
    run = interop[name]
    c = run.case
    base, got = run.need("ours_read_a", f"ours_read_a_{mode}")
    if mode == "pandas":
        import pandas.testing as pdt

        def norm(df):
            return df.sort_values(c.row_id).reset_index(drop=True)
        # to_pandas is to_arrow().to_pandas() but with pandas nullable dtypes for integer and
        # boolean columns holding NULLs (docs/api.md, "Switching from pypaimon")
        from paimon_rs.table import _arrow_to_pandas
        pdt.assert_frame_equal(norm(got), norm(_arrow_to_pandas(base)))
    else:
        check(schema_problems(got.schema, base.schema, f"{mode} schema")
              + row_problems(got, base.to_pylist(), c.row_id, c.schema), f"{mode} vs to_arrow")
