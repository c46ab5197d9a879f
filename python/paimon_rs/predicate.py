"""Filters, as pypaimon's ``PredicateBuilder``. A predicate prunes partitions and files using
their statistics and is then applied exactly to the rows read."""

from __future__ import annotations

import difflib
import math
import operator
import re
from dataclasses import dataclass, replace
from dataclasses import field as dc_field
from decimal import Decimal
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Union

import pyarrow as pa

from paimon_rs.exceptions import InvalidArgumentError


def _missing_field(p: Any) -> str:
    """The message refusing a filter leaf without a column name (``field``)."""
    return (f"predicate '{p.method}' has no field: a filter names its column (build it with a "
            f"PredicateBuilder, or give Predicate(method, index, field, literals) a field)")


def closest_column(name: str, names: Sequence[str]) -> Optional[str]:
    """The column name closest to ``name`` (same letters in another case first), if any is."""
    names = list(names)
    by_case = [n for n in names if n.lower() == name.lower()]
    close = by_case or difflib.get_close_matches(name, names, n=1, cutoff=0.6)
    return close[0] if close else None


def suggest_column(name: str, names: Sequence[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest column name, plus the columns, for messages."""
    close = closest_column(name, names)
    hint = f"; did you mean '{close}'?" if close else ""
    return f"{hint} (columns: {', '.join(names)})"


# pypaimon's names of the leaf operators (``Predicate.method``), by the PredicateBuilder method
# that makes each (paimon_rs's internal name, which the core takes)
PYPAIMON_METHODS = {
    "equal": "equal", "not_equal": "notEqual", "less_than": "lessThan",
    "less_or_equal": "lessOrEqual", "greater_than": "greaterThan",
    "greater_or_equal": "greaterOrEqual", "is_null": "isNull", "is_not_null": "isNotNull",
    "startswith": "startsWith", "endswith": "endsWith", "contains": "contains", "like": "like",
    "is_in": "in", "is_not_in": "notIn", "between": "between", "not_between": "notBetween",
    "and": "and", "or": "or",
}
_BUILDER_METHODS = {v: k for k, v in PYPAIMON_METHODS.items()}


@dataclass(frozen=True)
class Predicate:
    """A node of a filter tree. ``method`` is pypaimon's name of a leaf operator (``equal``,
    ``notEqual``, ``lessThan``, ``in``, ``isNull``, ``startsWith``, ...; a node made with the
    PredicateBuilder method's name, ``not_equal``, takes pypaimon's) or ``and``/``or``, whose
    operands are ``children`` and, as in pypaimon, ``literals``. ``index`` is, as pypaimon's,
    the leaf column's position among the fields of the builder that made it (None on and/or
    and on nodes made without one); the fields are in pypaimon's order, so
    ``Predicate("equal", 0, "id", [1])`` builds the same node as pypaimon."""

    method: str
    index: Optional[int] = None
    field: Optional[str] = None
    literals: Optional[List[Any]] = None
    children: List[Predicate] = dc_field(default_factory=list)

    def __post_init__(self) -> None:
        if self.index is not None:
            try:
                if isinstance(self.index, bool):
                    raise TypeError
                object.__setattr__(self, "index", operator.index(self.index))
            except TypeError:
                raise InvalidArgumentError(
                    f"predicate index must be an int or None, got {self.index!r}: the fields "
                    f"are pypaimon's, in its order (method, index, field, literals)") from None
        name = PYPAIMON_METHODS.get(self.method, self.method)
        if name not in _BUILDER_METHODS:
            raise InvalidArgumentError(
                f"unknown predicate method '{self.method}' (pypaimon's: "
                f"{', '.join(sorted(_BUILDER_METHODS))})")
        object.__setattr__(self, "method", name)
        # the builder's checks of a string matcher's pattern, for a node made without it (or
        # taken from pypaimon's): a pattern it refuses is refused here too
        if name in ("endsWith", "contains") and self.literals:
            _string_literal(name, self.literals[0])
        elif name == "like" and self.literals:
            _like_pattern(self.literals[0])
        # pypaimon's and/or hold their operands in ``literals``: both fields name them here,
        # whichever one the node was made with
        if self.method in ("and", "or"):
            if not self.children and self.literals:
                object.__setattr__(self, "children", list(self.literals))
            elif self.literals is None:
                object.__setattr__(self, "literals", list(self.children))
            elif self.children and list(self.literals) != list(self.children):
                raise InvalidArgumentError(
                    f"predicate '{self.method}' given different operands in children and "
                    f"literals: give them in one of the two")

    def __str__(self) -> str:
        """The predicate as a filter string (``ReadBuilder.with_filter`` parses it back)."""
        return _sql(self, top=True)

    def __repr__(self) -> str:
        return f"Predicate({_sql(self, top=True)})"

    def new_index(self, index: int) -> Predicate:
        """This predicate with its leaf's column at position ``index`` (pypaimon's, for a
        predicate rebound to another row layout, e.g. the partition fields)."""
        return replace(self, index=index)

    def new_literals(self, literals: List[Any]) -> Predicate:
        """This predicate with other ``literals`` (on and/or: other operands)."""
        if self.method in ("and", "or"):
            return replace(self, literals=list(literals), children=list(literals))
        return replace(self, literals=list(literals))

    def test(self, record: Any) -> bool:
        """Whether one row matches, with SQL's NULLs (a NULL value matches only ``isNull``).

        Args:
            record: the row: pypaimon's ``InternalRow`` (anything with ``get_field(i)``) or a
                sequence, read at this leaf's ``index``; or a mapping, read by ``field``.

        Raises:
            InvalidArgumentError: a leaf read by position has no ``index`` (made without a
                builder: use ``new_index``)."""
        if self.method == "and":
            return all(c.test(record) for c in self.children)
        if self.method == "or":
            return any(c.test(record) for c in self.children)
        return _test_value(self.method, self._value_of(record), list(self.literals or []))

    def _value_of(self, record: Any) -> Any:
        if isinstance(record, dict):
            return record.get(self.field)
        if self.index is None:
            raise InvalidArgumentError(
                f"predicate on '{self.field}' has no index to read a row by position: build it "
                f"with a PredicateBuilder or set one with new_index")
        if hasattr(record, "get_field"):
            return record.get_field(self.index)
        return record[self.index]

    def test_by_simple_stats(self, stat: Any, row_count: Optional[int]) -> bool:
        """Whether a file (or manifest) whose statistics are ``stat`` may hold a matching row:
        False only when the statistics prove it holds none.

        Args:
            stat: pypaimon's ``SimpleStats`` (``min_values`` and ``max_values`` rows with
                ``get_field(i)`` or sequences, ``null_counts`` a list or None), read at each
                leaf's ``index``.
            row_count: the rows the statistics cover (None: unknown).

        Statistics that are missing, shorter than the index, all-NULL, NaN or not comparable
        with the literal never prune (they prove nothing)."""
        if self.method == "and":
            return all(c.test_by_simple_stats(stat, row_count) for c in self.children)
        if self.method == "or":
            return any(c.test_by_simple_stats(stat, row_count) for c in self.children)
        i = self.index
        if i is None or i < 0:
            return True
        counts = getattr(stat, "null_counts", None)
        nulls = counts[i] if counts is not None and i < len(counts) else None
        if self.method == "isNull":
            return nulls is None or nulls > 0
        if self.method == "isNotNull":
            return nulls is None or row_count is None or nulls < row_count
        lo = _stat_at(getattr(stat, "min_values", None), i)
        hi = _stat_at(getattr(stat, "max_values", None), i)
        if lo is None or hi is None or (nulls is not None and nulls == row_count):
            return True
        lits = list(self.literals or [])
        if any(_is_nan(v) for v in [lo, hi, *lits]):
            return True
        check = _STATS_TESTS.get(self.method)
        if check is None:
            return True
        try:
            return bool(check(lo, hi, lits))
        except (TypeError, IndexError):
            return True

    @property
    def builder_method(self) -> str:
        """The name of the PredicateBuilder method that makes this leaf (``not_equal`` for
        ``notEqual``, ``is_in`` for ``in``); ``and`` / ``or`` for the others."""
        return _BUILDER_METHODS[self.method]

    def fields(self) -> Set[str]:
        """The columns this predicate reads (its leaves' fields)."""
        if self.field is not None:
            return {self.field}
        return set().union(*(c.fields() for c in self.children))

    def to_core(self, schema: pa.Schema) -> tuple:
        """The tuple form understood by ``paimon_rs._core`` (literals as typed Arrow arrays)."""
        if self.method in ("and", "or"):
            return (self.method, [c.to_core(schema) for c in self.children])
        if self.field is None:
            raise InvalidArgumentError(_missing_field(self))
        idx = schema.get_field_index(self.field)
        if idx < 0:
            raise InvalidArgumentError(f"filter column '{self.field}' is not in the table")
        typ = schema.field(idx).type
        lits = list(self.literals or [])
        if pa.types.is_integer(typ):
            # pyarrow casts 5.5 to an integer column as 5 without a word: a filter `id = 5.5`
            # would match id 5 (the filter-string parser refuses it too)
            for v in lits:
                if isinstance(v, (float, Decimal)) and not _integral(v):
                    raise InvalidArgumentError(
                        f"filter on '{self.field}': literal {v!r} is not an integral value of "
                        f"type {typ}")
        try:
            arr = pa.array(lits, type=typ) if lits else pa.array([], type=typ)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError) as e:
            raise InvalidArgumentError(
                f"filter on '{self.field}': literal(s) {lits!r} do not fit type {typ}: {e}"
            ) from e
        return ("leaf", self.field, self.builder_method, arr)


