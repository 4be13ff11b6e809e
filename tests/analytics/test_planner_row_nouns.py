"""Words that name rows or columns by more than one reading, on small schemas of a taxi firm: ``trip`` is the
trip's number, and "which trip had the longest duration" asks for a trip, not for the highest trip number;
"seat" is the seat's type and "seats" their number, and "the seat types" is the type."""

from __future__ import annotations

from collections.abc import Iterator

import duckdb
import pytest

from convener.analytics.planner import Term, plan_question
from convener.analytics.shapes import ColumnInfo, TableInfo
from tests.analytics.small_tables import database, planner

TRIPS = TableInfo("trips", (
    ColumnInfo("trip", "INTEGER", "Trip number"), ColumnInfo("driver", "STRING", "Driver of the taxi"),
    ColumnInfo("trip_date", "DATE", "Date of the trip"), ColumnInfo("distance", "INTEGER", "Distance driven, in miles"),
    ColumnInfo("duration", "INTEGER", "Time the trip took, in minutes"),
    ColumnInfo("wait", "INTEGER", "Minutes the passenger waited for the taxi")),
    description="Taxi trips of one week: one row per trip.")
TERMS = (Term("average speed", "A trip's speed in miles per hour: distance / (duration / 60), from the trips table.",
              ("speed", "mph")),)
VALUES = {"driver": ["Ann", "Bo", "Cy"]}


@pytest.fixture(scope="module")
def data() -> Iterator[duckdb.DuckDBPyConnection]:
    yield from database(
        "CREATE TABLE trips (trip INTEGER, driver VARCHAR, trip_date DATE, distance INTEGER, duration INTEGER, "
        "wait INTEGER)",
        "INSERT INTO trips VALUES (101, 'Ann', '2022-05-02', 12, 30, 4), (102, 'Bo', '2022-05-02', 30, 40, 9), "
        "(103, 'Cy', '2022-05-03', 5, 25, 2), (104, 'Ann', '2022-05-04', 8, 12, 7)")


plan = planner(TRIPS, VALUES, TERMS)


def ask(data: duckdb.DuckDBPyConnection, question: str) -> list[tuple[object, ...]]:
    return sorted(data.execute(plan(question).sql).fetchall(), key=repr)


@pytest.mark.parametrize(("question", "driver"), [
    ("Which trip had the highest duration?", "Bo"),
    ("Which trip had the lowest wait?", "Cy"),
    ("What trip had the highest average speed? Give its date, driver and trip number.", "Bo"),
])
def test_which_before_the_rows_noun_asks_for_a_row(data: duckdb.DuckDBPyConnection, question: str,
                                                   driver: str) -> None:
    made = plan(question)
    result = data.execute(made.sql)
    columns = [column[0] for column in result.description]
    rows = result.fetchall()
    assert not made.unaccounted and len(rows) == 1 and rows[0][columns.index("driver")] == driver


CABS = TableInfo("cabs", (
    ColumnInfo("plate", "STRING", "Licence plate"), ColumnInfo("type", "STRING", "Type of cab, e.g. sedan"),
    ColumnInfo("seats", "INTEGER", "Number of seats"), ColumnInfo("seat", "STRING", "Type of seat, e.g. leather")),
    description="Cabs of the fleet: one row per cab.")
SEATS = {"type": ["sedan", "van"], "seat": ["leather", "cloth", "vinyl"]}


@pytest.fixture(scope="module")
def cabs() -> Iterator[duckdb.DuckDBPyConnection]:
    yield from database("CREATE TABLE cabs (plate VARCHAR, type VARCHAR, seats INTEGER, seat VARCHAR)",
                        "INSERT INTO cabs VALUES ('A1', 'sedan', 4, 'leather'), ('B2', 'van', 7, 'cloth'), "
                        "('C3', 'sedan', 4, 'vinyl'), ('D4', 'van', 8, 'cloth')")


@pytest.mark.parametrize(("question", "expected"), [
    ("List the seat types in the cabs table", [("cloth",), ("leather",), ("vinyl",)]),
    ("List the seat types except leather", [("cloth",), ("vinyl",)]),
])
def test_a_word_two_columns_share_followed_by_its_description_names_the_one_written(
        cabs: duckdb.DuckDBPyConnection, question: str, expected: list[tuple[object, ...]]) -> None:
    made = plan_question(question, [CABS], values_of=lambda _, column: SEATS.get(column, []))
    assert sorted(cabs.execute(made.sql).fetchall()) == expected


GULLS = TableInfo("gulls", (ColumnInfo("ring", "STRING", "Ring code of the gull"),
                            ColumnInfo("colony", "STRING", "Colony the gull nests in"),
                            ColumnInfo("wing_mm", "INTEGER", "Wing length in millimetres")),
                  description="Herring gulls ringed on the coast: one row per gull.")


@pytest.mark.parametrize("question", ["How many birds have a wing length over 400 mm?",
                                      "How many animals have a wing length over 400 mm?"])
def test_the_kind_the_rows_are_of_names_them(question: str) -> None:
    made = plan_question(question, [GULLS], values_of=lambda _, column: [])
    assert not made.unaccounted, made
    assert made.sql == 'SELECT COUNT(*) AS "number_of_gulls" FROM "gulls" WHERE "wing_mm" > 400', made.sql


def test_the_fastest_row_is_ranked_by_the_formula_speed_names(data: duckdb.DuckDBPyConnection) -> None:
    # ("fastest" had been read of the next number, the trip number: trip 104 answered)
    made = plan("What was the fastest trip?")
    assert not made.unaccounted
    assert [row for row in data.execute(made.sql).fetchall() if 102 in row] == data.execute(made.sql).fetchall()


@pytest.mark.parametrize(("question", "expected"), [
    ("Which driver is fastest on average?", ("Bo", 45.0)),
    ("Which driver is slowest on average (mph)?", ("Cy", 12.0)),
])
def test_groups_ranked_by_a_superlative_on_average_are_ranked_by_their_average(
        data: duckdb.DuckDBPyConnection, question: str, expected: tuple[object, ...]) -> None:
    # (declined: "on average" found no column to average, the superlative's formula unread)
    made = plan(question)
    assert not made.unaccounted, made
    assert data.execute(made.sql).fetchall() == [(expected[0], pytest.approx(expected[1]))], made.sql
