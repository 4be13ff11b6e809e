"""The data sources a data agent can query, behind one small protocol, each enforcing read-only access itself.

A location string says what to open (``location_kind`` classifies it without opening anything):

* ``*.duckdb`` / ``*.db`` / ``*.ddb`` — a DuckDB database file (``DUCK`` magic at byte 8). Opened
  ``read_only=True`` with external access disabled (no ``read_csv('/etc/passwd')``, ``COPY … TO``,
  ``ATTACH``, ``INSTALL``/``LOAD``, nor replacement scans such as ``FROM '/etc/passwd'``), extension
  auto-loading off, a memory limit, few threads, and the configuration locked so no ``SET`` can undo any of it.
  ``read_only`` alone is not enough: it still allows ``COPY … TO`` and reading any file.
* ``*.sqlite`` / ``*.sqlite3`` / ``*.db`` with the ``SQLite format 3`` header — a SQLite file, opened with
  ``mode=ro``, ``PRAGMA query_only``, no attached databases, and an authorizer that admits only reading this
  database's own tables and calling functions other than ``load_extension``/``readfile``/``writefile``…
  A progress handler enforces the time limit. Every call uses its own connection.
* a CSV, TSV, Parquet, JSON or JSON-lines file, or a folder of them — ``"files"``: an in-memory DuckDB with
  one *table* per file. Tables, not views: a view over ``read_csv`` reads the file each time it is queried,
  and DuckDB then refuses it once external access is disabled (checked with DuckDB 2.0). DuckDB's
  ``allowed_directories`` would keep such views working, but it also lets ``COPY … TO`` write into the data
  folder. So the files are loaded first, then external access is switched off and the configuration locked
  (the data must fit in the memory limit). The in-memory database is writable by nature; that is safe
  because (1) every statement passes ``check_select`` first, (2) each query runs in a transaction that is
  always rolled back, and (3) the database is a copy, so even a write that got through could neither reach
  the source files nor outlive the query; and DuckDB refuses every file access by then. Table names are the file's path below
  the folder with ``/`` as ``_`` (``sales/2024.csv`` → ``sales_2024``), lower-cased, other characters as
  ``_``, prefixed ``t_`` if the result starts with a digit or is an SQL keyword; when two files give the same
  name, the later one in sorted path order gets ``_2``, ``_3``…
* ``postgresql://…`` (or ``postgresql+psycopg://…``), and other SQLAlchemy URLs (``sqlite:///…`` and
  ``duckdb:///…`` go to the engines above). Every query runs in a ``READ ONLY`` transaction with
  ``SET LOCAL statement_timeout``, always rolled back, through a prepared statement (so the server itself
  refuses a second statement). A read-only transaction does not stop a superuser from reading server files
  (``pg_read_file``) or running ``COPY … TO PROGRAM``; ``check_select`` refuses those, but **production
  deployments should connect Convener with a role that can only SELECT the tables it should see** (the tests
  connect as ``postgres``). Tables in the connection's default schema are named ``table``, others
  ``schema.table``; system schemas are left out. Other SQLAlchemy databases get the generic treatment (MySQL
  and MariaDB: a read-only session and ``max_execution_time``); only SQLite, PostgreSQL and DuckDB are tested.

Every query goes through ``check_select`` with the source's own table list, so only those tables can be
read. Failures become API errors: ``DeadlineExceeded`` for time limits, ``ResourceExhausted`` for memory,
and ``InvalidArgument`` for errors in the query, with the engine's message kept (a model repairs SQL from it)
but paths and URLs masked and the echo of the query dropped. Rows are fetched in batches (``capping``) on a
query already capped at ``limit + 1`` rows, within a byte cap and a cap on one value, so a huge result is
never pulled in. Every engine is held to a ``Budget`` (memory, threads, spill folder, value length,
``work_mem``), a query whose constant sizes ask for more than a value may hold is refused before it runs
(``sizes``), and every query runs on a worker thread stopped from outside at its deadline (``deadline``).
"""

from __future__ import annotations

import os
import re
import sqlite3
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from contextlib import contextmanager
from functools import lru_cache
from dataclasses import dataclass
from datetime import date, datetime
from datetime import time as clock_time
from decimal import Decimal
from pathlib import Path
from typing import Any, Protocol

import duckdb
import sqlglot
from sqlalchemy import create_engine, inspect
from sqlalchemy import exc as sa_exc
from sqlalchemy import types as sa_types
from sqlalchemy.engine import URL, Engine, make_url
from sqlalchemy.engine.reflection import ObjectKind
from sqlglot import exp

from convener.analytics import shapes
from convener.analytics.budget import DEFAULT_BUDGET, Budget
from convener.analytics.capping import Caps, Collected, collect, too_long
from convener.analytics.deadline import Watch, deadline_error, run_within
from convener.analytics.shapes import ColumnInfo, QueryResult, ResultColumn, TableInfo
from convener.analytics.sizes import check_sizes
from convener.analytics.sql_safety import check_select
from convener.api.errors import (
    ApiError,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    ResourceExhausted,
    Unavailable,
)
from convener.outside.paths import within

DATA_SUFFIXES = {
    ".csv": "csv", ".tsv": "csv", ".csv.gz": "csv", ".tsv.gz": "csv", ".parquet": "parquet",
    ".json": "json", ".json.gz": "json", ".jsonl": "jsonl", ".ndjson": "jsonl", ".jsonl.gz": "jsonl",
}  # fmt: skip
DATABASE_SUFFIXES = frozenset({".duckdb", ".ddb", ".db", ".sqlite", ".sqlite3", ".db3"})
DUCKDB_MAGIC = b"DUCK"
SQLITE_MAGIC = b"SQLite format 3\x00"

SAMPLE_ROWS = 1000  # rows read per table to pick sample values and to guess untyped SQLite columns
MAX_SAMPLE_CHARS = 80
INTROSPECTION_TIMEOUT = 15.0
DISTINCT_TTL_SECONDS = 60.0
"""How long a column's distinct values are reused (as a source's schema and samples are, sources.py)."""
DISTINCT_KEPT = 256
"""Columns whose distinct values an engine keeps at most (each list is bounded by the result byte budget)."""
SKIPPED_SAMPLE_TYPES = frozenset({shapes.BYTES, shapes.RECORD, shapes.JSON})


