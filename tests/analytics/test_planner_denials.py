"""Denials and a few readings around them: groups that lack something said with "did not", "didn't" or "no"
before a column's word for the rows ("no departures at all from Harbourton"); a denial no reading step read is
never dropped (the question is declined, not answered as its opposite); "at or after 6 pm" keeps 6 pm; "from
month to month" is a monthly series; a spread of a possessive's measure ("the standard deviation of Northwind's
delays"). On a small ferry schema of its own."""

from __future__ import annotations

from collections.abc import Iterator

import duckdb
import pytest

from convener.analytics.planner import NoPlan, Plan, Relationship, plan_question
from convener.analytics.shapes import ColumnInfo, TableInfo
from tests.analytics.small_tables import PORT_ROWS, PORT_VALUES, PORTS, answerer, database, joined_planner, planner

TRIPS = TableInfo("trips", (
    ColumnInfo("trip_id", "INTEGER", "Identifier of the trip"),
    ColumnInfo("operator", "STRING", "Company that ran the trip"),
    ColumnInfo("start_port", "STRING", "Port the trip left from"),
    ColumnInfo("trip_date", "DATE", "Date of the trip"),
    ColumnInfo("departure_time", "INTEGER", "Scheduled departure time of day, HHMM"),
    ColumnInfo("delay", "INTEGER", "Minutes the trip left after its scheduled time"),
    ColumnInfo("scrapped", "BOOLEAN", "Whether the trip was scrapped"),
), description="Ferry trips from the islands' ports in 2024: one row per trip.")
BY_PORT = (Relationship("trips", ("start_port",), "ports", ("code",)),)
VALUES = {("trips", "operator"): ["Northwind", "Islander", "Gull Line"], ("trips", "start_port"): ["HAR", "NTH"],
          **PORT_VALUES}


@pytest.fixture(scope="module")
def data() -> Iterator[duckdb.DuckDBPyConnection]:
    yield from database(
        "CREATE TABLE trips (trip_id INTEGER, operator VARCHAR, start_port VARCHAR, trip_date DATE, "
        "departure_time INTEGER, delay INTEGER, scrapped BOOLEAN)",
        "INSERT INTO trips VALUES "
        "(1, 'Northwind', 'HAR', DATE '2024-01-05', 700, 5, false), "
        "(2, 'Northwind', 'NTH', DATE '2024-01-20', 1800, 30, true), "
        "(3, 'Islander', 'NTH', DATE '2024-02-02', 1830, 0, false), "
        "(4, 'Islander', 'NTH', DATE '2024-02-14', 900, 10, false), "
        "(5, 'Gull Line', 'HAR', DATE '2024-02-20', 1200, 90, true), "
        "(6, 'Northwind', 'HAR', DATE '2024-02-28', 1900, 15, false)",
        *PORT_ROWS)


plan = joined_planner([TRIPS], [PORTS], BY_PORT, VALUES)


answer = answerer(plan)


@pytest.mark.parametrize(("question", "expected"), [
    ("Which operators had no departures at all from Harbourton?", {"Islander"}),
    ("Which operators had no trips at all from Harbourton (HAR)?", {"Islander"}),  # (the name glossing the code)
    ("Which operators did not have any scrapped trips?", {"Islander"}),
    ("Which operators didn't have a single scrapped trip?", {"Islander"}),
    ("Which operators never had a scrapped trip?", {"Islander"}),
])
def test_groups_that_lack_rows_said_with_a_denial(data: duckdb.DuckDBPyConnection, question: str,
                                                   expected: set[str]) -> None:
    assert {row[0] for row in answer(data, question)} == expected


SAMPLED = TableInfo("penguins", (ColumnInfo("species", "STRING"),
                                 ColumnInfo("study", "STRING", "Season the penguin was sampled in")),
                    description="One row per penguin.")


@pytest.mark.parametrize(("question", "expected"), [
    # (the value had been kept, "not" said as unused: 2 and 1)
    ("How many Gentoos were not sampled in the PAL0708 season?", 1),
    ("Count the penguins that weren't sampled during the PAL0809 study season.", 2),
])
def test_a_denial_before_a_verb_and_small_words_denies_the_value_after_them(question: str, expected: int) -> None:
    made = planner(SAMPLED, {"species": ["Adelie", "Gentoo"], "study": ["PAL0708", "PAL0809"]})(question)
    assert not made.unaccounted, made
    with duckdb.connect() as data:
        data.execute("CREATE TABLE penguins AS SELECT * FROM (VALUES ('Gentoo', 'PAL0708'), ('Gentoo', 'PAL0708'), "
                     "('Gentoo', 'PAL0809'), ('Adelie', 'PAL0809')) AS t(species, study)")
        assert data.execute(made.sql).fetchall() == [(expected,)], made.sql


@pytest.mark.parametrize("question", [
    "Which operators had no delays over an hour?",
    "Which operators had no luck at all?",
])
def test_a_denial_no_reading_read_declines_the_question(question: str) -> None:
    with pytest.raises(NoPlan):
        plan(question)


@pytest.mark.parametrize(("question", "expected"), [
    ("How many trips were scheduled to depart at or after 6 pm?", 3),
    ("How many trips were scheduled to depart after 6 pm?", 2),
    ("How many trips were scheduled to depart at or before 9 am?", 2),
    # the time written again as the column holds it
    ("How many trips were scheduled to depart at 6pm (1800) or later?", 3),
    ("How many trips were scheduled to depart before 9 am (900)?", 1),
])
def test_at_or_after_a_time_keeps_that_time(data: duckdb.DuckDBPyConnection, question: str, expected: int) -> None:
    assert answer(data, question) == [(expected,)]


