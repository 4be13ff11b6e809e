"""Apps as YAML: export, import (all or nothing), and the CLI commands and chat."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml
from mcp import Client
from typer.testing import CliRunner

from convener.cli import app as cli
from convener.config import Settings
from tests.ces.agents_under_test import CALLABLES, ORDERS
from tests.ces.session_helpers import (
    APP,
    FIXTURES,
    agent,
    agent_name,
    client_tool,
    make_app,
    python_tool,
    run,
    runtime_settings,
    set_root,
    tool_name,
)
from tests.e2e.conftest import call_json, error_text

pytestmark = pytest.mark.anyio
PARENT = "projects/acme/locations/global"
COPY = f"{PARENT}/apps/copy"
TRIAGE = {"intents": [
    {"name": "status", "patterns": [r"order (?P<order_id>[A-Z]-\d)"], "steps": [
        {"callTool": {"tool": "lookup", "args": {"order_id": "{{ slots.order_id }}"}, "as": "o"}},
        {"reply": "{{ results.o.output.status }}"}]},
    {"name": "verify", "keywords": ["verify"], "steps": [
        {"callTool": {"tool": "confirm", "args": {"question": "PIN?"}, "as": "pin"}},
        {"reply": "verified {{ results.pin.output }}"}]},
    {"name": "refund", "keywords": ["refund"], "steps": [{"transfer": "refunds"}]}],
    "fallback": [{"reply": "Ask me about an order."}]}


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    return runtime_settings(database_url, tmp_path, mcp_stdio_commands=(sys.executable,))


async def _build(client: Client) -> None:
    await make_app(client)
    await python_tool(client, "lookup", "lookup_order", timeout="5s")
    await client_tool(client, "confirm", "confirm")
    await call_json(client, "create_toolset", {"parent": APP, "toolsetId": "remote", "toolset": {
        "displayName": "Remote", "mcpToolset": {"command": sys.executable, "args": ["-c", "pass"]}}})
    await agent(client, "refunds", playbookAgent={"fallback": [{"reply": "refunds"}]})
    await agent(client, "triage", playbookAgent=TRIAGE, tools=[tool_name("lookup"), tool_name("confirm")],
                childAgents=[agent_name("refunds")], toolsets=[{"toolset": f"{APP}/toolsets/remote"}])
    await set_root(client, "triage")
    await call_json(client, "update_app", {"app": {"name": APP, "variableDeclarations": [
        {"name": "tier", "description": "Tier", "schema": {"type": "STRING", "default": "silver"}}]},
        "updateMask": "variableDeclarations"})


async def test_export_import_round_trip(client: Client) -> None:
    await _build(client)
    exported = (await call_json(client, "export_app", {"name": APP}))["appContent"]
    document = yaml.safe_load(exported)
    assert document["format"] == "convener.app/v1"
    assert document["app"]["rootAgent"] == "triage"
    assert document["agents"]["triage"]["tools"] == ["lookup", "confirm"]
    assert document["agents"]["triage"]["childAgents"] == ["refunds"]
    assert "name" not in document["agents"]["triage"] and "etag" not in document["tools"]["lookup"]
    imported = await call_json(client, "import_app", {"parent": PARENT, "appId": "copy", "appContent": exported})
    assert imported["name"] == COPY and imported["rootAgent"] == f"{COPY}/agents/triage"
    again = (await call_json(client, "export_app", {"name": COPY}))["appContent"]
    assert again == exported
    copied = await call_json(client, "get_agent", {"name": f"{COPY}/agents/triage"})
    assert copied["tools"] == [f"{COPY}/tools/lookup", f"{COPY}/tools/confirm"]
    session = await call_json(client, "run_session", {"config": {"session": f"{COPY}/sessions/s"},
                                                      "inputs": [{"text": "order A-1"}]})
    assert session["outputs"][0]["text"] == ORDERS["A-1"]["status"]


async def test_imports_are_all_or_nothing(client: Client) -> None:
    await _build(client)
    exported = yaml.safe_load((await call_json(client, "export_app", {"name": APP}))["appContent"])
    exported["agents"]["triage"]["tools"].append("missing")
    broken = yaml.safe_dump(exported)
    text = error_text(await client.call_tool("import_app", {"parent": PARENT, "appId": "copy", "appContent": broken}),
                      "INVALID_ARGUMENT")
    assert "agents.triage" in text and "agent.tools[2]" in text
    error_text(await client.call_tool("get_app", {"name": COPY}), "NOT_FOUND")
    for content, words in (("{", "not valid YAML"), ("- a list", "mapping"), ("format: other/v9", "format"),
                           ("surprise: 1", "unknown sections"), ("agents: [1]", "agents must be a mapping")):
        message = error_text(await client.call_tool("import_app", {"parent": PARENT, "appId": "x",
                                                                    "appContent": content}), "INVALID_ARGUMENT")
        assert words in message


async def test_replace_overwrites_the_definition_and_keeps_conversations(client: Client) -> None:
    await _build(client)
    await run(client, "kept", {"text": "hello"})
    await call_json(client, "create_app_version", {"parent": APP, "appVersionId": "v1", "appVersion": {}})
    exported = yaml.safe_load((await call_json(client, "export_app", {"name": APP}))["appContent"])
    error_text(await client.call_tool("import_app", {"parent": PARENT, "appId": "shop",
                                                     "appContent": yaml.safe_dump(exported)}), "ALREADY_EXISTS")
    del exported["agents"]["refunds"]
    exported["agents"]["triage"]["playbookAgent"] = {"fallback": [{"reply": "new"}]}
    del exported["agents"]["triage"]["childAgents"]
    await call_json(client, "import_app", {"parent": PARENT, "appId": "shop", "appContent": yaml.safe_dump(exported),
                                           "replace": True})
    agents = await call_json(client, "list_agents", {"parent": APP})
    assert [a["name"] for a in agents["agents"]] == [agent_name("triage")]
    assert (await call_json(client, "get_conversation", {"name": f"{APP}/conversations/kept"}))["turnCount"] == 1
    versions = await call_json(client, "list_app_versions", {"parent": APP})
    assert [v["name"] for v in versions["appVersions"]] == [f"{APP}/versions/v1"], "versions are kept too"


def test_cli_export_import_and_chat(settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONVENER_PYTHON_CALLABLES", ",".join(CALLABLES))
    monkeypatch.setenv("CONVENER_MCP_STDIO_COMMANDS", sys.executable)
    runner = CliRunner()
    common = ["--data-dir", str(tmp_path / "cli"), "--database-url", settings.resolved_database_url]
    source = tmp_path / "shop.yaml"
    source.write_text(yaml.safe_dump({
        "format": "convener.app/v1", "app": {"displayName": "Shop", "rootAgent": "triage"},
        "tools": {"lookup": {"pythonFunction": {"entryPoint": f"{FIXTURES}:lookup_order"}},
                  "confirm": {"clientFunction": {"name": "confirm"}}},
        "agents": {"refunds": {"displayName": "Refunds", "playbookAgent": {"fallback": [{"reply": "refunds"}]}},
                   "triage": {"displayName": "Triage", "tools": ["lookup", "confirm"], "childAgents": ["refunds"],
                              "playbookAgent": TRIAGE}},
    }))
    imported = runner.invoke(cli, ["apps", "import", str(source), "--parent", PARENT, *common])
    assert imported.exit_code == 0, imported.output
    assert f"imported {PARENT}/apps/shop" in imported.output
    exported = runner.invoke(cli, ["apps", "export", f"{PARENT}/apps/shop", *common])
    assert exported.exit_code == 0 and yaml.safe_load(exported.output)["agents"]["triage"]["childAgents"] == ["refunds"]
    again = runner.invoke(cli, ["apps", "import", str(source), "--parent", PARENT, *common])
    assert again.exit_code == 1 and again.output.startswith("ALREADY_EXISTS: ")
    talk = runner.invoke(cli, ["chat", f"{PARENT}/apps/shop", "--session", "cli", *common],
                         input="order A-1\nverify\n\"1234\"\nrefund\n/quit\n")
    assert talk.exit_code == 0, talk.output
    assert "agent> shipped" in talk.output
    assert "· lookup_order(" in talk.output and '→ {"output": {"orderId": "A-1"' in talk.output
    assert "? client tool confirm(" in talk.output and "agent> verified 1234" in talk.output
    assert "↪ transferred to Refunds" in talk.output and "agent> refunds" in talk.output
    missing = runner.invoke(cli, ["chat", f"{PARENT}/apps/none", *common], input="hi\n/quit\n")
    assert missing.exit_code == 2 and "NOT_FOUND: app" in missing.output
    assert json.loads(json.dumps(talk.output))  # printable as it is


async def test_agents_may_name_each_other_in_any_order(client: Client) -> None:
    ping_pong = {
        "format": "convener.app/v1", "app": {"rootAgent": "ping"},
        "agents": {
            "ping": {"displayName": "Ping", "playbookAgent": {"fallback": [{"transfer": "pong"}]}},
            "pong": {"displayName": "Pong", "playbookAgent": {"intents": [
                {"name": "back", "keywords": ["back"], "steps": [{"transfer": "ping"}]}],
                "fallback": [{"reply": "pong"}]}},
        },
    }
    await call_json(client, "import_app", {"parent": PARENT, "appId": "pp", "appContent": yaml.safe_dump(ping_pong)})
    session = await call_json(client, "run_session", {"config": {"session": f"{PARENT}/apps/pp/sessions/s"},
                                                      "inputs": [{"text": "hi"}]})
    assert session["outputs"][0]["text"] == "pong"
    cycle = {"format": "convener.app/v1", "agents": {
        "a": {"displayName": "A", "childAgents": ["b"]}, "b": {"displayName": "B", "childAgents": ["a"]}}}
    text = error_text(await client.call_tool("import_app", {"parent": PARENT, "appId": "cyc",
                                                            "appContent": yaml.safe_dump(cycle)}), "INVALID_ARGUMENT")
    assert "cycle" in text
    error_text(await client.call_tool("get_app", {"name": f"{PARENT}/apps/cyc"}), "NOT_FOUND")