class DataEngine(Protocol):
    """A read-only SQL data source."""

    kind: str  # "duckdb" | "files" | "sqlite" | "postgresql" | "sqlalchemy"
    dialect: str  # the sqlglot dialect its SQL is written in

    def tables(self, *, samples: int = 5) -> list[TableInfo]: ...

    def distinct_values(self, table: str, column: str, limit: int = 1000) -> list[str]: ...

    def value_span(self, table: str, column: str) -> tuple[str, str] | None: ...

    def execute(self, sql: str, *, row_limit: int, timeout_seconds: float,
                only: Collection[str] | None = None) -> QueryResult: ...

    def close(self) -> None: ...


# --- locations ----------------------------------------------------------------------------------------


def location_kind(location: str) -> str:
    """``duckdb``, ``files``, ``sqlite``, ``postgresql`` or ``sqlalchemy``; ``InvalidArgument`` if the location
    is missing or not something we can open. Messages name files by their base name only, never a URL."""
    if "://" in location:
        return _url_kind(location)
    path = Path(location).expanduser()
    if not path.exists():
        raise InvalidArgument(f"there is no file or folder {path.name!r} for this data source")
    if path.is_dir():
        if next(_data_files(path), None) is None:
            raise InvalidArgument(f"the folder {path.name!r} holds no CSV, TSV, Parquet or JSON files")
        return "files"
    if _data_format(path) is not None:
        return "files"
    if path.suffix.lower() in DATABASE_SUFFIXES:
        return _sniff_database(path)
    raise InvalidArgument(
        f"unsupported data file {path.name!r}: use a DuckDB or SQLite database, CSV, TSV, Parquet or JSON files, "
        "or a database URL"
    )


def open_engine(location: str, budget: Budget = DEFAULT_BUDGET) -> DataEngine:
    """Open the data source at ``location`` (see the module docstring for what each kind enforces), held to
    ``budget``."""
    kind = location_kind(location)
    if kind == "files":
        return DuckDBEngine(load_files_into_duckdb(Path(location).expanduser(), budget), kind="files",
                            budget=budget)
    if "://" in location:
        url = _normalise_url(make_url(location))
        if kind == "duckdb":
            return DuckDBEngine(connect_duckdb_file(Path(url.database or ""), budget), kind="duckdb", budget=budget)
        if kind == "sqlite":
            return SQLiteEngine(Path(url.database or ""), budget)
        return SQLAlchemyEngine(url, budget)
    path = Path(location).expanduser()
    if kind == "duckdb":
        return DuckDBEngine(connect_duckdb_file(path, budget), kind="duckdb", budget=budget)
    return SQLiteEngine(path, budget)


def _normalise_url(url: URL) -> URL:
    """``postgresql://`` and ``postgres://`` mean psycopg 3, the PostgreSQL driver Convener installs."""
    if url.drivername in ("postgresql", "postgres"):
        return url.set(drivername="postgresql+psycopg")
    return url


def _url_kind(location: str) -> str:
    try:
        url = _normalise_url(make_url(location))
    except (sa_exc.ArgumentError, ValueError):
        raise InvalidArgument("the data source URL is malformed") from None
    backend = url.get_backend_name()
    if backend in ("sqlite", "duckdb"):
        path = Path(url.database or "").expanduser()
        if not url.database or url.database == ":memory:" or not path.is_file():
            raise InvalidArgument(f"the {backend} URL does not name an existing database file")
        kind = _sniff_database(path)
        if kind != backend:
            raise InvalidArgument(f"the file {path.name!r} is a {kind} database, not {backend}")
        return kind
    try:
        url.get_dialect()
    except (sa_exc.NoSuchModuleError, ImportError):
        raise InvalidArgument(f"unsupported database URL scheme {url.drivername!r}") from None
    return "postgresql" if backend == "postgresql" else "sqlalchemy"


def _sniff_database(path: Path) -> str:
    with path.open("rb") as handle:
        header = handle.read(16)
    if header.startswith(SQLITE_MAGIC):
        return "sqlite"
    if header[8:12] == DUCKDB_MAGIC:
        return "duckdb"
    raise InvalidArgument(f"the file {path.name!r} is neither a DuckDB nor a SQLite database")


def _data_format(path: Path) -> str | None:
    name = path.name.lower()
    return next((kind for suffix, kind in DATA_SUFFIXES.items() if name.endswith(suffix)), None)


def _data_files(root: Path) -> Iterator[Path]:
    """Data files under ``root`` in sorted path order, skipping hidden files and folders, not following
    symbolic links to folders, and skipping links to files outside the folder (the gate checked the folder,
    not where its links lead)."""
    found: list[Path] = []
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = [name for name in subfolders if not name.startswith(".")]
        found.extend(Path(folder, name) for name in files if not name.startswith("."))
    real_root = root.resolve()
    yield from (path for path in sorted(found)
                if path.is_file() and _data_format(path) is not None and within(path.resolve(), real_root))


# --- type normalisation -------------------------------------------------------------------------------

TYPE_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\[\d*\]$|^(STRUCT|MAP|LIST|ARRAY|UNION|ROW|RECORD)\b|^_"), shapes.RECORD),
    (re.compile(r"^JSONB?\b"), shapes.JSON),
    (re.compile(r"^(BOOL|BOOLEAN|LOGICAL)\b"), shapes.BOOLEAN),
    (re.compile(r"^TIMESTAMP"), shapes.TIMESTAMP),
    (re.compile(r"^DATETIME"), shapes.DATETIME),
    (re.compile(r"^DATE\b"), shapes.DATE),
    (re.compile(r"^TIME(TZ)?\b"), shapes.TIME),
    (re.compile(r"^(DECIMAL|NUMERIC|NUMBER|DEC|MONEY)\b"), shapes.NUMERIC),
    (re.compile(r"^(DOUBLE|FLOAT\d*|REAL)\b"), shapes.FLOAT),
    (
        re.compile(r"^(U?(TINY|SMALL|MEDIUM|BIG|HUGE)?INT(EGER|\d+)?|UNSIGNED BIG INT|(SMALL|BIG)?SERIAL\d?|OID)\b"),
        shapes.INTEGER,
    ),
    (re.compile(r"^(BLOB|BYTEA|BYTES|BINARY|VARBINARY|BIT|VARBIT|LONGBLOB|MEDIUMBLOB|TINYBLOB)\b"), shapes.BYTES),
]


def normalise_type(raw: str) -> str:
    """A database's type name (``BIGINT``, ``int8``, ``DECIMAL(10,2)``, ``TIMESTAMP WITH TIME ZONE``,
    ``INTEGER[]``…) as one of the BigQuery-style names in ``shapes``; anything unknown reads ``STRING``."""
    name = raw.strip().upper()
    return next((kind for pattern, kind in TYPE_PATTERNS if pattern.search(name)), shapes.STRING)


