"""Conditions said to be kept among the rows, not to pick them ("cancelled ones included", "including the
cancelled trips"), and a condition said again in parentheses after the words that said it ("on time or early
(delay <= 0)"), on a small schema of ferry trips."""

from __future__ import annotations

from collections.abc import Iterator

import duckdb
import pytest

from convener.analytics.shapes import ColumnInfo, TableInfo
from tests.analytics.small_tables import answerer, database, planner

TRIPS = TableInfo("trips", (
    ColumnInfo("trip_id", "INTEGER", "Identifier of the trip"),
    ColumnInfo("port", "STRING", "Port the trip left from"),
    ColumnInfo("miles", "INTEGER", "Distance sailed, in miles"),
    ColumnInfo("arr_delay", "INTEGER", "Arrival delay in minutes (negative when early)"),
    ColumnInfo("arr_time", "INTEGER", "Arrival time, as HHMM"),
    ColumnInfo("cancelled", "BOOLEAN", "Whether the trip was cancelled"),
), description="Ferry trips: one row per trip.")


@pytest.fixture(scope="module")
def data() -> Iterator[duckdb.DuckDBPyConnection]:
    yield from database(
        "CREATE TABLE trips (trip_id INTEGER, port VARCHAR, miles INTEGER, arr_delay INTEGER, arr_time INTEGER, "
        "cancelled BOOLEAN)",
        "INSERT INTO trips VALUES (1, 'HAR', 10, -5, 900, false), (2, 'HAR', 20, NULL, NULL, true), "
        "(3, 'HAR', 30, 15, 1200, false), (4, 'NTH', 40, 0, 1500, false)")


answer = answerer(planner(TRIPS, {"port": ["HAR", "NTH"]}))


@pytest.mark.parametrize(("question", "expected"), [
    ("What is the total distance in miles of the trips from HAR, cancelled ones included?", 60),
    ("Total miles of HAR trips, including the cancelled ones", 60),
    ("Total miles of HAR trips, even the cancelled ones", 60),
    ("Total miles of the cancelled HAR trips", 20),
    # every row said to be included
    ("Total miles of HAR trips, all trips included", 60),
    ("Total miles of HAR trips, including all trips", 60),
    ("Total miles of HAR trips, cancelled or not", 60),
])
def test_a_condition_said_to_be_included_picks_no_rows(data: duckdb.DuckDBPyConnection, question: str,
                                                        expected: int) -> None:
    assert answer(data, question) == [(expected,)]


@pytest.mark.parametrize("question", [
    "What share of HAR trips arrived on time or early (arr_delay <= 0)?",
    "What share of HAR trips arrived on time or early (arrival delay <= 0)?",
])
def test_a_condition_said_again_in_parentheses_is_one_condition(data: duckdb.DuckDBPyConnection,
                                                                question: str) -> None:
    # of the three trips from HAR, one arrived early (the cancelled one has no delay)
    assert answer(data, question) == [(pytest.approx(100 / 3),)]


@pytest.mark.parametrize(("question", "expected"), [
    ("What portion of HAR trips were cancelled? Percent please.", [(pytest.approx(100 / 3),)]),
    ("What proportion (percent) of the trips were cancelled?", [(25.0,)]),
    ("What proportion (as a percentage) of the trips were cancelled?", [(25.0,)]),
    ("I need the proportion (in percent) of the trips that were cancelled.", [(25.0,)]),
    ("Of the HAR trips, what proportion (percent) were cancelled?", [(pytest.approx(100 / 3),)]),
])
def test_a_portion_and_a_unit_in_parentheses_are_a_share(data: duckdb.DuckDBPyConnection, question: str,
                                                         expected: list[tuple[object, ...]]) -> None:
    assert answer(data, question) == expected


def test_which_single_is_which(data: duckdb.DuckDBPyConnection) -> None:
    assert [row[0] for row in answer(data, "Which single trip sailed the most miles?")] == [4]
