"""A ranking's N before a value that names the rows it counts, on a small schema of ringed birds: "the five
Robins with the shallowest bills" is five Robins, not the one with the shallowest bill."""

from __future__ import annotations

from collections.abc import Iterator

import duckdb
import pytest

from convener.analytics.shapes import ColumnInfo, TableInfo
from tests.analytics.small_tables import database, planner

BIRDS = TableInfo("birds", (
    ColumnInfo("tag", "STRING", "Tag of the bird"), ColumnInfo("kind", "STRING", "Kind of bird"),
    ColumnInfo("site", "STRING", "Site where it was ringed"),
    ColumnInfo("wing_mm", "FLOAT", "Wing length in mm"),
    ColumnInfo("bill_depth_mm", "FLOAT", "Bill depth in mm")),
    description="Birds ringed in one season: one row per bird.")
VALUES = {"kind": ["Robin", "Wren", "Finch"], "site": ["North", "South"]}


@pytest.fixture(scope="module")
def data() -> Iterator[duckdb.DuckDBPyConnection]:
    yield from database(
        "CREATE TABLE birds (tag VARCHAR, kind VARCHAR, site VARCHAR, wing_mm DOUBLE, bill_depth_mm DOUBLE)",
        "INSERT INTO birds VALUES ('a', 'Robin', 'North', 70, 5.1), ('b', 'Robin', 'South', 72, 4.2), "
        "('c', 'Robin', 'North', 69, 4.8), ('d', 'Wren', 'South', 45, 3.0), ('e', 'Robin', 'South', 71, 5.5)")


plan = planner(BIRDS, VALUES)


@pytest.mark.parametrize(("question", "tags"), [
    ("Show the three Robins with the shallowest bills: tag, site and bill depth.", ["b", "c", "a"]),
    ("Show the 2 Robins with the shallowest bills: tag, site and bill depth.", ["b", "c"]),
    ("List the two Robins that had the deepest bills: tag and bill depth.", ["e", "a"]),
])
def test_the_value_after_the_number_names_the_rows(data: duckdb.DuckDBPyConnection, question: str,
                                                   tags: list[str]) -> None:
    made = plan(question)
    result = data.execute(made.sql)
    columns = [column[0] for column in result.description]
    assert [row[columns.index("tag")] for row in result.fetchall()] == tags
