"""Every tool at /mcp, fuzzed from its own input schema against the demo workspace.

One copy of the demo store serves the module (loading the demo takes 20-60 s on a busy machine, so the run
loads it once and copies it); the calls go through a real MCP client, in process, and may change the store
as they like: the property holds in any state. For each tool, Hypothesis draws schema-valid arguments and hostile
variants of them (tests/security/fuzzing.py); every answer must be a success whose structuredContent matches the
tool's output schema, or a google.rpc ``CODE: message`` error other than INTERNAL, never a protocol error, a stack
trace or an exception's name; and the server must keep answering.
The run is derandomized and bounded, so it finds the same things every time, in under two minutes; set
CONVENER_FUZZ_EXAMPLES for a deeper search. What it found is kept in test_fuzz_findings.py.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import mcp_types as types
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from mcp import Client

from convener.auth.caller import Caller
from convener.auth.keys import ApiKeys
from convener.demo import APP
from convener.server import mcp_servers
from convener.services import Services
from tests.conftest import ALL_TOOLS, demo_services, serving
from tests.security.fuzzing import Pool, arguments, problem

pytestmark = pytest.mark.slow

EXAMPLES = int(os.environ.get("CONVENER_FUZZ_EXAMPLES", "12"))
"""Calls per tool (about 1100 in all); set CONVENER_FUZZ_EXAMPLES higher for a deeper search."""
RUNS_WORK = {"run_session", "run_evaluation", "simulate_scenario", "generate_evaluation", "ask_data_insights",
             "ask_data_agent", "ingest_documents", "import_adk_evaluations", "import_app"}
"""Tools that start work: fewer examples each, and operations they start are cancelled after each call."""
LOCATION = "projects/demo/locations/global"
ORDER = sorted(ALL_TOOLS, key=lambda tool: (tool.startswith(("delete_", "remove_")), tool == "delete_app"))
"""Deletions last, the demo app's last of all, so that the other tools meet the demo's resources."""
ANA = Caller("users/ana")
"""A person of the demo's chat, with every scope: the chat tools act as a user."""
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None, print_blob=False,
                phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
"""Derandomized, so the same calls every run; no shrinking, whose hundreds of calls would not fit the time."""


@dataclass
class Fuzz:
    """The demo store, a connected client on a portal's event loop, and what the fuzz draws from."""

    services: Services
    portal: BlockingPortal
    client: Client
    tools: dict[str, types.Tool]
    validators: dict[str, jsonschema.protocols.Validator]
    pool: Pool
    outcomes: Counter[tuple[str, str]] = field(default_factory=Counter)
    """(tool, "OK" or the error's code) → how many calls ended so."""

    def call(self, tool: str, arguments: dict[str, Any]) -> types.CallToolResult:
        result: types.CallToolResult = self.portal.call(
            lambda: self.client.call_tool(tool, arguments, read_timeout_seconds=60))
        return result

    def cancel_running(self) -> None:
        """Stop what a call started: the fuzz is about answers, not about long work."""
        listed = self.call("list_operations", {"name": LOCATION, "filter": "done=false", "pageSize": 1000})
        assert not listed.is_error, listed.content
        for operation in (listed.structured_content or {}).get("operations", []):
            self.call("cancel_operation", {"name": operation["name"]})

    def answers(self) -> bool:
        """Whether the server still answers a plain read (the fuzz may have deleted any one resource)."""
        result = self.call("list_apps", {"parent": LOCATION})
        return not result.is_error and problem(result, self.validators["list_apps"]) is None


