"""The store: migrations, the schema they build, the installation secret and the embedded default."""

from __future__ import annotations

from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Connection, bindparam, insert, inspect, select, text

import convener.analytics.tables
import convener.auth.tables
import convener.ces.conversation_bodies
import convener.ces.tables
import convener.chat.tables
import convener.knowledge.tables
import convener.jobs.tables
import convener.longrunning.tables
from convener.chat.tables import FULL_TEXT_OBJECTS as CHAT_FULL_TEXT
from convener.knowledge.tables import FULL_TEXT_OBJECTS as KNOWLEDGE_FULL_TEXT
from convener.config import Settings
from convener.services import Services
from convener.store import database as database_module
from convener.store.database import Database
from convener.store.schema import Json, installation, metadata
from tests.conftest import POSTGRES_URL

EXPECTED_TABLES = {"installation", "api_keys", "ces_apps", "ces_conversations", "ces_conversation_turns", "ces_definitions",
                   "ces_sessions", "ces_evaluation_runs", "ces_evaluation_results", "ces_evaluation_aggregates", "ces_changelogs",
                   "operations", "jobs", "chat_users", "chat_links",
                   "chat_spaces", "chat_memberships", "chat_messages", "chat_mentions",
                   "knowledge_data_sources", "knowledge_documents", "knowledge_chunks", "knowledge_search_generation",
                   "analytics_sql_sources", "analytics_data_agents", "analytics_conversations", "analytics_messages"}


@pytest.fixture(autouse=True)
def _no_store_settings_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in ("CONVENER_DATABASE_URL", "CONVENER_DATA_DIR", "CONVENER_CONFIG"):
        monkeypatch.delenv(variable, raising=False)


def _schema(database: Database) -> dict[str, object]:
    """Tables with their columns, indexes, unique constraints and foreign keys, as reflected."""
    inspector = inspect(database.engine)
    described: dict[str, object] = {}
    for table in sorted(inspector.get_table_names()):
        described[table] = (
            [(c["name"], str(c["type"]), c["nullable"]) for c in inspector.get_columns(table)],
            sorted((i["name"], tuple(i["column_names"]), bool(i["unique"])) for i in inspector.get_indexes(table)),
            sorted((u["name"], tuple(u["column_names"])) for u in inspector.get_unique_constraints(table)),
            sorted((f["name"], tuple(f["constrained_columns"]), f["referred_table"]) for f in inspector.get_foreign_keys(table)),
        )
    return described


def test_every_table_is_in_the_shared_metadata() -> None:
    assert convener.ces.tables.apps.metadata is metadata
    assert convener.auth.tables.api_keys.metadata is metadata
    assert convener.chat.tables.messages.metadata is metadata
    assert set(metadata.tables) == EXPECTED_TABLES


HEAD = "0015"


def test_upgrading_a_store_of_the_first_revision_keeps_recorded_nanoseconds(empty_database_url: str) -> None:
    database = Database(empty_database_url)
    try:
        database.migrate("0001")
        with database.transaction() as connection:
            connection.exec_driver_sql(
                "INSERT INTO ces_apps (name, parent, app_id, display_name, description, create_time_us,"
                " update_time_us, etag) VALUES ('projects/p/locations/l/apps/a', 'projects/p/locations/l', 'a',"
                " '', '', 0, 0, 'e')"
            )
            for conversation_id, start, end in [("exact", "2026-01-01T00:00:00.000001234Z", None),
                                                ("micro", "2026-01-01T00:00:00.000001Z", "2026-01-01T00:00:01.5Z")]:
                body = {"name": f"projects/p/locations/l/apps/a/conversations/{conversation_id}", "startTime": start}
                if end:
                    body["endTime"] = end
                connection.execute(
                    text(
                        "INSERT INTO ces_conversations (app_pk, conversation_id, start_time_us, end_time_us,"
                        " turn_count, source, input_types, channel_type, entry_agent, deployment, app_version,"
                        " language_code, body) VALUES (1, :id, 1767225600000001, :end, 0, 'LIVE', 0, 'TEXT',"
                        " '', '', '', '', :body)"
                    ).bindparams(bindparam("body", type_=Json)),
                    {"id": conversation_id, "end": 1767225601500000 if end else None, "body": body},
                )

        database.migrate()

        with database.transaction() as connection:
            rows = connection.exec_driver_sql(
                "SELECT conversation_id, start_time_nanos, end_time_nanos FROM ces_conversations ORDER BY conversation_id"
            ).all()
        assert [tuple(row) for row in rows] == [("exact", 234, None), ("micro", 0, 0)]
    finally:
        database.dispose()


