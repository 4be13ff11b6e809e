"""Reading clock times ("before 6 am", "after 10:30 pm", "between 6 and 9 am") as conditions on a column
that holds times of day as HHMM numbers (1530 for 3:30 pm), the way many flight and transit tables do."""

from __future__ import annotations

import re

from convener.analytics.planner.base import NoPlan
from convener.analytics.planner.state import _Filter, _note_term, _Reading
from convener.analytics.planner.vocabulary import LEAVE_OR_ARRIVE
from convener.analytics.shapes import NUMBER_TYPES, ColumnInfo
from convener.analytics.wording import phrase, stem

_HHMM = re.compile(r"\bhh:?mm\b", re.IGNORECASE)
_BEFORE = {("before",): "<", ("earlier", "than"): "<", ("until",): "<", ("by",): "<=", ("after",): ">",
           ("later", "than"): ">", ("since",): ">=", ("at",): "=", ("from",): "from"}
_OPEN_ENDS = {"later": ">=", "after": ">=", "earlier": "<=", "before": "<="}
"""After "at <time> or": the time and every later (earlier) one."""
_CONCEPTS = {
    "departure": ("leave", "leaves", "leaving", "left", "depart", "departs", "departed", "departing", "departure"),
    "arrival": ("arrive", "arrives", "arrived", "arriving", "arrival", "land", "lands", "landed", "landing"),
    "scheduled": ("scheduled", "planned", "due"),
    "actual": ("actual", "actually", "really"),
}
"""Words of a question that name what a time of day is the time of, by a word its column's description uses."""


def _clock_columns(reading: _Reading) -> list[ColumnInfo]:
    """Number columns whose description says they hold HHMM times."""
    return [c for c in reading.table.columns if c.type in NUMBER_TYPES and _HHMM.search(c.description or "")]


def read_hour_of(reading: _Reading, column: str, index: int) -> bool:
    """Whether the word at ``index`` is "hour" said of ``column``, a column of HHMM times ("scheduled departure
    hour", "hour of scheduled departure"): then the column is grouped by its hour, and the word is read."""
    if reading.norm(index) not in ("hour", "hours") or not reading.free(index) \
            or not any(c.name == column for c in _clock_columns(reading)):
        return False
    reading.hour_keys.add(column)
    reading.used.add(index)
    return True


def _clock_at(reading: _Reading, index: int) -> tuple[int, int] | None:
    """The time of day written at ``index`` as (HHMM, tokens it spans): "6 am", "6:30 pm", "18:45", "noon"; the
    same time written again as HHMM in parentheses right after it ("10pm (2200)") is part of it."""
    said = _said_clock_at(reading, index)
    if said is None:
        return None
    value, size = said
    after = index + size
    if after < len(reading.tokens) and reading.tokens[after].number == value and reading.free(after) \
            and "(" in reading.text[reading.tokens[after - 1].end:reading.tokens[after].start]:
        size += 1
    return value, size


def _said_clock_at(reading: _Reading, index: int) -> tuple[int, int] | None:
    tokens = reading.tokens
    if index >= len(tokens) or not reading.free(index):
        return None
    if tokens[index].norm in ("noon", "midday"):
        return 1200, 1
    if tokens[index].norm == "midnight":
        return 0, 1
    hour = tokens[index].number
    if hour is None or not tokens[index].is_integer or tokens[index].kind != "number" or not 0 <= hour <= 23:
        return None
    size, minutes = 1, 0
    following = tokens[index + 1] if index + 1 < len(tokens) else None
    if following is not None and following.kind == "number" and len(following.text) == 2 \
            and following.start == tokens[index].end + 1 and following.is_integer and (following.number or 0) < 60:
        size, minutes = 2, int(following.number or 0)  # "6:30"
    half = " ".join(reading.norm(i) for i in range(index + size, index + size + 2))
    if reading.norm(index + size) in ("am", "pm") or half in ("a m", "p m"):
        if hour > 12:
            return None
        evening = reading.norm(index + size).startswith("p")
        span = size + (1 if reading.norm(index + size) in ("am", "pm") else 2)
        return (int(hour) % 12 + (12 if evening else 0)) * 100 + minutes, span
    for words, part in _PARTS_OF_DAY.items():
        said = range(index + size, index + size + len(words))
        if 1 <= hour <= 12 and all(reading.norm(i) == word and reading.free(i) for i, word in zip(said, words)):
            # "before 6 in the morning", "after 9 in the evening", "at 11 at night"
            evening = part == "pm" or part == "night" and hour >= 6 and hour != 12
            return (int(hour) % 12 + (12 if evening else 0)) * 100 + minutes, size + len(words)
    if size == 2:
        return int(hour) * 100 + minutes, size  # "18:45"
    return None


