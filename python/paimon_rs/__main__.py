"""``python -m paimon_rs <command> ...``: the CLI of :mod:`paimon_rs.cli` (also installed as the
``paimon-rs`` console script). ``python -m paimon_rs --help`` lists the commands."""

from __future__ import annotations

import sys

from paimon_rs.cli import main
from paimon_rs.cli.compact import compact

__all__ = ["compact", "main"]

if __name__ == "__main__":
    sys.exit(main())
