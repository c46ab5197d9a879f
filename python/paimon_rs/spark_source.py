"""Moved to ``paimon_rs.spark.source`` (``paimon_rs.spark`` became a package); this name is kept
for code that imports the Data Source from here, as docs/spark-integration.md used to name it."""

from paimon_rs.spark.source import DefaultSource, PaimonRsDataSource

__all__ = ["PaimonRsDataSource", "DefaultSource"]