def test_from_month_to_month_is_a_monthly_series(data: duckdb.DuckDBPyConnection) -> None:
    rows = answer(data, "How did the average delay vary from month to month?")

    assert [(str(month)[:7], float(delay)) for month, delay in rows] == [("2024-01", 17.5), ("2024-02", 28.75)]


def test_a_spread_of_a_possessive_values_measure(data: duckdb.DuckDBPyConnection) -> None:
    (spread,), = answer(data, "Can you give me the standard deviation of Northwind's delays?")

    assert spread == pytest.approx(data.execute(
        "SELECT STDDEV_SAMP(delay) FROM trips WHERE operator = 'Northwind'").fetchone()[0])  # type: ignore[index]


FLEETS = TableInfo("fleets", (ColumnInfo("operator", "STRING", "Operator code"),
                               ColumnInfo("name", "STRING", "Full name of the fleet")),
                   description="Fleets: one row per fleet.")


def test_which_rows_of_another_table_are_not_answered_by_a_listing_of_the_queried_ones(
        data: duckdb.DuckDBPyConnection) -> None:
    """(The fleets are told apart by the trips' key to them, and named: ``test_planner_joined_rows``.)"""
    def planned(question: str) -> Plan:
        return plan_question(question, [TRIPS], values_of=lambda t, c: VALUES.get((t, c), []),
                             relationships=(Relationship("trips", ("operator",), "fleets", ("operator",)),),
                             related=[FLEETS])

    # the scrapped trips themselves (every column of them) would not say which fleets: their keys and names do
    fleets = planned("Which fleets had scrapped trips?").sql
    assert fleets.startswith('SELECT DISTINCT "trips"."operator", "fleets"."name" FROM "trips"')
    assert data.execute(planned("Which operators had scrapped trips?").sql).fetchall() == [("Gull Line",),
                                                                                           ("Northwind",)]


def test_a_time_said_without_a_preposition_and_every_later_one(data: duckdb.DuckDBPyConnection) -> None:
    rows = answer(data, "average delay for trips scheduled to depart before noon vs. noon or later")

    assert [tuple(float(value) for value in row) for row in rows] == [(7.5, 33.75)]


def test_a_joined_rows_column_said_with_an_owner_in_a_list_of_columns() -> None:
    # "the fleet's name": the name of the fleet, not the fleet (the operator, which joins it) and then a name
    made = plan_question("List the scrapped trips, with date, operator and the fleet's name.", [TRIPS],
                         values_of=lambda t, c: VALUES.get((t, c), []),
                         relationships=(Relationship("trips", ("operator",), "fleets", ("operator",)),),
                         related=[FLEETS])

    assert '"fleets"."name"' in made.sql and not made.unaccounted, made


# --- Missing values left out: "ignoring missing …"; wanted missing and known at once, declined -------------

BOATS = TableInfo("boats", (ColumnInfo("boat_id", "INTEGER", "Identifier of the boat"),
                            ColumnInfo("hull_code", "STRING", "Hull code painted on the boat; empty when unknown")),
                  description="Boats seen in the harbour: one row per sighting.")


@pytest.fixture(scope="module")
def boats() -> Iterator[duckdb.DuckDBPyConnection]:
    yield from database("CREATE TABLE boats (boat_id INTEGER, hull_code VARCHAR)",
                        "INSERT INTO boats VALUES (1, 'A1'), (2, 'A1'), (3, NULL), (4, NULL), (5, NULL), (6, 'B2')")


@pytest.mark.parametrize("question", ["Top 2 hull codes by number of boats (ignore missing hull codes)",
                                      "Top 2 hull codes by number of boats, ignoring missing hull codes"])
def test_missing_values_ignored_are_left_out(boats: duckdb.DuckDBPyConnection, question: str) -> None:
    made = plan_question(question, [BOATS], values_of=lambda _, column: ["A1", "B2"] if column == "hull_code" else [])
    assert not made.unaccounted, made
    assert sorted(boats.execute(made.sql).fetchall()) == [("A1", 2), ("B2", 1)], made.sql


def test_rows_wanted_both_missing_and_known_are_declined() -> None:
    with pytest.raises(NoPlan, match="missing and for those whose hull_code is known"):
        plan_question("Top 2 hull codes by number of boats with missing hull codes", [BOATS],
                      values_of=lambda _, column: ["A1", "B2"] if column == "hull_code" else [])


@pytest.mark.parametrize("question", [
    "average delay of trips leaving HAR",
    "Is the average delay of trips leaving HAR higher than that of trips leaving NTH?",
])
def test_leaving_is_said_of_the_port_a_trip_left_from(question: str) -> None:
    made = plan_question(question, [TRIPS], values_of=lambda t, c: VALUES.get((t, c), []))
    assert not made.unaccounted and '"start_port" = \'HAR\'' in made.sql, made


@pytest.mark.parametrize(("question", "expected"), [
    ("How many operators ran trips?", 3),
    ("How many operators had scrapped trips?", 2),
    ("How many start ports did Islander trips leave from?", 1),
])
def test_a_column_named_by_its_plural_before_the_rows_counts_its_values(data: duckdb.DuckDBPyConnection,
                                                                        question: str, expected: int) -> None:
    # (before, the rows were counted, the answer saying it could not use "operators")
    assert answer(data, question) == [(expected,)]
