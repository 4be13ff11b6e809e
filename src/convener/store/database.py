"""The store: an engine, sessions, and migrations applied on start.

SQLite (WAL, foreign keys on) in the data directory is the embedded default; any PostgreSQL URL
works the same. Domain code uses ``Database.transaction()`` to write and ``Database.reading()`` to only read,
and never sees the engine's dialect. On SQLite a transaction takes the one write lock at once; a reading
runs on a WAL snapshot beside it and never waits for it, so a read path must never open a transaction.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeAlias

from sqlalchemy import Connection, Engine, Row, Select, create_engine, event, func, insert, select
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError, DisconnectionError, IntegrityError

from convener.api.protojson import wire_integer
from convener.store.schema import installation

AnyRow: TypeAlias = "Row[Any, Any]"  # SQLAlchemy 2.1 types rows by their columns; ours are read by name

MIGRATIONS = Path(__file__).parent / "migrations"
BUSY_TIMEOUT_SECONDS = 10.0
"""SQLite: how long a write waits for the lock before it fails."""


def newest_revision() -> str:
    """The head revision, read from the migrations' file names without loading Alembic.

    Migrations are numbered files whose number is their revision, each revising the one before
    (tests/test_migration_files.py holds them to it), so the highest number is the head."""
    return max(path.name.split("_", 1)[0] for path in (MIGRATIONS / "versions").glob("[0-9][0-9][0-9][0-9]_*.py"))


def normalise_url(url: str) -> str:
    """Let users write ``postgresql://``; we drive PostgreSQL with psycopg 3."""
    parsed = make_url(url)
    if parsed.drivername in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    return parsed.render_as_string(hide_password=False)


def _load_json(text: str) -> Any:
    return json.loads(text, parse_int=wire_integer)


def _tune_sqlite(dbapi_connection: Any, _record: Any) -> None:
    # Python's sqlite3 module begins transactions itself, lazily, at the first write: a SAVEPOINT
    # before that write becomes the outermost transaction, and releasing it commits. Turn that off
    # and begin every transaction ourselves (``_begin_sqlite_with``), so that a transaction is one.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_SECONDS * 1000)}")
    # Filters' wildcard matches are LIKE; make them case-sensitive as on PostgreSQL.
    cursor.execute("PRAGMA case_sensitive_like=ON")
    cursor.close()


def _begin_sqlite_with(engine: Engine, statement: str) -> None:
    """Begin every transaction of the engine's SQLite connections with ``statement`` (the driver, in autocommit
    mode, begins none itself: see ``_tune_sqlite``). Set as the dialect's own begin, not as a "begin" event
    listener: any connection event makes SQLAlchemy dispatch events around every statement of every
    connection (a golden evaluation cost 7% more CPU)."""

    def begin(dbapi_connection: Any) -> None:
        dbapi_connection.execute(statement)

    engine.dialect.do_begin = begin  # type: ignore[method-assign]


def _tune_sqlite_reader(dbapi_connection: Any, record: Any) -> None:
    # A reading connection is read-only in fact (query_only), for as long as it lives: a write slipped into a read
    # path fails at once instead of taking the lock from inside a snapshot.
    _tune_sqlite(dbapi_connection, record)
    dbapi_connection.execute("PRAGMA query_only=ON")


IDLE_PING_SECONDS = 5.0
"""A pooled PostgreSQL connection idle this long is pinged before it is handed out."""


def _ping_when_idle(engine: Engine) -> None:
    """Hand out a pooled connection only once it answers, if it sat idle long enough to have lost its server
    (restarted, or a network timeout). SQLAlchemy's ``pool_pre_ping`` pings at every checkout: a round trip more
    for each of the several transactions of a tool call or an evaluation, for connections used a moment ago. A
    connection whose ping fails is replaced (the pool retries with a fresh one)."""

    @event.listens_for(engine, "checkin")
    def idle_since(dbapi_connection: Any, record: Any) -> None:
        record.info["idle_since"] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def ping(dbapi_connection: Any, record: Any, proxy: Any) -> None:
        since = record.info.get("idle_since")
        if since is None or time.monotonic() - since < IDLE_PING_SECONDS:
            return
        try:
            engine.dialect.do_ping(dbapi_connection)
        except Exception as error:  # noqa: BLE001 - any failure: the connection is not to be used
            raise DisconnectionError(f"a pooled connection did not answer: {error}") from error


