"""Yes/no questions asked of what the rows compute: "Is the heaviest penguin a Gentoo?" asks whether the
heaviest penguin is one, not which Gentoo is heaviest (the value after "a" is asked of the rows the ranking
finds), and "Is the average body mass of Gentoos over 5600 g?" compares the average, not each penguin."""

from __future__ import annotations

from collections.abc import Iterator

import duckdb
import pytest

from convener.analytics.planner import NoPlan
from convener.analytics.shapes import ColumnInfo, TableInfo
from tests.analytics.small_tables import database, planner

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


plan = planner(PENGUINS, VALUES)


def answer(data: duckdb.DuckDBPyConnection, question: str) -> object:
    sql = plan(question).sql
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
        plan("Is the heaviest penguin on Biscoe?")


@pytest.mark.parametrize(("question", "expected"), [
    # Gentoos weigh 6300 and 5000: on average 5650
    ("Is the average body mass of Gentoo penguins over 5600 g?", True),
    ("Is the average body mass of the Gentoos more than 5700?", False),
    ("Is the total body mass of penguins on Dream at least 8200 g?", True),  # 4700 + 3500
    # said by an adjective of measure: the average is what is heavier (each row had been compared, or declined)
    ("Is the average body mass of Gentoo penguins heavier than 5600 g?", True),
    ("Is the average Gentoo penguin lighter than 5600 g?", False),
])
def test_a_number_compared_with_an_aggregate_in_a_yes_no_question_is_compared_with_it(
        data: duckdb.DuckDBPyConnection, question: str, expected: bool) -> None:
    assert answer(data, question) == [(expected,)]


@pytest.mark.parametrize(("question", "expected"), [
    # the condition said last is asked of every row the ones before it keep
    ("Are all Gentoo penguins on Biscoe?", True),
    ("Are all penguins on Dream Chinstraps?", False),  # Dream has an Adelie too
    ("Is every male penguin heavier than 4500 g?", True),
    ("Were all the Gentoos males?", False),
    ("Are all penguins Gentoos?", False),  # one condition: asked of every row
])
def test_a_yes_no_question_about_every_row_asks_the_last_condition_of_the_rows_the_others_keep(
        data: duckdb.DuckDBPyConnection, question: str, expected: bool) -> None:
    assert answer(data, question) == [(expected,)]


@pytest.mark.parametrize(("question", "expected"), [
    # "only" or "always" asks the condition after it of the rows the others keep (the first had listed the
    # Gentoos on Biscoe, "only" unread, and "ever" had made it whether any was)
    ("Gentoo penguins - were they only ever found on Biscoe?", True),
    ("Did the Gentoos only live on Biscoe?", True),
    ("Were Dream's penguins always Chinstraps?", False),
    ("Are the male penguins only Gentoos?", False),
])
def test_only_or_always_in_a_yes_no_question_asks_the_condition_after_it_of_every_row(
        data: duckdb.DuckDBPyConnection, question: str, expected: bool) -> None:
    assert answer(data, question) == [(expected,)]


def test_a_yes_no_question_about_every_row_with_a_condition_before_every_is_declined() -> None:
    # which of the two conditions is asked of the rows the other keeps is not said by the order alone
    with pytest.raises(NoPlan, match="every row"):
        plan("On Dream, are all penguins Chinstraps?")


@pytest.mark.parametrize(("question", "expected"), [
    ("Do Gentoo penguins weigh more than Adelie penguins on average?", True),
    ("On average, do Chinstraps weigh less than Adelies?", True),
    ("Do Gentoos weigh less than Adelies on average?", False),
    # the column said before each value is that value's ("species Gentoo")
    ("Does species Gentoo weigh more than species Adelie on average?", True),
])
def test_weighing_more_or_less_than_is_a_contrast_of_mass(data: duckdb.DuckDBPyConnection, question: str,
                                                          expected: bool) -> None:
    rows = data.execute(plan(question).sql).fetchall()
    assert rows[0][0] is expected, plan(question).sql


@pytest.mark.parametrize(("question", "expected"), [
    ("Do Gentoo penguins weigh more than 5,000 grams on average?", True),  # (6300 + 5000) / 2
    ("Do Gentoo penguins weigh more than 6,000 grams on average?", False),  # though one of them does
    ("Do penguins on Dream have a body mass under 4 kg on average?", False),  # 4100 g
])
def test_on_average_after_the_number_compares_the_average(data: duckdb.DuckDBPyConnection, question: str,
                                                          expected: bool) -> None:
    rows = data.execute(plan(question).sql).fetchall()
    assert rows == [(expected,)], plan(question).sql


def test_every_measured_row_is_those_with_a_value_of_the_column_compared() -> None:
    # ("measured" had been read as nothing: a penguin never weighed made every answer "No")
    made = plan("Do all measured Gentoos weigh more than 4,000 grams?")
    assert 'NOT "body_mass_g" IS NULL' in made.sql, made.sql
    assert "IS NULL" not in plan("Do all Gentoos weigh more than 4,000 grams?").sql
