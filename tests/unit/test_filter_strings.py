"""Filter strings (issue 31): ``with_filter("id = 1 AND v LIKE 'a%'")`` is parsed at once into
the predicate builder's predicates (paimon_rs.filter_parser), refuses what does not fit at the
call, and reads what the equivalent built predicate reads."""

from __future__ import annotations

import datetime
import random
import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, List, Optional

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paimon_rs import CatalogFactory, InvalidArgumentError, Predicate, PredicateBuilder, Schema
from paimon_rs.filter_parser import parse_filter

from unit_helpers import write

SCHEMA = pa.schema([
    ("dt", pa.string()),
    ("id", pa.int64()),
    ("v", pa.string()),
    ("x", pa.float64()),
    ("d", pa.date32()),
    ("n", pa.int8()),
    ("dec", pa.decimal128(8, 2)),
    ("ts", pa.timestamp("us")),
    ("b", pa.bool_()),
])

PB = PredicateBuilder(SCHEMA)
STRINGS = ["a", "ab", "abc", "b", "ba", "a'b", "a%c", "_x", "", "xa_"]
FLOATS = [-1.5, 0.0, 0.5, 2.25, 10.0]
DATES = [datetime.date(2024, 1, d) for d in (1, 2, 15, 31)]


def make_rows(n: int = 60) -> pa.Table:
    rnd = random.Random(31)

    def maybe(v: Any) -> Any:
        return None if rnd.random() < 0.15 else v

    return pa.table({
        "dt": [rnd.choice(["p1", "p2", "p3"]) for _ in range(n)],
        "id": list(range(-5, n - 5)),
        "v": [maybe(rnd.choice(STRINGS)) for _ in range(n)],
        "x": [maybe(rnd.choice(FLOATS)) for _ in range(n)],
        "d": [maybe(rnd.choice(DATES)) for _ in range(n)],
        "n": [maybe(rnd.randint(-3, 3)) for _ in range(n)],
        "dec": [maybe(Decimal(rnd.randint(-300, 300)) / 100) for _ in range(n)],
        "ts": [maybe(datetime.datetime(2024, 1, 1, rnd.randint(0, 3), 30)) for _ in range(n)],
        "b": [maybe(rnd.random() < 0.5) for _ in range(n)],
    }, schema=SCHEMA)


ROWS = make_rows()
ROW_LIST = ROWS.to_pylist()


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    wh = str(tmp_path_factory.mktemp("filter-strings"))
    catalog = CatalogFactory.create({"warehouse": wh})
    catalog.create_database("db", True)
    catalog.create_table("db.f", Schema.from_pyarrow_schema(SCHEMA, partition_keys=["dt"]), False)
    t = catalog.get_table("db.f")
    for part in (ROWS.slice(0, 20), ROWS.slice(20, 20), ROWS.slice(40)):  # several files
        write(t, part)
    return t


def ids(table, predicate) -> List[int]:
    rb = table.new_read_builder().with_filter(predicate)
    out = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    return sorted(out.column("id").to_pylist())


@dataclass
class PypaimonPredicate:  # pypaimon.common.predicate.Predicate's fields
    method: str
    index: Optional[int]
    field: Optional[str]
    literals: Optional[List[Any]] = None


# --- a Python model of the predicates (SQL three-valued logic) ----------------------------------

def like_regex(pattern: str) -> re.Pattern[str]:
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        out.append(".*" if c == "%" else "." if c == "_" else re.escape(c))
        i += 1
    return re.compile("".join(out), re.S)


