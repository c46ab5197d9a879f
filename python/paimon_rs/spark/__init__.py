"""PySpark integration without a JVM connector: any PySpark 4 drives the engine through
``DataFrame.mapInArrow`` and the Python Data Source API (docs/spark-integration.md has the design
and its measurements).

- ``write(df, table, overwrite=False)``: a ``mapInArrow`` computes each row's (partition,
  bucket) with the engine's own bucket hash and packs the rows of each into Arrow IPC blobs; the
  blobs are shuffled so that every row of one (partition, bucket) meets in one task; the task
  runs the table's writer over them and yields serialized commit messages (without a JVM
  handle, Spark Connect: every row is shuffled, as ``distribute``, and a second ``mapInArrow``
  writes); the driver collects them once and commits one snapshot, keeping exactly one task
  attempt per Spark partition and deleting the files of the others (failed, retried or
  speculative attempts).
- ``read(spark, table, columns=None, filter=None, snapshot_id=None)``: splits are planned on
  the driver and shipped as rows of a DataFrame (one split per task); ``mapInArrow`` reads them
  into the table's schema mapped to Spark types.
- ``compact(spark, table, full=False, partitions=None)``: the driver plans the buckets that need
  compaction, one task per bucket rewrites them and returns a commit message, the driver
  commits one COMPACT snapshot (exactly once, as ``write``).
- ``sort_compact(spark, table, order_strategy, order_by, partitions=None)``: sort compaction
  (order / z-order / hilbert): the sort key computed per row, Spark's ``repartitionByRange`` and
  ``sortWithinPartitions`` over it, the tasks write in that order, the driver commits one
  OVERWRITE snapshot removing exactly the files it planned (exactly once, as ``compact``).
- ``register_data_source(spark)``: ``spark.read.format("paimon_rs")``,
  ``df.write.format("paimon_rs")``, ``spark.readStream.format("paimon_rs")`` and
  ``df.writeStream.format("paimon_rs")`` through the Python Data Source API.

Nothing a task runs depends on driver-local state: tables pickle as path plus options and are
reopened once per Python worker process.

Modules, each importing only those above it (no import circle, none deferred to call time):
``common`` (table cache, types, task and error context, session confs) <- ``commit`` (exactly
once: collect, choose attempts, commit, sweep), ``shuffle`` (bucket hash, packed shuffle,
``distribute`` of fixed buckets), ``parquet`` (the hybrid read's Spark Parquet path) <- ``dynamic``
(the assign stage; ``distribute``) <- ``writer`` (``write``),
``reader`` (``read``), ``compaction`` (``compact``) <- ``sort_compaction`` (``sort_compact``),
``sink`` (the Data Source writers' task
side, batch and stream) <- ``streaming`` (Structured Streaming's reader and writer) <-
``source`` (the Data Sources ``paimon_rs`` and ``paimon_rs_audit_log``). This module
re-exports the public names; ``sink``, ``streaming`` and ``source`` import
``pyspark.sql.datasource`` and are loaded by ``register_data_source``.
"""

import sys
import types
from typing import Any

from paimon_rs.spark import commit as _commit
from paimon_rs.spark import shuffle as _shuffle
from paimon_rs.spark import writer as _writer
from paimon_rs.spark.commit import SETTLE_GRACE_S, SETTLE_TIMEOUT_S
from paimon_rs.spark.common import spark_schema_of
from paimon_rs.spark.compaction import compact
from paimon_rs.spark.dynamic import distribute
from paimon_rs.spark.reader import plan_splits, read
from paimon_rs.spark.shuffle import PACK_BUFFER_BYTES, WRITE_KEY_COLUMN
from paimon_rs.spark.sort_compaction import sort_compact
from paimon_rs.spark.writer import (
    ARROW_BATCH_CONF,
    ARROW_BYTES_CONF,
    NO_BYTE_CAP,
    WRITE_BATCH_BYTES,
    WRITE_BATCH_ROWS,
    write,
)

#: Spark's switch for ``DataSourceReader.pushFilters`` (off by default in Spark 4.1-4.3)
FILTER_PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"

__all__ = [
    "write", "read", "compact", "sort_compact", "distribute", "register_data_source", "spark_schema_of", "plan_splits",
    "WRITE_KEY_COLUMN", "ARROW_BATCH_CONF", "ARROW_BYTES_CONF", "NO_BYTE_CAP", "WRITE_BATCH_ROWS",
    "WRITE_BATCH_BYTES", "PACK_BUFFER_BYTES", "SETTLE_TIMEOUT_S", "SETTLE_GRACE_S", "FILTER_PUSHDOWN_CONF",
]


def register_data_source(spark: Any, filter_pushdown: bool = True) -> None:
    """Register the ``paimon_rs`` Python Data Source: ``spark.read.format("paimon_rs").load(path)``,
    ``df.write.format("paimon_rs").mode("append" | "overwrite").save(path)``, and for Structured
    Streaming ``df.writeStream.format("paimon_rs")`` and
    ``spark.readStream.format("paimon_rs_audit_log")`` (``paimon_rs.spark.streaming``).

    ``filter_pushdown=True`` also sets ``spark.sql.python.filterPushdown.enabled=true`` in this
    session: the source's reader implements ``pushFilters``, which Spark refuses
    (``DATA_SOURCE_PUSHDOWN_DISABLED``) while that conf is off. With ``False`` the conf is left
    as it is; a session that keeps it off reads with ``.option("filter_pushdown", "false")``.

    The Data Source lives in ``paimon_rs.spark.source``, imported here on first use: it needs
    ``pyspark.sql.datasource``, which ``import paimon_rs.spark`` does not load."""
    from paimon_rs.spark.source import PaimonRsAuditLogSource, PaimonRsDataSource

    if filter_pushdown:
        spark.conf.set(FILTER_PUSHDOWN_CONF, "true")
    spark.dataSource.register(PaimonRsDataSource)
    spark.dataSource.register(PaimonRsAuditLogSource)


#: the tuning knobs re-exported here and the module that reads each: ``ps.SETTLE_TIMEOUT_S = 30``
#: sets it there too, as it did when ``paimon_rs.spark`` was one module (a re-export alone would
#: take the value and change nothing)
_TUNABLES = {
    "PACK_BUFFER_BYTES": _shuffle, "WRITE_BATCH_ROWS": _writer, "WRITE_BATCH_BYTES": _writer,
    "SETTLE_TIMEOUT_S": _commit, "SETTLE_GRACE_S": _commit,
}


class _Package(types.ModuleType):
    def __setattr__(self, name: str, value: Any) -> None:
        owner = _TUNABLES.get(name)
        if owner is not None:
            setattr(owner, name, value)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
