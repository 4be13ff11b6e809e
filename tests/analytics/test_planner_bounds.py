"""Numbers said with their bound after them ("4 kg or more", "2 items or fewer") and a measure said with
"of" before its amount ("a delivery time of 90 minutes"), on a table of parcels; a number that is also a
text column's value is still the measure's amount there."""

from __future__ import annotations

from collections.abc import Iterator

import duckdb
import pytest

from convener.analytics.planner import NoPlan, plan_question
from convener.analytics.shapes import ColumnInfo, TableInfo
from tests.analytics.small_tables import database

PARCELS = TableInfo("parcels", (
    ColumnInfo("weight_kg", "INTEGER", "Weight of the parcel in kilograms"), ColumnInfo("items", "INTEGER"),
    ColumnInfo("delivery_time", "INTEGER", "Delivery time in minutes"),
    ColumnInfo("service", "STRING", samples=("90", "express"))), description="Parcels: one row per parcel.")


def values_of(table: str, column: str) -> list[str]:
    return ["90", "express"] if column == "service" else []


@pytest.fixture(scope="module")
def data() -> Iterator[duckdb.DuckDBPyConnection]:
    yield from database("CREATE TABLE parcels (weight_kg INTEGER, items INTEGER, delivery_time INTEGER, "
                        "service VARCHAR)",
                        "INSERT INTO parcels VALUES (2, 1, 30, '90'), (4, 2, 90, 'express'), (6, 3, 120, '90')")


def count(data: duckdb.DuckDBPyConnection, question: str) -> int:
    made = plan_question(question, [PARCELS], values_of=values_of)
    assert not made.unaccounted, made.sql
    return int(data.execute(made.sql).fetchall()[0][0])


@pytest.mark.parametrize(("question", "expected"), [
    ("How many parcels weigh 4 kg or more?", 2),
    ("How many parcels have 2 items or fewer?", 2),
    ("How many parcels had a delivery time of 90 minutes or more?", 2),
    ("How many parcels had a delivery time of 90 minutes?", 1),
    ("How many parcels had a delivery time of 2 hours or less?", 3),
    ("How many parcels had a delivery time of ninety minutes or more?", 2),  # a number said in words
    ("How many parcels had a delivery time of zero or less?", 0),
    ("How many parcels weigh four kg or more?", 2),
])
def test_a_bound_after_a_number_and_a_measure_of_an_amount(data: duckdb.DuckDBPyConnection, question: str,
                                                           expected: int) -> None:
    assert count(data, question) == expected


def test_a_bound_on_a_number_no_column_reads_is_not_dropped() -> None:
    made = plan_question("How many parcels of service 90 or more?", [PARCELS], values_of=values_of)
    assert made.unaccounted


def test_a_standard_deviation_or_variance_of_a_measure(data: duckdb.DuckDBPyConnection) -> None:
    made = plan_question("What is the sample standard deviation of delivery time, in minutes, per service?", [PARCELS],
                         values_of=values_of)
    assert not made.unaccounted and "standard deviation" in made.explanation
    assert sorted(data.execute(made.sql).fetchall(), key=str)[0][0] == "90"
    variance = plan_question("population variance of weight", [PARCELS]).sql
    assert round(data.execute(variance).fetchall()[0][0], 6) == round(8 / 3, 6)
    with pytest.raises(NoPlan):
        plan_question("standard deviation of weight", [PARCELS], dialect="sqlite")


def test_a_number_before_another_column_is_that_columns_not_the_measures(data: duckdb.DuckDBPyConnection) -> None:
    made = plan_question("average delivery time of 3 item parcels", [PARCELS], values_of=values_of)
    assert data.execute(made.sql).fetchall() == [(120.0,)]


def test_a_year_or_later_is_left_to_the_dates() -> None:
    dated = TableInfo("parcels", (*PARCELS.columns, ColumnInfo("sent_year", "INTEGER", "Year the parcel was sent")))
    made = plan_question("How many parcels were sent in 2020 or later?", [dated])
    assert not made.unaccounted and ">= 2020" in made.sql
