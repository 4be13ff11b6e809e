"""Words that restate what the table's description says of every row: a name it spells out said by its
initials ("RH" for Rotterdam Harbour) adds nothing to the question, and a group key said with them ("each
Rotterdam Harbour warehouse", "per RH warehouse") is the one column whose description says both the name and
the noun. On a small parcels schema of its own."""

from __future__ import annotations

from collections.abc import Iterator

import duckdb
import pytest

from convener.analytics.planner import NoPlan, Plan, Relationship, Term, plan_question
from convener.analytics.shapes import ColumnInfo, TableInfo
from tests.analytics.small_tables import database

PARCELS = TableInfo("parcels", (
    ColumnInfo("parcel_id", "INTEGER", "Identifier of the parcel"),
    ColumnInfo("origin_site", "STRING", "Code of the Rotterdam Harbour warehouse the parcel left from: W1 or W2"),
    ColumnInfo("dest_site", "STRING", "Code of the warehouse the parcel was delivered to"),
    ColumnInfo("weight", "FLOAT", "Weight of the parcel in kilograms"),
    ColumnInfo("lost", "BOOLEAN", "Whether the parcel was lost"),
), description="Parcels sent from the two warehouses of Rotterdam Harbour (W1, W2) in 2020: one row per parcel.")
VALUES = {("parcels", "origin_site"): ["W1", "W2"], ("parcels", "dest_site"): ["D1", "D2", "D3"]}


@pytest.fixture(scope="module")
def data() -> Iterator[duckdb.DuckDBPyConnection]:
    yield from database(
        "CREATE TABLE parcels (parcel_id INTEGER, origin_site VARCHAR, dest_site VARCHAR, weight DOUBLE, "
        "lost BOOLEAN)",
        "INSERT INTO parcels VALUES (1, 'W1', 'D1', 2.0, false), (2, 'W1', 'D2', 6.0, true), "
        "(3, 'W2', 'D1', 8.0, false), (4, 'W1', 'D3', 1.0, false), (5, 'W2', 'D2', 3.0, true)")


def plan(question: str) -> Plan:
    return plan_question(question, [PARCELS], values_of=lambda t, c: VALUES.get((t, c), []))


def answer(data: duckdb.DuckDBPyConnection, question: str) -> list[tuple[object, ...]]:
    made = plan(question)
    assert not made.unaccounted, made
    return sorted(data.execute(made.sql).fetchall())


@pytest.mark.parametrize("question", [
    "How many parcels left each Rotterdam Harbour warehouse?",
    "Number of parcels from each of the two Rotterdam Harbour warehouses.",
    "How many parcels per RH warehouse?",
    "Count the parcels sent from each RH warehouse.",
])
def test_a_key_said_with_the_descriptions_name_is_the_column_whose_description_says_both(
        data: duckdb.DuckDBPyConnection, question: str) -> None:
    assert answer(data, question) == [("W1", 3), ("W2", 2)]


def test_a_measure_per_key_said_so(data: duckdb.DuckDBPyConnection) -> None:
    assert answer(data, "Average weight in kilograms per RH origin site.") == [("W1", 3.0), ("W2", 5.5)]


@pytest.mark.parametrize(("question", "expected"), [
    ("How many RH parcels were lost?", [(2,)]),
    ("What is the maximum weight of the parcels out of Rotterdam Harbour?", [(8.0,)]),
    ("Total weight of the RH parcels in kilograms?", [(20.0,)]),
])
def test_initials_of_a_name_the_description_spells_out_add_nothing(
        data: duckdb.DuckDBPyConnection, question: str, expected: list[tuple[object, ...]]) -> None:
    assert answer(data, question) == expected


def test_other_initials_are_still_not_understood() -> None:
    with pytest.raises(NoPlan, match="XYZ"):
        plan("How many XYZ parcels were lost?")


def test_a_noun_no_column_describes_with_the_name_is_no_key() -> None:
    # "depot" is in no column's description: no column is the key, and the word is not understood
    made = None
    try:
        made = plan("How many parcels left each Rotterdam Harbour depot?")
    except NoPlan:
        return
    assert made.unaccounted, made



WAREHOUSES = TableInfo("warehouses", (ColumnInfo("site", "STRING", "Code of the warehouse"),
                                      ColumnInfo("city", "STRING", "City of the warehouse")),
                       description="Warehouses of the company: one row per warehouse.")
LOSSES = [Term("loss", "A parcel that was lost, that is parcels whose lost = true.", ("losses",))]
# a warehouse code that is also the initials of the parcels' harbour: said, it names a warehouse too
BOTH = {**VALUES, ("warehouses", "site"): ["RH", "W1", "W2"]}


@pytest.mark.parametrize("question", ["losses by RH warehouse", "How many losses did each RH warehouse have?"])
def test_a_tables_noun_said_as_another_tables_column_describes_it_is_that_column(
        data: duckdb.DuckDBPyConnection, question: str) -> None:
    """"each RH warehouse" is the parcels' origin site, whose description says "Rotterdam Harbour warehouse",
    not the warehouses table, whose noun it is (and one of whose codes "RH" is)."""
    made = plan_question(question, [PARCELS, WAREHOUSES], LOSSES, values_of=lambda t, c: BOTH.get((t, c), []))
    assert sorted(data.execute(made.sql).fetchall()) == [("W1", 1), ("W2", 1)]


def test_a_tables_noun_after_no_describing_word_is_that_table() -> None:
    made = plan_question("How many warehouses are there?", [PARCELS, WAREHOUSES], LOSSES,
                         values_of=lambda t, c: BOTH.get((t, c), []))
    assert '"warehouses"' in made.sql



def test_the_word_that_says_a_noun_is_another_tables_column_is_no_value_of_the_nouns_table() -> None:
    """"RH" is one of the warehouses' codes, but in "each RH warehouse" it says which column of the parcels the
    warehouse is: it does not make the question about the warehouses (nor, counted, about the couriers)."""
    parcels = TableInfo("parcels", (*PARCELS.columns, ColumnInfo("courier", "STRING", "Code of the courier")),
                        description=PARCELS.description)
    couriers = TableInfo("couriers", (ColumnInfo("courier", "STRING", "Code of the courier"),
                                      ColumnInfo("name", "STRING", "Name of the courier")),
                         description="Couriers: one row per courier.")
    relationships = [Relationship("parcels", ("courier",), "couriers", ("courier",)),
                     Relationship("parcels", ("dest_site",), "warehouses", ("site",))]
    made = plan_question("how many different couriers left each RH warehouse?", [parcels],
                         LOSSES, values_of=lambda t, c: BOTH.get((t, c), []), relationships=relationships,
                         related=[WAREHOUSES, couriers])
    assert 'COUNT(DISTINCT "courier")' in made.sql and 'GROUP BY "origin_site"' in made.sql, made.sql


def test_a_name_the_description_spells_out_said_the_other_way_round_is_not_understood() -> None:
    # every parcel was sent from Rotterdam Harbour: "sent to RH" says something no parcel is
    with pytest.raises(NoPlan, match="RH"):
        plan("How many parcels were sent to RH?")
    assert not plan("How many parcels were sent from RH?").unaccounted
