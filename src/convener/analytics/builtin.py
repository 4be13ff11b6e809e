"""The built-in SQL source ``convener``: Convener's own records as read-only tables, so that a team can ask a
data agent about its agents ("how many conversations per app last week", "pass rate of evaluation runs by
app", "who posted most messages in #support").

The tables are copied, per question and per caller, from the store into an in-memory DuckDB database: the
store's schema is shaped for the services (times in microseconds, documents as JSON, IDs instead of names)
and differs between SQLite and PostgreSQL, while the copy has one flat, documented schema with names and
``TIMESTAMP`` columns that any generated SQL can read. Copying per caller is what makes access simple to
get right: a caller's copy holds only what the caller may read through the services' own tools, so no SQL
over it can reach anything else.

Access follows the services, with their own code where it can be reused:

- ces (``apps``, ``conversations``, ``evaluation_runs``, ``evaluation_results``): every record, to a caller
  that may use the ces service (``Caller.may_use("ces")``, the check ``tooling.call`` makes before any ces
  tool; ces tools ask no finer scope and ces keeps no per-user ownership).
- chat (``chat_spaces``, ``chat_messages``): only the spaces the caller is a member of, through
  ``ChatService.viewer`` (who the caller is as a chat user) and ``ChatService._my_spaces`` (their
  spaces), as every chat tool does; messages are only the ``listed`` ones (no system, deleted or private
  messages), as list_messages and search_messages return. A principal that is no chat user sees no chat
  record: ``users/local`` and ``users/anonymous`` included, which the chat service refuses outright. Like
  the tools, reading messages needs one of the scopes of list_messages (``READ_MESSAGES``) and reading
  spaces one of search_conversations' (``READ_SPACES``), on top of ``Caller.may_use("chat")``.

A table the caller may not read is still created, empty: the schema is the same for every caller, so SQL
naming such a table runs (and finds nothing) instead of failing with an error that would tell the caller
what exists. Every table holds at most ``row_cap`` rows, the newest ones, chosen by the store's ORDER BY
and LIMIT (so a capped table may name a space or app that its own table left out). Rows stream from the
store in batches (SQLAlchemy Core, the same SELECTs on SQLite and PostgreSQL, names such as
``spaces/…/messages/…`` built by the store) and go into DuckDB a batch per statement, as one list per
column that DuckDB unnests: 10,000 messages load in 0.2-0.3 s from SQLite or PostgreSQL,
where row-by-row inserts would take seconds.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

import duckdb
from sqlalchemy import Connection, Float, Select, String, and_, case, cast, func, select
from sqlalchemy.sql.elements import ColumnElement

from convener.analytics.budget import DEFAULT_BUDGET, Budget
from convener.analytics.engines import DataEngine, DuckDBEngine
from convener.analytics.shapes import BOOLEAN, FLOAT, INTEGER, STRING, TIMESTAMP, ColumnInfo, TableInfo
from convener.api.errors import InvalidArgument, PermissionDenied
from convener.api.paging import PageTokens
from convener.auth.caller import Caller
from convener.ces import tables as ces
from convener.ces.evaluation.models import ExecutionState
from convener.ces.models import INPUT_TYPE_BITS
from convener.ces.names import EvaluationName
from convener.chat import tables as chat
from convener.chat.service import ChatService, Viewer
from convener.chat.tools import READ_MESSAGES, READ_SPACES
from convener.store.database import Database

BUILTIN_SOURCE = "convener"
"""The name the built-in source is registered under; a data agent's tables reference it as ``datasetId``."""

DEFAULT_ROW_CAP = 50_000
BATCH_SIZE = 2_000
"""Rows fetched from the store, and inserted into DuckDB, at a time."""

_DUCKDB_TYPES = {STRING: "VARCHAR", INTEGER: "BIGINT", FLOAT: "DOUBLE", BOOLEAN: "BOOLEAN", TIMESTAMP: "TIMESTAMP"}
"""The DuckDB type of each column type the tables use. Timestamps arrive as integer microseconds since the
epoch (as the store keeps them) and become ``TIMESTAMP`` (UTC, without a zone) in the INSERT."""

