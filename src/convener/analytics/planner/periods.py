"""Periods said in words: ranges of days or months ("between July 3 and July 5, 2013", "from June through
August 2013", "June-August"), quarters and halves of a year ("the first quarter of 2013", "Q4", "the second
half") and days known by name ("Christmas Day 2013", "New Year's Day"), as conditions on a date column."""

from __future__ import annotations

from datetime import date

from convener.analytics.planner.base import NoPlan
from convener.analytics.planner.state import _Filter, _Reading
from convener.analytics.shapes import TIME_TYPES, ColumnInfo
from convener.analytics.wording import MONTHS, Token

_HOLIDAYS: tuple[tuple[tuple[str, ...], tuple[int, int]], ...] = (
    (("new", "year", "day"), (1, 1)), (("new", "years", "day"), (1, 1)), (("new", "year", "eve"), (12, 31)),
    (("new", "years", "eve"), (12, 31)), (("christmas", "day"), (12, 25)), (("christmas", "eve"), (12, 24)),
    (("christmas",), (12, 25)), (("independence", "day"), (7, 4)), (("valentine", "day"), (2, 14)),
    (("valentines", "day"), (2, 14)), (("halloween",), (10, 31)), (("fourth", "of", "july"), (7, 4)),
    (("july", "fourth"), (7, 4)),
)
"""Days of the year known by a name that falls on the same date every year."""
_RANGES = (("between", "and"), ("from", "to"), ("from", "through"), ("from", "until"), ("from", "till"))
_TO = frozenset({"to", "through", "thru", "until", "till"})
"""What joins the two months of a range said without "from" ("January to June")."""
_DASHES = frozenset({"-", "–", "—"})
_ORDINALS = {"first": 1, "1st": 1, "second": 2, "2nd": 2, "third": 3, "3rd": 3, "fourth": 4, "4th": 4,
             "fifth": 5, "5th": 5, "sixth": 6, "6th": 6, "last": -1, "final": -1}
_PARTS = {"quarter": 4, "half": 2}
"""A year's parts by name, and how many of them a year has."""
_PART_CODES = {"q": "quarter", "h": "half"}
""""Q3", "H1": a part of a year by its letter and number."""


def read_periods(reading: _Reading, column: ColumnInfo) -> None:
    """Read named days and ranges of days or months on ``column``, before single dates are; where it is no
    date column (a year: "New Year's Day" names a column called year), on the table's first date column."""
    if column.type not in TIME_TYPES:
        dates = [c for c in reading.base.columns if c.type in TIME_TYPES]
        if not dates:
            return
        column = dates[0]
    _refuse_loose_parts(reading)
    _read_parts_of_year(reading, column)
    _read_day_ranges(reading, column)
    _read_month_ranges(reading, column)
    _read_holidays(reading, column)


def _month_at(reading: _Reading, index: int) -> int | None:
    token = reading.tokens[index] if 0 <= index < len(reading.tokens) else None
    if token is None or token.kind != "word" or token.norm not in MONTHS or index in reading.used:
        return None
    return MONTHS[token.norm] if len(token.norm) > 3 or token.text[:1].isupper() else None


def _day_at(reading: _Reading, index: int) -> int | None:
    token = reading.tokens[index] if 0 <= index < len(reading.tokens) else None
    if token is None or token.kind != "number" or not token.is_integer or index in reading.used:
        return None
    return int(token.number or 0) if 1 <= (token.number or 0) <= 31 else None


def _year_at(reading: _Reading, index: int) -> int | None:
    token = reading.tokens[index] if 0 <= index < len(reading.tokens) else None
    if token is None or token.kind != "number" or not token.is_integer or "." in token.text or index in reading.used:
        return None
    return int(token.number or 0) if 1800 <= (token.number or 0) <= 2100 else None


def _iso(year: int, month: int, day: int) -> str:
    try:
        return date(year, month, day).isoformat()
    except ValueError:
        raise NoPlan(f"{year}-{month:02d}-{day:02d} is not a date") from None


def _read_day_ranges(reading: _Reading, column: ColumnInfo) -> None:
    """"between July 3 and July 5, 2013", "from March 1 to 15, 2013" (both days included) and "from June
    through August 2013" (whole months), the year said once at the end."""
    for index in range(len(reading.tokens)):
        first_month = _month_at(reading, index + 1)
        if index in reading.used or first_month is None:
            continue
        first_day = _day_at(reading, index + 2)
        at = index + (3 if first_day else 2)
        if (reading.norm(index), reading.norm(at)) not in _RANGES:
            continue
        second_month = _month_at(reading, at + 1)
        second_at = at + 2 if second_month else at + 1
        second_day = _day_at(reading, second_at) if first_day else None
        year_at = second_at + 1 if second_day else second_at
        year = _year_at(reading, year_at)
        if year is None or (first_day is None) != (second_day is None) or (second_month is None and not second_day):
            continue
        last_month = second_month or first_month
        if first_day is not None and second_day is not None:
            start, end, op = _iso(year, first_month, first_day), _iso(year, last_month, second_day), "<="
        else:
            start = _iso(year, first_month, 1)
            end, op = _iso(year + (last_month == 12), last_month % 12 + 1, 1), "<"
        reading.filters.append(_Filter(column.name, ">=", (start,), "date", index))
        reading.filters.append(_Filter(column.name, op, (end,), "date", index))
        reading.used.update(range(index, year_at + 1))
        if reading.norm(index - 1) == "in":
            reading.used.add(index - 1)


