"""Rows left out by a bound: "excluding flights that left early (negative departure delay)", "not counting
penguins heavier than 5 kg". Values and missing columns read their own negations ("excluding Gentoos",
"excluding penguins whose sex is unknown"); a comparison with a number is read without one, so the word that
leaves its rows out turns it around here."""

from __future__ import annotations

from dataclasses import replace

from convener.analytics.planner.catalog import _table_words
from convener.analytics.planner.state import _Reading

_LEAVING_OUT = frozenset({"excluding", "exclude", "except", "ignoring", "ignore", "disregarding", "disregard"})
_TWO_WORDS = frozenset({("leaving", "out"), ("leave", "out"), ("not", "counting"), ("without", "counting")})
_BETWEEN = frozenset({"the", "those", "ones", "any", "all", "that", "which", "who", "with", "whose", "a", "an"})
"""Words between the leaving out and the condition ("excluding those with a …", "… flights that …")."""
_TURNED = {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "=": "<>", "<>": "="}


def read_excluded_bounds(reading: _Reading) -> None:
    """A free word that leaves rows out ("excluding", "leaving out", "not counting"), followed past small words and
    the rows' noun by the one comparison with a number said there: that comparison turned around (its rows left
    out; a row with no value stays out too, as it meets neither)."""
    rows = _table_words(reading.base)
    for index in range(len(reading.tokens)):
        said = _leaving_out_at(reading, index)
        if not said:
            continue
        at = index + said
        while at < len(reading.tokens) and reading.free(at) and (
                reading.norm(at) in _BETWEEN or reading.tokens[at].stem in rows):
            at += 1
        # (the condition may be said from a word before the one it starts at: "left early" from "early")
        start = next((f.start for f in sorted(reading.filters, key=lambda f: f.start) if at <= f.start < at + 3
                      and not any(reading.free(i) for i in range(at, f.start))), None)
        there = [f for f in reading.filters if f.start == start]
        if start is None or len({(f.column, f.op, f.values, f.kind) for f in there}) != 1 or there[0].kind != "number" \
                or there[0].op not in _TURNED:
            continue
        # (one condition said twice, "left early (negative departure delay)", is one: each is turned)
        same = (there[0].column, there[0].op, there[0].values, there[0].kind)
        reading.filters = [replace(f, op=_TURNED[f.op]) if (f.column, f.op, f.values, f.kind) == same else f
                           for f in reading.filters]
        reading.used.update(range(index, at))


def _leaving_out_at(reading: _Reading, index: int) -> int:
    """How many free words at ``index`` leave rows out (0 when none do)."""
    if reading.norm(index) in _LEAVING_OUT and reading.free(index):
        return 1
    pair = (reading.norm(index), reading.norm(index + 1))
    return 2 if pair in _TWO_WORDS and reading.free(index) and reading.free(index + 1) else 0
