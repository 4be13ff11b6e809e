"""Registered SQL sources: their names, where they are, and one open read-only engine per source.

Engines are opened on first use and kept (opening a CSV folder builds its views; a PostgreSQL engine
holds a pool). The built-in ``convener`` source is different: its tables hold what the *caller* may see,
so it is filled for each question from the store, in an engine emptied after the question (and kept for the
next one, builtin.BuiltinEngines): never shared between callers, nor between questions.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import delete, insert, select
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from convener.analytics.budget import DEFAULT_BUDGET, Budget
from convener.analytics.builtin import BUILTIN_SOURCE, BuiltinEngines, builtin_tables
from convener.analytics.engines import DataEngine, location_kind, open_engine
from convener.analytics.models import SqlSource
from convener.analytics.shapes import TableInfo
from convener.analytics.tables import sql_sources
from convener.api.errors import AlreadyExists, InvalidArgument, NotFound
from convener.api.protojson import Timestamp
from convener.auth.caller import Caller
from convener.outside.gate import Gate
from convener.store.database import Database

SCHEMA_TTL_SECONDS = 60.0
"""How long a source's introspected schema (with its sample values) is reused before it is read again."""
SOURCE_NAME = re.compile(r"[a-z][a-z0-9_-]{0,62}")
MAX_DESCRIPTION = 2000


def check_source_name(name: str) -> str:
    if not isinstance(name, str) or not SOURCE_NAME.fullmatch(name):
        raise InvalidArgument(f'SQL source name "{str(name)[:80]}" must be 1-63 lowercase letters, digits, "_" '
                              'or "-", starting with a letter')
    return name


def masked(location: str) -> str:
    """A location fit to show: a database URL's password replaced by ***."""
    if "://" not in location:
        return location
    try:
        return make_url(location).render_as_string(hide_password=True)
    except (ArgumentError, ValueError):
        return "(a database URL)"


def _check_new_name(name: str) -> None:
    check_source_name(name)
    if name == BUILTIN_SOURCE:
        raise AlreadyExists(f'"{BUILTIN_SOURCE}" is the built-in source of Convener\'s own records')


def _is_url(location: str) -> bool:
    return "://" in location


