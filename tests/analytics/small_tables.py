"""Small DuckDB tables for the planner's tests."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence

import duckdb

from convener.analytics.planner import Plan, Term, plan_question
from convener.analytics.shapes import TableInfo


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


def answerer(plan: Callable[[str], Plan]) -> Callable[[duckdb.DuckDBPyConnection, str], list[tuple[object, ...]]]:
    """``answer(data, question)``: the rows ``plan(question)``'s SQL finds in ``data``, the plan having used every
    word of the question."""
    def answer(data: duckdb.DuckDBPyConnection, question: str) -> list[tuple[object, ...]]:
        made = plan(question)
        assert not made.unaccounted, made
        return data.execute(made.sql).fetchall()
    return answer
