"""Warehouses on local disk, on S3 and on GCS for the table suites (issue 14: "the table suites
parametrised over local and S3"; GCS for a representative subset).

A test that takes the ``warehouse`` fixture (tests/conftest.py), or a fixture built on it such as
the unit suites' ``catalog``, runs on local disk; marked ``@pytest.mark.stores`` (a module's
``pytestmark`` or one test) it runs once per store: ``local`` and ``s3`` (moto's S3 server on
127.0.0.1, one per session). ``@pytest.mark.stores("local", "s3-long")`` runs the S3 variant only
under ``-m long`` (heavy tests, to keep CI short). Every S3 variant is marked ``s3``: ``-m s3``
selects them. GCS (gcp-storage-emulator, tests/gcs_server.py) is asked for by name:
``@pytest.mark.stores("local", "s3", "gcs")`` (or ``"gcs-long"``); its variants are marked ``gcs``.

The functions below look at files under a warehouse the same way on every store: a path is a
local path, an ``s3://bucket/key`` URI of the session's moto server (with boto3) or a
``gs://bucket/key`` URI of the session's GCS emulator (with its JSON API), so a test body written
with them runs unchanged on all.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

import pyarrow as pa

from gcs_server import GcsServer
from s3_server import MotoServer

# The session's servers, set by the ``moto`` and ``gcs`` fixtures (tests/conftest.py).
SERVER: Optional[MotoServer] = None
GCS_SERVER: Optional[GcsServer] = None


@dataclass
class Warehouse:
    """A warehouse URI, the catalog options that reach it, and the store's name."""

    uri: str
    options: Dict[str, str] = field(default_factory=dict)
    store: str = "local"

    @property
    def is_s3(self) -> bool:
        return self.store == "s3"

    @property
    def is_gcs(self) -> bool:
        return self.store == "gcs"

    @property
    def is_remote(self) -> bool:
        return self.store != "local"

    def catalog(self, **extra: str) -> Any:
        """A catalog on this warehouse with database ``db``."""
        from paimon_rs import CatalogFactory

        c = CatalogFactory.create({"warehouse": self.uri, **self.options, **extra})
        c.create_database("db", True)
        return c


class _S3:
    """A bucket of the session's moto server, through boto3."""

    def __init__(self, server: MotoServer) -> None:
        self.client = server.client()

    def list(self, bucket: str, prefix: str) -> List[Tuple[str, int]]:
        out: List[Tuple[str, int]] = []
        for page in self.client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
            out.extend((o["Key"], int(o["Size"])) for o in page.get("Contents", []))
        return out

    def get(self, bucket: str, key: str) -> bytes:
        return bytes(self.client.get_object(Bucket=bucket, Key=key)["Body"].read())

    def put(self, bucket: str, key: str, data: bytes) -> None:
        self.client.put_object(Bucket=bucket, Key=key, Body=data)

    def delete(self, bucket: str, key: str) -> None:
        self.client.delete_object(Bucket=bucket, Key=key)


class _Gcs:
    """A bucket of the session's GCS emulator, through its own JSON API."""

    def __init__(self, server: GcsServer) -> None:
        self.server = server

    def list(self, bucket: str, prefix: str) -> List[Tuple[str, int]]:
        return [(o["name"], int(o["size"])) for o in self.server.list(bucket, prefix)]

    def get(self, bucket: str, key: str) -> bytes:
        return self.server.get(bucket, key)

    def put(self, bucket: str, key: str, data: bytes) -> None:
        status = self.server.put(bucket, key, data)
        if status != 200:
            raise OSError(f"gs://{bucket}/{key}: upload answered {status}")

    def delete(self, bucket: str, key: str) -> None:
        self.server.delete(bucket, key)


def _s3(path: str) -> Optional[Tuple[Any, str, str]]:
    """(store, bucket, key) of an ``s3://`` or ``gs://`` path of the session's servers, else None
    (a local path)."""
    scheme, sep, rest = path.partition("://")
    if not sep or scheme == "file":
        return None
    bucket, _, key = rest.partition("/")
    if scheme in ("s3", "s3a"):
        if SERVER is None:
            raise RuntimeError(f"{path}: no S3 server in this session")
        return _S3(SERVER), bucket, key
    if scheme in ("gs", "gcs"):
        if GCS_SERVER is None:
            raise RuntimeError(f"{path}: no GCS server in this session")
        return _Gcs(GCS_SERVER), bucket, key
    raise RuntimeError(f"{path}: no test server for {scheme}://")


def _keys(store: Any, bucket: str, prefix: str) -> List[str]:
    return [k for k, _ in store.list(bucket, prefix)]


def join(path: str, *parts: str) -> str:
    return "/".join([path.rstrip("/"), *parts])


def walk_files(path: str) -> List[str]:
    """Every file under ``path`` (recursively), as full paths, sorted."""
    s3 = _s3(path)
    if s3 is None:
        return sorted(os.path.join(d, f) for d, _, fs in os.walk(path) for f in fs)
    store, bucket, key = s3
    prefix = key.rstrip("/") + "/"
    return sorted(f"{path.split('://', 1)[0]}://{bucket}/{k}" for k in _keys(store, bucket, prefix))


def usage(path: str) -> Tuple[int, int]:
    """(files, bytes) under ``path``."""
    s3 = _s3(path)
    if s3 is None:
        files = walk_files(path)
        return len(files), sum(os.path.getsize(f) for f in files)
    store, bucket, key = s3
    sizes = [n for _, n in store.list(bucket, key.rstrip("/") + "/")]
    return len(sizes), sum(sizes)


def listdir(path: str) -> List[str]:
    """The names directly under ``path`` (files and directories), sorted; [] if there is none."""
    s3 = _s3(path)
    if s3 is None:
        return sorted(os.listdir(path)) if os.path.isdir(path) else []
    store, bucket, key = s3
    prefix = key.rstrip("/") + "/"
    return sorted({k[len(prefix):].split("/", 1)[0] for k in _keys(store, bucket, prefix)})


def isdir(path: str) -> bool:
    """A directory on disk; on an object store, a prefix holding at least one object."""
    return bool(listdir(path)) if _s3(path) else os.path.isdir(path)


def exists(path: str) -> bool:
    """A file or directory on disk; on an object store, an object or a prefix holding one."""
    s3 = _s3(path)
    if s3 is None:
        return os.path.exists(path)
    store, bucket, key = s3
    return key in _keys(store, bucket, key) or isdir(path)


def read_bytes(path: str) -> bytes:
    s3 = _s3(path)
    if s3 is None:
        with open(path, "rb") as f:
            return f.read()
    store, bucket, key = s3
    return bytes(store.get(bucket, key))


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
    store, bucket, key = s3
    store.put(bucket, key, data)


def remove(path: str) -> None:
    s3 = _s3(path)
    if s3 is None:
        os.remove(path)
        return
    store, bucket, key = s3
    store.delete(bucket, key)


def snapshot_ids(table_path: str) -> List[int]:
    """The ids of the table's snapshot files, sorted."""
    return sorted(int(f.split("-", 1)[1]) for f in listdir(join(table_path, "snapshot"))
                  if f.startswith("snapshot-"))


def snapshots(table_path: str) -> List[Dict[str, Any]]:
    """The table's snapshot files (JSON), oldest first."""
    return [read_json(join(table_path, "snapshot", f"snapshot-{i}")) for i in snapshot_ids(table_path)]
