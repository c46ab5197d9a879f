"""Table cases, deterministic data and the reference model for test_interop.py.

Every case is a table definition plus a list of commits. A primary-key case
carries a row-kind column ``op`` (option ``rowkind.field=op``) holding
``+I``/``-U``/``+U``/``-D``; the model applies the commits in order
(``+I``/``+U`` upsert the whole row, ``-U``/``-D`` delete the key) and the
expected table is the model's rows. Append cases keep every row; a unique
``id`` column identifies rows.

Type support in pypaimon 2.1.0 (found by experiment, pyarrow 19):
* Every atomic type works as a value column of pk and append tables, as a
  primary-key column and as a bucket key: BOOLEAN, TINYINT..BIGINT, FLOAT,
  DOUBLE, DECIMAL(p<=18 and p>18), CHAR/VARCHAR/STRING, BINARY/VARBINARY/BYTES,
  DATE, TIME, TIMESTAMP(0/3/6/9), TIMESTAMP_LTZ(3/6).
* ARRAY / MAP / ROW work as value columns only (as a partition column:
  "TypeError: unhashable type: 'list'"; as a bucket key: "ValueError: BinaryRow
  only support AtomicType yet, meet <class '...ArrayType'>") -- Paimon does not
  allow them as keys anyway.
* Partition columns: TIMESTAMP(9) partitions lose the nanoseconds (the
  partition value is truncated to micros) and BINARY/VARBINARY/BYTES partitions
  get Python's repr as directory name (``c=b%27abcd%27``), which is not Java's
  format: both are left out of the partition cases. FLOAT/DOUBLE partitions use
  Java's Double.toString (``-1.5E300``, ``0.0``) and are kept (exotic case).
* Read types: CHAR/VARCHAR/STRING -> string, BINARY(n)/VARBINARY/BYTES ->
  binary (not fixed_size_binary), TIME(p) -> time32[ms], TIMESTAMP(0/3/6/9) ->
  timestamp[s/ms/us/ns], TIMESTAMP_LTZ(p) -> same unit with tz="UTC", DECIMAL
  -> decimal128(p, s), DATE -> date32, ARRAY -> list<item>, MAP ->
  map<key not null, value>, ROW -> struct. Pk columns come back NOT NULL.
* Schema.from_pyarrow_schema maps: int8/16/32/64 -> TINYINT/SMALLINT/INT/BIGINT,
  float32/64 -> FLOAT/DOUBLE, bool -> BOOLEAN, string/large_string -> STRING,
  fixed_size_binary(n) -> BINARY(n), binary -> BYTES, large_binary -> BLOB,
  decimal128(p,s) -> DECIMAL(p, s), timestamp(unit) -> TIMESTAMP(0/3/6/9),
  timestamp(unit, tz=any) -> TIMESTAMP_LTZ(0/3/6/9), date32 -> DATE, any time
  type -> TIME(0), list -> ARRAY, fixed_size_list -> VECTOR, map -> MAP,
  struct -> ROW (nested field ids continue the top-level counter). CHAR(n),
  VARCHAR(n), VARBINARY(n) and TIME(p>0) cannot be expressed from Arrow: those
  cases create their tables through pypaimon with explicit Paimon types.
"""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Callable

import pyarrow as pa

UTC = dt.timezone.utc
EPOCH = dt.datetime(1970, 1, 1)
PARTS = ["2026-11-01", "2026-11-02", "2026-11-03"]
STR_POOL = ["", "a", "abc", "héllo", "中文字符", "🙂 emoji", "a-very-long-name", "x" * 40,
            "with space", "quote'\"", "slash/colon:"]


# --------------------------------------------------------------------------
# types


@dataclass
class TypeSpec:
    name: str                              # Paimon type (documentation / ids)
    arrow: pa.DataType                     # Arrow type of the input column
    override: str | None                   # explicit Paimon type for pypaimon, if Arrow can't express it
    keys: Callable[[random.Random, int], list] | None  # n unique non-null values
    value: Callable[[random.Random], Any]  # one random value


def _sample(rng, lo, hi, n):
    """n distinct ints in [lo, hi), in random order."""
    if hi - lo < 4 * n:
        return rng.sample(range(lo, hi), n)
    seen, out = set(), []
    while len(out) < n:
        v = rng.randrange(lo, hi)
        if v not in seen:
            seen.add(v)
            out.append(v)
    return out


