"""Fixtures shared by the whole suite.

Every store-backed test runs against SQLite and, when CONVENER_TEST_DATABASE_URL names a
PostgreSQL database, against PostgreSQL too: each test gets a store of its own, copied from one migrated
once per test process (``tests/stores.py``), and dropped after.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from mcp import Client
from mcp.client.session import ClientSession
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from starlette.types import ASGIApp

from convener.auth.keys import ApiKeys
from convener.config import Settings
from convener.demo import load_demo
from convener.server import build_app, mcp_servers
from convener.services import Services
from convener.store.database import normalise_url
from tests.stores import Templates, drop_shared

POSTGRES_URL = os.environ.get("CONVENER_TEST_DATABASE_URL")

# The suite calls every tool through /mcp, which serves the everyday toolsets unless told otherwise;
# tests/test_tool_surface.py names the setting explicitly where the default is what it checks.
os.environ["CONVENER_TOOLSETS"] = "all"
# The offline judge's similarity is read by words across the suite: its assertions were written for that
# reading, and loading the embedding model would cost every test process seconds. The tests of the
# embedding reading (tests/llm/test_similarity_embeddings.py and an evaluation run there) ask for it.
os.environ.setdefault("CONVENER_JUDGE_EMBEDDINGS", "off")

_COMPILED: dict[str, Any] = {}
_compile_validator = ClientSession._output_schema_validator


def _shared_validator(self: ClientSession, name: str, output_schema: dict[str, Any]) -> Any:
    """The MCP client checks a tool's output schema against the JSON Schema metaschema before compiling it,
    once per client: over a second for the evaluation tools' schemas. Tests make a client each, so the
    compiled validator of each distinct schema is shared by the whole run; every result is still
    validated against its tool's output schema."""
    known = self._tool_output_validators.get(name)
    if known is not None:
        return known
    key = json.dumps(output_schema, sort_keys=True)
    if key not in _COMPILED:
        _COMPILED[key] = _compile_validator(self, name, output_schema)
    self._tool_output_validators[name] = _COMPILED[key]
    return _COMPILED[key]


ClientSession._output_schema_validator = _shared_validator  # type: ignore[method-assign]

CES_TOOLS = (
    "list_conversations",
    "get_conversation",
    "delete_conversation",
    "create_app",
    "get_app",
    "list_apps",
    "update_app",
    "delete_app",
    *(f"{verb}_{kind}" for kind in ("agent", "tool", "toolset", "guardrail", "deployment")
      for verb in ("create", "get", "update", "delete")),
    "list_agents",
    "list_tools",
    "list_toolsets",
    "list_guardrails",
    "list_deployments",
    "create_app_version",
    "get_app_version",
    "list_app_versions",
    "delete_app_version",
    "run_session",
    "export_app",
    "import_app",
    "start_export_app",
    "start_import_app",
    *(f"{verb}_{kind}" for kind in ("evaluation", "evaluation_dataset", "evaluation_expectation", "evaluation_persona")
      for verb in ("create", "get", "update", "delete")),
    "list_evaluations",
    "list_evaluation_datasets",
    "list_evaluation_expectations",
    "list_evaluation_personas",
    "generate_evaluation",
    "import_adk_evaluations",
    "run_evaluation",
    "simulate_scenario",
    "get_evaluation_run",
    "list_evaluation_runs",
    "delete_evaluation_run",
    "get_evaluation_result",
    "list_evaluation_results",
    "delete_evaluation_result",
    "list_changelogs",
    "get_changelog",
    "get_operation",
    "list_operations",
    "cancel_operation",
    "delete_operation",
    "wait_operation",
)
"""The ces tools, named here once so that a tool added or lost shows in the tests."""
CHAT_TOOLS = ("list_messages", "search_messages", "search_conversations", "send_message", "list_memberships")
"""The chat tools, likewise."""
KNOWLEDGE_TOOLS = ("search_documents", "get_documents", "answer_query", "list_data_sources", "delete_documents",
                   "ingest_documents")
"""The knowledge tools, likewise."""
ANALYTICS_TOOLS = ("ask_data_insights", "list_accessible_data_agents", "get_data_agent_info", "ask_data_agent",
                   "create_data_agent", "update_data_agent", "delete_data_agent", "list_data_agent_conversations",
                   "list_data_agent_messages", "list_sql_sources", "describe_sql_source", "add_sql_source",
                   "remove_sql_source")
"""The analytics tools, likewise."""
ALL_TOOLS = CES_TOOLS + CHAT_TOOLS + KNOWLEDGE_TOOLS + ANALYTICS_TOOLS

BACKENDS = ["sqlite"] + (["postgresql"] if POSTGRES_URL else [])


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


