"""SQL-like filter strings (``"id = 1 AND v LIKE 'a%'"``) parsed into :class:`Predicate` trees.

A small hand-written tokenizer and recursive-descent parser (no dependency). The grammar::

    filter     := or_expr EOF
    or_expr    := and_expr (OR and_expr)*
    and_expr   := not_expr (AND not_expr)*
    not_expr   := NOT not_expr | '(' or_expr ')' | condition
    condition  := operand cmp_op operand              -- one side a column, the other a literal
                | column [NOT] IN '(' literal (',' literal)* ')'
                | column [NOT] BETWEEN literal AND literal
                | column IS [NOT] NULL
                | column [NOT] LIKE 'pattern'
    cmp_op     := = | == | != | <> | < | <= | > | >=
    column     := name | `quoted name` | "quoted name"
    literal    := [-]integer | [-]decimal (1.5, .5, 1e3) | 'string' ('' escapes a quote)
                | TRUE | FALSE | DATE 'yyyy-mm-dd' | TIMESTAMP 'yyyy-mm-dd hh:mm:ss[.ffffff]'

Keywords are case-insensitive; ``NULL`` only appears in ``IS [NOT] NULL``. ``NOT`` is pushed
down to the conditions (De Morgan), which is exact in SQL's three-valued logic; ``NOT LIKE`` has
no predicate and is refused. Literals are converted to the column's type and refused when they
do not fit (see :func:`parse_filter`). Everything is checked when the string is parsed, never
at read time.
"""

from __future__ import annotations

import datetime
import decimal
import re
from dataclasses import dataclass
from typing import Any, List, Optional, Tuple, Union

import pyarrow as pa

from paimon_rs.exceptions import InvalidArgumentError
from paimon_rs.predicate import Predicate, PredicateBuilder, _missing_field, suggest_column

__all__ = ["parse_filter"]

KEYWORDS = {"AND", "OR", "NOT", "IN", "IS", "NULL", "BETWEEN", "LIKE", "TRUE", "FALSE", "DATE",
            "TIMESTAMP"}
