"""Private stores for tests, copied from templates each process prepares once.

Bringing a fresh store to the newest schema costs a test about a fifth of a second on SQLite and half a
second on PostgreSQL, and loading the demo workspace tens of seconds. So each test process (each
pytest-xdist worker) migrates a template store once, and loads the demo into another once, and every test
gets a copy of its own: a file copy on SQLite, ``CREATE DATABASE … TEMPLATE`` on PostgreSQL. A copy is
private to its test and dropped after it, as a freshly made store was.
"""

from __future__ import annotations

import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Engine, create_engine, update
from sqlalchemy.engine import make_url

from convener.analytics.tables import sql_sources
from convener.config import Settings
from convener.services import Services
from convener.store.database import Database, normalise_url

STORE_FILE = "convener.db"
DATA_DIR = "data"


@dataclass(frozen=True)
class Template:
    """A prepared store: its database (a SQLite file or a PostgreSQL database) and its data directory."""

    backend: str
    database: str
    """The SQLite file's path, or the PostgreSQL database's name."""
    data_dir: Path
    result: str
    """What preparing it returned (the demo's load summary), for tests that check it."""


def _admin(postgres_url: str) -> Engine:
    """A connection outside transactions: CREATE DATABASE and DROP DATABASE cannot run inside one."""
    return create_engine(normalise_url(postgres_url), isolation_level="AUTOCOMMIT")


def _url_of(postgres_url: str, database: str) -> str:
    return make_url(normalise_url(postgres_url)).set(database=database).render_as_string(hide_password=False)


class Templates:
    """The templates of one test process, made on first use and removed when the session ends."""

    def __init__(self, postgres_url: str | None) -> None:
        self.postgres_url = postgres_url
        self._made: dict[tuple[str, str], Template] = {}
        self._folder: Path | None = None

    def folder(self) -> Path:
        if self._folder is None:
            self._folder = Path(tempfile.mkdtemp(prefix="convener-templates-"))
        return self._folder

    def template(self, backend: str, name: str, prepare: Callable[[Services], str] | None) -> Template:
        """The template ``name`` of ``backend``: migrated, then prepared by ``prepare`` if given."""
        key = (backend, name)
        if key not in self._made:
            self._made[key] = self._make(backend, name, prepare)
        return self._made[key]

    def _make(self, backend: str, name: str, prepare: Callable[[Services], str] | None) -> Template:
        home = self.folder() / f"{backend}-{name}"
        data_dir = home / DATA_DIR
        if backend == "sqlite":
            database = str(home / STORE_FILE)
            url = f"sqlite:///{database}"
        else:
            assert self.postgres_url
            database = f"convener_template_{uuid.uuid4().hex[:12]}"
            admin = _admin(self.postgres_url)
            try:
                with admin.connect() as connection:
                    connection.exec_driver_sql(f'CREATE DATABASE "{database}"')
            finally:
                admin.dispose()
            url = _url_of(self.postgres_url, database)
        result = ""
        if prepare is None:
            store = Database(url)
            store.migrate()
            store.dispose()
        else:
            services = Services.open(Settings(data_dir=data_dir, database_url=url, allow_anonymous=False))
            try:
                result = prepare(services)
            finally:
                services.close()
        if backend == "sqlite":
            # One file says it all: fold the write-ahead log back into it before it is copied.
            checkpoint = create_engine(url)
            with checkpoint.connect() as connection:
                connection.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
            checkpoint.dispose()
        return Template(backend, database, data_dir, result)

    @contextmanager
    def copy(self, template: Template, directory: Path) -> Iterator[str]:
        """A private copy of ``template`` whose data directory is ``directory/data``; yields its URL."""
        if template.data_dir.exists():
            shutil.copytree(template.data_dir, directory / DATA_DIR, dirs_exist_ok=True)
        if template.backend == "sqlite":
            target = directory / STORE_FILE
            shutil.copyfile(template.database, target)
            url = f"sqlite:///{target}"
            _moved_data_dir(url, template.data_dir, directory / DATA_DIR)
            yield url
            return
        assert self.postgres_url
        database = f"t_{uuid.uuid4().hex[:12]}"
        admin = _admin(self.postgres_url)
        try:
            with admin.connect() as connection:
                connection.exec_driver_sql(f'CREATE DATABASE "{database}" TEMPLATE "{template.database}"')
            url = _url_of(self.postgres_url, database)
            _moved_data_dir(url, template.data_dir, directory / DATA_DIR)
            yield url
        finally:
            with admin.connect() as connection:
                connection.exec_driver_sql(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
            admin.dispose()

    def close(self) -> None:
        if self.postgres_url and any(t.backend == "postgresql" for t in self._made.values()):
            admin = _admin(self.postgres_url)
            try:
                with admin.connect() as connection:
                    for template in self._made.values():
                        if template.backend == "postgresql":
                            connection.exec_driver_sql(f'DROP DATABASE IF EXISTS "{template.database}" WITH (FORCE)')
            finally:
                admin.dispose()
        self._made.clear()
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None


def _moved_data_dir(url: str, old: Path, new: Path) -> None:
    """A store names files of its data directory by absolute path (the demo's DuckDB file): name the copy's."""
    if not old.exists():
        return
    store = Database(url)
    try:
        with store.transaction() as connection:
            for row in connection.execute(sql_sources.select()).all():
                location = Path(row.location)
                if location.is_relative_to(old):
                    connection.execute(update(sql_sources).where(sql_sources.c.name == row.name)
                                       .values(location=str(new / location.relative_to(old))))
    finally:
        store.dispose()