class PredicateBuilder:
    """Builds predicates on the columns of one table (``read_builder.new_predicate_builder()``).
    Each method checks its column at once; ``ReadBuilder.with_filter`` also takes the same
    filters as a string (``"id = 1 AND v LIKE 'a%'"``)."""

    def __init__(self, schema: Union[pa.Schema, Sequence[Any]]):
        """``schema``: the table's Arrow schema, or (pypaimon's form) its fields, a list of
        :class:`~paimon_rs.DataField` (anything with a ``name``)."""
        if isinstance(schema, pa.Schema):
            names = list(schema.names)
        elif isinstance(schema, (list, tuple)) and all(hasattr(f, "name") for f in schema):
            names = [f.name for f in schema]
        else:
            raise InvalidArgumentError(
                "PredicateBuilder takes a pyarrow.Schema or a list of DataField, "
                f"got {type(schema).__name__}")
        self._index = {n: i for i, n in reversed(list(enumerate(names)))}
        self.field_names: List[str] = names
        # a projected read's numbering (ReadBuilder.new_predicate_builder): a leaf's index is
        # its column's position in the rows read, None for a column filtered but not read
        self._positions: Optional[Dict[str, int]] = None

    def _leaf(self, method: str, field_name: str, literals: Sequence[Any]) -> Predicate:
        if field_name not in self._index:
            # pypaimon's words; the closest column, when one is close, after them
            close = closest_column(str(field_name), self.field_names)
            hint = f" Did you mean '{close}'?" if close else ""
            raise InvalidArgumentError(f"The field {field_name} is not in field list "
                                       f"{self.field_names}.{hint}")
        index = (self._index[field_name] if self._positions is None
                 else self._positions.get(field_name))
        return Predicate(method=method, index=index, field=field_name, literals=list(literals))

    def equal(self, field: str, literal: Any) -> Predicate:
        """Rows where ``field`` equals ``literal`` (NULL never matches).

        Args:
            field: a column of the table.
            literal: a value of the column's type (``int``, ``str``, ``datetime.date``, ...).

        Raises:
            InvalidArgumentError: ``field`` is not a column (the closest is suggested).

        Example: ``pb.equal("id", 1)``; as a string: ``"id = 1"``."""
        return self._leaf("equal", field, [literal])

    def not_equal(self, field: str, literal: Any) -> Predicate:
        """Rows where ``field`` is not ``literal`` (NULL never matches: ``IS NULL`` finds
        those). String form: ``"v != 'a'"``. Raises ``InvalidArgumentError`` for an unknown
        column."""
        return self._leaf("not_equal", field, [literal])

    def less_than(self, field: str, literal: Any) -> Predicate:
        """Rows where ``field < literal`` (NULL never matches). String form: ``"id < 3"``.
        Raises ``InvalidArgumentError`` for an unknown column."""
        return self._leaf("less_than", field, [literal])

    def less_or_equal(self, field: str, literal: Any) -> Predicate:
        """Rows where ``field <= literal`` (NULL never matches). String form: ``"id <= 3"``.
        Raises ``InvalidArgumentError`` for an unknown column."""
        return self._leaf("less_or_equal", field, [literal])

    def greater_than(self, field: str, literal: Any) -> Predicate:
        """Rows where ``field > literal`` (NULL never matches). String form: ``"id > 3"``.
        Raises ``InvalidArgumentError`` for an unknown column."""
        return self._leaf("greater_than", field, [literal])

    def greater_or_equal(self, field: str, literal: Any) -> Predicate:
        """Rows where ``field >= literal`` (NULL never matches). String form:
        ``"id >= 3"``. Raises ``InvalidArgumentError`` for an unknown column."""
        return self._leaf("greater_or_equal", field, [literal])

    def is_null(self, field: str) -> Predicate:
        """Rows where ``field`` is NULL. String form: ``"v IS NULL"``. Raises
        ``InvalidArgumentError`` for an unknown column."""
        return self._leaf("is_null", field, [])

    def is_not_null(self, field: str) -> Predicate:
        """Rows where ``field`` is not NULL. String form: ``"v IS NOT NULL"``. Raises
        ``InvalidArgumentError`` for an unknown column."""
        return self._leaf("is_not_null", field, [])

    def startswith(self, field: str, pattern_literal: str) -> Predicate:
        """Rows whose string ``field`` starts with ``pattern_literal`` (taken literally, no
        wildcards); prunes files by their min/max statistics. String form: ``"v LIKE 'ab%'"``.
        Raises ``InvalidArgumentError`` for an unknown column."""
        return self._leaf("startswith", field, [pattern_literal])

    def is_in(self, field: str, literals: Sequence[Any]) -> Predicate:
        """Rows where ``field`` is one of ``literals`` (a NULL value never matches).

        Example: ``pb.is_in("id", [1, 2, 3])``; as a string: ``"id IN (1, 2, 3)"``. Raises
        ``InvalidArgumentError`` for an unknown column."""
        return self._leaf("is_in", field, list(literals))

    def is_not_in(self, field: str, literals: Sequence[Any]) -> Predicate:
        """Rows where ``field`` is none of ``literals`` (a NULL value never matches).
        String form: ``"id NOT IN (1, 2)"``. Raises ``InvalidArgumentError`` for an unknown
        column."""
        return self._leaf("is_not_in", field, list(literals))

    def between(self, field: str, included_lower_bound: Any, included_upper_bound: Any) -> Predicate:
        """Rows where ``included_lower_bound <= field <= included_upper_bound`` (NULL never
        matches). String form: ``"id BETWEEN 1 AND 5"``. Raises ``InvalidArgumentError`` for an
        unknown column."""
        return self._leaf("between", field, [included_lower_bound, included_upper_bound])

    # --- pypaimon 2.1.0 names: string matchers never prune files by statistics (a file's
    # min/max bound no suffix, substring or pattern), only partitions and rows ---

    def endswith(self, field: str, pattern_literal: str) -> Predicate:
        """Rows whose string ends with ``pattern_literal`` (taken literally). String form:
        ``"v LIKE '%ab'"``. Raises ``InvalidArgumentError`` for an unknown column or a
        non-string pattern."""
        return self._leaf("endswith", field, [_string_literal("endswith", pattern_literal)])

    def contains(self, field: str, pattern_literal: str) -> Predicate:
        """Rows whose string contains ``pattern_literal`` (taken literally). String form:
        ``"v LIKE '%ab%'"``. Raises ``InvalidArgumentError`` for an unknown column or a
        non-string pattern."""
        return self._leaf("contains", field, [_string_literal("contains", pattern_literal)])

    def like(self, field: str, pattern_literal: str) -> Predicate:
        """SQL LIKE: ``%`` any sequence, ``_`` one character, ``\\`` escapes ``%``, ``_`` and
        itself (any other escape is refused, as pypaimon does).

        Example: ``pb.like("v", "a_c%")``; as a string: ``"v LIKE 'a_c%'"``. Raises
        ``InvalidArgumentError`` for an unknown column or a bad escape."""
        return self._leaf("like", field, [_like_pattern(pattern_literal)])

    def not_between(self, field: str, included_lower_bound: Any, included_upper_bound: Any) -> Predicate:
        """Rows below ``included_lower_bound`` or above ``included_upper_bound`` (NULL: no).
        String form: ``"id NOT BETWEEN 1 AND 5"``. Raises ``InvalidArgumentError`` for an
        unknown column."""
        return self._leaf("not_between", field, [included_lower_bound, included_upper_bound])

    @staticmethod
    def and_predicates(predicates: Sequence[Predicate]) -> Optional[Predicate]:
        """Rows matching every predicate (None entries are skipped; None if none is left;
        one predicate is returned as is). A static method, as pypaimon's:
        ``PredicateBuilder.and_predicates([...])`` works without a builder.

        Example: ``pb.and_predicates([pb.equal("dt", "a"), pb.greater_than("id", 3)])``; as a
        string: ``"dt = 'a' AND id > 3"``."""
        ps = [p for p in predicates if p is not None]
        if not ps:
            return None
        return ps[0] if len(ps) == 1 else Predicate(method="and", children=ps)

    @staticmethod
    def or_predicates(predicates: Sequence[Predicate]) -> Optional[Predicate]:
        """Rows matching at least one predicate (None entries are skipped; None if none is
        left; one predicate is returned as is). String form: ``"id = 1 OR v IS NULL"``."""
        ps = [p for p in predicates if p is not None]
        if not ps:
            return None
        return ps[0] if len(ps) == 1 else Predicate(method="or", children=ps)


