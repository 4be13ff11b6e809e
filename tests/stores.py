"""Private stores for tests, copied from templates prepared once.

Bringing a fresh store to the newest schema costs a test about a fifth of a second on SQLite and half a
second on PostgreSQL, and loading the demo workspace tens of seconds. So each test process migrates a template
store once, the demo is loaded into another once for the whole run (the pytest-xdist workers share it), and
every test gets a copy of its own: a file copy on SQLite, ``CREATE DATABASE … TEMPLATE`` on PostgreSQL. A copy
is private to its test and dropped after it, as a freshly made store was.
"""

from __future__ import annotations

import fcntl
import hashlib
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

Prepare = Callable[[Services], str]
"""What fills a template besides the schema, run once on the template's services; what it returns is kept."""

STORE_FILE = "convener.db"
DATA_DIR = "data"
MADE = "made"
"""Written into a shared template's folder, with what preparing it returned, once the template is whole."""


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


def _shared_prefix(folder: Path) -> str:
    """The name every PostgreSQL template shared through ``folder`` starts with."""
    return f"convener_shared_{hashlib.sha256(str(folder).encode()).hexdigest()[:12]}_"


class Templates:
    """The templates of one test process: its own, made on first use and removed when its session ends, and
    those it shares with the other processes of the run, made by whichever needs one first."""

    def __init__(self, postgres_url: str | None) -> None:
        self.postgres_url = postgres_url
        self._made: dict[tuple[str, str], Template] = {}
        self._own: Path | None = None
        self._shared: Path | None = None

    def share(self, folder: Path) -> None:
        """Shared templates live in ``folder``, which every process of the run sees."""
        self._shared = folder

    def template(self, backend: str, name: str, prepare: Prepare | None = None, *, shared: bool = False) -> Template:
        """The template ``name`` of ``backend``: migrated, then filled by ``prepare`` if given."""
        key = (backend, name)
        if key not in self._made:
            if shared and self._shared is not None:
                self._made[key] = self._made_once(self._shared, backend, name, prepare)
            else:
                if self._own is None:
                    self._own = Path(tempfile.mkdtemp(prefix="convener-templates-"))
                database = f"convener_template_{uuid.uuid4().hex[:12]}"
                self._made[key] = self._make(self._own / f"{backend}-{name}", database, backend, prepare)
        return self._made[key]

    def _made_once(self, folder: Path, backend: str, name: str, prepare: Prepare | None) -> Template:
        """The shared template, made by the first process to ask while the others wait for it."""
        home = folder / f"convener-template-{backend}-{name}"
        database = _shared_prefix(folder) + name
        folder.mkdir(parents=True, exist_ok=True)
        with (folder / f"convener-template-{backend}-{name}.lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            made = home / MADE
            if made.exists():
                return Template(backend, str(home / STORE_FILE) if backend == "sqlite" else database,
                                home / DATA_DIR, made.read_text(encoding="utf-8"))
            template = self._make(home, database, backend, prepare)
            made.write_text(template.result, encoding="utf-8")
            return template

    def _make(self, home: Path, database: str, backend: str, prepare: Prepare | None) -> Template:
        home.mkdir(parents=True, exist_ok=True)
        data_dir = home / DATA_DIR
        if backend == "sqlite":
            database = str(home / STORE_FILE)
            url = f"sqlite:///{database}"
        else:
            assert self.postgres_url
            admin = _admin(self.postgres_url)
            try:
                with admin.connect() as connection:
                    connection.exec_driver_sql(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
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
        """Removes this process's own templates (shared ones outlive it: see ``drop_shared``)."""
        own = [t for key, t in self._made.items() if t.backend == "postgresql" and not _is_shared(t, self._shared)]
        if self.postgres_url and own:
            admin = _admin(self.postgres_url)
            try:
                with admin.connect() as connection:
                    for template in own:
                        connection.exec_driver_sql(f'DROP DATABASE IF EXISTS "{template.database}" WITH (FORCE)')
            finally:
                admin.dispose()
        self._made.clear()
        if self._own is not None:
            shutil.rmtree(self._own, ignore_errors=True)
            self._own = None


def _is_shared(template: Template, folder: Path | None) -> bool:
    return folder is not None and template.database.startswith(_shared_prefix(folder))


def drop_shared(postgres_url: str | None, folder: Path) -> None:
    """Drops the PostgreSQL templates shared through ``folder``, once no test process needs them."""
    if not postgres_url:
        return
    admin = _admin(postgres_url)
    try:
        with admin.connect() as connection:
            names = connection.exec_driver_sql(
                "SELECT datname FROM pg_database WHERE starts_with(datname, %(prefix)s)",
                {"prefix": _shared_prefix(folder)}).scalars().all()
            for name in names:
                connection.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        admin.dispose()


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
