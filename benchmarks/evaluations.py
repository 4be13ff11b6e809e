"""Benchmark of evaluation runs against the demo agents, scored with the offline judges, at several degrees
of parallelism: golden evaluations of 5 turns, then scenario evaluations simulated by the offline user.

Run from the repository root::

    .venv/bin/python benchmarks/evaluations.py [--evaluations 1000] [--scenarios 500] [--parallelism 1 4 16]
        [--backend both]

Each evaluation replays STABLE (a fresh session per turn, the expected earlier turns as history) five
turns of the demo app: order lookups through its python tools, a shipping question, thanks. The baseline,
in the same run and on the same store, is the same turns played as plain ``SessionService`` turns, one
after the other with no evaluation around them: what the agents themselves cost. For each degree of
parallelism it reports evaluations per second, the run's cost per evaluation as a ratio of the baseline,
and how the workers' time divides between the agent (replay, including recording each turn) and scoring
(metrics and judges). ``--tool-latency`` makes the order lookup wait, as a tool behind a network does:
that is where running results in parallel pays.

Scenario evaluations ask where an order is and give its number when the agent asks for it (a user fact),
with a tool expectation on the lookup, a rubric and an agent-response expectation: two turns each. Their
baseline is the same two user inputs played as plain session turns; "agent" is then the simulation (the
agent's turns, the simulated user, milestone checks) and "scoring" the ScenarioResult's metrics and
judges. Nothing is asserted about timings.
"""

from __future__ import annotations

import argparse
import functools
import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from backends import add_arguments, each_backend

from convener.auth.caller import LOCAL_USER
from convener.ces.evaluation import executor as executor_module
from convener.ces.evaluation.models import Evaluation
from convener.ces.evaluation.requests import RunEvaluationRequest
from convener.ces.session_models import RunSessionRequest, SessionConfig, SessionInput
from convener.config import Settings
from convener.demo import tools as demo_tools
from convener.demo.loader import APP, install_app
from convener.services import Services

T = TypeVar("T")
ORDERS = [f"AC-10{n:02d}" for n in range(1, 11)]
_ORDER_DATA = json.loads((Path(demo_tools.__file__).parent / "orders.json").read_text(encoding="utf-8"))
STATUS_SAID = {"DELIVERED": "has been delivered", "SHIPPED": "is on its way", "PROCESSING": "is being processed",
               "CANCELLED": "has been cancelled"}
"""What the expected answer says of each demo order's status: the offline judge fails an answer that states
another status than the expected one, so the golden states the order's own."""
STATUS_OF = {order["id"]: STATUS_SAID[order["status"]] for order in _ORDER_DATA["orders"]}


def golden(index: int) -> dict[str, Any]:
    """Five turns, varied by the evaluation's index so that sessions differ."""
    order = ORDERS[index % len(ORDERS)]
    other = ORDERS[(index + 3) % len(ORDERS)]
    tool = f"{APP}/tools/lookup_order"

    def turn(text: str, *expectations: dict[str, Any]) -> dict[str, Any]:
        return {"steps": [{"userInput": {"text": text}}, *({"expectation": e} for e in expectations)]}

    return {"turns": [
        turn(f"Where is my order {order}?", {"toolCall": {"tool": tool, "args": {"order_id": order}}},
             {"agentResponse": {"role": "agent", "chunks": [{"text": f"Order {order} {STATUS_OF[order]}."}]}}),
        turn("Do you ship to Canada?", {"noToolCalls": True},
             {"agentResponse": {"role": "agent", "chunks": [{"text": "We ship to Canada in 5-8 business days for $12."}]}}),
        turn(f"And what about {other}?", {"toolCall": {"tool": tool, "args": {"order_id": other}}}),
        turn("what are your opening hours",
             {"agentResponse": {"role": "agent", "chunks": [{"text": "Monday to Friday, 9 am to 6 pm Eastern."}]}}),
        turn("thanks", {"agentResponse": {"role": "agent", "chunks": [{"text": "You're welcome!"}]}}),
    ]}


