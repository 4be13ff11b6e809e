"""Benchmark of run_session: playbook turns through the tool layer vs the same Python tool calls made directly.

Run from the repository root::

    .venv/bin/python benchmarks/run_session.py [--sessions 10] [--turns 200] [--at 50,200] [--backend both]

An app with one playbook agent answers "order <id>" by calling the demo's ``lookup_order`` Python tool
and replying with the order's status. Every turn is recorded (the session's state and the conversation
with the new turn are written), as in production. Four layers run the same turns:

* direct  - ``lookup_order(order_id)`` and the reply formatted in Python: the work the agent asks for;
* engine  - the playbook engine alone, with the tool called in-process (no store, no recording);
* service - ``SessionService.run``: read the session and app, run the turn, write state and recording;
* tool    - ``run_session`` through an in-process ``mcp.Client`` (validation, worker thread, JSON, schema).

It reports turns per second and each layer's cost as a ratio of ``direct`` (and of ``service``). A
session's conversation grows by a turn per call, so the cost of a session's turn n against its turn 1 is
printed too, for each n of ``--at`` (the median over the sessions of turn n's time ÷ that of turn 1): a
turn appends a row, so it should stay near 1 however long the session. Nothing is asserted about timings.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import yaml
from mcp import Client

from convener.auth.caller import LOCAL_USER
from convener.ces.names import AppName
from convener.ces.runtime.playbook import Playbook, PlaybookDefinition
from convener.ces.session_models import RunSessionRequest, SessionConfig, SessionInput
from convener.config import Settings
from convener.demo.tools import dataset, lookup_order
from convener.server import mcp_servers
from convener.services import Services

from backends import add_arguments, each_backend

APP = AppName("bench", "global", "orders")
PLAYBOOK = {
    "intents": [{
        "name": "status",
        "patterns": [r"order (?P<order_id>AC-\d{4})"],
        "steps": [
            {"callTool": {"tool": "lookup", "args": {"order_id": "{{ slots.order_id }}"}, "as": "order"}},
            {"when": "results.order.error is defined", "reply": "No order {{ slots.order_id }}."},
            {"when": "results.order.output is defined",
             "reply": "Order {{ slots.order_id }} is {{ results.order.output.status }}."},
        ],
    }],
    "fallback": [{"reply": "Ask me about an order."}],
}
BUNDLE = {
    "format": "convener.app/v1",
    "app": {"displayName": "Benchmark", "rootAgent": "clerk"},
    "tools": {"lookup": {"pythonFunction": {"entryPoint": "convener.demo.tools:lookup_order"}}},
    "agents": {"clerk": {"displayName": "Clerk", "tools": ["lookup"], "playbookAgent": PLAYBOOK}},
}


def orders(count: int) -> list[str]:
    ids = [order["id"] for order in dataset()["orders"]]
    return [ids[index % len(ids)] for index in range(count)]


def direct_turn(order_id: str) -> str:
    found = lookup_order(order_id)
    return f"Order {order_id} is {found['status']}." if "error" not in found else f"No order {order_id}."


def engine_turn(book: Playbook, order_id: str) -> str:
    outcome = book.on_text({}, f"order {order_id}", {}, lambda tool, args: {"output": lookup_order(**args)})
    return str(outcome.actions[-1].text)  # type: ignore[union-attr]


def timed(turns: list[Callable[[], Any]]) -> list[float]:
    """Seconds each call took, in order."""
    took = []
    for turn in turns:
        started = time.perf_counter()
        turn()
        took.append(time.perf_counter() - started)
    return took


def request(session: str, order_id: str) -> RunSessionRequest:
    return RunSessionRequest(config=SessionConfig(session=f"{APP}/sessions/{session}"),
                             inputs=[SessionInput(text=f"order {order_id}")])


async def tool_turns(services: Services, sessions: int, turns: int, ids: list[str]) -> list[list[float]]:
    per_session: list[list[float]] = []
    async with Client(mcp_servers(services)["/mcp"]) as client:
        # The first call pays for the client's and the server's warm-up: not a session's turn 1.
        warm_up = await client.call_tool("run_session", request("tool-warm-up", ids[0]).to_json())
        assert not warm_up.is_error, warm_up.content
        for session in range(sessions):
            took = []
            for turn in range(turns):
                arguments = request(f"tool-{session}", ids[session * turns + turn]).to_json()
                started = time.perf_counter()
                result = await client.call_tool("run_session", arguments)
                took.append(time.perf_counter() - started)
                assert not result.is_error, result.content
            per_session.append(took)
    return per_session


def run(backend: str, url: str, sessions: int, turns: int, at: list[int]) -> None:
    total = sessions * turns
    ids = orders(total)
    print(f"\n=== {backend}: {sessions} sessions x {turns} turns, recording on ===")
    with tempfile.TemporaryDirectory() as data_dir:
        services = Services.open(Settings(data_dir=Path(data_dir), database_url=url))
        try:
            services.runtime.bundles.import_(str(APP.parent), APP.app, yaml.safe_dump(BUNDLE), False, LOCAL_USER)
            book = Playbook(PlaybookDefinition.parse(PLAYBOOK, "playbook"))
            sample = services.runtime.sessions.run(request("check", ids[0]), LOCAL_USER)
            assert sample.outputs and sample.outputs[0].text == direct_turn(ids[0]) == engine_turn(book, ids[0])

            direct = timed([lambda i=i: direct_turn(i) for i in ids])
            engine = timed([lambda i=i: engine_turn(book, i) for i in ids])
            service_sessions = [
                timed([lambda s=s, t=t: services.runtime.sessions.run(request(f"svc-{s}", ids[s * turns + t]),
                                                                        LOCAL_USER) for t in range(turns)])
                for s in range(sessions)
            ]
            tool_sessions = anyio.run(tool_turns, services, sessions, turns, ids)
        finally:
            services.close()
    service = [t for session in service_sessions for t in session]
    tool = [t for session in tool_sessions for t in session]
    base = statistics.median(direct)
    print(f"  {'layer':<8} {'turns/s':>10} {'ms/turn':>9} {'÷ direct':>10} {'÷ service':>10}")
    for label, took in (("direct", direct), ("engine", engine), ("service", service), ("tool", tool)):
        median = statistics.median(took)
        print(f"  {label:<8} {1 / median:>10,.0f} {median * 1000:>9.3f} {median / base:>10,.0f} "
              f"{median / statistics.median(service):>10.2f}")
    for label, per_session in (("service", service_sessions), ("tool", tool_sessions)):
        first = statistics.median(session[0] for session in per_session)
        for n in at:
            nth = statistics.median(session[n - 1] for session in per_session)
            print(f"  {label}: turn {n} ÷ turn 1 of a session = {nth / first:.2f}"
                  f"  ({nth * 1000:.2f} ms ÷ {first * 1000:.2f} ms)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--sessions", type=int, default=10, help="sessions per layer")
    parser.add_argument("--turns", type=int, default=200, help="turns per session")
    parser.add_argument("--at", default="50,200", help="the turns n to compare with turn 1 (comma-separated)")
    add_arguments(parser)
    args = parser.parse_args()
    at = sorted({int(n) for n in args.at.split(",") if n.strip()})
    if args.sessions < 1 or not at or at[0] < 1 or at[-1] > args.turns:
        parser.error(f"--sessions must be at least 1 and every n of --at between 1 and --turns ({args.turns})")
    for backend, url in each_backend(args):
        run(backend, url, args.sessions, args.turns, at)


if __name__ == "__main__":
    main()
