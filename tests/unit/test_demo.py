"""The README's demo (examples/demo.py, run by scripts/demo.sh) works on every build."""

import os
import subprocess
import sys

DEMO = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "demo.py")


def test_demo_writes_upserts_compacts_and_reads(tmp_path):
    out = subprocess.run([sys.executable, DEMO, "--warehouse", str(tmp_path)], capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "after compaction (snapshot 3)" in out.stdout
    assert out.stdout.rstrip().endswith("demo OK")
