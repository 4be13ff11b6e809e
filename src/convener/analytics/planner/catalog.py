"""The catalog: what phrases of a question can refer to (tables, columns, values, glossary terms), and
the table a question is about."""

from __future__ import annotations

from collections import Counter

import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import pairwise, permutations

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from convener.analytics.planner.base import MAX_VALUES_PER_COLUMN, NoPlan, Term, ValuesOf
from convener.analytics.planner.fronted import fronted_spans, verbs_before_amounts
from convener.analytics.planner.described import described_initials, described_spans, unsaid_spans, what_it_is_spans
from convener.analytics.planner.units import CONVERSIONS, unit_named, unit_of
from convener.analytics.planner.vocabulary import (
    KINDS,
    _ADJECTIVE_SUFFIXES,
    _SHARE_WORDS,
    _AGG_WORDS,
    _AGG_WORDS_PLAIN,
    _BUCKETS,
    _COMPARATORS,
    _DIMENSIONS,
    _DIRECTION_PREPOSITIONS,
    _FILLER,
    _GENERIC_PARTS,
    _IRREGULAR_DIMENSIONS,
    _TIME_HIGH,
    _TIME_LOW,
    _UNITS,
    parting,
)
from convener.analytics.shapes import BOOLEAN, DATE, NUMBER_TYPES, STRING, TIME_TYPES, ColumnInfo, TableInfo
from convener.analytics.wording import (
    CONTENT_STOPWORDS,
    MEANINGFUL,
    MONTHS,
    Token,
    number_word,
    parted,
    phrase,
    snake,
    split_identifier,
    stem,
    tokenize,
    value_tokens,
)


# --- The catalog: what phrases of a question can refer to --------------------------------------------------


@dataclass(frozen=True)
class _Target:
    """What a phrase refers to: a column, or a value of a column (``value`` set). ``term`` names the
    glossary term it came through, if any."""

    table: str
    column: str
    value: str | None = None
    term: str | None = None
    formula: str | None = None
    """For a glossary term defined as arithmetic over columns: that expression (SQL), the column being
    the term's name."""
    alternatives: tuple[str, ...] = ()
    """Further values the phrase names as well as ``value`` ("Newark": every airport named with it)."""


@dataclass(frozen=True)
class _Candidate:
    """A phrase of the question (tokens ``start``..``end``) and what it may refer to."""

    start: int
    end: int
    target: _Target
    strength: float
    source: str  # name, synonym, glossary, value, adjective, partial, description, what it is
    name_word: bool = False
    """A word inside a few multi-word values, naming them all (``_name_word_spans``)."""


@dataclass
class _ColumnKeys:
    """The ways a column is named: its whole name, synonyms and (weaker) single distinctive parts."""

    table: TableInfo
    column: ColumnInfo
    names: list[tuple[str, ...]] = field(default_factory=list)
    parts: list[tuple[str, ...]] = field(default_factory=list)



_GLOSSED = re.compile(r"\b([A-Za-z]+) \(([A-Za-z]+(?: [A-Za-z]+)?)\)")


def _glossed_names(column: ColumnInfo) -> list[tuple[str, ...]]:
    """A word of a column's name glossed in its description by another in parentheses ("Study (season) the
    penguin was sampled in", "Length of the bill (culmen)"): the name with that word said the other way
    ("season", "culmen length") names the column too."""
    names: list[tuple[str, ...]] = []
    whole = tuple(word for word in phrase(column.name) if word not in _UNITS)
    for word, gloss in _GLOSSED.findall(column.description or ""):
        said = phrase(word)
        if len(said) == 1 and said[0] in whole:
            at = whole.index(said[0])
            names.append((*whole[:at], *phrase(gloss), *whole[at + 1:]))
    return names


