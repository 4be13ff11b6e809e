"""Sizes a caller controls: a tool call's arguments, a session's input, an imported line (issue 17, finding 6:
a 10 MB run_session turn was accepted and stored)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client
from typer.testing import CliRunner

from convener.cli import app as cli
from convener.config import Settings
from convener.outside.limits import REQUEST_ARRAY, REQUEST_BYTES, REQUEST_DEPTH, REQUEST_STRING, RUN_SESSION_TEXT
from tests.ces.session_helpers import APP, agent, make_app, set_root
from tests.e2e.conftest import call_json, error_text

pytestmark = pytest.mark.anyio
SESSION = f"{APP}/sessions/big"
TEN_MB = "x" * 10_000_000


async def _shop(client: Client) -> None:
    await make_app(client)
    await agent(client, "front", playbookAgent={"fallback": [{"reply": "hello"}]})
    await set_root(client, "front")


async def _nothing_recorded(client: Client) -> None:
    assert (await call_json(client, "list_conversations", {"parent": APP})).get("conversations", []) == []
    error_text(await client.call_tool("get_conversation", {"name": f"{APP}/conversations/big"}), "NOT_FOUND")


async def test_a_ten_megabyte_turn_over_mcp_is_refused_and_nothing_is_stored(client: Client) -> None:
    await _shop(client)
    result = await client.call_tool("run_session", {"config": {"session": SESSION}, "inputs": [{"text": TEN_MB}]})
    text = error_text(result, "INVALID_ARGUMENT")
    assert "arguments.inputs[0].text" in text and "request.string" in text and str(REQUEST_STRING) in text, text
    await _nothing_recorded(client)


async def test_a_turn_over_the_input_text_limit_is_refused_naming_it(client: Client) -> None:
    await _shop(client)
    result = await client.call_tool("run_session", {"config": {"session": SESSION},
                                                    "inputs": [{"text": "hi"}, {"text": "x" * (RUN_SESSION_TEXT + 1)}]})
    text = error_text(result, "INVALID_ARGUMENT")
    assert "inputs[1].text" in text and "ces.run_session.text" in text and f"at most {RUN_SESSION_TEXT}" in text, text
    await _nothing_recorded(client)
    answered = await call_json(client, "run_session", {"config": {"session": SESSION},
                                                       "inputs": [{"text": "x" * RUN_SESSION_TEXT}]})
    assert answered["outputs"][0]["text"] == "hello", "a turn at the limit runs"


async def test_a_ten_megabyte_turn_over_http_gets_a_clear_error_and_nothing_is_stored(
    client: Client, http_server: str, api_key: str
) -> None:
    await _shop(client)
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "run_session", "arguments": {"config": {"session": SESSION}, "inputs": [{"text": TEN_MB}]}}}
    async with httpx.AsyncClient(timeout=60) as http:
        response = await http.post(f"{http_server}/mcp", content=json.dumps(body), headers={
            "authorization": f"Bearer {api_key}", "content-type": "application/json",
            "accept": "application/json, text/event-stream"})
    assert response.status_code < 500, response.text[:300]
    if response.status_code == 200:  # the tool layer refused it
        result = response.json()["result"]
        assert result["isError"] and result["content"][0]["text"].startswith("INVALID_ARGUMENT: "), result
    else:  # the HTTP edge refused the body first
        assert response.status_code in (400, 413), response.status_code
    await _nothing_recorded(client)


def _nested(depth: int) -> Any:
    value: Any = "deep"
    for _ in range(depth):
        value = {"v": value}
    return value


@pytest.mark.parametrize(("arguments", "words"), [
    pytest.param({"app": {"displayName": "x" * (REQUEST_STRING + 1)}}, ["arguments.app.displayName", "request.string"],
                 id="one-long-text"),
    pytest.param({"app": {"displayName": "x" * (REQUEST_BYTES // 2), "description": "y" * (REQUEST_BYTES // 2)}},
                 ["arguments are larger than", "request.bytes"], id="many-bytes"),
    pytest.param({"app": {"displayName": "s", "variableDeclarations": [{}] * (REQUEST_ARRAY + 1)}},
                 ["arguments.app.variableDeclarations has", "request.array"], id="long-array"),
    pytest.param({"app": {"displayName": "s", "variableDeclarations": [
        {"name": "v", "schema": {"type": "OBJECT", "default": _nested(REQUEST_DEPTH + 5)}}]}},
        ["nested too deeply", "request.depth"], id="deep-object"),
    pytest.param({"app": {"displayName": "s"}, "x" * (REQUEST_STRING + 1): 1}, ["key", "request.string"], id="long-key"),
])
async def test_oversized_arguments_are_refused_before_anything_runs(client: Client, arguments: dict[str, Any],
                                                                    words: list[str]) -> None:
    result = await client.call_tool("create_app", {"parent": "projects/acme/locations/global", "appId": "big",
                                                   **arguments})
    text = error_text(result, "INVALID_ARGUMENT")
    assert all(word in text for word in words), text
    assert len(text) < 500, "the message does not echo the input"
    error_text(await client.call_tool("get_app", {"name": "projects/acme/locations/global/apps/big"}), "NOT_FOUND")


def test_an_overlong_jsonl_line_is_reported_without_being_kept_and_the_next_line_imports(
    settings: Settings, tmp_path: Path
) -> None:
    from convener.outside.limits import CONVERSATION_LINE_BYTES

    source = tmp_path / "conversations.jsonl"
    with source.open("w", encoding="utf-8") as out:
        out.write('{"turns": [], "labels": {"x": "' + "x" * CONVERSATION_LINE_BYTES + '"}}\n')
        out.write(json.dumps({"name": "projects/p/locations/l/apps/a/conversations/kept", "turns": []}) + "\n")
    result = CliRunner().invoke(cli, ["import", "conversations", str(source), "--app", "projects/p/locations/l/apps/a",
                                      "--data-dir", str(tmp_path / "data"),
                                      "--database-url", settings.resolved_database_url])
    assert result.exit_code == 1
    assert f"line 1: INVALID_ARGUMENT: the line is longer than {CONVERSATION_LINE_BYTES} bytes" in result.stderr
    assert "1 imported, 0 already present, 1 failed" in result.stdout


async def test_the_texts_of_an_app_and_its_parts_have_their_own_limits(client: Client) -> None:
    from convener.outside.limits import DISPLAY_NAME_CHARACTERS, INSTRUCTION_CHARACTERS

    await make_app(client)
    long_instruction = {"displayName": "Front", "instruction": "x" * (INSTRUCTION_CHARACTERS + 1),
                        "playbookAgent": {"fallback": [{"reply": "hi"}]}}
    text = error_text(await client.call_tool("create_agent", {"parent": APP, "agentId": "front",
                                                              "agent": long_instruction}), "INVALID_ARGUMENT")
    assert "agent.instruction" in text and "ces.instruction" in text, text
    text = error_text(await client.call_tool("update_app", {
        "app": {"name": APP, "displayName": "x" * (DISPLAY_NAME_CHARACTERS + 1)}, "updateMask": "displayName"}),
        "INVALID_ARGUMENT")
    assert "app.displayName" in text and "ces.display_name" in text, text
    text = error_text(await client.call_tool("update_app", {
        "app": {"name": APP, "globalInstruction": "x" * (INSTRUCTION_CHARACTERS + 1)}, "updateMask": "globalInstruction"}),
        "INVALID_ARGUMENT")
    assert "globalInstruction" in text and "ces.instruction" in text, text
    assert (await call_json(client, "list_agents", {"parent": APP})).get("agents", []) == []
    assert (await call_json(client, "get_app", {"name": APP})).get("globalInstruction") is None
