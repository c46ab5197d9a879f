"""VARIANT path functions, paimon_rs against pypaimon: CPU seconds of variant_get /
variant_replace / variant_set (insert) on one column of N rows, and variant_get of a DATE, a
DECIMAL and a nested object (as a struct) on a second column of N rows.

    python benches/bench_variant_path.py [--rows 100000]

Runs paimon_rs in this interpreter and pypaimon in its venv (PAIMON_RS_PYPAIMON_VENV or
~/.cache/paimon_rs/venv-pypaimon); process CPU time, so a loaded box skews it less than wall time.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

BODY = r'''
import datetime, decimal, json, sys, time
import pyarrow as pa
if sys.argv[1] == "paimon_rs":
    from paimon_rs import GenericVariant, variant_get, variant_replace, variant_set
else:
    from pypaimon.data.generic_variant import GenericVariant
    from pypaimon.data import variant_get, variant_replace, variant_set
n = int(sys.argv[2])
col = GenericVariant.to_arrow_array([GenericVariant.from_python(
    {"velocity": {"x": float(i), "y": -float(i)}, "seq": i, "tag": "abc"}) for i in range(n)])
day0 = datetime.date(2020, 1, 1)
typed = GenericVariant.to_arrow_array([GenericVariant.from_python(
    {"day": day0 + datetime.timedelta(days=i % 1000), "price": decimal.Decimal(i).scaleb(-2),
     "velocity": {"x": float(i), "y": -float(i)}, "hist": [i, i + 1, i + 2]}) for i in range(n)])
xy = pa.struct([("x", pa.float64()), ("y", pa.float64())])
out = {}
for name, f in [("get", lambda: variant_get(col, "$.velocity.y", pa.float64())),
                ("replace", lambda: variant_replace(col, "$.velocity.y", pa.scalar(1.0))),
                ("set_insert", lambda: variant_set(col, "$.processed", pa.scalar(True))),
                ("get_date", lambda: variant_get(typed, "$.day", pa.date32())),
                ("get_decimal", lambda: variant_get(typed, "$.price", pa.decimal128(12, 2))),
                ("get_struct", lambda: variant_get(typed, "$.velocity", xy)),
                ("get_list", lambda: variant_get(typed, "$.hist", pa.list_(pa.int64()))),
                ("get_map", lambda: variant_get(typed, "$.velocity",
                                                pa.map_(pa.string(), pa.float64())))]:
    best = None
    for _ in range(3):
        t = time.process_time()
        f()
        d = time.process_time() - t
        best = d if best is None else min(best, d)
    out[name] = round(best, 3)
print(json.dumps(out))
'''


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=100_000)
    args = ap.parse_args()
    venv = Path(os.environ.get("PAIMON_RS_PYPAIMON_VENV", Path.home() / ".cache/paimon_rs/venv-pypaimon"))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    ours = subprocess.run([sys.executable, "-c", BODY, "paimon_rs", str(args.rows)], check=True,
                          capture_output=True, text=True).stdout
    theirs = subprocess.run([str(venv / "bin/python"), "-c", BODY, "pypaimon", str(args.rows)], check=True,
                            capture_output=True, text=True, env=env).stdout
    a, b = json.loads(ours), json.loads(theirs)
    print(f"{args.rows} rows, CPU seconds (best of 3)")
    print("| call | paimon_rs | pypaimon |")
    print("|---|---|---|")
    for k in a:
        print(f"| {k} | {a[k]} | {b[k]} |")


if __name__ == "__main__":
    main()
