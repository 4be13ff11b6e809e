"""A word that could name several columns, settled by a word close after or before it that names one of
them alone: "the longest time any flight spent airborne" is the air time ("time" could be any of five
times; "airborne" names air_time). The two words then name one column once."""

from __future__ import annotations

from dataclasses import replace

from convener.analytics.planner.catalog import _dimension, _Mention
from convener.analytics.planner.state import _Reading
from convener.analytics.wording import phrase, stem

_REACH = 4
"""How many words apart the two may be ("time any flight spent airborne")."""
_APART = frozenset({"and", "or", "versus", "vs", "than", "with", "by", "per", "each"})
"""Words after which a second column is a second thing asked (a key, a comparison), not the same one."""


def settle_rivals(reading: _Reading) -> None:
    """Each ambiguous column mention with exactly one unambiguous mention of one of its columns near it
    becomes that column, over both spans' words; the near mention is then said by it."""
    for mention in list(reading.mentions):
        if mention.is_value or not mention.ambiguous or mention not in reading.mentions:
            continue
        if _settle_described(reading, mention) or _settle_measured(reading, mention) or _settle_late(reading, mention):
            continue
        rivals = {mention.target.column, *mention.ambiguous}
        near = [other for other in reading.mentions
                if other is not mention and not other.is_value and not other.ambiguous
                and other.target.column in rivals and _close(reading, mention, other)]
        if not near and _said_before(reading, mention, rivals):
            continue
        if len(near) != 1:
            continue
        other = near[0]
        reading.mentions.remove(other)
        reading.used.update(range(other.start, other.end))
        index = reading.mentions.index(mention)
        reading.mentions[index] = replace(mention, target=other.target, ambiguous=())


def _said_before(reading: _Reading, mention: _Mention, rivals: set[str]) -> bool:
    """"JFK flights with an arrival delay recorded: what share came in early, i.e. a negative delay": a word
    several columns share, said again after one of them was named alone (and no other of them), is that one;
    both mentions stay, each read where it stands."""
    before = {other.target.column for other in reading.mentions
              if not other.is_value and not other.ambiguous and other.end <= mention.start}
    named = before & rivals
    if len(named) != 1 or any(not other.is_value and other.start > mention.end and other.target.column in rivals
                              for other in reading.mentions):
        return False
    index = reading.mentions.index(mention)
    reading.mentions[index] = replace(mention, target=replace(mention.target, column=named.pop()), ambiguous=())
    return True


def _settle_described(reading: _Reading, mention: _Mention) -> bool:
    """"the engine types", with columns engine ("Type of engine") and engines (their number): the one column
    of the rivals named exactly as written, followed by a word of its own description, is that column; the
    word after it is said by it, even where it could name a column of its own (type)."""
    written = "_".join(token.norm for token in reading.tokens[mention.start:mention.end])
    exact = [name for name in (mention.target.column, *mention.ambiguous) if name.lower() == written]
    column = reading.table.column(exact[0]) if len(exact) == 1 else None
    if column is None or mention.end >= len(reading.tokens) \
            or reading.tokens[mention.end].stem not in phrase(column.description or ""):
        return False
    following = reading.mention_at(mention.end)
    if following is not None and (following.is_value or following.start != mention.end):
        return False
    if following is not None:
        reading.mentions.remove(following)
    reading.used.add(mention.end)
    index = reading.mentions.index(mention)
    reading.mentions[index] = replace(mention, target=replace(mention.target, column=column.name), ambiguous=())
    return True


def _settle_measured(reading: _Reading, mention: _Mention) -> bool:
    """"longer bills", "the deepest bill": an adjective of measure right before a word several columns share
    names the one of them it measures (bill_length_mm, not bill_depth_mm); the adjective is left to be read
    as a comparison or a ranking."""
    found = _dimension(reading.norm(mention.start - 1)) if mention.start > 0 else None
    if found is None:
        return False
    nouns = {stem(noun) for noun in found[0]} | set(found[0])
    measured = [column for column in (mention.target.column, *mention.ambiguous)
                if nouns & set(phrase(column))]
    if len(measured) != 1:
        return False
    index = reading.mentions.index(mention)
    settled = replace(mention.target, column=measured[0])
    reading.mentions[index] = replace(mention, target=settled, ambiguous=())
    return True


_LATENESS = frozenset({"late", "later", "early", "earlier"})


def _settle_late(reading: _Reading, mention: _Mention) -> bool:
    """"how many minutes late (or early) did United flights arrive", "do Boeing flights arrive later on average":
    a verb of one end of the trip that could name its times or its delay, with "late" or "early" (no amount said
    with them) a few words away, is the delay; those words say it and are read with it."""
    delays = [name for name in (mention.target.column, *mention.ambiguous) if "delay" in phrase(name)]

    def lateness(index: int) -> bool:  # (the glossary's "late", said here of no condition, is read with it)
        said = reading.mention_at(index)
        # (an amount before it, "5 hours late departing", is a condition, read with its number; after the verb
        # only a comparative, "arrive later than": "arrive early on average" asks whether)
        return reading.norm(index) in _LATENESS and index not in reading.used \
            and all(token.number is None for token in reading.tokens[max(0, index - 3):index]) \
            and (index < mention.start or reading.norm(index) in ("later", "earlier")) \
            and (said is None or said.is_value and said.end - said.start == 1)

    # ("how many minutes late (or early) did United Air Lines flights arrive": the verb ends its clause)
    said = [i for i in range(max(0, mention.start - 9), min(len(reading.tokens), mention.end + 3)) if lateness(i)]
    if len(delays) != 1 or not said:
        return False
    for index in said:
        late = reading.mention_at(index)
        if late is not None:
            reading.mentions.remove(late)
    reading.used.update(i for i in range(min(said), max(said) + 1) if reading.norm(i) in _LATENESS | {"or"})
    index = reading.mentions.index(mention)
    reading.mentions[index] = replace(mention, target=replace(mention.target, column=delays[0]), ambiguous=())
    return True


def _close(reading: _Reading, first: _Mention, second: _Mention) -> bool:
    start, end = (first.end, second.start) if first.start < second.start else (second.end, first.start)
    return 0 <= end - start <= _REACH and all(reading.norm(i) not in _APART and reading.mention_at(i) is None
                                              for i in range(start, end))
