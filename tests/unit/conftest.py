from __future__ import annotations

import pytest

from paimon_rs import Schema

from unit_helpers import PK_SCHEMA


@pytest.fixture
def catalog(warehouse):
    """A catalog with database ``db`` on the test's warehouse (local disk, or local and S3 for
    tests marked ``stores``: tests/stores.py)."""
    return warehouse.catalog()


@pytest.fixture
def pk_table(catalog):
    schema = Schema.from_pyarrow_schema(PK_SCHEMA, partition_keys=["dt"], primary_keys=["dt", "id"],
                                        options={"bucket": "2"})
    catalog.create_table("db.t", schema, False)
    return catalog.get_table("db.t")
