"""Yes/no questions about the top rows: "Is the heaviest penguin a Gentoo?" asks whether the heaviest penguin
is one, not which Gentoo is heaviest; the value after "a" is asked of the rows the ranking finds."""

from __future__ import annotations

from collections.abc import Iterator

import duckdb
import pytest

from convener.analytics.planner import NoPlan, plan_question
from convener.analytics.shapes import ColumnInfo, TableInfo
from tests.analytics.small_tables import database

PENGUINS = TableInfo("penguins", (ColumnInfo("individual_id", "STRING"), ColumnInfo("species", "STRING"),
                                  ColumnInfo("island", "STRING"), ColumnInfo("sex", "STRING"),
                                  ColumnInfo("body_mass_g", "INTEGER", "Body mass in grams")),
                     description="One row per penguin.")
ROWS = [("A1", "Adelie", "Dream", "male", 4700), ("G1", "Gentoo", "Biscoe", "male", 6300),
        ("G2", "Gentoo", "Biscoe", "female", 5000), ("C1", "Chinstrap", "Dream", "female", 3500)]
VALUES = {"species": ["Adelie", "Chinstrap", "Gentoo"], "island": ["Biscoe", "Dream"], "sex": ["female", "male"]}


@pytest.fixture(scope="module")
def data() -> Iterator[duckdb.DuckDBPyConnection]:
    rows = ", ".join(f"('{i}', '{s}', '{p}', '{x}', {m})" for i, s, p, x, m in ROWS)
    yield from database("CREATE TABLE penguins (individual_id VARCHAR, species VARCHAR, island VARCHAR, "
                        "sex VARCHAR, body_mass_g INTEGER)", f"INSERT INTO penguins VALUES {rows}")


def answer(data: duckdb.DuckDBPyConnection, question: str) -> object:
    sql = plan_question(question, [PENGUINS], values_of=lambda t, c: VALUES.get(c, [])).sql
    return data.execute(sql).fetchall()


@pytest.mark.parametrize(("question", "expected"), [
    ("Is the heaviest penguin a Gentoo?", True),  # not "which Gentoo is heaviest"
    ("Is the heaviest penguin in the data an Adelie?", False),
    ("Is the lightest penguin on Dream a Chinstrap?", True),  # "on Dream" still picks the rows ranked
    ("Is the lightest penguin a male?", False),
])
def test_the_value_after_a_is_asked_of_the_top_rows(data: duckdb.DuckDBPyConnection, question: str,
                                                    expected: bool) -> None:
    assert answer(data, question) == [(expected,)]


def test_a_yes_no_question_about_the_top_rows_without_a_value_asked_of_them_is_declined() -> None:
    with pytest.raises(NoPlan):
        plan_question("Is the heaviest penguin on Biscoe?", [PENGUINS], values_of=lambda t, c: VALUES.get(c, []))
