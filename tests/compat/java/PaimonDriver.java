/*
 * Test driver: Java Paimon as the reference implementation of the compat suite.
 *
 * One JVM per pytest session reads JSON requests, one per line, on stdin and answers each with one
 * JSON line on stdout: {"id": n, "ok": true, "result": ...} or {"id": n, "ok": false, "error":
 * "...", "trace": "..."}. Everything else the JVM prints (Paimon's logs) goes to stderr.
 *
 * Values cross in a canonical JSON form that round-trips exactly:
 *   BOOLEAN -> bool; TINYINT..BIGINT, DATE (days), TIME (millis of day) -> integer;
 *   FLOAT/DOUBLE -> string (Double.toString of the exact value; "NaN", "Infinity");
 *   DECIMAL -> plain string with the column's scale; CHAR/VARCHAR -> string;
 *   BINARY/VARBINARY -> base64; TIMESTAMP / TIMESTAMP_LTZ -> integer epoch nanoseconds;
 *   ARRAY -> list; MAP -> list of [key, value]; ROW -> list of the field values.
 * Types are Paimon's schema-file JSON ("INT NOT NULL", {"type": "ARRAY", "element": ...}).
 *
 * Compiled by tests/compat/java_env.py with `javac -cp <paimon bundle jar>`; works with the
 * Paimon 0.9.0 and 1.0-SNAPSHOT bundles.
 */

import org.apache.paimon.CoreOptions;
import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.CatalogContext;
import org.apache.paimon.catalog.CatalogFactory;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.compact.CompactUnit;
import org.apache.paimon.data.BinaryRow;
import org.apache.paimon.data.BinaryString;
import org.apache.paimon.data.Decimal;
import org.apache.paimon.data.GenericArray;
import org.apache.paimon.data.GenericMap;
import org.apache.paimon.data.GenericRow;
import org.apache.paimon.data.InternalArray;
import org.apache.paimon.data.InternalMap;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.data.Timestamp;
import org.apache.paimon.data.serializer.InternalRowSerializer;
import org.apache.paimon.disk.IOManager;
import org.apache.paimon.io.DataFileMeta;
import org.apache.paimon.manifest.FileSource;
import org.apache.paimon.mergetree.LevelSortedRun;
import org.apache.paimon.mergetree.SortedRun;
import org.apache.paimon.mergetree.compact.UniversalCompaction;
import org.apache.paimon.options.ExpireConfig;
import org.apache.paimon.options.Options;
import org.apache.paimon.predicate.Predicate;
import org.apache.paimon.predicate.PredicateBuilder;
import org.apache.paimon.reader.RecordReader;
import org.apache.paimon.schema.Schema;
import org.apache.paimon.schema.SchemaChange;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.JsonNodeFactory;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.paimon.stats.SimpleStats;
import org.apache.paimon.index.HashBucketAssigner;
import org.apache.paimon.table.BucketMode;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.Table;
import org.apache.paimon.table.sink.RowPartitionKeyExtractor;
import org.apache.paimon.table.sink.BatchTableCommit;
import org.apache.paimon.table.sink.BatchTableWrite;
import org.apache.paimon.table.sink.BatchWriteBuilder;
import org.apache.paimon.table.sink.CommitMessage;
import org.apache.paimon.table.sink.TableWriteImpl;
import org.apache.paimon.table.source.DataSplit;
import org.apache.paimon.table.source.ReadBuilder;
import org.apache.paimon.table.source.Split;
import org.apache.paimon.table.source.TableRead;
import org.apache.paimon.types.ArrayType;
import org.apache.paimon.types.DataField;
import org.apache.paimon.types.DataType;
import org.apache.paimon.types.DataTypeJsonParser;
import org.apache.paimon.types.DecimalType;
import org.apache.paimon.types.MapType;
import org.apache.paimon.types.RowKind;
import org.apache.paimon.types.RowType;
import org.apache.paimon.sort.hilbert.HilbertIndexer;
import org.apache.paimon.sort.zorder.ZIndexer;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

