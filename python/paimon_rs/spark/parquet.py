"""The hybrid read of ``paimon_rs.spark.read``: splits whose rows are exactly their Parquet files'
rows are read by Spark's own Parquet reader, every other split by the engine through
``mapInArrow`` (docs/spark-integration.md, "Read": why we depart from a mapInArrow-only read).

A split takes Spark's reader only if reading it is a plain scan of its files, i.e. the engine
would do nothing but decode, drop retractions and filter:

- the read as a whole (``unfit_read``): a local table (Spark here has no object-store jars),
  no row kinds requested (incremental scans), every column read of a type whose Parquet form
  Spark reads into the same Spark type and values (no TIME, no nanosecond timestamps, no
  fixed-size binary), no two columns whose names differ only in case (Spark matches Parquet
  columns case-insensitively), and a filter made only of operators whose Spark form is proven
  equal (no float/timestamp operands: NaN and zone handling differ; no LIKE; no NULL or empty
  literal lists);
- the split (``split_fits``): raw-convertible (no merge), no deletion vectors, every file a
  ``.parquet`` file written with the read's schema id (an older schema's files need the
  engine's field-id evolution), in the bucket directory (no external path), and a path Spark
  would not expand as a glob.

Spark reads the exact file paths (never a directory: no listing, no other version's files), with
the Spark schema of the read (Parquet columns are matched by name; a primary-key file's value
columns carry the table's names beside ``_KEY_*``, ``_SEQUENCE_NUMBER`` and ``_VALUE_KIND``),
drops retractions (``_VALUE_KIND`` -U/-D) as the engine's raw read does, applies the filter,
and selects the read's columns. Spark's file sources make every column nullable, so a read with
this path on declares every column nullable (the values are the same)."""

import contextlib
import datetime
import decimal
import os
from typing import Any, Dict, List, Optional, Sequence, Tuple

import pyarrow as pa

from paimon_rs.predicate import Predicate
from paimon_rs.spark.common import _session_confs, spark_schema_of

#: Paimon's row kinds that retract a row (``_VALUE_KIND``: -U = 1, -D = 3)
_RETRACT_KINDS = (1, 3)
_VALUE_KIND = "_VALUE_KIND"
#: characters Spark's ``DataSource`` expands as a glob in a path
_GLOB_CHARS = set("*?[]{}\\")

_COMPARISONS = {"equal": "==", "not_equal": "!=", "less_than": "<", "less_or_equal": "<=",
                "greater_than": ">", "greater_or_equal": ">="}


def _type_fits(t: pa.DataType) -> bool:
    """Whether Spark's Parquet reader gives exactly the engine's values for a column of ``t``."""
    if (pa.types.is_integer(t) and pa.types.is_signed_integer(t)) or pa.types.is_floating(t):
        return not pa.types.is_float16(t)
    if pa.types.is_boolean(t) or pa.types.is_string(t) or pa.types.is_binary(t) or pa.types.is_date32(t):
        return True
    if pa.types.is_decimal128(t):
        return True
    if pa.types.is_timestamp(t):
        return t.unit in ("ms", "us")
    if pa.types.is_map(t):
        return _type_fits(t.key_type) and _type_fits(t.item_type)
    if pa.types.is_list(t):
        return _type_fits(t.value_type)
    if pa.types.is_struct(t):
        names = [t.field(i).name for i in range(t.num_fields)]
        return not _names_clash(names) and all(_type_fits(t.field(i).type) for i in range(t.num_fields))
    return False


def _names_clash(names: Sequence[str]) -> bool:
    lower = [n.lower() for n in names]
    return len(set(lower)) != len(lower)


def _filter_type_fits(t: pa.DataType) -> bool:
    """Operand types whose comparisons Spark and the engine agree on (not floats: NaN; not
    timestamps: a Python literal goes through the session zone)."""
    return (pa.types.is_integer(t) or pa.types.is_boolean(t) or pa.types.is_string(t)
            or pa.types.is_date32(t) or pa.types.is_decimal128(t))


def _filter_unfit(p: Predicate, schema: pa.Schema) -> Optional[str]:
    if p.method in ("and", "or"):
        for c in p.children:
            why = _filter_unfit(c, schema)
            if why:
                return why
        return None
    assert p.field is not None
    t = schema.field(p.field).type
    if not _filter_type_fits(t):
        return f"a filter on '{p.field}' ({t})"
    lits = list(p.literals or [])
    if any(x is None for x in lits):
        return f"a NULL literal in the filter on '{p.field}'"
    m = p.builder_method
    if m in _COMPARISONS or m in ("between", "not_between"):
        return None
    if m in ("is_null", "is_not_null"):
        return None
    if m in ("is_in", "is_not_in"):
        return None if lits else f"an empty {m} list on '{p.field}'"
    if m in ("startswith", "endswith", "contains") and pa.types.is_string(t):
        return None
    return f"the filter operator {m} on '{p.field}'"


