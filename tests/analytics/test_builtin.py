"""The built-in ``convener`` source: Convener's records copied into DuckDB, as the caller may read them.

The demo's records (its app, recorded conversations, evaluation run and Slack workspace, loaded by the
demo's own loaders) are copied for several callers and checked against the store, and a chat user's
copy against what the chat tools themselves return to that user: the copy must never show more.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import pytest
from sqlalchemy import Table, func, insert, select
from sqlalchemy.sql.elements import ColumnElement

from convener.analytics import builtin
from convener.analytics.builtin import (
    BUILTIN_SOURCE,
    BuiltinEngines,
    builtin_engine,
    builtin_tables,
    load_builtin,
)
from convener.analytics.shapes import TableInfo
from convener.api.errors import ApiError
from convener.auth.caller import ANONYMOUS, LOCAL_USER, Caller, normalise_scope
from convener.ces import tables as ces
from convener.chat import tables as chat
from convener.chat.importing.writer import ChatImporter
from convener.chat.models import SearchConversationsRequest, SearchMessagesRequest, SearchParameters
from convener.chat.records import ImportedConversation, ImportedMessage, ImportedUser
from convener.config import Settings
from convener.demo import evaluations
from convener.demo.chat import import_chat
from convener.demo.deployments import install_deployment
from convener.demo.loader import APP, install_app, run_script, scripts
from convener.services import Services
from tests.chat.conftest import RecordsExport, micros, workspace
from tests.conftest import BACKENDS, private_database

CES_TABLES = ("apps", "conversations", "evaluation_runs", "evaluation_results")
CHAT_TABLES = ("chat_spaces", "chat_messages")
DUCKDB_TYPES = {"STRING": "VARCHAR", "INTEGER": "BIGINT", "FLOAT": "DOUBLE", "BOOLEAN": "BOOLEAN",
                "TIMESTAMP": "TIMESTAMP"}


def load_demo_records(services: Services) -> None:
    """The ces and chat records ``convener serve --demo`` loads, by the demo loader's own steps (the
    knowledge and analytics parts of ``load_demo`` add nothing these tables show)."""
    install_app(services)
    install_deployment(services, APP)
    for script in scripts():
        run_script(services, script)
    evaluations.install_evaluations(services, APP)
    _, (dataset_id, _) = evaluations.definitions(APP)
    assert evaluations.run_once(services, APP, dataset_id)
    import_chat(services.database)


@pytest.fixture(scope="module", params=BACKENDS)
def demo(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Services]:
    """The demo's records in a fresh store, once per backend: the tests here only read them."""
    directory: Path = tmp_path_factory.mktemp("builtin")
    with private_database(request.param, directory) as url:
        services = Services.open(Settings(data_dir=directory / "data", database_url=url, allow_anonymous=False,
                                          knowledge_embeddings="off"))
        try:
            load_demo_records(services)
            yield services
        finally:
            services.close()


def copy(services: Services, caller: Caller, **options: Any) -> tuple[duckdb.DuckDBPyConnection, dict[str, int]]:
    connection = duckdb.connect(":memory:")
    return connection, load_builtin(connection, services.database, caller, **options)


def store_count(services: Services, table: Table, *conditions: ColumnElement[bool]) -> int:
    with services.database.reading() as connection:
        return int(connection.scalar(select(func.count()).select_from(table).where(*conditions)) or 0)


def rows(connection: duckdb.DuckDBPyConnection, sql: str) -> list[tuple[Any, ...]]:
    return connection.execute(sql).fetchall()


def counts(connection: duckdb.DuckDBPyConnection) -> dict[str, int]:
    return {table.name: rows(connection, f"SELECT count(*) FROM {table.name}")[0][0] for table in builtin_tables()}


def columns(connection: duckdb.DuckDBPyConnection, table: str) -> list[tuple[str, str]]:
    return [(row[0], row[1]) for row in rows(connection, f"DESCRIBE {table}")]


