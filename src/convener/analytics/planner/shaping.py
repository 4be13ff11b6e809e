"""Choosing the shape of the answer from a reading."""

from __future__ import annotations

from convener.analytics.planner.base import NoPlan
from convener.analytics.planner.vocabulary import SUM
from convener.analytics.planner.state import _Reading
from convener.analytics.shapes import TIME_TYPES


def _settle_count(reading: _Reading) -> None:
    """"How many jobs were added in total" sums a measure; "how many stock prices do we have" counts rows."""
    if not reading.count or not reading.measures:
        return
    if reading.amount is not None and not any(agg for _, agg in reading.measures):
        reading.measures = [(c, SUM if c == reading.amount else a) for c, a in reading.measures]
    if any(agg for _, agg in reading.measures):
        reading.count = reading.rows_counted  # kept only where the rows are counted beside the measures
    elif reading.counted_measure:
        reading.measures = [(c, a) for c, a in reading.measures if c != reading.counted_measure]


def _shape(reading: _Reading) -> str:
    """Which of the nine shapes the reading calls for; rankings first, since they may also group. A yes/no
    question is answered as whether any of the rows exists, and only a question about rows can be."""
    shape = _shape_asked(reading)
    if reading.yes_no and not reading.exists and shape == "rows" and not reading.shown:
        if any(token.norm in _UNIVERSAL for token in reading.tokens):
            # "Are all Chinstrap penguins on Dream?": whether every row is so, which rows that are cannot say
            raise NoPlan("a yes/no question about all the rows is not something this planner answers")
        reading.exists = True
    if not reading.exists or reading.count:
        return shape  # "Were any WN flights cancelled? How many?": the count asked for answers both
    if shape not in ("rows", "count") or reading.distinct:
        raise NoPlan("a yes/no question is planned only as whether any row meets its conditions")
    return "exists"


_UNIVERSAL = frozenset({"all", "every", "each", "only", "always", "none"})


def _shape_asked(reading: _Reading) -> str:
    """The shape of what the question computes, yes/no aside."""
    if reading.contrast is not None:
        return "contrast"
    # days of the week set side by side ("compare Saturdays with Sundays") are compared; "on Saturdays or
    # Sundays" alone is one condition
    multi = [f for f in reading.filters if f.op in ("in",) and (f.kind in ("value", "year")
                                                                or f.kind == "weekday" and reading.compare)]
    if reading.share_split is not None and not (reading.bucket or reading.keys or _has_time_key(reading)):
        return "share"
    if reading.top is not None:
        return "top"
    if reading.bucket or _has_time_key(reading):
        return "time_series"
    if reading.keys:
        return "group"
    if multi and (reading.compare or reading.measures or reading.count):
        return "compare"
    if (reading.count and not reading.rows_counted) or reading.distinct:
        return "count"
    if reading.count and not reading.measures:
        return "count"
    if reading.measures and (reading.compare or any(agg for _, agg in reading.measures)):
        return "aggregate"
    return "rows"


def _has_time_key(reading: _Reading) -> bool:
    """Whether a group key is a date column, which makes the shape a time series."""
    return any(reading.column(key).type in TIME_TYPES for key in reading.keys)
