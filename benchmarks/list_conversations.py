"""Benchmark of list_conversations: raw keyset SQL vs the service vs the MCP tool, on SQLite and PostgreSQL.

Run from the repository root::

    .venv/bin/python benchmarks/list_conversations.py [--count 100000] [--backend sqlite|postgresql|both]
        [--postgres-url postgresql+psycopg://postgres@127.0.0.1:5432/test] [--repeat 20]

It fills one app with ``--count`` conversations (bulk inserted; that time is reported, not counted),
then times four pages of 20, each the median of ``--repeat`` runs, through three layers:

* raw     - the SELECTs the service issues, as text SQL (same WHERE, ORDER BY, LIMIT 21, then the page's
            turns in one query; bodies fetched as the driver returns them: text on SQLite, decoded JSONB on
            PostgreSQL) on the same engine;
* service - ``ConversationService.list`` (app lookup, filter, page token, pydantic validation of bodies);
* tool    - ``list_conversations`` through an in-process ``mcp.Client``: request validation, worker
            thread, response serialization, the MCP session, and the client's output-schema check.

``tool/raw`` and ``svc/raw`` are what the layers above the database cost. ``deep/page1`` compares the
page 90% into the list with page 1: with a keyset the store seeks to it, so the ratio stays near 1
whatever ``--count`` is; if it grows with ``--count`` the skipped rows are being walked (an OFFSET,
or a keyset predicate the index cannot bound). The PostgreSQL run uses a private schema, dropped at
the end. Nothing is asserted about timings; layers returning different pages is an error.
"""

from __future__ import annotations

import argparse
import itertools
import random
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from backends import add_arguments, each_backend
from mcp import Client
from sqlalchemy import bindparam, insert, text

from convener.api.protojson import Timestamp
from convener.auth.caller import LOCAL_USER
from convener.ces import conversation_bodies
from convener.ces.conversations import _columns, requested_sources
from convener.ces.models import App, Chunk, Conversation, Image, Message, Source, Span, ToolCall, Turn
from convener.ces.names import AppName
from convener.ces.recording import settle
from convener.ces.requests import CreateAppRequest, ListConversationsRequest, ListConversationsResponse
from convener.ces.tables import conversation_turns
from convener.ces.tables import conversations as table
from convener.config import Settings
from convener.server import mcp_servers
from convener.services import Services

APP = AppName("bench", "global", "support")
PAGE = 20
YEAR_US = 365 * 86_400 * 1_000_000
START_US = Timestamp.parse("2025-01-01T00:00:00Z").to_micros()
# (value, weight) of each varied property; ~30% of conversations carry audio input.
SOURCES = [(Source.LIVE, 70), (Source.EVAL, 15), (Source.SIMULATOR, 10), (Source.AGENT_TOOL, 5)]
INPUTS = [(("text",), 60), (("transcript",), 20), (("text", "transcript"), 10), (("text", "image"), 10)]
LANGUAGES = [("en-US", 55), ("de-DE", 20), ("fr-FR", 15), ("ja-JP", 10)]
TURNS = [(1, 10), (2, 30), (3, 30), (4, 15), (5, 10), (6, 5)]
KEYSET = (  # as the service's
    "start_time_us <= :s AND (start_time_us < :s OR (start_time_us = :s AND "
    "(start_time_nanos < :n OR (start_time_nanos = :n AND conversation_id < :cid))))"
)
ORDER_BY = "ORDER BY start_time_us DESC, start_time_nanos DESC, conversation_id DESC"
TURNS_SQL = text(
    "SELECT conversation_pk, body FROM ces_conversation_turns WHERE conversation_pk IN :ids "
    "ORDER BY conversation_pk, turn_index"
).bindparams(bindparam("ids", expanding=True))


@dataclass(frozen=True)
class Case:
    label: str
    filter: str | None = None
    raw_where: str = ""  # the filter, hand-written in SQL
    depth: float = 0.0  # fraction of the matching rows before the page
    matches: bool = True  # False: the filter matches no row, on a column no index orders


CASES = [
    Case("page 1"),
    Case("deep page (90%)", depth=0.9),
    Case("source=EVAL AND turnCount>2", "source = EVAL AND turnCount > 2",
         " AND source = 'EVAL' AND turn_count > 2"),
    Case("inputTypes:INPUT_TYPE_AUDIO", "inputTypes:INPUT_TYPE_AUDIO", " AND (input_types & 8) != 0"),
    # No conversation has blob input: the unbounded scan reads every row; the service stops at its scan budget.
    Case("inputTypes:BLOB (no match)", "inputTypes:INPUT_TYPE_BLOB", " AND (input_types & 32) != 0", matches=False),
]
NO_MATCH_REPEAT = 3  # the raw query of the no-match case reads the whole app: a few runs are enough