def model(p: Predicate, row: dict) -> Optional[bool]:
    if p.builder_method in ("and", "or"):
        vals = [model(c, row) for c in p.children]
        if p.builder_method == "and":
            return False if False in vals else None if None in vals else True
        return True if True in vals else None if None in vals else False
    v = row[p.field]
    lits = p.literals or []
    if p.builder_method == "is_null":
        return v is None
    if p.builder_method == "is_not_null":
        return v is not None
    if v is None:
        return None
    m = p.builder_method
    return {
        "equal": lambda: v == lits[0], "not_equal": lambda: v != lits[0],
        "less_than": lambda: v < lits[0], "less_or_equal": lambda: v <= lits[0],
        "greater_than": lambda: v > lits[0], "greater_or_equal": lambda: v >= lits[0],
        "is_in": lambda: v in lits, "is_not_in": lambda: v not in lits,
        "between": lambda: lits[0] <= v <= lits[1],
        "not_between": lambda: v < lits[0] or v > lits[1],
        "startswith": lambda: v.startswith(lits[0]), "endswith": lambda: v.endswith(lits[0]),
        "contains": lambda: lits[0] in v,
        "like": lambda: like_regex(lits[0]).fullmatch(v) is not None,
    }[m]()


def model_ids(p: Predicate) -> List[int]:
    return sorted(r["id"] for r in ROW_LIST if model(p, r) is True)


# --- random predicate trees (built with the predicate builder) and their strings ------------------

NUMERIC = {"id": st.integers(-8, 60), "n": st.integers(-4, 4), "x": st.sampled_from(FLOATS),
           "dec": st.sampled_from([Decimal("-1.5"), Decimal("0.25"), Decimal("2"), Decimal("0")])}
ORDERED = {**NUMERIC, "v": st.sampled_from(STRINGS), "d": st.sampled_from(DATES),
           "dt": st.sampled_from(["p1", "p2", "p3", "p0"])}
LIKE_PIECES = st.lists(st.sampled_from(["a", "b", "%", "_", "\\%", "\\_", "'", "c"]), max_size=4)


@st.composite
def leaves(draw) -> Predicate:
    pb = PB
    kind = draw(st.sampled_from(["cmp", "in", "between", "null", "str", "bool"]))
    if kind == "bool":
        return draw(st.sampled_from([pb.equal, pb.not_equal]))("b", draw(st.booleans()))
    if kind == "null":
        col = draw(st.sampled_from(SCHEMA.names))
        return draw(st.sampled_from([pb.is_null, pb.is_not_null]))(col)
    if kind == "str":
        method = draw(st.sampled_from(["startswith", "endswith", "contains", "like"]))
        if method == "like":
            return pb.like("v", "".join(draw(LIKE_PIECES)))
        return getattr(pb, method)("v", draw(st.sampled_from(["a", "b", "'", "%", "_", "a_"])))
    col = draw(st.sampled_from(sorted(ORDERED)))
    lit = ORDERED[col]
    if kind == "cmp":
        method = draw(st.sampled_from(["equal", "not_equal", "less_than", "less_or_equal",
                                       "greater_than", "greater_or_equal"]))
        return getattr(pb, method)(col, draw(lit))
    if kind == "in":
        values = draw(st.lists(lit, min_size=1, max_size=4))
        return draw(st.sampled_from([pb.is_in, pb.is_not_in]))(col, values)
    lo, hi = draw(lit), draw(lit)
    return draw(st.sampled_from([pb.between, pb.not_between]))(col, lo, hi)


def trees() -> st.SearchStrategy:
    return st.recursive(leaves(), lambda sub: st.builds(
        lambda method, children: (PB.and_predicates if method == "and" else PB.or_predicates)(children),
        st.sampled_from(["and", "or"]), st.lists(sub, min_size=2, max_size=3)), max_leaves=6)


def render_literal(v: Any, rnd: random.Random) -> str:
    if isinstance(v, bool):
        return rnd.choice(["TRUE", "true", "True"]) if v else rnd.choice(["FALSE", "false"])
    if isinstance(v, (int, Decimal)):
        text = str(v)
        if isinstance(v, int) and rnd.random() < 0.2:
            text = f"{v}.0"  # an integral decimal fits an integer column
        return text
    if isinstance(v, float):
        return rnd.choice([repr(v), f"{v:e}"])
    if isinstance(v, datetime.date):
        return rnd.choice([f"DATE '{v.isoformat()}'", f"date '{v.isoformat()}'", f"'{v.isoformat()}'"])
    assert isinstance(v, str)
    return "'" + v.replace("'", "''") + "'"


def like_escape(s: str) -> str:
    return s.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