def _stat_at(row: Any, i: int) -> Any:
    """Field ``i`` of a statistics row (None when the row is missing or shorter)."""
    if row is None:
        return None
    try:
        if i >= len(row):
            return None
        return row.get_field(i) if hasattr(row, "get_field") else row[i]
    except (IndexError, TypeError):
        return None


def _integral(v: Union[float, Decimal]) -> bool:
    """A finite float or Decimal without a fraction (``5.0``, ``Decimal('5')``)."""
    finite = v.is_finite() if isinstance(v, Decimal) else math.isfinite(v)
    return finite and v == int(v)


def _is_nan(v: Any) -> bool:
    """A float or ``Decimal`` NaN (comparing a ``Decimal('NaN')`` raises, a float NaN is
    never ordered: either way it proves nothing about a file's rows)."""
    if isinstance(v, Decimal):
        return v.is_nan()
    return isinstance(v, float) and math.isnan(v)


def _like_regex(pattern: str) -> re.Pattern[str]:
    """SQL LIKE as a regular expression (the builder checked the escapes): ``\\x`` is x
    itself, ``_`` one character, ``%`` any run."""
    wild = {"_": ".", "%": ".*"}
    tokens = re.findall(r"\\.|.", pattern, re.DOTALL)
    return re.compile("".join(re.escape(t[-1]) if len(t) == 2 else wild.get(t, re.escape(t))
                              for t in tokens), re.DOTALL)


