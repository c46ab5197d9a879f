#!/usr/bin/env bash
# Set everything up, then run the demo: a local warehouse with a primary-key table that is
# written, upserted, deleted from and read back.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/setup.sh"
"$PAIMON_RS_VENV_PY" "$ROOT/examples/demo.py" "$@"
