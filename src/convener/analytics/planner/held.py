"""Periods the data holds nothing of: "How many flights left Newark in 2019?" over flights of 2013 alone, or
"penguins sampled in 2015" over egg dates of 2007 to 2009. A count of 0 (or no rows) would answer as if the
data could have held them; the question is declined, saying which dates the data covers."""

from __future__ import annotations

from datetime import date, timedelta

from convener.analytics.planner.base import NoPlan, SpanOf
from convener.analytics.planner.state import _Filter, _Reading
from convener.analytics.shapes import TIME_TYPES


def check_periods_held(reading: _Reading, span_of: SpanOf | None) -> None:
    """Refuse a question whose dates on one of the queried table's date columns (a year, a day, a span from one
    date to another, months or quarters) are all wholly outside the dates the column holds (``span_of``, its
    least and greatest). One of several periods outside them ("2031 compared with 2024") is said by the
    answer as a part it could not use."""
    if span_of is None:
        return
    for column in dict.fromkeys(f.column for f in reading.filters):
        info = reading.base.column(column)
        if info is None or info.type not in TIME_TYPES:
            continue
        asked = _asked_periods([f for f in reading.filters if f.column == column])
        if not asked:
            continue
        span = span_of(reading.base.name, column)
        if span is None:
            continue
        first, last = span[0][:10], span[1][:10]
        outside = [(start, end) for start, end in asked if end <= first or start > last]
        if len(outside) == len(asked):
            said = ", ".join(_said(start, end) for start, end in outside)
            raise NoPlan(f"{reading.base.name}.{column} holds dates from {first} to {last}: nothing of {said}")


def _asked_periods(filters: list[_Filter]) -> list[tuple[str, str]]:
    """The periods the filters on one date column ask for, as [start, end) ISO dates: each year said, each day,
    each span of months, and the one span the lower and upper bounds on dates make together."""
    periods: list[tuple[str, str]] = []
    lower: list[str] = []
    upper: list[str] = []
    for item in filters:
        if item.kind == "year" and item.op in ("=", "in"):
            periods.extend((f"{int(year):04d}-01-01", f"{int(year) + 1:04d}-01-01") for year in item.values
                           if isinstance(year, (int, float)) and 1 <= year < 9999)
        elif item.kind == "date" and item.op in ("=", "in"):
            periods.extend((str(day)[:10], _next_day(str(day)[:10])) for day in item.values)
        elif item.kind == "date" and item.op in (">=", ">"):
            lower.append(str(item.values[0])[:10])
        elif item.kind == "date" and item.op in ("<", "<="):
            upper.append(str(item.values[0])[:10])
        elif item.kind == "periods":
            bounds = [str(value)[:10] for value in item.values]
            periods.extend(zip(bounds[::2], bounds[1::2], strict=True))
    if lower and upper:
        periods.append((max(lower), min(upper)))
    return periods


def _next_day(day: str) -> str:
    try:
        return (date.fromisoformat(day) + timedelta(days=1)).isoformat()
    except ValueError:
        return day


def _said(start: str, end: str) -> str:
    """A period in words: "2019" for a whole year, else its dates."""
    if start[5:] == "01-01" and end[5:] == "01-01" and end[:4].isdigit() and int(end[:4]) == int(start[:4]) + 1:
        return start[:4]
    return f"{start} to before {end}"
