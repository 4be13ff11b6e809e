"""Questions said as statements to judge ("… — true or false?", "is it true that …"), a group compared with
several values taken together ("than out of HAR and NTH combined"), verbs of being somewhere ("sits"), "averaged",
and the rows other rows refer to by a role ("the destinations") left unread: on a small schema of ferry trips
and the ports they sail between, every table queryable as the pipeline offers them."""

from __future__ import annotations

from collections.abc import Iterator

import duckdb
import pytest

from convener.analytics.planner import NoPlan, Relationship, Term, plan_question
from convener.analytics.shapes import ColumnInfo, TableInfo
from tests.analytics.small_tables import answerer, database, joined_planner

TRIPS = TableInfo("trips", (
    ColumnInfo("trip_id", "INTEGER", "Identifier of the trip"),
    ColumnInfo("operator", "STRING", "Company that ran the trip"),
    ColumnInfo("start_port", "STRING", "Port the trip left from"),
    ColumnInfo("end_port", "STRING", "Destination port of the trip"),
    ColumnInfo("delay", "INTEGER", "Minutes the trip left after its scheduled time"),
), description="Ferry trips: one row per trip.")
PORTS = TableInfo("ports", (ColumnInfo("code", "STRING", "Port code"), ColumnInfo("name", "STRING", "Port name"),
                            ColumnInfo("depth", "INTEGER", "Depth of the harbour in metres")),
                  description="Ports: one row per port.")
RELATIONSHIPS = (Relationship("trips", ("start_port",), "ports", ("code",)),
                 Relationship("trips", ("end_port",), "ports", ("code",)))
VALUES = {("trips", "operator"): ["Northwind", "Islander"], ("trips", "start_port"): ["HAR", "NTH", "SKY"],
          ("trips", "end_port"): ["HAR", "NTH", "SKY"], ("ports", "code"): ["HAR", "NTH", "SKY", "MOR"],
          ("ports", "name"): ["Harbourton", "Northwick", "Skye", "Morven"]}


@pytest.fixture(scope="module")
def data() -> Iterator[duckdb.DuckDBPyConnection]:
    yield from database(
        "CREATE TABLE trips (trip_id INTEGER, operator VARCHAR, start_port VARCHAR, end_port VARCHAR, delay INTEGER)",
        "CREATE TABLE ports (code VARCHAR, name VARCHAR, depth INTEGER)",
        "INSERT INTO trips VALUES (1, 'Northwind', 'SKY', 'HAR', 10), (2, 'Northwind', 'SKY', 'NTH', 20), "
        "(3, 'Northwind', 'SKY', 'HAR', 30), (4, 'Northwind', 'HAR', 'SKY', 0), (5, 'Islander', 'NTH', 'SKY', 5)",
        "INSERT INTO ports VALUES ('HAR', 'Harbourton', 8), ('NTH', 'Northwick', 5), ('SKY', 'Skye', 6), "
        "('MOR', 'Morven', 20)")


plan = joined_planner([TRIPS, PORTS], [], RELATIONSHIPS, VALUES)
answer = answerer(plan)


@pytest.mark.parametrize(("question", "expected"), [
    ("More trips from SKY than from HAR — true or false?", True),
    ("Is it true that Northwind ran more trips out of SKY than out of HAR and NTH combined?", True),
    ("Did Northwind have more trips from HAR than from SKY and NTH together? true/false", False),
])
def test_a_statement_to_judge_is_a_yes_or_no(data: duckdb.DuckDBPyConnection, question: str, expected: bool) -> None:
    assert answer(data, question)[0][0] is expected


def test_a_group_of_several_values_is_counted_together(data: duckdb.DuckDBPyConnection) -> None:
    # Northwind: 3 trips out of SKY, 1 out of HAR and NTH together
    assert answer(data, "Did Northwind have more trips from SKY than from HAR and NTH combined?") == [(True, 3, 1)]


def test_averaged_is_an_average(data: duckdb.DuckDBPyConnection) -> None:
    assert sorted(answer(data, "delay averaged per operator")) == [("Islander", 5.0), ("Northwind", 15.0)]


