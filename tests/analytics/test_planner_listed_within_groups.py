"""Values listed with "and" beside groups asked for ("the average delay of Northwind and Islander for each
port"): each value within each group, not one figure for the values together; a column to show that a
grouping leaves out is said to be unused. On the ferry schema of
``test_planner_denials``."""

from __future__ import annotations

import duckdb

from tests.analytics.test_planner_denials import answer, data, plan  # noqa: F401 - the module's fixture


def test_values_listed_with_and_are_each_a_group_within_each_group(
        data: duckdb.DuckDBPyConnection) -> None:  # noqa: F811
    rows = answer(data, "Average delay for Northwind and Islander trips from each port")

    assert sorted((port, operator, float(delay)) for port, operator, delay in rows) == [
        ("HAR", "Northwind", 10.0), ("NTH", "Islander", 5.0), ("NTH", "Northwind", 30.0)]


def test_values_listed_with_or_stay_one_condition(data: duckdb.DuckDBPyConnection) -> None:  # noqa: F811
    rows = answer(data, "Average delay for Northwind or Islander trips from each port")

    assert sorted((port, float(delay)) for port, delay in rows) == [("HAR", 10.0), ("NTH", 13.333333333333334)]


def test_a_column_to_show_that_a_grouping_leaves_out_is_said_unused() -> None:
    # grouped by the port the trips left from, with a count: the ports' names asked for are not shown
    made = plan("For the Northwind trips, list the name of each port")

    assert "name" in made.unaccounted
