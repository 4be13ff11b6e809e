"""check_select: what it lets through (and how it caps rows), and what it refuses, with which message."""

from __future__ import annotations

import pytest
import sqlglot

from convener.analytics.sql_safety import MAX_SQL_CHARS, MAX_SQL_NESTING, check_select
from convener.api.errors import InvalidArgument

TABLES = ["cars", "owners", "sales.orders"]


def accepted(sql: str, dialect: str = "duckdb", row_limit: int = 100, tables: list[str] | None = TABLES) -> str:
    return check_select(sql, dialect, tables, row_limit)


def refused(sql: str, dialect: str = "duckdb", tables: list[str] | None = TABLES) -> str:
    with pytest.raises(InvalidArgument) as caught:
        check_select(sql, dialect, tables, 100)
    return caught.value.message


def limit_of(sql: str, dialect: str = "duckdb") -> int:
    """The outer query's literal row limit."""
    tree = sqlglot.parse_one(sql, read=dialect)
    limit = tree.args["limit"]
    count = limit.args["count"] if isinstance(limit, sqlglot.exp.Fetch) else limit.args["expression"]
    return int(count.this)


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM cars",
        "select make, avg(price) from cars group by make order by 2 desc",
        "WITH expensive AS (SELECT * FROM cars WHERE price > 10) SELECT make FROM expensive",
        "WITH a AS (SELECT id FROM cars), b AS (SELECT id FROM a) SELECT * FROM b",
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5) SELECT * FROM n",
        "SELECT id FROM cars UNION SELECT id FROM owners",
        "SELECT id FROM cars INTERSECT SELECT id FROM owners",
        "SELECT id FROM cars EXCEPT SELECT id FROM owners",
        "SELECT * FROM cars WHERE id IN (SELECT id FROM owners WHERE name LIKE 'A%')",
        "SELECT c.make, o.name FROM cars AS c JOIN owners AS o ON o.id = c.id",
        "SELECT make, row_number() OVER (PARTITION BY make ORDER BY price) AS rank FROM cars",
        "SELECT * FROM (SELECT make, count(*) AS n FROM cars GROUP BY make) AS counts WHERE n > 1",
        "SELECT EXISTS (SELECT 1 FROM owners) AS any_owner",
        "SELECT * FROM main.cars",
        "SELECT * FROM sales.orders",
        "SELECT * FROM CARS",
        "SELECT * FROM cars, unnest([1, 2]) AS u(x)",
        "SELECT * FROM (VALUES (1, 'a'), (2, 'b')) AS v(id, label)",
        "SELECT 'DELETE FROM cars; DROP TABLE owners' AS text_only",
        "SELECT 1 -- a comment mentioning DROP TABLE cars",
        "(SELECT id FROM cars)",
        "SELECT id FROM cars;",
    ],
)
def test_accepts_reads_of_the_allowed_tables(sql: str) -> None:
    rendered = accepted(sql)
    assert limit_of(rendered) <= 101
    assert check_select(rendered, "duckdb", TABLES, 100)  # the rendering is itself acceptable


@pytest.mark.parametrize(
    ("sql", "dialect"),
    [
        ("SELECT * FROM cars WHERE make ILIKE '%a%' ORDER BY price DESC NULLS LAST", "postgres"),
        ("SELECT date_trunc('month', bought) AS month, sum(price) FROM cars GROUP BY 1", "postgres"),
        ("SELECT * FROM public.cars", "postgres"),
        ("SELECT strftime('%Y', bought), count(*) FROM cars GROUP BY 1", "sqlite"),
        ("SELECT * FROM cars LIMIT 5 OFFSET 10", "sqlite"),
        ("SELECT TOP 10 * FROM cars", "tsql"),
        ("SELECT * FROM cars", "mysql"),
    ],
)
def test_accepts_other_dialects(sql: str, dialect: str) -> None:
    assert accepted(sql, dialect)


def test_adds_a_row_cap_of_limit_plus_one() -> None:
    assert accepted("SELECT * FROM cars", row_limit=10) == "SELECT * FROM cars LIMIT 11"
    assert limit_of(accepted("SELECT id FROM cars UNION ALL SELECT id FROM owners", row_limit=10)) == 11
    with_cte = accepted("WITH x AS (SELECT * FROM cars) SELECT * FROM x", row_limit=0)
    assert limit_of(with_cte) == 1


