"""Filters, as pypaimon's ``PredicateBuilder``. A predicate prunes partitions and files using
their statistics and is then applied exactly to the rows read."""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field as dc_field
from typing import Any, List, Optional, Sequence

import pyarrow as pa

from paimon_rs.exceptions import InvalidArgumentError


@dataclass(frozen=True)
class Predicate:
    """A node of a filter tree: ``method`` is a leaf operator or ``and``/``or``."""

    method: str
    field: Optional[str] = None
    literals: Optional[List[Any]] = None
    children: List[Predicate] = dc_field(default_factory=list)

    def to_core(self, schema: pa.Schema) -> tuple:
        """The tuple form understood by ``paimon_rs._core`` (literals as typed Arrow arrays)."""
        if self.method in ("and", "or"):
            return (self.method, [c.to_core(schema) for c in self.children])
        assert self.field is not None
        idx = schema.get_field_index(self.field)
        if idx < 0:
            raise InvalidArgumentError(f"filter column '{self.field}' is not in the table")
        typ = schema.field(idx).type
        lits = list(self.literals or [])
        try:
            arr = pa.array(lits, type=typ) if lits else pa.array([], type=typ)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError) as e:
            raise InvalidArgumentError(
                f"filter on '{self.field}': literal(s) {lits!r} do not fit type {typ}: {e}"
            ) from e
        return ("leaf", self.field, self.method, arr)


class PredicateBuilder:
    """Builds predicates on the columns of one table."""

    def __init__(self, schema: pa.Schema):
        self._names = set(schema.names)
        self.field_names: List[str] = list(schema.names)

    def _leaf(self, method: str, field_name: str, literals: Sequence[Any]) -> Predicate:
        if field_name not in self._names:
            raise InvalidArgumentError(f"filter column '{field_name}' is not in the table")
        return Predicate(method=method, field=field_name, literals=list(literals))

    def equal(self, field: str, literal: Any) -> Predicate:
        return self._leaf("equal", field, [literal])

    def not_equal(self, field: str, literal: Any) -> Predicate:
        return self._leaf("not_equal", field, [literal])

    def less_than(self, field: str, literal: Any) -> Predicate:
        return self._leaf("less_than", field, [literal])

    def less_or_equal(self, field: str, literal: Any) -> Predicate:
        return self._leaf("less_or_equal", field, [literal])

    def greater_than(self, field: str, literal: Any) -> Predicate:
        return self._leaf("greater_than", field, [literal])

    def greater_or_equal(self, field: str, literal: Any) -> Predicate:
        return self._leaf("greater_or_equal", field, [literal])

    def is_null(self, field: str) -> Predicate:
        return self._leaf("is_null", field, [])

    def is_not_null(self, field: str) -> Predicate:
        return self._leaf("is_not_null", field, [])

    def startswith(self, field: str, pattern_literal: str) -> Predicate:
        return self._leaf("startswith", field, [pattern_literal])

    def is_in(self, field: str, literals: Sequence[Any]) -> Predicate:
        return self._leaf("is_in", field, list(literals))

    def is_not_in(self, field: str, literals: Sequence[Any]) -> Predicate:
        return self._leaf("is_not_in", field, list(literals))

    def between(self, field: str, included_lower_bound: Any, included_upper_bound: Any) -> Predicate:
        return self._leaf("between", field, [included_lower_bound, included_upper_bound])

    # --- pypaimon 2.1.0 names: string matchers never prune files by statistics (a file's
    # min/max bound no suffix, substring or pattern), only partitions and rows ---

    def endswith(self, field: str, pattern_literal: str) -> Predicate:
        """Rows whose string ends with ``pattern_literal``."""
        return self._leaf("endswith", field, [_string_literal("endswith", pattern_literal)])

    def contains(self, field: str, pattern_literal: str) -> Predicate:
        """Rows whose string contains ``pattern_literal``."""
        return self._leaf("contains", field, [_string_literal("contains", pattern_literal)])

    def like(self, field: str, pattern_literal: str) -> Predicate:
        """SQL LIKE: ``%`` any sequence, ``_`` one character, ``\\`` escapes ``%``, ``_`` and
        itself (any other escape is refused, as pypaimon does)."""
        pattern = _string_literal("like", pattern_literal)
        i = 0
        while i < len(pattern):
            if pattern[i] == "\\":
                if i + 1 >= len(pattern) or pattern[i + 1] not in "%_\\":
                    raise InvalidArgumentError(f"like: invalid escape in '{pattern}' at position {i}")
                i += 1
            i += 1
        return self._leaf("like", field, [pattern])

    def not_between(self, field: str, included_lower_bound: Any, included_upper_bound: Any) -> Predicate:
        """Rows below ``included_lower_bound`` or above ``included_upper_bound`` (NULL: no)."""
        return self._leaf("not_between", field, [included_lower_bound, included_upper_bound])

    def and_predicates(self, predicates: Sequence[Predicate]) -> Optional[Predicate]:
        ps = [p for p in predicates if p is not None]
        if not ps:
            return None
        return ps[0] if len(ps) == 1 else Predicate(method="and", children=ps)

    def or_predicates(self, predicates: Sequence[Predicate]) -> Optional[Predicate]:
        ps = [p for p in predicates if p is not None]
        if not ps:
            return None
        return ps[0] if len(ps) == 1 else Predicate(method="or", children=ps)


def _string_literal(method: str, v: Any) -> str:
    if not isinstance(v, str):
        raise InvalidArgumentError(f"{method} takes a string pattern, got {type(v).__name__}")
    return v