# ---------------------------------------------------------------------------------------------- the schema


def _column(name: str, type_: str, description: str) -> ColumnInfo:
    return ColumnInfo(name, type_, description)


_APP = _column("app", STRING, "The app (its resource name, apps.name).")
_APP_DISPLAY_NAME = _column("app_display_name", STRING, "The app's display name (apps.display_name).")

APPS = TableInfo("apps", (
    _column("name", STRING, "Resource name, projects/{project}/locations/{location}/apps/{app}; the `app` "
                            "column of the other ces tables refers to it."),
    _column("app_id", STRING, "The app's ID, the last part of its name."),
    _column("display_name", STRING, "The app's display name."),
    _column("description", STRING, "What the app is for."),
    _column("create_time", TIMESTAMP, "When the app was created (UTC)."),
    _column("update_time", TIMESTAMP, "When the app was last changed (UTC)."),
), "Agent apps (ces).")

CONVERSATIONS = TableInfo("conversations", (
    _column("name", STRING, "Resource name, {app}/conversations/{conversation_id}."),
    _column("conversation_id", STRING, "The conversation's ID (its session ID)."),
    _APP,
    _APP_DISPLAY_NAME,
    _column("start_time", TIMESTAMP, "When the conversation started (UTC)."),
    _column("end_time", TIMESTAMP, "When its last turn ended (UTC); null while it has none."),
    _column("duration_seconds", FLOAT, "end_time - start_time, in seconds; null without an end time."),
    _column("turn_count", INTEGER, "How many turns (user input and the agents' answer) it had."),
    _column("source", STRING, "Where it came from: LIVE (real users), SIMULATOR, EVAL (an evaluation "
                              "run's replay) or AGENT_TOOL."),
    _column("channel_type", STRING, "TEXT, AUDIO or MULTIMODAL (CHANNEL_TYPE_UNSPECIFIED when unknown)."),
    _column("input_types", STRING, "The kinds of input it had, comma-separated: INPUT_TYPE_TEXT, "
                                   "INPUT_TYPE_EVENT, INPUT_TYPE_AUDIO, INPUT_TYPE_TOOL_RESPONSE, ..."),
    _column("entry_agent", STRING, "The agent the conversation started with (resource name)."),
    _column("deployment", STRING, "The deployment it ran on (resource name), if any."),
    _column("app_version", STRING, "The app version it ran (resource name), if any."),
    _column("language_code", STRING, "The conversation's language, e.g. en-US."),
), "Recorded conversations of the agent apps (ces), newest first.")

EVALUATION_RUNS = TableInfo("evaluation_runs", (
    _column("name", STRING, "Resource name, {app}/evaluationRuns/{run_id}; evaluation_results."
                            "evaluation_run refers to it."),
    _column("run_id", STRING, "The run's ID."),
    _APP,
    _APP_DISPLAY_NAME,
    _column("display_name", STRING, "The run's display name."),
    _column("evaluation_dataset", STRING, "The evaluation dataset it ran (resource name), if it ran one."),
    _column("evaluation_type", STRING, "GOLDEN or SCENARIO."),
    _column("state", STRING, "RUNNING, COMPLETED, ERROR or CANCELLED."),
    _column("create_time", TIMESTAMP, "When the run started (UTC)."),
    _column("initiated_by", STRING, "Who started it (users/...)."),
    _column("app_version_display_name", STRING, "The app version it evaluated, if one was named."),
    _column("total_count", INTEGER, "Evaluation results in the run."),
    _column("pending_count", INTEGER, "Results not yet finished."),
    _column("completed_count", INTEGER, "Results that ran to an outcome (passed_count + failed_count)."),
    _column("passed_count", INTEGER, "Completed results that passed."),
    _column("failed_count", INTEGER, "Completed results that failed."),
    _column("error_count", INTEGER, "Results that could not be run (an error, not a failure)."),
    _column("cancelled_count", INTEGER, "Results cancelled before they ran."),
    _column("pass_rate", FLOAT, "passed_count / completed_count, from 0 to 1; null when none completed."),
), "Evaluation runs of the agent apps (ces), newest first.")

