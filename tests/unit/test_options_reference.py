"""The options reference page and ``paimon_rs.options`` agree with the one declaration of table
options in Rust (crates/paimon-rs-core/src/options/defs.rs)."""

from __future__ import annotations

import os
import subprocess
import sys

from paimon_rs import _core
from paimon_rs.options import ConfigOption, CoreOptions

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _defs():
    defs, _ = _core.option_defs()
    return {d[0]: d for d in defs}


def test_reference_page_is_generated_from_the_declaration():
    r = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "gen_options_doc.py"), "--check"],
                       capture_output=True, text=True, env={**os.environ, "PYTHONPATH": os.path.join(ROOT, "python")})
    assert r.returncode == 0, r.stderr


def test_pypaimon_constants_are_declared_in_rust():
    """Every key ``paimon_rs.options.CoreOptions`` has a constant for is declared (so a key
    pypaimon users type is never an unknown one), with the same type where both say."""
    defs = _defs()
    kinds = {"bool": "boolean", "int": "int", "memory": "memory size", "duration": "duration"}
    for name, opt in vars(CoreOptions).items():
        if not isinstance(opt, ConfigOption):
            continue
        assert opt.key() in defs, f"CoreOptions.{name} ({opt.key()}) is not declared in options/defs.rs"
        want = kinds.get(opt.value_type())
        got = defs[opt.key()][1]
        if want and defs[opt.key()][3] == "honoured" and got not in ("enum",):
            assert got in (want, "long" if want == "int" else want), (opt.key(), want, got)


def test_honoured_defaults_agree_with_pypaimon_constants():
    defs = _defs()
    from paimon_rs.options import MemorySize, _parse_duration
    for opt in vars(CoreOptions).values():
        if not isinstance(opt, ConfigOption) or not opt.has_default_value():
            continue
        d = defs[opt.key()]
        if d[3] != "honoured" or d[2] is None or opt.value_type() == "map":
            continue
        default = opt.default_value()
        if opt.value_type() == "memory":
            assert MemorySize.parse(d[2]).get_bytes() == default.get_bytes(), opt.key()
        elif opt.value_type() == "duration":
            assert _parse_duration(opt.key(), d[2]) == default, opt.key()
        elif opt.value_type() == "bool":
            assert d[2] == str(default).lower(), opt.key()
        elif opt.value_type() == "int" and d[2].lstrip("-").isdigit():
            assert int(d[2]) == default, opt.key()
        elif opt.value_type() == "str":
            assert d[2].lower() == str(default).lower(), opt.key()
