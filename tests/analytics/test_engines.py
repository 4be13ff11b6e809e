"""The data engines: opening each kind of location, describing tables, running capped and timed queries,
and enforcing read-only access in the engine itself (not only in check_select).

PostgreSQL tests run when CONVENER_TEST_DATABASE_URL is set. They use a database of their own, created and
dropped here, rather than a schema of the shared one: the engine lists every non-system schema it can see,
and other tests create and drop schemas there all the time.
"""

from __future__ import annotations

import datetime as dt
import os
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb
import pytest
from sqlalchemy import create_engine
from sqlalchemy.engine import make_url

from convener.analytics import engines, shapes
from convener.analytics.deadline import Watch, run_within
from convener.analytics.engines import (
    DataEngine,
    DuckDBEngine,
    clean_message,
    connect_duckdb_file,
    load_files_into_duckdb,
    location_kind,
    normalise_type,
    open_engine,
    sqlite_declared_type,
)
from convener.api.errors import (
    ApiError,
    DeadlineExceeded,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    Unavailable,
)

POSTGRES_URL = os.environ.get("CONVENER_TEST_DATABASE_URL")
MAKES = ("volvo", "saab", "fiat", "volvo", "tesla")
LONG_NOTE = "x" * 120
CARS = 50


def car_rows() -> list[tuple[Any, ...]]:
    return [
        (i, MAKES[i % len(MAKES)], 1000.0 + i * 10, dt.date(2024, 1 + i % 12, 1 + i % 28), i % 2 == 0,
         LONG_NOTE if i % 3 == 0 else f"note {i % 4}")
        for i in range(CARS)
    ]  # fmt: skip


OWNERS = [(i, f"owner {i}") for i in range(10)]


# --- sources ------------------------------------------------------------------------------------------


def make_duckdb_file(path: Path) -> Path:
    """cars, owners and archive.old_cars, with a BLOB and a list column."""
    connection = duckdb.connect(str(path))
    connection.execute(
        "CREATE TABLE cars (id INTEGER, make VARCHAR, price DOUBLE, bought DATE, electric BOOLEAN, note VARCHAR,"
        " photo BLOB, tags VARCHAR[], total DECIMAL(10, 2), seen TIMESTAMPTZ)"
    )
    for row in car_rows():
        connection.execute(
            "INSERT INTO cars VALUES (?, ?, ?, ?, ?, ?, 'png'::BLOB, ['a', 'b'], 1.5, TIMESTAMPTZ '2024-01-01 10:00+00')",
            list(row),
        )
    connection.execute("CREATE TABLE owners (id BIGINT, name TEXT)")
    connection.executemany("INSERT INTO owners VALUES (?, ?)", OWNERS)
    connection.execute("CREATE SCHEMA archive")
    connection.execute("CREATE TABLE archive.old_cars AS SELECT id, make FROM cars WHERE id < 5")
    connection.execute("CREATE VIEW volvos AS SELECT * FROM cars WHERE make = 'volvo'")
    connection.close()
    return path


def make_files_folder(folder: Path, *, extras: bool = True) -> Path:
    """cars.csv and owners.parquet; with ``extras`` also nested/trips.jsonl, order.json (a keyword), Cars.tsv
    (a name collision), a hidden CSV and a text file."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = ["id,make,price,bought,electric,note"]
    lines += [f"{i},{m},{p},{b.isoformat()},{str(e).lower()},{n}" for i, m, p, b, e, n in car_rows()]
    (folder / "cars.csv").write_text("\n".join(lines) + "\n")
    connection = duckdb.connect(":memory:")
    connection.execute("CREATE TABLE owners (id BIGINT, name VARCHAR)")
    connection.executemany("INSERT INTO owners VALUES (?, ?)", OWNERS)
    connection.execute("COPY owners TO ? (FORMAT parquet)", [str(folder / "owners.parquet")])
    connection.close()
    if not extras:
        return folder
    (folder / "nested").mkdir(exist_ok=True)
    (folder / "nested" / "trips.jsonl").write_text('{"car": 1, "km": 12.5}\n{"car": 2, "km": 3.0}\n')
    (folder / "order.json").write_text('[{"id": 1}, {"id": 2}]')
    (folder / "Cars.tsv").write_text("id\tmake\n1\tvolvo\n")
    (folder / ".hidden.csv").write_text("a\n1\n")
    (folder / "readme.txt").write_text("not data")
    return folder


def make_sqlite_file(path: Path) -> Path:
    """cars with declared types (and one untyped column), owners, and a view."""
    connection = sqlite3.connect(path)
    connection.execute(
        "CREATE TABLE cars (id INTEGER PRIMARY KEY, make TEXT, price REAL, bought DATE, electric BOOLEAN,"
        " note VARCHAR(200), photo BLOB, anything)"
    )
    connection.executemany(
        "INSERT INTO cars VALUES (?, ?, ?, ?, ?, ?, x'89504e47', ?)",
        [(i, m, p, b.isoformat(), int(e), n, i * 2) for i, m, p, b, e, n in car_rows()],
    )
    connection.execute("CREATE TABLE owners (id INTEGER, name TEXT)")
    connection.executemany("INSERT INTO owners VALUES (?, ?)", OWNERS)
    connection.execute("CREATE VIEW volvos AS SELECT * FROM cars WHERE make = 'volvo'")
    connection.commit()
    connection.close()
    return path


PG_SETUP = """
CREATE TABLE cars (id integer PRIMARY KEY, make text, price double precision, bought date, electric boolean,
                   note varchar(200), photo bytea, tags text[], total numeric(10, 2), seen timestamptz);
