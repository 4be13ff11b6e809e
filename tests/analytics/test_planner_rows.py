"""What a question's words say about the rows themselves: another name for them ("one row per penguin
(nest)"), "per flight" as each row rather than a group, a superlative of a measure with no row asked for,
and "the most cancellations" as a count of the rows a condition keeps."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date

import duckdb
import pytest

from convener.analytics.planner import Plan, Term, plan_question
from convener.analytics.shapes import ColumnInfo, TableInfo
from tests.analytics.small_tables import database

FLIGHTS = TableInfo("flights", (ColumnInfo("flight", "INTEGER", "Flight number"),
                                ColumnInfo("carrier", "STRING", samples=("UA", "DL")),
                                ColumnInfo("flight_date", "DATE"), ColumnInfo("seats", "INTEGER"),
                                ColumnInfo("cancelled", "BOOLEAN", "Whether the flight was cancelled")),
                    description="Flights: one row per flight.")
NESTS = TableInfo("penguins", (ColumnInfo("island", "STRING", samples=("Dream", "Biscoe")),
                               ColumnInfo("body_mass_g", "INTEGER", "Body mass in grams")),
                  description="Penguins: one row per penguin (nest).")
CANCELLED = Term("cancelled flight", "A flight that never departed, that is flights whose cancelled = true.",
                 ("cancellation", "cancellations"))


@pytest.fixture(scope="module")
def data() -> Iterator[duckdb.DuckDBPyConnection]:
    yield from database(
        "CREATE TABLE flights (flight INTEGER, carrier VARCHAR, flight_date DATE, seats INTEGER, cancelled BOOLEAN)",
        "INSERT INTO flights VALUES (1, 'UA', '2013-01-05', 100, true), (1, 'UA', '2013-02-05', 200, false), "
        "(2, 'DL', '2013-02-06', 150, true), (3, 'DL', '2013-02-07', 50, true)",
        "CREATE TABLE penguins (island VARCHAR, body_mass_g INTEGER)",
        "INSERT INTO penguins VALUES ('Dream', 3500), ('Dream', 4100), ('Biscoe', 5000)")


def plan(question: str) -> Plan:
    return plan_question(question, [FLIGHTS], [CANCELLED])


def test_a_name_in_parentheses_after_the_row_noun_also_names_the_rows(data: duckdb.DuckDBPyConnection) -> None:
    assert data.execute(plan_question("How many nests were on Dream?", [NESTS]).sql).fetchall() == [(2,)]


def test_a_superlative_of_a_measure_with_no_row_asked_for_is_its_extreme(data: duckdb.DuckDBPyConnection) -> None:
    sql = plan_question("heaviest body mass recorded for a penguin on Dream", [NESTS]).sql
    assert data.execute(sql).fetchall() == [(4100,)]


def test_per_the_tables_own_row_noun_is_each_row_not_a_group(data: duckdb.DuckDBPyConnection) -> None:
    assert data.execute(plan("What was the average number of seats per flight?").sql).fetchall() == [(125.0,)]
    # a column other than the rows' own noun still groups
    assert len(data.execute(plan("What was the average number of seats per carrier?").sql).fetchall()) == 2


def test_the_most_of_a_condition_counts_the_rows_it_keeps(data: duckdb.DuckDBPyConnection) -> None:
    rows = data.execute(plan("Which month had the most cancellations?").sql).fetchall()
    assert [(str(row[0])[:10], row[-1]) for row in rows] == [(str(date(2013, 2, 1)), 2)]


def test_per_a_noun_of_a_row_made_of_several_things_still_groups() -> None:
    stocks = TableInfo("stocks", (ColumnInfo("symbol", "STRING"), ColumnInfo("date", "DATE"),
                                  ColumnInfo("price", "FLOAT")), description="One row per symbol and month.")
    assert 'GROUP BY "symbol"' in plan_question("average price per symbol", [stocks]).sql


def test_a_ranking_of_rows_shows_the_key_a_date_and_text_columns_up_to_six() -> None:
    penguins = TableInfo("penguins", (
        ColumnInfo("individual_id", "STRING", "Identifier of the penguin"), ColumnInfo("study", "STRING"),
        ColumnInfo("species", "STRING"), ColumnInfo("island", "STRING"), ColumnInfo("complete", "BOOLEAN"),
        ColumnInfo("egg_date", "DATE"), ColumnInfo("body_mass_g", "INTEGER", "Body mass in grams"),
        ColumnInfo("sex", "STRING"), ColumnInfo("colony", "STRING")),
        description="Penguins: one row per penguin.")
    shown = plan_question("Top 5 heaviest penguins?", [penguins]).sql.split(" FROM ")[0]
    # in the table's order; numbers and booleans never label rows, and the sixth text column finds no room
    assert shown == 'SELECT "individual_id", "study", "species", "island", "egg_date", "sex", "body_mass_g"'
    # a number column named as the rows are ("flight", a flight's number) is their key
    assert plan("Which 2 flights had the most seats?").sql.split(" FROM ")[0] == \
        'SELECT "flight", "carrier", "flight_date", "seats"'
