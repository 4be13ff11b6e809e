"""Start-up: the CLI and each command import only what they use (see ``convener.cli`` and ``convener.services``).

Each case runs in a fresh interpreter and reads ``sys.modules`` after the command: which modules a process
imported is a fact, not a timing, so these checks cannot flake. ``benchmarks/startup.py`` measures the times.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest

from sqlalchemy import Connection

from convener.jobs.model import Attempt, ClaimedJob, Execute, Holding, Payload, QueuedJob, Task, Unrunnable
from convener.services import ServiceJobs

ROOT = Path(__file__).resolve().parents[1]
# Modules that cost from a tenth of a second to over a second to import, or that belong to one service alone.
HEAVY = ("sqlalchemy", "alembic", "pydantic_settings", "openai", "mcp", "mcp_types", "starlette", "uvicorn", "bs4",
         "duckdb", "numpy", "sqlglot", "convener.config", "convener.services", "convener.store", "convener.server",
         "convener.ces", "convener.chat", "convener.knowledge", "convener.analytics", "convener.llm", "httpx", "httpx2",
         "yaml", "convener.ces.checks", "convener.ces.bundles", "convener.ces.transfers", "convener.ces.runtime.openapi",
         "convener.ces.runtime.mcp_toolset", "anyio", "rich.progress")
# What writing or moving app definitions needs, calling OpenAPI or MCP tools or remote agents, relaying progress
# to an MCP client or drawing it on a terminal: playing evaluations of an app with none of those needs none of it.
NOT_FOR_PLAYING = {"httpx", "httpx2", "yaml", "convener.ces.checks", "convener.ces.bundles", "convener.ces.transfers",
                   "convener.ces.runtime.openapi", "convener.ces.runtime.mcp_toolset", "anyio", "rich.progress"}
APP = "projects/nowhere/locations/global/apps/none"

# Runs the command as ``python -m convener`` does, then prints the HEAVY modules it imported.
PROBE = """
import json, runpy, sys
heavy, arguments = json.loads(sys.argv[1])
sys.argv = ["convener", *arguments]
if arguments != ["--import-only"]:
    try:
        runpy.run_module("convener", run_name="__main__")
    except SystemExit:
        pass
else:
    import convener.cli