CREATE TABLE owners (id bigint, name text);
CREATE SCHEMA archive;
CREATE TABLE archive.old_cars AS SELECT 1 AS id, 'volvo'::text AS make;
CREATE VIEW volvos AS SELECT * FROM cars WHERE make = 'volvo';
CREATE SEQUENCE evil_seq;
"""


@contextmanager
def postgres_database() -> Iterator[str]:
    """A database of its own with cars, owners, archive.old_cars and a view, dropped afterwards."""
    if not POSTGRES_URL:
        pytest.skip("CONVENER_TEST_DATABASE_URL is not set")
    name = f"convener_engines_{uuid.uuid4().hex[:12]}"
    admin = create_engine(POSTGRES_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.exec_driver_sql(f'CREATE DATABASE "{name}"')
    url = make_url(POSTGRES_URL).set(database=name).render_as_string(hide_password=False)
    setup = create_engine(url)
    with setup.begin() as connection:
        connection.exec_driver_sql(PG_SETUP)
        raw = connection.connection.dbapi_connection
        assert raw is not None
        cursor = raw.cursor()
        for i, make, price, bought, electric, note in car_rows():
            cursor.execute(
                "INSERT INTO cars VALUES (%s, %s, %s, %s, %s, %s, '\\x89504e47', ARRAY['a', 'b'], 1.5,"
                " '2024-01-01 10:00+00')",
                (i, make, price, bought, electric, note),
            )
        cursor.executemany("INSERT INTO owners VALUES (%s, %s)", OWNERS)
        cursor.close()
    setup.dispose()
    try:
        yield url
    finally:
        with admin.connect() as connection:
            connection.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.dispose()


@pytest.fixture(scope="module")
def pg_url() -> Iterator[str]:
    with postgres_database() as url:
        yield url


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("engines")
    return {
        "duckdb": str(make_duckdb_file(root / "shop.duckdb")),
        "files": str(make_files_folder(root / "folder")),
        "sqlite": str(make_sqlite_file(root / "shop.sqlite")),
    }


LOCAL_KINDS = ["duckdb", "files", "sqlite"]
ALL_KINDS = [*LOCAL_KINDS, "postgresql"]  # postgresql skips without CONVENER_TEST_DATABASE_URL


@pytest.fixture
def open_kind(sources: dict[str, str], request: pytest.FixtureRequest) -> Iterator[Callable[[str], DataEngine]]:
    opened: list[DataEngine] = []

    def opener(kind: str) -> DataEngine:
        location = request.getfixturevalue("pg_url") if kind == "postgresql" else sources[kind]
        engine = open_engine(location)
        opened.append(engine)
        return engine

    yield opener
    for engine in opened:
        engine.close()


# --- locations ----------------------------------------------------------------------------------------


def test_location_kinds(sources: dict[str, str], tmp_path: Path) -> None:
    assert location_kind(sources["duckdb"]) == "duckdb"
    assert location_kind(sources["sqlite"]) == "sqlite"
    assert location_kind(sources["files"]) == "files"
    assert location_kind(str(Path(sources["files"]) / "cars.csv")) == "files"
    assert location_kind(str(Path(sources["files"]) / "owners.parquet")) == "files"
    duck_as_db = tmp_path / "duck.db"
    duck_as_db.write_bytes(Path(sources["duckdb"]).read_bytes())
    assert location_kind(str(duck_as_db)) == "duckdb"
    lite_as_db = tmp_path / "lite.db"
    lite_as_db.write_bytes(Path(sources["sqlite"]).read_bytes())
    assert location_kind(str(lite_as_db)) == "sqlite"
    assert location_kind(f"sqlite:///{sources['sqlite']}") == "sqlite"
    assert location_kind("postgresql://user:secret@db.example/x") == "postgresql"
    assert location_kind("postgresql+psycopg://db.example/x") == "postgresql"


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (lambda p: str(p / "missing.duckdb"), "no file or folder 'missing.duckdb'"),
        (lambda p: str(p / "missing"), "no file or folder"),
        (lambda p: _write(p / "notes.txt", b"hello"), "unsupported data file 'notes.txt'"),
        (lambda p: _write(p / "junk.db", b"not a database at all"), "neither a DuckDB nor a SQLite"),
        (lambda p: _write(p / "empty.duckdb", b""), "neither a DuckDB nor a SQLite"),
        (lambda p: str(_folder(p / "empty_folder")), "holds no CSV"),
        (lambda p: "nosuchdb://user:hunter2@host/db", "unsupported database URL scheme"),
        (lambda p: "postgresql://user:hunter2@host:notaport/db", "malformed"),
        (lambda p: f"sqlite:///{p / 'missing.sqlite'}", "does not name an existing database file"),
    ],
)
def test_location_errors(make: Callable[[Path], str], words: str, tmp_path: Path) -> None:
    with pytest.raises(InvalidArgument) as caught:
        location_kind(make(tmp_path))
    assert words in caught.value.message
    assert "hunter2" not in caught.value.message and str(tmp_path) not in caught.value.message


def _write(path: Path, data: bytes) -> str:
    path.write_bytes(data)
    return str(path)


def _folder(path: Path) -> Path:
    (path / "sub").mkdir(parents=True)
    (path / "sub" / "readme.md").write_text("no data here")
    return path


# --- tables -------------------------------------------------------------------------------------------


def _by_name(engine: DataEngine, samples: int = 5) -> dict[str, shapes.TableInfo]:
    return {table.name: table for table in engine.tables(samples=samples)}


def test_duckdb_tables_types_and_samples(open_kind: Callable[[str], DataEngine]) -> None:
    tables = _by_name(open_kind("duckdb"))
    assert set(tables) == {"cars", "owners", "archive.old_cars", "volvos"}
    cars = tables["cars"]
    assert cars.row_count == CARS
    assert {c.name: c.type for c in cars.columns} == {
        "id": "INTEGER", "make": "STRING", "price": "FLOAT", "bought": "DATE", "electric": "BOOLEAN",
        "note": "STRING", "photo": "BYTES", "tags": "RECORD", "total": "NUMERIC", "seen": "TIMESTAMP",
    }  # fmt: skip
    make = cars.column("make")
    assert make is not None and make.samples == ("volvo", "saab", "fiat", "tesla")  # most frequent first
    assert cars.column("photo").samples == () and cars.column("tags").samples == ()  # type: ignore[union-attr]
    assert LONG_NOTE not in cars.column("note").samples  # type: ignore[union-attr]
    assert len(cars.column("id").samples) == 5  # type: ignore[union-attr]
    assert cars.column("electric").samples == ("true", "false")  # type: ignore[union-attr]
    assert {c.type for c in tables["owners"].columns} == {"INTEGER", "STRING"}
    assert all(c.samples == () for c in _by_name(open_kind("duckdb"), samples=0)["cars"].columns)


def test_files_tables_are_named_after_their_paths(open_kind: Callable[[str], DataEngine]) -> None:
    tables = _by_name(open_kind("files"))
    # Cars.tsv sorts before cars.csv, so it gets the plain name and cars.csv the suffix.
    assert set(tables) == {"cars", "cars_2", "owners", "nested_trips", "t_order"}
    cars = tables["cars_2"]
    assert {c.name: c.type for c in cars.columns} == {
        "id": "INTEGER", "make": "STRING", "price": "FLOAT", "bought": "DATE", "electric": "BOOLEAN",
        "note": "STRING",
    }  # fmt: skip
    assert cars.row_count == CARS
    assert tables["nested_trips"].column("km").type == "FLOAT"  # type: ignore[union-attr]
    assert tables["owners"].column("name").samples[:2] == ("owner 0", "owner 1")  # type: ignore[union-attr]


def test_single_file_source(sources: dict[str, str]) -> None:
    engine = open_engine(str(Path(sources["files"]) / "owners.parquet"))
    try:
        assert engine.kind == "files"
        assert [t.name for t in engine.tables()] == ["owners"]
        assert engine.execute("SELECT count(*) AS n FROM owners", row_limit=5, timeout_seconds=5).rows == [(10,)]
    finally:
        engine.close()
    with pytest.raises(FailedPrecondition, match="closed"):
        engine.execute("SELECT count(*) AS n FROM owners", row_limit=5, timeout_seconds=5)


def test_sqlite_tables_use_affinity_and_peek_at_untyped_columns(open_kind: Callable[[str], DataEngine]) -> None:
    tables = _by_name(open_kind("sqlite"))
    assert set(tables) == {"cars", "owners", "volvos"}
    assert {c.name: c.type for c in tables["cars"].columns} == {
        "id": "INTEGER", "make": "STRING", "price": "FLOAT", "bought": "DATE", "electric": "BOOLEAN",
        "note": "STRING", "photo": "BYTES", "anything": "INTEGER",
    }  # fmt: skip
    assert tables["cars"].column("photo").samples == ()  # type: ignore[union-attr]
    assert tables["volvos"].column("make").samples == ("volvo",)  # type: ignore[union-attr]


def test_postgres_tables(open_kind: Callable[[str], DataEngine]) -> None:
    engine = open_kind("postgresql")
    assert (engine.kind, engine.dialect) == ("postgresql", "postgres")
    tables = _by_name(engine)
    assert set(tables) == {"cars", "owners", "volvos", "archive.old_cars"}
    assert {c.name: c.type for c in tables["cars"].columns} == {
        "id": "INTEGER", "make": "STRING", "price": "FLOAT", "bought": "DATE", "electric": "BOOLEAN",
        "note": "STRING", "photo": "BYTES", "tags": "RECORD", "total": "NUMERIC", "seen": "TIMESTAMP",
    }  # fmt: skip
    assert tables["cars"].column("make").samples == ("volvo", "saab", "fiat", "tesla")  # type: ignore[union-attr]
    assert engine.execute("SELECT * FROM archive.old_cars", row_limit=5, timeout_seconds=5).rows == [(1, "volvo")]
    assert engine.execute("SELECT count(*) FROM public.cars", row_limit=5, timeout_seconds=5).rows == [(CARS,)]


# --- execute ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_execute_caps_rows_and_reports_truncation(kind: str, open_kind: Callable[[str], DataEngine]) -> None:
    engine = open_kind(kind)
    cars = "cars_2" if kind == "files" else "cars"
    result = engine.execute(f"SELECT id, make, price FROM {cars} ORDER BY id", row_limit=10, timeout_seconds=5)
    assert result.truncated
    assert [row[0] for row in result.rows] == list(range(10))
    assert [(c.name, c.type) for c in result.columns] == [("id", "INTEGER"), ("make", "STRING"), ("price", "FLOAT")]
    exact = engine.execute(f"SELECT id FROM {cars}", row_limit=CARS, timeout_seconds=5)
    assert (len(exact.rows), exact.truncated) == (CARS, False)
    small = engine.execute(f"SELECT id FROM {cars} ORDER BY id LIMIT 3", row_limit=10, timeout_seconds=5)
    assert (small.rows, small.truncated) == ([(0,), (1,), (2,)], False)
    empty = engine.execute(f"SELECT id FROM {cars} WHERE id < 0", row_limit=10, timeout_seconds=5)
    assert (empty.rows, empty.truncated, empty.columns[0].name) == ([], False, "id")
    none = engine.execute(f"SELECT id FROM {cars}", row_limit=0, timeout_seconds=5)
    assert (none.rows, none.truncated) == ([], True)


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_execute_fetches_at_most_the_cap_plus_one(
    kind: str, open_kind: Callable[[str], DataEngine], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cross join of 50⁴ rows comes back at once: the query is capped, and so is the fetch."""
    engine = open_kind(kind)
    cars = "cars_2" if kind == "files" else "cars"
    calls: list[tuple[str, int]] = []
    run = engine._run  # type: ignore[attr-defined]

    def spy(sql: str, *, max_rows: int, timeout_seconds: float, max_bytes: int | None = None) -> Any:
        calls.append((sql, max_rows))
        return run(sql, max_rows=max_rows, timeout_seconds=timeout_seconds, max_bytes=max_bytes)

    monkeypatch.setattr(engine, "_run", spy)
    started = time.monotonic()
    sql = f"SELECT a.id, b.id, c.id, d.id FROM {cars} a, {cars} b, {cars} c, {cars} d"
    result = engine.execute(sql, row_limit=7, timeout_seconds=5)
    assert time.monotonic() - started < 2
    assert (len(result.rows), result.truncated) == (7, True)
    assert calls == [(calls[0][0], 8)] and calls[0][0].endswith("LIMIT 8")


