"""Periods the data holds nothing of are declined, saying which dates it covers: a count of 0 for 2019 over data
of 2024 would answer as if the data could have held them. Dates it covers, one of several outside them, or no
dates read, plan as before."""

from __future__ import annotations

import pytest

from convener.analytics.planner import NoPlan, plan_question
from convener.analytics.shapes import ColumnInfo, TableInfo

SALES = TableInfo("sales", (ColumnInfo("sale_id", "INTEGER", "Identifier of the sale"),
                            ColumnInfo("sale_date", "DATE", "Date of the sale"),
                            ColumnInfo("store", "STRING", "Store"), ColumnInfo("amount", "INTEGER", "Amount")),
                  description="One row per sale.")
SPANS = {"sale_date": ("2024-03-01", "2024-09-15")}


def plan(question: str, spans: dict[str, tuple[str, str]] | None = SPANS) -> object:
    return plan_question(question, [SALES], values_of=lambda _, column: ["North", "South"] if column == "store" else [],
                         span_of=None if spans is None else lambda _, column: spans.get(column))


@pytest.mark.parametrize(("question", "said"), [
    ("How many sales were there in 2019?", "nothing of 2019"),
    ("Total amount of North sales in 2025", "nothing of 2025"),
    ("Sales on Christmas Day 2024", "nothing of 2024-12-25"),
    ("How many sales were there in January 2024?", "nothing of 2024-01-01"),
    ("How many sales in 2022 compared with 2023?", "nothing of 2022, 2023"),
])
def test_a_period_outside_the_dates_held_is_declined_saying_which_dates_are(question: str, said: str) -> None:
    with pytest.raises(NoPlan, match=rf"holds dates from 2024-03-01 to 2024-09-15: {said}"):
        plan(question)


@pytest.mark.parametrize("question", ["How many sales were there in 2024?", "Total amount of sales in June 2024",
                                      "How many sales between March 10, 2024 and May 1, 2024?",
                                      # one of several outside: the answer says it could not use that one
                                      "How many sales in 2024 compared with 2023?"])
def test_periods_the_data_holds_plan_as_before(question: str) -> None:
    assert "sale_date" in str(plan(question))


def test_without_the_data_nothing_is_known_of_its_dates() -> None:
    assert "2019" in str(plan("How many sales were there in 2019?", None))


def test_a_span_of_timestamps_or_of_nothing_bounds_dates_as_the_data_does() -> None:
    timestamps = {"sale_date": ("2024-03-01 08:30:00", "2024-09-15 17:00:00")}
    with pytest.raises(NoPlan, match="holds dates from 2024-03-01 to 2024-09-15: nothing of 2019"):
        plan("How many sales were there in 2019?", timestamps)
    assert "2019" in str(plan("How many sales were there in 2019?", {}))  # a column holding no value: no span
