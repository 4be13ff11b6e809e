"""Months of every year said as a list or denied ("in June, July or August", "outside the summer months of June,
July and August", "not in July": a denied month was read as the month itself), and a column said to be missing
past an article ("missing a depth measurement"); "the single greatest"; "how many minutes do dives spend under
water" (the dive time, "spent under water, in minutes"). On a small schema of its own."""

from __future__ import annotations

from collections.abc import Iterator

import duckdb
import pytest

from convener.analytics.shapes import ColumnInfo, TableInfo
from tests.analytics.small_tables import answerer, database, planner

DIVES = TableInfo("dives", (
    ColumnInfo("dive_id", "INTEGER", "Identifier of the dive"),
    ColumnInfo("dive_date", "DATE", "Date of the dive"),
    ColumnInfo("depth", "FLOAT", "Deepest point of the dive in metres; empty when the gauge failed"),
    ColumnInfo("dive_time", "INTEGER", "Time spent under water, in minutes"),
), description="Recreational dives logged by a club: one row per dive.")


@pytest.fixture(scope="module")
def data() -> Iterator[duckdb.DuckDBPyConnection]:
    yield from database(
        "CREATE TABLE dives (dive_id INTEGER, dive_date DATE, depth DOUBLE, dive_time INTEGER)",
        "INSERT INTO dives VALUES (1, DATE '2024-06-02', 12, 40), (2, DATE '2024-07-14', NULL, 35), "
        "(3, DATE '2024-07-20', 18, 50), (4, DATE '2024-08-09', 9, 45), (5, DATE '2024-09-01', NULL, 30), "
        "(6, DATE '2024-12-28', 22, 40)")


plan = planner(DIVES, {})
answer = answerer(plan)


def count(data: duckdb.DuckDBPyConnection, question: str) -> object:
    (value,), = answer(data, question)
    return value


@pytest.mark.parametrize(("question", "expected"), [
    ("How many dives were in June, July or August?", 4),
    ("How many dives were in June or December?", 2),
    ("How many dives were logged outside the summer months of June, July and August?", 2),
    ("How many dives took place outside of July?", 4),
    ("How many dives were not in July?", 4),
    ("How many dives were there excluding December?", 5),
    ("How many dives were in July?", 2),
    ("How many dives were in months other than July?", 4),
    ("number of dives other than in December", 5),
    # the months in parentheses, the denial said again in them
    ("How many dives were logged outside the summer months (i.e. excluding June, July and August)?", 2),
    ("How many dives were logged in summer (i.e. June, July, August)?", 4),
])
def test_months_listed_or_denied(data: duckdb.DuckDBPyConnection, question: str, expected: int) -> None:
    assert count(data, question) == expected


@pytest.mark.parametrize("question", [
    # the months after their noun, one period (declined: "June" no value, then the shares of each month)
    "What share of dives were in the summer months June, July and August?",
    "What percentage of the year's dives happened in the months June, July and August?",
])
def test_months_named_after_their_noun_are_one_period(data: duckdb.DuckDBPyConnection, question: str) -> None:
    assert answer(data, question) == [(pytest.approx(400 / 6),)]


def test_a_column_missing_past_an_article(data: duckdb.DuckDBPyConnection) -> None:
    assert count(data, "What percent of dives are missing a depth measurement?") == pytest.approx(100 * 2 / 6)


@pytest.mark.parametrize(("question", "expected"), [
    ("How many dives have a depth on record?", 4),
    ("How many dives have no depth on record?", 2),
    ("Of the dives with a depth on record, what percent were deeper than 15?", 50.0),
    ("What was the record depth?", 22),  # a record of the column is its greatest value
])
def test_on_record_is_known(data: duckdb.DuckDBPyConnection, question: str, expected: float) -> None:
    assert count(data, question) == pytest.approx(expected)


@pytest.mark.parametrize("question", ["Which dive had the single greatest depth?",
                                      "Which dive had the greatest depth?"])
def test_a_word_that_only_stresses_a_superlative(data: duckdb.DuckDBPyConnection, question: str) -> None:
    assert [row[0] for row in answer(data, question)] == [6]


def test_how_many_of_the_measured_columns_unit_with_the_verb_its_description_says_irregularly(
        data: duckdb.DuckDBPyConnection) -> None:
    assert count(data, "On average, how many minutes do dives spend under water?") == pytest.approx(40.0)


@pytest.mark.parametrize(("question", "expected"), [
    ("What percent of dives have a depth measurement?", 100 * 4 / 6),
    ("How many dives have no depth measurement?", 2),
])
def test_a_column_had_or_not_as_its_measurement(data: duckdb.DuckDBPyConnection, question: str,
                                                expected: float) -> None:
    assert count(data, question) == pytest.approx(expected)
