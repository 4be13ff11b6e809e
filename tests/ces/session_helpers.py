"""Building apps and running sessions through the MCP tools, for the runtime's tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mcp import Client

from convener.config import Settings
from tests.ces.agents_under_test import CALLABLES
from tests.e2e.conftest import call_json

APP = "projects/acme/locations/global/apps/shop"
FIXTURES = "tests.ces.agents_under_test"


def runtime_settings(database_url: str, tmp_path: Path, **extra: Any) -> Settings:
    """Settings of a runtime test: a private store, and the test agents' functions registered by the operator."""
    return Settings(data_dir=tmp_path / "data", database_url=database_url,
                    **{"python_callables": CALLABLES, **extra})


def llm_settings(database_url: str, tmp_path: Path, base_url: str, **extra: Any) -> Settings:
    """Runtime settings with llm agents served by the scripted OpenAI-compatible fake at ``base_url``."""
    return runtime_settings(database_url, tmp_path, llm_provider="openai", llm_base_url=base_url,
                            llm_model="fake-model", llm_max_retries=0, llm_timeout_seconds=5, **extra)


def agent_name(agent_id: str, app: str = APP) -> str:
    return f"{app}/agents/{agent_id}"


def tool_name(tool_id: str, app: str = APP) -> str:
    return f"{app}/tools/{tool_id}"


async def make_app(client: Client, app: str = APP) -> None:
    parent, _, app_id = app.rpartition("/apps/")
    await call_json(client, "create_app", {"parent": parent, "appId": app_id, "app": {"displayName": "Shop"}})


async def python_tool(client: Client, tool_id: str, function: str, **extra: Any) -> dict[str, Any]:
    return await call_json(client, "create_tool", {
        "parent": APP, "toolId": tool_id,
        "tool": {"pythonFunction": {"entryPoint": f"{FIXTURES}:{function}"}, **extra},
    })


async def client_tool(client: Client, tool_id: str, function: str) -> dict[str, Any]:
    return await call_json(client, "create_tool", {
        "parent": APP, "toolId": tool_id,
        "tool": {"clientFunction": {"name": function, "description": "Asks the user's device.",
                                    "parameters": {"type": "OBJECT", "properties": {"question": {"type": "STRING"}}}}},
    })


async def agent(client: Client, agent_id: str, **definition: Any) -> dict[str, Any]:
    body = {"displayName": agent_id.title(), **definition}
    return await call_json(client, "create_agent", {"parent": APP, "agentId": agent_id, "agent": body})


async def set_root(client: Client, agent_id: str) -> None:
    await call_json(client, "update_app", {"app": {"name": APP, "rootAgent": agent_name(agent_id)},
                                           "updateMask": "rootAgent"})


async def run(client: Client, session: str, *inputs: dict[str, Any], **config: Any) -> dict[str, Any]:
    return await call_json(client, "run_session", {
        "config": {"session": f"{APP}/sessions/{session}", **config}, "inputs": list(inputs),
    })


def texts(response: dict[str, Any]) -> list[str]:
    return [output["text"] for output in response.get("outputs", []) if "text" in output]


def last(response: dict[str, Any]) -> dict[str, Any]:
    final: dict[str, Any] = response["outputs"][-1]
    assert final.get("turnCompleted") is True
    return final


def agent_chunks(response: dict[str, Any]) -> list[dict[str, Any]]:
    messages = last(response)["diagnosticInfo"]["messages"]
    return [chunk for message in messages if message["role"] == "agent" for chunk in message["chunks"]]


def span_names(span: dict[str, Any]) -> list[str]:
    """Names of a span tree, depth first."""
    return [span["name"], *[name for child in span.get("childSpans", []) for name in span_names(child)]]
