"""Agents, tools and toolsets as resources: CRUD in CES's shapes, and definitions rejected when written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from convener.config import Settings
from tests.ces.session_helpers import (
    APP,
    FIXTURES,
    agent,
    agent_name,
    make_app,
    python_tool,
    runtime_settings,
    tool_name,
)
from tests.conftest import free_port
from tests.e2e.conftest import call_json, error_text

pytestmark = pytest.mark.anyio


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    return runtime_settings(database_url, tmp_path)


async def test_agent_crud_with_update_mask_and_etags(client: Client) -> None:
    await make_app(client)
    await python_tool(client, "lookup", "lookup_order")
    created = await agent(client, "a1", instruction="Be brief.", tools=[tool_name("lookup")])
    assert created["name"] == agent_name("a1") and created["etag"] and created["createTime"] == created["updateTime"]
    fetched = await call_json(client, "get_agent", {"name": agent_name("a1")})
    assert fetched == created
    updated = await call_json(client, "update_agent", {
        "agent": {"name": agent_name("a1"), "instruction": "Be kind.", "description": "ignored"},
        "updateMask": "instruction"})
    assert updated["instruction"] == "Be kind." and "description" not in updated
    assert updated["tools"] == [tool_name("lookup")], "fields outside the mask are kept"
    assert updated["etag"] != created["etag"]
    stale = {"agent": {"name": agent_name("a1"), "etag": created["etag"], "instruction": "x"},
             "updateMask": "instruction"}
    error_text(await client.call_tool("update_agent", stale), "ABORTED")
    cleared = await call_json(client, "update_agent", {"agent": {"name": agent_name("a1")}, "updateMask": "tools"})
    assert "tools" not in cleared
    switched = await call_json(client, "update_agent", {
        "agent": {"name": agent_name("a1"), "playbookAgent": {"fallback": [{"reply": "hi"}]}},
        "updateMask": "playbookAgent"})
    assert "playbookAgent" in switched and "llmAgent" not in switched
    error_text(await client.call_tool("delete_agent", {"name": agent_name("a1"), "etag": created["etag"]}),
               "ABORTED")
    await call_json(client, "delete_agent", {"name": agent_name("a1")})
    error_text(await client.call_tool("get_agent", {"name": agent_name("a1")}), "NOT_FOUND")


async def test_lists_page_by_id(client: Client) -> None:
    await make_app(client)
    for index in range(7):
        await agent(client, f"agent-{index}")
    names: list[str] = []
    token = None
    tokens: list[str] = []
    while True:
        page = await call_json(client, "list_agents", {"parent": APP, "pageSize": 3,
                                                       **({"pageToken": token} if token else {})})
        names += [a["name"] for a in page["agents"]]
        token = page.get("nextPageToken")
        if not token:
            break
        tokens.append(token)
    assert names == [agent_name(f"agent-{index}") for index in range(7)]
    replayed = await client.call_tool("list_tools", {"parent": APP, "pageToken": tokens[0]})
    assert "pageToken" in error_text(replayed, "INVALID_ARGUMENT"), "a token is bound to its query"


async def test_tools_derive_their_names_and_schemas(client: Client) -> None:
    await make_app(client)
    tool = await python_tool(client, "adder", "add")
    assert tool["displayName"] == "add"
    assert tool["pythonFunction"]["description"] == "Add two integers."
    assert tool["pythonFunction"]["name"] == "add"
    client_fn = await call_json(client, "create_tool", {"parent": APP, "toolId": "ask", "tool": {
        "clientFunction": {"name": "ask_device", "parameters": {"type": "OBJECT", "properties": {
            "q": {"type": "STRING"}}, "required": ["q"]}}}})
    assert client_fn["displayName"] == "ask_device"


HOSTILE_AGENTS: list[tuple[dict[str, Any], str]] = [
    ({"displayName": "x", "tools": [f"{APP}/tools/missing"]}, "agent.tools[0]"),
    ({"displayName": "x", "tools": ["projects/p/locations/l/apps/other/tools/t"]}, "agent.tools[0]"),
    ({"displayName": "x", "tools": ["not a name"]}, "agent.tools[0]"),
    ({"displayName": "x", "childAgents": [f"{APP}/agents/ghost"]}, "agent.childAgents[0]"),
    ({"displayName": "x", "toolsets": [{"toolset": f"{APP}/toolsets/none"}]}, "agent.toolsets[0].toolset"),
    ({}, "agent.displayName"),
    ({"displayName": "x", "pythonAgent": {"entryPoint": "no colon"}}, "agent.pythonAgent.entryPoint"),
    ({"displayName": "x", "remoteAgent": {"url": "ftp://example.com"}}, "agent.remoteAgent.url"),
    ({"displayName": "x", "remoteAgent": {"url": "http://example.com", "timeout": "0s"}}, "agent.remoteAgent.timeout"),
    ({"displayName": "x", "remoteDialogflowAgent": {"agent": "projects/p/locations/l/agents/a"}},
     "agent.remoteDialogflowAgent"),
    ({"displayName": "x", "playbookAgent": {"fallback": [{"reply": "{{ unclosed"}]}}, "agent.playbookAgent"),
    ({"displayName": "x", "playbookAgent": {"intents": [{"name": "i", "patterns": ["(a+)+$"], "steps": []}]}},
     "agent.playbookAgent"),
    ({"displayName": "x", "playbookAgent": {"intents": [{"name": "i", "keywords": ["k"],
                                                          "steps": [{"callTool": {"tool": "nope"}}]}]}},
     "not in agent.tools"),
    ({"displayName": "x", "playbookAgent": {"fallback": [{"transfer": "ghost"}]}}, "agent ghost"),
    ({"displayName": "x", "llmAgent": {}, "playbookAgent": {}}, "only one field of the union agent_type"),
    ({"displayName": "x", "unknownField": 1}, "unknownField"),
]


@pytest.mark.parametrize(("definition", "named"), HOSTILE_AGENTS)
async def test_hostile_agents_are_rejected_naming_the_field(client: Client, definition: dict[str, Any],
                                                            named: str) -> None:
    await make_app(client)
    result = await client.call_tool("create_agent", {"parent": APP, "agentId": "bad", "agent": definition})
    assert named in error_text(result, "INVALID_ARGUMENT")
    error_text(await client.call_tool("get_agent", {"name": agent_name("bad")}), "NOT_FOUND")


async def test_child_agent_cycles_are_rejected(client: Client) -> None:
    await make_app(client)
    await agent(client, "a")
    await agent(client, "b", childAgents=[agent_name("a")])
    result = await client.call_tool("update_agent", {
        "agent": {"name": agent_name("a"), "childAgents": [agent_name("b")]}, "updateMask": "childAgents"})
    assert "cycle: a -> b -> a" in error_text(result, "INVALID_ARGUMENT")
    itself = await client.call_tool("update_agent", {
        "agent": {"name": agent_name("a"), "childAgents": [agent_name("a")]}, "updateMask": "childAgents"})
    assert "cycle" in error_text(itself, "INVALID_ARGUMENT")


HOSTILE_TOOLS: list[tuple[dict[str, Any], str]] = [
    ({}, "tool needs one of"),
    ({"pythonFunction": {"pythonCode": "def f(): pass"}}, "tool.pythonFunction.pythonCode"),
    ({"clientFunction": {"name": "has space"}}, "tool.clientFunction.name"),
    ({"clientFunction": {"name": "f", "parameters": {"type": "OBJECT", "minimum": "high"}}},
     "tool.clientFunction"),
    ({"openApiTool": {"openApiSchema": "not: [an openapi"}}, "tool.openApiTool.openApiSchema"),
    ({"openApiTool": {"openApiSchema": f"http://127.0.0.1:{free_port()}/spec.json"}},
     "tool.openApiTool.openApiSchema"),
    ({"pythonFunction": {"entryPoint": f"{FIXTURES}:add"}, "timeout": "3600s"}, "tool.timeout"),
    ({"clientFunction": {"name": "f"}, "pythonFunction": {"entryPoint": f"{FIXTURES}:add"}}, "tool_type"),
]


UNREGISTERED: list[tuple[str, dict[str, Any], str]] = [
    ("create_agent", {"displayName": "x", "pythonAgent": {"entryPoint": "os:system"}}, "agent.pythonAgent.entryPoint"),
    ("create_agent", {"displayName": "x", "pythonAgent": {"entryPoint": f"{FIXTURES}:nothing_here"}},
     "agent.pythonAgent.entryPoint"),
    ("create_tool", {"pythonFunction": {"entryPoint": "subprocess:run"}}, "CONVENER_PYTHON_CALLABLES"),
    ("create_tool", {"pythonFunction": {"entryPoint": "convener.demo.analytics_data:build_demo_database"}},
     "tool.pythonFunction.entryPoint"),
]


@pytest.mark.parametrize(("tool", "definition", "named"), UNREGISTERED)
async def test_callables_that_are_not_registered_are_refused(client: Client, tool: str, definition: dict[str, Any],
                                                             named: str) -> None:
    await make_app(client)
    kind = "agent" if tool == "create_agent" else "tool"
    result = await client.call_tool(tool, {"parent": APP, f"{kind}Id": "bad", kind: definition})
    assert named in error_text(result, "PERMISSION_DENIED")


@pytest.mark.parametrize(("definition", "named"), HOSTILE_TOOLS)
async def test_hostile_tools_are_rejected_naming_the_field(client: Client, definition: dict[str, Any],
                                                           named: str) -> None:
    await make_app(client)
    result = await client.call_tool("create_tool", {"parent": APP, "toolId": "bad", "tool": definition})
    assert named in error_text(result, "INVALID_ARGUMENT")


@pytest.mark.parametrize(("definition", "code", "named"), [
    ({}, "INVALID_ARGUMENT", "toolset.mcpToolset"),
    ({"mcpToolset": {"serverAddress": "file:///etc/passwd"}}, "INVALID_ARGUMENT", "toolset.mcpToolset"),
    ({"mcpToolset": {"command": "/bin/sh", "args": ["-c", "echo hi"]}}, "PERMISSION_DENIED",
     "CONVENER_MCP_STDIO_COMMANDS"),
])
async def test_hostile_toolsets_are_rejected(client: Client, definition: dict[str, Any], code: str,
                                             named: str) -> None:
    await make_app(client)
    result = await client.call_tool("create_toolset", {"parent": APP, "toolsetId": "bad", "toolset": definition})
    assert named in error_text(result, code)


async def test_app_settings_are_checked(client: Client) -> None:
    await make_app(client)
    cases = [
        ({"rootAgent": agent_name("ghost")}, "rootAgent", "app.rootAgent"),
        ({"variableDeclarations": [{"name": "1bad"}]}, "variableDeclarations", "variableDeclarations[0].name"),
        ({"variableDeclarations": [{"name": "a"}, {"name": "a"}]}, "variableDeclarations", "declared twice"),
        ({"variableDeclarations": [{"name": "n", "schema": {"type": "INTEGER", "default": "x"}}]},
         "variableDeclarations", "schema.default"),
        ({"languageSettings": {"defaultLanguageCode": "not a tag!"}}, "languageSettings", "BCP-47"),
        ({"timeZoneSettings": {"timeZone": "Mars/Olympus"}}, "timeZoneSettings", "IANA"),
    ]
    for app, mask, named in cases:
        result = await client.call_tool("update_app", {"app": {"name": APP, **app}, "updateMask": mask})
        assert named in error_text(result, "INVALID_ARGUMENT")
    await agent(client, "root")
    updated = await call_json(client, "update_app", {"app": {
        "name": APP, "rootAgent": agent_name("root"),
        "variableDeclarations": [{"name": "tier", "description": "Customer tier",
                                  "schema": {"type": "STRING", "enum": ["gold", "silver"], "default": "silver"}}],
    }, "updateMask": "rootAgent,variableDeclarations"})
    assert updated["rootAgent"] == agent_name("root")
    assert updated["variableDeclarations"][0]["schema"]["default"] == "silver"
    assert updated["displayName"] == "Shop", "fields outside the mask are kept"