EVALUATION_RESULTS = TableInfo("evaluation_results", (
    _column("name", STRING, "Resource name, {evaluation}/results/{result_id}."),
    _column("result_id", STRING, "The result's ID."),
    _column("evaluation", STRING, "The evaluation (resource name, {app}/evaluations/{evaluation_id})."),
    _column("evaluation_id", STRING, "The evaluation's ID."),
    _column("evaluation_display_name", STRING, "The evaluation's display name (null once it is deleted)."),
    _APP,
    _APP_DISPLAY_NAME,
    _column("evaluation_run", STRING, "The run it belongs to (evaluation_runs.name)."),
    _column("create_time", TIMESTAMP, "When the result was created, i.e. its run started (UTC)."),
    _column("execution_state", STRING, "QUEUED, RUNNING, COMPLETED, ERROR or CANCELLED."),
    _column("evaluation_status", STRING, "The outcome of a completed result: PASS or FAIL; null until it "
                                         "completes, and for results that could not run."),
    _column("attempts", INTEGER, "How many times it was tried."),
    _column("error_message", STRING, "Why it could not be run (execution_state ERROR only)."),
), "Evaluation results (one evaluation in one run) of the agent apps (ces), newest first.")

CHAT_SPACES = TableInfo("chat_spaces", (
    _column("name", STRING, "Resource name, spaces/{space}; chat_messages.space refers to it."),
    _column("display_name", STRING, "The space's name (e.g. support-agent, without '#'); for direct and "
                                    "group messages, the other members' names."),
    _column("space_type", STRING, "SPACE, GROUP_CHAT or DIRECT_MESSAGE."),
    _column("create_time", TIMESTAMP, "When the space was created (UTC), if known."),
    _column("last_active_time", TIMESTAMP, "When its last message was posted (UTC)."),
), "Team chat spaces the caller is a member of, most recently active first.")

CHAT_MESSAGES = TableInfo("chat_messages", (
    _column("name", STRING, "Resource name, spaces/{space}/messages/{message}."),
    _column("space", STRING, "The space it was posted in (chat_spaces.name)."),
    _column("space_display_name", STRING, "That space's display name (as chat_spaces.display_name)."),
    _column("thread", STRING, "Its thread, spaces/{space}/threads/{thread}."),
    _column("threaded_reply", BOOLEAN, "Whether it is a reply in a thread (false for a thread's first "
                                       "message)."),
    _column("sender", STRING, "Who posted it, users/{user}."),
    _column("sender_display_name", STRING, "The sender's display name."),
    _column("sender_type", STRING, "HUMAN or APP (a bot)."),
    _column("create_time", TIMESTAMP, "When it was posted (UTC)."),
    _column("last_update_time", TIMESTAMP, "When it was last edited (UTC), if it was."),
    _column("text", STRING, "The message's text, in Markdown."),
    _column("has_link", BOOLEAN, "Whether the text holds a link."),
), "Team chat messages of the spaces the caller is a member of, newest first.")

_TABLES = (APPS, CONVERSATIONS, EVALUATION_RUNS, EVALUATION_RESULTS, CHAT_SPACES, CHAT_MESSAGES)


def builtin_tables() -> list[TableInfo]:
    """The tables and columns of the source, the same for every caller (what a caller may not read is
    empty, not missing), without data: what a data agent's context and the planner are told."""
    return list(_TABLES)


# ---------------------------------------------------------------------------------------------- the engine