class SqlSources:
    def __init__(self, database: Database, gate: Gate, budget: Budget = DEFAULT_BUDGET) -> None:
        self.database = database
        self.gate = gate
        self.budget = budget
        self._engines: dict[str, DataEngine] = {}
        self._schemas: dict[str, tuple[float, list[TableInfo]]] = {}
        self._lock = threading.Lock()
        self._builtin = BuiltinEngines(budget)

    # --- registry -------------------------------------------------------------------------------------

    def add(self, name: str, location: str, description: str | None, *, remote: bool = False) -> SqlSource:
        """Register ``location``. A ``remote`` caller (the add_sql_source tool) may name files and file URLs
        inside CONVENER_ANALYTICS_ROOTS only; the operator's CLI any; neither the store's own database."""
        _check_new_name(name)
        if description and len(description) > MAX_DESCRIPTION:
            raise InvalidArgument(f"description is longer than {MAX_DESCRIPTION} characters")
        location = self.gated(location, remote=remote)
        kind = location_kind(location)
        engine = open_engine(location, self.budget)  # fails here, not at the first question, if it is unusable
        try:
            engine.tables(samples=0)
        except Exception:
            engine.close()
            raise
        now = Timestamp.now().to_micros()
        with self.database.transaction() as connection:
            if connection.execute(select(sql_sources.c.name).where(sql_sources.c.name == name)).first():
                engine.close()
                raise AlreadyExists(f'SQL source "{name}" already exists; remove it first to change it')
            connection.execute(insert(sql_sources).values(name=name, kind=kind, location=location,
                                                          description=description or "", create_time_us=now))
        with self._lock:
            self._engines[name] = engine
        return SqlSource(name=name, kind=kind, location=masked(location), description=description or None,
                         create_time=Timestamp.from_micros(now))

    def gated(self, location: str, *, remote: bool) -> str:
        """``location`` as the gate lets it be opened: a real path, or a URL whose file is a real path."""
        roots = self.gate.analytics_roots if remote else None
        if _is_url(location):
            return self.gate.database_url(location, roots, "location").render()
        if roots is None:
            return str(self.gate.local_path(location, "location"))
        return str(self.gate.path(location, roots, "location"))

    def remove(self, name: str) -> None:
        check_source_name(name)
        with self.database.transaction() as connection:
            if connection.execute(delete(sql_sources).where(sql_sources.c.name == name)).rowcount == 0:
                raise NotFound(f'SQL source "{name}" does not exist')
        with self._lock:
            engine = self._engines.pop(name, None)
            self._schemas.pop(name, None)
        if engine is not None:
            engine.close()

    def all(self) -> list[SqlSource]:
        with self.database.reading() as connection:
            rows = connection.execute(select(sql_sources).order_by(sql_sources.c.name)).all()
        builtin = SqlSource(name=BUILTIN_SOURCE, kind="convener", location="(this server's store)",
                            description="Convener's own records: apps, conversations, evaluations and chat "
                                        "messages, as the caller may see them.")
        return [builtin, *(_source(row) for row in rows)]

    def get(self, name: str) -> SqlSource:
        found = next((source for source in self.all() if source.name == name), None)
        if found is None:
            raise _missing(name)
        return found

    # --- engines --------------------------------------------------------------------------------------

    @contextmanager
    def engine(self, name: str, caller: Caller, only: Collection[str] | None = None) -> Iterator[DataEngine]:
        """The source's engine for one question; the caller's own for the built-in source, holding the tables
        ``only`` names alone when given (the question's references: loading the others would be wasted)."""
        check_source_name(name)
        if name == BUILTIN_SOURCE:
            with self._builtin.engine(self.database, caller, only=only) as engine:
                yield engine
            return
        with self._lock:
            cached = self._engines.get(name)
        yield cached if cached is not None else self._open(name)

    def _open(self, name: str) -> DataEngine:
        with self.database.reading() as connection:
            row = connection.execute(select(sql_sources).where(sql_sources.c.name == name)).first()
        if row is None:
            raise _missing(name)
        # Asked again at each opening: a file can have become a link to the store since it was added.
        opened = open_engine(self.gated(row.location, remote=False), self.budget)
        with self._lock:
            existing = self._engines.setdefault(name, opened)
        if existing is not opened:
            opened.close()
        return existing

    def tables(self, name: str, caller: Caller) -> list[TableInfo]:
        """The source's tables, columns and samples (the built-in source's without samples)."""
        if name == BUILTIN_SOURCE:
            return builtin_tables()
        with self.engine(name, caller) as engine:
            return self.schema(name, engine)

    def schema(self, name: str, engine: DataEngine) -> list[TableInfo]:
        """``engine.tables()``, reused for SCHEMA_TTL_SECONDS: reading samples costs a query per column. The
        built-in source's engine holds one caller's rows, so its schema is never kept."""
        if name == BUILTIN_SOURCE:
            return engine.tables()
        with self._lock:
            cached = self._schemas.get(name)
        if cached is None or time.monotonic() - cached[0] > SCHEMA_TTL_SECONDS:
            cached = (time.monotonic(), engine.tables())
            with self._lock:
                self._schemas[name] = cached
        return cached[1]

    def close(self) -> None:
        with self._lock:
            engines, self._engines = list(self._engines.values()), {}
        for engine in engines:
            engine.close()
        self._builtin.close()


def _source(row: Any) -> SqlSource:
    return SqlSource(name=row.name, kind=row.kind, location=masked(row.location),
                     description=row.description or None, create_time=Timestamp.from_micros(row.create_time_us))


def _missing(name: str) -> NotFound:
    return NotFound(f'SQL source "{name}" does not exist; list_sql_sources shows the registered ones')
