"""Table maintenance: removing what crashed writers leave behind (``Table.remove_orphan_files``)."""

from __future__ import annotations

import datetime as _dt
import time
from dataclasses import dataclass, field
from typing import List, Union

from paimon_rs import _core
from paimon_rs.exceptions import InvalidArgumentError

#: Java Paimon's default for ``RemoveOrphanFilesAction``: files younger than a day are kept.
DEFAULT_OLDER_THAN = _dt.timedelta(days=1)

OlderThan = Union[_dt.timedelta, _dt.datetime, int, None]


@dataclass(frozen=True)
class RemoveOrphanFilesResult:
    """What ``remove_orphan_files`` removed (or, with ``dry_run``, would remove)."""

    files: List[str] = field(default_factory=list)
    """Absolute paths of the removed files."""
    bytes: int = 0
    """Their total size."""
    directories: List[str] = field(default_factory=list)
    """Empty bucket and partition directories removed after their files."""
    dry_run: bool = False

    def __len__(self) -> int:
        return len(self.files)


def older_than_millis(older_than: OlderThan) -> int:
    """The limit as epoch millis: a ``timedelta`` counts back from now, a ``datetime`` is a point
    in time (a naive one is local time, as ``datetime.timestamp``), an ``int`` is epoch millis,
    ``None`` is one day ago."""
    if older_than is None:
        older_than = DEFAULT_OLDER_THAN
    if isinstance(older_than, _dt.timedelta):
        return int(time.time() * 1000) - int(older_than.total_seconds() * 1000)
    if isinstance(older_than, _dt.datetime):
        return int(older_than.timestamp() * 1000)
    if isinstance(older_than, int) and not isinstance(older_than, bool):
        return older_than
    raise InvalidArgumentError(
        f"remove_orphan_files: older_than must be a datetime.timedelta, a datetime or epoch "
        f"millis (int), not {type(older_than).__name__}"
    )


def remove_orphan_files(core: _core.Table, older_than: OlderThan, dry_run: bool) -> RemoveOrphanFilesResult:
    """Run the clean on a native table; see ``Table.remove_orphan_files``."""
    files, dirs = core.remove_orphan_files(older_than_millis(older_than), bool(dry_run))
    return RemoveOrphanFilesResult(
        files=[p for p, _ in files], bytes=sum(b for _, b in files), directories=dirs, dry_run=bool(dry_run)
    )


__all__ = ["DEFAULT_OLDER_THAN", "RemoveOrphanFilesResult", "older_than_millis", "remove_orphan_files"]

