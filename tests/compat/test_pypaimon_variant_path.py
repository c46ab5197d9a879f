"""VARIANT path functions against pypaimon 2.1.0's (the oracle: ``pypaimon.data.variant_get`` /
``variant_replace`` / ``variant_set`` / ``variant_to_pylist``). A script in pypaimon's venv, with
paimon_rs on its path, runs the same calls through both on random VARIANT columns (random nested
objects and arrays, SQL null rows, several chunks) and random paths (present, missing, through the
wrong container, into arrays, every spelling) and compares what comes back: the Arrow results of
``variant_get``, the decoded rows and metadata dictionaries after ``variant_replace`` /
``variant_set``, or the exception's type and message."""

from __future__ import annotations

import pytest

import pypaimon_env

pytestmark = pytest.mark.compat

SCRIPT = r'''
import datetime, decimal, json, random, sys, traceback
import pyarrow as pa
from pypaimon.data import variant_get as p_get, variant_replace as p_replace
from pypaimon.data import variant_set as p_set, variant_to_pylist as p_pylist
from pypaimon.data.generic_variant import GenericVariant as PGV
from paimon_rs import variant_get as r_get, variant_replace as r_replace
from paimon_rs import variant_set as r_set, variant_to_pylist as r_pylist
from paimon_rs.variant_path import _metadata_keys

rnd = random.Random(int(sys.argv[1]))
KEYS = ["a", "b", "c", "x.y", "k'"]

def gen(d=0):
    k = rnd.randrange(8 if d < 3 else 6)
    if k == 6:
        return {rnd.choice(KEYS): gen(d + 1) for _ in range(rnd.randrange(4))}
    if k == 7:
        return [gen(d + 1) for _ in range(rnd.randrange(3))]
    if k == 5 and rnd.random() < .5:  # dates, timestamps (naive and aware), decimals
        micros = rnd.randrange(-2**50, 2**50)
        return [datetime.date(1970, 1, 1) + datetime.timedelta(days=rnd.randrange(-10**5, 10**5)),
                datetime.datetime(1970, 1, 1) + datetime.timedelta(microseconds=micros),
                datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
                + datetime.timedelta(microseconds=micros),
                decimal.Decimal(rnd.randrange(-10**rnd.randrange(1, 20), 10**12)).scaleb(-2)
                ][rnd.randrange(4)]
    return [None, rnd.random() < .5, rnd.randrange(-2**40, 2**40), rnd.random() - .5,
            "s" * rnd.randrange(70), rnd.randrange(100)][k]

def spell(key):
    if key in ("x.y", "k'"):
        return '["%s"]' % key
    return rnd.choice([".%s" % key, "['%s']" % key])

def path():
    p = "$"
    for _ in range(rnd.randrange(4)):
        p += "[%d]" % rnd.randrange(3) if rnd.random() < .3 else spell(rnd.choice(KEYS))
    return p

def column():
    chunks = []
    for _ in range(rnd.randrange(1, 3)):
        if rnd.random() < .2:  # many rows of one shape: pypaimon's vectorised paths
            shape = {k: gen(1) for k in rnd.sample(KEYS, rnd.randrange(1, 4))}
            rows = [None if rnd.random() < .05 else dict(shape, **({"a": rnd.random()} if "a" in shape else {}))
                    for _ in range(rnd.randrange(70, 130))]
        else:
            rows = [None if rnd.random() < .1 else {k: gen(1) for k in rnd.sample(KEYS, rnd.randrange(4))}
                    for _ in range(rnd.randrange(1, 6))]
        chunks.append(PGV.to_arrow_array([None if r is None else PGV.from_python(r) for r in rows]))
    return pa.chunked_array(chunks) if len(chunks) > 1 else chunks[0]

TYPES = [pa.int64(), pa.float64(), pa.string(), pa.bool_(), pa.list_(pa.int64()),
         pa.struct([("a", pa.int64()), ("b", pa.string())]), pa.map_(pa.string(), pa.float64()),
         pa.date32(), pa.timestamp("us"), pa.timestamp("us", tz="UTC"), pa.decimal128(10, 2),
         pa.decimal128(38, 2), pa.decimal128(12, 3)]
REPL = [lambda n: pa.scalar(rnd.randrange(-5, 5), pa.int64()), lambda n: pa.scalar(rnd.random()),
        lambda n: pa.scalar("r" * rnd.randrange(70)), lambda n: pa.scalar(rnd.random() < .5),
        lambda n: pa.scalar(None), lambda n: pa.array([rnd.randrange(9) or None for _ in range(n)], pa.int64()),
        lambda n: pa.array([rnd.random() for _ in range(n)])]

def outcome(f):
    try:
        return ["ok", f()]
    except Exception as e:
        msg = str(e)
        # pypaimon's vectorised float reader words its type mismatch differently from its other
        # readers ("VARIANT path type does not match double"): the same refusal
        if msg == "VARIANT path is not FLOAT or DOUBLE":
            msg = "VARIANT path type does not match double"
        return ["error", type(e).__name__, msg]

def rows(col):
    out = []
    for r in col.to_pylist():
        out.append(None if r is None else [PGV(r["value"], r["metadata"]).to_python(),
                                           _metadata_keys(r["metadata"])])
    return json.dumps(out, default=repr, sort_keys=True)

checked, mismatches, order_only = 0, [], 0
for case in range(int(sys.argv[2])):
    col = column()
    n = len(col)
    op = rnd.randrange(4)
    if op == 0:
        paths = {path(): rnd.choice(TYPES) for _ in range(rnd.randrange(1, 3))}
        conv = lambda res: {k: v.to_pylist() for k, v in res.items()}
        a, b = outcome(lambda: conv(p_get(col, paths))), outcome(lambda: conv(r_get(col, paths)))
    elif op == 3:
        names = rnd.sample(KEYS, 2)
        a, b = outcome(lambda: p_pylist(col, names)), outcome(lambda: r_pylist(col, names))
    else:
        edits = {path(): rnd.choice(REPL)(n) for _ in range(rnd.randrange(1, 3))}
        strict = rnd.random() < .3
        if op == 1:
            a = outcome(lambda: rows(p_replace(col, edits, strict=strict)))
            b = outcome(lambda: rows(r_replace(col, edits, strict=strict)))
        else:
            a, b = outcome(lambda: rows(p_set(col, edits))), outcome(lambda: rows(r_set(col, edits)))
    checked += 1
    same = json.dumps(a, default=repr) == json.dumps(b, default=repr)
    if not same and a[0] == b[0] == "error" and op in (1, 2):
        # both refuse, each reporting a different row's or path's refusal first (pypaimon's
        # vectorised groups check in another order): then every row and path alone must agree
        whole = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
        def one(i, path):
            v = edits[path]
            e = {path: v if isinstance(v, pa.Scalar) else v.slice(i, 1)}
            c = whole.slice(i, 1)
            if op == 1:
                return (outcome(lambda: rows(p_replace(c, e, strict=strict))),
                        outcome(lambda: rows(r_replace(c, e, strict=strict))))
            return outcome(lambda: rows(p_set(c, e))), outcome(lambda: rows(r_set(c, e)))
        same = all(json.dumps(x, default=repr) == json.dumps(y, default=repr)
                   for i in range(n) for x, y in [one(i, p) for p in edits])
        order_only += same
    if not same:
        mismatches.append([case, op, repr(a)[:300], repr(b)[:300]])
print(json.dumps({"checked": checked, "order_only": order_only, "mismatches": mismatches[:40],
                  "n_mismatches": len(mismatches)}))
'''


def test_variant_path_functions_match_pypaimon(pypaimon_venv):
    got = pypaimon_env.run_script_with_paimon_rs(pypaimon_venv, SCRIPT, "7", "1500")
    assert got["checked"] == 1500
    assert got["n_mismatches"] == 0, got["mismatches"]
