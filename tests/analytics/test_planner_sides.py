"""Two groups of rows set side by side by conditions on one column that no row meets at once ("July versus
January", "weekend versus weekday", "before noon compared with noon or later", "the first half or the
second"): one figure for each side, in one row, where the conditions together would keep nothing. On a small
clinic schema of its own, in DuckDB and SQLite."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import duckdb
import pytest

from convener.analytics.planner import NoPlan, Plan, plan_question
from convener.analytics.shapes import ColumnInfo, TableInfo
from tests.analytics.small_tables import database

VISITS = TableInfo("visits", (
    ColumnInfo("visit_id", "INTEGER", "Identifier of the visit"),
    ColumnInfo("visit_date", "DATE", "Date of the visit"),
    ColumnInfo("arrival", "INTEGER", "Arrival time, local, as HHMM (e.g. 0930)"),
    ColumnInfo("wait", "INTEGER", "Minutes the patient waited"),
    ColumnInfo("urgent", "BOOLEAN", "Whether the visit was urgent"),
), description="Clinic visits in 2024: one row per visit.")
ROWS = ("(1, '2024-01-06', 930, 10, true), (2, '2024-01-08', 1400, 20, false), (3, '2024-07-13', 1000, 30, true), "
        "(4, '2024-07-15', 1500, 50, false), (5, '2024-02-05', 1100, 5, true), (6, '2024-11-04', 1300, 15, true), "
        "(7, '2024-11-05', 800, 25, true)")
CREATE = "CREATE TABLE visits (visit_id INTEGER, visit_date DATE, arrival INTEGER, wait INTEGER, urgent BOOLEAN)"


@pytest.fixture(scope="module")
def data() -> Iterator[duckdb.DuckDBPyConnection]:
    yield from database(CREATE, f"INSERT INTO visits VALUES {ROWS}")


def plan(question: str, dialect: str = "duckdb") -> Plan:
    return plan_question(question, [VISITS], dialect=dialect)


def answer(data: duckdb.DuckDBPyConnection, question: str) -> list[tuple[object, ...]]:
    made = plan(question)
    assert not made.unaccounted, made
    assert "side 1" in made.explanation and "side 2" in made.explanation, made.explanation
    return data.execute(made.sql).fetchall()


@pytest.mark.parametrize(("question", "expected"), [
    ("Average wait in July versus January?", [(40.0, 15.0)]),
    ("avg wait in July vs January", [(40.0, 15.0)]),
    ("How many urgent visits in February vs November?", [(1, 2)]),
    ("Weekend versus weekday visits: what is the average wait of each?", [(20.0, 23.0)]),
    ("Average wait of visits arriving before noon compared with those arriving at noon or later?",
     [(17.5, 85 / 3)]),
    ("Were there more visits in the first half of 2024 or the second half?", [(3, 4)]),
    ("How does the number of visits in the first half of 2024 compare with the second half?", [(3, 4)]),
    ("Compare the average wait of visits arriving before noon with those arriving at noon or later.",
     [(17.5, 85 / 3)]),
    ("Were there more urgent visits in February or in November?", [(1, 2)]),
    ("Do visits arriving before noon have shorter waits than those arriving at noon or later? Show both averages.",
     [(17.5, 85 / 3)]),
])
def test_each_side_is_a_figure_of_its_own(data: duckdb.DuckDBPyConnection, question: str,
                                          expected: list[tuple[object, ...]]) -> None:
    rows = answer(data, question)
    assert [tuple(round(v, 6) if isinstance(v, float) else v for v in row) for row in rows] == \
        [tuple(round(v, 6) if isinstance(v, float) else v for v in row) for row in expected]


def test_the_same_on_sqlite() -> None:
    connection = sqlite3.connect(":memory:")
    connection.execute(CREATE.replace("DATE", "TEXT"))
    connection.execute(f"INSERT INTO visits VALUES {ROWS}")
    made = plan("How many urgent visits in February vs November?", "sqlite")
    assert connection.execute(made.sql).fetchall() == [(1, 2)], made.sql


def test_periods_said_together_without_a_word_setting_them_against_each_other_are_still_refused() -> None:
    with pytest.raises(NoPlan, match="exclude each other"):
        plan("How many visits in July and August?")


def test_a_side_whose_own_conditions_keep_nothing_is_refused() -> None:
    with pytest.raises(NoPlan):
        plan("Average wait in July and January versus February?")


def test_a_count_of_distinct_values_is_one_per_side(data: duckdb.DuckDBPyConnection) -> None:
    # distinct arrival times: July 1000 and 1500, January 930 and 1400, and 800 (November) on neither side
    made = plan("How many different arrival times in July versus January?")
    assert data.execute(made.sql).fetchall() == [(2, 2)], made.sql


FLIGHTS = TableInfo("flights", (
    ColumnInfo("sched_dep_time", "INTEGER", "Scheduled departure time, local, as HHMM"),
    ColumnInfo("sched_arr_time", "INTEGER", "Scheduled arrival time, local, as HHMM"),
    ColumnInfo("arr_delay", "INTEGER", "Arrival delay in minutes")), description="One row per flight.")


def test_a_time_of_day_without_a_verb_of_its_own_is_about_the_end_the_nearest_verb_before_it_names() -> None:
    made = plan_question("Average arrival delay for flights scheduled to leave before noon versus those scheduled "
                         "at noon or later?", [FLIGHTS])
    assert made.sql.count('"sched_dep_time"') == 2 and "sched_arr_time" not in made.sql, made.sql


@pytest.mark.parametrize(("question", "refused"), [
    ("Set the wait of visit 3 to zero.", True),
    ("Set visits arriving before noon against those arriving at noon or later: the average wait of each?", False),
])
def test_set_is_a_change_of_data_unless_it_sets_groups_against_each_other(question: str, refused: bool) -> None:
    if refused:
        with pytest.raises(NoPlan, match="set data"):
            plan(question)
    else:
        assert "side 2" in plan(question).explanation



def test_a_yes_or_no_question_of_two_sides_is_answered_beside_their_figures(data: duckdb.DuckDBPyConnection) -> None:
    made = plan("Were there more visits in the first half of 2024 than in the second half?")
    assert data.execute(made.sql).fetchall() == [(False, 3, 4)], made.sql
    made = plan("Is the average wait longer on weekends than on weekdays?")  # "than on": the other side's place
    rows = data.execute(made.sql).fetchall()
    assert len(rows[0]) == 3 and rows[0][0] == (rows[0][1] > rows[0][2]), made.sql


def test_from_a_time_on_is_that_time_and_later(data: duckdb.DuckDBPyConnection) -> None:
    assert data.execute(plan("How many visits arrived from 1 pm on?").sql).fetchall() == [(3,)]
