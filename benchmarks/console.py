"""Benchmark of the console's conversation page: a conversation of 500 turns, server side.

Run from the repository root::

    .venv/bin/python benchmarks/console.py [--turns 500] [--results 10000] [--evaluations 500]
        [--run-results 100] [--repeat 15]

Records one conversation of ``--turns`` turns (each a question, a tool call and its response, an answer and a
span tree of four spans) in a fresh SQLite store, then times, each the median of ``--repeat`` runs:

* floor   - ``get_conversation``'s handler, as the MCP tool runs it (read and validate the conversation);
* page    - ``GET /console/<conversation>`` through Starlette's test client: the same tool call through the
            console's access check, the transcript and waterfall built, the template rendered, the HTML sent.

``page/floor`` is what the console adds over reading the conversation at all. The page shows the turns a
hundred at a time (``?turn=N`` opens the page holding turn N), so its first page is timed.

Then the evaluation pages, on the demo app with ``--evaluations`` evaluations, one of which has ``--results``
results: one run of up to 100 results is run for real (offline judges), and copied at the store into as many
runs as make up the count, its aggregates rebuilt as migration 0010 does (a store that ran it that often holds
the same rows). Each page against its floor: the tool calls it makes (recorded as it is served), their
handlers called directly one after the other:

* evaluation - ``/console/<evaluation>``: its definition, metrics by app version, trend of the last ten and a
               page of its results (``get_evaluation`` with ``lastTenResults``, ``list_evaluation_results``);
* results    - the same page at its results past the newest half (a keyset token, not an offset);
* run        - ``/console/<run>``: its summaries, a page of its results, the app's other runs to compare with
               and the display names of the evaluations shown;
* compare    - ``/console/<run>/compare?with=<other>``: the newest run against the one before it.

Run on SQLite, in a fresh data directory (the conversation page's cost is the console's, not the engine's).

The issue's bar is a page in under a second server side; the ratio is what to compare across machines.
Nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sqlalchemy import insert, select  # noqa: E402
from starlette.testclient import TestClient  # noqa: E402

from convener.api.protojson import Timestamp  # noqa: E402
from convener.auth.caller import LOCAL_USER, Caller  # noqa: E402
from convener.ces.evaluation import aggregates  # noqa: E402
from convener.ces.evaluation.models import Evaluation  # noqa: E402
from convener.ces.evaluation.requests import RunEvaluationRequest  # noqa: E402
from convener.ces.tables import evaluation_results, evaluation_runs  # noqa: E402
from convener.auth.keys import ApiKeys  # noqa: E402
from convener.ces.requests import GetConversationRequest  # noqa: E402
from convener.config import Settings  # noqa: E402
from convener.console.access import ConsoleTools  # noqa: E402
from convener.console.present import TURNS_PER_PAGE  # noqa: E402
from convener.demo.loader import install_app  # noqa: E402
from convener.server import build_app  # noqa: E402
from convener.services import Services  # noqa: E402
from convener.tooling import parse_arguments  # noqa: E402
from tests.console.recorded import APP, long_conversation, record  # noqa: E402

sys.path.insert(0, str(ROOT / "benchmarks"))
from evaluations import golden  # noqa: E402

EVALUATION = f"{APP}/evaluations/bench"
RUN_RESULTS = 100
"""Results of the run made for real (the most one run may repeat an evaluation); the rest are its copies."""


def median_ms(action: Callable[[], object], repeat: int) -> float:
    action()  # warm: templates compiled, caches filled
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def evaluation_with_results(services: Services, results: int, evaluations: int,
                            run_results: int = RUN_RESULTS) -> list[str]:
    """The demo app with ``evaluations`` evaluations, ``EVALUATION`` having ``results`` results in runs of
    ``run_results``; the runs' names, newest (the one run for real) first."""
    install_app(services)
    service = services.runtime.evaluations
    service.create_evaluation(APP, "bench", Evaluation.model_validate(
        {"displayName": "bench", "golden": golden(0)}), LOCAL_USER)
    for index in range(1, evaluations):
        service.create_evaluation(APP, f"other-{index:05d}", Evaluation.model_validate(
            {"displayName": f"other {index}", "golden": golden(index)}), LOCAL_USER)
    per_run = max(1, min(run_results, results, RUN_RESULTS))
    operation = service.run(RunEvaluationRequest(app=APP, evaluations=[EVALUATION], run_count=per_run), LOCAL_USER)
    done = services.runtime.operations.wait(operation.name or "", "900s", LOCAL_USER)
    real = str((done.metadata or {})["evaluationRun"])
    runs = [real]
    with services.database.reading() as connection:
        run_row = connection.execute(select(evaluation_runs).where(
            evaluation_runs.c.run_id == real.rsplit("/", 1)[-1])).one()._asdict()
        rows = [row._asdict() for row in connection.execute(select(evaluation_results).where(
            evaluation_results.c.evaluation_run == real)).all()]
    made = len(rows)
    while made < results:
        # A transaction a copy, so that the run's last jobs, settling as the copies are made, wait for none long.
        shift = len(runs) * 3_600_000_000  # each copy an hour older than the one before
        run_id = uuid.uuid4().hex[:16]
        run_name = f"{APP}/evaluationRuns/{run_id}"
        copies: list[dict[str, Any]] = []
        for row in rows[:results - made]:
            result_id = uuid.uuid4().hex[:16]
            created = row["create_time_us"] - shift
            body = {**row["body"], "name": f"{EVALUATION}/results/{result_id}", "evaluationRun": run_name,
                    "createTime": str(Timestamp.from_micros(created))}
            copies.append({**{key: value for key, value in row.items() if key != "id"}, "result_id": result_id,
                           "evaluation_run": run_name, "create_time_us": created, "body": body})
        run_body = {**run_row["body"], "name": run_name, "evaluationResults": [c["body"]["name"] for c in copies],
                    "createTime": str(Timestamp.from_micros(run_row["create_time_us"] - shift))}
        with services.database.transaction() as connection:
            connection.execute(insert(evaluation_runs).values(
                {**{key: value for key, value in run_row.items() if key != "id"}, "run_id": run_id,
                 "create_time_us": run_row["create_time_us"] - shift, "body": run_body}))
            connection.execute(insert(evaluation_results), copies)
        runs.append(run_name)
        made += len(copies)
    with services.database.transaction() as connection:
        aggregates.rebuild(connection, [(run_row["app_pk"], "bench")])
    return runs