def test_result_values_are_python_values(open_kind: Callable[[str], DataEngine]) -> None:
    engine = open_kind("duckdb")
    result = engine.execute(
        "SELECT bought, electric, photo, tags, total, seen FROM cars WHERE id = 1", row_limit=1, timeout_seconds=5
    )
    bought, electric, photo, tags, total, seen = result.rows[0]
    assert (bought, electric, photo, tags, str(total)) == (dt.date(2024, 2, 2), False, b"png", ["a", "b"], "1.50")
    assert isinstance(seen, dt.datetime) and seen.tzinfo is not None
    assert [c.type for c in result.columns] == ["DATE", "BOOLEAN", "BYTES", "RECORD", "NUMERIC", "TIMESTAMP"]


@pytest.mark.parametrize(
    ("kind", "sql"),
    [
        ("duckdb", "SELECT count(*) FROM cars a, cars b, cars c, cars d, cars e, cars f"),
        ("files", "SELECT count(*) FROM cars_2 a, cars_2 b, cars_2 c, cars_2 d, cars_2 e, cars_2 f"),
        ("sqlite", "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT count(*) FROM n"),
        ("postgresql", "SELECT count(*) FROM cars a, cars b, cars c, cars d, cars e, cars f"),
    ],
)
def test_timeouts(kind: str, sql: str, open_kind: Callable[[str], DataEngine]) -> None:
    engine = open_kind(kind)
    started = time.monotonic()
    with pytest.raises(DeadlineExceeded) as caught:
        engine.execute(sql, row_limit=5, timeout_seconds=0.2)
    assert time.monotonic() - started < 3
    assert caught.value.message == "the query took longer than 0.2 s"
    assert engine.execute("SELECT 1 AS one", row_limit=5, timeout_seconds=5).rows == [(1,)]  # still usable


