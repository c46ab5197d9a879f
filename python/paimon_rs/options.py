"""Table options as pypaimon's ``CoreOptions``: the option keys as constants
(``CoreOptions.BUCKET.key()`` is ``"bucket"``, every constant pypaimon 2.1.0 defines plus the keys
paimon_rs implements that it has no constant for), each with its type and Paimon's default, and
``CoreOptions(options)``: a table's options with pypaimon's typed accessors::

    opts = CoreOptions.from_dict(table.options)
    opts.bucket()                       # -1 when unset
    opts.target_file_size(True)         # bytes: 128 MiB for a primary-key table when unset
    opts.get(CoreOptions.FILE_FORMAT)   # "parquet"

A constant existing does not mean paimon_rs implements the option: docs/options.md lists those; a
write refuses the others. Values are parsed as Paimon does (``"256 kb"``, ``"10 s"``,
``"true"``); a value that does not parse raises ``ValueError`` naming the key.
"""

from __future__ import annotations

import datetime
import re
import warnings
from typing import Any, Dict, List, Mapping, Optional, Union

from paimon_rs.exceptions import InvalidArgumentError

#: The read options that pin a handle to a past state of the table (time travel): such a handle
#: cannot be written, deleted from or updated through.
TIME_TRAVEL_OPTIONS = ("scan.snapshot-id", "scan.tag-name", "scan.timestamp-millis", "scan.timestamp",
                       "scan.file-creation-time-millis", "scan.watermark", "scan.version")

_MEMORY_UNITS = {"": 1, "b": 1, "bytes": 1, "k": 1 << 10, "kb": 1 << 10, "kibibytes": 1 << 10,
                 "m": 1 << 20, "mb": 1 << 20, "mebibytes": 1 << 20, "g": 1 << 30, "gb": 1 << 30,
                 "gibibytes": 1 << 30, "t": 1 << 40, "tb": 1 << 40, "tebibytes": 1 << 40}
_DURATION_UNITS = {"": 1, "ms": 1, "milli": 1, "millis": 1, "millisecond": 1, "milliseconds": 1,
                   "s": 1000, "sec": 1000, "secs": 1000, "second": 1000, "seconds": 1000,
                   "min": 60_000, "m": 60_000, "minute": 60_000, "minutes": 60_000,
                   "h": 3_600_000, "hour": 3_600_000, "hours": 3_600_000,
                   "d": 86_400_000, "day": 86_400_000, "days": 86_400_000}


class MemorySize:
    """A size in bytes, as Paimon writes it (``"256 kb"``, ``"8 mb"``, ``"1024"``; units base 1024),
    as pypaimon's ``MemorySize``."""

    __slots__ = ("bytes",)

    def __init__(self, num_bytes: int):
        self.bytes = int(num_bytes)

    @staticmethod
    def parse(text: Union[str, int, MemorySize]) -> MemorySize:
        """``"256 kb"`` -> 262144 bytes. Raises ValueError for a negative or malformed size."""
        if isinstance(text, MemorySize):
            return text
        if isinstance(text, int):
            return MemorySize(text)
        m = re.fullmatch(r"\s*(\d+)\s*([a-zA-Z]*)\s*", str(text))
        unit = m.group(2).lower() if m else None
        if m is None or unit not in _MEMORY_UNITS:
            raise ValueError(f"Could not parse memory size '{text}' (a number and a unit: b, kb, mb, gb, tb)")
        return MemorySize(int(m.group(1)) * _MEMORY_UNITS[unit])

    @staticmethod
    def of_bytes(n: int) -> MemorySize:
        return MemorySize(n)

    @staticmethod
    def of_kibi_bytes(n: int) -> MemorySize:
        return MemorySize(n << 10)

    @staticmethod
    def of_mebi_bytes(n: int) -> MemorySize:
        return MemorySize(n << 20)

    def get_bytes(self) -> int:
        """The size in bytes."""
        return self.bytes

    def __eq__(self, other: object) -> bool:
        return isinstance(other, MemorySize) and other.bytes == self.bytes

    def __hash__(self) -> int:
        return hash(self.bytes)

    def __repr__(self) -> str:
        return f"MemorySize({self.bytes})"


def _parse_duration(key: str, text: Any) -> datetime.timedelta:
    if isinstance(text, datetime.timedelta):
        return text
    m = re.fullmatch(r"\s*(\d+)\s*([a-zA-Z]*)\s*", str(text))
    unit = m.group(2).lower() if m else None
    if m is None or unit not in _DURATION_UNITS:
        raise ValueError(f"Could not parse value '{text}' for key '{key}' (a duration: 10 ms, 5 s, 1 min, ...)")
    return datetime.timedelta(milliseconds=int(m.group(1)) * _DURATION_UNITS[unit])


def data_file_dir_prefix(options: Dict[str, str]) -> str:
    """``<data-file.path-directory>/`` as the engine normalizes it (``.`` segments and extra
    slashes dropped), or ``""`` when unset: what goes between the table (or an external root)
    and a data file's partition directory."""
    raw = options.get("data-file.path-directory")
    if raw is None:
        return ""
    parts = [p for p in raw.split("/") if p not in ("", ".")]
    return "/".join(parts) + "/" if parts else ""


