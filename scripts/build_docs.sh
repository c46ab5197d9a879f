#!/usr/bin/env bash
# Build the docs site (mkdocs.yml: the manual in docs/ plus an API reference that mkdocstrings
# generates from the docstrings of python/paimon_rs, read statically by griffe: the compiled
# extension need not be built) with `mkdocs build --strict`, into a temp dir (default) or DIR.
# The toolchain lives in a venv of its own, $PAIMON_RS_CACHE/venv-docs (default
# ~/.cache/paimon_rs/venv-docs), installed from the pinned docs/requirements.txt and reinstalled
# when that file changes; the test venv (setup.sh) is never touched.
#
#   bash scripts/build_docs.sh [DIR]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${PAIMON_RS_CACHE:-$HOME/.cache/paimon_rs}"
VENV="$CACHE/venv-docs"
REQ="$ROOT/docs/requirements.txt"
STAMP="$VENV/.requirements.sha256"
want="$(sha256sum "$REQ" | cut -d' ' -f1)"
if [ ! -x "$VENV/bin/mkdocs" ] || [ "$(cat "$STAMP" 2>/dev/null)" != "$want" ]; then
  echo "installing the docs toolchain into $VENV"
  mkdir -p "$CACHE"
  python3 -m venv "$VENV"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r "$REQ"
  echo "$want" >"$STAMP"
fi
if [ -n "${1:-}" ]; then
  OUT="$1"
else
  OUT="$(mktemp -d)"
  trap 'rm -rf "$OUT"' EXIT
fi
cd "$ROOT"
log="$(mktemp)"
if ! NO_MKDOCS_2_WARNING=1 "$VENV/bin/mkdocs" build --strict --config-file "$ROOT/mkdocs.yml" \
    --site-dir "$OUT" >"$log" 2>&1; then
  grep -v '^INFO' "$log" || true; rm -f "$log"; exit 1
fi
rm -f "$log"
echo "docs built (mkdocs build --strict): ${1:-a temp dir, removed}"