public final class PaimonDriver {
    private static final ObjectMapper MAPPER = new ObjectMapper();
    private static final JsonNodeFactory NODES = JsonNodeFactory.instance;
    private static final BigInteger MILLION = BigInteger.valueOf(1_000_000L);
    private static final Map<String, Catalog> CATALOGS = new HashMap<>();
    /** Spill and lookup files (first-row and lookup compaction need a local disk). */
    private static final IOManager IO_MANAGER =
            IOManager.create(System.getProperty("java.io.tmpdir"));

    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(System.out, true, "UTF-8");
        System.setOut(System.err); // logs never reach the protocol stream
        BufferedReader in =
                new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.trim().isEmpty()) {
                continue;
            }
            ObjectNode resp = NODES.objectNode();
            try {
                JsonNode req = MAPPER.readTree(line);
                resp.set("id", req.get("id"));
                String cmd = req.get("cmd").asText();
                if (cmd.equals("quit")) {
                    resp.put("ok", true);
                    out.println(MAPPER.writeValueAsString(resp));
                    break;
                }
                resp.set("result", dispatch(cmd, req));
                resp.put("ok", true);
            } catch (Throwable t) {
                resp.put("ok", false);
                resp.put("error", t.getClass().getName() + ": " + t.getMessage());
                StringWriter sw = new StringWriter();
                t.printStackTrace(new PrintWriter(sw));
                resp.put("trace", sw.toString());
            }
            out.println(MAPPER.writeValueAsString(resp));
        }
        for (Catalog c : CATALOGS.values()) {
            c.close();
        }
    }

    private static JsonNode dispatch(String cmd, JsonNode req) throws Exception {
        switch (cmd) {
            case "ping":
                {
                    // where Paimon's classes come from (the 0.9 JVM has both jars on its path)
                    ObjectNode o = NODES.objectNode();
                    o.put("paimon_jar",
                            Table.class.getProtectionDomain().getCodeSource().getLocation().getPath());
                    return o;
                }
            case "create_table":
                return createTable(req);
            case "write":
                return write(req);
            case "dv_delete":
                return dvDelete(req);
            case "compact":
                return compact(req);
            case "stream_read":
                return streamRead(req);
            case "read":
                return read(req);
            case "files":
                return files(req);
            case "create_tag":
                return createTag(req);
            case "expire_snapshots":
                return expireSnapshots(req);
            case "delete_tag":
                return deleteTag(req);
            case "list_tags":
                return listTags(req);
            case "rollback":
                return rollback(req);
            case "create_branch":
                return createBranch(req);
            case "delete_branch":
                return deleteBranch(req);
            case "fast_forward":
                return fastForward(req);
            case "list_branches":
                return listBranches(req);
            case "alter":
                return alter(req);
            case "universal_pick":
                return universalPick(req);
            case "schema":
                return schema(req);
            case "system_table":
                return systemTable(req);
            case "sort_index":
                return sortIndex(req);
            default:
                throw new IllegalArgumentException("unknown command " + cmd);
        }
    }

    // ------------------------------------------------------------------ catalog and tables

    private static Catalog catalog(JsonNode req) {
        String wh = req.get("warehouse").asText();
        return CATALOGS.computeIfAbsent(
                wh,
                w -> {
                    Options o = new Options();
                    o.set("warehouse", w);
                    // no table cache: paimon_rs alters the tables between calls
                    o.set("cache-enabled", "false");
                    // e.g. hadoop.fs.s3a.* of a warehouse on S3 (java_env.s3_catalog_options)
                    stringMap(req.get("catalog_options")).forEach(o::set);
                    return CatalogFactory.createCatalog(CatalogContext.create(o));
                });
    }

    private static Identifier ident(JsonNode req) {
        return Identifier.fromString(req.get("table").asText());
    }

    private static Table table(JsonNode req) throws Exception {
        Table t = catalog(req).getTable(ident(req));
        Map<String, String> dyn = stringMap(req.get("options"));
        if (req.hasNonNull("snapshot_id")) {
            dyn.put("scan.snapshot-id", req.get("snapshot_id").asText());
        }
        if (req.hasNonNull("tag")) {
            dyn.put("scan.tag-name", req.get("tag").asText());
        }
        if (req.hasNonNull("filter")) {
            // Paimon 1.0-SNAPSHOT's AppendOnlyFileStoreScan.testFileIndex fills a plain HashMap from
            // the manifest-reading threads (ConcurrentModificationException now and then; newer Paimon
            // uses a ConcurrentHashMap): a filtered scan reads its manifests on one thread here.
            dyn.putIfAbsent("scan.manifest.parallelism", "1");
        }
        return dyn.isEmpty() ? t : t.copy(dyn);
    }

    private static Map<String, String> stringMap(JsonNode n) {
        Map<String, String> m = new LinkedHashMap<>();
        if (n != null && !n.isNull()) {
            Iterator<Map.Entry<String, JsonNode>> it = n.fields();
            while (it.hasNext()) {
                Map.Entry<String, JsonNode> e = it.next();
                m.put(e.getKey(), e.getValue().asText());
            }
        }
        return m;
    }

    private static List<String> stringList(JsonNode n) {
        List<String> l = new ArrayList<>();
        if (n != null && !n.isNull()) {
            for (JsonNode x : n) {
                l.add(x.asText());
            }
        }
        return l;
    }

    private static JsonNode createTable(JsonNode req) throws Exception {
        Catalog cat = catalog(req);
        Identifier id = ident(req);
        cat.createDatabase(id.getDatabaseName(), true);
        Schema.Builder b = Schema.newBuilder();
        for (JsonNode f : req.get("fields")) {
            b.column(f.get("name").asText(), DataTypeJsonParser.parseDataType(f.get("type")));
        }
        b.primaryKey(stringList(req.get("primary_keys")));
        b.partitionKeys(stringList(req.get("partition_keys")));
        b.options(stringMap(req.get("table_options")));
        cat.createTable(id, b.build(), false);
        return schema(req);
    }

    private static JsonNode schema(JsonNode req) throws Exception {
        Table t = catalog(req).getTable(ident(req));
        ObjectNode r = NODES.objectNode();
        ArrayNode fields = r.putArray("fields");
        for (DataField f : t.rowType().getFields()) {
            ObjectNode fo = fields.addObject();
            fo.put("id", f.id());
            fo.put("name", f.name());
            fo.put("type", f.type().asSQLString());
        }
        r.set("primary_keys", MAPPER.valueToTree(t.primaryKeys()));
        r.set("partition_keys", MAPPER.valueToTree(t.partitionKeys()));
        r.set("options", MAPPER.valueToTree(t.options()));
        return r;
    }

    // ------------------------------------------------------------------ write and compact

    /**
     * {"commits": [{"rows": [[..]], "kinds": ["+I", ..]}], "overwrite": {part: value}|null,
     * "full_compaction": bool}. full_compaction: the commit fully compacts every bucket it wrote,
     * as Flink's GlobalFullCompactionSinkWrite does (a `full-compaction` table's writer).
     */
    private static JsonNode write(JsonNode req) throws Exception {
        Table t = table(req);
        RowType rt = t.rowType();
        ArrayNode snaps = NODES.arrayNode();
        for (JsonNode c : req.get("commits")) {
            BatchWriteBuilder wb = t.newBatchWriteBuilder();
            if (c.has("overwrite")) {
                wb = wb.withOverwrite(stringMap(c.get("overwrite")));
            }
            try (BatchTableWrite w = newWrite(wb);
                    BatchTableCommit commit = wb.newCommit()) {
                DynamicBuckets dyn = DynamicBuckets.of(t);
                JsonNode kinds = c.get("kinds");
                boolean fullCompaction = c.path("full_compaction").asBoolean(false);
                Set<List<Object>> written = new LinkedHashSet<>();
                int i = 0;
                for (JsonNode row : c.get("rows")) {
                    RowKind kind =
                            kinds == null || kinds.isNull()
                                    ? RowKind.INSERT
                                    : RowKind.fromShortString(kinds.get(i).asText());
                    GenericRow r = (GenericRow) fromJson(row, rt);
                    r.setRowKind(kind);
                    if (dyn != null) {
                        dyn.write(w, r);
                    } else {
                        w.write(r);
                        if (fullCompaction) {
                            TableWriteImpl<?> tw = (TableWriteImpl<?>) w;
                            written.add(
                                    Arrays.asList(tw.getPartition(r).copy(), tw.getBucket(r)));
                        }
                    }
                    i++;
                }
                if (dyn != null) {
                    dyn.prepareCommit();
                }
                for (List<Object> pb : written) {
                    w.compact((BinaryRow) pb.get(0), (Integer) pb.get(1), true);
                }
                commit.commit(w.prepareCommit());
            }
            snaps.add(latestSnapshot(req));
        }
        ObjectNode r = NODES.objectNode();
        r.set("snapshots", snaps);
        return r;
    }

    /**
     * Bucket assignment of a dynamic bucket table (bucket = -1), which Java's BatchTableWrite
     * leaves to its caller (write(row) refuses: "Can't extract bucket from row in dynamic bucket
     * mode"); Flink's sink does it in an assigner operator. HASH_DYNAMIC (the primary key holds
     * the partition keys): Java's own HashBucketAssigner over the HASH index, keyed as Flink's
     * HashBucketAssignerOperator does (trimmed primary key hash). CROSS_PARTITION: the job of
     * Flink's GlobalIndexAssigner (a key lives in one partition; an upsert into another partition
     * first deletes the key from the old one, as its default DeleteExistingProcessor does), kept
     * here in a map loaded from the table.
     */
    private static final class DynamicBuckets {
        private final RowPartitionKeyExtractor extractor;
        private final HashBucketAssigner hash;
        private final InternalRowSerializer serializer;
        private final long targetRows;
        private final InternalRow.FieldGetter[] getters;
        /** Column of `rowkind.field` (-1: none): Java's writer takes the row kind from it. */
        private final int kindField;
        /** CROSS_PARTITION: key -> (bucket, last row written for it, its partition). */
        private final Map<BinaryRow, Object[]> keys = new HashMap<>();
        private final Map<BinaryRow, Integer> partitionSize = new HashMap<>();

        private DynamicBuckets(FileStoreTable t) throws Exception {
            this.extractor = new RowPartitionKeyExtractor(t.schema());
            this.serializer = new InternalRowSerializer(t.rowType());
            this.targetRows = t.coreOptions().dynamicBucketTargetRowNum();
            RowType rt = t.rowType();
            this.getters = new InternalRow.FieldGetter[rt.getFieldCount()];
            for (int i = 0; i < getters.length; i++) {
                getters[i] = InternalRow.createFieldGetter(rt.getTypeAt(i), i);
            }
            String kf = t.coreOptions().toConfiguration().get(CoreOptions.ROWKIND_FIELD);
            this.kindField = kf == null ? -1 : rt.getFieldNames().indexOf(kf);
            if (t.bucketMode() == BucketMode.HASH_DYNAMIC) {
                this.hash =
                        new HashBucketAssigner(
                                t.store().snapshotManager(),
                                "paimon-driver",
                                t.store().newIndexFileHandler(),
                                1,
                                1,
                                0,
                                targetRows);
            } else {
                this.hash = null;
                ReadBuilder rb = t.newReadBuilder();
                for (Split s : rb.newScan().plan().splits()) {
                    int bucket = ((DataSplit) s).bucket();
                    try (RecordReader<InternalRow> reader =
                            rb.newRead().executeFilter().createReader(s)) {
                        reader.forEachRemaining(row -> remember(row, bucket));
                    }
                }
            }
        }

        static DynamicBuckets of(Table table) throws Exception {
            if (!(table instanceof FileStoreTable)) {
                return null;
            }
            FileStoreTable t = (FileStoreTable) table;
            BucketMode m = t.bucketMode();
            return m == BucketMode.HASH_DYNAMIC || m == BucketMode.CROSS_PARTITION
                    ? new DynamicBuckets(t)
                    : null;
        }

        private void remember(InternalRow row, int bucket) {
            BinaryRow part = extractor.partition(row).copy();
            BinaryRow copy = serializer.toBinaryRow(row).copy();
            Object[] old = keys.put(extractor.trimmedPrimaryKey(row).copy(),
                    new Object[] {bucket, copy, part});
            if (old == null || !old[2].equals(part)) {
                partitionSize.merge(part, 1, Integer::sum);
            }
        }

        void write(BatchTableWrite w, GenericRow r) throws Exception {
            if (hash != null) {
                int bucket = hash.assign(
                        extractor.partition(r), extractor.trimmedPrimaryKey(r).hashCode());
                w.write(r, bucket);
                return;
            }
            BinaryRow key = extractor.trimmedPrimaryKey(r).copy();
            BinaryRow part = extractor.partition(r).copy();
            Object[] old = keys.get(key);
            boolean insert = r.getRowKind() == RowKind.INSERT
                    || r.getRowKind() == RowKind.UPDATE_AFTER;
            if (!insert) {
                if (old != null) { // retract where the key lives
                    w.write(previous(old, r.getRowKind()), (Integer) old[0]);
                    if (r.getRowKind() == RowKind.DELETE) {
                        keys.remove(key);
                        partitionSize.merge((BinaryRow) old[2], -1, Integer::sum);
                    }
                }
                return;
            }
            int bucket;
            if (old != null && old[2].equals(part)) {
                bucket = (Integer) old[0];
            } else {
                if (old != null) { // the key moves: delete it from its old partition
                    w.write(previous(old, RowKind.DELETE), (Integer) old[0]);
                    partitionSize.merge((BinaryRow) old[2], -1, Integer::sum);
                }
                int n = partitionSize.getOrDefault(part, 0);
                bucket = (int) (n / targetRows);
                partitionSize.put(part, n + 1);
            }
            w.write(r, bucket);
            BinaryRow copy = serializer.toBinaryRow(r).copy();
            keys.put(key, new Object[] {bucket, copy, part});
        }

        /** The row last written for a key, as a retraction of `kind` (also in `rowkind.field`). */
        private GenericRow previous(Object[] old, RowKind kind) {
            BinaryRow b = (BinaryRow) old[1];
            GenericRow g = new GenericRow(getters.length);
            for (int i = 0; i < getters.length; i++) {
                g.setField(i, getters[i].getFieldOrNull(b));
            }
            if (kindField >= 0) {
                g.setField(kindField, BinaryString.fromString(kind.shortString()));
            }
            g.setRowKind(kind);
            return g;
        }

        void prepareCommit() {
            if (hash != null) {
                hash.prepareCommit(BatchWriteBuilder.COMMIT_IDENTIFIER);
            }
        }
    }

    private static BatchTableWrite newWrite(BatchWriteBuilder wb) {
        return (BatchTableWrite) wb.newWrite().withIOManager(IO_MANAGER);
    }

    private static JsonNode latestSnapshot(JsonNode req) throws Exception {
        java.util.OptionalLong s = catalog(req).getTable(ident(req)).latestSnapshotId();
        return s.isPresent() ? NODES.numberNode(s.getAsLong()) : NODES.nullNode();
    }

    /**
     * {"partition": [values]|null, "bucket": n|null, "full": bool}: null partition/bucket compact
     * every (partition, bucket) that has files.
     */
    private static JsonNode compact(JsonNode req) throws Exception {
        Table t = table(req);
        RowType partType = t.rowType().project(t.partitionKeys());
        List<BinaryRow> parts = new ArrayList<>();
        List<Integer> buckets = new ArrayList<>();
        boolean full = req.path("full").asBoolean(true);
        if (req.hasNonNull("partition") && req.hasNonNull("bucket")) {
            parts.add(new InternalRowSerializer(partType)
                    .toBinaryRow((InternalRow) fromJson(req.get("partition"), partType))
                    .copy());
            buckets.add(req.get("bucket").asInt());
        } else {
            for (Split s : t.newReadBuilder().newScan().plan().splits()) {
                DataSplit ds = (DataSplit) s;
                boolean seen = false;
                for (int i = 0; i < parts.size(); i++) {
                    seen |= parts.get(i).equals(ds.partition()) && buckets.get(i) == ds.bucket();
                }
                if (!seen) {
                    parts.add(ds.partition());
                    buckets.add(ds.bucket());
                }
            }
        }
        BatchWriteBuilder wb = t.newBatchWriteBuilder();
        try (BatchTableWrite w = newWrite(wb);
                BatchTableCommit commit = wb.newCommit()) {
            for (int i = 0; i < parts.size(); i++) {
                w.compact(parts.get(i), buckets.get(i), full);
            }
            List<CommitMessage> msgs = w.prepareCommit();
            commit.commit(msgs);
        }
        ObjectNode r = NODES.objectNode();
        r.put("compacted", parts.size());
        r.set("snapshot", latestSnapshot(req));
        return r;
    }

    /**
     * {"filter": {...}}: delete the matching rows of an append table with deletion vectors as
     * Spark's DeleteFromPaimonTableCommand does: each data file's matching row positions become
     * a deletion vector, given to the append deletion-file maintainer of its partition (bucket-
     * unaware) or bucket, whose persisted index files are the only thing committed.
     */
    private static JsonNode dvDelete(JsonNode req) throws Exception {
        FileStoreTable t = (FileStoreTable) table(req);
        RowType rt = t.rowType();
        Predicate filter = predicate(req.get("filter"), rt);
        Long snapshotId = t.snapshotManager().latestSnapshotId();
        boolean unaware = t.bucketMode() == BucketMode.BUCKET_UNAWARE;
        org.apache.paimon.index.IndexFileHandler handler = t.store().newIndexFileHandler();
        Map<String, org.apache.paimon.deletionvectors.append.AppendDeletionFileMaintainer> dvs =
                new LinkedHashMap<>();
        long deleted = 0;
        for (Split s : t.newReadBuilder().withFilter(filter).newScan().plan().splits()) {
            DataSplit ds = (DataSplit) s;
            List<org.apache.paimon.table.source.DeletionFile> dfs =
                    ds.deletionFiles().orElse(null);
            for (int i = 0; i < ds.dataFiles().size(); i++) {
                DataFileMeta f = ds.dataFiles().get(i);
                DataSplit one = DataSplit.builder()
                        .withSnapshot(ds.snapshotId())
                        .withPartition(ds.partition())
                        .withBucket(ds.bucket())
                        .withBucketPath(ds.bucketPath())
                        .withDataFiles(java.util.Collections.singletonList(f))
                        .rawConvertible(true)
                        .build();
                org.apache.paimon.deletionvectors.DeletionVector old =
                        dfs == null || dfs.get(i) == null
                                ? null
                                : org.apache.paimon.deletionvectors.DeletionVector.read(
                                        t.fileIO(), dfs.get(i));
                org.apache.paimon.deletionvectors.BitmapDeletionVector dv =
                        new org.apache.paimon.deletionvectors.BitmapDeletionVector();
                long[] pos = {0};
                try (RecordReader<InternalRow> r = t.newReadBuilder().newRead().createReader(one)) {
                    r.forEachRemaining(
                            row -> {
                                long p = pos[0]++;
                                if (filter.test(row) && (old == null || !old.isDeleted(p))) {
                                    dv.delete(p);
                                }
                            });
                }
                if (dv.isEmpty()) {
                    continue;
                }
                deleted += dv.getCardinality();
                String key = ds.partition().toString() + "/" + ds.bucket();
                org.apache.paimon.deletionvectors.append.AppendDeletionFileMaintainer m = dvs.get(key);
                if (m == null) {
                    m = unaware
                            ? org.apache.paimon.deletionvectors.append.AppendDeletionFileMaintainer
                                    .forUnawareAppend(handler, snapshotId, ds.partition())
                            : org.apache.paimon.deletionvectors.append.AppendDeletionFileMaintainer
                                    .forBucketedAppend(
                                            handler, snapshotId, ds.partition(), ds.bucket());
                    dvs.put(key, m);
                }
                m.notifyNewDeletionVector(f.fileName(), dv);
            }
        }
        List<CommitMessage> msgs = new ArrayList<>();
        for (org.apache.paimon.deletionvectors.append.AppendDeletionFileMaintainer m : dvs.values()) {
            List<org.apache.paimon.index.IndexFileMeta> added = new ArrayList<>();
            List<org.apache.paimon.index.IndexFileMeta> removed = new ArrayList<>();
            for (org.apache.paimon.manifest.IndexManifestEntry e : m.persist()) {
                if (e.kind() == org.apache.paimon.manifest.FileKind.ADD) {
                    added.add(e.indexFile());
                } else {
                    removed.add(e.indexFile());
                }
            }
            msgs.add(
                    new org.apache.paimon.table.sink.CommitMessageImpl(
                            m.getPartition(),
                            m.getBucket(),
                            org.apache.paimon.io.DataIncrement.emptyIncrement(),
                            org.apache.paimon.io.CompactIncrement.emptyIncrement(),
                            new org.apache.paimon.io.IndexIncrement(added, removed)));
        }
        if (!msgs.isEmpty()) {
            try (BatchTableCommit commit = t.newBatchWriteBuilder().newCommit()) {
                commit.commit(msgs);
            }
        }
        ObjectNode r = NODES.objectNode();
        r.put("deleted", deleted);
        r.set("snapshot", latestSnapshot(req));
        return r;
    }

    // ------------------------------------------------------------------ read

    /** {"projection": [names]|null, "filter": {...}|null, "snapshot_id"|"tag"|"options"}. */
    private static JsonNode read(JsonNode req) throws Exception {
        Table t = table(req);
        RowType rt = t.rowType();
        ReadBuilder rb = t.newReadBuilder();
        RowType outType = rt;
        if (req.hasNonNull("projection")) {
            List<String> names = stringList(req.get("projection"));
            int[] proj = new int[names.size()];
            for (int i = 0; i < proj.length; i++) {
                proj[i] = fieldIndex(rt, names.get(i));
            }
            rb = rb.withProjection(proj);
            outType = rt.project(proj);
        }
        if (req.hasNonNull("filter")) {
            rb = rb.withFilter(predicate(req.get("filter"), rt));
        }
        TableRead read = rb.newRead().executeFilter();
        List<Split> splits = rb.newScan().plan().splits();
        ArrayNode rows = NODES.arrayNode();
        try (RecordReader<InternalRow> reader = read.createReader(splits)) {
            final RowType ot = outType;
            reader.forEachRemaining(row -> rows.add(toJson(row, ot)));
        }
        return rowsResult(outType, rows);
    }

    /** {@code rows} with their field names and SQL types: what {@code read} returns. */
    private static JsonNode rowsResult(RowType type, ArrayNode rows) {
        ObjectNode r = NODES.objectNode();
        ArrayNode names = r.putArray("fields");
        ArrayNode types = r.putArray("types");
        for (DataField f : type.getFields()) {
            names.add(f.name());
            types.add(f.type().asSQLString());
        }
        r.set("rows", rows);
        return r;
    }

    /**
     * The rows of system table {@code name} of table {@code table} (Java's
     * {@code SystemTableLoader.load}, then a plain read), as {@code read} returns them: fields,
     * types and rows (timestamps as the local wall-clock epoch nanos).
     */
    private static JsonNode systemTable(JsonNode req) throws Exception {
        FileStoreTable data = (FileStoreTable) table(req);
        String name = req.get("name").asText();
        Table t = org.apache.paimon.table.system.SystemTableLoader.load(name, data);
        if (t == null) {
            throw new IllegalArgumentException("no system table " + name);
        }
        RowType rt = t.rowType();
        ReadBuilder rb = t.newReadBuilder();
        ArrayNode rows = NODES.arrayNode();
        try (RecordReader<InternalRow> reader = rb.newRead().createReader(rb.newScan().plan())) {
            reader.forEachRemaining(row -> rows.add(toJson(row, rt)));
        }
        return rowsResult(rt, rows);
    }

    /**
     * A streaming read (Java's {@code DataTableStreamScan}, as a Flink source plans it): plans
     * until one finds no next snapshot (the first plan of a {@code from-snapshot} scan only
     * positions it), reading each plan's splits. With a decoupled changelog retention Java reads
     * an expired snapshot's changelog from {@code changelog/changelog-<id>}.
     */
    private static JsonNode streamRead(JsonNode req) throws Exception {
        Table t = table(req);
        RowType rt = t.rowType();
        ReadBuilder rb = t.newReadBuilder();
        org.apache.paimon.table.source.StreamTableScan scan = rb.newStreamScan();
        TableRead read = rb.newRead();
        ArrayNode rows = NODES.arrayNode();
        int maxPlans = req.path("max_plans").asInt(10000);
        for (int i = 0; i < maxPlans; i++) {
            org.apache.paimon.table.source.TableScan.Plan plan;
            try {
                plan = scan.plan();
            } catch (org.apache.paimon.table.source.EndOfScanException e) {
                break;
            }
            if (plan instanceof org.apache.paimon.table.source.SnapshotNotExistPlan) {
                if (i > 0) {
                    break;
                }
                continue;
            }
            try (RecordReader<InternalRow> reader = read.createReader(plan.splits())) {
                reader.forEachRemaining(row -> rows.add(toJson(row, rt)));
            }
        }
        ObjectNode r = NODES.objectNode();
        ArrayNode names = r.putArray("fields");
        for (DataField f : rt.getFields()) {
            names.add(f.name());
        }
        r.set("rows", rows);
        return r;
    }

    private static int fieldIndex(RowType rt, String name) {
        int i = rt.getFieldNames().indexOf(name);
        if (i < 0) {
            throw new IllegalArgumentException("no field " + name + " in " + rt);
        }
        return i;
    }

    private static Predicate predicate(JsonNode f, RowType rt) {
        String op = f.get("op").asText();
        if (op.equals("and") || op.equals("or")) {
            List<Predicate> ch = new ArrayList<>();
            for (JsonNode c : f.get("children")) {
                ch.add(predicate(c, rt));
            }
            return op.equals("and") ? PredicateBuilder.and(ch) : PredicateBuilder.or(ch);
        }
        PredicateBuilder pb = new PredicateBuilder(rt);
        int idx = fieldIndex(rt, f.get("field").asText());
        DataType type = rt.getTypeAt(idx);
        switch (op) {
            case "equal":
                return pb.equal(idx, fromJson(f.get("value"), type));
            case "not_equal":
                return pb.notEqual(idx, fromJson(f.get("value"), type));
            case "less_than":
                return pb.lessThan(idx, fromJson(f.get("value"), type));
            case "less_or_equal":
                return pb.lessOrEqual(idx, fromJson(f.get("value"), type));
            case "greater_than":
                return pb.greaterThan(idx, fromJson(f.get("value"), type));
            case "greater_or_equal":
                return pb.greaterOrEqual(idx, fromJson(f.get("value"), type));
            case "is_null":
                return pb.isNull(idx);
            case "is_not_null":
                return pb.isNotNull(idx);
            case "in":
                List<Object> vals = new ArrayList<>();
                for (JsonNode v : f.get("values")) {
                    vals.add(fromJson(v, type));
                }
                return pb.in(idx, vals);
            case "between":
                return pb.between(idx, fromJson(f.get("low"), type), fromJson(f.get("high"), type));
            default:
                throw new IllegalArgumentException("unknown predicate " + op);
        }
    }

    /**
     * The data files of the latest snapshot: partition, bucket, level, name, rows, size, extra
     * files and the embedded file index (base64 or null). With {"filter": {...}} the files of a
     * filtered plan (Java's scan skips files by stats and by embedded file indexes).
     */
    private static JsonNode files(JsonNode req) throws Exception {
        Table t = table(req);
        RowType partType = t.rowType().project(t.partitionKeys());
        ArrayNode out = NODES.arrayNode();
        ReadBuilder frb = t.newReadBuilder();
        if (req.hasNonNull("filter")) {
            frb = frb.withFilter(predicate(req.get("filter"), t.rowType()));
        }
        for (Split s : frb.newScan().plan().splits()) {
            DataSplit ds = (DataSplit) s;
            for (DataFileMeta f : ds.dataFiles()) {
                ObjectNode o = out.addObject();
                o.set("partition", toJson(ds.partition(), partType));
                o.put("bucket", ds.bucket());
                o.put("level", f.level());
                o.put("file", f.fileName());
                o.put("rows", f.rowCount());
                o.put("size", f.fileSize());
                o.put("schema_id", f.schemaId());
                ArrayNode extra = o.putArray("extra_files");
                f.extraFiles().forEach(extra::add);
                byte[] ix = f.embeddedIndex();
                o.put("embedded_index", ix == null ? null : Base64.getEncoder().encodeToString(ix));
            }
        }
        return out;
    }

    // ------------------------------------------------------------------ table operations

    private static JsonNode createTag(JsonNode req) throws Exception {
        Table t = catalog(req).getTable(ident(req));
        String name = req.get("name").asText();
        if (req.hasNonNull("snapshot_id")) {
            t.createTag(name, req.get("snapshot_id").asLong());
        } else {
            t.createTag(name);
        }
        return NODES.textNode(name);
    }

    private static JsonNode deleteTag(JsonNode req) throws Exception {
        Table t = catalog(req).getTable(ident(req));
        t.deleteTag(req.get("name").asText());
        return NODES.nullNode();
    }

    /** Tag names with their snapshot ids. */
    private static JsonNode listTags(JsonNode req) throws Exception {
        FileStoreTable t = (FileStoreTable) catalog(req).getTable(ident(req));
        ObjectNode o = NODES.objectNode();
        for (String name : t.tagManager().allTagNames()) {
            o.put(name, t.tagManager().taggedSnapshot(name).id());
        }
        return o;
    }

    /** Roll back to a snapshot id ("snapshot_id") or a tag ("tag"). */
    private static JsonNode rollback(JsonNode req) throws Exception {
        Table t = catalog(req).getTable(ident(req));
        if (req.hasNonNull("tag")) {
            t.rollbackTo(req.get("tag").asText());
        } else {
            t.rollbackTo(req.get("snapshot_id").asLong());
        }
        return NODES.nullNode();
    }

    /** Branch "name" of the table, from tag "tag" if given (else empty, latest schema). */
    private static JsonNode createBranch(JsonNode req) throws Exception {
        Table t = catalog(req).getTable(ident(req));
        String name = req.get("name").asText();
        if (req.hasNonNull("tag")) {
            t.createBranch(name, req.get("tag").asText());
        } else {
            t.createBranch(name);
        }
        return NODES.textNode(name);
    }

    private static JsonNode deleteBranch(JsonNode req) throws Exception {
        catalog(req).getTable(ident(req)).deleteBranch(req.get("name").asText());
        return NODES.nullNode();
    }

    private static JsonNode fastForward(JsonNode req) throws Exception {
        catalog(req).getTable(ident(req)).fastForward(req.get("name").asText());
        return NODES.nullNode();
    }

    private static JsonNode listBranches(JsonNode req) throws Exception {
        FileStoreTable t = (FileStoreTable) catalog(req).getTable(ident(req));
        List<String> names = new ArrayList<>(t.branchManager().branches());
        java.util.Collections.sort(names);
        return MAPPER.valueToTree(names);
    }

    private static JsonNode expireSnapshots(JsonNode req) throws Exception {
        Table t = catalog(req).getTable(ident(req));
        ExpireConfig.Builder b = ExpireConfig.builder();
        b.snapshotRetainMax(req.path("retain_max").asInt(Integer.MAX_VALUE));
        b.snapshotRetainMin(req.path("retain_min").asInt(1));
        b.snapshotTimeRetain(Duration.ofMillis(req.path("time_retain_ms").asLong(0)));
        return NODES.numberNode(t.newExpireSnapshots().config(b.build()).expire());
    }

    private static JsonNode alter(JsonNode req) throws Exception {
        List<SchemaChange> changes = new ArrayList<>();
        for (JsonNode c : req.get("changes")) {
            String op = c.get("op").asText();
            String name = c.path("name").asText();
            switch (op) {
                case "add_column":
                    changes.add(SchemaChange.addColumn(
                            name, DataTypeJsonParser.parseDataType(c.get("type")),
                            c.hasNonNull("comment") ? c.get("comment").asText() : null,
                            c.hasNonNull("move") ? move(c.get("move")) : null));
                    break;
                case "update_column_position":
                    changes.add(SchemaChange.updateColumnPosition(move(c.get("move"))));
                    break;
                case "update_column_nullability":
                    changes.add(SchemaChange.updateColumnNullability(
                            name, c.get("nullable").asBoolean()));
                    break;
                case "update_column_comment":
                    changes.add(SchemaChange.updateColumnComment(name, c.get("comment").asText()));
                    break;
                case "update_comment":
                    changes.add(SchemaChange.updateComment(c.get("comment").asText()));
                    break;
                case "rename_column":
                    changes.add(SchemaChange.renameColumn(name, c.get("new_name").asText()));
                    break;
                case "drop_column":
                    changes.add(SchemaChange.dropColumn(name));
                    break;
                case "update_column_type":
                    changes.add(SchemaChange.updateColumnType(
                            name, DataTypeJsonParser.parseDataType(c.get("type"))));
                    break;
                case "set_option":
                    changes.add(SchemaChange.setOption(c.get("key").asText(), c.get("value").asText()));
                    break;
                case "remove_option":
                    changes.add(SchemaChange.removeOption(c.get("key").asText()));
                    break;
                default:
                    throw new IllegalArgumentException("unknown schema change " + op);
            }
        }
        catalog(req).alterTable(ident(req), changes, false);
        return schema(req);
    }

    /** {"type": "FIRST"|"LAST"|"AFTER"|"BEFORE", "field": .., "ref": ..} as a SchemaChange.Move. */
    private static SchemaChange.Move move(JsonNode m) {
        String f = m.get("field").asText();
        switch (m.get("type").asText()) {
            case "FIRST":
                return SchemaChange.Move.first(f);
            case "LAST":
                return SchemaChange.Move.last(f);
            case "AFTER":
                return SchemaChange.Move.after(f, m.get("ref").asText());
            case "BEFORE":
                return SchemaChange.Move.before(f, m.get("ref").asText());
            default:
                throw new IllegalArgumentException("unknown move " + m);
        }
    }

    /**
     * Java's UniversalCompaction picker. {"runs": [[level, size], ..] (level-0 runs first, newest
     * first, as Levels.levelSortedRuns orders them), "num_levels", "max_size_amp", "size_ratio",
     * "num_run_compaction_trigger", "max_lookback_ms"|null} -> null or {"output_level", "runs":
     * [indices of the picked runs]}.
     */
    private static JsonNode universalPick(JsonNode req) {
        List<LevelSortedRun> runs = new ArrayList<>();
        Map<String, Integer> index = new HashMap<>();
        int i = 0;
        for (JsonNode r : req.get("runs")) {
            String name = "run-" + i;
            DataFileMeta f = DataFileMeta.forAppend(
                    name, r.get(1).asLong(), 1, SimpleStats.EMPTY_STATS, i, i, 0,
                    FileSource.APPEND);
            runs.add(new LevelSortedRun(r.get(0).asInt(), SortedRun.fromSingle(f)));
            index.put(name, i);
            i++;
        }
        UniversalCompaction uc =
                req.hasNonNull("max_lookback_ms")
                        ? new UniversalCompaction(
                                req.get("max_size_amp").asInt(),
                                req.get("size_ratio").asInt(),
                                req.get("num_run_compaction_trigger").asInt(),
                                Duration.ofMillis(req.get("max_lookback_ms").asLong()))
                        : new UniversalCompaction(
                                req.get("max_size_amp").asInt(),
                                req.get("size_ratio").asInt(),
                                req.get("num_run_compaction_trigger").asInt());
        java.util.Optional<CompactUnit> unit = uc.pick(req.get("num_levels").asInt(), runs);
        if (!unit.isPresent()) {
            return NODES.nullNode();
        }
        ObjectNode o = NODES.objectNode();
        o.put("output_level", unit.get().outputLevel());
        ArrayNode picked = o.putArray("runs");
        for (DataFileMeta f : unit.get().files()) {
            picked.add(index.get(f.fileName()));
        }
        return o;
    }

    // ------------------------------------------------------------------ sort compaction

    /**
     * Java's sort-compaction index bytes (base64) of `rows` (the table's row type) over
     * `columns`: `strategy` "zorder" (ZIndexer, `var_size` bytes per string column, default 8)
     * or "hilbert" (HilbertIndexer).
     */
    private static JsonNode sortIndex(JsonNode req) throws Exception {
        Table t = table(req);
        RowType rt = t.rowType();
        List<String> cols = new ArrayList<>();
        for (JsonNode c : req.get("columns")) {
            cols.add(c.asText());
        }
        String strategy = req.get("strategy").asText();
        ZIndexer z = null;
        HilbertIndexer h = null;
        if (strategy.equals("zorder")) {
            z = new ZIndexer(rt, cols, req.path("var_size").asInt(8));
            z.open();
        } else if (strategy.equals("hilbert")) {
            h = new HilbertIndexer(rt, cols);
            h.open();
        } else {
            throw new IllegalArgumentException("strategy " + strategy);
        }
        ArrayNode out = NODES.arrayNode();
        for (JsonNode row : req.get("rows")) {
            InternalRow r = (InternalRow) fromJson(row, rt);
            byte[] b = z != null ? z.index(r) : h.index(r);
            out.add(Base64.getEncoder().encodeToString(b));
        }
        return out;
    }

    // ------------------------------------------------------------------ values

    private static Object fromJson(JsonNode v, DataType type) {
        if (v == null || v.isNull()) {
            return null;
        }
        switch (type.getTypeRoot()) {
            case BOOLEAN:
                return v.asBoolean();
            case TINYINT:
                return (byte) v.asInt();
            case SMALLINT:
                return (short) v.asInt();
            case INTEGER:
            case DATE:
            case TIME_WITHOUT_TIME_ZONE:
                return v.asInt();
            case BIGINT:
                return v.asLong();
            case FLOAT:
                return Float.parseFloat(v.asText());
            case DOUBLE:
                return Double.parseDouble(v.asText());
            case DECIMAL:
                {
                    DecimalType dt = (DecimalType) type;
                    Decimal d = Decimal.fromBigDecimal(
                            new BigDecimal(v.asText()), dt.getPrecision(), dt.getScale());
                    if (d == null) {
                        throw new IllegalArgumentException(v.asText() + " does not fit " + type);
                    }
                    return d;
                }
            case CHAR:
            case VARCHAR:
                return BinaryString.fromString(v.asText());
            case BINARY:
            case VARBINARY:
                return Base64.getDecoder().decode(v.asText());
            case TIMESTAMP_WITHOUT_TIME_ZONE:
            case TIMESTAMP_WITH_LOCAL_TIME_ZONE:
                {
                    BigInteger[] qr = new BigInteger(v.asText()).divideAndRemainder(MILLION);
                    long millis = qr[0].longValueExact();
                    int nanos = qr[1].intValue();
                    if (nanos < 0) {
                        millis -= 1;
                        nanos += 1_000_000;
                    }
                    return Timestamp.fromEpochMillis(millis, nanos);
                }
            case ARRAY:
                {
                    DataType et = ((ArrayType) type).getElementType();
                    Object[] a = new Object[v.size()];
                    for (int i = 0; i < a.length; i++) {
                        a[i] = fromJson(v.get(i), et);
                    }
                    return new GenericArray(a);
                }
            case MAP:
                {
                    MapType mt = (MapType) type;
                    Map<Object, Object> m = new LinkedHashMap<>();
                    for (JsonNode kv : v) {
                        m.put(fromJson(kv.get(0), mt.getKeyType()),
                                fromJson(kv.get(1), mt.getValueType()));
                    }
                    return new GenericMap(m);
                }
            case ROW:
                {
                    List<DataField> fs = ((RowType) type).getFields();
                    if (v.size() != fs.size()) {
                        throw new IllegalArgumentException(
                                "row " + v + " has " + v.size() + " values, " + type + " needs "
                                        + fs.size());
                    }
                    GenericRow r = new GenericRow(fs.size());
                    for (int i = 0; i < fs.size(); i++) {
                        r.setField(i, fromJson(v.get(i), fs.get(i).type()));
                    }
                    return r;
                }
            default:
                throw new UnsupportedOperationException("type " + type + " in the test driver");
        }
    }

    private static JsonNode toJson(InternalRow row, RowType type) {
        ArrayNode a = NODES.arrayNode();
        List<DataField> fs = type.getFields();
        for (int i = 0; i < fs.size(); i++) {
            a.add(valueToJson(InternalRow.createFieldGetter(fs.get(i).type(), i)
                    .getFieldOrNull(row), fs.get(i).type()));
        }
        return a;
    }

    private static JsonNode valueToJson(Object v, DataType type) {
        if (v == null) {
            return NODES.nullNode();
        }
        switch (type.getTypeRoot()) {
            case BOOLEAN:
                return NODES.booleanNode((Boolean) v);
            case TINYINT:
                return NODES.numberNode((Byte) v);
            case SMALLINT:
                return NODES.numberNode((Short) v);
            case INTEGER:
            case DATE:
            case TIME_WITHOUT_TIME_ZONE:
                return NODES.numberNode((Integer) v);
            case BIGINT:
                return NODES.numberNode((Long) v);
            case FLOAT:
                return NODES.textNode(Double.toString((double) (Float) v));
            case DOUBLE:
                return NODES.textNode(Double.toString((Double) v));
            case DECIMAL:
                return NODES.textNode(((Decimal) v).toBigDecimal().toPlainString());
            case CHAR:
            case VARCHAR:
                return NODES.textNode(v.toString());
            case BINARY:
            case VARBINARY:
                return NODES.textNode(Base64.getEncoder().encodeToString((byte[]) v));
            case TIMESTAMP_WITHOUT_TIME_ZONE:
            case TIMESTAMP_WITH_LOCAL_TIME_ZONE:
                {
                    Timestamp ts = (Timestamp) v;
                    return NODES.numberNode(BigInteger.valueOf(ts.getMillisecond())
                            .multiply(MILLION)
                            .add(BigInteger.valueOf(ts.getNanoOfMillisecond())));
                }
            case ARRAY:
                {
                    DataType et = ((ArrayType) type).getElementType();
                    InternalArray arr = (InternalArray) v;
                    InternalArray.ElementGetter g = InternalArray.createElementGetter(et);
                    ArrayNode a = NODES.arrayNode();
                    for (int i = 0; i < arr.size(); i++) {
                        a.add(valueToJson(g.getElementOrNull(arr, i), et));
                    }
                    return a;
                }
            case MAP:
                {
                    MapType mt = (MapType) type;
                    InternalMap m = (InternalMap) v;
                    InternalArray ks = m.keyArray();
                    InternalArray vs = m.valueArray();
                    InternalArray.ElementGetter kg = InternalArray.createElementGetter(mt.getKeyType());
                    InternalArray.ElementGetter vg =
                            InternalArray.createElementGetter(mt.getValueType());
                    ArrayNode a = NODES.arrayNode();
                    for (int i = 0; i < m.size(); i++) {
                        ArrayNode kv = a.addArray();
                        kv.add(valueToJson(kg.getElementOrNull(ks, i), mt.getKeyType()));
                        kv.add(valueToJson(vg.getElementOrNull(vs, i), mt.getValueType()));
                    }
                    return a;
                }
            case ROW:
                return toJson((InternalRow) v, (RowType) type);
            default:
                throw new UnsupportedOperationException("type " + type + " in the test driver");
        }
    }
}
