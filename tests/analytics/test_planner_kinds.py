"""The offline planner on the kinds of question issue 21 found it getting wrong, one rule at a time: true/false
conditions, conditions on a joined table, superlatives of time, glossary formulas, shares, negation; and the
rule that a question is never answered as if a condition it could not read were not there."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import duckdb
import jsonschema
import pytest
import sqlglot
from sqlglot import exp

from convener.analytics.planner import MAX_QUESTION_CHARACTERS, NoPlan, Plan, Relationship, Term, plan_question
from convener.analytics.planner.catalog import _formula
from convener.analytics.shapes import ColumnInfo, TableInfo
from tests.analytics.retail_set import Retail, final_text, generated
from tests.analytics.seed_message import MESSAGE

ORDERS = TableInfo("orders", (
    ColumnInfo("order_id", "INTEGER"), ColumnInfo("store_id", "INTEGER"), ColumnInfo("order_date", "DATE"),
    ColumnInfo("category", "STRING"), ColumnInfo("quantity", "INTEGER"), ColumnInfo("price", "FLOAT"),
    ColumnInfo("discount", "FLOAT"), ColumnInfo("returned", "BOOLEAN"), ColumnInfo("customer_active", "BOOLEAN")))
STORES = TableInfo("stores", (
    ColumnInfo("store_id", "INTEGER"), ColumnInfo("city", "STRING"), ColumnInfo("region", "STRING"),
    ColumnInfo("opened_year", "INTEGER"), ColumnInfo("is_flagship", "BOOLEAN")))
VALUES = {("orders", "category"): ["Toys", "Grocery", "Electronics"], ("stores", "city"): ["Chicago", "Austin"],
          ("stores", "region"): ["North", "South"]}
REVENUE = Term("revenue", "Revenue of an order: quantity × price × (1 − discount)")
JOIN = Relationship("orders", ("store_id",), "stores", ("store_id",))


def values_of(table: str, column: str) -> list[str]:
    return VALUES.get((table, column), [])


def plan(question: str, *, relationships: tuple[Relationship, ...] = (JOIN,), terms: tuple[Term, ...] = (REVENUE,),
         dialect: str = "duckdb") -> Plan:
    return plan_question(question, [ORDERS, STORES], terms, dialect=dialect, values_of=values_of,
                         relationships=relationships)


@pytest.fixture(scope="module")
def data() -> Iterator[duckdb.DuckDBPyConnection]:
    connection = duckdb.connect()
    connection.execute("CREATE TABLE stores (store_id INTEGER, city VARCHAR, region VARCHAR, opened_year INTEGER, "
                       "is_flagship BOOLEAN)")
    connection.execute("INSERT INTO stores VALUES (1, 'Chicago', 'North', 2009, true), "
                       "(2, 'Austin', 'South', 2017, false)")
    connection.execute("CREATE TABLE orders (order_id INTEGER, store_id INTEGER, order_date DATE, category VARCHAR, "
                       "quantity INTEGER, price DOUBLE, discount DOUBLE, returned BOOLEAN, customer_active BOOLEAN)")
    connection.execute("INSERT INTO orders VALUES "
                       "(1, 1, '2024-01-05', 'Toys', 2, 10.0, 0.0, true, true), "
                       "(2, 1, '2024-02-05', 'Grocery', 1, 20.0, 0.5, false, false), "
                       "(3, 2, '2024-03-05', 'Toys', 3, 5.0, 0.0, false, true), "
                       "(4, 2, '2023-12-30', 'Electronics', 1, 100.0, 0.1, true, true)")
    yield connection
    connection.close()


def rows(data: duckdb.DuckDBPyConnection, sql: str) -> list[tuple[Any, ...]]:
    return [tuple(round(v, 6) if isinstance(v, float) else v for v in row) for row in data.execute(sql).fetchall()]


# --- true/false columns ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(("question", "expected"), [
    ("How many orders were returned?", [(2,)]),
    ("How many orders were not returned?", [(2,)]),
    ("how many orders came from active customers", [(3,)]),
    ("How many orders are from inactive customers?", [(1,)]),
    ("number of returned Toys orders", [(1,)]),
])
def test_true_false_columns_are_conditions(data: duckdb.DuckDBPyConnection, question: str,
                                           expected: list[tuple[Any, ...]]) -> None:
    made = plan(question)
    assert not made.unaccounted
    assert rows(data, made.sql) == expected, made.sql


def test_a_flagship_store_is_a_true_is_flagship() -> None:
    made = plan("How many flagship stores are there?")
    assert made.tables == ("stores",)
    assert '"is_flagship"' in made.sql and "NOT" not in made.sql


# --- joins ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("relationships", [(JOIN,), ()], ids=["relationship", "key column"])
def test_a_condition_on_the_joined_table(data: duckdb.DuckDBPyConnection,
                                         relationships: tuple[Relationship, ...]) -> None:
    made = plan("How many orders came from stores in the North region?", relationships=relationships)
    assert made.tables == ("orders", "stores")
    assert "LEFT JOIN" in made.sql
    assert rows(data, made.sql) == [(2,)]


def test_grouping_and_formulas_across_the_join(data: duckdb.DuckDBPyConnection) -> None:
    made = plan("Total revenue by region")
    assert sorted(rows(data, made.sql)) == [("North", 30.0), ("South", 105.0)]
    made = plan("How many orders were placed at stores opened before 2015?")
    assert rows(data, made.sql) == [(2,)]
    made = plan("how many orders in stores except Chicago")
    assert rows(data, made.sql) == [(2,)]


def test_the_one_side_is_not_joined_to_the_many_side(data: duckdb.DuckDBPyConnection) -> None:
    """Stores do not join orders (each store has many): a condition on orders is never read for stores, nor
    dropped silently; the orders are queried, the stores told apart by the orders' key to them."""
    made = plan("How many stores had returned orders?")
    assert made.tables[0] == "orders" and not made.unaccounted
    assert rows(data, made.sql) == rows(data, "SELECT COUNT(DISTINCT store_id) FROM orders WHERE returned")