CMP_OPS = {"=": "=", "==": "=", "!=": "!=", "<>": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
# the comparison with its operands swapped (``5 < id`` is ``id > 5``) and its negation
_FLIP = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_NEGATE = {"=": "!=", "!=": "=", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}
_METHOD = {"=": "equal", "!=": "not_equal", "<": "less_than", "<=": "less_or_equal",
           ">": "greater_than", ">=": "greater_or_equal"}


@dataclass(frozen=True)
class _Token:
    kind: str  # NAME, QNAME, KEYWORD, NUMBER, STRING, OP, LPAREN, RPAREN, COMMA, MINUS, EOF
    value: str  # a keyword in upper case
    pos: int
    text: str = ""  # a keyword as written


@dataclass(frozen=True)
class _Literal:
    kind: str  # int, decimal, string, bool, date, timestamp
    value: Any
    pos: int
    text: str


@dataclass(frozen=True)
class _Column:
    name: str
    pos: int


# AST nodes: ("and", [nodes]) ("or", [nodes]) ("not", node) ("cmp", op, col, lit)
# ("in", col, [lits], negated) ("between", col, lo, hi, negated) ("null", col, negated)
# ("like", col, lit, negated)
_Node = Tuple[Any, ...]


class _Parser:
    def __init__(self, text: str, schema: pa.Schema, where: str):
        self.text = text
        self.schema = schema
        self.where = where
        self.tokens = self._tokenize()
        self.i = 0

    # --- errors ---

    def error(self, message: str, pos: int) -> InvalidArgumentError:
        caret = " " * pos + "^"
        return InvalidArgumentError(f"{self.where}: {message} (at position {pos})\n  {self.text}\n  {caret}")

    # --- tokenizer ---

    def _tokenize(self) -> List[_Token]:
        s, out, i, n = self.text, [], 0, len(self.text)
        while i < n:
            c = s[i]
            if c.isspace():
                i += 1
            elif c == "(":
                out.append(_Token("LPAREN", c, i))
                i += 1
            elif c == ")":
                out.append(_Token("RPAREN", c, i))
                i += 1
            elif c == ",":
                out.append(_Token("COMMA", c, i))
                i += 1
            elif c == "-":
                out.append(_Token("MINUS", c, i))
                i += 1
            elif c in "=!<>":
                two = s[i:i + 2]
                if two in CMP_OPS:
                    out.append(_Token("OP", two, i))
                    i += 2
                elif c in CMP_OPS:
                    out.append(_Token("OP", c, i))
                    i += 1
                else:
                    raise self.error(f"unexpected character {c!r}", i)
            elif c == "'":
                j, buf = i + 1, []
                while True:
                    if j >= n:
                        raise self.error("unterminated string literal", i)
                    if s[j] == "'":
                        if s[j + 1:j + 2] == "'":
                            buf.append("'")
                            j += 2
                            continue
                        break
                    buf.append(s[j])
                    j += 1
                out.append(_Token("STRING", "".join(buf), i))
                i = j + 1
            elif c in "`\"":
                j = s.find(c, i + 1)
                if j < 0:
                    raise self.error(f"unterminated quoted column name (missing {c})", i)
                if j == i + 1:
                    raise self.error("empty quoted column name", i)
                out.append(_Token("QNAME", s[i + 1:j], i))
                i = j + 1
            elif c.isdigit() or (c == "." and s[i + 1:i + 2].isdigit()):
                j = i
                while j < n and s[j].isdigit():
                    j += 1
                if j < n and s[j] == ".":
                    j += 1
                    while j < n and s[j].isdigit():
                        j += 1
                if j < n and s[j] in "eE":
                    k = j + 1
                    if k < n and s[k] in "+-":
                        k += 1
                    if k < n and s[k].isdigit():
                        j = k
                        while j < n and s[j].isdigit():
                            j += 1
                if j < n and (s[j].isalnum() or s[j] == "_"):
                    raise self.error(f"malformed number {s[i:j + 1]!r}", i)
                out.append(_Token("NUMBER", s[i:j], i))
                i = j
            elif c.isalpha() or c == "_":
                j = i
                while j < n and (s[j].isalnum() or s[j] == "_"):
                    j += 1
                # a qualified name (``source.v`` in merge conditions) is one name
                while j + 1 < n and s[j] == "." and (s[j + 1].isalpha() or s[j + 1] == "_"):
                    j += 1
                    while j < n and (s[j].isalnum() or s[j] == "_"):
                        j += 1
                word = s[i:j]
                kind = "KEYWORD" if word.upper() in KEYWORDS else "NAME"
                out.append(_Token(kind, word.upper() if kind == "KEYWORD" else word, i, word))
                i = j
            else:
                raise self.error(f"unexpected character {c!r}", i)
        out.append(_Token("EOF", "", n))
        return out

    # --- token helpers ---

    @property
    def tok(self) -> _Token:
        return self.tokens[self.i]

    def peek(self, k: int = 1) -> _Token:
        return self.tokens[min(self.i + k, len(self.tokens) - 1)]

    def advance(self) -> _Token:
        t = self.tokens[self.i]
        self.i += 1
        return t

    def at_keyword(self, *words: str) -> bool:
        return self.tok.kind == "KEYWORD" and self.tok.value in words

    def expect_keyword(self, word: str) -> _Token:
        if not self.at_keyword(word):
            raise self.error(f"expected {word}, found {self.describe(self.tok)}", self.tok.pos)
        return self.advance()

    def expect(self, kind: str, what: str) -> _Token:
        if self.tok.kind != kind:
            raise self.error(f"expected {what}, found {self.describe(self.tok)}", self.tok.pos)
        return self.advance()

    @staticmethod
    def describe(t: _Token) -> str:
        if t.kind == "EOF":
            return "the end of the filter"
        if t.kind == "STRING":
            return f"the string '{t.value}'"
        return repr(t.value)

    # --- grammar ---

    def parse(self) -> _Node:
        if self.tok.kind == "EOF":
            raise self.error("empty filter", 0)
        node = self.or_expr()
        if self.tok.kind != "EOF":
            raise self.error(f"unexpected {self.describe(self.tok)} (missing AND / OR?)", self.tok.pos)
        return node

    def or_expr(self) -> _Node:
        parts = [self.and_expr()]
        while self.at_keyword("OR"):
            self.advance()
            parts.append(self.and_expr())
        return parts[0] if len(parts) == 1 else ("or", parts)

    def and_expr(self) -> _Node:
        parts = [self.not_expr()]
        while self.at_keyword("AND"):
            self.advance()
            parts.append(self.not_expr())
        return parts[0] if len(parts) == 1 else ("and", parts)

    def not_expr(self) -> _Node:
        if self.at_keyword("NOT"):
            self.advance()
            return ("not", self.not_expr())
        if self.tok.kind == "LPAREN":
            self.advance()
            node = self.or_expr()
            self.expect("RPAREN", "')'")
            return node
        return self.condition()

    def operand(self) -> Union[_Column, _Literal]:
        t = self.tok
        if t.kind in ("NAME", "QNAME") or self.keyword_column(t):
            self.advance()
            return self.column(t)
        return self.literal()

    def keyword_column(self, t: _Token) -> bool:
        """A column named ``date`` or ``timestamp`` (common names) written unquoted: the
        keyword not followed by a quoted value."""
        return (t.kind == "KEYWORD" and t.value in ("DATE", "TIMESTAMP") and t.text in self.schema.names
                and self.peek().kind != "STRING")

    def column(self, t: _Token) -> _Column:
        name = t.text if t.kind == "KEYWORD" else t.value
        if name not in self.schema.names:
            raise self.error(f"unknown column '{name}'{suggest_column(name, self.schema.names)}",
                             t.pos)
        return _Column(name, t.pos)

    def literal(self) -> _Literal:
        t = self.tok
        if t.kind == "MINUS":
            self.advance()
            num = self.tok
            if num.kind != "NUMBER":
                raise self.error("'-' must be followed by a number", t.pos)
            self.advance()
            return self.number(num, t.pos, negative=True)
        if t.kind == "NUMBER":
            self.advance()
            return self.number(t, t.pos, negative=False)
        if t.kind == "STRING":
            self.advance()
            return _Literal("string", t.value, t.pos, f"'{t.value}'")
        if t.kind == "KEYWORD" and t.value in ("TRUE", "FALSE"):
            self.advance()
            return _Literal("bool", t.value == "TRUE", t.pos, t.value)
        if t.kind == "KEYWORD" and t.value in ("DATE", "TIMESTAMP"):
            self.advance()
            s = self.expect("STRING", f"a quoted value after {t.value}, e.g. {t.value} "
                                      + ("'2024-01-31'" if t.value == "DATE" else "'2024-01-31 12:00:00'"))
            try:
                if t.value == "DATE":
                    value: Any = datetime.date.fromisoformat(s.value.strip())
                else:
                    value = _parse_timestamp(s.value)
            except ValueError:
                raise self.error(f"{t.value} '{s.value}' is not a valid {t.value.lower()}"
                                 + (" (at most microseconds)" if t.value == "TIMESTAMP" else ""),
                                 s.pos) from None
            return _Literal(t.value.lower(), value, t.pos, f"{t.value} '{s.value}'")
        if t.kind == "KEYWORD" and t.value == "NULL":
            raise self.error("NULL compares to nothing (comparisons with NULL are never true); "
                             "write 'column IS NULL' or 'column IS NOT NULL'", t.pos)
        raise self.error(f"expected a column or a literal, found {self.describe(t)}", t.pos)

    def number(self, t: _Token, pos: int, negative: bool) -> _Literal:
        text = ("-" if negative else "") + t.value
        if all(ch.isdigit() for ch in t.value):
            return _Literal("int", int(text), pos, text)
        return _Literal("decimal", decimal.Decimal(text), pos, text)

    def condition(self) -> _Node:
        left = self.operand()
        t = self.tok
        if t.kind == "OP":
            self.advance()
            right = self.operand()
            op = CMP_OPS[t.value]
            if isinstance(left, _Column) and isinstance(right, _Literal):
                return ("cmp", op, left, right)
            if isinstance(left, _Literal) and isinstance(right, _Column):
                return ("cmp", _FLIP[op], right, left)
            if isinstance(left, _Column):
                raise self.error(f"comparing two columns ('{left.name}' {t.value} '{right.name}') "  # type: ignore[union-attr]
                                 "cannot be expressed as a predicate; compare a column with a literal",
                                 t.pos)
            raise self.error(f"comparing two literals ({left.text} {t.value} {right.text}); "  # type: ignore[union-attr]
                             "one side must be a column", t.pos)
        if not isinstance(left, _Column):
            raise self.error(f"expected a comparison operator after {left.text}, "
                             f"found {self.describe(t)}", t.pos)
        negated = False
        if self.at_keyword("IS"):
            self.advance()
            if self.at_keyword("NOT"):
                self.advance()
                negated = True
            self.expect_keyword("NULL")
            return ("null", left, negated)
        if self.at_keyword("NOT"):
            self.advance()
            negated = True
            if not self.at_keyword("IN", "BETWEEN", "LIKE"):
                raise self.error(f"expected IN, BETWEEN or LIKE after NOT, found {self.describe(self.tok)}",
                                 self.tok.pos)
        if self.at_keyword("IN"):
            self.advance()
            self.expect("LPAREN", "'(' after IN")
            lits = [self.literal()]
            while self.tok.kind == "COMMA":
                self.advance()
                lits.append(self.literal())
            self.expect("RPAREN", "',' or ')' in the IN list")
            return ("in", left, lits, negated)
        if self.at_keyword("BETWEEN"):
            self.advance()
            lo = self.literal()
            self.expect_keyword("AND")
            hi = self.literal()
            return ("between", left, lo, hi, negated)
        if self.at_keyword("LIKE"):
            like = self.advance()
            pat = self.literal()
            if pat.kind != "string":
                raise self.error(f"LIKE takes a quoted pattern, got {pat.text}", pat.pos)
            return ("like", left, pat, negated, like.pos)
        raise self.error(f"expected a comparison (=, !=, <, <=, >, >=, IN, BETWEEN, IS, LIKE) after "
                         f"'{left.name}', found {self.describe(t)}", t.pos)

    # --- AST to predicates ---

    def to_predicate(self, node: _Node, negate: bool = False) -> Predicate:
        pb = PredicateBuilder(self.schema)
        kind = node[0]
        if kind in ("and", "or"):
            children = [self.to_predicate(c, negate) for c in node[1]]
            use_and = (kind == "and") != negate  # De Morgan
            p = pb.and_predicates(children) if use_and else pb.or_predicates(children)
            assert p is not None
            return p
        if kind == "not":
            return self.to_predicate(node[1], not negate)
        if kind == "cmp":
            _, op, col, lit = node
            op = _NEGATE[op] if negate else op
            return Predicate(method=_METHOD[op], index=self.position(col), field=col.name,
                             literals=[self.convert(col, lit)])
        if kind == "in":
            _, col, lits, neg = node
            values = [self.convert(col, lit) for lit in lits]
            return Predicate(method="is_not_in" if neg != negate else "is_in",
                             index=self.position(col), field=col.name, literals=values)
        if kind == "between":
            _, col, lo, hi, neg = node
            values = [self.convert(col, lo), self.convert(col, hi)]
            return Predicate(method="not_between" if neg != negate else "between",
                             index=self.position(col), field=col.name, literals=values)
        if kind == "null":
            _, col, neg = node
            return Predicate(method="is_not_null" if neg != negate else "is_null",
                             index=self.position(col), field=col.name, literals=[])
        if kind == "like":
            _, col, pat, neg, pos = node
            if neg != negate:
                raise self.error(f"NOT LIKE on '{col.name}' cannot be expressed: the predicates have "
                                 "no negated LIKE (filter the result, or use the positive form)", pos)
            self.check_string_column(col, "LIKE")
            try:
                p = pb.like(col.name, pat.value)
            except InvalidArgumentError as e:
                raise self.error(f"LIKE pattern {pat.text}: {e}", pat.pos) from None
            prefix = _like_prefix(pat.value)
            if prefix is not None:
                # same rows, and startswith also prunes files by their statistics
                return pb.startswith(col.name, prefix)
            return p
        raise AssertionError(kind)

    def position(self, col: _Column) -> int:
        """The column's place in the schema (the predicate's ``index``, as a builder's)."""
        return self.schema.get_field_index(col.name)

    def check_string_column(self, col: _Column, what: str) -> None:
        typ = self.schema.field(col.name).type
        if not (pa.types.is_string(typ) or pa.types.is_large_string(typ)
                or str(typ) == "string_view"):
            raise self.error(f"{what} needs a string column; '{col.name}' is {typ}", col.pos)

    def convert(self, col: _Column, lit: _Literal) -> Any:
        """``lit`` as a value of ``col``'s type, or an error naming both."""
        typ = self.schema.field(col.name).type
        v = self._convert(col, lit, typ)
        try:
            pa.array([v], type=typ)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError) as e:
            raise self.error(f"{lit.text} does not fit column '{col.name}' ({typ}): {e}", lit.pos) from None
        return v

    def _convert(self, col: _Column, lit: _Literal, typ: pa.DataType) -> Any:
        def refuse(hint: str = "") -> InvalidArgumentError:
            return self.error(f"{_KIND_NAMES[lit.kind]} {lit.text} for column '{col.name}' of type "
                              f"{typ}{hint}", lit.pos)

        unquote = " (numbers are written without quotes)" if lit.kind == "string" else ""
        if pa.types.is_integer(typ):
            if lit.kind == "int":
                return lit.value
            if lit.kind == "decimal":
                if lit.value == lit.value.to_integral_value():
                    return int(lit.value)
                raise refuse(" (not an integral value)")
            raise refuse(unquote)
        if pa.types.is_floating(typ):
            if lit.kind in ("int", "decimal"):
                return float(lit.value)
            raise refuse(unquote)
        if pa.types.is_decimal(typ):
            if lit.kind in ("int", "decimal"):
                d = decimal.Decimal(lit.value)
                q = d.quantize(decimal.Decimal(1).scaleb(-typ.scale))
                if q != d:
                    raise refuse(f" (more than {typ.scale} digits after the point)")
                return q
            raise refuse(unquote)
        if pa.types.is_string(typ) or pa.types.is_large_string(typ) or str(typ) == "string_view":
            if lit.kind == "string":
                return lit.value
            raise refuse(" (quote it: '...')")
        if pa.types.is_boolean(typ):
            if lit.kind == "bool":
                return lit.value
            raise refuse(" (use TRUE or FALSE)")
        if pa.types.is_date(typ):
            if lit.kind == "date":
                return lit.value
            if lit.kind == "string":
                try:
                    return datetime.date.fromisoformat(lit.value.strip())
                except ValueError:
                    raise refuse(" (not a date yyyy-mm-dd)") from None
            raise refuse(" (write DATE 'yyyy-mm-dd')")
        if pa.types.is_timestamp(typ):
            if lit.kind == "timestamp":
                return lit.value
            if lit.kind == "string":
                try:
                    return _parse_timestamp(lit.value)
                except ValueError:
                    raise refuse(" (not a timestamp yyyy-mm-dd hh:mm:ss[.ffffff])") from None
            raise refuse(" (write TIMESTAMP 'yyyy-mm-dd hh:mm:ss')")
        raise self.error(f"column '{col.name}' has type {typ}, which filter strings do not handle; "
                         "build the predicate with new_predicate_builder()", col.pos)


