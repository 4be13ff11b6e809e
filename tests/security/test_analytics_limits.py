"""Attacks on the analytics engines' resources, kept in their shape: a data agent whose example query is a
hostile statement (``unnest(range(1e9))``, ``repeat('x', 1e9)``, ``zeroblob(1e9)``, a cross join, a long
``generate_series``), asked over MCP. Each ends within the deadline set here with a clear google.rpc error,
or with an answer capped in bytes that says so, and leaves nothing huge in the store. A child process
measures the memory of a 1e9-row and of a 1 GB-value query: back under 1.5x the idle RSS once the query has
stopped.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import mcp_types as types
import pytest
from mcp import Client
from sqlalchemy import create_engine, select, text
from sqlalchemy.engine import make_url

from convener.analytics.budget import Budget
from convener.analytics.engines import open_engine
from convener.analytics.sizes import check_sizes
from convener.analytics.spill import SPILL_DIR, SpillFolder
from convener.analytics.tables import messages
from convener.api.errors import ApiError, ResourceExhausted
from convener.config import Settings
from convener.outside.limits import ANALYTICS_RUNNING
from convener.server import mcp_servers
from convener.services import Services
from convener.store.database import normalise_url

pytestmark = pytest.mark.anyio

DEADLINE = 2.0
MARGIN = 2.5
"""An attack's answer comes within the deadline, plus the grace given to an interrupted engine and the
MCP round trip (on a loaded machine)."""
RESULT_BYTES = 200_000
VALUE_BYTES = 50_000
STORED_BYTES = 2_000_000
POSTGRES_URL = os.environ.get("CONVENER_TEST_DATABASE_URL")
SRC = Path(__file__).resolve().parents[2] / "src"


@pytest.fixture
def roots(tmp_path: Path) -> Path:
    """A folder source (``t.csv``) and a SQLite file (table ``t``), 120 rows each."""
    folder = tmp_path / "roots"
    (folder / "data").mkdir(parents=True)
    rows = [(i, f"region-{i % 4}") for i in range(120)]
    (folder / "data" / "t.csv").write_text("n,region\n" + "".join(f"{n},{r}\n" for n, r in rows))
    connection = sqlite3.connect(folder / "data.sqlite")
    connection.execute("CREATE TABLE t (n INTEGER, region TEXT)")
    connection.executemany("INSERT INTO t VALUES (?, ?)", rows)
    connection.commit()
    connection.close()
    return folder


@pytest.fixture
def settings(database_url: str, tmp_path: Path, roots: Path) -> Settings:
    return Settings(data_dir=tmp_path / "data", database_url=database_url, allow_anonymous=False,
                    analytics_roots=(roots,), knowledge_embeddings="off", analytics_timeout_seconds=DEADLINE,
                    analytics_memory_limit_mb=256, analytics_threads=1, analytics_result_bytes=RESULT_BYTES,
                    analytics_value_bytes=VALUE_BYTES)


@pytest.fixture
async def client(services: Services, roots: Path) -> AsyncIterator[Client]:
    services.analytics.sources.add("files", str(roots / "data"), None)
    services.analytics.sources.add("lite", str(roots / "data.sqlite"), None)
    async with Client(mcp_servers(services)["/mcp"]) as connected:
        yield connected


def agent(source: str, table: str, sql: str) -> dict[str, Any]:
    """A data agent over one table whose example query is ``sql``: asked its example question, it runs it."""
    context = {"datasourceReferences": {"bq": {"tableReferences": [{"datasetId": source, "tableId": table}]}},
               "exampleQueries": [{"naturalLanguageQuestion": "What does the report show?", "sqlQuery": sql}],
               "options": {"chart": {"image": {"noImage": {}}}}}
    return {"displayName": "Report", "dataAnalyticsAgent": {"publishedContext": context}}


async def attack(client: Client, services: Services, source: str, table: str, sql: str) -> tuple[str, float]:
    """Ask the hostile agent; (its error's text or its final response, seconds taken). Whatever the
    outcome, the store holds no more than a small turn."""
    agent_id = f"a{uuid.uuid4().hex[:12]}"
    created = await client.call_tool("create_data_agent", {"data_agent_id": agent_id,
                                                           "data_agent": agent(source, table, sql)})
    assert not created.is_error, created.content
    started = time.monotonic()
    result = await client.call_tool("ask_data_agent", {"data_agent_id": agent_id,
                                                       "user_query_with_context": "What does the report show?"})
    elapsed = time.monotonic() - started
    with services.database.reading() as connection:
        stored = sum(len(json.dumps(row.message)) for row in connection.execute(select(messages.c.message)))
    assert stored < STORED_BYTES, f"{stored:,} bytes stored"
    assert isinstance(result.content[0], types.TextContent)
    if result.is_error:
        return result.content[0].text, elapsed
    answer = result.structured_content or {}
    finals = [m["systemMessage"]["text"]["parts"][0] for m in answer["messages"]
              if m.get("systemMessage", {}).get("text", {}).get("textType") == "FINAL_RESPONSE"]
    return "OK: " + " ".join(finals), elapsed



def ended_in_time(outcome: str, elapsed: float, *codes: str) -> None:
    assert elapsed < DEADLINE + MARGIN, f"{elapsed:.1f} s: {outcome[:300]}"
    assert outcome.startswith(tuple(f"{code}: " for code in codes)), outcome[:300]
    assert "Traceback" not in outcome and "UNAVAILABLE" not in outcome and "INTERNAL" not in outcome


HUGE = [
    # 1e9 rows, in a list and then one by one: past the memory limit, or the deadline.
    ("files", "t", "SELECT max(n) AS top FROM (SELECT unnest(range(1000000000)) AS n) AS numbers"),
    ("files", "t", "SELECT unnest(range(1000000000)) AS n"),
    # One value of 1 GB, and one list of 10^8 numbers (gigabytes as Python objects).
    ("files", "t", "SELECT repeat('x', 1000000000) AS x"),
    ("files", "t", "SELECT range(100000000) AS l"),
    # A cross join of 120^6 rows: nothing but time.
    ("files", "t", "SELECT count(*) AS n FROM t a, t b, t c, t d, t e, t f"),
    # A value of 12 MB made from the data: refused before it reaches Python, the store or the answer.
    ("files", "t", "SELECT string_agg(repeat(region, 100000), '') AS s FROM t"),
    # SQLite: zeroblob and printf make a value as long as asked; a recursive CTE never ends.
    ("lite", "t", "SELECT zeroblob(1000000000) AS x"),
    ("lite", "t", "SELECT printf('%.*c', 1000000000, 'x') AS x"),
    ("lite", "t", "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT count(*) AS n FROM r"),
    # The built-in source: a caller's copy of the store in DuckDB, held to the same budget.
    ("convener", "apps", "SELECT repeat('x', 1000000000) AS x"),
    ("convener", "apps", "SELECT max(n) AS top FROM (SELECT unnest(range(1000000000)) AS n) AS numbers"),
]


@pytest.mark.parametrize(("source", "table", "sql"), HUGE, ids=[f"{s}:{q[:40]}" for s, _, q in HUGE])
async def test_a_hostile_example_query_ends_at_its_deadline_with_a_clear_error(
        client: Client, services: Services, source: str, table: str, sql: str) -> None:
    outcome, elapsed = await attack(client, services, source, table, sql)
    ended_in_time(outcome, elapsed, "DEADLINE_EXCEEDED", "RESOURCE_EXHAUSTED")


@pytest.mark.parametrize("source", ["files", "lite"])
async def test_a_result_past_the_byte_cap_is_cut_and_the_answer_says_so(
        client: Client, services: Services, source: str) -> None:
    """120 rows of 10 kB each: 1.2 MB, cut at 200 kB, and the final response names the limit."""
    padding = "repeat(region, 1000)" if source == "files" else "printf('%.*c', 10000, 'x')"
    outcome, elapsed = await attack(client, services, source, "t", f"SELECT n, {padding} AS padding FROM t")
    assert elapsed < DEADLINE + MARGIN
    assert outcome.startswith("OK: "), outcome[:300]
    assert "cut off at the limit of 200,000 bytes" in outcome and "CONVENER_ANALYTICS_RESULT_BYTES" in outcome


async def test_a_result_past_the_row_cap_is_cut_and_the_answer_says_so(client: Client, services: Services) -> None:
    services.analytics.pipeline.row_limit = 50
    outcome, _ = await attack(client, services, "files", "t", "SELECT n, region FROM t ORDER BY n")
    assert outcome.startswith("OK: 50 rows of n, region."), outcome[:300]
    assert "cut off at the limit of 50 rows (CONVENER_ANALYTICS_ROW_LIMIT)" in outcome


async def test_a_long_value_is_refused_by_name(client: Client, services: Services) -> None:
    outcome, _ = await attack(client, services, "files", "t", "SELECT n, repeat(region, 10000) AS essay FROM t")
    assert outcome.startswith("RESOURCE_EXHAUSTED: ") and "'essay'" in outcome and "50,000 bytes" in outcome


@dataclass(frozen=True)
class PostgresTable:
    url: str
    name: str


@pytest.fixture
def postgres_table() -> Iterator[PostgresTable]:
    """A table in a PostgreSQL database of its own, for a source that is a database URL (the store's own
    database is never a source)."""
    if not POSTGRES_URL:
        pytest.skip("CONVENER_TEST_DATABASE_URL names no PostgreSQL database")
    database = f"convener_limits_{uuid.uuid4().hex[:10]}"
    table = "numbers"
    admin = create_engine(normalise_url(POSTGRES_URL), isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.exec_driver_sql(f'CREATE DATABASE "{database}"')
    url = make_url(normalise_url(POSTGRES_URL)).set(database=database).render_as_string(hide_password=False)
    setup = create_engine(url)
    with setup.begin() as connection:
        connection.execute(text(f"CREATE TABLE {table} AS SELECT n FROM generate_series(1, 100) AS n"))
    setup.dispose()
    try:
        yield PostgresTable(url, table)
    finally:
        with admin.connect() as connection:
            connection.exec_driver_sql(f'DROP DATABASE "{database}" WITH (FORCE)')
        admin.dispose()


@pytest.mark.parametrize("sql", [
    "SELECT count(*) AS n FROM (SELECT generate_series(1, 100000000000) AS n) AS s",
    "SELECT sum(a.n * b.n * c.n * d.n * e.n) AS n FROM {t} a, {t} b, {t} c, {t} d, {t} e",
    "SELECT n, repeat('z', 60000) AS essay FROM {t}",
])
async def test_postgresql_queries_end_at_their_deadline(
        client: Client, services: Services, postgres_table: PostgresTable, sql: str) -> None:
    services.analytics.sources.add("pg", postgres_table.url, None)
    outcome, elapsed = await attack(client, services, "pg", postgres_table.name,
                                    sql.format(t=postgres_table.name))
    ended_in_time(outcome, elapsed, "DEADLINE_EXCEEDED", "RESOURCE_EXHAUSTED")
    engine = create_engine(postgres_table.url)
    try:  # the server stopped it too: no query of this database still running there
        with engine.connect() as connection:
            running = connection.execute(text(
                "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND pid <> pg_backend_pid() "
                "AND datname = current_database()")).scalar_one()
        assert running == 0
    finally:
        engine.dispose()


# ---------------------------------------------------------------------------------- memory, in a child


CHILD_ADDRESS_SPACE = 8 * 1024**3
"""The child's address space is capped, so that a regression fails the test rather than the shared machine."""


def _cap_address_space() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (CHILD_ADDRESS_SPACE, CHILD_ADDRESS_SPACE))


