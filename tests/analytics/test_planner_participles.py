"""Participles around a joined table's rows: "trips flown by boats built before 1990" (who did it, described
by a participle: no group of each builder), "built" for a year the description says the boat "was
manufactured" in, and "trips assigned to boats …" (the join, which the plan makes). On a small ferry schema
of its own."""

from __future__ import annotations

from collections.abc import Iterator

import duckdb
import pytest

from convener.analytics.planner import NoPlan, Plan, Relationship, plan_question
from convener.analytics.shapes import ColumnInfo, TableInfo
from tests.analytics.small_tables import database

TRIPS = TableInfo("trips", (
    ColumnInfo("trip_id", "INTEGER", "Identifier of the trip"),
    ColumnInfo("hull", "STRING", "Hull number of the boat; the boats table describes the boat"),
    ColumnInfo("minutes", "INTEGER", "Length of the crossing in minutes"),
), description="Ferry trips of 2024: one row per trip.")
BOATS = TableInfo("boats", (
    ColumnInfo("hull", "STRING", "Hull number of the boat"),
    ColumnInfo("year", "INTEGER", "Year the boat was manufactured"),
    ColumnInfo("manufacturer", "STRING", "Manufacturer of the boat"),
), description="Boats: one row per boat.")
BY_HULL = (Relationship("trips", ("hull",), "boats", ("hull",)),)
VALUES = {("boats", "manufacturer"): ["ALPHA", "BETA"], ("trips", "hull"): ["H1", "H2", "H3"],
          ("boats", "hull"): ["H1", "H2", "H3"]}


@pytest.fixture(scope="module")
def data() -> Iterator[duckdb.DuckDBPyConnection]:
    yield from database(
        "CREATE TABLE trips (trip_id INTEGER, hull VARCHAR, minutes INTEGER)",
        "INSERT INTO trips VALUES (1, 'H1', 30), (2, 'H1', 35), (3, 'H2', 40), (4, 'H3', 45)",
        "CREATE TABLE boats (hull VARCHAR, year INTEGER, manufacturer VARCHAR)",
        "INSERT INTO boats VALUES ('H1', 1985, 'ALPHA'), ('H2', 1995, 'ALPHA'), ('H3', 2005, 'BETA')")


def plan(question: str) -> Plan:
    return plan_question(question, [TRIPS], values_of=lambda t, c: VALUES.get((t, c), []),
                         relationships=BY_HULL, related=[BOATS])


@pytest.mark.parametrize("question", [
    "How many trips were made by boats manufactured before 1990?",
    "How many trips were operated by boats built before 1990?",
    "How many trips used boats built before 1990?",
    "How many trips were assigned to boats built before 1990?",
])
def test_a_participle_before_a_condition_says_what_its_column_records(data: duckdb.DuckDBPyConnection,
                                                                       question: str) -> None:
    made = plan(question)
    assert not made.unaccounted, made
    assert data.execute(made.sql).fetchall() == [(2,)], made.sql


def test_by_after_a_participle_names_who_did_it_not_groups(data: duckdb.DuckDBPyConnection) -> None:
    made = plan("How many trips were operated by boats manufactured before 2000?")
    assert "GROUP BY" not in made.sql and data.execute(made.sql).fetchall() == [(3,)], made.sql


def test_a_group_of_each_is_still_a_group(data: duckdb.DuckDBPyConnection) -> None:
    made = plan("How many trips were operated by each manufacturer?")
    assert sorted(data.execute(made.sql).fetchall()) == [("ALPHA", 3), ("BETA", 1)], made.sql


def test_a_participle_of_another_deed_is_not_the_years() -> None:
    try:
        made = plan("How many trips were assigned to boats repainted before 1990?")
    except NoPlan:
        return
    assert made.unaccounted, made