NEG = {"equal": "not_equal", "not_equal": "equal", "less_than": "greater_or_equal",
       "greater_or_equal": "less_than", "less_or_equal": "greater_than",
       "greater_than": "less_or_equal", "is_in": "is_not_in", "is_not_in": "is_in",
       "between": "not_between", "not_between": "between", "is_null": "is_not_null",
       "is_not_null": "is_null"}
OPS = {"equal": ["=", "=="], "not_equal": ["!=", "<>"], "less_than": ["<"], "less_or_equal": ["<="],
       "greater_than": [">"], "greater_or_equal": [">="]}
FLIPPED = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "=": "=", "==": "==", "!=": "!=", "<>": "<>"}
STRING_ONLY = {"startswith", "endswith", "contains", "like"}


def negatable(p: Predicate) -> bool:
    return p.builder_method not in STRING_ONLY and all(negatable(c) for c in p.children)


def column(name: str, rnd: random.Random) -> str:
    return rnd.choice([name, f"`{name}`", f'"{name}"'])


def render(p: Predicate, rnd: random.Random) -> str:
    """A filter string meaning ``p``, in one of its spellings."""
    if p.builder_method in ("and", "or"):
        if negatable(p) and rnd.random() < 0.3:  # De Morgan: NOT (NOT a OR NOT b)
            other = " OR " if p.builder_method == "and" else " AND "
            return "NOT (" + other.join(render_not(c, rnd) for c in p.children) + ")"
        word = rnd.choice([" AND ", " and "]) if p.builder_method == "and" else rnd.choice([" OR ", " or "])
        return "(" + word.join(render(c, rnd) for c in p.children) + ")"
    if p.builder_method in NEG and rnd.random() < 0.25:
        return "NOT (" + render(Predicate(NEG[p.builder_method], p.index, p.field, p.literals), rnd) + ")"
    return render_leaf(p, rnd)


def render_not(p: Predicate, rnd: random.Random) -> str:
    """A filter string meaning ``NOT p`` (p has no string matcher)."""
    if rnd.random() < 0.5:
        return "NOT (" + render(p, rnd) + ")"
    if p.builder_method in ("and", "or"):
        other = " OR " if p.builder_method == "and" else " AND "
        return "(" + other.join(render_not(c, rnd) for c in p.children) + ")"
    return render_leaf(Predicate(NEG[p.builder_method], p.index, p.field, p.literals), rnd)


def render_leaf(p: Predicate, rnd: random.Random) -> str:
    assert p.field is not None
    col, lits = column(p.field, rnd), p.literals or []
    if p.builder_method in OPS:
        op = rnd.choice(OPS[p.builder_method])
        lit = render_literal(lits[0], rnd)
        return f"{lit} {FLIPPED[op]} {col}" if rnd.random() < 0.2 else f"{col} {op} {lit}"
    if p.builder_method in ("is_in", "is_not_in"):
        items = ", ".join(render_literal(v, rnd) for v in lits)
        return f"{col} {'NOT IN' if p.builder_method == 'is_not_in' else 'IN'} ({items})"
    if p.builder_method in ("between", "not_between"):
        lo, hi = (render_literal(v, rnd) for v in lits)
        return f"{col} {'NOT BETWEEN' if p.builder_method == 'not_between' else 'BETWEEN'} {lo} AND {hi}"
    if p.builder_method == "is_null":
        return f"{col} IS NULL"
    if p.builder_method == "is_not_null":
        return f"{col} is not null"
    pattern = {"startswith": lambda s: like_escape(s) + "%", "endswith": lambda s: "%" + like_escape(s),
               "contains": lambda s: "%" + like_escape(s) + "%", "like": lambda s: s}[p.builder_method](lits[0])
    return f"{col} LIKE " + "'" + pattern.replace("'", "''") + "'"


@settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
@given(tree=trees(), rnd=st.randoms(use_true_random=False))
def test_random_trees_parse_back_to_equivalent_filters(table, tree, rnd):
    text = render(tree, rnd)
    parsed = parse_filter(text, SCHEMA)
    expected = model_ids(tree)
    assert ids(table, tree) == expected, (text, tree)
    assert ids(table, text) == expected, (text, parsed)


