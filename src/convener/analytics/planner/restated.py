"""Words that restate what a table's description says of every row ("flights out of New York City": "out of
New York", "NYC"): said in a question, they add nothing to it."""

from __future__ import annotations

import re
from functools import lru_cache

from convener.analytics.planner.described import described_initials
from convener.analytics.planner.state import _Reading
from convener.analytics.shapes import TableInfo
from convener.analytics.wording import phrase


@lru_cache(maxsize=1024)
def described_pairs(table: TableInfo) -> frozenset[tuple[str, str]]:
    """Pairs of words side by side in a table's description (stems of its content words, in order): the
    description says what every row is ("Adult penguins studied near Palmer Station", "flights out of New York
    City"), so a question saying two of its words together ("adult penguins", "New York") says nothing more of
    the rows; one of them said alone beside another word ("new planes") may well say something more."""
    words = phrase(table.description or "")
    return frozenset(zip(words, words[1:], strict=False))


@lru_cache(maxsize=1024)
def described_ends(table: TableInfo) -> frozenset[str]:
    """The last word of each clause of a table's description, the thing the clause names ("from the FAA
    registry", "in a 1-in-100 sample"): said alone, it names where the rows come from."""
    clauses = re.split(r"[,.:;(]", table.description or "")
    return frozenset(words[-1] for words in map(phrase, clauses) if words)


def restated_stems(reading: _Reading, index: int) -> tuple[str, ...]:
    """The stems of the description's words the word at ``index`` says: those of the name it is the initials
    of, written in capitals ("NYC"), else its own."""
    token = reading.tokens[index]
    if token.text.isupper() and token.norm in described_initials(reading.table):
        return described_initials(reading.table)[token.norm]
    return (token.stem,)


def said_as_described(reading: _Reading, index: int) -> bool:
    """Whether the word at ``index`` stands beside a word it stands beside in the table's description, as
    there ("adult penguins", "out of New York"), ends a clause of it ("registry"), or is the initials of a
    name it says ("NYC" for New York City): it describes every row."""
    pairs = described_pairs(reading.table)
    content = [i for i, token in enumerate(reading.tokens) if token.kind == "word" and not token.is_stopword]
    if index not in content:
        return False
    if len(restated_stems(reading, index)) > 1:
        return True
    if reading.tokens[index].stem in described_ends(reading.table):
        return True  # "the planes registry": what the description says the rows come from
    at = content.index(index)
    stems = [reading.tokens[i].stem for i in content]
    return at > 0 and (stems[at - 1], stems[at]) in pairs \
        or at + 1 < len(stems) and (stems[at], stems[at + 1]) in pairs
