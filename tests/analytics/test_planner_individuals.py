"""Questions about individual rows on a small tree survey: the columns wished for ("I'd like the tree ID,
species and leaf length") and the rows' own identifier said with their noun ("tree ID")."""

from __future__ import annotations

from collections.abc import Iterator

import duckdb
import pytest

from convener.analytics.planner import Plan, plan_question
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
                        "('T5', 'Ash', 'Hyde', 35, false), ('T6', 'Elm', 'Kew', 60, true)")


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