# --- pypaimon's Predicate API: index, new_index, new_literals, test, test_by_simple_stats --------

class _Stats:
    """pypaimon's SimpleStats, as its tests build it: min / max rows and null counts."""

    def __init__(self, min_values, max_values, null_counts):
        self.min_values, self.max_values, self.null_counts = min_values, max_values, null_counts


class _Row:
    """pypaimon's InternalRow: a row read by position with ``get_field``."""

    def __init__(self, values):
        self.values = list(values)

    def get_field(self, i):
        return self.values[i]

    def __len__(self):
        return len(self.values)


def stats_of(rows: List[dict]) -> _Stats:
    lo, hi, nulls = [], [], []
    for name in SCHEMA.names:
        vals = [r[name] for r in rows if r[name] is not None]
        lo.append(min(vals) if vals else None)
        hi.append(max(vals) if vals else None)
        nulls.append(len(rows) - len(vals))
    return _Stats(_Row(lo), _Row(hi), nulls)


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(tree=trees())
def test_predicate_test_is_the_model_on_each_row(tree):
    rows = ROW_LIST
    expected = model_ids(tree)
    assert sorted(r["id"] for r in rows if tree.test(_Row(r.values()))) == expected
    assert sorted(r["id"] for r in rows if tree.test(tuple(r.values()))) == expected
    assert sorted(r["id"] for r in rows if tree.test(r)) == expected


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(tree=trees(), picks=st.lists(st.integers(0, len(ROWS) - 1), min_size=1, max_size=6))
def test_stats_never_prune_a_file_holding_a_match(tree, picks):
    rows = [ROW_LIST[i] for i in picks]
    if any(model(tree, r) is True for r in rows):
        assert tree.test_by_simple_stats(stats_of(rows), len(rows)), (tree, rows)


def test_stats_prune_what_they_prove_and_keep_what_they_cannot():
    rows = [r for r in ROW_LIST if r["n"] is not None and 0 <= r["n"] <= 2]
    s = stats_of(rows)
    assert not PB.equal("n", 3).test_by_simple_stats(s, len(rows))
    assert PB.equal("n", 1).test_by_simple_stats(s, len(rows))
    assert not PB.greater_than("n", 2).test_by_simple_stats(s, len(rows))
    assert not PB.is_null("n").test_by_simple_stats(s, len(rows))
    assert not PB.is_in("n", [5, None]).test_by_simple_stats(s, len(rows))
    assert not PB.and_predicates([PB.equal("n", 1), PB.less_than("n", 0)]).test_by_simple_stats(
        s, len(rows))
    # nothing known: no stats at that position, an all-NULL column, NaN, a foreign literal
    assert PB.equal("n", 3).test_by_simple_stats(_Stats(_Row([]), _Row([]), None), 5)
    assert PB.equal("n", 3).test_by_simple_stats(_Stats(s.min_values, s.max_values, [4] * 9), 4)
    nan = _Stats(_Row([None, None, None, float("nan")]), _Row([None, None, None, 1.0]), None)
    assert PB.less_than("x", -5.0).test_by_simple_stats(nan, 3)
    dnan = _Stats(_Row([None] * 6 + [Decimal("NaN")]), _Row([None] * 6 + [Decimal("1.00")]), None)
    assert PB.greater_than("dec", Decimal("5.00")).test_by_simple_stats(dnan, 3)
    assert PB.equal("dec", Decimal("NaN")).test_by_simple_stats(s, len(rows))
    assert PB.equal("n", "3").test_by_simple_stats(s, len(rows))
    assert PB.is_not_null("n").test_by_simple_stats(_Stats(_Row([]), _Row([]), [0] * 9), None)


def test_a_fractional_literal_on_an_integer_column_is_refused():
    """pyarrow would cast 5.5 to 5 for an integer column, so ``id = 5.5`` would match id 5
    (pypaimon matches nothing; the filter-string parser refuses it): refused."""
    for lit in (5.5, Decimal("5.5"), float("nan"), float("inf")):
        with pytest.raises(InvalidArgumentError, match="is not an integral value"):
            PB.equal("id", lit).to_core(SCHEMA)
        with pytest.raises(InvalidArgumentError, match="is not an integral value"):
            PB.is_in("n", [1, lit]).to_core(SCHEMA)
    assert PB.equal("id", 5.0).to_core(SCHEMA)[3].to_pylist() == [5]
    assert PB.between("id", Decimal("2"), 4).to_core(SCHEMA)[3].to_pylist() == [2, 4]


