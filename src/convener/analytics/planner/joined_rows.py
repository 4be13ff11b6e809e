"""Rows of a joined table named by its noun in a question about the rows that refer to them: "which airlines
flew to Seattle?", "how many airlines flew out of Newark?" asked of the flights, each of which names its airline
by a key column. The airlines are told apart by that column (the flights' carrier), or shown by the joined
table's name column when the question asks for names ("which airlines (full names) …")."""

from __future__ import annotations

from sqlglot import exp

from convener.analytics.planner.base import NoPlan
from convener.analytics.planner.catalog import _table_words
from convener.analytics.planner.scope import _direction_of, stranded_direction
from convener.analytics.planner.state import _Join, _Reading

_NAME_WORDS = frozenset({"name", "names"})
_CODE_WORDS = frozenset({"code", "codes"})


def joined_rows_key(reading: _Reading, index: int) -> str | None:
    """The queried table's key column to the joined table whose rows the free word at ``index`` names
    ("airlines" on flights: carrier), None when it names none (or a table joined by several columns)."""
    if reading.scope is None or not 0 <= index < len(reading.tokens) or index in reading.used \
            or reading.tokens[index].kind != "word" or reading.tokens[index].stem in _table_words(reading.base):
        return None
    join = next((join for join in reading.scope.joins if len(join.on) == 1
                 and reading.tokens[index].stem in _table_words(join.table)), None)
    if join is None:
        return None
    key = join.on[0][0]
    # (the noun may name the key column itself: "operators" for operator_code, "code of the operator")
    mention = reading.mention_at(index)
    return key if mention is None or not mention.is_value and mention.target.column == key else None


def read_which_joined_rows(reading: _Reading, index: int) -> bool:
    """"which airlines flew to Seattle" (``index`` at "which"): the joined rows listed by the queried table's key
    to them and, where the joined table has one, their name beside it (a code alone says little); as groups
    when a condition applies to each ("which airlines had no cancelled flights"). Words asking for the names or
    codes are read by it ("… ? Full names please", "give code and name"). Whether it was read so. Not for the
    joined table's own rows ("which airlines in the airlines table …": those with no row here too)."""
    key = joined_rows_key(reading, index + 1)
    if key is None or any(token.norm == "table" for token in reading.tokens):
        return False
    pointed, column = stranded_direction(reading.tokens), reading.base.column(key)
    if pointed is not None and column is not None and _direction_of(column) not in (None, pointed):
        # "which airports did LaGuardia flights go to?": the airports joined for LaGuardia are the flights' origins
        raise NoPlan(f"the {reading.tokens[index + 1].text} asked about are at the other end of the "
                     f"{reading.base.name} from the place named, which is read as their {key}")
    noun = reading.mention_at(index + 1)
    if noun is not None:
        # the key column itself named by the noun ("operators": operator_code, "code of the operator") is read
        if noun.is_value or noun.target.column != key or noun not in reading.mentions:
            return False
        reading.mentions.remove(noun)
    name_column = name_column_of_key(reading, key)
    said = [m for m in reading.mentions if not m.is_value and m.target.column == name_column] \
        if name_column is not None else []
    for mention in said:
        reading.mentions.remove(mention)
        reading.used.update(range(mention.start, mention.end))
    reading.used.update(i for i, token in enumerate(reading.tokens)
                        if reading.free(i) and (token.norm in _NAME_WORDS or token.norm in _CODE_WORDS
                                                or token.norm == "full" and reading.norm(i + 1) in _NAME_WORDS))
    shown = [key, name_column] if name_column is not None else [key]
    (reading.keys if reading.group_conditions or reading.absent else reading.shown).extend(shown)
    reading.used.update((index, index + 1))
    return True


def name_column_of_key(reading: _Reading, key: str) -> str | None:
    """The name column of the table joined by the queried table's column ``key`` (None where none is joined by it
    or it has no name column)."""
    join = next((join for join in reading.scope.joins if join.on == ((key, join.on[0][1]),)), None) \
        if reading.scope is not None else None
    return joined_name_column(reading, join) if join is not None else None


def joined_name_column(reading: _Reading, join: _Join) -> str | None:
    """The joined table's name column, as the reading calls it ("name", or "airlines_name" where the queried
    table has a name of its own)."""
    assert reading.scope is not None
    alias = join.table.name.split(".")[-1]
    return next((name for name, expression in reading.scope.virtual.items()
                 if isinstance(expression, exp.Column) and expression.table == alias
                 and (expression.name.lower() == "name" or expression.name.lower().endswith("_name"))), None)


def codes_of_names(reading: _Reading, column: str) -> list[str]:
    """The queried table's column that a joined table's name ``column`` is reached by ("United vs American": the
    airlines' names, reached by flights.carrier), or none. Groups compared by such names are that column's
    values (what the rows themselves say), the names shown beside them as the question said them. A column
    that is not the joined rows' name ("AIRBUS vs BOEING": planes' manufacturer) is what many of them share:
    the groups are its values alone."""
    join = reading.join_of(column)
    if join is None or joined_name_column(reading, join) != column:
        return []
    return [mine for mine, _ in join.on if mine not in reading.keys][:1]