_LOOSE = frozenset({"early", "late", "mid", "middle"})
"""Words that take a loose part of a period ("late 2013", "early July"): no dates say where it starts."""


def _refuse_loose_parts(reading: _Reading) -> None:
    """"late 2013", "in early July", "mid-2013": a part of a period no dates bound. Read as the whole period
    (or "late" as lateness) the answer would be another question's: refused."""
    for index in range(1, len(reading.tokens)):
        before = reading.tokens[index - 1]
        if before.norm in _LOOSE and (_month_at(reading, index) is not None
                                      or _year_at(reading, index) is not None):
            raise NoPlan(f"'{before.text} {reading.tokens[index].text}' is a part of a period that no dates "
                         "bound; say the dates")


def _read_parts_of_year(reading: _Reading, column: ColumnInfo) -> None:
    """"the first quarter of 2013", "fourth-quarter flights", "Q4 2013", "the second half of the year": the
    months of that part of the year (of the year said, else of every year in the data)."""
    for index in range(len(reading.tokens)):
        if index in reading.used:
            continue
        part = _part_at(reading, index)
        if part is None:
            continue
        (first, last), end = part
        year_at = end + 1 if reading.norm(end) == "of" else end
        year = _year_at(reading, year_at)
        if year is None and reading.norm(year_at) == "the" and reading.norm(year_at + 1) == "year":
            said = range(index, year_at + 2)  # "of the year": each year's
        else:
            said = range(index, year_at + 1 if year is not None else end)
        _add_months(reading, column, first, last, year, index)
        reading.used.update(said)
        before = index - 1
        if reading.norm(before) == "the":
            reading.used.add(before)
            before -= 1
        if reading.norm(before) in ("in", "during", "for"):
            reading.used.add(before)


def _part_at(reading: _Reading, index: int) -> tuple[tuple[int, int], int] | None:
    """The months (first, last) of the part of a year said at ``index`` and where its words end."""
    token = reading.tokens[index]
    code = _PART_CODES.get(token.norm[:1]) if len(token.norm) == 2 and token.norm[1:].isdigit() else None
    if code is not None and token.text[:1].isupper():
        coded, parts = int(token.norm[1:]), _PARTS[code]
        return (_months(coded, parts), index + 1) if 1 <= coded <= parts else None
    ordinal = _ORDINALS.get(token.norm)
    size = _PARTS.get(reading.norm(index + 1))
    if ordinal is None or size is None or index + 1 in reading.used:
        return None
    number = size if ordinal == -1 else ordinal
    if number > size:
        raise NoPlan(f"a year has no {token.text} {reading.tokens[index + 1].text}")
    return _months(number, size), index + 2


def _months(number: int, size: int) -> tuple[int, int]:
    """The first and last month of part ``number`` of a year cut into ``size`` parts."""
    length = 12 // size
    return (number - 1) * length + 1, number * length


def _read_month_ranges(reading: _Reading, column: ColumnInfo) -> None:
    """"January to June", "June-August 2013", "between June and August", "from March through May": every
    month from the one to the other (of the year said, else of every year in the data). "From June through
    August 2013" has been read with the days' ranges by then."""
    for index in range(len(reading.tokens)):
        first = _month_at(reading, index)
        if first is None:
            continue
        opened = reading.norm(index - 1) in ("between", "from") and index - 1 not in reading.used
        said_from = index - 1 if opened else index
        joiner = reading.norm(index + 1)
        dashed = _DASHES.intersection(reading.gap(index + 1))
        if dashed:
            last_at = index + 1
        elif joiner in _TO or (joiner == "and" and reading.norm(index - 1) == "between"):
            last_at = index + 2
        else:
            continue
        last = _month_at(reading, last_at)
        if last is None:
            continue
        year = _year_at(reading, last_at + 1)
        end = last_at + 1 if year is None else last_at + 2
        _add_months(reading, column, first, last, year, index)
        reading.used.update(range(said_from, end))
        if reading.norm(said_from - 1) in ("in", "during"):
            reading.used.add(said_from - 1)