def test_sql_stays_sqlglot_built_across_dialects() -> None:
    for dialect in ("duckdb", "sqlite", "postgres"):
        made = plan("Average price of orders at flagship stores", dialect=dialect)
        tree = sqlglot.parse_one(made.sql, read=dialect)
        assert isinstance(tree, exp.Select) and tree.find(exp.Join) is not None


# --- time ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("question", "expected"), [
    ("What is the most recent order date?", "2024-03-05"),
    ("When was the earliest order?", "2023-12-30"),
])
def test_superlatives_of_time_as_extremes(data: duckdb.DuckDBPyConnection, question: str, expected: str) -> None:
    made = plan(question)
    assert [str(value) for value in rows(data, made.sql)[0]] == [expected]


def test_superlatives_of_time_as_rows(data: duckdb.DuckDBPyConnection) -> None:
    oldest = plan("Which store is the oldest?")
    assert rows(data, oldest.sql)[0][:2] == (1, "Chicago")
    newest = plan("Which store opened most recently?")
    assert rows(data, newest.sql)[0][:2] == (2, "Austin")
    latest = plan("What was the latest order?")
    assert rows(data, latest.sql)[0][0] == 3
    recent = plan("Show the 2 most recent orders")
    assert [row[0] for row in rows(data, recent.sql)] == [3, 2]


# --- glossary formulas ---------------------------------------------------------------------------------------


def test_a_glossary_formula_is_its_expression(data: duckdb.DuckDBPyConnection) -> None:
    made = plan("What is the total revenue?")
    assert made.terms_used == ("revenue",)
    assert rows(data, made.sql) == [(135.0,)]
    assert rows(data, plan("average revenue of returned orders").sql) == [(55.0,)]


@pytest.mark.parametrize("description", [
    "revenue is SUM(price)", "quantity * unknown_column", "(SELECT price FROM orders) * 2",
    "price", "price; DROP TABLE orders", "upper(category) || price",
])
def test_only_arithmetic_over_existing_columns_is_a_formula(description: str) -> None:
    formula = _formula(description, ("quantity", "price", "discount"))
    if formula is not None:
        tree = sqlglot.parse_one(formula)
        assert all(isinstance(node, exp.Column | exp.Literal | exp.Binary | exp.Paren | exp.Identifier | exp.Neg)
                   for node in tree.walk())
        assert {column.name for column in tree.find_all(exp.Column)} <= {"quantity", "price", "discount"}


# --- shares and negation -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("question", "expected"), [
    ("What share of orders were returned?", 50.0),
    ("What percentage of Toys orders were returned?", 50.0),
    ("what fraction of stores are flagship stores", 50.0),
])
def test_shares_of_rows(data: duckdb.DuckDBPyConnection, question: str, expected: float) -> None:
    made = plan(question)
    assert made.shape == "share"
    assert rows(data, made.sql) == [(expected,)]


@pytest.mark.parametrize(("question", "expected"), [
    ("How many orders were not Toys?", 2), ("count of orders excluding Grocery", 3),
    ("number of orders other than Toys", 2),
])
def test_negations(data: duckdb.DuckDBPyConnection, question: str, expected: int) -> None:
    made = plan(question)
    assert not made.unaccounted, made
    assert rows(data, made.sql) == [(expected,)]


# --- never confidently wrong ---------------------------------------------------------------------------------


