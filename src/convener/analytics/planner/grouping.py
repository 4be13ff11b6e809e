"""Groups named by another table's rows: "total distance per airline" groups the flights by the column that
joins them to the airlines (and by the airline's name, where it has one) rather than passing over the word;
"flown by planes" after a participle names who did it, which groups nothing."""

from __future__ import annotations

from sqlglot import exp

from convener.analytics.planner.catalog import _table_words
from convener.analytics.planner.joined_rows import joined_name_column
from convener.analytics.planner.state import _Join, _Reading


def passive(word: str) -> bool:
    """A past participle ("operated", "flown", "made"): "by" after it names who did it, and one after a
    noun describes the noun ("planes made in 2005")."""
    return len(word) > 3 and word.endswith("ed") or word in _IRREGULAR_PARTICIPLES


_IRREGULAR_PARTICIPLES = frozenset({"flown", "made", "built", "run", "seen", "done", "owned", "sold", "bought", "taken",
                                    "driven", "written", "given", "found", "born"})


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


def read_keys_by_name(reading: _Reading) -> None:
    """"by destination airport name", "which destination airport, by name, …", "top 5 destination airports …
    show the airport names": a group key that joins another table (``dest`` the airports) and that table's name
    column said and read as nothing else: the groups are told by that name beside the key's code."""
    for mention in list(reading.mentions):
        join = None if mention.is_value else reading.join_of(mention.target.column)
        if join is None or len(join.on) != 1 or join.on[0][0] not in reading.keys \
                or mention.target.column in reading.keys or joined_name_column(reading, join) != mention.target.column:
            continue
        # The groups stay those of the key: two airports of one name are two groups, told apart by their codes
        reading.keys.insert(reading.keys.index(join.on[0][0]) + 1, mention.target.column)
        if not _said_beside(reading, mention.start, join):  # ("… with the airport names" labels each code)
            reading.telling_names_apart.add(join.on[0][0])
        reading.mentions.remove(mention)
        reading.used.update(range(mention.start, mention.end))
    _read_not_codes(reading)


_BESIDE = frozenset({"with", "alongside", "plus", "including", "and"})


def _said_beside(reading: _Reading, start: int, join: _Join) -> bool:
    """Whether the name said at ``start`` is asked beside what it names ("with the airport names", "and their
    full names"), past articles and the joined table's noun."""
    at = start - 1
    words = _table_words(join.table)
    while at >= 0 and (reading.norm(at) in ("the", "their", "its", "full") or reading.tokens[at].stem in words):
        at -= 1
    return reading.norm(at) in _BESIDE


_NOT_CODES = (("not",), ("rather", "than"), ("instead", "of"))


def _read_not_codes(reading: _Reading) -> None:
    """"… give me the airport names, not codes", "Name, please, not the code": where a joined table's name is
    read (a key or a column shown), its code turned down is read with it."""
    names = {joined_name_column(reading, join) for join in (reading.scope.joins if reading.scope else ())}
    if not names & {*reading.keys, *reading.shown}:
        return
    for index in range(len(reading.tokens)):
        for words in _NOT_CODES:
            at = index + len(words)
            if any(reading.norm(index + offset) != word or not reading.free(index + offset)
                   for offset, word in enumerate(words)):
                continue
            if reading.norm(at) in ("the", "their", "its") and reading.free(at):
                at += 1
            said = reading.mention_at(at)  # ("the code" may name a code column: the one turned down)
            if reading.norm(at) in ("code", "codes") and at not in reading.used \
                    and (said is None or not said.is_value and said.end == at + 1):
                if said is not None:
                    reading.mentions.remove(said)
                reading.used.update(range(index, at + 1))
                _drop_codes(reading)


def _drop_codes(reading: _Reading) -> None:
    """The codes turned down are not shown: groups of a joined table's key are told by its names alone."""
    for join in reading.scope.joins if reading.scope else ():
        if joined_name_column(reading, join) in reading.keys and join.on[0][0] in reading.keys:
            reading.keys.remove(join.on[0][0])
