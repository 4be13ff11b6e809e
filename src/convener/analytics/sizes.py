"""Refuse, before it runs, a query that asks an engine for a value or a series longer than a value may be.

DuckDB's ``memory_limit`` does not bound what makes a single value: ``range(1000000000)`` allocates an 8 GB
list outside it, and an interrupt lands only once that list exists. So every call of a function that makes
a value or a series as long as one of its arguments (``range``, ``generate_series``, ``repeat``, ``lpad``,
``zeroblob``, ``list_resize``, a ``printf`` width…) is checked: an argument that is a constant (a literal, or
arithmetic on literals) past the cap is refused with RESOURCE_EXHAUSTED. A size computed from the data is
not known here; the deadline and the engines' own caps bound those.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from convener.api.errors import ResourceExhausted

SIZE_FUNCTIONS = frozenset({
    "range", "generate_series", "repeat", "replicate", "lpad", "rpad", "pad", "zeroblob",
    "randomblob", "list_resize", "array_resize", "list_repeat", "array_fill", "space", "printf",
    "format", "bar", "explode", "unnest", "randomstring", "generate_subscripts", "string_repeat",
})  # fmt: skip
WIDTH = re.compile(r"%[-+ #0]*(\d+)|\.(\d+)")
"""A printf width or precision written in the format: ``%1000000000d``, ``%.1000000000f``."""


def check_sizes(sql: str, dialect: str, cap: int) -> None:
    """``ResourceExhausted`` when a size-making call in ``sql`` asks for more than ``cap`` with a constant."""
    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except (SqlglotError, RecursionError):
        return  # check_select has parsed it already; the engine will say what is wrong
    for call in tree.find_all(exp.Func):
        name = (call.name if isinstance(call, exp.Anonymous) else call.sql_name()).lower()
        if name not in SIZE_FUNCTIONS:
            continue
        for argument in _arguments(call):
            asked = _constant(argument)
            if asked is not None and abs(asked) > cap:
                raise _refused(name, asked, cap)
            if isinstance(argument, exp.Literal) and argument.is_string:
                widths = [int(a or b) for a, b in WIDTH.findall(argument.this)]
                if widths and max(widths) > cap:
                    raise _refused(name, Decimal(max(widths)), cap)


def _arguments(call: exp.Func) -> list[exp.Expression]:
    found: list[exp.Expression] = []
    for value in call.args.values():
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, exp.Expression):
                found.append(item)
    return found


def _constant(node: exp.Expression) -> Decimal | None:
    """The value of a numeric literal or of arithmetic on them, else None."""
    try:
        if isinstance(node, exp.Literal) and not node.is_string:
            return Decimal(node.this)
        if isinstance(node, (exp.Paren, exp.Cast, exp.TryCast)):
            return _constant(node.this)
        if isinstance(node, exp.Neg):
            inner = _constant(node.this)
            return None if inner is None else -inner
        if isinstance(node, (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Pow)):
            left, right = _constant(node.this), _constant(node.expression)
            if left is None or right is None:
                return None
            if isinstance(node, exp.Pow):
                return left ** min(right, Decimal(100))
            if isinstance(node, exp.Div):
                return left / right if right else None
            return {exp.Add: left + right, exp.Sub: left - right, exp.Mul: left * right}[type(node)]
    except (InvalidOperation, ArithmeticError, ValueError):
        return Decimal("Infinity")
    return None


def _refused(name: str, asked: Decimal, cap: int) -> ResourceExhausted:
    shown = f"{asked:,.0f}" if asked.is_finite() else "too many"
    return ResourceExhausted(f"{name}() is asked for {shown} elements or bytes; a value may have at most {cap:,} "
                             "(CONVENER_ANALYTICS_VALUE_BYTES)")