def test_keeps_a_smaller_limit_and_lowers_a_larger_one() -> None:
    assert limit_of(accepted("SELECT * FROM cars LIMIT 3", row_limit=10)) == 3
    assert limit_of(accepted("SELECT * FROM cars LIMIT 500", row_limit=10)) == 11
    assert accepted("SELECT * FROM cars LIMIT 500 OFFSET 5", row_limit=10).endswith("LIMIT 11 OFFSET 5")
    fetch = accepted("SELECT * FROM cars FETCH FIRST 500 ROWS ONLY", "postgres", row_limit=10)
    assert "FETCH FIRST 11 ROWS ONLY" in fetch
    assert limit_of(accepted("SELECT * FROM cars ORDER BY 1 LIMIT 2", "sqlite", row_limit=10), "sqlite") == 2
    assert accepted("SELECT TOP 500 * FROM cars", "tsql", row_limit=10).startswith("SELECT TOP 11 ")


@pytest.mark.parametrize(
    ("sql", "dialect"),
    [
        ("SELECT * FROM cars LIMIT ALL", "postgres"),
        ("SELECT * FROM cars LIMIT (SELECT count(*) FROM owners)", "postgres"),
        ("SELECT * FROM cars LIMIT -1", "sqlite"),
        ("SELECT * FROM cars LIMIT 10 PERCENT", "duckdb"),
    ],
)
def test_wraps_limits_it_cannot_lower(sql: str, dialect: str) -> None:
    rendered = accepted(sql, dialect, row_limit=10)
    assert rendered.startswith("SELECT * FROM (")
    assert rendered.endswith(") AS _convener_capped LIMIT 11")


def test_default_schema_is_optional_on_either_side() -> None:
    assert accepted("SELECT * FROM main.cars")
    assert accepted("SELECT * FROM cars", "postgres", tables=["public.cars"])
    assert accepted("SELECT * FROM public.cars", "postgres", tables=["cars"])
    assert "orders is not part" in refused("SELECT * FROM orders")  # sales.orders needs its schema
    assert "other.cars is not part" in refused("SELECT * FROM other.cars")
    assert "not part" in refused("SELECT * FROM public.cars")  # DuckDB's default schema is main


def test_cte_names_shadow_tables_only_where_every_engine_agrees() -> None:
    # The CTE's own name inside a non-recursive CTE means the real table: secret is not allowed.
    assert "secret" in refused("WITH secret AS (SELECT * FROM secret) SELECT * FROM secret")
    # A CTE defined inside a subquery does not cover a table of the same name outside it.
    assert "secret" in refused("SELECT * FROM (WITH secret AS (SELECT 1) SELECT * FROM secret) AS a, secret")
    # A later CTE is not visible in an earlier one.
    assert "later" in refused("WITH a AS (SELECT * FROM later), later AS (SELECT 1) SELECT * FROM a")
    assert accepted("WITH secret AS (SELECT * FROM cars) SELECT * FROM secret")