def parse_map(v: str) -> Dict[str, str]:
    """A map option's ``k:v,k:v`` value (``file.format.per.level``: ``{"0": "avro", ...}``);
    quoted parts are unquoted as Java's splitter does."""
    out = {}
    for item in (i.strip() for i in v.split(",")):
        if item:
            k, _, val = item.strip("'\"").partition(":")
            out[k.strip().strip("'\"")] = val.strip().strip("'\"")
    return out


def _convert(key: str, kind: str, raw: Any) -> Any:
    """A raw option value (a string as stored, or already typed) as ``kind``."""
    try:
        if kind == "str":
            return raw if isinstance(raw, str) else str(raw)
        if kind == "bool":
            if isinstance(raw, bool):
                return raw
            text = str(raw).strip().lower()
            if text not in ("true", "false"):
                raise ValueError(f"'{raw}' is not a boolean (true or false)")
            return text == "true"
        if kind == "int":
            if isinstance(raw, bool):
                raise ValueError(f"'{raw}' is not an integer")
            return int(str(raw).strip()) if not isinstance(raw, int) else raw
        if kind == "float":
            return float(raw)
        if kind == "memory":
            return MemorySize.parse(raw)
        if kind == "duration":
            return _parse_duration(key, raw)
        if kind == "map":
            return dict(raw) if isinstance(raw, dict) else parse_map(str(raw))
    except ValueError as e:
        raise ValueError(f"Could not parse value '{raw}' for key '{key}': {e}") from None
    raise ValueError(f"unknown option type {kind!r} of key '{key}'")


_DECLARED_DOCS: Optional[Dict[str, str]] = None


def _declared_docs() -> Dict[str, str]:
    """Each declared option's one-line description (from the Rust declaration)."""
    global _DECLARED_DOCS
    if _DECLARED_DOCS is None:
        from paimon_rs import _core

        _DECLARED_DOCS = {d[0]: d[4] for d in _core.option_defs()[0]}
    return _DECLARED_DOCS


class ConfigOption:
    """One option: its key, value type and Paimon's default (pypaimon's ``ConfigOption``:
    ``key()``, ``default_value()``, ``has_default_value()``, ``description()``)."""

    __slots__ = ("_key", "_type", "_default", "_description")

    def __init__(self, key: str, type: str = "str", default: Any = None, description: str = ""):
        self._key = key
        self._type = type
        self._default = _convert(key, type, default) if default is not None else None
        self._description = description

    def key(self) -> str:
        """The option's key, e.g. ``"bucket"``."""
        return self._key

    def value_type(self) -> str:
        """``"str"``, ``"bool"``, ``"int"``, ``"float"``, ``"memory"`` (a ``MemorySize``) or
        ``"duration"`` (a ``datetime.timedelta``) or ``"map"`` (a dict)."""
        return self._type

    def description(self) -> str:
        """What the option does: its line in paimon_rs's declaration of options (Rust,
        options/defs.rs; docs/options-reference.md lists them all)."""
        return self._description or _declared_docs().get(self._key, "")

    def default_value(self) -> Any:
        """Paimon's default, typed (``-1`` for ``bucket``, ``MemorySize`` for sizes); None
        when the option has none."""
        return self._default

    def has_default_value(self) -> bool:
        return self._default is not None

    def convert(self, raw: Any) -> Any:
        """``raw`` (the stored string) as this option's type; ValueError naming the key."""
        return _convert(self._key, self._type, raw)

    def __str__(self) -> str:
        return self._key

    def __repr__(self) -> str:
        return f"ConfigOption({self._key!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ConfigOption) and other._key == self._key

    def __hash__(self) -> int:
        return hash(self._key)


class Options:
    """A map of option strings with typed reads (pypaimon's ``Options``)."""

    def __init__(self, data: Optional[Mapping[str, Any]] = None):
        self.data: Dict[str, Any] = dict(data) if data is not None else {}

    @classmethod
    def from_none(cls) -> Options:
        return cls({})

    def to_map(self) -> Dict[str, Any]:
        return self.data

    def get(self, option: ConfigOption, default: Any = None) -> Any:
        """The value of ``option`` as its type; ``default`` (else the option's default) when
        unset."""
        raw = self.data.get(option.key())
        if raw is not None:
            return option.convert(raw)
        return default if default is not None else option.default_value()

    def set(self, option: ConfigOption, value: Any) -> None:
        self.data[option.key()] = _to_string(value)

    def contains(self, option: ConfigOption) -> bool:
        return option.key() in self.data

    def contains_key(self, key: str) -> bool:
        return key in self.data

    def copy(self) -> Options:
        return Options(dict(self.data))


def _to_string(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, MemorySize):
        return f"{value.bytes} b"
    if isinstance(value, datetime.timedelta):
        return f"{int(value.total_seconds() * 1000)} ms"
    return str(value)


# Java's `CoreOptions.StartupMode` values
_STARTUP_MODES = frozenset({
    "default", "latest-full", "full", "latest", "compacted-full", "from-timestamp",
    "from-creation-timestamp", "from-file-creation-time", "from-snapshot", "from-snapshot-full",
    "incremental"})


