"""'By' after a past participle, before a column and "other than", on a small schema of shop orders:
"orders handled by clerks other than Ann (AN) and Bo (BO)" are the orders of all clerks but two, counted
together, not one count per clerk; "orders handled by clerk" still counts each. "Every clerk except Bo" (or
"every month except March") is all of them but one, taken together; "each clerk except Bo" is one of each, as is
"For every clerk except Bo, what …", said first."""

from __future__ import annotations

import datetime
from collections.abc import Iterator

import duckdb
import pytest

from convener.analytics.shapes import ColumnInfo, TableInfo
from tests.analytics.small_tables import database, planner

ORDERS = TableInfo("orders", (
    ColumnInfo("order_id", "INTEGER", "Order number"),
    ColumnInfo("clerk", "STRING", "Clerk who handled the order"),
    ColumnInfo("total", "FLOAT", "Order total in euros"), ColumnInfo("placed", "DATE", "Date the order was placed")),
    description="Orders of a shop: one row per order.")
VALUES = {"clerk": ["AN", "BO", "CY"]}


@pytest.fixture(scope="module")
def data() -> Iterator[duckdb.DuckDBPyConnection]:
    yield from database(
        "CREATE TABLE orders (order_id INTEGER, clerk VARCHAR, total DOUBLE, placed DATE)",
        "INSERT INTO orders VALUES (1, 'AN', 10, '2024-01-05'), (2, 'BO', 20, '2024-03-01'), "
        "(3, 'CY', 30, '2024-03-09'), (4, 'CY', 40, '2024-02-11')")


plan = planner(ORDERS, VALUES)


@pytest.mark.parametrize("question", [
    "How many orders were handled by clerks other than Ann (AN) and Bo (BO)?",
    "How many orders were handled by clerks except Ann (AN) and Bo (BO)?",
])
def test_an_agent_but_some_is_a_condition(data: duckdb.DuckDBPyConnection, question: str) -> None:
    made = plan(question)
    assert not made.unaccounted and data.execute(made.sql).fetchall() == [(2,)]


def test_by_the_column_alone_still_groups(data: duckdb.DuckDBPyConnection) -> None:
    made = plan("How many orders were handled by clerk?")
    assert sorted(data.execute(made.sql).fetchall()) == [("AN", 1), ("BO", 1), ("CY", 2)]


@pytest.mark.parametrize(("question", "expected"), [
    ("What is the average order total for every clerk except Bo (BO)?", [(26.67,)]),
    ("average order total of orders from every clerk other than BO", [(26.67,)]),
    ("Average order total for every month except March?", [(25.0,)]),
    ("average order total for each clerk except BO", [("AN", 10.0), ("CY", 35.0)]),
    # said first, the question after it asked of each
    ("For every clerk except BO, what is the average order total?", [("AN", 10.0), ("CY", 35.0)]),
    ("For every month except March, what was the average order total?", [("2024-01-01", 10.0), ("2024-02-01", 40.0)]),
])
def test_every_one_but_some_is_taken_together(data: duckdb.DuckDBPyConnection, question: str,
                                              expected: list[tuple[object, ...]]) -> None:
    made = plan(question)
    assert not made.unaccounted, made
    rows = data.execute(made.sql).fetchall()
    assert sorted(tuple(round(v, 2) if isinstance(v, float) else str(v)[:10] if isinstance(v, datetime.date) else v
                        for v in row) for row in rows) == expected, made.sql
