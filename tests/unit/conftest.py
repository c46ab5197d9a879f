from __future__ import annotations

import pytest

from paimon_rs import CatalogFactory, Schema

from unit_helpers import PK_SCHEMA


@pytest.fixture
def catalog(tmp_path):
    c = CatalogFactory.create({"warehouse": str(tmp_path / "wh")})
    c.create_database("db", True)
    return c


@pytest.fixture
def pk_table(catalog):
    schema = Schema.from_pyarrow_schema(PK_SCHEMA, partition_keys=["dt"], primary_keys=["dt", "id"],
                                        options={"bucket": "2"})
    catalog.create_table("db.t", schema, False)
    return catalog.get_table("db.t")