class _BuiltinEngine(DuckDBEngine):
    """The caller's copy as a data engine; its tables carry the descriptions of ``builtin_tables`` (DuckDB's
    catalog gives names, types, sizes and samples, not what a column means)."""

    def __init__(self, connection: duckdb.DuckDBPyConnection, *, budget: Budget) -> None:
        super().__init__(connection, kind="convener", budget=budget)
        self._only: frozenset[str] | None = None
        self._loaded: dict[str, int] = {}

    def fill(self, database: Database, caller: Caller, row_cap: int, only: frozenset[str] | None) -> None:
        """Empty every table, then load what ``caller`` may read of the tables ``only`` names (all: None)."""
        # Made empty, or emptied when its last question ended (``empty``): nothing to delete here.
        with self._catalog_lock:
            self._distinct.clear()  # another caller's values, or older ones
        self._only, self._loaded = only, {}
        self._loaded = _fill(self._connection, database, caller, row_cap, only)

    def rows_loaded(self) -> int:
        return sum(self._loaded.values())

    def idle(self) -> bool:
        """Whether no query runs on the copy (an interrupted one may still be stopping) and it is open."""
        with self._cursor_lock:
            return not self._running and not self._closing

    def empty(self) -> None:
        """Drop the rows, so that nothing of the caller's stays in an engine kept for the next question."""
        with self._catalog_lock:
            self._distinct.clear()
        filled = [name for name, rows in self._loaded.items() if rows]
        self._only, self._loaded = None, {}
        if filled:
            self._connection.execute(";\n".join(f'DELETE FROM "{name}"' for name in filled))

    def _read_distinct(self, table: str, column: str, limit: int) -> list[str]:
        found = self._find_table(table)
        if not self._loaded.get(found.name) and any(c.name.lower() == column.lower() for c in found.columns):
            return []  # an empty table, or one the question may not read: no query needed to know
        return super()._read_distinct(table, column, limit)

    def tables(self, *, samples: int = 5) -> list[TableInfo]:
        # The tables never change but by ``fill``, so the catalog read when the engine was made stands (its
        # sizes are the rows loaded); the tables left empty because the question may not read them are not
        # sampled, nor are the empty ones (nothing to read).
        described = {table.name: table for table in _TABLES}
        catalog = [table for table in self._current_catalog() if self._only is None or table.name in self._only]
        return [replace(_described(self._table_info(table, samples if self._loaded.get(table.name) else 0),
                                   described.get(table.name)),
                        row_count=self._loaded.get(table.name, 0)) for table in catalog]


def _described(found: TableInfo, known: TableInfo | None) -> TableInfo:
    if known is None:
        return found
    columns = tuple(replace(column, description=(known.column(column.name) or column).description)
                    for column in found.columns)
    return replace(found, columns=columns, description=known.description)


def _blank_engine(budget: Budget) -> _BuiltinEngine:
    """An in-memory DuckDB with the source's (empty) tables, locked as the engines lock loaded data files (no
    file or network access, no extensions, no SET), held to ``budget`` like every DuckDB source."""
    connection = duckdb.connect(":memory:", config=budget.duckdb_config())
    try:
        connection.execute(";\n".join(_create_statements(table) for table in _TABLES))
        connection.execute("SET enable_external_access = false")
        connection.execute("SET lock_configuration = true")
        return _BuiltinEngine(connection, budget=budget)
    except BaseException:
        connection.close()
        raise


def builtin_engine(database: Database, caller: Caller, *, row_cap: int = DEFAULT_ROW_CAP,
                   budget: Budget = DEFAULT_BUDGET, only: Collection[str] | None = None) -> DataEngine:
    """A fresh in-memory DuckDB holding what ``caller`` may read (``load_builtin``), locked, for one question;
    close it after. ``only``: the tables the question may read (its references); the others exist but stay
    empty and unlisted, as a question could not read them anyway."""
    if row_cap < 0:
        raise ValueError("row_cap must not be negative")
    engine = _blank_engine(budget)
    try:
        engine.fill(database, caller, row_cap, _lowered(only))
    except BaseException:
        engine.close()
        raise
    return engine


def _lowered(only: Collection[str] | None) -> frozenset[str] | None:
    return None if only is None else frozenset(name.lower() for name in only)


KEPT_ENGINE_ROWS = 10_000
"""An engine that held more rows than this is closed after its question rather than kept: deleted rows may keep
their memory in DuckDB until it is closed, and copying that many rows costs far more than making an engine."""


