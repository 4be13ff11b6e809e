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
