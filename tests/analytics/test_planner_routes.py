"""Routes in a table of journeys: "the 5 busiest routes", "the longest origin-destination routes by distance"
rank the pairs of where a journey starts and where it ends; "flights on routes longer than …" does not."""

from __future__ import annotations

from collections.abc import Iterator

import duckdb
import pytest

from convener.analytics.planner import plan_question
from convener.analytics.shapes import ColumnInfo, TableInfo
from tests.analytics.small_tables import database

FERRIES = TableInfo("sailings", (
    ColumnInfo("origin", "STRING", "Port the sailing left from"),
    ColumnInfo("dest", "STRING", "Destination port"),
    ColumnInfo("distance", "INTEGER", "Distance sailed, in miles")), description="One row per sailing.")
ROWS = [("A", "B", 10), ("A", "B", 10), ("A", "B", 10), ("B", "A", 10), ("A", "C", 40), ("C", "A", 40), ("C", "A", 40)]


@pytest.fixture(scope="module")
def data() -> Iterator[duckdb.DuckDBPyConnection]:
    rows = ", ".join(f"('{o}', '{d}', {m})" for o, d, m in ROWS)
    yield from database("CREATE TABLE sailings (origin VARCHAR, dest VARCHAR, distance INTEGER)",
                        f"INSERT INTO sailings VALUES {rows}")


@pytest.mark.parametrize(("question", "expected"), [
    ("Which 2 routes had the most sailings?", [("A", "B", 3), ("C", "A", 2)]),
    ("What are the 2 busiest routes of the sailings?", [("A", "B", 3), ("C", "A", 2)]),
    ("Top 2 busiest routes (origin and destination pairs) by sailing count.", [("A", "B", 3), ("C", "A", 2)]),
    ("The 2 longest origin-destination routes by distance?", [("A", "C", 40), ("C", "A", 40)]),
    # "most frequently" with what the rows did, six words before "routes": ranked by their number
    ("What are the 2 most frequently sailed origin-destination routes?", [("A", "B", 3), ("C", "A", 2)]),
])
def test_routes_ranked_are_the_pairs_of_start_and_end(data: duckdb.DuckDBPyConnection, question: str,
                                                      expected: list[tuple[object, ...]]) -> None:
    made = plan_question(question, [FERRIES])
    assert not made.unaccounted and sorted(data.execute(made.sql).fetchall(), key=lambda r: (-r[2], r)) == expected, \
        made.sql


def test_sailings_on_routes_of_some_length_are_the_sailings(data: duckdb.DuckDBPyConnection) -> None:
    made = plan_question("How many sailings were on routes longer than 20 miles?", [FERRIES])
    assert "GROUP BY" not in made.sql and data.execute(made.sql).fetchall() == [(3,)], made.sql


def test_a_superlative_route_without_a_number_is_the_route_ranked_first(
        data: duckdb.DuckDBPyConnection) -> None:
    # not each route's shortest distance: the route whose distance is the shortest (both ways tie)
    made = plan_question("What is the shortest route distance among the sailings?", [FERRIES])
    assert sorted(data.execute(made.sql).fetchall()) == [("A", "B", 10), ("B", "A", 10)]


def test_a_route_among_the_columns_shown_is_its_two_ends(data: duckdb.DuckDBPyConnection) -> None:
    # ("route" had been a word nothing in the data matched, and the question declined)
    made = plan_question("Show the sailings longer than 20 miles: distance, route and origin", [FERRIES])
    assert not made.unaccounted
    # (the origin said again is shown once)
    assert sorted(data.execute(made.sql).fetchall()) == [(40, "A", "C"), (40, "C", "A"), (40, "C", "A")]