@pytest.mark.parametrize(
    ("sql", "dialect", "words"),
    [
        ("WITH d AS (DELETE FROM cars RETURNING *) SELECT * FROM d", "postgres", "DELETE inside a WITH clause"),
        ("WITH u AS (UPDATE cars SET price = 0 RETURNING id) SELECT * FROM u", "postgres", "UPDATE"),
        ("WITH i AS (INSERT INTO cars (id) VALUES (1) RETURNING id) SELECT * FROM i", "postgres", "INSERT"),
        ("SELECT * INTO stolen FROM cars", "postgres", "SELECT … INTO"),
        ("SELECT 1; DROP TABLE cars", "duckdb", "found 2 statements: SELECT, DROP TABLE"),
        ("BEGIN; DELETE FROM cars; COMMIT", "postgres", "found 3 statements: BEGIN, DELETE, COMMIT"),
        ("DELETE FROM cars", "duckdb", "found DELETE"),
        ("UPDATE cars SET price = 0", "sqlite", "found UPDATE"),
        ("INSERT INTO cars VALUES (1)", "sqlite", "found INSERT"),
        ("MERGE INTO cars USING owners ON cars.id = owners.id WHEN MATCHED THEN DELETE", "postgres", "MERGE"),
        ("CREATE TABLE evil AS SELECT * FROM cars", "duckdb", "CREATE TABLE"),
        ("DROP VIEW cars", "duckdb", "DROP VIEW"),
        ("ALTER TABLE cars ADD COLUMN evil INT", "postgres", "ALTER"),
        ("TRUNCATE cars", "postgres", "TRUNCATE"),
        ("COPY cars TO '/tmp/out.csv'", "duckdb", "COPY"),
        ("ATTACH '/tmp/x.db' AS x", "duckdb", "ATTACH"),
        ("INSTALL httpfs", "duckdb", "INSTALL"),
        ("LOAD httpfs", "duckdb", "LOAD"),
        ("PRAGMA query_only = OFF", "sqlite", "PRAGMA"),
        ("SET TRANSACTION READ WRITE", "postgres", "SET"),
        ("CALL pragma_version()", "duckdb", "CALL"),
        ("VACUUM", "sqlite", "VACUUM"),
        ("CHECKPOINT", "duckdb", "CHECKPOINT"),
        ("SHOW TABLES", "duckdb", "SHOW"),
        ("SELECT * FROM cars FOR UPDATE", "postgres", "FOR UPDATE"),
        ("EXPLAIN ANALYZE DELETE FROM cars", "postgres", "EXPLAIN"),
        ("-- hello\nVALUES (1)", "postgres", "starting with VALUES"),
    ],
)
def test_refuses_anything_but_one_select(sql: str, dialect: str, words: str) -> None:
    message = refused(sql, dialect)
    assert message.startswith("only one SELECT statement is allowed")
    assert words in message


@pytest.mark.parametrize(
    ("sql", "dialect", "words"),
    [
        ("SELECT * FROM read_csv('/etc/passwd')", "duckdb", "read_csv() in FROM"),
        ("SELECT * FROM cars, glob('/etc/*') AS g", "duckdb", "glob() in FROM"),
        ("SELECT * FROM duckdb_settings()", "duckdb", "duckdb_settings() in FROM"),
        ("SELECT * FROM range(10)", "duckdb", "in FROM"),
        ("SELECT * FROM generate_series(1, 3)", "postgres", "in FROM"),
        ("SELECT * FROM ROWS FROM (pg_ls_dir('.'))", "postgres", "ROWS FROM"),
        ("SELECT * FROM cars JOIN LATERAL read_parquet('x.parquet') AS p ON true", "duckdb", "in FROM"),
        ("SELECT * FROM pragma_table_info('cars')", "sqlite", "pragma_table_info() in FROM"),
        ("SELECT (SELECT count(*) FROM read_text('/etc/passwd')) AS n", "duckdb", "in FROM"),
        ("SELECT pg_read_file('/etc/passwd')", "postgres", "pg_read_file()"),
        ("SELECT pg_catalog.pg_read_binary_file('/etc/passwd')", "postgres", "pg_read_binary_file()"),
        ('SELECT "pg_ls_dir"(\'.\')', "postgres", "pg_ls_dir()"),
        ("SELECT lo_import('/etc/passwd')", "postgres", "lo_import()"),
        ("SELECT set_config('default_transaction_read_only', 'off', false)", "postgres", "set_config()"),
        ("SELECT current_setting('data_directory')", "postgres", "current_setting()"),
        ("SELECT pg_sleep(10)", "postgres", "pg_sleep()"),
        ("SELECT query_to_xml('DELETE FROM cars', true, true, '')", "postgres", "query_to_xml()"),
        ("SELECT nextval('cars_id_seq')", "postgres", "nextval()"),
        ("SELECT pg_terminate_backend(1)", "postgres", "pg_terminate_backend()"),
        ("SELECT readfile('/etc/passwd')", "sqlite", "readfile()"),
        ("SELECT load_extension('/tmp/evil.so')", "sqlite", "load_extension()"),
        ("SELECT getenv('HOME')", "duckdb", "getenv()"),
        ("SELECT id FROM cars WHERE make = current_setting('home_directory')", "duckdb", "current_setting()"),
    ],
)
def test_refuses_table_functions_and_dangerous_functions(sql: str, dialect: str, words: str) -> None:
    message = refused(sql, dialect)
    assert "not allowed" in message
    assert words in message


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM secrets",
        "SELECT * FROM information_schema.tables",
        "SELECT * FROM pg_catalog.pg_class",
        "SELECT * FROM sqlite_master",
        "SELECT * FROM cars WHERE id IN (SELECT id FROM secrets)",
    ],
)
def test_refuses_tables_outside_the_source(sql: str) -> None:
    assert "is not part of this data source" in refused(sql)