def test_index_new_index_and_new_literals_as_pypaimon():
    p = PB.equal("v", "a")
    assert (p.method, p.index, p.field, p.literals) == ("equal", 2, "v", ["a"])
    assert Predicate("equal", 2, "v", ["a"]) == p  # pypaimon's positional order
    assert parse_filter("v = 'a'", SCHEMA) == p
    moved = p.new_index(0)
    assert (moved.index, moved.field, p.index) == (0, "v", 2)
    assert moved.test(["a", "b", "c"]) and not p.test(["a", "b", "c"])  # at its own position
    assert p.new_literals(["b"]).literals == ["b"] and p.literals == ["a"]
    both = PB.and_predicates([p, PB.is_null("x")])
    assert both.index is None
    either = both.new_literals([p, PB.equal("id", 1)])
    assert either.children == either.literals == [p, PB.equal("id", 1)]
    with pytest.raises(InvalidArgumentError, match="has no index"):
        Predicate("equal", field="v", literals=["a"]).test(["a"])
    assert Predicate("equal", field="v", literals=["a"]).test({"v": "a"})
    with pytest.raises(InvalidArgumentError, match="in its order"):
        Predicate("equal", "v", ["a"])  # paimon_rs's former order (method, field, literals)


def test_with_filter_takes_pypaimons_own_predicate_objects(table):
    leaf = PypaimonPredicate("between", 1, "id", [5, 14])
    both = PypaimonPredicate("and", None, None, [leaf, PypaimonPredicate("isNotNull", 2, "v")])
    assert ids(table, leaf) == ids(table, PB.between("id", 5, 14))
    assert ids(table, both) == ids(table, PB.and_predicates([PB.between("id", 5, 14),
                                                           PB.is_not_null("v")]))
    with pytest.raises(InvalidArgumentError, match="unknown predicate method 'nope'"):
        ids(table, PypaimonPredicate("nope", 1, "id", [1]))
    with pytest.raises(TypeError, match="got builtins.int"):
        table.new_read_builder().with_filter(42)


# --- the grammar, case by case ------------------------------------------------------------------

def P(method, field=None, literals=None, children=None, schema=SCHEMA):
    index = None if field is None else schema.get_field_index(field)
    return Predicate(method, index, field, literals, children or [])


