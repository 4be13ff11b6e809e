"""The columns a question asks to see of each row it lists or ranks ("…: ID, study, species", "with their
body mass"), a column said to be empty ("no body mass recorded"), what has no rows at all (declined), and
two groups of penguins set against each other ("is the average … of Gentoos greater than that of …")."""

from __future__ import annotations

from collections.abc import Iterator

import duckdb
import pytest

from convener.analytics.planner import NoPlan, Plan, Term, plan_question
from convener.analytics.shapes import ColumnInfo, TableInfo
from tests.analytics.small_tables import database

PENGUINS = TableInfo("penguins", (
    ColumnInfo("individual_id", "STRING", "Identifier of the penguin"), ColumnInfo("study", "STRING"),
    ColumnInfo("species", "STRING", samples=("Adelie", "Gentoo")), ColumnInfo("island", "STRING",
                                                                              samples=("Biscoe", "Dream")),
    ColumnInfo("flipper_length_mm", "INTEGER", "Length of the flipper in millimetres"),
    ColumnInfo("body_mass_g", "INTEGER", "Body mass in grams")), description="One row per penguin.")


@pytest.fixture(scope="module")
def data() -> Iterator[duckdb.DuckDBPyConnection]:
    yield from database("CREATE TABLE penguins (individual_id VARCHAR, study VARCHAR, species VARCHAR, island VARCHAR, "
                        "flipper_length_mm INTEGER, body_mass_g INTEGER)",
                        "INSERT INTO penguins VALUES ('N1', 'S1', 'Adelie', 'Dream', 190, 3700), "
                        "('N2', 'S1', 'Adelie', 'Biscoe', 200, NULL), ('N3', 'S2', 'Gentoo', 'Biscoe', 220, 5600), "
                        "('N4', 'S2', 'Gentoo', 'Dream', 215, 6100)")


def plan(question: str) -> Plan:
    return plan_question(question, [PENGUINS])


@pytest.mark.parametrize(("question", "expected"), [
    ("Show Gentoo penguins on Dream (ID, study, body mass).", [("N4", "S2", 6100)]),
    ("Penguins heavier than 5000 g: individual ID, species and island", [("N3", "Gentoo", "Biscoe"),
                                                                         ("N4", "Gentoo", "Dream")]),
    ("Which penguins have no body mass recorded? Give individual ID, study and island.", [("N2", "S1", "Biscoe")]),
    ("Top 2 heaviest penguins: individual ID and species", [("N4", "Gentoo", 6100), ("N3", "Gentoo", 5600)]),
    # an owner after the punctuation, and a verb of showing in its -ing form, open the list as well
    ("Gentoo penguins heavier than 5000 g: their ID, island and body mass.", [("N3", "Biscoe", 5600),
                                                                             ("N4", "Dream", 6100)]),
    ("List the penguins on Dream, showing ID, species and flipper length.", [("N1", "Adelie", 190),
                                                                            ("N4", "Gentoo", 215)]),
    # a double dash opens the list too; "which ones, and what <column>" asks for the rows by id, with it
    ("penguins heavier than 5000 g -- id, island", [("N3", "Biscoe"), ("N4", "Dream")]),
    ("Penguins heavier than 5000 g — which ones, and what island?", [("N3", "Biscoe"), ("N4", "Dream")]),
    # the measure right before its number and bound ("flippers 215 mm or longer"), past a verb of being
    ("which penguins have flippers 215 mm or longer? id, island", [("N3", "Biscoe"), ("N4", "Dream")]),
    ("Penguins whose flippers are 215 mm or longer: id and island. Answer as a list.", [("N3", "Biscoe"),
                                                                                       ("N4", "Dream")]),
])
def test_the_columns_listed_are_what_each_row_shows(data: duckdb.DuckDBPyConnection, question: str,
                                                    expected: list[tuple[object, ...]]) -> None:
    assert sorted(data.execute(plan(question).sql).fetchall()) == sorted(expected)


def test_columns_asked_with_the_rows_are_shown_beside_the_whole_rows(data: duckdb.DuckDBPyConnection) -> None:
    result = data.execute(plan("List the Adelie penguins on Dream with their body mass.").sql)
    columns = [column[0] for column in result.description]
    assert {"individual_id", "species", "body_mass_g"} <= set(columns)
    assert len(result.fetchall()) == 1