LISTINGS: list[tuple[str, dict[str, Any]]] = [
    ("list_apps", {"parent": LOCATION}),
    *((tool, {"parent": str(APP)}) for tool in (
        "list_agents", "list_tools", "list_toolsets", "list_guardrails", "list_app_versions", "list_evaluations",
        "list_evaluation_datasets", "list_evaluation_expectations", "list_evaluation_personas",
        "list_evaluation_runs")),
    ("list_conversations", {"parent": str(APP), "pageSize": 3}),
    ("list_evaluation_results", {"parent": f"{APP}/evaluations/-", "pageSize": 3}),
    ("list_changelogs", {"parent": str(APP), "pageSize": 3}),
    ("list_operations", {"name": LOCATION, "pageSize": 2}),
    ("search_conversations", {"pageSize": 2}),
    ("list_data_sources", {}),
    ("search_documents", {"query": "import a Slack export", "pageSize": 2}),
    ("list_accessible_data_agents", {"page_size": 1}),
    ("list_sql_sources", {}),
    ("list_data_agent_conversations", {"page_size": 1}),
]
"""Calls whose answers fill the pool with real names and page tokens."""


@pytest.fixture(scope="module")
def fuzz(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fuzz]:
    directory: Path = tmp_path_factory.mktemp("fuzz")
    with demo_services("sqlite", directory) as services:
        server = mcp_servers(services, default_caller=ANA)["/mcp"]
        with start_blocking_portal(backend="asyncio") as portal, \
                portal.wrap_async_context_manager(Client(server)) as client:
            listed = portal.call(client.list_tools)
            tools = {tool.name: tool for tool in listed.tools}
            validators = {name: jsonschema.Draft202012Validator(tool.output_schema)
                          for name, tool in tools.items() if tool.output_schema is not None}
            found = Fuzz(services, portal, client, tools, validators, Pool())
            for tool, request in LISTINGS:
                result = found.call(tool, request)
                assert not result.is_error, (tool, result.content)
                found.pool.add(result.structured_content)
            for space in [name for name in found.pool.names if name.startswith("spaces/")][:3]:
                messages = found.call("list_messages", {"conversationId": space, "pageSize": 2})
                found.pool.add(messages.structured_content)
            found.pool.settle()
            yield found


def test_every_tool_is_fuzzed(fuzz: Fuzz) -> None:
    """The fuzz covers what the server serves: a new tool joins tests/conftest.py's ALL_TOOLS, and so the fuzz."""
    assert sorted(fuzz.tools) == sorted(ALL_TOOLS)
    assert all(tool.input_schema.get("type") == "object" for tool in fuzz.tools.values())


def test_the_pool_holds_real_names_and_tokens(fuzz: Fuzz) -> None:
    """Hostile names are bent from real ones, so the fuzz reaches past name parsing into the services."""
    prefixes = {name.split("/")[0] for name in fuzz.pool.names}
    assert {"projects", "spaces", "documents"} <= prefixes
    assert any("/conversations/" in name for name in fuzz.pool.names)
    assert fuzz.pool.tokens


