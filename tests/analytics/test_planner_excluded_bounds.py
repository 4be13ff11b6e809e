"""Rows left out by a bound ("excluding sailings that left late", "not counting sailings longer than 20 miles")
and the unit of a bound read with it ("the average time at sea of sailings longer than 20 miles" asks one
average). On a small ferry schema of its own."""

from __future__ import annotations

from collections.abc import Iterator

import duckdb
import pytest

from convener.analytics.planner import plan_question
from convener.analytics.shapes import ColumnInfo, TableInfo
from tests.analytics.small_tables import database

SAILINGS = TableInfo("sailings", (
    ColumnInfo("sailing_id", "INTEGER", "Identifier of the sailing"),
    ColumnInfo("distance", "INTEGER", "Distance sailed, in miles"),
    ColumnInfo("sea_time", "INTEGER", "Time at sea, in minutes"),
    ColumnInfo("delay", "INTEGER", "Departure delay in minutes (negative when early)"),
), description="Ferry sailings: one row per sailing.")
ROWS = [(1, 10, 40, -5), (2, 25, 90, 0), (3, 30, 100, 12), (4, 5, 20, 30), (5, 40, 150, None)]


@pytest.fixture(scope="module")
def data() -> Iterator[duckdb.DuckDBPyConnection]:
    yield from database(
        "CREATE TABLE sailings (sailing_id INTEGER, distance INTEGER, sea_time INTEGER, delay INTEGER)",
        "INSERT INTO sailings VALUES " + ", ".join(
            f"({n}, {d}, {t}, {'NULL' if late is None else late})" for n, d, t, late in ROWS))


def answer(data: duckdb.DuckDBPyConnection, question: str) -> list[tuple[object, ...]]:
    made = plan_question(question, [SAILINGS])
    assert not made.unaccounted, made
    return data.execute(made.sql).fetchall()


@pytest.mark.parametrize(("question", "expected"), [
    ("Excluding sailings longer than 20 miles, how many sailings were there?", 2),
    ("Not counting sailings with a distance over 20 miles, how many sailings were there?", 2),
    ("How many sailings were there, excluding those with a sea time under 50 minutes?", 3),
    ("Excluding sailings that left early (negative departure delay), how many sailings were there?", 3),
])
def test_a_bound_after_a_word_that_leaves_rows_out_keeps_the_other_rows(data: duckdb.DuckDBPyConnection,
                                                                        question: str, expected: int) -> None:
    # (before, the bound kept its own rows and the answer said it could not use "excluding")
    assert answer(data, question) == [(expected,)]


def test_a_bound_without_a_word_that_leaves_rows_out_keeps_its_rows(data: duckdb.DuckDBPyConnection) -> None:
    assert answer(data, "Counting only sailings longer than 20 miles, how many sailings were there?") == [(3,)]


@pytest.mark.parametrize("question", [
    "What is the average sea time of sailings longer than 20 miles?",
    "average sea time of sailings over 20 miles",
])
def test_the_unit_of_a_bound_is_no_measure_of_its_own(data: duckdb.DuckDBPyConnection, question: str) -> None:
    # (before, "miles" was also read as the distance to average: two averages for one asked)
    assert answer(data, question) == [(pytest.approx(340 / 3),)]
