"""Playbook and remote agents, OpenAPI tools and MCP toolsets, end to end through the MCP tools."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import Route

from convener.ces.runtime.mcp_toolset import clear_tool_cache
from convener.config import Settings
from tests.ces.runtime.test_mcp_toolset import SERVER_SCRIPT, remote_server
from tests.ces.session_helpers import (
    APP,
    agent,
    agent_chunks,
    agent_name,
    client_tool,
    last,
    llm_settings,
    make_app,
    python_tool,
    run,
    set_root,
    span_names,
    texts,
    tool_name,
)
from tests.conftest import serving_asgi
from tests.e2e.conftest import call_json, conversation, error_text
from tests.llm.fake_openai import FakeOpenAI

pytestmark = pytest.mark.anyio

PLAYBOOK = {
    "intents": [
        {
            "name": "order_status",
            "patterns": [r"order (?P<order_id>[A-Z]-\d)"],
            "examples": ["where is my order", "track my package"],
            "slots": [{"name": "order_id", "pattern": r"[A-Z]-\d", "required": True,
                       "prompt": "What is your order number?"}],
            "steps": [
                {"callTool": {"tool": "lookup", "args": {"order_id": "{{ slots.order_id }}"}, "as": "order"}},
                {"when": "results.order.error is defined", "reply": "I could not find order {{ slots.order_id }}."},
                {"when": "results.order.output is defined",
                 "reply": "Order {{ slots.order_id }} is {{ results.order.output.status }}."},
                {"setVariables": {"last_order": "{{ slots.order_id }}"}},
            ],
        },
        {"name": "cancel", "keywords": ["cancel"], "steps": [
            {"reply": "Please confirm on your phone."},
            {"callTool": {"tool": "confirm", "args": {"question": "Cancel?"}, "as": "answer"}},
            {"reply": "You said {{ results.answer.output }}."},
        ]},
        {"name": "refund", "keywords": ["refund"], "steps": [{"transfer": "refunds"}]},
        {"name": "bye", "keywords": ["bye"], "steps": [{"reply": "Goodbye!"}, {"endSession": {"reason": "done"}}]},
    ],
    "events": {"welcome": [{"reply": "Hi, I am the shop's assistant."}]},
    "fallback": [{"reply": "Sorry, I only know about orders."}],
}
REFUNDS = {"intents": [{"name": "any", "patterns": [".+"], "steps": [{"reply": "Refunds here: {{ input.text }}"}]}]}


@pytest.fixture
def settings(database_url: str, tmp_path: Path, fake_openai: FakeOpenAI) -> Settings:
    return llm_settings(database_url, tmp_path, fake_openai.base_url, mcp_stdio_commands=(sys.executable,))


async def _shop(client: Client) -> None:
    await make_app(client)
    await python_tool(client, "lookup", "lookup_order")
    await client_tool(client, "confirm", "confirm")
    await agent(client, "refunds", playbookAgent=REFUNDS)
    await agent(client, "front", playbookAgent=PLAYBOOK, tools=[tool_name("lookup"), tool_name("confirm")],
                childAgents=[agent_name("refunds")])
    await set_root(client, "front")


async def test_playbook_intents_slots_tools_and_variables(client: Client) -> None:
    await _shop(client)
    assert texts(await run(client, "p1", {"event": {"event": "welcome"}})) == ["Hi, I am the shop's assistant."]
    assert texts(await run(client, "p1", {"text": "where is my order?"})) == ["What is your order number?"]
    filled = await run(client, "p1", {"text": "it is A-1"})
    assert texts(filled) == ["Order A-1 is shipped."]
    chunks = agent_chunks(filled)
    assert [next(iter(c)) for c in chunks] == ["toolCall", "toolResponse", "text", "updatedVariables"]
    assert chunks[0]["toolCall"]["id"] == "front-call-1" and chunks[0]["toolCall"]["args"] == {"order_id": "A-1"}
    assert chunks[3]["updatedVariables"] == {"last_order": "A-1"}
    assert span_names(last(filled)["diagnosticInfo"]["rootSpan"]) == ["TURN", "AGENT", "TOOL"]
    assert last(filled)["diagnosticInfo"]["rootSpan"]["childSpans"][0]["attributes"]["intent"] == "order_status"
    assert texts(await run(client, "p1", {"text": "order Z-9 please"})) == ["I could not find order Z-9."]
    assert texts(await run(client, "p1", {"text": "what's the weather"})) == ["Sorry, I only know about orders."]


async def test_playbook_client_tool_transfer_and_end(client: Client) -> None:
    await _shop(client)
    asked = await run(client, "p2", {"text": "cancel it"})
    assert [next(iter(o)) for o in asked["outputs"][:-1]] == ["text", "toolCalls"], "in the order of the steps"
    assert [next(iter(c)) for c in agent_chunks(asked)] == ["text", "toolCall"]
    call = next(o["toolCalls"]["toolCalls"][0] for o in asked["outputs"] if "toolCalls" in o)
    answered = await run(client, "p2", {"toolResponses": {"toolResponses": [
        {"id": call["id"], "response": {"output": "yes"}}]}})
    assert texts(answered) == ["You said yes."]
    moved = await run(client, "p2", {"text": "I want a refund"})
    assert texts(moved) == ["Refunds here: I want a refund"]
    assert texts(await run(client, "p2", {"text": "bye"})) == ["Refunds here: bye"], "refunds keeps the session"
    await run(client, "p3", {"text": "bye"})
    error_text(await client.call_tool("run_session", {
        "config": {"session": f"{APP}/sessions/p3"}, "inputs": [{"text": "hi"}]}), "FAILED_PRECONDITION")


def _without_times(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_times(v) for k, v in value.items()
                if k not in ("startTime", "endTime", "duration", "eventTime", "name", "session")}
    if isinstance(value, list):
        return [_without_times(v) for v in value]
    return value


async def test_playbooks_are_deterministic(client: Client) -> None:
    await _shop(client)
    script = [{"text": "where is my order?"}, {"text": "A-1"}, {"text": "refund"}]
    for session in ("d1", "d2"):
        for item in script:
            await run(client, session, item)
    first, second = [await call_json(client, "get_conversation", {"name": f"{APP}/conversations/{s}"})
                     for s in ("d1", "d2")]
    assert _without_times(first) == _without_times(second)


# -- remote agents ----------------------------------------------------------------------------------

SEEN: list[dict[str, Any]] = []


async def webhook(request: Request) -> Any:
    body = await request.json()
    SEEN.append(body)
    text = body["input"].get("text", "")
    if text == "slow":
        await anyio.sleep(2)
    if text == "broken":
        return PlainTextResponse("oops", status_code=500)
    if text == "garbage":
        return PlainTextResponse("not json")
    turns = int(body["state"].get("turns", 0)) + 1
    return JSONResponse({"chunks": [{"text": f"remote {turns}: {text}"}, {"updatedVariables": {"turns": turns}}],
                         "state": {"turns": turns}})


@pytest.fixture
def webhook_url() -> Iterator[str]:
    SEEN.clear()
    with serving_asgi(Starlette(routes=[Route("/turn", webhook, methods=["POST"])])) as url:
        yield f"{url}/turn"


async def test_remote_agent_speaks_the_turn_protocol(client: Client, webhook_url: str) -> None:
    await make_app(client)
    await agent(client, "hook", remoteAgent={"url": webhook_url, "timeout": "0.5s", "headers": {"X-Token": "t"}})
    await set_root(client, "hook")
    assert texts(await run(client, "r1", {"variables": {"tier": "gold"}}, {"text": "hello"})) == ["remote 1: hello"]
    assert texts(await run(client, "r1", {"text": "again"})) == ["remote 2: again"]
    sent = SEEN[-1]
    assert sent["session"] == f"{APP}/sessions/r1" and sent["agent"] == agent_name("hook")
    assert sent["variables"] == {"tier": "gold", "turns": 1}
    assert sent["state"] == {"turns": 1}
    assert [m["role"] for m in sent["history"]] == ["user", "agent"]
    for text, code, words in (("slow", "DEADLINE_EXCEEDED", "within 0.5 s"), ("broken", "UNAVAILABLE", "HTTP 500"),
                              ("garbage", "FAILED_PRECONDITION", "not JSON")):
        message = error_text(await client.call_tool("run_session", {
            "config": {"session": f"{APP}/sessions/r1"}, "inputs": [{"text": text}]}), code)
        assert words in message
    assert texts(await run(client, "r1", {"text": "still here"})) == ["remote 3: still here"]


# -- OpenAPI tools ----------------------------------------------------------------------------------

async def stock(request: Request) -> JSONResponse:
    sku = request.path_params["sku"]
    if sku == "none":
        return JSONResponse({"message": "unknown sku"}, status_code=404)
    return JSONResponse({"sku": sku, "count": int(request.query_params.get("warehouse", "1")) * 7})


SPEC = """
openapi: 3.0.3
info: {title: Stock, version: "1"}
servers: [{url: SERVER}]
paths:
  /stock/{sku}:
    get:
      operationId: get_stock
      summary: Units in stock for a SKU.
      parameters:
        - {name: sku, in: path, required: true, schema: {type: string}}
        - {name: warehouse, in: query, schema: {type: integer}}
