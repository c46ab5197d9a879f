"""``parse_where_clause`` against pypaimon 2.1.0's (the oracle:
``pypaimon.common.where_parser.parse_where_clause``). A script in pypaimon's venv, with paimon_rs
on its path, parses the same random WHERE strings (conditions of every operator on every type,
AND / OR / parentheses, and broken strings: tokens dropped, swapped or added) with both, on the
same fields, and compares the predicate trees (method, field, literal values and types) or the
errors (a ValueError both, the same message but for a number that does not parse, which
pypaimon reports as Python's ``int()`` / ``float()`` do)."""

from __future__ import annotations

import pytest

import pypaimon_env

pytestmark = pytest.mark.compat

SCRIPT = r'''
import json, random, sys
from pypaimon.common.where_parser import parse_where_clause as p_parse
from pypaimon.schema.data_types import AtomicType as PA, ArrayType as PArr, DataField as PF
from paimon_rs import parse_where_clause as r_parse
from paimon_rs import AtomicType as RA, ArrayType as RArr, DataField as RF

TYPES = {"i": "INT", "b": "BIGINT", "s": "STRING", "v": "VARCHAR(10)", "d": "DOUBLE",
         "f": "FLOAT", "m": "DECIMAL(10, 2)", "o": "BOOLEAN", "t": "DATE", "h": "TIME"}
p_fields = [PF(k, n, PA(t)) for k, (n, t) in enumerate(TYPES.items())]
r_fields = [RF(k, n, RA(t)) for k, (n, t) in enumerate(TYPES.items())]
p_fields.append(PF(99, "arr", PArr(True, PA("INT"))))
r_fields.append(RF(99, "arr", RArr(True, RA("INT"))))
rnd = random.Random(int(sys.argv[1]))
VALUES = {"i": ["1", "-7", "0", "x"], "b": ["123456789012", "5"], "s": ["'a'", '"b c"', "abc", "'%'"],
          "v": ["'x_y'", "z"], "d": ["1.5", "2", "-0.25", "1e3", "nan"], "f": ["3.25", "7"],
          "m": ["50", "1.5", "1.234", "9.99", "abc"], "o": ["true", "FALSE", "1", "no"],
          "t": ["'2024-01-02'", "2024-1-2", "'24-01-02'"], "h": ["'12:30'", "'01:02:03.5'", "'25:00'"]}

def cond():
    name = rnd.choice(["arr", "nope"]) if rnd.random() < 0.04 else rnd.choice(list(TYPES))
    val = lambda: rnd.choice(VALUES.get(name, ["1"]))
    k = rnd.randrange(9)
    if k == 0:
        return f"{name} IS {rnd.choice(['', 'NOT ', 'not '])}NULL"
    if k == 1:
        return f"{name} {rnd.choice(['IN', 'NOT IN', 'in'])} ({', '.join(val() for _ in range(rnd.randrange(1, 4)))})"
    if k == 2:
        return f"{name} {rnd.choice(['BETWEEN', 'NOT BETWEEN', 'between'])} {val()} AND {val()}"
    if k == 3:
        return name + " LIKE " + rnd.choice(["'a%'", "'_b'", "c%"])
    return f"{name} {rnd.choice(['=', '!=', '<>', '<', '<=', '>', '>='])} {val()}"

def expr(d=0):
    if d < 2 and rnd.random() < 0.4:
        inner = f" {rnd.choice(['AND', 'OR', 'and', 'or'])} ".join(expr(d + 1) for _ in range(rnd.randrange(2, 4)))
        return f"({inner})" if rnd.random() < 0.5 else inner
    return cond()

def mutate(s):
    toks = s.split(" ")
    k = rnd.randrange(4)
    i = rnd.randrange(len(toks))
    if k == 0:
        del toks[i]
    elif k == 1:
        toks.insert(i, rnd.choice(["AND", "(", ")", "IS", "NOT", ",", "x", "=", "IN"]))
    elif k == 2 and len(toks) > 1:
        j = rnd.randrange(len(toks))
        toks[i], toks[j] = toks[j], toks[i]
    return " ".join(toks)

def norm(v):
    return [type(v).__name__, str(v)]

def tree(p):
    if p is None:
        return None
    if p.method in ("and", "or"):
        return [p.method, [tree(c) for c in p.literals]]
    return [p.method, p.field, [norm(v) for v in (p.literals or [])]]

NUMBER = ("invalid literal for int()", "could not convert string to float")

def run(f, fields, s):
    try:
        return ["ok", tree(f(s, fields))]
    except ValueError as e:
        return ["error", str(e)]

diffs, n, errors = [], int(sys.argv[2]), 0
for _ in range(n):
    s = expr()
    if rnd.random() < 0.3:
        s = mutate(s)
    want, got = run(p_parse, p_fields, s), run(r_parse, r_fields, s)
    if want[0] == "error":
        errors += 1
        if got[0] == "error" and want[1].startswith(NUMBER) and got[1].startswith("Cannot convert literal"):
            continue
    if want != got:
        diffs.append({"where": s, "pypaimon": want, "paimon_rs": got})
print(json.dumps({"n": n, "errors": errors, "diffs": diffs[:10], "count": len(diffs)}))
'''


def test_where_clauses_parse_as_pypaimons(pypaimon_venv):
    got = pypaimon_env.run_script_with_paimon_rs(pypaimon_venv, SCRIPT, "11", "3000")
    assert got["count"] == 0, got["diffs"]
    assert got["n"] == 3000 and 300 < got["errors"] < 2700  # both kinds are exercised