def test_a_single_column_after_a_verb_stays_a_listing_of_its_values(data: duckdb.DuckDBPyConnection) -> None:
    assert data.execute(plan("List the species of penguins on Biscoe").sql).fetchall() == [("Adelie",), ("Gentoo",)]


def test_what_has_no_rows_is_declined_rather_than_listed_without_the_condition() -> None:
    with pytest.raises(NoPlan):
        plan("Which island has no penguins? Give its name.")


def test_a_short_plural_names_its_column(data: duckdb.DuckDBPyConnection) -> None:
    assert data.execute(plan("how many distinct individual IDs are there?").sql).fetchall() == [(4,)]


def test_the_n_rows_ranked_may_be_named_with_values_before_their_noun(data: duckdb.DuckDBPyConnection) -> None:
    rows = data.execute(plan("Show me the 1 Gentoo penguins with the longest flippers (ID, flipper length).").sql)
    assert rows.fetchall() == [("N3", 220)]


@pytest.mark.parametrize(("question", "expected"), [
    ("Is the average flipper length of Gentoo penguins greater than that of Adelie penguins?", True),
    ("Is the average body mass of penguins on Dream lower than that of penguins on Biscoe?", True),
    ("By how many grams is the average Gentoo heavier than the average Adelie?", 2150.0),
    ("How many mm longer, on average, are the flippers of Gentoo penguins than those of Adelie penguins?", 22.5),
    ("How many more Gentoo penguins are there than Adelie penguins?", 0),  # the rows counted, past the value
])
def test_two_groups_set_against_each_other_by_a_comparative(data: duckdb.DuckDBPyConnection, question: str,
                                                            expected: object) -> None:
    # (a yes or no comes with each group's figure beside it)
    assert [row[:1] for row in data.execute(plan(question).sql).fetchall()] == [(expected,)]


@pytest.mark.parametrize("question", ["By how much is Gentoo better than Adelie?",
                                      # two groups that differ in island and in species
                                      "Are the Adelies on Dream heavier on average than the Gentoos on Biscoe?"])
def test_a_comparison_of_groups_with_no_one_measure_is_declined(question: str) -> None:
    with pytest.raises(NoPlan):
        plan(question)


def test_which_groups_have_no_rows_of_a_value_is_a_condition_on_the_groups(data: duckdb.DuckDBPyConnection) -> None:
    rows = data.execute(plan("Which islands have no Gentoo penguins?").sql).fetchall()
    assert rows == []  # both islands have a Gentoo penguin here
    rows = data.execute(plan("Which species have no penguins on Dream?").sql).fetchall()
    assert rows == []
    rows = data.execute(plan("Which studies never had a Gentoo penguin?").sql).fetchall()
    assert [row[0] for row in rows] == ["S1"]


def test_no_before_a_value_without_groups_asked_for_is_declined() -> None:
    with pytest.raises(NoPlan):
        plan("How many penguins have no Gentoo penguins?")


def test_aggregates_joined_by_and_are_each_computed(data: duckdb.DuckDBPyConnection) -> None:
    rows = data.execute(plan("Minimum and maximum body mass per species").sql).fetchall()
    assert rows == [("Adelie", 3700, 3700), ("Gentoo", 5600, 6100)]
    assert len(data.execute(plan("average, minimum and maximum flipper length").sql).fetchall()[0]) == 3
    # with articles between them, and as superlatives of size
    assert data.execute(plan("the smallest and the largest body mass per species").sql).fetchall() == rows
    assert data.execute(plan("What are the lightest and heaviest body masses per species?").sql).fetchall() == rows
    assert len(data.execute(plan("Give the mean and the maximum flipper length").sql).fetchall()[0]) == 2


def test_two_opposite_superlatives_of_the_rows_are_refused_not_one_dropped() -> None:
    with pytest.raises(NoPlan, match="two rankings"):
        plan("the heaviest and lightest penguin")


@pytest.mark.parametrize("question", ["Average flipper length of penguins, excluding those with unknown body mass",
                                      "Average flipper length of penguins, not counting those with a missing body mass",
                                      "Average flipper length, leaving out penguins of unknown body mass",
                                      "Excluding penguins whose body mass is unknown, what's the average flipper length?"])
def test_a_negation_before_an_empty_column_keeps_the_rows_that_have_it(data: duckdb.DuckDBPyConnection,
                                                                       question: str) -> None:
    assert data.execute(plan(question).sql).fetchall() == [(pytest.approx(625 / 3),)]


