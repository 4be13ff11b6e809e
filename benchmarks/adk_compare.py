"""Golden evaluations against Google ADK's AgentEvaluator on the same ADK evalset, and list_evaluations' page cost.

Run from the repository root (``make .venv-adk`` first; without it the ADK side is skipped, saying so)::

    .venv/bin/python benchmarks/adk_compare.py [--evaluations 200] [--warmup 20] [--backend both]
        [--list-evaluations 20] [--list-results 10 1000]

The evalset: ``--evaluations`` eval cases of one invocation each, "Where is my order AC-10nn?", one
``lookup_order`` tool use with its recorded response, and the demo agent's reply as the final response
(captured once from the demo app, so both sides expect what their agent says).

- **Convener**: the evalset imported with ``eval import-adk`` into the demo app, then played as a golden
  evaluation run (STABLE, the recorded tool responses as mocks, the offline judge), warm: a first run of
  ``--warmup`` evaluations in the same process, then the timed run of them all. Everything is recorded: each
  result, its session's conversation, the run's progress and the evaluations' aggregates.
- **ADK**: ``AgentEvaluator.evaluate_eval_set`` on a scripted agent (``benchmarks/adk/scripted_agent.py``: a
  ``before_model_callback`` asks for the tool, then replies), tool trajectory and ROUGE response match, one
  run, warmed up on ``--warmup`` cases in the same process. It stores nothing. It runs in ``.venv-adk`` (its
  dependencies pin openai<3, which Convener cannot use), as a subprocess.
- **Whole process**: ``convener eval run`` over the imported evaluations, as a fresh process, against
  ``python benchmarks/adk/run_adk.py`` over the evalset, imports included (both with their modules'
  bytecode compiled, as pip leaves an installed package).
- **list_evaluations**: the time of a page of ``--list-evaluations`` evaluations with 10 and with 1,000
  completed results each (copies of a played result, their aggregates rebuilt from them as the upgrade to
  the aggregates' table builds them): the page should cost the same.
- **A result completing**: counting a completed result into its evaluation's aggregates (part of the
  transaction that stores it) when the evaluation has had 1 and 1,000 runs (``--completion-runs``): the
  cost should stay the same.

Ratios: Convener's evaluations per second ÷ ADK's (≥ 1 is faster), and ADK's whole process time ÷ Convener's.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from backends import add_arguments, each_backend, median_ms
from sqlalchemy import insert, select, update

from convener.auth.caller import LOCAL_USER
from convener.ces.evaluation.requests import ListEvaluationsRequest, RunEvaluationRequest
from convener.ces.session_models import RunSessionRequest, SessionConfig, SessionInput
from convener.ces.tables import evaluation_results
from convener.config import Settings
from convener.demo import tools as demo_tools
from convener.demo.loader import APP, install_app
from convener.services import Services

ROOT = Path(__file__).resolve().parent.parent
ADK_PYTHON = ROOT / ".venv-adk" / "bin" / "python"
RUN_ADK = ROOT / "benchmarks" / "adk" / "run_adk.py"
ORDERS = [f"AC-10{n:02d}" for n in range(1, 11)]


def question(order: str) -> str:
    return f"Where is my order {order}?"


def demo_replies(services: Services) -> dict[str, str]:
    """What the demo agent answers about each order: the final responses the evalset expects."""
    replies = {}
    for order in ORDERS:
        turn = services.runtime.sessions.run_turn(RunSessionRequest(
            config=SessionConfig(session=f"{APP}/sessions/adk-reply-{order}"),
            inputs=[SessionInput(text=question(order))]), LOCAL_USER)
        replies[order] = "\n".join(output.text for output in turn.outputs if output.text)
    return replies


def evalset(count: int, replies: dict[str, str]) -> dict[str, Any]:
    """An ADK EvalSet (snake_case, as ``adk eval`` writes it): one invocation per case, a transfer to the orders
    agent and one tool call."""
    cases = []
    for index in range(count):
        order = ORDERS[index % len(ORDERS)]
        call_id = f"call-{index}"
        cases.append({
            "eval_id": f"order-{index:05d}",
            "conversation": [{
                "invocation_id": f"inv-{index}",
                "user_content": {"role": "user", "parts": [{"text": question(order)}]},
                "final_response": {"role": "model", "parts": [{"text": replies[order]}]},
                "intermediate_data": {
                    # The demo's triage agent hands the question to its orders agent, which an ADK agent does
                    # with its transfer_to_agent function: ADK's trajectory metric counts that call.
                    "tool_uses": [{"name": "transfer_to_agent", "args": {"agent_name": "orders"}},
                                  {"id": call_id, "name": "lookup_order", "args": {"order_id": order}}],
                    "tool_responses": [{"id": call_id, "name": "lookup_order",
                                        "response": demo_tools.lookup_order(order)}],
                    "intermediate_responses": [],
                },
            }],
            "session_input": {"app_name": "orders", "user_id": "bench", "state": {}},
        })
    return {"eval_set_id": "orders", "name": "orders", "description": "adk_compare", "eval_cases": cases}


def convener_warm(data: Path, url: str, names: list[str], warmup: int) -> tuple[float, float]:
    """(evaluations per second, CPU ms per evaluation) of the timed run, after a warm-up run in the process."""
    services = Services.open(Settings(data_dir=data, database_url=url))
    try:
        if warmup:
            play(services, names[:warmup])
        started, cpu = time.perf_counter(), time.process_time()
        play(services, names)
        elapsed, cpu_used = time.perf_counter() - started, time.process_time() - cpu
    finally:
        services.close()
    return len(names) / elapsed, cpu_used / len(names) * 1000


def play(services: Services, names: list[str]) -> None:
    operation = services.runtime.evaluations.run(RunEvaluationRequest(app=str(APP), evaluations=names, run_count=1),
                                                 LOCAL_USER)
    done = services.runtime.operations.wait(operation.name or "", "600s", LOCAL_USER)
    progress = (done.metadata or {}).get("progress", {})
    # A failing result could be cheaper than a real one, and would make the figures flatter.
    assert done.done and progress.get("passedCount") == len(names), progress


def convener_process(data: Path, url: str, names: list[str]) -> float:
    """Seconds of a fresh ``convener eval run`` process over the imported evaluations.

    Convener's modules are byte-compiled first, as pip compiles an installed package's (ADK's venv has its
    bytecode): an editable checkout run with PYTHONDONTWRITEBYTECODE would compile every module at every start."""
    import compileall

    import convener

    compileall.compile_dir(str(Path(convener.__file__).parent), quiet=2)
    command = [sys.executable, "-c", "from convener.cli import main; main()", "eval", "run", "--app", str(APP),
               "--data-dir", str(data), "--database-url", url]
    for name in names:
        command += ["--evaluation", name]
    started = time.perf_counter()
    finished = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "COLUMNS": "200"})
    elapsed = time.perf_counter() - started
    if finished.returncode != 0:
        raise SystemExit(f"convener eval run failed ({finished.returncode}):\n{finished.stdout[-2000:]}"
                         f"\n{finished.stderr[-2000:]}")
    return elapsed


def adk(python: Path, path: Path, warmup: int) -> tuple[dict[str, float], float]:
    """ADK's warm figures (run_adk.py after its warm-up) and the seconds of its whole process (no warm-up)."""
    warm, _ = run_adk(python, path, warmup)
    _, whole = run_adk(python, path, 0)
    return warm, whole