def probe(kind: str, folder: Path, sql: str) -> dict[str, Any]:
    environment = {**os.environ, "PYTHONPATH": str(SRC)}
    finished = subprocess.run([sys.executable, str(Path(__file__).with_name("rss_probe.py")), kind, str(folder),
                               str(DEADLINE), sql], capture_output=True, text=True, timeout=60, env=environment,
                              check=False, preexec_fn=_cap_address_space)
    assert finished.returncode == 0, finished.stderr[-2000:]
    found: dict[str, Any] = json.loads(finished.stdout.strip().splitlines()[-1])
    return found


@pytest.mark.slow
@pytest.mark.parametrize(("kind", "sql"), [
    # Written as constants, both are refused before they run; computed from the data, they run to the deadline
    # (2.5e10 rows) or to the value cap (one value of 1 GB, which DuckDB makes in one piece).
    ("duckdb", "SELECT max(n) AS top FROM (SELECT unnest(range(1000000000)) AS n) AS numbers"),
    ("duckdb", "SELECT repeat('x', 1000000000) AS x"),
    ("duckdb", "SELECT count(*) AS n FROM t a, t b, t c, t d, t e"),
    ("duckdb", "SELECT repeat('x', (SELECT max(n) FROM t) * 8500000) AS x"),
    ("sqlite", "SELECT printf('%.*c', 1000000000, 'x') AS x"),
    ("sqlite", "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT count(*) AS n FROM r"),
])
def test_a_huge_query_ends_at_its_deadline_and_gives_its_memory_back(roots: Path, kind: str, sql: str) -> None:
    found = probe(kind, roots, sql)
    assert found["outcome"].startswith(("DEADLINE_EXCEEDED: ", "RESOURCE_EXHAUSTED: ")), found
    assert found["elapsed"] < DEADLINE + 1.0, found
    assert found["stopped"] < 15, found  # the interrupted engine stopped, too
    assert found["after_mb"] < 1.5 * found["idle_mb"], found