@pytest.mark.parametrize("question", [
    "How many orders were premium?", "How many stores are franchised?",
    "What is the total quantity of discontinued orders?", "How many orders were refunded?",
])
def test_a_condition_with_nothing_behind_it_is_named_not_dropped(question: str) -> None:
    try:
        made = plan(question)
    except NoPlan:
        return
    assert made.unaccounted, made.sql


def test_returned_is_not_filler_where_nothing_is_called_returned() -> None:
    table = TableInfo("cars", (ColumnInfo("name", "STRING"), ColumnInfo("price", "FLOAT")))
    try:
        made = plan_question("How many cars were returned?", [table])
    except NoPlan:
        return
    assert made.unaccounted == ("returned",)


@pytest.fixture(scope="module")
def retail() -> Iterator[Retail]:
    opened = Retail()
    yield opened
    opened.close()


def test_the_final_response_says_what_it_could_not_use(retail: Retail) -> None:
    messages = retail.ask("How many orders were premium?")
    text = final_text(messages)
    assert text.startswith("I could not use 'premium'"), text
    assert "not the answer" in text
    assert generated(messages) is not None
    for message in messages:
        jsonschema.validate(message.to_json(), MESSAGE)


def test_a_full_answer_says_nothing_of_the_kind(retail: Retail) -> None:
    text = final_text(retail.ask("How many orders were returned?"))
    count = retail.reference.execute("SELECT COUNT(*) FROM orders WHERE returned").fetchone()
    assert count is not None
    assert "could not use" not in text and f"is {count[0]}." in text


# --- hostile questions ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("question", [
    "How many orders were returned; DROP TABLE orders; --",
    "orders where 1=1 OR returned = true",
    "How many orders were returned' OR '1'='1",
    "How many 🛒 orders were returned?",
    "¿Cuántos pedidos fueron devueltos?",
    "How many orders were returned " + "and returned " * 150,
    "store store store by store per store",
    "returned returned not not returned",
    "What share of orders were" ,
    "revenue revenue revenue",
])
def test_hostile_questions_are_refused_or_planned_safely(question: str) -> None:
    try:
        made = plan(question)
    except NoPlan as refused:
        assert refused.reason
        return
    tree = sqlglot.parse_one(made.sql, read="duckdb")
    assert isinstance(tree, exp.Select)
    assert not list(tree.find_all(exp.Drop, exp.Delete, exp.Insert, exp.Update))
    assert {t.name for t in tree.find_all(exp.Table)} <= {"orders", "stores"}