_KIND_NAMES = {"int": "the integer", "decimal": "the number", "string": "the string",
               "bool": "the boolean", "date": "the date", "timestamp": "the timestamp"}


def _like_prefix(pattern: str) -> Optional[str]:
    """The literal prefix of a (valid) LIKE pattern ``<prefix>%`` without other wildcards, or
    None."""
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            out.append(pattern[i + 1])
            i += 2
            continue
        if c == "%" and i == len(pattern) - 1:
            return "".join(out)
        if c in "%_":
            return None
        out.append(c)
        i += 1
    return None


def _parse_timestamp(text: str) -> datetime.datetime:
    """``yyyy-mm-dd[ hh:mm[:ss[.f...]]][Z|+hh:mm]``; fractions of up to 6 digits (Python's
    datetime holds microseconds; more would be cut, so they are refused)."""
    s = text.strip()
    if s.endswith(("Z", "z")):
        s = s[:-1] + "+00:00"
    m = re.search(r"\.(\d+)", s)
    if m:
        if len(m.group(1)) > 6:
            raise ValueError("more than 6 fractional digits")
        s = s[:m.start(1)] + m.group(1).ljust(6, "0") + s[m.end(1):]  # Python 3.9 wants 3 or 6
    return datetime.datetime.fromisoformat(s)