def test_a_port_that_sits_deepest(data: duckdb.DuckDBPyConnection) -> None:
    assert [row[:1] for row in answer(data, "Which port sits at the greatest depth?")] == [("MOR",)]


def test_the_rows_others_refer_to_by_a_role_left_unread_are_refused() -> None:
    # Morven is deepest, but no trip goes there: "the destinations" are not every port
    with pytest.raises(NoPlan, match="destinations"):
        plan("Of the destinations, which port has the greatest depth?")


LEGS = TableInfo("legs", (
    ColumnInfo("leg_id", "INTEGER", "Identifier of the leg"),
    ColumnInfo("origin", "STRING", "Port the leg left from"),
    ColumnInfo("dest", "STRING", "Destination port of the leg"),
    ColumnInfo("arr_time", "INTEGER", "Arrival time, as HHMM"),
    ColumnInfo("arr_delay", "INTEGER", "Arrival delay in minutes (negative when early)"),
    ColumnInfo("dep_delay", "INTEGER", "Departure delay in minutes (negative when early)"),
    ColumnInfo("sea_time", "INTEGER", "Minutes at sea"),
), description="Ferry legs: one row per leg.")
GAIN = Term("time made up", "Minutes a leg gained at sea: dep_delay - arr_delay, from the legs table.",
            ("gain", "minutes made up"))
LEG_VALUES = {"origin": ["HAR", "NTH"], "dest": ["HAR", "NTH", "SKY"]}


@pytest.fixture(scope="module")
def legs() -> Iterator[duckdb.DuckDBPyConnection]:
    yield from database(
        "CREATE TABLE legs (leg_id INTEGER, origin VARCHAR, dest VARCHAR, arr_time INTEGER, arr_delay INTEGER, "
        "dep_delay INTEGER, sea_time INTEGER)",
        "INSERT INTO legs VALUES (1, 'HAR', 'SKY', 900, 5, 10, 60), (2, 'HAR', 'NTH', 1000, -2, 0, 30), "
        "(3, 'NTH', 'SKY', 1100, 20, 15, 45)")


def ask_legs(data: duckdb.DuckDBPyConnection, question: str) -> list[tuple[object, ...]]:
    made = plan_question(question, [LEGS], [GAIN], values_of=lambda _, column: LEG_VALUES.get(column, []))
    assert not made.unaccounted, made
    return sorted(data.execute(made.sql).fetchall())


@pytest.mark.parametrize(("question", "expected"), [
    # "arrival port" is where the legs went, none of the columns whose names start with "arr"
    ("Number of legs per arrival port", [("NTH", 1), ("SKY", 2)]),
    ("Average sea time by departure port", [("HAR", 45.0), ("NTH", 45.0)]),
    # "a HAR departure": a leg that left HAR, the place said before it
    ("worst arrival delay for a HAR departure?", [(5,)]),
])
def test_a_noun_of_a_role_names_the_place_of_that_role(legs: duckdb.DuckDBPyConnection, question: str,
                                                       expected: list[tuple[object, ...]]) -> None:
    assert ask_legs(legs, question) == expected


def test_a_place_the_terms_description_says_after_its_label_is_the_terms(legs: duckdb.DuckDBPyConnection) -> None:
    # "at sea" is where the term's minutes were gained, not the column sea_time
    assert ask_legs(legs, "In total, how many minutes did HAR legs gain at sea?") == [(7,)]


def test_a_phrase_set_apart_inside_a_wh_question_opens_no_yes_or_no(data: duckdb.DuckDBPyConnection) -> None:
    # ("is" after the comma had opened a clause of its own: "whether any port is Skye's", answered yes)
    made = plan("How deep, in metres, is the harbour of Skye?")
    assert "> 0" not in made.sql and 6 in data.execute(made.sql).fetchall()[0], made.sql
    made = plan("How deep, in metres, was the deepest port?")
    assert [row[-1] for row in data.execute(made.sql).fetchall()] == [20], made.sql


def test_a_clause_after_a_comma_still_asks_yes_or_no(data: duckdb.DuckDBPyConnection) -> None:
    assert answer(data, "Of the Islander trips, did any leave from NTH?")[0][0] is True
