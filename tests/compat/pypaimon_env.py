"""The reference implementation (pypaimon 2.1.0) in a venv of its own.

pypaimon 2.1.0 needs pyarrow<20, so it cannot share the interpreter that runs
paimon_rs. This module creates ``<repo>/.venv-pypaimon`` (git-ignored) from
``requirements-pypaimon.txt`` once, reuses it while the marker file inside it
matches the requirements (and the Python version), and runs
``pypaimon_driver.py`` in it. Data crosses as Arrow IPC files.

    from pypaimon_env import run_pypaimon
    run_pypaimon("read", {"warehouse": wh, "table": "db.t", "out": path})

Environment:
    PAIMON_RS_PYPAIMON_VENV   use this venv directory instead
    PAIMON_RS_PYPAIMON_PYTHON interpreter to create the venv with (default:
                              the running one)

CLI: ``python tests/compat/pypaimon_env.py`` creates/validates the venv and
prints the installed versions (CI can run it before pytest).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parents[1]
REQUIREMENTS = HERE / "requirements-pypaimon.txt"
DRIVER = HERE / "pypaimon_driver.py"
VENV_DIR = Path(os.environ.get("PAIMON_RS_PYPAIMON_VENV", REPO_ROOT / ".venv-pypaimon"))
MARKER_NAME = ".paimon-rs-requirements.sha256"


class PypaimonError(RuntimeError):
    """The driver failed; the message carries its stderr (the traceback)."""

    def __init__(self, cmd: str, returncode: int, stderr: str, stdout: str = ""):
        self.cmd = cmd
        self.returncode = returncode
        self.stderr = stderr
        self.stdout = stdout
        tail = stderr.strip()[-8000:]
        super().__init__(f"pypaimon driver command {cmd!r} failed (exit {returncode}):\n{tail}")


def _base_python() -> str:
    return os.environ.get("PAIMON_RS_PYPAIMON_PYTHON", sys.executable)


def _venv_python(venv: Path = VENV_DIR) -> Path:
    return venv / "bin" / "python"


def requirements_hash(base_python: str | None = None) -> str:
    """Hash of the requirements file plus the interpreter version used."""
    base_python = base_python or _base_python()
    ver = subprocess.run(
        [base_python, "-c", "import sys; print(sys.version)"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()
    h = hashlib.sha256()
    h.update(REQUIREMENTS.read_bytes())
    h.update(b"\0" + ver.encode())
    return h.hexdigest()


def _clean_env() -> dict[str, str]:
    env = dict(os.environ)
    for k in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP"):
        env.pop(k, None)
    env["PYTHONNOUSERSITE"] = "1"
    env.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    return env


def run_script_with_paimon_rs(python: str | os.PathLike, script: str, *args: str,
                              timeout: float = 600) -> dict:
    """Run ``script`` (``python -c``) in the pypaimon venv with this checkout's paimon_rs on its
    path; its last stdout line, JSON, is returned (a failure raises with its stderr)."""
    import paimon_rs

    env = _clean_env()
    env["PYTHONPATH"] = str(Path(paimon_rs.__file__).resolve().parents[1])
    out = subprocess.run([str(python), "-c", script, *args], capture_output=True, text=True,
                         env=env, timeout=timeout)
    if out.returncode != 0:
        raise PypaimonError("script", out.returncode, out.stderr, out.stdout)
    return json.loads(out.stdout.strip().splitlines()[-1])


def ensure_venv(verbose: bool = False) -> Path:
    """Create (or reuse) the pypaimon venv; returns its python executable.

    Idempotent and safe against concurrent callers (file lock next to the venv).
    """
    want = requirements_hash()
    marker = VENV_DIR / MARKER_NAME
    py = _venv_python()
    if py.exists() and marker.exists() and marker.read_text().strip() == want:
        return py
    VENV_DIR.parent.mkdir(parents=True, exist_ok=True)
    lock_path = VENV_DIR.parent / (VENV_DIR.name + ".lock")
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if py.exists() and marker.exists() and marker.read_text().strip() == want:
            return py
        t0 = time.monotonic()
        if VENV_DIR.exists():
            shutil.rmtree(VENV_DIR)
        out = None if verbose else subprocess.PIPE
        env = _clean_env()
        env.setdefault("PIP_DISABLE_PIP_VERSION_CHECK", "1")
        steps = [
            [_base_python(), "-m", "venv", str(VENV_DIR)],
            [str(py), "-m", "pip", "install", "--no-input", "-q", "-r", str(REQUIREMENTS)],
        ]
        for step in steps:
            proc = subprocess.run(step, stdout=out, stderr=out, text=True, env=env)
            if proc.returncode != 0:
                raise RuntimeError(
                    f"creating the pypaimon venv failed at {' '.join(step)}:\n"
                    f"{(proc.stdout or '')[-4000:]}\n{(proc.stderr or '')[-4000:]}")
        marker.write_text(want + "\n")
        if verbose:
            print(f"created {VENV_DIR} in {time.monotonic() - t0:.1f}s", file=sys.stderr)
    return py


def run_pypaimon(cmd: str, payload: dict[str, Any], timeout: float = 900) -> dict:
    """Run one driver command (or ``"batch"`` with ``{"ops": [...]}``) in the venv.

    Paths in ``payload`` must be absolute. Raises PypaimonError with the
    driver's stderr on failure.
    """
    py = ensure_venv()
    with tempfile.TemporaryDirectory(prefix="pypaimon-call-") as tmp:
        req = Path(tmp) / "request.json"
        resp = Path(tmp) / "response.json"
        req.write_text(json.dumps({"cmd": cmd, "payload": payload}, default=str))
        proc = subprocess.run(
            [str(py), str(DRIVER), str(req), str(resp)],
            capture_output=True, text=True, timeout=timeout, env=_clean_env(),
        )
        if proc.returncode != 0 or not resp.exists():
            raise PypaimonError(cmd, proc.returncode, proc.stderr, proc.stdout)
        return json.loads(resp.read_text())


def pypaimon_batch(ops: list[dict[str, Any]], timeout: float = 900) -> list[dict]:
    """Several driver commands in one subprocess. Each op is
    ``{"cmd": ..., "payload": {...}, "catch": bool}``; with ``catch`` a failing
    op yields ``{"error": ..., "error_type": ..., "traceback": ...}``."""
    return run_pypaimon("batch", {"ops": ops}, timeout=timeout)["results"]


# Arrow IPC helpers for the caller's side (the caller's pyarrow may be newer;
# the IPC file format is stable across versions).


def write_ipc(path: str | os.PathLike, table) -> str:
    import pyarrow as pa
    import pyarrow.ipc as ipc

    if isinstance(table, pa.RecordBatch):
        table = pa.Table.from_batches([table])
    with pa.OSFile(str(path), "wb") as f:
        with ipc.new_file(f, table.schema) as w:
            w.write_table(table)
    return str(path)


def read_ipc(path: str | os.PathLike):
    import pyarrow as pa
    import pyarrow.ipc as ipc

    with pa.OSFile(str(path), "rb") as f:
        return ipc.open_file(f).read_all()


def main() -> int:
    t0 = time.monotonic()
    marker = VENV_DIR / MARKER_NAME
    existed = marker.exists() and marker.read_text().strip() == requirements_hash()
    ensure_venv(verbose=True)
    print(json.dumps({
        "venv": str(VENV_DIR),
        "reused": existed,
        "seconds": round(time.monotonic() - t0, 1),
        "versions": run_pypaimon("versions", {}),
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
