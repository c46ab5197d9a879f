"""Dropped and expired partitions as Java Paimon sees them: our OVERWRITE snapshots read the same
in Java, and Java writes on top of them."""

from __future__ import annotations

import pyarrow as pa
import pytest
from test_java_interop import DB, _tname, check, java_read, java_write, ours_create, ours_read

from paimon_rs import CatalogFactory

pytestmark = pytest.mark.java


def test_java_reads_after_drop_partitions_and_expiry(java, tmp_path, request):
    t, wh = _tname(request), tmp_path
    ours_create(wh, t, [("dt", "STRING", pa.string()), ("id", "INT", pa.int32()), ("v", "STRING", pa.string())],
                ["dt", "id"], ["dt"], {"bucket": "2", "partition.expiration-time": "1000 d",
                                       "partition.timestamp-formatter": "yyyyMMdd"})
    table = CatalogFactory.create({"warehouse": str(wh)}).get_table(f"{DB}.{t}")
    rows = [[d, i, f"{d}-{i}"] for d in ("19990101", "20990101", "a", "b") for i in range(5)]
    java_write(java, wh, t, rows)
    table.drop_partitions([{"dt": "a"}, {"dt": "b"}])
    assert table.expire_partitions() == [{"dt": "19990101"}]
    left = [r for r in rows if r[0] == "20990101"]
    types = ["STRING NOT NULL", "INT NOT NULL", "STRING"]
    check(java_read(java, wh, t), left, types, "Java reads after our drop and expiry")
    java_write(java, wh, t, [["a", 1, "again"]])
    check(ours_read(wh, t), left + [["a", 1, "again"]], types, "paimon_rs reads Java's write after the drop")
