"""The queried table with what it can reach: tables it joins many-to-one (by the schema's relationships, or by
a key column named after the other table, ``store_id`` ↔ ``stores.store_id``/``stores.id``) and the glossary
formulas over its columns, as virtual columns the reading steps treat like any other."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import sqlglot
from sqlglot import exp

from convener.analytics.planner.base import Relationship
from convener.analytics.planner.catalog import _Candidate, _Mention, _resolve, _table_words, _Target
from convener.analytics.planner.state import _Join, _Scope
from convener.analytics.shapes import BOOLEAN, FLOAT, ColumnInfo, TableInfo
from convener.analytics.wording import snake, split_identifier, stem


def _key_of(table: TableInfo, column: str) -> bool:
    """Whether ``column`` is ``table``'s own key: ``id``, or named after the table's rows (``store_id`` of
    stores), so that at most one of its rows matches a value."""
    words = split_identifier(column).lower().split()
    if words == ["id"]:
        return True
    return len(words) >= 2 and words[-1] in ("id", "key", "code") and stem(words[-2]) in _table_words(table)


def _pair(first: str, second: str) -> tuple[str, str]:
    return (first, second) if first <= second else (second, first)


def _one_side(many: TableInfo, many_column: str, one: TableInfo, one_column: str) -> bool:
    """Whether, of two tables a relationship joins, ``one`` is the side with one row per key: its column is
    its own key (``id``, ``store_id`` of stores) while the other's is not, or else (airlines.carrier,
    planes.tailnum) it is the first column of the smaller table."""
    if _key_of(one, one_column) or _key_of(many, many_column):
        return _key_of(one, one_column) and not _key_of(many, many_column)
    first = one.columns[0].name.lower() == one_column.lower() if one.columns else False
    sizes = (many.row_count, one.row_count)
    if sizes[0] is not None and sizes[1] is not None:
        return first and sizes[1] < sizes[0]
    return first and not (many.columns and many.columns[0].name.lower() == many_column.lower())


def _joins(table: TableInfo, tables: Sequence[TableInfo], relationships: Sequence[Relationship]) -> list[_Join]:
    """The tables ``table`` joins many-to-one: each of its rows meets at most one of theirs, so joining
    neither repeats nor drops its rows (the join is a LEFT JOIN) and counts and sums stay right."""
    by_name = {t.name: t for t in tables}
    found: dict[str, _Join] = {}
    # Two relationships to one table (flights.origin and flights.dest to airports.faa) leave the join to
    # guess: neither is used.
    counted: dict[tuple[str, str], int] = {}
    for relationship in relationships:
        pair = _pair(relationship.left_table, relationship.right_table)
        counted[pair] = counted.get(pair, 0) + 1
    for relationship in relationships:
        for mine, my_columns, theirs, their_columns in (
                (relationship.left_table, relationship.left_columns, relationship.right_table,
                 relationship.right_columns),
                (relationship.right_table, relationship.right_columns, relationship.left_table,
                 relationship.left_columns)):
            other = by_name.get(theirs)
            if mine != table.name or other is None or other.name == table.name or len(my_columns) != 1 \
                    or len(my_columns) != len(their_columns) or counted[_pair(mine, theirs)] > 1 \
                    or not _one_side(table, my_columns[0], other, their_columns[0]) \
                    or table.column(my_columns[0]) is None or other.column(their_columns[0]) is None:
                continue
            found.setdefault(other.name, _Join(other, tuple(zip(my_columns, their_columns, strict=True))))
    for other in tables:
        if other.name == table.name or other.name in found:
            continue
        for column in table.columns:
            if _key_of(table, column.name):
                continue
            target = other.column(column.name) if _key_of(other, column.name) else None
            words = split_identifier(column.name).lower().split()
            if target is None and len(words) >= 2 and words[-1] == "id" and stem(words[-2]) in _table_words(other):
                target = other.column("id")
            if target is not None:
                found[other.name] = _Join(other, ((column.name, target.name),))
                break
    return list(found.values())


def joins_to(tables: Sequence[TableInfo], relationships: Sequence[Relationship]) -> set[tuple[str, str]]:
    """Every (many, one) pair of tables that join many-to-one."""
    return {(table.name, join.table.name) for table in tables for join in _joins(table, tables, relationships)}


def _alias(table: TableInfo) -> str:
    return table.name.split(".")[-1]


def _scope(table: TableInfo, tables: Sequence[TableInfo], relationships: Sequence[Relationship],
           candidates: Sequence[_Candidate]) -> tuple[_Scope, list[_Mention]]:
    """The scope of a question on ``table``, and its mentions: the table's own phrases first, then phrases
    of joined tables where none of the table's own phrases is (they name the joined table's columns)."""
    columns = list(table.columns)
    virtual: dict[str, exp.Expr] = {}
    renamed: dict[tuple[str, str], str] = {}
    joins = _joins(table, tables, relationships)
    for join in joins:
        keys = {theirs for _, theirs in join.on}
        prefix = snake(split_identifier(_alias(join.table)))
        for column in join.table.columns:
            if column.name in keys:
                continue
            name = column.name
            if table.column(name) is not None or name in virtual:
                name = f"{prefix}_{column.name}"
            columns.append(replace(column, name=name))
            virtual[name] = exp.column(column.name, table=_alias(join.table), quoted=True)
            renamed[(join.table.name, column.name)] = name
    sums: set[str] = set()
    own: list[_Candidate] = []
    for candidate in candidates:
        target = candidate.target
        if target.table == table.name and target.formula is not None:
            if target.column not in virtual:
                kind = BOOLEAN if target.value is not None else FLOAT
                columns.append(ColumnInfo(target.column, kind, f"glossary term: {target.formula}"))
                virtual[target.column] = exp.Paren(this=sqlglot.parse_one(target.formula))
                if kind == FLOAT:
                    sums.add(target.column)
            own.append(candidate)
        elif target.table == table.name:
            own.append(candidate)
        elif (target.table, target.column) in renamed and target.formula is None:
            moved = _Target(table.name, renamed[(target.table, target.column)], target.value, target.term)
            own.append(_Candidate(candidate.start, candidate.end, moved, candidate.strength - 0.05,
                                  candidate.source))
    effective = replace(table, columns=tuple(columns))
    scope = _Scope(table, effective, virtual, tuple(joins), frozenset(sums))
    return scope, _resolve(own)
