"""Groups of several columns named together as one ("species-island combinations", "species and island pairs"):
each column a key. On a small table of its own."""

from __future__ import annotations

from collections.abc import Iterator

import duckdb
import pytest

from convener.analytics.shapes import ColumnInfo, TableInfo
from tests.analytics.small_tables import answerer, database, planner

BIRDS = TableInfo("birds", (ColumnInfo("species", "STRING"), ColumnInfo("island", "STRING"),
                            ColumnInfo("mass", "INTEGER", "Body mass in grams")),
                  description="Birds sampled on the islands: one row per bird.")
ROWS = [("Adelie", "Dream", 3000), ("Adelie", "Dream", 3200), ("Adelie", "Biscoe", 3500), ("Gentoo", "Biscoe", 5000),
        ("Gentoo", "Biscoe", 5200), ("Gentoo", "Biscoe", 5400)]
plan = planner(BIRDS, {"species": ["Adelie", "Gentoo"], "island": ["Biscoe", "Dream"]})
answer = answerer(plan)


@pytest.fixture(scope="module")
def data() -> Iterator[duckdb.DuckDBPyConnection]:
    yield from database("CREATE TABLE birds (species VARCHAR, island VARCHAR, mass INTEGER)",
                        "INSERT INTO birds VALUES " + ", ".join(f"('{s}', '{i}', {m})" for s, i, m in ROWS))


@pytest.mark.parametrize(("question", "expected"), [
    ("Which two species-island combinations have the most birds?", [("Gentoo", "Biscoe", 3), ("Adelie", "Dream", 2)]),
    ("number of birds per species and island pair", [("Adelie", "Biscoe", 1), ("Adelie", "Dream", 2),
                                                     ("Gentoo", "Biscoe", 3)]),
    ("Which species/island group has the highest average mass?", [("Gentoo", "Biscoe", 5200)]),
])
def test_columns_named_together_as_one_group_are_each_a_key(data: duckdb.DuckDBPyConnection, question: str,
                                                            expected: list[tuple[object, ...]]) -> None:
    # (before, the first column was the key and the others words the data had nothing for)
    assert sorted(answer(data, question), key=lambda row: -float(str(row[2]))) == \
        sorted(expected, key=lambda row: -float(str(row[2])))


def test_one_column_before_a_noun_of_groups_is_no_combination(data: duckdb.DuckDBPyConnection) -> None:
    assert sorted(answer(data, "number of birds per species group")) == [("Adelie", 3), ("Gentoo", 3)]