class Stopwatch:
    """Time spent inside wrapped functions, summed over every thread."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.lock = threading.Lock()

    def wrap(self, label: str, function: Callable[..., T]) -> Callable[..., T]:
        def timed(*args: Any, **kwargs: Any) -> T:
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                with self.lock:
                    self.seconds[label] = self.seconds.get(label, 0.0) + time.perf_counter() - started
        return timed


def scenario(index: int) -> dict[str, Any]:
    order = ORDERS[index % len(ORDERS)]
    return {
        "task": "You want to know where your order is and when it will arrive.",
        "userFacts": [{"name": "order_number", "value": order}],
        "maxTurns": 6,
        "rubrics": ['The agent names the order "' + order + '"'],
        "scenarioExpectations": [
            {"toolExpectation": {
                "expectedToolCall": {"tool": f"{APP}/tools/lookup_order", "args": {"order_id": order}},
                "mockToolResponse": {"tool": f"{APP}/tools/lookup_order",
                                     "response": {"output": demo_tools.lookup_order(order)}}}},
            {"agentResponse": {"role": "agent", "chunks": [{"text": f"Order {order}"}]}},
        ],
    }


def scenario_baseline(services: Services, count: int) -> float:
    """Seconds per scenario's worth of turns: its two user inputs played as plain session turns."""
    started = time.perf_counter()
    for index in range(count):
        session = f"{APP}/sessions/scenario-base-{index}"
        for text in ("I want to know where my order is and when it will arrive.", ORDERS[index % len(ORDERS)]):
            services.runtime.sessions.run_turn(RunSessionRequest(
                config=SessionConfig(session=session), inputs=[SessionInput(text=text)]), LOCAL_USER)
    return (time.perf_counter() - started) / count


def timed_run(data: Path, url: str, parallelism: int, names: list[str], watch: Stopwatch) -> float:
    """Seconds the run of ``names`` took, every result completed and passed (a failing result could be
    cheaper than a real one, and would make the figures flatter)."""
    services = Services.open(Settings(data_dir=data, database_url=url, worker_concurrency=parallelism))
    watch.seconds.clear()
    started = time.perf_counter()
    operation = services.runtime.evaluations.run(RunEvaluationRequest(app=str(APP), evaluations=names, run_count=1),
                                                 LOCAL_USER)
    done = services.runtime.operations.wait(operation.name or "", "600s", LOCAL_USER)
    elapsed = time.perf_counter() - started
    progress = (done.metadata or {}).get("progress", {})
    assert done.done and progress.get("completedCount") == len(names), done.to_json()
    assert progress.get("passedCount") == len(names), progress
    services.close()
    return elapsed


def row(backend: str, parallelism: int, count: int, elapsed: float, base: float, watch: Stopwatch) -> str:
    agent, scoring = watch.seconds.get("agent", 0.0), watch.seconds.get("scoring", 0.0)
    share = (agent + scoring) or 1.0
    return (f"| {backend} | {parallelism} | {count / elapsed:.1f} | {elapsed / count / base:.2f} | "
            f"{agent / share:.0%} | {scoring / share:.0%} |")


