"""Names read from one word of them: "flights to Boston" read as the one airport whose name has "Boston" in
it (Boston Back Bay Station). The data may not bear such a reading out (Boston's airport is Logan, whose
name does not say Boston), and nothing in the schema tells. The plan names each such reading with a query
asking whether any row has those names, so that an answer of nothing resting on a name no row has is
shown as a reading that could not be used, not as the answer. A period the question names ("in 2015", "in
January 2014") is checked the same way: data that holds no row of it answers nothing, which is no answer."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from sqlglot import exp

from convener.analytics.planner.base import Guess
from convener.analytics.planner.catalog import _Candidate, _Catalog, _name_word_spans, _Target
from convener.analytics.planner.sql import _condition, _describe_filters, _Query, _render
from convener.analytics.planner.state import _Filter, _Reading
from convener.analytics.shapes import STRING
from convener.analytics.wording import Token, tokenize


def _whole(token: Token, target: _Target) -> bool:
    """Whether ``token`` is every word of each name it reads ("LaGuardia" for La Guardia), not one of them."""
    return all(token.norm == "".join(t.norm for t in tokenize(value) if t.kind == "word")
               for value in (target.value or "", *target.alternatives))


def guessed(catalog: _Catalog, tokens: list[Token], used: set[int]) -> list[_Candidate]:
    """The phrases of the question that only a word of longer names reads as those names: no other reading
    (a name's first word said as the data writes it, "Delta"; the whole name said) reads its words so."""
    found = catalog.candidates(tokens, used)
    guesses: list[_Candidate] = []
    for keys in catalog.columns:
        if keys.column.type == STRING:
            values = tuple(catalog.values(keys.table, keys.column))
            guesses.extend(candidate for candidate in _name_word_spans(
                tokens, used | catalog._row_word_indexes(tokens), keys, values)
                if not _whole(tokens[candidate.start], candidate.target))
    surer = [c for c in found if c not in guesses and c.target.value is not None]
    return [guess for guess in guesses if not any(_said_otherwise(guess, other) for other in surer)]


def _said_otherwise(guess: _Candidate, other: _Candidate) -> bool:
    """Whether ``other`` reads the words of ``guess`` (and maybe more: "Royal Docks Central" said whole) as
    one of the names it guesses."""
    names = {guess.target.value, *guess.target.alternatives}
    same = other.target.table == guess.target.table and other.target.column == guess.target.column
    return same and other.start <= guess.start and guess.end <= other.end and other.target.value in names


def read_guesses(guesses: Sequence[_Candidate], reading: _Reading, dialect: str) -> tuple[Guess, ...]:
    """Of ``guesses``, the ones a condition of the plan rests on, each with the query that tells whether any
    row of the queried table has the names it was read as."""
    read: list[Guess] = []
    for guess in guesses:
        names = (guess.target.value or "", *guess.target.alternatives)
        said = " ".join(token.text for token in reading.tokens[guess.start:guess.end])
        condition = next((f for f in reading.filters if f.kind in ("value", "name") and f.op in ("=", "in")
                          and set(names) <= set(f.values)), None)
        if condition is None or any(known.said == said for known in read):
            continue
        alone = _Filter(condition.column, "in" if len(names) > 1 else "=", names, condition.kind)
        # the rows' own conditions aside: whether the name is any row's at all
        bare = replace(reading, filters=[alone], group_conditions=[], absent=[], present=[])
        query = _Query([exp.alias_(exp.GT(this=exp.Count(this=exp.Star()), expression=exp.Literal.number(0)),
                                   "any_row", quoted=True)], where=[_condition(bare, alone, dialect)])
        read.append(Guess(said, names, _render(bare, query, dialect)))
    return tuple(read)


_PERIODS = ("year", "month", "day", "date", "periods")
"""Kinds of condition that name a stretch of time."""


def read_periods(reading: _Reading, dialect: str) -> tuple[Guess, ...]:
    """The periods the plan's conditions name, one for each place in the question that named one, each with
    the query that tells whether any row of the queried table falls in it."""
    said_at: dict[tuple[int, str], list[_Filter]] = {}
    for condition in reading.filters:
        if condition.kind in _PERIODS and condition.start >= 0:
            said_at.setdefault((condition.start, condition.column), []).append(condition)
    read: list[Guess] = []
    for (start, _), conditions in said_at.items():
        listed = conditions[0]
        if len(conditions) == 1 and listed.op == "in" and listed.kind in ("year", "month", "day"):
            # "in 2014 compared with 2013": each period on its own, so that one no row falls in is said
            for value in listed.values:
                read.append(replace(_rows_guess(reading, [replace(listed, op="=", values=(value,))],
                                                  _plain_value(value), dialect), listed=True))
            continue
        read.append(_rows_guess(reading, conditions, _said(reading, start), dialect))
    return tuple(read)


def read_joined_values(reading: _Reading, dialect: str) -> tuple[Guess, ...]:
    """Each value of a joined table's column the plan's conditions name, said whole ("to Boston Back Bay
    Station"), with the query that tells whether any row of the queried table joins to it: the other table may
    hold the name with no row of this one behind it (no flight goes to that station), and an answer of nothing
    resting on it is no answer."""
    virtual = reading.scope.virtual if reading.scope is not None else {}
    return tuple(_rows_guess(reading, [condition], " or ".join(map(_plain_value, condition.values)), dialect)
                 for condition in reading.filters
                 if condition.kind == "value" and condition.op in ("=", "in") and condition.column in virtual
                 and condition.start >= 0)


def _rows_guess(reading: _Reading, conditions: list[_Filter], said: str, dialect: str) -> Guess:
    """The guess that the rows of ``conditions`` exist: a query telling whether any row falls in them."""
    bare = replace(reading, filters=conditions, group_conditions=[], absent=[], present=[])
    query = _Query([exp.alias_(exp.GT(this=exp.Count(this=exp.Star()), expression=exp.Literal.number(0)),
                               "any_row", quoted=True)],
                   where=[_condition(bare, condition, dialect) for condition in conditions])
    meaning = "rows where " + _describe_filters(conditions).removeprefix(", where ")
    return Guess(said, (meaning,), _render(bare, query, dialect))


def _plain_value(value: str | float) -> str:
    """A period's value as the question would say it: 2014, not 2014.0."""
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def _said(reading: _Reading, start: int) -> str:
    """The words at ``start`` that named a period: those the reading used, up to the first it did not."""
    end = start
    while end < len(reading.tokens) and end in reading.used and end - start < 4:
        end += 1
    return " ".join(token.text for token in reading.tokens[start:max(end, start + 1)])
