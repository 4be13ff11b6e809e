"""The order a listing or a breakdown is asked in, which keeps every row: "oldest date first", "biggest
total first", "most flights first", "from the highest average to the lowest", "alphabetically". Read as a
ranking, "oldest … first" would keep only the oldest row."""

from __future__ import annotations

from sqlglot import exp

from convener.analytics.planner.catalog import _table_words, _time_columns
from convener.analytics.planner.sql import _Query
from convener.analytics.planner.state import _Reading
from convener.analytics.shapes import TIME_TYPES

_DOWN = frozenset({"highest", "largest", "biggest", "greatest", "most", "longest", "heaviest", "newest", "latest"})
_UP = frozenset({"lowest", "smallest", "fewest", "least", "shortest", "lightest", "oldest", "earliest"})
_TIME = frozenset({"newest", "latest", "oldest", "earliest"})
_BETWEEN = frozenset({"total", "totals", "average", "averages", "count", "counts", "number", "value", "values",
                      "one", "ones", "amount", "sum"})
_CLAUSE_END = frozenset({"", ".", ",", ";", "?", "!", ")"})
_PLAIN = frozenset({"alphabetically", "alphabetical"})


def read_sort_order(reading: _Reading, text: str) -> None:
    """"<superlative> [what is ordered] first", "from the <superlative> … to the <opposite>": the order of
    every row shown, not a ranking; "alphabetically", "in calendar order": the order shown already."""
    for index, token in enumerate(reading.tokens):
        if token.norm in _PLAIN and reading.free(index):
            reading.used.update(i for i in range(index - 1, index + 1) if reading.norm(i) in ("in", token.norm))
        if token.norm == "order" and reading.norm(index - 1) in ("calendar", "chronological", "alphabetical") \
                and reading.free(index) and reading.free(index - 1):
            reading.used.update(i for i in range(index - 2, index + 1) if reading.norm(i) != "the")
    for index, token in enumerate(reading.tokens):
        if token.norm != "first" or not reading.free(index) or text[token.end:].lstrip()[:1] not in _CLAUSE_END:
            continue  # ("the most nests first seen with an egg": an adverb of the verb after it)
        start, named = index - 1, None
        mention = reading.mention_at(start)
        if mention is not None and not mention.is_value and mention in reading.mentions and mention.end == index:
            named, start = mention, mention.start - 1  # "oldest date first"
        while start >= 0 and reading.free(start) and (reading.norm(start) in _BETWEEN
                                                     or reading.tokens[start].stem in _table_words(reading.base)):
            start -= 1  # "most flights first", "biggest total first"
        word = reading.norm(start)
        if word not in _DOWN | _UP or not reading.free(start):
            continue
        _settle(reading, named.target.column if named else None, word in _DOWN, word in _TIME)
        if named is not None:
            reading.mentions.remove(named)
        reading.used.update(range(start, index + 1))
        return
    for index, token in enumerate(reading.tokens):
        # "from the highest average to the lowest"
        if token.norm != "from" or not reading.free(index):
            continue
        first = index + 2 if reading.norm(index + 1) == "the" else index + 1
        if reading.norm(first) not in _DOWN | _UP or not reading.free(first):
            continue
        to = next((i for i in range(first + 1, min(first + 5, len(reading.tokens))) if reading.norm(i) == "to"), None)
        if to is None:
            continue
        last = to + 2 if reading.norm(to + 1) == "the" else to + 1
        if reading.norm(last) not in (_UP if reading.norm(first) in _DOWN else _DOWN):
            continue
        _settle(reading, None, reading.norm(first) in _DOWN, reading.norm(first) in _TIME)
        reading.used.update(i for i in range(index, last + 1) if reading.free(i) or reading.norm(i) in _BETWEEN)
        return


def _settle(reading: _Reading, column: str | None, descending: bool, time: bool) -> None:
    if column is None and time:
        times = _time_columns(reading.table)
        column = times[0].name if times else None
    reading.sort = (column, descending)


def apply_sort_order(reading: _Reading, query: _Query) -> None:
    """Orders the query's rows as asked, when it keeps them all: by the column named (selected, or any
    column when the rows are not made distinct), else by the last column computed (a breakdown's measure)."""
    if reading.sort is None or query.limit is not None:
        return
    column, descending = reading.sort
    whole = any(isinstance(e, exp.Star) for e in query.select)
    if column is not None:
        shown = whole or any(isinstance(e, exp.Column) and e.name == column for e in query.select)
        if shown or not query.distinct and not query.group:
            query.order = [exp.Ordered(this=exp.column(column, quoted=True), desc=descending)]
            return
        if reading.column(column).type in TIME_TYPES:
            return  # a time not shown orders nothing the reader sees
    if query.select and not whole and query.group:
        query.order = [exp.Ordered(this=exp.Literal.number(len(query.select)), desc=descending)]