@pytest.mark.parametrize(
    ("kind", "words"),
    [
        ("duckdb", 'Binder Error: Referenced column "nope" not found'),
        ("files", 'Binder Error: Referenced column "nope" not found'),
        ("sqlite", "no such column: nope"),
        ("postgresql", 'column "nope" does not exist'),
    ],
)
def test_query_errors_are_invalid_argument_with_the_engine_message(
    kind: str, words: str, open_kind: Callable[[str], DataEngine]
) -> None:
    engine = open_kind(kind)
    with pytest.raises(InvalidArgument) as caught:
        engine.execute("SELECT nope FROM owners", row_limit=5, timeout_seconds=5)
    assert words in caught.value.message
    assert "LINE 1" not in caught.value.message


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_argument_checks(kind: str, open_kind: Callable[[str], DataEngine]) -> None:
    engine = open_kind(kind)
    with pytest.raises(InvalidArgument, match="timeout_seconds"):
        engine.execute("SELECT 1", row_limit=5, timeout_seconds=0)
    with pytest.raises(InvalidArgument, match="row_limit"):
        engine.execute("SELECT 1", row_limit=-1, timeout_seconds=1)


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_distinct_values(kind: str, open_kind: Callable[[str], DataEngine]) -> None:
    engine = open_kind(kind)
    cars = "cars_2" if kind == "files" else "cars"
    assert engine.distinct_values(cars, "MAKE") == ["fiat", "saab", "tesla", "volvo"]
    assert engine.distinct_values(cars, "make", limit=2) == ["fiat", "saab"]
    assert engine.distinct_values("owners", "id", limit=3) == ["0", "1", "2"]
    with pytest.raises(NotFound):
        engine.distinct_values("secrets", "make")
    with pytest.raises(NotFound):
        engine.distinct_values(cars, "password")


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_value_span(kind: str, open_kind: Callable[[str], DataEngine]) -> None:
    engine = open_kind(kind)
    cars = "cars_2" if kind == "files" else "cars"
    assert engine.value_span(cars, "MAKE") == ("fiat", "volvo")
    assert engine.value_span("owners", "id") == ("0", engine.distinct_values("owners", "id", limit=1000)[-1])
    with pytest.raises(NotFound):
        engine.value_span("secrets", "make")
    with pytest.raises(NotFound):
        engine.value_span(cars, "password")