def sqlite_declared_type(declared: str) -> str | None:
    """SQLite's column affinity rules, after the names people use for dates, booleans and JSON; None for an
    undeclared type (the values decide)."""
    name = declared.strip().upper()
    if not name:
        return None
    for prefix, kind in (("BOOL", shapes.BOOLEAN), ("DATETIME", shapes.DATETIME), ("TIMESTAMP", shapes.TIMESTAMP),
                         ("DATE", shapes.DATE), ("TIME", shapes.TIME), ("JSON", shapes.JSON),
                         ("DECIMAL", shapes.NUMERIC), ("NUMERIC", shapes.NUMERIC)):  # fmt: skip
        if name.startswith(prefix):
            return kind
    if "INT" in name:
        return shapes.INTEGER
    if any(word in name for word in ("CHAR", "CLOB", "TEXT")):
        return shapes.STRING
    if "BLOB" in name:
        return shapes.BYTES
    if any(word in name for word in ("REAL", "FLOA", "DOUB")):
        return shapes.FLOAT
    return shapes.NUMERIC


def value_type(values: Iterable[Any]) -> str:
    """The type the non-null Python values suggest (the most common one; integers and floats mixed are FLOAT)."""
    counts = Counter(_python_type(value) for value in values if value is not None)
    if not counts:
        return shapes.STRING
    if set(counts) == {shapes.INTEGER, shapes.FLOAT}:
        return shapes.FLOAT
    return counts.most_common(1)[0][0]


def _python_type(value: Any) -> str:
    checks: list[tuple[type | tuple[type, ...], str]] = [
        (bool, shapes.BOOLEAN), (int, shapes.INTEGER), (float, shapes.FLOAT), (Decimal, shapes.NUMERIC),
        ((bytes, bytearray, memoryview), shapes.BYTES), (datetime, shapes.TIMESTAMP), (date, shapes.DATE),
        (clock_time, shapes.TIME), ((dict, list, tuple), shapes.RECORD),
    ]  # fmt: skip
    return next((kind for cls, kind in checks if isinstance(value, cls)), shapes.STRING)


def _sqlalchemy_type(column_type: Any) -> str:
    """An inspector's column type: by SQLAlchemy's generic classes first, then by the type's name."""
    checks: list[tuple[type | tuple[type, ...], str]] = [
        (sa_types.ARRAY, shapes.RECORD), (sa_types.JSON, shapes.JSON), (sa_types.Boolean, shapes.BOOLEAN),
        (sa_types.Integer, shapes.INTEGER), (sa_types.Float, shapes.FLOAT), (sa_types.Numeric, shapes.NUMERIC),
        (sa_types.DateTime, shapes.TIMESTAMP), (sa_types.Date, shapes.DATE), (sa_types.Time, shapes.TIME),
        ((sa_types.LargeBinary, sa_types.BINARY, sa_types.VARBINARY), shapes.BYTES),
        (sa_types.Interval, shapes.STRING), (sa_types.String, shapes.STRING),
    ]  # fmt: skip
    for cls, kind in checks:
        if isinstance(column_type, cls):
            return kind
    try:
        return normalise_type(str(column_type))
    except sa_exc.SQLAlchemyError:
        return shapes.STRING


# --- messages -----------------------------------------------------------------------------------------

URL_PATTERN = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s'\"]*")
PATH_PATTERN = re.compile(r"(?<![\w./-])(?:~|\.{1,2})?/[^\s'\"]*|\b[A-Za-z]:\\[^\s'\"]*")
QUERY_ECHO = re.compile(r"^\s*(LINE \d+:|\^|\[SQL:|\(Background on this error)")


def clean_message(message: str, limit: int = 400) -> str:
    """An engine's error message fit for a client and for a model repairing its SQL: the lines before the
    echo of the query, with URLs and file paths masked."""
    kept: list[str] = []
    for line in message.splitlines():
        if QUERY_ECHO.match(line):
            break
        if line.strip():
            kept.append(line.strip())
    text = " ".join(kept) or "the query failed"
    text = URL_PATTERN.sub("<url>", text)
    text = PATH_PATTERN.sub("<path>", text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _check_limits(row_limit: int, timeout_seconds: float) -> None:
    if row_limit < 0:
        raise InvalidArgument("row_limit must not be negative")
    if not timeout_seconds > 0:
        raise InvalidArgument("timeout_seconds must be positive")


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime):
        return value.isoformat(sep=" ")
    return str(value)


# --- the shared part of every engine ------------------------------------------------------------------


@dataclass(frozen=True)
class _Column:
    name: str
    type: str | None  # None: unknown until values are seen (untyped SQLite columns)
    description: str | None = None  # the database's comment on the column, if it keeps one


@dataclass(frozen=True)
class _Table:
    name: str  # as queries name it: ``cars`` or ``sales.cars``
    path: tuple[str, ...]  # the identifier parts, for quoting
    columns: tuple[_Column, ...]
    aliases: tuple[str, ...] = ()  # other spellings queries may use (``main.cars``)
    row_count: int | None = None
    description: str | None = None  # the database's comment on the table


@dataclass
class _Rows:
    names: list[str]
    types: list[str | None]  # None where the engine does not say
    rows: list[tuple[Any, ...]]
    cut_at_bytes: int | None = None  # the byte cap, when it left rows out

    @classmethod
    def of(cls, names: list[str], types: list[str | None], collected: Collected) -> _Rows:
        return cls(names, types, collected.rows, collected.cut_at_bytes)