_PARTS_OF_DAY = {("in", "the", "morning"): "am", ("in", "the", "afternoon"): "pm", ("in", "the", "evening"): "pm",
                 ("at", "night"): "night"}
"""Words after an hour that say which half of the day it is in: "at night" is the evening's hours, and those
after midnight (3 at night is 3 am)."""


def _nearest_end(reading: _Reading, at: int) -> str | None:
    """The concept (departure or arrival) of the nearest word of leaving or arriving before ``at``."""
    for index in range(at - 1, -1, -1):
        found = next((concept for concept in ("departure", "arrival") if reading.norm(index) in _CONCEPTS[concept]),
                     None)
        if found is not None:
            return found
    return None


def _choose_clock_column(reading: _Reading, columns: list[ColumnInfo], at: int) -> ColumnInfo:
    """The clock column a time said at ``at`` is about: the one whose description has the most of the question's
    words of departure/arrival/scheduled/actual, then the one the question names (the only one when there is
    one), then the end of the trip named nearest before the time; refused when that leaves a tie."""
    if len(columns) == 1:
        return columns[0]
    named = {c.name for c in columns if any(c.name in (m.target.column, *m.ambiguous) for m in reading.mentions
                                            if not m.is_value)}
    asked = {concept for concept, words in _CONCEPTS.items()
             if any(token.norm in words for token in reading.tokens)}
    if asked and "scheduled" not in asked:
        asked.add("actual")  # "flights that departed after 10 pm": what happened, unless "scheduled" is said
    scores = [((sum(stem(concept) in phrase(c.description or "") + phrase(c.name) for concept in asked),
                c.name in named), c) for c in columns]
    best = max(score for score, _ in scores)
    top = [c for score, c in scores if score == best]
    if len(top) == 1 and best != (0, False):
        return top[0]
    nearest = _nearest_end(reading, at)
    ends = [c for c in top if nearest is not None and stem(nearest) in phrase(c.description or "") + phrase(c.name)]
    if len(ends) == 1:
        # "the arrival delay of flights scheduled to leave before noon versus those scheduled at noon": the
        # clause's own verb (the nearest word of leaving or arriving before the time) says which
        return ends[0]
    raise NoPlan(f"could not tell which of {', '.join(c.name for c in top)} the time of day is about")