# --- read-only at the engine level --------------------------------------------------------------------

LOCKED_CONNECTION_REFUSALS = [
    "FROM '/etc/passwd'",
    "SELECT * FROM '/etc/passwd'",
    "SELECT * FROM read_csv('/etc/passwd')",
    "SELECT * FROM read_text('/etc/passwd')",
    "SELECT * FROM glob('/etc/*')",
    "COPY (SELECT 1) TO '{out}'",
    "ATTACH '{out}' AS other",
    "INSTALL httpfs",
    "LOAD httpfs",
    "SET enable_external_access = true",
    "SET lock_configuration = false",
    "SET threads = 8",
    "EXPORT DATABASE '{out}'",
]


@pytest.mark.parametrize("sql", LOCKED_CONNECTION_REFUSALS)
@pytest.mark.parametrize("kind", ["duckdb", "files"])
def test_locked_duckdb_connections_refuse_file_access_and_settings(
    kind: str, sql: str, sources: dict[str, str], tmp_path: Path
) -> None:
    """Called on the raw connection, past check_select: DuckDB itself refuses."""
    if kind == "duckdb":
        connection = connect_duckdb_file(Path(sources["duckdb"]))
    else:
        connection = load_files_into_duckdb(Path(sources["files"]))
    out = tmp_path / "out"
    try:
        with pytest.raises(duckdb.Error) as caught:
            connection.execute(sql.replace("{out}", str(out))).fetchall()
        assert not out.exists()
        assert "root:" not in str(caught.value)
    finally:
        connection.close()


