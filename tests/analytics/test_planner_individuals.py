"""Questions about individual rows on a small tree survey: the columns wished for ("I'd like the tree ID,
species and leaf length"), the rows' own identifier said with their noun ("tree ID"), and identifiers
listed one per row; rows of an empty column kept as a group of their own."""

from __future__ import annotations

from collections.abc import Iterator

import duckdb
import pytest

from convener.analytics.planner import Plan, plan_question
from convener.analytics.planner.listing import identifies_rows
from convener.analytics.shapes import ColumnInfo, TableInfo
from tests.analytics.small_tables import database

TREES = TableInfo("trees", (
    ColumnInfo("individual_id", "STRING", "Identifier of the tree, e.g. T1"), ColumnInfo("species", "STRING"),
    ColumnInfo("park", "STRING"),
    ColumnInfo("leaf_length_mm", "INTEGER", "Length of the leaf in millimetres"),
    ColumnInfo("healthy", "BOOLEAN", "Whether the tree was healthy when surveyed")),
    description="One row per tree of the survey.")
VALUES = {"species": ["Ash", "Elm", "Oak"], "park": ["Hyde", "Kew", "Regent"]}


@pytest.fixture(scope="module")
def data() -> Iterator[duckdb.DuckDBPyConnection]:
    yield from database("CREATE TABLE trees (individual_id VARCHAR, species VARCHAR, park VARCHAR, "
                        "leaf_length_mm INTEGER, healthy BOOLEAN)",
                        "INSERT INTO trees VALUES ('T1', 'Oak', 'Kew', 40, true), "
                        "('T2', 'Oak', 'Hyde', 90, false), ('T3', 'Ash', 'Kew', 30, true), "
                        "('T4', 'Elm', 'Regent', 70, false), "
                        "('T5', 'Ash', 'Hyde', 35, false), ('T6', 'Elm', 'Kew', 60, true), "
                        "('T7', 'Oak', 'Kew', 50, true), ('T7', 'Oak', 'Kew', 55, true), "
                        "('T8', 'Elm', NULL, 65, false)")


def plan(question: str) -> Plan:
    return plan_question(question, [TREES], values_of=lambda _, column: VALUES.get(column, []))


@pytest.mark.parametrize("question", [
    "Who has the 3 shortest leaves? I'd like the tree ID, species and leaf length.",
    "Which 3 trees have the shortest leaves? I want the tree ID, species and leaf length.",
    "The 3 shortest leaves, please. We need the tree ID, species and leaf length.",
    "3 trees with the shortest leaves: ID, species and leaf length",  # the rows' noun, then their columns
])
def test_the_columns_wished_for_are_shown_of_each_row_ranked(data: duckdb.DuckDBPyConnection,
                                                             question: str) -> None:
    # not the species with the shortest leaves: the rows, with their identifier
    rows = data.execute(plan(question).sql).fetchall()
    assert rows == [("T3", "Ash", 30), ("T5", "Ash", 35), ("T1", "Oak", 40)]


@pytest.mark.parametrize(("question", "expected"), [
    ("Give me the individual IDs of Oak trees.", [("T1",), ("T2",), ("T7",), ("T7",)]),
    ("List the individual IDs of trees in Kew that were healthy.",
     [("T1",), ("T3",), ("T6",), ("T7",), ("T7",)]),
])
def test_the_rows_identifiers_are_listed_one_per_row(data: duckdb.DuckDBPyConnection, question: str,
                                                     expected: list[tuple[object, ...]]) -> None:
    # T7 was surveyed twice: two rows, two identifiers (a listing of distinct values would show it once)
    assert sorted(data.execute(plan(question).sql).fetchall()) == expected


def test_identifiers_asked_once_each_are_listed_once(data: duckdb.DuckDBPyConnection) -> None:
    rows = data.execute(plan("List the distinct individual IDs of Oak trees.").sql).fetchall()
    assert rows == [("T1",), ("T2",), ("T7",)]


def test_the_values_of_another_column_are_listed_once(data: duckdb.DuckDBPyConnection) -> None:
    rows = data.execute(plan("List the species of trees in Kew").sql).fetchall()
    assert rows == [("Ash",), ("Elm",), ("Oak",)]


ORDERS = TableInfo("orders", (ColumnInfo("order_id", "STRING"),
                              ColumnInfo("customer_id", "STRING", "Identifier of the customer who ordered"),
                              ColumnInfo("id", "INTEGER")), description="One row per order.")


@pytest.mark.parametrize(("table", "column", "expected"), [
    (TREES, "individual_id", True), (ORDERS, "order_id", True), (ORDERS, "id", True),
    (ORDERS, "customer_id", False),  # another table's rows' identifier: a customer has many orders
])
def test_which_column_identifies_the_rows(table: TableInfo, column: str, expected: bool) -> None:
    assert identifies_rows(table, column) is expected


@pytest.mark.parametrize(("question", "expected"), [
    ("Trees per park, with unknown park as its own group",
     [("Hyde", 2), ("Kew", 5), ("Regent", 1), (None, 1)]),
    ("Number of trees per park, with a missing park as a separate category",
     [("Hyde", 2), ("Kew", 5), ("Regent", 1), (None, 1)]),
    ("Which 2 parks have the fewest trees, with unknown park as a group of its own?",
     [("Regent", 1), (None, 1)]),
])
def test_empty_values_asked_as_a_group_of_their_own_are_kept_as_one(
        data: duckdb.DuckDBPyConnection, question: str, expected: list[tuple[object, ...]]) -> None:
    # not the trees of unknown park alone (a condition), nor the other parks alone (NULLs left out)
    rows = data.execute(plan(question).sql).fetchall()
    assert sorted(rows, key=repr) == sorted(expected, key=repr)


def test_an_empty_group_of_a_column_not_grouped_by_is_not_passed_over() -> None:
    assert plan("Trees per species, with unknown park as its own group").unaccounted == ("park",)