def chat_tool_view(services: Services, caller: Caller) -> tuple[set[str], dict[str, str]]:
    """Every message name and every space (name → display name) the chat tools show ``caller``."""
    found: set[str] = set()
    token = None
    while True:
        page = services.chat.search_messages(SearchMessagesRequest(
            search_parameters=SearchParameters(), page_size=100, page_token=token), caller)
        found.update(message.message_id or "" for message in page.messages or [])
        token = page.next_page_token
        if not token:
            break
    conversations = services.chat.search_conversations(SearchConversationsRequest(page_size=1000), caller)
    spaces = {space.conversation_id or "": space.display_name or "" for space in conversations.conversations or []}
    return found, spaces


# -- ces ------------------------------------------------------------------------------------------------


def test_the_local_user_reads_every_ces_record_and_no_chat(demo: Services) -> None:
    connection, loaded = copy(demo, LOCAL_USER)

    assert loaded == counts(connection)
    assert loaded["apps"] == store_count(demo, ces.apps) == 1
    assert loaded["conversations"] == store_count(demo, ces.conversations) > len(scripts())  # + the eval replays
    assert loaded["evaluation_runs"] == store_count(demo, ces.evaluation_runs) == 1
    assert loaded["evaluation_results"] == store_count(demo, ces.evaluation_results) == 7
    # users/local is no chat user: the chat tools refuse it, and it reads no chat record here either.
    assert loaded["chat_spaces"] == loaded["chat_messages"] == 0


def test_conversations_hold_the_stored_values(demo: Services) -> None:
    connection, _ = copy(demo, LOCAL_USER)
    c = ces.conversations.c
    with demo.database.reading() as store:
        stored = {row.conversation_id: row for row in store.execute(select(ces.conversations)).all()}

    copied = rows(connection, "SELECT conversation_id, name, app, app_display_name, start_time, end_time, "
                              "duration_seconds, turn_count, source, channel_type, input_types FROM conversations")
    assert {row[0] for row in copied} == set(stored)
    for conversation_id, name, app, app_name, start, end, duration, turns, source, channel, inputs in copied:
        row = stored[conversation_id]
        assert name == f"{APP}/conversations/{conversation_id}" and app == str(APP) and app_name == "Acme Support"
        assert start == datetime.fromtimestamp(row.start_time_us / 1e6, UTC).replace(tzinfo=None)
        assert end == datetime.fromtimestamp(row.end_time_us / 1e6, UTC).replace(tzinfo=None)
        assert duration == pytest.approx((row.end_time_us - row.start_time_us) / 1e6)
        assert (turns, source, channel) == (row.turn_count, row.source, row.channel_type)
        assert "INPUT_TYPE_TEXT" in inputs.split(",")
    # demo-004 is the refund confirmed by the client tool: text, and a tool response.
    assert rows(connection, "SELECT channel_type, input_types LIKE '%INPUT_TYPE_TOOL_RESPONSE%' FROM conversations "
                            "WHERE conversation_id = 'demo-004'") == [("MULTIMODAL", True)]
    by_source = dict(rows(connection, "SELECT source, count(*) FROM conversations GROUP BY source"))
    assert by_source == {source: store_count(demo, ces.conversations, c.source == source)
                         for source in ("LIVE", "SIMULATOR", "EVAL")}


def test_evaluation_runs_and_results_answer_pass_rates(demo: Services) -> None:
    connection, _ = copy(demo, LOCAL_USER)

    [run] = rows(connection, "SELECT name, app, display_name, evaluation_dataset, evaluation_type, state, "
                             "initiated_by, total_count, completed_count, passed_count, failed_count, pass_rate "
                             "FROM evaluation_runs")
    name, app, display_name, dataset, kind, state, initiated_by, total, completed, passed, failed, rate = run
    assert app == str(APP) and name.startswith(f"{APP}/evaluationRuns/")
    assert (display_name, dataset, kind) == ("Demo regression run", f"{APP}/evaluationDatasets/regression", "GOLDEN")
    assert (state, initiated_by, total, completed, passed, failed) == ("COMPLETED", "users/local", 7, 7, 4, 3)
    assert rate == pytest.approx(4 / 7)
    results = rows(connection, "SELECT evaluation_status, count(*), count(evaluation_display_name), "
                               "count(error_message) FROM evaluation_results WHERE evaluation_run = "
                               f"'{name}' GROUP BY ALL ORDER BY 1")
    assert results == [("FAIL", 3, 3, 0), ("PASS", 4, 4, 0)]
    failed_ids = rows(connection, "SELECT evaluation_id FROM evaluation_results WHERE evaluation_status = 'FAIL' "
                                  "ORDER BY 1")
    assert failed_ids == [("cancelled-order-status",), ("gift-card-refund",), ("refund-amount-wrong",)]
    assert rows(connection, "SELECT avg(CASE WHEN evaluation_status = 'PASS' THEN 1 ELSE 0 END) "
                            "FROM evaluation_results")[0][0] == pytest.approx(4 / 7)