class _Catalog:
    """Every table's names, columns, values and the glossary, indexed for matching against a question."""

    def __init__(self, tables: Sequence[TableInfo], terms: Sequence[Term], values_of: ValuesOf | None,
                 known: Sequence[TableInfo] = ()) -> None:
        self.tables = {table.name: table for table in tables}
        self.text = ""
        """The question as written, when known: what separates its words ("in-store" vs "in stores")."""
        self._values_of = values_of
        self._values: dict[tuple[str, str], list[str]] = {}
        self.columns = [self._column_keys(table, column) for table in tables for column in table.columns]
        # how many columns of the catalog each part of a name belongs to: a part only one column has
        # ("flipper" of flipper_length_mm) names that column as surely as a table's word names its table
        self.part_owners = Counter(part for keys in self.columns for part in set(keys.parts))
        self.terms = [(term, target) for term in terms for target in self._term_targets(term)]
        self.row_words = set().union(*(_table_words(table) for table in tables)) if tables else set()
        self.described = {word for table in (*tables, *known)
                          for text in (table.description, *(c.description for c in table.columns))
                          for word in re.findall(r"[a-z]+", (text or "").lower())}
        """Every word the descriptions of these tables (and of the ``known`` ones, not read into the catalog)
        and their columns use."""
        self._candidates: tuple[tuple[tuple[Token, ...], frozenset[int]], list[_Candidate]] | None = None

    def _another_word(self, window: Sequence[Token], parts: tuple[str, ...], column: ColumnInfo) -> bool:
        """Whether a word of ``window`` that goes on past the start of a column's name it begins with is a
        word the schema's descriptions use elsewhere, and this column's does not: another thing of its own
        ("aircraft", which planes are said to be, for ``air`` of air_time), not that column's name cut short
        ("airborne", "departure" for ``dep`` of dep_delay, "Departure delay")."""
        own = set(re.findall(r"[a-z]+", (column.description or "").lower()))
        return any(token.norm != part and token.norm.startswith(part) and token.norm in self.described
                   and token.norm not in own for token in window for part in parts)

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
            bare = tuple(word for word in words if word not in _UNITS)
            if bare and bare != words:
                keys.names.append(bare)  # "bill depth" for bill_depth_mm
        for words in _glossed_names(column):
            keys.names.append(words)
        whole = phrase(column.name)
        if column.type == BOOLEAN:
            # "customer_active": only the condition word ("active") says the column is true, never "customer"
            if len(whole) > 1 and whole[-1] not in _GENERIC_PARTS:
                keys.parts.append((whole[-1],))
        elif len(whole) > 1:
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
        for table in self.tables.values():
            formula = _formula(description, tuple(c.name for c in table.columns if c.type in NUMBER_TYPES))
            if formula is not None:
                return [_Target(table.name, snake(term.name), None, term.name, formula)]
        for table in self.tables.values():
            condition = _condition_of(description, table)
            if condition is not None:
                return [_Target(table.name, snake(term.name), "true", term.name, condition)]
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
        """Every phrase of the question and what it may refer to (kept: asked again for the same tokens)."""
        key = (tuple(tokens), frozenset(used))
        if self._candidates is None or self._candidates[0] != key:
            self._candidates = (key, self._find_candidates(tokens, used))
        return list(self._candidates[1])

    def _find_candidates(self, tokens: list[Token], used: set[int]) -> list[_Candidate]:
        # "data" names the data as a whole, never a column (its stem is date's: "any flight in the data")
        # (a short word written in capitals is a code as written: "an AS flight" is Alaska's, not the word "as")
        content = [i for i, token in enumerate(tokens)
                   if i not in used and (not token.is_stopword or token.text.isupper() and len(token.text) > 1)
                   and token.kind in ("word", "number")
                   and token.norm not in _DATA_WORDS]
        found: list[_Candidate] = []
        for keys in self.columns:
            target = _Target(keys.table.name, keys.column.name)
            if keys.column.type == BOOLEAN:
                target = _Target(keys.table.name, keys.column.name, "true")
                found.extend(_negated_spans(tokens, content, keys))
            named = {stem(word) for word in split_identifier(keys.table.name.split(".")[-1]).lower().split()}
            for words in keys.names:
                for start, end, exact in _phrase_spans(tokens, content, words, True, self.text):
                    if end - start == 1 and len(words) == 1 and tokens[start].stem in named \
                            and tokens[start].norm != words[0] and tokens[start].norm.endswith("s"):
                        continue  # "flights" names the rows of flights, not its column "flight"
                    if end - start == 1 and len(words) == 1 and tokens[start].stem in named \
                            and _one_row_before(tokens, start) and not _describes(keys.column, tokens, end):
                        continue  # "for a flight going to ORD", "any single flight", "an EWR to SFO flight"
                    if _said_before_name(keys.column, tokens, content, start, words):
                        start -= 1  # "full name" where the description says "Full name of the airline"
                    found.append(_Candidate(start, end, target, 3.0 + len(words) - (0 if exact else 0.5), "name"))
            entity = _table_words(keys.table)
            for words in keys.parts:
                for start, end, exact in _phrase_spans(tokens, content, words, True, self.text):
                    if not exact and tokens[start].stem in self.row_words:
                        continue  # "airports" is a table, not an abbreviation of air_time
                    if not exact and self._another_word(tokens[start:end], words, keys.column):
                        continue  # "aircraft" is no abbreviation of air_time: planes are "(aircraft)"
                    if tokens[start].stem not in entity:  # "orders" is the table, not order_id
                        strength = (2.0 if self.part_owners[words] == 1 else 1.0) if exact else 0.8
                        found.append(_Candidate(start, end, target, strength, "partial"))
            found.extend(_compound_spans(tokens, content, keys, target))
            if keys.column.type == BOOLEAN:
                found.extend(_Candidate(start, end, target, 3.0, "description") for start, end in described_spans(
                    tokens, content, keys.column.description or "", phrase(keys.column.name), self.row_words))
                found.extend(_Candidate(start, end, _Target(keys.table.name, keys.column.name, "false"),
                                        3.0, "description")
                             for start, end in unsaid_spans(tokens, content, keys.column.description or "",
                                                       self.row_words))
            elif keys.column.description:
                spans = what_it_is_spans(tokens, content, keys.column.description, phrase(keys.column.name),
                                         self.text)
                found.extend(_Candidate(start, end, target, 2.5, "what it is") for start, end in spans)
        # "what portion of …" asks a share, of no column whose name it starts with ("port")
        found = [c for c in found if not (c.source in ("name", "partial") and tokens[c.start].norm in _SHARE_WORDS
                                          and tokens[c.start].norm not in phrase(c.target.column))]
        # what a description says a column is gives way to a column's name said in the same words
        # ("manufacturing jobs": the manufacturing column, though two others are described as such jobs)
        named_at = {i for c in found if c.source == "name" for i in range(c.start, c.end)}
        found = [c for c in found
                 if c.source != "what it is" or not named_at.intersection(range(c.start, c.end))]
        found.extend(_unit_spans(tokens, content, self.columns))
        glossed: list[tuple[_Candidate, int]] = []
        # "made up the most time" says "time made up": a term's words around a word of degree, which is read
        # as the question's own (the most of the term)
        undegreed = [i for i in content if tokens[i].norm not in _DEGREE_WORDS]
        for term, target in self.terms:
            for label in (term.name, *term.labels):
                words = phrase(label)
                for start, end, _ in _phrase_spans(tokens, undegreed, words, False, self.text):
                    glossed.append((_Candidate(start, end, target, 3.2 + len(words), "glossary"),
                                    end - start - len(tokenize(label))))
                # "how much time did flights make up": the noun alone, its verb read with it (see ``fronted``)
                glossed.extend((_Candidate(start, start + 1, target, 3.2 + len(words), "glossary"), 0)
                               for start, _ in fronted_spans(tokens, self.text, [label], term.description))
                # "which carrier flies fastest": the noun a formula is named by ("average speed"), measured by an
                # adjective (not a word before it: "bill length to depth ratio" is no length)
                if target.formula is not None and words:
                    glossed.extend((_Candidate(at, at + 1, target, 2.0, "glossary"), 0) for at in undegreed
                                   if (dimension := _dimension(tokens[at].norm)) is not None
                                   and dimension[2] != "base" and words[-1] in {stem(noun) for noun in dimension[0]})
                # "flights that made up more than 40 minutes": its verb before an amount
                glossed.extend((_Candidate(start, end, target, 3.2 + len(words), "glossary"), 0)
                               for start, end in verbs_before_amounts(tokens, label)
                               if all(at in undegreed for at in range(start, end)))
        # A term's words said apart ("flights were late" for "late flights") give way to its words said side
        # by side over the same tokens ("late arrivals").
        found.extend(candidate for candidate, gaps in glossed
                     if not gaps or not any(other.target == candidate.target and not other_gaps
                                            and other.start < candidate.end and candidate.start < other.end
                                            for other, other_gaps in glossed))
        found.extend(self._value_candidates(tokens, used))
        return found

    def _row_word_indexes(self, tokens: list[Token]) -> set[int]:
        """Where the question names some table's rows ("Flights whose …"): never a part of a name."""
        return {index for index, token in enumerate(tokens) if token.stem in self.row_words}

    def _value_candidates(self, tokens: list[Token], used: set[int]) -> list[_Candidate]:
        found: list[_Candidate] = []
        stems = [token.stem if token.kind == "word" else token.norm for token in tokens]
        for keys in self.columns:
            if keys.column.type != STRING:
                continue
            values = tuple(self.values(keys.table, keys.column))
            found.extend(_value_spans(tokens, stems, used, keys, values, self.text))
            found.extend(_prefix_spans(tokens, used, keys, values,
                                       self.row_words if len(values) > _FEW_VALUES else frozenset()))
            if len(values) <= _FEW_VALUES:
                found.extend(_adjective_spans(tokens, used, keys, values))
                found.extend(_first_word_spans(tokens, used, keys, list(values)))
            found.extend(_name_word_spans(tokens, used | self._row_word_indexes(tokens), keys, values))
        # "an arrival delay over 60 minutes": the number a comparison binds is no value ("60", a plane model)
        return [c for c in found if not (c.end - c.start == 1 and tokens[c.start].kind == "number"
                                         and _compared(tokens, c.start))]


