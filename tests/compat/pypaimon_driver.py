"""Driver run *inside* the pypaimon venv (see pypaimon_env.py).

Usage: python pypaimon_driver.py REQUEST.json RESPONSE.json

REQUEST is ``{"cmd": str, "payload": dict}``. The response is the command's
result dict. Arrow data travels as Arrow IPC *files* (``pa.ipc.new_file``)
whose paths are given in the payload. On error the traceback goes to stderr
and the exit code is 1, except inside ``batch`` ops that set
``"catch": true``: their result is then ``{"error": str, "error_type": str}``.

Commands (``table`` is always ``"db.table"``, ``warehouse`` a directory):

create_table  warehouse, table, schema_ipc (IPC file; only its schema is used),
              partition_keys, primary_keys, options, types ({column: Paimon
              type JSON, e.g. "CHAR(5)" or "TIME(3) NOT NULL"} overriding the
              type pypaimon's Schema.from_pyarrow_schema derives),
              ignore_if_exists (default False).
              -> {"schema": <schema JSON as pypaimon stores it>}
write         warehouse, table, files ([IPC path], one commit per file),
              mode ("arrow" | "batch" | "pandas"), overwrite (None | partition
              dict, applied to every commit), options (dynamic options passed to
              table.copy(), e.g. {"write.native.enabled": "true"}).
              -> {"snapshot_ids": [...], "writer": class name of the writer}
read          warehouse, table, out (IPC path), projection, filter (see
              _predicate), options, mode ("arrow" | "batch_reader" | "pandas").
              -> {"num_rows", "num_splits", "schema": str, "warnings": [pypaimon
              log records >= WARNING, e.g. native-read fallbacks]}
bucket_of     warehouse, table, keys_ipc (IPC with the bucket-key columns).
              -> {"buckets": [int per row]} computed by pypaimon's own
              pypaimon.write.row_key_extractor.FixedBucketRowKeyExtractor.
bucket_layout warehouse, table, out (IPC path). Reads every split separately and
              writes all rows plus ``_bucket`` (int32) -> {"splits": [{"bucket",
              "partition", "files": [relative data file paths]}]}.
table_info    warehouse, table -> {"schema", "snapshot_ids", "files": [{path,
              bucket, level, row_count, min_seq, max_seq}]} of the latest plan.
bench         see _cmd_bench (used by benches/bench_foundation.py).
batch         ops: [{"cmd", "payload", "catch"?}] -> {"results": [...]}
"""

import json
import logging
import os
import shutil
import sys
import time
import traceback

import pyarrow as pa
import pyarrow.ipc as ipc
from pypaimon import CatalogFactory, Schema

_CATALOGS = {}


# --------------------------------------------------------------------------
# helpers


def _catalog(warehouse):
    cat = _CATALOGS.get(warehouse)
    if cat is None:
        cat = CatalogFactory.create({"warehouse": warehouse})
        _CATALOGS[warehouse] = cat
    return cat


def _table(payload, options=None):
    table = _catalog(payload["warehouse"]).get_table(payload["table"])
    opts = options if options is not None else payload.get("options")
    if opts:
        table = table.copy(dict(opts))
    return table


def _read_ipc(path):
    with pa.OSFile(path, "rb") as f:
        return ipc.open_file(f).read_all()


def _read_ipc_schema(path):
    with pa.OSFile(path, "rb") as f:
        return ipc.open_file(f).schema


def _write_ipc(path, table):
    with pa.OSFile(path, "wb") as f:
        with ipc.new_file(f, table.schema) as w:
            w.write_table(table)


def _schema_json(table):
    from pypaimon.common.json_util import JSON

    return json.loads(JSON.to_json(table.table_schema))


def _latest_snapshot_id(table):
    snap = table.snapshot_manager().get_latest_snapshot()
    return None if snap is None else snap.id


def _predicate(pb, spec):
    """JSON predicate: {"op": name, "field": f, "literal"/"literals": ...};
    "and"/"or" take "children". Names are PredicateBuilder methods."""
    op = spec["op"]
    if op in ("and", "or"):
        children = [_predicate(pb, c) for c in spec["children"]]
        return pb.and_predicates(children) if op == "and" else pb.or_predicates(children)
    fn = getattr(pb, op)
    if op in ("is_null", "is_not_null"):
        return fn(spec["field"])
    if op in ("is_in", "is_not_in"):
        return fn(spec["field"], spec["literals"])
    if op in ("between", "not_between"):
        return fn(spec["field"], spec["literals"][0], spec["literals"][1])
    return fn(spec["field"], spec["literal"])


