"""Words of judgement ("worst", "best"): which end of a column they mean depends on whether more of it is
good (fuel economy) or bad (a delay, a price). Where that is not known the question is declined rather
than answered with a guessed end."""

from __future__ import annotations

from convener.analytics.planner.base import NoPlan
from convener.analytics.planner.state import _Reading
from convener.analytics.planner.vocabulary import MAX, MIN
from convener.analytics.wording import phrase, stem

_JUDGEMENTS = {"worst": False, "best": True}  # whether the word asks for the better end
_MORE_IS_BETTER = frozenset({"economy", "mpg", "efficiency", "score", "rating", "profit", "revenue", "sales",
                             "income", "yield", "gain", "speed", "satisfaction", "accuracy"})
_MORE_IS_WORSE = frozenset({"delay", "cost", "price", "loss", "error", "fee", "expense", "penalty", "latency",
                            "wait", "defect", "complaint", "debt", "lateness"})


def _more_is_better(reading: _Reading, column: str) -> bool | None:
    """Whether a larger value of ``column`` is better, by the words of its name; None when not known."""
    words = {*phrase(column), *(stem(word) for word in phrase(column))}
    better, worse = bool(words & _MORE_IS_BETTER), bool(words & _MORE_IS_WORSE)
    return better if better != worse else None


def _read_judgement(reading: _Reading) -> None:
    """"the worst departure delay" is the largest delay, "the worst fuel economy" the lowest: the end a
    judgement word read as high or low is set by the column it judges ("is JFK's average delay worse than
    LaGuardia's": higher)."""
    _read_contrast_judged(reading)
    judged = [token.norm for token in reading.tokens if token.norm in _JUDGEMENTS]
    if not judged:
        return
    better = _JUDGEMENTS[judged[0]]
    ranked = reading.order_measure or (reading.measures[0][0] if reading.measures else None)
    columns = [name for name, agg in reading.measures if agg in (MIN, MAX)]
    if reading.top is not None and ranked is not None:
        columns.append(ranked)
    for column in dict.fromkeys(columns):
        polarity = _more_is_better(reading, column)
        if polarity is None:
            raise NoPlan(f"could not tell whether the {judged[0]} {column} is its highest or its lowest")
        high = better == polarity
        reading.measures = [(name, (MAX if high else MIN) if name == column and agg in (MIN, MAX) else agg)
                            for name, agg in reading.measures]
        if reading.top is not None and column == ranked:
            reading.descending = high
            if reading.direction is not None:
                reading.direction = high


def _read_contrast_judged(reading: _Reading) -> None:
    """A contrast said with "worse" or "better" asks for the end its one measure's words say is worse or better;
    declined where they say neither (a worse distance)."""
    if reading.contrast_judged is None or reading.contrast is None:
        return
    measured = {name for name, _ in reading.measures}
    polarity = _more_is_better(reading, measured.pop()) if len(measured) == 1 else None
    if polarity is None:
        raise NoPlan(f"could not tell whether {reading.contrast_judged} means higher or lower here")
    first, second, _, kind = reading.contrast
    reading.contrast = (first, second, polarity == (reading.contrast_judged == "better"), kind)