def _compared(tokens: Sequence[Token], index: int) -> bool:
    """Whether the words right before ``index`` compare with it ("over", "more than", "at least")."""
    return any(index >= len(words) and tuple(t.norm for t in tokens[index - len(words):index]) == words
               for words, _ in _COMPARATORS)


def _unit_spans(tokens: list[Token], content: list[int], columns: Sequence[_ColumnKeys]) -> list[_Candidate]:
    """"Sum of miles flown": a unit that exactly one number column of a table is in names that column,
    a little less than its name would."""
    found: list[_Candidate] = []
    for index in content:
        unit = unit_named(tokens[index].norm) if tokens[index].kind == "word" else None
        if unit is None:
            continue
        by_table: dict[str, list[_ColumnKeys]] = {}
        converted: set[str] = set()  # tables with a column the unit is a conversion of
        for keys in columns:
            if keys.column.type not in NUMBER_TYPES:
                continue
            if (found_in := unit_of(keys.column)) == unit:
                by_table.setdefault(keys.table.name, []).append(keys)
            elif found_in is not None and (found_in, unit) in CONVERSIONS:
                converted.add(keys.table.name)
        # ("Total hours in the air … for flights out of LaGuardia": the flights' minutes in the air, in hours,
        # not the airports' time zones, the one column of theirs in hours)
        found.extend(_Candidate(index, index + 1, _Target(table, only[0].column.name), 2.0, "partial")
                     for table, only in by_table.items() if len(only) == 1 and not converted - {table})
    return found


def _compound_spans(tokens: list[Token], content: list[int], keys: _ColumnKeys, target: _Target) -> list[_Candidate]:
    """Two words a one-word column name runs together, the first whole or as its initial and the second cut
    short: "tail numbers" for ``tailnum``, "time zone" for ``tzone``."""
    words = split_identifier(keys.column.name).lower().split()
    if len(words) != 1 or len(words[0]) < 5:
        return []
    name = words[0]
    found = []
    for first, second in zip(content, content[1:], strict=False):
        if second != first + 1 or tokens[first].kind != "word" or tokens[second].kind != "word":
            continue
        head, tail = tokens[first].norm, tokens[second]
        for cut in {1, len(head)}:
            rest = name[cut:]
            if name.startswith(head[:cut]) and len(rest) >= 3 and (tail.norm.startswith(rest) or tail.stem == rest):
                found.append(_Candidate(first, second + 1, target, 4.5, "name"))
                break
    return found


_NEGATIVE_PREFIXES = ("non", "un", "in", "dis")


def _negated_spans(tokens: list[Token], content: list[int], keys: _ColumnKeys) -> list[_Candidate]:
    """"inactive", "unreturned", "nonflagship": the condition word of a true/false column with a negative
    prefix, as that column being false."""
    words = {name[-1] for name in (*keys.names, *keys.parts) if name}
    found = []
    for index in content:
        token = tokens[index]
        for prefix in _NEGATIVE_PREFIXES:
            rest = stem(token.norm[len(prefix):])
            if token.kind == "word" and token.norm.startswith(prefix) and len(rest) > 2 \
                    and any(rest == word or _share_stem(rest, word) for word in words):
                found.append(_Candidate(index, index + 1, _Target(keys.table.name, keys.column.name, "false"),
                                        4.0, "name"))
                break
    return found


_FORMULA_SIGNS = str.maketrans({"×": "*", "·": "*", "∗": "*", "÷": "/", "−": "-", "–": "-", "—": "-"})
_FORMULA_TOKEN = re.compile(r"\d+(?:\.\d+)?|[A-Za-z_]\w*|[-+*/()]")
_ARITHMETIC = (exp.Column, exp.Literal, exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Paren, exp.Neg, exp.Identifier)


@lru_cache(maxsize=256)
def _formula(description: str, columns: tuple[str, ...]) -> str | None:
    """The arithmetic over ``columns`` a glossary description defines ("Revenue: quantity × price ×
    (1 − discount)"), as SQL; None when it defines none. The longest stretch of the description made of
    column names, numbers, operators and parentheses that sqlglot parses into nothing but arithmetic over
    those columns (so no function call, subquery or unknown name can come in through a glossary)."""
    known = {column.lower(): column for column in columns}
    tokens = _FORMULA_TOKEN.findall(description.translate(_FORMULA_SIGNS))
    best: str | None = None
    for first in range(len(tokens)):
        for last in range(len(tokens), first, -1):
            window = tokens[first:last]
            names = [t for t in window if t[0].isalpha() or t[0] == "_"]
            if not names or any(name.lower() not in known for name in names) \
                    or not any(t in "+-*/" for t in window) or (best and len(" ".join(window)) <= len(best)):
                continue
            text = " ".join(known.get(t.lower(), t) for t in window)
            try:
                tree = sqlglot.parse_one(text)
            except (SqlglotError, RecursionError):
                continue
            if all(isinstance(node, _ARITHMETIC) for node in tree.walk()):
                best = tree.sql()
    return best