def _dec(p, s):
    def keys(rng, n):
        lim = 10 ** p - 1
        return [Decimal(u).scaleb(-s) for u in _sample(rng, -lim, lim, n)]

    def value(rng):
        digits = rng.randint(0, p)
        lim = 10 ** digits - 1
        return Decimal(rng.randint(-lim, lim)).scaleb(-s)

    return keys, value


def _strings(maxlen):
    def keys(rng, n):
        out = []
        for i, u in enumerate(_sample(rng, 0, 36 ** 4, n)):
            base = _b36(u)
            if i % 3 == 0:          # <= 7 bytes: inline in BinaryRow
                s = base
            elif i % 3 == 1:        # >= 8 bytes: out of line
                s = base + "-" + "x" * rng.randint(3, 20)
            else:
                s = base + "é中🙂"
            out.append(s[:maxlen] if maxlen else s)
        return _dedup(out, n)

    def value(rng):
        s = rng.choice(STR_POOL) + ("" if rng.random() < 0.5 else str(rng.randint(0, 10 ** 6)))
        return s[:maxlen] if maxlen else s

    return keys, value


def _dedup(values, n):
    seen, out = set(), []
    for v in values:
        if v not in seen:
            seen.add(v)
            out.append(v)
    assert len(out) == n, "key generator produced duplicates"
    return out


def _b36(u):
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    s = ""
    while True:
        u, r = divmod(u, 36)
        s = digits[r] + s
        if not u:
            return s


def _binary(width):
    def keys(rng, n):
        vals = _sample(rng, 0, 2 ** 40, n)
        if width:
            return [v.to_bytes(width, "big") for v in vals]
        # 5..8 bytes: both the inline (<= 7) and the out-of-line BinaryRow encodings
        return [v.to_bytes(5, "big") + b"\0" * (i % 4) for i, v in enumerate(vals)]

    def value(rng):
        if width:
            return rng.randbytes(width)
        return rng.randbytes(rng.choice([0, 1, 5, 8, 16, 33]))

    return keys, value


def _ts(unit, tz=None, step=1):
    per_s = {"s": 1, "ms": 1000, "us": 1_000_000, "ns": 1_000_000_000}[unit]
    lo, hi = -2_208_988_800 * per_s // step, 4_102_444_800 * per_s // step  # 1900 .. 2100

    def keys(rng, n):
        return [_ts_val(v * step, unit, tz) for v in _sample(rng, lo, hi, n)]

    def value(rng):
        return _ts_val(rng.randrange(lo, hi) * step, unit, tz)

    return keys, value


