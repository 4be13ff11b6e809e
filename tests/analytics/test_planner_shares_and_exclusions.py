"""Shares: of a column's sum ("what percent of the total miles were sailed out of Harbourton"), compared between
values ("is the scrapped rate higher at HAR or at NTH?"), split by a participle ("of Northwind trips leaving
more than 15 min late"); groups that have one value of a column but not another ("served from Harbourton but
not from Northwick"); superlatives of time that are no column's word ("the latest trip" with a column called
lat); units written short after a number ("15 min"); the groups a comparison names ("compare the three operators
on miles"). On a small ferry schema of its own.
"""

from __future__ import annotations

from collections.abc import Iterator

import duckdb
import pytest

from convener.analytics.planner import NoPlan, Relationship
from convener.analytics.shapes import ColumnInfo, TableInfo
from tests.analytics.small_tables import PORT_ROWS, PORT_VALUES, PORTS, answerer, database, joined_planner

TRIPS = TableInfo("trips", (
    ColumnInfo("trip_id", "INTEGER", "Identifier of the trip"),
    ColumnInfo("operator", "STRING", "Company that ran the trip"),
    ColumnInfo("start_port", "STRING", "Port the trip left from"),
    ColumnInfo("end_port", "STRING", "Port the trip arrived at"),
    ColumnInfo("trip_date", "DATE", "Date of the trip"),
    ColumnInfo("miles", "INTEGER", "Distance sailed, in miles"),
    ColumnInfo("lat", "DOUBLE", "Latitude of the trip's farthest point"),
    ColumnInfo("delay", "INTEGER", "Minutes the trip left after its scheduled time"),
    ColumnInfo("scrapped", "BOOLEAN", "Whether the trip was scrapped"),
), description="Ferry trips between the islands' ports in 2024: one row per trip.")
BY_PORT = (Relationship("trips", ("start_port",), "ports", ("code",)),)
VALUES = {("trips", "operator"): ["Northwind", "Islander", "Gull Line"],
          ("trips", "start_port"): ["HAR", "NTH"], ("trips", "end_port"): ["SKY", "MOR", "HAR", "NTH"],
          **PORT_VALUES}


@pytest.fixture(scope="module")
def data() -> Iterator[duckdb.DuckDBPyConnection]:
    yield from database(
        "CREATE TABLE trips (trip_id INTEGER, operator VARCHAR, start_port VARCHAR, end_port VARCHAR, "
        "trip_date DATE, miles INTEGER, lat DOUBLE, delay INTEGER, scrapped BOOLEAN)",
        "INSERT INTO trips VALUES "
        "(1, 'Northwind', 'HAR', 'SKY', DATE '2024-01-05', 10, 57.1, 5, false), "
        "(2, 'Northwind', 'NTH', 'SKY', DATE '2024-01-20', 30, 58.9, 30, true), "
        "(3, 'Islander', 'NTH', 'MOR', DATE '2024-02-02', 20, 56.0, 0, false), "
        "(4, 'Islander', 'HAR', 'NTH', DATE '2024-02-14', 15, 57.5, 10, false), "
        "(5, 'Gull Line', 'HAR', 'MOR', DATE '2024-03-20', 25, 56.2, 90, true)",
        *PORT_ROWS)


plan = joined_planner([TRIPS], [PORTS], BY_PORT, VALUES)


answer = answerer(plan)


@pytest.mark.parametrize("question", [
    "What percent of the total miles were sailed by trips out of HAR?",
    "What share of total miles was sailed by trips out of Harbourton?",
])
def test_a_share_of_a_columns_sum(data: duckdb.DuckDBPyConnection, question: str) -> None:
    assert answer(data, question) == [(pytest.approx(100.0 * 50 / 100),)]


def test_each_groups_share_of_a_columns_sum(data: duckdb.DuckDBPyConnection) -> None:
    assert dict(answer(data, "What share of the total miles did each operator sail?")) == {
        "Northwind": pytest.approx(40.0), "Islander": pytest.approx(35.0), "Gull Line": pytest.approx(25.0)}


def test_a_share_of_rows_tested_on_a_column_stays_a_share_of_rows(data: duckdb.DuckDBPyConnection) -> None:
    # the miles are the condition's, not a sum to share
    assert answer(data, "What percent of trips were over 20 miles?") == [(pytest.approx(40.0),)]


def test_a_share_of_an_average_is_declined() -> None:
    with pytest.raises(NoPlan):
        plan("What percent of the average delay came from trips out of HAR?")


@pytest.mark.parametrize("question", [
    "Which end ports are served from HAR but not from NTH?",
    "Which end ports are served from Harbourton but not from Northwick?",
    # the values listed without "which": they had been read as rows both from HAR and not from NTH
    "List the end ports served from HAR but not from NTH",
    "end ports served from HAR but not from NTH",
    "Of the end ports, which ones are served from HAR but never from NTH?",  # (the values named first)
])
def test_groups_with_one_value_but_not_another(data: duckdb.DuckDBPyConnection, question: str) -> None:
    # SKY and MOR are reached from both; NTH from Harbourton alone
    assert [row[0] for row in answer(data, question)] == ["NTH"]


def test_but_not_on_the_rows_themselves_stays_a_condition_on_rows(data: duckdb.DuckDBPyConnection) -> None:
    # no value of the same column said before it: the rows' own condition
    assert {row[0] for row in answer(data, "Which operators had trips to SKY but not from Northwick?")} == {"Northwind"}