def test_only_results_in_error_carry_an_error_message(services: Services) -> None:
    install_app(services)
    with services.database.transaction() as connection:
        app_pk = services.apps.app_pk(connection, APP)
        for result_id, state, status in (("r1", "ERROR", ""), ("r2", "COMPLETED", "PASS")):
            connection.execute(insert(ces.evaluation_results).values(
                app_pk=app_pk, evaluation_id="gone", result_id=result_id, evaluation_run=f"{APP}/evaluationRuns/x",
                create_time_us=1_700_000_000_000_000, execution_state=state, evaluation_status=status, attempts=2,
                body={"errorInfo": {"errorMessage": f"lookup_order timed out ({result_id})"}}, plan={}))

    copied, _ = copy(services, LOCAL_USER)

    assert rows(copied, "SELECT result_id, evaluation, evaluation_display_name, evaluation_status, error_message, "
                        "create_time FROM evaluation_results ORDER BY 1") == [
        ("r1", f"{APP}/evaluations/gone", None, None, "lookup_order timed out (r1)", datetime(2023, 11, 14, 22, 13, 20)),
        ("r2", f"{APP}/evaluations/gone", None, "PASS", None, datetime(2023, 11, 14, 22, 13, 20))]


# -- chat -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("principal", ["users/ana", "users/dana@acme.test", "users/deploybot"])
def test_a_chat_user_reads_exactly_what_the_chat_tools_show_them(demo: Services, principal: str) -> None:
    caller = Caller(principal)
    connection, loaded = copy(demo, caller)
    messages, spaces = chat_tool_view(demo, caller)

    assert {row[0] for row in rows(connection, "SELECT name FROM chat_messages")} == messages
    assert dict(rows(connection, "SELECT name, display_name FROM chat_spaces")) == spaces
    assert loaded["chat_messages"] == len(messages) > 0
    assert 0 < loaded["chat_spaces"] < store_count(demo, chat.spaces)
    # Every message's space is one of the caller's, named as chat_spaces names it.
    assert rows(connection, "SELECT count(*) FROM chat_messages m LEFT JOIN chat_spaces s ON s.name = m.space "
                            "WHERE s.name IS NULL OR s.display_name IS DISTINCT FROM m.space_display_name") == [(0,)]


def test_ana_reads_nothing_of_the_channel_she_is_not_in(demo: Services) -> None:
    connection, _ = copy(demo, Caller("users/ana"))
    incidents = store_count(demo, chat.messages, chat.messages.c.space_id == "C06INCIDNT", chat.messages.c.listed)

    assert incidents > 0
    assert rows(connection, "SELECT count(*) FROM chat_messages WHERE space = 'spaces/C06INCIDNT' "
                            "OR space_display_name = 'incidents'") == [(0,)]
    assert ("spaces/C06INCIDNT",) not in rows(connection, "SELECT name FROM chat_spaces")
    # deploybot's private message to Ana is never listed, not even to her.
    assert rows(connection, "SELECT count(*) FROM chat_messages WHERE text LIKE 'Only visible to you%'") == [(0,)]
    # Direct and group messages are named by the other members, as search_conversations names them for her.
    assert dict(rows(connection, "SELECT name, display_name FROM chat_spaces WHERE space_type <> 'SPACE'")) == {
        "spaces/D06ANABEN": "Ben Okafor", "spaces/C06ANABENCY": "Ben Okafor, Cy Park"}