class BuiltinEngines:
    """The built-in source's engines, kept between questions: making one (a DuckDB, its tables and their
    comments, its catalog) costs tens of milliseconds, more than the rest of most questions. An engine is
    emptied when its question ends and filled again with the next caller's records when the next question
    begins, so no caller ever sees another's; one still busy (a query being interrupted) is closed instead."""

    def __init__(self, budget: Budget = DEFAULT_BUDGET, *, kept: int = 2) -> None:
        self.budget = budget
        self._kept = kept
        self._idle: list[_BuiltinEngine] = []
        self._lock = threading.Lock()
        self._closed = False

    @contextmanager
    def engine(self, database: Database, caller: Caller, *, row_cap: int = DEFAULT_ROW_CAP,
               only: Collection[str] | None = None) -> Iterator[DataEngine]:
        with self._lock:
            engine = self._idle.pop() if self._idle else None
        if engine is None:
            engine = _blank_engine(self.budget)
        try:
            engine.fill(database, caller, row_cap, _lowered(only))
        except BaseException:
            engine.close()
            raise
        try:
            yield engine
        finally:
            self._give_back(engine)

    def _give_back(self, engine: _BuiltinEngine) -> None:
        if engine.idle() and engine.rows_loaded() <= KEPT_ENGINE_ROWS:
            try:
                engine.empty()
            except Exception:  # noqa: BLE001 — an engine that cannot be emptied is not kept
                engine.close()
                return
            with self._lock:
                if not self._closed and len(self._idle) < self._kept:
                    self._idle.append(engine)
                    return
        engine.close()

    def close(self) -> None:
        with self._lock:
            idle, self._idle, self._closed = self._idle, [], True
        for engine in idle:
            engine.close()


# ---------------------------------------------------------------------------------------------- loading


Columns = dict[str, list[Any]]
"""A batch of rows as one list of values per column, by column name."""


@dataclass(frozen=True)
class _Reader:
    """How one table is read: a SELECT labelled with the table's columns (times as the store's integer
    microseconds, names built by the store), newest first and limited to the row cap; and what is left to do
    in Python, a column at a time (``finish``). The SELECT may carry more columns, for ``finish`` to use."""

    statement: Select[Any]
    finish: Callable[[Columns], None] | None = None


def load_builtin(connection: duckdb.DuckDBPyConnection, database: Database, caller: Caller, *,
                 row_cap: int = DEFAULT_ROW_CAP, only: Collection[str] | None = None) -> dict[str, int]:
    """Create the source's tables in ``connection`` (replacing tables of those names) and fill them with the
    records ``caller`` may read, at most ``row_cap`` per table, newest first; the rows loaded, per table.
    ``only``: fill these tables alone (lowercase names), the others stay empty.

    Every table is read in one read-only transaction of the store, so the tables agree with each other
    (a message's space is in chat_spaces, unless row_cap left it out)."""
    if row_cap < 0:
        raise ValueError("row_cap must not be negative")
    connection.execute(";\n".join(_create_statements(table) for table in _TABLES))
    return _fill(connection, database, caller, row_cap, only)


def _fill(connection: duckdb.DuckDBPyConnection, database: Database, caller: Caller, row_cap: int,
          only: Collection[str] | None) -> dict[str, int]:
    """Fill the (empty) tables with the records ``caller`` may read; the rows loaded, per table."""
    loaded = dict.fromkeys((table.name for table in _TABLES), 0)
    with database.reading() as store:
        for table, reader in _readers(store, database, caller, row_cap, only).items():
            loaded[table.name] = _copy(connection, store, table, reader)
    return loaded


