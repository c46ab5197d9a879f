"""Tables on object stores (issue #14): the same table behaviours on a local warehouse, on a
real S3 API (moto's server on 127.0.0.1) and on GCS (gcp-storage-emulator, tests/gcs_server.py),
through the public API only; the atomic commit's conditional create-only put and its refusal;
request counts; a pickled table reopening its store in a fresh process (how Spark executors open
the warehouse); a race of 4 committing processes on each store."""

from __future__ import annotations

import datetime as dt
import json
import pickle
import subprocess
import sys
import textwrap
import time

import pyarrow as pa
import pytest

import paimon_rs
from paimon_rs import CatalogFactory, Schema, _core

import stores
from gcs_server import GcsServer
from s3_server import MotoServer
from unit_helpers import PK_SCHEMA, read, write

# every test taking ``warehouse`` (or ``catalog``) runs on local disk, S3 and GCS (tests/stores.py)
pytestmark = pytest.mark.stores("local", "s3", "gcs")


def make(catalog, name="db.t", pk=True, **options):
    schema = Schema.from_pyarrow_schema(
        PK_SCHEMA, partition_keys=["dt"], primary_keys=["dt", "id"] if pk else None,
        options={"bucket": "2", **options} if pk else dict(options))
    catalog.create_table(name, schema, False)
    return catalog.get_table(name)


def rows(dt_, ids, name="n", price=None):
    ids = list(ids)
    return pa.table({"dt": [dt_] * len(ids), "id": ids, "name": [name] * len(ids),
                     "price": [float(price if price is not None else i) for i in ids]}, schema=PK_SCHEMA)


def as_list(t):
    return sorted(zip(*[t.column(c).to_pylist() for c in ["dt", "id", "name", "price"]]))


def test_catalog_lists_databases_and_tables(catalog, warehouse):
    make(catalog)
    assert "db" in catalog.list_databases()
    assert catalog.list_tables("db") == ["t"]
    assert catalog.get_database("db").name == "db"
    assert catalog.get_table("db.t").table_path.startswith(warehouse.uri)
    catalog.drop_table("db.t")
    assert catalog.list_tables("db") == []


def test_pk_write_upsert_delete_read(catalog):
    t = make(catalog)
    assert write(t, rows("a", range(100), "v1")) == 1
    assert write(t, pa.concat_tables([rows("a", range(50, 150), "v2"), rows("b", range(10), "b")])) == 2
    got = as_list(read(t))
    assert len(got) == 160
    assert got[:1] == [("a", 0, "v1", 0.0)] and ("a", 120, "v2", 120.0) in got
    # deletes (row kind column) and projection/filter reads
    pb = t.new_read_builder().new_predicate_builder()
    assert read(t, projection=["id"], predicate=pb.equal("dt", "b")).num_rows == 10


def test_append_table(catalog):
    t = make(catalog, pk=False)
    write(t, rows("a", range(10)))
    write(t, rows("a", range(5)))
    assert read(t).num_rows == 15


@pytest.mark.parametrize("options,expect", [
    ({"merge-engine": "partial-update"}, ("a", 1, "x", 9.0)),
    ({"merge-engine": "aggregation", "fields.price.aggregate-function": "sum"}, ("a", 1, "y", 10.0)),
    ({"merge-engine": "first-row"}, ("a", 1, "x", 1.0)),
])
def test_merge_engines(catalog, options, expect):
    t = make(catalog, **options)
    write(t, rows("a", [1], "x", 1.0))
    write(t, pa.table({"dt": ["a"], "id": [1], "name": [None if "partial" in str(options) else "y"],
                       "price": [9.0]}, schema=PK_SCHEMA))
    assert as_list(read(t)) == [expect]


def test_compaction_keeps_the_rows(catalog):
    t = make(catalog)
    for i in range(4):
        write(t, rows("a", range(i * 10, i * 10 + 20), f"v{i}"))
    before = as_list(read(t))
    t.compact(full=True)
    assert as_list(read(t)) == before
    assert t.latest_snapshot_id() == 5


def test_overwrite_a_partition(catalog):
    t = make(catalog)
    write(t, pa.concat_tables([rows("a", range(5)), rows("b", range(5))]))
    write(t, rows("a", [100]), overwrite={"dt": "a"})
    assert [r[:2] for r in as_list(read(t))] == [("a", 100)] + [("b", i) for i in range(5)]


def test_time_travel(catalog):
    t = make(catalog)
    write(t, rows("a", [1, 2], "v1"))
    write(t, rows("a", [1], "v2"))
    assert as_list(read(t.copy({"scan.snapshot-id": "1"}))) == [("a", 1, "v1", 1.0), ("a", 2, "v1", 2.0)]
    assert as_list(read(t))[0][2] == "v2"