def test_a_member_of_some_spaces_reads_only_those(services: Services) -> None:
    """The chat tests' workspace: ana is in general, the DM and the group chat, not in secret."""
    ChatImporter(services.database).run(workspace())
    connection, loaded = copy(services, Caller("users/ana@example.com"))
    m = chat.messages.c
    mine = select(chat.memberships.c.space_id).where(chat.memberships.c.user_id == "ana")

    assert {row[0] for row in rows(connection, "SELECT display_name FROM chat_spaces")} == {
        "general", "Ben Okafor", "Ben Okafor, Cy Park"}
    assert loaded["chat_messages"] == store_count(services, chat.messages, m.listed, m.space_id.in_(mine))
    assert rows(connection, "SELECT count(*) FROM chat_messages WHERE text LIKE '%launch codes%' "
                            "OR text LIKE '%only ana sees%' OR text LIKE '%deleted words%'") == [(0,)]
    assert rows(connection, "SELECT sender_display_name, sender_type FROM chat_messages "
                            "WHERE sender = 'users/deploybot' LIMIT 1") == [("deploybot", "APP")]
    top = rows(connection, "SELECT sender_display_name, count(*) AS n FROM chat_messages "
                           "WHERE space_display_name = 'general' GROUP BY ALL ORDER BY n DESC, 1 LIMIT 1")
    assert top == [("Ben Okafor", 18)]  # ten roots and the first reply of all eight threads (Cy too)


# -- access -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("scopes", "visible"), [
    ({"chat"}, CHAT_TABLES),
    ({"https://www.googleapis.com/auth/chat.messages.readonly", "chat.spaces"}, CHAT_TABLES),
    ({"chat.messages.readonly"}, ("chat_messages",)),
    ({"chat.spaces.readonly"}, ("chat_spaces",)),
    ({"chat.messages.create"}, ()),  # may send, not read
    ({"ces"}, CES_TABLES),
    ({"analytics"}, ()),
    ({"*"}, CES_TABLES + CHAT_TABLES),
])
def test_scopes_decide_which_tables_are_filled(demo: Services, scopes: set[str], visible: tuple[str, ...]) -> None:
    caller = Caller("users/ana", frozenset(normalise_scope(scope) for scope in scopes))
    connection, loaded = copy(demo, caller)

    assert {table for table, count in loaded.items() if count} == set(visible)
    assert loaded == counts(connection)
    everyone, _ = copy(demo, LOCAL_USER)
    for table in builtin_tables():  # the same tables and columns for every caller
        assert columns(connection, table.name) == columns(everyone, table.name)


@pytest.mark.parametrize("caller", [LOCAL_USER, ANONYMOUS, Caller("users/nobody"), Caller("users/not an id!"),
                                    Caller("users/nobody@acme.test")])
def test_callers_that_are_no_chat_user_read_no_chat(demo: Services, caller: Caller) -> None:
    connection, loaded = copy(demo, caller)

    assert loaded["chat_spaces"] == loaded["chat_messages"] == 0
    assert rows(connection, "SELECT count(*) FROM chat_messages m JOIN chat_spaces s ON s.name = m.space") == [(0,)]
    assert loaded["conversations"] > 0


# -- row cap, schema, speed -------------------------------------------------------------------------------


def test_row_cap_keeps_the_newest_rows(demo: Services) -> None:
    statements: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        statements.append(statement)

    with demo.database.listening("before_cursor_execute", record):
        connection, loaded = copy(demo, Caller("users/ana"), row_cap=5)

    assert loaded == {"apps": 1, "conversations": 5, "evaluation_runs": 1, "evaluation_results": 5,
                      "chat_spaces": 4, "chat_messages": 5}
    c, m = ces.conversations.c, chat.messages.c
    mine = select(chat.memberships.c.space_id).where(chat.memberships.c.user_id == "ana")
    with demo.database.reading() as store:
        newest = store.execute(select(c.conversation_id).order_by(c.start_time_us.desc(), c.start_time_nanos.desc(),
                                                                  c.id.desc()).limit(5)).scalars().all()
        newest_messages = store.execute(select(m.message_id).where(m.listed, m.space_id.in_(mine))
                                        .order_by(m.create_time_us.desc(), m.row_id.desc()).limit(5)).scalars().all()
    assert [row[0] for row in rows(connection, "SELECT conversation_id FROM conversations")] == newest
    assert [row[0].rsplit("/", 1)[1] for row in rows(connection, "SELECT name FROM chat_messages")] == newest_messages
    # The cap is the store's LIMIT: each table's rows are selected newest first, and limited there.
    newest_first = [statement for statement in statements if "DESC" in statement]
    assert len(newest_first) == 6 and all("LIMIT" in statement for statement in newest_first)