_CONDITION = re.compile(r"([A-Za-z_]\w*)\s*(>=|<=|<>|!=|>|<|=)\s*(-?\d+(?:\.\d+)?|true|false)\b", re.IGNORECASE)
_COMPARISONS = (exp.GT, exp.GTE, exp.LT, exp.LTE, exp.EQ, exp.NEQ, exp.Column, exp.Literal, exp.Boolean,
                exp.Neg, exp.Identifier)


def _condition_of(description: str, table: TableInfo) -> str | None:
    """The condition a glossary description defines ("flights whose arr_delay > 15", "cancelled = true"):
    one column of ``table`` compared with a number or true/false, as SQL checked with sqlglot; else None."""
    for name, op, value in _CONDITION.findall(description):
        column = table.column(name)
        if column is None or (value.lower() in ("true", "false")) != (column.type == BOOLEAN) \
                or column.type not in NUMBER_TYPES | {BOOLEAN}:
            continue
        try:
            tree = sqlglot.parse_one(f"{column.name} {op} {value}")
        except (SqlglotError, RecursionError):
            continue
        if all(isinstance(node, _COMPARISONS) for node in tree.walk()):
            return tree.sql()
    return None


_ONE_ROW = frozenset({"a", "an", "any", "single", "one"})
"""Words before the rows' noun that make it one row ("a flight"); "each flight" may be a group, by a column."""
_ROUTE_WORDS = frozenset({"to", "from"})
"""Words between codes that qualify a row's noun ("an EWR to SFO flight"); "EWR-SFO" is two words already."""


def _one_row_before(tokens: list[Token], noun: int) -> bool:
    """Whether a word of ``_ONE_ROW`` makes the noun at ``noun`` one row: right before it, or before codes that
    qualify it ("an EWR to SFO flight", "a JFK flight"), which are written in capitals."""
    index = noun - 1
    while index >= 0 and noun - index <= 4 and (tokens[index].norm in _ROUTE_WORDS or (
            tokens[index].text.isupper() and tokens[index].text.isalnum() and len(tokens[index].text) > 1)):
        index -= 1
    return index >= 0 and tokens[index].norm in _ONE_ROW


def _said_before_name(column: ColumnInfo, tokens: list[Token], content: list[int], start: int,
                      words: tuple[str, ...]) -> bool:
    """Whether the word before a column's name said at ``start`` is the one its description says right before
    that name ("full name": "Full name of the airline"), so that the two are one mention."""
    said = phrase(column.description or "")
    before = start - 1
    # the name as the question says it, where the description says it so too ("actual departure time": dep_time,
    # "Actual departure time, local")
    spoken = tuple(tokens[i].stem for i in content if i >= start)[:len(words)]
    # (a word of structure is the question's own: "average wind" where wind is "Average wind speed")
    return before in content and tokens[before].kind == "word" and not _common(tokens[before].norm) \
        and not parted(tokens, before, start) and any(
        said[i + 1:i + 1 + len(words)] in (words, spoken) and said[i] == tokens[before].stem
        for i in range(len(said) - len(words)))


def _describes(column: ColumnInfo, tokens: list[Token], index: int) -> bool:
    """Whether the word at ``index`` continues the column's description ("a flight number")."""
    return index < len(tokens) and tokens[index].kind == "word" \
        and tokens[index].norm in (column.description or "").lower().split()


def _names(description: str, column: str) -> bool:
    """Whether a description names a column as a whole word."""
    return re.search(rf"(?<![\w.]){re.escape(column)}(?![\w])", description, re.IGNORECASE) is not None


def _token_matches(token: Token, part: str, abbreviations: bool, alone: bool = True) -> tuple[bool, bool]:
    """(matches, exactly): a question word matches a name part when their stems agree or it is the part
    compared ("lowest", "hotter" for "low", "hot"); for column names also when the part abbreviates it
    ("temp" → "temperature", "max" → "maximum") or the two share a long stem ("weigh"/"weight",
    "generate"/"generation")."""
    if token.stem == part or token.norm == part or token.norm == part + "s" and len(part) > 1:
        return True, True  # (the stemmer keeps short plurals whole: "IDs" for "id")
    if token.kind != "word":
        return False, False
    if token.norm in _TIME_HIGH | _TIME_LOW:
        return False, False  # a superlative of time: "the latest flight" says no column "lat"
    if abbreviations and token.norm in _compared_forms(part):
        return True, False  # (a glossary "late" is not "later")
    # "to Seattle": a capitalised word inside the question is a name, not a column's word said loosely ("seats")
    named = token.start > 0 and token.text[:1].isupper() and token.text[1:].islower()
    if abbreviations and token.norm not in _BUCKETS and token.norm not in _AGG_WORDS_PLAIN and not named:
        # ("longest" measures a length; it is no abbreviation of lon; "departed" alone is no "dep", but in a
        # name of several words "scheduled departure time" says sched_dep_time)
        if len(part) >= 3 and token.norm.startswith(part) and (not token.norm.endswith("ed") or not alone) \
                and token.norm not in _dimension_forms():
            return True, False
        if _share_stem(token.stem, part):
            return True, False
    return False, False


@lru_cache(maxsize=1)
def _dimension_forms() -> frozenset[str]:
    """Every form of the adjectives of measure: "long", "longer", "longest", "farther" …"""
    return frozenset({*_DIMENSIONS, *_IRREGULAR_DIMENSIONS,
                      *(form for base in _DIMENSIONS for form in _compared_forms(base))})


@lru_cache(maxsize=8192)
def _dimension(word: str) -> tuple[tuple[str, ...], bool, str] | None:
    """The column words an adjective of measure names, whether more is more, and its degree (base,
    comparative or superlative): "longer" → (("length",), True, "comparative")."""
    if word in _IRREGULAR_DIMENSIONS:
        nouns, high = _DIMENSIONS[_IRREGULAR_DIMENSIONS[word]]
        return nouns, high, "superlative" if word.endswith("est") else "comparative"
    for base, (nouns, high) in _DIMENSIONS.items():
        if word == base:
            return nouns, high, "base"
        if word in _compared_forms(base):
            return nouns, high, "superlative" if word.endswith("est") else "comparative"
    return None


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



