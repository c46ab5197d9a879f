#!/usr/bin/env bash
# One-time (and idempotent) set-up: a Python venv with the dev requirements, and paimon_rs
# built (release) and installed into it. Sourced by demo.sh and test.sh.
#
#   PAIMON_RS_CACHE   where the venvs and the cargo target dir live (default ~/.cache/paimon_rs),
#                     so that a fresh clone on the same machine reuses earlier builds.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${PAIMON_RS_CACHE:-$HOME/.cache/paimon_rs}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$CACHE/target}"
VENV="${PAIMON_RS_VENV:-$CACHE/venv}"
PYTHON="${PYTHON:-python3}"
mkdir -p "$CACHE"

if ! command -v cargo >/dev/null 2>&1; then
  echo "cargo not found: install a stable Rust toolchain (https://rustup.rs)" >&2
  exit 1
fi

# Java Paimon is the reference of the compat suite (tests/compat/java_env.py fetches its jars
# from PyPI and compiles the test driver with javac on first use)
if ! command -v javac >/dev/null 2>&1 && [ -z "${JAVA_HOME:-}" ]; then
  if command -v apt-get >/dev/null 2>&1; then
    echo "== installing openjdk-17-jdk-headless (javac not found)"
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jdk-headless >/dev/null
  else
    echo "javac not found: install a JDK 17 (the Java compat tests need it)" >&2
    exit 1
  fi
fi

req_hash="$(cat "$ROOT/requirements-dev.txt" | sha256sum | cut -c1-16)"
if [ ! -x "$VENV/bin/python" ] || [ "$(cat "$VENV/.req-hash" 2>/dev/null)" != "$req_hash" ]; then
  echo "== creating venv $VENV"
  rm -rf "$VENV"
  "$PYTHON" -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --upgrade pip
  "$VENV/bin/pip" install --quiet -r "$ROOT/requirements-dev.txt"
  echo "$req_hash" > "$VENV/.req-hash"
fi

echo "== building paimon_rs (release) into $VENV"
(cd "$ROOT" && VIRTUAL_ENV="$VENV" PATH="$VENV/bin:$PATH" \
  "$VENV/bin/maturin" develop --release --quiet 2>&1 | grep -v "^📦\|^🔗\|^🐍\|^⚠️  Warning: pip" || true)
"$VENV/bin/python" -c "import paimon_rs, sys; print('paimon_rs', paimon_rs.__version__, 'on Python', sys.version.split()[0])"

export PAIMON_RS_VENV_PY="$VENV/bin/python"
# pypaimon 2.1.0 (pyarrow<20) for the compat tests and benchmarks lives in a venv of its own
export PAIMON_RS_PYPAIMON_VENV="${PAIMON_RS_PYPAIMON_VENV:-$CACHE/venv-pypaimon}"