def test_a_row_cap_of_zero_leaves_every_table_empty(demo: Services) -> None:
    connection, loaded = copy(demo, LOCAL_USER, row_cap=0)

    assert loaded == counts(connection) == dict.fromkeys(loaded, 0)
    with pytest.raises(ValueError, match="row_cap"):
        copy(demo, LOCAL_USER, row_cap=-1)


def test_builtin_tables_describe_the_created_tables(demo: Services) -> None:
    connection, _ = copy(demo, LOCAL_USER)
    described = builtin_tables()

    assert BUILTIN_SOURCE == "convener"
    assert {row[0] for row in rows(connection, "SHOW TABLES")} == {table.name for table in described}
    for table in described:
        assert isinstance(table, TableInfo) and table.description and table.row_count is None
        assert columns(connection, table.name) == [(column.name, DUCKDB_TYPES[column.type])
                                                   for column in table.columns]
        assert all(column.description for column in table.columns)
        comments = dict(rows(connection, "SELECT column_name, comment FROM duckdb_columns() "
                                         f"WHERE table_name = '{table.name}'"))
        assert comments == {column.name: column.description for column in table.columns}


def test_the_engine_answers_over_the_callers_copy_with_the_descriptions(demo: Services) -> None:
    engine = builtin_engine(demo.database, Caller("users/ana"))
    try:
        result = engine.execute("SELECT space_display_name, count(*) AS n FROM chat_messages GROUP BY 1 ORDER BY 1",
                                row_limit=100, timeout_seconds=10)
        tables = {table.name: table for table in engine.tables(samples=2)}
    finally:
        engine.close()

    assert "incidents" not in {row[0] for row in result.rows} and len(result.rows) == 4
    assert set(tables) == {table.name for table in builtin_tables()}
    for table in builtin_tables():
        found = tables[table.name]
        assert found.description == table.description
        assert [(c.name, c.type, c.description) for c in found.columns] == [
            (c.name, c.type, c.description) for c in table.columns]
    assert tables["chat_messages"].row_count == store_count(
        demo, chat.messages, chat.messages.c.listed, chat.messages.c.space_id != "C06INCIDNT")


def test_loading_again_replaces_the_tables(demo: Services) -> None:
    connection, first = copy(demo, Caller("users/ben"))
    second = load_builtin(connection, demo.database, Caller("users/ben"))

    assert first == second == counts(connection)


def test_ten_thousand_messages_load_well_under_a_second(services: Services) -> None:
    people = [ImportedUser("U1", "Pat Doe", "pat@example.com", preferred_id="pat"),
              ImportedUser("U2", "Sam Roe", "sam@example.com", preferred_id="sam")]
    start = micros(datetime(2026, 1, 5, tzinfo=UTC))
    talk = ImportedConversation("C1", "SPACE", "support", ("U1", "U2"), iter([
        ImportedMessage(f"m{index}", start + index * 1_000_000, f"ticket {index}: the order *AC-{index}* is late",
                        "slack", ("U1", "U2")[index % 2], thread_external_id=f"m{index - index % 10}",
                        threaded_reply=index % 10 != 0)
        for index in range(10_000)]), start)
    ChatImporter(services.database).run(RecordsExport(people, [talk]))

    timings = []
    for _ in range(3):  # the best of three: a busy machine slows a run, never speeds one up
        began = time.perf_counter()
        connection, loaded = copy(services, Caller("users/pat"))
        timings.append(time.perf_counter() - began)

    assert loaded["chat_messages"] == 10_000
    assert min(timings) < 1.0, f"loading 10,000 messages took {', '.join(f'{t:.2f}' for t in timings)} s"
    assert rows(connection, "SELECT sender_display_name, count(*) FROM chat_messages WHERE space_display_name = "
                            "'support' GROUP BY ALL ORDER BY 1") == [("Pat Doe", 5000), ("Sam Roe", 5000)]
    assert rows(connection, "SELECT max(create_time) - min(create_time) FROM chat_messages")[0][0].total_seconds() \
        == 9_999


