"""A place said by one word of a longer name ("trips to Kingsport": Kingsport Quay Halt) on a small ferry
schema: the plan names the reading with a query telling whether any row has the name, and an answer of
nothing resting on a name no row has says that it could not use the word."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest

from convener.analytics.engines import open_engine
from convener.analytics.models import (
    ChartImageOptions,
    ChartOptions,
    Context,
    ConversationOptions,
    SchemaPaths,
    SchemaRelationship,
)
from convener.analytics.pipeline import Pipeline, Table
from convener.analytics.planner import Plan, Relationship, plan_question
from convener.analytics.shapes import ColumnInfo, TableInfo
from tests.analytics.retail_set import final_text, generated
from tests.analytics.small_tables import database

TRIPS = TableInfo("trips", (ColumnInfo("trip_id", "INTEGER"),
                            ColumnInfo("origin", "STRING", "Code of the station the trip left from"),
                            ColumnInfo("dest", "STRING", "Code of the destination station"),
                            ColumnInfo("minutes", "INTEGER", "Minutes the trip took")),
                  description="One row per ferry trip.")
STATIONS = TableInfo("stations", (ColumnInfo("station_code", "STRING"), ColumnInfo("name", "STRING")),
                     description="Stations: one row per station.")
# Kingsport's ferries call at Royal Docks, whose name does not say Kingsport; the one station named with it
# (a halt no trip goes to) is what the word alone reads as. Sixty more names make the column a long one.
NAMES = {"RDK": "Royal Docks Central", "KQH": "Kingsport Quay Halt", "MLC": "Milltown Central Pier",
         "SND": "Sandbay Harbour", "WBL": "Westbay Landing",
         **{f"F{i:02d}": f"Farfield{i} Jetty Stop" for i in range(60)}}
TRIP_ROWS = [(1, "SND", "RDK", 50), (2, "SND", "MLC", 30), (3, "RDK", "SND", 55), (4, "RDK", "WBL", 40)]
VALUES = {("trips", "origin"): ["RDK", "SND"], ("trips", "dest"): ["MLC", "RDK", "SND", "WBL"],
          ("stations", "station_code"): sorted(NAMES), ("stations", "name"): sorted(NAMES.values())}
RELATIONSHIPS = (Relationship("trips", ("origin",), "stations", ("station_code",)),
                 Relationship("trips", ("dest",), "stations", ("station_code",)))


@pytest.fixture(scope="module")
def data() -> Iterator[duckdb.DuckDBPyConnection]:
    trips = ", ".join(f"({n}, '{o}', '{d}', {m})" for n, o, d, m in TRIP_ROWS)
    names = ", ".join(f"('{code}', '{name}')" for code, name in NAMES.items())
    yield from database("CREATE TABLE trips (trip_id INTEGER, origin VARCHAR, dest VARCHAR, minutes INTEGER)",
                        f"INSERT INTO trips VALUES {trips}",
                        "CREATE TABLE stations (station_code VARCHAR, name VARCHAR)",
                        f"INSERT INTO stations VALUES {names}")


def plan(question: str) -> Plan:
    return plan_question(question, [TRIPS], values_of=lambda t, c: VALUES.get((t, c), []),
                         relationships=RELATIONSHIPS, related=[STATIONS])


@pytest.mark.parametrize(("question", "said", "any_row"), [
    ("How many trips went to Kingsport?", "Kingsport", False),
    ("How many trips went to Milltown?", "Milltown", True),
])
def test_a_word_read_as_a_longer_name_is_named_with_a_check_of_it(
        data: duckdb.DuckDBPyConnection, question: str, said: str, any_row: bool) -> None:
    made = plan(question)
    assert [guess.said for guess in made.guessed] == [said]
    assert data.execute(made.guessed[0].check).fetchall() == [(any_row,)]


@pytest.mark.parametrize(("question", "checked"), [
    # said whole, the name is no guess from a word; being a joined table's, it is still checked for rows that
    # join to it, so that an answer of nothing can say none does
    ("How many trips went to Royal Docks Central?", ["Royal Docks Central"]),
    ("How many trips went to RDK?", []),
])
def test_a_name_said_whole_or_by_its_code_is_no_guess(question: str, checked: list[str]) -> None:
    assert [guess.said for guess in plan(question).guessed] == checked


@pytest.fixture(scope="module")
def pipeline_tables(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Table]]:
    folder: Path = tmp_path_factory.mktemp("ferries")
    (folder / "trips.csv").write_text("trip_id,origin,dest,minutes\n"
                                      + "".join(f"{n},{o},{d},{m}\n" for n, o, d, m in TRIP_ROWS))
    (folder / "stations.csv").write_text("station_code,name\n"
                                         + "".join(f"{c},{n}\n" for c, n in NAMES.items()))
    engine = open_engine(str(folder))
    yield [Table("ferries", info, engine) for info in engine.tables()]
    engine.close()


def ask(tables: list[Table], question: str) -> tuple[str | None, str]:
    messages = _messages(tables, question)
    return generated(messages), final_text(messages)


def _messages(tables: list[Table], question: str) -> list[Any]:
    stations = SchemaPaths(table_fqn="ferries.stations", paths=["station_code"])
    relationships = [SchemaRelationship(left_schema_paths=SchemaPaths(table_fqn="ferries.trips", paths=[end]),
                                        right_schema_paths=stations) for end in ("origin", "dest")]
    options = ConversationOptions(chart=ChartOptions(image=ChartImageOptions(no_image={})))
    return list(Pipeline(lambda: None).run(question, tables, Context(schema_relationships=relationships,
                                                                     options=options)))


def test_nothing_found_for_a_name_no_row_has_says_the_word_could_not_be_used(
        pipeline_tables: list[Table]) -> None:
    sql, text = ask(pipeline_tables, "How many trips went to Kingsport?")
    assert sql is not None
    assert text.startswith("I could not use 'Kingsport': I read 'Kingsport' as Kingsport Quay Halt"), text


def test_nothing_found_for_a_name_some_row_has_is_the_answer(pipeline_tables: list[Table]) -> None:
    # trips do go to Milltown Central Pier: none of them took that long, which is the answer
    _, text = ask(pipeline_tables, "How many trips to Milltown took more than 100 minutes?")
    assert "could not use" not in text and text.startswith("The number of trips is 0."), text


# A period the question names is checked as a name is: data with no row in it answers nothing, which says so.
SAILINGS = [(1, "2024-03-02", 120), (2, "2024-03-20", 340), (3, "2024-07-11", 80)]


@pytest.fixture(scope="module")
def sailings(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Table]]:
    folder: Path = tmp_path_factory.mktemp("sailings")
    (folder / "sailings.csv").write_text("sailing_id,sailed_on,passengers\n"
                                         + "".join(f"{n},{d},{p}\n" for n, d, p in SAILINGS))
    engine = open_engine(str(folder))
    yield [Table("ferries", info, engine) for info in engine.tables()]
    engine.close()


def test_a_named_period_is_read_with_a_check_of_it(sailings: list[Table]) -> None:
    made = plan_question("How many sailings were there in March 2031?", [sailings[0].info])
    assert [guess.said for guess in made.guessed] == ["March 2031"]
    assert sailings[0].engine.execute(made.guessed[0].check, row_limit=10, timeout_seconds=5).rows == [(False,)]


@pytest.mark.parametrize("question", ["How many sailings were there in 2031?",
                                      "What was the average number of passengers in January 2031?"])
def test_nothing_found_in_a_period_no_row_is_in_says_the_period_could_not_be_used(
        sailings: list[Table], question: str) -> None:
    # declined, the reason naming the dates the data holds (the planner reads them: planner/held.py), or, where
    # the question is planned without the period, answered saying it could not use it: never a plain answer
    sql, text = ask(sailings, question)
    if sql is None:
        assert text.startswith("I could not answer that from the data"), text
        reasons = " ".join(m.system_message.error.text for m in _messages(sailings, question)
                           if m.system_message and m.system_message.error)
        assert "holds dates from 2024-03-02 to 2024-07-11: nothing of 2031" in reasons, reasons
    else:
        assert text.startswith("I could not use '") and "2031" in text.split(":")[0], text


def test_nothing_found_in_a_period_some_row_is_in_is_the_answer(sailings: list[Table]) -> None:
    _, text = ask(sailings, "How many sailings in 2024 had more than 500 passengers?")
    assert "could not use" not in text and text.startswith("The number of sailings is 0."), text


def test_a_stations_name_beside_a_code_is_read_as_its_code_the_trips_hold(pipeline_tables: list[Table]) -> None:
    # the pipeline looks up the code of the station so named (MLC) and finds it among the trips' ends
    sql, text = ask(pipeline_tables, "How many trips went to Milltown Central Pier or WBL?")
    assert sql is not None and "JOIN" not in sql and "'MLC'" in sql, sql
    assert text.startswith("The number of trips is 2."), text


def test_a_look_up_that_fails_or_names_nothing_finds_nothing(pipeline_tables: list[Table]) -> None:
    keys_of = Pipeline(lambda: None)._keys_of(pipeline_tables)
    assert list(keys_of("stations", "station_code", "name", ["Milltown Central Pier", "O'Brien's Quay"])) == ["MLC"]
    assert keys_of("stations", "no_such_column", "name", ["Milltown Central Pier"]) == ()  # an error: nothing
    assert keys_of("no_such_table", "station_code", "name", ["Milltown Central Pier"]) == ()
    assert keys_of("stations", "station_code", "name", []) == ()


def test_a_period_listed_with_others_that_no_row_is_in_is_said_though_the_others_have_rows(
        sailings: list[Table]) -> None:
    sql, text = ask(sailings, "How many sailings were there in 2031 compared with 2024?")
    assert sql is not None
    assert text.startswith("I could not use '2031'"), text
    _, answered = ask(sailings, "How many sailings were there in 2024?")
    assert "could not use" not in answered
