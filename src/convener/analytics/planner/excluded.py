"""Rows left out: a negation a few small words before a condition ("excluding those with unknown sex", "leaving
out the ones whose …", "not counting flights over 2000 miles"). Values and missing columns read it with their own
condition (``negated_before``); a comparison with a number is read without it, so ``read_excluded_bounds`` turns
that comparison around."""

from __future__ import annotations

from dataclasses import replace

from convener.analytics.planner.catalog import _table_words
from convener.analytics.planner.state import _Reading
from convener.analytics.planner.vocabulary import _NEGATIONS, LEAVE_OUT

_BEFORE_CONDITION = frozenset({"those", "ones", "with", "whose", "counting", "including", "any"})
"""Words between a negation and the condition it denies ("excluding those with unknown sex"), beside the small
words ("that": "not counting flights that left early")."""
_TURNED = {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "=": "<>", "<>": "="}


def negated_before(reading: _Reading, index: int) -> range | None:
    """The words from a negation ("excluding", "without", "leaving out", "not counting") a few small words before
    ``index`` (past "those with", "penguins whose", "ones of") up to it; None when there is none."""
    back = index - 1
    while back >= 0 and reading.free(back) and back >= index - 5 and reading.norm(back) not in _NEGATIONS \
            and reading.norm(back) != "out" \
            and (reading.tokens[back].is_stopword or reading.norm(back) in _BEFORE_CONDITION
                 or reading.tokens[back].stem in _table_words(reading.base)):
        back -= 1
    if back < 0 or not reading.free(back):
        return None
    if reading.norm(back) in _NEGATIONS:
        return range(back, index)
    if reading.norm(back) == "out" and reading.norm(back - 1) in LEAVE_OUT and reading.free(back - 1):
        return range(back - 1, index)
    return None


def read_excluded_bounds(reading: _Reading) -> None:
    """"Excluding flights that left early (negative departure delay)": a comparison with a number that a negation
    before it leaves out, turned around (a row with no value stays out too, as it meets neither). The
    comparison's words may begin a word or two before where it was read ("left early", read from "early"); said
    twice, as in the parenthesis, it is one condition, each turned."""
    for start in sorted({f.start for f in reading.filters if f.kind == "number" and f.op in _TURNED}):
        begin = start
        while begin > max(0, start - 3) and begin - 1 in reading.used and reading.mention_at(begin - 1) is None:
            begin -= 1
        there = {(f.column, f.op, f.values) for f in reading.filters if f.start == start}
        denial = negated_before(reading, begin) if len(there) == 1 else None
        if denial is None:
            continue
        ((column, op, values),) = there
        reading.filters = [replace(f, op=_TURNED[f.op]) if (f.column, f.op, f.values) == (column, op, values)
                           and f.kind == "number" else f for f in reading.filters]
        reading.used.update(denial)