print(json.dumps(sorted(name for name in heavy if name in sys.modules)), file=sys.__stdout__)
"""


def imported(arguments: list[str], tmp_path: Path) -> set[str]:
    """The HEAVY modules a ``convener`` process with ``arguments`` imported."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("CONVENER_")}
    env.update(CONVENER_DATA_DIR=str(tmp_path / "data"), PYTHONPATH=str(ROOT / "src"))
    completed = subprocess.run([sys.executable, "-c", PROBE, json.dumps([HEAVY, arguments])], env=env, input="",
                               capture_output=True, text=True, timeout=120)
    assert completed.returncode == 0, completed.stderr[-2000:]
    return set(json.loads(completed.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize("arguments", [["--import-only"], ["--help"], ["eval", "--help"], ["chat", "--help"],
                                       ["data", "ask", "--help"], ["knowledge", "ingest", "--help"]])
def test_help_and_the_cli_module_import_nothing_heavy(arguments: list[str], tmp_path: Path) -> None:
    assert imported(arguments, tmp_path) == set()


def test_jobs_imports_the_store_and_the_queue_alone(tmp_path: Path) -> None:
    found = imported(["jobs"], tmp_path)
    assert {"sqlalchemy", "convener.store", "convener.services"} <= found  # the probe sees what a command uses
    assert not found & {"openai", "mcp", "bs4", "duckdb", "numpy", "sqlglot", "convener.server", "convener.chat",
                        "convener.knowledge", "convener.analytics"}


def test_eval_run_imports_no_server_chat_analytics_or_model_client(tmp_path: Path) -> None:
    found = imported(["eval", "run", "--app", APP], tmp_path)  # fails NOT_FOUND once the services are built
    assert "convener.ces" in found
    assert not found & {"openai", "mcp", "mcp_types", "duckdb", "sqlglot", "convener.server", "convener.chat",
                        "convener.analytics"}


def test_playing_a_golden_evaluation_imports_no_definition_checks_bundles_or_http_clients(tmp_path: Path) -> None:
    from convener.auth.caller import LOCAL_USER
    from convener.ces.evaluation.models import Evaluation
    from convener.config import Settings
    from convener.demo.loader import APP as DEMO, install_app
    from convener.services import Services

    services = Services.open(Settings(data_dir=tmp_path / "data"))
    try:
        install_app(services)
        orders = f"{DEMO}/agents/orders"
        golden = Evaluation.model_validate({"displayName": "Order status", "golden": {"turns": [{"steps": [
            {"userInput": {"text": "What's the status of order AC-1001?"}},
            {"expectation": {"agentTransfer": {"targetAgent": orders}}},
            {"expectation": {"toolCall": {"tool": f"{DEMO}/tools/lookup_order", "args": {"order_id": "AC-1001"}}}},
        ]}]}})
        services.runtime.evaluations.create_evaluation(str(DEMO), "status", golden, LOCAL_USER)
    finally:
        services.close()
    found = imported(["eval", "run", "--app", str(DEMO), "--evaluation", "status"], tmp_path)
    assert {"convener.ces", "sqlalchemy"} <= found  # the command reached the store and played the run
    assert not found & NOT_FOR_PLAYING


def test_terminal_chat_imports_no_analytics_knowledge_or_server(tmp_path: Path) -> None:
    found = imported(["chat", APP], tmp_path)  # the app does not exist: exit 2 once the services are built
    assert "convener.ces" in found
    assert not found & {"openai", "duckdb", "sqlglot", "bs4", "convener.server", "convener.knowledge",
                        "convener.analytics"}


# -- the job queue of services built on demand ------------------------------------------------------------


class Note(Payload):
    text: str


class Idle:
    """An engine that holds no jobs: ``ServiceJobs.execute`` is called directly."""

    def submit(self, connection: Connection, jobs: Sequence[QueuedJob]) -> None:
        raise AssertionError("nothing is submitted")

    def wake(self) -> None:
        pass

    def work(self, execute: Execute, *, worker: str, concurrency: int, queues: frozenset[str] | None,
             stopping: threading.Event) -> None:
        raise AssertionError("no worker runs")

    def holdings(self, limit: int) -> list[Holding]:
        return []

    def close(self) -> None:
        pass


def test_a_job_of_a_service_not_built_yet_builds_the_services_then_runs() -> None:
    ran: list[str] = []
    enlisted: list[int] = []
    task = Task(name="notes.write", queue="notes", payload=Note, run=lambda note, attempt: ran.append(note.text))

    def enlist() -> None:  # what Services does: build the services, which register their tasks
        enlisted.append(1)
        jobs.register(task)

    jobs = ServiceJobs(Idle(), lambda operation: False, enlist, concurrency=1, run_here=False)
    claimed = ClaimedJob("1", QueuedJob(task="notes.write", queue="notes", operation="operations/1",
                                        payload={"text": "hello"}), 1)
    jobs.execute(claimed, Attempt(1, "operations/1", jobs.worker))
    assert ran == ["hello"] and enlisted == [1]
    unknown = ClaimedJob("2", QueuedJob(task="gone.task", queue="notes", operation="operations/2", payload={}), 1)
    with pytest.raises(Unrunnable):  # a task no service defines is given back, and the services are built once
        jobs.execute(unknown, Attempt(1, "operations/2", jobs.worker))
    assert enlisted == [1] and jobs.queues == frozenset({"notes"})


def test_queues_name_the_tasks_of_every_service(tmp_path: Path) -> None:
    from convener.config import Settings
    from convener.services import Services

    services = Services.open(Settings(data_dir=tmp_path / "data", worker=False))
    try:
        assert {"evaluations", "ingests"} <= services.jobs.queues
    finally:
        services.close()
