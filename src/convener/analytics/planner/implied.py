"""Relationships the data implies beside those declared: a second column of a table holding the same codes
as one it is declared to join by ("flights.origin" beside "flights.dest" → "airports.faa").

A declared relationship says what a table's key codes are (airports.faa); another column of the same table
whose every value is one of those codes names rows of that table too, in another role (where a flight left
from, not where it went). Without it "flights from Newark" cannot be read: Newark is an airport's name, the
flights hold only its code in ``origin``. Only a table already declared to join is looked at, by the same
key, and only a column whose values are all that key's: a code column of another kind never is.
"""

from __future__ import annotations

from collections.abc import Sequence

from convener.analytics.planner.base import Relationship, ValuesOf
from convener.analytics.shapes import STRING, TableInfo


def implied_relationships(tables: Sequence[TableInfo], relationships: Sequence[Relationship],
                          values_of: ValuesOf | None) -> list[Relationship]:
    """The relationships ``relationships`` imply over ``tables`` and are not among them."""
    if values_of is None:
        return []
    by_name = {table.name: table for table in tables}
    declared = {(r.left_table, column) for r in relationships for column in r.left_columns} \
        | {(r.right_table, column) for r in relationships for column in r.right_columns}
    found: list[Relationship] = []
    for relationship in relationships:
        if len(relationship.left_columns) != 1 or len(relationship.right_columns) != 1:
            continue
        many, one = by_name.get(relationship.left_table), by_name.get(relationship.right_table)
        if many is None or one is None:
            continue
        key = relationship.right_columns[0]
        codes: set[str] | None = None
        for column in many.columns:
            if column.type != STRING or (many.name, column.name) in declared:
                continue
            values = {str(value) for value in values_of(many.name, column.name) if value is not None}
            if len(values) < 2:
                continue  # one value is too little to tell a code column from a coincidence
            if codes is None:
                codes = {str(value) for value in values_of(one.name, key) if value is not None}
            if values <= codes:
                implied = Relationship(many.name, (column.name,), one.name, (key,))
                if implied not in found:
                    found.append(implied)
    return found
