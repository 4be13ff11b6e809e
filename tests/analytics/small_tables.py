"""Small DuckDB tables for the planner's tests."""

from __future__ import annotations

from collections.abc import Iterator

import duckdb


def database(*statements: str) -> Iterator[duckdb.DuckDBPyConnection]:
    """A database in memory made by ``statements``, closed once the test is done with it (the body of a
    fixture: ``yield from database(...)``)."""
    connection = duckdb.connect()
    for statement in statements:
        connection.execute(statement)
    yield connection
    connection.close()