def _turn(kinds: tuple[str, ...], index: int) -> Turn:
    chunks = {
        "text": Chunk(text=f"My order #{1000 + index} has not arrived, can you check it?"),
        "transcript": Chunk(transcript="I would like to change my delivery address please"),
        "image": Chunk(image=Image(mime_type="image/png", data="iVBORw0KGgo=", alt_text="the parcel")),
    }
    user = Message(role="user", chunks=[chunks[kind] for kind in (kinds if index == 0 else kinds[:1])])
    call = Chunk(tool_call=ToolCall(id=f"call-{index}", tool=f"{APP}/tools/orders", args={"order": index}))
    agent = Message(role="agent", chunks=[call, Chunk(text="It is on its way.")])
    t0 = Timestamp.from_micros(START_US)
    child = Span(name="tool:orders", start_time=t0, end_time=Timestamp(t0.seconds + 1))
    end = Timestamp(t0.seconds + 2, 250_000_000)
    span = Span(name="turn", start_time=t0, end_time=end, child_spans=[child])
    return Turn(messages=[user, agent], root_span=span)


def variants() -> tuple[list[tuple[dict[str, Any], dict[str, Any]]], list[int]]:
    """(body, columns) of every mix of the varied properties, made by the real settle path; their weights."""
    pool, weights = [], []
    mixes = itertools.product(SOURCES, INPUTS, LANGUAGES, TURNS)
    for (source, w1), (kinds, w2), (language, w3), (turns, w4) in mixes:
        raw = Conversation(turns=[_turn(kinds, i) for i in range(turns)], source=source,
                           language_code=language, entry_agent=f"{APP}/agents/triage")
        settled = settle(raw, APP.conversation("template"), received=Timestamp.from_micros(START_US))
        pool.append((settled.to_json(), _columns(settled)))
        weights.append(w1 * w2 * w3 * w4)
    return pool, weights


def populate(services: Services, app_pk: int, count: int, batch: int = 5_000) -> None:
    rng = random.Random(42)
    pool, weights = variants()
    rows: list[dict[str, Any]] = []
    turn_rows: list[dict[str, Any]] = []
    with services.database.transaction() as connection:
        for i, (body, columns) in enumerate(rng.choices(pool, weights, k=count)):
            cid = f"{rng.getrandbits(64):016x}"
            start = START_US + rng.randrange(YEAR_US)
            end = start + rng.randrange(30_000_000, 600_000_000)
            start_text, end_text = str(Timestamp.from_micros(start)), str(Timestamp.from_micros(end))
            document = {**body, "name": f"{APP}/conversations/{cid}", "startTime": start_text,
                        "endTime": end_text}
            header, turns = conversation_bodies.split(document)  # stored as the service stores it
            rows.append({**columns, "id": i + 1, "app_pk": app_pk, "conversation_id": cid, "start_time_us": start,
                         "end_time_us": end, "body": header})
            turn_rows.extend({"conversation_pk": i + 1, "turn_index": index, "body": turn}
                             for index, turn in enumerate(turns))
            if len(rows) == batch or i == count - 1:
                connection.execute(insert(table), rows)
                connection.execute(insert(conversation_turns), turn_rows)
                rows, turn_rows = [], []
    if services.database.dialect == "postgresql":  # as autovacuum would; Convener never ANALYZEs SQLite
        # VACUUM too: autovacuum vacuums a table after inserts (autovacuum_vacuum_insert_threshold), which sets
        # the visibility map that lets the scan budget's boundary query read the keyset index alone.
        with services.database.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
            connection.execute(text("VACUUM ANALYZE ces_conversations"))
            connection.execute(text("VACUUM ANALYZE ces_conversation_turns"))


async def median_ms(run: Callable[[], object], repeat: int) -> float:
    """Median wall time of ``run()`` (awaited when it returns an awaitable)."""
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        result = run()
        if isinstance(result, Awaitable):
            await result
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


@contextmanager
def explained(services: Services) -> Iterator[list[str]]:
    """Collects the plan of the last SELECT on ces_conversations run inside the block, once it ends."""
    seen: list[tuple[str, Any]] = []
    plan: list[str] = []

    def listen(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool) -> None:
        if "FROM ces_conversations" in statement:
            seen.append((statement, parameters))

    with services.database.listening("before_cursor_execute", listen):
        yield plan
    prefix = "EXPLAIN QUERY PLAN " if services.database.dialect == "sqlite" else "EXPLAIN (ANALYZE, BUFFERS) "
    with services.database.transaction() as connection:
        plan.extend(f"    {row[-1]}" for row in connection.exec_driver_sql(prefix + seen[-1][0], seen[-1][1]))