# ---------------------------------------------------------------------------------- the spill folder


def test_duckdb_spills_only_into_the_process_folder_in_the_data_dir(tmp_path: Path) -> None:
    folder = SpillFolder(tmp_path / "data")
    config = Budget(memory_mb=64, spill=folder, spill_mb=256).duckdb_config()
    spilled = config["temp_directory"]  # asking for the configuration made the folder
    assert isinstance(spilled, str) and Path(spilled).parent == folder.path
    connection = duckdb.connect(":memory:", config=config)
    assert connection.execute("SELECT current_setting('temp_directory')").fetchone() == (spilled,)
    connection.execute("SELECT * FROM range(4000000) t(n) ORDER BY hash(n)").fetchmany(1)  # past 64 MB: spills
    connection.close()
    folder.close()
    assert list((tmp_path / "data" / SPILL_DIR).iterdir()) == []
    assert not list(tmp_path.glob("**/*.tmp"))


def test_the_spill_folder_of_a_killed_process_is_removed_at_the_next_start(tmp_path: Path) -> None:
    data = tmp_path / "data"
    child = subprocess.Popen([sys.executable, "-c", (
        "import sys, time\nfrom pathlib import Path\nfrom convener.analytics.spill import SpillFolder\n"
        "folder = SpillFolder(Path(sys.argv[1]))\n(folder.ensure() / 'db').mkdir()\n"
        "(folder.path / 'db' / 'duckdb_temp_block-1.block').write_bytes(b'x')\n"
        "print(folder.path.name, flush=True)\ntime.sleep(60)\n"), str(data)],
        stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(SRC)})
    try:
        assert child.stdout is not None
        killed = child.stdout.readline().strip()
        assert killed
        living = SpillFolder(data)
        living.ensure()  # the child still runs: its folder stays
        assert (data / SPILL_DIR / killed).is_dir()
        living.close()
        os.kill(child.pid, signal.SIGKILL)
        child.wait(10)
        assert (data / SPILL_DIR / killed).is_dir()  # a kill leaves it behind
        again = SpillFolder(data)
        again.ensure()
        assert sorted(p.name for p in (data / SPILL_DIR).iterdir()) == sorted(
            [again.path.name, again.path.name + ".lock"])
        again.close()
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(10)
        if child.stdout is not None:
            child.stdout.close()