def _paimon_type_unfit(t: Any) -> Optional[str]:
    """A Paimon type (schema JSON) whose Parquet form differs from its Arrow form's: MULTISET
    (a map of counts in Parquet, a list in Arrow), BINARY(n) (fixed-length in Parquet)."""
    if isinstance(t, str):
        base = t.split("(")[0].split(" ")[0].upper()
        return t if base == "BINARY" or base == "MULTISET" else None
    if isinstance(t, dict):
        if str(t.get("type", "")).upper().startswith("MULTISET"):
            return "MULTISET"
        for k in ("element", "key", "value"):
            if k in t:
                why = _paimon_type_unfit(t[k])
                if why:
                    return why
        for f in t.get("fields", []):
            why = _paimon_type_unfit(f.get("type"))
            if why:
                return why
    return None


def unfit_read(table_path: str, output: pa.Schema, columns: Sequence[str], table_schema: pa.Schema,
               filter: Optional[Predicate], paimon_types: Optional[Dict[str, Any]] = None) -> Optional[str]:
    """Why no split of this read can take Spark's Parquet reader (None: splits are judged one by
    one with ``split_fits``). ``paimon_types``: column -> Paimon type (schema JSON)."""
    if "://" in table_path and not table_path.startswith("file:"):
        return f"the table is on {table_path.split('://')[0]}:// (Spark reads local files only here)"
    if list(output.names) != list(columns):
        return "the read yields row kinds (an incremental scan)"
    if _names_clash(table_schema.names):
        return "two columns differ only in case"
    needed = list(columns) + (sorted(filter.fields()) if filter is not None else [])
    for name in dict.fromkeys(needed):
        t = table_schema.field(name).type
        paimon = _paimon_type_unfit((paimon_types or {}).get(name))
        if not _type_fits(t) or paimon:
            return (f"column '{name}' ({paimon or t}) is not read by Spark's Parquet reader as the engine "
                    f"reads it")
    if filter is not None:
        why = _filter_unfit(filter, table_schema)
        if why:
            return why
    return None


def _local(path: str) -> str:
    return path[len("file:"):] if path.startswith("file:") else path


def split_fits(split: Any, schema_id: int, table_path: str) -> Optional[List[str]]:
    """The exact local paths of ``split``'s files if Spark's Parquet reader can read it as the
    engine would (raw-convertible, no deletion vectors, Parquet files of ``schema_id`` in the
    bucket directory), else None."""
    if not split.raw_convertible or split.has_deletion_vectors:
        return None
    root = _local(table_path)
    paths = []
    for f in split.files:
        if f.schema_id != schema_id or not f.file_name.endswith(".parquet") or f.external_path is not None:
            return None
        p = os.path.join(root, split.bucket_path, f.file_name)
        if _GLOB_CHARS & set(p):
            return None
        paths.append(p)
    return paths


def may_retract(split: Any) -> bool:
    """Whether a file of this (primary-key) split may hold -U/-D rows (its manifest entry does
    not say it holds none)."""
    return any(f.delete_row_count != 0 for f in split.files)


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _literal(v: Any, spark_type: Any) -> Any:
    from pyspark.sql import functions as F

    if isinstance(v, (decimal.Decimal, datetime.date, bool, int, str, bytes)):
        return F.lit(v).cast(spark_type)
    raise TypeError(f"literal {v!r}")


def spark_condition(p: Predicate, schema: pa.Schema, spark_types: Dict[str, Any]) -> Any:
    """``p`` as a Spark Column with the engine's semantics (``_filter_unfit`` returned None):
    literals are the engine's (``Predicate.to_core`` checked them against the column type), so
    the cast to the column's Spark type is exact; a NULL operand drops the row in both."""
    from functools import reduce

    from pyspark.sql import functions as F

    if p.method in ("and", "or"):
        cs = [spark_condition(c, schema, spark_types) for c in p.children]
        if not cs:
            return F.lit(p.method == "and")
        return reduce((lambda a, b: a & b) if p.method == "and" else (lambda a, b: a | b), cs)
    assert p.field is not None
    col = F.col(_quote(p.field))
    st = spark_types[p.field]
    # the literals as the engine sees them: checked and converted to the column's Arrow type
    core = p.to_core(schema)
    lits = [_literal(v, st) for v in core[3].to_pylist()]
    m = p.builder_method
    if m == "equal":
        return col == lits[0]
    if m == "not_equal":
        return col != lits[0]
    if m == "less_than":
        return col < lits[0]
    if m == "less_or_equal":
        return col <= lits[0]
    if m == "greater_than":
        return col > lits[0]
    if m == "greater_or_equal":
        return col >= lits[0]
    if m == "between":
        return (col >= lits[0]) & (col <= lits[1])
    if m == "not_between":
        return (col < lits[0]) | (col > lits[1])
    if m == "is_null":
        return col.isNull()
    if m == "is_not_null":
        return col.isNotNull()
    if m == "is_in":
        return col.isin(*lits)
    if m == "is_not_in":
        return ~col.isin(*lits)
    if m == "startswith":
        return col.startswith(lits[0])
    if m == "endswith":
        return col.endswith(lits[0])
    if m == "contains":
        return col.contains(lits[0])
    raise ValueError(f"no Spark form for {m}")  # _filter_unfit let it through: a bug


