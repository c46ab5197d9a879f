"""The wheel a user installs (issue 31): scripts/build_wheel.sh builds it (abi3, a manylinux
tag), installs it apart from the source tree and runs scripts/wheel_smoke.py on it (a relative
warehouse upserted until it compacts, the CLI's --version). Cached builds take seconds; without
a cargo toolchain the test is skipped."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(shutil.which("cargo") is None, reason="needs a Rust toolchain to build the wheel")
def test_the_release_wheel_is_abi3_manylinux_and_works_installed(tmp_path):
    env = dict(os.environ, PAIMON_RS_VENV_PY=os.environ.get("PAIMON_RS_VENV_PY", sys.executable))
    out = subprocess.run(["bash", str(ROOT / "scripts" / "build_wheel.sh"), str(tmp_path)],
                         capture_output=True, text=True, env=env, timeout=1800)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-4000:]
    wheels = [p.name for p in tmp_path.glob("paimon_rs-*.whl")]
    assert len(wheels) == 1, wheels
    assert re.fullmatch(r"paimon_rs-[\w.]+-cp39-abi3-manylinux_2_\d+_x86_64(\.manylinux\w+)*\.whl", wheels[0]), wheels
    assert "wheel smoke test passed" in out.stdout
    # installed apart: the smoke test imported the wheel's package, not this source tree
    assert str(ROOT / "python") not in out.stdout
