""""When did Islander Operators last appear in the data?": asked when, of a table with no dates (the operators,
whose name is said), the rows that join it and have dates (the sailings) are queried; a table with a year of its
own keeps its question ("when was the newest ferry built?"). Periods asked of the year ("the busiest month of the
year") are the dated rows' too, not the ferries' years. On a small ferry schema of its own."""

from __future__ import annotations

from collections.abc import Iterator

import duckdb
import pytest

from convener.analytics.planner import Relationship, plan_question
from convener.analytics.shapes import ColumnInfo, TableInfo
from tests.analytics.small_tables import database

SAILINGS = TableInfo("sailings", (ColumnInfo("sailing_date", "DATE", "Date of the sailing"),
                                  ColumnInfo("line", "STRING", "Operator code; the operators table gives its name"),
                                  ColumnInfo("hull", "STRING", "Hull number of the ferry that sailed")),
                     description="Ferry sailings: one row per sailing.")
OPERATORS = TableInfo("operators", (ColumnInfo("line", "STRING", "Operator code"),
                                    ColumnInfo("name", "STRING", "Full name of the operator")),
                      description="Ferry operators: one row per operator.")
FERRIES = TableInfo("ferries", (ColumnInfo("hull", "STRING", "Hull number of the ferry"),
                                ColumnInfo("year", "INTEGER", "Year the ferry was built"),
                                ColumnInfo("builder", "STRING", "Shipyard that built it")),
                    description="Ferries: one row per ferry.")
RELATIONSHIPS = (Relationship("sailings", ("line",), "operators", ("line",)),
                 Relationship("sailings", ("hull",), "ferries", ("hull",)))
VALUES = {("sailings", "line"): ["IS", "NW"], ("operators", "line"): ["IS", "NW"],
          ("operators", "name"): ["Islander Operators", "Northwind Ferries"], ("sailings", "hull"): ["A1", "A2"],
          ("ferries", "hull"): ["A1", "A2"], ("ferries", "builder"): ["Harland", "Kvaerner"]}


@pytest.fixture(scope="module")
def data() -> Iterator[duckdb.DuckDBPyConnection]:
    yield from database(
        "CREATE TABLE sailings (sailing_date DATE, line VARCHAR, hull VARCHAR)",
        "INSERT INTO sailings VALUES ('2024-03-01', 'IS', 'A1'), ('2024-05-09', 'IS', 'A2'), "
        "('2024-06-30', 'NW', 'A1'), ('2024-05-20', 'NW', 'A2')",
        "CREATE TABLE operators (line VARCHAR, name VARCHAR)",
        "INSERT INTO operators VALUES ('IS', 'Islander Operators'), ('NW', 'Northwind Ferries')",
        "CREATE TABLE ferries (hull VARCHAR, year INTEGER, builder VARCHAR)",
        "INSERT INTO ferries VALUES ('A1', 1998, 'Harland'), ('A2', 2011, 'Kvaerner')")


def answer(data: duckdb.DuckDBPyConnection, question: str) -> list[tuple[object, ...]]:
    made = plan_question(question, [SAILINGS, OPERATORS, FERRIES], values_of=lambda t, c: VALUES.get((t, c), []),
                         relationships=RELATIONSHIPS)
    assert not made.unaccounted, made
    return [tuple(str(value) for value in row) for row in data.execute(made.sql).fetchall()]


@pytest.mark.parametrize(("question", "expected"), [
    ("When did Islander Operators last appear in the data?", "2024-05-09"),
    ("When did Islander Operators first show up in the data?", "2024-03-01"),
])
def test_when_asked_of_a_table_without_dates_is_asked_of_the_rows_that_have_them(
        data: duckdb.DuckDBPyConnection, question: str, expected: str) -> None:
    # (the operators, which have no dates, had been queried and the question declined)
    assert answer(data, question) == [(expected,)]


def test_a_table_with_a_year_of_its_own_keeps_the_question(data: duckdb.DuckDBPyConnection) -> None:
    assert answer(data, "When was the newest Kvaerner ferry built?") == [("2011",)]


@pytest.mark.parametrize("question", ["the busiest month of the year",
                                      "What was the single busiest month of the year?",
                                      "What was the busiest single month of the year?"])
def test_periods_of_the_year_are_asked_of_the_rows_that_have_dates(data: duckdb.DuckDBPyConnection,
                                                                  question: str) -> None:
    # ("year" had picked the ferries, and the most frequent year of building was answered)
    assert answer(data, question) == [("2024-05-01 00:00:00", "2")]


def test_a_column_after_the_list_that_is_not_shown_is_said(data: duckdb.DuckDBPyConnection) -> None:
    # ("build year" was no column of the list: the ferries' year was read alone and passed over, unshown)
    made = plan_question("List the sailings of ferries built before 2000: sailing date, hull and build year.",
                         [SAILINGS, OPERATORS, FERRIES], values_of=lambda t, c: VALUES.get((t, c), []),
                         relationships=RELATIONSHIPS)
    assert '"year"' in made.sql.split(" FROM ")[0] or "year" in made.unaccounted, made


def test_when_the_rows_listed_happened_is_their_date(data: duckdb.DuckDBPyConnection) -> None:
    # (the ferry's sailings had been listed without their dates)
    assert answer(data, "When did the sailings of hull A2 leave, and what were their operator codes?") in (
        [("2024-05-09", "IS"), ("2024-05-20", "NW")], [("2024-05-09", "IS", "A2"), ("2024-05-20", "NW", "A2")])
