"""pypaimon's WHERE-clause strings (``pypaimon.common.where_parser``), parsed into paimon_rs
:class:`~paimon_rs.Predicate` trees.

pypaimon parses the ``--where`` of its CLI and the ``where(...)`` of its multimodal API with
``parse_where_clause(where_string, fields)``; this module is the same function, with pypaimon's
grammar and errors, building paimon_rs predicates. The grammar::

    or_expr   := and_expr (OR and_expr)*              -- AND binds tighter than OR
    and_expr  := primary (AND primary)*
    primary   := '(' or_expr ')' | field condition
    condition := (= | != | <> | < | <= | > | >=) literal
               | IS [NOT] NULL | [NOT] IN '(' literal (',' literal)* ')'
               | [NOT] BETWEEN literal AND literal | LIKE literal
    literal   := 'quoted' | "quoted" | a bare word or number

Keywords are case-insensitive; there is no ``NOT`` before a condition, no ``NOT LIKE`` and no
escape inside quotes but a backslash. A literal is converted by its field's type as pypaimon
2.1.0 does (integers for TINYINT to BIGINT, floats for FLOAT / DOUBLE, a ``decimal.Decimal`` at
the column's scale when exact there for DECIMAL, ``true`` / ``1`` / ``yes`` for BOOLEAN, a ``date``
from ``YYYY-MM-DD`` for DATE, a ``time`` from ``HH:MM[:SS[.ffffff]]`` for TIME, the text
otherwise), except that a TIMESTAMP literal becomes a ``datetime`` from its ISO text (pypaimon
keeps the text), the value paimon_rs's predicates compare those columns with. Only fields of an
atomic type can be filtered.

:func:`paimon_rs.filter_parser.parse_filter` (``ReadBuilder.with_filter("...")``) is paimon_rs's
own, richer grammar (``NOT``, typed ``DATE '...'`` literals, positions in its messages).
"""

from __future__ import annotations

import datetime
import decimal
import re
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

from paimon_rs.data_types import AtomicType, DataField
from paimon_rs.exceptions import InvalidArgumentError
from paimon_rs.predicate import Predicate, PredicateBuilder

__all__ = ["parse_where_clause", "extract_fields_from_where"]

# pypaimon's tokens: a quoted string (a backslash escapes the next character), a two-character
# operator, a one-character operator or punctuation, or a bare word / number
_TOKEN = re.compile(r"""'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|<=|>=|<>|!=|[=<>]|[(),]|[^\s,()=<>!'"]+""")
_COMPARISONS = {"=": "equal", "!=": "not_equal", "<>": "not_equal", "<": "less_than",
                "<=": "less_or_equal", ">": "greater_than", ">=": "greater_or_equal"}
_INTEGER = {"TINYINT", "SMALLINT", "INT", "INTEGER", "BIGINT"}
_FLOAT = {"FLOAT", "DOUBLE"}
_DECIMAL = {"DECIMAL", "NUMERIC", "DEC"}
_Tokens = List[str]


def _tokenize(expression: str) -> _Tokens:
    return _TOKEN.findall(expression)


def extract_fields_from_where(where_string: str, available_fields: Set[str]) -> Set[str]:
    """The names of ``available_fields`` that ``where_string`` mentions (pypaimon's CLI reads
    them besides the selected columns). Empty for an empty string."""
    if not where_string or not where_string.strip():
        return set()
    return {t for t in _tokenize(where_string.strip()) if t in available_fields}


def parse_where_clause(where_string: str, fields: Sequence[DataField]) -> Optional[Predicate]:
    """Parse a pypaimon WHERE clause (without the ``WHERE`` keyword) into a predicate.

    Args:
        where_string: e.g. ``"age > 18 AND name IN ('a', 'b')"`` (grammar in this module's
            doc).
        fields: the table's fields (``table.fields``), which type the literals.

    Returns:
        The predicate, or None for an empty or blank string.

    Raises:
        InvalidArgumentError: (a ``ValueError``, as pypaimon raises) a syntax error, an unknown
            field, a field of a non-atomic type, or a literal its field's type cannot take;
            the messages are pypaimon's.

    Example::

        >>> parse_where_clause("score BETWEEN 60 AND 100 OR name IS NULL", table.fields)
    """
    where_string = where_string.strip()
    if not where_string:
        return None
    types: Dict[str, Optional[str]] = {
        f.name: f.type.type.upper() if isinstance(f.type, AtomicType) else None for f in fields}
    parser = _WhereParser(PredicateBuilder(list(fields)), types)
    predicate, rest = parser.or_expression(_tokenize(where_string))
    if rest:
        raise InvalidArgumentError(f"Unexpected tokens after parsing: {' '.join(rest)}")
    return predicate


