"""Words of a period and of groups that a joined table's column or a silent reading must not take: "the first cancelled
trip of the year" is the data's year (not a boat's year of manufacture); "the busiest month" asked where "year"
picks the boats is the trips' month (declined where no table asked about has dates); "each of the depots" unread is
said; "what share of cancellations happened in March" counts March among the cancellations. On a small ferry schema."""

from __future__ import annotations

import datetime
from collections.abc import Iterator

import duckdb
import pytest

from convener.analytics.planner import NoPlan, Plan, Relationship, Term, plan_question
from convener.analytics.shapes import ColumnInfo, TableInfo
from tests.analytics.small_tables import database

TRIPS = TableInfo("trips", (
    ColumnInfo("trip_id", "INTEGER", "Identifier of the trip"),
    ColumnInfo("trip_date", "DATE", "Date of the trip"),
    ColumnInfo("hull", "STRING", "Hull number of the boat; the boats table describes the boat"),
    ColumnInfo("minutes", "INTEGER", "Length of the crossing in minutes"),
    ColumnInfo("scrapped", "BOOLEAN", "Whether the trip was cancelled"),
), description="Ferry trips of 2024: one row per trip.")
BOATS = TableInfo("boats", (
    ColumnInfo("hull", "STRING", "Hull number of the boat"),
    ColumnInfo("year", "INTEGER", "Year the boat was manufactured"),
), description="Boats: one row per boat.")
BY_HULL = (Relationship("trips", ("hull",), "boats", ("hull",)),)
TERMS = (Term("cancelled trip", "A trip that never sailed, that is trips whose scrapped = true",
              labels=("cancellation", "cancellations", "cancelled")),)


@pytest.fixture(scope="module")
def data() -> Iterator[duckdb.DuckDBPyConnection]:
    yield from database(
        "CREATE TABLE trips (trip_id INTEGER, trip_date DATE, hull VARCHAR, minutes INTEGER, scrapped BOOLEAN)",
        "INSERT INTO trips VALUES (1, '2024-01-05', 'H1', 30, false), (2, '2024-02-07', 'H1', 35, true), "
        "(3, '2024-03-09', 'H2', 40, true), (4, '2024-03-10', 'H2', 45, false), (5, '2024-03-11', 'H1', 50, true)",
        "CREATE TABLE boats (hull VARCHAR, year INTEGER)",
        "INSERT INTO boats VALUES ('H1', 1985), ('H2', 1995)")


def plan(question: str, tables: tuple[TableInfo, ...] = (TRIPS,)) -> Plan:
    return plan_question(question, list(tables), TERMS, relationships=BY_HULL, related=[TRIPS, BOATS],
                         values_of=lambda t, c: ["H1", "H2"] if c == "hull" else [])


def test_of_the_year_is_the_datas_period_not_a_joined_year(data: duckdb.DuckDBPyConnection) -> None:
    made = plan("When was the first cancelled trip of the year?")
    assert "boats" not in made.sql and data.execute(made.sql).fetchall() == [(datetime.date(2024, 2, 7),)], made.sql


def test_periods_asked_of_rows_without_dates_are_asked_of_the_rows_that_have_them(
        data: duckdb.DuckDBPyConnection) -> None:
    # (the boats picked by "year", the trips joining them have the dates: they are the rows asked about)
    made = plan("the busiest month of the year?", (BOATS,))
    assert data.execute(made.sql).fetchall() == [(datetime.datetime(2024, 3, 1), 3)], made.sql


def test_periods_asked_where_no_rows_have_dates_are_declined() -> None:
    with pytest.raises(NoPlan, match="no dates"):
        plan_question("the 3 busiest days of the year?", [BOATS], TERMS, related=[TRIPS])


def test_groups_of_each_of_the_left_unread_are_said() -> None:
    try:
        made = plan("Total minutes sailed from each of the two ports.")
    except NoPlan:
        return
    assert "each" in made.unaccounted, made


def test_a_share_of_rows_that_happened_in_a_month_counts_the_month_among_them(data: duckdb.DuckDBPyConnection) -> None:
    made = plan("What share of cancellations happened in March?")
    assert data.execute(made.sql).fetchall()[0][0] == pytest.approx(200 / 3), made.sql


@pytest.mark.parametrize(("question", "expected"), [
    ("What was the busiest month for trips?", [(datetime.date(2024, 3, 1), 3)]),
    ("the quietest month for trips", [(datetime.date(2024, 1, 1), 1), (datetime.date(2024, 2, 1), 1)]),
    ("Monthly count of cancelled trips during March 2024", [(datetime.date(2024, 3, 1), 2)]),
])
def test_a_period_ranked_by_how_busy_and_a_count_during_a_period(data: duckdb.DuckDBPyConnection, question: str,
                                                                 expected: list[tuple[object, ...]]) -> None:
    # (before, "busiest" before the period's noun and "during" after a count were words the data had nothing for)
    made = plan(question)
    assert not made.unaccounted, made
    assert sorted((row[0].date() if isinstance(row[0], datetime.datetime) else row[0], row[1])
                  for row in data.execute(made.sql).fetchall()) == expected


NESTS = TableInfo("nests", (ColumnInfo("nest_id", "INTEGER", "Identifier of the nest"),
                            ColumnInfo("egg_date", "DATE", "Date the nest was first seen with an egg")),
                  description="Nests: one row per nest.")


@pytest.fixture(scope="module")
def nests() -> Iterator[duckdb.DuckDBPyConnection]:
    yield from database("CREATE TABLE nests (nest_id INTEGER, egg_date DATE)",
                        "INSERT INTO nests VALUES (1, '2024-11-01'), (2, '2024-11-01'), (3, '2024-11-01'), "
                        "(4, '2024-11-02'), (5, '2024-11-02'), (6, '2024-11-03')")


@pytest.mark.parametrize("question", ["Top 2 egg dates by number of nests.", "Which 2 egg dates had the most nests?"])
def test_a_date_column_after_a_ranking_and_its_number_is_the_group_ranked(nests: duckdb.DuckDBPyConnection,
                                                                           question: str) -> None:
    # (before, only "which date …" read the date as the groups: "top 2 egg dates" was declined)
    made = plan_question(question, [NESTS])
    assert not made.unaccounted, made
    assert sorted((row[0].date() if isinstance(row[0], datetime.datetime) else row[0], row[1])
                  for row in nests.execute(made.sql).fetchall()) == [
        (datetime.date(2024, 11, 1), 3), (datetime.date(2024, 11, 2), 2)]