class CoreOptions:
    """Table option keys (``CoreOptions.BUCKET.key()``)."""

    ADD_COLUMN_BEFORE_PARTITION = ConfigOption("add-column-before-partition", "bool", False)
    AGGREGATION_REMOVE_RECORD_ON_DELETE = ConfigOption("aggregation.remove-record-on-delete")
    AUTO_CREATE = ConfigOption("auto-create", "bool", False)
    BITMAP_INDEX_COMPRESSION = ConfigOption("bitmap-index.compression", "str", "none")
    BITMAP_INDEX_COMPRESSION_LEVEL = ConfigOption("bitmap-index.compression-level", "int", 1)
    BITMAP_INDEX_DICTIONARY_BLOCK_SIZE = ConfigOption("bitmap-index.dictionary-block-size", "memory", "16 kb")
    BITMAP_INDEX_FALLBACK_SCAN_MAX_SIZE = ConfigOption("bitmap-index.fallback-scan-max-size", "memory", "256 mb")
    BLOB_AS_DESCRIPTOR = ConfigOption("blob-as-descriptor", "bool", False)
    BLOB_COPY_BUFFER_SIZE = ConfigOption("blob.copy-buffer-size", "memory", "4 kb")
    BLOB_DESCRIPTOR_FIELD = ConfigOption("blob-descriptor-field")
    BLOB_FIELD = ConfigOption("blob-field")
    BLOB_TARGET_FILE_SIZE = ConfigOption("blob.target-file-size", "memory", "256 mb")
    BLOB_VIEW_FIELD = ConfigOption("blob-view-field")
    BLOB_VIEW_RESOLVE_ENABLED = ConfigOption("blob-view.resolve.enabled", "bool", True)
    BRANCH = ConfigOption("branch", "str", "main")
    BTREE_INDEX_BLOCK_SIZE = ConfigOption("btree-index.block-size", "memory", "64 kb")
    BTREE_INDEX_BLOOM_FILTER_ENABLED = ConfigOption("btree-index.bloom-filter.enabled")
    BTREE_INDEX_FALLBACK_SCAN_MAX_SIZE = ConfigOption("btree-index.fallback-scan-max-size", "memory", "256 mb")
    BTREE_INDEX_RECORDS_PER_RANGE = ConfigOption("btree-index.records-per-range", "int", 10_000_000)
    BUCKET = ConfigOption("bucket", "int", -1)
    BUCKET_KEY = ConfigOption("bucket-key")
    CHANGELOG_FILE_COMPRESSION = ConfigOption("changelog-file.compression")
    CHANGELOG_FILE_FORMAT = ConfigOption("changelog-file.format")
    CHANGELOG_FILE_STATS_MODE = ConfigOption("changelog-file.stats-mode")
    CHANGELOG_PRODUCER = ConfigOption("changelog-producer", "str", "none")
    COMMENT = ConfigOption("comment")
    COMMIT_MAX_RETRIES = ConfigOption("commit.max-retries", "int", 10)
    COMMIT_MAX_RETRY_WAIT = ConfigOption("commit.max-retry-wait", "duration", "10 s")
    COMMIT_MIN_RETRY_WAIT = ConfigOption("commit.min-retry-wait", "duration", "10 ms")
    COMMIT_NATIVE_ENABLED = ConfigOption("commit.native.enabled")
    COMMIT_TIMEOUT = ConfigOption("commit.timeout", "duration")
    COMMIT_USER_PREFIX = ConfigOption("commit.user-prefix")
    DATA_EVOLUTION_ENABLED = ConfigOption("data-evolution.enabled", "bool", False)
    DATA_EVOLUTION_ROW_ID_CONFLICT_REWRITE_MAX_SIZE = ConfigOption(
        "data-evolution.row-id-conflict-rewrite.max-size", "memory", "256 mb")
    DATA_EVOLUTION_ROW_SIDECAR_ENABLED = ConfigOption("data-evolution.row-sidecar.enabled", "bool", False)
    DATA_EVOLUTION_ROW_SIDECAR_MAX_SELECTED_ROWS = ConfigOption(
        "data-evolution.row-sidecar.max-selected-rows", "int", 4096)
    DATA_EVOLUTION_ROW_SIDECAR_MAX_SELECTION_RATIO = ConfigOption(
        "data-evolution.row-sidecar.max-selection-ratio", "float", 0.05)
    DATA_EVOLUTION_WRITE_COLS_OPTIMIZATION_ENABLED = ConfigOption("data-evolution.write-cols-optimization.enabled")
    DATA_FILE_EXTERNAL_PATHS = ConfigOption("data-file.external-paths")
    DATA_FILE_EXTERNAL_PATHS_SPECIFIC_FS = ConfigOption("data-file.external-paths.specific-fs")
    DATA_FILE_EXTERNAL_PATHS_STRATEGY = ConfigOption("data-file.external-paths.strategy", "str", "none")
    DATA_FILE_EXTERNAL_PATHS_WEIGHTS = ConfigOption("data-file.external-paths.weights")
    DATA_FILE_PATH_DIRECTORY = ConfigOption("data-file.path-directory")
    DATA_FILE_PREFIX = ConfigOption("data-file.prefix", "str", "data-")
    DEDUPLICATE_IGNORE_DELETE = ConfigOption("deduplicate.ignore-delete")
    DELETION_VECTORS_ENABLED = ConfigOption("deletion-vectors.enabled", "bool", False)
    DELETION_VECTORS_MERGE_ON_READ = ConfigOption("deletion-vectors.merge-on-read")
    DYNAMIC_BUCKET_MAX_BUCKETS = ConfigOption("dynamic-bucket.max-buckets", "int", -1)
    DYNAMIC_BUCKET_TARGET_ROW_NUM = ConfigOption("dynamic-bucket.target-row-num", "int", 2000000)
    DYNAMIC_PARTITION_OVERWRITE = ConfigOption("dynamic-partition-overwrite", "bool", True)
    FIELDS_DEFAULT_AGG_FUNC = ConfigOption("fields.default-aggregate-function")
    FILE_BLOCK_SIZE = ConfigOption("file.block-size", "memory")
    FILE_COMPRESSION = ConfigOption("file.compression", "str", "zstd")
    FILE_COMPRESSION_PER_LEVEL = ConfigOption("file.compression.per.level", "map", {})
    FILE_COMPRESSION_ZSTD_LEVEL = ConfigOption("file.compression.zstd-level", "int", 1)
    FILE_FORMAT = ConfigOption("file.format", "str", "parquet")
    FILE_FORMAT_PER_LEVEL = ConfigOption("file.format.per.level", "map", {})
    FIRST_ROW_IGNORE_DELETE = ConfigOption("first-row.ignore-delete")
    FULL_TEXT_INDEX_SEARCH_MODE = ConfigOption("full-text-index.search-mode", "str", "fast")
    GLOBAL_INDEX_BUILD_PARALLELISM = ConfigOption("global-index.build.parallelism")
    GLOBAL_INDEX_COLUMN_UPDATE_ACTION = ConfigOption("global-index.column-update-action", "str", "THROW_ERROR")
    GLOBAL_INDEX_ENABLED = ConfigOption("global-index.enabled", "bool", True)
    GLOBAL_INDEX_EXTERNAL_PATH = ConfigOption("global-index.external-path")
    GLOBAL_INDEX_FILTER_REFINE_FROM_DATA = ConfigOption("global-index.filter.refine-from-data")
    GLOBAL_INDEX_ROW_COUNT_PER_SHARD = ConfigOption("global-index.row-count-per-shard", "int", 100000)
    GLOBAL_INDEX_SEARCH_MODE = ConfigOption("global-index.search-mode")
    GLOBAL_INDEX_THREAD_NUM = ConfigOption("global-index.thread-num", "int", 32)
    IGNORE_DELETE = ConfigOption("ignore-delete", "bool", False)
    IGNORE_UPDATE_BEFORE = ConfigOption("ignore-update-before")
    INCREMENTAL_BETWEEN_TIMESTAMP = ConfigOption("incremental-between-timestamp")
    INDEX_FILE_IN_DATA_FILE_DIR = ConfigOption("index-file-in-data-file-dir")
    LOCAL_CACHE_BLOCK_SIZE = ConfigOption("local-cache.block-size", "memory", "1 mb")
    LOCAL_CACHE_DIR = ConfigOption("local-cache.dir")
    LOCAL_CACHE_ENABLED = ConfigOption("local-cache.enabled", "bool", False)
    LOCAL_CACHE_MAX_SIZE = ConfigOption("local-cache.max-size", "memory")
    LOCAL_CACHE_WHITELIST = ConfigOption("local-cache.whitelist", "str", "meta,global-index")
    LOCAL_SORT_MAX_NUM_FILE_HANDLES = ConfigOption("local-sort.max-num-file-handles")
    MANIFEST_COMPRESSION = ConfigOption("manifest.compression", "str", "zstd")
    MANIFEST_FULL_COMPACTION_THRESHOLD_SIZE = ConfigOption("manifest.full-compaction-threshold-size")
    MANIFEST_MERGE_MIN_COUNT = ConfigOption("manifest.merge-min-count", "int", 30)
    MANIFEST_SIDECAR_ENABLED = ConfigOption("manifest.sidecar.enabled")
    MANIFEST_SORT_ENABLED = ConfigOption("manifest-sort.enabled")
    MANIFEST_TARGET_FILE_SIZE = ConfigOption("manifest.target-file-size", "memory", "8 mb")
    MERGE_ENGINE = ConfigOption("merge-engine", "str", "deduplicate")
    METADATA_STATS_MODE = ConfigOption("metadata.stats-mode", "str", "truncate(16)")
    MOSAIC_NUM_BUCKETS = ConfigOption("mosaic.num-buckets", "int")
    MOSAIC_STATS_COLUMNS = ConfigOption("mosaic.stats-columns", "str", "")
    OWNER = ConfigOption("owner")
    PAGE_SIZE = ConfigOption("page-size")
    PARQUET_COLUMN_INDEX_ENABLED = ConfigOption("parquet.filter.columnindex.enabled")
    PARQUET_WRITE_PAGE_INDEX_ENABLED = ConfigOption("parquet.write-page-index.enabled")
    PARTIAL_UPDATE_IGNORE_DELETE = ConfigOption("partial-update.ignore-delete")
    PARTIAL_UPDATE_REMOVE_RECORD_ON_DELETE = ConfigOption("partial-update.remove-record-on-delete")
    PARTIAL_UPDATE_REMOVE_RECORD_ON_SEQUENCE_GROUP = ConfigOption("partial-update.remove-record-on-sequence-group")
    PARTITION_DEFAULT_NAME = ConfigOption("partition.default-name", "str", "__DEFAULT_PARTITION__")
    PARTITION_GENERATE_LEGACY_NAME = ConfigOption("partition.legacy-name")
    PATH = ConfigOption("path")
    PK_BITMAP_INDEX_COLUMNS = ConfigOption("pk-bitmap.index.columns")
    PK_BTREE_INDEX_COLUMNS = ConfigOption("pk-btree.index.columns")
    PK_FULL_TEXT_INDEX_COLUMNS = ConfigOption("pk-full-text.index.columns")
    PK_VECTOR_INDEX_COLUMNS = ConfigOption("pk-vector.index.columns")
    POSTPONE_BATCH_WRITE_FIXED_BUCKET = ConfigOption("postpone.batch-write-fixed-bucket", "bool", True)
    POSTPONE_BATCH_WRITE_FIXED_BUCKET_MAX_PARALLELISM = ConfigOption(
        "postpone.batch-write-fixed-bucket.max-parallelism", "int", 2048)
    POSTPONE_DEFAULT_BUCKET_NUM = ConfigOption("postpone.default-bucket-num", "int")
    POSTPONE_TARGET_ROW_NUM_PER_BUCKET = ConfigOption("postpone.target-row-num-per-bucket", "int")
    POSTPONE_TARGET_SIZE_PER_BUCKET = ConfigOption("postpone.target-size-per-bucket", "memory", "1 gb")
    PRIMARY_KEY_NULLABLE = ConfigOption("primary-key.nullable", "bool", False)
    QUERY_AUTH_ENABLED = ConfigOption("query-auth.enabled", "bool", False)
    READ_BATCH_SIZE = ConfigOption("read.batch-size", "int", 1024)
    READ_NATIVE_ENABLED = ConfigOption("read.native.enabled")
    READ_PARALLELISM = ConfigOption("read.parallelism", "int")
    ROWKIND_FIELD = ConfigOption("rowkind.field")
    ROW_TRACKING_ENABLED = ConfigOption("row-tracking.enabled", "bool", False)
    ROW_TRACKING_PARTITION_GROUP_ON_COMMIT = ConfigOption("row-tracking.partition-group-on-commit", "bool", True)
    SCALAR_INDEX_SEARCH_MODE = ConfigOption("scalar-index.search-mode", "str", "fast")
    SCAN_CREATION_TIME_MILLIS = ConfigOption("scan.creation-time-millis", "int")
    SCAN_FALLBACK_BRANCH = ConfigOption("scan.fallback-branch")
    SCAN_FILE_CREATION_TIME_MILLIS = ConfigOption("scan.file-creation-time-millis", "int")
    SCAN_MANIFEST_PARALLELISM = ConfigOption("scan.manifest.parallelism", "int", 16)
    SCAN_MODE = ConfigOption("scan.mode", "str", "default")
    SCAN_NATIVE_PLAN_ENABLED = ConfigOption("scan.native-plan.enabled", "bool", False)
    SCAN_SNAPSHOT_ID = ConfigOption("scan.snapshot-id", "int")
    SCAN_TAG_NAME = ConfigOption("scan.tag-name")
    SCAN_TIMESTAMP = ConfigOption("scan.timestamp")
    SCAN_TIMESTAMP_MILLIS = ConfigOption("scan.timestamp-millis", "int")
    SCAN_VERSION = ConfigOption("scan.version")
    SCAN_WATERMARK = ConfigOption("scan.watermark", "int")
    SEQUENCE_FIELD = ConfigOption("sequence.field")
    SEQUENCE_FIELD_SORT_ORDER = ConfigOption("sequence.field.sort-order", "str", "ascending")
    SNAPSHOT_IGNORE_EMPTY_COMMIT = ConfigOption("snapshot.ignore-empty-commit")
    SORTED_INDEX_RECORDS_PER_FILE = ConfigOption("sorted-index.records-per-file")
    SORT_SPILL_THRESHOLD = ConfigOption("sort-spill-threshold")
    SOURCE_SPLIT_OPEN_FILE_COST = ConfigOption("source.split.open-file-cost", "memory", "4 mb")
    SOURCE_SPLIT_TARGET_SIZE = ConfigOption("source.split.target-size", "memory", "128 mb")
    SPILL_COMPRESSION = ConfigOption("spill-compression")
    SPILL_COMPRESSION_ZSTD_LEVEL = ConfigOption("spill-compression.zstd-level")
    TARGET_FILE_ROW_NUM = ConfigOption("target-file-row-num", "int", (1 << 63) - 1)
    TARGET_FILE_SIZE = ConfigOption("target-file-size", "memory")
    TYPE = ConfigOption("type", "str", "table")
    VARIANT_SHREDDING_SCHEMA = ConfigOption("variant.shreddingSchema")
    VECTOR_FIELD = ConfigOption("vector-field")
    VECTOR_FILE_FORMAT = ConfigOption("vector.file.format")
    VECTOR_INDEX_SEARCH_MODE = ConfigOption("vector-index.search-mode", "str", "fast")
    VECTOR_TARGET_FILE_SIZE = ConfigOption("vector.target-file-size", "memory")
    VIDEO_FRAME_FIELD = ConfigOption("video-frame-field")
    WRITE_BUFFER_SIZE = ConfigOption("write-buffer-size")
    WRITE_BUFFER_SPILLABLE = ConfigOption("write-buffer-spillable")
    WRITE_BUFFER_SPILL_DIR = ConfigOption("write-buffer-spill.dir")
    WRITE_BUFFER_SPILL_MAX_DISK_SIZE = ConfigOption("write-buffer-spill.max-disk-size")
    WRITE_NATIVE_ENABLED = ConfigOption("write.native.enabled")


    # -- pypaimon's CoreOptions object -------------------------------------------------------

    def __init__(self, options: Union[Options, Mapping[str, Any], None] = None):
        """``options``: a dict of the table's options, a ``paimon_rs.options.Options`` or any
        object with pypaimon's ``to_map()`` (pypaimon's ``Options``)."""
        if isinstance(options, Options):
            self.options = options
        elif options is None:
            self.options = Options()
        elif hasattr(options, "to_map"):
            # pypaimon's Options: the same map, shared as pypaimon shares it
            self.options = Options()
            self.options.data = options.to_map()
        elif isinstance(options, Mapping):
            self.options = Options(options)
        else:
            raise TypeError(f"CoreOptions takes a dict or an Options, got {type(options).__name__}")

    @staticmethod
    def from_dict(options: Mapping[str, Any]) -> CoreOptions:
        """``CoreOptions(Options(options))``."""
        return CoreOptions(Options(options))

    @staticmethod
    def copy(options: CoreOptions) -> CoreOptions:
        """A CoreOptions over a copy of ``options``' map."""
        return CoreOptions.from_dict(dict(options.options.to_map()))

    @staticmethod
    def primary_key_nullable_from_dict(options: Mapping[str, Any]) -> bool:
        return CoreOptions.from_dict(options).primary_key_nullable()

    def get(self, option: ConfigOption, default: Any = None) -> Any:
        """The value of ``option`` as its type (or ``default``, else Paimon's default)."""
        return self.options.get(option, default)

    def set(self, option: ConfigOption, value: Any) -> None:
        self.options.set(option, value)

    def startup_mode(self) -> str:
        """Where a scan starts, ``scan.mode`` resolved as Java's ``CoreOptions.startupMode()``:
        ``default`` becomes ``from-timestamp`` (``scan.timestamp-millis`` / ``scan.timestamp``
        set), ``from-snapshot`` (``scan.snapshot-id`` / ``scan.tag-name`` / ``scan.watermark`` /
        ``scan.version``), ``from-file-creation-time``, ``from-creation-timestamp``,
        ``incremental`` (``incremental-between[-timestamp]``), else ``latest-full``; the
        deprecated ``full`` becomes ``latest-full`` (with pypaimon's DeprecationWarning). A
        string, equal to pypaimon's ``StartupMode`` member of that value (a ``str`` enum)."""
        mode = str(self.options.get(CoreOptions.SCAN_MODE)).lower()
        if mode == "full":
            warnings.warn("scan.mode 'full' is deprecated, use 'latest-full' instead.",
                          DeprecationWarning, stacklevel=2)
            return "latest-full"
        if mode not in _STARTUP_MODES:
            raise InvalidArgumentError(
                f"scan.mode '{mode}': expected one of {', '.join(sorted(_STARTUP_MODES))}")
        if mode != "default":
            return mode
        has = self.options.contains_key
        if has("scan.timestamp-millis") or has("scan.timestamp"):
            return "from-timestamp"
        if any(has(k) for k in ("scan.snapshot-id", "scan.tag-name", "scan.watermark", "scan.version")):
            return "from-snapshot"
        if has("scan.file-creation-time-millis"):
            return "from-file-creation-time"
        if has("scan.creation-time-millis"):
            return "from-creation-timestamp"
        if has("incremental-between") or has("incremental-between-timestamp"):
            return "incremental"
        return "latest-full"

    def to_map(self) -> Dict[str, Any]:
        return self.options.to_map()

    def __repr__(self) -> str:
        return f"CoreOptions({self.options.to_map()!r})"

    def _bytes(self, option: ConfigOption, default: Any) -> Optional[int]:
        v = self.options.get(option, MemorySize.parse(default) if default is not None else None)
        return v.get_bytes() if v is not None else None

    def _millis(self, option: ConfigOption) -> int:
        return int(self.options.get(option).total_seconds() * 1000)

    @staticmethod
    def _field_set(value: Any) -> set:
        if value is None:
            return set()
        if isinstance(value, str):
            value = value.split(",")
        return {str(f).strip() for f in value if str(f).strip()}

    def target_file_size(self, has_primary_key: bool, default: Any = None) -> int:
        """``target-file-size`` in bytes; unset: 128 MiB for a primary-key table, 256 MiB for
        an append table (or ``default``)."""
        fallback = MemorySize.parse(default) if default is not None else \
            MemorySize.of_mebi_bytes(128 if has_primary_key else 256)
        return self.options.get(CoreOptions.TARGET_FILE_SIZE, fallback).get_bytes()

    def target_file_row_num(self) -> int:
        return self.options.get(CoreOptions.TARGET_FILE_ROW_NUM)

    def manifest_target_size(self, default: Any = None) -> int:
        return self._bytes(CoreOptions.MANIFEST_TARGET_FILE_SIZE, default)

    def source_split_target_size(self, default: Any = None) -> int:
        return self._bytes(CoreOptions.SOURCE_SPLIT_TARGET_SIZE, default)

    def source_split_open_file_cost(self, default: Any = None) -> int:
        return self._bytes(CoreOptions.SOURCE_SPLIT_OPEN_FILE_COST, default)

    def postpone_target_size_per_bucket(self, default: Any = None) -> int:
        return self._bytes(CoreOptions.POSTPONE_TARGET_SIZE_PER_BUCKET, default)

    def postpone_default_bucket_num(self) -> Optional[int]:
        """``postpone.default-bucket-num`` (None when unset); not a positive 32-bit integer:
        ``InvalidArgumentError``."""
        value = self.options.get(CoreOptions.POSTPONE_DEFAULT_BUCKET_NUM)
        if value is not None and not 0 < value <= 2147483647:
            raise InvalidArgumentError("postpone.default-bucket-num must be a positive 32-bit integer")
        return value

    def metadata_stats_enabled(self, default: Any = None) -> bool:
        return self.options.get(CoreOptions.METADATA_STATS_MODE, default) == "full"

    def sequence_field(self) -> List[str]:
        """``sequence.field`` as a list (Java's ``split(",")`` then trim: trailing empty parts
        dropped, inner ones kept); empty when unset."""
        raw = self.options.get(CoreOptions.SEQUENCE_FIELD)
        if not raw:
            return []
        parts = raw.split(",")
        while parts and parts[-1] == "":
            parts.pop()
        return [p.strip() for p in parts]

    def sequence_field_sort_order_is_ascending(self) -> bool:
        return self.options.get(CoreOptions.SEQUENCE_FIELD_SORT_ORDER).lower() == "ascending"

    def ignore_delete(self) -> bool:
        """``ignore-delete`` or its per-engine fallback keys (first set wins), as Java."""
        raw = self.options.to_map()
        for key in ("ignore-delete", "first-row.ignore-delete", "deduplicate.ignore-delete",
                    "partial-update.ignore-delete"):
            if raw.get(key) is not None:
                return _convert(key, "bool", raw[key])
        return False

    def data_file_external_paths(self, default: Any = None) -> Optional[List[str]]:
        v = self.options.get(CoreOptions.DATA_FILE_EXTERNAL_PATHS, default)
        return [p.strip() for p in v.split(",") if p.strip()] if v else None

    def data_file_path_directory(self, default: Any = None) -> Optional[str]:
        """``data-file.path-directory``: the directory under the table data files live in."""
        return self.options.get(CoreOptions.DATA_FILE_PATH_DIRECTORY, default)

    def data_file_external_paths_weights(self, default: Any = None) -> Optional[List[int]]:
        """The weights as ints; ValueError for a weight that is not a positive integer."""
        v = self.options.get(CoreOptions.DATA_FILE_EXTERNAL_PATHS_WEIGHTS, default)
        if v is None:
            return None
        weights = []
        for part in v.split(","):
            w = int(part.strip())
            if w <= 0:
                raise ValueError(f"Weight must be positive, got: {w}")
            weights.append(w)
        return weights

    def commit_timeout(self) -> int:
        """``commit.timeout`` in ms (``sys.maxsize`` when unset: no timeout)."""
        import sys
        t = self.options.get(CoreOptions.COMMIT_TIMEOUT)
        return sys.maxsize if t is None else int(t.total_seconds() * 1000)

    def commit_min_retry_wait(self) -> int:
        """``commit.min-retry-wait`` in ms."""
        return self._millis(CoreOptions.COMMIT_MIN_RETRY_WAIT)

    def commit_max_retry_wait(self) -> int:
        """``commit.max-retry-wait`` in ms."""
        return self._millis(CoreOptions.COMMIT_MAX_RETRY_WAIT)

    def blob_field(self, default: Any = None) -> set:
        return self._field_set(self.options.get(CoreOptions.BLOB_FIELD, default))

    def blob_descriptor_fields(self, default: Any = None) -> set:
        return self._field_set(self.options.get(CoreOptions.BLOB_DESCRIPTOR_FIELD, default))

    def blob_view_fields(self, default: Any = None) -> set:
        return self._field_set(self.options.get(CoreOptions.BLOB_VIEW_FIELD, default))

    def with_vector_format(self) -> bool:
        return self.options.contains(CoreOptions.VECTOR_FILE_FORMAT)

    def scalar_index_search_mode(self) -> str:
        """``scalar-index.search-mode``, else ``global-index.search-mode``, else ``fast``."""
        return self._family_search_mode(CoreOptions.SCALAR_INDEX_SEARCH_MODE)

    def vector_index_search_mode(self) -> str:
        """``vector-index.search-mode``, else ``global-index.search-mode``, else ``fast``."""
        return self._family_search_mode(CoreOptions.VECTOR_INDEX_SEARCH_MODE)

    def full_text_index_search_mode(self) -> str:
        """``full-text-index.search-mode``, else ``global-index.search-mode``, else ``fast``."""
        return self._family_search_mode(CoreOptions.FULL_TEXT_INDEX_SEARCH_MODE)

    def _family_search_mode(self, option: ConfigOption) -> str:
        if self.options.contains(option):
            return self.options.get(option)
        fallback = self.options.get(CoreOptions.GLOBAL_INDEX_SEARCH_MODE)
        return fallback if fallback is not None else self.options.get(option)

    def field_listagg_delimiter(self, field_name: str) -> str:
        """``fields.<name>.list-agg-delimiter`` (default ``,``)."""
        return self.options.data.get(f"fields.{field_name}.list-agg-delimiter", ",")

    def field_collect_distinct(self, field_name: str) -> bool:
        """``fields.<name>.distinct`` (default false)."""
        key = f"fields.{field_name}.distinct"
        return _convert(key, "bool", self.options.data.get(key, False))

    @property
    def query_auth_enabled(self) -> bool:
        return self.options.get(CoreOptions.QUERY_AUTH_ENABLED)