@pytest.mark.parametrize("tool", ORDER)
def test_every_answer_is_a_result_or_a_google_rpc_error(fuzz: Fuzz, tool: str) -> None:
    schema = fuzz.tools[tool].input_schema
    validator = fuzz.validators.get(tool)
    problems: list[str] = []

    @settings(FUZZ, max_examples=EXAMPLES // 2 if tool in RUNS_WORK else EXAMPLES)
    @given(arguments(schema, fuzz.pool))
    def answers_well(request: dict[str, Any]) -> None:
        # Problems are collected rather than raised: every call of the run is reported, not only the first.
        try:
            result = fuzz.call(tool, request)
            fuzz.outcomes[tool, _outcome(result)] += 1
            found = problem(result, validator, request)
        except Exception as error:  # a JSON-RPC error, or the client refusing the answer
            found = f"the call failed: {type(error).__name__}: {str(error)[:500]}"
        finally:
            if tool in RUNS_WORK:
                fuzz.cancel_running()
        if found is not None:
            problems.append(f"{tool}({_short(request)}): {found}")

    answers_well()
    assert not problems, "\n".join(problems)
    assert fuzz.answers(), f"the server stopped answering after {tool} was fuzzed"


HTTP_TOOLS = ("list_conversations", "get_evaluation", "import_app", "run_session", "send_message",
              "search_messages", "answer_query", "ask_data_agent", "describe_sql_source", "wait_operation")
"""One or more tools of each service, fuzzed again over HTTP: there the arguments go through JSON decoding."""


@pytest.fixture(scope="module")
def http(fuzz: Fuzz) -> Iterator[tuple[str, str]]:
    """The same demo store served over HTTP on loopback, and a key for ana (every scope)."""
    _, key = ApiKeys(fuzz.services.database).create(ANA.principal)
    with serving(fuzz.services) as base_url:
        yield base_url, key


@pytest.mark.parametrize("tool", HTTP_TOOLS)
def test_over_http_every_answer_is_a_result_or_a_google_rpc_error(
    fuzz: Fuzz, http: tuple[str, str], tool: str
) -> None:
    """Raw JSON-RPC over HTTP: never a 5xx, always a JSON-RPC answer, and the same property for the result."""
    base_url, key = http
    validator = fuzz.validators.get(tool)
    problems: list[str] = []
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream",
               "authorization": f"Bearer {key}"}

    @settings(FUZZ, max_examples=max(EXAMPLES // 2, 4))
    @given(arguments(fuzz.tools[tool].input_schema, fuzz.pool),
           st.one_of(st.integers(0, 2 ** 53), st.text(max_size=20)))
    def answers_well(request: dict[str, Any], request_id: int | str) -> None:
        body = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                           "params": {"name": tool, "arguments": request}}, ensure_ascii=False)
        response = httpx.post(f"{base_url}/mcp", content=body.encode("utf-8", "surrogatepass"), headers=headers,
                              timeout=60)
        if tool in RUNS_WORK:
            fuzz.cancel_running()
        found: str | None
        if response.status_code >= 500:
            found = f"HTTP {response.status_code}: {response.text[:300]!r}"
        else:
            try:
                message = response.json()
            except ValueError:
                message = {}
            if "result" in message:
                found = problem(types.CallToolResult.model_validate(message["result"]), validator, request)
            elif "error" in message and isinstance(message["error"].get("code"), int):
                found = None if message["error"]["code"] < 0 and "Traceback" not in response.text else \
                    f"a JSON-RPC error that leaks: {response.text[:300]!r}"
            else:
                found = f"HTTP {response.status_code} without a JSON-RPC answer: {response.text[:300]!r}"
        if found is not None:
            problems.append(f"{tool}({_short(request)}): {found}")

    answers_well()
    assert not problems, "\n".join(problems)


def test_the_fuzz_reaches_past_the_door(fuzz: Fuzz) -> None:
    """Runs after the fuzz of every tool: the calls were not all refused at argument checking; many got
    answers, and many met the services' own checks (names, permissions, state)."""
    if len({tool for tool, _ in fuzz.outcomes}) < len(ALL_TOOLS):
        pytest.skip("runs after the whole fuzz")
    by_outcome: Counter[str] = Counter()
    for (_, outcome), count in fuzz.outcomes.items():
        by_outcome[outcome] += count
    answered = {tool for tool, outcome in fuzz.outcomes if outcome == "OK"}
    assert len(answered) >= len(ALL_TOOLS) // 3, sorted(set(ALL_TOOLS) - answered)
    deeper = sum(count for outcome, count in by_outcome.items() if outcome not in ("OK", "INVALID_ARGUMENT"))
    assert deeper >= 30, by_outcome


def _outcome(result: types.CallToolResult) -> str:
    if not result.is_error:
        return "OK"
    text = result.content[0].text if result.content and isinstance(result.content[0], types.TextContent) else ""
    return text.split(":", 1)[0][:40]


def _short(request: dict[str, Any]) -> str:
    text = json.dumps(request, ensure_ascii=True)
    return text if len(text) < 600 else text[:600] + f"… ({len(text)} characters)"
