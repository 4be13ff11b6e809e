"""Benchmark of evaluation runs played by ``convener worker`` processes: evaluations per second with 1, 2, 4 and 8
workers, and the speed-up over one.

Run from the repository root::

    .venv/bin/python benchmarks/workers.py [--evaluations 500] [--workers 1 2 4 8] [--concurrency 4]
        [--latency 0.2] [--backend sqlite|postgresql|both] [--postgres-url URL] [--jobs procrastinate|inline]

The app's root agent is an llm agent whose model is the scripted OpenAI-compatible server (tests/llm/fake_openai.py,
served by this process on a loopback port), which answers every call after ``--latency`` seconds, as a hosted
model does. Each golden evaluation is one turn: a user input, and the exact reply expected; with a model
configured, the turn's hallucination check asks it too (three samples), so an evaluation makes four calls. The run is queued by
this process, which runs no jobs, once the workers (``convener worker --concurrency C``, real processes) are up;
the time is from the queueing to the run's operation being done. One store (a fresh SQLite file, or the
PostgreSQL database given, in a schema of its own) serves every measurement, a run each. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from sqlalchemy import select

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the scripted model server and the process helpers live with the tests

from mcp import Client  # noqa: E402

from convener.auth.caller import LOCAL_USER  # noqa: E402
from convener.ces.tables import evaluation_results  # noqa: E402
from convener.config import Settings  # noqa: E402
from convener.server import mcp_servers  # noqa: E402
from convener.services import Services  # noqa: E402
from backends import add_arguments, each_backend  # noqa: E402
from tests.e2e.conftest import call_json  # noqa: E402
from tests.jobs.processes import environment, fleet  # noqa: E402
from tests.llm.fake_openai import FakeOpenAI, Reply  # noqa: E402

APP = "projects/bench/locations/global/apps/workers"
REPLY = "Your order is on its way."


def answer(body: dict[str, Any]) -> Reply:
    """The agent's reply, or a judge's verdict (with a model configured, golden turns are judged by it too)."""
    prompt = str(body["messages"][-1]["content"])
    if "justified by the CONTEXT" in prompt:
        return Reply(text='{"score": 1, "explanation": "every claim is in the context"}')
    if "score" in prompt:
        return Reply(text='{"score": 4, "explanation": "consistent"}')
    return Reply(text=REPLY)


async def build(services: Services, evaluations: int) -> list[str]:
    """The app (an llm agent at its root) and its golden evaluations; their names."""
    async with Client(mcp_servers(services)["/mcp"]) as client:
        parent, _, app_id = APP.rpartition("/apps/")
        await call_json(client, "create_app", {"parent": parent, "appId": app_id, "app": {"displayName": "Workers"}})
        await call_json(client, "create_agent", {"parent": APP, "agentId": "assistant", "agent": {
            "displayName": "Assistant", "instruction": "You help shoppers with their orders.", "llmAgent": {}}})
        await call_json(client, "update_app", {"app": {"name": APP, "rootAgent": f"{APP}/agents/assistant"},
                                               "updateMask": "rootAgent"})
        names = []
        for index in range(evaluations):
            await call_json(client, "create_evaluation", {"parent": APP, "evaluationId": f"e{index}", "evaluation": {
                "displayName": f"e{index}", "golden": {"turns": [{"steps": [
                    {"userInput": {"text": f"Where is my order AC-{index}?"}},
                    {"expectation": {"agentResponse": {"role": "agent", "chunks": [{"text": REPLY}]},
                                     "comparisonType": "EQUALS"}}]}]}}})
            names.append(f"{APP}/evaluations/e{index}")
        return names


async def queue(services: Services, names: list[str]) -> str:
    async with Client(mcp_servers(services)["/mcp"]) as client:
        operation = await call_json(client, "run_evaluation", {"app": APP, "evaluations": names})
        return str(operation["name"])


def measure(services: Services, names: list[str], model: FakeOpenAI, env: dict[str, str], workers: int,
            concurrency: int, latency: float, folder: Path) -> tuple[float, int, dict[str, Any]]:
    """Seconds to play a run of ``names`` on ``workers`` processes, the model calls made, and the run's progress."""
    model.reset()
    model.responder = answer
    for _ in range(len(names) * 10):  # every call waits ``latency`` (more queued than a run makes; reset drops the rest)
        model.delay(latency)
    with fleet(folder / f"workers-{workers}", env) as processes:
        started = [processes.worker("--concurrency", str(concurrency)) for _ in range(workers)]
        for process in started:
            processes.ready(process, timeout=120)
        begun = time.monotonic()
        operation = anyio.run(queue, services, names)
        done = services.operations.wait(operation, "3600s", LOCAL_USER)
        seconds = time.monotonic() - begun
        for process in started:
            processes.stop(process)
    if not done.done or done.error is not None:
        with services.database.reading() as connection:
            failed = connection.execute(select(evaluation_results.c.body).where(
                evaluation_results.c.execution_state == "ERROR").limit(1)).scalar()
        raise SystemExit(f"the run failed: {done.error}; a result's error: {(failed or {}).get('errorInfo')}")
    return seconds, len(model.requests), dict((done.metadata or {}).get("progress") or {})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--evaluations", type=int, default=500)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--concurrency", type=int, default=4, help="Jobs each worker runs at once.")
    parser.add_argument("--latency", type=float, default=0.2, help="Seconds the model takes per call.")
    parser.add_argument("--jobs", choices=["inline", "procrastinate"], default="procrastinate",
                        help="The job engine on PostgreSQL (SQLite runs inline).")
    add_arguments(parser)
    args = parser.parse_args()
    for backend, url in each_backend(args):
        run_on(backend, url, args.jobs if backend == "postgresql" else "inline", args)


def run_on(backend: str, url: str, jobs: str, args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as work, FakeOpenAI().running() as model:
        folder = Path(work)
        settings = Settings(data_dir=folder / "data", database_url=url, worker=False, jobs=jobs,
                            llm_provider="openai", llm_base_url=model.base_url, llm_model="fake-model",
                            llm_max_retries=0, llm_timeout_seconds=60)
        services = Services.open(settings)
        try:
            names = anyio.run(build, services, args.evaluations)
            env = environment(url, settings.data_dir, jobs, llm_provider="openai", llm_base_url=model.base_url,
                              llm_model="fake-model", llm_max_retries="0", llm_timeout_seconds="60",
                              knowledge_embeddings="off")
            print(f"\n{args.evaluations} golden evaluations (one turn each; every model call, the agent's and the "
                  f"judge's, takes {args.latency * 1000:.0f} ms), {backend}, jobs={jobs}, --concurrency "
                  f"{args.concurrency} per worker\n", flush=True)
            rows = []
            for workers in args.workers:
                seconds, calls, progress = measure(services, names, model, env, workers, args.concurrency,
                                                   args.latency, folder)
                rows.append((workers, seconds, calls, progress))
                print(f"  {workers} workers: {seconds:.1f} s, {calls / args.evaluations:.1f} model calls per "
                      f"evaluation, progress {progress}",
                      file=sys.stderr, flush=True)
        finally:
            services.close()
    base = args.evaluations / rows[0][1]
    print("| workers | jobs at once | seconds | evaluations/s | speed-up over 1 worker |")
    print("|---:|---:|---:|---:|---:|")
    for workers, seconds, _, _ in rows:
        rate = args.evaluations / seconds
        print(f"| {workers} | {workers * args.concurrency} | {seconds:.1f} | {rate:.1f} | {rate / base:.2f}x |")


if __name__ == "__main__":
    main()