def test_upgrading_makes_jobs_of_the_results_a_stopped_server_left_unfinished(empty_database_url: str) -> None:
    """Before jobs, a starting server queued these again; the upgrade makes them jobs, counting their attempts."""
    database = Database(empty_database_url)
    app, run = "projects/p/locations/l/apps/a", "projects/p/locations/l/apps/a/evaluationRuns/r1"
    try:
        database.migrate("0007")
        with database.transaction() as connection:
            connection.exec_driver_sql(
                "INSERT INTO ces_apps (name, parent, app_id, display_name, description, create_time_us,"
                " update_time_us, etag) VALUES ('projects/p/locations/l/apps/a', 'projects/p/locations/l', 'a',"
                " '', '', 0, 0, 'e')")
            for run_id, state in (("r1", "RUNNING"), ("r0", "COMPLETED")):
                connection.execute(text(
                    "INSERT INTO ces_evaluation_runs (app_pk, run_id, create_time_us, initiated_by,"
                    " app_version_display_name, state, cancel_requested, operation, pending_count, completed_count,"
                    " passed_count, failed_count, error_count, cancelled_count, body) VALUES (1, :run_id, 0, 'u',"
                    " '', :state, false, :operation, 0, 0, 0, 0, 0, 0, :body)").bindparams(bindparam("body", type_=Json)),
                    {"run_id": run_id, "state": state, "operation": f"projects/p/locations/l/operations/{run_id}",
                     "body": {}})
            for result_id, run_name, state, attempts in (
                    ("queued", run, "QUEUED", 0), ("running", run, "RUNNING", 1), ("done", run, "COMPLETED", 1),
                    ("old", f"{app}/evaluationRuns/r0", "QUEUED", 0)):
                connection.execute(text(
                    "INSERT INTO ces_evaluation_results (app_pk, evaluation_id, result_id, evaluation_run,"
                    " create_time_us, execution_state, evaluation_status, attempts, body, plan) VALUES (1, 'e',"
                    " :result_id, :run, 0, :state, '', :attempts, :body, :plan)").bindparams(
                    bindparam("body", type_=Json), bindparam("plan", type_=Json)),
                    {"result_id": result_id, "run": run_name, "state": state, "attempts": attempts, "body": {},
                     "plan": {}})

        database.migrate()

        with database.reading() as connection:
            ids = dict(connection.exec_driver_sql("SELECT result_id, id FROM ces_evaluation_results").all())
            made = connection.execute(select(convener.jobs.tables.jobs).order_by(convener.jobs.tables.jobs.c.id)).all()
        assert [(row.task, row.queue, row.operation, row.payload, row.attempts, row.worker, row.lease_until_us)
                for row in made] == [
            ("ces.play_evaluation_result", "evaluations", "projects/p/locations/l/operations/r1",
             {"result": ids[result]}, attempts, None, 0) for result, attempts in (("queued", 0), ("running", 1))]
    finally:
        database.dispose()