# --------------------------------------------------------------------------
# commands


def _cmd_create_table(p):
    from pypaimon.schema.data_types import DataTypeParser

    cat = _catalog(p["warehouse"])
    db = p["table"].split(".")[0]
    cat.create_database(db, True)
    pa_schema = _read_ipc_schema(p["schema_ipc"])
    pk = list(p.get("primary_keys") or [])
    schema = Schema.from_pyarrow_schema(
        pa_schema,
        partition_keys=list(p.get("partition_keys") or []),
        primary_keys=pk,
        options={k: str(v) for k, v in (p.get("options") or {}).items()},
    )
    overrides = p.get("types") or {}
    if overrides:
        by_name = {f.name: f for f in schema.fields}
        for name, spec in overrides.items():
            if name not in by_name:
                raise KeyError(f"types override for unknown column {name!r}")
            dt = DataTypeParser.parse_data_type(spec)
            if name in pk:
                dt.nullable = False
            by_name[name].type = dt
    cat.create_table(p["table"], schema, bool(p.get("ignore_if_exists", False)))
    return {"schema": _schema_json(cat.get_table(p["table"]))}


def _cmd_write(p):
    snapshot_ids = []
    writer_cls = None
    mode = p.get("mode", "arrow")
    for path in p["files"]:
        data = _read_ipc(path)
        table = _table(p)
        wb = table.new_batch_write_builder()
        if p.get("overwrite") is not None:
            wb = wb.overwrite(dict(p["overwrite"]))
        w = wb.new_write()
        c = wb.new_commit()
        writer_cls = type(w).__name__
        try:
            if mode == "arrow":
                w.write_arrow(data)
            elif mode == "batch":
                for batch in data.to_batches():
                    w.write_arrow_batch(batch)
            elif mode == "pandas":
                w.write_pandas(data.to_pandas())
            else:
                raise ValueError(f"unknown write mode {mode!r}")
            c.commit(w.prepare_commit())
        finally:
            w.close()
            c.close()
        snapshot_ids.append(_latest_snapshot_id(_table(p, options={})))
    return {"snapshot_ids": snapshot_ids, "writer": writer_cls}


