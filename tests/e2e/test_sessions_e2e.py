"""A playbook agent defined and run over the real transports: stdio (its own process) and HTTP with a key."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from convener.auth.caller import LOCAL_USER
from convener.ces.requests import GetConversationRequest
from convener.demo.tools import lookup_order
from convener.services import Services
from tests.e2e.conftest import CONVERSATION_VALIDATOR, assert_matches, call_json, mcp_http
from tests.e2e.test_stdio import CONVENER, DEADLINE

pytestmark = pytest.mark.anyio
APP = "projects/acme/locations/global/apps/counter"
ORDER = "AC-1001"


async def define_and_talk(client: Client, session: str) -> list[dict[str, Any]]:
    """Define a one-agent app over MCP and run two turns; returns the outputs of each turn."""
    parent, _, app_id = APP.rpartition("/apps/")
    await call_json(client, "create_app", {"parent": parent, "appId": app_id, "app": {"displayName": "Counter"}})
    await call_json(client, "create_tool", {"parent": APP, "toolId": "lookup", "tool": {
        "pythonFunction": {"entryPoint": "convener.demo.tools:lookup_order"}}})
    await call_json(client, "create_agent", {"parent": APP, "agentId": "clerk", "agent": {
        "displayName": "Clerk", "tools": [f"{APP}/tools/lookup"], "playbookAgent": {
            "intents": [{"name": "status", "patterns": [r"order (?P<id>AC-\d+)"], "steps": [
                {"callTool": {"tool": "lookup", "args": {"order_id": "{{ slots.id }}"}, "as": "o"}},
                {"reply": "{{ results.o.output.status }}"}]}],
            "fallback": [{"reply": "Which order?"}]}}})
    await call_json(client, "update_app", {"app": {"name": APP, "rootAgent": f"{APP}/agents/clerk"},
                                           "updateMask": "rootAgent"})
    outputs = []
    for text in ("hello", f"order {ORDER}"):
        response = await call_json(client, "run_session", {"config": {"session": f"{APP}/sessions/{session}"},
                                                           "inputs": [{"text": text}]})
        outputs.append(response["outputs"])
    return outputs


def check_recorded(services: Services, session: str, principal_outputs: list[list[dict[str, Any]]]) -> None:
    assert principal_outputs[0][0]["text"] == "Which order?"
    assert principal_outputs[1][0]["text"] == lookup_order(ORDER)["status"]
    recorded = services.conversations.get(GetConversationRequest(name=f"{APP}/conversations/{session}"), LOCAL_USER)
    body = recorded.to_json()
    assert_matches(CONVERSATION_VALIDATOR, body)
    assert body["turnCount"] == 2 and body["entryAgent"] == f"{APP}/agents/clerk"


@pytest.fixture
async def stdio_server(database_url: str, tmp_path: Path) -> AsyncIterator[Client]:
    parameters = StdioServerParameters(
        command=CONVENER,
        args=["serve", "--transport", "stdio", "--toolsets", "all", "--data-dir", str(tmp_path / "stdio"),
              "--database-url", database_url],
    )
    async with Client(parameters, read_timeout_seconds=DEADLINE) as client:
        yield client


@pytest.mark.slow
async def test_define_and_run_an_agent_over_stdio(stdio_server: Client, services: Services) -> None:
    check_recorded(services, "over-stdio", await define_and_talk(stdio_server, "over-stdio"))


async def test_define_and_run_an_agent_over_http(http_server: str, api_key: str, services: Services) -> None:
    async with mcp_http(http_server, api_key) as client:
        check_recorded(services, "over-http", await define_and_talk(client, "over-http"))