def _java_order(x: Any) -> Any:
    """A number as a key in Java's order of doubles (``Double.compare``), the engine's: NaN
    equals NaN and is above everything, -0.0 is below 0.0."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return (0, x, 0)
    if isinstance(x, float) and math.isnan(x):
        return (1, 0.0, 0)
    return (0, x, -1 if x == 0 and math.copysign(1.0, x) < 0 else 0)


def _test_value(method: str, v: Any, lits: List[Any]) -> bool:
    """One leaf on one value, with SQL's NULLs."""
    if method == "isNull":
        return v is None
    if method == "isNotNull":
        return v is not None
    if v is None:
        return False
    if isinstance(v, float) or any(isinstance(x, float) for x in lits):
        v, lits = _java_order(v), [None if x is None else _java_order(x) for x in lits]
    if method == "in":
        return v in [x for x in lits if x is not None]
    if method == "notIn":
        return None not in lits and v not in lits
    if method in ("startsWith", "endsWith", "contains", "like"):
        if not isinstance(v, str) or not lits:
            return False
        p = lits[0]
        if method == "startsWith":
            return v.startswith(p)
        if method == "endsWith":
            return v.endswith(p)
        if method == "contains":
            return p in v
        return _like_regex(p).fullmatch(v) is not None
    need = 2 if method in ("between", "notBetween") else 1
    if len(lits) < need or any(x is None for x in lits[:need]):
        return False
    cmp = _VALUE_TESTS[method]
    return bool(cmp(v, lits))


