"""The guarantees of the jobs, checked with real processes on one store (SQLite, and PostgreSQL when configured),
on every job engine the store can run: ``convener worker`` and ``convener serve`` processes play evaluation runs
and ingests queued by this test's process, which runs no jobs itself; some are killed with SIGKILL mid-way.

What is checked each time is the end state in the store: every result settled exactly once (the run's counters
equal the results' states, and add up to the total), the operation done with the right response, no job left.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from sqlalchemy import func, select

from convener.auth.caller import LOCAL_USER
from convener.ces.tables import evaluation_results, evaluation_runs
from convener.knowledge.ingest import IngestPlan
from convener.knowledge.tables import documents
from convener.longrunning.models import Operation
from convener.server import mcp_servers
from convener.services import Services
from convener.store.database import AnyRow
from tests.ces.agents_under_test import CALLABLES
from tests.ces.evaluation.test_runs import _checker_app, said, user
from tests.ces.session_helpers import APP, runtime_settings, set_root, tool_name
from tests.conftest import BACKENDS, free_port, private_database
from tests.e2e.conftest import call_json
from tests.jobs.processes import Fleet, Process, engines_on, environment, fleet

STORES = [(backend, engine) for backend in BACKENDS for engine in engines_on(backend)]
"""Every store kind and job engine these tests run on: SQLite with leases; PostgreSQL with leases and
procrastinate (once it is there)."""


@dataclass
class Store:
    """A private store, this test's process on it (it queues work and runs none), and its processes' settings."""

    backend: str
    engine: str
    url: str
    services: Services
    tmp_path: Path

    def fleet_env(self, **settings: str) -> dict[str, str]:
        return environment(self.url, self.services.settings.data_dir, self.engine,
                           python_callables=",".join(CALLABLES), knowledge_embeddings="off", **settings)


@pytest.fixture(params=STORES, ids=[f"{backend}-{engine}" for backend, engine in STORES])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    backend, engine = request.param
    with opened_store(backend, engine, tmp_path) as opened:
        yield opened


class opened_store:  # noqa: N801 - a context manager used like a function
    def __init__(self, backend: str, engine: str, tmp_path: Path) -> None:
        self.backend, self.engine, self.tmp_path = backend, engine, tmp_path
        self._database = private_database(backend, tmp_path)

    def __enter__(self) -> Store:
        url = self._database.__enter__()
        roots = self.tmp_path / "knowledge"
        roots.mkdir(exist_ok=True)
        settings = runtime_settings(url, self.tmp_path, worker=False, jobs=self.engine, knowledge_roots=(roots,),
                                    knowledge_embeddings="off")
        self.store = Store(self.backend, self.engine, url, Services.open(settings), self.tmp_path)
        return self.store

    def __exit__(self, *exc: object) -> None:
        try:
            self.store.services.close()
        finally:
            self._database.__exit__(None, None, None)


# -- building and reading runs -------------------------------------------------------------------------------


def nap(seconds: float, turns: int = 1) -> list[list[dict[str, Any]]]:
    """A golden of ``turns`` turns in each of which the sleepy agent calls the slow tool for ``seconds``."""
    return [[user(str(seconds)), {"expectation": {"toolCall": {"tool": tool_name("slow"), "args": {"seconds": seconds}}}},
             said("awake")] for _ in range(turns)]


def queue_run(store: Store, goldens: int, seconds: float, turns: int = 1) -> str:
    """Build the sleepy app with ``goldens`` golden evaluations and run them all; the run's operation's name."""

    async def build() -> str:
        async with Client(mcp_servers(store.services)["/mcp"]) as client:
            await _checker_app(client)
            await set_root(client, "sleepy")
            names = []
            for index in range(goldens):
                names.append(f"{APP}/evaluations/nap-{index}")
                await call_json(client, "create_evaluation", {"parent": APP, "evaluationId": f"nap-{index}",
                                                              "evaluation": {"displayName": f"nap {index}", "golden": {
                                                                  "turns": [{"steps": steps}
                                                                            for steps in nap(seconds, turns)]}}})
            operation = await call_json(client, "run_evaluation", {"app": APP, "evaluations": names})
        return str(operation["name"])

    return anyio.run(build)


def results(store: Store) -> list[AnyRow]:
    with store.services.database.reading() as connection:
        return list(connection.execute(select(evaluation_results).order_by(evaluation_results.c.id)).all())


def run_row(store: Store, operation: str) -> AnyRow:
    with store.services.database.reading() as connection:
        return connection.execute(select(evaluation_runs).where(evaluation_runs.c.operation == operation)).one()


def operation_of(store: Store, name: str) -> Operation:
    return store.services.operations.get(name, LOCAL_USER)


def wait_until(condition: Any, timeout: float, what: str, interval: float = 0.05) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(interval)
    raise AssertionError(f"not within {timeout} s: {what}")


def no_jobs_left(store: Store, timeout: float) -> None:
    """The engine forgets every job of a finished run (a worker's last step after recording the outcome)."""
    wait_until(lambda: store.services.jobs.holdings() == [], timeout,
               f"jobs left: {store.services.jobs.holdings()}")


def assert_settled_once(store: Store, operation_name: str) -> AnyRow:
    """Every result of the run settled exactly once, the counters agree, and the operation says how it ended."""
    rows = results(store)
    run = run_row(store, operation_name)
    states = Counter(row.execution_state for row in rows)
    assert set(states) <= {"COMPLETED", "ERROR", "CANCELLED"}, states
    # Each outcome is counted into the run when it is recorded: one recorded twice would count twice.
    assert (run.completed_count, run.error_count, run.cancelled_count) == (
        states["COMPLETED"], states["ERROR"], states["CANCELLED"]), (run, states)
    assert run.completed_count + run.error_count + run.cancelled_count == len(rows)
    assert run.pending_count == 0
    assert run.passed_count == sum(1 for row in rows if row.evaluation_status == "PASS")
    for row in rows:
        if row.execution_state != "CANCELLED":  # a result cancelled while queued was never played
            assert row.attempts >= 1
        if row.execution_state == "COMPLETED":
            assert "goldenResult" in row.body, row.body
    operation = operation_of(store, operation_name)
    assert operation.done is True
    run_name = rows[0].evaluation_run
    if run.state == "COMPLETED":
        assert operation.error is None
        assert (operation.response or {}).get("evaluationRun") == run_name
    else:
        assert operation.response is None and operation.error is not None, operation
    progress = (operation.metadata or {})["progress"]
    assert progress["completedCount"] == run.completed_count and progress["totalCount"] == len(rows)
    return run


def holder(store: Store, processes: list[Process]) -> list[Process]:
    """The processes that hold a running job (a worker's name is host:pid:suffix)."""
    pids = {held.worker.split(":")[-2] for held in store.services.jobs.holdings()
            if held.state == "running" and held.worker}
    return [process for process in processes if str(process.pid) in pids]


# -- a. two workers share a run ------------------------------------------------------------------------------


@pytest.mark.slow
def test_two_workers_play_a_run_queued_elsewhere_each_result_once(store: Store) -> None:
    with fleet(store.tmp_path / "fleet", store.fleet_env(job_lease_seconds="5")) as processes:
        workers = [processes.worker("--concurrency", "2") for _ in range(2)]
        for worker in workers:
            processes.ready(worker)
        operation = queue_run(store, goldens=12, seconds=0.4)
        wait_until(lambda: operation_of(store, operation).done, 90, "the run to finish")
        run = assert_settled_once(store, operation)
        assert run.state == "COMPLETED" and run.completed_count == run.passed_count == 12
        assert [row.attempts for row in results(store)] == [1] * 12, "no result was played twice"
        no_jobs_left(store, 15)
        finished = [worker.finished_jobs() for worker in workers]
        assert sum(finished) == 12 and min(finished) > 0, f"jobs finished per worker: {finished}"


# -- b. seeded kill trials -----------------------------------------------------------------------------------

SEEDS = 20
"""Trials in all, at least: the seeds are shared among the stores (SQLite alone gets all 20; with PostgreSQL's two
engines beside it, each of the three gets 7), each trial a seed of its own."""
PER_STORE = -(-SEEDS // len(STORES))
TRIALS = [(backend, engine, index * PER_STORE + seed) for index, (backend, engine) in enumerate(STORES)
          for seed in range(PER_STORE)]


@pytest.mark.slow
@pytest.mark.parametrize(("backend", "engine", "seed"), TRIALS,
                         ids=[f"{backend}-{engine}-seed{seed}" for backend, engine, seed in TRIALS])
def test_kill_trial(backend: str, engine: str, seed: int, tmp_path: Path) -> None:
    """Workers and servers killed with SIGKILL at random points of a run, and replaced; the run ends with every
    result settled exactly once. The seed decides how many processes, of which kinds, how long a lease, and when
    and whom to kill (usually a process holding a result, sometimes any)."""
    rng = random.Random(seed)
    lease = rng.choice((1, 2))
    concurrency = rng.choice((1, 2))
    kills = rng.randint(1, 3)
    with opened_store(backend, engine, tmp_path) as store, \
            fleet(tmp_path / "fleet", store.fleet_env(job_lease_seconds=str(lease))) as processes:

        def start() -> Process:
            if rng.random() < 0.25:  # a server with a worker of its own
                return processes.serve(free_port(), "--worker")
            return processes.worker("--concurrency", str(concurrency))

        for _ in range(rng.choice((2, 3))):
            start()
        operation = queue_run(store, goldens=6, seconds=0.6)
        deadline = time.monotonic() + 60
        done = False
        while not done and kills and time.monotonic() < deadline:
            # Wait for a result to be under way, then a random moment more.
            while time.monotonic() < deadline and not (done := operation_of(store, operation).done):
                if holder(store, processes.live()):
                    break
                time.sleep(0.05)
            time.sleep(rng.uniform(0, 1.5 * lease))
            live = processes.live()
            holding = holder(store, live)
            victim = rng.choice(holding if holding and rng.random() < 0.75 else live)
            processes.kill(victim)
            kills -= 1
            start()
        wait_until(lambda: operation_of(store, operation).done, max(1.0, deadline - time.monotonic()),
                   f"the run to finish (seed {seed})", interval=0.1)
        assert_settled_once(store, operation)
        no_jobs_left(store, 3 * lease + 15)
        assert all(process.alive() for process in processes.processes if process.popen.returncode != -9)


# -- c. a process that starts and stops takes no live work --------------------------------------------------


@pytest.mark.slow
def test_a_process_starting_beside_a_live_worker_does_not_take_its_result(store: Store) -> None:
    # A lease of two seconds, renewed every third of it: a renewal late by more than a second under a loaded
    # machine's scheduling (it happened with one-second leases) is not a lost lease.
    with fleet(store.tmp_path / "fleet", store.fleet_env(job_lease_seconds="2")) as processes:
        first = processes.worker("--concurrency", "1")
        processes.ready(first)
        # Thirty turns of a second: live until cancelled, however long the other processes take to start.
        operation = queue_run(store, goldens=1, seconds=1, turns=30)
        wait_until(lambda: holder(store, [first]) == [first], 30, "the first worker to hold the result")
        # A server (with a worker of its own) and a second worker start, take part for a few leases, and stop.
        server = processes.serve(free_port(), "--worker")
        second = processes.worker("--concurrency", "2")
        for process in (server, second):
            processes.ready(process)
        time.sleep(4)  # two leases: time enough for a taker, had the first worker's lease not been renewed
        [row] = results(store)
        assert (row.execution_state, row.attempts) == ("RUNNING", 1)
        for process in (server, second):
            # uvicorn ends by raising the SIGTERM it caught again, once it has shut down
            assert processes.stop(process) in (0, -15), process.text()[-2000:]
            assert process.started_jobs() == 0, process.text()[-2000:]
        assert holder(store, processes.live()) == [first]
        store.services.operations.cancel(operation, LOCAL_USER)  # the first worker stops at its next turn
        wait_until(lambda: operation_of(store, operation).done, 60, "the run to finish")
        assert_settled_once(store, operation)
        [row] = results(store)
        assert (row.execution_state, row.attempts) == ("CANCELLED", 1), "played by the first worker alone, once"
        assert "stopped (its operation was cancelled)" in first.text()


# -- d. cancel reaches a worker in another process -------------------------------------------------------------


@pytest.mark.slow
def test_cancel_stops_queued_and_running_results_on_another_process(store: Store) -> None:
    with fleet(store.tmp_path / "fleet", store.fleet_env(job_lease_seconds="5")) as processes:
        worker = processes.worker("--concurrency", "2")
        processes.ready(worker)
        operation = queue_run(store, goldens=6, seconds=0.5, turns=4)
        wait_until(lambda: len(holder(store, [worker])) == 1 and any(
            row.execution_state == "RUNNING" for row in results(store)), 30, "the worker to play results")
        store.services.operations.cancel(operation, LOCAL_USER)
        done = store.services.operations.wait(operation, "10s", LOCAL_USER)
        assert done.done is True, "the run did not end within 10 s of its cancel"
        assert done.error is not None and done.error.code == 1
        run = assert_settled_once(store, operation)
        assert run.state == "CANCELLED" and run.cancelled_count >= 1
        assert {row.execution_state for row in results(store)} <= {"CANCELLED", "COMPLETED"}
        no_jobs_left(store, 15)
        assert "stopped (its operation was cancelled)" in worker.text(), worker.text()[-3000:]


# -- e. an ingest whose worker is killed is resumed by another ------------------------------------------------

FILES = 2000


@pytest.mark.slow
def test_an_ingest_killed_mid_way_is_resumed_by_another_worker(store: Store) -> None:
    folder = store.tmp_path / "knowledge" / "handbook"
    folder.mkdir(parents=True)
    for index in range(FILES):
        (folder / f"page-{index:04d}.md").write_text(
            f"# Page {index}\n\nThe handbook's page {index} says how returns of kind {index % 17} work.\n" * 3,
            encoding="utf-8")
    with fleet(store.tmp_path / "fleet", store.fleet_env(job_lease_seconds="1")) as processes:
        first = processes.worker("--queues", "ingests")
        processes.ready(first)
        operation = str(store.services.ingests.start(IngestPlan.make(folder), LOCAL_USER).name)

        def under_way() -> bool:
            current = operation_of(store, operation)
            assert not current.done, "the ingest finished before its worker could be killed; give it more files"
            return "progress" in (current.metadata or {})

        wait_until(under_way, 60, "the ingest to record progress")
        processes.kill(first)
        second = processes.worker("--queues", "ingests")
        wait_until(lambda: operation_of(store, operation).done, 90, "the resumed ingest to finish", interval=0.2)
        done = operation_of(store, operation)
        assert done.error is None, done.error
        response = done.response or {}
        assert response["filesSeen"] == FILES
        assert response.get("added", 0) + response.get("unchanged", 0) + response.get("updated", 0) == FILES
        assert response.get("unchanged", 0) > 0, "the second worker resumed: what the first wrote was kept"
        with store.services.database.reading() as connection:
            assert connection.execute(select(func.count()).select_from(documents)).scalar_one() == FILES
        no_jobs_left(store, 15)
        assert second.finished_jobs() == 1


# -- f. convener jobs names the worker that holds a job -------------------------------------------------------


@pytest.mark.slow
def test_convener_jobs_shows_which_worker_holds_a_running_job(store: Store) -> None:
    with fleet(store.tmp_path / "fleet", store.fleet_env(job_lease_seconds="5")) as processes:
        worker = processes.worker("--concurrency", "1")
        processes.ready(worker)
        # Thirty turns of a second each: running (and queued) until cancelled, however slow the machine.
        operation = queue_run(store, goldens=2, seconds=1, turns=30)
        wait_until(lambda: holder(store, [worker]) == [worker], 30, "the worker to hold a result")
        shown = processes.run("jobs")
        assert shown.returncode == 0, shown.stderr
        name = worker.worker()
        assert name is not None
        [running] = [line for line in shown.stdout.splitlines() if " running " in line]
        assert name in running and "ces.play_evaluation_result" in running, shown.stdout
        assert [line for line in shown.stdout.splitlines() if " queued " in line], "the second result waits"
        assert "2 unfinished jobs" in shown.stdout
        store.services.operations.cancel(operation, LOCAL_USER)
        wait_until(lambda: operation_of(store, operation).done, 30, "the cancelled run to end")

