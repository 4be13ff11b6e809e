"""What the planner returns and raises, and the glossary terms it reads."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

MAX_QUESTION_CHARACTERS = 2000
"""Longer questions are refused rather than read: no analytics question needs more."""

MAX_VALUES_PER_COLUMN = 5000
"""At most this many values of a column are matched against a question (``values_of`` may return more)."""

ValuesOf = Callable[[str, str], Sequence[str]]
SpanOf = Callable[[str, str], "tuple[str, str] | None"]
"""``span_of(table, column)``: the least and the greatest value of a column, as text (None when it holds none)."""
KeysOf = Callable[[str, str, str, Sequence[str]], Sequence[str]]
"""``keys_of(table, key, column, names)``: the ``key`` values of ``table``'s rows whose ``column`` is one of
``names`` (the codes of the airports named "Newark ..."), so a name can be told apart by where its key is used."""


@dataclass(frozen=True)
class Term:
    """A glossary term (Google's ``GlossaryTerm``: displayName, description, labels)."""

    name: str
    description: str = ""
    labels: tuple[str, ...] = ()


@dataclass(frozen=True)
class Guess:
    """A word of the question (``said``) read as the longer ``names`` it is a word of ("Boston": Boston Back
    Bay Station), and ``check``: SQL answering whether any row of the queried table has those names. An
    answer of nothing that rests on names no row has is no answer: whoever shows it must say so."""

    said: str
    names: tuple[str, ...]
    check: str
    listed: bool = False
    """One of several periods said together ("in 2014 compared with 2013"): the answer may have rows of the
    others, and must still say that none falls in this one."""


@dataclass(frozen=True)
class Plan:
    """What the planner decided: ``sql`` in the requested dialect, a snake_case ``result_name``
    ("average_horsepower_by_origin"), the ``tables`` read, an ``explanation`` in words (shown as the
    agent's thought), the glossary ``terms_used`` (their names) and the ``shape``: count, aggregate,
    group, top, time_series, compare, share or rows.

    ``unaccounted`` are the words of the question the plan does not account for (a condition with no column
    behind it, "premium orders"): the SQL answers the question without them, so whoever shows the result
    must say so rather than present it as the answer to the whole question."""

    sql: str
    result_name: str
    tables: tuple[str, ...]
    explanation: str
    terms_used: tuple[str, ...]
    shape: str
    unaccounted: tuple[str, ...] = ()
    guessed: tuple[Guess, ...] = ()
    """Words of the question read as the longer names they are a word of ("Boston": Boston Back Bay
    Station): readings the data may not bear out."""


@dataclass(frozen=True)
class Relationship:
    """How two tables join (Google's ``SchemaRelationship``): ``left_columns`` of ``left_table`` equal
    ``right_columns`` of ``right_table``, pairwise. Table names are as the tables are named to the planner."""

    left_table: str
    left_columns: tuple[str, ...]
    right_table: str
    right_columns: tuple[str, ...]


class NoPlan(Exception):
    """The question could not be planned; ``reason`` says why, specifically enough to rephrase."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