def test_views_over_files_stop_working_once_external_access_is_off(sources: dict[str, str]) -> None:
    """Why the files engine loads tables instead of registering views (DuckDB 2.0 behaviour)."""
    connection = duckdb.connect(":memory:")
    try:
        path = str(Path(sources["files"]) / "cars.csv").replace("'", "''")
        connection.execute(f"CREATE VIEW cars AS SELECT * FROM read_csv('{path}')")
        assert connection.execute("SELECT count(*) FROM cars").fetchall() == [(CARS,)]
        connection.execute("SET enable_external_access = false")
        with pytest.raises(duckdb.PermissionException):
            connection.execute("SELECT count(*) FROM cars").fetchall()
    finally:
        connection.close()


def test_unreachable_database_is_unavailable_without_the_password() -> None:
    with pytest.raises(Unavailable) as caught:
        open_engine("postgresql://convener:hunter2@127.0.0.1:1/nowhere?connect_timeout=2")
    assert "hunter2" not in str(caught.value) and "127.0.0.1" not in str(caught.value)


def test_duckdb_file_is_opened_read_only(sources: dict[str, str]) -> None:
    connection = connect_duckdb_file(Path(sources["duckdb"]))
    try:
        for sql in ("CREATE TABLE evil (x INT)", "DELETE FROM cars", "INSERT INTO owners VALUES (99, 'x')"):
            with pytest.raises(duckdb.Error, match="read-only"):
                connection.execute(sql)
    finally:
        connection.close()


PASSTHROUGH_WRITES = {
    "duckdb": ["DELETE FROM cars", "CREATE TABLE evil (x INT)", "COPY cars TO '{out}'", "SELECT 1; DROP TABLE cars"],
    "files": ["COPY cars TO '{out}'", "ATTACH '{out}' AS evil", "SELECT * FROM read_csv('/etc/passwd')"],
    "sqlite": [
        "DELETE FROM cars", "CREATE TABLE evil (x INT)", "ATTACH DATABASE '{out}' AS evil", "PRAGMA query_only = OFF",
        "SELECT * FROM sqlite_master", "SELECT * FROM pragma_table_info('cars')", "SELECT 1; DROP TABLE cars",
        "VACUUM INTO '{out}'",
    ],
    "postgresql": [
        "DELETE FROM cars", "CREATE TABLE evil (x INT)", "SELECT nextval('evil_seq')", "SET TRANSACTION READ WRITE",
        "SELECT 1; DELETE FROM cars", "COPY cars FROM STDIN", "SELECT * INTO evil FROM cars",
        "SELECT set_config('transaction_read_only', 'off', true)",
    ],
}  # fmt: skip


