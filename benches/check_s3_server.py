"""Whether a server of bench_s3 (``moto`` or ``s3s``) serves what our S3 path needs, checked:
boto3 probes (a create-only PUT and a create-only multipart completion refused on an existing
key, ranged and suffix GETs, HEAD, a missing key's 404, ListObjectsV2, DELETE), then the engine
end to end: a PK table whose base holds a data file over 16 MiB (a multipart PUT, read by a
footer GET and ranged GETs), an upsert, the rows read back, and the requests sent.

    python benches/check_s3_server.py s3s      # or moto
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import botocore.exceptions
import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from s3_server import MotoServer, S3sServer  # noqa: E402


def refused(call: Any, **kw: Any) -> str:
    """The error code of ``call(**kw)``, which must fail."""
    try:
        call(**kw)
    except botocore.exceptions.ClientError as e:
        return str(e.response["Error"]["Code"])
    raise AssertionError(f"{call.__name__} was not refused")


def check_api(srv: Any) -> None:
    c, b = srv.client(), srv.new_bucket()
    c.put_object(Bucket=b, Key="d/k", Body=b"0123456789", IfNoneMatch="*")
    code = refused(c.put_object, Bucket=b, Key="d/k", Body=b"x", IfNoneMatch="*")
    assert code == "PreconditionFailed", code
    assert c.get_object(Bucket=b, Key="d/k", Range="bytes=2-4")["Body"].read() == b"234"
    assert c.get_object(Bucket=b, Key="d/k", Range="bytes=-3")["Body"].read() == b"789"
    assert c.head_object(Bucket=b, Key="d/k")["ContentLength"] == 10
    assert refused(c.head_object, Bucket=b, Key="d/missing") == "404"
    mp = c.create_multipart_upload(Bucket=b, Key="d/mp")
    parts = []
    for i in range(2):
        r = c.upload_part(Bucket=b, Key="d/mp", UploadId=mp["UploadId"], PartNumber=i + 1,
                          Body=bytes([65 + i]) * (5 << 20))
        parts.append({"PartNumber": i + 1, "ETag": r["ETag"]})
    c.complete_multipart_upload(Bucket=b, Key="d/mp", UploadId=mp["UploadId"],
                                MultipartUpload={"Parts": parts}, IfNoneMatch="*")
    assert c.head_object(Bucket=b, Key="d/mp")["ContentLength"] == 10 << 20
    mp = c.create_multipart_upload(Bucket=b, Key="d/mp")
    r = c.upload_part(Bucket=b, Key="d/mp", UploadId=mp["UploadId"], PartNumber=1, Body=b"z" * 10)
    code = refused(c.complete_multipart_upload, Bucket=b, Key="d/mp", UploadId=mp["UploadId"],
                   MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": r["ETag"]}]}, IfNoneMatch="*")
    assert code == "PreconditionFailed", code
    assert sorted(srv.keys(b, "d/")) == ["d/k", "d/mp"]
    c.delete_object(Bucket=b, Key="d/k")
    assert srv.keys(b, "d/") == ["d/mp"]
    print("API: create-only PUT and multipart completion refused (PreconditionFailed), ranges, HEAD, 404, "
          "LIST, DELETE: ok")


def check_engine(srv: Any) -> None:
    from paimon_rs import CatalogFactory, Schema, _core

    cat = CatalogFactory.create({"warehouse": f"s3://{srv.new_bucket()}/wh", **srv.options()})
    cat.create_database("db", True)
    rng = np.random.default_rng(1)
    n = 1_500_000

    def data(ids: Any, tag: str) -> pa.Table:
        return pa.table({"id": pa.array(ids, pa.int64()),
                         "v": pa.array(rng.integers(0, 1 << 62, len(ids)), pa.int64()),
                         "s": pa.array([f"{tag}{x:024x}" for x in rng.integers(0, 1 << 62, len(ids))])})

    cat.create_table("db.t", Schema.from_pyarrow_schema(data([1], "a").schema, primary_keys=["id"],
                                                        options={"bucket": "1"}), False)

    def commit(tb: pa.Table) -> None:
        wb = cat.get_table("db.t").new_batch_write_builder()
        w, cm = wb.new_write(), wb.new_commit()
        w.write_arrow(tb)
        cm.commit(w.prepare_commit())
        w.close()
        cm.close()

    _core.object_store_requests(reset=True)
    commit(data(np.arange(n), "a"))
    print("commit 1:", _core.object_store_requests(reset=True))
    commit(data(np.arange(0, n, 3), "b"))
    print("commit 2:", _core.object_store_requests(reset=True))
    t = cat.get_table("db.t")
    rb = t.new_read_builder()
    got = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    updated = sum(1 for s in got.column("s").to_pylist() if s.startswith("b"))
    print("read:", _core.object_store_requests(reset=True), f"{got.num_rows} rows, {updated} updated")
    assert got.num_rows == n and updated == len(range(0, n, 3))
    bucket, key = t.table_path.removeprefix("s3://").split("/", 1)
    sizes = [srv.client().head_object(Bucket=bucket, Key=k)["ContentLength"]
             for k in srv.keys(bucket, f"{key}/bucket-0/")]
    assert max(sizes) > 16 << 20, sizes
    print(f"engine: data files of {sizes} bytes written and read back: ok")


def main() -> int:
    kind = sys.argv[1] if len(sys.argv) > 1 else "s3s"
    srv = {"moto": MotoServer, "s3s": S3sServer}[kind]()
    try:
        check_api(srv)
        check_engine(srv)
    finally:
        srv.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
