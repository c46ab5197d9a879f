#!/usr/bin/env bash
# Set everything up, then run every check: rustfmt, clippy, Rust tests, ruff, the docs site
# (scripts/build_docs.sh), pytest (unit, property, and compat against pypaimon 2.1.0 in a venv of
# its own), and a smoke run of the benchmarks. CI (.ci/run) runs exactly this.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
start=$(date +%s)
step() { echo; echo "== $* ($(( $(date +%s) - start ))s)"; }

step "cargo fmt --check"
cargo fmt --all -- --check

source "$ROOT/scripts/setup.sh"

step "cargo clippy -D warnings"
cargo clippy --release --workspace --all-targets --quiet -- -D warnings

step "cargo test"
log="$(mktemp)"
if ! cargo test --release --workspace >"$log" 2>&1; then
  tail -n 80 "$log"; rm -f "$log"; exit 1
fi
grep -E "^test result:" "$log" | grep -v " 0 passed; 0 failed; 0 ignored; 0 measured" || true
rm -f "$log"

step "ruff"
"$(dirname "$PAIMON_RS_VENV_PY")/ruff" check python tests benches examples

step "docs"
# the site (mkdocs build --strict, API reference from the docstrings) in a venv of its own
bash "$ROOT/scripts/build_docs.sh"

step "pytest"
# The default selection (pyproject: not long, not cluster) includes the object-store variants
# that CI runs: S3 on moto (-m "s3 and not long") and GCS on gcp-storage-emulator
# (-m "gcs and not long"); pass -m to run only those, e.g. scripts/test.sh -m "(s3 or gcs) and not long".
"$PAIMON_RS_VENV_PY" -m pytest -q --durations=25 tests "$@"

step "benchmark smoke"
"$PAIMON_RS_VENV_PY" benches/bench_foundation.py --smoke

step "all checks passed"