@pytest.mark.parametrize(
    ("kind", "sql"),
    [(kind, sql) for kind, statements in PASSTHROUGH_WRITES.items() for sql in statements],
)
def test_engines_refuse_writes_even_without_check_select(
    kind: str, sql: str, open_kind: Callable[[str], DataEngine], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """With check_select replaced by a pass-through, the engine's own settings still refuse."""
    engine = open_kind(kind)
    monkeypatch.setattr(engines, "check_select", lambda sql, dialect, tables, limit: sql)
    out = tmp_path / "out"
    with pytest.raises(ApiError) as caught:
        engine.execute(sql.replace("{out}", str(out)), row_limit=5, timeout_seconds=5)
    assert isinstance(caught.value, (InvalidArgument, PermissionDenied))
    assert not out.exists()
    assert str(tmp_path) not in caught.value.message


def test_files_engine_refuses_create_and_insert_and_rolls_back_writes(
    open_kind: Callable[[str], DataEngine], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The in-memory database is writable by nature: check_select refuses writes, and even a write that got
    past it is rolled back with the query's transaction."""
    engine = open_kind("files")
    for sql in ("CREATE TABLE evil AS SELECT 1 AS x", "INSERT INTO owners VALUES (99, 'evil')"):
        with pytest.raises(InvalidArgument, match="only one SELECT"):
            engine.execute(sql, row_limit=5, timeout_seconds=5)
    monkeypatch.setattr(engines, "check_select", lambda sql, dialect, tables, limit: sql)
    engine.execute("INSERT INTO owners VALUES (99, 'evil')", row_limit=5, timeout_seconds=5)
    engine.execute("CREATE TABLE evil AS SELECT 1 AS x", row_limit=5, timeout_seconds=5)
    assert "evil" not in {t.name for t in engine.tables(samples=0)}
    assert engine.execute("SELECT count(*) FROM owners", row_limit=5, timeout_seconds=5).rows == [(10,)]


# --- helpers ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("BIGINT", "INTEGER"), ("int8", "INTEGER"), ("HUGEINT", "INTEGER"), ("UBIGINT", "INTEGER"),
        ("SMALLINT", "INTEGER"), ("integer", "INTEGER"), ("serial", "INTEGER"), ("DOUBLE", "FLOAT"),
        ("double precision", "FLOAT"), ("REAL", "FLOAT"), ("float8", "FLOAT"), ("DECIMAL(10,2)", "NUMERIC"),
        ("numeric", "NUMERIC"), ("money", "NUMERIC"), ("VARCHAR", "STRING"), ("character varying(20)", "STRING"),
        ("TEXT", "STRING"), ("bpchar", "STRING"), ("UUID", "STRING"), ("ENUM('a', 'b')", "STRING"),
        ("INTERVAL", "STRING"), ("POINT", "STRING"), ("BOOLEAN", "BOOLEAN"), ("bool", "BOOLEAN"), ("DATE", "DATE"),
        ("TIMESTAMP", "TIMESTAMP"), ("TIMESTAMP WITH TIME ZONE", "TIMESTAMP"), ("timestamptz", "TIMESTAMP"),
        ("TIMESTAMP_NS", "TIMESTAMP"), ("DATETIME", "DATETIME"), ("TIME", "TIME"), ("timetz", "TIME"),
        ("BLOB", "BYTES"), ("bytea", "BYTES"), ("JSON", "JSON"), ("jsonb", "JSON"), ("INTEGER[]", "RECORD"),
        ("_int4", "RECORD"), ("STRUCT(x INTEGER)", "RECORD"), ("MAP(VARCHAR, INTEGER)", "RECORD"),
        ("VARCHAR[3]", "RECORD"), ("something odd", "STRING"),
    ],
)  # fmt: skip
def test_normalise_type(raw: str, expected: str) -> None:
    assert normalise_type(raw) == expected


@pytest.mark.parametrize(
    ("declared", "expected"),
    [
        ("INTEGER", "INTEGER"), ("UNSIGNED BIG INT", "INTEGER"), ("VARCHAR(20)", "STRING"), ("CLOB", "STRING"),
        ("BLOB", "BYTES"), ("DOUBLE PRECISION", "FLOAT"), ("FLOAT", "FLOAT"), ("DECIMAL(10,5)", "NUMERIC"),
        ("BOOLEAN", "BOOLEAN"), ("DATE", "DATE"), ("DATETIME", "DATETIME"), ("TIMESTAMP", "TIMESTAMP"),
        ("JSON", "JSON"), ("WHATEVER", "NUMERIC"), ("", None),
    ],
)  # fmt: skip
def test_sqlite_declared_type(declared: str, expected: str | None) -> None:
    assert sqlite_declared_type(declared) == expected


