"""Example queries: a question that rewords one of the agent's worked examples gets that example's SQL,
with its parameters filled from the question.

Google's ``ExampleQuery`` pairs a natural-language question with SQL; here an example may also declare
parameters (``name``, ``dataType``), written ``@name`` in the SQL as BigQuery writes them and ``@name`` or
``{name}`` in the question ("What share of days were rainy in @year?"). An example whose question holds
concrete values instead ("… rainy in 2013?") works too: the values are found the same way as in a user's
question and set aside.

Matching is two steps per example:

1. Fill every parameter from the question, by type: numbers (digits or "five") for INT64/FLOAT64/NUMERIC,
   a date with at least a month and a year for DATE (day 1 when the day is missing; a bare year is *not*
   a date, since binding "2008" as 2008-01-01 would quietly answer a different question), yes/no for
   BOOL, and for STRING a value that exists in the column the SQL compares the parameter with
   (``col = @p``, ``col IN (@p)``, ``col LIKE @p``), found through ``values_of``; failing that, the words
   of the question standing where the slot stands in the example. A parameter that cannot be filled
   rules the example out.
2. Score what is left: the Jaccard similarity of the two questions' content words (stemmed, a few
   synonyms folded together: "percentage"/"share"/"percent"), the words filling parameters and the
   prepositions before them left out. The best example at or above ``threshold`` wins.

Binding never touches SQL text: the SQL is parsed with sqlglot, each parameter node replaced by a typed
literal (a string literal, a number, ``CAST('…' AS DATE)``) and the tree rendered in the target dialect,
so a value such as ``O'Brien`` or ``'; DROP TABLE x; --`` can only ever be a string.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from functools import lru_cache
from typing import Any, ClassVar

import sqlglot
from sqlglot import exp
from sqlglot.dialects.duckdb import DuckDB
from sqlglot.errors import SqlglotError
from sqlglot.parsers.duckdb import DuckDBParser

from convener.analytics.wording import (
    CONTENT_STOPWORDS,
    MONTHS,
    Token,
    canonical,
    tokenize,
    value_tokens,
)

DEFAULT_THRESHOLD = 0.6
"""Least similarity for a match. Rewordings of the demo's examples score 0.67-1; a different question
that shares their subject ("the average price of GOOG before 2006" against "how much did the price of
@symbol change over @year") scores under 0.4."""

MAX_QUESTION_CHARACTERS = 2000

ValuesOf = Callable[[str, str], Sequence[str]]

NUMBER_TYPES = frozenset({"INT64", "INTEGER", "INT", "FLOAT64", "FLOAT", "NUMERIC", "BIGNUMERIC", "DECIMAL"})
INTEGER_TYPES = frozenset({"INT64", "INTEGER", "INT"})
DATE_TYPES = frozenset({"DATE"})
TIMESTAMP_TYPES = frozenset({"TIMESTAMP", "DATETIME"})
BOOL_TYPES = frozenset({"BOOL", "BOOLEAN"})
STRING_TYPES = frozenset({"STRING"})


@dataclass(frozen=True)
class Parameter:
    """A parameter of an example query: ``@name`` in its SQL, of a BigQuery type (STRING, INT64, FLOAT64,
    DATE, BOOL…)."""

    name: str
    data_type: str
    description: str = ""


@dataclass(frozen=True)
class Example:
    """An example query (Google's ``ExampleQuery``) with optional parameters."""

    question: str
    sql: str
    parameters: tuple[Parameter, ...] = ()


@dataclass(frozen=True)
class ExampleMatch:
    """The example that matched (``index`` into the list), how well, the parameter values bound (as
    text) and the SQL with them bound, in the requested dialect."""

    index: int
    score: float
    values: dict[str, str]
    sql: str


class _ParserWithParameters(DuckDBParser):
    NO_PAREN_FUNCTION_PARSERS: ClassVar = {key: value for key, value in DuckDBParser.NO_PAREN_FUNCTION_PARSERS.items()
                                           if key != "@"}


class _DuckDBWithParameters(DuckDB):
    """DuckDB reads ``@x`` as ``ABS(x)``; examples use ``@name`` parameters, so here it is a parameter."""

    Parser = _ParserWithParameters


_SLOT = re.compile(r"@([A-Za-z_]\w*)|\{([A-Za-z_]\w*)\}")
_MARKER = "slotmarker"
"""Slots are tokenized as one word each, ``slotmarker0``, ``slotmarker1``…"""


# --- Preparing an example ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Slot:
    """Where a parameter sits in the example's question: the words just before and after it."""

    name: str
    before: str
    after: str


@dataclass
class _Prepared:
    tree: exp.Expr
    parameters: dict[str, Parameter]
    slots: dict[str, _Slot]
    tokens: list[Token]
    columns: dict[str, list[tuple[str, str]]] = field(default_factory=dict)


@lru_cache(maxsize=512)
def _parse(sql: str, read: str) -> exp.Expr | None:
    """The example's SQL as one statement, or None. ``@name`` is a parameter in every dialect (DuckDB's
    own reading of ``@`` is ABS)."""
    dialect: Any = _DuckDBWithParameters if read == "duckdb" else read
    try:
        statements = sqlglot.parse(sql, read=dialect)
    except SqlglotError:
        return None
    if len(statements) != 1 or statements[0] is None:
        return None
    return statements[0]


def _parameter_nodes(tree: exp.Expr) -> list[exp.Expr]:
    """The ``@name`` nodes of a statement (sqlglot makes them Parameter or Placeholder by dialect)."""
    return [node for node in tree.find_all(exp.Parameter, exp.Placeholder) if node.name]


@lru_cache(maxsize=1024)
def _prepare(example: Example, read: str) -> _Prepared | None:
    """The parsed example, or None when its SQL does not parse as one statement or uses a parameter it
    does not declare."""
    tree = _parse(example.sql, read)
    if tree is None:
        return None
    declared = {parameter.name: parameter for parameter in example.parameters}
    if any(node.name not in declared for node in _parameter_nodes(tree)):
        return None
    names: list[str] = []

    def marker(match: re.Match[str]) -> str:
        names.append(match.group(1) or match.group(2))
        return f" {_MARKER}{len(names) - 1} "

    tokens = tokenize(_SLOT.sub(marker, example.question))
    slots = {}
    for index, token in enumerate(tokens):
        if token.norm.startswith(_MARKER):
            name = names[int(token.norm[len(_MARKER):])]
            before = tokens[index - 1].norm if index > 0 else ""
            after = tokens[index + 1].norm if index + 1 < len(tokens) else ""
            slots[name] = _Slot(name, before, after)
    prepared = _Prepared(tree, declared, slots, tokens)
    prepared.columns = {name: _compared_columns(tree, name) for name in declared}
    return prepared


def _compared_columns(tree: exp.Expr, name: str) -> list[tuple[str, str]]:
    """(table, column) pairs the SQL compares parameter ``name`` with: ``col = @p``, ``col IN (@p)``,
    ``col LIKE @p``."""
    aliases = {table.alias_or_name: ".".join(part for part in (table.catalog, table.db, table.name) if part)
               for table in tree.find_all(exp.Table)}
    tables = list(dict.fromkeys(aliases.values()))
    found: list[tuple[str, str]] = []
    for node in _parameter_nodes(tree):
        if node.name != name:
            continue
        parent = node.parent
        column: exp.Expr | None = None
        if isinstance(parent, exp.In):
            column = parent.this
        elif isinstance(parent, (exp.EQ, exp.NEQ, exp.Like, exp.ILike)):
            column = parent.expression if parent.this is node else parent.this
        if isinstance(column, exp.Column):
            owner = aliases.get(column.table) if column.table else None
            for table in [owner] if owner else tables:
                found.append((table, column.name))
    return found


# --- Finding values in a question --------------------------------------------------------------------------


@dataclass(frozen=True)
class _Found:
    """A value found in the question: its text for the SQL, and the token positions it came from."""

    value: str
    positions: tuple[int, ...]
    score: float


def _numbers(tokens: list[Token], integer: bool) -> list[_Found]:
    """Numbers in the question, digits or words; only whole ones for an integer parameter."""
    found = []
    for index, token in enumerate(tokens):
        if token.number is None or (integer and not token.is_integer):
            continue
        number = token.number
        text = str(int(number)) if number.is_integer() and integer else _number_text(number)
        found.append(_Found(text, (index,), 0.0))
    return found


def _number_text(number: float) -> str:
    """A number as SQL would write it: no trailing ``.0`` for whole numbers."""
    return str(int(number)) if number.is_integer() else repr(number)


_DATE_PATTERN = re.compile(
    r"\b\d{4}-\d{1,2}-\d{1,2}\b"
    r"|\b\d{1,2}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:" + "|".join(MONTHS) + r")\.?,?\s+\d{4}\b"
    r"|\b(?:" + "|".join(MONTHS) + r")\.?\s+\d{1,2}(?:st|nd|rd|th)?,?\s+\d{4}\b"
    r"|\b(?:" + "|".join(MONTHS) + r")\.?,?\s+\d{4}\b",
    re.IGNORECASE,
)


def _dates(question: str, tokens: list[Token]) -> list[_Found]:
    """Dates with at least a month and a year, read by dateparser with relative parsing turned off, so
    nothing depends on today's date."""
    found = []
    for match in _DATE_PATTERN.finditer(question):
        parsed = _parse_date(match.group())
        if parsed is None:
            continue
        positions = tuple(i for i, t in enumerate(tokens) if t.start >= match.start() and t.end <= match.end())
        found.append(_Found(parsed.isoformat(), positions, 0.0))
    return found


def _parse_date(text: str) -> date | None:
    """A date from text with at least a month and a year, or None; never relative to today."""
    import dateparser  # type: ignore[import-untyped, unused-ignore]

    settings: Any = {"PREFER_DAY_OF_MONTH": "first", "REQUIRE_PARTS": ["month", "year"],
                     "PARSERS": ["custom-formats", "absolute-time"], "DATE_ORDER": "YMD"
                     if re.match(r"\d{4}-", text) else "MDY", "RETURN_AS_TIMEZONE_AWARE": False}
    parsed = dateparser.parse(text, languages=["en"], settings=settings)
    return parsed.date() if isinstance(parsed, datetime) else None


def _booleans(tokens: list[Token]) -> list[_Found]:
    """yes/no/true/false words."""
    truth = {"yes": "true", "true": "true", "no": "false", "false": "false"}
    return [_Found(truth[t.norm], (i,), 0.0) for i, t in enumerate(tokens) if t.norm in truth]


def _data_values(tokens: list[Token], values: Sequence[str]) -> list[_Found]:
    """Values of a column that occur in the question, as whole words, case aside unless the value is also
    an everyday word (the state "IN" must be written "IN", not "in")."""
    stems = [token.stem if token.kind == "word" else token.norm for token in tokens]
    found = []
    for value in map(str, values):
        words = value_tokens(value)
        size = len(words)
        if not size:
            continue
        everyday = all(word in CONTENT_STOPWORDS or len(word) < 2 for word in words)
        for start in range(len(tokens) - size + 1):
            if tuple(stems[start:start + size]) != words:
                continue
            if everyday and " ".join(t.text for t in tokens[start:start + size]) != value:
                continue
            found.append(_Found(value, tuple(range(start, start + size)), float(size)))
    return found


def _aligned_words(question: str, tokens: list[Token], slot: _Slot) -> list[_Found]:
    """The words of the question standing where the slot stands in the example: after the word that
    precedes the slot, up to the word that follows it."""
    found = []
    for index, token in enumerate(tokens):
        if token.norm != slot.before or not slot.before:
            continue
        end = index + 1
        while end < len(tokens) and tokens[end].norm != slot.after and end - index <= 6:
            end += 1
        if end == index + 1 or (slot.after and end >= len(tokens)) or end - index > 6:
            continue
        text = question[tokens[index + 1].start:tokens[end - 1].end]
        found.append(_Found(text, tuple(range(index + 1, end)), 0.5))
    return found


# --- Filling the parameters --------------------------------------------------------------------------------


def _candidates(question: str, tokens: list[Token], prepared: _Prepared, parameter: Parameter,
                values_of: ValuesOf | None) -> list[_Found]:
    """The values in the question that could fill ``parameter``, by its type."""
    kind = parameter.data_type.upper()
    if kind in NUMBER_TYPES:
        return _numbers(tokens, kind in INTEGER_TYPES)
    if kind in DATE_TYPES or kind in TIMESTAMP_TYPES:
        return _dates(question, tokens)
    if kind in BOOL_TYPES:
        return _booleans(tokens)
    found: list[_Found] = []
    if values_of is not None:
        for table, column in prepared.columns.get(parameter.name, []):
            found.extend(_data_values(tokens, values_of(table, column)))
    slot = prepared.slots.get(parameter.name)
    if not found and slot is not None:
        found = _aligned_words(question, tokens, slot)
    return found


def _fit(found: _Found, tokens: list[Token], parameter: Parameter, slot: _Slot | None) -> float:
    """How well a value suits a slot: the words around it agree with the example's, and a year-like
    parameter gets a year."""
    score = found.score
    first, last = min(found.positions), max(found.positions)
    if slot is not None:
        if first > 0 and tokens[first - 1].norm == slot.before:
            score += 2.0
        if last + 1 < len(tokens) and tokens[last + 1].norm == slot.after:
            score += 1.0
    about_year = "year" in f"{parameter.name} {parameter.description}".lower()
    looks_like_year = len(found.positions) == 1 and re.fullmatch(r"(1[89]|20)\d\d", found.value) is not None
    if parameter.data_type.upper() in NUMBER_TYPES and about_year != looks_like_year:
        score -= 3.0
    return score


def _fill(question: str, tokens: list[Token], prepared: _Prepared,
          values_of: ValuesOf | None) -> tuple[dict[str, str], set[int]] | None:
    """A value for every parameter (distinct tokens for each), or None."""
    values: dict[str, str] = {}
    used: set[int] = set()
    order = sorted(prepared.parameters.values(), key=lambda p: p.data_type.upper() in STRING_TYPES)
    for parameter in order:
        slot = prepared.slots.get(parameter.name)
        options = [f for f in _candidates(question, tokens, prepared, parameter, values_of)
                   if not used.intersection(f.positions)]
        if not options:
            return None
        best = max(options, key=lambda f: (_fit(f, tokens, parameter, slot), len(f.positions), -min(f.positions)))
        values[parameter.name] = best.value
        used.update(best.positions)
    return values, used


# --- Scoring -----------------------------------------------------------------------------------------------


def _words(tokens: list[Token], skip: set[int]) -> set[str]:
    """Content words as canonical stems, leaving out ``skip`` and a preposition right before a skipped
    word (the "in" of "in 2013" goes with the year)."""
    words = set()
    for index, token in enumerate(tokens):
        if index in skip or token.norm.startswith(_MARKER):
            continue
        following = tokens[index + 1] if index + 1 < len(tokens) else None
        if following is not None and (index + 1 in skip or following.norm.startswith(_MARKER)) \
                and token.norm in _SLOT_PREPOSITIONS:
            continue
        if token.kind == "word" and token.norm in CONTENT_STOPWORDS:
            continue
        words.add(canonical(token.norm) if token.kind == "word" else token.norm)
    return words


_SLOT_PREPOSITIONS = frozenset({"in", "on", "during", "over", "for", "of", "from", "at", "since", "by", "to",
                                "than", "the", "year", "month", "day", "between", "and"})


def _similarity(question: set[str], example: set[str]) -> float:
    """Jaccard similarity of two word sets."""
    if not question or not example:
        return 0.0
    return len(question & example) / len(question | example)


def _example_skips(prepared: _Prepared, values_of: ValuesOf | None, example: Example) -> set[int]:
    """Words of an example question that hold concrete parameter values ("… rainy in 2013?")."""
    if prepared.slots or not prepared.parameters:
        return set()
    filled = _fill(example.question, prepared.tokens, prepared, values_of)
    return filled[1] if filled else set()


# --- Binding -----------------------------------------------------------------------------------------------


def _literal(value: str, data_type: str) -> exp.Expr:
    """A bound value as a typed literal node."""
    kind = data_type.upper()
    if kind in NUMBER_TYPES:
        return exp.Literal.number(value)
    if kind in DATE_TYPES:
        return exp.cast(exp.Literal.string(value), exp.DataType.build("DATE"))
    if kind in TIMESTAMP_TYPES:
        return exp.cast(exp.Literal.string(value), exp.DataType.build("TIMESTAMP"))
    if kind in BOOL_TYPES:
        return exp.Boolean(this=value == "true")
    return exp.Literal.string(value)


def bind(example: Example, values: dict[str, str], *, dialect: str = "duckdb",
         example_dialect: str | None = None) -> str:
    """The example's SQL with each ``@name`` replaced by ``values[name]`` as a literal of the parameter's
    type, rendered in ``dialect``. Raises ``ValueError`` when the SQL does not parse or a value is
    missing."""
    tree = _parse(example.sql, example_dialect or dialect)
    if tree is None:
        raise ValueError("the example's SQL does not parse as one statement")
    types = {parameter.name: parameter.data_type for parameter in example.parameters}

    def replace(node: exp.Expr) -> exp.Expr:
        if isinstance(node, (exp.Parameter, exp.Placeholder)) and node.name:
            if node.name not in values or node.name not in types:
                raise ValueError(f"no value for parameter {node.name}")
            return _literal(values[node.name], types[node.name])
        return node

    return tree.copy().transform(replace).sql(dialect=dialect)


def match_example(question: str, examples: Sequence[Example], *, dialect: str = "duckdb",
                  values_of: ValuesOf | None = None, threshold: float = DEFAULT_THRESHOLD,
                  example_dialect: str | None = None) -> ExampleMatch | None:
    """The example ``question`` rewords best, with its parameters filled from the question and bound into
    its SQL (rendered in ``dialect``), or None when none scores at least ``threshold``. The examples' SQL
    is read in ``example_dialect`` (default: ``dialect``), with ``@name`` parameters in any dialect."""
    if not question or len(question) > MAX_QUESTION_CHARACTERS:
        return None
    tokens = tokenize(question)
    best: tuple[float, int, dict[str, str]] | None = None
    for index, example in enumerate(examples):
        prepared = _prepare(example, example_dialect or dialect)
        if prepared is None:
            continue
        filled = _fill(question, tokens, prepared, values_of)
        if filled is None:
            continue
        values, used = filled
        score = _similarity(_words(tokens, used), _words(prepared.tokens, _example_skips(prepared, values_of,
                                                                                          example)))
        if score >= threshold and (best is None or score > best[0]):
            best = (score, index, values)
    if best is None:
        return None
    score, index, values = best
    sql = bind(examples[index], values, dialect=dialect, example_dialect=example_dialect)
    return ExampleMatch(index=index, score=round(score, 4), values=values, sql=sql)
