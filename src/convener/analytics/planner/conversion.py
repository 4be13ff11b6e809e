"""A measure asked for in another unit than its column's: "the average air time in hours" of a column in
minutes is the column converted (÷ 60), never the minutes shown as if they were hours; a unit that cannot be
converted to is refused."""

from __future__ import annotations

from dataclasses import replace

from sqlglot import exp

from convener.analytics.planner.base import NoPlan
from convener.analytics.planner.state import _Reading
from convener.analytics.planner.units import unit_named, unit_of
from convener.analytics.shapes import FLOAT, ColumnInfo
from convener.analytics.wording import snake


def read_measure_unit(reading: _Reading) -> None:
    """"… in hours", "… in kilograms" (unread) with one measure: that measure in the unit said; so too a unit
    counted or totalled ("total hours in the air", "how many hours did flights spend in the air")."""
    if reading.scope is None or len({column for column, _ in reading.measures}) != 1:
        return
    for index, token in enumerate(reading.tokens[:-1]):
        counted = token.norm in ("total", "many") and index + 1 < len(reading.tokens) \
            and reading.free(index + 1) and (reading.norm(index) == "total" or reading.norm(index - 1) == "how")
        said = unit_named(reading.norm(index + 1)) if token.norm == "in" or counted else None
        if said is None or not (reading.free(index) or counted) or index + 1 in reading.used:
            continue
        column = reading.measures[0][0]
        own = unit_of(reading.column(column))
        if own is None:
            return  # the column's unit is not known: the words may name it ("speed in mph")
        reading.used.update((index + 1,) if counted else (index, index + 1))
        if own == said:
            return
        factor = reading.factor(own, said)
        if factor is None:
            raise NoPlan(f"{column} is in {own}, not {said}")
        name = f"{snake(column)}_in_{said}"
        source = reading.scope.virtual.get(column, exp.column(column, quoted=True))
        reading.scope.virtual[name] = exp.Paren(this=exp.Mul(this=source.copy(), expression=exp.Literal.number(factor)))
        reading.table = replace(reading.table, columns=(*reading.table.columns, ColumnInfo(name, FLOAT,
                                                                                           f"{column} in {said}")))
        reading.measures = [(name, agg) for _, agg in reading.measures]
        return


_EQUALS = frozenset({"=", "is", "equals"})


def read_stated_conversion(reading: _Reading) -> None:
    """"(1 mile = 1.609344 km)", "1 kg is 1000 g": a factor between two units the question states, which says
    how to convert, not which rows to take. Read before any number is, so that the numbers are not taken for
    conditions; kept for the conversion (``read_measure_unit``)."""
    tokens = reading.tokens
    for start in range(len(tokens) - 4):
        sign, number, unit = start + 2, start + 3, start + 4
        first, second = unit_named(reading.norm(start + 1)), unit_named(reading.norm(unit))
        factor = tokens[number].number
        # (a unit may have been taken for the column measured in it: "mile" of the distance)
        units = [mention for mention in reading.mentions if mention.start in (start + 1, unit)
                 and mention.end == mention.start + 1 and not mention.is_value]
        said = set(range(start, unit + 1)) - {mention.start for mention in units}
        if tokens[start].number != 1 or reading.norm(sign) not in _EQUALS or factor is None or factor <= 0 \
                or first is None or second is None or first == second \
                or not all(reading.free(index) for index in said):
            continue
        for mention in units:
            reading.mentions.remove(mention)
        reading.stated_factors[(first, second)] = factor
        reading.stated_factors.setdefault((second, first), 1 / factor)
        reading.used.update(range(start, unit + 1))


def drop_restated_unit(reading: _Reading) -> None:
    """"The heaviest Gentoo body mass in grams": "in" and the unit a column named elsewhere in the question is
    already in say that column's unit again; read as a second mention of it, the question would ask for the
    column twice (once ranked, once not) and be refused."""
    for mention in list(reading.mentions):
        if mention.is_value or mention.end - mention.start != 1 \
                or reading.norm(mention.start - 1) not in ("in", "as"):
            continue
        column = mention.target.column
        if unit_named(reading.norm(mention.start)) is None \
                or unit_named(reading.norm(mention.start)) != unit_of(reading.column(column)):
            continue
        if any(other is not mention and not other.is_value and other.target.column == column
               for other in reading.mentions):
            reading.mentions.remove(mention)
            reading.used.update((mention.start - 1, mention.start))