def _read_clock_times(reading: _Reading) -> None:
    """"scheduled to leave before 6 am": a time of day after before/after/at/by, or between two of them,
    compared with the HHMM column it is about; the words that said which column are read."""
    columns = _clock_columns(reading)
    if not columns:
        return
    for index in range(len(reading.tokens)):
        for words, op in _BEFORE.items():
            if not all(reading.norm(index + i) == word and reading.free(index + i) for i, word in enumerate(words)):
                continue
            clock = _clock_at(reading, index + len(words))
            if clock is None:
                continue
            end = index + len(words) + clock[1]
            if op == "from":
                # "scheduled from noon on": that time and every later one ("from 6 to 9 am" is a range, not read)
                if reading.norm(end) not in ("on", "onward", "onwards") or not reading.free(end):
                    continue
                op, end = ">=", end + 1
            start = index
            if op in (">", "<") and reading.norm(index - 1) == "or" and reading.norm(index - 2) in ("at", "on") \
                    and reading.free(index - 1) and reading.free(index - 2):
                op, start = op + "=", index - 2  # "at or after 6 pm": that time too
            column = _choose_clock_column(reading, columns, start)
            later = (reading.norm(end), reading.norm(end + 1))
            if op == "=" and later[0] == "or" and later[1] in _OPEN_ENDS \
                    and reading.free(end) and reading.free(end + 1):
                op = _OPEN_ENDS[later[1]]  # "at 6 pm or later"
                end += 2
            reading.filters.append(_Filter(column.name, op, (float(clock[0]),), "number", start))
            reading.used.update(range(start, end))
            _read_about(reading, column)
            break
        bare = _clock_at(reading, index)
        if bare is not None and reading.free(index):
            # "… before noon vs. noon or later": a time said without a preposition, and every later (earlier) one
            later = (reading.norm(index + bare[1]), reading.norm(index + bare[1] + 1))
            if later[0] == "or" and later[1] in _OPEN_ENDS and reading.free(index + bare[1]) \
                    and reading.free(index + bare[1] + 1):
                column = _choose_clock_column(reading, columns, index)
                reading.filters.append(_Filter(column.name, _OPEN_ENDS[later[1]], (float(bare[0]),), "number", index))
                reading.used.update(range(index, index + bare[1] + 2))
                _read_about(reading, column)
                continue
        if reading.norm(index) == "between" and reading.free(index):
            first = _clock_at(reading, index + 1)
            joiner = index + 1 + first[1] if first else -1
            second = _clock_at(reading, joiner + 1) if first and reading.norm(joiner) == "and" else None
            if first is None and reading.norm(index + 2) == "and":
                # "between 6 and 9 am": the first time takes the second's half of the day
                second = _clock_at(reading, index + 3)
                hour = reading.tokens[index + 1].number
                if second is not None and hour is not None and reading.tokens[index + 1].is_integer \
                        and 1 <= hour <= 12:
                    first = ((int(hour) % 12 + (12 if second[0] >= 1200 else 0)) * 100, 1)
                    joiner = index + 2
            if first is None or second is None:
                continue
            column = _choose_clock_column(reading, columns, index)
            reading.filters.append(_Filter(column.name, ">=", (float(first[0]),), "number", index))
            reading.filters.append(_Filter(column.name, "<=", (float(second[0]),), "number", index))
            reading.used.update(range(index, joiner + 1 + second[1]))
            _read_about(reading, column)


def _read_about(reading: _Reading, column: ColumnInfo) -> None:
    """The words that named the clock column (its mentions, "scheduled", "leave") are read."""
    for mention in [m for m in reading.mentions if not m.is_value
                    and column.name in (m.target.column, *m.ambiguous)]:
        reading.mentions.remove(mention)
        reading.used.update(range(mention.start, mention.end))
        _note_term(reading, mention)
    described = set(phrase(column.description or "")) | set(phrase(column.name))
    for index, token in enumerate(reading.tokens):
        if reading.free(index) and any(token.norm in words and stem(concept) in described
                                       for concept, words in _CONCEPTS.items()):
            reading.used.add(index)


def read_first_of_a_day(reading: _Reading) -> bool:
    """"Which flight was scheduled to leave first on New Year's Day 2013?", "… leave latest in the day on 31 Dec
    2013": of one day's rows, the one whose time of day (the HHMM column the verb before "first" or "last" names,
    "scheduled" or not) is least (greatest). A question over more than one day is left to the dates'
    superlatives."""
    columns = _clock_columns(reading)
    for index, token in enumerate(reading.tokens):
        if token.norm not in _FIRST_OR_LAST or not reading.free(index) \
                or reading.norm(index - 1) not in LEAVE_OR_ARRIVE or not columns or not _one_day(reading):
            continue
        column = _choose_clock_column(reading, columns, index)
        reading.used.update((index - 1, index))
        # "leave latest in the day": of the day's times
        if [reading.norm(i) for i in range(index + 1, index + 4)] == ["in", "the", "day"] \
                and all(reading.free(i) for i in range(index + 1, index + 4)):
            reading.used.update(range(index + 1, index + 4))
        reading.used.update(i for i in (index - 2, index - 3) if reading.norm(i) in ("to", *_CONCEPTS["scheduled"])
                            and reading.free(i))
        reading.top = reading.top or 1
        reading.order_measure = column.name
        reading.descending = reading.direction = _FIRST_OR_LAST[token.norm]
        return True
    return False


_FIRST_OR_LAST = {"first": False, "earliest": False, "last": True, "latest": True}
"""Words of the least (False) or greatest (True) time of a day said after a verb of leaving or reaching."""


def _one_day(reading: _Reading) -> bool:
    """Whether the rows are those of one day: a date (or a month and a day of it) the question names."""
    kinds = {(f.kind, f.op) for f in reading.filters if f.kind in ("date", "month", "day")}
    return kinds == {("date", "=")} or kinds == {("month", "="), ("day", "=")}