# ---------------------------------------------------------------------------------- budgets and slots


def test_every_duckdb_source_is_held_to_the_budget_and_cannot_lift_it(tmp_path: Path, roots: Path) -> None:
    folder = SpillFolder(tmp_path / "data")
    budget = Budget(memory_mb=128, threads=1, spill=folder, spill_mb=32)
    engine = open_engine(str(roots / "data"), budget)
    try:
        connection = engine._connection  # type: ignore[attr-defined]
        settings = dict(connection.execute(
            "SELECT name, value FROM duckdb_settings() WHERE name IN ('memory_limit', 'threads', "
            "'temp_directory', 'max_temp_directory_size', 'lock_configuration')").fetchall())
        assert settings["threads"] == "1" and settings["lock_configuration"] == "true"
        assert settings["memory_limit"].startswith(("122", "128"))  # DuckDB shows 128 MB in MiB
        assert Path(settings["temp_directory"]).parent == folder.path
        with pytest.raises(duckdb.Error):
            connection.execute("SET memory_limit = '10GB'")
    finally:
        engine.close()
        folder.close()


def test_sqlite_sources_refuse_long_values_as_they_are_made(roots: Path) -> None:
    engine = open_engine(str(roots / "data.sqlite"), Budget(value_bytes=1000))
    with pytest.raises(ResourceExhausted, match="1,000 bytes"):
        engine.execute("SELECT group_concat(region) AS joined FROM t", row_limit=10, timeout_seconds=5)
    assert engine.execute("SELECT count(*) AS n FROM t", row_limit=10, timeout_seconds=5).rows == [(120,)]


