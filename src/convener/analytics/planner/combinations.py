"""Groups of several columns named together as one: "species-island combinations", "carrier and origin pairs",
"per species/island combo". Each column is a key; the noun of combining is read with them."""

from __future__ import annotations

from convener.analytics.planner.state import _Reading
from convener.analytics.shapes import STRING

_COMBINING = frozenset({"combination", "combinations", "combo", "combos", "pair", "pairs", "pairing", "pairings",
                        "group", "groups"})


def read_combinations(reading: _Reading) -> bool:
    """Text columns named one after another, joined by a hyphen, a slash or "and", and followed by a noun of
    combining: every one of them a key (in the order said), the words read. Whether there were such."""
    for index, token in enumerate(reading.tokens):
        if token.norm not in _COMBINING or not reading.free(index):
            continue
        columns: list[str] = []
        at = index
        while True:
            mention = reading.mention_at(at - 1)
            if mention is None or mention.is_value or mention.end != at or mention not in reading.mentions \
                    or reading.column(mention.target.column).type != STRING:
                break
            columns.insert(0, mention.target.column)
            at = mention.start
            if reading.norm(at - 1) == "and" and reading.free(at - 1):
                at -= 1
            elif not any(mark in reading.gap(at) for mark in "-/"):
                break
        if len(set(columns)) < 2:
            continue
        for mention in [m for m in reading.mentions if at <= m.start and m.end <= index]:
            reading.mentions.remove(mention)
        reading.keys.extend(column for column in columns if column not in reading.keys)
        reading.used.update(range(at, index + 1))
        return True
    return False
