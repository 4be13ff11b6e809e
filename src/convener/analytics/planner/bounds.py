"""Open bounds said after a number: "5,500 g or more", "3 engines or fewer", "2,000 miles or above". The
number's own reading (a count of a column, a measure in a unit) stays; the words after it turn its equality
into a bound, which ignored would count only the rows exactly at the number."""

from __future__ import annotations

from collections.abc import Callable

from convener.analytics.planner.catalog import _table_words, _time_columns
from convener.analytics.planner.dates import _is_year
from convener.analytics.planner.state import _Filter, _note_term, _numeric_mention, _Reading
from convener.analytics.planner.vocabulary import _UNITS

_UPWARD = frozenset({"more", "above", "greater", "higher", "over", "larger", "bigger", "longer", "heavier",
                     "beyond"})
_DOWNWARD = frozenset({"less", "below", "fewer", "lower", "under", "smaller", "shorter", "lighter"})
# ("2005 or later", "2010 or before" are years, which the dates read)


def read_open_bounds(reading: _Reading) -> None:
    """Marks "or more|less …" after a number (past its unit or column, a few words) as read, and records
    the bound on the number's position for the step that reads the number ("30+" too)."""
    for index, token in enumerate(reading.tokens):
        if token.number is None or index in reading.used \
                or _is_year(token) and _time_columns(reading.table) and reading.norm(index + 1) == "or":
            continue  # ("made in 2005 or more recently": a year, read with the dates; "2,000 miles or more" is not)
        if reading.gap(index + 1).strip() == "+" or index + 1 == len(reading.tokens) and reading.text.rstrip(
                "?.! ").endswith("+"):
            reading.bounds[index] = (">=", ())  # "destinations with 30+ flights"
            continue
        position = index + 1
        while position < len(reading.tokens) and position - index <= 4 and reading.norm(position) != "or" \
                and (reading.norm(position) in _UNITS or reading.mention_at(position) is not None
                     and not reading.mention_at(position).is_value):  # type: ignore[union-attr]
            position += 1
        if reading.norm(position) != "or" or not reading.free(position):
            continue
        word = reading.norm(position + 1)
        if word not in _UPWARD | _DOWNWARD or not reading.free(position + 1):
            continue
        reading.bounds[index] = (">=" if word in _UPWARD else "<=", (position, position + 1))
        reading.used.update((position, position + 1))


def settle_open_bounds(reading: _Reading) -> None:
    """A bound whose number no step read as a column's ("a delay of 60 minutes or more" where 60 was taken
    for a value) is given back as unread words, which the checks then name."""
    for _, said in reading.bounds.values():
        reading.used.difference_update(said)
    reading.bounds.clear()


def read_measure_of_number(reading: _Reading,
                           in_column_unit: Callable[[_Reading, str, float, int], float] | None = None) -> None:
    """"a departure delay of 60 minutes (or more)", "a body mass of 4,000 g", "flippers (that are) 230 mm or
    longer": the numeric column named right before "of" and a number (or right before a number with its bound,
    past a verb of being) is compared with it, even where the number is also some text column's value (a plane
    model called "60")."""
    for index, token in enumerate(reading.tokens):
        # ("an arrival delay of zero or less": a number word too)
        between = reading.norm(index - 1) == "of" \
            or reading.norm(index - 1) in ("is", "are", "was", "were") and reading.free(index - 1)
        if token.number is None or index in reading.used \
                or reading.norm(index - 1) != "of" and index not in reading.bounds:
            continue
        measure = _numeric_mention(reading, index - 2 if between else index - 1)
        if measure is None or measure.end != (index - 1 if between else index) or measure not in reading.mentions:
            continue
        following = reading.mention_at(index + 1)
        if following is not None and not following.is_value and following.target.column != measure.target.column:
            continue  # "average displacement of 8 cylinder cars": the number is the next column's
        if _is_year(token) and measure.end - measure.start == 1 and _time_columns(reading.table) \
                and reading.tokens[measure.start].stem in _table_words(reading.base):
            continue  # "the first flight of 2013": the rows' own noun (a flight number's column too), and a year
        value = reading.mention_at(index)
        if value is not None and value.is_value and value.start == index and value.end == index + 1:
            reading.mentions.remove(value)  # a number said as a measure's amount is no text value
        elif value is not None:
            continue
        op = reading.bounds.pop(index, ("=", ()))[0]
        amount = in_column_unit(reading, measure.target.column, token.number, index + 1) if in_column_unit \
            else token.number
        reading.filters.append(_Filter(measure.target.column, op, (amount,), "number", measure.start))
        reading.mentions.remove(measure)
        _note_term(reading, measure)
        reading.used.update(range(measure.start, index + 1))
        after = index + 1
        while reading.norm(after) in _UNITS and reading.free(after):
            reading.used.add(after)
            after += 1
