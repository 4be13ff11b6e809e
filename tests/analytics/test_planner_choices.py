"""Two groups to choose between, and a verb that says where rows went: "Were there more trips by Northwind or by
Islander?" (each group's count answers it; "how many … by Northwind or Islander" stays one count), "Did all of
the Northwind trips depart from HAR?" ("depart", which two columns abbreviate, is where they left from). On a
small ferry schema of its own."""

from __future__ import annotations

from collections.abc import Iterator

import duckdb
import pytest

from convener.analytics.shapes import ColumnInfo, TableInfo
from tests.analytics.small_tables import answerer, database, planner

SAILINGS = TableInfo("sailings", (
    ColumnInfo("sailing_id", "INTEGER", "Identifier of the sailing"),
    ColumnInfo("operator", "STRING", "Company that ran the sailing"),
    ColumnInfo("port", "STRING", "Port the sailing left from"),
    ColumnInfo("dep_time", "INTEGER", "Actual departure time of day, HHMM"),
    ColumnInfo("dep_delay", "INTEGER", "Departure delay in minutes"),
), description="Ferry sailings in 2024: one row per sailing.")


@pytest.fixture(scope="module")
def data() -> Iterator[duckdb.DuckDBPyConnection]:
    yield from database(
        "CREATE TABLE sailings (sailing_id INTEGER, operator VARCHAR, port VARCHAR, dep_time INTEGER, "
        "dep_delay INTEGER)",
        "INSERT INTO sailings VALUES (1, 'Northwind', 'HAR', 700, 5), (2, 'Northwind', 'HAR', 900, 0), "
        "(3, 'Islander', 'NTH', 1000, 20), (4, 'Northwind', 'HAR', 1300, 2), (5, 'Islander', 'HAR', 1500, 0)")


answer = answerer(planner(SAILINGS, {"operator": ["Northwind", "Islander"], "port": ["HAR", "NTH"]}))


def test_more_rows_of_one_group_or_another_is_answered_by_each_groups_count(data: duckdb.DuckDBPyConnection) -> None:
    assert sorted(answer(data, "Were there more sailings by Northwind or by Islander?")) == [
        ("Islander", 2), ("Northwind", 3)]
    assert answer(data, "How many sailings were by Northwind or Islander?") == [(5,)]


def test_a_verb_before_a_place_says_where_the_rows_went(data: duckdb.DuckDBPyConnection) -> None:
    assert answer(data, "Did all of the Northwind sailings depart from HAR?") == [(True,)]
    assert answer(data, "Did all of the Islander sailings depart from HAR?") == [(False,)]


def test_a_verb_of_leaving_right_before_the_place(data: duckdb.DuckDBPyConnection) -> None:
    assert answer(data, "How many sailings departing HAR were there?") == [(4,)]
