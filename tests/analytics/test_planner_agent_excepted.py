"""'By' after a past participle, before a column and "other than", on a small schema of shop orders:
"orders handled by clerks other than Ann (AN) and Bo (BO)" are the orders of all clerks but two, counted
together, not one count per clerk; "orders handled by clerk" still counts each."""

from __future__ import annotations

from collections.abc import Iterator

import duckdb
import pytest

from convener.analytics.shapes import ColumnInfo, TableInfo
from tests.analytics.small_tables import database, planner

ORDERS = TableInfo("orders", (
    ColumnInfo("order_id", "INTEGER", "Order number"),
    ColumnInfo("clerk", "STRING", "Clerk who handled the order"),
    ColumnInfo("total", "FLOAT", "Order total in euros")),
    description="Orders of a shop: one row per order.")
VALUES = {"clerk": ["AN", "BO", "CY"]}


@pytest.fixture(scope="module")
def data() -> Iterator[duckdb.DuckDBPyConnection]:
    yield from database(
        "CREATE TABLE orders (order_id INTEGER, clerk VARCHAR, total DOUBLE)",
        "INSERT INTO orders VALUES (1, 'AN', 10), (2, 'BO', 20), (3, 'CY', 30), (4, 'CY', 40)")


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