class _Engine:
    """What all engines share: the table list, samples, distinct values, and ``execute`` around ``_run``."""

    kind: str
    dialect: str

    def __init__(self, budget: Budget) -> None:
        self.budget = budget
        self._catalog: list[_Table] | None = None
        self._catalog_lock = threading.Lock()
        self._distinct: OrderedDict[tuple[str, str, int], tuple[float, list[str]]] = OrderedDict()

    # Engine-specific primitives.
    def _load_catalog(self) -> list[_Table]:
        raise NotImplementedError

    def _query(self, sql: str, caps: Caps, watch: Watch) -> _Rows:
        """Run trusted or vetted SQL on the calling (worker) thread, within ``caps``, registering with
        ``watch`` how to stop it; ApiErrors only."""
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    # Shared behaviour.
    def _run(self, sql: str, *, max_rows: int, timeout_seconds: float, max_bytes: int | None = None) -> _Rows:
        """Run trusted or vetted SQL: at most ``max_rows`` rows and ``max_bytes`` bytes (None: no byte cap, for
        the engine's own catalog), no value longer than the budget's, ended at the deadline from outside."""
        caps = Caps(rows=max_rows, bytes=max_bytes, value=self.budget.value_bytes)
        return run_within(timeout_seconds, lambda watch: self._query(sql, caps, watch))

    def tables(self, *, samples: int = 5) -> list[TableInfo]:
        catalog = self._refresh_catalog()
        return [self._table_info(table, samples) for table in catalog]

    def distinct_values(self, table: str, column: str, limit: int = 1000) -> list[str]:
        """The column's distinct values, sorted, at most ``limit``; read again after DISTINCT_TTL_SECONDS or a
        new catalog, as the schema's samples are (the planner asks for the same columns at every question)."""
        key = (table.lower(), column.lower(), limit)
        with self._catalog_lock:
            kept = self._distinct.get(key)
        if kept is not None and time.monotonic() - kept[0] <= DISTINCT_TTL_SECONDS:
            return list(kept[1])
        values = self._read_distinct(table, column, limit)
        with self._catalog_lock:
            self._distinct[key] = (time.monotonic(), values)
            self._distinct.move_to_end(key)
            while len(self._distinct) > DISTINCT_KEPT:
                self._distinct.popitem(last=False)
        return list(values)

    def _read_distinct(self, table: str, column: str, limit: int) -> list[str]:
        found = self._find_table(table)
        match = next((c for c in found.columns if c.name.lower() == column.lower()), None)
        if match is None:
            raise NotFound(f"the table {found.name} has no column {column!r}")
        if match.type in SKIPPED_SAMPLE_TYPES:
            return []  # Binary, JSON and nested values are not words to match a question against.
        name = self._quote_column(match.name)
        sql = (
            f"SELECT DISTINCT {name} FROM {self._quote_table(found)} WHERE {name} IS NOT NULL "
            f"ORDER BY 1 LIMIT {max(0, int(limit))}"
        )
        rows = self._run(sql, max_rows=max(0, int(limit)), timeout_seconds=INTROSPECTION_TIMEOUT,
                         max_bytes=self.budget.result_bytes).rows
        return [_text(row[0]) for row in rows]

    def value_span(self, table: str, column: str) -> tuple[str, str] | None:
        """The least and the greatest value of a column (as text), None when it holds none: what a date column
        covers, read in one statement rather than from its values."""
        found = self._find_table(table)
        match = next((c for c in found.columns if c.name.lower() == column.lower()), None)
        if match is None:
            raise NotFound(f"the table {found.name} has no column {column!r}")
        name = self._quote_column(match.name)
        rows = self._run(f"SELECT MIN({name}), MAX({name}) FROM {self._quote_table(found)}", max_rows=1,
                         timeout_seconds=INTROSPECTION_TIMEOUT, max_bytes=self.budget.result_bytes).rows
        if not rows or rows[0][0] is None:
            return None
        return _text(rows[0][0]), _text(rows[0][1])

    def execute(self, sql: str, *, row_limit: int, timeout_seconds: float,
                only: Collection[str] | None = None) -> QueryResult:
        """Runs a checked SELECT; ``only`` narrows the tables it may read to these (a data agent's
        references) from all of the source's."""
        _check_limits(row_limit, timeout_seconds)
        vetted = _vetted(sql, self.dialect, frozenset(self._allowed_names(only)), row_limit, self.budget.value_bytes)
        result = self._run(vetted, max_rows=row_limit + 1, timeout_seconds=timeout_seconds,
                           max_bytes=self.budget.result_bytes)
        rows = result.rows[:row_limit]
        columns = tuple(
            ResultColumn(name=name, type=kind or value_type(row[i] for row in rows))
            for i, (name, kind) in enumerate(zip(result.names, result.types, strict=True))
        )
        return QueryResult(columns=columns, rows=rows,
                           truncated=len(result.rows) > row_limit or result.cut_at_bytes is not None,
                           cut_at_bytes=result.cut_at_bytes)

    # Helpers.
    def _refresh_catalog(self) -> list[_Table]:
        catalog = self._load_catalog()
        with self._catalog_lock:
            self._catalog = catalog
            self._distinct.clear()
        return catalog

    def _current_catalog(self) -> list[_Table]:
        with self._catalog_lock:
            catalog = self._catalog
        return catalog if catalog is not None else self._refresh_catalog()

    def _allowed_names(self, only: Collection[str] | None = None) -> set[str]:
        wanted = None if only is None else {name.lower() for name in only}
        return {name for table in self._current_catalog() for name in (table.name, *table.aliases)
                if wanted is None or table.name.lower() in wanted}

    def _find_table(self, name: str) -> _Table:
        lowered = name.lower()
        for table in self._current_catalog():
            if lowered in {spelling.lower() for spelling in (table.name, *table.aliases)}:
                return table
        raise NotFound(f"there is no table {name!r} in this data source")

    def _quote_column(self, name: str) -> str:
        return exp.to_identifier(name, quoted=True).sql(dialect=self.dialect)

    def _quote_table(self, table: _Table) -> str:
        return ".".join(self._quote_column(part) for part in table.path)

    def _table_info(self, table: _Table, samples: int) -> TableInfo:
        rows = self._sample_rows(table) if samples > 0 or any(c.type is None for c in table.columns) else None
        columns = []
        for index, column in enumerate(table.columns):
            values = [row[index] for row in rows.rows] if rows is not None else []
            kind = column.type or value_type(values)
            picked = () if kind in SKIPPED_SAMPLE_TYPES else _pick_samples(values, samples)
            columns.append(ColumnInfo(name=column.name, type=kind, description=column.description, samples=picked))
        return TableInfo(name=table.name, columns=tuple(columns), description=table.description,
                         row_count=table.row_count)

    def _sample_rows(self, table: _Table) -> _Rows | None:
        names = ", ".join(self._quote_column(column.name) for column in table.columns)
        sql = f"SELECT {names} FROM {self._quote_table(table)} LIMIT {SAMPLE_ROWS}"
        try:
            return self._run(sql, max_rows=SAMPLE_ROWS, timeout_seconds=INTROSPECTION_TIMEOUT,
                             max_bytes=self.budget.result_bytes)
        except ApiError:
            return None  # A broken view, say: the table is still listed, without samples.