def _phrase_spans(tokens: list[Token], content: list[int], words: tuple[str, ...],
                  abbreviations: bool, text: str = "") -> list[tuple[int, int, bool]]:
    """Where the content words ``words`` occur as consecutive content tokens, in any order (so "minimum
    temperature" finds ``temp_min``), spanning at most a couple of stopwords per word, and no punctuation that
    parts them (``text``, the question: "flights: date, flight number" names no flight_date)."""
    size = len(words)
    spans: list[tuple[int, int, bool]] = []
    if not size or size > 6:
        return spans
    for first in range(len(content) - size + 1):
        window = content[first:first + size]
        if window[-1] - window[0] > 2 * size + 1:
            continue
        if any(tokens[i].norm in _JOINING for i in range(window[0], window[-1])):
            continue  # "their ids and runners" lists two columns, "flights with their dates" shows one of rows
        if text and any(parting(text[tokens[i].end:tokens[i + 1].start])
                        for i in range(window[0], window[-1])):
            continue
        result = _window_match([tokens[i] for i in window], words, abbreviations)
        if result is not None:
            spans.append((window[0], window[-1] + 1, result))
    return spans


_DEGREE_WORDS = frozenset({"most", "least", "more", "less", "fewer", "fewest"})
"""Words of degree, which a glossary term's words may stand around ("gained the most time")."""
_JOINING = frozenset({"and", "or", "with", "their", "its", "whose"})
"""Words between two that join two things named, rather than make one name."""


def _window_match(window: list[Token], words: tuple[str, ...], abbreviations: bool) -> bool | None:
    """Whether some order of ``words`` matches the window; True when every word matched exactly."""
    orders = [words] if len(words) > 4 else list(permutations(words))
    for order in orders:
        results = [_token_matches(token, part, abbreviations, len(words) == 1)
                   for token, part in zip(window, order, strict=True)]
        if all(matched for matched, _ in results):
            return all(exact for _, exact in results)
    return None


def _common(word: str) -> bool:
    """Structure, filler and unit words: never values, never unknown. A participle of a filler verb is not
    filler: "returned", "included" say something about the rows ("orders that were returned")."""
    return word in _FILLER or word in _AGG_WORDS or word in _BUCKETS or word in _UNITS or len(word) < 2 \
        or stem(word) != word and stem(word) in _FILLER and not word.endswith("ed")


@dataclass(frozen=True)
class _Value:
    """A value of a column as the question must contain it: its word stems, and whether it is also an
    everyday word (then it must be written as the data writes it)."""

    value: str
    words: tuple[str, ...]
    common: bool


_ABBREVIATED = {short: stem(full) for short, full in (
    ("intl", "international"), ("natl", "national"), ("rgnl", "regional"), ("muni", "municipal"),
    ("mem", "memorial"), ("mt", "mount"), ("ft", "fort"), ("fld", "field"), ("cnty", "county"))}
"""Abbreviations names in data are written with ("Los Angeles Intl", "Chicago Ohare Intl"), by the stem of the
word a question spells out ("Los Angeles International"): a value and a question are matched spelled out."""


def _spelled_out(stems: Sequence[str]) -> tuple[str, ...]:
    return tuple(_ABBREVIATED.get(word, word) for word in stems)


@lru_cache(maxsize=256)
def _value_index(values: tuple[str, ...]) -> dict[str, list[_Value]]:
    """A column's values by their first word (spelled out), so a question is matched in one pass over its
    tokens."""
    index: dict[str, list[_Value]] = {}
    for value in values:
        words = _spelled_out(value_tokens(value))
        if not words or len(words) > 8:
            continue
        common = all(word in CONTENT_STOPWORDS or _common(word) for word in words)
        index.setdefault(words[0], []).append(_Value(value, words, common))
    return index


_HYPHENATED = re.compile(r"\w-\w")


def _value_spans(tokens: list[Token], stems: list[str], used: set[int], keys: _ColumnKeys,
                 values: tuple[str, ...], text: str = "") -> list[_Candidate]:
    """Where values occur as consecutive tokens; a value that is also a common English word ("IN", "OR",
    "ME" as state codes) must be written as the data writes it."""
    index = _value_index(values)
    stems = list(_spelled_out(stems))
    found = []
    for start, first in enumerate(stems):
        for item in index.get(first, ()):
            size = len(item.words)
            if tuple(stems[start:start + size]) != item.words or used.intersection(range(start, start + size)):
                continue
            if item.common and " ".join(t.text for t in tokens[start:start + size]) != item.value:
                continue
            if size == 1 and item.value.isupper() and tokens[start].norm != item.value.lower():
                continue  # a code ("SIT") is said as it is, not as a form of the word it spells ("sits")
            if text and _HYPHENATED.search(item.value) and any(text[tokens[i].end:tokens[i + 1].start].isspace()
                                                               for i in range(start, start + size - 1)):
                continue  # "in-store" is not "in stores": a hyphenated value is written with its hyphen
            longer = tuple(other.value for other in index.get(first, ()) if len(other.words) > size
                           and other.words[:size] == item.words and not item.common)
            found.append(_Candidate(start, start + size, _Target(keys.table.name, keys.column.name, item.value,
                                                                 alternatives=longer if len(longer) <= _LONGER_NAMES
                                                                 else ()),
                                    2.5 + size, "value"))
    return found


_LONGER_NAMES = 3
"""A value said whole that begins up to this many longer values of its column ("Airbus": AIRBUS and AIRBUS
INDUSTRIE, "Orlando": Orlando and Orlando Intl) names them all: the data writes one maker, one place, two ways."""


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
        if token.norm != options[0].split()[0].lower() and not token.text[:1].isupper():
            continue  # "pairs" is no "PAIR MIKE E": a first word is written as the value writes it
        found.append(_Candidate(index, index + 1, _Target(keys.table.name, keys.column.name, options[0]),
                                1.8, "value"))
    return found


_FEW_VALUES = 50
"""A column with more values than this (airports' names) has among them names made of everyday words ("First
Flight Airport"): the first words of one name it are read only as the question capitalises a name."""