class _Collect(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages = []

    def emit(self, record):
        self.messages.append(f"{record.name}: {record.getMessage()}")


def _cmd_read(p):
    collect = _Collect()
    logging.getLogger("pypaimon").addHandler(collect)
    try:
        out = _read(p)
    finally:
        logging.getLogger("pypaimon").removeHandler(collect)
    out["warnings"] = collect.messages
    return out


def _read(p):
    table = _table(p)
    rb = table.new_read_builder()
    if p.get("filter") is not None:  # built on all columns: the filter may use unprojected ones
        rb = rb.with_filter(_predicate(table.new_read_builder().new_predicate_builder(), p["filter"]))
    if p.get("projection") is not None:
        rb = rb.with_projection(list(p["projection"]))
    splits = rb.new_scan().plan().splits()
    read = rb.new_read()
    mode = p.get("mode", "arrow")
    if mode == "arrow":
        result = read.to_arrow(splits)
    elif mode == "batch_reader":
        reader = read.to_arrow_batch_reader(splits)
        result = reader.read_all()
    elif mode == "pandas":
        result = pa.Table.from_pandas(read.to_pandas(splits), preserve_index=False)
    else:
        raise ValueError(f"unknown read mode {mode!r}")
    if result is None:  # to_arrow is typed Optional; never seen in practice
        raise RuntimeError("pypaimon returned None from the read")
    _write_ipc(p["out"], result)
    return {"num_rows": result.num_rows, "num_splits": len(splits), "schema": str(result.schema)}


def _cmd_bucket_of(p):
    from pypaimon.write.row_key_extractor import FixedBucketRowKeyExtractor

    table = _table(p)
    keys = _read_ipc(p["keys_ipc"])
    extractor = FixedBucketRowKeyExtractor(table.table_schema)
    buckets = []
    for batch in keys.to_batches():
        buckets.extend(int(b) for b in extractor._extract_buckets_batch(batch))
    return {"buckets": buckets, "bucket_keys": list(extractor.bucket_keys)}


def _split_files(split):
    files = []
    for f in split.files:
        path = getattr(f, "file_path", None) or f.file_name
        files.append(str(path))
    return files


def _cmd_bucket_layout(p):
    table = _table(p)
    rb = table.new_read_builder()
    splits = rb.new_scan().plan().splits()
    read = rb.new_read()
    parts = []
    info = []
    for s in splits:
        t = read.to_arrow([s])
        if t is None:
            continue
        t = t.append_column("_bucket", pa.array([s.bucket] * t.num_rows, pa.int32()))
        parts.append(t)
        partition = s.partition
        pvals = list(partition.values) if hasattr(partition, "values") else str(partition)
        info.append({"bucket": s.bucket, "partition": _jsonable(pvals), "files": _split_files(s)})
    out = pa.concat_tables(parts) if parts else pa.table({"_bucket": pa.array([], pa.int32())})
    _write_ipc(p["out"], out)
    return {"splits": info}


def _jsonable(v):
    try:
        json.dumps(v)
        return v
    except TypeError:
        if isinstance(v, (list, tuple)):
            return [_jsonable(x) for x in v]
        return str(v)


def _cmd_table_info(p):
    table = _table(p)
    root = table.table_path
    snap_dir = os.path.join(str(root), "snapshot")
    ids = sorted(
        int(n[len("snapshot-"):]) for n in (os.listdir(snap_dir) if os.path.isdir(snap_dir) else [])
        if n.startswith("snapshot-") and n[len("snapshot-"):].isdigit())
    files = []
    for s in table.new_read_builder().new_scan().plan().splits():
        for f in s.files:
            files.append({
                "path": str(getattr(f, "file_path", None) or f.file_name),
                "bucket": s.bucket, "level": f.level, "row_count": f.row_count,
                "min_seq": f.min_sequence_number, "max_seq": f.max_sequence_number,
            })
    return {"schema": _schema_json(table), "snapshot_ids": ids, "files": files}


# --------------------------------------------------------------------------
# benchmark


def _cmd_bench(p):
    """Time bulk write + full read of one IPC data set, ``repeat`` times.

    payload: warehouse (scratch root), data_ipc, primary_keys, partition_keys,
    options (table options, e.g. bucket and native switches), repeat,
    impl ("pypaimon" | "pypaimon_rust"), update_ipc (optional second commit
    before the read, to measure a merge read).
    Times cover only API calls: table creation and data loading are excluded.
    """
    impl = p.get("impl", "pypaimon")
    data = _read_ipc(p["data_ipc"])
    update = _read_ipc(p["update_ipc"]) if p.get("update_ipc") else None
    write_s, update_s, read_s, rows_read = [], [], [], []
    check, info = {}, {}
    # warm-up on 1000 rows (lazy imports, native library load), untimed
    for i in [-1] + list(range(int(p.get("repeat", 1)))):
        wh = os.path.join(p["warehouse"], "warmup" if i < 0 else f"rep{i}")
        name = "db.bench"
        cat = CatalogFactory.create({"warehouse": wh})
        cat.create_database("db", True)
        cat.create_table(name, Schema.from_pyarrow_schema(
            data.schema, partition_keys=list(p.get("partition_keys") or []),
            primary_keys=list(p.get("primary_keys") or []),
            options={k: str(v) for k, v in (p.get("options") or {}).items()}), False)
        if i < 0:
            data_i, update_i = data.slice(0, 1000), None
        else:
            data_i, update_i = data, update
        if impl == "pypaimon":
            w_t = _bench_pypaimon_write(cat.get_table(name), data_i, info)
            u_t = _bench_pypaimon_write(cat.get_table(name), update_i, info) if update_i is not None else None
            r_t, result = _bench_pypaimon_read(cat.get_table(name), info)
        elif impl == "pypaimon_rust":
            from pypaimon_rust.datafusion import PaimonCatalog

            ntable = PaimonCatalog({"warehouse": wh}).get_table(name)
            w_t = _bench_rust_write(ntable, data_i)
            u_t = None
            if update_i is not None:
                ntable = PaimonCatalog({"warehouse": wh}).get_table(name)
                u_t = _bench_rust_write(ntable, update_i)
            ntable = PaimonCatalog({"warehouse": wh}).get_table(name)
            r_t, result = _bench_rust_read(ntable)
        else:
            raise ValueError(f"unknown impl {impl!r}")
        shutil.rmtree(wh, ignore_errors=True)
        if i < 0:
            del result
            continue
        write_s.append(w_t)
        if u_t is not None:
            update_s.append(u_t)
        read_s.append(r_t)
        rows_read.append(result.num_rows)
        if i == 0 and p.get("checksum_column"):
            import pyarrow.compute as pc

            # sum of the low 16 bits: no int64 overflow (same as benches/bench_foundation.py)
            col = result.column(p["checksum_column"])
            check = {"sum": pc.sum(pc.bit_wise_and(col, 0xFFFF)).as_py() or 0}
        del result
    return {"write_s": write_s, "update_s": update_s, "read_s": read_s,
            "rows_read": rows_read, "check": check, "info": info}


def _bench_pypaimon_write(table, data, info):
    import gc

    gc.collect()
    t0 = time.perf_counter()
    wb = table.new_batch_write_builder()
    w = wb.new_write()
    c = wb.new_commit()
    info["writer"] = type(w).__name__
    w.write_arrow(data)
    c.commit(w.prepare_commit())
    w.close()
    c.close()
    return time.perf_counter() - t0


def _bench_pypaimon_read(table, info):
    import gc

    gc.collect()
    t0 = time.perf_counter()
    rb = table.new_read_builder()
    splits = rb.new_scan().plan().splits()
    info["native_plan"] = bool(splits) and all(hasattr(s, "_native_split") for s in splits)
    result = rb.new_read().to_arrow(splits)
    return time.perf_counter() - t0, result


def _bench_rust_write(ntable, data):
    import gc

    gc.collect()
    t0 = time.perf_counter()
    wb = ntable.new_batch_write_builder()
    w = wb.new_write()
    for batch in data.to_batches():
        w.write_arrow(batch)
    msgs = w.prepare_commit()
    c = wb.new_commit()
    c.commit(msgs)
    w.close()
    c.close()
    return time.perf_counter() - t0


def _bench_rust_read(ntable):
    import gc

    gc.collect()
    t0 = time.perf_counter()
    rb = ntable.new_read_builder()
    splits = rb.new_scan().plan().splits()
    batches = list(rb.new_read().read_arrow(splits))
    result = pa.Table.from_batches(batches) if batches else pa.table({})
    return time.perf_counter() - t0, result


# --------------------------------------------------------------------------


COMMANDS = {
    "create_table": _cmd_create_table,
    "write": _cmd_write,
    "read": _cmd_read,
    "bucket_of": _cmd_bucket_of,
    "bucket_layout": _cmd_bucket_layout,
    "table_info": _cmd_table_info,
    "bench": _cmd_bench,
}


def run(cmd, payload):
    if cmd == "batch":
        results = []
        for op in payload["ops"]:
            try:
                results.append(run(op["cmd"], op.get("payload", {})))
            except Exception as e:  # noqa: BLE001
                if not op.get("catch"):
                    raise
                results.append({"error": f"{type(e).__name__}: {e}",
                                "error_type": type(e).__name__,
                                "traceback": traceback.format_exc()})
        return {"results": results}
    if cmd == "versions":
        import importlib.metadata as md

        out = {"python": sys.version.split()[0]}
        for dist in ("pypaimon", "pypaimon-rust", "pyarrow"):
            try:
                out[dist] = md.version(dist)
            except md.PackageNotFoundError:
                out[dist] = None
        return out
    return COMMANDS[cmd](payload)


def main(argv):
    with open(argv[1]) as f:
        req = json.load(f)
    try:
        result = run(req["cmd"], req.get("payload") or {})
    except Exception:  # noqa: BLE001
        traceback.print_exc()
        return 1
    with open(argv[2], "w") as f:
        json.dump(result, f, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