"""


async def test_openapi_tool_in_a_playbook(client: Client) -> None:
    with serving_asgi(Starlette(routes=[Route("/stock/{sku}", stock)])) as url:
        await make_app(client)
        created = await call_json(client, "create_tool", {"parent": APP, "toolId": "stock", "tool": {
            "openApiTool": {"openApiSchema": SPEC.replace("SERVER", url)}}})
        assert created["displayName"] == "get_stock"
        assert created["openApiTool"]["description"] == "Units in stock for a SKU."
        await agent(client, "clerk", tools=[tool_name("stock")], playbookAgent={"intents": [{
            "name": "stock", "patterns": [r"stock (?P<sku>\w+)"], "steps": [
                {"callTool": {"tool": "stock", "args": {"sku": "{{ slots.sku }}", "warehouse": 2}, "as": "s"}},
                {"when": "results.s.output is defined", "reply": "{{ results.s.output.count }} in stock"},
                {"when": "results.s.error is defined", "reply": "error: {{ results.s.error }}"}]}]})
        assert texts(await run(client, "o1", {"text": "stock abc"}, entryAgent=agent_name("clerk"))) == ["14 in stock"]
        failed = await run(client, "o1", {"text": "stock none"})
        assert texts(failed)[0].startswith("error: ") and "404" in texts(failed)[0]


# -- MCP toolsets -----------------------------------------------------------------------------------

@pytest.mark.parametrize("transport", ["http", "stdio"])
async def test_mcp_toolset_tools_reach_an_llm_agent(client: Client, fake_openai: FakeOpenAI, transport: str) -> None:
    clear_tool_cache()
    with serving_asgi(remote_server().streamable_http_app()) as url:
        await make_app(client)
        spec = ({"serverAddress": f"{url}/mcp"} if transport == "http"
                else {"command": sys.executable, "args": [str(SERVER_SCRIPT)]})
        await call_json(client, "create_toolset", {"parent": APP, "toolsetId": "remote",
                                                   "toolset": {"displayName": "Remote", "mcpToolset": spec}})
        await agent(client, "assistant", llmAgent={}, toolsets=[{"toolset": f"{APP}/toolsets/remote",
                                                                 "toolIds": ["add", "explode"]}])
        await set_root(client, "assistant")
        fake_openai.reply(tool_calls=[("add", {"a": 2, "b": 3}), ("explode", {"reason": "test"})])
        fake_openai.reply(text="2 + 3 = 5")
        response = await run(client, "m1", {"text": "add 2 and 3"})
        assert texts(response) == ["2 + 3 = 5"]
        offered = [t["function"]["name"] for t in fake_openai.requests[0]["tools"]]
        assert offered == ["add", "explode"]
        chunks = agent_chunks(response)
        calls = [c["toolCall"] for c in chunks if "toolCall" in c]
        assert calls[0]["toolsetTool"] == {"toolset": f"{APP}/toolsets/remote", "toolId": "add"}
        results = [c["toolResponse"]["response"] for c in chunks if "toolResponse" in c]
        assert results[0] == {"output": {"result": 5}}
        assert "exploded because test" in results[1]["error"]
    recorded = conversation(await client.call_tool("get_conversation", {"name": f"{APP}/conversations/m1"}))
    assert recorded["turnCount"] == 1