@pytest.mark.parametrize("text, expected", [
    ("id = 1", P("equal", "id", [1])),
    ("id == 1", P("equal", "id", [1])),
    ("1 < id", P("greater_than", "id", [1])),
    ("id <> -2", P("not_equal", "id", [-2])),
    ("id = 2.0", P("equal", "id", [2])),
    ("x >= 1", P("greater_or_equal", "x", [1.0])),
    ("x < 1e1", P("less_than", "x", [10.0])),
    ("x < .5", P("less_than", "x", [0.5])),
    ("dec = 1.5", P("equal", "dec", [Decimal("1.50")])),
    ("v = 'it''s'", P("equal", "v", ["it's"])),
    ("b = TRUE", P("equal", "b", [True])),
    ("b != false", P("not_equal", "b", [False])),
    ("d = DATE '2024-01-02'", P("equal", "d", [datetime.date(2024, 1, 2)])),
    ("d <= '2024-01-02'", P("less_or_equal", "d", [datetime.date(2024, 1, 2)])),
    ("ts > TIMESTAMP '2024-01-01 01:30:00'", P("greater_than", "ts", [datetime.datetime(2024, 1, 1, 1, 30)])),
    ("ts = TIMESTAMP '2024-01-01 01:30:00.5'", P("equal", "ts", [datetime.datetime(2024, 1, 1, 1, 30, 0, 500000)])),
    ("ts = '2024-01-01T01:30'", P("equal", "ts", [datetime.datetime(2024, 1, 1, 1, 30)])),
    ("id IN (1, 2, 3)", P("is_in", "id", [1, 2, 3])),
    ("id NOT IN (1)", P("is_not_in", "id", [1])),
    ("id BETWEEN 1 AND 3", P("between", "id", [1, 3])),
    ("id not between 1 and 3", P("not_between", "id", [1, 3])),
    ("v IS NULL", P("is_null", "v", [])),
    ("v IS NOT NULL", P("is_not_null", "v", [])),
    ("v LIKE 'a%'", P("startswith", "v", ["a"])),
    ("v LIKE 'a_%'", P("like", "v", ["a_%"])),
    ("v LIKE '%a'", P("like", "v", ["%a"])),
    ("NOT id = 1", P("not_equal", "id", [1])),
    ("NOT (id < 1 OR v IS NULL)", P("and", children=[P("greater_or_equal", "id", [1]),
                                                      P("is_not_null", "v", [])])),
    ("NOT NOT id IN (1)", P("is_in", "id", [1])),
    ("NOT id NOT IN (1)", P("is_in", "id", [1])),
    ("NOT (id BETWEEN 1 AND 2)", P("not_between", "id", [1, 2])),
    ("id = 1 OR id = 2 AND v = 'a'", P("or", children=[
        P("equal", "id", [1]), P("and", children=[P("equal", "id", [2]), P("equal", "v", ["a"])])])),
    ("(id = 1 OR id = 2) AND v = 'a'", P("and", children=[
        P("or", children=[P("equal", "id", [1]), P("equal", "id", [2])]), P("equal", "v", ["a"])])),
    ("`id` = 1", P("equal", "id", [1])),
])
def test_grammar(text, expected):
    assert parse_filter(text, SCHEMA) == expected


@pytest.mark.parametrize("text, message", [
    ("idd = 1", r"unknown column 'idd'; did you mean 'id'\?"),
    ("ID = 1", r"unknown column 'ID'; did you mean 'id'\?"),
    ("id = '1'", r"the string '1' for column 'id' of type int64 \(numbers are written without quotes\)"),
    ("v = 1", r"the integer 1 for column 'v' of type string"),
    ("id = 1.5", r"1.5 for column 'id' .*not an integral value"),
    ("n = 300", r"300 does not fit column 'n' \(int8\)"),
    ("dec = 1.234", r"more than 2 digits after the point"),
    ("b = 1", r"use TRUE or FALSE"),
    ("x = TRUE", r"the boolean TRUE for column 'x'"),
    ("d = 5", r"write DATE 'yyyy-mm-dd'"),
    ("d = DATE '2024-13-01'", r"not a valid date"),
    ("ts = TIMESTAMP '2024-01-01 00:00:00.1234567'", r"not a valid timestamp \(at most microseconds\)"),
    ("v = DATE '2024-01-01'", r"the date DATE '2024-01-01' for column 'v'"),
    ("id = NULL", r"write 'column IS NULL'"),
    ("id IN (1, NULL)", r"IS NULL"),
    ("v NOT LIKE 'a%'", r"NOT LIKE on 'v' cannot be expressed"),
    ("NOT v LIKE 'a%'", r"NOT LIKE on 'v' cannot be expressed"),
    ("NOT (id = 1 AND v LIKE 'a%')", r"NOT LIKE"),
    ("id LIKE 'a'", r"LIKE needs a string column; 'id' is int64"),
    ("v LIKE 'a\\b'", r"invalid escape"),
    ("id = v", r"comparing two columns"),
    ("1 = 1", r"comparing two literals"),
    ("id = 1 id = 2", r"unexpected 'id' \(missing AND / OR\?\)"),
    ("(id = 1", r"expected '\)'"),
    ("id = 1)", r"unexpected '\)'"),
    ("id IN ()", r"expected a column or a literal"),
    ("id BETWEEN 1", r"expected AND"),
    ("id = 'abc", r"unterminated string"),
    ("id ! 1", r"unexpected character '!'"),
    ("", r"empty filter"),
    ("id", r"expected a comparison"),
    ("id = 1 AND", r"found the end of the filter"),
    ("id = 12abc", r"malformed number"),
])
def test_refusals_name_the_problem(table, text, message):
    with pytest.raises(InvalidArgumentError, match=message):
        table.new_read_builder().with_filter(text)  # at the call, not when reading