def test_upgrading_moves_each_conversations_turns_into_rows_of_their_own(empty_database_url: str) -> None:
    """Revision 0009: the body keeps the header, each turn becomes a row; more conversations than one batch."""
    database = Database(empty_database_url)
    app = "projects/p/locations/l/apps/a"
    count = 205  # more than one batch of the migration

    def body(index: int) -> dict[str, object]:
        said = [{"messages": [{"role": "user", "chunks": [{"text": f"{index}.{turn}"}]}]} for turn in range(index % 4)]
        return {"name": f"{app}/conversations/c{index}", "startTime": "2026-01-01T00:00:00Z",
                **({"turns": said} if said else {}), "turnCount": len(said), "source": "LIVE"}

    try:
        database.migrate("0008")
        with database.transaction() as connection:
            connection.exec_driver_sql(
                "INSERT INTO ces_apps (name, parent, app_id, display_name, description, create_time_us,"
                " update_time_us, etag) VALUES ('projects/p/locations/l/apps/a', 'projects/p/locations/l', 'a',"
                " '', '', 0, 0, 'e')")
            connection.execute(text(
                "INSERT INTO ces_conversations (app_pk, conversation_id, start_time_us, turn_count, source,"
                " input_types, channel_type, entry_agent, deployment, app_version, language_code, body)"
                " VALUES (1, :id, 1767225600000000, :turns, 'LIVE', 0, 'TEXT', '', '', '', '', :body)"
            ).bindparams(bindparam("body", type_=Json)),
                [{"id": f"c{index}", "turns": index % 4, "body": body(index)} for index in range(count)])

        database.migrate()

        c, t = convener.ces.tables.conversations.c, convener.ces.tables.conversation_turns.c
        with database.reading() as connection:
            headers = dict(connection.execute(select(c.conversation_id, c.body)).all())
            turns = connection.execute(select(c.conversation_id, t.turn_index, t.body).join_from(
                convener.ces.tables.conversation_turns, convener.ces.tables.conversations, c.id == t.conversation_pk
            ).order_by(c.conversation_id, t.turn_index)).all()
            bodies = {}
            for row in connection.execute(select(c.id, c.conversation_id, c.body)):
                bodies[row.conversation_id] = convener.ces.conversation_bodies.body(connection, row.id, row.body)
        assert len(headers) == count and not any("turns" in header for header in headers.values())
        assert [(row.conversation_id, row.turn_index, row.body) for row in turns] == sorted(
            (f"c{index}", turn, said) for index in range(count) for turn, said in enumerate(body(index).get("turns", [])))
        assert bodies == {f"c{index}": body(index) for index in range(count)}
    finally:
        database.dispose()


def test_migrating_twice_is_a_no_op(empty_database_url: str) -> None:
    database = Database(empty_database_url)
    try:
        database.migrate()
        with database.transaction() as connection:
            connection.execute(insert(installation).values(key="probe", value=b"kept"))
            version = connection.exec_driver_sql("SELECT version_num FROM alembic_version").scalars().all()
        schema = _schema(database)
        assert EXPECTED_TABLES <= set(schema)

        database.migrate()

        assert _schema(database) == schema
        with database.transaction() as connection:
            assert connection.exec_driver_sql("SELECT version_num FROM alembic_version").scalars().all() == version
            assert connection.scalar(select(installation.c.value).where(installation.c.key == "probe")) == b"kept"
        assert version == [HEAD]
    finally:
        database.dispose()


def _is_full_text(name: str | None) -> bool:
    return name in CHAT_FULL_TEXT | KNOWLEDGE_FULL_TEXT or (name or "").startswith(
        ("chat_messages_fts", "knowledge_chunks_fts"))


def _not_full_text(obj: object, name: str | None, type_: str, reflected: bool, compare_to: object) -> bool:
    """The engine-specific full-text objects the chat and knowledge migrations make outside the metadata."""
    return not _is_full_text(name)


def test_the_migrated_schema_is_the_metadata(empty_database_url: str) -> None:
    database = Database(empty_database_url)
    try:
        database.migrate()
        with database.engine.connect() as connection:
            context = MigrationContext.configure(
                connection, opts={"compare_type": True, "include_object": _not_full_text}
            )
            assert compare_metadata(context, metadata) == []
        tables = {name for name in inspect(database.engine).get_table_names() if not _is_full_text(name)}
        assert tables == EXPECTED_TABLES | {"alembic_version"}
    finally:
        database.dispose()