def _prefix_spans(tokens: list[Token], used: set[int], keys: _ColumnKeys, values: tuple[str, ...],
                  row_words: Collection[str] = frozenset()) -> list[_Candidate]:
    """The first two or more words of exactly one multi-word value ("American Airlines" for "American
    Airlines Inc.", "Chicago O'Hare" for "Chicago Ohare Intl"), stronger the more words they are. Where the
    words hold the rows' noun or an everyday word (``row_words`` given: "the first flight to Denver"), only
    written capitalised, as a name is."""
    prefixes = _prefix_index(values)
    found = []
    stems = _spelled_out([token.stem if token.kind == "word" else token.norm for token in tokens])
    for start in range(len(tokens)):
        # the longest prefix said here, and none where the whole value is (the value's own match reads it)
        said = [(size, begun) for size in range(2, min(len(tokens) - start, _MAX_PREFIX) + 1)
                if (begun := prefixes.get(tuple(stems[start:start + size]))) is not None]
        if not said:
            continue
        size, (value, whole) = said[-1]
        if tuple(stems[start:start + len(whole)]) == whole or used.intersection(range(start, start + size)):
            continue
        span = tokens[start:start + size]
        if row_words and any(t.stem in row_words or _common(t.norm) for t in span) \
                and not all(t.text[:1].isupper() for t in span):
            continue
        found.append(_Candidate(start, start + size, _Target(keys.table.name, keys.column.name, value),
                                2.0 + size, "value"))
    return found


_MAX_PREFIX = 7


@lru_cache(maxsize=256)
def _prefix_index(values: tuple[str, ...]) -> dict[tuple[str, ...], tuple[str, tuple[str, ...]]]:
    """The first two or more words (spelled out) of the column's multi-word values that begin exactly one of
    them, and that value with all its words: built once per column's values, looked up per question."""
    prefixes: dict[tuple[str, ...], list[tuple[str, tuple[str, ...]]]] = {}
    for value in values:
        words = _spelled_out(value_tokens(value))
        for size in range(2, min(len(words), _MAX_PREFIX + 1)):
            prefixes.setdefault(words[:size], []).append((value, words))
    return {words: options[0] for words, options in prefixes.items() if len(options) == 1}


_DATA_WORDS = frozenset({"data", "dataset", "datasets", "database"})

MAX_NAMED_VALUES = 3
"""A proper name inside at most this many values names them ("Newark": Newark Liberty Intl, Newark Penn
Station); inside more ("County", "Regional") it is a common part of names, naming none of them."""


@dataclass(frozen=True)
class _NameWords:
    """The values of a column by each word of theirs, and by each two adjacent words written as one ("La Guardia"
    under "laguardia"): ``by_word``; ``joined`` the keys of the second kind."""

    by_word: dict[str, tuple[str, ...]]
    joined: frozenset[str]


@lru_cache(maxsize=64)
def _name_words(values: tuple[str, ...]) -> _NameWords:
    """The words of a column's values, for names: values of several words apart (one pass over them)."""
    index: dict[str, list[str]] = {}
    joined: set[str] = set()
    for value in values:
        words = [token for token in tokenize(value) if token.kind == "word"]
        if len(words) < 2 or " " not in value.strip():
            continue  # "America/Chicago" is a code made of words, not a name a word of which names it
        pairs = {first.norm + second.norm for first, second in pairwise(words)}
        joined.update(pairs)
        for key in {token.stem for token in words} | pairs:
            index.setdefault(key, []).append(value)
    return _NameWords({key: tuple(found) for key, found in index.items()}, frozenset(joined))


def _name_word_spans(tokens: list[Token], used: set[int], keys: _ColumnKeys,
                     values: tuple[str, ...]) -> list[_Candidate]:
    """"Flights out of Newark", "to LaGuardia": a capitalised word of a question (any word right after "to" or
    "from": "to boston") that is a word of a few multi-word values (a place inside airport names), or two of
    their words written as one, names those values — all of them, weaker than any other reading of the word.
    Everyday and structure words never do."""
    words = _name_words(values)
    index, joined = words.by_word, words.joined
    found = []
    for position, token in enumerate(tokens):
        # (two words of a name written as one say that name however they are cased: "laguardia")
        if position in used or token.kind != "word" \
                or not token.text[:1].isupper() and token.norm not in joined and not _placed(tokens, position) \
                or token.is_stopword or len(token.norm) < 4 or _common(token.norm) or token.norm in MEANINGFUL \
                or token.norm in MONTHS:  # "in March", never "March Air Reserve Base"
            continue
        options = index.get(token.stem) or index.get(token.norm) or ()
        if not options or len(options) > MAX_NAMED_VALUES:
            continue
        target = _Target(keys.table.name, keys.column.name, options[0], alternatives=options[1:])
        found.append(_Candidate(position, position + 1, target, 1.5, "value", name_word=True))
    return found


def _placed(tokens: list[Token], position: int) -> bool:
    """Whether the word at ``position`` follows a word of going to or from a place ("flights to boston", "out of
    newark"): a place however cased."""
    before = tokens[position - 1].norm if position >= 1 else ""
    return before in _DIRECTION_PREPOSITIONS - {"out"} \
        or before == "of" and position >= 2 and tokens[position - 2].norm == "out"


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


def _resolve(candidates: list[_Candidate], tokens: Sequence[Token]) -> list[_Mention]:
    """Non-overlapping mentions, longest and strongest first; equally strong rivals for the same span are
    kept as ``ambiguous`` so that a measure that could be two columns is refused, not guessed. A phrase's
    length is its words but the stopwords between them: "time of departures" (dep_time) is no longer than the
    "air time" said right before it."""
    def length(candidate: _Candidate) -> int:
        inside = range(candidate.start + 1, candidate.end - 1)
        return candidate.end - candidate.start - sum(tokens[i].is_stopword for i in inside)

    ordered = sorted(candidates, key=lambda c: (-length(c), -c.strength, c.start))
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


def named_as_rows(table: TableInfo, column: str) -> bool:
    """Whether a column's name is the rows' own noun (``flight`` of flights: each flight's number), so that it
    tells the rows apart and is no measure of them."""
    words = split_identifier(column).lower().split()
    return len(words) == 1 and stem(words[0]) in _table_words(table)


@lru_cache(maxsize=1024)
def _table_words(table: TableInfo) -> set[str]:
    """The words that name a table's rows: its name's words, synonyms and the "one row per …" noun of its
    description, with plural forms."""
    words = {word for word in split_identifier(table.name.split(".")[-1]).lower().split() if len(word) > 2}
    for synonym in table.synonyms:
        words |= set(split_identifier(synonym).lower().split())
    columns = {word for column in table.columns for word in phrase(column.name)}
    found = _forms([stem(word) for word in words] + list(words)) | _row_nouns(table.description or "") \
        | _named_again(table.description or "", {stem(word) for word in words}) - columns
    # ("birds" for penguins, and "animals": the kinds the rows are of)
    for _ in range(2):
        found |= _forms([kind for kind, things in KINDS.items() if things & found]) - columns
    return found


