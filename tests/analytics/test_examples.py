"""Example queries: rewordings match with their parameters filled by type, other questions do not, and
binding goes through sqlglot so a value can only ever be a literal, in any dialect."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from functools import cache
from typing import Any

import duckdb
import pytest
import sqlglot
from sqlglot import exp

from convener.analytics.examples import Example, Parameter, bind, match_example
from convener.demo.analytics_data import build_demo_database
from tests.analytics.test_gold import agent_context, service_engine


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[duckdb.DuckDBPyConnection, Any]]:
    path = build_demo_database(tmp_path_factory.mktemp("examples") / "demo.duckdb")
    connection = duckdb.connect(str(path), read_only=True)
    yield connection, cache(service_engine(path).distinct_values)
    connection.close()


EXAMPLES = agent_context()[1]


def find(question: str) -> int:
    return next(i for i, e in enumerate(EXAMPLES) if e.question.startswith(question))


def single_select(sql: str, dialect: str) -> exp.Expr:
    statements = sqlglot.parse(sql, read=dialect)
    assert len(statements) == 1 and isinstance(statements[0], exp.Select), sql
    return statements[0]


# --- The demo agent's examples -----------------------------------------------------------------------------

SAMPLE_VALUES = {"year": "2013", "source": "Renewables", "n": "100", "symbol": "IBM", "day": "2004-03-01",
                 "city": "Houston"}


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.question for e in EXAMPLES])
def test_every_demo_example_binds_and_runs(demo: tuple[duckdb.DuckDBPyConnection, Any], example: Example) -> None:
    connection, _ = demo
    sql = bind(example, {p.name: SAMPLE_VALUES[p.name] for p in example.parameters})
    single_select(sql, "duckdb")
    assert connection.execute(sql).fetchall()


REWORDINGS = [
    ("What percentage of days were rainy in 2013?", "What percentage of days", {"year": "2013"}),
    ("what percent of the days in 2015 were rainy?", "What percentage of days", {"year": "2015"}),
    ("Which states have more than five airports?", "Which states", {"n": "5"}),
    ("What share of Iowa's electricity came from nuclear energy in 2012?", "What share of Iowa",
     {"source": "Nuclear Energy", "year": "2012"}),
    ("how much did IBM's price change over 2003", "How much did the price", {"symbol": "IBM", "year": "2003"}),
    ("What was the price of AAPL on 2005-03-01?", "What was the price of", {"symbol": "AAPL", "day": "2005-03-01"}),
    ("What was IBM's price on March 1, 2004?", "What was the price of", {"symbol": "IBM", "day": "2004-03-01"}),
    ("price of GOOG on 1 March 2005", "What was the price of", {"symbol": "GOOG", "day": "2005-03-01"}),
    ("What was the price of AAPL in June 2008?", "What was the price of", {"symbol": "AAPL", "day": "2008-06-01"}),
    ("Which month saw the most jobs added?", "In which month", {}),
    ("Which airports are in the city of New York?", "Which airports", {"city": "New York"}),
]


@pytest.mark.parametrize(("question", "example", "values"), REWORDINGS, ids=[q for q, _, _ in REWORDINGS])
def test_a_rewording_matches_with_typed_values(demo: tuple[duckdb.DuckDBPyConnection, Any], question: str,
                                               example: str, values: dict[str, str]) -> None:
    connection, values_of = demo
    match = match_example(question, EXAMPLES, values_of=values_of)
    assert match is not None
    assert match.index == find(example) and match.values == values
    assert 0.6 <= match.score <= 1.0
    single_select(match.sql, "duckdb")
    connection.execute(match.sql).fetchall()


@pytest.mark.parametrize("question", [
    "average horsepower by origin",
    "What was the price of AAPL in 2008?",  # a bare year is not a day
    "price of GOOG yesterday",  # nothing relative to today
    "Which states have more than a few airports?",
    "What was the average price of GOOG before 2006?",
    "How many days did it snow in Seattle?",
    "",
    "x" * 100_000,
    "🚗🚗🚗",
])
def test_other_questions_match_nothing(demo: tuple[duckdb.DuckDBPyConnection, Any], question: str) -> None:
    assert match_example(question, EXAMPLES, values_of=demo[1]) is None


def test_a_value_of_the_data_is_preferred_and_spelt_as_the_data_spells_it(
        demo: tuple[duckdb.DuckDBPyConnection, Any]) -> None:
    match = match_example("What share of Iowa's electricity came from renewables in 2010?", EXAMPLES,
                          values_of=demo[1])
    assert match is not None and match.values["source"] == "Renewables"


# --- Parameters of each type -------------------------------------------------------------------------------


def test_numbers_dates_and_booleans_are_typed_literals() -> None:
    example = Example("Orders over @amount on @day with rush @rush, limit @n?",
                      "SELECT * FROM orders WHERE amount > @amount AND day = @day AND rush = @rush LIMIT @n",
                      (Parameter("amount", "FLOAT64"), Parameter("day", "DATE"), Parameter("rush", "BOOL"),
                       Parameter("n", "INT64")))
    match = match_example("Orders over 12.5 on 2024-02-29 with rush yes, limit ten?", [example])
    assert match is not None
    assert match.values == {"amount": "12.5", "day": "2024-02-29", "rush": "true", "n": "10"}
    assert match.sql == ("SELECT * FROM orders WHERE amount > 12.5 AND day = CAST('2024-02-29' AS DATE) "
                         "AND rush = TRUE LIMIT 10")


def test_the_parameter_a_number_goes_to_follows_the_words_around_the_slot() -> None:
    example = Example("Top @n states with more than @min airports in @year",
                      "SELECT state FROM airports WHERE opened <= @year GROUP BY state HAVING COUNT(*) > @min "
                      "LIMIT @n",
                      (Parameter("n", "INT64"), Parameter("min", "INT64"), Parameter("year", "INT64", "a year")))
    match = match_example("top 3 states with more than 40 airports in 1990", [example])
    assert match is not None and match.values == {"n": "3", "min": "40", "year": "1990"}


def test_a_parameter_that_cannot_be_filled_rules_the_example_out() -> None:
    example = Example("Sales on @day", "SELECT SUM(amount) FROM sales WHERE day = @day",
                      (Parameter("day", "DATE"),))
    assert match_example("Sales on some day", [example]) is None
    assert match_example("Sales on 2024-13-45", [example]) is None
    assert match_example("Sales on 2024-05-06", [example]) is not None


def test_a_string_parameter_takes_a_value_of_the_column_it_is_compared_with() -> None:
    asked: list[tuple[str, str]] = []

    def values_of(table: str, column: str) -> list[str]:
        asked.append((table, column))
        return ["Nuclear Energy", "Renewables"] if column == "source" else []

    example = Example("Total generation from @source", "SELECT SUM(g.net) FROM electricity AS g WHERE g.source = @source",
                      (Parameter("source", "STRING"),))
    match = match_example("total generation from nuclear energy", [example], values_of=values_of)
    assert match is not None and match.values == {"source": "Nuclear Energy"}
    assert asked == [("electricity", "source")]
    for sql in ("SELECT 1 FROM electricity WHERE source IN (@source)",
                "SELECT 1 FROM electricity WHERE @source = source", "SELECT 1 FROM electricity WHERE source LIKE @source"):
        example = Example("Total generation from @source", sql, (Parameter("source", "STRING"),))
        match = match_example("total generation from renewables", [example], values_of=values_of)
        assert match is not None and match.values == {"source": "Renewables"}


def test_a_string_parameter_falls_back_to_the_words_in_the_slot() -> None:
    example = Example("Customers in the city of @city ordered by name",
                      "SELECT name FROM customers WHERE city = @city ORDER BY name", (Parameter("city", "STRING"),))
    match = match_example("customers in the city of São Paulo ordered by name", [example])
    assert match is not None and match.values == {"city": "São Paulo"}
    assert match.sql == "SELECT name FROM customers WHERE city = 'São Paulo' ORDER BY name"


def test_an_example_question_with_concrete_values_works_like_slots(demo: tuple[duckdb.DuckDBPyConnection, Any]) -> None:
    example = Example("Which states have more than 100 airports?",
                      "SELECT state FROM airports GROUP BY state HAVING COUNT(*) > @n",
                      (Parameter("n", "INT64"),))
    match = match_example("which states have more than 150 airports", [example], values_of=demo[1])
    assert match is not None and match.values == {"n": "150"} and match.score == 1.0
    assert demo[0].execute(match.sql).fetchall() == [("AK",), ("TX",), ("CA",)] or \
        sorted(demo[0].execute(match.sql).fetchall()) == [("AK",), ("CA",), ("TX",)]


# --- Binding -----------------------------------------------------------------------------------------------

HOSTILE = ["O'Brien", "'; DROP TABLE people; --", "Smith\\'; DELETE FROM people; --", "x' OR '1'='1"]


@pytest.mark.parametrize("value", HOSTILE)
@pytest.mark.parametrize("dialect", ["duckdb", "sqlite", "postgres", "bigquery"])
def test_a_value_with_quotes_is_one_escaped_literal(value: str, dialect: str) -> None:
    example = Example("People named @name", "SELECT age FROM people WHERE surname = @name",
                      (Parameter("name", "STRING"),))
    match = match_example(f"people named {value}", [example], dialect=dialect, example_dialect="duckdb",
                          values_of=lambda table, column: HOSTILE)
    assert match is not None and match.values == {"name": value}
    tree = single_select(match.sql, dialect)
    assert [literal.this for literal in tree.find_all(exp.Literal)] == [value]
    assert not list(tree.find_all(exp.Drop, exp.Delete, exp.Or))


@pytest.mark.parametrize("value", HOSTILE)
def test_an_escaped_literal_finds_exactly_its_row(value: str) -> None:
    example = Example("People named @name", "SELECT age FROM people WHERE surname = @name",
                      (Parameter("name", "STRING"),))
    for connection in (duckdb.connect(), sqlite3.connect(":memory:")):
        connection.execute("CREATE TABLE people (surname TEXT, age INTEGER)")
        connection.executemany("INSERT INTO people VALUES (?, ?)", [(v, i) for i, v in enumerate(HOSTILE)])
        dialect = "duckdb" if isinstance(connection, duckdb.DuckDBPyConnection) else "sqlite"
        sql = bind(example, {"name": value}, dialect=dialect)
        assert connection.execute(sql).fetchall() == [(HOSTILE.index(value),)]
        assert connection.execute("SELECT COUNT(*) FROM people").fetchall() == [(len(HOSTILE),)]


def test_binding_renders_in_the_target_dialect() -> None:
    example = Example("Price on @day", 'SELECT "price" FROM stocks WHERE "date" = @day', (Parameter("day", "DATE"),))
    assert bind(example, {"day": "2004-03-01"}, dialect="sqlite") == \
        "SELECT \"price\" FROM stocks WHERE \"date\" = DATE('2004-03-01')"
    assert bind(example, {"day": "2004-03-01"}, dialect="bigquery", example_dialect="duckdb") == \
        "SELECT `price` FROM stocks WHERE `date` = CAST('2004-03-01' AS DATE)"


def test_examples_written_for_bigquery_are_read_as_bigquery() -> None:
    example = Example("Orders from @region", "SELECT COUNT(*) FROM `shop.orders` WHERE `region` = @region",
                      (Parameter("region", "STRING"),))
    match = match_example("orders from North", [example], dialect="duckdb", example_dialect="bigquery",
                          values_of=lambda table, column: ["North", "South"])
    assert match is not None
    assert match.sql == "SELECT COUNT(*) FROM \"shop\".\"orders\" WHERE \"region\" = 'North'"


def test_broken_examples_are_skipped() -> None:
    broken = [
        Example("Orders from @region", "SELEKT * FROM", (Parameter("region", "STRING"),)),
        Example("Orders from @region", "SELECT 1 FROM orders WHERE region = @region; DROP TABLE orders",
                (Parameter("region", "STRING"),)),
        Example("Orders from @region", "SELECT 1 FROM orders WHERE region = @region AND x = @other",
                (Parameter("region", "STRING"),)),
    ]
    good = Example("Orders from @region", "SELECT 1 FROM orders WHERE region = @region",
                   (Parameter("region", "STRING"),))
    assert match_example("orders from North", broken) is None
    match = match_example("orders from North", [*broken, good])
    assert match is not None and match.index == 3
    with pytest.raises(ValueError):
        bind(good, {})


def test_the_best_example_above_the_threshold_wins() -> None:
    examples = [Example("How many orders are there?", "SELECT COUNT(*) FROM orders"),
                Example("How many orders were returned?", "SELECT COUNT(*) FROM orders WHERE returned")]
    match = match_example("how many orders were returned", examples)
    assert match is not None and match.index == 1 and match.score == 1.0
    assert match_example("how many orders were returned by post", examples, threshold=1.0) is None
    assert match_example("how many orders were returned by post", examples) is not None
    assert match_example("what is the weather like", examples) is None