def test_error_shows_the_position(table):
    with pytest.raises(InvalidArgumentError) as e:
        table.new_read_builder().with_filter("id = 1 AND vv = 'a'")
    assert "at position 11" in str(e.value)
    assert "id = 1 AND vv = 'a'\n" + " " * 13 + "^" in str(e.value)
    assert "did you mean 'v'" in str(e.value)


def test_with_filter_reads_the_string(table):
    expected = sorted(r["id"] for r in ROWS.to_pylist()
                      if r["dt"] == "p1" and r["v"] is not None and r["v"].startswith("a"))
    assert expected and ids(table, "dt = 'p1' AND v LIKE 'a%'") == expected
    assert ids(table, None) == sorted(ROWS.column("id").to_pylist())


def test_with_filter_type_errors(table):
    with pytest.raises(TypeError, match="a filter string, a Predicate or None"):
        table.new_read_builder().with_filter(42)


def test_table_with_timezone_timestamp():
    schema = pa.schema([("ts", pa.timestamp("us", tz="UTC"))])
    p = parse_filter("ts >= TIMESTAMP '2024-01-01 10:00:00+02:00'", schema)
    assert p.literals[0] == datetime.datetime(2024, 1, 1, 10, tzinfo=datetime.timezone(datetime.timedelta(hours=2)))
    p.to_core(schema)  # converts


def test_columns_named_date_or_timestamp_need_no_quotes():
    schema = pa.schema([("date", pa.date32()), ("timestamp", pa.timestamp("ms")), ("id", pa.int64())])
    assert parse_filter("date = DATE '2024-01-02' AND timestamp IS NOT NULL", schema) == P("and", children=[
        P("equal", "date", [datetime.date(2024, 1, 2)], schema=schema),
        P("is_not_null", "timestamp", [], schema=schema)])
    assert parse_filter("date >= '2024-01-02'", schema) == P(
        "greater_or_equal", "date", [datetime.date(2024, 1, 2)], schema=schema)
    with pytest.raises(InvalidArgumentError, match="expected a quoted value after DATE"):
        parse_filter("id = DATE", schema)


def test_with_partition_filter_takes_a_string_too(table):
    rb = table.new_read_builder().with_partition_filter("dt IN ('p1', 'p3')").with_filter("id < 10")
    got = sorted(rb.new_read().to_arrow(rb.new_scan().plan().splits()).column("id").to_pylist())
    assert got == sorted(r["id"] for r in ROWS.to_pylist() if r["dt"] in ("p1", "p3") and r["id"] < 10)
    with pytest.raises(InvalidArgumentError, match=r"\['id'\] are not partition keys"):
        table.new_read_builder().with_partition_filter("id = 1")


def test_and_or_nodes_take_their_operands_once():
    pb = PredicateBuilder(pa.schema([("a", pa.int64()), ("b", pa.int64())]))
    x, y = pb.equal("a", 1), pb.equal("b", 2)
    # pypaimon's form (operands in literals) and ours (children) name the same node
    assert Predicate("and", literals=[x, y]) == Predicate("and", children=[x, y])
    assert Predicate("or", children=[x], literals=[x]).children == [x]
    # different operands in the two fields: which would count is a guess, so refused
    with pytest.raises(InvalidArgumentError, match="different operands"):
        Predicate("and", children=[x], literals=[y])


