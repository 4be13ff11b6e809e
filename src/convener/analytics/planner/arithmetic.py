"""Arithmetic between two columns said in words: "flipper length minus bill length", "the average of
distance divided by air time". The two columns and the operator become one computed column, which every
later step treats as a column (averaged, ranked, compared) like a glossary formula."""

from __future__ import annotations

from dataclasses import replace

from sqlglot import exp

from convener.analytics.planner.catalog import _Mention, _Target
from convener.analytics.planner.state import _numeric_mention, _Reading
from convener.analytics.shapes import ColumnInfo

_OPERATORS: tuple[tuple[tuple[str, ...], str, type[exp.Binary]], ...] = (
    (("minus",), "minus", exp.Sub), (("less",), "minus", exp.Sub), (("plus",), "plus", exp.Add),
    (("divided", "by"), "per", exp.Div), (("times",), "times", exp.Mul), (("multiplied", "by"), "times", exp.Mul),
)


def read_arithmetic(reading: _Reading) -> None:
    """"<numeric column> minus|plus|times|divided by <numeric column>": one computed column in their
    place. "less" is "minus" only between two columns ("arrival delay less departure delay")."""
    if reading.scope is None:
        return
    for first in sorted(list(reading.mentions), key=lambda m: m.start):
        if first not in reading.mentions or _numeric_mention(reading, first.start) is not first:
            continue
        for words, name, operator in _OPERATORS:
            if not all(reading.norm(first.end + i) == word and reading.free(first.end + i)
                       for i, word in enumerate(words)):
                continue
            second = _numeric_mention(reading, first.end + len(words))
            if second is None or second.start != first.end + len(words):
                continue
            left, right = _expression(reading, first.target.column), _expression(reading, second.target.column)
            if operator is exp.Div:  # a whole-number division would drop the fraction on some engines
                left = exp.Mul(this=exp.Literal.number("1.0"), expression=left)
            column = f"{first.target.column}_{name}_{second.target.column}"
            reading.scope.virtual[column] = exp.Paren(this=operator(this=left, expression=right))
            info = ColumnInfo(column, "FLOAT", f"{first.target.column} {' '.join(words)} {second.target.column}")
            reading.table = replace(reading.table, columns=(*reading.table.columns, info))
            reading.scope = replace(reading.scope, table=reading.table)
            reading.mentions.remove(first)
            reading.mentions.remove(second)
            reading.mentions.append(_Mention(first.start, second.end, _Target(reading.table.name, column), "formula"))
            reading.mentions.sort(key=lambda m: m.start)
            break


def _expression(reading: _Reading, column: str) -> exp.Expr:
    assert reading.scope is not None
    if column in reading.scope.virtual:
        return reading.scope.virtual[column].copy()
    return exp.column(column, quoted=True)