def _readers(store: Connection, database: Database, caller: Caller, row_cap: int,
             only: Collection[str] | None = None) -> dict[TableInfo, _Reader]:
    """The readers of the tables the caller may read (of those ``only`` names, when given); the other tables
    stay empty."""
    readers: dict[TableInfo, _Reader] = {}
    if row_cap == 0:
        return readers

    def wanted(table: TableInfo) -> bool:
        return only is None or table.name in only

    if caller.may_use("ces"):
        readers.update({table: read(row_cap) for table, read in _CES_READERS.items() if wanted(table)})
    chat_wanted = [table for table in (CHAT_SPACES, CHAT_MESSAGES) if wanted(table)]
    chat_reader = _ChatReader.of(store, database, caller) if chat_wanted else None
    if chat_reader is not None and CHAT_SPACES in chat_wanted and caller.has_any("chat", READ_SPACES):
        readers[CHAT_SPACES] = chat_reader.spaces(row_cap)
    if chat_reader is not None and CHAT_MESSAGES in chat_wanted and caller.has_any("chat", READ_MESSAGES):
        readers[CHAT_MESSAGES] = chat_reader.messages(row_cap)
    return readers


def _create_statements(table: TableInfo) -> str:
    """The table, with its descriptions as DuckDB comments, so that the copy documents itself."""
    columns = ", ".join(f'"{column.name}" {_DUCKDB_TYPES[column.type]}' for column in table.columns)
    return ";\n".join([
        f'CREATE OR REPLACE TABLE "{table.name}" ({columns})',
        f'COMMENT ON TABLE "{table.name}" IS {_literal(table.description or "")}',
        *(f'COMMENT ON COLUMN "{table.name}"."{column.name}" IS {_literal(column.description or "")}'
          for column in table.columns),
    ])


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _copy(connection: duckdb.DuckDBPyConnection, store: Connection, table: TableInfo, reader: _Reader) -> int:
    """Stream the reader's rows into the table; how many there were. ``yield_per`` streams (a server-side
    cursor on PostgreSQL), so no more than a batch of rows is held at a time however many are read."""
    insert = _insert_statement(table)
    copied = 0
    for batch in store.execute(reader.statement.execution_options(yield_per=BATCH_SIZE)).partitions():
        columns = {name: list(values) for name, values in zip(batch[0]._fields, zip(*batch), strict=True)}
        if reader.finish is not None:
            reader.finish(columns)
        connection.execute(insert, [columns[column.name] for column in table.columns])
        copied += len(batch)
    return copied


def _insert_statement(table: TableInfo) -> str:
    """One INSERT for a whole batch: each column goes in as one list parameter, which DuckDB unnests (the
    lists side by side make the rows). Row-by-row ``executemany`` is over a hundred times slower."""
    unnested = ", ".join(
        f"unnest(?::{'BIGINT' if column.type == TIMESTAMP else _DUCKDB_TYPES[column.type]}[]) AS c{index}"
        for index, column in enumerate(table.columns))
    converted = ", ".join(f"make_timestamp(c{index})" if column.type == TIMESTAMP else f"c{index}"
                          for index, column in enumerate(table.columns))
    return f'INSERT INTO "{table.name}" SELECT {converted} FROM (SELECT {unnested})'


def _unset_as_null(column: ColumnElement[str]) -> ColumnElement[str]:
    """The store keeps unset optional text as ''; in SQL, unset is NULL."""
    return func.nullif(column, "", type_=String)


# ---------------------------------------------------------------------------------------------- ces


@lru_cache(maxsize=8)  # the same statement for every caller: built once per row cap
def _apps(row_cap: int) -> _Reader:
    a = ces.apps.c
    return _Reader(
        select(a.name, a.app_id, a.display_name, a.description, a.create_time_us.label("create_time"),
               a.update_time_us.label("update_time"))
        .order_by(a.create_time_us.desc(), a.id.desc()).limit(row_cap))


