""""Leave out" before the rows' own noun and a value, on a small schema of ringed birds: "leaving out the
birds from North" excludes North's birds, as "the ones from North" does."""

from __future__ import annotations

from collections.abc import Iterator

import duckdb
import pytest

from convener.analytics.shapes import ColumnInfo, TableInfo
from tests.analytics.small_tables import database, planner

BIRDS = TableInfo("birds", (
    ColumnInfo("tag", "STRING", "Tag of the bird"), ColumnInfo("site", "STRING", "Site"),
    ColumnInfo("wing_mm", "FLOAT", "Wing length in mm")),
    description="Birds ringed: one row per bird.")
VALUES = {"site": ["North", "South"]}


@pytest.fixture(scope="module")
def data() -> Iterator[duckdb.DuckDBPyConnection]:
    yield from database(
        "CREATE TABLE birds (tag VARCHAR, site VARCHAR, wing_mm DOUBLE)",
        "INSERT INTO birds VALUES ('a', 'North', 70), ('b', 'South', 40), ('c', 'South', 50)")


plan = planner(BIRDS, VALUES)


@pytest.mark.parametrize("question", [
    "What's the average wing length if we leave out birds from North?",
    "What's the average wing length of birds, leaving out the birds from North?",
])
def test_leaving_out_the_rows_named_again_excludes_the_value(data: duckdb.DuckDBPyConnection,
                                                             question: str) -> None:
    made = plan(question)
    assert not made.unaccounted and data.execute(made.sql).fetchall() == [(45.0,)]


def test_leaving_out_the_ones_that_meet_a_true_false_condition_keeps_the_others() -> None:
    # (the condition had been kept, "leaving out" passed over: the total of the very rows to leave out)
    flown = planner(TableInfo("flights", (ColumnInfo("flight_id", "INTEGER"), ColumnInfo("distance", "INTEGER"),
                                          ColumnInfo("cancelled", "BOOLEAN", "Whether the flight was cancelled")),
                              description="Flights: one row per flight."), {})
    made = flown("Total distance of the flights, leaving out the ones that got cancelled?")
    assert 'WHERE NOT "cancelled"' in made.sql and not made.unaccounted, made


def test_birds_that_left_out_of_a_site_left_from_it() -> None:
    # ("left out of North" had excluded North)
    assert plan("How many birds left out of North?").sql.endswith("""WHERE "site" = 'North'""")
    assert plan("Quick check: how many birds are there?").sql.startswith("SELECT COUNT(*)")
