"""Question forms a new writer used that earlier readings missed, each read as a general rule on tables of
another domain (orders of shops, runners of races): "the N <joined table's rows> with the highest …", a
direction with nothing to rank, "whose <column> is recorded", "<column>, oldest first"."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import date
from typing import Any

import duckdb
import pytest

from convener.analytics.pipeline import _describe
from convener.analytics.planner import NoPlan, Plan, Relationship, plan_question
from convener.analytics.shapes import ColumnInfo, QueryResult, ResultColumn, TableInfo
from tests.analytics.small_tables import database

ORDERS = TableInfo("orders", (
    ColumnInfo("order_id", "INTEGER"), ColumnInfo("vendor", "STRING", "Code of the supplier; the suppliers table names it"),
    ColumnInfo("order_date", "DATE"), ColumnInfo("amount", "FLOAT", "Amount paid, in dollars"),
    ColumnInfo("shipping_cost", "FLOAT", "Shipping cost, in dollars"),
    ColumnInfo("channel", "STRING", "Where the order was placed; null when unknown")),
    description="Orders: one row per order.")
SUPPLIERS = TableInfo("suppliers", (ColumnInfo("vendor", "STRING"), ColumnInfo("name", "STRING", "Full name")),
                      description="Suppliers: one row per supplier.")
JOIN = Relationship("orders", ("vendor",), "suppliers", ("vendor",))
VALUES = {("orders", "vendor"): ["A", "B", "C", "D"], ("orders", "channel"): ["web", "store"],
          ("suppliers", "vendor"): ["A", "B", "C", "D"],
          ("suppliers", "name"): ["Alder", "Birch", "Cedar", "Dogwood"]}


def values_of(table: str, column: str) -> list[str]:
    return VALUES.get((table, column), [])


def plan(question: str) -> Plan:
    return plan_question(question, [ORDERS], values_of=values_of, relationships=(JOIN,), related=[SUPPLIERS])


@pytest.fixture(scope="module")
def data() -> Iterator[duckdb.DuckDBPyConnection]:
    yield from database(
        "CREATE TABLE suppliers (vendor VARCHAR, name VARCHAR)",
        "INSERT INTO suppliers VALUES ('A', 'Alder'), ('B', 'Birch'), ('C', 'Cedar'), ('D', 'Dogwood')",
        "CREATE TABLE orders (order_id INTEGER, vendor VARCHAR, order_date DATE, amount DOUBLE, "
        "shipping_cost DOUBLE, channel VARCHAR)",
        "INSERT INTO orders VALUES (1, 'A', '2024-01-03', 10, 2, 'web'), (2, 'A', '2024-01-09', 30, 4, NULL), "
        "(3, 'B', '2024-02-01', 50, 5, 'store'), (4, 'C', '2024-02-11', 5, 1, 'web'), "
        "(5, 'D', '2024-03-05', 40, 8, 'web'), (6, 'D', '2024-03-06', 20, 2, NULL)")


def rows(data: duckdb.DuckDBPyConnection, sql: str) -> list[tuple[Any, ...]]:
    return [tuple(round(v, 6) if isinstance(v, float) else v for v in row) for row in data.execute(sql).fetchall()]


def test_the_n_rows_of_a_joined_table_with_the_highest_aggregate_rank_its_groups(
        data: duckdb.DuckDBPyConnection) -> None:
    made = plan("Name the two suppliers with the highest average amount.")
    assert sorted(row[-1] for row in rows(data, made.sql)) == [30.0, 50.0]
    assert "Birch" in {value for row in rows(data, made.sql) for value in row}


@pytest.mark.parametrize("question", ["What is the highest average amount?",
                                      "Show the 2 suppliers with the highest average amount.",
                                      "Name the two couriers with the highest average amount."])
def test_a_superlative_with_nothing_it_ranks_is_never_dropped_silently(question: str) -> None:
    """Without a group, a limit or a column to rank by, "highest" would leave the table's one average
    presented as the answer."""
    try:
        made = plan_question(question, [ORDERS])
    except NoPlan:
        return
    assert made.unaccounted


@pytest.mark.parametrize(("question", "expected"), [
    ("For orders whose channel is recorded, what is the average amount of each channel?",
     [("store", 50.0), ("web", 18.333333)]),
    ("For how many orders is the channel not recorded?", [(2,)]),
    ("How many orders were there, leaving out the ones whose channel isn't known?", [(4,)]),
    ("How many orders were there, excluding those whose channel wasn't recorded?", [(4,)]),
    ("For how many orders was the channel not determined?", [(2,)]),  # (declined: "determined" unread)
    ("How many orders have an undetermined channel?", [(2,)]),
])
def test_whose_column_is_recorded_is_a_condition_on_it_being_filled(
        data: duckdb.DuckDBPyConnection, question: str, expected: list[tuple[Any, ...]]) -> None:
    made = plan(question)
    assert not made.unaccounted
    assert sorted(rows(data, made.sql)) == expected


@pytest.mark.parametrize(("question", "expected"), [
    ("How many web orders were sampled?", [(3,)]),
    ("How many orders does the sample contain in total?", [(6,)]),
])
def test_words_for_the_data_itself_and_in_total_leave_a_count_as_it_is(
        data: duckdb.DuckDBPyConnection, question: str, expected: list[tuple[Any, ...]]) -> None:
    made = plan(question)
    assert not made.unaccounted
    assert rows(data, made.sql) == expected


@pytest.mark.parametrize(("question", "first"), [
    ("List the order dates, vendors and amounts of the web orders, oldest date first.", (date(2024, 1, 3),)),
    ("List the order ids and amounts of the web orders, newest first.", (5,)),
])
def test_an_order_asked_for_keeps_every_row(data: duckdb.DuckDBPyConnection, question: str,
                                            first: tuple[Any, ...]) -> None:
    """"oldest date first" orders the rows; read as a ranking it would keep only the oldest."""
    made = plan(question)
    assert not made.unaccounted
    found = rows(data, made.sql)
    assert len(found) == 3
    assert found[0][:len(first)] == first


@pytest.mark.parametrize("question", ["Total amount per vendor, biggest total first.",
                                      "What's the average amount for each vendor, from the highest average to the lowest?",
                                      "number of orders per vendor, most orders first"])
def test_a_breakdown_in_the_order_asked_is_ordered_by_its_measure(data: duckdb.DuckDBPyConnection,
                                                                  question: str) -> None:
    made = plan(question)
    assert not made.unaccounted
    measures = [row[-1] for row in rows(data, made.sql)]
    assert len(measures) == 4 and measures == sorted(measures, reverse=True)


def test_at_least_one_row_of_a_kind_is_the_rows_that_kind_keeps(data: duckdb.DuckDBPyConnection) -> None:
    made = plan("Which vendors had at least one web order? List them alphabetically.")
    assert not made.unaccounted
    assert rows(data, made.sql) == [("A",), ("C",), ("D",)]


@pytest.mark.parametrize(("question", "expected"), [
    ("What is the average of amount divided by shipping cost across all orders?", [(7.083333,)]),
    ("average amount minus shipping cost of web orders", [(14.666667,)]),
    ("total amount plus shipping cost per channel", None),
])
def test_two_columns_joined_by_an_operator_are_one_computed_column(
        data: duckdb.DuckDBPyConnection, question: str, expected: list[tuple[Any, ...]] | None) -> None:
    made = plan(question)
    assert not made.unaccounted
    if expected is not None:
        assert rows(data, made.sql) == expected
    else:
        assert sorted(rows(data, made.sql), key=str) == [("store", 55.0), ("web", 66.0), (None, 56.0)]


def test_an_unknown_thing_asked_for_by_which_is_refused() -> None:
    """"Which courier …": what is asked for is not in the data; the rest would answer another question."""
    with pytest.raises(NoPlan):
        plan("Which courier delivered the most orders in the sample?")


def test_first_before_a_verb_is_no_order() -> None:
    """"the most orders first shipped": "first" goes with the verb, the ranking stays one."""
    made = plan("On which order date were the most orders first placed?")
    assert "LIMIT" in made.sql or "<=" in made.sql or ">=" in made.sql


def test_a_date_cut_into_years_shows_the_year_and_its_first_day(data: duckdb.DuckDBPyConnection) -> None:
    """The year as a number to read, and its first day as a date (a time axis; a bucket written DATE_TRUNC)."""
    made = plan("total amount per year")
    assert [(row[0], str(row[1])[:10], row[2]) for row in rows(data, made.sql)] == [(2024, "2024-01-01", 155.0)]
    ranked = plan("Which year had the most orders?")
    assert [(row[0], str(row[1])[:10]) for row in rows(data, ranked.sql)] == [(2024, "2024-01-01")]
    connection = sqlite3.connect(":memory:")
    connection.execute("CREATE TABLE orders (order_date TEXT, amount REAL)")
    connection.executemany("INSERT INTO orders VALUES (?, ?)", [("2023-05-02", 1.0), ("2024-01-09", 2.0)])
    by_year = plan_question("total amount per year", [ORDERS], dialect="sqlite").sql
    assert connection.execute(by_year).fetchall() == [(2023, "2023-01-01", 1.0), (2024, "2024-01-01", 2.0)]
    connection.close()


def test_a_year_is_written_without_a_thousands_separator() -> None:
    table = QueryResult(columns=(ResultColumn("year", "INTEGER"), ResultColumn("orders", "INTEGER")),
                        rows=[(2013, 1200), (2014, 1300)])
    assert _describe(table) == "2 rows of year, orders. The first: 2013, 1,200; 2014, 1,300."


def test_a_word_repeating_the_description_of_the_date_used_is_no_ranking(data: duckdb.DuckDBPyConnection) -> None:
    """"first shipped" of a date described as "Date the order was first shipped": its meaning, not the first."""
    shipped = TableInfo("orders", (ColumnInfo("order_id", "INTEGER"),
                                   ColumnInfo("order_date", "DATE", "Date the order was first shipped")),
                        description="Orders: one row per order.")
    made = plan_question("How many orders were first shipped in each month?", [shipped])
    assert not made.unaccounted
    assert [row[-1] for row in rows(data, made.sql)] == [2, 2, 2]


@pytest.mark.parametrize(("question", "expected"), [
    ("What was the date of the first web order of 2024?", "2024-01-03"),
    ("On what date was the last web order placed?", "2024-03-05"),
])
def test_the_first_or_last_row_past_its_conditions_is_a_superlative_of_time(
        data: duckdb.DuckDBPyConnection, question: str, expected: str) -> None:
    made = plan(question)
    assert not made.unaccounted
    assert [str(row[0])[:10] for row in rows(data, made.sql)] == [expected]


def test_a_year_column_is_never_averaged_unasked_beside_a_date_asked_for() -> None:
    signed = TableInfo("orders", (ColumnInfo("order_date", "DATE"), ColumnInfo("channel", "STRING", samples=("web",)),
                                  ColumnInfo("year", "INTEGER", "Year the customer signed up")),
                       description="Orders: one row per order.")
    made = plan_question("On what date was the first web order of the year?", [signed])
    assert "AVG" not in made.sql and made.unaccounted == ("year",)


@pytest.mark.parametrize(("question", "expected"), [
    ("Outside the web channel, how many orders were there?", [(1,)]),
    ("Leaving out vendor A, how many orders were there combined?", [(4,)]),
    ("How many orders came out of vendor A?", [(2,)]),
])
def test_outside_and_leaving_out_exclude_a_value(data: duckdb.DuckDBPyConnection, question: str,
                                                 expected: list[tuple[Any, ...]]) -> None:
    made = plan(question)
    assert not made.unaccounted
    assert rows(data, made.sql) == expected


def test_a_superlative_adjective_before_an_aggregate_ranks_groups_by_it() -> None:
    cables = TableInfo("cables", (ColumnInfo("supplier", "STRING"), ColumnInfo("cable_length_m", "INTEGER")),
                       description="Cables: one row per cable.")
    connection = duckdb.connect()
    connection.execute("CREATE TABLE cables (supplier VARCHAR, cable_length_m INTEGER)")
    connection.execute("INSERT INTO cables VALUES ('north', 10), ('north', 30), ('south', 5), ('south', 45), "
                       "('east', 12)")
    made = plan_question("Which supplier has the shortest average cable length?", [cables])
    assert not made.unaccounted
    assert [row[0] for row in connection.execute(made.sql).fetchall()] == ["east"]
    connection.close()


def test_a_joined_tables_rows_after_a_group_marker_are_its_groups(data: duckdb.DuckDBPyConnection) -> None:
    """"per supplier" where suppliers are another table: grouped by the column joining them, never dropped."""
    made = plan("total amount per supplier")
    assert sorted(rows(data, made.sql)) == [("A", "Alder", 40.0), ("B", "Birch", 50.0), ("C", "Cedar", 5.0),
                                            ("D", "Dogwood", 60.0)]
    named = plan("Sum of the amounts per supplier (full name), biggest total first.")
    assert not named.unaccounted
    assert [row[-2:] for row in rows(data, named.sql)] == [("Dogwood", 60.0), ("Birch", 50.0), ("Alder", 40.0),
                                                           ("Cedar", 5.0)]
    ranked = plan("Which supplier, by full name, had the most web orders?")
    assert sorted(row[0] for row in rows(data, ranked.sql)) == ["Alder", "Cedar", "Dogwood"]  # one web order each


def test_each_combination_of_two_columns_groups_by_both(data: duckdb.DuckDBPyConnection) -> None:
    made = plan("How many orders are there for each combination of vendor and channel?")
    assert not made.unaccounted
    assert len(rows(data, made.sql)) == 6


def test_which_n_calendar_months_rank_months(data: duckdb.DuckDBPyConnection) -> None:
    made = plan("Which 2 calendar months of 2024 had the fewest orders?")
    assert not made.unaccounted
    assert len(rows(data, made.sql)) == 3  # all three months have two orders: the tie is kept


def test_by_after_a_participle_names_who_did_it_not_groups(data: duckdb.DuckDBPyConnection) -> None:
    made = plan("How many orders were shipped by suppliers in 2024?")
    assert "GROUP BY" not in made.sql


@pytest.mark.parametrize("question", ["How many orders were placed on 9 January 2024?",
                                      "How many orders were placed on the 9th of January 2024?"])
def test_a_day_written_before_its_month(data: duckdb.DuckDBPyConnection, question: str) -> None:
    made = plan(question)
    assert not made.unaccounted
    assert rows(data, made.sql) == [(1,)]


def test_a_single_row_named_by_the_tables_noun_is_no_column_of_that_name() -> None:
    """"for a trip going to Boston": one of the rows, where a column is also called trip (its number)."""
    trips = TableInfo("trips", (ColumnInfo("trip", "INTEGER", "Trip number"), ColumnInfo("city", "STRING"),
                                ColumnInfo("fare", "FLOAT", "Fare paid, in dollars")),
                      description="Trips: one row per trip.")
    connection = duckdb.connect()
    connection.execute("CREATE TABLE trips (trip INTEGER, city VARCHAR, fare DOUBLE)")
    connection.execute("INSERT INTO trips VALUES (900, 'Boston', 20), (901, 'Boston', 35), (2, 'Denver', 50)")
    made = plan_question("What was the largest fare for a trip going to Boston?", [trips],
                         values_of=lambda table, column: ["Boston", "Denver"] if column == "city" else [])
    assert not made.unaccounted
    assert connection.execute(made.sql).fetchall() == [(35.0,)]
    numbered = plan_question("What is the largest trip number for a trip going to Boston?", [trips],
                             values_of=lambda table, column: ["Boston", "Denver"] if column == "city" else [])
    assert [row[-1] for row in connection.execute(numbered.sql).fetchall()] == [901]
    connection.close()


@pytest.mark.parametrize("question", ["What is the ratio of the number of web orders to the number of store orders?",
                                      "ratio of web orders to store orders"])
def test_a_ratio_of_two_counts_of_rows_said_in_full(data: duckdb.DuckDBPyConnection, question: str) -> None:
    made = plan(question)
    assert not made.unaccounted
    assert rows(data, made.sql) == [(3.0,)]


def test_a_ratio_of_values_of_two_columns_is_still_refused() -> None:
    with pytest.raises(NoPlan):
        plan("What is the ratio of orders from vendor A to orders on the web channel?")
