"""A few hundred fuzzed write inputs (random schemas and values with nulls, NaN, extremes; nulls
in keys, wrong types, unknown / missing / duplicate columns, widenings, invalid UTF-8 and offsets
built with ``pa.Array.from_buffers``), all run in one subprocess (a crash is its exit code; the
cases after it go on in a new one). Each is either accepted and read back exactly, or refused with
a PaimonRsError subclass, as fuzz_cases.MUTATIONS expects.

CI: 400 cases (275 that main must pass, 125 that need branch inputs).
Long (``-m long``): ``PAIMON_RS_RELIABILITY_FUZZ_CASES`` (default 5000).
"""

from __future__ import annotations

import collections
import os
from typing import Any, Dict

import pytest

from fuzz_cases import MUTATIONS, NEEDS_INPUTS
from rel_helpers import env_int, figure, run_batched


def fuzz(tmp_path: Any, n: int, seed: int, with_inputs_fixes: bool) -> Dict[str, Any]:
    os.makedirs(tmp_path / "spill")
    wanted = [i for i in range(n) if (list(MUTATIONS)[i % len(MUTATIONS)] in NEEDS_INPUTS) == with_inputs_fixes]
    results = run_batched("fuzz", {"warehouse": str(tmp_path / "wh"), "seed": seed, "cases": wanted}, len(wanted),
                          str(tmp_path / "spill"))
    bad = []
    outcomes: Dict[str, int] = collections.Counter()
    for pos, i in enumerate(wanted):
        r = results.get(pos)
        if r is None or "crash" in r:
            bad.append(f"case {i}: worker crashed: {r}")
            continue
        outcomes[r["outcome"]] += 1
        expect = r.get("expect")
        if r["outcome"] == "foreign error":
            bad.append(f"case {i} ({r['mutation']}): {r['cls']} is not a PaimonRsError: {r['msg']}\n{r['tb']}")
        elif r["outcome"] == "accepted" and not r["exact"]:
            bad.append(f"case {i} ({r['mutation']}): {r['detail']}")
        elif r["outcome"] == "refused" and expect == "accept":
            bad.append(f"case {i} ({r['mutation']}): refused ({r['cls']}: {r['msg']})")
    assert not bad, f"{len(bad)} of {len(wanted)} fuzzed inputs misbehaved:\n" + "\n".join(bad[:20])
    return {"cases": len(wanted), **dict(outcomes), "crashes": 0, "failures": 0}


def test_fuzzed_inputs(tmp_path):
    figure("fuzzed inputs", **fuzz(tmp_path, 400, seed=9, with_inputs_fixes=False))


def test_fuzzed_inputs_needing_input_checks(tmp_path):
    figure("fuzzed inputs (input checks)", **fuzz(tmp_path, 400, seed=9, with_inputs_fixes=True))


@pytest.mark.long
def test_fuzzed_inputs_long(tmp_path):
    n = env_int("PAIMON_RS_RELIABILITY_FUZZ_CASES", 5000)
    figure("fuzzed inputs (long)", **fuzz(tmp_path, n, seed=env_int("PAIMON_RS_RELIABILITY_SEED", 99),
                                           with_inputs_fixes=False))


@pytest.mark.long
def test_fuzzed_inputs_needing_input_checks_long(tmp_path):
    n = env_int("PAIMON_RS_RELIABILITY_FUZZ_CASES", 5000)
    figure("fuzzed inputs, input checks (long)", **fuzz(tmp_path, n, seed=env_int("PAIMON_RS_RELIABILITY_SEED", 99),
                                                         with_inputs_fixes=True))
