"""AIP-160 filter strings compiled to SQLAlchemy boolean expressions over an allow-list of fields.

Three stages: a tokenizer, a recursive-descent parser producing a small AST, and a compiler that
maps each comparison through a per-type handler. Filter text never becomes SQL text: field names
are only looked up in the caller's allow-list and every literal is a bound parameter. Every
problem with the input is an ``InvalidArgument`` naming the 1-based character position.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any, Protocol

from sqlalchemy import and_, func, literal, not_, or_
from sqlalchemy.sql.elements import ColumnElement

from convener.api.errors import InvalidArgument
from convener.api.protojson import Timestamp
from convener.outside.limits import FILTER_CHARACTERS, FILTER_COMPARISONS, FILTER_DEPTH

MAX_FILTER_LENGTH = FILTER_CHARACTERS
MAX_DEPTH = FILTER_DEPTH
MAX_COMPARISONS = FILTER_COMPARISONS


class FieldType(Enum):
    STRING = "string"
    INTEGER = "integer"
    BOOLEAN = "boolean"
    ENUM = "enum"
    TIMESTAMP = "timestamp"


@dataclass(frozen=True, eq=False)  # eq=False: column expressions overload ==
class FilterField:
    """How one filterable field maps to SQL.

    Storage: STRING and ENUM (the value name) in string columns, INTEGER and BOOLEAN natively,
    TIMESTAMP as a BIGINT of microseconds since the Unix epoch, and a repeated ENUM (with
    ``repeated_bits``: value name -> bit) as an integer bitmask.
    """

    column: ColumnElement[Any]
    type: FieldType
    enum_values: tuple[str, ...] = ()
    repeated_bits: Mapping[str, int] | None = None
    sub_micros: ColumnElement[Any] | None = None
    """TIMESTAMP only: a column holding the nanoseconds below the microsecond (0-999), for exact comparisons."""
    fold_case: bool = False
    """STRING only: ``:`` ignores the case of ASCII letters (``=`` stays exact), as CES's changelog filters do."""

    def __post_init__(self) -> None:
        if self.repeated_bits is not None and self.type is not FieldType.ENUM:
            raise ValueError("repeated_bits is only meaningful for ENUM fields")
        if self.sub_micros is not None and self.type is not FieldType.TIMESTAMP:
            raise ValueError("sub_micros is only meaningful for TIMESTAMP fields")
        if self.fold_case and self.type is not FieldType.STRING:
            raise ValueError("fold_case is only meaningful for STRING fields")
        if self.type is FieldType.ENUM and not (self.enum_values or self.repeated_bits):
            raise ValueError("an ENUM field needs enum_values or repeated_bits")


# ---------------------------------------------------------------- tokenizer

_WHITESPACE = " \t\r\n"
# Bare words are deliberately ASCII: anything else (unicode, '@', '/', ...) must be quoted, which
# keeps lookalike operators and digits (e.g. fullwidth ones that int() accepts) out of the grammar.
_WORD_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.*+-")
_COMPARATORS = ("<=", ">=", "!=", "=", "<", ">", ":")  # two-character ones first
_KEYWORDS = frozenset({"AND", "OR", "NOT"})
_ESCAPES = {"\\": "\\", '"': '"', "'": "'", "n": "\n", "r": "\r", "t": "\t", "*": "*"}


@dataclass(frozen=True)
class _Token:
    kind: str  # "word", "string", "op", "(", ")", "-", "AND", "OR", "NOT" or "end"
    text: str  # decoded for strings
    pos: int  # 1-based
    wild_start: bool = False  # began with an unescaped '*'
    wild_end: bool = False  # ended with an unescaped '*'


def _error(problem: str, pos: int, hint: str = "") -> InvalidArgument:
    return InvalidArgument(f"filter: {problem} at position {pos}" + (f"; {hint}" if hint else ""))


def _show(text: str) -> str:
    """Quote user text for a message, so it is short and cannot smuggle control/bidi characters."""
    if len(text) > 40:
        text = text[:40] + "…"
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch.isprintable():
            out.append(ch)
        else:
            out.append(f"\\u{ord(ch):04x}" if ord(ch) <= 0xFFFF else f"\\U{ord(ch):08x}")
    return '"' + "".join(out) + '"'


