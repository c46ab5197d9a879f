"""Command-line frictions of issue 31: ``paimon-rs --version``."""

from __future__ import annotations

import subprocess
import sys
from typing import Optional

import paimon_rs
from paimon_rs.cli import main


def cli(*args: str, cwd: Optional[str] = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "paimon_rs", *args], capture_output=True, text=True,
                          timeout=300, cwd=cwd)


def test_version(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"paimon-rs {paimon_rs.__version__}\n"
    p = cli("--version")
    assert (p.returncode, p.stdout, p.stderr) == (0, f"paimon-rs {paimon_rs.__version__}\n", "")
