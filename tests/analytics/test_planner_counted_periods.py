"""A time series of a condition counts it in every period of the rows asked about ("monthly cancellations":
a month without one counts 0, not missing from the series); groups of other keys keep only those that have
some, as a WHERE makes them, unless the question counts among each group's own rows ("how many of its loans"). On a small schema of its own, in DuckDB and SQLite."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import duckdb
import pytest

from convener.analytics.planner import Plan, Term, plan_question
from convener.analytics.shapes import ColumnInfo, TableInfo
from tests.analytics.small_tables import database

LOANS = TableInfo("loans", (
    ColumnInfo("loan_id", "INTEGER", "Identifier of the loan"), ColumnInfo("branch", "STRING", "Lending branch"),
    ColumnInfo("loan_date", "DATE", "Date the loan was made"), ColumnInfo("amount", "INTEGER", "Amount lent"),
    ColumnInfo("defaulted", "BOOLEAN", "Whether the loan defaulted")), description="One row per loan.")
TERMS = (Term("large loan", "A loan of more than 1,000: amount > 1000", labels=("large loans",)),
         Term("huge loan", "A loan of more than 2,000: amount > 2000", labels=("huge loans",)))
ROWS = ("(1, 'East', '2024-01-10', 500, true), (2, 'East', '2024-02-11', 1500, false), "
        "(3, 'West', '2024-03-12', 700, true), (4, 'West', '2024-03-13', 2500, false), "
        "(5, 'East', '2024-03-14', 300, false)")


@pytest.fixture(scope="module")
def data() -> Iterator[duckdb.DuckDBPyConnection]:
    yield from database("CREATE TABLE loans (loan_id INTEGER, branch VARCHAR, loan_date DATE, amount INTEGER, "
                        "defaulted BOOLEAN)", f"INSERT INTO loans VALUES {ROWS}")


def plan(question: str, dialect: str = "duckdb") -> Plan:
    return plan_question(question, [LOANS], TERMS, dialect=dialect,
                         values_of=lambda _, column: ["East", "West"] if column == "branch" else [])


@pytest.mark.parametrize(("question", "expected"), [
    ("Monthly number of defaulted loans", [1, 0, 1]),
    ("How many loans defaulted in each month?", [1, 0, 1]),
    ("Monthly defaulted loans of the East branch", [1, 0, 0]),
    ("large loans by month", [0, 1, 1]),
])
def test_a_time_series_of_a_condition_counts_it_in_every_period(data: duckdb.DuckDBPyConnection, question: str,
                                                                 expected: list[int]) -> None:
    made = plan(question)
    assert not made.unaccounted, made
    assert [row[-1] for row in data.execute(made.sql).fetchall()] == expected, made.sql
    assert "counting the rows where" in made.explanation


def test_the_same_counts_on_sqlite() -> None:
    connection = sqlite3.connect(":memory:")
    connection.execute("CREATE TABLE loans (loan_id INTEGER, branch TEXT, loan_date TEXT, amount INTEGER, "
                       "defaulted BOOLEAN)")
    connection.execute(f"INSERT INTO loans VALUES {ROWS}")
    made = plan("Monthly number of defaulted loans", "sqlite")
    assert [row[-1] for row in connection.execute(made.sql).fetchall()] == [1, 0, 1], made.sql


def test_groups_of_other_keys_keep_those_that_have_some(data: duckdb.DuckDBPyConnection) -> None:
    made = plan("Number of defaulted loans per branch")
    assert "WHERE" in made.sql and data.execute(made.sql).fetchall() == [("East", 1), ("West", 1)]
    made = plan("How many large loans did each branch make?")
    assert data.execute(made.sql).fetchall() == [("East", 1), ("West", 1)]


@pytest.mark.parametrize("question", [
    "For every branch, how many of its loans were huge loans?",
    "For each branch, how many of their loans were huge loans?",
    # a count of none said to be shown
    "For every branch, how many huge loans did it make (including zero)?",
    "How many huge loans did each branch make (including branches with none)?",
    "How many huge loans did each branch make, even those that had none?",
])
def test_a_count_among_each_groups_own_rows_shows_every_group(data: duckdb.DuckDBPyConnection, question: str) -> None:
    made = plan(question)
    assert not made.unaccounted, made
    assert data.execute(made.sql).fetchall() == [("East", 0), ("West", 1)], made.sql


@pytest.mark.parametrize("question", [
    "For each month that had any defaulted loans, how many loans defaulted?",
    "Monthly number of defaulted loans, for the months with any defaulted loans",
])
def test_periods_that_had_any_are_only_those_with_some(data: duckdb.DuckDBPyConnection, question: str) -> None:
    made = plan(question)
    assert not made.unaccounted, made
    assert [row[-1] for row in data.execute(made.sql).fetchall()] == [1, 1], made.sql


@pytest.mark.parametrize("question", [
    "For every branch, how many of its loans were huge loans? Only list branches with at least one huge loan",
    # "each one" with no noun of its own: each of the branches named before it
    "For the branches that made any huge loans, how many huge loans did each one make?",
    "For branches with any huge loans, how many huge loans did each have?",
])
def test_groups_said_to_have_some_are_only_those_with_some(data: duckdb.DuckDBPyConnection, question: str) -> None:
    made = plan(question)
    assert not made.unaccounted, made
    assert data.execute(made.sql).fetchall() == [("West", 1)], made.sql


@pytest.mark.parametrize(("question", "expected"), [
    # the count counts the rows its phrase names; the average is of every loan of the branch
    ("For each branch, give the number of defaulted loans and the average amount", [("East", 1, 2300 / 3),
                                                                                    ("West", 1, 1600.0)]),
    ("For each branch, the average amount and the number of defaulted loans", [("East", 1, 2300 / 3),
                                                                              ("West", 1, 1600.0)]),
    ("the number of large loans and the average amount", [(2, 1100.0)]),
    # no other figure: the rows counted are the only ones asked about
    ("number of defaulted loans per branch", [("East", 1), ("West", 1)]),
])
def test_a_count_named_by_its_condition_beside_another_figure(data: duckdb.DuckDBPyConnection, question: str,
                                                               expected: list[tuple[object, ...]]) -> None:
    made = plan(question)
    assert not made.unaccounted, made
    assert data.execute(made.sql).fetchall() == [tuple(pytest.approx(value) for value in row) for row in expected], \
        made.sql


def test_a_count_said_beside_another_figure_is_kept(data: duckdb.DuckDBPyConnection) -> None:
    made = plan("the average amount of defaulted loans and the number of loans")
    assert data.execute(made.sql).fetchall() == [(2, 600.0)], made.sql


@pytest.mark.parametrize("question", ["In which months were two or more loans made?",
                                      "In which months were at least 2 loans made?",
                                      "Which months had 2 or more loans?"])
def test_periods_listed_by_a_bound_on_their_rows(data: duckdb.DuckDBPyConnection, question: str) -> None:
    made = plan(question)
    assert not made.unaccounted, made
    rows = data.execute(made.sql).fetchall()
    assert [(str(row[0])[:7], row[-1]) for row in rows] == [("2024-03", 3)], made.sql


@pytest.mark.parametrize("question", ["Which branches had at least 2 large loans?",
                                      "Which branches had two or more large loans?"])
def test_groups_listed_by_a_bound_on_the_rows_a_condition_keeps(data: duckdb.DuckDBPyConnection,
                                                                 question: str) -> None:
    # (the bound counts the large loans: it is no amount)
    made = plan(question)
    assert not made.unaccounted, made
    assert data.execute(made.sql).fetchall() == [], made.sql  # one large loan each
    made = plan(question.replace("2", "1").replace("two", "one"))
    assert [row[0] for row in data.execute(made.sql).fetchall()] == ["East", "West"], made.sql  # each has one


@pytest.mark.parametrize(("question", "expected"), [
    ("For each branch: number of loans, defaulted loans and average amount",
     [("East", 3, 1, 2300 / 3), ("West", 2, 1, 1600.0)]),
    ("per branch, the number of loans and large loans", [("East", 3, 1), ("West", 2, 1)]),
    ("number of loans, large loans, huge loans", [(5, 2, 1)]),
])
def test_conditions_listed_beside_a_count_are_figures_of_their_own(data: duckdb.DuckDBPyConnection, question: str,
                                                                    expected: list[tuple[object, ...]]) -> None:
    # each counts its rows; the count and the other figures stay of all the rows
    made = plan(question)
    assert not made.unaccounted, made
    assert data.execute(made.sql).fetchall() == [tuple(pytest.approx(value) for value in row) for row in expected], \
        made.sql


def test_the_most_used_is_the_one_with_the_most_rows(data: duckdb.DuckDBPyConnection) -> None:
    made = plan("the 1 most used branch")
    assert data.execute(made.sql).fetchall() == [("East", 3)], made.sql


@pytest.mark.parametrize(("question", "expected"), [
    ("Which branches had at least one default?", ["East", "West"]),
    ("Which branches had 2 or more defaults?", []),
])
def test_rows_a_condition_names_alone_are_counted_by_a_bound(data: duckdb.DuckDBPyConnection, question: str,
                                                              expected: list[str]) -> None:
    terms = (*TERMS, Term("default", "A loan that was not repaid: defaulted = TRUE", labels=("defaults",)))
    made = plan_question(question, [LOANS], terms, values_of=lambda _, column: ["East", "West"]
                         if column == "branch" else [])
    assert not made.unaccounted, made
    assert [row[0] for row in data.execute(made.sql).fetchall()] == expected, made.sql