def test_a_measure_asked_in_another_unit_is_converted_or_declined(data: duckdb.DuckDBPyConnection) -> None:
    assert data.execute(plan("average flipper length in cm").sql).fetchall() == [(pytest.approx(20.625),)]
    with pytest.raises(NoPlan):
        plan("average flipper length in km")
    kilograms = Term("mass in kilograms", "A penguin's body mass in kilograms: body_mass_g / 1000.", ("kilograms", "kg"))
    for question in ("average body mass in kg", "What's the mean body mass in kilograms of Gentoo penguins?"):
        made = plan_question(question, [PENGUINS], [kilograms])
        assert "1000" in made.sql and "body_mass_g\" AS" not in made.sql, made.sql


FLIGHTS = TableInfo("flights", (ColumnInfo("flight_date", "DATE"), ColumnInfo("flight", "INTEGER", "Flight number"),
                                ColumnInfo("carrier", "STRING", samples=("UA", "DL")),
                                ColumnInfo("dest", "STRING", "Destination airport")),
                    description="One row per flight.")


@pytest.mark.parametrize(("question", "shown"), [
    # "flights: date" is the rows and a column listed, no flight_date said across the colon
    ("Show all the UA flights: date, flight number and destination.", ['"flight_date"', '"flight"', '"dest"']),
    # "flights with their dates" shows the rows' dates, it names no column "flight date" of its own
    ("Give me the UA flights with their dates.", []),
    # a dash parts them as a colon does ("flights - date" had been read as flight_date), "just" opens the list
    ("show me the UA flights - date, flight number and destination", ['"flight_date"', '"flight"', '"dest"']),
    ("Show me the UA flights — just the date and flight number.", ['"flight_date"', '"flight"']),
    ("Show me the UA flights: just the date and flight number.", ['"flight_date"', '"flight"']),
])
def test_words_parted_by_punctuation_or_with_are_no_one_column_name(question: str, shown: list[str]) -> None:
    sql = plan_question(question, [FLIGHTS]).sql
    assert "'UA'" in sql and sql.index("SELECT") < min((sql.index(name) for name in shown), default=1), sql
    assert all(name in sql.split(" FROM ")[0] for name in shown), sql


BILLS = TableInfo("penguins", (ColumnInfo("species", "STRING", samples=("Adelie", "Gentoo")),
                               ColumnInfo("bill_length_mm", "FLOAT"), ColumnInfo("bill_depth_mm", "FLOAT")),
                  description="One row per penguin.")


@pytest.mark.parametrize(("question", "column"), [
    ("Do Gentoos have longer bills than Adelies on average?", "bill_length_mm"),
    ("Which penguin has the deepest bill?", "bill_depth_mm"),
])
def test_an_adjective_of_measure_says_which_of_the_columns_a_word_shares(question: str, column: str) -> None:
    made = plan_question(question, [BILLS],
                         values_of=lambda _, c: ["Adelie", "Gentoo"] if c == "species" else [])
    other = "bill_depth_mm" if column == "bill_length_mm" else "bill_length_mm"
    assert column in made.sql and other not in made.sql


def test_rows_listed_by_their_columns_show_the_column_that_tells_them_apart_last(
        data: duckdb.DuckDBPyConnection) -> None:
    made = plan("Gentoo penguins: island and body mass, please")
    assert data.execute(made.sql).fetchall() == [("Biscoe", 5600, "N3"), ("Dream", 6100, "N4")], made.sql


CARRIED = TableInfo("flights", (ColumnInfo("flight", "INTEGER", "Flight number"), ColumnInfo("flight_date", "DATE"),
                                ColumnInfo("carrier", "STRING", "Two-letter airline code"),
                                ColumnInfo("arr_delay", "INTEGER", "Arrival delay in minutes")),
                    description="One row per flight.")
AIRLINES = TableInfo("airlines", (ColumnInfo("carrier", "STRING"), ColumnInfo("name", "STRING", "Airline name")),
                     description="One row per airline.")


def test_a_joined_tables_noun_in_the_list_is_the_column_that_joins_it() -> None:
    from convener.analytics.planner import Relationship

    made = plan_question("Flights that arrived more than an hour late: the date, airline and arrival delay.", [CARRIED],
                         values_of=lambda t, c: ["AA", "UA"] if c == "carrier" else [],
                         relationships=(Relationship("flights", ("carrier",), "airlines", ("carrier",)),),
                         related=[AIRLINES])
    assert not made.unaccounted, made
    assert made.sql.startswith('SELECT "flight_date", "carrier", "arr_delay", "flight" FROM "flights"'), made.sql