_VALUE_TESTS: Dict[str, Callable[[Any, List[Any]], bool]] = {
    "equal": lambda v, ls: v == ls[0],
    "notEqual": lambda v, ls: v != ls[0],
    "lessThan": lambda v, ls: v < ls[0],
    "lessOrEqual": lambda v, ls: v <= ls[0],
    "greaterThan": lambda v, ls: v > ls[0],
    "greaterOrEqual": lambda v, ls: v >= ls[0],
    "between": lambda v, ls: ls[0] <= v <= ls[1],
    "notBetween": lambda v, ls: v < ls[0] or v > ls[1],
}


def _may_start_with(lo: Any, hi: Any, prefix: Any) -> bool:
    """Whether [lo, hi] may hold a string starting with ``prefix``."""
    if not (isinstance(lo, str) and isinstance(hi, str) and isinstance(prefix, str)):
        return True
    return (lo.startswith(prefix) or lo < prefix) and (hi.startswith(prefix) or hi > prefix)


# a leaf on a column's [min, max]: False only when no value in the range can match (the
# string matchers other than startsWith never prune: a range bounds no suffix or substring)
_STATS_TESTS: Dict[str, Callable[[Any, Any, List[Any]], bool]] = {
    "equal": lambda lo, hi, ls: ls[0] is None or lo <= ls[0] <= hi,
    "notEqual": lambda lo, hi, ls: ls[0] is None or not (lo == ls[0] == hi),
    "lessThan": lambda lo, hi, ls: ls[0] is None or ls[0] > lo,
    "lessOrEqual": lambda lo, hi, ls: ls[0] is None or ls[0] >= lo,
    "greaterThan": lambda lo, hi, ls: ls[0] is None or ls[0] < hi,
    "greaterOrEqual": lambda lo, hi, ls: ls[0] is None or ls[0] <= hi,
    "in": lambda lo, hi, ls: any(lo <= x <= hi for x in ls if x is not None),
    "notIn": lambda lo, hi, ls: None not in ls and not any(lo == x == hi for x in ls),
    "between": lambda lo, hi, ls: ls[0] <= hi and ls[1] >= lo,
    "notBetween": lambda lo, hi, ls: ls[0] > lo or ls[1] < hi,
    "startsWith": lambda lo, hi, ls: _may_start_with(lo, hi, ls[0]),
}