def parse_filter(text: str, schema: pa.Schema, where: str = "with_filter") -> Predicate:
    """Parse a filter string into a :class:`Predicate` on the columns of ``schema``.

    Args:
        text: the filter, e.g. ``"id = 1 AND v LIKE 'a%'"`` (grammar in this module's doc).
        schema: the table's Arrow schema (column names and types).
        where: the caller's name, put at the start of error messages.

    Literals are converted to the column's type: integers for integer columns (a decimal only
    if integral, e.g. ``2.0``), integers and decimals for floating and DECIMAL columns (a
    DECIMAL refuses more fractional digits than its scale), quoted strings for string columns
    (an unquoted number is refused), ``TRUE``/``FALSE`` for booleans, ``DATE '...'`` or a
    quoted ISO date for DATE columns, ``TIMESTAMP '...'`` or a quoted ISO timestamp for
    TIMESTAMP columns (an offset such as ``+02:00`` is honoured; without one, a column with a
    time zone takes the value as UTC). ``LIKE 'abc%'`` becomes ``startswith`` (same rows, and
    files are pruned by their statistics).

    Raises:
        InvalidArgumentError: a syntax error, an unknown column (the closest name is
            suggested), a literal that does not fit its column, or something the predicates
            cannot express (``NOT LIKE``, comparing two columns); the message shows the position.

    Example::

        >>> parse_filter("id >= 2 AND NOT (v IS NULL OR v IN ('x', 'y'))", table.arrow_schema)
    """
    if not isinstance(text, str):
        raise TypeError(f"{where}: a filter string or a Predicate, got {type(text).__name__}")
    p = _Parser(text, schema, where)
    return p.to_predicate(p.parse())