@lru_cache(maxsize=8)  # the same statement for every caller: built once per row cap
def _conversations(row_cap: int) -> _Reader:
    c, app = ces.conversations.c, ces.apps.c
    return _Reader(
        select((app.name + "/conversations/" + c.conversation_id).label("name"), c.conversation_id,
               app.name.label("app"), app.display_name.label("app_display_name"),
               c.start_time_us.label("start_time"), c.end_time_us.label("end_time"),
               (c.end_time_us - c.start_time_us).label("duration_seconds"), c.turn_count, c.source,
               c.channel_type, c.input_types, _unset_as_null(c.entry_agent).label("entry_agent"),
               _unset_as_null(c.deployment).label("deployment"), _unset_as_null(c.app_version).label("app_version"),
               _unset_as_null(c.language_code).label("language_code"))
        .join(ces.apps, app.id == c.app_pk)
        .order_by(c.start_time_us.desc(), c.start_time_nanos.desc(), c.id.desc()).limit(row_cap),
        _finish_conversations)


def _finish_conversations(columns: Columns) -> None:
    """Durations from microseconds to seconds, and input types from their stored bitmask (``INPUT_TYPE_BITS``,
    a mask so that filters need no join) to their names."""
    columns["duration_seconds"] = [None if micros is None else micros / 1e6 for micros in columns["duration_seconds"]]
    names: dict[int, str] = {}
    columns["input_types"] = [names.get(mask) or names.setdefault(mask, _input_types(mask))
                              for mask in columns["input_types"]]


def _input_types(mask: int) -> str:
    return ",".join(name for name, bit in INPUT_TYPE_BITS.items() if mask & bit)


@lru_cache(maxsize=8)  # the same statement for every caller: built once per row cap
def _evaluation_runs(row_cap: int) -> _Reader:
    r, app = ces.evaluation_runs.c, ces.apps.c
    pass_rate = case((r.completed_count > 0, cast(r.passed_count, Float) / r.completed_count), else_=None)
    return _Reader(
        select((app.name + "/evaluationRuns/" + r.run_id).label("name"), r.run_id, app.name.label("app"),
               app.display_name.label("app_display_name"),
               r.body["displayName"].as_string().label("display_name"),
               r.body["evaluationDataset"].as_string().label("evaluation_dataset"),
               r.body["evaluationType"].as_string().label("evaluation_type"),
               r.state, r.create_time_us.label("create_time"), _unset_as_null(r.initiated_by).label("initiated_by"),
               _unset_as_null(r.app_version_display_name).label("app_version_display_name"),
               (r.pending_count + r.completed_count + r.error_count + r.cancelled_count).label("total_count"),
               r.pending_count, r.completed_count, r.passed_count, r.failed_count, r.error_count,
               r.cancelled_count, pass_rate.label("pass_rate"))
        .join(ces.apps, app.id == r.app_pk)
        .order_by(r.create_time_us.desc(), r.id.desc()).limit(row_cap))


@lru_cache(maxsize=8)  # the same statement for every caller: built once per row cap
def _evaluation_results(row_cap: int) -> _Reader:
    """Results with their evaluation's display name. A result's document holds its whole replay (spans,
    transcripts), so only the error message is read from it, and only for results in error: the CASE
    keeps the store from parsing the documents of the others."""
    e, d, app = ces.evaluation_results.c, ces.definitions.c, ces.apps.c
    evaluation = app.name + f"/{EvaluationName.collection}/" + e.evaluation_id
    definition = and_(d.app_pk == e.app_pk, d.collection == EvaluationName.collection,
                      d.resource_id == e.evaluation_id)
    error_message = case((e.execution_state == ExecutionState.ERROR.value,
                          e.body[("errorInfo", "errorMessage")].as_string()), else_=None)
    return _Reader(
        select((evaluation + "/results/" + e.result_id).label("name"), e.result_id, evaluation.label("evaluation"),
               e.evaluation_id, d.display_name.label("evaluation_display_name"), app.name.label("app"),
               app.display_name.label("app_display_name"), e.evaluation_run, e.create_time_us.label("create_time"),
               e.execution_state, _unset_as_null(e.evaluation_status).label("evaluation_status"), e.attempts,
               error_message.label("error_message"))
        .select_from(ces.evaluation_results.join(ces.apps, app.id == e.app_pk)
                     .outerjoin(ces.definitions, definition))
        .order_by(e.create_time_us.desc(), e.id.desc()).limit(row_cap))


