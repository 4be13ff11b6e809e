"""Questions the planner must read whole or hedge: a negated list stays one list, a negated true/false
condition stays negated, and a condition on which rows count is never dropped."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date

import duckdb
import pytest

from convener.analytics.planner import NoPlan, Plan, Term, plan_question
from convener.analytics.shapes import ColumnInfo, TableInfo
from tests.analytics.small_tables import database

FLIGHTS = TableInfo("flights", (ColumnInfo("flight_id", "INTEGER"),
                                ColumnInfo("carrier", "STRING", samples=("UA", "B6", "EV", "AA")),
                                ColumnInfo("flight_date", "DATE"), ColumnInfo("dep_delay", "INTEGER"),
                                ColumnInfo("arr_delay", "INTEGER"), ColumnInfo("full_load", "BOOLEAN")),
                    description="One row per flight.")


@pytest.fixture(scope="module")
def data() -> Iterator[duckdb.DuckDBPyConnection]:
    yield from database("CREATE TABLE flights (flight_id INTEGER, carrier VARCHAR, flight_date DATE, "
                        "dep_delay INTEGER, arr_delay INTEGER, full_load BOOLEAN)",
                        "INSERT INTO flights VALUES (1, 'UA', '2013-07-01', 10, 5, true), (2, 'B6', '2013-07-02', -3, -1, true), "
                        "(3, 'EV', '2013-12-01', 40, 30, true), (4, 'AA', '2013-12-02', 2, NULL, false), "
                        "(5, 'AA', '2013-12-03', -5, -2, true)")


def planned(question: str) -> Plan | None:
    try:
        return plan_question(question, [FLIGHTS])
    except NoPlan:
        return None


def test_a_negated_list_joined_by_and_stays_one_negated_list(data: duckdb.DuckDBPyConnection) -> None:
    plan = plan_question("How many flights had a carrier other than UA, B6 and EV?", [FLIGHTS])
    assert data.execute(plan.sql).fetchall() == [(2,)]


def test_a_column_named_before_its_negated_list_is_not_a_grouping(data: duckdb.DuckDBPyConnection) -> None:
    plan = plan_question("How many flights were operated by carriers other than UA, B6 and EV?", [FLIGHTS])
    assert data.execute(plan.sql).fetchall() == [(2,)]


def test_a_negation_a_few_words_before_a_true_false_condition_negates_it(data: duckdb.DuckDBPyConnection) -> None:
    plan = plan_question("How many flights were not observed with a full load?", [FLIGHTS])
    assert data.execute(plan.sql).fetchall() == [(1,)]


def test_two_periods_compared_are_never_intersected_into_an_empty_answer(data: duckdb.DuckDBPyConnection) -> None:
    made = plan_question("Compare the average arrival delay in July 2013 with December 2013.", [FLIGHTS])
    rows = data.execute(made.sql).fetchall()
    assert [(str(row[0])[:10], row[-1]) for row in rows] == [("2013-07-01", 2.0), ("2013-12-01", 14.0)]


def test_two_days_named_apart_are_each_a_group(data: duckdb.DuckDBPyConnection) -> None:
    made = plan_question("Compare the average departure delay on July 1, 2013 and December 3, 2013", [FLIGHTS])
    rows = data.execute(made.sql).fetchall()
    assert [(str(row[0])[:10], row[-1]) for row in rows] == [("2013-07-01", 10.0), ("2013-12-03", -5.0)]


def test_which_date_had_the_highest_average_ranks_the_dates(data: duckdb.DuckDBPyConnection) -> None:
    rows = data.execute(plan_question("Which date had the highest average departure delay?", [FLIGHTS]).sql).fetchall()
    assert [(str(row[0])[:10], row[-1]) for row in rows] == [("2013-12-01", 40.0)]


@pytest.mark.parametrize(("question", "expected"), [
    ("Of the flights with an arrival delay recorded, what percentage had a negative arr_delay?", 50.0),
    ("How many flights had an arrival delay recorded?", 4), ("How many flights had no recorded arrival delay?", 1),
    ("How many flights had an arrival delay not recorded?", 1),
])
def test_a_column_said_to_be_recorded_or_not_keeps_or_drops_empty_rows(data: duckdb.DuckDBPyConnection,
                                                                       question: str, expected: float) -> None:
    assert data.execute(plan_question(question, [FLIGHTS]).sql).fetchall() == [(expected,)]


@pytest.mark.parametrize(("question", "expected"), [
    ("What was the worst departure delay?", [(40,)]), ("What was the best departure delay?", [(-5,)]),
])
def test_worst_and_best_take_the_end_the_column_judges(data: duckdb.DuckDBPyConnection, question: str,
                                                       expected: list[tuple[object, ...]]) -> None:
    assert data.execute(plan_question(question, [FLIGHTS]).sql).fetchall() == expected


def test_worst_of_a_column_whose_better_end_is_unknown_is_declined() -> None:
    assert planned("What was the worst flight id?") is None


@pytest.mark.parametrize(("question", "expected"), [
    ("Show, per carrier, the number of flights and the maximum arrival delay.",
     [("AA", 2, -2), ("B6", 1, -1), ("EV", 1, 30), ("UA", 1, 5)]),
    ("What is the number of flights and the maximum arrival delay?", [(5, 30)]),
])
def test_a_count_of_rows_asked_beside_a_measure_is_computed_too(data: duckdb.DuckDBPyConnection, question: str,
                                                                 expected: list[tuple[object, ...]]) -> None:
    assert data.execute(plan_question(question, [FLIGHTS]).sql).fetchall() == expected


NESTS = TableInfo("nests", (ColumnInfo("nest_id", "STRING"),
                            ColumnInfo("species", "STRING", samples=("Adelie", "Gentoo")),
                            ColumnInfo("flipper_length_mm", "INTEGER")),
                  description="One row per nest.")


def test_the_longest_for_each_group_is_every_groups_maximum() -> None:
    connection = duckdb.connect()
    connection.execute("CREATE TABLE nests (nest_id VARCHAR, species VARCHAR, flipper_length_mm INTEGER)")
    connection.execute("INSERT INTO nests VALUES ('a', 'Adelie', 180), ('b', 'Adelie', 190), ('c', 'Gentoo', 220)")
    plan = plan_question("What's the longest flipper for each species?", [NESTS])
    assert connection.execute(plan.sql).fetchall() == [("Adelie", 190), ("Gentoo", 220)]
    connection.close()


def test_the_top_of_one_number_is_its_maximum_not_a_list_of_rows(data: duckdb.DuckDBPyConnection) -> None:
    plan = plan_question("What's the top departure delay of any flight?", [FLIGHTS])
    assert data.execute(plan.sql).fetchall() == [(40,)]


@pytest.mark.parametrize(("question", "expected"), [
    ("How many flights were without an arrival delay recorded?", [(1,)]),
    ("What was the earliest flight date recorded for a UA flight?", [(date(2013, 7, 1),)]),
])
def test_recorded_after_a_column_is_a_condition_only_where_rows_are_said_to_have_it(
        data: duckdb.DuckDBPyConnection, question: str, expected: list[tuple[object, ...]]) -> None:
    assert data.execute(plan_question(question, [FLIGHTS]).sql).fetchall() == expected


def test_the_top_of_a_glossary_measure_named_with_its_unit_is_one_maximum() -> None:
    table = TableInfo("trips", (ColumnInfo("trip_id", "INTEGER"), ColumnInfo("distance", "INTEGER"),
                                ColumnInfo("air_time", "INTEGER")), description="One row per trip.")
    speed = Term("average speed", "A trip's speed in miles per hour: distance / (air_time / 60), from the trips "
                 "table.", ("speed", "mph"))
    connection = duckdb.connect()
    connection.execute("CREATE TABLE trips (trip_id INTEGER, distance INTEGER, air_time INTEGER)")
    connection.execute("INSERT INTO trips VALUES (1, 300, 60), (2, 500, 60)")
    plan = plan_question("What's the top speed in mph of any trip?", [table], [speed])
    assert connection.execute(plan.sql).fetchall() == [(500.0,)]
    connection.close()


def test_a_value_ending_like_a_superlative_ranks_nothing() -> None:
    table = TableInfo("flights", (ColumnInfo("carrier", "STRING", samples=("Southwest", "Delta")),
                                  ColumnInfo("arr_delay", "INTEGER")), description="One row per flight.")
    made = plan_question("What is the average arrival delay for Southwest flights?", [table])
    assert made.shape == "aggregate" and "AVG" in made.sql


def test_the_last_one_standing_for_a_value_is_no_ranking(data: duckdb.DuckDBPyConnection) -> None:
    # "the last one (EV)" had been read as "the last 1 row", and the row with the smallest delay was answered
    made = planned("Compare the mean departure delay of the first carrier (UA) with the last one (EV).")
    assert made is None or made.unaccounted or sorted(data.execute(made.sql).fetchall()) == [("EV", 40.0),
                                                                                             ("UA", 10.0)]
