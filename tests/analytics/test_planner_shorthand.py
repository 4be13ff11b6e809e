"""Shorthand of questions on a small schema of sea samples: "buoy no." for a number column, a number below
zero ("-1.5"), and columns listed after the one a condition reads."""

from __future__ import annotations

from collections.abc import Iterator

import duckdb
import pytest

from convener.analytics.planner import NoPlan
from convener.analytics.shapes import ColumnInfo, TableInfo
from convener.analytics.wording import tokenize
from tests.analytics.small_tables import database, planner

SAMPLES = TableInfo("samples", (
    ColumnInfo("sample_id", "STRING", "Identifier of the sample"), ColumnInfo("buoy", "INTEGER", "Buoy number"),
    ColumnInfo("site", "STRING", "Site the sample was taken at", samples=("North", "South")),
    ColumnInfo("sample_date", "DATE", "Date the sample was taken"),
    ColumnInfo("water_temp", "FLOAT", "Water temperature in degrees Celsius; below zero under the ice"),
    ColumnInfo("salinity", "FLOAT", "Salinity in practical salinity units")),
    description="Sea water samples taken from buoys: one row per sample.")
VALUES = {"site": ["North", "South"]}


@pytest.fixture(scope="module")
def data() -> Iterator[duckdb.DuckDBPyConnection]:
    yield from database(
        "CREATE TABLE samples (sample_id VARCHAR, buoy INTEGER, site VARCHAR, sample_date DATE, water_temp DOUBLE, "
        "salinity DOUBLE)",
        "INSERT INTO samples VALUES ('S1', 7, 'North', '2021-01-04', -1.8, 35.2), "
        "('S2', 7, 'North', '2021-02-01', -0.5, 34.1), ('S3', 12, 'South', '2021-01-09', 4.5, 35.9), "
        "('S4', 12, 'South', '2021-03-15', 6.0, 33.8)")


plan = planner(SAMPLES, VALUES)


def ask(data: duckdb.DuckDBPyConnection, question: str) -> list[tuple[object, ...]]:
    return sorted(data.execute(plan(question).sql).fetchall(), key=repr)


@pytest.mark.parametrize("question", [
    "Samples with salinity above 35: site, buoy no., water temp",
    "Samples with salinity above 35 - site, buoy no. and water temp",
    "Show the site, buoy no., water temp of samples with salinity above 35",
])
def test_no_with_a_period_after_a_column_is_short_for_number(data: duckdb.DuckDBPyConnection,
                                                             question: str) -> None:
    assert ask(data, question) == [("North", 7, -1.8, "S1"), ("South", 12, 4.5, "S3")]  # then which sample


@pytest.mark.parametrize(("question", "expected"), [
    ("Samples with water temp below -1: sample id and buoy", [("S1", 7)]),
    ("Which samples had a water temperature above -1? sample id and buoy", [("S2", 7), ("S3", 12), ("S4", 12)]),
    ("Which samples had a water temp between -2 and 0? sample id and buoy", [("S1", 7), ("S2", 7)]),
    ("Samples with water temp under \u22120.5 (sample id, buoy)", [("S1", 7)]),
])
def test_a_minus_sign_before_a_number_makes_it_negative(data: duckdb.DuckDBPyConnection, question: str,
                                                        expected: list[tuple[object, ...]]) -> None:
    assert ask(data, question) == expected


@pytest.mark.parametrize(("text", "numbers"), [("34-35", [34, 35]), ("N-5", [5]), ("-1,200", [-1200]),
                                               ("(\u22122.5)", [-2.5]), ("2021-01-04", [])])
def test_a_dash_after_a_word_or_number_is_no_minus_sign(text: str, numbers: list[float]) -> None:
    assert [token.number for token in tokenize(text) if token.kind == "number"] == numbers


@pytest.mark.parametrize("question", ["Samples with water temp below 0: give id, site and the value",
                                      "Samples with water temp below 0 - sample id, site, value"])
def test_the_value_in_a_list_of_columns_is_the_column_of_the_number_condition(data: duckdb.DuckDBPyConnection,
                                                                              question: str) -> None:
    assert ask(data, question) == [("S1", "North", -1.8), ("S2", "North", -0.5)]


@pytest.mark.parametrize("question", ["Samples from North: give id, site and the value",
                                      "Samples with water temp below 5 and salinity above 34: id and the values"])
def test_the_value_with_no_one_number_condition_is_declined(question: str) -> None:
    with pytest.raises(NoPlan):
        plan(question)


@pytest.mark.parametrize("question", ["Samples with salinity above 35: site, buoy. water temp",
                                      "Samples with salinity above 35: site, buoy, so water temp"])
def test_a_number_column_named_past_the_end_of_a_list_is_not_dropped_unsaid(question: str) -> None:
    with pytest.raises(NoPlan):
        plan(question)


@pytest.mark.parametrize("question", ["Did any sample from North have a water temp below -1? yes or no",
                                      "Was there any sample with water temp below -1 at North? (Yes/no)"])
def test_yes_or_no_after_a_question_asking_whether_is_its_answer_form(data: duckdb.DuckDBPyConnection,
                                                                      question: str) -> None:
    assert data.execute(plan(question).sql).fetchall() == [(True,)]
