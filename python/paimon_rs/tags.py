"""A table's tags with pypaimon's names: ``table.tag_manager()`` (:class:`TagManager`) and
:class:`Tag` (a ``Snapshot`` with the tag's create time and retention).

    tm = table.tag_manager()
    tm.create_tag(table.snapshot_manager().get_latest_snapshot(), "v1", time_retained="7 d")
    tag = tm.get("v1")          # Tag or None
    tag.id, tag.tag_create_time, tag.tag_time_retained

The operations are the table's (``Table.create_tag``, ``replace_tag``, ``delete_tag``,
``rename_tag``): tag files Java reads, and ``delete_tag`` / ``replace_tag`` delete the files only
the old tag kept, as Java's ``TagManager`` does (pypaimon deletes the tag file alone).
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, List, Optional

from paimon_rs import _core
from paimon_rs.exceptions import InvalidArgumentError
from paimon_rs.snapshot import Snapshot

if TYPE_CHECKING:
    from paimon_rs.table import Table


@dataclass(frozen=True, repr=False)
class Tag(Snapshot):
    """A tag file: the tagged snapshot's fields, plus ``tag_create_time`` (a naive local
    ``datetime``) and ``tag_time_retained`` (a ``timedelta``), both None for a tag without
    retention (pypaimon's ``Tag``)."""

    tag_create_time: Optional[datetime.datetime] = None
    tag_time_retained: Optional[datetime.timedelta] = None

    @staticmethod
    def from_snapshot_and_tag_ttl(snapshot: Snapshot,
                                  tag_time_retained: Optional[datetime.timedelta],
                                  tag_create_time: Optional[datetime.datetime]) -> Tag:
        """A tag of ``snapshot`` (its every field; a pypaimon ``Snapshot`` is taken too)
        created at ``tag_create_time`` and kept for ``tag_time_retained`` (None: forever):
        pypaimon's and Java's ``Tag.fromSnapshotAndTagTtl``."""
        missing = [f.name for f in fields(Snapshot) if not hasattr(snapshot, f.name)]
        if missing:
            raise InvalidArgumentError(
                f"from_snapshot_and_tag_ttl takes a Snapshot, got {type(snapshot).__name__} "
                f"without {', '.join(missing)}")
        return Tag(**{f.name: getattr(snapshot, f.name) for f in fields(Snapshot)},
                   tag_create_time=tag_create_time, tag_time_retained=tag_time_retained)

    def trim_to_snapshot(self) -> Snapshot:
        """The tagged snapshot without the tag's fields."""
        return Snapshot(**{f.name: getattr(self, f.name) for f in fields(Snapshot)})

    def __repr__(self) -> str:
        return (f"Tag({Snapshot.__repr__(self)}, tag_create_time={self.tag_create_time}, "
                f"tag_time_retained={self.tag_time_retained})")


def _tag(snapshot_json: str, created: Optional[str], retained_ms: Optional[int]) -> Tag:
    snap = Snapshot.from_json(snapshot_json)
    create_time = None
    if created is not None:
        whole, _, frac = created.partition(".")
        create_time = datetime.datetime.strptime(whole, "%Y-%m-%dT%H:%M:%S").replace(
            microsecond=int((frac + "000000")[:6]) if frac else 0)
    retained = None if retained_ms is None else datetime.timedelta(milliseconds=retained_ms)
    return Tag(**{f.name: getattr(snap, f.name) for f in fields(Snapshot)},
               tag_create_time=create_time, tag_time_retained=retained)


def _check_name(name: str, what: str = "Tag name") -> None:
    if not name or name.isspace():
        raise InvalidArgumentError(f"{what} shouldn't be blank.")


class TagManager:
    """The tags of one table (on the branch the handle is on), pypaimon's ``TagManager``
    members. Made by ``Table.tag_manager()``."""

    def __init__(self, table: Table):
        self._table = table

    def tag_directory(self) -> str:
        """The directory of the tag files (``<table>/tag``, or the branch's)."""
        branch = self._table.current_branch()
        root = self._table.table_path.rstrip("/")
        return f"{root}/tag" if branch == "main" else f"{root}/branch/branch-{branch}/tag"

    def tag_path(self, tag_name: str) -> str:
        """The file of tag ``tag_name`` (``tag-<name>``)."""
        return f"{self.tag_directory()}/tag-{tag_name}"

    def tag_exists(self, tag_name: str) -> bool:
        return tag_name in self._table.list_tags()

    def get(self, tag_name: str) -> Optional[Tag]:
        """The tag, or None if there is none of that name."""
        _check_name(tag_name)
        for name, snap, created, retained in _core.tags_json(self._table._core):
            if name == tag_name:
                return _tag(snap, created, retained)
        return None

    def get_or_throw(self, tag_name: str) -> Tag:
        """The tag; ``InvalidArgumentError`` (a ``ValueError``) if it does not exist."""
        tag = self.get(tag_name)
        if tag is None:
            raise InvalidArgumentError(f"Tag '{tag_name}' doesn't exist.")
        return tag

    def list_tags(self) -> List[str]:
        """The tag names, sorted."""
        return self._table.list_tags()

    def create_tag(self, snapshot: Snapshot, tag_name: str, ignore_if_exists: bool = False,
                   time_retained: Optional[str] = None) -> None:
        """Tag ``snapshot`` (``Table.create_tag`` with its id); ``InvalidArgumentError`` if the
        tag exists and not ``ignore_if_exists``."""
        _check_name(tag_name)
        self._table.create_tag(tag_name, snapshot.id, ignore_if_exists=ignore_if_exists,
                               time_retained=time_retained)

    def replace_tag(self, snapshot: Snapshot, tag_name: str, time_retained: Optional[str] = None) -> None:
        """Point the existing tag at ``snapshot`` (``Table.replace_tag``)."""
        _check_name(tag_name)
        self._table.replace_tag(tag_name, snapshot.id, time_retained)

    def delete_tag(self, tag_name: str) -> bool:
        """Delete the tag (``Table.delete_tag``); False if it did not exist."""
        _check_name(tag_name)
        return self._table.delete_tag(tag_name)

    def rename_tag(self, old_name: str, new_name: str) -> None:
        """Rename a tag (``Table.rename_tag``)."""
        _check_name(old_name, "Old tag name")
        _check_name(new_name, "New tag name")
        self._table.rename_tag(old_name, new_name)


__all__ = ["Tag", "TagManager"]
