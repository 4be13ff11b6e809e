"""What a question lists of a joined table's rows: "which operators operated trips from North? Give their names"
lists each operator once, not every trip's operator; and a description's word before a column's name ("full
name", where the name is the operator's "Full name") is one mention with it. On a small bus schema."""

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
    ColumnInfo("line_code", "STRING", "Code of the company running the trip; the operators table gives its name"),
), description="Bus trips of 2024: one row per trip.")
OPERATORS = TableInfo("operators", (ColumnInfo("operator_code", "STRING", "Operator code"),
                                    ColumnInfo("name", "STRING", "Full name of the operator")),
                      description="Bus operators: one row per operator.")
BY_OPERATOR = (Relationship("trips", ("line_code",), "operators", ("operator_code",)),)
VALUES = {("trips", "depot"): ["North", "South"], ("trips", "line_code"): ["AB", "CD"],
          ("operators", "operator_code"): ["AB", "CD"], ("operators", "name"): ["Abbey Buses", "City Direct"]}


@pytest.fixture(scope="module")
def data() -> Iterator[duckdb.DuckDBPyConnection]:
    yield from database(
        "CREATE TABLE trips (trip_id INTEGER, depot VARCHAR, line_code VARCHAR)",
        "INSERT INTO trips VALUES (1, 'North', 'AB'), (2, 'North', 'AB'), (3, 'North', 'CD'), (4, 'South', 'AB')",
        "CREATE TABLE operators (operator_code VARCHAR, name VARCHAR)",
        "INSERT INTO operators VALUES ('AB', 'Abbey Buses'), ('CD', 'City Direct')")


def plan(question: str) -> Plan:
    return plan_question(question, [TRIPS], values_of=lambda t, c: VALUES.get((t, c), []),
                         relationships=BY_OPERATOR, related=[OPERATORS])


@pytest.mark.parametrize("question", [
    "Which operators operated trips from North? Give their names.",
    "Which operators operated trips from North? Give their full names.",
    "List the full names of the operators that operated trips from North.",
    "List the full name of the operators that operated trips from North.",
])
def test_a_joined_tables_rows_asked_which_of_are_listed_once_each(data: duckdb.DuckDBPyConnection,
                                                                  question: str) -> None:
    made = plan(question)
    assert not made.unaccounted, made
    # each name beside the code that joins it, as "which operators" alone lists them (two may share a name)
    assert sorted(data.execute(made.sql).fetchall()) == [("AB", "Abbey Buses"), ("CD", "City Direct")], made.sql


def test_the_queried_tables_rows_asked_which_of_are_still_listed_each(data: duckdb.DuckDBPyConnection) -> None:
    made = plan("Which trips left from North? Give their line codes.")
    assert len(data.execute(made.sql).fetchall()) == 3, made.sql


@pytest.mark.parametrize("question", ["Which operator, by full name, operated the most trips?",
                                      "Which operator, by its full name, operated the most trips?"])
def test_by_a_name_set_off_by_commas_says_how_to_tell_the_rows_not_a_group(data: duckdb.DuckDBPyConnection,
                                                                        question: str) -> None:
    made = plan(question)
    assert not made.unaccounted, made
    assert [row[-2:] for row in data.execute(made.sql).fetchall()] == [("Abbey Buses", 3)], made.sql


def test_a_word_of_structure_before_a_name_stays_the_questions_own() -> None:
    # "average wind" where wind is "Average wind speed": the average asked for, not a longer name of wind
    weather = TableInfo("weather", (ColumnInfo("day", "DATE"), ColumnInfo("wind", "FLOAT", "Average wind speed, m/s")),
                        description="Daily weather: one row per day.")
    made = plan_question("average wind speed", [weather])
    assert "AVG" in made.sql and not made.unaccounted, made


def test_a_word_before_a_name_across_punctuation_is_not_part_of_it() -> None:
    # "The 5 heaviest penguins: species and body mass": "penguins" ends the rows, "species" begins the list,
    # though the description says "Penguin species"
    penguins = TableInfo("penguins", (ColumnInfo("individual_id", "STRING", "Identifier of the penguin"),
                                      ColumnInfo("species", "STRING", "Penguin species"),
                                      ColumnInfo("body_mass_g", "FLOAT", "Body mass in grams")),
                         description="Adult penguins: one row per penguin.")
    made = plan_question("The 5 heaviest penguins: species and body mass", [penguins])
    assert "GROUP BY" not in made.sql and not made.unaccounted, made.sql


def test_a_column_joined_by_and_to_a_key_stays_a_key_before_its_values_in_parentheses() -> None:
    # "by species and sex (males and females only)": sex is a key, the parentheses its values kept
    penguins = TableInfo("penguins", (ColumnInfo("species", "STRING"), ColumnInfo("sex", "STRING"),
                                      ColumnInfo("flipper_length_mm", "FLOAT", "Flipper length in mm")),
                         description="Penguins: one row per penguin.")
    values = {"species": ["Adelie", "Gentoo"], "sex": ["male", "female"]}
    made = plan_question("Average flipper length by species and sex (males and females only).", [penguins],
                         values_of=lambda t, c: values.get(c, []))
    assert 'GROUP BY "species", "sex"' in made.sql and "'male'" in made.sql, made.sql
