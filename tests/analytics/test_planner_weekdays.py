"""The day of the week, on a table of sales by date: names of days as conditions ("on a Saturday"), "for each
day of the week" and "which day of the week" as a bucket of named days, on DuckDB, SQLite and PostgreSQL."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import duckdb
import pytest

from convener.analytics.planner import NoPlan, plan_question
from convener.analytics.shapes import ColumnInfo, TableInfo
from tests.analytics.small_tables import database

SALES = TableInfo("sales", (ColumnInfo("sale_date", "DATE"), ColumnInfo("region", "STRING"),
                            ColumnInfo("revenue", "FLOAT")), description="Sales: one row per sale.")
WEEK_ORDER = [("Monday", 1, 5.0), ("Saturday", 6, 40.0), ("Sunday", 7, 20.0)]
"""Total revenue by day of the week, with each day's ISO number, in the week's order."""
ROWS = [("2024-06-01", "north", 10.0), ("2024-06-02", "north", 20.0), ("2024-06-08", "south", 30.0),
        ("2024-06-03", "south", 5.0)]  # Saturday, Sunday, Saturday, Monday


@pytest.fixture(scope="module")
def data() -> Iterator[duckdb.DuckDBPyConnection]:
    yield from database("CREATE TABLE sales (sale_date DATE, region VARCHAR, revenue DOUBLE)",
                        "INSERT INTO sales VALUES " + ", ".join(f"('{d}', '{r}', {v})" for d, r, v in ROWS))


def test_a_day_named_is_a_condition_on_the_date(data: duckdb.DuckDBPyConnection) -> None:
    made = plan_question("How many sales were made on a Saturday?", [SALES])
    assert not made.unaccounted
    assert data.execute(made.sql).fetchall() == [(2,)]
    both = plan_question("total revenue on Saturdays or Sundays", [SALES])
    assert data.execute(both.sql).fetchall() == [(60.0,)]


def test_days_compared_are_each_their_own_row(data: duckdb.DuckDBPyConnection) -> None:
    made = plan_question("Compare the number of sales on Saturdays with the number on Sundays.", [SALES])
    assert data.execute(made.sql).fetchall() == [("Saturday", 6, 2), ("Sunday", 7, 1)]


def test_each_day_of_the_week_is_a_bucket_of_named_days_in_the_weeks_order(
        data: duckdb.DuckDBPyConnection) -> None:
    made = plan_question("What's the total revenue for each day of the week?", [SALES])
    assert not made.unaccounted
    # beside each name its ISO 8601 number, which orders the days from Monday (not by name)
    assert data.execute(made.sql).fetchall() == WEEK_ORDER
    top = plan_question("Which day of the week had the most sales?", [SALES])
    assert data.execute(top.sql).fetchall()[0][0] == "Saturday"


@pytest.mark.parametrize("question", ["Break down the total revenue by day of the week (use the weekday name).",
                                      "total revenue by day of the week, with the day name"])
def test_the_days_name_asked_beside_the_bucket_is_the_bucket(data: duckdb.DuckDBPyConnection, question: str) -> None:
    made = plan_question(question, [SALES])
    assert not made.unaccounted, made  # (no condition on weekdays either: every day is shown)
    assert data.execute(made.sql).fetchall() == WEEK_ORDER, made.sql


def test_the_day_of_the_week_on_sqlite_and_postgresql() -> None:
    connection = sqlite3.connect(":memory:")
    connection.execute("CREATE TABLE sales (sale_date TEXT, region TEXT, revenue REAL)")
    connection.executemany("INSERT INTO sales VALUES (?, ?, ?)", ROWS)
    made = plan_question("total revenue by day of week", [SALES], dialect="sqlite")
    assert connection.execute(made.sql).fetchall() == [("Monday", 1, 5.0), ("Saturday", 6, 40.0),
                                                       ("Sunday", 7, 20.0)]
    assert connection.execute(plan_question("How many sales on a Sunday?", [SALES],
                                            dialect="sqlite").sql).fetchall() == [(1,)]
    connection.close()
    assert "TO_CHAR" in plan_question("How many sales on a Sunday?", [SALES], dialect="postgres").sql
    postgres = plan_question("total revenue by day of week", [SALES], dialect="postgres").sql
    assert "EXTRACT(ISODOW FROM" in postgres


def test_a_day_named_without_a_date_column_is_not_answered() -> None:
    undated = TableInfo("sales", (ColumnInfo("region", "STRING"), ColumnInfo("revenue", "FLOAT")))
    with pytest.raises(NoPlan):
        plan_question("How many sales were made on a Saturday?", [undated])


def test_weeks_starting_on_monday_say_how_weeks_are_cut_not_which_days_count(
        data: duckdb.DuckDBPyConnection) -> None:
    made = plan_question("number of sales per week of June 2024 (weeks starting on Monday)", [SALES])
    assert not made.unaccounted and "'Monday'" not in made.sql
    assert [row[1] for row in data.execute(made.sql).fetchall()] == [2, 2]  # Sat 1 and Sun 2; Mon 3 and Sat 8
    with pytest.raises(NoPlan):
        plan_question("number of sales per week, weeks starting on Sunday", [SALES])


def test_weeks_starting_monday_without_on_say_how_weeks_are_cut(data: duckdb.DuckDBPyConnection) -> None:
    made = plan_question("Weekly number of sales in June 2024 (weeks starting Monday)", [SALES])
    assert not made.unaccounted and "'Monday'" not in made.sql
    assert [row[1] for row in data.execute(made.sql).fetchall()] == [2, 2]


@pytest.mark.parametrize("question", ["Weekly number of sales in June 2024 (Monday-start weeks)",
                                      "Which week (Monday-start) had the most sales in June 2024?"])
def test_monday_start_said_after_the_day_says_how_weeks_are_cut(data: duckdb.DuckDBPyConnection,
                                                                 question: str) -> None:
    made = plan_question(question, [SALES])
    assert not made.unaccounted and "'Monday'" not in made.sql, made
    assert [row[1] for row in data.execute(made.sql).fetchall()] == [2, 2]


@pytest.mark.parametrize(("question", "expected"), [
    ("How many sales were there Monday through Friday?", [(1,)]),  # Monday the 3rd only
    ("How many sales on Saturday to Sunday?", [(3,)]),
    ("Sales on each day of the week, Monday through Sunday", [("Monday", 1, 1), ("Saturday", 6, 2),
                                                               ("Sunday", 7, 1)]),
])
def test_a_range_of_days_is_every_day_from_the_one_to_the_other(data: duckdb.DuckDBPyConnection, question: str,
                                                                expected: list[tuple[object, ...]]) -> None:
    assert sorted(data.execute(plan_question(question, [SALES]).sql).fetchall()) == expected


@pytest.mark.parametrize(("question", "expected"), [
    ("How many sales were made on weekends?", [(3,)]),
    ("total revenue on weekdays", [(5.0,)]),
    ("How many weekend sales were there?", [(3,)]),
    ("How many sales were made on weekends (Sat+Sun)?", [(3,)]),  # the days spelt out in parentheses
    ("total revenue on weekdays (Mon-Fri)", [(5.0,)]),
])
def test_weekends_and_weekdays_are_their_days(data: duckdb.DuckDBPyConnection, question: str,
                                              expected: list[tuple[object, ...]]) -> None:
    made = plan_question(question, [SALES])
    assert not made.unaccounted
    assert data.execute(made.sql).fetchall() == expected


def test_weekends_set_against_weekdays_are_each_a_figure_not_intersected(data: duckdb.DuckDBPyConnection) -> None:
    made = plan_question("Weekends vs weekdays: how does the total revenue compare?", [SALES])
    assert data.execute(made.sql).fetchall() == [(60.0, 5.0)], made.sql


def test_each_day_of_the_week_starting_monday_is_the_weeks_order(data: duckdb.DuckDBPyConnection) -> None:
    made = plan_question("What's the total revenue for each day of the week, starting Monday?", [SALES])
    assert data.execute(made.sql).fetchall() == WEEK_ORDER
    with pytest.raises(NoPlan):
        plan_question("What's the total revenue for each day of the week, starting Sunday?", [SALES])
