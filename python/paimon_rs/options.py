"""Option keys as constants, as pypaimon's ``CoreOptions`` (``CoreOptions.BUCKET.key()`` is
``"bucket"``): every constant pypaimon 2.1.0 defines, plus the keys paimon_rs implements that it has
no constant for. A constant existing does not mean paimon_rs implements the option: docs/options.md
lists those; a write refuses the others."""

from __future__ import annotations

from typing import Optional


class ConfigOption:
    """One option key (pypaimon's ``ConfigOption``: ``key()``, ``description()``)."""

    __slots__ = ("_key", "_description")

    def __init__(self, key: str, description: str = ""):
        self._key = key
        self._description = description

    def key(self) -> str:
        """The option's key, e.g. ``"bucket"``."""
        return self._key

    def description(self) -> str:
        """What the option does (empty: see docs/options.md)."""
        return self._description

    def default_value(self) -> Optional[str]:
        """paimon_rs keeps defaults in the engine; docs/options.md lists them."""
        return None

    def has_default_value(self) -> bool:
        return False

    def __str__(self) -> str:
        return self._key

    def __repr__(self) -> str:
        return f"ConfigOption({self._key!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ConfigOption) and other._key == self._key

    def __hash__(self) -> int:
        return hash(self._key)


class CoreOptions:
    """Table option keys (``CoreOptions.BUCKET.key()``)."""

    ADD_COLUMN_BEFORE_PARTITION = ConfigOption("add-column-before-partition")
    AGGREGATION_REMOVE_RECORD_ON_DELETE = ConfigOption("aggregation.remove-record-on-delete")
    AUTO_CREATE = ConfigOption("auto-create")
    BITMAP_INDEX_COMPRESSION = ConfigOption("bitmap-index.compression")
    BITMAP_INDEX_COMPRESSION_LEVEL = ConfigOption("bitmap-index.compression-level")
    BITMAP_INDEX_DICTIONARY_BLOCK_SIZE = ConfigOption("bitmap-index.dictionary-block-size")
    BITMAP_INDEX_FALLBACK_SCAN_MAX_SIZE = ConfigOption("bitmap-index.fallback-scan-max-size")
    BLOB_AS_DESCRIPTOR = ConfigOption("blob-as-descriptor")
    BLOB_COPY_BUFFER_SIZE = ConfigOption("blob.copy-buffer-size")
    BLOB_DESCRIPTOR_FIELD = ConfigOption("blob-descriptor-field")
    BLOB_FIELD = ConfigOption("blob-field")
    BLOB_TARGET_FILE_SIZE = ConfigOption("blob.target-file-size")
    BLOB_VIEW_FIELD = ConfigOption("blob-view-field")
    BLOB_VIEW_RESOLVE_ENABLED = ConfigOption("blob-view.resolve.enabled")
    BRANCH = ConfigOption("branch")
    BTREE_INDEX_BLOCK_SIZE = ConfigOption("btree-index.block-size")
    BTREE_INDEX_BLOOM_FILTER_ENABLED = ConfigOption("btree-index.bloom-filter.enabled")
    BTREE_INDEX_FALLBACK_SCAN_MAX_SIZE = ConfigOption("btree-index.fallback-scan-max-size")
    BTREE_INDEX_RECORDS_PER_RANGE = ConfigOption("btree-index.records-per-range")
    BUCKET = ConfigOption("bucket")
    BUCKET_KEY = ConfigOption("bucket-key")
    CHANGELOG_FILE_COMPRESSION = ConfigOption("changelog-file.compression")
    CHANGELOG_FILE_FORMAT = ConfigOption("changelog-file.format")
    CHANGELOG_FILE_STATS_MODE = ConfigOption("changelog-file.stats-mode")
    CHANGELOG_PRODUCER = ConfigOption("changelog-producer")
    COMMENT = ConfigOption("comment")
    COMMIT_MAX_RETRIES = ConfigOption("commit.max-retries")
    COMMIT_MAX_RETRY_WAIT = ConfigOption("commit.max-retry-wait")
    COMMIT_MIN_RETRY_WAIT = ConfigOption("commit.min-retry-wait")
    COMMIT_NATIVE_ENABLED = ConfigOption("commit.native.enabled")
    COMMIT_TIMEOUT = ConfigOption("commit.timeout")
    COMMIT_USER_PREFIX = ConfigOption("commit.user-prefix")
    DATA_EVOLUTION_ENABLED = ConfigOption("data-evolution.enabled")
    DATA_EVOLUTION_ROW_ID_CONFLICT_REWRITE_MAX_SIZE = ConfigOption("data-evolution.row-id-conflict-rewrite.max-size")
    DATA_EVOLUTION_ROW_SIDECAR_ENABLED = ConfigOption("data-evolution.row-sidecar.enabled")
    DATA_EVOLUTION_ROW_SIDECAR_MAX_SELECTED_ROWS = ConfigOption("data-evolution.row-sidecar.max-selected-rows")
    DATA_EVOLUTION_ROW_SIDECAR_MAX_SELECTION_RATIO = ConfigOption("data-evolution.row-sidecar.max-selection-ratio")
    DATA_EVOLUTION_WRITE_COLS_OPTIMIZATION_ENABLED = ConfigOption("data-evolution.write-cols-optimization.enabled")
    DATA_FILE_EXTERNAL_PATHS = ConfigOption("data-file.external-paths")
    DATA_FILE_EXTERNAL_PATHS_SPECIFIC_FS = ConfigOption("data-file.external-paths.specific-fs")
    DATA_FILE_EXTERNAL_PATHS_STRATEGY = ConfigOption("data-file.external-paths.strategy")
    DATA_FILE_EXTERNAL_PATHS_WEIGHTS = ConfigOption("data-file.external-paths.weights")
    DATA_FILE_PATH_DIRECTORY = ConfigOption("data-file.path-directory")
    DATA_FILE_PREFIX = ConfigOption("data-file.prefix")
    DEDUPLICATE_IGNORE_DELETE = ConfigOption("deduplicate.ignore-delete")
    DELETION_VECTORS_ENABLED = ConfigOption("deletion-vectors.enabled")
    DELETION_VECTORS_MERGE_ON_READ = ConfigOption("deletion-vectors.merge-on-read")
    DYNAMIC_BUCKET_MAX_BUCKETS = ConfigOption("dynamic-bucket.max-buckets")
    DYNAMIC_BUCKET_TARGET_ROW_NUM = ConfigOption("dynamic-bucket.target-row-num")
    DYNAMIC_PARTITION_OVERWRITE = ConfigOption("dynamic-partition-overwrite")
    FIELDS_DEFAULT_AGG_FUNC = ConfigOption("fields.default-aggregate-function")
    FILE_BLOCK_SIZE = ConfigOption("file.block-size")
    FILE_COMPRESSION = ConfigOption("file.compression")
    FILE_COMPRESSION_PER_LEVEL = ConfigOption("file.compression.per.level")
    FILE_COMPRESSION_ZSTD_LEVEL = ConfigOption("file.compression.zstd-level")
    FILE_FORMAT = ConfigOption("file.format")
    FILE_FORMAT_PER_LEVEL = ConfigOption("file.format.per.level")
    FIRST_ROW_IGNORE_DELETE = ConfigOption("first-row.ignore-delete")
    FULL_TEXT_INDEX_SEARCH_MODE = ConfigOption("full-text-index.search-mode")
    GLOBAL_INDEX_BUILD_PARALLELISM = ConfigOption("global-index.build.parallelism")
    GLOBAL_INDEX_COLUMN_UPDATE_ACTION = ConfigOption("global-index.column-update-action")
    GLOBAL_INDEX_ENABLED = ConfigOption("global-index.enabled")
    GLOBAL_INDEX_EXTERNAL_PATH = ConfigOption("global-index.external-path")
    GLOBAL_INDEX_FILTER_REFINE_FROM_DATA = ConfigOption("global-index.filter.refine-from-data")
    GLOBAL_INDEX_ROW_COUNT_PER_SHARD = ConfigOption("global-index.row-count-per-shard")
    GLOBAL_INDEX_SEARCH_MODE = ConfigOption("global-index.search-mode")
    GLOBAL_INDEX_THREAD_NUM = ConfigOption("global-index.thread-num")
    IGNORE_DELETE = ConfigOption("ignore-delete")
    IGNORE_UPDATE_BEFORE = ConfigOption("ignore-update-before")
    INCREMENTAL_BETWEEN_TIMESTAMP = ConfigOption("incremental-between-timestamp")
    INDEX_FILE_IN_DATA_FILE_DIR = ConfigOption("index-file-in-data-file-dir")
    LOCAL_CACHE_BLOCK_SIZE = ConfigOption("local-cache.block-size")
    LOCAL_CACHE_DIR = ConfigOption("local-cache.dir")
    LOCAL_CACHE_ENABLED = ConfigOption("local-cache.enabled")
    LOCAL_CACHE_MAX_SIZE = ConfigOption("local-cache.max-size")
    LOCAL_CACHE_WHITELIST = ConfigOption("local-cache.whitelist")
    LOCAL_SORT_MAX_NUM_FILE_HANDLES = ConfigOption("local-sort.max-num-file-handles")
    MANIFEST_COMPRESSION = ConfigOption("manifest.compression")
    MANIFEST_FULL_COMPACTION_THRESHOLD_SIZE = ConfigOption("manifest.full-compaction-threshold-size")
    MANIFEST_MERGE_MIN_COUNT = ConfigOption("manifest.merge-min-count")
    MANIFEST_SIDECAR_ENABLED = ConfigOption("manifest.sidecar.enabled")
    MANIFEST_SORT_ENABLED = ConfigOption("manifest-sort.enabled")
    MANIFEST_TARGET_FILE_SIZE = ConfigOption("manifest.target-file-size")
    MERGE_ENGINE = ConfigOption("merge-engine")
    METADATA_STATS_MODE = ConfigOption("metadata.stats-mode")
    MOSAIC_NUM_BUCKETS = ConfigOption("mosaic.num-buckets")
    MOSAIC_STATS_COLUMNS = ConfigOption("mosaic.stats-columns")
    OWNER = ConfigOption("owner")
    PAGE_SIZE = ConfigOption("page-size")
    PARQUET_COLUMN_INDEX_ENABLED = ConfigOption("parquet.filter.columnindex.enabled")
    PARQUET_WRITE_PAGE_INDEX_ENABLED = ConfigOption("parquet.write-page-index.enabled")
    PARTIAL_UPDATE_IGNORE_DELETE = ConfigOption("partial-update.ignore-delete")
    PARTIAL_UPDATE_REMOVE_RECORD_ON_DELETE = ConfigOption("partial-update.remove-record-on-delete")
    PARTIAL_UPDATE_REMOVE_RECORD_ON_SEQUENCE_GROUP = ConfigOption("partial-update.remove-record-on-sequence-group")
    PARTITION_DEFAULT_NAME = ConfigOption("partition.default-name")
    PARTITION_GENERATE_LEGACY_NAME = ConfigOption("partition.legacy-name")
    PATH = ConfigOption("path")
    PK_BITMAP_INDEX_COLUMNS = ConfigOption("pk-bitmap.index.columns")
    PK_BTREE_INDEX_COLUMNS = ConfigOption("pk-btree.index.columns")
    PK_FULL_TEXT_INDEX_COLUMNS = ConfigOption("pk-full-text.index.columns")
    PK_VECTOR_INDEX_COLUMNS = ConfigOption("pk-vector.index.columns")
    POSTPONE_BATCH_WRITE_FIXED_BUCKET = ConfigOption("postpone.batch-write-fixed-bucket")
    POSTPONE_BATCH_WRITE_FIXED_BUCKET_MAX_PARALLELISM = ConfigOption(
        "postpone.batch-write-fixed-bucket.max-parallelism")
    POSTPONE_DEFAULT_BUCKET_NUM = ConfigOption("postpone.default-bucket-num")
    POSTPONE_TARGET_ROW_NUM_PER_BUCKET = ConfigOption("postpone.target-row-num-per-bucket")
    POSTPONE_TARGET_SIZE_PER_BUCKET = ConfigOption("postpone.target-size-per-bucket")
    PRIMARY_KEY_NULLABLE = ConfigOption("primary-key.nullable")
    QUERY_AUTH_ENABLED = ConfigOption("query-auth.enabled")
    READ_BATCH_SIZE = ConfigOption("read.batch-size")
    READ_NATIVE_ENABLED = ConfigOption("read.native.enabled")
    READ_PARALLELISM = ConfigOption("read.parallelism")
    ROWKIND_FIELD = ConfigOption("rowkind.field")
    ROW_TRACKING_ENABLED = ConfigOption("row-tracking.enabled")
    ROW_TRACKING_PARTITION_GROUP_ON_COMMIT = ConfigOption("row-tracking.partition-group-on-commit")
    SCALAR_INDEX_SEARCH_MODE = ConfigOption("scalar-index.search-mode")
    SCAN_CREATION_TIME_MILLIS = ConfigOption("scan.creation-time-millis")
    SCAN_FALLBACK_BRANCH = ConfigOption("scan.fallback-branch")
    SCAN_FILE_CREATION_TIME_MILLIS = ConfigOption("scan.file-creation-time-millis")
    SCAN_MANIFEST_PARALLELISM = ConfigOption("scan.manifest.parallelism")
    SCAN_MODE = ConfigOption("scan.mode")
    SCAN_NATIVE_PLAN_ENABLED = ConfigOption("scan.native-plan.enabled")
    SCAN_SNAPSHOT_ID = ConfigOption("scan.snapshot-id")
    SCAN_TAG_NAME = ConfigOption("scan.tag-name")
    SCAN_TIMESTAMP = ConfigOption("scan.timestamp")
    SCAN_TIMESTAMP_MILLIS = ConfigOption("scan.timestamp-millis")
    SCAN_VERSION = ConfigOption("scan.version")
    SCAN_WATERMARK = ConfigOption("scan.watermark")
    SEQUENCE_FIELD = ConfigOption("sequence.field")
    SEQUENCE_FIELD_SORT_ORDER = ConfigOption("sequence.field.sort-order")
    SNAPSHOT_IGNORE_EMPTY_COMMIT = ConfigOption("snapshot.ignore-empty-commit")
    SORTED_INDEX_RECORDS_PER_FILE = ConfigOption("sorted-index.records-per-file")
    SORT_SPILL_THRESHOLD = ConfigOption("sort-spill-threshold")
    SOURCE_SPLIT_OPEN_FILE_COST = ConfigOption("source.split.open-file-cost")
    SOURCE_SPLIT_TARGET_SIZE = ConfigOption("source.split.target-size")
    SPILL_COMPRESSION = ConfigOption("spill-compression")
    SPILL_COMPRESSION_ZSTD_LEVEL = ConfigOption("spill-compression.zstd-level")
    TARGET_FILE_ROW_NUM = ConfigOption("target-file-row-num")
    TARGET_FILE_SIZE = ConfigOption("target-file-size")
    TYPE = ConfigOption("type")
    VARIANT_SHREDDING_SCHEMA = ConfigOption("variant.shreddingSchema")
    VECTOR_FIELD = ConfigOption("vector-field")
    VECTOR_FILE_FORMAT = ConfigOption("vector.file.format")
    VECTOR_INDEX_SEARCH_MODE = ConfigOption("vector-index.search-mode")
    VECTOR_TARGET_FILE_SIZE = ConfigOption("vector.target-file-size")
    VIDEO_FRAME_FIELD = ConfigOption("video-frame-field")
    WRITE_BUFFER_SIZE = ConfigOption("write-buffer-size")
    WRITE_BUFFER_SPILLABLE = ConfigOption("write-buffer-spillable")
    WRITE_BUFFER_SPILL_DIR = ConfigOption("write-buffer-spill.dir")
    WRITE_BUFFER_SPILL_MAX_DISK_SIZE = ConfigOption("write-buffer-spill.max-disk-size")
    WRITE_NATIVE_ENABLED = ConfigOption("write.native.enabled")


__all__ = ["ConfigOption", "CoreOptions"]
