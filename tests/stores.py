"""Warehouses on local disk and on S3 for the table suites (issue 14: "the table suites
parametrised over local and S3").

A test that takes the ``warehouse`` fixture (tests/conftest.py), or a fixture built on it such as
the unit suites' ``catalog``, runs on local disk; marked ``@pytest.mark.stores`` (a module's
``pytestmark`` or one test) it runs once per store: ``local`` and ``s3`` (moto's S3 server on
127.0.0.1, one per session). ``@pytest.mark.stores("local", "s3-long")`` runs the S3 variant only
under ``-m long`` (heavy tests, to keep CI short). Every S3 variant is marked ``s3``: ``-m s3``
selects them.

The functions below look at files under a warehouse the same way on both stores: a path is a
local path or an ``s3://bucket/key`` URI of the session's moto server (with boto3), so a test body
written with them runs unchanged on both.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

import pyarrow as pa

from s3_server import MotoServer

# The session's moto server, set by the ``moto`` fixture (tests/conftest.py).
SERVER: Optional[MotoServer] = None


@dataclass
class Warehouse:
    """A warehouse URI, the catalog options that reach it, and the store's name."""

    uri: str
    options: Dict[str, str] = field(default_factory=dict)
    store: str = "local"

    @property
    def is_s3(self) -> bool:
        return self.store == "s3"

    def catalog(self, **extra: str) -> Any:
        """A catalog on this warehouse with database ``db``."""
        from paimon_rs import CatalogFactory

        c = CatalogFactory.create({"warehouse": self.uri, **self.options, **extra})
        c.create_database("db", True)
        return c


def _s3(path: str) -> Optional[tuple]:
    """(client, bucket, key) of an ``s3://`` path, else None."""
    if not path.startswith(("s3://", "s3a://")):
        return None
    if SERVER is None:
        raise RuntimeError(f"{path}: no S3 server in this session")
    bucket, _, key = path.split("://", 1)[1].partition("/")
    return SERVER.client(), bucket, key


def _keys(client: Any, bucket: str, prefix: str) -> List[str]:
    out: List[str] = []
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        out.extend(o["Key"] for o in page.get("Contents", []))
    return out


def join(path: str, *parts: str) -> str:
    return "/".join([path.rstrip("/"), *parts])


def walk_files(path: str) -> List[str]:
    """Every file under ``path`` (recursively), as full paths, sorted."""
    s3 = _s3(path)
    if s3 is None:
        return sorted(os.path.join(d, f) for d, _, fs in os.walk(path) for f in fs)
    client, bucket, key = s3
    prefix = key.rstrip("/") + "/"
    return sorted(f"{path.split('://', 1)[0]}://{bucket}/{k}" for k in _keys(client, bucket, prefix))


def usage(path: str) -> Tuple[int, int]:
    """(files, bytes) under ``path``."""
    s3 = _s3(path)
    if s3 is None:
        files = walk_files(path)
        return len(files), sum(os.path.getsize(f) for f in files)
    client, bucket, key = s3
    n = b = 0
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=key.rstrip("/") + "/"):
        for o in page.get("Contents", []):
            n, b = n + 1, b + int(o["Size"])
    return n, b


def listdir(path: str) -> List[str]:
    """The names directly under ``path`` (files and directories), sorted; [] if there is none."""
    s3 = _s3(path)
    if s3 is None:
        return sorted(os.listdir(path)) if os.path.isdir(path) else []
    client, bucket, key = s3
    prefix = key.rstrip("/") + "/"
    return sorted({k[len(prefix):].split("/", 1)[0] for k in _keys(client, bucket, prefix)})


def isdir(path: str) -> bool:
    """A directory on disk; on S3, a prefix holding at least one object."""
    return bool(listdir(path)) if _s3(path) else os.path.isdir(path)


def exists(path: str) -> bool:
    """A file or directory on disk; on S3, an object or a prefix holding one."""
    s3 = _s3(path)
    if s3 is None:
        return os.path.exists(path)
    client, bucket, key = s3
    return key in _keys(client, bucket, key) or isdir(path)


def read_bytes(path: str) -> bytes:
    s3 = _s3(path)
    if s3 is None:
        with open(path, "rb") as f:
            return f.read()
    client, bucket, key = s3
    return bytes(client.get_object(Bucket=bucket, Key=key)["Body"].read())


def read_text(path: str) -> str:
    return read_bytes(path).decode()


def read_json(path: str) -> Any:
    return json.loads(read_bytes(path))


def parquet(path: str) -> pa.BufferReader:
    """A data file as a source for ``pyarrow.parquet`` (read_table, read_metadata, ParquetFile)."""
    return pa.BufferReader(read_bytes(path))


def write_bytes(path: str, data: bytes) -> None:
    s3 = _s3(path)
    if s3 is None:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
        return
    client, bucket, key = s3
    client.put_object(Bucket=bucket, Key=key, Body=data)


def remove(path: str) -> None:
    s3 = _s3(path)
    if s3 is None:
        os.remove(path)
        return
    client, bucket, key = s3
    client.delete_object(Bucket=bucket, Key=key)


def snapshot_ids(table_path: str) -> List[int]:
    """The ids of the table's snapshot files, sorted."""
    return sorted(int(f.split("-", 1)[1]) for f in listdir(join(table_path, "snapshot"))
                  if f.startswith("snapshot-"))


def snapshots(table_path: str) -> List[Dict[str, Any]]:
    """The table's snapshot files (JSON), oldest first."""
    return [read_json(join(table_path, "snapshot", f"snapshot-{i}")) for i in snapshot_ids(table_path)]