def _like_pattern(v: Any) -> str:
    """A LIKE pattern, checked: a string whose ``\\`` escapes only ``%``, ``_`` or itself."""
    pattern = _string_literal("like", v)
    i = 0
    while i < len(pattern):
        if pattern[i] == "\\":
            if i + 1 >= len(pattern) or pattern[i + 1] not in "%_\\":
                raise InvalidArgumentError(f"like: invalid escape in '{pattern}' at position {i}")
            i += 1
        i += 1
    return pattern


def _string_literal(method: str, v: Any) -> str:
    if not isinstance(v, str):
        raise InvalidArgumentError(f"{method} takes a string pattern, got {type(v).__name__}")
    return v


_SQL_OPS = {"equal": "=", "not_equal": "!=", "less_than": "<", "less_or_equal": "<=",
            "greater_than": ">", "greater_or_equal": ">="}
_SQL_WORDS = {"AND", "OR", "NOT", "IN", "IS", "NULL", "BETWEEN", "LIKE", "TRUE", "FALSE", "DATE",
              "TIMESTAMP"}


def _sql_name(name: Optional[str]) -> str:
    n = str(name)
    plain = n and (n[0].isalpha() or n[0] == "_") and all(c.isalnum() or c == "_" for c in n)
    return n if plain and n.upper() not in _SQL_WORDS else f"`{n}`"


def _sql_literal(v: Any) -> str:
    import datetime

    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, str):
        return "'" + v.replace("'", "''") + "'"
    if isinstance(v, datetime.datetime):
        return f"TIMESTAMP '{v.isoformat(sep=' ')}'"
    if isinstance(v, datetime.date):
        return f"DATE '{v.isoformat()}'"
    return str(v) if isinstance(v, (int, float)) or type(v).__name__ == "Decimal" else repr(v)


def _like_escape(s: Any) -> str:
    return str(s).replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _sql(p: Predicate, top: bool = False) -> str:
    if p.method in ("and", "or"):
        text = f" {p.method.upper()} ".join(_sql(c) for c in p.children)
        return text if top else f"({text})"
    col, lits = _sql_name(p.field), list(p.literals or [])
    m = p.builder_method
    if m in _SQL_OPS and lits:
        return f"{col} {_SQL_OPS[m]} {_sql_literal(lits[0])}"
    if m in ("is_in", "is_not_in"):
        word = "IN" if m == "is_in" else "NOT IN"
        return f"{col} {word} ({', '.join(_sql_literal(v) for v in lits)})"
    if m in ("between", "not_between") and len(lits) == 2:
        word = "BETWEEN" if m == "between" else "NOT BETWEEN"
        return f"{col} {word} {_sql_literal(lits[0])} AND {_sql_literal(lits[1])}"
    if m == "is_null":
        return f"{col} IS NULL"
    if m == "is_not_null":
        return f"{col} IS NOT NULL"
    if lits and m in ("startswith", "endswith", "contains", "like"):
        text = str(lits[0])
        pattern = {"startswith": _like_escape(text) + "%", "endswith": "%" + _like_escape(text),
                   "contains": "%" + _like_escape(text) + "%", "like": text}[m]
        return f"{col} LIKE {_sql_literal(pattern)}"
    return f"{m}({col}, {lits!r})"