VETTED_KEPT = 512
"""Checked queries remembered (``_vetted``): a dashboard or an agent's example asks the same SQL again."""
VETTED_MAX_CHARS = 4000
"""Longer queries are checked every time, not remembered (the memory they would hold)."""


def _vetted(sql: str, dialect: str, allowed: frozenset[str], row_limit: int, value_bytes: int) -> str:
    """``check_select`` then ``check_sizes``: the SQL to run, or the refusal. Both are pure functions of these
    arguments, so a query that passed is remembered with what it became; one refused is checked again."""
    if len(sql) > VETTED_MAX_CHARS:
        return _vet(sql, dialect, allowed, row_limit, value_bytes)
    return _vetted_kept(sql, dialect, allowed, row_limit, value_bytes)


def _vet(sql: str, dialect: str, allowed: frozenset[str], row_limit: int, value_bytes: int) -> str:
    vetted = check_select(sql, dialect, allowed, row_limit)
    check_sizes(vetted, dialect, value_bytes)
    return vetted


_vetted_kept = lru_cache(maxsize=VETTED_KEPT)(_vet)  # exceptions are not cached: a refusal is checked again


def _pick_samples(values: Sequence[Any], count: int) -> tuple[str, ...]:
    """Up to ``count`` distinct non-null values, most frequent first; binary and long text are skipped."""
    if count <= 0:
        return ()
    texts = [_text(v) for v in values if v is not None and not isinstance(v, (bytes, bytearray, memoryview))]
    ranked = Counter(text for text in texts if len(text) <= MAX_SAMPLE_CHARS)
    first_seen = {text: i for i, text in reversed(list(enumerate(texts)))}
    ordered = sorted(ranked, key=lambda text: (-ranked[text], first_seen[text]))
    return tuple(ordered[:count])


# --- DuckDB: database files and loaded data files -----------------------------------------------------


def connect_duckdb_file(path: Path, budget: Budget = DEFAULT_BUDGET) -> duckdb.DuckDBPyConnection:
    """A DuckDB file, read-only, with no file, network or extension access, the budget's memory, threads and
    spill folder, and the configuration locked."""
    try:
        return duckdb.connect(str(path), read_only=True, config=budget.locked_duckdb_config())
    except duckdb.Error as error:
        message = clean_message(str(error))
        raise FailedPrecondition(f"the DuckDB file {path.name!r} cannot be opened: {message}") from None


def load_files_into_duckdb(location: Path, budget: Budget = DEFAULT_BUDGET) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with one table per data file under ``location`` (or the one file), then locked
    like ``connect_duckdb_file``'s connections: no file access, no extensions, no SET."""
    files = [location] if location.is_file() else list(_data_files(location))
    root = location.parent if location.is_file() else location
    connection = duckdb.connect(":memory:", config=budget.duckdb_config())
    try:
        reserved = {row[0] for row in connection.execute(RESERVED_WORDS_SQL).fetchall()}
        for name, path in _file_table_names(files, root, reserved):
            _load_file(connection, name, path)
        connection.execute("SET enable_external_access = false")
        connection.execute("SET lock_configuration = true")
    except BaseException:
        connection.close()
        raise
    return connection


RESERVED_WORDS_SQL = "SELECT keyword_name FROM duckdb_keywords() WHERE keyword_category <> 'unreserved'"


def _file_table_names(files: Sequence[Path], root: Path, reserved: Collection[str]) -> list[tuple[str, Path]]:
    names: list[tuple[str, Path]] = []
    used: set[str] = set()
    for path in files:
        relative = path.relative_to(root)
        stem = path.name[: len(path.name) - len(_suffix(path))]
        base = _identifier("_".join([*relative.parent.parts, stem]), reserved)
        name, counter = base, 1
        while name in used:
            counter += 1
            name = f"{base}_{counter}"
        used.add(name)
        names.append((name, path))
    return names


def _suffix(path: Path) -> str:
    lowered = path.name.lower()
    return max((suffix for suffix in DATA_SUFFIXES if lowered.endswith(suffix)), key=len, default="")


def _identifier(text: str, reserved: Collection[str]) -> str:
    name = re.sub(r"[^0-9a-z_]+", "_", text.lower()).strip("_") or "data"
    if name[0].isdigit() or name in reserved or not _parses_as_table(name):
        name = f"t_{name}"
    return name


def _parses_as_table(name: str) -> bool:
    try:
        tree = sqlglot.parse_one(f"SELECT * FROM {name}", read="duckdb")
    except sqlglot.errors.SqlglotError:
        return False
    table = tree.find(exp.Table)
    return table is not None and table.name == name


def _load_file(connection: duckdb.DuckDBPyConnection, name: str, path: Path) -> None:
    reader = {
        "csv": "read_csv(?)",
        "parquet": "read_parquet(?)",
        "json": "read_json(?)",
        "jsonl": "read_json(?, format = 'newline_delimited')",
    }[_data_format(path) or "csv"]
    try:
        connection.execute(f'CREATE TABLE "{name}" AS SELECT * FROM {reader}', [str(path)])
    except duckdb.OutOfMemoryException:
        raise ResourceExhausted(f"the data file {path.name!r} does not fit in the memory limit") from None
    except duckdb.Error as error:
        message = clean_message(str(error))
        raise FailedPrecondition(f"the data file {path.name!r} could not be loaded: {message}") from None