def test_orphan_clean_removes_only_orphans(catalog):
    t = make(catalog)
    write(t, rows("a", range(10)))
    orphan = t.table_path + "/dt=a/bucket-0/data-orphan-0.parquet"
    stores.write_bytes(orphan, b"x")
    time.sleep(1.1)  # S3 times are whole seconds (the GCS emulator's microseconds)
    res = t.remove_orphan_files(older_than=dt.datetime.now(dt.timezone.utc))
    assert [str(p).rsplit("/", 1)[-1] for p in res.files] == ["data-orphan-0.parquet"]
    assert read(t).num_rows == 10


def test_commit_conflict_retries_and_keeps_everything(catalog):
    t = make(catalog)
    # two writers prepared against the same base; both commits land, one after a retry
    w1 = t.new_batch_write_builder()
    w2 = t.new_batch_write_builder()
    a, b = w1.new_write(), w2.new_write()
    a.write_arrow(rows("a", range(5)))
    b.write_arrow(rows("a", range(5, 10)))
    ma, mb = a.prepare_commit(), b.prepare_commit()
    assert w1.new_commit().commit(ma) == 1
    assert w2.new_commit().commit(mb) == 2
    assert read(t).num_rows == 10


def test_pickled_table_reopens_its_store_in_a_fresh_process(catalog, warehouse):
    """A Spark executor unpickles the table and opens the warehouse itself: the store options
    travel with the table."""
    t = make(catalog)
    write(t, rows("a", range(7)))
    code = textwrap.dedent("""
        import pickle, sys
        t = pickle.loads(sys.stdin.buffer.read())
        rb = t.new_read_builder()
        print(rb.new_read().to_arrow(rb.new_scan().plan().splits()).num_rows)
    """)
    out = subprocess.run([sys.executable, "-c", code], input=pickle.dumps(t), capture_output=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr.decode()
    assert out.stdout.decode().strip() == "7"
    if warehouse.options:
        # Table.open with the options alone (no catalog) reaches the store too
        t2 = paimon_rs.Table.open(t.table_path, warehouse.options)
        assert read(t2).num_rows == 7


# ---- S3 only --------------------------------------------------------------------------------

def s3_catalog(moto: MotoServer, **extra: str):
    c = CatalogFactory.create({"warehouse": f"s3://{moto.new_bucket()}/wh", **moto.options(), **extra})
    c.create_database("db", True)
    return c


def test_the_server_honours_conditional_puts(moto):
    """The race below proves something only if the server refuses a second create-only PUT
    (If-None-Match: *) of a key, as S3 does: moto 5.1+ does."""
    import botocore.exceptions
    bucket = moto.new_bucket()
    moto.client().put_object(Bucket=bucket, Key="k", Body=b"1", IfNoneMatch="*")
    with pytest.raises(botocore.exceptions.ClientError, match="PreconditionFailed"):
        moto.client().put_object(Bucket=bucket, Key="k", Body=b"2", IfNoneMatch="*")


def test_a_store_without_conditional_puts_refuses_to_commit(moto):
    c = s3_catalog(moto)
    t = make(c)
    # the same bucket again, configured as a store that cannot create only-if-absent
    t2 = paimon_rs.Table.open(t.table_path, {**moto.options(), "s3.conditional-put": "disabled"})
    try:
        with pytest.raises(paimon_rs.UnsupportedError, match="conditional create-only puts"):
            write(t2, rows("a", [1]))
        assert t2.latest_snapshot_id() is None
    finally:
        paimon_rs.Table.open(t.table_path, moto.options())


def test_unknown_store_options_are_refused(moto):
    with pytest.raises(paimon_rs.InvalidArgumentError, match="s3.endpiont"):
        CatalogFactory.create({"warehouse": "s3://x/wh", "s3.endpiont": moto.endpoint})


def test_request_counts_per_commit_and_read_and_no_list_when_reading(moto):
    c = s3_catalog(moto)
    t = make(c)
    write(t, rows("a", range(1000)))
    _core.object_store_requests(reset=True)
    write(t, rows("a", range(500, 1500)))
    commit = _core.object_store_requests(reset=True)
    assert read(t).num_rows == 1500
    reading = _core.object_store_requests(reset=True)
    print(f"\nrequests per commit (2 buckets): {commit}\nrequests per read: {reading}")
    assert reading["LIST"] == 0, reading
    # the latest snapshot: the one this process committed, read beside a HEAD of the next id
    # (no GET of LATEST)
    assert reading["HEAD"] == 1, reading
    assert reading["PUT"] == 0 and reading["DELETE"] == 0
    assert commit["PUT"] >= 4  # data files, manifests, manifest list, snapshot
    # HEADs: the 2 new data files (checked together), the next snapshot id beside the latest's
    # GET at the write's restore and at the commit, the new snapshot after its LATEST hint and
    # before the expiry, the snapshot EARLIEST names. GETs: the latest snapshot (restore, commit),
    # its 2 manifest lists (together) and manifest, the base again after the create (a rollback
    # check), EARLIEST. Before, the commit and its expiry each found the latest from the hint
    # again (GET LATEST, HEAD n + 1, n, n - 1): 13 HEADs and 10 GETs.
    assert commit["HEAD"] <= 7 and commit["GET"] <= 7, commit


def test_a_read_fetches_the_next_splits_files_ahead_each_data_file_once(moto):
    """On an object store a read fetches a split's data files ahead (whole-object GETs sent once
    the split a round before has its files in, taken by their opens): one GET per data file,
    none twice. With one thread every split after the first is fetched ahead."""
    c = s3_catalog(moto)
    t = make(c, bucket="4")
    write(t, rows("a", range(2000)))
    write(t, rows("a", range(1000, 3000), name="m"))
    rb = t.new_read_builder()
    splits = rb.new_scan().plan().splits()
    assert len(splits) == 4
    files = [len(s.file_paths) for s in splits]
    for parallelism in (1, 2):
        _core.object_store_requests(reset=True)
        got = rb.new_read().to_arrow(splits, parallelism=parallelism)
        reading = _core.object_store_requests(reset=True)
        assert got.num_rows == 3000 and sorted(got.column("name").to_pylist()).count("m") == 2000
        assert reading["GET"] == sum(files), (parallelism, reading, files)
        assert reading["HEAD"] == 0 and reading["LIST"] == 0, reading
        if parallelism == 1:
            assert reading["GET_AHEAD"] == sum(files[1:]), (reading, files)
        else:
            # which split a thread takes second depends on timing
            assert reading["GET_AHEAD"] <= sum(files[2:]), (reading, files)


def test_get_table_lists_the_schema_directory_only_when_the_schema_changed(moto):
    c = s3_catalog(moto)
    t = make(c)
    _core.object_store_requests(reset=True)
    c.get_table("db.t")
    opening = _core.object_store_requests(reset=True)
    # the schema this process created, read beside a HEAD of the next id: no LIST
    assert opening["LIST"] == 0 and opening["GET"] == 1 and opening["HEAD"] == 1, opening
    # another process's ALTER (schema-1 written behind this process's back): the HEAD finds
    # it, so schema/ is listed once and the newest schema read
    bucket, key = t.table_path.removeprefix("s3://").split("/", 1)
    s3 = moto.client()
    schema = json.loads(s3.get_object(Bucket=bucket, Key=f"{key}/schema/schema-0")["Body"].read())
    schema["id"], schema["comment"] = 1, "altered elsewhere"
    s3.put_object(Bucket=bucket, Key=f"{key}/schema/schema-1", Body=json.dumps(schema).encode())
    _core.object_store_requests(reset=True)
    assert c.get_table("db.t").comment() == "altered elsewhere"
    opening = _core.object_store_requests(reset=True)
    assert opening["LIST"] == 1, opening
    c.get_table("db.t")
    assert _core.object_store_requests(reset=True)["LIST"] == 0
    with pytest.raises(paimon_rs.TableNotExistException):
        c.get_table("db.missing")


RACER = """
import json, sys
import pyarrow as pa
from paimon_rs import CatalogFactory
uri, opts, who, n = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
t = CatalogFactory.create({"warehouse": uri, **opts}).get_table("db.t")
for i in range(n):
    wb = t.new_batch_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    k = who * 1000 + i
    # a partition per process: the race is on the snapshot ids, not on the same keys (writers of
    # the same bucket that both start from an empty table conflict by design)
    w.write_arrow(pa.table({"dt": [f"p{who}"], "id": [k], "name": [str(who)], "price": [float(i)]}))
    c.commit(w.prepare_commit())
    w.close(); c.close()
"""


def race(wh: stores.Warehouse, procs: int, commits: int) -> None:
    c = wh.catalog()
    # a long race keeps every writer retrying: more attempts than the default 10
    t = make(c, **{"commit.max-retries": "1000"})
    ps = [subprocess.Popen([sys.executable, "-c", RACER, wh.uri, json.dumps(wh.options), str(i), str(commits)],
                           stderr=subprocess.PIPE) for i in range(procs)]
    for p in ps:
        _, err = p.communicate(timeout=600)
        assert p.returncode == 0, err.decode()
    snaps = stores.snapshot_ids(t.table_path)
    # contiguous ids; one APPEND snapshot per commit (writers may add COMPACT ones)
    assert snaps == list(range(1, len(snaps) + 1)), snaps
    kinds = [s["commitKind"] for s in stores.snapshots(t.table_path)]
    assert kinds.count("APPEND") == procs * commits, kinds
    got = read(t)
    assert sorted(got.column("id").to_pylist()) == sorted(
        w * 1000 + i for w in range(procs) for i in range(commits))


def s3_warehouse(moto: MotoServer) -> stores.Warehouse:
    return stores.Warehouse(f"s3://{moto.new_bucket()}/wh", moto.options(), "s3")


def test_four_processes_commit_to_one_s3_table(moto):
    race(s3_warehouse(moto), 4, 5)


@pytest.mark.long
def test_four_processes_commit_to_one_s3_table_long(moto):
    race(s3_warehouse(moto), 4, 40)


# ---- GCS only ---------------------------------------------------------------------------------

def gcs_warehouse(gcs: GcsServer, **extra: str) -> stores.Warehouse:
    return stores.Warehouse(f"gs://{gcs.new_bucket()}/wh", {**gcs.options(), **extra}, "gcs")


@pytest.mark.gcs
def test_four_processes_commit_to_one_gcs_table(gcs):
    race(gcs_warehouse(gcs), 4, 5)


@pytest.mark.gcs
@pytest.mark.long
def test_four_processes_commit_to_one_gcs_table_long(gcs):
    race(gcs_warehouse(gcs), 4, 40)


@pytest.mark.gcs
def test_the_stock_emulator_ignores_if_generation_match():
    """What gcp-storage-emulator (2026.7.19) itself does with a create-only upload: two uploads of
    one name with ifGenerationMatch=0 both succeed and the second overwrites the first (GCS
    answers the second with 412). Were our commits run on it as shipped, two racing writers could
    both "create" snapshot N and one commit would be lost; hence tests/gcs_server.py's precondition
    and 'gs.conditional-put' = 'disabled' for such a server (next tests). Fails, telling us to drop
    the addition, once the emulator honours the precondition."""
    import urllib.request
    stock = GcsServer(honour_preconditions=False)
    try:
        bucket = stock.new_bucket()
        assert stock.put(bucket, "snapshot-1", b"first", if_generation_match=0) == 200
        assert stock.put(bucket, "snapshot-1", b"second", if_generation_match=0) == 200
        assert stock.get(bucket, "snapshot-1") == b"second"
        # served so, the XML PUTs object_store sends for a create (x-goog-if-generation-match: 0)
        # both "succeed" too: two racing commits would both create snapshot N
        for body in (b"1", b"2"):
            req = urllib.request.Request(f"{stock.endpoint}/{bucket}/snapshot-2", body,
                                         {"x-goog-if-generation-match": "0"}, method="PUT")
            with urllib.request.urlopen(req) as r:
                assert r.status == 200
        assert stock.get(bucket, "snapshot-2") == b"2"
    finally:
        stock.stop()


@pytest.mark.gcs
def test_gcs_refuses_a_second_create_of_a_snapshot(gcs):
    """tests/gcs_server.py serves x-goog-if-generation-match as GCS does: the second of two
    create-only PUTs of one key is refused (412), which object_store reports as AlreadyExists
    and our commit as "snapshot taken, retry with the next id"."""
    import urllib.error
    import urllib.request
    bucket = gcs.new_bucket()
    url = f"{gcs.endpoint}/{bucket}/snapshot-1"
    hdr = {"x-goog-if-generation-match": "0"}
    with urllib.request.urlopen(urllib.request.Request(url, b"1", hdr, method="PUT")) as r:
        assert r.status == 200
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(urllib.request.Request(url, b"2", hdr, method="PUT"))
    assert e.value.code == 412
    assert gcs.get(bucket, "snapshot-1") == b"1"


@pytest.mark.gcs
def test_a_gcs_server_without_preconditions_refuses_to_commit(gcs):
    """A GCS-compatible server that ignores ifGenerationMatch is declared with
    'gs.conditional-put' = 'disabled': paimon_rs then refuses every commit (it has no commit
    lock), with an error that says why, and writes no snapshot."""
    wh = gcs_warehouse(gcs)
    t = make(wh.catalog())
    t2 = paimon_rs.Table.open(t.table_path, {**wh.options, "gs.conditional-put": "disabled"})
    try:
        with pytest.raises(paimon_rs.UnsupportedError, match="conditional create-only puts.*gs.conditional-put"):
            write(t2, rows("a", [1]))
        assert t2.latest_snapshot_id() is None
    finally:
        paimon_rs.Table.open(t.table_path, wh.options)


@pytest.mark.gcs
def test_gcs_through_a_service_account_key_and_java_names(gcs):
    """The emulator reached the other ways: object_store's service-account JSON with
    disable_oauth and gcs_base_url, and Java Paimon's Hadoop names (fs.gs.storage.root.url)."""
    key = json.dumps({"disable_oauth": True, "gcs_base_url": gcs.endpoint, "client_email": "",
                      "private_key": "", "private_key_id": ""})
    for opts in ({"gs.service-account-key": key},
                 {"fs.gs.storage.root.url": gcs.endpoint + "/", "fs.gs.auth.type": "UNAUTHENTICATED",
                  "fs.gs.project.id": "test"}):
        wh = stores.Warehouse(f"gs://{gcs.new_bucket()}/wh", opts, "gcs")
        t = make(wh.catalog())
        write(t, rows("a", range(3)))
        assert read(paimon_rs.Table.open(t.table_path, opts)).num_rows == 3


@pytest.mark.gcs
def test_unknown_gcs_options_are_refused():
    with pytest.raises(paimon_rs.InvalidArgumentError, match="gs.endpiont"):
        CatalogFactory.create({"warehouse": "gs://x/wh", "gs.endpiont": "http://127.0.0.1:1"})
    with pytest.raises(paimon_rs.UnsupportedError, match="COMPUTE_ENGINE"):
        CatalogFactory.create({"warehouse": "gs://x/wh", "fs.gs.auth.type": "COMPUTE_ENGINE"})


def test_table_operations_on_local_and_s3(catalog):
    """Tags, rollback, expiry, alter_table, the snapshot API and partition listing work the same
    on an object store as on local disk (issue 15: "the same on local disk and object stores")."""
    from paimon_rs import SchemaChange

    t = make(catalog)
    for i in range(4):
        write(t, rows("a", range(i * 10, i * 10 + 10)))
    assert t.snapshot_manager().get_latest_snapshot().id == 4
    t.create_tag("v2", snapshot_id=2)
    assert t.list_tags() == ["v2"]
    assert len(as_list(read(t.copy({"scan.tag-name": "v2"})))) == 20
    t.rollback_to(3)
    assert t.latest_snapshot_id() == 3
    assert len(as_list(read(t))) == 30
    t.expire_snapshots(retain_min=1, retain_max=1, older_than=0)
    assert t.snapshot_manager().try_get_earliest_snapshot().id == 3
    # the tag keeps its snapshot's files readable after expiry
    assert len(as_list(read(t.copy({"scan.tag-name": "v2"})))) == 20
    assert sum(p.record_count for p in t.list_partitions()) == 30
    catalog.alter_table("db.t", [SchemaChange.add_column("extra", pa.int32())])
    t2 = catalog.get_table("db.t")
    assert "extra" in t2.arrow_schema.names
    assert read(t2).num_rows == 30
    assert t2.delete_tag("v2")
    assert t2.list_tags() == []


def test_branches_on_local_and_s3(catalog):
    """Branches (create from a tag and empty, write, read through db.t$branch_b, rename,
    fast-forward, delete) work the same on an object store as on local disk."""
    t = make(catalog)
    for i in range(3):
        write(t, rows("a", range(i * 10, i * 10 + 10)))
    t.create_tag("v1", snapshot_id=1)
    t.create_branch("b", "v1")
    t.create_branch("e")
    assert t.list_branches() == ["b", "e"] and catalog.list_branches("db.t") == ["b", "e"]
    b = catalog.get_table("db.t$branch_b")
    assert b.current_branch() == "b" and len(as_list(read(b))) == 10
    write(b, rows("a", range(100, 105)))
    assert len(as_list(read(b))) == 15 and len(as_list(read(t))) == 30
    e = t.copy({"branch": "e"})
    assert read(e).num_rows == 0
    write(e, rows("z", range(3)))
    assert len(as_list(read(e))) == 3
    t.rename_branch("e", "e2")
    assert t.list_branches() == ["b", "e2"] and len(as_list(read(t.copy({"branch": "e2"})))) == 3
    t.fast_forward("b")
    t = catalog.get_table("db.t")
    assert len(as_list(read(t))) == 15 and t.latest_snapshot_id() == 2
    t.delete_branch("e2")
    assert t.list_branches() == ["b"]
