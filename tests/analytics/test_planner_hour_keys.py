"""Groups by the hour of a column of HHMM times ("by departure hour", "per hour of departure"),
and a joined table's noun after "and" in a list of keys ("by depot and operator"): the column joining its rows
is a key too, never a word passed over. On a small bus schema of its own."""

from __future__ import annotations

from collections.abc import Iterator

import duckdb
import pytest

from convener.analytics.planner import Plan, Relationship, plan_question
from convener.analytics.shapes import ColumnInfo, TableInfo
from tests.analytics.small_tables import database

TRIPS = TableInfo("trips", (
    ColumnInfo("trip_id", "INTEGER", "Identifier of the trip"),
    ColumnInfo("depot", "STRING", "Depot the bus left from"),
    ColumnInfo("operator_code", "STRING", "Code of the operator; the operators table gives its name"),
    ColumnInfo("departure", "INTEGER", "Scheduled departure time, local, as HHMM (e.g. 0930)"),
    ColumnInfo("delay", "INTEGER", "Minutes the bus left after its scheduled time"),
), description="Bus trips of 2024: one row per trip.")
OPERATORS = TableInfo("operators", (ColumnInfo("operator_code", "STRING", "Operator code"),
                                    ColumnInfo("name", "STRING", "Operator name")),
                      description="Bus operators: one row per operator.")
BY_OPERATOR = (Relationship("trips", ("operator_code",), "operators", ("operator_code",)),)
VALUES = {("trips", "depot"): ["North", "South"], ("trips", "operator_code"): ["AB", "CD"],
          ("operators", "operator_code"): ["AB", "CD"], ("operators", "name"): ["Abbey Buses", "City Direct"]}


@pytest.fixture(scope="module")
def data() -> Iterator[duckdb.DuckDBPyConnection]:
    yield from database(
        "CREATE TABLE trips (trip_id INTEGER, depot VARCHAR, operator_code VARCHAR, departure INTEGER, "
        "delay INTEGER)",
        "INSERT INTO trips VALUES (1, 'North', 'AB', 615, 2), (2, 'North', 'CD', 659, 4), "
        "(3, 'South', 'AB', 700, 10), (4, 'South', 'AB', 1745, 0), (5, 'North', 'AB', 1710, 6)",
        "CREATE TABLE operators (operator_code VARCHAR, name VARCHAR)",
        "INSERT INTO operators VALUES ('AB', 'Abbey Buses'), ('CD', 'City Direct')")


def plan(question: str) -> Plan:
    return plan_question(question, [TRIPS], values_of=lambda t, c: VALUES.get((t, c), []),
                         relationships=BY_OPERATOR, related=[OPERATORS])


def answer(data: duckdb.DuckDBPyConnection, question: str) -> list[tuple[object, ...]]:
    made = plan(question)
    assert not made.unaccounted, made
    return data.execute(made.sql).fetchall()


@pytest.mark.parametrize("question", [
    "Number of trips by departure hour.",
    "How many trips per hour of departure?",
    "Count the trips for each departure hour.",
    # ("their" had been read as the start of columns to show, and "(0-23)" as what the departure words gloss)
    "Break down the trips by the hour of their scheduled departure (0-23).",
])
def test_a_column_of_hhmm_times_is_grouped_by_its_hour(data: duckdb.DuckDBPyConnection, question: str) -> None:
    assert answer(data, question) == [(6, 2), (7, 1), (17, 2)]


def test_a_measure_by_hour(data: duckdb.DuckDBPyConnection) -> None:
    assert answer(data, "Average delay by hour of departure.") == [(6, 3.0), (7, 10.0), (17, 3.0)]


def test_hours_render_on_sqlite_too() -> None:
    made = plan_question("Number of trips by departure hour.", [TRIPS], dialect="sqlite",
                         values_of=lambda t, c: VALUES.get((t, c), []))
    assert "CAST" in made.sql and "100" in made.sql, made.sql


def test_a_joined_tables_noun_after_and_is_a_key_too(data: duckdb.DuckDBPyConnection) -> None:
    rows = answer(data, "Number of trips by depot and operator.")
    assert sorted((depot, code, count) for depot, code, *_, count in rows) == [
        ("North", "AB", 2), ("North", "CD", 1), ("South", "AB", 2)]


def test_a_participle_abbreviated_in_a_name_of_several_words_names_that_column() -> None:
    # "scheduled departure time" is sched_dep_time (sched, dep, time), not dep_time with "scheduled" dropped
    timed = TableInfo("runs", (ColumnInfo("sched_dep_time", "INTEGER", "Scheduled departure time, as HHMM"),
                               ColumnInfo("dep_time", "INTEGER", "Actual departure time, as HHMM")),
                      description="Bus runs: one row per run.")
    assert '"sched_dep_time"' in plan_question("Average scheduled departure time of the runs", [timed]).sql
    assert '"dep_time"' in plan_question("Average departure time of the runs", [timed]).sql
    # alone, a participle is no abbreviation: "departed" does not name dep_time
    assert '"dep_time"' not in plan_question("How many runs departed?", [timed]).sql


@pytest.mark.parametrize("question", [
    "top 2 departure hours by number of trips",
    "which departure hours had the most trips",
])
def test_hours_of_hhmm_times_ranked(data: duckdb.DuckDBPyConnection, question: str) -> None:
    assert sorted(answer(data, question)) == [(6, 2), (17, 2)]  # (the two hours tie)


def test_a_column_said_by_its_description_before_a_range_of_hours_is_grouped_by_its_hour() -> None:
    # ("scheduled departure" names the column by what its description says it is; "(0-23)" after it had hidden
    # that, leaving "departure" alone, which several columns could be)
    table = TableInfo("trips", (ColumnInfo("planned", "INTEGER", "Scheduled departure time, local, as HHMM"),
                                ColumnInfo("left_at", "INTEGER", "Actual departure time, local, as HHMM")),
                      description="One row per trip.")
    made = plan_question("Break down the trips by the hour of their scheduled departure (0-23).", [table])
    assert not made.unaccounted and '"planned" // 100' in made.sql, made.sql
