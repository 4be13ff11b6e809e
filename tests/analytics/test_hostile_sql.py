"""Hostile SQL against real engines: every input is refused with an API error or returns harmless rows,
and afterwards the data, the source files and the folder around them are exactly as they were.

Each case runs against a DuckDB file, a CSV/Parquet folder, a SQLite file and, when
CONVENER_TEST_DATABASE_URL is set, a PostgreSQL database (connected as a superuser, so only Convener's own
checks stand between these queries and the server's files). ``{secret}`` is a file whose contents must never
come back; ``{out}`` is a path nothing may create.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine
from sqlalchemy.engine import Engine

from convener.analytics.engines import DataEngine, open_engine
from convener.api.errors import ApiError, InvalidArgument, PermissionDenied
from tests.analytics.test_engines import (
    make_duckdb_file,
    make_files_folder,
    make_sqlite_file,
    postgres_database,
)

MARKER = f"TOPSECRET-{uuid.uuid4().hex}"

HOSTILE: list[tuple[str, str]] = [
    # Data-modifying CTEs, SELECT … INTO, stacked statements.
    ("cte_delete", "WITH d AS (DELETE FROM cars RETURNING *) SELECT * FROM d"),
    ("cte_insert", "WITH i AS (INSERT INTO owners (id, name) VALUES (99, 'x') RETURNING id) SELECT * FROM i"),
    ("cte_update", "WITH u AS (UPDATE cars SET price = 0 RETURNING id) SELECT count(*) FROM u"),
    ("cte_delete_in_subquery", "SELECT * FROM cars WHERE id IN (WITH d AS (DELETE FROM cars RETURNING id) SELECT id FROM d)"),
    ("select_into", "SELECT * INTO stolen FROM cars"),
    ("select_into_temp", "SELECT * INTO TEMP stolen FROM cars"),
    ("stacked_drop", "SELECT 1; DROP TABLE cars"),
    ("stacked_no_space", "SELECT 1;DELETE FROM cars"),
    ("semicolon_in_string", "SELECT ';' AS x; DROP TABLE cars"),
    ("semicolon_in_block_comment", "SELECT 1 /* ; */ ; DELETE FROM cars"),
    ("drop_after_line_comment", "SELECT 1 -- ; DROP TABLE cars"),
    ("delete_after_comment_newline", "SELECT 1 --\nDELETE FROM cars"),
    ("delete_after_comment_cr", "SELECT 1 --\rDELETE FROM cars"),
    ("backslash_quote", "SELECT 'a\\' ; DROP TABLE cars; --'"),
    ("dollar_quote", "SELECT $$a$$; DROP TABLE cars"),
    # Files, other databases, extensions, settings.
    ("copy_to", "COPY cars TO '{out}'"),
    ("copy_query_to", "COPY (SELECT * FROM cars) TO '{out}' (FORMAT csv)"),
    ("copy_from", "COPY cars FROM '{secret}'"),
    ("copy_to_program", "COPY (SELECT 1) TO PROGRAM 'touch {out}'"),
    ("attach", "ATTACH '{out}' AS evil"),
    ("attach_database", "ATTACH DATABASE '{out}' AS evil"),
    ("detach", "DETACH evil"),
    ("install", "INSTALL httpfs"),
    ("load", "LOAD httpfs"),
    ("pragma", "PRAGMA writable_schema = ON"),
    ("pragma_query_only", "PRAGMA query_only = OFF"),
    ("set", "SET threads = 64"),
    ("set_external_access", "SET enable_external_access = true"),
    ("set_variable", "SET VARIABLE x = 1"),
    ("reset", "RESET ALL"),
    ("call", "CALL pragma_version()"),
    ("export_database", "EXPORT DATABASE '{out}'"),
    ("vacuum", "VACUUM"),
    ("vacuum_into", "VACUUM INTO '{out}'"),
    ("checkpoint", "CHECKPOINT"),
    # DDL and DML.
    ("create_table", "CREATE TABLE evil (x INT)"),
    ("create_table_as", "CREATE TABLE evil AS SELECT * FROM cars"),
    ("create_view", "CREATE VIEW evil AS SELECT 1"),
    ("create_macro", "CREATE MACRO evil(x) AS x"),
    ("create_function", "CREATE FUNCTION evil() RETURNS int AS 'SELECT 1' LANGUAGE sql"),
    ("drop_table", "DROP TABLE cars"),
    ("alter_table", "ALTER TABLE cars ADD COLUMN evil INT"),
    ("truncate", "TRUNCATE cars"),
    ("insert", "INSERT INTO owners VALUES (99, 'evil')"),
    ("update", "UPDATE cars SET price = 0"),
    ("delete", "DELETE FROM cars"),
    ("merge", "MERGE INTO cars USING owners ON cars.id = owners.id WHEN MATCHED THEN DELETE"),
    ("grant", "GRANT ALL ON cars TO PUBLIC"),
    ("do_block", "DO $$ BEGIN DELETE FROM cars; END $$"),
    ("prepare", "PREPARE p AS DELETE FROM cars"),
    ("explain_analyze", "EXPLAIN ANALYZE DELETE FROM cars"),
    # Reading files through functions and replacement scans.
    ("read_csv_passwd", "SELECT * FROM read_csv('/etc/passwd')"),
    ("read_csv_auto_secret", "SELECT * FROM read_csv_auto('{secret}')"),
    ("read_text", "SELECT * FROM read_text('{secret}')"),
    ("read_blob", "SELECT content FROM read_blob('{secret}')"),
    ("glob", "SELECT * FROM glob('/etc/*')"),
    ("read_parquet", "SELECT * FROM read_parquet('{secret}')"),
    ("replacement_scan", "FROM '{secret}'"),
    ("replacement_scan_passwd", "SELECT * FROM '/etc/passwd'"),
    ("replacement_scan_quoted", 'SELECT * FROM "{secret}"'),
    ("read_csv_in_scalar_subquery", "SELECT (SELECT count(*) FROM read_csv('{secret}')) AS n"),
    ("read_csv_lateral", "SELECT * FROM cars, LATERAL read_csv('{secret}') AS r"),
    ("read_csv_in_union", "SELECT make FROM cars UNION SELECT * FROM read_text('{secret}')"),
    ("sqlite_readfile", "SELECT readfile('{secret}')"),
    ("sqlite_writefile", "SELECT writefile('{out}', 'x')"),
    ("load_extension", "SELECT load_extension('/tmp/evil.so')"),
    ("fts3_tokenizer", "SELECT fts3_tokenizer('simple')"),
    ("pg_read_file", "SELECT pg_read_file('{secret}')"),
    ("pg_read_file_qualified", "SELECT pg_catalog.pg_read_file('/etc/passwd')"),
    ("pg_read_binary_file_quoted", "SELECT \"pg_read_binary_file\"('{secret}')"),
    ("pg_ls_dir", "SELECT * FROM pg_ls_dir('.')"),
    ("pg_ls_dir_scalar", "SELECT pg_ls_dir('/')"),
    ("lo_import", "SELECT lo_import('{secret}')"),
    ("lo_export", "SELECT lo_export(1, '{out}')"),
    ("dblink", "SELECT * FROM dblink('dbname=test', 'DELETE FROM cars') AS t(x text)"),
    ("query_to_xml", "SELECT query_to_xml('DELETE FROM cars RETURNING 1', true, true, '')"),
    ("duckdb_query_function", "SELECT * FROM query('DELETE FROM cars')"),
    ("getenv", "SELECT getenv('HOME')"),
    # Settings, transactions, sequences, locks.
    ("set_config", "SELECT set_config('default_transaction_read_only', 'off', false)"),
    ("current_setting", "SELECT current_setting('data_directory')"),
    ("set_transaction_read_write", "SET TRANSACTION READ WRITE"),
    ("begin_block", "BEGIN; DELETE FROM cars; COMMIT"),
    ("commit", "COMMIT"),
    ("nextval", "SELECT nextval('evil_seq')"),
    ("pg_sleep", "SELECT pg_sleep(30)"),
    ("pg_terminate_backend", "SELECT pg_terminate_backend(pg_backend_pid())"),
    ("for_update", "SELECT * FROM cars FOR UPDATE"),
    ("for_share", "SELECT * FROM cars FOR SHARE"),
    ("lock_table", "LOCK TABLE cars"),
    # Tables and catalogs outside the source.
    ("unknown_table", "SELECT * FROM not_a_table"),
    ("other_schema", "SELECT * FROM evil_schema.cars"),
    ("information_schema", "SELECT * FROM information_schema.tables"),
    ("pg_catalog", "SELECT * FROM pg_catalog.pg_class"),
    ("pg_shadow", "SELECT usename, passwd FROM pg_shadow"),
    ("sqlite_master", "SELECT * FROM sqlite_master"),
    ("sqlite_schema_in_subquery", "SELECT * FROM cars WHERE make IN (SELECT sql FROM sqlite_schema)"),
    ("duckdb_settings", "SELECT * FROM duckdb_settings()"),
    ("pragma_table_function", "SELECT * FROM pragma_table_info('cars')"),
    ("show_tables", "SHOW TABLES"),
    ("describe", "DESCRIBE cars"),
    # Obfuscation and oversized input.
    ("comment_inside_keyword", "DEL/**/ETE FROM cars"),
    ("mixed_case", "dElEtE fRoM cars"),
    ("leading_comment", "/* harmless */ DELETE FROM cars"),
    ("leading_whitespace", "\n\t  \r\n DROP TABLE cars"),
    ("fullwidth_letters", "ＤＥＬＥＴＥ FROM cars"),
    ("zero_width_space", "DEL\u200bETE FROM cars"),
    ("nul_byte", "SELECT 1\x00; DROP TABLE cars"),
    ("one_megabyte", "SELECT " + "1 + " * 262_144 + "1"),
    ("deep_parentheses", "SELECT " + "(" * 5000 + "1" + ")" * 5000),
    ("deep_subqueries", "SELECT * FROM " + "(SELECT * FROM " * 2000 + "cars" + ") AS s" * 2000),
    ("unbalanced_quote", "SELECT 'unterminated FROM cars"),
]


@dataclass
class Source:
    kind: str
    engine: DataEngine
    folder: Path
    secret: Path
    fingerprint: Callable[[], Any]


@pytest.fixture(scope="module", params=["duckdb", "files", "sqlite", "postgresql"])
def source(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Source]:
    folder = tmp_path_factory.mktemp(f"hostile_{request.param}")
    secret = folder / "secret.txt"
    secret.write_text(f"{MARKER}\n{MARKER},{MARKER}\n")
    if request.param == "postgresql":
        with postgres_database() as url:
            own = create_engine(url)
            try:
                yield from _opened(request.param, url, folder, secret, lambda: _postgres_fingerprint(own))
            finally:
                own.dispose()
        return
    location = {
        "duckdb": lambda: make_duckdb_file(folder / "shop.duckdb"),
        "files": lambda: make_files_folder(folder / "shop", extras=False),
        "sqlite": lambda: make_sqlite_file(folder / "shop.sqlite"),
    }[request.param]()
    yield from _opened(request.param, str(location), folder, secret, lambda: None)


def _opened(kind: str, location: str, folder: Path, secret: Path, database: Callable[[], Any]) -> Iterator[Source]:
    """The engine under attack; the fingerprint of PostgreSQL comes from a connection of our own instead."""
    engine = open_engine(location)

    def fingerprint() -> Any:
        seen_by_engine = None if kind == "postgresql" else _engine_fingerprint(engine)
        return _files_fingerprint(folder), seen_by_engine, database()

    try:
        yield Source(kind, engine, folder, secret, fingerprint)
    finally:
        engine.close()


def _files_fingerprint(folder: Path) -> list[tuple[str, int, str]]:
    """Every file under the folder, with its modification time and contents: nothing new, nothing changed."""
    return [
        (str(path.relative_to(folder)), path.stat().st_mtime_ns, hashlib.sha256(path.read_bytes()).hexdigest())
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    ]


def _engine_fingerprint(engine: DataEngine) -> list[tuple[str, tuple[str, ...], int, str]]:
    """Each table's columns, row count and a checksum of its rows, as the engine sees them."""
    result = []
    for table in engine.tables(samples=0):
        rows = engine.execute(f"SELECT * FROM {table.name}", row_limit=10_000, timeout_seconds=10).rows
        digest = hashlib.sha256(repr(sorted(rows, key=repr)).encode()).hexdigest()
        result.append((table.name, tuple(c.name for c in table.columns), len(rows), digest))
    return result