class DuckDBEngine(_Engine):
    """A locked DuckDB connection (``connect_duckdb_file`` or ``load_files_into_duckdb``). Each query runs on
    its own cursor, in a transaction that is rolled back, interrupted from outside at the deadline, with its
    long values refused inside DuckDB (``_guarded``) before any is turned into a Python object."""

    dialect = "duckdb"

    def __init__(self, connection: duckdb.DuckDBPyConnection, *, kind: str, budget: Budget = DEFAULT_BUDGET) -> None:
        super().__init__(budget)
        self.kind = kind
        self._connection = connection
        self._cursor_lock = threading.Lock()
        self._running: set[duckdb.DuckDBPyConnection] = set()  # the cursors of queries running now
        self._closing = False
        self._refresh_catalog()

    def close(self) -> None:
        """Close now, or, while an interrupted query is still stopping, interrupt it and leave the closing to
        it: DuckDB refuses to close a connection one of its cursors is busy on."""
        with self._cursor_lock:
            self._closing = True
            running = list(self._running)
            if not running:
                self._connection.close()
        for cursor in running:
            cursor.interrupt()

    def _release(self, cursor: duckdb.DuckDBPyConnection) -> None:
        with self._cursor_lock:
            self._running.discard(cursor)
            if self._closing and not self._running:
                self._connection.close()

    def _load_catalog(self) -> list[_Table]:
        rows = self._run(DUCKDB_CATALOG_SQL, max_rows=1_000_000, timeout_seconds=INTROSPECTION_TIMEOUT).rows
        grouped: dict[tuple[str, str, str], list[_Column]] = {}
        about: dict[tuple[str, str, str], tuple[int | None, str | None]] = {}
        for database, schema, table, column, data_type, size, column_comment, table_comment in rows:
            key = (database, schema, table)
            grouped.setdefault(key, []).append(_Column(column, normalise_type(data_type), column_comment or None))
            about[key] = (size, table_comment or None)
        return [self._table(key, tuple(columns), *about[key]) for key, columns in grouped.items()]

    @staticmethod
    def _table(key: tuple[str, str, str], columns: tuple[_Column, ...], size: int | None,
               description: str | None) -> _Table:
        database, schema, table = key
        name = table if schema == "main" else f"{schema}.{table}"
        aliases = (f"{schema}.{table}", f"{database}.{schema}.{table}")
        return _Table(name=name, path=(schema, table), columns=columns, aliases=aliases, row_count=size,
                      description=description)

    def _query(self, sql: str, caps: Caps, watch: Watch) -> _Rows:
        try:
            with self._cursor_lock:
                if self._closing:
                    raise FailedPrecondition("the data source has been closed")
                cursor = self._connection.cursor()
                self._running.add(cursor)
        except duckdb.Error:
            raise FailedPrecondition("the data source has been closed") from None
        watch.on_expiry(cursor.interrupt)
        names: list[str] = []
        try:
            cursor.execute("BEGIN TRANSACTION")
            relation = cursor.sql(sql)  # binds a query without running it: its columns and their types
            if relation is None or relation.type != "QUERY_RELATION":
                # Not a query (check_select lets none through): DuckDB ran it already, and it is rolled back.
                return _Rows([], [], [])
            names = list(relation.columns)
            cursor.execute(_guarded(sql, relation.types, caps.value))
            description = cursor.description or []
            watch.check()  # a result made past the deadline is not read
            collected = collect(cursor.fetchmany, names, caps, watch) if caps.rows > 0 else Collected([])
            return _Rows.of(names, [normalise_type(str(d[1])) for d in description], collected)
        except duckdb.InterruptException:
            raise deadline_error(watch.seconds) from None
        except duckdb.OutOfMemoryException:
            raise ResourceExhausted("the query needs more memory than the data source allows "
                                    "(CONVENER_ANALYTICS_MEMORY_LIMIT_MB)") from None
        except duckdb.Error as error:
            index = _guard_column(str(error))
            if index is not None:
                raise too_long(names[index] if index < len(names) else str(index + 1), caps.value) from None
            if watch.expired:
                raise deadline_error(watch.seconds) from None
            raise InvalidArgument(clean_message(str(error))) from None
        finally:
            _rollback_quietly(cursor)
            self._release(cursor)


GUARD_MARK = "convener-value-too-long:"
FIXED_SIZE_TYPES = frozenset({
    "boolean", "tinyint", "smallint", "integer", "bigint", "hugeint", "utinyint", "usmallint", "uinteger",
    "ubigint", "uhugeint", "float", "double", "decimal", "date", "time", "time_tz", "timestamp",
    "timestamp_s", "timestamp_ms", "timestamp_ns", "timestamp_tz", "interval", "uuid", "enum", "null",
})  # fmt: skip


def _guarded(sql: str, types: Sequence[Any], cap: int) -> str:
    """The query, with every column that can hold a long value (text, bytes, lists, records…) checked inside
    DuckDB: a value longer than ``cap`` bytes raises an error there, so that no such value is ever turned into
    a Python object (a list of 10⁸ numbers would take gigabytes as one). Columns are named by position (``#n``),
    which works whatever their names, duplicates included; the outer SELECT keeps the inner one's order."""
    checks = []
    for index, kind in enumerate(types, start=1):
        type_id = str(getattr(kind, "id", "")).lower()
        if type_id in FIXED_SIZE_TYPES:
            checks.append(f"#{index}")
            continue
        size = {"varchar": f"strlen(#{index})", "blob": f"octet_length(#{index})",
                "bit": f"bit_length(#{index}) // 8"}.get(type_id, f"strlen(CAST(#{index} AS VARCHAR))")
        checks.append(f"CASE WHEN {size} > {int(cap)} THEN error('{GUARD_MARK}{index - 1}') ELSE #{index} END")
    if not checks:
        return sql
    return f"SELECT {', '.join(checks)} FROM ({sql}) AS convener_result"


def _guard_column(message: str) -> int | None:
    found = re.search(re.escape(GUARD_MARK) + r"(\d+)", message)
    return int(found.group(1)) if found else None


def _rollback_quietly(cursor: duckdb.DuckDBPyConnection) -> None:
    try:
        cursor.execute("ROLLBACK")
    except duckdb.Error:
        pass  # No transaction left to roll back (an error already ended it).
    cursor.close()


DUCKDB_CATALOG_SQL = """
SELECT c.database_name, c.schema_name, c.table_name, c.column_name, c.data_type, t.estimated_size,
       c.comment, t.comment
FROM duckdb_columns() AS c
LEFT JOIN duckdb_tables() AS t
  ON t.database_name = c.database_name AND t.schema_name = c.schema_name AND t.table_name = c.table_name
WHERE c.database_name = current_database() AND NOT c.internal
ORDER BY c.schema_name, c.table_name, c.column_index
"""


# --- SQLite -------------------------------------------------------------------------------------------

SQLITE_ALLOWED_ACTIONS = frozenset({sqlite3.SQLITE_READ, sqlite3.SQLITE_SELECT, sqlite3.SQLITE_FUNCTION,
                                    sqlite3.SQLITE_RECURSIVE})  # fmt: skip
SQLITE_DENIED_FUNCTIONS = frozenset(
    {"load_extension", "readfile", "writefile", "edit", "fts3_tokenizer", "zipfile", "sqlar_compress",
     "sqlar_uncompress", "sqlite_dbpage"}
)  # fmt: skip
SQLITE_MAX_LENGTH = 1_000_000_000  # SQLite's own ceiling for SQLITE_LIMIT_LENGTH
SQLITE_CATALOG_SQL = (
    "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' "
    "ORDER BY name"
)


