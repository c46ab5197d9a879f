#!/usr/bin/env bash
# Build the release wheel (abi3: one wheel for CPython 3.9+; manylinux tag as maturin's audit
# finds it on this machine — the release workflow builds in manylinux_2_28 containers) into
# DIR (default target/wheels), then install it apart from the source tree and smoke-test it
# (scripts/wheel_smoke.py). Reuses setup.sh's venv and cargo target directory.
#
#   bash scripts/build_wheel.sh [DIR]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# inside scripts/test.sh (pytest) the venv is set up and must not be rebuilt under the tests
if [ -z "${PAIMON_RS_VENV_PY:-}" ]; then
  source "$ROOT/scripts/setup.sh" >/dev/null
fi
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${PAIMON_RS_CACHE:-$HOME/.cache/paimon_rs}/target}"
OUT="${1:-$ROOT/target/wheels}"
mkdir -p "$OUT"
cd "$ROOT"
"$(dirname "$PAIMON_RS_VENV_PY")/maturin" build --release --quiet --out "$OUT"
WHEEL="$(ls -t "$OUT"/paimon_rs-*.whl | head -1)"
echo "built $WHEEL"
SITE="$(mktemp -d)"
trap 'rm -rf "$SITE"' EXIT
"$PAIMON_RS_VENV_PY" -m pip install --quiet --no-deps --target "$SITE" "$WHEEL"
# the wheel's package, not the editable source tree of the venv
(cd "$SITE" && PYTHONPATH="$SITE" "$PAIMON_RS_VENV_PY" "$ROOT/scripts/wheel_smoke.py")