STUDIED = TableInfo("penguins", PENGUINS.columns, description="Penguins studied on two islands: one row per penguin.")


@pytest.mark.parametrize(("question", "expected"), [
    ("Is there any penguin in the study heavier than 6000 g?", [(True,)]),
    ("How many Gentoo penguins are in this study?", [(2,)]),
    ("How many penguins in the study S1 were weighed over 3000 g?", [(1,)]),  # the study of that name: a value
])
def test_the_study_the_rows_come_from_is_the_data_as_a_whole(data: duckdb.DuckDBPyConnection, question: str,
                                                             expected: list[tuple[object, ...]]) -> None:
    values = {"study": ["S1", "S2"], "species": ["Adelie", "Gentoo"], "island": ["Biscoe", "Dream"]}
    made = plan_question(question, [STUDIED], values_of=lambda _, column: values.get(column, []))
    assert not made.unaccounted, made
    assert data.execute(made.sql).fetchall() == expected, made.sql


def test_a_share_of_rows_said_with_a_verb_of_measure_counts_what_follows_it(data: duckdb.DuckDBPyConnection) -> None:
    # of the Gentoo penguins (two), one weighs more than 6,000 g
    assert data.execute(plan("What proportion of Gentoo penguins weigh more than 6000 g?").sql).fetchall() == \
        [(50.0,)]


def test_a_column_set_off_by_a_comma_after_with_is_shown_beside_the_rows(data: duckdb.DuckDBPyConnection) -> None:
    made = plan("Top 2 heaviest penguins, with species.")
    assert "GROUP BY" not in made.sql, made.sql
    assert sorted(row[0] for row in data.execute(made.sql).fetchall()) == ["N3", "N4"]


TRIPS = TableInfo("flights", (ColumnInfo("flight", "INTEGER", "Flight number"), ColumnInfo("flight_date", "DATE"),
                              ColumnInfo("origin", "STRING", "Airport the flight left from", samples=("JFK", "LGA")),
                              ColumnInfo("dest", "STRING", "Code of the destination airport", samples=("ATL", "MIA")),
                              ColumnInfo("dep_delay", "INTEGER", "Departure delay in minutes")),
                  description="One row per flight.")


@pytest.mark.parametrize(("question", "column"), [
    ("JFK flights: date, flight number and where they were going", "dest"),
    ("Flights to ATL - flight, date and where it came from.", "origin"),
])
def test_where_the_rows_went_in_a_list_is_the_column_of_that_end(question: str, column: str) -> None:
    made = plan_question(question, [TRIPS], values_of=lambda _, c: {"origin": ["JFK", "LGA"],
                                                                    "dest": ["ATL", "MIA"]}.get(c, []))
    assert not made.unaccounted, made
    assert made.sql.startswith("SELECT ") and f'"{column}" FROM' in made.sql, made.sql


def test_a_measure_said_by_another_of_its_names(data: duckdb.DuckDBPyConnection) -> None:
    made = plan("What is the average weight of Gentoo penguins?")  # the body mass
    assert not made.unaccounted, made
    assert data.execute(made.sql).fetchall() == [(5850.0,)], made.sql


@pytest.mark.parametrize("question", ["What is the average egg weight of Gentoo penguins?",
                                      "What is the average weight of the eggs of Gentoo penguins?"])
def test_the_other_name_of_a_measure_said_of_something_else_is_not_the_rows_measure(question: str) -> None:
    try:
        made = plan(question)
    except NoPlan:
        return
    assert "weight" in made.unaccounted, made  # (the eggs' weight is not the penguins' body mass)


def test_along_with_shows_the_columns_beside_the_rows_as_with_does(data: duckdb.DuckDBPyConnection) -> None:
    # (before, "along" kept "with" from opening the list: the question was declined as having nothing for
    # "studies")
    made = plan("Give me the islands of penguins heavier than 5000 g, along with the studies.")
    assert not made.unaccounted and made.sql == plan("Give me the islands of penguins heavier than 5000 g, with "
                                                     "the studies.").sql
    assert sorted(row[0] for row in data.execute(made.sql).fetchall()) == ["N3", "N4"]