@pytest.mark.parametrize(("question", "expected"), [
    ("When was the latest trip from HAR to MOR?", "2024-03-20"),
    ("When was the earliest trip to SKY?", "2024-01-05"),
])
def test_a_superlative_of_time_is_no_columns_word(data: duckdb.DuckDBPyConnection, question: str,
                                                   expected: str) -> None:
    made = plan(question)
    assert '"lat"' not in made.sql
    assert [str(row[0]) for row in answer(data, question)] == [expected]


@pytest.mark.parametrize("question", [
    "Is the scrapped rate higher at HAR or at NTH?",
    "Which has the higher scrapped rate, HAR or NTH?",
    "Is the scrapped rate higher at HAR or at NTH? Give the percentage for each.",
    # set against each other by "than": each share too (it had been declined)
    "Is the scrapped rate higher at HAR than at NTH? Show both percentages",
])
def test_shares_compared_between_values_are_each_values_share(data: duckdb.DuckDBPyConnection, question: str) -> None:
    assert dict(answer(data, question)) == {"HAR": pytest.approx(100 / 3), "NTH": pytest.approx(50.0)}


@pytest.mark.parametrize(("question", "expected"), [
    # (each share alone had been answered: the figures, not whether one is lower)
    ("Is HAR's scrapped rate lower than NTH's?", (True, pytest.approx(100 / 3), pytest.approx(50.0))),
    ("Is the scrapped rate higher at HAR than at NTH?", (False, pytest.approx(100 / 3), pytest.approx(50.0))),
    ("By how much is the scrapped rate at NTH higher than at HAR?", (pytest.approx(50.0 - 100 / 3),)),
])
def test_shares_set_against_each_other_by_than_answer_what_is_asked(data: duckdb.DuckDBPyConnection, question: str,
                                                                    expected: tuple[object, ...]) -> None:
    assert answer(data, question) == [expected]


@pytest.mark.parametrize(("question", "expected"), [
    ("What proportion of the Islander trips head to MOR? As a percentage please.", 50.0),
    ("What percentage of Northwind trips sail to SKY?", 100.0),
])
def test_a_share_of_the_rows_a_value_names_split_by_a_verb_of_its_own(data: duckdb.DuckDBPyConnection,
                                                                     question: str, expected: float) -> None:
    # of the Islander trips (3 and 4), the one to MOR: not the share of all trips that are both (1 of 5)
    assert answer(data, question) == [(pytest.approx(expected),)]


def test_one_share_of_values_said_as_alternatives(data: duckdb.DuckDBPyConnection) -> None:
    # no comparative: the share of the trips to either
    assert answer(data, "What percentage of trips went to SKY or MOR?") == [(pytest.approx(80.0),)]


@pytest.mark.parametrize("question", [
    "percent of Northwind trips leaving more than 15 min late",
    "what percent of Northwind trips left more than 15 min late? percent please",
])
def test_a_share_split_by_a_participle_or_verb(data: duckdb.DuckDBPyConnection, question: str) -> None:
    # of Northwind's two trips, one left more than 15 minutes late
    assert answer(data, question) == [(pytest.approx(50.0),)]


@pytest.mark.parametrize(("question", "expected"), [
    ("How many trips left more than 15 min late?", 2),
    ("How many trips left more than 1 hr late?", 1),
])
def test_a_unit_written_short_after_a_number(data: duckdb.DuckDBPyConnection, question: str, expected: int) -> None:
    assert answer(data, question) == [(expected,)]


def test_a_value_of_one_end_said_of_the_other_is_declined(data: duckdb.DuckDBPyConnection) -> None:
    # SKY is only ever where trips arrive: "from SKY" asks of trips no row records, not of those going there
    with pytest.raises(NoPlan, match="SKY"):
        plan("How many trips left from SKY?")
    assert answer(data, "How many trips went to SKY?") == [(2,)]


def test_a_value_of_both_ends_is_read_as_the_end_said(data: duckdb.DuckDBPyConnection) -> None:
    # NTH is where trips 2 and 3 left from and where trip 4 arrived
    assert answer(data, "How many trips went to NTH?") == [(1,)]
    assert answer(data, "How many trips left from NTH?") == [(2,)]


@pytest.mark.parametrize("question", ["Compare the three operators on average miles.",
                                      "How do the 3 operators compare on average miles?"])
def test_the_text_column_a_comparison_names_is_its_groups(data: duckdb.DuckDBPyConnection, question: str) -> None:
    # each operator's figure, not the average over every trip with the operators left unread
    assert dict(answer(data, question)) == {"Northwind": pytest.approx(20.0), "Islander": pytest.approx(17.5),
                                            "Gull Line": pytest.approx(25.0)}



@pytest.mark.parametrize(("question", "expected"), [
    # of the four trips with a delay of 5 minutes or more, two were scrapped; of all five, two
    ("What percentage of the trips with a delay of at least 5 minutes were scrapped?", [(50.0,)]),
    ("What percentage of the trips with a delay of at least 5 minutes?", [(80.0,)]),
])
def test_rows_said_with_with_before_a_verb_are_what_the_share_is_of(data: duckdb.DuckDBPyConnection,
                                                                     question: str,
                                                                     expected: list[tuple[object, ...]]) -> None:
    assert answer(data, question) == expected