def test_an_oversized_question_is_refused() -> None:
    with pytest.raises(NoPlan):
        plan("How many orders were returned " * (MAX_QUESTION_CHARACTERS // 10))


def test_ambiguous_column_words_do_not_mislead(data: duckdb.DuckDBPyConnection) -> None:
    """"store" names a table, a key column of orders and the stores' own key: counting orders per store is
    a count per store_id of orders, not of stores."""
    made = plan("number of orders per store")
    assert made.tables[0] == "orders"
    assert sorted(rows(data, made.sql)) == [(1, 2), (2, 2)]


# --- neighbours: glossary conditions, measures by adjective, ties, ratios, open year ranges, several keys ---


def test_a_glossary_condition_is_a_true_false_column(data: duckdb.DuckDBPyConnection) -> None:
    big = Term("big order", "An order whose quantity > 2 (more than two items)", ("big orders",))
    made = plan("How many big orders were returned?", terms=(big,))
    assert made.terms_used == ("big order",) and not made.unaccounted
    assert rows(data, made.sql) == [(0,)]
    made = plan("How many big orders are there?", terms=(big,))
    assert rows(data, made.sql) == [(1,)]


@pytest.mark.parametrize(("question", "expected"), [
    ("How many orders are more expensive than 15?", [(2,)]),
    ("How many orders are cheaper than 15?", [(2,)]),
])
def test_adjectives_of_measure_compare_their_column(data: duckdb.DuckDBPyConnection, question: str,
                                                    expected: list[tuple[Any, ...]]) -> None:
    made = plan(question)
    assert rows(data, made.sql) == expected, made.sql


def test_adjectives_of_measure_rank_by_their_column(data: duckdb.DuckDBPyConnection) -> None:
    made = plan("the 2 most expensive orders")
    assert [row[0] for row in rows(data, made.sql)] == [4, 2]


def test_a_ranking_that_counts_ties_keeps_them() -> None:
    fish = TableInfo("fish", (ColumnInfo("fish_id", "INTEGER"), ColumnInfo("species", "STRING"),
                              ColumnInfo("length_cm", "FLOAT")))
    connection = duckdb.connect()
    connection.execute("CREATE TABLE fish (fish_id INTEGER, species VARCHAR, length_cm DOUBLE)")
    connection.execute("INSERT INTO fish VALUES (1, 'pike', 80), (2, 'pike', 95), (3, 'carp', 95), (4, 'carp', 60)")
    for dialect in ("duckdb", "sqlite"):
        made = plan_question("Which fish are the longest? Include ties.", [fish], dialect=dialect)
        assert sqlglot.parse_one(made.sql, read=dialect).find(exp.Subquery) is not None
    made = plan_question("Which fish are the longest? Include ties.", [fish])
    assert sorted(row[0] for row in connection.execute(made.sql).fetchall()) == [2, 3]
    # Kept without being asked for: a ranking that cut a tie would present an arbitrary row as the answer.
    made = plan_question("the 1 longest fish", [fish])
    assert sorted(row[0] for row in connection.execute(made.sql).fetchall()) == [2, 3]
    made = plan_question("the 3 longest fish", [fish])  # fewer rows past the tie than asked for: all kept
    assert sorted(row[0] for row in connection.execute(made.sql).fetchall()) == [1, 2, 3]
    made = plan_question("the 10 longest fish", [fish])  # more asked for than there are rows
    assert len(connection.execute(made.sql).fetchall()) == 4
    connection.close()


@pytest.mark.parametrize("question", ["Pike or carp: which are longer on average?",
                                      "pike or carp - which are longer on average? show both means"])
def test_a_comparative_between_two_values_is_the_measure_it_names_for_each(question: str) -> None:
    # no "than": the adjective names the measure (length), compared between the two values' groups
    fish = TableInfo("fish", (ColumnInfo("fish_id", "INTEGER"), ColumnInfo("species", "STRING"),
                              ColumnInfo("length_cm", "FLOAT")))
    connection = duckdb.connect()
    connection.execute("CREATE TABLE fish (fish_id INTEGER, species VARCHAR, length_cm DOUBLE)")
    connection.execute("INSERT INTO fish VALUES (1, 'pike', 80), (2, 'pike', 95), (3, 'carp', 95), (4, 'carp', 60)")
    made = plan_question(question, [fish], values_of=lambda _, column: ["pike", "carp"] if column == "species" else [])
    assert not made.unaccounted, made
    assert dict(connection.execute(made.sql).fetchall()) == {"pike": 87.5, "carp": 77.5}, made.sql
    connection.close()


def test_a_ratio_of_two_values(data: duckdb.DuckDBPyConnection) -> None:
    made = plan("What is the ratio of Toys to Grocery orders?")
    assert rows(data, made.sql) == [(2.0,)]
    with pytest.raises(NoPlan):
        plan("What is the ratio of price to quantity?")


def test_open_year_ranges(data: duckdb.DuckDBPyConnection) -> None:
    assert rows(data, plan("How many stores opened in 2012 or later?").sql) == [(1,)]
    assert rows(data, plan("How many stores opened in 2012 or earlier?").sql) == [(1,)]


def test_several_keys_joined_by_and(data: duckdb.DuckDBPyConnection) -> None:
    made = plan("number of orders by category and region")
    assert sorted(rows(data, made.sql)) == [("Electronics", "South", 1), ("Grocery", "North", 1),
                                            ("Toys", "North", 1), ("Toys", "South", 1)]


def test_groups_without_a_value_are_those_none_of_whose_rows_has_it(data: duckdb.DuckDBPyConnection) -> None:
    assert data.execute(plan("Which regions have no Toys orders?").sql).fetchall() == []
    assert [row[0] for row in data.execute(plan("Which regions have no Electronics orders?").sql).fetchall()] \
        == ["North"]


def test_a_month_without_a_year_and_the_busiest_month(data: duckdb.DuckDBPyConnection) -> None:
    for dialect in ("duckdb", "sqlite", "postgres"):
        made = plan("How many orders were there in December?", dialect=dialect)
        assert isinstance(sqlglot.parse_one(made.sql, read=dialect), exp.Select)
    assert rows(data, plan("How many orders were there in December?").sql) == [(1,)]
    busiest = plan("Which month had the most orders? If there is a tie, show all of them.")
    assert len(rows(data, busiest.sql)) == 4  # one order a month: all four months tie
    assert len(rows(data, plan("Which month had the most orders?").sql)) == 4  # ties are kept unasked too


def test_unknown_and_known_values() -> None:
    connection = duckdb.connect()
    connection.execute("CREATE TABLE orders (order_id INTEGER, category VARCHAR)")
    connection.execute("INSERT INTO orders VALUES (1, 'Toys'), (2, NULL), (3, NULL)")
    table = TableInfo("orders", (ColumnInfo("order_id", "INTEGER"), ColumnInfo("category", "STRING")))
    assert connection.execute(plan_question("How many orders have an unknown category?", [table]).sql).fetchall() \
        == [(2,)]
    assert connection.execute(plan_question("How many orders have a known category?", [table]).sql).fetchall() \
        == [(1,)]
    connection.close()