def optional_filter(predicate: Optional[Union[str, Predicate]], schema: pa.Schema,
                    where: str) -> Optional[Predicate]:
    """``predicate`` as a ``Predicate``: a string is parsed, a Predicate or None passes (each
    of its leaves must name its column: one made without a ``field`` is refused)."""
    if predicate is None:
        return None
    if isinstance(predicate, Predicate):
        return _with_fields(predicate, where)
    if isinstance(predicate, str):
        return parse_filter(predicate, schema, where)
    if all(hasattr(predicate, a) for a in ("method", "field", "literals")):
        return _with_fields(_from_pypaimon(predicate), where)
    raise TypeError(f"{where}: expected a filter string, a Predicate or None, got "
                    f"{type(predicate).__module__}.{type(predicate).__name__}")


def _with_fields(p: Predicate, where: str) -> Predicate:
    """``p``, once each of its leaves is seen to name its column."""
    if p.method in ("and", "or"):
        for c in p.children:
            _with_fields(c, where)
    elif p.field is None:
        raise InvalidArgumentError(f"{where}: {_missing_field(p)}")
    return p


def _from_pypaimon(p: Any) -> Predicate:
    """pypaimon's own ``Predicate`` (built without its builder: ``method``, ``index``,
    ``field``, ``literals``; and/or hold their operands in ``literals``) as paimon_rs's; its
    method names are checked as a builder's would be."""
    if p.method in ("and", "or"):
        return Predicate(p.method, literals=[_from_pypaimon(c) for c in (p.literals or [])])
    return Predicate(p.method, getattr(p, "index", None), p.field, list(p.literals or []))


def parse_value(text: str, schema: pa.Schema, target: pa.Field, where: str) -> Tuple[str, Any]:
    """A merge value: ``("column", name)`` for a column of ``schema`` (``source.v``), or
    ``("literal", value)`` for a SQL literal (``'abc'``, ``1.5``, ``TRUE``, ``NULL``,
    ``DATE '...'``) converted to ``target``'s type."""
    p = _Parser(text, schema, where)
    t = p.tok
    if (t.kind in ("NAME", "QNAME") or p.keyword_column(t)) and p.peek().kind == "EOF":
        col = p.column(t)
        return ("column", col.name)
    if t.kind == "KEYWORD" and t.value == "NULL" and p.peek().kind == "EOF":
        return ("literal", None)
    if t.kind == "EOF":
        raise p.error("an empty value", 0)
    lit = p.literal()
    if p.tok.kind != "EOF":
        raise p.error(f"expected one column (source.<col>) or one literal, found more: "
                      f"{p.describe(p.tok)}", p.tok.pos)
    tmp = _Parser.__new__(_Parser)
    tmp.text, tmp.where, tmp.schema = text, where, pa.schema([target])
    return ("literal", tmp.convert(_Column(target.name, 0), lit))