def _cast_literal(value: str, type_name: str) -> Any:
    """``value`` (a literal's text) as a value of the SQL type ``type_name``."""
    # pypaimon: the text before any "("; here also before a space (``INT NOT NULL``)
    base = re.split(r"[\s(]", type_name.strip(), maxsplit=1)[0].upper()
    try:
        if base in _INTEGER:
            return int(value)
        if base in _FLOAT:
            return float(value)
    except ValueError as e:
        raise InvalidArgumentError(f"Cannot convert literal '{value}' to {type_name}: {e}") from e
    if base in _DECIMAL:
        return _cast_decimal(value, type_name)
    if base == "BOOLEAN":
        return value.lower() in ("true", "1", "yes")
    if base == "DATE":
        try:
            return datetime.datetime.strptime(value.strip(), "%Y-%m-%d").date()
        except ValueError:
            raise InvalidArgumentError(f"Invalid DATE literal: {value!r}") from None
    if base == "TIME":
        return _cast_time(value)
    if base == "TIMESTAMP":
        # pypaimon keeps the text, which its filter then fails on; the engine compares a datetime
        try:
            return datetime.datetime.fromisoformat(value.strip())
        except ValueError:
            raise InvalidArgumentError(f"Invalid TIMESTAMP literal: {value!r}") from None
    return value


def _cast_decimal(value: str, type_name: str) -> decimal.Decimal:
    """A DECIMAL literal at the column's scale when it is exact there (``50`` is ``50.00`` for a
    DECIMAL(10, 2)), else as written, as pypaimon 2.1.0 casts it."""
    try:
        number = decimal.Decimal(value)
    except decimal.InvalidOperation:
        raise InvalidArgumentError(f"Invalid DECIMAL literal: {value!r}") from None
    shape = re.search(r"\(\s*(\d+)\s*,\s*(\d+)\s*\)", type_name)
    precision, scale = (int(shape.group(1)), int(shape.group(2))) if shape else (38, 0)
    try:
        scaled = number.quantize(decimal.Decimal(1).scaleb(-scale),
                                 context=decimal.Context(prec=max(precision, 1)))
    except decimal.InvalidOperation:
        return number
    return scaled if scaled == number else number


_TIME = re.compile(r"(\d{1,2}):(\d{2})(?::(\d{2})(?:\.(\d{1,6}))?)?")


def _cast_time(value: str) -> datetime.time:
    """A TIME literal, ``HH:MM[:SS[.ffffff]]`` (no offset: a TIME has no time zone)."""
    match = _TIME.fullmatch(value.strip())
    try:
        if match is None:
            raise ValueError(value)
        hour, minute, second, fraction = match.groups()
        return datetime.time(int(hour), int(minute), int(second or 0),
                             int(fraction.ljust(6, "0")) if fraction else 0)
    except ValueError:
        raise InvalidArgumentError(f"Invalid TIME literal: {value!r}") from None


def _literal(tokens: _Tokens) -> Tuple[str, _Tokens]:
    """The next literal's text (quotes stripped) and the tokens after it."""
    if not tokens:
        raise InvalidArgumentError("Expected a literal value but reached end of expression")
    token = tokens[0]
    if len(token) >= 2 and token[0] == token[-1] and token[0] in "'\"":
        token = token[1:-1]
    return token, tokens[1:]