def _add_months(reading: _Reading, column: ColumnInfo, first: int, last: int, year: int | None,
                start: int) -> None:
    """Months ``first`` to ``last`` (wrapping past December) of ``year``, or of every year when it is None."""
    if year is not None and first <= last:
        reading.filters.append(_Filter(column.name, ">=", (_iso(year, first, 1),), "date", start))
        end = _iso(year + (last == 12), last % 12 + 1, 1)
        reading.filters.append(_Filter(column.name, "<", (end,), "date", start))
        return
    if year is not None:
        raise NoPlan(f"months {first} to {last} of {year} run into another year; say the dates")
    if first == last:
        reading.filters.append(_Filter(column.name, "=", (first,), "month", start))
    elif first < last:  # one range of months, not a list of them to compare
        reading.filters.append(_Filter(column.name, ">=", (first,), "month", start))
        reading.filters.append(_Filter(column.name, "<=", (last,), "month", start))
    else:  # "November to February"
        wrapped = (*range(first, 13), *range(1, last + 1))
        reading.filters.append(_Filter(column.name, "in", wrapped, "month", start))


def _read_holidays(reading: _Reading, column: ColumnInfo) -> None:
    """"Christmas Day 2013" (that day), "on New Year's Day" (that day of every year in the data)."""
    tokens = reading.tokens
    for index in range(len(tokens)):
        for words, (month, day) in _HOLIDAYS:
            span = range(index, index + len(words))
            if any(i in reading.used or reading.norm(i) != word for i, word in zip(span, words, strict=False)) \
                    or span.stop > len(tokens):
                continue
            year = _year_at(reading, span.stop)
            if year is None and words[0] == "new" and not _capitalised(tokens[index]):
                continue  # ("christmas day 2013" is that day whatever its capitals; "new year" alone may be anything)
            said = [*span, span.stop] if year is not None else list(span)
            if year is not None:
                reading.filters.append(_Filter(column.name, "=", (_iso(year, month, day),), "date", index))
            else:
                add_day_of_every_year(reading, column, month, day, index)
            reading.used.update(said)
            for mention in [m for m in reading.mentions if m.start in said]:
                reading.mentions.remove(mention)  # "Year's" is no column called year here
            if reading.norm(index - 1) in ("on", "during"):
                reading.used.add(index - 1)
            break


def add_day_of_every_year(reading: _Reading, column: ColumnInfo, month: int, day: int, start: int) -> None:
    """"On New Year's Day", "on July 4": that day of every year in the data, as its month and its day."""
    try:
        date(2000, month, day)  # (a leap year: February 29 is a day of some years)
    except ValueError:
        raise NoPlan(f"{month:02d}-{day:02d} is not a day of the year") from None
    reading.filters.append(_Filter(column.name, "=", (month,), "month", start))
    reading.filters.append(_Filter(column.name, "=", (day,), "day", start))


def _capitalised(token: Token) -> bool:
    """Days known by name are written as names ("Christmas"); "new year" in lower case may be anything."""
    return token.text[:1].isupper()


def read_compared_periods(reading: _Reading) -> None:
    """"Compare the average delay in July 2013 with December 2013": whole months (or single days) of one date
    column that no row can fall in at once are periods compared, each its own group, not conditions that
    together keep nothing. They become one condition (the rows in any of them) and the bucket of their size."""
    for column in dict.fromkeys(f.column for f in reading.filters if f.kind == "date"):
        dated = [f for f in reading.filters if f.column == column and f.kind == "date"]
        days = [f for f in dated if f.op == "="]
        if len(days) == len(dated) > 1 and len({f.values for f in days}) == len(days):
            values = tuple(v for f in days for v in f.values)
            _replace(reading, dated, _Filter(column, "in", values, "date", days[0].start), "day")
            continue
        starts = sorted((f for f in dated if f.op == ">="), key=lambda f: str(f.values[0]))
        ends = sorted((f for f in dated if f.op == "<"), key=lambda f: str(f.values[0]))
        if len(starts) < 2 or len(starts) != len(ends) or len(dated) != 2 * len(starts):
            continue
        spans = [(str(a.values[0]), str(b.values[0])) for a, b in zip(starts, ends, strict=True)]
        if not all(_whole_month(first, following) for first, following in spans) \
                or any(spans[i][1] > spans[i + 1][0] for i in range(len(spans) - 1)):
            continue
        values = tuple(bound for span in spans for bound in span)
        _replace(reading, dated, _Filter(column, "any of", values, "periods", starts[0].start), "month")


def _whole_month(first: str, following: str) -> bool:
    """Whether [first, following) is one calendar month."""
    start, end = date.fromisoformat(first), date.fromisoformat(following)
    return start.day == 1 and end == date(start.year + (start.month == 12), start.month % 12 + 1, 1)


def _replace(reading: _Reading, dated: list[_Filter], periods: _Filter, bucket: str) -> None:
    if reading.bucket not in (None, bucket):
        return
    reading.filters = [f for f in reading.filters if f not in dated] + [periods]
    reading.bucket = bucket