def test_the_installation_secret_is_stable_across_opens(settings: Settings) -> None:
    first = Services.open(settings)
    try:
        secret = first.database.installation_secret()
        assert isinstance(secret, bytes)
        assert len(secret) == 32
        assert first.database.installation_secret() == secret
    finally:
        first.close()
    second = Services.open(settings)
    try:
        assert second.database.installation_secret() == secret
        assert second.conversations.tokens.secret == secret
        assert second.apps.tokens.secret == secret
    finally:
        second.close()


def test_other_stores_have_other_secrets(tmp_path: Path) -> None:
    one = Services.open(Settings(data_dir=tmp_path / "one"))
    two = Services.open(Settings(data_dir=tmp_path / "two"))
    try:
        assert one.database.installation_secret() != two.database.installation_secret()
    finally:
        one.close()
        two.close()


def test_installation_secrets_are_kept_per_key(database_url: str) -> None:
    database = Database(database_url)
    try:
        database.migrate()
        a = database.installation_secret("a")
        b = database.installation_secret("b")
        assert a != b
        assert database.installation_secret("a") == a
    finally:
        database.dispose()


def test_the_sqlite_store_is_created_inside_a_data_dir_that_does_not_exist_yet(tmp_path: Path) -> None:
    data_dir = tmp_path / "not" / "yet" / "there"
    assert not data_dir.exists()
    settings = Settings(data_dir=data_dir)
    assert settings.resolved_database_url == f"sqlite:///{data_dir / 'convener.db'}"
    services = Services.open(settings)
    try:
        assert (data_dir / "convener.db").is_file()
        assert services.database.dialect == "sqlite"
        assert EXPECTED_TABLES <= set(inspect(services.database.engine).get_table_names())
    finally:
        services.close()