def run_adk(python: Path, path: Path, warmup: int) -> tuple[dict[str, float], float]:
    command = [str(python), str(RUN_ADK), str(path)] + (["--warmup", str(warmup)] if warmup else [])
    started = time.perf_counter()
    finished = subprocess.run(command, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if finished.returncode != 0:
        raise SystemExit(f"run_adk.py failed ({finished.returncode}):\n{finished.stderr[-3000:]}")
    return json.loads(finished.stdout.strip().splitlines()[-1]), elapsed


def list_page_ms(data: Path, url: str, evaluations: int, results: int, repeat: int) -> float:
    """Median ms of a list_evaluations page of ``evaluations`` evaluations having ``results`` results each."""
    from convener.ces.evaluation.aggregates import rebuild

    services = Services.open(Settings(data_dir=data, database_url=url))
    try:
        evaluations_service = services.runtime.evaluations
        # Named to sort after the imported evaluations, each size after the smaller: a page by name descending
        # is this size's evaluations.
        ids = [f"zz-lst{results:05d}-{index:03d}" for index in range(evaluations)]
        for evaluation_id in ids:
            evaluations_service.create_evaluation(str(APP), evaluation_id, template(services, evaluation_id),
                                                  LOCAL_USER)
        play(services, [f"{APP}/evaluations/{evaluation_id}" for evaluation_id in ids])
        with services.database.reading() as connection:
            played = connection.execute(select(evaluation_results).where(
                evaluation_results.c.evaluation_id.in_(ids))).all()
            rows = []
            for row in played:
                for copy in range(results - 1):
                    result_id = uuid.uuid4().hex[:16]
                    body = {**row.body, "name": row.body["name"].rsplit("/", 1)[0] + "/" + result_id}
                    rows.append({"app_pk": row.app_pk, "evaluation_id": row.evaluation_id, "result_id": result_id,
                                 "evaluation_run": row.evaluation_run, "create_time_us": row.create_time_us - copy - 1,
                                 "execution_state": row.execution_state, "evaluation_status": row.evaluation_status,
                                 "attempts": row.attempts, "body": body, "plan": row.plan})
        # Short transactions: the workers finishing the played jobs must not wait behind one long write.
        for start in range(0, len(rows), 2000):
            with services.database.transaction() as connection:
                connection.execute(insert(evaluation_results), rows[start:start + 2000])
        for row in played:
            with services.database.transaction() as connection:
                rebuild(connection, [(row.app_pk, row.evaluation_id)])
        if services.database.engine.dialect.name == "postgresql":  # as autovacuum would after such a bulk load
            with services.database.engine.connect() as connection:
                connection.execution_options(isolation_level="AUTOCOMMIT").exec_driver_sql(
                    "ANALYZE ces_evaluation_results")
        request = ListEvaluationsRequest(parent=str(APP), page_size=evaluations, order_by="name desc")
        page, _ = evaluations_service.list_evaluations(request, LOCAL_USER)
        assert len(page) == evaluations, len(page)
        first = next(e for e in page if e.name and e.name.endswith(ids[-1]))
        counts = first.aggregated_metrics.metrics_by_app_version[0] if first.aggregated_metrics and \
            first.aggregated_metrics.metrics_by_app_version else None
        assert counts is not None and counts.pass_count == results, counts
        return median_ms(lambda: evaluations_service.list_evaluations(request, LOCAL_USER), repeat)
    finally:
        services.close()


def completion_ms(data: Path, url: str, runs: int, repeat: int) -> float:
    """Median ms of counting a completed result into its evaluation's aggregates (the transaction a worker's
    completion adds them to) when the evaluation has had ``runs`` runs: it should not grow with them."""
    from convener.ces.evaluation import aggregates
    from convener.ces.tables import evaluation_aggregates

    services = Services.open(Settings(data_dir=data, database_url=url))
    try:
        with services.database.reading() as connection:
            row = connection.execute(select(evaluation_results).where(
                evaluation_results.c.evaluation_id == "order-00000",
                evaluation_results.c.execution_state == "COMPLETED").limit(1)).one()
        history = [[f"{row.evaluation_run}-{index:05d}", 1, [row.create_time_us - index, "earlier"]]
                   for index in range(runs)]
        with services.database.transaction() as connection:
            connection.execute(update(evaluation_aggregates).where(
                evaluation_aggregates.c.app_pk == row.app_pk,
                evaluation_aggregates.c.evaluation_id == row.evaluation_id).values(runs=history))

        def complete() -> None:
            with services.database.transaction() as connection:
                aggregates.result_completed(connection, row.app_pk, row.evaluation_id, row.body,
                                            (row.create_time_us, row.result_id))

        return median_ms(complete, repeat)
    finally:
        services.close()


def template(services: Services, display_name: str) -> Any:
    """The first imported ADK evaluation, as a model for the list benchmark's evaluations."""
    from convener.ces.evaluation.models import Evaluation

    found = services.runtime.evaluations.get_evaluation(f"{APP}/evaluations/order-00000", False, LOCAL_USER)
    return Evaluation.model_validate({"displayName": display_name, "golden": found.golden.to_json() if found.golden else {}})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--evaluations", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--list-evaluations", type=int, default=20)
    parser.add_argument("--list-results", type=int, nargs="+", default=[10, 1000])
    parser.add_argument("--list-repeat", type=int, default=20)
    parser.add_argument("--completion-runs", type=int, nargs="+", default=[1, 1000],
                        help="Earlier runs of an evaluation when one of its results completes (the cost should stay).")
    parser.add_argument("--adk-python", type=Path, default=ADK_PYTHON,
                        help="The python of the venv google-adk[eval] is installed in (make .venv-adk).")
    add_arguments(parser)
    args = parser.parse_args()
    have_adk = args.adk_python.exists()
    with tempfile.TemporaryDirectory() as scratch:
        evalset_path = Path(scratch) / "orders.evalset.json"
        print(f"{args.evaluations} golden evaluations, one invocation and one lookup_order call each "
              f"(an ADK evalset), warm after {args.warmup}")
        if not have_adk:
            print(f"ADK side skipped: {args.adk_python} does not exist (`make .venv-adk/.installed` installs "
                  "google-adk[eval] in .venv-adk)")
        print("| backend | Convener evaluations/s | Convener CPU ms/evaluation | ADK evaluations/s | "
              "ADK CPU ms/evaluation | Convener ÷ ADK (evaluations/s) | `convener eval run` s | "
              "`python run_adk.py` s | ADK process ÷ Convener process |")
        print("|---|---|---|---|---|---|---|---|---|")
        list_rows: list[str] = []
        completion_rows: list[str] = []
        adk_figures: tuple[dict[str, float], float] | None = None
        for backend, url in each_backend(args):
            data = Path(scratch) / backend
            services = Services.open(Settings(data_dir=data, database_url=url))
            install_app(services)
            if not evalset_path.exists():
                evalset_path.write_text(json.dumps(evalset(args.evaluations, demo_replies(services))), "utf-8")
            created = services.runtime.evaluations.import_adk(str(APP), evalset_path.read_text("utf-8"),
                                                              evalset_path.name, LOCAL_USER).evaluations
            services.close()
            names = [evaluation.name or "" for evaluation in created]
            rate, cpu_ms = convener_warm(data, url, names, args.warmup)
            process = convener_process(data, url, names)
            if have_adk and adk_figures is None:  # ADK stores nothing: one measure serves both rows
                adk_figures = adk(args.adk_python, evalset_path, args.warmup)
            if adk_figures is not None:
                warm, adk_process = adk_figures
                adk_rate = warm["evaluations"] / warm["seconds"]
                adk_cpu = warm["cpu_seconds"] / warm["evaluations"] * 1000
                print(f"| {backend} | {rate:.1f} | {cpu_ms:.2f} | {adk_rate:.1f} | {adk_cpu:.2f} | "
                      f"{rate / adk_rate:.2f}× | {process:.2f} | {adk_process:.2f} | {adk_process / process:.2f}× |")
            else:
                print(f"| {backend} | {rate:.1f} | {cpu_ms:.2f} | skipped | skipped | skipped | {process:.2f} | "
                      "skipped | skipped |")
            completions = {runs: completion_ms(data, url, runs, args.list_repeat) for runs in args.completion_runs}
            fewest = completions[min(completions)]
            for runs, ms in completions.items():
                completion_rows.append(f"| {backend} | {runs} | {ms:.2f} | {ms / fewest:.2f} |")
            pages = {results: list_page_ms(data, url, args.list_evaluations, results, args.list_repeat)
                     for results in args.list_results}
            smallest = pages[min(pages)]
            for results, ms in pages.items():
                list_rows.append(f"| {backend} | {results} | {ms:.2f} | {ms / smallest:.2f} |")
        print(f"\nlist_evaluations, a page of {args.list_evaluations} evaluations (aggregates, datasets, runs)")
        print(f"| backend | results per evaluation | page ms | ÷ {min(args.list_results)} results |")
        print("|---|---|---|---|")
        print("\n".join(list_rows))
        print("\nA result completing: counted into its evaluation's aggregates, after that many runs of the evaluation")
        print(f"| backend | earlier runs | ms | ÷ {min(args.completion_runs)} run |")
        print("|---|---|---|---|")
        print("\n".join(completion_rows))


if __name__ == "__main__":
    main()
