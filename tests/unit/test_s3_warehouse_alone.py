"""An ``s3://`` warehouse given nothing but its URI (issue 29): the credentials, region and
endpoint come from the environment (``AWS_*``) or the AWS shared config files
(``~/.aws/credentials``, ``~/.aws/config``, ``AWS_PROFILE``), as pypaimon's pyarrow
``S3FileSystem`` (the AWS SDK's chain) takes them; against moto's S3 server on 127.0.0.1."""

from __future__ import annotations

import pyarrow as pa
import pytest

from paimon_rs import CatalogFactory, InvalidArgumentError, Schema, UnsupportedError

from s3_server import ACCESS_KEY, SECRET_KEY, MotoServer

AWS_VARS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL",
            "AWS_ENDPOINT", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ALLOW_HTTP", "AWS_PROFILE",
            "AWS_DEFAULT_PROFILE", "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE")


@pytest.fixture
def bare_env(monkeypatch, tmp_path):
    """No AWS variable set, a home without ~/.aws (the store reads them when it is built)."""
    for k in AWS_VARS:
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home" / ".aws").mkdir(parents=True)
    return tmp_path / "home" / ".aws"


def _round_trip(warehouse: str) -> None:
    c = CatalogFactory.create({"warehouse": warehouse})
    c.create_database("db", True)
    c.create_table("db.t", Schema.from_pyarrow_schema(pa.schema([("id", pa.int64())])), False)
    t = c.get_table("db.t")
    t.write(pa.table({"id": [1, 2]}))
    assert sorted(CatalogFactory.create({"warehouse": warehouse}).get_table("db.t").to_arrow()
                  .column("id").to_pylist()) == [1, 2]


def test_credentials_and_endpoint_from_the_environment(moto: MotoServer, bare_env, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto.endpoint)
    monkeypatch.setenv("AWS_ALLOW_HTTP", "true")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    _round_trip(f"s3://{moto.new_bucket()}/wh")


@pytest.mark.parametrize("profile", [None, "dev"])
def test_credentials_region_and_endpoint_from_the_shared_files(moto: MotoServer, bare_env, monkeypatch,
                                                               profile):
    bucket = moto.new_bucket()  # boto3 reads AWS_PROFILE too: before it is set
    section = profile or "default"
    (bare_env / "credentials").write_text(
        f"[{section}]\naws_access_key_id = {ACCESS_KEY}\naws_secret_access_key = {SECRET_KEY}\n")
    heading = "default" if profile is None else f"profile {profile}"
    (bare_env / "config").write_text(f"[{heading}]\nregion = us-east-1\nendpoint_url = {moto.endpoint}\n")
    if profile:
        monkeypatch.setenv("AWS_PROFILE", profile)
    _round_trip(f"s3://{bucket}/wh")


def test_a_named_profile_that_cannot_be_used_is_refused(moto: MotoServer, bare_env, monkeypatch):
    b1, b2 = moto.new_bucket(), moto.new_bucket()
    (bare_env / "config").write_text("[profile role]\nrole_arn = arn:aws:iam::1:role/r\n")
    monkeypatch.setenv("AWS_PROFILE", "nope")
    with pytest.raises(InvalidArgumentError, match="'nope'"):
        CatalogFactory.create({"warehouse": f"s3://{b1}/wh"}).create_database("db", True)
    monkeypatch.setenv("AWS_PROFILE", "role")
    with pytest.raises(UnsupportedError, match="role_arn"):
        CatalogFactory.create({"warehouse": f"s3://{b2}/wh"}).create_database("db", True)