def _postgres_fingerprint(engine: Engine) -> list[Any]:
    """The same, through a connection of our own: tables in every schema, their rows, the sequence and the
    large objects."""
    with engine.connect() as connection:
        tables = connection.exec_driver_sql(
            "SELECT table_schema, table_name FROM information_schema.tables "
            "WHERE table_schema NOT IN ('pg_catalog', 'information_schema') ORDER BY 1, 2"
        ).fetchall()
        result: list[Any] = [tables]
        for schema, name in tables:
            result.append(connection.exec_driver_sql(
                f'SELECT count(*), md5(coalesce(string_agg(t::text, \',\' ORDER BY t::text), \'\')) '
                f'FROM "{schema}"."{name}" AS t'
            ).fetchall())  # fmt: skip
        result.append(connection.exec_driver_sql("SELECT last_value, is_called FROM evil_seq").fetchall())
        result.append(connection.exec_driver_sql("SELECT count(*) FROM pg_largeobject_metadata").fetchall())
        return result


@pytest.fixture(scope="module")
def baseline(source: Source) -> Any:
    return source.fingerprint()


def test_there_are_enough_distinct_hostile_inputs() -> None:
    assert len(HOSTILE) >= 55
    assert len({name for name, _ in HOSTILE}) == len({sql for _, sql in HOSTILE}) == len(HOSTILE)


@pytest.mark.parametrize("sql", [sql for _, sql in HOSTILE], ids=[name for name, _ in HOSTILE])
def test_hostile_sql_changes_and_leaks_nothing(sql: str, source: Source, baseline: Any) -> None:
    out = source.folder / "out"
    text = sql.replace("{secret}", str(source.secret)).replace("{out}", str(out))
    try:
        result = source.engine.execute(text, row_limit=20, timeout_seconds=5)
    except ApiError as error:
        assert isinstance(error, (InvalidArgument, PermissionDenied)), error
        assert MARKER not in error.message and "root:" not in error.message
        assert str(source.folder) not in error.message
    else:
        returned = repr(result.rows)
        assert MARKER not in returned and "root:" not in returned
    assert not out.exists()
    assert source.fingerprint() == baseline
