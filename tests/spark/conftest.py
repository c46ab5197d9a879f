"""One SparkSession (local[2,4]: 2 threads, a task may fail 3 times and be retried) for the whole
test session; every test here is marked ``spark`` (``-m "not spark"`` deselects them)."""

import os
import sys
from pathlib import Path

import pytest

try:
    import pyspark  # noqa: F401
except ImportError:  # pyspark is in requirements-dev.txt; without it these tests are not collected
    collect_ignore_glob = ["test_*.py"]

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config, items):
    for item in items:
        if HERE in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.spark)


def spark_env() -> None:
    """Executors run this venv's python (else `python3` on PATH: no pyarrow, no paimon_rs) and
    bind to loopback."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")


def builder(master: str):
    from pyspark.sql import SparkSession

    return (
        SparkSession.builder.master(master)
        .appName("paimon_rs-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.default.parallelism", "2")
        .config("spark.driver.memory", "1g")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.execution.arrow.pyspark.validateSchema.enabled", "true")
        .config("spark.sql.execution.pyspark.udf.faulthandler.enabled", "true")
        .config("spark.sql.python.filterPushdown.enabled", "true")
    )


@pytest.fixture(scope="session")
def spark():
    spark_env()
    s = builder("local[2,4]").getOrCreate()
    s.sparkContext.setLogLevel("ERROR")
    yield s
    s.stop()


@pytest.fixture
def catalog(tmp_path):
    """A filesystem catalog in the test's directory."""
    from paimon_rs import CatalogFactory

    return CatalogFactory.create({"warehouse": str(tmp_path / "wh")})


@pytest.fixture(scope="module")
def registered(spark):
    """The session with the ``paimon_rs`` Data Sources registered."""
    import paimon_rs.spark as ps

    ps.register_data_source(spark)
    return spark