def test_queries_past_the_running_limit_wait_within_their_deadline(roots: Path) -> None:
    """Stopped queries hold their slot until they have stopped; one asked while all slots are held waits
    only until its own deadline, and answers RESOURCE_EXHAUSTED, so repeated asking piles nothing up."""
    engine = open_engine(str(roots / "data.sqlite"))
    endless = "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT count(*) AS n FROM r"
    outcomes: list[str] = []

    def ask(seconds: float) -> None:
        try:
            engine.execute(endless, row_limit=1, timeout_seconds=seconds)
        except ApiError as error:
            outcomes.append(error.code.name)

    askers = [threading.Thread(target=ask, args=(2.0,)) for _ in range(ANALYTICS_RUNNING)]
    for asker in askers:
        asker.start()
    time.sleep(0.2)
    started = time.monotonic()
    ask(0.5)
    assert time.monotonic() - started < 0.5 + MARGIN
    for asker in askers:
        asker.join(10)
    assert sorted(outcomes) == sorted(["DEADLINE_EXCEEDED"] * ANALYTICS_RUNNING + ["RESOURCE_EXHAUSTED"])
    assert engine.execute("SELECT count(*) AS n FROM t", row_limit=1, timeout_seconds=5).rows == [(120,)]


def test_a_constant_size_past_the_cap_is_refused_before_the_query_runs() -> None:
    for sql in ("SELECT repeat('x', 1e9) AS x", "SELECT unnest(range(0, 10 ** 9)) AS n",
                "SELECT lpad('a', 2000000000, 'b') AS x", "SELECT list_resize([1], 1000000000) AS l",
                "SELECT printf('%.1000000000f', 1.0) AS x"):
        with pytest.raises(ResourceExhausted, match="CONVENER_ANALYTICS_VALUE_BYTES"):
            check_sizes(sql, "duckdb", 1_000_000)
    for sql in ("SELECT repeat(region, 3) AS x, round(n, 2) AS r FROM t WHERE n > 5000000000",
                "SELECT range(10) AS l", "SELECT printf('%5d', n) AS x FROM t"):
        check_sizes(sql, "duckdb", 1_000_000)


def test_a_duckdb_file_spills_into_the_data_dir_or_not_at_all(tmp_path: Path) -> None:
    """A DuckDB file's own default spill folder is ``<file>.tmp`` beside it; it is never used. Without a
    spill folder, a query past the memory limit is RESOURCE_EXHAUSTED; with one, it spills there and runs."""
    path = tmp_path / "big.duckdb"
    made = duckdb.connect(str(path))
    made.execute("CREATE TABLE t AS SELECT range AS n FROM range(3000000)")
    made.close()
    distinct = "SELECT count(DISTINCT n::VARCHAR || 'x') AS d FROM t"  # a hash table far past 32 MB
    alone = open_engine(str(path), Budget(memory_mb=32, threads=1))
    with pytest.raises(ResourceExhausted, match="CONVENER_ANALYTICS_MEMORY_LIMIT_MB"):
        alone.execute(distinct, row_limit=1, timeout_seconds=30)
    alone.close()
    folder = SpillFolder(tmp_path / "data")
    spilling = open_engine(str(path), Budget(memory_mb=32, threads=1, spill=folder))
    assert spilling.execute(distinct, row_limit=1, timeout_seconds=30).rows == [(3_000_000,)]
    spilling.close()
    folder.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.duckdb", "data"]
    assert list((tmp_path / "data" / SPILL_DIR).iterdir()) == []


def test_duckdb_folders_left_beside_a_database_in_the_data_dir_are_removed(tmp_path: Path) -> None:
    data = tmp_path / "data"
    (data / "demo.duckdb.tmp").mkdir(parents=True)
    (data / "demo.duckdb.tmp" / "duckdb_temp_storage_S32K-0.tmp").write_bytes(b"x")
    (data / "notes.duckdb.tmp").mkdir()
    (data / "notes.duckdb.tmp" / "mine.txt").write_text("not DuckDB's")  # not only DuckDB's files: kept
    starting = SpillFolder(data)
    starting.ensure()
    starting.close()
    assert sorted(p.name for p in data.iterdir()) == [SPILL_DIR, "notes.duckdb.tmp"]


def test_postgresql_queries_run_read_only_with_the_budget_work_mem(postgres_table: PostgresTable) -> None:
    engine = open_engine(postgres_table.url, Budget(work_mem_mb=8))
    try:
        settings = engine._run(  # type: ignore[attr-defined]
            "SELECT current_setting('work_mem'), current_setting('transaction_read_only'), "
            "current_setting('statement_timeout')", max_rows=1, timeout_seconds=5).rows
        (work_mem, read_only, timeout), = settings
        assert (work_mem, read_only) == ("8MB", "on")
        assert timeout.endswith("ms") and 0 < int(timeout[:-2]) <= 5000  # what is left of the deadline
    finally:
        engine.close()
