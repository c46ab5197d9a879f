"""Fixtures shared by every test folder: the session's S3 and GCS servers and the ``warehouse``
fixture, on local disk or, for tests marked ``stores``, on local disk and on S3 (and GCS when
the marker names it; see stores.py)."""

from __future__ import annotations

import os
from typing import Iterator

import pytest

import stores
from gcs_server import GcsServer
from s3_server import MotoServer
from stores import Warehouse

STORE_PARAMS = {
    "local": pytest.param("local", id="local"),
    "s3": pytest.param("s3", id="s3", marks=pytest.mark.s3),
    "s3-long": pytest.param("s3", id="s3", marks=[pytest.mark.s3, pytest.mark.long]),
    "gcs": pytest.param("gcs", id="gcs", marks=pytest.mark.gcs),
    "gcs-long": pytest.param("gcs", id="gcs", marks=[pytest.mark.gcs, pytest.mark.long]),
}


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    mark = metafunc.definition.get_closest_marker("stores")
    if mark is None or "warehouse" not in metafunc.fixturenames:
        return
    names = mark.args or ("local", "s3")
    metafunc.parametrize("warehouse", [STORE_PARAMS[n] for n in names], indirect=True)


@pytest.fixture(scope="session")
def moto() -> Iterator[MotoServer]:
    """moto's S3 server on 127.0.0.1, one per session (started by the first test that needs it)."""
    pytest.importorskip("moto")
    pytest.importorskip("boto3")
    server = MotoServer()
    stores.SERVER = server
    yield server
    stores.SERVER = None
    server.stop()


@pytest.fixture(scope="session")
def gcs() -> Iterator[GcsServer]:
    """gcp-storage-emulator on 127.0.0.1, one per session (started by the first test that needs
    it; tests/gcs_server.py)."""
    pytest.importorskip("gcp_storage_emulator")
    server = GcsServer()
    stores.GCS_SERVER = server
    yield server
    stores.GCS_SERVER = None
    server.stop()


@pytest.fixture
def warehouse(request: pytest.FixtureRequest, tmp_path) -> Warehouse:
    """A warehouse on local disk (``tmp_path/wh``) or in a new bucket of the S3 or GCS server."""
    store = getattr(request, "param", os.environ.get("PAIMON_RS_TEST_STORE", "local"))
    if store == "local":
        return Warehouse(str(tmp_path / "wh"))
    if store == "gcs":
        gcs_server: GcsServer = request.getfixturevalue("gcs")
        return Warehouse(f"gs://{gcs_server.new_bucket()}/wh", gcs_server.options(), "gcs")
    server: MotoServer = request.getfixturevalue("moto")
    return Warehouse(f"s3://{server.new_bucket()}/wh", server.options(), "s3")