def _simple_accessor(option: ConfigOption, name: str) -> Any:
    def accessor(self: CoreOptions, default: Any = None) -> Any:
        return self.options.get(option, default)
    accessor.__name__ = name
    accessor.__doc__ = f"``{option.key()}`` as {option.value_type()} (Paimon's default: {option.default_value()!r})."
    return accessor


# pypaimon's one-line accessors: name -> the option it reads (typed, with Paimon's default)
_ACCESSORS = {
    "path": "PATH", "auto_create": "AUTO_CREATE", "type": "TYPE", "branch": "BRANCH", "bucket": "BUCKET",
    "bucket_key": "BUCKET_KEY", "primary_key_nullable": "PRIMARY_KEY_NULLABLE",
    "dynamic_bucket_target_row_num": "DYNAMIC_BUCKET_TARGET_ROW_NUM",
    "dynamic_bucket_max_buckets": "DYNAMIC_BUCKET_MAX_BUCKETS",
    "postpone_batch_write_fixed_bucket": "POSTPONE_BATCH_WRITE_FIXED_BUCKET",
    "postpone_batch_write_fixed_bucket_max_parallelism": "POSTPONE_BATCH_WRITE_FIXED_BUCKET_MAX_PARALLELISM",
    "postpone_target_row_num_per_bucket": "POSTPONE_TARGET_ROW_NUM_PER_BUCKET",
    "scan_manifest_parallelism": "SCAN_MANIFEST_PARALLELISM", "manifest_compression": "MANIFEST_COMPRESSION",
    "manifest_merge_min_count": "MANIFEST_MERGE_MIN_COUNT", "file_format": "FILE_FORMAT",
    "file_compression": "FILE_COMPRESSION", "file_compression_zstd_level": "FILE_COMPRESSION_ZSTD_LEVEL",
    "file_compression_per_level": "FILE_COMPRESSION_PER_LEVEL", "file_format_per_level": "FILE_FORMAT_PER_LEVEL",
    "file_block_size": "FILE_BLOCK_SIZE", "blob_as_descriptor": "BLOB_AS_DESCRIPTOR",
    "vector_file_format": "VECTOR_FILE_FORMAT", "data_file_prefix": "DATA_FILE_PREFIX", "scan_mode": "SCAN_MODE",
    "scan_fallback_branch": "SCAN_FALLBACK_BRANCH", "incremental_between_timestamp": "INCREMENTAL_BETWEEN_TIMESTAMP",
    "scan_tag_name": "SCAN_TAG_NAME", "scan_snapshot_id": "SCAN_SNAPSHOT_ID",
    "scan_timestamp_millis": "SCAN_TIMESTAMP_MILLIS", "scan_timestamp": "SCAN_TIMESTAMP",
    "scan_watermark": "SCAN_WATERMARK", "commit_user_prefix": "COMMIT_USER_PREFIX",
    "row_tracking_enabled": "ROW_TRACKING_ENABLED",
    "row_tracking_partition_group_on_commit": "ROW_TRACKING_PARTITION_GROUP_ON_COMMIT",
    "data_evolution_enabled": "DATA_EVOLUTION_ENABLED",
    "data_evolution_row_sidecar_enabled": "DATA_EVOLUTION_ROW_SIDECAR_ENABLED",
    "global_index_column_update_action": "GLOBAL_INDEX_COLUMN_UPDATE_ACTION",
    "deletion_vectors_enabled": "DELETION_VECTORS_ENABLED", "native_plan_enabled": "SCAN_NATIVE_PLAN_ENABLED",
    "changelog_producer": "CHANGELOG_PRODUCER", "changelog_file_format": "CHANGELOG_FILE_FORMAT",
    "merge_engine": "MERGE_ENGINE", "data_file_external_paths_strategy": "DATA_FILE_EXTERNAL_PATHS_STRATEGY",
    "data_file_external_paths_specific_fs": "DATA_FILE_EXTERNAL_PATHS_SPECIFIC_FS",
    "commit_max_retries": "COMMIT_MAX_RETRIES", "global_index_enabled": "GLOBAL_INDEX_ENABLED",
    "global_index_search_mode": "GLOBAL_INDEX_SEARCH_MODE", "global_index_thread_num": "GLOBAL_INDEX_THREAD_NUM",
    "global_index_row_count_per_shard": "GLOBAL_INDEX_ROW_COUNT_PER_SHARD",
    "local_cache_enabled": "LOCAL_CACHE_ENABLED", "local_cache_dir": "LOCAL_CACHE_DIR",
    "local_cache_max_size": "LOCAL_CACHE_MAX_SIZE", "local_cache_block_size": "LOCAL_CACHE_BLOCK_SIZE",
    "local_cache_whitelist": "LOCAL_CACHE_WHITELIST", "read_batch_size": "READ_BATCH_SIZE",
    "read_parallelism": "READ_PARALLELISM", "add_column_before_partition": "ADD_COLUMN_BEFORE_PARTITION",
    "dynamic_partition_overwrite": "DYNAMIC_PARTITION_OVERWRITE",
}
for _name, _const in _ACCESSORS.items():
    setattr(CoreOptions, _name, _simple_accessor(getattr(CoreOptions, _const), _name))
del _name, _const


__all__ = ["ConfigOption", "CoreOptions", "MemorySize", "Options"]
