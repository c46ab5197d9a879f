"""write's shuffle of Arrow IPC blobs: each (partition, bucket) slice of an input batch travels as
one binary row (stage 1), the writers decode the blobs (stage 2)."""

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import paimon_rs.spark as ps
from paimon_rs import CatalogFactory, _core

from spark_helpers import WIDE, create, data_files, orphans, plain_read, to_spark, wide_rows


@pytest.fixture
def catalog(tmp_path):
    return CatalogFactory.create({"warehouse": str(tmp_path / "wh")})


def _blobs(spec, batches):
    out = list(ps._blob_task(spec, iter(batches)))
    keys = [k for b in out for k in b.column(0).to_pylist()]
    blobs = [b.column(1)[i].as_buffer() for b in out for i in range(b.num_rows)]
    return out, keys, blobs


def test_blobs_are_slices_by_key_deterministic_and_bounded(catalog):
    """Stage 1 on its own (no Spark): every blob holds rows of one shuffle key only, in input
    order; together they are the input; the same input gives the same bytes; a slice larger
    than ``blob_bytes`` is cut; ``large`` gives ``large_binary`` (useLargeVarTypes)."""
    t = create(catalog, "db.blob_unit", WIDE, [], ["id"], bucket="4")
    data = wide_rows(range(2000), ["a"])
    batches = data.to_batches(max_chunksize=700)
    spec = ps._BlobSpec(table=t, columns=WIDE.names, identity_keys=ps._identity_keys(4), large=False)
    out, keys, blobs = _blobs(spec, batches)
    assert all(b.schema.field(1).type == pa.binary() for b in out)
    assert len(blobs) == len(keys) <= 3 * 4  # one per (input batch, bucket)
    _, bucket = _core.partition_bucket_of(t._core, data.select(["id"]).to_batches()[0])
    key_of_id = dict(zip(data.column("id").to_pylist(), pc.take(pa.array(ps._identity_keys(4)), bucket).to_pylist()))
    seen = []
    for k, blob in zip(keys, blobs):
        got = pa.ipc.open_stream(blob).read_all()
        assert got.schema.equals(WIDE)
        ids = got.column("id").to_pylist()
        assert {key_of_id[i] for i in ids} == {k}
        assert ids == sorted(ids)  # input order kept (the input ids increase)
        seen.append(got)
    back = pa.concat_tables(seen).sort_by("id")
    assert back.equals(data)
    # deterministic: a re-run of the map task yields the same bytes
    _, keys2, blobs2 = _blobs(spec, batches)
    assert keys2 == keys and [b.to_pybytes() for b in blobs2] == [b.to_pybytes() for b in blobs]
    # bounded: ~4 rows' worth of bytes per blob cuts each slice in blobs of a few rows
    small = ps._BlobSpec(table=t, columns=WIDE.names, identity_keys=ps._identity_keys(4), large=True,
                         blob_bytes=4 * (data.nbytes // data.num_rows))
    out, keys, blobs = _blobs(small, batches)
    assert all(b.schema.field(1).type == pa.large_binary() for b in out)
    sizes = [pa.ipc.open_stream(b).read_all().num_rows for b in blobs]
    assert sum(sizes) == 2000 and max(sizes) <= 5 and len(blobs) >= 400


def test_write_shuffles_few_blob_rows(spark, catalog):
    """The write's exchange carries blob rows (one per input batch and bucket), not the rows."""
    t = create(catalog, "db.blob_rows", WIDE, ["dt"], ["dt", "id"], bucket="3")
    df = to_spark(spark, wide_rows(range(3000), ["a", "b"])).repartition(2)
    shuffled = ps._blob_shuffle(df.select(*WIDE.names), t, WIDE.names, None)
    assert shuffled.columns == [ps._BLOB_COLUMN]
    with ps._arrow_batch_rows(spark, ps.WRITE_BATCH_ROWS):
        n = shuffled.count()
    assert 0 < n <= 2 * 2 * 3  # 2 input tasks x (2 partitions x 3 buckets)


@pytest.mark.parametrize("large", [False, True])
def test_write_with_small_blobs_and_large_var_types(spark, catalog, large):
    """Slices cut into many blobs, with and without useLargeVarTypes, write the same table as one
    blob per slice would: every type family, partitioned, a later row of a key wins within a
    Spark partition."""
    key = "spark.sql.execution.arrow.useLargeVarTypes"
    spark.conf.set(key, str(large).lower())
    try:
        t = create(catalog, f"db.blob_small_{large}", WIDE, ["dt"], ["dt", "id"], bucket="4")
        first, second = wide_rows(range(500), ["a", "b"], 0), wide_rows(range(250), ["a", "b"], 1)
        # one Spark partition: the second version of ids 0..249 arrives after the first
        df = to_spark(spark, pa.concat_tables([first, second])).coalesce(1)
        assert ps.write(df, t, _blob_bytes=2000) == 1
        want = pa.concat_tables([second, first.slice(250)]).sort_by([("dt", "ascending"), ("id", "ascending")])
        assert plain_read(t, ["dt", "id"]).equals(want)
        assert data_files(t) and not orphans(t)
    finally:
        spark.conf.unset(key)
