"""The offline planner: a plain-language question over one table turned into SQL by rules, with no model.

A data agent without a language model still answers the common questions: counts, sums, averages, minima
and maxima of a column, grouped by a category or bucketed by month or year, top and bottom N, comparisons
of two groups, and plain listings, each filtered by values that exist in the data ("cars from Japan"), by
numbers ("more than 8 cylinders") and by dates ("after 2005"). Everything else is refused with a
``NoPlan`` whose reason names what was not understood: an honest "I can't" beats a confident wrong query.

How a question is read:

1. Guard: empty, too long, asking to change data or about the future → refused.
2. Phrases are looked up in a catalog of what the data calls things: column names split into words
   (``Miles_per_Gallon`` ↔ "miles per gallon"), column synonyms, glossary terms (a term maps to the column
   its description names, or stands for a filter when its description quotes a value: "weather = 'rain'")
   and the values of string columns (``values_of``). The table whose words and values the question hits
   hardest is the one queried; joins are not planned.
3. Structure words then bind to those phrases: comparisons to the number and column beside them, "by",
   "per" and "each" to group keys, "average"/"total"/"highest" to measures, "top 5" to an ordering.
4. Words left over that the catalog does not know make the question unanswerable when they matter.

SQL is built as a sqlglot tree (identifiers quoted, values as literals: question text never reaches SQL
as text) and rendered in the requested dialect; date bucketing is written per dialect because SQLite has
no ``DATE_TRUNC`` or ``EXTRACT``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date
from functools import lru_cache
from itertools import pairwise, permutations

import sqlglot
from sqlglot import exp

from convener.analytics.shapes import NUMBER_TYPES, STRING, TIME_TYPES, ColumnInfo, TableInfo
from convener.analytics.wording import (
    CONTENT_STOPWORDS,
    MONTHS,
    Token,
    phrase,
    snake,
    split_identifier,
    stem,
    tokenize,
    value_tokens,
)

MAX_QUESTION_CHARACTERS = 2000
"""Longer questions are refused rather than read: no analytics question needs more."""

MAX_VALUES_PER_COLUMN = 5000
"""At most this many values of a column are matched against a question (``values_of`` may return more)."""

ValuesOf = Callable[[str, str], Sequence[str]]


@dataclass(frozen=True)
class Term:
    """A glossary term (Google's ``GlossaryTerm``: displayName, description, labels)."""

    name: str
    description: str = ""
    labels: tuple[str, ...] = ()


@dataclass(frozen=True)
class Plan:
    """What the planner decided: ``sql`` in the requested dialect, a snake_case ``result_name``
    ("average_horsepower_by_origin"), the ``tables`` read, an ``explanation`` in words (shown as the
    agent's thought), the glossary ``terms_used`` (their names) and the ``shape``: count, aggregate,
    group, top, time_series, compare or rows."""

    sql: str
    result_name: str
    tables: tuple[str, ...]
    explanation: str
    terms_used: tuple[str, ...]
    shape: str


class NoPlan(Exception):
    """The question could not be planned; ``reason`` says why, specifically enough to rephrase."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


# --- Vocabulary --------------------------------------------------------------------------------------------

AVG, SUM, MIN, MAX, MEDIAN = "AVG", "SUM", "MIN", "MAX", "MEDIAN"
_AGG_NAMES = {AVG: "average", SUM: "total", MIN: "minimum", MAX: "maximum", MEDIAN: "median"}

_AGG_WORDS = {
    "average": AVG, "avg": AVG, "mean": AVG, "typical": AVG, "typically": AVG, "usual": AVG,
    "total": SUM, "sum": SUM, "combined": SUM, "altogether": SUM, "cumulative": SUM,
    "maximum": MAX, "max": MAX, "highest": MAX, "largest": MAX, "biggest": MAX, "greatest": MAX,
    "peak": MAX, "most": MAX, "best": MAX, "top": MAX, "record": MAX,
    "minimum": MIN, "min": MIN, "lowest": MIN, "smallest": MIN, "least": MIN, "fewest": MIN, "worst": MIN,
    "median": MEDIAN,
}
_LOW_WORDS = frozenset({
    "lowest", "smallest", "least", "fewest", "worst", "minimum", "min", "bottom", "cheapest", "coldest",
    "shortest", "lightest", "slowest", "weakest", "poorest", "earliest",
})
_HIGH_WORDS = frozenset({
    "highest", "largest", "biggest", "greatest", "most", "best", "top", "maximum", "max", "peak",
    "record",
})
_BUCKETS = {
    "daily": "day", "day": "day", "days": "day", "weekly": "week", "week": "week", "weeks": "week",
    "monthly": "month", "month": "month", "months": "month", "quarterly": "quarter", "quarter": "quarter",
    "quarters": "quarter", "yearly": "year", "annual": "year", "annually": "year", "year": "year",
    "years": "year",
}
_BUCKET_ADJECTIVES = frozenset({"daily", "weekly", "monthly", "quarterly", "yearly", "annual", "annually"})
_GROUP_MARKERS = (("grouped", "by"), ("broken", "down", "by"), ("split", "by"), ("for", "each"),
                  ("for", "every"), ("in", "each"), ("of", "each"), ("by",), ("per",), ("each",), ("every",),
                  ("across",))
_GROUP_FILLER = frozenset({"number", "of", "type", "types", "kind", "kinds", "different", "the", "a", "an",
                           "individual", "single", "its", "their", "category"})
_COMPARATORS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("no", "more", "than"), "<="), (("no", "less", "than"), ">="), (("not", "more", "than"), "<="),
    (("more", "than"), ">"), (("greater", "than"), ">"), (("higher", "than"), ">"), (("larger", "than"), ">"),
    (("bigger", "than"), ">"), (("over",), ">"), (("above",), ">"), (("exceeding",), ">"), (("exceeds",), ">"),
    (("at", "least"), ">="), (("minimum", "of"), ">="), (("fewer", "than"), "<"), (("less", "than"), "<"),
    (("lower", "than"), "<"), (("smaller", "than"), "<"), (("under",), "<"), (("below",), "<"),
    (("at", "most"), "<="), (("maximum", "of"), "<="), (("up", "to"), "<="), (("exactly",), "="),
    (("equal", "to"), "="), (("equals",), "="), ((">",), ">"), (("<",), "<"), ((">=",), ">="),
    (("<=",), "<="), (("=",), "="),
)
_COUNT_PHRASES = (("how", "many"), ("number", "of"), ("count", "of"), ("count",), ("how", "often"),
                  ("tally", "of"))
_DISTINCT_WORDS = frozenset({"different", "distinct", "unique", "separate"})
_LIST_WORDS = frozenset({"show", "list", "display", "find", "give", "get", "return", "see", "which", "fetch",
                         "view", "print", "rows", "records", "entries"})
_COMPARE_WORDS = frozenset({"compare", "compared", "comparing", "comparison", "vs", "versus", "against"})
_MODIFY_VERBS = frozenset({"delete", "drop", "update", "insert", "truncate", "alter", "grant", "revoke",
                           "merge", "upsert", "remove", "modify", "erase", "wipe", "create", "replace"})
_DDL_OBJECTS = frozenset({"table", "tables", "view", "index", "database", "schema", "function", "or"})
_UNSUPPORTED = frozenset({
    "percentage", "percent", "share", "proportion", "ratio", "fraction", "correlation", "correlated",
    "correlate", "variance", "deviation", "stddev", "percentile", "quantile", "growth", "increase",
    "increased", "decrease", "decreased", "difference", "rate", "cumulative", "running", "rolling", "moving",
    "forecast", "improved", "improvement", "declined", "drop",
})
"""Computations beyond counts, sums, averages, extremes and rankings: left unconsumed, they mean the
question asks for something this planner would silently get wrong."""
_TREND_WORDS = frozenset({"change", "changed", "changes", "evolve", "evolved", "trend", "trends", "develop",
                          "developed"})
_FUTURE_WORDS = frozenset({"tomorrow", "forecast", "forecasts", "predict", "predicted", "prediction",
                           "projected", "projection", "future", "will"})
_NEGATIONS = frozenset({"not", "except", "excluding", "exclude", "without", "non", "other", "besides"})
_YEAR_PREPOSITIONS = {"in": "=", "during": "=", "of": "=", "for": "=", "from": "=", "on": "=",
                      "after": ">", "since": ">=", "before": "<", "until": "<=", "through": "<=",
                      "by": "<="}
_UNITS = frozenset({"mm", "cm", "millimetres", "millimeters", "centimetres", "centimeters", "degrees",
                    "degree", "celsius", "lbs", "lb", "pounds", "pound", "kg", "mph", "dollars", "dollar",
                    "usd", "percent", "hp", "inches", "inch", "gallons", "seconds", "bushels", "thousand",
                    "thousands", "c", "f", "m", "s", "%", "$", "units", "points", "times"})
_FILLER = frozenset({
    "show", "list", "display", "find", "give", "get", "return", "see", "tell", "please", "me", "us", "data",
    "dataset", "table", "tables", "row", "rows", "record", "records", "entry", "entries", "value", "values",
    "many", "much", "number", "count", "total", "figure", "figures", "know", "like", "look", "looking",
    "ever", "recorded", "observed", "measured", "overall", "whole", "entire", "there", "exist", "exists",
    "have", "has", "had", "all", "every", "each", "per", "by", "kind", "type", "types", "kinds", "group",
    "grouped", "broken", "split", "across", "compare", "compared", "vs", "versus", "against", "between",
    "top", "bottom", "first", "last", "which", "what", "whats", "along", "together", "respectively",
    "level", "levels", "amount", "quantity", "size", "stats", "statistics", "info", "information",
    "available", "sorted", "ordered", "order", "ranked", "rank", "ranking", "breakdown", "distribution",
    "different", "distinct", "unique", "individual", "typical", "typically", "usual", "roughly",
    "approximately", "exactly", "precisely", "sort", "including", "include", "includes", "over", "time",
    "period", "periods", "least", "most", "more", "less", "fewer", "than", "at", "with", "where",
    "when", "whose", "got", "on", "average", "mean", "sum", "also", "currently", "current", "recent",
    "ones", "one", "things", "items", "item", "stuff", "change", "changed", "changes", "evolve", "evolved",
    "trend", "trends", "develop", "developed", "chart", "charts", "plot", "graph", "visualize", "visualise",
    "visualization", "draw", "create", "make", "bar", "line", "pie", "histogram",
})
"""Words that do not name anything in the data and need not: the unknown-word check skips them."""
_ADJECTIVE_SUFFIXES = ("y", "ny", "gy", "ese", "an", "ean", "ian", "n", "ish", "ern")


# --- The catalog: what phrases of a question can refer to --------------------------------------------------


@dataclass(frozen=True)
class _Target:
    """What a phrase refers to: a column, or a value of a column (``value`` set). ``term`` names the
    glossary term it came through, if any."""

    table: str
    column: str
    value: str | None = None
    term: str | None = None


@dataclass(frozen=True)
class _Candidate:
    """A phrase of the question (tokens ``start``..``end``) and what it may refer to."""

    start: int
    end: int
    target: _Target
    strength: float
    source: str  # name, synonym, glossary, value, adjective, partial


@dataclass
class _ColumnKeys:
    """The ways a column is named: its whole name, synonyms and (weaker) single distinctive parts."""

    table: TableInfo
    column: ColumnInfo
    names: list[tuple[str, ...]] = field(default_factory=list)
    parts: list[tuple[str, ...]] = field(default_factory=list)


_GENERIC_PARTS = frozenset({"max", "min", "avg", "total", "sum", "count", "number", "in", "per", "of", "lbs",
                            "change", "value", "id", "name", "type", "and"})


class _Catalog:
    """Every table's names, columns, values and the glossary, indexed for matching against a question."""

    def __init__(self, tables: Sequence[TableInfo], terms: Sequence[Term], values_of: ValuesOf | None) -> None:
        self.tables = {table.name: table for table in tables}
        self._values_of = values_of
        self._values: dict[tuple[str, str], list[str]] = {}
        self.columns = [self._column_keys(table, column) for table in tables for column in table.columns]
        self.terms = [(term, target) for term in terms for target in self._term_targets(term)]

    # values

    def values(self, table: TableInfo, column: ColumnInfo) -> list[str]:
        """Distinct values of a string column: from ``values_of`` when given, else the column's samples."""
        key = (table.name, column.name)
        if key not in self._values:
            raw = self._values_of(table.name, column.name) if self._values_of else column.samples
            self._values[key] = [str(value) for value in list(raw)[:MAX_VALUES_PER_COLUMN] if value is not None]
        return self._values[key]

    # columns

    @staticmethod
    def _column_keys(table: TableInfo, column: ColumnInfo) -> _ColumnKeys:
        keys = _ColumnKeys(table, column)
        for name in (column.name, *column.synonyms):
            words = phrase(name)
            if words:
                keys.names.append(words)
        whole = phrase(column.name)
        if len(whole) > 1:
            keys.parts.extend((part,) for part in whole if part not in _GENERIC_PARTS and len(part) > 2)
        return keys

    # glossary

    def _term_targets(self, term: Term) -> list[_Target]:
        """A term whose description quotes a value of a column stands for that filter; one whose
        description names a column stands for the column. Terms that name neither are not used."""
        description = term.description or ""
        for quoted in re.findall(r"'([^']+)'|\"([^\"]+)\"", description):
            value = quoted[0] or quoted[1]
            target = self._quoted_value(value, description)
            if target:
                return [_Target(target[0], target[1], value, term.name)]
        named = self._named_columns(description)
        return [_Target(table, column, None, term.name) for table, column in named]

    def _quoted_value(self, value: str, description: str) -> tuple[str, str] | None:
        found: list[tuple[int, str, str]] = []
        for keys in self.columns:
            if keys.column.type != STRING:
                continue
            if value in self.values(keys.table, keys.column):
                named = 0 if _names(description, keys.column.name) else 1
                found.append((named, keys.table.name, keys.column.name))
        return (min(found)[1], min(found)[2]) if found else None

    def _named_columns(self, description: str) -> list[tuple[str, str]]:
        named = [(keys.table.name, keys.column.name) for keys in self.columns
                 if _names(description, keys.column.name)]
        marked = [pair for pair in named
                  if re.search(rf"\b{re.escape(pair[1])}\s+column\b", description, re.IGNORECASE)]
        if marked:
            return marked
        return named if len({column for _, column in named}) == 1 else []

    # matching

    def candidates(self, tokens: list[Token], used: set[int]) -> list[_Candidate]:
        content = [i for i, token in enumerate(tokens)
                   if i not in used and not token.is_stopword and token.kind in ("word", "number")]
        found: list[_Candidate] = []
        for keys in self.columns:
            target = _Target(keys.table.name, keys.column.name)
            for words in keys.names:
                for start, end, exact in _phrase_spans(tokens, content, words, abbreviations=True):
                    found.append(_Candidate(start, end, target, 3.0 + len(words) - (0 if exact else 0.5), "name"))
            entity = _table_words(keys.table)
            for words in keys.parts:
                for start, end, exact in _phrase_spans(tokens, content, words, abbreviations=True):
                    if tokens[start].stem not in entity:  # "orders" is the table, not order_id
                        found.append(_Candidate(start, end, target, 1.0 if exact else 0.8, "partial"))
        for term, target in self.terms:
            for label in (term.name, *term.labels):
                words = phrase(label)
                for start, end, _ in _phrase_spans(tokens, content, words, abbreviations=False):
                    found.append(_Candidate(start, end, target, 3.2 + len(words), "glossary"))
        found.extend(self._value_candidates(tokens, used))
        return found

    def _value_candidates(self, tokens: list[Token], used: set[int]) -> list[_Candidate]:
        found: list[_Candidate] = []
        stems = [token.stem if token.kind == "word" else token.norm for token in tokens]
        for keys in self.columns:
            if keys.column.type != STRING:
                continue
            values = tuple(self.values(keys.table, keys.column))
            found.extend(_value_spans(tokens, stems, used, keys, values))
            if len(values) <= 50:
                found.extend(_adjective_spans(tokens, used, keys, values))
                found.extend(_first_word_spans(tokens, used, keys, list(values)))
        return found


def _names(description: str, column: str) -> bool:
    """Whether a description names a column as a whole word."""
    return re.search(rf"(?<![\w.]){re.escape(column)}(?![\w])", description, re.IGNORECASE) is not None


def _token_matches(token: Token, part: str, abbreviations: bool) -> tuple[bool, bool]:
    """(matches, exactly): a question word matches a name part when their stems agree or it is the part
    compared ("lowest", "hotter" for "low", "hot"); for column names also when the part abbreviates it
    ("temp" → "temperature", "max" → "maximum") or the two share a long stem ("weigh"/"weight",
    "generate"/"generation")."""
    if token.stem == part or token.norm == part:
        return True, True
    if token.kind != "word":
        return False, False
    if token.norm in _compared_forms(part):
        return True, False
    if abbreviations and token.norm not in _BUCKETS and token.norm not in _AGG_WORDS_PLAIN:
        if len(part) >= 3 and token.norm.startswith(part):
            return True, False
        if _share_stem(token.stem, part):
            return True, False
    return False, False


@lru_cache(maxsize=8192)
def _compared_forms(word: str) -> frozenset[str]:
    """"low" → lower, lowest; "heavy" → heavier, heaviest; "hot" → hotter, hottest."""
    if len(word) < 3 or not word.isalpha():
        return frozenset()
    bases = {word, word[:-1] + "i" if word.endswith("y") else word, word + word[-1]}
    return frozenset(base + ending for base in bases for ending in ("er", "est"))


def _share_stem(word: str, part: str) -> bool:
    """Two words of one family: a common beginning of at least 5 letters and 90% of the shorter word."""
    if len(word) < 4 or len(part) < 4:
        return False
    common = 0
    for left, right in zip(word, part, strict=False):
        if left != right:
            break
        common += 1
    return common >= max(5, 0.9 * min(len(word), len(part)))


_AGG_WORDS_PLAIN = frozenset({"average", "total", "mean", "sum", "count"})


def _phrase_spans(tokens: list[Token], content: list[int], words: tuple[str, ...],
                  abbreviations: bool) -> list[tuple[int, int, bool]]:
    """Where the content words ``words`` occur as consecutive content tokens, in any order (so "minimum
    temperature" finds ``temp_min``), spanning at most a couple of stopwords per word."""
    size = len(words)
    spans: list[tuple[int, int, bool]] = []
    if not size or size > 6:
        return spans
    for first in range(len(content) - size + 1):
        window = content[first:first + size]
        if window[-1] - window[0] > 2 * size + 1:
            continue
        result = _window_match([tokens[i] for i in window], words, abbreviations)
        if result is not None:
            spans.append((window[0], window[-1] + 1, result))
    return spans


def _window_match(window: list[Token], words: tuple[str, ...], abbreviations: bool) -> bool | None:
    """Whether some order of ``words`` matches the window; True when every word matched exactly."""
    orders = [words] if len(words) > 4 else list(permutations(words))
    for order in orders:
        results = [_token_matches(token, part, abbreviations) for token, part in zip(window, order, strict=True)]
        if all(matched for matched, _ in results):
            return all(exact for _, exact in results)
    return None


def _common(word: str) -> bool:
    """Structure, filler and unit words: never values, never unknown."""
    return word in _FILLER or word in _AGG_WORDS or word in _BUCKETS or word in _UNITS or len(word) < 2 \
        or stem(word) != word and stem(word) in _FILLER


@dataclass(frozen=True)
class _Value:
    """A value of a column as the question must contain it: its word stems, and whether it is also an
    everyday word (then it must be written as the data writes it)."""

    value: str
    words: tuple[str, ...]
    common: bool


@lru_cache(maxsize=256)
def _value_index(values: tuple[str, ...]) -> dict[str, list[_Value]]:
    """A column's values by their first word, so a question is matched in one pass over its tokens."""
    index: dict[str, list[_Value]] = {}
    for value in values:
        words = value_tokens(value)
        if not words or len(words) > 8:
            continue
        common = all(word in CONTENT_STOPWORDS or _common(word) for word in words)
        index.setdefault(words[0], []).append(_Value(value, words, common))
    return index


def _value_spans(tokens: list[Token], stems: list[str], used: set[int], keys: _ColumnKeys,
                 values: tuple[str, ...]) -> list[_Candidate]:
    """Where values occur as consecutive tokens; a value that is also a common English word ("IN", "OR",
    "ME" as state codes) must be written as the data writes it."""
    index = _value_index(values)
    found = []
    for start, first in enumerate(stems):
        for item in index.get(first, ()):
            size = len(item.words)
            if tuple(stems[start:start + size]) != item.words or used.intersection(range(start, start + size)):
                continue
            if item.common and " ".join(t.text for t in tokens[start:start + size]) != item.value:
                continue
            found.append(_Candidate(start, start + size, _Target(keys.table.name, keys.column.name, item.value),
                                    2.5 + size, "value"))
    return found


def _adjective_spans(tokens: list[Token], used: set[int], keys: _ColumnKeys,
                     values: tuple[str, ...]) -> list[_Candidate]:
    """Adjectives of category values ("Japanese", "snowy") as weaker value mentions."""
    return [_Candidate(index, index + 1, _Target(keys.table.name, keys.column.name, value), 2.2, "adjective")
            for index, token in enumerate(tokens) if index not in used
            for value in values if _adjective_of(token, value)]


def _adjective_of(token: Token, value: str) -> bool:
    """"Japanese" for Japan, "snowy" for snow, "European" for Europe: a word made of a value and an
    adjective ending."""
    lowered = value.lower()
    if token.kind != "word" or len(lowered) < 3 or not lowered.isalpha():
        return False
    return token.norm.startswith(lowered) and token.norm[len(lowered):] in _ADJECTIVE_SUFFIXES


def _first_word_spans(tokens: list[Token], used: set[int], keys: _ColumnKeys,
                      values: list[str]) -> list[_Candidate]:
    """A distinctive first word of a multi-word category ("nuclear" for "Nuclear Energy"), weaker."""
    firsts: dict[str, list[str]] = {}
    for value in values:
        words = value_tokens(value)
        if len(words) > 1:
            firsts.setdefault(words[0], []).append(value)
    found = []
    for index, token in enumerate(tokens):
        options = firsts.get(token.stem)
        if index in used or token.kind != "word" or not options or len(options) > 1 or token.is_stopword \
                or _common(token.norm) or len(token.norm) < 4:
            continue
        found.append(_Candidate(index, index + 1, _Target(keys.table.name, keys.column.name, options[0]),
                                1.8, "value"))
    return found


# --- Choosing the table and the mentions in it -------------------------------------------------------------


@dataclass(frozen=True)
class _Mention:
    """A resolved phrase: tokens ``start``..``end`` refer to ``target`` (in the chosen table)."""

    start: int
    end: int
    target: _Target
    source: str
    ambiguous: tuple[str, ...] = ()

    @property
    def is_value(self) -> bool:
        return self.target.value is not None


def _resolve(candidates: list[_Candidate]) -> list[_Mention]:
    """Non-overlapping mentions, longest and strongest first; equally strong rivals for the same span are
    kept as ``ambiguous`` so that a measure that could be two columns is refused, not guessed."""
    ordered = sorted(candidates, key=lambda c: (-(c.end - c.start), -c.strength, c.start))
    taken: set[int] = set()
    mentions: list[_Mention] = []
    for index, candidate in enumerate(ordered):
        span = set(range(candidate.start, candidate.end))
        if span & taken:
            continue
        rivals = tuple(sorted({other.target.column for other in ordered[index + 1:]
                               if (other.start, other.end, other.strength) ==
                               (candidate.start, candidate.end, candidate.strength)
                               and other.target.column != candidate.target.column
                               and other.target.value is None and candidate.target.value is None}))
        taken |= span
        mentions.append(_Mention(candidate.start, candidate.end, candidate.target, candidate.source, rivals))
    return sorted(mentions, key=lambda m: m.start)


def _forms(words: Sequence[str]) -> set[str]:
    """A word's stem and its plurals' stems: "iris" stems to "iri" but "irises" to "iris"."""
    return {form for word in words for form in (word, stem(word + "s"), stem(word + "es"))}


@lru_cache(maxsize=1024)
def _table_words(table: TableInfo) -> set[str]:
    """The words that name a table's rows: its name's words, synonyms and the "one row per …" noun of its
    description, with plural forms."""
    words = {word for word in split_identifier(table.name.split(".")[-1]).lower().split() if len(word) > 2}
    for synonym in table.synonyms:
        words |= set(split_identifier(synonym).lower().split())
    return _forms([stem(word) for word in words] + list(words)) | _row_nouns(table.description or "")


def _row_nouns(description: str) -> set[str]:
    """What one row is, from a description saying "one row per day" or "one row per symbol and month"."""
    match = re.search(r"row (?:per|for each|for every|is an?)\s+([\w ]+)", description, re.IGNORECASE)
    if not match:
        return set()
    return {word for word in phrase(match.group(1)) if word not in ("and", "or")}


@lru_cache(maxsize=1024)
def _vocabulary(table: TableInfo) -> set[str]:
    """Every word the table's name, description, columns and their descriptions use: words a question
    may contain without them being "not understood"."""
    words = set(_table_words(table))
    for text in (table.description or "", *table.synonyms):
        words |= set(phrase(text))
    for column in table.columns:
        words |= set(phrase(column.name)) | set(phrase(column.description or ""))
        for synonym in column.synonyms:
            words |= set(phrase(synonym))
    return _forms(sorted(words))


def _choose_table(catalog: _Catalog, tokens: list[Token], used: set[int]) -> tuple[TableInfo, list[_Mention]]:
    """The table the question is about: the one whose columns, values, glossary terms and own words it
    hits hardest. A tie between two tables is refused rather than guessed."""
    candidates = catalog.candidates(tokens, used)
    scored: list[tuple[float, str]] = []
    for name, table in catalog.tables.items():
        mentions = _resolve([c for c in candidates if c.target.table == name])
        score = sum(_strength(candidates, m) for m in mentions)
        words = _table_words(table)
        score += 3.0 * len({t.stem for t in tokens if t.stem in words and t.kind == "word"})
        vocabulary = _vocabulary(table)
        score += 0.3 * len({t.stem for t in tokens if t.kind == "word" and not t.is_stopword
                            and t.stem in vocabulary and not _common(t.norm)})
        scored.append((score, name))
    scored.sort(key=lambda pair: -pair[0])
    if not scored or scored[0][0] < 2.0:
        raise NoPlan("the question does not mention any table, column or value of the data")
    if len(scored) > 1 and scored[1][0] == scored[0][0]:
        raise NoPlan(f"the question could be about {scored[0][1]} or {scored[1][1]}; name the table or a column")
    table = catalog.tables[scored[0][1]]
    return table, _resolve([c for c in candidates if c.target.table == table.name])


def _strength(candidates: list[_Candidate], mention: _Mention) -> float:
    """How strongly a resolved mention matched (the best candidate for its span and target)."""
    return max(c.strength for c in candidates
               if (c.start, c.end, c.target) == (mention.start, mention.end, mention.target))


# --- Reading the structure of the question -----------------------------------------------------------------


@dataclass(frozen=True)
class _Filter:
    """``column op value``; ``values`` for IN; ``kind`` is value, number, year, or date."""

    column: str
    op: str
    values: tuple[str | float, ...]
    kind: str


@dataclass
class _Reading:
    """Everything the planner understood of a question, before choosing a shape."""

    table: TableInfo
    tokens: list[Token]
    mentions: list[_Mention]
    used: set[int] = field(default_factory=set)
    filters: list[_Filter] = field(default_factory=list)
    keys: list[str] = field(default_factory=list)
    bucket: str | None = None
    measures: list[tuple[str, str | None]] = field(default_factory=list)
    count: bool = False
    distinct: str | None = None
    top: int | None = None
    descending: bool = True
    listing: bool = False
    compare: bool = False
    terms: list[str] = field(default_factory=list)
    order_measure: str | None = None
    counted_measure: str | None = None
    direction: bool | None = None

    def column(self, name: str) -> ColumnInfo:
        found = self.table.column(name)
        assert found is not None
        return found

    def norm(self, index: int) -> str:
        return self.tokens[index].norm if 0 <= index < len(self.tokens) else ""

    def mention_at(self, index: int) -> _Mention | None:
        return next((m for m in self.mentions if m.start <= index < m.end), None)

    def free(self, index: int) -> bool:
        return 0 <= index < len(self.tokens) and index not in self.used and self.mention_at(index) is None


def _matches(reading: _Reading, index: int, words: tuple[str, ...]) -> bool:
    """Whether ``words`` occur at ``index`` as free tokens (not already used by another reading step)."""
    return all(reading.norm(index + offset) == word and reading.free(index + offset)
               for offset, word in enumerate(words))


def _find_phrase(reading: _Reading, phrases: Sequence[tuple[str, ...]]) -> tuple[int, tuple[str, ...]] | None:
    """The first free occurrence of any of ``phrases``."""
    for index in range(len(reading.tokens)):
        for words in phrases:
            if _matches(reading, index, words):
                return index, words
    return None


def _time_columns(table: TableInfo) -> list[ColumnInfo]:
    """Columns that place a row in time: DATE/TIMESTAMP ones, then an integer column named like a year."""
    columns = [c for c in table.columns if c.type in TIME_TYPES]
    columns += [c for c in table.columns if c.type in NUMBER_TYPES and stem(c.name.lower()) == "year"]
    return columns


def _time_column(reading: _Reading) -> ColumnInfo | None:
    """The column dates in the question apply to: a time column the question names, else the first."""
    columns = _time_columns(reading.table)
    mentioned = [c for c in columns if any(m.target.column == c.name for m in reading.mentions)]
    chosen = mentioned or columns
    return chosen[0] if chosen else None


def _read_buckets(tokens: list[Token]) -> tuple[str | None, set[int]]:
    """"monthly", "per year", "by quarter", "over the years", "over time": the time bucket asked for, and
    the tokens that asked (read first, so that "per year" is not taken for a column named year)."""
    def norm(index: int) -> str:
        return tokens[index].norm if 0 <= index < len(tokens) else ""

    unit: str | None = None
    used: set[int] = set()
    for index, token in enumerate(tokens):
        span: list[int] = []
        if token.norm in _BUCKET_ADJECTIVES:
            span = [index]
        elif token.norm in _BUCKETS and norm(index - 1) in ("per", "by", "each", "every", "a"):
            span = [index - 2, index - 1, index] if norm(index - 2) in ("for", "in", "of") else [index - 1, index]
        elif token.norm in ("years", "time") and norm(index - 1) == "the" and norm(index - 2) == "over":
            span = [index - 2, index - 1, index]
        elif token.norm == "time" and norm(index - 1) == "over":
            span = [index - 1, index]
        if span and not used.intersection(span):
            unit = "month" if token.norm == "time" else _BUCKETS[token.norm]
            used.update(span)
    return unit, used


def _read_dates(reading: _Reading) -> None:
    """ISO dates, "March 1, 2004", "January 2013", and years after a preposition ("in 2008", "after 2005",
    "between 2005 and 2007") become filters on the table's time column."""
    column = _time_column(reading)
    if column is None:
        return
    _read_full_dates(reading, column)
    _read_year_ranges(reading, column)
    _read_years(reading, column)


def _is_year(token: Token) -> bool:
    """A whole number between 1800 and 2100 written without decimals."""
    return token.kind == "number" and token.is_integer and 1800 <= (token.number or 0) <= 2100 \
        and "." not in token.text


def _read_full_dates(reading: _Reading, column: ColumnInfo) -> None:
    """"2005-03-01", "on March 1, 2004" (one day) and "January 2013" (a month) on a date column."""
    if column.type not in TIME_TYPES:
        return
    tokens = reading.tokens
    for index, token in enumerate(tokens):
        if index in reading.used:
            continue
        if token.kind == "date":
            year, month, day = (int(part) for part in token.text.split("-"))
            _add_day(reading, column, year, month, day, [index])
            continue
        named = _month(token)
        following = tokens[index + 1] if index + 1 < len(tokens) else None
        after = tokens[index + 2] if index + 2 < len(tokens) else None
        if named is None or following is None:
            continue
        if _day_number(following) and after is not None and _is_year(after):
            _add_day(reading, column, int(after.number or 0), named, int(following.number or 0),
                     [index, index + 1, index + 2])
        elif _is_year(following):
            _add_month(reading, column, int(following.number or 0), named, [index, index + 1])


def _day_number(token: Token) -> bool:
    """A whole number that can be a day of the month."""
    return token.kind == "number" and token.is_integer and 1 <= (token.number or 0) <= 31


def _month(token: Token) -> int | None:
    """The month a word names: a full name in any case, an abbreviation ("Mar", "Dec") only capitalised."""
    if token.kind != "word" or token.norm not in MONTHS:
        return None
    if len(token.norm) > 3 and token.norm != "sept" or token.text[:1].isupper():
        return MONTHS[token.norm]
    return None


def _add_day(reading: _Reading, column: ColumnInfo, year: int, month: int, day: int, span: list[int]) -> None:
    """An equality filter on one day; an impossible date is refused."""
    try:
        iso = date(year, month, day).isoformat()
    except ValueError:
        raise NoPlan(f"{year}-{month:02d}-{day:02d} is not a date") from None
    reading.filters.append(_Filter(column.name, "=", (iso,), "date"))
    reading.used.update(span)
    if reading.norm(span[0] - 1) == "on":
        reading.used.add(span[0] - 1)


def _add_month(reading: _Reading, column: ColumnInfo, year: int, month: int, span: list[int]) -> None:
    """A month as a half-open date range."""
    start = f"{year:04d}-{month:02d}-01"
    end = f"{year + (month == 12):04d}-{month % 12 + 1:02d}-01"
    reading.filters.append(_Filter(column.name, ">=", (start,), "date"))
    reading.filters.append(_Filter(column.name, "<", (end,), "date"))
    reading.used.update(span)


def _read_year_ranges(reading: _Reading, column: ColumnInfo) -> None:
    """"between 2005 and 2007", "from 2005 to 2007": both years included."""
    tokens = reading.tokens
    for index in range(len(tokens) - 3):
        first, joiner, second = tokens[index + 1], tokens[index + 2], tokens[index + 3]
        if (reading.norm(index), joiner.norm) not in (("between", "and"), ("from", "to"), ("from", "through")):
            continue
        if not (_is_year(first) and _is_year(second)) or reading.used.intersection(range(index, index + 4)):
            continue
        reading.filters.append(_Filter(column.name, ">=", (first.number or 0,), "year"))
        reading.filters.append(_Filter(column.name, "<=", (second.number or 0,), "year"))
        reading.used.update(range(index, index + 4))


def _read_years(reading: _Reading, column: ColumnInfo) -> None:
    """A year after a preposition ("in 2008", "after 2005") or on its own ("1982 cars"); several years
    joined by "and"/"or" make one IN filter."""
    years: list[float] = []
    for index, token in enumerate(reading.tokens):
        if index in reading.used or not _is_year(token):
            continue
        before = reading.norm(index - 1)
        op = _YEAR_PREPOSITIONS.get(before, "=")
        if before == "prior" or (before == "to" and reading.norm(index - 2) == "prior"):
            op = "<"
        if op == "=":
            years.append(token.number or 0)
        else:
            reading.filters.append(_Filter(column.name, op, (token.number or 0,), "year"))
        reading.used.add(index)
        if before in _YEAR_PREPOSITIONS or before in ("and", "or"):
            reading.used.add(index - 1)
    if years:
        reading.filters.append(_Filter(column.name, "=" if len(years) == 1 else "in", tuple(years), "year"))


def _read_comparisons(reading: _Reading) -> None:
    """"more than 8 cylinders", "horsepower greater than 200", "at least 30 mpg": a comparison binds the
    number after it to the numeric column named right after the number, else right before the phrase."""
    for index in range(len(reading.tokens)):
        for words, op in _COMPARATORS:
            if not _matches(reading, index, words):
                continue
            number_at = index + len(words)
            if reading.norm(number_at) == "$":
                number_at += 1
            number = reading.tokens[number_at] if number_at < len(reading.tokens) else None
            if number is None or number.number is None or number_at in reading.used:
                continue
            column = _column_after(reading, number_at + 1) or _column_before(reading, index)
            if column is None and _is_year(number) and _time_columns(reading.table):
                break  # "over 2005": a year, read with the dates
            if column is None:
                raise NoPlan(f"could not tell which column '{' '.join(words)} {number.text}' is about")
            reading.filters.append(_Filter(column, op, (number.number,), "number"))
            reading.used.update(range(index, number_at + 1))
            break


def _numeric_mention(reading: _Reading, index: int) -> _Mention | None:
    """The mention at ``index`` when it names a numeric column."""
    mention = reading.mention_at(index)
    if mention and not mention.is_value and reading.column(mention.target.column).type in NUMBER_TYPES:
        return mention
    return None


def _column_after(reading: _Reading, index: int) -> str | None:
    """The numeric column named just after a number, past units ("30 mm of precipitation")."""
    while index < len(reading.tokens) and (reading.tokens[index].norm in _UNITS or reading.norm(index) == "of"):
        reading.used.add(index)
        index += 1
    mention = _numeric_mention(reading, index)
    if mention is None:
        return None
    reading.mentions.remove(mention)
    reading.used.update(range(mention.start, mention.end))
    _note_term(reading, mention)
    return mention.target.column


def _column_before(reading: _Reading, index: int) -> str | None:
    """The numeric column named just before a comparison, past a few stopwords ("the high temperature was
    above")."""
    index -= 1
    steps = 0
    while index >= 0 and steps < 4:
        mention = _numeric_mention(reading, index)
        if mention:
            reading.mentions.remove(mention)
            reading.used.update(range(mention.start, mention.end))
            _note_term(reading, mention)
            return mention.target.column
        if not (reading.tokens[index].is_stopword or reading.tokens[index].norm in ("was", "is", "were", "are")):
            return None
        index -= 1
        steps += 1
    return None


def _note_term(reading: _Reading, mention: _Mention) -> None:
    """Record the glossary term a mention came through, once."""
    if mention.target.term and mention.target.term not in reading.terms:
        reading.terms.append(mention.target.term)


def _read_counted_numbers(reading: _Reading) -> None:
    """"4 cylinders", "8 cylinder cars": a number right before an integer column means equality."""
    for index, token in enumerate(reading.tokens):
        if index in reading.used or token.number is None:
            continue
        mention = _numeric_mention(reading, index + 1)
        if mention is None or reading.column(mention.target.column).type != "INTEGER" \
                or reading.column(mention.target.column) in _time_columns(reading.table):
            continue
        if reading.norm(index - 1) in ("top", "bottom", "which", "what", "first", "last"):
            continue
        reading.filters.append(_Filter(mention.target.column, "=", (token.number,), "number"))
        reading.mentions.remove(mention)
        reading.used.update(range(index, mention.end))
        _note_term(reading, mention)


def _read_values(reading: _Reading) -> None:
    """Values named in the question filter their column; several values of one column make an IN, and a
    negation just before ("not from Japan", "excluding rain") makes it NOT."""
    by_column: dict[tuple[str, bool], list[str]] = {}
    for mention in [m for m in reading.mentions if m.is_value]:
        negated = any(reading.norm(i) in _NEGATIONS for i in range(max(0, mention.start - 3), mention.start))
        by_column.setdefault((mention.target.column, negated), [])
        if mention.target.value not in by_column[(mention.target.column, negated)]:
            by_column[(mention.target.column, negated)].append(mention.target.value or "")
        reading.mentions.remove(mention)
        reading.used.update(range(mention.start, mention.end))
        _note_term(reading, mention)
    for (column, negated), values in by_column.items():
        op = ("not in" if negated else "in") if len(values) > 1 else ("<>" if negated else "=")
        reading.filters.append(_Filter(column, op, tuple(values), "value"))


def _read_top(reading: _Reading) -> None:
    """"top 5", "bottom 3", "5 heaviest", "which 3 …": an ordering with a limit. Direction comes from the
    nearest superlative ("lowest", "worst" → ascending)."""
    tokens = reading.tokens
    for index, token in enumerate(tokens):
        if index in reading.used:
            continue
        if token.norm in ("top", "bottom", "first", "last") and _number_at(reading, index + 1):
            reading.top = int(tokens[index + 1].number or 0)
            reading.descending = token.norm in ("top", "first")
            reading.used.update((index, index + 1))
            return
        if token.number is not None and token.is_integer and _superlative_after(reading, index + 1):
            reading.top = int(token.number)
            reading.used.add(index)
            return
        if token.norm in ("which", "what") and _number_at(reading, index + 1):
            reading.top = int(tokens[index + 1].number or 0)
            reading.used.update((index, index + 1))
            return
    for index, token in enumerate(tokens):
        if token.norm in ("top", "bottom") and index not in reading.used:
            reading.top, reading.descending = 10, token.norm == "top"
            reading.used.add(index)
            return


def _number_at(reading: _Reading, index: int) -> bool:
    """Whether a small whole number, unclaimed, stands at ``index`` (a ranking's N)."""
    token = reading.tokens[index] if index < len(reading.tokens) else None
    return token is not None and token.number is not None and token.is_integer and index not in reading.used \
        and 0 < (token.number or 0) <= 1000


def _superlative_after(reading: _Reading, index: int) -> bool:
    """Whether a superlative follows ("5 heaviest", "3 most …")."""
    if reading.norm(index) in ("most", "least"):
        return True
    token = reading.tokens[index] if index < len(reading.tokens) else None
    return token is not None and token.kind == "word" and (
        token.norm in _HIGH_WORDS or token.norm in _LOW_WORDS or token.norm.endswith("est"))


def _direction(tokens: list[Token]) -> bool | None:
    """Whether the question ranks from the top (True) or the bottom (False), from its first superlative
    ("highest", "heaviest", "top" / "lowest", "worst", "bottom"); None when it has none."""
    for token in tokens:
        if token.norm in _LOW_WORDS or token.norm == "bottom":
            return False
        if token.norm in _HIGH_WORDS or (token.kind == "word" and token.norm.endswith("est") and len(token.norm) > 5):
            return True
    return None


def _read_keys(reading: _Reading, table_words: set[str]) -> None:
    """"by origin", "per stock symbol", "for each site", "each number of cylinders": group keys; in a top
    question, "by <numeric column>" is what to rank by."""
    index = 0
    while index < len(reading.tokens):
        marker = next((words for words in _GROUP_MARKERS if _matches(reading, index, words)), None)
        if marker is None:
            index += 1
            continue
        after = index + len(marker)
        while reading.free(after) and (reading.norm(after) in _GROUP_FILLER or reading.norm(after) in _AGG_WORDS
                                       or reading.tokens[after].stem in table_words):
            after += 1
        mention = reading.mention_at(after)
        if mention and not mention.is_value and mention.start == after:
            reading.used.update(range(index, index + len(marker)))
            if _is_order_measure(reading, mention, marker):
                reading.order_measure = mention.target.column  # left for _read_measures, with its aggregate
            else:
                reading.keys.append(mention.target.column)
                reading.mentions.remove(mention)
                reading.used.update(range(mention.start, mention.end))
                _note_term(reading, mention)
            index = mention.end
            continue
        index = after


def _is_order_measure(reading: _Reading, mention: _Mention, marker: tuple[str, ...]) -> bool:
    """In "top 5 cars by horsepower" the numeric column after "by" is what to order by, not a key."""
    column = reading.column(mention.target.column)
    return marker == ("by",) and reading.top is not None and column.type in NUMBER_TYPES


def _asks_which(reading: _Reading) -> bool:
    """Whether the question is a which/what question."""
    return any(token.norm in ("which", "what") for token in reading.tokens)


def _read_ranked_keys(reading: _Reading) -> None:
    """In a ranking question the category ranked is a group key: "which origin has the most cars",
    "top 3 varieties by total yield", "what region …"."""
    if reading.top is None and not (reading.direction is not None and _asks_which(reading)):
        return
    for mention in list(reading.mentions):
        column = reading.column(mention.target.column)
        if mention.is_value or column.type != STRING:
            continue
        reading.keys.append(column.name)
        reading.mentions.remove(mention)
        reading.used.update(range(mention.start, mention.end))
        _note_term(reading, mention)
        reading.top = reading.top or 1
        return


def _read_ranked_rows(reading: _Reading, table_words: set[str]) -> None:
    """"Which car has the highest horsepower", "what was the hottest day": the single best row. Asked
    within groups ("which car … in each region") it is a ranking per group, which is not planned."""
    if reading.top is not None or reading.direction is None:
        return
    if not _asks_for_row(reading, table_words):
        return
    if reading.keys:
        raise NoPlan(f"ranking rows within each {' and '.join(reading.keys)} is not something this planner does")
    reading.top = 1


def _asks_for_row(reading: _Reading, table_words: set[str]) -> bool:
    """"which car …" or "… the hottest day": a row noun right after which/what or right after a
    superlative, and not a modifier of a column ("lowest stock price")."""
    for index, token in enumerate(reading.tokens[:-1]):
        following = reading.tokens[index + 1]
        if following.stem not in table_words or reading.mention_at(index + 2) is not None:
            continue
        superlative = token.norm in _HIGH_WORDS or token.norm in _LOW_WORDS or token.norm.endswith("est")
        if token.norm in ("which", "what") or superlative:
            return True
    return False


def _read_counts(reading: _Reading, table_words: set[str]) -> None:
    """"how many …", "number of …", "count …": a count; "how many different X" counts distinct X."""
    found = _find_phrase(reading, _COUNT_PHRASES)
    if found is None:
        return
    index, words = found
    reading.count = True
    reading.used.update(range(index, index + len(words)))
    after = index + len(words)
    while after < len(reading.tokens) and reading.norm(after) in ("the", "of", "a", "an", "all"):
        after += 1
    if reading.norm(after) in _DISTINCT_WORDS:
        reading.used.add(after)
        for mention in reading.mentions:
            if mention.start > after and not mention.is_value:
                reading.distinct = mention.target.column
                reading.mentions.remove(mention)
                reading.used.update(range(mention.start, mention.end))
                return
    while after < len(reading.tokens) and after in reading.used and reading.mention_at(after) is None:
        after += 1
    named = reading.mention_at(after)
    if named is not None and _numeric_mention(reading, after) is not None:
        reading.counted_measure = named.target.column
    counted = reading.tokens[after] if after < len(reading.tokens) else None
    if counted is not None and counted.kind == "word" and named is None \
            and counted.stem not in table_words and counted.stem not in _vocabulary(reading.table) \
            and not _common(counted.norm) and not counted.is_stopword:
        raise NoPlan(f"the data has nothing called '{counted.text}' to count")


def _read_measures(reading: _Reading) -> None:
    """The numeric columns left are measures; each takes the aggregate word nearest before it ("average
    horsepower", "horsepower on average", "warmest temperature")."""
    global_agg: list[str | None] = []
    _merge_adjacent_measures(reading)
    for mention in list(reading.mentions):
        if mention.is_value:
            continue
        column = reading.column(mention.target.column)
        if column.type not in NUMBER_TYPES:
            continue
        if mention.ambiguous:
            names = " or ".join((column.name, *mention.ambiguous))
            raise NoPlan(f"'{_text(reading, mention)}' could be {names}; say which")
        agg = _aggregate_before(reading, mention.start) or _aggregate_inside(reading, mention)
        if agg is None:
            global_agg = global_agg or [_global_aggregate(reading)]
            agg = global_agg[0]
        reading.measures.append((column.name, agg))
        reading.mentions.remove(mention)
        reading.used.update(range(mention.start, mention.end))
        _note_term(reading, mention)


def _merge_adjacent_measures(reading: _Reading) -> None:
    """Two column phrases side by side name one measure: "manufacturing jobs" is the manufacturing column
    (not also the jobs total), "warmest temperature" is one column. The column's own name wins over a
    glossary word; otherwise the first phrase does, and it takes the span of both."""
    mentions = sorted((m for m in reading.mentions if _numeric_mention(reading, m.start) is m),
                      key=lambda m: m.start)
    for first, second in pairwise(mentions):
        if second.start != first.end or first not in reading.mentions or second not in reading.mentions:
            continue
        keep = second if second.source == "name" and first.source != "name" else first
        merged = _Mention(first.start, second.end, keep.target, keep.source, keep.ambiguous)
        reading.mentions.remove(first)
        reading.mentions.remove(second)
        reading.mentions.append(merged)
        for mention in (first, second):
            if mention.target.column == keep.target.column:
                _note_term(reading, mention)


def _text(reading: _Reading, mention: _Mention) -> str:
    """The question's words a mention covers, as written."""
    return " ".join(token.text for token in reading.tokens[mention.start:mention.end])


def _aggregate_before(reading: _Reading, index: int) -> str | None:
    """An aggregate word among the few words before a measure ("the average horsepower", "max price of")."""
    for position in range(index - 1, max(-1, index - 4), -1):
        token = reading.tokens[position]
        if position in reading.used and reading.mention_at(position) is None:
            continue
        if reading.mention_at(position) is not None:
            return None
        if token.norm in _AGG_WORDS and token.norm not in ("most", "top", "best", "least", "record"):
            reading.used.add(position)
            return _AGG_WORDS[token.norm]
        if not (token.is_stopword or token.norm in ("per", "all", "overall")):
            return None
    return None


def _aggregate_inside(reading: _Reading, mention: _Mention) -> str | None:
    """A superlative that is itself the column's name ("warmest", "heaviest") implies its maximum."""
    for token in reading.tokens[mention.start:mention.end]:
        if token.norm in _LOW_WORDS:
            return MIN
        if token.norm.endswith("est") and len(token.norm) > 5:
            return MAX
    return None


def _global_aggregate(reading: _Reading) -> str | None:
    """An aggregate word anywhere: "on average", "in total", "how much", or a free aggregate word."""
    tokens = reading.tokens
    for index, token in enumerate(tokens):
        if not reading.free(index):
            continue
        if token.norm == "average" and reading.norm(index - 1) == "on":
            reading.used.update((index - 1, index))
            return AVG
        if token.norm == "total" and reading.norm(index - 1) == "in":
            reading.used.update((index - 1, index))
            return SUM
    for index, token in enumerate(tokens):
        if reading.free(index) and token.norm in _AGG_WORDS and (reading.top is None or
                                                                  token.norm not in _HIGH_WORDS | _LOW_WORDS):
            reading.used.add(index)
            return _AGG_WORDS[token.norm]
    if any(reading.norm(i) == "how" and reading.norm(i + 1) == "much" for i in range(len(tokens))):
        return SUM
    return None


def _read_flags(reading: _Reading) -> None:
    """Whether the question asks to list rows ("show", "which") or to compare ("vs", "compare")."""
    for index, token in enumerate(reading.tokens):
        if not reading.free(index):
            continue
        if token.norm in _LIST_WORDS:
            reading.listing = True
        if token.norm in _COMPARE_WORDS or (token.norm == "difference" and reading.norm(index + 1) == "between"):
            reading.compare = True


def _read(table: TableInfo, tokens: list[Token], mentions: list[_Mention], used: set[int],
          bucket: str | None) -> _Reading:
    """Bind the structure words to the mentions, in an order where each step leaves for the next only what
    it did not consume: rankings, comparisons and dates claim their numbers first, values become filters,
    then keys, counts and finally measures with their aggregates."""
    reading = _Reading(table, tokens, list(mentions), set(used), bucket=bucket)
    _read_top(reading)
    _read_comparisons(reading)
    _read_dates(reading)
    reading.direction = _direction([t for i, t in enumerate(tokens) if i not in reading.used or reading.mention_at(i)])
    _read_counted_numbers(reading)
    _read_values(reading)
    _read_keys(reading, _table_words(table))
    _read_ranked_keys(reading)
    _read_ranked_rows(reading, _table_words(table))
    _read_counts(reading, _table_words(table))
    _read_measures(reading)
    _read_flags(reading)
    _read_leftover_columns(reading)
    return reading


def _read_leftover_columns(reading: _Reading) -> None:
    """Columns named but neither key, filter nor measure ("the city of Houston", "airports by name" once
    "name" was no key) only describe the rows; the glossary terms they came through still count as used."""
    for mention in list(reading.mentions):
        _note_term(reading, mention)
        reading.mentions.remove(mention)
        reading.used.update(range(mention.start, mention.end))


# --- Guards and the unknown-word check ---------------------------------------------------------------------


def _guard(question: str) -> list[Token]:
    """Refuse before reading: empty or oversized questions, instructions to change data, questions about
    the future. Returns the question's tokens."""
    if not question or not question.strip():
        raise NoPlan("the question is empty")
    if len(question) > MAX_QUESTION_CHARACTERS:
        raise NoPlan(f"the question is longer than {MAX_QUESTION_CHARACTERS} characters")
    tokens = tokenize(question)
    words = [token.norm for token in tokens]
    if not words:
        raise NoPlan("the question has no words")
    for index, word in enumerate(words):
        if word in _MODIFY_VERBS and _commands(words, index):
            raise NoPlan(f"the question asks to {word} data; a data agent only reads it")
    if any(word in _FUTURE_WORDS for word in words) or " next " in f" {' '.join(words)} ":
        raise NoPlan("the question asks about the future; the data only records the past")
    return tokens


def _commands(words: list[str], index: int) -> bool:
    """Whether the verb at ``index`` is an instruction ("delete all cars", "… and run DELETE FROM cars")
    rather than a word of a question ("the biggest drop in price"). CREATE and REPLACE count only before
    a database object."""
    following = words[index + 1] if index + 1 < len(words) else ""
    if words[index] in ("create", "replace"):
        return following in _DDL_OBJECTS
    previous = words[index - 1] if index > 0 else ""
    return index == 0 or following in ("from", "into", "table", "all", "the", "every", "each") \
        or previous in ("run", "execute", "please", "and", "then", "to", "now")


def _unsupported(reading: _Reading) -> str | None:
    """A word asking for a computation the planner does not make ("percentage", "correlation"); a word of
    change over time ("changed") is fine beside a time bucket, which shows the change."""
    for index, token in enumerate(reading.tokens):
        if not reading.free(index):
            continue
        if token.norm in _UNSUPPORTED or (token.norm in _TREND_WORDS and reading.bucket is None):
            return token.text
    return None


def _unknown_words(reading: _Reading) -> list[str]:
    """Words that name nothing in the chosen table and are not structure or filler: what the planner did
    not understand."""
    vocabulary = _vocabulary(reading.table)
    unknown = []
    for index, token in enumerate(reading.tokens):
        if index in reading.used or token.kind != "word" or token.is_stopword:
            continue
        if token.stem in vocabulary or token.norm in vocabulary or _common(token.norm) or token.norm in _MEANINGFUL_LOCAL \
                or token.norm in ("how", "was", "is", "are", "were", "did", "does", "do"):
            continue
        if token.number is not None:
            continue
        unknown.append(token.text)
    return unknown


def _looks_like_name(reading: _Reading, word: str) -> bool:
    """A capitalised word inside the sentence ("sold by Tesla") names something; since a filter value
    must exist in the data, an unknown name makes the question unanswerable rather than ignorable."""
    for index, token in enumerate(reading.tokens):
        if token.text == word and index > 0 and word[:1].isupper() and reading.tokens[index - 1].text not in ".!?":
            return True
    return False


_MEANINGFUL_LOCAL = frozenset({"more", "most", "after", "before", "above", "below", "under", "over", "each",
                               "between", "than", "from", "by", "per", "all", "during", "until", "not", "no",
                               "only", "other", "same", "up", "down"})


def _leftover_numbers(reading: _Reading) -> list[str]:
    """Numbers and dates no step claimed: a question with one left is not understood."""
    return [token.text for index, token in enumerate(reading.tokens)
            if index not in reading.used and token.kind in ("number", "date") and reading.mention_at(index) is None]


# --- Shapes ------------------------------------------------------------------------------------------------


@dataclass
class _Query:
    """The SQL being assembled, dialect-neutral until rendered."""

    select: list[exp.Expr]
    group: list[exp.Expr] = field(default_factory=list)
    order: list[exp.Expr] = field(default_factory=list)
    where: list[exp.Expr] = field(default_factory=list)
    limit: int | None = None


def _settle_count(reading: _Reading) -> None:
    """"How many jobs were added in total" sums a measure; "how many stock prices do we have" counts rows."""
    if not reading.count or not reading.measures:
        return
    if any(agg for _, agg in reading.measures):
        reading.count = False
    elif reading.counted_measure:
        reading.measures = [(c, a) for c, a in reading.measures if c != reading.counted_measure]


def _shape(reading: _Reading) -> str:
    """Which of the seven shapes the reading calls for; rankings first, since they may also group."""
    multi = [f for f in reading.filters if f.op in ("in",) and f.kind in ("value", "year")]
    if reading.top is not None:
        return "top"
    if reading.bucket or _has_time_key(reading):
        return "time_series"
    if reading.keys:
        return "group"
    if multi and (reading.compare or reading.measures or reading.count):
        return "compare"
    if reading.count or reading.distinct:
        return "count"
    if reading.measures and (reading.compare or any(agg for _, agg in reading.measures)):
        return "aggregate"
    return "rows"


def _has_time_key(reading: _Reading) -> bool:
    """Whether a group key is a date column, which makes the shape a time series."""
    return any(reading.column(key).type in TIME_TYPES for key in reading.keys)


def plan_question(question: str, tables: Sequence[TableInfo], terms: Sequence[Term] = (), *,
                  dialect: str = "duckdb", values_of: ValuesOf | None = None) -> Plan:
    """Plan ``question`` over one of ``tables`` as SQL in ``dialect``; raise ``NoPlan`` with a reason when
    the question is outside the shapes this planner knows or mentions things the data does not have."""
    sqlglot.Dialect.get_or_raise(dialect)
    tokens = _guard(question)
    if not tables:
        raise NoPlan("there are no tables to query")
    catalog = _Catalog(tables, terms, values_of)
    bucket, used = _read_buckets(tokens)
    table, mentions = _choose_table(catalog, tokens, used)
    reading = _read(table, tokens, mentions, used, bucket)
    _settle_count(reading)
    shape = _shape(reading)
    _check_understood(reading, shape)
    query, name, explanation = _BUILDERS[shape](reading, dialect)
    query.where = [_condition(reading, f, dialect) for f in reading.filters]
    sql = _render(reading.table, query, dialect)
    where = _describe_filters(reading.filters)
    return Plan(sql=sql, result_name=name, tables=(table.name,), explanation=explanation + where + ".",
                terms_used=tuple(reading.terms), shape=shape)


def _dangling_aggregate(reading: _Reading) -> int | None:
    """Where an aggregate word has nothing to aggregate ("average mpg" when nothing is called mpg)."""
    if reading.measures:
        return None
    for index, token in enumerate(reading.tokens):
        if not reading.free(index) or _AGG_WORDS.get(token.norm) not in (AVG, SUM, MEDIAN) and \
                token.norm not in ("maximum", "minimum", "max", "min"):
            continue
        if token.norm == "total" and reading.norm(index + 1) in ("number", "count"):
            continue
        return index
    return None


def _check_understood(reading: _Reading, shape: str) -> None:
    """Refuse a plan that would silently ignore part of the question: an unsupported computation, an
    aggregate of nothing, a number or name left unexplained, several unknown words."""
    unsupported = _unsupported(reading)
    if unsupported:
        raise NoPlan(f"'{unsupported}' asks for more than this planner computes (counts, totals, averages, "
                     "minima, maxima, rankings)")
    dangling = _dangling_aggregate(reading)
    if dangling is not None:
        word = reading.tokens[dangling].text.lower()
        of = f" '{reading.tokens[dangling + 1].text}'" if dangling + 1 < len(reading.tokens) else ""
        raise NoPlan(f"could not tell which column of {reading.table.name} to take the {word} of{of}")
    unknown = _unknown_words(reading)
    numbers = _leftover_numbers(reading)
    if numbers:
        raise NoPlan(f"could not tell what {', '.join(numbers[:3])} refers to in {reading.table.name}")
    names = [word for word in unknown if _looks_like_name(reading, word)]
    if names:
        raise NoPlan(f"found no value '{names[0]}' in {reading.table.name}")
    if len(unknown) >= 2 or (unknown and shape == "rows"):
        words = ", ".join(f"'{word}'" for word in unknown[:4])
        raise NoPlan(f"{reading.table.name} has nothing matching {words}")
    if shape == "rows" and not (reading.listing or reading.filters or reading.measures):
        raise NoPlan(f"the question names {reading.table.name} but not what to compute or list")
    if shape == "rows" and reading.direction is not None:
        raise NoPlan(f"could not tell which column of {reading.table.name} to rank by")


# --- Building each shape -----------------------------------------------------------------------------------


def _col(name: str) -> exp.Column:
    """A quoted column reference."""
    return exp.column(name, quoted=True)


def _aggregate(agg: str | None, column: str, dialect: str) -> exp.Expr:
    """The aggregate function node; MEDIAN does not exist on SQLite and is refused there."""
    agg = agg or AVG
    if agg == MEDIAN and dialect == "sqlite":
        raise NoPlan("a median cannot be computed on SQLite")
    functions: dict[str, type[exp.Func]] = {AVG: exp.Avg, SUM: exp.Sum, MIN: exp.Min, MAX: exp.Max,
                                            MEDIAN: exp.Median}
    return functions[agg](this=_col(column))


def _measure_alias(agg: str | None, column: str) -> str:
    """``average_horsepower``, ``total_yield``…"""
    return f"{_AGG_NAMES[agg or AVG]}_{snake(column)}"


def _measures(reading: _Reading, dialect: str, default: str | None = AVG) -> list[tuple[exp.Expr, str]]:
    """Each measure as an aliased aggregate and its alias (``average_horsepower``)."""
    return [(exp.alias_(_aggregate(agg or default, column, dialect), _measure_alias(agg or default, column),
                        quoted=True), _measure_alias(agg or default, column))
            for column, agg in reading.measures]


def _count_expression(reading: _Reading) -> tuple[exp.Expr, str]:
    """COUNT(*) named after the rows, or COUNT(DISTINCT column)."""
    if reading.distinct:
        alias = f"distinct_{snake(reading.distinct)}"
        return exp.alias_(exp.Count(this=exp.Distinct(expressions=[_col(reading.distinct)])), alias,
                          quoted=True), alias
    alias = f"number_of_{_rows_called(reading.table)}"
    return exp.alias_(exp.Count(this=exp.Star()), alias, quoted=True), alias


def _rows_called(table: TableInfo) -> str:
    """What the rows are, for naming a count: a plural table name ("cars"), else the one noun of a
    description saying "one row per day" (→ "days"), else the table name."""
    name = snake(table.name.split(".")[-1])
    nouns = _row_nouns(table.description or "")
    if name.endswith("s") or len(nouns) != 1:
        return name
    noun = next(iter(nouns))
    return noun if noun.endswith("s") else f"{noun}s"


def _values(reading: _Reading, dialect: str) -> list[tuple[exp.Expr, str]]:
    """What a grouped shape computes: the measures, or a count of rows when the question counts or names
    the rows ("airports per state"); "sales by region", with nothing called sales, is not a count."""
    if reading.measures:
        return _measures(reading, dialect)
    if not (reading.count or reading.distinct or _names_rows(reading)):
        by = " and ".join(reading.keys) or "group"
        raise NoPlan(f"could not tell what to compute for each {by} of {reading.table.name}")
    return [_count_expression(reading)]


def _names_rows(reading: _Reading) -> bool:
    """Whether the question names the table's rows ("airports", "days")."""
    words = _table_words(reading.table)
    return any(token.stem in words for token in reading.tokens if token.kind == "word")


def _build_count(reading: _Reading, dialect: str) -> tuple[_Query, str, str]:
    """SELECT COUNT(*) (or COUNT(DISTINCT column))."""
    expression, alias = _count_expression(reading)
    what = f"distinct {reading.distinct} values" if reading.distinct else "rows"
    return _Query([expression]), alias, f"Counts the {what} of {reading.table.name}"


def _build_aggregate(reading: _Reading, dialect: str) -> tuple[_Query, str, str]:
    """SELECT AVG/SUM/MIN/MAX/MEDIAN of the measures, no grouping."""
    measures = _measures(reading, dialect)
    name = "_and_".join(alias for _, alias in measures)
    words = ", ".join(f"the {_AGG_NAMES[agg or AVG]} of {column}" for column, agg in reading.measures)
    return _Query([expression for expression, _ in measures]), name, f"Computes {words} in {reading.table.name}"


def _keys(reading: _Reading, dialect: str) -> list[tuple[exp.Expr, exp.Expr, str]]:
    """Each group key as (what to group by, what to select, its name). A date column is grouped by the
    bucket asked for, else by what its name says it holds (a ``year`` column by year), else by day."""
    keys: list[tuple[exp.Expr, exp.Expr, str]] = []
    for key in reading.keys:
        if reading.column(key).type not in TIME_TYPES:
            keys.append((_col(key), _col(key), key))
            continue
        named = "year" if stem(key.lower()) == "year" else "month" if "month" in key.lower() else "day"
        unit = reading.bucket or named
        grouped = _bucket(_col(key), unit, dialect)
        keys.append((grouped, exp.alias_(grouped.copy(), unit, quoted=True), unit))
    return keys


def _build_group(reading: _Reading, dialect: str) -> tuple[_Query, str, str]:
    """The measures (or a count) for each value of the group keys, ordered by the keys."""
    keys = _keys(reading, dialect)
    values = _values(reading, dialect)
    positions: list[exp.Expr] = [exp.Literal.number(i + 1) for i in range(len(keys))]
    query = _Query([selected for _, selected, _ in keys] + [value for value, _ in values],
                   group=[grouped for grouped, _, _ in keys], order=positions)
    by = " and ".join(name for _, _, name in keys)
    name = f"{'_and_'.join(alias for _, alias in values)}_by_{snake(by)}"
    return query, name, f"Computes {_value_words(reading)} of {reading.table.name} for each {by}"


def _build_compare(reading: _Reading, dialect: str) -> tuple[_Query, str, str]:
    """A group by the column whose values the question lists ("Europe and Japan", "2014 and 2015"),
    restricted to those values by the IN filter already read."""
    multi = next(f for f in reading.filters if f.op == "in" and f.kind in ("value", "year"))
    if multi.kind == "year":
        reading.bucket = "year"
    reading.keys = [multi.column, *reading.keys]
    query, name, explanation = _build_group(reading, dialect)
    listed = " and ".join(str(_plain(v)) for v in multi.values)
    return query, name, f"Compares {listed}: {explanation[0].lower()}{explanation[1:]}"


def _build_time_series(reading: _Reading, dialect: str) -> tuple[_Query, str, str]:
    """A group by the table's date column cut into the bucket asked for (or its own grain)."""
    column = _time_column(reading)
    if column is None:
        raise NoPlan(f"{reading.table.name} has no date column to group by {reading.bucket}")
    if column.name not in reading.keys:
        reading.keys.insert(0, column.name)
    elif reading.keys[0] != column.name:
        reading.keys.remove(column.name)
        reading.keys.insert(0, column.name)
    if reading.bucket is None:
        reading.bucket = "year" if stem(column.name.lower()) == "year" else None
    if column.type not in TIME_TYPES:
        reading.bucket = None
    return _build_group(reading, dialect)


def _label_columns(reading: _Reading, skip: set[str]) -> list[str]:
    """Columns that say which row is which in a top-N list: the table's text and date columns."""
    labels = [c.name for c in reading.table.columns if c.type not in NUMBER_TYPES and c.name not in skip]
    return labels[:3]


def _build_top(reading: _Reading, dialect: str) -> tuple[_Query, str, str]:
    """The N best rows by a measure, with the text and date columns that tell them apart; NULLs are left
    out so they never rank first."""
    limit = reading.top or 1
    descending = reading.descending if reading.direction is None else reading.direction
    if reading.order_measure and not any(column == reading.order_measure for column, _ in reading.measures):
        reading.measures.insert(0, (reading.order_measure, None))
    order_word = "highest" if descending else "lowest"
    if reading.keys:
        return _build_top_groups(reading, dialect, limit, descending, order_word)
    if not reading.measures:
        raise NoPlan(f"could not tell what to rank the rows of {reading.table.name} by")
    column = reading.measures[0][0]
    labels = _label_columns(reading, {column})
    select: list[exp.Expr] = [_col(name) for name in [*labels, column]]
    query = _Query(select, order=[exp.Ordered(this=_col(column), desc=descending)], limit=limit)
    reading.filters.append(_Filter(column, "not null", (), "number"))
    table = reading.table.name.split(".")[-1]
    name = f"{'top' if descending else 'bottom'}_{limit}_{snake(table)}_by_{snake(column)}"
    return query, name, f"Lists the {limit} rows of {reading.table.name} with the {order_word} {column}"


def _build_top_groups(reading: _Reading, dialect: str, limit: int, descending: bool,
                      order_word: str) -> tuple[_Query, str, str]:
    """The N best groups by their aggregate (or count), ranked by the value column's position."""
    if reading.measures:
        reading.measures = [(column, agg or _top_default(reading)) for column, agg in reading.measures]
    keys = _keys(reading, dialect)
    values = _values(reading, dialect)
    first_value = exp.Literal.number(len(keys) + 1)
    query = _Query([selected for _, selected, _ in keys] + [value for value, _ in values],
                   group=[grouped for grouped, _, _ in keys],
                   order=[exp.Ordered(this=first_value, desc=descending)], limit=limit)
    by = " and ".join(name for _, _, name in keys)
    name = f"{'top' if descending else 'bottom'}_{limit}_{snake(by)}_by_{values[0][1]}"
    return query, name, (f"Lists the {limit} {by} values of {reading.table.name} ranked by "
                         f"{_value_words(reading)}, {order_word} first")


def _top_default(reading: _Reading) -> str:
    """"Which variety has the most yield" sums; "which symbol has the highest price" takes the maximum."""
    words = {token.norm for token in reading.tokens}
    if words & {"most", "least"}:
        return SUM
    return MIN if words & {"lowest", "smallest", "minimum"} else MAX


def _value_words(reading: _Reading) -> str:
    """The values computed, in words."""
    if not reading.measures:
        return f"the number of {'distinct ' + reading.distinct if reading.distinct else 'rows'}"
    return ", ".join(f"the {_AGG_NAMES[agg or AVG]} {column}" for column, agg in reading.measures)


def _build_rows(reading: _Reading, dialect: str) -> tuple[_Query, str, str]:
    """Every column of the filtered rows: a listing leaves the choice of columns to the reader."""
    table = reading.table.name.split(".")[-1]
    return _Query([exp.Star()]), f"{snake(table)}_rows", f"Lists the rows of {reading.table.name}"


_BUILDERS: dict[str, Callable[[_Reading, str], tuple[_Query, str, str]]] = {
    "count": _build_count, "aggregate": _build_aggregate, "group": _build_group, "compare": _build_compare,
    "time_series": _build_time_series, "top": _build_top, "rows": _build_rows,
}


# --- Dates, conditions and rendering -----------------------------------------------------------------------


_SQLITE_BUCKETS = {
    "day": "DATE(x)",
    "week": "DATE(x, '-' || ((CAST(STRFTIME('%w', x) AS INTEGER) + 6) % 7) || ' days')",
    "month": "DATE(x, 'start of month')",
    "quarter": "DATE(x, 'start of month', '-' || ((CAST(STRFTIME('%m', x) AS INTEGER) - 1) % 3) || ' months')",
    "year": "CAST(STRFTIME('%Y', x) AS INTEGER)",
}


def _bucket(column: exp.Expr, unit: str, dialect: str) -> exp.Expr:
    """The start of the ``unit`` a date falls in (the year as a number for "year")."""
    if dialect == "sqlite":
        return _substitute(sqlglot.parse_one(_SQLITE_BUCKETS[unit], read="sqlite"), column)
    if unit == "year":
        return exp.Extract(this=exp.var("YEAR"), expression=column)
    return _substitute(sqlglot.parse_one(f"DATE_TRUNC('{unit.upper()}', x)", read="duckdb"), column)


def _year_of(column: exp.Expr, dialect: str) -> exp.Expr:
    """The year of a date column as a number, per dialect."""
    return _bucket(column, "year", dialect)


def _substitute(template: exp.Expr, column: exp.Expr) -> exp.Expr:
    """The template with its placeholder column ``x`` replaced by ``column``."""
    def replace(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Column) and node.name == "x" and not node.table:
            return column.copy()
        return node

    return template.transform(replace)


def _literal(value: str | float) -> exp.Expr:
    """A value as a literal node: quoting and escaping are sqlglot's, per dialect."""
    if isinstance(value, str):
        return exp.Literal.string(value)
    return exp.Literal.number(int(value) if float(value).is_integer() else value)


def _date(value: str) -> exp.Expr:
    """CAST('yyyy-mm-dd' AS DATE), which sqlglot writes as DATE('…') for SQLite."""
    return exp.cast(exp.Literal.string(value), exp.DataType.build("DATE"))


def _condition(reading: _Reading, item: _Filter, dialect: str) -> exp.Expr:
    """A filter as a sqlglot condition: literals for values, date ranges for years of date columns."""
    column = _col(item.column)
    if item.op == "not null":
        return exp.Not(this=exp.Is(this=column, expression=exp.Null()))
    if item.kind == "year":
        return _year_condition(reading, item, dialect)
    if item.kind == "date":
        return _compare(column, item.op, [_date(str(v)) for v in item.values])
    return _compare(column, item.op, [_literal(v) for v in item.values])


def _compare(column: exp.Expr, op: str, values: list[exp.Expr]) -> exp.Expr:
    """``column op value(s)`` with the operator as a node, never as text."""
    if op in ("in", "not in"):
        condition: exp.Expr = exp.In(this=column, expressions=values)
        return exp.Not(this=condition) if op == "not in" else condition
    operators: dict[str, type[exp.Binary]] = {"=": exp.EQ, "<>": exp.NEQ, ">": exp.GT, ">=": exp.GTE,
                                              "<": exp.LT, "<=": exp.LTE}
    return operators[op](this=column, expression=values[0])


def _year_condition(reading: _Reading, item: _Filter, dialect: str) -> exp.Expr:
    """Years compare with the year of a date column as a date range (so an index can serve it), with an
    integer year column as numbers."""
    column_info = reading.column(item.column)
    column = _col(item.column)
    years = [int(float(v)) for v in item.values]
    if column_info.type not in TIME_TYPES:
        return _compare(column, item.op, [exp.Literal.number(y) for y in years])
    if item.op == "in":
        return exp.In(this=_year_of(column, dialect), expressions=[exp.Literal.number(y) for y in years])
    year = years[0]
    first, next_first = _date(f"{year:04d}-01-01"), _date(f"{year + 1:04d}-01-01")
    if item.op == "=":
        return exp.and_(exp.GTE(this=column, expression=first), exp.LT(this=column.copy(), expression=next_first))
    bounds: dict[str, exp.Expr] = {
        ">": exp.GTE(this=column, expression=next_first), ">=": exp.GTE(this=column, expression=first),
        "<": exp.LT(this=column, expression=first), "<=": exp.LT(this=column, expression=next_first),
    }
    return bounds[item.op]


def _table_expression(name: str) -> exp.Table:
    """A table name, possibly ``schema.table`` or ``catalog.schema.table``, quoted part by part."""
    parts = name.split(".")
    table = exp.Table(this=exp.to_identifier(parts[-1], quoted=True))
    if len(parts) >= 2:
        table.set("db", exp.to_identifier(parts[-2], quoted=True))
    if len(parts) >= 3:
        table.set("catalog", exp.to_identifier(parts[-3], quoted=True))
    return table


def _render(table: TableInfo, query: _Query, dialect: str) -> str:
    """The assembled query as one SELECT in ``dialect``, the table quoted part by part."""
    select = exp.Select(expressions=query.select).from_(_table_expression(table.name), copy=False)
    if query.where:
        select = select.where(exp.and_(*query.where), copy=False)
    if query.group:
        select = select.group_by(*query.group, copy=False)
    if query.order:
        select = select.order_by(*query.order, copy=False)
    if query.limit is not None:
        select = select.limit(query.limit, copy=False)
    return select.sql(dialect=dialect)


def _plain(value: str | float) -> str | int | float:
    """Whole floats as ints, for explanations."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _describe_filters(filters: list[_Filter]) -> str:
    """The filters in words, for the explanation."""
    described = []
    for item in filters:
        if item.op == "not null":
            continue
        values = [_plain(v) for v in item.values]
        shown = ", ".join(repr(v) if isinstance(v, str) else str(v) for v in values)
        if item.kind == "year":
            subject = f"the year of {item.column}"
        else:
            subject = item.column
        op = {"=": "is", "<>": "is not", "in": "is one of", "not in": "is none of"}.get(item.op, item.op)
        described.append(f"{subject} {op} {shown}")
    return f", where {' and '.join(described)}" if described else ""


__all__ = ["MAX_QUESTION_CHARACTERS", "NoPlan", "Plan", "Term", "plan_question"]