class SQLiteEngine(_Engine):
    """A SQLite file, read-only at every level: URI ``mode=ro``, ``query_only``, no ATTACH, and an authorizer
    admitting only reads of the file's own tables. A fresh connection per call, so calls may run in parallel."""

    kind = "sqlite"
    dialect = "sqlite"

    def __init__(self, path: Path, budget: Budget = DEFAULT_BUDGET) -> None:
        super().__init__(budget)
        self._uri = f"{path.resolve().as_uri()}?mode=ro"
        self._name = path.name
        self._refresh_catalog()

    def close(self) -> None:
        """Nothing stays open between calls."""

    def _connect(self, readable: Collection[str] | None) -> sqlite3.Connection:
        """``readable``: the lower-cased tables queries may read; None only for our own catalog queries."""
        try:
            connection = sqlite3.connect(self._uri, uri=True, check_same_thread=False, isolation_level=None)
        except sqlite3.Error as error:
            message = clean_message(str(error))
            raise FailedPrecondition(f"the SQLite file {self._name!r} cannot be opened: {message}") from None
        connection.execute("PRAGMA query_only = ON")
        connection.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
        # No string or blob longer than a value may be (zeroblob(1e9), printf('%.*c', 1e9, 'x')…): SQLite
        # refuses to make it, rather than make it and hand it over.
        connection.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, min(self.budget.value_bytes, SQLITE_MAX_LENGTH))
        if hasattr(connection, "enable_load_extension"):
            connection.enable_load_extension(False)
        if readable is not None:
            connection.set_authorizer(_sqlite_authorizer(frozenset(readable)))
        return connection

    def _load_catalog(self) -> list[_Table]:
        connection = self._connect(None)
        try:
            names = [row[0] for row in connection.execute(SQLITE_CATALOG_SQL).fetchall()]
            tables = []
            for name in names:
                info = connection.execute("SELECT name, type FROM pragma_table_info(?)", [name]).fetchall()
                columns = tuple(_Column(column, sqlite_declared_type(declared or "")) for column, declared in info)
                tables.append(_Table(name=name, path=(name,), columns=columns, aliases=(f"main.{name}",)))
            return tables
        except sqlite3.Error as error:
            message = clean_message(str(error))
            raise FailedPrecondition(f"the SQLite file {self._name!r} cannot be read: {message}") from None
        finally:
            connection.close()

    def _query(self, sql: str, caps: Caps, watch: Watch) -> _Rows:
        readable = {table.name.lower() for table in self._current_catalog()}
        connection = self._connect(readable)
        # Two ways to stop: the progress handler between virtual machine steps, and interrupt() from outside.
        connection.set_progress_handler(lambda: int(watch.expired), 1000)
        watch.on_expiry(connection.interrupt)
        try:
            cursor = connection.execute(sql)
            names = [d[0] for d in cursor.description or []]
            collected = collect(cursor.fetchmany, names, caps, watch) if caps.rows > 0 else Collected([])
            return _Rows.of(names, [None] * len(names), collected)
        except sqlite3.OperationalError as error:
            if watch.expired and "interrupted" in str(error):
                raise deadline_error(watch.seconds) from None
            raise _sqlite_error(error, caps.value) from None
        except sqlite3.Error as error:
            raise _sqlite_error(error, caps.value) from None
        finally:
            connection.close()


def _sqlite_error(error: sqlite3.Error, value_bytes: int) -> ApiError:
    message = clean_message(str(error))
    if "too big" in message:  # SQLITE_TOOBIG: a string or blob past SQLITE_LIMIT_LENGTH
        return ResourceExhausted(f"the query makes a value longer than {value_bytes:,} bytes, the most one value "
                                 "may have (CONVENER_ANALYTICS_VALUE_BYTES)")
    if "not authorized" in message or "prohibited" in message or "readonly" in message.replace("-", ""):
        return PermissionDenied(f"the data source is read-only and limited to its own tables ({message})")
    return InvalidArgument(message)


Authorizer = Callable[[int, str | None, str | None, str | None, str | None], int]


def _sqlite_authorizer(readable: frozenset[str]) -> Authorizer:
    def authorize(action: int, arg1: str | None, arg2: str | None, database: str | None, source: str | None) -> int:
        if action not in SQLITE_ALLOWED_ACTIONS:
            return sqlite3.SQLITE_DENY
        if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() in SQLITE_DENIED_FUNCTIONS:
            return sqlite3.SQLITE_DENY
        # A read with no database is of a CTE or subquery; any other must be of one of the file's own tables.
        own_table = database is None or (database == "main" and (arg1 or "").lower() in readable)
        return sqlite3.SQLITE_DENY if action == sqlite3.SQLITE_READ and not own_table else sqlite3.SQLITE_OK

    return authorize


# --- SQLAlchemy: PostgreSQL and other server databases ------------------------------------------------

SYSTEM_SCHEMAS = frozenset({"information_schema", "pg_catalog", "pg_toast", "mysql", "performance_schema", "sys"})
QUERY_CANCELED = "57014"
READ_ONLY_STATES = {"25006", "42501"}  # read_only_sql_transaction, insufficient_privilege
OUT_OF_MEMORY_STATES = {"53200", "53100", "54000"}  # out_of_memory, disk_full, program_limit_exceeded