class _WhereParser:
    def __init__(self, builder: PredicateBuilder, types: Dict[str, Optional[str]]):
        self.builder = builder
        self.types = types

    def or_expression(self, tokens: _Tokens) -> Tuple[Predicate, _Tokens]:
        return self._connected(tokens, "OR", self.and_expression, PredicateBuilder.or_predicates)

    def and_expression(self, tokens: _Tokens) -> Tuple[Predicate, _Tokens]:
        # a BETWEEN's AND is taken by its primary: an AND here always connects
        return self._connected(tokens, "AND", self.primary, PredicateBuilder.and_predicates)

    @staticmethod
    def _connected(tokens: _Tokens, word: str, operand: Any, combine: Any) -> Tuple[Predicate, _Tokens]:
        first, tokens = operand(tokens)
        operands = [first]
        while tokens and tokens[0].upper() == word:
            nxt, tokens = operand(tokens[1:])
            operands.append(nxt)
        return (operands[0] if len(operands) == 1 else combine(operands)), tokens

    def primary(self, tokens: _Tokens) -> Tuple[Predicate, _Tokens]:
        if not tokens:
            raise InvalidArgumentError("Unexpected end of WHERE clause")
        if tokens[0] == "(":
            predicate, tokens = self.or_expression(tokens[1:])
            if not tokens or tokens[0] != ")":
                raise InvalidArgumentError("Missing closing parenthesis ')'")
            return predicate, tokens[1:]
        name, tokens = tokens[0], tokens[1:]
        if not tokens:
            raise InvalidArgumentError(f"Unexpected end after field name '{name}'")
        if name not in self.types:
            raise InvalidArgumentError(
                f"Unknown field '{name}'. Available fields: {sorted(self.types)}")
        field_type = self.types[name]
        if field_type is None:
            raise InvalidArgumentError(
                f"Field '{name}' has a non-atomic type (e.g., ARRAY, MAP, ROW) which is not "
                f"supported in WHERE clauses. Only atomic type fields (INT, STRING, DOUBLE, "
                f"etc.) can be used for filtering.")
        return self.condition(name, field_type, tokens)

    def condition(self, name: str, field_type: str, tokens: _Tokens) -> Tuple[Predicate, _Tokens]:
        b = self.builder
        op = tokens[0].upper()
        if op == "IS":
            words = [t.upper() for t in tokens[1:3]]
            if not words:
                raise InvalidArgumentError(f"Unexpected end after 'IS' for field '{name}'")
            if words[0] == "NULL":
                return b.is_null(name), tokens[2:]
            if words[0] == "NOT":
                if words[1:] != ["NULL"]:
                    raise InvalidArgumentError(f"Expected 'NULL' after 'IS NOT' for field '{name}'")
                return b.is_not_null(name), tokens[3:]
            raise InvalidArgumentError(f"Expected 'NULL' or 'NOT NULL' after 'IS' for field '{name}'")
        negated = op == "NOT"
        if negated:
            tokens = tokens[1:]
            if not tokens or tokens[0].upper() not in ("IN", "BETWEEN"):
                raise InvalidArgumentError(
                    f"Expected 'IN' or 'BETWEEN' after 'NOT' for field '{name}'")
            op = tokens[0].upper()
        if op == "IN":
            values, tokens = self.in_list(tokens[1:], field_type)
            return (b.is_not_in if negated else b.is_in)(name, values), tokens
        if op == "BETWEEN":
            low, tokens = self.value(tokens[1:], field_type)
            if not tokens or tokens[0].upper() != "AND":
                raise InvalidArgumentError(
                    f"Expected 'AND' in {'NOT BETWEEN' if negated else 'BETWEEN'} expression "
                    f"for field '{name}'")
            high, tokens = self.value(tokens[1:], field_type)
            return (b.not_between if negated else b.between)(name, low, high), tokens
        if op == "LIKE":
            pattern, tokens = _literal(tokens[1:])
            return b.like(name, pattern), tokens
        if op in _COMPARISONS:
            value, tokens = self.value(tokens[1:], field_type)
            return getattr(b, _COMPARISONS[op])(name, value), tokens
        raise InvalidArgumentError(
            f"Unsupported operator '{tokens[0]}' for field '{name}'. Supported: =, !=, <>, <, "
            f"<=, >, >=, IS NULL, IS NOT NULL, IN, NOT IN, BETWEEN, LIKE")

    @staticmethod
    def value(tokens: _Tokens, field_type: str) -> Tuple[Any, _Tokens]:
        text, tokens = _literal(tokens)
        return _cast_literal(text, field_type), tokens

    def in_list(self, tokens: _Tokens, field_type: str) -> Tuple[List[Any], _Tokens]:
        if not tokens or tokens[0] != "(":
            raise InvalidArgumentError("Expected '(' after IN")
        tokens = tokens[1:]
        values: List[Any] = []
        while tokens:
            if tokens[0] == ")":
                return values, tokens[1:]
            if tokens[0] == ",":
                tokens = tokens[1:]
                continue
            value, tokens = self.value(tokens, field_type)
            values.append(value)
        raise InvalidArgumentError("Missing closing ')' in IN list")