#: the session conf above which Spark lists the paths a file source is given as a Spark job
#: (``HadoopFSUtils.parallelListLeafFiles``), and its default
_LISTING_CONF = "spark.sql.sources.parallelPartitionDiscovery.threshold"
_LISTING_DEFAULT = 32


def _serial_listing(spark: Any, paths: int) -> "contextlib.AbstractContextManager[None]":
    """Spark's file index lists the ``paths`` exact files on the driver, not as a Spark job.

    ``spark.read.parquet`` of more than 32 paths runs a job to "list" them (each a file whose
    status the manifest already gave us): 1.7 s for 100 files, 6.3 s for 1,000 (session 11,
    box at load 7), against 0.15 s and 0.6 s listed on the driver. The conf only chooses where
    the listing runs (the same statuses either way); it is raised for the frame's construction
    (the listing is eager) unless the session sets it itself, and unset after."""
    if paths <= _LISTING_DEFAULT:
        return contextlib.nullcontext()
    return _session_confs(spark, {_LISTING_CONF: str(paths)})


def _load_parquet(spark: Any, reader: Any, files: List[str]) -> Any:
    """``reader.parquet(*files)`` with the paths handed to the JVM in one call: PySpark passes a
    list element by element (a py4j round trip per path, ~0.6 s for 1,000 files). NUL cannot
    occur in a path. Spark Connect (no JVM here) takes the list as PySpark does."""
    try:
        jvm = spark.sparkContext._jvm
        jreader, to_frame = reader._jreader, reader._df
    except Exception:  # noqa: BLE001 (Spark Connect, or a PySpark without these internals)
        return reader.parquet(*files)
    paths = jvm.java.util.regex.Pattern.compile("\0").split("\0".join(files))
    return to_frame(jreader.parquet(paths))


def parquet_frame(spark: Any, files: List[str], spark_schema: Any, table_schema: pa.Schema,
                  filter: Optional[Predicate], primary_key: bool, drop_retractions: bool) -> Any:
    """Spark's Parquet reader over exactly ``files``: the rows the engine's raw read gives, in
    ``spark_schema``'s columns (all nullable). Every py4j call here is a round trip to the JVM
    (~0.3-1 ms): the frame takes the columns it reads in ``spark_schema``'s order, so it needs
    no projection unless the filter or ``_VALUE_KIND`` adds columns."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import ByteType, StructField, StructType

    names = list(spark_schema.names)
    extra = [n for n in sorted(filter.fields()) if n not in names] if filter is not None else []
    read_fields = list(spark_schema.fields)
    if extra:
        read_fields += list(spark_schema_of(pa.schema([table_schema.field(n) for n in extra])).fields)
    if primary_key and drop_retractions:
        read_fields.append(StructField(_VALUE_KIND, ByteType(), True))
    reader = (spark.read.schema(StructType(read_fields))
              .option("mergeSchema", "false")
              # Paimon writes the proleptic Gregorian calendar, as Spark 3+ does
              .option("datetimeRebaseMode", "CORRECTED").option("int96RebaseMode", "CORRECTED")
              # a missing or damaged file is an error, as in the engine, whatever the session says
              .option("ignoreMissingFiles", "false").option("ignoreCorruptFiles", "false"))
    with _serial_listing(spark, len(files)):
        df = _load_parquet(spark, reader, files)
    if primary_key and drop_retractions:
        df = df.where(~F.col(_VALUE_KIND).isin(*_RETRACT_KINDS))
    if filter is not None:
        types = {f.name: f.dataType for f in read_fields}
        df = df.where(spark_condition(filter, table_schema, types))
    if len(read_fields) == len(names):
        return df  # the frame's columns are spark_schema's, in its order
    return df.select(*[F.col(_quote(n)) for n in names])


def as_nullable(spark_type: Any) -> Any:
    """``spark_type`` with every field, element and value nullable (Spark's file sources)."""
    from pyspark.sql.types import ArrayType, MapType, StructField, StructType

    if isinstance(spark_type, StructType):
        return StructType([StructField(f.name, as_nullable(f.dataType), True, f.metadata) for f in spark_type.fields])
    if isinstance(spark_type, ArrayType):
        return ArrayType(as_nullable(spark_type.elementType), True)
    if isinstance(spark_type, MapType):
        return MapType(as_nullable(spark_type.keyType), as_nullable(spark_type.valueType), True)
    return spark_type


def route(splits: Sequence[Any], schema_id: int, table_path: str) -> Tuple[List[str], bool, List[Any]]:
    """(files for Spark's reader, whether any of them may hold retractions, the other splits)."""
    files: List[str] = []
    retract = False
    rest = []
    for s in splits:
        paths = split_fits(s, schema_id, table_path)
        if paths is None:
            rest.append(s)
        else:
            files.extend(paths)
            retract = retract or may_retract(s)
    return files, retract, rest