class Database:
    def __init__(self, url: str) -> None:
        self.url = normalise_url(url)
        parsed = make_url(self.url)
        self.dialect = parsed.get_backend_name()
        if self.dialect == "sqlite" and parsed.database not in (None, "", ":memory:"):
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        self.engine: Engine = create_engine(self.url, json_deserializer=_load_json)
        if self.dialect != "sqlite":
            _ping_when_idle(self.engine)
            # An insert executed with several rows is one statement of them all, as an insert returning rows is
            # ("insertmanyvalues"): psycopg's executemany has the server run a statement a row (pipelined). Three
            # rows took 0.22 ms so against 0.26 ms, the same CPU on the client.
            self.engine.dialect.use_insertmanyvalues_wo_returning = True
        self._write_lock = threading.RLock()
        self._reading_engine = self.engine
        if self.dialect == "sqlite":
            event.listen(self.engine, "connect", _tune_sqlite)
            # IMMEDIATE takes the write lock at once: a transaction that reads and then writes cannot find, at its
            # first write, that another writer got there first (SQLite would fail it, not wait).
            _begin_sqlite_with(self.engine, "BEGIN IMMEDIATE")
        if self.dialect == "sqlite" and parsed.database not in (None, "", ":memory:"):
            # Readings have a pool of their own, of read-only connections: one pool for both had to switch a
            # connection's query_only at most transactions of a run that alternates readings and writes
            # (two statements of the 31 a golden evaluation ran). (A database in memory is one connection's:
            # there, readings share the writers' engine.)
            self._reading_engine = create_engine(self.url, json_deserializer=_load_json)
            event.listen(self._reading_engine, "connect", _tune_sqlite_reader)
            # DEFERRED: a reading runs beside writers (WAL) on the snapshot its first read takes.
            _begin_sqlite_with(self._reading_engine, "BEGIN DEFERRED")

    @property
    def engines(self) -> tuple[Engine, ...]:
        """Every engine the store's connections come from (on SQLite, a second one for readings): what an observer
        of every statement listens on."""
        return (self.engine,) if self._reading_engine is self.engine else (self.engine, self._reading_engine)

    @contextmanager
    def listening(self, name: str, listener: Callable[..., Any]) -> Iterator[None]:
        """``listener`` on SQLAlchemy's event ``name`` of every engine of the store meanwhile: how a benchmark or
        a test watches the statements a path runs."""
        for engine in self.engines:
            event.listen(engine, name, listener)
        try:
            yield
        finally:
            for engine in self.engines:
                event.remove(engine, name, listener)

    def migrate(self, revision: str = "head") -> None:
        """Bring the schema to ``revision``, the newest by default (a no-op when it is there).

        Every command opens the store, so a store already at the head is recognised from its version row
        alone: loading Alembic and its scripts to find nothing to do cost every command a third of a second."""
        if revision == "head" and self.revision() == newest_revision():
            return
        from alembic import command
        from alembic.config import Config

        config = Config()
        config.set_main_option("script_location", str(MIGRATIONS))
        with self.engine.begin() as connection:
            config.attributes["connection"] = connection
            command.upgrade(config, revision)

    def revision(self) -> str | None:
        """The store's schema revision; None for a new store (or one with several heads, left to Alembic)."""
        with self.engine.connect() as connection:
            try:
                found = connection.exec_driver_sql("SELECT version_num FROM alembic_version").scalars().all()
            except DBAPIError:
                return None  # no version table yet
        return found[0] if len(found) == 1 else None

    @contextmanager
    def transaction(self, *, checkpoint: bool = True) -> Iterator[Connection]:
        """A connection in a transaction: committed on success, rolled back on any error.

        ``checkpoint=False`` (SQLite; nothing elsewhere): the commit does not copy the write-ahead log into
        the database file, as SQLite otherwise does once the log passes 1,000 pages. A bulk writer that
        commits many large transactions in a row passes it and calls ``checkpoint()`` once at the end: the
        pages its transactions rewrote (the same index pages, again and again) are copied once, not after
        every commit. Atomicity and durability are those of any commit."""
        if self.dialect != "sqlite":
            with self.engine.begin() as connection:
                yield connection
            return
        with self._writing():
            if checkpoint:
                with self.engine.begin() as connection:
                    yield connection
                return
            with self._uncheckpointed() as connection:
                yield connection

    def commit_lazily(self, connection: Connection) -> None:
        """Let the transaction of ``connection`` commit without waiting for its log to reach the disk
        (PostgreSQL's ``synchronous_commit = off``, for that transaction alone), for work that is done again if
        lost. A crash of the server can lose the last such transactions, each whole and in the order they
        committed; never one that a later durable commit followed, since that one's wait flushes the log before
        it. SQLite's commits never wait for the disk here (WAL with ``synchronous=NORMAL``): nothing to do."""
        if self.dialect == "postgresql":
            connection.exec_driver_sql("SET LOCAL synchronous_commit TO OFF")

    def committing_lazily(self, statement: Select[Any]) -> Select[Any]:
        """``statement``, which lets the transaction it runs in commit lazily (as ``commit_lazily`` does) once it
        returns a row: on PostgreSQL a column of it sets the transaction's ``synchronous_commit`` (``set_config``),
        which saves the statement of its own, a round trip. Unchanged on SQLite. ``commit_durably`` takes it back
        for a transaction that turns out to need the wait."""
        if self.dialect != "postgresql":
            return statement
        return statement.add_columns(func.set_config("synchronous_commit", "off", True).label("commits_lazily"))

    def commit_durably(self, connection: Connection) -> None:
        """Let the transaction of ``connection`` commit waiting for the disk again, as every transaction does unless
        ``commit_lazily`` or ``committing_lazily`` said otherwise."""
        if self.dialect == "postgresql":
            connection.exec_driver_sql("SET LOCAL synchronous_commit TO ON")

    @contextmanager
    def _writing(self) -> Iterator[None]:
        """SQLite: the threads of this process take the write lock in turn, waking as soon as it is free.

        SQLite's own wait for a lock another connection holds sleeps in steps (1, 2, 5, 10 ms, ...), longer than
        most of our transactions; threads of one process queue here instead, and meet SQLite's wait only for
        other processes. After ``BUSY_TIMEOUT_SECONDS`` a thread goes on to SQLite's wait, as before, so a
        transaction waiting on another thread's fails as it would have, never hangs."""
        acquired = self._write_lock.acquire(timeout=BUSY_TIMEOUT_SECONDS)
        try:
            yield
        finally:
            if acquired:
                self._write_lock.release()

    @contextmanager
    def _uncheckpointed(self) -> Iterator[Connection]:
        with self.engine.connect() as connection:
            # On the driver's connection: through SQLAlchemy, a statement would begin the transaction first.
            driver = connection.connection.driver_connection
            assert driver is not None
            before = driver.execute("PRAGMA wal_autocheckpoint").fetchone()[0]
            driver.execute("PRAGMA wal_autocheckpoint=0")
            try:
                with connection.begin():
                    yield connection
            finally:
                driver.execute(f"PRAGMA wal_autocheckpoint={int(before)}")  # the pooled connection as it was

    def checkpoint(self) -> None:
        """SQLite: copy what the write-ahead log holds into the database file, as far as readers allow
        (``PASSIVE``: it waits for no one); nothing elsewhere. See ``transaction(checkpoint=False)``."""
        if self.dialect != "sqlite":
            return
        with self.engine.connect() as connection:
            driver = connection.connection.driver_connection
            assert driver is not None
            driver.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()

    @contextmanager
    def reading(self, snapshot: bool = True) -> Iterator[Connection]:
        """A connection in a read-only transaction: one consistent snapshot, never waiting on writers.

        Every path that only reads uses this, never ``transaction()``: on SQLite a transaction holds the
        write lock, and a read behind a long import would wait for it (and fail after busy_timeout).

        ``snapshot=False`` is for a reading of one statement, or of statements that need not agree with each
        other: on PostgreSQL each statement then runs on its own, seeing what is committed when it starts,
        without the transaction's BEGIN and COMMIT (two of a one-statement reading's three round trips). SQLite
        reads in-process: there it is the same reading."""
        # PostgreSQL: the driver begins the transaction with its isolation level and READ ONLY, in the BEGIN it
        # sends anyway (a SET TRANSACTION after it cost each reading a round trip); the pool resets both.
        if self.dialect == "sqlite":
            with self._reading_engine.begin() as connection:
                yield connection
            return
        if not snapshot:
            with self.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
                yield connection
            return
        with self.engine.connect().execution_options(isolation_level="REPEATABLE READ",
                                                     postgresql_readonly=True) as connection, connection.begin():
            yield connection

    def installation_secret(self, key: str = "page_token_secret") -> bytes:
        """A random per-installation secret, created once and shared by every process on this store."""
        with self.reading() as connection:
            found = connection.scalar(select(installation.c.value).where(installation.c.key == key))
            if found is not None:
                return bytes(found)
        try:
            with self.transaction() as connection:
                connection.execute(insert(installation).values(key=key, value=secrets.token_bytes(32)))
        except IntegrityError:
            pass  # another process created it first; read theirs
        with self.reading() as connection:
            return bytes(connection.execute(select(installation.c.value).where(installation.c.key == key)).scalar_one())

    def dispose(self) -> None:
        self.engine.dispose()
        if self._reading_engine is not self.engine:
            self._reading_engine.dispose()
