"""Ranges of a number: "between 60 and 90 minutes in the air", "a body mass between 3,000 and 4,000": the
column named after the second number (by name or by unit) or before "between" lies within both, ends
included, as "between" says in SQL and in speech ("both ends included", "inclusive" are read with it)."""

from __future__ import annotations

from collections.abc import Callable

from convener.analytics.planner.catalog import _time_columns
from convener.analytics.planner.dates import _is_year
from convener.analytics.planner.state import _Filter, _Reading
from convener.analytics.planner.units import unit_named

FindColumn = Callable[[_Reading, int, int], str | None]
"""The numeric column of a range: (reading, where "between" is, where the words after the range start)."""
InUnit = Callable[[_Reading, str, float, int], float]
"""A number in the column's unit, given where the unit it is written in stands."""

_ENDS = (("both", "ends", "included"), ("both", "ends", "inclusive"), ("inclusive",), ("inclusively",))
"""Words after a range that say its ends are in it, as they are anyway."""


def read_number_ranges(reading: _Reading, find_column: FindColumn, in_unit: InUnit) -> None:
    """Each free "between <number> and <number>" becomes two conditions on its column."""
    tokens = reading.tokens
    for index in range(len(tokens) - 3):
        low, high = tokens[index + 1], tokens[index + 3]
        if reading.norm(index) != "between" or reading.norm(index + 2) != "and" \
                or not all(reading.free(i) for i in (index, index + 2)) \
                or not all(_number_free(reading, i) for i in (index + 1, index + 3)) \
                or low.number is None or high.number is None:  # (numbers in words too: "between one and two hours")
            continue
        if _is_year(low) and _is_year(high) and _time_columns(reading.table):
            continue  # "between 2005 and 2007": years, read with the dates
        column = find_column(reading, index, index + 4)
        if column is None:
            continue
        unit_at = index + 4
        reading.filters.append(_Filter(column, ">=", (in_unit(reading, column, low.number, unit_at),), "number",
                                       index))
        reading.filters.append(_Filter(column, "<=", (in_unit(reading, column, high.number, unit_at),), "number",
                                       index))
        # (a number that is also some text column's value: a plane model "60"; the unit after the range, which
        # would name the one column in that unit, "hours" the time zone's offset)
        for at in (index + 1, index + 3, *((unit_at,) if unit_named(reading.norm(unit_at)) else ())):
            mention = reading.mention_at(at)
            if mention is not None and mention.start == at:
                reading.mentions.remove(mention)
                reading.used.update(range(mention.start, mention.end))
        reading.used.update(range(index, index + 4))
        for words in _ENDS:
            at = next((i for i in range(index + 4, min(len(tokens), index + 10))
                       if all(reading.norm(i + k) == word for k, word in enumerate(words))), None)
            if at is not None:
                reading.used.update(range(at, at + len(words)))
                break


def _number_free(reading: _Reading, index: int) -> bool:
    """Whether the number at ``index`` is unread, though it may also be some text column's value."""
    mention = reading.mention_at(index)
    return index not in reading.used and (mention is None or mention.is_value and mention.end - mention.start == 1)
