"""What a true/false column's description says its rows never did, said of the rows ("sailed trips" where
``scrapped`` is "Whether the trip was scrapped (it never sailed)"): the column false; "never" right before
its condition negates it; and a word of direction parted from a place by punctuation does not say which end
of the trip the place is. On a small ferry schema of its own."""

from __future__ import annotations

from collections.abc import Iterator

import duckdb
import pytest

from convener.analytics.planner import Relationship, plan_question
from convener.analytics.shapes import ColumnInfo, TableInfo
from tests.analytics.small_tables import PORT_ROWS, PORT_VALUES, PORTS, database, joined_planner

TRIPS = TableInfo("trips", (
    ColumnInfo("trip_id", "INTEGER", "Identifier of the trip"),
    ColumnInfo("start_port", "STRING", "Port the trip left from"),
    ColumnInfo("end_port", "STRING", "Port the trip was bound for"),
    ColumnInfo("nautical_miles", "INTEGER", "Length of the crossing in nautical miles"),
    ColumnInfo("delay", "INTEGER", "Minutes the trip sailed after its scheduled time"),
    ColumnInfo("scrapped", "BOOLEAN", "Whether the trip was scrapped (it never sailed)"),
), description="Ferry trips that sailed from the islands' ports in 2024: one row per trip.")
BY_PORT = (Relationship("trips", ("start_port",), "ports", ("code",)),
           Relationship("trips", ("end_port",), "ports", ("code",)))
VALUES = {("trips", "start_port"): ["HAR", "NTH"], ("trips", "end_port"): ["HAR", "NTH"],
          **PORT_VALUES}


@pytest.fixture(scope="module")
def data() -> Iterator[duckdb.DuckDBPyConnection]:
    yield from database(
        "CREATE TABLE trips (trip_id INTEGER, start_port VARCHAR, end_port VARCHAR, nautical_miles INTEGER, "
        "delay INTEGER, scrapped BOOLEAN)",
        "INSERT INTO trips VALUES (1, 'HAR', 'NTH', 10, 5, false), (2, 'HAR', 'NTH', 10, NULL, true), "
        "(3, 'NTH', 'HAR', 12, 90, false), (4, 'HAR', 'NTH', 10, 0, false), (5, 'NTH', 'HAR', 12, NULL, true)",
        *PORT_ROWS)


plan = joined_planner([TRIPS], [PORTS], BY_PORT, VALUES)


def answer(data: duckdb.DuckDBPyConnection, question: str) -> list[tuple[object, ...]]:
    made = plan(question)
    assert not made.unaccounted, made
    return data.execute(made.sql).fetchall()


@pytest.mark.parametrize(("question", "expected"), [
    ("How many trips sailed?", 3),
    ("How many sailed trips were there?", 3),
    ("Counting only trips that actually sailed, how many were there?", 3),
    ("How many trips never sailed?", 2),
    ("How many trips were scrapped?", 2),
])
def test_what_the_true_rows_never_did_said_of_the_rows_is_the_column_false(
        data: duckdb.DuckDBPyConnection, question: str, expected: int) -> None:
    assert answer(data, question) == [(expected,)]


@pytest.mark.parametrize(("question", "expected"), [
    ("How many trips sailed from Harbourton?", 3),  # where they sailed from, as every trip did
    ("How many trips sailed more than an hour late?", 1),  # how they sailed
])
def test_the_word_followed_by_where_or_how_is_no_condition_of_its_own(
        data: duckdb.DuckDBPyConnection, question: str, expected: int) -> None:
    assert answer(data, question) == [(expected,)]
    assert "scrapped" not in plan(question).sql


def test_sailed_trips_from_a_port_in_parentheses_keep_their_port_end(data: duckdb.DuckDBPyConnection) -> None:
    # "sailed" after the parenthesis is no word of direction of Harbourton's: the port is the start, from "out of"
    made = plan("Total nautical miles out of Harbourton (sailed trips only)")
    assert "start_port" in made.sql and "NOT" in made.sql, made.sql
    assert data.execute(made.sql).fetchall() == [(20,)]


def test_never_further_from_its_condition_is_no_condition_of_the_rows(data: duckdb.DuckDBPyConnection) -> None:
    # "ports that never had a scrapped trip" are the ports without one, not the trips that were not scrapped
    made = plan("Which ports never had a scrapped trip?")
    assert "WHERE NOT" not in made.sql and "= 0" in made.sql, made.sql
    assert [row[0] for row in data.execute(made.sql).fetchall()] == []  # both ports had one


FLIGHTS = TableInfo("flights", (
    ColumnInfo("flight", "INTEGER", "Flight number"),
    ColumnInfo("carrier", "STRING", "Airline code"),
    ColumnInfo("distance", "INTEGER", "Distance between the airports, in miles"),
    ColumnInfo("cancelled", "BOOLEAN", "Whether the flight was cancelled (it never departed)"),
), description="Flights: one row per flight.")


@pytest.fixture(scope="module")
def flights() -> Iterator[duckdb.DuckDBPyConnection]:
    yield from database(
        "CREATE TABLE flights (flight INTEGER, carrier VARCHAR, distance INTEGER, cancelled BOOLEAN)",
        "INSERT INTO flights VALUES (1, 'AA', 100, false), (2, 'AA', 300, true), (3, 'UA', 200, false)")


@pytest.mark.parametrize(("question", "expected"), [
    ("total miles of AA flights that took off", [(100,)]),
    ("How many flights actually took off?", [(2,)]),
    ("How many flights took off and were operated by AA?", [(1,)]),
])
def test_other_words_for_what_the_true_rows_never_did(flights: duckdb.DuckDBPyConnection, question: str,
                                                      expected: list[tuple[object, ...]]) -> None:
    made = plan_question(question, [FLIGHTS], values_of=lambda _, column: ["AA", "UA"] if column == "carrier" else [])
    assert not made.unaccounted, made
    assert flights.execute(made.sql).fetchall() == expected, made.sql
