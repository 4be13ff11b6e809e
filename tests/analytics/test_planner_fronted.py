"""A glossary term of a noun and a participle ("time made up") asked with its noun fronted and its verb after
the rows ("how much time did runners make up on the course?"): the noun is the term, the verb (any form, with
its particle) and a place its description names are the term's too; its verb before an amount ("made up more
than 3 minutes on the course") compares the term. On a small race schema of its own."""

from __future__ import annotations

from collections.abc import Iterator

import duckdb
import pytest

from convener.analytics.planner import NoPlan, Plan, Term, plan_question
from convener.analytics.planner.fronted import verbs_before_amounts
from convener.analytics.shapes import ColumnInfo, TableInfo
from convener.analytics.wording import tokenize
from tests.analytics.small_tables import database

RUNS = TableInfo("runners", (
    ColumnInfo("name", "STRING", "Name of the runner"),
    ColumnInfo("start_delay", "INTEGER", "Minutes the runner started after the gun"),
    ColumnInfo("finish_delay", "INTEGER", "Minutes the runner finished after their target time"),
    ColumnInfo("course_time", "INTEGER", "Minutes spent on the course"),
), description="Runners of a race: one row per runner.")
TERMS = (Term("time made up", "Minutes a runner gained on the course: start_delay - finish_delay",
              labels=("minutes made up", "time gained")),)


@pytest.fixture(scope="module")
def data() -> Iterator[duckdb.DuckDBPyConnection]:
    yield from database("CREATE TABLE runners (name VARCHAR, start_delay INTEGER, finish_delay INTEGER, "
                        "course_time INTEGER)",
                        "INSERT INTO runners VALUES ('Ann', 5, 1, 50), ('Bo', 2, 4, 60), ('Cy', 10, 2, 55)")


def plan(question: str) -> Plan:
    return plan_question(question, [RUNS], TERMS, values_of=lambda t, c: ["Ann", "Bo", "Cy"] if c == "name" else [])


@pytest.mark.parametrize(("question", "expected"), [
    ("On average, how much time did runners make up on the course?", 10 / 3),
    ("In total, how many minutes did the runners make up on the course?", 10),
    ("On average, how much time do runners make up?", 10 / 3),
    ("In total, how much time did Cy make up on the course?", 8),
    ("On average, how much time did the runners gain on the course?", 10 / 3),
])
def test_a_fronted_noun_and_its_verb_are_the_term(data: duckdb.DuckDBPyConnection, question: str,
                                                  expected: float) -> None:
    made = plan(question)
    assert not made.unaccounted, made
    assert "course_time" not in made.sql, made.sql  # "on the course" is the term's place, no column
    assert data.execute(made.sql).fetchall()[0][0] == pytest.approx(expected), made.sql


def test_another_verb_is_not_the_terms() -> None:
    try:
        made = plan("On average, how much time did runners lose on the course?")
    except NoPlan:
        return
    assert "start_delay" not in made.sql or made.unaccounted, made


@pytest.mark.parametrize("question", [
    "Which runner has the highest time made up? Give the name and the time.",
    "Which runner had the greatest time made up? Show its name and the time made up.",
])
def test_a_term_said_again_is_the_term_shown_by_its_name(data: duckdb.DuckDBPyConnection, question: str) -> None:
    made = plan(question)
    assert not made.unaccounted, made
    assert '"time_made_up"' in made.sql, made.sql  # the formula keeps its name, not the text of its arithmetic
    assert [row[-1] for row in data.execute(made.sql).fetchall()] == [8], made.sql


@pytest.mark.parametrize("question", [
    "Which runners made up more than 3 minutes on the course?",
    "List the runners that made up more than 3 minutes on the course, with their name and time made up.",
    "Which runners gained more than 3 minutes on the course?",
])
def test_the_terms_verb_before_an_amount_compares_the_term(data: duckdb.DuckDBPyConnection, question: str) -> None:
    made = plan(question)
    assert not made.unaccounted, made
    assert "course_time" not in made.sql, made.sql  # "on the course" after the amount is the term's place
    assert sorted(row[0] for row in data.execute(made.sql).fetchall()) == ["Ann", "Cy"], made.sql


def test_only_a_participle_is_a_verb_before_an_amount() -> None:
    tokens = tokenize("Count the runners over 2,000 metres, and those that made up over 3 minutes")
    assert verbs_before_amounts(tokens, "late runners") == []  # "runners over 2,000 …": no verb of a term
    assert verbs_before_amounts(tokens, "minutes made up") == [(9, 11)]