def _ts_val(v, unit, tz):
    if unit == "ns":
        return v  # pyarrow takes ints for ns (datetime can't hold nanos)
    per_s = {"s": 1, "ms": 1000, "us": 1_000_000}[unit]
    sec, frac = divmod(v, per_s)
    d = EPOCH + dt.timedelta(seconds=sec, microseconds=frac * (1_000_000 // per_s))
    return d.replace(tzinfo=tz) if tz else d


def _time(ms_step):
    def keys(rng, n):
        return [_t(v * ms_step) for v in _sample(rng, 0, 86_400_000 // ms_step, n)]

    def value(rng):
        return _t(rng.randrange(0, 86_400_000 // ms_step) * ms_step)

    return keys, value


def _t(ms):
    s, ms = divmod(ms, 1000)
    return dt.time(s // 3600, s // 60 % 60, s % 60, ms * 1000)


def _date():
    def keys(rng, n):
        return [dt.date(1970, 1, 1) + dt.timedelta(days=v) for v in _sample(rng, -25_000, 50_000, n)]

    def value(rng):
        return dt.date(1970, 1, 1) + dt.timedelta(days=rng.randrange(-25_000, 50_000))

    return keys, value


def _int(bits):
    lo, hi = -(2 ** (bits - 1)), 2 ** (bits - 1)

    def keys(rng, n):
        extremes = [lo, hi - 1, 0, -1, 1]
        rest = [v for v in _sample(rng, max(lo, -10 ** 9), min(hi, 10 ** 9), n + 5) if v not in extremes]
        return (extremes + rest)[:n]

    def value(rng):
        r = rng.random()
        if r < 0.05:
            return lo
        if r < 0.1:
            return hi - 1
        return rng.randrange(lo, hi)

    return keys, value


def _float(double):
    def keys(rng, n):
        return [v / 4.0 for v in _sample(rng, -4_000_000, 4_000_000, n)]

    def value(rng):
        if double:
            return rng.choice([rng.uniform(-1e300, 1e300), rng.uniform(-1, 1), 0.0, -1.5e-300])
        return rng.randrange(-1 << 20, 1 << 20) / 8.0  # exact in float32

    return keys, value


def _bool():
    return (lambda rng, n: [False, True][:n]), (lambda rng: rng.random() < 0.5)


def T(name, arrow, gen, override=None, key=True):
    keys, value = gen
    return TypeSpec(name, arrow, override, keys if key else None, value)


# Atomic types. ``override`` marks the ones that Arrow cannot express.
SCALARS = [
    T("BOOLEAN", pa.bool_(), _bool()),
    T("TINYINT", pa.int8(), _int(8)),
    T("SMALLINT", pa.int16(), _int(16)),
    T("INT", pa.int32(), _int(32)),
    T("BIGINT", pa.int64(), _int(64)),
    T("FLOAT", pa.float32(), _float(False)),
    T("DOUBLE", pa.float64(), _float(True)),
    T("DECIMAL(10, 2)", pa.decimal128(10, 2), _dec(10, 2)),
    T("DECIMAL(18, 4)", pa.decimal128(18, 4), _dec(18, 4)),    # largest compact
    T("DECIMAL(19, 0)", pa.decimal128(19, 0), _dec(19, 0)),    # smallest non-compact
    T("DECIMAL(38, 10)", pa.decimal128(38, 10), _dec(38, 10)),
    T("STRING", pa.string(), _strings(None)),
    T("BINARY(6)", pa.binary(6), _binary(6)),
    T("BYTES", pa.binary(), _binary(None)),
    T("DATE", pa.date32(), _date()),
    T("TIMESTAMP(3)", pa.timestamp("ms"), _ts("ms")),
    T("TIMESTAMP(6)", pa.timestamp("us"), _ts("us")),
    T("TIMESTAMP_LTZ(3)", pa.timestamp("ms", tz="UTC"), _ts("ms", UTC)),
    T("TIMESTAMP_LTZ(6)", pa.timestamp("us", tz="UTC"), _ts("us", UTC)),
]
SQL_TYPES = [  # need explicit Paimon types: the table is created by pypaimon
    T("CHAR(8)", pa.string(), _strings(8), override="CHAR(8)"),
    T("VARCHAR(32)", pa.string(), _strings(32), override="VARCHAR(32)"),
    T("VARBINARY(16)", pa.binary(), _binary(None), override="VARBINARY(16)"),
    T("TIME(3)", pa.time32("ms"), _time(1), override="TIME(3)"),
]
EXTRA_TYPES = [  # beyond the core list; pypaimon handles them as values and keys
    T("TIME(0)", pa.time32("ms"), _time(1000)),          # from_pyarrow_schema: any time -> TIME(0)
    T("TIMESTAMP(0)", pa.timestamp("s"), _ts("s")),
    T("TIMESTAMP(9)", pa.timestamp("ns"), _ts("ns")),
    T("TIMESTAMP_LTZ(0)", pa.timestamp("s", tz="UTC"), _ts("s", UTC)),
]
BY_NAME = {t.name: t for t in SCALARS + SQL_TYPES + EXTRA_TYPES}


def _pk_safe(types):
    """pypaimon 2.1.0's merge read (pk tables, several files per bucket) truncates
    TIMESTAMP(9) to microseconds, keys and values alike (the Parquet files hold the
    nanos; a single-file raw read keeps them). Pk cases therefore use whole-microsecond
    TIMESTAMP(9) values; append_all_types keeps full nanosecond values."""
    ts9 = T("TIMESTAMP(9)", pa.timestamp("ns"), _ts("ns", step=1000))
    return [ts9 if t.name == "TIMESTAMP(9)" else t for t in types]
# |v| < 2**53: survives the float64 round trip of a nullable int column through pandas
SMALL_BIGINT = TypeSpec("BIGINT", pa.int64(), None, None, lambda rng: rng.randrange(-2 ** 40, 2 ** 40))


def _nested_specs():
    def arr_int(rng):
        return None if rng.random() < 0.1 else [None if rng.random() < 0.2 else rng.randrange(-99, 99)
                                               for _ in range(rng.randint(0, 4))]

    def arr_str(rng):
        return [rng.choice(STR_POOL) for _ in range(rng.randint(0, 3))]

    def map_str_long(rng):
        ks = rng.sample(["a", "b", "long-key-name", "中", ""], rng.randint(0, 3))
        return [(k, None if rng.random() < 0.2 else rng.randrange(-2 ** 63, 2 ** 63)) for k in ks]

    def row(rng):
        if rng.random() < 0.1:
            return None
        return {"x": rng.randrange(-10, 10) if rng.random() < 0.8 else None,
                "y": rng.choice(STR_POOL), "z": rng.uniform(-1, 1)}

    def arr_row(rng):
        return [{"a": rng.randrange(100), "b": rng.choice(STR_POOL)} for _ in range(rng.randint(0, 3))]

    def row_nested(rng):
        return {"arr": [rng.randrange(-5, 5) for _ in range(rng.randint(0, 3))],
                "m": [(i, rng.choice(STR_POOL)) for i in range(rng.randint(0, 2))],
                "d": _dec(10, 2)[1](rng)}

    def map_arr(rng):
        return [(k, [rng.randrange(9) for _ in range(rng.randint(0, 2))]) for k in
                rng.sample(["k1", "k2", "k3"], rng.randint(0, 2))]

    return [
        ("a_int", pa.list_(pa.int32()), arr_int),
        ("a_str", pa.list_(pa.string()), arr_str),
        ("m_str_long", pa.map_(pa.string(), pa.int64()), map_str_long),
        ("r_xyz", pa.struct([("x", pa.int32()), ("y", pa.string()), ("z", pa.float64())]), row),
        ("a_row", pa.list_(pa.struct([("a", pa.int32()), ("b", pa.string())])), arr_row),
        ("r_nested", pa.struct([("arr", pa.list_(pa.int64())), ("m", pa.map_(pa.int32(), pa.string())),
                                ("d", pa.decimal128(10, 2))]), row_nested),
        ("m_str_arr", pa.map_(pa.string(), pa.list_(pa.int32())), map_arr),
    ]


# --------------------------------------------------------------------------
# cases


@dataclass
class Commit:
    data: pa.Table
    overwrite: dict | None = None   # partition spec for BatchWriteBuilder.overwrite
    mode: str = "arrow"             # how *we* write it: arrow | batch | pandas


@dataclass
class Case:
    name: str
    schema: pa.Schema
    partition_keys: list
    primary_keys: list
    options: dict
    commits: list
    split: int                      # pypaimon writes commits[:split] of the "_b" table
    types: dict = field(default_factory=dict)   # Paimon type overrides (pypaimon creates tables)
    row_id: list = field(default_factory=list)  # unique row identity used for comparison
    filter: dict | None = None      # predicate spec (see pypaimon_driver._predicate)
    projection: list | None = None
    read_modes: tuple = ("arrow",)  # extra read APIs exercised on our side

    @property
    def is_pk(self):
        return bool(self.primary_keys)

    @property
    def bucket(self):
        return int(self.options.get("bucket", -1))

    @property
    def bucket_keys(self):
        if "bucket-key" in self.options:
            return [k.strip() for k in self.options["bucket-key"].split(",")]
        return [k for k in self.primary_keys if k not in self.partition_keys]

    @property
    def ours_creates(self):
        return not self.types

    def expected(self, upto=None):
        model = Model(self)
        for c in self.commits[: len(self.commits) if upto is None else upto]:
            model.apply(c)
        return model.rows()


class Model:
    """Reference model. Pk tables: dict keyed by pk (rowkind column ``op``);
    append tables: list of rows. Overwrite drops the matching partitions first."""

    def __init__(self, case: Case):
        self.case = case
        self.pk_rows: dict = {}
        self.append_rows: list = []

    def apply(self, commit: Commit):
        rows = commit.data.to_pylist()
        if commit.overwrite is not None:
            spec = commit.overwrite

            def hit(r):
                return all(r[k] == v for k, v in spec.items())

            self.pk_rows = {k: r for k, r in self.pk_rows.items() if not hit(r)}
            self.append_rows = [r for r in self.append_rows if not hit(r)]
        if not self.case.is_pk:
            self.append_rows.extend(rows)
            return
        rk = self.case.options.get("rowkind.field")
        for r in rows:
            key = tuple(r[k] for k in self.case.primary_keys)
            kind = r[rk] if rk else "+I"
            if kind in ("+I", "+U"):
                self.pk_rows[key] = r
            elif kind in ("-U", "-D"):
                self.pk_rows.pop(key, None)
            else:
                raise ValueError(kind)

    def rows(self):
        return list(self.pk_rows.values()) if self.case.is_pk else list(self.append_rows)


class _PkGen:
    """Commits for a pk table whose key is ``key_cols`` (partition cols included)."""

    def __init__(self, rng, schema, key_values, value_gen, op="op"):
        self.rng, self.schema, self.op = rng, schema, op
        self.keys = key_values              # list of key tuples (unique)
        self.value_gen = value_gen          # rng -> dict of non-key columns
        self.key_cols = None

    def row(self, key, kind):
        r = dict(zip(self.key_cols, key))
        r.update(self.value_gen(self.rng))
        r[self.op] = kind
        return r

    def commits(self, key_cols, n_initial):
        rng = self.rng
        self.key_cols = key_cols
        keys = list(self.keys)
        live = keys[:n_initial]      # keys present after the commits so far (ordered)
        fresh = keys[n_initial:]     # never used yet
        deleted = []                 # deleted earlier, may come back
        out = []
        rows = [self.row(k, "+I") for k in live]
        rng.shuffle(rows)
        out.append(rows)             # commit 1: inserts
        for _ in range(2):           # commits 2 and 3: every row kind
            rows = []
            pick = rng.sample(live, len(live))
            n = max(1, len(live) // 8)
            upd_pairs, upd, dels, rest = pick[:n], pick[n:2 * n], pick[2 * n:3 * n], pick[3 * n:]
            gone, added = set(dels), []
            for k in upd_pairs:                # -U old, +U new (same commit)
                rows += [self.row(k, "-U"), self.row(k, "+U")]
            for k in upd:                      # +U only
                rows.append(self.row(k, "+U"))
            for k in dels:                     # -D
                rows.append(self.row(k, "-D"))
            take = fresh[: max(1, len(fresh) // 2)]
            fresh = fresh[len(take):]
            for k in take:                     # new keys
                rows.append(self.row(k, "+I"))
                added.append(k)
            if deleted:                        # re-insert a key deleted in an earlier commit
                k = deleted.pop(0)
                rows.append(self.row(k, "+I"))
                added.append(k)
            if rest:                           # +I then -D in one commit: gone
                rows += [self.row(rest[0], "+I"), self.row(rest[0], "-D")]
                gone.add(rest[0])
            if len(rest) > 1:                  # -D then +I in one commit: present
                rows += [self.row(rest[1], "-D"), self.row(rest[1], "+I")]
            if fresh:                          # delete of a key that never existed
                rows.append(self.row(fresh.pop(), "-D"))
            live = [k for k in live if k not in gone] + added
            deleted += dels
            out.append(rows)
        return out


def _table(rows, schema):
    return pa.Table.from_pylist(rows, schema=schema)


def _field(name, typ, nullable=True):
    return pa.field(name, typ, nullable=nullable)


def _maybe_null(rng, v, p=0.15):
    return None if rng.random() < p else v


def pk_case(name, *, seed, key_fields, key_values, value_fields, value_gen, partition_keys=(),
            bucket=4, n_initial=None, types=None, split=2, modes=("arrow", "batch", "arrow"),
            filter=None, projection=None, extra_options=None, read_modes=("arrow",)):
    """key_fields: [(name, arrow type)] = partition cols + pk cols, in pk order."""
    rng = random.Random(seed)
    fields = [_field(n, t, False) for n, t in key_fields] + list(value_fields) + [_field("op", pa.string())]
    schema = pa.schema(fields)
    gen = _PkGen(rng, schema, key_values, value_gen)
    key_cols = [n for n, _ in key_fields]
    n_initial = n_initial or max(1, len(key_values) * 2 // 3)
    commits = [Commit(_table(rows, schema), mode=modes[i % len(modes)])
               for i, rows in enumerate(gen.commits(key_cols, n_initial))]
    options = {"bucket": str(bucket), "rowkind.field": "op"}
    options.update(extra_options or {})
    return Case(name, schema, list(partition_keys), key_cols, options, commits, split,
                types=dict(types or {}), row_id=key_cols, filter=filter, projection=projection,
                read_modes=read_modes)


def _values_gen(specs, not_null=()):
    """specs: [(column, TypeSpec)] -> rng -> dict (nullable columns get ~15% nulls)."""
    def gen(rng):
        return {c: (t.value(rng) if c in not_null else _maybe_null(rng, t.value(rng))) for c, t in specs}
    return gen


def _col(t: TypeSpec):
    return "c_" + t.name.lower().replace("(", "").replace(")", "").replace(", ", "_").replace(" ", "_")


def build_cases() -> list[Case]:
    cases = []

    # --- partitioned pk table with every scalar type as a value column ---------
    rng = random.Random(1)
    specs = [(_col(t), t) for t in SCALARS]
    nn = [("nn_int", BY_NAME["INT"]), ("nn_string", BY_NAME["STRING"]),
          ("nn_ts6", BY_NAME["TIMESTAMP(6)"]), ("nn_dec", BY_NAME["DECIMAL(38, 10)"])]
    ids = _sample(rng, 0, 10 ** 12, 120)
    keys = [(PARTS[i % 3], v) for i, v in enumerate(ids)]
    cases.append(pk_case(
        "pk_scalars", seed=11, key_fields=[("dt", pa.string()), ("id", pa.int64())], key_values=keys,
        value_fields=[_field(c, t.arrow) for c, t in specs] + [_field(c, t.arrow, False) for c, t in nn],
        value_gen=_values_gen(specs + nn, not_null={c for c, _ in nn}), partition_keys=["dt"], bucket=4,
        filter={"op": "greater_than", "field": "c_int", "literal": 0},
        projection=["id", "c_string", "c_decimal38_10", "dt"], read_modes=("arrow", "batch_reader")))

    # --- CHAR/VARCHAR/VARBINARY/TIME(3): tables created by pypaimon -----------
    specs = [(_col(t), t) for t in SQL_TYPES]
    keys = [(PARTS[i % 2], v) for i, v in enumerate(_sample(random.Random(2), 0, 10 ** 6, 60))]
    cases.append(pk_case(
        "pk_sql_types", seed=12, key_fields=[("dt", pa.string()), ("id", pa.int32())], key_values=keys,
        value_fields=[_field(c, t.arrow) for c, t in specs]
        + [_field("nn_char", pa.string(), False)],
        value_gen=_values_gen(specs + [("nn_char", BY_NAME["CHAR(8)"])], not_null={"nn_char"}),
        partition_keys=["dt"], bucket=3,
        types={**{c: t.override for c, t in specs}, "nn_char": "CHAR(8) NOT NULL"}))

    # --- extra atomic types ----------------------------------------------------
    specs = [(_col(t), t) for t in _pk_safe(EXTRA_TYPES)]
    cases.append(pk_case(
        "pk_extra_types", seed=13, key_fields=[("id", pa.int32())],
        key_values=[(v,) for v in _sample(random.Random(3), 0, 10 ** 6, 50)],
        value_fields=[_field(c, t.arrow) for c, t in specs], value_gen=_values_gen(specs), bucket=2))

    # --- nested value columns ---------------------------------------------------
    nested = _nested_specs()

    def nested_gen(rng):
        return {n: g(rng) for n, _, g in nested}
    keys = [(PARTS[i % 2], v) for i, v in enumerate(_sample(random.Random(4), 0, 10 ** 6, 60))]
    cases.append(pk_case(
        "pk_nested", seed=14, key_fields=[("dt", pa.string()), ("id", pa.int64())], key_values=keys,
        value_fields=[_field(n, t) for n, t, _ in nested], value_gen=nested_gen, partition_keys=["dt"],
        bucket=2))

    # --- composite key, two partition columns, simple values (pandas paths) ----
    rng = random.Random(5)
    keys = list({(PARTS[rng.randrange(3)], rng.randrange(3), rng.randrange(10 ** 6),
                  rng.choice(["alice", "bob", "a-much-longer-name", "é"])) for _ in range(150)})
    keys.sort()
    rng.shuffle(keys)

    def simple_gen(rng):
        return {"v": _maybe_null(rng, rng.uniform(-1, 1)), "n": rng.randrange(1000)}
    cases.append(pk_case(
        "pk_composite", seed=15,
        key_fields=[("dt", pa.string()), ("region", pa.int32()), ("id", pa.int64()), ("name", pa.string())],
        key_values=keys, value_fields=[_field("v", pa.float64()), _field("n", pa.int64())],
        value_gen=simple_gen, partition_keys=["dt", "region"], bucket=5,
        modes=("arrow", "pandas", "batch"), read_modes=("arrow", "batch_reader", "pandas"),
        filter={"op": "and", "children": [{"op": "equal", "field": "dt", "literal": PARTS[1]},
                                          {"op": "less_than", "field": "n", "literal": 500}]},
        projection=["name", "v"]))

    # --- one unpartitioned pk table per key type (bucket routing + key order) --
    for i, t in enumerate(SCALARS + SQL_TYPES + _pk_safe(EXTRA_TYPES)):
        n = 2 if t.name == "BOOLEAN" else 40
        keys = [(k,) for k in t.keys(random.Random(100 + i), n)]
        types = {"k": t.override} if t.override else {}
        cases.append(pk_case(
            f"pk_key_{_col(t)[2:]}", seed=200 + i, key_fields=[("k", t.arrow)], key_values=keys,
            value_fields=[_field("v", pa.int64()), _field("s", pa.string())],
            value_gen=lambda rng: {"v": rng.randrange(-99, 99), "s": rng.choice(STR_POOL)},
            bucket=3, n_initial=1 if n == 2 else None, types=types))

    # --- one pk table per partition column type ------------------------------
    # Left out (pypaimon quirks, see module doc): TIMESTAMP(9), BINARY/BYTES.
    part_types = ["BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "DECIMAL(10, 2)", "DECIMAL(38, 10)",
                  "STRING", "DATE", "TIMESTAMP(3)", "TIMESTAMP(6)", "TIMESTAMP_LTZ(3)", "CHAR(8)",
                  "VARCHAR(32)", "TIME(3)", "FLOAT", "DOUBLE"]
    for i, name in enumerate(part_types):
        t = BY_NAME[name]
        pvals = t.keys(random.Random(300 + i), 2 if name == "BOOLEAN" else 3)
        ids = _sample(random.Random(400 + i), 0, 10 ** 6, 45)
        keys = [(pvals[j % len(pvals)], v) for j, v in enumerate(ids)]
        types = {"p": t.override} if t.override else {}
        cases.append(pk_case(
            f"pk_part_{_col(t)[2:]}", seed=500 + i, key_fields=[("p", t.arrow), ("id", pa.int32())],
            key_values=keys, value_fields=[_field("v", pa.string())],
            value_gen=lambda rng: {"v": rng.choice(STR_POOL)}, partition_keys=["p"], bucket=2, types=types))

    # --- overwrite (pk, partitioned and unpartitioned) -------------------------
    cases.append(_pk_overwrite_case())
    cases.append(_pk_overwrite_unpartitioned_case())

    # --- append tables ---------------------------------------------------------
    cases += _append_cases()
    return cases


def _pk_overwrite_case():
    rng = random.Random(21)
    schema = pa.schema([_field("dt", pa.string(), False), _field("id", pa.int64(), False),
                        _field("v", pa.string()), _field("op", pa.string())])

    def rows(parts, ids, tag):
        return _table([{"dt": p, "id": i, "v": f"{tag}-{i}", "op": "+I"} for p in parts for i in ids], schema)

    commits = [
        Commit(rows(PARTS, range(0, 30), "c1")),
        Commit(rows([PARTS[0]], range(20, 40), "ow1"), overwrite={"dt": PARTS[0]}, mode="batch"),
        Commit(rows(PARTS[1:], rng.sample(range(0, 60), 15), "c3")),
        Commit(rows([PARTS[1]], range(50, 55), "ow2"), overwrite={"dt": PARTS[1]}),
    ]
    return Case("pk_overwrite", schema, ["dt"], ["dt", "id"], {"bucket": "2", "rowkind.field": "op"},
                commits, split=2, row_id=["dt", "id"])


def _pk_overwrite_unpartitioned_case():
    schema = pa.schema([_field("id", pa.int32(), False), _field("v", pa.string()), _field("op", pa.string())])

    def rows(ids, tag):
        return _table([{"id": i, "v": f"{tag}-{i}", "op": "+I"} for i in ids], schema)

    commits = [Commit(rows(range(0, 20), "c1")), Commit(rows(range(10, 15), "ow1"), overwrite={}),
               Commit(rows(range(12, 30), "c3")), Commit(rows(range(100, 103), "ow2"), overwrite={})]
    return Case("pk_overwrite_unpartitioned", schema, [], ["id"], {"bucket": "3", "rowkind.field": "op"},
                commits, split=2, row_id=["id"])


def _append_case(name, seed, value_specs, *, partition=None, part_values=None, options=None, types=None,
                 n_rows=(60, 40, 50), overwrite_at=None, modes=("arrow", "batch", "arrow"),
                 extra_fields=(), extra_gen=None, filter=None, projection=None, read_modes=("arrow",)):
    rng = random.Random(seed)
    fields = [_field("id", pa.int64(), False)]
    if partition:
        fields.append(_field(partition[0], partition[1], partition[2]))
    fields += [_field(c, t.arrow) for c, t in value_specs] + list(extra_fields)
    schema = pa.schema(fields)
    next_id = 0
    commits = []
    for ci, n in enumerate(n_rows):
        rows = []
        for _ in range(n):
            r = {"id": next_id}
            next_id += 1
            if partition:
                r[partition[0]] = rng.choice(part_values)
            r.update({c: _maybe_null(rng, t.value(rng)) for c, t in value_specs})
            if extra_gen:
                r.update(extra_gen(rng))
            rows.append(r)
        ow = None
        if overwrite_at and ci in overwrite_at:
            ow = overwrite_at[ci]
            rows = [dict(r, **ow) for r in rows]
        commits.append(Commit(_table(rows, schema), overwrite=ow, mode=modes[ci % len(modes)]))
    return Case(name, schema, [partition[0]] if partition else [], [], dict(options or {}), commits,
                split=2, types=dict(types or {}), row_id=["id"], filter=filter, projection=projection,
                read_modes=read_modes)


def _append_cases():
    nested = _nested_specs()
    nested_fields = [_field(n, t) for n, t, _ in nested]

    def nested_gen(rng):
        return {n: g(rng) for n, _, g in nested}

    scal = [(_col(t), t) for t in SCALARS + EXTRA_TYPES]
    out = [
        # unaware-bucket append, nullable partition (None -> __DEFAULT_PARTITION__), all types
        _append_case("append_all_types", 31, scal, partition=("dt", pa.string(), True),
                     part_values=PARTS + [None], extra_fields=nested_fields, extra_gen=nested_gen,
                     filter={"op": "is_not_null", "field": "c_string"}, projection=["c_bigint", "id"],
                     read_modes=("arrow", "batch_reader")),
        _append_case("append_sql_types", 32, [(_col(t), t) for t in SQL_TYPES],
                     types={_col(t): t.override for t in SQL_TYPES}),
        # fixed-bucket append tables: bucket-key routing must match pypaimon
        _append_case("append_bucket_int", 33, [("k", BY_NAME["INT"]), ("s", BY_NAME["STRING"])],
                     options={"bucket": "3", "bucket-key": "k"}),
        _append_case("append_bucket_composite", 34,
                     [("k1", BY_NAME["STRING"]), ("k2", SMALL_BIGINT), ("v", BY_NAME["DOUBLE"])],
                     partition=("p", pa.int32(), False), part_values=[1, 2, -7],
                     options={"bucket": "4", "bucket-key": "k1,k2"}, modes=("pandas", "arrow", "batch"),
                     read_modes=("arrow", "pandas")),
        _append_case("append_overwrite", 35, [("v", BY_NAME["STRING"])], partition=("dt", pa.string(), False),
                     part_values=PARTS, overwrite_at={1: {"dt": PARTS[0]}, 2: {"dt": PARTS[2]}}),
    ]
    return out


CASES = build_cases()
CASE_BY_NAME = {c.name: c for c in CASES}
