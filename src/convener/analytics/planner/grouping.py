"""Groups named by another table's rows: "total distance per airline" groups the flights by the column that
joins them to the airlines (and by the airline's name, where it has one) rather than passing over the word;
"flown by planes" after a participle names who did it, which groups nothing."""

from __future__ import annotations

from sqlglot import exp

from convener.analytics.planner.catalog import _table_words
from convener.analytics.planner.state import _Reading


def passive(word: str) -> bool:
    """A past participle ("operated", "flown", "made"): "by" after it names who did it, and one after a
    noun describes the noun ("planes made in 2005")."""
    return len(word) > 3 and word.endswith("ed") or word in ("flown", "made", "built", "run", "seen", "done", "owned",
                                                             "sold", "bought", "taken", "driven", "written")


def read_joined_key(reading: _Reading, start: int, end: int) -> bool:
    """"total distance per airline": a joined table's rows named after a group marker, and no column of
    theirs, are the groups of the queried table's column that joins them (with their name, where they have
    one), not words to pass over."""
    if reading.scope is None:
        return False
    for join in reading.scope.joins:
        words = _table_words(join.table)
        named = [i for i in range(start, end) if reading.free(i) and reading.tokens[i].stem in words]
        if not named:
            continue
        key = join.on[0][0]
        if key in reading.keys:
            return False
        reading.keys.append(key)
        alias = join.table.name.split(".")[-1]
        reading.keys.extend(name for name, expression in reading.scope.virtual.items()
                            if isinstance(expression, exp.Column) and expression.table == alias
                            and expression.name.lower() == "name" and name not in reading.keys)
        reading.used.update(named)
        return True
    return False
