"""Nouns of the role a place plays for a row: "by departure airport" (the place a flight leaves from), "a
LaGuardia departure" (a flight that left LaGuardia). A word such as "departure" also starts the names of
several columns (``sched_dep_time``, ``dep_delay``, ``dep_time``); said of a place, it is none of them."""

from __future__ import annotations

from dataclasses import replace

from convener.analytics.planner.catalog import _Mention
from convener.analytics.planner.scope import _direction_of
from convener.analytics.planner.state import _Reading
from convener.analytics.planner.vocabulary import ROLE_NOUNS
from convener.analytics.shapes import STRING

_PLACES = frozenset({"airport", "airports", "station", "stations", "port", "ports", "city", "cities", "stop",
                     "stops", "terminal", "terminals", "dock", "docks"})


def read_role_nouns(reading: _Reading) -> None:
    """"departure airport": the one text column of the queried table that says where a row leaves from (or
    goes to, "arrival airport"); "a LaGuardia departure", "JFK departures": the rows that left the place named
    right before, which that value's condition says already."""
    for mention in list(reading.mentions):
        role = ROLE_NOUNS.get(reading.norm(mention.start))
        if role is None or mention.is_value or mention.end != mention.start + 1 or mention.start in reading.used:
            continue
        place = mention.end
        if reading.norm(place) in _PLACES and reading.free(place):
            columns = [c.name for c in reading.base.columns if c.type == STRING and _direction_of(c) == role]
            if len(columns) == 1:
                reading.mentions[reading.mentions.index(mention)] = _Mention(
                    mention.start, place + 1, replace(mention.target, column=columns[0]), "name")
            continue
        before = reading.mention_at(mention.start - 1)
        if before is not None and before.is_value and before.end == mention.start \
                and _place_of(reading, before) == role:
            reading.mentions.remove(mention)  # "a LaGuardia departure": the flight, the place said before it
            reading.used.add(mention.start)


def _place_of(reading: _Reading, value: _Mention) -> str | None:
    """The role of the place a value names for the rows: that of its column, or of the key it is joined by
    ("La Guardia" of the airports' names, joined by origin: "away"); None for a value of no place ("DL")."""
    join = reading.join_of(value.target.column)
    column = reading.base.column(join.on[0][0] if join is not None else value.target.column)
    return _direction_of(column) if column is not None and column.type == STRING else None