_CES_READERS: dict[TableInfo, Callable[[int], _Reader]] = {
    APPS: _apps, CONVERSATIONS: _conversations, EVALUATION_RUNS: _evaluation_runs,
    EVALUATION_RESULTS: _evaluation_results}


# ---------------------------------------------------------------------------------------------- chat


_NO_TOKENS = PageTokens(b"unused: the built-in source issues no page tokens")
"""A ChatService needs page tokens for its paged tools; only its access rules are used here, which issue none."""


@dataclass
class _ChatReader:
    """The caller's chat records, decided by the chat service's own code (``ChatService.viewer`` and
    ``_my_spaces``), so that this source can never show more than the chat tools would."""

    store: Connection
    service: ChatService
    viewer: Viewer
    space_names: dict[str, str]

    @classmethod
    def of(cls, store: Connection, database: Database, caller: Caller) -> _ChatReader | None:
        """The reader for ``caller``, or None when the caller may not use chat or is no chat user."""
        if not caller.may_use("chat"):
            return None
        service = ChatService(database, _NO_TOKENS)
        try:
            viewer = service.viewer(store, caller)
        except (PermissionDenied, InvalidArgument):
            return None  # users/local, users/anonymous, or a principal that names no user
        return cls(store, service, viewer, {}) if viewer.user_id is not None else None

    def spaces(self, row_cap: int) -> _Reader:
        s = chat.spaces.c
        return _Reader(
            select(("spaces/" + s.space_id).label("name"), s.display_name, s.space_type,
                   s.create_time_us.label("create_time"), s.last_active_time_us.label("last_active_time"),
                   s.space_id)
            .where(s.space_id.in_(self.service._my_spaces(self.viewer)))
            .order_by(s.last_active_time_us.desc(), s.space_id).limit(row_cap),
            lambda columns: self._name_spaces(columns, "display_name"))

    def messages(self, row_cap: int) -> _Reader:
        m, s, u = chat.messages.c, chat.spaces.c, chat.users.c
        space = "spaces/" + m.space_id
        sender_type = case((m.sender_id.is_(None), None), (u.user_type == "APP", "APP"), else_="HUMAN")
        return _Reader(
            select((space + "/messages/" + m.message_id).label("name"), space.label("space"),
                   s.display_name.label("space_display_name"), (space + "/threads/" + m.thread_id).label("thread"),
                   m.threaded_reply, ("users/" + m.sender_id).label("sender"),
                   u.display_name.label("sender_display_name"), sender_type.label("sender_type"),
                   m.create_time_us.label("create_time"), m.last_update_time_us.label("last_update_time"),
                   m.body.label("text"), m.has_link, m.space_id)
            .select_from(chat.messages.join(chat.spaces, s.space_id == m.space_id)
                         .outerjoin(chat.users, u.user_id == m.sender_id))
            # Listed messages only (no system, deleted or private ones), of the caller's spaces: as the tools.
            .where(m.listed, m.space_id.in_(self.service._my_spaces(self.viewer)))
            .order_by(m.create_time_us.desc(), m.row_id.desc()).limit(row_cap),
            lambda columns: self._name_spaces(columns, "space_display_name"))

    def _name_spaces(self, columns: Columns, field: str) -> None:
        """Spaces without a name of their own (direct and group messages) named as the chat tools name them
        for the caller, by the other members (``ChatService._display_names``); each looked up once."""
        unnamed = {space_id for space_id, name in zip(columns["space_id"], columns[field], strict=True)
                   if not name} - self.space_names.keys()
        if unnamed:
            found = self.store.execute(select(chat.spaces.c.space_id, chat.spaces.c.display_name)
                                       .where(chat.spaces.c.space_id.in_(sorted(unnamed))))
            self.space_names.update(ChatService._display_names(self.store, self.viewer, found.all()))
        columns[field] = [name or self.space_names[space_id]
                          for space_id, name in zip(columns["space_id"], columns[field], strict=True)]