def test_projected_builder_numbers_by_the_projected_rows(table):
    """After ``with_projection`` a leaf's index is its column's position in the projected rows,
    as pypaimon's (its ``with_projection(["c", "a"])`` over (a, b, c) gives ``a`` index 1);
    a column filtered but not projected has none, so ``test`` refuses a positional row
    (review34c F1)."""
    rb = table.new_read_builder().with_projection(["x", "id", "v"])
    pb = rb.new_predicate_builder()
    assert [pb.equal(c, None).index for c in ("x", "id", "v")] == [0, 1, 2]
    p = pb.greater_than("id", 3)
    assert p.test((0.5, 4, "a")) and not p.test((9.0, 3, "a"))
    hidden = pb.equal("dt", "p1")
    assert hidden.index is None
    with pytest.raises(InvalidArgumentError, match="has no index"):
        hidden.test((0.5, 4, "a"))
    assert hidden.test({"dt": "p1"})
    got = rb.with_filter(pb.and_predicates([p, hidden]))
    out = got.new_read().to_arrow(got.new_scan().plan().splits())
    assert out.column_names == ["x", "id", "v"]
    assert all(p.test(r) for r in zip(*(out.column(c).to_pylist() for c in out.column_names)))
    assert sorted(out.column("id").to_pylist()) == sorted(
        r["id"] for r in ROW_LIST if r["id"] > 3 and r["dt"] == "p1")
    assert table.new_read_builder().new_predicate_builder().equal("id", 1).index == 1


def test_leaf_without_field_is_refused_naming_the_method(table):
    """A leaf made without a ``field`` (paimon_rs's or pypaimon's) is refused at with_filter
    with InvalidArgumentError, not a bare AssertionError (review34c F4)."""
    for p in (Predicate("equal", 1, None, [1]), PypaimonPredicate("equal", 1, None, [1]),
              PB.and_predicates([PB.equal("id", 1), Predicate("isNull", 2)])):
        with pytest.raises(InvalidArgumentError, match=r"with_filter: predicate '(equal|isNull)' has no field"):
            table.new_read_builder().with_filter(p)
    with pytest.raises(InvalidArgumentError, match="predicate 'equal' has no field"):
        Predicate("equal", 1, None, [1]).to_core(SCHEMA)


def test_predicates_made_directly_get_the_builders_pattern_checks(table):
    """A LIKE the builder refuses is refused through a Predicate made directly or taken from
    pypaimon's (review34c F5)."""
    with pytest.raises(InvalidArgumentError, match="invalid escape"):
        PB.like("v", "a\\b")
    with pytest.raises(InvalidArgumentError, match="invalid escape"):
        Predicate("like", 2, "v", ["a\\b"])

    with pytest.raises(InvalidArgumentError, match="invalid escape"):
        table.new_read_builder().with_filter(PypaimonPredicate("like", 2, "v", ["x\\"]))
    with pytest.raises(InvalidArgumentError, match="contains takes a string pattern"):
        Predicate("contains", 2, "v", [1])
    assert Predicate("like", 2, "v", ["a\\%"]) == PB.like("v", "a\\%")


def test_predicate_test_orders_floats_as_the_engine(tmp_path):
    """``Predicate.test`` compares floats in Java's order, the engine's: NaN equals NaN and is
    above every number, -0.0 below 0.0; each leaf selects what a read selects (review34c F3)."""
    nan = float("nan")
    cat = CatalogFactory.create({"warehouse": str(tmp_path)})
    cat.create_database("db", True)
    s = pa.schema([("id", pa.int64()), ("c", pa.float64())])
    cat.create_table("db.n", Schema.from_pyarrow_schema(s), False)
    t = cat.get_table("db.n")
    vals = [1.0, nan, 10.0, -0.0, 0.0, None]
    write(t, pa.table({"id": list(range(len(vals))), "c": vals}, schema=s))
    pb = t.new_read_builder().new_predicate_builder()
    preds = [pb.greater_than("c", 5.0), pb.less_than("c", 5.0), pb.not_equal("c", 1.0),
             pb.equal("c", nan), pb.is_in("c", [nan]), pb.is_not_in("c", [1.0]),
             pb.greater_or_equal("c", nan), pb.between("c", 2.0, nan), pb.less_than("c", 0.0),
             pb.equal("c", 0.0), pb.not_between("c", -0.0, 1.0)]
    for p in preds:
        model = [i for i, v in enumerate(vals) if p.test({"c": v})]
        assert ids(t, p) == model, p
    assert pb.greater_than("c", 5.0).test({"c": nan}) and pb.equal("c", nan).test({"c": nan})