async def measure(services: Services, app_pk: int, repeat: int) -> None:
    results: dict[str, tuple[float, float, float]] = {}
    async with Client(mcp_servers(services)["/mcp"]) as client:
        for case in CASES:
            request = ListConversationsRequest(parent=str(APP), page_size=PAGE, filter=case.filter)
            sql, params = f"FROM ces_conversations WHERE app_pk = {app_pk}{case.raw_where}", {}
            if case.depth:  # the position after the row at that depth, signed as the service would sign it
                with services.database.transaction() as connection:
                    skip = int(connection.scalar(text(f"SELECT count(*) {sql}")) * case.depth) - 1
                    at = connection.execute(text(f"SELECT start_time_us, start_time_nanos, conversation_id {sql} {ORDER_BY} "
                                                 "LIMIT 1 OFFSET :skip"), {"skip": skip}).one()
                query = {"method": "list_conversations", "parent": str(APP), "filter": case.filter or "",
                         "sources": [s.value for s in requested_sources(request)]}  # as the service's
                request.page_token = services.conversations.tokens.issue(
                    query=query, caller=LOCAL_USER.principal, position=[at.start_time_us, at.start_time_nanos, at.conversation_id])
                sql, params = f"{sql} AND {KEYSET}", {"s": at.start_time_us, "n": at.start_time_nanos, "cid": at.conversation_id}
            raw_sql = text(f"SELECT id, conversation_id, start_time_us, body {sql} {ORDER_BY} LIMIT {PAGE + 1}")
            arguments = request.to_json()

            def raw() -> list[Any]:
                with services.database.transaction() as connection:
                    page = list(connection.execute(raw_sql, params).all())
                    ids = [row.id for row in page[:PAGE]]
                    if ids:  # the page's turns, as the service reads them: one query for the whole page
                        connection.execute(TURNS_SQL, {"ids": ids}).all()
                    return page

            def service() -> ListConversationsResponse:
                return services.conversations.list(request, LOCAL_USER)

            async def tool() -> list[str]:
                result = await client.call_tool("list_conversations", arguments)
                if result.is_error or result.structured_content is None:
                    raise SystemExit(f"{case.label}: the tool failed: {result.content}")
                return [c["name"] for c in result.structured_content.get("conversations", [])]

            with explained(services) as plan:
                names = [c.to_json()["name"] for c in service().conversations or ()]
            expected = [str(APP.conversation(row.conversation_id)) for row in raw()[:PAGE]]
            if not expected == names == await tool() or len(names) != (PAGE if case.matches else 0):
                raise SystemExit(f"{case.label}: raw SQL, service and tool disagree, or the page is short")
            runs = repeat if case.matches else min(repeat, NO_MATCH_REPEAT)
            results[case.label] = (
                await median_ms(raw, runs), await median_ms(service, repeat), await median_ms(tool, repeat)
            )
            print(f"\n  {case.label}: EXPLAIN of the service's SELECT", *plan, sep="\n")
    print(f"\n  {'case':<30}{'raw ms':>9}{'svc ms':>9}{'tool ms':>9}{'tool/raw':>10}{'svc/raw':>9}")
    for label, (r, s, t) in results.items():
        print(f"  {label:<30}{r:>9.2f}{s:>9.2f}{t:>9.2f}{t / r:>10.1f}{s / r:>9.1f}")
    first, deep = results[CASES[0].label], results[CASES[1].label]
    ratios = (d / f for d, f in zip(deep, first, strict=True))
    print("  deep page / page 1:  raw {:.2f}   service {:.2f}   tool {:.2f}".format(*ratios))
    keyset = [results[case.label] for case in CASES if case.matches]
    print("  service / raw (pages that match): " + "  ".join(f"{s / r:.1f}x" for r, s, _ in keyset)
          + f"   worst {max(s / r for r, s, _ in keyset):.1f}x")
    print("  tool / raw (pages that match):    " + "  ".join(f"{t / r:.1f}x" for r, _, t in keyset)
          + f"   worst {max(t / r for r, _, t in keyset):.1f}x")
    for case in CASES:
        if not case.matches:
            r, s, t = results[case.label]
            print(f"  unindexed filter matching nothing ({case.filter}): service {s:.1f} ms, tool {t:.1f} ms "
                  f"(scan budget {services.conversations.scan_rows:,} rows; the unbounded SQL scan {r:.1f} ms)")


def run(backend: str, url: str, count: int, repeat: int, scan_rows: int | None) -> None:
    print(f"\n=== {backend}: {count:,} conversations, median of {repeat} runs ===")
    with tempfile.TemporaryDirectory() as data_dir:
        budget = {} if scan_rows is None else {"list_scan_rows": scan_rows}
        services = Services.open(Settings(data_dir=Path(data_dir), database_url=url, **budget))
        try:
            app = CreateAppRequest(parent=str(APP.parent), app_id=APP.app, app=App(display_name="Benchmark"))
            services.apps.create(app, LOCAL_USER)
            with services.database.transaction() as connection:
                app_pk = services.apps.app_pk(connection, APP)
            started = time.perf_counter()
            populate(services, app_pk, count)
            print(f"  populated {APP} in {time.perf_counter() - started:.1f} s (not counted)")
            anyio.run(measure, services, app_pk, repeat)
        finally:
            services.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--count", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--scan-rows", type=int, default=None,
                        help="the service's scan budget (CONVENER_LIST_SCAN_ROWS); the setting's default if unset")
    add_arguments(parser)
    args = parser.parse_args()
    for backend, url in each_backend(args):
        run(backend, url, args.count, args.repeat, args.scan_rows)


if __name__ == "__main__":
    main()
