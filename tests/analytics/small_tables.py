"""Small DuckDB tables for the planner's tests."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence

import duckdb

from convener.analytics.planner import Plan, Relationship, Term, plan_question
from convener.analytics.shapes import ColumnInfo, TableInfo

PORTS = TableInfo("ports", (ColumnInfo("code", "STRING", "Port code"), ColumnInfo("name", "STRING", "Port name")),
                  description="Ports: one row per port.")
"""The islands' ports, which the ferry schemas of several tests join their trips to by a port code."""
PORT_VALUES = {("ports", "code"): ["HAR", "NTH"], ("ports", "name"): ["Harbourton", "Northwick"]}
PORT_ROWS = ("CREATE TABLE ports (code VARCHAR, name VARCHAR)",
             "INSERT INTO ports VALUES ('HAR', 'Harbourton'), ('NTH', 'Northwick')")
"""The statements that make ``PORTS`` in a test database."""


def database(*statements: str) -> Iterator[duckdb.DuckDBPyConnection]:
    """A database in memory made by ``statements``, closed once the test is done with it (the body of a
    fixture: ``yield from database(...)``)."""
    connection = duckdb.connect()
    for statement in statements:
        connection.execute(statement)
    yield connection
    connection.close()


def planner(table: TableInfo, values: Mapping[str, Sequence[str]],
            terms: Sequence[Term] = ()) -> Callable[[str], Plan]:
    """``plan(question)`` over ``table`` alone, its text columns holding ``values`` (by column name): the
    planner as one small schema's tests call it."""
    def plan(question: str) -> Plan:
        return plan_question(question, [table], terms, values_of=lambda _, column: values.get(column, []))
    return plan


def joined_planner(tables: Sequence[TableInfo], related: Sequence[TableInfo], relationships: Sequence[Relationship],
                   values: Mapping[tuple[str, str], Sequence[str]]) -> Callable[[str], Plan]:
    """``plan(question)`` over ``tables``, ``related`` ones joinable by ``relationships``, text columns holding
    ``values`` (by table and column name)."""
    def plan(question: str) -> Plan:
        return plan_question(question, tables, values_of=lambda t, c: values.get((t, c), []),
                             relationships=relationships, related=related)
    return plan


def answerer(plan: Callable[[str], Plan]) -> Callable[[duckdb.DuckDBPyConnection, str], list[tuple[object, ...]]]:
    """``answer(data, question)``: the rows ``plan(question)``'s SQL finds in ``data``, the plan having used every
    word of the question."""
    def answer(data: duckdb.DuckDBPyConnection, question: str) -> list[tuple[object, ...]]:
        made = plan(question)
        assert not made.unaccounted, made
        return data.execute(made.sql).fetchall()
    return answer