TEMPLATES = Templates(POSTGRES_URL)
"""The template stores this test process copies."""


def _run_folder(config: pytest.Config) -> Path:
    """The temporary folder of the whole run: a pytest-xdist worker's own is inside the controller's."""
    basetemp = config._tmp_path_factory.getbasetemp()  # type: ignore[attr-defined]
    return Path(basetemp).parent if hasattr(config, "workerinput") else Path(basetemp)


@pytest.fixture(scope="session", autouse=True)
def _templates(request: pytest.FixtureRequest) -> Iterator[None]:
    TEMPLATES.share(_run_folder(request.config))
    yield
    TEMPLATES.close()


def pytest_sessionfinish(session: pytest.Session) -> None:
    """The process that started the run (the pytest-xdist controller, or the only process) ends last: it drops
    the PostgreSQL templates the run's processes shared."""
    if not hasattr(session.config, "workerinput"):
        drop_shared(POSTGRES_URL, _run_folder(session.config))


@contextmanager
def private_database(backend: str, directory: Path) -> Iterator[str]:
    """A fresh database of its own, already at the newest schema: a SQLite file in ``directory``, or a
    PostgreSQL database; copied from the process's migrated template."""
    with TEMPLATES.copy(TEMPLATES.template(backend, "migrated", None), directory) as url:
        yield url


@contextmanager
def demo_services(backend: str, directory: Path) -> Iterator[Services]:
    """The demo workspace in a private store whose data directory is ``directory/data``: a copy of the run's
    demo template, which ``load_demo`` filled once (it takes 20-60 s)."""
    with TEMPLATES.copy(TEMPLATES.template(backend, "demo", load_demo, shared=True), directory) as url:
        opened = Services.open(Settings(data_dir=directory / "data", database_url=url, allow_anonymous=False))
        try:
            yield opened
        finally:
            opened.close()


def demo_summary(backend: str) -> str:
    """What ``load_demo`` said when it filled the run's demo template of ``backend``: a first load."""
    return TEMPLATES.template(backend, "demo", load_demo, shared=True).result


@contextmanager
def empty_database(backend: str, directory: Path) -> Iterator[str]:
    """A fresh database with no tables, for tests of the migrations: a SQLite file in ``directory``, or a
    private schema in the test PostgreSQL."""
    if backend == "sqlite":
        yield f"sqlite:///{directory / 'convener.db'}"
        return
    assert POSTGRES_URL
    schema = f"t_{uuid.uuid4().hex[:12]}"
    admin = create_engine(normalise_url(POSTGRES_URL))
    with admin.begin() as connection:
        connection.execute(text(f'CREATE SCHEMA "{schema}"'))
    try:
        yield make_url(normalise_url(POSTGRES_URL)).update_query_dict(
            {"options": f"-csearch_path={schema}"}
        ).render_as_string(hide_password=False)
    finally:
        with admin.begin() as connection:
            connection.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


@pytest.fixture(params=BACKENDS)
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A private store at the newest schema."""
    with private_database(request.param, tmp_path) as url:
        yield url


@pytest.fixture(params=BACKENDS)
def empty_database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A private database that no migration has touched."""
    with empty_database(request.param, tmp_path) as url:
        yield url


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path / "data", database_url=database_url, allow_anonymous=False)


@pytest.fixture
def services(settings: Settings) -> Iterator[Services]:
    opened = Services.open(settings)
    yield opened
    opened.close()


@pytest.fixture
async def client(services: Services) -> AsyncIterator[Client]:
    """An MCP client connected in-process to /mcp (every enabled service), as the local user."""
    async with Client(mcp_servers(services)["/mcp"]) as connected:
        yield connected


def free_port() -> int:
    """A loopback port nothing listens on (now)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def serving_asgi(app: ASGIApp) -> Iterator[str]:
    """Any ASGI app under uvicorn on a free loopback port, in a thread, stopped on exit; yields its base URL."""
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", timeout_graceful_shutdown=2)
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    started = threading.Event()
    for _ in range(1000):
        if server.started:
            break
        started.wait(0.01)
    assert server.started, "uvicorn did not start"
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        assert not thread.is_alive(), "uvicorn did not stop"


@contextmanager
def serving(services: Services) -> Iterator[str]:
    """The real Convener ASGI app under uvicorn on a free loopback port, and stopped on exit."""
    with serving_asgi(build_app(services)) as url:
        yield url


@pytest.fixture
def http_server(services: Services) -> Iterator[str]:
    """The real ASGI app under uvicorn on a free loopback port; yields its base URL."""
    with serving(services) as url:
        yield url


@pytest.fixture
def api_key(services: Services) -> str:
    """A key for users/alice with every scope."""
    _, secret = ApiKeys(services.database).create("users/alice")
    return secret
