"""A negated list of codes, each said by its name too, on a small schema of ringed birds: "other than Robin
(RO), Wren (WR) and Finch (FI)" leaves out all three, the last as much as the first; so does "none of Robin, Wren
or Finch"."""

from __future__ import annotations

from collections.abc import Iterator

import duckdb
import pytest

from convener.analytics.shapes import ColumnInfo, TableInfo
from tests.analytics.small_tables import database, planner

BIRDS = TableInfo("birds", (
    ColumnInfo("tag", "STRING", "Tag of the bird"), ColumnInfo("kind", "STRING", "Kind of bird"),
    ColumnInfo("site", "STRING", "Site"), ColumnInfo("wing_mm", "FLOAT", "Wing length in mm")),
    description="Birds ringed: one row per bird.")
VALUES = {"kind": ["RO", "WR", "FI", "JA"], "site": ["North", "South"]}


@pytest.fixture(scope="module")
def data() -> Iterator[duckdb.DuckDBPyConnection]:
    yield from database(
        "CREATE TABLE birds (tag VARCHAR, kind VARCHAR, site VARCHAR, wing_mm DOUBLE)",
        "INSERT INTO birds VALUES ('a', 'RO', 'North', 70), ('b', 'WR', 'South', 45), "
        "('c', 'FI', 'North', 60), "
        "('d', 'JA', 'South', 90), ('e', 'JA', 'North', 95), ('f', 'FI', 'South', 61), "
        "('g', 'JA', 'South', 88)")


plan = planner(BIRDS, VALUES)


@pytest.mark.parametrize("question", [
    "How many birds were of kinds other than Robin (RO), Wren (WR) and Finch (FI)?",
    "How many birds were not Robin (RO), Wren (WR) or Finch (FI)?",
    "How many birds were none of Robin, Wren or Finch (RO, WR, FI)?",
    "How many birds were of a kind that is none of RO, WR or FI?",
])
def test_each_value_said_by_its_name_stays_in_the_negated_list(data: duckdb.DuckDBPyConnection,
                                                               question: str) -> None:
    made = plan(question)
    assert not made.unaccounted and data.execute(made.sql).fetchall() == [(3,)]
