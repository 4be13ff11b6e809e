"""Units of measure: how a question and a column's name or description write them, and the factors between
a few of them."""

from __future__ import annotations

from convener.analytics.shapes import ColumnInfo
from convener.analytics.wording import phrase, stem


UNIT_NAMES: tuple[frozenset[str], ...] = (
    frozenset({"grams", "gram", "g"}), frozenset({"kilograms", "kilogram", "kilos", "kg"}),
    frozenset({"feet", "foot", "ft"}), frozenset({"miles", "mile", "mi", "mileage"}), frozenset({"km", "kilometres",
                                                                                      "kilometers"}),
    frozenset({"millimetres", "millimeters", "mm"}), frozenset({"centimetres", "centimeters", "cm"}),
    frozenset({"metres", "meters", "m"}), frozenset({"minutes", "minute", "min", "mins"}),
    frozenset({"hours", "hour", "hrs"}), frozenset({"seconds", "second", "secs"}),
    frozenset({"pounds", "pound", "lbs", "lb"}), frozenset({"inches", "inch", "in"}),
)
"""Names of one unit, the way a question and a column's name or description may write it."""
UNIT_KEYS = {group: name for group, name in zip(UNIT_NAMES, (
    "grams", "kilograms", "feet", "miles", "km", "millimetres", "centimetres", "metres", "minutes", "hours",
    "seconds", "pounds", "inches"), strict=True)}

_FACTORS: dict[tuple[str, str], float] = {
    ("hours", "minutes"): 60, ("hours", "seconds"): 3600, ("minutes", "seconds"): 60, ("kilograms", "grams"): 1000,
    ("km", "metres"): 1000, ("centimetres", "millimetres"): 10,
    # exact by definition (the international mile, foot, inch and pound)
    ("miles", "km"): 1.609344, ("feet", "metres"): 0.3048, ("inches", "centimetres"): 2.54,
    ("pounds", "kilograms"): 0.45359237,
}
CONVERSIONS: dict[tuple[str, str], float] = {
    **_FACTORS, **{(target, source): 1 / factor for (source, target), factor in _FACTORS.items()}}
"""Factors from the unit a column is in to the unit a question asks for: each one way, its inverse derived."""


def unit_named(word: str) -> str | None:
    """The unit a word names ("hrs" → "hours"), as the first name of its group in UNIT_NAMES."""
    return next((UNIT_KEYS[group] for group in UNIT_NAMES if word in group), None)


def unit_of(column: ColumnInfo) -> str | None:
    """The unit a column is in, from the end of its name (``body_mass_g``) or its description ("in minutes")."""
    last = phrase(column.name)[-1:]
    for group in UNIT_NAMES:
        if last and last[0] in {*group, *map(stem, group)} or described_in(column.description or "", group):
            return UNIT_KEYS[group]
    return None


def described_in(description: str, names: frozenset[str]) -> bool:
    """Whether a column's description says it is measured in one of ``names`` ("in miles"), not in a
    rate of it ("miles per hour")."""
    words = phrase(description)
    stems = {stem(name) for name in names - {"in", "m", "g", "min", "second"}}
    return any(word in stems and "per" not in words[place + 1:place + 2] for place, word in enumerate(words))