# -- engines kept between questions -----------------------------------------------------------------------


def _view(engine: Any) -> tuple[Any, ...]:
    """What a question sees of an engine: its tables (samples and sizes), a column's values, a query's rows."""
    tables = engine.tables(samples=3)
    values = engine.distinct_values("chat_messages", "space_display_name")
    result = engine.execute("SELECT space_display_name, count(*) AS n FROM chat_messages GROUP BY 1 ORDER BY 1",
                            row_limit=100, timeout_seconds=10)
    return tables, values, result.rows


def test_a_kept_engine_shows_each_caller_what_a_fresh_one_shows_them(demo: Services) -> None:
    engines = BuiltinEngines(kept=1)
    only = ("chat_messages", "chat_spaces")
    try:
        seen = []
        for principal in ["users/ana", "users/ben", "users/ana", LOCAL_USER.principal]:
            fresh = builtin_engine(demo.database, Caller(principal), only=only)
            try:
                expected = _view(fresh)
            finally:
                fresh.close()
            with engines.engine(demo.database, Caller(principal), only=only) as kept:
                seen.append(kept)
                assert _view(kept) == expected
    finally:
        engines.close()

    assert seen[0] is seen[1] is seen[2]  # the one engine served every question
    assert "incidents" not in _view_values(demo, "users/ana", engines)


def _view_values(services: Services, principal: str, engines: BuiltinEngines) -> list[str]:
    """After ``close``, asking again makes a new engine: Ana's spaces only."""
    with engines.engine(services.database, Caller(principal), only=("chat_messages",)) as engine:
        return engine.distinct_values("chat_messages", "space_display_name")


def test_a_kept_engine_holds_no_rows_between_questions_and_reads_only_the_tables_given(demo: Services) -> None:
    engines = BuiltinEngines()
    try:
        with engines.engine(demo.database, Caller("users/ben"), only=("chat_messages",)) as engine:
            assert [t.name for t in engine.tables(samples=1)] == ["chat_messages"]
            assert engine.execute("SELECT count(*) FROM chat_messages", row_limit=1, timeout_seconds=10).rows[0][0] > 0
            assert engine.distinct_values("chat_spaces", "display_name") == []  # not loaded: never asked
            assert engine.execute("SELECT count(*) FROM chat_spaces", row_limit=1, timeout_seconds=10).rows == [(0,)]
            with pytest.raises(ApiError):  # a question reads the tables it was given alone
                engine.execute("SELECT count(*) FROM chat_spaces", row_limit=1, timeout_seconds=10,
                               only=("chat_messages",))
        kept = engines._idle[0]
        counts = kept._connection.execute(
            "SELECT (SELECT count(*) FROM chat_messages), (SELECT count(*) FROM conversations)").fetchall()
        assert counts == [(0, 0)] and kept._distinct == {}
    finally:
        engines.close()
    assert engines._idle == []


def test_an_engine_that_held_many_rows_is_closed_not_kept(demo: Services, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(builtin, "KEPT_ENGINE_ROWS", 1)
    engines = BuiltinEngines()
    try:
        with engines.engine(demo.database, Caller("users/ben"), only=("chat_messages",)) as engine:
            assert engine.execute("SELECT count(*) FROM chat_messages", row_limit=1, timeout_seconds=10).rows[0][0] > 1
        assert engines._idle == []
        with engines.engine(demo.database, Caller("users/local"), only=("chat_messages",)):
            pass  # no chat user: nothing loaded
        assert len(engines._idle) == 1
    finally:
        engines.close()
