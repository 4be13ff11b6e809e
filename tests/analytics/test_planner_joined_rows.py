"""Rows of a joined table named by their noun in a question about the rows that refer to them: "which operators
had trips to Skye?", "how many operators had trips out of Harbourton?" asked where the operators' noun picks
the operators' table, whose rows hold none of the places said: the trips are queried, the operators told apart
by the trips' key to them and shown with their names. On a small ferry schema of its own."""

from __future__ import annotations

from collections.abc import Iterator

import duckdb
import pytest

from convener.analytics.planner import NoPlan, Relationship, plan_question
from convener.analytics.shapes import ColumnInfo, TableInfo
from tests.analytics.small_tables import PORT_ROWS, PORT_VALUES, PORTS, answerer, database, joined_planner

TRIPS = TableInfo("trips", (
    ColumnInfo("trip_id", "INTEGER", "Identifier of the trip"),
    ColumnInfo("operator_code", "STRING", "Code of the operator that ran the trip"),
    ColumnInfo("start_port", "STRING", "Port the trip left from"),
    ColumnInfo("scrapped", "BOOLEAN", "Whether the trip was scrapped"),
), description="Ferry trips from the islands' ports in 2024: one row per trip.")
OPERATORS = TableInfo("operators", (ColumnInfo("operator_code", "STRING", "Operator code"),
                                    ColumnInfo("name", "STRING", "Full name of the operator"),
                                    ColumnInfo("boats", "INTEGER", "Number of boats of the operator")),
                      description="Ferry operators: one row per operator.")
RELATIONSHIPS = (Relationship("trips", ("start_port",), "ports", ("code",)),
                 Relationship("trips", ("operator_code",), "operators", ("operator_code",)))
VALUES = {("trips", "operator_code"): ["NW", "IS", "GL"], ("trips", "start_port"): ["HAR", "NTH"],
          ("operators", "operator_code"): ["NW", "IS", "GL", "OLD"],
          ("operators", "name"): ["Northwind Ferries", "Islander Lines", "Gull Line", "Old Steam Co"],
          **PORT_VALUES}


@pytest.fixture(scope="module")
def data() -> Iterator[duckdb.DuckDBPyConnection]:
    yield from database(
        "CREATE TABLE trips (trip_id INTEGER, operator_code VARCHAR, start_port VARCHAR, scrapped BOOLEAN)",
        "INSERT INTO trips VALUES (1, 'NW', 'HAR', false), (2, 'NW', 'NTH', true), (3, 'IS', 'NTH', false), "
        "(4, 'IS', 'NTH', false), (5, 'GL', 'HAR', true)",
        "CREATE TABLE operators (operator_code VARCHAR, name VARCHAR, boats INTEGER)",
        "INSERT INTO operators VALUES ('NW', 'Northwind Ferries', 3), ('IS', 'Islander Lines', 2), "
        "('GL', 'Gull Line', 2), ('OLD', 'Old Steam Co', 1)",
        *PORT_ROWS)


# As the pipeline asks a question whose nouns pick the operators: those alone asked about, every table joinable.
plan = joined_planner([OPERATORS], [TRIPS, OPERATORS, PORTS], RELATIONSHIPS, VALUES)


answer = answerer(plan)


@pytest.mark.parametrize("question", [
    "How many operators had trips out of Harbourton?",
    "How many operators had trips out of HAR?",
])
def test_joined_rows_counted_by_the_key_to_them(data: duckdb.DuckDBPyConnection, question: str) -> None:
    assert answer(data, question) == [(2,)]


@pytest.mark.parametrize("question", [
    "Which operators had trips out of Harbourton?",
    "Which operators had trips out of Harbourton? Full names please.",
])
def test_joined_rows_listed_by_key_and_name(data: duckdb.DuckDBPyConnection, question: str) -> None:
    assert set(answer(data, question)) == {("NW", "Northwind Ferries"), ("GL", "Gull Line")}


@pytest.mark.parametrize("question", [
    "Which operators had no scrapped trips?",
    "Which operators didn't have a single scrapped trip?",
])
def test_joined_rows_as_groups_that_lack_rows(data: duckdb.DuckDBPyConnection, question: str) -> None:
    assert [row[:2] for row in answer(data, question)] == [("IS", "Islander Lines")]


def test_joined_tables_own_rows_are_not_read_as_the_rows_referring_to_them() -> None:
    # Old Steam Co ran no trip: only the operators' table can say it had none from Harbourton
    with pytest.raises(NoPlan):
        plan("Which operators in the operators table had no trips out of Harbourton?")


def test_the_joined_tables_own_count_stays_its_own(data: duckdb.DuckDBPyConnection) -> None:
    assert answer(data, "How many operators are there?") == [(4,)]


RUNS = TableInfo("runs", (ColumnInfo("run_id", "INTEGER", "Identifier of the run"),
                          ColumnInfo("firm", "STRING", "Code of the company that ran it")),
                 description="Ferry runs: one row per run.")


@pytest.mark.parametrize(("question", "expected"), [
    ("top 1 operators by run count", [("IS", "Islander Lines", 2), ("NW", "Northwind Ferries", 2)]),
    ("bottom 1 operators by number of runs", [("GL", "Gull Line", 1)]),
])
def test_joined_rows_ranked_by_the_rows_referring_to_them(data: duckdb.DuckDBPyConnection, question: str,
                                                           expected: list[tuple[str, str, int]]) -> None:
    # (no column of the runs is named after the operators: only the relationship says the firm is one)
    data.execute("CREATE OR REPLACE VIEW runs AS SELECT trip_id AS run_id, operator_code AS firm FROM trips")
    made = plan_question(question, [RUNS], values_of=lambda t, c: VALUES.get((t, c), []),
                         relationships=(Relationship("runs", ("firm",), "operators", ("operator_code",)),),
                         related=[OPERATORS])
    assert sorted(data.execute(made.sql).fetchall()) == expected


def test_a_joined_columns_own_count_is_no_count_of_joined_rows(data: duckdb.DuckDBPyConnection) -> None:
    # "boat count" names the operators' boats column: averaged over the trips, not their operators counted
    made = joined_planner([TRIPS], [OPERATORS, PORTS], RELATIONSHIPS, VALUES)(
        "Across the trips from HAR, what's the average boat count of the operator (counting each trip)?")
    assert data.execute(made.sql).fetchall() == [(2.5,)]