def test_clean_message_masks_paths_and_urls_and_drops_the_query_echo() -> None:
    message = (
        'IO Error: Cannot open file "/home/alice/secret/data.csv": No such file\n'
        "while reading postgresql://bob:hunter2@db.internal:5432/prod and C:\\Users\\bob\\x.csv\n\n"
        "LINE 1: SELECT * FROM read_csv('/home/alice/secret/data.csv')\n                      ^"
    )
    cleaned = clean_message(message)
    assert cleaned == (
        'IO Error: Cannot open file "<path>": No such file while reading <url> and <path>'
    )
    assert clean_message("Conversion Error: Could not convert string 'a/b' to INT32") == (
        "Conversion Error: Could not convert string 'a/b' to INT32"
    )
    assert len(clean_message("x" * 1000)) == 400


def test_engine_kinds(open_kind: Callable[[str], DataEngine]) -> None:
    assert [(open_kind(k).kind, open_kind(k).dialect) for k in LOCAL_KINDS] == [
        ("duckdb", "duckdb"), ("files", "duckdb"), ("sqlite", "sqlite")
    ]  # fmt: skip
    assert isinstance(open_kind("duckdb"), DuckDBEngine)


def test_duckdb_comments_are_the_tables_and_columns_descriptions(tmp_path: Path) -> None:
    path = tmp_path / "described.duckdb"
    with duckdb.connect(str(path)) as connection:
        connection.execute("CREATE TABLE cars (mpg DOUBLE, origin VARCHAR)")
        connection.execute("COMMENT ON TABLE cars IS 'Cars of the 1970s'")
        connection.execute("COMMENT ON COLUMN cars.mpg IS 'Miles per gallon'")
    engine = open_engine(str(path))
    try:
        (table,) = engine.tables()
        assert table.description == "Cars of the 1970s"
        assert [(c.name, c.description) for c in table.columns] == [("mpg", "Miles per gallon"), ("origin", None)]
    finally:
        engine.close()


# --- what an engine remembers -------------------------------------------------------------------------------


def test_a_query_that_passed_its_checks_is_refused_when_the_tables_allowed_change(
        open_kind: Callable[[str], DataEngine]) -> None:
    engine = open_kind("sqlite")
    sql = "SELECT make FROM cars ORDER BY id"

    first = engine.execute(sql, row_limit=2, timeout_seconds=10)
    again = engine.execute(sql, row_limit=2, timeout_seconds=10)
    with pytest.raises(InvalidArgument):
        engine.execute(sql, row_limit=2, timeout_seconds=10, only=["owners"])
    for _ in range(2):  # a refusal is not remembered as a pass, nor a pass as a refusal
        with pytest.raises(InvalidArgument):
            engine.execute("SELECT make FROM cars; DROP TABLE cars", row_limit=2, timeout_seconds=10)

    assert first.rows == again.rows == [(MAKES[0],), (MAKES[1],)]
    assert engine.execute(sql, row_limit=1, timeout_seconds=10).rows == [(MAKES[0],)]  # the limit is its own


def test_distinct_values_are_read_again_after_their_time(open_kind: Callable[[str], DataEngine],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    engine = open_kind("sqlite")
    reads: list[str] = []
    real = engine._read_distinct  # type: ignore[attr-defined]
    monkeypatch.setattr(engine, "_read_distinct", lambda *args: reads.append(args[1]) or real(*args))

    first = engine.distinct_values("cars", "make")
    assert engine.distinct_values("CARS", "Make") == first == sorted(set(MAKES))
    assert engine.distinct_values("cars", "make", 2) == first[:2]
    assert reads == ["make", "make"]
    monkeypatch.setattr(engines, "DISTINCT_TTL_SECONDS", 0.0)
    time.sleep(0.01)
    engine.distinct_values("cars", "make")
    assert reads == ["make", "make", "make"]


def test_query_threads_are_kept_and_one_still_stopping_gets_no_other_query() -> None:
    used: list[int] = []
    for _ in range(5):
        run_within(5, lambda watch: used.append(threading.get_ident()))
        time.sleep(0.02)  # the thread is back among the idle ones
    stuck_on: list[int] = []
    release = threading.Event()

    def stuck(watch: Watch) -> None:
        stuck_on.append(threading.get_ident())
        release.wait(10)  # ignores its interrupt, as an engine busy making one huge value does

    try:
        with pytest.raises(DeadlineExceeded):
            run_within(0.05, stuck)
        after = run_within(5, lambda watch: threading.get_ident())
    finally:
        release.set()

    assert len(set(used)) == 1
    assert after != stuck_on[0]