def baseline(services: Services, count: int) -> float:
    """Seconds per evaluation's worth of turns, played as plain session turns."""
    started = time.perf_counter()
    for index in range(count):
        for number, turn in enumerate(golden(index)["turns"]):
            text = turn["steps"][0]["userInput"]["text"]
            services.runtime.sessions.run_turn(RunSessionRequest(
                config=SessionConfig(session=f"{APP}/sessions/base-{index}-{number}"),
                inputs=[SessionInput(text=text)]), LOCAL_USER)
    return (time.perf_counter() - started) / count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--evaluations", type=int, default=1000)
    parser.add_argument("--scenarios", type=int, default=500)
    parser.add_argument("--parallelism", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--baseline-evaluations", type=int, default=100)
    parser.add_argument("--tool-latency", type=float, default=0.0,
                        help="Seconds each lookup_order call waits, as a tool behind a network would.")
    add_arguments(parser)
    args = parser.parse_args()
    if args.tool_latency:
        # Tools run by entry point, looked up in their module at each call: slow the demo's lookup down there.
        real_lookup = demo_tools.lookup_order

        @functools.wraps(real_lookup)  # the same name, module and signature, so it passes as the demo's tool
        def slow_lookup(order_id: str) -> dict[str, Any]:
            time.sleep(args.tool_latency)
            return real_lookup(order_id)

        demo_tools.lookup_order = slow_lookup  # type: ignore[assignment]
    watch = Stopwatch()
    # Instrument the two halves of a result's work where the executor calls them.
    executor_module.GoldenReplay.run = watch.wrap("agent", executor_module.GoldenReplay.run)  # type: ignore[method-assign]
    for name in ("score_turn", "score_golden_criteria", "evaluation_outcome", "score_scenario"):
        setattr(executor_module, name, watch.wrap("scoring", getattr(executor_module, name)))
    executor_module.ScenarioSimulator.run = watch.wrap(  # type: ignore[method-assign]
        "agent", executor_module.ScenarioSimulator.run)

    latency = f", lookup_order taking {args.tool_latency:g} s" if args.tool_latency else ""
    print(f"{args.evaluations} golden evaluations of 5 turns (STABLE, REAL tools{latency}, offline judges)")
    print("| backend | parallelism | evaluations/s | seconds per evaluation ÷ baseline | agent | scoring |")
    print("|---|---|---|---|---|---|")
    scenario_rows: list[str] = []
    for backend, url in each_backend(args):
        data = Path(f"/tmp/convener-bench-{backend}")
        setup = Services.open(Settings(data_dir=data, database_url=url))
        install_app(setup)
        for index in range(args.evaluations):
            setup.runtime.evaluations.create_evaluation(str(APP), f"e{index:05d}", Evaluation.model_validate(
                {"displayName": f"bench {index}", "golden": golden(index)}), LOCAL_USER)
        for index in range(args.scenarios):
            setup.runtime.evaluations.create_evaluation(str(APP), f"s{index:05d}", Evaluation.model_validate(
                {"displayName": f"scenario {index}", "scenario": scenario(index)}), LOCAL_USER)
        base = baseline(setup, args.baseline_evaluations)
        scenario_base = scenario_baseline(setup, args.baseline_evaluations)
        setup.close()
        names = [f"{APP}/evaluations/e{index:05d}" for index in range(args.evaluations)]
        print(f"| {backend} | baseline: plain turns, one at a time | {1 / base:.1f} | 1.00 | | |")
        for parallelism in args.parallelism:
            elapsed = timed_run(data, url, parallelism, names, watch)
            print(row(backend, parallelism, args.evaluations, elapsed, base, watch))
        if args.scenarios:  # printed after the golden table, measured while this backend's store exists
            scenario_names = [f"{APP}/evaluations/s{index:05d}" for index in range(args.scenarios)]
            scenario_rows.append(f"| {backend} | baseline: the same inputs as plain turns | {1 / scenario_base:.1f} "
                                 "| 1.00 | | |")
            for parallelism in args.parallelism:
                elapsed = timed_run(data, url, parallelism, scenario_names, watch)
                scenario_rows.append(row(backend, parallelism, args.scenarios, elapsed, scenario_base, watch))
    if scenario_rows:
        print(f"\n{args.scenarios} scenario evaluations of 2 simulated turns (offline user, offline judges)")
        print("| backend | parallelism | evaluations/s | seconds per evaluation ÷ baseline | simulation | scoring |")
        print("|---|---|---|---|---|---|")
        print("\n".join(scenario_rows))


if __name__ == "__main__":
    main()
