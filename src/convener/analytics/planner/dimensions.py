"""Adjectives of measure ("long", "heavier", "farthest"): the column words they name, and which way."""

from __future__ import annotations

from convener.analytics.planner.catalog import _dimension, _Mention, _table_words, _Target
from convener.analytics.planner.state import _Reading
from convener.analytics.planner.vocabulary import _AGG_WORDS, _UNITS
from convener.analytics.shapes import NUMBER_TYPES
from convener.analytics.wording import phrase, stem


def _measured_columns(reading: _Reading, nouns: tuple[str, ...]) -> list[str]:
    """Numeric columns whose names hold one of ``nouns`` ("bill_length_mm" for length)."""
    return [c.name for c in reading.table.columns if c.type in NUMBER_TYPES
            and any(noun in phrase(c.name) or stem(noun) in phrase(c.name) for noun in nouns)]


def read_asked_measure(reading: _Reading) -> None:
    """"How far do flights go on average", "how heavy are the Gentoos": "how" before an adjective of measure
    asks for the column it measures, as a measure (its aggregate said elsewhere: "on average"). Read only
    where one column is so measured, or the question names it as well ("how far, in miles")."""
    for index, token in enumerate(reading.tokens[:-1]):
        adjective = index + 1
        if token.norm != "how" or not reading.free(index) or not reading.free(adjective):
            continue
        found = _dimension(reading.norm(adjective))
        if found is None or found[2] != "base":
            continue
        columns = _measured_columns(reading, found[0])
        if any(not m.is_value and m.target.column in columns for m in reading.mentions):
            reading.used.update((index, adjective))  # the column is named as well: that mention is the measure
            continue
        if len(columns) != 1:
            continue
        reading.mentions.append(_Mention(adjective, adjective + 1, _Target(reading.table.name, columns[0]),
                                         "dimension"))
        reading.mentions.sort(key=lambda mention: mention.start)
        reading.used.add(index)


_OTHER_NAMES = {"weight": ("mass",), "weights": ("mass",), "elevation": ("altitude",), "elevations": ("altitude",)}
"""Nouns of a measure by another of its names ("the average weight" of a column of body mass)."""


def read_measure_nouns(reading: _Reading) -> None:
    """"What's the average weight of penguins …" of a table with a body mass and no weight: the one numeric
    column whose name or description says the other name of the measure."""
    rows = _table_words(reading.base)
    for index, token in enumerate(reading.tokens):
        names = _OTHER_NAMES.get(token.norm)
        if names is None or not reading.free(index) or not _of_the_rows(reading, index, rows):
            continue
        columns = [c.name for c in reading.table.columns if c.type in NUMBER_TYPES
                   and any(stem(name) in {*phrase(c.name), *phrase(c.description or "")} for name in names)]
        if len(columns) == 1:
            reading.mentions.append(_Mention(index, index + 1, _Target(reading.table.name, columns[0]), "dimension"))
            reading.mentions.sort(key=lambda mention: mention.start)


def _of_the_rows(reading: _Reading, index: int, rows: set[str]) -> bool:
    """Whether the measure named at ``index`` is the rows' own: not of another thing said before it ("egg
    weight") or after "of" ("the weight of the eggs"), which the table does not measure."""
    def names_rows(at: int) -> bool:  # the rows' noun, or a value of theirs ("Gentoo weight")
        mention = reading.mention_at(at)
        return reading.tokens[at].stem in rows or mention is not None and mention.is_value

    before = reading.tokens[index - 1] if index > 0 else None
    # (a unit before it is the measure's own: "above 1,000 ft elevation")
    if before is not None and before.kind == "word" and not before.is_stopword and before.norm not in _AGG_WORDS \
            and before.norm not in _UNITS and not names_rows(index - 1):
        return False
    if reading.norm(index + 1) == "of":
        owner = index + 3 if reading.norm(index + 2) in ("the", "a", "an", "all") else index + 2
        return owner >= len(reading.tokens) or names_rows(owner)
    return True


def read_ranking_superlative(reading: _Reading) -> None:
    """"The 5 longest routes by distance": a superlative of measure in a ranking whose measure is named
    (and is one the adjective measures) is the ranking's direction, which is read."""
    ranked = {reading.order_measure, *(column for column, _ in reading.measures)} - {None}
    if reading.top is None or not ranked:
        return
    for index, token in enumerate(reading.tokens):
        found = _dimension(token.norm) if reading.free(index) else None
        # (a journey's length is its distance: "the longest routes by distance")
        nouns = (*found[0], *(("distance",) if "length" in found[0] else ())) if found is not None else ()
        if found is not None and found[2] == "superlative" and ranked & set(_measured_columns(reading, nouns)):
            reading.used.add(index)