def test_an_explicit_sqlite_url_creates_its_directory_too(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere" / "deep" / "store.db"
    services = Services.open(Settings(data_dir=tmp_path / "data", database_url=f"sqlite:///{target}"))
    try:
        assert target.is_file()
        assert not (tmp_path / "data").exists()
    finally:
        services.close()


def test_sqlite_enforces_foreign_keys_and_uses_wal(tmp_path: Path) -> None:
    services = Services.open(Settings(data_dir=tmp_path))
    try:
        with services.database.transaction() as connection:
            assert connection.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
            assert connection.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
    finally:
        services.close()


def test_a_transaction_that_defers_the_checkpoint_commits_and_leaves_the_connection_as_it_was(
        tmp_path: Path) -> None:
    """SQLite: ``transaction(checkpoint=False)`` commits as any transaction, leaves its pages in the
    write-ahead log (no checkpoint at commit), and gives its pooled connection back with the autocheckpoint
    threshold it had; ``checkpoint()`` then copies the log into the database file."""
    database = Database(f"sqlite:///{tmp_path / 'store.db'}")
    try:
        database.migrate()
        database.checkpoint()
        secret = b"x" * 32
        with database.transaction(checkpoint=False) as connection:
            for number in range(2000):  # more than the 1,000 pages at which a commit would checkpoint
                connection.execute(insert(installation).values(key=f"k{number}", value=secret * 64))
        with database.reading() as connection:
            assert connection.scalar(select(text("count(*)")).select_from(installation)) >= 2000
        with database.engine.connect() as connection:
            driver = connection.connection.driver_connection
            assert driver is not None
            assert driver.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 1000
        logged = (tmp_path / "store.db").stat().st_size
        assert logged < len(secret) * 64 * 2000  # the rows are in the log, not yet in the file
        database.checkpoint()
        assert (tmp_path / "store.db").stat().st_size > len(secret) * 64 * 2000
    finally:
        database.dispose()


def test_a_transaction_commits_lazily_when_told_by_a_statement_or_by_a_column_and_durably_when_told_again(
        database_url: str) -> None:
    """PostgreSQL: ``commit_lazily`` and a statement made ``committing_lazily`` (once it returns a row) turn this
    transaction's ``synchronous_commit`` off, ``commit_durably`` back on; the next transaction waits as before.
    SQLite: the statement is unchanged and nothing is run."""
    database = Database(database_url)

    def setting(connection: Connection) -> str | None:
        if database.dialect != "postgresql":
            return None
        return str(connection.exec_driver_sql("SHOW synchronous_commit").scalar())

    claimed = database.committing_lazily(select(installation.c.key).where(installation.c.key == bindparam("key")))
    try:
        with database.transaction() as connection:
            connection.execute(insert(installation).values(key="present", value=b"x"))
        with database.transaction() as connection:
            assert connection.execute(claimed, {"key": "absent"}).first() is None
            assert setting(connection) in ("on", None), "no row, nothing set"
            assert connection.execute(claimed, {"key": "present"}).one().key == "present"
            assert setting(connection) in ("off", None)
            database.commit_durably(connection)
            assert setting(connection) in ("on", None)
        with database.transaction() as connection:
            assert setting(connection) in ("on", None), "only for that transaction"
            database.commit_lazily(connection)
            assert setting(connection) in ("off", None)
        with database.transaction() as connection:
            assert setting(connection) in ("on", None)
        if database.dialect == "sqlite":
            assert len(claimed.selected_columns) == 1
    finally:
        database.dispose()


def test_an_insert_of_several_rows_is_one_statement_sent_once(database_url: str) -> None:
    """An insert executed with a list of rows reaches the server as one statement of them all on PostgreSQL (not a
    statement a row, as psycopg's executemany sends them), and as one executemany on SQLite; every row lands."""
    database = Database(database_url)
    sent: list[tuple[str, bool]] = []

    def seen(conn: object, cursor: object, statement: str, parameters: object, context: object,
             executemany: bool) -> None:
        sent.append((statement, executemany))

    rows = [{"key": f"several-{index}", "value": b"x"} for index in range(3)]
    try:
        with database.listening("before_cursor_execute", seen), database.transaction() as connection:
            connection.execute(insert(installation), rows)
        assert len(sent) == 1
        statement, executemany = sent[0]
        if database.dialect == "postgresql":
            assert statement.count("%(key__") == 3, statement
        else:
            assert executemany
        with database.reading() as connection:
            stored = connection.execute(select(installation.c.key).where(installation.c.key.like("several-%")))
            assert sorted(stored.scalars()) == [row["key"] for row in rows]
    finally:
        database.dispose()


@pytest.mark.skipif(not POSTGRES_URL, reason="PostgreSQL is not configured (CONVENER_TEST_DATABASE_URL)")
def test_a_postgresql_connection_is_pinged_only_after_idling_and_replaced_when_its_server_side_is_gone(
        monkeypatch: pytest.MonkeyPatch) -> None:
    database = Database(POSTGRES_URL or "")
    pings: list[object] = []
    real_ping = database.engine.dialect.do_ping
    monkeypatch.setattr(database.engine.dialect, "do_ping", lambda connection: pings.append(connection)
                        or real_ping(connection))
    try:
        with database.reading() as connection:
            first = connection.scalar(text("SELECT pg_backend_pid()"))
        with database.transaction() as connection:  # used a moment ago: no round trip to ask
            assert connection.scalar(text("SELECT pg_backend_pid()")) == first
        assert pings == []
        admin = Database(POSTGRES_URL or "")
        try:  # its server side ends (a restart, a timeout)
            with admin.transaction() as other:
                assert other.scalar(text("SELECT pg_terminate_backend(:pid)"), {"pid": first}) is True
        finally:
            admin.dispose()
        monkeypatch.setattr(database_module, "IDLE_PING_SECONDS", 0.0)  # as if it had idled that long
        with database.reading() as connection:  # the dead one is found out and replaced before it is used
            assert connection.scalar(text("SELECT pg_backend_pid()")) != first
        assert len(pings) >= 1
    finally:
        database.dispose()