class SQLAlchemyEngine(_Engine):
    """A database reached through SQLAlchemy; PostgreSQL gets read-only transactions and statement timeouts."""

    def __init__(self, url: URL, budget: Budget = DEFAULT_BUDGET) -> None:
        super().__init__(budget)
        self._engine: Engine = create_engine(_normalise_url(url), pool_pre_ping=True)
        self._backend = self._engine.dialect.name
        self._psycopg = self._engine.dialect.driver == "psycopg"  # psycopg 3: prepared statements, type names
        self._dbapi_error: type[Exception] = self._engine.dialect.loaded_dbapi.Error
        self._dbapi_operational: type[Exception] = self._engine.dialect.loaded_dbapi.OperationalError
        self.kind = "postgresql" if self._backend == "postgresql" else "sqlalchemy"
        self.dialect = {"postgresql": "postgres", "mssql": "tsql"}.get(self._backend, self._backend)
        self._state_lock = threading.Lock()
        self._running = 0  # queries holding a pooled connection now
        self._closing = False
        try:
            self._refresh_catalog()
        except BaseException:
            self._engine.dispose()
            raise

    def close(self) -> None:
        """Close now, or, while an interrupted query is still stopping, leave the closing to it: a connection
        given back to a pool that was already disposed would stay open in it until the pool is collected."""
        with self._state_lock:
            self._closing = True
            idle = self._running == 0
        if idle:
            self._engine.dispose()

    def _query_ended(self) -> None:
        with self._state_lock:
            self._running -= 1
            last = self._closing and self._running == 0
        if last:
            self._engine.dispose()

    def _load_catalog(self) -> list[_Table]:
        try:
            with self._engine.connect() as connection:
                for statement in self._session_statements(INTROSPECTION_TIMEOUT):
                    connection.exec_driver_sql(statement)
                inspector = inspect(connection)
                default = inspector.default_schema_name
                tables = []
                for schema in inspector.get_schema_names():
                    if schema.lower() in SYSTEM_SCHEMAS or schema.lower().startswith(("pg_toast", "pg_temp")):
                        continue
                    tables.extend(self._schema_tables(inspector, schema, default))
                connection.rollback()
                return tables
        except sa_exc.SQLAlchemyError as error:
            raise self._error(error, INTROSPECTION_TIMEOUT) from None

    @staticmethod
    def _schema_tables(inspector: Any, schema: str, default: str | None) -> list[_Table]:
        is_default = schema == default
        found = inspector.get_multi_columns(schema=None if is_default else schema, kind=ObjectKind.ANY)
        tables = []
        for (_, table), columns in sorted(found.items(), key=lambda item: item[0][1]):
            name = table if is_default else f"{schema}.{table}"
            aliases = (f"{schema}.{table}",) if is_default else ()
            typed = tuple(_Column(column["name"], _sqlalchemy_type(column["type"]), column.get("comment") or None)
                          for column in columns)
            tables.append(_Table(name=name, path=(schema, table), columns=typed, aliases=aliases))
        return tables

    @contextmanager
    def _read_only_connection(self, timeout_seconds: float) -> Iterator[Any]:
        """A pooled DBAPI connection inside a read-only transaction with a statement timeout, rolled back
        afterwards whatever happened."""
        with self._state_lock:
            self._running += 1
        try:
            try:
                raw = self._engine.raw_connection()
            except sa_exc.SQLAlchemyError:
                raise Unavailable("the database cannot be reached") from None
            try:
                cursor = raw.cursor()
                for statement in self._session_statements(timeout_seconds):
                    cursor.execute(statement)
                cursor.close()
                yield raw
            finally:
                self._end(raw)
        finally:
            self._query_ended()

    def _end(self, raw: Any) -> None:
        """Roll back, and on PostgreSQL undo any session-level setting a query managed to make, so nothing
        carries over to the next user of the pooled connection."""
        try:
            raw.rollback()
            if self._backend == "postgresql":
                cursor = raw.cursor()
                cursor.execute("RESET ALL")
                cursor.close()
                raw.commit()
        except self._dbapi_error:
            raw.invalidate()  # A broken connection must not go back to the pool.
        raw.close()

    def _session_statements(self, timeout_seconds: float) -> list[str]:
        milliseconds = max(1, int(timeout_seconds * 1000))
        if self._backend == "postgresql":
            return [
                "SET TRANSACTION READ ONLY",
                f"SET LOCAL statement_timeout = {milliseconds}",
                f"SET LOCAL lock_timeout = {milliseconds}",
                f"SET LOCAL work_mem = '{int(self.budget.work_mem_mb)}MB'",
                f"SET LOCAL idle_in_transaction_session_timeout = {milliseconds + 60_000}",
            ]
        if self._backend in ("mysql", "mariadb"):
            return ["SET SESSION TRANSACTION READ ONLY", f"SET SESSION max_execution_time = {milliseconds}"]
        return []

    def _query(self, sql: str, caps: Caps, watch: Watch) -> _Rows:
        try:
            with self._read_only_connection(max(0.001, watch.deadline - time.monotonic())) as raw, \
                    watch.cancellable(self._canceller(raw), repeat=False):
                # The server's statement_timeout is the second line: a cancel request sent before the query
                # has started is lost, and it is sent once (each is a new connection to the server).
                watch.check()
                cursor = raw.cursor()
                if self._psycopg:
                    cursor.execute(sql, prepare=True)  # the extended protocol: the server takes one statement
                else:
                    cursor.execute(sql)
                description = cursor.description or []
                names = [d[0] for d in description]

                def fetch(size: int) -> list[tuple[Any, ...]]:
                    return [tuple(_plain(value) for value in row) for row in cursor.fetchmany(size)]

                collected = collect(fetch, names, caps, watch) if caps.rows > 0 else Collected([])
                cursor.close()
        except ApiError:
            raise
        except Exception as error:  # noqa: BLE001 — the DBAPI's own error classes vary by driver
            raise self._error(error, watch.seconds) from None
        types = [self._result_type(d[1]) for d in description]
        return _Rows.of(names, types, collected)

    def _canceller(self, raw: Any) -> Callable[[], object]:
        """How to stop the query running on ``raw``: psycopg's cancel request; other drivers rely on the
        server's own timeout."""
        driver = raw.driver_connection
        if self._psycopg and driver is not None:
            return driver.cancel  # type: ignore[no-any-return]
        return lambda: None

    def _result_type(self, type_code: Any) -> str | None:
        if not self._psycopg or not isinstance(type_code, int):
            return None
        import psycopg.postgres  # Only here: psycopg is the optional ``postgres`` extra.

        info = psycopg.postgres.types.get(type_code)
        if info is None:
            return None  # A type of this database (an enum, say): the values decide.
        return shapes.RECORD if info.array_oid == type_code else normalise_type(info.name)

    def _error(self, error: BaseException, timeout_seconds: float) -> ApiError:
        original = getattr(error, "orig", None) or error
        state = getattr(original, "sqlstate", None)
        if state == QUERY_CANCELED:
            return deadline_error(timeout_seconds)
        if state in OUT_OF_MEMORY_STATES:
            return ResourceExhausted("the query needs more memory or disk than the database allows")
        diagnostics = getattr(original, "diag", None)
        message = clean_message(getattr(diagnostics, "message_primary", None) or str(original))
        if state in READ_ONLY_STATES:
            return PermissionDenied(f"the data source is read-only ({message})")
        if isinstance(original, self._dbapi_operational) and state is None:
            return Unavailable("the database cannot be reached")
        return InvalidArgument(message)


def _plain(value: Any) -> Any:
    if isinstance(value, memoryview):
        return value.tobytes()
    return value