def calls_of(client: TestClient, path: str) -> list[tuple[str, dict[str, Any]]]:
    """The tool calls the console makes to serve ``path``, in order, with their arguments."""
    made: list[tuple[str, dict[str, Any]]] = []
    original = ConsoleTools.call

    async def recording(self: ConsoleTools, name: str, arguments: dict[str, Any], caller: Caller,
                        response: type[Any]) -> Any:
        made.append((name, dict(arguments)))
        return await original(self, name, arguments, caller, response)

    ConsoleTools.call = recording  # type: ignore[method-assign]
    try:
        assert client.get(path).status_code == 200
    finally:
        ConsoleTools.call = original  # type: ignore[method-assign]
    return made


def time_evaluation_pages(services: Services, client: TestClient, caller: Caller, runs: list[str], results: int,
                          repeat: int) -> None:
    """Each page against its floor: the same tool calls it makes, their handlers called directly, one after
    the other (what the page cannot do without)."""
    tools = {name: spec for registry in services.registries().values() for name, spec in registry.tools.items()}

    def floor(calls: list[tuple[str, dict[str, Any]]]) -> Callable[[], object]:
        requests = [(tools[name], parse_arguments(tools[name], arguments)) for name, arguments in calls]
        return lambda: [spec.handler(request, caller) for spec, request in requests]

    def halfway(path: str, results: int) -> str:
        """The evaluation page at its results past the newest half: a page token from the tool, asked for
        that many in pages of at most 500 (the tokens are bound to the query and the caller, not the size)."""
        spec, token, skipped = tools["list_evaluation_results"], "", 0
        while skipped < results // 2:
            size = min(500, results // 2 - skipped)
            arguments: dict[str, Any] = {"parent": EVALUATION, "pageSize": size, **({"pageToken": token} if token else {})}
            token = spec.handler(parse_arguments(spec, arguments), caller).next_page_token or ""
            skipped += size
        assert token, "too few results to page"
        return f"{path}?{urlencode({'pageToken': token})}"

    page_path = f"/console/{EVALUATION}"
    cases = [("evaluation", page_path), ("results, halfway", halfway(page_path, results)),
             ("run", f"/console/{runs[0]}")]
    if len(runs) > 1:
        cases.append(("compare", f"/console/{runs[0]}/compare?with={runs[1].rsplit('/', 1)[-1]}"))
    print(f"{'page':>20} {'calls':>6} {'floor ms':>9} {'page ms':>9} {'page/floor':>11} {'HTML KB':>8}")
    for label, path in cases:
        page = client.get(path)
        assert page.status_code == 200, (path, page.text[:500])
        calls = calls_of(client, path)
        cost = median_ms(floor(calls), repeat)
        rendered = median_ms(lambda: client.get(path), repeat)
        print(f"{label:>20} {len(calls):>6} {cost:>9.1f} {rendered:>9.1f} {rendered / cost:>11.2f} "
              f"{len(page.content) / 1024:>8.0f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=500)
    parser.add_argument("--results", type=int, default=10_000)
    parser.add_argument("--evaluations", type=int, default=500)
    parser.add_argument("--run-results", type=int, default=RUN_RESULTS,
                        help="results of each run (the first run for real, the others copies of it)")
    parser.add_argument("--repeat", type=int, default=15)
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        services = Services.open(Settings(data_dir=Path(folder), allow_anonymous=False))
        try:
            record(services, long_conversation("long", arguments.turns), long_conversation("short", 20))
            key = ApiKeys(services.database).create("users/bench")[1]
            client = TestClient(build_app(services), base_url="http://127.0.0.1:8080", client=("127.0.0.1", 5000),
                                headers={"authorization": f"Bearer {key}"})
            print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}; {arguments.repeat} runs each, median")
            print(f"{'turns':>6} {'floor ms':>9} {'page ms':>9} {'page/floor':>11} {'HTML KB':>8}")
            for conversation, turns in (("short", 20), ("long", arguments.turns)):
                name = f"{APP}/conversations/{conversation}"
                handler = services.conversations.get
                floor = median_ms(lambda: handler(GetConversationRequest(name=name), LOCAL_USER), arguments.repeat)
                page = client.get(f"/console/{name}")
                assert page.status_code == 200, page.text[:500]
                assert page.text.count('class="turn"') == min(turns, TURNS_PER_PAGE)
                rendered = median_ms(lambda: client.get(f"/console/{name}"), arguments.repeat)
                print(f"{turns:>6} {floor:>9.1f} {rendered:>9.1f} {rendered / floor:>11.2f} {len(page.content) / 1024:>8.0f}")
            started = time.perf_counter()
            runs = evaluation_with_results(services, arguments.results, arguments.evaluations,
                                           arguments.run_results)
            print(f"\nan evaluation of {arguments.results} results in {len(runs)} runs, among {arguments.evaluations} "
                  f"evaluations (built in {time.perf_counter() - started:.0f} s); "
                  f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}")
            time_evaluation_pages(services, client, ApiKeys(services.database).caller(key) or LOCAL_USER, runs,
                                  arguments.results, arguments.repeat)
        finally:
            services.close()


if __name__ == "__main__":
    main()