@pytest.mark.parametrize("sql", ["FROM '/etc/passwd'", "SELECT * FROM 'data.csv'", 'SELECT * FROM "s3://b/x.parquet"'])
def test_refuses_file_paths_without_echoing_them(sql: str) -> None:
    message = refused(sql)
    assert "looks like a file path" in message
    assert "passwd" not in message and "data.csv" not in message and "s3:" not in message


@pytest.mark.parametrize(
    ("sql", "words"),
    [
        ("SELECT * FROM information_schema.tables", "system catalog"),
        ("SELECT * FROM pg_class", "system catalog"),
        ("SELECT * FROM sqlite_schema", "system catalog"),
        ("SELECT * FROM '/etc/passwd'", "looks like a file path"),
        ('SELECT * FROM "https://example.com/x.csv"', "looks like a file path"),
        ("SELECT * FROM read_json('x.json')", "table functions are not allowed"),
    ],
)
def test_without_a_table_list_still_refuses_catalogs_paths_and_functions(sql: str, words: str) -> None:
    assert words in refused(sql, tables=None)
    assert accepted("SELECT * FROM anything_at_all", tables=None)


def test_nesting_is_counted_before_parsing_outside_quotes_and_comments() -> None:
    deepest = "SELECT " + "(" * MAX_SQL_NESTING + "1" + ")" * MAX_SQL_NESTING
    assert check_select(deepest, "duckdb", None, 10)  # The cap's own subquery does not count against it.
    one_more = "SELECT " + "(" * (MAX_SQL_NESTING + 1) + "1" + ")" * (MAX_SQL_NESTING + 1)
    assert f"more than {MAX_SQL_NESTING} levels" in refused(one_more)
    subqueries = "SELECT * FROM " + "(SELECT * FROM " * 2000 + "cars" + ") AS s" * 2000
    assert f"more than {MAX_SQL_NESTING} levels" in refused(subqueries)
    quoted = "(" * 500
    for sql in (f"SELECT '{quoted}' AS a", f'SELECT 1 AS "{quoted}"', f"SELECT 1 -- {quoted}\n",
                f"SELECT /* {quoted} */ 1", "SELECT 'it''s (' AS a"):
        assert check_select(sql, "duckdb", None, 10)


def test_refuses_malformed_and_oversized_input() -> None:
    assert "could not be parsed" in refused("SELEC * FROM cars")
    assert "could not be parsed" in refused("DEL/**/ETE FROM cars")
    assert "empty" in refused("   ")
    assert "empty" in refused("-- nothing")
    assert "NUL" in refused("SELECT 1\x00; DROP TABLE cars")
    assert "characters long" in refused("SELECT " + "1 + " * MAX_SQL_CHARS + "1")
    assert f"more than {MAX_SQL_NESTING} levels" in refused("SELECT " + "(" * 3000 + "1" + ")" * 3000)
    assert "unsupported SQL dialect" in refused("SELECT 1", dialect="no-such-dialect")
    with pytest.raises(InvalidArgument):
        check_select("SELECT 1", "duckdb", None, -1)


def test_renders_without_comments() -> None:
    """Comments never reach the engine, so nothing can hide in one that sqlglot and the engine read apart."""
    rendered = accepted("SELECT 1 /* x */ AS one -- */ DROP TABLE cars\nFROM cars")
    assert "/*" not in rendered and "--" not in rendered
    assert "DROP" not in rendered
