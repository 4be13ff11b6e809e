"""Spread of a measure: "the standard deviation of bill depth", "the population variance of price", "std
dev of delay per carrier". Sample statistics unless "population" is said, as SQL's STDDEV and VARIANCE are;
SQLite has neither, so there the question is refused."""

from __future__ import annotations

from convener.analytics.planner.state import _note_term, _numeric_mention, _Reading
from convener.analytics.planner.vocabulary import STDDEV_POP, STDDEV_SAMP, VAR_POP, VAR_SAMP

_NAMES: tuple[tuple[tuple[str, ...], bool], ...] = (
    (("standard", "deviation"), True), (("std", "dev"), True), (("stddev",), True), (("stdev",), True),
    (("variance",), False),
)
"""Words of a spread, and whether they name the standard deviation (else the variance)."""


def read_spread(reading: _Reading) -> None:
    """A spread word followed (past "of" and "the") by a numeric column: that column's spread, a measure."""
    for index in range(len(reading.tokens)):
        for words, deviation in _NAMES:
            if not all(reading.norm(index + i) == word and reading.free(index + i) for i, word in enumerate(words)):
                continue
            position = index + len(words)
            while reading.norm(position) in ("of", "the", "in", "for") and reading.free(position):
                position += 1
            owner = reading.mention_at(position)
            if owner is not None and owner.is_value and owner.start == position \
                    and reading.tokens[owner.end - 1].possessive:
                position = owner.end  # "of Delta's departure delays": the value is a condition, read as one
            mention = _numeric_mention(reading, position)
            if mention is None or mention.start != position or mention not in reading.mentions:
                continue
            said = list(range(index, position))
            population = reading.norm(index - 1) == "population"
            if reading.norm(index - 1) in ("sample", "population") and reading.free(index - 1):
                said.append(index - 1)
            aggregate = (STDDEV_POP if population else STDDEV_SAMP) if deviation else \
                (VAR_POP if population else VAR_SAMP)
            reading.measures.append((mention.target.column, aggregate))
            reading.mentions.remove(mention)
            _note_term(reading, mention)
            reading.used.update(said)
            reading.used.update(range(mention.start, mention.end))
            break
