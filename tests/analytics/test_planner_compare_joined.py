"""Groups compared by the names of a joined table's rows ("Speedy vs Rapid"), on a small courier schema:
each group is the key the rows are joined by, its name shown beside it."""

from __future__ import annotations

from collections.abc import Iterator

import duckdb
import pytest

from convener.analytics.planner import Plan, Relationship, plan_question
from convener.analytics.shapes import ColumnInfo, TableInfo
from tests.analytics.small_tables import database

PARCELS = TableInfo("parcels", (ColumnInfo("parcel_id", "INTEGER"), ColumnInfo("courier", "STRING"),
                                ColumnInfo("region", "STRING"),
                                ColumnInfo("minutes", "INTEGER", "Minutes from pick-up to delivery")),
                    description="One row per parcel delivered.")
COURIERS = TableInfo("couriers", (ColumnInfo("courier", "STRING", "Courier code"),
                                  ColumnInfo("name", "STRING", "Full name of the courier")),
                     description="Couriers: one row per courier.")
NAMES = {"SP": "Speedy Couriers Ltd", "RP": "Rapid Post Inc.", "SL": "Slowcoach Freight"}
VALUES = {("parcels", "courier"): sorted(NAMES), ("parcels", "region"): ["North", "South"],
          ("couriers", "courier"): sorted(NAMES), ("couriers", "name"): sorted(NAMES.values())}
BY_COURIER = (Relationship("parcels", ("courier",), "couriers", ("courier",)),)


@pytest.fixture(scope="module")
def data() -> Iterator[duckdb.DuckDBPyConnection]:
    names = ", ".join(f"('{code}', '{name}')" for code, name in NAMES.items())
    yield from database("CREATE TABLE parcels (parcel_id INTEGER, courier VARCHAR, region VARCHAR, "
                        "minutes INTEGER)",
                        "INSERT INTO parcels VALUES (1, 'SP', 'North', 30), (2, 'SP', 'South', 50), "
                        "(3, 'RP', 'North', 40), (4, 'SL', 'North', 90), (5, 'SP', 'North', 20)",
                        "CREATE TABLE couriers (courier VARCHAR, name VARCHAR)",
                        f"INSERT INTO couriers VALUES {names}")


def plan(question: str) -> Plan:
    return plan_question(question, [PARCELS], values_of=lambda t, c: VALUES.get((t, c), []),
                         relationships=BY_COURIER, related=[COURIERS])


@pytest.mark.parametrize(("question", "expected"), [
    ("Speedy vs Rapid in the North — how many parcels did each deliver?",
     [("RP", "Rapid Post Inc.", 1), ("SP", "Speedy Couriers Ltd", 2)]),
    ("Compare the average minutes of Speedy Couriers and Slowcoach Freight.",
     [("SL", "Slowcoach Freight", 90.0), ("SP", "Speedy Couriers Ltd", 100 / 3)]),
])
def test_groups_named_by_a_joined_table_are_its_keys_with_the_names_beside(
        data: duckdb.DuckDBPyConnection, question: str, expected: list[tuple[object, ...]]) -> None:
    assert data.execute(plan(question).sql).fetchall() == expected