def _named_again(description: str, named: set[str]) -> set[str]:
    """Another name of a table's rows, in parentheses right after its own at the start of its description:
    "Planes (aircraft) by tail number", "Airlines (carriers): …". Without it "aircraft" would read as a
    longer form of a column part ("air" of air_time) instead of the rows of planes. A name that is one of the
    table's columns ("Airlines (carriers)", with a carrier column) names that column, as before."""
    match = re.match(r"\s*([\w ]+?)\s*\(([\w ]+)\)", description)
    if not match or not {stem(word) for word in phrase(match.group(1))} & named:
        return set()
    return _forms([word for word in phrase(match.group(2)) if word not in ("and", "or")])


def _row_nouns(description: str) -> set[str]:
    """What one row is, from a description saying "one row per day" or "one row per symbol and month"; a
    name in parentheses right after is another name of it ("one row per penguin (nest)")."""
    match = re.search(r"row (?:per|for each|for every|is an?)\s+([\w ]+)(?:\(([\w ]+)\))?", description,
                      re.IGNORECASE)
    if not match:
        return set()
    said = f"{match.group(1)} {match.group(2) or ''}"
    return {word for word in phrase(said) if word not in ("and", "or")}


def _single_row_noun(description: str) -> set[str]:
    """The noun of a description saying one row is one thing ("one row per flight", "one row per penguin
    (nest)"), with its forms; empty where a row is several things at once ("one row per symbol and month")."""
    match = re.search(r"row (?:per|for each|for every|is an?)\s+([\w ]+)(?:\(([\w ]+)\))?", description,
                      re.IGNORECASE)
    if not match or len(phrase(match.group(1))) != 1:
        return set()
    return _forms(phrase(f"{match.group(1)} {match.group(2) or ''}"))


@lru_cache(maxsize=1024)
def _named_vocabulary(table: TableInfo) -> set[str]:
    """The words a table's name, synonyms and column names use, without its columns' descriptions: a word
    only a column's description uses ("unknown" in "sex, null when unknown") names no condition the planner
    can read, so it does not count as understood. Nor does a word of the table's description by itself (see
    ``described_pairs``)."""
    words = set(_table_words(table))
    for text in table.synonyms:
        words |= set(phrase(text))
    for column in table.columns:
        words |= set(phrase(column.name))
        for synonym in column.synonyms:
            words |= set(phrase(synonym))
    return _forms(sorted(words))


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


def _choose_table(catalog: _Catalog, tokens: list[Token], used: set[int], choosable: Sequence[str],
                  joins_of: Callable[[str], Sequence[str]]) -> tuple[TableInfo, list[_Candidate]]:
    """The table the question is about: the one whose columns, values, glossary terms and own words it
    hits hardest, among ``choosable``; phrases of the tables it joins many-to-one (``joins_of``: orders
    to stores) count for it too, a little less, where its own phrases are not. When a table that joins
    many-to-one to the best one is named first ("orders from stores in the North"), that one is queried,
    the other joined. A tie between two tables is refused rather than guessed. Returns the table and every
    candidate phrase."""
    candidates = catalog.candidates(tokens, used)
    scored: list[tuple[float, str]] = []
    owners = _described_nouns(tokens, [catalog.tables[name] for name in choosable])
    # the word that describes an owned noun ("NYC" of "each NYC airport") is that table's too: not an airports code
    described = {_before_numbers(tokens, index): owner for index, owner in owners.items()}

    def joined_to(many: str, one: str) -> bool:
        return one in joins_of(many)

    for name in choosable:
        table = catalog.tables[name]
        mentions = _resolve([c for c in candidates if c.target.table == name
                             and all(described.get(i, name) == name for i in range(c.start, c.end))], tokens)
        score = sum(_strength(candidates, m) for m in mentions)
        taken = {i for m in mentions for i in range(m.start, m.end)}
        for other in joins_of(name):
            reached = _resolve([c for c in candidates if c.target.table == other
                                and not taken.intersection(range(c.start, c.end))], tokens)
            score += 0.9 * sum(_strength(candidates, m) for m in reached)
        words = _table_words(table)
        score += 3.0 * len({t.stem for i, t in enumerate(tokens) if t.stem in words and t.kind == "word"
                            and owners.get(i, name) == name})
        score += 3.0 * len({tokens[i].stem for i, owner in owners.items() if owner == name})
        # "… in the data" says the question is about the data, whichever table of it (every one alike)
        score += 1.0 if any(t.norm in _DATA_WORDS for t in tokens) else 0.0
        vocabulary = _vocabulary(table)
        score += 0.3 * len({t.stem for t in tokens if t.kind == "word" and not t.is_stopword
                            and t.stem in vocabulary and not _common(t.norm)})
        scored.append((score, name))
    scored.sort(key=lambda pair: -pair[0])
    if not scored or scored[0][0] < 2.0:
        raise NoPlan("the question does not mention any table, column or value of the data")
    best = scored[0][1]
    best = _one_reaching_the_values(candidates, scored, best, joins_of) or best
    with_dates = _one_with_dates(catalog, tokens, scored, best, joins_of)
    if with_dates is not None:
        return catalog.tables[with_dates], candidates
    counted = _counted_tables(tokens, [catalog.tables[name] for name in choosable])
    # "how many (different) planes flew to Denver" on flights joined to planes: the planes are told apart by
    # the flights' key to them (their distinct tail numbers), so the table the rest is about stays queried
    distinct = counted and joined_to(best, counted[0])
    if counted and best not in counted and not distinct:
        # "how many stores had returned orders" counts stores, whatever the rest of it is about
        return catalog.tables[counted[0]], candidates
    for _, name in scored[1:]:
        if joined_to(name, best) and _named_first(tokens, catalog.tables[name], catalog.tables[best]):
            return catalog.tables[name], candidates
    if len(scored) > 1 and scored[1][0] == scored[0][0]:
        if joined_to(best, scored[1][1]):
            return catalog.tables[best], candidates
        if joined_to(scored[1][1], best):
            return catalog.tables[scored[1][1]], candidates
        raise NoPlan(f"the question could be about {scored[0][1]} or {scored[1][1]}; name the table or a column")
    return catalog.tables[best], candidates