def _tokenize(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    i = 0
    while i < len(text):
        ch, pos = text[i], i + 1
        after_operator = bool(tokens) and tokens[-1].kind == "op"
        op = next((c for c in _COMPARATORS if text.startswith(c, i)), None)
        if ch in _WHITESPACE:
            i += 1
        elif ch in "()":
            tokens.append(_Token(ch, ch, pos))
            i += 1
        elif ch in "\"'":
            token, i = _read_string(text, i)
            tokens.append(token)
        elif op is not None:
            tokens.append(_Token("op", op, pos))
            i += len(op)
        elif ch == "-" and not after_operator:  # after an operator '-' starts a negative number
            tokens.append(_Token("-", ch, pos))
            i += 1
        elif ch in _WORD_CHARS:
            end = i
            while end < len(text) and text[end] in _WORD_CHARS:
                end += 1
            word = text[i:end]
            kind = word if word in _KEYWORDS else "word"
            tokens.append(_Token(kind, word, pos, word.startswith("*"), word.endswith("*")))
            i = end
        else:
            raise _error(f"unexpected character {_show(ch)}", pos)
    tokens.append(_Token("end", "", len(text) + 1))
    return tokens


def _read_string(text: str, start: int) -> tuple[_Token, int]:
    quote, i = text[start], start + 1
    chars: list[str] = []
    wild_start = last_was_wild = False
    while i < len(text):
        ch = text[i]
        if ch == quote:
            token = _Token("string", "".join(chars), start + 1, wild_start, last_was_wild)
            return token, i + 1
        if ch == "\\" and i + 1 < len(text):
            escape = text[i + 1]
            if escape not in _ESCAPES:
                raise _error(f"unknown escape sequence \\{_show(escape)[1:-1]} in string", i + 1)
            chars.append(_ESCAPES[escape])
            last_was_wild = False
            i += 2
            continue
        # Control characters and lone surrogates would be rejected or mangled by the database.
        if unicodedata.category(ch) in ("Cc", "Cs"):
            raise _error(f"control character U+{ord(ch):04X} in string (use an escape)", i + 1)
        wild_start = wild_start or (ch == "*" and not chars)
        last_was_wild = ch == "*"
        chars.append(ch)
        i += 1
    raise _error("unterminated string starting", start + 1)


# ---------------------------------------------------------------- parser


@dataclass(frozen=True)
class _Compare:
    field: _Token
    op: _Token
    value: _Token


@dataclass(frozen=True)
class _Not:
    operand: _Node


@dataclass(frozen=True)
class _Junction:
    op: str  # "AND" or "OR"
    items: tuple[_Node, ...]


_Node = _Compare | _Not | _Junction
_TERM_START = frozenset({"word", "string", "(", "-", "NOT"})


class _Parser:
    """AIP-160: expression = factor {[AND] factor}; factor = term {OR term}, so OR binds tighter."""

    def __init__(self, tokens: list[_Token]) -> None:
        self._tokens = tokens
        self._i = 0
        self._comparisons = 0

    def parse(self) -> _Node:
        node = self._expression(0)
        extra = self._peek()
        if extra.kind == "op":
            hint = "quote values that contain it, such as timestamps"
            raise _error(f'unexpected "{extra.text}"', extra.pos, hint)
        if extra.kind != "end":
            raise _error(f"unexpected {_show(extra.text)}", extra.pos)
        return node

    def _peek(self) -> _Token:
        return self._tokens[self._i]

    def _take(self) -> _Token:
        token = self._tokens[self._i]
        self._i += 1
        return token

    def _expression(self, depth: int) -> _Node:
        items = [self._factor(depth)]
        while self._peek().kind == "AND" or self._peek().kind in _TERM_START:
            if self._peek().kind == "AND":
                self._take()
            items.append(self._factor(depth))
        return items[0] if len(items) == 1 else _Junction("AND", tuple(items))

    def _factor(self, depth: int) -> _Node:
        items = [self._term(depth)]
        while self._peek().kind == "OR":
            self._take()
            items.append(self._term(depth))
        return items[0] if len(items) == 1 else _Junction("OR", tuple(items))

    def _term(self, depth: int) -> _Node:
        token = self._peek()
        if token.kind in ("NOT", "-", "("):
            # The depth cap is what keeps this recursion far away from Python's own limit.
            if depth >= MAX_DEPTH:
                raise _error(f"nesting deeper than {MAX_DEPTH} levels", token.pos)
            self._take()
            if token.kind != "(":
                return _Not(self._term(depth + 1))
            node = self._expression(depth + 1)
            if self._peek().kind != ")":
                raise _error('missing ")" for the "("', token.pos)
            self._take()
            return node
        return self._restriction()

    def _restriction(self) -> _Compare:
        field = self._take()
        if field.kind == "end":
            previous = self._tokens[self._i - 2]
            raise _error(f"expected a comparison after {_show(previous.text)}", previous.pos)
        if field.kind == "string":
            raise _error(f"expected a field name, got the string {_show(field.text)}", field.pos)
        if field.kind != "word":
            raise _error(f"expected a comparison, got {_show(field.text)}", field.pos)
        op = self._take()
        if op.kind != "op":
            raise _error(f"expected an operator (= != < <= > >= :) after {_show(field.text)}", field.pos)
        value = self._take()
        if value.kind not in ("word", "string"):
            raise _error(f'expected a value after "{op.text}"', op.pos)
        self._comparisons += 1
        if self._comparisons > MAX_COMPARISONS:
            raise _error(f"filter has more than {MAX_COMPARISONS} comparisons", field.pos)
        return _Compare(field, op, value)


# ---------------------------------------------------------------- compiler

_Comparator = Callable[[ColumnElement[Any], ColumnElement[Any]], ColumnElement[bool]]
_OPERATORS: dict[str, _Comparator] = {
    "=": lambda column, value: column == value,
    "<": lambda column, value: column < value,
    "<=": lambda column, value: column <= value,
    ">": lambda column, value: column > value,
    ">=": lambda column, value: column >= value,
}
_LIKE_ESCAPE = "/"
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _bind(value: object, column: ColumnElement[Any]) -> ColumnElement[Any]:
    return literal(value, column.type)


def _unsupported(node: _Compare, field: FilterField, allowed: str) -> InvalidArgument:
    what = "a repeated enum" if field.repeated_bits is not None else field.type.value
    problem = f'operator "{node.op.text}" is not supported for field {node.field.text} ({what})'
    return _error(problem, node.op.pos, f"use {allowed}")


def _bad_value(node: _Compare, expected: str) -> InvalidArgument:
    got = _show(node.value.text)
    return _error(f"field {node.field.text} expects {expected}, got {got}", node.value.pos)


class _Handler(Protocol):
    def present(self, column: ColumnElement[Any]) -> ColumnElement[bool]: ...

    def predicate(self, node: _Compare, field: FilterField, op: str) -> ColumnElement[bool]:
        """``op`` is never "!=": the caller compiles that as a negated "="."""
        ...


class _String:
    def present(self, column: ColumnElement[Any]) -> ColumnElement[bool]:
        return and_(column.is_not(None), column != _bind("", column))

    def predicate(self, node: _Compare, field: FilterField, op: str) -> ColumnElement[bool]:
        token, column = node.value, field.column
        core = token.text[int(token.wild_start) : len(token.text) - int(token.wild_end)]
        if op == ":" and field.fold_case:  # ASCII only, so that SQLite's lower() and PostgreSQL's agree
            return self._like(func.lower(column, type_=column.type), core.translate(_ASCII_LOWER), True, True)
        if op == ":":  # "has" on a string is a substring match
            return self._like(column, core, True, True)
        if op == "=" and (token.wild_start or token.wild_end):
            return self._like(column, core, token.wild_start, token.wild_end)
        return _OPERATORS[op](column, _bind(token.text, column))

    @staticmethod  # LIKE keeps the backend's case rules: SQLite's ignores ASCII case, PostgreSQL's not
    def _like(column: ColumnElement[Any], core: str, start: bool, end: bool) -> ColumnElement[bool]:
        escaped = core.replace("/", "//").replace("%", "/%").replace("_", "/_")
        pattern = "%" * start + escaped + "%" * end
        return column.like(_bind(pattern, column), escape=_LIKE_ESCAPE)


@dataclass(frozen=True)
class _Scalar:
    operators: frozenset[str]
    allowed: str  # for messages
    expected: Callable[[FilterField], str]
    convert: Callable[[str, FilterField], object | None]  # None: not a literal of this type

    def present(self, column: ColumnElement[Any]) -> ColumnElement[bool]:
        return column.is_not(None)

    def predicate(self, node: _Compare, field: FilterField, op: str) -> ColumnElement[bool]:
        if op not in self.operators:
            raise _unsupported(node, field, self.allowed)
        value = self.convert(node.value.text, field)
        if value is None:
            raise _bad_value(node, self.expected(field))
        comparator = _OPERATORS["=" if op == ":" else op]
        return comparator(field.column, _bind(value, field.column))


class _RepeatedEnum:
    """A set of enum values stored as an integer bitmask; '=' and ':' both mean 'contains'."""

    def present(self, column: ColumnElement[Any]) -> ColumnElement[bool]:
        return column != _bind(0, column)

    def predicate(self, node: _Compare, field: FilterField, op: str) -> ColumnElement[bool]:
        bits = field.repeated_bits or {}
        if op not in ("=", ":"):
            raise _unsupported(node, field, ":, = (contains), != (does not contain) or :*")
        if node.value.text not in bits:
            raise _bad_value(node, "one of " + ", ".join(bits))
        column = field.column
        return column.op("&")(_bind(bits[node.value.text], column)) != _bind(0, column)


_INTEGER = re.compile(r"[+-]?[0-9]{1,19}")


def _to_int64(text: str, field: FilterField) -> int | None:
    if not _INTEGER.fullmatch(text):
        return None
    value = int(text)
    return value if -(2**63) <= value < 2**63 else None


class _Timestamp:
    """Microseconds in one indexed column, and optionally the nanoseconds below them in another."""

    allowed = "=, !=, <, <=, >, >= or :*"

    def present(self, column: ColumnElement[Any]) -> ColumnElement[bool]:
        return column.is_not(None)

    def predicate(self, node: _Compare, field: FilterField, op: str) -> ColumnElement[bool]:
        if op == ":":
            raise _unsupported(node, field, self.allowed)
        try:
            moment = Timestamp.parse(node.value.text)
        except ValueError:
            raise _bad_value(node, 'an RFC 3339 timestamp such as "2024-01-01T00:00:00Z"') from None
        micros, nanos = field.column, field.sub_micros
        value = _bind(moment.to_micros(), micros)
        if nanos is None:  # microsecond precision: the literal's nanoseconds truncate
            return _OPERATORS[op](micros, value)
        rest = _bind(moment.nanos % 1000, nanos)
        if op == "=":
            return and_(micros == value, nanos == rest)
        strict = op.rstrip("=")  # "<" or ">"
        # The bound on the microsecond column alone lets the index narrow the range.
        loose = "<=" if strict == "<" else ">="
        return and_(
            _OPERATORS[loose](micros, value),
            or_(_OPERATORS[strict](micros, value), and_(micros == value, _OPERATORS[op](nanos, rest))),
        )


_BOOLEANS = {"true": True, "false": False}
_EQUALITY = frozenset({"="})
_ALL_OPERATORS = frozenset(_OPERATORS)
_HANDLERS: dict[FieldType, _Handler] = {
    FieldType.STRING: _String(),
    FieldType.INTEGER: _Scalar(
        _ALL_OPERATORS, "=, !=, <, <=, >, >= or :*", lambda f: "an integer", _to_int64
    ),
    FieldType.BOOLEAN: _Scalar(
        _EQUALITY, "=, != or :*", lambda f: "true or false", lambda t, f: _BOOLEANS.get(t)
    ),
    FieldType.ENUM: _Scalar(
        frozenset({"=", ":"}),
        "=, !=, : or :*",
        lambda f: "one of " + ", ".join(f.enum_values),
        lambda t, f: t if t in f.enum_values else None,
    ),
    FieldType.TIMESTAMP: _Timestamp(),
}
_REPEATED: _Handler = _RepeatedEnum()


def _compile(node: _Node, fields: Mapping[str, FilterField], negate: bool) -> ColumnElement[bool]:
    # Negation is pushed down to the comparisons (De Morgan) instead of emitted as SQL NOT: a
    # comparison is NULL when its column is, AND/OR treat that NULL as false, but NOT NULL is
    # still NULL, so only at a comparison can a negation say what it means for unset fields.
    if isinstance(node, _Not):
        return _compile(node.operand, fields, not negate)
    if isinstance(node, _Junction):
        parts = [_compile(item, fields, negate) for item in node.items]
        return and_(*parts) if (node.op == "AND") != negate else or_(*parts)
    field = fields.get(node.field.text)
    if field is None:
        hint = "filterable fields: " + ", ".join(sorted(fields))
        raise _error(f"unknown field {_show(node.field.text)}", node.field.pos, hint)
    op = node.op.text
    if op == "!=":
        op, negate = "=", not negate
    handler = _REPEATED if field.repeated_bits is not None else _HANDLERS[field.type]
    if op == ":" and node.value.text == "*" and node.value.wild_start:
        predicate = handler.present(field.column)
    else:
        predicate = handler.predicate(node, field, op)
    if not negate:
        return predicate
    # An unset field equals nothing, so it satisfies every negated comparison.
    return or_(field.column.is_(None), not_(predicate))


def compile_filter(text: str | None, fields: Mapping[str, FilterField]) -> ColumnElement[bool] | None:
    """Compile an AIP-160 filter over ``fields``; None when the filter is empty or blank.

    Raises InvalidArgument, and nothing else, for any problem with ``text``.
    """
    if text is None:
        return None
    if len(text) > MAX_FILTER_LENGTH:
        raise InvalidArgument(f"filter is {len(text)} characters long; the limit is {MAX_FILTER_LENGTH}")
    tokens = _tokenize(text)
    if len(tokens) == 1:
        return None
    return _compile(_Parser(tokens).parse(), fields, negate=False)
