"""Conditions a question says are to be kept among the rows, not to pick them: "all flights from JFK, cancelled
ones included", "total distance, including the cancelled flights". The rows meeting the condition are counted
with every other; as a condition they would be the only ones counted. Every row said to be included ("all
flights included", "including all flights") says no condition at all."""

from __future__ import annotations

from convener.analytics.planner.catalog import _table_words
from convener.analytics.planner.state import _note_term, _Reading
from convener.analytics.shapes import BOOLEAN

_INCLUDING = frozenset({"including", "incl", "even"})
_INCLUDED = frozenset({"included", "too"})
_BETWEEN = frozenset({"the", "all", "any", "ones", "those"})


def read_included(reading: _Reading) -> None:
    """A true/false condition right after "including" (or "even"), right before "included" (past "ones" or the
    rows' noun), or said "or not", picks no rows: its words are read and it is dropped."""
    rows = _table_words(reading.base)
    for mention in [m for m in reading.mentions if m.is_value and reading.column(m.target.column).type == BOOLEAN]:
        before = mention.start - 1
        while before >= 0 and reading.norm(before) in _BETWEEN and reading.free(before):
            before -= 1
        after = mention.end
        while after < len(reading.tokens) and reading.free(after) \
                and (reading.norm(after) in _BETWEEN or reading.tokens[after].stem in rows):
            after += 1
        if before >= 0 and reading.norm(before) in _INCLUDING and reading.free(before):
            said = range(before, after if after > mention.end and reading.norm(after - 1) == "ones" else mention.end)
        elif reading.norm(after) in _INCLUDED and reading.free(after):
            said = range(mention.start, after + 1)
        elif (reading.norm(mention.end), reading.norm(mention.end + 1)) == ("or", "not") \
                and reading.free(mention.end) and reading.free(mention.end + 1):
            said = range(mention.start, mention.end + 2)  # "how many flights, cancelled or not, …": every one
        else:
            continue
        reading.mentions.remove(mention)
        reading.used.update(said)
        _note_term(reading, mention)
    _read_every_row_included(reading, rows)
    _read_zero_included(reading, rows)


def _read_every_row_included(reading: _Reading, rows: set[str]) -> None:
    """"Sum of miles for each carrier, all flights included", "including all flights": every row is counted."""
    for index, token in enumerate(reading.tokens):
        if token.norm != "all" or not reading.free(index) or index + 1 >= len(reading.tokens) \
                or reading.tokens[index + 1].stem not in rows or not reading.free(index + 1):
            continue
        if reading.norm(index + 2) in _INCLUDED and reading.free(index + 2):
            reading.used.update(range(index, index + 3))
        elif reading.norm(index - 1) in _INCLUDING and reading.free(index - 1):
            reading.used.update(range(index - 1, index + 2))


_NONE = frozenset({"none", "zero", "zeros", "zeroes", "0"})
_HAVING = frozenset({"with", "having", "has", "have", "had"})


def _read_zero_included(reading: _Reading, rows: set[str]) -> None:
    """"(including zero)", "even zero", "including carriers with none", "even those that had none": a count of
    none is an answer to show for each group. Between "including" and "with none" only the groups' noun (a
    column's mention), the rows' or "those"/"them" may stand. ("With zero cancellations" alone is no such
    thing: it asks for the groups without one.)"""
    for index, token in enumerate(reading.tokens):
        if token.norm not in _INCLUDING or not reading.free(index):
            continue
        at = index + 1
        while at < len(reading.tokens) and at - index <= 4 and (
                reading.norm(at) in _BETWEEN or reading.norm(at) in ("them", "that", "which")
                or reading.tokens[at].stem in rows or _names_column(reading, at)):
            at += 1
        having = at
        while having < len(reading.tokens) and reading.norm(having) in _HAVING:
            having += 1
        if at == index + 1:  # "including zero" ("including none of …" is a count of none of them)
            said = having == at and reading.norm(at) in _NONE - {"none"}
        else:  # "including carriers with none": the groups, then what they have
            said = having > at and reading.norm(having) in _NONE
        if not said or not reading.free(having):
            continue
        reading.used.update(i for i in range(index, having + 1) if reading.free(i))  # (the groups' noun stays)
        reading.zero_included = True


def _names_column(reading: _Reading, index: int) -> bool:
    mention = reading.mention_at(index)
    return mention is not None and not mention.is_value
