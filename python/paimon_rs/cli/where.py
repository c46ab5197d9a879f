"""``--where`` of the ``read`` command: a filter written ``col op literal [and col op literal ...]``
(op one of ``=``, ``!=`` (or ``<>``), ``<``, ``<=``, ``>``, ``>=``), built with the table's
predicate builder (``table.new_read_builder().new_predicate_builder()``).

A literal is typed by its column: an integer column takes an integer (``id >= 10``), a float
column a number, a decimal column a number (exact), a string column a quoted string
(``name = 'x'`` or ``"x"``; a quote inside is doubled: ``'it''s'``), a boolean column ``true`` or
``false``, a date column a quoted ``'YYYY-MM-DD'``, a timestamp column a quoted ISO date and
time (``'2026-11-26 10:00:00'``). A column name that is not a plain word is written in
backquotes (`` `my col` = 1``). Anything else (``or``, ``not``, parentheses, ``is null``, ``in``,
a literal of the wrong kind, an unknown column) is a :class:`UsageError` saying what is wrong.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import re
from typing import Any, List, Optional, Tuple

import pyarrow as pa

from paimon_rs.cli.base import UsageError
from paimon_rs.predicate import Predicate, PredicateBuilder

#: The operators and the predicate builder's method for each.
OPERATORS = {"=": "equal", "!=": "not_equal", "<>": "not_equal", "<": "less_than", "<=": "less_or_equal",
             ">": "greater_than", ">=": "greater_or_equal"}

FORM = "expected `col op literal [and col op literal ...]` with op one of = != < <= > >="

_TOKEN = re.compile(r"""
      (?P<string>'(?:[^']|'')*'|"(?:[^"]|"")*")
    | (?P<op><=|>=|!=|<>|=|<|>)
    | (?P<number>[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?(?![\w.]))
    | (?P<word>[A-Za-z_][A-Za-z0-9_]*)
    | (?P<quoted>`[^`]+`)
    """, re.VERBOSE)

#: Words that mean something in SQL but not in this simple form: named in the refusal.
_UNSUPPORTED_WORDS = {"or", "not", "is", "in", "like", "between", "null"}

Token = Tuple[str, str, int]  # kind, text, position


def _tokens(text: str) -> List[Token]:
    out: List[Token] = []
    pos = 0
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos == len(text):
            return out
        m = _TOKEN.match(text, pos)
        if m is None or m.lastgroup is None:
            if text[pos] in "'\"`":
                raise UsageError(f"--where {text!r}: unterminated quote at position {pos}")
            out.append(("other", text[pos], pos))  # refused where the parser meets it
            pos += 1
            continue
        out.append((m.lastgroup, m.group(0), pos))
        pos = m.end()


def parse_where(text: str, builder: PredicateBuilder, schema: pa.Schema) -> Predicate:
    """The predicate ``text`` (see the module's doc) means on a table of ``schema``, built with
    ``builder``; a :class:`UsageError` naming the problem for anything else."""
    toks = _tokens(text)
    if not toks:
        raise UsageError(f"--where is empty; {FORM}")
    i = 0
    preds: List[Predicate] = []

    def at(j: int) -> Optional[Token]:
        return toks[j] if j < len(toks) else None

    def refuse(tok: Optional[Token], what: str) -> UsageError:
        if tok is not None and tok[0] == "other":
            what = f"unexpected {tok[1]!r}"
        where = f"at position {tok[2]} ({tok[1]!r})" if tok is not None else "at the end"
        return UsageError(f"--where {text!r}: {what} {where}; {FORM}")

    while True:
        col_tok = at(i)
        if col_tok is None or col_tok[0] not in ("word", "quoted"):
            raise refuse(col_tok, "expected a column name")
        if col_tok[0] == "word" and col_tok[1].lower() in _UNSUPPORTED_WORDS | {"and"}:
            raise refuse(col_tok, f"'{col_tok[1]}' is not supported")
        col = col_tok[1][1:-1] if col_tok[0] == "quoted" else col_tok[1]
        if schema.get_field_index(col) < 0:
            raise UsageError(f"--where {text!r}: no column '{col}' in the table (columns: {', '.join(schema.names)})")
        op_tok = at(i + 1)
        if op_tok is None or op_tok[0] != "op":
            if op_tok is not None and op_tok[0] == "word" and op_tok[1].lower() in _UNSUPPORTED_WORDS:
                raise refuse(op_tok, f"'{op_tok[1]}' is not supported")
            raise refuse(op_tok, f"expected an operator after '{col}'")
        lit_tok = at(i + 2)
        if lit_tok is None or lit_tok[0] not in ("string", "number", "word"):
            raise refuse(lit_tok, f"expected a literal after '{col} {op_tok[1]}'")
        value = literal(col, schema.field(col).type, lit_tok, text)
        preds.append(getattr(builder, OPERATORS[op_tok[1]])(col, value))
        i += 3
        nxt = at(i)
        if nxt is None:
            break
        if nxt[0] == "word" and nxt[1].lower() == "and":
            i += 1
            continue
        if nxt[0] == "word" and nxt[1].lower() in _UNSUPPORTED_WORDS:
            raise refuse(nxt, f"'{nxt[1]}' is not supported")
        raise refuse(nxt, "expected 'and' or the end")
    if len(preds) == 1:
        return preds[0]
    combined = builder.and_predicates(preds)
    assert combined is not None
    return combined


def _unquote(s: str) -> str:
    q = s[0]
    return s[1:-1].replace(q + q, q)


def literal(col: str, typ: pa.DataType, tok: Token, text: str) -> Any:
    """The Python value of literal token ``tok`` for column ``col`` of Arrow type ``typ`` (see
    the module's doc for what each type takes); a :class:`UsageError` if it does not fit."""
    kind, raw, pos = tok

    def bad(expected: str) -> UsageError:
        return UsageError(f"--where {text!r}: column '{col}' is {typ}: expected {expected}, "
                          f"got {raw} at position {pos}")
    value: Any
    if pa.types.is_boolean(typ):
        if kind != "word" or raw.lower() not in ("true", "false"):
            raise bad("true or false")
        value = raw.lower() == "true"
    elif pa.types.is_integer(typ):
        if kind != "number" or not re.fullmatch(r"[+-]?\d+", raw):
            raise bad("an integer")
        value = int(raw)
    elif pa.types.is_floating(typ):
        if kind != "number":
            raise bad("a number")
        value = float(raw)
    elif pa.types.is_decimal(typ):
        if kind != "number":
            raise bad("a number")
        value = decimal.Decimal(raw)
    elif pa.types.is_string(typ) or pa.types.is_large_string(typ):
        if kind != "string":
            raise bad("a quoted string ('...')")
        value = _unquote(raw)
    elif pa.types.is_date(typ):
        if kind != "string":
            raise bad("a quoted date ('YYYY-MM-DD')")
        try:
            value = _dt.date.fromisoformat(_unquote(raw))
        except ValueError as e:
            raise bad("a quoted date ('YYYY-MM-DD')") from e
    elif pa.types.is_timestamp(typ):
        if kind != "string":
            raise bad("a quoted timestamp ('YYYY-MM-DD HH:MM:SS[.ffffff]')")
        try:
            value = _dt.datetime.fromisoformat(_unquote(raw))
        except ValueError as e:
            raise bad("a quoted timestamp ('YYYY-MM-DD HH:MM:SS[.ffffff]')") from e
    else:
        raise UsageError(f"--where {text!r}: column '{col}' is {typ}: --where compares integer, float, "
                         "decimal, string, boolean, date and timestamp columns only")
    try:
        pa.scalar(value, type=typ)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError) as e:
        raise bad(f"a value that fits ({e})") from e
    return value


__all__ = ["FORM", "OPERATORS", "literal", "parse_where"]
