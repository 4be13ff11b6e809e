"""Choosing the shape of the answer from a reading."""

from __future__ import annotations

from convener.analytics.planner.base import NoPlan
from convener.analytics.planner.contrast import COMPARATIVES
from convener.analytics.planner.joined_rows import codes_of_names
from convener.analytics.planner.vocabulary import SUM
from convener.analytics.planner.yesno import ONLY_WORDS
from convener.analytics.planner.state import _Filter, _Reading
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
        if reading.counted_with_verb:
            # "how many departures were delayed": a condition said as a verb of the rows counted, not read; the
            # count of every row would not be the answer
            raise NoPlan(f"could not tell what '{reading.counted_with_verb}' says of the {reading.table.name} counted")
        reading.measures = [(c, a) for c, a in reading.measures if c != reading.counted_measure]


def _shape(reading: _Reading) -> str:
    """Which of the nine shapes the reading calls for; rankings first, since they may also group. A yes/no
    question is answered as whether any of the rows exists, and only a question about rows can be."""
    shape = _shape_asked(reading)
    if shape == "top" and reading.count and not reading.keys and reading.bucket is None \
            and not reading.yes_no:
        # "How many flights did the oldest plane make?": a count of what the top rows did, not those rows
        raise NoPlan("counting what the rows a superlative picks have is not something this planner does")
    if reading.asked_bound is not None and shape != "aggregate":
        raise NoPlan("a number compared with an aggregate needs one aggregate over the rows")
    if reading.yes_no and not reading.exists and shape == "top" and not reading.keys:
        # "Is the heaviest penguin a Gentoo?": whether the top rows have the value, not the top of those that do
        reading.asked_of_top = _asked_of_top(reading)
        if reading.asked_of_top is None:
            raise NoPlan("a yes/no question about the top rows is planned only as whether they have a value "
                         "it names ('a Gentoo')")
        reading.filters.remove(reading.asked_of_top)
        return shape
    if reading.yes_no and not reading.exists and shape == "rows" and not reading.shown:
        if any(token.norm in _UNIVERSAL and not _at_all(reading, index) for index, token in enumerate(reading.tokens)):
            # "Are all Chinstrap penguins on Dream?": whether every row is so, which rows that are cannot say
            reading.asked_of_all = _asked_of_all(reading)
            reading.filters.remove(reading.asked_of_all)
            _keep_measured(reading, reading.asked_of_all)
            return "all"
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
    # "how many flights went to LAX or SFO": one count of flights going to either, unless compared
    multi = [f for f in reading.filters if f.op in ("in",) and (f.kind in ("value", "year")
                                                                or f.kind == "weekday" and reading.compare)
             and (reading.compare or not f.either)]
    if reading.share_split is not None and not (reading.bucket or reading.keys or _has_time_key(reading)):
        compared = _shares_compared(reading, multi)
        if compared is None:
            return "share"
        # the share of each group, the groups kept by their condition (told by their codes where said by name)
        reading.keys.extend([*codes_of_names(reading, compared), compared])
        return "group"
    if reading.top is not None:
        return "top"
    if reading.bucket or _has_time_key(reading):
        return "time_series"
    if multi and reading.keys and multi[0].kind == "value" and (reading.measures or reading.count):
        return "compare"  # "average flipper length for males and females of each species": of each, each
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


def _shares_compared(reading: _Reading, several: list[_Filter]) -> str | None:
    """"Is the cancellation rate higher at Newark or at JFK?", "which has the higher late rate, AA or DL":
    a share asked of each of several values of one column, which one share of them all would not answer; the
    column to group by (the comparative word read), None when no share is compared."""
    values = [f for f in several if f.kind == "value" and f.op == "in"]
    comparative = next((i for i, token in enumerate(reading.tokens)
                        if token.norm in COMPARATIVES and reading.free(i)), None)
    if len(values) != 1 or not (reading.compare or comparative is not None):
        return None
    if comparative is not None:
        reading.used.add(comparative)
    return values[0].column


def _has_time_key(reading: _Reading) -> bool:
    """Whether a group key is a date column, which makes the shape a time series."""
    return any(reading.column(key).type in TIME_TYPES for key in reading.keys)


def _asked_of_top(reading: _Reading) -> _Filter | None:
    """The value a yes/no question asks its top rows to have: said after "a" or "an" ("a Gentoo", "a male")."""
    for condition in reading.filters:
        if condition.kind not in ("value", "name") or condition.op != "=" or condition.start < 1:
            continue
        first = condition.start
        while first > 0 and reading.tokens[first - 1].text[:1].isupper() \
                and reading.norm(first - 1) not in ("a", "an"):
            first -= 1  # the value's other words ("a Gentoo Penguin")
        if reading.norm(first - 1) in ("a", "an"):
            return condition
    return None


def _at_all(reading: _Reading, index: int) -> bool:
    """Whether "all" at ``index`` is said in "at all" ("does Southwest fly out of JFK at all"), which asks
    whether any row is so, not whether every one is."""
    return reading.norm(index) == "all" and reading.norm(index - 1) == "at"


_HAVING_A_VALUE = frozenset({"measured", "recorded"})


def _keep_measured(reading: _Reading, asked: _Filter) -> None:
    """"Do all measured gentoos have flippers longer than 200 mm?": the rows with a value of the column compared
    (not "does every flight have a tail number recorded", which asks for the value itself)."""
    if asked.kind == "number" and asked.op in ("<", "<=", ">", ">=") \
            and any(token.norm in _HAVING_A_VALUE for token in reading.tokens[:asked.start]):
        reading.filters.append(_Filter(asked.column, "not null", (), "number"))


def _asked_of_all(reading: _Reading) -> _Filter:
    """What "every" or "all" rows are asked to be: the condition said last ("every flight to SJU left from
    JFK", "all Chinstrap penguins on Dream"), the ones before it saying which rows; "every", "all" or "each"
    must come before the rows' noun and every condition. "Only" or "always" asks the one condition said after
    it ("did HA only ever fly to HNL": every HA flight went to HNL)."""
    # ("recorded" said is a condition asked: "does every flight have a tail number recorded")
    said = [item for item in reading.filters if item.start >= 0 and (item.kind == "missing" or item.op != "not null")]
    universal = next((i for i, token in enumerate(reading.tokens) if token.norm in ("all", "every", "each")
                      and not _at_all(reading, i)), None)
    only = next((i for i, token in enumerate(reading.tokens) if token.norm in ONLY_WORDS), None)
    if universal is None and only is not None:
        asked = [item for item in said if item.start > only]
        if len(asked) != 1:
            raise NoPlan(f"a yes/no question with '{reading.tokens[only].text}' asks one condition after it")
        reading.used.add(only)
        return asked[0]
    if universal is None or not said or any(item.start < universal for item in said):
        raise NoPlan("a yes/no question about all the rows is planned only as whether every row that meets "
                     "its first conditions meets its last one ('every flight to SJU left from JFK')")
    last = max(item.start for item in said)
    asked = [item for item in said if item.start == last]
    if len(asked) != 1:
        raise NoPlan("a yes/no question about all the rows asks one condition of them")
    return asked[0]
