"""Sessions end to end through the MCP tools: python agents, client tools, versions, recording."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from convener.config import Settings
from convener.services import Services
from tests.ces.session_helpers import (
    APP,
    FIXTURES,
    agent,
    agent_chunks,
    agent_name,
    client_tool,
    last,
    make_app,
    run,
    runtime_settings,
    set_root,
    span_names,
    texts,
    tool_name,
)
from tests.e2e.conftest import call_json, conversation, error_text, timestamp_nanos, writers_meet_before

pytestmark = pytest.mark.anyio


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    return runtime_settings(database_url, tmp_path)


async def _echo_app(client: Client) -> None:
    await make_app(client)
    await client_tool(client, "confirm", "confirm")
    await agent(client, "helper", pythonAgent={"entryPoint": f"{FIXTURES}:echo_agent"})
    await agent(client, "front", pythonAgent={"entryPoint": f"{FIXTURES}:echo_agent"},
                tools=[tool_name("confirm")], childAgents=[agent_name("helper")])
    await set_root(client, "front")


async def test_python_agent_turns_transfers_and_state(client: Client) -> None:
    await _echo_app(client)
    first = await run(client, "s1", {"text": "hello"})
    assert texts(first) == ["echo 1: hello"]
    assert last(first)["turnIndex"] == 1
    second = await run(client, "s1", {"text": "transfer"})
    assert texts(second) == ["echo 2: transfer", "echo 1: transfer"], "the helper handles the transferred input"
    transfers = [c["agentTransfer"] for c in agent_chunks(second) if "agentTransfer" in c]
    assert transfers == [{"targetAgent": agent_name("helper"), "displayName": "Helper"}]
    third = await run(client, "s1", {"text": "again"})
    assert texts(third) == ["echo 2: again"], "the session stays with the helper and its state"
    assert {o["turnIndex"] for o in third["outputs"]} == {3}


async def test_client_tool_call_is_answered_later(client: Client) -> None:
    await _echo_app(client)
    asked = await run(client, "s2", {"text": "ask"})
    calls = [o["toolCalls"]["toolCalls"] for o in asked["outputs"] if "toolCalls" in o]
    assert calls == [[{"id": "ask-1", "tool": tool_name("confirm"), "displayName": "confirm",
                       "args": {"question": "sure?"}, "agentName": "Front"}]]
    answered = await run(client, "s2", {"toolResponses": {"toolResponses": [{"id": "ask-1", "response": {"output": "yes"}}]}})
    assert texts(answered) == ["echo 2: "], "the agent gets the turn with the answer"
    again = error_text(await client.call_tool("run_session", {
        "config": {"session": f"{APP}/sessions/s2"},
        "inputs": [{"toolResponses": {"toolResponses": [{"id": "ask-1", "response": {}}]}}],
    }), "INVALID_ARGUMENT")
    assert "no client tool call" in again


async def test_turns_are_recorded_as_a_seed_exact_conversation(client: Client) -> None:
    await _echo_app(client)
    await run(client, "rec", {"variables": {"tier": "gold"}}, {"text": "hello"})
    await run(client, "rec", {"text": "ask"})
    await run(client, "rec", {"toolResponses": {"toolResponses": [{"id": "ask-1", "response": {"output": "ok"}}]}})
    recorded = conversation(await client.call_tool("get_conversation", {"name": f"{APP}/conversations/rec"}))
    assert recorded["turnCount"] == 3
    assert recorded["source"] == "LIVE"
    assert recorded["entryAgent"] == agent_name("front")
    assert recorded["inputTypes"] == ["INPUT_TYPE_TEXT", "INPUT_TYPE_TOOL_RESPONSE", "INPUT_TYPE_VARIABLES"]
    first = recorded["turns"][0]
    assert first["messages"][0] == {
        "role": "user", "chunks": [{"updatedVariables": {"tier": "gold"}}, {"text": "hello"}],
        "eventTime": first["messages"][0]["eventTime"],
    }
    assert first["messages"][1]["chunks"] == [{"text": "echo 1: hello"}]
    assert span_names(first["rootSpan"]) == ["TURN", "AGENT", "AGENT_CALL"]
    # (as instants: proto3 JSON writes 3, 6 or 9 fraction digits, so "….664Z" sorts after "….664107Z" as text)
    assert timestamp_nanos(first["rootSpan"]["startTime"]) \
        <= timestamp_nanos(first["rootSpan"]["childSpans"][0]["startTime"])
    assert "duration" in first["rootSpan"]
    second = recorded["turns"][1]["messages"][1]["chunks"]
    assert [next(iter(chunk)) for chunk in second] == ["text", "toolCall"]
    third_user = recorded["turns"][2]["messages"][0]["chunks"]
    assert third_user[0]["toolResponse"]["id"] == "ask-1"
    listed = await call_json(client, "list_conversations", {"parent": APP})
    assert [c["name"] for c in listed["conversations"]] == [f"{APP}/conversations/rec"]


async def test_end_session_and_ended_sessions_refuse_input(client: Client) -> None:
    await _echo_app(client)
    ended = await run(client, "s3", {"text": "bye"})
    assert [output["endSession"] for output in ended["outputs"] if "endSession" in output] == [
        {"metadata": {"agent": "front"}}]
    error_text(await client.call_tool("run_session", {
        "config": {"session": f"{APP}/sessions/s3"}, "inputs": [{"text": "hello?"}],
    }), "FAILED_PRECONDITION")


async def test_an_agent_may_end_the_session_escalated_with_a_reason(client: Client) -> None:
    await _echo_app(client)
    escalated = await run(client, "esc", {"text": "escalate"})
    metadata = {"agent": "front", "reason": "asked for a person", "session_escalated": True}
    assert [output["endSession"] for output in escalated["outputs"] if "endSession" in output] == [
        {"metadata": metadata}]
    recorded = await call_json(client, "get_conversation", {"name": f"{APP}/conversations/esc"})
    assert recorded["turns"][-1]["rootSpan"]["attributes"]["endSession"] == metadata
    # A malformed endSession is the agent's fault: the turn fails cleanly and the session is not ended.
    bad = await client.call_tool("run_session", {"config": {"session": f"{APP}/sessions/bad"},
                                                 "inputs": [{"text": "bad end"}]})
    assert "endSession" in error_text(bad, "FAILED_PRECONDITION")
    assert texts(await run(client, "bad", {"text": "hi"}))


async def test_versions_keep_running_after_the_draft_changes(client: Client) -> None:
    await _echo_app(client)
    version = await call_json(client, "create_app_version", {
        "parent": APP, "appVersionId": "v1", "appVersion": {"displayName": "first"},
    })
    assert version["name"] == f"{APP}/versions/v1"
    assert version["creator"] == "users/local"
    assert {a["name"] for a in version["snapshot"]["agents"]} == {agent_name("front"), agent_name("helper")}
    await call_json(client, "update_app", {"app": {"name": APP}, "updateMask": "rootAgent"})
    await call_json(client, "delete_agent", {"name": agent_name("front")})
    pinned = await run(client, "old", {"text": "hi"}, appVersion=f"{APP}/versions/v1")
    assert texts(pinned) == ["echo 1: hi"]
    recorded = conversation(await client.call_tool("get_conversation", {"name": f"{APP}/conversations/old"}))
    assert recorded["appVersion"] == f"{APP}/versions/v1"
    error_text(await client.call_tool("run_session", {
        "config": {"session": f"{APP}/sessions/new"}, "inputs": [{"text": "hi"}],
    }), "FAILED_PRECONDITION")
    listed = await call_json(client, "list_app_versions", {"parent": APP})
    assert [v["name"] for v in listed["appVersions"]] == [f"{APP}/versions/v1"]


async def test_a_crashing_agent_ends_the_turn_with_a_clear_error(client: Client) -> None:
    await make_app(client)
    await agent(client, "crash", pythonAgent={"entryPoint": f"{FIXTURES}:crashing_agent"})
    await agent(client, "bad", pythonAgent={"entryPoint": f"{FIXTURES}:malformed_agent"})
    text = error_text(await client.call_tool("run_session", {
        "config": {"session": f"{APP}/sessions/c", "entryAgent": agent_name("crash")}, "inputs": [{"text": "hi"}],
    }))
    assert "ValueError: agent bug" in text
    recorded = conversation(await client.call_tool("get_conversation", {"name": f"{APP}/conversations/c"}))
    agent_span = recorded["turns"][0]["rootSpan"]["childSpans"][0]
    assert agent_span["attributes"]["errorInfo"]["message"].endswith("agent bug")
    text = error_text(await client.call_tool("run_session", {
        "config": {"session": f"{APP}/sessions/m", "entryAgent": agent_name("bad")}, "inputs": [{"text": "hi"}],
    }), "FAILED_PRECONDITION")
    assert "invalid turn" in text


async def _two_turns_at_once_keep_one(client: Client, services: Services, session: str, write: str,
                                      turns_before: int) -> None:
    """Two turns of ``session`` at once, both past their reading before either writes (``write``: the statement
    the store's conflict is met at): one is ABORTED and leaves nothing behind; the session goes on."""
    results: list[Any] = []

    async def turn(text: str) -> None:
        results.append(await client.call_tool("run_session", {
            "config": {"session": f"{APP}/sessions/{session}"}, "inputs": [{"text": text}]}))

    with writers_meet_before(services, write):
        async with anyio.create_task_group() as group:
            group.start_soon(turn, "left")
            group.start_soon(turn, "right")
    failed = [r for r in results if r.is_error]
    assert len(failed) == 1 and "ABORTED: " in error_text(failed[0], "ABORTED")
    recorded = conversation(await client.call_tool("get_conversation", {"name": f"{APP}/conversations/{session}"}))
    assert recorded["turnCount"] == turns_before + 1, "the losing turn left nothing behind"
    assert texts(await run(client, session, {"text": "third"})) == [f"echo {turns_before + 2}: third"]


async def test_two_turns_of_one_session_at_once_keep_one(client: Client, services: Services) -> None:
    await _echo_app(client)
    await run(client, "race", {"text": "first"})
    await _two_turns_at_once_keep_one(client, services, "race", "UPDATE ces_sessions", turns_before=1)


async def test_two_first_turns_of_one_session_at_once_keep_one(client: Client, services: Services) -> None:
    """Both find no session and start it: the second to store is ABORTED (its insert's conflict clause), not a
    database error."""
    await _echo_app(client)
    await _two_turns_at_once_keep_one(client, services, "new-race", "INSERT INTO ces_sessions", turns_before=0)


async def test_every_kind_of_input(client: Client) -> None:
    await _echo_app(client)
    waiting = await run(client, "kinds", {"text": "hel", "willContinue": True})
    assert texts(waiting) == [], "a fragment waits for the rest"
    assert texts(await run(client, "kinds", {"text": "lo"})) == ["echo 1: hello"]
    assert texts(await run(client, "kinds", {"dtmf": "42#"})) == ["echo 2: 42#"]
    image = {"mimeType": "image/png", "data": "iVBORw0KGgo=", "altText": "a receipt"}
    assert texts(await run(client, "kinds", {"image": image})) == ["echo 3: "]
    await run(client, "kinds", {"event": {"event": "welcome", "variables": {"page": "checkout"}}})
    vars_turn = await run(client, "kinds", {"text": "vars"})
    updated = [c["updatedVariables"] for c in agent_chunks(vars_turn) if "updatedVariables" in c]
    assert updated == [{"seen": 8}], "the agent saw the history of the four earlier turns"
    recorded = conversation(await client.call_tool("get_conversation", {"name": f"{APP}/conversations/kinds"}))
    assert recorded["inputTypes"] == ["INPUT_TYPE_TEXT", "INPUT_TYPE_EVENT", "INPUT_TYPE_IMAGE"]
    assert recorded["turns"][3]["messages"][0]["chunks"] == [{"payload": {"event": "welcome",
                                                                          "variables": {"page": "checkout"}}}]


@pytest.mark.parametrize(("inputs", "words"), [
    ([], "at least one input"),
    ([{"text": "a"}] * 101, "at most 100"),
    ([{"text": "a", "dtmf": "1"}], "only one field of the union input_type"),
    ([{"image": {"mimeType": "image/png", "data": "not base64!"}}], "image.data"),
    ([{"text": "a\u0000b"}], "NUL"),
])
async def test_hostile_session_inputs(client: Client, inputs: list[Any], words: str) -> None:
    await _echo_app(client)
    result = await client.call_tool("run_session", {"config": {"session": f"{APP}/sessions/h"}, "inputs": inputs})
    assert words in error_text(result, "INVALID_ARGUMENT")


@pytest.mark.parametrize(("config", "code", "words"), [
    ({"session": "nonsense"}, "INVALID_ARGUMENT", "config.session"),
    ({"session": "projects/acme/locations/global/apps/none/sessions/s"}, "NOT_FOUND", "app"),
    ({"session": f"{APP}/sessions/e", "entryAgent": f"{APP}/agents/ghost"}, "INVALID_ARGUMENT", "entryAgent"),
    ({"session": f"{APP}/sessions/e", "appVersion": f"{APP}/versions/none"}, "NOT_FOUND", "version"),
    ({"session": f"{APP}/sessions/e", "appVersion": "projects/x/locations/y/apps/z/versions/v"},
     "INVALID_ARGUMENT", "appVersion"),
])
async def test_hostile_session_configs(client: Client, config: dict[str, Any], code: str, words: str) -> None:
    await _echo_app(client)
    result = await client.call_tool("run_session", {"config": config, "inputs": [{"text": "hi"}]})
    assert words in error_text(result, code)


async def test_a_turn_runs_the_draft_as_it_is_after_any_change_made_by_another_server(
        client: Client, settings: Settings) -> None:
    """Each server keeps the drafts it built; a change made elsewhere (create, update, delete, a part replaced by
    another of the same ID, the app's own fields) must reach its next turn."""
    from convener.server import mcp_servers

    await _echo_app(client)
    other = Services.open(settings)
    try:
        async with Client(mcp_servers(other)["/mcp"]) as elsewhere:
            sessions = iter(range(100))

            def request() -> dict[str, Any]:
                return {"config": {"session": f"{APP}/sessions/t{next(sessions)}"}, "inputs": [{"text": "hi"}]}

            async def echoed() -> None:
                assert texts(await call_json(elsewhere, "run_session", request())) == ["echo 1: hi"]

            async def failed(code: str | None = None) -> str:
                return error_text(await elsewhere.call_tool("run_session", request()), code)

            await echoed()  # the draft is built and kept over there
            await call_json(client, "update_agent", {"agent": {"name": agent_name("front"), "pythonAgent": {
                "entryPoint": f"{FIXTURES}:crashing_agent"}}, "updateMask": "pythonAgent"})
            assert "agent bug" in await failed()
            await call_json(client, "delete_agent", {"name": agent_name("front")})
            await agent(client, "front", pythonAgent={"entryPoint": f"{FIXTURES}:echo_agent"},
                        tools=[tool_name("confirm")], childAgents=[agent_name("helper")])
            await echoed()
            await agent(client, "crash", pythonAgent={"entryPoint": f"{FIXTURES}:crashing_agent"})
            await echoed()  # a new part the root does not name: the same behaviour
            await set_root(client, "crash")
            assert "agent bug" in await failed()
            await call_json(client, "delete_agent", {"name": agent_name("crash")})
            assert "does not exist" in await failed("FAILED_PRECONDITION")
    finally:
        other.close()