def _one_with_dates(catalog: _Catalog, tokens: list[Token], scored: list[tuple[float, str]], best: str,
                    joins_of: Callable[[str], Sequence[str]]) -> str | None:
    """"When did Alaska Airlines last fly in this data?": asked when, of a table that has no dates (the airlines,
    whose name is said), the rows that join it many-to-one and have dates (its flights) are the ones to query.
    None when the question does not ask when, or the best table has dates."""
    if not any(token.norm == "when" for token in tokens) or dated(catalog.tables[best], years=True):
        return None
    return next((name for _, name in scored if best in joins_of(name) and dated(catalog.tables[name])), None)


def _time_columns(table: TableInfo) -> list[ColumnInfo]:
    """Columns that place a row in time: DATE/TIMESTAMP ones, then an integer column named like a year
    (``year``, then ``opened_year``, ``year_built``)."""
    columns = [c for c in table.columns if c.type in TIME_TYPES]
    columns += [c for c in table.columns if c.type in NUMBER_TYPES and stem(c.name.lower()) == "year"]
    columns += [c for c in table.columns if c.type in NUMBER_TYPES and c not in columns and _year_named(c.name)]
    return columns


def date_columns(table: TableInfo) -> list[str]:
    """The table's DATE columns, by name, in the table's order (a day, not an instant or a year)."""
    return [column.name for column in _time_columns(table) if column.type == DATE]


def _year_named(name: str) -> bool:
    """``opened_year``, ``year_built``: a year of something."""
    words = split_identifier(name).lower().split()
    return len(words) > 1 and (words[0] == "year" or words[-1] == "year")


def dated(table: TableInfo, *, years: bool = False) -> bool:
    """Whether the table has a column of dates or times; with ``years``, a column of years counts too ("when
    was the newest plane built": its year)."""
    return bool(_time_columns(table)) if years else any(column.type in TIME_TYPES for column in table.columns)


def _one_reaching_the_values(candidates: list[_Candidate], scored: list[tuple[float, str]], best: str,
                             joins_of: Callable[[str], Sequence[str]]) -> str | None:
    """"Which airlines flew to Seattle?", "how many airlines flew out of Newark?": the table named (airlines)
    holds none of the places said, which only the rows that join it many-to-one (flights, joined to airports)
    reach: those rows are the ones to query, the table named joined (or counted by their key to it). None
    when the best table reaches every value said, or no table joining it does."""
    reached = {best, *joins_of(best)}
    unreached = {c.target.table for c in candidates if c.target.value is not None and c.source == "value"}
    unreached -= reached
    if not unreached or any(c.target.value is not None and c.target.table in reached and c.source == "value"
                            for c in candidates):
        return None
    return next((name for _, name in scored if name != best and best in joins_of(name)
                 and unreached <= {name, *joins_of(name)}), None)


def _described_nouns(tokens: list[Token], tables: Sequence[TableInfo]) -> dict[int, str]:
    """"each of the three NYC airports" asked of flights and airports: a table's noun ("airports") right after a
    word that another table's column description says right before that noun ("FAA code of the New York
    airport the flight left from"; "NYC" standing for the description's New York City) names that column of the
    other table, not the noun's table. Where the noun stands, and the table it is said of."""
    owners: dict[int, str] = {}
    for index, token in enumerate(tokens):
        named = [table.name for table in tables if token.kind == "word" and token.stem in _table_words(table)]
        if not named:
            continue
        for other in tables:
            said = _said_before(tokens, index, described_initials(other))
            if other.name in named or not said:
                continue
            pairs = {pair for column in other.columns
                     for pair in pairwise(phrase(column.description or ""))}
            if any((word, token.stem) in pairs for word in said):
                owners[index] = other.name
    return owners


def _said_before(tokens: list[Token], index: int, initials: dict[str, tuple[str, ...]]) -> tuple[str, ...]:
    """The stems of the word right before ``index``, past a number ("the three New York airports"): the words
    initials stand for ("NYC": new york citi), else its own stem; nothing when that word is no content word."""
    position = _before_numbers(tokens, index)
    token = tokens[position] if position >= 0 else None
    if token is None or token.kind != "word" or token.is_stopword:
        return ()
    return initials.get(token.norm, (token.stem,)) if token.text.isupper() else (token.stem,)


def _before_numbers(tokens: list[Token], index: int) -> int:
    """Where the word before ``index`` stands, past numbers ("the three New York airports": "York")."""
    position = index - 1
    while position >= 0 and (tokens[position].kind == "number" or number_word(tokens[position].norm) is not None):
        position -= 1
    return position


_CLAUSE_WORDS = frozenset({"whose", "that", "which", "who", "where", "with", "having"})
"""Words that end the noun phrase "how many …" counts: "how many trips whose destination station …" counts
trips."""


def _counted_tables(tokens: list[Token], tables: Sequence[TableInfo]) -> list[str]:
    """The tables whose rows "how many …", "number of …", "the most …" counts: those the noun phrase after it
    ends with ("how many Hawaiian Airlines flights" counts flights)."""
    for index in range(len(tokens) - 1):
        pair = (tokens[index].norm, tokens[index + 1].norm)
        ranked = pair in (("the", "most"), ("the", "fewest"))  # "which airline has the most flights"
        if pair not in (("how", "many"), ("number", "of"), ("count", "of")) and not ranked:
            continue
        after = index + 2
        while after < len(tokens) and tokens[after].norm in ("the", "a", "an", "all", "different", "distinct"):
            after += 1
        head: list[str] = []
        while after < len(tokens) and tokens[after].kind == "word" and not tokens[after].is_stopword \
                and tokens[after].norm not in MEANINGFUL and tokens[after].norm not in _CLAUSE_WORDS:
            named = [table.name for table in tables if tokens[after].stem in _table_words(table)]
            head = named or head
            after += 1
        return head
    return []


def _named_first(tokens: list[Token], first: TableInfo, then: TableInfo) -> bool:
    """Whether the question names ``first``'s rows, and before any of ``then``'s."""
    words, other = _table_words(first), _table_words(then)
    for token in tokens:
        if token.kind == "word" and token.stem in words:
            return True
        if token.kind == "word" and token.stem in other:
            return False
    return False


def _strength(candidates: list[_Candidate], mention: _Mention) -> float:
    """How strongly a resolved mention matched (the best candidate for its span and target)."""
    return max(c.strength for c in candidates
               if (c.start, c.end, c.target) == (mention.start, mention.end, mention.target))
