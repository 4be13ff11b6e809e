"""Readings of the planner on small tables: ranked groups by their extreme, a date key cut into a bucket,
true/false columns named with their value."""

from __future__ import annotations

from collections.abc import Iterator

import duckdb
import pytest

from convener.analytics.planner import plan_question
from convener.analytics.shapes import ColumnInfo, TableInfo

NESTS = TableInfo("nests", (ColumnInfo("nest_id", "STRING"), ColumnInfo("island", "STRING", samples=("North", "South")),
                            ColumnInfo("laid_date", "DATE"), ColumnInfo("eggs", "INTEGER"),
                            ColumnInfo("hatched", "BOOLEAN")),
                  description="One row per nest.")


@pytest.fixture(scope="module")
def data() -> Iterator[duckdb.DuckDBPyConnection]:
    connection = duckdb.connect()
    connection.execute("CREATE TABLE nests (nest_id VARCHAR, island VARCHAR, laid_date DATE, eggs INTEGER, "
                       "hatched BOOLEAN)")
    connection.execute("INSERT INTO nests VALUES ('a', 'North', '2020-03-01', 2, true), "
                       "('b', 'North', '2021-06-01', 4, false), ('c', 'South', '2020-01-15', 3, false), "
                       "('d', 'South', '2020-02-01', 1, true)")
    yield connection
    connection.close()


def ask(data: duckdb.DuckDBPyConnection, question: str) -> list[tuple[object, ...]]:
    return data.execute(plan_question(question, [NESTS]).sql).fetchall()


def test_the_group_ranked_first_by_an_earliest_date_holds_the_earliest_row(data: duckdb.DuckDBPyConnection) -> None:
    assert [row[0] for row in ask(data, "On which island was the earliest laid date?")] == ["South"]


def test_a_date_key_named_with_a_bucket_word_is_cut_into_that_bucket(data: duckdb.DuckDBPyConnection) -> None:
    assert sorted(row[-1] for row in ask(data, "Average eggs for each laid year")) == [2.0, 4.0]


@pytest.mark.parametrize(("question", "expected"), [
    ("How many nests had hatched false?", 2), ("How many nests whose hatched is true?", 2),
    ("How many South nests had hatched false?", 1),
])
def test_a_true_false_column_named_with_its_value(data: duckdb.DuckDBPyConnection, question: str,
                                                  expected: int) -> None:
    assert ask(data, question) == [(expected,)]
